/* trainconf.h -- the configuration of a `strata train` run.
 *
 * A train config is a YAML file of flat keys (docs/agent.md lists every key,
 * default and bound; configs/train/ has the shipped ones):
 *
 *   mode: search | general
 *   problem: ../default.yaml        # search: the job and cluster to solve
 *   generator: gen.yaml             # general: the random instance generator
 *   eval: [eval/aws-ctr.yaml, ...]  # general: held-out configs, scored periodically
 *   valid: 32                       # general: generated validation instances
 *   valid_generator: gen-wide.yaml  # general: their generator (default: generator's)
 *   seed, steps, seconds, instances, samples, lr, lr_final, entropy, ...
 *
 * File names are relative to the config's folder. Loading goes through one
 * declarative table walked by env/schema.h's cfg_doc_walk (the run loader's own
 * walker), so every error reads "file:line:col: key: message" and every
 * non-zero figure must lie between 1e-12 and 1e18 in magnitude.
 * Ownership: agent_trainconf_load returns a config the caller frees with
 * agent_trainconf_free.
 */
#ifndef STRATA_AGENT_TRAINCONF_H
#define STRATA_AGENT_TRAINCONF_H

#include <stddef.h>

#include "agent/net.h"

typedef enum { AGENT_MODE_SEARCH = 0, AGENT_MODE_GENERAL = 1 } agent_mode;
typedef enum { AGENT_BASE_SHARED = 0, AGENT_BASE_MOVING = 1 } agent_baseline;
/* The reward of a plan (agent/rollout.h, agent/adv.h agent_rewards_settle):
 * log   -log(cost / ref), an infeasible end log(penalty) below the worst
 *       feasible episode of its instance in the batch (the default);
 * ratio -min(cost / ref, penalty - 1), -penalty when infeasible (the old
 *       reward, kept for comparison: it clips, so it can teach nothing);
 * rank  -(episodes of the instance strictly better) / (samples - 1). */
typedef enum { AGENT_REWARD_LOG = 0, AGENT_REWARD_RATIO = 1, AGENT_REWARD_RANK = 2 } agent_reward;

#define AGENT_MAX_EVAL 64
#define AGENT_PATH_MAX 1024 /* file names of a config, NUL included */
#define AGENT_DAGGER_CUTS_MAX 16 /* dagger_cuts' bound */

