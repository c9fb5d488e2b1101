/* config.c -- the run schema: loading runs and placements from YAML (see
 * config.h).
 *
 * A run comes from YAML text (files, buffers) or from a JSON value the
 * daemon parsed (cfg_load_json); both are walked by the same code below,
 * whose nodes are schema_ctx.h's cfg_item.
 *
 * Every object of a run (top level, cluster, type, zone, link, node, job,
 * layer, placement stage) is described by one table of cfg_field rows: key,
 * field type, unit kind, required or default, bounds, offset into the C
 * struct. The walker of schema.c, cfg_walk_map(), checks a mapping against
 * its table and fills the struct; the code here only handles the top-level
 * keys across included files, lists, name references and cross-object
 * rules.
 *
 * The first error stops loading; it is written as
 * "file:line:col: key.path: message" with 1-based line and column.
 * Included files are loaded depth-first; their documents stay alive until
 * the run is built, since the walk over the cluster and jobs happens after
 * every top-level key has been collected from every file.
 */
#include "env/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/place.h"
#include "env/schema.h"
#include "env/schema_ctx.h"
#include "env/units.h"

enum { TOP_MODEL, TOP_OBJECTIVE, TOP_INCLUDE, TOP_CLUSTER, TOP_JOB, TOP_JOBS, N_TOP };

/* Where a top-level key was defined. */
typedef struct {
    int file; /* -1 when not seen yet */
    cfg_item *key, *val;
} cfg_origin;

/* A run being loaded: the files (c) and the top-level keys found so far. */
typedef struct {
    cfg_ctx c;
    int no_include;        /* refuse include: (buffers) */
    int cluster_only;      /* job: and jobs: may be absent (cfg_load_cluster) */
    cfg_origin top[N_TOP]; /* objective, cluster, job, jobs across files */
    int objective;         /* value of the objective key, when seen */
    const model_cluster *given; /* cfg_load_json_on: the cluster, already loaded */
} run_ctx;

static void run_ctx_init(run_ctx *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    cfg_ctx_init(&r->c, err, errlen);
    for (int i = 0; i < N_TOP; i++)
        r->top[i].file = -1;
}

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

typedef struct {
    int model;     /* index in "v1" */
    int objective; /* index in "cost|jct" */
} top_in;

static const cfg_field TOP_FIELDS[N_TOP] = {
    [TOP_MODEL] = CFG_ROW_ENUM("model", "v1", 0, 0, top_in, model),
    [TOP_OBJECTIVE] = CFG_ROW_ENUM("objective", "cost|jct", 0, CFG_OBJECTIVE_COST, top_in,
                                   objective),
    [TOP_INCLUDE] = CFG_ROW_NODE("include", CFG_FT_ANY, 0),
    [TOP_CLUSTER] = CFG_ROW_NODE("cluster", CFG_FT_MAP, 0),
    [TOP_JOB] = CFG_ROW_NODE("job", CFG_FT_MAP, 0),
    [TOP_JOBS] = CFG_ROW_NODE("jobs", CFG_FT_LIST, 0),
};

enum { CL_TYPES, CL_ZONES, CL_INTER_BW, CL_INTER_LAT, CL_LINKS, CL_NODES, N_CL };
static const cfg_field CLUSTER_FIELDS[N_CL] = {
    [CL_TYPES] = CFG_ROW_NODE("types", CFG_FT_LIST, 1),
    [CL_ZONES] = CFG_ROW_NODE("zones", CFG_FT_LIST, 0),
    [CL_INTER_BW] = CFG_ROW_NUM("inter_bw", UNITS_RATE_BYTES, 0, 1.25e9, CFG_B_GT, 0, CFG_B_NONE, 0,
                                model_cluster, inter_bw),
    [CL_INTER_LAT] = CFG_ROW_NUM("inter_latency", UNITS_SECONDS, 0, 0.001, CFG_B_GE, 0, CFG_B_NONE,
                                 0, model_cluster, inter_latency),
    [CL_LINKS] = CFG_ROW_NODE("links", CFG_FT_LIST, 0),
    [CL_NODES] = CFG_ROW_NODE("nodes", CFG_FT_LIST, 0),
};

