/* test_serve_api.c -- `strata serve` over real sockets: the /v1 API and its errors.
 *
 * Each test starts the real daemon on 127.0.0.1 with an ephemeral port (no
 * policy: the placeholder agent cannot load one, and the policy-free paths
 * are what these tests pin down) and talks HTTP to it (serve_client.h).
 * Figures are checked against the small instance below, worked out by hand
 * from docs/model.md.
 *
 *   type gpu: flops 1TFLOPS = 1e12, io_bw 1GB/s, net_bw 8Gbit/s = 1e9 B/s,
 *             mem 10GB, price $3.6/h; nodes n0 (zone a), n1 (zone b), 4 units
 *             each, bw 1GB/s, latency 0; inter_bw 10Gbit/s = 1.25e9, 1 ms
 *   job tiny: B 10, S 3.6e6, R 100, alpha 0;
 *             layer a: 1 GFLOP, params 1MB; layer b: 1 GFLOP, params 0
 *
 * Plan gpu,gpu is one stage: C = 10 * 2e9 / 1e12 = 0.02 s, I = X = 0,
 * P = 2 * 1e6 / 1e9 = 0.002 s, t = 0.022 s; q = R t / B = 0.22 so k = 1;
 * theta = 10 / 0.022 = 454.54.. samples/s; T = 3.6e6 * 0.022 / 10 = 7920 s;
 * cost = 7920 / 3600 * 1 * 3.6 = $7.92; g = max(1, ceil(1e6 / 2^30)) = 1.
 *
 * Placed with the worker and the ps on n0: P' = 0, t' = 0.02, theta' = 500,
 * T' = 7200 s, cost' = $7.20, no traffic. Worker on n0, ps on n1 (zones a,
 * b): b = min(1e9, 1e9, 1e9) = 1e9 (the zone cap 1.25e9 is above), lat =
 * 0 + 1e-3; P' = 2 * 1e6 / 1e9 + 2 * 1e-3 = 0.004, t' = 0.024, theta' =
 * 416.66.., T' = 8640 s, cost' = $8.64; 2 W / g = 2e6 bytes per step cross
 * the nodes and the zones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/serve_client.h"

static int close_to(double got, double want) {
    double d = got - want, m = want < 0 ? -want : want;
    if (d < 0) d = -d;
    return d <= 1e-12 * (m > 1e-300 ? m : 1e-300);
}

static json_t *tiny_cluster(void) {
    return json_pack(
        "{s:[{s:s, s:s, s:s, s:s, s:s, s:s, s:f}], s:[{s:s}, {s:s}],"
        " s:[{s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:s, s:s}]}",
        "types", "name", "gpu", "kind", "gpu", "flops", "1TFLOPS", "io_bw", "1GB/s", "net_bw",
        "8Gbit/s", "mem", "10GB", "price", 3.6, "zones", "name", "a", "name", "b", "nodes",
        "name", "n0", "type", "gpu", "units", 4, "zone", "a", "bw", "1GB/s", "name", "n1",
        "type", "gpu", "units", 4, "zone", "b", "bw", "1GB/s");
}

static json_t *tiny_job(double R) {
    return json_pack("{s:s, s:i, s:f, s:f, s:i, s:[{s:s, s:s, s:i, s:i, s:s, s:s},"
                     " {s:s, s:s, s:i, s:i, s:i, s:s}]}",
                     "name", "tiny", "batch", 10, "samples", 3.6e6, "min_throughput", R,
                     "alpha", 0, "layers", "name", "a", "flops", "1GFLOP", "io", 0, "act", 0,
                     "params", "1MB", "mem", "1MB", "name", "b", "flops", "1GFLOP", "io", 0,
                     "act", 0, "params", 0, "mem", "1MB");
}

/* {"cluster": tiny, "job": tiny(R)} plus key/value pairs (NULL-ended). */
static json_t *tiny_body(double R, ...) {
    json_t *b = json_pack("{s:o, s:o}", "cluster", tiny_cluster(), "job", tiny_job(R));
    va_list ap;
    va_start(ap, R);
    const char *k;
    while ((k = va_arg(ap, const char *))) json_object_set_new(b, k, va_arg(ap, json_t *));
    va_end(ap);
    return b;
}

static double num(const json_t *o, const char *key) {
    return json_number_value(json_object_get(o, key));
}

static sv_proc start(const char *tag, const char *const *extra) {
    sv_proc p;
    assert_int_equal(sv_start(&p, tag, extra), 0);
    return p;
}

