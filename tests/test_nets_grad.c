/* test_nets_grad.c -- every layer's backward (nets/layers) against central
 * finite differences in double precision, hand-worked forward values, and
 * the float kernels (both vmath variants) against the double ones, the
 * dense layer also on thin shapes (the float GEMV path).
 *
 * The finite-difference checks run the double instantiation of the layer
 * kernels (nn_*_d), generated from the same source as the float ones (see
 * layers.h). For a layer y = f(x, w) and a fixed random weighting R, the
 * scalar L = sum(R * y) has dL/dy = R, so one backward call with dout = R
 * gives dL/dx and dL/dw; each is compared, element by element, with
 * (L(x + h) - L(x - h)) / 2h, h = 1e-6. Gradient buffers start at a nonzero
 * value G0 that is subtracted afterwards, so a kernel that overwrote instead
 * of accumulating fails too. Tolerance: 1e-7 relative to max(1, |grad|):
 * central differences in double are good to ~1e-9 here, while any wrong
 * term of the chain rule is off by orders of magnitude more.
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

#include "nets/layers.h"
#include "nets/rng.h"
#include "nets/vmath.h"

#define FD_H 1e-6
#define FD_TOL 1e-7
#define G0 0.25

/* ---- helpers ---- */

static rng_t test_rng;

static double *rnd(size_t n, double scale)
{
    double *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = scale * (2 * rng_uniform(&test_rng) - 1);
    return p;
}

static double *filled(size_t n, double v)
{
    double *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = v;
    return p;
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

typedef double (*loss_fn)(void *ctx);

typedef struct {
    const char *name;
    double *x; /* the variable, perturbed in place */
    size_t n;
    const double *grad; /* analytic gradient, G0 already included */
} fd_var;

/* Central differences for every element of every variable. Prints the
 * largest error per variable; fails if one exceeds FD_TOL. */
static void fd_check(const char *layer, loss_fn f, void *ctx, const fd_var *vars, int nv)
{
    for (int v = 0; v < nv; v++) {
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < vars[v].n; i++) {
            double keep = vars[v].x[i];
            vars[v].x[i] = keep + FD_H;
            double lp = f(ctx);
            vars[v].x[i] = keep - FD_H;
            double lm = f(ctx);
            vars[v].x[i] = keep;
            double num = (lp - lm) / (2 * FD_H);
            double ana = vars[v].grad[i] - G0;
            double err = fabs(num - ana) / fmax(1.0, fabs(num));
            if (err > worst) {
                worst = err;
                at = i;
            }
        }
        print_message("  %-10s d/d%-6s max rel err %.2e (element %zu)\n", layer, vars[v].name, worst, at);
        if (worst > FD_TOL)
            fail_msg("%s: gradient of %s off by %.3e at element %zu", layer, vars[v].name, worst, at);
    }
}

/* ---- dense ---- */

typedef struct {
    int N, In, O;
    double *in, *w, *b, *out, *R;
} dense_ctx;

static double dense_loss(void *c)
{
    dense_ctx *d = c;
    nn_dense_forward_d(d->out, d->in, d->w, d->b, d->N, d->In, d->O);
    return dot(d->out, d->R, (size_t)d->N * d->O);
}

static void test_dense(void **state)
{
    (void)state;
    /* Hand-worked: in = [1, 2], w = [[1,0],[0,1],[1,1]], b = [0.5, 0, -1]
     * out = [1 + 0.5, 2 + 0, 1 + 2 - 1] = [1.5, 2, 2]. */
    double in1[2] = {1, 2}, w1[6] = {1, 0, 0, 1, 1, 1}, b1[3] = {0.5, 0, -1}, o1[3];
    nn_dense_forward_d(o1, in1, w1, b1, 1, 2, 3);
    assert_true(o1[0] == 1.5 && o1[1] == 2 && o1[2] == 2);
    float in1f[2] = {1, 2}, w1f[6] = {1, 0, 0, 1, 1, 1}, b1f[3] = {0.5f, 0, -1}, o1f[3];
    nn_dense_forward(o1f, in1f, w1f, b1f, 1, 2, 3);
    assert_true(o1f[0] == 1.5f && o1f[1] == 2 && o1f[2] == 2);

    dense_ctx d = {.N = 5, .In = 4, .O = 3};
    d.in = rnd(20, 1);
    d.w = rnd(12, 1);
    d.b = rnd(3, 1);
    d.out = malloc(15 * sizeof(double));
    d.R = rnd(15, 1);
    double *din = filled(20, G0), *dw = filled(12, G0), *db = filled(3, G0);
    nn_dense_backward_d(din, dw, db, d.R, d.in, d.w, d.N, d.In, d.O);
    fd_var v[] = {{"in", d.in, 20, din}, {"w", d.w, 12, dw}, {"b", d.b, 3, db}};
    fd_check("dense", dense_loss, &d, v, 3);
    free(d.in), free(d.w), free(d.b), free(d.out), free(d.R), free(din), free(dw), free(db);
}

/* ---- embedding ---- */

typedef struct {
    int N, V, E;
    const int *tok;
    double *w, *out, *R;
} emb_ctx;

