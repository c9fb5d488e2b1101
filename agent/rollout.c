/* rollout.c -- batched episodes of the policy network (see rollout.h).
 *
 * The loop over decisions is sequential; inside one decision the
 * environments are observed in parallel (gym_obs, written straight into the
 * time-major trajectory buffers), the network runs once over all episodes,
 * actions are drawn, and the environments step in parallel.
 */
#include "agent/rollout.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/trainconf.h"
#include "base/clock.h"
#include "env/gym.h"
#include "env/modelkey.h"
#include "env/place.h"
#include "nets/layers.h"
#include "nets/rng.h"
#include "solvers/placers.h"

struct agent_rollout {
    agent_net_dims d;
    agent_net_ws *ws;
    /* the current run */
    const agent_instance *inst;
    const agent_rollout_opts *opts;
    int G, B, T, K, Kn;
    gym_env **env; /* [B] */
    int env_cap;
    int *inst_of;        /* [B] */
    agent_episode *ep;   /* [B] */
    gym_step_result *last; /* [B] last step's result */
    int *assign;         /* [B, T] */
    int **tasks;         /* [B] -> [task_cap[b]] */
    int *task_cap;       /* [B] */
    int *n_tasks;        /* [B], -1 when not placed */
    model_plan **pplan;  /* [B] heuristic placement results, lazily created */
    int *pplan_cap;      /* [B] layers the plan holds */
    double *psum;        /* [G, 4, T+1] prefix sums of flops, io, params, mem per instance */
    size_t cap_psum;
    /* the look-ahead's completions by stages (la_dp_fill): per instance,
     * threshold level m (LA_DP_LEVELS), layer i in 0..T and type k, the
     * cheapest run of usable stages of throughput at least level m's over
     * layers i..L-1 whose first stage has type k, priced with the
     * instance's shadow prices on the units */
    double *dp_price;    /* [G, M, T+1, K] its price, shadow prices included (INFINITY: none) */
    double *dp_true;     /* [G, M, T+1, K] its price at the types' own prices */
    double *dp_th;       /* [G, M, T+1, K] its throughput (min over its stages) */
    int *dp_last;        /* [G, M, T+1, K] the last layer of its first stage */
    int *dp_b1, *dp_b2;  /* [G, M, T+1] a row's cheapest and second cheapest
                            first types (-1: none) */
    double *dp_h;        /* [G, M] the throughput a stage needs at each level */
    double *dp_lam;      /* [G, K] the shadow price of a unit of each type ($/h) */
    struct la_budget **dp_bud; /* [cap_dbud] per instance slot, the completions
                            with some types' units held to their counts
                            (features versions 8-9, la_bud_fill; NULL: none) */
    size_t cap_dbud;
    int *dp_units;       /* [G, M, T+1, 2, K] the units of each type that the
                            run of a row's cheapest and second cheapest entry
                            (dp_b1, dp_b2) takes: its first stage and the
                            level's cheapest path after it */
    size_t cap_dpu;
    size_t cap_dpp, cap_dptr, cap_dpt, cap_dpl, cap_db1, cap_db2, cap_dph, cap_dlam;
    uint64_t *env_tag;   /* [cap_b] env_tag of env[b] as created (0: none): a
                            run whose episode b has the same tag resets env[b]
                            instead of creating it again */
    uint64_t *gkey;      /* [G] mkey_digest of this run's instances */
    size_t cap_gkey;
    uint64_t *dp_key;    /* [G] mkey_digest of the instance whose completions slot g
                            holds (0: none), so that a run on the same instances
                            as the last (search mode, every step) skips la_dp_fill */
    size_t cap_dkey;
    int dp_T, dp_K, dp_n; /* the dp_* layout the keys hold for, and the slots keyed */
    /* TYPE trajectories */
    float *lf;     /* [T,G,FL] */
    int *len;      /* [G] */
    float *glob;   /* [T,B,FG] */
    float *rows;   /* [T,B,K,FT] */
    float *prev;   /* [T,B,FT] */
    uint8_t *mask; /* [T,B,K] */
    int *action;   /* [T,B] */
    float *adv;    /* [B] */
    float *probs;  /* [B,max(K,Kn)] */
    float *pall;   /* [T,B,K] TYPE probabilities as played */
    uint8_t *active; /* [B] */
    float *lf_tmp; /* [T,FL] */
    /* NODE decisions: rows u*B + b while playing, compacted afterwards */
    float *nglob;    /* [ncap,FG] */
    float *nrows;    /* [ncap,Kn,FN] */
    uint8_t *nmask;  /* [ncap,Kn] */
    int *naction;    /* [ncap] */
    int *nowner;     /* [ncap] */
    float *nadv;     /* [ncap] */
    uint8_t *nforced; /* [ncap] 1: the decision followed a NODE demonstration */
    size_t ncap;     /* rows the NODE buffers hold */
    int ncap_kn;     /* ... of this many nodes each */
    int n_node;      /* compacted decisions */
    int node_phase_steps; /* u while playing */
    int t;           /* the current TYPE step */
    /* NODE demonstrations (opts->node_demo): per episode, 0 = its teacher
     * placement is not made yet, 1 = it is in tasks[b] and followed, -1 =
     * none (`best` found no placement keeping R): the policy decides;
     * demo_act[b] the node the current decision must take (-1: none) */
    int *demo_st, *demo_act;
    size_t cap_demost, cap_demoact;
    /* capacities (elements) */
    size_t cap_lf, cap_len, cap_glob, cap_rows, cap_prev, cap_mask, cap_action, cap_adv,
        cap_probs, cap_pall, cap_active, cap_lftmp, cap_b, cap_assign;
    agent_type_traj tt;
    agent_node_traj nt;
    agent_rollout_times tm;
    agent_type_policy policy; /* NULL: the network */
    void *policy_ctx;
    double la_sec[64]; /* look-ahead seconds per worker */
    /* look-ahead of one step, shared by the episodes with the same prefix */
    int *la_rep;       /* [B] -1: none needed; b: computed for b; else the episode to copy */
    int *la_list;      /* [B] the episodes it is computed for */
    int *la_hash;      /* [2 * B rounded up to a power of 2] open-addressing table */
    size_t cap_larep, cap_lalist, cap_lah;
    int la_workers;    /* workers of the pool of the current run */
    /* the stage figures la_fill computes, kept for the run (see la_get) */
    struct la_stage *la_memo; /* [G,K,T,T]: instance, type, first, last */
    uint8_t *la_known;        /* [G,K,T,T]: 1 where la_memo holds the figures */
    size_t cap_lamemo, cap_laknown;
    int la_memo_on;           /* the memo serves this run */
    int la_version;           /* the look-ahead features version computed
                                 (agent_rollout_set_features) */
    int la_memo_off;          /* agent_rollout_set_memo(r, 0): never use it (nor the tree) */
    /* the look-ahead's features by prefix, kept between runs (la_tree_*):
     * node n is a state (instance slot, decisions so far); nodes 0..G-1
     * are the instances' empty prefixes */
    int *lt_child;      /* [nodes, K] the node after each type (-1: none yet) */
    float *lt_feat;     /* [nodes, K, AGENT_FX] its features, as lookahead wrote them */
    uint8_t *lt_mask;   /* [nodes, K] the mask they were computed under */
    uint8_t *lt_known;  /* [nodes] 1 once lt_feat holds them */
    size_t cap_ltc, cap_ltf, cap_ltm, cap_ltk;
    int lt_n;           /* nodes in use (0: the tree is empty) */
    int lt_max;         /* nodes it may hold (LA_TREE_BYTES) */
    int lt_T, lt_K, lt_G; /* the layout the nodes hold for */
    uint64_t *lt_key;   /* [lt_G] gkey of the instance each root is for */
    size_t cap_ltkey;
    int *lt_cur;        /* [B] episode b's node at the current step (-1: off the tree) */
    size_t cap_ltcur;
    int failed;      /* a parallel call failed */
    char why[256];
};

/* The completions by stages of features versions 8-9 on a job whose
 * shadow prices find none that fits the unit counts (la_bud_fill): the
 * state carries the units of the held types as well, so that entry
 * (level m, budget u, layer i, type k) is the least-priced run from layer
 * i whose first stage has type k among those taking at most the budget's
 * units of each held type, the other types priced with the shadow prices
 * lam. A budget is a number whose digit h (radix count(x[h]) + 1, place
 * stride[h]) is the units of x[h] left. Views of one (m, u) are la_levels
 * (la_bud_at). */
#define LA_BUD_MAX_HELD AGENT_LA_MAX_HELD /* types held at once (version 9; version 8 holds one) */

typedef struct la_budget {
    int nh;                      /* held types */
    int x[LA_BUD_MAX_HELD];      /* the held types */
    int radix[LA_BUD_MAX_HELD];  /* count(x[h]) + 1 */
    int stride[LA_BUD_MAX_HELD]; /* the place of digit h */
    int nb;                      /* budgets: the product of the radices */
    int T1, K;                   /* rows per view (T + 1) and types per row */
    double lam[MODEL_MAX_TYPES]; /* the shadow prices of the others (0 on the held) */
    double *P, *TR, *TH;         /* [M, nb, T+1, K] as dp_price, dp_true, dp_th */
    int *J;                      /* [M, nb, T+1, K] as dp_last */
    int *b1, *b2;                /* [M, nb, T+1] as dp_b1, dp_b2 */
    int *U;                      /* [M, nb, T+1, 2, K] as dp_units */
} la_budget;

/* la_bud_free frees b and what it holds; NULL is fine. */
static void la_bud_free(la_budget *b) {
    if (!b) return;
    free(b->P);
    free(b->TR);
    free(b->TH);
    free(b->J);
    free(b->b1);
    free(b->b2);
    free(b->U);
    free(b);
}

