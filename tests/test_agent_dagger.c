/* test_agent_dagger.c -- the trainer's DAgger demonstrations (`dagger: w`,
 * agent/train.c).
 *
 * On a six-layer job (search mode: the one instance every step), one step
 * of a run with `dagger: 2` is checked against what the test works out on
 * its own from the same initial weights:
 *   - the policy's plan is its greedy decode (agent_rollout_run, greedy);
 *   - the DAgger episode played that plan before the cut c and, from c on,
 *     the cheapest completion (solve_run_fixed with layers < c fixed), and
 *     its recorded TYPE actions are -1 (no gradient) before c, the plan's
 *     types from c on;
 *   - the step's gradient minus that of the same run without `dagger` (the
 *     sampled episodes are the same: the DAgger pass draws nothing) is the
 *     gradient of 1/(G S) * sum over layers >= c of -(w S) logp(plan[l]),
 *     recomputed here by agent_net_type_loss on a trajectory of the forced
 *     plan with the actions before c removed; the gradient of the whole
 *     episode is far from it (the test can tell a prefix that learns);
 *   - metrics: dagger_played is 1 and dagger_xent the mean of -log p over
 *     the decisions from c on, as the forced rollout gives them; without
 *     `dagger` both are NAN.
 * With `dagger_soft: 0.05` as well (test_dagger_soft), the same step's
 * cut decision learns a soft target instead: every type's cheapest
 * completion cost there is checked against a brute force over every
 * completion (model_eval), the target against (c* / c_k)^(1/0.05)
 * normalised over the allowed types, and the step's gradient against
 * agent_net_type_loss with that target on the replayed episode.
 * With `dagger_cuts: 3` (test_dagger_cuts), the step plays three DAgger
 * episodes, cut at 2, 4 and 0 (the first cut, then L / 3 apart, wrapping);
 * each is checked as above (prefix, completion, recorded actions) and the
 * step's gradient against the sum of the three lessons' gradients.
 * The seed is one whose cut at step 1 is 2 (of 0..5): a prefix and a
 * completion both.
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
#include "agent/train.h"
#include "agent/trainconf.h"
#include "nets/params.h"
#include "solvers/solve.h"
#include "tests/agent_fixture.h"

static char tmp[1024];

static const char *JOB =
    AFX_SMALL_CLUSTER
    "job:\n"
    "  name: six\n"
    "  batch: 100\n"
    "  samples: 1e8\n"
    "  min_throughput: 1000\n"
    "  layers:\n"
    "    - {name: emb, flops: 1MFLOP, io: 100KB, act: 10KB, params: 1MB, mem: 5GB}\n"
    "    - {name: fc1, flops: 1GFLOP, io: 0, act: 10KB, params: 4MB, mem: 100MB}\n"
    "    - {name: fc2, flops: 2GFLOP, io: 10KB, act: 1KB, params: 4MB, mem: 100MB}\n"
    "    - {name: fc3, flops: 500MFLOP, io: 1MB, act: 10KB, params: 2MB, mem: 100MB}\n"
    "    - {name: fc4, flops: 1GFLOP, io: 0, act: 10KB, params: 4MB, mem: 1GB}\n"
    "    - {name: out, flops: 10MFLOP, io: 100KB, act: 1KB, params: 1MB, mem: 100MB}\n";

#define SEED 1
#define WANT_CUT 2

static agent_trainconf *load(const char *name, const char *dagger) {
    char cfg[2048], p[1200], err[2048];
    snprintf(cfg, sizeof cfg,
             "mode: search\n"
             "problem: six.yaml\n"
             "seed: %d\n"
             "steps: 10\n"
             "samples: 8\n"
             "embed: 8\n"
             "hidden: 8\n"
             "decoder: 8\n"
             "scorer: 8\n"
             "entropy: 0\n"
             "entropy_final: 0\n"
             "grad_clip: 0\n"
             "threads: 1\n"
             "out: %s/%s-out\n"
             "%s",
             SEED, tmp, name, dagger);
    afx_write_file(tmp, name, cfg);
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    agent_trainconf *tc = agent_trainconf_load(p, err, sizeof err);
    if (!tc) fail_msg("%s", err);
    return tc;
}

/* The pair of runs both tests compare: `extra` (the DAgger keys) and none,
 * from the same initial weights (*p0, a copy), one step each, in the
 * scratch folder `name` under STRATA_TMP. Returns 0, or -1 without
 * STRATA_TMP (the caller skips). */
