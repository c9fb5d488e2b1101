/* serve_client.h -- starting `strata serve` and talking HTTP to it, for tests.
 *
 * The daemon tests are black-box: they run the real program
 * ($STRATA_BIN serve --listen 127.0.0.1:0 ...), read the port it bound
 * from its first line on stdout, and send requests over real loopback
 * sockets with a minimal HTTP/1.1 client written on POSIX sockets (one
 * connection per request, "Connection: close", read to EOF). The daemon's
 * stderr (its request log) goes to a file in $STRATA_TMP that tests read.
 *
 * Every wait is bounded: starting (10 s), each request (60 s), stopping
 * (30 s, then SIGKILL). No daemon outlives its test program: each is
 * killed when the program exits (an assertion that fails mid-test skips
 * sv_stop) and, through PR_SET_PDEATHSIG, when the program dies.
 *
 * Around the client, what several daemon tests set up alike: a small
 * policy checkpoint trained by the real program for the daemon to serve
 * (sv_train_search), a series read from /metrics and waited for
 * (sv_series, sv_wait_series), and a load generator for threads
 * (sv_load_thread). Shell commands run through tests/shell.h.
 */
#ifndef STRATA_TEST_SERVE_CLIENT_H
#define STRATA_TEST_SERVE_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/clock.h"
#include "tests/shell.h"

typedef struct {
    pid_t pid;
    int port;
    int ext_port;   /* the extender listener's (--extender-listen), or 0 */
    char log[1024]; /* the daemon's stderr */
} sv_proc;

typedef struct {
    int status;      /* HTTP status, or -1 when the exchange failed */
    char *head;      /* status line and headers */
    char *body;      /* NUL-terminated */
    size_t body_len;
} sv_resp;

static inline const char *sv_tmp(void) {
    const char *t = getenv("STRATA_TMP");
    return t && *t ? t : "/tmp";
}

/* sv_remove_db removes an SQLite state file and its -wal and -shm files. */
static inline void sv_remove_db(const char *path) {
    char p[1100];
    remove(path);
    snprintf(p, sizeof p, "%s-wal", path);
    remove(p);
    snprintf(p, sizeof p, "%s-shm", path);
    remove(p);
}

/* The daemons started and not yet reaped, killed at exit. */
#define SV_MAX_PROCS 64
static pid_t sv_live[SV_MAX_PROCS];

static void sv_kill_live(void) {
    for (int i = 0; i < SV_MAX_PROCS; i++)
        if (sv_live[i] > 0) {
            kill(sv_live[i], SIGKILL);
            waitpid(sv_live[i], NULL, 0);
            sv_live[i] = 0;
        }
}

static inline void sv_track(pid_t pid, int add) {
    static int registered;
    if (!registered) {
        atexit(sv_kill_live);
        registered = 1;
    }
    for (int i = 0; i < SV_MAX_PROCS; i++)
        if (add ? sv_live[i] == 0 : sv_live[i] == pid) {
            sv_live[i] = add ? pid : 0;
            return;
        }
}

/* Starts the daemon with extra arguments (NULL-terminated list); tag names
 * its log file. Returns 0 with p filled, or -1 (message on stderr). */
