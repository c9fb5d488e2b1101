/* test_calib.c -- strata calibrate: factors recovered from synthetic
 * measurements, a deterministic holdout, every bad-CSV message, degenerate
 * data refused, and the MAPE of noisy data worked out by hand.
 *
 * Files are written to $STRATA_TMP/calib: a cluster file with types cpu
 * (flops 1e12, io_bw 1e9, net_bw 1e9) and gpu, and model files (job: only):
 *   ja: flops 1e9, io 1e5, params 1e6   compute-bound, some network
 *   jb: flops 1e8, io 1e7, params 0     input-bound
 *   jc: flops 1e9, io 0,   params 1e8   network-heavy
 *   jd: flops 1e9, io 0,   params 0     compute only
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "env/config.h"
#include "solvers/calib.h"
#include "tests/harness.h"

static char dir[1024];

static void put(const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/calib", harness_tmp());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd)) return -1;
    put("cluster.yaml", "cluster:\n  types:\n"
        "    - {name: cpu, kind: cpu, flops: 1e12, io_bw: 1e9, net_bw: 1e9, mem: 1e11, price: 1, count: 8}\n"
        "    - {name: gpu, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, mem: 1.6e10, price: 3, count: 8}\n");
    put("ja.yaml", "job:\n  name: ja\n  batch: 8\n  samples: 1e6\n  min_throughput: 1\n"
        "  layers:\n    - {name: l, flops: 1e9, io: 1e5, act: 0, params: 1e6, mem: 1e6}\n");
    put("jb.yaml", "job: {name: jb, batch: 8, samples: 1e6, min_throughput: 1,\n"
        "      layers: [{name: l, flops: 1e8, io: 1e7, act: 0, params: 0, mem: 1e6}]}\n");
    put("jc.yaml", "job:\n  name: jc\n  batch: 8\n  samples: 1e6\n  min_throughput: 1\n"
        "  layers:\n    - {name: l, flops: 1e9, io: 0, act: 0, params: 1e8, mem: 1e6}\n");
    put("jd.yaml", "job:\n  name: jd\n  batch: 8\n  samples: 1e6\n  min_throughput: 1\n"
        "  layers:\n    - {name: l, flops: 1e9, io: 0, act: 0, params: 0, mem: 1e6}\n");
    return 0;
}

static cfg_run *cluster(void) {
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/cluster.yaml", dir);
    cfg_run *run = calib_load(p, err, sizeof err);
    if (!run) fail_msg("%s", err);
    return run;
}

/* The true factors of cpu: flops x0.5, io_bw x2, net_bw x0.25, 10 ms per
 * step. Measurements are what the cost model says with those figures. */
static const double TRUE_F[3] = {0.5, 2.0, 0.25}, TRUE_O = 0.01;

static double synth(const model_cluster *cl, const char *job, double batch, int workers) {
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/%s.yaml", dir, job);
    cfg_run *j = calib_load(p, err, sizeof err);
    if (!j) fail_msg("%s", err);
    model_type ty = cl->types[0];
    ty.flops *= TRUE_F[0];
    ty.io_bw *= TRUE_F[1];
    ty.net_bw *= TRUE_F[2];
    model_cluster one = {.n_types = 1, .types = &ty};
    model_job jb = j->jobs[0];
    jb.batch = batch;
    model_stage st;
    model_stage_eval(&jb, &one, 0, 0, jb.n_layers - 1, &st);
    double v = model_stage_throughput(st.step + TRUE_O, batch, workers, jb.alpha);
    cfg_free(j);
    return v;
}

/* writes the synthetic CSV: 3 jobs x 3 batches x workers 1, 2, 4 rotating */
static void write_synth(const model_cluster *cl, const char *name) {
    static const char *J[] = {"ja", "jb", "jc"};
    static const double B[] = {8, 32, 128};
    char text[8192];
    size_t o = (size_t)snprintf(text, sizeof text, "job,type,workers,ps,batch,samples_per_s,note\n");
    int k = 0;
    for (int j = 0; j < 3; j++)
        for (int b = 0; b < 3; b++, k++) {
            int w = 1 << (k % 3);
            o += (size_t)snprintf(text + o, sizeof text - o, "%s.yaml, cpu, %d, 1, %g, %.17g, run %d\n",
                                  J[j], w, B[b], synth(cl, J[j], B[b], w), k);
        }
    put(name, text);
}

