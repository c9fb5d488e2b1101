/* gym.c -- the step-wise environment of gym.h.
 *
 * The env keeps, for the TYPE phase, the open stage's running sums (summed in
 * the layers' order, so model_stage_fill gives the very figures model_eval
 * will) and, per type, the units and ps tasks already committed by closed
 * stages. Each step scores only O(n_types) candidate stages in O(1) each:
 *   - continuing the open stage with layer l: a lower bound on the stage's
 *     final figures, the span first..l without the trailing activation (a
 *     stage's step time only grows as layers join it, except for that term,
 *     which is replaced by the next boundary's and is 0 at the job's end);
 *   - closing the open stage at l-1: its exact figures;
 *   - opening a stage of type t at l: the lower bound of the span l..l.
 * Units grow with the step time and with the serial fraction (model_units
 * is monotone in both), so a lower bound on the step, taken with the least
 * serial fraction the stage can reach (a fitted curve's falls as ps tasks
 * are added), bounds the units a stage will need, and the mask only hides
 * actions after which no completion can be feasible. On the last layer the
 * bounds are exact. The NODE phase keeps free units and ps slots per node
 * and per-stage task counts for the features. All buffers are allocated by
 * gym_create; steps allocate nothing.
 */
#include "env/gym.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "env/place.h"

#define GYM_LG_SMALL 256

struct gym_env {
    const model_job *job;    /* borrowed */
    const model_cluster *cl; /* borrowed */
    gym_opts opts;
    int L, T, N, Z;
    int node_phase;       /* 1 when a NODE phase follows the TYPE phase */
    long *cap;            /* [T] units of t a plan may use: c_t, and at most the
                             nodes' units of t when a NODE phase follows */
    long *node_supply;    /* [T] sum of units over nodes of type t */
    long ps_total;        /* sum of ps_slots over nodes */
    long cap_sum;         /* sum of cap */
    double infeasible_reward;
    /* fixed feature scales, from the job and cluster */
    double f_mean, d_mean, a_mean, w_mean, m_mean, m_sum, f_sum;
    double F_max, D_max, N_max, M_max, p_min, pf_min, bw_max;

    /* episode */
    int phase, steps, done;
    uint64_t rng;
    char why[sizeof(((model_plan *)0)->why)]; /* as long as a plan's why */
    int plan_state; /* 0 no plan, 1 plan (model_eval), 2 final (place_eval) */

    /* TYPE phase */
    int l;                /* layer being decided */
    int *assign;          /* [L] */
    int open_type;        /* -1 when no stage is open */
    int open_first;
    model_span open;      /* sums over open_first..l-1, act unused */
    long *committed;      /* [T] units of closed stages per type */
    long committed_ps;    /* ps tasks of closed stages */
    double price_closed;  /* sum of k_s p_t over closed stages, $/h */
    int n_closed;
    model_stage open_lb;  /* lower bound of the open stage as it stands */
    model_stage close_ex; /* the open stage closed at l-1, exact */
    int close_ok;         /* closing it fits units and ps slots */
    model_stage *cand;    /* [T] the stage layer l would be in, per type (bound) */
    double *alpha_lo;     /* [L] the least serial fraction a stage starting at
                             layer f can have (a fitted curve's falls as the
                             stage's ps tasks grow, see bound_units) */
    unsigned char *mask;  /* [max(T, N)] */
    int n_allowed;

    /* NODE phase */
    model_plan *plan;        /* the §2 plan */
    model_plan *final;       /* refined by place_eval */
    int task_cap, n_tasks, task_i;
    int *task_node;          /* [task_cap] place.h order */
    int *task_stage;         /* [task_cap] */
    unsigned char *task_ps;  /* [task_cap] */
    int *order;              /* [task_cap] visit order: task placed at step i */
    int *stage_first;        /* [L + 1] first task of each stage */
    int *units_left;         /* [N] */
    int *ps_left;            /* [N] */
    int *cur_cnt;            /* [N] tasks of the current stage per node */
    int *cur_workers;        /* [N] workers of the current stage per node */
    int *prev_workers;       /* [N] workers of the previous stage per node */
    int *zone_cnt;           /* [Z] tasks of the current stage per zone */
    long *zone_scr;          /* [2 Z] per observation: the previous stage's workers, then
                                the next stage type's free units, per zone */
    int cur_stage, cur_placed, cur_w_left, cur_g_left;

    float *rows; /* [max(T * GYM_TYPE_FEATS, N * GYM_NODE_FEATS)] */
    /* features that never change, computed once by gym_create */
    float *type_static;  /* [T, GYM_TYPE_FEATS], columns 1..7 set */
    float *node_static;  /* [N, GYM_NODE_FEATS], columns 11, 13..15 set */
    float *layer_feats;  /* [L, GYM_LAYER_FEATS] */
    float *node_lat;     /* [N] column 12 for the current stage */
    float lg_small[GYM_LG_SMALL]; /* log1p(k) for small counts k */
};

void gym_opts_default(gym_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->ref_cost = 1.0;
    opts->infeasible_reward = NAN;
}

/* ---- checking the instance ---------------------------------------------- */

/* bad_num returns 0 when x is finite and above lo (strictly when
 * lo_open), else 1 with a message naming the field, printf-formatted from
 * fmt: formatted only then, since every gym_create checks every figure. */
__attribute__((format(printf, 6, 7)))
static int bad_num(double x, double lo, int lo_open, char *err, size_t errlen, const char *fmt, ...) {
    if (isfinite(x) && (lo_open ? x > lo : x >= lo)) return 0;
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: must be a finite number %s %g, got %g", what,
             lo_open ? ">" : ">=", lo, x);
    return 1;
}