static double emb_loss(void *c)
{
    emb_ctx *e = c;
    nn_embedding_forward_d(e->out, e->tok, e->w, e->N, e->V, e->E);
    return dot(e->out, e->R, (size_t)e->N * e->E);
}

static void test_embedding(void **state)
{
    (void)state;
    /* Token 1 twice (its row accumulates two gradients), token 7 is out of
     * range for V = 4: counted, row zeroed, no gradient. */
    int tok[6] = {1, 3, 1, 0, 7, 2};
    emb_ctx e = {.N = 6, .V = 4, .E = 3, .tok = tok};
    e.w = rnd(12, 1);
    e.out = malloc(18 * sizeof(double));
    e.R = rnd(18, 1);
    assert_int_equal(nn_embedding_forward_d(e.out, tok, e.w, 6, 4, 3), 1);
    assert_true(e.out[4 * 3] == 0 && e.out[4 * 3 + 1] == 0 && e.out[4 * 3 + 2] == 0);
    assert_true(e.out[0] == e.w[3] && e.out[2 * 3 + 2] == e.w[5]);
    double *dw = filled(12, G0);
    nn_embedding_backward_d(dw, e.R, tok, 6, 4, 3);
    fd_var v[] = {{"w", e.w, 12, dw}};
    fd_check("embedding", emb_loss, &e, v, 1);
    free(e.w), free(e.out), free(e.R), free(dw);
}

/* ---- activations ---- */

typedef struct {
    int kind; /* 0 tanh, 1 sigmoid, 2 relu */
    size_t n;
    double *in, *out, *R;
} act_ctx;

static void act_fwd(const act_ctx *a)
{
    if (a->kind == 0) nn_tanh_forward_d(a->out, a->in, a->n);
    if (a->kind == 1) nn_sigmoid_forward_d(a->out, a->in, a->n);
    if (a->kind == 2) nn_relu_forward_d(a->out, a->in, a->n);
}

static double act_loss(void *c)
{
    act_ctx *a = c;
    act_fwd(a);
    return dot(a->out, a->R, a->n);
}

static void test_activations(void **state)
{
    (void)state;
    const char *names[3] = {"tanh", "sigmoid", "relu"};
    for (int kind = 0; kind < 3; kind++) {
        act_ctx a = {.kind = kind, .n = 9};
        /* inputs in [-3, 3], kept 0.05 away from relu's kink at 0 */
        double in[9] = {-3, -1.7, -0.6, -0.05, 0.05, 0.3, 0.9, 2.2, 3};
        a.in = in;
        a.out = malloc(9 * sizeof(double));
        a.R = rnd(9, 1);
        act_fwd(&a);
        double *din = filled(9, G0);
        if (kind == 0) nn_tanh_backward_d(din, a.out, a.R, 9);
        if (kind == 1) nn_sigmoid_backward_d(din, a.out, a.R, 9);
        if (kind == 2) nn_relu_backward_d(din, a.out, a.R, 9);
        fd_var v[] = {{"in", in, 9, din}};
        fd_check(names[kind], act_loss, &a, v, 1);
        free(a.out), free(a.R), free(din);
    }
    /* Hand-worked: tanh(0) = 0, sigmoid(0) = 1/2, relu(-1) = 0, relu(2) = 2. */
    double x[2] = {0, -1}, y[2];
    nn_tanh_forward_d(y, x, 1);
    assert_true(y[0] == 0);
    nn_sigmoid_forward_d(y, x, 1);
    assert_true(y[0] == 0.5);
    x[0] = 2;
    nn_relu_forward_d(y, x, 2);
    assert_true(y[0] == 2 && y[1] == 0);
}

/* ---- layer norm ---- */

typedef struct {
    int N, C;
    double *in, *g, *b, *out, *mean, *rstd, *R;
} ln_ctx;

static double ln_loss(void *c)
{
    ln_ctx *l = c;
    nn_layernorm_forward_d(l->out, l->mean, l->rstd, l->in, l->g, l->b, l->N, l->C, 1e-5);
    return dot(l->out, l->R, (size_t)l->N * l->C);
}

static void test_layernorm(void **state)
{
    (void)state;
    /* Hand-worked: row [1, 2, 3, 6], mean 3, variance (4+1+0+9)/4 = 3.5,
     * eps 0: out = (x - 3)/sqrt(3.5) with g = 1, b = 0:
     * [-2, -1, 0, 3] / 1.8708287 = [-1.0690450, -0.5345225, 0, 1.6035675]. */
    double x[4] = {1, 2, 3, 6}, g[4] = {1, 1, 1, 1}, b[4] = {0}, o[4], m, r;
    nn_layernorm_forward_d(o, &m, &r, x, g, b, 1, 4, 0);
    assert_true(m == 3 && fabs(o[0] + 1.0690450) < 1e-7 && fabs(o[1] + 0.5345225) < 1e-7 && o[2] == 0 &&
                fabs(o[3] - 1.6035675) < 1e-7);

    ln_ctx l = {.N = 3, .C = 5};
    l.in = rnd(15, 2);
    l.g = rnd(5, 1);
    l.b = rnd(5, 1);
    l.out = malloc(15 * sizeof(double));
    l.mean = malloc(3 * sizeof(double));
    l.rstd = malloc(3 * sizeof(double));
    l.R = rnd(15, 1);
    ln_loss(&l);
    double *din = filled(15, G0), *dg = filled(5, G0), *db = filled(5, G0);
    nn_layernorm_backward_d(din, dg, db, l.R, l.in, l.g, l.mean, l.rstd, 3, 5);
    fd_var v[] = {{"in", l.in, 15, din}, {"g", l.g, 5, dg}, {"b", l.b, 5, db}};
    fd_check("layernorm", ln_loss, &l, v, 3);
    free(l.in), free(l.g), free(l.b), free(l.out), free(l.mean), free(l.rstd), free(l.R), free(din), free(dg),
        free(db);
}

