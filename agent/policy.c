/* policy.c -- a trained policy as the rest of strata uses it (policy.h):
 * loading a checkpoint (agent/ckptio) and decoding plans with batched
 * rollouts (agent/rollout), greedy or sample-N-keep-best.
 *
 * Every decode runs on a rollout of its own, so any number of threads may
 * decode with one loaded policy at once; the weights are only read. The
 * rollouts (network workspace, trajectory buffers) are kept on an idle
 * list when the decode is done and lent to the next one, so that a
 * daemon's decodes stop allocating them afresh: up to POLICY_IDLE of
 * them, and only those whose decode was small (POLICY_KEEP_BYTES).
 */
#include "agent/policy.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ckptio.h"
#include "agent/decode.h"
#include "agent/net.h"
#include "agent/rollout.h"
#include "agent/trainconf.h"
#include "base/clock.h"
#include "env/place.h"
#include "solvers/solve.h"

#define DECODE_CHUNK 64 /* samples per batched rollout while sampling */
#define DECODE_RUNS 64  /* greedy decoding passes when backtracking out of dead ends */
#define ANCHOR_BUDGET_MS 60000L /* the exact solver's budget for an anchor plan when the
                                   caller has none (q8's exact budget: at 10 s a loaded
                                   machine ran out on a 60-layer job) */
#define ANCHOR_EVALS 20000L   /* the genetic search's, when exact gives none */
#define ANCHOR_RUNS 8         /* backtracking passes per anchored prefix */
#define REPAIR_RUNS 8         /* backtracking passes per sampled plan that dead-ends
                                 (q8: 8 repair as many as 64 do) */
#define FLIP_SHARE 4          /* best of N: each round of flips takes N / FLIP_SHARE
                                 of the candidates (flip_path; chosen on held-out
                                 draws 10 and 12, docs/agent-runs.md) */
#define FLIP_ROUNDS 2         /* greedy's plan flipped, then the best flip's */
#define POLICY_IDLE 8   /* rollouts kept for the next decodes */
#define POLICY_KEEP_BYTES ((size_t)16 << 20) /* ... when their decode took less (estimate) */

struct agent_policy {
    char path[1024];
    agent_net_dims d;
    nn_params *p;
    int64_t step;
    int placement; /* the NODE-phase method it was trained with */
    int features;  /* the look-ahead features version it was trained on */
    char hash[17];
    struct idle_list *idle; /* rollouts lent to decodes (the only part decoding writes) */
};

struct idle_list {
    pthread_mutex_t lock; /* guards ro and n */
    agent_rollout *ro[POLICY_IDLE];
    int n;
};

/* take_rollout lends a rollout for one decode: an idle one, or a new one
 * (NULL when out of memory). Give it back with give_rollout. */
static agent_rollout *take_rollout(const agent_policy *pol) {
    struct idle_list *il = pol->idle;
    agent_rollout *ro = NULL;
    pthread_mutex_lock(&il->lock);
    if (il->n > 0) ro = il->ro[--il->n];
    pthread_mutex_unlock(&il->lock);
    if (!ro && (ro = agent_rollout_create(&pol->d))) agent_rollout_set_features(ro, pol->features);
    return ro;
}

/* give_rollout puts ro back on the idle list when keep and there is room,
 * else frees it. Accepts NULL. */
static void give_rollout(const agent_policy *pol, agent_rollout *ro, int keep) {
    struct idle_list *il = pol->idle;
    if (!ro) return;
    pthread_mutex_lock(&il->lock);
    if (keep && il->n < POLICY_IDLE) {
        il->ro[il->n++] = ro;
        ro = NULL;
    }
    pthread_mutex_unlock(&il->lock);
    agent_rollout_free(ro);
}

agent_policy *agent_policy_load(const char *path, char *err, size_t errlen) {
    agent_policy *pol = calloc(1, sizeof *pol);
    if (!pol) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(pol->path, sizeof pol->path, "%s", path);
    pol->idle = calloc(1, sizeof *pol->idle);
    if (!pol->idle) {
        free(pol);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    pthread_mutex_init(&pol->idle->lock, NULL);
    agent_ckpt_state st;
    if (agent_ckpt_peek(path, &pol->d, &st, err, errlen)) {
        agent_policy_free(pol);
        return NULL;
    }
    pol->step = st.step;
    pol->placement = st.placement;
    pol->features = st.features;
    agent_ckpt_state_clear(&st);
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table(&pol->d, table);
    pol->p = nn_params_create(table, AN_N_TENSORS, err, errlen);
    if (!pol->p || agent_ckpt_read(path, pol->p, &pol->d, &st, err, errlen)) {
        agent_policy_free(pol);
        return NULL;
    }
    agent_ckpt_state_clear(&st);
    /* FNV-1a 64 over the weights, tensor by tensor */
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < pol->p->n; i++) {
        const unsigned char *b = (const unsigned char *)nn_param(pol->p, i);
        for (size_t k = 0; k < pol->p->size[i] * sizeof(float); k++) {
            h ^= b[k];
            h *= 1099511628211ULL;
        }
    }
    snprintf(pol->hash, sizeof pol->hash, "%016llx", (unsigned long long)h);
    return pol;
}