/* Asserts a 400 (or `status`) whose error contains `needle`. */
static void expect_error(int port, const char *method, const char *path, json_t *doc,
                         int status, const char *needle) {
    sv_resp r;
    int st = sv_json_req(port, method, path, doc, NULL, &r);
    json_t *e = sv_body_json(&r);
    const char *msg = json_string_value(json_object_get(e, "error"));
    if (st != status || !msg || !strstr(msg, needle))
        fail_msg("%s %s: expected %d with \"%s\", got %d: %s", method, path, status, needle, st,
                 r.body ? r.body : "");
    json_decref(e);
    sv_resp_free(&r);
}

/* ---- health ------------------------------------------------------------------------ */

static void test_health_and_ready(void **state) {
    (void)state;
    sv_proc p = start("health", NULL);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    assert_non_null(strstr(r.body, "\"ok\""));
    sv_resp_free(&r);
    /* No policy: not ready, and it says why. */
    assert_int_equal(sv_http(p.port, "GET", "/readyz", NULL, NULL, 0, &r), 503);
    assert_non_null(strstr(r.body, "no policy loaded"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* ---- /v1/cost ------------------------------------------------------------------------- */

static void test_cost_figures(void **state) {
    (void)state;
    sv_proc p = start("cost", NULL);
    sv_resp r;
    /* Unplaced: the §2 figures. */
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost",
                                 tiny_body(100, "assignment", json_pack("[s,s]", "gpu", "gpu"),
                                           NULL),
                                 NULL, &r), 200);
    json_t *o = sv_body_json(&r);
    json_t *plan = json_object_get(o, "plan");
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_true(close_to(num(plan, "cost"), 7.92));
    assert_true(close_to(num(plan, "throughput"), 10.0 / 0.022));
    assert_true(close_to(num(plan, "time"), 7920.0));
    json_t *st = json_array_get(json_object_get(plan, "stages"), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "units")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "n_ps")), 1);
    assert_true(close_to(num(st, "sync"), 0.002));
    assert_true(json_is_null(json_object_get(o, "placement")));
    json_decref(o);
    sv_resp_free(&r);

    /* The same plan as "gpu" (one name for every layer), placed on one node. */
    json_t *same = json_pack("[{s:[s], s:[s]}]", "workers", "n0", "ps", "n0");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost",
                                 tiny_body(100, "assignment", json_string("gpu"), "placement",
                                           same, NULL),
                                 NULL, &r), 200);
    o = sv_body_json(&r);
    plan = json_object_get(o, "plan");
    assert_true(close_to(num(plan, "cost"), 7.2));
    assert_true(close_to(num(plan, "throughput"), 500.0));
    assert_true(num(plan, "cross_node_bytes") == 0.0);
    json_t *t1 = json_array_get(json_object_get(o, "placement"), 1);
    assert_string_equal(json_string_value(json_object_get(t1, "role")), "ps");
    assert_string_equal(json_string_value(json_object_get(t1, "node")), "n0");
    json_decref(o);
    sv_resp_free(&r);

    /* Worker on n0, ps on n1 across zones. */
    json_t *apart = json_pack("[{s:[s], s:[s]}]", "workers", "n0", "ps", "n1");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost",
                                 tiny_body(100, "assignment", json_string("gpu,gpu"),
                                           "placement", apart, NULL),
                                 NULL, &r), 200);
    o = sv_body_json(&r);
    plan = json_object_get(o, "plan");
    assert_true(close_to(num(plan, "cost"), 8.64));
    assert_true(close_to(num(plan, "throughput"), 10.0 / 0.024));
    assert_true(close_to(num(plan, "cross_node_bytes"), 2e6));
    assert_true(close_to(num(plan, "cross_zone_bytes"), 2e6));
    json_decref(o);
    sv_resp_free(&r);

    /* R = 1e5: q = 1e5 * 0.022 / 10 = 220 units > the 8 there are. */
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost",
                                 tiny_body(1e5, "assignment", json_string("gpu"), NULL), NULL,
                                 &r), 200);
    o = sv_body_json(&r);
    assert_true(json_is_false(json_object_get(o, "feasible")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "plan"), "rule")),
                        "capacity");
    json_decref(o);
    sv_resp_free(&r);

    /* Errors name the field. */
    expect_error(p.port, "POST", "/v1/cost", tiny_body(100, NULL), 400, "assignment: missing");
    expect_error(p.port, "POST", "/v1/cost",
                 tiny_body(100, "assignment", json_pack("[s]", "gpu"), NULL), 400,
                 "assignment: 1 entries for 2 layers");
    expect_error(p.port, "POST", "/v1/cost",
                 tiny_body(100, "assignment", json_pack("[s,s]", "gpu", "tpu"), NULL), 400,
                 "assignment[1]: unknown type \"tpu\"");
    expect_error(p.port, "POST", "/v1/cost",
                 tiny_body(100, "assignment", json_pack("[s,i]", "gpu", 3), NULL), 400,
                 "assignment[1]: expected a type name, got 3");
    expect_error(p.port, "POST", "/v1/cost",
                 tiny_body(100, "assignment", json_string("gpu"), "placement",
                           json_pack("[{s:[s,s], s:[s]}]", "workers", "n0", "n1", "ps", "n0"),
                           NULL),
                 400, "placement[0].workers: expected 1 node names");
    expect_error(p.port, "POST", "/v1/cost",
                 tiny_body(100, "assignment", json_string("gpu"), "placement",
                           json_pack("[{s:[s], s:[s]}]", "workers", "n0", "ps", "n9"), NULL),
                 400, "placement[0].ps[0]: unknown node \"n9\"");
    assert_int_equal(sv_stop(&p), 0);
}