static void test_recover(void **state) {
    (void)state;
    cfg_run *run = cluster();
    write_synth(&run->cluster, "synth.csv");
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/synth.csv", dir);
    calib_result *r = calib_fit(&run->cluster, p, 0.0, 1, err, sizeof err);
    if (!r) fail_msg("%s", err);
    const calib_type *ct = &r->types[0];
    for (int i = 0; i < 3; i++)
        if (fabs(ct->factor[i] / TRUE_F[i] - 1.0) > 1e-6)
            fail_msg("factor %d = %.12g, want %g", i, ct->factor[i], TRUE_F[i]);
    if (fabs(ct->overhead / TRUE_O - 1.0) > 1e-6) fail_msg("overhead %.12g", ct->overhead);
    for (int p2 = 0; p2 < CALIB_NPAR; p2++) assert_int_equal(ct->fitted[p2], 1);
    assert_int_equal(ct->n_points, 9);
    assert_true(r->mape_fit < 1e-6);
    assert_int_equal(r->types[1].n_fit, 0); /* gpu: not measured */
    calib_free(r);

    /* through the program: the written cluster has flops x0.5 */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s calibrate %s/cluster.yaml %s --json --out %s/cal.yaml",
             harness_bin(), dir, p, dir);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t je;
    json_t *o = json_loads(harness_out, 0, &je);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "points")), 9);
    double f = json_real_value(json_object_get(json_object_get(json_object_get(o, "types"), "cpu"),
                                               "net_bw_factor"));
    assert_true(fabs(f / 0.25 - 1) < 1e-6);
    assert_true(json_is_null(json_object_get(o, "mape_holdout")));
    json_decref(o);
    snprintf(p, sizeof p, "%s/cal.yaml", dir);
    cfg_run *cal = calib_load(p, err, sizeof err);
    if (!cal) fail_msg("%s", err);
    assert_true(fabs(cal->cluster.types[0].flops / 0.5e12 - 1) < 1e-6);
    assert_true(cal->cluster.types[1].flops == 1e13); /* unmeasured: unchanged */
    cfg_free(cal);
    cfg_free(run);
}

/* The same seed holds out the same rows; another seed others. */
static void test_holdout(void **state) {
    (void)state;
    cfg_run *run = cluster();
    write_synth(&run->cluster, "synth.csv");
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/synth.csv", dir);
    int a[9], b[9], c[9], differ = 0;
    calib_result *r = calib_fit(&run->cluster, p, 0.3, 7, err, sizeof err);
    if (!r) fail_msg("%s", err);
    assert_int_equal(r->n_holdout, 3); /* round(0.3 x 9) */
    for (int k = 0; k < 9; k++) a[k] = r->rows[k].holdout;
    assert_true(r->mape_holdout < 1e-6); /* exact data: held-out rows predicted too */
    calib_free(r);
    r = calib_fit(&run->cluster, p, 0.3, 7, err, sizeof err);
    for (int k = 0; k < 9; k++) b[k] = r->rows[k].holdout;
    calib_free(r);
    assert_memory_equal(a, b, sizeof a);
    for (uint64_t s = 8; s < 12 && !differ; s++) {
        r = calib_fit(&run->cluster, p, 0.3, s, err, sizeof err);
        if (!r) fail_msg("%s", err);
        for (int k = 0; k < 9; k++) c[k] = r->rows[k].holdout, differ |= c[k] != a[k];
        calib_free(r);
    }
    assert_true(differ);
    cfg_free(run);
}

/* --holdout-job: the rows of one job (jc, rows 7 to 9 of the synthetic
 * CSV) are held out, whatever the seed, and predicted from a fit on ja and
 * jb alone: ja's network term and jb's input term identify every factor
 * and the overhead, so the exact data predict jc exactly. A job no row has,
 * or one that leaves fewer than 2 rows, is refused with the file's name. */
