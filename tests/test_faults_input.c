/* test_faults_input.c -- NaN, infinity, negative and absurd figures.
 *
 * Users write configs by hand and other programs send requests: a figure
 * that is not a number, infinite, negative where it cannot be, or too
 * large to hold must be refused with a message naming the key, never read
 * as a value, looped on or overflowed. Three layers:
 *
 *   - the config loader (cfg_load_buffer), for every numeric kind of key
 *     (count, number, bytes, rate, FLOP, FLOP/s, seconds, fraction,
 *     dollars), each with NaN, infinity, a negative value and a value past
 *     a double (1e400), with the exact message expected;
 *   - the daemon over real sockets: /v1/cost, /v1/place, /v1/solve,
 *     PUT /v1/jobs and the extender with such figures in JSON (as JSON
 *     numbers, as strings, and the non-JSON NaN literal), and options
 *     asking for absurd budgets, samples and evaluations; every answer is
 *     a 400 with the expected message, within 5 s (no hang), and the
 *     daemon keeps serving;
 *   - the checkpoint loader, on the two damaged files the fuzzer found
 *     (tests/data/faults/ckpt_*.h5: old-format local heaps whose size
 *     field asks for 123 TB): refused with an error before HDF5 reads them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/policy.h"
#include "env/config.h"
#include "nets/ckpt.h"
#include "tests/serve_client.h"


/* Every numeric kind of key appears once; line numbers matter for the
 * messages (the replaced value keeps its column). */
static const char *BASE =
    "cluster:\n"                                                         /* 1 */
    "  inter_latency: 1ms\n"                                             /* 2 SECONDS */
    "  types:\n"                                                         /* 3 */
    "    - name: gpu\n"                                                  /* 4 */
    "      kind: gpu\n"                                                  /* 5 */
    "      flops: 1TFLOPS\n"                                             /* 6 FLOPS */
    "      io_bw: 1GB/s\n"                                               /* 7 RATE */
    "      net_bw: 8Gbit/s\n"                                            /* 8 */
    "      mem: 10GB\n"                                                  /* 9 BYTES */
    "      price: 3.6\n"                                                 /* 10 DOLLARS */
    "      count: 4\n"                                                   /* 11 COUNT */
    "job:\n"                                                             /* 12 */
    "  name: tiny\n"                                                     /* 13 */
    "  batch: 10\n"                                                      /* 14 NUMBER */
    "  samples: 3.6e6\n"                                                 /* 15 */
    "  min_throughput: 100\n"                                            /* 16 */
    "  alpha: 0\n"                                                       /* 17 FRACTION */
    "  layers:\n"                                                        /* 18 */
    "    - name: a\n"                                                    /* 19 */
    "      flops: 1GFLOP\n"                                              /* 20 FLOP */
    "      io: 0\n      act: 0\n      params: 1MB\n      mem: 1MB\n";

/* Loads BASE with the first "key: old" replaced by "key: val"; returns the
 * loader's message ("" when it loaded). */
static const char *load_with(const char *key_old, const char *key_new) {
    static char err[2048];
    char text[4096];
    const char *at = strstr(BASE, key_old);
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - BASE), BASE, key_new,
             at + strlen(key_old));
    err[0] = '\0';
    cfg_run *run = cfg_load_buffer("f.yaml", text, strlen(text), err, sizeof err);
    cfg_free(run);
    return run ? "" : err;
}

