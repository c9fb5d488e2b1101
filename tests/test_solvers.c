/* test_solvers.c -- the plan solvers (solvers/solve.h) against brute force
 * and hand-worked plans.
 *
 * The exact solver must equal brute force (every one of the T^L
 * assignments scored through model_eval) on a set of 60 random instances
 * of up to 10 layers and 4 types, drawn from a fixed seed by the generator
 * of tests/random_instance.h (which bench_solvers shares). The
 * generator is tuned so that capacity binds on many of them (the optimum
 * with unlimited units is cheaper), memory binds on many (the optimum with
 * unlimited memory is cheaper) and some have no feasible assignment at
 * all; one in six uses a fitted throughput curve instead of Amdahl's law.
 * The test counts these and fails if the set loses its teeth. Every
 * other method must return only feasible plans, never cheaper than the
 * optimum, and nothing when brute force finds nothing. The searches must
 * repeat themselves for a seed. The baselines are checked on the shared
 * fixture against figures worked out by hand.
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
#include <jansson.h>
#include <sys/wait.h>

#include "env/model.h"
#include "solvers/solve.h"
#include "tests/fixture.h"
#include "tests/harness.h"
#include "tests/random_instance.h"

/* ---- brute force over random instances (tests/random_instance.h) ------ */

/* Brute force: the cheapest feasible cost over all T^L assignments
 * (INFINITY when none), its assignment in best[], and whether capacity or
 * memory binds: an assignment that breaks only that rule would be cheaper
 * with the rule lifted (scored again on a copy of the cluster with
 * unlimited units, or unlimited memory). */
typedef struct {
    double opt;
    int best[RI_MAX_LAYERS];
    double opt_nocap; /* optimum with unlimited units */
    double opt_nomem; /* optimum with unlimited memory */
    long n;
} brute;

static void brute_force(const ri_instance *in, brute *b) {
    const int L = in->job.n_layers, T = in->cl.n_types;
    model_type nocap[RI_MAX_TYPES], nomem[RI_MAX_TYPES];
    for (int t = 0; t < T; t++) {
        nocap[t] = nomem[t] = in->types[t];
        nocap[t].count = 1 << 30;
        nomem[t].mem = INFINITY;
    }
    model_cluster cl_nocap = {.n_types = T, .types = nocap};
    model_cluster cl_nomem = {.n_types = T, .types = nomem};
    model_plan *p = model_plan_create(L);
    int a[RI_MAX_LAYERS] = {0};
    b->opt = b->opt_nocap = b->opt_nomem = INFINITY;
    b->n = 0;
    for (;;) {
        int rc = model_eval(&in->job, &in->cl, a, p);
        b->n++;
        if (rc == MODEL_FEASIBLE) {
            if (p->cost < b->opt) {
                b->opt = p->cost;
                memcpy(b->best, a, sizeof b->best);
            }
            if (p->cost < b->opt_nocap) b->opt_nocap = p->cost;
            if (p->cost < b->opt_nomem) b->opt_nomem = p->cost;
        } else if (rc == MODEL_ERR_CAPACITY) {
            /* memory and throughput hold: only the counts are broken */
            if (model_eval(&in->job, &cl_nocap, a, p) == MODEL_FEASIBLE &&
                p->cost < b->opt_nocap)
                b->opt_nocap = p->cost;
        } else if (rc == MODEL_ERR_MEMORY) {
            if (model_eval(&in->job, &cl_nomem, a, p) == MODEL_FEASIBLE &&
                p->cost < b->opt_nomem)
                b->opt_nomem = p->cost;
        }
        int l = 0;
        while (l < L && ++a[l] == T) a[l++] = 0;
        if (l == L) break;
    }
    model_plan_free(p);
}

static int rel_close(double got, double want, double tol) {
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= tol * fabs(want);
}

static int run(const ri_instance *in, solve_method m, long budget_ms, long evals, uint64_t seed,
               solve_result *res) {
    solve_opts o;
    solve_opts_default(&o);
    o.method = m;
    o.budget_ms = budget_ms;
    o.max_evals = evals;
    o.seed = seed;
    return solve_run(&in->job, &in->cl, &o, res);
}

