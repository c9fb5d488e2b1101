/* test_sim.c -- strata simulate: a hand-worked trace, determinism, bad
 * trace lines, the generator's presets (their draws against their stated
 * distributions).
 *
 * tests/data/sim holds a cluster of two types with round figures and a
 * one-layer model on which a stage of k units of a type with F FLOP/s
 * runs at exactly k * F samples/s (1 FLOP per sample, alpha 0), so every
 * plan, event time and cost of the three-job trace three.yaml can be
 * worked out by hand (below) and is asserted exactly, method by method.
 *
 * The cluster: G, 4 units, 8 samples/s and $2/h per unit; C, 4 units, 4
 * samples/s and $0.5/h per unit. Per sample C is the cheaper ($0.125/h per
 * sample/s against $0.25/h), per unit G the faster. A job provisioned for
 * R samples/s needs ceil(R/8) units of G or ceil(R/4) of C; its plan is one
 * type (one layer). Time T = S / theta, cost = T/3600 * units * price.
 *
 * The trace: j1 at 0 s (R 8, S 28,800), j2 at 600 s (R 16, S 57,600), j3 at
 * 1,200 s (R 8, S 14,400, deadline 1 h).
 * Exact plans on the empty cluster: j1 C x2 (theta 8, $1/h), j2 C x4
 * (theta 16, $2/h), j3 C x2.
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
#include "sim/trace.h"
#include "tests/harness.h"

typedef struct {
    const char *name;
    double start, finish, cost;
    const char *plan;
} expect;

/* run_cfg plays tests/data/sim/CFG (a trace of n jobs, one of them with a
 * deadline) with method `method` and checks every job. */
