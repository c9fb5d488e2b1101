/* test_serve_policy.c -- `strata serve` with a real policy checkpoint.
 *
 * Two small checkpoints are trained for the test by the real program
 * (`strata train --search FILE --steps N --seed S --out DIR`, a fraction of
 * a second each) on a three-node, two-type instance; the daemon serves one
 * of them from a file the test controls, and:
 *
 *   - /readyz and /metrics report it (file, step, hash, generation);
 *   - /v1/place plans and places with it, and its figures are those
 *     /v1/cost gives for the same assignment and placement, to 1e-12; the
 *     same body again is answered from its memo with the same answer, a
 *     time-budgeted sampling request never is;
 *   - under load, the file is replaced by the other checkpoint and SIGHUP
 *     sent: every request is answered 200, the new hash serves afterwards;
 *     then the file is replaced by garbage and SIGHUP sent again: still
 *     every request 200, the second policy keeps serving, the log says why
 *     (the memo of the repeated body never answers for the old policy);
 *   - the plan memo answers the same problem under another name (its own
 *     name in the answer), decodes a job differing in one layer's flops,
 *     and is emptied by a reload;
 *   - the extender plans with the policy;
 *   - a job registered with replica counts equal to the plan the policy
 *     decodes is placed by the policy's node head, task for task as
 *     `strata place --method policy` places it; so is a TFJob whose counts
 *     differ from that plan's (the plan gets them, the node head places
 *     those tasks): task for task as `strata place --method policy
 *     --workers W --ps P` places them and as agent_policy_decode with those
 *     counts in this process, every pod of it kept by /k8s/filter only on
 *     nodes of its stage's type and scored best on its planned node;
 *     counts no plan can hold are refused with the reason.
 *
 * Were agent/policy.c the placeholder that loads nothing, these tests would
 * be skipped (saying so); any other failure to train or load fails them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/policy.h"
#include "env/config.h"
#include "env/place.h"
#include "tests/serve_client.h"

static const char *TINY_YAML =
    "cluster:\n"
    "  types:\n"
    "    - {name: gpu, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, net_bw: 8Gbit/s, mem: 10GB, "
    "price: 3.6}\n"
    "    - {name: cpu, kind: cpu, flops: 0.5TFLOPS, io_bw: 5GB/s, net_bw: 8Gbit/s, mem: 100GB, "
    "price: 1.0}\n"
    "  zones: [{name: a}, {name: b}]\n"
    "  nodes:\n"
    "    - {name: n0, type: gpu, units: 4, zone: a, bw: 1GB/s}\n"
    "    - {name: n1, type: gpu, units: 4, zone: b, bw: 1GB/s}\n"
    "    - {name: c0, type: cpu, units: 4, zone: a, bw: 1GB/s}\n"
    "job:\n"
    "  name: tiny\n"
    "  batch: 10\n"
    "  samples: 3.6e6\n"
    "  min_throughput: 100\n"
    "  alpha: 0\n"
    "  layers:\n"
    "    - {name: a, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"
    "    - {name: b, flops: 1GFLOP, io: 0, act: 0, params: 0, mem: 1MB}\n";

/* The same run as a request body (cluster and job), with options. */
static char *tiny_body(const char *options) {
    char *b = NULL;
    if (asprintf(&b,
                 "{\"cluster\": {\"types\": ["
                 "{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": \"1TFLOPS\", \"io_bw\": "
                 "\"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", \"price\": 3.6},"
                 "{\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": \"0.5TFLOPS\", \"io_bw\": "
                 "\"5GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"100GB\", \"price\": 1.0}],"
                 " \"zones\": [{\"name\": \"a\"}, {\"name\": \"b\"}], \"nodes\": ["
                 "{\"name\": \"n0\", \"type\": \"gpu\", \"units\": 4, \"zone\": \"a\", \"bw\": "
                 "\"1GB/s\"}, {\"name\": \"n1\", \"type\": \"gpu\", \"units\": 4, \"zone\": "
                 "\"b\", \"bw\": \"1GB/s\"}, {\"name\": \"c0\", \"type\": \"cpu\", \"units\": 4, "
                 "\"zone\": \"a\", \"bw\": \"1GB/s\"}]},"
                 " \"job\": {\"name\": \"tiny\", \"batch\": 10, \"samples\": 3.6e6, "
                 "\"min_throughput\": 100, \"alpha\": 0, \"layers\": ["
                 "{\"name\": \"a\", \"flops\": \"1GFLOP\", \"io\": 0, \"act\": 0, \"params\": "
                 "\"1MB\", \"mem\": \"1MB\"}, {\"name\": \"b\", \"flops\": \"1GFLOP\", \"io\": 0, "
                 "\"act\": 0, \"params\": 0, \"mem\": \"1MB\"}]}%s%s}",
                 options ? ", \"options\": " : "", options ? options : "") < 0)
        return NULL;
    return b;
}

