/* test_exact_fixed.c -- the exact solver with fixed layers
 * (solve_run_fixed, solvers/solve.h).
 *
 * On random instances of tests/random_instance.h (up to 10 layers and 4
 * types, T^L <= 20000), the types of some layers are fixed: a prefix of a
 * random assignment (what the trainer's DAgger demonstrations fix: the
 * policy's first c decisions), or a random scattering of layers. Brute
 * force over every assignment that agrees with them must give the same
 * cost, or find none exactly when the solver proves none exists. The set
 * must keep its teeth: on many instances the fixed layers make the optimum
 * dearer than the free one, on some they make every plan infeasible. On
 * the hand-worked fixture (tests/fixture.h), a fully fixed plan returns
 * that plan's cost, and fixing the embedding on the gpu (whose memory it
 * exceeds) is proven infeasible.
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

#include "env/model.h"
#include "solvers/solve.h"
#include "tests/fixture.h"
#include "tests/random_instance.h"

/* The cheapest feasible cost over the assignments that agree with fixed[]
 * (INFINITY when none). */
static double brute_fixed(const ri_instance *in, const int *fixed) {
    const int L = in->job.n_layers, T = in->cl.n_types;
    model_plan *p = model_plan_create(L);
    int a[RI_MAX_LAYERS] = {0};
    double best = INFINITY;
    for (;;) {
        int agree = 1;
        for (int l = 0; l < L && agree; l++) agree = fixed[l] < 0 || a[l] == fixed[l];
        if (agree && model_eval(&in->job, &in->cl, a, p) == MODEL_FEASIBLE && p->cost < best) best = p->cost;
        int l = 0;
        while (l < L && ++a[l] == T) a[l++] = 0;
        if (l == L) break;
    }
    model_plan_free(p);
    return best;
}

static int rel_close(double got, double want) {
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= 1e-9 * fabs(want);
}

#define N_SET 80

static void test_fixed_equals_brute_force(void **state) {
    (void)state;
    solve_result *res = solve_result_create(RI_MAX_LAYERS);
    solve_opts o;
    solve_opts_default(&o);
    o.budget_ms = 0;
    uint64_t x = 20261125;
    int n_dearer = 0, n_closed = 0, n_same = 0;
    for (int i = 0; i < N_SET; i++) {
        int T = 2 + (int)(splitmix64_next(&x) % 3), L = 2 + (int)(splitmix64_next(&x) % 9);
        while (pow(T, L) > 20000) L--;
        ri_instance in;
        ri_make(&in, L, T, 5000 + (uint64_t)i);
        int fixed[RI_MAX_LAYERS], none[RI_MAX_LAYERS];
        for (int l = 0; l < L; l++) none[l] = -1;
        /* even instances: a prefix of c layers of a random plan; odd: each
         * layer fixed with probability 1/3 */
        int c = (int)(splitmix64_next(&x) % (uint64_t)(L + 1));
        for (int l = 0; l < L; l++) {
            int t = (int)(splitmix64_next(&x) % (uint64_t)T);
            int fix = i % 2 == 0 ? l < c : splitmix64_next(&x) % 3 == 0;
            fixed[l] = fix ? t : -1;
        }
        double want = brute_fixed(&in, fixed), free_opt = brute_fixed(&in, none);
        int rc = solve_run_fixed(&in.job, &in.cl, &o, fixed, res);
        if (isfinite(want)) {
            if (rc != 0) fail_msg("instance %d (%dx%d): found nothing: %s", i, L, T, res->why);
            assert_true(res->optimal);
            if (!rel_close(res->plan->cost, want))
                fail_msg("instance %d (%dx%d): fixed exact %.17g, brute force %.17g", i, L, T,
                         res->plan->cost, want);
            for (int l = 0; l < L; l++)
                if (fixed[l] >= 0 && res->assign[l] != fixed[l])
                    fail_msg("instance %d: layer %d is on type %d, fixed to %d", i, l, res->assign[l], fixed[l]);
            if (want > free_opt * (1 + 1e-9)) n_dearer++;
            else n_same++;
        } else {
            if (rc != SOLVE_NONE) fail_msg("instance %d (%dx%d): found a plan, brute force none", i, L, T);
            assert_true(res->infeasible);
            assert_true(isinf(res->lower_bound));
            if (isfinite(free_opt)) {
                n_closed++;
                assert_non_null(strstr(res->why, "fixed layers"));
            }
        }
    }
    print_message("%d instances: the fixed layers make %d dearer, %d infeasible, leave %d as cheap\n", N_SET,
                  n_dearer, n_closed, n_same);
    assert_true(n_dearer >= 15);
    assert_true(n_closed >= 5);
    assert_true(n_same >= 5);
    solve_result_free(res);
}

/* The fixture: [cpu, gpu, gpu] fully fixed costs 29000 s at 4 $/h
 * (test_model.c's figures: 32.222... dollars), [cpu, cpu, gpu] what
 * model_eval says, dearer than the free optimum; emb on the gpu needs 5e10 B, the gpu has 1.6e10:
 * no plan agrees. */
static void test_fixture_fixed(void **state) {
    (void)state;
    fixture fx;
    fixture_init(&fx);
    solve_result *res = solve_result_create(3);
    solve_opts o;
    solve_opts_default(&o);
    assert_int_equal(solve_run(&fx.job, &fx.cl, &o, res), 0);
    double free_opt = res->plan->cost;
    int all[3] = {FX_CPU, FX_GPU, FX_GPU};
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, all, res), 0);
    assert_true(fixture_close(res->plan->cost, 29000.0 / 3600.0 * 4.0));
    assert_true(res->optimal);
    for (int l = 0; l < 3; l++) assert_int_equal(res->assign[l], all[l]);
    assert_true(res->plan->cost == free_opt); /* it is the optimum, too */
    /* [cpu, cpu, gpu]: what model_eval says, dearer than the optimum */
    int two[3] = {FX_CPU, FX_CPU, FX_GPU};
    model_plan *p = model_plan_create(3);
    assert_int_equal(model_eval(&fx.job, &fx.cl, two, p), MODEL_FEASIBLE);
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, two, res), 0);
    assert_true(res->plan->cost == p->cost);
    assert_true(res->plan->cost > free_opt);
    model_plan_free(p);

    int emb_gpu[3] = {FX_GPU, -1, -1};
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, emb_gpu, res), SOLVE_NONE);
    assert_true(res->infeasible);
    assert_false(res->found);
    assert_non_null(strstr(res->why, "fixed layers"));

    /* nothing fixed: solve_run's answer */
    int none[3] = {-1, -1, -1};
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, none, res), 0);
    assert_true(res->plan->cost == free_opt);

    /* only the exact method, only the cluster's types */
    o.method = SOLVE_GREEDY;
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, none, res), SOLVE_ERROR);
    assert_non_null(strstr(res->why, "exact"));
    o.method = SOLVE_EXACT;
    int bad[3] = {-1, 2, -1};
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, bad, res), SOLVE_ERROR);
    assert_non_null(strstr(res->why, "layer 1"));
    assert_int_equal(solve_run_fixed(&fx.job, &fx.cl, &o, NULL, res), SOLVE_ERROR);
    solve_result_free(res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_equals_brute_force),
        cmocka_unit_test(test_fixture_fixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
