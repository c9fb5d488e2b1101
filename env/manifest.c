/* manifest.c -- a plan as a JobSet, Volcano Job, TFJob or PyTorchJob
 * (manifest.h).
 *
 * The objects are built as jansson trees, in the key order a reader of the
 * YAML expects (jansson keeps insertion order), and printed by walking the
 * tree with libyaml's emitter. The pod contract (labels and annotations
 * the strata extender reads) is docs/serve.md's.
 */
#include "env/manifest.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "env/place.h"

#define DEFAULT_IMAGE "REGISTRY/IMAGE:TAG"
#define SCHEDULER_NAME "strata-scheduler"
#define ZONE_LABEL "topology.kubernetes.io/zone"
#define TYPE_LABEL "strata.io/type"
#define MAX_NAME 40 /* <name>-<group>-0-<i> stays a 63-character hostname */

/* The /bin/sh wrapper every JobSet/Volcano pod starts with: it works out
 * the pod's plan-order index from the Indexed Job's completion index
 * (JobSet) or Volcano's task index, exports it and the framework's
 * variables, then runs the training command given after it. */
static const char WRAP_COMMON[] = "i=\"${JOB_COMPLETION_INDEX:-${VC_TASK_INDEX:-0}}\"\n"
                                  "export STRATA_INDEX=$((STRATA_INDEX_BASE + i))\n";
static const char WRAP_TF[] = "export "
                              "TF_CONFIG=\"{\\\"cluster\\\":$STRATA_TF_CLUSTER,"
                              "\\\"task\\\":{\\\"type\\\":"
                              "\\\"$STRATA_TF_TYPE\\\",\\\"index\\\":$((STRATA_"
                              "ROLE_INDEX_BASE + i))}}\"\n";
static const char WRAP_TORCH[] = "export RANK=$STRATA_INDEX\n";
static const char WRAP_EXEC[] = "exec \"$@\"\n";

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void manifest_opts_default(manifest_opts *o) {
    memset(o, 0, sizeof *o);
    o->kind = MANIFEST_AUTO;
    o->framework = MANIFEST_TENSORFLOW;
    o->scheduler = 1;
    o->port = 2222;
}

static const char *const kind_names[] = {"auto", "jobset", "volcano", "tfjob", "pytorchjob"};

int manifest_kind_parse(const char *text) {
    for (int k = 0; k < (int)(sizeof kind_names / sizeof *kind_names); k++)
        if (!strcmp(text, kind_names[k])) return k;
    return -1;
}