/* ---- LSTM ---- */

typedef struct {
    int T, B, In, H;
    const int *len;
    double *x, *h0, *c0, *wih, *whh, *b;
    double *h, *c, *act, *tc;
    double *Rh, *Rc; /* weights of all h_t, and of the final c */
} lstm_ctx;

static double lstm_loss(void *v)
{
    lstm_ctx *l = v;
    nn_lstm_forward_d(l->h, l->c, l->act, l->tc, l->x, l->h0, l->c0, l->len, l->wih, l->whh, l->b, l->T, l->B,
                      l->In, l->H);
    size_t BH = (size_t)l->B * l->H;
    return dot(l->h, l->Rh, (size_t)l->T * BH) + dot(l->c + (size_t)(l->T - 1) * BH, l->Rc, BH);
}

static void lstm_case(const char *label, const int *len, int with_state)
{
    lstm_ctx l = {.T = 4, .B = 3, .In = 3, .H = 5, .len = len};
    int T = l.T, B = l.B, In = l.In, H = l.H;
    size_t BH = (size_t)B * H;
    l.x = rnd((size_t)T * B * In, 1);
    l.h0 = with_state ? rnd(BH, 1) : NULL;
    l.c0 = with_state ? rnd(BH, 1) : NULL;
    l.wih = rnd((size_t)4 * H * In, 0.6);
    l.whh = rnd((size_t)4 * H * H, 0.6);
    l.b = rnd((size_t)4 * H, 0.5);
    l.h = malloc(T * BH * sizeof(double));
    l.c = malloc(T * BH * sizeof(double));
    l.tc = malloc(T * BH * sizeof(double));
    l.act = malloc(T * BH * 4 * sizeof(double));
    l.Rh = rnd(T * BH, 1);
    l.Rc = rnd(BH, 1);
    lstm_loss(&l);
    double *dx = filled((size_t)T * B * In, G0), *dh0 = filled(BH, G0), *dc0 = filled(BH, G0);
    double *dwih = filled((size_t)4 * H * In, G0), *dwhh = filled((size_t)4 * H * H, G0),
           *db = filled(4 * H, G0);
    double *work = malloc(nn_lstm_work_size(T, B, H) * sizeof(double));
    nn_lstm_backward_d(dx, with_state ? dh0 : NULL, with_state ? dc0 : NULL, dwih, dwhh, db, work, l.Rh, l.Rc,
                       l.x, l.h0, l.c0, len, l.h, l.c, l.act, l.tc, l.wih, l.whh, T, B, In, H);
    fd_var v[] = {{"x", l.x, (size_t)T * B * In, dx},
                  {"w_ih", l.wih, (size_t)4 * H * In, dwih},
                  {"w_hh", l.whh, (size_t)4 * H * H, dwhh},
                  {"b", l.b, (size_t)4 * H, db},
                  {"h0", l.h0, BH, dh0},
                  {"c0", l.c0, BH, dc0}};
    fd_check(label, lstm_loss, &l, v, with_state ? 6 : 4);
    if (len) {
        /* carried state: instance b's h_t for t >= len[b] is its last real
         * one (or h0 if len[b] = 0) */
        for (int b = 0; b < B; b++)
            for (int t = len[b] > 0 ? len[b] : 0; t < T; t++)
                for (int j = 0; j < H; j++) {
                    double want = len[b] > 0 ? l.h[(size_t)(len[b] - 1) * BH + (size_t)b * H + j]
                                             : (l.h0 ? l.h0[(size_t)b * H + j] : 0);
                    assert_true(l.h[(size_t)t * BH + (size_t)b * H + j] == want);
                }
    }
    free(l.x), free(l.h0), free(l.c0), free(l.wih), free(l.whh), free(l.b), free(l.h), free(l.c), free(l.tc),
        free(l.act), free(l.Rh), free(l.Rc), free(dx), free(dh0), free(dc0), free(dwih), free(dwhh), free(db),
        free(work);
}

static void test_lstm(void **state)
{
    (void)state;
    /* Hand-worked step: H = In = 1, zero weights, b = [0, 0, atanh(1/2), 0],
     * c0 = 1: i = f = o = sigmoid(0) = 1/2, g = 1/2,
     * c = 1/2 * 1 + 1/2 * 1/2 = 0.75, h = 1/2 * tanh(0.75) = 0.3175745. */
    double x = 1, h0 = 0, c0 = 1, wih[4] = {0}, whh[4] = {0}, b[4] = {0, 0, atanh(0.5), 0};
    double h, c, act[4], tc;
    nn_lstm_forward_d(&h, &c, act, &tc, &x, &h0, &c0, NULL, wih, whh, b, 1, 1, 1, 1);
    assert_true(fabs(c - 0.75) < 1e-15 && fabs(h - 0.31757448) < 1e-8);

    lstm_case("lstm", NULL, 0);
    lstm_case("lstm+h0c0", NULL, 1);
    int len[3] = {4, 2, 0}; /* full, padded, empty */
    lstm_case("lstm+len", len, 1);
    int len2[3] = {1, 3, 2};
    lstm_case("lstm+len2", len2, 0);
}

