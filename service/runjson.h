/* runjson.h -- requests' clusters and jobs, read with the config loader.
 *
 * A request carries a cluster and a job in the schema of the YAML configs
 * (docs/config.md), as JSON. This module checks the daemon's own limits on
 * the parsed JSON (how many layers, nodes and types it accepts), then hands
 * {"cluster": ..., "job": ...} to cfg_load_json (the config loader's JSON
 * front end) so that every key, unit and bound is read by the one loader,
 * and the one table, the CLI uses; a job with measured throughputs is fitted as
 * `strata cost` fits it. The loader's messages begin with a place
 * ("request:line:column: key.path: ...") in a text no client ever saw:
 * they are reported by key path alone ("cluster.types[1].mem: expected a
 * size such as 16GiB ...").
 *
 * It also reads the small option objects of requests with messages naming
 * the field ("options.samples: expected a whole number from 1 to 1024").
 *
 * No function here reads a file: `include:` is refused by the loader.
 */
#ifndef STRATA_SERVICE_RUNJSON_H
#define STRATA_SERVICE_RUNJSON_H

#include <stddef.h>

#include <jansson.h>

#include "env/config.h"

/* Status codes of the daemon's library layer (these readers, and
 * service/decide.h, which reads with them): each HTTP edge (service/api.c,
 * service/k8s.c) maps them to statuses, RJ_BAD to 400 and RJ_NOMEM to 500.
 * Functions returning -1 on bad input return RJ_BAD. */
typedef enum {
    RJ_OK = 0,
    RJ_BAD = -1,   /* bad input: err names the field */
    RJ_NOMEM = -2, /* out of memory */
} rj_status;

/* The daemon's limits on one request. */
typedef struct {
    int max_layers; /* layers in a job */
    int max_nodes;  /* nodes in a cluster */
    int max_types;  /* resource types in a cluster */
} rj_limits;

#define RJ_DEFAULT_MAX_LAYERS 256
#define RJ_DEFAULT_MAX_NODES 1024
#define RJ_DEFAULT_MAX_TYPES 64

/* rj_check_keys refuses a key of obj not in allowed[n] (NULL-free list):
 * returns 0, or -1 with "unknown key 'k' (expected a, b, c)" in err,
 * prefixed by where ("" for the top level, else "options: "). */
int rj_check_keys(const json_t *obj, const char *where, const char *const *allowed, int n,
                  char *err, size_t errlen);

/* rj_load_run builds the run of a request from its cluster and job values
 * (and an optional "model" value, may be NULL): checks they are objects,
 * applies lim, loads them with cfg_load_json and fits the job's
 * measurements when it has any. Returns RJ_OK with the run in *run (caller
 * frees with cfg_free), or RJ_BAD (RJ_NOMEM when building the top-level
 * object runs out of memory) with *run NULL and a message naming the key path in
 * err[errlen]. */
int rj_load_run(const json_t *cluster, const json_t *job, const json_t *model,
                const rj_limits *lim, cfg_run **run, char *err, size_t errlen);

/* rj_load_run_on is rj_load_run for a request whose cluster was loaded
 * before (by rj_load_run, from a value equal to this request's): the run
 * gets a copy of cl (borrowed), and only the job (and model) are read. */
#define RJ_LOAD_RUN_ON 1 /* for bench/bench_request.c, which also builds on older trees */
int rj_load_run_on(const model_cluster *cl, const json_t *job, const json_t *model,
                   const rj_limits *lim, cfg_run **run, char *err, size_t errlen);

/* rj_opt_int reads obj[key] (obj may be NULL: *out keeps its default) as a
 * whole number in [lo, hi]. Returns 0, or -1 with "where.key: expected a
 * whole number from lo to hi, got ..." in err. */
int rj_opt_int(const json_t *obj, const char *where, const char *key, long long lo,
               long long hi, long long *out, char *err, size_t errlen);

/* rj_opt_string reads obj[key] as a string (obj may be NULL: *out keeps its
 * default). Returns 0, or -1 with "where.key: expected a string" in err.
 * The string belongs to obj. */
int rj_opt_string(const json_t *obj, const char *where, const char *key, const char **out,
                  char *err, size_t errlen);

/* rj_describe writes a short description of v ("a number", "an array",
 * "\"text\"") into buf[len] for messages. */
void rj_describe(const json_t *v, char *buf, size_t len);

#endif
