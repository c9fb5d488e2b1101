/* test_gym.c -- the step-wise environment (env/gym.h).
 *
 * Instances are built here in C. The hand-worked one ("tiny"):
 *
 *   type  flops  io_bw  net_bw  mem  price  count
 *   cpu   1e9    1e9    1e9     1e9  1.0    4
 *   gpu   1e10   1e9    1e9     1e9  4.0    4
 *
 *   layer  flops  io  act  params  mem
 *   L0     1e6    0   1e3  0       1e6
 *   L1     1e7    0   0    0       1e6
 *
 *   job: B 10, S 3.6e6, R 100, alpha 0, shard 1 GiB
 *
 *   node  type  units  ps_slots  zone  bw   latency  loss
 *   n0    cpu   1      1         z0    1e9  0        0
 *   n1    gpu   1      1         z0    1e9  1e-3     0
 *
 * Plan [cpu, gpu] (docs/model.md §2):
 *   stage 0 (L0 on cpu): C = 10 * 1e6 / 1e9 = 0.01, X = 2 * 10 * a_0 / 1e9
 *     = 2e-5, P = 0, t = 0.01002, q = R t / B = 0.1002 <= 1 so k = 1;
 *   stage 1 (L1 on gpu): C = 10 * 1e7 / 1e10 = 0.01, X = 2e-5 (a_0 before
 *     it, none after the last layer), t = 0.01002, k = 1;
 *   theta = 10 / 0.01002, T = 3.6e6 * 0.01002 / 10 = 3607.2 s,
 *   price = 1 * 1 + 1 * 4 = 5 $/h, cost = 3607.2 / 3600 * 5 = 5.01 $.
 * Placement (§3), tasks in order w0, ps0, w1, ps1 on n0, n0, n1, n1: each
 * ps shares its worker's node so P' = 0; the two workers talk over
 * b(n0, n1) = 1e9 with lat = max(0, 1e-3) = 1e-3, so X' = 2e-5 + 2e-3 =
 * 0.00202 for both stages, t' = 0.01202, T' = 3.6e6 * 0.01202 / 10 =
 * 4327.2 s, cost' = 4327.2 / 3600 * 5 = 6.01 $: the episode's reward is
 * -6.01 (ref_cost 1). With ref_cost = 6.01 it is -1.
 * The automatic infeasible reward: caps are min(count, node units) = 1 and 1,
 * cost_max = S / (R 3600) * (1 * 1 + 1 * 4) = 3.6e6 / 3.6e5 * 5 = 50, so
 * -(1 + 2 * 50 / 1) = -101.
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

#include "env/gym.h"
#include "env/place.h"

#define MAXT 4
#define MAXL 16
#define MAXN 8

typedef struct {
    model_type types[MAXT];
    model_layer layers[MAXL];
    model_node nodes[MAXN];
    model_zone zones[2];
    model_cluster cl;
    model_job job;
} inst;

enum { CPU = 0, GPU = 1 };

static void tiny_init(inst *in) {
    memset(in, 0, sizeof *in);
    in->types[CPU] = (model_type){"cpu", 0, 1e9, 1e9, 1e9, 1e9, 1.0, 4};
    in->types[GPU] = (model_type){"gpu", 1, 1e10, 1e9, 1e9, 1e9, 4.0, 4};
    in->layers[0] = (model_layer){"L0", 1e6, 0, 1e3, 0, 1e6};
    in->layers[1] = (model_layer){"L1", 1e7, 0, 0, 0, 1e6};
    in->zones[0] = (model_zone){"z0"};
    in->nodes[0] = (model_node){"n0", CPU, 1, 1, 0, 1e9, 0.0, 0.0};
    in->nodes[1] = (model_node){"n1", GPU, 1, 1, 0, 1e9, 1e-3, 0.0};
    in->cl = (model_cluster){2, in->types, 2, in->nodes, 1, in->zones, 5e8, 1e-3, NULL, NULL};
    in->job = (model_job){.name = "tiny", .n_layers = 2, .layers = in->layers, .batch = 10,
                          .samples = 3.6e6, .min_throughput = 100, .alpha = 0.0,
                          .shard = MODEL_DEFAULT_SHARD};
}

static gym_env *make(inst *in, const gym_opts *o) {
    char err[256] = "";
    gym_env *e = gym_create(&in->job, &in->cl, o, err, sizeof err);
    if (!e) fail_msg("gym_create: %s", err);
    return e;
}

static int close_rel(double got, double want) {
    return fabs(got - want) <= 1e-12 * fmax(fabs(want), 1e-300);
}

#define assert_rel(got, want)                                                     \
    do {                                                                          \
        if (!close_rel((got), (want)))                                            \
            fail_msg("%s = %.17g, want %.17g", #got, (double)(got), (double)(want)); \
    } while (0)

#define assert_feat(got, want)                                                    \
    do {                                                                          \
        if (fabs((double)(got) - (double)(want)) > 1e-6)                          \
            fail_msg("%s = %.9g, want %.9g", #got, (double)(got), (double)(want)); \
    } while (0)

/* Steps `action` and asserts it is accepted. */
static gym_step_result step_ok(gym_env *e, int action) {
    gym_step_result r;
    memset(&r, 0xAB, sizeof r);
    if (gym_step(e, action, &r) != 0) fail_msg("action %d refused", action);
    return r;
}

