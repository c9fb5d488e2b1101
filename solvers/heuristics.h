/* heuristics.h -- the one-shot baselines (internal; use solve_run).
 *
 * homogeneous, rule and greedy: what people do by hand or with one pass.
 * They ignore the budget (each makes at most a few hundred evaluations on
 * the shipped models) and keep only feasible plans through the context.
 */
#ifndef STRATA_SOLVE_HEURISTICS_H
#define STRATA_SOLVE_HEURISTICS_H

#include "solvers/context.h"

/* Every layer on one type; the cheapest feasible type wins. T evaluations. */
int solve_homogeneous(solve_ctx *ctx);

/* IO-heavy layers (B d_l / D_g > B f_l / F_g on the fastest GPU g) on a CPU
 * type, the rest on a GPU type; GPUs are tried fastest first (flops), CPUs
 * by input bandwidth, and the first feasible pair wins. With no GPU type
 * every layer goes to a CPU; with no CPU type, to a GPU. */
int solve_rule(solve_ctx *ctx);

/* Layer by layer: layer l takes the type that makes the plan of layers
 * 0..l (scored as a job of its own) cheapest and feasible, given the types
 * already chosen. L * T evaluations. */
int solve_greedy(solve_ctx *ctx);

#endif
