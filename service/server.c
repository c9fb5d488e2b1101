/* server.c -- libmicrohttpd glue: accept, read bodies, route, answer, log.
 *
 * libmicrohttpd calls on_access several times per request: once when the
 * headers are in (we set up a request context, decide whether the request
 * is authorised and whether its body may be kept), once per chunk of body
 * (appended up to max_body, or discarded), and once with no data when the
 * body is complete: then the handler runs and the reply is queued. Bodies
 * are always read to their end, even when refused, so that the client
 * reliably receives the 401 or 413 instead of a reset connection; a body
 * announced or sent beyond SRV_HARD_BODY bytes closes the connection.
 *
 * Threads: a pool of `threads` libmicrohttpd threads on epoll, each
 * running handlers to completion. Shared state (policy slot, cache, jobs,
 * metrics) is thread-safe on its own.
 */
#include "service/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "service/k8s.h"
#include "service/metrics.h"

#define SRV_HARD_BODY (64u << 20) /* beyond this, refused bodies are not even read */

struct srv_server {
    srv_config cfg;
    char *policy_path; /* owned copy */
    char *token;       /* owned copy, or NULL */
    size_t token_len;
    struct MHD_Daemon *mhd;
    int listen_fd;     /* after quiesce: ours to close after stopping */
    int port;
    metrics *m;
    api_env env;
    api_counters counters;
    k8s_env k8s;       /* the same policy, jobs and limits as env */
    atomic_int inflight;
    atomic_int draining;
};

/* One request in progress. */
typedef struct {
    uint64_t start_ns;
    metrics_route route;
    int auth_ok;
    int too_big;       /* the body passed max_body: discarded, 413 */
    char *body;
    size_t len, cap;
    size_t received;   /* body bytes received, kept or not */
    srv_server *s;
} req_ctx;

/* Body buffers: each request thread keeps the last one it freed (up to
 * SPARE_MAX bytes) for its next request, so that the steady state of a
 * busy daemon allocates no body buffer at all. The spare lives in a
 * thread-specific slot whose destructor frees it when the thread ends. */
#define SPARE_MAX (256u << 10)

typedef struct {
    char *buf;
    size_t cap;
} spare;

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_destroy(void *p) {
    spare *sp = p;
    free(sp->buf);
    free(sp);
}

static void spare_init(void) { pthread_key_create(&spare_key, spare_destroy); }

/* This thread's spare slot, or NULL when out of memory. */
static spare *my_spare(void) {
    pthread_once(&spare_once, spare_init);
    spare *sp = pthread_getspecific(spare_key);
    if (!sp && (sp = calloc(1, sizeof *sp)) && pthread_setspecific(spare_key, sp) != 0) {
        free(sp);
        sp = NULL;
    }
    return sp;
}

/* Returns a buffer of at least n bytes (*cap gets its size), or NULL. */
static char *body_alloc(size_t n, size_t *cap) {
    spare *sp = my_spare();
    if (sp && sp->buf && sp->cap >= n) {
        char *b = sp->buf;
        *cap = sp->cap;
        sp->buf = NULL;
        sp->cap = 0;
        return b;
    }
    char *b = malloc(n);
    *cap = b ? n : 0;
    return b;
}

/* Gives a buffer back: kept as this thread's spare when it is small enough
 * and larger than the spare it has. */
static void body_release(char *b, size_t cap) {
    if (!b) return;
    spare *sp = cap <= SPARE_MAX ? my_spare() : NULL;
    if (sp && (!sp->buf || sp->cap < cap)) {
        free(sp->buf);
        sp->buf = b;
        sp->cap = cap;
        return;
    }
    free(b);
}

void srv_config_default(srv_config *c) {
    memset(c, 0, sizeof *c);
    c->listen = SRV_DEFAULT_LISTEN;
    c->threads = 2;
    c->max_body = SRV_DEFAULT_MAX_BODY;
    c->limits.max_layers = RJ_DEFAULT_MAX_LAYERS;
    c->limits.max_nodes = RJ_DEFAULT_MAX_NODES;
    c->limits.max_types = RJ_DEFAULT_MAX_TYPES;
    c->max_budget_ms = API_DEFAULT_MAX_BUDGET_MS;
    c->cache_entries = 64;
    c->cache_bytes = 64u << 20;
    c->max_jobs = JOBS_DEFAULT_MAX;
}

