/* modelkey.c -- the canonical bytes of a job and a cluster (modelkey.h).
 *
 * One writer per struct. The writers name every field of their struct,
 * written or not, and the sizes below are checked at compile time (on
 * LP64, where the daemon runs): a field added to one of these structs
 * changes its size and stops the build here, until the writer is told
 * whether anything reads it.
 */
#include "env/modelkey.h"

#include <string.h>

#if defined(__LP64__)
_Static_assert(sizeof(model_layer) == 104, "model_layer changed: update mkey_write");
_Static_assert(sizeof(model_job) == 176, "model_job changed: update mkey_write");
_Static_assert(sizeof(model_point) == 16, "model_point changed: update mkey_write");
_Static_assert(sizeof(model_curve) == 40, "model_curve changed: update mkey_write");
_Static_assert(sizeof(model_type) == 120, "model_type changed: update mkey_write");
_Static_assert(sizeof(model_node) == 104, "model_node changed: update mkey_write");
_Static_assert(sizeof(model_zone) == 64, "model_zone changed: update mkey_write");
_Static_assert(sizeof(model_cluster) == 80, "model_cluster changed: update mkey_write");
#endif

typedef struct {
    mkey_put_fn put;
    void *ud;
} sink;

static void put_i(const sink *k, int64_t v) { k->put(k->ud, &v, sizeof v); }
static void put_d(const sink *k, double v) { k->put(k->ud, &v, sizeof v); }

/* A name: its length, then its bytes (no NUL), so that no two lists of
 * names run together into the same bytes. */
static void put_name(const sink *k, const char *s) {
    size_t n = strnlen(s, MODEL_NAME_MAX);
    put_i(k, (int64_t)n);
    k->put(k->ud, s, n);
}

static void put_job(const sink *k, const model_job *j) {
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

static void put_cluster(const sink *k, const model_cluster *c) {
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

void mkey_write(const model_job *job, const model_cluster *cl, mkey_put_fn put, void *ud) {
    sink k = {put, ud};
    put_job(&k, job);
    put_cluster(&k, cl);
}

uint64_t mkey_fnv(uint64_t h, const void *bytes, size_t n) {
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static void fnv_put(void *ud, const void *bytes, size_t n) {
    uint64_t *h = ud;
    *h = mkey_fnv(*h, bytes, n);
}

uint64_t mkey_digest(const model_job *job, const model_cluster *cl) {
    uint64_t h = MKEY_FNV_START;
    mkey_write(job, cl, fnv_put, &h);
    return h ? h : 1;
}
