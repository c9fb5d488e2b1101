/* rollout.h -- running the policy network on batches of episodes.
 *
 * A rollout plays B episodes at once, several (samples) of each of G
 * instances (a job on a cluster), in lockstep through the environment
 * of env/gym.h. At every decision the network scores the candidates of all
 * B episodes in one batched pass; the environments observe and step in
 * parallel on a thread pool. Actions are sampled with the counter RNG of
 * nets/rng (row = global episode index), or taken greedily, so the numbers
 * do not depend on the thread count or on how episodes are split across
 * processes.
 *
 * The TYPE phase always uses the network. The NODE phase (when the
 * instance's cluster lists nodes) uses the node head (PLACER_PLACE_POLICY),
 * one of the heuristics of solvers/placers (a placer_method), or is skipped
 * (PLACER_PLACE_NONE: plan only).
 *
 * With `record` set, the rollout keeps what the training passes need: the
 * TYPE trajectories (agent_type_traj) and the NODE decisions
 * (agent_node_traj), with room for the advantages the trainer fills in.
 *
 * Type rows: gym's features (docs/gym.md), then AGENT_FX look-ahead
 * features per allowed type k, from the cost model (docs/model.md §2, as
 * model_eval prices plans) on the decisions made so far, with c* the
 * cheapest of all the completions below:
 *   0  1 if giving k to every remaining layer makes a feasible plan
 *   1  min(log(that plan's cost / c*), 4), or 4 when infeasible
 *   2  1 if some two-stage completion starting with k is feasible: k from
 *      this layer to some layer j, then one other type for the rest (or k
 *      to the end); with at most 16 types, else as feature 0
 *   3  min(log(the cheapest such plan's cost / c*), 4), or 4
 *   4  1 if some completion starting with k exists by usable stages (any
 *      number of them, each within its type's unit count; what the stages
 *      of one type take together is not counted)
 *   5  min(log(c_k / d*), 4), or 4 when none: c_k the cost of the
 *      cheapest-priced such completion (k from this layer to some layer j,
 *      then the run of stages of least total price from j + 1, by a
 *      backward dynamic programme over the layers per instance, each unit
 *      priced with the instance's shadow price on top of its own, so that
 *      the whole job's cheapest run tends to fit the counts), d* the least
 *      c_k over the allowed types; costs at the types' own prices
 *   6  1 if that completion's stages together fit the unit counts
 *   7  1 if some completion the programme has fits the counts: k from
 *      this layer to some layer j, then one level's cheapest run of
 *      stages from j + 1, whose units with the prefix's fit every type's
 *      count (over every j and every level)
 *   8  min(log(e_k / e*), 4), or 4 when none: e_k the cost of the cheapest
 *      such fitting completion, e* the least e_k over the allowed types
 * Masked rows get zeros. They tell the policy what "stay on k", "stay on
 * k, then switch once" and "k, then the cheapest stages whatever their
 * number" would cost, which the per-step gym features cannot, and 7-8
 * what the cheapest of those that the unit counts allow would. (Features
 * version 2 had 0-3 alone; its checkpoints read 4-8 with zero weights.
 * Version 3 admitted stages of any unit count in 4-6 and had no shadow
 * prices; versions 3 and 4 had 0-6, and their checkpoints read 7-8 with
 * zero weights. Versions 4 and 5 sought the shadow prices less widely, and
 * on some jobs found none under which a completion fits; a policy of an
 * older version decodes on version 5's figures: agent_rollout_set_features.)
 *
 * Rewards (larger is better), by opts->reward (agent_reward of
 * agent/trainconf.h):
 *   log (default)
 *     r_type = -log(cost / ref_cost) for a feasible plan (cost of
 *              docs/model.md §2), at least -AGENT_LOG_CLIP;
 *              -(AGENT_LOG_CLIP + log(penalty)) for an infeasible end or a
 *              dead end, below every feasible plan whatever the costs;
 *     r_node = -log(cost' / cost) for a placement that keeps the
 *              throughput (cost' of §3), the same floor otherwise.
 *     The floor is provisional: the trainer lifts it to log(penalty) below
 *     the worst feasible episode of the same instance in the batch
 *     (agent_rewards_settle, agent/adv.h), so that an infeasible end is
 *     always the worst and never dwarfs the spread of the feasible ones.
 *     The log never saturates: a plan twice as dear as another is
 *     log 2 below it, however far both are from the reference.
 *   ratio (the old reward, for comparison)
 *     r_type = -min(cost / ref_cost, penalty - 1), -penalty when infeasible;
 *     r_node = -min(cost' / cost, penalty - 1), -penalty otherwise.
 *     Clipping at penalty - 1 keeps every feasible end above every
 *     infeasible one, but gives every plan dearer than penalty - 1 times the
 *     reference the same reward: when the reference is near the optimum and
 *     random plans cost 15 times as much, every sample gets the same reward
 *     and there is nothing to learn.
 *   rank: as log here; the trainer replaces the rewards by ranks.
 */