static int check_instance(const model_job *job, const model_cluster *cl,
                          char *err, size_t errlen) {
    if (!job || !cl) {
        snprintf(err, errlen, "gym: job and cluster are required");
        return -1;
    }
    if (job->n_layers < 1 || job->n_layers > MODEL_MAX_LAYERS || !job->layers) {
        snprintf(err, errlen, "job.layers: %d layers, expected 1..%d", job->n_layers,
                 MODEL_MAX_LAYERS);
        return -1;
    }
    if (bad_num(job->batch, 0, 1, err, errlen, "job.batch") ||
        bad_num(job->samples, 0, 0, err, errlen, "job.samples") ||
        bad_num(job->min_throughput, 0, 0, err, errlen, "job.min_throughput") ||
        bad_num(job->shard, 0, 1, err, errlen, "job.shard") ||
        bad_num(job->alpha, 0, 0, err, errlen, "job.alpha"))
        return -1;
    if (job->alpha >= 1.0) {
        snprintf(err, errlen, "job.alpha: must be in [0,1), got %g", job->alpha);
        return -1;
    }
    if (job->curve.fitted)
        for (int i = 0; i < 4; i++) {
            if (bad_num(job->curve.th[i], 0, 0, err, errlen, "job.curve.th[%d]", i)) return -1;
        }
    for (int l = 0; l < job->n_layers; l++) {
        const model_layer *ly = &job->layers[l];
        const double v[5] = {ly->flops, ly->io, ly->act, ly->params, ly->mem};
        const char *k[5] = {"flops", "io", "act", "params", "mem"};
        for (int i = 0; i < 5; i++) {
            if (bad_num(v[i], 0, 0, err, errlen, "job.layers[%d].%s", l, k[i])) return -1;
        }
    }
    if (cl->n_types < 1 || cl->n_types > MODEL_MAX_TYPES || !cl->types) {
        snprintf(err, errlen, "cluster.types: %d types, expected 1..%d", cl->n_types,
                 MODEL_MAX_TYPES);
        return -1;
    }
    for (int t = 0; t < cl->n_types; t++) {
        const model_type *ty = &cl->types[t];
        const double v[5] = {ty->flops, ty->io_bw, ty->net_bw, ty->mem, ty->price};
        const char *k[5] = {"flops", "io_bw", "net_bw", "mem", "price"};
        for (int i = 0; i < 5; i++) {
            if (bad_num(v[i], 0, i < 3, err, errlen, "cluster.types[%d].%s", t, k[i])) return -1;
        }
        if (ty->count < 0) {
            snprintf(err, errlen, "cluster.types[%d].count: must be >= 0, got %d", t,
                     ty->count);
            return -1;
        }
    }
    if (cl->n_nodes < 0 || cl->n_nodes > MODEL_MAX_NODES ||
        (cl->n_nodes > 0 && !cl->nodes)) {
        snprintf(err, errlen, "cluster.nodes: %d nodes, expected 0..%d", cl->n_nodes,
                 MODEL_MAX_NODES);
        return -1;
    }
    int zones = cl->n_zones > 0 ? cl->n_zones : 1;
    for (int n = 0; n < cl->n_nodes; n++) {
        const model_node *nd = &cl->nodes[n];
        if (nd->type < 0 || nd->type >= cl->n_types) {
            snprintf(err, errlen, "cluster.nodes[%d].type: index %d, the cluster has %d types",
                     n, nd->type, cl->n_types);
            return -1;
        }
        if (nd->zone < 0 || nd->zone >= zones) {
            snprintf(err, errlen, "cluster.nodes[%d].zone: index %d, the cluster has %d zones",
                     n, nd->zone, cl->n_zones);
            return -1;
        }
        if (nd->units < 0 || nd->ps_slots < 0) {
            snprintf(err, errlen, "cluster.nodes[%d]: units (%d) and ps_slots (%d) must be >= 0",
                     n, nd->units, nd->ps_slots);
            return -1;
        }
        if (bad_num(nd->bw, 0, 1, err, errlen, "cluster.nodes[%d].bw", n)) return -1;
        if (bad_num(nd->latency, 0, 0, err, errlen, "cluster.nodes[%d].latency", n)) return -1;
        if (bad_num(nd->loss, 0, 0, err, errlen, "cluster.nodes[%d].loss", n)) return -1;
        if (nd->loss >= 1.0) {
            snprintf(err, errlen, "cluster.nodes[%d].loss: must be in [0,1), got %g", n,
                     nd->loss);
            return -1;
        }
    }
    return 0;
}

/* ---- small helpers ------------------------------------------------------- */

/* Uniform integer in [0, n), n >= 1, from the top 32 bits of a splitmix64
 * output. */
static int rng_below(uint64_t *s, int n) {
    return (int)(((splitmix64_next(s) >> 32) * (uint64_t)n) >> 32);
}

/* log1p of a non-negative ratio, as a feature. */
static float lg(double x) {
    if (!(x > 0.0)) return 0.0f;
    return (float)log1p(x);
}

static double ratio(double x, double scale) { return scale > 0.0 ? x / scale : 0.0; }

static double mean_or_one(double sum, int n) {
    double m = sum / n;
    return m > 0.0 ? m : 1.0;
}

/* The activation X_s counts ahead of a stage starting at `first`. */
static double head_act(const model_job *job, int first) {
    double a = 0;
    if (first > 0) a += job->layers[first - 1].act;
    return a;
}

/* log1p of a count, from a table for the small ones. */
static float lg_count(const gym_env *e, long k) {
    if (k <= 0) return 0.0f;
    return k < GYM_LG_SMALL ? e->lg_small[k] : (float)log1p((double)k);
}

/* Fills the features that depend on the instance only (docs/gym.md lists
 * them): the static columns of type and node rows and the layer matrix. */
