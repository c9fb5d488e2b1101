/* test_agent_anchor.c -- decoding out of a dead end the backtracking cannot
 * leave (agent/decode.h, agent/policy.h): the anchored fallback always
 * yields a plan when one exists.
 *
 * The trap, worked out by hand (docs/model.md §2). Forty identical layers
 * of 1 GFLOP per sample (act 1 KB, params 1 KB, mem 1 GB), except the last,
 * which holds 30 GB; B 32, R 250/s, alpha 0.05. Two types of 1 TFLOPS:
 *   - big (type 0): 80 GB, 2 units, $2/h;
 *   - small (type 1): 24 GB, 40 units, $1/h.
 * A stage of n layers on one unit steps in about C = 32 n 1e9 / 1e12 =
 * 0.032 n s (the activation and parameter terms add microseconds), so
 * q = R t / B = 0.25 n: n <= 3 layers take 1 unit (q = 1 at n = 4 is
 * pushed just over 1 by those microseconds: 2 units), n <= 7 take 2.
 * The last layer fits big only (30 GB > 24 GB), so every feasible plan
 * keeps a unit of big for it. The exact optimum ($1574.12) is small 0-16
 * (6 units), big 17-19 (1), small 20-36 (6), big 37-39 (1).
 *
 * A decode that prefers big wherever the mask allows it (the mask is sound
 * but only looks one layer ahead) runs big over layers 0-6 (2 units), then
 * small, and dead-ends at layer 39 with big used up. Backtracking from the
 * deepest decision explores the ways of spending big's units on the layers
 * after the first switch before it revisits the early layers: its 64
 * passes run out (checked below), and the plan is lost. The anchored
 * decode forces a prefix of the exact plan and decodes the rest.
 *
 * Two policies play the trap: a scripted one (agent_rollout_set_policy:
 * all probability on big when allowed) at the decode level, and a saved
 * checkpoint whose weights are all zero (uniform probabilities; greedy
 * takes the lowest allowed index, big) through agent_policy_decode, the
 * path `strata solve --method policy`, eval and the daemon use.
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

#include "agent/ckptio.h"
#include "agent/decode.h"
#include "agent/net.h"
#include "agent/policy.h"
#include "agent/rollout.h"
#include "env/config.h"
#include "nets/params.h"
#include "solvers/solve.h"
#include "tests/agent_fixture.h"

#define L 40

static char tmp[1024];

static const char *TRAP_HEAD =
    "model: v1\n"
    "cluster:\n"
    "  types:\n"
    "    - {name: big, kind: gpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 10GB/s, mem: 80GB, price: 2.0, count: 2}\n"
    "    - {name: small, kind: gpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 10GB/s, mem: 24GB, price: 1.0, count: 40}\n"
    "job:\n"
    "  name: trap\n"
    "  batch: 32\n"
    "  samples: 1e8\n"
    "  min_throughput: 250\n"
    "  alpha: 0.05\n"
    "  layers:\n";

/* load_trap writes the trap with n layers (the last one 30 GB) and
 * target `target` ("250", or another figure) to tmp/file and loads it. */
static cfg_run *load_trap_n(int n_layers, const char *target, const char *file) {
    char text[8192], p[1200], err[2048];
    snprintf(text, sizeof text, "%s", TRAP_HEAD);
    char *r = strstr(text, "min_throughput: 250");
    assert_non_null(r);
    snprintf(r, sizeof text - (size_t)(r - text), "min_throughput: %s\n  alpha: 0.05\n  layers:\n", target);
    size_t n = strlen(text);
    for (int l = 0; l < n_layers; l++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "    - {name: l%d, flops: 1GFLOP, io: 0, act: 1KB, params: 1KB, mem: %s}\n", l,
                              l == n_layers - 1 ? "30GB" : "1GB");
    afx_write_file(tmp, file, text);
    snprintf(p, sizeof p, "%s/%s", tmp, file);
    cfg_run *run = cfg_load(p, err, sizeof err);
    if (!run) fail_msg("%s", err);
    return run;
}

static cfg_run *load_trap(void) { return load_trap_n(L, "250", "trap.yaml"); }

/* all probability on type 0 when the mask allows it, else on the first
 * allowed type */
