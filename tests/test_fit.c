/* test_fit.c -- Optimus's curve: NNLS, recovery from noisy points, the
 * (workers, ps) it picks, and the model scaling stages with a fitted curve.
 *
 * The noisy data sets: the true curve th = (1, 0.25, 0.05, 0.1) sampled at
 * w in {1,2,3,4,6,8,12,16,24,32,48,64} x p in {1,2,4,8,16} (60 points),
 * each throughput multiplied by 1 + u, u uniform in [-0.05, 0.05] drawn
 * from a seeded generator. docs/jobs.md reports the rates measured here.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/rng.h"
#include "env/config.h"
#include "env/place.h"
#include "solvers/fit.h"
#include "tests/fixture.h"
#include "tests/harness.h"

#define assert_close(got, want)                                                   \
    do {                                                                          \
        if (!fixture_close((got), (want)))                                        \
            fail_msg("%s = %.17g, want %.17g", #got, (double)(got), (double)(want)); \
    } while (0)

static const model_curve TRUE_CURVE = {{1.0, 0.25, 0.05, 0.1}, 1};

/* Fills pts[60] from curve, with relative noise uniform in [-noise, noise]. */
static int make_points(model_point *pts, const model_curve *curve, double noise, uint64_t seed) {
    static const int W[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
    static const int P[] = {1, 2, 4, 8, 16};
    uint64_t s = seed;
    int n = 0;
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 5; j++) {
            double f = model_curve_eval(curve, P[j], W[i]);
            double u = 2.0 * splitmix64_unit(&s) - 1.0;
            pts[n++] = (model_point){W[i], P[j], f * (1.0 + noise * u)};
        }
    return n;
}

/* min ||A x - b|| over x >= 0, A = [[1, 1], [0, 1]] (rows), b = (2, -1).
 * Unconstrained: x2 = -1, x1 = 3. With x2 = 0: x1 = 2, residual^2 1; with
 * x1 = 0: x2 = 0.5, residual^2 4.5. So (2, 0); the gradient there,
 * A^T (b - A x) = A^T (0, -1) = (0, -1) <= 0, confirms it. A second case
 * with an interior optimum: A = I (2x2) plus a row (1, 1), b = (1, 2, 3):
 * x = (1, 2) fits exactly. */
static void test_nnls(void **state) {
    (void)state;
    char err[128];
    double A[4] = {1, 0, 1, 1}; /* column-major */
    double b[2] = {2, -1}, x[2];
    assert_int_equal(fit_nnls(x, A, b, 2, 2, err, sizeof err), 0);
    assert_close(x[0], 2.0);
    assert_true(x[1] == 0.0);
    double A2[6] = {1, 0, 1, 0, 1, 1}, b2[3] = {1, 2, 3};
    assert_int_equal(fit_nnls(x, A2, b2, 3, 2, err, sizeof err), 0);
    assert_true(fabs(x[0] - 1.0) < 1e-12 && fabs(x[1] - 2.0) < 1e-12);
    assert_int_equal(fit_nnls(x, A2, b2, 3, 17, err, sizeof err), -1);
}

/* Noiseless points give the coefficients back; a zero coefficient stays
 * zero (clamped, not negative). */
static void test_exact_recovery(void **state) {
    (void)state;
    model_point pts[60];
    fit_result r;
    char err[256];
    int n = make_points(pts, &TRUE_CURVE, 0.0, 1);
    assert_int_equal(fit_curve(pts, n, &r, err, sizeof err), 0);
    for (int j = 0; j < 4; j++)
        assert_true(fabs(r.curve.th[j] / TRUE_CURVE.th[j] - 1.0) < 1e-9);
    assert_int_equal(r.curve.fitted, 1);
    assert_int_equal(r.n_active, 4);
    assert_true(r.rms_rel < 1e-12 && r.max_rel < 1e-12);

    model_curve no_th2 = {{1.0, 0.25, 0.0, 0.1}, 1};
    n = make_points(pts, &no_th2, 0.0, 1);
    assert_int_equal(fit_curve(pts, n, &r, err, sizeof err), 0);
    assert_true(r.curve.th[2] >= 0.0 && r.curve.th[2] < 1e-12);
    assert_true(fabs(r.curve.th[0] - 1.0) < 1e-9 && fabs(r.curve.th[3] - 0.1) < 1e-9);
}