static void static_features(gym_env *e) {
    const model_job *job = e->job;
    const model_cluster *cl = e->cl;
    const double R = job->min_throughput;
    for (int k = 0; k < GYM_LG_SMALL; k++) e->lg_small[k] = (float)log1p((double)k);
    for (int t = 0; t < e->T; t++) {
        const model_type *ty = &cl->types[t];
        float *r = e->type_static + (size_t)t * GYM_TYPE_FEATS;
        r[1] = lg(ty->flops / e->F_max);
        r[2] = lg(ty->io_bw / e->D_max);
        r[3] = lg(ty->net_bw / e->N_max);
        r[4] = lg(ty->mem / e->m_sum);
        r[5] = lg(ty->price / e->p_min);
        r[6] = lg(ty->price / ty->flops / e->pf_min);
        r[7] = ty->is_gpu ? 1.0f : 0.0f;
    }
    for (int n = 0; n < e->N; n++) {
        const model_node *nd = &cl->nodes[n];
        float *r = e->node_static + (size_t)n * GYM_NODE_FEATS;
        r[11] = lg(nd->bw / e->bw_max);
        r[13] = (float)nd->loss;
        r[14] = cl->types[nd->type].is_gpu ? 1.0f : 0.0f;
        r[15] = lg(cl->types[nd->type].price / e->p_min);
    }
    for (int l = 0; l < e->L; l++) {
        const model_layer *ly = &job->layers[l];
        float *r = e->layer_feats + (size_t)l * GYM_LAYER_FEATS;
        r[0] = lg(ly->flops / e->f_mean);
        r[1] = lg(ly->io / e->d_mean);
        r[2] = lg(ly->act / e->a_mean);
        r[3] = lg(ly->params / e->w_mean);
        r[4] = lg(ly->mem / e->m_mean);
        r[5] = e->L > 1 ? (float)l / (float)(e->L - 1) : 0.0f;
        r[6] = l == 0 ? 1.0f : 0.0f;
        r[7] = l == e->L - 1 ? 1.0f : 0.0f;
        r[8] = lg(R * ly->flops / e->F_max);
        r[9] = lg(R * ly->io / e->D_max);
        r[10] = lg(2.0 * R * ly->act / e->N_max);
        r[11] = lg(ly->mem / e->M_max);
    }
}

/* ---- create / free ---------------------------------------------------------- */

