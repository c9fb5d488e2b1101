/* spolicy.c -- the simulator's side of the learned policy: filling the
 * view of agent/spolicy from the event loop, and the "policy" sim method
 * (see spolicy.h and docs/simulate.md).
 */
#include "sim/spolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/layers.h"

#define F SPOL_FEATURES

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
    int h = spol_net_hidden(run->net);
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
