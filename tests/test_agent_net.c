/* test_agent_net.c -- the agent's network (agent/net.h) and rollouts
 * (agent/rollout.h): gradients against finite differences, the features
 * and masks a rollout records against the environment's own, padding
 * across instances of different sizes, and a policy that can only pick
 * allowed actions.
 *
 * Instances are built here in C (no files): a 3-layer job on a 2-type
 * cluster ("small") and a 2-layer job on a 3-type cluster with two nodes
 * per type ("wide"), so that one batch mixes L = 3, 2 and K = 2, 3.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/net.h"
#include "agent/pool.h"
#include "agent/rollout.h"
#include "agent/trainconf.h"
#include "env/gym.h"
#include "env/place.h"
#include "solvers/placers.h"
#include "nets/params.h"

typedef struct {
    model_type types[3];
    model_layer layers[3];
    model_node nodes[6];
    model_zone zones[1];
    model_cluster cl;
    model_job job;
} inst;

/* small: cpu and gpu, 3 layers (an IO-heavy one first). */
static void make_small(inst *in) {
    memset(in, 0, sizeof *in);
    in->types[0] = (model_type){"cpu", 0, 1e12, 1e10, 1e9, 1e11, 1.0, 8};
    in->types[1] = (model_type){"gpu", 1, 1e13, 1e9, 2e9, 1.6e10, 3.0, 8};
    in->layers[0] = (model_layer){"emb", 1e6, 1e5, 1e4, 1e6, 5e9};
    in->layers[1] = (model_layer){"fc1", 1e9, 0, 1e4, 4e6, 1e8};
    in->layers[2] = (model_layer){"fc2", 1e9, 0, 1e3, 4e6, 1e8};
    in->zones[0] = (model_zone){"z"};
    in->cl = (model_cluster){2, in->types, 0, NULL, 1, in->zones, 1e9, 1e-3, NULL, NULL};
    in->job = (model_job){"small", 3, in->layers, 100, 1e8, 1000, 0.05, MODEL_DEFAULT_SHARD,
                          0, NULL, {{0, 0, 0, 0}, 0}};
}

/* wide: three types, two nodes of two units each per type, 2 layers. */
static void make_wide(inst *in) {
    memset(in, 0, sizeof *in);
    in->types[0] = (model_type){"cpu", 0, 1e12, 1e10, 1e9, 1e11, 1.0, 4};
    in->types[1] = (model_type){"gpu", 1, 1e13, 1e9, 2e9, 1.6e10, 3.0, 4};
    in->types[2] = (model_type){"big", 1, 2e13, 2e9, 4e9, 4e10, 7.0, 4};
    in->layers[0] = (model_layer){"a", 2e9, 1e4, 1e5, 1e7, 1e9};
    in->layers[1] = (model_layer){"b", 3e9, 0, 1e3, 2e7, 1e9};
    in->zones[0] = (model_zone){"z"};
    for (int n = 0; n < 6; n++)
        in->nodes[n] = (model_node){"", n / 2, 2, 2, 0, 5e9, 1e-5, 0};
    for (int n = 0; n < 6; n++) snprintf(in->nodes[n].name, sizeof in->nodes[n].name, "n%d", n);
    in->cl = (model_cluster){3, in->types, 6, in->nodes, 1, in->zones, 1e9, 1e-3, NULL, NULL};
    in->job = (model_job){"wide", 2, in->layers, 50, 1e8, 3000, 0.05, MODEL_DEFAULT_SHARD,
                          0, NULL, {{0, 0, 0, 0}, 0}};
}

static nn_params *make_params(const agent_net_dims *d, uint64_t seed) {
    nn_tensor_spec t[AN_N_TENSORS];
    char err[256];
    agent_net_table(d, t);
    nn_params *p = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    assert_non_null(p);
    nn_params_init(p, seed);
    /* non-zero biases too, so that their gradients are exercised */
    for (int i = 0; i < p->n; i++)
        if (p->spec[i].ndim == 1) {
            float *w = nn_param(p, i);
            for (size_t e = 0; e < p->size[i]; e++) w[e] += 0.05f * (float)((e * 7 + (size_t)i) % 5) - 0.12f; /* never exactly 0 */
        }
    return p;
}

static const agent_net_dims TINY = {6, 5, 6, 8, 3.0f};

/* ---------------------------------------------------------------------------
 * Gradients: the TYPE and NODE losses against central differences
 * ------------------------------------------------------------------------ */

typedef struct {
    agent_net_ws *ws;
    nn_params *p;
    agent_type_traj *tt;
    agent_node_traj *nt;
    float beta, scale;
} loss_ctx;

/* loss of both heads at the current parameters (grads are left dirty) */
static double total_loss(loss_ctx *c) {
    agent_loss_stats st = {0, 0, 0, 0};
    char err[256];
    assert_int_equal(agent_net_type_loss(c->ws, c->p, c->tt, c->beta, c->scale, &st, err, sizeof err), 0);
    if (c->nt->N > 0)
        assert_int_equal(agent_net_node_loss(c->ws, c->p, c->nt, c->beta, c->scale, 3, &st, err, sizeof err), 0);
    return c->scale * (st.pg - c->beta * st.entropy);
}

/* check_fd compares the analytic gradient g (of total_loss at c's
 * parameters) with central differences on a few entries of every tensor
 * from index `first` on; returns the entries that disagree (printed),
 * *checked and *nonzero count the entries checked and those with a
 * non-zero gradient. */
static int check_fd(loss_ctx *c, const float *g, int first, int *checked, int *nonzero) {
    nn_params *p = c->p;
    int bad = 0;
    *checked = *nonzero = 0;
    for (int i = first; i < p->n; i++) {
        float *w = nn_param(p, i);
        for (size_t k = 0; k < p->size[i] && k < 6; k++) {
            size_t e = (k * 37 + 11) % p->size[i];
            float keep = w[e];
            /* Central differences at three step sizes: a ReLU kink within h
             * of a pre-activation spoils the larger steps, float noise the
             * smallest; a wrong gradient fails all three. */
            double an = g[p->off[i] + e], fd = 0;
            static const double steps[3] = {2e-3, 4e-4, 1e-4}, tol[3] = {1e-4, 1e-4, 4e-4};
            int ok = 0;
            for (int hs = 0; hs < 3 && !ok; hs++) {
                double h = steps[hs];
                w[e] = keep + (float)h;
                double lp = total_loss(c);
                w[e] = keep - (float)h;
                double lm = total_loss(c);
                w[e] = keep;
                fd = (lp - lm) / ((double)(keep + (float)h) - (double)(keep - (float)h));
                ok = fabs(fd - an) <= tol[hs] + 3e-2 * fabs(fd);
            }
            if (fabs(an) > 1e-6) (*nonzero)++;
            else if (getenv("AGENT_TEST_VERBOSE")) print_message("zero: %s/%s[%zu]\n", p->spec[i].layer, p->spec[i].name, e);
            if (!ok) {
                print_message("%s/%s[%zu]: analytic %g, finite difference %g\n", p->spec[i].layer,
                              p->spec[i].name, e, an, fd);
                bad++;
            }
            (*checked)++;
        }
    }
    return bad;
}

/* The gradient tests' trajectories: five episodes recorded for training,
 * two on the small instance and three on the wide one, played from the
 * weights make_params(&TINY, wseed) with `placement` and sampling seed
 * `seed`. */
typedef struct {
    inst a, b;
    nn_params *p;
    agent_rollout *ro;
    agent_net_ws *ws;
} five_eps;

static void five_play(five_eps *f, uint64_t wseed, int placement, uint64_t seed) {
    make_small(&f->a);
    make_wide(&f->b);
    f->p = make_params(&TINY, wseed);
    f->ro = agent_rollout_create(&TINY);
    f->ws = agent_net_ws_create(&TINY);
    agent_instance ai[2] = {{&f->a.job, &f->a.cl, 10.0, 0, 0}, {&f->b.job, &f->b.cl, 10.0, 0, 0}};
    int of[5] = {0, 0, 1, 1, 1};
    agent_rollout_opts o = {placement, 0, 4.0, seed, 1, 0, 5, 1, NULL, AGENT_REWARD_LOG, NULL, NULL};
    char err[256];
    assert_int_equal(agent_rollout_run(f->ro, f->p, ai, 2, of, 5, &o, NULL, err, sizeof err), 0);
}

static void five_free(five_eps *f) {
    agent_net_ws_free(f->ws);
    agent_rollout_free(f->ro);
    nn_params_free(f->p);
}

static void test_gradients(void **state) {
    (void)state;
    five_eps f;
    five_play(&f, 7, PLACER_PLACE_POLICY, 3);
    nn_params *p = f.p;
    agent_rollout *ro = f.ro;
    float *adv, *nadv;
    const int *owner;
    agent_type_traj *tt = agent_rollout_type_traj(ro, &adv);
    agent_node_traj *nt = agent_rollout_node_traj(ro, &nadv, &owner);
    assert_true(nt->N > 0); /* the wide instance has nodes */
    for (int e = 0; e < 5; e++) adv[e] = 0.3f * (float)(e - 2);
    for (int i = 0; i < nt->N; i++) nadv[i] = 0.2f * (float)((i % 3) - 1);
    loss_ctx c = {f.ws, p, tt, nt, 0.1f, 0.25f};
    nn_params_zero_grad(p);
    total_loss(&c);
    if (getenv("AGENT_TEST_VERBOSE"))
        for (int i = 0; i < p->n; i++) {
            double ss = 0;
            for (size_t e = 0; e < p->size[i]; e++) ss += (double)nn_grad(p, i)[e] * nn_grad(p, i)[e];
            print_message("%s/%s |g| = %g\n", p->spec[i].layer, p->spec[i].name, sqrt(ss));
        }
    float *g = malloc(p->total * sizeof *g);
    memcpy(g, p->grads, p->total * sizeof *g);
    int checked = 0, nonzero = 0;
    assert_int_equal(check_fd(&c, g, 0, &checked, &nonzero), 0);
    assert_true(checked > 100);
    print_message("gradient check: %d entries, %d non-zero\n", checked, nonzero);
    assert_true(nonzero > checked / 2); /* the check is not vacuous */
    free(g);
    five_free(&f);
}

