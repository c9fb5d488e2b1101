/* train.c -- REINFORCE training (see train.h): the trainer's instances,
 * the step (draw the batch, play it, advantages, learn, record), the
 * evaluation and the checkpoints. The metrics rows and their CSV are
 * agent/metrics.h's; the collectives over MPI ranks agent/ranks.h's.
 */
#include "agent/train.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/adv.h"
#include "agent/ckptio.h"
#include "agent/decode.h"
#include "agent/gen.h"
#include "agent/net.h"
#include "agent/pool.h"
#include "agent/ranks.h"
#include "agent/rollout.h"
#include "base/clock.h"
#include "base/rng.h"
#include "env/config.h"
#include "env/gym.h"
#include "env/place.h"
#include "nets/params.h"
#include "solvers/placers.h"
#include "solvers/runload.h"
#include "solvers/solve.h"

#define VALID_INDEX_BASE (1ULL << 40) /* generator indices of validation instances */

/* An instance with its reference and exact costs. */
typedef struct {
    agent_gen_inst gi; /* generated (zeroed when loaded) */
    cfg_run *run;      /* loaded from a config (NULL when generated) */
    agent_instance ai; /* job, cluster, ref_cost */
    double exact;      /* the optimal plan's cost */
    int *exact_assign; /* [n_layers] the optimal plan */
    int *ref_assign;   /* [n_layers] the reference plan (ai.ref_cost), NULL when it is the exact one */
    int ref_method;    /* the solve_method that made the reference plan */
    int *vn_assign;    /* validation of the node head: [n_layers] the greedy plan whose
                          `best` placement vn_best scores (NULL: none yet) */
    double vn_best;    /* cost' of `best`'s placement of vn_assign (INFINITY: misses R) */
    char name[256];
} tr_inst;

/* One episode's outcome, as shared across ranks: doubles only, so that an
 * array of them travels as plain doubles (agent_ranks_gather_d). */
typedef struct {
    double r_type, r_node; /* returns of the TYPE and NODE phases */
    double has_node;       /* 1: the episode made NODE decisions, else 0 */
    double feasible;       /* 1: the plan is feasible, else 0 */
    double plan_gap;       /* plan cost / exact - 1 (NAN when infeasible) */
    double cost;           /* the episode's cost (placement included; inf when none) */
    double plan_cost;      /* the plan's cost (INFINITY when infeasible) */
} tr_outcome;
#define TR_OUTCOME_DOUBLES ((int)(sizeof(tr_outcome) / sizeof(double)))
_Static_assert(sizeof(tr_outcome) == 7 * sizeof(double), "tr_outcome is doubles only");

/* The exact solver's budget for a loaded instance (a shipped eval job, search
 * mode's problem); drawn instances and DAgger completions have the config's
 * draw_budget (wide-family jobs of 40+ layers can take seconds). */
#define TR_EXACT_BUDGET_MS 5000

/* demos_per_instance is the room each instance has for demonstration
 * episodes after the sampled ones: imitation, dagger_cuts DAgger episodes
 * and node DAgger. */
static int demos_per_instance(const agent_trainconf *tc) { return 2 + tc->dagger_cuts; }

/* One DAgger episode of a step (tc->dagger > 0): the j-th of local instance
 * i is t->dag[i * dagger_cuts + j]. */
typedef struct {
    int cut;     /* c: layers < c keep the policy's types, the rest the exact
                    completion; -1: no DAgger episode this step */
    int b;       /* its episode index in the step's rollout (-1: none) */
    int cap;     /* layers greedy and plan hold */
    int *greedy; /* [cap] the policy's greedy plan */
    int *plan;   /* [cap] greedy[0..c), then the cheapest completion */
    double *ccost; /* [ccap] dagger_soft: the cheapest completion's cost with type k
                      at the cut (INFINITY: none is feasible); soft 0 when one
                      of them was not settled within draw_budget */
    int ccap;
    int soft;    /* 1: ccost holds every type's, the cut's lesson is soft */
    size_t soft_at; /* where the cut's target row starts in the trainer's soft[] */
} tr_dagger;

/* The files of the out folder (rank 0 writes them). */
typedef struct {
    char metrics[1200]; /* metrics.csv: one row per step */
    char last[1200];    /* last.h5: every ckpt_every steps and at the end */
    char best[1200];    /* best.h5: best validation gap (general), best plan (search) */
    char average[1200]; /* average.h5: the running mean of the weights (average_every > 0) */
} tr_files;

struct agent_trainer {
    const agent_trainconf *tc;
    int rank, ranks;
    agent_gen *gen;
    agent_gen *vgen;       /* valid_generator's (NULL: validation draws from gen) */
    tr_inst problem;       /* search */
    tr_inst *eval;         /* [n_eval] held-out configs */
    int n_eval;
    tr_inst *valid;        /* [n_valid] generated validation instances */
    int n_valid;
    tr_inst *batch;        /* [G] instances of the current step (general) */
    agent_instance *ai;    /* [local instances] */
    int *inst_of;          /* [local episodes + demonstrations] */
    const int **forced;    /* [local episodes + demonstrations] */
    uint8_t *node_demo;    /* [local episodes + demonstrations] 1: a NODE demonstration */
    float *node_cut;       /* [local episodes + demonstrations] node DAgger's cut (a share of
                              the tasks), -1 elsewhere (agent_rollout_opts.node_cut) */
    tr_dagger *dag;        /* [instances] DAgger episodes by local instance (dagger > 0) */
    agent_instance *dag_ai; /* [instances] scratch: the instances of the greedy pass */
    int *dag_of;           /* [instances] scratch: local instance of each greedy episode */
    float *soft;           /* dagger_soft: [T,B,K] the soft targets of the step's decisions
                              (agent_type_traj.target), soft_cap floats */
    size_t soft_cap;
    double dag_xent;       /* the step's mean cross-entropy of the DAgger decisions (NAN: none) */
    double dag_played;     /* the step's share of instances whose DAgger episode was played */
    nn_params *p;
    agent_net_ws *ws;
    agent_rollout *ro;
    agent_pool *pool;
    /* state (checkpointed) */
    long step;
    double episodes;
    double time_s;
    double base_type, base_node; /* moving baselines */
    int base_init;               /* bit 0: type, bit 1: node */
    double best_cost;            /* search: the best plan (polished when polish is on) */
    double best_sampled;         /* search: the cheapest sample before polish (this run) */
    long drawn_key;              /* general: the step whose batch t->batch holds (-1: none) */
    int best_polished;           /* search: 1 when polish improved best_assign over its sample
                                    (0 after a resume: not in the checkpoint) */
    int *best_assign;            /* search [L] */
    int have_best;
    double best_valid;           /* general: best validation gap */
    double best_valid_node;      /* node-head phase: best 1 - valid_node_at_best */
    int start_validated;         /* node-head phase: the starting policy was validated */
    float *avg;                  /* average_every > 0: [p->total] mean of avg_n snapshots */
    long avg_n;
    double vn_start;             /* ... its valid_node_at_best (NAN: not yet) */
    long vn_best_step;           /* ... best.h5's step, -1 while this run wrote none */
    agent_metrics_log hist;      /* every step's row */
    /* scratch */
    tr_outcome *out;       /* [B_global] the step's episodes, every rank's */
    double *adv_t, *adv_n; /* [B_global] advantages of the TYPE and NODE heads */
    uint8_t *keep;         /* [B_global] 1: the episode gets a gradient (risk) */
    uint8_t *has_node;     /* [B_global] 1: the episode made NODE decisions */
    uint8_t *ok_t, *ok_n;  /* [B_global] 1: the plan is feasible; the placement kept the target */
    double zero_adv;       /* the step's share of zero TYPE advantages (agent_zero_adv_share) */
    double *scr;           /* [2 * B_global] returns of the two heads */
    FILE *csv;
    tr_files files;
    agent_train_times tm;
};

int agent_train_agree(const agent_trainer *t, int flag) { return agent_ranks_max_i(t->ranks, flag); }

/* ---------------------------------------------------------------------------
 * Instances
 * ------------------------------------------------------------------------ */

static void inst_clear(tr_inst *in) {
    agent_gen_inst_clear(&in->gi);
    free(in->exact_assign);
    free(in->ref_assign);
    free(in->vn_assign);
    cfg_free(in->run);
    memset(in, 0, sizeof *in);
}

/* solve_costs fills in->exact and in->ai.ref_cost, the exact solver given
 * budget_ms of wall clock. Returns 0, or 1 when no feasible plan exists, none
 * was found or the exact solver refused the instance (no reference to train
 * against), -1 when out of memory. */
static int solve_costs(tr_inst *in, int reference, long budget_ms) {
    const model_job *job = in->ai.job;
    solve_result *res = solve_result_create(job->n_layers);
    if (!res) return -1;
    solve_opts o;
    solve_opts_default(&o);
    o.budget_ms = budget_ms;
    int st = solve_run(job, in->ai.cl, &o, res);
    if (st != 0) {
        /* SOLVE_ERROR here is the exact solver refusing the instance (too
         * many candidates: wide-family jobs of 40+ layers on 8 types) as
         * well as memory: either way the draw has no reference, so it is
         * drawn again like an infeasible one (draw_inst gives up after 100) */
        solve_result_free(res);
        return 1;
    }
    in->exact = res->plan->cost;
    free(in->exact_assign);
    in->exact_assign = malloc((size_t)job->n_layers * sizeof *in->exact_assign);
    if (!in->exact_assign) {
        solve_result_free(res);
        return -1;
    }
    memcpy(in->exact_assign, res->assign, (size_t)job->n_layers * sizeof *in->exact_assign);
    double ref = in->exact;
    in->ref_method = SOLVE_EXACT;
    free(in->ref_assign);
    in->ref_assign = NULL;
    int methods[3] = {reference, SOLVE_GREEDY, SOLVE_EXACT};
    for (int k = 0; k < 3 && reference != SOLVE_EXACT; k++) {
        o.method = (solve_method)methods[k];
        if (o.method == SOLVE_EXACT) break;
        if (solve_run(job, in->ai.cl, &o, res) == 0) {
            ref = res->plan->cost;
            in->ref_method = o.method;
            in->ref_assign = malloc((size_t)job->n_layers * sizeof *in->ref_assign);
            if (!in->ref_assign) {
                solve_result_free(res);
                return -1;
            }
            memcpy(in->ref_assign, res->assign, (size_t)job->n_layers * sizeof *in->ref_assign);
            break;
        }
    }
    in->ai.ref_cost = ref > 0 ? ref : 1.0;
    solve_result_free(res);
    return 0;
}

