/* test_agent_adv.c -- advantages (agent/adv.h) worked out by hand.
 *
 * The batch: G = 2 instances, S = 3 episodes each, rewards
 *   instance 0: -1.0, -2.0, -3.0        instance 1: -0.5, -0.5, -2.0
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/adv.h"
#include "agent/trainconf.h"

static const double R[6] = {-1.0, -2.0, -3.0, -0.5, -0.5, -2.0};

static void close_to(double got, double want) {
    if (fabs(got - want) > 1e-12) fail_msg("got %.15g, want %.15g", got, want);
}

/* Shared baseline: each episode against the mean of the others.
 *   instance 0, sum -6: e0 = -1 - (-5/2) = 1.5; e1 = -2 - (-4/2) = 0;
 *                       e2 = -3 - (-3/2) = -1.5
 *   instance 1, sum -3: e3 = -0.5 - (-2.5/2) = 0.75; e4 = 0.75;
 *                       e5 = -2 - (-1/2) = -1.5 */
static void test_shared(void **state) {
    (void)state;
    agent_adv_opts o = {AGENT_BASE_SHARED, 0.9, 0, 0};
    double adv[6], base = 0;
    int init = 0;
    uint8_t keep[6];
    memset(keep, 1, sizeof keep);
    assert_int_equal(agent_advantages(&o, 2, 3, R, NULL, adv, keep, &base, &init, 1), 0);
    const double want[6] = {1.5, 0, -1.5, 0.75, 0.75, -1.5};
    for (int e = 0; e < 6; e++) close_to(adv[e], want[e]);
    for (int e = 0; e < 6; e++) assert_int_equal(keep[e], 1);
    assert_int_equal(init, 0); /* the moving baseline is untouched */
}

/* Only episodes with decisions of the head (has) count:
 *   instance 0 has e0, e1: e0 = -1 - (-2) = 1, e1 = -2 - (-1) = -1, e2 = 0;
 *   instance 1 has only e3: fewer than 2, all 0. */
static void test_shared_has(void **state) {
    (void)state;
    agent_adv_opts o = {AGENT_BASE_SHARED, 0.9, 0, 0};
    const uint8_t has[6] = {1, 1, 0, 1, 0, 0};
    double adv[6], base = 0;
    int init = 0;
    assert_int_equal(agent_advantages(&o, 2, 3, R, has, adv, NULL, &base, &init, 2), 0);
    const double want[6] = {1, -1, 0, 0, 0, 0};
    for (int e = 0; e < 6; e++) close_to(adv[e], want[e]);
}

/* Moving average (HeterPS), decay 0.9:
 *   batch 1: mean = (-6 - 3) / 6 = -1.5, b starts there: adv = r + 1.5 =
 *            0.5, -0.5, -1.5, 1, 1, -0.5; then b = 0.9 (-1.5) + 0.1 (-1.5) = -1.5
 *   batch 2: every reward -1: adv = -1 + 1.5 = 0.5; b = 0.9 (-1.5) + 0.1 (-1) = -1.45
 *   batch 3: every reward -1: adv = -1 + 1.45 = 0.45 */
static void test_moving(void **state) {
    (void)state;
    agent_adv_opts o = {AGENT_BASE_MOVING, 0.9, 0, 0};
    double adv[6], base = 123, ones[6] = {-1, -1, -1, -1, -1, -1};
    int init = 0;
    assert_int_equal(agent_advantages(&o, 2, 3, R, NULL, adv, NULL, &base, &init, 1), 0);
    const double want[6] = {0.5, -0.5, -1.5, 1, 1, -0.5};
    for (int e = 0; e < 6; e++) close_to(adv[e], want[e]);
    close_to(base, -1.5);
    assert_int_equal(init, 1);
    assert_int_equal(agent_advantages(&o, 2, 3, ones, NULL, adv, NULL, &base, &init, 1), 0);
    for (int e = 0; e < 6; e++) close_to(adv[e], 0.5);
    close_to(base, -1.45);
    assert_int_equal(agent_advantages(&o, 2, 3, ones, NULL, adv, NULL, &base, &init, 1), 0);
    for (int e = 0; e < 6; e++) close_to(adv[e], 0.45);
}

/* Risk-seeking, eps = 0.5: q = sorted[floor(0.5 * 3)] = sorted[1]:
 *   instance 0: sorted -3, -2, -1: q = -2; keep e0 (adv 1), e1 (adv 0); drop e2
 *   instance 1: sorted -2, -0.5, -0.5: q = -0.5; keep e3, e4 (adv 0); drop e5 */
static void test_risk(void **state) {
    (void)state;
    agent_adv_opts o = {AGENT_BASE_SHARED, 0.9, 0, 0.5};
    double adv[6], base = 0;
    int init = 0;
    uint8_t keep[6];
    memset(keep, 1, sizeof keep);
    assert_int_equal(agent_advantages(&o, 2, 3, R, NULL, adv, keep, &base, &init, 1), 0);
    const double want[6] = {1, 0, 0, 0, 0, 0};
    const uint8_t kept[6] = {1, 1, 0, 1, 1, 0};
    for (int e = 0; e < 6; e++) close_to(adv[e], want[e]);
    assert_memory_equal(keep, kept, 6);
}

/* Normalised shared advantages: 1.5, 0, -1.5, 0.75, 0.75, -1.5 have mean 0
 * and variance (2.25 + 0 + 2.25 + 0.5625 + 0.5625 + 2.25) / 6 = 1.3125,
 * so each is divided by sqrt(1.3125) + 1e-8. */
