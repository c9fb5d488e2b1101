/* run.c -- the cells of an evaluation on a thread pool (see run.h).
 *
 * The work is a list of tasks: first one reference task per single-job
 * instance (its exact and homogeneous plans), then one task per cell.
 * Worker threads take the next task index under a mutex; every task
 * writes only its own slot (a reference or a row), so the results do not
 * depend on which thread ran what. Cells wait for their references simply
 * because all reference tasks are handed out first and each cell task
 * waits, under a condition variable, until every reference is done.
 *
 * GLPK (multi_smd) keeps an environment per thread (or a global one,
 * depending on how it was built): smd cells take a mutex around it, and
 * each worker frees its thread's environment before it ends, which would
 * otherwise be lost with the thread.
 */
#include "eval/run.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/policy.h"
#include "base/clock.h"
#include "env/place.h"
#include "eval/gen.h"
#include "solvers/fit.h"
#include "solvers/multi.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#ifdef STRATA_HAVE_GLPK
#include <glpk.h>
#endif

#define MULTI_MAX_COMBOS 4000000L /* largest brute-force reference of a batch */

static pthread_mutex_t glpk_lock = PTHREAD_MUTEX_INITIALIZER;

/* The references of one single-job instance. */
typedef struct {
    double exact;   /* exact plan's cost, NAN when none or not proven optimal */
    int exact_optimal;
    int exact_infeasible; /* proven: no plan at all */
    double homogeneous; /* NAN when none */
    int homog_type; /* type of the homogeneous plan, -1 when none */
} inst_ref;

typedef struct {
    const eval_spec *spec;
    const eval_instance *inst;
    int n_inst;
    agent_policy **policies; /* [n_methods], NULL for other methods */
    inst_ref *refs;          /* [n_inst] */
    eval_row *rows;          /* [n_cells] */
    int n_cells;
    int *ref_task;           /* [n_refs] instance of each reference task */
    int n_refs;
    /* the pool */
    pthread_mutex_t lock;
    pthread_cond_t refs_done_cv;
    int next, done, refs_done, total;
    const eval_run_opts *opts;
    int failed;
    char err[512];
} run_ctx;

static long budget_ms(double s) { return (long)ceil(s * 1000.0); }

