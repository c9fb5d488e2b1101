/* k8s.c -- scheduler extender: filter and prioritize nodes for training pods.
 *
 * A registered job's plan is fixed once, at registration (k8s_fix_plan, on
 * the registered cluster's nodes less the units other jobs' plans take),
 * and kept with the job in the registry and the state file; pods are
 * placed by that plan whatever order they come in, and a job is replanned
 * only when it is registered again. Per job the extender also keeps an
 * inventory of the nodes it has been shown (the registered cluster's
 * nodes, then every node a Nodes-form call described), only to tell the
 * type and zone of a candidate node. Pods written by `strata manifest`
 * carry their plan in their annotations and need no registry at all.
 */
#include "service/k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env/import.h"
#include "env/place.h"
#include "env/units.h"
#include "service/cluster.h"
#include "service/k8sargs.h"
#include "solvers/placers.h"

/* ---- per-job state ------------------------------------------------------------------ */

/* One task's spot in a fixed plan. */
typedef struct {
    char node[MODEL_NAME_MAX];
    char zone[MODEL_NAME_MAX];
    char type[MODEL_NAME_MAX];
    int stage;
} task_spot;

typedef struct {
    json_t *nodes;        /* inventory: array of node objects (config schema) */
    json_t *index;        /* object: node name -> its index in nodes */
    json_t *registered;   /* object: names of the registered cluster's nodes -> true */
    json_t *seen;         /* object: node name -> metadata.resourceVersion last derived */
    json_t *refused;      /* object: node name -> [resourceVersion, why] of a node that
                             derive_node refused (at most K8S_REFUSED_PER_NODE *
                             limits.max_nodes names) */
    uint64_t inv_version; /* +1 whenever the inventory changes */
} job_state;

static void state_free(void *p) {
    job_state *s = p;
    if (!s) return;
    json_decref(s->nodes);
    json_decref(s->index);
    json_decref(s->registered);
    json_decref(s->seen);
    json_decref(s->refused);
    free(s);
}

/* Returns the entry's state, creating it (with the registered nodes) on
 * first use; e->mu must be held. NULL when out of memory. */
static job_state *state_of(jobs_entry *e) {
    if (e->ext) return e->ext;
    job_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const json_t *reg = json_object_get(json_object_get(e->doc, "cluster"), "nodes");
    s->nodes = json_is_array(reg) ? json_deep_copy(reg) : json_array();
    s->index = json_object();
    s->registered = json_object();
    s->seen = json_object();
    s->refused = json_object();
    if (!s->nodes || !s->index || !s->registered || !s->seen || !s->refused) {
        state_free(s);
        return NULL;
    }
    size_t i;
    json_t *n;
    json_array_foreach(s->nodes, i, n) {
        const char *nm = json_string_value(json_object_get(n, "name"));
        if (!nm) continue;
        json_object_set_new(s->index, nm, json_integer((json_int_t)i));
        json_object_set_new(s->registered, nm, json_true());
    }
    s->inv_version = 1;
    e->ext = s;
    e->ext_free = state_free;
    return s;
}

/* The inventory index of node `name`, or -1: a hash lookup, so that a
 * call naming thousands of nodes costs linear time. */
static int inv_find(const job_state *s, const char *name) {
    const json_t *v = json_object_get(s->index, name);
    return v ? (int)json_integer_value(v) : -1;
}

/* ---- reading the scheduler's arguments ------------------------------------------------- */

static const char *str_at(const json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

/* Writes a then b into dst[cap], cut to fit and NUL-terminated, as
 * snprintf(dst, cap, "%s%s", a, b) does but without parsing a format: the
 * extender writes a reason, a type and a zone for each of thousands of
 * candidates a call. A NULL a or b counts as "" (where snprintf would
 * write "(null)": the callers passed `t ? t : ""`). */
static void put_str2(char *dst, size_t cap, const char *a, const char *b) {
    if (!cap) return;
    size_t n = 0;
    for (const char *p = a; p && *p && n + 1 < cap; p++) dst[n++] = *p;
    for (const char *p = b; p && *p && n + 1 < cap; p++) dst[n++] = *p;
    dst[n] = '\0';
}

static void put_str(char *dst, size_t cap, const char *src) {
    put_str2(dst, cap, src, NULL);
}

/* The pod's place in its job. */
typedef struct {
    int known;        /* 1: a ps or worker of a job named job */
    char key[JOBS_KEY_MAX]; /* "namespace/job" */
    char job[JOBS_NAME_MAX];
    int is_ps;
    int is_chief;     /* a Kubeflow Chief or Master replica (worker 0 of the plan) */
    long index;
    /* a pod of `strata manifest` carries its plan (manifest 1): */
    int manifest;
    task_spot spot;   /* its type, zone and planned node ("" when none) */
    char why[300];    /* when !known: why it passes through */
} pod_role;

static int parse_index(const char *text, long *out) {
    if (!text || !*text) return -1;
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v < 0 || v > 1000000) return -1;
    *out = v;
    return 0;
}

/* Reads a label, then the annotation of the same key. */
static const char *label_or_annotation(const json_t *labels, const json_t *ann, const char *key) {
    const char *v = str_at(labels, key);
    return v ? v : str_at(ann, key);
}

/* The n-th (from 0) item of a comma list into buf; "" when there is none. */
static void list_item(const char *list, long n, char *buf, size_t len) {
    buf[0] = '\0';
    for (long i = 0; list && i < n; i++) {
        list = strchr(list, ',');
        if (list) list++;
    }
    if (!list) return;
    size_t k = strcspn(list, ",");
    snprintf(buf, len, "%.*s", (int)k, list);
}

/* A pod of `strata manifest` (label strata.io/job): its task and spot come
 * from its labels and annotations (the contract in docs/serve.md). */
static void identify_manifest(const json_t *labels, const json_t *ann, const char *job,
                              pod_role *r) {
    const char *role = str_at(labels, "strata.io/role");
    const char *type = str_at(labels, "strata.io/type");
    const char *base = str_at(ann, "strata.io/index-base");
    const char *idx = str_at(ann, "batch.kubernetes.io/job-completion-index");
    if (!idx) idx = str_at(labels, "batch.kubernetes.io/job-completion-index");
    if (!idx) idx = str_at(labels, "jobset.sigs.k8s.io/job-index");
    if (!idx) idx = label_or_annotation(labels, ann, "volcano.sh/task-index");
    long b = 0, i = 0;
    if (!role || (strcmp(role, "ps") && strcmp(role, "worker"))) {
        snprintf(r->why, sizeof r->why, "strata pod of job %.63s: label strata.io/role \"%.20s\" "
                 "is not ps or worker", job, role ? role : "(none)");
        return;
    }
    if (!type || !*type) {
        snprintf(r->why, sizeof r->why, "strata pod of job %.63s: no label strata.io/type", job);
        return;
    }
    if ((base && parse_index(base, &b)) || parse_index(idx, &i)) {
        snprintf(r->why, sizeof r->why, "strata pod of job %.63s: no usable index (strata.io/"
                 "index-base \"%.20s\", completion index \"%.20s\")", job, base ? base : "",
                 idx ? idx : "");
        return;
    }
    r->manifest = 1;
    r->is_ps = !strcmp(role, "ps");
    r->index = b + i;
    const char *stage = str_at(labels, "strata.io/stage");
    r->spot.stage = stage ? atoi(stage) : 0;
    snprintf(r->spot.type, sizeof r->spot.type, "%s", type);
    const char *zone = str_at(ann, "strata.io/zone");
    snprintf(r->spot.zone, sizeof r->spot.zone, "%s", zone ? zone : "");
    /* strata.io/nodes lists the group's tasks' nodes: the pod's is at its
     * completion index */
    list_item(str_at(ann, "strata.io/nodes"), i, r->spot.node, sizeof r->spot.node);
    r->known = 1;
}