static void run_cfg(const char *cfg, const char *method, const expect *want, int n, int missed,
                    double total) {
    char path[2048], err[4096];
    snprintf(path, sizeof path, "%s/tests/data/sim/%s", harness_src(), cfg);
    static sim_spec sp;
    assert_int_equal(sim_spec_load(path, &sp, err, sizeof err), 0);
    sim_trace *t = sim_trace_load(sp.trace, sp.cluster, err, sizeof err);
    if (!t) fail_msg("%s", err);
    const sim_method *m = sim_method_find(method);
    assert_non_null(m);
    sim *s = sim_create(t, &t->models[0].run->cluster, m, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(sim_run(s, err, sizeof err), 0);
    const sim_outcome *out = sim_outcomes(s);
    assert_int_equal(t->n_jobs, n);
    for (int j = 0; j < n; j++) {
        assert_string_equal(t->jobs[j].name, want[j].name);
        assert_int_equal(out[j].state, SIM_DONE);
        if (out[j].start != want[j].start || out[j].finish != want[j].finish ||
            out[j].cost != want[j].cost || strcmp(out[j].plan, want[j].plan))
            fail_msg("%s %s: start %.17g finish %.17g cost %.17g plan %s; want %g %g %g %s",
                     method, want[j].name, out[j].start, out[j].finish, out[j].cost, out[j].plan,
                     want[j].start, want[j].finish, want[j].cost, want[j].plan);
    }
    sim_summary u;
    sim_summarise(s, &u);
    assert_int_equal(u.done, n);
    assert_int_equal(u.deadline_jobs, 1);
    assert_int_equal(u.missed, missed);
    assert_true(u.cost == total);
    sim_free(s);
    sim_trace_free(t);
}

/* run_three plays three.yaml with method `method` and checks every job. */
static void run_three(const char *method, const expect *want, int missed, double total) {
    run_cfg("three-sim.yaml", method, want, 3, missed, total);
}

/* fcfs: j1 gets its exact plan C x2 on the empty cluster: [0, 3600] (T =
 * 28,800 / 8), $1. At 600 s only 2 C units are free: C cannot reach 16
 * samples/s, the exact plan on the free units is G x2 (theta 16, $4/h):
 * [600, 4200], $4. At 1,200 s C x2 is free again for j3: [1200, 3000] (T =
 * 14,400 / 8 = 1,800 s), $0.5, within its 1 h deadline. Total $5.50.
 * Busy shares over the makespan 4,200 s: G 2 units x 3,600 s / (4 x 4,200)
 * = 3/7; C (2 x 3,600 + 2 x 1,800) / 16,800 = 9/14. */
static void test_fcfs(void **state) {
    (void)state;
    const expect want[3] = {{"j1", 0, 3600, 1.0, "Cx2"},
                            {"j2", 600, 4200, 4.0, "Gx2"},
                            {"j3", 1200, 3000, 0.5, "Cx2"}};
    run_three("fcfs", want, 0, 5.5);
}

/* exact-wait: j2 waits for its C x4 until j1 ends at 3,600 s: [3600, 7200],
 * $2; j3 waits behind it (head of line) and for C x2 until 7,200 s: [7200,
 * 9000], $0.5, 7,800 s after arrival: its deadline is missed. Total $3.50. */
static void test_exact_wait(void **state) {
    (void)state;
    const expect want[3] = {{"j1", 0, 3600, 1.0, "Cx2"},
                            {"j2", 3600, 7200, 2.0, "Cx4"},
                            {"j3", 7200, 9000, 0.5, "Cx2"}};
    run_three("exact-wait", want, 1, 3.5);
}

/* smd: its candidates are the job's plans at R x 1, 1.1, 1.25, 1.5, 1.75,
 * 2, 2.5. Alone at 0 s, j1 takes the fastest, G x3 at R' = 20 (theta 24):
 * [0, 1200], 1/3 h x $6/h = $2. At 600 s 1 G and 4 C are free; j2's only
 * fitting candidate is C x4 (theta 16): [600, 4200], $2. At 1,200 s j1
 * ends and j3 arrives; the method is asked once the instant's events are
 * all in, so j3 sees G free again and takes G x3 (theta 24): [1200, 1800],
 * 1/6 h x $6/h = $1. Total $5. (Asked at each event, with the arrival
 * first, j3 would get G x1 only.) */
static void test_smd(void **state) {
    (void)state;
    const expect want[3] = {{"j1", 0, 1200, 2.0, "Gx3"},
                            {"j2", 600, 4200, 2.0, "Cx4"},
                            {"j3", 1200, 1800, 1.0, "Gx3"}};
    run_three("smd", want, 0, 5.0);
}

/* gavel: per unit G gives 8 samples/s and C 4, so every job's normalised
 * throughput is 1 on G and 0.5 on C: each takes the one-type plan on G
 * while it fits. j1 G x1 [0, 3600] $2; j2 G x2 [600, 4200] $4; j3 G x1
 * [1200, 3000] $1. Total $7. */
static void test_gavel(void **state) {
    (void)state;
    const expect want[3] = {{"j1", 0, 3600, 2.0, "Gx1"},
                            {"j2", 600, 4200, 4.0, "Gx2"},
                            {"j3", 1200, 3000, 1.0, "Gx1"}};
    run_three("gavel", want, 0, 7.0);
}

/* sjf on three.yaml: the queue never holds two jobs, so it plays as fcfs
 * (each arrival gets the exact plan on the free units at once). */
static void test_sjf_three(void **state) {
    (void)state;
    const expect want[3] = {{"j1", 0, 3600, 1.0, "Cx2"},
                            {"j2", 600, 4200, 4.0, "Gx2"},
                            {"j3", 1200, 3000, 0.5, "Cx2"}};
    run_three("sjf", want, 0, 5.5);
}

/* sjf on six.yaml, a queue it reorders. Expected run times at target
 * (S / R): a 3,600 s, b 7,200, c 7,200, d 1,800, e 900, f 900.
 * At 0 s a (first: shorter) takes its exact plan C x4 (theta 16, $2/h;
 * G x2 would be $4/h): [0, 3600], $2; b takes G x4 (theta 32, $8/h; C
 * cannot reach 32): [0, 7200], $16. The cluster is full; c (60 s), d
 * (120), e (180), f (240) queue. At 3,600 s a ends, C x4 is free; the
 * order is e (900 s), f (900 s, arrived after e), d (1,800), c (7,200).
 * e: C x1 (theta 4, $0.5/h): [3600, 4500], $0.125. f needs 32 samples/s,
 * only G reaches it and G is taken: passed over (backfilling). d: C x2
 * (theta 8): [3600, 5400], $0.5. c needs 16: 1 C left, passed over. At
 * 4,500 s e ends (2 C free): neither f nor c fits. At 5,400 s d ends, C x4
 * is free: c takes it: [5400, 12600], $4, completion 12,540 s > its 3 h
 * deadline (10,800 s): missed. At 7,200 s b ends: f takes G x4 (theta 32):
 * [7200, 8100], $2. Total $24.625.
 * (fcfs instead starts c at 3,600 s on C x4 and meets its deadline; without
 * backfilling d would wait behind f until 7,200 s.) */
static void test_sjf(void **state) {
    (void)state;
    const expect want[6] = {{"a", 0, 3600, 2.0, "Cx4"},       {"b", 0, 7200, 16.0, "Gx4"},
                            {"c", 5400, 12600, 4.0, "Cx4"},   {"d", 3600, 5400, 0.5, "Cx2"},
                            {"e", 3600, 4500, 0.125, "Cx1"},  {"f", 7200, 8100, 2.0, "Gx4"}};
    run_cfg("six-sim.yaml", "sjf", want, 6, 1, 24.625);
}

/* sjf's ties go by arrival (tie.yaml). x (R 32) takes G x4 and y (R 16)
 * C x4, both [0, 3600] ($8 and $2). p (10 s) and q (20 s) both expect
 * 18,000 / 16 = 1,125 s and queue. At 3,600 s everything is free; p, the
 * earlier, gets the cheaper plan C x4 ($2/h): [3600, 4725], $0.625; q
 * then gets G x2 ($4/h): [3600, 4725], $1.25, within its 2 h deadline.
 * Total $11.875. (Ties the other way round swap p's and q's plans.) */
static void test_sjf_tie(void **state) {
    (void)state;
    const expect want[4] = {{"x", 0, 3600, 8.0, "Gx4"},
                            {"y", 0, 3600, 2.0, "Cx4"},
                            {"p", 3600, 4725, 0.625, "Cx4"},
                            {"q", 3600, 4725, 1.25, "Gx2"}};
    run_cfg("tie-sim.yaml", "sjf", want, 4, 0, 11.875);
}

/* The occupancy curve and utilisation of fcfs (worked out above). */
static void test_utilisation(void **state) {
    (void)state;
    char path[2048], err[4096];
    snprintf(path, sizeof path, "%s/tests/data/sim/three-sim.yaml", harness_src());
    static sim_spec sp;
    assert_int_equal(sim_spec_load(path, &sp, err, sizeof err), 0);
    sim_trace *t = sim_trace_load(sp.trace, sp.cluster, err, sizeof err);
    assert_non_null(t);
    sim *s = sim_create(t, &t->models[0].run->cluster, sim_method_find("fcfs"), err, sizeof err);
    assert_int_equal(sim_run(s, err, sizeof err), 0);
    sim_summary u;
    sim_summarise(s, &u);
    assert_true(u.makespan == 4200);
    assert_true(fabs(u.util[0] - 3.0 / 7.0) < 1e-15);
    assert_true(fabs(u.util[1] - 9.0 / 14.0) < 1e-15);
    /* (G, C) busy: 0 (0,2), 600 (2,2), 1200 (2,4), 3000 (2,2), 3600 (2,0), 4200 (0,0) */
    int n;
    const sim_sample *sm = sim_samples(s, &n);
    const double at[6] = {0, 600, 1200, 3000, 3600, 4200};
    const int g[6] = {0, 2, 2, 2, 2, 0}, c[6] = {2, 2, 4, 2, 0, 0};
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        assert_true(sm[i].time == at[i]);
        assert_int_equal(sm[i].used[0], g[i]);
        assert_int_equal(sm[i].used[1], c[i]);
    }
    /* the nodes: no nodes are listed, so one virtual node per type */
    assert_int_equal(sim_n_nodes(s), 2);
    sim_free(s);
    sim_trace_free(t);
}

