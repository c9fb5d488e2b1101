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
 * Threads: libmicrohttpd runs one thread per connection (so /healthz and
 * /readyz never wait behind another connection's work) and the computing
 * routes take one of `threads` work slots (a semaphore) around their
 * handler. Shared state (policy slot, cache, jobs, metrics) is thread-safe
 * on its own.
 *
 * Connections are tracked here too (libmicrohttpd's connection
 * notifications): each has a state (reading a request, working on one,
 * idle between two) and the time it entered it. A reaper thread closes
 * (shutdown(2) on the socket; libmicrohttpd's thread then sees the end and
 * cleans up) every connection that has been reading one request for longer
 * than request_deadline_ms, which libmicrohttpd's own timeout cannot do: it
 * restarts on every byte. A new connection that finds max_conns open
 * closes the connection idle longest (else the one reading its request
 * longest) to take its place.
 *
 * Body memory: bodies grow as their bytes arrive (never on the declared
 * Content-Length), large buffers are mapped pages, and all buffers
 * together are charged to a budget of body_budget bytes; a request that
 * would pass it gets 503. A freed mapping is not unmapped at once: the
 * largest one is kept as a spare with its pages marked free (MADV_FREE),
 * which the kernel takes back only when it needs the memory, and the next
 * large body is received into it. A 74 MB Nodes-form body into fresh
 * pages cost some 15 ms of page faults and zeroing per call; into the
 * spare, none. The spare is not charged to the budget: its pages are
 * reclaimable, and it is at most one body.
 */
#include "service/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "service/cluster.h"
#include "service/k8s.h"
#include "service/kubeapi.h"
#include "service/metrics.h"

#define SRV_HARD_BODY (64u << 20) /* beyond this, refused bodies are not even read */
#define SRV_TRIM_KEEP (16 << 20) /* free heap memory glibc keeps (srv_start) */
#define SERVER_CLUSTERS_KEPT 8 /* clusters of /v1/place bodies kept by their bytes (api.h) */

/* A connection's state, for the reaper. */
enum { CT_READING, CT_WORKING, CT_IDLE };

/* One open connection (libmicrohttpd's socket context). The list and fd
 * are guarded by srv_server.conn_lock: libmicrohttpd closes the socket only
 * after its CLOSED notification has unlinked the entry, so a shutdown(2)
 * made under the lock always reaches the right socket. */
typedef struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    int cut;                 /* shut down by us already */
    atomic_int state;        /* CT_* */
    _Atomic uint64_t since;  /* web_now_ns() when it entered that state */
} conn_track;

struct srv_server {
    srv_config cfg;
    char *policy_path; /* owned copy */
    char *sim_policy_path; /* owned copy, or NULL */
    char *token;       /* owned copy, or NULL */
    size_t token_len;
    struct MHD_Daemon *mhd;
    int listen_fd;     /* after quiesce: ours to close after stopping */
    int port;
    struct MHD_Daemon *ext_mhd; /* the extender listener (cfg.extender_listen), or NULL */
    int ext_listen_fd; /* after quiesce, as listen_fd */
    int ext_port;
    metrics *m;
    api_env env;
    api_counters counters;
    k8s_env k8s;       /* the same policy, jobs and limits as env */
    imp_catalogue *catalogue; /* cfg.catalogue_path's, or NULL */
    kapi_client *kube;        /* cfg.kube_api's, or NULL */
    atomic_int inflight;
    atomic_int draining;
    sem_t work;                  /* cfg.threads slots for the computing routes */
    int work_ok;                 /* work was initialised */
    _Atomic size_t body_held;    /* bytes of body buffers, all connections */
    pthread_mutex_t spare_lock;  /* guards spare, spare_len */
    char *spare;                 /* the largest body mapping freed last, or NULL */
    size_t spare_len;
    atomic_ulong bufs_new, bufs_reused; /* body mappings made, spares reused */
    pthread_mutex_t conn_lock;   /* guards conns, live, reaper_stop */
    pthread_cond_t reaper_cv;
    conn_track conns;            /* list head (sentinel) */
    int live;                    /* connections in the list */
    int reaper_stop;
    pthread_t reaper;
    int reaper_ok;
    atomic_long cut_deadline, cut_idle, refused_full; /* for the log and tests */
};

/* One request in progress. */
typedef struct {
    uint64_t start_ns;
    metrics_route route;
    int auth_ok;
    int too_big;       /* the body passed max_body: discarded, 413 */
    int busy;          /* the body budget was spent: discarded, 503 */
    int bad_length;    /* conflicting or malformed Content-Length: 400 */
    int authed;        /* the token matched (or none is set), probes included */
    int ext_refused;   /* a path the extender listener does not serve: 403 */
    char *body;
    size_t len, cap;   /* bytes held; room charged to the budget */
    size_t map;        /* bytes mapped when body is a mapping (>= cap), else 0 */
    size_t received;   /* body bytes received, kept or not */
    int fd;            /* the connection's socket, or -1 */
    srv_server *s;
} req_ctx;

/* Body buffers: below BIG_BUF bytes from malloc, from BIG_BUF on mapped
 * pages, so that the memory of large bodies goes back to the system the
 * moment they are freed (glibc would keep freed heap memory in its arenas,
 * one per thread). */
#define BIG_BUF (64u << 10)

/* From HUGE_BUF bytes on, a body buffer asks for transparent huge pages
 * (where the system gives them on madvise): a 74 MB Nodes-form body then
 * takes some 40 page faults instead of 18,000, a third of its system time. */