static void test_episode_by_hand(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    gym_env *e = make(&in, NULL);
    unsigned char m[4];

    assert_int_equal(gym_phase(e), GYM_PHASE_TYPE);
    assert_int_equal(gym_n_actions(e), 2);
    assert_null(gym_plan(e));
    gym_step_result r = step_ok(e, CPU);
    assert_int_equal(r.terminated, 0);
    assert_true(r.reward == 0.0);
    r = step_ok(e, GPU);
    assert_int_equal(r.terminated, 0);
    assert_true(r.reward == 0.0);
    assert_int_equal(r.phase, GYM_PHASE_NODE);

    /* The §2 plan, by hand: cost 5.01, one unit per stage. */
    const model_plan *p = gym_plan(e);
    assert_non_null(p);
    assert_int_equal(p->n_stages, 2);
    assert_int_equal(p->stages[0].units, 1);
    assert_int_equal(p->stages[1].units, 1);
    assert_rel(p->cost, 5.01);

    int n_tasks = 0, n_placed = -1;
    const int *tn = gym_task_nodes(e, &n_tasks, &n_placed);
    assert_non_null(tn);
    assert_int_equal(n_tasks, 4);
    assert_int_equal(n_placed, 0);
    int want_nodes[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(gym_n_actions(e), 2);
        assert_true(gym_mask(e, m) >= 1);
        r = step_ok(e, want_nodes[i]);
        assert_int_equal(r.terminated, i == 3);
        if (i < 3) assert_true(r.reward == 0.0);
    }
    assert_int_equal(r.feasible, 1);
    assert_int_equal(r.phase, GYM_PHASE_DONE);
    assert_rel(r.cost, 6.01);
    assert_rel(r.reward, -6.01);
    assert_int_equal(gym_steps(e), 6); /* L + tasks */
    p = gym_plan(e);
    assert_int_equal(p->placed, 1);
    assert_rel(p->stages[0].xfer, 0.00202);
    assert_rel(p->cost, 6.01);
    tn = gym_task_nodes(e, &n_tasks, &n_placed);
    assert_int_equal(n_placed, 4);
    assert_memory_equal(tn, want_nodes, sizeof want_nodes);

    /* The same through model_eval + place_eval directly, to the last bit. */
    int assign[2] = {CPU, GPU};
    model_plan *q = model_plan_create(2);
    assert_int_equal(model_eval(&in.job, &in.cl, assign, q), 0);
    assert_int_equal(place_eval(&in.job, &in.cl, q, want_nodes, q), 0);
    assert_true(r.cost == q->cost);
    model_plan_free(q);

    /* Over: every call that acts is refused. */
    assert_int_equal(gym_step(e, 0, &r), -1);
    assert_int_equal(gym_mask(e, m), -1);
    assert_int_equal(gym_terminate(e, &r), -1);
    assert_int_equal(gym_n_actions(e), 0);

    /* A second episode in the same env gives the same reward. */
    gym_reset(e, 7);
    step_ok(e, CPU);
    step_ok(e, GPU);
    for (int i = 0; i < 4; i++) r = step_ok(e, want_nodes[i]);
    assert_rel(r.reward, -6.01);
    gym_free(e);

    /* ref_cost scales the reward: -6.01 / 6.01 = -1. */
    gym_opts o;
    gym_opts_default(&o);
    o.ref_cost = 6.01;
    e = make(&in, &o);
    step_ok(e, CPU);
    step_ok(e, GPU);
    for (int i = 0; i < 4; i++) r = step_ok(e, want_nodes[i]);
    assert_rel(r.reward, -1.0);
    gym_free(e);
    gym_free(NULL);
}

/* Plan-only (by option, or a cluster without nodes): the episode ends after
 * the last layer with the §2 cost, 5.01. */
static void test_plan_only_by_hand(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    gym_opts o;
    gym_opts_default(&o);
    o.plan_only = 1;
    for (int variant = 0; variant < 2; variant++) {
        gym_env *e;
        if (variant == 0) {
            e = make(&in, &o);
        } else {
            in.cl.n_nodes = 0;
            in.cl.nodes = NULL;
            e = make(&in, NULL);
        }
        step_ok(e, CPU);
        gym_step_result r = step_ok(e, GPU);
        assert_int_equal(r.terminated, 1);
        assert_int_equal(r.feasible, 1);
        assert_rel(r.cost, 5.01);
        assert_rel(r.reward, -5.01);
        assert_null(gym_task_nodes(e, NULL, NULL));
        assert_int_equal(gym_plan(e)->placed, 0);
        gym_free(e);
    }
}

/* Fixed counts (gym_opts.workers, .ps) on the tiny plan [cpu, gpu], with
 * n0 holding 2 cpu units and 2 ps slots. k = 1, 1 and g = 1, 1, so 3
 * workers and 3 ps give the extra worker and the extra ps to stage 0 (the
 * ties go to the first): stage 0 runs 2 workers and 2 ps, stage 1 1 and 1.
 * theta_0 = 2 * 10 / 0.01002 (alpha 0), theta_1 = 10 / 0.01002: theta and
 * T = 3607.2 s stay, the price is 2 * 1 + 1 * 4 = 6 $/h, cost 3607.2 / 3600
 * * 6 = 6.012 $. The NODE phase then places exactly those 6 tasks. 1
 * worker is fewer than the plan needs; 4 put a second worker on stage 1,
 * which the one gpu unit of the nodes cannot hold. */
static void test_fixed_counts(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.nodes[0].units = 2;
    in.nodes[0].ps_slots = 2;
    gym_opts o;
    gym_opts_default(&o);
    o.workers = 3;
    o.ps = 3;
    o.plan_only = 1;
    gym_env *e = make(&in, &o);
    step_ok(e, CPU);
    gym_step_result r = step_ok(e, GPU);
    assert_int_equal(r.feasible, 1);
    assert_rel(r.cost, 6.012);
    const model_plan *p = gym_plan(e);
    assert_int_equal(p->stages[0].units, 2);
    assert_int_equal(p->stages[0].n_ps, 2);
    assert_int_equal(p->stages[1].units, 1);
    assert_int_equal(p->stages[1].n_ps, 1);
    gym_free(e);

    o.plan_only = 0;
    e = make(&in, &o);
    step_ok(e, CPU);
    r = step_ok(e, GPU);
    assert_int_equal(r.phase, GYM_PHASE_NODE);
    int n = 0;
    gym_task_nodes(e, &n, NULL);
    assert_int_equal(n, 6);
    /* task order: stage 0's 2 workers and 2 ps, then stage 1's worker, ps */
    const int place[6] = {0, 0, 0, 0, 1, 1};
    for (int i = 0; i < 6; i++) r = step_ok(e, place[i]);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 1);
    assert_int_equal(gym_plan(e)->stages[0].units, 2);
    gym_free(e);

    o.workers = 1;
    o.ps = 0;
    e = make(&in, &o);
    step_ok(e, CPU);
    r = step_ok(e, GPU);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 0);
    assert_int_equal(r.reason, MODEL_ERR_CAPACITY);
    assert_non_null(strstr(gym_why(e), "the plan needs 2 workers over its 2 stages"));
    gym_free(e);

    o.workers = 4;
    e = make(&in, &o);
    step_ok(e, CPU);
    r = step_ok(e, GPU);
    assert_int_equal(r.feasible, 0);
    assert_int_equal(r.reason, MODEL_ERR_PLACEMENT);
    assert_string_equal(gym_why(e), "placement: the plan needs 2 workers on gpu, the nodes hold "
                                    "1 units");
    gym_free(e);
}

/* A type whose units cannot hold layer 0 is masked, and stepping it is
 * refused. Without nodes the cap is the type count. */
static void test_mask_memory(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.types[GPU].mem = 5e5; /* < m_0 = 1e6 */
    gym_env *e = make(&in, NULL);
    unsigned char m[2];
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[CPU], 1);
    assert_int_equal(m[GPU], 0);
    assert_int_equal(gym_step(e, GPU, NULL), -1);
    gym_free(e);

    /* Memory of the open stage accumulates: cpu holds 1.5e6, so L0 + L1
     * (2e6) cannot share a cpu stage, L1 alone fits on gpu. */
    tiny_init(&in);
    in.types[CPU].mem = 1.5e6;
    e = make(&in, NULL);
    step_ok(e, CPU);
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[CPU], 0);
    assert_int_equal(m[GPU], 1);
    gym_free(e);
}