typedef struct {
    agent_trainconf *tca, *tcb;
    agent_trainer *a, *b;
    nn_params *p0;
    const model_job *job; /* the problem, and a's DAgger episode: */
    const model_cluster *cl;
    double exact;         /* the optimum's cost */
    int cut;              /* WANT_CUT */
    const int *greedy, *plan;
    int actions[6];
} run_pair;

static int pair_step(run_pair *r, const char *name, const char *extra) {
    const char *root = getenv("STRATA_TMP");
    if (!root) return -1;
    afx_scratch(tmp, sizeof tmp, root, name);
    afx_write_file(tmp, "six.yaml", JOB);
    r->tca = load("a.yaml", extra);
    r->tcb = load("b.yaml", "");
    char err[2048];
    r->a = agent_train_create(r->tca, NULL, err, sizeof err);
    if (!r->a) fail_msg("%s", err);
    r->b = agent_train_create(r->tcb, NULL, err, sizeof err);
    if (!r->b) fail_msg("%s", err);
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table(&r->tca->net, table);
    r->p0 = nn_params_create(table, AN_N_TENSORS, err, sizeof err);
    assert_non_null(r->p0);
    memcpy(r->p0->params, agent_train_params(r->a)->params, r->p0->total * sizeof(float));
    if (agent_train_step(r->a, err, sizeof err)) fail_msg("%s", err);
    if (agent_train_step(r->b, err, sizeof err)) fail_msg("%s", err);
    const int *best;
    double cost;
    agent_train_best(r->a, &r->job, &r->cl, &best, &cost, &r->exact);
    assert_int_equal(r->job->n_layers, 6);
    assert_int_equal(agent_train_dagger(r->a, 0, &r->cut, &r->greedy, &r->plan, r->actions), 0);
    assert_int_equal(r->cut, WANT_CUT);
    return 0;
}

static void pair_free(run_pair *r) {
    nn_params_free(r->p0);
    agent_train_free(r->a);
    agent_train_free(r->b);
    agent_trainconf_free(r->tca);
    agent_trainconf_free(r->tcb);
}

/* check_played asserts that `plan` keeps greedy[0..cut) and completes it
 * with the cheapest plan that does (solve_run_fixed, the trainer's
 * completion), and returns its cost. */
static double check_played(const model_job *job, const model_cluster *cl, const int *greedy, int cut,
                           const int *plan) {
    int L = job->n_layers, fixed[8];
    for (int l = 0; l < L; l++) fixed[l] = l < cut ? greedy[l] : -1;
    solve_result *res = solve_result_create(L);
    model_plan *mp = model_plan_create(L);
    assert_non_null(res);
    assert_non_null(mp);
    solve_opts so;
    solve_opts_default(&so);
    assert_int_equal(solve_run_fixed(job, cl, &so, fixed, res), 0);
    assert_int_equal(model_eval(job, cl, plan, mp), MODEL_FEASIBLE);
    assert_true(fabs(mp->cost - res->plan->cost) <= 1e-12 * res->plan->cost);
    for (int l = 0; l < cut; l++) assert_int_equal(plan[l], greedy[l]);
    double cost = mp->cost;
    model_plan_free(mp);
    solve_result_free(res);
    return cost;
}

/* replay plays `plan` forced on the one instance *ai from the weights p
 * (one recorded episode, as the trainer records a DAgger episode) and
 * returns its TYPE trajectory; *K receives the padded candidate count,
 * *mask and *probs the masks and probabilities [T*K] it was played with. */
static agent_type_traj replay(agent_rollout *ro, const nn_params *p, const agent_instance *ai, const int *plan,
                              double penalty, agent_pool *pool, int *K, const uint8_t **mask, const float **probs) {
    char err[2048];
    int of[1] = {0}, T;
    const int *forced[1] = {plan}, *ra;
    agent_rollout_opts fo = {.placement = PLACER_PLACE_NONE, .penalty = penalty, .seed = 1, .stream = 1,
                             .ep_base = 0, .ep_total = 1, .record = 1, .forced = forced};
    if (agent_rollout_run(ro, p, ai, 1, of, 1, &fo, pool, err, sizeof err)) fail_msg("%s", err);
    agent_rollout_type_steps(ro, &T, K, &ra, mask, probs);
    return *agent_rollout_type_traj(ro, NULL);
}