#define HUGE_BUF (4u << 20)

/* Takes the spare mapping (srv_server.spare), if any: returns it with its
 * size in *len, or NULL. */
static char *spare_take(srv_server *s, size_t *len) {
    pthread_mutex_lock(&s->spare_lock);
    char *b = s->spare;
    *len = s->spare_len;
    s->spare = NULL;
    s->spare_len = 0;
    pthread_mutex_unlock(&s->spare_lock);
    return b;
}

/* Gives back a body mapping of len bytes. Its pages are first marked free
 * (MADV_FREE: the kernel takes them back when it needs memory, without a
 * write; until then a new body reuses them without page faults or
 * zeroing), then it becomes the spare unless the spare is larger; the
 * smaller of the two is unmapped. Without MADV_FREE it is unmapped. */
static void spare_give(srv_server *s, char *b, size_t len) {
#ifdef MADV_FREE
    if (madvise(b, len, MADV_FREE) == 0) {
        pthread_mutex_lock(&s->spare_lock);
        if (!s->spare || s->spare_len < len) {
            char *old = s->spare;
            size_t old_len = s->spare_len;
            s->spare = b;
            s->spare_len = len;
            b = old;
            len = old_len;
        }
        pthread_mutex_unlock(&s->spare_lock);
    }
#else
    (void)s;
#endif
    if (b) munmap(b, len);
}

/* Grows rc's body buffer (rc->cap bytes, rc->map of them mapped) to room
 * for ncap bytes, keeping its first rc->len bytes: below BIG_BUF from
 * malloc, from BIG_BUF on a mapping, the spare when there is one (counted
 * in bufs_reused, a new mapping in bufs_new), grown by mremap. rc->cap is
 * the caller's to set. Returns 0, or -1 (the buffer untouched). */
static int body_grow(srv_server *s, req_ctx *rc, size_t ncap) {
    if (ncap < BIG_BUF) {
        if (rc->map) return 0; /* buffers only grow */
        char *n = realloc(rc->body, ncap);
        if (!n) return -1;
        rc->body = n;
        return 0;
    }
    if (rc->map >= ncap) return 0; /* a reused spare has the room already */
    char *n;
    if (rc->map) {
        n = mremap(rc->body, rc->map, ncap, MREMAP_MAYMOVE);
        if (n == MAP_FAILED) return -1;
        if (ncap >= HUGE_BUF) madvise(n, ncap, MADV_HUGEPAGE);
        rc->body = n;
        rc->map = ncap;
        return 0;
    }
    size_t got = 0;
    n = spare_take(s, &got);
    if (n && got < ncap) {
        char *m = mremap(n, got, ncap, MREMAP_MAYMOVE);
        if (m == MAP_FAILED) munmap(n, got);
        n = m == MAP_FAILED ? NULL : m;
        got = ncap;
        if (n && ncap >= HUGE_BUF) madvise(n, ncap, MADV_HUGEPAGE);
    }
    if (n) {
        atomic_fetch_add(&s->bufs_reused, 1);
    } else {
        n = mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (n == MAP_FAILED) return -1;
        if (ncap >= HUGE_BUF) madvise(n, ncap, MADV_HUGEPAGE);
        got = ncap;
        atomic_fetch_add(&s->bufs_new, 1);
    }
    if (rc->len) memcpy(n, rc->body, rc->len);
    free(rc->body);
    rc->body = n;
    rc->map = got;
    return 0;
}

/* Copies n bytes of a body chunk from libmicrohttpd's read buffer to d,
 * the end of a large body. With SSE2, with non-temporal stores: the body
 * (74 MB in the Nodes form) is far larger than the caches, so a plain copy
 * first reads every destination line from memory only to overwrite it,
 * and evicts what the cache held; streaming stores skip that read (a copy
 * of 74 MB in 256 KiB chunks: 3.9 ms instead of 7.2 ms on the development
 * machine). The scan that follows reads the body from memory either way. */
static void body_copy(char *d, const char *src, size_t n) {
#ifdef __SSE2__
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < 4096 || head > n) {
        memcpy(d, src, n);
        return;
    }
    memcpy(d, src, head);
    d += head, src += head, n -= head;
    for (; n >= 64; n -= 64, d += 64, src += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));
        _mm_stream_si128((__m128i *)(void *)d, a);
        _mm_stream_si128((__m128i *)(void *)(d + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + 48), e);
    }
    memcpy(d, src, n);
    _mm_sfence(); /* the stores are visible before anything reads the body */
#else
    memcpy(d, src, n);
#endif
}

/* A body buffer a handler kept (body_keep): a mapping (map bytes, for
 * spare_give) or malloc'd (map 0). */
typedef struct {
    srv_server *s;
    char *buf;
    size_t map;
} kept_body;

static void kept_release(void *ud) {
    kept_body *k = ud;
    if (k->map) spare_give(k->s, k->buf, k->map);
    else free(k->buf);
    free(k);
}

/* web_request.keep: the body leaves the request with its handler,
 * uncharged from the body budget (the extender keeps one at a time:
 * service/k8sargs.h's ka_memo), and is freed, a mapping through
 * spare_give, when released. 0 when there is no body or no memory. */
static int body_keep(void *ud, void (**release)(void *), void **release_ud) {
    req_ctx *rc = ud;
    kept_body *k = rc->body ? malloc(sizeof *k) : NULL;
    if (!k) return 0;
    *k = (kept_body){rc->s, rc->body, rc->map};
    atomic_fetch_sub(&rc->s->body_held, rc->cap);
    rc->body = NULL;
    rc->cap = rc->map = 0;
    *release = kept_release;
    *release_ud = k;
    return 1;
}