/* Soft targets (agent_type_traj.target): the gradient of
 * -adv sum_k q_k logp_k against central differences on every tensor, and
 * a one-hot target on the played action is the plain loss exactly. */
static void test_gradients_soft(void **state) {
    (void)state;
    five_eps f;
    five_play(&f, 9, PLACER_PLACE_NONE, 5);
    nn_params *p = f.p;
    agent_rollout *ro = f.ro;
    float *adv;
    agent_type_traj *tt = agent_rollout_type_traj(ro, &adv);
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(ro, &T, &K, &action, &mask, &probs);
    int B = tt->B;
    for (int e = 0; e < B; e++) adv[e] = 0.4f * (float)(e - 1);
    agent_node_traj none = {0, 1, NULL, NULL, NULL, NULL, NULL};
    loss_ctx c = {f.ws, p, tt, &none, 0.05f, 0.5f};
    /* the plain loss, then every decision's one-hot target: the same */
    double plain = total_loss(&c);
    float *target = malloc((size_t)T * B * K * sizeof *target);
    for (size_t i = 0; i < (size_t)T * B * K; i++) target[i] = 0.0f;
    for (int r = 0; r < T * B; r++)
        if (action[r] >= 0) target[(size_t)r * K + action[r]] = 1.0f;
        else target[(size_t)r * K] = -1.0f;
    tt->target = target;
    assert_true(fabs(total_loss(&c) - plain) <= 1e-9 * (1 + fabs(plain)));
    /* soft rows at every other decision that has two allowed types or
     * more: weights 1, 2, 3, ... over the allowed types, normalised; the
     * other decisions have none (-1) and keep their one-hot lesson */
    int soft = 0;
    for (int r = 0; r < T * B; r++) {
        float *q = target + (size_t)r * K;
        int allowed = 0;
        for (int k = 0; k < K; k++) allowed += mask[(size_t)r * K + k];
        for (int k = 0; k < K; k++) q[k] = 0.0f;
        if (action[r] < 0 || allowed < 2 || r % 2) {
            q[0] = -1.0f;
            continue;
        }
        float sum = 0;
        for (int k = 0, j = 1; k < K; k++)
            if (mask[(size_t)r * K + k]) sum += (float)j++;
        for (int k = 0, j = 1; k < K; k++)
            if (mask[(size_t)r * K + k]) q[k] = (float)j++ / sum;
        soft++;
    }
    assert_true(soft >= 4);
    double with_soft = total_loss(&c);
    assert_true(fabs(with_soft - plain) > 1e-4); /* the targets change the loss */
    nn_params_zero_grad(p);
    total_loss(&c);
    float *g = malloc(p->total * sizeof *g);
    memcpy(g, p->grads, p->total * sizeof *g);
    int checked = 0, nonzero = 0;
    assert_int_equal(check_fd(&c, g, 0, &checked, &nonzero), 0);
    print_message("soft-target gradient check: %d soft decisions, %d entries, %d non-zero\n", soft, checked,
                  nonzero);
    assert_true(nonzero > checked / 3);
    free(g);
    free(target);
    five_free(&f);
}

/* ---------------------------------------------------------------------------
 * Features and masks: what the rollout records is what gym observes
 * ------------------------------------------------------------------------ */

/* The types a rollout held for an instance and the prices of the others
 * (agent_rollout_held_types). */
typedef struct {
    int n, x[AGENT_LA_MAX_HELD];
    const double *lam;
} held_set;

static held_set held_of(const agent_rollout *ro, int g) {
    held_set hs;
    hs.n = agent_rollout_held_types(ro, g, hs.x, &hs.lam);
    return hs;
}

/* held_over returns 1 when units used[] overrun a held type of hs. */
static int held_over(const held_set *hs, const int *used, const model_cluster *cl) {
    for (int h = 0; h < hs->n; h++)
        if (used[hs->x[h]] > cl->types[hs->x[h]].count) return 1;
    return 0;
}

/* check_lookahead recomputes the look-ahead features of rollout.h for the
 * rows of layer t by brute force with model_eval: "k for every remaining
 * layer", every "k on t..j, then one other type t2 on j+1..L-1", and every
 * completion starting with k (features 4-6: per throughput level, the
 * least-priced one on the cluster with unit counts lifted, among those
 * whose every stage from layer t on fits its type's count alone, the
 * units of those stages priced with the shadow prices lam[K] on top; the
 * cheapest of those by cost at the own prices, then checked on the real
 * counts; features 7-8: per level and end j of k's first stage, the
 * least-priced such completion, the cheapest of those that fit the real
 * counts -- where the rollout holds types' units (hs->n > 0, features
 * versions 8-9), the least-priced at the held run's prices among those
 * whose whole plan keeps those types within their counts). */
static int n_fit_checked, n_fit_apart; /* features 7-8 checked; of those, a fitting
                                        completion where feature 6 says the
                                        cheapest by stages does not fit */

static void check_lookahead(const agent_instance *in, const int *prefix, int t, int K,
                            const unsigned char *mask, const float *rw, const double *lam,
                            const held_set *hs) {
    const model_job *job = in->job;
    int L = job->n_layers, a[8];
    model_plan *plan = model_plan_create(L);
    model_type big[8];
    model_cluster nocount = *in->cl;
    for (int k = 0; k < K; k++) {
        big[k] = in->cl->types[k];
        big[k].count = 1 << 20;
    }
    nocount.types = big;
    double all[8], two[8], best = INFINITY, dp[8], dbest = INFINITY, fit[8], fbest = INFINITY;
    int dfit[8], dunique = 1, funique = 1;
    for (int k = 0; k < K; k++) {
        all[k] = two[k] = dp[k] = fit[k] = INFINITY;
        dfit[k] = 0;
        if (!mask[k]) continue;
        /* every completion a[t+1..L-1] (an odometer over K types), priced
         * on the cluster without unit counts: its price, cost, the least
         * throughput of its stages (those that reach layer t or later) and
         * whether it fits the real counts */
        int n = 1;
        for (int l = t + 1; l < L; l++) n *= K;
        double cpr[243], ccost[243], cth[243], cprh[243];
        int cfit[243], cj[243], cover[243], nc = 0;
        assert_true(n <= 243);
        for (int c = 0; c < n; c++) {
            for (int l = 0, v = c; l < L; l++)
                if (l < t) a[l] = prefix[l];
                else if (l == t) a[l] = k;
                else a[l] = v % K, v /= K;
            if (model_eval(job, &nocount, a, plan)) continue;
            int over = 0; /* a stage of the completion beyond its type's count */
            int used[8] = {0}; /* the whole plan's units per type */
            cpr[nc] = cprh[nc] = plan->unit_price;
            for (int q = 0; q < plan->n_stages; q++) {
                const model_stage *st = &plan->stages[q];
                used[st->type] += st->units;
                if (st->last < t) continue;
                over |= st->units > in->cl->types[st->type].count;
                cpr[nc] += st->units * lam[st->type];
                if (hs->n) cprh[nc] += st->units * hs->lam[st->type];
            }
            cover[nc] = held_over(hs, used, in->cl);
            if (over) continue;
            ccost[nc] = plan->cost;
            cth[nc] = INFINITY;
            for (int q = 0; q < plan->n_stages; q++)
                if (plan->stages[q].last >= t) cth[nc] = fmin(cth[nc], plan->stages[q].throughput);
            cj[nc] = t;
            while (cj[nc] + 1 < L && a[cj[nc] + 1] == k) cj[nc]++;
            cfit[nc++] = model_eval(job, in->cl, a, plan) == 0;
        }
        /* per level (R x AGENT_LA_RATIO^m, AGENT_LA_LEVELS of them, level 0
         * admits all), the least-priced completion, scored at its own
         * throughput */
        for (int m = 0; m < AGENT_LA_LEVELS; m++) {
            double h = m ? job->min_throughput * pow(AGENT_LA_RATIO, m) : 0, pmin = INFINITY;
            int at = -1;
            for (int c = 0; c < nc; c++) {
                if (cth[c] < h) continue;
                if (at >= 0 && fabs(cpr[c] - pmin) <= 1e-9 * pmin) dunique = 0;
                if (cpr[c] < pmin * (1 - 1e-9)) pmin = cpr[c], at = c;
            }
            if (at < 0) break;
            if (ccost[at] < dp[k] * (1 - 1e-9)) {
                dp[k] = ccost[at];
                dfit[k] = cfit[at];
            } else if (ccost[at] < dp[k] * (1 + 1e-9) && cfit[at] != dfit[k]) {
                dunique = 0; /* two paths of one cost, one fits */
            }
        }
        if (dp[k] < dbest) dbest = dp[k];
        /* features 7-8: per level and end j of the first stage, the
         * least-priced completion whose first stage ends at j, kept when
         * it fits the counts (held types, versions 8-9: among those whose
         * plan keeps them within their counts, at the held run's prices) */
        const double *fp = hs->n ? cprh : cpr;
        for (int m = 0; m < AGENT_LA_LEVELS; m++) {
            double h = m ? job->min_throughput * pow(AGENT_LA_RATIO, m) : 0;
            for (int j = t; j < L; j++) {
                double pmin = INFINITY;
                int at = -1;
                for (int c = 0; c < nc; c++) {
                    if (cj[c] != j || cth[c] < h || cover[c]) continue;
                    if (at >= 0 && fabs(fp[c] - pmin) <= 1e-9 * pmin &&
                        (cfit[c] != cfit[at] || fabs(ccost[c] - ccost[at]) > 1e-9 * ccost[at]))
                        funique = 0;
                    if (fp[c] < pmin * (1 - 1e-9)) pmin = fp[c], at = c;
                }
                if (at >= 0 && cfit[at] && ccost[at] < fit[k]) fit[k] = ccost[at];
            }
        }
        if (fit[k] < fbest) fbest = fit[k];
        for (int l = 0; l < L; l++) a[l] = l < t ? prefix[l] : k;
        if (model_eval(job, in->cl, a, plan) == 0) all[k] = plan->cost;
        two[k] = all[k];
        for (int j = t; j + 1 < L; j++)
            for (int k2 = 0; k2 < K; k2++) {
                if (k2 == k) continue;
                for (int l = t; l < L; l++) a[l] = l <= j ? k : k2;
                if (model_eval(job, in->cl, a, plan) == 0 && plan->cost < two[k]) two[k] = plan->cost;
            }
        if (two[k] < best) best = two[k];
    }
    for (int k = 0; k < K; k++) {
        const float *x = rw + k * AGENT_FT + GYM_TYPE_FEATS;
        if (!mask[k]) {
            for (int f = 0; f < AGENT_FX; f++) assert_true(x[f] == 0.0f);
            continue;
        }
        assert_true(x[0] == (isfinite(all[k]) ? 1.0f : 0.0f));
        assert_true(x[2] == (isfinite(two[k]) ? 1.0f : 0.0f));
        /* the rollout prices stages from prefix sums: equal to rounding */
        double w1 = isfinite(all[k]) ? fmin(log(all[k] / best), 4) : 4;
        double w3 = isfinite(two[k]) ? fmin(log(two[k] / best), 4) : 4;
        if (fabs(x[1] - w1) > 1e-5 || fabs(x[3] - w3) > 1e-5)
            fail_msg("layer %d type %d: look-ahead %g %g, by model_eval %g %g", t, k, x[1], x[3], w1, w3);
        assert_true(x[3] <= x[1] + 1e-6); /* a second stage is never worse */
        assert_true(x[4] == (isfinite(dp[k]) ? 1.0f : 0.0f));
        if (funique) {
            double w8 = isfinite(fit[k]) ? fmin(log(fit[k] / fbest), 4) : 4;
            if (x[7] != (isfinite(fit[k]) ? 1.0f : 0.0f) || fabs(x[8] - w8) > 1e-5)
                fail_msg("layer %d type %d: fitting completion %g %g, by model_eval %d %g", t, k, x[7], x[8],
                         isfinite(fit[k]), w8);
            n_fit_checked++;
            n_fit_apart += isfinite(fit[k]) && isfinite(dp[k]) && !dfit[k];
        }
        if (!dunique) continue; /* two completions at one price: either may be priced */
        double w5 = isfinite(dp[k]) ? fmin(log(dp[k] / dbest), 4) : 4;
        if (fabs(x[5] - w5) > 1e-5 || x[6] != (float)dfit[k])
            fail_msg("layer %d type %d: completion by stages %g fits %g, by model_eval %g fits %d", t, k, x[5], x[6],
                     w5, dfit[k]);
    }
    model_plan_free(plan);
}

