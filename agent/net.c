/* net.c -- the agent's policy network (see net.h): its parameter table, the
 * rollout steps and the training passes, composed from nets/layers.
 *
 * Every product is a GEMM over a whole batch: the encoder over [T*G] layer
 * rows, the decoder's input part in two (the encoder's columns of w_ih over
 * [T*G] layer rows, projected once per layer and instance; the global and
 * previous-row columns over [T*B] decisions in one GEMM) and its recurrence
 * per step over [B], the scorers over [N*K] candidate rows. The training
 * pass recomputes only the episodes that make a decision, and reuses the
 * rollout's encoder states when the caller says they are current. The pointwise work between them (ReLU, the LSTM
 * cell, the broadcast of the context over candidates, the softmax) is in
 * nets/vmath or in the small loops below.
 */
#include "agent/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/layers.h"
#include "nets/vmath.h"

void agent_net_dims_default(agent_net_dims *d) {
    d->embed = AGENT_NET_EMBED;
    d->hidden = AGENT_NET_HIDDEN;
    d->decoder = AGENT_NET_DECODER;
    d->scorer = AGENT_NET_SCORER;
    d->clip = (float)AGENT_NET_CLIP;
}

static int din_width(const agent_net_dims *d) { return 2 * d->hidden + AGENT_FG + AGENT_FT; }

void agent_net_table(const agent_net_dims *d, nn_tensor_spec t[AN_N_TENSORS]) {
    agent_net_table_feats(d, AGENT_FT, AGENT_FN, t);
}

void agent_net_table_feats(const agent_net_dims *d, int ft, int fn, nn_tensor_spec t[AN_N_TENSORS]) {
    int E = d->embed, H = d->hidden, Hd = d->decoder, D = d->scorer;
    int Din = din_width(d) - AGENT_FT + ft;
    t[AN_EMB_W] = nn_spec("embed", "w", NN_INIT_XAVIER, 1.0f, 0, E, AGENT_FL, 0, 0);
    t[AN_EMB_B] = nn_spec("embed", "b", NN_INIT_ZEROS, 0.0f, 1, E, 0, 0, 0);
    t[AN_ENCF_WIH] = nn_spec("enc_fwd", "w_ih", NN_INIT_XAVIER, 1.0f, 0, 4 * H, E, 0, 0);
    t[AN_ENCF_WHH] = nn_spec("enc_fwd", "w_hh", NN_INIT_ORTHO, 1.0f, 0, 4 * H, H, 0, 0);
    t[AN_ENCF_B] = nn_spec("enc_fwd", "b", NN_INIT_LSTM_BIAS, 1.0f, 1, 4 * H, 0, 0, 0);
    t[AN_ENCB_WIH] = nn_spec("enc_bwd", "w_ih", NN_INIT_XAVIER, 1.0f, 0, 4 * H, E, 0, 0);
    t[AN_ENCB_WHH] = nn_spec("enc_bwd", "w_hh", NN_INIT_ORTHO, 1.0f, 0, 4 * H, H, 0, 0);
    t[AN_ENCB_B] = nn_spec("enc_bwd", "b", NN_INIT_LSTM_BIAS, 1.0f, 1, 4 * H, 0, 0, 0);
    t[AN_DEC_WIH] = nn_spec("decoder", "w_ih", NN_INIT_XAVIER, 1.0f, 0, 4 * Hd, Din, 0, 0);
    t[AN_DEC_WHH] = nn_spec("decoder", "w_hh", NN_INIT_ORTHO, 1.0f, 0, 4 * Hd, Hd, 0, 0);
    t[AN_DEC_B] = nn_spec("decoder", "b", NN_INIT_LSTM_BIAS, 1.0f, 1, 4 * Hd, 0, 0, 0);
    t[AN_TCTX_W] = nn_spec("type_ctx", "w", NN_INIT_XAVIER, 1.0f, 0, D, Hd, 0, 0);
    t[AN_TROW_W] = nn_spec("type_row", "w", NN_INIT_XAVIER, 1.0f, 0, D, ft, 0, 0);
    t[AN_TROW_B] = nn_spec("type_row", "b", NN_INIT_ZEROS, 0.0f, 1, D, 0, 0, 0);
    t[AN_THID_W] = nn_spec("type_hid", "w", NN_INIT_XAVIER, 1.0f, 0, D, D, 0, 0);
    t[AN_THID_B] = nn_spec("type_hid", "b", NN_INIT_ZEROS, 0.0f, 1, D, 0, 0, 0);
    t[AN_TOUT_W] = nn_spec("type_out", "w", NN_INIT_XAVIER, 1.0f, 0, 1, D, 0, 0);
    t[AN_NCTX_W] = nn_spec("node_ctx", "w", NN_INIT_XAVIER, 1.0f, 0, D, AGENT_FG, 0, 0);
    t[AN_NCTX_B] = nn_spec("node_ctx", "b", NN_INIT_ZEROS, 0.0f, 1, D, 0, 0, 0);
    t[AN_NCTX2_W] = nn_spec("node_ctx2", "w", NN_INIT_XAVIER, 1.0f, 0, D, D, 0, 0);
    t[AN_NROW_W] = nn_spec("node_row", "w", NN_INIT_XAVIER, 1.0f, 0, D, fn, 0, 0);
    t[AN_NROW_B] = nn_spec("node_row", "b", NN_INIT_ZEROS, 0.0f, 1, D, 0, 0, 0);
    t[AN_NHID_W] = nn_spec("node_hid", "w", NN_INIT_XAVIER, 1.0f, 0, D, D, 0, 0);
    t[AN_NHID_B] = nn_spec("node_hid", "b", NN_INIT_ZEROS, 0.0f, 1, D, 0, 0, 0);
    t[AN_NOUT_W] = nn_spec("node_out", "w", NN_INIT_XAVIER, 1.0f, 0, 1, D, 0, 0);
}

/* net_check_feats is agent_net_check for type rows of ft features and node
 * rows of fn. */
static int net_check_feats(const agent_net_dims *d, int ft, int fn, const nn_params *p, char *err,
                           size_t errlen) {
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table_feats(d, ft, fn, t);
    if (!p || p->n != AN_N_TENSORS) {
        snprintf(err, errlen, "the network has %d tensors, expected %d", p ? p->n : 0,
                 AN_N_TENSORS);
        return -1;
    }
    for (int i = 0; i < AN_N_TENSORS; i++) {
        const nn_tensor_spec *s = &p->spec[i];
        if (strcmp(s->layer, t[i].layer) || strcmp(s->name, t[i].name) || s->ndim != t[i].ndim ||
            memcmp(s->dims, t[i].dims, sizeof s->dims)) {
            char a[64], b[64];
            snprintf(err, errlen, "tensor %d is %s/%s %s, expected %s/%s %s", i, s->layer,
                     s->name, nn_shape_str(a, sizeof a, s->ndim, s->dims), t[i].layer,
                     t[i].name, nn_shape_str(b, sizeof b, t[i].ndim, t[i].dims));
            return -1;
        }
    }
    return 0;
}

int agent_net_check(const agent_net_dims *d, const nn_params *p, char *err, size_t errlen) {
    return net_check_feats(d, AGENT_FT, AGENT_FN, p, err, errlen);
}

