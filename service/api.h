/* api.h -- the daemon's /v1 endpoints: place, cost, solve and the jobs.
 *
 *   POST /v1/place        a plan and a placement for a job on a cluster, by
 *                         the loaded policy (or a named solver and placer)
 *   POST /v1/cost         score a given plan (type per layer) and placement
 *   POST /v1/solve        run a named plan solver within a time budget
 *   PUT/GET/DELETE /v1/jobs/{name}, GET /v1/jobs
 *                         the jobs the Kubernetes extender knows
 *   POST /v1/jobs/{ns}/{name}/complete
 *                         the job finished: its units are released
 *   GET/PUT /v1/cluster   the daemon's cluster and occupancy (service/cluster.h)
 *
 * /v1/place with "options": {"on": "free"} decides on the daemon's cluster
 * less the units taken, and with "commit": {"job": "ns/name"} takes the
 * units of its placement for that job, in one write transaction of the
 * state file (a plan that no longer fits gets 409 with the reason).
 *
 * Bodies carry `cluster` and `job` in the config schema (service/runjson.h)
 * and small `options` objects; docs/serve.md is the reference of every key,
 * answer and status. Parsed bodies are cached by their bytes
 * (service/reqcache.h). The plan, placement and scores are computed on
 * every request, with one exception: a deterministic policy decode (greedy,
 * or sampling with a seed and no time budget) of a problem seen before is
 * answered from the plan memo while the same policy generation serves
 * (`"cached": true` in the answer). The memo is keyed by the problem as
 * parsed (service/probkey.h: the job's figures without its name, the
 * cluster, the options), so a body that differs from an earlier one only
 * by the job's name gets the same plan without a decode; the answer names
 * its own job ("job"). A reload empties the memo (srv_reload).
 *
 * The decision itself (options, planning, placing) is service/decide.h's,
 * which the extender (service/k8s.h) uses too; GET /v1/jobs/{name} shows
 * what the extender decided for the job (k8s_job_state_json).
 */
#ifndef STRATA_SERVICE_API_H
#define STRATA_SERVICE_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "env/model.h"
#include "service/decide.h"
#include "service/jobs.h"
#include "service/policy_slot.h"
#include "service/reqcache.h"
#include "service/runjson.h"
#include "service/store.h"
#include "service/web.h"

/* Counters the handlers bump (atomics: any thread); owned by the server. */
typedef struct {
    _Atomic uint64_t memo_hits, memo_misses; /* /v1/place policy decodes */
    _Atomic uint64_t stopped, abandoned;     /* cut by request_cpu_ms; client gone */
} api_counters;

/* What the handlers share; owned by the server. */
typedef struct {
    pslot *policy;         /* the current policy, may hold none */
    clp_slot *sim_policy;  /* the shared-cluster policy (--sim-policy), may hold none */
    jobs_registry *jobs;   /* registered jobs */
    rc_cache *cache;       /* parsed bodies */
    rc_cache *clusters;    /* clusters read from /v1/place bodies, by the bytes of
                              their value (model_cluster *); NULL: none kept */
    rc_cache *plans;       /* the plan memo: deterministic policy answers by the
                              canonical bytes of their problem (service/probkey.h)
                              and the policy generation; NULL: no memo */
    rj_limits limits;      /* per-request limits */
    long max_budget_ms;    /* largest budget_ms a request may ask for */
    long request_cpu_ms;   /* > 0: time one decision may take, whatever it asks */
    size_t request_mem_bytes; /* > 0: decodes estimated to need more get 422 */
    api_counters *counters;
    store *state;          /* where the registry is kept (service/store.h); never NULL */
    int max_cluster_nodes; /* nodes PUT /v1/cluster accepts */
} api_env;

#define API_DEFAULT_MAX_BUDGET_MS 10000L
#define API_DEFAULT_REQUEST_CPU_MS 5000L
#define API_DEFAULT_REQUEST_MEM_MB 256

/* api_tasks_json returns [{task, stage, role, node, zone}] for a placed plan. */
json_t *api_tasks_json(const model_cluster *cl, const model_plan *plan, const int *task_node);

/* api_policy_json returns {file, step, hash, generation, loaded_at} or json null. */
json_t *api_policy_json(const pslot_entry *pol);

/* The handlers: each fills rep (status, JSON body). name is the {name} of
 * /v1/jobs/{name}, or NULL for /v1/jobs. */
void api_place(const api_env *env, const web_request *req, web_reply *rep);
void api_cost(const api_env *env, const web_request *req, web_reply *rep);
void api_solve(const api_env *env, const web_request *req, web_reply *rep);
void api_jobs(const api_env *env, const web_request *req, const char *name, web_reply *rep);

#endif