static void test_norm(void **state) {
    (void)state;
    agent_adv_opts o = {AGENT_BASE_SHARED, 0.9, 1, 0};
    double adv[6], base = 0;
    int init = 0;
    assert_int_equal(agent_advantages(&o, 2, 3, R, NULL, adv, NULL, &base, &init, 1), 0);
    const double want[6] = {1.5, 0, -1.5, 0.75, 0.75, -1.5};
    double sd = sqrt(1.3125) + 1e-8;
    for (int e = 0; e < 6; e++) close_to(adv[e], want[e] / sd);
}

/* The log reward's infeasible episodes, settled per instance: with ok =
 *   instance 0: 1, 1, 0   instance 1: 0, 0, 0   and penalty 4,
 *   instance 0: the worst feasible reward is -2, so e2 = -2 - log 4;
 *   instance 1: none feasible, every episode -log 4.
 * Only episodes with decisions count (has): with has = 1, 0, 1 | 1, 1, 1
 * the worst feasible of instance 0 is e0's -1, e2 = -1 - log 4, and e1
 * keeps its reward. */
static void test_settle_log(void **state) {
    (void)state;
    double r[6];
    memcpy(r, R, sizeof r);
    const uint8_t ok[6] = {1, 1, 0, 0, 0, 0};
    assert_int_equal(agent_rewards_settle(AGENT_REWARD_LOG, 4.0, 2, 3, r, ok, NULL), 0);
    const double want[6] = {-1, -2, -2 - log(4.0), -log(4.0), -log(4.0), -log(4.0)};
    for (int e = 0; e < 6; e++) close_to(r[e], want[e]);
    memcpy(r, R, sizeof r);
    const uint8_t has[6] = {1, 0, 1, 1, 1, 1};
    assert_int_equal(agent_rewards_settle(AGENT_REWARD_LOG, 4.0, 2, 3, r, ok, has), 0);
    const double want_has[6] = {-1, -2, -1 - log(4.0), -log(4.0), -log(4.0), -log(4.0)};
    for (int e = 0; e < 6; e++) close_to(r[e], want_has[e]);
    /* ratio leaves the rewards as they are */
    memcpy(r, R, sizeof r);
    assert_int_equal(agent_rewards_settle(AGENT_REWARD_RATIO, 4.0, 2, 3, r, ok, NULL), 0);
    for (int e = 0; e < 6; e++) close_to(r[e], R[e]);
}

/* Ranks, n = 3 per instance, -(strictly better) / 2, ok = 1, 1, 0 | 1, 1, 1:
 *   instance 0: e0 (-1) best: 0; e1 (-2): 1 better, -0.5; e2 infeasible,
 *               though its -3 is no lower than it could be: 2 better, -1;
 *   instance 1: e3, e4 (-0.5) tie: 0 each; e5 (-2): 2 better, -1.
 * With e0 infeasible instead, its -1 counts for nothing: e1 0, e2 -0.5
 * (e1 better), e0 -0.5 (e1 better; e2 infeasible too, not better). */
static void test_settle_rank(void **state) {
    (void)state;
    double r[6];
    memcpy(r, R, sizeof r);
    const uint8_t ok[6] = {1, 1, 0, 1, 1, 1};
    assert_int_equal(agent_rewards_settle(AGENT_REWARD_RANK, 4.0, 2, 3, r, ok, NULL), 0);
    const double want[6] = {0, -0.5, -1, 0, 0, -1};
    for (int e = 0; e < 6; e++) close_to(r[e], want[e]);
    memcpy(r, R, sizeof r);
    const uint8_t ok2[6] = {0, 1, 0, 1, 1, 1};
    assert_int_equal(agent_rewards_settle(AGENT_REWARD_RANK, 4.0, 2, 3, r, ok2, NULL), 0);
    const double want2[6] = {-0.5, 0, -0.5, 0, 0, -1};
    for (int e = 0; e < 6; e++) close_to(r[e], want2[e]);
}

/* The share of zero advantages among the episodes with a gradient:
 * advantages 1, 0, 0, 0, 2, 1e-13 -> zeros e1, e2, e3, e5 (|adv| < 1e-12):
 * 4 of 6; keep = 1, 1, 0, 0, 1, 1: 2 of 4; has = 0, ... with keep: 1 of 3;
 * nothing kept: NAN. */
static void test_zero_share(void **state) {
    (void)state;
    const double adv[6] = {1, 0, 0, 0, 2, 1e-13};
    const uint8_t keep[6] = {1, 1, 0, 0, 1, 1}, has[6] = {0, 1, 1, 1, 1, 1}, none[6] = {0};
    close_to(agent_zero_adv_share(6, adv, NULL, NULL), 4.0 / 6);
    close_to(agent_zero_adv_share(6, adv, NULL, keep), 0.5);
    close_to(agent_zero_adv_share(6, adv, has, keep), 2.0 / 3);
    assert_true(isnan(agent_zero_adv_share(6, adv, NULL, none)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared), cmocka_unit_test(test_shared_has),
        cmocka_unit_test(test_moving), cmocka_unit_test(test_risk),
        cmocka_unit_test(test_norm), cmocka_unit_test(test_settle_log),
        cmocka_unit_test(test_settle_rank), cmocka_unit_test(test_zero_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
