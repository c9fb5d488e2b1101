/* common.c -- loading runs, picking jobs and reading options for the
 * subcommands (see common.h). */
#include "cli/common.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "solvers/runload.h"

void cli_blas_one_thread(void) { openblas_set_num_threads(1); }

cfg_run *cli_load_run(const char *path) {
    char err[2048];
    cfg_run *run = run_load(path, err, sizeof err); /* fits measured jobs: solvers/fit.h */
    if (!run) fprintf(stderr, "strata: %s\n", err);
    return run;
}

model_job *cli_find_job(cfg_run *run, const char *name) {
    if (!name) return &run->jobs[0];
    for (int j = 0; j < run->n_jobs; j++)
        if (!strcmp(run->jobs[j].name, name)) return &run->jobs[j];
    fprintf(stderr, "strata: %s: no job named '%s'\n", run->path, name);
    return NULL;
}

int cli_parse_int(const char *opt, const char *text, long long lo, long long hi,
                  long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "strata: %s: expected a whole number from %lld to %lld, got '%s'\n",
                opt, lo, hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_solve_budget(int letter, const char *text, solve_opts *so) {
    long long v;
    switch (letter) {
    case 'b':
        if (cli_parse_int("--budget-ms", text, 0, LONG_MAX, &v)) return -1;
        so->budget_ms = (long)v;
        return 0;
    case 'e':
        if (cli_parse_int("--evals", text, 1, LONG_MAX, &v)) return -1;
        so->max_evals = (long)v;
        return 0;
    case 's':
        if (cli_parse_int("--seed", text, 0, INT64_MAX, &v)) return -1;
        so->seed = (uint64_t)v;
        return 0;
    default:
        fprintf(stderr, "strata: no budget option '%c'\n", letter);
        return -1;
    }
}