/* ---- pointer ---- */

typedef struct {
    int Q, B, K, D;
    double scale, clip;
    double *q, *keys, *scores, *R;
} ptr_ctx;

static double ptr_loss(void *v)
{
    ptr_ctx *p = v;
    nn_pointer_forward_d(p->scores, p->q, p->keys, p->Q, p->B, p->K, p->D, p->scale, p->clip);
    return dot(p->scores, p->R, (size_t)p->Q * p->B * p->K);
}

static void test_pointer(void **state)
{
    (void)state;
    /* Hand-worked: Q = B = 1, K = 2, D = 2, query [1, 2], keys [[3, 0],
     * [1, -1]], scale 1/2: scores [3/2, -1/2]; clip 1: [tanh 1.5, tanh -0.5]. */
    double q1[2] = {1, 2}, k1[4] = {3, 0, 1, -1}, s1[2];
    nn_pointer_forward_d(s1, q1, k1, 1, 1, 2, 2, 0.5, 0);
    assert_true(s1[0] == 1.5 && s1[1] == -0.5);
    nn_pointer_forward_d(s1, q1, k1, 1, 1, 2, 2, 0.5, 1);
    assert_true(fabs(s1[0] - tanh(1.5)) < 1e-15 && fabs(s1[1] - tanh(-0.5)) < 1e-15);

    for (int withclip = 0; withclip < 2; withclip++) {
        ptr_ctx p = {.Q = 2, .B = 3, .K = 4, .D = 5, .scale = 0.4, .clip = withclip ? 2.0 : 0.0};
        size_t nq = (size_t)p.Q * p.B * p.D, nk = (size_t)p.B * p.K * p.D, ns = (size_t)p.Q * p.B * p.K;
        p.q = rnd(nq, 1);
        p.keys = rnd(nk, 1);
        p.scores = malloc(ns * sizeof(double));
        p.R = rnd(ns, 1);
        ptr_loss(&p);
        double *dq = filled(nq, G0), *dk = filled(nk, G0), *work = malloc(ns * sizeof(double));
        nn_pointer_backward_d(dq, dk, work, p.R, p.scores, p.q, p.keys, p.Q, p.B, p.K, p.D, p.scale, p.clip);
        fd_var v[] = {{"query", p.q, nq, dq}, {"keys", p.keys, nk, dk}};
        fd_check(withclip ? "pointer+clip" : "pointer", ptr_loss, &p, v, 2);
        free(p.q), free(p.keys), free(p.scores), free(p.R), free(dq), free(dk), free(work);
    }
}

/* ---- masked softmax + policy-gradient loss ---- */

typedef struct {
    int N, K;
    const uint8_t *mask;
    const int *action;
    double beta;
    double *logits, *probs, *logp, *ent, *adv, *Rl, *Re;
    int with_pg;
} sm_ctx;

static double sm_loss(void *v)
{
    sm_ctx *s = v;
    nn_softmax_forward_d(s->probs, s->logp, s->ent, s->logits, s->mask, s->N, s->K);
    if (s->with_pg) {
        double loss;
        assert_int_equal(nn_pg_loss_forward_d(&loss, s->logp, s->ent, s->action, s->adv, s->beta, s->N, s->K),
                         0);
        return loss;
    }
    double l = 0;
    for (int n = 0; n < s->N; n++) {
        for (int k = 0; k < s->K; k++)
            if (s->mask[n * s->K + k]) l += s->Rl[n * s->K + k] * s->logp[n * s->K + k];
        l += s->Re[n] * s->ent[n];
    }
    return l;
}

