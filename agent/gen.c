/* gen.c -- the random instance generator (see gen.h): spec tables and the
 * draw of a job and a cluster. The spec is read with env/config.h's cfg_doc
 * walker, so its messages, units, bounds and figure guard (every non-zero
 * figure within [1e-12, 1e18]) are the run loader's own.
 */
#include "agent/gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "env/schema.h"
#include "nets/rng.h"

#define GEN_MAX_LAYERS 256
#define GEN_STREAM 0x47454e0000000000ULL /* "GEN" */

typedef struct {
    char name[MODEL_NAME_MAX];
    double count[2];
    double flops[2], io[2], act[2], params[2], mem[2];
    int same;
    double jitter;
    double period[2]; /* 0: off; else the role repeats a block of p drawn layers */
} gen_role;

typedef struct {
    char name[MODEL_NAME_MAX];
    double weight;
    double batch[2], samples[2], alpha[2], units[2];
    int n_roles;
    gen_role *roles;
} gen_family;

typedef struct {
    char name[MODEL_NAME_MAX];
    int kind; /* 0 cpu, 1 gpu */
    double flops[2], io_bw[2], net_bw[2], mem[2], price[2], units[2], ps_slots[2];
} gen_type;

typedef struct {
    double types[2], count[2], zones[2];
    int nodes;
    double bad_zone;
    double tight, tight_load[2]; /* share of tight targets, their load of the cluster */
    double single_type;          /* share with one type far cheaper per FLOPS */
    double inter_bw[2], inter_latency[2];
    int n_pool;
    gen_type *pool;
} gen_cluster;

/* One stage of the curriculum: draw indices >= from have at most
 * `layers` layers (until the next stage). */
typedef struct {
    double from, layers;
} gen_stage;

#define GEN_MAX_STAGES 32

struct agent_gen {
    int n_fam;
    gen_family *fam;
    double weight_sum;
    gen_cluster cl;
    int n_stages;
    gen_stage stages[GEN_MAX_STAGES]; /* by increasing `from` */
};

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

/* Rows built by env/config.h's CFG_ROW_*: a range's bounds are checked on
 * each of its ends and its default is both ends. */

enum { T_FAMILIES, T_CLUSTER, T_CURRICULUM, N_T };
static const cfg_field TOP[N_T] = {
    [T_FAMILIES] = CFG_ROW_NODE("families", CFG_FT_ANY, 1),
    [T_CLUSTER] = CFG_ROW_NODE("cluster", CFG_FT_ANY, 1),
    [T_CURRICULUM] = CFG_ROW_NODE("curriculum", CFG_FT_ANY, 0),
};

enum { S_FROM, S_LAYERS, N_S };
static const cfg_field STAGE[N_S] = {
    [S_FROM] = CFG_ROW_NUM("from", UNITS_COUNT, 1, 0, CFG_B_GE, 0, CFG_B_LE, 1e15, gen_stage, from),
    [S_LAYERS] = CFG_ROW_NUM("layers", UNITS_COUNT, 1, 0, CFG_B_GE, 1, CFG_B_LE, GEN_MAX_LAYERS,
                             gen_stage, layers),
};

enum { F_NAME, F_WEIGHT, F_BATCH, F_SAMPLES, F_ALPHA, F_UNITS, F_ROLES, N_F };
static const cfg_field FAMILY[N_F] = {
    [F_NAME] = CFG_ROW_NAME("name", 1, gen_family, name),
    [F_WEIGHT] = CFG_ROW_NUM("weight", UNITS_NUMBER, 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, gen_family,
                             weight),
    [F_BATCH] = CFG_ROW_RANGE("batch", UNITS_NUMBER, 1, 0, CFG_B_GE, 1, CFG_B_LE, 1e9, gen_family,
                              batch),
    [F_SAMPLES] = CFG_ROW_RANGE("samples", UNITS_NUMBER, 0, 1e8, CFG_B_GE, 1, CFG_B_LE, 1e18,
                                gen_family, samples),
    [F_ALPHA] = CFG_ROW_RANGE("alpha", UNITS_NUMBER, 0, 0.05, CFG_B_GE, 0, CFG_B_LE, 0.99,
                              gen_family, alpha),
    [F_UNITS] = CFG_ROW_RANGE("units", UNITS_NUMBER, 1, 0, CFG_B_GE, 1e-6, CFG_B_LE, 1e6,
                              gen_family, units),
    [F_ROLES] = CFG_ROW_NODE("roles", CFG_FT_ANY, 1),
};

