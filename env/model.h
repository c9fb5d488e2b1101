/* model.h -- the placement problem and its cost model (docs/model.md, §1-§2).
 *
 * This module holds the plain data that describes a cluster and a job, and
 * scores a layer-to-type assignment: it cuts the assignment into stages,
 * provisions units per stage by the Amdahl law, checks capacity and memory,
 * and returns throughput, training time and cost. Every solver, the agent,
 * the daemon and `strata cost` score plans through model_eval(), so they all
 * agree to the last digit. Placement of tasks onto nodes (§3) is in place.h.
 *
 * Units are SI throughout: seconds, bytes, FLOP, dollars. Indices are
 * 0-based; a stage covers layers first..last inclusive.
 */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H

#include <stddef.h>

#define MODEL_NAME_MAX 64     /* names of types, layers, nodes, zones, jobs */
#define MODEL_MAX_LAYERS 1024 /* a job with more layers is refused */
#define MODEL_MAX_TYPES 64    /* a cluster with more types is refused */
#define MODEL_MAX_NODES 4096  /* a cluster with more nodes is refused */
#define MODEL_MAX_ZONES 64
#define MODEL_DEFAULT_ALPHA 0.05
#define MODEL_DEFAULT_SHARD 1073741824.0 /* 1 GiB per ps task */

/* Resource type t: one unit is one CPU server slot or one GPU. */
typedef struct {
    char name[MODEL_NAME_MAX];
    int is_gpu;    /* kind: 0 cpu, 1 gpu (informative; the model does not use it) */
    double flops;  /* F_t, sustained FLOP/s of one unit */
    double io_bw;  /* D_t, bytes/s one unit reads training input at */
    double net_bw; /* N_t, bytes/s of one unit's link */
    double mem;    /* M_t, bytes per unit */
    double price;  /* p_t, dollars per unit-hour */
    int count;     /* c_t, free units */
} model_type;

/* Layer l, figures per sample. */
typedef struct {
    char name[MODEL_NAME_MAX];
    double flops;  /* f_l, forward + backward FLOP */
    double io;     /* d_l, input bytes read */
    double act;    /* a_l, activation bytes passed to layer l+1 */
    double params; /* w_l, bytes of dense parameters synchronised each step */
    double mem;    /* m_l, bytes one replica of the layer needs */
} model_layer;

/* A node: a machine holding `units` units of one type (§3). */
typedef struct {
    char name[MODEL_NAME_MAX];
    int type;       /* index into cluster types */
    int units;      /* u_n, free units of that type */
    int ps_slots;   /* ps tasks it can host beside its units (default 1) */
    int zone;       /* index into cluster zones */
    double bw;      /* measured link bandwidth, bytes/s */
    double latency; /* measured link latency, s */
    double loss;    /* fraction of packets lost, [0,1) */
} model_node;

typedef struct {
    char name[MODEL_NAME_MAX];
} model_zone;

/* The cluster: types, and optionally nodes and zones. zone_bw/zone_lat are
 * n_zones x n_zones row-major tables of inter-zone figures; when absent
 * (NULL) every pair uses inter_bw / inter_latency. */
typedef struct {
    int n_types;
    model_type *types; /* [n_types] */
    int n_nodes;
    model_node *nodes; /* [n_nodes], may be NULL when n_nodes == 0 */
    int n_zones;
    model_zone *zones;    /* [n_zones] */
    double inter_bw;      /* bytes/s between zones (default for all pairs) */
    double inter_latency; /* s between zones (default for all pairs) */
    double *zone_bw;      /* [n_zones * n_zones] or NULL */
    double *zone_lat;     /* [n_zones * n_zones] or NULL */
} model_cluster;

/* One measured throughput of a job (Coach, Optimus; docs/jobs.md): the
 * samples/s it ran at with `workers` worker tasks and `ps` ps tasks. */
typedef struct {
    int workers;       /* w >= 1 */
    int ps;            /* p >= 1 */
    double throughput; /* samples/s, > 0 */
} model_point;

/* Optimus's throughput curve f(p, w) = w / (th0 + th1 w/p + th2 w + th3 p),
 * th >= 0, fitted to a job's measurements (solvers/fit.h). While `fitted`
 * is 0 (the default of a zeroed job) the model uses the Amdahl law with the
 * job's alpha. Once fitted, a stage with g_s ps tasks scales as the curve
 * does: its serial fraction becomes model_curve_alpha(curve, g_s), so that
 * theta_s(k) = (B / t_s) f(g_s, k) / f(g_s, 1) (docs/jobs.md). */
typedef struct {
    double th[4]; /* th0..th3 >= 0 */
    int fitted;   /* 1: fitted to the job's measurements, used and reported */
} model_curve;