static void test_dagger_step(void **state) {
    (void)state;
    run_pair pr;
    if (pair_step(&pr, "agent_dagger", "dagger: 2\n")) {
        skip();
        return;
    }
    agent_trainconf *tca = pr.tca;
    agent_trainer *a = pr.a, *b = pr.b;
    nn_params *p0 = pr.p0;
    char err[2048];
    const model_job *job = pr.job;
    const model_cluster *cl = pr.cl;
    int L = job->n_layers, cut = pr.cut, *actions = pr.actions;
    const int *greedy = pr.greedy, *plan = pr.plan;
    double exact = pr.exact;
    int cb, ab[6];
    const int *gb_, *pb;
    assert_int_equal(agent_train_dagger(b, 0, &cb, &gb_, &pb, ab), -1); /* dagger 0: none */

    /* the policy's plan: its greedy decode from the initial weights */
    agent_rollout *ro = agent_rollout_create(&tca->net);
    agent_pool *pool = agent_pool_create(1);
    assert_non_null(ro);
    assert_non_null(pool);
    agent_instance ai = {.job = job, .cl = cl, .ref_cost = 1.0};
    int of[1] = {0};
    agent_rollout_opts go = {.placement = PLACER_PLACE_NONE, .greedy = 1, .penalty = tca->penalty,
                             .seed = 1, .stream = 1, .ep_base = 0, .ep_total = 1};
    if (agent_rollout_run(ro, p0, &ai, 1, of, 1, &go, pool, err, sizeof err)) fail_msg("%s", err);
    const int *mine = agent_rollout_assign(ro, 0);
    for (int l = 0; l < L; l++) assert_int_equal(greedy[l], mine[l]);

    /* the plan played: the policy's prefix, then the cheapest completion */
    double played = check_played(job, cl, greedy, cut, plan);
    print_message("greedy %d%d%d%d%d%d, played %d%d%d%d%d%d (cut %d), $%.4f; exact $%.4f\n", greedy[0], greedy[1],
                  greedy[2], greedy[3], greedy[4], greedy[5], plan[0], plan[1], plan[2], plan[3], plan[4], plan[5],
                  cut, played, exact);
    /* recorded decisions: none before the cut, the plan's from it */
    for (int l = 0; l < L; l++) assert_int_equal(actions[l], l < cut ? -1 : plan[l]);

    /* the forced episode, replayed from the initial weights */
    int K;
    const uint8_t *rm;
    const float *rp;
    agent_type_traj tr = replay(ro, p0, &ai, plan, tca->penalty, pool, &K, &rm, &rp);
    int *act = malloc((size_t)tr.T * tr.B * sizeof *act);
    assert_non_null(act);
    memcpy(act, tr.action, (size_t)tr.T * tr.B * sizeof *act);
    double xent = 0;
    for (int l = cut; l < L; l++) xent += -log((double)rp[(size_t)l * K + plan[l]]) / (L - cut);
    const agent_metrics *ma = agent_train_last(a), *mb = agent_train_last(b);
    assert_true(ma->dagger_played == 1.0);
    assert_true(fabs(ma->dagger_xent - xent) <= 1e-5 * xent);
    assert_true(isnan(mb->dagger_xent) && isnan(mb->dagger_played));

    /* the gradient of the lesson: -(w S) logp on the decisions from the cut
     * on, scale 1/(G S); and, to show the difference matters, of the whole
     * episode */
    float adv = (float)(tca->dagger * tca->samples), scale = 1.0f / (float)(tca->instances * tca->samples);
    tr.adv = &adv;
    tr.enc_cached = 0;
    for (int l = 0; l < cut; l++) act[l] = -1;
    tr.action = act;
    agent_loss_stats ls = {0};
    agent_net_ws *ws = agent_net_ws_create(&tca->net);
    nn_params_zero_grad(p0);
    if (agent_net_type_loss(ws, p0, &tr, 0.0f, scale, &ls, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(ls.decisions, L - cut);
    float *want = malloc(p0->total * sizeof *want);
    assert_non_null(want);
    memcpy(want, p0->grads, p0->total * sizeof *want);
    for (int l = 0; l < cut; l++) act[l] = plan[l];
    nn_params_zero_grad(p0);
    memset(&ls, 0, sizeof ls);
    if (agent_net_type_loss(ws, p0, &tr, 0.0f, scale, &ls, err, sizeof err)) fail_msg("%s", err);
    const float *ga = agent_train_params(a)->grads, *gb = agent_train_params(b)->grads;
    double maxw = 0, maxerr = 0, maxfull = 0;
    for (size_t e = 0; e < p0->total; e++) {
        double d = (double)ga[e] - gb[e];
        if (fabs(want[e]) > maxw) maxw = fabs(want[e]);
        if (fabs(d - want[e]) > maxerr) maxerr = fabs(d - want[e]);
        if (fabs(d - p0->grads[e]) > maxfull) maxfull = fabs(d - p0->grads[e]);
    }
    print_message("largest gradient entry of the lesson %.4g; off by %.3g (whole episode: off by %.3g)\n", maxw,
                  maxerr, maxfull);
    assert_true(maxw > 1e-3);
    assert_true(maxerr <= 1e-4 * maxw);
    assert_true(maxfull > 1e-2 * maxw);

    free(want);
    free(act);
    agent_net_ws_free(ws);
    agent_pool_free(pool);
    agent_rollout_free(ro);
    pair_free(&pr);
}

/* brute_completion returns the least cost of the feasible plans that keep
 * prefix[0..cut) and have type k at the cut (INFINITY: none), by
 * model_eval over every completion. */
static double brute_completion(const model_job *job, const model_cluster *cl, const int *prefix, int cut, int k) {
    int L = job->n_layers, n = cl->n_types, a[8];
    model_plan *mp = model_plan_create(L);
    assert_non_null(mp);
    long combos = 1;
    for (int l = cut + 1; l < L; l++) combos *= n;
    double best = INFINITY;
    for (long c = 0; c < combos; c++) {
        long v = c;
        for (int l = 0; l < L; l++) {
            if (l < cut) a[l] = prefix[l];
            else if (l == cut) a[l] = k;
            else a[l] = (int)(v % n), v /= n;
        }
        if (model_eval(job, cl, a, mp) == MODEL_FEASIBLE && mp->cost < best) best = mp->cost;
    }
    model_plan_free(mp);
    return best;
}

static void test_dagger_soft(void **state) {
    (void)state;
    const double tau = 0.05;
    run_pair pr;
    if (pair_step(&pr, "agent_dagger_soft", "dagger: 2\ndagger_soft: 0.05\ndagger_focus: 3\n")) {
        skip();
        return;
    }
    agent_trainconf *tcs = pr.tca;
    agent_trainer *s = pr.a, *b = pr.b;
    nn_params *p0 = pr.p0;
    char err[2048];
    const model_job *job = pr.job;
    const model_cluster *cl = pr.cl;
    int n = cl->n_types, cut = pr.cut;
    const int *greedy = pr.greedy, *plan = pr.plan;
    const double *ccost;
    const float *q;
    int nt = 0;
    assert_int_equal(agent_train_dagger_soft(s, 0, &ccost, &q, &nt), 0);
    assert_int_equal(agent_train_dagger_soft(b, 0, &ccost, &q, &nt), -1); /* no dagger: no lesson */
    assert_int_equal(agent_train_dagger_soft(s, 0, &ccost, &q, &nt), 0);

    /* every type's completion cost, by brute force */
    int feasible = 0;
    for (int k = 0; k < n; k++) {
        double want = brute_completion(job, cl, greedy, cut, k);
        print_message("type %d at layer %d: completion $%.6f (brute force $%.6f)\n", k, cut, ccost[k], want);
        if (isinf(want)) assert_true(isinf(ccost[k]));
        else assert_true(fabs(ccost[k] - want) <= 1e-9 * want), feasible++;
    }
    assert_true(feasible >= 2); /* a choice to soften */
    assert_int_equal(nt, n);

    /* the forced episode replayed: its mask at the cut, then the target */
    agent_rollout *ro = agent_rollout_create(&tcs->net);
    agent_pool *pool = agent_pool_create(1);
    agent_instance ai = {.job = job, .cl = cl, .ref_cost = 1.0};
    int K;
    const uint8_t *rm;
    const float *rp;
    agent_type_traj tr = replay(ro, p0, &ai, plan, tcs->penalty, pool, &K, &rm, &rp);
    const uint8_t *mk = rm + (size_t)cut * K;
    double cstar = INFINITY, sum = 0, w[8];
    for (int k = 0; k < n; k++)
        if (mk[k] && ccost[k] < cstar) cstar = ccost[k];
    for (int k = 0; k < K; k++) sum += w[k] = k < n && mk[k] && isfinite(ccost[k]) ? pow(cstar / ccost[k], 1 / tau) : 0;
    /* dagger_focus 3: the lesson weighs 4 where the policy's own type
     * completes more than 0.1% above the best */
    double weight = ccost[greedy[cut]] > cstar * 1.001 ? 4.0 : 1.0;
    assert_true(weight == 4.0); /* greedy's 0 at the cut: $174.45 against $143.50 */
    int spread = 0;
    for (int k = 0; k < K; k++) {
        assert_true(fabs(q[k] - weight * w[k] / sum) <= 1e-5);
        spread += q[k] > 1e-3;
    }
    print_message("soft target at the cut: %.4f %.4f %.4f %.4f\n", q[0], q[1], K > 2 ? q[2] : 0.0,
                  K > 3 ? q[3] : 0.0);

    /* the gradient: -(w S) sum_k q_k logp_k at the cut, -(w S) logp(plan[l])
     * after it, scale 1/(G S) */
    float adv = (float)(tcs->dagger * tcs->samples), scale = 1.0f / (float)(tcs->instances * tcs->samples);
    int *act = malloc((size_t)tr.T * tr.B * sizeof *act);
    float *tg = malloc((size_t)tr.T * tr.B * K * sizeof *tg);
    assert_non_null(act);
    assert_non_null(tg);
    memcpy(act, tr.action, (size_t)tr.T * tr.B * sizeof *act);
    for (int l = 0; l < cut; l++) act[l] = -1;
    for (int r = 0; r < tr.T * tr.B; r++) tg[(size_t)r * K] = -1.0f;
    memcpy(tg + (size_t)cut * K, q, (size_t)K * sizeof *tg);
    tr.adv = &adv;
    tr.action = act;
    tr.target = tg;
    tr.enc_cached = 0;
    agent_loss_stats ls = {0};
    agent_net_ws *ws = agent_net_ws_create(&tcs->net);
    nn_params_zero_grad(p0);
    if (agent_net_type_loss(ws, p0, &tr, 0.0f, scale, &ls, err, sizeof err)) fail_msg("%s", err);
    float *want = malloc(p0->total * sizeof *want);
    assert_non_null(want);
    memcpy(want, p0->grads, p0->total * sizeof *want);
    tr.target = NULL; /* the one-hot lesson, to show the soft one differs */
    nn_params_zero_grad(p0);
    if (agent_net_type_loss(ws, p0, &tr, 0.0f, scale, &ls, err, sizeof err)) fail_msg("%s", err);
    const float *gs = agent_train_params(s)->grads, *gb = agent_train_params(b)->grads;
    double maxw = 0, maxerr = 0, maxhard = 0;
    for (size_t e = 0; e < p0->total; e++) {
        double d = (double)gs[e] - gb[e];
        if (fabs(want[e]) > maxw) maxw = fabs(want[e]);
        if (fabs(d - want[e]) > maxerr) maxerr = fabs(d - want[e]);
        if (fabs(d - p0->grads[e]) > maxhard) maxhard = fabs(d - p0->grads[e]);
    }
    print_message("soft lesson: largest gradient entry %.4g, off by %.3g (one-hot lesson: off by %.3g; %d types "
                  "above 0.001)\n",
                  maxw, maxerr, maxhard, spread);
    assert_true(maxw > 1e-3);
    assert_true(maxerr <= 1e-4 * maxw);
    if (spread >= 2) assert_true(maxhard > 1e-3 * maxw);

    free(want);
    free(act);
    free(tg);
    agent_net_ws_free(ws);
    agent_pool_free(pool);
    agent_rollout_free(ro);
    pair_free(&pr);
}

static void test_dagger_cuts(void **state) {
    (void)state;
    run_pair pr;
    if (pair_step(&pr, "agent_dagger_cuts", "dagger: 2\ndagger_cuts: 3\n")) {
        skip();
        return;
    }
    agent_trainconf *tca = pr.tca;
    char err[2048];
    const model_job *job = pr.job;
    const model_cluster *cl = pr.cl;
    int L = job->n_layers;
    nn_params *p0 = pr.p0;
    agent_rollout *ro = agent_rollout_create(&tca->net);
    agent_pool *pool = agent_pool_create(1);
    agent_net_ws *ws = agent_net_ws_create(&tca->net);
    assert_non_null(ro);
    assert_non_null(pool);
    assert_non_null(ws);
    agent_instance ai = {.job = job, .cl = cl, .ref_cost = 1.0};
    float adv = (float)(tca->dagger * tca->samples), scale = 1.0f / (float)(tca->instances * tca->samples);
    nn_params_zero_grad(p0);
    double xent = 0;
    int decisions = 0;
    static const int want_cut[3] = {2, 4, 0};
    int plans[3][6];
    for (int j = 0; j < 3; j++) {
        int cut, actions[6];
        const int *greedy, *plan;
        assert_int_equal(agent_train_dagger(pr.a, j, &cut, &greedy, &plan, actions), 0);
        assert_int_equal(cut, want_cut[j]);
        for (int l = 0; l < L; l++) assert_int_equal(greedy[l], pr.greedy[l]); /* one greedy plan */
        /* the plan played: the greedy prefix, then the cheapest completion */
        check_played(job, cl, greedy, cut, plan);
        for (int l = 0; l < L; l++) assert_int_equal(actions[l], l < cut ? -1 : plan[l]);
        memcpy(plans[j], plan, sizeof plans[j]);
        /* its lesson's gradient, accumulated over the three */
        int K, act[6];
        const uint8_t *rm;
        const float *rp;
        agent_type_traj tr = replay(ro, p0, &ai, plans[j], tca->penalty, pool, &K, &rm, &rp);
        assert_int_equal(tr.T * tr.B, L);
        for (int l = 0; l < L; l++) {
            act[l] = l < cut ? -1 : tr.action[l];
            if (l >= cut) xent += -log((double)rp[(size_t)l * K + plan[l]]), decisions++;
        }
        tr.action = act;
        tr.adv = &adv;
        tr.enc_cached = 0;
        agent_loss_stats ls = {0};
        if (agent_net_type_loss(ws, p0, &tr, 0.0f, scale, &ls, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(ls.decisions, L - cut);
    }
    int cb, ab[6];
    const int *gb_, *pb;
    assert_int_equal(agent_train_dagger(pr.a, 3, &cb, &gb_, &pb, ab), -1); /* three episodes, no more */
    const agent_metrics *ma = agent_train_last(pr.a);
    assert_true(ma->dagger_played == 1.0); /* all three played */
    assert_true(fabs(ma->dagger_xent - xent / decisions) <= 1e-5 * xent / decisions);
    const float *ga = agent_train_params(pr.a)->grads, *gb = agent_train_params(pr.b)->grads;
    double maxw = 0, maxerr = 0;
    for (size_t e = 0; e < p0->total; e++) {
        double d = (double)ga[e] - gb[e];
        if (fabs(p0->grads[e]) > maxw) maxw = fabs(p0->grads[e]);
        if (fabs(d - p0->grads[e]) > maxerr) maxerr = fabs(d - p0->grads[e]);
    }
    print_message("three cuts: largest gradient entry %.4g, off by %.3g\n", maxw, maxerr);
    assert_true(maxw > 1e-3);
    assert_true(maxerr <= 1e-4 * maxw);

    agent_net_ws_free(ws);
    agent_pool_free(pool);
    agent_rollout_free(ro);
    pair_free(&pr);

    /* more cuts than layers: every layer cut once, the rest none */
    if (pair_step(&pr, "agent_dagger_cuts8", "dagger: 2\ndagger_cuts: 8\n")) fail_msg("no STRATA_TMP");
    int seen[6] = {0};
    for (int j = 0; j < 8; j++) {
        int cut, actions[6];
        const int *greedy, *plan;
        int rc = agent_train_dagger(pr.a, j, &cut, &greedy, &plan, actions);
        if (j >= L) {
            assert_int_equal(rc, -1);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(cut, (2 + j) % L);
        seen[cut]++;
    }
    for (int l = 0; l < L; l++) assert_int_equal(seen[l], 1);
    assert_true(agent_train_last(pr.a)->dagger_played == 6.0 / 8.0);
    pair_free(&pr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dagger_step),
        cmocka_unit_test(test_dagger_soft),
        cmocka_unit_test(test_dagger_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
