/* heuristics.c -- the one-shot baselines: homogeneous, rule, greedy.
 *
 * These are the plans people make without a solver: put the whole model on
 * one instance type; follow the rule of thumb of the HeterPS paper's
 * baselines (sparse, IO-heavy layers on CPU servers, everything else on the
 * fastest GPU that fits, as a user does with device guards); or choose
 * layer by layer. Each keeps only plans model_eval finds feasible.
 */
#include "solvers/heuristics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int solve_homogeneous(solve_ctx *ctx) {
    const int L = ctx->job->n_layers;
    int *assign = malloc((size_t)L * sizeof *assign);
    if (!assign) {
        snprintf(ctx->res->why, sizeof ctx->res->why, "homogeneous: out of memory");
        return SOLVE_ERROR;
    }
    for (int t = 0; t < ctx->cl->n_types; t++) {
        for (int l = 0; l < L; l++) assign[l] = t;
        solve_ctx_eval(ctx, assign);
    }
    if (!ctx->res->found)
        snprintf(ctx->res->why, sizeof ctx->res->why,
                 "homogeneous: no single type can run every layer (last tried: %.500s)",
                 ctx->scratch->why);
    free(assign);
    return 0;
}

/* Returns < 0 when type a is preferred to type b: GPUs by flops, CPUs by
 * input bandwidth (both descending), then by price, then by index. */
static int prefer(const model_cluster *cl, int gpu, int a, int b) {
    const model_type *x = &cl->types[a], *y = &cl->types[b];
    double fx = gpu ? x->flops : x->io_bw, fy = gpu ? y->flops : y->io_bw;
    if (fx != fy) return fx > fy ? -1 : 1;
    if (x->price != y->price) return x->price < y->price ? -1 : 1;
    return a - b;
}

/* Fills order[] with the types of one kind (is_gpu == gpu) in preference
 * order (insertion sort: at most MODEL_MAX_TYPES entries, no global state,
 * so concurrent solves are safe); returns how many. */
static int kind_order(const model_cluster *cl, int gpu, int *order) {
    int n = 0;
    for (int t = 0; t < cl->n_types; t++)
        if (!!cl->types[t].is_gpu == gpu) order[n++] = t;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && prefer(cl, gpu, order[j], order[j - 1]) < 0; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    return n;
}

int solve_rule(solve_ctx *ctx) {
    const model_job *job = ctx->job;
    const model_cluster *cl = ctx->cl;
    const int L = job->n_layers;
    int gpus[MODEL_MAX_TYPES], cpus[MODEL_MAX_TYPES];
    int ng = kind_order(cl, 1, gpus), nc = kind_order(cl, 0, cpus);
    int *assign = malloc((size_t)L * sizeof *assign);
    char *heavy = malloc((size_t)L);
    if (!assign || !heavy) {
        free(assign);
        free(heavy);
        snprintf(ctx->res->why, sizeof ctx->res->why, "rule: out of memory");
        return SOLVE_ERROR;
    }
    /* IO-heavy: reading the layer's input takes longer than computing it
     * on the fastest GPU (B cancels): d_l / D_g > f_l / F_g. */
    for (int l = 0; l < L; l++) {
        heavy[l] = 0;
        if (ng) {
            const model_type *g = &cl->types[gpus[0]];
            heavy[l] = job->layers[l].io / g->io_bw > job->layers[l].flops / g->flops;
        }
    }
    char first_why[600] = "";
    /* With one kind missing, the other kind takes every layer. */
    int ni = ng ? ng : 1, nj = nc ? nc : 1;
    for (int i = 0; i < ni && !ctx->res->found; i++)
        for (int j = 0; j < nj && !ctx->res->found; j++) {
            for (int l = 0; l < L; l++) {
                if (!ng) assign[l] = cpus[j];
                else if (!nc) assign[l] = gpus[i];
                else assign[l] = heavy[l] ? cpus[j] : gpus[i];
            }
            if (solve_ctx_eval(ctx, assign) != MODEL_FEASIBLE && !first_why[0])
                snprintf(first_why, sizeof first_why, "%.500s", ctx->scratch->why);
        }
    if (!ctx->res->found)
        snprintf(ctx->res->why, sizeof ctx->res->why,
                 "rule: no GPU/CPU choice gives a feasible plan (fastest GPU: %.500s)", first_why);
    free(assign);
    free(heavy);
    return 0;
}

/* Rank of an infeasible prefix when no type keeps it feasible: a plan that
 * only lacks units is closer to feasible than one breaking memory, which
 * is closer than one that can never reach the target. */
static int reason_rank(int rc) {
    switch (rc) {
    case MODEL_ERR_CAPACITY: return 1;
    case MODEL_ERR_MEMORY: return 2;
    default: return 3;
    }
}

int solve_greedy(solve_ctx *ctx) {
    const model_job *job = ctx->job;
    const model_cluster *cl = ctx->cl;
    const int L = job->n_layers, T = cl->n_types;
    int *assign = malloc((size_t)L * sizeof *assign);
    if (!assign) {
        snprintf(ctx->res->why, sizeof ctx->res->why, "greedy: out of memory");
        return SOLVE_ERROR;
    }
    /* The plan of layers 0..l is scored as a job of its own: same layers,
     * batch, target and samples, cut after layer l. */
    model_job prefix = *job;
    for (int l = 0; l < L; l++) {
        prefix.n_layers = l + 1;
        int best_t = -1, best_rank = 4;
        double best_cost = 0.0;
        for (int t = 0; t < T; t++) {
            assign[l] = t;
            int rc = model_eval(&prefix, cl, assign, ctx->scratch);
            ctx->res->evaluations++;
            int rank = rc == MODEL_FEASIBLE ? 0 : reason_rank(rc);
            if (rank < best_rank || (rank == 0 && ctx->scratch->cost < best_cost)) {
                best_t = t;
                best_rank = rank;
                best_cost = ctx->scratch->cost;
            }
        }
        assign[l] = best_t;
    }
    if (solve_ctx_eval(ctx, assign) != MODEL_FEASIBLE)
        snprintf(ctx->res->why, sizeof ctx->res->why, "greedy: its plan is infeasible: %.500s",
                 ctx->scratch->why);
    free(assign);
    return 0;
}
