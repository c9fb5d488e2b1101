/* eval.c -- `strata eval`: config-driven evaluation runs.
 *
 *   strata eval CONFIG [--out DIR] [--jobs N] [--no-times] [--quiet]
 *
 * Loads the eval config (eval/spec.h), writes every instance under
 * DIR/instances/, runs every (instance, method, seed) cell on N threads
 * (default: the online CPUs) with a progress bar on a terminal, and writes
 * DIR/results.csv, DIR/summary.md and the PNGs in DIR/plots (docs/eval.md). DIR
 * defaults to eval-results/NAME, NAME being the config's name. The summary
 * is also printed unless --quiet. --no-times leaves the timing column
 * empty (and skips the time plot), so that two runs give identical files.
 *
 * Exit status: 0 done; 1 the results are written but the plots failed;
 * 2 bad usage, a bad config or an unwritable folder.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "eval/instances.h"
#include "eval/plot.h"
#include "eval/report.h"
#include "eval/run.h"
#include "eval/spec.h"

#define EVAL_USAGE \
    "usage: strata eval CONFIG [--out DIR] [--jobs N] [--no-times] [--quiet]\n"

typedef struct {
    int tty;
    double t0, last;
    int last_done;
} progress_state;

/* The progress bar: redrawn in place on a terminal at most ten times a
 * second; elsewhere one line per tenth of the work. */
static void progress(void *user, int done, int total) {
    progress_state *p = user;
    double t = clock_now_s();
    if (p->tty) {
        if (done < total && t - p->last < 0.1) return;
        p->last = t;
        int width = 32, fill = total ? done * width / total : width;
        fprintf(stderr, "\r[");
        for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
        fprintf(stderr, "] %d/%d  %.1f s", done, total, t - p->t0);
        if (done == total) fputc('\n', stderr);
        fflush(stderr);
    } else if (total > 0 && (done * 10 / total != p->last_done * 10 / total || done == total)) {
        fprintf(stderr, "strata eval: %d/%d done, %.1f s\n", done, total, t - p->t0);
    }
    p->last_done = done;
}

int cmd_eval(int argc, char **argv) {
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'},
        {"jobs", required_argument, 0, 'j'},
        {"no-times", no_argument, 0, 'T'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *out = NULL;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    int no_times = 0, quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:j:Tqh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'j': {
            long long v;
            if (cli_parse_int("--jobs", optarg, 1, 256, &v)) return CLI_USAGE;
            jobs = (long)v;
            break;
        }
        case 'T': no_times = 1; break;
        case 'q': quiet = 1; break;
        case 'h': printf(EVAL_USAGE); return CLI_OK;
        default: fprintf(stderr, EVAL_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, EVAL_USAGE);
        return CLI_USAGE;
    }
    if (jobs < 1) jobs = 1;
    cli_blas_one_thread(); /* the cells' decodes run on the workers */
    const char *config = argv[optind];
    char err[4096];
    eval_spec *spec = eval_spec_load(config, err, sizeof err);
    if (!spec) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    int status = CLI_USAGE;
    eval_instance *inst = NULL;
    eval_row *rows = NULL;
    int n_inst = 0, n_rows = 0;
    char dir[EVAL_PATH_MAX], path[EVAL_PATH_MAX + 32];
    if (out) snprintf(dir, sizeof dir, "%s", out);
    else snprintf(dir, sizeof dir, "eval-results/%s", spec->name);
    if (eval_mkdirs(dir) != 0) {
        fprintf(stderr, "strata eval: %s: cannot create: %s\n", dir, strerror(errno));
        goto done;
    }
    double t0 = clock_now_s();
    if (eval_instances_build(spec, dir, &inst, &n_inst, err, sizeof err) < 0) {
        fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    if (!quiet)
        fprintf(stderr, "strata eval %s: %d instances, %d methods, %d seeds, %ld threads -> %s\n",
                config, n_inst, spec->n_methods, spec->n_seeds, jobs, dir);
    progress_state ps = {.tty = isatty(2) && !quiet, .t0 = t0};
    eval_run_opts ro = {.jobs = (int)jobs, .progress = quiet ? NULL : progress, .user = &ps};
    if (eval_run(spec, inst, n_inst, &ro, &rows, &n_rows, err, sizeof err) < 0) {
        fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (eval_write_csv(path, spec, inst, rows, n_rows, no_times, err, sizeof err) < 0) {
        fprintf(stderr, "strata eval: %s\n", err);
        goto done;
    }
    status = CLI_OK;
    eval_plots plots;
    if (eval_plots_make(dir, spec, inst, n_inst, rows, n_rows, no_times, &plots, err,
                        sizeof err) < 0) {
        fprintf(stderr, "strata eval: plots: %s\n", err);
        size_t l = strlen(plots.skipped);
        snprintf(plots.skipped + l, sizeof plots.skipped - l, "%sthe rest: %.300s",
                 l ? "; " : "", err);
        status = CLI_FAIL;
    }
    char command[2048];
    size_t used = (size_t)snprintf(command, sizeof command, "strata eval %s", config);
    if (out && used < sizeof command)
        used += (size_t)snprintf(command + used, sizeof command - used, " --out %s", out);
    if (no_times && used < sizeof command)
        snprintf(command + used, sizeof command - used, " --no-times");
    snprintf(path, sizeof path, "%s/summary.md", dir);
    if (eval_write_summary(path, command, spec, inst, n_inst, rows, n_rows, &plots, no_times,
                           err, sizeof err) < 0) {
        fprintf(stderr, "strata eval: %s\n", err);
        status = CLI_USAGE;
        goto done;
    }
    if (!quiet) {
        FILE *f = fopen(path, "r");
        if (f) {
            char buf[4096];
            size_t got;
            while ((got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, stdout);
            fclose(f);
        }
        fprintf(stderr, "strata eval: %d cells in %.1f s; wrote %s/results.csv, %s/summary.md "
                        "and %d plots in %s/plots\n", n_rows, clock_now_s() - t0, dir, dir, plots.n, dir);
    }
done:
    free(rows);
    eval_instances_free(inst, n_inst);
    eval_spec_free(spec);
    return status;
}
