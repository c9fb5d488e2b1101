/* serve.c -- `strata serve`: run the placement daemon.
 *
 *   strata serve [--policy FILE.h5] [--sim-policy CKPT.h5] [--listen HOST:PORT] [--threads N]
 *                [--token-file F] [--max-layers N] [--max-nodes N]
 *                [--max-budget-ms N] [--max-conns N] [--max-conns-per-ip N]
 *                [--request-deadline-ms N] [--idle-timeout-s N]
 *                [--max-body-memory-mb N] [--shutdown-ms N] [--quiet]
 *                [--request-cpu-ms N] [--request-mem-mb N] [--jobs-max-mb N]
 *                [--max-k8s-body-mb N] [--catalogue FILE] [--plan-memo N]
 *                [--state FILE] [--cluster FILE] [--extender-listen HOST:PORT]
 *                [--kube-api URL [--kube-token-file F] [--kube-ca F]]
 *
 * Starts service/server on HOST:PORT (default 127.0.0.1:7878; port 0 picks
 * a free one), prints "strata serve: listening on HOST:PORT" on stdout once
 * it accepts connections, and logs one line per request on stderr (not
 * with --quiet). With --extender-listen it also prints "strata serve:
 * extender on HOST:PORT" (the same write), the listener kube-scheduler
 * calls without a token (service/server.h). Signals are handled here, in the main thread: the signal
 * handler only writes the signal's number into a pipe (the one thing it
 * may safely do, whichever thread the kernel picks: libraries such as
 * OpenBLAS start threads of their own), and the main thread reads the pipe
 * and acts, so no work happens in a signal handler. The server's threads
 * start with the signals blocked, so that they are not interrupted.
 *
 *   SIGHUP           load the --policy and --sim-policy files again; requests
 *                    in flight finish on the old policy; a file that fails to load leaves the
 *                    old one serving and the log says why
 *   SIGTERM, SIGINT  stop accepting, let requests in flight finish, exit 0;
 *                    the process is gone --shutdown-ms (25 s) after the
 *                    signal whatever is still running (exit 1 then): a
 *                    watchdog thread ends it, so that no handler and no
 *                    connection can hold it past the bound (the manifests
 *                    give 40 s)
 *
 * The token file holds one bearer token: surrounding spaces and one
 * trailing newline are ignored; a NUL or any other control byte refuses the
 * file (a NUL would otherwise cut the token short, silently).
 * Exit status: 0 after a clean drain, 2 on bad usage or a policy, token or
 * address that does not load, 1 when requests were still running at the
 * shutdown bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "service/kubeapi.h"
#include "service/server.h"

#define SERVE_USAGE                                                                          \
    "usage: strata serve [--policy FILE.h5] [--sim-policy CKPT.h5] [--listen HOST:PORT]\n"  \
    "                    [--threads N]\n"                                                  \
    "                    [--token-file F] [--max-layers N] [--max-nodes N]\n"                \
    "                    [--max-budget-ms N] [--max-conns N] [--max-conns-per-ip N]\n"  \
    "                    [--request-deadline-ms N] [--idle-timeout-s N]\n"                 \
    "                    [--max-body-memory-mb N] [--shutdown-ms N] [--quiet]\n"           \
    "                    [--request-cpu-ms N] [--request-mem-mb N] [--jobs-max-mb N]\n"   \
    "                    [--max-k8s-body-mb N] [--catalogue FILE] [--plan-memo N]\n"      \
    "                    [--state FILE] [--max-cluster-nodes N] [--cluster FILE]\n"         \
    "                    [--extender-listen HOST:PORT]\n"                                  \
    "                    [--kube-api URL [--kube-token-file F] [--kube-ca F]]\n"          \
    "\n"                                                                                    \
    "  --sim-policy CKPT.h5      the shared-cluster policy (strata train with mode: sim)\n" \
    "                            for /v1/place with options.on \"free\" and\n"            \
    "                            \"plan_method\": \"cluster-policy\" (docs/serve.md)\n"   \
    "  --extender-listen HOST:PORT  a second listener for kube-scheduler: /k8s/filter,\n"  \
    "                            /k8s/prioritize, /k8s/bind and the probes, no token;\n"   \
    "                            every other path gets 403 there (keep it on loopback)\n" \
    "  --kube-api URL            the API server POST /k8s/bind (the extender's bindVerb)\n" \
    "                            creates Bindings through; in a pod:\n"                   \
    "                            https://kubernetes.default.svc\n"                        \
    "  --kube-token-file F, --kube-ca F  its bearer token and CA bundle (defaults with\n"  \
    "                            --kube-api: the service account's, when present)\n"     \
    "  --catalogue FILE          instance types and GPU products the extender types\n"    \
    "                            nodes by (configs/catalogue/instances.yaml)\n"            \
    "  --state FILE              SQLite file keeping the registered jobs, their fixed\n"   \
    "                            plans and the units they take, across restarts and\n"   \
    "                            replicas (docs/serve.md); default: in memory only\n"     \
    "  --max-cluster-nodes N     nodes PUT /v1/cluster accepts (default 4096)\n"          \
    "  --cluster FILE            put the cluster of FILE (a run config or a cluster file)\n" \
    "                            as PUT /v1/cluster would, at start; it replaces a\n"     \
    "                            different cluster of --state (occupancy kept)\n"         \
    "\n"                                                                                    \
    "limits (docs/reliability.md):\n"                                                       \
    "  --threads N               requests computing at once (default: the CPUs)\n"         \
    "  --max-conns N             connections at once, all clients (default 512)\n"         \
    "  --max-conns-per-ip N      connections at once from one address (default 64)\n"      \
    "  --request-deadline-ms N   headers + body of one request, however slow (10000)\n"    \
    "  --idle-timeout-s N        a silent connection is closed after N s (default 10)\n"   \
    "  --max-body-memory-mb N    request bodies held at once, all connections (160)\n"     \
    "  --max-k8s-body-mb N       one /k8s/filter or /k8s/prioritize body (96: the Nodes\n"  \
    "                            form of 5,000 nodes); other bodies: 1 MiB\n"             \
    "  --shutdown-ms N           SIGTERM to exit, whatever runs (default 25000)\n"         \
    "  --request-cpu-ms N        time one decision may take, whatever it asks; 0: none\n"  \
    "                            (default 5000)\n"                                         \
    "  --request-mem-mb N        memory one policy decode may need; 0: none (256)\n"       \
    "  --jobs-max-mb N           memory of the registered jobs together; 0: none (64)\n"   \
    "  --plan-memo N             policy answers kept by their problem (the same job\n"    \
    "                            under another name); 0: none (default 1024)\n"          \
    "  --max-layers N, --max-nodes N, --max-budget-ms N   per request\n"

#define SERVE_SHUTDOWN_MS 25000

/* The signal handler's pipe: [0] read by the main thread, [1] written by
 * the handler. */
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(sig_pipe[1], &b, 1); /* a full pipe drops it: signals merge anyway */
    (void)w;
    errno = saved;
}

