/* trace.c -- trace files and the trace generator (see trace.h and
 * docs/simulate.md).
 *
 * A trace file is one YAML mapping with `jobs:`, a list of mappings each
 * checked against JOB_FIELDS by the walker of env/schema.h. Model files
 * are loaded once per distinct real path: a small run file that includes
 * the cluster and the model is written to a temporary file and read with
 * run_load, exactly as strata eval composes a cluster with a model.
 */
#include "sim/trace.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "base/rng.h"
#include "env/schema.h"
#include "eval/gen.h"
#include "eval/instances.h"
#include "sim/methods.h"
#include "solvers/runload.h"

#define ERRLEN 2048

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

typedef struct {
    char name[MODEL_NAME_MAX];
    double arrival, target, samples, deadline;
    char model[CFG_TEXT_MAX];
} job_in;

enum { JF_NAME, JF_ARRIVAL, JF_MODEL, JF_TARGET, JF_SAMPLES, JF_DEADLINE, N_JF };
static const cfg_field JOB_FIELDS[N_JF] = {
    [JF_NAME] = CFG_ROW_NAME("name", 0, job_in, name),
    [JF_ARRIVAL] = CFG_ROW_NUM("arrival", UNITS_SECONDS, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, job_in,
                               arrival),
    [JF_MODEL] = CFG_ROW_TEXT("model", 1, job_in, model),
    /* -1: the model file's min_throughput and samples */
    [JF_TARGET] = CFG_ROW_NUM("target", UNITS_NUMBER, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0, job_in,
                              target),
    [JF_SAMPLES] = CFG_ROW_NUM("samples", UNITS_NUMBER, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0, job_in,
                               samples),
    /* -1: no deadline */
    [JF_DEADLINE] = CFG_ROW_NUM("deadline", UNITS_SECONDS, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0,
                                job_in, deadline),
};

typedef struct {
    int unused;
} top_in;

enum { TF_JOBS, N_TF };
static const cfg_field TOP_FIELDS[N_TF] = {
    [TF_JOBS] = CFG_ROW_NODE("jobs", CFG_FT_LIST, 1),
};

typedef struct {
    char name[MODEL_NAME_MAX];
    char cluster[CFG_TEXT_MAX];
    char trace[CFG_TEXT_MAX];
    char policy[CFG_TEXT_MAX];
} spec_in;

enum { SF_NAME, SF_CLUSTER, SF_TRACE, SF_GENERATE, SF_METHODS, SF_POLICY, SF_OBJECTIVE, N_SF };
static const cfg_field SPEC_FIELDS[N_SF] = {
    [SF_NAME] = CFG_ROW_NAME("name", 0, spec_in, name),
    [SF_CLUSTER] = CFG_ROW_TEXT("cluster", 1, spec_in, cluster),
    [SF_TRACE] = CFG_ROW_TEXT("trace", 0, spec_in, trace),
    [SF_GENERATE] = CFG_ROW_NODE("generate", CFG_FT_MAP, 0),
    [SF_METHODS] = CFG_ROW_NODE("methods", CFG_FT_LIST, 0),
    [SF_POLICY] = CFG_ROW_TEXT("policy", 0, spec_in, policy),
    [SF_OBJECTIVE] = CFG_ROW_NODE("objective", CFG_FT_MAP, 0),
};

/* objective: the combined objective's weights (sim_weights), in $ per $,
 * per job-hour of completion time and per missed deadline */
enum { OF_COST, OF_JCT, OF_MISSED, N_OF };
static const cfg_field OBJ_FIELDS[N_OF] = {
    [OF_COST] = CFG_ROW_NUM("cost", UNITS_NUMBER, 0, SIM_W_COST, CFG_B_GE, 0, CFG_B_NONE, 0,
                            sim_weights, cost),
    [OF_JCT] = CFG_ROW_NUM("jct", UNITS_NUMBER, 0, SIM_W_JCT, CFG_B_GE, 0, CFG_B_NONE, 0,
                           sim_weights, jct),
    [OF_MISSED] = CFG_ROW_NUM("missed", UNITS_NUMBER, 0, SIM_W_MISSED, CFG_B_GE, 0, CFG_B_NONE,
                              0, sim_weights, missed),
};