/* A returned plan must be feasible when scored afresh, match the reported
 * figures, and cost no less than the optimum opt. */
static void check_plan(const ri_instance *in, const solve_result *res, double opt, const char *what) {
    model_plan *p = model_plan_create(in->job.n_layers);
    int rc = model_eval(&in->job, &in->cl, res->assign, p);
    if (rc != MODEL_FEASIBLE) fail_msg("%s: returned an infeasible plan: %s", what, p->why);
    if (p->cost != res->plan->cost) fail_msg("%s: reported cost differs from model_eval", what);
    if (p->cost < opt * (1 - 1e-9))
        fail_msg("%s: cost %.17g below the brute-force optimum %.17g", what, p->cost, opt);
    model_plan_free(p);
}

/* Size of instance i of the committed set: two of 10 layers x 4 types and
 * two of 9 x 4 (the largest allowed), the rest random with T^L <= 20000. */
static void set_size(int i, uint64_t *x, int *L, int *T) {
    if (i < 2) *L = 10, *T = 4;
    else if (i < 4) *L = 9, *T = 4;
    else {
        *T = 1 + (int)(splitmix64_next(x) % 4);
        *L = 1 + (int)(splitmix64_next(x) % 10);
        while (pow(*T, *L) > 20000) (*L)--;
    }
}

#define N_SET 60

static void test_exact_equals_brute_force(void **state) {
    (void)state;
    solve_result *res = solve_result_create(RI_MAX_LAYERS);
    uint64_t x = 20240611;
    int n_cap = 0, n_mem = 0, n_inf = 0, n_feas = 0, n_curve = 0;
    long total = 0;
    for (int i = 0; i < N_SET; i++) {
        int L, T;
        set_size(i, &x, &L, &T);
        ri_instance in;
        ri_make(&in, L, T, 1000 + (uint64_t)i);
        if (i % 6 == 5) {
            /* A fitted Optimus curve (docs/jobs.md): the serial fraction then
             * depends on each stage's ps tasks, with 20 MB shards. */
            in.job.curve = (model_curve){{1.0, 0.2 * splitmix64_unit(&x), 0.05 * splitmix64_unit(&x), 0.05 * splitmix64_unit(&x)}, 1};
            in.job.shard = 2e7;
            n_curve++;
        }
        brute b;
        brute_force(&in, &b);
        total += b.n;
        if (isfinite(b.opt)) n_feas++;
        else n_inf++;
        if (b.opt_nocap < b.opt * (1 - 1e-9)) n_cap++;
        if (b.opt_nomem < b.opt * (1 - 1e-9)) n_mem++;

        int rc = run(&in, SOLVE_EXACT, 0, 0, 1, res);
        if (isfinite(b.opt)) {
            if (rc != 0) fail_msg("instance %d (%dx%d): exact found nothing: %s", i, L, T, res->why);
            assert_true(res->optimal);
            assert_false(res->stopped);
            if (!rel_close(res->plan->cost, b.opt, 1e-9))
                fail_msg("instance %d (%dx%d): exact %.17g, brute force %.17g", i, L, T,
                         res->plan->cost, b.opt);
            assert_true(res->lower_bound <= res->plan->cost);
            check_plan(&in, res, b.opt, "exact");
        } else {
            if (rc != SOLVE_NONE) fail_msg("instance %d: exact found a plan, brute force none", i);
            assert_true(res->infeasible);
            assert_true(isinf(res->lower_bound));
            assert_non_null(strstr(res->why, "no assignment is feasible"));
        }
        /* Every other method: feasible plans only, never below the optimum. */
        for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) {
            rc = run(&in, (solve_method)m, 0, 2000, 7, res);
            assert_true(rc == 0 || rc == SOLVE_NONE);
            if (rc == 0) check_plan(&in, res, b.opt, solve_method_name(m));
            else assert_true(strlen(res->why) > 0);
            assert_false(res->optimal);
        }
    }
    print_message("%d instances (%ld assignments, %d with a fitted curve): %d feasible, "
                  "%d infeasible everywhere, capacity binds on %d, memory binds on %d\n",
                  N_SET, total, n_curve, n_feas, n_inf, n_cap, n_mem);
    /* The set must keep its teeth. */
    assert_true(n_cap >= 12);
    assert_true(n_mem >= 12);
    assert_true(n_inf >= 3);
    assert_true(n_feas >= 30);
    solve_result_free(res);
}

