/* api.h -- the daemon's /v1 endpoints: place, cost, solve and the jobs.
 *
 *   POST /v1/place        a plan and a placement for a job on a cluster, by
 *                         the loaded policy (or a named solver and placer)
 *   POST /v1/cost         score a given plan (type per layer) and placement
 *   POST /v1/solve        run a named plan solver within a time budget
 *   PUT/GET/DELETE /v1/jobs/{name}, GET /v1/jobs
 *                         the jobs the Kubernetes extender knows
 *
 * Bodies carry `cluster` and `job` in the config schema (service/runjson.h)
 * and small `options` objects; docs/serve.md is the reference of every key,
 * answer and status. Parsed bodies are cached by their bytes
 * (service/reqcache.h). The plan, placement and scores are computed on
 * every request, with one exception: a deterministic policy decode (greedy,
 * or sampling with a seed and no time budget) of a body seen before is
 * answered from that body's memo while the same policy generation serves
 * (`"cached": true` in the answer); a reload starts every memo afresh.
 *
 * The same decision procedure (api_decide) serves /v1/place and the
 * extender, so that a pod is placed where /v1/place would put its task.
 */
#ifndef STRATA_SERVICE_API_H
#define STRATA_SERVICE_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/policy.h"
#include "env/model.h"
#include "service/jobs.h"
#include "service/policy_slot.h"
#include "service/reqcache.h"
#include "service/runjson.h"
#include "service/web.h"
#include "solvers/solve.h"

/* Renders a scored plan as JSON (cli/report.h's report_plan_json: the
 * program passes it in so that the daemon's plans read like every other
 * command's). Returns a new reference. */
typedef json_t *(*api_plan_json_fn)(const model_job *job, const model_cluster *cl,
                                    const model_plan *plan);

/* Counters the handlers bump (atomics: any thread); owned by the server. */
typedef struct {
    _Atomic uint64_t memo_hits, memo_misses; /* /v1/place policy decodes */
} api_counters;

/* What the handlers share; owned by the server. */
typedef struct {
    pslot *policy;         /* the current policy, may hold none */
    jobs_registry *jobs;   /* registered jobs */
    rc_cache *cache;       /* parsed bodies */
    rj_limits limits;      /* per-request limits */
    long max_budget_ms;    /* largest budget_ms a request may ask for */
    api_plan_json_fn plan_json;
    api_counters *counters;
} api_env;

#define API_DEFAULT_MAX_BUDGET_MS 10000L
#define API_DEFAULT_SOLVE_BUDGET_MS 1000L /* /v1/solve and plan_method solvers */
#define API_MAX_SAMPLES 1024

/* Where the tasks go. */
#define API_PLACE_NONE (-2)   /* plan only */
#define API_PLACE_POLICY (-1) /* the policy's node head */

/* The decision options of /v1/place (and of a registered job). */
typedef struct {
    int from_policy;          /* 1: the loaded policy plans; 0: plan_method */
    solve_method plan_method; /* when !from_policy */
    int placement;            /* API_PLACE_NONE, API_PLACE_POLICY or a placer_method */
    agent_decode_kind decode; /* greedy or sample */
    int samples;              /* plans sampled (sample) */
    uint64_t seed;
    long budget_ms;           /* 0: none for the policy; solvers get the default */
} api_opts;

/* api_opts_parse reads an `options` object (NULL: all defaults) for a
 * cluster with (has_nodes 1) or without nodes. Returns 0, or -1 with a
 * message naming the field ("options.placement: ...") in err. */
int api_opts_parse(const json_t *options, int has_nodes, long max_budget_ms, api_opts *o,
                   char *err, size_t errlen);

/* The outcome of api_decide; buffers sized for the job and cluster. */
typedef struct {
    int found;            /* 1 when a plan exists (feasible or not, see final) */
    int *assign;          /* [n_layers] */
    int *task_node;       /* [task_cap] node per task when placed */
    int task_cap;
    model_plan *plan;     /* the plan as scored by model_eval or the policy */
    model_plan *placed;   /* the plan refined by a placer (solver path) */
    const model_plan *final; /* plan or placed: the one to report */
    int samples_used;
    char plan_from[24];   /* "policy" or a solver name */
    char placement_by[24]; /* "policy", a placer name, or "" when not placed */
    char why[1024];       /* when !found or the placement failed: why */
} api_decision;

/* api_decide plans job on cl by o, with the policy pol when o->from_policy
 * (pol must then be non-NULL), and places the tasks when o->placement says
 * so. Returns 0 with *d filled (d->found 0 and d->why when no plan exists),
 * 400 with err for options the policy refuses, or 500 when out of memory.
 * Free d with api_decision_free. */
int api_decide(const model_job *job, const model_cluster *cl, const api_opts *o,
               const pslot_entry *pol, api_decision *d, char *err, size_t errlen);
void api_decision_free(api_decision *d);

/* api_tasks_json returns [{task, stage, role, node, zone}] for a placed plan. */
json_t *api_tasks_json(const model_cluster *cl, const model_plan *plan, const int *task_node);

/* api_policy_json returns {file, step, hash, generation, loaded_at} or json null. */
json_t *api_policy_json(const pslot_entry *pol);

/* api_load_registered builds the run of a registered job document with the
 * given nodes in place of the document's cluster nodes (nodes may be NULL:
 * the document's own) and type counts taken from the nodes. Returns the
 * run or NULL with a message in err. Used by the extender. */
cfg_run *api_load_registered(const api_env *env, const json_t *doc, const json_t *nodes,
                             const json_t *zones, char *err, size_t errlen);

/* The handlers: each fills rep (status, JSON body). name is the {name} of
 * /v1/jobs/{name}, or NULL for /v1/jobs. */
void api_place(const api_env *env, const web_request *req, web_reply *rep);
void api_cost(const api_env *env, const web_request *req, web_reply *rep);
void api_solve(const api_env *env, const web_request *req, web_reply *rep);
void api_jobs(const api_env *env, const web_request *req, const char *name, web_reply *rep);

#endif