static void identify(const json_t *pod, pod_role *r) {
    memset(r, 0, sizeof *r);
    const json_t *md = ka_get_ci(pod, "metadata");
    const json_t *labels = json_object_get(md, "labels");
    const json_t *ann = json_object_get(md, "annotations");
    const char *pod_name = str_at(md, "name");
    const char *ns = str_at(md, "namespace");
    const char *job = str_at(labels, "strata.io/job");
    const char *role = NULL, *index = NULL, *source = "kubeflow";
    if (job) {
        snprintf(r->job, sizeof r->job, "%.*s", JOBS_NAME_MAX - 1, job);
        identify_manifest(labels, ann, job, r);
        return;
    }
    job = str_at(labels, "training.kubeflow.org/job-name");
    if (job) {
        role = str_at(labels, "training.kubeflow.org/replica-type");
        index = str_at(labels, "training.kubeflow.org/replica-index");
    } else if ((job = label_or_annotation(labels, ann, "volcano.sh/job-name"))) {
        source = "volcano";
        role = label_or_annotation(labels, ann, "volcano.sh/task-spec");
        index = label_or_annotation(labels, ann, "volcano.sh/task-index");
        if (!index && pod_name) { /* volcano names pods {job}-{task}-{index} */
            const char *dash = strrchr(pod_name, '-');
            if (dash) index = dash + 1;
        }
    } else {
        snprintf(r->why, sizeof r->why, "not a training pod (no strata, Kubeflow or Volcano job label)");
        return;
    }
    char msg[200];
    if (jobs_key(r->key, ns, job, msg, sizeof msg)) {
        snprintf(r->why, sizeof r->why, "%s pod: %.180s", source, msg);
        return;
    }
    snprintf(r->job, sizeof r->job, "%s", job);
    /* the training operator writes the replica type in lower case: chief
     * (TFJob Chief), master (TFJob Master, PyTorchJob Master) */
    int chief = !strcmp(source, "kubeflow") && role &&
                (!strcasecmp(role, "chief") || !strcasecmp(role, "master"));
    if (!role || (strcasecmp(role, "ps") && strcasecmp(role, "worker") && !chief)) {
        snprintf(r->why, sizeof r->why, "%s role \"%.40s\" of job %s is not ps, worker%s",
                 source, role ? role : "(none)", r->key,
                 !strcmp(source, "kubeflow") ? ", chief or master" : "");
        return;
    }
    r->is_ps = !strcasecmp(role, "ps");
    r->is_chief = chief;
    if (parse_index(index, &r->index)) {
        snprintf(r->why, sizeof r->why, "%s %s of job %s has no usable index (\"%.20s\")",
                 source, role, r->key, index ? index : "");
        return;
    }
    r->known = 1;
}

/* One candidate node of a call. */
typedef struct {
    const char *name;
    ka_node *item;       /* what strata read of the Node object (Nodes form), or NULL */
    int inv;             /* index in the inventory, or -1 when it cannot be judged */
    char why[256];       /* when inv < 0 */
    int units;           /* when inv >= 0: the node's units; -1 when not known */
    int taken;           /* when inv >= 0: units the plan gives to other workers */
    char type[MODEL_NAME_MAX], zone[MODEL_NAME_MAX]; /* when inv >= 0 */
} candidate;

/* The parsed ExtenderArgs. In the Nodes form only the parts of each Node
 * object strata reads are parsed (service/k8sargs.h): a call over 5,000
 * nodes costs milliseconds, not the seconds of a whole jansson tree. */
typedef struct {
    ka_args ka;           /* owns the pod, the names and the nodes' parts */
    const json_t *pod;
    int nodes_form;       /* 1: Nodes.items; 0: NodeNames */
    const json_t *names;  /* NodeNames, or NULL in the Nodes form */
    int n;
    candidate *c;         /* [n] */
} ext_args;

static void args_free(ext_args *a) {
    ka_free(&a->ka);
    free(a->c);
}

/* Frees *a at the end of a call that answered from it. A Nodes-form read
 * whose body the server lets go (req->keep) becomes instead the one the
 * next call's nodes are matched against (env->last_nodes). */
static void args_done(const k8s_env *env, const web_request *req, ext_args *a) {
    void (*release)(void *) = NULL;
    void *ud = NULL;
    if (env->last_nodes && a->nodes_form && a->ka.kept > 0 && req->keep &&
        req->keep(req->keep_ud, &release, &ud))
        ka_memo_set(env->last_nodes, &a->ka, release, ud);
    args_free(a);
}

/* Parses ExtenderArgs from the request's body (which must outlive *a: the
 * nodes point into it); returns RJ_OK, or RJ_BAD with a message naming the
 * field (the line and column of malformed JSON), or RJ_NOMEM. The checks
 * come in the order the whole-tree parse made them. */
static int parse_args(const k8s_env *env, const web_request *req, ext_args *a, char *err,
                      size_t errlen) {
    memset(a, 0, sizeof *a);
    const ka_args *prev = ka_memo_get(env->last_nodes);
    int rc = ka_read(req->body, req->body_len, K8S_MAX_CANDIDATES, prev, &a->ka, err, errlen);
    ka_memo_put(env->last_nodes, prev);
    if (rc != KA_OK) return rc == KA_NOMEM ? RJ_NOMEM : -1;
    ka_memo_count(env->last_nodes, &a->ka);
    char d[96];
    a->pod = a->ka.pod;
    if (!json_is_object(a->pod)) {
        if (!a->pod) snprintf(err, errlen, "Pod: missing required key");
        else {
            rj_describe(a->pod, d, sizeof d);
            snprintf(err, errlen, "Pod: expected an object, got %s", d);
        }
        return -1;
    }
    const json_t *names = a->ka.names;
    if (a->ka.has_nodes && a->ka.nodes_type != JSON_NULL) {
        if (a->ka.nodes_type != JSON_OBJECT) {
            rj_describe(a->ka.nodes_value, d, sizeof d);
            snprintf(err, errlen, "Nodes: expected a NodeList object, got %s", d);
            return -1;
        }
        if (a->ka.has_items && a->ka.items_type != JSON_NULL && a->ka.items_type != JSON_ARRAY) {
            rj_describe(a->ka.items_value, d, sizeof d);
            snprintf(err, errlen, "Nodes.items: expected a list of Node objects, got %s", d);
            return -1;
        }
        a->nodes_form = 1;
        a->n = a->ka.n; /* no items: none */
    } else if (names && !json_is_null(names)) {
        if (!json_is_array(names)) {
            rj_describe(names, d, sizeof d);
            snprintf(err, errlen, "NodeNames: expected a list of node names, got %s", d);
            return -1;
        }
        a->names = names;
        a->n = (int)json_array_size(names);
    } else {
        snprintf(err, errlen, "Nodes or NodeNames: one of them is required");
        return -1;
    }
    if (a->n > K8S_MAX_CANDIDATES) {
        snprintf(err, errlen, "%s: %d nodes, more than this daemon accepts (%d)",
                 a->names ? "NodeNames" : "Nodes.items", a->n, K8S_MAX_CANDIDATES);
        return -1;
    }
    a->c = calloc((size_t)(a->n ? a->n : 1), sizeof *a->c);
    if (!a->c) {
        snprintf(err, errlen, "out of memory");
        return RJ_NOMEM;
    }
    for (int i = 0; i < a->n; i++) {
        candidate *c = &a->c[i];
        c->inv = -1;
        if (a->names) {
            const json_t *v = json_array_get(a->names, (size_t)i);
            if (!json_is_string(v)) {
                rj_describe(v, d, sizeof d);
                snprintf(err, errlen, "NodeNames[%d]: expected a node name, got %s", i, d);
                return -1;
            }
            c->name = json_string_value(v);
        } else {
            c->item = &a->ka.nodes[i];
            c->name = c->item->name;
            if (!c->item->is_object || !c->item->has_md || !c->name) {
                snprintf(err, errlen, "Nodes.items[%d].metadata.name: missing required key", i);
                return -1;
            }
        }
    }
    return 0;
}

/* ---- nodes ------------------------------------------------------------------------ */

/* Finds type `name` among the registered cluster's types. */
static const json_t *find_type(const json_t *doc, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(doc, "cluster"), "types"), i, t) {
        const char *nm = str_at(t, "name");
        if (nm && !strcmp(nm, name)) return t;
    }
    return NULL;
}