/* Charges delta bytes to the body budget; returns 0, or -1 (nothing
 * charged) when that would pass it. */
static int budget_take(srv_server *s, size_t delta) {
    size_t was = atomic_fetch_add(&s->body_held, delta);
    if (was + delta > s->cfg.body_budget) {
        atomic_fetch_sub(&s->body_held, delta);
        return -1;
    }
    return 0;
}

/* Frees a request's body buffer (a mapping goes to spare_give) and gives
 * its bytes back to the budget. */
static void body_drop(srv_server *s, req_ctx *rc) {
    if (rc->body) {
        if (rc->map) spare_give(s, rc->body, rc->map);
        else free(rc->body);
        atomic_fetch_sub(&s->body_held, rc->cap);
    }
    rc->body = NULL;
    rc->cap = rc->len = rc->map = 0;
}

void srv_config_default(srv_config *c) {
    memset(c, 0, sizeof *c);
    c->listen = SRV_DEFAULT_LISTEN;
    c->threads = 2;
    c->max_conns = SRV_DEFAULT_MAX_CONNS;
    c->max_conns_per_ip = SRV_DEFAULT_MAX_CONNS_PER_IP;
    c->request_deadline_ms = SRV_DEFAULT_REQUEST_DEADLINE_MS;
    c->idle_timeout_s = SRV_DEFAULT_IDLE_TIMEOUT_S;
    c->body_budget = SRV_DEFAULT_BODY_BUDGET;
    c->max_body = SRV_DEFAULT_MAX_BODY;
    c->max_k8s_body = SRV_DEFAULT_MAX_K8S_BODY;
    c->limits.max_layers = RJ_DEFAULT_MAX_LAYERS;
    c->limits.max_nodes = RJ_DEFAULT_MAX_NODES;
    c->limits.max_types = RJ_DEFAULT_MAX_TYPES;
    c->max_budget_ms = API_DEFAULT_MAX_BUDGET_MS;
    c->cache_entries = 64;
    c->cache_bytes = 64u << 20;
    c->plan_memo_entries = SRV_DEFAULT_PLAN_MEMO;
    c->max_jobs = JOBS_DEFAULT_MAX;
    c->max_cluster_nodes = CLUSTER_DEFAULT_MAX_NODES;
    c->jobs_max_bytes = JOBS_DEFAULT_MAX_BYTES;
    c->request_cpu_ms = SRV_DEFAULT_REQUEST_CPU_MS;
    c->request_mem_bytes = SRV_DEFAULT_REQUEST_MEM;
}

void srv_log(srv_server *s, const char *fmt, ...) {
    if (!s->cfg.log) return;
    char raw[2048], line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    web_escape_controls(line, sizeof line, raw);
    s->cfg.log(s->cfg.log_ud, line);
}

/* ---- routing ------------------------------------------------------------------------ */

/* Maps a path to its route; *name gets {name} of /v1/jobs/{name} or
 * "{namespace}/{name}" of /v1/jobs/{namespace}/{name}. */
static metrics_route route_of(const char *path, const char **name) {
    static const struct {
        const char *path;
        metrics_route r;
    } fixed[] = {
        {"/v1/place", METRICS_PLACE},     {"/v1/cost", METRICS_COST},
        {"/v1/solve", METRICS_SOLVE},     {"/v1/jobs", METRICS_JOBS},
        {"/k8s/filter", METRICS_K8S_FILTER}, {"/k8s/prioritize", METRICS_K8S_PRIORITIZE},
        {"/healthz", METRICS_HEALTHZ},    {"/readyz", METRICS_READYZ},
        {"/metrics", METRICS_METRICS},    {"/v1/cluster", METRICS_CLUSTER},
        {"/k8s/bind", METRICS_K8S_BIND},
    };
    *name = NULL;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(path, fixed[i].path)) return fixed[i].r;
    static const char jobs[] = "/v1/jobs/";
    const char *slash = strchr(path + sizeof jobs - 1, '/');
    const char *third = slash ? strchr(slash + 1, '/') : NULL;
    if (!strncmp(path, jobs, sizeof jobs - 1) && path[sizeof jobs - 1] &&
        (!third || (!strcmp(third, "/complete") && third > slash + 1))) {
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
    case METRICS_K8S_PRIORITIZE:
    case METRICS_K8S_BIND: return "POST";
    case METRICS_JOBS: return with_name ? "GET, HEAD, PUT, DELETE, POST" : "GET, HEAD";
    case METRICS_CLUSTER: return "GET, HEAD, PUT";
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

/* /readyz: the policy's file path is shown to an authenticated caller only
 * (probes need no token, and a path tells an attacker where to write). */
static void handle_readyz(srv_server *s, int authed, web_reply *rep) {
    if (atomic_load(&s->draining)) {
        web_reply_json(rep, 503, json_pack("{s:b, s:s}", "ready", 0, "reason", "draining"));
        return;
    }
    const pslot_entry *pol = pslot_acquire(s->env.policy);
    if (!pol)
        web_reply_json(rep, 503, json_pack("{s:b, s:s}", "ready", 0, "reason",
                                           "no policy loaded"));
    else {
        json_t *p = api_policy_json(pol);
        if (!authed) json_object_del(p, "file");
        web_reply_json(rep, 200, json_pack("{s:b, s:o}", "ready", 1, "policy", p));
    }
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
        x.policy_generation = pol->ref.generation;
    }
    pslot_release(s->env.policy, pol);
    pslot_counts(s->env.policy, &x.reloads_ok, &x.reloads_failed);
    x.inflight = atomic_load(&s->inflight);
    x.jobs = jobs_count(s->env.jobs);
    rc_stats(s->env.cache, &x.cache_hits, &x.cache_misses, &x.cache_entries);
    x.memo_hits = atomic_load(&s->counters.memo_hits);
    x.memo_misses = atomic_load(&s->counters.memo_misses);
    if (s->env.plans) rc_stats(s->env.plans, NULL, NULL, &x.memo_entries);
    rc_stats(s->env.clusters, &x.cluster_hits, &x.cluster_misses, NULL);
    x.body_bufs_new = atomic_load(&s->bufs_new);
    x.body_bufs_reused = atomic_load(&s->bufs_reused);
    unsigned long reused = 0, read = 0;
    ka_memo_counts(s->k8s.last_nodes, &reused, &read);
    x.k8s_nodes_reused = reused;
    x.k8s_nodes_read = read;
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
    if (atomic_load(&s->draining) || rc->too_big || rc->busy || rc->bad_length)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    double seconds = (double)(web_now_ns() - rc->start_ns) / 1e9;
    metrics_observe(s->m, rc->route, rep->status, seconds);
    log_request(s, conn, method, path, rc, rep, seconds * 1e3);
    return r;
}

