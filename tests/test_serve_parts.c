/* test_serve_parts.c -- the daemon's shared pieces, in process.
 *
 * What the socket tests cannot pin down exactly: the parse cache's
 * eviction order and refcounts, the metrics page's text, the jobs
 * registry's replacement semantics, the policy slot keeping the old
 * policy when a load fails, and the plan memo's problem key. Each value
 * below is worked out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "service/jobs.h"
#include "service/metrics.h"
#include "env/config.h"
#include "service/decide.h"
#include "service/policy_slot.h"
#include "service/probkey.h"
#include "service/reqcache.h"
#include "service/web.h"

static int freed[16];

static void count_free(void *v) { freed[*(int *)v]++, free(v); }

static int *val(int i) {
    int *v = malloc(sizeof *v);
    *v = i;
    return v;
}

static void test_cache_lru(void **state) {
    (void)state;
    memset(freed, 0, sizeof freed);
    rc_cache *c = rc_create(2, 1000);
    rc_entry *r1, *r2, *r3, *r;
    /* Two entries fit; a third evicts the least recently used. */
    assert_int_equal(*(int *)rc_put(c, 1, "aaaa", 4, val(1), count_free, &r1), 1);
    assert_int_equal(*(int *)rc_put(c, 1, "bbbb", 4, val(2), count_free, &r2), 2);
    rc_release(c, r1);
    rc_release(c, r2);
    /* Touch "aaaa": "bbbb" is now the oldest. */
    assert_int_equal(*(int *)rc_get(c, 1, "aaaa", 4, &r), 1);
    rc_release(c, r);
    /* Same bytes, other kind: a miss. Same kind, other bytes: a miss. */
    assert_null(rc_get(c, 2, "aaaa", 4, &r));
    assert_null(rc_get(c, 1, "aaab", 4, &r));
    assert_null(rc_get(c, 1, "aaa", 3, &r));
    rc_put(c, 1, "cccc", 4, val(3), count_free, &r3);
    assert_int_equal(freed[2], 1); /* "bbbb" evicted and freed */
    assert_int_equal(freed[1], 0);
    assert_null(rc_get(c, 1, "bbbb", 4, &r));
    /* An evicted entry still held stays alive until released. */
    assert_int_equal(*(int *)rc_get(c, 1, "aaaa", 4, &r1), 1);
    rc_release(c, r3); /* "cccc" (used before this get of "aaaa") is now the oldest */
    rc_put(c, 1, "dddd", 4, val(4), count_free, &r);
    rc_release(c, r);
    assert_int_equal(freed[3], 1); /* "cccc" was the least recently used */
    rc_put(c, 1, "eeee", 4, val(5), count_free, &r);
    rc_release(c, r);
    assert_int_equal(freed[1], 0); /* "aaaa" left the cache but is held */
    assert_int_equal(*(int *)rc_get(c, 1, "eeee", 4, &r), 5);
    rc_release(c, r);
    rc_release(c, r1);
    assert_int_equal(freed[1], 1);
    /* Inserting bytes already present returns the entry there and frees
     * the newcomer. */
    int *dup = val(6);
    assert_int_equal(*(int *)rc_put(c, 1, "eeee", 4, dup, count_free, &r), 5);
    assert_int_equal(freed[6], 1);
    rc_release(c, r);
    uint64_t hits, misses;
    int entries;
    rc_stats(c, &hits, &misses, &entries);
    assert_int_equal(hits, 3);   /* aaaa twice, eeee once */
    assert_int_equal(misses, 4); /* the three probes and bbbb */
    assert_int_equal(entries, 2);
    /* rc_try counts a hit, not a miss; rc_clear empties, counts stay */
    assert_null(rc_try(c, 1, "zzzz", 4, &r));
    assert_int_equal(*(int *)rc_try(c, 1, "eeee", 4, &r), 5);
    rc_release(c, r);
    rc_stats(c, &hits, &misses, &entries);
    assert_int_equal(hits, 4);
    assert_int_equal(misses, 4);
    rc_clear(c);
    rc_stats(c, &hits, &misses, &entries);
    assert_int_equal(entries, 0);
    assert_int_equal(hits, 4);
    assert_null(rc_get(c, 1, "eeee", 4, &r));
    assert_int_equal(freed[4] + freed[5], 2);
    rc_free(c);
    assert_int_equal(freed[4] + freed[5], 2);
}