/* 5% noise: every one of 100 data sets gives every coefficient within 10%,
 * and the fit's rms relative error is near the noise's own (uniform on
 * +-5%: standard deviation 0.05 / sqrt(3) = 0.0289). */
static void test_noisy_recovery(void **state) {
    (void)state;
    model_point pts[60];
    fit_result r;
    char err[256];
    double worst[4] = {0, 0, 0, 0};
    for (uint64_t seed = 1; seed <= 100; seed++) {
        int n = make_points(pts, &TRUE_CURVE, 0.05, seed);
        assert_int_equal(fit_curve(pts, n, &r, err, sizeof err), 0);
        for (int j = 0; j < 4; j++) {
            double rel = fabs(r.curve.th[j] / TRUE_CURVE.th[j] - 1.0);
            if (rel > worst[j]) worst[j] = rel;
            if (rel >= 0.10)
                fail_msg("seed %d: th%d = %g, true %g", (int)seed, j, r.curve.th[j],
                         TRUE_CURVE.th[j]);
        }
        assert_true(r.rms_rel > 0.02 && r.rms_rel < 0.04);
        assert_true(r.max_rel < 0.08);
    }
    print_message("worst relative errors th0..th3: %.3f %.3f %.3f %.3f\n", worst[0], worst[1],
                  worst[2], worst[3]);
}

/* What fit_best picks on the true curve, by hand. Least cost is the least
 * w / f = th0 + th1 w/p + th2 w + th3 p among f >= R:
 *  R = 2: (w 4, p 3): 1 + 0.25*4/3 + 0.2 + 0.3 = 1.8333, f = 4/1.8333 = 2.18;
 *    (3, 2) would cost 1 + 0.375 + 0.15 + 0.2 = 1.725 but f = 1.739 < 2.
 *  fastest within w <= 32, p <= 8: (32, 8): 32 / (1 + 1 + 1.6 + 0.8) = 7.27. */
static void test_best_true(void **state) {
    (void)state;
    fit_pick pk;
    fit_best(&TRUE_CURVE, 2.0, 64, 16, 0, &pk);
    assert_int_equal(pk.found, 1);
    assert_int_equal(pk.workers, 4);
    assert_int_equal(pk.ps, 3);
    assert_close(pk.unit_s, 1.0 + 0.25 * 4.0 / 3.0 + 0.2 + 0.3);
    assert_close(pk.throughput, 4.0 / pk.unit_s);
    assert_true(model_curve_eval(&TRUE_CURVE, 2, 3) < 2.0);
    fit_best(&TRUE_CURVE, 0.0, 32, 8, 1, &pk);
    assert_int_equal(pk.workers, 32);
    assert_int_equal(pk.ps, 8);
    assert_close(pk.throughput, 32.0 / 4.4);
    /* Unreachable: f < 1 / (th1/p + th2) <= 1/0.05625 at p = 16. */
    fit_best(&TRUE_CURVE, 100.0, 64, 16, 0, &pk);
    assert_int_equal(pk.found, 0);
}

/* On noisy data the fitted curve picks the true best at targets whose best
 * is not on a knife edge (the true f of the pick clears R, and of the
 * cheaper neighbours misses it, by more than the fit's few-percent error):
 * R = 2, 3 and 4.75 at least cost, and the fastest within (32, 8), for
 * 100 data sets each. */
static void test_best_fitted(void **state) {
    (void)state;
    model_point pts[60];
    fit_result r;
    char err[256];
    const double targets[3] = {2.0, 3.0, 4.75};
    fit_pick want[3], fast_want, pk;
    for (int k = 0; k < 3; k++) fit_best(&TRUE_CURVE, targets[k], 64, 16, 0, &want[k]);
    fit_best(&TRUE_CURVE, 0.0, 32, 8, 1, &fast_want);
    for (uint64_t seed = 1; seed <= 100; seed++) {
        int n = make_points(pts, &TRUE_CURVE, 0.05, seed);
        assert_int_equal(fit_curve(pts, n, &r, err, sizeof err), 0);
        for (int k = 0; k < 3; k++) {
            fit_best(&r.curve, targets[k], 64, 16, 0, &pk);
            if (pk.workers != want[k].workers || pk.ps != want[k].ps)
                fail_msg("seed %d, R %g: picked (%d, %d), true best (%d, %d)", (int)seed,
                         targets[k], pk.workers, pk.ps, want[k].workers, want[k].ps);
        }
        fit_best(&r.curve, 0.0, 32, 8, 1, &pk);
        assert_int_equal(pk.workers, fast_want.workers);
        assert_int_equal(pk.ps, fast_want.ps);
    }
}

