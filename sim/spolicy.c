/* spolicy.c -- the learned policy of strata simulate: candidates and their
 * features, the scoring MLP, the "policy" sim method, checkpoints (see
 * spolicy.h and docs/simulate.md).
 */
#include "sim/spolicy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/ckpt.h"
#include "nets/layers.h"
#include "solvers/solve.h"

#define F SPOL_FEATURES

/* ---------------------------------------------------------------------------
 * Candidates
 * ------------------------------------------------------------------------ */

spol_cands *spol_cands_create(int layers, int n_types) {
    spol_cands *cs = calloc(1, sizeof *cs);
    if (!cs) return NULL;
    if (layers < 1) layers = 1;
    cs->layers = layers;
    cs->cap = SPOL_WINDOW * (2 + 2 * n_types) + 1;
    cs->c = calloc((size_t)cs->cap, sizeof *cs->c);
    cs->plan = model_plan_create(layers);
    if (!cs->c || !cs->plan) goto oom;
    for (int i = 0; i < cs->cap; i++)
        if (!(cs->c[i].assign = malloc(sizeof(int) * (size_t)layers))) goto oom;
    for (int q = 0; q < SPOL_WINDOW; q++)
        if (!(cs->free_assign[q] = malloc(sizeof(int) * (size_t)layers))) goto oom;
    return cs;
oom:
    spol_cands_free(cs);
    return NULL;
}

