/* ckptio.h -- the agent's checkpoints on top of nets/ckpt.
 *
 * A policy checkpoint is a nets/ckpt file (weights, Adam moments, step,
 * feature schema, the train config's text) whose /meta/hparams carry what
 * the agent needs besides the tensors:
 *
 *   agent_format "strata-agent-policy", agent_version 1
 *   agent_features                          AGENT_FEATURES_VERSION (net.h)
 *   embed, hidden, decoder, scorer, clip    the network's dimensions
 *   mode ("search"|"general"), placement (the NODE-phase method it trained with)
 *   seed, episodes, time_s                  progress
 *   base_type, base_node, base_init         moving baselines
 *   best_valid, best_cost, best_assign      best validation gap; search's best plan
 *   best_valid_node                         a node-head phase's best validation score
 *   average_n                               > 0: the weights are the mean of that many
 *                                           snapshots (average.h5), else 0
 *   metrics_csv                             the metrics history (metrics.csv)
 *
 * agent_ckpt_read refuses a file of another format or version, of another
 * feature schema (GYM_SCHEMA_VERSION or AGENT_FEATURES_VERSION; schema 1,
 * whose node rows lack the last two features, and look-ahead versions 2
 * to 4, whose type rows lack the last five or two, are read and grown with
 * zero weights on them, the same policy), or whose network differs from the
 * one expected, naming the file and the difference. agent_ckpt_peek (and
 * so every load) refuses a hyperparameter outside its range (the table
 * HP_RANGES in ckptio.c, printed in docs/reliability.md) naming it, and a
 * file whose tensors do not hold every byte the sizes declare, naming the
 * dataset, before anything of those sizes is allocated (ckpt_check_sizes);
 * nets/ckpt refuses non-finite weights naming the tensor and index.
 */
#ifndef STRATA_AGENT_CKPTIO_H
#define STRATA_AGENT_CKPTIO_H

#include <stddef.h>
#include <stdint.h>

#include "agent/net.h"
#include "nets/params.h"

#define AGENT_CKPT_FORMAT "strata-agent-policy"
#define AGENT_CKPT_VERSION 1

/* What a checkpoint holds besides the tensors. For agent_ckpt_write the
 * pointers are borrowed; after agent_ckpt_read they are owned (free with
 * agent_ckpt_state_clear). */
typedef struct {
    int64_t step;
    int seed, mode, placement;
    double episodes, time_s;
    double base_type, base_node;
    int base_init;
    double best_valid, best_cost;
    double best_valid_node; /* 1 - valid_node_at_best of best.h5 (node-head phase), or INFINITY */
    int64_t average_n;      /* average.h5: the snapshots its weights average; else 0 */
    int *best_assign; /* [n_best_assign] or NULL */
    int n_best_assign;
    char *metrics_csv; /* or NULL */
    char *config_yaml; /* or NULL */
    int node_feats;    /* read: the file's node row features (AGENT_FN, or
                          AGENT_FN_SCHEMA1 for a schema-1 file: agent_ckpt_read
                          grows it, its Adam moments left at 0) */
    int type_feats;    /* read: the file's type row features (AGENT_FT, or
                          AGENT_FT_V2 for look-ahead features version 2 and
                          AGENT_FT_V4 for versions 3 and 4, grown the same
                          way) */
    int features;      /* read: the file's look-ahead features version (2 to
                          AGENT_FEATURES_VERSION), for agent_rollout_set_features */
} agent_ckpt_state;

#define AGENT_FN_SCHEMA1 16 /* node row features of feature schema 1 */
#define AGENT_FT_V2 (GYM_TYPE_FEATS + AGENT_FX_V2) /* type row features of look-ahead version 2 */
#define AGENT_FT_V4 (GYM_TYPE_FEATS + AGENT_FX_V4) /* ... of look-ahead versions 3 and 4 */

/* agent_ckpt_write saves p (dims d) and st to path (atomically). */
int agent_ckpt_write(const char *path, const nn_params *p, const agent_net_dims *d,
                     const agent_ckpt_state *st, char *err, size_t errlen);

/* agent_ckpt_peek reads the dimensions and state of path without tensors. */
int agent_ckpt_peek(const char *path, agent_net_dims *d, agent_ckpt_state *st, char *err,
                    size_t errlen);

/* agent_ckpt_read loads path into p (created from agent_net_table(d)) and
 * st; the file's network must have dims d. */
int agent_ckpt_read(const char *path, nn_params *p, const agent_net_dims *d, agent_ckpt_state *st,
                    char *err, size_t errlen);

void agent_ckpt_state_clear(agent_ckpt_state *st);

#endif
