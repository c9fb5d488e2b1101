/* solve.h -- plan solvers: the layer-to-type plan of docs/model.md §2.
 *
 * One entry point, solve_run(), picks a layer-to-type assignment for a job
 * on a cluster by one of several methods: `exact` (a proven optimum, or the
 * best plan found and a proven lower bound when its budget stops it) and
 * the baselines people use or compare against: `homogeneous` (one type for
 * every layer), `rule` (IO-heavy layers on CPU, the rest on the fastest GPU
 * that fits), `greedy` (layer by layer), and the seeded searches `random`,
 * `genetic` and `anneal`. Every figure a method reports comes from
 * model_eval(), the one scoring function, and every plan it returns is
 * feasible by it; when none is found the result says so and why.
 *
 * Budgets: `budget_ms` bounds wall time; `max_evals` bounds the model_eval
 * calls of the searches. For a given seed the searches are deterministic
 * whenever the evaluation budget, not the clock, is what stops them (the
 * defaults are set so that it is on the shipped models). No function here
 * prints or exits; messages go into solve_result.why.
 *
 * The library is used by `strata solve`, the agent (reference plans), the
 * daemon (POST /v1/solve) and `strata eval`. docs/solvers.md explains the
 * methods and the argument for the exact solver's correctness.
 */
#ifndef STRATA_SOLVE_H
#define STRATA_SOLVE_H

#include <stdint.h>

#include "env/model.h"

typedef enum {
    SOLVE_EXACT = 0,   /* proven optimum (sweep over bottleneck throughputs) */
    SOLVE_HOMOGENEOUS, /* best single type for all layers */
    SOLVE_RULE,        /* IO-heavy layers on CPU, rest on the fastest GPU that fits */
    SOLVE_GREEDY,      /* layer by layer, cheapest prefix given the layers before */
    SOLVE_RANDOM,      /* random stage plans within the budget */
    SOLVE_GENETIC,     /* genetic algorithm on assignments */
    SOLVE_ANNEAL,      /* simulated annealing on assignments */
    SOLVE_N_METHODS
} solve_method;

#define SOLVE_DEFAULT_BUDGET_MS 10000L /* wall-clock budget of `strata solve` */
#define SOLVE_DEFAULT_EVALS 200000L    /* model_eval budget of the searches */

/* solve_run's status besides 0 (a feasible plan found). */
#define SOLVE_NONE 1    /* no feasible plan found (res->infeasible says if proven) */
#define SOLVE_ERROR (-1) /* bad arguments or out of memory; res->why says which */

typedef struct {
    solve_method method;
    long budget_ms; /* wall-clock budget in ms; <= 0 means none */
    long max_evals; /* model_eval budget of random/genetic/anneal; <= 0: default */
    uint64_t seed;  /* seed of the searches (ignored by the others) */
} solve_opts;

/* The outcome of one run. Created for a maximum number of layers and
 * reusable across runs; solve_run() resets every field it reports. */
typedef struct {
    int cap;              /* layers assign and plan can hold */
    solve_method method;  /* the method that ran */
    int found;            /* 1 when a feasible plan was found */
    int *assign;          /* [cap] type index per layer of the best plan (when found) */
    model_plan *plan;     /* that plan as scored by model_eval (when found) */
    int optimal;          /* 1 only when the plan is proven optimal (exact) */
    int infeasible;       /* 1 when proven that no assignment is feasible (exact) */
    int stopped;          /* 1 when the budget stopped the method early */
    double lower_bound;   /* proven lower bound on the optimal cost, dollars;
                             NAN when unknown, INFINITY when infeasible */
    long evaluations;     /* model_eval calls; for exact, see solvers/exact.h */
    double seconds;       /* wall time of the run */
    char why[1024];       /* when not found: why; otherwise a short note or "" */
} solve_result;

/* solve_opts_default fills opts: exact, SOLVE_DEFAULT_BUDGET_MS,
 * SOLVE_DEFAULT_EVALS, seed 1. */
void solve_opts_default(solve_opts *opts);

/* solve_method_name returns the method's name ("exact", "homogeneous",
 * "rule", "greedy", "random", "genetic", "anneal"), or "?" when out of
 * range. solve_method_parse returns the method named `name`, or -1. */
const char *solve_method_name(solve_method m);
int solve_method_parse(const char *name);

/* solve_result_create returns a result able to hold max_layers layers, or
 * NULL on allocation failure; solve_result_free releases it, accepts NULL. */
solve_result *solve_result_create(int max_layers);
void solve_result_free(solve_result *res);

/* solve_run runs opts->method on job and cl and fills res. Returns 0 when a
 * feasible plan was found (res->assign, res->plan), SOLVE_NONE when none
 * was (res->why says why; res->infeasible when proven for every
 * assignment), or SOLVE_ERROR on bad arguments (res->cap < n_layers, an
 * unknown method, an empty job or cluster) or memory exhaustion. */
int solve_run(const model_job *job, const model_cluster *cl, const solve_opts *opts,
              solve_result *res);

/* solve_run_fixed is solve_run restricted to the plans that agree with
 * fixed[n_layers]: layer l must have type fixed[l] when fixed[l] >= 0
 * (-1 leaves it free). The result is the cheapest such plan (proven, as
 * solve_run's), or SOLVE_NONE with res->infeasible when none is feasible.
 * Only the exact method takes it: another opts->method, or a fixed[l]
 * outside -1..n_types-1, is SOLVE_ERROR. The trainer's DAgger
 * demonstrations complete a plan prefix with it (agent/train.c). */
int solve_run_fixed(const model_job *job, const model_cluster *cl, const solve_opts *opts,
                    const int *fixed, solve_result *res);

/* solve_polish improves a feasible plan assign[n_layers] of cost `cost` by
 * segment moves -- every run of layers i..j given one type t, which covers
 * the single-layer changes (i = j), the merging of neighbouring stages and
 * the homogeneous plans (0..L-1) -- taking each move that lowers the cost
 * by model_eval, until none does (a local optimum), or until stop(ud)
 * (NULL: never; asked before each layer i of a pass) returns nonzero.
 * O(L^2 T) model_eval calls per pass. Returns the final cost (assign
 * updated: a plan at least as cheap, feasible); *evals (may be NULL)
 * receives the model_eval calls made. plan is scratch for model_eval
 * (room for the layers); trial is scratch of n_layers ints. */
double solve_polish(const model_job *job, const model_cluster *cl, int *assign, double cost,
                    model_plan *plan, int *trial, int (*stop)(void *ud), void *ud, long *evals);

#endif