/* tiny_body(NULL) as a jansson object (caller owns it). */
static json_t *tiny_doc(void) {
    char *b = tiny_body(NULL);
    json_t *doc = b ? json_loads(b, 0, NULL) : NULL;
    free(b);
    return doc;
}

typedef struct {
    char dir[1024];
    char a[1100], b[1100]; /* two trained checkpoints */
    char live[1100];       /* the file the daemon serves */
    int ready;             /* 0: skip (no policy can load) */
    char why[512];
} fixture;

/* Copies from to to through a temporary file renamed into place (the
 * daemon never reads half a file); returns the shell's exit status. */
static int copy_file(const char *from, const char *to) {
    return sh_run("cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", from, to, to, to);
}

static int setup(void **state) {
    static fixture fx;
    memset(&fx, 0, sizeof fx);
    *state = &fx;
    const char *bin = getenv("STRATA_BIN");
    snprintf(fx.dir, sizeof fx.dir, "%s/serve-policy-%d", sv_tmp(), (int)getpid());
    char yaml[1100], out[1100];
    if (sh_run("mkdir -p '%s'", fx.dir) != 0) return -1;
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", fx.dir);
    if (sv_write_file(yaml, TINY_YAML) != 0) return -1;
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/run%d", fx.dir, k);
        if (sv_train_search(yaml, 3 + 2 * k, 1 + k, out) != 0) return -1;
    }
    snprintf(fx.a, sizeof fx.a, "%s/run0/last.h5", fx.dir);
    snprintf(fx.b, sizeof fx.b, "%s/run1/last.h5", fx.dir);
    snprintf(fx.live, sizeof fx.live, "%s/live.h5", fx.dir);
    if (copy_file(fx.a, fx.live) != 0) return -1;
    /* Can the daemon load it at all? */
    if (sh_run("'%s' serve --listen 127.0.0.1:0 --policy '%s' </dev/null "
               ">/dev/null 2>'%s/probe.err' & pid=$!; sleep 0.5; "
               "if kill -0 $pid 2>/dev/null; then kill -TERM $pid; wait $pid; exit 0; fi; exit 1",
               bin, fx.live, fx.dir) != 0) {
        char err[1200];
        snprintf(err, sizeof err, "%s/probe.err", fx.dir);
        FILE *f = fopen(err, "r");
        size_t n = f ? fread(fx.why, 1, sizeof fx.why - 1, f) : 0;
        fx.why[n] = '\0';
        if (f) fclose(f);
        /* Only the placeholder agent (which loads nothing) is a reason to
         * skip; any other refusal is a failure. */
        if (strstr(fx.why, "cannot be loaded yet")) return 0;
        fprintf(stderr, "strata serve refused the checkpoint: %s\n", fx.why);
        return -1;
    }
    fx.ready = 1;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    sh_run("rm -rf '%s'", fx->dir);
    return 0;
}

#define NEED_POLICY(fx)                                                                    \
    do {                                                                                   \
        if (!(fx)->ready) {                                                                \
            fprintf(stderr, "skipped: no policy loads: %s\n", (fx)->why);                  \
            skip();                                                                        \
        }                                                                                  \
    } while (0)

static json_t *get_json(int port, const char *path, int want) {
    sv_resp r;
    int st = sv_http(port, "GET", path, NULL, NULL, 0, &r);
    if (st != want) fail_msg("GET %s: %d %s", path, st, r.body ? r.body : "");
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    return o;
}

static int close_to(double got, double want) {
    double d = got - want, m = want < 0 ? -want : want;
    if (d < 0) d = -d;
    return d <= 1e-12 * (m > 1e-300 ? m : 1e-300);
}

/* Starts a daemon serving checkpoint a through the live file. */
static void start_live(fixture *fx, sv_proc *p, const char *name) {
    assert_int_equal(copy_file(fx->a, fx->live), 0);
    const char *args[] = {"--policy", fx->live, NULL};
    assert_int_equal(sv_start(p, name, args), 0);
}

