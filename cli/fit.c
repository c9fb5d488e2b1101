/* fit.c -- `strata fit`: Optimus's throughput curve from a job's measurements.
 *
 *   strata fit FILE [--job NAME] [--max-speed] [--max-workers N] [--max-ps N]
 *              [--type T] [--json]
 *
 * Fits f(p, w) = w / (th0 + th1 w/p + th2 w + th3 p), th >= 0, to the job's
 * `measurements:` (solvers/fit.h), prints the coefficients, the fit's
 * relative error and the (workers, ps) that reach the job's min_throughput
 * at the least worker unit-seconds per sample or, with --max-speed, the
 * fastest. Workers range up to the cluster's units (--max-workers), ps
 * tasks up to its ps slots (--max-ps; the units when it lists no nodes),
 * both at most FIT_MAX_SEARCH (100,000).
 * With --type, the pick's cost is also given in dollars at that type's
 * price. Exit status 1 when no (workers, ps) reaches the target.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "env/config.h"
#include "solvers/fit.h"
#include "solvers/runload.h"

#define FIT_USAGE                                                                    \
    "usage: strata fit FILE [--job NAME] [--max-speed] [--max-workers N] [--max-ps N]\n" \
    "                  [--type T] [--json]\n"

int cmd_fit(int argc, char **argv) {
    static const struct option opts[] = {
        {"job", required_argument, 0, 'j'},
        {"max-speed", no_argument, 0, 'S'},
        {"max-workers", required_argument, 0, 'w'},
        {"max-ps", required_argument, 0, 'p'},
        {"type", required_argument, 0, 't'},
        {"json", no_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *job_name = NULL, *type_name = NULL;
    int fastest = 0, as_json = 0, max_w = 0, max_p = 0, c;
    long long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "j:Sw:p:t:Jh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': job_name = optarg; break;
        case 'S': fastest = 1; break;
        case 'w':
            if (cli_parse_int("--max-workers", optarg, 1, FIT_MAX_SEARCH, &v)) return CLI_USAGE;
            max_w = (int)v;
            break;
        case 'p':
            if (cli_parse_int("--max-ps", optarg, 1, FIT_MAX_SEARCH, &v)) return CLI_USAGE;
            max_p = (int)v;
            break;
        case 't': type_name = optarg; break;
        case 'J': as_json = 1; break;
        case 'h': printf(FIT_USAGE); return CLI_OK;
        default: fprintf(stderr, FIT_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, FIT_USAGE);
        return CLI_USAGE;
    }
    char err[1024];
    cfg_run *run = run_load(argv[optind], err, sizeof err);
    if (!run) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    int status = CLI_USAGE;
    const model_cluster *cl = &run->cluster;
    model_job *job = NULL;
    for (int j = 0; j < run->n_jobs && !job; j++)
        if (job_name ? !strcmp(run->jobs[j].name, job_name) : run->jobs[j].n_points > 0)
            job = &run->jobs[j];
    if (!job) {
        if (job_name) fprintf(stderr, "strata: %s: no job named '%s'\n", run->path, job_name);
        else fprintf(stderr, "strata: %s: no job carries measurements\n", run->path);
        goto done;
    }
    if (job->n_points == 0) {
        fprintf(stderr, "strata: %s: job %s has no measurements to fit\n", run->path,
                job->name);
        goto done;
    }
    int type = -1;
    if (type_name && (type = model_cluster_type(cl, type_name)) < 0) {
        fprintf(stderr, "strata: --type: no type named '%s' in the cluster\n", type_name);
        goto done;
    }
    fit_result fr;
    if (fit_job(job, &fr, err, sizeof err) < 0) {
        fprintf(stderr, "strata: %s: %s\n", run->path, err);
        goto done;
    }
    if (max_w == 0) {
        long units = 0;
        for (int t = 0; t < cl->n_types; t++) units += cl->types[t].count;
        max_w = units < 1 ? 1 : units > FIT_MAX_SEARCH ? FIT_MAX_SEARCH : (int)units;
    }
    if (max_p == 0) {
        long slots = 0;
        for (int n = 0; n < cl->n_nodes; n++) slots += cl->nodes[n].ps_slots;
        max_p = cl->n_nodes == 0 ? max_w
                : slots < 1 ? 1 : slots > FIT_MAX_SEARCH ? FIT_MAX_SEARCH : (int)slots;
    }
    fit_pick pk;
    fit_best(&job->curve, job->min_throughput, max_w, max_p, fastest, &pk);
    double margin = pk.found ? pk.throughput / job->min_throughput - 1.0 : 0.0;
    double hours = pk.found ? job->samples / pk.throughput / 3600.0 : 0.0;
    const double *th = job->curve.th;
    if (as_json) {
        json_t *o = json_pack("{s:s, s:i, s:[f,f,f,f], s:f, s:f, s:i, s:s, s:i, s:i, s:f}",
                              "job", job->name, "points", fr.n_points, "th", th[0], th[1],
                              th[2], th[3], "rms_rel_error", fr.rms_rel, "max_rel_error",
                              fr.max_rel, "active", fr.n_active, "goal",
                              fastest ? "fastest" : "least cost", "max_workers", max_w,
                              "max_ps", max_p, "target", job->min_throughput);
        if (pk.found) {
            json_t *p = json_pack("{s:i, s:i, s:f, s:f, s:f}", "workers", pk.workers, "ps",
                                  pk.ps, "throughput", pk.throughput, "unit_seconds_per_sample",
                                  pk.unit_s, "hours", hours);
            if (type >= 0)
                json_object_set_new(p, "cost", json_real(hours * pk.workers *
                                                         cl->types[type].price));
            json_object_set_new(o, "pick", p);
        } else {
            json_object_set_new(o, "pick", json_null());
        }
        report_json_print(stdout, o);
    } else {
        printf("job %s: throughput curve FITTED to %d measurements (Optimus, NNLS on 1/f "
               "with relative weights)\n", job->name, fr.n_points);
        printf("  f(p, w) = w / (th0 + th1 w/p + th2 w + th3 p)\n");
        printf("  th0 %.6g  th1 %.6g  th2 %.6g  th3 %.6g  (%d of 4 > 0)\n", th[0], th[1],
               th[2], th[3], fr.n_active);
        printf("  fit error: rms %.2f%%, max %.2f%% (relative, over the measurements)\n",
               100.0 * fr.rms_rel, 100.0 * fr.max_rel);
        printf("search: workers 1..%d, ps 1..%d, %s\n", max_w, max_p,
               fastest ? "fastest" : "least worker unit-seconds per sample reaching the target");
        if (!pk.found) {
            printf("no (workers, ps) reaches the target %.6g samples/s (the curve's ceiling "
                   "is 1 / (th1/p + th2))\n", job->min_throughput);
        } else {
            printf("pick: %d workers, %d ps: %.6g samples/s (target %.6g), %.4g unit-s per "
                   "sample, %.2f h for %.6g samples", pk.workers, pk.ps, pk.throughput,
                   job->min_throughput, pk.unit_s, hours, job->samples);
            if (type >= 0)
                printf(", $%.2f on %s", hours * pk.workers * cl->types[type].price,
                       cl->types[type].name);
            printf("\n");
            if (!fastest && margin < fr.rms_rel)
                printf("note: the pick clears the target by %.2f%%, less than the fit's rms "
                       "error; measure it before relying on it\n", 100.0 * margin);
        }
    }
    status = pk.found ? CLI_OK : CLI_FAIL;
done:
    cfg_free(run);
    return status;
}
