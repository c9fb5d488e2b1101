/* server.h -- the placement daemon: HTTP on libmicrohttpd, routing, safety.
 *
 * srv_start binds the address (loopback unless told otherwise), starts a
 * pool of libmicrohttpd threads and serves:
 *
 *   POST /v1/place /v1/cost /v1/solve    (service/api.h)
 *   GET /v1/jobs, PUT|GET|DELETE /v1/jobs/{namespace}/{name} (or /{name}: "default")
 *   POST /k8s/filter /k8s/prioritize /k8s/bind (service/k8s.h)
 *   GET /healthz                          200 while the process serves
 *   GET /readyz                           200 once a policy is loaded, else 503
 *   GET /metrics                          Prometheus text (service/metrics.h)
 *
 * Threads: one libmicrohttpd thread per connection, so that a probe never
 * waits behind another connection's work; the requests that compute
 * (everything but /healthz, /readyz and /metrics) take one of `threads`
 * work slots first, so no more than `threads` of them run at once.
 *
 * Limits (docs/reliability.md): max_conns connections at once and
 * max_conns_per_ip from one address; when the daemon is full, the
 * connection idle longest between two requests (else the one that has
 * been reading its request longest) is closed to make room for a new one:
 * neither idle keep-alive nor slow connections lock clients out. A
 * request's headers and body must arrive within request_deadline_ms of the
 * connection's start (or of the previous answer on a kept-alive
 * connection), however slowly they trickle: past it the connection is
 * closed. Request bodies held in memory by all connections together stay
 * under body_budget bytes: past it a request gets 503. Memory is taken as
 * body bytes arrive, never on the declared Content-Length; conflicting or
 * malformed Content-Length headers get 400.
 *
 * Work: one decision takes at most request_cpu_ms (it caps the decode's and
 * the solvers' budget_ms; a cut answer says "stopped": true), a policy
 * decode estimated to need more than request_mem_bytes gets 422 before
 * anything is allocated, and a decode whose client has closed its
 * connection is abandoned at its next batch of samples (log note
 * "abandoned"). Registered jobs' documents take at most jobs_max_bytes
 * (507 past it); a DELETE gives their memory back.
 *
 * Safety: with a token, every request but /healthz and /readyz needs
 * "Authorization: Bearer TOKEN" (401 otherwise, compared in constant
 * time). With extender_listen, a second listener (the same registry,
 * policy, limits and connection budget) answers the extender's verbs and
 * the probes without a token (/k8s/bind too), and 403 to every other path: kube-scheduler
 * reaches the extender there (on loopback, in its pod) while /v1 stays
 * behind the token on the main listener. Bodies over max_body bytes
 * (max_k8s_body for the extender's verbs) get 413; unknown paths 404,
 * wrong methods 405 with Allow; requests can never name a file to read (the only
 * files the daemon reads after start are its own --policy and --sim-policy,
 * on reload). One
 * log line per request goes to the log callback:
 *
 *   2025-01-31T12:00:00.123Z 127.0.0.1 POST /v1/place 200 12006 2210 0.412ms [note]
 *
 * Lifecycle: srv_reload loads the policy files again (requests in flight
 * finish on the old one; a bad file leaves the old one serving) and, when
 * the policy loads, empties the plan memo;
 * srv_drain stops accepting connections and waits for the requests in
 * flight; srv_free stops the threads. Signals are the caller's (cli/serve.c
 * turns SIGHUP into srv_reload and SIGTERM into srv_drain).
 *
 * Library code: nothing here prints or exits; messages go to err buffers
 * and the log callback.
 */
#ifndef STRATA_SERVICE_SERVER_H
#define STRATA_SERVICE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "service/api.h"
#include "service/runjson.h"

/* Receives one finished log line (no newline); may be called from any
 * thread at once. */
typedef void (*srv_log_fn)(void *ud, const char *line);