/* Units committed by a closed stage: cpu has 1 unit, stage 0 (L0 on cpu)
 * takes it (k = 1, see the header) when L1 opens a gpu stage; a new cpu
 * stage for L2 would need another unit, so cpu is masked at L2. Before the
 * stage closes, continuing on cpu is allowed. */
static void test_mask_units_used(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.types[CPU].count = 1;
    in.layers[1] = in.layers[0];
    in.layers[2] = in.layers[0];
    in.job.n_layers = 3;
    in.cl.n_nodes = 0;
    gym_env *e = make(&in, NULL);
    unsigned char m[2];
    assert_int_equal(gym_mask(e, m), 2);
    step_ok(e, CPU);
    assert_int_equal(gym_mask(e, m), 2); /* continue cpu, or close it for gpu */
    step_ok(e, GPU);
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[CPU], 0);
    assert_int_equal(m[GPU], 1);
    assert_int_equal(gym_step(e, CPU, NULL), -1);
    gym_step_result r = step_ok(e, GPU);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 1);
    gym_free(e);

    /* No cpu node: with a NODE phase the cap is the nodes' units (0), so
     * cpu is masked from the start although the type lists 1 unit. */
    tiny_init(&in);
    in.nodes[0].type = GPU;
    e = make(&in, NULL);
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[CPU], 0);
    gym_free(e);
}

/* Throughput: with alpha = 0.5 a stage never reaches R once q = R t / B >=
 * 2. At R = 150, L0 on cpu: t >= C = 0.01, q >= 0.15, fine. With L1 at
 * 2e7 FLOP, L0 + L1 on cpu: C = 10 * 2.1e7 / 1e9 = 0.21, q >= 150 * 0.21 /
 * 10 = 3.15 >= 2: continuing the cpu stage is masked. L1 alone on gpu:
 * t = 10 * 2e7 / 1e10 + 2e-5 = 0.02002, q = 0.3003: allowed. */
static void test_mask_throughput(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.layers[1].flops = 2e7;
    in.job.alpha = 0.5;
    in.job.min_throughput = 150;
    in.cl.n_nodes = 0;
    gym_env *e = make(&in, NULL);
    unsigned char m[2];
    step_ok(e, CPU);
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[CPU], 0);
    assert_int_equal(m[GPU], 1);
    gym_free(e);
}

/* A fitted curve th = (1, 1, 0, 0): alpha(p) = (1/p) / (1 + 1/p) =
 * 1 / (p + 1), so a stage's serial fraction falls as its ps tasks grow. One
 * type (flops 1e9, net_bw 1e10), shard 1e6, two layers of 1e6 params and
 * flops 1e5 and 0, B 10, R 19000:
 *   L0 alone: t = 10 * 1e5 / 1e9 + 2 * 1e6 / 1e10 = 1.2e-3, g = 1,
 *     alpha 1/2, q = 19000 * 1.2e-3 / 10 = 2.28, alpha q = 1.14 >= 1: never;
 *   L0..L1: t = 1e-3 + 4e-4 = 1.4e-3, g = 2, alpha 1/3, q = 2.66, alpha q
 *     = 0.887, k = ceil(2.66 (2/3) / (1 - 0.887)) = ceil(15.65) = 16 <= 20.
 * The only plan, [t0, t0], is feasible, so layer 0 must not be masked even
 * though its prefix alone can never reach R. */
static void test_mask_fitted_curve(void **state) {
    (void)state;
    inst in;
    memset(&in, 0, sizeof in);
    in.types[0] = (model_type){"t0", 0, 1e9, 1e9, 1e10, 1e9, 1.0, 20};
    in.layers[0] = (model_layer){"L0", 1e5, 0, 0, 1e6, 1e6};
    in.layers[1] = (model_layer){"L1", 0, 0, 0, 1e6, 1e6};
    in.cl = (model_cluster){1, in.types, 0, NULL, 0, NULL, 5e8, 1e-3, NULL, NULL};
    in.job = (model_job){.name = "curve", .n_layers = 2, .layers = in.layers, .batch = 10,
                         .samples = 1e6, .min_throughput = 19000, .shard = 1e6};
    in.job.curve = (model_curve){{1, 1, 0, 0}, 1};
    model_plan *p = model_plan_create(2);
    int assign[2] = {0, 0};
    assert_int_equal(model_eval(&in.job, &in.cl, assign, p), MODEL_FEASIBLE);
    assert_int_equal(p->stages[0].units, 16);
    model_stage st;
    model_stage_eval(&in.job, &in.cl, 0, 0, 0, &st);
    assert_int_equal(st.units, 0); /* the prefix alone: never */
    gym_env *e = make(&in, NULL);
    unsigned char m[1];
    assert_int_equal(gym_mask(e, m), 1);
    step_ok(e, 0);
    gym_step_result r = step_ok(e, 0);
    assert_int_equal(r.feasible, 1);
    assert_true(r.cost == p->cost);
    gym_free(e);
    model_plan_free(p);
}

/* NODE phase: workers only on nodes of their stage's type, ps tasks only on
 * nodes with a free ps slot (one each here). */
static void test_mask_nodes(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    gym_env *e = make(&in, NULL);
    unsigned char m[2];
    step_ok(e, CPU);
    step_ok(e, GPU);
    gym_observation ob;
    gym_obs(e, &ob);
    assert_int_equal(ob.task, 0);
    assert_int_equal(ob.is_ps, 0);
    /* worker of stage 0 (cpu): n0 only */
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[0], 1);
    assert_int_equal(m[1], 0);
    assert_int_equal(gym_step(e, 1, NULL), -1);
    step_ok(e, 0);
    /* ps of stage 0: both nodes have a slot */
    gym_obs(e, &ob);
    assert_int_equal(ob.is_ps, 1);
    assert_int_equal(gym_mask(e, m), 2);
    step_ok(e, 0);
    /* worker of stage 1 (gpu): n1 only */
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[1], 1);
    step_ok(e, 1);
    /* ps of stage 1: n0's only slot is taken */
    assert_int_equal(gym_mask(e, m), 1);
    assert_int_equal(m[0], 0);
    assert_int_equal(m[1], 1);
    assert_int_equal(gym_step(e, 0, NULL), -1);
    gym_step_result r = step_ok(e, 1);
    assert_int_equal(r.terminated, 1);
    gym_free(e);
}

