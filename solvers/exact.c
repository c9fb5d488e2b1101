/* exact.c -- a proven minimum-cost plan (docs/model.md §2).
 *
 * The problem. An assignment is a sequence of stages: segments of
 * consecutive layers, neighbours of different types (stages are maximal
 * runs, so two neighbouring segments of one type would be one stage with
 * other figures). A stage's figures depend only on its span and type
 * (model_stage_eval), so each candidate c = (first i, last j, type t) has a
 * fixed unit count k_c, price P_c = k_c p_t and throughput theta_c. A
 * candidate is usable when it meets memory and 0 < k_c <= c_t. A plan y is
 * feasible when its stages are usable and the sum of k over its stages of
 * type t is at most c_t for every t. Its cost is
 *
 *     cost(y) = S / theta(y) / 3600 * P(y),  theta(y) = min_c theta_c,
 *     P(y) = sum_c P_c,
 *
 * which is not additive over stages: theta couples them.
 *
 * The decomposition. For a threshold h let F(h) be the feasible plans
 * whose every stage has theta_c >= h, M(h) = min P over F(h) (infinite when
 * F(h) is empty) and V(h) = S / h / 3600 * M(h). Then
 *
 *     OPT = min over h in Theta of V(h),  Theta = the distinct theta_c.
 *
 * Proof. (<=) For any h and any y in F(h), theta(y) >= h, so
 * cost(y) <= S / h / 3600 P(y); taking y with P(y) = M(h) gives OPT <= V(h).
 * (>=) The optimal y* has theta(y*) = h* in Theta and y* is in F(h*), so
 * V(h*) <= S / h* / 3600 P(y*) = cost(y*) = OPT.
 *
 * The sweep. Thresholds are visited in ascending order. F(h) shrinks as h
 * grows, so M is non-decreasing. If y attains M(h), it attains M(h') for
 * every h' in [h, theta(y)] (y is in the smaller set and optimal in the
 * larger), so V on that range is at least S / theta(y) / 3600 P(y) =
 * cost(y): scoring y settles the range and the sweep jumps past theta(y).
 * A threshold h is skipped when a lower bound on M(h) already gives
 * V(h) >= the incumbent (homogeneous plans seed the incumbent). Lower
 * bounds on M(h): U(h), the same problem without capacity, and the last U
 * computed at a lower threshold (U is non-decreasing too); the largest M
 * found at a lower threshold; and the Lagrangian bound below.
 *
 * Computing M(h). Without capacity M(h) is a shortest path over layer
 * boundaries, a dynamic programme from the last layer backwards:
 * H[i][t] = min over usable candidates (i, j, t) with theta >= h of
 * P_c + G(j+1, t), G(i, t') = min over t != t' of H[i][t], G(L, .) = 0;
 * U(h) = G(0, none). If the path it traces fits the unit counts, it is
 * M(h). Otherwise:
 *   - Lagrangian relaxation: charging lambda_t >= 0 more per unit of type t
 *     and crediting lambda . c gives, for any lambda, a lower bound
 *     G_lambda(0, none) - sum_t lambda_t c_t on M(h) (a feasible plan uses
 *     at most c_t units of t, so its charge is at most the credit). A few
 *     dozen subgradient steps pick lambda; a relaxed path that fits the
 *     counts is a feasible plan, and when the bound meets it, M(h) is
 *     proven without search.
 *   - Surrogate unit constraints: for weights w >= 0, a plan within the
 *     counts uses at most sum_t w_t c_t weighted units, and the same DP
 *     with cost w_t k_c (no prices) gives the fewest any plan needs. Weights:
 *     all tracked types alike, each tracked type alone, and weights found
 *     by a subgradient search for a plan within the counts; if one of them
 *     shows every plan needs too many units, F(h) is empty.
 *   - Else a depth-first branch and bound over stages, left to right, state
 *     (next layer i, previous type, units used per type), price p so far.
 *     A node is cut when max(p + G(i, prev), p + G_lambda(i, prev) -
 *     sum_t lambda_t (c_t - used_t)) >= the best price found (both bound
 *     every completion that fits the units left), or when a surrogate
 *     shows that no completion fits the units left; a node whose relaxed
 *     completion fits the units left is solved by it; a node whose state
 *     was reached before at no higher price is dropped (same futures, no
 *     cheaper past); only types some path could overfill are tracked. The
 *     search stops early when it finds a plan at a known lower bound.
 *   The search is started with the price below which a plan could still
 *   beat the incumbent at the highest threshold that has plans; if it finds
 *   none, no threshold at or above h can beat the incumbent and the sweep
 *   ends.
 *
 * Budget: when time runs out, the best plan scored so far is returned with
 * a lower bound: the minimum of the incumbent and, over the thresholds not
 * yet settled, S / h / 3600 times the lower bound on M(h) known for all of
 * them, taken at the largest threshold that has plans. Infeasibility is
 * proven when U is infinite at the smallest threshold (no chain of usable
 * stages covers the layers) or the search there finds no plan within the
 * counts (with no incumbent, its initial bound is infinite).
 *
 * Fixed layers (solve_run_fixed): a candidate (i, j, t) is usable only
 * when every fixed layer in [i, j] has type t, and the homogeneous seeds
 * only when they agree. A plan agrees with the fixed layers exactly when
 * all its stages do, so the argument above, run on the smaller candidate
 * set, proves the cheapest agreeing plan (or that none is feasible).
 *
 * Every plan offered is scored by model_eval; the reported figures are its.
 * Bound comparisons use the relative margin EXACT_EPS, so "optimal" means
 * within one part in 1e12 of the optimum, far below any figure shown.
 */
