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

static void test_dagger_step(void **state) {
    (void)state;
    const char *root = getenv("STRATA_TMP");
    if (!root) {
        skip();
        return;
    }
    afx_scratch(tmp, sizeof tmp, root, "agent_dagger");
    afx_write_file(tmp, "six.yaml", JOB);
    agent_trainconf *tca = load("a.yaml", "dagger: 2\n"), *tcb = load("b.yaml", "");
    char err[2048];
    agent_trainer *a = agent_train_create(tca, NULL, err, sizeof err);
    if (!a) fail_msg("%s", err);
    agent_trainer *b = agent_train_create(tcb, NULL, err, sizeof err);
    if (!b) fail_msg("%s", err);

    /* the initial weights (both runs start from them) */
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table(&tca->net, table);
    nn_params *p0 = nn_params_create(table, AN_N_TENSORS, err, sizeof err);
    assert_non_null(p0);
    memcpy(p0->params, agent_train_params(a)->params, p0->total * sizeof(float));

    if (agent_train_step(a, err, sizeof err)) fail_msg("%s", err);
    if (agent_train_step(b, err, sizeof err)) fail_msg("%s", err);

    const model_job *job;
    const model_cluster *cl;
    const int *best;
    double cost, exact;
    agent_train_best(a, &job, &cl, &best, &cost, &exact);
    int L = job->n_layers;
    assert_int_equal(L, 6);
    int cut, actions[6];
    const int *greedy, *plan;
    assert_int_equal(agent_train_dagger(a, 0, &cut, &greedy, &plan, actions), 0);
    assert_int_equal(cut, WANT_CUT);
    assert_int_equal(agent_train_dagger(b, 0, &cut, &greedy, &plan, actions), -1); /* dagger 0: none */
    assert_int_equal(agent_train_dagger(a, 0, &cut, &greedy, &plan, actions), 0);

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
    int fixed[6];
    for (int l = 0; l < L; l++) fixed[l] = l < cut ? greedy[l] : -1;
    solve_result *res = solve_result_create(L);
    solve_opts so;
    solve_opts_default(&so);
    assert_int_equal(solve_run_fixed(job, cl, &so, fixed, res), 0);
    model_plan *mp = model_plan_create(L);
    assert_int_equal(model_eval(job, cl, plan, mp), MODEL_FEASIBLE);
    assert_true(fabs(mp->cost - res->plan->cost) <= 1e-12 * res->plan->cost);
    for (int l = 0; l < cut; l++) assert_int_equal(plan[l], greedy[l]);
    print_message("greedy %d%d%d%d%d%d, played %d%d%d%d%d%d (cut %d), $%.4f; exact $%.4f\n", greedy[0], greedy[1],
                  greedy[2], greedy[3], greedy[4], greedy[5], plan[0], plan[1], plan[2], plan[3], plan[4], plan[5],
                  cut, mp->cost, exact);
    /* recorded decisions: none before the cut, the plan's from it */
    for (int l = 0; l < L; l++) assert_int_equal(actions[l], l < cut ? -1 : plan[l]);

    /* the forced episode, replayed from the initial weights */
    const int *forced[1] = {plan};
    agent_rollout_opts fo = {.placement = PLACER_PLACE_NONE, .penalty = tca->penalty, .seed = 1, .stream = 1,
                             .ep_base = 0, .ep_total = 1, .record = 1, .forced = forced};
    if (agent_rollout_run(ro, p0, &ai, 1, of, 1, &fo, pool, err, sizeof err)) fail_msg("%s", err);
    agent_type_traj tr = *agent_rollout_type_traj(ro, NULL);
    int *act = malloc((size_t)tr.T * tr.B * sizeof *act);
    assert_non_null(act);
    memcpy(act, tr.action, (size_t)tr.T * tr.B * sizeof *act);
    double xent = 0;
    int T, K;
    const int *ra;
    const uint8_t *rm;
    const float *rp;
    agent_rollout_type_steps(ro, &T, &K, &ra, &rm, &rp);
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
    model_plan_free(mp);
    solve_result_free(res);
    agent_pool_free(pool);
    agent_rollout_free(ro);
    nn_params_free(p0);
    agent_train_free(a);
    agent_train_free(b);
    agent_trainconf_free(tca);
    agent_trainconf_free(tcb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dagger_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