/* ---------------------------------------------------------------------------
 * Growing a network
 * ------------------------------------------------------------------------ */

/* A tensor dimension as blocks of units: block k has o[k] units in the
 * source network and w[k] >= o[k] in the grown one, its old units first. */
typedef struct {
    int n;
    int o[4], w[4];
} grow_dim;

static grow_dim gd1(int o, int w) { return (grow_dim){1, {o}, {w}}; }
static grow_dim gd4(int o, int w) { return (grow_dim){4, {o, o, o, o}, {w, w, w, w}}; }

/* grow_map returns the source index of grown index i, or -1 for a new unit. */
static int grow_map(const grow_dim *g, int i) {
    int base = 0;
    for (int k = 0; k < g->n; k++) {
        if (i < g->w[k]) return i < g->o[k] ? base + i : -1;
        i -= g->w[k];
        base += g->o[k];
    }
    return -1;
}

/* grow_dims writes tensor t's row and column blocks (a 1-D tensor has one
 * column). Rows are the units a weight feeds, columns the units it reads. */
static void grow_dims(int t, const agent_net_dims *s, int ft, int fn, const agent_net_dims *d,
                      grow_dim *r, grow_dim *c) {
    int E0 = s->embed, E = d->embed, H0 = s->hidden, H = d->hidden;
    int Hd0 = s->decoder, Hd = d->decoder, D0 = s->scorer, D = d->scorer;
    *c = gd1(1, 1);
    switch (t) {
    case AN_EMB_W: *r = gd1(E0, E); *c = gd1(AGENT_FL, AGENT_FL); break;
    case AN_EMB_B: *r = gd1(E0, E); break;
    case AN_ENCF_WIH: case AN_ENCB_WIH: *r = gd4(H0, H); *c = gd1(E0, E); break;
    case AN_ENCF_WHH: case AN_ENCB_WHH: *r = gd4(H0, H); *c = gd1(H0, H); break;
    case AN_ENCF_B: case AN_ENCB_B: *r = gd4(H0, H); break;
    case AN_DEC_WIH:
        *r = gd4(Hd0, Hd);
        *c = (grow_dim){4, {H0, H0, AGENT_FG, ft}, {H, H, AGENT_FG, AGENT_FT}};
        break;
    case AN_DEC_WHH: *r = gd4(Hd0, Hd); *c = gd1(Hd0, Hd); break;
    case AN_DEC_B: *r = gd4(Hd0, Hd); break;
    case AN_TCTX_W: *r = gd1(D0, D); *c = gd1(Hd0, Hd); break;
    case AN_TROW_W: *r = gd1(D0, D); *c = gd1(ft, AGENT_FT); break;
    case AN_NCTX_W: *r = gd1(D0, D); *c = gd1(AGENT_FG, AGENT_FG); break;
    case AN_NROW_W: *r = gd1(D0, D); *c = gd1(fn, AGENT_FN); break;
    case AN_THID_W: case AN_NCTX2_W: case AN_NHID_W: *r = gd1(D0, D); *c = gd1(D0, D); break;
    case AN_TOUT_W: case AN_NOUT_W: *r = gd1(1, 1); *c = gd1(D0, D); break;
    default: *r = gd1(D0, D); break; /* the scorers' biases [D] */
    }
}