/* Reads a figure from annotation key into obj[field], checked by units and
 * by the bounds of the config's node keys (no negative figure, a bandwidth
 * above 0, a loss below 1), so that one bad annotation fails its node
 * instead of making the whole cluster unloadable. */
static int annotation_figure(const json_t *ann, const char *key, units_kind kind, json_t *obj,
                             const char *field, char *why, size_t whylen) {
    const char *v = str_at(ann, key);
    if (!v) return 0;
    double x;
    char msg[256];
    if (units_parse(kind, v, &x, msg, sizeof msg) < 0) {
        snprintf(why, whylen, "annotation %s: %.150s", key, msg);
        return -1;
    }
    const char *bound = x < 0 ? "must be >= 0"
                        : kind == UNITS_RATE_BYTES && x <= 0 ? "must be > 0"
                        : kind == UNITS_FRACTION && x >= 1   ? "must be < 1"
                                                             : NULL;
    if (bound) {
        snprintf(why, whylen, "annotation %s: %s, got \"%.60s\"", key, bound, v);
        return -1;
    }
    json_object_set_new(obj, field, kind == UNITS_COUNT ? json_integer((json_int_t)x)
                                                        : json_real(x));
    return 0;
}

/* Lists the registered cluster's type names into buf, for messages. */
static void type_names(const json_t *doc, char *buf, size_t len) {
    size_t i, used = 0;
    json_t *t;
    buf[0] = '\0';
    json_array_foreach(json_object_get(json_object_get(doc, "cluster"), "types"), i, t) {
        const char *nm = str_at(t, "name");
        if (nm && used < len) used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                                       used ? ", " : "", nm);
    }
}

/* Describes a Node object in the config schema: returns a new node object,
 * or NULL with why. The node's facts are read by the reader `strata
 * import-nodes` uses (imp_node_read: quantities as clusters write them,
 * GKE and NVIDIA GPU product labels, zone labels). Its type is the job's
 * cluster type named like its instance type, else (a GPU node) like its GPU
 * product, else the type the catalogue (when loaded) makes of it. A GPU
 * type's units are the allocatable GPUs; a CPU type's, the allocatable cpu
 * over the catalogue's unit_cpus for its instance type (1 unit when the
 * catalogue does not know it); strata.io annotations override. */
static json_t *derive_node(const k8s_env *env, const json_t *doc, const json_t *item,
                           const char *name, char *why, size_t whylen) {
    const json_t *md = ka_get_ci(item, "metadata");
    const json_t *ann = json_object_get(md, "annotations");
    imp_node_facts f;
    if (imp_node_read(item, &f, why, whylen)) return NULL;
    const imp_entry *ce = imp_catalogue_match(env->catalogue, &f);
    const json_t *t = NULL;
    const char *type = NULL;
    if (f.inst && (t = find_type(doc, f.inst))) type = f.inst;
    else if (f.is_gpu && f.prod && (t = find_type(doc, f.prod))) type = f.prod;
    else if (ce && (t = find_type(doc, ce->type.name))) type = ce->type.name;
    if (!t) {
        char types[96], prod[96] = "", cat[96] = "";
        type_names(doc, types, sizeof types);
        if (!f.inst && !(f.is_gpu && f.prod)) {
            snprintf(why, whylen, "no instance-type label (node.kubernetes.io/instance-type)%s: "
                     "strata cannot tell its type", f.is_gpu ? " and no GPU product label "
                     "(cloud.google.com/gke-accelerator, nvidia.com/gpu.product)" : "");
            return NULL;
        }
        if (f.is_gpu && f.prod) snprintf(prod, sizeof prod, "%sGPU product \"%.40s\"",
                                         f.inst ? ", " : "", f.prod);
        if (ce) snprintf(cat, sizeof cat, " (catalogue type %.40s)", ce->type.name);
        snprintf(why, whylen, "%s%.50s%s%s%s is not a type of the job's cluster (%.60s)",
                 f.inst ? "instance type \"" : "", f.inst ? f.inst : "", f.inst ? "\"" : "",
                 prod, cat, types);
        return NULL;
    }
    json_t *n = json_pack("{s:s, s:s}", "name", name, "type", type);
    if (!n) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    if (f.zone) json_object_set_new(n, "zone", json_string(f.zone));
    const char *kind = str_at(t, "kind");
    long units = 1;
    if (kind && !strcmp(kind, "gpu")) {
        units = (long)f.gpus;
    } else if (f.cpus >= 0) {
        const imp_entry *cpu = ce && !ce->type.is_gpu ? ce : NULL;
        if (cpu) units = imp_cpu_units(f.cpus, cpu->unit_cpus);
    }
    json_object_set_new(n, "units", json_integer(units));
    const json_t *bw = json_object_get(t, "net_bw");
    if (bw) json_object_set(n, "bw", (json_t *)bw);
    if (annotation_figure(ann, "strata.io/units", UNITS_COUNT, n, "units", why, whylen) ||
        annotation_figure(ann, "strata.io/ps-slots", UNITS_COUNT, n, "ps_slots", why, whylen) ||
        annotation_figure(ann, "strata.io/bw", UNITS_RATE_BYTES, n, "bw", why, whylen) ||
        annotation_figure(ann, "strata.io/latency", UNITS_SECONDS, n, "latency", why, whylen) ||
        annotation_figure(ann, "strata.io/loss", UNITS_FRACTION, n, "loss", why, whylen)) {
        json_decref(n);
        return NULL;
    }
    json_int_t u = json_integer_value(json_object_get(n, "units"));
    if (u < 0) {
        snprintf(why, whylen, "annotation strata.io/units: must be >= 0");
        json_decref(n);
        return NULL;
    }
    return n;
}

/* Brings the inventory up to date with the call's nodes and resolves each
 * candidate to an inventory index (or a reason it cannot be judged). A
 * node whose metadata.resourceVersion is the one last derived is not
 * derived again, and neither is one refused at that resourceVersion (its
 * reason is kept: derive_node depends only on the node, the job's
 * registered cluster and the catalogue, all three unchanged then), so
 * that a call over unchanged nodes parses none of their labels. Linear
 * in the candidates. */
static void update_inventory(const k8s_env *env, jobs_entry *e, job_state *s, ext_args *a) {
    int max_nodes = env->limits.max_nodes;
    for (int i = 0; i < a->n; i++) {
        candidate *c = &a->c[i];
        int at = inv_find(s, c->name);
        int registered = at >= 0 && json_object_get(s->registered, c->name) != NULL;
        if (c->item && !registered) { /* describe it from its labels */
            const char *rv = c->item->rv;
            const char *last = str_at(s->seen, c->name);
            if (rv && last && at >= 0 && !strcmp(rv, last)) { /* unchanged since */
                c->inv = at;
                continue;
            }
            const json_t *no = json_object_get(s->refused, c->name);
            const char *no_rv = json_string_value(json_array_get(no, 0));
            if (rv && no_rv && !strcmp(rv, no_rv)) { /* refused, and unchanged since */
                put_str(c->why, sizeof c->why, json_string_value(json_array_get(no, 1)));
                continue;
            }
            const json_t *item = ka_node_json(c->item);
            json_t *n = item ? derive_node(env, e->doc, item, c->name, c->why, sizeof c->why)
                             : NULL;
            if (!item) snprintf(c->why, sizeof c->why, "out of memory");
            if (!n) {
                json_object_del(s->seen, c->name);
                if (item && rv && (no || json_object_size(s->refused) <
                                             (size_t)K8S_REFUSED_PER_NODE * (size_t)max_nodes))
                    json_object_set_new(s->refused, c->name, json_pack("[s,s]", rv, c->why));
                continue;
            }
            json_object_del(s->refused, c->name);
            if (at < 0 && (int)json_array_size(s->nodes) >= max_nodes) {
                /* bounded: a caller cannot grow the inventory without end */
                snprintf(c->why, sizeof c->why, "the extender already knows %d nodes for this "
                         "job (--max-nodes)", max_nodes);
                json_decref(n);
                continue;
            }
            if (at < 0) {
                at = (int)json_array_size(s->nodes);
                json_array_append_new(s->nodes, n);
                json_object_set_new(s->index, c->name, json_integer(at));
                s->inv_version++;
            } else if (!json_equal(n, json_array_get(s->nodes, (size_t)at))) {
                json_array_set_new(s->nodes, (size_t)at, n);
                s->inv_version++;
            } else {
                json_decref(n);
            }
            if (rv) json_object_set_new(s->seen, c->name, json_string(rv));
        }
        if (at < 0 && !c->why[0])
            snprintf(c->why, sizeof c->why, "not among the registered cluster's nodes");
        c->inv = at;
    }
}

