/* test_serve_budget.c -- `strata serve`: what one request may cost, black-box.
 *
 * The real daemon over loopback with a policy trained here (a fraction of
 * a second) and small limits set by flags:
 *
 *   - --request-cpu-ms cuts a sampling decode that asks for no time limit:
 *     the answer comes early with the best plan found and "stopped": true;
 *   - --request-mem-mb refuses a decode whose estimated memory passes it
 *     with 422 naming the figure and the limit, before allocating, while
 *     a small request still gets its plan;
 *   - a decode whose client closed its connection is abandoned (the log
 *     line says "abandoned") well before it would have finished;
 *   - --jobs-max-mb bounds the registered jobs' memory: past it 507 with
 *     a message naming the limit; after deleting every job, registering
 *     succeeds again.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
    "    - {name: c0, type: cpu, units: 4, zone: b, bw: 1GB/s}\n"
    "job:\n"
    "  name: tiny\n"
    "  batch: 10\n"
    "  samples: 3.6e6\n"
    "  min_throughput: 100\n"
    "  alpha: 0\n"
    "  layers:\n"
    "    - {name: a, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"
    "    - {name: b, flops: 1GFLOP, io: 0, act: 0, params: 0, mem: 1MB}\n";

static char policy[1200]; /* the trained checkpoint, "" when training failed */

/* A /v1/place body: `layers` layers on `nodes` nodes (gpu and cpu in
 * turn, zones a and b), sampling `samples` plans, with extra options
 * (a JSON fragment starting with a comma, or ""). Caller frees. */
static char *place_body(int layers, int nodes, int samples, const char *extra) {
    size_t cap = 4096 + (size_t)layers * 120 + (size_t)nodes * 120;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t n = (size_t)snprintf(b, cap,
        "{\"cluster\": {\"types\": ["
        "{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": \"1TFLOPS\", \"io_bw\": \"1GB/s\", "
        "\"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", \"price\": 3.6},"
        "{\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": \"0.5TFLOPS\", \"io_bw\": \"5GB/s\", "
        "\"net_bw\": \"8Gbit/s\", \"mem\": \"100GB\", \"price\": 1.0}],"
        " \"zones\": [{\"name\": \"a\"}, {\"name\": \"b\"}], \"nodes\": [");
    for (int i = 0; i < nodes; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              "%s{\"name\": \"n%d\", \"type\": \"%s\", \"units\": 4, \"zone\": "
                              "\"%s\", \"bw\": \"1GB/s\"}", i ? ", " : "", i,
                              i % 2 ? "cpu" : "gpu", i % 2 ? "a" : "b");
    n += (size_t)snprintf(b + n, cap - n,
                          "]}, \"job\": {\"name\": \"big\", \"batch\": 10, \"samples\": 3.6e6, "
                          "\"min_throughput\": 100, \"alpha\": 0, \"layers\": [");
    for (int l = 0; l < layers; l++)
        n += (size_t)snprintf(b + n, cap - n,
                              "%s{\"name\": \"l%d\", \"flops\": \"1GFLOP\", \"io\": 0, \"act\": "
                              "0, \"params\": \"%s\", \"mem\": \"1MB\"}", l ? ", " : "", l,
                              l ? "0" : "1MB");
    snprintf(b + n, cap - n,
             "]}, \"options\": {\"decode\": \"sample\", \"samples\": %d, \"seed\": 7%s}}",
             samples, extra);
    return b;
}

static int setup(void **state) {
    (void)state;
    char dir[1024], yaml[1100], out[1100];
    snprintf(dir, sizeof dir, "%s/serve-budget-%d", sv_tmp(), (int)getpid());
    if (sh_run("mkdir -p '%s'", dir) != 0) return -1;
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    if (sv_write_file(yaml, TINY_YAML) != 0 || sv_train_search(yaml, 3, 1, out) != 0) return -1;
    snprintf(policy, sizeof policy, "%s/last.h5", out);
    return 0;
}