enum { R_NAME, R_COUNT, R_FLOPS, R_IO, R_ACT, R_PARAMS, R_MEM, R_SAME, R_JITTER, R_PERIOD, N_R };
static const cfg_field ROLE[N_R] = {
    [R_NAME] = CFG_ROW_NAME("name", 1, gen_role, name),
    [R_COUNT] = CFG_ROW_RANGE("count", UNITS_COUNT, 0, 1, CFG_B_GE, 0, CFG_B_LE, GEN_MAX_LAYERS,
                              gen_role, count),
    [R_FLOPS] = CFG_ROW_RANGE("flops", UNITS_FLOP, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_role,
                              flops),
    [R_IO] = CFG_ROW_RANGE("io", UNITS_BYTES, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_role, io),
    [R_ACT] = CFG_ROW_RANGE("act", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_role, act),
    [R_PARAMS] = CFG_ROW_RANGE("params", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_role,
                               params),
    [R_MEM] = CFG_ROW_RANGE("mem", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_role, mem),
    [R_SAME] = CFG_ROW_BOOL("same", 0, 0, gen_role, same),
    [R_JITTER] = CFG_ROW_NUM("jitter", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 0.9, gen_role,
                             jitter),
    [R_PERIOD] = CFG_ROW_RANGE("period", UNITS_COUNT, 0, 0, CFG_B_GE, 0, CFG_B_LE, GEN_MAX_LAYERS,
                               gen_role, period),
};

enum { C_TYPES, C_COUNT, C_ZONES, C_NODES, C_BAD, C_IBW, C_ILAT, C_POOL, C_TIGHT, C_TLOAD,
       C_SINGLE, N_C };
static const cfg_field CLUSTER[N_C] = {
    [C_TYPES] = CFG_ROW_RANGE("types", UNITS_COUNT, 1, 0, CFG_B_GE, 1, CFG_B_LE, 64, gen_cluster,
                              types),
    [C_COUNT] = CFG_ROW_RANGE("count", UNITS_COUNT, 1, 0, CFG_B_GE, 1, CFG_B_LE, 4096, gen_cluster,
                              count),
    [C_ZONES] = CFG_ROW_RANGE("zones", UNITS_COUNT, 0, 1, CFG_B_GE, 1, CFG_B_LE, 16, gen_cluster,
                              zones),
    [C_NODES] = CFG_ROW_BOOL("nodes", 0, 1, gen_cluster, nodes),
    [C_BAD] = CFG_ROW_NUM("bad_zone", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, gen_cluster,
                          bad_zone),
    [C_IBW] = CFG_ROW_RANGE("inter_bw", UNITS_RATE_BYTES, 0, 1.25e9, CFG_B_GE, 1, CFG_B_NONE, 0,
                            gen_cluster, inter_bw),
    [C_ILAT] = CFG_ROW_RANGE("inter_latency", UNITS_SECONDS, 0, 5e-4, CFG_B_GE, 0, CFG_B_LE, 10,
                             gen_cluster, inter_latency),
    [C_POOL] = CFG_ROW_NODE("pool", CFG_FT_ANY, 1),
    [C_TIGHT] = CFG_ROW_NUM("tight", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, gen_cluster,
                            tight),
    [C_TLOAD] = CFG_ROW_RANGE("tight_load", UNITS_FRACTION, 0, 0.7, CFG_B_GT, 0, CFG_B_LE, 1,
                              gen_cluster, tight_load),
    [C_SINGLE] = CFG_ROW_NUM("single_type", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1,
                             gen_cluster, single_type),
};