/* ---- /v1/place and /v1/solve without a policy ------------------------------------------- */

static void test_place_without_policy(void **state) {
    (void)state;
    sv_proc p = start("place", NULL);
    sv_resp r;
    /* The policy is the default planner: no policy, 503. */
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place", tiny_body(100, NULL), NULL, &r),
                     503);
    assert_non_null(strstr(r.body, "no policy loaded"));
    sv_resp_free(&r);
    /* A named solver and placer answer: exact plans gpu,gpu; pack puts the
     * worker and then the ps on the first node with room, n0: cost $7.20. */
    json_t *opts = json_pack("{s:s, s:s}", "plan_method", "exact", "placement", "pack");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                 tiny_body(100, "options", opts, NULL), NULL, &r), 200);
    json_t *o = sv_body_json(&r);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_true(close_to(num(o, "cost"), 7.2));
    assert_true(close_to(num(o, "throughput"), 500.0));
    assert_true(num(json_object_get(o, "traffic"), "cross_node_bytes") == 0.0);
    assert_string_equal(json_string_value(json_object_get(o, "plan_from")), "exact");
    assert_string_equal(json_string_value(json_object_get(o, "placement_by")), "pack");
    assert_true(json_is_null(json_object_get(o, "policy")));
    json_t *assign = json_object_get(json_object_get(o, "plan"), "assignment");
    assert_int_equal(json_array_size(assign), 2);
    assert_string_equal(json_string_value(json_array_get(assign, 1)), "gpu");
    json_t *tasks = json_object_get(o, "placement");
    assert_int_equal(json_array_size(tasks), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "node")),
                        "n0");
    assert_true(json_integer_value(json_object_get(o, "elapsed_us")) >= 0);
    json_decref(o);
    sv_resp_free(&r);
    /* Plan only. */
    opts = json_pack("{s:s, s:s}", "plan_method", "greedy", "placement", "none");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                 tiny_body(100, "options", opts, NULL), NULL, &r), 200);
    o = sv_body_json(&r);
    assert_true(close_to(num(o, "cost"), 7.92));
    assert_true(json_is_null(json_object_get(o, "placement")));
    json_decref(o);
    sv_resp_free(&r);
    /* Options name their field. */
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:s}", "placement", "nowhere"), NULL),
                 400, "options.placement: unknown placement \"nowhere\"");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:s}", "plan_method", "magic"), NULL),
                 400, "options.plan_method: unknown method \"magic\"");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:s}", "decode", "beam"), NULL), 400,
                 "options.decode");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:i}", "samples", 0), NULL), 400,
                 "options.samples: expected a whole number from 1 to 1024, got 0");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:s, s:s}", "plan_method", "greedy",
                                                     "placement", "policy"), NULL),
                 400, "options.placement: \"policy\"");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:i}", "budget_ms", 999999), NULL), 400,
                 "options.budget_ms");
    expect_error(p.port, "POST", "/v1/place",
                 tiny_body(100, "options", json_pack("{s:b}", "fast", 1), NULL), 400,
                 "options.fast: unknown key");
    assert_int_equal(sv_stop(&p), 0);
}

/* place_text posts text to /v1/place; returns the status and the answer
 * (caller owns it) without its elapsed_us, and its error message (or "")
 * in msg. */
static int place_text(int port, const char *text, json_t **ans, char *msg, size_t cap) {
    sv_resp r;
    int st = sv_http(port, "POST", "/v1/place", NULL, text, strlen(text), &r);
    json_t *o = sv_body_json(&r);
    const char *e = json_string_value(json_object_get(o, "error"));
    json_object_del(o, "elapsed_us");
    snprintf(msg, cap, "%s", e ? e : "");
    sv_resp_free(&r);
    *ans = o;
    return st;
}

/* text_of returns the compact JSON text of v (caller frees it), taking v. */
static char *text_of(json_t *v) {
    char *t = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    assert_non_null(t);
    return t;
}