#ifndef STRATA_AGENT_ROLLOUT_H
#define STRATA_AGENT_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/net.h"
#include "agent/pool.h"
#include "env/model.h"
#include "solvers/placers.h"

/* Feasible log rewards are clipped at -AGENT_LOG_CLIP (cost / ref = 2e17). */
#define AGENT_LOG_CLIP 40.0

/* One instance: borrowed job and cluster, and its reward scale. */
typedef struct {
    const model_job *job;
    const model_cluster *cl;
    double ref_cost; /* > 0, dollars: the reference plan's cost */
    int workers, ps; /* > 0: the plan's worker (ps) count is fixed beforehand
                        (gym_opts.workers, .ps); 0: the plan's own */
} agent_instance;

typedef struct {
    int placement;   /* a placer_placement: PLACER_PLACE_NONE, _POLICY or a placer_method */
    int greedy;      /* 1: the most likely action (no sampling) */
    double penalty;  /* > 1: see the rewards above */
    uint64_t seed;   /* sampling key */
    uint64_t stream; /* sampling stream (e.g. the training step) */
    long ep_base;    /* global index of this rollout's first episode */
    long ep_total;   /* episodes in the global batch (>= ep_base + B) */
    int record;      /* 1: keep trajectories for training */
    const int *const *forced; /* NULL, or [B]: NULL or the TYPE actions [n_layers]
                                 episode b must take (demonstrations, decoding
                                 with backtracking); an entry < 0 leaves that
                                 decision to the policy */
    int reward;      /* agent_reward (agent/trainconf.h); 0 is log */
    const uint8_t *node_demo; /* NULL, or [B]: 1 = episode b is a NODE demonstration:
                                 its TYPE decisions are the policy's most likely
                                 ones (or forced ones); when its plan reaches the
                                 NODE phase, `best` (placer_best_run, default
                                 budget, seed `seed ^ stream`: not the episode's,
                                 so that the lesson does not depend on the
                                 episode's index) places that plan, and if the
                                 placement keeps R every NODE decision takes its
                                 node for the task asked (flagged in
                                 agent_rollout_node_forced); otherwise the policy's
                                 most likely node */
    const float *node_cut; /* NULL, or [B]: for a NODE demonstration b with
                                 node_cut[b] = f in [0, 1), DAgger: the first
                                 c = floor(f n) of its n tasks take the policy's
                                 most likely nodes (not forced), then the teacher
                                 is placer_complete of that prefix (started from
                                 `best`'s placement, same seed), followed from
                                 task c on when it keeps R; f < 0: as without */
} agent_rollout_opts;

/* The outcome of one episode. */
typedef struct {
    int feasible;     /* the plan is feasible (§2) */
    int dead_end;     /* the TYPE phase reached a state with no allowed type */
    double plan_cost; /* §2 cost when feasible */
    int placed;       /* a placement was made (NODE phase or heuristic) */
    int place_ok;     /* ... and keeps the throughput */
    double cost;      /* cost' when placed and ok, plan_cost when not placed,
                         INFINITY when infeasible or the placement failed */
    double r_type;    /* reward of the TYPE decisions */
    double r_node;    /* reward of the NODE decisions (0 when none) */
    int node_steps;   /* NODE decisions made by the node head */
    int reason;       /* model_reason of an infeasible end (0 when feasible) */
} agent_episode;

