/* test_heldout.c -- the held-out generator (eval/heldout.h), the wide
 * training family's new keys (agent/gen.h) and the by-size table
 * (eval/bands.h).
 *
 * The held-out generator must be a pure function of (seed, index) and must
 * not draw what the training generator draws: a few moments of both, over
 * the same number of instances, are compared. Config errors name
 * file:line:col and the key. The bands are checked on rows whose figures
 * are worked out by hand, and on a real `strata eval` run of three
 * held-out jobs whose summary must hold the table with its columns.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "agent/gen.h"
#include "agent/policy.h"
#include "eval/bands.h"
#include "eval/heldout.h"
#include "eval/spec.h"
#include "solvers/placers.h"

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_deterministic(void **state) {
    (void)state;
    eval_heldout_conf c;
    eval_heldout_default(&c);
    c.seed = 5;
    c.layers[1] = 16;
    for (int i = 0; i < 4; i++) {
        model_job a, b;
        model_cluster ca, cb;
        assert_int_equal(eval_heldout_draw(&c, i, &a, &ca), 0);
        assert_int_equal(eval_heldout_draw(&c, i, &b, &cb), 0);
        assert_int_equal(a.n_layers, b.n_layers);
        assert_true(a.n_layers >= 1 && a.n_layers <= 16);
        assert_true(ca.n_types >= 2 && ca.n_types <= 8);
        assert_memory_equal(a.layers, b.layers, sizeof *a.layers * (size_t)a.n_layers);
        assert_int_equal(ca.n_types, cb.n_types);
        assert_memory_equal(ca.types, cb.types, sizeof *ca.types * (size_t)ca.n_types);
        assert_int_equal(ca.n_nodes, cb.n_nodes);
        assert_memory_equal(ca.nodes, cb.nodes, sizeof *ca.nodes * (size_t)ca.n_nodes);
        assert_true(a.min_throughput == b.min_throughput && a.batch == b.batch);
        eval_heldout_clear(&b, &cb);
        /* another seed draws another instance */
        c.seed = 6;
        assert_int_equal(eval_heldout_draw(&c, i, &b, &cb), 0);
        assert_true(b.layers[0].flops != a.layers[0].flops);
        c.seed = 5;
        eval_heldout_clear(&a, &ca);
        eval_heldout_clear(&b, &cb);
    }
}

/* Moments over n instances: mean layers, mean types, and over all layers
 * the mean and excess kurtosis of ln FLOPs per sample; over all types the
 * standard deviation of ln(price per FLOPS). */
typedef struct {
    double layers, types, lf_mean, lf_kurt, lp_sd;
} moments;

static void add_job(const model_job *j, const model_cluster *cl, double *s, int *nl, double *p,
                    int *np) {
    for (int l = 0; l < j->n_layers; l++) {
        double x = log(j->layers[l].flops);
        s[0] += x;
        s[1] += x * x;
        s[2] += x * x * x;
        s[3] += x * x * x * x;
        (*nl)++;
    }
    for (int t = 0; t < cl->n_types; t++) {
        double x = log(cl->types[t].price / cl->types[t].flops);
        p[0] += x;
        p[1] += x * x;
        (*np)++;
    }
}

static moments finish(const double *s, int nl, const double *p, int np, double layers,
                      double types, int n) {
    moments m;
    m.layers = layers / n;
    m.types = types / n;
    double mu = s[0] / nl, m2 = s[1] / nl - mu * mu;
    double m4 = s[3] / nl - 4 * mu * s[2] / nl + 6 * mu * mu * s[1] / nl - 3 * pow(mu, 4);
    m.lf_mean = mu;
    m.lf_kurt = m4 / (m2 * m2) - 3;
    double pm = p[0] / np;
    m.lp_sd = sqrt(p[1] / np - pm * pm);
    return m;
}