/* A job no plan can serve (R = 100: G reaches at most 32 samples/s) is
 * rejected on arrival; the others run as before. */
static void test_rejected(void **state) {
    (void)state;
    char trace[1024], err[4096], cluster[1024];
    snprintf(trace, sizeof trace, "%s/sim-reject.yaml", harness_tmp());
    snprintf(cluster, sizeof cluster, "%s/tests/data/sim/cluster.yaml", harness_src());
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fprintf(f, "jobs:\n  - {name: a, arrival: 0, model: %s/tests/data/sim/model.yaml, target: 100,"
               " samples: 10}\n  - {name: b, arrival: 1, model: %s/tests/data/sim/model.yaml,"
               " target: 8, samples: 80}\n", harness_src(), harness_src());
    fclose(f);
    sim_trace *t = sim_trace_load(trace, cluster, err, sizeof err);
    if (!t) fail_msg("%s", err);
    int nm;
    const sim_method *all = sim_methods(&nm);
    /* the policy method with an untrained network (its argument) */
    spol_net *net = spol_net_create(4, 1, err, sizeof err);
    spol_run arg = {net, 0, {0, 0, 0}, NULL};
    for (int i = 0; i < nm; i++) {
        sim *s = sim_create_with(t, &t->models[0].run->cluster, &all[i], &arg, err, sizeof err);
        assert_non_null(s);
        assert_int_equal(sim_run(s, err, sizeof err), 0);
        const sim_outcome *o = sim_outcomes(s);
        assert_int_equal(o[0].state, SIM_REJECTED);
        assert_int_equal(o[1].state, SIM_DONE);
        assert_true(o[1].start == 1);
        sim_free(s);
    }
    spol_net_free(net);
    sim_trace_free(t);
}