/* ---- polish ------------------------------------------------------------ */

/* stop_now is a polish stop callback that stops at once, counting calls. */
static int stop_now(void *ud) {
    (*(int *)ud)++;
    return 1;
}

/* solve_polish, checked against the brute force and move by move: from
 * each homogeneous plan that is feasible on the committed instances it
 * returns a feasible plan whose cost model_eval confirms, never above its
 * start nor below the optimum, and at which no segment move (layers i..j
 * to one type, enumerated here) lowers the cost. It reaches the optimum on
 * some of them (a local search does not always); a stop callback that
 * says stop at once leaves the plan as it was. */
static void test_polish(void **state) {
    (void)state;
    uint64_t x = 20240611;
    int started = 0, optimal = 0, improved = 0;
    model_plan *p = model_plan_create(RI_MAX_LAYERS);
    int a[RI_MAX_LAYERS], t[RI_MAX_LAYERS], trial[RI_MAX_LAYERS];
    for (int i = 0; i < N_SET; i++) {
        int L, T;
        set_size(i, &x, &L, &T);
        ri_instance in;
        ri_make(&in, L, T, 1000 + (uint64_t)i);
        brute b;
        brute_force(&in, &b);
        for (int ty = 0; ty < T; ty++) {
            for (int l = 0; l < L; l++) a[l] = ty;
            if (model_eval(&in.job, &in.cl, a, p) != MODEL_FEASIBLE) continue;
            double start = p->cost;
            int calls = 0;
            long evals = -1;
            assert_true(solve_polish(&in.job, &in.cl, a, start, p, trial, stop_now, &calls, &evals) ==
                        start);
            assert_int_equal(calls, 1);
            assert_int_equal(evals, 0);
            for (int l = 0; l < L; l++) assert_int_equal(a[l], ty);
            double c = solve_polish(&in.job, &in.cl, a, start, p, trial, NULL, NULL, &evals);
            started++;
            assert_true(evals >= (long)L * (L + 1) / 2 * (T - 1));
            assert_int_equal(model_eval(&in.job, &in.cl, a, p), MODEL_FEASIBLE);
            assert_true(p->cost == c);
            assert_true(c <= start);
            assert_true(c >= b.opt * (1 - 1e-9));
            improved += c < start;
            optimal += rel_close(c, b.opt, 1e-9);
            for (int i0 = 0; i0 < L; i0++)
                for (int j = i0; j < L; j++)
                    for (int k = 0; k < T; k++) {
                        memcpy(t, a, (size_t)L * sizeof *t);
                        for (int l = i0; l <= j; l++) t[l] = k;
                        if (model_eval(&in.job, &in.cl, t, p) == MODEL_FEASIBLE && p->cost < c * (1 - 1e-12))
                            fail_msg("instance %d: layers %d..%d to type %d lower the polished cost "
                                     "%.17g to %.17g", i, i0, j, k, c, p->cost);
                    }
        }
    }
    print_message("polish from %d feasible homogeneous plans: %d improved, %d reach the optimum\n",
                  started, improved, optimal);
    assert_true(started >= 30);
    assert_true(improved >= 10);
    assert_true(optimal >= started / 2);
    model_plan_free(p);
}

/* ---- the fixture, by hand ---------------------------------------------- */

