/* gym.h -- the placement problem as a step-wise environment (Gymnasium style).
 *
 * An episode builds one plan for one job on one cluster, a decision at a time,
 * for the policy-gradient agent: it observes fixed-width feature vectors,
 * samples an action under a mask of allowed actions, and gets one reward at
 * the end, the plan's cost scored by model_eval (docs/model.md §2) and, when the
 * cluster lists nodes, its placement scored by place_eval (§3).
 *
 *   TYPE phase: one decision per layer, in order; the action is a type index.
 *   After the last layer the plan is scored. When the cluster has no nodes or
 *   gym_opts.plan_only is set the episode ends there.
 *   NODE phase: one decision per task, in place.h's task order (stage by
 *   stage: its workers, then its ps tasks); the action is a node index.
 *
 * The mask is sound: it never hides an action from which a feasible plan
 * (and, with a NODE phase, a placement that fits the nodes) can still be
 * completed, and it is exact on the last layer, so a TYPE phase played under
 * the mask always ends with a plan that model_eval accepts. It can still run
 * into a dead end (no action allowed) earlier: the agent then calls
 * gym_terminate(). docs/gym.md ("The step API") describes the phases, the
 * reward, the mask rules and every observation feature.
 *
 * Threads: an env is used by one thread at a time; different envs share only
 * the borrowed, read-only job and cluster. gym_step, gym_mask, gym_obs and
 * gym_terminate never allocate (gym_step's last NODE decision calls
 * place_eval, which keeps a small scratch allocation of its own).
 */
#ifndef STRATA_GYM_H
#define STRATA_GYM_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

/* Bumped whenever a feature's meaning, order or scale changes; checkpoints
 * store it and refuse to load weights trained on another schema. */
#define GYM_SCHEMA_VERSION 2

#define GYM_GLOBAL_FEATS 24 /* global vector, both phases */
#define GYM_TYPE_FEATS 16   /* one candidate row per type (TYPE phase) */
#define GYM_NODE_FEATS 18   /* one candidate row per node (NODE phase) */
#define GYM_LAYER_FEATS 12  /* one row per layer, static over an episode */

typedef enum {
    GYM_PHASE_TYPE = 0, /* choosing layer l's type */
    GYM_PHASE_NODE = 1, /* choosing a task's node */
    GYM_PHASE_DONE = 2, /* terminated; gym_reset starts the next episode */
} gym_phase_id;

typedef struct {
    double ref_cost;          /* > 0: reward = -cost / ref_cost (default 1: dollars) */
    double infeasible_reward; /* reward of an infeasible end or a dead end; NAN
                                 (default) picks gym_infeasible_reward()'s bound */
    int plan_only;            /* 1: stop after the TYPE phase even with nodes */
    int unmasked;             /* 1: gym_step accepts any in-range action (the
                                 mask is still computed, for features); the
                                 end is then scored and may be infeasible */
    int shuffle_tasks;        /* 1: visit each stage's tasks in a random order
                                 drawn from the reset seed (stages stay in order) */
    int workers, ps;          /* > 0: the plan runs exactly this many worker (ps)
                                 tasks, fixed beforehand (a job's replica counts):
                                 once the TYPE phase is over its counts are set by
                                 model_plan_set_counts, which may end the episode
                                 infeasible (fewer than the plan needs, more units
                                 than are free); the NODE phase places those tasks.
                                 0 (default): the plan's own counts */
} gym_opts;

/* What one step did. Figures after termination describe the final plan. */
typedef struct {
    double reward;  /* 0 before the end; -cost/ref_cost or infeasible_reward */
    int terminated; /* 1 when the episode ended with this step */
    int feasible;   /* when terminated: 1 if the plan (and placement) is feasible */
    int dead_end;   /* when terminated by gym_terminate */
    int reason;     /* when terminated infeasible: a model_reason */
    double cost;    /* when terminated feasible: dollars (cost' when placed) */
    int phase;      /* phase after the step */
} gym_step_result;

/* The observation of the current step. rows and mask point into the env and
 * stay valid until the next gym_step, gym_terminate, gym_reset or gym_obs. */
