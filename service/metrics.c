/* metrics.c -- lock-free request counters and latency histograms.
 *
 * Counters are C11 atomics updated with relaxed order: the page is a
 * snapshot that may be a request or two behind, which Prometheus expects.
 * Histogram buckets are stored per bucket and summed into the cumulative
 * `le` series when rendering.
 */
#include "service/metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static const int STATUSES[] = {200, 201, 204, 400, 401, 404, 405, 413, 500, 503};
#define N_STATUS ((int)(sizeof STATUSES / sizeof STATUSES[0]) + 1) /* + "other" */

static const double BOUNDS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                0.05,   0.1,     0.25,   0.5,   1.0,   2.5,   10.0};
#define N_BOUNDS ((int)(sizeof BOUNDS / sizeof BOUNDS[0]))

static const char *const LABELS[METRICS_N_ROUTES] = {
    "/v1/place", "/v1/cost", "/v1/solve", "/v1/jobs", "/k8s/filter",
    "/k8s/prioritize", "/healthz", "/readyz", "/metrics", "/v1/cluster", "/k8s/bind", "other",
};

struct metrics {
    atomic_uint_fast64_t count[METRICS_N_ROUTES][N_STATUS];
    atomic_uint_fast64_t bucket[METRICS_N_ROUTES][N_BOUNDS + 1]; /* last: > 10 s */
    atomic_uint_fast64_t sum_ns[METRICS_N_ROUTES];
};

metrics *metrics_create(void) {
    metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    for (int r = 0; r < METRICS_N_ROUTES; r++) {
        for (int s = 0; s < N_STATUS; s++) atomic_init(&m->count[r][s], 0);
        for (int b = 0; b <= N_BOUNDS; b++) atomic_init(&m->bucket[r][b], 0);
        atomic_init(&m->sum_ns[r], 0);
    }
    return m;
}

void metrics_free(metrics *m) { free(m); }

const char *metrics_route_label(metrics_route r) {
    return (int)r >= 0 && r < METRICS_N_ROUTES ? LABELS[r] : "other";
}

static int status_index(int status) {
    for (int i = 0; i < N_STATUS - 1; i++)
        if (STATUSES[i] == status) return i;
    return N_STATUS - 1;
}

void metrics_observe(metrics *m, metrics_route r, int status, double seconds) {
    if ((int)r < 0 || r >= METRICS_N_ROUTES) r = METRICS_OTHER;
    atomic_fetch_add_explicit(&m->count[r][status_index(status)], 1, memory_order_relaxed);
    int b = 0;
    while (b < N_BOUNDS && seconds > BOUNDS[b]) b++;
    atomic_fetch_add_explicit(&m->bucket[r][b], 1, memory_order_relaxed);
    if (seconds < 0) seconds = 0;
    atomic_fetch_add_explicit(&m->sum_ns[r], (uint_fast64_t)(seconds * 1e9),
                              memory_order_relaxed);
}

uint64_t metrics_count(metrics *m, metrics_route r, int status) {
    if ((int)r < 0 || r >= METRICS_N_ROUTES) return 0;
    if (status >= 0)
        return atomic_load_explicit(&m->count[r][status_index(status)], memory_order_relaxed);
    uint64_t n = 0;
    for (int s = 0; s < N_STATUS; s++)
        n += atomic_load_explicit(&m->count[r][s], memory_order_relaxed);
    return n;
}