enum { P_NAME, P_KIND, P_FLOPS, P_IOBW, P_NETBW, P_MEM, P_PRICE, P_UNITS, P_PS, N_P };
static const cfg_field POOL[N_P] = {
    [P_NAME] = CFG_ROW_NAME("name", 1, gen_type, name),
    [P_KIND] = CFG_ROW_ENUM("kind", "cpu|gpu", 1, 0, gen_type, kind),
    [P_FLOPS] = CFG_ROW_RANGE("flops", UNITS_FLOPS, 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, gen_type,
                              flops),
    [P_IOBW] = CFG_ROW_RANGE("io_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, gen_type,
                             io_bw),
    [P_NETBW] = CFG_ROW_RANGE("net_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0,
                              gen_type, net_bw),
    [P_MEM] = CFG_ROW_RANGE("mem", UNITS_BYTES, 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, gen_type, mem),
    [P_PRICE] = CFG_ROW_RANGE("price", UNITS_DOLLARS, 1, 0, CFG_B_GE, 1e-9, CFG_B_NONE, 0, gen_type,
                              price),
    [P_UNITS] = CFG_ROW_RANGE("units", UNITS_COUNT, 0, 1, CFG_B_GE, 1, CFG_B_LE, 64, gen_type,
                              units),
    [P_PS] = CFG_ROW_RANGE("ps_slots", UNITS_COUNT, 0, 1, CFG_B_GE, 0, CFG_B_LE, 64, gen_type,
                           ps_slots),
};