void agent_policy_free(agent_policy *p) {
    if (!p) return;
    for (int i = 0; i < p->idle->n; i++) agent_rollout_free(p->idle->ro[i]);
    pthread_mutex_destroy(&p->idle->lock);
    free(p->idle);
    nn_params_free(p->p);
    free(p);
}

int agent_policy_max_tasks(const model_job *job, const model_cluster *cl) {
    long units = 0;
    double w = 0;
    for (int t = 0; t < cl->n_types; t++) units += cl->types[t].count;
    for (int l = 0; l < job->n_layers; l++) w += job->layers[l].params;
    double shard = job->shard > 0 ? job->shard : MODEL_DEFAULT_SHARD;
    double ps = job->n_layers + ceil(w / shard);
    double total = (double)units + ps;
    return total > 1e9 ? 1000000000 : (int)total;
}

int agent_policy_task_cap(const model_job *job, const model_cluster *cl,
                          const agent_decode_opts *opts) {
    /* fixed workers never pass the units (model_plan_set_counts refuses
     * more); a fixed ps count may pass the plan's own bound */
    long cap = (long)agent_policy_max_tasks(job, cl) + (opts->ps > 0 ? opts->ps : 0);
    return cap > 1000000000L ? 1000000000 : (int)cap;
}

/* anchored_decode is the policy's way out of a dead end: a feasible plan
 * from the exact solver (budget_ms, or ANCHOR_BUDGET_MS when <= 0; when it
 * is refused or stopped without a plan, the genetic search) anchors
 * agent_decode_anchored. Returns its status, with *runs its passes, *k the
 * layers taken from the anchor and *method the solver that gave it; 1 (no
 * plan) when no solver found one, with *no_anchor 2 after exact's proof
 * that none exists, 1 when the budget ran out first (else 0). */
static int anchored_decode(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                           int placement, long budget_ms, int *assign, int *anchor, int *runs, int *k,
                           int *method, int *no_anchor, char *err, size_t errlen) {
    *runs = 0;
    *no_anchor = 0;
    solve_result *sr = solve_result_create(in->job->n_layers);
    if (!sr) {
        snprintf(err, errlen, "decode: out of memory");
        return -1;
    }
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = budget_ms > 0 ? budget_ms : ANCHOR_BUDGET_MS;
    int st = solve_run(in->job, in->cl, &so, sr);
    if (st != 0 && !sr->infeasible) {
        so.method = SOLVE_GENETIC;
        so.max_evals = ANCHOR_EVALS;
        st = solve_run(in->job, in->cl, &so, sr);
    }
    if (st == 0) {
        *method = (int)so.method;
        memcpy(anchor, sr->assign, (size_t)in->job->n_layers * sizeof *anchor);
        st = agent_decode_anchored(ro, p, in, placement, 4.0, sr->assign, ANCHOR_RUNS, assign, runs,
                                   k, err, errlen);
    } else {
        st = 1;
        *no_anchor = sr->infeasible ? 2 : 1;
    }
    solve_result_free(sr);
    return st;
}

/* sample_forced samples B episodes in one batch, every one taking the
 * TYPE actions forced[n_layers] (an entry < 0 left to the policy), the
 * rest sampled (seed, stream), placement as in agent_rollout_opts; the
 * episodes are left in ro for the caller to keep from. Returns 0, or -1
 * with a message. */
static int sample_forced(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                         int placement, const int *forced, int B, uint64_t seed, uint64_t stream,
                         char *err, size_t errlen) {
    const int **fp = malloc((size_t)B * sizeof *fp);
    int *of = calloc((size_t)B, sizeof *of);
    int rc = 0;
    if (!fp || !of) {
        snprintf(err, errlen, "decode: out of memory");
        rc = -1;
    } else {
        for (int b = 0; b < B; b++) fp[b] = forced;
        agent_rollout_opts o = {.placement = placement,
                                .greedy = 0,
                                .penalty = 4.0,
                                .seed = seed,
                                .stream = stream,
                                .ep_base = 0,
                                .ep_total = B,
                                .record = 0,
                                .forced = (const int *const *)fp};
        rc = agent_rollout_run(ro, p, in, 1, of, B, &o, NULL, err, errlen) ? -1 : 0;
    }
    free(fp);
    free(of);
    return rc;
}

/* place_again plays the plan `assign` (every TYPE action forced) count
 * times in one batch (count <= DECODE_CHUNK), the node head sampling the
 * NODE decisions (seed, a stream of their own), and leaves the episodes in
 * ro for the caller to keep from; *n is set to count. Returns 0, or -1
 * with a message. */