typedef struct agent_rollout agent_rollout;

/* Time spent, seconds, accumulated over runs (for the timer breakdown). */
typedef struct {
    double env;       /* observing, stepping, placing (parallel sections, wall),
                         including the look-ahead features */
    double net;       /* network passes and sampling (wall) */
    double lookahead; /* of env: computing the look-ahead features, in
                         thread-seconds divided by the threads that ran them */
    long la_kept;     /* states whose look-ahead features an earlier step or
                         run had computed (the prefix tree, rollout.c) */
    long la_computed; /* states whose features were computed */
} agent_rollout_times;

agent_rollout *agent_rollout_create(const agent_net_dims *d);
void agent_rollout_free(agent_rollout *r);

/* agent_rollout_run plays B episodes with the parameters p; episode b is an
 * episode of instance inst[inst_of[b]] (0 <= inst_of[b] < G, every
 * instance used at least once), and its global index is opts->ep_base + b.
 * Returns 0, or -1 with a message (an instance the environment refuses,
 * out of memory). */
int agent_rollout_run(agent_rollout *r, const nn_params *p, const agent_instance *inst, int G,
                      const int *inst_of, int B, const agent_rollout_opts *opts, agent_pool *pool,
                      char *err, size_t errlen);

/* agent_rollout_drop removes episode b's decisions from the recorded
 * trajectories (no gradient and no entropy bonus from it);
 * agent_rollout_drop_type removes its TYPE decisions only (a NODE
 * demonstration whose plan was forced but is not itself a lesson). */
void agent_rollout_drop(agent_rollout *r, int b);
void agent_rollout_drop_type(agent_rollout *r, int b);
/* agent_rollout_drop_type_before removes episode b's TYPE decisions at
 * layers < c only (a DAgger episode: the policy's own prefix is no lesson;
 * the decoder still runs over it, so the lesson's gradient flows back
 * through the prefix's states). */
void agent_rollout_drop_type_before(agent_rollout *r, int b, int c);

/* Results of the last run. */
int agent_rollout_episodes(const agent_rollout *r);               /* B */
const agent_episode *agent_rollout_episode(const agent_rollout *r, int b);
/* assignment of episode b: [n_layers of its instance] */
const int *agent_rollout_assign(const agent_rollout *r, int b);
/* node per task of episode b in place.h order, [*n_tasks], or NULL when
 * it was not placed */
const int *agent_rollout_tasks(const agent_rollout *r, int b, int *n_tasks);

/* Trajectories of the last run (record = 1). adv pointers are writable so
 * that the trainer fills the advantages in: type adv per episode [B]; node
 * adv per decision [N], and node_owner[N] gives each decision's episode. */
agent_type_traj *agent_rollout_type_traj(agent_rollout *r, float **adv);
agent_node_traj *agent_rollout_node_traj(agent_rollout *r, float **adv, const int **node_owner);

/* agent_rollout_node_forced gives, per recorded NODE decision [N] (the
 * rows of agent_rollout_node_traj), 1 when opts->node_demo forced it to the
 * `best` placement's node, else 0. Valid until the next run. */
const uint8_t *agent_rollout_node_forced(const agent_rollout *r);

const agent_rollout_times *agent_rollout_timing(const agent_rollout *r);

/* agent_type_policy stands in for the network's TYPE head during a
 * rollout (bench/agent_peer.py runs a PyTorch network through it, on this
 * same environment). At step t it gets what agent_net_type_step gets:
 * glob[B,FG], rows[B,K,FT], prev[B,FT], mask[B,K], active[B], and, for
 * its encoder, the run's layer features lf[T,G,FL], len[G] and the
 * instance of each episode inst_of[B]; it writes probs[B,K] (masked
 * entries 0). Returns 0, or nonzero to stop the rollout with an error. */
typedef int (*agent_type_policy)(void *ctx, int t, const float *lf, const int *len, int T, int G,
                                 const int *inst_of, int B, const float *glob, const float *rows,
                                 const float *prev, const uint8_t *mask, const uint8_t *active,
                                 int K, float *probs);

/* agent_rollout_set_policy makes the following runs of r call fn (with
 * ctx) instead of the network; fn NULL restores the network. Such a run
 * covers the TYPE phase only: it fails when a NODE phase would follow
 * (use placement none or a placer). */
