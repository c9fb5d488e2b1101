/* spec.c -- loading eval configs (see spec.h and docs/eval.md).
 *
 * The config is parsed once with cfg_doc (env/config.h), so the walker,
 * the unit parser and the messages are the run loader's own. Each object
 * -- the top level, an instance entry, its generator, a method, the
 * learning curve -- has one table of cfg_field rows below; the code around
 * the tables only handles what a table cannot say: file lists and globs,
 * [lo, hi] pairs, which keys go with which method, and labels.
 */
#include "eval/spec.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "agent/policy.h"
#include "env/schema.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

typedef struct {
    char name[MODEL_NAME_MAX];
    int repeats;
    double budget;
    int evals;
} top_in;

enum { TO_NAME, TO_TITLE, TO_SEEDS, TO_REPEATS, TO_BUDGET, TO_EVALS, TO_INSTANCES, TO_METHODS,
       TO_CURVE, N_TO };
static const cfg_field TOP_FIELDS[N_TO] = {
    [TO_NAME] = CFG_ROW_NAME("name", 0, top_in, name),
    [TO_TITLE] = CFG_ROW_NODE("title", CFG_FT_ANY, 0),
    [TO_SEEDS] = CFG_ROW_NODE("seeds", CFG_FT_ANY, 0),
    [TO_REPEATS] = CFG_ROW_INT("repeats", 0, 1, CFG_B_GE, 1, CFG_B_LE, EVAL_MAX_REPEATS, top_in,
                                 repeats),
    [TO_BUDGET] = CFG_ROW_NUM("budget", UNITS_SECONDS, 0, 10.0, CFG_B_GT, 0, CFG_B_NONE, 0, top_in,
                              budget),
    [TO_EVALS] = CFG_ROW_INT("evals", 0, SOLVE_DEFAULT_EVALS, CFG_B_GE, 1, CFG_B_NONE, 0, top_in,
                             evals),
    [TO_INSTANCES] = CFG_ROW_NODE("instances", CFG_FT_LIST, 1),
    [TO_METHODS] = CFG_ROW_NODE("methods", CFG_FT_LIST, 1),
    [TO_CURVE] = CFG_ROW_NODE("learning_curve", CFG_FT_MAP, 0),
};

typedef struct {
    char name[MODEL_NAME_MAX];
} inst_in;

enum { IN_NAME, IN_RUN, IN_CLUSTER, IN_MODELS, IN_BATCH, IN_TARGET, IN_GENERATE, IN_HELDOUT,
       N_IN };
static const cfg_field INST_FIELDS[N_IN] = {
    [IN_NAME] = CFG_ROW_NAME("name", 0, inst_in, name),
    [IN_RUN] = CFG_ROW_NODE("run", CFG_FT_ANY, 0),
    [IN_CLUSTER] = CFG_ROW_NODE("cluster", CFG_FT_ANY, 0),
    [IN_MODELS] = CFG_ROW_NODE("models", CFG_FT_ANY, 0),
    [IN_BATCH] = CFG_ROW_NODE("batch", CFG_FT_ANY, 0),
    [IN_TARGET] = CFG_ROW_NODE("target", CFG_FT_ANY, 0),
    [IN_GENERATE] = CFG_ROW_NODE("generate", CFG_FT_MAP, 0),
    [IN_HELDOUT] = CFG_ROW_NODE("heldout", CFG_FT_MAP, 0),
};

typedef struct {
    int seed;
    int count;
    int cluster; /* index in "base|random" */
} gen_in;

enum { GE_SEED, GE_COUNT, GE_CLUSTER, GE_LAYERS, GE_JOBS, GE_LOAD, N_GE };
static const cfg_field GEN_FIELDS[N_GE] = {
    [GE_SEED] = CFG_ROW_INT("seed", 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, gen_in, seed),
    [GE_COUNT] = CFG_ROW_INT("count", 1, 0, CFG_B_GE, 1, CFG_B_LE, EVAL_MAX_GENERATE, gen_in,
                                count),
    [GE_CLUSTER] = CFG_ROW_ENUM("cluster", "base|random", 0, 0, gen_in, cluster),
    [GE_LAYERS] = CFG_ROW_NODE("layers", CFG_FT_ANY, 0),
    [GE_JOBS] = CFG_ROW_NODE("jobs", CFG_FT_ANY, 0),
    [GE_LOAD] = CFG_ROW_NODE("load", CFG_FT_ANY, 0),
};

typedef struct {
    char method[MODEL_NAME_MAX];
    char name[MODEL_NAME_MAX];
    char plan[MODEL_NAME_MAX];
    double budget;
    int evals;
    int decode;
    int samples;
    int node_samples;
    int polish;
    char placement[MODEL_NAME_MAX];
    int points;
    double noise;
    char type[MODEL_NAME_MAX];
    int max_ps;
    char truth[MODEL_NAME_MAX];
} method_in;