/* The zones of the inventory: the registered ones, then those the nodes
 * name; nodes without a zone get "unlabelled" when there are zones. NULL
 * when there are none at all (the cluster's implicit default zone). */
static json_t *inventory_zones(const json_t *doc, json_t *nodes) {
    json_t *names = json_array();
    size_t i;
    json_t *z, *n;
    json_array_foreach(json_object_get(json_object_get(doc, "cluster"), "zones"), i, z)
        json_array_append(names, json_object_get(z, "name"));
    int unlabelled = 0;
    json_array_foreach(nodes, i, n) {
        const json_t *zn = json_object_get(n, "zone");
        if (!zn) {
            unlabelled = 1;
            continue;
        }
        int seen = 0;
        size_t k;
        json_t *x;
        json_array_foreach(names, k, x) seen |= json_equal(x, zn);
        if (!seen) json_array_append(names, (json_t *)zn);
    }
    if (json_array_size(names) == 0) {
        json_decref(names);
        return NULL;
    }
    if (unlabelled) {
        json_array_append_new(names, json_string("unlabelled"));
        json_array_foreach(nodes, i, n)
            if (!json_object_get(n, "zone")) json_object_set_new(n, "zone", json_string("unlabelled"));
    }
    json_t *zones = json_array();
    json_array_foreach(names, i, z) json_array_append_new(zones, json_pack("{s:O}", "name", z));
    json_decref(names);
    return zones;
}

/* ---- the plan, fixed at registration ----------------------------------------------------- */

/* Reads the registered replica counts: doc.replicas {worker|Worker: W,
 * ps|PS: P, Chief|Master: 1}, each a count or a Kubeflow ReplicaSpec
 * {"replicas": n} (so that a TFJob's tfReplicaSpecs or a PyTorchJob's
 * pytorchReplicaSpecs can be sent as they are). A chief is one more
 * worker: worker 0 of the plan, the Kubeflow workers then being workers 1
 * to W. Returns 0 when there are none, 1 with *w (chief included) and *p
 * (-1: that role not given) and *chief (0 or 1), -1 with err. */
static int parse_replicas(const json_t *doc, int *w, int *p, int *chief, char *err,
                          size_t errlen) {
    const json_t *reps = json_object_get(doc, "replicas");
    *w = *p = -1;
    *chief = 0;
    if (!reps || json_is_null(reps)) return 0;
    if (!json_is_object(reps)) {
        snprintf(err, errlen, "replicas: expected an object {\"worker\": W, \"ps\": P}");
        return -1;
    }
    const char *k;
    json_t *v;
    int workers = -1;
    json_object_foreach((json_t *)reps, k, v) {
        int is_chief = !strcasecmp(k, "chief") || !strcasecmp(k, "master");
        int *at = !strcasecmp(k, "worker") ? &workers : !strcasecmp(k, "ps") ? p
                  : is_chief ? chief : NULL;
        if (!at) {
            snprintf(err, errlen, "replicas.%.40s: strata plans ps, worker and chief (Chief or "
                     "Master) tasks only", k);
            return -1;
        }
        const json_t *n = json_is_object(v) ? json_object_get(v, "replicas") : v;
        if (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 100000) {
            snprintf(err, errlen, "replicas.%.40s: expected a count from 1 to 100000%s", k,
                     json_is_object(v) ? " in its \"replicas\"" : "");
            return -1;
        }
        if (is_chief && (json_integer_value(n) != 1 || *chief)) {
            snprintf(err, errlen, "replicas.%.40s: a job has one chief (Chief or Master), "
                     "with replicas 1", k);
            return -1;
        }
        *at = (int)json_integer_value(n);
    }
    if (workers >= 0 || *chief) *w = (workers >= 0 ? workers : 0) + *chief;
    return 1;
}

/* The worker and ps tasks of a plan. */
static void plan_counts(const model_plan *pl, int *w, int *p) {
    *w = *p = 0;
    for (int s = 0; s < pl->n_stages; s++) {
        *w += pl->stages[s].units;
        *p += pl->stages[s].n_ps;
    }
}

/* Gives the plan exactly w workers and p ps tasks (-1: keep the plan's) by
 * model_plan_set_counts: the plan's counts are the least that reach R
 * (k_s, g_s), so fewer fails; each extra task goes to the stage with the
 * fewest of its role (ties: the first). Returns 0, or -1 with err. */
static int fix_counts(const model_job *job, const model_cluster *cl, model_plan *pl, int w,
                      int p, char *err, size_t errlen) {
    int kw, kp;
    plan_counts(pl, &kw, &kp);
    if (w >= 0 && w < kw) {
        snprintf(err, errlen, "replicas.worker: the plan needs %d workers over its %d stages to "
                 "reach the job's min_throughput; the job has %d", kw, pl->n_stages, w);
        return -1;
    }
    if (p >= 0 && p < kp) {
        snprintf(err, errlen, "replicas.ps: the plan needs %d ps tasks over its %d stages; the "
                 "job has %d", kp, pl->n_stages, p);
        return -1;
    }
    if (model_plan_set_counts(job, cl, pl, w, p) != MODEL_FEASIBLE) {
        snprintf(err, errlen, "replicas: %.900s", pl->why);
        return -1;
    }
    return 0;
}

/* The plan object of a placed plan: {planned: true, plan_from,
 * placement_by, replicas {worker, ps}, workers [{index, stage, type, node,
 * zone}], ps [...]}, tasks in plan order. */
static json_t *plan_json(const model_cluster *cl, const model_plan *p, const int *task_node,
                         const char *plan_from, const char *placement_by) {
    json_t *workers = json_array(), *ps = json_array();
    int n = place_task_count(p);
    for (int i = 0; i < n; i++) {
        int stage = 0, is_ps = 0;
        place_task_stage(p, i, &stage, &is_ps);
        const model_node *nd = &cl->nodes[task_node[i]];
        json_t *arr = is_ps ? ps : workers;
        json_array_append_new(arr, json_pack("{s:i, s:i, s:s, s:s, s:s}", "index",
                                             (int)json_array_size(arr), "stage", stage, "type",
                                             cl->types[p->stages[stage].type].name, "node",
                                             nd->name, "zone",
                                             cl->n_zones > 0 ? cl->zones[nd->zone].name : ""));
    }
    json_t *o = json_pack("{s:b, s:s, s:s, s:{s:I, s:I}, s:o, s:o}", "planned", 1, "plan_from",
                          plan_from, "placement_by", placement_by, "replicas", "worker",
                          (json_int_t)json_array_size(workers), "ps",
                          (json_int_t)json_array_size(ps), "workers", workers, "ps", ps);
    if (o && p->reason != MODEL_FEASIBLE) /* placed, but slower than R over its links */
        json_object_set_new(o, "reason", json_string(p->why));
    return o;
}