/* Everything an agent can observe, copied out. */
typedef struct {
    gym_observation ob;
    float rows[MAXN * GYM_NODE_FEATS];
    unsigned char mask[MAXN];
    int assign[MAXL];
    int n_decided, steps, phase;
} snapshot;

static void snap(gym_env *e, int L, snapshot *s) {
    memset(s, 0, sizeof *s);
    gym_obs(e, &s->ob);
    memcpy(s->rows, s->ob.rows, (size_t)s->ob.n_rows * (size_t)s->ob.row_feats * sizeof(float));
    memcpy(s->mask, s->ob.mask, (size_t)s->ob.n_rows);
    const int *a = gym_assignment(e, &s->n_decided);
    memcpy(s->assign, a, sizeof(int) * (size_t)L);
    s->steps = gym_steps(e);
    s->phase = gym_phase(e);
    s->ob.rows = NULL;
    s->ob.mask = NULL;
}

static void assert_same_snap(const snapshot *a, const snapshot *b) {
    assert_int_equal(a->ob.phase, b->ob.phase);
    assert_int_equal(a->ob.layer, b->ob.layer);
    assert_int_equal(a->ob.task, b->ob.task);
    assert_int_equal(a->ob.stage, b->ob.stage);
    assert_int_equal(a->ob.is_ps, b->ob.is_ps);
    assert_int_equal(a->ob.n_rows, b->ob.n_rows);
    assert_int_equal(a->ob.row_feats, b->ob.row_feats);
    assert_int_equal(a->ob.n_allowed, b->ob.n_allowed);
    assert_memory_equal(a->ob.global, b->ob.global, sizeof a->ob.global);
    assert_memory_equal(a->rows, b->rows, sizeof a->rows);
    assert_memory_equal(a->mask, b->mask, sizeof a->mask);
    assert_memory_equal(a->assign, b->assign, sizeof a->assign);
    assert_int_equal(a->n_decided, b->n_decided);
    assert_int_equal(a->steps, b->steps);
    assert_int_equal(a->phase, b->phase);
}

/* A refused action (masked, out of range) leaves every observable as it
 * was, in both phases. */
static void test_refused_changes_nothing(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.types[CPU].mem = 1.5e6; /* cpu masked at L1 once L0 is on cpu */
    gym_env *e = make(&in, NULL);
    step_ok(e, CPU);
    snapshot before, after;
    snap(e, 2, &before);
    assert_int_equal(before.mask[CPU], 0);
    assert_int_equal(gym_step(e, CPU, NULL), -1);
    assert_int_equal(gym_step(e, 2, NULL), -1);
    assert_int_equal(gym_step(e, -1, NULL), -1);
    snap(e, 2, &after);
    assert_same_snap(&before, &after);
    /* and the episode goes on as if nothing happened */
    step_ok(e, GPU);
    assert_int_equal(gym_phase(e), GYM_PHASE_NODE);
    snap(e, 2, &before);
    assert_int_equal(gym_step(e, 1, NULL), -1); /* cpu worker on the gpu node */
    snap(e, 2, &after);
    assert_same_snap(&before, &after);
    int n_placed = -1;
    gym_task_nodes(e, NULL, &n_placed);
    assert_int_equal(n_placed, 0);
    gym_free(e);
}

/* Unmasked, an all-cpu plan breaks cpu memory (2e6 > 1.5e6): the episode
 * ends after the last layer with the infeasible reward, -101 by the
 * header's arithmetic, or the one given in the options. */
static void test_infeasible_plan(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.types[CPU].mem = 1.5e6;
    gym_opts o;
    gym_opts_default(&o);
    o.unmasked = 1;
    gym_env *e = make(&in, &o);
    assert_rel(gym_infeasible_reward(e), -101.0);
    step_ok(e, CPU);
    gym_step_result r = step_ok(e, CPU);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 0);
    assert_int_equal(r.dead_end, 0);
    assert_int_equal(r.reason, MODEL_ERR_MEMORY);
    assert_rel(r.reward, -101.0);
    assert_non_null(strstr(gym_why(e), "memory"));
    assert_int_equal(gym_plan(e)->reason, MODEL_ERR_MEMORY);
    gym_free(e);

    o.infeasible_reward = -10.0;
    e = make(&in, &o);
    step_ok(e, CPU);
    r = step_ok(e, CPU);
    assert_true(r.reward == -10.0);
    gym_free(e);

    /* Masked, the same plan cannot be built at all. */
    e = make(&in, NULL);
    step_ok(e, CPU);
    assert_int_equal(gym_step(e, CPU, &r), -1);
    gym_free(e);
}

/* A dead end: types A and B each hold 1.5e6 bytes per unit and A has one
 * unit; three layers of 1e6. After [A, B], L2 can neither join the B stage
 * (2e6 > 1.5e6) nor open a new A stage (A's unit went to the closed stage
 * 0): the mask is empty, every step is refused, and gym_terminate ends the
 * episode with the infeasible reward, reason capacity. */
static void test_dead_end(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.types[CPU].mem = in.types[GPU].mem = 1.5e6;
    in.types[CPU].count = 1;
    in.layers[1] = in.layers[0];
    in.layers[2] = in.layers[0];
    in.job.n_layers = 3;
    in.cl.n_nodes = 0;
    gym_opts o;
    gym_opts_default(&o);
    o.infeasible_reward = -10.0;
    gym_env *e = make(&in, &o);
    step_ok(e, CPU);
    step_ok(e, GPU);
    unsigned char m[2] = {9, 9};
    assert_int_equal(gym_mask(e, m), 0);
    assert_int_equal(m[0], 0);
    assert_int_equal(m[1], 0);
    gym_observation ob;
    gym_obs(e, &ob);
    assert_int_equal(ob.n_allowed, 0);
    assert_int_equal(gym_step(e, 0, NULL), -1);
    assert_int_equal(gym_step(e, 1, NULL), -1);
    gym_step_result r;
    assert_int_equal(gym_terminate(e, &r), 0);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 0);
    assert_int_equal(r.dead_end, 1);
    assert_int_equal(r.reason, MODEL_ERR_CAPACITY);
    assert_true(r.reward == -10.0);
    assert_int_equal(gym_phase(e), GYM_PHASE_DONE);
    assert_non_null(strstr(gym_why(e), "dead end"));
    gym_free(e);
}

/* A placement whose link is too slow: n1's latency of 1 s makes X' =
 * 2e-5 + 2 s, theta' = 10 / 2.01002 ~ 5 < R = 100: infeasible reward. */
