/* test_spolicy.c -- the learned policy of strata simulate (sim/spolicy.h,
 * sim/spoltrain.h) and the combined objective (sim_objective).
 *
 * On the hand-worked cluster of tests/data/sim (G: 4 units, 8 samples/s,
 * $2/h each; C: 4 units, 4 samples/s, $0.5/h each; one-layer model whose
 * k units of a type run at exactly k x its rate) and its three-job trace
 * (test_sim.c works every event out): the objective of fcfs and
 * exact-wait, whole and from an instant on; the candidate set and every
 * feature of the first instant; the policy method deterministic for a
 * seed; the checkpoint round trip (same weights, same decisions); damaged,
 * foreign and missing checkpoints refused naming the file; the network's
 * gradients against finite differences; a train config's bad line; a
 * short training run that writes metrics and a checkpoint that loads.
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

#include "sim/methods.h"
#include "sim/sim.h"
#include "sim/spolicy.h"
#include "sim/spoltrain.h"
#include "sim/trace.h"
#include "tests/harness.h"

static sim_spec SP;

static sim_trace *three(void) {
    char path[2048], err[4096];
    snprintf(path, sizeof path, "%s/tests/data/sim/three-sim.yaml", harness_src());
    assert_int_equal(sim_spec_load(path, &SP, err, sizeof err), 0);
    sim_trace *t = sim_trace_load(SP.trace, SP.cluster, err, sizeof err);
    if (!t) fail_msg("%s", err);
    return t;
}

/* thirty: the 30-job trace of three-sim.yaml's generator (bursty, load
 * 0.9, deadlines 2x), on the same cluster. */
static sim_trace *thirty(void) {
    char path[2048], err[4096];
    snprintf(path, sizeof path, "%s/tests/data/sim/three-sim.yaml", harness_src());
    assert_int_equal(sim_spec_load(path, &SP, err, sizeof err), 0);
    sim_trace *t = sim_trace_generate(&SP.gen, SP.cluster, ".", err, sizeof err);
    if (!t) fail_msg("%s", err);
    return t;
}

static sim *run(const sim_trace *t, const char *method, spol_run *arg) {
    char err[4096];
    sim *s = sim_create_with(t, &t->models[0].run->cluster, sim_method_find(method), arg, err,
                             sizeof err);
    if (!s) fail_msg("%s", err);
    if (sim_run(s, err, sizeof err)) fail_msg("%s", err);
    return s;
}

/* The objective with weights cost 1, $2 per job-hour, $50 per miss.
 * fcfs (test_sim.c): j1 [0, 3600] $1, j2 (arrives 600) [600, 4200] $4, j3
 * (arrives 1200, deadline 1 h) [1200, 3000] $0.5, met. Completion times
 * 1 h + 1 h + 0.5 h = 2.5 job-hours: 5.5 + 5 = 10.5. From 1,000 s: the
 * cost of j3 (the only start from then) $0.5, and 2,600 + 3,200 + 1,800 s
 * lived from then = 7,600 s: 0.5 + 2 x 7600/3600.
 * exact-wait: j2 [3600, 7200] $2, j3 [7200, 9000] $0.5, 7,800 s after
 * arrival, deadline (due at 4,800 s) missed. Completion times 3,600 +
 * 6,600 + 7,800 s = 5 job-hours: 3.5 + 10 + 50 = 63.5. From 3,600 s: $2.5
 * of starts, 0 + 3,600 + 5,400 s = 2.5 h (x2 = 5), the miss (due after
 * 3,600 s): 57.5. From 5,000 s the miss fell due before: 0.5 + 2 x
 * (2,200 + 4,000)/3600. */