static void test_holdout_job(void **state) {
    (void)state;
    cfg_run *run = cluster();
    write_synth(&run->cluster, "synth.csv");
    char p[1200], err[2048], want[2048];
    snprintf(p, sizeof p, "%s/synth.csv", dir);
    for (uint64_t seed = 1; seed < 4; seed++) {
        calib_result *r = calib_fit_split(&run->cluster, p, 0.0, seed, "jc.yaml", err, sizeof err);
        if (!r) fail_msg("%s", err);
        assert_int_equal(r->n_holdout, 3);
        assert_int_equal(r->n_fit, 6);
        for (int k = 0; k < 9; k++) assert_int_equal(r->rows[k].holdout, k >= 6);
        for (int i = 0; i < 3; i++)
            if (fabs(r->types[0].factor[i] / TRUE_F[i] - 1.0) > 1e-6)
                fail_msg("factor %d = %.12g, want %g", i, r->types[0].factor[i], TRUE_F[i]);
        assert_true(r->mape_holdout < 1e-6);
        calib_free(r);
    }
    assert_null(calib_fit_split(&run->cluster, p, 0.0, 1, "jz.yaml", err, sizeof err));
    snprintf(want, sizeof want, "%s: no row has job 'jz.yaml' to hold out", p);
    assert_string_equal(err, want);
    put("two.csv", "job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10,100\n"
        "ja.yaml,cpu,1,1,10,100\nja.yaml,cpu,1,1,20,150\n");
    snprintf(p, sizeof p, "%s/two.csv", dir);
    assert_null(calib_fit_split(&run->cluster, p, 0.0, 1, "ja.yaml", err, sizeof err));
    snprintf(want, sizeof want, "%s:4: type cpu: holding out job 'ja.yaml' leaves 1 row to fit: "
             "calibrating a type needs at least 2", p);
    assert_string_equal(err, want);
    /* through the program: the held-out rows are marked, with their job */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s calibrate %s/cluster.yaml %s/synth.csv --holdout-job jb.yaml --json",
             harness_bin(), dir, dir);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t je;
    json_t *o = json_loads(harness_out, 0, &je);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "holdout_points")), 3);
    json_t *rows = json_object_get(o, "rows");
    for (size_t k = 0; k < json_array_size(rows); k++) {
        json_t *w = json_array_get(rows, k);
        int is_jb = !strcmp(json_string_value(json_object_get(w, "job")), "jb");
        assert_int_equal(json_is_true(json_object_get(w, "holdout")), is_jb);
    }
    json_decref(o);
    snprintf(cmd, sizeof cmd, "%s calibrate %s/cluster.yaml %s/synth.csv --holdout-job jb.yaml "
             "--holdout 0.3 2>&1", harness_bin(), dir, dir);
    assert_int_not_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "--holdout and --holdout-job: give one of them"));
    cfg_free(run);
}

/* Each bad CSV gives its file:line message. */
static void test_bad_csv(void **state) {
    (void)state;
    static const struct {
        const char *text, *msg;
    } CASES[] = {
        {"job,type,workers,ps,samples_per_s\njd.yaml,cpu,1,1,100\n",
         ":1: missing column 'batch' (the header needs job, type, workers, ps, batch, samples_per_s)"},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10,100\njd.yaml,Z80,1,1,10,100\n",
         ":3: type: no type 'Z80' in the cluster (it has cpu, gpu)"},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10,0\n",
         ":2: samples_per_s: must be > 0, got \"0\""},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10,-5\n",
         ":2: samples_per_s: must be > 0, got \"-5\""},
        {"job,type,workers,ps,batch,samples_per_s\n# one row for gpu\njd.yaml,cpu,1,1,10,100\n"
         "jd.yaml,cpu,1,1,20,100\njd.yaml,gpu,1,1,10,100\n",
         ":5: type gpu has only this one measured row: calibrating a type needs at least 2 rows "
         "(and more distinct job/batch points than factors)"},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,1O0,100\n",
         ":2: batch: expected a number such as 0.5 or 1e6, got \"1O0\""},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,2.5,1,10,100\n",
         ":2: workers: expected a whole number such as 8, got \"2.5\""},
        {"job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10\n",
         ":2: 5 fields, the header has 6"},
        {"job,type,workers,ps,batch,samples_per_s\nnowhere.yaml,cpu,1,1,10,100\n",
         ":2: job: DIR/nowhere.yaml: cannot open: No such file or directory"},
    };
    cfg_run *run = cluster();
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        char p[1200], err[2048], want[4096];
        put("bad.csv", CASES[i].text);
        snprintf(p, sizeof p, "%s/bad.csv", dir);
        calib_result *r = calib_fit(&run->cluster, p, 0.0, 1, err, sizeof err);
        assert_null(r);
        const char *m = CASES[i].msg, *d = strstr(m, "DIR");
        if (d)
            snprintf(want, sizeof want, "%s%.*s%s%s", p, (int)(d - m), m, dir, d + 3);
        else
            snprintf(want, sizeof want, "%s%s", p, m);
        assert_string_equal(err, want);
    }
    cfg_free(run);
}

