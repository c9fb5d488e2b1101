/* sim.h -- an event-driven simulation of a shared heterogeneous cluster
 * (docs/simulate.md).
 *
 * Jobs of a trace (sim/trace.h) arrive over time. At every instant where
 * something happens (arrivals, completions) a method (sim/methods.h)
 * looks at the queue of waiting jobs, in arrival order, and starts some
 * of them with a plan (a layer-to-type assignment scored by model_eval)
 * on the units free at that instant, or lets them wait. A started job
 * holds its plan's units until it finishes, samples / throughput seconds
 * later, at the plan's cost rate (docs/model.md); nothing is preempted.
 * Completions are handled before arrivals of the same instant, and the
 * method is asked once per instant, so the run is a pure function of the
 * trace, the cluster and the method: the same inputs give the same
 * figures, bit for bit.
 *
 * Occupancy is kept per type (a types-only copy of the cluster whose
 * counts are the free units, what the plan solvers read) and per node
 * (units are taken first-fit in node order, released on completion);
 * a type without nodes is one virtual node. Each job's plan on the empty
 * cluster (the exact solver at its target) is computed once per (model,
 * target) and cached; a job for which none exists is rejected on arrival.
 *
 * Ownership: sim_create returns a simulator the caller frees with
 * sim_free; it borrows the trace, which must outlive it.
 */
#ifndef STRATA_SIM_H
#define STRATA_SIM_H

#include <stddef.h>

#include "env/model.h"
#include "sim/trace.h"

typedef struct sim sim;

typedef enum {
    SIM_PENDING = 0, /* not arrived yet */
    SIM_WAITING,     /* queued */
    SIM_RUNNING,
    SIM_DONE,
    SIM_REJECTED, /* no plan reaches its target even on the empty cluster */
    SIM_STARVED,  /* still queued when nothing was left to happen */
} sim_state;

/* What happened to one job. Times in s from the start of the trace. */
typedef struct {
    sim_state state;
    double start, finish; /* NAN until known */
    double throughput;    /* samples/s of its plan */
    double unit_price;    /* $/h of its units */
    double cost;          /* $: (finish - start) / 3600 * unit_price */
    int units[MODEL_MAX_TYPES]; /* units per type it held */
    char plan[160];       /* stages as "TYPExK+TYPExK..." */
    char why[160];        /* why rejected ("" otherwise) */
} sim_outcome;

/* One point of the occupancy curve: from `time` on, used[t] units of type
 * t are busy (until the next point). */
typedef struct {
    double time;
    int used[MODEL_MAX_TYPES];
} sim_sample;

/* Per-trace figures (sim_summarise). Times in s. */
typedef struct {
    int jobs, done, rejected, starved;
    int deadline_jobs, missed; /* jobs with a deadline; of those, finished late or never */
    double jct_mean, jct_p50, jct_p95;       /* completion time: finish - arrival */
    double queue_mean, queue_p50, queue_p95; /* queueing delay: start - arrival */
    double cost;                             /* $ over every finished job */
    double makespan;                         /* last finish (or the last event) */
    double util[MODEL_MAX_TYPES];            /* time-averaged busy share per type, [0,1] */
    double util_all;                         /* busy unit-seconds / offered, all types */
} sim_summary;

struct sim_method;

/* sim_weights (the combined objective's weights) is in sim/trace.h. */

/* sim_create prepares a run of method m on trace t over cluster cl (the
 * cluster is copied: types, counts, nodes). Returns the simulator, or NULL
 * with err (out of memory, the method's own set-up failing). */
sim *sim_create(const sim_trace *t, const model_cluster *cl, const struct sim_method *m,
                char *err, size_t errlen);
/* sim_create_with is sim_create handing arg (borrowed; it must outlive
 * the simulator) to the method, which reads it with sim_method_arg: the
 * policy method's loaded network and decoding mode (sim/spolicy.h). */