static inline int sv_start(sv_proc *p, const char *tag, const char *const *extra) {
    const char *bin = getenv("STRATA_BIN");
    if (!bin) {
        fprintf(stderr, "STRATA_BIN is not set\n");
        return -1;
    }
    memset(p, 0, sizeof *p);
    snprintf(p->log, sizeof p->log, "%s/serve-%s-%d.log", sv_tmp(), tag, (int)getpid());
    int fds[2];
    if (pipe(fds) < 0) return -1;
    const char *argv[64] = {"strata", "serve", "--listen", "127.0.0.1:0"};
    int argc = 4, want_ext = 0;
    for (int i = 0; extra && extra[i] && argc < 62; i++) {
        argv[argc++] = extra[i];
        want_ext |= !strcmp(extra[i], "--extender-listen");
    }
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int lf = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fds[1], 1);
        if (lf >= 0) dup2(lf, 2);
        close(fds[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    p->pid = pid;
    sv_track(pid, 1);
    char buf[512];
    size_t got = 0;
    double until = clock_now_s() + 10.0;
    while (clock_now_s() < until && got < sizeof buf - 1) {
        struct pollfd pf = {fds[0], POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0) continue;
        ssize_t n = read(fds[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
        buf[got] = '\0';
        const char *at = strstr(buf, "listening on 127.0.0.1:");
        const char *ext = strstr(buf, "extender on 127.0.0.1:");
        if (at && strchr(at, '\n') && (!want_ext || (ext && strchr(ext, '\n')))) {
            p->port = atoi(at + strlen("listening on 127.0.0.1:"));
            if (ext) p->ext_port = atoi(ext + strlen("extender on 127.0.0.1:"));
            break;
        }
    }
    close(fds[0]);
    if (p->port <= 0) {
        fprintf(stderr, "strata serve did not start (see %s)\n", p->log);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        sv_track(pid, 0);
        return -1;
    }
    return 0;
}

/* Waits for the daemon to exit (after sending sig when sig != 0); returns
 * its exit status, 128+signal when killed, or -1 when it had to be killed
 * after 30 s. */
static inline int sv_wait(sv_proc *p, int sig, double timeout) {
    if (sig) kill(p->pid, sig);
    double until = clock_now_s() + timeout;
    int st;
    while (clock_now_s() < until) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            sv_track(p->pid, 0);
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(5000);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    sv_track(p->pid, 0);
    return -1;
}

static inline int sv_stop(sv_proc *p) { return sv_wait(p, SIGTERM, 30.0); }

static inline void sv_resp_free(sv_resp *r) {
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Connects to 127.0.0.1:port from the local address `from` (NULL: any),
 * with send and receive timeouts of timeout_s; returns the socket or -1. */
static inline int sv_connect_from(int port, const char *from, int timeout_s) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    if (from) {
        inet_pton(AF_INET, from, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            close(fd);
            return -1;
        }
    }
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        /* With SO_SNDTIMEO set, Linux ends a blocked connect with EINTR
         * on any signal, even one ignored by default: the SIGCHLD of a
         * test's own system() (copy_file) while the listen queue is full
         * failed test_reload_under_load about once in 25 runs. The
         * connection goes on in the background: wait for it. */
        int ok = 0;
        if (errno == EINTR) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int n;
            do n = poll(&pf, 1, timeout_s * 1000);
            while (n < 0 && errno == EINTR);
            int e = 0;
            socklen_t el = sizeof e;
            ok = n == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0;
        }
        if (!ok) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Connects to 127.0.0.1:port; returns the socket or -1. */
static inline int sv_connect(int port) { return sv_connect_from(port, NULL, 60); }

/* A /v1/solve body that keeps the daemon busy for budget_ms: `random`
 * search over two types and n_layers layers (at most 16), with an
 * evaluation budget far beyond what that time allows. The caller frees it;
 * NULL when out of memory. */
static inline char *sv_slow_solve_body(int n_layers, int budget_ms) {
    char layers[16 * 128];
    size_t used = 0;
    for (int i = 0; i < n_layers && i < 16; i++)
        used += (size_t)snprintf(layers + used, sizeof layers - used,
                                 "%s{\"name\": \"l%d\", \"flops\": 1e9, \"io\": %s, \"act\": 1e3, "
                                 "\"params\": 1e6, \"mem\": 1e6}",
                                 i ? "," : "", i, i ? "0" : "1e3");
    char *b = NULL;
    if (asprintf(&b,
                 "{\"cluster\": {\"types\": ["
                 "{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": 1e13, \"io_bw\": 1e9, "
                 "\"net_bw\": 1e9, \"mem\": 1e10, \"price\": 3, \"count\": 64},"
                 "{\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": 1e12, \"io_bw\": 1e10, "
                 "\"net_bw\": 1e9, \"mem\": 1e11, \"price\": 1, \"count\": 64}]},"
                 " \"job\": {\"name\": \"j\", \"batch\": 10, \"samples\": 1e6, "
                 "\"min_throughput\": 100, \"layers\": [%s]},"
                 " \"options\": {\"method\": \"random\", \"budget_ms\": %d, "
                 "\"max_evals\": 100000000}}",
                 layers, budget_ms) < 0)
        return NULL;
    return b;
}

static inline int sv_send_all(int fd, const char *b, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends a request with a body (may be NULL) and extra header lines (each
 * ending in \r\n, may be NULL); reads the whole answer into r. Returns the
 * status, or -1 when the exchange failed. */
static inline int sv_http(int port, const char *method, const char *path, const char *headers,
                          const char *body, size_t len, sv_resp *r) {
    memset(r, 0, sizeof *r);
    r->status = -1;
    int fd = sv_connect(port);
    if (fd < 0) return -1;
    char head[4096];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      "Content-Length: %zu\r\n%s\r\n",
                      method, path, body ? len : 0, headers ? headers : "");
    if (sv_send_all(fd, head, (size_t)hn) < 0 || (body && sv_send_all(fd, body, len) < 0)) {
        close(fd);
        return -1;
    }
    size_t cap = 65536, got = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (got + 4096 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + got, cap - got - 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (got < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0 || !sep) {
        free(buf);
        return -1;
    }
    r->status = atoi(buf + 9);
    size_t hl = (size_t)(sep - buf);
    r->head = malloc(hl + 1);
    memcpy(r->head, buf, hl);
    r->head[hl] = '\0';
    r->body_len = got - hl - 4;
    r->body = malloc(r->body_len + 1);
    memcpy(r->body, sep + 4, r->body_len);
    r->body[r->body_len] = '\0';
    free(buf);
    return r->status;
}

/* Writes the value of header `name` into buf; returns buf, or NULL. */
static inline const char *sv_header(const sv_resp *r, const char *name, char *buf, size_t len) {
    size_t n = strlen(name);
    for (const char *l = r->head ? strstr(r->head, "\r\n") : NULL; l; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (strncasecmp(h, name, n) == 0 && h[n] == ':') {
            h += n + 1;
            while (*h == ' ') h++;
            const char *e = strstr(h, "\r\n");
            size_t m = e ? (size_t)(e - h) : strlen(h);
            if (m >= len) m = len - 1;
            memcpy(buf, h, m);
            buf[m] = '\0';
            return buf;
        }
    }
    return NULL;
}

/* POSTs (or PUTs...) a JSON document; steals doc. */
static inline int sv_json_req(int port, const char *method, const char *path, json_t *doc,
                              const char *headers, sv_resp *r) {
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    int st = sv_http(port, method, path, headers, text, strlen(text), r);
    free(text);
    return st;
}

/* The answer's body as JSON (caller owns it), or NULL. */
static inline json_t *sv_body_json(const sv_resp *r) {
    return json_loadb(r->body, r->body_len, 0, NULL);
}

/* Counts the lines of the daemon's log that contain every given needle
 * (NULL-terminated). */
static inline int sv_log_count(const sv_proc *p, ...) {
    FILE *f = fopen(p->log, "r");
    if (!f) return -1;
    const char *needles[8];
    int nn = 0;
    va_list ap;
    va_start(ap, p);
    const char *s;
    while ((s = va_arg(ap, const char *)) && nn < 8) needles[nn++] = s;
    va_end(ap);
    char line[4096];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        int all = 1;
        for (int i = 0; i < nn && all; i++) all = strstr(line, needles[i]) != NULL;
        count += all;
    }
    fclose(f);
    return count;
}

/* ---- set-up shared by the daemon tests ------------------------------------------------- */

/* Writes text to path (replacing it); returns 0, or -1 when it cannot. */
static inline int sv_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    return 0;
}

/* Trains a policy checkpoint with the real program: `$STRATA_BIN train
 * --search YAML --steps STEPS --seed SEED --out OUT --quiet` (a fraction
 * of a second for a small run), its output discarded; the checkpoint is
 * OUT/last.h5. Returns 0, or -1 after printing the command that failed. */
static inline int sv_train_search(const char *yaml, int steps, int seed, const char *out) {
    const char *bin = getenv("STRATA_BIN");
    if (!bin) {
        fprintf(stderr, "STRATA_BIN is not set\n");
        return -1;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' train --search '%s' --steps %d --seed %d --out '%s' --quiet >/dev/null 2>&1",
             bin, yaml, steps, seed, out);
    if (sh_run("%s", cmd) != 0) {
        fprintf(stderr, "strata train --search did not make a checkpoint: %s\n", cmd);
        return -1;
    }
    return 0;
}

/* The value of series `name` (with its labels, e.g.
 * strata_policy_loads_total{result="ok"}) on a /metrics page, or -1 when
 * the page has no such line. */
static inline double sv_series(const char *page, const char *name) {
    size_t n = strlen(name);
    for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return atof(l + n + 1);
    return -1;
}

/* Polls /metrics until series `name` reads value (10 s at most); returns 1
 * when it did, 0 when time ran out. */
static inline int sv_wait_series(int port, const char *name, double value) {
    double until = clock_now_s() + 10.0;
    while (clock_now_s() < until) {
        sv_resp r;
        int ok = sv_http(port, "GET", "/metrics", NULL, NULL, 0, &r) == 200 &&
                 sv_series(r.body, name) == value;
        sv_resp_free(&r);
        if (ok) return 1;
        usleep(20000);
    }
    return 0;
}

/* One load thread's work and tally (sv_load_thread): POSTs body to
 * /v1/place n times, or, with stop, at least n times and until *stop. */
typedef struct {
    int port;
    const char *body;
    const char *want;       /* a JSON object: an answer is ok when 200 and each key of
                               want has exactly want's value in it (json_equal) */
    const char *mark;       /* NULL, or ok answers containing it count in marked */
    int n;                  /* requests (with stop: at least) */
    atomic_int *stop;       /* NULL: exactly n requests */
    int ok, failed, marked; /* the tally */
    char first_error[256];  /* the first failed answer: "status S: BODY" */
} sv_load;

/* The body of a load thread (pthread_create with an sv_load *): sends the
 * requests sv_load describes and fills its tally. */
static inline void *sv_load_thread(void *v) {
    sv_load *a = v;
    json_t *want = json_loads(a->want, 0, NULL);
    for (int i = 0; i < a->n || (a->stop && !atomic_load(a->stop)); i++) {
        sv_resp r;
        int st = sv_http(a->port, "POST", "/v1/place", NULL, a->body, strlen(a->body), &r);
        json_t *got = st == 200 ? sv_body_json(&r) : NULL;
        int same = json_is_object(want) && json_is_object(got);
        const char *key;
        json_t *value;
        json_object_foreach(want, key, value) {
            if (!json_equal(json_object_get(got, key), value)) same = 0;
        }
        json_decref(got);
        if (same) {
            a->ok++;
            if (a->mark && strstr(r.body, a->mark)) a->marked++;
        } else {
            if (!a->failed)
                snprintf(a->first_error, sizeof a->first_error, "status %d: %.200s", st,
                         r.body ? r.body : "(no answer)");
            a->failed++;
        }
        sv_resp_free(&r);
    }
    json_decref(want);
    return NULL;
}

/* The extender tests' two types as a cluster's `types` list: "cpu" (1 TFLOPS,
 * 192 GB, $1/h) and "gpu" (100 TFLOPS, 16 GB, $3/h). Returns a new reference. */
static inline json_t *sv_two_types(void) {
    return json_pack("[{s:s, s:s, s:f, s:f, s:f, s:s, s:f},"
                     " {s:s, s:s, s:f, s:f, s:f, s:s, s:f}]",
                     "name", "cpu", "kind", "cpu", "flops", 1e12, "io_bw", 1e10, "net_bw", 1e9,
                     "mem", "192GB", "price", 1.0, "name", "gpu", "kind", "gpu", "flops", 1e14,
                     "io_bw", 1e9, "net_bw", 1e9, "mem", "16GB", "price", 3.0);
}

/* Their two-layer job: "emb" (100 GB: only the cpu type holds it) then "mlp"
 * (5e11 FLOP a sample: the gpu type is the cheap one). Returns a new reference. */
static inline json_t *sv_two_layer_job(void) {
    return json_pack("{s:i, s:f, s:i, s:f, s:[{s:s, s:f, s:i, s:f, s:i, s:s},"
                     " {s:s, s:f, s:i, s:f, s:i, s:s}]}",
                     "batch", 10, "samples", 1e6, "min_throughput", 100, "alpha", 0.05,
                     "layers", "name", "emb", "flops", 1e6, "io", 0, "act", 1e3, "params", 0,
                     "mem", "100GB", "name", "mlp", "flops", 5e11, "io", 0, "act", 1e3,
                     "params", 0, "mem", "1GB");
}

#endif