/* A body whose cluster's bytes the daemon read before reads only the rest
 * (strata_cluster_cache_total counts it) and is answered as a daemon that
 * never saw that cluster answers it: the same plans, the same errors. */
static void test_place_known_cluster(void **state) {
    (void)state;
    sv_proc p = start("known", NULL);
    char *cl = text_of(tiny_cluster()), *j1 = text_of(tiny_job(100)), *j2 = text_of(tiny_job(300));
    json_t *t = tiny_job(100);
    json_object_set_new(json_array_get(json_object_get(t, "layers"), 1), "mem", json_string("20GB"));
    char *big = text_of(t);
    const char *opts = "{\"plan_method\":\"exact\",\"placement\":\"pack\"}";
    /* 0: read in full (a miss); 1-3: the same cluster bytes in new bodies
     * (hits), answered; 4-8: hits whose rest is wrong in some way */
    const char *fmt[9] = {
        "{\"cluster\":%s,\"job\":%s,\"options\":%s}",
        "{ \"job\" : %2$s ,\n \"cluster\" :\t%1$s, \"options\":%3$s }",
        "{\"options\":%3$s,\"model\":\"v1\",\"cluster\":%1$s,\"job\":%2$s}",
        "{\"cluster\":%s,\"job\":%s,\"options\":{\"plan_method\":\"greedy\",\"placement\":\"none\"}}",
        "{\"cluster\":%s,\"job\":%s,\"options\":%s}",
        "{\"cluster\":%s,\"job\":%s,\"options\":%s}x",
        "{\"cluster\":%s,\"job\":%s,\"options\":%s,\"job\":{}}",
        "{\"cluster\":%s,\"job\":%s,\"options\":{\"on\":\"free\"}}",
        "{\"cluster\":%s,\"job\":%s,\"options\":%s,\"extra\":1}"};
    const char *job[9] = {j1, j2, j1, j2, big, j1, j1, j1, j1};
    static const int want[9] = {200, 200, 200, 200, 400, 400, 400, 400, 400};
    char body[8192];
    for (int i = 0; i < 9; i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
        snprintf(body, sizeof body, fmt[i], cl, job[i], opts);
#pragma GCC diagnostic pop
        json_t *a = NULL, *b = NULL;
        char ma[2048], mb[2048];
        int sa = place_text(p.port, body, &a, ma, sizeof ma);
        sv_proc q = start("fresh", NULL); /* never saw the cluster */
        int sb = place_text(q.port, body, &b, mb, sizeof mb);
        assert_int_equal(sv_stop(&q), 0);
        if (sa != want[i] || sb != want[i] || !json_equal(a, b) || strcmp(ma, mb))
            fail_msg("body %d: %d vs %d: %s | %s", i, sa, sb, ma, mb);
        json_decref(a);
        json_decref(b);
    }
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    /* body 0 a miss; 1-8 hits (4-8 then read in full for their message) */
    assert_true(sv_series(r.body, "strata_cluster_cache_total{result=\"miss\"}") == 1);
    assert_true(sv_series(r.body, "strata_cluster_cache_total{result=\"hit\"}") == 8);
    sv_resp_free(&r);
    free(cl);
    free(j1);
    free(j2);
    free(big);
    assert_int_equal(sv_stop(&p), 0);
}

/* A body that differs from one read before only by its job's name reads
 * as that parse (strata_parse_cache_total counts a hit) when the name is
 * plain, and is answered under its own name; any other name is read in
 * full. Either way it is answered exactly as a daemon that never saw the
 * first body answers it: the same status, answer and error. */