static void test_place_with_policy(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    const char *args[] = {"--policy", fx->live, NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "policy", args), 0);
    json_t *ready = get_json(p.port, "/readyz", 200);
    json_t *pol = json_object_get(ready, "policy");
    assert_string_equal(json_string_value(json_object_get(pol, "file")), fx->live);
    const char *hash = json_string_value(json_object_get(pol, "hash"));
    assert_true(hash && strlen(hash) >= 8);
    json_int_t step = json_integer_value(json_object_get(pol, "step"));
    assert_int_equal(json_integer_value(json_object_get(pol, "generation")), 1);

    char *body = tiny_body(NULL);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    free(body);
    assert_string_equal(json_string_value(json_object_get(o, "plan_from")), "policy");
    assert_true(json_is_false(json_object_get(o, "cached")));
    /* The same body again: answered from its memo, the same answer but for
     * "cached" and "elapsed_us". */
    body = tiny_body(NULL);
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
    json_t *again = sv_body_json(&r);
    sv_resp_free(&r);
    free(body);
    assert_true(json_is_true(json_object_get(again, "cached")));
    assert_true(json_integer_value(json_object_get(again, "elapsed_us")) >= 0);
    json_object_del(again, "cached");
    json_object_del(again, "elapsed_us");
    json_t *first = json_deep_copy(o);
    json_object_del(first, "cached");
    json_object_del(first, "elapsed_us");
    assert_true(json_equal(first, again));
    json_decref(first);
    json_decref(again);
    json_t *used = json_object_get(o, "policy");
    assert_string_equal(json_string_value(json_object_get(used, "hash")), hash);
    assert_int_equal(json_integer_value(json_object_get(used, "step")), step);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    /* The same assignment and placement through /v1/cost: the same figures. */
    json_t *assign = json_object_get(json_object_get(o, "plan"), "assignment");
    json_t *stages = json_object_get(json_object_get(o, "plan"), "stages");
    json_t *tasks = json_object_get(o, "placement");
    assert_true(json_array_size(tasks) >= 2);
    json_t *pl = json_array();
    size_t s, t;
    json_t *st, *task;
    json_array_foreach(stages, s, st) {
        json_t *w = json_array(), *ps = json_array();
        json_array_foreach(tasks, t, task) {
            if ((size_t)json_integer_value(json_object_get(task, "stage")) != s) continue;
            int is_ps = !strcmp(json_string_value(json_object_get(task, "role")), "ps");
            json_array_append(is_ps ? ps : w, json_object_get(task, "node"));
        }
        json_array_append_new(pl, json_pack("{s:o, s:o}", "workers", w, "ps", ps));
    }
    char *cbody = tiny_body(NULL);
    json_t *creq = json_loads(cbody, 0, NULL);
    free(cbody);
    json_object_set(creq, "assignment", assign);
    json_object_set_new(creq, "placement", pl);
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/cost", creq, NULL, &r), 200);
    json_t *c = sv_body_json(&r);
    sv_resp_free(&r);
    json_t *cplan = json_object_get(c, "plan");
    assert_true(close_to(json_number_value(json_object_get(cplan, "cost")),
                         json_number_value(json_object_get(o, "cost"))));
    assert_true(close_to(json_number_value(json_object_get(cplan, "throughput")),
                         json_number_value(json_object_get(o, "throughput"))));
    json_decref(c);

    /* Sampled placements: the node head places greedy's plan 8 more
     * times; the same plan, never dearer than the greedy placement, and 8
     * more decodes counted. A count past 64 names the field. */
    body = tiny_body("{\"node_samples\": 8, \"seed\": 7}");
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
    free(body);
    json_t *ns = sv_body_json(&r);
    sv_resp_free(&r);
    assert_true(json_is_true(json_object_get(ns, "feasible")));
    assert_true(json_equal(json_object_get(json_object_get(ns, "plan"), "assignment"), assign));
    assert_true(json_number_value(json_object_get(ns, "cost")) <=
                json_number_value(json_object_get(o, "cost")) * (1 + 1e-12));
    assert_int_equal(json_integer_value(json_object_get(ns, "samples_used")),
                     json_integer_value(json_object_get(o, "samples_used")) + 8);
    /* task for task as `strata place --method policy --node-samples 8` */
    char out[1200], dn[512] = "", cn[512] = "";
    snprintf(out, sizeof out, "%s/place-node-samples.json", fx->dir);
    assert_int_equal(sh_run("'%s' place '%s/tiny.yaml' --method policy --policy '%s' "
                            "--node-samples 8 --seed 7 --json >'%s'", getenv("STRATA_BIN"),
                            fx->dir, fx->live, out), 0);
    json_t *cli = json_load_file(out, 0, NULL);
    assert_non_null(cli);
    size_t ti;
    json_t *tt;
    json_array_foreach(json_object_get(ns, "placement"), ti, tt) {
        size_t k = strlen(dn);
        snprintf(dn + k, sizeof dn - k, "%s,", json_string_value(json_object_get(tt, "node")));
    }
    json_array_foreach(json_object_get(cli, "tasks"), ti, tt) {
        size_t k = strlen(cn);
        snprintf(cn + k, sizeof cn - k, "%s,", json_string_value(json_object_get(tt, "node")));
    }
    assert_true(dn[0] != '\0');
    assert_string_equal(dn, cn);
    json_decref(cli);
    json_decref(ns);
    /* options refused, each with its message */
    static const char *const bad[][2] = {
        {"{\"node_samples\": 65}", "options.node_samples: expected a whole number from 0 to 64, got 65"},
        {"{\"node_samples\": 4, \"placement\": \"zone\"}",
         "options.node_samples: only when the policy's node head places"},
        {"{\"polish\": 1, \"plan_method\": \"exact\"}", "options.polish: finishes the policy's plan only"},
        {"{\"polish\": 2}", "options.polish: expected a whole number from 0 to 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        body = tiny_body(bad[i][0]);
        assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 400);
        free(body);
        if (!strstr(r.body, bad[i][1])) fail_msg("options %s: got %s", bad[i][0], r.body);
        sv_resp_free(&r);
    }
    for (int k = 0; k < 2; k++) { /* polish, placed by the node head or not */
        body = tiny_body(k ? "{\"polish\": 1, \"decode\": \"sample\", \"samples\": 4}"
                           : "{\"polish\": 1, \"placement\": \"none\", \"decode\": \"sample\", "
                             "\"samples\": 4}");
        assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
        free(body);
        sv_resp_free(&r);
    }
    json_decref(o);

    /* Sampling: at most the plans asked for. With a time budget the answer
     * depends on the clock, so it is decoded every time, never memoised. */
    body = tiny_body("{\"decode\": \"sample\", \"samples\": 4, \"seed\": 7, \"budget_ms\": 500}");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
        o = sv_body_json(&r);
        json_int_t n = json_integer_value(json_object_get(o, "samples_used"));
        assert_true(n >= 1 && n <= 4);
        assert_true(json_is_false(json_object_get(o, "cached")));
        json_decref(o);
        sv_resp_free(&r);
    }
    free(body);

    /* The metrics carry the policy. */
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    assert_true(sv_series(r.body, "strata_policy_loaded") == 1);
    assert_true(sv_series(r.body, "strata_policy_step") == (double)step);
    assert_true(sv_series(r.body, "strata_policy_load_duration_seconds") > 0);
    assert_true(sv_series(r.body, "strata_policy_loads_total{result=\"ok\"}") == 1);
    assert_true(sv_series(r.body, "strata_decode_memo_total{result=\"hit\"}") == 1);
    /* misses: the first body, the node_samples one and the two polish ones
     * (polish is part of the memo's key) */
    assert_true(sv_series(r.body, "strata_decode_memo_total{result=\"miss\"}") == 4);
    sv_resp_free(&r);
    json_decref(ready);
    assert_int_equal(sv_stop(&p), 0);
}