/* set_note writes the row's note (printf-style), cut to its size. */
static void set_note(eval_row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(eval_row *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
}

static void row_blank(eval_row *r) {
    r->feasible = 0;
    r->objective = EVAL_OBJ_COST;
    r->cost = r->throughput = r->time = r->value = r->plan_cost = NAN;
    r->reference = r->gap = r->homogeneous = r->vs_homogeneous = NAN;
    r->cross_node = r->cross_zone = NAN;
    r->seconds = NAN;
    r->note[0] = '\0';
}

/* plan_figures copies a scored plan's figures into the row. */
static void plan_figures(eval_row *r, const model_plan *p) {
    r->cost = p->cost;
    r->throughput = p->throughput;
    r->time = p->time;
    r->value = p->cost;
    if (p->placed) {
        r->cross_node = p->cross_node_bytes;
        r->cross_zone = p->cross_zone_bytes;
    }
}

/* ---------------------------------------------------------------------------
 * References
 * ------------------------------------------------------------------------ */

static void run_ref(run_ctx *x, int i) {
    inst_ref *ref = &x->refs[i];
    const model_job *job = &x->inst[i].run->jobs[0];
    const model_cluster *cl = &x->inst[i].run->cluster;
    ref->exact = ref->homogeneous = NAN;
    ref->homog_type = -1;
    solve_result *res = solve_result_create(job->n_layers);
    if (!res) return;
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = budget_ms(x->spec->budget_s);
    so.max_evals = x->spec->evals;
    if (solve_run(job, cl, &so, res) == 0 && res->optimal) {
        ref->exact = res->plan->cost;
        ref->exact_optimal = 1;
    }
    ref->exact_infeasible = res->infeasible;
    so.method = SOLVE_HOMOGENEOUS;
    if (solve_run(job, cl, &so, res) == 0) {
        ref->homogeneous = res->plan->cost;
        ref->homog_type = res->plan->stages[0].type;
    }
    solve_result_free(res);
}

/* ---------------------------------------------------------------------------
 * Cells, one function per family
 * ------------------------------------------------------------------------ */

static void cell_plan(run_ctx *x, const eval_method *m, eval_row *r) {
    const model_job *job = &x->inst[r->inst].run->jobs[r->job];
    const model_cluster *cl = &x->inst[r->inst].run->cluster;
    solve_result *res = solve_result_create(job->n_layers);
    if (!res) {
        set_note(r, "out of memory");
        return;
    }
    solve_opts so = {.method = (solve_method)m->solver, .budget_ms = budget_ms(m->budget_s),
                     .max_evals = m->evals, .seed = r->seed};
    int rc = solve_run(job, cl, &so, res);
    r->seconds = res->seconds;
    if (rc == 0) {
        r->feasible = 1;
        plan_figures(r, res->plan);
        r->plan_cost = res->plan->cost;
        if (res->stopped) set_note(r, "stopped by its budget");
    } else {
        set_note(r, "%s", res->why);
    }
    solve_result_free(res);
}

static void cell_place(run_ctx *x, const eval_method *m, eval_row *r) {
    const model_job *job = &x->inst[r->inst].run->jobs[r->job];
    const model_cluster *cl = &x->inst[r->inst].run->cluster;
    solve_result *res = solve_result_create(job->n_layers);
    model_plan *out = model_plan_create(job->n_layers);
    int *task_node = NULL;
    if (!res || !out) {
        set_note(r, "out of memory");
        goto done;
    }
    if (cl->n_nodes == 0) {
        set_note(r, "the cluster lists no nodes to place tasks on");
        goto done;
    }
    solve_opts so = {.method = (solve_method)m->solver, .budget_ms = budget_ms(m->budget_s),
                     .max_evals = m->evals, .seed = r->seed};
    if (solve_run(job, cl, &so, res) != 0) {
        set_note(r, "no plan to place (%s): %s",
                 solve_method_name(so.method), res->why);
        goto done;
    }
    r->plan_cost = res->plan->cost;
    task_node = malloc(sizeof *task_node * (size_t)(place_task_count(res->plan) + 1));
    if (!task_node) {
        set_note(r, "out of memory");
        goto done;
    }
    char err[512];
    double t0 = clock_now_s();
    int rc = m->placer == PLACER_BEST
                 ? placer_best_run(job, cl, res->plan, r->seed, m->evals, NULL, task_node, out,
                                   err, sizeof err)
                 : placer_run(job, cl, res->plan, (placer_method)m->placer, r->seed, task_node,
                              out, err, sizeof err);
    r->seconds = clock_now_s() - t0;
    if (rc == PLACER_OK || rc == PLACER_SLOW) {
        plan_figures(r, out);
        r->feasible = rc == PLACER_OK;
        if (rc == PLACER_SLOW) set_note(r, "%s", out->why);
    } else {
        set_note(r, "%s", err);
    }
done:
    free(task_node);
    model_plan_free(out);
    solve_result_free(res);
}

static void cell_policy(run_ctx *x, int mi, const eval_method *m, eval_row *r) {
    const model_job *job = &x->inst[r->inst].run->jobs[r->job];
    const model_cluster *cl = &x->inst[r->inst].run->cluster;
    agent_decode_opts o = {.decode = (agent_decode_kind)m->decode, .samples = m->samples,
                           .seed = r->seed, .placement = m->placer, .budget_ms = 0,
                           .node_samples = m->node_samples, .polish = m->polish};
    int place = m->placer != PLACER_PLACE_NONE;
    if (place && cl->n_nodes == 0) {
        set_note(r, "the cluster lists no nodes to place tasks on");
        return;
    }
    int max_tasks = agent_policy_max_tasks(job, cl);
    agent_decode_result res = {0};
    res.assign = malloc(sizeof *res.assign * (size_t)job->n_layers);
    res.task_node = place ? malloc(sizeof *res.task_node * (size_t)(max_tasks + 1)) : NULL;
    res.plan = model_plan_create(job->n_layers);
    if (!res.assign || !res.plan || (place && !res.task_node)) {
        set_note(r, "out of memory");
        goto done;
    }
    char err[512] = "";
    double t0 = clock_now_s();
    int rc = agent_policy_decode(x->policies[mi], job, cl, &o, &res, err, sizeof err);
    r->seconds = clock_now_s() - t0;
    if (rc == 0) {
        r->feasible = 1;
        plan_figures(r, res.plan);
        if (res.anchored)
            set_note(r, "dead end: the first %d of %d layers from %s's plan, the rest decoded",
                     res.anchored, job->n_layers, solve_method_name((solve_method)res.anchor_method));
        r->plan_cost = res.plan->cost;
        if (res.plan->placed) { /* the plan's own cost, before placement */
            model_plan *p2 = model_plan_create(job->n_layers);
            if (p2 && model_eval(job, cl, res.assign, p2) == MODEL_FEASIBLE)
                r->plan_cost = p2->cost;
            model_plan_free(p2);
        }
    } else if (rc < 0) {
        set_note(r, "%s", err);
    } else {
        if (res.plan->placed) plan_figures(r, res.plan);
        set_note(r, "%s", res.plan->why);
    }
done:
    free(res.assign);
    free(res.task_node);
    model_plan_free(res.plan);
}

/* Coach: the true throughput of w workers and p ps tasks of the job as one
 * stage on type t, placed by `truth` and scored by place_eval (0 when the
 * tasks do not fit the nodes). */
typedef struct {
    const model_job *job; /* with R lowered so that any placement is accepted */
    const model_cluster *cl;
    int type, W, P;
    model_stage base; /* the one stage over every layer */
    model_plan *plan, *out;
    int *task_node;
    double *f; /* [W * P] cache, -1 = not computed */
    int truth;
} coach_truth;

static double truth_at(coach_truth *c, int w, int p) {
    double *slot = &c->f[(w - 1) * c->P + (p - 1)];
    if (*slot >= 0) return *slot;
    model_stage *st = &c->plan->stages[0];
    *st = c->base;
    st->units = w;
    st->n_ps = p;
    st->throughput = model_stage_throughput(st->step, c->job->batch, w,
                                            model_stage_alpha(c->job, p));
    c->plan->n_stages = 1;
    c->plan->reason = MODEL_FEASIBLE;
    c->plan->throughput = st->throughput;
    c->plan->unit_price = w * c->cl->types[c->type].price;
    char err[256];
    int rc = placer_run(c->job, c->cl, c->plan, (placer_method)c->truth, 1, c->task_node,
                        c->out, err, sizeof err);
    *slot = rc == PLACER_OK || rc == PLACER_SLOW ? c->out->throughput : 0.0;
    return *slot;
}

static void cell_fit(run_ctx *x, const eval_method *m, eval_row *r) {
    const model_job *job0 = &x->inst[r->inst].run->jobs[r->job];
    const model_cluster *cl = &x->inst[r->inst].run->cluster;
    const inst_ref *ref = &x->refs[r->inst];
    model_job job = *job0;
    job.min_throughput = 1e-300; /* the truth accepts any placement */
    job.curve.fitted = 0;
    coach_truth c = {.job = &job, .cl = cl, .truth = m->truth};
    model_point *pts = NULL;
    int t = m->type[0] ? model_cluster_type(cl, m->type) : ref->homog_type;
    if (t < 0) {
        if (m->type[0]) set_note(r, "no type named '%s'", m->type);
        else set_note(r, "no homogeneous plan to take the type from");
        return;
    }
    if (cl->n_nodes == 0) {
        set_note(r, "the cluster lists no nodes to place tasks on");
        return;
    }
    c.type = t;
    model_stage_eval(&job, cl, t, 0, job.n_layers - 1, &c.base);
    if (c.base.mem > cl->types[t].mem) {
        set_note(r, "the job does not fit one %s unit's memory",
                 cl->types[t].name);
        return;
    }
    long slots = 0;
    for (int n = 0; n < cl->n_nodes; n++) slots += cl->nodes[n].ps_slots;
    c.W = cl->types[t].count < 1 ? 1 : cl->types[t].count > 256 ? 256 : cl->types[t].count;
    c.P = (int)(slots < m->max_ps ? slots : m->max_ps);
    if (c.P < 1) c.P = 1;
    c.plan = model_plan_create(1);
    c.out = model_plan_create(1);
    c.task_node = malloc(sizeof *c.task_node * (size_t)(c.W + c.P + 1));
    c.f = malloc(sizeof *c.f * (size_t)(c.W * c.P));
    pts = malloc(sizeof *pts * (size_t)(c.W * c.P));
    if (!c.plan || !c.out || !c.task_node || !c.f || !pts) {
        set_note(r, "out of memory");
        goto done;
    }
    for (int i = 0; i < c.W * c.P; i++) c.f[i] = -1.0;
    const double R = job0->min_throughput, price = cl->types[t].price;
    /* the oracle: least worker-seconds per sample among (w, p) reaching R */
    int bw = 0, bp = 0;
    double best = INFINITY;
    for (int w = 1; w <= c.W; w++)
        for (int p = 1; p <= c.P; p++) {
            double f = truth_at(&c, w, p);
            if (f >= R && w / f < best) {
                best = w / f;
                bw = w;
                bp = p;
            }
        }
    if (bw > 0) r->reference = job0->samples * best * price / 3600.0;
    /* the measurements: `points` distinct (w, p) drawn from the seed */
    eval_rng g;
    eval_rng_seed(&g, r->seed, 0xC0AC4ULL + (uint64_t)r->inst * 1009u + (uint64_t)r->job);
    int n = 0, want = m->points < c.W * c.P ? m->points : c.W * c.P;
    int *order = malloc(sizeof *order * (size_t)(c.W * c.P));
    if (!order) {
        set_note(r, "out of memory");
        goto done;
    }
    for (int i = 0; i < c.W * c.P; i++) order[i] = i;
    for (int i = 0; i < c.W * c.P && n < want; i++) {
        int j = eval_rng_int(&g, i, c.W * c.P - 1), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
        int w = order[i] / c.P + 1, p = order[i] % c.P + 1;
        double f = truth_at(&c, w, p);
        double u = eval_rng_range(&g, -1.0, 1.0);
        if (f > 0) pts[n++] = (model_point){w, p, f * (1.0 + m->noise * u)};
    }
    free(order);
    double t0 = clock_now_s();
    int pw = 0, pp = 0;
    char err[256] = "";
    if (m->fit == EVAL_FIT_CURVE) {
        fit_result fr;
        if (fit_curve(pts, n, &fr, err, sizeof err) == 0) {
            fit_pick pk;
            fit_best(&fr.curve, R, c.W, c.P, 0, &pk);
            if (pk.found) {
                pw = pk.workers;
                pp = pk.ps;
            } else {
                snprintf(err, sizeof err, "the fitted curve reaches the target nowhere");
            }
        }
    } else {
        double least = INFINITY;
        for (int i = 0; i < n; i++)
            if (pts[i].throughput >= R && pts[i].workers / pts[i].throughput < least) {
                least = pts[i].workers / pts[i].throughput;
                pw = pts[i].workers;
                pp = pts[i].ps;
            }
        if (pw == 0) snprintf(err, sizeof err, "no measured point reaches the target");
    }
    r->seconds = clock_now_s() - t0;
    if (pw == 0) {
        set_note(r, "%s; %d points on %s%s", err, n, cl->types[t].name,
                 bw ? "" : "; no (workers, ps) reaches R at all");
        goto done;
    }
    double f = truth_at(&c, pw, pp);
    r->throughput = f;
    if (f > 0) {
        r->time = job0->samples / f;
        r->cost = r->time / 3600.0 * pw * price;
        r->value = r->cost;
    }
    r->feasible = f >= R;
    set_note(r, "pick %d workers %d ps on %s; truly best %d workers %d ps%s",
             pw, pp, cl->types[t].name, bw, bp, r->feasible ? "" : "; the pick misses R");
done:
    free(pts);
    free(c.f);
    free(c.task_node);
    model_plan_free(c.plan);
    model_plan_free(c.out);
}

static void cell_multi(run_ctx *x, const eval_method *m, eval_row *r) {
    const cfg_run *run = x->inst[r->inst].run;
    const model_cluster *cl = &run->cluster;
    r->objective = EVAL_OBJ_JCT;
    multi_opts o;
    multi_opts_default(&o);
    o.plan.budget_ms = budget_ms(m->budget_s);
    o.plan.max_evals = m->evals;
    multi_cands *c = multi_cands_create(run->n_jobs, cl->n_types);
    multi_result *seq = multi_result_create(run->n_jobs);
    multi_result *smd = multi_result_create(run->n_jobs);
    multi_result *brute = multi_result_create(run->n_jobs);
    char err[512] = "";
    if (!c || !seq || !smd || !brute) {
        set_note(r, "out of memory");
        goto done;
    }
    double t0 = clock_now_s();
    if (multi_candidates(c, run->jobs, run->n_jobs, cl, &o, err, sizeof err) < 0 ||
        multi_sequential(run->jobs, run->n_jobs, cl, &o, c, seq, err, sizeof err) < 0) {
        set_note(r, "%s", err);
        goto done;
    }
    const multi_result *res = seq;
    if (m->multi == EVAL_MULTI_SMD) {
        pthread_mutex_lock(&glpk_lock);
        int rc = multi_smd(run->jobs, cl, c, seq, &o, smd, err, sizeof err);
        pthread_mutex_unlock(&glpk_lock);
        if (rc < 0) {
            set_note(r, "%s", err);
            goto done;
        }
        res = smd;
    }
    r->seconds = clock_now_s() - t0;
    if (multi_brute(run->jobs, cl, c, MULTI_MAX_COMBOS, brute) == 0 && brute->feasible)
        r->reference = brute->sum_time;
    r->feasible = res->feasible;
    if (res->feasible) {
        r->cost = res->cost;
        r->time = res->sum_time;
        r->value = res->sum_time;
        if (m->multi == EVAL_MULTI_SMD)
            set_note(r, "%d knapsacks%s%s", res->iterations,
                     res->fixed_point ? ", fixed point" : "",
                     res->improved_by_check ? ", improved by the check" : "");
    } else {
        set_note(r, "%s", res->why);
    }
done:
    multi_cands_free(c);
    multi_result_free(seq);
    multi_result_free(smd);
    multi_result_free(brute);
}

/* run_cell runs cell i once into *r. */
static void run_cell(run_ctx *x, const eval_row *proto, eval_row *r) {
    *r = *proto;
    row_blank(r);
    const eval_method *m = &x->spec->methods[r->method];
    switch (m->family) {
    case EVAL_FAM_PLAN: cell_plan(x, m, r); break;
    case EVAL_FAM_PLACE: cell_place(x, m, r); break;
    case EVAL_FAM_POLICY: cell_policy(x, r->method, m, r); break;
    case EVAL_FAM_FIT: cell_fit(x, m, r); break;
    case EVAL_FAM_MULTI: cell_multi(x, m, r); break;
    }
    double judged = r->value; /* what the gap judges */
    if (m->family != EVAL_FAM_FIT && m->family != EVAL_FAM_MULTI) {
        const inst_ref *ref = &x->refs[r->inst];
        judged = r->plan_cost;
        r->reference = ref->exact;
        r->homogeneous = ref->homogeneous;
        if (r->feasible && ref->homogeneous > 0 && isfinite(r->plan_cost))
            r->vs_homogeneous = r->plan_cost / ref->homogeneous;
        if (!ref->exact_optimal && !ref->exact_infeasible && r->note[0] == '\0')
            set_note(r, "no gap: exact did not finish within its budget");
    }
    if (r->feasible && r->reference > 0 && isfinite(judged))
        r->gap = judged / r->reference - 1.0;
}

static int same_num(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

int eval_row_same(const eval_row *a, const eval_row *b) {
    return a->inst == b->inst && a->job == b->job && a->method == b->method &&
           a->seed == b->seed && a->layers == b->layers && a->feasible == b->feasible &&
           a->objective == b->objective && same_num(a->cost, b->cost) &&
           same_num(a->throughput, b->throughput) && same_num(a->time, b->time) &&
           same_num(a->value, b->value) && same_num(a->plan_cost, b->plan_cost) &&
           same_num(a->reference, b->reference) &&
           same_num(a->gap, b->gap) && same_num(a->homogeneous, b->homogeneous) &&
           same_num(a->vs_homogeneous, b->vs_homogeneous) &&
           same_num(a->cross_node, b->cross_node) && same_num(a->cross_zone, b->cross_zone) &&
           !strcmp(a->note, b->note);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* task runs cell i `repeats` times: the first run's row, the median time. */
static void task_cell(run_ctx *x, int i) {
    eval_row *r = &x->rows[i];
    eval_row proto = *r;
    int reps = x->spec->repeats;
    double times[64];
    run_cell(x, &proto, r);
    times[0] = r->seconds;
    int n_times = 1, nondet = 0;
    for (int k = 1; k < reps; k++) {
        eval_row again;
        run_cell(x, &proto, &again);
        if (!eval_row_same(r, &again)) nondet = 1;
        if (n_times < 64) times[n_times++] = again.seconds;
    }
    if (n_times > 1) {
        qsort(times, (size_t)n_times, sizeof *times, cmp_double);
        r->seconds = times[n_times / 2];
    }
    if (nondet) {
        char note[sizeof r->note];
        memcpy(note, r->note, sizeof note);
        set_note(r, "NONDETERMINISTIC over %d repeats; %s", reps, note);
    }
}

static void *worker(void *arg) {
    run_ctx *x = arg;
    for (;;) {
        pthread_mutex_lock(&x->lock);
        int i = x->next < x->total ? x->next++ : -1;
        if (i >= x->n_refs)
            while (x->refs_done < x->n_refs) pthread_cond_wait(&x->refs_done_cv, &x->lock);
        pthread_mutex_unlock(&x->lock);
        if (i < 0) {
#ifdef STRATA_HAVE_GLPK
            pthread_mutex_lock(&glpk_lock);
            glp_free_env();
            pthread_mutex_unlock(&glpk_lock);
#endif
            return NULL;
        }
        if (i < x->n_refs) run_ref(x, x->ref_task[i]);
        else task_cell(x, i - x->n_refs);
        pthread_mutex_lock(&x->lock);
        x->done++;
        if (i < x->n_refs && ++x->refs_done == x->n_refs)
            pthread_cond_broadcast(&x->refs_done_cv);
        if (x->opts && x->opts->progress) x->opts->progress(x->opts->user, x->done, x->total);
        pthread_mutex_unlock(&x->lock);
    }
}

/* applies: whether method m runs on instance in. */
static int applies(const eval_method *m, const eval_instance *in) {
    int several = in->run->n_jobs > 1;
    return m->family == EVAL_FAM_MULTI ? several : !several;
}

int eval_run(const eval_spec *spec, const eval_instance *inst, int n_inst,
             const eval_run_opts *opts, eval_row **rows_out, int *n_rows, char *err,
             size_t errlen) {
    run_ctx x;
    memset(&x, 0, sizeof x);
    x.spec = spec;
    x.inst = inst;
    x.n_inst = n_inst;
    x.opts = opts;
    *rows_out = NULL;
    *n_rows = 0;
    int rc = -1;
    x.policies = calloc((size_t)spec->n_methods, sizeof *x.policies);
    x.refs = calloc((size_t)(n_inst > 0 ? n_inst : 1), sizeof *x.refs);
    x.ref_task = calloc((size_t)(n_inst > 0 ? n_inst : 1), sizeof *x.ref_task);
    if (!x.policies || !x.refs || !x.ref_task) goto oom;
    for (int m = 0; m < spec->n_methods; m++) {
        const eval_method *me = &spec->methods[m];
        if (me->family != EVAL_FAM_POLICY) continue;
        for (int k = 0; k < m && !x.policies[m]; k++) /* one load per checkpoint */
            if (spec->methods[k].family == EVAL_FAM_POLICY &&
                !strcmp(spec->methods[k].checkpoint, me->checkpoint))
                x.policies[m] = x.policies[k];
        if (x.policies[m]) continue;
        char msg[1024];
        if (!(x.policies[m] = agent_policy_load(me->checkpoint, msg, sizeof msg))) {
            snprintf(err, errlen, "%s: method %s: %s", spec->path, me->name, msg);
            goto done;
        }
    }
    /* the cells, in output order: instance, job, method, seed */
    int cap = 0;
    for (int i = 0; i < n_inst; i++) {
        int single = inst[i].run->n_jobs == 1;
        if (single) x.ref_task[x.n_refs++] = i;
        for (int m = 0; m < spec->n_methods; m++)
            if (applies(&spec->methods[m], &inst[i])) cap += spec->n_seeds;
    }
    x.rows = calloc((size_t)(cap > 0 ? cap : 1), sizeof *x.rows);
    if (!x.rows) goto oom;
    for (int i = 0; i < n_inst; i++) {
        int L = 0;
        for (int j = 0; j < inst[i].run->n_jobs; j++) L += inst[i].run->jobs[j].n_layers;
        for (int m = 0; m < spec->n_methods; m++) {
            if (!applies(&spec->methods[m], &inst[i])) continue;
            for (int s = 0; s < spec->n_seeds; s++) {
                eval_row *r = &x.rows[x.n_cells++];
                r->inst = i;
                r->job = spec->methods[m].family == EVAL_FAM_MULTI ? -1 : 0;
                r->method = m;
                r->seed_idx = s;
                r->seed = spec->seeds[s];
                r->layers = L;
                row_blank(r);
            }
        }
    }
    x.total = x.n_refs + x.n_cells;
    pthread_mutex_init(&x.lock, NULL);
    pthread_cond_init(&x.refs_done_cv, NULL);
    int nt = opts && opts->jobs > 1 ? opts->jobs : 1;
    if (nt > 256) nt = 256;
    pthread_t th[256];
    int started = 0;
    for (int k = 1; k < nt; k++) {
        if (pthread_create(&th[started], NULL, worker, &x) != 0) break;
        started++;
    }
    worker(&x); /* the calling thread works too */
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    pthread_cond_destroy(&x.refs_done_cv);
    pthread_mutex_destroy(&x.lock);
    *rows_out = x.rows;
    *n_rows = x.n_cells;
    x.rows = NULL;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    for (int m = 0; x.policies && m < spec->n_methods; m++) {
        int shared = 0;
        for (int k = 0; k < m; k++) shared |= x.policies[k] == x.policies[m];
        if (!shared) agent_policy_free(x.policies[m]);
    }
    free(x.policies);
    free(x.refs);
    free(x.ref_task);
    free(x.rows);
    return rc;
}