static void test_place_renamed_job(void **state) {
    (void)state;
    sv_proc p = start("renamed", NULL);
    char *cl = text_of(tiny_cluster());
    const char *opts = "{\"plan_method\":\"exact\",\"placement\":\"pack\"}";
    static const char az[] = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01";
    char long63[80], long64[80];
    snprintf(long63, sizeof long63, "\"%.63s\"", az);
    snprintf(long64, sizeof long64, "\"%.64s\"", az);
    /* the name's JSON text; whether it is plain (a parse cache hit); the
     * status; the name the answer gives */
    const struct {
        const char *name;
        int plain, status;
        const char *answer_name;
    } v[] = {
        {"\"first\"", 0, 200, "first"}, /* read in full: a miss */
        {"\"second-1.b_c\"", 1, 200, "second-1.b_c"},
        {long63, 1, 200, NULL},
        {"\"a,b\"", 0, 400, NULL},       /* the loader refuses commas */
        {"\"\"", 0, 400, NULL},          /* and an empty name */
        {long64, 0, 400, NULL},          /* and 64 characters */
        {"\"tab\\there\"", 0, 400, NULL}, /* and control characters */
        {"\"\\u0041bc\"", 0, 200, "Abc"}, /* escapes: read in full */
        {"\"x y\"", 0, 200, "x y"},
        {"[]", 0, 400, NULL},
        {"\"first\"", 1, 200, "first"},
    };
    char body[8192];
    int hits = 0;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        snprintf(body, sizeof body,
                 "{\"cluster\":%s,\"job\":{\"name\":%s,\"batch\":10,\"samples\":3.6e6,"
                 "\"min_throughput\":100,\"alpha\":0,\"layers\":[{\"name\":\"a\",\"flops\":"
                 "\"1GFLOP\",\"io\":0,\"act\":0,\"params\":\"1MB\",\"mem\":\"1MB\"},{\"name\":"
                 "\"b\",\"flops\":\"1GFLOP\",\"io\":0,\"act\":0,\"params\":0,\"mem\":\"1MB\"}]},"
                 "\"options\":%s}", cl, v[i].name, opts);
        json_t *a = NULL, *b = NULL;
        char ma[2048], mb[2048];
        int sa = place_text(p.port, body, &a, ma, sizeof ma);
        sv_proc q = start("fresh", NULL); /* never saw the first body */
        int sb = place_text(q.port, body, &b, mb, sizeof mb);
        assert_int_equal(sv_stop(&q), 0);
        if (sa != v[i].status || sb != v[i].status || !json_equal(a, b) || strcmp(ma, mb))
            fail_msg("name %s: %d vs %d: %s | %s", v[i].name, sa, sb, ma, mb);
        if (v[i].answer_name)
            assert_string_equal(json_string_value(json_object_get(a, "job")), v[i].answer_name);
        hits += v[i].plain;
        json_decref(a);
        json_decref(b);
    }
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    /* one count per request: a plain name's body is looked up twice (without
     * its name, then by its full bytes) but counts one miss */
    assert_true(sv_series(r.body, "strata_parse_cache_total{result=\"hit\"}") == hits);
    assert_true(sv_series(r.body, "strata_parse_cache_total{result=\"miss\"}") ==
                (double)(sizeof v / sizeof *v) - hits);
    sv_resp_free(&r);
    free(cl);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_solve(void **state) {
    (void)state;
    sv_proc p = start("solve", NULL);
    sv_resp r;
    json_t *opts = json_pack("{s:s, s:i}", "method", "exact", "budget_ms", 2000);
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/solve",
                                 tiny_body(100, "options", opts, NULL), NULL, &r), 200);
    json_t *o = sv_body_json(&r);
    assert_true(json_is_true(json_object_get(o, "found")));
    assert_true(json_is_true(json_object_get(o, "optimal")));
    assert_string_equal(json_string_value(json_object_get(o, "method")), "exact");
    assert_true(close_to(num(json_object_get(o, "plan"), "cost"), 7.92));
    json_decref(o);
    sv_resp_free(&r);
    /* With a placer: worker and ps on n0, as /v1/place. */
    opts = json_pack("{s:s, s:s}", "method", "homogeneous", "placement", "pack");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/solve",
                                 tiny_body(100, "options", opts, NULL), NULL, &r), 200);
    o = sv_body_json(&r);
    assert_true(close_to(num(json_object_get(o, "plan"), "cost"), 7.2));
    assert_int_equal(json_array_size(json_object_get(o, "placement")), 2);
    json_decref(o);
    sv_resp_free(&r);
    /* No plan reaches R = 1e5 (220 units needed, 8 exist): answered, not found. */
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/solve",
                                 tiny_body(1e5, "options", json_pack("{s:s}", "method", "exact"),
                                           NULL),
                                 NULL, &r), 200);
    o = sv_body_json(&r);
    assert_true(json_is_false(json_object_get(o, "found")));
    assert_true(json_is_null(json_object_get(o, "plan")));
    json_decref(o);
    sv_resp_free(&r);
    expect_error(p.port, "POST", "/v1/solve",
                 tiny_body(100, "options", json_pack("{s:s}", "method", "oracle"), NULL), 400,
                 "options.method: unknown method \"oracle\"");
    expect_error(p.port, "POST", "/v1/solve",
                 tiny_body(100, "options", json_pack("{s:i}", "budget_ms", 20000), NULL), 400,
                 "options.budget_ms: expected a whole number from 1 to 10000, got 20000");
    expect_error(p.port, "POST", "/v1/solve",
                 tiny_body(100, "options", json_pack("{s:s, s:i}", "method", "exact", "x", 1), NULL),
                 400, "options.x: unknown key");
    assert_int_equal(sv_stop(&p), 0);
}

/* ---- bad requests ----------------------------------------------------------------------- */