static void test_cache_bytes(void **state) {
    (void)state;
    {
        /* rc_put_sized counts the value's bytes too: 2 + 5 and 2 + 5 do
         * not fit in 10, the first goes; 2 + 9 is kept by nobody. */
        memset(freed, 0, sizeof freed);
        rc_cache *c = rc_create(8, 10);
        rc_entry *r;
        rc_put_sized(c, 1, "ab", 2, val(1), 5, count_free, &r);
        rc_release(c, r);
        rc_put_sized(c, 1, "cd", 2, val(2), 5, count_free, &r);
        rc_release(c, r);
        assert_int_equal(freed[1], 1);
        assert_null(rc_get(c, 1, "ab", 2, &r));
        assert_int_equal(*(int *)rc_get(c, 1, "cd", 2, &r), 2);
        rc_release(c, r);
        assert_int_equal(*(int *)rc_put_sized(c, 1, "ef", 2, val(3), 9, count_free, &r), 3);
        rc_release(c, r);
        assert_int_equal(freed[3], 1); /* private: freed on release */
        assert_null(rc_get(c, 1, "ef", 2, &r));
        int entries;
        rc_stats(c, NULL, NULL, &entries);
        assert_int_equal(entries, 1);
        rc_free(c);
        assert_int_equal(freed[2], 1);
    }
    memset(freed, 0, sizeof freed);
    /* 10 bytes of keys at most: 6 + 6 does not fit, the first goes. */
    rc_cache *c = rc_create(8, 10);
    rc_entry *r;
    rc_put(c, 1, "123456", 6, val(1), count_free, &r);
    rc_release(c, r);
    rc_put(c, 1, "abcdef", 6, val(2), count_free, &r);
    rc_release(c, r);
    assert_int_equal(freed[1], 1);
    /* A key over the limit is answered from a private entry, not kept. */
    assert_int_equal(*(int *)rc_put(c, 1, "0123456789AB", 12, val(3), count_free, &r), 3);
    assert_int_equal(freed[3], 0);
    rc_release(c, r);
    assert_int_equal(freed[3], 1);
    assert_int_equal(freed[2], 0);
    assert_null(rc_get(c, 1, "0123456789AB", 12, &r));
    rc_free(c);
    assert_int_equal(freed[2], 1);
    /* The hash mixes every byte and the length. */
    assert_true(rc_hash("abcdefgh1", 9) != rc_hash("abcdefgh2", 9));
    assert_true(rc_hash("abc", 3) != rc_hash("abc\0", 4));
}