gym_env *gym_create(const model_job *job, const model_cluster *cl,
                    const gym_opts *opts, char *err, size_t errlen) {
    if (check_instance(job, cl, err, errlen) < 0) return NULL;
    gym_opts o;
    if (opts) o = *opts;
    else gym_opts_default(&o);
    if (!(o.ref_cost > 0.0) || !isfinite(o.ref_cost)) {
        snprintf(err, errlen, "gym_opts.ref_cost: must be a finite number > 0, got %g",
                 o.ref_cost);
        return NULL;
    }
    if (!isnan(o.infeasible_reward) && !isfinite(o.infeasible_reward)) {
        snprintf(err, errlen, "gym_opts.infeasible_reward: must be finite (or NAN for auto)");
        return NULL;
    }

    gym_env *e = calloc(1, sizeof *e);
    if (!e) goto oom;
    e->job = job;
    e->cl = cl;
    e->opts = o;
    e->L = job->n_layers;
    e->T = cl->n_types;
    e->N = cl->n_nodes;
    e->Z = cl->n_zones > 0 ? cl->n_zones : 1;
    e->node_phase = cl->n_nodes > 0 && !o.plan_only;

    long unit_total = 0;
    for (int n = 0; n < e->N; n++) {
        unit_total += cl->nodes[n].units;
        e->ps_total += cl->nodes[n].ps_slots;
    }
    e->task_cap = (int)(unit_total + e->ps_total);
    if (unit_total + e->ps_total > 100000000L) {
        snprintf(err, errlen, "cluster.nodes: %ld units and ps slots in all, too many",
                 unit_total + e->ps_total);
        free(e);
        return NULL;
    }
    int max_rows = e->T > e->N ? e->T : e->N;
    size_t row_floats = (size_t)e->T * GYM_TYPE_FEATS;
    if ((size_t)e->N * GYM_NODE_FEATS > row_floats) row_floats = (size_t)e->N * GYM_NODE_FEATS;
    size_t tc = e->task_cap > 0 ? (size_t)e->task_cap : 1;
    size_t nn = e->N > 0 ? (size_t)e->N : 1;

    e->cap = calloc((size_t)e->T, sizeof *e->cap);
    e->node_supply = calloc((size_t)e->T, sizeof *e->node_supply);
    e->committed = calloc((size_t)e->T, sizeof *e->committed);
    e->cand = calloc((size_t)e->T, sizeof *e->cand);
    e->assign = calloc((size_t)e->L, sizeof *e->assign);
    e->alpha_lo = calloc((size_t)e->L, sizeof *e->alpha_lo);
    e->mask = calloc((size_t)max_rows, 1);
    e->rows = calloc(row_floats, sizeof *e->rows);
    e->plan = model_plan_create(e->L);
    e->final = model_plan_create(e->L);
    e->task_node = calloc(tc, sizeof *e->task_node);
    e->task_stage = calloc(tc, sizeof *e->task_stage);
    e->task_ps = calloc(tc, 1);
    e->order = calloc(tc, sizeof *e->order);
    e->stage_first = calloc((size_t)e->L + 1, sizeof *e->stage_first);
    e->units_left = calloc(nn, sizeof(int));
    e->ps_left = calloc(nn, sizeof(int));
    e->cur_cnt = calloc(nn, sizeof(int));
    e->cur_workers = calloc(nn, sizeof(int));
    e->prev_workers = calloc(nn, sizeof(int));
    e->zone_cnt = calloc((size_t)e->Z, sizeof(int));
    e->zone_scr = calloc(2 * (size_t)e->Z, sizeof(long));
    e->type_static = calloc((size_t)e->T * GYM_TYPE_FEATS, sizeof(float));
    e->node_static = calloc(nn * GYM_NODE_FEATS, sizeof(float));
    e->layer_feats = calloc((size_t)e->L * GYM_LAYER_FEATS, sizeof(float));
    e->node_lat = calloc(nn, sizeof(float));
    if (!e->cap || !e->node_supply || !e->committed || !e->cand || !e->assign || !e->alpha_lo ||
        !e->mask || !e->rows || !e->plan || !e->final || !e->task_node ||
        !e->task_stage || !e->task_ps || !e->order || !e->stage_first ||
        !e->units_left || !e->ps_left || !e->cur_cnt || !e->cur_workers ||
        !e->prev_workers || !e->zone_cnt || !e->zone_scr || !e->type_static || !e->node_static ||
        !e->layer_feats || !e->node_lat) {
        gym_free(e);
        goto oom;
    }

    for (int n = 0; n < e->N; n++) e->node_supply[cl->nodes[n].type] += cl->nodes[n].units;
    for (int t = 0; t < e->T; t++) {
        long c = cl->types[t].count;
        if (e->node_phase && e->node_supply[t] < c) c = e->node_supply[t];
        e->cap[t] = c;
        e->cap_sum += c;
    }

    /* alpha_lo[f]: a stage from f grows at most to f..L-1, whose g_s bounds
     * its ps tasks; one more absorbs the rounding of summing backwards.
     * Without a fitted curve this is the job's alpha. */
    model_span tail = {0, 0, 0, 0, 0};
    for (int f = e->L - 1; f >= 0; f--) {
        model_stage st;
        tail.params += job->layers[f].params;
        model_stage_fill(job, cl, 0, f, e->L - 1, &tail, &st);
        e->alpha_lo[f] = model_stage_alpha(job, st.n_ps < 1000000 ? st.n_ps + 1 : st.n_ps);
    }

    /* Feature scales. */
    double sf = 0, sd = 0, sa = 0, sw = 0, sm = 0;
    for (int l = 0; l < e->L; l++) {
        sf += job->layers[l].flops;
        sd += job->layers[l].io;
        sa += job->layers[l].act;
        sw += job->layers[l].params;
        sm += job->layers[l].mem;
    }
    e->f_sum = sf;
    e->f_mean = mean_or_one(sf, e->L);
    e->d_mean = mean_or_one(sd, e->L);
    e->a_mean = mean_or_one(sa, e->L);
    e->w_mean = mean_or_one(sw, e->L);
    e->m_mean = mean_or_one(sm, e->L);
    e->m_sum = sm > 0.0 ? sm : 1.0;
    e->F_max = e->D_max = e->N_max = e->M_max = 0.0;
    e->p_min = e->pf_min = INFINITY;
    for (int t = 0; t < e->T; t++) {
        const model_type *ty = &cl->types[t];
        e->F_max = fmax(e->F_max, ty->flops);
        e->D_max = fmax(e->D_max, ty->io_bw);
        e->N_max = fmax(e->N_max, ty->net_bw);
        e->M_max = fmax(e->M_max, ty->mem);
        if (ty->price > 0.0) {
            e->p_min = fmin(e->p_min, ty->price);
            e->pf_min = fmin(e->pf_min, ty->price / ty->flops);
        }
    }
    if (!(e->M_max > 0.0)) e->M_max = 1.0;
    if (!isfinite(e->p_min)) e->p_min = 1.0;
    if (!isfinite(e->pf_min)) e->pf_min = 1.0;
    e->bw_max = 1.0;
    for (int n = 0; n < e->N; n++) e->bw_max = n ? fmax(e->bw_max, cl->nodes[n].bw) : cl->nodes[n].bw;

    static_features(e);

    /* The infeasible reward: below every feasible plan's reward. */
    if (!isnan(o.infeasible_reward)) {
        e->infeasible_reward = o.infeasible_reward;
    } else if (job->min_throughput > 0.0) {
        double price = 0.0;
        for (int t = 0; t < e->T; t++) price += (double)e->cap[t] * cl->types[t].price;
        double cost_max = job->samples / (job->min_throughput * 3600.0) * price;
        e->infeasible_reward = -(1.0 + 2.0 * cost_max / o.ref_cost);
        if (!isfinite(e->infeasible_reward)) e->infeasible_reward = -1e9;
    } else {
        e->infeasible_reward = -1e9;
    }

    gym_reset(e, 0);
    return e;
oom:
    snprintf(err, errlen, "gym: out of memory");
    return NULL;
}

void gym_free(gym_env *e) {
    if (!e) return;
    free(e->cap);
    free(e->node_supply);
    free(e->committed);
    free(e->cand);
    free(e->assign);
    free(e->alpha_lo);
    free(e->mask);
    free(e->rows);
    model_plan_free(e->plan);
    model_plan_free(e->final);
    free(e->task_node);
    free(e->task_stage);
    free(e->task_ps);
    free(e->order);
    free(e->stage_first);
    free(e->units_left);
    free(e->ps_left);
    free(e->cur_cnt);
    free(e->cur_workers);
    free(e->prev_workers);
    free(e->zone_cnt);
    free(e->zone_scr);
    free(e->type_static);
    free(e->node_static);
    free(e->layer_feats);
    free(e->node_lat);
    free(e);
}

/* ---- TYPE phase ----------------------------------------------------------- */

/* Makes a bound stage's units a lower bound over every stage the span can
 * still grow into: with a fitted curve the serial fraction falls as ps tasks
 * are added (model_curve_alpha), so the bound takes the least one. With
 * Amdahl's constant alpha it changes nothing. */