static void test_fit_refusals(void **state) {
    (void)state;
    model_point pts[4] = {{1, 1, 1.0}, {2, 1, 1.5}, {4, 2, 2.0}, {8, 0, 3.0}};
    fit_result r;
    char err[256];
    assert_int_equal(fit_curve(pts, 3, &r, err, sizeof err), -1);
    assert_string_equal(err, "3 measurements, the fit needs at least 4 (four coefficients)");
    assert_int_equal(fit_curve(pts, 4, &r, err, sizeof err), -1);
    assert_string_equal(err, "measurement 3: needs workers >= 1, ps >= 1 and a throughput > 0");
    model_job job = {0};
    snprintf(job.name, sizeof job.name, "j");
    job.points = pts;
    job.n_points = 2;
    assert_int_equal(fit_job(&job, &r, err, sizeof err), -1);
    assert_string_equal(err, "job j: measurements: 2 measurements, the fit needs at least 4 "
                             "(four coefficients)");
    assert_int_equal(job.curve.fitted, 0);
    job.n_points = 0;
    assert_int_equal(fit_job(&job, &r, err, sizeof err), 0);
    assert_int_equal(job.curve.fitted, 0);
}

/* Measurements that cannot pin the four coefficients are refused, naming
 * what is missing. Four copies of (1, 1) once fitted th = (0.01, 0, 0, 0):
 * perfect linear scaling with "0% error", and `strata solve` then called a
 * job the measurements say nothing about "proven optimal". Four distinct
 * points can still be singular: with p/w = 1/4 at three of them (docs/
 * jobs.md's old example, (1,1), (4,1), (8,2), (16,4)) a row is
 * [1/w, 1/p, 1, p/w] = [1/w, 4/w, 1, 1/4] and th = (-4, 1, -1, 4) is in the
 * null space of the whole system; with ps = 1 throughout, the columns of
 * th0 and th3 (f/w) and of th1 and th2 (f) are equal. */
