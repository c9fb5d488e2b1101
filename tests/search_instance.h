/* search_instance.h -- the random search-mode instances of issue #15's
 * study (bench/bench_search_gap.c) and of tests/test_agent_search.c, with
 * their brute-force optimum and one search run on them.
 *
 * Instance i of a family seed is drawn by tests/random_instance.h's ri_make
 * (6 to 12 layers; 4 types up to 10 layers, 3 beyond, so that brute force
 * scores at most 4^10 = 1 048 576 or 3^12 = 531 441 assignments) and then
 * bent into one of three kinds, by i % 3:
 *   0 plain    as drawn;
 *   1 homog    one type made the cheapest per FLOP by far, with room and
 *              memory for every layer: the optimum is usually that type for
 *              every layer, the homogeneous plan (issue #15's instance);
 *   2 tight    1 or 2 free units per type and a doubled target, so that
 *              capacity binds (the optimum with unlimited units is cheaper).
 * An instance without a feasible plan is drawn again (attempt + 1). The
 * kinds are intents; sg_brute says what each instance turned out to be
 * (single-type optimum, capacity binding).
 * Header-only (static functions): each test and benchmark is one program.
 */
#ifndef STRATA_TEST_SEARCH_INSTANCE_H
#define STRATA_TEST_SEARCH_INSTANCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/train.h"
#include "agent/trainconf.h"
#include "base/clock.h"
#include "env/model.h"
#include "tests/random_instance.h"

enum { SG_PLAIN = 0, SG_HOMOG = 1, SG_TIGHT = 2 };
static const char *const SG_KIND[3] = {"plain", "homog", "tight"};

/* Brute force over every type assignment (model_eval on each). */
typedef struct {
    double opt;              /* cheapest feasible cost (INFINITY: none) */
    int best[RI_MAX_LAYERS]; /* its assignment */
    int single_type;         /* the optimum puts every layer on one type */
    int cap_binds;           /* the optimum with unlimited units is cheaper */
    long n;                  /* assignments scored */
} sg_brute_result;

static inline void sg_brute(const ri_instance *in, sg_brute_result *b) {
    const int L = in->job.n_layers, T = in->cl.n_types;
    model_type nocap[RI_MAX_TYPES];
    for (int t = 0; t < T; t++) {
        nocap[t] = in->types[t];
        nocap[t].count = 1 << 30;
    }
    model_cluster cl_nocap = {.n_types = T, .types = nocap};
    model_plan *p = model_plan_create(L);
    int a[RI_MAX_LAYERS] = {0};
    double opt_nocap = INFINITY;
    memset(b->best, 0, sizeof b->best);
    b->opt = INFINITY;
    b->n = 0;
    for (;;) {
        int rc = model_eval(&in->job, &in->cl, a, p);
        b->n++;
        if (rc == MODEL_FEASIBLE) {
            if (p->cost < b->opt) {
                b->opt = p->cost;
                memcpy(b->best, a, sizeof b->best);
            }
            if (p->cost < opt_nocap) opt_nocap = p->cost;
        } else if (rc == MODEL_ERR_CAPACITY && model_eval(&in->job, &cl_nocap, a, p) == MODEL_FEASIBLE &&
                   p->cost < opt_nocap) {
            opt_nocap = p->cost;
        }
        int l = 0;
        while (l < L && ++a[l] == T) a[l++] = 0;
        if (l == L) break;
    }
    model_plan_free(p);
    b->single_type = isfinite(b->opt);
    for (int l = 1; l < L && b->single_type; l++) b->single_type = b->best[l] == b->best[0];
    b->cap_binds = isfinite(b->opt) && opt_nocap < b->opt * (1 - 1e-9);
}

/* sg_make draws instance i of family `seed` (see above) into in, its
 * brute force into b; returns its kind. */