static void post_text(int port, const char *path, const char *text, size_t len, int status,
                      const char *needle) {
    sv_resp r;
    int st = sv_http(port, "POST", path, NULL, text, len, &r);
    json_t *e = sv_body_json(&r);
    const char *msg = json_string_value(json_object_get(e, "error"));
    if (st != status || !msg || (needle && !strstr(msg, needle)))
        fail_msg("POST %s: expected %d with \"%s\", got %d: %.300s", path, status,
                 needle ? needle : "", st, r.body ? r.body : "");
    json_decref(e);
    sv_resp_free(&r);
}

static void test_bad_requests(void **state) {
    (void)state;
    sv_proc p = start("bad", NULL);
    /* Malformed JSON: the line and column of the fault. Line 3 is
     * `    "types": [1,]`: four spaces, "types" (7), ':', ' ', '[', '1', ','
     * take columns 1-16, so the ']' is column 17. */
    const char *broken = "{\n  \"cluster\": {\n    \"types\": [1,]\n  }\n}";
    post_text(p.port, "/v1/place", broken, strlen(broken), 400, "line 3, column 17");
    post_text(p.port, "/v1/cost", "", 0, 400, "empty body");
    post_text(p.port, "/v1/solve", "[1, 2]", 6, 400, "must be a JSON object, got an array");
    post_text(p.port, "/v1/place", "{\"a\": 1, \"a\": 2}", 16, 400, "duplicate");
    /* Wrong types and units, named by key path. */
    json_t *b = tiny_body(100, "options", json_pack("{s:s}", "plan_method", "greedy"), NULL);
    json_object_set_new(json_array_get(json_object_get(json_object_get(b, "job"), "layers"), 0),
                        "flops", json_string("fast"));
    expect_error(p.port, "POST", "/v1/place", b, 400, "job.layers[0].flops: expected");
    b = tiny_body(100, NULL);
    json_object_set_new(json_object_get(b, "job"), "batch", json_true());
    expect_error(p.port, "POST", "/v1/place", b, 400, "job.batch");
    b = tiny_body(100, NULL);
    json_object_set_new(json_array_get(json_object_get(json_object_get(b, "cluster"), "types"),
                                       0), "net_bw", json_string("16GiB"));
    expect_error(p.port, "POST", "/v1/place", b, 400, "cluster.types[0].net_bw");
    b = tiny_body(100, NULL);
    json_object_set_new(b, "cluster", json_string("big"));
    expect_error(p.port, "POST", "/v1/place", b, 400, "cluster: expected an object");
    b = tiny_body(100, NULL);
    json_object_del(b, "job");
    expect_error(p.port, "POST", "/v1/place", b, 400, "job: missing required key");
    /* No request can name a file to read. */
    expect_error(p.port, "POST", "/v1/place", tiny_body(100, "include", json_string("/etc/passwd"),
                                                        NULL),
                 400, "include: unknown key");
    b = tiny_body(100, NULL);
    json_object_set_new(json_object_get(b, "cluster"), "include", json_string("/etc/passwd"));
    expect_error(p.port, "POST", "/v1/place", b, 400, "cluster.include");
    /* Too many layers, too many nodes. */
    b = tiny_body(100, NULL);
    json_t *layers = json_object_get(json_object_get(b, "job"), "layers");
    for (int i = 2; i < 257; i++) {
        json_t *l = json_deep_copy(json_array_get(layers, 1));
        char name[16];
        snprintf(name, sizeof name, "l%d", i);
        json_object_set_new(l, "name", json_string(name));
        json_array_append_new(layers, l);
    }
    expect_error(p.port, "POST", "/v1/place", b, 400,
                 "job.layers: 257 layers, more than this daemon accepts (256)");
    b = tiny_body(100, NULL);
    json_t *nodes = json_object_get(json_object_get(b, "cluster"), "nodes");
    for (int i = 2; i < 1025; i++) {
        json_t *n = json_deep_copy(json_array_get(nodes, 1));
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        json_object_set_new(n, "name", json_string(name));
        json_array_append_new(nodes, n);
    }
    expect_error(p.port, "POST", "/v1/place", b, 400,
                 "cluster.nodes: 1025 nodes, more than this daemon accepts (1024)");
    /* 1 MiB is accepted (a valid object padded with spaces); one byte more is 413. */
    size_t mib = 1u << 20;
    char *big = malloc(mib + 2);
    memset(big, ' ', mib + 1);
    big[0] = '{';
    big[mib - 1] = '}';
    post_text(p.port, "/v1/place", big, mib, 400, "cluster: missing required key");
    big[mib - 1] = ' ';
    big[mib] = '}';
    post_text(p.port, "/v1/place", big, mib + 1, 413, "over 1048576 bytes");
    free(big);
    /* Paths and methods. */
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/v2/place", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/v1/place", NULL, NULL, 0, &r), 405);
    char allow[64];
    assert_non_null(sv_header(&r, "Allow", allow, sizeof allow));
    assert_string_equal(allow, "POST");
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "DELETE", "/healthz", NULL, NULL, 0, &r), 405);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "POST", "/v1/jobs", NULL, "{}", 2, &r), 405);
    sv_resp_free(&r);
    /* Still serving after all that. */
    assert_int_equal(sv_http(p.port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* ---- the token ------------------------------------------------------------------------- */

static void test_token(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/serve-token-%d", sv_tmp(), (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("  s3cret-Token_1\n", f);
    fclose(f);
    const char *args[] = {"--token-file", path, NULL};
    sv_proc p = start("token", args);
    sv_resp r;
    const char *good = "Authorization: Bearer s3cret-Token_1\r\n";
    const char *bad = "Authorization: Bearer s3cret-Token_2\r\n";
    const char *prefix = "Authorization: Bearer s3cret\r\n";
    const char *basic = "Authorization: Basic czNjcmV0LVRva2VuXzE=\r\n";
    json_t *opts = json_pack("{s:s}", "plan_method", "greedy");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                 tiny_body(100, "options", json_incref(opts), NULL), NULL, &r),
                     401);
    char www[64];
    assert_non_null(sv_header(&r, "WWW-Authenticate", www, sizeof www));
    assert_non_null(strstr(www, "Bearer"));
    sv_resp_free(&r);
    const char *wrong[] = {bad, prefix, basic};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                     tiny_body(100, "options", json_incref(opts), NULL),
                                     wrong[i], &r), 401);
        sv_resp_free(&r);
    }
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                 tiny_body(100, "options", json_incref(opts), NULL), good, &r),
                     200);
    sv_resp_free(&r);
    /* The scheme is case-insensitive. */
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place",
                                 tiny_body(100, "options", json_incref(opts), NULL),
                                 "Authorization: bearer s3cret-Token_1\r\n", &r), 200);
    sv_resp_free(&r);
    json_decref(opts);
    /* Health checks need no token; everything else does. */
    assert_int_equal(sv_http(p.port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/readyz", NULL, NULL, 0, &r), 503);
    sv_resp_free(&r);
    const char *paths[] = {"/metrics", "/v1/jobs", "/v1/jobs/x"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sv_http(p.port, "GET", paths[i], NULL, NULL, 0, &r), 401);
        sv_resp_free(&r);
    }
    assert_int_equal(sv_http(p.port, "GET", "/metrics", good, NULL, 0, &r), 200);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "POST", "/k8s/filter", NULL, "{}", 2, &r), 401);
    sv_resp_free(&r);
    /* A big unauthorised body is read and refused with 401, not kept. */
    char *big = calloc(1, 300000);
    memset(big, 'x', 299999);
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, big, 299999, &r), 401);
    sv_resp_free(&r);
    free(big);
    assert_int_equal(sv_stop(&p), 0);
    /* An empty token file is refused at start. */
    f = fopen(path, "w");
    fputs(" \n", f);
    fclose(f);
    sv_proc q;
    assert_int_equal(sv_start(&q, "token-empty", args), -1);
    remove(path);
}

