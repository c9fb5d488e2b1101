/* test_serve_ops.c -- `strata serve` as an operator sees it: start, signals, load.
 *
 * The real daemon over loopback: refusing bad start-up arguments, keeping
 * connections alive, SIGHUP under load losing no request (and a failed
 * reload leaving the daemon serving), SIGTERM letting a request in flight
 * finish before the process exits 0, and what the log says about each.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/serve_client.h"

/* The run of test_serve_api.c (two layers, one gpu type, two nodes); the
 * greedy plan with the pack placer costs $7.20 (worked out there). */
static char *tiny_place_body(const char *extra_options) {
    char *b = NULL;
    if (asprintf(&b,
                 "{\"cluster\": {\"types\": [{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": "
                 "\"1TFLOPS\", \"io_bw\": \"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", "
                 "\"price\": 3.6}], \"zones\": [{\"name\": \"a\"}, {\"name\": \"b\"}], "
                 "\"nodes\": [{\"name\": \"n0\", \"type\": \"gpu\", \"units\": 4, \"zone\": \"a\", "
                 "\"bw\": \"1GB/s\"}, {\"name\": \"n1\", \"type\": \"gpu\", \"units\": 4, "
                 "\"zone\": \"b\", \"bw\": \"1GB/s\"}]},"
                 " \"job\": {\"name\": \"tiny\", \"batch\": 10, \"samples\": 3.6e6, "
                 "\"min_throughput\": 100, \"alpha\": 0, \"layers\": [{\"name\": \"a\", "
                 "\"flops\": \"1GFLOP\", \"io\": 0, \"act\": 0, \"params\": \"1MB\", \"mem\": "
                 "\"1MB\"}, {\"name\": \"b\", \"flops\": \"1GFLOP\", \"io\": 0, \"act\": 0, "
                 "\"params\": 0, \"mem\": \"1MB\"}]},"
                 " \"options\": {%s}}",
                 extra_options) < 0)
        return NULL;
    return b;
}

static void test_start_errors(void **state) {
    (void)state;
    const char *bin = getenv("STRATA_BIN");
    assert_non_null(bin);
    char cmd[2048], out[2048];
    struct {
        const char *args;
        const char *needle;
    } cases[] = {
        {"--policy /nonexistent/p.h5", "/nonexistent/p.h5"},
        {"--listen nowhere", "--listen: expected HOST:PORT"},
        {"--listen 127.0.0.1:99999", "--listen: expected HOST:PORT"},
        {"--threads 0", "--threads: expected a whole number from 1"},
        {"--token-file /nonexistent/token", "--token-file /nonexistent/token"},
        {"extra-argument", "usage: strata serve"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "'%s' serve --listen 127.0.0.1:0 %s 2>&1", bin, cases[i].args);
        if (!strncmp(cases[i].args, "--listen", 8))
            snprintf(cmd, sizeof cmd, "'%s' serve %s 2>&1", bin, cases[i].args);
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = '\0';
        int st = pclose(f);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 2 || !strstr(out, cases[i].needle) ||
            (i == 0 && !strstr(out, "--policy: ")))
            fail_msg("strata serve %s: expected exit 2 with \"%s\", got %d: %s", cases[i].args,
                     cases[i].needle, WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
    }
}

/* Reads one HTTP answer with a Content-Length from fd; returns its status. */
static int read_one(int fd, char *buf, size_t cap) {
    size_t got = 0;
    char *sep = NULL;
    while (!sep && got < cap - 1) {
        ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
        buf[got] = '\0';
        sep = strstr(buf, "\r\n\r\n");
    }
    if (!sep) return -1;
    const char *cl = strcasestr(buf, "Content-Length:");
    size_t want = (size_t)(sep - buf) + 4 + (cl ? (size_t)atol(cl + 15) : 0);
    while (got < want && got < cap - 1) {
        ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return atoi(buf + 9);
}

/* The "cost" of the JSON body of the HTTP answer in buf (NAN when it has
 * none). */
static double body_cost(const char *buf) {
    const char *sep = strstr(buf, "\r\n\r\n");
    json_t *o = sep ? json_loads(sep + 4, 0, NULL) : NULL;
    json_t *c = json_object_get(o, "cost");
    double v = json_is_real(c) ? json_real_value(c) : NAN;
    json_decref(o);
    return v;
}

static void test_keep_alive(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "keepalive", NULL), 0);
    int fd = sv_connect(p.port);
    assert_true(fd >= 0);
    char *body = tiny_place_body("\"plan_method\": \"greedy\", \"placement\": \"pack\"");
    char head[256], buf[65536];
    int hn = snprintf(head, sizeof head,
                      "POST /v1/place HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
                      strlen(body));
    /* Three requests on one connection. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sv_send_all(fd, head, (size_t)hn), 0);
        assert_int_equal(sv_send_all(fd, body, strlen(body)), 0);
        assert_int_equal(read_one(fd, buf, sizeof buf), 200);
        assert_true(body_cost(buf) == 7.2); /* exactly: 2 h x $3.60/h */
    }
    close(fd);
    free(body);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "POST /v1/place 200", NULL), 3);
}

