/* config.h -- loading runs (cluster + jobs) from YAML files with libyaml.
 *
 * A run file has top-level keys `model: v1`, `objective: cost|jct`,
 * `cluster:`, `job:` (one job) or `jobs:` (several), and `include:` (a file
 * name or a list of them, relative to the including file) whose top-level
 * keys are merged in. Every key is described by one declarative table (name,
 * kind, bounds, default, field) that the walker of schema.h checks; sizes
 * and rates may carry units (see units.h). Every error names file:line:column and the key
 * path, e.g.
 *
 *   configs/x.yaml:12:7: cluster.types[1].mem: expected a size such as 16GiB or 512MB, got "fast"
 *
 * Loading stops at the first error. Line and column are 1-based and point
 * at the offending value, or at the mapping that lacks a required key.
 * docs/config.md is the reference of every key, default and bound.
 * Messages can hold two file paths; an err buffer of 2048 bytes or more
 * avoids truncation (a shorter one is truncated, always NUL-terminated).
 *
 * Ownership: cfg_load() returns a cfg_run the caller frees with cfg_free().
 */
#ifndef STRATA_CONFIG_H
#define STRATA_CONFIG_H

#include <stddef.h>

#include "env/model.h"
#include "env/units.h"

typedef enum { CFG_OBJECTIVE_COST = 0, CFG_OBJECTIVE_JCT = 1 } cfg_objective;

/* A loaded run: one cluster and one or more jobs. */
typedef struct {
    char path[1024];         /* the top file, as given */
    cfg_objective objective; /* objective: cost (default) or jct */
    model_cluster cluster;
    int n_jobs;
    model_job *jobs; /* [n_jobs] */
} cfg_run;

/* cfg_load reads path (and what it includes). Returns the run, or NULL with
 * "file:line:col: key.path: message" in err[errlen]. */
cfg_run *cfg_load(const char *path, char *err, size_t errlen);

/* cfg_load_cluster is cfg_load for a file whose cluster is what is wanted:
 * `job:` and `jobs:` may be absent (a cluster file of configs/clusters/,
 * or what `strata import-nodes` writes); the run then has n_jobs 0 and
 * jobs NULL. Jobs that are there are loaded and checked as cfg_load does. */
cfg_run *cfg_load_cluster(const char *path, char *err, size_t errlen);

/* cfg_load_buffer is cfg_load on text held in memory (YAML or JSON); name is
 * used in messages in place of a file name. `include:` is refused here so
 * that a request can never name a file to read. */
cfg_run *cfg_load_buffer(const char *name, const char *text, size_t len,
                         char *err, size_t errlen);

struct json_t; /* jansson's json_t */

/* cfg_load_json is cfg_load_buffer on a JSON value already parsed with
 * jansson (the daemon's requests): the walker reads the value as it is,
 * with the same tables and messages as a YAML text of the same content
 * (strings as quoted scalars, numbers, booleans and null as plain ones).
 * root (borrowed) must be an object of top-level keys; `include:` is
 * refused. JSON values have no marks: positions in messages read
 * "name:1:1". */
cfg_run *cfg_load_json(const char *name, const struct json_t *root, char *err, size_t errlen);

/* cfg_load_json_on is cfg_load_json on a root without `cluster:`, the run
 * taking a copy of cl (borrowed) as its cluster: for a caller that loaded
 * that cluster before (the daemon, whose requests repeat the cluster) and
 * needs only the jobs read. The jobs are read against cl exactly as
 * cfg_load_json reads them against a cluster loaded from the same value,
 * with the same messages. A root that has a `cluster:` is refused. */
cfg_run *cfg_load_json_on(const char *name, const struct json_t *root, const model_cluster *cl,
                          char *err, size_t errlen);

/* cfg_cluster_default writes the run loader's default of every optional
 * scalar key of a cluster (inter_bw, inter_latency) into cl, leaving its
 * other fields alone; cfg_node_default sets *n to a node whose optional
 * keys (ps_slots, latency, loss) have their defaults, every other field 0.
 * For code that builds a cluster without a file (strata import-nodes), so
 * that the defaults are the tables' and written once. */
void cfg_cluster_default(model_cluster *cl);
void cfg_node_default(model_node *n);

/* cfg_free releases a run; accepts NULL. */
void cfg_free(cfg_run *run);

/* cfg_load_placement reads a placement file for the plan of job on the
 * run's cluster: top-level key `placement:`, a list with one entry per
 * stage in order, each {workers: [node, ...], ps: [node, ...]} by node name
 * (exactly plan->stages[s].units workers and n_ps ps names). Fills
 * task_node[place_task_count(plan)] in the task order of place.h. Returns 0,
 * or -1 with "file:line:col: placement[s].workers[i]: message" in err.
 * Only names and counts are checked here (an infeasible plan is refused);
 * whether a node has the right type and room is place_eval()'s check. */
int cfg_load_placement(const char *path, const cfg_run *run,
                       const model_plan *plan, int *task_node, char *err,
                       size_t errlen);

#endif
