/* placers.h -- placing a plan's tasks on the cluster's nodes (docs/model.md §3).
 *
 * A feasible stage plan (model_eval) runs, per stage s, k_s worker tasks on
 * units of type t_s and g_s ps tasks anywhere a ps slot is free. A placer
 * chooses a node for every task, in place.h's task order, and the choice is
 * scored by place_eval, the one scoring function for placements. Methods:
 *
 *   spread     the Kubernetes default scheduler: every task, in order, goes
 *              to the node scoring best on least-allocated plus balanced
 *              allocation (units and ps slots as the two resources), ties
 *              broken at random from the seed; the baseline users have today
 *   pack       bin packing: every task goes to the first node, in the
 *              cluster's order, with room for it
 *   aggregate  DLTAP: a stage's workers on as few nodes as possible, then
 *              each ps task on the node holding most of the stage's workers
 *   zone       keep the job in as few zones as possible and each stage in
 *              one of them when it fits; inside, a node that takes all of
 *              a stage's remaining workers if there is one, else the node
 *              with the best link score (placer_zone_time), filled; each
 *              ps task with the stage's workers
 *   best       local search (move one task, swap two) from the best of the
 *              four above, minimising cost' and never accepting a placement
 *              with throughput' < R when it started from one that keeps R
 *
 * docs/placement.md explains each method and the zone score.
 */
#ifndef STRATA_PLACERS_H
#define STRATA_PLACERS_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

typedef enum {
    PLACER_SPREAD = 0,
    PLACER_PACK,
    PLACER_AGGREGATE,
    PLACER_ZONE,
    PLACER_BEST,
    PLACER_N_METHODS
} placer_method;

/* placer_run's status. */
#define PLACER_OK 0     /* placed, and throughput' >= R */
#define PLACER_SLOW 1   /* placed, but a stage falls below R over its links */
#define PLACER_NOFIT 2  /* the nodes cannot host the tasks at all */
#define PLACER_ERROR (-1) /* bad arguments (infeasible plan, no nodes) or no memory */

/* Default evaluation budget of `best` (place_eval calls). */
#define PLACER_BEST_EVALS 20000L

/* placer_method_name returns the method's name ("spread", "pack",
 * "aggregate", "zone", "best") or "?"; placer_method_parse returns the
 * method named `name`, or -1. */
const char *placer_method_name(placer_method m);
int placer_method_parse(const char *name);

/* A placement says how a plan's tasks get their nodes: not at all, by the
 * node head of a learned policy (agent/), or by one of the methods above.
 * A placement >= 0 is that placer_method; the two others are below. This
 * is the one naming of a placement: the daemon's options, the agent's
 * rollouts and decodes, train configs, checkpoints and eval specs use it. */
typedef enum {
    PLACER_PLACE_NONE = -2,   /* plan only: no task is placed */
    PLACER_PLACE_POLICY = -1, /* the policy's node head */
} placer_placement;

/* placer_placement_name returns "none", "policy" or the method's name ("?"
 * when out of range); placer_placement_parse reads one of those names into
 * *placement and returns 0, or returns -1 (*placement untouched) when the
 * name is none of them. */
const char *placer_placement_name(int placement);
int placer_placement_parse(const char *name, int *placement);

/* placer_run places every task of the feasible plan `plan` of job on cl by
 * `method` (seed: spread's tie-breaks and best's visiting order) into
 * task_node[place_task_count(plan)] and scores it with place_eval into
 * `out` (out->cap >= plan->n_stages; out may not be plan). Returns
 * PLACER_OK; PLACER_SLOW with out->why and out->bad_stage naming the stage
 * that misses R (task_node and out still filled); PLACER_NOFIT or
 * PLACER_ERROR with a message in err[errlen] (task_node then undefined). */
int placer_run(const model_job *job, const model_cluster *cl, const model_plan *plan,
               placer_method method, uint64_t seed, int *task_node, model_plan *out,
               char *err, size_t errlen);

/* placer_best_run is `best` with an explicit evaluation budget (<= 0: the
 * default) and *evals set to the place_eval calls it made (may be NULL). */
int placer_best_run(const model_job *job, const model_cluster *cl, const model_plan *plan,
                    uint64_t seed, long max_evals, long *evals, int *task_node,
                    model_plan *out, char *err, size_t errlen);

/* placer_complete places the tasks from `first` on, the ones before it
 * fixed where task_node[0, first) puts them (a partial placement, e.g. the
 * policy's node head's, that must fit): each later task starts on
 * start[i] (NULL, a node without room or out of range: the first node
 * with room), then `best`'s local search moves and swaps the later tasks
 * only, seeded by seed, within max_evals place_eval calls (<= 0: the
 * default). Writes every task's node into task_node and scores the result
 * into out (start may be task_node itself: each task's start is read
 * before its node is written); returns as placer_run, and PLACER_NOFIT,
 * naming the task and node, when a fixed task is on a node without room
 * for it. Never worse than the start when the start fits: the search only
 * keeps improvements. */
int placer_complete(const model_job *job, const model_cluster *cl, const model_plan *plan,
                    int first, const int *start, uint64_t seed, long max_evals, int *task_node,
                    model_plan *out, char *err, size_t errlen);

/* placer_zone_time returns tau_s(n), the seconds node n needs to move the
 * bytes one worker of stage s exchanges per step over its own link:
 *   tau = latency_n + m_s / (min(N_t, bw_n) (1 - loss_n)),
 *   m_s = 2 W_s + 2 B (a_{i_s - 1} [s not first] + a_{j_s} [s not last]),
 * t the stage's type. The zone method's node score is 1 / tau (lower tau,
 * better node). */
double placer_zone_time(const model_job *job, const model_cluster *cl,
                        const model_plan *plan, int s, int n);

#endif