sim *sim_create_with(const sim_trace *t, const model_cluster *cl, const struct sim_method *m,
                     void *arg, char *err, size_t errlen);
void sim_free(sim *s);

/* sim_run plays the whole trace. Returns 0, or -1 with err when the method
 * fails (a solver error, out of memory). */
int sim_run(sim *s, char *err, size_t errlen);

/* After sim_run: each job's outcome (index as in the trace), the occupancy
 * curve, and the figures over the trace. */
const sim_outcome *sim_outcomes(const sim *s);
const sim_sample *sim_samples(const sim *s, int *n);
void sim_summarise(const sim *s, sim_summary *out);

/* sim_objective returns, after sim_run, the part of the combined objective
 * (w) that accrues at or after time `from` (s): the cost of jobs started
 * from then on, the completion time lived from then on, and the deadlines
 * falling due from then on that were missed. from = 0 gives the whole
 * trace's objective; the learned policy's training reads it at each of
 * its decisions as the cost-to-go. */
double sim_objective(const sim *s, const sim_weights *w, double from);

/* ---------------------------------------------------------------------------
 * What a method sees and does (sim/methods.h)
 * ------------------------------------------------------------------------ */

/* The current time, the trace, the cluster as configured (types-only,
 * full counts) and as free now (counts = free units per type). */
double sim_now(const sim *s);
const sim_trace *sim_get_trace(const sim *s);
const model_cluster *sim_full(const sim *s);
const model_cluster *sim_free_units(const sim *s);

/* sim_version counts starts and completions so far: equal versions mean
 * equal free units (methods use it to skip work already done). */
long sim_version(const sim *s);

/* The queue: waiting jobs in arrival order, sim_queue_len of them. */
int sim_queue_len(const sim *s);
int sim_queue_at(const sim *s, int i);

/* sim_job_of returns trace job j as the cost model sees it: the model's
 * layers with min_throughput = its target and samples = its samples.
 * Owned by s. */
const model_job *sim_job_of(const sim *s, int j);

/* sim_empty_plan returns job j's cached cost-optimal plan on the empty
 * cluster (exact solver) and its assignment in *assign (owned by s), or
 * NULL when there is none (never for a queued job: those are rejected). */
const model_plan *sim_empty_plan(sim *s, int j, const int **assign);

/* sim_fits returns 1 when plan's units are free now. */
int sim_fits(const sim *s, const model_plan *plan);

/* sim_start starts queued job j with assignment assign, provisioned for
 * `target` samples/s (its own target when target <= 0 or below it; a
 * higher one gives a faster plan on more units) and scored by model_eval
 * on the cluster. Returns 0, -1 when the plan is infeasible or its units
 * are not free (nothing changes), or -2 out of memory. */
int sim_start(sim *s, int j, const int *assign, double target);

/* sim_plan_free_now runs the exact solver for job j on the free units.
 * Returns 0 with the assignment in *assign (owned by s, valid until the
 * next call), SOLVE_NONE (1) when no plan fits, or -1 with err. The empty
 * cluster's plan is used without solving when it fits (it is then also
 * the optimum on the free units). */
int sim_plan_free_now(sim *s, int j, const int **assign, char *err, size_t errlen);

/* sim_node_used returns the busy units of node n (the daemon's occupancy
 * view; a type without nodes is one virtual node after the real ones),
 * and sim_n_nodes how many nodes there are. */
int sim_node_used(const sim *s, int n);
int sim_n_nodes(const sim *s);

/* sim_cache_key returns the id of job j's (model, target) class: jobs of
 * one class share their plans (methods key their own caches by it). */
int sim_cache_key(const sim *s, int j);
int sim_cache_classes(const sim *s);

/* sim_method_arg returns the argument given to sim_create_with (NULL from
 * sim_create); sim_n_running the jobs holding units now. */
void *sim_method_arg(const sim *s);
int sim_n_running(const sim *s);

#endif
