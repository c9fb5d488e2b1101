/* test_cli_limits.c -- the program keeps its budgets and bounds on
 * requests that would otherwise run for minutes or answer nonsense
 * (issue 13, "hard to knock over"), run as a user runs it: $STRATA_BIN on
 * the shipped configs and policy ($STRATA_SRC), files under $STRATA_TMP.
 *
 * - `strata solve --method policy --samples N` stops sampling when
 *   --budget-ms is spent (the 10 s default included) and says how many
 *   plans it decoded; --samples is bounded.
 * - --polish finishes the plan by segment moves, and stops with the budget.
 * - a job with a layer that does no work (flops 0 and io 0) is refused when
 *   loaded, naming the job and the layer: it had an infinite throughput.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/harness.h"

static json_t *parse_out(void) {
    json_error_t jerr;
    json_t *o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
    return o;
}

/* solve runs `strata solve ARGS` in $STRATA_SRC/DIR and returns its exit
 * status (its output in harness_out). */
static int solve(const char *dir, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s/%s' && '%s' solve %s", harness_src(), dir, harness_bin(), args);
    return harness_run(cmd);
}

/* 20,000 samples of the frozen policy (tests/data/policy/general-27769.h5,
 * as in test_agent_decode) take seconds (about 0.18 ms each on the default job);
 * with --budget-ms 1 the greedy plan is decoded, then its flips -- 11,
 * one per layer of the default job (each of its decisions has another
 * allowed type), and 6 more after the decision of the cheapest of them,
 * which beats greedy -- and sampling stops after the batch of 64 in which
 * the millisecond runs out (the first, or on a fast machine the second: a
 * batch takes about 1 ms on one BLAS thread): 64 k + 18 plans, k small,
 * "stopped" true, a feasible plan. Before, the budget was ignored: 20,000
 * decoded, "stopped" false. With --budget-ms 0 (no limit) every one of
 * 100 asked is decoded. */
static void assert_stopped_count(long long n) {
    if (n < 82 || n > 64 * 8 + 18 || (n - 18) % 64 != 0)
        fail_msg("decoded %lld plans, want the greedy one, its 17 flips and 64 k sampled (k from 1 to 8)",
                 n);
}

static void test_policy_budget(void **state) {
    (void)state;
    assert_int_equal(solve("configs", "default.yaml --method policy --policy ../tests/data/policy/general-27769.h5 "
                                      "--samples 20000 --budget-ms 1 --json"), 0);
    json_t *o = parse_out();
    assert_true(json_is_true(json_object_get(o, "stopped")));
    assert_true(json_is_true(json_object_get(o, "found")));
    assert_stopped_count((long long)json_integer_value(json_object_get(o, "samples")));
    json_decref(o);

    assert_int_equal(solve("configs", "default.yaml --method policy --policy ../tests/data/policy/general-27769.h5 "
                                      "--samples 20000 --budget-ms 1"), 0);
    const char *m = strstr(harness_out, "method: policy (sample, ");
    long long n = 0;
    int used = 0;
    assert_non_null(m);
    assert_int_equal(sscanf(m, "method: policy (sample, %lld decoded, stopped by the budget)%n", &n, &used), 1);
    assert_true(used > 0);
    assert_stopped_count(n);

    assert_int_equal(solve("configs", "default.yaml --method policy --policy ../tests/data/policy/general-27769.h5 "
                                      "--samples 100 --budget-ms 0 --json"), 0);
    o = parse_out();
    assert_false(json_is_true(json_object_get(o, "stopped")));
    assert_int_equal(json_integer_value(json_object_get(o, "samples")), 100);
    json_decref(o);

    assert_int_equal(solve("configs", "default.yaml --method policy --policy ../tests/data/policy/general-27769.h5 "
                                      "--samples 1000001 2>&1"), 2);
    assert_non_null(strstr(harness_out, "--samples: expected a whole number from 1 to 1000000, "
                                        "got '1000001'"));
}