/* The body limit of a route: max_k8s_body for the extender's verbs, whose
 * Nodes form carries whole Node objects (a 5,000-node cluster writes some
 * 75 MB), max_body for the rest. */
static size_t body_limit(const srv_server *s, metrics_route route) {
    int k8s = route == METRICS_K8S_FILTER || route == METRICS_K8S_PRIORITIZE;
    return k8s && s->cfg.max_k8s_body > s->cfg.max_body ? s->cfg.max_k8s_body : s->cfg.max_body;
}

/* Beyond this many bytes a body is not even read (the connection closes). */
static size_t hard_limit(size_t limit) {
    return limit > SRV_HARD_BODY ? limit : SRV_HARD_BODY;
}

/* web_request.gone: whether the client has closed the connection of rc
 * (its end hung up, or the socket failed), asked by long decodes between
 * batches. A client that only half-closes (shutdown of its writing side)
 * counts as gone too: this API's clients wait for answers on open sockets. */
static int client_gone(void *ud) {
    req_ctx *rc = ud;
    if (rc->fd < 0) return 0;
    struct pollfd pf = {rc->fd, POLLRDHUP, 0};
    if (poll(&pf, 1, 0) <= 0) return 0;
    return (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static void dispatch(srv_server *s, req_ctx *rc, const char *method, const char *path,
                     const char *name, web_reply *rep) {
    const char *allow = allowed_methods(rc->route, name != NULL);
    if (rc->ext_refused) {
        char p[128];
        printable(p, sizeof p, path);
        web_reply_error(rep, 403, "%s: the extender listener serves only POST /k8s/filter, "
                        "/k8s/prioritize and /k8s/bind, /healthz and /readyz; /v1 and /metrics "
                        "are on the main listener, with the token", p);
        return;
    }
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
        web_reply_error(rep, 413, "request body over %zu bytes (received %zu)%s",
                        body_limit(s, rc->route), rc->received,
                        body_limit(s, rc->route) != s->cfg.max_body
                            ? "; --max-k8s-body-mb raises it, or set nodeCacheCapable: true"
                            : "");
        return;
    }
    if (rc->busy) {
        web_reply_error(rep, 503, "server busy: the request bodies being received already "
                        "hold the daemon's body memory budget (%zu bytes, "
                        "--max-body-memory-mb); retry later", s->cfg.body_budget);
        web_reply_header(rep, "Retry-After", "1");
        return;
    }
    web_request req = {method, path, rc->body ? rc->body : "", rc->len, rc->start_ns,
                       client_gone, rc, body_keep, rc};
    switch (rc->route) {
    case METRICS_PLACE: api_place(&s->env, &req, rep); break;
    case METRICS_COST: api_cost(&s->env, &req, rep); break;
    case METRICS_SOLVE: api_solve(&s->env, &req, rep); break;
    case METRICS_JOBS: api_jobs(&s->env, &req, name, rep); break;
    case METRICS_K8S_FILTER: k8s_filter(&s->k8s, &req, rep); break;
    case METRICS_K8S_PRIORITIZE: k8s_prioritize(&s->k8s, &req, rep); break;
    case METRICS_K8S_BIND: k8s_bind(&s->k8s, &req, rep); break;
    case METRICS_HEALTHZ: handle_healthz(rep); break;
    case METRICS_READYZ: handle_readyz(s, rc->authed, rep); break;
    case METRICS_METRICS: handle_metrics(s, rep); break;
    case METRICS_CLUSTER: cluster_handle(&s->env, &req, rep); break;
    default: web_reply_error(rep, 404, "no such endpoint"); break;
    }
}

/* Appends body bytes, or counts them when refused or over a limit. The
 * buffer grows (doubling from 4 KiB) only as bytes arrive, each growth
 * charged to the body budget; past the budget the body is dropped and the
 * request marked busy (503). Returns -1 to close the connection. */
static int take_body(srv_server *s, req_ctx *rc, const char *data, size_t n) {
    size_t limit = body_limit(s, rc->route);
    rc->received += n;
    if (rc->received > hard_limit(limit)) return -1;
    if (rc->too_big || rc->busy || rc->bad_length || !rc->auth_ok) return 0;
    if (rc->len + n > limit) {
        rc->too_big = 1;
        body_drop(s, rc);
        return 0;
    }
    if (rc->len + n + 1 > rc->cap) {
        size_t cap = rc->cap ? rc->cap : 4096;
        while (cap < rc->len + n + 1) cap *= 2;
        if (cap > limit + 1) cap = limit + 1;
        if (rc->cap < BIG_BUF && cap >= BIG_BUF && cap < 2 * BIG_BUF) cap = 2 * BIG_BUF;
        if (budget_take(s, cap - rc->cap) < 0) {
            rc->busy = 1;
            body_drop(s, rc);
            return 0;
        }
        if (body_grow(s, rc, cap)) {
            atomic_fetch_sub(&s->body_held, cap - rc->cap);
            return -1;
        }
        rc->cap = cap;
    }
    if (rc->map) body_copy(rc->body + rc->len, data, n);
    else memcpy(rc->body + rc->len, data, n);
    rc->len += n;
    rc->body[rc->len] = '\0';
    return 0;
}

/* What check_lengths collects from the request's headers. */
typedef struct {
    int n_length;         /* Content-Length headers */
    int bad;              /* one is not a plain decimal number */
    int differ;           /* two disagree */
    int chunked;          /* Transfer-Encoding is present */
    unsigned long long first;
} length_scan;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
    (void)kind;
    length_scan *ls = cls;
    if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) ls->chunked = 1;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0) return MHD_YES;
    const char *v = value ? value : "";
    while (*v == ' ' || *v == '\t') v++;
    unsigned long long n = 0;
    int digits = 0;
    for (; *v >= '0' && *v <= '9'; v++, digits++) {
        if (n > (ULLONG_MAX - 9) / 10) ls->bad = 1;
        else n = n * 10 + (unsigned long long)(*v - '0');
    }
    while (*v == ' ' || *v == '\t') v++;
    if (!digits || *v) ls->bad = 1;
    if (ls->n_length++ == 0) ls->first = n;
    else if (n != ls->first) ls->differ = 1;
    return MHD_YES;
}