static void test_placement_infeasible(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.nodes[1].latency = 1.0;
    gym_env *e = make(&in, NULL);
    step_ok(e, CPU);
    step_ok(e, GPU);
    int nodes[4] = {0, 0, 1, 1};
    gym_step_result r;
    for (int i = 0; i < 4; i++) r = step_ok(e, nodes[i]);
    assert_int_equal(r.terminated, 1);
    assert_int_equal(r.feasible, 0);
    assert_int_equal(r.reason, MODEL_ERR_PLACEMENT);
    assert_rel(r.reward, -101.0);
    assert_int_equal(gym_plan(e)->placed, 1);
    assert_rel(gym_plan(e)->throughput, 10.0 / 2.01002);
    gym_free(e);
}

/* ---- random instances ------------------------------------------------------ */

static uint64_t rnd_state;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}
static double unif(double lo, double hi) {
    return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}
static double logu(double lo, double hi) { return exp(unif(log(lo), log(hi))); }
static int below(int n) { return (int)(rnd() % (uint64_t)n); }

/* A random instance, tight enough that masks, dead ends and infeasible
 * placements all happen. */
static void rand_inst(inst *in, int max_l, int max_t, int max_n) {
    memset(in, 0, sizeof *in);
    int T = 1 + below(max_t), L = 1 + below(max_l), N = below(max_n + 1);
    for (int t = 0; t < T; t++) {
        model_type *ty = &in->types[t];
        snprintf(ty->name, sizeof ty->name, "t%d", t);
        ty->is_gpu = below(2);
        ty->flops = logu(1e9, 3e10);
        ty->io_bw = logu(1e8, 1e10);
        ty->net_bw = logu(1e8, 1e10);
        ty->mem = logu(1e6, 6e6);
        ty->price = unif(0.2, 4.0);
        ty->count = 1 + below(4);
    }
    for (int l = 0; l < L; l++) {
        model_layer *ly = &in->layers[l];
        snprintf(ly->name, sizeof ly->name, "l%d", l);
        ly->flops = logu(1e5, 3e7);
        ly->io = below(2) ? logu(1e2, 1e5) : 0.0;
        ly->act = logu(1e2, 1e5);
        ly->params = below(2) ? logu(1e5, 3e9) : 0.0;
        ly->mem = logu(3e5, 2e6);
    }
    in->zones[0] = (model_zone){"z0"};
    in->zones[1] = (model_zone){"z1"};
    for (int n = 0; n < N; n++) {
        model_node *nd = &in->nodes[n];
        snprintf(nd->name, sizeof nd->name, "n%d", n);
        nd->type = below(T);
        nd->units = below(4);
        nd->ps_slots = 1 + below(2);
        nd->zone = below(2);
        nd->bw = logu(1e8, 1e10);
        nd->latency = below(2) ? unif(0, 1e-3) : 0.0;
        nd->loss = below(2) ? unif(0, 0.05) : 0.0;
    }
    in->cl = (model_cluster){T, in->types, N, N ? in->nodes : NULL, 2, in->zones,
                             5e8, 1e-3, NULL, NULL};
    const double alphas[3] = {0.0, 0.05, 0.3};
    in->job = (model_job){.name = "rand", .n_layers = L, .layers = in->layers,
                          .batch = 10, .samples = 1e6, .min_throughput = logu(10, 300),
                          .alpha = alphas[below(3)], .shard = MODEL_DEFAULT_SHARD};
    if (below(3) == 0) { /* a fitted Optimus curve in place of alpha */
        in->job.curve.fitted = 1;
        for (int i = 0; i < 4; i++) in->job.curve.th[i] = below(2) ? unif(0, 1) : 0.0;
    }
}

/* Whether the full assignment can end feasibly: model_eval accepts it and,
 * when a NODE phase follows, the nodes have units of each type and ps slots
 * enough for its tasks. */
static int plan_ok(const inst *in, const int *assign, int with_nodes, model_plan *p) {
    if (model_eval(&in->job, &in->cl, assign, p) != MODEL_FEASIBLE) return 0;
    if (!with_nodes) return 1;
    long need[MAXT] = {0}, supply[MAXT] = {0}, ps = 0, slots = 0;
    for (int s = 0; s < p->n_stages; s++) {
        need[p->stages[s].type] += p->stages[s].units;
        ps += p->stages[s].n_ps;
    }
    for (int n = 0; n < in->cl.n_nodes; n++) {
        supply[in->nodes[n].type] += in->nodes[n].units;
        slots += in->nodes[n].ps_slots;
    }
    for (int t = 0; t < in->cl.n_types; t++)
        if (need[t] > supply[t]) return 0;
    return ps <= slots;
}

/* Whether some completion of assign[0..len) is plan_ok (exhaustive). */
static int completable(const inst *in, int *assign, int len, int with_nodes, model_plan *p) {
    if (len == in->job.n_layers) return plan_ok(in, assign, with_nodes, p);
    for (int t = 0; t < in->cl.n_types; t++) {
        assign[len] = t;
        if (completable(in, assign, len + 1, with_nodes, p)) return 1;
    }
    return 0;
}

/* Walks every prefix the mask allows; at each, the mask must allow every
 * action with a feasible completion (sound), and on the last layer exactly
 * those (exact). Returns the number of states checked. */
static int walk(const inst *in, gym_env *e, int *prefix, int len, int with_nodes,
                model_plan *p) {
    gym_reset(e, 1);
    for (int l = 0; l < len; l++) assert_int_equal(gym_step(e, prefix[l], NULL), 0);
    unsigned char m[MAXT];
    int allowed = gym_mask(e, m);
    int T = in->cl.n_types, L = in->job.n_layers, cnt = 0, states = 1;
    int a[MAXL];
    memcpy(a, prefix, sizeof(int) * (size_t)len);
    for (int t = 0; t < T; t++) {
        a[len] = t;
        int c = completable(in, a, len + 1, with_nodes, p);
        if (c && !m[t])
            fail_msg("layer %d, type %d: masked but completable", len, t);
        if (len == L - 1 && m[t] && !c)
            fail_msg("last layer, type %d: allowed but infeasible", t);
        cnt += m[t];
    }
    assert_int_equal(cnt, allowed);
    if (len + 1 < L)
        for (int t = 0; t < T; t++)
            if (m[t]) {
                prefix[len] = t;
                states += walk(in, e, prefix, len + 1, with_nodes, p);
            }
    return states;
}

static void test_mask_sound_exhaustive(void **state) {
    (void)state;
    rnd_state = 0x1234567ull;
    model_plan *p = model_plan_create(MAXL);
    int states = 0, dead = 0;
    for (int k = 0; k < 300; k++) {
        inst in;
        rand_inst(&in, 5, 3, 4);
        gym_env *e = make(&in, NULL);
        int with_nodes = in.cl.n_nodes > 0;
        int prefix[MAXL];
        states += walk(&in, e, prefix, 0, with_nodes, p);
        gym_reset(e, 0);
        unsigned char m[MAXT];
        if (gym_mask(e, m) == 0) dead++;
        gym_free(e);
    }
    model_plan_free(p);
    fprintf(stderr, "exhaustive: %d states, %d dead at layer 0\n", states, dead);
    /* the walk must have covered real ground */
    assert_true(states > 1000);
    (void)dead;
}