#include "solvers/exact.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_EPS 1e-12
#define EXACT_MAX_CANDS (4L << 20) /* ~100 MB of (segment, type) candidates */
#define EXACT_MEMO_INTS (8L << 20) /* memo key storage: 32 MB of ints */
#define EXACT_MEMO_PROBE 8
#define EXACT_CHECK_EVERY 1024     /* nodes between clock reads */
#define EXACT_SUBGRAD 60           /* subgradient steps per search */

/* A usable (segment, type) candidate; grouped by (first, type), last
 * ascending, so the first layer and the type are implied by the group. */
typedef struct {
    int last;     /* j */
    int units;    /* k_c */
    double price; /* P_c = k_c p_t, dollars per hour */
    double theta; /* theta_c(k_c), samples/s */
} cand;

/* A suffix DP table at one threshold and one charge vector lambda. */
typedef struct {
    int *Hc;      /* [L*T] argmin candidate of H[i][t], or -1 */
    double *min1; /* [L+1] min over t of H[i][t] */
    double *min2; /* [L+1] min over t != arg1 */
    int *arg1;    /* [L+1] */
    int *arg2;    /* [L+1] */
} dptab;

/* A child of a branch-and-bound node. */
typedef struct {
    double bound; /* lower bound on the price of plans through it */
    int c;        /* candidate index */
    int t;        /* its type */
} kid;

typedef struct {
    solve_ctx *ctx;
    int L, T;
    cand *c;    /* [n_cand] */
    int *off;   /* [L*T + 1]: candidates of (i, t) are c[off[i*T+t] .. off[i*T+t+1]) */
    int n_cand;
    double *th; /* [n_th] distinct theta_c ascending */
    int n_th;
    int top;    /* last threshold index with a finite U */

    double h;   /* threshold of d0 and dl */
    dptab d0;   /* relaxed DP without charges */
    dptab dl;   /* relaxed DP with charges lam */
    /* Surrogate unit constraints: for weights w >= 0 a completion from
     * layer i needs at least G(sur[s], i, prev) weighted units, which must
     * not exceed sum_t w_t (c_t - used_t). */
    int n_sur;
    dptab *sur;  /* [T + 2] */
    double *w;   /* [(T + 2) * T] weights of surrogate s at w[s*T ..] */
    double *lam; /* [T] charges, dollars per unit-hour */
    double lam_credit; /* sum_t lam_t c_t */
    int *cap;   /* [T] c_t */
    int *track; /* [T] 1 when some path could overfill type t */
    int *used;  /* [T] units along the current branch */
    int *tmp;   /* [T] scratch */
    double *scratch; /* [max(L+1, T)] scratch */

    int *pc, *pt;   /* [L] path being built: candidate and type per stage */
    int *bpc, *bpt; /* [L] best path of the search */
    int blen;
    int *assign;    /* [L] */

    kid *kids;
    long n_kids, cap_kids;
    double ub;  /* best price found by the search (or its initial bound) */
    double floor; /* known lower bound on M(h): a plan at it ends the search */
    int found;
    long nodes;
    int aborted; /* 1 clock, 2 memory, 3 a plan at the floor was found */

    int key_len;
    long memo_size;
    int *memo_keys;     /* [memo_size * (2 + T)] */
    double *memo_val;   /* [memo_size] */
    unsigned *memo_gen; /* [memo_size]: slot in use when == gen */
    unsigned gen;
} exact;

static double cost_of(const exact *e, double price, double theta) {
    /* Same arithmetic as model_eval: T = S / theta; cost = T / 3600 * price. */
    return e->ctx->job->samples / theta / 3600.0 * price;
}

static int set_error(exact *e, const char *what) {
    snprintf(e->ctx->res->why, sizeof e->ctx->res->why, "exact: %s", what);
    return SOLVE_ERROR;
}

/* ---- candidates ------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Scores every (segment, type) once with model_stage_fill and keeps the
 * usable ones, and the sorted distinct thresholds. Returns 0, 1 when the
 * clock ran out, or SOLVE_ERROR. */
