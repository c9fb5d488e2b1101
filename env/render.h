/* render.h -- a scored plan as JSON, the same object everywhere.
 *
 * Every program output and daemon answer that carries a plan (strata cost,
 * solve, place and train --search with --json; the daemon's /v1/place,
 * /v1/cost and /v1/solve) renders it with render_plan_json, so that the
 * keys and figures read alike wherever a plan appears. The text table of
 * the program is cli/report.h's.
 */
#ifndef STRATA_ENV_RENDER_H
#define STRATA_ENV_RENDER_H

#include <jansson.h>

#include "env/model.h"

/* render_plan_json returns a new JSON object (caller owns the reference)
 * with feasible, reason (when infeasible), cost, throughput, time,
 * unit_price, assignment (type name per layer), stages [{type, first, last,
 * layers, units, n_ps, compute, io, xfer, sync, step, throughput}] and,
 * when placed, cross_node_bytes and cross_zone_bytes; when the job's
 * throughput curve is fitted (model_curve), curve {kind "fitted", points,
 * th [4]} (cli/report.h's table says FITTED on its second line). */
json_t *render_plan_json(const model_job *job, const model_cluster *cl,
                         const model_plan *plan);

#endif