/* Random legal rollouts: no crash, at most L + tasks steps, and a final
 * plan within every capacity, checked independently of the env. */
static void test_random_rollouts(void **state) {
    (void)state;
    rnd_state = 0xC0FFEEull;
    model_plan *p = model_plan_create(MAXL);
    int episodes = 0, feasible = 0, dead = 0, node_phases = 0, infeasible_place = 0;
    for (int k = 0; k < 100; k++) {
        inst in;
        rand_inst(&in, 12, 4, 8);
        gym_opts o;
        gym_opts_default(&o);
        o.shuffle_tasks = below(2);
        o.ref_cost = unif(0.5, 2.0);
        gym_env *e = make(&in, &o);
        int L = in.job.n_layers;
        for (int ep = 0; ep < 10; ep++, episodes++) {
            gym_reset(e, rnd());
            gym_step_result r = {0};
            int steps = 0, saw_node = 0;
            while (!r.terminated) {
                unsigned char m[MAXN > MAXT ? MAXN : MAXT];
                int n = gym_mask(e, m);
                assert_true(n >= 0);
                if (gym_phase(e) == GYM_PHASE_NODE) {
                    saw_node = 1;
                    assert_true(n > 0); /* the mask never dead-ends placement */
                }
                if (n == 0) {
                    assert_int_equal(gym_terminate(e, &r), 0);
                    dead++;
                    break;
                }
                int pick = below(n), a = -1;
                for (int i = 0; i < gym_n_actions(e); i++)
                    if (m[i] && pick-- == 0) a = i;
                assert_int_equal(gym_step(e, a, &r), 0);
                steps++;
                int n_tasks = 0;
                gym_task_nodes(e, &n_tasks, NULL);
                assert_true(steps <= L + n_tasks);
            }
            node_phases += saw_node;
            const model_plan *fp = gym_plan(e);
            int n_dec = 0;
            const int *assign = gym_assignment(e, &n_dec);
            if (r.dead_end) {
                assert_int_equal(r.feasible, 0);
                assert_true(r.reward == gym_infeasible_reward(e));
                continue;
            }
            /* A TYPE phase played under the mask always ends feasible (§2). */
            assert_int_equal(n_dec, L);
            assert_non_null(fp);
            assert_true(plan_ok(&in, assign, in.cl.n_nodes > 0, p));
            long used[MAXT] = {0};
            for (int s = 0; s < fp->n_stages; s++) used[fp->stages[s].type] += fp->stages[s].units;
            for (int t = 0; t < in.cl.n_types; t++) assert_true(used[t] <= in.types[t].count);
            if (in.cl.n_nodes > 0) {
                int n_tasks = 0, n_placed = 0;
                const int *tn = gym_task_nodes(e, &n_tasks, &n_placed);
                assert_non_null(tn);
                assert_int_equal(n_placed, n_tasks);
                assert_int_equal(n_tasks, place_task_count(p));
                int units[MAXN] = {0}, slots[MAXN] = {0};
                for (int i = 0; i < n_tasks; i++) {
                    int s = -1, is_ps = -1;
                    assert_int_equal(place_task_stage(p, i, &s, &is_ps), 0);
                    assert_true(tn[i] >= 0 && tn[i] < in.cl.n_nodes);
                    if (is_ps) {
                        slots[tn[i]]++;
                    } else {
                        units[tn[i]]++;
                        assert_int_equal(in.nodes[tn[i]].type, p->stages[s].type);
                    }
                }
                for (int n = 0; n < in.cl.n_nodes; n++) {
                    assert_true(units[n] <= in.nodes[n].units);
                    assert_true(slots[n] <= in.nodes[n].ps_slots);
                }
                assert_int_equal(fp->placed, 1);
                if (!r.feasible) {
                    assert_int_equal(r.reason, MODEL_ERR_PLACEMENT);
                    infeasible_place++;
                }
            }
            if (r.feasible) {
                feasible++;
                assert_true(r.cost == fp->cost);
                assert_true(r.reward == -fp->cost / o.ref_cost);
            } else {
                assert_true(r.reward == gym_infeasible_reward(e));
            }
            /* the penalty is below every feasible reward */
            if (r.feasible) assert_true(r.reward > gym_infeasible_reward(e));
        }
        gym_free(e);
    }
    model_plan_free(p);
    fprintf(stderr, "rollouts: %d episodes, %d feasible, %d dead ends, %d NODE phases, "
            "%d infeasible placements\n", episodes, feasible, dead, node_phases, infeasible_place);
    assert_int_equal(episodes, 1000);
    /* the instances exercised every ending */
    assert_true(feasible > 100);
    assert_true(dead > 0);
    assert_true(node_phases > 100);
    (void)infeasible_place;
}

/* Same seed and actions, same observations, bit for bit, with the task
 * order shuffled by the seed; another seed changes the order only. */
static void test_determinism(void **state) {
    (void)state;
    rnd_state = 0xDE7ull;
    inst in;
    do { /* an instance whose first episode reaches the NODE phase */
        rand_inst(&in, 6, 3, 6);
        in.types[0].count = 4;
        in.types[0].mem = 1e8;
        in.nodes[0] = (model_node){"n0", 0, 4, 2, 0, 1e9, 1e-4, 0.0};
        in.nodes[1] = (model_node){"n1", 0, 4, 2, 1, 1e9, 1e-4, 0.0};
        if (in.cl.n_nodes < 2) in.cl.n_nodes = 2;
        in.cl.nodes = in.nodes;
        in.job.min_throughput = 10;
    } while (0);
    gym_opts o;
    gym_opts_default(&o);
    o.shuffle_tasks = 1;
    gym_env *e1 = make(&in, &o), *e2 = make(&in, &o);
    int L = in.job.n_layers;
    enum { MAXSTEPS = 128 };
    static snapshot a[MAXSTEPS], b;
    int orders[3][MAXSTEPS];
    uint64_t seeds[3] = {42, 42, 43};
    int n_steps = 0;
    for (int run = 0; run < 3; run++) {
        gym_env *e = run == 1 ? e2 : e1;
        gym_reset(e, seeds[run]);
        int k = 0;
        gym_step_result r = {0};
        while (!r.terminated) {
            assert_true(k < MAXSTEPS);
            snapshot *s = run == 0 ? &a[k] : &b;
            snap(e, L, s);
            if (run == 1) assert_same_snap(&a[k], &b);
            orders[run][k] = s->ob.task;
            /* always the first allowed action: type 0 fits every layer here */
            int act = -1;
            for (int i = 0; i < s->ob.n_rows && act < 0; i++)
                if (s->mask[i]) act = i;
            assert_true(act >= 0);
            assert_int_equal(gym_step(e, act, &r), 0);
            k++;
        }
        assert_int_equal(r.feasible, 1);
        if (run == 0) n_steps = k;
        assert_int_equal(k, n_steps);
    }
    assert_true(n_steps > L + 2);
    assert_memory_equal(orders[0], orders[1], sizeof(int) * (size_t)n_steps);
    /* seed 43 visits the tasks in another order (fixed seeds: no flake) */
    assert_memory_not_equal(orders[0], orders[2], sizeof(int) * (size_t)n_steps);
    gym_free(e1);
    gym_free(e2);
}

