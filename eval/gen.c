/* gen.c -- random clusters and models, and run files (see gen.h).
 *
 * The figures drawn here are meant to look like the shipped ones
 * (docs/data.md) without being any of them: the ranges below bracket the
 * per-layer FLOP, activation, parameter and memory figures of the five
 * shipped models, and cluster types are the base cluster's types scaled
 * by factors between 1/2 and 2. The mem of a layer follows the shipped
 * rule: 16 bytes per dense parameter (4 of them are the synchronised
 * `params` bytes), plus the activations of one batch, plus any embedding
 * table.
 */
#include "eval/gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include <yaml.h>

#include "solvers/solve.h"

/* ---------------------------------------------------------------------------
 * The generator: splitmix64 over a counter
 * ------------------------------------------------------------------------ */

void eval_rng_seed(eval_rng *r, uint64_t seed, uint64_t salt) {
    r->state = seed * 0x9E3779B97F4A7C15ULL ^ (salt + 0x632BE59BD9B4E019ULL);
    (void)eval_rng_next(r);
}

uint64_t eval_rng_next(eval_rng *r) { return splitmix64_next(&r->state); }

double eval_rng_uniform(eval_rng *r) { return splitmix64_unit(&r->state); }

double eval_rng_range(eval_rng *r, double lo, double hi) {
    return lo + (hi - lo) * eval_rng_uniform(r);
}

double eval_rng_log(eval_rng *r, double lo, double hi) {
    return exp(eval_rng_range(r, log(lo), log(hi)));
}