/* The fixture (tests/fixture.h): cpu and gpu; layers emb, fc1, fc2.
 *
 * rule: emb reads 1e5 B at the gpu's 1e9 B/s (1e-4 s) but computes 1e6
 * FLOP at 1e13 FLOP/s (1e-7 s): IO-heavy, so on cpu; fc1 and fc2 read
 * nothing: on the gpu. Plan [cpu, gpu, gpu] is the one test_model.c works
 * out: theta = 100 / 0.029, T = 29000 s, cost = 29000 / 3600 * (1 + 3)
 * = 32.2222... dollars.
 *
 * homogeneous: all gpu needs 5e10 + 2e8 B of memory, above the gpu's
 * 1.6e10: infeasible. All cpu: one stage, C = 100 * 2.001e9 / 1e12 =
 * 0.2001, I = 100 * 1e5 / 1e10 = 0.001, X = 0 (single stage), P = 2 * 9e6
 * / 1e9 = 0.018, t = 0.2181; q = 1000 * 0.2181 / 100 = 2.181, k = ceil(
 * 2.181 * 0.95 / (1 - 0.05 * 2.181)) = ceil(2.0720 / 0.89095) = ceil(2.3256)
 * = 3, theta = 100 / 0.2181 * 3 / 1.1, price 3 * 1.0 = 3 $/h, cost =
 * 1e8 / theta / 3600 * 3 = 1e8 * 0.2181 * 1.1 / 300 / 3600 * 3. */
static void test_baselines_on_fixture(void **state) {
    (void)state;
    fixture fx;
    fixture_init(&fx);
    ri_instance in;
    memset(&in, 0, sizeof in);
    in.cl = fx.cl;
    in.job = fx.job;
    solve_result *res = solve_result_create(3);
    solve_opts o;
    solve_opts_default(&o);

    o.method = SOLVE_RULE;
    assert_int_equal(solve_run(&fx.job, &fx.cl, &o, res), 0);
    assert_int_equal(res->assign[0], FX_CPU);
    assert_int_equal(res->assign[1], FX_GPU);
    assert_int_equal(res->assign[2], FX_GPU);
    assert_true(fixture_close(res->plan->cost, 29000.0 / 3600.0 * 4.0));
    assert_int_equal(res->evaluations, 1);

    o.method = SOLVE_HOMOGENEOUS;
    assert_int_equal(solve_run(&fx.job, &fx.cl, &o, res), 0);
    for (int l = 0; l < 3; l++) assert_int_equal(res->assign[l], FX_CPU);
    assert_int_equal(res->plan->stages[0].units, 3);
    assert_true(fixture_close(res->plan->cost, 1e8 * 0.2181 * 1.1 / 300.0 / 3600.0 * 3.0));
    assert_int_equal(res->evaluations, 2);

    /* exact: the best of the 8 plans; no worse than rule, proven. */
    o.method = SOLVE_EXACT;
    assert_int_equal(solve_run(&fx.job, &fx.cl, &o, res), 0);
    assert_true(res->optimal);
    brute b;
    ri_instance fi;
    memset(&fi, 0, sizeof fi);
    memcpy(fi.types, fx.types, sizeof fx.types);
    memcpy(fi.layers, fx.layers, sizeof fx.layers);
    fi.cl = (model_cluster){.n_types = 2, .types = fi.types};
    fi.job = fx.job;
    fi.job.layers = fi.layers;
    brute_force(&fi, &b);
    assert_true(rel_close(res->plan->cost, b.opt, 1e-12));
    assert_true(res->plan->cost <= 29000.0 / 3600.0 * 4.0 * (1 + 1e-12));

    /* Without a GPU type, rule puts every layer on the cpu. */
    fx.cl.n_types = 1;
    o.method = SOLVE_RULE;
    assert_int_equal(solve_run(&fx.job, &fx.cl, &o, res), 0);
    for (int l = 0; l < 3; l++) assert_int_equal(res->assign[l], FX_CPU);
    solve_result_free(res);
}

/* ---- determinism ------------------------------------------------------- */