static void test_moments_differ(void **state) {
    (void)state;
    enum { N = 60 };
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/configs/train/gen.yaml", env_or("STRATA_SRC", "."));
    agent_gen *g = agent_gen_load(path, err, sizeof err);
    if (!g) fail_msg("%s", err);
    double s[4] = {0}, p[2] = {0}, L = 0, T = 0;
    int nl = 0, np = 0;
    for (int i = 0; i < N; i++) {
        agent_gen_inst in = {0};
        assert_int_equal(agent_gen_draw(g, 3, (uint64_t)i, 0, &in), 0);
        add_job(&in.job, &in.cl, s, &nl, p, &np);
        L += in.job.n_layers;
        T += in.cl.n_types;
        agent_gen_inst_clear(&in);
    }
    agent_gen_free(g);
    moments tr = finish(s, nl, p, np, L, T, N);

    eval_heldout_conf c;
    eval_heldout_default(&c);
    c.seed = 3;
    memset(s, 0, sizeof s);
    memset(p, 0, sizeof p);
    L = T = 0;
    nl = np = 0;
    for (int i = 0; i < N; i++) {
        model_job j;
        model_cluster cl;
        assert_true(eval_heldout_draw(&c, i, &j, &cl) >= 0);
        add_job(&j, &cl, s, &nl, p, &np);
        L += j.n_layers;
        T += cl.n_types;
        eval_heldout_clear(&j, &cl);
    }
    moments ho = finish(s, nl, p, np, L, T, N);
    print_message("training: layers %.2f types %.2f ln-flops mean %.2f kurtosis %.2f "
                  "ln-price/flops sd %.2f\n", tr.layers, tr.types, tr.lf_mean, tr.lf_kurt,
                  tr.lp_sd);
    print_message("held-out: layers %.2f types %.2f ln-flops mean %.2f kurtosis %.2f "
                  "ln-price/flops sd %.2f\n", ho.layers, ho.types, ho.lf_mean, ho.lf_kurt,
                  ho.lp_sd);
    /* bands drawn evenly over 1..64: mean near (4.5 + 12.5 + 24.5 + 48.5) / 4 */
    assert_true(ho.layers > 1.4 * tr.layers);
    assert_true(ho.types > tr.types + 1);
    /* layer FLOPs centred elsewhere (measured: ln 21.7 against 19.3), and
     * price per FLOPS less scattered between types (no CPU-heavy pool:
     * sd 0.78 against 1.49) */
    assert_true(fabs(ho.lf_mean - tr.lf_mean) > 1.0);
    assert_true(fabs(ho.lp_sd - tr.lp_sd) > 0.3);
}

/* expect_err checks that loading fails with a message starting with path
 * and containing want. */
static void expect_gen_error(const char *name, const char *text, const char *want) {
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/%s", env_or("STRATA_TMP", "/tmp"), name);
    write_file(path, text);
    agent_gen *g = agent_gen_load(path, err, sizeof err);
    if (g) {
        agent_gen_free(g);
        fail_msg("%s loaded; expected %s", name, want);
    }
    if (strncmp(err, path, strlen(path)) || !strstr(err, want))
        fail_msg("got '%s', want '%s...%s'", err, path, want);
}

static void expect_spec_error(const char *name, const char *text, const char *want) {
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/%s", env_or("STRATA_TMP", "/tmp"), name);
    write_file(path, text);
    eval_spec *s = eval_spec_load(path, err, sizeof err);
    if (s) {
        eval_spec_free(s);
        fail_msg("%s loaded; expected %s", name, want);
    }
    if (strncmp(err, path, strlen(path)) || !strstr(err, want))
        fail_msg("got '%s', want '%s...%s'", err, path, want);
}

/* heldout: with only its required keys (seed, count) loads as
 * eval_heldout_default, field by field: the defaults are written once. */
static void test_default_is_loaded(void **state) {
    (void)state;
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/h-default.yaml", env_or("STRATA_TMP", "/tmp"));
    write_file(path, "instances:\n  - heldout: {seed: 0, count: 1}\nmethods: [exact]\n");
    eval_spec *s = eval_spec_load(path, err, sizeof err);
    if (!s) fail_msg("%s", err);
    const eval_heldout_conf *got = &s->instances[0].heldout;
    eval_heldout_conf want;
    eval_heldout_default(&want);
    assert_int_equal(got->seed, 0);
    assert_int_equal(want.seed, 0);
    assert_int_equal(got->count, want.count);
    assert_true(got->layers[0] == want.layers[0] && got->layers[1] == want.layers[1]);
    assert_true(got->types[0] == want.types[0] && got->types[1] == want.types[1]);
    assert_true(got->tight == want.tight);
    assert_true(got->blocks == want.blocks);
    assert_true(got->mem_bound == want.mem_bound);
    assert_true(got->io_bound == want.io_bound);
    assert_true(got->flops_median == want.flops_median);
    assert_true(got->flops_sigma == want.flops_sigma);
    /* the header's figures */
    assert_true(want.layers[0] == 1 && want.layers[1] == 64 && want.types[0] == 2 &&
                want.types[1] == 8 && want.tight == 0.3 && want.flops_median == 2e9);
    eval_spec_free(s);
}