/* Feature values on the tiny instance, worked out from the header's
 * figures. Scales: mean layer flops 5.5e6, mean act 500, mean mem 1e6,
 * job mem 2e6, fastest type 1e10 FLOP/s, cheapest price 1, best $/FLOP
 * 4e-10 (gpu). */
static void test_features_by_hand(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    gym_env *e = make(&in, NULL);
    const double ln2 = log(2.0);

    float lf[2 * GYM_LAYER_FEATS];
    assert_int_equal(gym_layer_features(e, lf), 2);
    const float *l0 = lf, *l1 = lf + GYM_LAYER_FEATS;
    assert_feat(l0[0], log1p(1e6 / 5.5e6));
    assert_feat(l1[0], log1p(1e7 / 5.5e6));
    assert_feat(l0[1], 0.0);            /* no io anywhere */
    assert_feat(l0[2], log1p(2.0));     /* act 1e3 / mean 500 */
    assert_feat(l1[2], 0.0);
    assert_feat(l0[4], ln2);            /* mem 1e6 / mean 1e6 */
    assert_feat(l0[5], 0.0);
    assert_feat(l1[5], 1.0);
    assert_feat(l0[6], 1.0);
    assert_feat(l0[7], 0.0);
    assert_feat(l1[7], 1.0);
    assert_feat(l0[8], log1p(0.01));    /* R f / F_max = 100 * 1e6 / 1e10 */
    assert_feat(l1[8], log1p(0.1));
    assert_feat(l0[10], log1p(2e-4));   /* 2 R a / N_max = 2 * 100 * 1e3 / 1e9 */
    assert_feat(l0[11], log1p(1e-3));   /* m / M_max = 1e6 / 1e9 */

    /* TYPE phase, layer 0. */
    gym_observation ob;
    gym_obs(e, &ob);
    assert_int_equal(ob.n_rows, 2);
    assert_int_equal(ob.row_feats, GYM_TYPE_FEATS);
    const float *g = ob.global;
    assert_feat(g[0], 1.0);
    assert_feat(g[1], 0.0);
    assert_feat(g[2], 0.0);
    assert_feat(g[3], log1p(0.11));     /* R * sum f / F_max = 100 * 1.1e7 / 1e10 */
    assert_feat(g[5], log1p(2.0) / log1p(1024.0));
    assert_feat(g[6], log1p(1e6 / 5.5e6));
    assert_feat(g[8], log1p(2.0));
    assert_feat(g[10], ln2);
    assert_feat(g[11], 0.0);            /* no open stage */
    const float *c = ob.rows, *gp = ob.rows + GYM_TYPE_FEATS;
    assert_feat(c[0], 1.0);
    assert_feat(c[1], log1p(0.1));      /* 1e9 / 1e10 */
    assert_feat(gp[1], ln2);
    assert_feat(c[4], log1p(500.0));    /* M 1e9 / job mem 2e6 */
    assert_feat(c[5], ln2);             /* price 1 / 1 */
    assert_feat(gp[5], log1p(4.0));
    assert_feat(c[6], log1p(2.5));      /* 1e-9 $/FLOP over 4e-10 */
    assert_feat(gp[6], ln2);
    assert_feat(c[7], 0.0);
    assert_feat(gp[7], 1.0);
    assert_feat(c[9], 1.0);             /* cap 1 (one node unit), none used */
    assert_feat(c[10], ln2);
    assert_feat(c[11], 1e-3);           /* m_0 / M */
    assert_feat(c[12], log1p(0.1));     /* L0 on cpu: t >= C = 0.01, q = 100 * 0.01 / 10 */
    assert_feat(gp[12], log1p(0.01));   /* C = 1e-3 */
    assert_feat(c[13], ln2);            /* k = 1 */
    assert_feat(c[14], 1.0);
    assert_feat(gp[15], log1p(0.01));   /* R f_0 / F_gpu */

    /* Layer 1 after L0 on cpu. Continuing cpu: t >= 10 * 1.1e7 / 1e9 =
     * 0.11, q = 1.1, k = 2 > cap 1: masked. L1 alone on gpu: t = 0.01 +
     * 2e-5, q = 0.1002, k = 1. */
    step_ok(e, CPU);
    gym_obs(e, &ob);
    g = ob.global;
    c = ob.rows;
    gp = ob.rows + GYM_TYPE_FEATS;
    assert_feat(g[2], 0.5);
    assert_feat(g[11], 1.0);
    assert_feat(g[12], 0.5);            /* open stage: 1 of 2 layers */
    assert_feat(g[13], 1e-3);           /* its mem / M_cpu */
    assert_feat(g[14], log1p(0.1));     /* its step bound 0.01 */
    assert_feat(g[15], ln2);
    assert_feat(g[16], ln2);            /* one ps task */
    assert_feat(c[0], 0.0);
    assert_feat(c[8], 1.0);             /* the open stage's type */
    assert_feat(c[9], 0.0);             /* 1 - 0 committed - 1 for the open stage */
    assert_feat(c[11], 2e-3);
    assert_feat(c[12], log1p(1.1));
    assert_feat(c[13], log1p(2.0));
    assert_feat(gp[0], 1.0);
    assert_feat(gp[8], 0.0);
    assert_feat(gp[12], log1p(0.1002));
    assert_feat(gp[15], log1p(0.1));

    /* NODE phase, first task: the worker of stage 0 (cpu). theta =
     * 10 / 0.01002, so log(theta / R) = log(10 / 1.002). */
    step_ok(e, GPU);
    gym_obs(e, &ob);
    g = ob.global;
    assert_int_equal(ob.n_rows, 2);
    assert_int_equal(ob.row_feats, GYM_NODE_FEATS);
    assert_feat(g[0], 0.0);
    assert_feat(g[1], 1.0);
    assert_feat(g[2], 0.0);
    assert_feat(g[14], log1p(0.1002));
    assert_feat(g[17], 1.0);            /* 2 stages / 2 layers */
    assert_feat(g[18], log1p(5.0));     /* 5 $/h over the cheapest 1 $/h */
    assert_feat(g[19], 1.0);            /* 2 units of a cap of 2 */
    assert_feat(g[20], 0.0);
    assert_feat(g[21], 1.0);
    assert_feat(g[22], 1.0);
    assert_feat(g[23], log(10.0 / 1.002));
    const float *n0 = ob.rows, *n1 = ob.rows + GYM_NODE_FEATS;
    assert_feat(n0[0], 1.0);
    assert_feat(n0[1], 1.0);
    assert_feat(n1[0], 0.0);
    assert_feat(n1[1], 0.0);
    assert_feat(n0[2], 1.0);
    assert_feat(n0[3], ln2);
    assert_feat(n0[6], 0.0);            /* nothing of the stage placed yet */
    assert_feat(n0[10], 1.0);           /* min(1e9, 1e9) * 1 / 1e9 */
    assert_feat(n0[11], ln2);
    assert_feat(n0[12], 0.0);
    assert_feat(n1[12], log1p(2e-3 / 0.01002));
    assert_feat(n1[14], 1.0);
    assert_feat(n1[15], log1p(4.0));

    /* After w0 -> n0, the stage's ps task. */
    step_ok(e, 0);
    gym_obs(e, &ob);
    n0 = ob.rows;
    n1 = ob.rows + GYM_NODE_FEATS;
    assert_feat(ob.global[20], 1.0);
    assert_feat(ob.global[21], 0.0);
    assert_feat(n0[2], 0.0);
    assert_feat(n0[6], 1.0);
    assert_feat(n0[7], 1.0);
    assert_feat(n0[8], ln2);
    assert_feat(n1[6], 1.0);            /* same zone */
    assert_feat(n1[7], 0.0);

    /* After ps0 -> n0, stage 1's worker: stage 0's worker sits on n0. */
    step_ok(e, 0);
    gym_obs(e, &ob);
    n0 = ob.rows;
    n1 = ob.rows + GYM_NODE_FEATS;
    assert_int_equal(ob.stage, 1);
    assert_feat(n0[9], 1.0);
    assert_feat(n1[9], 0.0);
    assert_feat(n0[6], 0.0);
    assert_feat(n0[7], 0.0);
    assert_feat(n0[4], 0.0);            /* its ps slot is used */
    assert_feat(n1[1], 1.0);
    gym_free(e);
}

