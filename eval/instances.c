/* instances.c -- expanding `instances:` into run files and loaded runs.
 *
 * Every instance goes through a file: composed (include of the cluster,
 * the jobs written out by eval_write_run) or generated, then loaded with
 * run_load (config, then fits), so the figures a row was computed from
 * are exactly those a user gets by loading OUT/instances/NAME.yaml. A
 * cluster file alone is not a complete run (it has no job); to read one, a
 * probe file includes it beside a one-layer job and is removed once loaded.
 */
#include "eval/instances.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/gen.h"
#include "solvers/runload.h"

#define ERRLEN 4096

/* ---------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

int eval_mkdirs(const char *path) {
    char buf[EVAL_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* stem writes the file name of path without folder and extension. */
static void stem(const char *path, char *out, size_t len) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t l = strcspn(b, ".");
    snprintf(out, len, "%.*s", (int)(l < len ? l : len - 1), b);
}

/* absolute writes the absolute name of an existing file. */
static int absolute(const char *path, char *out, char *err, size_t errlen) {
    char buf[PATH_MAX];
    if (!realpath(path, buf)) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (strlen(buf) >= EVAL_PATH_MAX) {
        snprintf(err, errlen, "%.200s...: file name too long", buf);
        return -1;
    }
    memcpy(out, buf, strlen(buf) + 1);
    return 0;
}

/* file_of writes OUT/instances/<name with '/' as '_'>.yaml. */
static void file_of(const char *dir, const char *name, char *out) {
    char safe[200];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof safe; i++) {
        char ch = name[i];
        safe[i] = (ch == '/' || ch == ' ' || ch == '#' || ch == '@') ? '_' : ch;
    }
    safe[i] = '\0';
    snprintf(out, EVAL_PATH_MAX, "%.800s/%.200s.yaml", dir, safe);
}

typedef struct {
    const eval_spec *spec;
    char dir[EVAL_PATH_MAX]; /* OUT/instances */
    eval_instance *v;
    int n, cap;
    char *err;
    size_t errlen;
} build_ctx;

/* push appends an instance named name (made unique) and returns it. */
static eval_instance *push(build_ctx *b, const char *name, const char *cluster, int entry) {
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        eval_instance *nv = realloc(b->v, sizeof *nv * (size_t)cap);
        if (!nv) return NULL;
        b->v = nv;
        b->cap = cap;
    }
    eval_instance *in = &b->v[b->n];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "%s", name);
    for (int k = 2;; k++) {
        int clash = 0;
        for (int i = 0; i < b->n; i++) clash |= !strcmp(b->v[i].name, in->name);
        if (!clash) break;
        snprintf(in->name, sizeof in->name, "%.140s#%d", name, k);
    }
    snprintf(in->cluster, sizeof in->cluster, "%s", cluster);
    in->entry = entry;
    b->n++;
    return in;
}

/* load_into loads in->file into in->run, naming the entry on failure.
 * Jobs that carry measurements get their fitted curve, as in `strata
 * place` and the daemon (solvers/fit.h). */
static int load_into(build_ctx *b, eval_instance *in) {
    char msg[ERRLEN];
    in->run = run_load(in->file, msg, sizeof msg);
    if (!in->run) {
        snprintf(b->err, b->errlen, "%s: instances[%d]: %s", b->spec->path, in->entry, msg);
        return -1;
    }
    return 0;
}

/* eval_load_pair: see instances.h. */
cfg_run *eval_load_pair(const char *tmp, const char *cluster_abs, const char *model_abs,
                        char *err, size_t errlen) {
    /* both paths quoted by libyaml's emitter (eval_yaml_quote): a tab, a
     * quote or a line break in a folder's name stays in the name */
    char qc[6 * EVAL_PATH_MAX + 16], qm[6 * EVAL_PATH_MAX + 16];
    int bad_c = eval_yaml_quote(qc, sizeof qc, cluster_abs) < 0;
    if (bad_c || (model_abs && eval_yaml_quote(qm, sizeof qm, model_abs) < 0)) {
        snprintf(err, errlen, "%s: the path is not valid UTF-8, it cannot be written to YAML",
                 bad_c ? cluster_abs : model_abs);
        return NULL;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        return NULL;
    }
    if (model_abs)
        fprintf(f, "include: [%s, %s]\n", qc, qm);
    else
        fprintf(f, "include: %s\njob: {name: probe, batch: 1, samples: 1, min_throughput: 1,"
                   " layers: [{name: l, flops: 1, io: 0, act: 0, params: 0, mem: 0}]}\n", qc);
    fclose(f);
    cfg_run *run = run_load(tmp, err, errlen);
    unlink(tmp);
    return run;
}

/* load_pair is eval_load_pair through a temporary file in the instances
 * folder, its messages naming the entry. */