#define GEN_HEAD                                                                          \
    "families:\n"                                                                          \
    "  - {name: f, weight: 1, batch: [8, 8], units: [1, 2], roles: [{name: l, count: [1, "  \
    "64], flops: [1GFLOP, 2GFLOP], act: [1KB, 2KB], params: [1MB, 2MB], mem: [1GB, 2GB]}]}\n"
#define GEN_POOL                                                                          \
    "  pool:\n"                                                                            \
    "    - {name: A, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, net_bw: 1GB/s, mem: 16GiB, "     \
    "price: 1}\n"                                                                          \
    "    - {name: B, kind: gpu, flops: 2TFLOPS, io_bw: 1GB/s, net_bw: 1GB/s, mem: 16GiB, "     \
    "price: 3}\n"

static void test_config_bounds(void **state) {
    (void)state;
    expect_gen_error("g1.yaml", GEN_HEAD "cluster:\n  types: [2, 2]\n  count: [4, 8]\n"
                     "  tight: 1.5\n" GEN_POOL,
                     ":6:10: cluster.tight: must be >= 0 and <= 1");
    expect_gen_error("g2.yaml", GEN_HEAD "cluster:\n  types: [2, 2]\n  count: [4, 8]\n" GEN_POOL
                     "curriculum:\n  - {from: 0, layers: 8}\n  - {from: 0, layers: 300}\n",
                     ":11:23: curriculum[1].layers: must be >= 1 and <= 256");
    expect_gen_error("g3.yaml", GEN_HEAD "cluster:\n  types: [2, 2]\n  count: [4, 8]\n" GEN_POOL
                     "curriculum:\n  - {from: 10, layers: 8}\n  - {from: 5, layers: 16}\n",
                     ":11:5: curriculum[1]: from must increase");
    expect_spec_error("h1.yaml", "instances:\n  - name: h\n    heldout: {seed: 1, count: 2, "
                      "types: [2, 40]}\nmethods: [exact]\n",
                      ":3:45: instances[0].heldout.types[1]: must be >= 1 and <= 16, got \"40\"");
    expect_spec_error("h2.yaml", "instances:\n  - heldout: {seed: 1, count: 2, tight: 2}\n"
                      "methods: [exact]\n", ":2:41: instances[0].heldout.tight: must be >= 0 and <= 1, got \"2\"");
    expect_spec_error("h3.yaml", "instances:\n  - heldout: {seed: 1, count: 2}\n"
                      "    target: 2\nmethods: [exact]\n",
                      ":3:5: instances[0].target: not allowed with heldout:");
}

/* The curriculum caps layers by draw index; validation indices (2^40 on)
 * fall in the last stage. */
static void test_curriculum(void **state) {
    (void)state;
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/cur.yaml", env_or("STRATA_TMP", "/tmp"));
    write_file(path, GEN_HEAD "cluster:\n  types: [2, 2]\n  count: [4, 8]\n" GEN_POOL
               "curriculum:\n  - {from: 0, layers: 3}\n  - {from: 100, layers: 20}\n");
    agent_gen *g = agent_gen_load(path, err, sizeof err);
    if (!g) fail_msg("%s", err);
    int max_a = 0, max_b = 0, max_v = 0;
    for (int i = 0; i < 60; i++) {
        agent_gen_inst in = {0};
        assert_int_equal(agent_gen_draw(g, 1, (uint64_t)i, 0, &in), 0);
        if (in.job.n_layers > max_a) max_a = in.job.n_layers;
        assert_int_equal(agent_gen_draw(g, 1, 100 + (uint64_t)i, 0, &in), 0);
        if (in.job.n_layers > max_b) max_b = in.job.n_layers;
        assert_int_equal(agent_gen_draw(g, 1, (1ULL << 40) + (uint64_t)i, 0, &in), 0);
        if (in.job.n_layers > max_v) max_v = in.job.n_layers;
        agent_gen_inst_clear(&in);
    }
    agent_gen_free(g);
    assert_int_equal(max_a, 3);
    assert_int_equal(max_b, 20);
    assert_int_equal(max_v, 20);
}

/* band_text returns eval_bands_write's table (caller frees). */
static char *band_text(const eval_spec *spec, const eval_row *rows, int n) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(eval_bands_write(f, spec, rows, n), 1);
    fclose(f);
    return text;
}

