/* multi.h -- several jobs sharing one cluster (docs/jobs.md, objective jct).
 *
 * The jobs run at the same time on the cluster's units: units one job takes
 * are gone for the others. Each job j still needs theta_j >= R_j; the
 * objective is the sum of completion times, sum_j S_j / theta_j.
 *
 * Both methods choose, for every job, one plan from a set of candidate plans
 * (multi_cands) built with the plan solvers (solve.h): the job's
 * cost-optimal plan at its own target R_j and at raised targets R' > R_j
 * (faster plans that use more units), on the full cluster and on the
 * cluster without each type in turn (plans that leave a type to others).
 *
 *   sequential  first come, first served: each job, in the config's order,
 *               gets the plan the plan solver finds for it alone at R_j on
 *               the units the jobs before it left
 *   smd         after SMD's sum-of-ratios method: iterate on the ratio
 *               weights (beta_j = 1/theta_j, gamma_j = S_j/theta_j, damped
 *               Newton steps as in Jong's algorithm) and solve, at each
 *               weight, the multi-dimensional knapsack "one candidate per
 *               job, units per type within the counts, maximise
 *               sum_j beta_j gamma_j theta_j" (GLPK). A fixed point of the
 *               iteration is optimal over the candidates (1/theta is convex);
 *               the answer is then checked against the knapsack with the
 *               true completion times, which also covers an iteration that
 *               cycles. Never worse than sequential: its plans are among the
 *               candidates.
 *
 * docs/jobs.md explains the candidates, the iteration and the check.
 */
#ifndef STRATA_MULTI_H
#define STRATA_MULTI_H

#include <stddef.h>

#include "env/model.h"
#include "solvers/solve.h"

/* One candidate plan of a job. */
typedef struct {
    double target;              /* R' the plan was provisioned for (>= R_j) */
    int *assign;                /* [n_layers] type per layer, owned */
    long units[MODEL_MAX_TYPES]; /* units per type, [n_types] used */
    double throughput;          /* theta (>= target) samples/s */
    double time;                /* S / theta, s */
    double cost;                /* dollars */
    char origin[32];            /* "R x1.50", "R x2 no T4", "sequential", ... */
} multi_cand;

/* Candidate plans of every job. */
typedef struct {
    int n_jobs;
    int n_types;
    int *count;         /* [n_jobs] candidates per job */
    int *cap;           /* [n_jobs] allocated */
    multi_cand **cand;  /* [n_jobs][count[j]] */
} multi_cands;

/* Options of candidate generation. */
typedef struct {
    solve_opts plan;    /* plan solver and its budget (default: exact) */
    int max_factors;    /* raised targets per job, R x f for the first f of
                           1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10,
                           12, 16, 20, 25, 32, 40, 50, 64 (default all 21) */
    int exclude_types;  /* 1 (default): also solve without each type in turn */
    int max_iter;       /* smd iterations (default 50; it also stops after 10
                           iterations without a better choice) */
} multi_opts;

/* Result of a method. */
typedef struct {
    int n_jobs;
    int feasible;        /* 1 when every job got a plan */
    int *pick;           /* [n_jobs] candidate index, -1 when the job got none */
    multi_cand *plan;    /* [n_jobs] copies of the picked candidates (assign owned) */
    double sum_time;     /* sum of completion times, s (INFINITY when infeasible) */
    double cost;         /* sum of the jobs' costs, dollars */
    long units[MODEL_MAX_TYPES]; /* units used per type */
    int iterations;      /* smd: knapsacks solved by the iteration */
    int fixed_point;     /* smd: 1 when the iteration reached its fixed point */
    int improved_by_check; /* smd: 1 when the exact check beat the iteration */
    char why[512];       /* when infeasible: why */
} multi_result;

void multi_opts_default(multi_opts *o);

/* multi_cands_create returns an empty set for n_jobs jobs on n_types types,
 * or NULL; multi_cands_free releases it (and every assign), accepts NULL. */
multi_cands *multi_cands_create(int n_jobs, int n_types);
void multi_cands_free(multi_cands *c);

/* multi_cands_add scores assign for job j provisioned at `target` on cl
 * (model_eval of a copy of the job with min_throughput = target) and adds
 * it unless infeasible or already present (same units and throughput).
 * Returns its index, -1 when not added (infeasible), or -2 out of memory. */
int multi_cands_add(multi_cands *c, int j, const model_job *job, const model_cluster *cl,
                    const int *assign, double target, const char *origin);

/* multi_candidates builds every job's candidates (see above). Jobs whose
 * own target cannot be met on the full cluster get none. Returns 0, or -1
 * with err (out of memory, a solver error). */
int multi_candidates(multi_cands *c, const model_job *jobs, int n_jobs,
                     const model_cluster *cl, const multi_opts *o, char *err, size_t errlen);

/* multi_result_create / multi_result_free: a result for n_jobs jobs. */
multi_result *multi_result_create(int n_jobs);
void multi_result_free(multi_result *r);

/* multi_sequential runs first come, first served and adds each plan it
 * gives to that job's candidates (so that smd can start from it). Returns 0
 * (res->feasible says whether every job got a plan) or -1 with err. */
int multi_sequential(const model_job *jobs, int n_jobs, const model_cluster *cl,
                     const multi_opts *o, multi_cands *c, multi_result *res, char *err,
                     size_t errlen);

/* multi_smd chooses one candidate per job by the SMD iteration and the
 * exact check, starting from `start` when it is feasible (may be NULL).
 * Returns 0 (res->feasible 0 with why when no choice fits the counts) or
 * -1 with err (GLPK missing or failing, out of memory). */
int multi_smd(const model_job *jobs, const model_cluster *cl, const multi_cands *c,
              const multi_result *start, const multi_opts *o, multi_result *res, char *err,
              size_t errlen);

/* multi_brute enumerates every choice of one candidate per job (tests and
 * small checks); fills res with the least sum of completion times. Returns
 * 0, or -1 when there are more than max_combos choices. */
int multi_brute(const model_job *jobs, const model_cluster *cl, const multi_cands *c,
                long max_combos, multi_result *res);

#endif