static void test_softmax(void **state)
{
    (void)state;
    /* Hand-worked: logits [0, ln 2, 5 (masked), ln 3]: exp -> 1, 2, -, 3,
     * sum 6, p = [1/6, 1/3, 0, 1/2], logp = [-ln 6, -ln 3, -inf, -ln 2],
     * H = ln6/6 + ln3/3 + ln2/2 = 0.2986265 + 0.3662041 + 0.3465736
     *   = 1.0114042. */
    double z[4] = {0, log(2.0), 5, log(3.0)}, p[4], lp[4], h;
    uint8_t m[4] = {1, 1, 0, 1};
    nn_softmax_forward_d(p, lp, &h, z, m, 1, 4);
    assert_true(fabs(p[0] - 1.0 / 6) < 1e-15 && fabs(p[1] - 1.0 / 3) < 1e-15 && p[2] == 0 &&
                fabs(p[3] - 0.5) < 1e-15);
    assert_true(isinf(lp[2]) && lp[2] < 0 && fabs(lp[0] + log(6.0)) < 1e-15);
    assert_true(fabs(h - 1.0114042) < 1e-7);
    /* the float kernel: same figures to float accuracy */
    float zf[4] = {0, logf(2.0f), 5, logf(3.0f)}, pf[4], lpf[4], hf;
    nn_softmax_forward(pf, lpf, &hf, zf, m, 1, 4);
    assert_true(fabsf(pf[3] - 0.5f) < 1e-6f && pf[2] == 0 && fabsf(hf - 1.0114042f) < 1e-6f);
    /* Policy loss by hand: action 3, adv 2, beta 0.1:
     * -2 * (-ln 2) - 0.1 * 1.0114042 = 1.3862944 - 0.1011404 = 1.2851540. */
    int a = 3;
    double adv = 2, loss;
    assert_int_equal(nn_pg_loss_forward_d(&loss, lp, &h, &a, &adv, 0.1, 1, 4), 0);
    assert_true(fabs(loss - 1.2851540) < 1e-7);
    /* an action on a masked candidate is refused */
    a = 2;
    assert_int_equal(nn_pg_loss_forward_d(&loss, lp, &h, &a, &adv, 0.1, 1, 4), -1);

    /* N = 4 rows of K = 5; row 2 is fully masked; row 3 has no action. */
    uint8_t mask[20] = {1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    int action[4] = {3, 2, -1, -1};
    for (int pg = 0; pg < 2; pg++) {
        sm_ctx s = {.N = 4, .K = 5, .mask = mask, .action = action, .beta = 0.05};
        s.with_pg = pg;
        s.logits = rnd(20, 2);
        s.probs = malloc(20 * sizeof(double));
        s.logp = malloc(20 * sizeof(double));
        s.ent = malloc(4 * sizeof(double));
        s.adv = rnd(4, 1);
        s.Rl = rnd(20, 1);
        s.Re = rnd(4, 1);
        sm_loss(&s);
        assert_true(s.ent[2] == 0 && s.probs[12] == 0);
        double *dlogits = filled(20, G0);
        double *dlogp = calloc(20, sizeof(double)), *dent = calloc(4, sizeof(double));
        if (pg) {
            nn_pg_loss_backward_d(dlogp, dent, action, s.adv, s.beta, 1.0, 4, 5);
        } else {
            for (int i = 0; i < 20; i++) dlogp[i] = mask[i] ? s.Rl[i] : 0;
            memcpy(dent, s.Re, 4 * sizeof(double));
        }
        nn_softmax_backward_d(dlogits, dlogp, dent, s.probs, s.logp, s.ent, mask, 4, 5);
        for (int i = 0; i < 20; i++)
            if (!mask[i]) assert_true(dlogits[i] == G0); /* masked: no gradient */
        fd_var v[] = {{"logits", s.logits, 20, dlogits}};
        fd_check(pg ? "softmax+pg" : "softmax", sm_loss, &s, v, 1);
        free(s.logits), free(s.probs), free(s.logp), free(s.ent), free(s.adv), free(s.Rl), free(s.Re),
            free(dlogits), free(dlogp), free(dent);
    }
}

/* ---- float kernels (both vmath variants) against the double ones ---- */

static float *to_f(const double *x, size_t n)
{
    float *f = malloc(n * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
    return f;
}

/* Largest |a - b| / max(1, |b|); inputs of the float kernel are the double
 * inputs rounded to float. */
static double maxdiff(const float *a, const double *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i])));
    return w;
}

