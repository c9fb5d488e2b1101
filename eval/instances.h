/* instances.h -- turning an eval config's `instances:` into problems.
 *
 * Every problem an evaluation solves is written as a run file under
 * OUT/instances/ and loaded back with run_load, so that each row of
 * results.csv points at a file `strata solve` or `strata cost` accepts:
 *
 *   run:          the file itself (copied as a small include when a target
 *                 factor applies, with the jobs written out);
 *   models:       one file per model: `include:` of the cluster and the
 *                 model's job (targets scaled by each factor);
 *   batch:        one file with every model's job under `jobs:`;
 *   generate:     count files drawn from the seed (eval/gen.h).
 *
 * Instance names are "<cluster>/<job>" for a model on a cluster (with
 * "@xF" for a target factor F != 1), "<entry name or cluster>/batch" for a
 * batch, and "<entry name>-<i>" for generated ones; they are unique
 * across the config ("#2", "#3" are appended to repeats).
 */
#ifndef STRATA_EVAL_INSTANCES_H
#define STRATA_EVAL_INSTANCES_H

#include <stddef.h>

#include "env/config.h"
#include "eval/spec.h"

typedef struct {
    char name[160];             /* unique label */
    char file[EVAL_PATH_MAX];   /* the run file under OUT/instances/ (or the source) */
    char cluster[MODEL_NAME_MAX]; /* the cluster's label (file stem, or "gen-<seed>-<i>") */
    int entry;                  /* index in spec->instances */
    int batch;                  /* 1: the jobs form one several-jobs problem */
    cfg_run *run;               /* loaded; jobs read-only once built */
} eval_instance;

/* eval_instances_build expands every entry of spec into *out[*n] (files
 * written under out_dir/instances/, which it creates). Returns 0, or -1
 * with a message naming the entry and the file in err[errlen]. On failure
 * *out is NULL. */
int eval_instances_build(const eval_spec *spec, const char *out_dir, eval_instance **out,
                         int *n, char *err, size_t errlen);

/* eval_instances_free releases what eval_instances_build made; NULL ok. */
void eval_instances_free(eval_instance *v, int n);

/* eval_load_pair loads the run `include: [cluster_abs, model_abs]` (both
 * absolute; model_abs NULL: the cluster beside a one-layer probe job)
 * through the file tmp, which it writes and removes. Returns the run (the
 * caller frees it with cfg_free), or NULL with the message in err[errlen]. */
cfg_run *eval_load_pair(const char *tmp, const char *cluster_abs, const char *model_abs,
                        char *err, size_t errlen);

/* eval_mkdirs creates path and its parents (mode 0777 & umask); 0 or -1
 * with errno set. */
int eval_mkdirs(const char *path);

#endif