/* Polls /readyz until the policy's generation is gen (10 s at most). */
static int wait_generation(int port, json_int_t gen) {
    double until = clock_now_s() + 10.0;
    while (clock_now_s() < until) {
        sv_resp r;
        if (sv_http(port, "GET", "/readyz", NULL, NULL, 0, &r) == 200) {
            json_t *o = sv_body_json(&r);
            json_int_t g = json_integer_value(
                json_object_get(json_object_get(o, "policy"), "generation"));
            json_decref(o);
            if (g == gen) {
                sv_resp_free(&r);
                return 1;
            }
        }
        sv_resp_free(&r);
        usleep(20000);
    }
    return 0;
}

static void test_reload_under_load(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    sv_proc p;
    start_live(fx, &p, "reload");
    json_t *ready = get_json(p.port, "/readyz", 200);
    char hash_a[128];
    snprintf(hash_a, sizeof hash_a, "%s",
             json_string_value(json_object_get(json_object_get(ready, "policy"), "hash")));
    json_decref(ready);

    char *body = tiny_body(NULL);
    enum { THREADS = 4 };
    atomic_int stop = 0;
    sv_load la[THREADS];
    pthread_t th[THREADS];
    /* Each posts at least 20 times and until stop, counting answers by
     * policy: marked, by the first (its hash in the answer). */
    for (int t = 0; t < THREADS; t++) {
        la[t] = (sv_load){.port = p.port, .body = body, .want = "{\"plan_from\": \"policy\"}",
                          .mark = hash_a, .n = 20, .stop = &stop};
        pthread_create(&th[t], NULL, sv_load_thread, &la[t]);
    }
    usleep(100000);
    /* A good file: the second checkpoint (renamed into place, so that the
     * daemon never reads half a file). Wait until it serves. */
    assert_int_equal(copy_file(fx->b, fx->live), 0);
    kill(p.pid, SIGHUP);
    assert_true(wait_generation(p.port, 2));
    /* A bad file: the policy loaded before keeps serving. */
    char junk[1200];
    snprintf(junk, sizeof junk, "%s/junk.h5", fx->dir);
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("not an HDF5 file\n", f);
    fclose(f);
    assert_int_equal(copy_file(junk, fx->live), 0);
    kill(p.pid, SIGHUP);
    assert_true(sv_wait_series(p.port, "strata_policy_loads_total{result=\"error\"}", 1));
    usleep(100000);
    atomic_store(&stop, 1);
    int ok = 0, with_a = 0, with_other = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        if (la[t].failed)
            fail_msg("thread %d: %d requests failed, first: %s", t, la[t].failed,
                     la[t].first_error);
        ok += la[t].ok;
        with_a += la[t].marked;
        with_other += la[t].ok - la[t].marked;
    }
    /* Requests ran on both policies: the reload happened under load, and
     * none was lost. */
    assert_true(with_a > 0);
    assert_true(with_other > 0);
    assert_int_equal(ok, with_a + with_other);
    free(body);
    ready = get_json(p.port, "/readyz", 200);
    json_t *pol = json_object_get(ready, "policy");
    assert_int_equal(json_integer_value(json_object_get(pol, "generation")), 2);
    assert_string_not_equal(json_string_value(json_object_get(pol, "hash")), hash_a);
    json_decref(ready);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    assert_true(sv_series(r.body, "strata_policy_loads_total{result=\"ok\"}") == 2);
    assert_true(sv_series(r.body, "strata_policy_loads_total{result=\"error\"}") == 1);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "SIGHUP: reloaded", NULL), 1);
    assert_int_equal(sv_log_count(&p, "SIGHUP: reload failed, the old policy keeps serving",
                                  fx->live, NULL), 1);
    assert_int_equal(sv_log_count(&p, "POST /v1/place 200", NULL), ok);
}