static void test_metrics_page(void **state) {
    (void)state;
    metrics *m = metrics_create();
    /* Three /v1/place answers: 200 in 0.3 ms and 1.5 ms, 400 in 20 s. */
    metrics_observe(m, METRICS_PLACE, 200, 0.0003);
    metrics_observe(m, METRICS_PLACE, 200, 0.0015);
    metrics_observe(m, METRICS_PLACE, 400, 20.0);
    metrics_observe(m, METRICS_OTHER, 418, 0.00005);
    assert_int_equal(metrics_count(m, METRICS_PLACE, 200), 2);
    assert_int_equal(metrics_count(m, METRICS_PLACE, -1), 3);
    size_t len;
    char *page = metrics_render(m, NULL, &len);
    assert_int_equal(strlen(page), len);
    assert_non_null(strstr(page, "strata_requests_total{path=\"/v1/place\",status=\"200\"} 2\n"));
    assert_non_null(strstr(page, "strata_requests_total{path=\"/v1/place\",status=\"400\"} 1\n"));
    assert_non_null(strstr(page, "strata_requests_total{path=\"other\",status=\"other\"} 1\n"));
    /* Cumulative buckets: 0.3 ms falls in le=0.0005, 1.5 ms in le=0.002,
     * 20 s only in +Inf. */
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"0.00025\"} 0\n"));
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"0.0005\"} 1\n"));
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"0.001\"} 1\n"));
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"0.002\"} 2\n"));
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"10\"} 2\n"));
    assert_non_null(strstr(page, "{path=\"/v1/place\",le=\"+Inf\"} 3\n"));
    /* Sum: 0.0003 + 0.0015 + 20 = 20.0018 s, to the nanosecond. */
    assert_non_null(strstr(page, "strata_request_duration_seconds_sum{path=\"/v1/place\"} "
                                 "20.001800000\n"));
    assert_null(strstr(page, "path=\"/v1/cost\""));
    free(page);
    metrics_extra x = {1, 4200, 1.7e9, 0.25, 3, 3, 1, 2, 5, 10, 4, 7, 11, 13, 17, 19, 23, 29, 31,
                        37, 41};
    page = metrics_render(m, &x, &len);
    assert_non_null(strstr(page, "strata_policy_loaded 1\n"));
    assert_non_null(strstr(page, "strata_policy_step 4200\n"));
    assert_non_null(strstr(page, "strata_policy_load_duration_seconds 0.250000\n"));
    assert_non_null(strstr(page, "strata_policy_loads_total{result=\"error\"} 1\n"));
    assert_non_null(strstr(page, "strata_parse_cache_total{result=\"miss\"} 4\n"));
    assert_non_null(strstr(page, "strata_decode_memo_total{result=\"hit\"} 11\n"));
    assert_non_null(strstr(page, "strata_decode_memo_total{result=\"miss\"} 13\n"));
    assert_non_null(strstr(page, "strata_cluster_cache_total{result=\"hit\"} 17\n"));
    assert_non_null(strstr(page, "strata_cluster_cache_total{result=\"miss\"} 19\n"));
    assert_non_null(strstr(page, "strata_body_buffers_total{source=\"new\"} 23\n"));
    assert_non_null(strstr(page, "strata_body_buffers_total{source=\"reused\"} 29\n"));
    assert_non_null(strstr(page, "strata_plan_memo_entries 31\n"));
    assert_non_null(strstr(page, "strata_extender_nodes_total{result=\"reused\"} 37\n"));
    assert_non_null(strstr(page, "strata_extender_nodes_total{result=\"read\"} 41\n"));
    free(page);
    metrics_free(m);
}

/* web_dump_strings writes an object of strings byte for byte as
 * json_dumps(JSON_COMPACT) does: escapes, non-ASCII, a key set twice, the
 * members' order; anything but an object of strings is NULL. */
static void test_dump_strings(void **state) {
    (void)state;
    json_t *o = json_object();
    size_t len = 0;
    char *d = web_dump_strings(o, &len);
    assert_string_equal(d, "{}");
    assert_int_equal(len, 2);
    free(d);
    const char *keys[] = {"ip-10-0-0-1.ec2.internal", "a\"b", "back\\slash", "nl\nx", "ctl\x01",
                          "caf\xc3\xa9", "sl/ash", "del\x7f", ""};
    const char *vals[] = {"strata: instance type \"m5.xlarge\" is not a type", "tab\there",
                          "plain", "\xe2\x82\xac 3", "", "x\x1fy", "/", "\\", "end"};
    for (int i = 0; i < 9; i++) json_object_set_new(o, keys[i], json_string(vals[i]));
    for (int i = 0; i < 300; i++) {
        char k[32];
        snprintf(k, sizeof k, "node-%d", (i * 7919) % 1000);
        json_object_set_new(o, k, json_string(i % 3 ? "busy" : "never"));
    }
    json_object_set_new(o, "a\"b", json_string("set again")); /* replaced in place */
    char *want = json_dumps(o, JSON_COMPACT);
    d = web_dump_strings(o, &len);
    assert_non_null(d);
    assert_string_equal(d, want);
    assert_int_equal(len, strlen(want));
    free(d);
    free(want);
    json_object_set_new(o, "n", json_integer(1));
    assert_null(web_dump_strings(o, &len));
    json_decref(o);
    json_t *arr = json_pack("[s]", "x");
    assert_null(web_dump_strings(arr, &len));
    json_decref(arr);
    /* web_text_string alone, as the prioritize answer writes names */
    for (int i = 0; i < 9; i++) {
        web_text t = {NULL, 0, 0, 0};
        web_text_string(&t, keys[i], strlen(keys[i]));
        json_t *js = json_string(keys[i]);
        want = json_dumps(js, JSON_ENCODE_ANY);
        assert_false(t.bad);
        assert_string_equal(t.b, want);
        free(want);
        free(t.b);
        json_decref(js);
    }
}

