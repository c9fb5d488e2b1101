/* serve.c -- `strata serve`: run the placement daemon.
 *
 *   strata serve [--policy FILE.h5] [--listen HOST:PORT] [--threads N]
 *                [--token-file F] [--max-layers N] [--max-nodes N]
 *                [--max-budget-ms N] [--quiet]
 *
 * Starts service/server on HOST:PORT (default 127.0.0.1:7878; port 0 picks
 * a free one), prints "strata serve: listening on HOST:PORT" on stdout once
 * it accepts connections, and logs one line per request on stderr (not
 * with --quiet). Signals are handled here, in the main thread: the signal
 * handler only writes the signal's number into a pipe (the one thing it
 * may safely do, whichever thread the kernel picks: libraries such as
 * OpenBLAS start threads of their own), and the main thread reads the pipe
 * and acts, so no work happens in a signal handler. The server's threads
 * start with the signals blocked, so that they are not interrupted.
 *
 *   SIGHUP           load the --policy file again; requests in flight finish
 *                    on the old policy; a file that fails to load leaves the
 *                    old one serving and the log says why
 *   SIGTERM, SIGINT  stop accepting, let requests in flight finish (up to
 *                    30 s), exit 0
 *
 * The token file holds one bearer token (surrounding whitespace ignored).
 * Exit status: 0 after a clean drain, 2 on bad usage or a policy, token or
 * address that does not load, 1 when requests were still running after
 * the drain timeout.
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

#include <cblas.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "service/server.h"

#define SERVE_USAGE                                                                          \
    "usage: strata serve [--policy FILE.h5] [--listen HOST:PORT] [--threads N]\n"            \
    "                    [--token-file F] [--max-layers N] [--max-nodes N]\n"                \
    "                    [--max-budget-ms N] [--quiet]\n"

#define SERVE_DRAIN_MS 30000

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

/* Reads the bearer token from path into a new string; NULL with a message.
 * The file must be a regular file (a FIFO is refused, not waited on) of at
 * most TOKEN_FILE_MAX bytes. */
static char *read_token(const char *path) {
    char *buf, why[256];
    size_t n;
    if (file_read(path, TOKEN_FILE_MAX, &buf, &n, NULL, why, sizeof why)) {
        fprintf(stderr, "strata: --token-file %s: %s\n", path, why);
        return NULL;
    }
    char *t = buf, *tok = NULL;
    while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r') t++;
    size_t len = strlen(t);
    while (len > 0 && (t[len - 1] == ' ' || t[len - 1] == '\t' || t[len - 1] == '\n' ||
                       t[len - 1] == '\r'))
        t[--len] = '\0';
    int bad = 0;
    for (size_t i = 0; i < len; i++) bad |= (unsigned char)t[i] <= ' ' || t[i] == 0x7f;
    if (len == 0)
        fprintf(stderr, "strata: --token-file %s: the file holds no token\n", path);
    else if (bad)
        fprintf(stderr, "strata: --token-file %s: the token may not contain spaces or "
                "control characters\n", path);
    else
        tok = strdup(t);
    free(buf);
    return tok;
}

int cmd_serve(int argc, char **argv) {
    static const struct option opts[] = {
        {"policy", required_argument, 0, 'p'},
        {"listen", required_argument, 0, 'l'},
        {"threads", required_argument, 0, 't'},
        {"token-file", required_argument, 0, 'T'},
        {"max-layers", required_argument, 0, 'L'},
        {"max-nodes", required_argument, 0, 'N'},
        {"max-budget-ms", required_argument, 0, 'B'},
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
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:l:t:T:L:N:B:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': cfg.policy_path = optarg; break;
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
        case 'q': cfg.log = NULL; break;
        case 'h': printf(SERVE_USAGE); return CLI_OK;
        default: fprintf(stderr, SERVE_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, SERVE_USAGE);
        return CLI_USAGE;
    }
    char *token = NULL;
    if (token_file && !(token = read_token(token_file))) return CLI_USAGE;
    /* Requests run in parallel on the server's threads; each policy decode
     * runs its small matrix products on its own thread. OpenBLAS's own
     * threads would only contend with the request threads (and with each
     * other across concurrent decodes). */
    openblas_set_num_threads(1);
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
    srv_log(s, "strata serve: listening on %s, %d threads, %s%s", where, cfg.threads,
            cfg.policy_path ? "policy " : "no policy (readyz 503; /v1/place needs plan_method)",
            cfg.policy_path ? cfg.policy_path : "");
    printf("strata serve: listening on %s\n", where);
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
                srv_log(s, "strata serve: SIGHUP: reloaded %s", cfg.policy_path);
            else
                srv_log(s, "strata serve: SIGHUP: reload failed, the old policy keeps serving: %s",
                        err);
            continue;
        }
        srv_log(s, "strata serve: %s: draining", sig == SIGINT ? "SIGINT" : "SIGTERM");
        int left = srv_drain(s, SERVE_DRAIN_MS);
        if (left > 0) {
            srv_log(s, "strata serve: %d requests still running after %d ms; stopping anyway",
                    left, SERVE_DRAIN_MS);
            status = CLI_FAIL;
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