/* Writes one log line to stderr with a single write(2), so that lines from
 * concurrent requests never interleave. */
static void log_line(void *ud, const char *line) {
    (void)ud;
    char buf[2100];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) {
        n = (int)sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}

/* The longest token file read (docs/reliability.md). */
#define TOKEN_FILE_MAX 4096

/* Reads the bearer token from path into a new string; NULL with a message
 * naming the file. The file must be a regular file (a FIFO is refused, not
 * waited on) of at most TOKEN_FILE_MAX bytes. The whole file is checked, not
 * a C string of it: a NUL would end the token early. */
static char *read_token(const char *path) {
    char *buf, why[256];
    size_t n;
    if (file_read(path, TOKEN_FILE_MAX, &buf, &n, NULL, why, sizeof why)) {
        fprintf(stderr, "strata: --token-file %s: %s\n", path, why);
        return NULL;
    }
    char *tok = NULL;
    if (n > 0 && buf[n - 1] == '\n') n--; /* one trailing newline, maybe \r\n */
    if (n > 0 && buf[n - 1] == '\r') n--;
    size_t a = 0;
    while (a < n && buf[a] == ' ') a++;
    while (n > a && buf[n - 1] == ' ') n--;
    for (size_t i = a; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x20 || c == 0x7f) {
            fprintf(stderr, "strata: --token-file %s: control byte 0x%02x at offset %zu (a "
                    "token file holds the token and at most one trailing newline)\n",
                    path, c, i);
            goto done;
        }
        if (c == ' ') {
            fprintf(stderr, "strata: --token-file %s: the token may not contain spaces\n", path);
            goto done;
        }
    }
    if (n == a) {
        fprintf(stderr, "strata: --token-file %s: the file holds no token\n", path);
        goto done;
    }
    buf[n] = '\0';
    tok = strdup(buf + a);