/* Posts doc to /v1/place (200 expected) and returns the answer. */
static json_t *place_doc(int port, json_t *doc) {
    sv_resp r;
    int st = sv_json_req(port, "POST", "/v1/place", json_incref(doc), NULL, &r);
    if (st != 200) fail_msg("POST /v1/place: %d %s", st, r.body ? r.body : "");
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    return o;
}

/* The answer without what differs per request: the job's name, cached
 * and elapsed_us. A new reference. */
static json_t *answer_core(const json_t *o) {
    json_t *c = json_deep_copy(o);
    json_object_del(c, "job");
    json_object_del(c, "cached");
    json_object_del(c, "elapsed_us");
    return c;
}

/* The plan memo is keyed by the problem, not the body's bytes: the same job
 * under another name (its figures spelled in other units, its keys in
 * another order) is answered from the memo under its own name; a job that
 * differs in one layer's flops is decoded and gets its own plan; a reload
 * empties the memo and the new policy decodes again. */
static void test_plan_memo_by_problem(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    sv_proc p;
    start_live(fx, &p, "memo");
    json_t *doc = tiny_doc();
    assert_non_null(doc);
    json_t *job = json_object_get(doc, "job");
    json_t *layers = json_object_get(job, "layers");

    json_t *first = place_doc(p.port, doc);
    assert_true(json_is_false(json_object_get(first, "cached")));
    assert_string_equal(json_string_value(json_object_get(first, "job")), "tiny");

    /* Another name, layer a's flops as 1000 MFLOP, samples moved last:
     * the same problem. */
    json_object_set_new(job, "name", json_string("tiny-renamed"));
    json_object_set_new(json_array_get(layers, 0), "flops", json_string("1000MFLOP"));
    json_t *samples = json_incref(json_object_get(job, "samples"));
    json_object_del(job, "samples");
    json_object_set_new(job, "samples", samples);
    json_t *same = place_doc(p.port, doc);
    assert_true(json_is_true(json_object_get(same, "cached")));
    assert_string_equal(json_string_value(json_object_get(same, "job")), "tiny-renamed");
    json_t *c1 = answer_core(first), *c2 = answer_core(same);
    assert_true(json_equal(c1, c2));
    json_decref(c2);

    /* Layer b's flops doubled (and another name): decoded, its own plan
     * (stage compute times follow the flops). */
    json_object_set_new(job, "name", json_string("tiny-heavier"));
    json_object_set_new(json_array_get(layers, 1), "flops", json_string("2GFLOP"));
    json_t *other = place_doc(p.port, doc);
    assert_true(json_is_false(json_object_get(other, "cached")));
    assert_string_equal(json_string_value(json_object_get(other, "job")), "tiny-heavier");
    c2 = answer_core(other);
    assert_false(json_equal(c1, c2));
    assert_false(json_equal(json_object_get(c1, "plan"), json_object_get(c2, "plan")));
    json_decref(c2);
    /* ... and it is memoised in turn, apart from the first */
    json_object_set_new(job, "name", json_string("tiny-heavier-2"));
    json_t *again = place_doc(p.port, doc);
    assert_true(json_is_true(json_object_get(again, "cached")));
    c2 = answer_core(again);
    json_t *c3 = answer_core(other);
    assert_true(json_equal(c2, c3));
    json_decref(c2);
    json_decref(c3);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/metrics", NULL, NULL, 0, &r), 200);
    assert_true(sv_series(r.body, "strata_decode_memo_total{result=\"hit\"}") == 2);
    assert_true(sv_series(r.body, "strata_decode_memo_total{result=\"miss\"}") == 2);
    assert_true(sv_series(r.body, "strata_plan_memo_entries") == 2);
    sv_resp_free(&r);

    /* A reload: the memo is emptied, the new policy decodes (generation 2
     * in the answer), then memoises again. */
    assert_int_equal(copy_file(fx->b, fx->live), 0);
    kill(p.pid, SIGHUP);
    assert_true(wait_generation(p.port, 2));
    /* the memo is emptied just after the new policy starts serving (the
     * old entries cannot answer for it meanwhile: their generation differs) */
    assert_true(sv_wait_series(p.port, "strata_plan_memo_entries", 0));
    json_object_set_new(job, "name", json_string("tiny-after-reload"));
    json_t *fresh = place_doc(p.port, doc);
    assert_true(json_is_false(json_object_get(fresh, "cached")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(fresh, "policy"),
                                                        "generation")), 2);
    json_object_set_new(job, "name", json_string("tiny-after-reload-2"));
    json_t *hit = place_doc(p.port, doc);
    assert_true(json_is_true(json_object_get(hit, "cached")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(hit, "policy"),
                                                        "generation")), 2);
    assert_string_equal(json_string_value(json_object_get(hit, "job")), "tiny-after-reload-2");
    json_decref(c1);
    json_decref(first);
    json_decref(same);
    json_decref(other);
    json_decref(again);
    json_decref(fresh);
    json_decref(hit);
    json_decref(doc);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_extender_with_policy(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    sv_proc p;
    start_live(fx, &p, "ext-policy");
    json_t *doc = tiny_doc();
    sv_resp r;
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/tj", doc, NULL, &r), 201);
    sv_resp_free(&r);
    const char *args_json =
        "{\"Pod\": {\"metadata\": {\"name\": \"tj-worker-0\", \"labels\": {"
        "\"training.kubeflow.org/job-name\": \"tj\", \"training.kubeflow.org/replica-type\": "
        "\"worker\", \"training.kubeflow.org/replica-index\": \"0\"}}}, "
        "\"NodeNames\": [\"n0\", \"n1\", \"c0\"]}";
    assert_int_equal(sv_http(p.port, "POST", "/k8s/prioritize", NULL, args_json,
                             strlen(args_json), &r), 200);
    json_t *list = sv_body_json(&r);
    sv_resp_free(&r);
    int tens = 0;
    size_t i;
    json_t *h;
    json_array_foreach(list, i, h) tens += json_integer_value(json_object_get(h, "Score")) == 10;
    assert_int_equal(tens, 1);
    json_decref(list);
    json_t *job = get_json(p.port, "/v1/jobs/tj", 200);
    json_t *ext = json_object_get(job, "extender");
    assert_string_equal(json_string_value(json_object_get(ext, "plan_from")), "policy");
    assert_true(json_is_true(json_object_get(ext, "planned")));
    json_decref(job);
    assert_int_equal(sv_stop(&p), 0);
}

