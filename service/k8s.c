/* k8s.c -- scheduler extender: filter and prioritize nodes for training pods.
 *
 * Per registered job the extender keeps an inventory of the nodes it has
 * been shown (the registered cluster's nodes, then every node a Nodes-form
 * call described) and one decision: the plan and task placement of the
 * job on that inventory, made by decide_run (service/decide.h), the procedure /v1/place uses.
 * The decision is remade only when the inventory or the loaded policy
 * changes, so the pods of one job are all placed by the same plan.
 */
#include "service/k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env/import.h"
#include "env/place.h"
#include "env/units.h"
#include "solvers/placers.h"

/* ---- per-job state ------------------------------------------------------------------ */

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
    uint64_t inv_version; /* +1 whenever the inventory changes */
    /* the decision, valid for (dec_inv, dec_policy) */
    int have;
    uint64_t dec_inv, dec_policy;
    int ok;               /* 1 when the job is planned and placed */
    char why[768];        /* when !ok */
    char plan_from[48], placement_by[24];
    int n_workers, n_ps;
    task_spot *workers;   /* [n_workers] in plan order */
    task_spot *ps;        /* [n_ps] */
} job_state;

static void state_clear_decision(job_state *s) {
    free(s->workers);
    free(s->ps);
    s->workers = s->ps = NULL;
    s->n_workers = s->n_ps = 0;
    s->have = s->ok = 0;
    s->why[0] = s->plan_from[0] = s->placement_by[0] = '\0';
}