/* ---- the jobs registry ----------------------------------------------------------------- */

static void test_jobs_registry(void **state) {
    (void)state;
    sv_proc p = start("jobs", NULL);
    sv_resp r;
    json_t *doc = json_pack("{s:o, s:o}", "cluster", tiny_cluster(), "job", tiny_job(100));
    json_object_del(json_object_get(doc, "job"), "name"); /* the URL names it */
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/train-1", json_incref(doc), NULL, &r),
                     201);
    json_t *o = sv_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(o, "layers")), 2);
    json_int_t v1 = json_integer_value(json_object_get(o, "version"));
    json_decref(o);
    sv_resp_free(&r);
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/train-1", json_incref(doc), NULL, &r),
                     200);
    o = sv_body_json(&r);
    assert_true(json_integer_value(json_object_get(o, "version")) > v1);
    json_decref(o);
    sv_resp_free(&r);
    /* A cluster without nodes is fine here: the scheduler shows the nodes. */
    json_object_del(json_object_get(doc, "cluster"), "nodes");
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/a.job", json_incref(doc), NULL, &r),
                     201);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/v1/jobs", NULL, NULL, 0, &r), 200);
    o = sv_body_json(&r);
    json_t *jobs = json_object_get(o, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "name")),
                        "a.job");
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 1), "name")),
                        "train-1");
    json_decref(o);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/v1/jobs/train-1", NULL, NULL, 0, &r), 200);
    o = sv_body_json(&r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "job"), "name")),
                        "train-1");
    /* the extender's plan is fixed at registration, on the registered nodes */
    assert_true(json_is_true(json_object_get(json_object_get(o, "extender"), "planned")));
    assert_string_equal(json_string_value(json_object_get(o, "namespace")), "default");
    json_decref(o);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/train-1", NULL, NULL, 0, &r), 204);
    assert_int_equal(r.body_len, 0);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/v1/jobs/train-1", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/train-1", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    /* Bad names and bodies. */
    expect_error(p.port, "PUT", "/v1/jobs/-x", json_incref(doc), 400, "job name \"-x\"");
    json_object_set_new(json_object_get(doc, "job"), "samples", json_string("many"));
    expect_error(p.port, "PUT", "/v1/jobs/ok", json_incref(doc), 400, "job.samples");
    json_object_set_new(json_object_get(doc, "job"), "samples", json_real(1e6));
    json_object_set_new(doc, "options", json_pack("{s:s}", "placement", "far"));
    expect_error(p.port, "PUT", "/v1/jobs/ok", json_incref(doc), 400, "options.placement");
    json_object_del(doc, "options");
    json_object_set_new(doc, "extra", json_true());
    expect_error(p.port, "PUT", "/v1/jobs/ok", json_incref(doc), 400, "extra: unknown key");
    json_decref(doc);
    /* {namespace}/{name}; deeper paths are no job's */
    assert_int_equal(sv_http(p.port, "PUT", "/v1/jobs/a/b/c", NULL, "{}", 2, &r), 404);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "PUT", "/v1/jobs/-a/b", NULL, "{}", 2, &r), 400);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* ---- metrics and the log ------------------------------------------------------------------ */

