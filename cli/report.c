/* report.c -- plan tables for people and plan objects for programs.
 *
 * The table is meant to be read in a terminal: one row per stage with its
 * layers, type, units and the parts of its per-unit step time, so that a
 * reader sees which term (compute, input, activations, parameter sync)
 * makes a stage slow. The JSON object with the same figures is
 * env/render.h's, which the daemon uses too.
 */
#include "cli/report.h"

#include <math.h>
#include <string.h>

#include "base/bytes.h"

static void human_seconds(char *buf, size_t len, double s) {
    if (s >= 86400.0) snprintf(buf, len, "%.2f days", s / 86400.0);
    else if (s >= 3600.0) snprintf(buf, len, "%.2f h", s / 3600.0);
    else if (s >= 60.0) snprintf(buf, len, "%.2f min", s / 60.0);
    else if (s >= 1.0) snprintf(buf, len, "%.3g s", s);
    else snprintf(buf, len, "%.3g ms", s * 1e3);
}

void report_plan_table(FILE *f, const model_job *job, const model_cluster *cl,
                       const model_plan *plan) {
    fprintf(f, "job %s: %d layers, batch %g, target %g samples/s%s\n", job->name,
            job->n_layers, job->batch, job->min_throughput,
            plan->placed ? " (placed on nodes)" : "");
    if (job->curve.fitted)
        fprintf(f, "throughput curve: FITTED to %d measurements, f(p,w) = w / (%.4g + %.4g w/p "
                "+ %.4g w + %.4g p), in place of the Amdahl law (docs/jobs.md)\n",
                job->n_points, job->curve.th[0], job->curve.th[1], job->curve.th[2],
                job->curve.th[3]);
    fprintf(f, "%-5s %-28s %-10s %5s %4s %10s %10s %10s %10s %10s %12s\n", "stage",
            "layers", "type", "units", "ps", "compute", "input", "act", "sync",
            "step", "samples/s");
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        char layers[64];
        if (st->first == st->last)
            snprintf(layers, sizeof layers, "%d %.20s", st->first, job->layers[st->first].name);
        else
            snprintf(layers, sizeof layers, "%d-%d %.10s..%.10s", st->first, st->last,
                     job->layers[st->first].name, job->layers[st->last].name);
        fprintf(f, "%-5d %-28s %-10.10s %5d %4d %9.4gs %9.4gs %9.4gs %9.4gs %9.4gs %12.6g\n",
                s, layers, cl->types[st->type].name, st->units, st->n_ps, st->compute,
                st->io, st->xfer, st->sync, st->step, st->throughput);
    }
    if (plan->reason != MODEL_FEASIBLE && !(plan->placed && plan->reason == MODEL_ERR_PLACEMENT)) {
        fprintf(f, "infeasible: %s\n", plan->why);
        return;
    }
    char tbuf[32];
    human_seconds(tbuf, sizeof tbuf, plan->time);
    fprintf(f, "throughput %.6g samples/s (target %.6g), time %s, %.6g units-$/h, cost $%.2f\n",
            plan->throughput, job->min_throughput, tbuf, plan->unit_price, plan->cost);
    if (plan->placed) {
        char nb[32], zb[32];
        bytes_format(nb, sizeof nb, plan->cross_node_bytes, &BYTES_SI);
        bytes_format(zb, sizeof zb, plan->cross_zone_bytes, &BYTES_SI);
        fprintf(f, "traffic per step: %s across nodes, %s across zones\n", nb, zb);
        if (plan->reason != MODEL_FEASIBLE) fprintf(f, "infeasible: %s\n", plan->why);
    }
}

void report_json_print(FILE *f, json_t *obj) {
    json_dumpf(obj, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    fputc('\n', f);
    json_decref(obj);
}