char *metrics_render(metrics *m, const metrics_extra *x, size_t *len) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return NULL;
    fprintf(f, "# HELP strata_requests_total Requests answered, by route and HTTP status.\n"
               "# TYPE strata_requests_total counter\n");
    for (int r = 0; r < METRICS_N_ROUTES; r++)
        for (int s = 0; s < N_STATUS; s++) {
            uint64_t n = atomic_load_explicit(&m->count[r][s], memory_order_relaxed);
            if (!n) continue;
            if (s < N_STATUS - 1)
                fprintf(f, "strata_requests_total{path=\"%s\",status=\"%d\"} %llu\n", LABELS[r],
                        STATUSES[s], (unsigned long long)n);
            else
                fprintf(f, "strata_requests_total{path=\"%s\",status=\"other\"} %llu\n",
                        LABELS[r], (unsigned long long)n);
        }
    fprintf(f, "# HELP strata_request_duration_seconds Time from a request's first byte to "
               "its answer, by route.\n"
               "# TYPE strata_request_duration_seconds histogram\n");
    for (int r = 0; r < METRICS_N_ROUTES; r++) {
        uint64_t cum = 0, counts[N_BOUNDS + 1];
        for (int b = 0; b <= N_BOUNDS; b++)
            counts[b] = atomic_load_explicit(&m->bucket[r][b], memory_order_relaxed);
        uint64_t total = 0;
        for (int b = 0; b <= N_BOUNDS; b++) total += counts[b];
        if (!total) continue;
        for (int b = 0; b < N_BOUNDS; b++) {
            cum += counts[b];
            fprintf(f, "strata_request_duration_seconds_bucket{path=\"%s\",le=\"%g\"} %llu\n",
                    LABELS[r], BOUNDS[b], (unsigned long long)cum);
        }
        fprintf(f, "strata_request_duration_seconds_bucket{path=\"%s\",le=\"+Inf\"} %llu\n",
                LABELS[r], (unsigned long long)total);
        fprintf(f, "strata_request_duration_seconds_sum{path=\"%s\"} %.9f\n", LABELS[r],
                (double)atomic_load_explicit(&m->sum_ns[r], memory_order_relaxed) / 1e9);
        fprintf(f, "strata_request_duration_seconds_count{path=\"%s\"} %llu\n", LABELS[r],
                (unsigned long long)total);
    }
    if (x) {
        fprintf(f,
                "# HELP strata_policy_loaded 1 when a policy is loaded and serving.\n"
                "# TYPE strata_policy_loaded gauge\nstrata_policy_loaded %d\n",
                x->policy_loaded);
        if (x->policy_loaded)
            fprintf(f,
                    "# HELP strata_policy_step Training step of the loaded policy.\n"
                    "# TYPE strata_policy_step gauge\nstrata_policy_step %lld\n"
                    "# HELP strata_policy_load_timestamp_seconds When the loaded policy was "
                    "loaded.\n"
                    "# TYPE strata_policy_load_timestamp_seconds gauge\n"
                    "strata_policy_load_timestamp_seconds %.3f\n"
                    "# HELP strata_policy_load_duration_seconds How long loading the policy "
                    "took.\n"
                    "# TYPE strata_policy_load_duration_seconds gauge\n"
                    "strata_policy_load_duration_seconds %.6f\n"
                    "# HELP strata_policy_generation Policies loaded so far, the current "
                    "one included.\n"
                    "# TYPE strata_policy_generation gauge\nstrata_policy_generation %llu\n",
                    (long long)x->policy_step, x->policy_loaded_at, x->policy_load_seconds,
                    (unsigned long long)x->policy_generation);
        fprintf(f,
                "# HELP strata_policy_loads_total Policy loads (start and SIGHUP), by result.\n"
                "# TYPE strata_policy_loads_total counter\n"
                "strata_policy_loads_total{result=\"ok\"} %llu\n"
                "strata_policy_loads_total{result=\"error\"} %llu\n"
                "# HELP strata_inflight_requests Requests being answered.\n"
                "# TYPE strata_inflight_requests gauge\nstrata_inflight_requests %d\n"
                "# HELP strata_jobs_registered Jobs registered for the scheduler extender.\n"
                "# TYPE strata_jobs_registered gauge\nstrata_jobs_registered %d\n"
                "# HELP strata_parse_cache_total Request bodies found (hit) or not (miss) "
                "among those already parsed.\n"
                "# TYPE strata_parse_cache_total counter\n"
                "strata_parse_cache_total{result=\"hit\"} %llu\n"
                "strata_parse_cache_total{result=\"miss\"} %llu\n"
                "# HELP strata_parse_cache_entries Parsed bodies held.\n"
                "# TYPE strata_parse_cache_entries gauge\nstrata_parse_cache_entries %d\n"
                "# HELP strata_decode_memo_total Deterministic policy decodes of /v1/place "
                "answered from the plan memo (hit: the same problem, whatever the job's name) "
                "or decoded (miss).\n"
                "# TYPE strata_decode_memo_total counter\n"
                "strata_decode_memo_total{result=\"hit\"} %llu\n"
                "strata_decode_memo_total{result=\"miss\"} %llu\n"
                "# HELP strata_cluster_cache_total /v1/place bodies whose cluster was read "
                "before, byte for byte (hit: only the rest was parsed), or not (miss).\n"
                "# TYPE strata_cluster_cache_total counter\n"
                "strata_cluster_cache_total{result=\"hit\"} %llu\n"
                "strata_cluster_cache_total{result=\"miss\"} %llu\n"
                "# HELP strata_body_buffers_total Request bodies of 64 KiB or more received "
                "into a new mapping (new) or into the spare one the last large body left "
                "(reused).\n"
                "# TYPE strata_body_buffers_total counter\n"
                "strata_body_buffers_total{source=\"new\"} %llu\n"
                "strata_body_buffers_total{source=\"reused\"} %llu\n"
                "# HELP strata_plan_memo_entries Answers the plan memo holds.\n"
                "# TYPE strata_plan_memo_entries gauge\nstrata_plan_memo_entries %d\n"
                "# HELP strata_extender_nodes_total Node objects of the extender's Nodes "
                "form matched byte for byte to the last body's (reused) or read in full "
                "(read).\n"
                "# TYPE strata_extender_nodes_total counter\n"
                "strata_extender_nodes_total{result=\"reused\"} %llu\n"
                "strata_extender_nodes_total{result=\"read\"} %llu\n",
                (unsigned long long)x->reloads_ok, (unsigned long long)x->reloads_failed,
                x->inflight, x->jobs, (unsigned long long)x->cache_hits,
                (unsigned long long)x->cache_misses, x->cache_entries,
                (unsigned long long)x->memo_hits, (unsigned long long)x->memo_misses,
                (unsigned long long)x->cluster_hits, (unsigned long long)x->cluster_misses,
                (unsigned long long)x->body_bufs_new, (unsigned long long)x->body_bufs_reused,
                x->memo_entries, (unsigned long long)x->k8s_nodes_reused,
                (unsigned long long)x->k8s_nodes_read);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len) *len = size;
    return buf;
}
