/* refnet.c -- the reference policy network (see refnet.h): table, activation
 * buffers, forward and backward built from nets/layers.
 */
#include "nets/refnet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/layers.h"

void nn_refnet_table(const nn_refnet_cfg *g, nn_tensor_spec t[NN_REFNET_TENSORS])
{
    t[NN_REF_EMBED_W] = nn_spec("embed", "weight", NN_INIT_NORMAL, 1.0f, 0, g->V, g->E, 0, 0);
    t[NN_REF_ENC_WIH] = nn_spec("encoder", "w_ih", NN_INIT_XAVIER, 1.0f, 0, 4 * g->H, g->E, 0, 0);
    t[NN_REF_ENC_WHH] = nn_spec("encoder", "w_hh", NN_INIT_ORTHO, 1.0f, 0, 4 * g->H, g->H, 0, 0);
    t[NN_REF_ENC_B] = nn_spec("encoder", "b", NN_INIT_LSTM_BIAS, 1.0f, 1, 4 * g->H, 0, 0, 0);
    t[NN_REF_QRY_W] = nn_spec("query", "w", NN_INIT_XAVIER, 1.0f, 0, g->D, g->H, 0, 0);
    t[NN_REF_QRY_B] = nn_spec("query", "b", NN_INIT_ZEROS, 0.0f, 1, g->D, 0, 0, 0);
    t[NN_REF_NORM_G] = nn_spec("query_norm", "g", NN_INIT_ONES, 0.0f, 1, g->D, 0, 0, 0);
    t[NN_REF_NORM_B] = nn_spec("query_norm", "b", NN_INIT_ZEROS, 0.0f, 1, g->D, 0, 0, 0);
    t[NN_REF_PROJ_W] = nn_spec("query_proj", "w", NN_INIT_XAVIER, 1.0f, 0, g->D, g->D, 0, 0);
    t[NN_REF_CAND_W] = nn_spec("cand", "w", NN_INIT_XAVIER, 1.0f, 0, g->D, g->C, 0, 0);
    t[NN_REF_CAND_B] = nn_spec("cand", "b", NN_INIT_ZEROS, 0.0f, 1, g->D, 0, 0, 0);
    t[NN_REF_KEY_W] = nn_spec("key", "w", NN_INIT_XAVIER, 1.0f, 0, g->D, g->D, 0, 0);
    t[NN_REF_KEY_B] = nn_spec("key", "b", NN_INIT_ZEROS, 0.0f, 1, g->D, 0, 0, 0);
}

void nn_refnet_free(nn_refnet *net)
{
    if (!net) return;
    float **bufs[] = {&net->x,         &net->hs,      &net->cs,      &net->tcs,     &net->act,   &net->q1,
                      &net->q2,        &net->q3,      &net->ln_mean, &net->ln_rstd, &net->qry,   &net->c1,
                      &net->c2,        &net->keys,    &net->scores,  &net->probs,   &net->logp,  &net->ent,
                      &net->dx,        &net->dhs,     &net->dq1,     &net->dq2,     &net->dq3,   &net->dqry,
                      &net->dc1,       &net->dc2,     &net->dkeys,   &net->dscores, &net->dlogp, &net->dent,
                      &net->lstm_work, &net->ptr_work};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(*bufs[i]);
    free(net->mask_full);
    free(net);
}

static float *fbuf(size_t n, int *ok)
{
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) *ok = 0;
    return p;
}