/* ---- SIGHUP under load ---------------------------------------------------------------- */

static void test_sighup_under_load(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "sighup", NULL), 0);
    char *body = tiny_place_body("\"plan_method\": \"greedy\", \"placement\": \"pack\"");
    enum { THREADS = 4, PER = 150, HUPS = 40 };
    sv_load args[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (sv_load){.port = p.port, .body = body, .want = "{\"cost\": 7.2}", .n = PER};
        pthread_create(&th[t], NULL, sv_load_thread, &args[t]);
    }
    /* Reload signals while the requests run. */
    for (int i = 0; i < HUPS; i++) {
        kill(p.pid, SIGHUP);
        usleep(5000);
    }
    int ok = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        if (args[t].failed) fail_msg("thread %d: %d failed, first: %s", t, args[t].failed,
                                     args[t].first_error);
        ok += args[t].ok;
    }
    assert_int_equal(ok, THREADS * PER);
    /* Still serving; the process is alive. */
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    free(body);
    /* Every SIGHUP was taken and logged (no --policy here: nothing to load,
     * which the log says); every request has its line. Signals that arrive
     * while one is pending merge, so at least one and at most HUPS lines. */
    int hups = sv_log_count(&p, "SIGHUP: reload failed", "no --policy was given", NULL);
    assert_true(hups >= 1 && hups <= HUPS);
    assert_int_equal(sv_log_count(&p, "POST /v1/place 200", NULL), THREADS * PER);
    assert_int_equal(sv_log_count(&p, "strata serve: stopped", NULL), 1);
}

/* ---- SIGTERM drains ------------------------------------------------------------------ */

typedef struct {
    int port;
    char *body;
    int status;
    int stopped;
    double seconds;
} slow_arg;

static void *slow_thread(void *v) {
    slow_arg *a = v;
    double t0 = clock_now_s();
    sv_resp r;
    a->status = sv_http(a->port, "POST", "/v1/solve", NULL, a->body, strlen(a->body), &r);
    a->seconds = clock_now_s() - t0;
    json_t *o = sv_body_json(&r);
    a->stopped = json_is_true(json_object_get(o, "stopped"));
    json_decref(o);
    sv_resp_free(&r);
    return NULL;
}

static void test_sigterm_drains(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "drain", NULL), 0);
    /* `random` searches until its budget, 1200 ms, with an evaluation
     * budget far beyond what that time allows (two types, eight layers: a
     * space it keeps sampling). */
    char *body = sv_slow_solve_body(8, 1200);
    assert_non_null(body);
    slow_arg a = {p.port, body, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, slow_thread, &a);
    usleep(300000); /* the request is in flight */
    double t0 = clock_now_s();
    int code = sv_wait(&p, SIGTERM, 30.0);
    double exit_after = clock_now_s() - t0;
    pthread_join(th, NULL);
    /* The request in flight got its answer, then the process exited 0. */
    assert_int_equal(a.status, 200);
    assert_true(a.stopped);
    assert_true(a.seconds >= 1.0);
    assert_int_equal(code, 0);
    assert_true(exit_after >= 0.5 && exit_after < 10.0);
    /* Nothing listens any more. */
    assert_true(sv_connect(p.port) < 0);
    assert_int_equal(sv_log_count(&p, "SIGTERM: draining", NULL), 1);
    assert_int_equal(sv_log_count(&p, "POST /v1/solve 200", NULL), 1);
    free(body);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_errors),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_sighup_under_load),
        cmocka_unit_test(test_sigterm_drains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