static int prefer_big(void *ctx, int t, const float *lf, const int *len, int T, int G,
                      const int *inst_of, int B, const float *glob, const float *rows,
                      const float *prev, const uint8_t *mask, const uint8_t *active, int K,
                      float *probs) {
    (void)ctx, (void)t, (void)lf, (void)len, (void)T, (void)G, (void)inst_of, (void)glob;
    (void)rows, (void)prev, (void)active;
    for (int b = 0; b < B; b++) {
        int pick = -1;
        for (int k = 0; k < K && pick < 0; k++)
            if (mask[(size_t)b * K + k]) pick = k;
        for (int k = 0; k < K; k++) probs[(size_t)b * K + k] = k == pick ? 1.0f : 0.0f;
    }
    return 0;
}

static int setup(void **state) {
    (void)state;
    const char *root = getenv("STRATA_TMP");
    afx_scratch(tmp, sizeof tmp, root ? root : "/tmp", "agent_anchor");
    return 0;
}

/* the exact optimum of the trap */
static void exact_plan(const cfg_run *run, int *assign, double *cost) {
    solve_result *sr = solve_result_create(L);
    solve_opts so;
    solve_opts_default(&so);
    assert_int_equal(solve_run(&run->jobs[0], &run->cluster, &so, sr), 0);
    assert_true(sr->optimal);
    memcpy(assign, sr->assign, L * sizeof *assign);
    *cost = sr->plan->cost;
    solve_result_free(sr);
    assert_int_equal(assign[L - 1], 0); /* 30 GB: big only */
}

static void test_decode_level(void **state) {
    (void)state;
    cfg_run *run = load_trap();
    agent_instance in = {&run->jobs[0], &run->cluster, 1.0, 0, 0};
    int opt[L], assign[L], runs = 0, k = -1;
    double opt_cost;
    exact_plan(run, opt, &opt_cost);
    agent_net_dims d;
    agent_net_dims_default(&d);
    agent_rollout *ro = agent_rollout_create(&d);
    assert_non_null(ro);
    agent_rollout_set_policy(ro, prefer_big, NULL);
    char err[512];
    /* the plain decode: big over 0-6, then small, dead end at 19; the
     * backtracking spends its 64 passes below the first switch */
    assert_int_equal(agent_decode_greedy(ro, NULL, &in, PLACER_PLACE_NONE, 4.0, 64, assign, &runs, err,
                                         sizeof err), 1);
    assert_int_equal(runs, 64);
    /* anchored on the optimum (prefixes of 5, 10, ..., 40 layers): a
     * prefix that leaves big a unit and ten or more layers to go lets the
     * policy spend that unit early again, in more ways than 8 passes undo;
     * the 35-layer prefix (big's first unit on 17-19) leaves five layers,
     * where the backtracking puts big's last unit on 37-39 */
    assert_int_equal(agent_decode_anchored(ro, NULL, &in, PLACER_PLACE_NONE, 4.0, opt, 8, assign, &runs,
                                           &k, err, sizeof err), 0);
    assert_int_equal(k, 35);
    assert_memory_equal(assign, opt, 35 * sizeof *assign);
    assert_int_equal(assign[L - 1], 0);
    model_plan *pl = model_plan_create(L);
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, pl), MODEL_FEASIBLE);
    assert_true(pl->cost >= opt_cost * (1 - 1e-12));
    const agent_episode *e = agent_rollout_episode(ro, 0);
    assert_true(e->feasible);
    assert_true(e->cost == pl->cost);
    model_plan_free(pl);
    agent_rollout_free(ro);
    cfg_free(run);
}

/* zero_params: the default network with every weight 0 (uniform
 * probabilities over the allowed types). */
static nn_params *zero_params(agent_net_dims *d) {
    agent_net_dims_default(d);
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table(d, t);
    char err[512];
    nn_params *p = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    assert_non_null(p);
    memset(p->params, 0, p->total * sizeof *p->params);
    return p;
}

/* A zero-weight checkpoint of the default network: uniform probabilities,
 * so greedy takes big (index 0) wherever allowed. */
static void write_zero_policy(const char *path) {
    agent_net_dims d;
    nn_params *p = zero_params(&d);
    char err[512];
    agent_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.mode = 1;
    if (agent_ckpt_write(path, p, &d, &st, err, sizeof err)) fail_msg("%s", err);
    nn_params_free(p);
}