int sim_weights_load(cfg_doc *doc, yaml_node_t *node, const char *key, sim_weights *w, char *err,
                     size_t errlen) {
    cfg_fields_default(OBJ_FIELDS, N_OF, w); /* what the walk gives an empty mapping */
    if (!node) return 0;
    yaml_node_t *k[N_OF], *v[N_OF];
    return cfg_doc_walk(doc, node, key, "a mapping of weights (cost, jct, missed)", OBJ_FIELDS,
                        N_OF, w, k, v, err, errlen);
}

typedef struct {
    int jobs, seed, arrivals, preset;
    double load, deadline_factor;
} gen_in;

enum { GF_JOBS, GF_LOAD, GF_SEED, GF_ARRIVALS, GF_DEADLINE, GF_MODELS, GF_PRESET, N_GF };
static const cfg_field GEN_FIELDS[N_GF] = {
    [GF_JOBS] = CFG_ROW_INT("jobs", 1, 0, CFG_B_GE, 1, CFG_B_LE, SIM_MAX_JOBS, gen_in, jobs),
    [GF_LOAD] = CFG_ROW_NUM("load", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_LE, 100, gen_in, load),
    [GF_SEED] = CFG_ROW_INT("seed", 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, gen_in, seed),
    [GF_ARRIVALS] = CFG_ROW_ENUM("arrivals", "poisson|bursty", 0, 0, gen_in, arrivals),
    [GF_DEADLINE] = CFG_ROW_NUM("deadline_factor", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0,
                                gen_in, deadline_factor),
    [GF_MODELS] = CFG_ROW_NODE("models", CFG_FT_LIST, 1),
    [GF_PRESET] = CFG_ROW_ENUM("preset", SIM_PRESET_CHOICES, 0, 0, gen_in, preset),
};

/* ---------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------ */

static sim_trace *trace_new(void) { return calloc(1, sizeof(sim_trace)); }

void sim_trace_free(sim_trace *t) {
    if (!t) return;
    for (int i = 0; i < t->n_models; i++) cfg_free(t->models[i].run);
    free(t->models);
    free(t->jobs);
    free(t);
}

/* dir_of writes the folder of path ("." when it has none) into out. */
static void dir_of(const char *path, char *out, size_t len) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, len, ".");
    else if (slash == path) snprintf(out, len, "/");
    else snprintf(out, len, "%.*s", (int)(slash - path), path);
}

/* resolve makes name absolute (relative to dir unless absolute) and
 * canonical. Returns 0, or -1 with why (errno's text). */
static int resolve(const char *dir, const char *name, char *out, char *why, size_t whylen) {
    char joined[2 * SIM_PATH_MAX + 2];
    if (name[0] == '/') snprintf(joined, sizeof joined, "%s", name);
    else snprintf(joined, sizeof joined, "%s/%s", dir, name);
    char real[PATH_MAX];
    if (!realpath(joined, real)) {
        snprintf(why, whylen, "%.1000s: cannot open: %s", joined, strerror(errno));
        return -1;
    }
    if (strlen(real) >= SIM_PATH_MAX) {
        snprintf(why, whylen, "%.1000s: path too long", joined);
        return -1;
    }
    snprintf(out, SIM_PATH_MAX, "%s", real);
    return 0;
}

/* load_model loads model file abs (absolute) with the cluster file
 * cluster_abs (eval_load_pair, through a temporary file under $TMPDIR).
 * Returns the run, or NULL with why. */