static inline int sg_make(ri_instance *in, uint64_t seed, int i, sg_brute_result *b) {
    int kind = i % 3;
    for (int attempt = 0;; attempt++) {
        uint64_t x = seed * 1000003ULL + (uint64_t)i * 7919ULL + (uint64_t)attempt * 104729ULL;
        int L = 6 + (int)(splitmix64_next(&x) % 7);
        int T = L <= 10 ? 4 : 3;
        ri_make(in, L, T, splitmix64_next(&x));
        if (kind == SG_HOMOG) {
            int h = (int)(splitmix64_next(&x) % (uint64_t)T);
            double best = 0;
            for (int t = 0; t < T; t++)
                if (in->types[t].flops / in->types[t].price > best) best = in->types[t].flops / in->types[t].price;
            model_type *ty = &in->types[h];
            ty->price = ty->flops / (best * (2.0 + 3.0 * splitmix64_unit(&x)));
            ty->count = 24;
            ty->mem = 8e10;
        } else if (kind == SG_TIGHT) {
            for (int t = 0; t < T; t++) in->types[t].count = 1 + (int)(splitmix64_next(&x) % 2);
            in->job.min_throughput *= 2;
        }
        snprintf(in->job.name, sizeof in->job.name, "sg%llu-%d-%s", (unsigned long long)seed, i, SG_KIND[kind]);
        sg_brute(in, b);
        if (isfinite(b->opt)) return kind;
    }
}

/* One search run's outcome. */
typedef struct {
    double sampled;       /* best sampled cost, polished when polish is on (INFINITY: none) */
    double answer;        /* the cost the search returns (agent_train_answer) */
    char from[64];        /* its best_from */
    double exact;         /* the exact solver's optimum, as the trainer computed it */
    long steps;
    double seconds;       /* CPU seconds */
    double wall;          /* wall seconds */
    double zero_adv_mean; /* mean zero_adv_share over the steps */
    double entropy_last;  /* entropy of the last step */
} sg_search_result;

/* sg_cpu_s returns the CPU seconds this process has used: the budget of a
 * search, so that a study on a loaded, shared machine measures the search
 * rather than the load (run it with threads = 1 and one BLAS thread, and it
 * is the time of one core). */
static inline double sg_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* sg_search runs search mode on in with `reward` for at most `seconds` of
 * CPU time (sg_cpu_s; 0: no limit) and `steps` updates, stopping early once the best
 * sample reaches opt (within 1e-9); polish 1 or 0 sets the trainer's
 * polish (segment moves on the best samples), -1 keeps its default (on);
 * files go to folder out. Returns 0, or -1 with a message. */
static inline int sg_search(const ri_instance *in, int reward, double seconds, int steps, double opt, int threads,
                            int polish, const char *out, sg_search_result *r, char *err, size_t errlen) {
    agent_trainconf tc;
    tc.text = NULL;
    agent_trainconf_default(&tc, AGENT_MODE_SEARCH);
    tc.reward = reward;
    tc.threads = threads;
    if (polish >= 0) tc.polish = polish;
    snprintf(tc.out, sizeof tc.out, "%s", out);
    agent_trainer *t = agent_train_create_on(&tc, &in->job, &in->cl, err, errlen);
    if (!t) return -1;
    memset(r, 0, sizeof *r);
    double t0 = sg_cpu_s(), w0 = clock_now_s(), zsum = 0;
    const model_job *job;
    const model_cluster *cl;
    const int *assign;
    double cost = INFINITY;
    int rc = 0;
    while (agent_train_step_count(t) < steps && (seconds <= 0 || sg_cpu_s() - t0 < seconds)) {
        if (agent_train_step(t, err, errlen)) {
            rc = -1;
            break;
        }
        const agent_metrics *m = agent_train_last(t);
        zsum += isnan(m->zero_adv_share) ? 0 : m->zero_adv_share;
        r->entropy_last = m->entropy;
        agent_train_best(t, &job, &cl, &assign, &cost, &r->exact);
        if (assign && cost <= opt * (1 + 1e-9)) break;
    }
    r->seconds = sg_cpu_s() - t0;
    r->wall = clock_now_s() - w0;
    r->steps = agent_train_step_count(t);
    r->zero_adv_mean = r->steps ? zsum / (double)r->steps : NAN;
    agent_train_best(t, &job, &cl, &assign, &cost, &r->exact);
    r->sampled = assign ? cost : INFINITY;
    agent_train_answer(t, &assign, &r->answer, r->from, sizeof r->from);
    agent_train_free(t);
    return rc;
}

#endif
