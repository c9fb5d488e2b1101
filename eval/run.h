/* run.h -- running an evaluation: every (instance, method, seed) cell.
 *
 * Which methods run where: plan, policy, placement and Coach (fit)
 * methods run on every single-job instance; the several-jobs methods
 * (sequential, smd) on every instance with two jobs or more. Each cell
 * gives one row (eval_row). Cells run on a pool of threads; each row has
 * its fixed slot, so the order of results.csv never depends on --jobs or
 * on timing.
 *
 * References. Before the cells, every single-job instance gets its exact
 * plan (solvers/solve.h, method exact) and its best homogeneous plan. A
 * feasible row's gap is X / reference - 1 against
 *   - the exact plan's cost, for plan, policy and placement rows, with X
 *     the row's plan_cost: the cost of its plan before placement, so that
 *     the gap judges the plan (a placement's figures are compared through
 *     throughput and traffic instead); only when exact proved its plan
 *     optimal within the budget;
 *   - the best (workers, ps) on the true figures, for Coach rows;
 *   - the best choice among the several-jobs candidates (multi_brute), for
 *     sequential and smd rows, when there are few enough choices;
 * with X the row's value for the last two. vs_homogeneous is plan_cost /
 * the homogeneous plan's cost (plan, policy and placement rows).
 *
 * Determinism: for one config every column but solve_seconds is the same
 * on every run and for any --jobs (the solvers' searches are stopped by
 * their evaluation budgets; configs set wall budgets that those never
 * reach). With repeats > 1 each cell runs that many times, solve_seconds is
 * the median, and a cell whose repeats disagree on any other column is
 * flagged in its note ("NONDETERMINISTIC").
 */
#ifndef STRATA_EVAL_RUN_H
#define STRATA_EVAL_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "eval/instances.h"
#include "eval/spec.h"

typedef enum { EVAL_OBJ_COST = 0, EVAL_OBJ_JCT = 1 } eval_objective;

/* One row of results.csv. Figures that do not apply are NAN. */
typedef struct {
    int inst;          /* index into the instances */
    int job;           /* job index, -1 for a several-jobs row */
    int method;        /* index into spec->methods */
    int seed_idx;      /* index into spec->seeds */
    uint64_t seed;
    int layers;        /* the job's layers (sum over the jobs of a batch) */
    int feasible;      /* 1: a plan (placement, allocation) meeting every target */
    int objective;     /* eval_objective */
    double cost;       /* dollars (cost' when placed; sum over jobs for a batch) */
    double throughput; /* samples/s (throughput' when placed) */
    double time;       /* training time S/theta, s; a batch: sum of completion times */
    double value;      /* the objective: cost, or the sum of completion times */
    double plan_cost;  /* plan, policy, place rows: the cost of the row's plan
                          before any placement (model_eval), else NAN */
    double reference;  /* the exact reference of the gap, or NAN */
    double gap;        /* value / reference - 1, or NAN */
    double homogeneous; /* the homogeneous plan's cost, or NAN */
    double vs_homogeneous; /* cost / homogeneous, or NAN */
    double cross_node; /* bytes per step across nodes (placed rows), or NAN */
    double cross_zone; /* bytes per step across zones (placed rows), or NAN */
    double seconds;    /* wall time of the method (median over repeats) */
    char note[256];    /* why infeasible, the pick, ...; no timings */
} eval_row;

/* Progress: called (from the worker threads, one at a time) after each
 * finished task with the count done and the total. */
typedef void (*eval_progress_fn)(void *user, int done, int total);

typedef struct {
    int jobs;                 /* worker threads (>= 1) */
    eval_progress_fn progress; /* may be NULL */
    void *user;
} eval_run_opts;

/* eval_run runs every cell of spec on the instances. Returns 0 with the
 * rows in *rows[*n_rows] (caller frees with free()), or -1 with a message
 * in err[errlen] (a policy that cannot be loaded, out of memory). */
int eval_run(const eval_spec *spec, const eval_instance *inst, int n_inst,
             const eval_run_opts *opts, eval_row **rows, int *n_rows, char *err, size_t errlen);

/* eval_row_same returns 1 when a and b agree on every column but
 * solve_seconds (NANs agree with NANs). */
int eval_row_same(const eval_row *a, const eval_row *b);

#endif
