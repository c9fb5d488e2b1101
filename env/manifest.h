/* manifest.h -- a scored plan as Kubernetes objects that run the job as
 * planned.
 *
 * A strata plan puts different stages on different resource types, but a
 * Kubeflow TFJob's workers share one pod template. This module turns a
 * feasible plan (and, optionally, its placement on named nodes) into one
 * workload object whose pod groups each have their own template:
 *
 *   jobset      jobset.x-k8s.io/v1alpha2 JobSet: one replicatedJob (an
 *               Indexed Job, completions = parallelism = its task count) per
 *               group; peers by DNS name through network.enableDNSHostnames:
 *               <name>-<group>-0-<i>.<name>
 *   volcano     batch.volcano.sh/v1alpha1 Job, one task per group,
 *               minAvailable = every task (gang scheduling), plugins svc+env:
 *               peers are <name>-<group>-<i>.<name>
 *   tfjob       kubeflow.org/v1 TFJob (Worker, PS) and
 *   pytorchjob  kubeflow.org/v1 PyTorchJob (Master, Worker), only for a
 *               homogeneous plan (one stage, so one type)
 *
 * A group is a maximal run of consecutive tasks (in the task order of
 * place.h: stage 0's workers, its ps tasks, stage 1's workers, ...) of one
 * stage and role that the placement (if any) put in one zone, so that a
 * pod's plan-order task index is its group's index base plus its completion
 * index. Every pod template carries the pod contract of docs/serve.md
 * (labels strata.io/job, role, stage, type, group; annotations
 * strata.io/zone, layers, index-base, plan, nodes), resources for its type
 * (nvidia.com/gpu for a GPU type, cpu and memory requests for a CPU type),
 * a required node affinity on the labels that name its type and a
 * preferred one on its planned zone, and STRATA_* environment (plus
 * TF_CONFIG, or MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE, set at start by a
 * small /bin/sh wrapper from the pod's completion index).
 *
 * The objects are built as a jansson tree (manifest_build) and written as
 * YAML with libyaml's emitter (manifest_write_yaml).
 */
#ifndef STRATA_ENV_MANIFEST_H
#define STRATA_ENV_MANIFEST_H

#include <stdio.h>

#include <jansson.h>

#include "env/model.h"

typedef enum {
    MANIFEST_AUTO = 0, /* tfjob/pytorchjob when homogeneous, else jobset */
    MANIFEST_JOBSET,
    MANIFEST_VOLCANO,
    MANIFEST_TFJOB,
    MANIFEST_PYTORCHJOB,
} manifest_kind;

typedef enum { MANIFEST_TENSORFLOW = 0, MANIFEST_PYTORCH } manifest_framework;

#define MANIFEST_MAX_TERMS 4
#define MANIFEST_MAX_VALUES 16
#define MANIFEST_KEY_MAX 128

/* One node selector term: nodes whose label `key` has one of `values`. */
typedef struct {
    char key[MANIFEST_KEY_MAX];
    int n_values;
    char values[MANIFEST_MAX_VALUES][MODEL_NAME_MAX];
} manifest_term;

/* How the nodes of one resource type are recognised (terms are ORed, as in
 * nodeSelectorTerms), and the CPUs one unit of a CPU type requests. */
typedef struct {
    int n_terms; /* 0: the type is known by strata.io/type=<name> */
    manifest_term terms[MANIFEST_MAX_TERMS];
    double unit_cpus; /* CPU types: cpus per unit (0: 1) */
} manifest_type_labels;

/* What to write. Strings are borrowed for the call. */
typedef struct {
    manifest_kind kind;
    manifest_framework framework;
    const char *name;                   /* object name; NULL: the job's name made DNS-safe */
    const char *ns;                     /* metadata.namespace, or NULL for none */
    const char *image;                  /* container image; NULL: "REGISTRY/IMAGE:TAG" */
    int n_command;                      /* the training command (argv), 0: the image's own */
    char *const *command;               /* [n_command] */
    int scheduler;                      /* 1: schedulerName strata-scheduler on every pod */
    int port;                           /* MASTER_PORT / TF port (0: 2222) */
    const manifest_type_labels *labels; /* [cl->n_types], or NULL: all by strata.io/type */
} manifest_opts;

/* manifest_opts_default fills o: kind auto, tensorflow, scheduler on,
 * port 2222, everything else NULL/0. */
void manifest_opts_default(manifest_opts *o);

/* manifest_kind_parse returns the kind named text ("auto", "jobset",
 * "volcano", "tfjob", "pytorchjob"), or -1. manifest_kind_name is its
 * inverse. */
int manifest_kind_parse(const char *text);
const char *manifest_kind_name(manifest_kind k);

/* manifest_plan_hash returns the short hex hash (16 digits, FNV-1a 64) of
 * the plan of job: its name, each stage's type name, layers, units and ps
 * tasks, and the node of each task when task_node is not NULL. Writes into
 * out[17]. */
void manifest_plan_hash(const model_job *job, const model_cluster *cl, const model_plan *plan,
                        const int *task_node, char out[17]);

/* One pod group of a plan, as manifest_groups cuts it. */
typedef struct {
    char name[MODEL_NAME_MAX]; /* e.g. "s0-w", "s1-ps", "s0-w2" */
    int stage;
    int is_ps;
    int type;       /* the stage's type (ps: the type of its node when placed) */
    int zone;       /* -1 when not placed */
    int index_base; /* plan-order index of the group's first task */
    int role_base;  /* index of its first task among the tasks of its role */
    int count;      /* tasks */
} manifest_group;

/* manifest_groups cuts the feasible plan's tasks into groups (at most
 * place_task_count(plan) of them) in groups[], with task_node (NULL when not
 * placed) splitting them by zone. Returns the number of groups. */
int manifest_groups(const model_cluster *cl, const model_plan *plan, const int *task_node,
                    manifest_group *groups);

/* manifest_build returns the workload object (a new reference the caller
 * owns) for the feasible plan of job on cl, placed by task_node
 * [place_task_count(plan)] or not (NULL), or NULL with a message in
 * err[errlen]: an infeasible plan, --kind tfjob/pytorchjob for a plan that
 * mixes types (naming them), a bad option. */
json_t *manifest_build(const model_job *job, const model_cluster *cl, const model_plan *plan,
                       const int *task_node, const manifest_opts *o, char *err, size_t errlen);

/* manifest_write_yaml writes v (an object) as one YAML document with
 * libyaml's emitter: strings that a YAML reader would take for a number,
 * boolean or null are quoted. Returns 0, or -1 with err set. */
int manifest_write_yaml(FILE *f, const json_t *v, char *err, size_t errlen);

#endif