nn_refnet *nn_refnet_create(const nn_refnet_cfg *cfg, nn_params *p, char *err, size_t errlen)
{
    const nn_refnet_cfg *g = cfg;
    if (g->T <= 0 || g->B <= 0 || g->V <= 0 || g->E <= 0 || g->H <= 0 || g->D <= 0 || g->K <= 0 ||
        g->C <= 0) {
        snprintf(err, errlen, "refnet: every size must be positive (T=%d B=%d V=%d E=%d H=%d D=%d K=%d C=%d)",
                 g->T, g->B, g->V, g->E, g->H, g->D, g->K, g->C);
        return NULL;
    }
    nn_tensor_spec t[NN_REFNET_TENSORS];
    nn_refnet_table(cfg, t);
    if (!p || p->n != NN_REFNET_TENSORS) {
        snprintf(err, errlen, "refnet: parameters have %d tensors, expected %d", p ? p->n : 0,
                 NN_REFNET_TENSORS);
        return NULL;
    }
    for (int i = 0; i < NN_REFNET_TENSORS; i++) {
        const nn_tensor_spec *s = &p->spec[i];
        if (strcmp(s->layer, t[i].layer) || strcmp(s->name, t[i].name) || s->ndim != t[i].ndim ||
            memcmp(s->dims, t[i].dims, sizeof s->dims)) {
            char a[64], b[64];
            snprintf(err, errlen, "refnet: tensor %d is %s/%s %s, expected %s/%s %s", i, s->layer, s->name,
                     nn_shape_str(a, sizeof a, s->ndim, s->dims), t[i].layer, t[i].name,
                     nn_shape_str(b, sizeof b, t[i].ndim, t[i].dims));
            return NULL;
        }
    }
    nn_refnet *net = calloc(1, sizeof *net);
    if (!net) {
        snprintf(err, errlen, "refnet: out of memory");
        return NULL;
    }
    net->cfg = *cfg;
    net->p = p;
    size_t TB = (size_t)g->T * g->B, BK = (size_t)g->B * g->K;
    int ok = 1;
    net->x = fbuf(TB * g->E, &ok);
    net->hs = fbuf(TB * g->H, &ok);
    net->cs = fbuf(TB * g->H, &ok);
    net->tcs = fbuf(TB * g->H, &ok);
    net->act = fbuf(TB * 4 * g->H, &ok);
    net->q1 = fbuf(TB * g->D, &ok);
    net->q2 = fbuf(TB * g->D, &ok);
    net->q3 = fbuf(TB * g->D, &ok);
    net->ln_mean = fbuf(TB, &ok);
    net->ln_rstd = fbuf(TB, &ok);
    net->qry = fbuf(TB * g->D, &ok);
    net->c1 = fbuf(BK * g->D, &ok);
    net->c2 = fbuf(BK * g->D, &ok);
    net->keys = fbuf(BK * g->D, &ok);
    net->scores = fbuf(TB * g->K, &ok);
    net->probs = fbuf(TB * g->K, &ok);
    net->logp = fbuf(TB * g->K, &ok);
    net->ent = fbuf(TB, &ok);
    net->dx = fbuf(TB * g->E, &ok);
    net->dhs = fbuf(TB * g->H, &ok);
    net->dq1 = fbuf(TB * g->D, &ok);
    net->dq2 = fbuf(TB * g->D, &ok);
    net->dq3 = fbuf(TB * g->D, &ok);
    net->dqry = fbuf(TB * g->D, &ok);
    net->dc1 = fbuf(BK * g->D, &ok);
    net->dc2 = fbuf(BK * g->D, &ok);
    net->dkeys = fbuf(BK * g->D, &ok);
    net->dscores = fbuf(TB * g->K, &ok);
    net->dlogp = fbuf(TB * g->K, &ok);
    net->dent = fbuf(TB, &ok);
    net->lstm_work = fbuf(nn_lstm_work_size(g->T, g->B, g->H), &ok);
    net->ptr_work = fbuf(TB * g->K, &ok);
    net->mask_full = malloc(TB * g->K);
    if (!ok || !net->mask_full) {
        nn_refnet_free(net);
        snprintf(err, errlen, "refnet: out of memory for activations (T*B=%zu)", TB);
        return NULL;
    }
    return net;
}

int nn_refnet_forward(nn_refnet *net, const int *tokens, const int *len, const float *cand,
                      const uint8_t *mask, const int *action, const float *adv, char *err, size_t errlen)
{
    const nn_refnet_cfg *g = &net->cfg;
    const nn_params *p = net->p;
    int T = g->T, B = g->B, TB = g->T * g->B, BK = g->B * g->K;
    net->tokens = tokens;
    net->len = len;
    net->cand = cand;
    net->mask = mask;
    net->action = action;
    net->adv = adv;
    int bad = nn_embedding_forward(net->x, tokens, nn_param(p, NN_REF_EMBED_W), TB, g->V, g->E);
    if (bad) {
        snprintf(err, errlen, "refnet: %d token(s) outside [0,%d)", bad, g->V);
        return -1;
    }
    if (len)
        for (int b = 0; b < B; b++)
            if (len[b] < 0 || len[b] > T) {
                snprintf(err, errlen, "refnet: len[%d] = %d outside [0,%d]", b, len[b], T);
                return -1;
            }
    nn_lstm_forward(net->hs, net->cs, net->act, net->tcs, net->x, NULL, NULL, len,
                    nn_param(p, NN_REF_ENC_WIH), nn_param(p, NN_REF_ENC_WHH), nn_param(p, NN_REF_ENC_B), T, B,
                    g->E, g->H);
    nn_dense_forward(net->q1, net->hs, nn_param(p, NN_REF_QRY_W), nn_param(p, NN_REF_QRY_B), TB, g->H, g->D);
    nn_tanh_forward(net->q2, net->q1, (size_t)TB * g->D);
    nn_layernorm_forward(net->q3, net->ln_mean, net->ln_rstd, net->q2, nn_param(p, NN_REF_NORM_G),
                         nn_param(p, NN_REF_NORM_B), TB, g->D, g->ln_eps);
    nn_dense_forward(net->qry, net->q3, nn_param(p, NN_REF_PROJ_W), NULL, TB, g->D, g->D);
    nn_dense_forward(net->c1, cand, nn_param(p, NN_REF_CAND_W), nn_param(p, NN_REF_CAND_B), BK, g->C, g->D);
    nn_relu_forward(net->c2, net->c1, (size_t)BK * g->D);
    nn_dense_forward(net->keys, net->c2, nn_param(p, NN_REF_KEY_W), nn_param(p, NN_REF_KEY_B), BK, g->D,
                     g->D);
    nn_pointer_forward(net->scores, net->qry, net->keys, T, B, g->K, g->D, 1.0f / sqrtf((float)g->D),
                       g->clip);
    for (int t = 0; t < T; t++) {
        if (mask)
            memcpy(net->mask_full + (size_t)t * BK, mask, (size_t)BK);
        else
            memset(net->mask_full + (size_t)t * BK, 1, (size_t)BK);
    }
    nn_softmax_forward(net->probs, net->logp, net->ent, net->scores, net->mask_full, TB, g->K);
    if (nn_pg_loss_forward(&net->loss, net->logp, net->ent, action, adv, g->beta, TB, g->K)) {
        snprintf(err, errlen, "refnet: an action is >= K=%d or picks a masked candidate", g->K);
        return -1;
    }
    return 0;
}