/* member returns web_json_member's answer for key "c" in text, with the
 * value's bytes in out (or "" when not found). */
static int member(const char *text, char *out, size_t cap) {
    size_t off = 0, len = 0;
    int found = web_json_member(text, strlen(text), "c", &off, &len);
    snprintf(out, cap, "%.*s", found ? (int)len : 0, found ? text + off : "");
    return found;
}

/* web_json_member delimits the top-level member's object value by the
 * text's strings and nesting, and refuses what it cannot be sure of. */
static void test_json_member(void **state) {
    (void)state;
    char v[256];
    assert_int_equal(member("{\"c\":{\"a\":1}}", v, sizeof v), 1);
    assert_string_equal(v, "{\"a\":1}");
    /* whitespace, other members before and after, nesting, and brackets,
     * braces, quotes and backslashes inside strings */
    assert_int_equal(member(" {\r\n \"j\" : [1, {\"c\": {}}], \"cc\": \"}\", \"c\"\t:\n"
                            " {\"n\": [{\"x\": \"a}]\\\"{\"}, [[]]], \"k\\\\\": -1.5e3} ,"
                            "\"o\": null, \"t\": true } ", v, sizeof v), 1);
    assert_string_equal(v, "{\"n\": [{\"x\": \"a}]\\\"{\"}, [[]]], \"k\\\\\": -1.5e3}");
    /* a key named c inside another member does not count */
    assert_int_equal(member("{\"j\": {\"c\": {}}}", v, sizeof v), 0);
    /* refused: twice, not an object, a key with escapes, no such key,
     * unterminated, not an object at the top, junk after a value */
    assert_int_equal(member("{\"c\": {}, \"c\": {}}", v, sizeof v), 0);
    assert_int_equal(member("{\"c\": [1]}", v, sizeof v), 0);
    assert_int_equal(member("{\"c\": \"{}\"}", v, sizeof v), 0);
    assert_int_equal(member("{\"\\u0063\": {}}", v, sizeof v), 0);
    assert_int_equal(member("{\"c\\\"\": {}}", v, sizeof v), 0);
    assert_int_equal(member("{\"d\": {}}", v, sizeof v), 0);
    assert_int_equal(member("{}", v, sizeof v), 0);
    assert_int_equal(member("{\"c\": {\"a\": \"}", v, sizeof v), 0);
    assert_int_equal(member("{\"c\": {\"a\": 1}", v, sizeof v), 0);
    assert_int_equal(member("[{\"c\": {}}]", v, sizeof v), 0);
    assert_int_equal(member("{\"c\": {} \"d\": 1}", v, sizeof v), 0);
    assert_int_equal(member("", v, sizeof v), 0);
}