/* Jobs listed out of order are played by arrival, ties in file order. */
static void test_order(void **state) {
    (void)state;
    char trace[1024], err[4096], cluster[1024];
    snprintf(trace, sizeof trace, "%s/sim-order.yaml", harness_tmp());
    snprintf(cluster, sizeof cluster, "%s/tests/data/sim/cluster.yaml", harness_src());
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    const char *names[4] = {"c", "a", "b", "d"};
    const double at[4] = {5, 0, 0, 1};
    fprintf(f, "jobs:\n");
    for (int i = 0; i < 4; i++)
        fprintf(f, "  - {name: %s, arrival: %g, model: %s/tests/data/sim/model.yaml}\n", names[i],
                at[i], harness_src());
    fclose(f);
    sim_trace *t = sim_trace_load(trace, cluster, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_string_equal(t->jobs[0].name, "a");
    assert_string_equal(t->jobs[1].name, "b");
    assert_string_equal(t->jobs[2].name, "d");
    assert_string_equal(t->jobs[3].name, "c");
    /* target and samples default to the model file's */
    assert_true(t->jobs[0].target == 1 && t->jobs[0].samples == 1 && t->jobs[0].deadline < 0);
    sim_trace_free(t);
}

/* Same seed, same bytes: two runs of a generated trace print identical
 * --json; another seed prints something else. */
static void test_deterministic(void **state) {
    (void)state;
    char cmd[4096];
    static char first[1 << 20];
    const char *fmt = "%s simulate %s/tests/data/sim/three-sim.yaml --generate 40 --seed %d --json";
    snprintf(cmd, sizeof cmd, fmt, harness_bin(), harness_src(), 3);
    assert_int_equal(harness_run(cmd), 0);
    assert_true(strlen(harness_out) > 1000);
    strcpy(first, harness_out);
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(first, harness_out);
    snprintf(cmd, sizeof cmd, fmt, harness_bin(), harness_src(), 4);
    assert_int_equal(harness_run(cmd), 0);
    assert_true(strcmp(first, harness_out) != 0);
}

/* A generated trace written with --write-trace and played back gives the
 * same figures as the generated one. */
static void test_write_trace(void **state) {
    (void)state;
    char cmd[4096], tr[1024], cfg[1024];
    static char first[1 << 20];
    snprintf(tr, sizeof tr, "%s/sim-written.yaml", harness_tmp());
    snprintf(cfg, sizeof cfg, "%s/sim-written-sim.yaml", harness_tmp());
    snprintf(cmd, sizeof cmd, "%s simulate %s/tests/data/sim/three-sim.yaml --generate 25 --seed 9"
             " --write-trace %s --json | sed 1,6d", harness_bin(), harness_src(), tr);
    assert_int_equal(harness_run(cmd), 0);
    strcpy(first, harness_out);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "cluster: %s/tests/data/sim/cluster.yaml\ntrace: %s\n", harness_src(), tr);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s simulate %s --json | sed 1,6d", harness_bin(), cfg);
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(first, harness_out);
}

/* --out writes results.csv (the hand-worked fcfs figures, row by row),
 * summary.md and the plots; --json carries the occupancy curve. */
static void test_out_dir(void **state) {
    (void)state;
    char cmd[4096], dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/sim-out", harness_tmp());
    snprintf(cmd, sizeof cmd, "rm -rf %s && %s simulate %s/tests/data/sim/three-sim.yaml --method fcfs"
             " --out %s --quiet && cat %s/results.csv", dir, harness_bin(), harness_src(), dir, dir);
    assert_int_equal(harness_run(cmd), 0);
    const char *want =
        "method,job,model,state,arrival,target,samples,deadline,start,finish,queue_delay,"
        "completion_time,throughput,cost,deadline_met,plan\n"
        "fcfs,j1,unit,done,0,8,28800,,0,3600,0,3600,8,1,,Cx2\n"
        "fcfs,j2,unit,done,600,16,57600,,600,4200,0,3600,16,4,,Gx2\n"
        "fcfs,j3,unit,done,1200,8,14400,3600,1200,3000,0,1800,8,0.5,yes,Cx2\n";
    assert_string_equal(harness_out, want);
    snprintf(path, sizeof path, "%s/summary.md", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/plots/jct_cdf.png", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s simulate %s/tests/data/sim/three-sim.yaml --method fcfs --json"
             " | tr -d ' \n' | grep -o '\"occupancy\":{[^}]*}[^}]*}'", harness_bin(),
             harness_src());
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(harness_out, "\"occupancy\":{\"time\":[0.0,600.0,1200.0,3000.0,3600.0,"
                                     "4200.0],\"busy\":{\"G\":[0,2,2,2,2,0],\"C\":[2,2,4,2,0,0]}}\n");
}

