/* runjson.c -- requests' clusters and jobs through the config loader.
 *
 * The request's cluster and job values are built into a libyaml document
 * {"cluster": ..., "job": ...} node by node, as a YAML parser would have
 * read them from JSON text (to_yaml), and read by cfg_load_document: the
 * daemon therefore accepts exactly what a config file accepts, units in
 * strings included, and refuses it with the same words.
 */
#include "service/runjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

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

static int add_pair(yaml_document_t *d, int map, const char *key, const json_t *v);

/* to_yaml adds JSON value v to the YAML document d as a YAML parser would
 * have read it from JSON text: strings as double-quoted scalars; numbers,
 * booleans and null as plain ones (reals as jansson prints them: 17
 * significant digits, ".0" when integral). Returns the node id, or 0 when
 * out of memory. Building the document directly spares printing the body
 * and parsing it again, most of a new request's parse time. */
static int to_yaml(yaml_document_t *d, const json_t *v) {
    char num[40];
    const char *text = num;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        int id = yaml_document_add_mapping(d, NULL, YAML_ANY_MAPPING_STYLE);
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val) {
            if (!id || !add_pair(d, id, key, val)) return 0;
        }
        return id;
    }
    case JSON_ARRAY: {
        int id = yaml_document_add_sequence(d, NULL, YAML_ANY_SEQUENCE_STYLE);
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            int c = id ? to_yaml(d, item) : 0;
            if (!c || !yaml_document_append_sequence_item(d, id, c)) return 0;
        }
        return id;
    }
    case JSON_STRING:
        return yaml_document_add_scalar(d, NULL, (yaml_char_t *)json_string_value(v),
                                        (int)json_string_length(v),
                                        YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(num, sizeof num, "%.17g", json_real_value(v));
        if (!strpbrk(num, ".eEni")) strcat(num, ".0");
        break;
    case JSON_TRUE: text = "true"; break;
    case JSON_FALSE: text = "false"; break;
    default: text = "null"; break;
    }
    return yaml_document_add_scalar(d, NULL, (yaml_char_t *)text, -1, YAML_PLAIN_SCALAR_STYLE);
}

/* add_pair appends key: v to mapping node map of d. Returns 1, or 0 when
 * out of memory. */
static int add_pair(yaml_document_t *d, int map, const char *key, const json_t *v) {
    int k = yaml_document_add_scalar(d, NULL, (yaml_char_t *)key, -1,
                                     YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    int c = k ? to_yaml(d, v) : 0;
    return c && yaml_document_append_mapping_pair(d, map, k, c);
}

int rj_load_run(const json_t *cluster, const json_t *job, const json_t *model,
                const rj_limits *lim, cfg_run **out, char *err, size_t errlen) {
    char d[96];
    *out = NULL;
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
    yaml_document_t doc;
    if (!yaml_document_initialize(&doc, NULL, NULL, NULL, 1, 1)) goto oom;
    int root = yaml_document_add_mapping(&doc, NULL, YAML_ANY_MAPPING_STYLE);
    int ok = root > 0 && (!model || add_pair(&doc, root, "model", model)) &&
             add_pair(&doc, root, "cluster", cluster) && add_pair(&doc, root, "job", job);
    if (!ok) {
        yaml_document_delete(&doc);
        goto oom;
    }
    char msg[2048];
    cfg_run *run = run_load_document("request", &doc, msg, sizeof msg);
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