void spol_cands_free(spol_cands *cs) {
    if (!cs) return;
    if (cs->c)
        for (int i = 0; i < cs->cap; i++) free(cs->c[i].assign);
    for (int q = 0; q < SPOL_WINDOW; q++) free(cs->free_assign[q]);
    free(cs->c);
    model_plan_free(cs->plan);
    free(cs);
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* add_cand scores job j's plan `assign` provisioned for `target` and adds
 * it when it is feasible, fits the free units and is not already there
 * (then only its kind flag is added). Fills the job features; the cluster
 * features come later. */
static void add_cand(spol_cands *cs, const spol_view *v, const spol_job_view *jv, int j,
                     int kind, int type, const int *assign, double target) {
    if (cs->n >= cs->cap - 1) return; /* the last slot is wait's */
    const model_cluster *full = v->full, *fr = v->freec;
    const model_plan *empty = jv->empty;
    model_job job = *jv->job;
    if (target > job.min_throughput) job.min_throughput = target;
    model_plan *p = cs->plan;
    if (model_eval(&job, full, assign, p) != MODEL_FEASIBLE) return;
    int units[MODEL_MAX_TYPES] = {0};
    for (int k = 0; k < p->n_stages; k++) units[p->stages[k].type] += p->stages[k].units;
    for (int ty = 0; ty < full->n_types; ty++)
        if (units[ty] > fr->types[ty].count) return;
    for (int i = 0; i < cs->n; i++) {
        spol_cand *o = &cs->c[i];
        if (o->job == j && o->throughput == p->throughput &&
            !memcmp(o->units, units, sizeof(int) * (size_t)full->n_types)) {
            o->x[kind] = 1;
            return;
        }
    }
    spol_cand *c = &cs->c[cs->n++];
    c->job = j;
    c->qpos = jv->qpos;
    c->kind = kind;
    c->type = type;
    c->target = job.min_throughput;
    memcpy(c->assign, assign, sizeof(int) * (size_t)job.n_layers);
    memcpy(c->units, units, sizeof units);
    c->time = p->time;
    c->cost = p->cost;
    c->unit_price = p->unit_price;
    c->throughput = p->throughput;
    memset(c->x, 0, sizeof c->x);
    c->x[kind] = 1;
    c->x[4] = (float)(job.min_throughput / jv->job->min_throughput - 1.0);
    long taken = 0, free_all = 0;
    double maxshare = 0, share = 0;
    for (int ty = 0; ty < full->n_types; ty++) {
        taken += units[ty];
        free_all += fr->types[ty].count;
        if (units[ty] > 0) {
            double f = (double)units[ty] / fr->types[ty].count;
            if (f > maxshare) maxshare = f;
            share += (double)units[ty] / full->types[ty].count;
        }
    }
    c->x[5] = (float)(log2(1.0 + (double)taken) / 4.0);
    c->x[6] = (float)(free_all > 0 ? (double)taken / (double)free_all : 1.0);
    c->x[7] = (float)maxshare;
    c->x[8] = (float)share;
    /* per sample: cost / theta * price, time ~ 1 / theta (samples cancel) */
    c->x[9] = (float)clampd(log((p->unit_price / p->throughput) /
                                (empty->unit_price / empty->throughput)), -5, 5);
    c->x[10] = (float)clampd(log(empty->throughput / p->throughput), -5, 5);
    c->x[11] = (float)clampd(p->time / 3600.0 / 24.0, 0, 20);
    c->x[12] = (float)log1p((v->now - jv->arrival) / 3600.0);
    c->x[13] = (float)(log1p((double)jv->qpos) / log1p((double)SPOL_SCAN));
    if (jv->deadline > 0) {
        c->x[14] = 1;
        c->x[15] = (float)clampd((jv->arrival + jv->deadline - v->now - p->time) / p->time, -3, 3);
    }
}

int spol_candidates_of(const spol_view *v, const spol_job_view *jobs, int n, spol_cands *cs,
                       char *err, size_t errlen) {
    cs->n = 0;
    const model_cluster *full = v->full, *fr = v->freec;
    int *one = cs->c[cs->cap - 1].assign; /* wait's slot as scratch */
    for (int q = 0; q < n && q < SPOL_WINDOW; q++) {
        const spol_job_view *jv = &jobs[q];
        const model_job *job = jv->job;
        if (job->n_layers > cs->layers) {
            snprintf(err, errlen, "policy: job %s has %d layers, more than %d", job->name,
                     job->n_layers, cs->layers);
            return -1;
        }
        if (!jv->empty) continue;
        if (jv->exact_free)
            add_cand(cs, v, jv, q, SPOL_EXACT_FREE, -1, jv->exact_free, job->min_throughput);
        add_cand(cs, v, jv, q, SPOL_EXACT_EMPTY, -1, jv->exact_empty, job->min_throughput);
        for (int ty = 0; ty < full->n_types; ty++) {
            if (fr->types[ty].count == 0) continue;
            for (int l = 0; l < job->n_layers; l++) one[l] = ty;
            add_cand(cs, v, jv, q, SPOL_ONE_TYPE, ty, one, job->min_throughput);
            add_cand(cs, v, jv, q, SPOL_ONE_TYPE, ty, one, 2 * job->min_throughput);
        }
    }
    if (cs->n == 0) return 0;
    if (v->n_running > 0) {
        spol_cand *c = &cs->c[cs->n++];
        c->job = -1;
        c->qpos = -1;
        c->kind = SPOL_WAIT;
        c->type = -1;
        c->target = 0;
        memset(c->units, 0, sizeof c->units);
        c->time = c->cost = c->unit_price = c->throughput = 0;
        memset(c->x, 0, sizeof c->x);
        c->x[0] = 1;
    }
    /* cluster features, the same on every row */
    long all = 0, free_all = 0;
    for (int ty = 0; ty < full->n_types; ty++) {
        all += full->types[ty].count;
        free_all += fr->types[ty].count;
    }
    float x16 = (float)(all > 0 ? (double)free_all / (double)all : 0);
    float x17 = (float)(log1p((double)v->queue_len) / 3.0);
    float x18 = (float)log1p((double)v->queue_demand / (1.0 + (double)free_all));
    float x19 = (float)(log1p((double)v->n_running) / 3.0);
    for (int i = 0; i < cs->n; i++) {
        cs->c[i].x[16] = x16;
        cs->c[i].x[17] = x17;
        cs->c[i].x[18] = x18;
        cs->c[i].x[19] = x19;
    }
    return cs->n;
}

int spol_candidates(sim *s, spol_cands *cs, char *err, size_t errlen) {
    spol_view v = {sim_full(s), sim_free_units(s), sim_now(s), sim_queue_len(s), 0,
                   sim_n_running(s)};
    for (int q = 0; q < v.queue_len; q++) {
        const model_plan *p = sim_empty_plan(s, sim_queue_at(s, q), NULL);
        if (p)
            for (int k = 0; k < p->n_stages; k++) v.queue_demand += p->stages[k].units;
    }
    /* the head, then the shortest of the next ones up to SPOL_SCAN */
    int pos[SPOL_WINDOW], w = 0;
    for (; w < SPOL_HEAD && w < v.queue_len; w++) pos[w] = w;
    int scan = v.queue_len < SPOL_SCAN ? v.queue_len : SPOL_SCAN;
    for (int k = 0; k < SPOL_SHORT; k++) {
        int best = -1;
        double bd = 0;
        for (int q = SPOL_HEAD; q < scan; q++) {
            int taken = 0;
            for (int i = SPOL_HEAD; i < w; i++) taken |= pos[i] == q;
            if (taken) continue;
            const model_job *jb = sim_job_of(s, sim_queue_at(s, q));
            double d = jb->samples / jb->min_throughput;
            if (best < 0 || d < bd) {
                best = q;
                bd = d;
            }
        }
        if (best < 0) break;
        pos[w++] = best;
    }
    spol_job_view jv[SPOL_WINDOW];
    /* the exact plans on the free units, copied: the simulator's buffer is
     * reused by the next call */
    for (int q = 0; q < w; q++) {
        int j = sim_queue_at(s, pos[q]);
        const sim_job *tj = &sim_get_trace(s)->jobs[j];
        jv[q].job = sim_job_of(s, j);
        jv[q].arrival = tj->arrival;
        jv[q].deadline = tj->deadline;
        jv[q].qpos = pos[q];
        jv[q].empty = sim_empty_plan(s, j, &jv[q].exact_empty);
        jv[q].exact_free = NULL;
        if (!jv[q].empty) continue;
        if (jv[q].job->n_layers > cs->layers) continue; /* reported by spol_candidates_of */
        const int *as;
        int rc = sim_plan_free_now(s, j, &as, err, errlen);
        if (rc < 0) return -1;
        if (rc == 0) {
            memcpy(cs->free_assign[q], as, sizeof(int) * (size_t)jv[q].job->n_layers);
            jv[q].exact_free = cs->free_assign[q];
        }
    }
    int n = spol_candidates_of(&v, jv, w, cs, err, errlen);
    /* job indices: the window's to the trace's */
    for (int i = 0; i < n; i++)
        if (cs->c[i].job >= 0) cs->c[i].job = sim_queue_at(s, pos[cs->c[i].job]);
    return n;
}

/* ---------------------------------------------------------------------------
 * The network
 * ------------------------------------------------------------------------ */

enum { T_W1, T_B1, T_W2, T_B2, T_W3, T_B3 };

struct spol_net {
    int h;
    nn_params *p;
};

void spol_table(int h, nn_tensor_spec *t) {
    t[T_W1] = nn_spec("mlp", "w1", NN_INIT_XAVIER, 1.0f, 0, h, F, 0, 0);
    t[T_B1] = nn_spec("mlp", "b1", NN_INIT_ZEROS, 0, 1, h, 0, 0, 0);
    t[T_W2] = nn_spec("mlp", "w2", NN_INIT_XAVIER, 1.0f, 0, h, h, 0, 0);
    t[T_B2] = nn_spec("mlp", "b2", NN_INIT_ZEROS, 0, 1, h, 0, 0, 0);
    t[T_W3] = nn_spec("mlp", "w3", NN_INIT_XAVIER, 0.1f, 0, 1, h, 0, 0);
    t[T_B3] = nn_spec("mlp", "b3", NN_INIT_ZEROS, 0, 1, 1, 0, 0, 0);
}

static spol_net *net_new(int h, char *err, size_t errlen) {
    if (h < 1 || h > SPOL_HIDDEN_MAX) {
        snprintf(err, errlen, "hidden = %d is outside [1, %d]", h, SPOL_HIDDEN_MAX);
        return NULL;
    }
    spol_net *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    n->h = h;
    nn_tensor_spec t[SPOL_N_TENSORS];
    spol_table(h, t);
    if (!(n->p = nn_params_create(t, SPOL_N_TENSORS, err, errlen))) {
        free(n);
        return NULL;
    }
    return n;
}

spol_net *spol_net_create(int h, uint64_t seed, char *err, size_t errlen) {
    spol_net *n = net_new(h, err, errlen);
    if (n) nn_params_init(n->p, seed);
    return n;
}

void spol_net_free(spol_net *n) {
    if (!n) return;
    nn_params_free(n->p);
    free(n);
}

nn_params *spol_net_params(spol_net *n) { return n->p; }
int spol_net_hidden(const spol_net *n) { return n->h; }

size_t spol_work_size(int n, int h) { return (size_t)4 * (size_t)n * (size_t)h; }

void spol_forward(float *logits, float *work, const spol_net *net, const float *x, int n) {
    int h = net->h;
    const nn_params *p = net->p;
    float *h1 = work, *h2 = work + (size_t)n * h;
    nn_dense_forward(h1, x, nn_param(p, T_W1), nn_param(p, T_B1), n, F, h);
    nn_tanh_forward(h1, h1, (size_t)n * h);
    nn_dense_forward(h2, h1, nn_param(p, T_W2), nn_param(p, T_B2), n, h, h);
    nn_tanh_forward(h2, h2, (size_t)n * h);
    nn_dense_forward(logits, h2, nn_param(p, T_W3), nn_param(p, T_B3), n, h, 1);
}

void spol_backward(spol_net *net, const float *dlogits, float *work, const float *x, int n) {
    int h = net->h;
    nn_params *p = net->p;
    size_t nh = (size_t)n * h;
    float *h1 = work, *h2 = work + nh, *ga = work + 2 * nh, *gb = work + 3 * nh;
    /* backward functions accumulate: every gradient buffer is zeroed first,
     * and no kernel reads and writes the same one */
    memset(ga, 0, sizeof *ga * nh);
    nn_dense_backward(ga, nn_grad(p, T_W3), nn_grad(p, T_B3), dlogits, h2, nn_param(p, T_W3), n,
                      h, 1); /* ga = dL/dh2 */
    memset(gb, 0, sizeof *gb * nh);
    nn_tanh_backward(gb, h2, ga, nh); /* gb = dL/d(pre-tanh 2) */
    memset(ga, 0, sizeof *ga * nh);
    nn_dense_backward(ga, nn_grad(p, T_W2), nn_grad(p, T_B2), gb, h1, nn_param(p, T_W2), n, h,
                      h); /* ga = dL/dh1 */
    memset(gb, 0, sizeof *gb * nh);
    nn_tanh_backward(gb, h1, ga, nh); /* gb = dL/d(pre-tanh 1) */
    nn_dense_backward(NULL, nn_grad(p, T_W1), nn_grad(p, T_B1), gb, x, nn_param(p, T_W1), n, F, h);
}

/* ---------------------------------------------------------------------------
 * Episodes
 * ------------------------------------------------------------------------ */

spol_episode *spol_episode_create(void) { return calloc(1, sizeof(spol_episode)); }

void spol_episode_free(spol_episode *e) {
    if (!e) return;
    free(e->d);
    free(e->x);
    free(e);
}

void spol_episode_clear(spol_episode *e) {
    e->n = 0;
    e->rows = 0;
}

/* record appends a decision over cs; returns 0 or -1 (out of memory). */
static int record(spol_episode *e, const spol_cands *cs, int chosen, double now) {
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 256;
        spol_decision *g = realloc(e->d, sizeof *g * (size_t)cap);
        if (!g) return -1;
        e->d = g;
        e->cap = cap;
    }
    if (e->rows + (size_t)cs->n > e->cap_rows) {
        size_t cap = e->cap_rows ? 2 * e->cap_rows : 4096;
        while (cap < e->rows + (size_t)cs->n) cap *= 2;
        float *g = realloc(e->x, sizeof *g * F * cap);
        if (!g) return -1;
        e->x = g;
        e->cap_rows = cap;
    }
    e->d[e->n] = (spol_decision){cs->n, chosen, now, e->rows};
    for (int i = 0; i < cs->n; i++) memcpy(e->x + (e->rows + (size_t)i) * F, cs->c[i].x, sizeof(float) * F);
    e->rows += (size_t)cs->n;
    e->n++;
    return 0;
}