/* A bad trace line is reported with file:line:col and the key. */
static void test_bad_line(void **state) {
    (void)state;
    char trace[1024], cfg[1024], cmd[4096], want[2048];
    snprintf(trace, sizeof trace, "%s/sim-bad.yaml", harness_tmp());
    snprintf(cfg, sizeof cfg, "%s/sim-bad-sim.yaml", harness_tmp());
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fprintf(f, "jobs:\n  - {name: a, arrival: 0, model: %s/tests/data/sim/model.yaml, target: 8,"
               " samples: 10}\n  - {name: b, arrival: 5, model: %s/tests/data/sim/model.yaml, "
               "target: fast, samples: 10}\n", harness_src(), harness_src());
    fclose(f);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "cluster: %s/tests/data/sim/cluster.yaml\ntrace: %s\n", harness_src(), trace);
    fclose(f);
    /* the value "fast" starts after "  - {name: b, arrival: 5, model: SRC/tests/data/sim/model.yaml, target: " */
    int col = (int)strlen("  - {name: b, arrival: 5, model: ") + (int)strlen(harness_src()) +
              (int)strlen("/tests/data/sim/model.yaml, target: ") + 1;
    snprintf(want, sizeof want, "strata: %s:3:%d: jobs[1].target: expected a number", trace, col);
    snprintf(cmd, sizeof cmd, "%s simulate %s 2>&1", harness_bin(), cfg);
    assert_int_equal(harness_run(cmd), 2);
    if (strncmp(harness_out, want, strlen(want))) fail_msg("got: %s\nwant: %s", harness_out, want);
    /* a model file that does not exist: at the model's value */
    f = fopen(trace, "w");
    assert_non_null(f);
    fprintf(f, "jobs:\n  - {name: a, arrival: 0, model: nowhere.yaml}\n");
    fclose(f);
    snprintf(want, sizeof want, "strata: %s:2:34: jobs[0].model: ", trace);
    assert_int_equal(harness_run(cmd), 2);
    if (strncmp(harness_out, want, strlen(want))) fail_msg("got: %s\nwant: %s", harness_out, want);
    /* an unknown key, with the walker's suggestion */
    f = fopen(trace, "w");
    assert_non_null(f);
    fprintf(f, "jobs:\n  - {name: a, arival: 0, model: x.yaml}\n");
    fclose(f);
    snprintf(want, sizeof want, "strata: %s:2:15: jobs[0].arival: unknown key", trace);
    assert_int_equal(harness_run(cmd), 2);
    if (strncmp(harness_out, want, strlen(want))) fail_msg("got: %s\nwant: %s", harness_out, want);
}

/* ---- the generator's presets (docs/simulate.md, "The generator") ---------------------- */

#define DRAWS 20000

/* The published figures each preset's table must keep: sizes' median and
 * mean GPUs per job, durations' median, mean and maximum (s). Philly's
 * from Gavel's generator; Helios's and PAI's from the cluster summaries
 * of HeliosArtifact and AcmeTrace (docs/simulate.md quotes them). */
typedef struct {
    sim_preset p;
    double size_median, size_mean, dur_median, dur_mean, dur_max;
} published;
static const published PUBLISHED[3] = {
    {SIM_PRESET_PHILLY, 1, 1.0 * 0.70 + 2 * 0.10 + 4 * 0.15 + 8 * 0.05, 0, 0, 0},
    {SIM_PRESET_HELIOS, 1, 3.716, 206, 6651.681, 4320009},
    {SIM_PRESET_PAI, 0.5, 0.683, 480.667, 4787.109, 626371},
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The tables themselves: shares sum to 1, their median and mean are the
 * published ones (the mean within 0.1%: the shares are round figures). */
static void test_preset_tables(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        const sim_preset_info *in = sim_preset_get(PUBLISHED[k].p);
        assert_non_null(in);
        double sum = 0, mean = 0, median = -1;
        for (int i = 0; i < in->n_sizes; i++) {
            sum += in->share[i];
            mean += in->share[i] * in->size[i];
            if (median < 0 && sum >= 0.5) median = in->size[i];
        }
        if (fabs(sum - 1) > 1e-12 || median != PUBLISHED[k].size_median ||
            fabs(mean / PUBLISHED[k].size_mean - 1) > 1e-3)
            fail_msg("%s: shares sum to %.17g, median %g, mean %g; published median %g, mean %g",
                     in->name, sum, median, mean, PUBLISHED[k].size_median,
                     PUBLISHED[k].size_mean);
        assert_true(in->dur_median == PUBLISHED[k].dur_median);
        assert_true(in->dur_mean == PUBLISHED[k].dur_mean);
        assert_true(in->dur_max == PUBLISHED[k].dur_max);
    }
    assert_null(sim_preset_get((sim_preset)3));
    /* philly's sizes are Gavel's 70/10/15/5 */
    const sim_preset_info *ph = sim_preset_get(SIM_PRESET_PHILLY);
    assert_int_equal(ph->n_sizes, 4);
    assert_true(ph->share[0] == 0.70 && ph->share[1] == 0.10 && ph->share[2] == 0.15 &&
                ph->share[3] == 0.05);
}

