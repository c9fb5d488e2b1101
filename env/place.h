/* place.h -- scoring a placement of a plan's tasks onto nodes (docs/model.md §3).
 *
 * A feasible plan runs, for each stage s, k_s worker tasks (one unit of type
 * t_s each) and g_s ps tasks. A placement maps every task to a node; this
 * module checks that it fits (workers on nodes of their type with free
 * units, ps tasks within ps_slots), refines each stage's P_s and X_s with the
 * links actually used, and counts cross-node and cross-zone bytes per step.
 *
 * Task order, used by every placement array: stage 0's k_0 workers, then its
 * g_0 ps tasks, then stage 1's workers and ps tasks, and so on.
 */
#ifndef STRATA_PLACE_H
#define STRATA_PLACE_H

#include "env/model.h"

/* place_task_count returns the number of tasks of a feasible plan:
 * sum over stages of units + n_ps. */
int place_task_count(const model_plan *plan);

/* place_task_stage returns, for task index i, its stage in *stage and
 * whether it is a ps task (1) or a worker (0); returns -1 when out of range. */
int place_task_stage(const model_plan *plan, int i, int *stage, int *is_ps);

/* place_link_bw returns b(n, m), the effective bandwidth between distinct
 * nodes n and m for traffic of a stage on type t: min(N_t, bw_n, bw_m)
 * times (1 - max loss), capped across zones by the inter-zone bandwidth
 * times (1 - max loss). */
double place_link_bw(const model_cluster *cl, int t, int n, int m);

/* place_link_lat returns lat(n, m): max of the two latencies, plus the
 * inter-zone latency when their zones differ. */
double place_link_lat(const model_cluster *cl, int n, int m);

/* place_eval scores task_node[place_task_count(plan)] for the feasible plan
 * `plan` and writes into `out` (which may be plan itself) the refined
 * stages (xfer = X_s', sync = P_s', step = t_s', throughput = theta_s'),
 * throughput', time', cost', cross_node_bytes, cross_zone_bytes and
 * placed = 1. Returns 0 when the placement fits and keeps theta' >= R;
 * otherwise MODEL_ERR_PLACEMENT with out->why naming the task, node or
 * stage at fault (figures are still filled when the tasks fit). out->cap
 * must be >= plan->n_stages. */
int place_eval(const model_job *job, const model_cluster *cl,
               const model_plan *plan, const int *task_node, model_plan *out);

#endif