static void test_fit_unidentifiable(void **state) {
    (void)state;
    fit_result r;
    char err[512];
    model_point same[4] = {{1, 1, 100}, {1, 1, 100}, {1, 1, 100}, {1, 1, 100}};
    assert_int_equal(fit_curve(same, 4, &r, err, sizeof err), -1);
    assert_string_equal(err, "4 measurements but only 1 distinct (workers, ps) point, the fit "
                             "needs at least 4 (four coefficients): measure other worker and "
                             "ps counts");
    assert_int_equal(r.curve.fitted, 0);
    model_point three[5] = {{1, 1, 100}, {2, 1, 180}, {1, 1, 101}, {4, 2, 300}, {2, 1, 181}};
    assert_int_equal(fit_curve(three, 5, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "5 measurements but only 3 distinct (workers, ps) points"));

    model_point ratio[4] = {{1, 1, 190}, {4, 1, 610}, {8, 2, 1150}, {16, 4, 2010}};
    assert_int_equal(fit_curve(ratio, 4, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "the measurements cannot tell th0, th1, th2, th3 apart "
                                "(condition number "));
    model_point ps1[5] = {{1, 1, 190}, {2, 1, 350}, {4, 1, 610}, {8, 1, 1150}, {16, 1, 1900}};
    assert_int_equal(fit_curve(ps1, 5, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot tell th"));
    assert_non_null(strstr(err, "varying workers and ps independently"));
    /* one more point, at another ps, and the fit goes through */
    model_point fixed[5] = {{1, 1, 190}, {4, 1, 610}, {4, 2, 650}, {8, 2, 1150}, {16, 4, 2010}};
    assert_int_equal(fit_curve(fixed, 5, &r, err, sizeof err), 0);

    model_job job = {0};
    snprintf(job.name, sizeof job.name, "resnet");
    job.points = same;
    job.n_points = 4;
    assert_int_equal(fit_job(&job, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "job resnet: measurements: 4 measurements but only 1 distinct"));
    assert_int_equal(job.curve.fitted, 0);
}

/* The old fit_best: every (w, p), w outer. The reference the fast search
 * must agree with. */
static void best_scan(const model_curve *curve, double R, int max_w, int max_p, int fastest,
                      fit_pick *out) {
    memset(out, 0, sizeof *out);
    for (int w = 1; w <= max_w; w++)
        for (int p = 1; p <= max_p; p++) {
            double f = model_curve_eval(curve, p, w), u = w / f;
            int better;
            if (fastest) {
                better = !out->found || f > out->throughput * (1.0 + 1e-12);
            } else {
                if (f < R) continue;
                better = !out->found || u < out->unit_s * (1.0 - 1e-12) ||
                         (u <= out->unit_s * (1.0 + 1e-12) &&
                          (p < out->ps || (p == out->ps && w < out->workers)));
            }
            if (better) *out = (fit_pick){1, w, p, f, u};
        }
}

/* fit_best searches by p with a binary search on w; on the true curve, on
 * curves with zero coefficients (no ps overhead, flat cost th1 = th2 = 0,
 * a ceiling with th0 = th3 = 0) and on 20 noisy fits, at many targets, its
 * pick is the exhaustive scan's. */
static void test_best_matches_scan(void **state) {
    (void)state;
    model_curve curves[24] = {
        TRUE_CURVE,
        {{1.0, 0.25, 0.0, 0.1}, 1},
        {{1.0, 0.0, 0.0, 0.1}, 1},
        {{0.0, 0.25, 0.05, 0.0}, 1},
    };
    int n = 4;
    model_point pts[60];
    fit_result r;
    char err[256];
    for (uint64_t seed = 1; n < 24; seed++) {
        make_points(pts, &TRUE_CURVE, 0.05, seed);
        assert_int_equal(fit_curve(pts, 60, &r, err, sizeof err), 0);
        curves[n++] = r.curve;
    }
    const double R[] = {0.3, 1.0, 2.0, 3.0, 4.0, 4.75, 6.0, 8.0, 12.0, 100.0};
    const int bounds[][2] = {{1, 1}, {64, 16}, {32, 8}, {7, 50}, {200, 3}};
    fit_pick got, want;
    for (int c = 0; c < n; c++)
        for (size_t b = 0; b < sizeof bounds / sizeof *bounds; b++) {
            for (int fastest = 0; fastest < 2; fastest++)
                for (size_t k = 0; k < (fastest ? 1 : sizeof R / sizeof *R); k++) {
                    fit_best(&curves[c], R[k], bounds[b][0], bounds[b][1], fastest, &got);
                    best_scan(&curves[c], R[k], bounds[b][0], bounds[b][1], fastest, &want);
                    if (got.found != want.found || got.workers != want.workers ||
                        got.ps != want.ps || got.throughput != want.throughput)
                        fail_msg("curve %d, bounds (%d, %d), %s R %g: got (%d, %d, %d), scan "
                                 "(%d, %d, %d)", c, bounds[b][0], bounds[b][1],
                                 fastest ? "fastest" : "least cost", R[k], got.found,
                                 got.workers, got.ps, want.found, want.workers, want.ps);
                }
        }
}

/* The model with a fitted curve: the fixture's plan [cpu, gpu, gpu] at
 * R = 10000 with th = (1, 0.25, 0.05, 0.1). Every stage has g = 1 ps, so
 * its serial fraction is (0.25 + 0.05) / (1 + 0.1 + 0.25 + 0.05) = 3/14.
 * Stage 0: t = 5e-3, q = 0.5: 1 unit, theta = 100 / 5e-3 = 20000.
 * Stage 1: t = 0.029, q = 2.9, alpha q = 0.6214 < 1:
 *   k = ceil(2.9 (11/14) / (1 - 2.9 * 3/14)) = ceil(6.019) = 7,
 *   theta = (100 / 0.029) * 7 / (1 + 6 * 3/14) = 3448.28 * 3.0625 = 10560.3,
 *   and 3.0625 is the curve's own speed-up f(1, 7) / f(1, 1) =
 *   (7 / 3.2) / (1 / 1.4).
 * Cost: 1e8 / theta / 3600 * (1 * 1 + 7 * 3). */
static void test_model_with_curve(void **state) {
    (void)state;
    fixture fx;
    fixture_init(&fx);
    fx.types[FX_GPU].count = 10;
    fx.job.min_throughput = 10000;
    fx.job.curve = TRUE_CURVE;
    assert_close(model_curve_alpha(&fx.job.curve, 1), 3.0 / 14.0);
    assert_close(model_curve_eval(&TRUE_CURVE, 1, 7) / model_curve_eval(&TRUE_CURVE, 1, 1),
                 3.0625);
    model_plan *plan = model_plan_create(3);
    int assign[3] = {FX_CPU, FX_GPU, FX_GPU};
    assert_int_equal(model_eval(&fx.job, &fx.cl, assign, plan), MODEL_FEASIBLE);
    assert_int_equal(plan->stages[0].units, 1);
    assert_close(plan->stages[0].throughput, 20000.0);
    assert_int_equal(plan->stages[1].units, 7);
    double theta = 100.0 / 0.029 * 7.0 / (1.0 + 6.0 * 3.0 / 14.0);
    assert_true(fabs(plan->stages[1].throughput / theta - 1.0) < 1e-12);
    assert_true(fabs(plan->throughput / theta - 1.0) < 1e-12);
    assert_true(fabs(plan->cost / (1e8 / theta / 3600.0 * 22.0) - 1.0) < 1e-12);

    /* Without the curve (fitted = 0) the Amdahl figures come back: k = 4. */
    fx.job.curve.fitted = 0;
    assert_int_equal(model_eval(&fx.job, &fx.cl, assign, plan), MODEL_FEASIBLE);
    assert_int_equal(plan->stages[1].units, 4);

    /* A curve that stops scaling: th0 = th3 = 0 gives alpha = 1, so a stage
     * needing more than one unit can never reach R; the message quotes the
     * stage's peak, B / (t alpha) = 100 / 0.029 = 3448.28. */
    fx.job.curve = (model_curve){{0.0, 0.25, 0.05, 0.0}, 1};
    assert_int_equal(model_eval(&fx.job, &fx.cl, assign, plan), MODEL_ERR_THROUGHPUT);
    assert_int_equal(plan->bad_stage, 1);
    assert_non_null(strstr(plan->why, "peaks at 3448.28 samples/s"));
    model_plan_free(plan);
}

/* place_eval scales the placed stages with the curve too: stage 1 of the
 * plan above, all its tasks on one gpu node of the fixture's 2-unit nodes
 * cannot hold 7 workers, so give n1 and n2 eight units each and put the 7
 * workers and the ps on n1, stage 0 on n0: P_1' = 0, X_1' = 2e6 / 9.9e8 +
 * 2e-4 (test_place's figure), t_1' = 0.02 + X_1'; theta_1' = (100 / t_1')
 * * 7 / (1 + 6 * 3/14). */
static void test_place_with_curve(void **state) {
    (void)state;
    fixture fx;
    fixture_init(&fx);
    fx.types[FX_GPU].count = 16;
    fx.nodes[1].units = 8;
    fx.nodes[2].units = 8;
    fx.job.min_throughput = 10000;
    fx.job.curve = TRUE_CURVE;
    model_plan *plan = model_plan_create(3);
    int assign[3] = {FX_CPU, FX_GPU, FX_GPU};
    assert_int_equal(model_eval(&fx.job, &fx.cl, assign, plan), MODEL_FEASIBLE);
    int tasks[10] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(place_eval(&fx.job, &fx.cl, plan, tasks, plan), MODEL_FEASIBLE);
    double t1 = 0.02 + 2e6 / 9.9e8 + 2e-4;
    assert_close(plan->stages[1].step, t1);
    assert_true(fabs(plan->stages[1].throughput / (100.0 / t1 * 7.0 / (1.0 + 18.0 / 14.0)) -
                     1.0) < 1e-12);
    model_plan_free(plan);
}

/* A run with measurements, as the loader reads it. */
static const char *RUN_YAML =
    "cluster:\n"
    "  types:\n"
    "    - {name: gpu, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, mem: 1.6e10, price: 3, "
    "count: 64}\n"
    "job:\n"
    "  name: j\n"
    "  batch: 32\n"
    "  samples: 1e8\n"
    "  min_throughput: 3\n"
    "  layers:\n"
    "    - {name: l, flops: 1e9, io: 0, act: 0, params: 1e6, mem: 1e8}\n"
    "  measurements:\n"
    "    - {workers: 1, ps: 1, throughput: 0.714}\n"
    "    - {workers: 4, ps: 2, throughput: 2.0}\n"
    "    - {workers: 8, ps: 2, throughput: 2.9}\n"
    "    - {workers: 16, ps: 4, throughput: 4.3}\n"
    "    - {workers: 32, ps: 8, throughput: 5.5}\n";

/* Replaces the first `from` in RUN_YAML by `to` into buf. */
static const char *variant(char *buf, size_t len, const char *from, const char *to) {
    const char *at = strstr(RUN_YAML, from);
    assert_non_null(at);
    snprintf(buf, len, "%.*s%s%s", (int)(at - RUN_YAML), RUN_YAML, to, at + strlen(from));
    return buf;
}

/* The `measurements:` key: points read in order; a point's keys are
 * checked (bounds, unknown keys) and fewer than four points are refused,
 * each error naming line, column and key path. fit_run then fits the job. */
static void test_config_measurements(void **state) {
    (void)state;
    char err[512], buf[2048];
    cfg_run *run = cfg_load_buffer("m.yaml", RUN_YAML, strlen(RUN_YAML), err, sizeof err);
    if (!run) fail_msg("%s", err);
    model_job *job = &run->jobs[0];
    assert_int_equal(job->n_points, 5);
    assert_int_equal(job->points[3].workers, 16);
    assert_int_equal(job->points[3].ps, 4);
    assert_true(job->points[3].throughput == 4.3);
    assert_int_equal(job->curve.fitted, 0);
    assert_int_equal(fit_run(run, err, sizeof err), 0);
    assert_int_equal(job->curve.fitted, 1);
    fit_result r;
    assert_int_equal(fit_curve(job->points, job->n_points, &r, err, sizeof err), 0);
    for (int j = 0; j < 4; j++) assert_true(job->curve.th[j] == r.curve.th[j]);
    cfg_free(run);

    struct {
        const char *from, *to, *want;
    } bad[] = {
        {"workers: 4, ps: 2", "workers: 4, ps: 0",
         "m.yaml:13:24: job.measurements[1].ps: must be >= 1, got \"0\""},
        {"throughput: 2.0}", "throughput: 2.0, type: gpu}",
         "m.yaml:13:44: job.measurements[1].type: unknown key (valid keys: workers, ps, "
         "throughput)"},
        {"throughput: 2.9}", "throughput: fast}",
         "m.yaml:14:39: job.measurements[2].throughput: expected a number such as 0.5 or 1e6, "
         "got \"fast\""},
        {"    - {workers: 8, ps: 2, throughput: 2.9}\n    - {workers: 16, ps: 4, throughput: "
         "4.3}\n    - {workers: 32, ps: 8, throughput: 5.5}\n", "",
         "m.yaml:12:5: job.measurements: the throughput curve has four coefficients: give at "
         "least 4 measurements, got 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        variant(buf, sizeof buf, bad[i].from, bad[i].to);
        run = cfg_load_buffer("m.yaml", buf, strlen(buf), err, sizeof err);
        assert_null(run);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)))
            fail_msg("variant %d:\n got  %s\n want %s", (int)i, err, bad[i].want);
    }
}