/* This connection's tracking entry, or NULL. */
static conn_track *track_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void track_set(conn_track *ct, int state) {
    if (!ct) return;
    atomic_store(&ct->since, web_now_ns());
    atomic_store(&ct->state, state);
}

/* Whether conn came in on the extender listener. */
static int on_extender_listener(const srv_server *s, struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    return ci && ci->daemon == s->ext_mhd;
}

/* The routes the extender listener serves without a token. */
static int extender_route(metrics_route r) {
    return r == METRICS_K8S_FILTER || r == METRICS_K8S_PRIORITIZE || r == METRICS_K8S_BIND ||
           r == METRICS_HEALTHZ || r == METRICS_READYZ;
}

/* Whether a route computes (takes a work slot) rather than reports. */
static int route_works(metrics_route r) {
    return r != METRICS_HEALTHZ && r != METRICS_READYZ && r != METRICS_METRICS &&
           r != METRICS_OTHER;
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
        const union MHD_ConnectionInfo *fdi =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        rc->fd = fdi ? (int)fdi->connect_fd : -1;
        rc->route = route_of(url, &name);
        atomic_fetch_add(&s->inflight, 1);
        *con_cls = rc;
        rc->auth_ok = rc->route == METRICS_HEALTHZ || rc->route == METRICS_READYZ ||
                      token_ok(s, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                              MHD_HTTP_HEADER_AUTHORIZATION));
        if (s->ext_mhd && on_extender_listener(s, conn)) {
            /* kube-scheduler sends no token: the extender's verbs and the
             * probes are open here, everything else is refused (its body
             * discarded, as an unauthorised one is) */
            int open = extender_route(rc->route);
            rc->auth_ok = open;
            rc->ext_refused = !open;
        }
        rc->authed = rc->auth_ok && token_ok(s, MHD_lookup_connection_value(
                                         conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
        length_scan ls;
        memset(&ls, 0, sizeof ls);
        MHD_get_connection_values(conn, MHD_HEADER_KIND, scan_header, &ls);
        if (ls.bad || ls.differ || (ls.n_length && ls.chunked)) {
            /* A request whose length two parsers could read differently
             * (request smuggling): answer and close, reading nothing. */
            rc->bad_length = 1;
            web_reply rep;
            memset(&rep, 0, sizeof rep);
            web_reply_error(&rep, 400, "%s",
                            ls.bad ? "malformed Content-Length header (expected one decimal "
                                     "number)"
                            : ls.differ ? "conflicting Content-Length headers"
                                        : "both Content-Length and Transfer-Encoding given");
            return queue_reply(s, conn, rc, method, url, &rep);
        }
        if (ls.n_length) {
            unsigned long long n = ls.first;
            size_t limit = body_limit(s, rc->route);
            if (n > hard_limit(limit)) { /* not worth reading: answer and close */
                rc->too_big = 1;
                rc->received = (size_t)(n > SIZE_MAX ? SIZE_MAX : n);
                web_reply rep;
                memset(&rep, 0, sizeof rep);
                web_reply_error(&rep, 413, "request body of %llu bytes is over %zu bytes", n,
                                limit);
                return queue_reply(s, conn, rc, method, url, &rep);
            }
            if (n > limit) rc->too_big = 1; /* memory comes as bytes do */
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (take_body(s, rc, upload_data, *upload_size) < 0) return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    route_of(url, &name);
    track_set(track_of(conn), CT_WORKING);
    web_reply rep;
    memset(&rep, 0, sizeof rep);
    int slot = route_works(rc->route) && rc->auth_ok && !rc->too_big && !rc->busy &&
               !rc->ext_refused;
    if (slot)
        while (sem_wait(&s->work) < 0 && errno == EINTR) {
        }
    dispatch(s, rc, method, url, name, &rep);
    if (slot) sem_post(&s->work);
    enum MHD_Result r = queue_reply(s, conn, rc, method, url, &rep);
    free(rep.body);
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)toe;
    srv_server *s = cls;
    req_ctx *rc = *con_cls;
    track_set(track_of(conn), CT_IDLE);
    if (!rc) return;
    body_drop(s, rc);
    free(rc);
    *con_cls = NULL;
    atomic_fetch_sub(&s->inflight, 1);
}

/* Connection opened or closed: keeps the list the reaper walks. A new
 * connection beyond max_conns closes the one idle longest, or with none
 * idle the one reading its request longest, or with none of those (all
 * working) is itself closed. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    srv_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_track *ct = calloc(1, sizeof *ct);
        *socket_context = ct;
        if (!ct) return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        ct->fd = ci ? (int)ci->connect_fd : -1;
        atomic_init(&ct->state, CT_READING);
        atomic_init(&ct->since, web_now_ns());
        int refused = 0;
        pthread_mutex_lock(&s->conn_lock);
        int open = 0;
        for (conn_track *c = s->conns.next; c != &s->conns; c = c->next) open += !c->cut;
        if (open >= s->cfg.max_conns) {
            /* The victim: the connection idle longest; else the one that
             * has been reading its request longest (under a flood of
             * slow connections from many addresses, a quick client still
             * gets in); never one whose request is being worked on. */
            conn_track *idle = NULL, *reading = NULL;
            for (conn_track *c = s->conns.next; c != &s->conns; c = c->next) {
                if (c->cut) continue;
                int st = atomic_load(&c->state);
                conn_track **best = st == CT_IDLE ? &idle : st == CT_READING ? &reading : NULL;
                if (best && (!*best || atomic_load(&c->since) < atomic_load(&(*best)->since)))
                    *best = c;
            }
            conn_track *victim = idle ? idle : reading ? reading : ct;
            if (victim->fd >= 0) shutdown(victim->fd, SHUT_RDWR);
            victim->cut = 1;
            if (victim != ct) atomic_fetch_add(&s->cut_idle, 1);
            else refused = 1;
        }
        ct->next = &s->conns;
        ct->prev = s->conns.prev;
        ct->prev->next = ct;
        s->conns.prev = ct;
        s->live++;
        pthread_mutex_unlock(&s->conn_lock);
        if (refused && atomic_fetch_add(&s->refused_full, 1) % 100 == 0)
            srv_log(s, "connection refused: %d connections open (--max-conns)",
                    s->cfg.max_conns);
        return;
    }
    conn_track *ct = *socket_context;
    if (!ct) return;
    pthread_mutex_lock(&s->conn_lock);
    ct->prev->next = ct->next;
    ct->next->prev = ct->prev;
    s->live--;
    pthread_mutex_unlock(&s->conn_lock);
    free(ct);
    *socket_context = NULL;
}