static void test_objective(void **state) {
    (void)state;
    sim_trace *t = three();
    sim_weights w = {1, 2, 50};
    sim *s = run(t, "fcfs", NULL);
    assert_true(sim_objective(s, &w, 0) == 10.5);
    assert_true(fabs(sim_objective(s, &w, 1000) - (0.5 + 2 * 7600 / 3600.0)) < 1e-12);
    sim_free(s);
    s = run(t, "exact-wait", NULL);
    assert_true(sim_objective(s, &w, 0) == 63.5);
    assert_true(sim_objective(s, &w, 3600) == 57.5);
    assert_true(fabs(sim_objective(s, &w, 5000) - (0.5 + 2 * 6200 / 3600.0)) < 1e-12);
    sim_free(s);
    /* the config's weights: three-sim.yaml gives none, so the defaults */
    assert_true(SP.w.cost == SIM_W_COST && SP.w.jct == SIM_W_JCT && SP.w.missed == SIM_W_MISSED);
    sim_trace_free(t);
}

/* A method that records the candidates of the first instant, starts
 * nothing. */
static spol_cands *CAPT;
static int capture_schedule(sim *s, void *st, char *err, size_t errlen) {
    (void)st;
    if (CAPT->n == 0 && spol_candidates(s, CAPT, err, errlen) < 0) return -1;
    return 0;
}

/* At 0 s j1 (R 8, S 28,800) is alone on the empty cluster. Its exact
 * plan, on the free units and on the empty cluster alike, is C x2 (theta
 * 8, $1/h), which is also the one-type plan on C at R: one candidate with
 * three flags. The others: C at 2R = C x4 (theta 16, $2/h), G at R = G x1
 * (theta 8, $2/h), G at 2R = G x2 (theta 16, $4/h). Nothing runs: no
 * wait. Per sample, against C x2's $1/h / 8: C x4 1x, G x1 2x, G x2 2x;
 * time, C x2's theta over theirs: 1/2, 1, 1/2. */
