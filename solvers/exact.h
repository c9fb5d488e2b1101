/* exact.h -- the exact plan solver (internal; use solve_run, method exact).
 *
 * Finds a minimum-cost feasible assignment and proves it optimal, or, when
 * the budget stops it, keeps the best plan found and a proven lower bound.
 * It also proves infeasibility when no assignment meets the rules. The
 * method and the argument for its correctness are in exact.c and
 * docs/solvers.md.
 */
#ifndef STRATA_SOLVE_EXACT_H
#define STRATA_SOLVE_EXACT_H

#include "solvers/context.h"

/* solve_exact runs on a prepared context and sets res->optimal,
 * res->infeasible, res->lower_bound and res->stopped. Its evaluation count
 * is: stage figures computed + DP passes + branch-and-bound nodes +
 * model_eval calls. Returns 0, or SOLVE_ERROR with res->why when memory
 * runs out or the instance has more (segment, type) candidates than it
 * can hold. */
int solve_exact(solve_ctx *ctx);

#endif
