/* search.h -- the seeded searches (internal; use solve_run).
 *
 * random, genetic and anneal spend the evaluation budget (and stop early if
 * the wall-clock budget runs out). Each draws from its own counter of a
 * small generator seeded by opts->seed, so a seed fixes the run.
 */
#ifndef STRATA_SOLVE_SEARCH_H
#define STRATA_SOLVE_SEARCH_H

#include "solvers/context.h"

/* Random stage plans: a number of stages s uniform in 1..min(L, 2T), cut
 * points uniform among the L-1 layer boundaries, types uniform with
 * neighbouring stages of different types. */
int solve_random(solve_ctx *ctx);

/* Genetic algorithm on assignments: population 32 seeded with the
 * homogeneous plans and random stage plans, tournament selection of 3,
 * two-point crossover, segment and boundary mutation, two elites. */
int solve_genetic(solve_ctx *ctx);

/* Simulated annealing on log cost from the best homogeneous (or first
 * feasible random) plan; moves shift a stage boundary, retype a random
 * segment or retype a whole stage; temperature falls geometrically from
 * 0.1 to 1e-4 over the evaluation budget; infeasible moves are rejected. */
int solve_anneal(solve_ctx *ctx);

#endif