/* The reaper: every tick, closes the connections that have been reading
 * one request (or idle since the last) for longer than the deadline. */
static void *reaper_main(void *arg) {
    srv_server *s = arg;
    uint64_t deadline = (uint64_t)s->cfg.request_deadline_ms * 1000000ull;
    long tick_ms = s->cfg.request_deadline_ms / 10;
    if (tick_ms < 10) tick_ms = 10;
    if (tick_ms > 250) tick_ms = 250;
    pthread_mutex_lock(&s->conn_lock);
    while (!s->reaper_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += tick_ms * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->reaper_cv, &s->conn_lock, &until);
        uint64_t now = web_now_ns();
        int cut = 0;
        for (conn_track *c = s->conns.next; c != &s->conns; c = c->next) {
            if (c->cut || atomic_load(&c->state) == CT_WORKING) continue;
            /* since after state (track_set stores them in the other order,
             * so an IDLE seen here comes with its own since), and since can
             * be later than now: the connection's thread may have changed
             * state after now was read (unsigned, now - since would wrap to
             * ~584 years and cut a busy keep-alive connection) */
            uint64_t since = atomic_load(&c->since);
            if (since < now && now - since > deadline) {
                if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
                c->cut = 1;
                cut++;
            }
        }
        if (cut) {
            long before = atomic_fetch_add(&s->cut_deadline, cut);
            pthread_mutex_unlock(&s->conn_lock);
            if (before / 100 != (before + cut) / 100 || before == 0)
                srv_log(s, "closed %d connections with no complete request after %d ms "
                        "(--request-deadline-ms; %ld so far)",
                        cut, s->cfg.request_deadline_ms, before + cut);
            pthread_mutex_lock(&s->conn_lock);
        }
    }
    pthread_mutex_unlock(&s->conn_lock);
    return NULL;
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

/* Starts one libmicrohttpd daemon on the address text ("HOST:PORT"; opt
 * names the option in messages) with the server's callbacks; *port gets
 * the port bound. Returns the daemon, or NULL with err. Both listeners
 * share the connection list, limits and work slots: one budget. */