static cfg_run *load_pair(build_ctx *b, int entry, const char *cluster_abs, const char *model) {
    char tmp[EVAL_PATH_MAX + 64], model_abs[EVAL_PATH_MAX], msg[ERRLEN];
    snprintf(tmp, sizeof tmp, "%s/.probe-%d.yaml", b->dir, entry);
    if (model && absolute(model, model_abs, msg, sizeof msg) < 0) {
        snprintf(b->err, b->errlen, "%s: instances[%d]: %s", b->spec->path, entry, msg);
        return NULL;
    }
    cfg_run *run = eval_load_pair(tmp, cluster_abs, model ? model_abs : NULL, msg, sizeof msg);
    if (!run) snprintf(b->err, b->errlen, "%s: instances[%d]: %s", b->spec->path, entry, msg);
    return run;
}

/* copy_job deep-copies the layers and measurements of src into dst. */
static int copy_job(model_job *dst, const model_job *src) {
    *dst = *src;
    dst->points = NULL;
    dst->layers = malloc(sizeof *dst->layers * (size_t)src->n_layers);
    if (!dst->layers) return -1;
    memcpy(dst->layers, src->layers, sizeof *dst->layers * (size_t)src->n_layers);
    if (src->n_points > 0) {
        dst->points = malloc(sizeof *dst->points * (size_t)src->n_points);
        if (!dst->points) {
            free(dst->layers);
            return -1;
        }
        memcpy(dst->points, src->points, sizeof *dst->points * (size_t)src->n_points);
    }
    return 0;
}

static void free_jobs(model_job *jobs, int n) {
    for (int j = 0; j < n; j++) {
        free(jobs[j].layers);
        free(jobs[j].points);
    }
    free(jobs);
}

/* unique_names appends "-2", "-3", ... to repeated job names. */
static void unique_names(model_job *jobs, int n) {
    for (int j = 1; j < n; j++)
        for (int k = 2;; k++) {
            int clash = 0;
            for (int i = 0; i < j; i++) clash |= !strcmp(jobs[i].name, jobs[j].name);
            if (!clash) break;
            char base[MODEL_NAME_MAX];
            snprintf(base, sizeof base, "%s", jobs[j].name);
            char *dash = strrchr(base, '-');
            if (dash && k > 2) *dash = '\0';
            snprintf(jobs[j].name, MODEL_NAME_MAX, "%.50s-%d", base, k);
        }
}

/* write_and_load writes the jobs (cluster by include, or cl in full when
 * include is NULL) as the instance's file and loads it. */
static int write_and_load(build_ctx *b, eval_instance *in, const char *comment,
                          const char *include, const model_cluster *cl, const model_job *jobs,
                          int n_jobs) {
    char msg[ERRLEN];
    file_of(b->dir, in->name, in->file);
    if (eval_write_run(in->file, comment, n_jobs > 1 ? "jct" : "cost", include, cl, jobs, n_jobs,
                       msg, sizeof msg) < 0) {
        snprintf(b->err, b->errlen, "%s", msg);
        return -1;
    }
    return load_into(b, in);
}

/* ---------------------------------------------------------------------------
 * The sources
 * ------------------------------------------------------------------------ */

static int build_runs(build_ctx *b, int e) {
    const eval_instance_spec *is = &b->spec->instances[e];
    for (int f = 0; f < is->n_files; f++)
        for (int t = 0; t < is->n_targets; t++) {
            char name[160], st[64];
            stem(is->files[f], st, sizeof st);
            double x = is->targets[t];
            if (x != 1.0) snprintf(name, sizeof name, "%s%s%s@x%g", is->name, is->name[0] ? "/" : "", st, x);
            else snprintf(name, sizeof name, "%s%s%s", is->name, is->name[0] ? "/" : "", st);
            eval_instance *in = push(b, name, st, e);
            if (!in) goto oom;
            snprintf(in->file, sizeof in->file, "%s", is->files[f]);
            if (load_into(b, in)) return -1;
            in->batch = in->run->n_jobs > 1;
            if (x == 1.0) continue;
            /* a target factor: write the scaled jobs beside an include of the original
             * file's cluster, which we keep by writing it in full */
            cfg_run *src = in->run;
            in->run = NULL;
            for (int j = 0; j < src->n_jobs; j++) src->jobs[j].min_throughput *= x;
            char comment[4 * EVAL_PATH_MAX];
            snprintf(comment, sizeof comment, "instance %s: %s with every min_throughput x%g\n"
                     "written by strata eval %s", in->name, is->files[f], x, b->spec->path);
            int rc = write_and_load(b, in, comment, NULL, &src->cluster, src->jobs, src->n_jobs);
            cfg_free(src);
            if (rc) return -1;
        }
    return 0;
oom:
    snprintf(b->err, b->errlen, "out of memory");
    return -1;
}

