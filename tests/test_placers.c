/* test_placers.c -- what each placement method puts where, and what it costs.
 *
 * A hand-built cluster: the fixture's types and layers (tests/fixture.h)
 * on five nodes in two zones, and the plan [cpu, gpu, gpu] at R = 10000:
 *
 *   node  type  units  ps_slots  zone  bw    latency  loss
 *   n0    cpu   2      1         z0    1e9   1e-4     0
 *   n1    cpu   4      1         z1    1e9   1e-4     0
 *   n2    gpu   3      1         z0    4e9   1e-4     0.01
 *   n3    gpu   4      1         z0    4e9   2e-4     0
 *   n4    gpu   5      1         z1    8e9   5e-5     0
 *   between zones: inter_bw 5e8, inter_latency 1e-3
 *
 * Stage 0 (emb on cpu): C = 100*1e6/1e12 = 1e-4, I = 100*1e5/1e10 = 1e-3,
 * X = 2*100*1e4/1e9 = 2e-3, P = 2*1e6/1e9 = 2e-3, t = 5e-3; q = 0.5: 1
 * worker. Stage 1 (fc1..fc2 on gpu): C = 100*2e9/1e13 = 0.02, X = 1e-3,
 * P = 2*8e6/2e9 = 8e-3, t = 0.029; q = 2.9: k = ceil(2.755/0.855) = 4
 * workers. One ps task each (W under 1 GiB). Task order: 0 = s0 worker,
 * 1 = s0 ps, 2..5 = s1 workers, 6 = s1 ps.
 *
 * Traffic per step: a worker-ps pair apart moves 2 W_s / g_s (s1: 1.6e7);
 * the s0 worker's activations, 2 B a = 2e6, are spread over the 4 s1
 * workers (5e5 each).
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
#include <jansson.h>

#include "env/config.h"
#include "env/place.h"
#include "solvers/placers.h"
#include "tests/fixture.h"
#include "tests/harness.h"

#define assert_close(got, want)                                                   \
    do {                                                                          \
        if (!fixture_close((got), (want)))                                        \
            fail_msg("%s = %.17g, want %.17g", #got, (double)(got), (double)(want)); \
    } while (0)

typedef struct {
    fixture fx;
    model_node nodes[5];
    model_plan *plan;
    model_plan *out;
    int tasks[7];
    char err[512];
} inst;

static void inst_init(inst *in) {
    memset(in, 0, sizeof *in);
    fixture_init(&in->fx);
    in->fx.types[FX_CPU].count = 6;
    in->fx.types[FX_GPU].count = 12;
    in->nodes[0] = (model_node){"n0", FX_CPU, 2, 1, 0, 1e9, 1e-4, 0.0};
    in->nodes[1] = (model_node){"n1", FX_CPU, 4, 1, 1, 1e9, 1e-4, 0.0};
    in->nodes[2] = (model_node){"n2", FX_GPU, 3, 1, 0, 4e9, 1e-4, 0.01};
    in->nodes[3] = (model_node){"n3", FX_GPU, 4, 1, 0, 4e9, 2e-4, 0.0};
    in->nodes[4] = (model_node){"n4", FX_GPU, 5, 1, 1, 8e9, 5e-5, 0.0};
    in->fx.cl.nodes = in->nodes;
    in->fx.cl.n_nodes = 5;
    in->fx.job.min_throughput = 10000;
    in->plan = model_plan_create(3);
    in->out = model_plan_create(3);
    int assign[3] = {FX_CPU, FX_GPU, FX_GPU};
    assert_int_equal(model_eval(&in->fx.job, &in->fx.cl, assign, in->plan), MODEL_FEASIBLE);
    assert_int_equal(in->plan->stages[1].units, 4);
    assert_int_equal(place_task_count(in->plan), 7);
}

static void inst_free(inst *in) {
    model_plan_free(in->plan);
    model_plan_free(in->out);
}

static int run(inst *in, placer_method m, uint64_t seed) {
    return placer_run(&in->fx.job, &in->fx.cl, in->plan, m, seed, in->tasks, in->out,
                      in->err, sizeof in->err);
}

static void assert_tasks(const int *got, const int *want, int n) {
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) fail_msg("task %d on node %d, want %d", i, got[i], want[i]);
}

static void test_names(void **state) {
    (void)state;
    const char *names[] = {"spread", "pack", "aggregate", "zone", "best"};
    for (int m = 0; m < PLACER_N_METHODS; m++) {
        assert_string_equal(placer_method_name((placer_method)m), names[m]);
        assert_int_equal(placer_method_parse(names[m]), m);
    }
    assert_int_equal(placer_method_parse("kube"), -1);
    assert_int_equal(placer_method_parse(NULL), -1);
    assert_string_equal(placer_method_name(PLACER_N_METHODS), "?");
}

/* spread, the Kubernetes default: score = least-allocated + balanced, with
 * fu, fp the used fractions of units and ps slots once the task is booked:
 * ((1-fu) + (1-fp))/2 + 1 - |fu - fp|.
 *  task 0 (cpu worker): n0 fu 1/2, fp 0: 0.75 + 0.5 = 1.25; n1 fu 1/4:
 *    0.875 + 0.75 = 1.625 -> n1.
 *  task 1 (ps): n0, n2, n3, n4 (no unit used, fp 1): 0.5 + 0 = 0.5;
 *    n1 (fu 1/4, fp 1): 0.375 + 0.25 = 0.625 -> n1.
 *  task 2: n2 fu 1/3: 0.8333 + 0.6667 = 1.5; n3 fu 1/4: 1.625; n4 fu 1/5:
 *    0.9 + 0.8 = 1.7 -> n4.
 *  task 3: n2 1.5, n3 1.625, n4 fu 2/5: 0.8 + 0.6 = 1.4 -> n3.
 *  task 4: n2 1.5, n3 fu 2/4: 0.75 + 0.5 = 1.25, n4 1.4 -> n2.
 *  task 5: n2 fu 2/3: 0.6667 + 0.3333 = 1.0, n3 1.25, n4 1.4 -> n4.
 *  task 6 (ps): n0 0.5; n1 full; n2 (fu 1/3, fp 1): 0.3333 + 0.3333;
 *    n3 (1/4): 0.375 + 0.25 = 0.625; n4 (2/5): 0.3 + 0.4 = 0.7 -> n4.
 * Traffic: s1's workers on n3 and n2 (z0) talk to the ps on n4 (z1):
 * 2 * 1.6e7 = 3.2e7 across nodes and zones; the activations cross nodes to
 * all 4 workers (2e6), to n3 and n2 across zones (1e6). Total 3.4e7 / 3.3e7.
 * P_1' = the n2 worker: 1.6e7 / (5e8 * 0.99) + 2 (1e-4 + 1e-3);
 * X_1' = the pair (n3, n1): min(2e9, 4e9, 1e9) capped at 5e8 across zones:
 * 2e6 / 5e8 + 2 (2e-4 + 1e-3) = 6.4e-3. t_1' = 0.02 + 6.4e-3 + P_1' and
 * theta_1' = 100 / t_1' * 4 / 1.15 ~ 5709 < 10000: stage 1 misses R. */
