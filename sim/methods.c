/* methods.c -- the heuristics of strata simulate behind the sim_method
 * table (see methods.h and docs/simulate.md).
 *
 * Every method reads the queue in arrival order and the free units, and
 * starts jobs through sim_start, which scores the plan with model_eval, so
 * the throughput, time and cost of a started job are the cost model's.
 * What each keeps between instants: fcfs and exact-wait nothing (the
 * simulator caches the plans); smd each class's candidate plans; gavel
 * each class's one-type plans; sjf a buffer to sort the queue in.
 */
#include "sim/methods.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/spolicy.h"
#include "solvers/multi.h"
#include "solvers/solve.h"

/* ---------------------------------------------------------------------------
 * fcfs and exact-wait: head-of-line order
 * ------------------------------------------------------------------------ */

static int fcfs_schedule(sim *s, void *state, char *err, size_t errlen) {
    (void)state;
    while (sim_queue_len(s) > 0) {
        int j = sim_queue_at(s, 0);
        const int *as;
        int rc = sim_plan_free_now(s, j, &as, err, errlen);
        if (rc < 0) return -1;
        if (rc != 0) break;
        rc = sim_start(s, j, as, 0);
        if (rc == -2) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (rc) break;
    }
    return 0;
}

static int wait_schedule(sim *s, void *state, char *err, size_t errlen) {
    (void)state;
    while (sim_queue_len(s) > 0) {
        int j = sim_queue_at(s, 0);
        const int *as;
        const model_plan *p = sim_empty_plan(s, j, &as);
        if (!p || !sim_fits(s, p)) break;
        int rc = sim_start(s, j, as, 0);
        if (rc == -2) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (rc) break;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * smd: SMD over a window of the queue
 * ------------------------------------------------------------------------ */

typedef struct {
    multi_opts o;
    multi_cands **cls; /* [classes] one-job candidate sets, built on first use */
    int n_cls;
    long tried_version; /* free units and window of the last attempt that started nothing */
    int tried_window[SIM_SMD_WINDOW];
    int tried_n;
    model_job jobs[SIM_SMD_WINDOW];
} smd_state;

static void smd_destroy(void *state) {
    smd_state *st = state;
    if (!st) return;
    for (int c = 0; c < st->n_cls; c++) multi_cands_free(st->cls[c]);
    free(st->cls);
    free(st);
}

static int smd_create(sim *s, void **state, char *err, size_t errlen) {
    smd_state *st = calloc(1, sizeof *st);
    if (!st) goto oom;
    multi_opts_default(&st->o);
    /* R x 1 .. x2.5 (7 targets) on the cluster and without each type:
     * enough spread for the queue's few jobs, cheap to build per class */
    st->o.max_factors = 7;
    st->o.max_iter = 20;
    st->n_cls = sim_cache_classes(s);
    st->cls = calloc((size_t)(st->n_cls ? st->n_cls : 1), sizeof *st->cls);
    if (!st->cls) goto oom;
    st->tried_version = -1;
    *state = st;
    return 0;
oom:
    smd_destroy(st);
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* class_cands returns job j's class candidates (built on the full cluster
 * on first use), or NULL with err. */
static multi_cands *class_cands(sim *s, smd_state *st, int j, char *err, size_t errlen) {
    int c = sim_cache_key(s, j);
    if (st->cls[c]) return st->cls[c];
    const model_cluster *full = sim_full(s);
    multi_cands *mc = multi_cands_create(1, full->n_types);
    if (!mc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (multi_candidates(mc, sim_job_of(s, j), 1, full, &st->o, err, errlen)) {
        multi_cands_free(mc);
        return NULL;
    }
    /* the exact plan on the empty cluster, which every queued job has */
    const int *as;
    if (sim_empty_plan(s, j, &as) &&
        multi_cands_add(mc, 0, sim_job_of(s, j), full, as, sim_job_of(s, j)->min_throughput,
                        "exact") == -2) {
        multi_cands_free(mc);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    st->cls[c] = mc;
    return mc;
}

/* fits_alone returns 1 when some candidate of mc fits the free units. */
static int fits_alone(const multi_cands *mc, const model_cluster *fr, long *min_total) {
    int any = 0;
    *min_total = -1;
    for (int k = 0; k < mc->count[0]; k++) {
        const multi_cand *cd = &mc->cand[0][k];
        int ok = 1;
        long tot = 0;
        for (int ty = 0; ty < fr->n_types; ty++) {
            ok &= cd->units[ty] <= fr->types[ty].count;
            tot += cd->units[ty];
        }
        if (*min_total < 0 || tot < *min_total) *min_total = tot;
        any |= ok;
    }
    return any;
}

/* smd_try runs SMD on the first m queued jobs. Returns 1 when they all
 * started, 0 when they do not fit together, -1 with err. */
static int smd_try(sim *s, smd_state *st, int m, char *err, size_t errlen) {
    const model_cluster *full = sim_full(s);
    multi_cands *win = multi_cands_create(m, full->n_types);
    multi_result *res = multi_result_create(m);
    int rc = -1;
    if (!win || !res) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < m; i++) {
        int j = sim_queue_at(s, i);
        st->jobs[i] = *sim_job_of(s, j);
        const multi_cands *mc = st->cls[sim_cache_key(s, j)];
        for (int k = 0; k < mc->count[0]; k++) {
            const multi_cand *cd = &mc->cand[0][k];
            if (multi_cands_add(win, i, &st->jobs[i], full, cd->assign, cd->target, cd->origin) ==
                -2) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
        }
    }
    if (multi_smd(st->jobs, sim_free_units(s), win, NULL, &st->o, res, err, errlen)) goto out;
    if (!res->feasible) {
        rc = 0;
        goto out;
    }
    int ids[SIM_SMD_WINDOW];
    for (int i = 0; i < m; i++) ids[i] = sim_queue_at(s, i);
    for (int i = 0; i < m; i++) {
        int r = sim_start(s, ids[i], res->plan[i].assign, res->plan[i].target);
        if (r) {
            snprintf(err, errlen, "smd: job %s: its plan could not start (%s)",
                     sim_job_of(s, ids[i])->name, r == -2 ? "out of memory" : "units taken");
            goto out;
        }
    }
    rc = 1;
out:
    multi_cands_free(win);
    multi_result_free(res);
    return rc;
}

static int smd_schedule(sim *s, void *state, char *err, size_t errlen) {
    smd_state *st = state;
    for (;;) {
        int w = sim_queue_len(s);
        if (w > SIM_SMD_WINDOW) w = SIM_SMD_WINDOW;
        if (w == 0) return 0;
        /* nothing changed since an attempt that started nothing */
        int same = st->tried_version == sim_version(s) && st->tried_n == w;
        for (int i = 0; same && i < w; i++) same = st->tried_window[i] == sim_queue_at(s, i);
        if (same) return 0;
        /* the prefix whose jobs each fit alone and together by unit count */
        const model_cluster *fr = sim_free_units(s);
        long free_total = 0, need = 0;
        for (int ty = 0; ty < fr->n_types; ty++) free_total += fr->types[ty].count;
        int m = 0;
        for (; m < w; m++) {
            multi_cands *mc = class_cands(s, st, sim_queue_at(s, m), err, errlen);
            if (!mc) return -1;
            long mt;
            if (!fits_alone(mc, fr, &mt)) break;
            if (need + mt > free_total) break;
            need += mt;
        }
        int started = 0;
        for (; m >= 1 && !started; m--) {
            int r = smd_try(s, st, m, err, errlen);
            if (r < 0) return -1;
            started = r;
        }
        if (!started) {
            st->tried_version = sim_version(s);
            st->tried_n = w;
            for (int i = 0; i < w; i++) st->tried_window[i] = sim_queue_at(s, i);
            return 0;
        }
    }
}

/* ---------------------------------------------------------------------------
 * gavel: heterogeneity-aware max-min fairness, whole units, no preemption
 * ------------------------------------------------------------------------ */

#define GAVEL_SCAN 64 /* queued jobs looked at per instant */

typedef struct {
    int ready;
    int units[MODEL_MAX_TYPES]; /* units of the one-type plan on t, 0: none */
    double rho[MODEL_MAX_TYPES]; /* per-unit throughput / the best type's */
    double price[MODEL_MAX_TYPES]; /* $/h of that plan */
} gavel_class;

typedef struct {
    gavel_class *cls;
    int *assign;
    model_plan *plan;
} gavel_state;

static void gavel_destroy(void *state) {
    gavel_state *st = state;
    if (!st) return;
    free(st->cls);
    free(st->assign);
    model_plan_free(st->plan);
    free(st);
}

static int gavel_create(sim *s, void **state, char *err, size_t errlen) {
    gavel_state *st = calloc(1, sizeof *st);
    int layers = 1;
    const sim_trace *t = sim_get_trace(s);
    for (int j = 0; j < t->n_jobs; j++)
        if (sim_job_of(s, j)->n_layers > layers) layers = sim_job_of(s, j)->n_layers;
    if (!st || !(st->cls = calloc((size_t)sim_cache_classes(s) + 1, sizeof *st->cls)) ||
        !(st->assign = malloc(sizeof *st->assign * (size_t)layers)) ||
        !(st->plan = model_plan_create(layers))) {
        gavel_destroy(st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *state = st;
    return 0;
}

/* gavel_class_of fills job j's class: the one-type plan on every type at
 * its target (Gavel's throughput matrix), normalised by its best type. */
static const gavel_class *gavel_class_of(sim *s, gavel_state *st, int j) {
    gavel_class *gc = &st->cls[sim_cache_key(s, j)];
    if (gc->ready) return gc;
    const model_job *job = sim_job_of(s, j);
    const model_cluster *full = sim_full(s);
    double speed[MODEL_MAX_TYPES] = {0}, best = 0;
    for (int ty = 0; ty < full->n_types; ty++) {
        for (int l = 0; l < job->n_layers; l++) st->assign[l] = ty;
        if (model_eval(job, full, st->assign, st->plan) != MODEL_FEASIBLE) continue;
        gc->units[ty] = st->plan->stages[0].units;
        gc->price[ty] = st->plan->unit_price;
        speed[ty] = st->plan->throughput / gc->units[ty];
        if (speed[ty] > best) best = speed[ty];
    }
    for (int ty = 0; ty < full->n_types; ty++) gc->rho[ty] = best > 0 ? speed[ty] / best : 0;
    gc->ready = 1;
    return gc;
}

static int gavel_schedule(sim *s, void *state, char *err, size_t errlen) {
    gavel_state *st = state;
    const model_cluster *fr = sim_free_units(s);
    for (;;) {
        int n = sim_queue_len(s);
        if (n > GAVEL_SCAN) n = GAVEL_SCAN;
        int pick = -1, pick_type = -1;
        double pick_rho = INFINITY;
        for (int i = 0; i < n; i++) {
            int j = sim_queue_at(s, i);
            const gavel_class *gc = gavel_class_of(s, st, j);
            int bt = -1;
            for (int ty = 0; ty < fr->n_types; ty++) {
                if (!gc->units[ty] || gc->units[ty] > fr->types[ty].count) continue;
                if (bt < 0 || gc->rho[ty] > gc->rho[bt] ||
                    (gc->rho[ty] == gc->rho[bt] && gc->price[ty] < gc->price[bt]))
                    bt = ty;
            }
            if (bt < 0) continue;
            /* max-min: the job whose best option is the poorest goes first */
            if (gc->rho[bt] < pick_rho) {
                pick = j;
                pick_type = bt;
                pick_rho = gc->rho[bt];
            }
        }
        if (pick < 0) return 0;
        const model_job *job = sim_job_of(s, pick);
        for (int l = 0; l < job->n_layers; l++) st->assign[l] = pick_type;
        int rc = sim_start(s, pick, st->assign, 0);
        if (rc) {
            snprintf(err, errlen, "gavel: job %s could not start (%s)", job->name,
                     rc == -2 ? "out of memory" : "units taken");
            return -1;
        }
    }
}

/* ---------------------------------------------------------------------------
 * sjf: shortest expected job first, with backfilling
 * ------------------------------------------------------------------------ */

typedef struct {
    double dur; /* samples / target: the job's run time at exactly its target */
    int pos;    /* queue position: ties go by arrival */
    int j;
} sjf_key;

typedef struct {
    sjf_key *keys; /* [jobs of the trace], the queue's order this instant */
} sjf_state;

static void sjf_destroy(void *state) {
    sjf_state *st = state;
    if (!st) return;
    free(st->keys);
    free(st);
}

static int sjf_create(sim *s, void **state, char *err, size_t errlen) {
    sjf_state *st = calloc(1, sizeof *st);
    int n = sim_get_trace(s)->n_jobs;
    if (!st || !(st->keys = malloc(sizeof *st->keys * (size_t)(n > 0 ? n : 1)))) {
        sjf_destroy(st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *state = st;
    return 0;
}

static int sjf_cmp(const void *a, const void *b) {
    const sjf_key *x = a, *y = b;
    if (x->dur != y->dur) return x->dur < y->dur ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* sjf_schedule orders the whole queue by expected duration at target
 * (samples / target; ties by arrival) and gives each job in that order
 * the exact plan on the units free now, when one fits. A job that does not
 * fit is passed over (backfilling): it does not hold back the longer jobs
 * behind it. One pass suffices: free units only shrink within an instant,
 * so a job passed over cannot fit later in the same instant. */
static int sjf_schedule(sim *s, void *state, char *err, size_t errlen) {
    sjf_state *st = state;
    int n = sim_queue_len(s);
    for (int i = 0; i < n; i++) {
        int j = sim_queue_at(s, i);
        const model_job *job = sim_job_of(s, j);
        st->keys[i] = (sjf_key){job->samples / job->min_throughput, i, j};
    }
    qsort(st->keys, (size_t)n, sizeof *st->keys, sjf_cmp);
    const model_cluster *fr = sim_free_units(s);
    for (int i = 0; i < n; i++) {
        long free_total = 0;
        for (int ty = 0; ty < fr->n_types; ty++) free_total += fr->types[ty].count;
        if (free_total <= 0) break;
        const int *as;
        int rc = sim_plan_free_now(s, st->keys[i].j, &as, err, errlen);
        if (rc < 0) return -1;
        if (rc != 0) continue;
        rc = sim_start(s, st->keys[i].j, as, 0);
        if (rc == -2) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (rc) {
            snprintf(err, errlen, "sjf: job %s: its plan could not start (units taken)",
                     sim_job_of(s, st->keys[i].j)->name);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------ */

static const sim_method METHODS[] = {
    {"fcfs", "first come, first served: the exact plan on the free units, head of line", NULL,
     NULL, fcfs_schedule},
    {"exact-wait", "the exact plan on the empty cluster, waiting until its units are free", NULL,
     NULL, wait_schedule},
    {"smd", "SMD over the first queued jobs: least sum of completion times (solvers/multi)",
     smd_create, smd_destroy, smd_schedule},
    {"gavel", "Gavel-style heterogeneity-aware max-min fairness over normalised throughput",
     gavel_create, gavel_destroy, gavel_schedule},
    {"sjf", "shortest job first: by run time at target, exact plan on the free units, backfilling",
     sjf_create, sjf_destroy, sjf_schedule},
    {"policy", "the learned policy (sim/spolicy.h): a trained network picks a plan or waits",
     spol_method_create, spol_method_destroy, spol_method_schedule},
};

const sim_method *sim_methods(int *n) {
    *n = (int)(sizeof METHODS / sizeof *METHODS);
    return METHODS;
}

const sim_method *sim_method_find(const char *name) {
    for (size_t i = 0; i < sizeof METHODS / sizeof *METHODS; i++)
        if (!strcmp(METHODS[i].name, name)) return &METHODS[i];
    return NULL;
}