static void bound_units(const gym_env *e, model_stage *st, int first) {
    const model_job *job = e->job;
    if (!job->curve.fitted) return;
    st->units = model_units(st->step, job->batch, job->min_throughput, e->alpha_lo[first]);
    st->throughput = 0.0; /* not meaningful for a bound */
}

/* Scores the candidate stages of layer l and fills the mask (see the file
 * comment). A bound stage is filled with last = L-1 so that model_stage_fill
 * counts no trailing activation; its `last` field is not meaningful. */
static void type_prepare(gym_env *e) {
    const model_job *job = e->job;
    const model_cluster *cl = e->cl;
    const int l = e->l, u = e->open_type, L = e->L;
    const model_layer *ly = &job->layers[l];
    const int np = e->node_phase;
    long close_ps = 0;

    e->close_ok = 0;
    if (u >= 0) {
        model_span s = e->open;
        s.act = head_act(job, e->open_first);
        model_stage_fill(job, cl, u, e->open_first, L - 1, &s, &e->open_lb);
        bound_units(e, &e->open_lb, e->open_first);
        /* Closing at l-1 < L-1: the trailing activation of l-1 counts. */
        s.act += job->layers[l - 1].act;
        model_stage_fill(job, cl, u, e->open_first, l - 1, &s, &e->close_ex);
        e->close_ok = e->close_ex.units > 0 &&
                      e->committed[u] + e->close_ex.units <= e->cap[u] &&
                      (!np || e->committed_ps + e->close_ex.n_ps <= e->ps_total);
        close_ps = e->close_ex.n_ps;
    }

    e->n_allowed = 0;
    for (int t = 0; t < e->T; t++) {
        const model_type *ty = &cl->types[t];
        model_stage *c = &e->cand[t];
        int ok;
        if (t == u) {
            model_span s = e->open;
            s.flops += ly->flops;
            s.io += ly->io;
            s.params += ly->params;
            s.mem += ly->mem;
            s.act = head_act(job, e->open_first);
            model_stage_fill(job, cl, t, e->open_first, L - 1, &s, c);
            if (l < L - 1) bound_units(e, c, e->open_first); /* else exact */
            ok = c->mem <= ty->mem && c->units > 0 &&
                 e->committed[t] + c->units <= e->cap[t] &&
                 (!np || e->committed_ps + c->n_ps <= e->ps_total);
        } else {
            model_span s = {0, 0, 0, 0, 0};
            s.flops += ly->flops;
            s.io += ly->io;
            s.params += ly->params;
            s.mem += ly->mem;
            s.act = head_act(job, l);
            model_stage_fill(job, cl, t, l, L - 1, &s, c);
            if (l < L - 1) bound_units(e, c, l);
            ok = (u < 0 || e->close_ok) && c->mem <= ty->mem && c->units > 0 &&
                 e->committed[t] + c->units <= e->cap[t] &&
                 (!np || e->committed_ps + close_ps + c->n_ps <= e->ps_total);
        }
        e->mask[t] = (unsigned char)ok;
        e->n_allowed += ok;
    }
}

static void finish(gym_env *e, int feasible, int reason, double cost, int dead_end,
                   gym_step_result *out) {
    e->done = 1;
    e->phase = GYM_PHASE_DONE;
    e->n_allowed = 0;
    gym_step_result r = {0};
    r.terminated = 1;
    r.feasible = feasible;
    r.dead_end = dead_end;
    r.reason = feasible ? MODEL_FEASIBLE : reason;
    r.cost = feasible ? cost : 0.0;
    r.reward = feasible ? -cost / e->opts.ref_cost : e->infeasible_reward;
    r.phase = GYM_PHASE_DONE;
    if (feasible) e->why[0] = '\0';
    if (out) *out = r;
}

static void node_start(gym_env *e, gym_step_result *out);

static void type_step(gym_env *e, int t, gym_step_result *out) {
    const model_job *job = e->job;
    const model_layer *ly = &job->layers[e->l];
    if (t == e->open_type) {
        e->open.flops += ly->flops;
        e->open.io += ly->io;
        e->open.params += ly->params;
        e->open.mem += ly->mem;
    } else {
        if (e->open_type >= 0) {
            e->committed[e->open_type] += e->close_ex.units;
            e->committed_ps += e->close_ex.n_ps;
            e->price_closed += e->close_ex.units * e->cl->types[e->open_type].price;
            e->n_closed++;
        }
        e->open_type = t;
        e->open_first = e->l;
        e->open = (model_span){0, 0, 0, 0, 0};
        e->open.flops += ly->flops;
        e->open.io += ly->io;
        e->open.params += ly->params;
        e->open.mem += ly->mem;
    }
    e->assign[e->l++] = t;
    if (e->l < e->L) {
        type_prepare(e);
        if (out) *out = (gym_step_result){.phase = GYM_PHASE_TYPE};
        return;
    }
    /* The last layer: score the plan. */
    int rc = model_eval_counts(job, e->cl, e->assign, e->opts.workers, e->opts.ps, e->plan);
    e->plan_state = 1;
    if (rc != MODEL_FEASIBLE) {
        snprintf(e->why, sizeof e->why, "%s", e->plan->why);
        finish(e, 0, rc, 0.0, 0, out);
    } else if (!e->node_phase) {
        finish(e, 1, 0, e->plan->cost, 0, out);
    } else {
        node_start(e, out);
    }
}

/* ---- NODE phase ---------------------------------------------------------- */

/* Zeroes arr[n] for every placed task of stage s (workers only if
 * workers_only), and zone_cnt when zones is set: undoing that stage's
 * counts without a pass over all nodes. */
