/* spoltrain.c -- REINFORCE over whole traces for the policy of strata
 * simulate (see spoltrain.h and docs/simulate.md).
 */
#include "sim/spoltrain.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/clock.h"
#include "base/rng.h"
#include "env/schema.h"
#include "eval/report.h"
#include "nets/layers.h"
#include "sim/methods.h"

#define FEAT SPOL_FEATURES
#define VALID_SEED 1000000 /* validation traces: seeds 1e6, 1e6 + 1, ... */
#define TRAIN_SEED 2000000 /* training traces: seeds in [2e6, 3e6); held-out ones are below 1e6 */

/* ---------------------------------------------------------------------------
 * The config
 * ------------------------------------------------------------------------ */

typedef struct {
    int mode;
    char cluster[CFG_TEXT_MAX];
    int jobs, arrivals, seed, hidden, steps, traces, episodes, valid, eval_every;
    double load[2], deadline_factor, lr, entropy, grad_clip, seconds, valid_load;
    char out[CFG_TEXT_MAX];
} conf_in;

enum {
    CF_MODE, CF_CLUSTER, CF_MODELS, CF_JOBS, CF_LOAD, CF_ARRIVALS, CF_DEADLINE, CF_SEED,
    CF_OBJECTIVE, CF_HIDDEN, CF_LR, CF_ENTROPY, CF_CLIP, CF_STEPS, CF_SECONDS, CF_TRACES,
    CF_EPISODES, CF_VALID, CF_VALID_LOAD, CF_EVAL_EVERY, CF_OUT, N_CF
};
static const cfg_field CONF_FIELDS[N_CF] = {
    [CF_MODE] = CFG_ROW_ENUM("mode", "sim", 1, 0, conf_in, mode),
    [CF_CLUSTER] = CFG_ROW_TEXT("cluster", 1, conf_in, cluster),
    [CF_MODELS] = CFG_ROW_NODE("models", CFG_FT_LIST, 1),
    [CF_JOBS] = CFG_ROW_INT("jobs", 0, 100, CFG_B_GE, 1, CFG_B_LE, SIM_MAX_JOBS, conf_in, jobs),
    [CF_LOAD] = CFG_ROW_RANGE("load", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_LE, 100, conf_in,
                              load),
    [CF_ARRIVALS] = CFG_ROW_ENUM("arrivals", "poisson|bursty", 0, 0, conf_in, arrivals),
    [CF_DEADLINE] = CFG_ROW_NUM("deadline_factor", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0,
                                conf_in, deadline_factor),
    [CF_SEED] = CFG_ROW_INT("seed", 0, 1, CFG_B_GE, 0, CFG_B_LT, VALID_SEED, conf_in, seed),
    [CF_OBJECTIVE] = CFG_ROW_NODE("objective", CFG_FT_MAP, 0),
    [CF_HIDDEN] = CFG_ROW_INT("hidden", 0, 32, CFG_B_GE, 1, CFG_B_LE, SPOL_HIDDEN_MAX, conf_in,
                              hidden),
    [CF_LR] = CFG_ROW_NUM("lr", UNITS_NUMBER, 0, 3e-3, CFG_B_GT, 0, CFG_B_LE, 1, conf_in, lr),
    [CF_ENTROPY] = CFG_ROW_NUM("entropy", UNITS_NUMBER, 0, 0.01, CFG_B_GE, 0, CFG_B_LE, 10,
                               conf_in, entropy),
    [CF_CLIP] = CFG_ROW_NUM("grad_clip", UNITS_NUMBER, 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, conf_in,
                            grad_clip),
    [CF_STEPS] = CFG_ROW_INT("steps", 0, 1000, CFG_B_GE, 1, CFG_B_NONE, 0, conf_in, steps),
    [CF_SECONDS] = CFG_ROW_NUM("seconds", UNITS_SECONDS, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, conf_in,
                               seconds),
    [CF_TRACES] = CFG_ROW_INT("traces", 0, 2, CFG_B_GE, 1, CFG_B_LE, 256, conf_in, traces),
    [CF_EPISODES] = CFG_ROW_INT("episodes", 0, 4, CFG_B_GE, 2, CFG_B_LE, 256, conf_in, episodes),
    [CF_VALID] = CFG_ROW_INT("valid", 0, 2, CFG_B_GE, 0, CFG_B_LE, 256, conf_in, valid),
    [CF_VALID_LOAD] = CFG_ROW_NUM("valid_load", UNITS_NUMBER, 0, 0.7, CFG_B_GT, 0, CFG_B_LE, 100,
                                  conf_in, valid_load),
    [CF_EVAL_EVERY] = CFG_ROW_INT("eval_every", 0, 20, CFG_B_GE, 1, CFG_B_NONE, 0, conf_in,
                                  eval_every),
    [CF_OUT] = CFG_ROW_TEXT("out", 1, conf_in, out),
};