/* load_inst loads a config file (one job, objective cost) as an instance. */
static int load_inst(tr_inst *in, const char *path, int reference, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    in->run = run_load(path, err, errlen);
    if (!in->run) return -1;
    if (in->run->n_jobs != 1 || in->run->objective != CFG_OBJECTIVE_COST) {
        snprintf(err, errlen, "%s: the agent solves one job with objective cost (it has %d jobs)", path,
                 in->run->n_jobs);
        return -1;
    }
    in->ai.job = &in->run->jobs[0];
    in->ai.cl = &in->run->cluster;
    snprintf(in->name, sizeof in->name, "%s", path);
    int st = solve_costs(in, reference, TR_EXACT_BUDGET_MS);
    if (st) {
        snprintf(err, errlen, "%s: %s", path, st > 0 ? "no feasible plan exists" : "out of memory");
        return -1;
    }
    return 0;
}

/* draw_budget_ms is the config's draw_budget in ms, at least 1. */
static long draw_budget_ms(const agent_trainconf *tc) {
    long ms = lround(1e3 * tc->draw_budget);
    return ms > 0 ? ms : 1;
}

/* draw_inst draws generated instance `index` until it has a feasible plan
 * that the exact solver finds within budget_ms. */
static int draw_inst(const agent_gen *g, uint64_t seed, uint64_t index, int reference, long budget_ms,
                     tr_inst *in) {
    inst_clear(in);
    for (int attempt = 0; attempt < 100; attempt++) {
        if (agent_gen_draw(g, seed, index, attempt, &in->gi)) return -1;
        in->ai.job = &in->gi.job;
        in->ai.cl = &in->gi.cl;
        int st = solve_costs(in, reference, budget_ms);
        if (st < 0) return -1;
        if (st == 0) {
            snprintf(in->name, sizeof in->name, "%s", in->gi.job.name);
            return 0;
        }
    }
    return -1;
}

typedef struct {
    agent_trainer *t;
    const agent_gen *gen;
    tr_inst *arr;
    uint64_t base;
    int failed;
} draw_ctx;

static void draw_fn(void *ctx, int i, int w) {
    (void)w;
    draw_ctx *c = ctx;
    const agent_trainconf *tc = c->t->tc;
    if (draw_inst(c->gen, (uint64_t)tc->seed, c->base + (uint64_t)i, tc->reference, draw_budget_ms(tc),
                  &c->arr[i]))
        c->failed = 1;
}

/* ---------------------------------------------------------------------------
 * Create / free
 * ------------------------------------------------------------------------ */

void agent_train_free(agent_trainer *t) {
    if (!t) return;
    agent_gen_free(t->gen);
    agent_gen_free(t->vgen);
    inst_clear(&t->problem);
    for (int i = 0; i < t->n_eval; i++) inst_clear(&t->eval[i]);
    for (int i = 0; i < t->n_valid; i++) inst_clear(&t->valid[i]);
    if (t->batch)
        for (int i = 0; i < t->tc->instances; i++) inst_clear(&t->batch[i]);
    free(t->eval);
    free(t->valid);
    free(t->batch);
    free(t->ai);
    free(t->inst_of);
    free(t->forced);
    free(t->node_demo);
    free(t->node_cut);
    if (t->dag)
        for (int i = 0; i < t->tc->instances * t->tc->dagger_cuts; i++) {
            free(t->dag[i].greedy);
            free(t->dag[i].plan);
            free(t->dag[i].ccost);
        }
    free(t->soft);
    free(t->dag);
    free(t->dag_ai);
    free(t->dag_of);
    nn_params_free(t->p);
    agent_net_ws_free(t->ws);
    agent_rollout_free(t->ro);
    agent_pool_free(t->pool);
    free(t->best_assign);
    free(t->avg);
    agent_metrics_log_free(&t->hist);
    free(t->out);
    free(t->adv_t);
    free(t->adv_n);
    free(t->keep);
    free(t->has_node);
    free(t->ok_t);
    free(t->ok_n);
    free(t->scr);
    if (t->csv) fclose(t->csv);
    free(t);
}

static int mkdirs(const char *path) {
    char buf[1200];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    return 0;
}

const char *agent_train_file(const agent_trainer *t, const char *name) {
    if (!strcmp(name, "metrics.csv")) return t->files.metrics;
    if (!strcmp(name, "last.h5")) return t->files.last;
    return t->files.best;
}

/* read_policy loads the policy in path with its own dims (*d) and state
 * (*st, cleared by the caller). Returns its weights (free with
 * nn_params_free), or NULL with a message naming the file. */
static nn_params *read_policy(const char *path, agent_net_dims *d, agent_ckpt_state *st, char *err,
                              size_t errlen) {
    if (agent_ckpt_peek(path, d, st, err, errlen)) return NULL;
    agent_ckpt_state_clear(st);
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table(d, table);
    nn_params *p = nn_params_create(table, AN_N_TENSORS, err, errlen);
    if (p && agent_ckpt_read(path, p, d, st, err, errlen)) {
        nn_params_free(p);
        return NULL;
    }
    return p;
}

/* init_from starts t's network from the policy in tc->init_from (a run
 * that is not resumed): its weights grown into t's wider network
 * (agent_net_grow: the same probabilities at step 0) and its moving
 * baselines; the step, the optimizer's moments and the history start
 * afresh. Returns 0, or -1 with a message naming the file. */
static int init_from(agent_trainer *t, const agent_trainconf *tc, char *err, size_t errlen) {
    agent_net_dims sd;
    agent_ckpt_state st;
    char e[512];
    nn_params *src = read_policy(tc->init_from, &sd, &st, err, errlen);
    if (!src) return -1;
    int rc = agent_net_grow(t->p, &tc->net, src, &sd, e, sizeof e);
    if (rc) snprintf(err, errlen, "init_from %s: %s", tc->init_from, e);
    t->base_type = st.base_type;
    t->base_node = st.base_node;
    t->base_init = st.base_init;
    agent_ckpt_state_clear(&st);
    nn_params_free(src);
    return rc;
}

/* node_head_from copies the node head (the tensors from AN_NCTX_W on: it
 * reads the global vector and the node rows, nothing of the encoder or the
 * decoder) and the node baseline of the policy in tc->node_head_from into
 * t, whose scorer width it must share. Returns 0, or -1 with a message
 * naming the file. */
static int node_head_from(agent_trainer *t, const agent_trainconf *tc, char *err, size_t errlen) {
    agent_net_dims sd;
    agent_ckpt_state st;
    nn_params *src = read_policy(tc->node_head_from, &sd, &st, err, errlen);
    if (!src) return -1;
    int rc = 0;
    if (sd.scorer != tc->net.scorer) {
        snprintf(err, errlen, "node_head_from %s: its scorer is %d wide, the network's %d",
                 tc->node_head_from, sd.scorer, tc->net.scorer);
        rc = -1;
    } else {
        for (int i = AN_NCTX_W; i < AN_N_TENSORS; i++)
            memcpy(nn_param(t->p, i), nn_param(src, i), src->size[i] * sizeof(float));
        t->base_node = st.base_node;
    }
    agent_ckpt_state_clear(&st);
    nn_params_free(src);
    return rc;
}

/* resume_average continues the running mean of the weights from the out
 * folder's average.h5 when it was written at the step the run resumes
 * from (with last.h5, as record and finish write them); otherwise (no
 * file, another step, another network) the mean starts again from this
 * run's snapshots. Returns 0, or -1 with a message when the file exists at
 * that step but cannot be read. */
static int resume_average(agent_trainer *t, char *err, size_t errlen) {
    agent_net_dims d;
    agent_ckpt_state st;
    char e2[256];
    if (access(t->files.average, F_OK) != 0) return 0;
    if (agent_ckpt_peek(t->files.average, &d, &st, e2, sizeof e2)) return 0;
    int same = st.step == t->step && st.average_n > 0 && !memcmp(&d, &t->tc->net, sizeof d);
    agent_ckpt_state_clear(&st);
    if (!same) return 0;
    nn_params *a = read_policy(t->files.average, &d, &st, err, errlen);
    if (!a) return -1;
    /* the same dims, so the same table: a->total == t->p->total */
    memcpy(t->avg, a->params, a->total * sizeof *t->avg);
    t->avg_n = (long)st.average_n;
    agent_ckpt_state_clear(&st);
    nn_params_free(a);
    return 0;
}

/* create is agent_train_create, and agent_train_create_on when job is
 * not NULL (search mode on that borrowed job and cluster). */
