/* net.h -- the agent's policy network: parameter table and batched
 * forward/backward passes over the kernels of nets/.
 *
 * The network reads the step-wise environment's features (env/gym.h) and
 * never sees a fixed number of layers, types or nodes:
 *
 *   encoder   per layer: lf[T,G,FL] --dense+relu--> x[T,G,E]
 *             --LSTM forward--> hf[T,G,H], --LSTM over the reversed layers-->
 *             hb[T,G,H]; enc[T,G,2H] = [hf, hb] (bidirectional; one run per
 *             instance g, shared by all episodes of that instance)
 *   decoder   per TYPE decision t of episode b:
 *             din[t,b] = [enc[t, inst(b)], global[t,b], prev[t,b]] with prev the
 *             candidate row of the type chosen at t-1 (0 at t = 0);
 *             LSTM over t -> hd[T,B,Hd]; ctx = hd Wc^T [T*B, D]. The
 *             encoder's part of din w_ih^T is computed once per layer and
 *             instance ([T,G,4Hd]), not once per episode
 *   rows      a type row is gym's GYM_TYPE_FEATS features followed by AGENT_FX
 *             look-ahead features computed by the rollout (agent/rollout.h):
 *             what the cost model says of completing the plan with this type
 *   scorer    each candidate row r (a type row [FT], or a node row [FN]):
 *             z1 = relu(Wr r + br + ctx), z2 = relu(Wh z1 + bh), raw = wo z2,
 *             logit = clip tanh(raw / clip); masked softmax over the rows
 *   node head per NODE decision (no recurrence: the node rows carry where
 *             the stage's tasks already are): ctx = Wn2 relu(Wn global + bn),
 *             then a scorer of its own over the node rows
 *
 * One set of weights therefore scores any number of candidates. Shapes are
 * time-major ([T,B,...]: step t of episode b at row t*B + b) so that a whole
 * batch of trajectories is one matrix per layer and one GEMM per product.
 *
 * Two ways in:
 *  - rollout: agent_net_encode once, then agent_net_type_step per decision
 *    and agent_net_node_step per task: probabilities for sampling.
 *  - training: agent_net_type_loss / agent_net_node_loss recompute the
 *    forward over whole stored trajectories (teacher forcing) and
 *    accumulate d loss / d params into p->grads.
 * A workspace (agent_net_ws) holds every activation; it grows on demand and
 * belongs to one thread. The parameters are only read by forward passes, so
 * several workspaces may run over one nn_params at once.
 */
#ifndef STRATA_AGENT_NET_H
#define STRATA_AGENT_NET_H

#include <stddef.h>
#include <stdint.h>

#include "env/gym.h"
#include "nets/params.h"

#define AGENT_FL GYM_LAYER_FEATS  /* layer features */
#define AGENT_FG GYM_GLOBAL_FEATS /* global features */
#define AGENT_FX 9                 /* look-ahead features the agent appends to a type row */
#define AGENT_FX_V2 4              /* ... in features version 2 (read, grown with zero weights) */
#define AGENT_FX_V4 7              /* ... in features versions 3 and 4 (read, grown with zero weights) */
#define AGENT_FT (GYM_TYPE_FEATS + AGENT_FX) /* type row features: gym's, then the look-ahead */
#define AGENT_FEATURES_VERSION 9   /* bumped when the look-ahead features change (6-9: shadow prices, held units, rollout.c) */
#define AGENT_FN GYM_NODE_FEATS   /* node row features */

typedef struct {
    int embed;   /* E: layer embedding width */
    int hidden;  /* H: encoder LSTM width per direction */
    int decoder; /* Hd: decoder LSTM width */
    int scorer;  /* D: scorer width */
    float clip;  /* logit clip C (> 0): logit = C tanh(raw / C) */
} agent_net_dims;

/* Tensor indices of the table agent_net_table writes. */
enum {
    AN_EMB_W, AN_EMB_B,                     /* [E,FL], [E] */
    AN_ENCF_WIH, AN_ENCF_WHH, AN_ENCF_B,    /* [4H,E], [4H,H], [4H] */
    AN_ENCB_WIH, AN_ENCB_WHH, AN_ENCB_B,    /* reversed direction */
    AN_DEC_WIH, AN_DEC_WHH, AN_DEC_B,       /* [4Hd,2H+FG+FT], [4Hd,Hd], [4Hd] */
    AN_TCTX_W,                              /* [D,Hd] */
    AN_TROW_W, AN_TROW_B,                   /* [D,FT], [D] */
    AN_THID_W, AN_THID_B,                   /* [D,D], [D] */
    AN_TOUT_W,                              /* [1,D] */
    AN_NCTX_W, AN_NCTX_B, AN_NCTX2_W,       /* [D,FG], [D], [D,D] */
    AN_NROW_W, AN_NROW_B,                   /* [D,FN], [D] */
    AN_NHID_W, AN_NHID_B,                   /* [D,D], [D] */
    AN_NOUT_W,                              /* [1,D] */
    AN_N_TENSORS
};

