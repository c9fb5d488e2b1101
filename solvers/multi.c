/* multi.c -- sequential and SMD allocation of units among several jobs.
 *
 * Candidates are scored by model_eval on the full cluster with the job's
 * target raised to the candidate's own R', so a candidate's units and
 * throughput do not depend on which other jobs run; only the knapsack rows
 * (units per type within the counts) tie the jobs together.
 *
 * The knapsack -- one candidate per job, capacity per type, a linear value
 * per candidate -- is a 0-1 program given to GLPK's branch and cut
 * (glp_intopt, presolver on, output off). It is small: a few jobs times a
 * few dozen candidates.
 */
#include "solvers/multi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRATA_HAVE_GLPK
#include <glpk.h>
#endif

static const double FACTORS[] = {1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6,
                                 8, 10, 12, 16, 20, 25, 32, 40, 50, 64};
#define N_FACTORS ((int)(sizeof FACTORS / sizeof *FACTORS))

void multi_opts_default(multi_opts *o) {
    solve_opts_default(&o->plan);
    o->plan.budget_ms = 2000;
    o->max_factors = N_FACTORS;
    o->exclude_types = 1;
    o->max_iter = 50;
}

/* ---------------------------------------------------------------------------
 * Candidate sets
 * ------------------------------------------------------------------------ */

multi_cands *multi_cands_create(int n_jobs, int n_types) {
    multi_cands *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_jobs = n_jobs;
    c->n_types = n_types;
    c->count = calloc((size_t)(n_jobs > 0 ? n_jobs : 1), sizeof *c->count);
    c->cap = calloc((size_t)(n_jobs > 0 ? n_jobs : 1), sizeof *c->cap);
    c->cand = calloc((size_t)(n_jobs > 0 ? n_jobs : 1), sizeof *c->cand);
    if (!c->count || !c->cap || !c->cand || n_types > MODEL_MAX_TYPES) {
        multi_cands_free(c);
        return NULL;
    }
    return c;
}

void multi_cands_free(multi_cands *c) {
    if (!c) return;
    for (int j = 0; c->cand && j < c->n_jobs; j++) {
        for (int k = 0; k < c->count[j]; k++) free(c->cand[j][k].assign);
        free(c->cand[j]);
    }
    free(c->cand);
    free(c->count);
    free(c->cap);
    free(c);
}