static void test_config_figures(void **state) {
    (void)state;
    assert_string_equal(load_with("batch: 10", "batch: 10"), "");
    static const struct {
        const char *old, *new, *msg;
    } cases[] = {
        /* COUNT: cluster.types[0].count */
        {"count: 4", "count: .nan",
         "f.yaml:11:14: cluster.types[0].count: expected a whole number such as 8, got \".nan\""},
        {"count: 4", "count: inf",
         "f.yaml:11:14: cluster.types[0].count: expected a whole number such as 8, got \"inf\""},
        {"count: 4", "count: -4", "f.yaml:11:14: cluster.types[0].count: must be >= 0, got \"-4\""},
        {"count: 4", "count: 99999999999",
         "f.yaml:11:14: cluster.types[0].count: \"99999999999\" is out of range (at most "
         "2147483647)"},
        /* NUMBER: job.batch, job.samples, job.min_throughput */
        {"batch: 10", "batch: .nan",
         "f.yaml:14:10: job.batch: expected a number such as 0.5 or 1e6, got \".nan\""},
        {"batch: 10", "batch: -.inf",
         "f.yaml:14:10: job.batch: expected a number such as 0.5 or 1e6, got \"-.inf\""},
        {"batch: 10", "batch: -10", "f.yaml:14:10: job.batch: must be > 0, got \"-10\""},
        {"samples: 3.6e6", "samples: 1e400", "f.yaml:15:12: job.samples: \"1e400\" is out of range"},
        {"min_throughput: 100", "min_throughput: NaN",
         "f.yaml:16:19: job.min_throughput: expected a number such as 0.5 or 1e6, got \"NaN\""},
        /* BYTES: cluster.types[0].mem */
        {"mem: 10GB", "mem: nanGB",
         "f.yaml:9:12: cluster.types[0].mem: expected a size such as 16GiB or 512MB, got \"nanGB\""},
        {"mem: 10GB", "mem: -1GB", "f.yaml:9:12: cluster.types[0].mem: must be > 0, got \"-1GB\""},
        {"mem: 10GB", "mem: 1e308PiB",
         "f.yaml:9:12: cluster.types[0].mem: \"1e308PiB\" is out of range"},
        /* RATE: cluster.types[0].io_bw */
        {"io_bw: 1GB/s", "io_bw: infGB/s",
         "f.yaml:7:14: cluster.types[0].io_bw: expected a rate such as 25Gbit/s or 3.1GB/s, got "
         "\"infGB/s\""},
        {"io_bw: 1GB/s", "io_bw: -8Gbit/s",
         "f.yaml:7:14: cluster.types[0].io_bw: must be > 0, got \"-8Gbit/s\""},
        /* FLOPS: cluster.types[0].flops */
        {"flops: 1TFLOPS", "flops: -Inf",
         "f.yaml:6:14: cluster.types[0].flops: expected a speed such as 14TFLOPS or 1.5e13, got "
         "\"-Inf\""},
        {"flops: 1TFLOPS", "flops: 1e400TFLOPS",
         "f.yaml:6:14: cluster.types[0].flops: \"1e400TFLOPS\" is out of range"},
        /* FLOP: job.layers[0].flops */
        {"flops: 1GFLOP", "flops: -1GFLOP",
         "f.yaml:20:14: job.layers[0].flops: must be >= 0, got \"-1GFLOP\""},
        {"flops: 1GFLOP", "flops: NaNGFLOP",
         "f.yaml:20:14: job.layers[0].flops: expected an amount of work such as 4.1GFLOP or 1e9, "
         "got \"NaNGFLOP\""},
        /* SECONDS: cluster.inter_latency */
        {"inter_latency: 1ms", "inter_latency: -1ms",
         "f.yaml:2:18: cluster.inter_latency: must be >= 0, got \"-1ms\""},
        {"inter_latency: 1ms", "inter_latency: .inf",
         "f.yaml:2:18: cluster.inter_latency: expected a duration such as 50us, 0.5ms or 2s, "
         "got \".inf\""},
        /* FRACTION: job.alpha */
        {"alpha: 0", "alpha: .NaN",
         "f.yaml:17:10: job.alpha: expected a fraction such as 0.001 or 0.1%, got \".NaN\""},
        {"alpha: 0", "alpha: 150%", "f.yaml:17:10: job.alpha: must be >= 0 and < 1, got \"150%\""},
        {"alpha: 0", "alpha: -0.1", "f.yaml:17:10: job.alpha: must be >= 0 and < 1, got \"-0.1\""},
        /* DOLLARS: cluster.types[0].price */
        {"price: 3.6", "price: $nan",
         "f.yaml:10:14: cluster.types[0].price: expected a price such as 3.06 or $3.06, got "
         "\"$nan\""},
        {"price: 3.6", "price: -3.6",
         "f.yaml:10:14: cluster.types[0].price: must be >= 0, got \"-3.6\""},
        /* Finite but absurd: a price of 1e308 would make every cost
         * overflow to infinity; a tiny speed would make times overflow. */
        {"price: 3.6", "price: 1e308",
         "f.yaml:10:14: cluster.types[0].price: \"1e308\" is absurdly large: figures must lie "
         "between 1e-12 and 1e+18 (or be 0)"},
        {"mem: 10GB", "mem: 1e-20",
         "f.yaml:9:12: cluster.types[0].mem: \"1e-20\" is absurdly small: figures must lie "
         "between 1e-12 and 1e+18 (or be 0)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = load_with(cases[i].old, cases[i].new);
        if (strcmp(got, cases[i].msg) != 0)
            fail_msg("case %zu (%s):\n  expected: %s\n  got:      %s", i, cases[i].new,
                     cases[i].msg, got);
    }
}

/* ---- the daemon ---------------------------------------------------------------- */

static const char *CLUSTER =
    "{\"types\": [{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": \"1TFLOPS\", \"io_bw\": "
    "\"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", \"price\": 3.6}],"
    " \"zones\": [{\"name\": \"a\"}],"
    " \"nodes\": [{\"name\": \"n0\", \"type\": \"gpu\", \"units\": 4, \"zone\": \"a\", \"bw\": "
    "\"1GB/s\"}]}";

/* A job whose samples figure is SAMPLES (JSON text). */
static void job_with(char *buf, size_t len, const char *samples) {
    snprintf(buf, len,
             "{\"name\": \"tiny\", \"batch\": 10, \"samples\": %s, \"min_throughput\": 100,"
             " \"alpha\": 0, \"layers\": [{\"name\": \"a\", \"flops\": \"1GFLOP\", \"io\": 0,"
             " \"act\": 0, \"params\": \"1MB\", \"mem\": \"1MB\"}]}",
             samples);
}

/* Sends body to path; expects status `want` with `needle` in the error
 * message, within 5 s. */
static void expect(int port, const char *method, const char *path, const char *body, int want,
                   const char *needle) {
    sv_resp r;
    double t0 = clock_now_s();
    int st = sv_http(port, method, path, NULL, body, strlen(body), &r);
    double dt = clock_now_s() - t0;
    json_t *o = sv_body_json(&r);
    const char *msg = json_string_value(json_object_get(o, "error"));
    if (st != want || (needle && (!msg || !strstr(msg, needle))) || dt > 5.0)
        fail_msg("%s %s: expected %d with \"%s\" within 5 s, got %d after %.2f s: %s\n  body: %.300s",
                 method, path, want, needle ? needle : "", st, dt, r.body ? r.body : "", body);
    json_decref(o);
    sv_resp_free(&r);
}

static void test_requests_figures(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--threads", "2", NULL};
    assert_int_equal(sv_start(&p, "faults", args), 0);
    char job[1024], body[4096];
    static const struct {
        const char *samples, *msg;
    } figs[] = {
        {"NaN", "malformed JSON at line 1"},        /* not JSON at all */
        {"1e400", "malformed JSON at line 1"},      /* jansson: real number overflow */
        {"-1e400", "malformed JSON at line 1"},
        {"\"nan\"", "job.samples: expected a number such as 0.5 or 1e6, got \"nan\""},
        {"\"inf\"", "job.samples: expected a number such as 0.5 or 1e6, got \"inf\""},
        {"-5", "job.samples: must be > 0, got \"-5\""},
        {"\"1e999\"", "job.samples: \"1e999\" is out of range"},
    };
    const char *paths[] = {"/v1/cost", "/v1/place", "/v1/solve"};
    for (size_t f = 0; f < sizeof figs / sizeof *figs; f++) {
        job_with(job, sizeof job, figs[f].samples);
        for (size_t k = 0; k < 3; k++) {
            snprintf(body, sizeof body,
                     "{\"cluster\": %s, \"job\": %s%s}", CLUSTER, job,
                     k == 0 ? ", \"assignment\": \"gpu\"" : k == 1 ?
                     ", \"options\": {\"plan_method\": \"greedy\"}" : "");
            expect(p.port, "POST", paths[k], body, 400, figs[f].msg);
        }
        snprintf(body, sizeof body, "{\"cluster\": %s, \"job\": %s}", CLUSTER, job);
        expect(p.port, "PUT", "/v1/jobs/bad", body, 400, figs[f].msg);
    }
    /* Absurd options: refused with their bounds, not run for 1e18 ms. */
    job_with(job, sizeof job, "3.6e6");
    static const struct {
        const char *path, *options, *msg;
    } opts[] = {
        {"/v1/solve", "{\"budget_ms\": 1e18}", "options.budget_ms: expected a whole number from 1 to 10000"},
        {"/v1/solve", "{\"budget_ms\": -1}", "options.budget_ms: expected a whole number from 1 to 10000"},
        {"/v1/solve", "{\"budget_ms\": 9223372036854775807}", "options.budget_ms: expected a whole number from 1 to 10000"},
        {"/v1/solve", "{\"method\": \"genetic\", \"max_evals\": 1e300}", "options.max_evals"},
        {"/v1/solve", "{\"seed\": -1}", "options.seed"},
        {"/v1/place", "{\"plan_method\": \"greedy\", \"samples\": 1000000000000}", "options.samples"},
        {"/v1/place", "{\"plan_method\": \"greedy\", \"budget_ms\": 1e18}", "options.budget_ms"},
    };
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        snprintf(body, sizeof body, "{\"cluster\": %s, \"job\": %s, \"options\": %s}", CLUSTER,
                 job, opts[i].options);
        expect(p.port, "POST", opts[i].path, body, 400, opts[i].msg);
    }
    /* The extender: a node annotation with a NaN bandwidth or absurd units
     * fails that node with the reason (n1, the registered node, holds the
     * job's plan); the request itself is answered. */
    snprintf(body, sizeof body, "{\"cluster\": {\"types\": [{\"name\": \"gpu\", \"kind\": \"gpu\","
             " \"flops\": \"1TFLOPS\", \"io_bw\": \"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": "
             "\"10GB\", \"price\": 3.6}], \"nodes\": [{\"name\": \"n1\", \"type\": \"gpu\", "
             "\"units\": 4, \"bw\": \"1GB/s\"}]}, \"job\": %s}", job);
    expect(p.port, "PUT", "/v1/jobs/tiny", body, 201, NULL); /* planned on n1 */
    static const char *annots[] = {"\"strata.io/bw\": \"nan\"", "\"strata.io/bw\": \"-1GB/s\"",
                                   "\"strata.io/units\": \"1e99\"", "\"strata.io/latency\": \"inf\"",
                                   "\"strata.io/loss\": \"200%\""};
    for (size_t i = 0; i < sizeof annots / sizeof *annots; i++) {
        snprintf(body, sizeof body,
                 "{\"Pod\": {\"metadata\": {\"name\": \"tiny-worker-0\", \"labels\": "
                 "{\"training.kubeflow.org/job-name\": \"tiny\", "
                 "\"training.kubeflow.org/replica-type\": \"worker\", "
                 "\"training.kubeflow.org/replica-index\": \"0\"}}},"
                 " \"Nodes\": {\"items\": [{\"metadata\": {\"name\": \"n0\", \"labels\": "
                 "{\"node.kubernetes.io/instance-type\": \"gpu\"}, \"annotations\": {%s}},"
                 " \"status\": {\"allocatable\": {\"nvidia.com/gpu\": \"4\"}}},"
                 " {\"metadata\": {\"name\": \"n1\", \"labels\": "
                 "{\"node.kubernetes.io/instance-type\": \"gpu\"}},"
                 " \"status\": {\"allocatable\": {\"nvidia.com/gpu\": \"4\"}}}]}}",
                 annots[i]);
        sv_resp r;
        double t0 = clock_now_s();
        int st = sv_http(p.port, "POST", "/k8s/filter", NULL, body, strlen(body), &r);
        /* a node whose annotation does not read can never be judged: no
         * preemption helps, so FailedAndUnresolvableNodes */
        if (st != 200 || clock_now_s() - t0 > 5.0 ||
            !strstr(r.body, "\"FailedAndUnresolvableNodes\":{\"n0\":") ||
            !strstr(r.body, "annotation strata.io/"))
            fail_msg("filter with %s: expected 200 failing n0, got %d: %s", annots[i], st, r.body);
        sv_resp_free(&r);
    }
    /* Still serving. */
    expect(p.port, "GET", "/healthz", "", 200, NULL);
    assert_int_equal(sv_stop(&p), 0);
    /* Each filter's log line counts the node kept (n1) of the two. The
     * count was once read from the answer after it was freed (found by
     * scripts/valgrind.sh; ASan does not see reads inside jansson). */
    assert_int_equal(sv_log_count(&p, "POST /k8s/filter 200", "kept 1 of 2", NULL),
                     (int)(sizeof annots / sizeof *annots));
}