static void test_cpu_budget(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--policy", policy, "--request-cpu-ms", "200", "--request-mem-mb", "0",
                          "--threads", "1", NULL};
    assert_int_equal(sv_start(&p, "cpu", args), 0);
    /* 1024 samples of 64 layers on 64 nodes: about 3 s uncut on this machine */
    char *body = place_body(64, 64, 1024, "");
    sv_resp r;
    double t0 = clock_now_s();
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
    double took = clock_now_s() - t0;
    json_t *o = sv_body_json(&r);
    assert_non_null(o);
    json_int_t used = json_integer_value(json_object_get(o, "samples_used"));
    printf("cpu budget 200 ms: answered in %.2f s, %lld of 1024 samples, stopped %d\n", took,
           (long long)used, json_is_true(json_object_get(o, "stopped")));
    assert_true(json_is_true(json_object_get(o, "stopped")));
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_true(used >= 64 && used < 1024);
    assert_true(took < 1.5);
    json_decref(o);
    sv_resp_free(&r);
    free(body);
    assert_int_equal(sv_log_count(&p, "stopped: the time budget of 200 ms", NULL), 1);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_mem_bound(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--policy", policy, "--request-mem-mb", "8", NULL};
    assert_int_equal(sv_start(&p, "mem", args), 0);
    /* estimated at about 34 MiB: refused before anything is allocated */
    char *body = place_body(64, 64, 1024, "");
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 422);
    json_t *o = sv_body_json(&r);
    assert_non_null(o);
    const char *e = json_string_value(json_object_get(o, "error"));
    assert_non_null(e);
    printf("mem bound: %s\n", e);
    assert_non_null(strstr(e, "needs about 34 MiB"));
    assert_non_null(strstr(e, "limit of 8 MiB (--request-mem-mb)"));
    json_decref(o);
    sv_resp_free(&r);
    free(body);
    /* a small decode passes under the same limit */
    body = place_body(4, 2, 8, "");
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 200);
    sv_resp_free(&r);
    free(body);
    assert_int_equal(sv_stop(&p), 0);
}

/* The N of "after N samples" on the daemon's "abandoned" log line, or -1. */
static int samples_in_note(const sv_proc *p) {
    FILE *f = fopen(p->log, "r");
    if (!f) return -1;
    char line[4096];
    int n = -1;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "abandoned:");
        if (at && (at = strstr(at, "stopped after "))) n = atoi(at + strlen("stopped after "));
    }
    fclose(f);
    return n;
}

static void test_client_gone(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--policy", policy, "--request-cpu-ms", "0", "--request-mem-mb", "0",
                          NULL};
    assert_int_equal(sv_start(&p, "gone", args), 0);
    /* 128 layers on 64 nodes, 1024 samples: several seconds uncut */
    char *body = place_body(128, 64, 1024, "");
    int fd = sv_connect(p.port);
    assert_true(fd >= 0);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "POST /v1/place HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", strlen(body));
    assert_int_equal(sv_send_all(fd, head, (size_t)hn), 0);
    assert_int_equal(sv_send_all(fd, body, strlen(body)), 0);
    usleep(300000);
    close(fd);
    double t0 = clock_now_s();
    int seen = 0;
    while (!seen && clock_now_s() - t0 < 10.0) {
        usleep(20000);
        seen = sv_log_count(&p, "POST /v1/place", "abandoned: the client closed", NULL);
    }
    double after = clock_now_s() - t0;
    int used = samples_in_note(&p);
    printf("client gone: decode abandoned %.2f s after the client closed, after %d of 1024 "
           "samples\n", after, used);
    assert_int_equal(seen, 1);
    /* one batch of 64 more at most (a batch can take a while under a
     * sanitizer on a busy machine: the sample count is the firm check) */
    assert_true(after < 3.0);
    assert_true(used > 0 && used <= 512);
    free(body);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_jobs_bytes(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--jobs-max-mb", "1", NULL};
    assert_int_equal(sv_start(&p, "jobs", args), 0);
    /* a job of 256 layers (about 30 KB of JSON) with a solver: no policy needed */
    char *body = place_body(256, 2, 1, "");
    char *opt = strstr(body, "\"options\"");
    assert_non_null(opt);
    strcpy(opt, "\"options\": {\"plan_method\": \"greedy\"}}");
    int refused_at = -1;
    sv_resp r;
    for (int i = 0; i < 400 && refused_at < 0; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/j%d", i);
        int code = sv_http(p.port, "PUT", path, NULL, body, strlen(body), &r);
        if (code == 507) {
            refused_at = i;
            json_t *o = sv_body_json(&r);
            const char *e = json_string_value(json_object_get(o, "error"));
            printf("jobs: refused at job %d: %s\n", i, e ? e : "(none)");
            assert_non_null(e);
            assert_non_null(strstr(e, "of its 1024 KiB (--jobs-max-mb)"));
            json_decref(o);
        } else {
            assert_int_equal(code, 201);
        }
        sv_resp_free(&r);
    }
    assert_true(refused_at > 1 && refused_at < 400);
    for (int i = 0; i < refused_at; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/j%d", i);
        assert_int_equal(sv_http(p.port, "DELETE", path, NULL, NULL, 0, &r), 204);
        sv_resp_free(&r);
    }
    for (int i = 0; i < refused_at; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/k%d", i);
        assert_int_equal(sv_http(p.port, "PUT", path, NULL, body, strlen(body), &r), 201);
        sv_resp_free(&r);
    }
    free(body);
    assert_int_equal(sv_stop(&p), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_budget),
        cmocka_unit_test(test_mem_bound),
        cmocka_unit_test(test_client_gone),
        cmocka_unit_test(test_jobs_bytes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