/* `strata fit` through a real file: its coefficients are fit_curve's on the
 * same points, its pick is fit_best's with workers up to the 64 units and,
 * without nodes, ps up to 64 too; `strata cost` on the same file labels
 * the curve as fitted and provisions with it. */
static void test_cli_fit(void **state) {
    (void)state;
    const char *bin = getenv("STRATA_BIN"), *tmp = getenv("STRATA_TMP");
    char path[1024], cmd[4400], err[256];
    snprintf(path, sizeof path, "%s/fit_run.yaml", tmp ? tmp : "/tmp");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(RUN_YAML, f);
    fclose(f);
    model_point pts[5] = {{1, 1, 0.714}, {4, 2, 2.0}, {8, 2, 2.9}, {16, 4, 4.3}, {32, 8, 5.5}};
    fit_result r;
    assert_int_equal(fit_curve(pts, 5, &r, err, sizeof err), 0);
    fit_pick want, fast;
    fit_best(&r.curve, 3.0, 64, 64, 0, &want);
    fit_best(&r.curve, 0.0, 64, 64, 1, &fast);

    snprintf(cmd, sizeof cmd, "%s fit %s --json", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t jerr;
    json_t *o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
    json_t *th = json_object_get(o, "th");
    for (int j = 0; j < 4; j++)
        assert_close(json_number_value(json_array_get(th, (size_t)j)), r.curve.th[j]);
    json_t *pk = json_object_get(o, "pick");
    assert_int_equal(json_integer_value(json_object_get(pk, "workers")), want.workers);
    assert_int_equal(json_integer_value(json_object_get(pk, "ps")), want.ps);
    json_decref(o);

    snprintf(cmd, sizeof cmd, "%s fit %s --max-speed --type gpu", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    char line[128];
    snprintf(line, sizeof line, "pick: %d workers, %d ps:", fast.workers, fast.ps);
    assert_non_null(strstr(harness_out, line));
    assert_non_null(strstr(harness_out, "FITTED to 5 measurements"));
    assert_non_null(strstr(harness_out, " on gpu"));

    /* Every report labels the fitted curve: cost's table and JSON, solve's
     * table; and cost provisions with it: its units are model_eval's on
     * the job with the curve attached. */
    char cpath[1100];
    snprintf(cpath, sizeof cpath, "%s.cost", path);
    snprintf(cmd, sizeof cmd, "sed 's/min_throughput: 3/min_throughput: 30000/' %s > %s", path,
             cpath);
    assert_int_equal(harness_run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s cost %s --assign gpu", bin ? bin : "./strata", cpath);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "throughput curve: FITTED to 5 measurements"));
    snprintf(cmd, sizeof cmd, "%s solve %s", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "throughput curve: FITTED to 5 measurements"));
    snprintf(cmd, sizeof cmd, "%s cost %s --assign gpu --json", bin ? bin : "./strata", cpath);
    assert_int_equal(harness_run(cmd), 0);
    o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
    json_t *cv = json_object_get(o, "curve");
    assert_string_equal(json_string_value(json_object_get(cv, "kind")), "fitted");
    assert_close(json_number_value(json_array_get(json_object_get(cv, "th"), 1)), r.curve.th[1]);
    cfg_run *run = cfg_load(cpath, err, sizeof err);
    assert_non_null(run);
    assert_int_equal(fit_run(run, err, sizeof err), 0);
    model_plan *plan = model_plan_create(1);
    int assign[1] = {0};
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, plan), MODEL_FEASIBLE);
    json_t *st0 = json_array_get(json_object_get(o, "stages"), 0);
    assert_int_equal(json_integer_value(json_object_get(st0, "units")), plan->stages[0].units);
    /* At R = 30000 (q = 3.94) Amdahl with alpha 0.05 needs 5 units; the
     * curve's serial fraction (th1 + th2) / (th0 + th1 + th2 + th3) ~ 0.2
     * needs about 15. */
    assert_true(plan->stages[0].units > 10);
    run->jobs[0].curve.fitted = 0;
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, plan), MODEL_FEASIBLE);
    assert_true(json_integer_value(json_object_get(st0, "units")) != plan->stages[0].units);
    model_plan_free(plan);
    cfg_free(run);
    json_decref(o);

    /* A target above the curve's ceiling: no pick, exit 1. */
    snprintf(cmd, sizeof cmd, "sed 's/min_throughput: 3/min_throughput: 300/' %s > %s.hi && "
             "%s fit %s.hi", path, path, bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 1);
    assert_non_null(strstr(harness_out, "no (workers, ps) reaches the target 300"));
}