static void test_spread(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    assert_int_equal(run(&in, PLACER_SPREAD, 1), PLACER_SLOW);
    int want[7] = {1, 1, 4, 3, 2, 4, 4};
    assert_tasks(in.tasks, want, 7);
    assert_close(in.out->cross_node_bytes, 3.4e7);
    assert_close(in.out->cross_zone_bytes, 3.3e7);
    double p1 = 1.6e7 / 4.95e8 + 2.2e-3;
    assert_close(in.out->stages[1].sync, p1);
    assert_close(in.out->stages[1].xfer, 6.4e-3);
    assert_close(in.out->throughput, 100.0 / (0.02 + 6.4e-3 + p1) * 4.0 / 1.15);
    assert_int_equal(in.out->bad_stage, 1);
    assert_non_null(strstr(in.out->why, "stage 1 (layers fc1..fc2 on gpu) reaches 5709."));
    /* No ties on this cluster: every seed gives the same placement. */
    for (uint64_t seed = 2; seed < 6; seed++) {
        assert_int_equal(run(&in, PLACER_SPREAD, seed), PLACER_SLOW);
        assert_tasks(in.tasks, want, 7);
    }
    inst_free(&in);
}

/* Equal nodes tie; the seed picks among them, every tied node is reachable
 * and a seed always picks the same one. Two equal cpu nodes: task 0 goes to
 * n0 or n1 by the seed. */