static void stage_clear(gym_env *e, int s, int *arr, int workers_only, int zones) {
    if (s < 0) return;
    for (int i = e->stage_first[s]; i < e->stage_first[s + 1]; i++) {
        int n = e->task_node[i];
        if (n < 0 || (workers_only && e->task_ps[i])) continue;
        arr[n] = 0;
        if (zones) e->zone_cnt[e->cl->nodes[n].zone] = 0;
    }
}

/* Moves the per-stage counters to the stage of the next task when it
 * changes, then fills the mask. */
static void node_prepare(gym_env *e) {
    int i = e->order[e->task_i];
    int s = e->task_stage[i];
    if (s != e->cur_stage) {
        /* prev_workers held stage s-2's workers: clear, then swap. */
        stage_clear(e, s - 2, e->prev_workers, 1, 0);
        int *tmp = e->prev_workers;
        e->prev_workers = e->cur_workers;
        e->cur_workers = tmp;
        stage_clear(e, s - 1, e->cur_cnt, 0, 1);
        e->cur_stage = s;
        e->cur_placed = 0;
        e->cur_w_left = e->plan->stages[s].units;
        e->cur_g_left = e->plan->stages[s].n_ps;
        double step = e->plan->stages[s].step;
        for (int n = 0; n < e->N; n++)
            e->node_lat[n] = lg(ratio(2.0 * e->cl->nodes[n].latency, step));
    }
    int t = e->plan->stages[s].type;
    const model_cluster *cl = e->cl;
    e->n_allowed = 0;
    for (int n = 0; n < e->N; n++) {
        int ok = e->task_ps[i] ? e->ps_left[n] > 0
                               : (cl->nodes[n].type == t && e->units_left[n] > 0);
        e->mask[n] = (unsigned char)ok;
        e->n_allowed += ok;
    }
}

static void node_start(gym_env *e, gym_step_result *out) {
    const model_plan *p = e->plan;
    const model_cluster *cl = e->cl;
    long need[MODEL_MAX_TYPES] = {0};
    long need_ps = 0;
    for (int s = 0; s < p->n_stages; s++) {
        need[p->stages[s].type] += p->stages[s].units;
        need_ps += p->stages[s].n_ps;
    }
    for (int t = 0; t < e->T; t++)
        if (need[t] > e->node_supply[t]) {
            snprintf(e->why, sizeof e->why,
                     "placement: the plan needs %ld workers on %s, the nodes hold %ld units",
                     need[t], cl->types[t].name, e->node_supply[t]);
            finish(e, 0, MODEL_ERR_PLACEMENT, 0.0, 0, out);
            return;
        }
    if (need_ps > e->ps_total) {
        snprintf(e->why, sizeof e->why,
                 "placement: the plan needs %ld ps tasks, the nodes hold %ld ps slots",
                 need_ps, e->ps_total);
        finish(e, 0, MODEL_ERR_PLACEMENT, 0.0, 0, out);
        return;
    }
    /* Task order of place.h: stage by stage, workers then ps tasks. */
    int i = 0;
    for (int s = 0; s < p->n_stages; s++) {
        e->stage_first[s] = i;
        for (int k = 0; k < p->stages[s].units + p->stages[s].n_ps; k++, i++) {
            e->task_stage[i] = s;
            e->task_ps[i] = (unsigned char)(k >= p->stages[s].units);
            e->task_node[i] = -1;
            e->order[i] = i;
        }
        if (e->opts.shuffle_tasks) /* Fisher-Yates within the stage */
            for (int k = i - 1; k > e->stage_first[s]; k--) {
                int j = e->stage_first[s] + rng_below(&e->rng, k - e->stage_first[s] + 1);
                int tmp = e->order[k];
                e->order[k] = e->order[j];
                e->order[j] = tmp;
            }
    }
    e->stage_first[p->n_stages] = i;
    e->n_tasks = i;
    e->task_i = 0;
    for (int n = 0; n < e->N; n++) {
        e->units_left[n] = cl->nodes[n].units;
        e->ps_left[n] = cl->nodes[n].ps_slots;
        e->cur_cnt[n] = e->cur_workers[n] = e->prev_workers[n] = 0;
    }
    memset(e->zone_cnt, 0, (size_t)e->Z * sizeof *e->zone_cnt);
    e->cur_stage = -1;
    e->phase = GYM_PHASE_NODE;
    node_prepare(e);
    if (out) *out = (gym_step_result){.phase = GYM_PHASE_NODE};
}

static void node_step(gym_env *e, int n, gym_step_result *out) {
    int i = e->order[e->task_i];
    e->task_node[i] = n;
    if (e->task_ps[i]) {
        e->ps_left[n]--;
        e->cur_g_left--;
    } else {
        e->units_left[n]--;
        e->cur_workers[n]++;
        e->cur_w_left--;
    }
    e->cur_cnt[n]++;
    e->zone_cnt[e->cl->nodes[n].zone]++;
    e->cur_placed++;
    if (++e->task_i < e->n_tasks) {
        node_prepare(e);
        if (out) *out = (gym_step_result){.phase = GYM_PHASE_NODE};
        return;
    }
    int rc = place_eval(e->job, e->cl, e->plan, e->task_node, e->final);
    e->plan_state = 2;
    if (rc != MODEL_FEASIBLE) {
        snprintf(e->why, sizeof e->why, "%s", e->final->why);
        finish(e, 0, rc, 0.0, 0, out);
    } else {
        finish(e, 1, 0, e->final->cost, 0, out);
    }
}

/* ---- the public step API --------------------------------------------------- */