/* `strata fit` and `strata solve` on a job measured four times at one
 * worker and one ps: refused with the job's name and what is missing
 * (before, fit printed a 0%-error linear curve and solve answered "method:
 * exact, proven optimal" at any target). */
static void test_cli_fit_unidentifiable(void **state) {
    (void)state;
    char path[1024], cmd[2400], buf[2048];
    snprintf(path, sizeof path, "%s/fit_same.yaml", harness_tmp());
    variant(buf, sizeof buf, "min_throughput: 3", "min_throughput: 300000");
    char *at = strstr(buf, "  measurements:\n");
    assert_non_null(at);
    snprintf(at, sizeof buf - (size_t)(at - buf), "  measurements:\n%s%s%s%s",
             "    - {workers: 1, ps: 1, throughput: 100}\n",
             "    - {workers: 1, ps: 1, throughput: 100}\n",
             "    - {workers: 1, ps: 1, throughput: 100}\n",
             "    - {workers: 1, ps: 1, throughput: 100}\n");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(buf, f);
    fclose(f);
    const char *cmds[] = {"fit", "solve", "solve --json"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", harness_bin(), cmds[i], path);
        assert_int_equal(harness_run(cmd), 2);
        if (!strstr(harness_out, "job j: measurements: 4 measurements but only 1 distinct "
                                 "(workers, ps) point"))
            fail_msg("%s: %s", cmds[i], harness_out);
        assert_null(strstr(harness_out, "optimal"));
    }
}