enum { ME_METHOD, ME_NAME, ME_PLAN, ME_BUDGET, ME_EVALS, ME_CHECKPOINT, ME_DECODE, ME_SAMPLES,
       ME_NODE_SAMPLES, ME_POLISH, ME_PLACEMENT, ME_POINTS, ME_NOISE, ME_TYPE, ME_MAX_PS, ME_TRUTH,
       N_ME };
static const cfg_field METHOD_FIELDS[N_ME] = {
    [ME_METHOD] = CFG_ROW_NAME("method", 1, method_in, method),
    [ME_NAME] = CFG_ROW_NAME("name", 0, method_in, name),
    [ME_PLAN] = CFG_ROW_NAME("plan", 0, method_in, plan),
    [ME_BUDGET] = CFG_ROW_NUM("budget", UNITS_SECONDS, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0, method_in,
                              budget),
    [ME_EVALS] = CFG_ROW_INT("evals", 0, -1, CFG_B_GE, 1, CFG_B_NONE, 0, method_in, evals),
    [ME_CHECKPOINT] = CFG_ROW_NODE("checkpoint", CFG_FT_ANY, 0),
    [ME_DECODE] = CFG_ROW_ENUM("decode", "greedy|sample", 0, AGENT_DECODE_GREEDY, method_in,
                               decode),
    [ME_SAMPLES] = CFG_ROW_INT("samples", 0, 16, CFG_B_GE, 1, CFG_B_NONE, 0, method_in, samples),
    [ME_NODE_SAMPLES] = CFG_ROW_INT("node_samples", 0, 0, CFG_B_GE, 0, CFG_B_LE, 64, method_in,
                                    node_samples),
    [ME_POLISH] = CFG_ROW_BOOL("polish", 0, 0, method_in, polish),
    [ME_PLACEMENT] = CFG_ROW_NAME("placement", 0, method_in, placement),
    [ME_POINTS] = CFG_ROW_INT("points", 0, 6, CFG_B_GE, 4, CFG_B_NONE, 0, method_in, points),
    [ME_NOISE] = CFG_ROW_NUM("noise", UNITS_FRACTION, 0, 0.05, CFG_B_GE, 0, CFG_B_LT, 1, method_in,
                             noise),
    [ME_TYPE] = CFG_ROW_NAME("type", 0, method_in, type),
    [ME_MAX_PS] = CFG_ROW_INT("max_ps", 0, 8, CFG_B_GE, 1, CFG_B_NONE, 0, method_in, max_ps),
    [ME_TRUTH] = CFG_ROW_NAME("truth", 0, method_in, truth),
};

typedef struct {
    char x[MODEL_NAME_MAX];
    char y[MODEL_NAME_MAX];
} curve_in;

enum { LC_LOG, LC_X, LC_Y, LC_XLABEL, LC_YLABEL, N_LC };
static const cfg_field CURVE_FIELDS[N_LC] = {
    [LC_LOG] = CFG_ROW_NODE("log", CFG_FT_ANY, 1),
    [LC_X] = CFG_ROW_NAME("x", 0, curve_in, x),
    [LC_Y] = CFG_ROW_NAME("y", 0, curve_in, y),
    [LC_XLABEL] = CFG_ROW_NODE("x_label", CFG_FT_ANY, 0),
    [LC_YLABEL] = CFG_ROW_NODE("y_label", CFG_FT_ANY, 0),
};

/* Which keys each family accepts besides method and name. */
static const struct {
    int key;
    unsigned families; /* bit (1 << eval_family) */
} KEY_FAMILIES[] = {
    {ME_PLAN, 1u << EVAL_FAM_PLACE},
    {ME_BUDGET, (1u << EVAL_FAM_PLAN) | (1u << EVAL_FAM_PLACE) | (1u << EVAL_FAM_MULTI)},
    {ME_EVALS, (1u << EVAL_FAM_PLAN) | (1u << EVAL_FAM_PLACE) | (1u << EVAL_FAM_MULTI)},
    {ME_CHECKPOINT, 1u << EVAL_FAM_POLICY},
    {ME_DECODE, 1u << EVAL_FAM_POLICY},
    {ME_SAMPLES, 1u << EVAL_FAM_POLICY},
    {ME_NODE_SAMPLES, 1u << EVAL_FAM_POLICY},
    {ME_POLISH, 1u << EVAL_FAM_POLICY},
    {ME_PLACEMENT, 1u << EVAL_FAM_POLICY},
    {ME_POINTS, 1u << EVAL_FAM_FIT},
    {ME_NOISE, 1u << EVAL_FAM_FIT},
    {ME_TYPE, 1u << EVAL_FAM_FIT},
    {ME_MAX_PS, 1u << EVAL_FAM_FIT},
    {ME_TRUTH, 1u << EVAL_FAM_FIT},
};

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