static void test_features_and_masks(void **state) {
    (void)state;
    inst a, b;
    make_small(&a);
    make_wide(&b);
    nn_params *p = make_params(&TINY, 3);
    agent_rollout *ro = agent_rollout_create(&TINY);
    agent_instance ai[2] = {{&a.job, &a.cl, 1.0, 0, 0}, {&b.job, &b.cl, 1.0, 0, 0}};
    int of[4] = {0, 1, 0, 1};
    agent_rollout_opts o = {PLACER_PLACE_NONE, 0, 4.0, 11, 2, 0, 4, 1, NULL, AGENT_REWARD_LOG, NULL, NULL};
    char err[256];
    assert_int_equal(agent_rollout_run(ro, p, ai, 2, of, 4, &o, NULL, err, sizeof err), 0);
    agent_type_traj *tt = agent_rollout_type_traj(ro, NULL);
    /* T = max layers (3), K = max types (3), G = 2, B = 4 */
    assert_int_equal(tt->T, 3);
    assert_int_equal(tt->K, 3);
    assert_int_equal(tt->G, 2);
    assert_int_equal(tt->B, 4);
    assert_int_equal(tt->len[0], 3);
    assert_int_equal(tt->len[1], 2);
    /* layer features, time-major [T,G,FL]: replay gym's own */
    gym_opts go;
    gym_opts_default(&go);
    go.plan_only = 1;
    go.infeasible_reward = -4;
    for (int g = 0; g < 2; g++) {
        gym_env *env = gym_create(ai[g].job, ai[g].cl, &go, err, sizeof err);
        assert_non_null(env);
        float lf[3 * AGENT_FL];
        int L = gym_layer_features(env, lf);
        for (int t = 0; t < 3; t++)
            for (int f = 0; f < AGENT_FL; f++) {
                float want = t < L ? lf[t * AGENT_FL + f] : 0.0f;
                assert_true(tt->lf[((size_t)t * 2 + g) * AGENT_FL + f] == want);
            }
        gym_free(env);
    }
    /* each episode: replay its actions in a fresh env, compare every step */
    for (int e = 0; e < 4; e++) {
        const agent_instance *in = &ai[of[e]];
        gym_env *env = gym_create(in->job, in->cl, &go, err, sizeof err);
        gym_reset(env, 11 ^ (uint64_t)e);
        int K = in->cl->n_types;
        float prev[AGENT_FT] = {0};
        for (int t = 0; t < 3; t++) {
            size_t tb = (size_t)t * 4 + e;
            const float *gl = tt->glob + tb * AGENT_FG, *rw = tt->rows + tb * 3 * AGENT_FT;
            const uint8_t *mk = tt->mask + tb * 3;
            for (int f = 0; f < AGENT_FT; f++) assert_true(tt->prev[tb * AGENT_FT + f] == prev[f]);
            if (gym_phase(env) != GYM_PHASE_TYPE) { /* past the end: padding */
                for (int f = 0; f < AGENT_FG; f++) assert_true(gl[f] == 0.0f);
                for (int k = 0; k < 3; k++) assert_int_equal(mk[k], 0);
                assert_int_equal(tt->action[tb], -1);
                continue;
            }
            gym_observation ob;
            gym_obs(env, &ob);
            assert_memory_equal(gl, ob.global, sizeof ob.global);
            for (int k = 0; k < K; k++) /* gym's features first */
                assert_memory_equal(rw + k * AGENT_FT, ob.rows + k * GYM_TYPE_FEATS, GYM_TYPE_FEATS * sizeof(float));
            held_set hs = held_of(ro, of[e]);
            check_lookahead(in, gym_assignment(env, NULL), t, K, ob.mask, rw,
                            agent_rollout_shadow_prices(ro, of[e]), &hs);
            for (int k = 0; k < 3; k++) {
                if (k < K) {
                    assert_int_equal(mk[k], ob.mask[k]);
                } else { /* a padded candidate: zero features, masked */
                    assert_int_equal(mk[k], 0);
                    for (int f = 0; f < AGENT_FT; f++) assert_true(rw[k * AGENT_FT + f] == 0.0f);
                }
            }
            int act = tt->action[tb];
            assert_true(act >= 0 && act < K);
            assert_int_equal(ob.mask[act], 1);
            memcpy(prev, rw + (size_t)act * AGENT_FT, sizeof prev);
            assert_int_equal(gym_step(env, act, NULL), 0);
        }
        /* the recorded assignment is the episode's */
        const int *as = agent_rollout_assign(ro, e);
        int nd = 0;
        const int *ga = gym_assignment(env, &nd);
        assert_memory_equal(as, ga, (size_t)in->job->n_layers * sizeof(int));
        const agent_episode *ep = agent_rollout_episode(ro, e);
        if (ep->feasible) {
            model_plan *plan = model_plan_create(3);
            assert_int_equal(model_eval(in->job, in->cl, as, plan), 0);
            assert_true(plan->cost == ep->plan_cost);
            /* the log reward: r_type = -log(cost / ref), ref 1 */
            assert_true(ep->r_type == fmax(-log(plan->cost), -AGENT_LOG_CLIP));
            model_plan_free(plan);
        }
        gym_free(env);
    }
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* The brute forces below walk every plan of a job of at most 6 layers on
 * 3 types (3^L of them) on its cluster with the unit counts lifted. */
typedef struct {
    model_type big[3];     /* the types, counts lifted */
    model_cluster nocount; /* the cluster on them */
    model_plan *plan;      /* the plan scored last */
    int a[6];              /* its assignment [L] */
    int used[3];           /* its units per type */
    int n;                 /* plans: 3^L */
} bf_ctx;

/* bf_begin sets b up for instance in; bf_end frees what it holds. */
static void bf_begin(bf_ctx *b, const agent_instance *in) {
    b->nocount = *in->cl;
    for (int k = 0; k < 3; k++) {
        b->big[k] = in->cl->types[k];
        b->big[k].count = 1 << 20;
    }
    b->nocount.types = b->big;
    b->plan = model_plan_create(in->job->n_layers);
    b->n = 1;
    for (int l = 0; l < in->job->n_layers; l++) b->n *= 3;
}

static void bf_end(bf_ctx *b) { model_plan_free(b->plan); }

/* bf_plan scores plan c (digit l of c in base 3 the type of layer l, into
 * b->a): returns 0 with its price at the shadow prices lam[3] (*pr), its
 * throughput (*th), its own cost (*cost) and whether its units fit the
 * real counts (*fit), its units per type in b->used; -1 when it does not
 * evaluate or a stage takes more units than its type has. */
static int bf_plan(bf_ctx *b, const agent_instance *in, int c, const double *lam, double *pr, double *th,
                   double *cost, int *fit) {
    int L = in->job->n_layers, *used = b->used;
    used[0] = used[1] = used[2] = 0;
    for (int l = 0, v = c; l < L; l++) b->a[l] = v % 3, v /= 3;
    if (model_eval(in->job, &b->nocount, b->a, b->plan)) return -1;
    *pr = b->plan->unit_price;
    *th = INFINITY;
    *cost = b->plan->cost;
    for (int q = 0; q < b->plan->n_stages; q++) {
        const model_stage *st = &b->plan->stages[q];
        if (st->units > in->cl->types[st->type].count) return -1;
        *pr += st->units * lam[st->type];
        used[st->type] += st->units;
        *th = fmin(*th, st->throughput);
    }
    *fit = 1;
    for (int k = 0; k < 3; k++) *fit &= used[k] <= in->cl->types[k].count;
    return 0;
}

/* root_fits finds by brute force the whole job's completions by stages at
 * the shadow prices lam[3] (as check_lookahead, from layer 0): per level
 * the least-priced plan with every stage within its type's count, and the
 * least-priced one whose first stage has another type. With any = 0 it
 * returns whether the cheapest by cost of the levels' least-priced plans
 * fits the unit counts (the path that steered version 5's prices); with
 * any = 1, whether any of either kind fits (what version 6 checks,
 * la_dp_fitting). -1: there is none; -2: two plans share a least price,
 * and the dynamic programme may have taken either. */
static int root_fits(const agent_instance *in, const double *lam, int any) {
    const model_job *job = in->job;
    int fits = -1, *a;
    bf_ctx b;
    bf_begin(&b, in);
    a = b.a;
    double best = INFINITY;
    for (int m = 0; m < AGENT_LA_LEVELS && fits != -2; m++) {
        double h = m ? job->min_throughput * pow(AGENT_LA_RATIO, m) : 0, pmin[2] = {INFINITY, INFINITY}, cost = 0;
        int fit[2] = {0, 0}, tie[2] = {0, 0}, first = -1;
        for (int pass = 0; pass < 2; pass++) /* 0: the least-priced; 1: ... of another first type */
            for (int c = 0; c < b.n; c++) {
                double pr, th, co;
                int f;
                if (bf_plan(&b, in, c, lam, &pr, &th, &co, &f) || th < h || (pass && a[0] == first))
                    continue;
                if (fabs(pr - pmin[pass]) <= 1e-9 * pmin[pass]) tie[pass] = 1;
                if (!(pr < pmin[pass] * (1 - 1e-9))) continue;
                tie[pass] = 0;
                pmin[pass] = pr;
                if (!pass) {
                    cost = co;
                    first = a[0];
                }
                fit[pass] = f;
            }
        if (!isfinite(pmin[0])) break;
        if (tie[0] || (any && isfinite(pmin[1]) && tie[1])) {
            fits = -2;
            break;
        }
        if (any) {
            fits = fits == 1 || fit[0] || (isfinite(pmin[1]) && fit[1]);
        } else if (cost < best) {
            best = cost;
            fits = fit[0];
        }
    }
    bf_end(&b);
    return fits;
}

/* stage_fits is root_fits for features version 7: per level and first
 * stage (type k on layers 0..j, every k and j), the least-priced plan at
 * the shadow prices lam[3] that starts with exactly that stage, every
 * stage within its type's count and as fast as the level asks -- with
 * held types (hs not NULL, versions 8-9), among the plans that keep their
 * units within their counts; returns whether any of those fits the unit
 * counts (-1: none exists; -2: a tie for some least price). */
static int stage_fits(const agent_instance *in, const double *lam, const held_set *hs) {
    const model_job *job = in->job;
    int L = job->n_layers, fits = -1, *a;
    bf_ctx b;
    bf_begin(&b, in);
    a = b.a;
    for (int m = 0; m < AGENT_LA_LEVELS && fits != -2; m++) {
        double h = m ? job->min_throughput * pow(AGENT_LA_RATIO, m) : 0, pmin[3][6];
        int fit[3][6] = {{0}}, tie[3][6] = {{0}}, any = 0;
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 6; j++) pmin[k][j] = INFINITY;
        for (int c = 0; c < b.n; c++) {
            double pr, th, co;
            int f, j = 0;
            if (bf_plan(&b, in, c, lam, &pr, &th, &co, &f) || th < h) continue;
            if (hs && held_over(hs, b.used, in->cl)) continue;
            while (j + 1 < L && a[j + 1] == a[0]) j++;
            double *pm = &pmin[a[0]][j];
            if (fabs(pr - *pm) <= 1e-9 * *pm && f != fit[a[0]][j]) tie[a[0]][j] = 1; /* ties of one fit agree */
            if (!(pr < *pm * (1 - 1e-9))) continue;
            tie[a[0]][j] = 0;
            *pm = pr;
            any = 1;
            fit[a[0]][j] = f;
        }
        if (!any) break;
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < L; j++) {
                if (!isfinite(pmin[k][j])) continue;
                if (tie[k][j]) fits = -2;
                else if (fits != -2) fits = fits == 1 || fit[k][j];
            }
    }
    bf_end(&b);
    return fits;
}