static int place_again(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                       const int *assign, int count, uint64_t seed, int *n, char *err,
                       size_t errlen) {
    *n = 0;
    int rc = sample_forced(ro, p, in, PLACER_PLACE_POLICY, assign, count, seed, 0x4e4f4445ULL /* "NODE" */,
                           err, errlen);
    if (rc == 0) *n = count;
    return rc;
}

/* sample_after draws min(n, chunk) plans in one batch, their first k
 * layers anchor's and the rest sampled from the policy (seed, a stream of
 * their own); a plan that dead-ends is not repaired. The episodes are left
 * in ro (*got of them) for the caller to keep from. Returns 0, or -1 with
 * a message. */
static int sample_after(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                        int placement, uint64_t seed, const int *anchor, int k, int n, int chunk,
                        int *got, char *err, size_t errlen) {
    int L = in->job->n_layers, B = n < chunk ? n : chunk;
    *got = 0;
    int *fixed = malloc((size_t)L * sizeof *fixed);
    if (!fixed) {
        snprintf(err, errlen, "decode: out of memory");
        return -1;
    }
    for (int i = 0; i < L; i++) fixed[i] = i < k ? anchor[i] : -1;
    int rc = sample_forced(ro, p, in, placement, fixed, B, seed, 0x414e4348ULL /* "ANCH" */, err, errlen);
    if (rc == 0) *got = B;
    free(fixed);
    return rc;
}

/* sampling_stops asks whether sampling must stop now: the caller gave up
 * (opts->cancelled; res->stopped and res->cancelled set) or budget_ms has
 * passed since t0 (res->stopped set). Returns 1 to stop, else 0. */
static int sampling_stops(const agent_decode_opts *opts, double t0, agent_decode_result *res) {
    if (opts->cancelled && opts->cancelled(opts->cancel_ud)) {
        res->stopped = res->cancelled = 1;
        return 1;
    }
    if (opts->budget_ms > 0 && (clock_now_s() - t0) * 1e3 >= opts->budget_ms) {
        res->stopped = 1;
        return 1;
    }
    return 0;
}

/* A polish's stop callback: sampling_stops on the decode's options. */
typedef struct {
    const agent_decode_opts *opts;
    double t0;
    agent_decode_result *res;
} polish_stop_ctx;

static int polish_stops(void *ud) {
    polish_stop_ctx *c = ud;
    return sampling_stops(c->opts, c->t0, c->res);
}

/* polish_kept improves the types of the plan kept (res->assign) by segment
 * moves (solve_polish, stopped with the budget and the cancel callback)
 * and, when that lowers the plan's cost, plays the polished plan once with
 * every type forced and greedy nodes (placement as asked; fixed counts as
 * the instance has them): *n = 1, the answer is episode 0 of ro, for the
 * caller to keep if cheaper (the placed or counted cost may differ from
 * the plan's). *n = 0 when polish changed nothing, when the polished plan
 * cannot hold fixed counts, or when its run failed (the answer stays as it
 * was). Returns 0, or -1 with a message (out of memory). */
static int polish_kept(agent_rollout *ro, const nn_params *p, const agent_instance *in, int placement,
                       const agent_decode_opts *opts, double t0, agent_decode_result *res, int *n,
                       char *err, size_t errlen) {
    const model_job *job = in->job;
    int L = job->n_layers;
    *n = 0;
    model_plan *pl = model_plan_create(L);
    int *a = malloc((size_t)L * sizeof *a), *trial = malloc((size_t)L * sizeof *trial);
    if (!pl || !a || !trial) {
        model_plan_free(pl);
        free(a);
        free(trial);
        snprintf(err, errlen, "decode: out of memory");
        return -1;
    }
    memcpy(a, res->assign, (size_t)L * sizeof *a);
    if (model_eval(job, in->cl, a, pl) == 0) {
        double c0 = pl->cost;
        polish_stop_ctx sc = {opts, t0, res};
        double c = solve_polish(job, in->cl, a, c0, pl, trial, polish_stops, &sc, NULL);
        /* played only when it changed and holds the fixed counts (else
         * its forced types would be refused) */
        if (c < c0 && model_eval_counts(job, in->cl, a, in->workers, in->ps, pl) == 0) {
            const int *forced[1] = {a};
            int of[1] = {0};
            agent_rollout_opts o = {.placement = placement, .greedy = 1, .penalty = 4.0,
                                    .seed = opts->seed, .stream = 0x504f4c53ULL /* "POLS" */,
                                    .ep_base = 0, .ep_total = 1, .record = 0, .forced = forced};
            /* a run that fails leaves the answer as it was: polish only
             * ever improves on it */
            char e2[256];
            if (agent_rollout_run(ro, p, in, 1, of, 1, &o, NULL, e2, sizeof e2) == 0) *n = 1;
        }
    }
    model_plan_free(pl);
    free(a);
    free(trial);
    return 0;
}

/* A path the flips branch from: a decode's types, up to its dead end if
 * it has one, and at each decision the mask and the policy's
 * probabilities as it was played. */
typedef struct {
    int n;          /* decisions played */
    int K;          /* candidates per decision (padded) */
    int *type;      /* [L] */
    float *prob;    /* [L, K] */
    uint8_t *mask;  /* [L, K] */
} flip_route;