/* PUTs the tiny job under name with replicas (NULL: none); returns the
 * extender's plan (caller owns it). */
static json_t *register_tiny(int port, const char *name, json_t *replicas) {
    json_t *doc = tiny_doc();
    if (replicas) json_object_set_new(doc, "replicas", replicas);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", name);
    sv_resp r;
    int st = sv_json_req(port, "PUT", path, doc, NULL, &r);
    if (st != 201 && st != 200) fail_msg("PUT %s: %d %s", path, st, r.body);
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    json_t *ext = json_incref(json_object_get(o, "extender"));
    json_decref(o);
    assert_non_null(ext);
    return ext;
}

/* "node,node,..." of a plan's tasks of one role. */
static void role_nodes(const json_t *ext, const char *role, char *buf, size_t len) {
    buf[0] = '\0';
    size_t i, used = 0;
    json_t *t;
    json_array_foreach(json_object_get(ext, role), i, t)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                                 json_string_value(json_object_get(t, "node")));
}

/* The workers' and ps tasks' nodes ("n,n,...") of `strata place --method
 * policy --workers W --ps P` on the tiny job (W and P 0: the plan's own
 * counts, neither flag given). */
static void cli_place_nodes(const fixture *fx, int W, int P, char *cw, char *cp) {
    char out[1200], counts[64] = "";
    snprintf(out, sizeof out, "%s/place-policy-%d-%d.json", fx->dir, W, P);
    if (W || P) snprintf(counts, sizeof counts, "--workers %d --ps %d ", W, P);
    assert_int_equal(sh_run("'%s' place '%s/tiny.yaml' --method policy --policy '%s' %s--json "
                            ">'%s'", getenv("STRATA_BIN"), fx->dir, fx->live, counts, out), 0);
    json_t *cli = json_load_file(out, 0, NULL);
    assert_non_null(cli);
    cw[0] = cp[0] = '\0';
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(cli, "tasks"), i, t) {
        char *b = !strcmp(json_string_value(json_object_get(t, "role")), "ps") ? cp : cw;
        size_t k = strlen(b);
        snprintf(b + k, 256 - k, "%s%s", k ? "," : "", json_string_value(json_object_get(t, "node")));
    }
    json_decref(cli);
}