static int build_candidates(exact *e) {
    const model_job *job = e->ctx->job;
    const model_cluster *cl = e->ctx->cl;
    const int L = e->L, T = e->T;
    int mem_monotone = 1; /* with m_l >= 0 a longer segment never needs less */
    for (int l = 0; l < L; l++)
        if (!(job->layers[l].mem >= 0)) mem_monotone = 0;
    long cap = 1024, n = 0, scored = 0;
    e->c = malloc((size_t)cap * sizeof *e->c);
    e->off = malloc(((size_t)L * T + 1) * sizeof *e->off);
    if (!e->c || !e->off) return set_error(e, "out of memory");
    for (int i = 0; i < L; i++)
        for (int t = 0; t < T; t++) {
            e->off[i * T + t] = (int)n;
            /* Running sums in the layers' order: model_stage_fill then gives
             * the figures model_stage_eval (and model_eval) would, bit for
             * bit, in O(1) per segment. */
            model_span sum = {0, 0, 0, 0, 0};
            for (int j = i; j < L; j++) {
                /* a fixed layer of another type: no segment from i on t
                 * reaches it or goes past it */
                if (e->ctx->fixed && e->ctx->fixed[j] >= 0 && e->ctx->fixed[j] != t) break;
                const model_layer *ly = &job->layers[j];
                sum.flops += ly->flops;
                sum.io += ly->io;
                sum.params += ly->params;
                sum.mem += ly->mem;
                sum.act = 0.0;
                if (i > 0) sum.act += job->layers[i - 1].act;
                if (j < L - 1) sum.act += ly->act;
                model_stage st;
                model_stage_fill(job, cl, t, i, j, &sum, &st);
                if ((++scored & 1023) == 0 && solve_ctx_time_out(e->ctx)) {
                    e->ctx->res->evaluations += scored;
                    return 1;
                }
                if (st.mem > cl->types[t].mem) {
                    if (mem_monotone) break;
                    continue;
                }
                if (st.units == 0 || st.units > cl->types[t].count) continue;
                if (n == cap) {
                    if (cap >= EXACT_MAX_CANDS)
                        return set_error(e, "the job has too many (segment, type) "
                                            "candidates for the exact solver; use a search method");
                    cap *= 2;
                    cand *nc = realloc(e->c, (size_t)cap * sizeof *nc);
                    if (!nc) return set_error(e, "out of memory");
                    e->c = nc;
                }
                e->c[n++] = (cand){j, st.units, st.units * cl->types[t].price, st.throughput};
            }
        }
    e->off[L * T] = (int)n;
    e->n_cand = (int)n;
    e->ctx->res->evaluations += scored;

    e->th = malloc((size_t)(n ? n : 1) * sizeof *e->th);
    if (!e->th) return set_error(e, "out of memory");
    for (long i = 0; i < n; i++) e->th[i] = e->c[i].theta;
    qsort(e->th, (size_t)n, sizeof *e->th, cmp_double);
    int m = 0;
    for (long i = 0; i < n; i++)
        if (m == 0 || e->th[i] != e->th[m - 1]) e->th[m++] = e->th[i];
    e->n_th = m;
    return 0;
}