static void test_policy_decode(void **state) {
    (void)state;
    cfg_run *run = load_trap();
    int opt[L], assign[L];
    double opt_cost;
    exact_plan(run, opt, &opt_cost);
    char path[1200], err[2048];
    snprintf(path, sizeof path, "%s/zero.h5", tmp);
    write_zero_policy(path);
    agent_policy *pol = agent_policy_load(path, err, sizeof err);
    if (!pol) fail_msg("%s", err);
    model_plan *plan = model_plan_create(L);
    agent_decode_result res = {.assign = assign, .task_node = NULL, .plan = plan};
    agent_decode_opts o = {.decode = AGENT_DECODE_GREEDY, .samples = 1, .seed = 1,
                           .placement = PLACER_PLACE_NONE};
    /* without the fallback: MODEL_ERR_CAPACITY, "no feasible plan in 64" */
    int rc = agent_policy_decode(pol, &run->jobs[0], &run->cluster, &o, &res, err, sizeof err);
    if (rc != 0) fail_msg("decode returned %d: %s", rc, plan->why);
    assert_int_equal(res.anchored, 35);
    assert_int_equal(res.anchor_method, SOLVE_EXACT);
    assert_true(res.samples_used > 64); /* the 64 plain passes, then the anchored ones */
    model_plan *check = model_plan_create(L);
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, check), MODEL_FEASIBLE);
    assert_true(check->cost == plan->cost);
    /* sampling: every sample dead-ends too (all weights zero: the samples
     * are uniform, and a uniform plan is rarely this lucky -- whatever they
     * find, the answer is a feasible plan no worse than the greedy one) */
    o.decode = AGENT_DECODE_SAMPLE;
    o.samples = 8;
    rc = agent_policy_decode(pol, &run->jobs[0], &run->cluster, &o, &res, err, sizeof err);
    if (rc != 0) fail_msg("decode returned %d: %s", rc, plan->why);
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, check), MODEL_FEASIBLE);
    model_plan_free(check);
    model_plan_free(plan);
    agent_policy_free(pol);
    cfg_free(run);
}

/* No plan exists (R 2000/s: the last layer alone steps in 0.032 s on one
 * unit, q = 2, so it needs ceil(2 * 0.95 / 0.9) = 3 units of big, which has
 * 2): exact proves it, the fallback has no anchor and the answer stays
 * "no feasible plan", never an error. */
static void test_no_plan(void **state) {
    (void)state;
    char p[1200], err[2048];
    cfg_run *run = load_trap_n(L, "2e3", "none.yaml");
    snprintf(p, sizeof p, "%s/zero.h5", tmp);
    write_zero_policy(p);
    agent_policy *pol = agent_policy_load(p, err, sizeof err);
    if (!pol) fail_msg("%s", err);
    int assign[L];
    model_plan *plan = model_plan_create(L);
    agent_decode_result res = {.assign = assign, .task_node = NULL, .plan = plan};
    agent_decode_opts o = {.decode = AGENT_DECODE_GREEDY, .samples = 1, .seed = 1,
                           .placement = PLACER_PLACE_NONE};
    res.anchored = 7; /* a result reused from an anchored decode is reset */
    int rc = agent_policy_decode(pol, &run->jobs[0], &run->cluster, &o, &res, err, sizeof err);
    assert_true(rc > 0);
    assert_int_equal(res.anchored, 0);
    assert_non_null(strstr(plan->why, "no feasible plan"));
    assert_non_null(strstr(plan->why, "the exact solver proved that none exists"));
    model_plan_free(plan);
    agent_policy_free(pol);
    cfg_free(run);
}

/* longest_feasible_prefix: by brute force over every plan of the n-layer,
 * two-type job, the longest prefix any feasible plan shares with
 * played[n_played] (-1 when no plan is feasible). */
static int longest_feasible_prefix(const cfg_run *run, const int *played, int n_played) {
    const model_job *job = &run->jobs[0];
    int n = job->n_layers, best = -1, a[16];
    assert_true(n <= 16 && run->cluster.n_types == 2);
    model_plan *pl = model_plan_create(n);
    for (unsigned m = 0; m < 1u << n; m++) {
        for (int l = 0; l < n; l++) a[l] = (int)(m >> l) & 1;
        if (model_eval(job, &run->cluster, a, pl) != MODEL_FEASIBLE) continue;
        int k = 0;
        while (k < n_played && a[k] == played[k]) k++;
        if (k > best) best = k;
    }
    model_plan_free(pl);
    return best;
}

/* repaired_prefix repairs played[n_played] on ro (max_runs passes) and
 * checks the plan: feasible by the cost model, its prefix shared with
 * played[] the longest a feasible plan has. Returns that length. */