/* The search bounds: --max-workers and --max-ps stop at FIT_MAX_SEARCH
 * with the usual message (2^31 was taken), and a cluster of two types of
 * 50,000 units each -- a search over 100,000 workers and, without nodes,
 * 100,000 ps; 1e10 curve evaluations before, 55 s -- answers, with the
 * exhaustive scan's pick on a smaller bound. `timeout` is only a hang
 * guard: the answer takes milliseconds. */
static void test_cli_fit_bounds(void **state) {
    (void)state;
    char path[1024], cmd[2400], buf[2048];
    snprintf(path, sizeof path, "%s/fit_big.yaml", harness_tmp());
    variant(buf, sizeof buf, "count: 64}\n",
            "count: 50000}\n    - {name: gpu2, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, "
            "mem: 1.6e10, price: 3, count: 50000}\n");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(buf, f);
    fclose(f);
    const char *bad[] = {"--max-workers 2147483648", "--max-ps 100001", "--max-workers 0"};
    const char *want[] = {"--max-workers: expected a whole number from 1 to 100000, got "
                          "'2147483648'",
                          "--max-ps: expected a whole number from 1 to 100000, got '100001'",
                          "--max-workers: expected a whole number from 1 to 100000, got '0'"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s fit %s %s 2>&1", harness_bin(), path, bad[i]);
        assert_int_equal(harness_run(cmd), 2);
        if (!strstr(harness_out, want[i])) fail_msg("%s: %s", bad[i], harness_out);
    }
    for (int fastest = 0; fastest < 2; fastest++) {
        snprintf(cmd, sizeof cmd, "timeout 20 %s fit %s --json%s", harness_bin(), path,
                 fastest ? " --max-speed" : "");
        assert_int_equal(harness_run(cmd), 0);
        json_error_t jerr;
        json_t *o = json_loads(harness_out, 0, &jerr);
        if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
        assert_int_equal(json_integer_value(json_object_get(o, "max_workers")), 100000);
        assert_int_equal(json_integer_value(json_object_get(o, "max_ps")), 100000);
        json_t *th = json_object_get(o, "th");
        model_curve c = {{0, 0, 0, 0}, 1};
        for (int j = 0; j < 4; j++) c.th[j] = json_number_value(json_array_get(th, (size_t)j));
        json_t *pk = json_object_get(o, "pick");
        fit_pick want_pk;
        fit_best(&c, 3.0, 100000, 100000, fastest, &want_pk);
        assert_int_equal(json_integer_value(json_object_get(pk, "workers")), want_pk.workers);
        assert_int_equal(json_integer_value(json_object_get(pk, "ps")), want_pk.ps);
        json_decref(o);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nnls),
        cmocka_unit_test(test_exact_recovery),
        cmocka_unit_test(test_noisy_recovery),
        cmocka_unit_test(test_best_true),
        cmocka_unit_test(test_best_fitted),
        cmocka_unit_test(test_fit_refusals),
        cmocka_unit_test(test_model_with_curve),
        cmocka_unit_test(test_place_with_curve),
        cmocka_unit_test(test_config_measurements),
        cmocka_unit_test(test_cli_fit),
        cmocka_unit_test(test_fit_unidentifiable),
        cmocka_unit_test(test_best_matches_scan),
        cmocka_unit_test(test_cli_fit_unidentifiable),
        cmocka_unit_test(test_cli_fit_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
