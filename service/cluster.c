/* cluster.c -- GET/PUT /v1/cluster: the daemon's cluster and its occupancy.
 *
 * The cluster lives in the state file; occupancy is read from the
 * placements table at every GET, so that two replicas on one file, or a
 * restarted daemon, show the same figures.
 */
#include "service/cluster.h"

#include <stdio.h>
#include <string.h>

static json_int_t int_at(const json_t *o, const char *key, json_int_t dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

json_t *cluster_free_nodes(const json_t *nodes, const json_t *taken) {
    json_t *out = json_deep_copy(nodes);
    size_t i;
    json_t *n;
    json_array_foreach(out, i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        const json_t *t = json_object_get(taken, name ? name : "");
        if (!t) continue;
        json_int_t u = int_at(n, "units", 0), used = int_at(t, "units", 0);
        json_object_set_new(n, "units", json_integer(u > used ? u - used : 0));
        json_int_t s = int_at(n, "ps_slots", 1), ps = int_at(t, "ps", 0);
        json_object_set_new(n, "ps_slots", json_integer(s > ps ? s - ps : 0));
    }
    return out;
}

/* A small job for loading a cluster alone through the config loader. */
static json_t *probe_job(void) {
    return json_pack("{s:s, s:i, s:f, s:f, s:f, s:[{s:s, s:f, s:i, s:f, s:i, s:s}]}", "name",
                     "probe", "batch", 1, "samples", 1.0, "min_throughput", 1.0, "alpha", 0.05,
                     "layers", "name", "l", "flops", 1.0, "io", 0,
                     "act", 1.0, "params", 0, "mem", "1KB");
}

/* Adds units to the {units, taken, free} tally of group[key]. */
static void tally(json_t *group, const char *key, json_int_t units, json_int_t taken) {
    json_t *g = json_object_get(group, key);
    if (!g) {
        g = json_pack("{s:I, s:I, s:I}", "units", (json_int_t)0, "taken", (json_int_t)0, "free",
                      (json_int_t)0);
        json_object_set_new(group, key, g);
    }
    json_int_t t = taken < units ? taken : units;
    json_object_set_new(g, "units", json_integer(int_at(g, "units", 0) + units));
    json_object_set_new(g, "taken", json_integer(int_at(g, "taken", 0) + t));
    json_object_set_new(g, "free", json_integer(int_at(g, "free", 0) + units - t));
}

/* The answer of GET /v1/cluster from the cluster and the placement rows. */
static json_t *occupancy_json(const json_t *cl, const json_t *rows) {
    json_t *nodes = json_array(), *types = json_object(), *zones = json_object();
    json_t *total = json_object(), *jobs = json_object(), *by_node = json_object();
    size_t i;
    json_t *r, *n;
    json_array_foreach(rows, i, r) { /* group the rows by node */
        const char *node = json_string_value(json_object_get(r, "node"));
        json_t *list = json_object_get(by_node, node);
        if (!list) json_object_set_new(by_node, node, list = json_array());
        json_array_append(list, r);
    }
    json_array_foreach(json_object_get(cl, "nodes"), i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        const char *type = json_string_value(json_object_get(n, "type"));
        const char *zone = json_string_value(json_object_get(n, "zone"));
        json_int_t units = int_at(n, "units", 0), slots = int_at(n, "ps_slots", 1);
        json_int_t taken = 0, ps = 0;
        json_t *holders = json_array();
        size_t k;
        json_array_foreach(json_object_get(by_node, name ? name : ""), k, r) {
            taken += int_at(r, "units", 0);
            ps += int_at(r, "ps", 0);
            json_object_set_new(jobs, json_string_value(json_object_get(r, "job")), json_true());
            json_array_append_new(holders, json_pack("{s:O, s:O, s:O}", "job",
                                                     json_object_get(r, "job"), "role",
                                                     json_object_get(r, "role"), "index",
                                                     json_object_get(r, "index")));
        }
        json_array_append_new(
            nodes, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "name",
                             name ? name : "", "type", type ? type : "", "zone",
                             zone ? zone : "", "units", units, "taken", taken, "free",
                             units > taken ? units - taken : 0, "ps_slots", slots, "ps_taken",
                             ps, "ps_free", slots > ps ? slots - ps : 0, "holders", holders));
        tally(types, type ? type : "", units, taken);
        tally(zones, zone ? zone : "", units, taken);
        tally(total, "all", units, taken);
    }
    json_t *all = json_incref(json_object_get(total, "all"));
    json_decref(total);
    json_decref(by_node);
    json_t *keys = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(jobs, key, v) json_array_append_new(keys, json_string(key));
    json_decref(jobs);
    return json_pack("{s:O, s:o, s:o, s:o, s:o, s:o}", "cluster", cl, "nodes", nodes, "types",
                     types, "zones", zones, "total",
                     all ? all : json_pack("{s:i, s:i, s:i}", "units", 0, "taken", 0, "free", 0),
                     "jobs", keys);
}