/* Index of the first threshold strictly above x. */
static int first_above(const exact *e, double x) {
    int lo = 0, hi = e->n_th;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->th[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ---- relaxed DP (no capacity) ----------------------------------------- */

static int dptab_alloc(dptab *d, int L, int T) {
    d->Hc = malloc((size_t)L * T * sizeof *d->Hc);
    d->min1 = malloc(((size_t)L + 1) * sizeof *d->min1);
    d->min2 = malloc(((size_t)L + 1) * sizeof *d->min2);
    d->arg1 = malloc(((size_t)L + 1) * sizeof *d->arg1);
    d->arg2 = malloc(((size_t)L + 1) * sizeof *d->arg2);
    return d->Hc && d->min1 && d->min2 && d->arg1 && d->arg2 ? 0 : -1;
}

static void dptab_free(dptab *d) {
    free(d->Hc);
    free(d->min1);
    free(d->min2);
    free(d->arg1);
    free(d->arg2);
}

/* G(i, prev): cheapest (charged) completion of layers i..L-1 whose first
 * stage is not of type prev (prev = -1: any). */
static double G(const dptab *d, int i, int prev) {
    return d->arg1[i] != prev ? d->min1[i] : d->min2[i];
}

/* Fills d for threshold h (candidates with theta >= h), each candidate
 * costing P_c + lam[t] k_c (lam NULL: no charge), or only lam[t] k_c
 * when priced is 0. */
static void suffix_dp(exact *e, dptab *d, double h, const double *lam, int priced) {
    const int L = e->L, T = e->T;
    d->min1[L] = d->min2[L] = 0.0;
    d->arg1[L] = d->arg2[L] = -1;
    for (int i = L - 1; i >= 0; i--) {
        double m1 = INFINITY, m2 = INFINITY;
        int a1 = -1, a2 = -1;
        for (int t = 0; t < T; t++) {
            double best = INFINITY, charge = lam ? lam[t] : 0.0;
            int arg = -1;
            for (int c = e->off[i * T + t]; c < e->off[i * T + t + 1]; c++) {
                const cand *cc = &e->c[c];
                if (cc->theta < h) continue;
                double v = (priced ? cc->price : 0.0) + charge * cc->units +
                           G(d, cc->last + 1, t);
                if (v < best) {
                    best = v;
                    arg = c;
                }
            }
            d->Hc[i * T + t] = arg;
            if (best < m1) {
                m2 = m1;
                a2 = a1;
                m1 = best;
                a1 = t;
            } else if (best < m2) {
                m2 = best;
                a2 = t;
            }
        }
        d->min1[i] = m1;
        d->min2[i] = m2;
        d->arg1[i] = a1;
        d->arg2[i] = a2;
    }
    e->ctx->res->evaluations++;
}

/* Appends to pc/pt from *len the path d traces from layer i after a stage
 * of type prev; requires G(d, i, prev) finite. */
static void trace(const exact *e, const dptab *d, int i, int prev, int *pc, int *pt, int *len) {
    while (i < e->L) {
        int t = d->arg1[i] != prev ? d->arg1[i] : d->arg2[i];
        int c = d->Hc[i * e->T + t];
        pc[*len] = c;
        pt[*len] = t;
        (*len)++;
        i = e->c[c].last + 1;
        prev = t;
    }
}

/* Smallest stage theta of a path. */
static double path_theta(const exact *e, const int *pc, int len) {
    double theta = INFINITY;
    for (int s = 0; s < len; s++)
        if (e->c[pc[s]].theta < theta) theta = e->c[pc[s]].theta;
    return theta;
}

/* Uncharged price of a path, summed left to right as model_eval does. */
static double path_price(const exact *e, const int *pc, int len) {
    double p = 0.0;
    for (int s = 0; s < len; s++) p += e->c[pc[s]].price;
    return p;
}

/* Units per type of a path into e->tmp; returns 1 when they fit. */
static int path_fits(exact *e, const int *pc, const int *pt, int len) {
    memset(e->tmp, 0, (size_t)e->T * sizeof *e->tmp);
    for (int s = 0; s < len; s++) e->tmp[pt[s]] += e->c[pc[s]].units;
    for (int t = 0; t < e->T; t++)
        if (e->tmp[t] > e->cap[t]) return 0;
    return 1;
}

/* Scores a path through model_eval (the incumbent keeps it if cheaper). */
static void offer(exact *e, const int *pc, const int *pt, int len) {
    int l = 0;
    for (int s = 0; s < len; s++)
        for (; l <= e->c[pc[s]].last; l++) e->assign[l] = pt[s];
    solve_ctx_eval(e->ctx, e->assign);
}

/* ---- under capacity: Lagrangian bound, branch and bound --------------- */

/* Marks the types some usable path (theta >= h) could overfill: the most
 * units of type t along any chain of candidates (ignoring the neighbour
 * rule, so an over-estimate) against c_t. Returns how many. */
static int mark_tracked(exact *e) {
    const int L = e->L, T = e->T;
    double *most = e->scratch; /* [L+1] */
    int n = 0;
    for (int t = 0; t < T; t++) {
        most[L] = 0.0;
        for (int i = L - 1; i >= 0; i--) {
            double b = -INFINITY;
            for (int u = 0; u < T; u++)
                for (int c = e->off[i * T + u]; c < e->off[i * T + u + 1]; c++) {
                    if (e->c[c].theta < e->h) continue;
                    double v = (u == t ? e->c[c].units : 0) + most[e->c[c].last + 1];
                    if (v > b) b = v;
                }
            most[i] = b;
        }
        e->track[t] = most[0] > e->cap[t];
        n += e->track[t];
    }
    return n;
}

/* Sets the charges and their credit sum_t lam_t c_t. */
static void set_lam(exact *e, const double *lam) {
    e->lam_credit = 0.0;
    for (int t = 0; t < e->T; t++) {
        e->lam[t] = e->track[t] ? lam[t] : 0.0;
        e->lam_credit += e->lam[t] * e->cap[t];
    }
}

/* Records a feasible path of price p as the search's best when cheaper. */
static void keep_best(exact *e, const int *pc, const int *pt, int len, double p) {
    if (!(p < e->ub)) return;
    e->ub = p;
    memcpy(e->bpc, pc, (size_t)len * sizeof *pc);
    memcpy(e->bpt, pt, (size_t)len * sizeof *pt);
    e->blen = len;
    e->found = 1;
    if (p <= e->floor * (1 + EXACT_EPS) && !e->aborted) e->aborted = 3;
}

/* Subgradient ascent on the Lagrangian bound at threshold e->h, starting
 * from the charges in e->lam. Leaves the best charges in e->lam and e->dl
 * at them; feasible relaxed paths improve the search's best. Returns the
 * best bound on M(h) found. */
static double subgradient(exact *e) {
    const int T = e->T;
    double *lam = e->scratch; /* [T] trial charges (scratch >= T) */
    double *best_lam = malloc((size_t)T * sizeof *best_lam);
    double best = G(&e->d0, 0, -1); /* lambda = 0: U(h) */
    if (!best_lam) return best;
    memset(best_lam, 0, (size_t)T * sizeof *best_lam);
    memcpy(lam, e->lam, (size_t)T * sizeof *lam);
    double mu = 2.0;
    int stall = 0;
    for (int it = 0; it < EXACT_SUBGRAD; it++) {
        set_lam(e, lam);
        suffix_dp(e, &e->dl, e->h, e->lam, 1);
        double lb = G(&e->dl, 0, -1) - e->lam_credit;
        if (lb > best * (1 + EXACT_EPS)) {
            best = lb;
            memcpy(best_lam, e->lam, (size_t)T * sizeof *best_lam);
            stall = 0;
        } else if (++stall >= 5) {
            mu *= 0.5;
            stall = 0;
        }
        int len = 0;
        trace(e, &e->dl, 0, -1, e->pc, e->pt, &len);
        if (path_fits(e, e->pc, e->pt, len))
            keep_best(e, e->pc, e->pt, len, path_price(e, e->pc, len));
        if (e->aborted || best >= e->ub * (1 - EXACT_EPS) || mu < 1e-6) break;
        /* Step along the overuse (e->tmp holds the path's units). */
        double norm = 0.0;
        for (int t = 0; t < T; t++) {
            if (!e->track[t]) continue;
            double g = (double)(e->tmp[t] - e->cap[t]);
            if (e->lam[t] <= 0 && g < 0) continue;
            norm += g * g;
        }
        if (norm == 0.0) break; /* the path fits with no slack charged: optimal */
        double target = isfinite(e->ub) ? e->ub : (best > 0 ? 1.1 * best : 1.0);
        double step = mu * (target - lb) / norm;
        for (int t = 0; t < T; t++) {
            if (!e->track[t]) continue;
            double v = e->lam[t] + step * (double)(e->tmp[t] - e->cap[t]);
            lam[t] = v > 0 ? v : 0.0;
        }
    }
    set_lam(e, best_lam);
    suffix_dp(e, &e->dl, e->h, e->lam, 1);
    free(best_lam);
    return best;
}

static uint64_t hash_key(const int *k, int n) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)k[i];
        h *= 1099511628211ULL;
        h ^= h >> 29;
    }
    return h;
}

