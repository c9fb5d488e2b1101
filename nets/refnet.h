/* refnet.h -- the reference policy network, a fixed composition of the layers
 * of nets/layers. It is the network tests/test_nets_torch.c checks against
 * PyTorch (scripts/torch_reference.py builds the same one) and the one
 * bench/bench_nets.c times, and it shows how the agent wires the layers:
 *
 *   tokens[T,B] --embedding--> x[T,B,E] --LSTM(len)--> hs[T,B,H]
 *   hs --dense(H->D)--> tanh --layernorm--> --dense(D->D, no bias)--> qry[T,B,D]
 *   cand[B,K,C] --dense(C->D)--> relu --dense(D->D)--> keys[B,K,D]
 *   scores[T,B,K] = pointer(qry, keys, scale 1/sqrt(D), clip)
 *   probs, logp, ent = masked softmax(scores, mask[B,K] for every step)
 *   loss = sum over (t,b) with action >= 0 of -adv logp[action] - beta ent
 *
 * One decision per step: step t of instance b (a job's layer) picks one of
 * the K candidate rows (resource types or nodes) of instance b, padded
 * candidates masked out, padded steps (t >= len[b]) marked action = -1.
 */
#ifndef STRATA_NETS_REFNET_H
#define STRATA_NETS_REFNET_H

#include <stddef.h>
#include <stdint.h>

#include "nets/params.h"

typedef struct {
    int T, B;     /* steps (sequence length), instances */
    int V, E;     /* token vocabulary, embedding width */
    int H;        /* LSTM hidden size */
    int D;        /* query/key width */
    int K, C;     /* candidates per instance (padded), features per candidate */
    float beta;   /* entropy bonus */
    float clip;   /* pointer logit clip (0: none) */
    float ln_eps; /* layer norm epsilon */
} nn_refnet_cfg;

#define NN_REFNET_TENSORS 13

/* Indices of the tensors in the table nn_refnet_table writes. */
enum {
    NN_REF_EMBED_W,
    NN_REF_ENC_WIH,
    NN_REF_ENC_WHH,
    NN_REF_ENC_B,
    NN_REF_QRY_W,
    NN_REF_QRY_B,
    NN_REF_NORM_G,
    NN_REF_NORM_B,
    NN_REF_PROJ_W,
    NN_REF_CAND_W,
    NN_REF_CAND_B,
    NN_REF_KEY_W,
    NN_REF_KEY_B
};

typedef struct {
    nn_refnet_cfg cfg;
    nn_params *p; /* borrowed: the parameters (table from nn_refnet_table) */
    /* inputs of the last forward (borrowed pointers) */
    const int *tokens;   /* [T,B] */
    const int *len;      /* [B] or NULL */
    const float *cand;   /* [B,K,C] */
    const uint8_t *mask; /* [B,K] or NULL */
    const int *action;   /* [T,B] */
    const float *adv;    /* [T,B] */
    /* activations */
    float *x;                 /* [T,B,E] */
    float *hs, *cs, *tcs;     /* [T,B,H] */
    float *act;               /* [T,B,4H] */
    float *q1, *q2, *q3;      /* [T,B,D] dense, tanh, layernorm */
    float *ln_mean, *ln_rstd; /* [T,B] */
    float *qry;               /* [T,B,D] */
    float *c1, *c2, *keys;    /* [B,K,D] */
    float *scores;            /* [T,B,K] */
    uint8_t *mask_full;       /* [T,B,K] */
    float *probs, *logp;      /* [T,B,K] */
    float *ent;               /* [T,B] */
    double loss;
    /* gradients of activations (scratch, zeroed by backward) */
    float *dx, *dhs, *dq1, *dq2, *dq3, *dqry, *dc1, *dc2, *dkeys, *dscores, *dlogp, *dent;
    float *lstm_work; /* [nn_lstm_work_size] */
    float *ptr_work;  /* [T,B,K] */
} nn_refnet;

/* Writes the NN_REFNET_TENSORS specs of the network into table[]. */
void nn_refnet_table(const nn_refnet_cfg *cfg, nn_tensor_spec table[NN_REFNET_TENSORS]);

/* Allocates the activations for cfg over the parameters p (created from
 * nn_refnet_table(cfg)); checks p's shapes. NULL + message on error. */
nn_refnet *nn_refnet_create(const nn_refnet_cfg *cfg, nn_params *p, char *err, size_t errlen);
void nn_refnet_free(nn_refnet *net);

/* Forward pass; keeps the input pointers for backward. Returns 0 and sets
 * net->loss, or -1 with a message (bad token, action on a masked or
 * out-of-range candidate). */
int nn_refnet_forward(nn_refnet *net, const int *tokens, const int *len, const float *cand,
                      const uint8_t *mask, const int *action, const float *adv, char *err, size_t errlen);

/* Backward pass of the last forward: accumulates d loss / d params into
 * net->p->grads. */
void nn_refnet_backward(nn_refnet *net);

#endif
