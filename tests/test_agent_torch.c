/* test_agent_torch.c -- the shipped policy network (agent/net.c) against PyTorch.
 *
 * scripts/torch_reference.py (run by the ctest fixture into
 * $STRATA_TMP/torch_reference.h5, group /agent) builds agent/net.c's network
 * in PyTorch, float64: a dense + ReLU layer embedding, a bidirectional
 * torch.nn.LSTM over each instance's layers (packed variable lengths), the
 * decoder torch.nn.LSTM over [enc, global, prev], the TYPE and NODE scorers
 * with the tanh logit clip, the masked softmax and the REINFORCE loss with
 * entropy bonus. It stores the weights (in agent_net_table's layout), a
 * batch of stored trajectories (two episodes sharing an instance, padded
 * steps, a dead end, masked candidates, a padding node decision), the
 * outputs, the loss and every parameter gradient.
 *
 * Here agent/net.c gets the same weights and inputs and runs, in float:
 *  - the rollout path: agent_net_encode, agent_net_type_step at every step
 *    (probabilities of the live episodes) and agent_net_node_step;
 *  - the training path: agent_net_type_loss and agent_net_node_loss (in
 *    chunks of 2 decisions), whose sums and accumulated gradients must
 *    match the reference's loss terms and d loss / d every tensor.
 * A tensor passes when max |c - torch| <= TOL * max(FLOOR, max |torch|):
 * each gradient is measured against its own scale (the encoder's are
 * around 1e-2), so a wrong term anywhere shows.
 */
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/net.h"
#include "nets/params.h"
#include "tests/torch_ref.h"

#define TOL 5e-6
#define FLOOR 1e-3

/* The case's sizes, read from /agent's attributes. */
typedef struct {
    int T, G, B, K, N, Kn;
    float beta, scale;
    agent_net_dims d;
} agent_case;

static int attr_i(const char *name) { return (int)attr_d("/agent", name); }

static agent_case read_case(void)
{
    agent_case c;
    /* the reference was built for these feature widths */
    assert_int_equal(attr_i("FL"), AGENT_FL);
    assert_int_equal(attr_i("FG"), AGENT_FG);
    assert_int_equal(attr_i("FT"), AGENT_FT);
    assert_int_equal(attr_i("FN"), AGENT_FN);
    c.T = attr_i("T"), c.G = attr_i("G"), c.B = attr_i("B"), c.K = attr_i("K");
    c.N = attr_i("N"), c.Kn = attr_i("Kn");
    c.beta = (float)attr_d("/agent", "beta");
    c.scale = (float)attr_d("/agent", "scale");
    c.d.embed = attr_i("E"), c.d.hidden = attr_i("H"), c.d.decoder = attr_i("Hd");
    c.d.scorer = attr_i("D"), c.d.clip = (float)attr_d("/agent", "clip");
    return c;
}

/* Reads float dataset /agent/inputs/name of n elements (new buffer). */
static float *input_f(const char *name, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "/agent/inputs/%s", name);
    double *d = read_d(path, n);
    float *f = malloc(n * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) f[i] = (float)d[i];
    free(d);
    return f;
}

static int *input_i(const char *name, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "/agent/inputs/%s", name);
    int *v = malloc(n * sizeof *v);
    assert_non_null(v);
    read_int(path, v, n);
    return v;
}

static uint8_t *input_u8(const char *name, size_t n)
{
    int *v = input_i(name, n);
    uint8_t *u = malloc(n);
    assert_non_null(u);
    for (size_t i = 0; i < n; i++) u[i] = (uint8_t)v[i];
    free(v);
    return u;
}

/* Loads the reference weights into a store made by agent_net_table. */
static nn_params *load_params(const agent_net_dims *d)
{
    nn_tensor_spec t[AN_N_TENSORS];
    char err[256], path[256];
    agent_net_table(d, t);
    nn_params *p = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    if (!p) fail_msg("%s", err);
    for (int i = 0; i < p->n; i++) {
        snprintf(path, sizeof path, "/agent/params/%.63s/%.63s", t[i].layer, t[i].name);
        double *w = read_d(path, p->size[i]);
        for (size_t e = 0; e < p->size[i]; e++) nn_param(p, i)[e] = (float)w[e];
        free(w);
    }
    return p;
}

/* Compares a double figure with the scalar dataset at path. */
static int compare_scalar(const char *label, double got, const char *path)
{
    float g = (float)got;
    return ref_compare(label, &g, path, 1, 1.0, TOL);
}

typedef struct {
    agent_case c;
    nn_params *p;
    float *lf, *glob, *rows, *prev, *adv, *nglob, *nrows, *nadv;
    int *len, *inst, *action, *naction;
    uint8_t *mask, *nmask;
} fixture;

static void load(fixture *f)
{
    agent_case *c = &f->c;
    *c = read_case();
    size_t T = (size_t)c->T, G = (size_t)c->G, B = (size_t)c->B, K = (size_t)c->K, N = (size_t)c->N,
           Kn = (size_t)c->Kn;
    f->p = load_params(&c->d);
    f->lf = input_f("lf", T * G * AGENT_FL);
    f->len = input_i("len", G);
    f->inst = input_i("inst", B);
    f->glob = input_f("glob", T * B * AGENT_FG);
    f->rows = input_f("rows", T * B * K * AGENT_FT);
    f->prev = input_f("prev", T * B * AGENT_FT);
    f->mask = input_u8("mask", T * B * K);
    f->action = input_i("action", T * B);
    f->adv = input_f("adv", B);
    f->nglob = input_f("nglob", N * AGENT_FG);
    f->nrows = input_f("nrows", N * Kn * AGENT_FN);
    f->nmask = input_u8("nmask", N * Kn);
    f->naction = input_i("naction", N);
    f->nadv = input_f("nadv", N);
}

