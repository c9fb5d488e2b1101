/* test_serve_limits.c -- `strata serve` under attack: the daemon's limits, black-box.
 *
 * The real daemon over loopback, each attack scaled down with small limits
 * set by flags so that every test takes a few seconds:
 *
 *   - slowloris: connections trickling a header byte every 100 ms are
 *     closed at --request-deadline-ms although every byte restarts
 *     libmicrohttpd's own timeout, and /healthz answers meanwhile;
 *   - idle keep-alive connections filling --max-conns do not lock a new
 *     client out (the idle one is closed for it); busy ones are never cut
 *     by a short --request-deadline-ms;
 *   - partial bodies are charged to --max-body-memory-mb: past it, 503
 *     with a JSON error, and the budget comes back when they close;
 *   - conflicting Content-Length headers get 400;
 *   - a large body reuses the buffer the last one left, and never reads
 *     its old bytes; chunked bodies, a lying Content-Length and a body
 *     over the limit get their 400 or 413 with the buffer coming back;
 *   - a token file with a NUL is refused, naming the file; /readyz shows
 *     the policy's path to an authenticated caller only;
 *   - newlines and terminal escapes a client sends reach neither the log
 *     nor an error message raw;
 *   - SIGTERM ends the process within --shutdown-ms with a request still
 *     running;
 *   - /healthz and /readyz answer within 100 ms while every work slot is
 *     busy.
 *
 * The attackers connect from 127.0.0.2 and 127.0.0.3 (the loopback is a
 * /8), so that the per-address limit leaves the probing client at 127.0.0.1
 * alone.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/serve_client.h"

/* Whether the daemon has closed fd: a read finds the end (or a reset)
 * without waiting. */
static int closed_by_peer(int fd) {
    char b[4096];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
        if (n > 0) continue; /* an answer (408...) before the end is fine */
        if (n == 0) return 1;
        return errno != EAGAIN && errno != EWOULDBLOCK;
    }
}

/* GET path over a new connection; returns the status and *ms the time. */
static int timed_get(int port, const char *path, const char *headers, double *ms,
                     sv_resp *r) {
    double t0 = clock_now_s();
    int st = sv_http(port, "GET", path, headers, NULL, 0, r);
    *ms = (clock_now_s() - t0) * 1e3;
    return st;
}

static void test_slowloris(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--max-conns", "24", "--max-conns-per-ip", "8",
                          "--request-deadline-ms", "1000", "--idle-timeout-s", "30", NULL};
    assert_int_equal(sv_start(&p, "slowloris", args), 0);
    enum { N = 30 };
    int fd[N];
    for (int i = 0; i < N; i++) {
        fd[i] = sv_connect_from(p.port, i % 2 ? "127.0.0.2" : "127.0.0.3", 5);
        if (fd[i] >= 0) (void)!send(fd[i], "POST /v1/place HTTP/1.1\r\n", 25, MSG_NOSIGNAL);
    }
    /* Trickle "X-a: b\r\n" one byte per 100 ms for 2.5 s (2.5 times the
     * deadline), probing /healthz from 127.0.0.1 meanwhile. */
    static const char drip[] = "X-a: b\r\n";
    double worst = 0;
    int probes_ok = 0;
    for (int t = 0; t < 25; t++) {
        for (int i = 0; i < N; i++)
            if (fd[i] >= 0) (void)!send(fd[i], drip + t % 8, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (t % 3 == 0) {
            sv_resp r;
            double ms;
            probes_ok += timed_get(p.port, "/healthz", NULL, &ms, &r) == 200;
            if (ms > worst) worst = ms;
            sv_resp_free(&r);
        }
        usleep(100000);
    }
    int open = 0;
    for (int i = 0; i < N; i++)
        if (fd[i] >= 0) {
            open += !closed_by_peer(fd[i]);
            close(fd[i]);
        }
    printf("slowloris: %d of %d trickling connections still open after 2.5 s; /healthz "
           "worst %.1f ms (%d of 9 ok)\n", open, N, worst, probes_ok);
    /* Every trickling connection was closed although each kept sending. */
    assert_int_equal(open, 0);
    assert_int_equal(probes_ok, 9);
    assert_true(worst < 500);
    assert_true(sv_log_count(&p, "no complete request after 1000 ms", NULL) >= 1);
    assert_int_equal(sv_stop(&p), 0);
}