/* Bands by hand: five methods (exact, greedy, sampled, node head, best),
 * then a sixth (the node head with 15 sampled placements); three jobs of
 * 4, 6 and 40 layers. */
static void test_bands_by_hand(void **state) {
    (void)state;
    eval_method m[6];
    memset(m, 0, sizeof m);
    m[0].family = EVAL_FAM_PLAN;
    m[0].placer = -1;
    for (int i = 1; i < 6; i++) {
        m[i].family = EVAL_FAM_POLICY;
        m[i].placer = PLACER_PLACE_NONE;
        m[i].decode = AGENT_DECODE_GREEDY;
    }
    m[2].decode = AGENT_DECODE_SAMPLE;
    m[3].placer = PLACER_PLACE_POLICY;
    m[4].placer = PLACER_BEST;
    m[5].placer = PLACER_PLACE_POLICY;
    m[5].node_samples = 15;
    eval_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_methods = 5;
    spec.methods = m;
    /* inst, method, layers, feasible, cost, reference, gap */
    static const struct {
        int inst, method, layers, feasible;
        double cost, reference, gap;
    } R[] = {
        {0, 1, 4, 1, 102, 100, 0.02},  {0, 2, 4, 1, 100, 100, 0},      {0, 3, 4, 1, 10, 100, 0.02},
        {0, 4, 4, 1, 10, 100, 0.02},   {1, 1, 6, 1, 110, 100, 0.10},   {1, 2, 6, 1, 104, 100, 0.04},
        {1, 3, 6, 1, 11, 100, 0.10},   {1, 4, 6, 1, 10, 100, 0.10},    {2, 1, 40, 0, NAN, 5, NAN},
        {2, 2, 40, 1, 5.05, 5, 0.01},  {2, 3, 40, 0, NAN, 5, NAN},     {2, 4, 40, 1, 7, 5, 0.4},
        /* sampled placements: at best's 10 on job 1 (greedy's 11 was not); job 2 placed at 7 */
        {0, 5, 4, 1, 10, 100, 0.02},   {1, 5, 6, 1, 10, 100, 0.10},    {2, 5, 40, 1, 7, 5, 0.4},
    };
    enum { N = sizeof R / sizeof *R };
    eval_row rows[N];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < N; i++) {
        rows[i].inst = R[i].inst;
        rows[i].method = R[i].method;
        rows[i].layers = R[i].layers;
        rows[i].feasible = R[i].feasible;
        rows[i].cost = R[i].cost;
        rows[i].reference = R[i].reference;
        rows[i].gap = R[i].gap;
        rows[i].objective = EVAL_OBJ_COST;
    }
    eval_band b[EVAL_BANDS];
    assert_int_equal(eval_bands(&spec, rows, N, b), 1);
    assert_true(fabs(b[0].sample_mean - 0.02) < 1e-12);
    /* a second seed: each job's best-of-N gap is its mean over the seeds
     * (job 0: (0 + 0.06) / 2, job 1: (0.04 + 0.04) / 2); greedy's second
     * seed row (another figure, to show it is not read) changes nothing */
    eval_row more[N + 3];
    memcpy(more, rows, sizeof rows);
    more[N] = rows[1];
    more[N].seed_idx = 1;
    more[N].gap = 0.06;
    more[N + 1] = rows[5];
    more[N + 1].seed_idx = 1;
    more[N + 2] = rows[0];
    more[N + 2].seed_idx = 1;
    more[N + 2].gap = 0.5;
    assert_int_equal(eval_bands(&spec, more, N + 3, b), 1);
    assert_true(fabs(b[0].sample_mean - 0.035) < 1e-12);
    assert_true(fabs(b[0].greedy_mean - 0.06) < 1e-12);
    assert_int_equal(eval_bands(&spec, rows, N, b), 1);
    assert_int_equal(b[0].jobs, 2);
    assert_true(fabs(b[0].greedy_mean - 0.06) < 1e-12);
    assert_true(fabs(b[0].greedy_worst - 0.10) < 1e-12);
    assert_int_equal(b[0].no_plan, 0);
    assert_true(fabs(b[0].sample_mean - 0.02) < 1e-12);
    assert_int_equal(b[0].node_ok, 1);
    assert_int_equal(b[0].node_n, 2);
    assert_int_equal(b[1].jobs, 0);
    assert_true(isnan(b[1].greedy_mean));
    assert_int_equal(b[3].jobs, 1);
    assert_int_equal(b[3].no_plan, 1);
    assert_true(isnan(b[3].greedy_mean));
    assert_true(fabs(b[3].sample_mean - 0.01) < 1e-12);
    assert_int_equal(b[3].node_ok, 0);
    assert_int_equal(b[3].node_n, 1);
    char *text = band_text(&spec, rows, N);
    assert_non_null(strstr(text, "| layers | jobs | greedy gap mean | greedy gap worst | no plan "
                                 "| best-of-N gap mean | node head >= best |\n"));
    assert_non_null(strstr(text, "| 1-8 | 2 | 6.00% | 10.00% | 0 | 2.00% | 1/2 |\n"));
    assert_non_null(strstr(text, "| 9-16 | 0 | - | - | 0 | - | - |\n"));
    assert_non_null(strstr(text, "| 33-64 | 1 | - | - | 1 | 1.00% | 0/1 |\n"));
    assert_null(strstr(text, "65+"));
    assert_null(strstr(text, "placements"));
    free(text);
    assert_int_equal(b[0].nodes_n, 0);
    /* the sixth method: its own column, the greedy one unchanged */
    spec.n_methods = 6;
    assert_int_equal(eval_bands(&spec, rows, N, b), 1);
    assert_int_equal(b[0].node_ok, 1);
    assert_int_equal(b[0].nodes_ok, 2);
    assert_int_equal(b[0].nodes_n, 2);
    assert_int_equal(b[3].nodes_ok, 1);
    assert_int_equal(b[3].nodes_n, 1);
    text = band_text(&spec, rows, N);
    assert_non_null(strstr(text, "| node head >= best | node head, best of 16 placements >= best |\n"
                                 "|---|---:|---:|---:|---:|---:|---:|---:|\n"));
    assert_non_null(strstr(text, "| 1-8 | 2 | 6.00% | 10.00% | 0 | 2.00% | 1/2 | 2/2 |\n"));
    assert_non_null(strstr(text, "| 9-16 | 0 | - | - | 0 | - | - | - |\n"));
    assert_non_null(strstr(text, "| 33-64 | 1 | - | - | 1 | 1.00% | 0/1 | 1/1 |\n"));
    free(text);
    /* no greedy policy method: no table */
    spec.n_methods = 1;
    assert_int_equal(eval_bands(&spec, rows, N, b), 0);
}