int k8s_fix_plan(const k8s_env *env, const json_t *doc, const json_t *taken, json_t **plan,
                 char *err, size_t errlen) {
    *plan = NULL;
    int w, p, chief;
    if (parse_replicas(doc, &w, &p, &chief, err, errlen) < 0) return -1;
    const json_t *reg = json_object_get(json_object_get(doc, "cluster"), "nodes");
    if (json_array_size(reg) == 0) {
        if (w >= 0 || p >= 0) {
            snprintf(err, errlen, "replicas: the cluster lists no nodes to plan them on "
                     "(send cluster.nodes)");
            return -1;
        }
        *plan = json_pack("{s:b, s:s}", "planned", 0, "reason",
                          "registered without cluster.nodes: the extender fixes a job's plan "
                          "at registration on the registered nodes");
        return *plan ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    }
    json_t *nodes = cluster_free_nodes(reg, taken);
    json_t *zones = nodes ? inventory_zones(doc, nodes) : NULL;
    cfg_run *run = nodes ? decide_load_registered(&env->limits, doc, nodes, zones, err, errlen)
                         : NULL;
    if (!nodes) snprintf(err, errlen, "out of memory");
    json_decref(nodes);
    json_decref(zones);
    if (!run) return -1;
    decide_opts o;
    if (decide_opts_parse(json_object_get(doc, "options"), 1, env->max_budget_ms, &o, err,
                          errlen)) {
        cfg_free(run);
        return -1;
    }
    const pslot_entry *pol = pslot_acquire(env->policy);
    if (o.from_policy && !pol) { /* no policy: the heuristic fallback */
        o.from_policy = 0;
        o.plan_method = SOLVE_GREEDY;
        o.decode = AGENT_DECODE_GREEDY;
        o.samples = 1;
        o.node_samples = 0;
        if (o.placement == PLACER_PLACE_POLICY) o.placement = PLACER_ZONE;
    }
    if (o.placement == PLACER_PLACE_NONE) o.placement = o.from_policy ? PLACER_PLACE_POLICY : PLACER_ZONE;
    int fixed = w >= 0 || p >= 0;
    const model_job *job = &run->jobs[0];
    const model_cluster *cl = &run->cluster;
    o.cpu_ms = env->request_cpu_ms;
    o.mem_bytes = env->request_mem_bytes;
    decide_result d;
    int rc, out = -1;
    char note[300] = "";
    /* With fixed counts and the policy's node head asked for, the policy
     * decodes its plan, the plan gets the registered counts and the node
     * head places exactly those tasks (agent_decode_opts.workers, .ps). When
     * it cannot (no plan of it holds them, or its node head places none),
     * the zone placer places them below and placement_note says why. */
    if (fixed && o.from_policy && o.placement == PLACER_PLACE_POLICY) {
        decide_opts oc = o;
        oc.workers = w > 0 ? w : 0;
        oc.ps = p > 0 ? p : 0;
        rc = decide_run(job, cl, &oc, pol, &d, err, errlen);
        int kw = -1, kp = -1;
        if (rc == 0 && d.found) plan_counts(d.final, &kw, &kp);
        if (rc == 0 && d.found && !d.why[0] && d.final->reason == MODEL_FEASIBLE &&
            d.final->placed && !strcmp(d.placement_by, "policy") && (w < 0 || w == kw) &&
            (p < 0 || p == kp)) {
            if (!(*plan = plan_json(cl, d.final, d.task_node, d.plan_from, d.placement_by)))
                snprintf(err, errlen, "out of memory");
            else out = 0;
            goto placed;
        }
        if (rc == 0)
            snprintf(note, sizeof note, "the policy's node head placed no plan with the "
                     "registered counts (%d workers, %d ps tasks): %.150s; the zone placer "
                     "placed them", w >= 0 ? w : kw, p >= 0 ? p : kp,
                     d.why[0]                              ? d.why
                     : d.final->reason != MODEL_FEASIBLE ? d.final->why
                     : d.plan_from[0] ? d.plan_from : "not placed");
        decide_result_free(&d);
        if (rc == RJ_NOMEM) goto done;
    }
    /* With fixed counts, the plan's stages come first, then a placer places
     * exactly those tasks. */
    int placer = o.placement >= 0 ? o.placement : PLACER_ZONE;
    if (fixed) o.placement = PLACER_PLACE_NONE;
    rc = decide_run(job, cl, &o, o.from_policy ? pol : NULL, &d, err, errlen);
    if (rc != 0) {
        /* err is set */
    } else if (!d.found || d.why[0] || d.plan->reason != MODEL_FEASIBLE) {
        snprintf(err, errlen, "no plan for the job on the registered nodes: %.900s",
                 d.why[0] ? d.why : d.plan->why);
    } else if (!fixed) {
        if (!d.final->placed) snprintf(err, errlen, "the plan was not placed");
        else if (!(*plan = plan_json(cl, d.final, d.task_node, d.plan_from, d.placement_by)))
            snprintf(err, errlen, "out of memory");
        else out = 0;
    } else if (fix_counts(job, cl, d.plan, w, p, err, errlen) == 0) {
        int n = place_task_count(d.plan);
        int *task_node = calloc((size_t)n + 1, sizeof *task_node);
        model_plan *placed = model_plan_create(job->n_layers);
        char msg[1024] = "";
        int pr = task_node && placed ? placer_run(job, cl, d.plan, (placer_method)placer, o.seed,
                                                  task_node, placed, msg, sizeof msg)
                                     : -1;
        if (!task_node || !placed) snprintf(err, errlen, "out of memory");
        else if (pr == PLACER_NOFIT || pr < 0)
            snprintf(err, errlen, "placement %s of %d workers and %d ps tasks: %.900s",
                     placer_method_name((placer_method)placer), w >= 0 ? w : 0, p >= 0 ? p : 0,
                     msg[0] ? msg : placed->why);
        else if (!(*plan = plan_json(cl, placed, task_node, d.plan_from,
                                     placer_method_name((placer_method)placer))))
            snprintf(err, errlen, "out of memory");
        else out = 0;
        free(task_node);
        model_plan_free(placed);
    }
placed:
    decide_result_free(&d);
    if (out == 0 && note[0]) json_object_set_new(*plan, "placement_note", json_string(note));
done:
    pslot_release(env->policy, pol);
    cfg_free(run);
    if (out == 0 && chief) /* worker 0 is the chief's; Kubeflow worker i is worker i + 1 */
        json_object_set_new(json_object_get(*plan, "replicas"), "chief", json_integer(1));
    if (out < 0 && !fixed && rc != RJ_NOMEM) {
        /* registered all the same: its pods are refused with the reason */
        *plan = json_pack("{s:b, s:s}", "planned", 0, "reason", err);
        if (*plan) out = 0;
    }
    return out;
}

json_t *k8s_job_state_json(jobs_entry *e) {
    pthread_mutex_lock(&e->mu);
    json_t *o = e->plan ? json_deep_copy(e->plan) : json_null();
    job_state *s = e->ext;
    if (json_is_object(o))
        json_object_set_new(o, "nodes_seen", json_integer(s ? (json_int_t)json_array_size(s->nodes)
                                                             : (json_int_t)json_array_size(
                                                                   json_object_get(json_object_get(e->doc, "cluster"), "nodes"))));
    pthread_mutex_unlock(&e->mu);
    return o ? o : json_null();
}

/* ---- the calls ------------------------------------------------------------------------ */

/* How the pod relates to the nodes of a call. */
typedef struct {
    int planned;     /* 1 when the pod has a task in the plan */
    int refused;     /* 1: a pod of a registered job the plan does not know */
    int manifest;    /* 1: placed by its own annotations */
    int is_ps;       /* its role */
    task_spot task;  /* its spot, when planned */
    char note[256];  /* for the log line; the reason when refused */
    /* a registered job's pod placed by its plan: what the bind verb will
     * need to find (store_pod_put), written once the job is unlocked */
    char key[JOBS_KEY_MAX];
    const char *role; /* "worker" or "ps" in the plan */
    long at;          /* its index in the plan */
} pod_plan;

/* A task's spot in a plan object; 0, or -1 when the plan has no such task. */
static int spot_of(const json_t *plan, int is_ps, long index, task_spot *t) {
    const json_t *x = json_array_get(json_object_get(plan, is_ps ? "ps" : "workers"),
                                     (size_t)index);
    if (!x) return -1;
    snprintf(t->node, sizeof t->node, "%s", str_at(x, "node") ? str_at(x, "node") : "");
    snprintf(t->zone, sizeof t->zone, "%s", str_at(x, "zone") ? str_at(x, "zone") : "");
    snprintf(t->type, sizeof t->type, "%s", str_at(x, "type") ? str_at(x, "type") : "");
    t->stage = (int)json_integer_value(json_object_get(x, "stage"));
    return 0;
}