/* The tiny job decoded in this process by the policy in ckpt with fixed
 * counts (greedy, the node head): td_decode fills d and returns
 * agent_policy_decode's status; td_free releases what it took. */
typedef struct {
    cfg_run *run;
    agent_policy *pol;
    model_plan *plan;
    int assign[2], *tn;
    agent_decode_result res;
} tiny_decode;

static int td_decode(const fixture *fx, const char *ckpt, int W, int P, tiny_decode *d) {
    char err[1024], yaml[1100];
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", fx->dir);
    d->run = cfg_load(yaml, err, sizeof err);
    assert_non_null(d->run);
    d->pol = agent_policy_load(ckpt, err, sizeof err);
    assert_non_null(d->pol);
    const model_job *job = &d->run->jobs[0];
    const model_cluster *cl = &d->run->cluster;
    agent_decode_opts o = {.decode = AGENT_DECODE_GREEDY, .samples = 1, .seed = 1,
                           .placement = PLACER_PLACE_POLICY, .workers = W, .ps = P};
    d->tn = calloc((size_t)agent_policy_task_cap(job, cl, &o) + 1, sizeof *d->tn);
    d->plan = model_plan_create(job->n_layers);
    d->res = (agent_decode_result){.assign = d->assign, .task_node = d->tn, .plan = d->plan};
    return agent_policy_decode(d->pol, job, cl, &o, &d->res, err, sizeof err);
}

static void td_free(tiny_decode *d) {
    free(d->tn);
    model_plan_free(d->plan);
    agent_policy_free(d->pol);
    cfg_free(d->run);
}

/* The workers' and ps tasks' nodes of that decode, as role_nodes lists
 * them for the CLI. */
static void inproc_place_nodes(const fixture *fx, int W, int P, char *iw, char *ip) {
    tiny_decode d;
    assert_int_equal(td_decode(fx, fx->live, W, P, &d), 0);
    assert_int_equal(place_task_count(d.plan), W + P);
    iw[0] = ip[0] = '\0';
    for (int i = 0; i < W + P; i++) {
        int stage = 0, is_ps = 0;
        place_task_stage(d.plan, i, &stage, &is_ps);
        char *b = is_ps ? ip : iw;
        size_t k = strlen(b);
        snprintf(b + k, 256 - k, "%s%s", k ? "," : "", d.run->cluster.nodes[d.tn[i]].name);
    }
    td_free(&d);
}

/* More fixed workers than the cluster's 12 units: the decode refuses at
 * once, naming both counts, without decoding a plan (and so without the
 * fallbacks that run the exact solver up to its budget). */
static void test_decode_too_many_workers(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    tiny_decode d;
    assert_int_equal(td_decode(fx, fx->a, 13, 1, &d), MODEL_ERR_CAPACITY);
    assert_int_equal(d.res.samples_used, 0);
    assert_int_equal(d.plan->n_stages, 0);
    assert_string_equal(d.plan->why, "capacity: 13 workers asked, the cluster has 12 units in all");
    td_free(&d);
}