void srv_log(srv_server *s, const char *fmt, ...) {
    if (!s->cfg.log) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->cfg.log(s->cfg.log_ud, line);
}

/* ---- routing ------------------------------------------------------------------------ */

/* Maps a path to its route; *name gets {name} of /v1/jobs/{name}. */
static metrics_route route_of(const char *path, const char **name) {
    static const struct {
        const char *path;
        metrics_route r;
    } fixed[] = {
        {"/v1/place", METRICS_PLACE},     {"/v1/cost", METRICS_COST},
        {"/v1/solve", METRICS_SOLVE},     {"/v1/jobs", METRICS_JOBS},
        {"/k8s/filter", METRICS_K8S_FILTER}, {"/k8s/prioritize", METRICS_K8S_PRIORITIZE},
        {"/healthz", METRICS_HEALTHZ},    {"/readyz", METRICS_READYZ},
        {"/metrics", METRICS_METRICS},
    };
    *name = NULL;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(path, fixed[i].path)) return fixed[i].r;
    static const char jobs[] = "/v1/jobs/";
    if (!strncmp(path, jobs, sizeof jobs - 1) && path[sizeof jobs - 1] &&
        !strchr(path + sizeof jobs - 1, '/')) {
        *name = path + sizeof jobs - 1;
        return METRICS_JOBS;
    }
    return METRICS_OTHER;
}

/* The methods a route accepts, as an Allow header value. */
static const char *allowed_methods(metrics_route r, int with_name) {
    switch (r) {
    case METRICS_PLACE:
    case METRICS_COST:
    case METRICS_SOLVE:
    case METRICS_K8S_FILTER:
    case METRICS_K8S_PRIORITIZE: return "POST";
    case METRICS_JOBS: return with_name ? "GET, HEAD, PUT, DELETE" : "GET, HEAD";
    case METRICS_HEALTHZ:
    case METRICS_READYZ:
    case METRICS_METRICS: return "GET, HEAD";
    default: return "";
    }
}

static int method_allowed(const char *allow, const char *method) {
    size_t n = strlen(method);
    for (const char *p = allow; (p = strstr(p, method)); p += n)
        if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

/* ---- authentication ------------------------------------------------------------------ */

/* Compares the header's token with ours in time independent of where they
 * differ. */
static int token_ok(const srv_server *s, const char *header) {
    if (!s->token) return 1;
    if (!header || strncasecmp(header, "Bearer ", 7) != 0) return 0;
    const char *t = header + 7;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    unsigned char diff = (unsigned char)(n != s->token_len);
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)((i < n ? (unsigned char)t[i] : 0) ^ (unsigned char)s->token[i]);
    return diff == 0;
}

/* ---- the small endpoints --------------------------------------------------------------- */

static void handle_healthz(web_reply *rep) {
    web_reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
}

static void handle_readyz(srv_server *s, web_reply *rep) {
    if (atomic_load(&s->draining)) {
        web_reply_json(rep, 503, json_pack("{s:b, s:s}", "ready", 0, "reason", "draining"));
        return;
    }
    const pslot_entry *pol = pslot_acquire(s->env.policy);
    if (!pol)
        web_reply_json(rep, 503, json_pack("{s:b, s:s}", "ready", 0, "reason",
                                           "no policy loaded"));
    else
        web_reply_json(rep, 200, json_pack("{s:b, s:o}", "ready", 1, "policy",
                                           api_policy_json(pol)));
    pslot_release(s->env.policy, pol);
}