int agent_net_grow(nn_params *dst, const agent_net_dims *dd, const nn_params *src,
                   const agent_net_dims *sd, char *err, size_t errlen) {
    if (dd->embed < sd->embed || dd->hidden < sd->hidden || dd->decoder < sd->decoder ||
        dd->scorer < sd->scorer) {
        snprintf(err, errlen,
                 "the network (embed %d, hidden %d, decoder %d, scorer %d) is narrower than the "
                 "one it grows from (%d, %d, %d, %d)",
                 dd->embed, dd->hidden, dd->decoder, dd->scorer, sd->embed, sd->hidden,
                 sd->decoder, sd->scorer);
        return -1;
    }
    if (dd->clip != sd->clip) {
        snprintf(err, errlen, "the logit clip is %g, the network it grows from has %g",
                 (double)dd->clip, (double)sd->clip);
        return -1;
    }
    /* src's type and node rows may have fewer features (an older schema) */
    int ft = src && src->n == AN_N_TENSORS ? (int)src->spec[AN_TROW_W].dims[1] : AGENT_FT;
    int fn = src && src->n == AN_N_TENSORS ? (int)src->spec[AN_NROW_W].dims[1] : AGENT_FN;
    if (ft > AGENT_FT || fn > AGENT_FN) {
        snprintf(err, errlen, "the network it grows from reads %d type and %d node features, this build %d and %d",
                 ft, fn, AGENT_FT, AGENT_FN);
        return -1;
    }
    if (agent_net_check(dd, dst, err, errlen) || net_check_feats(sd, ft, fn, src, err, errlen)) return -1;
    for (int t = 0; t < AN_N_TENSORS; t++) {
        grow_dim r, c;
        grow_dims(t, sd, ft, fn, dd, &r, &c);
        int R = (int)dst->spec[t].dims[0];
        int C = dst->spec[t].ndim > 1 ? (int)dst->spec[t].dims[1] : 1;
        int C0 = src->spec[t].ndim > 1 ? (int)src->spec[t].dims[1] : 1;
        float *w = nn_param(dst, t);
        const float *w0 = nn_param(src, t);
        for (int i = 0; i < R; i++) {
            int i0 = grow_map(&r, i);
            if (i0 < 0) continue; /* a new unit's weights: its initialisation */
            for (int j = 0; j < C; j++) {
                int j0 = grow_map(&c, j);
                w[(size_t)i * C + j] = j0 < 0 ? 0.0f : w0[(size_t)i0 * C0 + j0];
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Workspace
 * ------------------------------------------------------------------------ */

typedef struct {
    float *p;
    size_t cap; /* floats */
} fbuf;

/* The buffers, in one list so that create/free walk them all. */
#define WS_BUFS(X)                                                                      \
    /* encoder [T,G,*] */                                                               \
    X(ex) X(exr) X(hf) X(cf) X(tcf) X(actf) X(hr) X(cr) X(tcr) X(actr) X(enc)           \
    X(denc) X(dhf) X(dhr) X(dex) X(dexr) X(lwork)                                       \
    /* decoder [T,B,*] (din: [glob, prev]; lpenc and ddin: [T,G,4Hd] per layer) */    \
    X(din) X(hd) X(cd) X(tcd) X(actd) X(ctx) X(ddin) X(dhd) X(dctx)                     \
    /* scorer [N,K,*] and softmax [N,K] */                                              \
    X(z1) X(z2) X(th) X(probs) X(logp) X(ent) X(g1) X(g2) X(graw) X(dlogp) X(dent)      \
    X(dlogits) X(advr)                                                                  \
    /* node context [N,D]; allowed node rows packed [N,Kp,FN] and their probs [N,Kp] */ \
    X(nc1) X(dnc1) X(prow) X(pprob)                                                     \
    /* rollout state [B,*]; s_din holds [glob, prev] (the encoder's part of the      \
     * decoder's input gates is penc[T,G,4Hd], projected once per layer) */            \
    X(hprev) X(cprev) X(s_din) X(s_h) X(s_c) X(s_tc) X(s_act) X(penc) X(lpenc)          \
    /* shared steps: the representatives' states, rows and probabilities */           \
    X(uh) X(uc) X(urows) X(uprobs)                                                      \
    /* training episodes that have a decision, packed [T,Bs,*] */                       \
    X(k_glob) X(k_rows) X(k_prev) X(k_adv) X(k_target)

struct agent_net_ws {
    agent_net_dims d;
    const vm_kernels *vm;
#define X(name) fbuf name;
    WS_BUFS(X)
#undef X
    int *ibuf; /* [B] per-episode lengths, or active flags */
    size_t icap;
    int *inst; /* [B] instance per episode (rollout) */
    size_t inst_cap;
    int *pidx; /* [N,Kp] source row of each packed node row, -1: padding */
    size_t pidx_cap;
    uint8_t *pmask; /* [N,Kp] packed mask: 1 for a real row, 0 for padding */
    size_t pmask_cap;
    /* training: the kept episodes' ints and bytes, packed */
    int *k_inst;       /* [Bs] instance of each kept episode */
    int *k_action;     /* [T,Bs] */
    size_t k_icap, k_acap;
    uint8_t *k_mask;   /* [T,Bs,K] */
    size_t k_mcap;
    int *k_sel;        /* [B] source episode of each kept one */
    size_t k_scap;
    int *upos;         /* [B] row of each representative in the shared step */
    size_t upos_cap;
    uint8_t *umask;    /* [B,K] the representatives' masks */
    size_t umask_cap;
    int skip_idle;     /* 1 (default): training passes skip episodes without a decision */
    /* encoder states held for reuse by the training pass: the lf, len, T, G
     * and parameters of the last encoder_forward */
    const float *enc_lf;
    const int *enc_len;
    const nn_params *enc_p;
    int enc_T, enc_G;
    /* rollout geometry of the last encode */
    int T, G, B;
};

/* need grows b to hold n floats (contents are not kept). Returns 0 or -1. */
static int need(fbuf *b, size_t n) {
    if (n == 0) n = 1;
    if (b->cap >= n) return 0;
    free(b->p);
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    b->p = aligned_alloc(64, bytes);
    if (!b->p) {
        b->cap = 0;
        return -1;
    }
    b->cap = n;
    return 0;
}

static int need_int(int **b, size_t *cap, size_t n) {
    if (n == 0) n = 1;
    if (*cap >= n) return 0;
    free(*b);
    *b = malloc(n * sizeof **b);
    if (!*b) {
        *cap = 0;
        return -1;
    }
    *cap = n;
    return 0;
}

agent_net_ws *agent_net_ws_create(const agent_net_dims *d) {
    agent_net_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    ws->d = *d;
    ws->vm = vm_best();
    ws->skip_idle = 1;
    return ws;
}

void agent_net_ws_free(agent_net_ws *ws) {
    if (!ws) return;
#define X(name) free(ws->name.p);
    WS_BUFS(X)
#undef X
    free(ws->ibuf);
    free(ws->inst);
    free(ws->pidx);
    free(ws->pmask);
    free(ws->k_inst);
    free(ws->k_action);
    free(ws->k_mask);
    free(ws->k_sel);
    free(ws->upos);
    free(ws->umask);
    free(ws);
}

void agent_net_ws_skip_idle(agent_net_ws *ws, int on) { ws->skip_idle = on ? 1 : 0; }

/* ---------------------------------------------------------------------------
 * Small pointwise helpers
 * ------------------------------------------------------------------------ */

/* out[n] = dout[n] where y[n] > 0, else 0 (ReLU backward, overwriting). */
static void relu_grad(float *out, const float *y, const float *dout, size_t n) {
    for (size_t e = 0; e < n; e++) out[e] = y[e] > 0.0f ? dout[e] : 0.0f;
}

/* ---------------------------------------------------------------------------
 * The scorer: candidate rows against a context, shared by both heads
 * ------------------------------------------------------------------------ */

typedef struct {
    int w_row, b_row, w_hid, b_hid, w_out; /* tensor indices */
    int F;                                 /* row features */
} scorer_ix;

static const scorer_ix TYPE_SCORER = {AN_TROW_W, AN_TROW_B, AN_THID_W, AN_THID_B, AN_TOUT_W,
                                      AGENT_FT};
static const scorer_ix NODE_SCORER = {AN_NROW_W, AN_NROW_B, AN_NHID_W, AN_NHID_B, AN_NOUT_W,
                                      AGENT_FN};

/* scorer_need sizes the scorer buffers for N decisions of K candidates. */
static int scorer_need(agent_net_ws *ws, size_t N, size_t K, int train) {
    size_t NK = N * K, D = (size_t)ws->d.scorer;
    int bad = need(&ws->z1, NK * D) | need(&ws->z2, NK * D) | need(&ws->th, NK) |
              need(&ws->probs, NK) | need(&ws->logp, NK) | need(&ws->ent, N) |
              need(&ws->ctx, N * D);
    if (train)
        bad |= need(&ws->g1, NK * D) | need(&ws->g2, NK * D) | need(&ws->graw, NK) |
               need(&ws->dlogp, NK) | need(&ws->dent, N) | need(&ws->dlogits, NK) |
               need(&ws->dctx, N * D) | need(&ws->advr, N);
    return bad ? -1 : 0;
}

/* scorer_forward: rows[N,K,F] and ctx[N,D] -> logits (in ws->th as
 * tanh(raw/C) before scaling; logits written to out[N*K]). */
static void scorer_forward(agent_net_ws *ws, const nn_params *p, const scorer_ix *ix, int N,
                           int K, const float *rows, const float *ctx, float *logits) {
    int D = ws->d.scorer, NK = N * K;
    float C = ws->d.clip;
    float *z1 = ws->z1.p, *z2 = ws->z2.p, *th = ws->th.p;
    nn_dense_forward(z1, rows, nn_param(p, ix->w_row), nn_param(p, ix->b_row), NK, ix->F, D);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) ws->vm->add(z1 + ((size_t)n * K + k) * D, ctx + (size_t)n * D, (size_t)D);
    nn_relu_forward(z1, z1, (size_t)NK * D);
    nn_dense_forward(z2, z1, nn_param(p, ix->w_hid), nn_param(p, ix->b_hid), NK, D, D);
    nn_relu_forward(z2, z2, (size_t)NK * D);
    nn_dense_forward(th, z2, nn_param(p, ix->w_out), NULL, NK, D, 1);
    float inv = 1.0f / C;
    for (int e = 0; e < NK; e++) th[e] *= inv;
    nn_tanh_forward(th, th, (size_t)NK);
    for (int e = 0; e < NK; e++) logits[e] = C * th[e];
}

/* scorer_backward: from dlogits[N*K] accumulates the scorer's weight
 * gradients and writes (+=) dctx[N,D]. */
static void scorer_backward(agent_net_ws *ws, nn_params *p, const scorer_ix *ix, int N, int K,
                            const float *rows, const float *dlogits, float *dctx) {
    int D = ws->d.scorer, NK = N * K;
    size_t NKD = (size_t)NK * D;
    float *z1 = ws->z1.p, *z2 = ws->z2.p, *th = ws->th.p, *g1 = ws->g1.p, *g2 = ws->g2.p,
          *graw = ws->graw.p;
    for (int e = 0; e < NK; e++) graw[e] = dlogits[e] * (1.0f - th[e] * th[e]);
    memset(g2, 0, NKD * sizeof *g2);
    nn_dense_backward(g2, nn_grad(p, ix->w_out), NULL, graw, z2, nn_param(p, ix->w_out), NK, D, 1);
    relu_grad(g1, z2, g2, NKD);
    memset(g2, 0, NKD * sizeof *g2);
    nn_dense_backward(g2, nn_grad(p, ix->w_hid), nn_grad(p, ix->b_hid), g1, z1,
                      nn_param(p, ix->w_hid), NK, D, D);
    relu_grad(g1, z1, g2, NKD);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) ws->vm->add(dctx + (size_t)n * D, g1 + ((size_t)n * K + k) * D, (size_t)D);
    nn_dense_backward(NULL, nn_grad(p, ix->w_row), nn_grad(p, ix->b_row), g1, rows,
                      nn_param(p, ix->w_row), NK, ix->F, D);
}

/* soft_row returns decision n's soft target row (target [N,K]), or NULL
 * when it has none (no targets, or the row's first entry is negative). */
static const float *soft_row(const float *target, int n, int K) {
    const float *q = target ? target + (size_t)n * K : NULL;
    return q && q[0] >= 0.0f ? q : NULL;
}

/* softmax_loss: the masked softmax of logits[N*K] (which must not be
 * ws->dlogits), the policy-gradient loss with entropy bonus, and its
 * gradient with respect to the logits, written into ws->dlogits. A
 * decision with a soft target (target[N,K] or NULL, see agent_type_traj)
 * is taught -adv sum_k q_k logp_k over its allowed types instead of
 * -adv logp[action]. Adds the sums to *st. Returns 0, or -1 when an action
 * is out of range or masked. */
static int softmax_loss(agent_net_ws *ws, int N, int K, const float *logits, const uint8_t *mask,
                        const int *action, const float *adv, const float *target, float beta,
                        float scale, agent_loss_stats *st) {
    float *probs = ws->probs.p, *logp = ws->logp.p, *ent = ws->ent.p;
    nn_softmax_forward(probs, logp, ent, logits, mask, N, K);
    double pg = 0, en = 0;
    long dec = 0;
    for (int n = 0; n < N; n++) {
        int a = action[n];
        if (a < 0) continue;
        if (a >= K || !mask[(size_t)n * K + a]) return -1;
        const float *q = soft_row(target, n, K);
        if (q) {
            for (int k = 0; k < K; k++)
                if (mask[(size_t)n * K + k] && q[k] > 0.0f) pg += -(double)adv[n] * q[k] * logp[(size_t)n * K + k];
        } else {
            pg += -(double)adv[n] * logp[(size_t)n * K + a];
        }
        en += ent[n];
        dec++;
    }
    st->pg += pg;
    st->entropy += en;
    st->decisions += dec;
    memset(ws->dlogp.p, 0, (size_t)N * K * sizeof(float));
    memset(ws->dent.p, 0, (size_t)N * sizeof(float));
    memset(ws->dlogits.p, 0, (size_t)N * K * sizeof(float));
    if (!target) {
        nn_pg_loss_backward(ws->dlogp.p, ws->dent.p, action, adv, beta, scale, N, K);
    } else {
        for (int n = 0; n < N; n++) {
            const float *q = soft_row(target, n, K);
            float *dl = ws->dlogp.p + (size_t)n * K;
            if (!q || action[n] < 0) {
                nn_pg_loss_backward(dl, ws->dent.p + n, action + n, adv + n, beta, scale, 1, K);
                continue;
            }
            for (int k = 0; k < K; k++)
                if (mask[(size_t)n * K + k]) dl[k] += -adv[n] * q[k] * scale;
            ws->dent.p[n] += -beta * scale;
        }
    }
    nn_softmax_backward(ws->dlogits.p, ws->dlogp.p, ws->dent.p, probs, logp, ent, mask, N, K);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Encoder
 * ------------------------------------------------------------------------ */

/* encoder_forward: lf[T,G,FL] -> ws->enc[T,G,2H], keeping activations. */
static int encoder_forward(agent_net_ws *ws, const nn_params *p, const float *lf, const int *len,
                           int T, int G) {
    int E = ws->d.embed, H = ws->d.hidden;
    size_t TG = (size_t)T * G;
    ws->enc_p = NULL; /* nothing held until this pass completes */
    if (need(&ws->ex, TG * E) || need(&ws->exr, TG * E) || need(&ws->hf, TG * H) ||
        need(&ws->cf, TG * H) || need(&ws->tcf, TG * H) || need(&ws->actf, TG * 4 * H) ||
        need(&ws->hr, TG * H) || need(&ws->cr, TG * H) || need(&ws->tcr, TG * H) ||
        need(&ws->actr, TG * 4 * H) || need(&ws->enc, TG * 2 * H))
        return -1;
    nn_dense_forward(ws->ex.p, lf, nn_param(p, AN_EMB_W), nn_param(p, AN_EMB_B), (int)TG, AGENT_FL, E);
    nn_relu_forward(ws->ex.p, ws->ex.p, TG * E);
    /* the reversed sequence: row t of instance g is layer len-1-t */
    memset(ws->exr.p, 0, TG * E * sizeof(float));
    for (int g = 0; g < G; g++)
        for (int t = 0; t < len[g]; t++)
            memcpy(ws->exr.p + ((size_t)t * G + g) * E, ws->ex.p + ((size_t)(len[g] - 1 - t) * G + g) * E,
                   (size_t)E * sizeof(float));
    nn_lstm_forward(ws->hf.p, ws->cf.p, ws->actf.p, ws->tcf.p, ws->ex.p, NULL, NULL, len,
                    nn_param(p, AN_ENCF_WIH), nn_param(p, AN_ENCF_WHH), nn_param(p, AN_ENCF_B), T, G,
                    E, H);
    nn_lstm_forward(ws->hr.p, ws->cr.p, ws->actr.p, ws->tcr.p, ws->exr.p, NULL, NULL, len,
                    nn_param(p, AN_ENCB_WIH), nn_param(p, AN_ENCB_WHH), nn_param(p, AN_ENCB_B), T, G,
                    E, H);
    memset(ws->enc.p, 0, TG * 2 * H * sizeof(float));
    for (int g = 0; g < G; g++)
        for (int t = 0; t < len[g]; t++) {
            float *o = ws->enc.p + ((size_t)t * G + g) * 2 * H;
            memcpy(o, ws->hf.p + ((size_t)t * G + g) * H, (size_t)H * sizeof(float));
            memcpy(o + H, ws->hr.p + ((size_t)(len[g] - 1 - t) * G + g) * H, (size_t)H * sizeof(float));
        }
    ws->enc_p = p;
    ws->enc_lf = lf;
    ws->enc_len = len;
    ws->enc_T = T;
    ws->enc_G = G;
    return 0;
}

/* encoder_backward: from ws->denc[T,G,2H] accumulates the encoder's weight
 * gradients. */
static int encoder_backward(agent_net_ws *ws, nn_params *p, const float *lf, const int *len, int T,
                            int G) {
    int E = ws->d.embed, H = ws->d.hidden;
    size_t TG = (size_t)T * G;
    if (need(&ws->dhf, TG * H) || need(&ws->dhr, TG * H) || need(&ws->dex, TG * E) ||
        need(&ws->dexr, TG * E) || need(&ws->lwork, nn_lstm_work_size(T, G, H)))
        return -1;
    memset(ws->dhf.p, 0, TG * H * sizeof(float));
    memset(ws->dhr.p, 0, TG * H * sizeof(float));
    for (int g = 0; g < G; g++)
        for (int t = 0; t < len[g]; t++) {
            const float *d = ws->denc.p + ((size_t)t * G + g) * 2 * H;
            memcpy(ws->dhf.p + ((size_t)t * G + g) * H, d, (size_t)H * sizeof(float));
            memcpy(ws->dhr.p + ((size_t)(len[g] - 1 - t) * G + g) * H, d + H, (size_t)H * sizeof(float));
        }
    memset(ws->dex.p, 0, TG * E * sizeof(float));
    memset(ws->dexr.p, 0, TG * E * sizeof(float));
    nn_lstm_backward(ws->dex.p, NULL, NULL, nn_grad(p, AN_ENCF_WIH), nn_grad(p, AN_ENCF_WHH),
                     nn_grad(p, AN_ENCF_B), ws->lwork.p, ws->dhf.p, NULL, ws->ex.p, NULL, NULL, len,
                     ws->hf.p, ws->cf.p, ws->actf.p, ws->tcf.p, nn_param(p, AN_ENCF_WIH),
                     nn_param(p, AN_ENCF_WHH), T, G, E, H);
    nn_lstm_backward(ws->dexr.p, NULL, NULL, nn_grad(p, AN_ENCB_WIH), nn_grad(p, AN_ENCB_WHH),
                     nn_grad(p, AN_ENCB_B), ws->lwork.p, ws->dhr.p, NULL, ws->exr.p, NULL, NULL, len,
                     ws->hr.p, ws->cr.p, ws->actr.p, ws->tcr.p, nn_param(p, AN_ENCB_WIH),
                     nn_param(p, AN_ENCB_WHH), T, G, E, H);
    for (int g = 0; g < G; g++)
        for (int t = 0; t < len[g]; t++)
            ws->vm->add(ws->dex.p + ((size_t)(len[g] - 1 - t) * G + g) * E,
                        ws->dexr.p + ((size_t)t * G + g) * E, (size_t)E);
    /* ReLU then the embedding layer (dexr reused as scratch) */
    relu_grad(ws->dexr.p, ws->ex.p, ws->dex.p, TG * E);
    nn_dense_backward(NULL, nn_grad(p, AN_EMB_W), nn_grad(p, AN_EMB_B), ws->dexr.p, lf,
                      nn_param(p, AN_EMB_W), (int)TG, AGENT_FL, E);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Rollout
 * ------------------------------------------------------------------------ */

int agent_net_encode(agent_net_ws *ws, const nn_params *p, const float *lf, const int *len, int T,
                     int G, const int *inst, int B) {
    int Hd = ws->d.decoder, H2 = 2 * ws->d.hidden, Din = din_width(&ws->d);
    if (encoder_forward(ws, p, lf, len, T, G)) return -1;
    if (need(&ws->hprev, (size_t)B * Hd) || need(&ws->cprev, (size_t)B * Hd) ||
        need(&ws->penc, (size_t)T * G * 4 * Hd) || need_int(&ws->inst, &ws->inst_cap, (size_t)B))
        return -1;
    /* the encoder's part of the decoder's input gates, once per layer and
     * instance rather than once per episode: penc[T*G,4Hd] = enc[T*G,2H]
     * w_ih[:, :2H]^T */
    nn_gemm(0, 1, T * G, 4 * Hd, H2, 1.0f, ws->enc.p, H2, nn_param(p, AN_DEC_WIH), Din, 0.0f, ws->penc.p,
            4 * Hd);
    memset(ws->hprev.p, 0, (size_t)B * Hd * sizeof(float));
    memset(ws->cprev.p, 0, (size_t)B * Hd * sizeof(float));
    memcpy(ws->inst, inst, (size_t)B * sizeof(int));
    ws->T = T;
    ws->G = G;
    ws->B = B;
    return 0;
}

int agent_net_type_step(agent_net_ws *ws, const nn_params *p, int t, const float *glob,
                        const float *rows, const float *prev, const uint8_t *mask,
                        const uint8_t *active, int K, float *probs) {
    int B = ws->B, Hd = ws->d.decoder, D = ws->d.scorer, Din = din_width(&ws->d);
    if (t < 0 || t >= ws->T) return -1;
    if (need(&ws->s_din, (size_t)B * Din) || need(&ws->s_h, (size_t)B * Hd) ||
        need(&ws->s_c, (size_t)B * Hd) || need(&ws->s_tc, (size_t)B * Hd) ||
        need(&ws->s_act, (size_t)B * 4 * Hd) || need_int(&ws->ibuf, &ws->icap, (size_t)B) ||
        scorer_need(ws, (size_t)B, (size_t)K, 0) || need(&ws->dlogits, (size_t)B * K))
        return -1;
    /* input gates: the layer's projected encoder state + [glob, prev] w_ih[:, 2H:]^T */
    int H2 = 2 * ws->d.hidden, Fx = AGENT_FG + AGENT_FT;
    for (int b = 0; b < B; b++) {
        float *x = ws->s_din.p + (size_t)b * Fx;
        memcpy(x, glob + (size_t)b * AGENT_FG, AGENT_FG * sizeof(float));
        memcpy(x + AGENT_FG, prev + (size_t)b * AGENT_FT, AGENT_FT * sizeof(float));
        memcpy(ws->s_act.p + (size_t)b * 4 * Hd, ws->penc.p + ((size_t)t * ws->G + ws->inst[b]) * 4 * Hd,
               (size_t)4 * Hd * sizeof(float));
    }
    nn_gemm(0, 1, B, 4 * Hd, Fx, 1.0f, ws->s_din.p, Fx, nn_param(p, AN_DEC_WIH) + H2, Din, 1.0f, ws->s_act.p,
            4 * Hd);
    for (int b = 0; b < B; b++) ws->ibuf[b] = active[b] ? 1 : 0;
    nn_lstm_forward(ws->s_h.p, ws->s_c.p, ws->s_act.p, ws->s_tc.p, NULL, ws->hprev.p, ws->cprev.p, ws->ibuf,
                    nn_param(p, AN_DEC_WIH), nn_param(p, AN_DEC_WHH), nn_param(p, AN_DEC_B), 1, B, Din, Hd);
    memcpy(ws->hprev.p, ws->s_h.p, (size_t)B * Hd * sizeof(float));
    memcpy(ws->cprev.p, ws->s_c.p, (size_t)B * Hd * sizeof(float));
    nn_dense_forward(ws->ctx.p, ws->s_h.p, nn_param(p, AN_TCTX_W), NULL, B, Hd, D);
    float *logits = ws->dlogits.p;
    scorer_forward(ws, p, &TYPE_SCORER, B, K, rows, ws->ctx.p, logits);
    nn_softmax_forward(probs, ws->logp.p, ws->ent.p, logits, mask, B, K);
    return 0;
}

int agent_net_type_step_shared(agent_net_ws *ws, const nn_params *p, int t, const float *glob,
                               const float *rows, const float *prev, const uint8_t *mask, const int *rep,
                               int K, float *probs) {
    int B = ws->B, Hd = ws->d.decoder, D = ws->d.scorer, Din = din_width(&ws->d);
    int H2 = 2 * ws->d.hidden, Fx = AGENT_FG + AGENT_FT, G4 = 4 * Hd;
    if (t < 0 || t >= ws->T) return -1;
    if (need(&ws->s_din, (size_t)B * Fx) || need(&ws->s_h, (size_t)B * Hd) || need(&ws->s_c, (size_t)B * Hd) ||
        need(&ws->s_tc, (size_t)B * Hd) || need(&ws->s_act, (size_t)B * G4) || need(&ws->uh, (size_t)B * Hd) ||
        need(&ws->uc, (size_t)B * Hd) || need(&ws->urows, (size_t)B * K * AGENT_FT) ||
        need(&ws->uprobs, (size_t)B * K) || need_int(&ws->ibuf, &ws->icap, (size_t)B) ||
        need_int(&ws->upos, &ws->upos_cap, (size_t)B) || scorer_need(ws, (size_t)B, (size_t)K, 0) ||
        need(&ws->dlogits, (size_t)B * K))
        return -1;
    if (ws->umask_cap < (size_t)B * K) {
        free(ws->umask);
        ws->umask = malloc((size_t)B * K);
        ws->umask_cap = ws->umask ? (size_t)B * K : 0;
        if (!ws->umask) return -1;
    }
    /* gather the representatives: their inputs, states, rows and masks */
    int n = 0;
    for (int b = 0; b < B; b++) {
        if (rep[b] != b) continue;
        ws->upos[b] = n;
        float *x = ws->s_din.p + (size_t)n * Fx;
        memcpy(x, glob + (size_t)b * AGENT_FG, AGENT_FG * sizeof(float));
        memcpy(x + AGENT_FG, prev + (size_t)b * AGENT_FT, AGENT_FT * sizeof(float));
        memcpy(ws->s_act.p + (size_t)n * G4, ws->penc.p + ((size_t)t * ws->G + ws->inst[b]) * G4,
               (size_t)G4 * sizeof(float));
        memcpy(ws->uh.p + (size_t)n * Hd, ws->hprev.p + (size_t)b * Hd, (size_t)Hd * sizeof(float));
        memcpy(ws->uc.p + (size_t)n * Hd, ws->cprev.p + (size_t)b * Hd, (size_t)Hd * sizeof(float));
        memcpy(ws->urows.p + (size_t)n * K * AGENT_FT, rows + (size_t)b * K * AGENT_FT,
               (size_t)K * AGENT_FT * sizeof(float));
        memcpy(ws->umask + (size_t)n * K, mask + (size_t)b * K, (size_t)K);
        n++;
    }
    memset(probs, 0, (size_t)B * K * sizeof *probs);
    if (n == 0) return 0;
    nn_gemm(0, 1, n, G4, Fx, 1.0f, ws->s_din.p, Fx, nn_param(p, AN_DEC_WIH) + H2, Din, 1.0f, ws->s_act.p, G4);
    nn_lstm_forward(ws->s_h.p, ws->s_c.p, ws->s_act.p, ws->s_tc.p, NULL, ws->uh.p, ws->uc.p, NULL,
                    nn_param(p, AN_DEC_WIH), nn_param(p, AN_DEC_WHH), nn_param(p, AN_DEC_B), 1, n, Din, Hd);
    nn_dense_forward(ws->ctx.p, ws->s_h.p, nn_param(p, AN_TCTX_W), NULL, n, Hd, D);
    float *logits = ws->dlogits.p;
    scorer_forward(ws, p, &TYPE_SCORER, n, K, ws->urows.p, ws->ctx.p, logits);
    nn_softmax_forward(ws->uprobs.p, ws->logp.p, ws->ent.p, logits, ws->umask, n, K);
    /* scatter: every episode of a group takes its representative's state and
     * probabilities; the others (rep -1) keep their state and get zeros */
    for (int b = 0; b < B; b++) {
        if (rep[b] < 0) continue;
        int u = ws->upos[rep[b]];
        memcpy(ws->hprev.p + (size_t)b * Hd, ws->s_h.p + (size_t)u * Hd, (size_t)Hd * sizeof(float));
        memcpy(ws->cprev.p + (size_t)b * Hd, ws->s_c.p + (size_t)u * Hd, (size_t)Hd * sizeof(float));
        memcpy(probs + (size_t)b * K, ws->uprobs.p + (size_t)u * K, (size_t)K * sizeof *probs);
    }
    return 0;
}

/* node_ctx_forward: glob[N,FG] -> ws->nc1 (relu) and ws->ctx[N,D]. */
static void node_ctx_forward(agent_net_ws *ws, const nn_params *p, const float *glob, int N) {
    int D = ws->d.scorer;
    nn_dense_forward(ws->nc1.p, glob, nn_param(p, AN_NCTX_W), nn_param(p, AN_NCTX_B), N, AGENT_FG, D);
    nn_relu_forward(ws->nc1.p, ws->nc1.p, (size_t)N * D);
    nn_dense_forward(ws->ctx.p, ws->nc1.p, nn_param(p, AN_NCTX2_W), NULL, N, D, D);
}

/* node_pack gathers the allowed rows of each of the B decisions of
 * rows[B,K,FN] (mask[B,K]) into ws->prow[B,Kp,FN], in their order, padded
 * with zero rows up to Kp, the largest number allowed in one decision;
 * ws->pidx maps each packed row to its source row (-1: padding) and
 * ws->pmask marks the real ones. Returns Kp (0 when nothing is allowed),
 * or -1 when out of memory. */
static int node_pack(agent_net_ws *ws, const float *rows, const uint8_t *mask, int B, int K) {
    int Kp = 0;
    for (int b = 0; b < B; b++) {
        int n = 0;
        for (int k = 0; k < K; k++) n += mask[(size_t)b * K + k] != 0;
        if (n > Kp) Kp = n;
    }
    size_t BK = (size_t)B * (Kp > 0 ? Kp : 1);
    if (need(&ws->prow, BK * AGENT_FN) || need(&ws->pprob, BK) ||
        need_int(&ws->pidx, &ws->pidx_cap, BK))
        return -1;
    if (ws->pmask_cap < BK) {
        free(ws->pmask);
        ws->pmask = malloc(BK);
        ws->pmask_cap = ws->pmask ? BK : 0;
        if (!ws->pmask) return -1;
    }
    for (int b = 0; b < B; b++) {
        int j = 0;
        for (int k = 0; k < K; k++) {
            if (!mask[(size_t)b * K + k]) continue;
            memcpy(ws->prow.p + ((size_t)b * Kp + j) * AGENT_FN, rows + ((size_t)b * K + k) * AGENT_FN,
                   AGENT_FN * sizeof *rows);
            ws->pmask[(size_t)b * Kp + j] = 1;
            ws->pidx[(size_t)b * Kp + j++] = k;
        }
        for (; j < Kp; j++) {
            memset(ws->prow.p + ((size_t)b * Kp + j) * AGENT_FN, 0, AGENT_FN * sizeof *rows);
            ws->pmask[(size_t)b * Kp + j] = 0;
            ws->pidx[(size_t)b * Kp + j] = -1;
        }
    }
    return Kp;
}

/* The node head scores only the allowed rows (packed by node_pack): a row's
 * score depends on that row and its decision's context alone, and masked
 * rows get probability 0 anyway, so this is the same distribution at a
 * fraction of the work (a stage's workers may only go on nodes of its
 * type: a quarter of the nodes on a cluster of four types). */
int agent_net_node_step(agent_net_ws *ws, const nn_params *p, const float *glob, const float *rows,
                        const uint8_t *mask, int B, int K, float *probs) {
    int D = ws->d.scorer;
    int Kp = node_pack(ws, rows, mask, B, K);
    if (Kp < 0) return -1;
    memset(probs, 0, (size_t)B * K * sizeof *probs);
    if (Kp == 0) return 0;
    if (scorer_need(ws, (size_t)B, (size_t)Kp, 0) || need(&ws->nc1, (size_t)B * D) ||
        need(&ws->dlogits, (size_t)B * Kp))
        return -1;
    node_ctx_forward(ws, p, glob, B);
    float *logits = ws->dlogits.p;
    scorer_forward(ws, p, &NODE_SCORER, B, Kp, ws->prow.p, ws->ctx.p, logits);
    nn_softmax_forward(ws->pprob.p, ws->logp.p, ws->ent.p, logits, ws->pmask, B, Kp);
    for (size_t e = 0; e < (size_t)B * Kp; e++)
        if (ws->pidx[e] >= 0) probs[e / Kp * K + ws->pidx[e]] = ws->pprob.p[e];
    return 0;
}

/* ---------------------------------------------------------------------------
 * Training passes
 * ------------------------------------------------------------------------ */

/* keep_active packs the episodes of tr that make at least one decision
 * (an action >= 0 at some step) into ws->k_* and points *out at them: the
 * others (dropped by risk, or never deciding) contribute exactly zero to
 * the loss and its gradient, so the passes skip them. *out is tr itself
 * when every episode decides or skipping is off. Returns the kept count,
 * or -1 when out of memory. */
static int keep_active(agent_net_ws *ws, const agent_type_traj *tr, agent_type_traj *out) {
    int T = tr->T, B = tr->B, K = tr->K, Bs = 0;
    *out = *tr;
    if (!ws->skip_idle) return B;
    if (need_int(&ws->k_sel, &ws->k_scap, (size_t)B)) return -1;
    for (int b = 0; b < B; b++) {
        int any = 0;
        for (int t = 0; t < T && !any; t++) any = tr->action[(size_t)t * B + b] >= 0;
        if (any) ws->k_sel[Bs++] = b;
    }
    if (Bs == B) return B;
    size_t TBs = (size_t)T * (Bs > 0 ? Bs : 1);
    if (need(&ws->k_glob, TBs * AGENT_FG) || need(&ws->k_rows, TBs * K * AGENT_FT) ||
        need(&ws->k_prev, TBs * AGENT_FT) || need(&ws->k_adv, (size_t)B) ||
        (tr->target && need(&ws->k_target, TBs * K)) ||
        need_int(&ws->k_inst, &ws->k_icap, (size_t)B) || need_int(&ws->k_action, &ws->k_acap, TBs))
        return -1;
    if (ws->k_mcap < TBs * K) {
        free(ws->k_mask);
        ws->k_mask = malloc(TBs * K);
        ws->k_mcap = ws->k_mask ? TBs * K : 0;
        if (!ws->k_mask) return -1;
    }
    for (int j = 0; j < Bs; j++) {
        int b = ws->k_sel[j];
        ws->k_inst[j] = tr->inst[b];
        ws->k_adv.p[j] = tr->adv[b];
        for (int t = 0; t < T; t++) {
            size_t src = (size_t)t * B + b, dst = (size_t)t * Bs + j;
            memcpy(ws->k_glob.p + dst * AGENT_FG, tr->glob + src * AGENT_FG, AGENT_FG * sizeof(float));
            memcpy(ws->k_rows.p + dst * K * AGENT_FT, tr->rows + src * K * AGENT_FT,
                   (size_t)K * AGENT_FT * sizeof(float));
            memcpy(ws->k_prev.p + dst * AGENT_FT, tr->prev + src * AGENT_FT, AGENT_FT * sizeof(float));
            memcpy(ws->k_mask + dst * K, tr->mask + src * K, (size_t)K);
            ws->k_action[dst] = tr->action[src];
            if (tr->target)
                memcpy(ws->k_target.p + dst * K, tr->target + src * K, (size_t)K * sizeof(float));
        }
    }
    out->B = Bs;
    out->inst = ws->k_inst;
    out->glob = ws->k_glob.p;
    out->rows = ws->k_rows.p;
    out->prev = ws->k_prev.p;
    out->mask = ws->k_mask;
    out->action = ws->k_action;
    out->adv = ws->k_adv.p;
    out->target = tr->target ? ws->k_target.p : NULL;
    return Bs;
}

int agent_net_type_loss(agent_net_ws *ws, nn_params *p, const agent_type_traj *tr_in, float beta,
                        float scale, agent_loss_stats *st, char *err, size_t errlen) {
    agent_type_traj kept;
    int Bs = keep_active(ws, tr_in, &kept);
    if (Bs < 0) {
        snprintf(err, errlen, "out of memory for a batch of %d episodes x %d steps", tr_in->B, tr_in->T);
        return -1;
    }
    st->episodes += Bs;
    if (Bs == 0) return 0; /* no decision: no loss, no gradient */
    const agent_type_traj *tr = &kept;
    int T = tr->T, G = tr->G, B = tr->B, K = tr->K;
    int H = ws->d.hidden, Hd = ws->d.decoder, D = ws->d.scorer, Din = din_width(&ws->d);
    size_t TB = (size_t)T * B;
    /* the rollout's encoder states, when the caller vouches that the
     * parameters have not changed since and they are of this trajectory */
    int cached = tr->enc_cached && ws->enc_p == p && ws->enc_lf == tr->lf && ws->enc_len == tr->len &&
                 ws->enc_T == T && ws->enc_G == G;
    int H2 = 2 * H, Fx = AGENT_FG + AGENT_FT, G4 = 4 * Hd;
    size_t TG = (size_t)T * G;
    if ((!cached && encoder_forward(ws, p, tr->lf, tr->len, T, G)) ||
        need(&ws->din, TB * Fx) || need(&ws->hd, TB * Hd) || need(&ws->cd, TB * Hd) ||
        need(&ws->tcd, TB * Hd) || need(&ws->actd, TB * G4) || need(&ws->ddin, TG * G4) ||
        need(&ws->dhd, TB * Hd) || need(&ws->denc, TG * H2) || need(&ws->lpenc, TG * G4) ||
        need(&ws->lwork, nn_lstm_work_size(T, B, Hd)) || need_int(&ws->ibuf, &ws->icap, (size_t)B) ||
        scorer_need(ws, TB, (size_t)K, 1)) {
        snprintf(err, errlen, "out of memory for a batch of %d episodes x %d steps", B, T);
        return -1;
    }
    const float *wih = nn_param(p, AN_DEC_WIH); /* [4Hd, 2H + FG + FT] */
    float *dwih = nn_grad(p, AN_DEC_WIH);
    /* forward. The decoder's input gates: the encoder's part projected once
     * per layer and instance, lpenc[T*G,4Hd] = enc w_ih[:, :2H]^T, gathered
     * per episode, plus din[T*B, FG+FT] = [glob, prev] times the rest of w_ih */
    nn_gemm(0, 1, (int)TG, G4, H2, 1.0f, ws->enc.p, H2, wih, Din, 0.0f, ws->lpenc.p, G4);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            size_t tb = (size_t)t * B + b;
            float *x = ws->din.p + tb * Fx;
            memcpy(x, tr->glob + tb * AGENT_FG, AGENT_FG * sizeof(float));
            memcpy(x + AGENT_FG, tr->prev + tb * AGENT_FT, AGENT_FT * sizeof(float));
            memcpy(ws->actd.p + tb * G4, ws->lpenc.p + ((size_t)t * G + tr->inst[b]) * G4,
                   (size_t)G4 * sizeof(float));
        }
    nn_gemm(0, 1, (int)TB, G4, Fx, 1.0f, ws->din.p, Fx, wih + H2, Din, 1.0f, ws->actd.p, G4);
    for (int b = 0; b < B; b++) ws->ibuf[b] = tr->len[tr->inst[b]];
    nn_lstm_forward(ws->hd.p, ws->cd.p, ws->actd.p, ws->tcd.p, NULL, NULL, NULL, ws->ibuf, wih,
                    nn_param(p, AN_DEC_WHH), nn_param(p, AN_DEC_B), T, B, Din, Hd);
    nn_dense_forward(ws->ctx.p, ws->hd.p, nn_param(p, AN_TCTX_W), NULL, (int)TB, Hd, D);
    float *logits = ws->g1.p; /* g1 is free until scorer_backward */
    scorer_forward(ws, p, &TYPE_SCORER, (int)TB, K, tr->rows, ws->ctx.p, logits);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) ws->advr.p[(size_t)t * B + b] = tr->adv[b];
    if (softmax_loss(ws, (int)TB, K, logits, tr->mask, tr->action, ws->advr.p, tr->target, beta, scale, st)) {
        snprintf(err, errlen, "a TYPE action is out of range or masked");
        return -1;
    }
    /* backward */
    memset(ws->dctx.p, 0, TB * D * sizeof(float));
    scorer_backward(ws, p, &TYPE_SCORER, (int)TB, K, tr->rows, ws->dlogits.p, ws->dctx.p);
    memset(ws->dhd.p, 0, TB * Hd * sizeof(float));
    nn_dense_backward(ws->dhd.p, nn_grad(p, AN_TCTX_W), NULL, ws->dctx.p, ws->hd.p,
                      nn_param(p, AN_TCTX_W), (int)TB, Hd, D);
    nn_lstm_backward(NULL, NULL, NULL, dwih, nn_grad(p, AN_DEC_WHH), nn_grad(p, AN_DEC_B), ws->lwork.p,
                     ws->dhd.p, NULL, NULL, NULL, NULL, ws->ibuf, ws->hd.p, ws->cd.p, ws->actd.p, ws->tcd.p,
                     wih, nn_param(p, AN_DEC_WHH), T, B, Din, Hd);
    const float *dgates = ws->lwork.p; /* [T,B,4Hd], left there by nn_lstm_backward (x NULL) */
    /* the input products: [glob, prev]'s columns of w_ih over every decision;
     * the encoder's over the gate gradients summed per layer and instance
     * (ddin[T*G,4Hd]), which also give denc[T*G,2H] */
    nn_gemm(1, 0, G4, Fx, (int)TB, 1.0f, dgates, G4, ws->din.p, Fx, 1.0f, dwih + H2, Din);
    memset(ws->ddin.p, 0, TG * G4 * sizeof(float));
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            ws->vm->add(ws->ddin.p + ((size_t)t * G + tr->inst[b]) * G4, dgates + ((size_t)t * B + b) * G4,
                        (size_t)G4);
    nn_gemm(1, 0, G4, H2, (int)TG, 1.0f, ws->ddin.p, G4, ws->enc.p, H2, 1.0f, dwih, Din);
    nn_gemm(0, 0, (int)TG, H2, G4, 1.0f, ws->ddin.p, G4, wih, Din, 0.0f, ws->denc.p, H2);
    if (encoder_backward(ws, p, tr->lf, tr->len, T, G)) {
        snprintf(err, errlen, "out of memory in the encoder's backward pass");
        return -1;
    }
    return 0;
}

int agent_net_node_loss(agent_net_ws *ws, nn_params *p, const agent_node_traj *tr, float beta,
                        float scale, int chunk, agent_loss_stats *st, char *err, size_t errlen) {
    int K = tr->K, D = ws->d.scorer;
    if (chunk <= 0) chunk = 4096;
    for (int lo = 0; lo < tr->N; lo += chunk) {
        int N = tr->N - lo < chunk ? tr->N - lo : chunk;
        if (scorer_need(ws, (size_t)N, (size_t)K, 1) || need(&ws->nc1, (size_t)N * D) ||
            need(&ws->dnc1, (size_t)N * D)) {
            snprintf(err, errlen, "out of memory for %d node decisions", N);
            return -1;
        }
        const float *glob = tr->glob + (size_t)lo * AGENT_FG;
        const float *rows = tr->rows + (size_t)lo * K * AGENT_FN;
        node_ctx_forward(ws, p, glob, N);
        float *logits = ws->g1.p; /* g1 is free until scorer_backward */
        scorer_forward(ws, p, &NODE_SCORER, N, K, rows, ws->ctx.p, logits);
        if (softmax_loss(ws, N, K, logits, tr->mask + (size_t)lo * K, tr->action + lo,
                         tr->adv + lo, NULL, beta, scale, st)) {
            snprintf(err, errlen, "a NODE action is out of range or masked");
            return -1;
        }
        memset(ws->dctx.p, 0, (size_t)N * D * sizeof(float));
        scorer_backward(ws, p, &NODE_SCORER, N, K, rows, ws->dlogits.p, ws->dctx.p);
        memset(ws->dnc1.p, 0, (size_t)N * D * sizeof(float));
        nn_dense_backward(ws->dnc1.p, nn_grad(p, AN_NCTX2_W), NULL, ws->dctx.p, ws->nc1.p,
                          nn_param(p, AN_NCTX2_W), N, D, D);
        relu_grad(ws->dnc1.p, ws->nc1.p, ws->dnc1.p, (size_t)N * D);
        nn_dense_backward(NULL, nn_grad(p, AN_NCTX_W), nn_grad(p, AN_NCTX_B), ws->dnc1.p, glob,
                          nn_param(p, AN_NCTX_W), N, AGENT_FG, D);
    }
    return 0;
}