const char *manifest_kind_name(manifest_kind k) {
    return (int)k >= 0 && (int)k < (int)(sizeof kind_names / sizeof *kind_names) ? kind_names[k]
                                                                                 : "unknown";
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static uint64_t fnv_int(uint64_t h, int v) {
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d;", v);
    return fnv(h, buf, (size_t)n);
}

void manifest_plan_hash(const model_job *job, const model_cluster *cl, const model_plan *plan,
                        const int *task_node, char out[17]) {
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, job->name, strlen(job->name) + 1);
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        h = fnv(h, cl->types[st->type].name, strlen(cl->types[st->type].name) + 1);
        h = fnv_int(fnv_int(fnv_int(fnv_int(h, st->first), st->last), st->units), st->n_ps);
    }
    if (task_node) {
        int n = place_task_count(plan);
        for (int i = 0; i < n; i++)
            h = fnv(h, cl->nodes[task_node[i]].name, strlen(cl->nodes[task_node[i]].name) + 1);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int manifest_groups(const model_cluster *cl, const model_plan *plan, const int *task_node,
                    manifest_group *groups) {
    int n = place_task_count(plan), ng = 0, role_seen[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(plan, i, &s, &is_ps);
        int zone = task_node ? cl->nodes[task_node[i]].zone : -1;
        int type = is_ps && task_node ? cl->nodes[task_node[i]].type : plan->stages[s].type;
        manifest_group *g = ng > 0 ? &groups[ng - 1] : NULL;
        if (!g || g->stage != s || g->is_ps != is_ps || g->zone != zone || g->type != type) {
            g = &groups[ng++];
            memset(g, 0, sizeof *g);
            g->stage = s;
            g->is_ps = is_ps;
            g->zone = zone;
            g->type = type;
            g->index_base = i;
            g->role_base = role_seen[is_ps];
        }
        g->count++;
        role_seen[is_ps]++;
    }
    /* names: s<k>-w / s<k>-ps, numbered from 1 when a stage's role is cut
     * into several runs */
    for (int a = 0; a < ng; a++) {
        int runs = 0, nth = 0;
        for (int b = 0; b < ng; b++)
            if (groups[b].stage == groups[a].stage && groups[b].is_ps == groups[a].is_ps) {
                runs++;
                if (b <= a) nth++;
            }
        const char *role = groups[a].is_ps ? "ps" : "w";
        if (runs > 1)
            snprintf(groups[a].name, sizeof groups[a].name, "s%d-%s%d", groups[a].stage, role, nth);
        else
            snprintf(groups[a].name, sizeof groups[a].name, "s%d-%s", groups[a].stage, role);
    }
    return ng;
}

/* dns_name writes text as an RFC 1123 label (lower case, digits, '-',
 * starting and ending alphanumeric) of at most MAX_NAME characters. */
static void dns_name(const char *text, char *out, size_t outlen) {
    size_t k = 0;
    for (const char *p = text; *p && k + 1 < outlen && k < MAX_NAME; p++) {
        char c = (char)tolower((unsigned char)*p);
        if (!isalnum((unsigned char)c)) c = '-';
        if (c == '-' && (k == 0 || out[k - 1] == '-')) continue;
        out[k++] = c;
    }
    while (k > 0 && out[k - 1] == '-')
        k--;
    out[k] = '\0';
    if (k == 0) snprintf(out, outlen, "strata-job");
}

static json_t *str_list(int n, char *const *v) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *match_expr(const char *key, int n, const char (*values)[MODEL_NAME_MAX]) {
    json_t *vals = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(vals, json_string(values[i]));
    return json_pack("{s:s, s:s, s:o}", "key", key, "operator", "In", "values", vals);
}

/* The required node affinity of a type: its terms, or strata.io/type. */
static json_t *type_affinity(const model_cluster *cl, int t, const manifest_opts *o) {
    json_t *terms = json_array();
    const manifest_type_labels *tl = o->labels ? &o->labels[t] : NULL;
    if (tl && tl->n_terms > 0) {
        for (int k = 0; k < tl->n_terms; k++)
            json_array_append_new(
                terms, json_pack("{s:[o]}", "matchExpressions",
                                 match_expr(tl->terms[k].key, tl->terms[k].n_values,
                                            (const char(*)[MODEL_NAME_MAX])tl->terms[k].values)));
    } else {
        const char(*name)[MODEL_NAME_MAX] = (const char(*)[MODEL_NAME_MAX])cl->types[t].name;
        json_array_append_new(
            terms, json_pack("{s:[o]}", "matchExpressions", match_expr(TYPE_LABEL, 1, name)));
    }
    json_t *na = json_pack("{s:{s:o}}", "requiredDuringSchedulingIgnoredDuringExecution",
                           "nodeSelectorTerms", terms);
    return na;
}

static void mebibytes(double bytes, char *out, size_t outlen) {
    snprintf(out, outlen, "%.0fMi", ceil(bytes / 1048576.0));
}

/* Everything one pod template needs to know of its group. */
typedef struct {
    const char *job;   /* DNS name of the object */
    const char *group; /* label strata.io/group */
    const char *role;  /* worker | ps */
    int stage;         /* its stage (layers, STRATA_STAGE) */
    int type;          /* label strata.io/type, resources, node affinity */
    int zone;          /* planned zone, -1: none */
    int index_base;    /* plan-order index of its first task */
    int role_base;     /* index of its first task among its role's */
    const char *nodes; /* comma list, or NULL */
    int wrap;          /* 1: /bin/sh wrapper (JobSet, Volcano) */
    int require_type;  /* 1: required node affinity on the type's labels */
    int scheduler;
    const char *container; /* container name */
    json_t *extra_env;     /* borrowed: [{name, value}] appended */
} pod_spec;

static void env_add(json_t *env, const char *name, const char *value) {
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static void env_addi(json_t *env, const char *name, long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    env_add(env, name, buf);
}

/* pod_template returns the pod template (a new reference) of the group p
 * describes: the contract's labels and annotations, scheduler, node
 * affinity, the container with its environment, command and resources. */
static json_t *pod_template(const model_job *job, const model_cluster *cl, const model_plan *plan,
                            const char *hash, const pod_spec *p, const manifest_opts *o) {
    const model_stage *st = &plan->stages[p->stage];
    int is_ps = !strcmp(p->role, "ps");
    char buf[64];
    json_t *labels = json_pack("{s:s, s:s}", "strata.io/job", p->job, "strata.io/role", p->role);
    if (!is_ps) {
        snprintf(buf, sizeof buf, "%d", p->stage);
        json_object_set_new(labels, "strata.io/stage", json_string(buf));
    }
    json_object_set_new(labels, "strata.io/type", json_string(cl->types[p->type].name));
    json_object_set_new(labels, "strata.io/group", json_string(p->group));

    json_t *ann = json_object();
    json_object_set_new(ann, "strata.io/zone",
                        json_string(p->zone >= 0 ? cl->zones[p->zone].name : ""));
    snprintf(buf, sizeof buf, "%d-%d", st->first, st->last);
    if (!is_ps) json_object_set_new(ann, "strata.io/layers", json_string(buf));
    snprintf(buf, sizeof buf, "%d", p->index_base);
    json_object_set_new(ann, "strata.io/index-base", json_string(buf));
    json_object_set_new(ann, "strata.io/plan", json_string(hash));
    if (p->nodes) json_object_set_new(ann, "strata.io/nodes", json_string(p->nodes));

    json_t *spec = json_object();
    if (p->scheduler) json_object_set_new(spec, "schedulerName", json_string(SCHEDULER_NAME));
    if (p->wrap) json_object_set_new(spec, "restartPolicy", json_string("Never"));
    /* a ps task may run on any node with a ps slot (docs/model.md §3):
     * it is held to a type only where the placement put it */
    json_t *aff = p->require_type ? type_affinity(cl, p->type, o) : json_object();
    if (p->zone >= 0) {
        const char(*zn)[MODEL_NAME_MAX] = (const char(*)[MODEL_NAME_MAX])cl->zones[p->zone].name;
        json_object_set_new(aff, "preferredDuringSchedulingIgnoredDuringExecution",
                            json_pack("[{s:i, s:{s:[o]}}]", "weight", 100, "preference",
                                      "matchExpressions", match_expr(ZONE_LABEL, 1, zn)));
    }
    if (json_object_size(aff) > 0)
        json_object_set_new(spec, "affinity", json_pack("{s:o}", "nodeAffinity", aff));
    else
        json_decref(aff);

    json_t *env = json_array();
    env_add(env, "STRATA_JOB", p->job);
    env_add(env, "STRATA_PLAN", hash);
    env_add(env, "STRATA_ROLE", p->role);
    env_addi(env, "STRATA_STAGE", p->stage);
    snprintf(buf, sizeof buf, "%d-%d", st->first, st->last);
    env_add(env, "STRATA_LAYERS", buf);
    env_add(env, "STRATA_FIRST_LAYER", job->layers[st->first].name);
    env_add(env, "STRATA_LAST_LAYER", job->layers[st->last].name);
    env_add(env, "STRATA_TYPE", cl->types[p->type].name);
    env_add(env, "STRATA_GROUP", p->group);
    env_addi(env, "STRATA_INDEX_BASE", p->index_base);
    env_addi(env, "STRATA_ROLE_INDEX_BASE", p->role_base);
    size_t i;
    json_t *e;
    if (p->extra_env) json_array_foreach(p->extra_env, i, e) json_array_append(env, e);

    json_t *res;
    if (is_ps) {
        /* a ps task holds its share of the stage's parameters and their
         * gradients: twice W_s / g_s, 256 MiB at least */
        double bytes = 2.0 * st->params / (st->n_ps > 0 ? st->n_ps : 1);
        char mem[32];
        mebibytes(bytes < 268435456.0 ? 268435456.0 : bytes, mem, sizeof mem);
        res = json_pack("{s:{s:s, s:s}}", "requests", "cpu", "1", "memory", mem);
    } else if (cl->types[p->type].is_gpu) {
        res = json_pack("{s:{s:s}}", "limits", "nvidia.com/gpu", "1");
    } else {
        /* one unit of a CPU type: its cpus, and the memory one replica of
         * the stage's layers needs (the plan's m_s, within M_t) */
        double cpus =
            o->labels && o->labels[p->type].unit_cpus > 0 ? o->labels[p->type].unit_cpus : 1.0;
        /* 90% of a unit's cpus: the kubelet reserves part of a node's
         * cores, and `strata import-nodes` counts a node's units to the
         * nearest whole number, so a full unit's worth may not fit */
        char cpu[32], mem[32];
        snprintf(cpu, sizeof cpu, "%.0fm", floor(cpus * 900.0));
        mebibytes(st->mem, mem, sizeof mem);
        res = json_pack("{s:{s:s, s:s}}", "requests", "cpu", cpu, "memory", mem);
    }

    json_t *c =
        json_pack("{s:s, s:s}", "name", p->container, "image", o->image ? o->image : DEFAULT_IMAGE);
    if (p->wrap) {
        char script[1024];
        snprintf(script, sizeof script, "%s%s%s", WRAP_COMMON,
                 o->framework == MANIFEST_PYTORCH ? WRAP_TORCH : WRAP_TF, WRAP_EXEC);
        json_t *cmd = json_pack("[s, s, s, s]", "/bin/sh", "-c", script, "strata-task");
        json_t *user = o->n_command > 0 ? str_list(o->n_command, o->command)
                                        : json_pack("[s, s]", "python3", "train.py");
        json_array_extend(cmd, user);
        json_decref(user);
        json_object_set_new(c, "command", cmd);
    } else if (o->n_command > 0) {
        json_object_set_new(c, "command", str_list(o->n_command, o->command));
    }
    json_object_set_new(c, "env", env);
    json_object_set_new(
        c, "ports",
        json_pack("[{s:s, s:i}]", "name", "strata", "containerPort", o->port > 0 ? o->port : 2222));
    json_object_set_new(c, "resources", res);
    json_object_set_new(spec, "containers", json_pack("[o]", c));

    return json_pack("{s:{s:o, s:o}, s:o}", "metadata", "labels", labels, "annotations", ann,
                     "spec", spec);
}

/* node_list returns the node names of tasks first..first+count-1,
 * comma-separated, in a string the caller frees; NULL when task_node is
 * NULL (not placed) or memory runs out. */
static char *node_list(const model_cluster *cl, const int *task_node, int first, int count) {
    if (!task_node) return NULL;
    size_t cap = (size_t)count * (MODEL_NAME_MAX + 1) + 1, k = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = '\0';
    for (int i = 0; i < count; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s%s", i ? "," : "",
                              cl->nodes[task_node[first + i]].name);
    return s;
}

/* object_head returns a new object with apiVersion, kind and metadata
 * (name, namespace, the job label and the plan annotation). */
static json_t *object_head(const char *api, const char *kind, const char *name,
                           const manifest_opts *o, const char *hash) {
    json_t *meta = json_pack("{s:s}", "name", name);
    if (o->ns) json_object_set_new(meta, "namespace", json_string(o->ns));
    json_object_set_new(meta, "labels", json_pack("{s:s}", "strata.io/job", name));
    json_object_set_new(meta, "annotations", json_pack("{s:s}", "strata.io/plan", hash));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", api, "kind", kind, "metadata", meta);
}

/* build_groups returns the JobSet or Volcano Job (a new reference) of the
 * plan, one replicated job or task per group; NULL with err when out of
 * memory. */
static json_t *build_groups(const model_job *job, const model_cluster *cl, const model_plan *plan,
                            const int *task_node, const manifest_opts *o, manifest_kind kind,
                            const char *name, const char *hash, char *err, size_t errlen) {
    int n = place_task_count(plan);
    manifest_group *groups = calloc((size_t)n, sizeof *groups);
    if (!groups) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    int ng = manifest_groups(cl, plan, task_node, groups);
    int jobset = kind == MANIFEST_JOBSET;

    /* every task's host name, in plan order, and the framework's variables */
    json_t *workers = json_array(), *ps = json_array(), *extra = json_array();
    char master[256] = "";
    for (int g = 0; g < ng; g++)
        for (int i = 0; i < groups[g].count; i++) {
            char host[256];
            if (jobset)
                snprintf(host, sizeof host, "%s-%s-0-%d.%s", name, groups[g].name, i, name);
            else
                snprintf(host, sizeof host, "%s-%s-%d.%s", name, groups[g].name, i, name);
            if (!master[0]) snprintf(master, sizeof master, "%s", host);
            char hp[300];
            snprintf(hp, sizeof hp, "%s:%d", host, o->port > 0 ? o->port : 2222);
            json_array_append_new(groups[g].is_ps ? ps : workers, json_string(hp));
        }
    if (o->framework == MANIFEST_PYTORCH) {
        env_add(extra, "MASTER_ADDR", master);
        env_addi(extra, "MASTER_PORT", o->port > 0 ? o->port : 2222);
        env_addi(extra, "WORLD_SIZE", n);
    } else {
        json_t *tfc = json_pack("{s:o, s:o}", "worker", workers, "ps", ps);
        char *txt = json_dumps(tfc, JSON_COMPACT);
        json_decref(tfc);
        workers = ps = NULL;
        env_add(extra, "STRATA_TF_CLUSTER", txt ? txt : "{}");
        free(txt);
    }
    json_decref(workers);
    json_decref(ps);

    json_t *obj = jobset ? object_head("jobset.x-k8s.io/v1alpha2", "JobSet", name, o, hash)
                         : object_head("batch.volcano.sh/v1alpha1", "Job", name, o, hash);
    json_t *list = json_array(), *worker_groups = json_array();
    for (int g = 0; g < ng; g++) {
        const manifest_group *gr = &groups[g];
        char *nodes = node_list(cl, task_node, gr->index_base, gr->count);
        json_t *x = json_deep_copy(extra);
        if (o->framework == MANIFEST_TENSORFLOW)
            env_add(x, "STRATA_TF_TYPE", gr->is_ps ? "ps" : "worker");
        pod_spec p = {.job = name, .group = gr->name, .role = gr->is_ps ? "ps" : "worker",
                      .stage = gr->stage, .type = gr->type, .zone = gr->zone,
                      .index_base = gr->index_base, .role_base = gr->role_base, .nodes = nodes,
                      .wrap = 1, .require_type = !gr->is_ps || task_node != NULL,
                      .scheduler = jobset && o->scheduler,
                      .container = o->framework == MANIFEST_PYTORCH ? "pytorch" : "tensorflow",
                      .extra_env = x};
        json_t *pod = pod_template(job, cl, plan, hash, &p, o);
        json_decref(x);
        free(nodes);
        if (!gr->is_ps) json_array_append_new(worker_groups, json_string(gr->name));
        if (jobset) {
            json_t *jt = json_pack("{s:{s:{s:s, s:s}}, s:{s:s, s:i, s:i, s:i, s:o}}", "metadata",
                                   "labels", "strata.io/job", name, "strata.io/group", gr->name,
                                   "spec", "completionMode", "Indexed", "completions", gr->count,
                                   "parallelism", gr->count, "backoffLimit", 0, "template", pod);
            json_array_append_new(list, json_pack("{s:s, s:i, s:o}", "name", gr->name, "replicas",
                                                  1, "template", jt));
        } else {
            json_array_append_new(list, json_pack("{s:s, s:i, s:o}", "name", gr->name, "replicas",
                                                  gr->count, "template", pod));
        }
    }
    json_decref(extra);
    json_t *spec;
    if (jobset) {
        /* ps tasks serve until stopped: the JobSet succeeds when every
         * worker group has completed */
        spec = json_pack("{s:{s:b, s:s}, s:{s:s, s:o}, s:o}", "network", "enableDNSHostnames", 1,
                         "subdomain", name, "successPolicy", "operator", "All",
                         "targetReplicatedJobs", worker_groups, "replicatedJobs", list);
    } else {
        json_decref(worker_groups);
        spec = json_pack("{s:i, s:s, s:{s:[], s:[]}, s:[{s:s, s:s}], s:o}", "minAvailable", n,
                         "schedulerName", "volcano", "plugins", "svc", "env", "policies", "event",
                         "PodEvicted", "action", "RestartJob", "tasks", list);
    }
    json_object_set_new(obj, "spec", spec);
    free(groups);
    return obj;
}

/* build_kubeflow returns the TFJob or PyTorchJob (a new reference) of a
 * one-stage plan. */
static json_t *build_kubeflow(const model_job *job, const model_cluster *cl, const model_plan *plan,
                              const int *task_node, const manifest_opts *o, manifest_kind kind,
                              const char *name, const char *hash) {
    const model_stage *st = &plan->stages[0];
    int tf = kind == MANIFEST_TFJOB;
    /* a zone for a role when the placement put all its tasks in one */
    int zone_w = -1, zone_p = -1;
    if (task_node) {
        zone_w = cl->nodes[task_node[0]].zone;
        for (int i = 1; i < st->units; i++)
            if (cl->nodes[task_node[i]].zone != zone_w) zone_w = -1;
        zone_p = cl->nodes[task_node[st->units]].zone;
        for (int i = 1; i < st->n_ps; i++)
            if (cl->nodes[task_node[st->units + i]].zone != zone_p) zone_p = -1;
    }
    json_t *obj = object_head("kubeflow.org/v1", tf ? "TFJob" : "PyTorchJob", name, o, hash);
    json_t *specs = json_object();
    const char *ctr = tf ? "tensorflow" : "pytorch";
    if (tf) {
        char *wn = node_list(cl, task_node, 0, st->units);
        char *pn = node_list(cl, task_node, st->units, st->n_ps);
        /* the ps tasks keep to a type only when placed, all on nodes of one */
        int type_p = st->type, require_p = task_node != NULL;
        for (int i = 0; task_node && i < st->n_ps; i++) {
            int t = cl->nodes[task_node[st->units + i]].type;
            if (i == 0) type_p = t;
            else if (t != type_p) require_p = 0;
        }
        pod_spec w = {.job = name, .group = "worker", .role = "worker", .type = st->type,
                      .zone = zone_w, .nodes = wn, .require_type = 1,
                      .scheduler = o->scheduler, .container = ctr};
        pod_spec p = {.job = name, .group = "ps", .role = "ps", .type = type_p, .zone = zone_p,
                      .index_base = st->units, .nodes = pn, .require_type = require_p,
                      .scheduler = o->scheduler, .container = ctr};
        json_object_set_new(specs, "PS",
                            json_pack("{s:i, s:s, s:o}", "replicas", st->n_ps, "restartPolicy",
                                      "OnFailure", "template",
                                      pod_template(job, cl, plan, hash, &p, o)));
        json_object_set_new(specs, "Worker",
                            json_pack("{s:i, s:s, s:o}", "replicas", st->units, "restartPolicy",
                                      "OnFailure", "template",
                                      pod_template(job, cl, plan, hash, &w, o)));
        free(wn);
        free(pn);
    } else {
        /* PyTorch DDP all-reduces gradients among the workers: the plan's
         * ps tasks have no replica type here (the object says so) */
        char *mn = node_list(cl, task_node, 0, 1);
        char *wn = st->units > 1 ? node_list(cl, task_node, 1, st->units - 1) : NULL;
        pod_spec m = {.job = name, .group = "master", .role = "worker", .type = st->type,
                      .zone = zone_w, .nodes = mn, .require_type = 1,
                      .scheduler = o->scheduler, .container = ctr};
        pod_spec w = {.job = name, .group = "worker", .role = "worker", .type = st->type,
                      .zone = zone_w, .index_base = 1, .role_base = 1, .nodes = wn,
                      .require_type = 1, .scheduler = o->scheduler, .container = ctr};
        json_object_set_new(specs, "Master",
                            json_pack("{s:i, s:s, s:o}", "replicas", 1, "restartPolicy",
                                      "OnFailure", "template",
                                      pod_template(job, cl, plan, hash, &m, o)));
        if (st->units > 1)
            json_object_set_new(specs, "Worker",
                                json_pack("{s:i, s:s, s:o}", "replicas", st->units - 1,
                                          "restartPolicy", "OnFailure", "template",
                                          pod_template(job, cl, plan, hash, &w, o)));
        json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
        char nps[16];
        snprintf(nps, sizeof nps, "%d", st->n_ps);
        json_object_set_new(ann, "strata.io/ps-omitted", json_string(nps));
        free(mn);
        free(wn);
    }
    json_object_set_new(obj, "spec",
                        json_pack("{s:o}", tf ? "tfReplicaSpecs" : "pytorchReplicaSpecs", specs));
    return obj;
}

json_t *manifest_build(const model_job *job, const model_cluster *cl, const model_plan *plan,
                       const int *task_node, const manifest_opts *o, char *err, size_t errlen) {
    if (plan->reason != MODEL_FEASIBLE || plan->n_stages < 1) {
        fail(err, errlen, "job %s: the plan is infeasible: %s", job->name, plan->why);
        return NULL;
    }
    if (task_node && cl->n_nodes == 0) {
        fail(err, errlen, "a placement needs the cluster's nodes");
        return NULL;
    }
    manifest_kind kind = o->kind;
    int homogeneous = plan->n_stages == 1;
    if (kind == MANIFEST_AUTO)
        kind = !homogeneous                       ? MANIFEST_JOBSET
               : o->framework == MANIFEST_PYTORCH ? MANIFEST_PYTORCHJOB
                                                  : MANIFEST_TFJOB;
    if ((kind == MANIFEST_TFJOB || kind == MANIFEST_PYTORCHJOB) && !homogeneous) {
        char types[512] = "";
        size_t k = 0;
        for (int s = 0; s < plan->n_stages && k < sizeof types; s++)
            k += (size_t)snprintf(types + k, sizeof types - k, "%s%s (stage %d)", s ? ", " : "",
                                  cl->types[plan->stages[s].type].name, s);
        fail(err, errlen,
             "--kind %s: the plan of job %s mixes types: %s; a %s's workers share "
             "one pod "
             "template, so use --kind jobset or volcano",
             manifest_kind_name(kind), job->name, types,
             kind == MANIFEST_TFJOB ? "TFJob" : "PyTorchJob");
        return NULL;
    }
    char name[MODEL_NAME_MAX], hash[17];
    dns_name(o->name ? o->name : job->name, name, sizeof name);
    manifest_plan_hash(job, cl, plan, task_node, hash);
    if (kind == MANIFEST_JOBSET || kind == MANIFEST_VOLCANO)
        return build_groups(job, cl, plan, task_node, o, kind, name, hash, err, errlen);
    return build_kubeflow(job, cl, plan, task_node, o, kind, name, hash);
}

/* ---- YAML output ----------------------------------------------------------
 */

/* A string a YAML 1.1 reader would resolve to something else, or that
 * starts like a number: written double-quoted. */
static int needs_quotes(const char *s) {
    static const char *const words[] = {"true", "false", "yes", "no",   "on",
                                        "off",  "y",     "n",   "null", "~"};
    if (!*s) return 1;
    char *end;
    (void)strtod(s, &end);
    if (isdigit((unsigned char)s[0]) || !*end || s[0] == '.' || s[0] == '+') return 1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcasecmp(s, words[i])) return 1;
    return 0;
}

static int emit(yaml_emitter_t *em, yaml_event_t *ev) {
    return yaml_emitter_emit(em, ev) ? 0 : -1;
}

static int emit_scalar(yaml_emitter_t *em, const char *text, yaml_scalar_style_t style) {
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), 1, 1,
                                      style))
        return -1;
    return emit(em, &ev);
}