/* A manifest pod's candidates: type and zone from the Node objects' labels
 * (strata.io/type, else node.kubernetes.io/instance-type); in the NodeNames
 * form only names are known, so every node passes and the planned one
 * scores best. */
static void judge_by_labels(ext_args *a, const pod_plan *pp) {
    for (int i = 0; i < a->n; i++) {
        candidate *c = &a->c[i];
        c->units = -1; /* not known here: only the type is judged */
        if (!c->item) {
            c->inv = 0;
            put_str(c->type, sizeof c->type, pp->task.type);
            continue;
        }
        const json_t *labels = json_object_get(ka_get_ci(ka_node_json(c->item), "metadata"),
                                               "labels");
        const char *t = str_at(labels, "strata.io/type");
        if (!t) t = str_at(labels, "node.kubernetes.io/instance-type");
        const char *z = str_at(labels, "topology.kubernetes.io/zone");
        if (!t) {
            snprintf(c->why, sizeof c->why, "the node has no strata.io/type or "
                     "node.kubernetes.io/instance-type label");
            continue;
        }
        c->inv = 0;
        put_str(c->type, sizeof c->type, t);
        put_str(c->zone, sizeof c->zone, z);
    }
}

/* Identifies the pod, finds its task in its job's fixed plan (or in its
 * own annotations) and resolves the candidates. Fills *pp; candidates'
 * inv/why are set. */
static void plan_pod(const k8s_env *env, ext_args *a, pod_plan *pp) {
    memset(pp, 0, sizeof *pp);
    pod_role role;
    identify(a->pod, &role);
    if (!role.known) {
        snprintf(pp->note, sizeof pp->note, "pass: %.240s", role.why);
        return;
    }
    const char *r = role.is_ps ? "ps" : role.is_chief ? "chief" : "worker";
    pp->is_ps = role.is_ps;
    if (role.manifest) {
        pp->planned = pp->manifest = 1;
        pp->task = role.spot;
        snprintf(pp->note, sizeof pp->note, "strata job %.40s %s %ld -> %.40s (%.40s, zone %.40s; "
                 "from its annotations)", role.job, r, role.index,
                 role.spot.node[0] ? role.spot.node : "any", role.spot.type, role.spot.zone);
        judge_by_labels(a, pp);
        return;
    }
    char err[512] = "";
    if (env->state && store_sync(env->state, env->jobs, 0, err, sizeof err)) {
        pp->refused = 1;
        snprintf(pp->note, sizeof pp->note, "strata: %.240s", err);
        return;
    }
    jobs_entry *e = jobs_get(env->jobs, role.key);
    if (!e) {
        snprintf(pp->note, sizeof pp->note, "pass: job %.127s is not registered", role.key);
        return;
    }
    pthread_mutex_lock(&e->mu);
    job_state *s = state_of(e);
    if (!s) {
        snprintf(pp->note, sizeof pp->note, "pass: out of memory");
    } else {
        update_inventory(env, e, s, a);
        const json_t *plan = e->plan;
        int n = (int)json_array_size(json_object_get(plan, role.is_ps ? "ps" : "workers"));
        /* A job registered with a chief (replicas Chief or Master): the
         * chief is worker 0 of the plan, Kubeflow worker i is worker i + 1. */
        int has_chief = json_integer_value(json_object_get(json_object_get(plan, "replicas"),
                                                           "chief")) == 1;
        long at = role.is_ps ? role.index : role.is_chief ? 0 : role.index + has_chief;
        if (!json_is_true(json_object_get(plan, "planned"))) {
            pp->refused = 1;
            snprintf(pp->note, sizeof pp->note, "strata: job %.100s has no plan: %.120s", role.key,
                     str_at(plan, "reason") ? str_at(plan, "reason") : "not planned");
        } else if (role.is_chief && !has_chief) {
            pp->refused = 1;
            snprintf(pp->note, sizeof pp->note, "strata: job %.100s has a chief pod but was "
                     "registered without one: register it with replicas naming Chief (or "
                     "Master): 1, and the chief is worker 0 of the plan", role.key);
        } else if (role.is_chief && role.index != 0) {
            pp->refused = 1;
            snprintf(pp->note, sizeof pp->note, "strata: job %.100s chief %ld: a job has one "
                     "chief, index 0", role.key, role.index);
        } else if (spot_of(plan, role.is_ps, at, &pp->task)) {
            pp->refused = 1;
            snprintf(pp->note, sizeof pp->note, "strata: job %.100s %s %ld is not in its plan "
                     "(the plan has %d %s tasks%s; register the job again to replan)", role.key,
                     r, role.index, n - (!role.is_ps && has_chief), r,
                     !role.is_ps && has_chief ? " besides the chief" : "");
        } else {
            pp->planned = 1;
            char as[32] = "";
            if (!role.is_ps && has_chief) snprintf(as, sizeof as, "; plan worker %ld", at);
            snprintf(pp->note, sizeof pp->note, "job %.90s %s %ld -> %.50s (stage %d, %.50s%s)",
                     role.key, r, role.index, pp->task.node, pp->task.stage, pp->task.type, as);
            snprintf(pp->key, sizeof pp->key, "%s", role.key);
            pp->role = role.is_ps ? "ps" : "worker";
            pp->at = at;
        }
        /* Candidates' types and zones, read while the inventory is locked. */
        for (int i = 0; i < a->n; i++) {
            candidate *c = &a->c[i];
            if (c->inv < 0) continue;
            json_t *nd = json_array_get(s->nodes, (size_t)c->inv);
            put_str(c->type, sizeof c->type, str_at(nd, "type"));
            put_str(c->zone, sizeof c->zone, str_at(nd, "zone"));
            c->units = (int)json_integer_value(json_object_get(nd, "units"));
        }
        /* Units the plan gives to the job's other workers, per candidate. */
        if (pp->planned && !pp->is_ps) {
            json_t *busy = json_object();
            size_t w;
            json_t *x;
            json_array_foreach(json_object_get(e->plan, "workers"), w, x) {
                const char *nd = str_at(x, "node");
                if (!busy || !nd || (long)w == at) continue;
                json_t *v = json_object_get(busy, nd);
                json_object_set_new(busy, nd, json_integer(v ? json_integer_value(v) + 1 : 1));
            }
            for (int i = 0; busy && i < a->n; i++)
                a->c[i].taken = (int)json_integer_value(json_object_get(busy, a->c[i].name));
            json_decref(busy);
        }
    }
    pthread_mutex_unlock(&e->mu);
    jobs_release(env->jobs, e);
    /* Remembered in the state file for the bind verb (after the job's lock:
     * the store's lock is never taken inside an entry's). */
    const char *uid = str_at(ka_get_ci(a->pod, "metadata"), "uid");
    if (pp->planned && pp->role && env->state && uid && *uid &&
        store_pod_put(env->state, uid, pp->key, pp->role, pp->at, K8S_BIND_MEMORY, err,
                      sizeof err)) {
        size_t k = strlen(pp->note);
        snprintf(pp->note + k, sizeof pp->note - k, "; not remembered for the bind: %s", err);
    }
}

/* How a candidate relates to the pod's task. */
enum { FIT_OK, FIT_BUSY, FIT_NEVER };

/* Whether a candidate fits the pod's task: FIT_OK; FIT_BUSY when it could
 * once units free up (its units all go to the plan's other workers: pods
 * leaving, or preemption, can change that); FIT_NEVER when nothing can
 * (a node strata cannot judge, the wrong type, no units at all). The
 * reason goes to why[whylen] when it does not fit and why is not NULL
 * (prioritize needs only the verdict). */