void nn_refnet_backward(nn_refnet *net)
{
    const nn_refnet_cfg *g = &net->cfg;
    const nn_params *p = net->p;
    int T = g->T, B = g->B, TB = g->T * g->B, BK = g->B * g->K;
    size_t TBD = (size_t)TB * g->D, BKD = (size_t)BK * g->D;
    memset(net->dlogp, 0, (size_t)TB * g->K * sizeof(float));
    memset(net->dent, 0, (size_t)TB * sizeof(float));
    memset(net->dscores, 0, (size_t)TB * g->K * sizeof(float));
    memset(net->dqry, 0, TBD * sizeof(float));
    memset(net->dq3, 0, TBD * sizeof(float));
    memset(net->dq2, 0, TBD * sizeof(float));
    memset(net->dq1, 0, TBD * sizeof(float));
    memset(net->dhs, 0, (size_t)TB * g->H * sizeof(float));
    memset(net->dx, 0, (size_t)TB * g->E * sizeof(float));
    memset(net->dkeys, 0, BKD * sizeof(float));
    memset(net->dc2, 0, BKD * sizeof(float));
    memset(net->dc1, 0, BKD * sizeof(float));

    nn_pg_loss_backward(net->dlogp, net->dent, net->action, net->adv, g->beta, 1.0f, TB, g->K);
    nn_softmax_backward(net->dscores, net->dlogp, net->dent, net->probs, net->logp, net->ent, net->mask_full,
                        TB, g->K);
    nn_pointer_backward(net->dqry, net->dkeys, net->ptr_work, net->dscores, net->scores, net->qry, net->keys,
                        T, B, g->K, g->D, 1.0f / sqrtf((float)g->D), g->clip);
    /* candidate branch */
    nn_dense_backward(net->dc2, nn_grad(p, NN_REF_KEY_W), nn_grad(p, NN_REF_KEY_B), net->dkeys, net->c2,
                      nn_param(p, NN_REF_KEY_W), BK, g->D, g->D);
    nn_relu_backward(net->dc1, net->c2, net->dc2, BKD);
    nn_dense_backward(NULL, nn_grad(p, NN_REF_CAND_W), nn_grad(p, NN_REF_CAND_B), net->dc1, net->cand,
                      nn_param(p, NN_REF_CAND_W), BK, g->C, g->D);
    /* query branch */
    nn_dense_backward(net->dq3, nn_grad(p, NN_REF_PROJ_W), NULL, net->dqry, net->q3,
                      nn_param(p, NN_REF_PROJ_W), TB, g->D, g->D);
    nn_layernorm_backward(net->dq2, nn_grad(p, NN_REF_NORM_G), nn_grad(p, NN_REF_NORM_B), net->dq3, net->q2,
                          nn_param(p, NN_REF_NORM_G), net->ln_mean, net->ln_rstd, TB, g->D);
    nn_tanh_backward(net->dq1, net->q2, net->dq2, TBD);
    nn_dense_backward(net->dhs, nn_grad(p, NN_REF_QRY_W), nn_grad(p, NN_REF_QRY_B), net->dq1, net->hs,
                      nn_param(p, NN_REF_QRY_W), TB, g->H, g->D);
    nn_lstm_backward(net->dx, NULL, NULL, nn_grad(p, NN_REF_ENC_WIH), nn_grad(p, NN_REF_ENC_WHH),
                     nn_grad(p, NN_REF_ENC_B), net->lstm_work, net->dhs, NULL, net->x, NULL, NULL, net->len,
                     net->hs, net->cs, net->act, net->tcs, nn_param(p, NN_REF_ENC_WIH),
                     nn_param(p, NN_REF_ENC_WHH), T, B, g->E, g->H);
    nn_embedding_backward(nn_grad(p, NN_REF_EMBED_W), net->dx, net->tokens, TB, g->V, g->E);
}