typedef struct {
    const char *listen;      /* "HOST:PORT": IPv4, [IPv6] or localhost; port 0 picks one */
    const char *extender_listen; /* NULL, or "HOST:PORT" of a second listener serving only
                                    /k8s/filter, /k8s/prioritize, /healthz and /readyz,
                                    without the token (kube-scheduler cannot send one) */
    int threads;             /* work slots: computing requests at once (>= 1) */
    int max_conns;           /* connections at once, all clients */
    int max_conns_per_ip;    /* connections at once from one client address */
    int request_deadline_ms; /* headers + body of one request, however slow */
    int idle_timeout_s;      /* a connection silent this long is closed */
    size_t body_budget;      /* bytes of request bodies held at once, all connections */
    const char *policy_path; /* NULL: start without a policy */
    const char *sim_policy_path; /* NULL, or the shared-cluster policy's checkpoint
                                    (service/clpolicy.h; plan_method "cluster-policy") */
    const char *token;       /* NULL: no authentication */
    size_t max_body;         /* bytes; larger bodies get 413 */
    size_t max_k8s_body;     /* bytes; the same for /k8s/filter and /k8s/prioritize */
    const char *catalogue_path; /* NULL, or the extender's instance catalogue */
    const char *kube_api;    /* NULL, or the API server POST /k8s/bind binds through */
    const char *kube_token_file; /* its bearer token's file (NULL: none) */
    const char *kube_ca;     /* its CA bundle (NULL: the system's) */
    rj_limits limits;        /* layers, nodes, types per request */
    long max_budget_ms;      /* largest budget_ms a request may ask for */
    int cache_entries;       /* parsed bodies kept */
    size_t cache_bytes;      /* bytes of bodies kept */
    int plan_memo_entries;   /* deterministic policy answers kept by their problem
                                (api.h); 0: no plan memo */
    int max_jobs;            /* jobs the registry holds */
    size_t jobs_max_bytes;   /* bytes the registered jobs' documents take (0: no bound) */
    const char *state_path;  /* the state file (service/store.h); NULL: in memory only */
    int max_cluster_nodes;   /* nodes PUT /v1/cluster accepts (0: the default) */
    const char *cluster_path; /* NULL, or a config whose cluster is put at start, as PUT
                                 /v1/cluster would (cluster_load_file) */
    long request_cpu_ms;     /* time one decision may take, whatever it asks (0: none) */
    size_t request_mem_bytes; /* a decode estimated to need more gets 422 (0: none) */
    srv_log_fn log;          /* NULL: no log */
    void *log_ud;
} srv_config;

#define SRV_DEFAULT_LISTEN "127.0.0.1:7878"
#define SRV_DEFAULT_MAX_BODY (1u << 20) /* 1 MiB */
#define SRV_DEFAULT_PLAN_MEMO 1024      /* plan memo entries (--plan-memo) */
#define SRV_DEFAULT_MAX_CONNS 512
#define SRV_DEFAULT_MAX_CONNS_PER_IP 64
#define SRV_DEFAULT_REQUEST_DEADLINE_MS 10000
#define SRV_DEFAULT_IDLE_TIMEOUT_S 10
/* The extender's Nodes form for 5,000 nodes of ~15 KB (images included) is
 * ~75 MB: 96 MiB admits it. The body budget holds one such body beside
 * the 64 MiB the /v1 endpoints had to themselves. */
#define SRV_DEFAULT_MAX_K8S_BODY ((size_t)96 << 20)
#define SRV_DEFAULT_BODY_BUDGET ((size_t)160 << 20) /* 160 MiB */
#define SRV_DEFAULT_REQUEST_CPU_MS API_DEFAULT_REQUEST_CPU_MS
#define SRV_DEFAULT_REQUEST_MEM ((size_t)API_DEFAULT_REQUEST_MEM_MB << 20)

typedef struct srv_server srv_server;

/* srv_config_default fills c with the defaults above (threads: 2, no
 * policy, no token, cache of 64 bodies / 64 MiB). */
void srv_config_default(srv_config *c);

/* srv_start loads the policy (when given), opens the state, puts the
 * cluster of cluster_path (when given; logged), binds and starts serving.
 * Returns the server, or NULL with a message in err[errlen] (a policy,
 * state file or cluster file that does not load, an address that does not
 * parse or bind). */
srv_server *srv_start(const srv_config *c, char *err, size_t errlen);

/* srv_port returns the port bound (useful with port 0). */
int srv_port(const srv_server *s);

/* srv_extender_port returns the extender listener's port, or 0 when there
 * is none. */
int srv_extender_port(const srv_server *s);

/* srv_reload loads the policy file and the sim policy file (those given)
 * again. Returns 0 (the new ones serve), or -1 with why in err (a file that
 * fails keeps its old network serving; the other is still reloaded). */
int srv_reload(srv_server *s, char *err, size_t errlen);

/* srv_drain stops accepting connections, answers "Connection: close" from
 * now on, and waits up to timeout_ms for the requests in flight. Returns
 * the number still running when it gave up (0 when all finished). */
int srv_drain(srv_server *s, int timeout_ms);

/* srv_free stops the threads (after srv_drain for a clean exit) and frees
 * everything; accepts NULL. It waits for handlers still running: a caller
 * bound by a deadline whose srv_drain returned > 0 exits instead. */
void srv_free(srv_server *s);

/* srv_log writes a line through the configured callback (printf-style),
 * with every control byte escaped (web_escape_controls): a client's text
 * quoted in a line can never start a line of its own or drive a terminal. */
void srv_log(srv_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