static int build_models(build_ctx *b, int e) {
    const eval_instance_spec *is = &b->spec->instances[e];
    char cl_abs[EVAL_PATH_MAX], cl_stem[64];
    if (absolute(is->cluster, cl_abs, b->err, b->errlen) < 0) return -1;
    stem(is->cluster, cl_stem, sizeof cl_stem);
    const char *label = is->name[0] ? is->name : cl_stem;
    int batch = is->source == EVAL_SRC_BATCH;
    for (int t = 0; t < is->n_targets; t++) {
        double x = is->targets[t];
        model_job *jobs = calloc((size_t)is->n_files, sizeof *jobs);
        if (!jobs) goto oom;
        int n_jobs = 0;
        for (int f = 0; f < is->n_files; f++) {
            cfg_run *pair = load_pair(b, e, cl_abs, is->files[f]);
            if (!pair) {
                free_jobs(jobs, n_jobs);
                return -1;
            }
            for (int j = 0; j < pair->n_jobs; j++) {
                model_job *nj = realloc(jobs, sizeof *jobs * (size_t)(n_jobs + 1));
                if (!nj || copy_job(&nj[n_jobs], &pair->jobs[j]) < 0) {
                    if (nj) jobs = nj;
                    free_jobs(jobs, n_jobs);
                    cfg_free(pair);
                    goto oom;
                }
                jobs = nj;
                jobs[n_jobs++].min_throughput *= x;
            }
            cfg_free(pair);
        }
        unique_names(jobs, n_jobs);
        char comment[4 * EVAL_PATH_MAX];
        int first = 0;
        while (first < n_jobs) {
            int count = batch ? n_jobs : 1;
            char name[160];
            if (batch && x != 1.0) snprintf(name, sizeof name, "%s/batch@x%g", label, x);
            else if (batch) snprintf(name, sizeof name, "%s/batch", label);
            else if (x != 1.0) snprintf(name, sizeof name, "%s/%s@x%g", label, jobs[first].name, x);
            else snprintf(name, sizeof name, "%s/%s", label, jobs[first].name);
            eval_instance *in = push(b, name, cl_stem, e);
            if (!in) {
                free_jobs(jobs, n_jobs);
                goto oom;
            }
            in->batch = batch && n_jobs > 1;
            snprintf(comment, sizeof comment, "instance %s: cluster %s, %s%s, min_throughput x%g\n"
                     "written by strata eval %s", in->name, cl_abs,
                     batch ? "the jobs of " : "the job of ", batch ? "every model file" :
                     is->files[first < is->n_files ? first : 0], x, b->spec->path);
            if (write_and_load(b, in, comment, cl_abs, NULL, jobs + first, count)) {
                free_jobs(jobs, n_jobs);
                return -1;
            }
            first += count;
        }
        free_jobs(jobs, n_jobs);
    }
    return 0;
oom:
    snprintf(b->err, b->errlen, "out of memory");
    return -1;
}

