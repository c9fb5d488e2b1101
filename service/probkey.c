/* probkey.c -- the canonical bytes of a placement problem (probkey.h).
 *
 * One writer per struct, into a growing byte buffer. The writers name every
 * field of their struct, written or not, and the sizes below are checked
 * at compile time (on LP64, where the daemon runs): a field added to one
 * of these structs changes its size and stops the build here, until the
 * writer is told whether the decision reads it.
 */
#include "service/probkey.h"

#include "service/web.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__LP64__)
_Static_assert(sizeof(model_layer) == 104, "model_layer changed: update pk_place's writer");
_Static_assert(sizeof(model_job) == 176, "model_job changed: update pk_place's writer");
_Static_assert(sizeof(model_point) == 16, "model_point changed: update pk_place's writer");
_Static_assert(sizeof(model_curve) == 40, "model_curve changed: update pk_place's writer");
_Static_assert(sizeof(model_type) == 120, "model_type changed: update pk_place's writer");
_Static_assert(sizeof(model_node) == 104, "model_node changed: update pk_place's writer");
_Static_assert(sizeof(model_zone) == 64, "model_zone changed: update pk_place's writer");
_Static_assert(sizeof(model_cluster) == 80, "model_cluster changed: update pk_place's writer");
_Static_assert(sizeof(decide_opts) == 96, "decide_opts changed: update pk_place's writer");
#endif

/* The key is built in a web_text (service/web.h): a growing buffer of
 * bytes, here binary, whose trailing NUL the key does not count. */
typedef web_text kbuf;

static void put(kbuf *k, const void *v, size_t n) { web_text_put(k, v, n); }

static void put_i(kbuf *k, int64_t v) { put(k, &v, sizeof v); }
static void put_d(kbuf *k, double v) { put(k, &v, sizeof v); }

/* A name: its length, then its bytes (no NUL), so that no two lists of
 * names run together into the same bytes. */
static void put_name(kbuf *k, const char *s) {
    size_t n = strnlen(s, MODEL_NAME_MAX);
    put_i(k, (int64_t)n);
    put(k, s, n);
}

static void put_job(kbuf *k, const model_job *j) {
    /* j->name: not read by the decision (the answer names the job itself) */
    put_i(k, j->n_layers);
    for (int l = 0; l < j->n_layers; l++) {
        const model_layer *y = &j->layers[l];
        put_name(k, y->name); /* the answer lists the layers of each stage */
        put_d(k, y->flops);
        put_d(k, y->io);
        put_d(k, y->act);
        put_d(k, y->params);
        put_d(k, y->mem);
    }
    put_d(k, j->batch);
    put_d(k, j->samples);
    put_d(k, j->min_throughput);
    put_d(k, j->alpha);
    put_d(k, j->shard);
    put_i(k, j->n_points);
    for (int i = 0; i < j->n_points; i++) {
        put_i(k, j->points[i].workers);
        put_i(k, j->points[i].ps);
        put_d(k, j->points[i].throughput);
    }
    for (int i = 0; i < 4; i++) put_d(k, j->curve.th[i]);
    put_i(k, j->curve.fitted);
}

static void put_cluster(kbuf *k, const model_cluster *c) {
    put_i(k, c->n_types);
    for (int t = 0; t < c->n_types; t++) {
        const model_type *y = &c->types[t];
        put_name(k, y->name);
        put_i(k, y->is_gpu);
        put_d(k, y->flops);
        put_d(k, y->io_bw);
        put_d(k, y->net_bw);
        put_d(k, y->mem);
        put_d(k, y->price);
        put_i(k, y->count);
    }
    put_i(k, c->n_nodes);
    for (int n = 0; n < c->n_nodes; n++) {
        const model_node *d = &c->nodes[n];
        put_name(k, d->name);
        put_i(k, d->type);
        put_i(k, d->units);
        put_i(k, d->ps_slots);
        put_i(k, d->zone);
        put_d(k, d->bw);
        put_d(k, d->latency);
        put_d(k, d->loss);
    }
    put_i(k, c->n_zones);
    for (int z = 0; z < c->n_zones; z++) put_name(k, c->zones[z].name);
    put_d(k, c->inter_bw);
    put_d(k, c->inter_latency);
    size_t zz = (size_t)c->n_zones * (size_t)c->n_zones;
    put_i(k, c->zone_bw != NULL);
    for (size_t i = 0; c->zone_bw && i < zz; i++) put_d(k, c->zone_bw[i]);
    put_i(k, c->zone_lat != NULL);
    for (size_t i = 0; c->zone_lat && i < zz; i++) put_d(k, c->zone_lat[i]);
}

static void put_opts(kbuf *k, const decide_opts *o) {
    put_i(k, o->from_policy);
    put_i(k, o->cluster_policy);
    put_i(k, (int64_t)o->plan_method);
    put_i(k, o->placement);
    put_i(k, (int64_t)o->decode);
    put_i(k, o->samples);
    put_i(k, o->node_samples);
    put_i(k, o->polish);
    put_i(k, (int64_t)o->seed);
    put_i(k, o->budget_ms);
    put_i(k, o->fallback);
    put_i(k, o->workers);
    put_i(k, o->ps);
    /* cpu_ms, mem_bytes, cancelled, cancel_ud: set by the daemon per
     * request, not part of the problem */
}

char *pk_place(const model_job *job, const model_cluster *cl, const decide_opts *o, size_t *len) {
    kbuf k = {0};
    static const char tag[8] = "place/1";
    put(&k, tag, sizeof tag);
    put_job(&k, job);
    put_cluster(&k, cl);
    put_opts(&k, o);
    if (k.bad) {
        free(k.b);
        return NULL;
    }
    *len = k.n;
    return k.b;
}