static int fits(const pod_plan *pp, const candidate *c, char *why, size_t whylen) {
    if (c->inv < 0) {
        if (why) put_str2(why, whylen, "strata: ", c->why);
        return FIT_NEVER;
    }
    if (pp->is_ps) return FIT_OK; /* a ps task may go to any known node */
    if (strcmp(c->type, pp->task.type)) {
        if (why)
            snprintf(why, whylen, "strata: this worker runs stage %d on %s; the node is %s",
                     pp->task.stage, pp->task.type, c->type);
        return FIT_NEVER;
    }
    if (c->units == 0) {
        if (why)
            snprintf(why, whylen, "strata: the node has no %s units in total (allocatable or "
                     "strata.io/units)", c->type);
        return FIT_NEVER;
    }
    if (c->units > 0 && strcmp(c->name, pp->task.node) && c->taken >= c->units) {
        if (why)
            snprintf(why, whylen, "strata: the plan gives all %d of the node's units to the "
                     "job's other workers", c->units);
        return FIT_BUSY;
    }
    return FIT_OK;
}

/* The common start of both extender verbs: parses the ExtenderArgs and
 * plans the pod. Returns 0, or -1 after answering 400 (500 when out of
 * memory) and releasing *a. */
static int begin(const k8s_env *env, const web_request *req, web_reply *rep, ext_args *a,
                 pod_plan *pp) {
    char err[1024];
    int rc = parse_args(env, req, a, err, sizeof err);
    if (rc != RJ_OK) {
        web_reply_error(rep, rc == RJ_NOMEM ? 500 : 400, "%s", err);
        args_free(a);
        return -1;
    }
    plan_pod(env, a, pp);
    return 0;
}

/* The filter's answer in the Nodes form: {"Nodes": {"metadata": {},
 * "items": [...]}, "NodeNames": null, "FailedNodes": failed,
 * "FailedAndUnresolvableNodes": unresolvable, "Error": ""}, the kept Node
 * objects copied as they came in the body (validated JSON), the failure
 * maps f[flen] and u[ulen] as the caller wrote them (maps_direct, or
 * web_dump_strings of jansson's maps; NULL when out of memory). Sets the
 * reply (500 when out of memory). */
static void reply_nodes(web_reply *rep, const ext_args *a, const int *keep, int n_keep,
                        const char *f, size_t flen, const char *u, size_t ulen) {
    static const char head[] = "{\"Nodes\":{\"metadata\":{},\"items\":[";
    static const char mid[] = "]},\"NodeNames\":null,\"FailedNodes\":";
    static const char mid2[] = ",\"FailedAndUnresolvableNodes\":";
    static const char tail[] = ",\"Error\":\"\"}";
    size_t len = sizeof head + sizeof mid + sizeof mid2 + sizeof tail + (size_t)n_keep;
    for (int k = 0; k < n_keep; k++) len += a->c[keep[k]].item->raw.len;
    char *body = f && u ? malloc(len + flen + ulen + 1) : NULL;
    if (!body) {
        web_reply_error(rep, 500, "out of memory");
        return;
    }
    size_t at = 0;
#define PUT(p, n) (memcpy(body + at, (p), (n)), at += (n))
    PUT(head, sizeof head - 1);
    for (int k = 0; k < n_keep; k++) {
        const ka_slice *raw = &a->c[keep[k]].item->raw;
        if (k) PUT(",", 1);
        PUT(raw->p, raw->len);
    }
    PUT(mid, sizeof mid - 1);
    PUT(f, flen);
    PUT(mid2, sizeof mid2 - 1);
    PUT(u, ulen);
    PUT(tail, sizeof tail - 1);
#undef PUT
    body[at] = '\0';
    web_reply_take(rep, 200, body, at);
}

/* The filter's verdict on candidate c: FIT_OK, FIT_BUSY or FIT_NEVER,
 * with the reason in why[len] ("" when it fits). */
static int verdict(const pod_plan *pp, const candidate *c, char *why, size_t len) {
    why[0] = '\0';
    int fit = pp->refused ? FIT_NEVER : pp->planned ? fits(pp, c, why, len) : FIT_OK;
    if (pp->refused) /* no node will do: the scheduler need not try preemption */
        put_str(why, len, pp->note);
    return fit;
}

/* Whether two of the call's candidates have the same name (kube-scheduler
 * never sends that; the answer then follows jansson's rule for a key set
 * twice, through the maps of k8s_filter). 1, 0, or -1 when out of memory. */
static int names_repeat(const ext_args *a) {
    size_t nslot = 16;
    while (nslot < 2 * (size_t)a->n) nslot *= 2;
    int *slot = malloc(nslot * sizeof *slot);
    if (!slot) return -1;
    for (size_t j = 0; j < nslot; j++) slot[j] = -1;
    int dup = 0;
    for (int i = 0; i < a->n && !dup; i++) {
        uint32_t h = 2166136261u;
        for (const unsigned char *p = (const unsigned char *)a->c[i].name; *p; p++)
            h = (h ^ *p) * 16777619u;
        size_t j = h & (nslot - 1);
        for (; slot[j] >= 0; j = (j + 1) & (nslot - 1))
            if (!strcmp(a->c[slot[j]].name, a->c[i].name)) dup = 1;
        slot[j] = i;
    }
    free(slot);
    return dup;
}

/* The Nodes form's failure maps written as text in the candidates' order,
 * as web_dump_strings writes the maps k8s_filter builds: busy and never
 * get {"name":"why",...}, keep[*n_keep] the candidates that fit, *n_failed
 * the failures. For candidates of distinct names (names_repeat). Returns
 * 0; 1 when a reason is not valid UTF-8 (json_string refuses it, and the
 * maps leave that node out: the caller takes their path); -1 when out of
 * memory. The reasons repeat (a few distinct ones over 5,000 nodes): the
 * last few are remembered, validated and escaped by jansson once each. */
static int maps_direct(const ext_args *a, const pod_plan *pp, int *keep, int *n_keep,
                       web_text *busy, web_text *never, int *n_failed) {
    enum { MEMO = 8 };
    struct {
        char why[320];
        char *text; /* the reason as json_dumps writes it */
    } memo[MEMO];
    int n_memo = 0, next = 0, rc = 0;
    *n_keep = *n_failed = 0;
    web_text_put(busy, "{", 1);
    web_text_put(never, "{", 1);
    for (int i = 0; i < a->n && rc == 0; i++) {
        const candidate *c = &a->c[i];
        char why[320];
        int fit = verdict(pp, c, why, sizeof why);
        if (fit == FIT_OK) {
            keep[(*n_keep)++] = i;
            continue;
        }
        int m = 0;
        while (m < n_memo && strcmp(memo[m].why, why)) m++;
        if (m == n_memo) { /* a new reason: validated and escaped once */
            json_t *t = json_string(why);
            char *text = t ? json_dumps(t, JSON_ENCODE_ANY) : NULL;
            json_decref(t);
            if (!text) {
                rc = t ? -1 : 1;
                break;
            }
            m = next;
            next = (next + 1) % MEMO;
            if (n_memo < MEMO) n_memo++;
            else free(memo[m].text);
            memcpy(memo[m].why, why, sizeof why);
            memo[m].text = text;
        }
        web_text *o = fit == FIT_BUSY ? busy : never;
        if (o->n > 1) web_text_put(o, ",", 1);
        web_text_string(o, c->name, strlen(c->name));
        web_text_put(o, ":", 1);
        web_text_put(o, memo[m].text, strlen(memo[m].text));
        (*n_failed)++;
    }
    for (int m = 0; m < n_memo; m++) free(memo[m].text);
    if (rc) return rc;
    web_text_put(busy, "}", 1);
    web_text_put(never, "}", 1);
    return busy->bad || never->bad ? -1 : 0;
}