static int build_generated(build_ctx *b, int e) {
    const eval_instance_spec *is = &b->spec->instances[e];
    const eval_gen *g = &is->gen;
    char cl_abs[EVAL_PATH_MAX], cl_stem[64];
    if (absolute(is->cluster, cl_abs, b->err, b->errlen) < 0) return -1;
    stem(is->cluster, cl_stem, sizeof cl_stem);
    cfg_run *base = load_pair(b, e, cl_abs, NULL);
    if (!base) return -1;
    /* the pool of model jobs, when models: are given */
    cfg_run **pool = calloc((size_t)(is->n_files > 0 ? is->n_files : 1), sizeof *pool);
    int rc = -1;
    if (!pool) goto oom;
    for (int f = 0; f < is->n_files; f++)
        if (!(pool[f] = load_pair(b, e, cl_abs, is->files[f]))) goto done;
    for (int i = 0; i < g->count; i++) {
        eval_rng r;
        eval_rng_seed(&r, g->seed, (uint64_t)i);
        model_cluster gcl;
        memset(&gcl, 0, sizeof gcl);
        const model_cluster *cl = &base->cluster;
        if (g->random_cluster) {
            if (eval_gen_cluster(&gcl, &base->cluster, &r) < 0) goto oom;
            cl = &gcl;
        }
        int n_jobs = eval_rng_int(&r, g->jobs_lo, g->jobs_hi);
        model_job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
        if (!jobs) {
            eval_gen_cluster_free(&gcl);
            goto oom;
        }
        for (int j = 0; j < n_jobs; j++) {
            if (is->n_files > 0) {
                const cfg_run *src = pool[eval_rng_int(&r, 0, is->n_files - 1)];
                if (copy_job(&jobs[j], &src->jobs[eval_rng_int(&r, 0, src->n_jobs - 1)]) < 0) {
                    free_jobs(jobs, j);
                    eval_gen_cluster_free(&gcl);
                    goto oom;
                }
            } else {
                char jn[MODEL_NAME_MAX];
                snprintf(jn, sizeof jn, "gen%d", j + 1);
                int layers = eval_rng_int(&r, g->layers_lo, g->layers_hi);
                if (eval_gen_model(&jobs[j], cl, layers, jn, &r) < 0) {
                    free_jobs(jobs, j);
                    eval_gen_cluster_free(&gcl);
                    goto oom;
                }
            }
            jobs[j].min_throughput *= eval_rng_range(&r, g->load_lo, g->load_hi);
        }
        unique_names(jobs, n_jobs);
        char name[160], label[MODEL_NAME_MAX + 32];
        snprintf(name, sizeof name, "%s-%d", is->name[0] ? is->name : "gen", i + 1);
        if (g->random_cluster) snprintf(label, sizeof label, "%.40s~%d", cl_stem, i + 1);
        else snprintf(label, sizeof label, "%s", cl_stem);
        eval_instance *in = push(b, name, label, e);
        if (!in) {
            free_jobs(jobs, n_jobs);
            eval_gen_cluster_free(&gcl);
            goto oom;
        }
        in->batch = n_jobs > 1;
        char comment[4 * EVAL_PATH_MAX];
        snprintf(comment, sizeof comment, "instance %s: generated by strata eval %s, "
                 "instances[%d], seed %llu, draw %d\n%s", in->name, b->spec->path, e,
                 (unsigned long long)g->seed, i, g->random_cluster
                     ? "cluster drawn from the types of the base cluster"
                     : "on the base cluster");
        int w = write_and_load(b, in, comment, g->random_cluster ? NULL : cl_abs, cl, jobs,
                               n_jobs);
        free_jobs(jobs, n_jobs);
        eval_gen_cluster_free(&gcl);
        if (w) goto done;
    }
    rc = 0;
    goto done;
oom:
    snprintf(b->err, b->errlen, "out of memory");
done:
    for (int f = 0; pool && f < is->n_files; f++) cfg_free(pool[f]);
    free(pool);
    cfg_free(base);
    return rc;
}

/* build_heldout draws entry e's instances with eval/heldout.h: each a run
 * file with its cluster written in full and one job. */
static int build_heldout(build_ctx *b, int e) {
    const eval_instance_spec *is = &b->spec->instances[e];
    const eval_heldout_conf *c = &is->heldout;
    for (int i = 0; i < c->count; i++) {
        model_job job;
        model_cluster cl;
        int st = eval_heldout_draw(c, i, &job, &cl);
        if (st < 0) {
            snprintf(b->err, b->errlen, "out of memory");
            return -1;
        }
        char name[160], label[MODEL_NAME_MAX];
        snprintf(name, sizeof name, "%s-%d", is->name[0] ? is->name : "heldout", i + 1);
        snprintf(label, sizeof label, "heldout-%d-%d", c->seed, i + 1);
        eval_instance *in = push(b, name, label, e);
        if (!in) {
            eval_heldout_clear(&job, &cl);
            snprintf(b->err, b->errlen, "out of memory");
            return -1;
        }
        char comment[2 * EVAL_PATH_MAX];
        snprintf(comment, sizeof comment, "instance %s: held-out generator (eval/heldout.h), "
                 "%s, instances[%d], seed %d, draw %d, %d layers%s", in->name, b->spec->path, e,
                 c->seed, i, job.n_layers, st ? "\nno feasible draw in 30: the last one" : "");
        int w = write_and_load(b, in, comment, NULL, &cl, &job, 1);
        eval_heldout_clear(&job, &cl);
        if (w) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */

void eval_instances_free(eval_instance *v, int n) {
    if (!v) return;
    for (int i = 0; i < n; i++) cfg_free(v[i].run);
    free(v);
}

int eval_instances_build(const eval_spec *spec, const char *out_dir, eval_instance **out,
                         int *n, char *err, size_t errlen) {
    build_ctx b = {.spec = spec, .err = err, .errlen = errlen};
    *out = NULL;
    *n = 0;
    snprintf(b.dir, sizeof b.dir, "%s/instances", out_dir);
    if (eval_mkdirs(b.dir) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", b.dir, strerror(errno));
        return -1;
    }
    for (int e = 0; e < spec->n_instances; e++) {
        int rc;
        switch (spec->instances[e].source) {
        case EVAL_SRC_RUNS: rc = build_runs(&b, e); break;
        case EVAL_SRC_MODELS:
        case EVAL_SRC_BATCH: rc = build_models(&b, e); break;
        case EVAL_SRC_HELDOUT: rc = build_heldout(&b, e); break;
        default: rc = build_generated(&b, e); break;
        }
        if (rc) {
            eval_instances_free(b.v, b.n);
            return -1;
        }
    }
    *out = b.v;
    *n = b.n;
    return 0;
}