/* The look-ahead on random small instances with tight unit counts, so that
 * capacity, memory and the closing of the open stage all bite: every step
 * of every episode against the brute force of check_lookahead. */
/* random_small draws a job of L_min to L_min + 2 layers (ls[5] holds
 * them) on 3 types of 1 to max_count units each, from the LCG state *x. */
static void random_small(inst *in, model_layer *ls, uint64_t *x, int L_min, int max_count) {
#define RND() ((*x = *x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11) * (1.0 / 9007199254740992.0)
    memset(in, 0, sizeof *in);
    for (int k = 0; k < 3; k++)
        in->types[k] = (model_type){"", k > 0, 1e12 * (1 + 9 * RND()), 1e9 * (1 + 20 * RND()), 1e9 * (1 + 3 * RND()),
                                    (2 + 30 * RND()) * 1e9, 0.5 + 4 * RND(), 1 + (int)(max_count * RND())};
    snprintf(in->types[0].name, MODEL_NAME_MAX, "a");
    snprintf(in->types[1].name, MODEL_NAME_MAX, "b");
    snprintf(in->types[2].name, MODEL_NAME_MAX, "c");
    int L = L_min + (int)(3 * RND());
    for (int l = 0; l < L; l++)
        ls[l] = (model_layer){"l", 1e9 * (0.1 + 3 * RND()), 1e5 * RND(), 1e5 * RND(), 1e7 * RND(), (0.5 + 12 * RND()) * 1e9};
    in->zones[0] = (model_zone){"z"};
    in->cl = (model_cluster){3, in->types, 0, NULL, 1, in->zones, 1e9, 1e-3, NULL, NULL};
    in->job = (model_job){"r", L, ls, 64, 1e8, 300 + 3000 * RND(), 0.05, MODEL_DEFAULT_SHARD, 0, NULL, {{0, 0, 0, 0}, 0}};
#undef RND
}

/* play_one runs B episodes of the one instance ai (seed, no placement)
 * on ro and returns their TYPE trajectories. */
static agent_type_traj *play_one(agent_rollout *ro, const nn_params *p, const agent_instance *ai, uint64_t seed,
                                 int B) {
    int of[6] = {0, 0, 0, 0, 0, 0};
    char err[256];
    agent_rollout_opts o = {PLACER_PLACE_NONE, 0, 4.0, seed, 1, 0, B, 1, NULL, AGENT_REWARD_LOG, NULL, NULL};
    assert_true(B <= 6);
    assert_int_equal(agent_rollout_run(ro, p, ai, 1, of, B, &o, NULL, err, sizeof err), 0);
    return agent_rollout_type_traj(ro, NULL);
}

/* check_episodes replays each of the B episodes of play_one in a fresh
 * environment and checks every step's look-ahead rows against the brute
 * force of check_lookahead at the run's shadow prices; returns the steps
 * checked. */
static int check_episodes(const agent_rollout *ro, const agent_instance *ai, const agent_type_traj *tt, int B) {
    gym_opts go;
    gym_opts_default(&go);
    go.plan_only = 1;
    go.infeasible_reward = -4;
    char err[256];
    int checked = 0;
    for (int e = 0; e < B; e++) {
        gym_env *env = gym_create(ai->job, ai->cl, &go, err, sizeof err);
        assert_non_null(env);
        for (int t = 0; t < ai->job->n_layers; t++) {
            size_t tb = (size_t)t * B + e;
            int act = tt->action[tb];
            if (act < 0) break;
            gym_observation ob;
            gym_obs(env, &ob);
            held_set hs = held_of(ro, 0);
            check_lookahead(ai, gym_assignment(env, NULL), t, 3, ob.mask, tt->rows + tb * tt->K * AGENT_FT,
                            agent_rollout_shadow_prices(ro, 0), &hs);
            checked++;
            assert_int_equal(gym_step(env, act, NULL), 0);
        }
        gym_free(env);
    }
    return checked;
}