static void test_jobs(void **state) {
    (void)state;
    jobs_registry *r = jobs_create(2, 0);
    char err[256];
    uint64_t v1, v2;
    assert_int_equal(jobs_put(r, "a", json_pack("{s:i}", "x", 1), 3, &v1, err, sizeof err), 1);
    jobs_entry *held = jobs_get(r, "a");
    assert_non_null(held);
    /* Replacing keeps the held entry readable and gives a new version. */
    assert_int_equal(jobs_put(r, "a", json_pack("{s:i}", "x", 2), 4, &v2, err, sizeof err), 0);
    assert_true(v2 > v1);
    assert_int_equal(json_integer_value(json_object_get(held->doc, "x")), 1);
    jobs_release(r, held);
    jobs_entry *now = jobs_get(r, "a");
    assert_int_equal(json_integer_value(json_object_get(now->doc, "x")), 2);
    assert_int_equal(now->n_layers, 4);
    jobs_release(r, now);
    assert_int_equal(jobs_put(r, "b", json_object(), 1, NULL, err, sizeof err), 1);
    /* Full: a third name is refused, replacing is not. */
    assert_int_equal(jobs_put(r, "c", json_object(), 1, NULL, err, sizeof err), JOBS_FULL);
    assert_non_null(strstr(err, "holds 2 jobs"));
    assert_int_equal(jobs_put(r, "b", json_object(), 1, NULL, err, sizeof err), 0);
    assert_int_equal(jobs_count(r), 2);
    assert_int_equal(jobs_delete(r, "a"), 0);
    assert_int_equal(jobs_delete(r, "a"), -1);
    assert_null(jobs_get(r, "a"));
    json_t *list = jobs_list(r);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
    assert_int_equal(jobs_name_ok("train-1.x_y", err, sizeof err), 0);
    assert_int_equal(jobs_name_ok(".hidden", err, sizeof err), -1);
    assert_int_equal(jobs_name_ok("a/b", err, sizeof err), -1);
    assert_int_equal(jobs_name_ok("", err, sizeof err), -1);
    jobs_free(r);
}