int gym_reset(gym_env *e, uint64_t seed) {
    e->rng = seed;
    e->phase = GYM_PHASE_TYPE;
    e->steps = 0;
    e->done = 0;
    e->why[0] = '\0';
    e->plan_state = 0;
    e->l = 0;
    for (int l = 0; l < e->L; l++) e->assign[l] = -1;
    e->open_type = -1;
    e->open_first = 0;
    e->open = (model_span){0, 0, 0, 0, 0};
    memset(e->committed, 0, (size_t)e->T * sizeof *e->committed);
    e->committed_ps = 0;
    e->price_closed = 0.0;
    e->n_closed = 0;
    e->n_tasks = e->task_i = 0;
    e->cur_stage = -1;
    type_prepare(e);
    return 0;
}

int gym_step(gym_env *e, int action, gym_step_result *out) {
    if (e->done) return -1;
    int n = gym_n_actions(e);
    if (action < 0 || action >= n) return -1;
    if (!e->mask[action] && !e->opts.unmasked) return -1;
    e->steps++;
    if (e->phase == GYM_PHASE_TYPE) type_step(e, action, out);
    else node_step(e, action, out);
    return 0;
}

/* The rule that most plausibly blocked layer l, for reporting a TYPE dead
 * end: capacity (units or ps slots) when some type fits memory and can reach
 * R, else throughput when some type fits memory, else memory. */
static int dead_end_reason(const gym_env *e) {
    int fits = 0;
    for (int t = 0; t < e->T; t++) {
        const model_stage *c = &e->cand[t];
        if (c->mem > e->cl->types[t].mem) continue;
        if (c->units > 0) return MODEL_ERR_CAPACITY;
        fits = 1;
    }
    return fits ? MODEL_ERR_THROUGHPUT : MODEL_ERR_MEMORY;
}

int gym_terminate(gym_env *e, gym_step_result *out) {
    if (e->done) return -1;
    if (e->phase == GYM_PHASE_TYPE)
        snprintf(e->why, sizeof e->why, "dead end: no type allowed for layer %d (%s)",
                 e->l, e->job->layers[e->l].name);
    else
        snprintf(e->why, sizeof e->why, "dead end: no node allowed for task %d",
                 e->order[e->task_i]);
    finish(e, 0, e->phase == GYM_PHASE_TYPE ? dead_end_reason(e) : MODEL_ERR_PLACEMENT,
           0.0, 1, out);
    return 0;
}

int gym_n_actions(const gym_env *e) {
    if (e->phase == GYM_PHASE_TYPE) return e->T;
    if (e->phase == GYM_PHASE_NODE) return e->N;
    return 0;
}

int gym_max_actions(const gym_env *e) {
    return e->T > e->N ? e->T : e->N;
}

int gym_phase(const gym_env *e) { return e->phase; }

int gym_steps(const gym_env *e) { return e->steps; }

int gym_mask(const gym_env *e, unsigned char *mask) {
    if (e->done) return -1;
    memcpy(mask, e->mask, (size_t)gym_n_actions(e));
    return e->n_allowed;
}

const int *gym_assignment(const gym_env *e, int *n_decided) {
    if (n_decided) *n_decided = e->l;
    return e->assign;
}

const int *gym_task_nodes(const gym_env *e, int *n_tasks, int *n_placed) {
    int have = e->plan_state > 0 && (e->phase == GYM_PHASE_NODE || e->plan_state == 2);
    if (n_tasks) *n_tasks = have ? e->n_tasks : 0;
    if (n_placed) *n_placed = have ? e->task_i : 0;
    return have ? e->task_node : NULL;
}

const model_plan *gym_plan(const gym_env *e) {
    if (e->plan_state == 2) return e->final;
    if (e->plan_state == 1) return e->plan;
    return NULL;
}

const char *gym_why(const gym_env *e) { return e->why; }

double gym_infeasible_reward(const gym_env *e) { return e->infeasible_reward; }

/* ---- observations ------------------------------------------------------------- */

static void obs_global_common(const gym_env *e, float *g) {
    const model_job *job = e->job;
    double R = job->min_throughput;
    g[3] = lg(R * e->f_sum / e->F_max);
    g[4] = (float)job->alpha;
    g[5] = (float)(log1p((double)e->L) / log1p((double)MODEL_MAX_LAYERS));
}

static void obs_type(gym_env *e, gym_observation *obs) {
    const model_job *job = e->job;
    const model_cluster *cl = e->cl;
    const model_layer *ly = &job->layers[e->l];
    const double R = job->min_throughput, B = job->batch;
    const int u = e->open_type;
    float *g = obs->global;

    obs->layer = e->l;
    obs->stage = u >= 0 ? e->n_closed : -1;
    g[0] = 1.0f;
    g[2] = (float)e->l / (float)e->L;
    memcpy(g + 6, e->layer_feats + (size_t)e->l * GYM_LAYER_FEATS, 5 * sizeof(float));
    if (u >= 0) {
        g[11] = 1.0f;
        g[12] = (float)(e->l - e->open_first) / (float)e->L;
        g[13] = (float)fmin(2.0, ratio(e->open.mem, cl->types[u].mem));
        g[14] = lg(R * e->open_lb.step / B);
        g[15] = lg_count(e, e->open_lb.units);
        g[16] = lg_count(e, e->open_lb.n_ps);
    }
    g[17] = (float)e->n_closed / (float)e->L;
    g[18] = lg(e->price_closed / e->p_min);
    long used = 0;
    for (int t = 0; t < e->T; t++) used += e->committed[t];
    g[19] = (float)ratio((double)used, (double)e->cap_sum);

    obs->n_rows = e->T;
    obs->row_feats = GYM_TYPE_FEATS;
    for (int t = 0; t < e->T; t++) {
        const model_type *ty = &cl->types[t];
        const model_stage *c = &e->cand[t];
        float *r = e->rows + (size_t)t * GYM_TYPE_FEATS;
        memcpy(r, e->type_static + (size_t)t * GYM_TYPE_FEATS, GYM_TYPE_FEATS * sizeof(float));
        long free_units = e->cap[t] - e->committed[t] - (t == u ? e->open_lb.units : 0);
        if (free_units < 0) free_units = 0;
        r[0] = e->mask[t];
        r[8] = t == u ? 1.0f : 0.0f;
        r[9] = (float)ratio((double)free_units, (double)e->cap[t]);
        r[10] = lg_count(e, free_units);
        r[11] = ty->mem > 0.0 ? (float)fmin(2.0, c->mem / ty->mem) : (c->mem > 0.0 ? 2.0f : 0.0f);
        r[12] = lg(R * c->step / B);
        r[13] = lg_count(e, c->units);
        r[14] = c->units > 0 ? 1.0f : 0.0f;
        r[15] = lg(R * ly->flops / ty->flops);
    }
}

