/* clpolicy.c -- the learned shared-cluster policy in the daemon: a
 * refcounted slot for its network and the decision for one posted job from
 * the daemon's occupancy (clpolicy.h).
 */
#include "service/clpolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/solve.h"

/* ---- the slot ---------------------------------------------------------------- */

struct clp_slot {
    rcslot *slot; /* of clp_entry, no entry until a network loads */
};

static void entry_free(rcslot_ref *r) {
    clp_entry *e = RCSLOT_ENTRY(r, clp_entry, ref);
    spol_net_free(e->net);
    free(e);
}

clp_slot *clp_slot_create(void) {
    clp_slot *s = calloc(1, sizeof *s);
    if (s && !(s->slot = rcslot_create(entry_free))) {
        free(s);
        return NULL;
    }
    return s;
}

void clp_slot_free(clp_slot *s) {
    if (!s) return;
    rcslot_free(s->slot);
    free(s);
}

int clp_slot_load(clp_slot *s, const char *path, char *err, size_t errlen) {
    clp_entry *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (!(e->net = spol_load(path, &e->step, err, errlen))) { /* err names the file */
        free(e);
        return -1;
    }
    snprintf(e->path, sizeof e->path, "%s", path);
    rcslot_set(s->slot, &e->ref);
    return 0;
}

const clp_entry *clp_acquire(clp_slot *s) {
    return RCSLOT_ENTRY(rcslot_acquire(s->slot), clp_entry, ref);
}

void clp_release(clp_slot *s, const clp_entry *e) {
    if (e) rcslot_release(s->slot, (rcslot_ref *)&e->ref);
}

/* ---- the decision ------------------------------------------------------------ */

const char *clp_kind_name(int kind) {
    switch (kind) {
    case SPOL_EXACT_FREE: return "exact-free";
    case SPOL_EXACT_EMPTY: return "exact-empty";
    case SPOL_ONE_TYPE: return "one-type";
    default: return "wait";
    }
}

/* Scratch of one decision, freed by scratch_free. */
typedef struct {
    spol_cands *cs;
    solve_result *res;
    model_plan *empty;
    int *exact_empty, *exact_free;
    float *x, *logits, *probs, *logp, *work;
} scratch;

static void scratch_free(scratch *w) {
    spol_cands_free(w->cs);
    solve_result_free(w->res);
    model_plan_free(w->empty);
    free(w->exact_empty);
    free(w->exact_free);
    free(w->x);
    free(w->logits);
    free(w->probs);
    free(w->logp);
    free(w->work);
}

int clp_decide(const spol_net *net, const model_job *job, const model_cluster *full,
               const model_cluster *freec, int n_running, int *assign, clp_decision *dec,
               char *err, size_t errlen) {
    memset(dec, 0, sizeof *dec);
    dec->type = -1;
    int L = job->n_layers > 0 ? job->n_layers : 1, rc = -1;
    scratch w;
    memset(&w, 0, sizeof w);
    if (!(w.cs = spol_cands_create(L, full->n_types)) || !(w.res = solve_result_create(L)) ||
        !(w.empty = model_plan_create(L)) || !(w.exact_empty = malloc(sizeof(int) * (size_t)L)) ||
        !(w.exact_free = malloc(sizeof(int) * (size_t)L)))
        goto oom;
    /* the exact plans, as strata simulate's event loop finds them (sim.c):
     * the default solver on the empty cluster, and on the free units when
     * that plan does not fit them */
    solve_opts so;
    solve_opts_default(&so);
    spol_job_view jv = {job, 0, 0, NULL, NULL, NULL, 0};
    long demand = 0;
    int src = solve_run(job, full, &so, w.res);
    if (src == 0) {
        memcpy(w.exact_empty, w.res->assign, sizeof(int) * (size_t)job->n_layers);
        model_eval(job, full, w.exact_empty, w.empty);
        jv.exact_empty = w.exact_empty;
        jv.empty = w.empty;
        int fits = 1;
        long free_all = 0;
        int need[MODEL_MAX_TYPES] = {0};
        for (int k = 0; k < w.empty->n_stages; k++) {
            need[w.empty->stages[k].type] += w.empty->stages[k].units;
            demand += w.empty->stages[k].units;
        }
        for (int ty = 0; ty < freec->n_types; ty++) {
            fits &= need[ty] <= freec->types[ty].count;
            free_all += freec->types[ty].count;
        }
        if (fits) {
            jv.exact_free = w.exact_empty;
        } else if (free_all > 0) {
            int frc = solve_run(job, freec, &so, w.res);
            if (frc == SOLVE_ERROR) {
                snprintf(err, errlen, "job %s: %s", job->name, w.res->why);
                goto out;
            }
            if (frc == 0) {
                memcpy(w.exact_free, w.res->assign, sizeof(int) * (size_t)job->n_layers);
                jv.exact_free = w.exact_free;
            }
        }
    } else {
        snprintf(dec->why, sizeof dec->why, "no plan for the job even on the empty cluster: %.180s",
                 w.res->why[0] ? w.res->why : "none");
        rc = 0;
        goto out;
    }
    spol_view v = {full, freec, 0.0, 1, demand, n_running};
    int n = spol_candidates_of(&v, &jv, 1, w.cs, err, errlen);
    if (n < 0) goto out;
    dec->n_cands = n;
    if (n == 0) {
        snprintf(dec->why, sizeof dec->why, "none of the policy's candidate plans fits the free "
                 "units");
        rc = 0;
        goto out;
    }
    int h = spol_net_hidden(net);
    if (!(w.x = malloc(sizeof(float) * SPOL_FEATURES * (size_t)n)) ||
        !(w.logits = malloc(sizeof(float) * (size_t)n)) ||
        !(w.probs = malloc(sizeof(float) * (size_t)n)) ||
        !(w.logp = malloc(sizeof(float) * (size_t)n)) ||
        !(w.work = malloc(sizeof(float) * spol_work_size(n, h))))
        goto oom;
    for (int i = 0; i < n; i++)
        memcpy(w.x + (size_t)i * SPOL_FEATURES, w.cs->c[i].x, sizeof(float) * SPOL_FEATURES);
    spol_forward(w.logits, w.work, net, w.x, n);
    int a = spol_greedy(w.logits, w.probs, w.logp, w.cs, n);
    if (a < 0) a = 0;
    for (int i = 0; i < n; i++)
        if (w.cs->c[i].job < 0) dec->p_wait = w.probs[i];
    dec->p_chosen = w.probs[a];
    const spol_cand *c = &w.cs->c[a];
    dec->kind = c->kind;
    if (c->job < 0) {
        dec->wait = 1;
        snprintf(dec->why, sizeof dec->why, "the policy waits: wait holds %.3f of the probability "
                 "over %d candidates (%d jobs running)", dec->p_wait, n, n_running);
    } else {
        dec->type = c->type;
        dec->target = c->target;
        memcpy(assign, c->assign, sizeof(int) * (size_t)job->n_layers);
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    scratch_free(&w);
    return rc;
}