static void check_variant(const vm_kernels *k)
{
    /* n = 37: several whole vectors and a tail, for 4 and 8 lanes */
    size_t n = 37;
    double *x = rnd(n, 9), *dy = rnd(n, 1), *y = malloc(n * sizeof(double)), *dx = filled(n, G0);
    for (size_t i = 0; i < n; i++) x[i] = (double)(float)x[i], dy[i] = (double)(float)dy[i];
    float *xf = to_f(x, n), *dyf = to_f(dy, n), *yf = malloc(n * sizeof(float)),
          *dxf = malloc(n * sizeof(float));
    struct {
        const char *name;
        void (*ff)(float *, const float *, size_t);
        void (*fb)(float *, const float *, const float *, size_t);
        void (*df)(double *, const double *, size_t);
        void (*db)(double *, const double *, const double *, size_t);
    } ops[3] = {{"tanh", k->tanh_fwd, k->tanh_bwd, nn_tanh_forward_d, nn_tanh_backward_d},
                {"sigmoid", k->sigmoid_fwd, k->sigmoid_bwd, nn_sigmoid_forward_d, nn_sigmoid_backward_d},
                {"relu", k->relu_fwd, k->relu_bwd, nn_relu_forward_d, nn_relu_backward_d}};
    for (int o = 0; o < 3; o++) {
        ops[o].ff(yf, xf, n);
        ops[o].df(y, x, n);
        double ef = maxdiff(yf, y, n);
        for (size_t i = 0; i < n; i++) dxf[i] = G0, dx[i] = G0;
        /* backward from the same (float-rounded) outputs */
        for (size_t i = 0; i < n; i++) y[i] = yf[i];
        ops[o].fb(dxf, yf, dyf, n);
        ops[o].db(dx, y, dy, n);
        double eb = maxdiff(dxf, dx, n);
        print_message("  %-7s %-8s fwd %.1e bwd %.1e\n", k->name, ops[o].name, ef, eb);
        assert_true(ef < 1e-6 && eb < 1e-6);
    }
    /* in-place forward */
    memcpy(yf, xf, n * sizeof(float));
    k->tanh_fwd(yf, yf, n);
    for (size_t i = 0; i < n; i++) assert_true(fabs(yf[i] - tanh(x[i])) < 1e-6);

    /* LSTM pointwise step and its backward: B = 3, H = 13 (tail lanes) */
    int B = 3, H = 13;
    size_t BH = (size_t)B * H;
    double *pre = rnd(BH * 4, 4), *cp = rnd(BH, 2), *dh = rnd(BH, 1), *dc = rnd(BH, 1);
    for (size_t i = 0; i < BH * 4; i++) pre[i] = (double)(float)pre[i];
    for (size_t i = 0; i < BH; i++)
        cp[i] = (double)(float)cp[i], dh[i] = (double)(float)dh[i], dc[i] = (float)dc[i];
    double *act = malloc(BH * 4 * sizeof(double)), *c = malloc(BH * sizeof(double)),
           *tc = malloc(BH * sizeof(double)), *h = malloc(BH * sizeof(double)),
           *dpre = malloc(BH * 4 * sizeof(double)), *dcp = malloc(BH * sizeof(double));
    float *actf = to_f(pre, BH * 4), *cpf = to_f(cp, BH), *dhf = to_f(dh, BH), *dcf = to_f(dc, BH);
    float *cf = malloc(BH * sizeof(float)), *tcf = malloc(BH * sizeof(float)),
          *hf = malloc(BH * sizeof(float)), *dpref = malloc(BH * 4 * sizeof(float)),
          *dcpf = malloc(BH * sizeof(float));
    memcpy(act, pre, BH * 4 * sizeof(double));
    nn_lstm_cell_forward_d(act, c, tc, h, cp, B, H);
    k->lstm_fwd(actf, cf, tcf, hf, cpf, B, H);
    double e1 = fmax(fmax(maxdiff(actf, act, BH * 4), maxdiff(cf, c, BH)),
                     fmax(maxdiff(tcf, tc, BH), maxdiff(hf, h, BH)));
    /* backward from the float forward's saved values */
    for (size_t i = 0; i < BH * 4; i++) act[i] = actf[i];
    for (size_t i = 0; i < BH; i++) tc[i] = tcf[i];
    nn_lstm_cell_backward_d(dpre, dcp, dh, dc, act, cp, tc, B, H);
    k->lstm_bwd(dpref, dcpf, dhf, dcf, actf, cpf, tcf, B, H);
    double e2 = fmax(maxdiff(dpref, dpre, BH * 4), maxdiff(dcpf, dcp, BH));
    /* dc_prev may alias dc */
    k->lstm_bwd(dpref, dcf, dhf, dcf, actf, cpf, tcf, B, H);
    double e3 = maxdiff(dcf, dcp, BH);
    print_message("  %-7s lstm     fwd %.1e bwd %.1e aliased %.1e\n", k->name, e1, e2, e3);
    assert_true(e1 < 2e-6 && e2 < 2e-6 && e3 < 2e-6);
    /* the step with the gate bias fused: same as adding it first */
    double *biasd = rnd(4 * (size_t)H, 1);
    float *bias = to_f(biasd, 4 * (size_t)H);
    free(biasd);
    float *pref = to_f(pre, BH * 4), *actb = to_f(pre, BH * 4);
    for (int r = 0; r < B; r++)
        for (int j = 0; j < 4 * H; j++) actb[(size_t)r * 4 * H + j] += bias[j];
    k->lstm_fwd(actb, cf, tcf, hf, cpf, B, H);
    float *hb = malloc(BH * sizeof(float));
    memcpy(hb, hf, BH * sizeof(float));
    k->lstm_fwd_bias(pref, cf, tcf, hf, cpf, bias, B, H);
    assert_memory_equal(hb, hf, BH * sizeof(float));
    assert_memory_equal(actb, pref, BH * 4 * sizeof(float));
    free(bias), free(pref), free(actb), free(hb);

    /* layer norm: N = 3 rows of C = 13 (tail lanes), one row offset by
     * 100 (a large mean over a small spread) */
    int N = 3, C = 13;
    size_t NC = (size_t)N * C;
    double *lx = rnd(NC, 2), *lg = rnd(C, 1), *lb = rnd(C, 1), *ldy = rnd(NC, 1);
    for (int i = 0; i < C; i++) lx[C + i] += 100;
    for (size_t i = 0; i < NC; i++) lx[i] = (float)lx[i], ldy[i] = (float)ldy[i];
    for (int i = 0; i < C; i++) lg[i] = (float)lg[i], lb[i] = (float)lb[i];
    double *lo = malloc(NC * sizeof(double)), lm[3], lr[3], *ldx = filled(NC, G0), *ldg = filled(C, G0),
           *ldb = filled(C, G0);
    float *lxf = to_f(lx, NC), *lgf = to_f(lg, C), *lbf = to_f(lb, C), *ldyf = to_f(ldy, NC);
    float *lof = malloc(NC * sizeof(float)), lmf[3], lrf[3];
    float *ldxf = to_f(ldx, NC), *ldgf = to_f(ldg, C), *ldbf = to_f(ldb, C);
    nn_layernorm_forward_d(lo, lm, lr, lx, lg, lb, N, C, 1e-5);
    k->ln_fwd(lof, lmf, lrf, lxf, lgf, lbf, N, C, 1e-5f);
    double e4 = fmax(maxdiff(lof, lo, NC), maxdiff(lrf, lr, 3) / 10);
    nn_layernorm_backward_d(ldx, ldg, ldb, ldy, lx, lg, lm, lr, N, C);
    k->ln_bwd(ldxf, ldgf, ldbf, ldyf, lxf, lgf, lmf, lrf, N, C);
    double e5 = fmax(maxdiff(ldxf, ldx, NC), fmax(maxdiff(ldgf, ldg, C), maxdiff(ldbf, ldb, C)));
    print_message("  %-7s layernorm fwd %.1e bwd %.1e\n", k->name, e4, e5);
    assert_true(e4 < 2e-5 && e5 < 2e-5);
    free(lx), free(lg), free(lb), free(ldy), free(lo), free(ldx), free(ldg), free(ldb);
    free(lxf), free(lgf), free(lbf), free(ldyf), free(lof), free(ldxf), free(ldgf), free(ldbf);
    free(x), free(dy), free(y), free(dx), free(xf), free(dyf), free(yf), free(dxf);
    free(pre), free(cp), free(dh), free(dc), free(act), free(c), free(tc), free(h), free(dpre), free(dcp);
    free(actf), free(cpf), free(dhf), free(dcf), free(cf), free(tcf), free(hf), free(dpref), free(dcpf);
}