static void handle_metrics(srv_server *s, web_reply *rep) {
    metrics_extra x;
    memset(&x, 0, sizeof x);
    const pslot_entry *pol = pslot_acquire(s->env.policy);
    if (pol) {
        x.policy_loaded = 1;
        x.policy_step = pol->step;
        x.policy_loaded_at = pol->loaded_at;
        x.policy_load_seconds = pol->load_seconds;
        x.policy_generation = pol->generation;
    }
    pslot_release(s->env.policy, pol);
    pslot_counts(s->env.policy, &x.reloads_ok, &x.reloads_failed);
    x.inflight = atomic_load(&s->inflight);
    x.jobs = jobs_count(s->env.jobs);
    rc_stats(s->env.cache, &x.cache_hits, &x.cache_misses, &x.cache_entries);
    x.memo_hits = atomic_load(&s->counters.memo_hits);
    x.memo_misses = atomic_load(&s->counters.memo_misses);
    size_t len = 0;
    char *page = metrics_render(s->m, &x, &len);
    if (!page) {
        web_reply_error(rep, 500, "out of memory");
        return;
    }
    free(rep->body);
    rep->body = page;
    rep->len = len;
    rep->status = 200;
    rep->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- libmicrohttpd callbacks ------------------------------------------------------------ */

/* Copies path into buf for the log, escaping what is not printable. */
static void printable(char *buf, size_t len, const char *path) {
    size_t j = 0;
    for (size_t i = 0; path[i] && j + 5 < len && i < 200; i++) {
        unsigned char c = (unsigned char)path[i];
        if (isprint(c) && c != ' ' && c != '"' && c != '\\') buf[j++] = (char)c;
        else j += (size_t)snprintf(buf + j, len - j, "%%%02X", c);
    }
    buf[j] = '\0';
}

static void log_request(srv_server *s, struct MHD_Connection *conn, const char *method,
                        const char *path, const req_ctx *rc, const web_reply *rep, double ms) {
    if (!s->cfg.log) return;
    char when[40], addr[INET6_ADDRSTRLEN] = "-", p[256];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
    }
    printable(p, sizeof p, path);
    srv_log(s, "%s %s %s %s %d %zu %zu %.3fms%s%s", when, addr, method, p, rep->status,
            rc->received, rep->len, ms, rep->note[0] ? " " : "", rep->note);
}

static enum MHD_Result queue_reply(srv_server *s, struct MHD_Connection *conn, req_ctx *rc,
                                   const char *method, const char *path, web_reply *rep) {
    struct MHD_Response *resp;
    if (rep->body)
        resp = MHD_create_response_from_buffer(rep->len, rep->body, MHD_RESPMEM_MUST_FREE);
    else
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        web_reply_clear(rep);
        return MHD_NO;
    }
    rep->body = NULL; /* MHD owns and frees it now */
    if (rep->status != 204)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                rep->content_type ? rep->content_type : "application/json");
    for (int i = 0; i < rep->n_headers; i++)
        MHD_add_response_header(resp, rep->header_name[i], rep->header_value[i]);
    if (atomic_load(&s->draining) || rc->too_big)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    double seconds = (double)(web_now_ns() - rc->start_ns) / 1e9;
    metrics_observe(s->m, rc->route, rep->status, seconds);
    log_request(s, conn, method, path, rc, rep, seconds * 1e3);
    return r;
}

static void dispatch(srv_server *s, req_ctx *rc, const char *method, const char *path,
                     const char *name, web_reply *rep) {
    const char *allow = allowed_methods(rc->route, name != NULL);
    if (rc->route == METRICS_OTHER) {
        char p[128];
        printable(p, sizeof p, path);
        web_reply_error(rep, 404, "no such endpoint: %s", p);
        return;
    }
    if (!method_allowed(allow, method)) {
        web_reply_error(rep, 405, "%s %s: method not allowed (allowed: %s)", method,
                        metrics_route_label(rc->route), allow);
        web_reply_header(rep, MHD_HTTP_HEADER_ALLOW, allow);
        return;
    }
    if (!rc->auth_ok) {
        web_reply_error(rep, 401, "missing or wrong bearer token (send Authorization: Bearer "
                        "TOKEN)");
        web_reply_header(rep, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"strata\"");
        return;
    }
    if (rc->too_big) {
        web_reply_error(rep, 413, "request body over %zu bytes (received %zu)", s->cfg.max_body,
                        rc->received);
        return;
    }
    web_request req = {method, path, rc->body ? rc->body : "", rc->len, rc->start_ns};
    switch (rc->route) {
    case METRICS_PLACE: api_place(&s->env, &req, rep); break;
    case METRICS_COST: api_cost(&s->env, &req, rep); break;
    case METRICS_SOLVE: api_solve(&s->env, &req, rep); break;
    case METRICS_JOBS: api_jobs(&s->env, &req, name, rep); break;
    case METRICS_K8S_FILTER: k8s_filter(&s->k8s, &req, rep); break;
    case METRICS_K8S_PRIORITIZE: k8s_prioritize(&s->k8s, &req, rep); break;
    case METRICS_HEALTHZ: handle_healthz(rep); break;
    case METRICS_READYZ: handle_readyz(s, rep); break;
    case METRICS_METRICS: handle_metrics(s, rep); break;
    default: web_reply_error(rep, 404, "no such endpoint"); break;
    }
}