static int same_rel(double a, double b) {
    return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int multi_cands_add(multi_cands *c, int j, const model_job *job, const model_cluster *cl,
                    const int *assign, double target, const char *origin) {
    model_job jb = *job;
    jb.min_throughput = target;
    model_plan *p = model_plan_create(job->n_layers);
    if (!p) return -2;
    int rc = model_eval(&jb, cl, assign, p);
    if (rc != MODEL_FEASIBLE) {
        model_plan_free(p);
        return -1;
    }
    long units[MODEL_MAX_TYPES] = {0};
    for (int s = 0; s < p->n_stages; s++) units[p->stages[s].type] += p->stages[s].units;
    for (int k = 0; k < c->count[j]; k++) {
        const multi_cand *o = &c->cand[j][k];
        if (!same_rel(o->throughput, p->throughput)) continue;
        if (!memcmp(o->units, units, (size_t)c->n_types * sizeof *units)) {
            model_plan_free(p);
            return k;
        }
    }
    if (c->count[j] == c->cap[j]) {
        int cap = c->cap[j] ? 2 * c->cap[j] : 16;
        multi_cand *grown = realloc(c->cand[j], (size_t)cap * sizeof *grown);
        if (!grown) {
            model_plan_free(p);
            return -2;
        }
        c->cand[j] = grown;
        c->cap[j] = cap;
    }
    multi_cand *m = &c->cand[j][c->count[j]];
    memset(m, 0, sizeof *m);
    m->assign = malloc((size_t)job->n_layers * sizeof *m->assign);
    if (!m->assign) {
        model_plan_free(p);
        return -2;
    }
    memcpy(m->assign, assign, (size_t)job->n_layers * sizeof *assign);
    memcpy(m->units, units, sizeof units);
    m->target = target;
    m->throughput = p->throughput;
    m->time = p->time;
    m->cost = p->cost;
    snprintf(m->origin, sizeof m->origin, "%s", origin);
    model_plan_free(p);
    return c->count[j]++;
}

int multi_candidates(multi_cands *c, const model_job *jobs, int n_jobs,
                     const model_cluster *cl, const multi_opts *o, char *err, size_t errlen) {
    int nf = o->max_factors > 0 && o->max_factors < N_FACTORS ? o->max_factors : N_FACTORS;
    model_type types[MODEL_MAX_TYPES];
    model_cluster v = *cl;
    v.types = types;
    for (int j = 0; j < n_jobs; j++) {
        solve_result *res = solve_result_create(jobs[j].n_layers);
        if (!res) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (int ex = -1; ex < (o->exclude_types ? cl->n_types : 0); ex++) {
            memcpy(types, cl->types, (size_t)cl->n_types * sizeof *types);
            if (ex >= 0) {
                if (types[ex].count == 0) continue;
                types[ex].count = 0;
            }
            for (int f = 0; f < nf; f++) {
                model_job jb = jobs[j];
                jb.min_throughput = jobs[j].min_throughput * FACTORS[f];
                int rc = solve_run(&jb, &v, &o->plan, res);
                if (rc == SOLVE_ERROR) {
                    snprintf(err, errlen, "job %s: plan solver: %s", jobs[j].name, res->why);
                    solve_result_free(res);
                    return -1;
                }
                if (rc != 0) break; /* higher targets need at least as many units */
                char origin[32];
                if (ex >= 0)
                    snprintf(origin, sizeof origin, "R x%g no %.12s", FACTORS[f],
                             cl->types[ex].name);
                else
                    snprintf(origin, sizeof origin, "R x%g", FACTORS[f]);
                if (multi_cands_add(c, j, &jobs[j], cl, res->assign, jb.min_throughput,
                                    origin) == -2) {
                    snprintf(err, errlen, "out of memory");
                    solve_result_free(res);
                    return -1;
                }
            }
        }
        solve_result_free(res);
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------ */

multi_result *multi_result_create(int n_jobs) {
    multi_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->n_jobs = n_jobs;
    r->pick = malloc((size_t)(n_jobs > 0 ? n_jobs : 1) * sizeof *r->pick);
    r->plan = calloc((size_t)(n_jobs > 0 ? n_jobs : 1), sizeof *r->plan);
    if (!r->pick || !r->plan) {
        multi_result_free(r);
        return NULL;
    }
    for (int j = 0; j < n_jobs; j++) r->pick[j] = -1;
    return r;
}

void multi_result_free(multi_result *r) {
    if (!r) return;
    for (int j = 0; r->plan && j < r->n_jobs; j++) free(r->plan[j].assign);
    free(r->plan);
    free(r->pick);
    free(r);
}

/* Sets res to the choice pick[n_jobs] (-1: none) and its totals. Returns 0
 * or -1 out of memory. */
static int result_set(multi_result *res, const model_job *jobs, const multi_cands *c,
                      const int *pick) {
    res->feasible = 1;
    res->sum_time = 0.0;
    res->cost = 0.0;
    memset(res->units, 0, sizeof res->units);
    for (int j = 0; j < res->n_jobs; j++) {
        free(res->plan[j].assign);
        memset(&res->plan[j], 0, sizeof res->plan[j]);
        res->pick[j] = pick[j];
        if (pick[j] < 0) {
            res->feasible = 0;
            continue;
        }
        const multi_cand *m = &c->cand[j][pick[j]];
        res->plan[j] = *m;
        res->plan[j].assign = NULL;
        if (m->assign) {
            res->plan[j].assign = malloc((size_t)jobs[j].n_layers * sizeof(int));
            if (!res->plan[j].assign) return -1;
            memcpy(res->plan[j].assign, m->assign, (size_t)jobs[j].n_layers * sizeof(int));
        }
        res->sum_time += m->time;
        res->cost += m->cost;
        for (int t = 0; t < c->n_types; t++) res->units[t] += m->units[t];
    }
    if (!res->feasible) res->sum_time = INFINITY;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Sequential: first come, first served
 * ------------------------------------------------------------------------ */

int multi_sequential(const model_job *jobs, int n_jobs, const model_cluster *cl,
                     const multi_opts *o, multi_cands *c, multi_result *res, char *err,
                     size_t errlen) {
    model_type types[MODEL_MAX_TYPES];
    memcpy(types, cl->types, (size_t)cl->n_types * sizeof *types);
    model_cluster left = *cl;
    left.types = types;
    int *pick = malloc((size_t)(n_jobs > 0 ? n_jobs : 1) * sizeof *pick);
    if (!pick) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    res->why[0] = '\0';
    for (int j = 0; j < n_jobs; j++) {
        pick[j] = -1;
        solve_result *sr = solve_result_create(jobs[j].n_layers);
        if (!sr) {
            free(pick);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = solve_run(&jobs[j], &left, &o->plan, sr);
        if (rc == SOLVE_ERROR) {
            snprintf(err, errlen, "job %s: plan solver: %s", jobs[j].name, sr->why);
            solve_result_free(sr);
            free(pick);
            return -1;
        }
        if (rc == 0) {
            int k = multi_cands_add(c, j, &jobs[j], cl, sr->assign, jobs[j].min_throughput,
                                    "sequential");
            if (k == -2) {
                snprintf(err, errlen, "out of memory");
                solve_result_free(sr);
                free(pick);
                return -1;
            }
            pick[j] = k;
            if (k >= 0)
                for (int t = 0; t < cl->n_types; t++) types[t].count -= (int)c->cand[j][k].units[t];
        } else if (!res->why[0]) {
            snprintf(res->why, sizeof res->why, "job %.63s: no plan on the units the jobs before "
                     "it left: %.380s", jobs[j].name, sr->why);
        }
        solve_result_free(sr);
    }
    int rc = result_set(res, jobs, c, pick);
    free(pick);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The knapsack
 * ------------------------------------------------------------------------ */

/* mdk picks one candidate per job maximising sum value[j][k] within the
 * type counts. Returns 0 with pick[n_jobs], 1 when no choice fits, -1 with
 * err on a GLPK failure. */
static int mdk(const multi_cands *c, const model_cluster *cl, double *const *value, int *pick,
               char *err, size_t errlen) {
#ifdef STRATA_HAVE_GLPK
    int n = 0;
    for (int j = 0; j < c->n_jobs; j++) n += c->count[j];
    int nz = n * (1 + c->n_types);
    int *ia = malloc((size_t)(nz + 1) * 2 * sizeof *ia);
    double *ar = malloc((size_t)(nz + 1) * sizeof *ar);
    if (!ia || !ar) {
        free(ia);
        free(ar);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int *ja = ia + nz + 1;
    glp_prob *P = glp_create_prob();
    glp_set_obj_dir(P, GLP_MAX);
    glp_add_rows(P, c->n_jobs + c->n_types);
    for (int j = 0; j < c->n_jobs; j++) glp_set_row_bnds(P, j + 1, GLP_FX, 1.0, 1.0);
    for (int t = 0; t < c->n_types; t++)
        glp_set_row_bnds(P, c->n_jobs + t + 1, GLP_UP, 0.0, (double)cl->types[t].count);
    glp_add_cols(P, n);
    int col = 0, k = 0;
    for (int j = 0; j < c->n_jobs; j++)
        for (int q = 0; q < c->count[j]; q++) {
            col++;
            glp_set_col_kind(P, col, GLP_BV);
            glp_set_obj_coef(P, col, value[j][q]);
            ia[++k] = j + 1, ja[k] = col, ar[k] = 1.0;
            for (int t = 0; t < c->n_types; t++)
                if (c->cand[j][q].units[t] > 0)
                    ia[++k] = c->n_jobs + t + 1, ja[k] = col, ar[k] = (double)c->cand[j][q].units[t];
        }
    glp_load_matrix(P, k, ia, ja, ar);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    int rc = glp_intopt(P, &parm), out;
    int st = rc == 0 ? glp_mip_status(P) : 0;
    if (rc == GLP_ENOPFS || (rc == 0 && st == GLP_NOFEAS)) {
        out = 1;
    } else if (rc != 0 || st != GLP_OPT) {
        snprintf(err, errlen, "smd: GLPK's MIP solver failed (glp_intopt %d, status %d)", rc, st);
        out = -1;
    } else {
        col = 0;
        for (int j = 0; j < c->n_jobs; j++) {
            pick[j] = -1;
            for (int q = 0; q < c->count[j]; q++)
                if (glp_mip_col_val(P, ++col) > 0.5) pick[j] = q;
        }
        out = 0;
    }
    glp_delete_prob(P);
    free(ia);
    free(ar);
    return out;
#else
    (void)c, (void)cl, (void)value, (void)pick;
    snprintf(err, errlen, "smd: this build has no GLPK");
    return -1;
#endif
}

/* ---------------------------------------------------------------------------
 * SMD: the ratio-weight iteration
 * ------------------------------------------------------------------------ */

typedef struct {
    const model_job *jobs;
    const model_cluster *cl;
    const multi_cands *c;
    double **value; /* [n_jobs][count] scratch */
    int *pick;      /* [n_jobs] scratch */
    int *best;      /* [n_jobs] best choice so far */
    double best_f;  /* its sum of completion times */
    int knapsacks;
} smd_ctx;

static double choice_time(const smd_ctx *x, const int *pick) {
    double f = 0.0;
    for (int j = 0; j < x->c->n_jobs; j++) f += x->c->cand[j][pick[j]].time;
    return f;
}

/* Solves the knapsack at weights (beta, gamma) into x->pick and keeps the
 * best choice. Returns mdk's status. */
static int smd_step(smd_ctx *x, const double *beta, const double *gamma, char *err,
                    size_t errlen) {
    for (int j = 0; j < x->c->n_jobs; j++)
        for (int q = 0; q < x->c->count[j]; q++)
            x->value[j][q] = beta[j] * gamma[j] * x->c->cand[j][q].throughput;
    int rc = mdk(x->c, x->cl, x->value, x->pick, err, errlen);
    x->knapsacks++;
    if (rc == 0) {
        double f = choice_time(x, x->pick);
        if (f < x->best_f * (1.0 - 1e-12)) {
            x->best_f = f;
            memcpy(x->best, x->pick, (size_t)x->c->n_jobs * sizeof *x->pick);
        }
    }
    return rc;
}

/* Jong's residual psi at (beta, gamma) for the choice pick, in relative
 * terms: beta_j theta_j - 1 and gamma_j theta_j / S_j - 1. */
static double psi_norm(const smd_ctx *x, const double *beta, const double *gamma,
                       const int *pick) {
    double s = 0.0;
    for (int j = 0; j < x->c->n_jobs; j++) {
        double th = x->c->cand[j][pick[j]].throughput;
        double a = beta[j] * th - 1.0, b = gamma[j] * th / x->jobs[j].samples - 1.0;
        s += a * a + b * b;
    }
    return sqrt(s);
}

int multi_smd(const model_job *jobs, const model_cluster *cl, const multi_cands *c,
              const multi_result *start, const multi_opts *o, multi_result *res, char *err,
              size_t errlen) {
    int n = c->n_jobs, rc = -1;
    if (n < 1) {
        snprintf(err, errlen, "no jobs to allocate");
        return -1;
    }
    res->iterations = 0;
    res->fixed_point = 0;
    res->improved_by_check = 0;
    res->why[0] = '\0';
    for (int j = 0; j < n; j++)
        if (c->count[j] == 0) {
            snprintf(res->why, sizeof res->why, "job %s: no plan reaches its target %g "
                     "samples/s on the whole cluster", jobs[j].name, jobs[j].min_throughput);
            int *none = malloc((size_t)n * sizeof *none);
            int bad = !none;
            for (int q = 0; !bad && q < n; q++) none[q] = -1;
            if (!bad) bad = result_set(res, jobs, c, none) < 0;
            free(none);
            if (bad) snprintf(err, errlen, "out of memory");
            return bad ? -1 : 0;
        }
    smd_ctx x = {jobs, cl, c, NULL, NULL, NULL, INFINITY, 0};
    x.value = calloc((size_t)n, sizeof *x.value);
    x.pick = malloc((size_t)n * 3 * sizeof *x.pick);
    double *w = malloc((size_t)n * 6 * sizeof *w);
    if (!x.value || !x.pick || !w) goto oom;
    for (int j = 0; j < n; j++)
        if (!(x.value[j] = malloc((size_t)c->count[j] * sizeof **x.value))) goto oom;
    x.best = x.pick + n;
    int *cur = x.best + n;
    double *beta = w, *gamma = w + n, *nb = w + 2 * n, *ng = w + 3 * n;

    /* Start: the sequential choice when it is feasible, else each job's
     * candidate using fewest units. */
    if (start && start->feasible) {
        memcpy(cur, start->pick, (size_t)n * sizeof *cur);
        x.best_f = choice_time(&x, cur);
        memcpy(x.best, cur, (size_t)n * sizeof *cur);
    } else {
        for (int j = 0; j < n; j++) {
            cur[j] = 0;
            long least = -1;
            for (int q = 0; q < c->count[j]; q++) {
                long u = 0;
                for (int t = 0; t < c->n_types; t++) u += c->cand[j][q].units[t];
                if (least < 0 || u < least) least = u, cur[j] = q;
            }
        }
    }
    for (int j = 0; j < n; j++) {
        double th = c->cand[j][cur[j]].throughput;
        beta[j] = 1.0 / th;
        gamma[j] = jobs[j].samples / th;
    }
    int st = smd_step(&x, beta, gamma, err, errlen);
    if (st < 0) goto done;
    if (st == 1) {
        snprintf(res->why, sizeof res->why, "the jobs' plans cannot all run at once: every "
                 "choice of one plan per job needs more units of some type than are free");
        for (int j = 0; j < n; j++) x.pick[j] = -1;
        if (result_set(res, jobs, c, x.pick) < 0) goto oom;
        res->iterations = x.knapsacks;
        rc = 0;
        goto done;
    }
    memcpy(cur, x.pick, (size_t)n * sizeof *cur);
    int max_iter = o && o->max_iter > 0 ? o->max_iter : 50;
    double last_best = x.best_f;
    for (int it = 0, stall = 0; it < max_iter && stall < 10; it++) {
        /* Ten iterations without a better choice: the iteration cycles. */
        stall = x.best_f < last_best ? 0 : stall + 1;
        last_best = x.best_f;
        double norm = psi_norm(&x, beta, gamma, cur);
        if (norm < 1e-9) {
            res->fixed_point = 1;
            break;
        }
        /* Damped Newton step towards (1/theta, S/theta) of the current
         * choice: the largest lambda in 1, 1/2, 1/4, 1/8 whose knapsack
         * choice lowers the residual by the factor 1 - 0.1 lambda; the
         * last one tried otherwise. */
        double lambda = 1.0;
        for (int ls = 0; ls < 4; ls++, lambda *= 0.5) {
            for (int j = 0; j < n; j++) {
                double th = c->cand[j][cur[j]].throughput;
                nb[j] = beta[j] - lambda * (beta[j] - 1.0 / th);
                ng[j] = gamma[j] - lambda * (gamma[j] - jobs[j].samples / th);
            }
            if ((st = smd_step(&x, nb, ng, err, errlen)) < 0) goto done;
            if (psi_norm(&x, nb, ng, x.pick) <= (1.0 - 0.1 * lambda) * norm) break;
        }
        memcpy(beta, nb, (size_t)n * sizeof *beta);
        memcpy(gamma, ng, (size_t)n * sizeof *gamma);
        memcpy(cur, x.pick, (size_t)n * sizeof *cur);
    }
    if (!res->fixed_point && psi_norm(&x, beta, gamma, cur) < 1e-9) res->fixed_point = 1;
    res->iterations = x.knapsacks;

    /* The check: the knapsack with the true completion times. */
    for (int j = 0; j < n; j++)
        for (int q = 0; q < c->count[j]; q++) x.value[j][q] = -c->cand[j][q].time;
    if ((st = mdk(c, cl, x.value, x.pick, err, errlen)) < 0) goto done;
    double f = choice_time(&x, x.pick);
    if (f < x.best_f * (1.0 - 1e-9)) {
        x.best_f = f;
        memcpy(x.best, x.pick, (size_t)n * sizeof *x.pick);
        res->improved_by_check = 1;
    }
    if (result_set(res, jobs, c, x.best) < 0) goto oom;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    rc = -1;
done:
    if (x.value)
        for (int j = 0; j < n; j++) free(x.value[j]);
    free(x.value);
    free(x.pick);
    free(w);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Brute force (tests)
 * ------------------------------------------------------------------------ */

static void brute_rec(const multi_cands *c, const model_cluster *cl, int j, long *used,
                      double f, int *pick, int *best, double *best_f) {
    if (j == c->n_jobs) {
        if (f < *best_f) {
            *best_f = f;
            memcpy(best, pick, (size_t)c->n_jobs * sizeof *pick);
        }
        return;
    }
    for (int q = 0; q < c->count[j]; q++) {
        const multi_cand *m = &c->cand[j][q];
        int fits = 1;
        for (int t = 0; t < c->n_types; t++)
            if (used[t] + m->units[t] > cl->types[t].count) fits = 0;
        if (!fits) continue;
        for (int t = 0; t < c->n_types; t++) used[t] += m->units[t];
        pick[j] = q;
        brute_rec(c, cl, j + 1, used, f + m->time, pick, best, best_f);
        for (int t = 0; t < c->n_types; t++) used[t] -= m->units[t];
    }
}

int multi_brute(const model_job *jobs, const model_cluster *cl, const multi_cands *c,
                long max_combos, multi_result *res) {
    double combos = 1.0;
    for (int j = 0; j < c->n_jobs; j++) combos *= c->count[j];
    if (combos > (double)max_combos) return -1;
    int n = c->n_jobs;
    int *pick = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *pick);
    if (!pick) return -1;
    int *best = pick + n;
    long used[MODEL_MAX_TYPES] = {0};
    double best_f = INFINITY;
    for (int j = 0; j < n; j++) best[j] = -1;
    brute_rec(c, cl, 0, used, 0.0, pick, best, &best_f);
    int rc = result_set(res, jobs, c, best);
    free(pick);
    return rc;
}