/* The job: layers in order and the training target. */
typedef struct {
    char name[MODEL_NAME_MAX];
    int n_layers;
    model_layer *layers;   /* [n_layers] */
    double batch;          /* B, samples per step per unit */
    double samples;        /* S, samples to train */
    double min_throughput; /* R, samples/s */
    double alpha;          /* serial fraction of data parallelism, [0,1) */
    double shard;          /* bytes of parameters per ps task */
    int n_points;          /* measured throughputs, 0 when none */
    model_point *points;   /* [n_points] or NULL; owned by whoever built the job */
    model_curve curve;     /* fitted curve; curve.fitted == 0 means Amdahl */
} model_job;

/* Why a plan is infeasible. */
typedef enum {
    MODEL_FEASIBLE = 0,
    MODEL_ERR_THROUGHPUT, /* a stage can never reach R: alpha*q >= 1 */
    MODEL_ERR_CAPACITY,   /* stages of one type need more units than c_t */
    MODEL_ERR_MEMORY,     /* a stage's layers need more than M_t */
    MODEL_ERR_PLACEMENT,  /* the placement cannot host the tasks or keep R */
} model_reason;

/* One stage of a plan: a maximal run of consecutive layers of one type. */
typedef struct {
    int type;          /* t_s */
    int first, last;   /* layers first..last, inclusive */
    double compute;    /* C_s, s per batch per unit */
    double io;         /* I_s */
    double xfer;       /* X_s (refined X_s' after a placement) */
    double sync;       /* P_s (refined P_s' after a placement) */
    double step;       /* t_s = max(C_s, I_s) + X_s + P_s */
    double mem;        /* sum of m_l over the stage */
    double params;     /* W_s, sum of w_l over the stage */
    int n_ps;          /* g_s = max(1, ceil(W_s / shard)) */
    int units;         /* k_s, 0 when the stage can never reach R */
    double throughput; /* theta_s(k_s) samples/s (0 when units == 0) */
} model_stage;

/* A scored plan. Created for a maximum number of layers; reused across
 * model_eval() calls without allocating. */
typedef struct {
    int cap;             /* stages it can hold */
    int n_stages;
    model_stage *stages; /* [cap] */
    model_reason reason; /* MODEL_FEASIBLE or the first rule broken */
    int bad_stage;       /* stage that broke it, or -1 */
    int bad_type;        /* type that broke it, or -1 */
    char why[512];       /* human-readable reason, "" when feasible */
    double throughput;   /* theta = min_s theta_s(k_s); 0 when infeasible */
    double time;         /* T = S / theta, s */
    double cost;         /* T / 3600 * sum_s k_s p_{t_s}, dollars */
    double unit_price;   /* sum_s k_s p_{t_s}, dollars per hour */
    int placed;              /* 1 when refined by place_eval (§3) */
    double cross_node_bytes; /* per step, when placed */
    double cross_zone_bytes; /* per step, when placed */
} model_plan;

/* model_plan_create returns a plan able to hold max_layers stages, or NULL
 * on allocation failure; model_plan_free releases it and accepts NULL. */
model_plan *model_plan_create(int max_layers);
void model_plan_free(model_plan *plan);

/* model_cluster_copy makes dst a deep copy of src (its own types, nodes,
 * zones and zone tables). Returns 0, or -1 when out of memory (dst then
 * holds nothing to free). model_cluster_clear frees what a copy (or the
 * config loader) allocated in cl and zeroes it; it accepts an empty one. */
int model_cluster_copy(model_cluster *dst, const model_cluster *src);
void model_cluster_clear(model_cluster *cl);

/* model_units returns k, the smallest k >= 1 with theta(k) >= R for a stage
 * whose unit takes `step` seconds per batch of B samples, or 0 when the
 * stage can never reach R (alpha * q >= 1). */
int model_units(double step, double B, double R, double alpha);

/* model_stage_throughput returns theta(k) = (B / step) k / (1 + alpha (k-1)). */
double model_stage_throughput(double step, double B, int k, double alpha);

/* model_curve_eval returns Optimus's f(p, w) = w / (th0 + th1 w/p + th2 w +
 * th3 p) in samples/s (INFINITY when the denominator is 0). */
double model_curve_eval(const model_curve *curve, double p, double w);

/* model_curve_alpha returns the serial fraction at which the Amdahl law
 * k / (1 + alpha (k-1)) equals the curve's speed-up f(p, k) / f(p, 1) for
 * every k: (th1/p + th2) / (th0 + th1/p + th2 + th3 p); 0 when all th are 0. */
double model_curve_alpha(const model_curve *curve, int p);

/* model_stage_alpha returns the serial fraction a stage with n_ps ps tasks
 * scales with: job->alpha, or model_curve_alpha of the job's fitted curve. */
