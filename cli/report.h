/* report.h -- how the program shows plans: a readable table or JSON.
 *
 * Every subcommand that prints a plan (cost, solve, place, train --search)
 * goes through these so that all of them look and read alike. The JSON
 * object of a plan is env/render.h's render_plan_json, which the daemon
 * uses too, so that the keys are the same everywhere.
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

/* report_json_print dumps obj to f with two-space indentation and a final
 * newline, then drops the reference. */
void report_json_print(FILE *f, json_t *obj);

#endif
