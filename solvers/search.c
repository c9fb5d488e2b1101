/* search.c -- the seeded searches: random, genetic, anneal.
 *
 * They are the black-box baselines: they see the problem only through
 * model_eval and spend an evaluation budget. Each run draws from a
 * xoshiro256** generator seeded through splitmix64 from opts->seed, kept
 * on the stack, so a seed fixes the sequence of plans tried, and two runs
 * with the same seed and evaluation budget return the same plan (unless
 * the wall-clock budget cuts one of them short).
 *
 * Plans are drawn as stage plans rather than independent layer types: a
 * uniform type per layer almost never gives fewer than L/2 stages, and
 * every extra stage costs transfers and units, so that baseline would be a
 * straw man.
 *
 * solve_polish (solve.h) is the local search that finishes a plan someone
 * else found (the agent's search mode, a policy's sampled plans): hill
 * climbing by segment moves to the first local optimum.
 */
#include "solvers/search.h"
#include "solvers/solve.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* ---- generator ------------------------------------------------------- */

typedef struct {
    uint64_t s[4];
} rng_state;

static void rng_seed(rng_state *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64_next(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** (Blackman and Vigna). */
static uint64_t rng_next(rng_state *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform integer in [0, n), n >= 1, without modulo bias. */
static int rng_int(rng_state *r, int n) {
    uint64_t un = (uint64_t)n, lim = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = rng_next(r);
    while (x >= lim);
    return (int)(x % un);
}

/* Uniform double in [0, 1). */
static double rng_unit(rng_state *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- shared pieces --------------------------------------------------- */

/* A random type different from `avoid` (any type when T == 1). */
static int other_type(rng_state *r, int T, int avoid) {
    if (T == 1) return 0;
    int t = rng_int(r, T - 1);
    return t >= avoid ? t + 1 : t;
}

/* Draws a stage plan into assign[L]: s uniform in 1..min(L, 2T) stages
 * (1 when T == 1), s - 1 distinct cut points uniform among the L - 1
 * boundaries (partial Fisher-Yates over pos[L]), types uniform with
 * neighbours different. mark[L] is scratch. */
static void random_plan(rng_state *r, int L, int T, int *assign, int *pos, char *mark) {
    int smax = T == 1 ? 1 : (L < 2 * T ? L : 2 * T);
    int s = 1 + rng_int(r, smax);
    for (int i = 0; i < L - 1; i++) pos[i] = i + 1;
    memset(mark, 0, (size_t)L);
    for (int i = 0; i < s - 1; i++) {
        int j = i + rng_int(r, L - 1 - i);
        int x = pos[i];
        pos[i] = pos[j];
        pos[j] = x;
        mark[pos[i]] = 1;
    }
    int t = rng_int(r, T);
    for (int l = 0; l < L; l++) {
        if (mark[l]) t = other_type(r, T, t);
        assign[l] = t;
    }
}

/* How the genetic algorithm and annealing rank plans: a feasible plan by
 * its cost (viol 0); an infeasible one (cost INFINITY) by how far it is
 * from feasible, so that the searches can walk towards feasibility when
 * they start among infeasible plans. Only model_eval decides feasibility
 * and cost; the violation is a guide and is never reported. */
typedef struct {
    double cost; /* model_eval's cost, INFINITY when infeasible */
    double viol; /* 0 when feasible, else > 0 */
} score;

/* 1 when a ranks strictly before b. */
static int better(score a, score b) {
    return a.cost < b.cost || (isinf(a.cost) && isinf(b.cost) && a.viol < b.viol);
}

/* Violation of an infeasible assignment: per stage, the relative memory
 * excess and 1 when it can never reach R; per type, the relative excess of
 * units over c_t (stages that reach R only). Positive for every plan
 * model_eval refuses. */
static double violation(const solve_ctx *ctx, const int *assign) {
    const model_job *job = ctx->job;
    const model_cluster *cl = ctx->cl;
    long need[MODEL_MAX_TYPES] = {0};
    double v = 0.0;
    for (int first = 0; first < job->n_layers;) {
        int t = assign[first], last = first;
        while (last + 1 < job->n_layers && assign[last + 1] == t) last++;
        model_stage st;
        model_stage_eval(job, cl, t, first, last, &st);
        double mem = cl->types[t].mem;
        if (st.mem > mem) v += mem > 0 ? fmax(st.mem / mem - 1.0, 1e-9) : 1.0;
        if (st.units == 0) v += 1.0;
        else need[t] += st.units;
        first = last + 1;
    }
    for (int t = 0; t < cl->n_types; t++)
        if (need[t] > cl->types[t].count) {
            double c = cl->types[t].count > 1 ? cl->types[t].count : 1;
            v += (double)(need[t] - cl->types[t].count) / c;
        }
    return v > 0 ? v : 1e-9;
}

/* Scores assign through the context (one evaluation). */
static score evaluate(solve_ctx *ctx, const int *assign) {
    if (solve_ctx_eval(ctx, assign) == MODEL_FEASIBLE) return (score){ctx->scratch->cost, 0.0};
    return (score){INFINITY, violation(ctx, assign)};
}

/* With a single type there is one assignment: score it and stop. */
static int only_plan(solve_ctx *ctx, int *assign) {
    memset(assign, 0, (size_t)ctx->job->n_layers * sizeof *assign);
    if (solve_ctx_eval(ctx, assign) != MODEL_FEASIBLE)
        snprintf(ctx->res->why, sizeof ctx->res->why,
                 "%s: the only assignment (one type) is infeasible: %.500s",
                 solve_method_name(ctx->opts->method), ctx->scratch->why);
    return 0;
}

static void note_spent(solve_ctx *ctx) {
    if (solve_ctx_time_out(ctx)) ctx->res->stopped = 1;
}

/* ---- random ---------------------------------------------------------- */

int solve_random(solve_ctx *ctx) {
    const int L = ctx->job->n_layers, T = ctx->cl->n_types;
    int *assign = malloc((size_t)L * sizeof *assign);
    int *pos = malloc((size_t)L * sizeof *pos);
    char *mark = malloc((size_t)L);
    int rc = 0;
    if (!assign || !pos || !mark) {
        snprintf(ctx->res->why, sizeof ctx->res->why, "random: out of memory");
        rc = SOLVE_ERROR;
        goto done;
    }
    if (T == 1) {
        rc = only_plan(ctx, assign);
        goto done;
    }
    rng_state r;
    rng_seed(&r, ctx->opts->seed);
    while (!solve_ctx_spent(ctx)) {
        random_plan(&r, L, T, assign, pos, mark);
        solve_ctx_eval(ctx, assign);
    }
    note_spent(ctx);
done:
    free(assign);
    free(pos);
    free(mark);
    return rc;
}

/* ---- genetic --------------------------------------------------------- */

#define GA_POP 32
#define GA_ELITE 2
#define GA_TOUR 3
#define GA_CROSS 0.9

/* Tournament: the fittest of GA_TOUR uniform picks (the first on ties). */
static int tournament(rng_state *r, const score *fit, int n) {
    int best = rng_int(r, n);
    for (int i = 1; i < GA_TOUR; i++) {
        int c = rng_int(r, n);
        if (better(fit[c], fit[best])) best = c;
    }
    return best;
}

/* Mutation: with probability 1/2 retype a random segment of 1..max(1, L/4)
 * layers; with probability 1/2 move a random stage boundary by one layer. */
static void mutate(rng_state *r, int L, int T, int *a) {
    if (rng_unit(r) < 0.5) {
        int i = rng_int(r, L), span = L / 4 > 1 ? L / 4 : 1;
        int len = 1 + rng_int(r, span), t = other_type(r, T, a[i]);
        for (int l = i; l < L && l < i + len; l++) a[l] = t;
    }
    if (L > 1 && rng_unit(r) < 0.5) {
        int l = 1 + rng_int(r, L - 1);
        if (a[l - 1] != a[l]) {
            if (rng_unit(r) < 0.5) a[l] = a[l - 1];
            else a[l - 1] = a[l];
        }
    }
}

int solve_genetic(solve_ctx *ctx) {
    const int L = ctx->job->n_layers, T = ctx->cl->n_types;
    int *pop = malloc((size_t)GA_POP * (size_t)L * sizeof *pop);
    int *next = malloc((size_t)GA_POP * (size_t)L * sizeof *next);
    int *pos = malloc((size_t)L * sizeof *pos);
    char *mark = malloc((size_t)L);
    score fit[GA_POP], nfit[GA_POP];
    int rc = 0;
    if (!pop || !next || !pos || !mark) {
        snprintf(ctx->res->why, sizeof ctx->res->why, "genetic: out of memory");
        rc = SOLVE_ERROR;
        goto done;
    }
    if (T == 1) {
        rc = only_plan(ctx, pop);
        goto done;
    }
    rng_state r;
    rng_seed(&r, ctx->opts->seed);
    /* Initial population: the homogeneous plans (up to half), then random
     * stage plans. */
    int n = 0;
    for (; n < GA_POP && !solve_ctx_spent(ctx); n++) {
        int *a = pop + (size_t)n * L;
        if (n < T && n < GA_POP / 2)
            for (int l = 0; l < L; l++) a[l] = n;
        else
            random_plan(&r, L, T, a, pos, mark);
        fit[n] = evaluate(ctx, a);
    }
    while (n == GA_POP && !solve_ctx_spent(ctx)) {
        /* Elites: the GA_ELITE fittest, first index on ties. */
        int m = 0;
        char taken[GA_POP] = {0};
        for (; m < GA_ELITE; m++) {
            int b = -1;
            for (int i = 0; i < GA_POP; i++)
                if (!taken[i] && (b < 0 || better(fit[i], fit[b]))) b = i;
            taken[b] = 1;
            memcpy(next + (size_t)m * L, pop + (size_t)b * L, (size_t)L * sizeof *pop);
            nfit[m] = fit[b];
        }
        for (; m < GA_POP && !solve_ctx_spent(ctx); m++) {
            const int *p1 = pop + (size_t)tournament(&r, fit, GA_POP) * L;
            const int *p2 = pop + (size_t)tournament(&r, fit, GA_POP) * L;
            int *c = next + (size_t)m * L;
            memcpy(c, p1, (size_t)L * sizeof *c);
            if (rng_unit(&r) < GA_CROSS) {
                int a = rng_int(&r, L + 1), b = rng_int(&r, L + 1);
                if (a > b) {
                    int x = a;
                    a = b;
                    b = x;
                }
                for (int l = a; l < b; l++) c[l] = p2[l];
            }
            mutate(&r, L, T, c);
            nfit[m] = evaluate(ctx, c);
        }
        if (m < GA_POP) break; /* budget spent mid-generation */
        int *x = pop;
        pop = next;
        next = x;
        memcpy(fit, nfit, sizeof fit);
    }
    note_spent(ctx);
done:
    free(pop);
    free(next);
    free(pos);
    free(mark);
    return rc;
}

/* ---- anneal ---------------------------------------------------------- */

#define SA_T0 0.1  /* initial temperature, in relative cost */
#define SA_T1 1e-4 /* final temperature */

/* Applies one random move to a[L] (T >= 2): shift a stage boundary by one
 * layer, retype a random segment of 1..max(1, L/8) layers, or retype the
 * whole stage holding a random layer. The result always differs from the
 * input. */
static void anneal_move(rng_state *r, int L, int T, int *a) {
    int kind = rng_int(r, 3);
    if (kind == 0 && L > 1) {
        /* Pick the k-th boundary among those present. */
        int nb = 0;
        for (int l = 1; l < L; l++) nb += a[l] != a[l - 1];
        if (nb > 0) {
            int k = rng_int(r, nb);
            for (int l = 1; l < L; l++)
                if (a[l] != a[l - 1] && k-- == 0) {
                    if (rng_unit(r) < 0.5) a[l] = a[l - 1];
                    else a[l - 1] = a[l];
                    return;
                }
        }
        kind = 2; /* a single stage has no boundary: retype it */
    }
    int i = rng_int(r, L);
    if (kind == 1) {
        int span = L / 8 > 1 ? L / 8 : 1, len = 1 + rng_int(r, span);
        int t = other_type(r, T, a[i]);
        for (int l = i; l < L && l < i + len; l++) a[l] = t;
        return;
    }
    int lo = i, hi = i, old = a[i];
    while (lo > 0 && a[lo - 1] == old) lo--;
    while (hi + 1 < L && a[hi + 1] == old) hi++;
    int t = other_type(r, T, old);
    for (int l = lo; l <= hi; l++) a[l] = t;
}

int solve_anneal(solve_ctx *ctx) {
    const int L = ctx->job->n_layers, T = ctx->cl->n_types;
    int *cur = malloc((size_t)L * sizeof *cur);
    int *cand = malloc((size_t)L * sizeof *cand);
    int rc = 0;
    if (!cur || !cand) {
        snprintf(ctx->res->why, sizeof ctx->res->why, "anneal: out of memory");
        rc = SOLVE_ERROR;
        goto done;
    }
    if (T == 1) {
        rc = only_plan(ctx, cur);
        goto done;
    }
    rng_state r;
    rng_seed(&r, ctx->opts->seed);
    /* Start: the best homogeneous plan (the least infeasible one when
     * none is feasible). */
    score now = {INFINITY, INFINITY};
    for (int t = 0; t < T && !solve_ctx_spent(ctx); t++) {
        for (int l = 0; l < L; l++) cand[l] = t;
        score sc = evaluate(ctx, cand);
        if (better(sc, now)) {
            now = sc;
            memcpy(cur, cand, (size_t)L * sizeof *cur);
        }
    }
    long start = ctx->res->evaluations;
    double span = (double)(ctx->max_evals - start);
    while (!solve_ctx_spent(ctx)) {
        double progress = span > 0 ? (double)(ctx->res->evaluations - start) / span : 1.0;
        double temp = SA_T0 * pow(SA_T1 / SA_T0, progress);
        memcpy(cand, cur, (size_t)L * sizeof *cand);
        anneal_move(&r, L, T, cand);
        score sc = evaluate(ctx, cand);
        /* While infeasible, anneal the violation; once feasible, the
         * relative cost, never leaving the feasible plans. */
        double delta;
        if (isinf(now.cost)) delta = isinf(sc.cost) ? sc.viol - now.viol : -INFINITY;
        else if (isinf(sc.cost)) continue;
        else delta = now.cost > 0 ? (sc.cost - now.cost) / now.cost : (sc.cost > 0 ? INFINITY : 0.0);
        if (delta <= 0 || rng_unit(&r) < exp(-delta / temp)) {
            int *x = cur;
            cur = cand;
            cand = x;
            now = sc;
        }
    }
    note_spent(ctx);
done:
    free(cur);
    free(cand);
    return rc;
}

/* ---- polish ---------------------------------------------------------- */

double solve_polish(const model_job *job, const model_cluster *cl, int *assign, double cost,
                    model_plan *plan, int *trial, int (*stop)(void *ud), void *ud, long *evals) {
    int L = job->n_layers, T = cl->n_types;
    long n = 0;
    for (int improved = 1; improved;) {
        improved = 0;
        for (int i = 0; i < L; i++) {
            if (stop && stop(ud)) {
                improved = 0;
                break;
            }
            for (int j = i; j < L; j++)
                for (int ty = 0; ty < T; ty++) {
                    int same = 1;
                    for (int l = i; l <= j && same; l++) same = assign[l] == ty;
                    if (same) continue;
                    memcpy(trial, assign, (size_t)L * sizeof *trial);
                    for (int l = i; l <= j; l++) trial[l] = ty;
                    n++;
                    if (model_eval(job, cl, trial, plan) == 0 && plan->cost < cost * (1 - 1e-12)) {
                        cost = plan->cost;
                        memcpy(assign, trial, (size_t)L * sizeof *assign);
                        improved = 1;
                    }
                }
        }
    }
    if (evals) *evals = n;
    return cost;
}