/* Appends body bytes, or counts them when refused or over the limit. */
static int take_body(srv_server *s, req_ctx *rc, const char *data, size_t n) {
    rc->received += n;
    if (rc->received > SRV_HARD_BODY) return -1;
    if (rc->too_big || !rc->auth_ok) return 0;
    if (rc->len + n > s->cfg.max_body) {
        rc->too_big = 1;
        body_release(rc->body, rc->cap);
        rc->body = NULL;
        rc->len = rc->cap = 0;
        return 0;
    }
    if (rc->len + n + 1 > rc->cap) {
        size_t cap = rc->cap ? rc->cap : 4096;
        while (cap < rc->len + n + 1) cap *= 2;
        if (cap > s->cfg.max_body + 1) cap = s->cfg.max_body + 1;
        size_t got;
        char *b = body_alloc(cap, &got);
        if (!b) return -1;
        if (rc->len) memcpy(b, rc->body, rc->len);
        body_release(rc->body, rc->cap);
        rc->body = b;
        rc->cap = got;
    }
    memcpy(rc->body + rc->len, data, n);
    rc->len += n;
    rc->body[rc->len] = '\0';
    return 0;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    req_ctx *rc = *con_cls;
    const char *name = NULL;
    if (!rc) { /* the headers are in */
        rc = calloc(1, sizeof *rc);
        if (!rc) return MHD_NO;
        rc->s = s;
        rc->start_ns = web_now_ns();
        rc->route = route_of(url, &name);
        atomic_fetch_add(&s->inflight, 1);
        *con_cls = rc;
        rc->auth_ok = rc->route == METRICS_HEALTHZ || rc->route == METRICS_READYZ ||
                      token_ok(s, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                              MHD_HTTP_HEADER_AUTHORIZATION));
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (n > SRV_HARD_BODY) { /* not worth reading: answer and close */
                rc->too_big = 1;
                rc->received = (size_t)(n > SIZE_MAX ? SIZE_MAX : n);
                web_reply rep;
                memset(&rep, 0, sizeof rep);
                web_reply_error(&rep, 413, "request body of %llu bytes is over %zu bytes", n,
                                s->cfg.max_body);
                return queue_reply(s, conn, rc, method, url, &rep);
            }
            if (n > s->cfg.max_body) rc->too_big = 1;
            else if (n > 0 && rc->auth_ok) {
                rc->body = body_alloc((size_t)n + 1, &rc->cap);
                if (!rc->body) return MHD_NO;
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (take_body(s, rc, upload_data, *upload_size) < 0) return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    route_of(url, &name);
    web_reply rep;
    memset(&rep, 0, sizeof rep);
    dispatch(s, rc, method, url, name, &rep);
    enum MHD_Result r = queue_reply(s, conn, rc, method, url, &rep);
    free(rep.body);
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)conn, (void)toe;
    srv_server *s = cls;
    req_ctx *rc = *con_cls;
    if (!rc) return;
    body_release(rc->body, rc->cap);
    free(rc);
    *con_cls = NULL;
    atomic_fetch_sub(&s->inflight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    srv_server *s = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') msg[--n] = '\0';
    srv_log(s, "libmicrohttpd: %s", msg);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

/* Parses "HOST:PORT" into a socket address. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, socklen_t *sl, int *v6,
                        char *err, size_t errlen) {
    char host[128];
    const char *colon;
    memset(ss, 0, sizeof *ss);
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof host) goto bad;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || (size_t)(colon - text) >= sizeof host || colon == text) goto bad;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535) goto bad;
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *sl = sizeof *a4;
        *v6 = 0;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *sl = sizeof *a6;
        *v6 = 1;
        return 0;
    }
bad:
    snprintf(err, errlen, "--listen: expected HOST:PORT with a numeric address (127.0.0.1:7878, "
             "[::1]:7878, 0.0.0.0:7878), got \"%s\"", text);
    return -1;
}

srv_server *srv_start(const srv_config *c, char *err, size_t errlen) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    s->listen_fd = -1;
    atomic_init(&s->inflight, 0);
    atomic_init(&s->draining, 0);
    if (s->cfg.threads < 1) s->cfg.threads = 1;
    if (c->policy_path) s->policy_path = strdup(c->policy_path);
    if (c->token) {
        s->token = strdup(c->token);
        s->token_len = s->token ? strlen(s->token) : 0;
    }
    s->m = metrics_create();
    s->env.policy = pslot_create();
    s->env.jobs = jobs_create(c->max_jobs);
    s->env.cache = rc_create(c->cache_entries, c->cache_bytes);
    s->env.limits = c->limits;
    s->env.max_budget_ms = c->max_budget_ms;
    s->env.counters = &s->counters;
    s->k8s = (k8s_env){s->env.policy, s->env.jobs, s->env.limits, s->env.max_budget_ms};
    if (!s->m || !s->env.policy || !s->env.jobs || !s->env.cache ||
        (c->policy_path && !s->policy_path) || (c->token && !s->token)) {
        snprintf(err, errlen, "out of memory");
        srv_free(s);
        return NULL;
    }
    if (s->policy_path) {
        char msg[1024];
        if (pslot_load(s->env.policy, s->policy_path, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "--policy: %s", msg);
            srv_free(s);
            return NULL;
        }
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    int v6;
    if (parse_listen(c->listen ? c->listen : SRV_DEFAULT_LISTEN, &ss, &sl, &v6, err, errlen)) {
        srv_free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0) | MHD_USE_ERROR_LOG;
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(s->cfg.threads > 1 ? s->cfg.threads : 0),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)256, MHD_OPTION_END);
    if (!s->mhd) {
        snprintf(err, errlen, "cannot listen on %s (address in use, or not an address of this "
                 "machine?)", c->listen ? c->listen : SRV_DEFAULT_LISTEN);
        srv_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_LISTEN_FD);
    if (di) {
        struct sockaddr_storage bound;
        socklen_t bl = sizeof bound;
        if (getsockname(di->listen_fd, (struct sockaddr *)&bound, &bl) == 0)
            s->port = ntohs(bound.ss_family == AF_INET6
                                ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                : ((struct sockaddr_in *)&bound)->sin_port);
    }
    return s;
}

int srv_port(const srv_server *s) { return s->port; }

int srv_reload(srv_server *s, char *err, size_t errlen) {
    if (!s->policy_path) {
        snprintf(err, errlen, "no --policy was given: nothing to reload");
        return -1;
    }
    return pslot_load(s->env.policy, s->policy_path, err, errlen);
}

int srv_drain(srv_server *s, int timeout_ms) {
    atomic_store(&s->draining, 1);
    if (s->mhd && s->listen_fd < 0) {
        MHD_socket fd = MHD_quiesce_daemon(s->mhd);
        if (fd != MHD_INVALID_SOCKET) s->listen_fd = fd;
    }
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int waited = 0; waited < timeout_ms; waited += 5) {
        if (atomic_load(&s->inflight) == 0) return 0;
        nanosleep(&tick, NULL);
    }
    return atomic_load(&s->inflight);
}

void srv_free(srv_server *s) {
    if (!s) return;
    if (s->mhd) MHD_stop_daemon(s->mhd);
    if (s->listen_fd >= 0) close(s->listen_fd);
    rc_free(s->env.cache);
    jobs_free(s->env.jobs);
    pslot_free(s->env.policy);
    metrics_free(s->m);
    free(s->policy_path);
    free(s->token);
    free(s);
}
