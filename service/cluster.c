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
    const json_t *nodes = json_object_get(cl, "nodes");
    int status = 0;
    if (json_is_array(nodes) && (int)json_array_size(nodes) > env->max_cluster_nodes) {
        snprintf(err, sizeof err, "cluster.nodes: %zu nodes, the daemon keeps at most %d "
                 "(--max-cluster-nodes)", json_array_size(nodes), env->max_cluster_nodes);
        status = 413;
    } else if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
        snprintf(err, sizeof err, "cluster.nodes: expected a non-empty list of nodes");
        status = 400;
    } else {
        /* every key, unit and bound through the config loader; type counts
         * come from the nodes, as for a registered job */
        json_t *doc = json_pack("{s:O, s:o}", "cluster", cl, "job", probe_job());
        rj_limits lim = env->limits;
        lim.max_nodes = env->max_cluster_nodes;
        cfg_run *run = doc ? decide_load_registered(&lim, doc, nodes, NULL, err, sizeof err)
                           : NULL;
        if (!doc) snprintf(err, sizeof err, "out of memory");
        status = run ? 0 : doc ? 400 : 500;
        cfg_free(run);
        json_decref(doc);
        json_t *seen = json_object();
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) { /* occupancy is kept by node name */
            const char *name = json_string_value(json_object_get(n, "name"));
            if (!status && name && json_object_get(seen, name)) {
                snprintf(err, sizeof err, "cluster.nodes[%zu].name: \"%.100s\" is listed "
                         "twice", i, name);
                status = 400;
            }
            if (name) json_object_set_new(seen, name, json_true());
        }
        json_decref(seen);
    }
    if (!status && store_put_cluster(env->state, cl, err, sizeof err)) status = 503;
    if (status) web_reply_error(rep, status, "%s", err);
    else get_handler(env, rep);
    json_decref(root);
}

void cluster_handle(const api_env *env, const web_request *req, web_reply *rep) {
    if (!strcmp(req->method, "PUT")) put_handler(env, req, rep);
    else get_handler(env, rep);
}