/* 20,000 sizes of each preset: every size's share is within 4.5 standard
 * deviations of a binomial share (4.5 sqrt(p(1-p)/n): about 0.016 for
 * p = 0.55), and nothing else is drawn. A correct sampler leaves that band
 * with odds of about 1e-5 per size, so another seed would not fail it; a
 * share off by two points (a table or a cumulative walk wrong by one size)
 * does. The mean within 4.5 standard deviations of the table's. */
static void test_preset_sizes(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        const sim_preset_info *in = sim_preset_get(PUBLISHED[k].p);
        uint64_t rng = 11 + (uint64_t)k;
        int count[SIM_PRESET_SIZES_MAX] = {0};
        double sum = 0, mean = 0, sq = 0;
        for (int d = 0; d < DRAWS; d++) {
            double v = sim_preset_size(PUBLISHED[k].p, &rng);
            int found = -1;
            for (int i = 0; i < in->n_sizes; i++)
                if (v == in->size[i]) found = i;
            if (found < 0) fail_msg("%s: drew size %g, not in its table", in->name, v);
            count[found]++;
            sum += v;
        }
        for (int i = 0; i < in->n_sizes; i++) {
            double p = in->share[i], got = (double)count[i] / DRAWS;
            double tol = 4.5 * sqrt(p * (1 - p) / DRAWS);
            print_message("  %s: size %g: %.4f (stated %.4f, +-%.4f)\n", in->name, in->size[i],
                          got, p, tol);
            if (fabs(got - p) > tol)
                fail_msg("%s: size %g drawn %.4f of the time, stated %.4f (+-%.4f)", in->name,
                         in->size[i], got, p, tol);
            mean += p * in->size[i];
            sq += p * in->size[i] * in->size[i];
        }
        double sd = sqrt((sq - mean * mean) / DRAWS);
        if (fabs(sum / DRAWS - mean) > 4.5 * sd)
            fail_msg("%s: mean size %.4f, stated %.4f (+-%.4f)", in->name, sum / DRAWS, mean,
                     4.5 * sd);
    }
}

/* 20,000 durations of the lognormal presets: their 10th, 50th and 90th
 * percentiles are those of median * exp(sigma z), sigma = sqrt(2 ln(mean /
 * median)) (Helios: 7.0 s, 206 s, 6,036 s; PAI: 30.8 s, 480.7 s, 7,500 s),
 * in log space within 4.5 standard deviations of a sample quantile
 * (sigma sqrt(p(1-p)/n) / phi(z_p): 0.10 for Helios's median, i.e. 10%);
 * every draw within [1 s, the published longest]. Philly's: a fifth of the
 * jobs in [10^3, 10^4] minutes (same band as the sizes), all in [10^1.5,
 * 10^4] minutes. */
static void test_preset_durations(void **state) {
    (void)state;
    static double d[DRAWS];
    const double zp[3] = {-1.2815515655446004, 0, 1.2815515655446004}, pp[3] = {0.1, 0.5, 0.9};
    for (int k = 1; k < 3; k++) {
        const sim_preset_info *in = sim_preset_get(PUBLISHED[k].p);
        uint64_t rng = 21 + (uint64_t)k;
        for (int i = 0; i < DRAWS; i++) {
            d[i] = sim_preset_duration(PUBLISHED[k].p, &rng);
            if (!(d[i] >= 1 && d[i] <= PUBLISHED[k].dur_max))
                fail_msg("%s: duration %g s outside [1, %g]", in->name, d[i],
                         PUBLISHED[k].dur_max);
        }
        qsort(d, DRAWS, sizeof d[0], cmp_double);
        double sigma = sqrt(2 * log(PUBLISHED[k].dur_mean / PUBLISHED[k].dur_median));
        for (int q = 0; q < 3; q++) {
            double want = PUBLISHED[k].dur_median * exp(sigma * zp[q]);
            double got = d[(int)(pp[q] * DRAWS)];
            double phi = exp(-zp[q] * zp[q] / 2) / sqrt(2 * M_PI);
            double tol = 4.5 * sigma * sqrt(pp[q] * (1 - pp[q]) / DRAWS) / phi;
            print_message("  %s: p%02.0f %.1f s (stated %.1f s, log +-%.3f)\n", in->name,
                          pp[q] * 100, got, want, tol);
            if (fabs(log(got / want)) > tol)
                fail_msg("%s: p%.0f of the durations %.1f s, stated %.1f s (log +-%.3f)",
                         in->name, pp[q] * 100, got, want, tol);
        }
    }
    uint64_t rng = 21;
    int tail = 0;
    for (int i = 0; i < DRAWS; i++) {
        double v = sim_preset_duration(SIM_PRESET_PHILLY, &rng);
        assert_true(v >= 60 * pow(10, 1.5) && v <= 60 * pow(10, 4));
        tail += v >= 60e3;
    }
    double tol = 4.5 * sqrt(0.2 * 0.8 / DRAWS);
    if (fabs((double)tail / DRAWS - 0.2) > tol)
        fail_msg("philly: %.4f of the durations over 1000 min, stated 0.2", (double)tail / DRAWS);
}