/* Sends one keep-alive GET /healthz on fd and reads its answer. */
static int keepalive_probe(int fd) {
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    if (sv_send_all(fd, req, sizeof req - 1) < 0) return -1;
    char b[2048];
    size_t got = 0;
    while (got < sizeof b - 1) {
        ssize_t n = recv(fd, b + got, sizeof b - 1 - got, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
        b[got] = '\0';
        const char *sep = strstr(b, "\r\n\r\n");
        const char *cl = strcasestr(b, "Content-Length:");
        if (sep && cl && got >= (size_t)(sep + 4 - b) + (size_t)atoi(cl + 15))
            return atoi(b + 9);
    }
    return -1;
}

static void test_idle_keepalive(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--max-conns", "16", "--max-conns-per-ip", "8",
                          "--idle-timeout-s", "30", NULL};
    assert_int_equal(sv_start(&p, "idle", args), 0);
    /* 16 connections, each answered once and then idle: the daemon is full. */
    int fd[16], served = 0;
    for (int i = 0; i < 16; i++) {
        fd[i] = sv_connect_from(p.port, i < 8 ? "127.0.0.2" : "127.0.0.3", 5);
        served += fd[i] >= 0 && keepalive_probe(fd[i]) == 200;
    }
    assert_int_equal(served, 16);
    /* New clients still get in, each in well under a second. */
    for (int k = 0; k < 5; k++) {
        sv_resp r;
        double ms;
        assert_int_equal(timed_get(p.port, "/healthz", NULL, &ms, &r), 200);
        assert_true(ms < 500);
        sv_resp_free(&r);
    }
    /* The room was made by closing idle connections. */
    int closed = 0;
    usleep(100000);
    for (int i = 0; i < 16; i++) {
        closed += closed_by_peer(fd[i]);
        close(fd[i]);
    }
    assert_true(closed >= 1);
    assert_int_equal(sv_stop(&p), 0);
}

/* One client of test_busy_keepalive: keep-alive GET /healthz on one
 * connection until *stop, counting the answers and any failure. */
typedef struct {
    int port;
    const char *from;
    atomic_int *stop;
    int ok, failed;
} ka_client;

static void *ka_client_main(void *arg) {
    ka_client *c = arg;
    int fd = sv_connect_from(c->port, c->from, 5);
    if (fd < 0) {
        c->failed++;
        return NULL;
    }
    while (!atomic_load(c->stop)) {
        if (keepalive_probe(fd) == 200) {
            c->ok++;
        } else {
            c->failed++;
            break;
        }
    }
    close(fd);
    return NULL;
}

static void test_busy_keepalive(void **state) {
    (void)state;
    /* Keep-alive connections answered back to back are never closed by the
     * request deadline, however short: the reaper (every 10 ms here) once
     * read a state change made after its clock reading as 584 years old
     * and cut the connection between two requests (the soak's rare "read"
     * socket error). The race is narrow: without the fix this test failed in 2 of 6 runs. */
    sv_proc p;
    const char *args[] = {"--request-deadline-ms", "300", "--idle-timeout-s", "30", NULL};
    assert_int_equal(sv_start(&p, "busyka", args), 0);
    enum { N = 8 };
    atomic_int stop;
    atomic_init(&stop, 0);
    ka_client c[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        c[i] = (ka_client){p.port, i % 2 ? "127.0.0.2" : "127.0.0.3", &stop, 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, ka_client_main, &c[i]), 0);
    }
    usleep(4000000);
    atomic_store(&stop, 1);
    int ok = 0, failed = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += c[i].ok;
        failed += c[i].failed;
    }
    printf("busy keep-alive: %d answers on %d connections in 4 s, %d cut\n", ok, N, failed);
    assert_true(ok > 1000);
    assert_int_equal(failed, 0);
    assert_int_equal(sv_log_count(&p, "no complete request after", NULL), 0);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_body_budget(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--max-body-memory-mb", "1", NULL};
    assert_int_equal(sv_start(&p, "budget", args), 0);
    /* Two bodies of a declared 1 MiB - 1 byte, 400 KiB of each sent: each
     * buffer has grown to 512 KiB, the whole budget. */
    static char chunk[400 << 10];
    memset(chunk, ' ', sizeof chunk);
    int a = sv_connect(p.port), b = sv_connect(p.port);
    static const char head[] = "POST /v1/cost HTTP/1.1\r\nHost: x\r\nContent-Length: 1048575\r\n"
                               "\r\n";
    assert_int_equal(sv_send_all(a, head, sizeof head - 1), 0);
    assert_int_equal(sv_send_all(b, head, sizeof head - 1), 0);
    assert_int_equal(sv_send_all(a, chunk, sizeof chunk), 0);
    assert_int_equal(sv_send_all(b, chunk, sizeof chunk), 0);
    usleep(300000);
    /* A third body finds no memory left: 503 with a JSON error. */
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, "{}", 2, &r), 503);
    json_t *o = sv_body_json(&r);
    assert_non_null(o);
    assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
                           "body memory budget (1048576 bytes"));
    json_decref(o);
    sv_resp_free(&r);
    /* The budget comes back when the partial bodies go. */
    close(a);
    close(b);
    usleep(300000);
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, "{}", 2, &r), 400);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* Reads fd's answer to EOF (its first 8 KB), closes fd, and returns the
 * answer's status, or -1; the answer's body in body (NULL: not wanted). */