double model_stage_alpha(const model_job *job, int n_ps);

/* model_stage_eval fills *st for a stage covering layers first..last on
 * type t: C, I, X, P, t_s, memory, W_s, g_s, k_s and theta_s(k_s) (units 0
 * when the stage can never reach R). X_s counts the activation of the layer
 * before `first` unless first == 0 and of `last` unless it is the job's
 * last layer, so a stage's figures depend only on its own span. Rules that
 * span stages (capacity) are model_eval's. */
void model_stage_eval(const model_job *job, const model_cluster *cl, int t,
                      int first, int last, model_stage *st);

/* The per-sample sums a stage's formulas read: flops, io, params and mem
 * summed over its layers, act the activation bytes X_s counts (the layer
 * before `first` and `last`, as in model_stage_eval). */
typedef struct {
    double flops, io, act, params, mem;
} model_span;

/* model_stage_fill is model_stage_eval with the sums given instead of read
 * from the layers, so that a caller which keeps running sums (the step-wise
 * environment, env/gym.c) scores a growing stage in O(1). Summed in the
 * layers' order, the sums give bit-identical figures to model_stage_eval,
 * which is this function after its own summing loop. */
void model_stage_fill(const model_job *job, const model_cluster *cl, int t,
                      int first, int last, const model_span *sum,
                      model_stage *st);

/* model_eval scores the assignment assign[n_layers] (type index per layer)
 * and fills plan. Returns 0 when feasible, else the model_reason, with
 * plan->why saying which rule broke. plan->cap must be >= job->n_layers.
 * Stage figures (C, I, X, P, t, k, theta) are filled even when infeasible,
 * up to the first stage that broke a rule. Type indices out of range are a
 * programming error (asserted). */
int model_eval(const model_job *job, const model_cluster *cl,
               const int *assign, model_plan *plan);

/* model_plan_set_counts gives the feasible plan (model_eval's) exactly
 * `workers` worker tasks and `ps` ps tasks (<= 0: keep the plan's count of
 * that role), as a job whose replica counts are fixed beforehand runs it.
 * The plan's counts are the least that reach R (k_s) and hold the
 * parameters (g_s), so fewer is refused; each extra worker goes to the
 * stage with the fewest workers, each extra ps task to the stage with the
 * fewest ps tasks (ties: the first stage). Then the plan is scored again
 * with its new counts: theta_s(k_s) at the serial fraction of its g_s ps
 * tasks (a fitted curve's changes with g_s), its throughput, time and
 * cost. A stage's memory does not depend on the counts (every worker holds
 * the stage's layers; more ps tasks only shrink each shard). Returns 0, or
 * MODEL_ERR_CAPACITY when fewer tasks than the plan's or more units of a
 * type than are free are asked, MODEL_ERR_THROUGHPUT when a stage falls
 * below R with its new ps count; plan->reason, bad_stage, bad_type and why
 * say which. */
int model_plan_set_counts(const model_job *job, const model_cluster *cl, model_plan *plan,
                          int workers, int ps);

/* model_eval_counts is model_eval of assign[] followed, when the plan is
 * feasible and a count is fixed (workers or ps > 0), by
 * model_plan_set_counts: a plan as a job with those replica counts runs
 * it. Same returns as model_plan_set_counts (model_eval's when it fails). */
int model_eval_counts(const model_job *job, const model_cluster *cl, const int *assign,
                      int workers, int ps, model_plan *plan);

/* model_job_check refuses a job the cost model cannot give finite figures
 * for. Every figure is bounded when loaded (1e-12 to 1e18, or 0), so the
 * one way to an infinite or NaN answer is a stage whose step time can be 0:
 * theta = B / t_s is then infinite (and the JSON loses it). A stage's
 * max(C_s, I_s) is 0 when all its layers have flops 0 and io 0, and its
 * X_s' and P_s' are 0 once its tasks share a node with its ps tasks and
 * neighbours (place.h), so every layer must read input or compute:
 * flops > 0 or io > 0. Returns 0, or -1 with "job NAME: ..." in err and
 * *bad_layer the layer at fault (-1 when every layer is all zero). */
int model_job_check(const model_job *job, int *bad_layer, char *err, size_t errlen);

/* model_cluster_type finds a type by name; returns its index or -1. */
int model_cluster_type(const model_cluster *cl, const char *name);

/* model_assign_parse turns "T1,T2,..." (one type name per layer, or a single
 * name for all layers) into assign[n_layers]. Returns 0, or -1 with a
 * message in err[errlen] naming the bad entry. */
int model_assign_parse(const model_job *job, const model_cluster *cl,
                       const char *text, int *assign, char *err, size_t errlen);

#endif