static void test_same_seed_same_answer(void **state) {
    (void)state;
    ri_instance in;
    ri_make(&in, 24, 5, 77);
    in.job.min_throughput *= 0.5; /* keep plenty of plans feasible */
    for (int t = 0; t < 5; t++) {
        in.types[t].count += 20;
        in.types[t].mem *= 4;
    }
    solve_result *a = solve_result_create(RI_MAX_LAYERS), *b = solve_result_create(RI_MAX_LAYERS);
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) {
        int ra = run(&in, (solve_method)m, 0, 3000, 42, a);
        int rb = run(&in, (solve_method)m, 0, 3000, 42, b);
        assert_int_equal(ra, rb);
        assert_int_equal(a->evaluations, b->evaluations);
        if (ra == 0) {
            assert_memory_equal(a->assign, b->assign, 24 * sizeof(int));
            assert_true(a->plan->cost == b->plan->cost);
        }
    }
    /* The searches spend exactly their evaluation budget. */
    for (int m = SOLVE_RANDOM; m <= SOLVE_ANNEAL; m++) {
        assert_int_equal(run(&in, (solve_method)m, 0, 3000, 42, a), 0);
        assert_int_equal(a->evaluations, 3000);
    }
    /* Different seeds explore differently: random search's evaluation
     * sequence differs, so over a tiny budget the answers differ for at
     * least one of several seeds. */
    int differ = 0;
    assert_int_equal(run(&in, SOLVE_RANDOM, 0, 30, 1, a), 0);
    for (uint64_t s = 2; s < 6; s++) {
        if (run(&in, SOLVE_RANDOM, 0, 30, s, b) == 0 &&
            memcmp(a->assign, b->assign, 24 * sizeof(int)))
            differ = 1;
    }
    assert_true(differ);
    solve_result_free(a);
    solve_result_free(b);
}

/* ---- budgets and bounds -------------------------------------------------- */

/* On a 40 x 6 instance where capacity binds, a 1 ms budget stops the exact
 * solver: it reports no proof, and its lower bound is below the optimum
 * that an unbounded run proves. */
static void test_exact_budget_bound(void **state) {
    (void)state;
    ri_instance in;
    ri_make(&in, 40, 6, 4242);
    solve_result *full = solve_result_create(RI_MAX_LAYERS), *cut = solve_result_create(RI_MAX_LAYERS);
    int rc = run(&in, SOLVE_EXACT, 0, 0, 1, full);
    assert_int_equal(rc, 0);
    assert_true(full->optimal);
    double opt = full->plan->cost;
    /* Capacity binds here: the optimum with unlimited units is cheaper. */
    for (int t = 0; t < 6; t++) in.types[t].count += 1000;
    assert_int_equal(run(&in, SOLVE_EXACT, 0, 0, 1, cut), 0);
    assert_true(cut->plan->cost < opt * (1 - 1e-6));
    for (int t = 0; t < 6; t++) in.types[t].count -= 1000;

    rc = run(&in, SOLVE_EXACT, 1, 0, 1, cut);
    if (cut->stopped) {
        assert_false(cut->optimal);
        if (!isnan(cut->lower_bound)) assert_true(cut->lower_bound <= opt * (1 + 1e-12));
        if (rc == 0) assert_true(cut->plan->cost >= opt * (1 - 1e-12));
    } else {
        /* A machine fast enough to finish in 1 ms must have proven it. */
        assert_true(cut->optimal);
        assert_true(rel_close(cut->plan->cost, opt, 1e-12));
    }
    /* The other methods never beat the optimum on it. */
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) {
        if (run(&in, (solve_method)m, 0, 20000, 3, cut) == 0)
            assert_true(cut->plan->cost >= opt * (1 - 1e-12));
    }
    solve_result_free(full);
    solve_result_free(cut);
}

/* ---- infeasible everywhere, bad arguments ---------------------------- */

static void test_infeasible_everywhere(void **state) {
    (void)state;
    ri_instance in;
    solve_result *res = solve_result_create(RI_MAX_LAYERS);
    ri_make(&in, 6, 3, 9);
    /* Plenty of units, memory and headroom on the target... */
    in.job.min_throughput *= 0.01;
    for (int t = 0; t < 3; t++) {
        in.types[t].count += 100;
        in.types[t].mem = 1e11;
    }
    assert_int_equal(run(&in, SOLVE_EXACT, 0, 0, 1, res), 0);
    /* ...but layer l3 needs more memory than any unit has. */
    in.layers[3].mem = 1e12;
    assert_int_equal(run(&in, SOLVE_EXACT, 0, 0, 1, res), SOLVE_NONE);
    assert_true(res->infeasible);
    assert_false(res->found);
    assert_non_null(strstr(res->why, "'l3'"));
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) {
        assert_int_equal(run(&in, (solve_method)m, 0, 500, 1, res), SOLVE_NONE);
        assert_false(res->found);
        assert_false(res->infeasible); /* only exact proves it */
    }
    /* Capacity only: every type has a single unit, and R needs more. */
    ri_make(&in, 4, 2, 10);
    for (int t = 0; t < 2; t++) {
        in.types[t].count = 1;
        in.types[t].mem = 1e15;
    }
    in.job.alpha = 0.0;
    in.job.min_throughput *= 1000; /* at least a few units per stage */
    assert_int_equal(run(&in, SOLVE_EXACT, 0, 0, 1, res), SOLVE_NONE);
    assert_true(res->infeasible);
    solve_result_free(res);
}