static void test_vmath_variants(void **state)
{
    (void)state;
    check_variant(vm_generic());
    if (vm_avx2())
        check_variant(vm_avx2());
    else
        print_message("  (no AVX2+FMA on this CPU: generic variant only)\n");
    /* tanh approximation over a dense sweep, both tails included */
    const vm_kernels *k = vm_best();
    enum { NS = 4001 };
    float xs[NS], ys[NS];
    for (int i = 0; i < NS; i++) xs[i] = -20.0f + 40.0f * i / (NS - 1);
    k->tanh_fwd(ys, xs, NS);
    double w = 0;
    for (int i = 0; i < NS; i++) w = fmax(w, fabs(ys[i] - tanh((double)xs[i])));
    print_message("  %s tanh max abs err on [-20,20]: %.2e\n", k->name, w);
    assert_true(w < 1e-6);
}

/* The float LSTM (vmath + sgemm) against the double one on the same
 * inputs, forward and backward, with lengths and initial state. */
static void test_lstm_float_vs_double(void **state)
{
    (void)state;
    int T = 5, B = 4, In = 6, H = 12, len[4] = {5, 3, 1, 4};
    size_t BH = (size_t)B * H, nx = (size_t)T * B * In, nih = (size_t)4 * H * In, nhh = (size_t)4 * H * H;
    double *x = rnd(nx, 1), *h0 = rnd(BH, 1), *c0 = rnd(BH, 1), *wih = rnd(nih, 0.5), *whh = rnd(nhh, 0.5),
           *b = rnd(4 * H, 0.5), *dh = rnd(T * BH, 1);
    double *all[] = {x, h0, c0, wih, whh, b, dh};
    size_t sz[] = {nx, BH, BH, nih, nhh, (size_t)4 * H, T * BH};
    for (int a = 0; a < 7; a++)
        for (size_t i = 0; i < sz[a]; i++) all[a][i] = (double)(float)all[a][i];
    double *h = malloc(T * BH * sizeof(double)), *c = malloc(T * BH * sizeof(double)),
           *tc = malloc(T * BH * sizeof(double)), *act = malloc(4 * T * BH * sizeof(double));
    double *dx = calloc(nx, sizeof(double)), *dwih = calloc(nih, sizeof(double)),
           *dwhh = calloc(nhh, sizeof(double)), *db = calloc(4 * H, sizeof(double)),
           *dh0 = calloc(BH, sizeof(double)), *dc0 = calloc(BH, sizeof(double));
    double *work = malloc(nn_lstm_work_size(T, B, H) * sizeof(double));
    nn_lstm_forward_d(h, c, act, tc, x, h0, c0, len, wih, whh, b, T, B, In, H);
    nn_lstm_backward_d(dx, dh0, dc0, dwih, dwhh, db, work, dh, NULL, x, h0, c0, len, h, c, act, tc, wih, whh,
                       T, B, In, H);
    float *xf = to_f(x, nx), *h0f = to_f(h0, BH), *c0f = to_f(c0, BH), *wihf = to_f(wih, nih),
          *whhf = to_f(whh, nhh), *bf = to_f(b, 4 * H), *dhf = to_f(dh, T * BH);
    float *hf = malloc(T * BH * sizeof(float)), *cf = malloc(T * BH * sizeof(float)),
          *tcf = malloc(T * BH * sizeof(float)), *actf = malloc(4 * T * BH * sizeof(float));
    float *dxf = calloc(nx, sizeof(float)), *dwihf = calloc(nih, sizeof(float)),
          *dwhhf = calloc(nhh, sizeof(float)), *dbf = calloc(4 * H, sizeof(float)),
          *dh0f = calloc(BH, sizeof(float)), *dc0f = calloc(BH, sizeof(float));
    float *workf = malloc(nn_lstm_work_size(T, B, H) * sizeof(float));
    nn_lstm_forward(hf, cf, actf, tcf, xf, h0f, c0f, len, wihf, whhf, bf, T, B, In, H);
    nn_lstm_backward(dxf, dh0f, dc0f, dwihf, dwhhf, dbf, workf, dhf, NULL, xf, h0f, c0f, len, hf, cf, actf,
                     tcf, wihf, whhf, T, B, In, H);
    double e[] = {maxdiff(hf, h, T * BH),    maxdiff(cf, c, T * BH),    maxdiff(dxf, dx, nx),
                  maxdiff(dwihf, dwih, nih), maxdiff(dwhhf, dwhh, nhh), maxdiff(dbf, db, 4 * H),
                  maxdiff(dh0f, dh0, BH),    maxdiff(dc0f, dc0, BH)};
    const char *en[] = {"h", "c", "dx", "dw_ih", "dw_hh", "db", "dh0", "dc0"};
    for (int i = 0; i < 8; i++) {
        print_message("  lstm float vs double %-6s %.2e\n", en[i], e[i]);
        assert_true(e[i] < 2e-5);
    }
    free(x), free(h0), free(c0), free(wih), free(whh), free(b), free(dh), free(h), free(c), free(tc),
        free(act);
    free(dx), free(dwih), free(dwhh), free(db), free(dh0), free(dc0), free(work);
    free(xf), free(h0f), free(c0f), free(wihf), free(whhf), free(bf), free(dhf), free(hf), free(cf),
        free(tcf), free(actf);
    free(dxf), free(dwihf), free(dwhhf), free(dbf), free(dh0f), free(dc0f), free(workf);
}