/* seq_len and seq_at: the length and the i-th item of sequence node n. */
static int seq_len(const yaml_node_t *n) {
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(cfg_doc *d, const yaml_node_t *n, int i) {
    return cfg_doc_node(d, n->data.sequence.items.start[i]);
}

/* walk checks mapping `map` (key path `path`) against table f[nf] into obj,
 * with the value nodes in vals[nf] (scratch when NULL). */
static int walk(cfg_doc *d, yaml_node_t *map, const char *path, const cfg_field *f, int nf,
                void *obj, yaml_node_t **vals, char *err, size_t errlen) {
    yaml_node_t *keys[16], *scratch[16];
    if (nf > 16) return cfg_doc_fail(d, map, path, err, errlen, "table too large");
    return cfg_doc_walk(d, map, path, "a mapping", f, nf, obj, keys, vals ? vals : scratch, err,
                        errlen);
}

void agent_gen_free(agent_gen *g) {
    if (!g) return;
    for (int i = 0; i < g->n_fam; i++) free(g->fam[i].roles);
    free(g->fam);
    free(g->cl.pool);
    free(g);
}

agent_gen *agent_gen_load(const char *path, char *err, size_t errlen) {
    cfg_doc *d = cfg_doc_load(path, err, errlen);
    if (!d) return NULL;
    agent_gen *g = calloc(1, sizeof *g);
    yaml_node_t *top[N_T], *cv[N_C], *fv[N_F];
    yaml_node_t *root = cfg_doc_root(d);
    char p[256];
    if (!g) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    if (!root) {
        cfg_doc_fail(d, NULL, "", err, errlen, "expected a mapping, the file is empty");
        goto fail;
    }
    if (walk(d, root, "", TOP, N_T, NULL, top, err, errlen)) goto fail;
    yaml_node_t *fams = top[T_FAMILIES];
    if (fams->type != YAML_SEQUENCE_NODE || seq_len(fams) == 0) {
        cfg_doc_fail(d, fams, "families", err, errlen, "expected a non-empty list of families");
        goto fail;
    }
    g->n_fam = seq_len(fams);
    g->fam = calloc((size_t)g->n_fam, sizeof *g->fam);
    if (!g->fam) goto oom;
    for (int i = 0; i < g->n_fam; i++) {
        gen_family *f = &g->fam[i];
        snprintf(p, sizeof p, "families[%d]", i);
        if (walk(d, seq_at(d, fams, i), p, FAMILY, N_F, f, fv, err, errlen)) goto fail;
        g->weight_sum += f->weight;
        yaml_node_t *roles = fv[F_ROLES];
        snprintf(p, sizeof p, "families[%d].roles", i);
        if (roles->type != YAML_SEQUENCE_NODE || seq_len(roles) == 0) {
            cfg_doc_fail(d, roles, p, err, errlen, "expected a non-empty list of roles");
            goto fail;
        }
        f->n_roles = seq_len(roles);
        f->roles = calloc((size_t)f->n_roles, sizeof *f->roles);
        if (!f->roles) goto oom;
        double max_layers = 0;
        for (int r = 0; r < f->n_roles; r++) {
            snprintf(p, sizeof p, "families[%d].roles[%d]", i, r);
            if (walk(d, seq_at(d, roles, r), p, ROLE, N_R, &f->roles[r], NULL, err, errlen))
                goto fail;
            max_layers += f->roles[r].count[1];
        }
        if (max_layers > GEN_MAX_LAYERS) {
            snprintf(p, sizeof p, "families[%d].roles", i);
            cfg_doc_fail(d, roles, p, err, errlen, "up to %g layers, at most %d allowed",
                         max_layers, GEN_MAX_LAYERS);
            goto fail;
        }
        if (f->roles[0].count[0] < 1 && max_layers < 1) {
            cfg_doc_fail(d, roles, p, err, errlen, "the roles can draw no layer at all");
            goto fail;
        }
    }
    if (!(g->weight_sum > 0)) {
        cfg_doc_fail(d, fams, "families", err, errlen, "the weights sum to 0");
        goto fail;
    }
    if (walk(d, top[T_CLUSTER], "cluster", CLUSTER, N_C, &g->cl, cv, err, errlen)) goto fail;
    if (top[T_CURRICULUM]) { /* a list of {from, layers} by increasing from */
        yaml_node_t *cu = top[T_CURRICULUM];
        if (cu->type != YAML_SEQUENCE_NODE || seq_len(cu) == 0 ||
            seq_len(cu) > GEN_MAX_STAGES) {
            cfg_doc_fail(d, cu, "curriculum", err, errlen,
                         "expected a list of 1 to %d stages {from, layers}", GEN_MAX_STAGES);
            goto fail;
        }
        g->n_stages = seq_len(cu);
        for (int i = 0; i < g->n_stages; i++) {
            snprintf(p, sizeof p, "curriculum[%d]", i);
            yaml_node_t *sn = seq_at(d, cu, i);
            if (walk(d, sn, p, STAGE, N_S, &g->stages[i], NULL, err, errlen)) goto fail;
            if (i > 0 && !(g->stages[i].from > g->stages[i - 1].from)) {
                cfg_doc_fail(d, sn, p, err, errlen, "from must increase from stage to stage");
                goto fail;
            }
        }
    }
    yaml_node_t *pool = cv[C_POOL];
    if (pool->type != YAML_SEQUENCE_NODE || seq_len(pool) == 0) {
        cfg_doc_fail(d, pool, "cluster.pool", err, errlen, "expected a non-empty list of types");
        goto fail;
    }
    g->cl.n_pool = seq_len(pool);
    if (g->cl.n_pool > 1024) {
        cfg_doc_fail(d, pool, "cluster.pool", err, errlen, "at most 1024 types");
        goto fail;
    }
    g->cl.pool = calloc((size_t)g->cl.n_pool, sizeof *g->cl.pool);
    if (!g->cl.pool) goto oom;
    for (int i = 0; i < g->cl.n_pool; i++) {
        snprintf(p, sizeof p, "cluster.pool[%d]", i);
        yaml_node_t *tn = seq_at(d, pool, i);
        if (walk(d, tn, p, POOL, N_P, &g->cl.pool[i], NULL, err, errlen)) goto fail;
        for (int j = 0; j < i; j++)
            if (!strcmp(g->cl.pool[j].name, g->cl.pool[i].name)) {
                cfg_doc_fail(d, tn, p, err, errlen, "type name '%s' used twice",
                             g->cl.pool[i].name);
                goto fail;
            }
    }
    if (g->cl.types[1] > g->cl.n_pool) {
        cfg_doc_fail(d, cv[C_TYPES], "cluster.types", err, errlen,
                     "up to %g types, but the pool has %d", g->cl.types[1], g->cl.n_pool);
        goto fail;
    }
    cfg_doc_free(d);
    return g;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
fail:
    cfg_doc_free(d);
    agent_gen_free(g);
    return NULL;
}

int agent_gen_families(const agent_gen *g) { return g->n_fam; }
const char *agent_gen_family_name(const agent_gen *g, int i) { return g->fam[i].name; }

/* ---------------------------------------------------------------------------
 * Drawing
 * ------------------------------------------------------------------------ */

static double u01(rng_t *r) { return rng_uniform(r); }

/* draw a value from range v: log-uniform when v[0] > 0, else uniform */
static double draw(rng_t *r, const double v[2]) {
    double u = u01(r);
    if (v[0] == v[1]) return v[0];
    if (v[0] > 0) return exp(log(v[0]) + u * (log(v[1]) - log(v[0])));
    return v[0] + u * (v[1] - v[0]);
}

/* the most types one cluster can draw: the pool's size, at most 64 */
static int n_pool_cap(const gen_cluster *gc) { return gc->n_pool < 64 ? gc->n_pool : 64; }

static double draw_lin(rng_t *r, const double v[2]) { return v[0] + u01(r) * (v[1] - v[0]); }

static int draw_int(rng_t *r, const double v[2]) {
    int lo = (int)v[0], hi = (int)v[1];
    int k = lo + (int)(u01(r) * (hi - lo + 1));
    return k > hi ? hi : k;
}

void agent_gen_inst_clear(agent_gen_inst *in) {
    free(in->layers);
    free(in->types);
    free(in->nodes);
    free(in->zones);
    memset(in, 0, sizeof *in);
}

int agent_gen_draw(const agent_gen *g, uint64_t seed, uint64_t index, int attempt,
                   agent_gen_inst *out) {
    agent_gen_inst_clear(out);
    rng_t r = {seed, GEN_STREAM | (uint64_t)(unsigned)attempt, index << 24};
    /* the family */
    double w = u01(&r) * g->weight_sum;
    int fi = 0;
    for (; fi < g->n_fam - 1; fi++) {
        if (w < g->fam[fi].weight) break;
        w -= g->fam[fi].weight;
    }
    const gen_family *f = &g->fam[fi];
    snprintf(out->family, sizeof out->family, "%.63s", f->name);
    /* the layers */
    int counts[GEN_MAX_LAYERS], L = 0;
    for (int k = 0; k < f->n_roles; k++) {
        counts[k] = draw_int(&r, f->roles[k].count);
        L += counts[k];
    }
    /* the curriculum: at most the stage's layers, taken off the largest roles */
    int cap = GEN_MAX_LAYERS;
    for (int k = 0; k < g->n_stages; k++)
        if ((double)index >= g->stages[k].from) cap = (int)g->stages[k].layers;
    while (L > cap) {
        int big = 0;
        for (int k = 1; k < f->n_roles; k++)
            if (counts[k] > counts[big]) big = k;
        counts[big]--;
        L--;
    }
    if (L == 0) counts[0] = L = 1;
    out->layers = calloc((size_t)L, sizeof *out->layers);
    if (!out->layers) return -1;
    int l = 0;
    for (int k = 0; k < f->n_roles; k++) {
        const gen_role *ro = &f->roles[k];
        model_layer base = {0};
        if (ro->same) {
            base.flops = draw(&r, ro->flops);
            base.io = draw(&r, ro->io);
            base.act = draw(&r, ro->act);
            base.params = draw(&r, ro->params);
            base.mem = draw(&r, ro->mem);
        }
        /* a periodic role draws its first p layers and repeats them, each
         * figure varied by the jitter (no draw at all without a period, so
         * that a spec without one draws what it always drew) */
        int period = ro->period[1] >= 1 ? draw_int(&r, ro->period) : 0;
        for (int i = 0; i < counts[k]; i++, l++) {
            model_layer *ly = &out->layers[l];
            snprintf(ly->name, sizeof ly->name, "%.40s%d", ro->name, i);
            /* a repeat of the layer one period back, or of the role's
             * figures drawn once; each figure varied by the jitter */
            const model_layer *src = period >= 1 && i >= period ? &out->layers[l - period]
                                     : ro->same                 ? &base
                                                                : NULL;
            if (src) {
                double j = ro->jitter;
                ly->flops = src->flops * (1 + j * (2 * u01(&r) - 1));
                ly->io = src->io * (1 + j * (2 * u01(&r) - 1));
                ly->act = src->act * (1 + j * (2 * u01(&r) - 1));
                ly->params = src->params * (1 + j * (2 * u01(&r) - 1));
                ly->mem = src->mem * (1 + j * (2 * u01(&r) - 1));
            } else {
                ly->flops = draw(&r, ro->flops);
                ly->io = draw(&r, ro->io);
                ly->act = draw(&r, ro->act);
                ly->params = draw(&r, ro->params);
                ly->mem = draw(&r, ro->mem);
            }
        }
    }
    model_job *job = &out->job;
    snprintf(job->name, sizeof job->name, "%.30s-%llu", f->name, (unsigned long long)index);
    job->n_layers = L;
    job->layers = out->layers;
    job->batch = round(draw(&r, f->batch));
    if (job->batch < 1) job->batch = 1;
    job->samples = round(draw(&r, f->samples));
    job->alpha = draw_lin(&r, f->alpha);
    job->shard = MODEL_DEFAULT_SHARD;
    /* the cluster: types without replacement from the pool */
    const gen_cluster *gc = &g->cl;
    int T = draw_int(&r, gc->types);
    if (T > n_pool_cap(gc)) T = n_pool_cap(gc);
    if (T < 1) T = 1;
    int pick[64], n_pool = gc->n_pool > 1024 ? 1024 : gc->n_pool;
    int order[1024];
    for (int i = 0; i < n_pool && i < 1024; i++) order[i] = i;
    for (int i = 0; i < T; i++) { /* partial Fisher-Yates */
        int j = i + (int)(u01(&r) * (n_pool - i));
        if (j >= n_pool) j = n_pool - 1;
        int tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
        pick[i] = order[i];
    }
    /* keep the pool's order among the picked types */
    for (int i = 1; i < T; i++)
        for (int j = i; j > 0 && pick[j - 1] > pick[j]; j--) {
            int tmp = pick[j];
            pick[j] = pick[j - 1];
            pick[j - 1] = tmp;
        }
    out->types = calloc((size_t)T, sizeof *out->types);
    if (!out->types) return -1;
    int per_node[64], total_nodes = 0;
    for (int i = 0; i < T; i++) {
        const gen_type *gt = &gc->pool[pick[i]];
        model_type *ty = &out->types[i];
        snprintf(ty->name, sizeof ty->name, "%.63s", gt->name);
        ty->is_gpu = gt->kind;
        ty->flops = draw(&r, gt->flops);
        ty->io_bw = draw(&r, gt->io_bw);
        ty->net_bw = draw(&r, gt->net_bw);
        ty->mem = draw(&r, gt->mem);
        ty->price = draw(&r, gt->price);
        per_node[i] = draw_int(&r, gt->units);
        int c = draw_int(&r, gc->count);
        if (gc->nodes) { /* whole nodes */
            int n = (c + per_node[i] - 1) / per_node[i];
            if (n < 1) n = 1;
            c = n * per_node[i];
            total_nodes += n;
        }
        ty->count = c;
    }
    model_cluster *cl = &out->cl;
    cl->n_types = T;
    cl->types = out->types;
    int Z = draw_int(&r, gc->zones);
    out->zones = calloc((size_t)Z, sizeof *out->zones);
    if (!out->zones) return -1;
    for (int z = 0; z < Z; z++) snprintf(out->zones[z].name, sizeof out->zones[z].name, "z%d", z);
    cl->n_zones = Z;
    cl->zones = out->zones;
    cl->inter_bw = draw(&r, gc->inter_bw);
    cl->inter_latency = draw(&r, gc->inter_latency);
    int bad = Z > 1 && u01(&r) < gc->bad_zone;
    if (gc->nodes) {
        out->nodes = calloc((size_t)total_nodes, sizeof *out->nodes);
        if (!out->nodes) return -1;
        int n = 0;
        for (int i = 0; i < T; i++) {
            const gen_type *gt = &gc->pool[pick[i]];
            int nodes = out->types[i].count / per_node[i];
            for (int k = 0; k < nodes; k++, n++) {
                model_node *nd = &out->nodes[n];
                int z = k % Z;
                int degraded = bad && z == Z - 1;
                snprintf(nd->name, sizeof nd->name, "%.40s-%d", out->types[i].name, k);
                nd->type = i;
                nd->units = per_node[i];
                nd->ps_slots = draw_int(&r, gt->ps_slots);
                nd->zone = z;
                nd->bw = out->types[i].net_bw * per_node[i] * (degraded ? 0.7 : 1.0);
                nd->latency = degraded ? 150e-6 : 50e-6;
                nd->loss = degraded ? 1e-3 : 1e-4;
            }
        }
        cl->n_nodes = n;
        cl->nodes = out->nodes;
    }
    /* the target: units x one unit of the fastest type running the whole job */
    int fast = 0;
    for (int i = 1; i < T; i++)
        if (out->types[i].flops > out->types[fast].flops) fast = i;
    job->min_throughput = 1; /* model_stage_eval needs R only for units */
    model_stage st;
    model_stage_eval(job, cl, fast, 0, L - 1, &st);
    job->min_throughput = draw(&r, f->units) * job->batch / st.step;
    /* the wide family's extras, drawn only when asked for, so that specs
     * without them draw the same instances as before */
    if (gc->single_type > 0 && u01(&r) < gc->single_type) {
        /* one type far cheaper per FLOPS than any other: a one-type optimum
         * unless memory or IO rule it out */
        int k = (int)(u01(&r) * T);
        if (k >= T) k = T - 1;
        double best = INFINITY;
        for (int i = 0; i < T; i++)
            if (i != k && out->types[i].price / out->types[i].flops < best)
                best = out->types[i].price / out->types[i].flops;
        if (isfinite(best))
            out->types[k].price = best * out->types[k].flops * (0.3 + 0.3 * u01(&r));
    }
    if (gc->tight > 0 && u01(&r) < gc->tight) {
        /* a target near what the whole cluster delivers */
        double total = 0, target = job->min_throughput;
        job->min_throughput = 1;
        for (int i = 0; i < T; i++) {
            model_stage_eval(job, cl, i, 0, L - 1, &st);
            if (st.step > 0) total += out->types[i].count * job->batch / st.step;
        }
        double want = total * draw_lin(&r, gc->tight_load);
        job->min_throughput = want > 0 ? want : target;
    }
    return 0;
}
