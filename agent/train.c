/* train.c -- REINFORCE training (see train.h): instances, rollouts,
 * advantages, updates, evaluation, metrics and checkpoints.
 */
#include "agent/train.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifdef STRATA_HAVE_MPI
#include <mpi.h>
#endif

#include "agent/adv.h"
#include "agent/ckptio.h"
#include "agent/decode.h"
#include "agent/gen.h"
#include "agent/net.h"
#include "agent/pool.h"
#include "agent/rollout.h"
#include "env/config.h"
#include "env/gym.h"
#include "nets/params.h"
#include "solvers/solve.h"

#define VALID_INDEX_BASE (1ULL << 40) /* generator indices of validation instances */

/* An instance with its reference and exact costs. */
typedef struct {
    agent_gen_inst gi; /* generated (zeroed when loaded) */
    cfg_run *run;      /* loaded from a config (NULL when generated) */
    agent_instance ai; /* job, cluster, ref_cost */
    double exact;      /* the optimal plan's cost */
    int *exact_assign; /* [n_layers] the optimal plan */
    char name[256];
} tr_inst;

/* One episode's outcome as shared across ranks (all doubles). */
enum { EP_RTYPE, EP_RNODE, EP_HASNODE, EP_FEAS, EP_PLANGAP, EP_COST, EP_PLANCOST, EP_N };

struct agent_trainer {
    const agent_trainconf *tc;
    int rank, ranks;
    agent_gen *gen;
    tr_inst problem;       /* search */
    tr_inst *eval;         /* [n_eval] held-out configs */
    int n_eval;
    tr_inst *valid;        /* [n_valid] generated validation instances */
    int n_valid;
    tr_inst *batch;        /* [G] instances of the current step (general) */
    agent_instance *ai;    /* [local instances] */
    int *inst_of;          /* [local episodes + demonstrations] */
    const int **forced;    /* [local episodes + demonstrations] */
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
    double best_cost;            /* search */
    int *best_assign;            /* search [L] */
    int have_best;
    double best_valid;           /* general: best validation gap */
    agent_metrics *hist;         /* [n_hist] */
    size_t n_hist, cap_hist;
    /* scratch */
    double *rec;   /* [B_global * EP_N] */
    double *adv_t, *adv_n; /* [B_global] */
    uint8_t *keep;   /* [B_global] */
    uint8_t *keep_n; /* [B_global] episodes with NODE decisions */
    double *scr;     /* [2 * B_global] */
    FILE *csv;
    char files[3][1200];
    agent_train_times tm;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------
 * Metrics columns
 * ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    size_t off;
} col;

#define C(n) {#n, offsetof(agent_metrics, n)}
static const col COLS[] = {
    C(step), C(episodes), C(time_s), C(samples_per_s), C(episodic_return), C(episodic_cost),
    C(best_cost), C(gap_mean), C(best_gap), C(infeasible_frac), C(policy_loss), C(entropy),
    C(grad_norm), C(lr), C(entropy_coef), C(node_return), C(eval_gap_greedy),
    C(eval_gap_sample), C(eval_infeasible), C(valid_gap_greedy),
};
#undef C
#define N_COLS ((int)(sizeof COLS / sizeof *COLS))

int agent_metrics_columns(const char ***names) {
    static const char *n[N_COLS];
    for (int i = 0; i < N_COLS; i++) n[i] = COLS[i].name;
    if (names) *names = n;
    return N_COLS;
}

static double mget(const agent_metrics *m, int i) {
    return *(const double *)((const char *)m + COLS[i].off);
}

double agent_metrics_get(const agent_metrics *m, int i) { return mget(m, i); }
static void mset(agent_metrics *m, int i, double v) { *(double *)((char *)m + COLS[i].off) = v; }

static void csv_header(FILE *f) {
    for (int i = 0; i < N_COLS; i++) fprintf(f, "%s%s", i ? "," : "", COLS[i].name);
    fputc('\n', f);
}

/* csv_row writes one row (NAN as an empty field) into f. */
static void csv_row(FILE *f, const agent_metrics *m) {
    for (int i = 0; i < N_COLS; i++) {
        double v = mget(m, i);
        if (i) fputc(',', f);
        if (!isnan(v)) fprintf(f, "%.10g", v);
    }
    fputc('\n', f);
}