static agent_trainer *create(const agent_trainconf *tc, const char *resume, const model_job *job,
                             const model_cluster *cl, char *err, size_t errlen) {
    agent_trainer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->tc = tc;
    agent_ranks_world(&t->rank, &t->ranks);
    t->best_cost = INFINITY;
    t->best_sampled = INFINITY;
    t->drawn_key = -1;
    t->best_valid = INFINITY;
    t->best_valid_node = INFINITY;
    t->vn_start = NAN;
    t->vn_best_step = -1;
    int Bg = tc->instances * tc->samples;
    if (Bg % t->ranks) {
        snprintf(err, errlen, "the global batch (%d instances x %d samples = %d episodes) must split evenly over %d ranks",
                 tc->instances, tc->samples, Bg, t->ranks);
        goto fail;
    }
    if (tc->mode == AGENT_MODE_SEARCH && job) {
        t->problem.ai.job = job;
        t->problem.ai.cl = cl;
        snprintf(t->problem.name, sizeof t->problem.name, "%s", job->name);
        int st = solve_costs(&t->problem, tc->reference, TR_EXACT_BUDGET_MS);
        if (st) {
            snprintf(err, errlen, "job %s: %s", job->name, st > 0 ? "no feasible plan exists" : "out of memory");
            goto fail;
        }
    } else if (tc->mode == AGENT_MODE_SEARCH && load_inst(&t->problem, tc->problem, tc->reference, err, errlen)) {
        goto fail;
    }
    if (tc->mode == AGENT_MODE_SEARCH) {
        t->best_assign = calloc((size_t)t->problem.ai.job->n_layers, sizeof *t->best_assign);
        if (!t->best_assign) goto oom;
    } else {
        t->gen = agent_gen_load(tc->generator, err, errlen);
        if (!t->gen) goto fail;
        t->batch = calloc((size_t)tc->instances, sizeof *t->batch);
        if (!t->batch) goto oom;
    }
    t->pool = agent_pool_create(tc->threads);
    if (!t->pool) {
        snprintf(err, errlen, "cannot start %d threads", tc->threads);
        goto fail;
    }
    if (tc->mode == AGENT_MODE_GENERAL && t->rank == 0) {
        t->eval = calloc((size_t)tc->n_eval + 1, sizeof *t->eval);
        if (!t->eval) goto oom;
        for (int i = 0; i < tc->n_eval; i++) {
            if (load_inst(&t->eval[i], tc->eval[i], tc->reference, err, errlen)) goto fail;
            t->n_eval++;
        }
        t->valid = calloc((size_t)tc->valid + 1, sizeof *t->valid);
        if (!t->valid) goto oom;
        const char *vg = tc->valid_generator[0] ? tc->valid_generator : tc->generator;
        if (tc->valid_generator[0] && tc->valid > 0) {
            t->vgen = agent_gen_load(vg, err, errlen);
            if (!t->vgen) goto fail;
        }
        draw_ctx dc = {t, t->vgen ? t->vgen : t->gen, t->valid, VALID_INDEX_BASE, 0};
        agent_pool_for(t->pool, tc->valid, draw_fn, &dc);
        t->n_valid = tc->valid;
        if (dc.failed) {
            snprintf(err, errlen, "%s: cannot draw a feasible validation instance", vg);
            goto fail;
        }
    }
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table(&tc->net, table);
    t->p = nn_params_create(table, AN_N_TENSORS, err, errlen);
    if (!t->p) goto fail;
    nn_params_init(t->p, (uint64_t)tc->seed);
    t->ws = agent_net_ws_create(&tc->net);
    t->ro = agent_rollout_create(&tc->net);
    t->ai = calloc((size_t)tc->instances, sizeof *t->ai);
    size_t demos = (size_t)demos_per_instance(tc) * (size_t)tc->instances;
    t->inst_of = calloc((size_t)Bg + demos, sizeof *t->inst_of);
    t->forced = calloc((size_t)Bg + demos, sizeof *t->forced);
    t->node_demo = calloc((size_t)Bg + demos, 1);
    t->node_cut = calloc((size_t)Bg + demos, sizeof *t->node_cut);
    if (tc->dagger > 0) {
        int nd = tc->instances * tc->dagger_cuts;
        t->dag = calloc((size_t)nd, sizeof *t->dag);
        t->dag_ai = calloc((size_t)tc->instances, sizeof *t->dag_ai);
        t->dag_of = calloc((size_t)tc->instances, sizeof *t->dag_of);
        if (!t->dag || !t->dag_ai || !t->dag_of) goto oom;
        for (int i = 0; i < nd; i++) t->dag[i].cut = t->dag[i].b = -1;
    }
    t->out = calloc((size_t)Bg, sizeof *t->out);
    t->adv_t = calloc((size_t)Bg, sizeof *t->adv_t);
    t->adv_n = calloc((size_t)Bg, sizeof *t->adv_n);
    t->keep = calloc((size_t)Bg, 1);
    t->has_node = calloc((size_t)Bg, 1);
    t->ok_t = calloc((size_t)Bg, 1);
    t->ok_n = calloc((size_t)Bg, 1);
    t->scr = calloc((size_t)Bg * 2, sizeof *t->scr);
    if (!t->ws || !t->ro || !t->ai || !t->inst_of || !t->forced || !t->node_demo || !t->node_cut || !t->out || !t->adv_t || !t->adv_n || !t->keep ||
        !t->has_node || !t->ok_t || !t->ok_n || !t->scr)
        goto oom;
    snprintf(t->files.metrics, sizeof t->files.metrics, "%s/metrics.csv", tc->out);
    snprintf(t->files.last, sizeof t->files.last, "%s/last.h5", tc->out);
    snprintf(t->files.best, sizeof t->files.best, "%s/best.h5", tc->out);
    snprintf(t->files.average, sizeof t->files.average, "%s/average.h5", tc->out);
    if (resume) {
        agent_ckpt_state st;
        if (agent_ckpt_read(resume, t->p, &tc->net, &st, err, errlen)) goto fail;
        t->step = st.step;
        t->episodes = st.episodes;
        t->time_s = st.time_s;
        t->base_type = st.base_type;
        t->base_node = st.base_node;
        t->base_init = st.base_init;
        t->best_valid = st.best_valid;
        t->best_valid_node = st.best_valid_node;
        t->best_cost = st.best_cost;
        if (tc->mode == AGENT_MODE_SEARCH && st.best_assign) {
            int L = t->problem.ai.job->n_layers;
            if (st.n_best_assign != L) {
                snprintf(err, errlen, "%s: the best plan has %d layers, the job %d", resume,
                         st.n_best_assign, L);
                agent_ckpt_state_clear(&st);
                goto fail;
            }
            for (int l = 0; l < L; l++)
                if (st.best_assign[l] >= t->problem.ai.cl->n_types) {
                    snprintf(err, errlen, "%s: hyperparameter best_assign puts layer %d on type %d, the cluster has %d",
                             resume, l, st.best_assign[l], t->problem.ai.cl->n_types);
                    agent_ckpt_state_clear(&st);
                    goto fail;
                }
            memcpy(t->best_assign, st.best_assign, (size_t)L * sizeof(int));
            t->have_best = 1;
        }
        int bad = st.metrics_csv && agent_metrics_log_parse(&t->hist, st.metrics_csv);
        agent_ckpt_state_clear(&st);
        if (bad) {
            snprintf(err, errlen, "%s: the metrics history cannot be read", resume);
            goto fail;
        }
        /* drop rows past the checkpoint (a run that went on after it) */
        while (t->hist.n && t->hist.rows[t->hist.n - 1].step > (double)t->step) t->hist.n--;
    }
    if (!resume && tc->init_from[0] && init_from(t, tc, err, errlen)) goto fail;
    if (!resume && tc->node_head_from[0] && node_head_from(t, tc, err, errlen)) goto fail;
    if (tc->average_every > 0 && t->rank == 0) {
        t->avg = calloc(t->p->total, sizeof *t->avg);
        if (!t->avg) goto oom;
        if (resume && resume_average(t, err, errlen)) goto fail;
    }
    if (t->rank == 0) {
        if (mkdirs(tc->out)) {
            snprintf(err, errlen, "%s: cannot create the folder: %s", tc->out, strerror(errno));
            goto fail;
        }
        t->csv = fopen(t->files.metrics, "w");
        if (!t->csv) {
            snprintf(err, errlen, "%s: cannot write: %s", t->files.metrics, strerror(errno));
            goto fail;
        }
        agent_metrics_csv_header(t->csv);
        for (size_t i = 0; i < t->hist.n; i++) agent_metrics_csv_row(t->csv, &t->hist.rows[i]);
        fflush(t->csv);
    }
    return t;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    agent_train_free(t);
    return NULL;
}

agent_trainer *agent_train_create(const agent_trainconf *tc, const char *resume, char *err,
                                  size_t errlen) {
    return create(tc, resume, NULL, NULL, err, errlen);
}

agent_trainer *agent_train_create_on(const agent_trainconf *tc, const model_job *job,
                                     const model_cluster *cl, char *err, size_t errlen) {
    if (tc->mode != AGENT_MODE_SEARCH || !job || !cl) {
        snprintf(err, errlen, "agent_train_create_on: search mode on a job and a cluster only");
        return NULL;
    }
    return create(tc, NULL, job, cl, err, errlen);
}

/* ---------------------------------------------------------------------------
 * The step: draw the batch, play it, advantages, learn, record
 * ------------------------------------------------------------------------ */

static double schedule_cos(double a, double b, long s, long n) {
    double x = n > 0 ? (double)(s < n ? s : n) / (double)n : 1.0;
    return b + 0.5 * (a - b) * (1 + cos(M_PI * x));
}

static double schedule_lin(double a, double b, long s, long n) {
    double x = n > 0 ? (double)(s < n ? s : n) / (double)n : 1.0;
    return a + (b - a) * x;
}

/* One step's geometry: the global batch, this rank's slice of it, the
 * step's schedules. Episode e (global) is sample e % S of instance e / S. */
typedef struct {
    long s;          /* the step being made (1-based) */
    int G, S, Bg;    /* instances, samples per instance, global episodes */
    int Bl, e0;      /* this rank's episodes and the global index of its first */
    int g0, g1, nl;  /* its instances g0..g1 (nl of them) */
    int nd;          /* demonstration episodes on this rank (after its Bl) */
    int ndag;        /* of them, the DAgger episodes (after the imitation ones) */
    int nnd;         /* of them, the node DAgger episodes (the last nnd) */
    double lr, beta; /* learning rate and entropy coefficient of the step */
} tr_step;

/* The loss figures of a step, summed over ranks. */
typedef struct {
    double pg;        /* sum of -adv logp over the decisions */
    double entropy;   /* sum of the decisions' entropies */
    double decisions; /* decisions counted */
    double grad_norm; /* before clipping */
} tr_loss;

