/* k8s.h -- the daemon as a Kubernetes scheduler extender.
 *
 * kube-scheduler calls an extender over HTTP with the types of
 * k8s.io/kube-scheduler/extender/v1, whose JSON keys are the Go field
 * names: POST /k8s/filter takes ExtenderArgs {Pod, Nodes | NodeNames} and
 * answers ExtenderFilterResult {Nodes | NodeNames, FailedNodes,
 * FailedAndUnresolvableNodes, Error};
 * POST /k8s/prioritize takes the same arguments and answers a
 * HostPriorityList [{Host, Score}] with scores from 0 to 10.
 *
 * A training pod is recognised by strata's own labels (strata.io/job,
 * written by `strata manifest`), or by the Kubeflow training-operator
 * labels (training.kubeflow.org/job-name, .../replica-type
 * ps|worker|chief|master, .../replica-index) or Volcano's
 * (volcano.sh/job-name, volcano.sh/task-spec ps|worker, the index from
 * volcano.sh/task-index or the pod name's "-N").
 *
 * A strata pod carries its own plan (type, zone, planned node, task index
 * in its labels and annotations; docs/serve.md has the contract) and is
 * placed by it with no registry entry, so that any replica, restarted or
 * not, answers the same.
 *
 * A Kubeflow or Volcano pod belongs to the job namespace/name (the pod's
 * metadata.namespace, "default" when absent), which must be registered
 * (PUT /v1/jobs/{namespace}/{name}). Its plan was fixed at registration
 * (k8s_fix_plan) and never changes until the job is registered again:
 * worker i is the i-th worker of the plan in stage order, ps j the j-th ps
 * task; a Kubeflow chief (replica-type chief or master) of a job registered
 * with one (replicas Chief or Master: 1) is worker 0, and that job's
 * Kubeflow worker i is worker i + 1. Nodes are read by import-nodes'
 * reader (imp_node_read: types from the instance-type label, else the
 * GKE or NVIDIA GPU product label, else the catalogue's type for either;
 * zones from topology.kubernetes.io/zone;
 * units from allocatable GPUs, or allocatable cpu over the catalogue's
 * unit_cpus; figures from strata.io annotations or the registered
 * cluster's nodes). Filter keeps the nodes of the worker's stage type that
 * have units, fails as FailedAndUnresolvableNodes those that can never host
 * it (not judged, another type, no units) and as FailedNodes those whose
 * units the plan gives to the job's other workers; prioritize gives 10 to
 * the planned node, 7 to nodes that fit in its zone, 4 to
 * nodes that fit elsewhere, 0 to the rest. A pod of a registered job whose
 * role and index the plan does not know (or of a job registered without a
 * plan) is refused: every node in FailedAndUnresolvableNodes, with the
 * reason. Pods of no registered job pass unfiltered with score 0.
 * docs/serve.md describes the deployment.
 */
#ifndef STRATA_SERVICE_K8S_H
#define STRATA_SERVICE_K8S_H

#include <jansson.h>

#include "env/import.h"
#include "service/decide.h"
#include "service/jobs.h"
#include "service/k8sargs.h"
#include "service/kubeapi.h"
#include "service/policy_slot.h"
#include "service/runjson.h"
#include "service/store.h"
#include "service/web.h"

/* Extender scores range over 0..K8S_MAX_SCORE (MaxExtenderPriority). */
#define K8S_MAX_SCORE 10

/* Nodes one filter or prioritize call may list (a 5,000-node cluster and
 * room); each job's inventory stays bounded by limits.max_nodes. */
#define K8S_MAX_CANDIDATES 16384

/* Besides its inventory (at most limits.max_nodes nodes), each job keeps
 * the nodes it refused, by name and resourceVersion with the reason, so
 * that an unchanged node is not read again: at most this many times
 * limits.max_nodes of them (4,096 with the default 1,024; ~300 bytes
 * each). Past that, a refused node is read again at each call. */
#define K8S_REFUSED_PER_NODE 4