static int emit_value(yaml_emitter_t *em, const json_t *v) {
    yaml_event_t ev;
    char buf[64];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
            emit(em, &ev))
            return -1;
        json_object_foreach((json_t *)v, key, val) {
            if (emit_scalar(em, key,
                            needs_quotes(key) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                              : YAML_ANY_SCALAR_STYLE) ||
                emit_value(em, val))
                return -1;
        }
        if (!yaml_mapping_end_event_initialize(&ev)) return -1;
        return emit(em, &ev);
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *val;
        /* an empty list is written [] (flow); others as block lists */
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                  json_array_size(v) ? YAML_BLOCK_SEQUENCE_STYLE
                                                                     : YAML_FLOW_SEQUENCE_STYLE) ||
            emit(em, &ev))
            return -1;
        json_array_foreach(v, i, val) if (emit_value(em, val)) return -1;
        if (!yaml_sequence_end_event_initialize(&ev)) return -1;
        return emit(em, &ev);
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        yaml_scalar_style_t style = strchr(s, '\n')   ? YAML_LITERAL_SCALAR_STYLE
                                    : needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                                      : YAML_ANY_SCALAR_STYLE;
        return emit_scalar(em, s, style);
    }
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return emit_scalar(em, buf, YAML_PLAIN_SCALAR_STYLE);
    case JSON_REAL:
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        return emit_scalar(em, buf, YAML_PLAIN_SCALAR_STYLE);
    case JSON_TRUE: return emit_scalar(em, "true", YAML_PLAIN_SCALAR_STYLE);
    case JSON_FALSE: return emit_scalar(em, "false", YAML_PLAIN_SCALAR_STYLE);
    case JSON_NULL: return emit_scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
    }
    return -1;
}

int manifest_write_yaml(FILE *f, const json_t *v, char *err, size_t errlen) {
    yaml_emitter_t em;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&em)) return fail(err, errlen, "out of memory");
    yaml_emitter_set_output_file(&em, f);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, 4096);
    yaml_emitter_set_indent(&em, 2);
    int rc = 0;
    if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || emit(&em, &ev) ||
        !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0) || emit(&em, &ev) ||
        emit_value(&em, v) || !yaml_document_end_event_initialize(&ev, 1) || emit(&em, &ev) ||
        !yaml_stream_end_event_initialize(&ev) || emit(&em, &ev) || !yaml_emitter_flush(&em))
        rc = fail(err, errlen, "writing YAML: %s", em.problem ? em.problem : "output error");
    yaml_emitter_delete(&em);
    return rc;
}