/* The default dims (also the train config's defaults, agent/trainconf.c). */
#define AGENT_NET_EMBED 64
#define AGENT_NET_HIDDEN 64
#define AGENT_NET_DECODER 128
#define AGENT_NET_SCORER 64
#define AGENT_NET_CLIP 10.0

/* agent_net_dims_default: the AGENT_NET_* dims above (E 64, H 64, Hd 128,
 * D 64, clip 10). */
void agent_net_dims_default(agent_net_dims *d);

/* agent_net_table writes the AN_N_TENSORS specs for dims d into t;
 * agent_net_table_feats the same for type rows of ft features and node rows
 * of fn (AGENT_FT and AGENT_FN in this build; fewer in a checkpoint of an
 * older feature schema, read to be grown by agent_net_grow). */
void agent_net_table(const agent_net_dims *d, nn_tensor_spec t[AN_N_TENSORS]);
void agent_net_table_feats(const agent_net_dims *d, int ft, int fn, nn_tensor_spec t[AN_N_TENSORS]);

/* agent_net_check returns 0 when p was created from agent_net_table(d),
 * else -1 with a message naming the first tensor that differs. */
int agent_net_check(const agent_net_dims *d, const nn_params *p, char *err, size_t errlen);

/* agent_net_grow copies the weights src (dims sd) into dst (dims dd, every
 * width at least sd's, the same clip), so that dst computes the same
 * probabilities as src: each old weight lands on its unit in dst (the
 * LSTMs' four gate blocks and the decoder input's [hf, hb, global, prev]
 * column blocks apart), the weights from a new unit into an old one are
 * set to 0, and a new unit's own weights and biases keep dst's values
 * (its initialisation), so that it computes from the start and learns its
 * outgoing weights from the first step. Only dst's parameters change
 * (not its gradients or Adam moments). src's type and node rows may read
 * fewer features than AGENT_FT and AGENT_FN (the first ones of this
 * build's, an older schema): the weights of the features it lacks start
 * at 0. Returns 0, or
 * -1 with a message when dst is narrower than src in some width, the clips
 * differ or a network does not match its dims. */
int agent_net_grow(nn_params *dst, const agent_net_dims *dd, const nn_params *src,
                   const agent_net_dims *sd, char *err, size_t errlen);

typedef struct agent_net_ws agent_net_ws;

/* agent_net_ws_create returns an empty workspace for dims d (buffers grow
 * on first use), or NULL when out of memory; agent_net_ws_free accepts NULL. */
agent_net_ws *agent_net_ws_create(const agent_net_dims *d);
void agent_net_ws_free(agent_net_ws *ws);

/* agent_net_ws_skip_idle turns off (0) or on (1, the default) the skipping
 * of episodes without a decision in agent_net_type_loss: off recomputes
 * every episode, for the tests that check the skip changes nothing. */
void agent_net_ws_skip_idle(agent_net_ws *ws, int on);

/* ---- rollout (inference) ------------------------------------------------ */

/* agent_net_encode runs the encoder on G instances, lf[T,G,FL] time-major
 * with len[G] layers each (rows t >= len[g] ignored), keeps enc[T,G,2H] in
 * ws and resets the decoder state of B episodes, episode b belonging to
 * instance inst[b] (copied). Returns 0, or -1 when out of memory. */
int agent_net_encode(agent_net_ws *ws, const nn_params *p, const float *lf /*[T,G,FL]*/,
                     const int *len /*[G]*/, int T, int G, const int *inst /*[B]*/, int B);

/* agent_net_type_step runs decoder step t for the B episodes of the last
 * encode: glob[B,FG], rows[B,K,FT], prev[B,FT] (chosen row of step t-1, or
 * zeros), mask[B,K]; active[B] (1: the episode decides at t; 0: its state
 * is carried). Writes probs[B,K] (masked entries 0; an all-masked row all
 * 0). Returns 0, or -1 when out of memory. */