/* The preset reaches the generated trace: on tests/data/sim's cluster one
 * unit of G trains the model at 8 samples/s, so a job's size is its target
 * / 8 and its duration samples / target. 2,000 Helios jobs hold sizes no
 * Philly job has (16 and more) in about their stated share, and Philly's
 * keep its sizes only. The same seed gives the same trace, another seed
 * another. */
static void test_preset_trace(void **state) {
    (void)state;
    char cluster[1024], err[4096];
    snprintf(cluster, sizeof cluster, "%s/tests/data/sim/cluster.yaml", harness_src());
    sim_gen_opts g;
    memset(&g, 0, sizeof g);
    g.jobs = 2000;
    g.load = 0.9;
    g.seed = 5;
    g.n_models = 1;
    snprintf(g.models[0], sizeof g.models[0], "%s/tests/data/sim/model.yaml", harness_src());
    const sim_preset ps[3] = {SIM_PRESET_PHILLY, SIM_PRESET_HELIOS, SIM_PRESET_PAI};
    for (int k = 0; k < 3; k++) {
        g.preset = ps[k];
        const sim_preset_info *in = sim_preset_get(ps[k]);
        sim_trace *t = sim_trace_generate(&g, cluster, ".", err, sizeof err);
        if (!t) fail_msg("%s", err);
        sim_trace *again = sim_trace_generate(&g, cluster, ".", err, sizeof err);
        assert_non_null(again);
        int big = 0;
        double big_share = 0;
        for (int i = 0; i < in->n_sizes; i++)
            if (in->size[i] >= 16) big_share += in->share[i];
        for (int j = 0; j < t->n_jobs; j++) {
            double size = t->jobs[j].target / 8;
            int found = 0;
            for (int i = 0; i < in->n_sizes; i++) found |= size == in->size[i];
            if (!found) fail_msg("%s: job %d has size %g", in->name, j, size);
            big += size >= 16;
            assert_true(t->jobs[j].arrival == again->jobs[j].arrival &&
                        t->jobs[j].samples == again->jobs[j].samples &&
                        t->jobs[j].target == again->jobs[j].target);
        }
        double tol = 4.5 * sqrt(big_share * (1 - big_share) / g.jobs);
        print_message("  %s: %d of 2000 jobs of 16 units or more (stated %.4f)\n", in->name, big,
                      big_share);
        assert_true(fabs((double)big / g.jobs - big_share) <= tol);
        if (ps[k] == SIM_PRESET_HELIOS) assert_true(big > 0);
        sim_trace_free(again);
        g.seed = 6;
        again = sim_trace_generate(&g, cluster, ".", err, sizeof err);
        assert_non_null(again);
        int differ = 0;
        for (int j = 0; j < t->n_jobs; j++) differ |= t->jobs[j].samples != again->jobs[j].samples;
        assert_true(differ);
        g.seed = 5;
        sim_trace_free(again);
        sim_trace_free(t);
    }
}

/* The config's generate.preset and --preset: a config naming the preset
 * philly prints the bytes of one naming none; helios the same bytes run to
 * run and other bytes than philly's, and --preset overrides the config. A
 * preset the table does not know is reported at its line and column. */