/* history_csv returns the history as CSV text (malloc'ed), or NULL. */
static char *history_csv(const agent_trainer *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    csv_header(f);
    for (size_t i = 0; i < t->n_hist; i++) csv_row(f, &t->hist[i]);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int hist_push(agent_trainer *t, const agent_metrics *m) {
    if (t->n_hist == t->cap_hist) {
        size_t c = t->cap_hist ? 2 * t->cap_hist : 1024;
        agent_metrics *h = realloc(t->hist, c * sizeof *h);
        if (!h) return -1;
        t->hist = h;
        t->cap_hist = c;
    }
    t->hist[t->n_hist++] = *m;
    return 0;
}

/* history_parse reads CSV text written by history_csv back into t->hist. */
static int history_parse(agent_trainer *t, const char *text) {
    t->n_hist = 0;
    const char *s = strchr(text, '\n'); /* skip the header */
    while (s && *++s) {
        agent_metrics m;
        for (int i = 0; i < N_COLS; i++) {
            char *end;
            double v = NAN;
            if (*s != ',' && *s != '\n' && *s) {
                v = strtod(s, &end);
                if (end == s) return -1;
                s = end;
            }
            mset(&m, i, v);
            if (i + 1 < N_COLS) {
                if (*s != ',') return -1;
                s++;
            }
        }
        if (hist_push(t, &m)) return -1;
        s = strchr(s, '\n');
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * MPI helpers (no-ops on one rank)
 * ------------------------------------------------------------------------ */

static int mpi_on(void) {
#ifdef STRATA_HAVE_MPI
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
#else
    return 0;
#endif
}

static void allreduce_d(const agent_trainer *t, double *x, int n) {
#ifdef STRATA_HAVE_MPI
    if (t->ranks > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)t, (void)x, (void)n;
#endif
}

static void allreduce_f(const agent_trainer *t, float *x, size_t n) {
#ifdef STRATA_HAVE_MPI
    if (t->ranks > 1) MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)t, (void)x, (void)n;
#endif
}

/* allgather_rec gathers every rank's slice of rec (n local records of EP_N
 * doubles, at the rank's offset) into all of rec. */
static void allgather_rec(const agent_trainer *t, double *rec, int n_local) {
#ifdef STRATA_HAVE_MPI
    if (t->ranks > 1)
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rec, n_local * EP_N, MPI_DOUBLE, MPI_COMM_WORLD);
#else
    (void)t, (void)rec, (void)n_local;
#endif
}

static void bcast_i(const agent_trainer *t, int *x, int n, int root) {
#ifdef STRATA_HAVE_MPI
    if (t->ranks > 1) MPI_Bcast(x, n, MPI_INT, root, MPI_COMM_WORLD);
#else
    (void)t, (void)x, (void)n, (void)root;
#endif
}

int agent_train_agree(const agent_trainer *t, int flag) {
#ifdef STRATA_HAVE_MPI
    if (t->ranks > 1) MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#else
    (void)t;
#endif
    return flag;
}

/* ---------------------------------------------------------------------------
 * Instances
 * ------------------------------------------------------------------------ */

static void inst_clear(tr_inst *in) {
    agent_gen_inst_clear(&in->gi);
    free(in->exact_assign);
    cfg_free(in->run);
    memset(in, 0, sizeof *in);
}

/* solve_costs fills in->exact and in->ai.ref_cost. Returns 0, or 1 when no
 * feasible plan exists (or none was found), -1 when out of memory. */
static int solve_costs(tr_inst *in, int reference) {
    const model_job *job = in->ai.job;
    solve_result *res = solve_result_create(job->n_layers);
    if (!res) return -1;
    solve_opts o;
    solve_opts_default(&o);
    o.budget_ms = 5000;
    int st = solve_run(job, in->ai.cl, &o, res);
    if (st != 0) {
        solve_result_free(res);
        return st == SOLVE_NONE ? 1 : -1;
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
    int methods[3] = {reference, SOLVE_GREEDY, SOLVE_EXACT};
    for (int k = 0; k < 3 && reference != SOLVE_EXACT; k++) {
        o.method = (solve_method)methods[k];
        if (o.method == SOLVE_EXACT) break;
        if (solve_run(job, in->ai.cl, &o, res) == 0) {
            ref = res->plan->cost;
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
    in->run = cfg_load(path, err, errlen);
    if (!in->run) return -1;
    if (in->run->n_jobs != 1 || in->run->objective != CFG_OBJECTIVE_COST) {
        snprintf(err, errlen, "%s: the agent solves one job with objective cost (it has %d jobs)", path,
                 in->run->n_jobs);
        return -1;
    }
    in->ai.job = &in->run->jobs[0];
    in->ai.cl = &in->run->cluster;
    snprintf(in->name, sizeof in->name, "%s", path);
    int st = solve_costs(in, reference);
    if (st) {
        snprintf(err, errlen, "%s: %s", path, st > 0 ? "no feasible plan exists" : "out of memory");
        return -1;
    }
    return 0;
}

/* draw_inst draws generated instance `index` until it has a feasible plan. */
static int draw_inst(const agent_gen *g, uint64_t seed, uint64_t index, int reference, tr_inst *in) {
    inst_clear(in);
    for (int attempt = 0; attempt < 100; attempt++) {
        if (agent_gen_draw(g, seed, index, attempt, &in->gi)) return -1;
        in->ai.job = &in->gi.job;
        in->ai.cl = &in->gi.cl;
        int st = solve_costs(in, reference);
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
    tr_inst *arr;
    uint64_t base;
    int failed;
} draw_ctx;

static void draw_fn(void *ctx, int i, int w) {
    (void)w;
    draw_ctx *c = ctx;
    if (draw_inst(c->t->gen, (uint64_t)c->t->tc->seed, c->base + (uint64_t)i, c->t->tc->reference,
                  &c->arr[i]))
        c->failed = 1;
}

/* ---------------------------------------------------------------------------
 * Create / free
 * ------------------------------------------------------------------------ */

void agent_train_free(agent_trainer *t) {
    if (!t) return;
    agent_gen_free(t->gen);
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
    nn_params_free(t->p);
    agent_net_ws_free(t->ws);
    agent_rollout_free(t->ro);
    agent_pool_free(t->pool);
    free(t->best_assign);
    free(t->hist);
    free(t->rec);
    free(t->adv_t);
    free(t->adv_n);
    free(t->keep);
    free(t->keep_n);
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
    if (!strcmp(name, "metrics.csv")) return t->files[0];
    if (!strcmp(name, "last.h5")) return t->files[1];
    return t->files[2];
}

agent_trainer *agent_train_create(const agent_trainconf *tc, const char *resume, char *err,
                                  size_t errlen) {
    agent_trainer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->tc = tc;
    t->ranks = 1;
#ifdef STRATA_HAVE_MPI
    if (mpi_on()) {
        MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &t->ranks);
    }
#endif
    t->best_cost = INFINITY;
    t->best_valid = INFINITY;
    int Bg = tc->instances * tc->samples;
    if (Bg % t->ranks) {
        snprintf(err, errlen, "the global batch (%d instances x %d samples = %d episodes) must split evenly over %d ranks",
                 tc->instances, tc->samples, Bg, t->ranks);
        goto fail;
    }
    if (tc->mode == AGENT_MODE_SEARCH) {
        if (load_inst(&t->problem, tc->problem, tc->reference, err, errlen)) goto fail;
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
        draw_ctx dc = {t, t->valid, VALID_INDEX_BASE, 0};
        agent_pool_for(t->pool, tc->valid, draw_fn, &dc);
        t->n_valid = tc->valid;
        if (dc.failed) {
            snprintf(err, errlen, "%s: cannot draw a feasible validation instance", tc->generator);
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
    t->inst_of = calloc((size_t)Bg + (size_t)tc->instances, sizeof *t->inst_of);
    t->forced = calloc((size_t)Bg + (size_t)tc->instances, sizeof *t->forced);
    t->rec = calloc((size_t)Bg * EP_N, sizeof *t->rec);
    t->adv_t = calloc((size_t)Bg, sizeof *t->adv_t);
    t->adv_n = calloc((size_t)Bg, sizeof *t->adv_n);
    t->keep = calloc((size_t)Bg, 1);
    t->keep_n = calloc((size_t)Bg, 1);
    t->scr = calloc((size_t)Bg * 2, sizeof *t->scr);
    if (!t->ws || !t->ro || !t->ai || !t->inst_of || !t->forced || !t->rec || !t->adv_t || !t->adv_n || !t->keep ||
        !t->keep_n || !t->scr)
        goto oom;
    snprintf(t->files[0], sizeof t->files[0], "%s/metrics.csv", tc->out);
    snprintf(t->files[1], sizeof t->files[1], "%s/last.h5", tc->out);
    snprintf(t->files[2], sizeof t->files[2], "%s/best.h5", tc->out);
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
        int bad = st.metrics_csv && history_parse(t, st.metrics_csv);
        agent_ckpt_state_clear(&st);
        if (bad) {
            snprintf(err, errlen, "%s: the metrics history cannot be read", resume);
            goto fail;
        }
        /* drop rows past the checkpoint (a run that went on after it) */
        while (t->n_hist && t->hist[t->n_hist - 1].step > (double)t->step) t->n_hist--;
    }
    if (t->rank == 0) {
        if (mkdirs(tc->out)) {
            snprintf(err, errlen, "%s: cannot create the folder: %s", tc->out, strerror(errno));
            goto fail;
        }
        t->csv = fopen(t->files[0], "w");
        if (!t->csv) {
            snprintf(err, errlen, "%s: cannot write: %s", t->files[0], strerror(errno));
            goto fail;
        }
        csv_header(t->csv);
        for (size_t i = 0; i < t->n_hist; i++) csv_row(t->csv, &t->hist[i]);
        fflush(t->csv);
    }
    return t;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    agent_train_free(t);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Advantages
 * ------------------------------------------------------------------------ */

/* ---------------------------------------------------------------------------
 * Search: local polish of a plan (1-flip hill climbing on model_eval)
 * ------------------------------------------------------------------------ */

static double polish(const model_job *job, const model_cluster *cl, int *assign, double cost,
                     model_plan *plan) {
    int L = job->n_layers, T = cl->n_types;
    for (int improved = 1; improved;) {
        improved = 0;
        for (int l = 0; l < L; l++) {
            int keep = assign[l];
            for (int ty = 0; ty < T; ty++) {
                if (ty == keep) continue;
                assign[l] = ty;
                if (model_eval(job, cl, assign, plan) == 0 && plan->cost < cost * (1 - 1e-12)) {
                    cost = plan->cost;
                    keep = ty;
                    improved = 1;
                }
            }
            assign[l] = keep;
        }
    }
    return cost;
}

/* ---------------------------------------------------------------------------
 * The step
 * ------------------------------------------------------------------------ */

static double schedule_cos(double a, double b, long s, long n) {
    double x = n > 0 ? (double)(s < n ? s : n) / (double)n : 1.0;
    return b + 0.5 * (a - b) * (1 + cos(M_PI * x));
}

static double schedule_lin(double a, double b, long s, long n) {
    double x = n > 0 ? (double)(s < n ? s : n) / (double)n : 1.0;
    return a + (b - a) * x;
}

int agent_train_step(agent_trainer *t, char *err, size_t errlen) {
    const agent_trainconf *tc = t->tc;
    double t_start = now(), t0 = t_start;
    long s = t->step + 1;
    int G = tc->instances, S = tc->samples, Bg = G * S;
    int Bl = Bg / t->ranks, e0 = t->rank * Bl;
    int g0 = e0 / S, g1 = (e0 + Bl - 1) / S, nl = g1 - g0 + 1;
    double lr = schedule_cos(tc->lr, tc->lr_final, s, tc->steps);
    double beta = schedule_lin(tc->entropy, tc->entropy_final, s, tc->steps);

    /* instances */
    if (tc->mode == AGENT_MODE_SEARCH) {
        t->ai[0] = t->problem.ai;
    } else {
        draw_ctx dc = {t, t->batch + g0, (uint64_t)s * (uint64_t)G + (uint64_t)g0, 0};
        agent_pool_for(t->pool, nl, draw_fn, &dc);
        if (dc.failed) {
            snprintf(err, errlen, "%s: cannot draw a feasible instance at step %ld", tc->generator, s);
            return -1;
        }
        for (int i = 0; i < nl; i++) t->ai[i] = t->batch[g0 + i].ai;
    }
    for (int b = 0; b < Bl; b++) {
        t->inst_of[b] = (e0 + b) / S - g0;
        t->forced[b] = NULL;
    }
    /* demonstrations: one episode along the exact plan of each instance whose
     * first episode is on this rank (imitation > 0) */
    int nd = 0;
    if (tc->imitation > 0)
        for (int g = g0; g <= g1; g++) {
            if (g * S < e0) continue;
            const tr_inst *in = tc->mode == AGENT_MODE_SEARCH ? &t->problem : &t->batch[g];
            t->inst_of[Bl + nd] = g - g0;
            t->forced[Bl + nd] = in->exact_assign;
            nd++;
        }
    double t1 = now();
    t->tm.instances += t1 - t0;

    /* rollout */
    agent_rollout_opts ro = {tc->placement, 0, tc->penalty, (uint64_t)tc->seed, (uint64_t)s, e0,
                             Bg + G, 1, nd ? t->forced : NULL};
    agent_rollout_times before = *agent_rollout_timing(t->ro);
    if (agent_rollout_run(t->ro, t->p, t->ai, nl, t->inst_of, Bl + nd, &ro, t->pool, err, errlen))
        return -1;
    const agent_rollout_times *after = agent_rollout_timing(t->ro);
    t->tm.env += after->env - before.env;
    t->tm.lookahead += after->lookahead - before.lookahead;
    t->tm.net += after->net - before.net;
    double t2 = now();

    /* outcomes, gathered over ranks */
    for (int b = 0; b < Bl; b++) {
        const agent_episode *ep = agent_rollout_episode(t->ro, b);
        const tr_inst *in = tc->mode == AGENT_MODE_SEARCH ? &t->problem : &t->batch[g0 + t->inst_of[b]];
        double *r = t->rec + (size_t)(e0 + b) * EP_N;
        r[EP_RTYPE] = ep->r_type;
        r[EP_RNODE] = ep->r_node;
        r[EP_HASNODE] = ep->node_steps > 0;
        r[EP_FEAS] = ep->feasible;
        r[EP_PLANGAP] = ep->feasible ? ep->plan_cost / in->exact - 1 : NAN;
        r[EP_COST] = ep->cost;
        r[EP_PLANCOST] = ep->feasible ? ep->plan_cost : INFINITY;
    }
    allgather_rec(t, t->rec, Bl);

    /* advantages (identical on every rank) */
    memset(t->keep, 1, (size_t)Bg);
    agent_adv_opts ao = {tc->baseline, tc->baseline_decay, tc->adv_norm, tc->risk};
    double *rt = t->scr, *rn = t->scr + Bg;
    uint8_t *hn = t->keep_n;
    for (int e = 0; e < Bg; e++) {
        rt[e] = t->rec[(size_t)e * EP_N + EP_RTYPE];
        rn[e] = t->rec[(size_t)e * EP_N + EP_RNODE];
        hn[e] = t->rec[(size_t)e * EP_N + EP_HASNODE] > 0;
    }
    if (agent_advantages(&ao, G, S, rt, NULL, t->adv_t, t->keep, &t->base_type, &t->base_init, 1) ||
        agent_advantages(&ao, G, S, rn, hn, t->adv_n, NULL, &t->base_node, &t->base_init, 2)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    float *adv_type, *adv_node;
    const int *owner;
    agent_type_traj *tt = agent_rollout_type_traj(t->ro, &adv_type);
    for (int b = 0; b < Bl; b++) {
        adv_type[b] = (float)t->adv_t[e0 + b];
        if (!t->keep[e0 + b]) agent_rollout_drop(t->ro, b);
    }
    /* a demonstration's decisions: -imitation * S * logp (the loss's scale
     * 1/(G S) makes it imitation x the mean cross-entropy over instances) */
    for (int d = 0; d < nd; d++) adv_type[Bl + d] = (float)(tc->imitation * S);
    agent_node_traj *nt = agent_rollout_node_traj(t->ro, &adv_node, &owner);
    for (int i = 0; i < nt->N; i++)
        adv_node[i] = owner[i] < Bl ? (float)t->adv_n[e0 + owner[i]] : 0.0f;

    /* gradient */
    nn_params_zero_grad(t->p);
    agent_loss_stats st = {0, 0, 0};
    float scale = 1.0f / (float)Bg;
    if (agent_net_type_loss(t->ws, t->p, tt, (float)beta, scale, &st, err, errlen)) return -1;
    if (nt->N > 0 && agent_net_node_loss(t->ws, t->p, nt, (float)beta, scale, 4096, &st, err, errlen))
        return -1;
    allreduce_f(t, t->p->grads, t->p->total);
    double stats[3] = {st.pg, st.entropy, (double)st.decisions};
    allreduce_d(t, stats, 3);
    if (tc->freeze_plan) /* no gradient outside the node head */
        for (int i = 0; i < AN_NCTX_W; i++) memset(nn_grad(t->p, i), 0, t->p->size[i] * sizeof(float));
    double gnorm = nn_clip_grad_norm(t->p, tc->grad_clip);
    nn_adam_cfg ac = {lr, 0.9, 0.999, 1e-8, tc->weight_decay};
    if (tc->freeze_plan) { /* keep the frozen tensors and their moments as they are */
        size_t n = t->p->off[AN_NCTX_W];
        float *keep = malloc(3 * n * sizeof *keep);
        if (!keep) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(keep, t->p->params, n * sizeof *keep);
        memcpy(keep + n, t->p->m, n * sizeof *keep);
        memcpy(keep + 2 * n, t->p->v, n * sizeof *keep);
        nn_adam_step(t->p, &ac, s);
        memcpy(t->p->params, keep, n * sizeof *keep);
        memcpy(t->p->m, keep + n, n * sizeof *keep);
        memcpy(t->p->v, keep + 2 * n, n * sizeof *keep);
        free(keep);
    } else {
        nn_adam_step(t->p, &ac, s);
    }
    double t3 = now();
    t->tm.learn += t3 - t2;

    /* metrics */
    agent_metrics m;
    for (int i = 0; i < N_COLS; i++) mset(&m, i, NAN);
    double ret = 0, cost = 0, gap = 0, nret = 0;
    int ncost = 0, ngap = 0, ninf = 0, nnode = 0, best_e = -1;
    for (int e = 0; e < Bg; e++) {
        const double *r = t->rec + (size_t)e * EP_N;
        ret += r[EP_RTYPE] + r[EP_RNODE];
        if (isfinite(r[EP_COST])) {
            cost += r[EP_COST];
            ncost++;
        } else
            ninf++;
        if (r[EP_FEAS] > 0) {
            gap += r[EP_PLANGAP];
            ngap++;
            if (best_e < 0 || r[EP_PLANCOST] < t->rec[(size_t)best_e * EP_N + EP_PLANCOST]) best_e = e;
        }
        if (r[EP_HASNODE] > 0) {
            nret += r[EP_RNODE];
            nnode++;
        }
    }
    t->step = s;
    t->episodes += Bg;
    m.step = (double)s;
    m.episodes = t->episodes;
    m.episodic_return = ret / Bg;
    m.episodic_cost = ncost ? cost / ncost : NAN;
    m.gap_mean = ngap ? gap / ngap : NAN;
    m.infeasible_frac = (double)ninf / Bg;
    m.policy_loss = stats[0] / Bg;
    m.entropy = stats[2] > 0 ? stats[1] / stats[2] : NAN;
    m.grad_norm = gnorm;
    m.lr = lr;
    m.entropy_coef = beta;
    m.node_return = nnode ? nret / nnode : NAN;

    /* search: the best plan (owned by the rank that played it) */
    if (tc->mode == AGENT_MODE_SEARCH && best_e >= 0) {
        double c = t->rec[(size_t)best_e * EP_N + EP_PLANCOST];
        const model_job *job = t->problem.ai.job;
        int L = job->n_layers;
        int owner_rank = best_e / Bl;
        int *cand = malloc((size_t)L * sizeof *cand);
        if (!cand) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (owner_rank == t->rank) memcpy(cand, agent_rollout_assign(t->ro, best_e - e0), (size_t)L * sizeof *cand);
        bcast_i(t, cand, L, owner_rank);
        if (tc->polish) {
            model_plan *plan = model_plan_create(L);
            if (plan) c = polish(job, t->problem.ai.cl, cand, c, plan);
            model_plan_free(plan);
        }
        if (c < t->best_cost) {
            t->best_cost = c;
            memcpy(t->best_assign, cand, (size_t)L * sizeof *cand);
            t->have_best = 1;
        }
        free(cand);
    }
    if (tc->mode == AGENT_MODE_SEARCH && t->have_best) {
        m.best_cost = t->best_cost;
        m.best_gap = t->best_cost / t->problem.exact - 1;
    }
    double t4 = now();
    m.samples_per_s = Bg / (t4 - t_start);

    /* evaluation, log, checkpoints (rank 0) */
    if (t->rank == 0) {
        if (tc->mode == AGENT_MODE_GENERAL && tc->eval_every > 0 && s % tc->eval_every == 0) {
            double e0t = now();
            if (agent_train_eval(t, &m, err, errlen)) return -1;
            t->tm.eval += now() - e0t;
            double v = !isnan(m.valid_gap_greedy) ? m.valid_gap_greedy : m.eval_gap_greedy;
            if (!isnan(v) && v < t->best_valid) {
                t->best_valid = v;
                if (agent_train_save(t, t->files[2], err, errlen)) return -1;
            }
        }
        double io0 = now();
        t->time_s += io0 - t_start;
        m.time_s = t->time_s;
        if (hist_push(t, &m)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (s % tc->log_every == 0 || s == tc->steps) {
            csv_row(t->csv, &m);
            fflush(t->csv);
        }
        if (tc->ckpt_every > 0 && s % tc->ckpt_every == 0) {
            if (agent_train_save(t, t->files[1], err, errlen)) return -1;
            if (tc->mode == AGENT_MODE_SEARCH && agent_train_save(t, t->files[2], err, errlen)) return -1;
        }
        t->tm.io += now() - io0;
    } else {
        t->time_s += now() - t_start;
        m.time_s = t->time_s;
        if (hist_push(t, &m)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
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
    agent_rollout_opts o = {AGENT_PLACE_NONE, greedy, t->tc->penalty, (uint64_t)t->tc->seed,
                            0x4556414cULL /* "EVAL" */, 0, B, 0, NULL};
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
            int rc = agent_decode_greedy(t->ro, t->p, &arr[i].ai, AGENT_PLACE_NONE, t->tc->penalty, 64, as,
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
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Checkpoints
 * ------------------------------------------------------------------------ */

int agent_train_save(agent_trainer *t, const char *path, char *err, size_t errlen) {
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
    st.best_cost = t->best_cost;
    if (t->have_best) {
        st.best_assign = t->best_assign;
        st.n_best_assign = t->problem.ai.job->n_layers;
    }
    char *csv = history_csv(t);
    st.metrics_csv = csv;
    st.config_yaml = t->tc->text;
    int rc = agent_ckpt_write(path, t->p, &t->tc->net, &st, err, errlen);
    free(csv);
    return rc;
}

int agent_train_finish(agent_trainer *t, char *err, size_t errlen) {
    if (t->rank != 0) return 0;
    if (t->csv) fflush(t->csv);
    if (agent_train_save(t, t->files[1], err, errlen)) return -1;
    if (t->tc->mode == AGENT_MODE_SEARCH) return agent_train_save(t, t->files[2], err, errlen);
    if (!isfinite(t->best_valid)) return agent_train_save(t, t->files[2], err, errlen);
    return 0;
}

long agent_train_step_count(const agent_trainer *t) { return t->step; }
int agent_train_done(const agent_trainer *t) { return t->step >= t->tc->steps; }
const agent_metrics *agent_train_last(const agent_trainer *t) {
    return t->n_hist ? &t->hist[t->n_hist - 1] : NULL;
}
int agent_train_rank(const agent_trainer *t) { return t->rank; }
int agent_train_ranks(const agent_trainer *t) { return t->ranks; }
const agent_train_times *agent_train_timing(const agent_trainer *t) { return &t->tm; }

void agent_train_best(const agent_trainer *t, const model_job **job, const model_cluster **cl,
                      const int **assign, double *cost, double *exact) {
    *job = t->problem.ai.job;
    *cl = t->problem.ai.cl;
    *assign = t->have_best ? t->best_assign : NULL;
    *cost = t->best_cost;
    *exact = t->problem.run ? t->problem.exact : NAN;
}