/* The float dense layer on thin shapes against the double one. A product
 * with one row or one column goes to sgemv in float (nets/layers.c), while
 * the double kernel always calls dgemm, so this checks the GEMV path in all
 * the transposes dense uses: forward with N = 1 (a decode step) or O = 1
 * (a scorer's output), backward's dW with O = 1 or In = 1, dX with N = 1 or
 * In = 1. Outputs start as NaN (beta 0 must not read them), gradients as
 * G0 (beta 1 must add to them). */
static void test_dense_thin_float_vs_double(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 5, 7}, {4, 5, 1}, {1, 5, 1}, {4, 1, 3}, {1, 1, 1}, {3, 6, 4}};
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        int N = shapes[c][0], In = shapes[c][1], O = shapes[c][2];
        size_t ni = (size_t)N * In, nw = (size_t)O * In, no = (size_t)N * O;
        double *in = rnd(ni, 1), *w = rnd(nw, 1), *b = rnd(O, 1), *dout = rnd(no, 1);
        double *all[] = {in, w, b, dout};
        size_t sz[] = {ni, nw, (size_t)O, no};
        for (int a = 0; a < 4; a++)
            for (size_t i = 0; i < sz[a]; i++) all[a][i] = (double)(float)all[a][i];
        double *out = filled(no, 0), *din = filled(ni, G0), *dw = filled(nw, G0), *db = filled(O, G0);
        nn_dense_forward_d(out, in, w, b, N, In, O);
        nn_dense_backward_d(din, dw, db, dout, in, w, N, In, O);
        float *inf_ = to_f(in, ni), *wf = to_f(w, nw), *bf = to_f(b, O), *doutf = to_f(dout, no);
        float *outf = malloc(no * sizeof *outf), *dinf = malloc(ni * sizeof *dinf),
              *dwf = malloc(nw * sizeof *dwf), *dbf = malloc((size_t)O * sizeof *dbf);
        for (size_t i = 0; i < no; i++) outf[i] = NAN;
        for (size_t i = 0; i < ni; i++) dinf[i] = (float)G0;
        for (size_t i = 0; i < nw; i++) dwf[i] = (float)G0;
        for (int i = 0; i < O; i++) dbf[i] = (float)G0;
        nn_dense_forward(outf, inf_, wf, bf, N, In, O);
        nn_dense_backward(dinf, dwf, dbf, doutf, inf_, wf, N, In, O);
        double e[] = {maxdiff(outf, out, no), maxdiff(dinf, din, ni), maxdiff(dwf, dw, nw),
                      maxdiff(dbf, db, (size_t)O)};
        const char *en[] = {"out", "din", "dw", "db"};
        for (int i = 0; i < 4; i++) {
            print_message("  dense %dx%d->%d float vs double %-4s %.2e\n", N, In, O, en[i], e[i]);
            if (!(e[i] < 1e-6))
                fail_msg("dense %dx%d->%d: %s off by %.3e", N, In, O, en[i], e[i]);
        }
        free(in), free(w), free(b), free(dout), free(out), free(din), free(dw), free(db);
        free(inf_), free(wf), free(bf), free(doutf), free(outf), free(dinf), free(dwf), free(dbf);
    }
}

int main(void)
{
    rng_init(&test_rng, 20240607);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_pointer),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_vmath_variants),
        cmocka_unit_test(test_lstm_float_vs_double),
        cmocka_unit_test(test_dense_thin_float_vs_double),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