enum { TY_NAME, TY_KIND, TY_FLOPS, TY_IO_BW, TY_NET_BW, TY_MEM, TY_PRICE, TY_COUNT, N_TY };
static const cfg_field TYPE_FIELDS[N_TY] = {
    [TY_NAME] = CFG_ROW_NAME("name", 1, model_type, name),
    [TY_KIND] = CFG_ROW_ENUM("kind", "cpu|gpu", 1, 0, model_type, is_gpu),
    [TY_FLOPS] = CFG_ROW_NUM("flops", UNITS_FLOPS, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_type,
                             flops),
    [TY_IO_BW] = CFG_ROW_NUM("io_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                             model_type, io_bw),
    [TY_NET_BW] = CFG_ROW_NUM("net_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                              model_type, net_bw),
    [TY_MEM] = CFG_ROW_NUM("mem", UNITS_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_type, mem),
    [TY_PRICE] = CFG_ROW_NUM("price", UNITS_DOLLARS, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_type,
                             price),
    /* -1: absent; then derived from the nodes (see build_cluster) */
    [TY_COUNT] = CFG_ROW_INT("count", 0, -1, CFG_B_GE, 0, CFG_B_NONE, 0, model_type, count),
};

enum { ZO_NAME, N_ZO };
static const cfg_field ZONE_FIELDS[N_ZO] = {
    [ZO_NAME] = CFG_ROW_NAME("name", 1, model_zone, name),
};

typedef struct {
    double bw, lat; /* -1: absent, then the cluster's inter_bw / inter_latency */
} link_in;

enum { LK_ZONES, LK_BW, LK_LAT, N_LK };
static const cfg_field LINK_FIELDS[N_LK] = {
    [LK_ZONES] = CFG_ROW_NODE("zones", CFG_FT_LIST, 1),
    [LK_BW] = CFG_ROW_NUM("bw", UNITS_RATE_BYTES, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0, link_in, bw),
    [LK_LAT] = CFG_ROW_NUM("latency", UNITS_SECONDS, 0, -1, CFG_B_GE, 0, CFG_B_NONE, 0, link_in,
                           lat),
};

typedef struct {
    model_node n;
    char type[MODEL_NAME_MAX];
    char zone[MODEL_NAME_MAX];
} node_in;

enum { NO_NAME, NO_TYPE, NO_UNITS, NO_PS, NO_ZONE, NO_BW, NO_LAT, NO_LOSS, N_NO };
static const cfg_field NODE_FIELDS[N_NO] = {
    [NO_NAME] = CFG_ROW_NAME("name", 1, node_in, n.name),
    [NO_TYPE] = CFG_ROW_NAME("type", 1, node_in, type),
    [NO_UNITS] = CFG_ROW_INT("units", 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, node_in, n.units),
    [NO_PS] = CFG_ROW_INT("ps_slots", 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, node_in, n.ps_slots),
    [NO_ZONE] = CFG_ROW_NAME("zone", 0, node_in, zone),
    [NO_BW] = CFG_ROW_NUM("bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, node_in, n.bw),
    [NO_LAT] = CFG_ROW_NUM("latency", UNITS_SECONDS, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, node_in,
                           n.latency),
    [NO_LOSS] = CFG_ROW_NUM("loss", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LT, 1, node_in,
                            n.loss),
};

enum { JO_NAME, JO_BATCH, JO_SAMPLES, JO_MINTP, JO_ALPHA, JO_SHARD, JO_LAYERS, JO_MEAS, N_JO };
static const cfg_field JOB_FIELDS[N_JO] = {
    [JO_NAME] = CFG_ROW_NAME("name", 1, model_job, name),
    [JO_BATCH] = CFG_ROW_NUM("batch", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_job,
                             batch),
    [JO_SAMPLES] = CFG_ROW_NUM("samples", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_job,
                               samples),
    [JO_MINTP] = CFG_ROW_NUM("min_throughput", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                             model_job, min_throughput),
    [JO_ALPHA] = CFG_ROW_NUM("alpha", UNITS_FRACTION, 0, MODEL_DEFAULT_ALPHA, CFG_B_GE, 0, CFG_B_LT,
                             1, model_job, alpha),
    [JO_SHARD] = CFG_ROW_NUM("shard", UNITS_BYTES, 0, MODEL_DEFAULT_SHARD, CFG_B_GT, 0, CFG_B_NONE,
                             0, model_job, shard),
    [JO_LAYERS] = CFG_ROW_NODE("layers", CFG_FT_LIST, 1),
    [JO_MEAS] = CFG_ROW_NODE("measurements", CFG_FT_LIST, 0),
};

/* One measured throughput (docs/jobs.md): fitted by solvers/fit.h. */
enum { ME_WORKERS, ME_PS, ME_TP, N_ME };
static const cfg_field MEAS_FIELDS[N_ME] = {
    [ME_WORKERS] = CFG_ROW_INT("workers", 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, model_point, workers),
    [ME_PS] = CFG_ROW_INT("ps", 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, model_point, ps),
    [ME_TP] = CFG_ROW_NUM("throughput", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_point,
                          throughput),
};

enum { LA_NAME, LA_FLOPS, LA_IO, LA_ACT, LA_PARAMS, LA_MEM, N_LA };
static const cfg_field LAYER_FIELDS[N_LA] = {
    [LA_NAME] = CFG_ROW_NAME("name", 1, model_layer, name),
    [LA_FLOPS] = CFG_ROW_NUM("flops", UNITS_FLOP, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer,
                             flops),
    [LA_IO] = CFG_ROW_NUM("io", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, io),
    [LA_ACT] = CFG_ROW_NUM("act", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, act),
    [LA_PARAMS] = CFG_ROW_NUM("params", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer,
                              params),
    [LA_MEM] = CFG_ROW_NUM("mem", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, mem),
};

enum { PL_PLACEMENT, N_PL };
static const cfg_field PLACE_FIELDS[N_PL] = {
    [PL_PLACEMENT] = CFG_ROW_NODE("placement", CFG_FT_LIST, 1),
};

enum { PS_WORKERS, PS_PS, N_PS };
static const cfg_field STAGE_FIELDS[N_PS] = {
    [PS_WORKERS] = CFG_ROW_NODE("workers", CFG_FT_LIST, 1),
    [PS_PS] = CFG_ROW_NODE("ps", CFG_FT_LIST, 1),
};

static int load_top(run_ctx *r, int idx);

/* load_include opens the file named by scalar node `name` (relative to the
 * directory of file `from`) and loads its top-level keys. */
static int load_include(run_ctx *r, int from, cfg_item *name, const char *path)
{
    int idx = cfg_open_include(&r->c, from, name, path);
    if (idx < 0)
        return -1;
    int rc = load_top(r, idx);
    r->c.cur = from;
    return rc;
}

/* load_top walks the top-level mapping of file idx: checks model and
 * objective, records cluster/job/jobs/objective (refusing one defined
 * twice, or job with jobs), then loads its includes depth-first. */
static int load_top(run_ctx *r, int idx)
{
    cfg_ctx *c = &r->c;
    cfg_item *root = cfg_root_of(c, idx, "a mapping of top-level keys");
    if (!root)
        return -1;
    cfg_item *keys[N_TOP], *vals[N_TOP];
    top_in t;
    if (cfg_walk_map(c, root, "", "a mapping of top-level keys", TOP_FIELDS, N_TOP, &t, keys, vals))
        return -1;
    static const int reg[] = {TOP_OBJECTIVE, TOP_CLUSTER, TOP_JOB, TOP_JOBS};
    for (size_t q = 0; q < sizeof reg / sizeof reg[0]; q++) {
        int k = reg[q];
        if (!keys[k])
            continue;
        char first[CFG_PATH_MAX + 64];
        if (r->top[k].file >= 0) {
            cfg_where(c, r->top[k].file, r->top[k].key, first, sizeof first);
            return cfg_fail(c, keys[k], TOP_FIELDS[k].key, "defined twice (first at %s)", first);
        }
        int other = k == TOP_JOB ? TOP_JOBS : k == TOP_JOBS ? TOP_JOB : -1;
        if (other >= 0 && r->top[other].file >= 0) {
            cfg_where(c, r->top[other].file, r->top[other].key, first, sizeof first);
            return cfg_fail(c, keys[k], TOP_FIELDS[k].key,
                            "'job' and 'jobs' cannot both be given ('%s' at %s); use jobs: for "
                            "several jobs",
                            TOP_FIELDS[other].key, first);
        }
        r->top[k].file = idx;
        r->top[k].key = keys[k];
        r->top[k].val = vals[k];
        if (k == TOP_OBJECTIVE)
            r->objective = t.objective;
    }
    cfg_item *inc = vals[TOP_INCLUDE];
    if (!inc)
        return 0;
    if (r->no_include)
        return cfg_fail(c, keys[TOP_INCLUDE], "include",
                        "not allowed here: a request cannot name files to read; send the whole "
                        "run in one document");
    if (c->depth >= CFG_MAX_DEPTH)
        return cfg_fail(c, inc, "include", "includes nested more than %d deep", CFG_MAX_DEPTH);
    c->stack[c->depth++] = idx;
    int rc = 0;
    if (cfg_kind_of(c, inc) == CFG_K_SEQ) {
        for (int i = 0; i < cfg_seq_len(c, inc) && rc == 0; i++) {
            char p[64];
            cfg_path_index(p, sizeof p, "include", i);
            c->cur = idx;
            rc = load_include(r, idx, cfg_seq_at(c, inc, i), p);
        }
    } else if (cfg_kind_of(c, inc) == CFG_K_SCALAR) {
        rc = load_include(r, idx, inc, "include");
    } else {
        char d[96];
        cfg_describe(c, inc, d, sizeof d);
        rc = cfg_fail(c, inc, "include", "expected a file name or a list of them, got %s", d);
    }
    c->depth--;
    c->cur = idx;
    return rc;
}

/* ---------------------------------------------------------------------------
 * Building the cluster
 * ------------------------------------------------------------------------ */

/* build_types reads cluster.types into cl; type mapping and count nodes
 * go to maps[] and counts[] (count NULL when absent). */
static int build_types(cfg_ctx *c, cfg_item *list, model_cluster *cl, cfg_item **maps,
                       cfg_item **counts)
{
    int n = cfg_seq_len(c, list);
    if (n == 0)
        return cfg_fail(c, list, "cluster.types", "must list at least one type");
    if (n > MODEL_MAX_TYPES)
        return cfg_fail(c, list, "cluster.types", "at most %d types are supported, got %d",
                        MODEL_MAX_TYPES, n);
    cl->types = calloc((size_t)n, sizeof *cl->types);
    if (!cl->types)
        return cfg_fail(c, list, "cluster.types", "out of memory");
    cl->n_types = n;
    cfg_item *names[MODEL_MAX_TYPES];
    for (int i = 0; i < n; i++) {
        char p[64];
        cfg_item *keys[N_TY], *vals[N_TY];
        cfg_path_index(p, sizeof p, "cluster.types", i);
        maps[i] = cfg_seq_at(c, list, i);
        if (cfg_walk_map(c, maps[i], p, "a mapping", TYPE_FIELDS, N_TY, &cl->types[i], keys, vals))
            return -1;
        names[i] = vals[TY_NAME];
        counts[i] = vals[TY_COUNT];
        char np[96];
        cfg_path_key(np, sizeof np, p, "name");
        if (cfg_check_dup(c, cl->types, sizeof *cl->types, i, names, np, "type"))
            return -1;
    }
    return 0;
}

/* build_zones reads cluster.zones, or makes the implicit zone "default"
 * when list is NULL or empty. Sets *declared. */
static int build_zones(cfg_ctx *c, cfg_item *list, model_cluster *cl, int *declared)
{
    int n = list ? cfg_seq_len(c, list) : 0;
    *declared = n > 0;
    if (n > MODEL_MAX_ZONES)
        return cfg_fail(c, list, "cluster.zones", "at most %d zones are supported, got %d",
                        MODEL_MAX_ZONES, n);
    cl->zones = calloc((size_t)(n > 0 ? n : 1), sizeof *cl->zones);
    if (!cl->zones)
        return cfg_fail(c, list, "cluster.zones", "out of memory");
    if (n == 0) {
        cl->n_zones = 1;
        snprintf(cl->zones[0].name, sizeof cl->zones[0].name, "default");
        return 0;
    }
    cl->n_zones = n;
    cfg_item *names[MODEL_MAX_ZONES];
    for (int i = 0; i < n; i++) {
        char p[64], np[96];
        cfg_item *keys[N_ZO], *vals[N_ZO];
        cfg_path_index(p, sizeof p, "cluster.zones", i);
        if (cfg_walk_map(c, cfg_seq_at(c, list, i), p, "a mapping", ZONE_FIELDS, N_ZO,
                         &cl->zones[i], keys, vals))
            return -1;
        names[i] = vals[ZO_NAME];
        cfg_path_key(np, sizeof np, p, "name");
        if (cfg_check_dup(c, cl->zones, sizeof *cl->zones, i, names, np, "zone"))
            return -1;
    }
    return 0;
}

/* zone_ref resolves a zone name held by scalar node v. */
static int zone_ref(cfg_ctx *c, const model_cluster *cl, cfg_item *v, const char *name,
                    const char *path, int *out)
{
    int z = cfg_find_name(name, cl->zones, sizeof *cl->zones, cl->n_zones);
    if (z < 0)
        return cfg_unknown_name(c, v, path, "zone", name, cl->zones, sizeof *cl->zones,
                                cl->n_zones);
    *out = z;
    return 0;
}

static int build_nodes(cfg_ctx *c, cfg_item *list, model_cluster *cl, int zones_declared)
{
    int n = cfg_seq_len(c, list);
    if (n == 0)
        return 0;
    if (n > MODEL_MAX_NODES)
        return cfg_fail(c, list, "cluster.nodes", "at most %d nodes are supported, got %d",
                        MODEL_MAX_NODES, n);
    cl->nodes = calloc((size_t)n, sizeof *cl->nodes);
    cfg_item **names = calloc((size_t)n, sizeof *names);
    if (!cl->nodes || !names) {
        free(names);
        return cfg_fail(c, list, "cluster.nodes", "out of memory");
    }
    cl->n_nodes = n;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char p[64], kp[96];
        cfg_item *keys[N_NO], *vals[N_NO];
        node_in in;
        memset(&in, 0, sizeof in);
        cfg_path_index(p, sizeof p, "cluster.nodes", i);
        cfg_item *map = cfg_seq_at(c, list, i);
        if (cfg_walk_map(c, map, p, "a mapping", NODE_FIELDS, N_NO, &in, keys, vals)) {
            rc = -1;
            break;
        }
        model_node *nd = &cl->nodes[i];
        *nd = in.n;
        names[i] = vals[NO_NAME];
        cfg_path_key(kp, sizeof kp, p, "name");
        if (cfg_check_dup(c, cl->nodes, sizeof *cl->nodes, i, names, kp, "node")) {
            rc = -1;
            break;
        }
        cfg_path_key(kp, sizeof kp, p, "type");
        nd->type = cfg_find_name(in.type, cl->types, sizeof *cl->types, cl->n_types);
        if (nd->type < 0) {
            rc = cfg_unknown_name(c, vals[NO_TYPE], kp, "type", in.type, cl->types,
                                  sizeof *cl->types, cl->n_types);
            break;
        }
        cfg_path_key(kp, sizeof kp, p, "zone");
        if (!vals[NO_ZONE]) {
            if (zones_declared) {
                rc = cfg_fail(c, map, kp, "missing required key (the cluster declares zones)");
                break;
            }
            nd->zone = 0;
        } else if (zone_ref(c, cl, vals[NO_ZONE], in.zone, kp, &nd->zone)) {
            rc = -1;
            break;
        }
    }
    free(names);
    return rc;
}

static int build_links(cfg_ctx *c, cfg_item *list, model_cluster *cl)
{
    int n = cfg_seq_len(c, list), nz = cl->n_zones;
    if (n == 0)
        return 0;
    cl->zone_bw = malloc(sizeof(double) * (size_t)nz * (size_t)nz);
    cl->zone_lat = malloc(sizeof(double) * (size_t)nz * (size_t)nz);
    cfg_item **seen = calloc((size_t)nz * (size_t)nz, sizeof *seen);
    if (!cl->zone_bw || !cl->zone_lat || !seen) {
        free(seen);
        return cfg_fail(c, list, "cluster.links", "out of memory");
    }
    for (int i = 0; i < nz * nz; i++) {
        cl->zone_bw[i] = cl->inter_bw;
        cl->zone_lat[i] = cl->inter_latency;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char p[64], zp[96], ip[112];
        cfg_item *keys[N_LK], *vals[N_LK];
        link_in in;
        cfg_path_index(p, sizeof p, "cluster.links", i);
        if (cfg_walk_map(c, cfg_seq_at(c, list, i), p, "a mapping", LINK_FIELDS, N_LK, &in, keys,
                         vals)) {
            rc = -1;
            break;
        }
        cfg_item *zl = vals[LK_ZONES];
        cfg_path_key(zp, sizeof zp, p, "zones");
        if (cfg_seq_len(c, zl) != 2) {
            rc = cfg_fail(c, zl, zp, "expected two zone names, got %d", cfg_seq_len(c, zl));
            break;
        }
        int z[2];
        for (int k = 0; k < 2 && rc == 0; k++) {
            const char *name;
            cfg_item *v = cfg_seq_at(c, zl, k);
            cfg_path_index(ip, sizeof ip, zp, k);
            if (cfg_scalar_text(c, v, ip, "a zone name", &name) ||
                zone_ref(c, cl, v, name, ip, &z[k]))
                rc = -1;
        }
        if (rc)
            break;
        if (z[0] == z[1]) {
            rc = cfg_fail(c, zl, zp, "a link joins two different zones, got '%s' twice",
                          cl->zones[z[0]].name);
            break;
        }
        if (seen[z[0] * nz + z[1]]) {
            char first[CFG_PATH_MAX + 64];
            cfg_where(c, c->cur, seen[z[0] * nz + z[1]], first, sizeof first);
            rc = cfg_fail(c, zl, zp, "the link between '%s' and '%s' is already given (at %s)",
                          cl->zones[z[0]].name, cl->zones[z[1]].name, first);
            break;
        }
        seen[z[0] * nz + z[1]] = seen[z[1] * nz + z[0]] = zl;
        double bw = vals[LK_BW] ? in.bw : cl->inter_bw;
        double lat = vals[LK_LAT] ? in.lat : cl->inter_latency;
        cl->zone_bw[z[0] * nz + z[1]] = cl->zone_bw[z[1] * nz + z[0]] = bw;
        cl->zone_lat[z[0] * nz + z[1]] = cl->zone_lat[z[1] * nz + z[0]] = lat;
    }
    free(seen);
    return rc;
}

/* build_cluster reads the cluster mapping into cl (zeroed by the caller,
 * freed by cfg_free even when this fails half-way). */
static int build_cluster(cfg_ctx *c, cfg_item *map, model_cluster *cl)
{
    cfg_item *keys[N_CL], *vals[N_CL];
    if (cfg_walk_map(c, map, "cluster", "a mapping", CLUSTER_FIELDS, N_CL, cl, keys, vals))
        return -1;
    cfg_item *maps[MODEL_MAX_TYPES], *counts[MODEL_MAX_TYPES];
    int declared;
    if (build_types(c, vals[CL_TYPES], cl, maps, counts) ||
        build_zones(c, vals[CL_ZONES], cl, &declared))
        return -1;
    if (vals[CL_NODES] && build_nodes(c, vals[CL_NODES], cl, declared))
        return -1;
    if (vals[CL_LINKS] && build_links(c, vals[CL_LINKS], cl))
        return -1;
    /* counts: derived from, or checked against, the nodes */
    long long sum[MODEL_MAX_TYPES] = {0};
    int has[MODEL_MAX_TYPES] = {0};
    for (int i = 0; i < cl->n_nodes; i++) {
        sum[cl->nodes[i].type] += cl->nodes[i].units;
        has[cl->nodes[i].type] = 1;
    }
    for (int t = 0; t < cl->n_types; t++) {
        char p[96];
        model_type *ty = &cl->types[t];
        snprintf(p, sizeof p, "cluster.types[%d].count", t);
        if (!counts[t]) {
            if (cl->n_nodes == 0)
                return cfg_fail(c, maps[t], p,
                                "missing required key (needed when the cluster lists no nodes)");
            if (sum[t] > 2147483647LL)
                return cfg_fail(c, maps[t], p, "the nodes of type '%s' hold %lld units, too many",
                                ty->name, sum[t]);
            ty->count = (int)sum[t];
        } else if (has[t] && sum[t] != ty->count) {
            return cfg_fail(c, counts[t], p,
                            "count %d disagrees with the nodes of type '%s', which hold %lld "
                            "units in total",
                            ty->count, ty->name, sum[t]);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Building the jobs
 * ------------------------------------------------------------------------ */

/* build_job reads one job mapping at key path `path` into job, checking
 * every layer's memory against the largest type memory of cl; *name_node
 * gets the node of the job's name. */
static int build_job(cfg_ctx *c, cfg_item *map, const char *path, model_job *job,
                     const model_cluster *cl, cfg_item **name_node)
{
    cfg_item *keys[N_JO], *vals[N_JO];
    if (cfg_walk_map(c, map, path, "a mapping", JOB_FIELDS, N_JO, job, keys, vals))
        return -1;
    *name_node = vals[JO_NAME];
    cfg_item *list = vals[JO_LAYERS];
    char lp[96];
    cfg_path_key(lp, sizeof lp, path, "layers");
    int n = cfg_seq_len(c, list);
    if (n == 0)
        return cfg_fail(c, list, lp, "must list at least one layer");
    if (n > MODEL_MAX_LAYERS)
        return cfg_fail(c, list, lp, "at most %d layers are supported, got %d", MODEL_MAX_LAYERS,
                        n);
    job->layers = calloc((size_t)n, sizeof *job->layers);
    if (!job->layers)
        return cfg_fail(c, list, lp, "out of memory");
    job->n_layers = n;
    int big = 0;
    for (int t = 1; t < cl->n_types; t++)
        if (cl->types[t].mem > cl->types[big].mem)
            big = t;
    cfg_item *names[MODEL_MAX_LAYERS];
    for (int i = 0; i < n; i++) {
        char p[128], kp[160];
        cfg_item *lkeys[N_LA], *lvals[N_LA];
        model_layer *l = &job->layers[i];
        cfg_path_index(p, sizeof p, lp, i);
        if (cfg_walk_map(c, cfg_seq_at(c, list, i), p, "a mapping", LAYER_FIELDS, N_LA, l, lkeys,
                         lvals))
            return -1;
        names[i] = lvals[LA_NAME];
        cfg_path_key(kp, sizeof kp, p, "name");
        if (cfg_check_dup(c, job->layers, sizeof *job->layers, i, names, kp, "layer"))
            return -1;
        if (cl->n_types > 0 && l->mem > cl->types[big].mem) {
            char need[32], have[32];
            units_format(UNITS_BYTES, l->mem, need, sizeof need);
            units_format(UNITS_BYTES, cl->types[big].mem, have, sizeof have);
            cfg_path_key(kp, sizeof kp, p, "mem");
            return cfg_fail(c, lvals[LA_MEM], kp,
                            "layer '%s' needs %s, more than any type's mem (largest: %s on %s)",
                            l->name, need, have, cl->types[big].name);
        }
    }
    int bad;
    char why[320];
    if (model_job_check(job, &bad, why, sizeof why) < 0) { /* finite figures: env/model.h */
        char p[128];
        cfg_path_index(p, sizeof p, lp, bad);
        return cfg_fail(c, bad < 0 ? list : cfg_seq_at(c, list, bad), bad < 0 ? lp : p, "%s", why);
    }
    cfg_item *meas = vals[JO_MEAS];
    if (meas) {
        /* Four coefficients to fit: fewer points cannot pin them (FIT_MIN_POINTS). */
        cfg_path_key(lp, sizeof lp, path, "measurements");
        int m = cfg_seq_len(c, meas);
        if (m < 4)
            return cfg_fail(c, meas, lp, "the throughput curve has four coefficients: give at "
                            "least 4 measurements, got %d", m);
        job->points = calloc((size_t)m, sizeof *job->points);
        if (!job->points)
            return cfg_fail(c, meas, lp, "out of memory");
        job->n_points = m;
        for (int i = 0; i < m; i++) {
            char p[128];
            cfg_item *mkeys[N_ME], *mvals[N_ME];
            cfg_path_index(p, sizeof p, lp, i);
            if (cfg_walk_map(c, cfg_seq_at(c, meas, i), p, "a mapping", MEAS_FIELDS, N_ME,
                             &job->points[i], mkeys, mvals))
                return -1;
        }
    }
    return 0;
}

static int build_jobs(run_ctx *r, cfg_run *run)
{
    cfg_ctx *c = &r->c;
    cfg_origin *o = r->top[TOP_JOB].file >= 0 ? &r->top[TOP_JOB] : &r->top[TOP_JOBS];
    int single = o == &r->top[TOP_JOB];
    c->cur = o->file;
    int n = single ? 1 : cfg_seq_len(c, o->val);
    if (n == 0)
        return cfg_fail(c, o->val, "jobs", "must list at least one job");
    run->jobs = calloc((size_t)n, sizeof *run->jobs);
    cfg_item **names = calloc((size_t)n, sizeof *names);
    if (!run->jobs || !names) {
        free(names);
        return cfg_fail(c, o->val, "jobs", "out of memory");
    }
    run->n_jobs = n;
    int rc = 0;
    for (int j = 0; j < n && rc == 0; j++) {
        char p[64], kp[96];
        cfg_item *map = single ? o->val : cfg_seq_at(c, o->val, j);
        if (single)
            snprintf(p, sizeof p, "job");
        else
            cfg_path_index(p, sizeof p, "jobs", j);
        rc = build_job(c, map, p, &run->jobs[j], &run->cluster, &names[j]);
        if (rc)
            break;
        cfg_path_key(kp, sizeof kp, p, "name");
        rc = cfg_check_dup(c, run->jobs, sizeof *run->jobs, j, names, kp, "job");
    }
    free(names);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Public entry points
 * ------------------------------------------------------------------------ */

/* build_run turns the collected top-level keys into a run, or NULL. */
static cfg_run *build_run(run_ctx *r, const char *path)
{
    cfg_ctx *c = &r->c;
    cfg_item *root = cfg_file_root(c, 0);
    c->cur = 0;
    if (r->given && r->top[TOP_CLUSTER].file >= 0) {
        cfg_fail(c, r->top[TOP_CLUSTER].key, "cluster", "given twice (loaded already)");
        return NULL;
    }
    if (!r->given && r->top[TOP_CLUSTER].file < 0) {
        cfg_fail(c, root, "cluster",
                 "missing required key (neither this file nor its includes give it)");
        return NULL;
    }
    int no_jobs = r->top[TOP_JOB].file < 0 && r->top[TOP_JOBS].file < 0;
    if (no_jobs && !r->cluster_only) {
        cfg_fail(c, root, "job",
                 "missing required key: give job: (one job) or jobs: (a list), here or in an "
                 "included file");
        return NULL;
    }
    cfg_run *run = calloc(1, sizeof *run);
    if (!run) {
        cfg_say(c, "%s: out of memory", path);
        return NULL;
    }
    snprintf(run->path, sizeof run->path, "%s", path);
    run->objective = r->top[TOP_OBJECTIVE].file >= 0 ? (cfg_objective)r->objective
                                                     : CFG_OBJECTIVE_COST;
    if (r->given && model_cluster_copy(&run->cluster, r->given)) {
        cfg_say(c, "%s: out of memory", path);
        cfg_free(run);
        return NULL;
    }
    if (!r->given)
        c->cur = r->top[TOP_CLUSTER].file;
    if ((!r->given && build_cluster(c, r->top[TOP_CLUSTER].val, &run->cluster)) ||
        (!no_jobs && build_jobs(r, run))) {
        cfg_free(run);
        return NULL;
    }
    return run;
}

/* load_file is cfg_load, or cfg_load_cluster with cluster_only. */
static cfg_run *load_file(const char *path, int cluster_only, char *err, size_t errlen)
{
    run_ctx r;
    run_ctx_init(&r, err, errlen);
    r.cluster_only = cluster_only;
    cfg_run *run = NULL;
    if (!path) {
        cfg_say(&r.c, "(null): cannot open: no file name");
        return NULL;
    }
    int idx = cfg_open_file(&r.c, path, -1, NULL, NULL);
    if (idx >= 0 && load_top(&r, idx) == 0)
        run = build_run(&r, path);
    cfg_ctx_free(&r.c);
    return run;
}

cfg_run *cfg_load(const char *path, char *err, size_t errlen)
{
    return load_file(path, 0, err, errlen);
}

cfg_run *cfg_load_cluster(const char *path, char *err, size_t errlen)
{
    return load_file(path, 1, err, errlen);
}

/* load_in_memory loads a run that has no file behind it, from text[len]
 * when json is NULL, else from the JSON value json (borrowed). `include:`
 * is refused, so that a request never names a file. */
static cfg_run *load_in_memory(const char *name, const char *text, size_t len,
                               const json_t *json, const model_cluster *given, char *err,
                               size_t errlen)
{
    run_ctx r;
    run_ctx_init(&r, err, errlen);
    r.no_include = 1;
    r.given = given;
    cfg_ctx *c = &r.c;
    cfg_run *run = NULL;
    int idx = json ? cfg_add_json(c, name, json) : cfg_add_file(c, name), ok = idx >= 0;
    if (!ok)
        cfg_say(c, "%s: out of memory", name);
    else if (!json)
        ok = cfg_parse_doc(c, idx, text, len) == 0;
    if (ok && load_top(&r, idx) == 0)
        run = build_run(&r, name);
    cfg_ctx_free(c);
    return run;
}

cfg_run *cfg_load_buffer(const char *name, const char *text, size_t len, char *err,
                         size_t errlen)
{
    return load_in_memory(name ? name : "<buffer>", text ? text : "", text ? len : 0, NULL, NULL,
                          err, errlen);
}

cfg_run *cfg_load_json(const char *name, const json_t *root, char *err, size_t errlen)
{
    return load_in_memory(name ? name : "<json>", NULL, 0, root, NULL, err, errlen);
}

cfg_run *cfg_load_json_on(const char *name, const json_t *root, const model_cluster *cl, char *err,
                          size_t errlen)
{
    return load_in_memory(name ? name : "<json>", NULL, 0, root, cl, err, errlen);
}

void cfg_cluster_default(model_cluster *cl)
{
    cfg_fields_default(CLUSTER_FIELDS, N_CL, cl); /* the list rows write nothing */
}

void cfg_node_default(model_node *n)
{
    node_in in;
    memset(&in, 0, sizeof in);
    cfg_fields_default(NODE_FIELDS, N_NO, &in);
    *n = in.n;
}

void cfg_free(cfg_run *run)
{
    if (!run)
        return;
    model_cluster *cl = &run->cluster;
    free(cl->types);
    free(cl->nodes);
    free(cl->zones);
    free(cl->zone_bw);
    free(cl->zone_lat);
    for (int j = 0; j < run->n_jobs; j++) {
        free(run->jobs[j].layers);
        free(run->jobs[j].points);
    }
    free(run->jobs);
    free(run);
}

/* place_list resolves the node names of list (key path `path`) into
 * out[count]; the list must hold exactly `count` names. */
static int place_list(cfg_ctx *c, cfg_item *list, const char *path, int count,
                      const char *what, const model_cluster *cl, int *out)
{
    if (cfg_seq_len(c, list) != count)
        return cfg_fail(c, list, path, "%s, got %d", what, cfg_seq_len(c, list));
    for (int i = 0; i < count; i++) {
        char p[128];
        const char *name;
        cfg_item *v = cfg_seq_at(c, list, i);
        cfg_path_index(p, sizeof p, path, i);
        if (cfg_scalar_text(c, v, p, "a node name", &name))
            return -1;
        int n = cfg_find_name(name, cl->nodes, sizeof *cl->nodes, cl->n_nodes);
        if (n < 0)
            return cfg_unknown_name(c, v, p, "node", name, cl->nodes, sizeof *cl->nodes,
                                    cl->n_nodes);
        out[i] = n;
    }
    return 0;
}

int cfg_load_placement(const char *path, const cfg_run *run, const model_plan *plan,
                       int *task_node, char *err, size_t errlen)
{
    cfg_ctx c;
    cfg_ctx_init(&c, err, errlen);
    if (!path || !run || !plan || !task_node) {
        cfg_say(&c, "%s: cfg_load_placement: missing argument", path ? path : "(null)");
        return -1;
    }
    int rc = -1;
    int idx = cfg_open_file(&c, path, -1, NULL, NULL);
    cfg_item *root = idx >= 0 ? cfg_root_of(&c, idx, "a mapping with key placement") : NULL;
    cfg_item *keys[N_PL], *vals[N_PL];
    const model_cluster *cl = &run->cluster;
    if (!root ||
        cfg_walk_map(&c, root, "", "a mapping with key placement", PLACE_FIELDS, N_PL, NULL, keys,
                 vals))
        goto out;
    if (plan->reason != MODEL_FEASIBLE) {
        cfg_fail(&c, vals[PL_PLACEMENT], "placement",
                 "the plan is infeasible (%s); there is nothing to place", plan->why);
        goto out;
    }
    if (cl->n_nodes == 0) {
        cfg_fail(&c, vals[PL_PLACEMENT], "placement",
                 "the cluster lists no nodes (cluster.nodes) to place tasks on");
        goto out;
    }
    cfg_item *list = vals[PL_PLACEMENT];
    if (cfg_seq_len(&c, list) != plan->n_stages) {
        cfg_fail(&c, list, "placement", "expected one entry per stage of the plan (%d), got %d",
                 plan->n_stages, cfg_seq_len(&c, list));
        goto out;
    }
    int off = 0;
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        char p[64], wp[96], what[256];
        cfg_item *skeys[N_PS], *svals[N_PS];
        cfg_path_index(p, sizeof p, "placement", s);
        if (cfg_walk_map(&c, cfg_seq_at(&c, list, s), p, "a mapping", STAGE_FIELDS, N_PS, NULL,
                         skeys, svals))
            goto out;
        const char *tname = st->type >= 0 && st->type < cl->n_types ? cl->types[st->type].name
                                                                    : "?";
        cfg_path_key(wp, sizeof wp, p, "workers");
        snprintf(what, sizeof what, "stage %d (layers %d..%d on %s) runs %d worker%s", s,
                 st->first, st->last, tname, st->units, st->units == 1 ? "" : "s");
        if (place_list(&c, svals[PS_WORKERS], wp, st->units, what, cl, task_node + off))
            goto out;
        off += st->units;
        cfg_path_key(wp, sizeof wp, p, "ps");
        snprintf(what, sizeof what, "stage %d (layers %d..%d on %s) runs %d ps task%s", s,
                 st->first, st->last, tname, st->n_ps, st->n_ps == 1 ? "" : "s");
        if (place_list(&c, svals[PS_PS], wp, st->n_ps, what, cl, task_node + off))
            goto out;
        off += st->n_ps;
    }
    if (off != place_task_count(plan)) {
        cfg_fail(&c, list, "placement", "internal error: %d tasks read, the plan has %d", off,
                 place_task_count(plan));
        goto out;
    }
    rc = 0;
out:
    cfg_ctx_free(&c);
    return rc;
}