static void obs_node(gym_env *e, gym_observation *obs) {
    const model_job *job = e->job;
    const model_cluster *cl = e->cl;
    const model_plan *p = e->plan;
    const double R = job->min_throughput, B = job->batch;
    const int i = e->order[e->task_i], s = e->task_stage[i];
    const model_stage *st = &p->stages[s];
    const model_type *ty = &cl->types[st->type];
    float *g = obs->global;

    obs->task = i;
    obs->stage = s;
    obs->is_ps = e->task_ps[i];
    g[1] = 1.0f;
    g[2] = (float)e->task_i / (float)e->n_tasks;
    g[11] = 1.0f;
    g[12] = (float)(st->last - st->first + 1) / (float)e->L;
    g[13] = (float)fmin(2.0, ratio(st->mem, ty->mem));
    g[14] = lg(R * st->step / B);
    g[15] = lg_count(e, st->units);
    g[16] = lg_count(e, st->n_ps);
    g[17] = (float)p->n_stages / (float)e->L;
    g[18] = lg(p->unit_price / e->p_min);
    long used = 0;
    for (int k = 0; k < p->n_stages; k++) used += p->stages[k].units;
    g[19] = (float)ratio((double)used, (double)e->cap_sum);
    g[20] = e->task_ps[i] ? 1.0f : 0.0f;
    g[21] = (float)ratio(e->cur_w_left, st->units);
    g[22] = (float)ratio(e->cur_g_left, st->n_ps);
    g[23] = R > 0.0 && p->throughput > R ? (float)log(p->throughput / R) : 0.0f;

    obs->n_rows = e->N;
    obs->row_feats = GYM_NODE_FEATS;
    int prev_k = s > 0 ? p->stages[s - 1].units : 0;
    /* per zone: the previous stage's workers, and the units of the next
     * stage's type still free (the zones the stages around this one use) */
    long *zprev = e->zone_scr, *zroom = e->zone_scr + e->Z;
    memset(e->zone_scr, 0, 2 * (size_t)e->Z * sizeof *e->zone_scr);
    int next_t = s + 1 < p->n_stages ? p->stages[s + 1].type : -1;
    int next_k = s + 1 < p->n_stages ? p->stages[s + 1].units : 0;
    for (int n = 0; n < e->N; n++) {
        int z = cl->nodes[n].zone;
        zprev[z] += e->prev_workers[n];
        if (cl->nodes[n].type == next_t && e->units_left[n] > 0) zroom[z] += e->units_left[n];
    }
    for (int n = 0; n < e->N; n++) {
        const model_node *nd = &cl->nodes[n];
        float *r = e->rows + (size_t)n * GYM_NODE_FEATS;
        int ul = e->units_left[n] > 0 ? e->units_left[n] : 0;
        int pl = e->ps_left[n] > 0 ? e->ps_left[n] : 0;
        memcpy(r, e->node_static + (size_t)n * GYM_NODE_FEATS, GYM_NODE_FEATS * sizeof(float));
        r[0] = e->mask[n];
        r[1] = nd->type == st->type ? 1.0f : 0.0f;
        r[2] = (float)ratio(ul, nd->units);
        r[3] = lg_count(e, ul);
        r[4] = (float)ratio(pl, nd->ps_slots);
        r[5] = lg_count(e, pl);
        r[6] = (float)ratio(e->zone_cnt[nd->zone], e->cur_placed);
        r[7] = (float)ratio(e->cur_cnt[n], e->cur_placed);
        r[8] = lg_count(e, e->cur_cnt[n]);
        r[9] = (float)ratio(e->prev_workers[n], prev_k);
        r[10] = (float)(fmin(ty->net_bw, nd->bw) * (1.0 - nd->loss) / ty->net_bw);
        r[12] = e->node_lat[n];
        r[16] = (float)ratio((double)zprev[nd->zone], prev_k);
        r[17] = next_t < 0 ? 1.0f : (float)fmin(1.0, ratio((double)zroom[nd->zone], next_k));
    }
}

int gym_obs(gym_env *e, gym_observation *obs) {
    memset(obs, 0, sizeof *obs);
    obs->phase = e->phase;
    obs->layer = obs->task = obs->stage = -1;
    obs->rows = e->rows;
    obs->mask = e->mask;
    obs_global_common(e, obs->global);
    if (e->phase == GYM_PHASE_TYPE) obs_type(e, obs);
    else if (e->phase == GYM_PHASE_NODE) obs_node(e, obs);
    else obs->global[2] = 1.0f;
    obs->n_allowed = e->done ? 0 : e->n_allowed;
    return 0;
}

int gym_layer_features(const gym_env *e, float *out) {
    memcpy(out, e->layer_feats, (size_t)e->L * GYM_LAYER_FEATS * sizeof(float));
    return e->L;
}