static void test_lookahead_random(void **state) {
    (void)state;
    uint64_t x = 12345;
    nn_params *p = make_params(&TINY, 2);
    agent_rollout *ro = agent_rollout_create(&TINY);
    int checked = 0;
    n_fit_checked = n_fit_apart = 0; /* this test's steps alone */
    for (int rep = 0; rep < 40; rep++) {
        inst in;
        model_layer ls[5];
        random_small(&in, ls, &x, 3, 6);
        agent_instance ai = {&in.job, &in.cl, 1.0, 0, 0};
        agent_type_traj *tt = play_one(ro, p, &ai, (uint64_t)rep, 6);
        checked += check_episodes(ro, &ai, tt, 6);
    }
    assert_true(checked > 300);
    /* the fitting completions were checked, and some differ from the
     * cheapest by stages (which did not fit) */
    assert_true(n_fit_checked > 300);
    assert_true(n_fit_apart > 0);
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* A rollout keeps the completions by stages of its last run's instances
 * and computes them again only for an instance whose figures changed
 * (search mode plays one instance every step). On one rollout, runs on
 * the same job and cluster objects: again unchanged, then with one unit
 * count, the target and one layer's FLOPs changed in place, each run's
 * look-ahead checked against the brute force -- a table kept from before
 * the change fails it (dropping the unit counts from the key does, on
 * tight counts). */
static void test_lookahead_kept(void **state) {
    (void)state;
    uint64_t x = 4242;
    nn_params *p = make_params(&TINY, 2);
    agent_rollout *ro = agent_rollout_create(&TINY);
    int checked = 0;
    for (int rep = 0; rep < 30; rep++) {
        inst in;
        model_layer ls[6];
        random_small(&in, ls, &x, 4, 3);
        agent_instance ai = {&in.job, &in.cl, 1.0, 0, 0};
        for (int v = 0; v < 5; v++) {
            if (v == 2) in.types[rep % 3].count = in.types[rep % 3].count > 1 ? 1 : 3;
            if (v == 3) in.job.min_throughput *= 1.3;
            if (v == 4) ls[rep % 4].flops *= 3;
            agent_type_traj *tt = play_one(ro, p, &ai, (uint64_t)(rep * 5 + v), 6);
            checked += check_episodes(ro, &ai, tt, 6);
        }
    }
    assert_true(checked > 500);
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* The shadow prices on random jobs of 4 to 6 layers on 1 to 3 units a
 * type, under features versions 5 to 9 (agent_rollout_set_features): 0
 * where the whole job's completion by stages fits the counts without
 * them; where it does not, prices under which a completion fits (when the
 * subgradient steps find some) or 0 again -- never prices under which none
 * fits: for version 5 the cheapest path fits, for version 6 some level's
 * path does, for version 7 some first stage's. Versions 8-9 are version 7
 * (the same prices) and, where those find no fit, may hold types' units:
 * then some first stage's least-priced plan among those keeping them
 * within their counts fits, at the prices reported (check_held). On the
 * priced and held jobs every step's look-ahead is checked against the
 * brute force at those prices. (Of 400 jobs, 61 break the counts, most
 * with no feasible plan at all; version 5 prices 10, and a completion
 * fits on those 10; version 6 finds one on 14, 10 of them at lambda = 0
 * on a level or first type the cheapest path does not take; version 7,
 * which checks every first stage (stage_fits), on 30; version 8 on 31,
 * holding a type on one, version 9 on 32: test_held_units has more.) */
static int check_held(const agent_rollout *ro, const agent_instance *ai, const agent_type_traj *tt, int plain,
                      int at);

static void test_shadow_prices(void **state) {
    (void)state;
    nn_params *p = make_params(&TINY, 2);
    agent_rollout *ro = agent_rollout_create(&TINY);
    int priced[5] = {0}, fitted[5] = {0}, held[5] = {0}, over = 0;
    for (int ver = 5; ver <= 9; ver++) {
        uint64_t x = 777;
        agent_rollout_set_features(ro, ver);
        for (int rep = 0; rep < 400; rep++) {
            inst in;
            model_layer ls[6];
            random_small(&in, ls, &x, 4, 3);
            agent_instance ai = {&in.job, &in.cl, 1.0, 0, 0};
            agent_type_traj *tt = play_one(ro, p, &ai, (uint64_t)rep, 1);
            const double *lam = agent_rollout_shadow_prices(ro, 0);
            int plain = root_fits(&ai, (double[3]){0, 0, 0}, 0),
                at = ver >= 7 ? stage_fits(&ai, lam, NULL) : root_fits(&ai, lam, ver == 6);
            for (int k = 0; k < 3; k++) assert_true(lam[k] >= 0);
            if (ver < 8) assert_int_equal(agent_rollout_held_types(ro, 0, NULL, NULL), 0);
            if (plain == -2 || at == -2) continue; /* a tie: either path may be the programme's */
            over += ver == 5 && plain == 0;
            int h = check_held(ro, &ai, tt, plain, at);
            if (h) { /* held: only where the prices find no fit */
                held[ver - 5] += h > 0;
                fitted[ver - 5] += h > 0;
                continue;
            }
            fitted[ver - 5] += plain == 0 && at == 1;
            if (lam[0] == 0 && lam[1] == 0 && lam[2] == 0) continue;
            assert_int_equal(plain, 0);
            assert_int_equal(at, 1);
            assert_true(check_episodes(ro, &ai, tt, 1) > 0);
            priced[ver - 5]++;
        }
    }
    print_message("shadow prices: %d jobs break the counts; a completion fits on %d (version 5, %d priced), "
                  "%d (version 6, %d priced), %d (version 7, %d priced), %d (version 8, %d held), "
                  "%d (version 9, %d held)\n",
                  over, fitted[0], priced[0], fitted[1], priced[1], fitted[2], priced[2], fitted[3], held[3],
                  fitted[4], held[4]);
    assert_true(over >= 20); /* jobs whose cheapest completion breaks the counts */
    assert_true(priced[0] >= 5 && priced[1] >= 3);
    assert_true(fitted[1] > fitted[0]);
    assert_true(fitted[1] - priced[1] >= 5); /* fits found at lambda = 0 off the cheapest path */
    assert_true(fitted[2] > fitted[1]);     /* ... and after other first stages */
    for (int v = 3; v < 5; v++) {           /* versions 8-9 keep version 7's prices, and hold where none fit */
        assert_int_equal(priced[v], priced[2]);
        assert_true(held[v] >= 1 && fitted[v] == fitted[2] + held[v]);
    }
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* check_held checks the held types of the rollout's last run on ai
 * (plain, at: root_fits without prices and stage_fits at the run's, as
 * test_shadow_prices found them): none, 0; else they are held only where
 * the prices find no fit, carry no price, some first stage's least-priced
 * plan keeping them within their counts fits (stage_fits), and every
 * step's look-ahead matches the brute force -- 1; -1 when a tie leaves
 * the brute force two answers. */
static int check_held(const agent_rollout *ro, const agent_instance *ai, const agent_type_traj *tt, int plain,
                      int at) {
    held_set hs = held_of(ro, 0);
    if (!hs.n) return 0;
    assert_int_equal(plain, 0);
    assert_int_not_equal(at, 1);
    for (int k = 0; k < 3; k++) {
        int is_held = 0;
        for (int h = 0; h < hs.n; h++) is_held |= hs.x[h] == k;
        assert_true(hs.lam[k] >= 0 && (!is_held || hs.lam[k] == 0));
    }
    int hf = stage_fits(ai, hs.lam, &hs);
    if (hf == -2) return -1;
    assert_int_equal(hf, 1);
    assert_true(check_episodes(ro, ai, tt, 1) > 0);
    return 1;
}

/* bf_feasible returns the least cost of job in's plans that fit the real
 * counts and reach its target, by brute force (INFINITY: none). */
static double bf_feasible(const agent_instance *in) {
    bf_ctx b;
    bf_begin(&b, in);
    double best = INFINITY, zero[3] = {0, 0, 0};
    for (int c = 0; c < b.n; c++) {
        double pr, th, co;
        int f;
        if (!bf_plan(&b, in, c, zero, &pr, &th, &co, &f) && f && th >= in->job->min_throughput && co < best)
            best = co;
    }
    bf_end(&b);
    return best;
}

/* Held units (features versions 8-9) on the random jobs of 4 to 6 layers
 * on 1 to 3 units a type where version 7's shadow prices find no
 * completion by stages that fits the counts though a feasible plan exists
 * (a duality gap, or a fit no level's cheapest path reaches): versions 8
 * and 9 hold types' units on nearly all of them, and check_held finds a
 * fit among the plans keeping them within their counts and every step's
 * look-ahead equal to the brute force. Version 9, which holds a second
 * type as well when the first finds no fit, fits at least where version 8
 * does. (Of 6000 jobs, 4414 fit at version 7; of the rest 38 have a
 * feasible plan; version 8 holds a type on 35, version 9 on all 38, two
 * types on 3.) */
static void test_held_units(void **state) {
    (void)state;
    nn_params *p = make_params(&TINY, 2);
    agent_rollout *ro = agent_rollout_create(&TINY);
    uint64_t x = 9090;
    int hard = 0, held[2] = {0, 0}, two = 0, fit7 = 0;
    for (int rep = 0; rep < 6000; rep++) {
        inst in;
        model_layer ls[6];
        random_small(&in, ls, &x, 4, 3);
        agent_instance ai = {&in.job, &in.cl, 1.0, 0, 0};
        agent_rollout_set_features(ro, 7);
        play_one(ro, p, &ai, (uint64_t)rep, 1);
        int at = stage_fits(&ai, agent_rollout_shadow_prices(ro, 0), NULL);
        if (at != 0) {
            fit7 += at == 1;
            continue;
        }
        if (!isfinite(bf_feasible(&ai))) continue;
        hard++;
        for (int v = 0; v < 2; v++) {
            agent_rollout_set_features(ro, 8 + v);
            agent_type_traj *tt = play_one(ro, p, &ai, (uint64_t)rep, 1);
            int h = check_held(ro, &ai, tt, 0, at);
            held[v] += h != 0;
            two += v == 1 && agent_rollout_held_types(ro, 0, NULL, NULL) > 1;
        }
    }
    print_message("held units: %d jobs fit at version 7, %d feasible where none did, %d held (version 8), "
                  "%d (version 9, %d of them two types)\n", fit7, hard, held[0], held[1], two);
    assert_true(fit7 > 4000 && hard >= 30);
    assert_true(held[0] >= hard - 5 && held[1] >= held[0]); /* a fit for nearly all of them */
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* ---------------------------------------------------------------------------
 * A policy that can only pick allowed actions
 * ------------------------------------------------------------------------ */

/* allowed_only: weights pushed so that the scorer's output is large for
 * any row (all-positive output weights and relu features), across many
 * sampled and greedy episodes every action must be allowed, and masked
 * candidates have probability exactly 0. */
static void test_only_allowed(void **state) {
    (void)state;
    inst a, b, c;
    make_small(&a);
    make_wide(&b);
    make_wide(&c);
    c.types[2].count = 0; /* no unit of the third type: always masked */
    for (int n = 4; n < 6; n++) c.nodes[n].units = 0;
    c.job.min_throughput = 6000; /* tight: masks bite */
    nn_params *p = make_params(&TINY, 5);
    float *wo = nn_param(p, AN_TOUT_W), *wn = nn_param(p, AN_NOUT_W);
    for (int k = 0; k < TINY.scorer; k++) wo[k] = wn[k] = 50.0f;
    agent_rollout *ro = agent_rollout_create(&TINY);
    agent_instance ai[3] = {{&a.job, &a.cl, 1.0, 0, 0}, {&b.job, &b.cl, 1.0, 0, 0}, {&c.job, &c.cl, 1.0, 0, 0}};
    int of[30];
    for (int e = 0; e < 30; e++) of[e] = e % 3;
    char err[256];
    agent_pool *pool = agent_pool_create(2);
    int decisions = 0;
    for (int rep = 0; rep < 20; rep++) {
        agent_rollout_opts o = {PLACER_PLACE_POLICY, rep % 5 == 0, 4.0, 9, (uint64_t)rep, 0, 30, 1, NULL, AGENT_REWARD_LOG, NULL, NULL};
        assert_int_equal(agent_rollout_run(ro, p, ai, 3, of, 30, &o, pool, err, sizeof err), 0);
        agent_type_traj *tt = agent_rollout_type_traj(ro, NULL);
        for (int i = 0; i < tt->T * tt->B; i++) {
            int act = tt->action[i];
            if (act < 0) continue;
            assert_int_equal(tt->mask[(size_t)i * tt->K + act], 1);
            decisions++;
        }
        agent_node_traj *nt = agent_rollout_node_traj(ro, NULL, NULL);
        for (int i = 0; i < nt->N; i++) {
            int act = nt->action[i];
            assert_true(act >= 0);
            assert_int_equal(nt->mask[(size_t)i * nt->K + act], 1);
            decisions++;
        }
        /* episodes of the third instance never use the type without units */
        for (int e = 2; e < 30; e += 3) {
            const int *as = agent_rollout_assign(ro, e);
            for (int l = 0; l < 2; l++) assert_true(as[l] != 2);
        }
    }
    assert_true(decisions > 1000);
    /* the step's probabilities: exactly 0 where masked */
    agent_net_ws *ws = agent_net_ws_create(&TINY);
    float lf[2 * AGENT_FL] = {0}, glob[2 * AGENT_FG] = {0}, rows[2 * 3 * AGENT_FT], prev[2 * AGENT_FT] = {0};
    for (int i = 0; i < 2 * 3 * AGENT_FT; i++) rows[i] = (float)(i % 7) * 0.3f;
    int len[1] = {2}, inst_of[2] = {0, 0};
    uint8_t mask[6] = {1, 0, 1, 0, 0, 1}, active[2] = {1, 1};
    float probs[6];
    assert_int_equal(agent_net_encode(ws, p, lf, len, 2, 1, inst_of, 2), 0);
    assert_int_equal(agent_net_type_step(ws, p, 0, glob, rows, prev, mask, active, 3, probs), 0);
    assert_true(probs[1] == 0.0f && probs[3] == 0.0f && probs[4] == 0.0f);
    assert_true(probs[5] == 1.0f);
    assert_true(fabsf(probs[0] + probs[2] - 1.0f) < 1e-6f);
    agent_net_ws_free(ws);
    agent_pool_free(pool);
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* The same seed gives the same episodes, whatever the thread count. */
static void test_threads_do_not_matter(void **state) {
    (void)state;
    inst a, b;
    make_small(&a);
    make_wide(&b);
    nn_params *p = make_params(&TINY, 8);
    agent_instance ai[2] = {{&a.job, &a.cl, 1.0, 0, 0}, {&b.job, &b.cl, 1.0, 0, 0}};
    int of[16];
    for (int e = 0; e < 16; e++) of[e] = e / 8;
    char err[256];
    int as[2][16][3];
    for (int run = 0; run < 2; run++) {
        agent_pool *pool = run ? agent_pool_create(3) : NULL;
        agent_rollout *ro = agent_rollout_create(&TINY);
        agent_rollout_opts o = {PLACER_PLACE_POLICY, 0, 4.0, 21, 5, 0, 16, 0, NULL, AGENT_REWARD_LOG, NULL, NULL};
        assert_int_equal(agent_rollout_run(ro, p, ai, 2, of, 16, &o, pool, err, sizeof err), 0);
        for (int e = 0; e < 16; e++)
            for (int l = 0; l < 3; l++)
                as[run][e][l] = l < ai[of[e]].job->n_layers ? agent_rollout_assign(ro, e)[l] : 0;
        agent_rollout_free(ro);
        agent_pool_free(pool);
    }
    assert_memory_equal(as[0], as[1], sizeof as[0]);
    nn_params_free(p);
}

/* The update skips the episodes without a decision (dropped by risk) and
 * reuses the rollout's encoder states; neither may change it: the same
 * batch through a fresh workspace with the skip off (every episode and the
 * encoder recomputed) gives the same loss sums (bitwise: they are summed
 * in double in decision order, the skipped ones add exact zeros), and the
 * same gradients to float rounding: not bitwise, since OpenBLAS groups the
 * summands of a product by row position (sgemv's unrolled partial sums,
 * sgemm's blocks), so removing the zero rows regroups the others. Seen:
 * 1.7e-7 of the largest gradient (bound 1e-6), and 2.2e-5 of the learning
 * rate after one Adam step (bound 1e-4: Adam divides tiny gradients by
 * their own size, which magnifies their rounding). */
static void test_skip_idle_same_update(void **state) {
    (void)state;
    inst a, b;
    make_small(&a);
    make_wide(&b);
    nn_params *pa = make_params(&TINY, 9), *pb = make_params(&TINY, 9);
    agent_rollout *ro = agent_rollout_create(&TINY);
    agent_net_ws *fresh = agent_net_ws_create(&TINY);
    agent_instance ai[2] = {{&a.job, &a.cl, 10.0, 0, 0}, {&b.job, &b.cl, 10.0, 0, 0}};
    enum { B = 24 };
    int of[B];
    for (int e = 0; e < B; e++) of[e] = e / 12;
    agent_rollout_opts o = {PLACER_PLACE_NONE, 0, 4.0, 11, 2, 0, B, 1, NULL, AGENT_REWARD_LOG, NULL, NULL};
    char err[256];
    assert_int_equal(agent_rollout_run(ro, pa, ai, 2, of, B, &o, NULL, err, sizeof err), 0);
    float *adv;
    agent_type_traj *tt = agent_rollout_type_traj(ro, &adv);
    int kept = 0;
    for (int e = 0; e < B; e++) {
        if (e % 3 == 0) {
            adv[e] = 0.05f * (float)(e - 10);
            kept++;
        } else {
            adv[e] = 0.0f;
            agent_rollout_drop(ro, e); /* as the trainer drops what risk leaves out */
        }
    }
    agent_loss_stats sa = {0, 0, 0, 0}, sb = {0, 0, 0, 0};
    nn_params_zero_grad(pa);
    nn_params_zero_grad(pb);
    tt->enc_cached = 1; /* the rollout's workspace holds pa's encoder states */
    assert_int_equal(agent_net_type_loss(agent_rollout_ws(ro), pa, tt, 0.02f, 1.0f / B, &sa, err, sizeof err), 0);
    tt->enc_cached = 0;
    agent_net_ws_skip_idle(fresh, 0);
    assert_int_equal(agent_net_type_loss(fresh, pb, tt, 0.02f, 1.0f / B, &sb, err, sizeof err), 0);
    assert_int_equal(sa.episodes, kept); /* the skip happened ... */
    assert_int_equal(sb.episodes, B);
    assert_int_equal(sa.decisions, sb.decisions); /* ... and changed nothing */
    /* the losses too, to float rounding (1.2e-7 seen, since the type rows
     * grew to 7 look-ahead features: the products regroup as above) */
    if (fabs(sa.pg - sb.pg) > 1e-6 * fabs(sb.pg) || fabs(sa.entropy - sb.entropy) > 1e-6 * fabs(sb.entropy))
        fail_msg("pg %.17g %.17g entropy %.17g %.17g", sa.pg, sb.pg, sa.entropy, sb.entropy);
    double worst = 0, scale = 0;
    for (size_t e = 0; e < pb->total; e++) {
        double d = fabs((double)pa->grads[e] - pb->grads[e]);
        if (d > worst) worst = d;
        if (fabs(pb->grads[e]) > scale) scale = fabs(pb->grads[e]);
    }
    assert_true(scale > 0);
    if (worst > 1e-6 * scale) fail_msg("gradients differ by %g (scale %g)", worst, scale);
    double gworst = worst;
    nn_adam_cfg ac = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0};
    nn_clip_grad_norm(pa, 1.0);
    nn_clip_grad_norm(pb, 1.0);
    nn_adam_step(pa, &ac, 1);
    nn_adam_step(pb, &ac, 1);
    worst = 0;
    for (size_t e = 0; e < pb->total; e++) {
        double d = fabs((double)pa->params[e] - pb->params[e]);
        if (d > worst) worst = d;
    }
    print_message("skip: largest gradient difference %g of %g, update %g of lr %g\n", gworst, scale, worst, ac.lr);
    if (worst > 1e-4 * ac.lr) fail_msg("updated parameters differ by %g", worst);
    agent_net_ws_free(fresh);
    agent_rollout_free(ro);
    nn_params_free(pa);
    nn_params_free(pb);
}

/* ---------------------------------------------------------------------------
 * NODE demonstrations (opts.node_demo): `best`'s placement as the lesson
 * ------------------------------------------------------------------------ */

/* links: make_wide with nodes whose links differ (bandwidth 2e6 to 8e9,
 * latency 1e-5 to 2e-2), so that where a task goes changes cost' and
 * `best` has a placement to teach. */
static void make_links(inst *in) {
    make_wide(in);
    static const double bw[6] = {2e6, 8e9, 8e9, 5e7, 2e6, 8e9}, lat[6] = {2e-2, 1e-5, 1e-3, 1e-5, 2e-2, 1e-5};
    for (int n = 0; n < 6; n++) {
        in->nodes[n].bw = bw[n];
        in->nodes[n].latency = lat[n];
    }
    snprintf(in->job.name, sizeof in->job.name, "links");
}

/* links_plan writes into a[2] the plan of `links` with the most tasks that
 * `best` places keeping R (the cheapest of those), and into teacher the
 * cost' of that placement. */
static void links_plan(const inst *in, int *a, double *teacher) {
    model_plan *plan = model_plan_create(2), *out = model_plan_create(2);
    int tn[64], most = -1;
    char err[256];
    *teacher = INFINITY;
    for (int x = 0; x < 9; x++) {
        int t[2] = {x / 3, x % 3};
        if (model_eval(&in->job, &in->cl, t, plan) != 0) continue;
        int n = place_task_count(plan);
        if (n > 64 || placer_best_run(&in->job, &in->cl, plan, 1, 0, NULL, tn, out, err, sizeof err) != PLACER_OK)
            continue;
        if (n > most || (n == most && out->cost < *teacher)) {
            most = n;
            *teacher = out->cost;
            a[0] = t[0];
            a[1] = t[1];
        }
    }
    assert_true(most > 0);
    model_plan_free(plan);
    model_plan_free(out);
}

/* A demonstration episode's NODE decisions are `best`'s placement of its
 * plan, flagged as forced; the loss with adv w on them (and 0 elsewhere,
 * no entropy) is w * scale * the cross-entropy -sum log p[teacher's node],
 * recomputed here from agent_net_node_step's probabilities, and its
 * gradient agrees with central differences. Episodes without the flag
 * keep their sampled decisions, none flagged. */
static void test_node_demo_gradients(void **state) {
    (void)state;
    inst a, b;
    make_small(&a);
    make_links(&b);
    nn_params *p = make_params(&TINY, 5);
    agent_rollout *ro = agent_rollout_create(&TINY);
    agent_net_ws *ws = agent_net_ws_create(&TINY);
    agent_instance ai[2] = {{&a.job, &a.cl, 10.0, 0, 0}, {&b.job, &b.cl, 10.0, 0, 0}};
    int plan_b[2];
    double teacher;
    links_plan(&b, plan_b, &teacher);
    enum { B = 6 };
    int of[B] = {0, 1, 1, 1, 1, 0};
    const int *forced[B] = {NULL, plan_b, plan_b, plan_b, NULL, NULL};
    uint8_t demo[B] = {0, 1, 0, 1, 1, 1}; /* 4: the greedy plan; 5: no nodes, nothing to place */
    agent_rollout_opts o = {PLACER_PLACE_POLICY, 0, 4.0, 3, 1, 0, B, 1, forced, AGENT_REWARD_LOG, demo, NULL};
    char err[256];
    assert_int_equal(agent_rollout_run(ro, p, ai, 2, of, B, &o, NULL, err, sizeof err), 0);
    /* the demonstrations' placements are `best`'s, with the rollout's seed */
    model_plan *plan = model_plan_create(2), *out = model_plan_create(2);
    int tn[64], taught[B] = {0};
    for (int e = 1; e <= 4; e++) {
        int n;
        const int *tasks = agent_rollout_tasks(ro, e, &n);
        assert_non_null(tasks);
        assert_int_equal(model_eval(&b.job, &b.cl, agent_rollout_assign(ro, e), plan), 0);
        assert_int_equal(n, place_task_count(plan));
        if (!demo[e]) continue;
        int pst = placer_best_run(&b.job, &b.cl, plan, o.seed ^ o.stream, 0, NULL, tn, out, err, sizeof err);
        /* the forced plans: `best` keeps R; the greedy one may not (then
         * no lesson: the policy places it, greedily) */
        if (e != 4) assert_int_equal(pst, PLACER_OK);
        if (pst != PLACER_OK) continue;
        taught[e] = 1;
        for (int k = 0; k < n; k++) assert_int_equal(tasks[k], tn[k]);
        assert_true(agent_rollout_episode(ro, e)->place_ok);
        assert_true(fabs(agent_rollout_episode(ro, e)->cost - out->cost) <= 1e-9 * out->cost);
    }
    float *adv, *nadv;
    const int *owner;
    agent_type_traj *tt = agent_rollout_type_traj(ro, &adv);
    agent_node_traj *nt = agent_rollout_node_traj(ro, &nadv, &owner);
    const uint8_t *fz = agent_rollout_node_forced(ro);
    int n_forced = 0, per[B] = {0};
    for (int i = 0; i < nt->N; i++) {
        per[owner[i]]++;
        if (fz[i]) {
            assert_true(taught[owner[i]]);
            n_forced++;
        }
    }
    /* every decision of the demonstrations with a lesson, none of the others */
    assert_int_equal(n_forced, per[1] + per[3] + (taught[4] ? per[4] : 0));
    assert_true(per[1] > 0 && per[2] > 0 && per[4] > 0 && per[0] == 0 && per[5] == 0);
    const float w = 1.5f;
    for (int e = 0; e < B; e++) {
        adv[e] = 0.0f;
        agent_rollout_drop_type(ro, e);
    }
    for (int i = 0; i < nt->N; i++) nadv[i] = fz[i] ? w : 0.0f;
    loss_ctx c = {ws, p, tt, nt, 0.0f, 0.25f};
    /* the loss is w * scale * the cross-entropy towards the teacher */
    agent_loss_stats st = {0, 0, 0, 0};
    nn_params_zero_grad(p);
    assert_int_equal(agent_net_node_loss(ws, p, nt, 0.0f, c.scale, 3, &st, err, sizeof err), 0);
    float *probs = malloc((size_t)nt->N * nt->K * sizeof *probs);
    assert_int_equal(agent_net_node_step(ws, p, nt->glob, nt->rows, nt->mask, nt->N, nt->K, probs), 0);
    double xent = 0;
    for (int i = 0; i < nt->N; i++)
        if (fz[i]) xent -= log((double)probs[(size_t)i * nt->K + nt->action[i]]);
    assert_true(xent > 0);
    if (fabs(st.pg - w * xent) > 1e-4 * w * xent) fail_msg("loss %g, cross-entropy x w %g", st.pg, w * xent);
    nn_params_zero_grad(p);
    total_loss(&c);
    float *g = malloc(p->total * sizeof *g);
    memcpy(g, p->grads, p->total * sizeof *g);
    int checked = 0, nonzero = 0;
    assert_int_equal(check_fd(&c, g, 0, &checked, &nonzero), 0);
    int ncheck = 0, nnon = 0;
    check_fd(&c, g, AN_NCTX_W, &ncheck, &nnon);
    print_message("demonstration gradient: %d entries, %d non-zero (node head: %d of %d)\n", checked, nonzero,
                  nnon, ncheck);
    assert_true(nnon > ncheck / 2); /* the node head gets the lesson */
    free(g);
    free(probs);
    model_plan_free(plan);
    model_plan_free(out);
    agent_net_ws_free(ws);
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* Node DAgger (agent_rollout_opts.node_cut): a demonstration with cut f
 * places its first c = floor(f n) tasks on the node head's most likely
 * nodes (the greedy placement's, unforced), then follows placer_complete
 * of that prefix started from `best`'s placement (forced from task c on),
 * worked out here on its own; a cut < 0 is the plain demonstration. */
static void test_node_dagger_cut(void **state) {
    (void)state;
    inst b;
    make_links(&b);
    b.nodes[3].bw = 8e9; /* so that the untrained head's first nodes leave R reachable */
    nn_params *p = make_params(&TINY, 5);
    agent_rollout *ro = agent_rollout_create(&TINY);
    agent_instance ai[1] = {{&b.job, &b.cl, 10.0, 0, 0}};
    int plan_b[2];
    double teacher;
    links_plan(&b, plan_b, &teacher);
    char err[256];
    /* the node head's greedy placement of plan_b */
    int of1[1] = {0};
    const int *f1[1] = {plan_b};
    agent_rollout_opts g = {.placement = PLACER_PLACE_POLICY, .greedy = 1, .penalty = 4.0, .seed = 3,
                            .stream = 1, .ep_base = 0, .ep_total = 1, .record = 0, .forced = f1,
                            .reward = AGENT_REWARD_LOG};
    assert_int_equal(agent_rollout_run(ro, p, ai, 1, of1, 1, &g, NULL, err, sizeof err), 0);
    int n = 0;
    const int *gt = agent_rollout_tasks(ro, 0, &n);
    assert_true(n >= 4 && n <= 64);
    int greedy_tasks[64], want[64], start[64];
    memcpy(greedy_tasks, gt, (size_t)n * sizeof *gt);
    /* the demonstrations: cut 0.5, and none */
    enum { B = 2 };
    int of[B] = {0, 0};
    const int *forced[B] = {plan_b, plan_b};
    uint8_t demo[B] = {1, 1};
    float cut[B] = {0.34f, -1.0f};
    agent_rollout_opts o = {.placement = PLACER_PLACE_POLICY, .greedy = 0, .penalty = 4.0, .seed = 3,
                            .stream = 1, .ep_base = 0, .ep_total = B, .record = 1, .forced = forced,
                            .reward = AGENT_REWARD_LOG, .node_demo = demo, .node_cut = cut};
    assert_int_equal(agent_rollout_run(ro, p, ai, 1, of, B, &o, NULL, err, sizeof err), 0);
    /* the teacher, worked out here */
    int c = (int)(0.34f * (float)n);
    model_plan *plan = model_plan_create(2), *out = model_plan_create(2);
    assert_int_equal(model_eval(&b.job, &b.cl, plan_b, plan), 0);
    int pst = placer_best_run(&b.job, &b.cl, plan, o.seed ^ o.stream, 0, NULL, start, out, err, sizeof err);
    assert_int_equal(pst, PLACER_OK);
    int best_tasks[64];
    memcpy(best_tasks, start, (size_t)n * sizeof *start);
    memcpy(want, greedy_tasks, (size_t)c * sizeof *want);
    int crc = placer_complete(&b.job, &b.cl, plan, c, start, o.seed ^ o.stream, 0, want, out, err, sizeof err);
    assert_int_equal(crc, PLACER_OK); /* at cut 3, the head's node 4 (2 MB/s) dooms R */
    int m = 0;
    const int *got = agent_rollout_tasks(ro, 0, &m);
    assert_int_equal(m, n);
    for (int k = 0; k < n; k++) assert_int_equal(got[k], want[k]);
    got = agent_rollout_tasks(ro, 1, &m);
    for (int k = 0; k < n; k++) assert_int_equal(got[k], best_tasks[k]);
    /* the recorded decisions: episode 0's first c unforced (the greedy
     * nodes), the rest forced; episode 1's all forced */
    const int *owner;
    agent_node_traj *nt = agent_rollout_node_traj(ro, NULL, &owner);
    const uint8_t *fz = agent_rollout_node_forced(ro);
    int k0 = 0, k1 = 0;
    for (int i = 0; i < nt->N; i++) {
        if (owner[i] == 0) {
            assert_int_equal(fz[i], k0 >= c);
            assert_int_equal(nt->action[i], k0 < c ? greedy_tasks[k0] : want[k0]);
            k0++;
        } else {
            assert_int_equal(fz[i], 1);
            k1++;
        }
    }
    assert_int_equal(k0, n);
    assert_int_equal(k1, n);
    /* the prefix is the policy's and the completion differs from best's:
     * the lesson is not best's placement */
    int differ = 0;
    for (int k = 0; k < n; k++) differ += want[k] != best_tasks[k];
    print_message("node DAgger: %d tasks, cut %d, completion differs from best's on %d\n", n, c, differ);
    model_plan_free(plan);
    model_plan_free(out);
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* greedy_cost places plan a of `links` with the greedy node head; returns
 * cost' (INFINITY when it misses R). */
static double greedy_cost(agent_rollout *ro, const nn_params *p, const agent_instance *ai, const int *a) {
    int of[1] = {0};
    const int *forced[1] = {a};
    agent_rollout_opts o = {PLACER_PLACE_POLICY, 1, 4.0, 3, 1, 0, 1, 0, forced, AGENT_REWARD_LOG, NULL, NULL};
    char err[256];
    assert_int_equal(agent_rollout_run(ro, p, ai, 1, of, 1, &o, NULL, err, sizeof err), 0);
    const agent_episode *e = agent_rollout_episode(ro, 0);
    assert_true(e->placed);
    return e->place_ok ? e->cost : INFINITY;
}

/* With demonstrations alone (no REINFORCE: every other decision's
 * advantage 0), the node head learns to place a fixed plan as well as
 * `best` does on the `links` instance, where before training its greedy
 * placement costs more. */
static void test_node_demo_learns(void **state) {
    (void)state;
    inst b;
    make_links(&b);
    agent_instance ai[1] = {{&b.job, &b.cl, 10.0, 0, 0}};
    int a[2];
    double teacher;
    links_plan(&b, a, &teacher);
    nn_params *p = make_params(&TINY, 13);
    agent_rollout *ro = agent_rollout_create(&TINY);
    double before = greedy_cost(ro, p, ai, a);
    assert_true(before > teacher * (1 + 1e-9)); /* there is something to learn */
    enum { B = 4 };
    int of[B] = {0, 0, 0, 0};
    const int *forced[B] = {a, a, a, a};
    uint8_t demo[B] = {1, 1, 1, 1};
    nn_adam_cfg ac = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0};
    char err[256];
    double after = before;
    int step = 0;
    for (step = 1; step <= 300 && after > teacher * (1 + 1e-9); step++) {
        agent_rollout_opts o = {PLACER_PLACE_POLICY, 0, 4.0, 3, (uint64_t)step, 0, B, 1, forced,
                                AGENT_REWARD_LOG, demo, NULL};
        assert_int_equal(agent_rollout_run(ro, p, ai, 1, of, B, &o, NULL, err, sizeof err), 0);
        float *adv, *nadv;
        agent_type_traj *tt = agent_rollout_type_traj(ro, &adv);
        (void)tt;
        agent_node_traj *nt = agent_rollout_node_traj(ro, &nadv, NULL);
        const uint8_t *fz = agent_rollout_node_forced(ro);
        for (int i = 0; i < nt->N; i++) nadv[i] = fz[i] ? 1.0f : 0.0f;
        agent_loss_stats st = {0, 0, 0, 0};
        nn_params_zero_grad(p);
        assert_int_equal(agent_net_node_loss(agent_rollout_ws(ro), p, nt, 0.0f, 1.0f / B, 64, &st, err, sizeof err), 0);
        nn_clip_grad_norm(p, 1.0);
        nn_adam_step(p, &ac, step);
        if (step % 10 == 0) after = greedy_cost(ro, p, ai, a);
    }
    print_message("node demonstrations: greedy cost' %g before, %g after %d steps; best %g\n", before, after,
                  step - 1, teacher);
    assert_true(after <= teacher * (1 + 1e-9));
    agent_rollout_free(ro);
    nn_params_free(p);
}

/* A network grown into wider sizes (agent_net_grow) gives the same
 * probabilities as the one it grew from, at every TYPE decision of a
 * several-step decode and at a NODE decision, while its new units compute
 * (their biases and weights in are the wider network's own, not zero). */
static void test_grow_same_policy(void **state) {
    (void)state;
    const agent_net_dims wide = {9, 7, 10, 12, 3.0f};
    nn_params *src = make_params(&TINY, 7), *dst = make_params(&wide, 99);
    char err[256];
    assert_int_equal(agent_net_grow(dst, &wide, src, &TINY, err, sizeof err), 0);
    /* back the other way: refused, naming the sizes */
    nn_params *back = make_params(&TINY, 3);
    assert_int_equal(agent_net_grow(back, &TINY, dst, &wide, err, sizeof err), -1);
    assert_non_null(strstr(err, "narrower"));
    nn_params_free(back);
    enum { T = 4, G = 2, B = 4, K = 3 };
    float lf[T * G * AGENT_FL], glob[B * AGENT_FG], rows[B * K * AGENT_FT], prev[B * AGENT_FT];
    float nrows[B * K * AGENT_FN];
    uint64_t r = 12345;
#define RND() ((float)((r = r * 6364136223846793005ULL + 1442695040888963407ULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f)
    for (int i = 0; i < T * G * AGENT_FL; i++) lf[i] = RND();
    int len[G] = {4, 3}, inst_of[B] = {0, 0, 1, 1};
    agent_net_ws *w0 = agent_net_ws_create(&TINY), *w1 = agent_net_ws_create(&wide);
    assert_int_equal(agent_net_encode(w0, src, lf, len, T, G, inst_of, B), 0);
    assert_int_equal(agent_net_encode(w1, dst, lf, len, T, G, inst_of, B), 0);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < B * AGENT_FG; i++) glob[i] = RND();
        for (int i = 0; i < B * K * AGENT_FT; i++) rows[i] = RND();
        for (int i = 0; i < B * AGENT_FT; i++) prev[i] = t ? RND() : 0.0f;
        uint8_t mask[B * K], active[B] = {1, 1, 1, t < 3};
        for (int i = 0; i < B * K; i++) mask[i] = (uint8_t)(i % 4 != 1);
        float p0[B * K], p1[B * K];
        assert_int_equal(agent_net_type_step(w0, src, t, glob, rows, prev, mask, active, K, p0), 0);
        assert_int_equal(agent_net_type_step(w1, dst, t, glob, rows, prev, mask, active, K, p1), 0);
        for (int i = 0; i < B * K; i++) worst = fmax(worst, fabs((double)p0[i] - p1[i]));
    }
    for (int i = 0; i < B * K * AGENT_FN; i++) nrows[i] = RND();
    uint8_t nmask[B * K];
    for (int i = 0; i < B * K; i++) nmask[i] = (uint8_t)(i % 3 != 2);
    float q0[B * K], q1[B * K];
    assert_int_equal(agent_net_node_step(w0, src, glob, nrows, nmask, B, K, q0), 0);
    assert_int_equal(agent_net_node_step(w1, dst, glob, nrows, nmask, B, K, q1), 0);
    for (int i = 0; i < B * K; i++) worst = fmax(worst, fabs((double)q0[i] - q1[i]));
#undef RND
    assert_true(worst < 1e-6);
    /* an old weight copied, a new unit's weight out 0, its weights in its own */
    assert_true(nn_param(dst, AN_TOUT_W)[0] == nn_param(src, AN_TOUT_W)[0]);
    assert_true(nn_param(dst, AN_TOUT_W)[TINY.scorer] == 0.0f);
    assert_true(nn_param(dst, AN_TROW_W)[(size_t)TINY.scorer * AGENT_FT] != 0.0f);
    /* the forward LSTM's forget gate of old unit 0 reads new unit H0 as 0 */
    assert_true(nn_param(dst, AN_ENCF_WHH)[(size_t)wide.hidden * wide.hidden + TINY.hidden] == 0.0f);
    agent_net_ws_free(w0);
    agent_net_ws_free(w1);
    nn_params_free(src);
    nn_params_free(dst);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_gradients_soft),
        cmocka_unit_test(test_features_and_masks),
        cmocka_unit_test(test_lookahead_random),
        cmocka_unit_test(test_lookahead_kept),
        cmocka_unit_test(test_shadow_prices),
        cmocka_unit_test(test_held_units),
        cmocka_unit_test(test_only_allowed),
        cmocka_unit_test(test_threads_do_not_matter),
        cmocka_unit_test(test_skip_idle_same_update),
        cmocka_unit_test(test_node_demo_gradients),
        cmocka_unit_test(test_node_demo_learns),
        cmocka_unit_test(test_grow_same_policy),
        cmocka_unit_test(test_node_dagger_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