static void get_handler(const api_env *env, web_reply *rep) {
    char err[1024] = "";
    json_t *cl = store_get_cluster(env->state, 0, err, sizeof err);
    json_t *rows = cl ? store_placements(env->state, err, sizeof err) : NULL;
    if (!cl || !rows) {
        web_reply_error(rep, 503, "%s", err);
    } else if (json_is_null(cl)) {
        web_reply_error(rep, 404, "no cluster: set one with PUT /v1/cluster");
    } else {
        json_t *o = occupancy_json(cl, rows);
        if (o) web_reply_json(rep, 200, o);
        else web_reply_error(rep, 500, "out of memory");
    }
    json_decref(cl);
    json_decref(rows);
}

/* Checks a cluster object (config schema, as PUT sends it) for the
 * daemon: a non-empty node list within env->max_cluster_nodes, every key
 * through the config loader (type counts from the nodes), node names
 * unique (occupancy is kept by name). Returns 0, or the HTTP status (400,
 * 413, 500) with err naming the field. */
static int check_cluster(const api_env *env, const json_t *cl, char *err, size_t errlen) {
    const json_t *nodes = json_object_get(cl, "nodes");
    if (json_is_array(nodes) && (int)json_array_size(nodes) > env->max_cluster_nodes) {
        snprintf(err, errlen, "cluster.nodes: %zu nodes, the daemon keeps at most %d "
                 "(--max-cluster-nodes)", json_array_size(nodes), env->max_cluster_nodes);
        return 413;
    }
    if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
        snprintf(err, errlen, "cluster.nodes: expected a non-empty list of nodes");
        return 400;
    }
    json_t *doc = json_pack("{s:O, s:o}", "cluster", cl, "job", probe_job());
    rj_limits lim = env->limits;
    lim.max_nodes = env->max_cluster_nodes;
    cfg_run *run = doc ? decide_load_registered(&lim, doc, nodes, NULL, err, errlen) : NULL;
    if (!doc) snprintf(err, errlen, "out of memory");
    int status = run ? 0 : doc ? 400 : 500;
    cfg_free(run);
    json_decref(doc);
    json_t *seen = json_object();
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) { /* occupancy is kept by node name */
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!status && name && json_object_get(seen, name)) {
            snprintf(err, errlen, "cluster.nodes[%zu].name: \"%.100s\" is listed twice", i,
                     name);
            status = 400;
        }
        if (name) json_object_set_new(seen, name, json_true());
    }
    json_decref(seen);
    return status;
}

static void put_handler(const api_env *env, const web_request *req, web_reply *rep) {
    char err[2048] = "";
    json_t *root = web_parse_json(req->body, req->body_len, err, sizeof err);
    if (!root) {
        web_reply_error(rep, 400, "%s", err);
        return;
    }
    /* {"cluster": {...}} as in a config, or the cluster object itself */
    json_t *cl = json_object_get(root, "cluster");
    if (!cl) cl = root;
    int status = check_cluster(env, cl, err, sizeof err);
    if (!status && store_put_cluster(env->state, cl, err, sizeof err)) status = 503;
    if (status) web_reply_error(rep, status, "%s", err);
    else get_handler(env, rep);
    json_decref(root);
}

/* The config-schema object of a loaded cluster: types (without counts:
 * the nodes give them), zones, inter_bw, inter_latency, links (every pair
 * of zones, when the file gave any) and nodes, numbers in base units, so
 * that loading it again gives the same figures. NULL when out of memory. */
