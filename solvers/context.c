/* context.c -- the evaluation context shared by the solver methods.
 *
 * Keeps the best feasible assignment seen, counts model_eval calls and
 * answers whether a budget is spent. See context.h.
 */
#include "solvers/context.h"

#include <math.h>
#include <string.h>

#include "base/clock.h"

int solve_ctx_eval(solve_ctx *ctx, const int *assign) {
    int rc = model_eval(ctx->job, ctx->cl, assign, ctx->scratch);
    ctx->res->evaluations++;
    if (rc == MODEL_FEASIBLE && ctx->scratch->cost < ctx->best_cost) {
        ctx->best_cost = ctx->scratch->cost;
        memcpy(ctx->res->assign, assign, (size_t)ctx->job->n_layers * sizeof *assign);
        ctx->res->found = 1;
    }
    return rc;
}

int solve_ctx_time_out(const solve_ctx *ctx) {
    return isfinite(ctx->deadline) && clock_now_s() >= ctx->deadline;
}

int solve_ctx_spent(const solve_ctx *ctx) {
    return ctx->res->evaluations >= ctx->max_evals || solve_ctx_time_out(ctx);
}