/* The pods the extender has placed by a registered job's plan are kept,
 * by pod UID (metadata.uid), in the state file (store_pod_put):
 * kube-scheduler's bind call names the pod but carries no labels, so
 * k8s_bind finds the task there, in whichever process, restarted or not,
 * the bind reaches. At most K8S_BIND_MEMORY pods; past that the oldest
 * are dropped. */
#define K8S_BIND_MEMORY 4096

/* What the extender's handlers share; owned by the server, which hands
 * them the policy slot, registry and limits of the /v1 endpoints. */
typedef struct {
    pslot *policy;       /* the current policy, may hold none */
    jobs_registry *jobs; /* registered jobs (PUT /v1/jobs/{name}) */
    rj_limits limits;    /* per-request limits; max_nodes bounds each job's inventory */
    long max_budget_ms;  /* largest budget_ms a registered job's options may ask for */
    long request_cpu_ms; /* > 0: time one decision may take */
    size_t request_mem_bytes; /* > 0: decodes estimated to need more are refused */
    store *state;        /* the state file the registry is kept in sync with, or NULL */
    const imp_catalogue *catalogue; /* NULL, or instance types and GPU products
                                       (configs/catalogue/instances.yaml) */
    const kapi_client *kube; /* NULL, or the API server the bind verb binds through */
    ka_memo *last_nodes;  /* NULL, or the last Nodes-form body and its read (ka_read's prev) */
} k8s_env;

/* The handlers of POST /k8s/filter and POST /k8s/prioritize. */
void k8s_filter(const k8s_env *env, const web_request *req, web_reply *rep);
void k8s_prioritize(const k8s_env *env, const web_request *req, web_reply *rep);

/* The handler of POST /k8s/bind (the extender's bindVerb): takes
 * ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}, creates the
 * pod's Binding through env->kube and answers ExtenderBindingResult
 * {Error: ""}, or {Error: why} (HTTP 200 either way, as kube-scheduler
 * reads it) when there is no --kube-api or the API server refuses. A bound
 * pod of a registered job, placed by a filter or prioritize call of this
 * daemon or of another on the same state file (before a restart too), has
 * its placement recorded where it was bound (store_bind): the occupancy
 * then holds the node it runs on. */
void k8s_bind(const k8s_env *env, const web_request *req, web_reply *rep);

/* k8s_fix_plan makes the plan of a job document ({cluster, job, options,
 * replicas?}) on its registered nodes less what other jobs take (taken:
 * {node: {units, ps}}, may be NULL), with the loaded policy or the
 * options' plan_method and placer. With replicas {worker: W, ps: P} (or
 * Kubeflow ReplicaSpecs {"replicas": n}; a Chief or Master: 1 counts as
 * one more worker, and the plan's replicas then say "chief": 1) the plan
 * has exactly W workers and P ps tasks: the stages are planned first, extra tasks go to the
 * stages with the fewest (model_plan_set_counts), then a placer places
 * them: the policy's node head when it is asked for (the policy decodes a
 * plan that holds the counts and its node head places exactly those tasks:
 * placement_by "policy"); else, or when no decoded plan holds them, the
 * zone placer, the plan's placement_note saying why. Fewer than the plan
 * needs, or more units than are free, fails. Returns 0 with *plan (caller owns it): {planned: true,
 * plan_from, placement_by, replicas {worker, ps}, workers [{index, stage,
 * type, node, zone}], ps [...], reason?} or, for a cluster without nodes,
 * {planned: false, reason}; or -1 with the reason in err (registration
 * then fails). */
int k8s_fix_plan(const k8s_env *env, const json_t *doc, const json_t *taken, json_t **plan,
                 char *err, size_t errlen);

/* k8s_job_state_json returns the job's fixed plan with nodes_seen (the
 * nodes the extender knows for it), or json null when it has none. Locks
 * the entry's mutex. */
json_t *k8s_job_state_json(jobs_entry *e);

#endif