static void state_free(void *p) {
    job_state *s = p;
    if (!s) return;
    state_clear_decision(s);
    json_decref(s->nodes);
    json_decref(s->index);
    json_decref(s->registered);
    json_decref(s->seen);
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
    if (!s->nodes || !s->index || !s->registered || !s->seen) {
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

/* Looks a key up as Go's encoding/json does: exact, then ignoring case. */
static json_t *get_ci(const json_t *obj, const char *key) {
    if (!json_is_object(obj)) return NULL;
    json_t *v = json_object_get(obj, key);
    if (v) return v;
    const char *k;
    json_object_foreach((json_t *)obj, k, v) {
        if (!strcasecmp(k, key)) return v;
    }
    return NULL;
}

static const char *str_at(const json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

/* The pod's place in its job. */
typedef struct {
    int known;        /* 1: a ps or worker of a job named job */
    char job[JOBS_NAME_MAX];
    int is_ps;
    long index;
    char why[200];    /* when !known: why it passes through */
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

static void identify(const json_t *pod, pod_role *r) {
    memset(r, 0, sizeof *r);
    const json_t *md = get_ci(pod, "metadata");
    const json_t *labels = json_object_get(md, "labels");
    const json_t *ann = json_object_get(md, "annotations");
    const char *pod_name = str_at(md, "name");
    const char *job = str_at(labels, "training.kubeflow.org/job-name");
    const char *role = NULL, *index = NULL, *source = "kubeflow";
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
        snprintf(r->why, sizeof r->why, "not a training pod (no Kubeflow or Volcano job label)");
        return;
    }
    if (strlen(job) >= JOBS_NAME_MAX) {
        snprintf(r->why, sizeof r->why, "%s job name longer than %d characters", source,
                 JOBS_NAME_MAX - 1);
        return;
    }
    snprintf(r->job, sizeof r->job, "%s", job);
    if (!role || (strcasecmp(role, "ps") && strcasecmp(role, "worker"))) {
        snprintf(r->why, sizeof r->why, "%s role \"%.40s\" of job %s is not ps or worker", source,
                 role ? role : "(none)", job);
        return;
    }
    r->is_ps = !strcasecmp(role, "ps");
    if (parse_index(index, &r->index)) {
        snprintf(r->why, sizeof r->why, "%s %s of job %s has no usable index (\"%.20s\")",
                 source, role, job, index ? index : "");
        return;
    }
    r->known = 1;
}

/* One candidate node of a call. */
typedef struct {
    const char *name;
    const json_t *item;  /* the Node object (Nodes form) or NULL */
    int inv;             /* index in the inventory, or -1 when it cannot be judged */
    char why[256];       /* when inv < 0 */
    int units;           /* when inv >= 0: the node's units */
    int taken;           /* when inv >= 0: units the plan gives to other workers */
    char type[MODEL_NAME_MAX], zone[MODEL_NAME_MAX]; /* when inv >= 0 */
} candidate;

/* The parsed ExtenderArgs. */
typedef struct {
    json_t *root;
    const json_t *pod;
    const json_t *items;  /* Nodes.items, or NULL in the NodeNames form */
    const json_t *names;  /* NodeNames, or NULL in the Nodes form */
    int n;
    candidate *c;         /* [n] */
} ext_args;

static void args_free(ext_args *a) {
    json_decref(a->root);
    free(a->c);
}

/* Parses ExtenderArgs; returns RJ_OK, or RJ_BAD with a message naming the
 * field, or RJ_NOMEM. */
static int parse_args(const web_request *req, ext_args *a, char *err,
                      size_t errlen) {
    memset(a, 0, sizeof *a);
    a->root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!a->root) return -1;
    char d[96];
    a->pod = get_ci(a->root, "Pod");
    if (!json_is_object(a->pod)) {
        if (!a->pod) snprintf(err, errlen, "Pod: missing required key");
        else {
            rj_describe(a->pod, d, sizeof d);
            snprintf(err, errlen, "Pod: expected an object, got %s", d);
        }
        return -1;
    }
    const json_t *nodes = get_ci(a->root, "Nodes");
    const json_t *names = get_ci(a->root, "NodeNames");
    if (nodes && !json_is_null(nodes)) {
        if (!json_is_object(nodes)) {
            rj_describe(nodes, d, sizeof d);
            snprintf(err, errlen, "Nodes: expected a NodeList object, got %s", d);
            return -1;
        }
        a->items = get_ci(nodes, "items");
        if (!a->items || json_is_null(a->items)) a->items = NULL;
        else if (!json_is_array(a->items)) {
            rj_describe(a->items, d, sizeof d);
            snprintf(err, errlen, "Nodes.items: expected a list of Node objects, got %s", d);
            return -1;
        }
        a->n = a->items ? (int)json_array_size(a->items) : 0; /* no items: none */
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
            c->item = json_array_get(a->items, (size_t)i);
            c->name = str_at(get_ci(c->item, "metadata"), "name");
            if (!json_is_object(c->item) || !c->name) {
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
    const json_t *md = get_ci(item, "metadata");
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
 * derived again. Linear in the candidates. */
static void update_inventory(const k8s_env *env, jobs_entry *e, job_state *s, ext_args *a) {
    int max_nodes = env->limits.max_nodes;
    for (int i = 0; i < a->n; i++) {
        candidate *c = &a->c[i];
        int at = inv_find(s, c->name);
        int registered = at >= 0 && json_object_get(s->registered, c->name) != NULL;
        if (c->item && !registered) { /* describe it from its labels */
            const char *rv = str_at(get_ci(c->item, "metadata"), "resourceVersion");
            const char *last = str_at(s->seen, c->name);
            if (rv && last && at >= 0 && !strcmp(rv, last)) { /* unchanged since */
                c->inv = at;
                continue;
            }
            json_t *n = derive_node(env, e->doc, c->item, c->name, c->why, sizeof c->why);
            if (!n) {
                json_object_del(s->seen, c->name);
                continue;
            }
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

/* Remakes the decision for the inventory; e->mu held. */
static void decide(const k8s_env *env, jobs_entry *e, job_state *s, const pslot_entry *pol) {
    state_clear_decision(s);
    s->have = 1;
    s->dec_inv = s->inv_version;
    s->dec_policy = pol ? pol->generation : 0;
    json_t *nodes = json_deep_copy(s->nodes);
    json_t *zones = nodes ? inventory_zones(e->doc, nodes) : NULL;
    char err[2048];
    cfg_run *run = nodes ? decide_load_registered(&env->limits, e->doc, nodes, zones, err, sizeof err) : NULL;
    if (!nodes) snprintf(err, sizeof err, "out of memory");
    json_decref(nodes);
    json_decref(zones);
    if (!run) {
        snprintf(s->why, sizeof s->why, "cannot build the cluster from the nodes seen: %.700s", err);
        return;
    }
    decide_opts o;
    if (decide_opts_parse(json_object_get(e->doc, "options"), 1, env->max_budget_ms, &o, err,
                       sizeof err)) {
        snprintf(s->why, sizeof s->why, "%.760s", err);
        cfg_free(run);
        return;
    }
    if (o.from_policy && !pol) { /* no policy: the heuristic fallback */
        o.from_policy = 0;
        o.plan_method = SOLVE_GREEDY;
        o.decode = AGENT_DECODE_GREEDY;
        o.samples = 1;
        if (o.placement == PLACER_PLACE_POLICY) o.placement = PLACER_ZONE;
    }
    if (o.placement == PLACER_PLACE_NONE) o.placement = o.from_policy ? PLACER_PLACE_POLICY : PLACER_ZONE;
    const model_job *job = &run->jobs[0];
    const model_cluster *cl = &run->cluster;
    o.cpu_ms = env->request_cpu_ms;
    o.mem_bytes = env->request_mem_bytes;
    decide_result d;
    int rc = decide_run(job, cl, &o, o.from_policy ? pol : NULL, &d, err, sizeof err);
    snprintf(s->plan_from, sizeof s->plan_from, "%s", d.plan_from);
    snprintf(s->placement_by, sizeof s->placement_by, "%s", d.placement_by);
    if (rc != 0) {
        snprintf(s->why, sizeof s->why, "%.760s", err);
    } else if (!d.found || !d.final->placed || d.why[0]) {
        snprintf(s->why, sizeof s->why, "%.760s", d.why[0] ? d.why : d.final->why);
    } else {
        const model_plan *p = d.final;
        int n = place_task_count(p);
        for (int st = 0; st < p->n_stages; st++) {
            s->n_workers += p->stages[st].units;
            s->n_ps += p->stages[st].n_ps;
        }
        s->workers = calloc((size_t)s->n_workers + 1, sizeof *s->workers);
        s->ps = calloc((size_t)s->n_ps + 1, sizeof *s->ps);
        if (!s->workers || !s->ps) {
            state_clear_decision(s);
            s->have = 1;
            snprintf(s->why, sizeof s->why, "out of memory");
        } else {
            int w = 0, g = 0;
            for (int i = 0; i < n; i++) {
                int stage = 0, is_ps = 0;
                place_task_stage(p, i, &stage, &is_ps);
                task_spot *t = is_ps ? &s->ps[g++] : &s->workers[w++];
                const model_node *nd = &cl->nodes[d.task_node[i]];
                snprintf(t->node, sizeof t->node, "%s", nd->name);
                snprintf(t->zone, sizeof t->zone, "%s",
                         cl->n_zones > 0 ? cl->zones[nd->zone].name : "");
                snprintf(t->type, sizeof t->type, "%s", cl->types[p->stages[stage].type].name);
                t->stage = stage;
            }
            s->ok = 1;
            if (p->reason != MODEL_FEASIBLE) /* placed, but slower than R over its links */
                snprintf(s->why, sizeof s->why, "%s", p->why);
        }
    }
    decide_result_free(&d);
    cfg_free(run);
}

static json_t *spots_json(const task_spot *t, int n) {
    json_t *arr = json_array();
    for (int i = 0; i < n && arr; i++)
        json_array_append_new(arr, json_pack("{s:i, s:i, s:s, s:s, s:s}", "index", i, "stage",
                                             t[i].stage, "type", t[i].type, "node", t[i].node,
                                             "zone", t[i].zone));
    return arr;
}

json_t *k8s_job_state_json(jobs_entry *e) {
    pthread_mutex_lock(&e->mu);
    job_state *s = e->ext;
    json_t *o = json_null();
    if (s && s->have) {
        o = json_pack("{s:i, s:b, s:s, s:s}", "nodes_seen", (int)json_array_size(s->nodes),
                      "planned", s->ok, "plan_from", s->plan_from, "placement_by",
                      s->placement_by);
        if (o && s->why[0]) json_object_set_new(o, "reason", json_string(s->why));
        if (o && s->ok) {
            json_object_set_new(o, "workers", spots_json(s->workers, s->n_workers));
            json_object_set_new(o, "ps", spots_json(s->ps, s->n_ps));
        }
        if (!o) o = json_null();
    }
    pthread_mutex_unlock(&e->mu);
    return o;
}

/* ---- the calls ------------------------------------------------------------------------ */

/* How the pod relates to the nodes of a call. */
typedef struct {
    int planned;     /* 1 when the pod has a task in the decision */
    int is_ps;       /* its role */
    task_spot task;  /* its spot, when planned */
    char note[256];  /* for the log line */
} pod_plan;

/* Identifies the pod, updates the job's inventory and decision, and
 * resolves the candidates. Fills *pp; candidates' inv/why are set. */
static void plan_pod(const k8s_env *env, ext_args *a, pod_plan *pp) {
    memset(pp, 0, sizeof *pp);
    pod_role role;
    identify(a->pod, &role);
    if (!role.known) {
        snprintf(pp->note, sizeof pp->note, "pass: %.200s", role.why);
        return;
    }
    jobs_entry *e = jobs_get(env->jobs, role.job);
    if (!e) {
        snprintf(pp->note, sizeof pp->note, "pass: job %s is not registered", role.job);
        return;
    }
    const pslot_entry *pol = pslot_acquire(env->policy);
    pthread_mutex_lock(&e->mu);
    job_state *s = state_of(e);
    if (!s) {
        snprintf(pp->note, sizeof pp->note, "pass: out of memory");
    } else {
        update_inventory(env, e, s, a);
        uint64_t gen = pol ? pol->generation : 0;
        if (!s->have || s->dec_inv != s->inv_version || s->dec_policy != gen)
            decide(env, e, s, pol);
        const char *r = role.is_ps ? "ps" : "worker";
        int n = role.is_ps ? s->n_ps : s->n_workers;
        if (!s->ok) {
            snprintf(pp->note, sizeof pp->note, "pass: job %.63s not planned: %.120s", role.job,
                     s->why);
        } else if (role.index >= n) {
            snprintf(pp->note, sizeof pp->note, "pass: job %.63s %s %ld: the plan has %d %s tasks",
                     role.job, r, role.index, n, r);
        } else {
            pp->planned = 1;
            pp->task = role.is_ps ? s->ps[role.index] : s->workers[role.index];
            snprintf(pp->note, sizeof pp->note, "job %.63s %s %ld -> %.63s (stage %d, %.63s)", role.job,
                     r, role.index, pp->task.node, pp->task.stage, pp->task.type);
            pp->is_ps = role.is_ps;
        }
        /* Candidates' types and zones, read while the inventory is locked. */
        for (int i = 0; i < a->n; i++) {
            candidate *c = &a->c[i];
            if (c->inv < 0) continue;
            json_t *nd = json_array_get(s->nodes, (size_t)c->inv);
            const char *t = str_at(nd, "type"), *z = str_at(nd, "zone");
            snprintf(c->type, sizeof c->type, "%s", t ? t : "");
            snprintf(c->zone, sizeof c->zone, "%s", z ? z : "");
            c->units = (int)json_integer_value(json_object_get(nd, "units"));
        }
        /* Units the plan gives to the job's other workers, per candidate. */
        if (pp->planned && !pp->is_ps && s->ok) {
            json_t *busy = json_object();
            for (int w = 0; busy && w < s->n_workers; w++) {
                if (w == role.index) continue;
                json_t *v = json_object_get(busy, s->workers[w].node);
                json_object_set_new(busy, s->workers[w].node,
                                    json_integer(v ? json_integer_value(v) + 1 : 1));
            }
            for (int i = 0; busy && i < a->n; i++)
                a->c[i].taken = (int)json_integer_value(json_object_get(busy, a->c[i].name));
            json_decref(busy);
        }
    }
    pthread_mutex_unlock(&e->mu);
    pslot_release(env->policy, pol);
    jobs_release(env->jobs, e);
}

/* How a candidate relates to the pod's task. */
enum { FIT_OK, FIT_BUSY, FIT_NEVER };

/* Whether a candidate fits the pod's task: FIT_OK; FIT_BUSY when it could
 * once units free up (its units all go to the plan's other workers: pods
 * leaving, or preemption, can change that); FIT_NEVER when nothing can
 * (a node strata cannot judge, the wrong type, no units at all). The
 * reason goes to why when it does not fit. */
static int fits(const pod_plan *pp, const candidate *c, char *why, size_t whylen) {
    if (c->inv < 0) {
        snprintf(why, whylen, "strata: %s", c->why);
        return FIT_NEVER;
    }
    if (pp->is_ps) return FIT_OK; /* a ps task may go to any known node */
    if (strcmp(c->type, pp->task.type)) {
        snprintf(why, whylen, "strata: this worker runs stage %d on %s; the node is %s",
                 pp->task.stage, pp->task.type, c->type);
        return FIT_NEVER;
    }
    if (c->units <= 0) {
        snprintf(why, whylen, "strata: the node has no %s units in total (allocatable or "
                 "strata.io/units)", c->type);
        return FIT_NEVER;
    }
    if (strcmp(c->name, pp->task.node) && c->taken >= c->units) {
        snprintf(why, whylen, "strata: the plan gives all %d of the node's units to the job's "
                 "other workers", c->units);
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
    int rc = parse_args(req, a, err, sizeof err);
    if (rc != RJ_OK) {
        web_reply_error(rep, rc == RJ_NOMEM ? 500 : 400, "%s", err);
        args_free(a);
        return -1;
    }
    plan_pod(env, a, pp);
    return 0;
}

void k8s_filter(const k8s_env *env, const web_request *req, web_reply *rep) {
    ext_args a;
    pod_plan pp;
    if (begin(env, req, rep, &a, &pp)) return;
    json_t *failed = json_object(), *never = json_object();
    json_t *kept = json_array();
    for (int i = 0; i < a.n; i++) {
        const candidate *c = &a.c[i];
        char why[320] = "";
        int fit = pp.planned ? fits(&pp, c, why, sizeof why) : FIT_OK;
        if (fit == FIT_OK)
            json_array_append(kept, a.names ? json_array_get(a.names, (size_t)i)
                                            : (json_t *)c->item);
        else /* kube-scheduler tries preemption only for FailedNodes */
            json_object_set_new(fit == FIT_BUSY ? failed : never, c->name, json_string(why));
    }
    json_t *o = json_object();
    if (a.names) {
        json_object_set_new(o, "Nodes", json_null());
        json_object_set_new(o, "NodeNames", kept);
    } else {
        json_object_set_new(o, "Nodes", json_pack("{s:{}, s:o}", "metadata", "items", kept));
        json_object_set_new(o, "NodeNames", json_null());
    }
    /* counted before web_reply_json frees o, and `failed` with it */
    int n_failed = (int)(json_object_size(failed) + json_object_size(never));
    json_object_set_new(o, "FailedNodes", failed);
    json_object_set_new(o, "FailedAndUnresolvableNodes", never);
    json_object_set_new(o, "Error", json_string(""));
    web_reply_json(rep, 200, o);
    snprintf(rep->note, sizeof rep->note, "%.200s; kept %d of %d", pp.note, a.n - n_failed,
             a.n);
    args_free(&a);
}

void k8s_prioritize(const k8s_env *env, const web_request *req, web_reply *rep) {
    ext_args a;
    pod_plan pp;
    if (begin(env, req, rep, &a, &pp)) return;
    json_t *list = json_array();
    for (int i = 0; i < a.n; i++) {
        const candidate *c = &a.c[i];
        int score = 0;
        char why[320];
        if (pp.planned && fits(&pp, c, why, sizeof why) == FIT_OK) {
            if (!strcmp(c->name, pp.task.node)) score = K8S_MAX_SCORE;
            else if (!strcmp(c->zone, pp.task.zone)) score = 7;
            else score = 4;
        }
        json_array_append_new(list, json_pack("{s:s, s:i}", "Host", c->name, "Score", score));
    }
    web_reply_json(rep, 200, list);
    snprintf(rep->note, sizeof rep->note, "%.250s", pp.note);
    args_free(&a);
}