static cfg_run *load_model(const char *cluster_abs, const char *abs, char *why, size_t whylen) {
    const char *tmpdir = getenv("TMPDIR");
    char tmp[SIM_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/strata-sim-XXXXXX.yaml", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(tmp, 5); /* a name no other run takes; eval_load_pair rewrites it */
    if (fd < 0) {
        snprintf(why, whylen, "%s: cannot create: %s", tmp, strerror(errno));
        return NULL;
    }
    close(fd);
    char msg[ERRLEN];
    cfg_run *run = eval_load_pair(tmp, cluster_abs, abs, msg, sizeof msg);
    if (!run) {
        unlink(tmp); /* eval_load_pair removes it only once written */
        snprintf(why, whylen, "%s", msg);
    }
    return run;
}

/* model_index returns the index of the model at abs in t, loading it on
 * first use; -1 with why. */
static int model_index(sim_trace *t, const char *cluster_abs, const char *abs, char *why,
                       size_t whylen) {
    for (int i = 0; i < t->n_models; i++)
        if (!strcmp(t->models[i].path, abs)) return i;
    if (t->n_models == SIM_MAX_MODELS) {
        snprintf(why, whylen, "more than %d distinct model files", SIM_MAX_MODELS);
        return -1;
    }
    sim_model *grown = realloc(t->models, sizeof *grown * (size_t)(t->n_models + 1));
    if (!grown) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    t->models = grown;
    sim_model *m = &t->models[t->n_models];
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", abs);
    if (!(m->run = load_model(cluster_abs, abs, why, whylen))) return -1;
    return t->n_models++;
}

typedef struct {
    sim_job job;
    int index; /* position in the file */
} ranked_job;

static int by_arrival(const void *a, const void *b) {
    const ranked_job *x = a, *y = b;
    if (x->job.arrival != y->job.arrival) return x->job.arrival < y->job.arrival ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* sort_jobs orders jobs by arrival, ties in file order (qsort on
 * (arrival, index), as qsort is not stable). Returns 0, or -1 when out of
 * memory. */
static int sort_jobs(sim_trace *t) {
    ranked_job *r = malloc(sizeof *r * (size_t)(t->n_jobs ? t->n_jobs : 1));
    if (!r) return -1;
    for (int i = 0; i < t->n_jobs; i++) r[i] = (ranked_job){t->jobs[i], i};
    qsort(r, (size_t)t->n_jobs, sizeof *r, by_arrival);
    for (int i = 0; i < t->n_jobs; i++) t->jobs[i] = r[i].job;
    free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Loading
 * ------------------------------------------------------------------------ */

sim_trace *sim_trace_load(const char *path, const char *cluster_path, char *err, size_t errlen) {
    char cluster_abs[SIM_PATH_MAX], why[ERRLEN], dir[SIM_PATH_MAX];
    if (resolve(".", cluster_path, cluster_abs, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return NULL;
    }
    cfg_doc *doc = cfg_doc_load(path, err, errlen);
    if (!doc) return NULL;
    sim_trace *t = trace_new();
    if (!t) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    dir_of(path, dir, sizeof dir);
    yaml_node_t *root = cfg_doc_root(doc);
    if (!root) {
        cfg_doc_fail(doc, NULL, "jobs", err, errlen, "missing required key (the file is empty)");
        goto fail;
    }
    yaml_node_t *keys[N_TF], *vals[N_TF];
    top_in top;
    if (cfg_doc_walk(doc, root, "", "a mapping with jobs: (a trace)", TOP_FIELDS, N_TF, &top, keys,
                     vals, err, errlen))
        goto fail;
    yaml_node_t *list = vals[TF_JOBS];
    int n = (int)(list->data.sequence.items.top - list->data.sequence.items.start);
    if (n < 1 || n > SIM_MAX_JOBS) {
        cfg_doc_fail(doc, list, "jobs", err, errlen, "must list from 1 to %d jobs, got %d",
                     SIM_MAX_JOBS, n);
        goto fail;
    }
    if (!(t->jobs = calloc((size_t)n, sizeof *t->jobs))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        yaml_node_t *item = cfg_doc_node(doc, list->data.sequence.items.start[i]);
        char kp[64];
        snprintf(kp, sizeof kp, "jobs[%d]", i);
        job_in in;
        memset(&in, 0, sizeof in);
        yaml_node_t *jk[N_JF], *jv[N_JF];
        if (cfg_doc_walk(doc, item, kp, "a mapping (a job)", JOB_FIELDS, N_JF, &in, jk, jv, err,
                         errlen))
            goto fail;
        char abs[SIM_PATH_MAX], mp[80];
        snprintf(mp, sizeof mp, "%s.model", kp);
        if (resolve(dir, in.model, abs, why, sizeof why)) {
            cfg_doc_fail(doc, jv[JF_MODEL], mp, err, errlen, "%s", why);
            goto fail;
        }
        int m = model_index(t, cluster_abs, abs, why, sizeof why);
        if (m < 0) {
            cfg_doc_fail(doc, jv[JF_MODEL], mp, err, errlen, "%s", why);
            goto fail;
        }
        const model_job *mj = &t->models[m].run->jobs[0];
        sim_job *j = &t->jobs[i];
        if (in.name[0]) snprintf(j->name, sizeof j->name, "%s", in.name);
        else snprintf(j->name, sizeof j->name, "job%d", i);
        for (int k = 0; k < i; k++)
            if (!strcmp(t->jobs[k].name, j->name)) {
                cfg_doc_fail(doc, jv[JF_NAME] ? jv[JF_NAME] : item, kp, err, errlen,
                             "job name '%s' used twice (also jobs[%d])", j->name, k);
                goto fail;
            }
        j->arrival = in.arrival;
        j->model = m;
        j->target = in.target > 0 ? in.target : mj->min_throughput;
        j->samples = in.samples > 0 ? in.samples : mj->samples;
        j->deadline = in.deadline;
        t->n_jobs = i + 1;
    }
    if (sort_jobs(t)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    cfg_doc_free(doc);
    return t;
fail:
    cfg_doc_free(doc);
    sim_trace_free(t);
    return NULL;
}

/* spec_file resolves text (value node v, key key) against dir into out,
 * failing at v. */
static int spec_file(cfg_doc *doc, yaml_node_t *v, const char *key, const char *dir,
                     const char *text, char *out, char *err, size_t errlen) {
    char why[ERRLEN];
    if (resolve(dir, text, out, why, sizeof why))
        return cfg_doc_fail(doc, v, key, err, errlen, "%s", why);
    return 0;
}

int sim_spec_load(const char *path, sim_spec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    cfg_doc *doc = cfg_doc_load(path, err, errlen);
    if (!doc) return -1;
    char dir[SIM_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    yaml_node_t *root = cfg_doc_root(doc), *k[N_SF], *v[N_SF];
    spec_in in;
    memset(&in, 0, sizeof in);
    if (!root) {
        cfg_doc_fail(doc, NULL, "cluster", err, errlen, "missing required key (the file is empty)");
        goto fail;
    }
    if (cfg_doc_walk(doc, root, "", "a mapping of top-level keys (a simulate config)",
                     SPEC_FIELDS, N_SF, &in, k, v, err, errlen))
        goto fail;
    if (in.name[0]) {
        snprintf(out->name, sizeof out->name, "%s", in.name);
    } else {
        const char *b = strrchr(path, '/');
        snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(b ? b + 1 : path, "."),
                 b ? b + 1 : path);
    }
    if (spec_file(doc, v[SF_CLUSTER], "cluster", dir, in.cluster, out->cluster, err, errlen))
        goto fail;
    if (sim_weights_load(doc, v[SF_OBJECTIVE], "objective", &out->w, err, errlen)) goto fail;
    /* the checkpoint is opened when the policy runs */
    if (v[SF_POLICY]) {
        if (in.policy[0] == '/')
            snprintf(out->policy, sizeof out->policy, "%.1000s", in.policy);
        else
            snprintf(out->policy, sizeof out->policy, "%.500s/%.500s", dir, in.policy);
    }
    if (!v[SF_TRACE] && !v[SF_GENERATE]) {
        cfg_doc_fail(doc, root, "trace", err, errlen,
                     "missing required key: give trace: (a file) or generate: (a generator)");
        goto fail;
    }
    /* the trace is opened when played (a generator may be about to write it) */
    if (v[SF_TRACE]) {
        if (in.trace[0] == '/')
            snprintf(out->trace, sizeof out->trace, "%.1000s", in.trace);
        else
            snprintf(out->trace, sizeof out->trace, "%.500s/%.500s", dir, in.trace);
    }
    if (v[SF_GENERATE]) {
        yaml_node_t *gk[N_GF], *gv[N_GF];
        gen_in g;
        memset(&g, 0, sizeof g);
        if (cfg_doc_walk(doc, v[SF_GENERATE], "generate", "a mapping", GEN_FIELDS, N_GF, &g, gk,
                         gv, err, errlen))
            goto fail;
        yaml_node_t *ml = gv[GF_MODELS];
        int n = (int)(ml->data.sequence.items.top - ml->data.sequence.items.start);
        if (n < 1 || n > SIM_MAX_MODELS) {
            cfg_doc_fail(doc, ml, "generate.models", err, errlen,
                         "must list from 1 to %d model files, got %d", SIM_MAX_MODELS, n);
            goto fail;
        }
        for (int i = 0; i < n; i++) {
            yaml_node_t *item = cfg_doc_node(doc, ml->data.sequence.items.start[i]);
            char kp[64];
            snprintf(kp, sizeof kp, "generate.models[%d]", i);
            static const cfg_field F = {"model", CFG_FT_TEXT, UNITS_NUMBER, 1, 0, CFG_B_NONE, 0,
                                        CFG_B_NONE, 0, 0, NULL};
            char text[CFG_TEXT_MAX];
            if (cfg_doc_value(doc, &F, item, kp, text, err, errlen) ||
                spec_file(doc, item, kp, dir, text, out->gen.models[i], err, errlen))
                goto fail;
        }
        out->has_gen = 1;
        out->gen.n_models = n;
        out->gen.jobs = g.jobs;
        out->gen.load = g.load;
        out->gen.seed = (uint64_t)g.seed;
        out->gen.arrivals = g.arrivals ? SIM_ARRIVE_BURSTY : SIM_ARRIVE_POISSON;
        out->gen.deadline_factor = g.deadline_factor;
        out->gen.preset = (sim_preset)g.preset;
    }
    if (v[SF_METHODS]) {
        yaml_node_t *ml = v[SF_METHODS];
        int n = (int)(ml->data.sequence.items.top - ml->data.sequence.items.start);
        if (n < 1 || n > SIM_MAX_METHODS) {
            cfg_doc_fail(doc, ml, "methods", err, errlen, "must list from 1 to %d methods",
                         SIM_MAX_METHODS);
            goto fail;
        }
        int nm;
        const sim_method *all = sim_methods(&nm);
        char choices[256] = "";
        for (int i = 0; i < nm; i++)
            snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
                     i ? "|" : "", all[i].name);
        for (int i = 0; i < n; i++) {
            yaml_node_t *item = cfg_doc_node(doc, ml->data.sequence.items.start[i]);
            char kp[64];
            snprintf(kp, sizeof kp, "methods[%d]", i);
            cfg_field F = {"method", CFG_FT_ENUM, UNITS_NUMBER, 1, 0, CFG_B_NONE, 0, CFG_B_NONE, 0,
                           0, choices};
            int idx;
            if (cfg_doc_value(doc, &F, item, kp, &idx, err, errlen)) goto fail;
            snprintf(out->methods[i], sizeof out->methods[i], "%s", all[idx].name);
        }
        out->n_methods = n;
    }
    cfg_doc_free(doc);
    return 0;
fail:
    cfg_doc_free(doc);
    return -1;
}

/* ---------------------------------------------------------------------------
 * The generator
 * ------------------------------------------------------------------------ */

/* exp_draw returns an exponential draw of the given mean. */
static double exp_draw(uint64_t *rng, double mean) {
    return -mean * log(1.0 - splitmix64_unit(rng));
}

/* Philly, as Gavel's simulator samples it (Narayanan et al., OSDI'20,
 * from the Philly trace of Jeon et al., ATC'19; docs/simulate.md): 70% of
 * jobs on 1 GPU, 10% on 2, 15% on 4, 5% on 8. */
int sim_philly_units(uint64_t *rng) {
    double r = splitmix64_unit(rng);
    return r < 0.70 ? 1 : r < 0.80 ? 2 : r < 0.95 ? 4 : 8;
}

/* Durations: 10^x minutes, x uniform in [1.5, 3] for 80% of jobs and in
 * [3, 4] for the other 20% (same source): 32 min to 16.7 h, with a tail
 * to 6.9 days. */
double sim_philly_duration(uint64_t *rng) {
    double pick = splitmix64_unit(rng);
    double x = splitmix64_unit(rng);
    double e = pick < 0.8 ? 1.5 + 1.5 * x : 3.0 + x;
    return 60.0 * pow(10.0, e);
}

/* The presets (docs/simulate.md, "The generator", gives each figure's
 * source). Published: Philly's whole table (Gavel's generator); Helios's
 * and PAI's median and mean GPUs per job, median, mean and maximum GPU-job
 * duration (the cluster summaries of the HeliosArtifact and AcmeTrace
 * repositories). Our assumption: the shares between the published median
 * and maximum size, chosen so that the table has the published median and
 * mean; the lognormal shape of the durations. */
static const sim_preset_info PRESETS[SIM_N_PRESETS] = {
    [SIM_PRESET_PHILLY] = {"philly", 4, {1, 2, 4, 8}, {0.70, 0.10, 0.15, 0.05}, 0, 0, 0},
    /* median 1, mean 3.716 GPUs (table: 3.7156); 206 s median, 6,651.681 s
     * mean, 4,320,009 s longest */
    [SIM_PRESET_HELIOS] = {"helios", 7, {1, 2, 4, 8, 16, 32, 64},
                           {0.55, 0.17, 0.12, 0.10, 0.04, 0.0117, 0.0083}, 206, 6651.681,
                           4320009},
    /* median 0.5, mean 0.683 GPUs (table: 0.6825), at most 8; 480.667 s
     * median, 4,787.109 s mean, 626,371 s longest */
    [SIM_PRESET_PAI] = {"pai", 6, {0.25, 0.5, 1, 2, 4, 8}, {0.25, 0.45, 0.255, 0.03, 0.01, 0.005},
                        480.667, 4787.109, 626371},
};

const sim_preset_info *sim_preset_get(sim_preset p) {
    return (int)p >= 0 && (int)p < SIM_N_PRESETS ? &PRESETS[p] : NULL;
}

double sim_preset_size(sim_preset p, uint64_t *rng) {
    if (p == SIM_PRESET_PHILLY) return sim_philly_units(rng);
    const sim_preset_info *in = &PRESETS[p];
    double r = splitmix64_unit(rng), cum = 0;
    for (int i = 0; i < in->n_sizes - 1; i++) {
        cum += in->share[i];
        if (r < cum) return in->size[i];
    }
    return in->size[in->n_sizes - 1];
}

double sim_preset_duration(sim_preset p, uint64_t *rng) {
    if (p == SIM_PRESET_PHILLY) return sim_philly_duration(rng);
    const sim_preset_info *in = &PRESETS[p];
    /* Box-Muller: one standard normal from two uniforms (1 - u in (0, 1]) */
    double u1 = 1.0 - splitmix64_unit(rng), u2 = splitmix64_unit(rng);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    double sigma = sqrt(2.0 * log(in->dur_mean / in->dur_median));
    double d = in->dur_median * exp(sigma * z);
    return d < 1.0 ? 1.0 : d > in->dur_max ? in->dur_max : d;
}

/* unit_speed returns the throughput one unit of the model's fastest type
 * reaches with the whole model on it (samples/s), or 0 when no type can
 * hold it. */
static double unit_speed(const cfg_run *run) {
    const model_job *job = &run->jobs[0];
    double best = 0;
    model_stage st;
    for (int t = 0; t < run->cluster.n_types; t++) {
        model_stage_eval(job, &run->cluster, t, 0, job->n_layers - 1, &st);
        if (st.mem > run->cluster.types[t].mem || st.step <= 0) continue;
        double v = job->batch / st.step;
        if (v > best) best = v;
    }
    return best;
}

sim_trace *sim_trace_generate(const sim_gen_opts *o, const char *cluster_path,
                              const char *base_dir, char *err, size_t errlen) {
    char cluster_abs[SIM_PATH_MAX], why[ERRLEN];
    if (o->jobs < 1 || o->jobs > SIM_MAX_JOBS || !(o->load > 0) || o->n_models < 1 ||
        !sim_preset_get(o->preset)) {
        snprintf(err, errlen, "generate: needs 1 to %d jobs, a load > 0, at least one model and "
                 "a preset (%s)", SIM_MAX_JOBS, SIM_PRESET_CHOICES);
        return NULL;
    }
    if (resolve(".", cluster_path, cluster_abs, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return NULL;
    }
    sim_trace *t = trace_new();
    double *speed = calloc((size_t)o->n_models, sizeof *speed);
    int *map = calloc((size_t)o->n_models, sizeof *map);
    if (!t || !speed || !map || !(t->jobs = calloc((size_t)o->jobs, sizeof *t->jobs))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < o->n_models; i++) {
        char abs[SIM_PATH_MAX];
        if (resolve(base_dir, o->models[i], abs, why, sizeof why) ||
            (map[i] = model_index(t, cluster_abs, abs, why, sizeof why)) < 0) {
            snprintf(err, errlen, "generate: models[%d]: %s", i, why);
            goto fail;
        }
        speed[i] = unit_speed(t->models[map[i]].run);
        if (!(speed[i] > 0)) {
            snprintf(err, errlen, "generate: models[%d]: %s: no type can hold the model on one unit",
                     i, o->models[i]);
            goto fail;
        }
    }
    uint64_t rng = o->seed;
    /* sizes and durations first: the arrival rate follows from them */
    double demand = 0, total_units = 0;
    const model_cluster *cl = &t->models[0].run->cluster;
    for (int ty = 0; ty < cl->n_types; ty++) total_units += cl->types[ty].count;
    for (int i = 0; i < o->jobs; i++) {
        sim_job *j = &t->jobs[i];
        int m = (int)(splitmix64_unit(&rng) * o->n_models);
        double units = sim_preset_size(o->preset, &rng);
        double dur = sim_preset_duration(o->preset, &rng);
        snprintf(j->name, sizeof j->name, "j%d", i);
        j->model = map[m];
        j->target = units * speed[m];
        j->samples = dur * j->target;
        j->deadline = o->deadline_factor > 0 ? o->deadline_factor * dur : -1;
        demand += units * dur;
    }
    /* offered load L = (jobs / span) * mean(units * duration) / total units */
    double mean_gap = demand / o->jobs / (o->load * total_units);
    double now = 0;
    for (int i = 0; i < o->jobs; i++) {
        t->jobs[i].arrival = now;
        if (o->arrivals == SIM_ARRIVE_POISSON) {
            now += exp_draw(&rng, mean_gap);
        } else {
            /* hyperexponential: 90% short gaps (0.3x), 10% long ones
             * (7.3x); same mean, coefficient of variation 3.1 */
            double r = splitmix64_unit(&rng);
            now += exp_draw(&rng, mean_gap * (r < 0.9 ? 0.3 : 7.3));
        }
    }
    t->n_jobs = o->jobs;
    free(speed);
    free(map);
    return t;
fail:
    free(speed);
    free(map);
    sim_trace_free(t);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------ */

/* relative writes target (absolute, canonical) relative to the folder
 * from (absolute, canonical) into out. */
static void relative(const char *from, const char *target, char *out, size_t len) {
    if (!strcmp(from, "/")) {
        snprintf(out, len, "%s", target + 1);
        return;
    }
    size_t k = 0, i = 0;
    for (; from[i] && from[i] == target[i]; i++)
        if (from[i] == '/') k = i;
    if (from[i] == '\0' && target[i] == '/') k = i;
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = from + k; *p; p++)
        if (*p == '/' && o + 4 < len) o += (size_t)snprintf(out + o, len - o, "../");
    snprintf(out + o, len - o, "%s", target + k + 1);
}

int sim_trace_write(const sim_trace *t, const char *path, char *err, size_t errlen) {
    char dir[SIM_PATH_MAX], dir_abs[SIM_PATH_MAX], why[ERRLEN];
    dir_of(path, dir, sizeof dir);
    if (resolve(".", dir, dir_abs, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# A strata simulate trace (docs/simulate.md): arrival and deadline in s,\n"
               "# target in samples/s, samples to train.\njobs:\n");
    for (int i = 0; i < t->n_jobs; i++) {
        const sim_job *j = &t->jobs[i];
        char rel[2 * SIM_PATH_MAX], q[12 * SIM_PATH_MAX + 16], qn[6 * MODEL_NAME_MAX + 16];
        relative(dir_abs, t->models[j->model].path, rel, sizeof rel);
        if (eval_yaml_quote(q, sizeof q, rel) || eval_yaml_quote(qn, sizeof qn, j->name)) {
            fclose(f);
            snprintf(err, errlen, "%s: a path or name is not valid UTF-8", path);
            return -1;
        }
        fprintf(f, "  - {name: %s, arrival: %.17g, model: %s, target: %.17g, samples: %.17g", qn,
                j->arrival, q, j->target, j->samples);
        if (j->deadline > 0) fprintf(f, ", deadline: %.17g", j->deadline);
        fprintf(f, "}\n");
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