/* route_create makes room for the paths of a job of L layers on K
 * candidates; NULL when out of memory. route_free accepts NULL. */
static flip_route *route_create(int L, int K) {
    flip_route *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->K = K;
    r->type = malloc((size_t)L * sizeof *r->type);
    r->prob = malloc((size_t)L * K * sizeof *r->prob);
    r->mask = malloc((size_t)L * K);
    if (!r->type || !r->prob || !r->mask) {
        free(r->type);
        free(r->prob);
        free(r->mask);
        free(r);
        return NULL;
    }
    return r;
}

static void route_free(flip_route *r) {
    if (!r) return;
    free(r->type);
    free(r->prob);
    free(r->mask);
    free(r);
}

/* route_take copies episode b of the last run of ro (B episodes) into r. */
static void route_take(flip_route *r, const agent_rollout *ro, int b, int B) {
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(ro, &T, &K, &action, &mask, &probs);
    r->n = agent_decode_played(ro, b, r->type);
    for (int j = 0; j < r->n; j++) {
        size_t row = ((size_t)j * B + b) * K;
        for (int k = 0; k < r->K; k++) {
            r->prob[(size_t)j * r->K + k] = k < K ? probs[row + k] : 0;
            r->mask[(size_t)j * r->K + k] = k < K ? mask[row + k] : 0;
        }
    }
}

/* flip_path decodes up to n plans that leave the path at one decision
 * each, among its decisions from `from` on, ranked by the probability of
 * their most likely other allowed type, highest first (ties: the earlier
 * decision); the plan for decision j takes the path's first j types, that
 * other type at j and the policy's most likely types after it (one greedy
 * batch). The most likely single-discrepancy plans, then: where the policy
 * hesitates, the other branch is tried whole. The episodes are left in ro
 * (*n_flips of them, fewer than n when fewer decisions have an alternative)
 * for the caller to keep from. The cheapest feasible flip's path goes to
 * best (may be path), the decision it flipped to *best_j and its cost to
 * *best_cost (-1 and INFINITY when no flip is feasible; best unchanged).
 * Returns 0, or -1 with a message. */
static int flip_path(agent_rollout *ro, const nn_params *p, const agent_instance *in, int placement,
                     const flip_route *path, int from, int n, int *n_flips, flip_route *best,
                     int *best_j, double *best_cost, char *err, size_t errlen) {
    int L = in->job->n_layers, K = path->K;
    *n_flips = 0;
    *best_j = -1;
    *best_cost = INFINITY;
    int *alt = malloc((size_t)L * sizeof *alt), *fx = malloc((size_t)n * L * sizeof *fx);
    int *at = malloc((size_t)n * sizeof *at), *of = calloc((size_t)n, sizeof *of);
    float *p2 = malloc((size_t)L * sizeof *p2);
    const int **fp = malloc((size_t)n * sizeof *fp);
    int rc = 0;
    if (!alt || !fx || !at || !of || !p2 || !fp) {
        snprintf(err, errlen, "decode: out of memory");
        rc = -1;
        goto done;
    }
    for (int j = 0; j < L; j++) {
        alt[j] = -1;
        p2[j] = -1;
    }
    for (int j = from; j < path->n; j++) {
        for (int k = 0; k < K; k++) {
            float pk = path->prob[(size_t)j * K + k];
            if (path->mask[(size_t)j * K + k] && k != path->type[j] && pk > p2[j]) {
                p2[j] = pk;
                alt[j] = k;
            }
        }
    }
    int m = 0;
    for (; m < n; m++) {
        int bj = -1;
        for (int j = from; j < path->n; j++)
            if (alt[j] >= 0 && (bj < 0 || p2[j] > p2[bj])) bj = j;
        if (bj < 0) break;
        int *f = fx + (size_t)m * L;
        for (int j = 0; j < L; j++) f[j] = j < bj ? path->type[j] : j == bj ? alt[bj] : -1;
        fp[m] = f;
        at[m] = bj;
        alt[bj] = -1;
    }
    if (m > 0) {
        agent_rollout_opts o = {.placement = placement,
                                .greedy = 1,
                                .penalty = 4.0,
                                .ep_base = 0,
                                .ep_total = m,
                                .record = 0,
                                .forced = (const int *const *)fp};
        rc = agent_rollout_run(ro, p, in, 1, of, m, &o, NULL, err, errlen) ? -1 : 0;
        int kept = -1;
        for (int b = 0; rc == 0 && b < m; b++) {
            double c = agent_rollout_episode(ro, b)->cost;
            if (isfinite(c) && c < *best_cost) {
                *best_cost = c;
                kept = b;
            }
        }
        if (kept >= 0) {
            *best_j = at[kept];
            route_take(best, ro, kept, m);
        }
        if (rc == 0) *n_flips = m;
    }
done:
    free(alt);
    free(fx);
    free(at);
    free(of);
    free(p2);
    free(fp);
    return rc;
}