static struct MHD_Daemon *start_listener(srv_server *s, const char *text, const char *opt,
                                         int *port, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t sl;
    int v6;
    if (parse_listen(text, &ss, &sl, &v6, err, errlen)) {
        if (strncmp(err, opt, strlen(opt))) { /* name the option it came from */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", err);
            snprintf(err, errlen, "%s%s", opt, strchr(msg, ':') ? strchr(msg, ':') : msg);
        }
        return NULL;
    }
    /* One thread per connection. libmicrohttpd's own connection limit sits
     * above ours: on_connection makes room by closing an idle connection,
     * and the one it closes counts until its thread has gone. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0) |
                     MHD_USE_ERROR_LOG;
    unsigned hard = (unsigned)s->cfg.max_conns + (unsigned)s->cfg.max_conns / 4 + 8;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.idle_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, hard,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->cfg.max_conns_per_ip,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)256,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256u << 10), MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "%s: cannot listen on %s (address in use, or not an address of "
                 "this machine?)", opt, text);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    if (di) {
        struct sockaddr_storage bound;
        socklen_t bl = sizeof bound;
        if (getsockname(di->listen_fd, (struct sockaddr *)&bound, &bl) == 0)
            *port = ntohs(bound.ss_family == AF_INET6
                              ? ((struct sockaddr_in6 *)&bound)->sin6_port
                              : ((struct sockaddr_in *)&bound)->sin_port);
    }
    return d;
}

srv_server *srv_start(const srv_config *c, char *err, size_t errlen) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    /* A Nodes-form call mallocs and frees some 10 MB (its candidates, the
     * 4 MB answer): with glibc's defaults, the free gives the top of the
     * heap back to the system and the next call takes ~1,800 page faults
     * to get it again. Kept up to SRV_TRIM_KEEP, and blocks below it come
     * from the heap rather than from new mappings. */
    mallopt(M_TRIM_THRESHOLD, SRV_TRIM_KEEP);
    mallopt(M_MMAP_THRESHOLD, SRV_TRIM_KEEP);
    s->listen_fd = -1;
    s->ext_listen_fd = -1;
    s->conns.next = s->conns.prev = &s->conns;
    pthread_mutex_init(&s->conn_lock, NULL);
    pthread_mutex_init(&s->spare_lock, NULL);
    pthread_cond_init(&s->reaper_cv, NULL);
    atomic_init(&s->body_held, 0);
    atomic_init(&s->bufs_new, 0);
    atomic_init(&s->bufs_reused, 0);
    atomic_init(&s->cut_deadline, 0);
    atomic_init(&s->cut_idle, 0);
    atomic_init(&s->refused_full, 0);
    atomic_init(&s->inflight, 0);
    atomic_init(&s->draining, 0);
    if (s->cfg.threads < 1) s->cfg.threads = 1;
    if (s->cfg.max_conns < 1) s->cfg.max_conns = 1;
    if (s->cfg.max_conns_per_ip < 1) s->cfg.max_conns_per_ip = 1;
    if (s->cfg.request_deadline_ms < 1) s->cfg.request_deadline_ms = 1;
    if (s->cfg.idle_timeout_s < 1) s->cfg.idle_timeout_s = 1;
    s->work_ok = sem_init(&s->work, 0, (unsigned)s->cfg.threads) == 0;
    if (c->policy_path) s->policy_path = strdup(c->policy_path);
    if (c->sim_policy_path) s->sim_policy_path = strdup(c->sim_policy_path);
    if (c->token) {
        s->token = strdup(c->token);
        s->token_len = s->token ? strlen(s->token) : 0;
    }
    s->m = metrics_create();
    s->env.policy = pslot_create();
    s->env.sim_policy = clp_slot_create();
    s->env.jobs = jobs_create(c->max_jobs, c->jobs_max_bytes);
    s->env.cache = rc_create(c->cache_entries, c->cache_bytes);
    s->env.clusters = rc_create(SERVER_CLUSTERS_KEPT, c->cache_bytes);
    /* the memo's keys and answers together within cache_bytes */
    s->env.plans =
        c->plan_memo_entries > 0 ? rc_create(c->plan_memo_entries, c->cache_bytes) : NULL;
    s->env.limits = c->limits;
    s->env.max_budget_ms = c->max_budget_ms;
    s->env.request_cpu_ms = c->request_cpu_ms;
    s->env.request_mem_bytes = c->request_mem_bytes;
    s->env.counters = &s->counters;
    s->env.max_cluster_nodes = c->max_cluster_nodes > 0 ? c->max_cluster_nodes
                                                        : CLUSTER_DEFAULT_MAX_NODES;
    char serr[1200];
    s->env.state = store_open(c->state_path, serr, sizeof serr);
    if (!s->env.state) { /* refuse to start rather than forget the jobs */
        snprintf(err, errlen, "--state: %s", serr);
        srv_free(s);
        return NULL;
    }
    if (s->env.jobs && store_sync(s->env.state, s->env.jobs, 1, serr, sizeof serr)) {
        snprintf(err, errlen, "--state: %s", serr);
        srv_free(s);
        return NULL;
    }
    if (c->cluster_path) {
        char msg[2200];
        if (cluster_load_file(&s->env, c->cluster_path, msg, sizeof msg)) {
            snprintf(err, errlen, "--cluster: %s", msg);
            srv_free(s);
            return NULL;
        }
        srv_log(s, "strata serve: --cluster %s", msg);
    }
    s->k8s = (k8s_env){s->env.policy, s->env.jobs, s->env.limits, s->env.max_budget_ms,
                       c->request_cpu_ms, c->request_mem_bytes, s->env.state, NULL, NULL,
                       ka_memo_create()};
    if (c->kube_api) {
        if (kapi_global_init()) {
            snprintf(err, errlen, "--kube-api: libcurl does not initialise");
            srv_free(s);
            return NULL;
        }
        s->kube = kapi_create(c->kube_api, c->kube_token_file, c->kube_ca, 5000, err, errlen);
        if (!s->kube) {
            srv_free(s);
            return NULL;
        }
        s->k8s.kube = s->kube;
    }
    if (c->catalogue_path) {
        char msg[1024];
        s->catalogue = imp_catalogue_load(c->catalogue_path, msg, sizeof msg);
        if (!s->catalogue) {
            snprintf(err, errlen, "%s", msg);
            srv_free(s);
            return NULL;
        }
        s->k8s.catalogue = s->catalogue;
    }
    if (!s->work_ok || !s->m || !s->env.policy || !s->env.sim_policy || !s->env.jobs ||
        !s->k8s.last_nodes ||
        !s->env.cache || !s->env.clusters || (c->plan_memo_entries > 0 && !s->env.plans) ||
        (c->policy_path && !s->policy_path) ||
        (c->sim_policy_path && !s->sim_policy_path) || (c->token && !s->token)) {
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
    if (s->sim_policy_path) {
        char msg[1024];
        if (clp_slot_load(s->env.sim_policy, s->sim_policy_path, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "--sim-policy: %s", msg);
            srv_free(s);
            return NULL;
        }
    }
    if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
        snprintf(err, errlen, "cannot start a thread");
        srv_free(s);
        return NULL;
    }
    s->reaper_ok = 1;
    s->mhd = start_listener(s, c->listen ? c->listen : SRV_DEFAULT_LISTEN, "--listen", &s->port,
                            err, errlen);
    if (s->mhd && c->extender_listen)
        s->ext_mhd = start_listener(s, c->extender_listen, "--extender-listen", &s->ext_port,
                                    err, errlen);
    if (!s->mhd || (c->extender_listen && !s->ext_mhd)) {
        srv_free(s);
        return NULL;
    }
    return s;
}