static void dir_of(const char *path, char *out, size_t n) {
    const char *sl = strrchr(path, '/');
    if (!sl)
        snprintf(out, n, ".");
    else
        snprintf(out, n, "%.*s", (int)(sl - path), path);
}

static void join(char *out, size_t n, const char *dir, const char *f) {
    if (f[0] == '/')
        snprintf(out, n, "%.1000s", f);
    else
        snprintf(out, n, "%.500s/%.500s", dir, f);
}

int spt_conf_is(const char *path) {
    char err[512];
    cfg_doc *doc = cfg_doc_load(path, err, sizeof err);
    if (!doc) return 0;
    int is = 0;
    yaml_node_t *root = cfg_doc_root(doc);
    if (root && root->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
             p < root->data.mapping.pairs.top; p++) {
            yaml_node_t *k = cfg_doc_node(doc, p->key), *v = cfg_doc_node(doc, p->value);
            if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
                !strcmp((const char *)k->data.scalar.value, "mode"))
                is = !strcmp((const char *)v->data.scalar.value, "sim");
        }
    }
    cfg_doc_free(doc);
    return is;
}

void spt_conf_free(spt_conf *c) {
    if (!c) return;
    free(c->text);
    free(c);
}

spt_conf *spt_conf_load(const char *path, char *err, size_t errlen) {
    spt_conf *c = calloc(1, sizeof *c);
    conf_in in;
    memset(&in, 0, sizeof in);
    cfg_doc *doc = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    if (!(doc = cfg_doc_load(path, err, errlen))) goto fail;
    yaml_node_t *root = cfg_doc_root(doc), *k[N_CF], *v[N_CF];
    if (!root) {
        cfg_doc_fail(doc, NULL, "mode", err, errlen, "missing required key (the file is empty)");
        goto fail;
    }
    if (cfg_doc_walk(doc, root, "", "a mapping of top-level keys (a sim train config)",
                     CONF_FIELDS, N_CF, &in, k, v, err, errlen))
        goto fail;
    char dir[SIM_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    join(c->cluster, sizeof c->cluster, dir, in.cluster);
    yaml_node_t *ml = v[CF_MODELS];
    int n = (int)(ml->data.sequence.items.top - ml->data.sequence.items.start);
    if (n < 1 || n > SIM_MAX_MODELS) {
        cfg_doc_fail(doc, ml, "models", err, errlen, "must list from 1 to %d model files, got %d",
                     SIM_MAX_MODELS, n);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        yaml_node_t *item = cfg_doc_node(doc, ml->data.sequence.items.start[i]);
        char kp[64], text[CFG_TEXT_MAX];
        snprintf(kp, sizeof kp, "models[%d]", i);
        static const cfg_field MF = {"model", CFG_FT_TEXT, UNITS_NUMBER, 1, 0, CFG_B_NONE, 0,
                                     CFG_B_NONE, 0, 0, NULL};
        if (cfg_doc_value(doc, &MF, item, kp, text, err, errlen)) goto fail;
        join(c->gen.models[i], sizeof c->gen.models[i], dir, text);
    }
    c->gen.n_models = n;
    c->gen.jobs = in.jobs;
    c->gen.arrivals = in.arrivals ? SIM_ARRIVE_BURSTY : SIM_ARRIVE_POISSON;
    c->gen.deadline_factor = in.deadline_factor;
    c->gen.seed = (uint64_t)in.seed;
    c->load_lo = in.load[0];
    c->load_hi = in.load[1];
    if (sim_weights_load(doc, v[CF_OBJECTIVE], "objective", &c->w, err, errlen)) goto fail;
    c->hidden = in.hidden;
    c->lr = in.lr;
    c->entropy = in.entropy;
    c->grad_clip = in.grad_clip;
    c->steps = in.steps;
    c->seconds = in.seconds;
    c->traces = in.traces;
    c->episodes = in.episodes;
    c->valid = in.valid;
    c->valid_load = in.valid_load;
    c->eval_every = in.eval_every;
    join(c->out, sizeof c->out, dir, in.out);
    /* the text, kept in the checkpoints */
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (len >= 0 && len < (1L << 20) && (c->text = malloc((size_t)len + 1))) {
            size_t got = fread(c->text, 1, (size_t)len, f);
            c->text[got] = '\0';
        }
        fclose(f);
    }
    cfg_doc_free(doc);
    return c;
fail:
    cfg_doc_free(doc);
    spt_conf_free(c);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * The trainer
 * ------------------------------------------------------------------------ */

struct spt {
    const spt_conf *cf;
    spol_net *net;
    const sim_method *pm;
    int n_ep;              /* traces x episodes */
    spol_episode **ep;     /* [n_ep] */
    double **adv;          /* [n_ep][decisions] */
    sim_trace **valid;     /* [cf->valid] */
    double valid_heur[4];  /* each heuristic's objective summed over the validation traces */
    float *logits, *work, *dlogits, *probs, *logp, *dlogp;
    size_t cap_rows;
    int step;
    double t0, episodes, best_valid;
    spt_metrics last;
    FILE *csv;
};

static const char *HEURISTICS[4] = {"fcfs", "exact-wait", "smd", "gavel"};

void spt_free(spt *t) {
    if (!t) return;
    spol_net_free(t->net);
    for (int e = 0; e < t->n_ep; e++) {
        if (t->ep) spol_episode_free(t->ep[e]);
        if (t->adv) free(t->adv[e]);
    }
    free(t->ep);
    free(t->adv);
    for (int i = 0; t->valid && i < t->cf->valid; i++) sim_trace_free(t->valid[i]);
    free(t->valid);
    free(t->logits);
    free(t->work);
    free(t->dlogits);
    free(t->probs);
    free(t->logp);
    free(t->dlogp);
    if (t->csv) fclose(t->csv);
    free(t);
}

/* play runs method m on trace tr (run: the policy's argument) and returns
 * the simulator (caller frees), or NULL with err. */
static sim *play(const sim_trace *tr, const sim_method *m, spol_run *run, char *err,
                 size_t errlen) {
    sim *s = sim_create_with(tr, &tr->models[0].run->cluster, m, run, err, errlen);
    if (!s) return NULL;
    if (sim_run(s, err, errlen)) {
        sim_free(s);
        return NULL;
    }
    return s;
}

spt *spt_create(const spt_conf *cf, char *err, size_t errlen) {
    spt *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->cf = cf;
    t->pm = sim_method_find("policy");
    if (!(t->net = spol_net_create(cf->hidden, (uint64_t)cf->gen.seed, err, errlen))) goto fail;
    t->n_ep = cf->traces * cf->episodes;
    t->ep = calloc((size_t)t->n_ep, sizeof *t->ep);
    t->adv = calloc((size_t)t->n_ep, sizeof *t->adv);
    t->valid = calloc((size_t)(cf->valid ? cf->valid : 1), sizeof *t->valid);
    if (!t->ep || !t->adv || !t->valid) goto oom;
    for (int e = 0; e < t->n_ep; e++)
        if (!(t->ep[e] = spol_episode_create())) goto oom;
    if (eval_mkdirs(cf->out) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", cf->out, strerror(errno));
        goto fail;
    }
    /* validation traces and the heuristics on them */
    for (int i = 0; i < cf->valid; i++) {
        sim_gen_opts g = cf->gen;
        g.seed = VALID_SEED + (uint64_t)i;
        g.load = cf->valid_load;
        if (!(t->valid[i] = sim_trace_generate(&g, cf->cluster, ".", err, errlen))) goto fail;
        for (int h = 0; h < 4; h++) {
            sim *s = play(t->valid[i], sim_method_find(HEURISTICS[h]), NULL, err, errlen);
            if (!s) goto fail;
            t->valid_heur[h] += sim_objective(s, &cf->w, 0);
            sim_free(s);
        }
    }
    char path[SIM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.csv", cf->out);
    if (!(t->csv = fopen(path, "w"))) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto fail;
    }
    fprintf(t->csv, "step,seconds,episodes,train_objective,entropy,decisions_per_episode,"
                    "valid_objective,valid_best_heuristic\n");
    t->best_valid = INFINITY;
    t->t0 = clock_now_s();
    t->last.valid_obj = NAN;
    return t;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    spt_free(t);
    return NULL;
}

static int grow(spt *t, size_t rows) {
    if (rows <= t->cap_rows) return 0;
    size_t cap = t->cap_rows ? t->cap_rows : 4096;
    while (cap < rows) cap *= 2;
    float *a = realloc(t->logits, sizeof(float) * cap);
    if (a) t->logits = a;
    float *b = realloc(t->dlogits, sizeof(float) * cap);
    if (b) t->dlogits = b;
    float *c = realloc(t->probs, sizeof(float) * cap);
    if (c) t->probs = c;
    float *d = realloc(t->logp, sizeof(float) * cap);
    if (d) t->logp = d;
    float *l = realloc(t->dlogp, sizeof(float) * cap);
    if (l) t->dlogp = l;
    float *w = realloc(t->work, sizeof(float) * spol_work_size((int)cap, t->cf->hidden));
    if (w) t->work = w;
    if (!a || !b || !c || !d || !l || !w) return -1;
    t->cap_rows = cap;
    return 0;
}

int spt_step(spt *t, char *err, size_t errlen) {
    const spt_conf *cf = t->cf;
    int E = cf->episodes;
    sim **sims = calloc((size_t)E, sizeof *sims);
    if (!sims) goto oom;
    double obj_sum = 0, dec_sum = 0;
    for (int g = 0; g < cf->traces; g++) {
        /* the trace: its own seed, a load drawn from the range */
        uint64_t st = (uint64_t)cf->gen.seed * 1000003u + (uint64_t)t->step * 131u + (uint64_t)g;
        sim_gen_opts o = cf->gen;
        o.seed = TRAIN_SEED + splitmix64_next(&st) % 1000000u;
        o.load = cf->load_lo + (cf->load_hi - cf->load_lo) * splitmix64_unit(&st);
        sim_trace *tr = sim_trace_generate(&o, cf->cluster, ".", err, errlen);
        if (!tr) goto fail;
        int ok = 1;
        for (int e = 0; e < E && ok; e++) {
            spol_episode *ep = t->ep[g * E + e];
            spol_episode_clear(ep);
            spol_run run = {t->net, 1, {0, 0, 0}, ep};
            rng_init(&run.rng, (uint64_t)cf->gen.seed);
            run.rng.stream = ((uint64_t)t->step << 20) | (uint64_t)(g * E + e);
            if (!(sims[e] = play(tr, t->pm, &run, err, errlen))) ok = 0;
        }
        if (ok) {
            for (int e = 0; e < E; e++) {
                spol_episode *ep = t->ep[g * E + e];
                double *a = realloc(t->adv[g * E + e], sizeof *a * (size_t)(ep->n ? ep->n : 1));
                if (!a) {
                    ok = 0;
                    snprintf(err, errlen, "out of memory");
                    break;
                }
                t->adv[g * E + e] = a;
                obj_sum += sim_objective(sims[e], &cf->w, 0);
                dec_sum += ep->n;
                for (int k = 0; k < ep->n; k++) {
                    double tk = ep->d[k].time, b = 0;
                    for (int f = 0; f < E; f++)
                        if (f != e) b += sim_objective(sims[f], &cf->w, tk);
                    b /= E - 1;
                    /* returns are minus the cost-to-go: adv = b - own */
                    a[k] = b - sim_objective(sims[e], &cf->w, tk);
                }
            }
        }
        for (int e = 0; e < E; e++) {
            sim_free(sims[e]);
            sims[e] = NULL;
        }
        sim_trace_free(tr);
        if (!ok) goto fail;
    }
    /* normalise the advantages over the batch */
    double s1 = 0, s2 = 0, cnt = 0;
    for (int e = 0; e < t->n_ep; e++)
        for (int k = 0; k < t->ep[e]->n; k++) {
            s1 += t->adv[e][k];
            s2 += t->adv[e][k] * t->adv[e][k];
            cnt++;
        }
    double sd = cnt > 1 ? sqrt(fmax(s2 / cnt - (s1 / cnt) * (s1 / cnt), 0)) : 1;
    nn_params *p = spol_net_params(t->net);
    nn_params_zero_grad(p);
    double ent_sum = 0;
    for (int e = 0; e < t->n_ep; e++) {
        spol_episode *ep = t->ep[e];
        if (ep->n == 0) continue;
        if (grow(t, ep->rows)) goto oom;
        spol_forward(t->logits, t->work, t->net, ep->x, (int)ep->rows);
        memset(t->dlogits, 0, sizeof(float) * ep->rows);
        for (int k = 0; k < ep->n; k++) {
            const spol_decision *d = &ep->d[k];
            float *lg = t->logits + d->row, *pr = t->probs + d->row, *lp = t->logp + d->row;
            float *g = t->dlogp + d->row, *dl = t->dlogits + d->row;
            float ent, dent = 0, adv = (float)(t->adv[e][k] / (sd + 1e-8));
            nn_softmax_forward(pr, lp, &ent, lg, NULL, 1, d->n);
            ent_sum += ent;
            memset(g, 0, sizeof(float) * (size_t)d->n);
            nn_pg_loss_backward(g, &dent, &d->chosen, &adv, (float)cf->entropy,
                                (float)(1.0 / cnt), 1, d->n);
            nn_softmax_backward(dl, g, &dent, pr, lp, &ent, NULL, 1, d->n);
        }
        spol_backward(t->net, t->dlogits, t->work, ep->x, (int)ep->rows);
    }
    if (cf->grad_clip > 0) nn_clip_grad_norm(p, cf->grad_clip);
    nn_adam_cfg ac = {cf->lr, 0.9, 0.999, 1e-8, 0};
    t->step++;
    nn_adam_step(p, &ac, t->step);
    t->episodes += t->n_ep;
    free(sims);
    t->last.step = t->step;
    t->last.seconds = clock_now_s() - t->t0;
    t->last.episodes = t->episodes;
    t->last.train_obj = obj_sum / t->n_ep;
    t->last.entropy = cnt > 0 ? ent_sum / cnt : NAN;
    t->last.decisions = dec_sum / t->n_ep;
    t->last.valid_obj = NAN;
    if (cf->eval_every > 0 && t->step % cf->eval_every == 0 && spt_validate(t, err, errlen))
        return -1;
    fprintf(t->csv, "%d,%.3f,%.0f,%.6g,%.6g,%.1f,", t->step, t->last.seconds, t->episodes,
            t->last.train_obj, t->last.entropy, t->last.decisions);
    if (isfinite(t->last.valid_obj))
        fprintf(t->csv, "%.6g,%.6g\n", t->last.valid_obj, t->last.valid_best_h);
    else
        fprintf(t->csv, ",\n");
    fflush(t->csv);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    if (sims)
        for (int e = 0; e < E; e++) sim_free(sims[e]);
    free(sims);
    return -1;
}

int spt_validate(spt *t, char *err, size_t errlen) {
    const spt_conf *cf = t->cf;
    double sum = 0, best_h = INFINITY;
    for (int h = 0; h < 4; h++) best_h = fmin(best_h, t->valid_heur[h]);
    for (int i = 0; i < cf->valid; i++) {
        spol_run run = {t->net, 0, {0, 0, 0}, NULL};
        sim *s = play(t->valid[i], t->pm, &run, err, errlen);
        if (!s) return -1;
        sum += sim_objective(s, &cf->w, 0);
        sim_free(s);
    }
    t->last.valid_obj = cf->valid ? sum : NAN;
    t->last.valid_best_h = cf->valid ? best_h : NAN;
    spol_meta m = {t->step, (int)cf->gen.seed, t->episodes, clock_now_s() - t->t0, cf->text};
    char path[SIM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/last.h5", cf->out);
    if (spol_save(path, t->net, &m, err, errlen)) return -1;
    if (cf->valid && sum < t->best_valid) {
        t->best_valid = sum;
        snprintf(path, sizeof path, "%s/best.h5", cf->out);
        if (spol_save(path, t->net, &m, err, errlen)) return -1;
    }
    return 0;
}

const spt_metrics *spt_last(const spt *t) { return &t->last; }
int spt_done(const spt *t) { return t->step >= t->cf->steps; }