static int repaired_prefix(agent_rollout *ro, const nn_params *p, const cfg_run *run, const int *played,
                           int n_played) {
    agent_instance in = {&run->jobs[0], &run->cluster, 1.0, 0, 0};
    int n = run->jobs[0].n_layers, assign[16], runs = 0;
    char err[512];
    int st = agent_decode_repair(ro, p, &in, PLACER_PLACE_NONE, 4.0, played, n_played, 1 << n, assign,
                                 &runs, err, sizeof err);
    if (st != 0) fail_msg("repair returned %d after %d passes: %s", st, runs, st < 0 ? err : "");
    assert_true(runs >= 2); /* the replay dead-ends again */
    model_plan *pl = model_plan_create(n);
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, pl), MODEL_FEASIBLE);
    assert_true(agent_rollout_episode(ro, 0)->feasible);
    assert_true(agent_rollout_episode(ro, 0)->cost == pl->cost);
    model_plan_free(pl);
    int k = 0;
    while (k < n_played && assign[k] == played[k]) k++;
    assert_int_equal(k, longest_feasible_prefix(run, played, n_played));
    return k;
}

/* A sample that dead-ends is repaired from its own decisions
 * (agent_decode_repair). The trap cut to 8 layers (R 250/s): big takes 1
 * unit for up to 3 layers, 2 for up to 7, and the last layer needs big.
 * Preferring big, the decode runs big over layers 0-6 (both units) and
 * dead-ends at layer 7. The replay alone dead-ends again; the repair
 * backtracks into the played decisions themselves, and of the 256 plans
 * the feasible ones keep big to at most 3 layers before the switch (1
 * unit, the other for layer 7): the repaired plan keeps big on 0-2. Then
 * uniformly sampled plays (zero weights) that dead-end: each repaired
 * plan shares the longest prefix with its sample that any feasible plan
 * does (brute force), which is what a complete depth-first search from
 * the deepest decision finds first. */
static void test_repair(void **state) {
    (void)state;
    cfg_run *run = load_trap_n(8, "250", "trap8.yaml");
    agent_instance in = {&run->jobs[0], &run->cluster, 1.0, 0, 0};
    agent_net_dims d;
    nn_params *zero = zero_params(&d);
    agent_rollout *ro = agent_rollout_create(&d);
    assert_non_null(ro);
    char err[512];
    int played[8], assign[8], runs = 0, of[64] = {0};
    agent_rollout_set_policy(ro, prefer_big, NULL);
    agent_rollout_opts o = {.placement = PLACER_PLACE_NONE, .greedy = 1, .penalty = 4.0, .ep_total = 1};
    assert_int_equal(agent_rollout_run(ro, NULL, &in, 1, of, 1, &o, NULL, err, sizeof err), 0);
    assert_true(agent_rollout_episode(ro, 0)->dead_end);
    assert_int_equal(agent_decode_played(ro, 0, played), 7);
    for (int l = 0; l < 7; l++) assert_int_equal(played[l], 0);
    assert_int_equal(agent_decode_repair(ro, NULL, &in, PLACER_PLACE_NONE, 4.0, played, 7, 1, assign,
                                         &runs, err, sizeof err), 1);
    assert_int_equal(runs, 1);
    assert_int_equal(repaired_prefix(ro, NULL, run, played, 7), 3);
    /* uniform samples */
    agent_rollout_set_policy(ro, NULL, NULL);
    o.greedy = 0;
    o.seed = 3;
    o.ep_total = 64;
    assert_int_equal(agent_rollout_run(ro, zero, &in, 1, of, 64, &o, NULL, err, sizeof err), 0);
    int dead = 0, n_played[64], all[64][8];
    for (int b = 0; b < 64; b++)
        if (agent_rollout_episode(ro, b)->dead_end) {
            n_played[dead] = agent_decode_played(ro, b, all[dead]);
            dead++;
        }
    int revisited = 0;
    for (int i = 0; i < dead; i++)
        revisited += repaired_prefix(ro, zero, run, all[i], n_played[i]) < n_played[i];
    print_message("uniform samples: %d of 64 dead-ended, %d repaired into their own decisions\n", dead,
                  revisited);
    assert_true(dead >= 8);
    assert_true(revisited >= 1);
    agent_rollout_free(ro);
    nn_params_free(zero);
    cfg_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_level),
        cmocka_unit_test(test_policy_decode),
        cmocka_unit_test(test_no_plan),
        cmocka_unit_test(test_repair),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