/* Returns 1 when state key was reached before at a price <= price (the
 * node can be dropped); otherwise records price and returns 0. The table
 * is a lossy cache: after EXACT_MEMO_PROBE occupied slots the first is
 * overwritten, which only forgets a state (never wrongly drops a node). */
static int memo_seen(exact *e, const int *key, double price) {
    uint64_t mask = (uint64_t)e->memo_size - 1, first = hash_key(key, e->key_len) & mask;
    uint64_t slot = first;
    for (int p = 0; p < EXACT_MEMO_PROBE; p++, slot = (slot + 1) & mask) {
        int *k = e->memo_keys + slot * (uint64_t)e->key_len;
        if (e->memo_gen[slot] != e->gen) break; /* empty: insert here */
        if (!memcmp(k, key, (size_t)e->key_len * sizeof *k)) {
            if (e->memo_val[slot] <= price) return 1;
            e->memo_val[slot] = price;
            return 0;
        }
    }
    if (e->memo_gen[slot] == e->gen) slot = first; /* all probed slots taken */
    memcpy(e->memo_keys + slot * (uint64_t)e->key_len, key, (size_t)e->key_len * sizeof *key);
    e->memo_val[slot] = price;
    e->memo_gen[slot] = e->gen;
    return 0;
}

static int cmp_kid(const void *a, const void *b) {
    const kid *x = a, *y = b;
    if (x->bound != y->bound) return x->bound < y->bound ? -1 : 1;
    return x->c - y->c;
}

/* Lower bound on the price of plans continuing from layer i after type
 * prev, with `price` spent, after adding k units of type t (t = -1: none)
 * to the units used: left[s] = sum_u w_su (c_u - used_u) before the
 * addition, slack = sum_u lam_u (c_u - used_u) likewise. INFINITY when a
 * surrogate shows that no completion fits the units left. */
static double node_bound(const exact *e, int i, int prev, double price, const double *left,
                         double slack, int t, int k) {
    for (int s = 0; s < e->n_sur; s++)
        if (G(&e->sur[s], i, prev) > left[s] - (t >= 0 ? e->w[s * e->T + t] * k : 0.0))
            return INFINITY;
    double a = price + G(&e->d0, i, prev);
    double b = price + G(&e->dl, i, prev) - (slack - (t >= 0 ? e->lam[t] * k : 0.0));
    return a > b ? a : b;
}

/* Depth-first search from layer i after a stage of type prev, with the
 * path e->pc/pt[0..depth) costing `price` and using e->used units.
 * Improves e->ub and e->bpc/bpt. */
static void bnb(exact *e, int i, int prev, double price, int depth) {
    if (e->aborted) return;
    if ((++e->nodes % EXACT_CHECK_EVERY) == 0 && solve_ctx_time_out(e->ctx)) {
        e->aborted = 1;
        return;
    }
    double left[MODEL_MAX_TYPES + 2], slack = 0.0;
    for (int s = 0; s < e->n_sur; s++) {
        left[s] = 0.0;
        for (int t = 0; t < e->T; t++) left[s] += e->w[s * e->T + t] * (e->cap[t] - e->used[t]);
    }
    for (int t = 0; t < e->T; t++) slack += e->lam[t] * (e->cap[t] - e->used[t]);
    if (node_bound(e, i, prev, price, left, slack, -1, 0) >= e->ub * (1 - EXACT_EPS)) return;
    /* The uncharged relaxed completion fits the units left: it is this
     * node's best completion. */
    int len = depth;
    trace(e, &e->d0, i, prev, e->pc, e->pt, &len);
    if (path_fits(e, e->pc, e->pt, len)) {
        keep_best(e, e->pc, e->pt, len, price + G(&e->d0, i, prev));
        return;
    }
    int key[2 + MODEL_MAX_TYPES], n = 0;
    key[n++] = i;
    key[n++] = prev;
    for (int t = 0; t < e->T; t++)
        if (e->track[t]) key[n++] = e->used[t];
    if (memo_seen(e, key, price)) return;

    long base = e->n_kids;
    for (int t = 0; t < e->T; t++) {
        if (t == prev) continue;
        for (int c = e->off[i * e->T + t]; c < e->off[i * e->T + t + 1]; c++) {
            const cand *cc = &e->c[c];
            if (cc->theta < e->h) continue;
            if (e->track[t] && e->used[t] + cc->units > e->cap[t]) continue;
            double b = node_bound(e, cc->last + 1, t, price + cc->price, left, slack, t,
                                  cc->units);
            if (b >= e->ub * (1 - EXACT_EPS) || isinf(b)) continue;
            if (e->n_kids == e->cap_kids) {
                long nc = e->cap_kids ? 2 * e->cap_kids : 4096;
                kid *nk = realloc(e->kids, (size_t)nc * sizeof *nk);
                if (!nk) {
                    e->aborted = 2;
                    e->n_kids = base;
                    return;
                }
                e->kids = nk;
                e->cap_kids = nc;
            }
            e->kids[e->n_kids++] = (kid){b, c, t};
        }
    }
    long end = e->n_kids;
    qsort(e->kids + base, (size_t)(end - base), sizeof *e->kids, cmp_kid);
    for (long k = base; k < end && !e->aborted; k++) {
        kid kd = e->kids[k];
        if (kd.bound >= e->ub * (1 - EXACT_EPS)) break;
        const cand *cc = &e->c[kd.c];
        e->pc[depth] = kd.c;
        e->pt[depth] = kd.t;
        e->used[kd.t] += cc->units;
        bnb(e, cc->last + 1, kd.t, price + cc->price, depth + 1);
        e->used[kd.t] -= cc->units;
    }
    e->n_kids = base;
}