/* --polish finishes the plan kept by segment moves, as a user runs it: on
 * q8's heldout-143 the frozen policy's (tests/data/policy/general-27769.h5,
 * as in test_agent_decode) best of 16 keeps $377.54 and polish takes it to
 * $344.97 (the JSON says polished, and the cost before); the text says
 * so in a line. With --budget-ms 1 the polish stops with the sampling
 * (stopped true) and the answer is still a feasible plan. */
static void test_policy_polish(void **state) {
    (void)state;
    assert_int_equal(solve(".", "tests/data/heldout/q8-143.yaml --method policy --policy "
                                "tests/data/policy/general-27769.h5 --samples 16 --polish --budget-ms 0 --json"), 0);
    json_t *o = parse_out();
    assert_true(json_is_true(json_object_get(o, "polished")));
    double before = json_real_value(json_object_get(o, "cost_before_polish"));
    double cost = json_real_value(json_object_get(o, "cost"));
    if (before < 377.53 || before > 377.54 || cost < 344.97 || cost > 344.975)
        fail_msg("best of 16 $%.4f, polished $%.4f: want $377.54 and $344.97", before, cost);
    json_decref(o);
    assert_int_equal(solve(".", "tests/data/heldout/q8-143.yaml --method policy --policy "
                                "tests/data/policy/general-27769.h5 --samples 16 --polish --budget-ms 0"), 0);
    assert_non_null(strstr(harness_out, "polish: segment moves took the policy's plan from $377.54 "
                                        "to $344.97"));
    assert_int_equal(solve(".", "tests/data/heldout/q8-143.yaml --method policy --policy "
                                "tests/data/policy/general-27769.h5 --samples 16 --polish --budget-ms 1 --json"), 0);
    o = parse_out();
    assert_true(json_is_true(json_object_get(o, "stopped")));
    assert_true(json_is_true(json_object_get(o, "found")));
    assert_true(json_real_value(json_object_get(o, "cost")) > 0);
    json_decref(o);
}

/* The all-zero job loaded and answered "feasible" with no throughput in
 * the JSON and "stages": []; now every command that loads it refuses it
 * with file:line:col, the job and the reason. A job with one such layer
 * among working ones is refused naming the layer. */
static void test_zero_work_job(void **state) {
    (void)state;
    const char *yaml =
        "cluster:\n"
        "  types:\n"
        "    - {name: gpu, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, mem: 1.6e10, "
        "price: 3, count: 64}\n"
        "job:\n"
        "  name: zj\n"
        "  batch: 32\n"
        "  samples: 1e8\n"
        "  min_throughput: 30\n"
        "  layers:\n"
        "    - {name: a, flops: 0, io: 0, act: 0, params: 0, mem: 1e8}\n"
        "    - {name: b, flops: 0, io: 0, act: 0, params: 0, mem: 1e8}\n";
    char path[1024], cmd[2400];
    snprintf(path, sizeof path, "%s/zero_job.yaml", harness_tmp());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
    const char *cmds[] = {"solve %s --json", "cost %s --assign gpu --json", "check %s"};
    for (int i = 0; i < 3; i++) {
        char sub[1200];
        snprintf(sub, sizeof sub, cmds[i], path);
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", harness_bin(), sub);
        int rc = harness_run(cmd);
        if (rc == 0 || !strstr(harness_out, "zero_job.yaml:10:5: job.layers: job zj: every layer "
                                            "has flops, io and params 0"))
            fail_msg("%s: exit %d\n%s", sub, rc, harness_out);
    }
    f = fopen(path, "w");
    assert_non_null(f);
    const char *at = strstr(yaml, "{name: a, flops: 0");
    fprintf(f, "%.*s{name: a, flops: 1e9%s", (int)(at - yaml), yaml, at + strlen("{name: a, flops: 0"));
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s cost %s --assign gpu --json 2>&1", harness_bin(), path);
    assert_int_equal(harness_run(cmd), 2);
    if (!strstr(harness_out, "zero_job.yaml:11:7: job.layers[1]: job zj: layer 'b' has flops 0 "
                             "and io 0"))
        fail_msg("%s", harness_out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_budget),
        cmocka_unit_test(test_policy_polish),
        cmocka_unit_test(test_zero_work_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
