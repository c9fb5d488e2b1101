/* decide.h -- the daemon's decision: a plan and a task placement for a job.
 *
 * One procedure serves both HTTP faces of the daemon: POST /v1/place
 * (service/api.h) and the Kubernetes extender (service/k8s.h), so that a
 * pod is placed where /v1/place would put its task. It reads the decision
 * options of a request or a registered job (decide_opts_parse), builds the
 * run of a registered job on the nodes the extender has seen
 * (decide_load_registered), and plans and places (decide_run): with the
 * loaded policy, or with a named plan solver (solvers/solve.h) and placer
 * (solvers/placers.h).
 *
 * Library code: nothing here knows HTTP. Messages go to err buffers and
 * name the field ("options.placement: ...").
 */
#ifndef STRATA_SERVICE_DECIDE_H
#define STRATA_SERVICE_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/policy.h"
#include "env/config.h"
#include "env/model.h"
#include "service/clpolicy.h"
#include "service/policy_slot.h"
#include "service/runjson.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#define DECIDE_DEFAULT_SOLVE_BUDGET_MS 1000L /* /v1/solve and plan_method solvers */
#define DECIDE_MAX_SAMPLES 1024
#define DECIDE_FALLBACK_SAMPLES 64 /* sampled when the greedy decode fails */
#define DECIDE_MAX_NODE_SAMPLES 64 /* options.node_samples: at most one decode batch */

/* The decision options of /v1/place (and of a registered job). */
typedef struct {
    int from_policy;          /* 1: the loaded policy plans; 0: plan_method */
    int cluster_policy;       /* 1: plan_method "cluster-policy", the shared-cluster
                                 policy (decide_cluster_policy; from_policy 0) */
    solve_method plan_method; /* when !from_policy */
    int placement;            /* where the tasks go: a placer_placement (solvers/placers.h) */
    agent_decode_kind decode; /* greedy or sample */
    int samples;              /* plans sampled (sample) */
    int node_samples;         /* placement policy: placements the node head samples
                                 for the plan kept besides its greedy one
                                 (agent_decode_opts.node_samples) */
    int polish;               /* 1: the policy's plan finished by segment moves
                                 (agent_decode_opts.polish) */
    uint64_t seed;
    long budget_ms;           /* 0: none for the policy; solvers get the default */
    int fallback;             /* 1 (options naming neither decode nor a solver): a
                                 greedy decode or greedy solver that yields no
                                 plan to act on falls back (decide_run) */
    /* Set by the daemon per request, never parsed from a body: */
    long cpu_ms;              /* > 0: caps the time the decision may take (the
                                 decode's and the solver's budget_ms), whatever
                                 budget_ms asks */
    size_t mem_bytes;         /* > 0: a decode estimated to need more is refused */
    int (*cancelled)(void *ud); /* NULL, or asked between sample batches:
                                 nonzero abandons the decode */
    void *cancel_ud;
    int workers, ps;          /* > 0: the policy's decode gives its plan exactly
                                 this many worker (ps) tasks (agent_decode_opts:
                                 a registered job's replica counts); the solver
                                 path ignores them. 0: the plan's own */
} decide_opts;

#define DECIDE_TOO_BIG (-3) /* decide_run: the request would pass mem_bytes */

/* decide_opts_parse reads an `options` object (NULL: all defaults) for a
 * cluster with (has_nodes 1) or without nodes. Returns 0, or -1 with a
 * message naming the field ("options.placement: ...") in err. */
int decide_opts_parse(const json_t *options, int has_nodes, long max_budget_ms, decide_opts *o,
                      char *err, size_t errlen);

/* The outcome of decide_run; buffers sized for the job and cluster. */
typedef struct {
    int found;            /* 1 when a plan exists (feasible or not, see final) */
    int *assign;          /* [n_layers] */
    int *task_node;       /* [task_cap] node per task when placed */
    int task_cap;
    model_plan *plan;     /* the plan as scored by model_eval or the policy */
    model_plan *placed;   /* the plan refined by a placer (solver path) */
    const model_plan *final; /* plan or placed: the one to report */
    int samples_used;
    int stopped;          /* 1 when a time budget (or cancellation) cut the search */
    int cancelled;        /* 1 when o->cancelled stopped the decode */
    size_t mem_estimate;  /* bytes the decode was estimated to need (policy path) */
    char plan_from[48];   /* "policy" or a solver name, or a fallback's
                             ("exact (greedy decode infeasible)") */
    char placement_by[24]; /* "policy", a placer name, or "" when not placed */
    char why[1024];       /* when !found or the placement failed: why */
    int wait;             /* cluster-policy: 1 when the policy waits (found 0) */
    clp_decision clp;     /* cluster-policy: what it decided */
} decide_result;

/* decide_run plans job on cl by o, with the policy pol when o->from_policy
 * (pol must then be non-NULL), and places the tasks when o->placement says
 * so. With o->fallback, a greedy decode (or the greedy solver) that yields
 * no plan to act on
 * (none, one that misses the target, or one that cannot be placed) falls
 * back: the policy samples DECIDE_FALLBACK_SAMPLES plans (when the memory
 * bound allows), then the exact solver plans and the asked placer (zone for
 * "policy") places; plan_from then names the fallback and why, e.g.
 * "exact (greedy decode infeasible)". When no fallback does better the
 * greedy answer stands, its why saying what was tried. Returns RJ_OK with *d filled (d->found 0 and d->why when no plan
 * exists), RJ_BAD with err for options the policy refuses or a cluster with
 * more tasks than the daemon places, DECIDE_TOO_BIG with err naming the
 * estimate and the limit when the decode would need more than o->mem_bytes,
 * or RJ_NOMEM when out of memory.
 * Free d with decide_result_free (also after a failure). */
int decide_run(const model_job *job, const model_cluster *cl, const decide_opts *o,
               const pslot_entry *pol, decide_result *d, char *err, size_t errlen);
void decide_result_free(decide_result *d);

/* decide_cluster_policy decides for job by the shared-cluster policy net
 * (o->cluster_policy): full is the cluster as configured, freec its free
 * units (the same types; its nodes are the ones tasks may go to) and
 * n_running the jobs holding units (clpolicy.h). A chosen plan is scored
 * on freec at the target it was provisioned for and placed by
 * o->placement, as a solver's plan is; a wait gives d->found 0, d->wait 1
 * and the reason in d->why. Returns RJ_OK, or RJ_BAD / RJ_NOMEM with err.
 * Free d with decide_result_free. */
int decide_cluster_policy(const model_job *job, const model_cluster *full,
                          const model_cluster *freec, int n_running, const decide_opts *o,
                          const spol_net *net, decide_result *d, char *err, size_t errlen);

/* decide_load_registered builds the run of a registered job document with
 * the given nodes and zones in place of the document's cluster nodes and
 * zones (nodes may be NULL: the document's own) and type counts taken from
 * the nodes, within the limits lim. Returns the run (caller frees with
 * cfg_free) or NULL with a message in err. Used by PUT /v1/jobs and the
 * extender. */
cfg_run *decide_load_registered(const rj_limits *lim, const json_t *doc, const json_t *nodes,
                                const json_t *zones, char *err, size_t errlen);

/* decide_method_names writes the plan solvers' names ("exact, greedy, ...")
 * and decide_placement_names the placements' ("policy, spread, ..., none";
 * without "policy, " when with_policy is 0) into buf[len], for messages. */
void decide_method_names(char *buf, size_t len);
void decide_placement_names(char *buf, size_t len, int with_policy);

#endif