/* step_plan returns the geometry and schedules of step t->step + 1. */
static tr_step step_plan(const agent_trainer *t) {
    const agent_trainconf *tc = t->tc;
    tr_step st;
    st.s = t->step + 1;
    st.G = tc->instances;
    st.S = tc->samples;
    st.Bg = st.G * st.S;
    st.Bl = st.Bg / t->ranks;
    st.e0 = t->rank * st.Bl;
    st.g0 = st.e0 / st.S;
    st.g1 = (st.e0 + st.Bl - 1) / st.S;
    st.nl = st.g1 - st.g0 + 1;
    st.nd = 0;
    st.ndag = 0;
    st.nnd = 0;
    st.lr = schedule_cos(tc->lr, tc->lr_final, st.s, tc->steps);
    st.beta = schedule_lin(tc->entropy, tc->entropy_final, st.s, tc->steps);
    return st;
}

/* step_inst returns the instance of this rank's local instance i. */
static const tr_inst *step_inst(const agent_trainer *t, const tr_step *st, int i) {
    return t->tc->mode == AGENT_MODE_SEARCH ? &t->problem : &t->batch[st->g0 + i];
}

/* dagger_cut returns the cut of global instance g at step s, uniform in
 * [0, L): from (seed, s, g) alone, so every rank and every run agrees. */
static int dagger_cut(int seed, long s, int g, int L) {
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)s * 0xC2B2AE3D27D4EB4FULL ^
                 ((uint64_t)g + 1) * 0x165667B19E3779F9ULL ^ 0x4441474745ULL; /* "DAGGE" */
    return (int)(splitmix64_next(&x) % (uint64_t)L);
}

typedef struct {
    agent_trainer *t;
    int failed;
} dag_ctx;

/* dag_solve_fn completes the greedy plan of the (k / dagger_cuts)-th greedy
 * episode's instance from its (k % dagger_cuts)-th cut: the cheapest plan
 * that keeps the policy's types before the cut (solve_run_fixed, within
 * draw_budget). No completion (none feasible, none found in time, too many
 * candidates): no episode. */
static void dag_solve_fn(void *ctx, int k, int w) {
    (void)w;
    dag_ctx *c = ctx;
    agent_trainer *t = c->t;
    int nc = t->tc->dagger_cuts;
    tr_dagger *dg = &t->dag[t->dag_of[k / nc] * nc + k % nc];
    if (dg->cut < 0) return;
    const agent_instance *ai = &t->dag_ai[k / nc];
    int L = ai->job->n_layers;
    solve_result *res = solve_result_create(L);
    if (!res) {
        c->failed = 1;
        return;
    }
    for (int l = 0; l < L; l++) dg->plan[l] = l < dg->cut ? dg->greedy[l] : -1;
    solve_opts o;
    solve_opts_default(&o);
    o.budget_ms = draw_budget_ms(t->tc);
    int rc = solve_run_fixed(ai->job, ai->cl, &o, dg->plan, res);
    if (rc == 0) memcpy(dg->plan, res->assign, (size_t)L * sizeof *dg->plan);
    else dg->cut = -1;
    dg->soft = 0;
    if (rc == 0 && t->tc->dagger_soft > 0) {
        /* every type at the cut: its cheapest completion's cost */
        int *fixed = malloc((size_t)L * sizeof *fixed);
        if (!fixed) {
            c->failed = 1;
            solve_result_free(res);
            return;
        }
        memcpy(fixed, dg->greedy, (size_t)dg->cut * sizeof *fixed);
        for (int l = dg->cut; l < L; l++) fixed[l] = -1;
        int n = ai->cl->n_types, settled = 1;
        dg->ccost[dg->plan[dg->cut]] = res->plan->cost;
        for (int ty = 0; ty < n && settled; ty++) {
            if (ty == dg->plan[dg->cut]) continue;
            fixed[dg->cut] = ty;
            int rk = solve_run_fixed(ai->job, ai->cl, &o, fixed, res);
            if (rk == 0) dg->ccost[ty] = res->plan->cost;
            else if (res->infeasible) dg->ccost[ty] = INFINITY;
            else settled = 0; /* stopped by the budget: the lesson stays one-hot */
        }
        dg->soft = settled;
        free(fixed);
    }
    solve_result_free(res);
}

/* dagger_plans (dagger > 0) plays the policy's greedy plan on each instance
 * whose first episode is on this rank (where its demonstrations go), picks
 * its dagger_cuts cuts (dagger_cut, then L / dagger_cuts apart) and
 * completes it exactly from each (dag_solve_fn) into t->dag[local instance
 * * dagger_cuts + j]: cut -1 when the greedy plan reached a dead end, the
 * cut is past the last layer or no completion was found. Draws nothing at
 * random: the sampled episodes are those of a run without it. Returns 0,
 * or -1 with a message. */
