/* runjson.c -- requests' clusters and jobs through the config loader.
 *
 * The request's cluster and job values are put under one object
 * {"model": ..., "cluster": ..., "job": ...} (borrowed, not copied) and
 * walked as they are by the config loader's JSON front end
 * (cfg_load_json): the daemon therefore accepts exactly what a config file
 * accepts, units in strings included, and refuses it with the same words,
 * without building a YAML document of the request.
 */
#include "service/runjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/runload.h"

void rj_describe(const json_t *v, char *buf, size_t len) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: snprintf(buf, len, "an object"); break;
    case JSON_ARRAY: snprintf(buf, len, "an array"); break;
    case JSON_STRING: snprintf(buf, len, "\"%.60s\"", json_string_value(v)); break;
    case JSON_INTEGER: snprintf(buf, len, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: snprintf(buf, len, "%.17g", json_real_value(v)); break;
    case JSON_TRUE: snprintf(buf, len, "true"); break;
    case JSON_FALSE: snprintf(buf, len, "false"); break;
    default: snprintf(buf, len, "null"); break;
    }
}

int rj_check_keys(const json_t *obj, const char *where, const char *const *allowed, int n,
                  char *err, size_t errlen) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int ok = 0;
        for (int i = 0; i < n && !ok; i++) ok = !strcmp(key, allowed[i]);
        if (ok) continue;
        char list[256] = "";
        size_t used = 0;
        for (int i = 0; i < n && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     allowed[i]);
        snprintf(err, errlen, "%s%s%.80s: unknown key (expected %s)", where, *where ? "." : "",
                 key, list);
        return -1;
    }
    return 0;
}

/* Checks that obj[key], when present, is an array of at most max entries. */
static int check_count(const json_t *obj, const char *path, const char *key, const char *what,
                       int max, char *err, size_t errlen) {
    const json_t *v = json_object_get(obj, key);
    if (!v || !json_is_array(v)) return 0; /* the loader names other shapes */
    size_t n = json_array_size(v);
    if (n > (size_t)max) {
        snprintf(err, errlen, "%s.%s: %zu %s, more than this daemon accepts (%d)", path, key, n,
                 what, max);
        return -1;
    }
    return 0;
}

/* Strips the "request:LINE:COL: " or "request: " prefix the loader puts
 * before a message about the text it was given. */
static void strip_position(char *msg) {
    static const char name[] = "request";
    size_t n = sizeof name - 1;
    if (strncmp(msg, name, n) != 0) return;
    char *p = msg + n;
    while (*p == ':' || (*p >= '0' && *p <= '9')) p++;
    if (*p == ' ') p++;
    memmove(msg, p, strlen(p) + 1);
}

/* load_run is rj_load_run (cl NULL) or rj_load_run_on (cluster NULL). */
static int load_run(const json_t *cluster, const model_cluster *cl, const json_t *job,
                    const json_t *model, const rj_limits *lim, cfg_run **out, char *err,
                    size_t errlen) {
    char d[96];
    *out = NULL;
    if (cl) {
        if (!job) {
            snprintf(err, errlen, "job: missing required key");
            return RJ_BAD;
        }
        if (!json_is_object(job)) {
            rj_describe(job, d, sizeof d);
            snprintf(err, errlen, "job: expected an object, got %s", d);
            return RJ_BAD;
        }
        if (cl->n_nodes > lim->max_nodes || cl->n_types > lim->max_types) {
            snprintf(err, errlen, "cluster: %d nodes and %d types, more than this daemon accepts "
                     "(%d, %d)", cl->n_nodes, cl->n_types, lim->max_nodes, lim->max_types);
            return RJ_BAD;
        }
        if (check_count(job, "job", "layers", "layers", lim->max_layers, err, errlen))
            return RJ_BAD;
        goto load;
    }
    if (!cluster) {
        snprintf(err, errlen, "cluster: missing required key");
        return RJ_BAD;
    }
    if (!job) {
        snprintf(err, errlen, "job: missing required key");
        return RJ_BAD;
    }
    if (!json_is_object(cluster)) {
        rj_describe(cluster, d, sizeof d);
        snprintf(err, errlen, "cluster: expected an object, got %s", d);
        return RJ_BAD;
    }
    if (!json_is_object(job)) {
        rj_describe(job, d, sizeof d);
        snprintf(err, errlen, "job: expected an object, got %s", d);
        return RJ_BAD;
    }
    if (check_count(cluster, "cluster", "nodes", "nodes", lim->max_nodes, err, errlen) ||
        check_count(cluster, "cluster", "types", "types", lim->max_types, err, errlen) ||
        check_count(job, "job", "layers", "layers", lim->max_layers, err, errlen))
        return RJ_BAD;
load:;
    /* the top-level object the loader walks, borrowing the values */
    json_t *root = json_object();
    int bad = !root || (model && json_object_set(root, "model", (json_t *)model)) ||
              (cluster && json_object_set(root, "cluster", (json_t *)cluster)) ||
              json_object_set(root, "job", (json_t *)job);
    if (bad) {
        json_decref(root);
        goto oom;
    }
    char msg[2048];
    cfg_run *run = cl ? run_load_json_on("request", root, cl, msg, sizeof msg)
                      : run_load_json("request", root, msg, sizeof msg);
    json_decref(root);
    /* the loader's own failures (a fit included; out of memory too) are
     * reported as bad input: it gives a message, not a status */
    if (!run) {
        strip_position(msg);
        snprintf(err, errlen, "%s", msg);
        return RJ_BAD;
    }
    *out = run;
    return RJ_OK;
oom:
    snprintf(err, errlen, "out of memory");
    return RJ_NOMEM;
}

int rj_load_run(const json_t *cluster, const json_t *job, const json_t *model,
                const rj_limits *lim, cfg_run **out, char *err, size_t errlen) {
    return load_run(cluster, NULL, job, model, lim, out, err, errlen);
}

int rj_load_run_on(const model_cluster *cl, const json_t *job, const json_t *model,
                   const rj_limits *lim, cfg_run **out, char *err, size_t errlen) {
    return load_run(NULL, cl, job, model, lim, out, err, errlen);
}

int rj_opt_int(const json_t *obj, const char *where, const char *key, long long lo,
               long long hi, long long *out, char *err, size_t errlen) {
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v) return 0;
    double r = json_is_real(v) ? json_real_value(v) : 0;
    if (json_is_integer(v) || (json_is_real(v) && r == floor(r) && fabs(r) < 9e15)) {
        long long x = json_is_integer(v) ? (long long)json_integer_value(v) : (long long)r;
        if (x >= lo && x <= hi) {
            *out = x;
            return 0;
        }
    }
    char d[96];
    rj_describe(v, d, sizeof d);
    snprintf(err, errlen, "%s.%s: expected a whole number from %lld to %lld, got %s", where,
             key, lo, hi, d);
    return -1;
}

int rj_opt_string(const json_t *obj, const char *where, const char *key, const char **out,
                  char *err, size_t errlen) {
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v) return 0;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return 0;
    }
    char d[96];
    rj_describe(v, d, sizeof d);
    snprintf(err, errlen, "%s.%s: expected a string, got %s", where, key, d);
    return -1;
}