/* Adds surrogate s with weights w[T] (its DP at e->h, no prices). Returns
 * 0 when it proves that no plan fits the counts, else 1. */
static int add_surrogate(exact *e, const double *w) {
    int s = e->n_sur++;
    double credit = 0.0;
    for (int t = 0; t < e->T; t++) {
        e->w[s * e->T + t] = w[t];
        credit += w[t] * e->cap[t];
    }
    suffix_dp(e, &e->sur[s], e->h, &e->w[s * e->T], 0);
    return !(G(&e->sur[s], 0, -1) > credit);
}

/* Builds the surrogates at e->h: all tracked units alike, each tracked type
 * alone, and weights found by a subgradient search that looks for a plan
 * within the counts (kept as the search's best when found) or for weights
 * under which every plan needs more weighted units than there are.
 * Returns 0 when a surrogate proves that no plan fits, else 1. */
static int surrogates(exact *e) {
    const int T = e->T;
    double *w = e->scratch; /* [T] */
    e->n_sur = 0;
    for (int t = 0; t < T; t++) w[t] = e->track[t];
    if (!add_surrogate(e, w)) return 0;
    for (int u = 0; u < T; u++) {
        if (!e->track[u]) continue;
        for (int t = 0; t < T; t++) w[t] = t == u;
        if (!add_surrogate(e, w)) return 0;
    }
    /* Feasibility subgradient on the weights, scratch table e->dl. */
    for (int t = 0; t < T; t++) w[t] = e->track[t];
    double best_gap = -INFINITY;
    double *best_w = malloc((size_t)T * sizeof *best_w);
    if (!best_w) return 1;
    memcpy(best_w, w, (size_t)T * sizeof *w);
    for (int it = 0; it < EXACT_SUBGRAD / 2; it++) {
        suffix_dp(e, &e->dl, e->h, w, 0);
        int len = 0;
        trace(e, &e->dl, 0, -1, e->pc, e->pt, &len);
        if (path_fits(e, e->pc, e->pt, len)) {
            keep_best(e, e->pc, e->pt, len, path_price(e, e->pc, len));
            break; /* feasible: no weights can prove otherwise */
        }
        double credit = 0.0, sum = 0.0;
        for (int t = 0; t < T; t++) {
            credit += w[t] * e->cap[t];
            sum += w[t];
        }
        double gap = (G(&e->dl, 0, -1) - credit) / sum;
        if (gap > best_gap) {
            best_gap = gap;
            memcpy(best_w, w, (size_t)T * sizeof *w);
        }
        if (gap > 0) break;
        /* Weigh the overfilled types up (e->tmp: the path's units). */
        double step = 1.0 / (1.0 + it), norm = 0.0;
        for (int t = 0; t < T; t++) {
            if (!e->track[t]) continue;
            double v = w[t] + step * (double)(e->tmp[t] - e->cap[t]) / (e->cap[t] + 1.0);
            w[t] = v > 0 ? v : 0.0;
            norm += w[t];
        }
        if (norm <= 0) break;
        for (int t = 0; t < T; t++) w[t] *= (double)T / norm;
    }
    int ok = add_surrogate(e, best_w);
    free(best_w);
    return ok;
}

/* M(h) under capacity, e->d0 being at h: looks only for prices below ub0,
 * knowing M(h) >= floor. Returns 1 with the plan in e->bpc/bpt/blen and its
 * price in e->ub, 0 when no plan is below ub0, -1 when the clock ran out,
 * SOLVE_ERROR when memory ran out. */
static int capacitated(exact *e, double ub0, double floor) {
    int nt = mark_tracked(e);
    e->key_len = 2 + nt;
    if (!e->memo_keys) {
        long size = 1;
        while (size * 2 * (2 + e->T) <= EXACT_MEMO_INTS) size *= 2;
        /* keys are key_len <= 2 + T ints, stored at stride key_len */
        e->memo_keys = malloc((size_t)size * (size_t)(2 + e->T) * sizeof *e->memo_keys);
        e->memo_val = malloc((size_t)size * sizeof *e->memo_val);
        e->memo_gen = calloc((size_t)size, sizeof *e->memo_gen);
        if (!e->memo_keys || !e->memo_val || !e->memo_gen)
            return set_error(e, "out of memory"); /* freed by solve_exact */
        e->memo_size = size;
        e->gen = 0;
    }
    e->gen++; /* empties the memo: stamps start at 0, generations at 1 */
    e->ub = ub0;
    e->floor = floor;
    e->found = 0;
    e->aborted = 0;
    e->n_kids = 0;
    if (surrogates(e) == 0) return 0; /* no plan fits the counts at all */
    if (e->aborted == 3) return 1;
    double lb = subgradient(e);
    if (e->aborted == 3) return 1;
    if (lb < floor) lb = floor;
    if (e->found && lb >= e->ub * (1 - EXACT_EPS)) return 1; /* proven by the bound */
    if (lb >= e->ub * (1 - EXACT_EPS)) return e->found;      /* nothing below ub0 */
    memset(e->used, 0, (size_t)e->T * sizeof *e->used);
    long before = e->nodes;
    bnb(e, 0, -1, 0.0, 0);
    e->ctx->res->evaluations += e->nodes - before;
    if (e->aborted == 2) return set_error(e, "out of memory");
    if (e->aborted == 1) return -1;
    return e->found;
}

