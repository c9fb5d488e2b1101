/* metrics.h -- the daemon's counters, in the Prometheus text format.
 *
 * Requests are counted by route (a fixed list, so that no client can grow
 * the set of series) and status, and their latency goes into one histogram
 * per route with fixed buckets from 100 us to 10 s. Every update is a few
 * relaxed atomic additions: no lock on the request path.
 *
 * metrics_render writes the page GET /metrics serves (text format 0.0.4):
 *
 *   strata_requests_total{path="/v1/place",status="200"} 1234
 *   strata_request_duration_seconds_bucket{path="/v1/place",le="0.001"} 1200
 *   ... _sum, _count
 *
 * followed by the gauges the caller passes (policy step, load time, ...).
 */
#ifndef STRATA_SERVICE_METRICS_H
#define STRATA_SERVICE_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Routes, as they are labelled. */
typedef enum {
    METRICS_PLACE = 0,   /* /v1/place */
    METRICS_COST,        /* /v1/cost */
    METRICS_SOLVE,       /* /v1/solve */
    METRICS_JOBS,        /* /v1/jobs and /v1/jobs/{name} */
    METRICS_K8S_FILTER,  /* /k8s/filter */
    METRICS_K8S_PRIORITIZE, /* /k8s/prioritize */
    METRICS_HEALTHZ,     /* /healthz */
    METRICS_READYZ,      /* /readyz */
    METRICS_METRICS,     /* /metrics */
    METRICS_CLUSTER,     /* /v1/cluster */
    METRICS_K8S_BIND,    /* /k8s/bind */
    METRICS_OTHER,       /* anything else (404s) */
    METRICS_N_ROUTES
} metrics_route;

typedef struct metrics metrics;

/* metrics_create returns zeroed counters or NULL; metrics_free accepts NULL. */
metrics *metrics_create(void);
void metrics_free(metrics *m);

/* metrics_route_label returns the label of a route ("/v1/place", ...). */
const char *metrics_route_label(metrics_route r);

/* metrics_observe counts one answered request of route r with HTTP status
 * `status` that took `seconds`. Lock-free. */
void metrics_observe(metrics *m, metrics_route r, int status, double seconds);

/* metrics_count returns how many requests of route r got status so far
 * (status -1: all statuses). */
uint64_t metrics_count(metrics *m, metrics_route r, int status);

/* Extra gauges and counters appended to the page. */
typedef struct {
    int policy_loaded;          /* 0 or 1 */
    int64_t policy_step;        /* training step of the loaded policy */
    double policy_loaded_at;    /* seconds since the epoch */
    double policy_load_seconds; /* how long the load took */
    uint64_t policy_generation; /* policies loaded so far, the current included */
    uint64_t reloads_ok, reloads_failed;
    int inflight;               /* requests being answered */
    int jobs;                   /* jobs registered for the extender */
    uint64_t cache_hits, cache_misses;
    int cache_entries;
    uint64_t memo_hits, memo_misses; /* memoised policy answers of /v1/place */
    uint64_t cluster_hits, cluster_misses; /* /v1/place clusters known by their bytes */
    uint64_t body_bufs_new, body_bufs_reused; /* large body buffers mapped, or the spare */
    int memo_entries;                /* answers the plan memo holds */
    uint64_t k8s_nodes_reused, k8s_nodes_read; /* extender Nodes matched to the last body, or read */
} metrics_extra;

/* metrics_render writes the page into a new malloc'd string (*len bytes,
 * NUL-terminated); returns NULL when out of memory. */
char *metrics_render(metrics *m, const metrics_extra *x, size_t *len);

#endif