/* Node features 16 and 17, the zones of the stages around the task's:
 * two zones, z0 with a cpu node n0 and a gpu node n1 without free units,
 * z1 with cpu n2 and gpu n3 (2 units). The plan [cpu, gpu]: stage 1 runs
 * one gpu worker, and only z1 has gpu units for it. */
static void test_zone_features(void **state) {
    (void)state;
    inst in;
    tiny_init(&in);
    in.zones[1] = (model_zone){"z1"};
    in.nodes[1].units = 0;
    in.nodes[2] = (model_node){"n2", CPU, 1, 1, 1, 1e9, 0.0, 0.0};
    in.nodes[3] = (model_node){"n3", GPU, 2, 1, 1, 1e9, 0.0, 0.0};
    in.cl.n_nodes = 4;
    in.cl.n_zones = 2;
    gym_env *e = make(&in, NULL);
    step_ok(e, CPU);
    step_ok(e, GPU);
    gym_observation ob;
    gym_obs(e, &ob);
    assert_int_equal(ob.stage, 0);
    const float *r = ob.rows;
    /* stage 0's worker: no previous stage (16 is 0); stage 1's gpu worker
     * finds its unit in z1 only (17: min(1, 2 free / 1 worker)) */
    for (int n = 0; n < 4; n++) assert_feat(r[n * GYM_NODE_FEATS + 16], 0.0);
    assert_feat(r[0 * GYM_NODE_FEATS + 17], 0.0);
    assert_feat(r[1 * GYM_NODE_FEATS + 17], 0.0);
    assert_feat(r[2 * GYM_NODE_FEATS + 17], 1.0);
    assert_feat(r[3 * GYM_NODE_FEATS + 17], 1.0);
    /* the worker on n2 (z1), its ps on n0 (z0); then stage 1's worker:
     * the previous stage's worker is in z1 (16: 1 there, 0 in z0), and no
     * stage follows (17: 1 everywhere) */
    step_ok(e, 2);
    step_ok(e, 0);
    gym_obs(e, &ob);
    assert_int_equal(ob.stage, 1);
    r = ob.rows;
    assert_feat(r[0 * GYM_NODE_FEATS + 16], 0.0);
    assert_feat(r[1 * GYM_NODE_FEATS + 16], 0.0);
    assert_feat(r[2 * GYM_NODE_FEATS + 16], 1.0);
    assert_feat(r[3 * GYM_NODE_FEATS + 16], 1.0);
    for (int n = 0; n < 4; n++) assert_feat(r[n * GYM_NODE_FEATS + 17], 1.0);
    gym_free(e);
}

/* Bad input is refused with a message naming the field. */
static void test_create_errors(void **state) {
    (void)state;
    inst in;
    char err[256];
    tiny_init(&in);
    in.nodes[1].type = 5;
    assert_null(gym_create(&in.job, &in.cl, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cluster.nodes[1].type"));
    tiny_init(&in);
    in.layers[1].flops = -1;
    assert_null(gym_create(&in.job, &in.cl, NULL, err, sizeof err));
    assert_non_null(strstr(err, "job.layers[1].flops"));
    tiny_init(&in);
    in.types[0].net_bw = 0;
    assert_null(gym_create(&in.job, &in.cl, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cluster.types[0].net_bw"));
    tiny_init(&in);
    gym_opts o;
    gym_opts_default(&o);
    o.ref_cost = 0;
    assert_null(gym_create(&in.job, &in.cl, &o, err, sizeof err));
    assert_non_null(strstr(err, "ref_cost"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_episode_by_hand),
        cmocka_unit_test(test_plan_only_by_hand),
        cmocka_unit_test(test_fixed_counts),
        cmocka_unit_test(test_mask_memory),
        cmocka_unit_test(test_mask_units_used),
        cmocka_unit_test(test_mask_throughput),
        cmocka_unit_test(test_mask_fitted_curve),
        cmocka_unit_test(test_mask_nodes),
        cmocka_unit_test(test_refused_changes_nothing),
        cmocka_unit_test(test_infeasible_plan),
        cmocka_unit_test(test_dead_end),
        cmocka_unit_test(test_placement_infeasible),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_features_by_hand),
        cmocka_unit_test(test_zone_features),
        cmocka_unit_test(test_mask_sound_exhaustive),
        cmocka_unit_test(test_random_rollouts),
        cmocka_unit_test(test_create_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
