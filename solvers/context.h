/* context.h -- what every solver method shares while it runs (internal).
 *
 * A solve_ctx holds the problem, the budgets, a scratch plan and the best
 * plan seen so far. Methods score assignments with solve_ctx_eval(), which
 * calls model_eval(), counts the evaluation and keeps the cheapest feasible
 * assignment (strictly cheaper only, so ties keep the first one found and
 * runs stay deterministic). solve_run() (solve.c) creates the context,
 * dispatches to a method and re-scores the winner into the result.
 */
#ifndef STRATA_SOLVE_CONTEXT_H
#define STRATA_SOLVE_CONTEXT_H

#include "solvers/solve.h"

typedef struct {
    const model_job *job;
    const model_cluster *cl;
    const solve_opts *opts;
    solve_result *res;   /* res->assign holds the best assignment */
    model_plan *scratch; /* plan for evaluations, cap >= n_layers */
    double t0;           /* start, seconds on the monotonic clock */
    double deadline;     /* t0 + budget, or INFINITY */
    long max_evals;      /* evaluation budget of the searches */
    double best_cost;    /* cost of res->assign, INFINITY while none */
    const int *fixed;    /* NULL, or [n_layers]: the type each layer must have, -1 free
                            (solve_run_fixed; only the exact method reads it) */
} solve_ctx;

/* solve_ctx_eval scores assign[n_layers] into ctx->scratch through
 * model_eval, counts it in res->evaluations and, when it is feasible and
 * strictly cheaper than the best so far, copies it into res->assign.
 * Returns model_eval's status (0 when feasible). */
int solve_ctx_eval(solve_ctx *ctx, const int *assign);

/* solve_ctx_time_out returns 1 once the wall-clock budget is spent. */
int solve_ctx_time_out(const solve_ctx *ctx);

/* solve_ctx_spent returns 1 once either budget (evaluations or time) is
 * spent; the searches call it before each evaluation. */
int solve_ctx_spent(const solve_ctx *ctx);

#endif