static void test_spread_ties(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    in.nodes[1].units = 2;
    in.nodes[1].zone = 0;
    int seen[2] = {0, 0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        run(&in, PLACER_SPREAD, seed);
        int first = in.tasks[0];
        assert_true(first == 0 || first == 1);
        seen[first]++;
        run(&in, PLACER_SPREAD, seed);
        assert_int_equal(in.tasks[0], first);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    inst_free(&in);
}

/* pack, first fit: task 0 -> n0, its ps -> n0; s1's workers fill n2 (3)
 * then n3 (1); s1's ps: n0's slot is taken, n1 is next. Traffic: all 4 s1
 * workers apart from the ps on n1 (z1): 4 * 1.6e7 = 6.4e7 across nodes and
 * zones; activations n0 -> n2, n3: 2e6 across nodes, none across zones. */
static void test_pack(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    assert_int_equal(run(&in, PLACER_PACK, 0), PLACER_SLOW);
    int want[7] = {0, 0, 2, 2, 2, 3, 1};
    assert_tasks(in.tasks, want, 7);
    assert_close(in.out->cross_node_bytes, 6.6e7);
    assert_close(in.out->cross_zone_bytes, 6.4e7);
    inst_free(&in);
}

/* aggregate: stage 0's worker on the smallest cpu node that takes it (n0),
 * its ps with it; stage 1's 4 workers on the smallest gpu node that takes
 * all four (n3, not n4), its ps there too. Only the activations cross
 * nodes: 2e6, in z0. P_1' = 0; X_1' = pair (n3, n0): min(2e9, 4e9, 1e9) =
 * 1e9: 2e6 / 1e9 + 2 * 2e-4 = 2.4e-3; t_1' = 0.0224. */
static void test_aggregate(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    assert_int_equal(run(&in, PLACER_AGGREGATE, 0), PLACER_OK);
    int want[7] = {0, 0, 3, 3, 3, 3, 3};
    assert_tasks(in.tasks, want, 7);
    assert_close(in.out->cross_node_bytes, 2e6);
    assert_close(in.out->cross_zone_bytes, 0.0);
    assert_close(in.out->stages[1].sync, 0.0);
    assert_close(in.out->stages[1].xfer, 2.4e-3);
    assert_close(in.out->throughput, 100.0 / 0.0224 * 4.0 / 1.15);

    /* No gpu node takes all four when n3 has 2 units and n4 3: the largest
     * first, n2 (3, z0) and n4 (3, z1) tie and the busiest zone (z0, where
     * stage 0 runs) wins: 3 workers on n2; then the smallest node taking
     * the last one, n3 (2). The ps goes to n2 (3 workers). P_1' = the n3
     * worker: 1.6e7 / 1.98e9 + 2 * 2e-4 = 8.4808e-3; X_1' = 2.4e-3 (n3,
     * n0); t_1' = 0.0308808, theta_1' = 11263 >= 10000. */
    in.nodes[3].units = 2;
    in.nodes[4].units = 3;
    assert_int_equal(run(&in, PLACER_AGGREGATE, 0), PLACER_OK);
    int want2[7] = {0, 0, 2, 2, 2, 3, 2};
    assert_tasks(in.tasks, want2, 7);
    assert_close(in.out->stages[1].sync, 1.6e7 / 1.98e9 + 4e-4);
    /* n3's worker to the ps on n2: 1.6e7; activations 2e6. */
    assert_close(in.out->cross_node_bytes, 1.8e7);
    inst_free(&in);
}

/* The zone score: tau = latency + m / (min(N_t, bw) (1 - loss)), stage 1:
 * m = 2 * 8e6 + 2 * 100 * 1e4 = 1.8e7 (it is the last stage: activations
 * in only); stage 0: m = 2 * 1e6 + 2 * 100 * 1e4 = 4e6, N_cpu = 1e9. */
static void test_zone_time(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    const model_job *job = &in.fx.job;
    const model_cluster *cl = &in.fx.cl;
    assert_close(placer_zone_time(job, cl, in.plan, 1, 2), 1e-4 + 1.8e7 / 1.98e9);
    assert_close(placer_zone_time(job, cl, in.plan, 1, 3), 2e-4 + 1.8e7 / 2e9);
    assert_close(placer_zone_time(job, cl, in.plan, 1, 4), 5e-5 + 1.8e7 / 2e9);
    assert_close(placer_zone_time(job, cl, in.plan, 0, 0), 1e-4 + 4e6 / 1e9);
    inst_free(&in);
}

/* zone: both zones can host the job alone (z0: cpu 2, gpu 7, 3 slots; z1:
 * cpu 4, gpu 5, 2 slots), so each is tried alone. In z0: stage 0 on n0
 * (the only cpu node), ps with it; stage 1 on n3, the one gpu node taking
 * all 4 workers (n2 has the better tau, 9.19e-3 < 9.2e-3, but holds 3),
 * ps with them: P' = 0, X_1' = pair (n3, n0): 2e6 / 1e9 + 2 * 2e-4 =
 * 2.4e-3. In z1: n1 and n4 (5 units), X_1' = pair (n4, n1): min(2e9, 8e9,
 * 1e9) = 1e9: 2e-3 + 2 * 1e-4 = 2.2e-3, t_1' = 0.0222 < 0.0224: z1 wins.
 * Traffic: the activations only, 2e6, none across zones. */
static void test_zone(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    assert_int_equal(run(&in, PLACER_ZONE, 0), PLACER_OK);
    int want[7] = {1, 1, 4, 4, 4, 4, 4};
    assert_tasks(in.tasks, want, 7);
    assert_close(in.out->cross_node_bytes, 2e6);
    assert_close(in.out->cross_zone_bytes, 0.0);
    assert_close(in.out->stages[1].xfer, 2.2e-3);
    assert_close(in.out->throughput, 100.0 / 0.0222 * 4.0 / 1.15);

    /* Take z1's gpu node away (0 units): only z0 hosts the job; n3 smaller
     * (3 units): no node takes all 4, so the best tau first, n2 (3
     * workers), then n3 takes the last; the ps goes to n2. Traffic: the
     * n3 worker's 1.6e7 + 2e6 = 1.8e7, none across zones; P_1' = 1.6e7 /
     * b(n3, n2) + 2 * 2e-4, b = min(2e9, 4e9, 4e9) * 0.99 = 1.98e9. */
    in.nodes[4].units = 0;
    in.nodes[3].units = 3;
    assert_int_equal(run(&in, PLACER_ZONE, 0), PLACER_OK);
    int want2[7] = {0, 0, 2, 2, 2, 3, 2};
    assert_tasks(in.tasks, want2, 7);
    assert_close(in.out->cross_node_bytes, 1.8e7);
    assert_close(in.out->cross_zone_bytes, 0.0);
    assert_close(in.out->stages[1].sync, 1.6e7 / 1.98e9 + 4e-4);
    inst_free(&in);
}

/* No single zone hosts the job when n2 has 2 units, n3 1 and n4 2 (z0: 3
 * gpu units, z1: 2). Zones are added by what they cover of the 7 tasks:
 * z0 covers cpu 1 + gpu 3 + ps 2 = 6, z1 1 + 2 + 2 = 5, so z0 ranks first,
 * then z1. Stage 0: z0 holds its worker: n0, ps with it. Stage 1: no zone
 * holds 4 workers and no node takes them all: z0's best tau, n2 (9.19e-3 <
 * n3's 9.2e-3), takes 2; then n4 takes the remaining 2 whole. Its ps: n2
 * and n4 hold 2 workers each, their zones 2 each, so the better tau wins:
 * n4 (9.05e-3). Traffic: n2's two workers to the ps on n4, 2 * 1.6e7 =
 * 3.2e7 across zones; activations n0 -> n2, n2, n4, n4: 2e6, half of it
 * (the n4 pair) across zones. */
static void test_zone_two_zones(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    in.nodes[2].units = 2;
    in.nodes[3].units = 1;
    in.nodes[4].units = 2;
    int rc = run(&in, PLACER_ZONE, 0);
    assert_true(rc == PLACER_OK || rc == PLACER_SLOW);
    int want[7] = {0, 0, 2, 2, 4, 4, 4};
    assert_tasks(in.tasks, want, 7);
    assert_close(in.out->cross_node_bytes, 3.4e7);
    assert_close(in.out->cross_zone_bytes, 3.3e7);
    inst_free(&in);
}

/* best: starts from the best of the four (zone here, t_1' = 0.0222) and
 * cannot beat it: X_1' is bounded by the cpu link (1e9) and the lowest
 * latency pair. It never does worse than any method, on this cluster and
 * on the variants below. */
static void test_best(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    long evals = 0;
    int rc = placer_best_run(&in.fx.job, &in.fx.cl, in.plan, 7, 0, &evals, in.tasks, in.out,
                             in.err, sizeof in.err);
    assert_int_equal(rc, PLACER_OK);
    assert_true(evals > 4 && evals <= PLACER_BEST_EVALS);
    assert_close(in.out->throughput, 100.0 / 0.0222 * 4.0 / 1.15);
    assert_close(in.out->cross_node_bytes, 2e6);

    /* Variants: for each, best's cost' is at most every other method's, and
     * it keeps R whenever one of them does. */
    for (int v = 0; v < 6; v++) {
        inst_free(&in);
        inst_init(&in);
        in.nodes[v % 5].latency *= 10.0;
        in.nodes[(v + 2) % 5].loss = 0.05;
        if (v >= 3) in.nodes[1].ps_slots = 0;
        double best_ok = INFINITY, best_any = INFINITY;
        for (int m = 0; m < PLACER_BEST; m++) {
            int r = run(&in, (placer_method)m, 3);
            assert_true(r == PLACER_OK || r == PLACER_SLOW);
            if (r == PLACER_OK) best_ok = fmin(best_ok, in.out->cost);
            best_any = fmin(best_any, in.out->cost);
        }
        int r = run(&in, PLACER_BEST, 3);
        if (best_ok < INFINITY) {
            assert_int_equal(r, PLACER_OK);
            assert_true(in.out->cost <= best_ok * (1 + 1e-12));
        } else {
            assert_true(in.out->cost <= best_any * (1 + 1e-12));
        }
    }
    inst_free(&in);
}

/* placer_complete: the fixed tasks stay where they are, the result is
 * never worse than the start it was given (each simple method's placement),
 * completing best's own placement from task 0 gives best's cost (a local
 * optimum of the same search), and a fixed task on a node without room
 * for it is refused naming the task and node. */
static void test_complete(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    int start[7], got[7];
    for (int m = 0; m < PLACER_BEST; m++) { /* spread and pack miss R here */
        int start_rc = run(&in, (placer_method)m, 3);
        assert_true(start_rc == PLACER_OK || start_rc == PLACER_SLOW);
        double start_cost = in.out->cost;
        memcpy(start, in.tasks, sizeof start);
        for (int first = 0; first <= 7; first++) {
            for (int i = 0; i < 7; i++) got[i] = i < first ? start[i] : -1;
            int rc = placer_complete(&in.fx.job, &in.fx.cl, in.plan, first, start, 5, 0, got,
                                     in.out, in.err, sizeof in.err);
            assert_true(rc == PLACER_OK || (rc == PLACER_SLOW && start_rc == PLACER_SLOW));
            for (int i = 0; i < first; i++) assert_int_equal(got[i], start[i]);
            if (rc == start_rc) assert_true(in.out->cost <= start_cost * (1 + 1e-12));
        }
    }
    /* pack's placement misses R; from task 2 on (stage 1's tasks) the
     * search repairs it */
    assert_int_equal(run(&in, PLACER_PACK, 0), PLACER_SLOW);
    memcpy(start, in.tasks, sizeof start);
    memcpy(got, start, sizeof got);
    assert_int_equal(placer_complete(&in.fx.job, &in.fx.cl, in.plan, 2, start, 5, 0, got, in.out,
                                     in.err, sizeof in.err),
                     PLACER_OK);
    double completed = in.out->cost;
    assert_int_equal(placer_best_run(&in.fx.job, &in.fx.cl, in.plan, 7, 0, NULL, start, in.out,
                                     in.err, sizeof in.err),
                     PLACER_OK);
    double best_cost = in.out->cost;
    assert_true(best_cost <= completed * (1 + 1e-12));
    memcpy(got, start, sizeof got);
    assert_int_equal(placer_complete(&in.fx.job, &in.fx.cl, in.plan, 0, start, 7, 0, got, in.out,
                                     in.err, sizeof in.err),
                     PLACER_OK);
    assert_close(in.out->cost, best_cost);
    /* the s0 worker (cpu) fixed on n2 (gpu): refused */
    got[0] = 2;
    assert_int_equal(placer_complete(&in.fx.job, &in.fx.cl, in.plan, 1, start, 7, 0, got, in.out,
                                     in.err, sizeof in.err),
                     PLACER_NOFIT);
    assert_non_null(strstr(in.err, "fixed task 0 has no room on node 2"));
    inst_free(&in);
}

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static double unif(uint64_t *s) { return (double)lcg(s) / 9007199254740992.0; }

/* Random clusters (12 nodes of random size, ps slots, zone, link figures,
 * some lossy) under the fixture's job with random parameter sizes and
 * targets: best is never worse than the best of the four methods (keeping
 * R first, then cost'), keeps R whenever one of them does, and its local
 * search does find cheaper placements than all four on some instances. */
static void test_best_random(void **state) {
    (void)state;
    uint64_t s = 7;
    int tried = 0, cheaper = 0;
    for (int it = 0; it < 60; it++) {
        fixture fx;
        fixture_init(&fx);
        fx.types[FX_CPU].count = 100;
        fx.types[FX_GPU].count = 100;
        fx.layers[1].params = 4e6 * (1.0 + 10.0 * unif(&s));
        model_node nodes[12];
        model_zone zones[3] = {{"a"}, {"b"}, {"c"}};
        for (int n = 0; n < 12; n++) {
            nodes[n] = (model_node){"", n < 4 ? FX_CPU : FX_GPU, 1 + (int)(unif(&s) * 4),
                                    (int)(unif(&s) * 3), (int)(unif(&s) * 3),
                                    1e9 * (0.5 + 4.0 * unif(&s)), 1e-4 * (0.5 + 5.0 * unif(&s)),
                                    unif(&s) < 0.3 ? 0.05 * unif(&s) : 0.0};
            snprintf(nodes[n].name, sizeof nodes[n].name, "n%d", n);
        }
        fx.cl = (model_cluster){2, fx.types, 12, nodes, 3, zones, 5e8, 1e-3, NULL, NULL};
        fx.job.min_throughput = 3000 + 7000 * unif(&s);
        fx.job.shard = 3e6 * (1.0 + 3.0 * unif(&s));
        model_plan *plan = model_plan_create(3), *out = model_plan_create(3);
        int assign[3] = {FX_CPU, FX_GPU, FX_GPU}, tasks[256];
        char err[256];
        assert_int_equal(model_eval(&fx.job, &fx.cl, assign, plan), MODEL_FEASIBLE);
        assert_true(place_task_count(plan) <= 256);
        double best_ok = INFINITY, best_any = INFINITY;
        int fit = 1;
        for (int m = 0; m < PLACER_BEST && fit; m++) {
            int r = placer_run(&fx.job, &fx.cl, plan, (placer_method)m, 1, tasks, out, err,
                               sizeof err);
            if (r == PLACER_NOFIT) fit = 0;
            else if (r == PLACER_OK) best_ok = fmin(best_ok, out->cost);
            else best_any = fmin(best_any, out->cost);
        }
        if (fit) {
            tried++;
            int r = placer_run(&fx.job, &fx.cl, plan, PLACER_BEST, 1, tasks, out, err,
                               sizeof err);
            double ref = best_ok < INFINITY ? best_ok : best_any;
            if (best_ok < INFINITY) assert_int_equal(r, PLACER_OK);
            if (r == PLACER_OK && best_ok == INFINITY) cheaper++; /* reached R: better */
            else {
                assert_true(out->cost <= ref * (1.0 + 1e-12));
                if (out->cost < ref * (1.0 - 1e-9)) cheaper++;
            }
        }
        model_plan_free(plan);
        model_plan_free(out);
    }
    assert_true(tried >= 40);
    assert_true(cheaper >= 10);
    print_message("best beat the best of the four on %d of %d random instances\n", cheaper,
                  tried);
}

/* Refusals: more workers than the nodes hold, more ps than slots, an
 * infeasible plan, a cluster without nodes. */
static void test_refusals(void **state) {
    (void)state;
    inst in;
    inst_init(&in);
    in.nodes[3].units = 0;
    in.nodes[4].units = 0; /* gpu nodes hold 3 units, the plan needs 4 */
    assert_int_equal(run(&in, PLACER_PACK, 0), PLACER_NOFIT);
    assert_string_equal(in.err, "placement: the plan runs 4 workers on gpu, its nodes hold "
                                "3 units");
    inst_free(&in);
    inst_init(&in);
    for (int n = 0; n < 5; n++) in.nodes[n].ps_slots = n == 0;
    assert_int_equal(run(&in, PLACER_ZONE, 0), PLACER_NOFIT);
    assert_string_equal(in.err, "placement: the plan runs 2 ps tasks, the nodes have 1 ps "
                                "slots");
    inst_free(&in);
    inst_init(&in);
    in.fx.cl.n_nodes = 0;
    assert_int_equal(run(&in, PLACER_SPREAD, 0), PLACER_ERROR);
    assert_string_equal(in.err, "placement: the cluster lists no nodes");
    in.fx.cl.n_nodes = 5;
    in.plan->reason = MODEL_ERR_CAPACITY;
    assert_int_equal(run(&in, PLACER_BEST, 0), PLACER_ERROR);
    assert_non_null(strstr(in.err, "the plan itself is infeasible"));
    inst_free(&in);
}

/* The hand-built instance above as a config file, for the program. */
static const char *INST_YAML =
    "model: v1\n"
    "cluster:\n"
    "  types:\n"
    "    - {name: cpu, kind: cpu, flops: 1e12, io_bw: 1e10, net_bw: 1e9, mem: 1e11, price: 1}\n"
    "    - {name: gpu, kind: gpu, flops: 1e13, io_bw: 1e9, net_bw: 2e9, mem: 1.6e10, price: 3}\n"
    "  zones: [{name: z0}, {name: z1}]\n"
    "  inter_bw: 5e8\n"
    "  inter_latency: 1ms\n"
    "  nodes:\n"
    "    - {name: n0, type: cpu, units: 2, ps_slots: 1, zone: z0, bw: 1e9, latency: 100us}\n"
    "    - {name: n1, type: cpu, units: 4, ps_slots: 1, zone: z1, bw: 1e9, latency: 100us}\n"
    "    - {name: n2, type: gpu, units: 3, ps_slots: 1, zone: z0, bw: 4e9, latency: 100us, "
    "loss: 0.01}\n"
    "    - {name: n3, type: gpu, units: 4, ps_slots: 1, zone: z0, bw: 4e9, latency: 200us}\n"
    "    - {name: n4, type: gpu, units: 5, ps_slots: 1, zone: z1, bw: 8e9, latency: 50us}\n"
    "job:\n"
    "  name: fx\n"
    "  batch: 100\n"
    "  samples: 1e8\n"
    "  min_throughput: 10000\n"
    "  layers:\n"
    "    - {name: emb, flops: 1e6, io: 1e5, act: 1e4, params: 1e6, mem: 5e10}\n"
    "    - {name: fc1, flops: 1e9, io: 0, act: 1e4, params: 4e6, mem: 1e8}\n"
    "    - {name: fc2, flops: 1e9, io: 0, act: 1e3, params: 4e6, mem: 1e8}\n";


/* `strata place` through a real file: zone's JSON names n1 for stage 0 and
 * n4 for all of stage 1 with 2e6 cross-node bytes (test_zone); spread's
 * misses R at stage 1 (test_spread) and exits 1; the table lists tasks. */
static void test_cli_place(void **state) {
    (void)state;
    const char *bin = getenv("STRATA_BIN"), *tmp = getenv("STRATA_TMP");
    char path[1024], cmd[2300];
    snprintf(path, sizeof path, "%s/placers_inst.yaml", tmp ? tmp : "/tmp");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(INST_YAML, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s place %s --assign cpu,gpu,gpu --method zone --json",
             bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t jerr;
    json_t *o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
    assert_true(json_is_true(json_object_get(o, "meets_target")));
    assert_close(json_number_value(json_object_get(o, "cross_node_bytes")), 2e6);
    json_t *tasks = json_object_get(o, "tasks");
    assert_int_equal(json_array_size(tasks), 7);
    const char *want[7] = {"n1", "n1", "n4", "n4", "n4", "n4", "n4"};
    for (int i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, i), "node")),
                            want[i]);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 1), "role")),
                        "ps");
    json_t *st1 = json_array_get(json_object_get(o, "stages"), 1);
    assert_close(json_number_value(json_object_get(st1, "xfer")), 2.2e-3);
    json_decref(o);

    snprintf(cmd, sizeof cmd, "%s place %s --assign cpu,gpu,gpu --method spread",
             bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 1);
    assert_non_null(strstr(harness_out, "infeasible: placement: stage 1 (layers fc1..fc2 on gpu) "
                                    "reaches 5709."));
    assert_non_null(strstr(harness_out, "6     1     ps     n4"));

    snprintf(cmd, sizeof cmd, "%s place %s --method all 2>&1", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    assert_non_null(strstr(harness_out, "zone       ok"));
    assert_non_null(strstr(harness_out, "spread     misses R"));
    snprintf(cmd, sizeof cmd, "%s place %s --method kube 2>&1", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 2);
    assert_non_null(strstr(harness_out, "unknown placement method 'kube'"));
}