int eval_rng_int(eval_rng *r, int lo, int hi) {
    if (hi <= lo) return lo;
    return lo + (int)(eval_rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* ---------------------------------------------------------------------------
 * Clusters
 * ------------------------------------------------------------------------ */

void eval_gen_cluster_free(model_cluster *cl) {
    if (cl) model_cluster_clear(cl);
}

int eval_gen_cluster(model_cluster *out, const model_cluster *base, eval_rng *r) {
    memset(out, 0, sizeof *out);
    int nt = base->n_types;
    int keep = eval_rng_int(r, nt < 2 ? nt : 2, nt);
    int pick[MODEL_MAX_TYPES], idx[MODEL_MAX_TYPES];
    for (int t = 0; t < nt; t++) idx[t] = t;
    for (int i = 0; i < keep; i++) { /* partial Fisher-Yates */
        int j = eval_rng_int(r, i, nt - 1), tmp = idx[i];
        idx[i] = idx[j];
        idx[j] = tmp;
    }
    memset(pick, 0, sizeof pick);
    for (int i = 0; i < keep; i++) pick[idx[i]] = 1;

    int nz = eval_rng_int(r, 1, 3);
    int bad = nz >= 2 && eval_rng_uniform(r) < 0.6 ? nz - 1 : -1;
    double bad_loss = eval_rng_log(r, 0.001, 0.02), bad_lat = eval_rng_range(r, 100e-6, 500e-6);
    double bad_bw = eval_rng_range(r, 0.4, 0.8);
    out->types = calloc((size_t)keep, sizeof *out->types);
    out->zones = calloc((size_t)nz, sizeof *out->zones);
    out->nodes = calloc((size_t)keep * 4, sizeof *out->nodes);
    if (!out->types || !out->zones || !out->nodes) {
        eval_gen_cluster_free(out);
        return -1;
    }
    out->n_zones = nz;
    for (int z = 0; z < nz; z++) snprintf(out->zones[z].name, MODEL_NAME_MAX, "zone%d", z + 1);
    out->inter_bw = eval_rng_log(r, 5e9, 25e9) / 8.0;
    out->inter_latency = eval_rng_range(r, 0.3e-3, 1.5e-3);
    for (int t = 0; t < nt; t++) {
        if (!pick[t]) continue;
        model_type *ty = &out->types[out->n_types];
        *ty = base->types[t];
        ty->flops *= eval_rng_log(r, 0.5, 2.0);
        ty->io_bw *= eval_rng_log(r, 0.5, 2.0);
        ty->net_bw *= eval_rng_log(r, 0.5, 2.0);
        ty->price *= eval_rng_log(r, 0.7, 1.4);
        ty->count = 0;
        int nn = eval_rng_int(r, 1, 4);
        for (int k = 0; k < nn; k++) {
            model_node *nd = &out->nodes[out->n_nodes];
            static const int gpu_units[] = {1, 2, 4, 8};
            nd->units = ty->is_gpu ? gpu_units[eval_rng_int(r, 0, 3)] : eval_rng_int(r, 1, 2);
            nd->ps_slots = ty->is_gpu ? (nd->units >= 8 ? 2 : 1) : 4;
            nd->type = out->n_types;
            nd->zone = eval_rng_int(r, 0, nz - 1);
            snprintf(nd->name, MODEL_NAME_MAX, "%.40s-%d", ty->name, k);
            nd->bw = ty->net_bw * nd->units;
            nd->latency = 50e-6;
            nd->loss = 1e-4;
            if (nd->zone == bad) {
                nd->bw *= bad_bw;
                nd->latency = bad_lat;
                nd->loss = bad_loss;
            }
            ty->count += nd->units;
            out->n_nodes++;
        }
        out->n_types++;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------ */

void eval_gen_job_free(model_job *job) {
    if (!job) return;
    free(job->layers);
    job->layers = NULL;
    job->n_layers = 0;
}

static void set_layer(model_layer *l, const char *name, int i, double flops, double io,
                      double act, double params, double mem) {
    memset(l->name, 0, sizeof l->name);
    snprintf(l->name, MODEL_NAME_MAX, "%s%d", name, i);
    l->flops = flops;
    l->io = io;
    l->act = act;
    l->params = params;
    l->mem = mem;
}

/* A CNN: image input, convolutions whose activations shrink and whose
 * parameters grow, then one to three fully connected layers. */
static void draw_cnn(model_job *j, eval_rng *r) {
    int L = j->n_layers;
    j->batch = (double)(32 << eval_rng_int(r, 0, 2));
    int n_fc = L >= 4 ? eval_rng_int(r, 1, L >= 8 ? 3 : 1) : 0;
    int n_conv = L - n_fc;
    for (int i = 0; i < n_conv; i++) {
        double frac = n_conv > 1 ? (double)i / (n_conv - 1) : 0.0;
        double act = 12.8e6 * pow(0.02, frac) * eval_rng_log(r, 0.7, 1.4);
        double params = 10e3 * pow(2000.0, frac) * eval_rng_log(r, 0.7, 1.4);
        set_layer(&j->layers[i], "conv", i + 1, eval_rng_log(r, 0.5e9, 12e9),
                  i == 0 ? 150528.0 : 0.0, act, params, 4.0 * params + 2.0 * act * j->batch);
    }
    double p = eval_rng_log(r, 16e6, 420e6);
    for (int i = 0; i < n_fc; i++) {
        double act = i == n_fc - 1 ? 4e3 : 16384.0;
        set_layer(&j->layers[n_conv + i], "fc", i + 1, eval_rng_log(r, 20e6, 700e6), 0.0, act,
                  p, 4.0 * p + 2.0 * act * j->batch);
        p /= eval_rng_log(r, 3.0, 8.0);
    }
}

/* A transformer: embedding, equal blocks, a large head. */
static void draw_transformer(model_job *j, eval_rng *r) {
    int L = j->n_layers;
    static const double H[] = {512, 768, 1024}, SEQ[] = {128, 256, 512, 1024};
    double h = H[eval_rng_int(r, 0, 2)], seq = SEQ[eval_rng_int(r, 0, 3)];
    j->batch = (double)(4 << eval_rng_int(r, 0, 3));
    double act = seq * h * 4.0;
    double block_flops = 72.0 * h * h * seq * (1.0 + seq / (6.0 * h));
    double block_params = 12.0 * h * h * 4.0;
    double block_act_mem = seq * h * (34.0 + 5.0 * 12.0 * seq / h) * 2.0;
    double vocab = eval_rng_log(r, 8e3, 64e3);
    int first = L >= 3 ? 1 : 0, last = L >= 2 ? 1 : 0;
    if (first) {
        double table = vocab * h * 4.0;
        set_layer(&j->layers[0], "embed", 0, 6.0 * seq * h, seq * 4.0 + seq * h * 4.0, act,
                  fmin(table, seq * j->batch * h * 4.0), 4.0 * table + 2.0 * act * j->batch);
    }
    for (int i = first; i < L - last; i++) {
        double f = eval_rng_log(r, 0.9, 1.1);
        set_layer(&j->layers[i], "block", i - first, block_flops * f, i == 0 ? seq * 4.0 : 0.0,
                  act, block_params, 4.0 * block_params + block_act_mem * j->batch);
    }
    if (last) {
        double p = vocab * h * 4.0;
        set_layer(&j->layers[L - 1], "head", 0, 6.0 * h * vocab * seq * eval_rng_log(r, 0.15, 1.0),
                  0.0, 4.0, p, 4.0 * p + 2.0 * seq * vocab * 4.0 * j->batch / 8.0);
    }
}

/* A CTR model: a bottom MLP, IO-heavy embedding tables, an interaction
 * layer and a top MLP. Needs 5 layers or more. */
static void draw_ctr(model_job *j, eval_rng *r) {
    int L = j->n_layers;
    j->batch = (double)(1024 << eval_rng_int(r, 0, 2));
    int n_top = eval_rng_int(r, 1, L >= 8 ? 3 : 1);
    int n_emb = L - 2 - n_top;
    double bottom_p = eval_rng_log(r, 0.2e6, 2e6);
    set_layer(&j->layers[0], "bottom", 0, eval_rng_log(r, 0.3e6, 3e6), 56.0, 512.0, bottom_p,
              4.0 * bottom_p + 2.0 * 512.0 * j->batch);
    double carried = 512.0;
    for (int i = 0; i < n_emb; i++) {
        double io = eval_rng_log(r, 2e3, 60e3), table = eval_rng_log(r, 50e6, 6e9);
        carried += 512.0 * eval_rng_int(r, 1, 4);
        set_layer(&j->layers[1 + i], "emb", i, io * 0.75, io, carried,
                  fmin(table, eval_rng_log(r, 5e6, 110e6)), table + 2.0 * carried * j->batch);
    }
    set_layer(&j->layers[1 + n_emb], "interact", 0, eval_rng_log(r, 3e6, 30e6), 0.0, 2048.0,
              eval_rng_log(r, 0.5e6, 4e6), 0.0);
    j->layers[1 + n_emb].mem = 4.0 * j->layers[1 + n_emb].params + 2.0 * 2048.0 * j->batch;
    for (int i = 0; i < n_top; i++) {
        double p = eval_rng_log(r, 1e6, 8e6), a = i == n_top - 1 ? 4.0 : 1024.0;
        set_layer(&j->layers[2 + n_emb + i], "top", i, eval_rng_log(r, 2e6, 20e6), 0.0, a, p,
                  4.0 * p + 2.0 * a * j->batch);
    }
}

/* fastest_unit returns the largest single-unit throughput B / t of the
 * whole job on one type (memory ignored): a scale for the target. */
static double fastest_unit(const model_job *j, const model_cluster *cl) {
    double best = 0.0;
    for (int t = 0; t < cl->n_types; t++) {
        model_stage st;
        model_stage_eval(j, cl, t, 0, j->n_layers - 1, &st);
        if (st.step > 0 && j->batch / st.step > best) best = j->batch / st.step;
    }
    return best;
}

int eval_gen_model(model_job *out, const model_cluster *cl, int layers, const char *name,
                   eval_rng *r) {
    memset(out, 0, sizeof *out);
    out->layers = calloc((size_t)layers, sizeof *out->layers);
    solve_result *res = solve_result_create(layers);
    if (!out->layers || !res) {
        free(out->layers);
        out->layers = NULL;
        solve_result_free(res);
        return -1;
    }
    snprintf(out->name, MODEL_NAME_MAX, "%s", name);
    out->n_layers = layers;
    out->alpha = MODEL_DEFAULT_ALPHA;
    out->shard = MODEL_DEFAULT_SHARD;
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = 10000;
    int status = 1;
    for (int attempt = 0; attempt < 50 && status; attempt++) {
        int fam = eval_rng_int(r, 0, layers >= 5 ? 2 : 1);
        if (fam == 0) draw_cnn(out, r);
        else if (fam == 1) draw_transformer(out, r);
        else draw_ctr(out, r);
        double unit = fastest_unit(out, cl);
        out->min_throughput = unit * eval_rng_log(r, 1.5, 6.0);
        out->samples = round(out->min_throughput * 3600.0 * eval_rng_log(r, 1.0, 100.0));
        if (solve_run(out, cl, &so, res) == 0) status = 0;
    }
    solve_result_free(res);
    return status;
}

/* ---------------------------------------------------------------------------
 * Writing runs
 * ------------------------------------------------------------------------ */

typedef struct {
    char *out;
    size_t len, n;
} quote_buf;

/* libyaml output handler: appends to the buffer; 0 (an emitter error)
 * when it is full. */
static int quote_write(void *data, unsigned char *bytes, size_t size) {
    quote_buf *q = data;
    if (q->n + size >= q->len) return 0;
    memcpy(q->out + q->n, bytes, size);
    q->n += size;
    return 1;
}

int eval_yaml_quote(char *out, size_t len, const char *s) {
    if (len == 0) return -1;
    quote_buf q = {out, len, 0};
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&e)) {
        out[0] = '\0';
        return -1;
    }
    yaml_emitter_set_output(&e, quote_write, &q);
    yaml_emitter_set_width(&e, -1); /* never fold a long scalar */
    yaml_emitter_set_unicode(&e, 1);
    int ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
             yaml_emitter_emit(&e, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
             yaml_emitter_emit(&e, &ev) &&
             yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1,
                                          1, YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
             yaml_emitter_emit(&e, &ev) && yaml_document_end_event_initialize(&ev, 1) &&
             yaml_emitter_emit(&e, &ev) && yaml_stream_end_event_initialize(&ev) &&
             yaml_emitter_emit(&e, &ev) && yaml_emitter_flush(&e);
    yaml_emitter_delete(&e);
    /* the document is the scalar and a line break */
    while (ok && q.n > 0 && (out[q.n - 1] == '\n' || out[q.n - 1] == '\r')) q.n--;
    if (!ok || q.n < 2 || out[0] != '"' || out[q.n - 1] != '"') {
        out[0] = '\0';
        return -1;
    }
    out[q.n] = '\0';
    return 0;
}

/* Writes name as a double-quoted YAML scalar (eval_yaml_quote; names and
 * paths the loader accepted are valid UTF-8, so it does not fail here;
 * if it did, the file would fail to load with a syntax error). */
static void put_name(FILE *f, const char *name) {
    size_t len = 6 * strlen(name) + 16; /* an escape is at most 10 bytes for 2 or more */
    char *q = malloc(len);
    fputs(q && eval_yaml_quote(q, len, name) == 0 ? q : "!invalid", f);
    free(q);
}

static void put_cluster(FILE *f, const model_cluster *cl) {
    fprintf(f, "cluster:\n  inter_bw: %.17g\n  inter_latency: %.17g\n  types:\n", cl->inter_bw,
            cl->inter_latency);
    for (int t = 0; t < cl->n_types; t++) {
        const model_type *ty = &cl->types[t];
        fprintf(f, "    - {name: ");
        put_name(f, ty->name);
        fprintf(f, ", kind: %s, flops: %.17g, io_bw: %.17g, net_bw: %.17g, mem: %.17g, "
                   "price: %.17g, count: %d}\n", ty->is_gpu ? "gpu" : "cpu", ty->flops,
                ty->io_bw, ty->net_bw, ty->mem, ty->price, ty->count);
    }
    if (cl->n_zones > 0) {
        fprintf(f, "  zones:\n");
        for (int z = 0; z < cl->n_zones; z++) {
            fprintf(f, "    - {name: ");
            put_name(f, cl->zones[z].name);
            fprintf(f, "}\n");
        }
    }
    if (cl->zone_bw && cl->zone_lat && cl->n_zones > 1) {
        fprintf(f, "  links:\n");
        for (int a = 0; a < cl->n_zones; a++)
            for (int b = a + 1; b < cl->n_zones; b++) {
                fprintf(f, "    - {zones: [");
                put_name(f, cl->zones[a].name);
                fprintf(f, ", ");
                put_name(f, cl->zones[b].name);
                fprintf(f, "], bw: %.17g, latency: %.17g}\n", cl->zone_bw[a * cl->n_zones + b],
                        cl->zone_lat[a * cl->n_zones + b]);
            }
    }
    if (cl->n_nodes > 0) {
        fprintf(f, "  nodes:\n");
        for (int n = 0; n < cl->n_nodes; n++) {
            const model_node *nd = &cl->nodes[n];
            fprintf(f, "    - {name: ");
            put_name(f, nd->name);
            fprintf(f, ", type: ");
            put_name(f, cl->types[nd->type].name);
            fprintf(f, ", units: %d, ps_slots: %d", nd->units, nd->ps_slots);
            if (cl->n_zones > 0) {
                fprintf(f, ", zone: ");
                put_name(f, cl->zones[nd->zone].name);
            }
            fprintf(f, ", bw: %.17g, latency: %.17g, loss: %.17g}\n", nd->bw, nd->latency,
                    nd->loss);
        }
    }
}

static void put_job(FILE *f, const model_job *j, const char *indent, const char *first) {
    fprintf(f, "%sname: ", first);
    put_name(f, j->name);
    fprintf(f, "\n%sbatch: %.17g\n%ssamples: %.17g\n%smin_throughput: %.17g\n%salpha: %.17g\n"
               "%sshard: %.17g\n%slayers:\n", indent, j->batch, indent, j->samples, indent,
            j->min_throughput, indent, j->alpha, indent, j->shard, indent);
    if (j->n_points > 0) {
        fprintf(f, "%smeasurements:\n", indent);
        for (int i = 0; i < j->n_points; i++)
            fprintf(f, "%s  - {workers: %d, ps: %d, throughput: %.17g}\n", indent,
                    j->points[i].workers, j->points[i].ps, j->points[i].throughput);
    }
    for (int l = 0; l < j->n_layers; l++) {
        const model_layer *ly = &j->layers[l];
        fprintf(f, "%s  - {name: ", indent);
        put_name(f, ly->name);
        fprintf(f, ", flops: %.17g, io: %.17g, act: %.17g, params: %.17g, mem: %.17g}\n",
                ly->flops, ly->io, ly->act, ly->params, ly->mem);
    }
}

int eval_write_run(const char *path, const char *comment, const char *objective,
                   const char *cluster_include, const model_cluster *cl, const model_job *jobs,
                   int n_jobs, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    if (comment && *comment) {
        fputs("# ", f);
        for (const char *p = comment; *p; p++) {
            unsigned char ch = (unsigned char)*p;
            if (ch == '\n') fputs(p[1] ? "\n# " : "", f);
            else fputc(ch < 0x20 && ch != '\t' ? '?' : ch == 0x7f ? '?' : ch, f);
        }
        fputc('\n', f);
    }
    fprintf(f, "model: v1\nobjective: %s\n", objective ? objective : "cost");
    if (cluster_include) {
        fprintf(f, "include: ");
        put_name(f, cluster_include);
        fprintf(f, "\n");
    } else {
        put_cluster(f, cl);
    }
    if (n_jobs == 1) {
        fprintf(f, "job:\n");
        put_job(f, &jobs[0], "  ", "  ");
    } else {
        fprintf(f, "jobs:\n");
        for (int j = 0; j < n_jobs; j++) put_job(f, &jobs[j], "    ", "  - ");
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