done:
    free(buf);
    return tok;
}

/* The shutdown watchdog: started at SIGTERM, ends the process when the
 * bound passes, whatever the main thread is waiting for (a handler still
 * running, libmicrohttpd joining its threads). */
typedef struct {
    int ms;
    srv_server *s;
} watchdog_arg;

static void *watchdog_main(void *v) {
    watchdog_arg *w = v;
    struct timespec ts = {w->ms / 1000, (long)(w->ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
    srv_log(w->s, "strata serve: still stopping %d ms after the signal (--shutdown-ms); "
            "exiting now", w->ms);
    _exit(CLI_FAIL);
}

int cmd_serve(int argc, char **argv) {
    static const struct option opts[] = {
        {"policy", required_argument, 0, 'p'},
        {"sim-policy", required_argument, 0, 'P'},
        {"listen", required_argument, 0, 'l'},
        {"threads", required_argument, 0, 't'},
        {"token-file", required_argument, 0, 'T'},
        {"max-layers", required_argument, 0, 'L'},
        {"max-nodes", required_argument, 0, 'N'},
        {"max-budget-ms", required_argument, 0, 'B'},
        {"max-conns", required_argument, 0, 'C'},
        {"max-conns-per-ip", required_argument, 0, 'I'},
        {"request-deadline-ms", required_argument, 0, 'D'},
        {"idle-timeout-s", required_argument, 0, 'i'},
        {"max-body-memory-mb", required_argument, 0, 'M'},
        {"shutdown-ms", required_argument, 0, 'S'},
        {"request-cpu-ms", required_argument, 0, 'U'},
        {"request-mem-mb", required_argument, 0, 'R'},
        {"jobs-max-mb", required_argument, 0, 'J'},
        {"max-k8s-body-mb", required_argument, 0, 'K'},
        {"catalogue", required_argument, 0, 'c'},
        {"state", required_argument, 0, 'F'},
        {"max-cluster-nodes", required_argument, 0, 'O'},
        {"extender-listen", required_argument, 0, 'E'},
        {"cluster", required_argument, 0, 'G'},
        {"kube-api", required_argument, 0, 'A'},
        {"kube-token-file", required_argument, 0, 'X'},
        {"kube-ca", required_argument, 0, 'Y'},
        {"plan-memo", required_argument, 0, 'm'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    srv_config cfg;
    srv_config_default(&cfg);
    cfg.log = log_line;
    long long n;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.threads = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 2;
    const char *token_file = NULL;
    int shutdown_ms = SERVE_SHUTDOWN_MS;
    int k8s_body_set = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:P:l:t:T:L:N:B:C:I:D:i:M:S:U:R:J:K:c:F:O:E:G:A:X:Y:m:qh", opts,
                            NULL)) != -1) {
        switch (c) {
        case 'p': cfg.policy_path = optarg; break;
        case 'P': cfg.sim_policy_path = optarg; break;
        case 'l': cfg.listen = optarg; break;
        case 't':
            if (cli_parse_int("--threads", optarg, 1, 256, &n)) return CLI_USAGE;
            cfg.threads = (int)n;
            break;
        case 'T': token_file = optarg; break;
        case 'L':
            if (cli_parse_int("--max-layers", optarg, 1, MODEL_MAX_LAYERS, &n)) return CLI_USAGE;
            cfg.limits.max_layers = (int)n;
            break;
        case 'N':
            if (cli_parse_int("--max-nodes", optarg, 1, MODEL_MAX_NODES, &n)) return CLI_USAGE;
            cfg.limits.max_nodes = (int)n;
            break;
        case 'B':
            if (cli_parse_int("--max-budget-ms", optarg, 1, 3600000, &n)) return CLI_USAGE;
            cfg.max_budget_ms = n;
            break;
        case 'C':
            if (cli_parse_int("--max-conns", optarg, 1, 100000, &n)) return CLI_USAGE;
            cfg.max_conns = (int)n;
            break;
        case 'I':
            if (cli_parse_int("--max-conns-per-ip", optarg, 1, 100000, &n)) return CLI_USAGE;
            cfg.max_conns_per_ip = (int)n;
            break;
        case 'D':
            if (cli_parse_int("--request-deadline-ms", optarg, 10, 3600000, &n))
                return CLI_USAGE;
            cfg.request_deadline_ms = (int)n;
            break;
        case 'i':
            if (cli_parse_int("--idle-timeout-s", optarg, 1, 3600, &n)) return CLI_USAGE;
            cfg.idle_timeout_s = (int)n;
            break;
        case 'M':
            if (cli_parse_int("--max-body-memory-mb", optarg, 1, 1 << 20, &n)) return CLI_USAGE;
            cfg.body_budget = (size_t)n << 20;
            break;
        case 'S':
            if (cli_parse_int("--shutdown-ms", optarg, 100, 3600000, &n)) return CLI_USAGE;
            shutdown_ms = (int)n;
            break;
        case 'U':
            if (cli_parse_int("--request-cpu-ms", optarg, 0, 3600000, &n)) return CLI_USAGE;
            cfg.request_cpu_ms = (long)n;
            break;
        case 'R':
            if (cli_parse_int("--request-mem-mb", optarg, 0, 1 << 20, &n)) return CLI_USAGE;
            cfg.request_mem_bytes = (size_t)n << 20;
            break;
        case 'J':
            if (cli_parse_int("--jobs-max-mb", optarg, 0, 1 << 20, &n)) return CLI_USAGE;
            cfg.jobs_max_bytes = (size_t)n << 20;
            break;
        case 'K':
            if (cli_parse_int("--max-k8s-body-mb", optarg, 1, 4096, &n)) return CLI_USAGE;
            cfg.max_k8s_body = (size_t)n << 20;
            k8s_body_set = 1;
            break;
        case 'c': cfg.catalogue_path = optarg; break;
        case 'F': cfg.state_path = optarg; break;
        case 'O':
            if (cli_parse_int("--max-cluster-nodes", optarg, 1, MODEL_MAX_NODES, &n))
                return CLI_USAGE;
            cfg.max_cluster_nodes = (int)n;
            break;
        case 'E': cfg.extender_listen = optarg; break;
        case 'G': cfg.cluster_path = optarg; break;
        case 'A': cfg.kube_api = optarg; break;
        case 'X': cfg.kube_token_file = optarg; break;
        case 'Y': cfg.kube_ca = optarg; break;
        case 'm':
            if (cli_parse_int("--plan-memo", optarg, 0, 1 << 20, &n)) return CLI_USAGE;
            cfg.plan_memo_entries = (int)n;
            break;
        case 'q': cfg.log = NULL; break;
        case 'h': printf(SERVE_USAGE); return CLI_OK;
        default: fprintf(stderr, SERVE_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, SERVE_USAGE);
        return CLI_USAGE;
    }
    if ((cfg.kube_token_file || cfg.kube_ca) && !cfg.kube_api) {
        fprintf(stderr, "strata serve: --kube-token-file and --kube-ca go with --kube-api\n");
        return CLI_USAGE;
    }
    if (cfg.kube_api) { /* in a pod, the service account's files */
        if (!cfg.kube_token_file && access(KAPI_SA_TOKEN, R_OK) == 0)
            cfg.kube_token_file = KAPI_SA_TOKEN;
        if (!cfg.kube_ca && access(KAPI_SA_CA, R_OK) == 0) cfg.kube_ca = KAPI_SA_CA;
    }
    /* A smaller body budget lowers the default Nodes-form limit with it; an
     * explicit --max-k8s-body-mb over the budget could never be held. */
    if (!k8s_body_set && cfg.max_k8s_body > cfg.body_budget) cfg.max_k8s_body = cfg.body_budget;
    if (cfg.max_k8s_body > cfg.body_budget) {
        fprintf(stderr, "strata serve: --max-k8s-body-mb %zu is over --max-body-memory-mb %zu: "
                "no Nodes-form call that large could be held\n", cfg.max_k8s_body >> 20,
                cfg.body_budget >> 20);
        return CLI_USAGE;
    }
    char *token = NULL;
    if (token_file && !(token = read_token(token_file))) return CLI_USAGE;
    /* Requests run in parallel on the server's threads; each policy decode
     * runs its small matrix products on its own thread. OpenBLAS's own
     * threads would only contend with the request threads (and with each
     * other across concurrent decodes). */
    cli_blas_one_thread();
    cfg.token = token;

    /* The server's threads inherit a mask that blocks the signals; the
     * handler (any thread) forwards them to the main thread's pipe. */
    if (pipe(sig_pipe) < 0) {
        fprintf(stderr, "strata: pipe: %s\n", strerror(errno));
        free(token);
        return CLI_FAIL;
    }
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t set, old_mask;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old_mask);

    char err[2048];
    srv_server *s = srv_start(&cfg, err, sizeof err);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL); /* the main thread takes them again */
    free(token);
    if (!s) {
        fprintf(stderr, "strata: %s\n", err);
        close(sig_pipe[0]);
        close(sig_pipe[1]);
        return CLI_USAGE;
    }
    char where[160];
    const char *colon = strrchr(cfg.listen, ':');
    snprintf(where, sizeof where, "%.*s:%d", (int)(colon ? colon - cfg.listen : 0), cfg.listen,
             srv_port(s));
    srv_log(s, "strata serve: listening on %s, %d threads, %s%s%s%s", where, cfg.threads,
            cfg.policy_path ? "policy " : "no policy (readyz 503; /v1/place needs plan_method)",
            cfg.policy_path ? cfg.policy_path : "",
            cfg.sim_policy_path ? ", sim policy " : "",
            cfg.sim_policy_path ? cfg.sim_policy_path : "");
    if (cfg.extender_listen) {
        char ext[160];
        const char *ec = strrchr(cfg.extender_listen, ':');
        snprintf(ext, sizeof ext, "%.*s:%d", (int)(ec ? ec - cfg.extender_listen : 0),
                 cfg.extender_listen, srv_extender_port(s));
        srv_log(s, "strata serve: extender verbs on %s, without the token", ext);
        /* one write: a reader of the first line finds the second with it */
        printf("strata serve: listening on %s\nstrata serve: extender on %s\n", where, ext);
    } else {
        printf("strata serve: listening on %s\n", where);
    }
    fflush(stdout);

    int status = CLI_OK;
    for (;;) {
        unsigned char b;
        ssize_t got = read(sig_pipe[0], &b, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* cannot happen: we hold the write end */
        int sig = b;
        if (sig == SIGHUP) {
            if (srv_reload(s, err, sizeof err) == 0)
                srv_log(s, "strata serve: SIGHUP: reloaded %s%s%s",
                        cfg.policy_path ? cfg.policy_path : "",
                        cfg.policy_path && cfg.sim_policy_path ? " and " : "",
                        cfg.sim_policy_path ? cfg.sim_policy_path : "");
            else
                srv_log(s, "strata serve: SIGHUP: reload failed, the old policy keeps serving: %s",
                        err);
            continue;
        }
        srv_log(s, "strata serve: %s: draining (exit within %d ms)",
                sig == SIGINT ? "SIGINT" : "SIGTERM", shutdown_ms);
        static watchdog_arg wa;
        wa.ms = shutdown_ms;
        wa.s = s;
        pthread_t wd;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int wd_ok = pthread_create(&wd, &at, watchdog_main, &wa) == 0;
        pthread_attr_destroy(&at);
        /* The drain gets the bound less a margin for stopping the threads. */
        int drain_ms = shutdown_ms - (shutdown_ms / 10 < 1000 ? shutdown_ms / 10 : 1000);
        int left = srv_drain(s, drain_ms);
        if (left > 0 || !wd_ok) {
            /* srv_free would wait for the handlers still running: the
             * bound is what counts, so the process ends here. */
            srv_log(s, "strata serve: %d requests still running after %d ms; stopping anyway",
                    left, drain_ms);
            _exit(CLI_FAIL);
        }
        break;
    }
    srv_free(s);
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    if (cfg.log) log_line(NULL, "strata serve: stopped");
    return status;
}