static void test_api_edges(void **state) {
    (void)state;
    for (int m = 0; m < SOLVE_N_METHODS; m++)
        assert_int_equal(solve_method_parse(solve_method_name((solve_method)m)), m);
    assert_int_equal(solve_method_parse("simplex"), -1);
    assert_int_equal(solve_method_parse(NULL), -1);
    assert_string_equal(solve_method_name(SOLVE_N_METHODS), "?");
    ri_instance in;
    ri_make(&in, 8, 2, 5);
    solve_result *small = solve_result_create(4);
    assert_int_equal(run(&in, SOLVE_EXACT, 0, 0, 1, small), SOLVE_ERROR);
    assert_non_null(strstr(small->why, "8 layers"));
    solve_opts o;
    solve_opts_default(&o);
    o.method = (solve_method)99;
    assert_int_equal(solve_run(&in.job, &in.cl, &o, small), SOLVE_ERROR);
    solve_result_free(small);
    solve_result_free(NULL);
}

/* ---- strata solve, as a user runs it ------------------------------------ */


/* Writes the fixture (tests/fixture.h) as a run file, with target R and
 * `count` units of each type. */
static void write_fixture(const char *path, double R, int count) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "model: v1\ncluster:\n  types:\n"
               "    - {name: cpu, kind: cpu, flops: 1e12, io_bw: 1e10, net_bw: 1e9, mem: 1e11, "
               "price: 1.0, count: %d}\n"
               "    - {name: gpu, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, mem: 1.6e10, "
               "price: 3.0, count: %d}\n"
               "job:\n  name: fx\n  batch: 100\n  samples: 1e8\n  min_throughput: %.17g\n"
               "  alpha: 0.05\n  layers:\n"
               "    - {name: emb, flops: 1e6, io: 1e5, act: 1e4, params: 1e6, mem: 5e10}\n"
               "    - {name: fc1, flops: 1e9, io: 0, act: 1e4, params: 4e6, mem: 1e8}\n"
               "    - {name: fc2, flops: 1e9, io: 0, act: 1e3, params: 4e6, mem: 1e8}\n",
            count, count, R);
    fclose(f);
}