/* ---------------------------------------------------------------------------
 * The sim method
 * ------------------------------------------------------------------------ */

int spol_greedy(const float *logits, float *probs, float *logp, const spol_cands *cs, int n) {
    float ent;
    nn_softmax_forward(probs, logp, &ent, logits, NULL, 1, n);
    int w = -1, best = -1;
    for (int i = 0; i < n; i++) {
        if (cs->c[i].job < 0)
            w = i;
        else if (best < 0 || logits[i] > logits[best])
            best = i;
    }
    if (w >= 0 && (best < 0 || probs[w] > 0.5f)) return w;
    return best;
}

typedef struct {
    spol_run *run;
    spol_cands *cs;
    float *x, *logits, *probs, *logp, *work;
    int cap;
} mstate;

void spol_method_destroy(void *state) {
    mstate *st = state;
    if (!st) return;
    spol_cands_free(st->cs);
    free(st->x);
    free(st->logits);
    free(st->probs);
    free(st->logp);
    free(st->work);
    free(st);
}

int spol_method_create(sim *s, void **state, char *err, size_t errlen) {
    spol_run *run = sim_method_arg(s);
    if (!run || !run->net) {
        snprintf(err, errlen, "the policy method needs a trained checkpoint (--policy CKPT, or "
                              "policy: in the config)");
        return -1;
    }
    mstate *st = calloc(1, sizeof *st);
    int layers = 1;
    const sim_trace *t = sim_get_trace(s);
    for (int j = 0; j < t->n_jobs; j++)
        if (sim_job_of(s, j)->n_layers > layers) layers = sim_job_of(s, j)->n_layers;
    if (!st || !(st->cs = spol_cands_create(layers, sim_full(s)->n_types))) goto oom;
    st->run = run;
    st->cap = st->cs->cap;
    int h = run->net->h;
    st->x = malloc(sizeof(float) * F * (size_t)st->cap);
    st->logits = malloc(sizeof(float) * (size_t)st->cap);
    st->probs = malloc(sizeof(float) * (size_t)st->cap);
    st->logp = malloc(sizeof(float) * (size_t)st->cap);
    st->work = malloc(sizeof(float) * spol_work_size(st->cap, h));
    if (!st->x || !st->logits || !st->probs || !st->logp || !st->work) goto oom;
    *state = st;
    return 0;
oom:
    spol_method_destroy(st);
    snprintf(err, errlen, "out of memory");
    return -1;
}