/* ---- the checkpoints the fuzzer found ------------------------------------------ */

/* Both are seed checkpoints mutated into superblock version 0 (no
 * checksums) with a symbol-table group whose local heap claims 123 TB:
 * the first made HDF5 call malloc with that size (an ASan abort), the
 * second made HDF5 copy into the NULL malloc returned (a segfault in the
 * plain program: `strata serve --policy` died, and so would a daemon
 * reloading it on SIGHUP). ckpt_load now refuses any superblock older
 * than version 2 before HDF5 reads the file. */
static void test_ckpt_fuzz_finds(void **state) {
    (void)state;
    const char *src = getenv("STRATA_SRC");
    assert_non_null(src);
    const char *files[] = {"ckpt_huge_heap.h5", "ckpt_v0_heap_segv.h5"};
    for (int i = 0; i < 2; i++) {
        char path[1024], err[2048], want[1400];
        snprintf(path, sizeof path, "%s/tests/data/faults/%s", src, files[i]);
        ckpt_info info;
        memset(&info, 0, sizeof info);
        err[0] = '\0';
        assert_int_equal(ckpt_load(path, NULL, &info, err, sizeof err), CKPT_EFORMAT);
        snprintf(want, sizeof want,
                 "checkpoint '%s' is HDF5 but not a strata nets checkpoint: its superblock "
                 "(version 0) has no checksums, and ckpt_save writes version 3 at the start of "
                 "the file; pass a file written by ckpt_save / strata train",
                 path);
        assert_string_equal(err, want);
        ckpt_info_free(&info);
        assert_null(agent_policy_load(path, err, sizeof err));
        assert_non_null(strstr(err, "superblock (version 0) has no checksums"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_figures),
        cmocka_unit_test(test_requests_figures),
        cmocka_unit_test(test_ckpt_fuzz_finds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