static void test_preset_config(void **state) {
    (void)state;
    char cfg[1024], cmd[4096], want[2048];
    static char base[1 << 20], first[1 << 20];
    const char *variants[3] = {"", "  preset: philly\n", "  preset: helios\n"};
    char *outs[3] = {base, first, NULL};
    for (int v = 0; v < 3; v++) {
        snprintf(cfg, sizeof cfg, "%s/sim-preset-%d.yaml", harness_tmp(), v);
        FILE *f = fopen(cfg, "w");
        assert_non_null(f);
        fprintf(f, "cluster: %s/tests/data/sim/cluster.yaml\ngenerate:\n  jobs: 40\n  load: 0.9\n"
                   "%s  models: [%s/tests/data/sim/model.yaml]\n", harness_src(), variants[v],
                harness_src());
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s simulate %s --json | sed 1,6d", harness_bin(), cfg);
        assert_int_equal(harness_run(cmd), 0);
        assert_true(strlen(harness_out) > 1000);
        if (outs[v]) strcpy(outs[v], harness_out);
    }
    assert_string_equal(base, first);         /* philly named or not: the same bytes */
    assert_true(strcmp(base, harness_out) != 0); /* helios: other bytes */
    strcpy(first, harness_out);
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(first, harness_out); /* helios: the same bytes again */
    /* --preset helios on the config without a preset gives helios's bytes */
    snprintf(cmd, sizeof cmd, "%s simulate %s/sim-preset-0.yaml --preset helios --json | sed 1,6d",
             harness_bin(), harness_tmp());
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(first, harness_out);
    snprintf(cmd, sizeof cmd, "%s simulate %s/sim-preset-0.yaml --preset borg 2>&1",
             harness_bin(), harness_tmp());
    assert_int_equal(harness_run(cmd), 2);
    assert_non_null(strstr(harness_out, "--preset: expected one of philly|helios|pai, got 'borg'"));
    /* a bad preset in the config: at its value */
    snprintf(cfg, sizeof cfg, "%s/sim-preset-bad.yaml", harness_tmp());
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "cluster: %s/tests/data/sim/cluster.yaml\ngenerate:\n  jobs: 40\n  load: 0.9\n"
               "  preset: borg\n  models: [%s/tests/data/sim/model.yaml]\n", harness_src(),
            harness_src());
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s simulate %s 2>&1", harness_bin(), cfg);
    snprintf(want, sizeof want, "strata: %s:5:11: generate.preset: ", cfg);
    assert_int_equal(harness_run(cmd), 2);
    if (strncmp(harness_out, want, strlen(want))) fail_msg("got: %s\nwant: %s", harness_out, want);
}

/* A config without objective: gets the weights an empty objective: {}
 * gets, field by field: sim_weights_load's defaults are the table's. */
static void test_objective_defaults(void **state) {
    (void)state;
    char path[1024], err[4096];
    sim_spec sp[2];
    const char *objective[2] = {"", "objective: {}\n"};
    for (int v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/sim-objective-%d.yaml", harness_tmp(), v);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "cluster: %s/tests/data/sim/cluster.yaml\ntrace: three.yaml\n%s", harness_src(),
                objective[v]);
        fclose(f);
        if (sim_spec_load(path, &sp[v], err, sizeof err)) fail_msg("%s", err);
    }
    assert_true(sp[0].w.cost == sp[1].w.cost);
    assert_true(sp[0].w.jct == sp[1].w.jct);
    assert_true(sp[0].w.missed == sp[1].w.missed);
    /* and they are the documented ones */
    assert_true(sp[0].w.cost == SIM_W_COST && sp[0].w.jct == SIM_W_JCT &&
                sp[0].w.missed == SIM_W_MISSED);
}

/* Every shipped trace is what its config's generator draws: playing the
 * shipped file prints the bytes of drawing it again (200 jobs, the config's
 * seed), for the Philly traces of before the presets too. */
static void test_shipped_traces(void **state) {
    (void)state;
    const char *cfgs[] = {"philly", "philly-bursty", "helios", "pai", "heldout-philly-095",
                          "heldout-philly-bursty-095", "heldout-helios-095", "heldout-pai-095"};
    static char played[1 << 20];
    char cmd[4096];
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s simulate %s/configs/sim/%s.yaml --method fcfs --json | sed 1,6d",
                 harness_bin(), harness_src(), cfgs[i]);
        assert_int_equal(harness_run(cmd), 0);
        assert_true(strlen(harness_out) > 1000);
        strcpy(played, harness_out);
        snprintf(cmd, sizeof cmd, "%s simulate %s/configs/sim/%s.yaml --method fcfs --generate 200 "
                 "--json | sed 1,6d", harness_bin(), harness_src(), cfgs[i]);
        assert_int_equal(harness_run(cmd), 0);
        if (strcmp(played, harness_out)) fail_msg("configs/sim/%s.yaml: its shipped trace is not "
                                                  "what its generator draws", cfgs[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objective_defaults),
        cmocka_unit_test(test_fcfs),          cmocka_unit_test(test_exact_wait),
        cmocka_unit_test(test_smd),           cmocka_unit_test(test_gavel),
        cmocka_unit_test(test_sjf_three),     cmocka_unit_test(test_sjf),
        cmocka_unit_test(test_sjf_tie),
        cmocka_unit_test(test_utilisation),   cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_write_trace),
        cmocka_unit_test(test_out_dir),       cmocka_unit_test(test_bad_line),
        cmocka_unit_test(test_order),         cmocka_unit_test(test_preset_tables),
        cmocka_unit_test(test_preset_sizes),  cmocka_unit_test(test_preset_durations),
        cmocka_unit_test(test_preset_trace),  cmocka_unit_test(test_preset_config),
        cmocka_unit_test(test_shipped_traces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