static void test_candidates(void **state) {
    (void)state;
    sim_trace *t = three();
    CAPT = spol_cands_create(1, 2);
    assert_non_null(CAPT);
    sim_method m = {"capture", "", NULL, NULL, capture_schedule};
    char err[4096];
    sim *s = sim_create(t, &t->models[0].run->cluster, &m, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(sim_run(s, err, sizeof err), 0);
    assert_int_equal(CAPT->n, 4);
    /* G is type 0, C type 1 */
    static const struct {
        int kind, g, c;
        double target, theta, price, x9, x10;
    } want[4] = {
        {SPOL_EXACT_FREE, 0, 2, 8, 8, 1, 0, 0},
        {SPOL_ONE_TYPE, 1, 0, 8, 8, 2, M_LN2, 0},
        {SPOL_ONE_TYPE, 2, 0, 16, 16, 4, M_LN2, -M_LN2},
        {SPOL_ONE_TYPE, 0, 4, 16, 16, 2, 0, -M_LN2},
    };
    for (int i = 0; i < 4; i++) {
        const spol_cand *c = &CAPT->c[i];
        assert_int_equal(c->job, 0);
        assert_int_equal(c->kind, want[i].kind);
        assert_int_equal(c->units[0], want[i].g);
        assert_int_equal(c->units[1], want[i].c);
        assert_true(c->target == want[i].target);
        assert_true(c->throughput == want[i].theta);
        assert_true(c->unit_price == want[i].price);
        assert_true(fabs(c->time - 28800 / want[i].theta) < 1e-9);
        assert_true(fabs(c->x[9] - want[i].x9) < 1e-6);
        assert_true(fabs(c->x[10] - want[i].x10) < 1e-6);
        int taken = want[i].g + want[i].c;
        assert_true(fabs(c->x[5] - log2(1.0 + taken) / 4) < 1e-6);
        assert_true(fabs(c->x[6] - taken / 8.0) < 1e-6);
        assert_true(fabs(c->x[7] - (want[i].g > want[i].c ? want[i].g : want[i].c) / 4.0) < 1e-6);
        assert_true(fabs(c->x[8] - taken / 4.0) < 1e-6);
        assert_true(c->x[4] == (want[i].target == 16 ? 1.0f : 0.0f));
        assert_true(fabs(c->x[11] - 28800 / want[i].theta / 3600 / 24) < 1e-6);
        assert_true(c->x[12] == 0 && c->x[13] == 0 && c->x[14] == 0 && c->x[15] == 0);
        /* cluster: all free, queue 1, its exact plan needs 2 of 8 free units */
        assert_true(c->x[16] == 1.0f);
        assert_true(fabs(c->x[17] - log(2.0) / 3) < 1e-6);
        assert_true(fabs(c->x[18] - log1p(2.0 / 9.0)) < 1e-6);
        assert_true(c->x[19] == 0);
    }
    /* the first is the exact plan three ways */
    assert_true(CAPT->c[0].x[1] == 1 && CAPT->c[0].x[2] == 1 && CAPT->c[0].x[3] == 1);
    assert_true(CAPT->c[1].x[1] == 0 && CAPT->c[1].x[3] == 1);
    sim_free(s);
    spol_cands_free(CAPT);
    sim_trace_free(t);
}

/* The window: the first 4 queued jobs, then the 4 shortest of the next
 * ones (up to position 64), ties by position. Ten jobs arrive at 0 s, all
 * R 8: j1-j9 of 28,800 samples (1 h on C x2), j10 of 800 (100 s). Looked
 * at: j1-j4, then j10 (position 9, x13 = ln 10 / ln 65) and j5-j7; not
 * j8, j9. */
static void test_window(void **state) {
    (void)state;
    char trace[1024], err[4096], cluster[1024];
    snprintf(trace, sizeof trace, "%s/spol-window.yaml", harness_tmp());
    snprintf(cluster, sizeof cluster, "%s/tests/data/sim/cluster.yaml", harness_src());
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fprintf(f, "jobs:\n");
    for (int i = 1; i <= 10; i++)
        fprintf(f, "  - {name: j%d, arrival: 0, model: %s/tests/data/sim/model.yaml, target: 8, "
                   "samples: %d}\n", i, harness_src(), i == 10 ? 800 : 28800);
    fclose(f);
    sim_trace *t = sim_trace_load(trace, cluster, err, sizeof err);
    if (!t) fail_msg("%s", err);
    CAPT = spol_cands_create(1, 2);
    sim_method m = {"capture", "", NULL, NULL, capture_schedule};
    sim *s = sim_create(t, &t->models[0].run->cluster, &m, err, sizeof err);
    assert_int_equal(sim_run(s, err, sizeof err), 0);
    int seen[10] = {0};
    for (int i = 0; i < CAPT->n; i++) {
        const spol_cand *c = &CAPT->c[i];
        assert_true(c->job >= 0 && c->job < 10);
        seen[c->job] = 1;
        assert_int_equal(c->qpos, c->job);
        assert_true(fabs(c->x[13] - log1p(c->job) / log(65.0)) < 1e-6);
    }
    for (int j = 0; j < 10; j++) assert_int_equal(seen[j], j != 7 && j != 8);
    sim_free(s);
    spol_cands_free(CAPT);
    sim_trace_free(t);
}

/* same_outcomes: 1 when every job of the two runs has the same figures. */
static int same_outcomes(const sim *a, const sim *b, int n) {
    const sim_outcome *x = sim_outcomes(a), *y = sim_outcomes(b);
    for (int j = 0; j < n; j++)
        if (x[j].state != y[j].state || memcmp(&x[j].start, &y[j].start, sizeof(double)) ||
            memcmp(&x[j].finish, &y[j].finish, sizeof(double)) || strcmp(x[j].plan, y[j].plan))
            return 0;
    return 1;
}

/* The policy decodes the same plans for the same network and seed. */
static void test_deterministic(void **state) {
    (void)state;
    sim_trace *t = thirty();
    char err[1024];
    spol_net *net = spol_net_create(8, 3, err, sizeof err);
    assert_non_null(net);
    spol_run g = {net, 0, {0, 0, 0}, NULL};
    sim *a = run(t, "policy", &g), *b = run(t, "policy", &g);
    assert_true(same_outcomes(a, b, t->n_jobs));
    sim_summary u;
    sim_summarise(a, &u);
    assert_int_equal(u.done + u.rejected, t->n_jobs); /* an idle cluster never waits */
    sim_free(a);
    sim_free(b);
    spol_run r1 = {net, 1, {0, 0, 0}, NULL}, r2 = r1, r3 = r1;
    rng_init(&r1.rng, 5);
    rng_init(&r2.rng, 5);
    rng_init(&r3.rng, 6);
    a = run(t, "policy", &r1);
    b = run(t, "policy", &r2);
    sim *c = run(t, "policy", &r3);
    assert_true(same_outcomes(a, b, t->n_jobs));
    assert_false(same_outcomes(a, c, t->n_jobs));
    sim_free(a);
    sim_free(b);
    sim_free(c);
    /* without a network the method refuses to start */
    sim *s = sim_create(t, &t->models[0].run->cluster, sim_method_find("policy"), err, sizeof err);
    assert_null(s);
    assert_non_null(strstr(err, "checkpoint"));
    spol_net_free(net);
    sim_trace_free(t);
}

/* Save, load: the same weights bit for bit and the same decisions. */
static void test_ckpt_round_trip(void **state) {
    (void)state;
    sim_trace *t = thirty();
    char err[2048], path[1024];
    snprintf(path, sizeof path, "%s/spolicy-rt.h5", harness_tmp());
    spol_net *net = spol_net_create(12, 9, err, sizeof err);
    assert_non_null(net);
    spol_meta m = {42, 9, 336, 1.5, "mode: sim\n"};
    if (spol_save(path, net, &m, err, sizeof err)) fail_msg("%s", err);
    int64_t step = -1;
    spol_net *back = spol_load(path, &step, err, sizeof err);
    if (!back) fail_msg("%s", err);
    assert_int_equal(step, 42);
    assert_int_equal(spol_net_hidden(back), 12);
    nn_params *p = spol_net_params(net), *q = spol_net_params(back);
    assert_int_equal(p->total, q->total);
    assert_memory_equal(p->params, q->params, sizeof(float) * p->total);
    spol_run ra = {net, 0, {0, 0, 0}, NULL}, rb = {back, 0, {0, 0, 0}, NULL};
    sim *a = run(t, "policy", &ra), *b = run(t, "policy", &rb);
    assert_true(same_outcomes(a, b, t->n_jobs));
    sim_free(a);
    sim_free(b);
    spol_net_free(back);
    spol_net_free(net);
    sim_trace_free(t);
}

/* Damaged, foreign and missing files: NULL and a message naming the file. */
static void test_ckpt_bad(void **state) {
    (void)state;
    char err[2048], good[1024], bad[1024];
    snprintf(good, sizeof good, "%s/spolicy-good.h5", harness_tmp());
    spol_net *net = spol_net_create(4, 1, err, sizeof err);
    spol_meta m = {1, 1, 8, 1, NULL};
    assert_int_equal(spol_save(good, net, &m, err, sizeof err), 0);
    spol_net_free(net);
    /* garbage */
    snprintf(bad, sizeof bad, "%s/spolicy-garbage.h5", harness_tmp());
    FILE *f = fopen(bad, "wb");
    fputs("this is not an HDF5 file at all\n", f);
    fclose(f);
    assert_null(spol_load(bad, NULL, err, sizeof err));
    assert_non_null(strstr(err, bad));
    /* the first half of a good one */
    size_t len;
    char *buf = harness_slurp(good, &len);
    assert_non_null(buf);
    snprintf(bad, sizeof bad, "%s/spolicy-half.h5", harness_tmp());
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)len / 2, f);
    fclose(f);
    free(buf);
    assert_null(spol_load(bad, NULL, err, sizeof err));
    assert_non_null(strstr(err, bad));
    /* the placement policy's checkpoint: a nets checkpoint of another kind */
    snprintf(bad, sizeof bad, "%s/checkpoints/general.h5", harness_src());
    assert_null(spol_load(bad, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not a strata sim policy checkpoint"));
    assert_non_null(strstr(err, "placement policy"));
    /* missing */
    snprintf(bad, sizeof bad, "%s/spolicy-none.h5", harness_tmp());
    remove(bad);
    assert_null(spol_load(bad, NULL, err, sizeof err));
    assert_non_null(strstr(err, bad));
    /* and the CLI says so with status 2 */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' simulate '%s/tests/data/sim/three-sim.yaml' --method policy "
                              "--policy '%s/spolicy-garbage.h5' 2>&1",
             harness_bin(), harness_src(), harness_tmp());
    assert_int_equal(harness_run(cmd), 2);
    assert_non_null(strstr(harness_out, "spolicy-garbage.h5"));
}

