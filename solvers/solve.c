/* solve.c -- solve_run(): checks the arguments, prepares the context,
 * dispatches to one method and re-scores the winner with model_eval.
 *
 * The method table below is the single list of method names; the CLI and
 * the daemon parse names through it.
 */
#include "solvers/solve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "solvers/context.h"
#include "solvers/exact.h"
#include "solvers/heuristics.h"
#include "solvers/search.h"

typedef struct {
    const char *name;
    int (*run)(solve_ctx *ctx);
} method_entry;

/* Indexed by solve_method. */
static const method_entry methods[SOLVE_N_METHODS] = {
    [SOLVE_EXACT] = {"exact", solve_exact},
    [SOLVE_HOMOGENEOUS] = {"homogeneous", solve_homogeneous},
    [SOLVE_RULE] = {"rule", solve_rule},
    [SOLVE_GREEDY] = {"greedy", solve_greedy},
    [SOLVE_RANDOM] = {"random", solve_random},
    [SOLVE_GENETIC] = {"genetic", solve_genetic},
    [SOLVE_ANNEAL] = {"anneal", solve_anneal},
};

void solve_opts_default(solve_opts *opts) {
    opts->method = SOLVE_EXACT;
    opts->budget_ms = SOLVE_DEFAULT_BUDGET_MS;
    opts->max_evals = SOLVE_DEFAULT_EVALS;
    opts->seed = 1;
}

const char *solve_method_name(solve_method m) {
    if ((int)m < 0 || m >= SOLVE_N_METHODS) return "?";
    return methods[m].name;
}

int solve_method_parse(const char *name) {
    for (int m = 0; m < SOLVE_N_METHODS; m++)
        if (name && !strcmp(name, methods[m].name)) return m;
    return -1;
}

solve_result *solve_result_create(int max_layers) {
    if (max_layers < 1) max_layers = 1;
    solve_result *res = calloc(1, sizeof *res);
    if (!res) return NULL;
    res->assign = calloc((size_t)max_layers, sizeof *res->assign);
    res->plan = model_plan_create(max_layers);
    if (!res->assign || !res->plan) {
        solve_result_free(res);
        return NULL;
    }
    res->cap = max_layers;
    res->lower_bound = NAN;
    return res;
}

void solve_result_free(solve_result *res) {
    if (!res) return;
    free(res->assign);
    model_plan_free(res->plan);
    free(res);
}

/* Resets what a run reports. */
static void result_reset(solve_result *res, solve_method m) {
    res->method = m;
    res->found = 0;
    res->optimal = 0;
    res->infeasible = 0;
    res->stopped = 0;
    res->lower_bound = NAN;
    res->evaluations = 0;
    res->seconds = 0.0;
    res->why[0] = '\0';
    res->plan->n_stages = 0;
}

/* run is solve_run, and solve_run_fixed when fixed is not NULL (checked
 * by it). */
static int run(const model_job *job, const model_cluster *cl, const solve_opts *opts,
               const int *fixed, solve_result *res) {
    if (!res) return SOLVE_ERROR;
    if (!job || !cl || !opts) {
        snprintf(res->why, sizeof res->why, "solve: missing job, cluster or options");
        return SOLVE_ERROR;
    }
    if ((int)opts->method < 0 || opts->method >= SOLVE_N_METHODS) {
        snprintf(res->why, sizeof res->why, "solve: unknown method %d", (int)opts->method);
        return SOLVE_ERROR;
    }
    result_reset(res, opts->method);
    if (job->n_layers < 1 || !job->layers) {
        snprintf(res->why, sizeof res->why, "solve: job '%s' has no layers", job->name);
        return SOLVE_ERROR;
    }
    if (job->n_layers > res->cap) {
        snprintf(res->why, sizeof res->why,
                 "solve: job '%s' has %d layers, the result holds %d", job->name,
                 job->n_layers, res->cap);
        return SOLVE_ERROR;
    }
    if (cl->n_types < 1 || cl->n_types > MODEL_MAX_TYPES || !cl->types) {
        snprintf(res->why, sizeof res->why, "solve: the cluster has %d types (1..%d allowed)",
                 cl->n_types, MODEL_MAX_TYPES);
        return SOLVE_ERROR;
    }

    solve_ctx ctx = {
        .job = job,
        .cl = cl,
        .opts = opts,
        .res = res,
        .scratch = model_plan_create(job->n_layers),
        .t0 = clock_now_s(),
        .deadline = INFINITY,
        .max_evals = opts->max_evals > 0 ? opts->max_evals : SOLVE_DEFAULT_EVALS,
        .best_cost = INFINITY,
        .fixed = fixed,
    };
    if (!ctx.scratch) {
        snprintf(res->why, sizeof res->why, "solve: out of memory");
        return SOLVE_ERROR;
    }
    if (opts->budget_ms > 0) ctx.deadline = ctx.t0 + 1e-3 * (double)opts->budget_ms;

    int rc = methods[opts->method].run(&ctx);
    model_plan_free(ctx.scratch);
    res->seconds = clock_now_s() - ctx.t0;
    if (rc != 0) {
        res->found = 0;
        return SOLVE_ERROR;
    }
    if (!res->found) {
        if (!res->why[0])
            snprintf(res->why, sizeof res->why, "%s: no feasible plan found%s",
                     methods[opts->method].name, res->stopped ? " within the budget" : "");
        return SOLVE_NONE;
    }
    /* The final answer is always the one scoring function's. */
    if (model_eval(job, cl, res->assign, res->plan) != MODEL_FEASIBLE) {
        /* Cannot happen: only feasible plans are kept. */
        snprintf(res->why, sizeof res->why, "solve: internal error: kept an infeasible plan: %.500s",
                 res->plan->why);
        res->found = 0;
        return SOLVE_ERROR;
    }
    res->why[0] = '\0';
    return 0;
}

int solve_run(const model_job *job, const model_cluster *cl, const solve_opts *opts,
              solve_result *res) {
    return run(job, cl, opts, NULL, res);
}

int solve_run_fixed(const model_job *job, const model_cluster *cl, const solve_opts *opts,
                    const int *fixed, solve_result *res) {
    if (!res) return SOLVE_ERROR;
    if (!job || !cl || !opts || !fixed) {
        snprintf(res->why, sizeof res->why, "solve: missing job, cluster, options or fixed layers");
        return SOLVE_ERROR;
    }
    if (opts->method != SOLVE_EXACT) {
        snprintf(res->why, sizeof res->why, "solve: fixed layers need the exact method, not %s",
                 solve_method_name(opts->method));
        return SOLVE_ERROR;
    }
    for (int l = 0; l < job->n_layers; l++)
        if (fixed[l] < -1 || fixed[l] >= cl->n_types) {
            snprintf(res->why, sizeof res->why, "solve: layer %d is fixed to type %d, the cluster has %d", l,
                     fixed[l], cl->n_types);
            return SOLVE_ERROR;
        }
    return run(job, cl, opts, fixed, res);
}