typedef struct {
    cfg_doc *doc;
    char dir[EVAL_PATH_MAX]; /* folder of the config, "" for the current one */
    char *err;
    size_t errlen;
} spec_ctx;

#define FAIL(x, at, path, ...) cfg_doc_fail((x)->doc, (at), (path), (x)->err, (x)->errlen, __VA_ARGS__)

static int seq_len(const yaml_node_t *n) {
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(spec_ctx *x, const yaml_node_t *n, int i) {
    return cfg_doc_node(x->doc, n->data.sequence.items.start[i]);
}

static void describe(const yaml_node_t *n, char *buf, size_t len) {
    if (n->type == YAML_MAPPING_NODE) snprintf(buf, len, "a mapping");
    else if (n->type == YAML_SEQUENCE_NODE) snprintf(buf, len, "a list");
    else snprintf(buf, len, "\"%.40s\"", (const char *)n->data.scalar.value);
}

/* text reads scalar v as text into buf[len] (non-empty). */
static int text(spec_ctx *x, yaml_node_t *v, const char *path, const char *what, char *buf,
                size_t len) {
    char d[64];
    if (v->type != YAML_SCALAR_NODE) {
        describe(v, d, sizeof d);
        return FAIL(x, v, path, "expected %s, got %s", what, d);
    }
    const char *s = (const char *)v->data.scalar.value;
    if (v->data.scalar.length == 0 || strlen(s) != v->data.scalar.length)
        return FAIL(x, v, path, "expected %s, got an empty value", what);
    if (strlen(s) >= len) return FAIL(x, v, path, "%s is longer than %zu characters", what, len - 1);
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

/* resolve writes name, taken relative to the config's folder unless
 * absolute, into out[EVAL_PATH_MAX]. */
static int resolve(spec_ctx *x, yaml_node_t *at, const char *path, const char *name, char *out) {
    int n = name[0] == '/' || !x->dir[0] ? snprintf(out, EVAL_PATH_MAX, "%s", name)
                                         : snprintf(out, EVAL_PATH_MAX, "%s/%s", x->dir, name);
    if (n < 0 || n >= EVAL_PATH_MAX) return FAIL(x, at, path, "file name too long");
    return 0;
}

/* add_file appends a copy of name to (*files)[*n]. */
static int add_file(spec_ctx *x, yaml_node_t *at, const char *path, char ***files, int *n,
                    const char *name) {
    char **nf = realloc(*files, sizeof *nf * (size_t)(*n + 1));
    if (!nf) return FAIL(x, at, path, "out of memory");
    *files = nf;
    if (!(nf[*n] = strdup(name))) return FAIL(x, at, path, "out of memory");
    (*n)++;
    return 0;
}

/* one_pattern expands one file name or glob (scalar v) into files. A glob
 * must match something, a plain name must exist. Matches come sorted. */
static int one_pattern(spec_ctx *x, yaml_node_t *v, const char *path, char ***files, int *n) {
    char name[EVAL_PATH_MAX], full[EVAL_PATH_MAX];
    if (text(x, v, path, "a file name or glob", name, sizeof name)) return -1;
    if (resolve(x, v, path, name, full)) return -1;
    if (strpbrk(name, "*?[")) {
        glob_t g;
        int rc = glob(full, 0, NULL, &g);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            if (rc == 0) globfree(&g);
            return FAIL(x, v, path, "'%s' matches no file", full);
        }
        if (rc != 0) return FAIL(x, v, path, "cannot expand '%s'", full);
        for (size_t i = 0; i < g.gl_pathc; i++)
            if (add_file(x, v, path, files, n, g.gl_pathv[i])) {
                globfree(&g);
                return -1;
            }
        globfree(&g);
        return 0;
    }
    struct stat st;
    if (stat(full, &st) != 0)
        return FAIL(x, v, path, "%s: cannot open: %s", full, strerror(errno));
    return add_file(x, v, path, files, n, full);
}

/* file_list expands a file name, a glob, or a list of them. */
static int file_list(spec_ctx *x, yaml_node_t *v, const char *path, char ***files, int *n) {
    if (v->type == YAML_SEQUENCE_NODE) {
        if (seq_len(v) == 0) return FAIL(x, v, path, "must list at least one file");
        for (int i = 0; i < seq_len(v); i++) {
            char p[256];
            snprintf(p, sizeof p, "%s[%d]", path, i);
            if (one_pattern(x, seq_at(x, v, i), p, files, n)) return -1;
        }
        return 0;
    }
    return one_pattern(x, v, path, files, n);
}

typedef struct {
    double v;
} num_in;

/* number reads scalar v as a plain number into *out, with bound > lo. */
static int number(spec_ctx *x, yaml_node_t *v, const char *path, units_kind kind, double lo,
                  double *out) {
    cfg_field f = CFG_ROW_NUM("", kind, 1, 0, CFG_B_GT, lo, CFG_B_NONE, 0, num_in, v);
    num_in tmp;
    if (cfg_doc_value(x->doc, &f, v, path, &tmp, x->err, x->errlen)) return -1;
    *out = tmp.v;
    return 0;
}

/* pair reads [lo, hi] (or a single number for both) with lo <= hi, each
 * > min (kind COUNT gives whole numbers). */
static int pair(spec_ctx *x, yaml_node_t *v, const char *path, units_kind kind, double min,
                double *lo, double *hi) {
    if (v->type == YAML_SCALAR_NODE) {
        if (number(x, v, path, kind, min, lo)) return -1;
        *hi = *lo;
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE || seq_len(v) != 2) {
        char d[64];
        describe(v, d, sizeof d);
        return FAIL(x, v, path, "expected a number or a pair [low, high], got %s", d);
    }
    char p[256];
    snprintf(p, sizeof p, "%s[0]", path);
    if (number(x, seq_at(x, v, 0), p, kind, min, lo)) return -1;
    snprintf(p, sizeof p, "%s[1]", path);
    if (number(x, seq_at(x, v, 1), p, kind, min, hi)) return -1;
    if (*hi < *lo) return FAIL(x, v, path, "the high end %g is below the low end %g", *hi, *lo);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Objects
 * ------------------------------------------------------------------------ */

static int load_seeds(spec_ctx *x, yaml_node_t *v, eval_spec *s) {
    if (!v) {
        s->n_seeds = 1;
        s->seeds = malloc(sizeof *s->seeds);
        if (!s->seeds) return FAIL(x, NULL, "seeds", "out of memory");
        s->seeds[0] = 1;
        return 0;
    }
    if (v->type == YAML_SCALAR_NODE) {
        double n;
        if (number(x, v, "seeds", UNITS_COUNT, 0, &n)) return -1;
        if (n > EVAL_MAX_SEEDS) return FAIL(x, v, "seeds", "at most %d seeds", EVAL_MAX_SEEDS);
        s->n_seeds = (int)n;
        s->seeds = malloc(sizeof *s->seeds * (size_t)n);
        if (!s->seeds) return FAIL(x, v, "seeds", "out of memory");
        for (int i = 0; i < s->n_seeds; i++) s->seeds[i] = (uint64_t)(i + 1);
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE || seq_len(v) == 0 || seq_len(v) > EVAL_MAX_SEEDS) {
        char d[64];
        describe(v, d, sizeof d);
        return FAIL(x, v, "seeds", "expected a count N (seeds 1..N) or a list of 1 to %d seeds, "
                    "got %s", EVAL_MAX_SEEDS, d);
    }
    s->n_seeds = seq_len(v);
    s->seeds = malloc(sizeof *s->seeds * (size_t)s->n_seeds);
    if (!s->seeds) return FAIL(x, v, "seeds", "out of memory");
    for (int i = 0; i < s->n_seeds; i++) {
        char p[64];
        snprintf(p, sizeof p, "seeds[%d]", i);
        double d;
        if (number(x, seq_at(x, v, i), p, UNITS_COUNT, -1, &d)) return -1;
        s->seeds[i] = (uint64_t)d;
        for (int j = 0; j < i; j++)
            if (s->seeds[j] == s->seeds[i])
                return FAIL(x, seq_at(x, v, i), p, "seed %g is listed twice", d);
    }
    return 0;
}

static int load_instance(spec_ctx *x, yaml_node_t *map, int i, eval_instance_spec *in) {
    char path[64], kp[96];
    snprintf(path, sizeof path, "instances[%d]", i);
    yaml_node_t *k[N_IN], *v[N_IN];
    inst_in ii;
    memset(&ii, 0, sizeof ii);
    if (cfg_doc_walk(x->doc, map, path, "a mapping (run:, or cluster: with models:, batch: or "
                     "generate:)", INST_FIELDS, N_IN, &ii, k, v, x->err, x->errlen))
        return -1;
    snprintf(in->name, sizeof in->name, "%s", ii.name);
    in->line = (int)map->start_mark.line + 1;
    if (v[IN_HELDOUT]) { /* eval/heldout.h draws the cluster and the job */
        for (int f = 0; f < N_IN; f++)
            if (f != IN_HELDOUT && f != IN_NAME && k[f]) {
                snprintf(kp, sizeof kp, "%s.%s", path, INST_FIELDS[f].key);
                return FAIL(x, k[f], kp, "not allowed with heldout: (it draws its own "
                            "cluster and job)");
            }
        in->source = EVAL_SRC_HELDOUT;
        in->n_targets = 1;
        in->targets = malloc(sizeof *in->targets);
        if (!in->targets) return FAIL(x, map, path, "out of memory");
        in->targets[0] = 1;
        snprintf(kp, sizeof kp, "%s.heldout", path);
        return eval_heldout_walk(x->doc, v[IN_HELDOUT], kp, &in->heldout, x->err, x->errlen);
    }
    if (v[IN_RUN]) {
        for (int f = 0; f < N_IN; f++)
            if (f != IN_RUN && f != IN_NAME && f != IN_TARGET && k[f]) {
                snprintf(kp, sizeof kp, "%s.%s", path, INST_FIELDS[f].key);
                return FAIL(x, k[f], kp, "not allowed with run: (a run file brings its own "
                            "cluster and jobs)");
            }
        in->source = EVAL_SRC_RUNS;
        snprintf(kp, sizeof kp, "%s.run", path);
        if (file_list(x, v[IN_RUN], kp, &in->files, &in->n_files)) return -1;
    } else {
        if (!v[IN_CLUSTER]) {
            snprintf(kp, sizeof kp, "%s.cluster", path);
            return FAIL(x, map, kp, "missing required key (or give run: FILE)");
        }
        char name[EVAL_PATH_MAX];
        snprintf(kp, sizeof kp, "%s.cluster", path);
        if (text(x, v[IN_CLUSTER], kp, "a file name", name, sizeof name) ||
            resolve(x, v[IN_CLUSTER], kp, name, in->cluster))
            return -1;
        struct stat st;
        if (stat(in->cluster, &st) != 0)
            return FAIL(x, v[IN_CLUSTER], kp, "%s: cannot open: %s", in->cluster, strerror(errno));
        if (v[IN_MODELS] && v[IN_BATCH]) {
            snprintf(kp, sizeof kp, "%s.batch", path);
            return FAIL(x, k[IN_BATCH], kp, "give models: (one instance per model) or batch: "
                        "(all of them as one instance), not both");
        }
        yaml_node_t *pool = v[IN_MODELS] ? v[IN_MODELS] : v[IN_BATCH];
        int pool_key = v[IN_MODELS] ? IN_MODELS : IN_BATCH;
        if (pool) {
            snprintf(kp, sizeof kp, "%s.%s", path, INST_FIELDS[pool_key].key);
            if (file_list(x, pool, kp, &in->files, &in->n_files)) return -1;
        }
        if (v[IN_GENERATE]) {
            in->source = EVAL_SRC_GEN;
            if (k[IN_TARGET]) {
                snprintf(kp, sizeof kp, "%s.target", path);
                return FAIL(x, k[IN_TARGET], kp, "not allowed with generate: (use "
                            "generate.load)");
            }
            snprintf(kp, sizeof kp, "%s.generate", path);
            yaml_node_t *gk[N_GE], *gv[N_GE];
            gen_in g;
            if (cfg_doc_walk(x->doc, v[IN_GENERATE], kp, "a mapping", GEN_FIELDS, N_GE, &g, gk,
                             gv, x->err, x->errlen))
                return -1;
            in->gen.seed = (uint64_t)g.seed;
            in->gen.count = g.count;
            in->gen.random_cluster = g.cluster;
            double lo = 6, hi = 32;
            char p2[128];
            snprintf(p2, sizeof p2, "%s.layers", kp);
            if (gv[GE_LAYERS] && pair(x, gv[GE_LAYERS], p2, UNITS_COUNT, 1, &lo, &hi)) return -1;
            if (hi > MODEL_MAX_LAYERS)
                return FAIL(x, gv[GE_LAYERS], p2, "at most %d layers", MODEL_MAX_LAYERS);
            if (gv[GE_LAYERS] && in->n_files)
                return FAIL(x, gk[GE_LAYERS], p2, "layers: is for random models; this entry "
                            "draws its jobs from its model files");
            in->gen.layers_lo = (int)lo;
            in->gen.layers_hi = (int)hi;
            lo = hi = 1;
            snprintf(p2, sizeof p2, "%s.jobs", kp);
            if (gv[GE_JOBS] && pair(x, gv[GE_JOBS], p2, UNITS_COUNT, 0, &lo, &hi)) return -1;
            if (hi > 64) return FAIL(x, gv[GE_JOBS], p2, "at most 64 jobs per instance");
            in->gen.jobs_lo = (int)lo;
            in->gen.jobs_hi = (int)hi;
            lo = hi = 1;
            snprintf(p2, sizeof p2, "%s.load", kp);
            if (gv[GE_LOAD] && pair(x, gv[GE_LOAD], p2, UNITS_NUMBER, 0, &lo, &hi)) return -1;
            in->gen.load_lo = lo;
            in->gen.load_hi = hi;
        } else {
            if (!pool) {
                snprintf(kp, sizeof kp, "%s.models", path);
                return FAIL(x, map, kp, "missing required key (with cluster:, give models:, "
                            "batch: or generate:)");
            }
            in->source = v[IN_MODELS] ? EVAL_SRC_MODELS : EVAL_SRC_BATCH;
        }
    }
    /* target: a factor or a list of factors on min_throughput */
    in->n_targets = 1;
    yaml_node_t *t = v[IN_TARGET];
    if (t && t->type == YAML_SEQUENCE_NODE) in->n_targets = seq_len(t);
    snprintf(kp, sizeof kp, "%s.target", path);
    if (in->n_targets < 1) return FAIL(x, t, kp, "must list at least one factor");
    in->targets = malloc(sizeof *in->targets * (size_t)in->n_targets);
    if (!in->targets) return FAIL(x, t, kp, "out of memory");
    in->targets[0] = 1.0;
    if (t && t->type == YAML_SEQUENCE_NODE) {
        for (int j = 0; j < in->n_targets; j++) {
            char p2[128];
            snprintf(p2, sizeof p2, "%s[%d]", kp, j);
            if (number(x, seq_at(x, t, j), p2, UNITS_NUMBER, 0, &in->targets[j])) return -1;
        }
    } else if (t && number(x, t, kp, UNITS_NUMBER, 0, &in->targets[0])) {
        return -1;
    }
    return 0;
}

/* family_of maps a method name to its family and index; -1 when unknown. */
static int family_of(const char *m, eval_method *out) {
    int i;
    if ((i = solve_method_parse(m)) >= 0) {
        out->family = EVAL_FAM_PLAN;
        out->solver = i;
        return 0;
    }
    if ((i = placer_method_parse(m)) >= 0) {
        out->family = EVAL_FAM_PLACE;
        out->placer = i;
        return 0;
    }
    if (!strcmp(m, "policy")) {
        out->family = EVAL_FAM_POLICY;
        return 0;
    }
    if (!strcmp(m, "sequential") || !strcmp(m, "smd")) {
        out->family = EVAL_FAM_MULTI;
        out->multi = !strcmp(m, "smd") ? EVAL_MULTI_SMD : EVAL_MULTI_SEQUENTIAL;
        return 0;
    }
    if (!strcmp(m, "fit") || !strcmp(m, "measured")) {
        out->family = EVAL_FAM_FIT;
        out->fit = !strcmp(m, "fit") ? EVAL_FIT_CURVE : EVAL_FIT_MEASURED;
        return 0;
    }
    return -1;
}

static int load_method(spec_ctx *x, yaml_node_t *node, int i, const eval_spec *s,
                       eval_method *m) {
    char path[64], kp[96];
    snprintf(path, sizeof path, "methods[%d]", i);
    method_in mi;
    memset(&mi, 0, sizeof mi);
    yaml_node_t *k[N_ME], *v[N_ME];
    memset(k, 0, sizeof k);
    memset(v, 0, sizeof v);
    if (node->type == YAML_SCALAR_NODE) { /* shorthand: "- exact" */
        cfg_field f = METHOD_FIELDS[ME_METHOD];
        if (cfg_doc_value(x->doc, &f, node, path, &mi, x->err, x->errlen)) return -1;
        cfg_fields_default(METHOD_FIELDS, N_ME, &mi); /* as the walker would set them */
        v[ME_METHOD] = node;
    } else if (cfg_doc_walk(x->doc, node, path, "a method name or a mapping with method:",
                            METHOD_FIELDS, N_ME, &mi, k, v, x->err, x->errlen)) {
        return -1;
    }
    memset(m, 0, sizeof *m);
    m->placer = -1;
    if (family_of(mi.method, m) < 0) {
        if (node->type == YAML_SCALAR_NODE) snprintf(kp, sizeof kp, "%s", path);
        else snprintf(kp, sizeof kp, "%s.method", path);
        return FAIL(x, v[ME_METHOD], kp, "unknown method '%s' (plan: exact, homogeneous, rule, "
                    "greedy, random, genetic, anneal; policy; placement: spread, pack, "
                    "aggregate, zone, best; several jobs: sequential, smd; Coach: fit, "
                    "measured)", mi.method);
    }
    for (size_t r = 0; r < sizeof KEY_FAMILIES / sizeof *KEY_FAMILIES; r++) {
        int key = KEY_FAMILIES[r].key;
        if (k[key] && !(KEY_FAMILIES[r].families & (1u << m->family))) {
            snprintf(kp, sizeof kp, "%s.%s", path, METHOD_FIELDS[key].key);
            return FAIL(x, k[key], kp, "does not apply to method '%s' (a %s method)", mi.method,
                        eval_family_name(m->family));
        }
    }
    m->budget_s = mi.budget > 0 ? mi.budget : s->budget_s;
    m->evals = mi.evals > 0 ? mi.evals : s->evals;
    m->decode = mi.decode;
    m->samples = mi.samples;
    m->node_samples = mi.node_samples;
    m->polish = mi.polish;
    m->points = mi.points;
    m->noise = mi.noise;
    m->max_ps = mi.max_ps;
    snprintf(m->type, sizeof m->type, "%s", mi.type);
    if (m->family == EVAL_FAM_PLACE) {
        m->solver = SOLVE_EXACT;
        if (mi.plan[0] && (m->solver = solve_method_parse(mi.plan)) < 0) {
            snprintf(kp, sizeof kp, "%s.plan", path);
            return FAIL(x, v[ME_PLAN], kp, "unknown plan method '%s'", mi.plan);
        }
    }
    if (m->family == EVAL_FAM_POLICY) {
        snprintf(kp, sizeof kp, "%s.checkpoint", path);
        if (!v[ME_CHECKPOINT]) return FAIL(x, node, kp, "missing required key (method policy)");
        char name[EVAL_PATH_MAX];
        if (text(x, v[ME_CHECKPOINT], kp, "a file name", name, sizeof name) ||
            resolve(x, v[ME_CHECKPOINT], kp, name, m->checkpoint))
            return -1;
        struct stat st;
        if (stat(m->checkpoint, &st) != 0)
            return FAIL(x, v[ME_CHECKPOINT], kp, "%s: cannot open: %s", m->checkpoint,
                        strerror(errno));
        m->placer = PLACER_PLACE_NONE;
        if (mi.placement[0] && placer_placement_parse(mi.placement, &m->placer)) {
            snprintf(kp, sizeof kp, "%s.placement", path);
            return FAIL(x, v[ME_PLACEMENT], kp, "unknown placement '%s' (none, policy, "
                        "spread, pack, aggregate, zone, best)", mi.placement);
        }
        if (m->node_samples > 0 && m->placer != PLACER_PLACE_POLICY) {
            snprintf(kp, sizeof kp, "%s.node_samples", path);
            return FAIL(x, v[ME_NODE_SAMPLES], kp, "needs placement: policy (the node head "
                        "samples the placements)");
        }
    }
    if (m->family == EVAL_FAM_FIT) {
        m->truth = PLACER_AGGREGATE;
        if (mi.truth[0] && (m->truth = placer_method_parse(mi.truth)) < 0) {
            snprintf(kp, sizeof kp, "%s.truth", path);
            return FAIL(x, v[ME_TRUTH], kp, "unknown placement method '%s'", mi.truth);
        }
    }
    /* the label */
    if (mi.name[0]) {
        snprintf(m->name, sizeof m->name, "%s", mi.name);
    } else if (m->family == EVAL_FAM_PLACE && m->solver != SOLVE_EXACT) {
        snprintf(m->name, sizeof m->name, "%.20s@%.40s", mi.method, mi.plan);
    } else if (m->family == EVAL_FAM_POLICY) {
        char dec[32] = "";
        if (m->decode == AGENT_DECODE_SAMPLE) snprintf(dec, sizeof dec, "-s%d", m->samples);
        if (m->node_samples > 0)
            snprintf(dec + strlen(dec), sizeof dec - strlen(dec), "-n%d", m->node_samples);
        if (m->polish) snprintf(dec + strlen(dec), sizeof dec - strlen(dec), "-polish");
        int none = m->placer == PLACER_PLACE_NONE, nodes = m->placer == PLACER_PLACE_POLICY;
        snprintf(m->name, sizeof m->name, "policy%s%s%.20s", dec, none ? "" : "+",
                 none ? "" : nodes ? "nodes" : placer_placement_name(m->placer));
    } else {
        snprintf(m->name, sizeof m->name, "%s", mi.method);
    }
    return 0;
}

static int load_curve(spec_ctx *x, yaml_node_t *map, eval_curve_spec *c) {
    yaml_node_t *k[N_LC], *v[N_LC];
    curve_in ci;
    memset(&ci, 0, sizeof ci);
    if (cfg_doc_walk(x->doc, map, "learning_curve", "a mapping", CURVE_FIELDS, N_LC, &ci, k, v,
                     x->err, x->errlen))
        return -1;
    char name[EVAL_PATH_MAX];
    if (text(x, v[LC_LOG], "learning_curve.log", "a file name", name, sizeof name) ||
        resolve(x, v[LC_LOG], "learning_curve.log", name, c->file))
        return -1;
    struct stat st;
    if (stat(c->file, &st) != 0)
        return FAIL(x, v[LC_LOG], "learning_curve.log", "%s: cannot open: %s", c->file,
                    strerror(errno));
    snprintf(c->x, sizeof c->x, "%s", ci.x);
    snprintf(c->y, sizeof c->y, "%s", ci.y);
    if (v[LC_XLABEL] && text(x, v[LC_XLABEL], "learning_curve.x_label", "a label", c->x_label,
                             sizeof c->x_label))
        return -1;
    if (v[LC_YLABEL] && text(x, v[LC_YLABEL], "learning_curve.y_label", "a label", c->y_label,
                             sizeof c->y_label))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */

const char *eval_family_name(eval_family f) {
    switch (f) {
    case EVAL_FAM_PLAN: return "plan";
    case EVAL_FAM_POLICY: return "policy";
    case EVAL_FAM_PLACE: return "place";
    case EVAL_FAM_MULTI: return "multi";
    case EVAL_FAM_FIT: return "fit";
    }
    return "?";
}

void eval_spec_free(eval_spec *s) {
    if (!s) return;
    for (int i = 0; i < s->n_instances; i++) {
        for (int f = 0; f < s->instances[i].n_files; f++) free(s->instances[i].files[f]);
        free(s->instances[i].files);
        free(s->instances[i].targets);
    }
    free(s->instances);
    free(s->methods);
    free(s->seeds);
    free(s);
}

eval_spec *eval_spec_load(const char *path, char *err, size_t errlen) {
    spec_ctx x = {.err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    eval_spec *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(x.dir, sizeof x.dir, "%.*s", (int)(slash - path), path);
    if (slash && slash == path) snprintf(x.dir, sizeof x.dir, "/");
    if (!(x.doc = cfg_doc_load(path, err, errlen))) goto fail;
    yaml_node_t *root = cfg_doc_root(x.doc);
    if (!root) {
        snprintf(err, errlen, "%s:1:1: the file is empty (expected an eval config: instances:, "
                 "methods:, ...)", path);
        goto fail;
    }
    yaml_node_t *k[N_TO], *v[N_TO];
    top_in t;
    memset(&t, 0, sizeof t);
    if (cfg_doc_walk(x.doc, root, "", "a mapping of top-level keys (an eval config)", TOP_FIELDS,
                     N_TO, &t, k, v, err, errlen))
        goto fail;
    if (t.name[0]) {
        snprintf(s->name, sizeof s->name, "%s", t.name);
    } else { /* the file's stem */
        const char *base = slash ? slash + 1 : path;
        size_t l = strcspn(base, ".");
        snprintf(s->name, sizeof s->name, "%.*s", (int)(l < sizeof s->name ? l : sizeof s->name - 1),
                 base);
    }
    if (v[TO_TITLE] && text(&x, v[TO_TITLE], "title", "a title", s->title, sizeof s->title))
        goto fail;
    s->repeats = t.repeats;
    s->budget_s = t.budget;
    s->evals = t.evals;
    if (load_seeds(&x, v[TO_SEEDS], s)) goto fail;

    yaml_node_t *il = v[TO_INSTANCES];
    if (seq_len(il) == 0) {
        FAIL(&x, il, "instances", "must list at least one entry");
        goto fail;
    }
    s->instances = calloc((size_t)seq_len(il), sizeof *s->instances);
    if (!s->instances) {
        FAIL(&x, il, "instances", "out of memory");
        goto fail;
    }
    for (int i = 0; i < seq_len(il); i++) {
        s->n_instances = i + 1;
        if (load_instance(&x, seq_at(&x, il, i), i, &s->instances[i])) goto fail;
    }

    yaml_node_t *ml = v[TO_METHODS];
    if (seq_len(ml) == 0 || seq_len(ml) > EVAL_MAX_METHODS) {
        FAIL(&x, ml, "methods", "must list 1 to %d methods", EVAL_MAX_METHODS);
        goto fail;
    }
    s->methods = calloc((size_t)seq_len(ml), sizeof *s->methods);
    if (!s->methods) {
        FAIL(&x, ml, "methods", "out of memory");
        goto fail;
    }
    for (int i = 0; i < seq_len(ml); i++) {
        yaml_node_t *n = seq_at(&x, ml, i);
        if (load_method(&x, n, i, s, &s->methods[i])) goto fail;
        s->n_methods = i + 1;
        for (int j = 0; j < i; j++)
            if (!strcmp(s->methods[j].name, s->methods[i].name)) {
                char p[64];
                snprintf(p, sizeof p, "methods[%d]", i);
                FAIL(&x, n, p, "a second method labelled '%s' (give one of them name: LABEL)",
                     s->methods[i].name);
                goto fail;
            }
    }
    if (v[TO_CURVE] && load_curve(&x, v[TO_CURVE], &s->curve)) goto fail;
    cfg_doc_free(x.doc);
    return s;
fail:
    cfg_doc_free(x.doc);
    eval_spec_free(s);
    return NULL;
}