int agent_net_type_step(agent_net_ws *ws, const nn_params *p, int t, const float *glob,
                        const float *rows, const float *prev, const uint8_t *mask,
                        const uint8_t *active, int K, float *probs /*[B,K]*/);

/* agent_net_type_step_shared is agent_net_type_step for episodes in
 * groups of equal state: rep[b] == b for an episode computed, rep[b] = o
 * (o < b, rep[o] == o) for one whose state and inputs are those of o (the
 * same instance and decisions so far: the rollout's look-ahead groups),
 * rep[b] = -1 for one that does not decide at t (state carried, probs 0).
 * The network runs over the representatives only; every member of a group
 * gets its representative's new state and probabilities. Returns 0, or -1
 * when out of memory. */
int agent_net_type_step_shared(agent_net_ws *ws, const nn_params *p, int t, const float *glob,
                               const float *rows, const float *prev, const uint8_t *mask,
                               const int *rep /*[B]*/, int K, float *probs /*[B,K]*/);

/* agent_net_node_step scores node rows for B decisions: glob[B,FG],
 * rows[B,K,FN], mask[B,K] -> probs[B,K]. Returns 0, or -1 (no memory). */
int agent_net_node_step(agent_net_ws *ws, const nn_params *p, const float *glob,
                        const float *rows, const uint8_t *mask, int B, int K,
                        float *probs /*[B,K]*/);

/* ---- training -------------------------------------------------------------- */

/* Stored TYPE-phase trajectories of B episodes over G instances. */
typedef struct {
    int T, G, B, K;       /* steps (max layers), instances, episodes, max types */
    const float *lf;      /* [T,G,FL] layer features */
    const int *len;       /* [G] layers per instance */
    const int *inst;      /* [B] instance of each episode */
    const float *glob;    /* [T,B,FG] */
    const float *rows;    /* [T,B,K,FT] */
    const float *prev;    /* [T,B,FT] */
    const uint8_t *mask;  /* [T,B,K] */
    const int *action;    /* [T,B], -1: no decision (padding, dead end) */
    const float *adv;     /* [B] advantage of each episode */
    const float *target;  /* [T,B,K] or NULL: soft targets. A decision whose row
                             has target[0] >= 0 is taught -adv sum_k q_k logp_k
                             (q = its row, 0 on masked types; its sum weighs the
                             lesson, 1 as much as a one-hot one) in place of
                             -adv logp[action]; its action must still be >= 0.
                             The others (target[0] < 0) as without. */
    int enc_cached;       /* 1: the workspace given to agent_net_type_loss ran
                             agent_net_encode on this lf and len, and the
                             parameters have not changed since (the trainer,
                             right after its rollout): the encoder's forward
                             is not run again. 0: it is. */
} agent_type_traj;

/* Stored NODE-phase decisions: N independent rows (any order). */
typedef struct {
    int N, K;             /* decisions, max nodes */
    const float *glob;    /* [N,FG] */
    const float *rows;    /* [N,K,FN] */
    const uint8_t *mask;  /* [N,K] */
    const int *action;    /* [N], -1: padding */
    const float *adv;     /* [N] */
} agent_node_traj;

/* Loss figures of one pass (sums over the decisions, before scaling). */
typedef struct {
    double pg;       /* sum of -adv * logp[action] (or of q logp, soft targets) */
    double entropy;  /* sum of the entropies of the decisions */
    long decisions;  /* decisions counted */
    long episodes;   /* TYPE-phase episodes recomputed (those with a decision) */
} agent_loss_stats;

/* agent_net_type_loss recomputes the forward over tr and accumulates into
 * p->grads the gradient of scale * sum over decisions of
 * (-adv logp[action] - beta ent), or (-adv sum_k q_k logp_k - beta ent)
 * at a decision with a soft target q (tr->target). Returns 0, or -1 with
 * a message (out of
 * memory, an action on a masked candidate). *st receives the sums.
 * Only the episodes that make a decision (some action >= 0) are
 * recomputed: the others add exactly zero to the loss and the gradient
 * (search mode's risk 0.1 keeps about 13 of 128). */
int agent_net_type_loss(agent_net_ws *ws, nn_params *p, const agent_type_traj *tr, float beta,
                        float scale, agent_loss_stats *st, char *err, size_t errlen);

/* agent_net_node_loss: the same for the node head, in chunks of `chunk`
 * decisions so that memory stays bounded. */
int agent_net_node_loss(agent_net_ws *ws, nn_params *p, const agent_node_traj *tr, float beta,
                        float scale, int chunk, agent_loss_stats *st, char *err, size_t errlen);

#endif