typedef struct {
    int phase;       /* gym_phase_id */
    int layer;       /* TYPE: the layer being decided, else -1 */
    int task;        /* NODE: the task being placed (place.h order), else -1 */
    int stage;       /* NODE: its stage; TYPE: the open stage's index, -1 if none */
    int is_ps;       /* NODE: 1 for a ps task */
    int n_rows;      /* candidate rows = actions: n_types or n_nodes; 0 when done */
    int row_feats;   /* GYM_TYPE_FEATS or GYM_NODE_FEATS (0 when done) */
    int n_allowed;   /* set bits in mask */
    float global[GYM_GLOBAL_FEATS];
    const float *rows;         /* [n_rows, row_feats] row-major */
    const unsigned char *mask; /* [n_rows] 1 = allowed */
} gym_observation;

typedef struct gym_env gym_env;

/* gym_opts_default fills the defaults named above. */
void gym_opts_default(gym_opts *opts);

/* gym_create checks the instance and allocates everything the episodes
 * need. job and cl are borrowed: the caller keeps them alive and unchanged
 * while the env lives. opts may be NULL (defaults). Returns the env, or NULL
 * with a message naming the bad field in err[errlen]. The env starts in an
 * episode reset with seed 0. */
gym_env *gym_create(const model_job *job, const model_cluster *cl,
                    const gym_opts *opts, char *err, size_t errlen);

/* gym_free releases env; accepts NULL. */
void gym_free(gym_env *env);

/* gym_reset starts a new episode; seed drives the only randomness
 * (gym_opts.shuffle_tasks). Deterministic: the same seed and actions give
 * the same observations. Returns 0. */
int gym_reset(gym_env *env, uint64_t seed);

/* gym_step applies action (a type index in the TYPE phase, a node index in
 * the NODE phase). Returns 0 and fills *out (may be NULL), or -1 with no
 * change of state when the action is out of range, not allowed by the mask
 * (unless opts.unmasked), or the episode is over. */
int gym_step(gym_env *env, int action, gym_step_result *out);

/* gym_terminate ends the episode now as infeasible (a dead end: the mask
 * allows nothing, or the agent gives up), with the infeasible reward and
 * dead_end = 1. Returns 0, or -1 when the episode is already over. */
int gym_terminate(gym_env *env, gym_step_result *out);

/* gym_mask writes the current step's mask into mask[gym_n_actions(env)]
 * (1 = allowed) and returns the number of allowed actions: 0 is a dead end.
 * Returns -1 (writing nothing) when the episode is over. */
int gym_mask(const gym_env *env, unsigned char *mask);

/* gym_n_actions is the action count of the current step: n_types in the
 * TYPE phase, n_nodes in the NODE phase, 0 when done. gym_max_actions is
 * the largest over an episode, for sizing the agent's buffers. */
int gym_n_actions(const gym_env *env);
int gym_max_actions(const gym_env *env);

/* gym_phase returns the current gym_phase_id. */
int gym_phase(const gym_env *env);

/* gym_obs fills *obs with the current step's features (see docs/gym.md).
 * Returns 0. */
int gym_obs(gym_env *env, gym_observation *obs);

/* gym_layer_features writes the static per-layer features of the job into
 * out[n_layers * GYM_LAYER_FEATS] (row-major, one row per layer), the input
 * of an encoder over the whole job. Returns n_layers. */
int gym_layer_features(const gym_env *env, float *out);

/* gym_assignment returns the type chosen so far per layer, [n_layers]
 * (entries not yet decided are -1), and the number decided in *n_decided
 * (may be NULL). Owned by the env, valid until the next reset. */
const int *gym_assignment(const gym_env *env, int *n_decided);

/* gym_task_nodes returns the node chosen per task in place.h's order,
 * [*n_tasks] (-1 when not yet placed), or NULL before the NODE phase. The
 * number placed goes to *n_placed. Pointers may be NULL. */
const int *gym_task_nodes(const gym_env *env, int *n_tasks, int *n_placed);

/* gym_plan returns the scored plan once the TYPE phase is over (during the
 * NODE phase the §2 plan; after a placement the refined plan), else NULL. */
const model_plan *gym_plan(const gym_env *env);

/* gym_why returns why the episode ended infeasible ("" otherwise). */
const char *gym_why(const gym_env *env);

/* gym_infeasible_reward returns the reward an infeasible end gets. Unless
 * opts.infeasible_reward is given it is -(1 + 2 cost_max / ref_cost), with
 * cost_max = S / (R * 3600) * sum_t cap_t p_t an upper bound on the cost of
 * any feasible plan (theta >= R, at most cap_t units of each type), so an
 * infeasible end is always worse than any feasible one; -1e9 when R = 0. */
double gym_infeasible_reward(const gym_env *env);

/* gym_steps returns the number of accepted decisions in this episode. */
int gym_steps(const gym_env *env);

#endif