/* A real run: three held-out jobs through `strata eval`; the summary holds
 * the band table with its columns and three jobs in it. */
static void test_banded_run(void **state) {
    (void)state;
    const char *tmp = env_or("STRATA_TMP", "/tmp"), *src = env_or("STRATA_SRC", ".");
    char cfg[1200], text[4096], cmd[4096], path[1300];
    snprintf(cfg, sizeof cfg, "%s/q8-tiny.yaml", tmp);
    snprintf(text, sizeof text,
             "name: q8-tiny\nseeds: 1\ninstances:\n"
             "  - heldout: {seed: 8, count: 3, layers: [1, 8], types: [2, 3]}\n"
             "methods:\n  - exact\n"
             "  - {method: policy, checkpoint: %s/checkpoints/general.h5, decode: greedy}\n"
             "  - {method: policy, checkpoint: %s/checkpoints/general.h5, decode: sample, "
             "samples: 16}\n",
             src, src);
    write_file(cfg, text);
    snprintf(cmd, sizeof cmd, "OPENBLAS_NUM_THREADS=1 %s eval %s --out %s/q8-tiny --quiet",
             env_or("STRATA_BIN", "build/strata"), cfg, tmp);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(path, sizeof path, "%s/q8-tiny/summary.md", tmp);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *t = strstr(buf, "## By size band");
    assert_non_null(t);
    assert_non_null(strstr(t, "| layers | jobs | greedy gap mean | greedy gap worst | no plan "
                              "| best-of-N gap mean | node head >= best |"));
    assert_non_null(strstr(t, "| 1-8 | 3 |"));
    assert_non_null(strstr(t, "| 33-64 | 0 | - | - | 0 | - | - |"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_loaded),
        cmocka_unit_test(test_deterministic),  cmocka_unit_test(test_moments_differ),
        cmocka_unit_test(test_config_bounds),  cmocka_unit_test(test_curriculum),
        cmocka_unit_test(test_bands_by_hand),  cmocka_unit_test(test_banded_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