/* grow makes *p hold n elements of `elem` bytes, keeping its contents. */
static int grow(void *pp, size_t *cap, size_t n, size_t elem) {
    void **p = pp;
    if (n == 0) n = 1;
    if (*cap >= n) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

agent_rollout *agent_rollout_create(const agent_net_dims *d) {
    agent_rollout *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->d = *d;
    r->la_version = AGENT_FEATURES_VERSION;
    r->ws = agent_net_ws_create(d);
    if (!r->ws) {
        free(r);
        return NULL;
    }
    return r;
}

static void free_envs(agent_rollout *r) {
    for (int b = 0; b < r->env_cap; b++) {
        gym_free(r->env[b]);
        r->env[b] = NULL;
    }
}

void agent_rollout_free(agent_rollout *r) {
    if (!r) return;
    free_envs(r);
    for (size_t b = 0; b < r->cap_b; b++) {
        if (r->tasks) free(r->tasks[b]);
        if (r->pplan) model_plan_free(r->pplan[b]);
    }
    free(r->env);
    free(r->inst_of);
    free(r->ep);
    free(r->last);
    free(r->assign);
    free(r->tasks);
    free(r->task_cap);
    free(r->n_tasks);
    free(r->pplan);
    free(r->pplan_cap);
    free(r->psum);
    free(r->dp_price);
    free(r->dp_true);
    free(r->dp_th);
    free(r->dp_last);
    free(r->dp_b1);
    free(r->dp_b2);
    free(r->dp_h);
    free(r->dp_lam);
    free(r->dp_units);
    for (size_t g = 0; g < r->cap_dbud; g++) la_bud_free(r->dp_bud[g]);
    free(r->dp_bud);
    free(r->dp_key);
    free(r->gkey);
    free(r->env_tag);
    free(r->la_rep);
    free(r->la_list);
    free(r->la_hash);
    free(r->la_memo);
    free(r->la_known);
    free(r->lt_child);
    free(r->lt_feat);
    free(r->lt_mask);
    free(r->lt_known);
    free(r->lt_key);
    free(r->lt_cur);
    free(r->lf);
    free(r->len);
    free(r->glob);
    free(r->rows);
    free(r->prev);
    free(r->mask);
    free(r->action);
    free(r->adv);
    free(r->probs);
    free(r->pall);
    free(r->active);
    free(r->lf_tmp);
    free(r->nglob);
    free(r->nrows);
    free(r->nmask);
    free(r->naction);
    free(r->nowner);
    free(r->nadv);
    free(r->nforced);
    free(r->demo_st);
    free(r->demo_act);
    agent_net_ws_free(r->ws);
    free(r);
}

/* per_episode_alloc sizes the [B] arrays (new slots zeroed). */
static int per_episode_alloc(agent_rollout *r, int B) {
    size_t old = r->cap_b;
    if ((size_t)B <= old) return 0;
    size_t n = (size_t)B;
    gym_env **env = realloc(r->env, n * sizeof *env);
    if (!env) return -1;
    r->env = env;
    int **tasks = realloc(r->tasks, n * sizeof *tasks);
    if (!tasks) return -1;
    r->tasks = tasks;
    model_plan **pp = realloc(r->pplan, n * sizeof *pp);
    if (!pp) return -1;
    r->pplan = pp;
    uint64_t *tag = realloc(r->env_tag, n * sizeof *tag);
    if (!tag) return -1;
    r->env_tag = tag;
    for (size_t b = old; b < n; b++) {
        r->env[b] = NULL;
        r->env_tag[b] = 0;
        r->tasks[b] = NULL;
        r->pplan[b] = NULL;
    }
    r->env_cap = B;
    int *tc = realloc(r->task_cap, n * sizeof *tc), *pc = realloc(r->pplan_cap, n * sizeof *pc);
    if (tc) r->task_cap = tc;
    if (pc) r->pplan_cap = pc;
    if (!tc || !pc) return -1;
    for (size_t b = old; b < n; b++) r->task_cap[b] = r->pplan_cap[b] = 0;
    int *io = realloc(r->inst_of, n * sizeof *io), *nt = realloc(r->n_tasks, n * sizeof *nt);
    if (io) r->inst_of = io;
    if (nt) r->n_tasks = nt;
    agent_episode *ep = realloc(r->ep, n * sizeof *ep);
    if (ep) r->ep = ep;
    gym_step_result *last = realloc(r->last, n * sizeof *last);
    if (last) r->last = last;
    if (!io || !nt || !ep || !last) return -1;
    r->cap_b = n;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Parallel sections
 * ------------------------------------------------------------------------ */

/* lookahead fills the AGENT_FX look-ahead features (rollout.h) of the
 * allowed rows of episode b at layer t. Every completion is priced as
 * model_eval would price it, from stage figures: the prefix's closed stages
 * once (model_stage_eval), then each candidate stage "type k on layers
 * first..j" and "type t2 on j+1..L-1" in O(1) from prefix sums of the layer
 * figures (model_stage_fill), so that all the two-stage completions of a
 * step cost O(T^2 L) arithmetic, not O(T^2 L) plan evaluations. */
#define LA_CAP 4.0
#define LA_MEMO_MAX ((size_t)1 << 18) /* stages the memo holds at most (4.25 MiB) */
#define LA_MAX_TWO_STAGE_TYPES 16

typedef struct la_stage {
    int ok;     /* reaches R, fits one unit's memory and its type's unit count */
    int units;  /* k_s */
    double th;  /* theta_s(k_s) */
} la_stage;

static la_stage la_fill(const model_job *job, const model_cluster *cl, const double *ps, int L, int ty,
                        int first, int last) {
    const double *pf = ps, *pi = ps + (L + 1), *pp = ps + 2 * (L + 1), *pm = ps + 3 * (L + 1);
    model_span sum = {pf[last + 1] - pf[first], pi[last + 1] - pi[first], 0, pp[last + 1] - pp[first],
                      pm[last + 1] - pm[first]};
    if (first > 0) sum.act += job->layers[first - 1].act;
    if (last < L - 1) sum.act += job->layers[last].act;
    model_stage st;
    model_stage_fill(job, cl, ty, first, last, &sum, &st);
    la_stage o = {st.units > 0 && st.mem <= cl->types[ty].mem && st.units <= cl->types[ty].count, st.units,
                  st.throughput};
    return o;
}

/* la_get returns la_fill's figures of stage (ty, first..last) of instance
 * g, from the run's memo when it is on: a stage's figures depend on the
 * instance alone, not on the decisions, and one step asks for the same
 * completions "t2 on j+1..L-1" as the step before, and the open run's
 * "u on f..j" as every step since f. The memo is filled by whichever step
 * asks first, with the very same arithmetic, so a look-ahead is the same
 * with or without it. Not thread-safe: agent_rollout_run turns it on only
 * when the run's look-ahead runs on one thread. */
static la_stage la_get(agent_rollout *r, int g, const model_job *job, const model_cluster *cl,
                       const double *ps, int L, int ty, int first, int last) {
    if (!r->la_memo_on) return la_fill(job, cl, ps, L, ty, first, last);
    size_t i = (((size_t)g * r->K + ty) * r->T + first) * r->T + last;
    if (!r->la_known[i]) {
        r->la_memo[i] = la_fill(job, cl, ps, L, ty, first, last);
        r->la_known[i] = 1;
    }
    return r->la_memo[i];
}

/* Completions by stages, with the exact solver's decomposition (solvers/
 * exact.c): a plan's cost is S / theta / 3600 times its price, and theta
 * couples the stages, so the cheapest price is sought at LA_DP_LEVELS
 * thresholds, R x LA_DP_RATIO^m (level 0 admits every usable stage), each
 * path scored at its own theta. A usable stage fits its type's unit count
 * on its own (la_fill); what the stages of one type take together is
 * priced instead, Lagrange's way: every unit of type k costs a shadow
 * price lambda_k on top of its own while the paths are chosen, and the
 * prices are raised, per instance, on the types the whole job's cheapest
 * path takes more units of than there are (la_dp_fill). Costs are then
 * reported at the types' own prices. Without shadow prices, the path of
 * least price at the level just below the optimum's theta costs at most
 * LA_DP_RATIO times the optimum of that relaxation. (Features version 3
 * admitted stages of any unit count and had no shadow prices: on a
 * cluster with one unit of a cheap type the cheapest completion was a run
 * of stages on it that no count allows, and on a 63-layer job whose
 * cheapest path needs more units of a mid-priced GPU than exist, every
 * completion leaned on it until the units ran out.) */
#define LA_DP_LEVELS AGENT_LA_LEVELS
#define LA_DP_RATIO AGENT_LA_RATIO
#define LA_SHADOW_STEPS 48    /* subgradient steps on the shadow prices per instance */
#define LA_SHADOW_STEPS_V5 16 /* ... for features versions 4-5 (la_dp_fill) */

/* la_dp_next returns the type other than `prev` whose completion from layer i
 * is the cheapest (dp_price row P of that layer, n types; ties: the lowest
 * type), or -1 when none exists. */
static int la_dp_next(const double *P, int n, int prev) {
    int best = -1;
    for (int k = 0; k < n; k++)
        if (k != prev && isfinite(P[k]) && (best < 0 || P[k] < P[best])) best = k;
    return best;
}

/* One level m of instance g's completions by stages: views into the dp_*
 * arrays of agent_rollout, rows of K types per layer. */
typedef struct {
    double *P, *TR, *TH; /* [T+1, K] price with shadow prices, own price, throughput */
    int *J;              /* [T+1, K] last layer of the first stage */
    int *b1, *b2;        /* [T+1] cheapest and second cheapest first type */
    const double *lam;   /* [K] shadow prices */
    double h;            /* the throughput a stage needs at this level */
    int K;
} la_level;

static la_level la_dp_at(const agent_rollout *r, int g, int m) {
    size_t o = ((size_t)g * LA_DP_LEVELS + m) * (size_t)(r->T + 1), e = o * r->K;
    return (la_level){r->dp_price + e, r->dp_true + e, r->dp_th + e, r->dp_last + e, r->dp_b1 + o,
                      r->dp_b2 + o, r->dp_lam + (size_t)g * r->K, r->dp_h[(size_t)g * LA_DP_LEVELS + m], r->K};
}

/* la_dp_after returns the type of the cheapest completion at level v from
 * layer i whose first type is not prev (-1 when none). */
static int la_dp_after(const la_level *v, int i, int prev) {
    return v->b1[i] != prev ? v->b1[i] : v->b2[i];
}

/* la_dp_rest prices what follows a stage of type k ending at layer j (of
 * L): the cheapest completion from j + 1 not starting with k, its price
 * with shadow prices in *rp, at the own prices in *rt, its throughput in
 * *rth (0, 0 and INFINITY after the last layer). Returns 0, or -1 when no
 * completion exists. */
static int la_dp_rest(const la_level *v, int j, int L, int k, double *rp, double *rt, double *rth) {
    *rp = *rt = 0;
    *rth = INFINITY;
    if (j == L - 1) return 0;
    int t2 = la_dp_after(v, j + 1, k);
    if (t2 < 0) return -1;
    size_t e = (size_t)(j + 1) * v->K + t2;
    *rp = v->P[e];
    *rt = v->TR[e];
    *rth = v->TH[e];
    return 0;
}

/* la_dp_then prices the run "stage A (type k, ending at layer j of L),
 * then level v's cheapest completion from j + 1 not starting with k": its
 * price with shadow prices in *pr, at the own prices in *tr, its
 * throughput in *th. Returns 0, or -1 when stage A is below the level or
 * no completion follows it. */
static int la_dp_then(const la_level *v, const model_cluster *cl, la_stage A, int k, int j, int L, double *pr,
                      double *tr, double *th) {
    double rp, rt, rth;
    if (A.th < v->h || la_dp_rest(v, j, L, k, &rp, &rt, &rth)) return -1;
    *pr = A.units * (cl->types[k].price + v->lam[k]) + rp;
    *tr = A.units * cl->types[k].price + rt;
    *th = fmin(A.th, rth);
    return 0;
}

/* la_dp_path adds to used[] the units of level v's cheapest path from layer
 * i of instance g whose first stage is not of type prev, its stage figures
 * through la_get (r NULL: la_fill, for la_dp_fill, which runs before the
 * run's memo is set up). */
static void la_dp_path(agent_rollout *r, int g, const la_level *v, const model_job *job, const model_cluster *cl,
                       const double *ps, int i, int prev, int *used) {
    int L = job->n_layers;
    while (i < L) {
        int t2 = la_dp_after(v, i, prev), j2 = v->J[(size_t)i * v->K + t2];
        la_stage st = r ? la_get(r, g, job, cl, ps, L, t2, i, j2) : la_fill(job, cl, ps, L, t2, i, j2);
        used[t2] += st.units;
        prev = t2;
        i = j2 + 1;
    }
}

/* la_fits returns 1 when used[] (units per type) is within every type's
 * count of cl, else 0. */
static int la_fits(const int *used, const model_cluster *cl) {
    for (int x = 0; x < cl->n_types; x++)
        if (used[x] > cl->types[x].count) return 0;
    return 1;
}

/* la_dp_root returns the cost of the whole job's completion by stages
 * that steers the shadow prices: over the levels, the path from layer 0
 * whose price times S / theta / 3600 is least -- the price with shadow
 * prices (dp_price) when shadow, else at the own prices (dp_true, features
 * versions 4-5) -- its units per type in used[n]; INFINITY when there is
 * none. At lambda = 0 both are the path of least cost. (Chosen at the own
 * prices, the path can ignore the shadow prices: a level whose paths all
 * lean on the priced type stays the cheapest, and the prices rise without
 * end.) */
static double la_dp_root(const agent_rollout *r, int g, const model_job *job, const model_cluster *cl,
                         int *used, int shadow) {
    const double *ps = r->psum + (size_t)g * 4 * (r->T + 1);
    double best = INFINITY;
    for (int m = 0; m < LA_DP_LEVELS; m++) {
        la_level v = la_dp_at(r, g, m);
        int t0 = v.b1[0];
        if (t0 < 0) break; /* none at this level: none above it either */
        double c = job->samples / v.TH[t0] / 3600.0 * (shadow ? v.P[t0] : v.TR[t0]);
        if (!(c < best)) continue;
        best = c;
        memset(used, 0, (size_t)cl->n_types * sizeof *used);
        la_dp_path(NULL, g, &v, job, cl, ps, 0, -1, used);
    }
    return best;
}

/* env_tag returns the digest of what gym_create made an episode's
 * environment from: the instance (key, its mkey_digest, and the job and
 * cluster objects themselves, which the environment borrows) and the
 * options. Never 0. */
static uint64_t env_tag(uint64_t key, const agent_instance *in, const gym_opts *go) {
    const void *objs[2] = {in->job, in->cl};
    uint64_t h = mkey_fnv(key, objs, sizeof objs);
    h = mkey_fnv(h, &go->ref_cost, sizeof go->ref_cost);
    h = mkey_fnv(h, &go->infeasible_reward, sizeof go->infeasible_reward);
    h = mkey_fnv(h, &go->plan_only, sizeof go->plan_only);
    h = mkey_fnv(h, &go->workers, sizeof go->workers);
    h = mkey_fnv(h, &go->ps, sizeof go->ps);
    return h ? h : 1;
}

/* la_dp_units_at returns the [K] units per type of the run of level v's
 * (instance g's level m) entry (i, k), k one of the row's two cheapest
 * first types (dp_b1, dp_b2: the only entries la_dp_after returns). */
static int *la_dp_units_at(const agent_rollout *r, int g, int m, const la_level *v, int i, int k) {
    size_t slot = k == v->b1[i] ? 0 : 1;
    return r->dp_units + ((((size_t)g * LA_DP_LEVELS + m) * (size_t)(r->T + 1) + i) * 2 + slot) * r->K;
}

/* Held units (features versions 8-9). On some jobs no shadow prices make
 * a completion by stages fit the counts: the least-priced path swings
 * from one type to another as their prices move (on a held-out job of two
 * types with 16 and 21 units, 21 and 6 units, then 9 and 26), the gap
 * Lagrange's prices cannot close. The state then carries the units of
 * the type the paths overran most often, held to its count exactly, and
 * shadow prices on the others (la_bud_fill). When that finds no fit,
 * version 8 holds the type overrun next instead; version 9 holds it as
 * well, the next overrun by the held run's paths, up to LA_BUD_MAX_HELD
 * types. The tables take LA_DP_LEVELS x budgets x (T + 1) rows of K
 * entries, the budgets at most LA_BUD_MAX_STATES: 40 MiB for 64 layers
 * and 8 types. */
#define LA_BUD_MAX_STATES 65 /* budgets at most (one type of 64 units) */
#define LA_BUD_TRIES_V8 2    /* version 8: types tried one at a time, until one fits */
#define LA_BUD_STEPS 16      /* subgradient steps on the others' prices per try */

/* la_bud_create returns empty tables for the nh held types x[] of cl
 * (their radices' product at most LA_BUD_MAX_STATES) on T layers and K
 * types, or NULL when memory runs out; la_bud_free frees them. */
static la_budget *la_bud_create(const int *x, int nh, const model_cluster *cl, int T, int K) {
    la_budget *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->nh = nh;
    b->nb = 1;
    for (int h = 0; h < nh; h++) {
        b->x[h] = x[h];
        b->radix[h] = cl->types[x[h]].count + 1;
        b->stride[h] = b->nb;
        b->nb *= b->radix[h];
    }
    b->T1 = T + 1;
    b->K = K;
    size_t rows = (size_t)LA_DP_LEVELS * b->nb * b->T1, e = rows * K;
    b->P = malloc(e * sizeof *b->P);
    b->TR = malloc(e * sizeof *b->TR);
    b->TH = malloc(e * sizeof *b->TH);
    b->J = malloc(e * sizeof *b->J);
    b->b1 = malloc(rows * sizeof *b->b1);
    b->b2 = malloc(rows * sizeof *b->b2);
    b->U = malloc(e * 2 * sizeof *b->U);
    if (!b->P || !b->TR || !b->TH || !b->J || !b->b1 || !b->b2 || !b->U) {
        la_bud_free(b);
        return NULL;
    }
    return b;
}

/* la_bud_spend returns budget u of b after a stage of `units` units of
 * type k (u itself when k is not held), or -1 when u has fewer left. */
static int la_bud_spend(const la_budget *b, int u, int k, int units) {
    for (int h = 0; h < b->nh; h++)
        if (b->x[h] == k) return (u / b->stride[h]) % b->radix[h] < units ? -1 : u - units * b->stride[h];
    return u;
}

/* la_bud_left returns the budget of what the units pre[] (per type) leave
 * of the held types' counts, or -1 when they overrun one. */
static int la_bud_left(const la_budget *b, const int *pre) {
    int u = 0;
    for (int h = 0; h < b->nh; h++) {
        int left = b->radix[h] - 1 - pre[b->x[h]];
        if (left < 0) return -1;
        u += left * b->stride[h];
    }
    return u;
}

/* la_bud_at returns the view of level m (threshold h) at budget u of b. */
static la_level la_bud_at(const la_budget *b, int m, int u, double h) {
    size_t o = ((size_t)m * b->nb + u) * b->T1, e = o * b->K;
    return (la_level){b->P + e, b->TR + e, b->TH + e, b->J + e, b->b1 + o, b->b2 + o, b->lam, h, b->K};
}

/* la_bud_units_at returns the [K] units per type of the run of entry
 * (i, k) of view v (level m, budget u of b), k one of the row's two
 * cheapest first types. */
static int *la_bud_units_at(const la_budget *b, int m, int u, const la_level *v, int i, int k) {
    size_t slot = k == v->b1[i] ? 0 : 1;
    return b->U + ((((size_t)m * b->nb + u) * b->T1 + i) * 2 + slot) * b->K;
}

/* la_bud_pass computes b's completions at its shadow prices, per level
 * from the last layer backwards (la_dp_pass says what an entry is; that
 * is this with no type held), each stage of a held type spending its
 * units from the budget: entry (m, u, i, k) takes stage A = k on i..j,
 * then view (m, la_bud_spend(u, A))'s cheapest run from j + 1 not
 * starting with k. Fills the units of each row's two cheapest entries as
 * it goes (rows after i are final by then). */
static void la_bud_pass(agent_rollout *r, int g, la_budget *b, const model_job *job, const model_cluster *cl) {
    int L = job->n_layers, n = cl->n_types, K = b->K;
    const double *ps = r->psum + (size_t)g * 4 * (r->T + 1), *H = r->dp_h + (size_t)g * LA_DP_LEVELS;
    size_t e = (size_t)LA_DP_LEVELS * b->nb * b->T1 * K;
    for (size_t q = 0; q < e; q++) {
        b->P[q] = b->TR[q] = b->TH[q] = INFINITY;
        b->J[q] = -1;
    }
    memset(b->U, 0, e * 2 * sizeof *b->U);
    for (size_t q = 0; q < (size_t)LA_DP_LEVELS * b->nb * b->T1; q++) b->b1[q] = b->b2[q] = -1;
    for (int i = L - 1; i >= 0; i--) {
        for (int k = 0; k < n; k++)
            for (int j = i; j < L; j++) {
                la_stage A = la_fill(job, cl, ps, L, k, i, j);
                if (!A.ok) continue;
                for (int m = 0; m < LA_DP_LEVELS && A.th >= H[m]; m++)
                    for (int u = 0; u < b->nb; u++) {
                        int ur = la_bud_spend(b, u, k, A.units);
                        if (ur < 0) continue;
                        la_level rest = la_bud_at(b, m, ur, H[m]), v = la_bud_at(b, m, u, H[m]);
                        double pr, tr, th;
                        size_t c = (size_t)i * K + k;
                        if (la_dp_then(&rest, cl, A, k, j, L, &pr, &tr, &th) || !(pr < v.P[c])) continue;
                        v.P[c] = pr;
                        v.TR[c] = tr;
                        v.TH[c] = th;
                        v.J[c] = j;
                    }
            }
        for (int m = 0; m < LA_DP_LEVELS; m++)
            for (int u = 0; u < b->nb; u++) {
                la_level v = la_bud_at(b, m, u, H[m]);
                const double *P = v.P + (size_t)i * K;
                v.b1[i] = la_dp_next(P, n, -1);
                v.b2[i] = v.b1[i] < 0 ? -1 : la_dp_next(P, n, v.b1[i]);
                for (int q = 0; q < 2; q++) {
                    int k = q ? v.b2[i] : v.b1[i];
                    if (k < 0) continue;
                    int j = v.J[(size_t)i * K + k], *w = la_bud_units_at(b, m, u, &v, i, k);
                    la_stage A = la_fill(job, cl, ps, L, k, i, j);
                    w[k] += A.units;
                    if (j + 1 == L) continue;
                    int ur = la_bud_spend(b, u, k, A.units);
                    la_level rest = la_bud_at(b, m, ur, H[m]);
                    const int *z = la_bud_units_at(b, m, ur, &rest, j + 1, la_dp_after(&rest, j + 1, k));
                    for (int y = 0; y < n; y++) w[y] += z[y];
                }
            }
    }
}

/* la_bud_then prices, as la_dp_then, the run "stage A (type k, ending at
 * layer j of L), then the cheapest completion from j + 1 not starting
 * with k that keeps the held types within budget `left` less A's units",
 * at level m of b (threshold h); its units per type, A's included, are
 * added to used[] (which the caller fills with the prefix's). Returns 0,
 * or -1 when A overruns the budget, is below the level or nothing
 * follows. */
static int la_bud_then(const la_budget *b, const model_cluster *cl, la_stage A, int k, int j, int L, int m,
                       double h, int left, double *pr, double *tr, double *th, int *used) {
    left = la_bud_spend(b, left, k, A.units);
    if (left < 0) return -1;
    la_level rest = la_bud_at(b, m, left, h);
    if (la_dp_then(&rest, cl, A, k, j, L, pr, tr, th)) return -1;
    used[k] += A.units;
    if (j + 1 < L) {
        const int *z = la_bud_units_at(b, m, left, &rest, j + 1, la_dp_after(&rest, j + 1, k));
        for (int y = 0; y < cl->n_types; y++) used[y] += z[y];
    }
    return 0;
}

/* la_bud_fitting returns the least cost (at the own prices) of b's
 * whole-job completions at its current prices that fit every count, over
 * the levels and first stages (k on 0..j, then the level's cheapest run
 * from j + 1 within the whole budget); INFINITY when none fits. */
static double la_bud_fitting(agent_rollout *r, int g, const la_budget *b, const model_job *job,
                             const model_cluster *cl) {
    int L = job->n_layers, n = cl->n_types, cx = b->nb - 1;
    const double *ps = r->psum + (size_t)g * 4 * (r->T + 1), *H = r->dp_h + (size_t)g * LA_DP_LEVELS;
    double best = INFINITY;
    for (int m = 0; m < LA_DP_LEVELS; m++) {
        if (la_bud_at(b, m, cx, H[m]).b1[0] < 0) break; /* none at this level: none above it either */
        for (int k = 0; k < n; k++)
            for (int j = 0; j < L; j++) {
                la_stage A = la_fill(job, cl, ps, L, k, 0, j);
                double pr, tr, th;
                int used[MODEL_MAX_TYPES] = {0};
                if (!A.ok || la_bud_then(b, cl, A, k, j, L, m, H[m], cx, &pr, &tr, &th, used)) continue;
                double c = job->samples / th / 3600.0 * tr;
                if (c < best && la_fits(used, cl)) best = c;
            }
    }
    return best;
}

/* la_bud_steer puts into steer[] the units per type of the run that steers
 * b's prices: of the levels' cheapest whole-job runs within the whole
 * budget, the least by price with shadow prices. Returns 1, or 0 when
 * there is none. */
static int la_bud_steer(agent_rollout *r, int g, const la_budget *b, const model_job *job,
                        const model_cluster *cl, int *steer) {
    const double *H = r->dp_h + (size_t)g * LA_DP_LEVELS;
    int cx = b->nb - 1, steered = 0;
    double sbest = INFINITY;
    for (int m = 0; m < LA_DP_LEVELS; m++) {
        la_level v = la_bud_at(b, m, cx, H[m]);
        int t0 = v.b1[0];
        if (t0 < 0) break; /* none at this level: none above it either */
        double sc = job->samples / v.TH[t0] / 3600.0 * v.P[t0];
        if (sc < sbest) {
            sbest = sc;
            memcpy(steer, la_bud_units_at(b, m, cx, &v, 0, t0), (size_t)cl->n_types * sizeof *steer);
            steered = 1;
        }
    }
    return steered;
}

/* la_price_step takes subgradient step `it` (from 0) on the shadow prices
 * lam[n] of cl's types from the units per type used[] of the run that
 * steers them: lambda_k += step x (used_k - c_k) / (c_k + 1), floored at 0,
 * step = the mean unit price / (1 + it), on every type b does not hold
 * (b NULL: none held); adds 1 to over[k] for every type the run overran.
 * Returns 1 when a price moved, else 0. */
static int la_price_step(double *lam, const int *used, const model_cluster *cl, int it, const la_budget *b,
                         int *over) {
    int n = cl->n_types, moved = 0;
    double mean = 0;
    for (int k = 0; k < n; k++) mean += cl->types[k].price / n;
    for (int k = 0; k < n; k++) {
        over[k] += used[k] > cl->types[k].count;
        if (b && la_bud_spend(b, 0, k, 1) < 0) continue; /* held: no price */
        double x = fmax(0.0, lam[k] + mean / (1.0 + it) * (used[k] - cl->types[k].count) /
                                          (cl->types[k].count + 1.0));
        moved |= x != lam[k];
        lam[k] = x;
    }
    return moved;
}

/* la_bud_fill seeks, for instance g, completions by stages that fit the
 * counts with the nh types x[] held (la_budget): subgradient steps on the
 * other types' prices as la_dp_fill's, steered by la_bud_steer's run, each
 * step adding 1 to over[k] for every type k the steering run overran;
 * returns the budget at the prices under which the cheapest fitting
 * completion was found (owned by the caller), or NULL when none fits or
 * memory runs out. */
static la_budget *la_bud_fill(agent_rollout *r, int g, const model_job *job, const model_cluster *cl, const int *x,
                              int nh, int *over) {
    int n = cl->n_types, used[MODEL_MAX_TYPES], found = 0;
    la_budget *b = la_bud_create(x, nh, cl, r->T, r->K);
    if (!b) return NULL;
    double keep[MODEL_MAX_TYPES], passed[MODEL_MAX_TYPES], kept = INFINITY;
    memset(b->lam, 0, sizeof b->lam);
    for (int it = 0; it < LA_BUD_STEPS; it++) {
        la_bud_pass(r, g, b, job, cl);
        memcpy(passed, b->lam, sizeof passed);
        double f = la_bud_fitting(r, g, b, job, cl);
        int steered = la_bud_steer(r, g, b, job, cl, used);
        if (f < kept) {
            kept = f;
            memcpy(keep, b->lam, sizeof keep);
            found = 1;
        }
        if (!steered) break;
        if (!la_price_step(b->lam, used, cl, it, b, over)) break; /* over[]: never a held type */
    }
    if (!found) {
        la_bud_free(b);
        return NULL;
    }
    memcpy(b->lam, keep, (size_t)n * sizeof *keep);
    if (memcmp(keep, passed, (size_t)n * sizeof *keep)) la_bud_pass(r, g, b, job, cl);
    return b;
}

/* la_dp_slot returns instance g's completions by stages (the dp_*
 * arrays of agent_rollout, its slot) as tables with no type held: one
 * budget, the shadow prices dp_lam. The tables are borrowed, not owned. */
static la_budget la_dp_slot(const agent_rollout *r, int g) {
    size_t o = (size_t)g * LA_DP_LEVELS * (r->T + 1), e = o * r->K;
    la_budget s = {0};
    s.nb = 1;
    s.T1 = r->T + 1;
    s.K = r->K;
    memcpy(s.lam, r->dp_lam + (size_t)g * r->K, (size_t)r->K * sizeof *s.lam);
    s.P = r->dp_price + e;
    s.TR = r->dp_true + e;
    s.TH = r->dp_th + e;
    s.J = r->dp_last + e;
    s.b1 = r->dp_b1 + o;
    s.b2 = r->dp_b2 + o;
    s.U = r->dp_units + e * 2;
    return s;
}

/* la_dp_pass computes instance g's completions by stages (dp_* of
 * agent_rollout) at the shadow prices dp_lam and thresholds dp_h, and the
 * units of each row's two cheapest entries (dp_units): la_bud_pass with no
 * type held, the exact solver's relaxation with each stage held to its
 * type's unit count, every stage priced as la_fill prices it. For level
 * m, layer i and type k, the least sum of stage prices (units x (price +
 * lambda)) over runs of usable stages of throughput at least
 * R x LA_DP_RATIO^m (level 0: any), covering layers i..L-1, neighbours of
 * different types, whose first stage is k on i..j; ties keep the shortest
 * first stage, then the lowest type. */
static void la_dp_pass(agent_rollout *r, int g, const model_job *job, const model_cluster *cl) {
    la_budget s = la_dp_slot(r, g);
    la_bud_pass(r, g, &s, job, cl);
}

/* la_dp_fitting returns the least cost (at the own prices) of the whole
 * job's completions by stages at the current shadow prices whose stages
 * together fit the unit counts, over the levels: with every = 0 (features
 * version 6) the path from layer 0 that starts with the cheapest first
 * type (dp_b1) and the one that starts with the second cheapest (dp_b2);
 * with every = 1 (version 7) every first stage, k on layers 0..j for every
 * k and j, then the level's cheapest path from j + 1 -- the completions the
 * look-ahead tries at the first decision (la_bud_fitting on the tables
 * with no type held). INFINITY when none fits. */
static double la_dp_fitting(agent_rollout *r, int g, const model_job *job, const model_cluster *cl, int every) {
    if (every) {
        la_budget s = la_dp_slot(r, g);
        return la_bud_fitting(r, g, &s, job, cl);
    }
    const double *ps = r->psum + (size_t)g * 4 * (r->T + 1);
    double best = INFINITY;
    for (int m = 0; m < LA_DP_LEVELS; m++) {
        la_level v = la_dp_at(r, g, m);
        if (v.b1[0] < 0) break; /* none at this level: none above it either */
        for (int q = 0; q < 2; q++) {
            int t0 = q ? v.b2[0] : v.b1[0], used[MODEL_MAX_TYPES] = {0};
            if (t0 < 0) continue;
            double c = job->samples / v.TH[t0] / 3600.0 * v.TR[t0];
            if (!(c < best)) continue;
            la_dp_path(NULL, g, &v, job, cl, ps, 0, q ? v.b1[0] : -1, used);
            if (la_fits(used, cl)) best = c;
        }
    }
    return best;
}

/* la_bud_pick returns the type overrun most often (over[], ties: the
 * lowest) whose count + 1 times `states` stays within LA_BUD_MAX_STATES,
 * or -1 when none was overrun. */
static int la_bud_pick(const model_cluster *cl, const int *over, int states) {
    int x = -1;
    for (int k = 0; k < cl->n_types; k++)
        if (over[k] > 0 && states * (cl->types[k].count + 1) <= LA_BUD_MAX_STATES && (x < 0 || over[k] > over[x]))
            x = k;
    return x;
}

/* la_dp_fill computes instance g's completions by stages and their shadow
 * prices: from lambda = 0, subgradient steps (la_price_step) on the whole
 * job's completion that steers them (la_dp_root), lambda_k += step x
 * (units of k it takes - c_k) / (c_k + 1), floored at 0, step = the mean
 * unit price / (1 + step number); the prices under which a completion fits the counts at the
 * least cost are kept (none fits: lambda = 0, version 3's paths with the
 * stages held to their counts). A job whose cheapest completion fits keeps
 * lambda = 0 after one pass. Features version 6 (r->la_version) steers by
 * the shadow-priced path, takes LA_SHADOW_STEPS steps and checks every
 * level's two paths at each (la_dp_fitting), version 7 every first stage
 * and the level's path after it; versions 4-5 steered by the
 * path of least cost, took LA_SHADOW_STEPS_V5 steps and checked that path
 * alone, and on 62 of 800 held-out jobs, each with a feasible plan, no
 * prices fit (32 with version 6, 16 with version 7: docs/agent-runs.md).
 * Where none fit, versions 8-9 hold types' units (la_bud_fill): 6 jobs
 * are left with version 8, 5 with version 9. */
static void la_dp_fill(agent_rollout *r, int g, const model_job *job, const model_cluster *cl) {
    int n = cl->n_types, used[MODEL_MAX_TYPES], found = 0, v6 = r->la_version >= 6, over[MODEL_MAX_TYPES] = {0};
    double *lam = r->dp_lam + (size_t)g * r->K, keep[MODEL_MAX_TYPES], kept = INFINITY;
    for (int k = 0; k < r->K; k++) lam[k] = 0;
    for (int m = 0; m < LA_DP_LEVELS; m++) /* the levels' thresholds, for every pass */
        r->dp_h[(size_t)g * LA_DP_LEVELS + m] = m ? job->min_throughput * pow(LA_DP_RATIO, m) : 0.0;
    la_dp_pass(r, g, job, cl);
    for (int it = 0; it < (v6 ? LA_SHADOW_STEPS : LA_SHADOW_STEPS_V5); it++) {
        double f = v6 ? la_dp_fitting(r, g, job, cl, r->la_version >= 7) : INFINITY;
        double c = la_dp_root(r, g, job, cl, used, v6);
        if (!v6 && isfinite(c) && la_fits(used, cl)) f = c; /* used[] is unset when c is not */
        if (f < kept) {
            kept = f;
            memcpy(keep, lam, (size_t)n * sizeof *lam);
            found = 1;
        }
        if (!isfinite(c)) break;
        if (!la_price_step(lam, used, cl, it, NULL, over)) break;
        la_dp_pass(r, g, job, cl);
    }
    int same = 1;
    for (int k = 0; k < n; k++) {
        double want = found ? keep[k] : 0.0;
        same &= lam[k] == want;
        lam[k] = want;
    }
    if (!same) la_dp_pass(r, g, job, cl);
    la_bud_free(r->dp_bud[g]);
    r->dp_bud[g] = NULL;
    /* version 8: none found -- hold the type the paths overran most often;
     * when that finds no fit either, the next instead (one table at a
     * time). Version 9 then holds the first and, with it, the type its held
     * run's paths overran most often, and so on while the budgets stay
     * within LA_BUD_MAX_STATES */
    if (r->la_version < 8 || found) return;
    int held[LA_BUD_MAX_HELD], first = -1, after[MODEL_MAX_TYPES] = {0};
    for (int tries = 0; !r->dp_bud[g] && tries < LA_BUD_TRIES_V8; tries++) {
        held[0] = la_bud_pick(cl, over, 1);
        if (held[0] < 0) break;
        int next[MODEL_MAX_TYPES] = {0};
        r->dp_bud[g] = la_bud_fill(r, g, job, cl, held, 1, next);
        if (!tries) { /* the first held type and what its run overran */
            first = held[0];
            memcpy(after, next, sizeof after);
        }
        over[held[0]] = 0;
    }
    if (r->la_version < 9 || first < 0) return;
    int nh = 1, states = cl->types[first].count + 1;
    held[0] = first;
    while (!r->dp_bud[g] && nh < LA_BUD_MAX_HELD) {
        int x = la_bud_pick(cl, after, states);
        if (x < 0) break;
        held[nh++] = x;
        states *= cl->types[x].count + 1;
        memset(after, 0, sizeof after);
        r->dp_bud[g] = la_bud_fill(r, g, job, cl, held, nh, after);
    }
}

/* la_bud_fit returns features 7-8's cost for a job with held types
 * (la_budget b of instance g): the least cost over the levels and the
 * ends j of k's stage (s..j, t <= j) of "the prefix (price pr0, throughput
 * th0, units pre[]), k on s..j, then the cheapest completion that keeps
 * the held types within their counts" among those whose units fit every
 * count; INFINITY when none does. */
static double la_bud_fit(agent_rollout *r, int g, const la_budget *b, const model_job *job,
                         const model_cluster *cl, const double *ps, int k, int s, int t, double th0, double pr0,
                         const int *pre) {
    int L = job->n_layers, left = la_bud_left(b, pre);
    const double *H = r->dp_h + (size_t)g * LA_DP_LEVELS;
    double best = INFINITY;
    if (left < 0) return best;
    for (int j = t; j < L; j++) {
        la_stage A = la_get(r, g, job, cl, ps, L, k, s, j);
        if (!A.ok) continue;
        for (int m = 0; m < LA_DP_LEVELS && A.th >= H[m]; m++) {
            double pr, tr, th;
            int used[MODEL_MAX_TYPES];
            memcpy(used, pre, (size_t)cl->n_types * sizeof *used);
            if (la_bud_then(b, cl, A, k, j, L, m, H[m], left, &pr, &tr, &th, used)) break;
            double c = job->samples / fmin(th0, th) / 3600.0 * (pr0 + tr);
            if (c < best && la_fits(used, cl)) best = c;
        }
    }
    return best;
}

static void lookahead(agent_rollout *r, int b, int t, int n_types, const uint8_t *mk, float *rw) {
    int g = r->inst_of[b];
    const agent_instance *in = &r->inst[g];
    const model_job *job = in->job;
    const model_cluster *cl = in->cl;
    const double *ps = r->psum + (size_t)g * 4 * (r->T + 1);
    int L = job->n_layers, T = n_types;
    const int *a = gym_assignment(r->env[b], NULL);
    /* the prefix: closed stages, and the open run (u, f..t-1) */
    int base[MODEL_MAX_TYPES] = {0}, ok_c = 1, u = -1, f = t;
    double th_c = INFINITY, price_c = 0;
    if (t > 0) {
        u = a[t - 1];
        f = t - 1;
        while (f > 0 && a[f - 1] == u) f--;
        for (int i = 0; i < f;) {
            int j = i;
            while (j + 1 < f && a[j + 1] == a[i]) j++;
            model_stage st;
            model_stage_eval(job, cl, a[i], i, j, &st);
            ok_c &= st.units > 0 && st.mem <= cl->types[a[i]].mem;
            base[a[i]] += st.units;
            price_c += st.units * cl->types[a[i]].price;
            if (st.throughput < th_c) th_c = st.throughput;
            i = j + 1;
        }
        ok_c &= la_fits(base, cl);
    }
    la_stage o_closed = {1, 0, INFINITY};
    if (t > 0) {
        model_stage st;
        model_stage_eval(job, cl, u, f, t - 1, &st);
        o_closed = (la_stage){st.units > 0 && st.mem <= cl->types[u].mem, st.units, st.throughput};
    }
    double c_all[MODEL_MAX_TYPES], c_two[MODEL_MAX_TYPES], cmin = INFINITY;
    for (int k = 0; k < T; k++) c_all[k] = c_two[k] = INFINITY;
    int two = T <= LA_MAX_TWO_STAGE_TYPES;
    double S = job->samples;
    for (int j = t; j < L && ok_c; j++) {
        la_stage A[MODEL_MAX_TYPES], B[MODEL_MAX_TYPES];
        for (int k = 0; k < T; k++)
            if (mk[k]) A[k] = la_get(r, g, job, cl, ps, L, k, k == u ? f : t, j);
        if (j < L - 1 && two)
            for (int t2 = 0; t2 < T; t2++) B[t2] = la_get(r, g, job, cl, ps, L, t2, j + 1, L - 1);
        for (int k = 0; k < T; k++) {
            if (!mk[k] || !A[k].ok) continue;
            int closes = t > 0 && k != u; /* the open run becomes a closed stage */
            if (closes && !o_closed.ok) continue;
            double th0 = fmin(th_c, closes ? o_closed.th : INFINITY);
            double pr0 = price_c + (closes ? o_closed.units * cl->types[u].price : 0);
            int used_u = t > 0 ? base[u] + (closes ? o_closed.units : 0) : 0;
            if (t > 0 && u != k && used_u > cl->types[u].count) continue;
            int used_k = base[k] + A[k].units; /* k == u: the open run is inside A */
            if (used_k > cl->types[k].count) continue;
            double thA = fmin(th0, A[k].th), prA = pr0 + A[k].units * cl->types[k].price;
            if (j == L - 1) {
                double c = S / thA / 3600.0 * prA;
                c_all[k] = c;
                if (c < c_two[k]) c_two[k] = c;
                continue;
            }
            if (!two) continue;
            for (int t2 = 0; t2 < T; t2++) {
                if (t2 == k || !B[t2].ok) continue;
                int used_t2 = base[t2] + B[t2].units + (t2 == u && closes ? o_closed.units : 0);
                if (used_t2 > cl->types[t2].count) continue;
                double c = S / fmin(thA, B[t2].th) / 3600.0 * (prA + B[t2].units * cl->types[t2].price);
                if (c < c_two[k]) c_two[k] = c;
            }
        }
    }
    for (int k = 0; k < T; k++)
        if (mk[k] && c_two[k] < cmin) cmin = c_two[k];
    /* completions by stages (la_dp_fill): k on s..j, then the run from
     * j + 1 cheapest at the shadow prices, per threshold level, each stage
     * within its type's count; the cheapest by cost (at the own prices)
     * over the levels, then checked against the counts the stages take
     * together */
    double c_dp[MODEL_MAX_TYPES], dmin = INFINITY;
    int fit_dp[MODEL_MAX_TYPES] = {0};
    la_level lv[LA_DP_LEVELS];
    for (int m = 0; m < LA_DP_LEVELS; m++) lv[m] = la_dp_at(r, g, m);
    /* and those that fit the counts (features 7-8): k on s..j, then level
     * m's cheapest path from j + 1, over every j and level, kept only when
     * the prefix's units and the run's fit every type's count */
    double c_fit[MODEL_MAX_TYPES], fmin_fit = INFINITY;
    const la_budget *bud = r->dp_bud[g]; /* version 8, a held type: la_bud_fit instead */
    for (int k = 0; k < T; k++) {
        c_dp[k] = c_fit[k] = INFINITY;
        int closes = t > 0 && k != u, s = k == u ? f : t;
        if (!mk[k] || !ok_c || (closes && !o_closed.ok)) continue;
        double th0 = fmin(th_c, closes ? o_closed.th : INFINITY);
        double pr0 = price_c + (closes ? o_closed.units * cl->types[u].price : 0);
        int pre[MODEL_MAX_TYPES];
        memcpy(pre, base, sizeof pre);
        if (closes) pre[u] += o_closed.units;
        /* per level, the run of least price (ties: the shortest first
         * stage): price, own price, throughput, last layer of k's stage --
         * for a new stage at t (s == t), the programme's own entry (t, k),
         * found by the same walk */
        double lp[LA_DP_LEVELS], lt[LA_DP_LEVELS], lh[LA_DP_LEVELS];
        int lj[LA_DP_LEVELS];
        for (int m = 0; m < LA_DP_LEVELS; m++) {
            lp[m] = lt[m] = lh[m] = INFINITY;
            lj[m] = -1;
        }
        /* by the end j of k's stage, then the levels the stage reaches; a
         * level with no run after it has none above it either */
        for (int j = t; j < L; j++) {
            la_stage A = la_get(r, g, job, cl, ps, L, k, s, j);
            if (!A.ok) continue;
            for (int m = 0; m < LA_DP_LEVELS && A.th >= lv[m].h; m++) {
                const la_level *v = &lv[m];
                double pr, tr, th;
                if (la_dp_then(v, cl, A, k, j, L, &pr, &tr, &th)) break;
                if (pr < lp[m]) {
                    lp[m] = pr;
                    lt[m] = tr;
                    lh[m] = th;
                    lj[m] = j;
                }
                double c = S / fmin(th0, th) / 3600.0 * (pr0 + tr);
                if (bud || !(c < c_fit[k])) continue;
                const int *w = j + 1 < L ? la_dp_units_at(r, g, m, v, j + 1, la_dp_after(v, j + 1, k)) : NULL;
                int used[MODEL_MAX_TYPES];
                for (int x = 0; x < T; x++) used[x] = pre[x] + (w ? w[x] : 0);
                used[k] += A.units;
                if (la_fits(used, cl)) c_fit[k] = c;
            }
        }
        if (bud) c_fit[k] = la_bud_fit(r, g, bud, job, cl, ps, k, s, t, th0, pr0, pre);
        if (c_fit[k] < fmin_fit) fmin_fit = c_fit[k];
        int bm = -1, bj = -1;
        for (int m = 0; m < LA_DP_LEVELS; m++) {
            if (lj[m] < 0) break; /* no path at this level: none above it either */
            double c = S / fmin(th0, lh[m]) / 3600.0 * (pr0 + lt[m]);
            if (c < c_dp[k]) {
                c_dp[k] = c;
                bm = m;
                bj = lj[m];
            }
        }
        if (bm < 0) continue;
        if (c_dp[k] < dmin) dmin = c_dp[k];
        int used[MODEL_MAX_TYPES];
        memcpy(used, pre, sizeof used);
        used[k] += la_get(r, g, job, cl, ps, L, k, s, bj).units;
        la_dp_path(r, g, &lv[bm], job, cl, ps, bj + 1, k, used);
        fit_dp[k] = la_fits(used, cl);
    }
    for (int k = 0; k < T; k++) {
        if (!mk[k]) continue;
        float *x = rw + (size_t)k * AGENT_FT + GYM_TYPE_FEATS;
        x[0] = isfinite(c_all[k]) ? 1.0f : 0.0f;
        x[1] = isfinite(c_all[k]) ? (float)fmin(log(c_all[k] / cmin), LA_CAP) : (float)LA_CAP;
        x[2] = isfinite(c_two[k]) ? 1.0f : 0.0f;
        x[3] = isfinite(c_two[k]) ? (float)fmin(log(c_two[k] / cmin), LA_CAP) : (float)LA_CAP;
        x[4] = isfinite(c_dp[k]) ? 1.0f : 0.0f;
        x[5] = isfinite(c_dp[k]) ? (float)fmin(log(c_dp[k] / dmin), LA_CAP) : (float)LA_CAP;
        x[6] = (float)fit_dp[k];
        x[7] = isfinite(c_fit[k]) ? 1.0f : 0.0f;
        x[8] = isfinite(c_fit[k]) ? (float)fmin(log(c_fit[k] / fmin_fit), LA_CAP) : (float)LA_CAP;
    }
}

static void type_obs_fn(void *ctx, int b, int w) {
    agent_rollout *r = ctx;
    int t = r->t, B = r->B, K = r->K;
    size_t tb = (size_t)t * B + b;
    float *gl = r->glob + tb * AGENT_FG, *rw = r->rows + tb * K * AGENT_FT;
    uint8_t *mk = r->mask + tb * K;
    gym_env *env = r->env[b];
    int L = r->inst[r->inst_of[b]].job->n_layers;
    r->active[b] = t < L;
    r->action[tb] = -1;
    r->la_rep[b] = -1;
    if (gym_phase(env) != GYM_PHASE_TYPE) {
        memset(gl, 0, AGENT_FG * sizeof *gl);
        memset(rw, 0, (size_t)K * AGENT_FT * sizeof *rw);
        memset(mk, 0, (size_t)K);
        return;
    }
    gym_observation ob;
    gym_obs(env, &ob);
    memcpy(gl, ob.global, AGENT_FG * sizeof *gl);
    memset(rw, 0, (size_t)K * AGENT_FT * sizeof *rw);
    for (int k = 0; k < ob.n_rows; k++)
        memcpy(rw + (size_t)k * AGENT_FT, ob.rows + (size_t)k * GYM_TYPE_FEATS, GYM_TYPE_FEATS * sizeof *rw);
    memcpy(mk, ob.mask, (size_t)ob.n_rows);
    memset(mk + ob.n_rows, 0, (size_t)(K - ob.n_rows));
    if (ob.n_allowed == 0) {
        /* a dead end: no decision at this step */
        gym_terminate(env, &r->last[b]);
        memset(mk, 0, (size_t)K);
        return;
    }
    (void)w;
    r->la_rep[b] = b; /* la_share decides who computes it */
}

/* la_fn computes the look-ahead of the i-th episode of r->la_list. */
static void la_fn(void *ctx, int i, int w) {
    agent_rollout *r = ctx;
    int b = r->la_list[i], t = r->t, K = r->K;
    size_t tb = (size_t)t * r->B + b;
    double l0 = clock_now_s();
    lookahead(r, b, t, r->inst[r->inst_of[b]].cl->n_types, r->mask + tb * K, r->rows + tb * K * AGENT_FT);
    r->la_sec[w & 63] += clock_now_s() - l0;
}

/* The look-ahead features by prefix, kept between runs (the lt_* fields
 * of agent_rollout). Search mode plays the same instance every step, and
 * once its policy concentrates nearly every state a step meets is one an
 * earlier step met; so do a decode's runs on one job (the sampled batch,
 * greedy's, the repairs, polish's replay). The features are a function of
 * the instance and the state -- the decisions so far, and the mask they
 * imply, which is compared rather than assumed -- so a state met again
 * copies them from its node instead of running lookahead. The tree holds
 * while the layout and every slot's instance digest (gkey) do; it is
 * emptied when they change, or at the start of a run when it is full, and
 * a run that fills it goes on computing off the tree. */
#define LA_TREE_BYTES ((size_t)16 << 20)

static size_t lt_node_bytes(int K) {
    return (size_t)K * (sizeof(int) + AGENT_FX * sizeof(float) + 1) + 1;
}

size_t agent_rollout_lookahead_bytes(int T, int K, const model_cluster *cl, size_t states) {
    size_t t = (size_t)(T > 0 ? T : 1), k = (size_t)(K > 0 ? K : 1);
    /* the stage memo, when a run of one instance uses it */
    size_t stages = k * t * t, bytes = (stages <= LA_MEMO_MAX ? stages : 0) * (sizeof(la_stage) + 1);
    /* the completions by stages: per level, layer boundary and type
     * dp_price, dp_true, dp_th and dp_last; per level and boundary dp_b1
     * and dp_b2 */
    bytes += (size_t)LA_DP_LEVELS * (t + 1) * (k * (3 * sizeof(double) + sizeof(int)) + 2 * sizeof(int));
    /* ... and dp_units: per level and boundary, two rows of k */
    bytes += (size_t)LA_DP_LEVELS * (t + 1) * 2 * k * sizeof(int);
    /* ... and the held units' tables (la_budget, one at a time), at most
     * LA_BUD_MAX_STATES budgets and at most the product of the counts + 1
     * of the types that may be held */
    size_t most = 1;
    for (int x = 0; cl && x < cl->n_types && most < LA_BUD_MAX_STATES; x++)
        if (cl->types[x].count < LA_BUD_MAX_STATES) most *= (size_t)cl->types[x].count + 1;
    if (most > LA_BUD_MAX_STATES) most = LA_BUD_MAX_STATES;
    size_t row = k * (3 * sizeof(double) + sizeof(int)) + 2 * sizeof(int) + 2 * k * sizeof(int);
    if (most > 1) bytes += sizeof(la_budget) + (size_t)LA_DP_LEVELS * most * (t + 1) * row;
    /* the tree, grown by doubling from 16 nodes up to LA_TREE_BYTES */
    size_t nb = lt_node_bytes((int)k), fit = LA_TREE_BYTES / nb;
    size_t n = states < fit ? states : fit, cap = 16;
    while (cap < n) cap *= 2;
    return bytes + cap * nb;
}

/* la_copy_feats copies the AGENT_FX look-ahead features of K type rows
 * from src to dst, whose rows start `ss` and `ds` floats apart (AGENT_FT
 * in a step's rows, where they follow gym's GYM_TYPE_FEATS; AGENT_FX in
 * the tree). */
static void la_copy_feats(float *dst, size_t ds, const float *src, size_t ss, int K) {
    for (int k = 0; k < K; k++) memcpy(dst + (size_t)k * ds, src + (size_t)k * ss, AGENT_FX * sizeof *dst);
}

/* lt_node adds a node: no children, features unknown. Returns its index,
 * or -1 when the tree is full or memory ran out. */
static int lt_node(agent_rollout *r) {
    size_t K = (size_t)r->K, n = (size_t)r->lt_n + 1;
    if (r->lt_n >= r->lt_max || grow(&r->lt_child, &r->cap_ltc, n * K, sizeof(int)) ||
        grow(&r->lt_feat, &r->cap_ltf, n * K * AGENT_FX, sizeof(float)) ||
        grow(&r->lt_mask, &r->cap_ltm, n * K, 1) || grow(&r->lt_known, &r->cap_ltk, n, 1))
        return -1;
    int v = r->lt_n++;
    for (size_t k = 0; k < K; k++) r->lt_child[(size_t)v * K + k] = -1;
    r->lt_known[v] = 0;
    return v;
}

/* lt_begin puts every episode of the run at its instance's root (none
 * when the memos are off), emptying the tree first unless it holds for
 * this run's layout and instances and has room left. */
static void lt_begin(agent_rollout *r) {
    int G = r->G, same = r->lt_n > 0 && r->lt_n < r->lt_max && r->lt_T == r->T && r->lt_K == r->K &&
                         r->lt_G == G;
    for (int g = 0; same && g < G; g++) same = r->lt_key[g] == r->gkey[g];
    if (!same && !r->la_memo_off) {
        r->lt_n = 0;
        r->lt_T = r->T;
        r->lt_K = r->K;
        r->lt_G = G;
        size_t most = LA_TREE_BYTES / lt_node_bytes(r->K);
        r->lt_max = most < INT_MAX ? (int)most : INT_MAX;
        for (int g = 0; g < G; g++) {
            r->lt_key[g] = r->gkey[g];
            if (lt_node(r) != g) { /* no room for the roots: no tree */
                r->lt_n = 0;
                break;
            }
        }
    }
    int on = !r->la_memo_off && r->lt_n >= G;
    for (int b = 0; b < r->B; b++) r->lt_cur[b] = on ? r->inst_of[b] : -1;
}

/* lt_advance moves every episode along the action it took at step t
 * (action[t, b], -1: none, and the episode leaves the tree), adding the
 * nodes not met before while there is room. */
static void lt_advance(agent_rollout *r, int t) {
    size_t K = (size_t)r->K, tb = (size_t)t * r->B;
    for (int b = 0; b < r->B; b++) {
        int v = r->lt_cur[b], a = r->action[tb + b];
        if (v < 0) continue;
        if (a < 0) {
            r->lt_cur[b] = -1;
            continue;
        }
        int c = r->lt_child[(size_t)v * K + a];
        if (c < 0) {
            c = lt_node(r);
            if (c >= 0) r->lt_child[(size_t)v * K + a] = c;
        }
        r->lt_cur[b] = c;
    }
}

/* la_share computes the look-ahead features of step r->t once per distinct
 * state and copies them to the other episodes in it: the features are a
 * function of the instance and the decisions so far (and the mask they
 * imply), and in search mode many of the episodes share their prefix
 * (all of them at the first layer, most of them once the policy
 * concentrates). */
static void la_share(agent_rollout *r, agent_pool *pool) {
    int t = r->t, B = r->B, K = r->K, n = 0;
    size_t cap = r->cap_lah; /* a power of 2 >= 2B (setup) */
    for (size_t i = 0; i < cap; i++) r->la_hash[i] = -1;
    for (int b = 0; b < B; b++) {
        if (r->la_rep[b] < 0) continue;
        const int *a = gym_assignment(r->env[b], NULL);
        const uint8_t *mk = r->mask + ((size_t)t * B + b) * K;
        uint64_t h = 1469598103934665603ULL ^ (uint64_t)r->inst_of[b];
        for (int l = 0; l < t; l++) h = (h ^ (uint64_t)(a[l] + 1)) * 1099511628211ULL;
        for (size_t i = (size_t)(h ^ (h >> 29)) & (cap - 1);; i = (i + 1) & (cap - 1)) {
            int o = r->la_hash[i];
            if (o < 0) {
                r->la_hash[i] = b;
                r->la_list[n++] = b;
                break;
            }
            if (r->inst_of[o] == r->inst_of[b] &&
                !memcmp(gym_assignment(r->env[o], NULL), a, (size_t)t * sizeof *a) &&
                !memcmp(r->mask + ((size_t)t * B + o) * K, mk, (size_t)K)) {
                r->la_rep[b] = o;
                break;
            }
        }
    }
    /* states met before copy their features from the tree; the others
     * are computed, then kept there */
    int m = 0;
    for (int i = 0; i < n; i++) {
        int b = r->la_list[i], v = r->lt_cur[b];
        size_t tb = (size_t)t * B + b;
        if (v < 0 || !r->lt_known[v] || memcmp(r->lt_mask + (size_t)v * K, r->mask + tb * K, (size_t)K)) {
            r->la_list[m++] = b;
            continue;
        }
        la_copy_feats(r->rows + tb * K * AGENT_FT + GYM_TYPE_FEATS, AGENT_FT, r->lt_feat + (size_t)v * K * AGENT_FX,
                      AGENT_FX, K);
    }
    r->tm.la_kept += n - m;
    r->tm.la_computed += m;
    agent_pool_for(pool, m, la_fn, r);
    for (int i = 0; i < m; i++) {
        int b = r->la_list[i], v = r->lt_cur[b];
        if (v < 0) continue;
        size_t tb = (size_t)t * B + b;
        la_copy_feats(r->lt_feat + (size_t)v * K * AGENT_FX, AGENT_FX, r->rows + tb * K * AGENT_FT + GYM_TYPE_FEATS,
                      AGENT_FT, K);
        memcpy(r->lt_mask + (size_t)v * K, r->mask + tb * K, (size_t)K);
        r->lt_known[v] = 1;
    }
    for (int b = 0; b < B; b++) {
        int o = r->la_rep[b];
        if (o < 0 || o == b) continue;
        la_copy_feats(r->rows + ((size_t)t * B + b) * K * AGENT_FT + GYM_TYPE_FEATS, AGENT_FT,
                      r->rows + ((size_t)t * B + o) * K * AGENT_FT + GYM_TYPE_FEATS, AGENT_FT, K);
    }
}

static void type_act_fn(void *ctx, int b, int w) {
    (void)w;
    agent_rollout *r = ctx;
    int t = r->t, B = r->B, K = r->K;
    size_t tb = (size_t)t * B + b;
    int a = r->action[tb];
    if (a < 0) return;
    if (gym_step(r->env[b], a, &r->last[b]) != 0) {
        r->failed = 1; /* cannot happen: the mask allowed it */
        return;
    }
    r->assign[(size_t)b * r->T + t] = a;
    if (t + 1 < r->T)
        memcpy(r->prev + ((size_t)(t + 1) * B + b) * AGENT_FT, r->rows + (tb * K + a) * AGENT_FT,
               AGENT_FT * sizeof(float));
}

/* ensure_place_bufs makes episode b's placement buffers hold a plan of L
 * layers (pplan[b]) and n tasks (tasks[b]). Returns 0, or -1 when out of
 * memory. */
static int ensure_place_bufs(agent_rollout *r, int b, int L, int n) {
    if (!r->pplan[b] || r->pplan_cap[b] < L) {
        model_plan_free(r->pplan[b]);
        r->pplan[b] = model_plan_create(L);
        r->pplan_cap[b] = r->pplan[b] ? L : 0;
        if (!r->pplan[b]) return -1;
    }
    if (n > r->task_cap[b]) {
        int *q = realloc(r->tasks[b], (size_t)n * sizeof *q);
        if (!q) return -1;
        r->tasks[b] = q;
        r->task_cap[b] = n;
    }
    return 0;
}

/* demo_next sets demo_act[b], the node the NODE demonstration episode b
 * takes for `task` (mask mk[n_rows]): at its first NODE decision `best`
 * places the episode's plan into tasks[b] (the teacher; finish_fn later
 * overwrites tasks[b] with the placement as played, the same one when
 * every decision followed it). A teacher that misses R, or a node the mask
 * refuses (cannot happen: the mask only checks room, and the teacher's
 * placement fits), leaves the rest of the episode to the policy. */
static void demo_next(agent_rollout *r, int b, int task, const uint8_t *mk, int n_rows) {
    gym_env *env = r->env[b];
    float cut = r->opts->node_cut ? r->opts->node_cut[b] : -1.0f;
    if (r->demo_st[b] == 0) {
        const agent_instance *in = &r->inst[r->inst_of[b]];
        const model_plan *plan = gym_plan(env);
        int n = place_task_count(plan);
        /* DAgger: the policy's own nodes up to the cut, no lesson there */
        if (cut >= 0 && task < (int)(cut * (float)n)) return;
        if (ensure_place_bufs(r, b, in->job->n_layers, n)) {
            r->failed = 1;
            r->demo_st[b] = -1;
            return;
        }
        char err[256];
        /* the seed of the run, not of the episode: the same lesson whatever
         * the episode's index (MPI ranks, rollout.h) */
        uint64_t seed = r->opts->seed ^ r->opts->stream;
        int st = placer_best_run(in->job, in->cl, plan, seed, 0, NULL, r->tasks[b], r->pplan[b],
                                 err, sizeof err);
        if (cut >= 0 && (st == PLACER_OK || st == PLACER_SLOW)) {
            /* complete the policy's placement so far, from best's */
            int nt = 0, placed = 0;
            const int *sofar = gym_task_nodes(env, &nt, &placed);
            if (!sofar || placed != task || nt != n) { /* cannot happen: gym asks tasks in order */
                r->demo_st[b] = -1;
                return;
            }
            /* the prefix is the policy's; best's nodes start the rest */
            memcpy(r->tasks[b], sofar, (size_t)task * sizeof *sofar);
            st = placer_complete(in->job, in->cl, plan, task, r->tasks[b], seed, 0, r->tasks[b],
                                 r->pplan[b], err, sizeof err);
        }
        r->demo_st[b] = st == PLACER_OK ? 1 : -1;
    }
    if (r->demo_st[b] != 1) return;
    int a = r->tasks[b][task];
    if (a < 0 || a >= n_rows || !mk[a]) {
        r->demo_st[b] = -1;
        return;
    }
    r->demo_act[b] = a;
}

static void node_obs_fn(void *ctx, int b, int w) {
    (void)w;
    agent_rollout *r = ctx;
    int Kn = r->Kn;
    size_t row = (size_t)r->node_phase_steps * r->B + b;
    float *gl = r->nglob + row * AGENT_FG, *rw = r->nrows + row * Kn * AGENT_FN;
    uint8_t *mk = r->nmask + row * Kn;
    r->naction[row] = -1;
    r->nowner[row] = b;
    r->nforced[row] = 0;
    r->demo_act[b] = -1;
    gym_env *env = r->env[b];
    if (gym_phase(env) != GYM_PHASE_NODE) {
        memset(gl, 0, AGENT_FG * sizeof *gl);
        memset(rw, 0, (size_t)Kn * AGENT_FN * sizeof *rw);
        memset(mk, 0, (size_t)Kn);
        return;
    }
    gym_observation ob;
    gym_obs(env, &ob);
    memcpy(gl, ob.global, AGENT_FG * sizeof *gl);
    memcpy(rw, ob.rows, (size_t)ob.n_rows * AGENT_FN * sizeof *rw);
    memset(rw + (size_t)ob.n_rows * AGENT_FN, 0, (size_t)(Kn - ob.n_rows) * AGENT_FN * sizeof *rw);
    memcpy(mk, ob.mask, (size_t)ob.n_rows);
    memset(mk + ob.n_rows, 0, (size_t)(Kn - ob.n_rows));
    if (ob.n_allowed == 0) { /* cannot happen (docs/gym.md); end it cleanly */
        gym_terminate(env, &r->last[b]);
        memset(mk, 0, (size_t)Kn);
        return;
    }
    if (r->opts->node_demo && r->opts->node_demo[b]) demo_next(r, b, ob.task, mk, ob.n_rows);
}

static void node_act_fn(void *ctx, int b, int w) {
    (void)w;
    agent_rollout *r = ctx;
    size_t row = (size_t)r->node_phase_steps * r->B + b;
    int a = r->naction[row];
    if (a < 0) return;
    if (gym_step(r->env[b], a, &r->last[b]) != 0) {
        r->failed = 1;
        return;
    }
    r->ep[b].node_steps++;
}

/* keep_tasks copies n task nodes into episode b's buffer. */
static int keep_tasks(agent_rollout *r, int b, const int *nodes, int n) {
    if (n > r->task_cap[b]) {
        int *q = realloc(r->tasks[b], (size_t)n * sizeof *q);
        if (!q) return -1;
        r->tasks[b] = q;
        r->task_cap[b] = n;
    }
    memcpy(r->tasks[b], nodes, (size_t)n * sizeof *nodes);
    r->n_tasks[b] = n;
    return 0;
}

/* reward returns the reward of a feasible end whose cost is `ratio` times
 * the reference (rollout.h); infeasible_reward that of an infeasible end. */
static double reward(int mode, double ratio, double penalty) {
    if (mode == AGENT_REWARD_RATIO) return -(ratio < penalty - 1.0 ? ratio : penalty - 1.0);
    double r = -log(ratio);
    return r > -AGENT_LOG_CLIP ? r : -AGENT_LOG_CLIP;
}

static double infeasible_reward(int mode, double penalty) {
    return mode == AGENT_REWARD_RATIO ? -penalty : -(AGENT_LOG_CLIP + log(penalty));
}

/* finish_fn settles episode b once every phase is over: outcome, heuristic
 * placement if asked, rewards. */
static void finish_fn(void *ctx, int b, int w) {
    (void)w;
    agent_rollout *r = ctx;
    const agent_rollout_opts *o = r->opts;
    const agent_instance *in = &r->inst[r->inst_of[b]];
    agent_episode *e = &r->ep[b];
    gym_env *env = r->env[b];
    double pen = o->penalty;
    e->r_node = 0;
    if (!e->feasible) {
        e->cost = INFINITY;
        e->r_type = infeasible_reward(o->reward, pen);
        e->reason = r->last[b].reason ? r->last[b].reason : MODEL_ERR_CAPACITY;
        return;
    }
    e->r_type = reward(o->reward, e->plan_cost / in->ref_cost, pen);
    if (o->placement == PLACER_PLACE_POLICY && in->cl->n_nodes > 0) {
        int n = 0;
        const int *tn = gym_task_nodes(env, &n, NULL);
        e->placed = 1;
        e->place_ok = r->last[b].feasible;
        if (tn && keep_tasks(r, b, tn, n)) r->failed = 1;
        if (e->place_ok) {
            e->cost = r->last[b].cost;
            e->r_node = reward(o->reward, e->cost / e->plan_cost, pen);
        } else {
            e->cost = INFINITY;
            e->r_node = infeasible_reward(o->reward, pen);
            e->reason = MODEL_ERR_PLACEMENT;
        }
        return;
    }
    if (o->placement >= 0 && in->cl->n_nodes > 0) { /* a placer_method */
        const model_plan *plan = gym_plan(env);
        int n = place_task_count(plan);
        if (ensure_place_bufs(r, b, in->job->n_layers, n)) {
            r->failed = 1;
            return;
        }
        char err[256];
        int st = placer_run(in->job, in->cl, plan, (placer_method)o->placement,
                            o->seed ^ (uint64_t)(o->ep_base + b), r->tasks[b], r->pplan[b], err,
                            sizeof err);
        e->placed = st == PLACER_OK || st == PLACER_SLOW;
        e->place_ok = st == PLACER_OK;
        r->n_tasks[b] = e->placed ? n : -1;
        e->cost = e->place_ok ? r->pplan[b]->cost : INFINITY;
        if (!e->place_ok) e->reason = MODEL_ERR_PLACEMENT;
        return;
    }
    e->cost = e->plan_cost;
}

/* ---------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------ */

static int setup(agent_rollout *r, const agent_instance *inst, int G, const int *inst_of, int B,
                 const agent_rollout_opts *o, char *err, size_t errlen) {
    r->inst = inst;
    r->opts = o;
    r->G = G;
    r->B = B;
    r->T = r->K = r->Kn = 0;
    for (int g = 0; g < G; g++) {
        if (inst[g].job->n_layers > r->T) r->T = inst[g].job->n_layers;
        if (inst[g].cl->n_types > r->K) r->K = inst[g].cl->n_types;
        if (inst[g].cl->n_nodes > r->Kn) r->Kn = inst[g].cl->n_nodes;
    }
    if (r->Kn == 0) r->Kn = 1;
    if (r->Kn != r->ncap_kn) { /* the NODE rows change width: reallocate them */
        r->ncap = 0;
        r->ncap_kn = r->Kn;
    }
    int T = r->T, K = r->K;
    size_t TB = (size_t)T * B;
    int KK = K > r->Kn ? K : r->Kn;
    if (per_episode_alloc(r, B) || grow(&r->lf, &r->cap_lf, (size_t)T * G * AGENT_FL, sizeof(float)) ||
        grow(&r->len, &r->cap_len, (size_t)G, sizeof(int)) ||
        grow(&r->glob, &r->cap_glob, TB * AGENT_FG, sizeof(float)) ||
        grow(&r->rows, &r->cap_rows, TB * K * AGENT_FT, sizeof(float)) ||
        grow(&r->prev, &r->cap_prev, TB * AGENT_FT, sizeof(float)) ||
        grow(&r->mask, &r->cap_mask, TB * K, 1) || grow(&r->action, &r->cap_action, TB, sizeof(int)) ||
        grow(&r->adv, &r->cap_adv, (size_t)B, sizeof(float)) ||
        grow(&r->probs, &r->cap_probs, (size_t)B * KK, sizeof(float)) ||
        grow(&r->pall, &r->cap_pall, TB * K, sizeof(float)) ||
        grow(&r->active, &r->cap_active, (size_t)B, 1) ||
        grow(&r->lf_tmp, &r->cap_lftmp, (size_t)T * AGENT_FL, sizeof(float)) ||
        grow(&r->assign, &r->cap_assign, TB, sizeof(int)) ||
        grow(&r->psum, &r->cap_psum, (size_t)G * 4 * (T + 1), sizeof(double)) ||
        grow(&r->dp_price, &r->cap_dpp, (size_t)G * LA_DP_LEVELS * (T + 1) * K, sizeof(double)) ||
        grow(&r->dp_true, &r->cap_dptr, (size_t)G * LA_DP_LEVELS * (T + 1) * K, sizeof(double)) ||
        grow(&r->dp_th, &r->cap_dpt, (size_t)G * LA_DP_LEVELS * (T + 1) * K, sizeof(double)) ||
        grow(&r->dp_last, &r->cap_dpl, (size_t)G * LA_DP_LEVELS * (T + 1) * K, sizeof(int)) ||
        grow(&r->dp_b1, &r->cap_db1, (size_t)G * LA_DP_LEVELS * (T + 1), sizeof(int)) ||
        grow(&r->dp_b2, &r->cap_db2, (size_t)G * LA_DP_LEVELS * (T + 1), sizeof(int)) ||
        grow(&r->dp_h, &r->cap_dph, (size_t)G * LA_DP_LEVELS, sizeof(double)) ||
        grow(&r->dp_lam, &r->cap_dlam, (size_t)G * K, sizeof(double)) ||
        grow(&r->dp_units, &r->cap_dpu, (size_t)G * LA_DP_LEVELS * (T + 1) * 2 * K, sizeof(int)) ||
        grow(&r->dp_key, &r->cap_dkey, (size_t)G, sizeof(uint64_t)) ||
        grow(&r->gkey, &r->cap_gkey, (size_t)G, sizeof(uint64_t)) ||
        grow(&r->la_rep, &r->cap_larep, (size_t)B, sizeof(int)) ||
        grow(&r->la_list, &r->cap_lalist, (size_t)B, sizeof(int)) ||
        grow(&r->la_hash, &r->cap_lah, (size_t)2 * B, sizeof(int)) ||
        grow(&r->lt_cur, &r->cap_ltcur, (size_t)B, sizeof(int)) ||
        grow(&r->lt_key, &r->cap_ltkey, (size_t)G, sizeof(uint64_t)) ||
        grow(&r->demo_st, &r->cap_demost, (size_t)B, sizeof(int)) ||
        grow(&r->demo_act, &r->cap_demoact, (size_t)B, sizeof(int))) {
        snprintf(err, errlen, "out of memory for a rollout of %d episodes", B);
        return -1;
    }
    memset(r->lf, 0, (size_t)T * G * AGENT_FL * sizeof(float));
    memset(r->prev, 0, TB * AGENT_FT * sizeof(float));
    memset(r->adv, 0, (size_t)B * sizeof(float));
    for (size_t i = 0; i < TB; i++) r->assign[i] = -1;
    memset(r->demo_st, 0, (size_t)B * sizeof *r->demo_st);
    for (int b = 0; b < B; b++) r->demo_act[b] = -1;
    gym_opts go;
    gym_opts_default(&go);
    go.infeasible_reward = -o->penalty;
    go.plan_only = o->placement != PLACER_PLACE_POLICY;
    int *first = calloc((size_t)G, sizeof *first); /* first episode of each instance, +1 */
    if (!first) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int g = 0; g < G; g++) r->gkey[g] = mkey_digest(inst[g].job, inst[g].cl);
    for (int b = 0; b < B; b++) {
        int g = inst_of[b];
        if (g < 0 || g >= G) {
            free(first);
            snprintf(err, errlen, "rollout: episode %d has instance %d, outside 0..%d", b, g, G - 1);
            return -1;
        }
        if (!first[g]) first[g] = b + 1;
        const agent_instance *in = &inst[g];
        go.ref_cost = in->ref_cost;
        go.workers = in->workers;
        go.ps = in->ps;
        r->inst_of[b] = g;
        /* the environment of the last run, when it was made from the same
         * instance and options, is reset rather than made again (search
         * mode plays the same instance every step) */
        uint64_t tag = env_tag(r->gkey[g], in, &go);
        if (!r->env[b] || r->env_tag[b] != tag) {
            gym_free(r->env[b]);
            r->env_tag[b] = 0;
            r->env[b] = gym_create(in->job, in->cl, &go, err, errlen);
            if (!r->env[b]) {
                free(first);
                return -1;
            }
            r->env_tag[b] = tag;
        }
        gym_reset(r->env[b], o->seed ^ (uint64_t)(o->ep_base + b));
        memset(&r->ep[b], 0, sizeof r->ep[b]);
        memset(&r->last[b], 0, sizeof r->last[b]);
        r->n_tasks[b] = -1;
    }
    if ((size_t)G > r->cap_dbud) { /* slots for the held-units completions, new ones empty */
        la_budget **nb = realloc(r->dp_bud, (size_t)G * sizeof *nb);
        if (!nb) {
            free(first);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t g = r->cap_dbud; g < (size_t)G; g++) nb[g] = NULL;
        r->dp_bud = nb;
        r->cap_dbud = (size_t)G;
    }
    /* the completions kept from the last run hold for the same layout */
    if (r->dp_T != T || r->dp_K != K) {
        r->dp_T = T;
        r->dp_K = K;
        r->dp_n = 0;
    }
    for (; r->dp_n < G; r->dp_n++) r->dp_key[r->dp_n] = 0;
    for (int g = 0; g < G; g++) {
        int L = inst[g].job->n_layers;
        double *ps = r->psum + (size_t)g * 4 * (T + 1);
        ps[0] = ps[L + 1] = ps[2 * (L + 1)] = ps[3 * (L + 1)] = 0;
        for (int l = 0; l < L; l++) { /* L + 1 entries per figure */
            const model_layer *ly = &inst[g].job->layers[l];
            ps[l + 1] = ps[l] + ly->flops;
            ps[(L + 1) + l + 1] = ps[(L + 1) + l] + ly->io;
            ps[2 * (L + 1) + l + 1] = ps[2 * (L + 1) + l] + ly->params;
            ps[3 * (L + 1) + l + 1] = ps[3 * (L + 1) + l] + ly->mem;
        }
        r->len[g] = L;
        uint64_t key = r->gkey[g];
        if (r->dp_key[g] != key) {
            la_dp_fill(r, g, inst[g].job, inst[g].cl);
            r->dp_key[g] = key;
        }
        if (!first[g]) {
            free(first);
            snprintf(err, errlen, "rollout: instance %d has no episode", g);
            return -1;
        }
        gym_layer_features(r->env[first[g] - 1], r->lf_tmp);
        for (int t = 0; t < L; t++)
            memcpy(r->lf + ((size_t)t * G + g) * AGENT_FL, r->lf_tmp + (size_t)t * AGENT_FL,
                   AGENT_FL * sizeof(float));
    }
    free(first);
    return 0;
}

/* choose draws (or takes greedily) one action per row of probs[N,K]. */
static void choose(const agent_rollout_opts *o, int *action, const float *probs,
                   const uint8_t *mask, int N, int K, uint64_t phase, uint64_t step) {
    if (o->greedy) {
        nn_argmax(action, probs, mask, N, K);
        return;
    }
    rng_t rng = {o->seed, o->stream, (phase << 56) + step * (uint64_t)o->ep_total + (uint64_t)o->ep_base};
    nn_sample(action, probs, mask, N, K, &rng);
}

int agent_rollout_run(agent_rollout *r, const nn_params *p, const agent_instance *inst, int G,
                      const int *inst_of, int B, const agent_rollout_opts *o, agent_pool *pool,
                      char *err, size_t errlen) {
    if (G <= 0 || B <= 0 || !(o->penalty > 1.0)) {
        snprintf(err, errlen, "rollout: need G, B >= 1 and penalty > 1");
        return -1;
    }
    double t0 = clock_now_s();
    int W = agent_pool_threads(pool) < 64 ? agent_pool_threads(pool) : 64;
    for (int w = 0; w < W; w++) r->la_sec[w] = 0;
    if (setup(r, inst, G, inst_of, B, o, err, errlen)) return -1;
    r->failed = 0;
    int T = r->T, K = r->K;
    /* the look-ahead's stage memo (la_get): one thread only, and bounded */
    size_t n_memo = (size_t)G * K * T * T;
    r->la_memo_on = !r->la_memo_off && W == 1 && n_memo <= LA_MEMO_MAX &&
                    !grow(&r->la_memo, &r->cap_lamemo, n_memo, sizeof *r->la_memo) &&
                    !grow(&r->la_known, &r->cap_laknown, n_memo, 1);
    if (r->la_memo_on) memset(r->la_known, 0, n_memo);
    lt_begin(r);
    if (!r->policy && agent_net_encode(r->ws, p, r->lf, r->len, T, G, r->inst_of, B)) {
        snprintf(err, errlen, "out of memory in the encoder");
        return -1;
    }
    double t1 = clock_now_s();
    r->tm.env += t1 - t0;
    t0 = t1;
    /* TYPE phase */
    for (int t = 0; t < T; t++) {
        r->t = t;
        double a0 = clock_now_s();
        agent_pool_for(pool, B, type_obs_fn, r);
        la_share(r, pool);
        double a1 = clock_now_s();
        size_t tb = (size_t)t * B;
        if (r->policy) {
            if (r->policy(r->policy_ctx, t, r->lf, r->len, T, G, r->inst_of, B, r->glob + tb * AGENT_FG,
                          r->rows + tb * K * AGENT_FT, r->prev + tb * AGENT_FT, r->mask + tb * K,
                          r->active, K, r->probs)) {
                snprintf(err, errlen, "rollout: the policy callback failed at layer %d", t);
                return -1;
            }
        } else if (agent_net_type_step_shared(r->ws, p, t, r->glob + tb * AGENT_FG,
                                              r->rows + tb * K * AGENT_FT, r->prev + tb * AGENT_FT,
                                              r->mask + tb * K, r->la_rep, K, r->probs)) {
            snprintf(err, errlen, "out of memory in the decoder");
            return -1;
        }
        choose(o, r->action + tb, r->probs, r->mask + tb * K, B, K, 0, (uint64_t)t);
        memcpy(r->pall + tb * K, r->probs, (size_t)B * K * sizeof(float));
        if (o->node_demo) /* demonstrations play the policy's greedy plan */
            for (int b = 0; b < B; b++)
                if (o->node_demo[b] && r->action[tb + b] >= 0)
                    nn_argmax(r->action + tb + b, r->probs + (size_t)b * K, r->mask + (tb + b) * K, 1, K);
        if (o->forced)
            for (int b = 0; b < B; b++) {
                if (!o->forced[b] || !r->active[b] || o->forced[b][t] < 0) continue;
                if (r->action[tb + b] < 0) continue; /* a dead end: nothing to force */
                int a = o->forced[b][t];
                const uint8_t *mk = r->mask + (tb + b) * K;
                if (a < 0 || a >= K || !mk[a]) { /* not allowed: the demonstration is infeasible */
                    snprintf(err, errlen, "rollout: episode %d's forced action %d at layer %d is not allowed", b, a, t);
                    return -1;
                }
                r->action[tb + b] = a;
            }
        double a2 = clock_now_s();
        agent_pool_for(pool, B, type_act_fn, r);
        lt_advance(r, t);
        double a3 = clock_now_s();
        r->tm.env += (a1 - a0) + (a3 - a2);
        r->tm.net += a2 - a1;
    }
    /* the plans */
    int any_node = 0;
    for (int b = 0; b < B; b++) {
        agent_episode *e = &r->ep[b];
        gym_env *env = r->env[b];
        int ph = gym_phase(env);
        if (ph == GYM_PHASE_NODE) {
            e->feasible = 1;
            e->plan_cost = gym_plan(env)->cost;
            any_node = 1;
        } else if (ph == GYM_PHASE_DONE) {
            e->dead_end = r->last[b].dead_end;
            e->feasible = r->last[b].feasible;
            e->plan_cost = e->feasible ? r->last[b].cost : INFINITY;
        } else { /* cannot happen: every layer was decided or the episode ended */
            snprintf(err, errlen, "rollout: episode %d still in the TYPE phase", b);
            return -1;
        }
    }
    /* NODE phase by the node head */
    r->n_node = 0;
    r->node_phase_steps = 0;
    if (any_node && r->policy) {
        snprintf(err, errlen, "rollout: a policy callback covers the TYPE phase only (use placement none)");
        return -1;
    }
    if (any_node) {
        int Kn = r->Kn;
        for (;;) {
            int live = 0;
            for (int b = 0; b < B; b++) live += gym_phase(r->env[b]) == GYM_PHASE_NODE;
            if (!live) break;
            size_t need_rows = (size_t)(r->node_phase_steps + 1) * B;
            size_t c1 = r->ncap, c2 = r->ncap, c3 = r->ncap, c4 = r->ncap, c5 = r->ncap, c6 = r->ncap,
                   c7 = r->ncap;
            if (grow(&r->nglob, &c1, need_rows, sizeof(float) * AGENT_FG) ||
                grow(&r->nrows, &c2, need_rows, sizeof(float) * AGENT_FN * Kn) ||
                grow(&r->nmask, &c3, need_rows, (size_t)Kn) ||
                grow(&r->naction, &c4, need_rows, sizeof(int)) ||
                grow(&r->nowner, &c5, need_rows, sizeof(int)) ||
                grow(&r->nadv, &c6, need_rows, sizeof(float)) ||
                grow(&r->nforced, &c7, need_rows, 1)) {
                snprintf(err, errlen, "out of memory for the NODE decisions");
                return -1;
            }
            /* every buffer grew from the same capacity by the same rule */
            r->ncap = c1;
            double a0 = clock_now_s();
            agent_pool_for(pool, B, node_obs_fn, r);
            double a1 = clock_now_s();
            size_t row = (size_t)r->node_phase_steps * B;
            if (agent_net_node_step(r->ws, p, r->nglob + row * AGENT_FG,
                                    r->nrows + row * Kn * AGENT_FN, r->nmask + row * Kn, B, Kn,
                                    r->probs)) {
                snprintf(err, errlen, "out of memory in the node head");
                return -1;
            }
            choose(o, r->naction + row, r->probs, r->nmask + row * Kn, B, Kn, 1,
                   (uint64_t)r->node_phase_steps);
            if (o->node_demo) /* demonstrations take the teacher's node, else the likeliest */
                for (int b = 0; b < B; b++) {
                    if (!o->node_demo[b] || r->naction[row + b] < 0) continue;
                    if (r->demo_act[b] >= 0) {
                        r->naction[row + b] = r->demo_act[b];
                        r->nforced[row + b] = 1;
                    } else {
                        nn_argmax(r->naction + row + b, r->probs + (size_t)b * Kn, r->nmask + (row + b) * Kn, 1,
                                  Kn);
                    }
                }
            double a2 = clock_now_s();
            agent_pool_for(pool, B, node_act_fn, r);
            double a3 = clock_now_s();
            r->tm.env += (a1 - a0) + (a3 - a2);
            r->tm.net += a2 - a1;
            r->node_phase_steps++;
        }
        /* compact the decisions (rows with an action), keeping their order */
        if (o->record) {
            size_t n = 0, total = (size_t)r->node_phase_steps * B;
            for (size_t i = 0; i < total; i++) {
                if (r->naction[i] < 0) continue;
                if (n != i) {
                    memcpy(r->nglob + n * AGENT_FG, r->nglob + i * AGENT_FG, AGENT_FG * sizeof(float));
                    memcpy(r->nrows + n * Kn * AGENT_FN, r->nrows + i * Kn * AGENT_FN,
                           (size_t)Kn * AGENT_FN * sizeof(float));
                    memcpy(r->nmask + n * Kn, r->nmask + i * Kn, (size_t)Kn);
                    r->naction[n] = r->naction[i];
                    r->nowner[n] = r->nowner[i];
                    r->nforced[n] = r->nforced[i];
                }
                n++;
            }
            r->n_node = (int)n;
        }
    }
    double f0 = clock_now_s();
    agent_pool_for(pool, B, finish_fn, r);
    r->tm.env += clock_now_s() - f0;
    double la = 0;
    for (int w = 0; w < W; w++) la += r->la_sec[w];
    r->tm.lookahead += la / W;
    if (r->failed) {
        snprintf(err, errlen, "rollout: an environment refused a step or memory ran out");
        return -1;
    }
    return 0;
}

int agent_rollout_episodes(const agent_rollout *r) { return r->B; }

const agent_episode *agent_rollout_episode(const agent_rollout *r, int b) { return &r->ep[b]; }

const int *agent_rollout_assign(const agent_rollout *r, int b) {
    return r->assign + (size_t)b * r->T;
}

const int *agent_rollout_tasks(const agent_rollout *r, int b, int *n_tasks) {
    if (n_tasks) *n_tasks = r->n_tasks[b] > 0 ? r->n_tasks[b] : 0;
    return r->n_tasks[b] >= 0 ? r->tasks[b] : NULL;
}

agent_type_traj *agent_rollout_type_traj(agent_rollout *r, float **adv) {
    r->tt = (agent_type_traj){r->T, r->G, r->B, r->K, r->lf, r->len, r->inst_of, r->glob,
                              r->rows, r->prev, r->mask, r->action, r->adv, NULL, 0};
    if (adv) *adv = r->adv;
    return &r->tt;
}

agent_node_traj *agent_rollout_node_traj(agent_rollout *r, float **adv, const int **node_owner) {
    r->nt = (agent_node_traj){r->n_node, r->Kn, r->nglob, r->nrows, r->nmask, r->naction, r->nadv};
    if (adv) *adv = r->nadv;
    if (node_owner) *node_owner = r->nowner;
    return &r->nt;
}

void agent_rollout_drop(agent_rollout *r, int b) {
    for (int t = 0; t < r->T; t++) r->action[(size_t)t * r->B + b] = -1;
    for (int i = 0; i < r->n_node; i++)
        if (r->nowner[i] == b) r->naction[i] = -1;
}

void agent_rollout_drop_type(agent_rollout *r, int b) {
    agent_rollout_drop_type_before(r, b, r->T);
}

void agent_rollout_drop_type_before(agent_rollout *r, int b, int c) {
    for (int t = 0; t < c && t < r->T; t++) r->action[(size_t)t * r->B + b] = -1;
}

const uint8_t *agent_rollout_node_forced(const agent_rollout *r) { return r->nforced; }

const agent_rollout_times *agent_rollout_timing(const agent_rollout *r) { return &r->tm; }

const double *agent_rollout_shadow_prices(const agent_rollout *r, int g) {
    return r->dp_lam + (size_t)g * r->K;
}

int agent_rollout_held_types(const agent_rollout *r, int g, int *held, const double **lam) {
    const la_budget *b = (size_t)g < r->cap_dbud ? r->dp_bud[g] : NULL;
    if (lam) *lam = b ? b->lam : NULL;
    for (int h = 0; b && held && h < b->nh; h++) held[h] = b->x[h];
    return b ? b->nh : 0;
}

agent_net_ws *agent_rollout_ws(agent_rollout *r) { return r->ws; }

void agent_rollout_set_memo(agent_rollout *r, int on) { r->la_memo_off = !on; }

void agent_rollout_set_features(agent_rollout *r, int version) {
    version = version < 6 ? 5 : version < AGENT_FEATURES_VERSION ? version : AGENT_FEATURES_VERSION;
    if (version == r->la_version) return;
    r->la_version = version;
    r->dp_n = 0; /* the completions and the tree kept were the other version's */
    r->lt_n = 0;
}

void agent_rollout_set_policy(agent_rollout *r, agent_type_policy fn, void *ctx) {
    r->policy = fn;
    r->policy_ctx = ctx;
}

void agent_rollout_type_steps(const agent_rollout *r, int *T, int *K, const int **action,
                              const uint8_t **mask, const float **probs) {
    *T = r->T;
    *K = r->K;
    *action = r->action;
    *mask = r->mask;
    *probs = r->pall;
}