/* ---- the sweep -------------------------------------------------------- */

/* Explains in res->why why no assignment is feasible. */
static void explain_infeasible(exact *e, int capacity) {
    solve_result *res = e->ctx->res;
    const model_job *job = e->ctx->job;
    if (e->ctx->fixed) {
        snprintf(res->why, sizeof res->why,
                 "exact: no assignment that agrees with the fixed layers is feasible: the stages "
                 "that hold them fit no unit's memory, %.6g samples/s or the free units, or "
                 "cannot be chained with the rest",
                 job->min_throughput);
        return;
    }
    if (capacity) {
        snprintf(res->why, sizeof res->why,
                 "exact: no assignment is feasible: every plan whose stages fit memory and "
                 "reach %.6g samples/s needs more units of some type than are free",
                 job->min_throughput);
        return;
    }
    /* Is some layer in no usable candidate? (difference array over spans) */
    int *cover = calloc((size_t)e->L + 1, sizeof *cover);
    int bad = -1;
    if (cover) {
        for (int i = 0; i < e->L; i++)
            for (int c = e->off[i * e->T]; c < e->off[(i + 1) * e->T]; c++) {
                cover[i]++;
                cover[e->c[c].last + 1]--;
            }
        for (int l = 0, run = 0; l < e->L && bad < 0; l++) {
            run += cover[l];
            if (run == 0) bad = l;
        }
        free(cover);
    }
    if (bad >= 0)
        snprintf(res->why, sizeof res->why,
                 "exact: no assignment is feasible: on every type, every stage holding layer "
                 "'%s' exceeds a unit's memory, can never reach %.6g samples/s, or needs more "
                 "units than the type has free",
                 job->layers[bad].name, job->min_throughput);
    else
        snprintf(res->why, sizeof res->why,
                 "exact: no assignment is feasible: the stages that fit memory and reach "
                 "%.6g samples/s with the units their type has free cannot be chained over "
                 "all layers (neighbouring stages must differ in type)",
                 job->min_throughput);
}

static void exact_free(exact *e) {
    free(e->c);
    free(e->off);
    free(e->th);
    dptab_free(&e->d0);
    dptab_free(&e->dl);
    for (int s = 0; e->sur && s < e->T + 2; s++) dptab_free(&e->sur[s]);
    free(e->sur);
    free(e->w);
    free(e->lam);
    free(e->cap);
    free(e->track);
    free(e->used);
    free(e->tmp);
    free(e->scratch);
    free(e->pc);
    free(e->pt);
    free(e->bpc);
    free(e->bpt);
    free(e->assign);
    free(e->kids);
    free(e->memo_keys);
    free(e->memo_val);
    free(e->memo_gen);
}