typedef struct {
    char path[AGENT_PATH_MAX]; /* the file, as given ("" when built in memory) */
    char *text;                /* the config's text (stored in checkpoints), owned */
    int mode;                  /* agent_mode */
    char problem[AGENT_PATH_MAX];   /* search: config file, resolved */
    char generator[AGENT_PATH_MAX]; /* general: generator spec file, resolved */
    char valid_generator[AGENT_PATH_MAX]; /* general: the validation instances' generator spec,
                                             resolved ("": generator's) */
    int n_eval;
    char eval[AGENT_MAX_EVAL][AGENT_PATH_MAX]; /* general: held-out config files, resolved */
    int valid;           /* general: generated validation instances (best.h5 picks on them) */
    int seed;            /* everything random derives from it */
    int steps;           /* training steps (updates) */
    double seconds;      /* wall-clock budget (0: none); the run stops at a step boundary */
    int instances;       /* G: instances per step (search: 1) */
    int samples;         /* S: episodes per instance per step */
    double lr, lr_final; /* Adam learning rate, cosine-decayed from lr to lr_final over steps */
    double weight_decay;
    double grad_clip;    /* global norm (0: none) */
    double entropy, entropy_final; /* entropy bonus, decayed linearly over steps */
    int baseline;        /* agent_baseline */
    double baseline_decay; /* moving-average decay */
    int adv_norm;        /* 1: divide advantages by their standard deviation */
    double risk;         /* 0, or the top fraction of samples that gets a gradient */
    int reward;          /* agent_reward */
    double penalty;      /* > 1: ratio: infeasible reward -penalty (in units of the reference
                            cost); log: an infeasible end lies log(penalty) below the worst
                            feasible one of its instance */
    int freeze_plan;     /* 1: the encoder, decoder and TYPE head stay fixed (only the
                            node head learns: a placement phase after a plan phase) */
    double imitation;    /* 0, or the weight of a cross-entropy term towards the exact
                            plan of each instance (one demonstration episode each) */
    double node_imitation; /* 0, or the weight of a cross-entropy term towards `best`'s
                            placement (solvers/placers.h) of the demonstration episode's
                            plan: the exact plan when imitation > 0, else the policy's
                            greedy one (needs placement: policy) */
    double dagger;       /* 0, or the weight of a cross-entropy term towards the exact
                            completion of the policy's own greedy plan from a random
                            cut (one DAgger episode per instance; general mode) */
    double dagger_soft;  /* 0, or tau > 0: the DAgger episode's decision at its cut
                            is taught a soft target over every type instead of
                            the completion's: q_k proportional to (c* / c_k)^(1/tau),
                            c_k the exact completion's cost with type k at the
                            cut, c* the least (needs dagger > 0) */
    double dagger_focus; /* 0, or m: that lesson weighs 1 + m where the policy's own
                            type at the cut completes more than 0.1% above c*
                            (a decision it gets wrong; needs dagger_soft > 0) */
    int dagger_cuts;     /* n >= 1: DAgger episodes per instance and step, each
                            from its own cut (the first uniform in [0, L), the
                            others L/n apart from it, wrapping; a job of fewer
                            layers than n is cut at every layer, once), each
                            weighing dagger (n > 1 needs dagger > 0); 1 by
                            default */
    double node_dagger;  /* 0, or the weight of a cross-entropy term towards placer_complete's
                            completion of the node head's own greedy placement of the
                            greedy plan from a random cut (one episode per instance;
                            needs placement: policy) */
    int reference;       /* solve_method of the reference plan (reward scale) */
    int placement;       /* a placer_placement (solvers/placers.h) */
    agent_net_dims net;
    char init_from[AGENT_PATH_MAX]; /* "" or a policy checkpoint (resolved) whose network,
                            no wider than net in any size, starts this run's:
                            agent_net_grow (a run that is not resumed) */
    char node_head_from[AGENT_PATH_MAX]; /* "" or a policy checkpoint (resolved) of the
                            same scorer width whose node head (and node baseline)
                            replaces this run's, after init_from (not resumed) */
    int threads;         /* environment threads (0: all cores) */
    int log_every;       /* CSV row and progress line every N steps */
    int eval_every;      /* general: evaluation every N steps (0: never) */
    int eval_samples;    /* the sample-N-keep-best decoding of the evaluation */
    int ckpt_every;      /* checkpoint every N steps (0: only at the end) */
    char out[AGENT_PATH_MAX]; /* output folder: metrics.csv, last.h5, best.h5, step-N.h5 */
    int reuse;           /* general: a batch of instances serves this many consecutive
                            steps (1: a new batch every step). Drawing one (the exact
                            solver, for the demonstrations) is most of a wide-family
                            step; each step still samples new episodes on it */
    double draw_budget;  /* general: the exact solver's wall-clock budget, seconds, on a
                            drawn instance and on a DAgger completion (default 5): a draw
                            it stops without a plan is drawn again, a completion it stops
                            teaches nothing that step. The slowest 5% of draws take
                            about 96% of the drawing time (bench_agent draws) */
    int polish;          /* search: 1 (default) = local search (segment moves) around a
                            step's best sample when it beats every earlier one */
    int average_every;   /* > 0: every N steps the weights join a running mean written as
                            average.h5 with last.h5 (stochastic weight averaging); 0: off */
    int average_after;   /* ... at the steps past this one (counted as `steps` is: from
                            the first run's start, through resumes) */
} agent_trainconf;

/* agent_trainconf_default fills tc with the defaults of `mode`: what a
 * config of that mode giving no optional key loads as (the defaults are
 * written once, in agent/trainconf.c's table). Keeps tc->text; path,
 * problem, generator and eval are left empty. */
void agent_trainconf_default(agent_trainconf *tc, int mode);

/* agent_trainconf_load reads path. Returns NULL with a message naming
 * file:line:col and the key in err. */
agent_trainconf *agent_trainconf_load(const char *path, char *err, size_t errlen);

/* agent_trainconf_search returns the config of `strata train --search FILE`:
 * the search defaults on problem file `problem`. NULL when out of memory. */
agent_trainconf *agent_trainconf_search(const char *problem, char *err, size_t errlen);

void agent_trainconf_free(agent_trainconf *tc);

#endif
