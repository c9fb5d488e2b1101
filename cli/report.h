/* report.h -- how the program shows plans: a readable table or JSON.
 *
 * Every subcommand that prints a plan (cost, solve, place, train --search)
 * goes through these so that all of them look and read alike, and so that
 * the JSON keys are the same everywhere.
 */
#ifndef STRATA_REPORT_H
#define STRATA_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "env/model.h"

/* report_plan_table prints the stage table (stage, layers, type, units,
 * per-unit time and its parts, stage throughput), then throughput, time,
 * cost and, when the plan was placed, traffic; or the reason it is
 * infeasible. */
void report_plan_table(FILE *f, const model_job *job, const model_cluster *cl,
                       const model_plan *plan);

/* report_plan_json returns a new JSON object (caller owns the reference)
 * with feasible, reason (when infeasible), cost, throughput, time,
 * unit_price, assignment (type name per layer), stages [{type, first, last,
 * layers, units, n_ps, compute, io, xfer, sync, step, throughput}] and,
 * when placed, cross_node_bytes and cross_zone_bytes; when the job's
 * throughput curve is fitted (model_curve), curve {kind "fitted", points,
 * th [4]}, and the table says FITTED on its second line. */
json_t *report_plan_json(const model_job *job, const model_cluster *cl,
                         const model_plan *plan);

/* report_json_print dumps obj to f with two-space indentation and a final
 * newline, then drops the reference. */
void report_json_print(FILE *f, json_t *obj);

#endif