/* plan_none makes pl a plan that was not found, for reason (its why is
 * the caller's to write). */
static void plan_none(model_plan *pl, int reason) {
    pl->n_stages = 0;
    pl->reason = (model_reason)reason;
    pl->bad_stage = pl->bad_type = -1;
    pl->throughput = pl->time = pl->cost = pl->unit_price = 0;
    pl->placed = 0;
}

int agent_policy_decode(const agent_policy *pol, const model_job *job, const model_cluster *cl,
                        const agent_decode_opts *opts, agent_decode_result *res, char *err,
                        size_t errlen) {
    if (!pol || !job || !cl || !opts || !res || !res->assign || !res->plan) {
        snprintf(err, errlen, "agent_policy_decode: missing argument");
        return -1;
    }
    if (res->plan->cap < job->n_layers) {
        snprintf(err, errlen, "agent_policy_decode: the plan holds %d layers, the job has %d",
                 res->plan->cap, job->n_layers);
        return -1;
    }
    int samples = opts->decode == AGENT_DECODE_SAMPLE ? opts->samples : 1;
    if (opts->decode != AGENT_DECODE_GREEDY && opts->decode != AGENT_DECODE_SAMPLE) {
        snprintf(err, errlen, "decode: unknown decoding %d", (int)opts->decode);
        return -1;
    }
    if (opts->node_samples < 0 || opts->node_samples > DECODE_CHUNK) {
        snprintf(err, errlen, "decode: node_samples must be in [0, %d], got %d", DECODE_CHUNK,
                 opts->node_samples);
        return -1;
    }
    if (samples < 1) {
        snprintf(err, errlen, "decode: samples must be >= 1, got %d", opts->samples);
        return -1;
    }
    int placement = opts->placement;
    if (placement != PLACER_PLACE_NONE) {
        if (cl->n_nodes == 0) {
            snprintf(err, errlen, "decode: placement asked for, but the cluster lists no nodes");
            return -1;
        }
        if (!res->task_node) {
            snprintf(err, errlen, "decode: placement asked for, but task_node is NULL");
            return -1;
        }
        if (placement != PLACER_PLACE_POLICY && (placement < 0 || placement >= PLACER_N_METHODS)) {
            snprintf(err, errlen, "decode: unknown placement %d (PLACER_PLACE_POLICY or a "
                     "placer_method)", placement);
            return -1;
        }
    }
    if (opts->workers < 0 || opts->ps < 0) {
        snprintf(err, errlen, "decode: workers and ps must be >= 0 (0: the plan's own), got %d "
                 "and %d", opts->workers, opts->ps);
        return -1;
    }
    if (opts->workers > 0) {
        /* more fixed workers than the cluster has units: no plan holds
         * them, so say so now rather than after every decode and fallback
         * (the anchored one runs the exact solver up to its budget) */
        long units = 0;
        for (int t = 0; t < cl->n_types; t++) units += cl->types[t].count;
        if (opts->workers > units) {
            model_plan *pl = res->plan;
            plan_none(pl, MODEL_ERR_CAPACITY);
            snprintf(pl->why, sizeof pl->why, "capacity: %d workers asked, the cluster has %ld "
                     "units in all", opts->workers, units);
            res->samples_used = 0;
            return MODEL_ERR_CAPACITY;
        }
    }
    agent_rollout *ro = take_rollout(pol);
    int chunk = samples < DECODE_CHUNK ? samples : DECODE_CHUNK;
    int *of = calloc((size_t)chunk, sizeof *of);
    if (!ro || !of) {
        give_rollout(pol, ro, 0);
        free(of);
        snprintf(err, errlen, "decode: out of memory");
        return -1;
    }
    agent_instance in = {job, cl, 1.0, opts->workers, opts->ps};
    double t0 = clock_now_s(), best = INFINITY;
    res->stopped = res->cancelled = 0;
    res->anchored = res->anchor_method = res->polished = 0;
    res->unpolished = INFINITY;
    int found = 0, used = 0, reason = MODEL_ERR_CAPACITY, rc = 0, no_anchor = 0, n_failed = 0;
    /* KEEP_EPISODE(b) copies episode b of ro into res when it is the best so far */
#define KEEP_EPISODE(b)                                                                          \
    do {                                                                                         \
        const agent_episode *e_ = agent_rollout_episode(ro, (b));                                \
        if (!isfinite(e_->cost)) {                                                               \
            if (!found) reason = e_->reason ? e_->reason : MODEL_ERR_CAPACITY;                   \
        } else if (e_->cost < best) {                                                            \
            best = e_->cost;                                                                     \
            found = 1;                                                                           \
            memcpy(res->assign, agent_rollout_assign(ro, (b)), (size_t)job->n_layers * sizeof(int)); \
            if (placement != PLACER_PLACE_NONE) {                                                 \
                int n_ = 0;                                                                      \
                const int *tn_ = agent_rollout_tasks(ro, (b), &n_);                              \
                if (tn_) memcpy(res->task_node, tn_, (size_t)n_ * sizeof(int));                  \
            }                                                                                    \
        }                                                                                        \
    } while (0)
    /* KEEP_ANCHORED(b): KEEP_EPISODE for a plan whose first k layers are
     * the anchor's, which says so when it gives the answer */
#define KEEP_ANCHORED(b)                                                                         \
    do {                                                                                         \
        double before_ = best;                                                                   \
        KEEP_EPISODE(b);                                                                         \
        if (best < before_) {                                                                    \
            res->anchored = k;                                                                   \
            res->anchor_method = method;                                                         \
        }                                                                                        \
    } while (0)
    /* greedy first, backtracking out of dead ends: the answer of a greedy
     * decode; with sampling one candidate (so sampling is never worse than
     * greedy) and the plan the flips branch from. Then, when sampling,
     * samples / FLIP_SHARE plans that leave greedy's at one decision each
     * (flip_path) and, when the cheapest of them beats greedy, as many that
     * leave that one's after its flip; the rest sampled, so that `samples`
     * plans are decoded -- in more passes only when a decode backtracks out
     * of a dead end. A sample or flip that dead-ends backtracks from its
     * own decisions (agent_decode_repair, REPAIR_RUNS passes), so it is a
     * plan too; when greedy finds no plan, the anchored decode follows. */
    int n_sampled = opts->decode == AGENT_DECODE_SAMPLE ? samples - 1 : 0;
    int *played = NULL, *n_played = NULL, *fixed = NULL;
    int *scratch = malloc((size_t)job->n_layers * sizeof *scratch); /* greedy's plan */
    if (n_sampled > 0) {
        played = malloc((size_t)chunk * job->n_layers * sizeof *played);
        n_played = malloc((size_t)chunk * sizeof *n_played);
        fixed = malloc((size_t)job->n_layers * sizeof *fixed); /* a repair's plan */
    }
    if (!scratch || (n_sampled > 0 && (!played || !n_played || !fixed))) {
        snprintf(err, errlen, "decode: out of memory");
        rc = -1;
    }
    int st = 1, k = 0, method = 0, g_runs = 0;
    if (rc == 0) {
        st = agent_decode_greedy(ro, pol->p, &in, placement, 4.0, DECODE_RUNS, scratch, &g_runs, err, errlen);
        used += g_runs;
        if (st < 0) rc = -1;
        if (st == 0) KEEP_EPISODE(0);
    }
    /* REPAIR_DEAD(n_dead) repairs the first n_dead episodes whose actions
     * are in played / n_played, one by one (each run replaces ro's
     * episodes, hence the copies), keeping each plan found; the budget is
     * checked before each, a repair that finds none counts in n_failed */
#define REPAIR_DEAD(n_dead)                                                                      \
    for (int i_ = 0; i_ < (n_dead) && rc == 0; i_++) {                                           \
        if (sampling_stops(opts, t0, res)) break;                                                \
        int runs_ = 0;                                                                           \
        int st_ = agent_decode_repair(ro, pol->p, &in, placement, 4.0,                           \
                                      played + (size_t)i_ * job->n_layers, n_played[i_],         \
                                      REPAIR_RUNS, fixed, &runs_, err, errlen);                  \
        if (runs_ > 1) used += runs_ - 1; /* its first pass is the plan's, counted already */   \
        if (st_ < 0)                                                                             \
            rc = -1;                                                                             \
        else if (st_ == 0)                                                                       \
            KEEP_EPISODE(0);                                                                     \
        else                                                                                     \
            n_failed++;                                                                          \
    }
    /* RECORD_DEAD(b) copies episode b's actions into played when it dead-ended */
#define RECORD_DEAD(b)                                                                           \
    do {                                                                                         \
        if (agent_rollout_episode(ro, (b))->dead_end) {                                          \
            n_played[n_dead] = agent_decode_played(ro, (b), played + (size_t)n_dead * job->n_layers); \
            n_dead++;                                                                            \
        }                                                                                        \
    } while (0)
    if (rc == 0 && n_sampled > 0 && samples / FLIP_SHARE > 0) {
        /* FLIP_ROUNDS rounds: greedy's first pass flipped, then the path
         * of the cheapest flip so far flipped after its own flip, while
         * that flip beats the plan it left. Greedy's first pass is episode
         * 0 unless greedy backtracked; then it is played again (a plan
         * decoded and counted already, played for its probabilities) */
        int T, K, zero = 0, j = -1;
        const int *action_;
        const uint8_t *mask_;
        const float *probs_;
        agent_rollout_type_steps(ro, &T, &K, &action_, &mask_, &probs_);
        flip_route *path = route_create(job->n_layers, K);
        if (!path) {
            snprintf(err, errlen, "decode: out of memory");
            rc = -1;
        } else if (g_runs > 1) {
            agent_rollout_opts o = {.placement = placement, .greedy = 1, .penalty = 4.0, .ep_total = 1};
            rc = agent_rollout_run(ro, pol->p, &in, 1, &zero, 1, &o, NULL, err, errlen) ? -1 : 0;
        }
        if (rc == 0) route_take(path, ro, 0, 1);
        double path_cost = st == 0 ? best : INFINITY, flip_cost = INFINITY;
        for (int round = 0; rc == 0 && round < FLIP_ROUNDS && !res->stopped; round++) {
            int want = samples / FLIP_SHARE < n_sampled ? samples / FLIP_SHARE : n_sampled;
            if (want > chunk) want = chunk;
            if (want <= 0 || (round > 0 && !(flip_cost < path_cost))) break;
            if (round > 0) path_cost = flip_cost;
            int n = 0, n_dead = 0;
            rc = flip_path(ro, pol->p, &in, placement, path, round ? j + 1 : 0, want, &n, path, &j,
                           &flip_cost, err, errlen);
            for (int b = 0; rc == 0 && b < n; b++) {
                KEEP_EPISODE(b);
                RECORD_DEAD(b);
            }
            used += n;
            n_sampled -= n;
            REPAIR_DEAD(n_dead);
        }
        route_free(path);
    }
    if (n_sampled > 0 && rc == 0 && !res->stopped) {
        for (int base = 0; base < n_sampled; base += chunk) {
            int B = n_sampled - base < chunk ? n_sampled - base : chunk, n_dead = 0;
            agent_rollout_opts o = {.placement = placement,
                                    .greedy = 0,
                                    .penalty = 4.0,
                                    .seed = opts->seed,
                                    .stream = 0x504f4c49ULL /* "POLI" */,
                                    .ep_base = base,
                                    .ep_total = n_sampled,
                                    .record = 0,
                                    .forced = NULL};
            if (agent_rollout_run(ro, pol->p, &in, 1, of, B, &o, NULL, err, errlen)) {
                rc = -1;
                break;
            }
            for (int b = 0; b < B; b++) {
                KEEP_EPISODE(b);
                RECORD_DEAD(b);
            }
            used += B;
            REPAIR_DEAD(n_dead);
            if (rc || res->stopped) break;
            if (base + B < n_sampled && sampling_stops(opts, t0, res)) break;
        }
    }
#undef RECORD_DEAD
#undef REPAIR_DEAD
    if (rc == 0) {
        int runs = 0;
        if (st == 1) {
            /* a dead end greedy's backtracking did not get out of: anchor
             * the decode on a solver's feasible plan, if one exists, within
             * what is left of the caller's budget, if it has one */
            long left = 0;
            if (opts->budget_ms > 0) {
                left = opts->budget_ms - (long)((clock_now_s() - t0) * 1e3);
                if (left < 1) left = 1;
            }
            int *anchor = malloc((size_t)job->n_layers * sizeof *anchor);
            st = anchor ? anchored_decode(ro, pol->p, &in, placement, left, scratch, anchor, &runs, &k,
                                          &method, &no_anchor, err, errlen)
                        : -1;
            if (!anchor) snprintf(err, errlen, "decode: out of memory");
            used += runs;
            if (st == 0) {
                /* greedy's anchored plan, then the samples that found no
                 * plan drawn again after the same anchor (with placement,
                 * the node head placing each); both keep the anchor's
                 * figures when they give the answer */
                KEEP_ANCHORED(0);
                if (k < job->n_layers && n_failed > 0 && !sampling_stops(opts, t0, res)) {
                    int n = 0;
                    rc = sample_after(ro, pol->p, &in, placement, opts->seed, anchor, k, n_failed, chunk, &n,
                                      err, errlen);
                    for (int b = 0; rc == 0 && b < n; b++) KEEP_ANCHORED(b);
                    used += n;
                }
            }
            free(anchor);
        }
        if (st < 0)
            rc = -1;
        else if (st != 0)
            reason = MODEL_ERR_CAPACITY;
        /* the plan kept: greedy's, an anchored one or a sample's (also
         * when greedy and the anchor found none) */
        if (rc == 0 && found) res->unpolished = best;
        if (rc == 0 && found && opts->polish && !res->stopped) {
            /* segment moves on the kept plan's types (by model_eval, within
             * the budget), then the polished plan played again with its
             * types forced -- the counts and the placement as every decode
             * makes them -- and kept when its answer is cheaper */
            int n = 0;
            rc = polish_kept(ro, pol->p, &in, placement, opts, t0, res, &n, err, errlen);
            for (int b = 0; rc == 0 && b < n; b++) KEEP_EPISODE(b);
            res->polished = best < res->unpolished;
            used += n;
        }
        if (st == 0 && placement == PLACER_PLACE_POLICY && opts->node_samples > 0) {
            /* the node head places the kept plan again, sampling its nodes
             * (greedy's plan when no placement of any plan kept R: scratch
             * holds it, its placement missed R) */
            const int *plan = found ? res->assign : scratch;
            int n = 0;
            rc = place_again(ro, pol->p, &in, plan, opts->node_samples, opts->seed, &n, err, errlen);
            for (int b = 0; rc == 0 && b < n; b++) KEEP_EPISODE(b);
            used += opts->node_samples;
        }
    }
    free(scratch);
    free(fixed);
    free(played);
    free(n_played);
#undef KEEP_ANCHORED
#undef KEEP_EPISODE
    give_rollout(pol, ro, rc == 0 && agent_policy_decode_bytes(job, cl, opts) <= POLICY_KEEP_BYTES);
    free(of);
    res->samples_used = used;
    if (rc) return -1;
    if (!found) {
        model_plan *pl = res->plan;
        plan_none(pl, reason);
        char counts[80] = "", w[32] = "", g[32] = ""; /* fixed counts the plans had to hold */
        if (opts->workers > 0) snprintf(w, sizeof w, "%d workers", opts->workers);
        if (opts->ps > 0) snprintf(g, sizeof g, "%d ps tasks", opts->ps);
        if (w[0] || g[0])
            snprintf(counts, sizeof counts, " holding %s%s%s", w, w[0] && g[0] ? " and " : "", g);
        snprintf(pl->why, sizeof pl->why, "the policy found no feasible %s%s in %d decoded plan%s%s",
                 reason == MODEL_ERR_PLACEMENT ? "placement" : "plan", counts, used,
                 used == 1 ? "" : "s",
                 no_anchor == 2   ? ", and the exact solver proved that none exists"
                 : no_anchor == 1 ? ", and no solver found a plan to anchor on within the budget"
                                  : "");
        return reason;
    }
    int ev = model_eval_counts(job, cl, res->assign, opts->workers, opts->ps, res->plan);
    if (ev == 0 && placement != PLACER_PLACE_NONE)
        ev = place_eval(job, cl, res->plan, res->task_node, res->plan);
    return ev;
}