int solve_exact(solve_ctx *ctx) {
    const int L = ctx->job->n_layers, T = ctx->cl->n_types;
    solve_result *res = ctx->res;
    exact e = {.ctx = ctx, .L = L, .T = T};
    int rc = 0;

    e.assign = malloc((size_t)L * sizeof *e.assign);
    if (!e.assign) return set_error(&e, "out of memory");
    /* Incumbent: the homogeneous plans (T evaluations), those that agree
     * with the fixed layers. */
    for (int t = 0; t < T; t++) {
        int agree = 1;
        for (int l = 0; l < L; l++) {
            e.assign[l] = t;
            if (ctx->fixed && ctx->fixed[l] >= 0 && ctx->fixed[l] != t) agree = 0;
        }
        if (agree) solve_ctx_eval(ctx, e.assign);
    }

    int b = build_candidates(&e);
    if (b == SOLVE_ERROR) {
        rc = SOLVE_ERROR;
        goto done;
    }
    if (b == 1) {
        res->stopped = 1; /* no bound known */
        goto done;
    }
    size_t ns = (size_t)(L + 1 > T ? L + 1 : T);
    e.lam = calloc((size_t)T, sizeof *e.lam);
    e.sur = calloc((size_t)T + 2, sizeof *e.sur);
    e.w = calloc(((size_t)T + 2) * T, sizeof *e.w);
    e.cap = malloc((size_t)T * sizeof *e.cap);
    e.track = calloc((size_t)T, sizeof *e.track);
    e.used = malloc((size_t)T * sizeof *e.used);
    e.tmp = malloc((size_t)T * sizeof *e.tmp);
    e.scratch = malloc(ns * sizeof *e.scratch);
    e.pc = malloc((size_t)L * sizeof *e.pc);
    e.pt = malloc((size_t)L * sizeof *e.pt);
    e.bpc = malloc((size_t)L * sizeof *e.bpc);
    e.bpt = malloc((size_t)L * sizeof *e.bpt);
    if (dptab_alloc(&e.d0, L, T) < 0 || dptab_alloc(&e.dl, L, T) < 0 ||
        !e.sur || !e.w || !e.lam || !e.cap || !e.track || !e.used || !e.tmp || !e.scratch || !e.pc || !e.pt ||
        !e.bpc || !e.bpt) {
        rc = set_error(&e, "out of memory");
        goto done;
    }
    for (int t = 0; t < T; t++) e.cap[t] = ctx->cl->types[t].count;
    for (int s = 0; s < T + 2; s++)
        if (dptab_alloc(&e.sur[s], L, T) < 0) {
            rc = set_error(&e, "out of memory");
            goto done;
        }

    /* The sweep over thresholds, ascending. For every threshold k >= m not
     * yet settled, M(th[k]) >= max(mlow, ulow): mlow is the largest M found
     * or Lagrangian bound on M proven at a threshold <= th[m] (M is
     * non-decreasing), ulow the last U computed (U is non-decreasing too). */
    double mlow = 0.0, ulow = 0.0;
    int m = 0, settled_all = 0, cap_infeasible = 0, have_lam = 0, any_u = 0;
    e.top = -1;
    while (!res->stopped) {
        double bound = mlow > ulow ? mlow : ulow;
        while (m < e.n_th && cost_of(&e, bound, e.th[m]) >= ctx->best_cost * (1 - EXACT_EPS))
            m++; /* V(th[m]) >= S / th[m] / 3600 bound >= the incumbent */
        if (m >= e.n_th) {
            settled_all = 1;
            break;
        }
        if (solve_ctx_time_out(ctx)) {
            res->stopped = 1;
            break;
        }
        e.h = e.th[m];
        suffix_dp(&e, &e.d0, e.h, NULL, 1);
        double u = G(&e.d0, 0, -1);
        if (m == 0) any_u = isfinite(u);
        if (!isfinite(u)) {
            settled_all = 1; /* no plan at all from th[m] up */
            break;
        }
        if (u > ulow) ulow = u;
        if (cost_of(&e, ulow > mlow ? ulow : mlow, e.h) >= ctx->best_cost * (1 - EXACT_EPS))
            continue; /* the loop above skips m and what it can after */
        int len = 0;
        trace(&e, &e.d0, 0, -1, e.pc, e.pt, &len);
        if (path_fits(&e, e.pc, e.pt, len)) {
            offer(&e, e.pc, e.pt, len);
            if (u > mlow) mlow = u;
            m = first_above(&e, path_theta(&e, e.pc, len));
            continue;
        }
        double floor = ulow > mlow ? ulow : mlow;
        if (have_lam) {
            /* The charges of the last search bound M here too. */
            suffix_dp(&e, &e.dl, e.h, e.lam, 1);
            double lb = G(&e.dl, 0, -1) - e.lam_credit;
            if (lb > floor) floor = lb;
            if (floor > mlow) mlow = floor; /* bounds M beyond th[m] too */
            if (cost_of(&e, floor, e.h) >= ctx->best_cost * (1 - EXACT_EPS)) {
                m++;
                continue;
            }
        }
        if (e.top < 0) {
            /* The last threshold with any plan (U finite is monotone):
             * binary search, e.dl as scratch. */
            int lo = m, hi = e.n_th - 1;
            while (lo < hi) {
                int mid = lo + (hi - lo + 1) / 2;
                suffix_dp(&e, &e.dl, e.th[mid], NULL, 1);
                if (isfinite(G(&e.dl, 0, -1))) lo = mid;
                else hi = mid - 1;
            }
            e.top = lo;
        }
        /* A plan at any h' >= h beats the incumbent only if its price is
         * below best * 3600 h' / S, largest at the top threshold. */
        double ub0 = isfinite(ctx->best_cost)
            ? ctx->best_cost * 3600.0 * e.th[e.top] / ctx->job->samples * (1 + EXACT_EPS)
            : INFINITY;
        int r = capacitated(&e, ub0, floor);
        have_lam = 1;
        if (r == SOLVE_ERROR) {
            rc = SOLVE_ERROR;
            goto done;
        }
        if (r < 0) {
            res->stopped = 1;
            break;
        }
        if (r == 0) {
            /* M(h') >= ub0 for every h' >= h: none beats the incumbent (or,
             * with no incumbent, no plan fits the counts at all). */
            if (!isfinite(ub0)) cap_infeasible = 1;
            settled_all = 1;
            break;
        }
        offer(&e, e.bpc, e.bpt, e.blen);
        if (e.ub > mlow) mlow = e.ub;
        m = first_above(&e, path_theta(&e, e.bpc, e.blen));
    }

    if (settled_all) {
        res->optimal = res->found;
        res->lower_bound = res->found ? ctx->best_cost : INFINITY;
        if (!res->found) {
            res->infeasible = 1;
            explain_infeasible(&e, cap_infeasible || any_u);
        }
    } else {
        /* Stopped: every threshold k >= m not settled has V(th[k]) >=
         * S / th[k] / 3600 bound, smallest at the largest threshold. */
        double bound = mlow > ulow ? mlow : ulow;
        double lb = cost_of(&e, bound, e.th[e.top >= 0 ? e.top : e.n_th - 1]);
        res->lower_bound = lb < ctx->best_cost ? lb : ctx->best_cost;
    }

done:
    exact_free(&e);
    return rc;
}