/* Places a one-type YAML instance by zone; returns the placer's status,
 * the tasks' zones (names, comma-joined) in zones[len], and the throughput. */
static int zone_place_yaml(const char *yaml, char *zones, size_t len, double *tp) {
    char err[512];
    cfg_run *run = cfg_load_buffer("zones", yaml, strlen(yaml), err, sizeof err);
    if (!run) fail_msg("%s", err);
    const model_job *job = &run->jobs[0];
    const model_cluster *cl = &run->cluster;
    model_plan *plan = model_plan_create(job->n_layers), *out = model_plan_create(job->n_layers);
    int assign[1] = {0};
    assert_int_equal(model_eval(job, cl, assign, plan), MODEL_FEASIBLE);
    int n = place_task_count(plan), tasks[16];
    assert_true(n <= 16);
    int rc = placer_run(job, cl, plan, PLACER_ZONE, 1, tasks, out, err, sizeof err);
    size_t used = 0;
    zones[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(zones + used, len - used, "%s%s", i ? "," : "",
                                 cl->zones[cl->nodes[tasks[i]].zone].name);
    *tp = out->throughput;
    model_plan_free(plan);
    model_plan_free(out);
    cfg_free(run);
    return rc;
}

/* A tie goes away from the bad zone: one worker and its ps (params 0, act
 * 0: nothing crosses a link), a node of one unit in each zone, the lossy
 * zone listed first. Both in-zone placements rank the same (cost, no
 * traffic); the zone with the lower loss wins. Before: the first zone. */
static void test_zone_tie_avoids_bad_zone(void **state) {
    (void)state;
    const char *yaml =
        "cluster:\n"
        "  types: [{name: g, kind: gpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 10GB/s,"
        " mem: 16GB, price: 1}]\n"
        "  zones: [{name: bad}, {name: good}]\n"
        "  nodes:\n"
        "    - {name: b0, type: g, units: 1, zone: bad, bw: 10GB/s, latency: 0.1ms, loss: 5%}\n"
        "    - {name: g0, type: g, units: 1, zone: good, bw: 10GB/s, latency: 0.1ms}\n"
        "job: {name: j, batch: 32, samples: 1e6, min_throughput: 10, alpha: 0,\n"
        "      layers: [{name: l, flops: 1e10, io: 0, act: 0, params: 0, mem: 1MB}]}\n";
    char zones[128];
    double tp;
    assert_int_equal(zone_place_yaml(yaml, zones, sizeof zones, &tp), PLACER_OK);
    assert_string_equal(zones, "good,good");
}

/* A job is not left whole in a bad zone where it misses the target when
 * other zones together reach it. One stage of 4 workers: compute
 * 32 x 1e10 / 1e12 = 0.32 s, sync 2 x 1e8 / 1e10 = 0.02 s, so R 365 needs
 * q = 365 x 0.34 / 32 = 3.88 -> 4 units. Only the bad zone (listed first,
 * two nodes of 2 units, loss 50%) holds 4: there two workers reach the ps
 * over a link at half its bandwidth, 355.36 samples/s < 365. Zones good1
 * and good2 (2 units each, no loss, 10 GB/s between) reach 376.03. */
static void test_zone_leaves_bad_zone_missing_target(void **state) {
    (void)state;
    const char *yaml =
        "cluster:\n"
        "  types: [{name: g, kind: gpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 10GB/s,"
        " mem: 16GB, price: 1}]\n"
        "  zones: [{name: bad}, {name: good1}, {name: good2}]\n"
        "  inter_bw: 10GB/s\n"
        "  inter_latency: 0.1ms\n"
        "  nodes:\n"
        "    - {name: b0, type: g, units: 2, zone: bad, bw: 10GB/s, latency: 0.1ms, loss: 0.5}\n"
        "    - {name: b1, type: g, units: 2, zone: bad, bw: 10GB/s, latency: 0.1ms, loss: 0.5}\n"
        "    - {name: g1, type: g, units: 2, zone: good1, bw: 10GB/s, latency: 0.1ms}\n"
        "    - {name: g2, type: g, units: 2, zone: good2, bw: 10GB/s, latency: 0.1ms}\n"
        "job: {name: j, batch: 32, samples: 1e6, min_throughput: 365, alpha: 0,\n"
        "      layers: [{name: l, flops: 1e10, io: 0, act: 0, params: 100MB, mem: 1MB}]}\n";
    char zones[128];
    double tp;
    assert_int_equal(zone_place_yaml(yaml, zones, sizeof zones, &tp), PLACER_OK);
    assert_string_equal(zones, "good1,good1,good2,good2,good1");
    assert_true(tp >= 365.0);
    assert_true(fabs(tp - 376.03) < 0.01);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_spread_ties),
        cmocka_unit_test(test_pack),
        cmocka_unit_test(test_aggregate),
        cmocka_unit_test(test_zone_time),
        cmocka_unit_test(test_zone),
        cmocka_unit_test(test_zone_two_zones),
        cmocka_unit_test(test_zone_tie_avoids_bad_zone),
        cmocka_unit_test(test_zone_leaves_bad_zone_missing_target),
        cmocka_unit_test(test_best),
        cmocka_unit_test(test_complete),
        cmocka_unit_test(test_best_random),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