static void test_cli_solve(void **state) {
    (void)state;
    const char *bin = getenv("STRATA_BIN"), *tmp = getenv("STRATA_TMP");
    if (!bin) bin = "./strata";
    if (!tmp) tmp = "/tmp";
    char path[512], cmd[1536];
    snprintf(path, sizeof path, "%s/solve_fixture.yaml", tmp);
    write_fixture(path, 1000, 4); /* the fixture but for 4 cpu units, not 10 */

    /* The optimum by brute force over the 8 plans of the same numbers. */
    fixture fx;
    fixture_init(&fx);
    ri_instance fi;
    memset(&fi, 0, sizeof fi);
    memcpy(fi.types, fx.types, sizeof fx.types);
    memcpy(fi.layers, fx.layers, sizeof fx.layers);
    fi.types[FX_CPU].count = 4;
    fi.cl = (model_cluster){.n_types = 2, .types = fi.types};
    fi.job = fx.job;
    fi.job.layers = fi.layers;
    brute b;
    brute_force(&fi, &b);
    assert_true(isfinite(b.opt));

    snprintf(cmd, sizeof cmd, "%s solve %s --method exact --json", bin, path);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t jerr;
    json_t *o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("not JSON (%s): %s", jerr.text, harness_out);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_true(json_is_true(json_object_get(o, "optimal")));
    assert_string_equal(json_string_value(json_object_get(o, "method")), "exact");
    double cost = json_number_value(json_object_get(o, "cost"));
    assert_true(rel_close(cost, b.opt, 1e-12));
    assert_true(rel_close(json_number_value(json_object_get(o, "lower_bound")), b.opt, 1e-12));
    assert_true(json_is_number(json_object_get(o, "throughput")));
    assert_true(json_is_number(json_object_get(o, "seconds")));
    assert_true(json_integer_value(json_object_get(o, "evaluations")) > 0);
    json_t *as = json_object_get(o, "assignment");
    assert_int_equal(json_array_size(as), 3);
    for (int l = 0; l < 3; l++)
        assert_string_equal(json_string_value(json_array_get(as, (size_t)l)),
                            b.best[l] == FX_CPU ? "cpu" : "gpu");
    json_decref(o);

    /* rule, as a table: [cpu, gpu, gpu] (test_baselines_on_fixture), not
     * proven optimal; the same seed twice gives the same anneal output. */
    snprintf(cmd, sizeof cmd, "%s solve %s --method rule", bin, path);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "method: rule, not proven optimal"));
    assert_non_null(strstr(harness_out, "cost $32.22"));
    snprintf(cmd, sizeof cmd, "%s solve %s --method anneal --seed 9 --evals 500 --json", bin, path);
    assert_int_equal(harness_run(cmd), 0);
    o = json_loads(harness_out, 0, &jerr);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "evaluations")), 500);
    assert_false(json_is_true(json_object_get(o, "optimal")));
    assert_null(json_object_get(o, "lower_bound"));
    json_t *a1 = json_deep_copy(json_object_get(o, "assignment"));
    json_decref(o);
    assert_int_equal(harness_run(cmd), 0);
    o = json_loads(harness_out, 0, &jerr);
    assert_true(json_equal(a1, json_object_get(o, "assignment")));
    json_decref(a1);
    json_decref(o);

    /* No feasible plan: one unit per type and R = 10000. fc1 alone on the
     * gpu: C = 100 * 1e9 / 1e13 = 0.01, X = 2 * 100 * (1e4 + 1e4) / 2e9 =
     * 0.002, P = 2 * 4e6 / 2e9 = 0.004, t = 0.016, q = 10000 * 0.016 / 100
     * = 1.6 > 1: two units, one is free; on the cpu it is 10x slower (the
     * loader accepts the file: each layer fits some type's memory). */
    write_fixture(path, 10000, 1);
    snprintf(cmd, sizeof cmd, "%s solve %s --json", bin, path);
    assert_int_equal(harness_run(cmd), 1);
    o = json_loads(harness_out, 0, &jerr);
    assert_non_null(o);
    assert_false(json_is_true(json_object_get(o, "found")));
    assert_true(json_is_true(json_object_get(o, "infeasible")));
    assert_true(json_is_null(json_object_get(o, "assignment")));
    assert_non_null(strstr(json_string_value(json_object_get(o, "reason")),
                           "no assignment is feasible"));
    json_decref(o);
    snprintf(cmd, sizeof cmd, "%s solve %s", bin, path);
    assert_int_equal(harness_run(cmd), 1);
    assert_non_null(strstr(harness_out, "no feasible plan"));

    /* Bad usage. */
    snprintf(cmd, sizeof cmd, "%s solve %s --method simplex 2>/dev/null", bin, path);
    assert_int_equal(harness_run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s solve %s --budget-ms -5 2>/dev/null", bin, path);
    assert_int_equal(harness_run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s solve %s/no_such_file.yaml 2>/dev/null", bin, tmp);
    assert_int_equal(harness_run(cmd), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_equals_brute_force),
        cmocka_unit_test(test_polish),
        cmocka_unit_test(test_baselines_on_fixture),
        cmocka_unit_test(test_same_seed_same_answer),
        cmocka_unit_test(test_exact_budget_bound),
        cmocka_unit_test(test_infeasible_everywhere),
        cmocka_unit_test(test_api_edges),
        cmocka_unit_test(test_cli_solve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