static int answer_status(int fd, char *body, size_t blen) {
    char b[8192];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof b - 1 && (n = recv(fd, b + got, sizeof b - 1 - got, 0)) > 0)
        got += (size_t)n;
    close(fd);
    b[got] = '\0';
    const char *sep = strstr(b, "\r\n\r\n");
    if (body) snprintf(body, blen, "%s", sep ? sep + 4 : "");
    return got > 12 && !strncmp(b, "HTTP/1.1 ", 9) ? atoi(b + 9) : -1;
}

/* Sends raw bytes and returns the answer's status (reading to EOF). */
static int raw_status(int port, const char *req, char *body, size_t blen) {
    int fd = sv_connect(port);
    if (fd < 0) return -1;
    if (sv_send_all(fd, req, strlen(req)) < 0) {
        close(fd);
        return -1;
    }
    return answer_status(fd, body, blen);
}

static void test_conflicting_length(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "length", NULL), 0);
    char body[4096];
    assert_int_equal(raw_status(p.port,
                                "POST /v1/cost HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                "Content-Length: 30\r\nConnection: close\r\n\r\n{}",
                                body, sizeof body), 400);
    assert_non_null(strstr(body, "conflicting Content-Length headers"));
    assert_int_equal(raw_status(p.port,
                                "POST /v1/cost HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n"
                                "Connection: close\r\n\r\n{}",
                                body, sizeof body), 400);
    /* One plain Content-Length still works. */
    assert_int_equal(raw_status(p.port,
                                "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                "Connection: close\r\n\r\n",
                                body, sizeof body), 200);
    assert_int_equal(sv_stop(&p), 0);
}

/* The value of series name on the daemon's /metrics page (-1: none). */
static double series_now(int port, const char *name) {
    sv_resp r;
    double v = sv_http(port, "GET", "/metrics", NULL, NULL, 0, &r) == 200
                   ? sv_series(r.body, name) : -2;
    sv_resp_free(&r);
    return v;
}

/* Sends body[len] in chunks of 100,000 bytes (Transfer-Encoding: chunked,
 * no Content-Length) and returns the status; the answer's body in out. */
static int chunked_status(int port, const char *body, size_t len, char *out, size_t olen) {
    int fd = sv_connect(port);
    static const char head[] = "POST /v1/cost HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                               "Connection: close\r\n\r\n";
    if (fd < 0) return -1;
    if (sv_send_all(fd, head, sizeof head - 1) < 0) {
        close(fd);
        return -1;
    }
    for (size_t at = 0; at < len; at += 100000) {
        size_t n = len - at < 100000 ? len - at : 100000;
        char size[32];
        int k = snprintf(size, sizeof size, "%zx\r\n", n);
        if (sv_send_all(fd, size, (size_t)k) < 0 || sv_send_all(fd, body + at, n) < 0 ||
            sv_send_all(fd, "\r\n", 2) < 0)
            break; /* refused early: read the answer */
    }
    sv_send_all(fd, "0\r\n\r\n", 5);
    return answer_status(fd, out, olen);
}

/* A large body is received into the mapping the last large body left
 * (strata_body_buffers_total{source="reused"}), and what that mapping
 * held before is never read: a shorter, truncated body after a longer,
 * well-formed one is refused at its own end. Chunked bodies without a
 * Content-Length, a Content-Length shorter than what is sent and a body
 * over the limit each get their clean 400 or 413, and the buffer comes
 * back for the next body. */