/* Reads the value of a series line that starts with `series ` from the page. */
static double series(const char *page, const char *name) {
    size_t n = strlen(name);
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return atof(l + n + 1);
    return -1;
}

static void test_metrics_and_log(void **state) {
    (void)state;
    sv_proc p = start("metrics", NULL);
    sv_resp r;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost",
                                     tiny_body(100, "assignment", json_string("gpu"), NULL),
                                     NULL, &r), 200);
        sv_resp_free(&r);
    }
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, "{", 1, &r), 400);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/nope", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    char ct[96];
    assert_non_null(sv_header(&r, "Content-Type", ct, sizeof ct));
    assert_non_null(strstr(ct, "text/plain; version=0.0.4"));
    const char *page = r.body;
    assert_true(series(page, "strata_requests_total{path=\"/v1/cost\",status=\"200\"}") == 3);
    assert_true(series(page, "strata_requests_total{path=\"/v1/cost\",status=\"400\"}") == 1);
    assert_true(series(page, "strata_requests_total{path=\"other\",status=\"404\"}") == 1);
    /* The histogram of /v1/cost: cumulative, 4 requests in all. */
    assert_true(series(page, "strata_request_duration_seconds_count{path=\"/v1/cost\"}") == 4);
    assert_true(series(page, "strata_request_duration_seconds_bucket{path=\"/v1/cost\","
                             "le=\"+Inf\"}") == 4);
    assert_true(series(page, "strata_request_duration_seconds_bucket{path=\"/v1/cost\","
                             "le=\"10\"}") == 4);
    assert_true(series(page, "strata_request_duration_seconds_sum{path=\"/v1/cost\"}") > 0);
    assert_true(series(page, "strata_policy_loaded") == 0);
    assert_true(series(page, "strata_policy_loads_total{result=\"ok\"}") == 0);
    /* Two of the three equal bodies were parsed once: one miss, two hits. */
    assert_true(series(page, "strata_parse_cache_total{result=\"hit\"}") == 2);
    assert_non_null(strstr(page, "# TYPE strata_request_duration_seconds histogram"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    /* One log line per request: 4 POSTs, one 404, one /metrics. */
    assert_int_equal(sv_log_count(&p, "127.0.0.1 POST /v1/cost 200 ", NULL), 3);
    assert_int_equal(sv_log_count(&p, "127.0.0.1 POST /v1/cost 400 1 ", "malformed JSON", NULL), 1);
    assert_int_equal(sv_log_count(&p, "GET /nope 404", NULL), 1);
    assert_int_equal(sv_log_count(&p, "GET /metrics 200", NULL), 1);
    assert_int_equal(sv_log_count(&p, "ms", "127.0.0.1 ", NULL), 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_and_ready),
        cmocka_unit_test(test_cost_figures),
        cmocka_unit_test(test_place_without_policy),
        cmocka_unit_test(test_place_known_cluster),
        cmocka_unit_test(test_place_renamed_job),
        cmocka_unit_test(test_solve),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_jobs_registry),
        cmocka_unit_test(test_metrics_and_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