static void test_policy_slot_failed_load(void **state) {
    (void)state;
    pslot *s = pslot_create();
    char err[512];
    assert_null(pslot_acquire(s));
    assert_int_equal(pslot_load(s, "/nonexistent/policy.h5", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/policy.h5"));
    assert_null(pslot_acquire(s));
    uint64_t ok, failed;
    pslot_counts(s, &ok, &failed);
    assert_int_equal(ok, 0);
    assert_int_equal(failed, 1);
    pslot_release(s, NULL);
    pslot_free(s);
}

/* An error message that quotes the client's text and is cut inside a
 * multi-byte character (here the first two bytes of the euro sign) must
 * still be answered with its own status and valid JSON, not a 500: the
 * fuzzer found /k8s/prioritize answering 500 "out of memory" this way. */
static void test_error_cut_utf8(void **state) {
    (void)state;
    web_reply rep;
    memset(&rep, 0, sizeof rep);
    web_reply_error(&rep, 400, "Nodes.items[0]: bad name '%s'", "ab\xe2\x82");
    assert_int_equal(rep.status, 400);
    assert_non_null(rep.body);
    assert_string_equal(rep.body, "{\"error\":\"Nodes.items[0]: bad name 'ab?" "?'\"}");
    web_reply_clear(&rep);
    /* Well-formed multi-byte text passes unchanged. */
    web_reply_error(&rep, 404, "no job named '%s'", "caf\xc3\xa9");
    assert_int_equal(rep.status, 404);
    assert_string_equal(rep.body, "{\"error\":\"no job named 'caf\xc3\xa9'\"}");
    web_reply_clear(&rep);
}

/* A small run; the first %s is the job's name, the second layer b's flops,
 * the third one more line of the job (or ""). */
static const char *PK_YAML =
    "cluster:\n"
    "  types:\n"
    "    - {name: gpu, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, net_bw: 8Gbit/s, mem: 10GB, price: %s}\n"
    "  zones: [{name: a}, {name: b}]\n"
    "  nodes:\n"
    "    - {name: n0, type: gpu, units: %s, zone: a, bw: 1GB/s}\n"
    "    - {name: n1, type: gpu, units: 4, zone: b, bw: 1GB/s}\n"
    "job:\n"
    "  name: %s\n"
    "  batch: 10\n"
    "  samples: 3.6e6\n"
    "  min_throughput: %s\n"
    "  layers:\n"
    "    - {name: %s, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"
    "    - {name: b, flops: %s, io: 0, act: 0, params: 0, mem: %s}\n";

/* pk_place's bytes for the run PK_YAML makes of the given fields, with
 * the default decision options; *len gets their count. */
static char *pk_of(const char *price, const char *units, const char *name, const char *target,
                   const char *layer, const char *flops, const char *mem, size_t *len) {
    char text[2048], err[1024];
    snprintf(text, sizeof text, PK_YAML, price, units, name, target, layer, flops, mem);
    cfg_run *run = cfg_load_buffer("pk.yaml", text, strlen(text), err, sizeof err);
    if (!run) fail_msg("%s", err);
    decide_opts o;
    assert_int_equal(decide_opts_parse(NULL, 1, 1000, &o, err, sizeof err), 0);
    char *k = pk_place(&run->jobs[0], &run->cluster, &o, len);
    assert_non_null(k);
    cfg_free(run);
    return k;
}

/* The problem key ignores the job's name and how figures are spelled, and
 * changes with any figure or name the decision reads, and with options. */
static void test_problem_key(void **state) {
    (void)state;
    size_t n0, n;
    char *k0 = pk_of("3.6", "4", "one", "100", "a", "1GFLOP", "1MB", &n0);
    /* another name, flops and memory in other units: the same bytes */
    char *k = pk_of("3.6", "4", "another-name", "100", "a", "1000MFLOP", "1000kB", &n);
    assert_int_equal(n, n0);
    assert_memory_equal(k, k0, n0);
    free(k);
    /* one figure or name changed at a time: other bytes */
    const char *v[][7] = {
        {"3.7", "4", "one", "100", "a", "1GFLOP", "1MB"},     /* a type's price */
        {"3.6", "3", "one", "100", "a", "1GFLOP", "1MB"},     /* a node's units */
        {"3.6", "4", "one", "101", "a", "1GFLOP", "1MB"},     /* the target */
        {"3.6", "4", "one", "100", "a2", "1GFLOP", "1MB"},    /* a layer's name */
        {"3.6", "4", "one", "100", "a", "1.000001GFLOP", "1MB"}, /* a layer's flops */
        {"3.6", "4", "one", "100", "a", "1GFLOP", "2MB"},     /* a layer's memory */
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        k = pk_of(v[i][0], v[i][1], v[i][2], v[i][3], v[i][4], v[i][5], v[i][6], &n);
        assert_false(n == n0 && memcmp(k, k0, n) == 0);
        free(k);
    }
    /* the options are part of the problem */
    char err[256];
    cfg_run *run = NULL;
    char text[2048];
    snprintf(text, sizeof text, PK_YAML, "3.6", "4", "one", "100", "a", "1GFLOP", "1MB");
    run = cfg_load_buffer("pk.yaml", text, strlen(text), err, sizeof err);
    assert_non_null(run);
    json_t *opts = json_pack("{s:s, s:i, s:i}", "decode", "sample", "samples", 4, "seed", 7);
    decide_opts o;
    assert_int_equal(decide_opts_parse(opts, 1, 1000, &o, err, sizeof err), 0);
    k = pk_place(&run->jobs[0], &run->cluster, &o, &n);
    assert_false(n == n0 && memcmp(k, k0, n) == 0);
    free(k);
    json_object_set_new(opts, "seed", json_integer(8));
    decide_opts o8;
    assert_int_equal(decide_opts_parse(opts, 1, 1000, &o8, err, sizeof err), 0);
    size_t n8;
    char *k8 = pk_place(&run->jobs[0], &run->cluster, &o8, &n8);
    k = pk_place(&run->jobs[0], &run->cluster, &o, &n);
    assert_false(n == n8 && memcmp(k, k8, n) == 0);
    free(k);
    free(k8);
    json_decref(opts);
    cfg_free(run);
    free(k0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_cut_utf8),
        cmocka_unit_test(test_cache_lru),
        cmocka_unit_test(test_cache_bytes),
        cmocka_unit_test(test_problem_key),
        cmocka_unit_test(test_metrics_page),
        cmocka_unit_test(test_json_member),
        cmocka_unit_test(test_dump_strings),
        cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_policy_slot_failed_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