static json_t *cluster_to_json(const model_cluster *cl) {
    json_t *types = json_array(), *zones = json_array(), *nodes = json_array();
    for (int t = 0; t < cl->n_types; t++) {
        const model_type *ty = &cl->types[t];
        json_array_append_new(types, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "name",
                                               ty->name, "kind", ty->is_gpu ? "gpu" : "cpu",
                                               "flops", ty->flops, "io_bw", ty->io_bw, "net_bw",
                                               ty->net_bw, "mem", ty->mem, "price", ty->price));
    }
    for (int z = 0; z < cl->n_zones; z++)
        json_array_append_new(zones, json_pack("{s:s}", "name", cl->zones[z].name));
    for (int i = 0; i < cl->n_nodes; i++) {
        const model_node *nd = &cl->nodes[i];
        json_t *n = json_pack("{s:s, s:s, s:i, s:i, s:f, s:f, s:f}", "name", nd->name, "type",
                              cl->types[nd->type].name, "units", nd->units, "ps_slots",
                              nd->ps_slots, "bw", nd->bw, "latency", nd->latency, "loss",
                              nd->loss);
        if (n && cl->n_zones > 0)
            json_object_set_new(n, "zone", json_string(cl->zones[nd->zone].name));
        json_array_append_new(nodes, n);
    }
    json_t *o = json_pack("{s:o, s:o, s:f, s:f, s:o}", "types", types, "zones", zones,
                          "inter_bw", cl->inter_bw, "inter_latency", cl->inter_latency, "nodes",
                          nodes);
    if (o && cl->zone_bw && cl->zone_lat) {
        json_t *links = json_array();
        int nz = cl->n_zones;
        for (int a = 0; a < nz; a++)
            for (int b = a + 1; b < nz; b++)
                json_array_append_new(links, json_pack("{s:[s,s], s:f, s:f}", "zones",
                                                       cl->zones[a].name, cl->zones[b].name,
                                                       "bw", cl->zone_bw[a * nz + b], "latency",
                                                       cl->zone_lat[a * nz + b]));
        json_object_set_new(o, "links", links);
    }
    return o;
}

int cluster_load_file(const api_env *env, const char *path, char *msg, size_t msglen) {
    char err[2048] = "";
    cfg_run *run = cfg_load_cluster(path, err, sizeof err);
    if (!run) {
        snprintf(msg, msglen, "%s", err);
        return -1;
    }
    json_t *cl = cluster_to_json(&run->cluster);
    int n_nodes = run->cluster.n_nodes;
    cfg_free(run);
    if (!cl) {
        snprintf(msg, msglen, "%s: out of memory", path);
        return -1;
    }
    int rc = -1;
    json_t *had = NULL, *rows = NULL;
    int status = check_cluster(env, cl, err, sizeof err);
    if (status) {
        snprintf(msg, msglen, "%s: %s", path, err);
    } else if (!(had = store_get_cluster(env->state, 0, err, sizeof err)) ||
               !(rows = store_placements(env->state, err, sizeof err))) {
        snprintf(msg, msglen, "%s", err);
    } else if (json_equal(had, cl)) {
        snprintf(msg, msglen, "%s: %d nodes, the cluster the state file already holds", path,
                 n_nodes);
        rc = 0;
    } else if (store_put_cluster(env->state, cl, err, sizeof err)) {
        snprintf(msg, msglen, "%s", err);
    } else {
        /* units taken on nodes the file no longer lists stay in the state
         * file (their jobs release them) but no longer show */
        int gone = 0;
        size_t i;
        json_t *r;
        json_t *names = json_object();
        json_t *n;
        json_array_foreach(json_object_get(cl, "nodes"), i, n)
            json_object_set(names, json_string_value(json_object_get(n, "name")), json_true());
        json_array_foreach(rows, i, r)
            gone += !json_object_get(names, json_string_value(json_object_get(r, "node")));
        json_decref(names);
        if (json_is_null(had))
            snprintf(msg, msglen, "%s: %d nodes put (the state file held no cluster)", path,
                     n_nodes);
        else
            snprintf(msg, msglen, "%s: %d nodes replace the state file's cluster of %zu nodes "
                     "(--cluster wins at start; occupancy kept: %zu placements, %d of them on "
                     "nodes the file no longer lists)", path, n_nodes,
                     json_array_size(json_object_get(had, "nodes")), json_array_size(rows),
                     gone);
        rc = 0;
    }
    json_decref(had);
    json_decref(rows);
    json_decref(cl);
    return rc;
}

void cluster_handle(const api_env *env, const web_request *req, web_reply *rep) {
    if (!strcmp(req->method, "PUT")) put_handler(env, req, rep);
    else get_handler(env, rep);
}