void agent_rollout_set_policy(agent_rollout *r, agent_type_policy fn, void *ctx);

/* agent_rollout_set_memo turns off (0) or on (1, the default) the memo of
 * the look-ahead's stage figures (used when the look-ahead runs on one
 * thread and the run's instances x types x layers^2 stay under 2^18) and
 * the tree of the look-ahead features of the states met so far (kept
 * between runs on the same instances, up to 16 MiB): off recomputes every
 * stage and every state's features, for the tests that check the memos
 * change nothing. */
void agent_rollout_set_memo(agent_rollout *r, int on);

/* agent_rollout_set_features makes the following runs of r compute the
 * look-ahead features of the given version (AGENT_FEATURES_VERSION, the
 * default, or an older one: versions below 6 are computed as version 5,
 * whose shadow prices la_dp_fill seeks less widely, version 6 checks
 * fewer completions against the counts than 7, 7 holds no type's units
 * where no prices fit, as 8 does, and 8 holds one at a time where 9 holds
 * up to three together), so that a policy
 * decodes on the features it was trained on (agent_policy_load passes its
 * file's version). Forgets the completions and features kept from earlier
 * runs when the version changes. */
void agent_rollout_set_features(agent_rollout *r, int version);

/* agent_rollout_lookahead_bytes bounds the bytes the look-ahead keeps for
 * runs on one instance of T layers and K types on cluster cl (NULL: none
 * of its types may be held) that meet `states` distinct states: the stage
 * memo (when it is used), the completions by stages, those with a type's
 * units held (version 8, sized by the largest count that may be held) and
 * the tree of the states' features (its 16 MiB cap and its doubling
 * growth counted), for memory estimates. */
size_t agent_rollout_lookahead_bytes(int T, int K, const model_cluster *cl, size_t states);

/* agent_rollout_ws returns the network workspace the rollout runs on
 * (owned by r). After agent_rollout_run, and until the parameters change,
 * it holds the encoder's states of the run's instances: a training pass on
 * it with agent_type_traj.enc_cached = 1 reuses them. */
agent_net_ws *agent_rollout_ws(agent_rollout *r);

/* agent_rollout_shadow_prices returns the shadow prices ($/h per unit,
 * [n_types], owned by r) the last run's look-ahead priced instance g's
 * completions by stages with (rollout.c, la_dp_fill); all 0 when the
 * instance's cheapest completion fits the unit counts. For tests and
 * diagnostics. */
const double *agent_rollout_shadow_prices(const agent_rollout *r, int g);

/* agent_rollout_held_types returns how many types' units the last run's
 * look-ahead held to their counts in instance g's fitting completions
 * (features 7-8 of versions 8-9, on a job where no shadow prices make a
 * completion by stages fit: rollout.c, la_bud_fill), 0 when none; the
 * types into held[AGENT_LA_MAX_HELD] (may be NULL) and the shadow prices
 * of the others it priced them with into *lam ([n_types], owned by r;
 * NULL when none is held; lam may be NULL). For tests and diagnostics. */
#define AGENT_LA_MAX_HELD 3
int agent_rollout_held_types(const agent_rollout *r, int g, int *held, const double **lam);

/* The throughput levels of features 4-6: level m admits the stages of
 * throughput at least R x AGENT_LA_RATIO^m (level 0 every usable stage),
 * m < AGENT_LA_LEVELS (the top one R x 76), and the cheapest
 * completion found is within AGENT_LA_RATIO (15%) of the relaxation's
 * optimum. (224 levels 1.02 apart were tried: docs/agent-runs.md,
 * "Finer levels, and every level's fit".) */
#define AGENT_LA_LEVELS 32
#define AGENT_LA_RATIO 1.15

/* The TYPE phase of the last run as played: per step t and episode b the
 * action (-1: none), the mask [K] and the policy's probabilities [K]
 * (row t * B + b); *K receives the padded candidate count, *T the steps. */
void agent_rollout_type_steps(const agent_rollout *r, int *T, int *K, const int **action,
                              const uint8_t **mask, const float **probs);

#endif