/* d(sum_i c_i logit_i)/d(every parameter) against central differences. */
static void test_gradients(void **state) {
    (void)state;
    char err[512];
    const int H = 5, N = 4;
    spol_net *net = spol_net_create(H, 11, err, sizeof err);
    nn_params *p = spol_net_params(net);
    /* biases away from zero so that their gradients are exercised */
    for (size_t i = 0; i < p->total; i++) p->params[i] += 0.05f * (float)((i * 7) % 5) - 0.1f;
    float x[4 * SPOL_FEATURES], c[4] = {0.7f, -1.3f, 0.4f, 1.1f}, lg[4];
    for (int i = 0; i < N * SPOL_FEATURES; i++) x[i] = (float)sin(0.37 * i + 0.2);
    float *work = malloc(sizeof(float) * spol_work_size(N, H));
    nn_params_zero_grad(p);
    spol_forward(lg, work, net, x, N);
    spol_backward(net, c, work, x, N);
    int checked = 0;
    for (int ti = 0; ti < p->n; ti++) {
        for (size_t k = 0; k < p->size[ti]; k++) {
            float *w = nn_param(p, ti) + k;
            float keep = *w;
            double eps = 1e-2, lo = 0, hi = 0;
            *w = keep + (float)eps;
            spol_forward(lg, work, net, x, N);
            for (int i = 0; i < N; i++) hi += c[i] * lg[i];
            *w = keep - (float)eps;
            spol_forward(lg, work, net, x, N);
            for (int i = 0; i < N; i++) lo += c[i] * lg[i];
            *w = keep;
            double fd = (hi - lo) / (2 * eps), an = nn_grad(p, ti)[k];
            if (fabs(fd - an) > 2e-3 + 2e-2 * fabs(fd))
                fail_msg("tensor %s/%s [%zu]: analytic %.6g, finite differences %.6g",
                         p->spec[ti].layer, p->spec[ti].name, k, an, fd);
            checked++;
        }
    }
    assert_int_equal(checked, H * SPOL_FEATURES + H + H * H + H + H + 1);
    free(work);
    spol_net_free(net);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A bad line of a sim train config: file:line:col and the key. */
static void test_conf_bad(void **state) {
    (void)state;
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/spt-bad.yaml", harness_tmp());
    char text[4096];
    snprintf(text, sizeof text,
             "mode: sim\ncluster: %s/tests/data/sim/cluster.yaml\nmodels: [%s/tests/data/sim/model.yaml]\n"
             "load: [0.5, 0.7]\nobjective: {cost: 1, jct: fast}\nout: x\n",
             harness_src(), harness_src());
    write_file(path, text);
    assert_int_equal(spt_conf_is(path), 1);
    assert_null(spt_conf_load(path, err, sizeof err));
    assert_non_null(strstr(err, ":5:"));
    assert_non_null(strstr(err, "objective.jct"));
    /* an agent config is not one */
    snprintf(path, sizeof path, "%s/configs/train/general.yaml", harness_src());
    assert_int_equal(spt_conf_is(path), 0);
}

/* Three steps of training on 12-job traces: metrics.csv has a row per
 * step, last.h5 loads with the step count. */
static void test_train_smoke(void **state) {
    (void)state;
    char path[1024], err[4096], text[4096];
    snprintf(path, sizeof path, "%s/spt-smoke.yaml", harness_tmp());
    snprintf(text, sizeof text,
             "mode: sim\ncluster: %s/tests/data/sim/cluster.yaml\nmodels: [%s/tests/data/sim/model.yaml]\n"
             "jobs: 12\nload: [0.5, 0.7]\ndeadline_factor: 2\nobjective: {cost: 1, jct: 2, missed: 50}\n"
             "hidden: 8\ntraces: 1\nepisodes: 2\nvalid: 1\neval_every: 2\nsteps: 3\n"
             "out: %s/spt-smoke\n",
             harness_src(), harness_src(), harness_tmp());
    write_file(path, text);
    spt_conf *cf = spt_conf_load(path, err, sizeof err);
    if (!cf) fail_msg("%s", err);
    spt *t = spt_create(cf, err, sizeof err);
    if (!t) fail_msg("%s", err);
    while (!spt_done(t))
        if (spt_step(t, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(spt_last(t)->step, 3);
    assert_true(spt_last(t)->episodes == 6);
    if (spt_validate(t, err, sizeof err)) fail_msg("%s", err);
    assert_true(isfinite(spt_last(t)->valid_obj) && spt_last(t)->valid_best_h > 0);
    spt_free(t);
    snprintf(path, sizeof path, "%s/spt-smoke/metrics.csv", harness_tmp());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF) lines += ch == '\n';
    fclose(f);
    assert_int_equal(lines, 4);
    snprintf(path, sizeof path, "%s/spt-smoke/last.h5", harness_tmp());
    int64_t step = 0;
    spol_net *n = spol_load(path, &step, err, sizeof err);
    if (!n) fail_msg("%s", err);
    assert_int_equal(step, 3);
    spol_net_free(n);
    spt_conf_free(cf);
}

/* Through the program: strata train with a mode: sim config, a second run
 * into the same folder refused, the checkpoint played by strata simulate
 * with every method judged on the config's objective. */
static void test_cli(void **state) {
    (void)state;
    char path[1024], text[4096], cmd[8192];
    snprintf(path, sizeof path, "%s/spt-cli.yaml", harness_tmp());
    snprintf(text, sizeof text,
             "mode: sim\ncluster: %s/tests/data/sim/cluster.yaml\nmodels: [%s/tests/data/sim/model.yaml]\n"
             "jobs: 10\nload: 0.6\nhidden: 8\ntraces: 1\nepisodes: 2\nvalid: 1\nsteps: 2\n"
             "out: %s/spt-cli\n",
             harness_src(), harness_src(), harness_tmp());
    write_file(path, text);
    snprintf(cmd, sizeof cmd, "'%s' train '%s' --overwrite --json --quiet", harness_bin(), path);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "\"mode\": \"sim\""));
    assert_non_null(strstr(harness_out, "\"steps\": 2"));
    snprintf(cmd, sizeof cmd, "'%s' train '%s' --quiet 2>&1", harness_bin(), path);
    assert_int_equal(harness_run(cmd), 2);
    assert_non_null(strstr(harness_out, "from an earlier run"));
    /* the sim config with an objective, played with the checkpoint */
    char sc[1024];
    snprintf(sc, sizeof sc, "%s/spt-cli-sim.yaml", harness_tmp());
    snprintf(text, sizeof text,
             "cluster: %s/tests/data/sim/cluster.yaml\ntrace: %s/tests/data/sim/three.yaml\n"
             "methods: [fcfs, policy]\npolicy: spt-cli/last.h5\nobjective: {cost: 1, jct: 2, missed: 50}\n",
             harness_src(), harness_src());
    write_file(sc, text);
    snprintf(cmd, sizeof cmd, "'%s' simulate '%s' --json", harness_bin(), sc);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "\"objective\": 10.5")); /* fcfs, test_objective */
    assert_non_null(strstr(harness_out, "\"method\": \"policy\""));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objective),       cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_deterministic),   cmocka_unit_test(test_ckpt_round_trip),
        cmocka_unit_test(test_ckpt_bad),        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_conf_bad),        cmocka_unit_test(test_train_smoke),
        cmocka_unit_test(test_cli),             cmocka_unit_test(test_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