/* Data that cannot identify a factor is refused, never fitted exactly. */
static void test_degenerate(void **state) {
    (void)state;
    cfg_run *run = cluster();
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/deg.csv", dir);
    /* one job at one batch: compute and network cannot be told apart */
    put("deg.csv", "job,type,workers,ps,batch,samples_per_s\nja.yaml,cpu,1,1,8,100\n"
        "ja.yaml,cpu,2,1,8,190\nja.yaml,cpu,4,1,8,350\n");
    assert_null(calib_fit(&run->cluster, p, 0.0, 1, err, sizeof err));
    assert_string_equal(err, "type cpu: the network (net_bw) rate cannot be told apart from "
                        "the other factors with these 3 rows (1 distinct job/batch point): "
                        "measure it with other batch sizes or other models");
    /* compute only (jd), one batch: one point for one factor */
    put("deg.csv", "job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,8,100\n"
        "jd.yaml,cpu,2,1,8,190\n");
    assert_null(calib_fit(&run->cluster, p, 0.0, 1, err, sizeof err));
    assert_string_equal(err, "type cpu: 1 distinct job/batch point for 1 factor: measure at "
                        "least 2 distinct (job, batch) combinations, so that the fit has an "
                        "error to show");
    cfg_free(run);
}

/* Noisy data on the compute-only job jd, one worker: at factor 1 the model
 * predicts B / (B x 1e9 / 1e12) = 1000 samples/s at every batch. Two
 * batches are two points for compute + overhead, too few for both, so only
 * the compute factor is fitted: the log least squares puts it at the
 * geometric mean of measured / 1000 = (1.1 x 0.9 x 1.0)^(1/3) = 0.99^(1/3),
 * every prediction at p = 1000 x 0.99^(1/3) = 996.65549341, and the MAPE at
 * (|p - 1100| / 1100 + |p - 900| / 900 + |p - 1000| / 1000) / 3 =
 * 6.822968357%. */
static void test_noise_mape(void **state) {
    (void)state;
    cfg_run *run = cluster();
    char p[1200], err[2048];
    snprintf(p, sizeof p, "%s/noise.csv", dir);
    put("noise.csv", "job,type,workers,ps,batch,samples_per_s\njd.yaml,cpu,1,1,10,1100\n"
        "jd.yaml,cpu,1,1,20,900\njd.yaml,cpu,1,1,20,1000\n");
    calib_result *r = calib_fit(&run->cluster, p, 0.0, 1, err, sizeof err);
    if (!r) fail_msg("%s", err);
    const calib_type *ct = &r->types[0];
    assert_true(fabs(ct->factor[0] - pow(0.99, 1.0 / 3.0)) < 1e-9);
    assert_int_equal(ct->fitted[CALIB_COMPUTE], 1);
    assert_int_equal(ct->fitted[CALIB_INPUT], 0);
    assert_int_equal(ct->fitted[CALIB_NETWORK], 0);
    assert_int_equal(ct->fitted[CALIB_OVERHEAD], 0);
    assert_true(ct->factor[1] == 1.0 && ct->factor[2] == 1.0 && ct->overhead == 0.0);
    assert_true(fabs(r->rows[0].predicted - 996.6554934125965) < 1e-6);
    assert_true(fabs(r->mape_fit - 6.822968357038679) < 1e-7);
    calib_free(r);
    cfg_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recover),
        cmocka_unit_test(test_holdout),
        cmocka_unit_test(test_holdout_job),
        cmocka_unit_test(test_bad_csv),
        cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_noise_mape),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
