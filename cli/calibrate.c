/* calibrate.c -- `strata calibrate`: fit a cluster's rates to measured runs.
 *
 *   strata calibrate CONFIG MEASUREMENTS.csv [--holdout FRACTION] [--seed S]
 *                    [--holdout-job JOB] [--out CALIBRATED.yaml] [--json]
 *
 * CONFIG gives the cluster (a run config, or a cluster file such as
 * configs/clusters/aws-mixed.yaml); the CSV one measured run per row
 * (solvers/calib.h). Per measured type, fits the factors on flops, io_bw
 * and net_bw and a per-step overhead, prints them with the error (MAPE) on
 * the fitted and held-out rows (--holdout-job JOB holds out the rows of one
 * job, as the CSV's job column writes it, instead of a seeded random
 * fraction), and with --out writes the cluster with the
 * factors applied. --json prints {points, fit_points, holdout_points,
 * mape_fit, mape_holdout, types: {NAME: {...}}, rows: [...]} instead.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "env/import.h"
#include "env/units.h"
#include "solvers/calib.h"

#define CALIB_USAGE                                                                         \
    "usage: strata calibrate CONFIG MEASUREMENTS.csv [--holdout FRACTION] [--seed S]\n"     \
    "                        [--holdout-job JOB] [--out CALIBRATED.yaml] [--json]\n"

static const char *KEY[CALIB_NPAR] = {"compute", "input", "network", "overhead"};

int cmd_calibrate(int argc, char **argv) {
    static const struct option opts[] = {
        {"holdout", required_argument, 0, 'H'},
        {"seed", required_argument, 0, 's'},
        {"holdout-job", required_argument, 0, 'j'},
        {"out", required_argument, 0, 'o'},
        {"json", no_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *out = NULL, *holdout_job = NULL;
    double holdout = 0.0;
    long long seed = 0;
    int as_json = 0, c;
    char err[2048];
    optind = 1;
    while ((c = getopt_long(argc, argv, "H:s:j:o:Jh", opts, NULL)) != -1) {
        switch (c) {
        case 'H':
            if (units_parse(UNITS_FRACTION, optarg, &holdout, err, sizeof err) || holdout < 0 ||
                holdout >= 1) {
                fprintf(stderr, "strata: --holdout: expected a fraction from 0 to below 1, got "
                        "\"%s\"\n", optarg);
                return CLI_USAGE;
            }
            break;
        case 's':
            if (cli_parse_int("--seed", optarg, 0, LLONG_MAX, &seed)) return CLI_USAGE;
            break;
        case 'j': holdout_job = optarg; break;
        case 'o': out = optarg; break;
        case 'J': as_json = 1; break;
        case 'h': printf(CALIB_USAGE); return CLI_OK;
        default: fprintf(stderr, CALIB_USAGE); return CLI_USAGE;
        }
    }
    if (holdout_job && holdout > 0) {
        fprintf(stderr, "strata: --holdout and --holdout-job: give one of them\n");
        return CLI_USAGE;
    }
    if (optind != argc - 2) {
        fprintf(stderr, CALIB_USAGE);
        return CLI_USAGE;
    }
    const char *config = argv[optind], *csv = argv[optind + 1];
    cfg_run *run = calib_load(config, err, sizeof err);
    if (!run) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    model_cluster *cl = &run->cluster;
    calib_result *r = calib_fit_split(cl, csv, holdout, (uint64_t)seed, holdout_job, err, sizeof err);
    if (!r) {
        fprintf(stderr, "strata: %s\n", err);
        cfg_free(run);
        return CLI_USAGE;
    }
    int status = CLI_OK;
    if (as_json) {
        json_t *o = json_pack("{s:i, s:i, s:i, s:f, s:o, s:I}", "points", r->n_rows, "fit_points",
                              r->n_fit, "holdout_points", r->n_holdout, "mape_fit", r->mape_fit,
                              "mape_holdout",
                              r->n_holdout ? json_real(r->mape_holdout) : json_null(), "seed",
                              (json_int_t)seed);
        json_t *types = json_object();
        for (int t = 0; t < r->n_types; t++) {
            const calib_type *ct = &r->types[t];
            if (!ct->n_fit) continue;
            json_t *ty = json_pack("{s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f}", "flops_factor",
                                   ct->factor[0], "io_bw_factor", ct->factor[1], "net_bw_factor",
                                   ct->factor[2], "overhead_s", ct->overhead, "fit_points",
                                   ct->n_fit, "holdout_points", ct->n_holdout, "distinct_points",
                                   ct->n_points, "mape_fit", ct->mape_fit);
            json_t *fitted = json_object(), *why = json_object(), *bound = json_array();
            for (int p = 0; p < CALIB_NPAR; p++) {
                json_object_set_new(fitted, KEY[p], json_boolean(ct->fitted[p]));
                if (!ct->fitted[p]) json_object_set_new(why, KEY[p], json_string(ct->why[p]));
                if (ct->at_bound[p]) json_array_append_new(bound, json_string(KEY[p]));
            }
            json_object_set_new(ty, "fitted", fitted);
            json_object_set_new(ty, "not_fitted_because", why);
            json_object_set_new(ty, "at_bound", bound);
            json_object_set_new(types, cl->types[t].name, ty);
        }
        json_object_set_new(o, "types", types);
        json_t *rows = json_array();
        for (int k = 0; k < r->n_rows; k++) {
            const calib_row *w = &r->rows[k];
            json_array_append_new(rows, json_pack("{s:i, s:s, s:s, s:i, s:i, s:f, s:f, s:f, s:b}",
                                                  "line", w->line, "job",
                                                  r->jobs[w->job]->jobs[0].name, "type",
                                                  cl->types[w->type].name, "workers", w->workers,
                                                  "ps", w->ps, "batch", w->batch, "measured",
                                                  w->measured, "predicted", w->predicted,
                                                  "holdout", w->holdout));
        }
        json_object_set_new(o, "rows", rows);
        report_json_print(stdout, o);
    } else {
        if (holdout_job)
            printf("calibrated %s on %s: %d rows (%d fitted, %d held out: job %s)\n", config, csv,
                   r->n_rows, r->n_fit, r->n_holdout, holdout_job);
        else
            printf("calibrated %s on %s: %d rows (%d fitted, %d held out, seed %lld)\n", config,
                   csv, r->n_rows, r->n_fit, r->n_holdout, seed);
        for (int t = 0; t < r->n_types; t++) {
            const calib_type *ct = &r->types[t];
            if (!ct->n_fit) continue;
            printf("  %s: %d rows, %d distinct job/batch points, MAPE %.2f%%\n", cl->types[t].name,
                   ct->n_fit + ct->n_holdout, ct->n_points, ct->mape_fit);
            for (int p = 0; p < CALIB_NPAR; p++) {
                if (!ct->fitted[p]) {
                    printf("    %-9s not fitted: %s\n", KEY[p], ct->why[p]);
                    continue;
                }
                if (p < 3) printf("    %-9s x%.6g%s\n", KEY[p], ct->factor[p],
                                  ct->at_bound[p] ? "  (at its bound)" : "");
                else printf("    %-9s %.6g s per step%s\n", KEY[p], ct->overhead,
                            ct->at_bound[p] ? "  (at its bound)" : "");
            }
        }
        printf("MAPE on fitted rows %.2f%%", r->mape_fit);
        if (r->n_holdout) printf(", on held-out rows %.2f%%", r->mape_holdout);
        printf("\n");
    }
    if (out) {
        char (*note)[IMP_NOTE_MAX] = calloc((size_t)cl->n_types, sizeof *note);
        FILE *f = note ? fopen(out, "w") : NULL;
        if (!f) {
            fprintf(stderr, "strata: %s: cannot write\n", out);
            status = CLI_USAGE;
        } else {
            for (int t = 0; t < r->n_types; t++) {
                const calib_type *ct = &r->types[t];
                if (!ct->n_fit) {
                    snprintf(note[t], IMP_NOTE_MAX, "%s: not measured, figures as in %s",
                             cl->types[t].name, config);
                    continue;
                }
                snprintf(note[t], IMP_NOTE_MAX, "%s: calibrated on %d rows: flops x%.6g%s, io_bw "
                         "x%.6g%s, net_bw x%.6g%s; overhead %.6g s per step (not in model v1); "
                         "MAPE %.2f%%", cl->types[t].name, ct->n_fit, ct->factor[0],
                         ct->fitted[0] ? "" : " (not fitted)", ct->factor[1],
                         ct->fitted[1] ? "" : " (not fitted)", ct->factor[2],
                         ct->fitted[2] ? "" : " (not fitted)", ct->overhead, ct->mape_fit);
            }
            calib_apply(r, cl);
            char header[2048];
            snprintf(header, sizeof header, "GENERATED by strata calibrate from %s and %s\n"
                     "(MAPE %.2f%% on %d fitted rows%s).", config, csv, r->mape_fit, r->n_fit,
                     r->n_holdout ? ", see the report for held-out rows" : "");
            imp_cluster_write(f, cl, (const char(*)[IMP_NOTE_MAX])note, header);
            if (fclose(f)) {
                fprintf(stderr, "strata: %s: write failed\n", out);
                status = CLI_FAIL;
            }
        }
        free(note);
    }
    calib_free(r);
    cfg_free(run);
    return status;
}
