/* common.c -- loading runs, picking jobs and reading options for the
 * subcommands (see common.h). */
#include "cli/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/fit.h"

cfg_run *cli_load_run(const char *path) {
    char err[2048];
    cfg_run *run = cfg_load(path, err, sizeof err);
    if (!run) {
        fprintf(stderr, "strata: %s\n", err);
        return NULL;
    }
    if (fit_run(run, err, sizeof err) < 0) { /* jobs with measurements: solvers/fit.h */
        fprintf(stderr, "strata: %s: %s\n", run->path, err);
        cfg_free(run);
        return NULL;
    }
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