size_t agent_policy_decode_bytes(const model_job *job, const model_cluster *cl,
                                 const agent_decode_opts *opts) {
    int samples = opts->decode == AGENT_DECODE_SAMPLE ? opts->samples : 1;
    size_t B = (size_t)(samples < DECODE_CHUNK ? (samples > 0 ? samples : 1) : DECODE_CHUNK);
    if (opts->placement == PLACER_PLACE_POLICY && (size_t)opts->node_samples > B)
        B = (size_t)opts->node_samples; /* the node head's sampled placements, one batch */
    size_t T = (size_t)(job->n_layers > 0 ? job->n_layers : 1);
    size_t K = (size_t)(cl->n_types > 0 ? cl->n_types : 1);
    size_t Kn = (size_t)(cl->n_nodes > 0 ? cl->n_nodes : 1);
    size_t TB = T * B, f = sizeof(float);
    /* the type phase: glob, rows, prev, mask, action, pall, assign */
    size_t bytes = TB * (AGENT_FG * f + K * AGENT_FT * f + AGENT_FT * f + K + sizeof(int) +
                         K * f + sizeof(int));
    bytes += T * AGENT_FL * f * 2 + B * (K > Kn ? K : Kn) * f;
    /* the look-ahead's memo, completions (held units' too) and tree
     * (agent/rollout.c), the tree holding the states of the sampled batch
     * and up to 32 more passes of one episode (greedy's, the repairs', the
     * anchored tries', polish's) */
    bytes += agent_rollout_lookahead_bytes((int)T, (int)K, cl, TB + 32 * T + 1);
    /* one environment per episode: its plan and its task table */
    size_t tasks = (size_t)agent_policy_task_cap(job, cl, opts);
    bytes += B * (T * 64 + tasks * 16 + Kn * 64);
    if (opts->placement == PLACER_PLACE_POLICY) {
        /* the node phase: a row block of n_nodes candidates per step and
         * episode, grown by doubling (counted as 1.5 times). Its steps are
         * the tasks of the longest episode of a batch, which in practice
         * stay near the layers: taken as layers + 16 (at most max_tasks),
         * which matches the daemon's measured peaks within 30% (estimate
         * vs peak RSS, 64-episode batches: 128 layers x 256 nodes 227 vs
         * 209 MiB; 256 x 1024 1676 vs 1244 MiB). */
        size_t steps = T + 16 < tasks ? T + 16 : tasks;
        /* fixed counts: exactly their tasks */
        size_t fixed = (size_t)(opts->workers > 0 ? opts->workers : 0) +
                       (size_t)(opts->ps > 0 ? opts->ps : 0);
        if (fixed > steps) steps = fixed < tasks ? fixed : tasks;
        size_t rows = steps * B;
        bytes += rows * (AGENT_FG * f + AGENT_FN * Kn * f + Kn + 3 * sizeof(int)) * 3 / 2;
    }
    return bytes;
}

const char *agent_policy_path(const agent_policy *p) { return p ? p->path : ""; }
int64_t agent_policy_step(const agent_policy *p) { return p ? p->step : 0; }
const char *agent_policy_hash(const agent_policy *p) { return p ? p->hash : ""; }