void k8s_filter(const k8s_env *env, const web_request *req, web_reply *rep) {
    ext_args a;
    pod_plan pp;
    if (begin(env, req, rep, &a, &pp)) return;
    int rep_n = a.nodes_form ? names_repeat(&a) : 1;
    if (rep_n == 0) { /* the Nodes form: the maps as text, without jansson trees */
        int *keep = malloc((size_t)(a.n ? a.n : 1) * sizeof *keep);
        web_text busy = {NULL, 0, 0, 0}, never = {NULL, 0, 0, 0};
        int n_keep = 0, n_failed = 0;
        int rc = keep ? maps_direct(&a, &pp, keep, &n_keep, &busy, &never, &n_failed) : -1;
        if (rc == 0) {
            reply_nodes(rep, &a, keep, n_keep, busy.b, busy.n, never.b, never.n);
            snprintf(rep->note, sizeof rep->note, "%.200s; kept %d of %d", pp.note,
                     a.n - n_failed, a.n);
        }
        free(keep);
        free(busy.b);
        free(never.b);
        if (rc < 0) web_reply_error(rep, 500, "out of memory");
        if (rc <= 0) {
            args_done(env, req, &a);
            return;
        }
    } else if (rep_n < 0) {
        args_free(&a);
        web_reply_error(rep, 500, "out of memory");
        return;
    }
    json_t *failed = json_object();
    json_t *unresolvable = json_object();
    json_t *kept = json_array();
    int *keep = malloc((size_t)(a.n ? a.n : 1) * sizeof *keep);
    int n_keep = 0;
    if (!failed || !unresolvable || !kept || !keep) {
        json_decref(failed);
        json_decref(unresolvable);
        json_decref(kept);
        free(keep);
        args_free(&a);
        web_reply_error(rep, 500, "out of memory");
        return;
    }
    for (int i = 0; i < a.n; i++) {
        const candidate *c = &a.c[i];
        char why[320];
        int fit = verdict(&pp, c, why, sizeof why);
        if (fit == FIT_OK) {
            keep[n_keep++] = i;
            if (a.names) json_array_append(kept, json_array_get(a.names, (size_t)i));
        } else { /* kube-scheduler tries preemption only for FailedNodes */
            json_object_set_new(fit == FIT_BUSY ? failed : unresolvable, c->name,
                                json_string(why));
        }
    }
    int n_failed = (int)(json_object_size(failed) + json_object_size(unresolvable));
    if (a.nodes_form) {
        size_t flen = 0, ulen = 0;
        char *f = web_dump_strings(failed, &flen);
        char *u = web_dump_strings(unresolvable, &ulen);
        reply_nodes(rep, &a, keep, n_keep, f, flen, u, ulen);
        free(f);
        free(u);
        json_decref(failed);
        json_decref(unresolvable);
        json_decref(kept);
    } else {
        json_t *o = json_object();
        json_object_set_new(o, "Nodes", json_null());
        json_object_set_new(o, "NodeNames", kept);
        json_object_set_new(o, "FailedNodes", failed);
        json_object_set_new(o, "FailedAndUnresolvableNodes", unresolvable);
        json_object_set_new(o, "Error", json_string(""));
        web_reply_json(rep, 200, o);
    }
    free(keep);
    snprintf(rep->note, sizeof rep->note, "%.200s; kept %d of %d", pp.note, a.n - n_failed,
             a.n);
    args_done(env, req, &a);
}

void k8s_prioritize(const k8s_env *env, const web_request *req, web_reply *rep) {
    ext_args a;
    pod_plan pp;
    if (begin(env, req, rep, &a, &pp)) return;
    /* [{"Host": name, "Score": n}, ...] as json_dumps writes it, without
     * a tree of 5,000 objects */
    web_text t = {NULL, 0, 0, 0};
    web_text_put(&t, "[", 1);
    for (int i = 0; i < a.n; i++) {
        const candidate *c = &a.c[i];
        int score = 0;
        if (pp.planned && fits(&pp, c, NULL, 0) == FIT_OK) {
            if (!strcmp(c->name, pp.task.node)) score = K8S_MAX_SCORE;
            else if (c->zone[0] && !strcmp(c->zone, pp.task.zone)) score = 7;
            else score = 4;
        }
        web_text_put(&t, i ? ",{\"Host\":" : "{\"Host\":", i ? 9 : 8);
        web_text_string(&t, c->name, strlen(c->name));
        _Static_assert(K8S_MAX_SCORE < 100, "a score is written in two digits at most");
        char num[16] = ",\"Score\":";
        size_t k = 9;
        if (score >= 10) num[k++] = (char)('0' + score / 10 % 10);
        num[k++] = (char)('0' + score % 10);
        num[k++] = '}';
        web_text_put(&t, num, k);
    }
    web_text_put(&t, "]", 1);
    if (t.bad) {
        free(t.b);
        web_reply_error(rep, 500, "out of memory");
    } else {
        web_reply_take(rep, 200, t.b, t.n);
    }
    snprintf(rep->note, sizeof rep->note, "%.250s", pp.note);
    args_done(env, req, &a);
}

void k8s_bind(const k8s_env *env, const web_request *req, web_reply *rep) {
    char err[1024];
    json_t *args = web_parse_json(req->body, req->body_len, err, sizeof err);
    if (!args) {
        web_reply_error(rep, 400, "%s", err);
        return;
    }
    const char *name = json_string_value(ka_get_ci(args, "PodName"));
    const char *ns = json_string_value(ka_get_ci(args, "PodNamespace"));
    const char *uid = json_string_value(ka_get_ci(args, "PodUID"));
    const char *node = json_string_value(ka_get_ci(args, "Node"));
    char key[JOBS_KEY_MAX], msg[200];
    if (!name || !*name || !node || !*node) {
        web_reply_error(rep, 400, "ExtenderBindingArgs: PodName and Node are required strings");
        json_decref(args);
        return;
    }
    if (jobs_key(key, ns && *ns ? ns : "default", name, msg, sizeof msg)) {
        web_reply_error(rep, 400, "PodNamespace/PodName: %s", msg);
        json_decref(args);
        return;
    }
    const char *why = NULL;
    if (!env->kube)
        why = "strata serve was started without --kube-api: it cannot bind (remove bindVerb "
              "from the extender's configuration, or give --kube-api)";
    else if (kapi_bind(env->kube, ns && *ns ? ns : "default", name, uid ? uid : "", node, err,
                       sizeof err))
        why = err;
    char jk[JOBS_KEY_MAX], role[16], rec[300] = "", serr[512];
    long idx = 0;
    /* the registry as the file has it (the job may have been registered by
     * another replica, or re-registered since), then the pod's task */
    int task = why || !env->state ? 0
               : store_sync(env->state, env->jobs, 0, serr, sizeof serr) ? -1
               : store_pod_get(env->state, uid, jk, sizeof jk, role, sizeof role, &idx, serr,
                               sizeof serr);
    if (task < 0) snprintf(rec, sizeof rec, "; not recorded: %.150s", serr);
    if (task > 0) { /* a registered job's task: record where it runs */
        char zone[MODEL_NAME_MAX] = "";
        jobs_entry *e = jobs_get(env->jobs, jk);
        if (e) { /* the node's zone, from the job's inventory */
            pthread_mutex_lock(&e->mu);
            job_state *s = state_of(e);
            int i = s ? inv_find(s, node) : -1;
            const char *z = i >= 0 ? str_at(json_array_get(s->nodes, (size_t)i), "zone") : NULL;
            snprintf(zone, sizeof zone, "%s", z ? z : "");
            pthread_mutex_unlock(&e->mu);
            jobs_release(env->jobs, e);
        }
        int got = store_bind(env->state, jk, role, idx, node, zone, uid, serr, sizeof serr);
        if (got < 0)
            snprintf(rec, sizeof rec, "; not recorded: %.150s", serr);
        else
            snprintf(rec, sizeof rec, "; %s %.100s %s %ld %s", got ? "recorded" : "not recorded "
                     "(no longer planned):", jk, role, idx, got ? "runs there" : "");
    }
    web_reply_json(rep, 200, json_pack("{s:s}", "Error", why ? why : ""));
    char line[1200];
    snprintf(line, sizeof line, "bind %.63s/%.63s -> %.63s: %.300s%s",
             ns && *ns ? ns : "default", name, node, why ? why : "bound", rec);
    size_t k = strlen(line); /* the log line's note holds its first 255 bytes */
    if (k >= sizeof rep->note) k = sizeof rep->note - 1;
    memcpy(rep->note, line, k);
    rep->note[k] = '\0';
    json_decref(args);
}