static void test_body_reuse(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "reuse", NULL), 0);
    const char *NEW = "strata_body_buffers_total{source=\"new\"}";
    const char *REUSED = "strata_body_buffers_total{source=\"reused\"}";
    /* A: {"pad": "aaa...a"}, 600,000 bytes of well-formed JSON (no such
     * field: 400 naming a field, not malformed JSON). */
    size_t alen = 600000;
    char *a = malloc(alen + 1);
    assert_non_null(a);
    memcpy(a, "{\"pad\": \"", 9);
    memset(a + 9, 'a', alen - 11);
    memcpy(a + alen - 2, "\"}", 2);
    a[alen] = '\0';
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, a, alen, &r), 400);
    assert_null(strstr(r.body, "malformed JSON"));
    sv_resp_free(&r);
    assert_true(series_now(p.port, NEW) == 1);
    assert_true(series_now(p.port, REUSED) == 0);
    /* B: A's first 300,000 bytes (the string never closes), into A's
     * buffer: refused at its own end, not completed by A's bytes. */
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, a, 300000, &r), 400);
    assert_non_null(strstr(r.body, "malformed JSON at line 1"));
    sv_resp_free(&r);
    assert_true(series_now(p.port, REUSED) == 1);
    /* C: B again, chunked without a Content-Length: the same answer. */
    char out[4096];
    assert_int_equal(chunked_status(p.port, a, 300000, out, sizeof out), 400);
    assert_non_null(strstr(out, "malformed JSON at line 1"));
    assert_true(series_now(p.port, REUSED) == 2);
    /* D: a Content-Length of 200,000 with A's 600,000 bytes behind it: the
     * body is the first 200,000 (malformed), the rest is no request. */
    int fd = sv_connect(p.port);
    static const char head[] = "POST /v1/cost HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n"
                               "\r\n";
    assert_int_equal(sv_send_all(fd, head, sizeof head - 1), 0);
    sv_send_all(fd, a, alen); /* the daemon may close before the end */
    char b[8192];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof b - 1 && (n = recv(fd, b + got, sizeof b - 1 - got, 0)) > 0)
        got += (size_t)n;
    close(fd);
    b[got] = '\0';
    assert_int_equal(strncmp(b, "HTTP/1.1 400", 12), 0);
    assert_non_null(strstr(b, "malformed JSON at line 1"));
    /* E: 1.5 MB chunked, over the 1 MiB limit: 413, and the buffer comes
     * back (F reuses it). */
    size_t elen = 1500000;
    char *e = malloc(elen);
    assert_non_null(e);
    memset(e, ' ', elen);
    assert_int_equal(chunked_status(p.port, e, elen, out, sizeof out), 413);
    assert_non_null(strstr(out, "request body over 1048576 bytes"));
    double reused = series_now(p.port, REUSED);
    assert_int_equal(sv_http(p.port, "POST", "/v1/cost", NULL, a, alen, &r), 400);
    assert_null(strstr(r.body, "malformed JSON"));
    sv_resp_free(&r);
    assert_true(series_now(p.port, REUSED) == reused + 1);
    assert_int_equal(sv_http(p.port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    sv_resp_free(&r);
    free(a);
    free(e);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_token_file(void **state) {
    (void)state;
    char dir[1024], tok[1100], yaml[1100], out[1100], pol[1200];
    snprintf(dir, sizeof dir, "%s/serve-limits-%d", sv_tmp(), (int)getpid());
    mkdir(sv_tmp(), 0777);
    mkdir(dir, 0777);
    snprintf(tok, sizeof tok, "%s/token", dir);
    FILE *f = fopen(tok, "wb");
    assert_non_null(f);
    fwrite("abc\0secret\n", 1, 11, f);
    fclose(f);
    sv_proc p;
    const char *args[] = {"--token-file", tok, NULL};
    assert_int_equal(sv_start(&p, "token-nul", args), -1);
    assert_int_equal(sv_log_count(&p, tok, "control byte 0x00 at offset 3", NULL), 1);

    /* A good token; /readyz names the policy file to its holder only. */
    assert_int_equal(sv_write_file(tok, "s3cret\n"), 0);
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", dir);
    assert_int_equal(sv_write_file(yaml,
        "cluster:\n  types:\n    - {name: gpu, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, "
        "net_bw: 8Gbit/s, mem: 10GB, price: 3.6}\n  zones: [{name: a}]\n  nodes:\n"
        "    - {name: n0, type: gpu, units: 4, zone: a, bw: 1GB/s}\njob:\n  name: tiny\n"
        "  batch: 10\n  samples: 3.6e6\n  min_throughput: 100\n  layers:\n"
        "    - {name: a, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"), 0);
    snprintf(out, sizeof out, "%s/run", dir);
    assert_int_equal(sv_train_search(yaml, 2, 1, out), 0);
    snprintf(pol, sizeof pol, "%s/last.h5", out);
    const char *args2[] = {"--token-file", tok, "--policy", pol, NULL};
    assert_int_equal(sv_start(&p, "token-ok", args2), 0);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/readyz", NULL, NULL, 0, &r), 200);
    assert_null(strstr(r.body, "last.h5"));
    assert_non_null(strstr(r.body, "\"hash\""));
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "GET", "/readyz", "Authorization: Bearer s3cret\r\n",
                             NULL, 0, &r), 200);
    assert_non_null(strstr(r.body, "last.h5"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_log_escaping(void **state) {
    (void)state;
    sv_proc p;
    assert_int_equal(sv_start(&p, "escape", NULL), 0);
    /* A key holding a forged log line and a terminal escape. */
    static const char body[] =
        "{\"cluster\": {\"types\": [], \"x\\n2099-01-01T00:00:00.000Z 6.6.6.6 GET /admin 200 "
        "0 0 0.1ms\\u001b[31m\": 1}, \"job\": {}}";
    sv_resp r;
    int st = sv_http(p.port, "POST", "/v1/cost", NULL, body, sizeof body - 1, &r);
    assert_int_equal(st, 400);
    json_t *o = sv_body_json(&r);
    const char *msg = json_string_value(json_object_get(o, "error"));
    assert_non_null(msg);
    assert_null(strchr(msg, '\n'));
    assert_null(strchr(msg, 0x1b));
    assert_non_null(strstr(msg, "x\\n2099-01-01T00:00:00.000Z 6.6.6.6"));
    assert_non_null(strstr(msg, "0.1ms\\e[31m"));
    json_decref(o);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    /* No log line starts with the forged text; no ESC byte is in the log. */
    FILE *f = fopen(p.log, "r");
    assert_non_null(f);
    char line[4096];
    int forged = 0, esc = 0, quoted = 0;
    while (fgets(line, sizeof line, f)) {
        forged += !strncmp(line, "2099-", 5);
        esc += strchr(line, 0x1b) != NULL;
        quoted += strstr(line, "POST /v1/cost 400") && strstr(line, "x\\n2099-01-01");
    }
    fclose(f);
    assert_int_equal(forged, 0);
    assert_int_equal(esc, 0);
    assert_int_equal(quoted, 1);
}

typedef struct {
    int port;
    const char *body;
    int status;
} slow_arg;

static void *slow_thread(void *v) {
    slow_arg *a = v;
    sv_resp r;
    a->status = sv_http(a->port, "POST", "/v1/solve", NULL, a->body, strlen(a->body), &r);
    sv_resp_free(&r);
    return NULL;
}

static void test_shutdown_bound(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--shutdown-ms", "1000", NULL};
    assert_int_equal(sv_start(&p, "shutdown", args), 0);
    char *body = sv_slow_solve_body(4, 6000);
    slow_arg a = {p.port, body, 0};
    pthread_t th;
    pthread_create(&th, NULL, slow_thread, &a);
    usleep(300000);
    double t0 = clock_now_s();
    int code = sv_wait(&p, SIGTERM, 10.0);
    double took = clock_now_s() - t0;
    pthread_join(th, NULL);
    printf("shutdown: exit %d after %.2f s with a 6 s request in flight\n", code, took);
    assert_int_equal(code, 1);
    assert_true(took < 1.5);
    assert_int_equal(sv_log_count(&p, "stopping anyway", NULL), 1);
    free(body);
}

static void test_probes_while_busy(void **state) {
    (void)state;
    sv_proc p;
    const char *args[] = {"--threads", "1", NULL};
    assert_int_equal(sv_start(&p, "probes", args), 0);
    char *body = sv_slow_solve_body(4, 1500);
    slow_arg a[2] = {{p.port, body, 0}, {p.port, body, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, slow_thread, &a[i]);
    usleep(300000); /* the one work slot is busy, a second request waits for it */
    double worst = 0;
    for (int k = 0; k < 10; k++) {
        sv_resp r;
        double ms;
        assert_int_equal(timed_get(p.port, k % 2 ? "/readyz" : "/healthz", NULL, &ms, &r),
                         k % 2 ? 503 : 200); /* no policy: readyz says so at once */
        if (ms > worst) worst = ms;
        sv_resp_free(&r);
    }
    printf("probes: worst %.1f ms with the work slot busy\n", worst);
    assert_true(worst < 100);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].status, 200);
    }
    free(body);
    assert_int_equal(sv_stop(&p), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slowloris),       cmocka_unit_test(test_idle_keepalive),
        cmocka_unit_test(test_body_budget),     cmocka_unit_test(test_conflicting_length),
        cmocka_unit_test(test_token_file),      cmocka_unit_test(test_log_escaping),
        cmocka_unit_test(test_shutdown_bound),  cmocka_unit_test(test_probes_while_busy),
        cmocka_unit_test(test_body_reuse),      cmocka_unit_test(test_busy_keepalive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