static void test_extender_node_head_counts(void **state) {
    fixture *fx = *state;
    NEED_POLICY(fx);
    assert_int_equal(copy_file(fx->a, fx->live), 0);
    /* the policy's own decode and placement, by the CLI */
    char cw[256], cp[256];
    cli_place_nodes(fx, 0, 0, cw, cp);

    const char *args[] = {"--policy", fx->live, NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "ext-node-head", args), 0);
    json_t *own = register_tiny(p.port, "nh", NULL);
    assert_string_equal(json_string_value(json_object_get(own, "placement_by")), "policy");
    json_int_t W = json_integer_value(json_object_get(json_object_get(own, "replicas"), "worker"));
    json_int_t P = json_integer_value(json_object_get(json_object_get(own, "replicas"), "ps"));
    json_decref(own);

    /* the same job again, with counts the policy's plan has: its node head */
    json_t *ext = register_tiny(p.port, "nh", json_pack("{s:I, s:I}", "worker", W, "ps", P));
    assert_string_equal(json_string_value(json_object_get(ext, "plan_from")), "policy");
    assert_string_equal(json_string_value(json_object_get(ext, "placement_by")), "policy");
    assert_null(json_object_get(ext, "placement_note"));
    char gw[256], gp[256];
    role_nodes(ext, "workers", gw, sizeof gw);
    role_nodes(ext, "ps", gp, sizeof gp);
    assert_string_equal(gw, cw);
    assert_string_equal(gp, cp);
    json_decref(ext);

    /* counts other than the plan's (a TFJob with more workers and ps):
     * the node head places them, as the CLI and the decode in-process do */
    json_int_t W2 = W + 4, P2 = P + 1;
    ext = register_tiny(p.port, "nh", json_pack("{s:{s:I}, s:{s:I}}", "Worker", "replicas", W2,
                                                "PS", "replicas", P2));
    assert_string_equal(json_string_value(json_object_get(ext, "plan_from")), "policy");
    assert_string_equal(json_string_value(json_object_get(ext, "placement_by")), "policy");
    assert_null(json_object_get(ext, "placement_note"));
    assert_int_equal(json_array_size(json_object_get(ext, "workers")), (size_t)W2);
    assert_int_equal(json_array_size(json_object_get(ext, "ps")), (size_t)P2);
    role_nodes(ext, "workers", gw, sizeof gw);
    role_nodes(ext, "ps", gp, sizeof gp);
    char cw2[256], cp2[256], iw[256], ip[256];
    cli_place_nodes(fx, (int)W2, (int)P2, cw2, cp2);
    assert_string_equal(gw, cw2);
    assert_string_equal(gp, cp2);
    inproc_place_nodes(fx, (int)W2, (int)P2, iw, ip);
    assert_string_equal(gw, iw);
    assert_string_equal(gp, ip);
    printf("counts %d workers, %d ps (the policy's own: %d, %d): workers on %s, ps on %s\n",
           (int)W2, (int)P2, (int)W, (int)P, gw, gp);
    /* the TFJob's pods: each worker kept only on nodes of its stage's type
     * and each task scored best on its planned node */
    for (int role = 0; role < 2; role++) {
        const char *r = role ? "ps" : "worker";
        const json_t *tasks = json_object_get(ext, role ? "ps" : "workers");
        for (size_t ti = 0; ti < json_array_size(tasks); ti++) {
            const json_t *task = json_array_get(tasks, ti);
            const char *type = json_string_value(json_object_get(task, "type"));
            const char *planned = json_string_value(json_object_get(task, "node"));
            char *pod = NULL;
            assert_true(asprintf(&pod, "{\"Pod\": {\"metadata\": {\"name\": \"nh-%s-%zu\", "
                                 "\"uid\": \"u-%s-%zu\", \"labels\": {"
                                 "\"training.kubeflow.org/job-name\": \"nh\", "
                                 "\"training.kubeflow.org/replica-type\": \"%s\", "
                                 "\"training.kubeflow.org/replica-index\": \"%zu\"}}}, "
                                 "\"NodeNames\": [\"n0\", \"n1\", \"c0\"]}", r, ti, r, ti, r,
                                 ti) > 0);
            sv_resp rr;
            assert_int_equal(sv_http(p.port, "POST", "/k8s/filter", NULL, pod, strlen(pod),
                                     &rr), 200);
            json_t *f = sv_body_json(&rr);
            sv_resp_free(&rr);
            size_t k;
            json_t *nm;
            assert_true(json_array_size(json_object_get(f, "NodeNames")) > 0);
            json_array_foreach(json_object_get(f, "NodeNames"), k, nm) {
                const char *kept = json_string_value(nm);
                const char *kt = kept[0] == 'c' ? "cpu" : "gpu"; /* n0, n1 gpu; c0 cpu */
                if (!role && strcmp(kt, type))
                    fail_msg("worker %zu (stage type %s) kept on %s (%s)", ti, type, kept, kt);
            }
            json_decref(f);
            assert_int_equal(sv_http(p.port, "POST", "/k8s/prioritize", NULL, pod,
                                     strlen(pod), &rr), 200);
            json_t *list = sv_body_json(&rr);
            sv_resp_free(&rr);
            const char *best = NULL;
            json_int_t top = -1;
            json_t *h;
            json_array_foreach(list, k, h) {
                json_int_t sc = json_integer_value(json_object_get(h, "Score"));
                if (sc > top) {
                    top = sc;
                    best = json_string_value(json_object_get(h, "Host"));
                }
            }
            assert_int_equal(top, 10);
            assert_string_equal(best, planned);
            if (!role) { /* the node it lands on is of its stage's type */
                const char *bt = best[0] == 'c' ? "cpu" : "gpu";
                assert_string_equal(bt, type);
            }
            json_decref(list);
            free(pod);
        }
    }
    json_decref(ext);

    /* more workers than any plan has units for: refused, with the reason */
    json_t *doc = tiny_doc();
    json_object_set_new(doc, "replicas", json_pack("{s:i}", "worker", 13));
    sv_resp r;
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/nh", doc, NULL, &r), 422);
    assert_non_null(strstr(r.body, "replicas: capacity: with 13 workers"));
    sv_resp_free(&r); /* sv_json_req took doc */
    assert_int_equal(sv_stop(&p), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_with_policy),
        cmocka_unit_test(test_reload_under_load),
        cmocka_unit_test(test_plan_memo_by_problem),
        cmocka_unit_test(test_extender_with_policy),
        cmocka_unit_test(test_extender_node_head_counts),
        cmocka_unit_test(test_decode_too_many_workers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