int srv_port(const srv_server *s) { return s->port; }

int srv_extender_port(const srv_server *s) { return s->ext_mhd ? s->ext_port : 0; }

int srv_reload(srv_server *s, char *err, size_t errlen) {
    if (!s->policy_path && !s->sim_policy_path) {
        snprintf(err, errlen, "no --policy was given (nor --sim-policy): nothing to reload");
        return -1;
    }
    int rc = 0;
    err[0] = '\0';
    if (s->policy_path) rc = pslot_load(s->env.policy, s->policy_path, err, errlen);
    /* answers of the old policy go (their generation keeps them from
     * answering for the new one anyway: this gives their memory back) */
    if (s->policy_path && rc == 0 && s->env.plans) rc_clear(s->env.plans);
    if (s->sim_policy_path) {
        char msg[1024];
        if (clp_slot_load(s->env.sim_policy, s->sim_policy_path, msg, sizeof msg) < 0) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, "%s--sim-policy: %s", used ? "; " : "", msg);
            rc = -1;
        }
    }
    return rc;
}

int srv_drain(srv_server *s, int timeout_ms) {
    atomic_store(&s->draining, 1);
    if (s->mhd && s->listen_fd < 0) {
        MHD_socket fd = MHD_quiesce_daemon(s->mhd);
        if (fd != MHD_INVALID_SOCKET) s->listen_fd = fd;
    }
    if (s->ext_mhd && s->ext_listen_fd < 0) {
        MHD_socket fd = MHD_quiesce_daemon(s->ext_mhd);
        if (fd != MHD_INVALID_SOCKET) s->ext_listen_fd = fd;
    }
    /* Timed by the clock, not by counting sleeps: each sleep overshoots. */
    struct timespec tick = {0, 5 * 1000 * 1000};
    uint64_t until = web_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
    while (atomic_load(&s->inflight) != 0) {
        if (web_now_ns() >= until) return atomic_load(&s->inflight);
        nanosleep(&tick, NULL);
    }
    return 0;
}

void srv_free(srv_server *s) {
    if (!s) return;
    if (s->ext_mhd) MHD_stop_daemon(s->ext_mhd);
    if (s->ext_listen_fd >= 0) close(s->ext_listen_fd);
    if (s->mhd) MHD_stop_daemon(s->mhd);
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->reaper_ok) {
        pthread_mutex_lock(&s->conn_lock);
        s->reaper_stop = 1;
        pthread_cond_signal(&s->reaper_cv);
        pthread_mutex_unlock(&s->conn_lock);
        pthread_join(s->reaper, NULL);
    }
    if (s->work_ok) sem_destroy(&s->work);
    pthread_cond_destroy(&s->reaper_cv);
    pthread_mutex_destroy(&s->conn_lock);
    ka_memo_free(s->k8s.last_nodes); /* its body goes to the spare: before the spare goes */
    if (s->spare) munmap(s->spare, s->spare_len);
    pthread_mutex_destroy(&s->spare_lock);
    rc_free(s->env.cache);
    rc_free(s->env.clusters);
    rc_free(s->env.plans);
    jobs_free(s->env.jobs);
    store_close(s->env.state);
    pslot_free(s->env.policy);
    clp_slot_free(s->env.sim_policy);
    metrics_free(s->m);
    imp_catalogue_free(s->catalogue);
    kapi_free(s->kube);
    free(s->policy_path);
    free(s->sim_policy_path);
    free(s->token);
    free(s);
}