static int dagger_plans(agent_trainer *t, const tr_step *st, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    int n = 0, nc = tc->dagger_cuts;
    for (int g = st->g0; g <= st->g1; g++) {
        tr_dagger *dg = &t->dag[(g - st->g0) * nc];
        for (int j = 0; j < nc; j++) dg[j].cut = dg[j].b = -1;
        if (g * st->S < st->e0) continue;
        t->dag_ai[n] = t->ai[g - st->g0];
        t->dag_of[n] = g - st->g0;
        n++;
    }
    if (n == 0) return 0;
    int *of = malloc((size_t)n * sizeof *of);
    if (!of) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int k = 0; k < n; k++) of[k] = k;
    agent_rollout_opts o = {.placement = PLACER_PLACE_NONE,
                            .greedy = 1,
                            .reward = tc->reward,
                            .penalty = tc->penalty,
                            .seed = (uint64_t)tc->seed,
                            .stream = (uint64_t)st->s,
                            .ep_base = 0,
                            .ep_total = n,
                            .record = 0,
                            .forced = NULL};
    int rc = agent_rollout_run(t->ro, t->p, t->dag_ai, n, of, n, &o, t->pool, err, errlen);
    free(of);
    if (rc) return -1;
    for (int kj = 0; kj < n * nc; kj++) {
        int k = kj / nc, j = kj % nc, i = t->dag_of[k], L = t->dag_ai[k].job->n_layers;
        tr_dagger *dg = &t->dag[i * nc + j];
        if (dg->cap < L) {
            int *gr = realloc(dg->greedy, (size_t)L * sizeof *gr);
            if (gr) dg->greedy = gr;
            int *pl = gr ? realloc(dg->plan, (size_t)L * sizeof *pl) : NULL;
            if (pl) dg->plan = pl;
            if (!gr || !pl) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            dg->cap = L;
        }
        int n_types = t->dag_ai[k].cl->n_types;
        if (tc->dagger_soft > 0 && dg->ccap < n_types) {
            double *cc = realloc(dg->ccost, (size_t)n_types * sizeof *cc);
            if (!cc) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            dg->ccost = cc;
            dg->ccap = n_types;
        }
        if (agent_rollout_episode(t->ro, k)->dead_end) continue; /* the policy has no plan */
        memcpy(dg->greedy, agent_rollout_assign(t->ro, k), (size_t)L * sizeof *dg->greedy);
        /* the j-th cut: j L / nc layers past the first (wrapping); a job of
         * fewer layers than cuts is cut at every layer, once */
        if (j >= L) continue;
        long off = L >= nc ? (long)j * L / nc : j;
        dg->cut = (int)((dagger_cut(tc->seed, st->s, st->g0 + i, L) + off) % L);
    }
    dag_ctx dc = {t, 0};
    agent_pool_for(t->pool, n * nc, dag_solve_fn, &dc);
    if (dc.failed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* draw_batch fills t->ai with this rank's instances (general: drawn from
 * the generator by (seed, step); search: the one problem), t->inst_of and
 * t->forced for its episodes, then one demonstration episode along the exact
 * plan of each instance whose first episode is on this rank (imitation > 0
 * or node_imitation > 0; st->nd counts them; with imitation 0 its plan is
 * the policy's greedy one); with node_imitation > 0 its NODE decisions
 * follow `best`'s placement of that plan (t->node_demo). With dagger > 0,
 * after them, one DAgger episode per such instance along its t->dag plan
 * (dagger_plans; st->ndag counts them). With node_dagger > 0, last, one
 * node DAgger episode per such instance: a NODE demonstration of the
 * greedy plan whose teacher completes the node head's own placement from
 * a cut (agent_rollout_opts.node_cut; st->nnd counts them).
 * Returns 0, or -1 with a message. */
static int draw_batch(agent_trainer *t, tr_step *st, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    if (tc->mode == AGENT_MODE_SEARCH) {
        t->ai[0] = t->problem.ai;
    } else {
        /* reuse R: steps s of one block of R share the batch of the
         * block's first step (R = 1: every step its own, as always) */
        long key = tc->reuse > 1 ? (st->s - 1) / tc->reuse * tc->reuse + 1 : st->s;
        if (key != t->drawn_key) {
            draw_ctx dc = {t, t->gen, t->batch + st->g0, (uint64_t)key * (uint64_t)st->G + (uint64_t)st->g0, 0};
            agent_pool_for(t->pool, st->nl, draw_fn, &dc);
            if (dc.failed) {
                t->drawn_key = -1;
                snprintf(err, errlen, "%s: cannot draw a feasible instance at step %ld", tc->generator, st->s);
                return -1;
            }
            t->drawn_key = key;
        }
        for (int i = 0; i < st->nl; i++) t->ai[i] = t->batch[st->g0 + i].ai;
    }
    for (int b = 0; b < st->Bl; b++) {
        t->inst_of[b] = (st->e0 + b) / st->S - st->g0;
        t->forced[b] = NULL;
        t->node_demo[b] = 0;
    }
    for (int b = 0; b < st->Bl + demos_per_instance(tc) * st->nl; b++) t->node_cut[b] = -1.0f;
    st->nd = 0;
    if (tc->imitation > 0 || tc->node_imitation > 0)
        for (int g = st->g0; g <= st->g1; g++) {
            if (g * st->S < st->e0) continue;
            t->inst_of[st->Bl + st->nd] = g - st->g0;
            /* imitation 0: the plan is the policy's greedy one (the plan
             * the node head places at evaluation; the exact plan may not be
             * placeable: the NODE phase's masks refuse it) */
            t->forced[st->Bl + st->nd] = tc->imitation > 0 ? step_inst(t, st, g - st->g0)->exact_assign : NULL;
            t->node_demo[st->Bl + st->nd] = tc->node_imitation > 0;
            st->nd++;
        }
    if (tc->dagger > 0) {
        if (dagger_plans(t, st, err, errlen)) return -1;
        for (int d = 0; d < st->nl * tc->dagger_cuts; d++) {
            tr_dagger *dg = &t->dag[d];
            if (dg->cut < 0) continue;
            dg->b = st->Bl + st->nd;
            t->inst_of[dg->b] = d / tc->dagger_cuts;
            t->forced[dg->b] = dg->plan;
            t->node_demo[dg->b] = 0;
            st->nd++;
            st->ndag++;
        }
    }
    if (tc->node_dagger > 0)
        for (int g = st->g0; g <= st->g1; g++) {
            if (g * st->S < st->e0) continue;
            int b = st->Bl + st->nd;
            t->inst_of[b] = g - st->g0;
            t->forced[b] = NULL;
            t->node_demo[b] = 1;
            /* the cut's share of the tasks, from (seed, step, instance) alone */
            t->node_cut[b] = (float)dagger_cut(tc->seed ^ 0x4e4f4445, st->s, g, 1 << 20) / (float)(1 << 20);
            st->nd++;
            st->nnd++;
        }
    return 0;
}

/* play runs this rank's episodes (and demonstrations), recording their
 * trajectories in t->ro, and adds the rollout's times to t->tm. Returns 0,
 * or -1 with a message. */
static int play(agent_trainer *t, const tr_step *st, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    agent_rollout_opts ro = {.placement = tc->placement,
                             .greedy = 0,
                             .reward = tc->reward,
                             .penalty = tc->penalty,
                             .seed = (uint64_t)tc->seed,
                             .stream = (uint64_t)st->s,
                             .ep_base = st->e0,
                             /* the DAgger episodes past it are forced at
                              * every decision: no draw of theirs is used */
                             .ep_total = st->Bg + st->G,
                             .record = 1,
                             .forced = st->nd ? t->forced : NULL,
                             .node_demo = st->nd && (tc->node_imitation > 0 || tc->node_dagger > 0)
                                              ? t->node_demo
                                              : NULL,
                             .node_cut = st->nnd ? t->node_cut : NULL};
    agent_rollout_times before = *agent_rollout_timing(t->ro);
    if (agent_rollout_run(t->ro, t->p, t->ai, st->nl, t->inst_of, st->Bl + st->nd, &ro, t->pool, err,
                          errlen))
        return -1;
    const agent_rollout_times *after = agent_rollout_timing(t->ro);
    t->tm.env += after->env - before.env;
    t->tm.lookahead += after->lookahead - before.lookahead;
    t->tm.net += after->net - before.net;
    return 0;
}

/* gather_outcomes writes this rank's episodes' outcomes into its slice of
 * t->out and gathers every rank's, so that t->out[Bg] is the same
 * everywhere. */
static void gather_outcomes(agent_trainer *t, const tr_step *st) {
    for (int b = 0; b < st->Bl; b++) {
        const agent_episode *ep = agent_rollout_episode(t->ro, b);
        const tr_inst *in = step_inst(t, st, t->inst_of[b]);
        t->out[st->e0 + b] = (tr_outcome){
            .r_type = ep->r_type,
            .r_node = ep->r_node,
            .has_node = ep->node_steps > 0,
            .feasible = ep->feasible,
            .plan_gap = ep->feasible ? ep->plan_cost / in->exact - 1 : NAN,
            .cost = ep->cost,
            .plan_cost = ep->feasible ? ep->plan_cost : INFINITY,
        };
    }
    agent_ranks_gather_d(t->ranks, (double *)t->out, st->Bl * TR_OUTCOME_DOUBLES);
}

/* soft_target writes into q[K] the soft lesson of a DAgger episode's cut
 * (dagger_soft = tau): over the types the decision's mask allows, q_k
 * proportional to (c* / c_k)^(1/tau), c_k the cheapest completion's cost
 * with type k there (ccost), c* the least of them; 0 elsewhere. The row
 * sums to 1, or to 1 + focus when the policy's own type there (mine)
 * completes more than 0.1% above c* (dagger_focus). */
static void soft_target(float *q, const double *ccost, int n_types, const uint8_t *mask, int K, double tau,
                        int mine, double focus) {
    double best = INFINITY, sum = 0;
    for (int k = 0; k < n_types && k < K; k++)
        if (mask[k] && ccost[k] < best) best = ccost[k];
    for (int k = 0; k < K; k++) {
        double w = k < n_types && mask[k] && isfinite(ccost[k]) ? exp(-log(ccost[k] / best) / tau) : 0.0;
        q[k] = (float)w;
        sum += w;
    }
    double weight = ccost[mine] > best * 1.001 ? 1.0 + focus : 1.0;
    for (int k = 0; k < K; k++) q[k] = (float)(q[k] / sum * weight);
}

/* dagger_lessons gives each DAgger episode of the step advantage
 * dagger * S (an imitation demonstration's scale) on its decisions from the
 * cut on and drops those before it (the policy's own, no lesson in them),
 * and sets t->dag_xent and t->dag_played, summed over ranks, from the
 * probabilities the rollout played them with. With dagger_soft, t->soft
 * receives the step's soft targets: the cut's decision of each DAgger
 * episode whose every completion was settled (soft_target), none
 * elsewhere. Every rank calls it. Returns 0, or -1 when out of memory. */
static int dagger_lessons(agent_trainer *t, const tr_step *st, float *adv_type) {
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(t->ro, &T, &K, &action, &mask, &probs);
    int B = st->Bl + st->nd;
    if (t->tc->dagger_soft > 0) {
        size_t n = (size_t)T * B * K;
        if (t->soft_cap < n) {
            float *q = realloc(t->soft, n * sizeof *q);
            if (!q) return -1;
            t->soft = q;
            t->soft_cap = n;
        }
        for (size_t r = 0; r < (size_t)T * B; r++) t->soft[r * K] = -1.0f; /* no target */
    }
    double sums[3] = {0, 0, 0}; /* cross-entropy, decisions, episodes */
    int nc = t->tc->dagger_cuts;
    for (int d = 0; d < st->nl * nc; d++) {
        tr_dagger *dg = &t->dag[d];
        if (dg->b < 0) continue;
        int i = d / nc, L = step_inst(t, st, i)->ai.job->n_layers;
        for (int l = dg->cut; l < L; l++) {
            size_t row = (size_t)l * B + dg->b;
            int a = action[row];
            if (a < 0) continue;
            sums[0] += -log((double)probs[row * K + a]);
            sums[1] += 1;
        }
        sums[2] += 1;
        adv_type[dg->b] = (float)(t->tc->dagger * st->S);
        agent_rollout_drop_type_before(t->ro, dg->b, dg->cut);
        if (t->tc->dagger_soft > 0 && dg->soft) {
            size_t row = (size_t)dg->cut * B + dg->b;
            dg->soft_at = row * K;
            soft_target(t->soft + row * K, dg->ccost, step_inst(t, st, i)->ai.cl->n_types, mask + row * K, K,
                        t->tc->dagger_soft, dg->greedy[dg->cut], t->tc->dagger_focus);
        }
    }
    agent_ranks_sum_d(t->ranks, sums, 3);
    t->dag_xent = sums[1] > 0 ? sums[0] / sums[1] : NAN;
    t->dag_played = sums[2] / ((double)st->G * nc);
    return 0;
}

/* advantages turns the gathered returns into the advantages of both heads
 * (agent/adv.h; identical on every rank, the moving baselines updated):
 * first the rewards are settled per instance (agent_rewards_settle: log
 * puts an infeasible end below the batch's worst feasible one, rank
 * ranks them) and written back into t->out, so that the step's mean return
 * is the one trained on; then the advantages, and the share of zero
 * advantages goes to t->zero_adv. It
 * hands this rank's to its recorded trajectories: episodes left out by
 * `risk` are dropped, a demonstration's decisions weigh imitation * S,
 * a DAgger episode's from its cut on dagger * S (dagger_lessons).
 * Returns 0, or -1 with a message. */
static int advantages(agent_trainer *t, const tr_step *st, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    int Bg = st->Bg, Bl = st->Bl, e0 = st->e0;
    agent_adv_opts ao = {.baseline = tc->baseline,
                         .decay = tc->baseline_decay,
                         .norm = tc->adv_norm,
                         .risk = tc->risk};
    double *rt = t->scr, *rn = t->scr + Bg;
    memset(t->keep, 1, (size_t)Bg);
    for (int e = 0; e < Bg; e++) {
        rt[e] = t->out[e].r_type;
        rn[e] = t->out[e].r_node;
        t->has_node[e] = t->out[e].has_node > 0;
        t->ok_t[e] = t->out[e].feasible > 0;
        t->ok_n[e] = isfinite(t->out[e].cost); /* placed within the target (or not placed) */
    }
    if (agent_rewards_settle(tc->reward, tc->penalty, st->G, st->S, rt, t->ok_t, NULL) ||
        agent_rewards_settle(tc->reward, tc->penalty, st->G, st->S, rn, t->ok_n, t->has_node)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int e = 0; e < Bg; e++) {
        t->out[e].r_type = rt[e];
        if (t->has_node[e]) t->out[e].r_node = rn[e];
    }
    if (agent_advantages(&ao, st->G, st->S, rt, NULL, t->adv_t, t->keep, &t->base_type, &t->base_init, 1) ||
        agent_advantages(&ao, st->G, st->S, rn, t->has_node, t->adv_n, NULL, &t->base_node, &t->base_init, 2)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->zero_adv = agent_zero_adv_share(Bg, t->adv_t, NULL, t->keep);
    float *adv_type, *adv_node;
    const int *owner;
    agent_rollout_type_traj(t->ro, &adv_type);
    for (int b = 0; b < Bl; b++) {
        adv_type[b] = (float)t->adv_t[e0 + b];
        if (!t->keep[e0 + b]) agent_rollout_drop(t->ro, b);
    }
    /* a demonstration's decisions: -imitation * S * logp (the loss's scale
     * 1/(G S) makes it imitation x the mean cross-entropy over instances);
     * a demonstration played for its NODE decisions alone (imitation 0, the
     * greedy plan) keeps no TYPE decision (no gradient, no entropy bonus) */
    for (int d = 0; d < st->nd - st->ndag - st->nnd; d++) {
        adv_type[Bl + d] = (float)(tc->imitation * st->S);
        if (!(tc->imitation > 0)) agent_rollout_drop_type(t->ro, Bl + d);
    }
    for (int d = st->nd - st->nnd; d < st->nd; d++) { /* node DAgger: no TYPE lesson */
        adv_type[Bl + d] = 0.0f;
        agent_rollout_drop_type(t->ro, Bl + d);
    }
    if (tc->dagger > 0 && dagger_lessons(t, st, adv_type)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* NODE: an episode's advantage; on a demonstration, node_imitation * S
     * on the decisions that followed `best` (the same scale: node_imitation
     * x the mean over instances of the placement's cross-entropy), 0 on the
     * others (a teacher that missed R) */
    agent_node_traj *nt = agent_rollout_node_traj(t->ro, &adv_node, &owner);
    const uint8_t *nforced = agent_rollout_node_forced(t->ro);
    for (int i = 0; i < nt->N; i++)
        adv_node[i] = owner[i] < Bl   ? (float)t->adv_n[e0 + owner[i]]
                      : !nforced[i] ? 0.0f
                      : owner[i] >= Bl + st->nd - st->nnd ? (float)(tc->node_dagger * st->S)
                                                          : (float)(tc->node_imitation * st->S);
    if (st->nnd || tc->node_dagger > 0) {
        /* node DAgger: the share of instances whose episode got a lesson
         * (the teacher kept R from its cut) */
        int first = Bl + st->nd - st->nnd;
        uint8_t *seen = calloc((size_t)st->nnd + 1, 1);
        if (!seen) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        double sums[1] = {0};
        for (int i = 0; i < nt->N; i++)
            if (nforced[i] && owner[i] >= first && !seen[owner[i] - first]) {
                seen[owner[i] - first] = 1;
                sums[0] += 1;
            }
        free(seen);
        agent_ranks_sum_d(t->ranks, sums, 1);
        t->dag_played = sums[0] / st->G;
        t->dag_xent = NAN; /* not measured for the node head */
    }
    return 0;
}

/* adam_step_frozen takes the Adam step on the node head alone: the tensors
 * before AN_NCTX_W and their moments stay as they are (freeze_plan).
 * Returns 0, or -1 when out of memory. */
static int adam_step_frozen(nn_params *p, const nn_adam_cfg *ac, long s) {
    size_t n = p->off[AN_NCTX_W];
    float *keep = malloc(3 * n * sizeof *keep);
    if (!keep) return -1;
    memcpy(keep, p->params, n * sizeof *keep);
    memcpy(keep + n, p->m, n * sizeof *keep);
    memcpy(keep + 2 * n, p->v, n * sizeof *keep);
    nn_adam_step(p, ac, s);
    memcpy(p->params, keep, n * sizeof *keep);
    memcpy(p->m, keep + n, n * sizeof *keep);
    memcpy(p->v, keep + 2 * n, n * sizeof *keep);
    free(keep);
    return 0;
}

/* learn computes the gradient of the step's loss over the recorded
 * trajectories (1/Bg of the sum over every rank's decisions), sums it over
 * ranks, clips it and takes one Adam step; *loss receives the loss figures,
 * summed over ranks. Returns 0, or -1 with a message. */
static int learn(agent_trainer *t, const tr_step *st, tr_loss *loss, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    agent_type_traj *tt = agent_rollout_type_traj(t->ro, NULL);
    agent_node_traj *nt = agent_rollout_node_traj(t->ro, NULL, NULL);
    nn_params_zero_grad(t->p);
    agent_loss_stats ls = {.pg = 0, .entropy = 0, .decisions = 0};
    float scale = 1.0f / (float)st->Bg;
    /* on the rollout's workspace: its encoder states are those of these
     * parameters (nothing changed them since play), so the pass skips the
     * encoder's forward */
    tt->enc_cached = 1;
    tt->target = tc->dagger_soft > 0 ? t->soft : NULL; /* dagger_lessons' */
    if (agent_net_type_loss(agent_rollout_ws(t->ro), t->p, tt, (float)st->beta, scale, &ls, err, errlen))
        return -1;
    if (nt->N > 0 && agent_net_node_loss(t->ws, t->p, nt, (float)st->beta, scale, 4096, &ls, err, errlen))
        return -1;
    agent_ranks_sum_f(t->ranks, t->p->grads, t->p->total);
    double sums[3] = {ls.pg, ls.entropy, (double)ls.decisions}; /* one all-reduce for the three */
    agent_ranks_sum_d(t->ranks, sums, 3);
    loss->pg = sums[0];
    loss->entropy = sums[1];
    loss->decisions = sums[2];
    if (tc->freeze_plan) /* no gradient outside the node head */
        for (int i = 0; i < AN_NCTX_W; i++) memset(nn_grad(t->p, i), 0, t->p->size[i] * sizeof(float));
    loss->grad_norm = nn_clip_grad_norm(t->p, tc->grad_clip);
    nn_adam_cfg ac = {.lr = st->lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = tc->weight_decay};
    if (!tc->freeze_plan) {
        nn_adam_step(t->p, &ac, st->s);
    } else if (adam_step_frozen(t->p, &ac, st->s)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* summarize fills the step's figures of *m (every other one NAN) from the
 * gathered outcomes and the loss; *best_e receives the global index of the
 * cheapest feasible episode (-1 when none). */
static void summarize(const agent_trainer *t, const tr_step *st, const tr_loss *loss, agent_metrics *m,
                      int *best_e) {
    int Bg = st->Bg;
    double ret = 0, cost = 0, gap = 0, nret = 0;
    int ncost = 0, ngap = 0, ninf = 0, nnode = 0, best = -1;
    for (int e = 0; e < Bg; e++) {
        const tr_outcome *o = &t->out[e];
        ret += o->r_type + o->r_node;
        if (isfinite(o->cost)) {
            cost += o->cost;
            ncost++;
        } else
            ninf++;
        if (o->feasible > 0) {
            gap += o->plan_gap;
            ngap++;
            if (best < 0 || o->plan_cost < t->out[best].plan_cost) best = e;
        }
        if (o->has_node > 0) {
            nret += o->r_node;
            nnode++;
        }
    }
    agent_metrics_clear(m);
    m->step = (double)st->s;
    m->episodes = t->episodes;
    m->episodic_return = ret / Bg;
    m->episodic_cost = ncost ? cost / ncost : NAN;
    m->gap_mean = ngap ? gap / ngap : NAN;
    m->infeasible_frac = (double)ninf / Bg;
    m->policy_loss = loss->pg / Bg;
    m->entropy = loss->decisions > 0 ? loss->entropy / loss->decisions : NAN;
    m->zero_adv_share = t->zero_adv;
    m->grad_norm = loss->grad_norm;
    m->lr = st->lr;
    m->entropy_coef = st->beta;
    m->node_return = nnode ? nret / nnode : NAN;
    if (t->tc->dagger > 0 || t->tc->node_dagger > 0) {
        m->dagger_xent = t->dag_xent;
        m->dagger_played = t->dag_played;
    }
    *best_e = best;
}

/* keep_best (search) takes the step's cheapest plan, global episode best_e
 * (-1: none), from the rank that played it, polishes it (solve_polish) and keeps
 * it when it beats the best so far; fills m's best_cost and best_gap.
 * Returns 0, or -1 with a message. */
static int keep_best(agent_trainer *t, const tr_step *st, int best_e, agent_metrics *m, char *err,
                     size_t errlen) {
    if (t->tc->mode != AGENT_MODE_SEARCH) return 0;
    if (best_e >= 0) {
        double c = t->out[best_e].plan_cost;
        const model_job *job = t->problem.ai.job;
        int L = job->n_layers;
        int owner_rank = best_e / st->Bl;
        int *cand = malloc((size_t)L * sizeof *cand);
        if (!cand) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (owner_rank == t->rank)
            memcpy(cand, agent_rollout_assign(t->ro, best_e - st->e0), (size_t)L * sizeof *cand);
        agent_ranks_bcast_i(t->ranks, cand, L, owner_rank);
        double sampled = c;
        if (t->tc->polish && sampled < t->best_sampled) {
            /* only a sample better than every earlier one: a converged
             * policy replays its plan, which was polished already */
            model_plan *plan = model_plan_create(L);
            int *trial = malloc((size_t)L * sizeof *trial);
            if (plan && trial) c = solve_polish(job, t->problem.ai.cl, cand, c, plan, trial, NULL, NULL, NULL);
            model_plan_free(plan);
            free(trial);
        }
        if (sampled < t->best_sampled) t->best_sampled = sampled;
        if (c < t->best_cost) {
            t->best_cost = c;
            memcpy(t->best_assign, cand, (size_t)L * sizeof *cand);
            t->have_best = 1;
            t->best_polished = c < sampled;
        }
        free(cand);
    }
    if (t->have_best) {
        m->best_cost = t->best_cost;
        m->best_gap = t->best_cost / t->problem.exact - 1;
        m->best_polished = t->best_polished;
    }
    const int *as;
    double c;
    char from[64];
    agent_train_answer(t, &as, &c, from, sizeof from);
    m->best_from_ref = strncmp(from, "reference:", 10) == 0;
    return 0;
}

/* node_phase: 1 when the run trains the node head alone and validates it
 * (placement: policy, freeze_plan, valid > 0): best.h5 then follows the
 * node head's validation score rather than the plan's gap. */
static int node_phase(const agent_trainer *t) {
    return t->n_valid > 0 && t->tc->freeze_plan && t->tc->placement == PLACER_PLACE_POLICY;
}

/* save_with writes a checkpoint of the trainer's state with the weights
 * `params` (t->p's, or the running mean's) to path; average_n as in the
 * checkpoint state. save_average writes average.h5 when the mean holds a
 * snapshot (rank 0). Both return 0, or -1 with a message. */
static int save_with(agent_trainer *t, float *params, int64_t average_n, const char *path, char *err,
                     size_t errlen);
static int save_average(agent_trainer *t, char *err, size_t errlen);
static int valid_node(agent_trainer *t, double *at_best, double *gap, char *err, size_t errlen);

/* keep_best_valid writes best.h5 when the evaluation in m beats every
 * earlier one of the run (and of the runs it resumes): in a node-head phase
 * (node_phase) a higher valid_node_at_best, else a lower validation gap
 * (the held-out configs' without validation instances). Returns 0, or -1
 * with a message. */
static int keep_best_valid(agent_trainer *t, const agent_metrics *m, char *err, size_t errlen) {
    if (node_phase(t)) {
        double v = 1 - m->valid_node_at_best;
        if (isnan(v) || v >= t->best_valid_node) return 0;
        t->best_valid_node = v;
        t->vn_best_step = t->step;
        return agent_train_save(t, t->files.best, err, errlen);
    }
    double v = !isnan(m->valid_gap_greedy) ? m->valid_gap_greedy : m->eval_gap_greedy;
    if (isnan(v) || v >= t->best_valid) return 0;
    t->best_valid = v;
    return agent_train_save(t, t->files.best, err, errlen);
}

/* record ends the step: rank 0 evaluates when due (general; a better
 * validation gap writes best.h5), then every rank adds the step's time and
 * keeps m in the history; rank 0 also writes the CSV row and the
 * checkpoints that are due. Returns 0, or -1 with a message. */
static int record(agent_trainer *t, const tr_step *st, agent_metrics *m, double t_start, char *err,
                  size_t errlen) {
    const agent_trainconf *tc = t->tc;
    long s = st->s;
    if (t->rank != 0) {
        t->time_s += clock_now_s() - t_start;
        m->time_s = t->time_s;
        if (agent_metrics_log_push(&t->hist, m)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    if (tc->mode == AGENT_MODE_GENERAL && tc->eval_every > 0 && s % tc->eval_every == 0) {
        double e0t = clock_now_s();
        if (agent_train_eval(t, m, err, errlen)) return -1;
        t->tm.eval += clock_now_s() - e0t;
        if (keep_best_valid(t, m, err, errlen)) return -1;
    }
    if (t->avg && s > tc->average_after && s % tc->average_every == 0) {
        /* the running mean of the snapshots: avg += (p - avg) / n, exact for
         * tensors that do not move (a frozen plan head stays bit for bit) */
        t->avg_n++;
        const float *p = t->p->params;
        float inv = 1.0f / (float)t->avg_n;
        if (t->avg_n == 1)
            memcpy(t->avg, p, t->p->total * sizeof *p);
        else
            for (size_t i = 0; i < t->p->total; i++) t->avg[i] += (p[i] - t->avg[i]) * inv;
    }
    double io0 = clock_now_s();
    t->time_s += io0 - t_start;
    m->time_s = t->time_s;
    if (agent_metrics_log_push(&t->hist, m)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (s % tc->log_every == 0 || s == tc->steps) {
        agent_metrics_csv_row(t->csv, m);
        fflush(t->csv);
    }
    if (tc->ckpt_every > 0 && s % tc->ckpt_every == 0) {
        if (agent_train_save(t, t->files.last, err, errlen) || save_average(t, err, errlen)) return -1;
        if (tc->mode == AGENT_MODE_SEARCH && agent_train_save(t, t->files.best, err, errlen)) return -1;
    }
    t->tm.io += clock_now_s() - io0;
    return 0;
}

int agent_train_step(agent_trainer *t, char *err, size_t errlen) {
    if (t->rank == 0 && node_phase(t) && t->tc->eval_every > 0 && !t->start_validated) {
        /* the policy the phase starts from is a candidate for best.h5 too:
         * the phase's best.h5 is never worse on validation than its start */
        agent_metrics m0;
        agent_metrics_clear(&m0);
        if (valid_node(t, &m0.valid_node_at_best, &m0.valid_node_gap, err, errlen) ||
            keep_best_valid(t, &m0, err, errlen))
            return -1;
        t->start_validated = 1;
        t->vn_start = m0.valid_node_at_best;
    }
    double t_start = clock_now_s();
    tr_step st = step_plan(t);
    if (draw_batch(t, &st, err, errlen)) return -1;
    t->tm.instances += clock_now_s() - t_start;
    if (play(t, &st, err, errlen)) return -1;
    double t2 = clock_now_s();
    gather_outcomes(t, &st);
    tr_loss loss;
    if (advantages(t, &st, err, errlen) || learn(t, &st, &loss, err, errlen)) return -1;
    t->tm.learn += clock_now_s() - t2;
    t->step = st.s;
    t->episodes += st.Bg;
    agent_metrics m;
    int best_e;
    summarize(t, &st, &loss, &m, &best_e);
    if (keep_best(t, &st, best_e, &m, err, errlen)) return -1;
    m.samples_per_s = st.Bg / (clock_now_s() - t_start);
    return record(t, &st, &m, t_start, err, errlen);
}

/* ---------------------------------------------------------------------------
 * Evaluation: greedy and sample-N-keep-best on the held-out and validation sets
 * ------------------------------------------------------------------------ */

/* eval_set decodes every instance of arr[n] (greedy, or `samples` each) and
 * returns the mean gap of the best feasible plan per instance, the number
 * without any feasible plan in *n_inf. */
static int eval_set(agent_trainer *t, tr_inst *arr, int n, int samples, int greedy, double *gap,
                    int *n_inf, double *prior, char *err, size_t errlen) {
    *gap = NAN;
    *n_inf = 0;
    if (n == 0) return 0;
    agent_instance *ai = calloc((size_t)n, sizeof *ai);
    int B = n * samples;
    int *of = calloc((size_t)B, sizeof *of);
    if (!ai || !of) {
        free(ai);
        free(of);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) ai[i] = arr[i].ai;
    for (int b = 0; b < B; b++) of[b] = b / samples;
    agent_rollout_opts o = {.placement = PLACER_PLACE_NONE,
                            .greedy = greedy,
                            .penalty = t->tc->penalty,
                            .seed = (uint64_t)t->tc->seed,
                            .stream = 0x4556414cULL /* "EVAL" */,
                            .ep_base = 0,
                            .ep_total = B,
                            .record = 0,
                            .forced = NULL};
    int st = agent_rollout_run(t->ro, t->p, ai, n, of, B, &o, t->pool, err, errlen);
    double *best = st == 0 ? malloc((size_t)n * sizeof *best) : NULL;
    if (st == 0 && !best) {
        snprintf(err, errlen, "out of memory");
        st = -1;
    }
    if (st == 0) {
        for (int i = 0; i < n; i++) {
            /* sampling keeps the greedy plan (prior) as a candidate too */
            best[i] = prior && !greedy ? prior[i] : INFINITY;
            for (int s = 0; s < samples; s++) {
                const agent_episode *e = agent_rollout_episode(t->ro, i * samples + s);
                if (e->feasible && e->plan_cost < best[i]) best[i] = e->plan_cost;
            }
        }
        /* greedy decoding backtracks out of dead ends, as agent_policy_decode does */
        for (int i = 0; i < n && st == 0 && greedy; i++) {
            if (isfinite(best[i])) continue;
            int *as = malloc((size_t)arr[i].ai.job->n_layers * sizeof *as);
            if (!as) {
                snprintf(err, errlen, "out of memory");
                st = -1;
                break;
            }
            int rc = agent_decode_greedy(t->ro, t->p, &arr[i].ai, PLACER_PLACE_NONE, t->tc->penalty, 64, as,
                                         NULL, err, errlen);
            if (rc < 0) st = -1;
            if (rc == 0) best[i] = agent_rollout_episode(t->ro, 0)->plan_cost;
            free(as);
        }
    }
    if (st == 0) {
        double sum = 0;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (greedy && prior) prior[i] = best[i];
            if (isfinite(best[i])) {
                sum += best[i] / arr[i].exact - 1;
                k++;
            } else
                (*n_inf)++;
        }
        *gap = k ? sum / k : NAN;
    }
    free(best);
    free(ai);
    free(of);
    return st;
}

/* The node head's validation (a node-head phase, node_phase below): per
 * validation instance, `best`'s placement of its greedy plan, scored once
 * and kept while the greedy plan stays the same (always, when the plan
 * head is frozen). */
typedef struct {
    agent_trainer *t;
    const int *redo; /* [n] validation instances to score again */
    int fail;        /* set by a worker: out of memory or a placer error */
} vn_ctx;

static void vn_best_fn(void *ctx, int i, int w) {
    (void)w;
    vn_ctx *c = ctx;
    tr_inst *in = &c->t->valid[c->redo[i]];
    int L = in->ai.job->n_layers;
    model_plan *plan = model_plan_create(L), *out = model_plan_create(L);
    int *tasks = NULL;
    in->vn_best = INFINITY;
    if (plan && out && model_eval(in->ai.job, in->ai.cl, in->vn_assign, plan) == 0)
        tasks = malloc((size_t)place_task_count(plan) * sizeof *tasks);
    if (!tasks) {
        c->fail = 1;
    } else {
        char err[256];
        int st = placer_best_run(in->ai.job, in->ai.cl, plan, (uint64_t)c->t->tc->seed, 0, NULL,
                                 tasks, out, err, sizeof err);
        if (st == PLACER_OK) in->vn_best = out->cost;
        else if (st != PLACER_SLOW && st != PLACER_NOFIT) c->fail = 1;
    }
    free(tasks);
    model_plan_free(plan);
    model_plan_free(out);
}

/* valid_node scores the node head on the validation instances: each
 * instance's greedy plan (no backtracking) is placed by the head's most
 * likely nodes and by `best` (default budget, the run's seed). *at_best is
 * the share, of the instances where either placement keeps R, on which the
 * head's keeps R and costs at most best's (x (1 + 1e-9), as eval/bands.c
 * counts q8's jobs); *gap the mean of head / best - 1 over the instances
 * where both keep R (NAN when none). Returns 0, or -1 with a message. */
static int valid_node(agent_trainer *t, double *at_best, double *gap, char *err, size_t errlen) {
    int n = t->n_valid;
    *at_best = *gap = NAN;
    agent_instance *ai = calloc((size_t)n, sizeof *ai);
    int *of = calloc((size_t)n, sizeof *of), *redo = calloc((size_t)n, sizeof *redo);
    double *head = calloc((size_t)n, sizeof *head);
    int st = ai && of && redo && head ? 0 : -1;
    if (st) snprintf(err, errlen, "out of memory");
    for (int i = 0; i < n && st == 0; i++) {
        ai[i] = t->valid[i].ai;
        of[i] = i;
    }
    /* the greedy decode as eval_set's, placed by the head, on a stream of its own */
    agent_rollout_opts o = {.placement = PLACER_PLACE_POLICY, .greedy = 1, .penalty = t->tc->penalty,
                            .seed = (uint64_t)t->tc->seed, .stream = 0x564e4f44ULL /* "VNOD" */,
                            .ep_total = n};
    if (st == 0) st = agent_rollout_run(t->ro, t->p, ai, n, of, n, &o, t->pool, err, errlen);
    int n_redo = 0;
    for (int i = 0; i < n && st == 0; i++) {
        tr_inst *in = &t->valid[i];
        const agent_episode *e = agent_rollout_episode(t->ro, i);
        head[i] = e->placed && e->place_ok ? e->cost : INFINITY;
        if (!e->feasible) { /* no plan: nothing to place */
            head[i] = NAN;
            continue;
        }
        int L = in->ai.job->n_layers;
        const int *as = agent_rollout_assign(t->ro, i);
        if (in->vn_assign && !memcmp(in->vn_assign, as, (size_t)L * sizeof *as)) continue;
        if (!in->vn_assign && !(in->vn_assign = malloc((size_t)L * sizeof *as))) {
            snprintf(err, errlen, "out of memory");
            st = -1;
            break;
        }
        memcpy(in->vn_assign, as, (size_t)L * sizeof *as);
        redo[n_redo++] = i;
    }
    if (st == 0 && n_redo) {
        vn_ctx c = {t, redo, 0};
        agent_pool_for(t->pool, n_redo, vn_best_fn, &c);
        if (c.fail) {
            for (int k = 0; k < n_redo; k++) { /* score them again next time */
                free(t->valid[redo[k]].vn_assign);
                t->valid[redo[k]].vn_assign = NULL;
            }
            snprintf(err, errlen, "validation of the node head: out of memory or a placer error");
            st = -1;
        }
    }
    if (st == 0) {
        int counted = 0, ok = 0, both = 0;
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double h = head[i], b = t->valid[i].vn_best;
            if (isnan(h) || (isinf(h) && isinf(b))) continue;
            counted++;
            if (isfinite(h) && h <= b * (1 + 1e-9)) ok++;
            if (isfinite(h) && isfinite(b)) {
                sum += h / b - 1;
                both++;
            }
        }
        if (counted) *at_best = (double)ok / counted;
        if (both) *gap = sum / both;
    }
    free(ai);
    free(of);
    free(redo);
    free(head);
    return st;
}

int agent_train_eval(agent_trainer *t, agent_metrics *m, char *err, size_t errlen) {
    int ninf;
    double g;
    if (t->n_eval) {
        double *prior = malloc((size_t)t->n_eval * sizeof *prior);
        if (!prior) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = eval_set(t, t->eval, t->n_eval, 1, 1, &g, &ninf, prior, err, errlen);
        m->eval_gap_greedy = g;
        m->eval_infeasible = ninf;
        /* best of eval_samples: the greedy plan and eval_samples - 1 samples,
         * as agent_policy_decode samples */
        if (rc == 0 && t->tc->eval_samples > 1)
            rc = eval_set(t, t->eval, t->n_eval, t->tc->eval_samples - 1, 0, &g, &ninf, prior, err, errlen);
        m->eval_gap_sample = g;
        free(prior);
        if (rc) return -1;
    }
    if (t->n_valid) {
        if (eval_set(t, t->valid, t->n_valid, 1, 1, &g, &ninf, NULL, err, errlen)) return -1;
        /* an instance without a plan counts as a gap of 100% */
        m->valid_gap_greedy = isnan(g) ? 1.0 : (g * (t->n_valid - ninf) + 1.0 * ninf) / t->n_valid;
        if (t->tc->placement == PLACER_PLACE_POLICY &&
            valid_node(t, &m->valid_node_at_best, &m->valid_node_gap, err, errlen))
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Checkpoints
 * ------------------------------------------------------------------------ */

int agent_train_save(agent_trainer *t, const char *path, char *err, size_t errlen) {
    return save_with(t, t->p->params, 0, path, err, errlen);
}

static int save_average(agent_trainer *t, char *err, size_t errlen) {
    if (!t->avg || t->avg_n == 0) return 0;
    return save_with(t, t->avg, t->avg_n, t->files.average, err, errlen);
}

static int save_with(agent_trainer *t, float *params, int64_t average_n, const char *path, char *err,
                     size_t errlen) {
    agent_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = t->step;
    st.seed = t->tc->seed;
    st.mode = t->tc->mode;
    st.placement = t->tc->placement;
    st.episodes = t->episodes;
    st.time_s = t->time_s;
    st.base_type = t->base_type;
    st.base_node = t->base_node;
    st.base_init = t->base_init;
    st.best_valid = t->best_valid;
    st.best_valid_node = t->best_valid_node;
    st.best_cost = t->best_cost;
    if (t->have_best) {
        st.best_assign = t->best_assign;
        st.n_best_assign = t->problem.ai.job->n_layers;
    }
    char *csv = agent_metrics_log_csv(&t->hist);
    st.metrics_csv = csv;
    st.config_yaml = t->tc->text;
    st.average_n = average_n;
    nn_params p = *t->p; /* the same tensors and moments, these weights */
    p.params = params;
    int rc = agent_ckpt_write(path, &p, &t->tc->net, &st, err, errlen);
    free(csv);
    return rc;
}

int agent_train_finish(agent_trainer *t, char *err, size_t errlen) {
    if (t->rank != 0) return 0;
    if (t->csv) fflush(t->csv);
    if (agent_train_save(t, t->files.last, err, errlen) || save_average(t, err, errlen)) return -1;
    if (t->tc->mode == AGENT_MODE_SEARCH) return agent_train_save(t, t->files.best, err, errlen);
    /* no evaluation wrote best.h5: it is the last policy */
    if (!isfinite(node_phase(t) ? t->best_valid_node : t->best_valid))
        return agent_train_save(t, t->files.best, err, errlen);
    return 0;
}

long agent_train_step_count(const agent_trainer *t) { return t->step; }
int agent_train_done(const agent_trainer *t) { return t->step >= t->tc->steps; }
const agent_metrics *agent_train_last(const agent_trainer *t) {
    return t->hist.n ? &t->hist.rows[t->hist.n - 1] : NULL;
}
int agent_train_rank(const agent_trainer *t) { return t->rank; }
int agent_train_ranks(const agent_trainer *t) { return t->ranks; }
const agent_train_times *agent_train_timing(const agent_trainer *t) { return &t->tm; }

void agent_train_node_validation(const agent_trainer *t, agent_train_node_valid *v) {
    int on = node_phase(t);
    v->start = on ? t->vn_start : NAN;
    v->best = on && isfinite(t->best_valid_node) ? 1 - t->best_valid_node : NAN;
    v->best_step = on ? t->vn_best_step : -1;
}

void agent_train_best(const agent_trainer *t, const model_job **job, const model_cluster **cl,
                      const int **assign, double *cost, double *exact) {
    *job = t->problem.ai.job;
    *cl = t->problem.ai.cl;
    *assign = t->have_best ? t->best_assign : NULL;
    *cost = t->best_cost;
    *exact = t->problem.ai.job ? t->problem.exact : NAN;
}

void agent_train_answer(const agent_trainer *t, const int **assign, double *cost, char *from,
                        size_t fromlen) {
    const tr_inst *p = &t->problem;
    *assign = t->have_best ? t->best_assign : NULL;
    *cost = t->have_best ? t->best_cost : INFINITY;
    snprintf(from, fromlen, "%s", t->have_best && t->best_polished ? "sampled+polish" : "sampled");
    if (!p->ai.job) return;
    /* the references, best first: a sample must be strictly beaten */
    if (p->exact_assign && p->exact < *cost) {
        *assign = p->exact_assign;
        *cost = p->exact;
        snprintf(from, fromlen, "reference:%s", solve_method_name(SOLVE_EXACT));
    }
    if (p->ref_assign && p->ai.ref_cost < *cost) {
        *assign = p->ref_assign;
        *cost = p->ai.ref_cost;
        snprintf(from, fromlen, "reference:%s", solve_method_name((solve_method)p->ref_method));
    }
}

const nn_params *agent_train_params(const agent_trainer *t) { return t->p; }

int agent_train_dagger_soft(const agent_trainer *t, int i, const double **ccost, const float **target,
                            int *n_types) {
    if (!t->dag || !(t->tc->dagger_soft > 0) || i < 0 || i >= t->tc->instances * t->tc->dagger_cuts ||
        t->dag[i].b < 0 || !t->dag[i].soft)
        return -1;
    const tr_dagger *dg = &t->dag[i];
    *ccost = dg->ccost;
    *target = t->soft + dg->soft_at;
    *n_types = t->ai[i / t->tc->dagger_cuts].cl->n_types;
    return 0;
}

int agent_train_dagger(const agent_trainer *t, int i, int *cut, const int **greedy, const int **plan,
                       int *actions) {
    if (!t->dag || i < 0 || i >= t->tc->instances * t->tc->dagger_cuts || t->dag[i].b < 0) return -1;
    const tr_dagger *dg = &t->dag[i];
    *cut = dg->cut;
    *greedy = dg->greedy;
    *plan = dg->plan;
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(t->ro, &T, &K, &action, &mask, &probs);
    int B = agent_rollout_episodes(t->ro);
    const model_job *job = t->ai[i / t->tc->dagger_cuts].job; /* search mode: t->ai[0] is the problem */
    for (int l = 0; l < job->n_layers; l++) actions[l] = l < T ? action[(size_t)l * B + dg->b] : -1;
    return 0;
}