int spol_method_schedule(sim *s, void *state, char *err, size_t errlen) {
    mstate *st = state;
    spol_run *run = st->run;
    for (;;) {
        int n = spol_candidates(s, st->cs, err, errlen);
        if (n < 0) return -1;
        if (n == 0) return 0;
        for (int i = 0; i < n; i++) memcpy(st->x + (size_t)i * F, st->cs->c[i].x, sizeof(float) * F);
        spol_forward(st->logits, st->work, run->net, st->x, n);
        int a;
        if (run->sample) {
            float ent;
            nn_softmax_forward(st->probs, st->logp, &ent, st->logits, NULL, 1, n);
            nn_sample(&a, st->probs, NULL, 1, n, &run->rng);
        } else {
            a = spol_greedy(st->logits, st->probs, st->logp, st->cs, n);
        }
        if (a < 0) a = 0;
        if (run->rec && record(run->rec, st->cs, a, sim_now(s))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        const spol_cand *c = &st->cs->c[a];
        if (c->job < 0) return 0; /* wait */
        int rc = sim_start(s, c->job, c->assign, c->target);
        if (rc) {
            snprintf(err, errlen, "policy: job %s: its plan could not start (%s)",
                     sim_job_of(s, c->job)->name, rc == -2 ? "out of memory" : "units taken");
            return -1;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Checkpoints
 * ------------------------------------------------------------------------ */

int spol_save(const char *path, const spol_net *n, const spol_meta *m, char *err, size_t errlen) {
    ckpt_kv kv[10];
    int k = 0;
    kv[k++] = (ckpt_kv){"sim_format", CKPT_KV_STR, 0, 0, SPOL_CKPT_FORMAT};
    kv[k++] = (ckpt_kv){"sim_version", CKPT_KV_INT, SPOL_CKPT_VERSION, 0, NULL};
    kv[k++] = (ckpt_kv){"sim_features_version", CKPT_KV_INT, SPOL_FEATURES_VERSION, 0, NULL};
    kv[k++] = (ckpt_kv){"features", CKPT_KV_INT, F, 0, NULL};
    kv[k++] = (ckpt_kv){"hidden", CKPT_KV_INT, n->h, 0, NULL};
    kv[k++] = (ckpt_kv){"window", CKPT_KV_INT, SPOL_WINDOW, 0, NULL};
    kv[k++] = (ckpt_kv){"seed", CKPT_KV_INT, m->seed, 0, NULL};
    kv[k++] = (ckpt_kv){"episodes", CKPT_KV_REAL, 0, m->episodes, NULL};
    kv[k++] = (ckpt_kv){"time_s", CKPT_KV_REAL, 0, m->seconds, NULL};
    ckpt_meta meta = {m->step, {(uint64_t)m->seed, 0, (uint64_t)m->step}, SPOL_FEATURES_VERSION,
                      m->config_yaml, kv, k};
    return ckpt_save(path, n->p, &meta, err, errlen) == CKPT_OK ? 0 : -1;
}

/* want_int checks that hparam key is an integer equal to `want` (or, when
 * want < 0, in [1, -want]); 0 or -1 with a message. */
static int want_int(const char *path, const ckpt_info *in, const char *key, long want, long *out,
                    char *err, size_t errlen) {
    const ckpt_kv *kv = ckpt_info_hparam(in, key);
    if (!kv || kv->type != CKPT_KV_INT) {
        snprintf(err, errlen, "%s: hyperparameter %s is missing from /meta/hparams or not an "
                              "integer; not a complete sim policy checkpoint",
                 path, key);
        return -1;
    }
    if ((want >= 0 && kv->i != want) || (want < 0 && (kv->i < 1 || kv->i > -want))) {
        if (want >= 0)
            snprintf(err, errlen, "%s: hyperparameter %s = %lld, this build needs %ld; retrain the "
                                  "policy",
                     path, key, (long long)kv->i, want);
        else
            snprintf(err, errlen, "%s: hyperparameter %s = %lld is outside [1, %ld]; the file is "
                                  "damaged or edited",
                     path, key, (long long)kv->i, -want);
        return -1;
    }
    if (out) *out = (long)kv->i;
    return 0;
}

spol_net *spol_load(const char *path, int64_t *step, char *err, size_t errlen) {
    ckpt_info in;
    memset(&in, 0, sizeof in);
    if (ckpt_load(path, NULL, &in, err, errlen) != CKPT_OK) return NULL;
    spol_net *n = NULL;
    const ckpt_kv *fmt = ckpt_info_hparam(&in, "sim_format");
    long h = 0;
    if (!fmt || fmt->type != CKPT_KV_STR || strcmp(fmt->s, SPOL_CKPT_FORMAT)) {
        snprintf(err, errlen, "%s: not a strata sim policy checkpoint (no sim_format '%s' in "
                              "/meta/hparams)%s",
                 path, SPOL_CKPT_FORMAT,
                 ckpt_info_hparam(&in, "agent_format") ? "; it is a placement policy (strata "
                                                         "solve --method policy)"
                                                       : "");
        goto out;
    }
    if (want_int(path, &in, "sim_version", SPOL_CKPT_VERSION, NULL, err, errlen) ||
        want_int(path, &in, "sim_features_version", SPOL_FEATURES_VERSION, NULL, err, errlen) ||
        want_int(path, &in, "features", F, NULL, err, errlen) ||
        want_int(path, &in, "window", SPOL_WINDOW, NULL, err, errlen) ||
        want_int(path, &in, "hidden", -SPOL_HIDDEN_MAX, &h, err, errlen))
        goto out;
    nn_tensor_spec t[SPOL_N_TENSORS];
    spol_table((int)h, t);
    if (ckpt_check_sizes(path, t, SPOL_N_TENSORS, err, errlen) != CKPT_OK) goto out;
    if (!(n = net_new((int)h, err, errlen))) goto out;
    if (ckpt_load(path, n->p, NULL, err, errlen) != CKPT_OK) {
        spol_net_free(n);
        n = NULL;
        goto out;
    }
    if (step) *step = in.step;
out:
    ckpt_info_free(&in);
    return n;
}