static void unload(fixture *f)
{
    nn_params_free(f->p);
    free(f->lf), free(f->len), free(f->inst), free(f->glob), free(f->rows), free(f->prev);
    free(f->mask), free(f->action), free(f->adv), free(f->nglob), free(f->nrows), free(f->nmask);
    free(f->naction), free(f->nadv);
}

/* The rollout path: step probabilities of the live episodes, node probabilities. */
static void test_agent_rollout(void **state)
{
    (void)state;
    fixture f;
    load(&f);
    agent_case *c = &f.c;
    int T = c->T, B = c->B, K = c->K;
    agent_net_ws *ws = agent_net_ws_create(&c->d);
    assert_non_null(ws);
    assert_int_equal(agent_net_encode(ws, f.p, f.lf, f.len, T, c->G, f.inst, B), 0);
    float *probs = calloc((size_t)T * B * K, sizeof *probs);
    double *want = read_d("/agent/outputs/type_probs", (size_t)T * B * K);
    uint8_t *active = malloc((size_t)B);
    assert_non_null(probs);
    assert_non_null(active);
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) active[b] = t < f.len[f.inst[b]];
        assert_int_equal(agent_net_type_step(ws, f.p, t, f.glob + (size_t)t * B * AGENT_FG,
                                             f.rows + (size_t)t * B * K * AGENT_FT,
                                             f.prev + (size_t)t * B * AGENT_FT, f.mask + (size_t)t * B * K,
                                             active, K, probs + (size_t)t * B * K),
                         0);
        /* an episode past its layers only carries its state: its row is not compared */
        for (int b = 0; b < B; b++)
            if (!active[b])
                for (int k = 0; k < K; k++) probs[((size_t)t * B + b) * K + k] = (float)want[((size_t)t * B + b) * K + k];
    }
    int ok = ref_compare("type_step probs", probs, "/agent/outputs/type_probs", (size_t)T * B * K, 1.0, TOL);
    float *nprobs = calloc((size_t)c->N * c->Kn, sizeof *nprobs);
    assert_non_null(nprobs);
    assert_int_equal(agent_net_node_step(ws, f.p, f.nglob, f.nrows, f.nmask, c->N, c->Kn, nprobs), 0);
    ok &= ref_compare("node_step probs", nprobs, "/agent/outputs/node_probs", (size_t)c->N * c->Kn, 1.0, TOL);
    free(want), free(probs), free(nprobs), free(active);
    agent_net_ws_free(ws);
    unload(&f);
    if (!ok) fail_msg("a forward output differs from PyTorch (see above)");
}

/* The training path: loss terms and every parameter gradient. */
static void test_agent_loss_and_grads(void **state)
{
    (void)state;
    fixture f;
    load(&f);
    agent_case *c = &f.c;
    char err[256];
    agent_net_ws *ws = agent_net_ws_create(&c->d);
    assert_non_null(ws);
    agent_type_traj tt = {.T = c->T, .G = c->G, .B = c->B, .K = c->K, .lf = f.lf, .len = f.len,
                          .inst = f.inst, .glob = f.glob, .rows = f.rows, .prev = f.prev,
                          .mask = f.mask, .action = f.action, .adv = f.adv};
    agent_node_traj nt = {.N = c->N, .K = c->Kn, .glob = f.nglob, .rows = f.nrows, .mask = f.nmask,
                          .action = f.naction, .adv = f.nadv};
    nn_params_zero_grad(f.p);
    agent_loss_stats ts = {.pg = 0, .entropy = 0, .decisions = 0};
    agent_loss_stats ns = ts;
    if (agent_net_type_loss(ws, f.p, &tt, c->beta, c->scale, &ts, err, sizeof err)) fail_msg("%s", err);
    if (agent_net_node_loss(ws, f.p, &nt, c->beta, c->scale, 2, &ns, err, sizeof err)) fail_msg("%s", err);
    int ok = compare_scalar("type sum -adv logp", ts.pg, "/agent/outputs/type_pg");
    ok &= compare_scalar("type sum entropy", ts.entropy, "/agent/outputs/type_ent");
    ok &= compare_scalar("node sum -adv logp", ns.pg, "/agent/outputs/node_pg");
    ok &= compare_scalar("node sum entropy", ns.entropy, "/agent/outputs/node_ent");
    double loss = c->scale * (ts.pg - c->beta * ts.entropy) + c->scale * (ns.pg - c->beta * ns.entropy);
    ok &= compare_scalar("loss", loss, "/agent/outputs/loss");
    /* decisions: the live type steps less the dead end, the node rows less the padding */
    long want_t = 0, want_n = 0;
    for (int e = 0; e < c->T * c->B; e++) want_t += f.action[e] >= 0;
    for (int n = 0; n < c->N; n++) want_n += f.naction[n] >= 0;
    assert_int_equal(ts.decisions, want_t);
    assert_int_equal(ns.decisions, want_n);
    for (int i = 0; i < f.p->n; i++) {
        char path[256], label[128];
        const nn_tensor_spec *s = &f.p->spec[i];
        snprintf(path, sizeof path, "/agent/grads/%.63s/%.63s", s->layer, s->name);
        snprintf(label, sizeof label, "d %.50s/%.50s", s->layer, s->name);
        ok &= ref_compare(label, nn_grad(f.p, i), path, f.p->size[i], FLOOR, TOL);
    }
    agent_net_ws_free(ws);
    unload(&f);
    if (!ok) fail_msg("a loss term or gradient differs from PyTorch (see above)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_rollout),
        cmocka_unit_test(test_agent_loss_and_grads),
    };
    return cmocka_run_group_tests(tests, open_ref, close_ref);
}
