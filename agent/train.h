/* train.h -- policy-gradient training of the placement policy.
 *
 * REINFORCE with a baseline over batched rollouts (agent/rollout.h): every
 * step draws G instances (search mode: the one job; general mode: random
 * jobs and clusters from the generator), plays S episodes of each, turns
 * the rewards into advantages, and takes one Adam step on
 *
 *   loss = 1/(G S) * sum over decisions of (-adv logp[action] - beta entropy)
 *
 * Advantages (per head, the TYPE head on r_type, the NODE head on r_node):
 *   shared  each episode against the mean of the other S-1 episodes of the
 *           same instance (the stronger baseline: same instance, same policy)
 *   moving  against an exponential moving average of the batch's mean
 *           return (HeterPS), updated after use
 *   risk    (risk = eps > 0) only the best eps fraction of each instance's
 *           episodes get a gradient, against that quantile (risk-seeking
 *           policy gradient, for search: the best plan matters, not the mean)
 *   adv_norm  divide by the standard deviation of the batch's advantages
 *
 * Everything random derives from (seed, step): the instances of a step,
 * the sampled actions (counter RNG keyed by the global episode index), so a
 * run resumed from a checkpoint continues with exactly the numbers of an
 * uninterrupted one, and K MPI ranks (each playing a contiguous slice of
 * the global batch, gradients summed with MPI_Allreduce) compute the same
 * step as one process, up to the order of float sums.
 *
 * Files (rank 0 only), in the config's `out` folder: metrics.csv (one row
 * per step, columns agent_metrics_columns of agent/metrics.h), last.h5
 * (every ckpt_every steps and at the end), best.h5 (general: best
 * validation gap; search: best plan).
 * The library never prints; the caller (cli/train.c) shows progress.
 */
#ifndef STRATA_AGENT_TRAIN_H
#define STRATA_AGENT_TRAIN_H

#include <stddef.h>
#include <stdio.h>

#include "agent/metrics.h"
#include "agent/trainconf.h"
#include "env/model.h"
#include "nets/params.h"

/* Cumulative time per part of a step, seconds (wall). */
typedef struct {
    double instances; /* drawing instances, exact and reference solves */
    double env;       /* environments: observe, step, place (rollout) */
    double lookahead; /* of env: the agent's look-ahead features */
    double net;       /* network during rollouts (forward + sampling) */
    double learn;     /* advantages, forward + backward, all-reduce, Adam */
    double eval;      /* evaluations */
    double io;        /* CSV and checkpoints */
} agent_train_times;

typedef struct agent_trainer agent_trainer;

/* agent_train_create sets up a run of tc (borrowed; kept alive by the
 * caller), fresh or resumed from checkpoint `resume` (NULL: fresh). Under
 * MPI (when MPI_Init was called) the run spans MPI_COMM_WORLD. Returns NULL
 * with a message on error (bad files, a checkpoint of another network). */
agent_trainer *agent_train_create(const agent_trainconf *tc, const char *resume, char *err,
                                  size_t errlen);
void agent_train_free(agent_trainer *t);

/* agent_train_create_on sets up a fresh search-mode run (tc->mode search;
 * tc->problem is not read) on a job and cluster in memory, borrowed: they
 * must outlive the trainer. Benchmarks and tests use it on generated
 * instances. Returns NULL with a message on error (no feasible plan). */
agent_trainer *agent_train_create_on(const agent_trainconf *tc, const model_job *job,
                                     const model_cluster *cl, char *err, size_t errlen);

/* agent_train_step makes one update (and, when due, an evaluation, a CSV
 * row and a checkpoint). Returns 0, or -1 with a message. */
int agent_train_step(agent_trainer *t, char *err, size_t errlen);

/* agent_train_finish writes last.h5 (and flushes the CSV). Returns 0 or -1. */
int agent_train_finish(agent_trainer *t, char *err, size_t errlen);

/* agent_train_save writes a checkpoint of the current state to path. */
int agent_train_save(agent_trainer *t, const char *path, char *err, size_t errlen);

long agent_train_step_count(const agent_trainer *t);  /* updates done */
int agent_train_done(const agent_trainer *t);         /* step count reached tc->steps */
const agent_metrics *agent_train_last(const agent_trainer *t); /* last row (NULL before any) */
int agent_train_rank(const agent_trainer *t);         /* MPI rank (0 without MPI) */
int agent_train_ranks(const agent_trainer *t);        /* MPI size (1 without MPI) */
const agent_train_times *agent_train_timing(const agent_trainer *t);
/* the path of a file in the out folder ("metrics.csv", "last.h5", "best.h5") */
const char *agent_train_file(const agent_trainer *t, const char *name);

/* agent_train_eval runs the evaluation now (rank 0): fills *m's eval and
 * valid columns. Returns 0 or -1. */
int agent_train_eval(agent_trainer *t, agent_metrics *m, char *err, size_t errlen);

/* A node-head phase's validation (placement: policy, freeze_plan, valid > 0;
 * docs/agent.md): valid_node_at_best of the policy the run started from
 * and of best.h5, and best.h5's step (-1 when this run wrote none, NAN
 * figures when the run is not such a phase or has not validated yet). */
typedef struct {
    double start, best;
    long best_step;
} agent_train_node_valid;
void agent_train_node_validation(const agent_trainer *t, agent_train_node_valid *v);

/* Search mode: the problem and the best plan sampled so far (*assign NULL
 * while none), its cost and the exact optimum (NAN if unknown). */
void agent_train_best(const agent_trainer *t, const model_job **job, const model_cluster **cl,
                      const int **assign, double *cost, double *exact);

/* agent_train_answer (search) gives the plan the search returns: the best
 * sampled plan (improved by polish when it is on), unless a reference plan
 * the trainer already computed (the exact solver's, the reward's reference)
 * is strictly cheaper, when it gives that one. *assign (NULL when there is
 * no plan at all) points into the trainer; from receives "sampled" (a
 * sample as played), "sampled+polish" (a sample polish improved) or
 * "reference:<method>" (solve_method_name), e.g. "reference:exact". */
void agent_train_answer(const agent_trainer *t, const int **assign, double *cost, char *from,
                        size_t fromlen);

/* agent_train_agree returns the maximum of flag over the ranks (flag itself
 * without MPI); every rank must call it, so it is also a barrier. The CLI
 * uses it to agree on stopping. */
int agent_train_agree(const agent_trainer *t, int flag);

/* For the tests of the DAgger demonstrations (tc->dagger > 0).
 * agent_train_params returns the parameters; after a step, their grads
 * hold that step's gradient (clipped when grad_clip is). agent_train_dagger
 * reports DAgger episode i of this rank in the last step (the j-th cut of
 * local instance i / dagger_cuts, j = i % dagger_cuts; with one cut, the
 * instance's): *cut, the policy's greedy plan and the plan played (the greedy
 * plan before the cut, the exact completion from it), [n_layers] each, and
 * the episode's recorded TYPE actions into actions[n_layers] (-1 where
 * the step took no gradient). Returns 0, or -1 when that instance had no
 * DAgger episode (a dead end, no completion, or dagger 0). */
const nn_params *agent_train_params(const agent_trainer *t);
int agent_train_dagger(const agent_trainer *t, int i, int *cut, const int **greedy, const int **plan,
                       int *actions);
/* agent_train_dagger_soft (dagger_soft > 0) reports the same episode's
 * soft lesson: *ccost[*n_types], the cheapest completion's cost with each
 * type at the cut (INFINITY: none), and *target[K], the decision's soft
 * target. Returns 0, or -1 when that episode has none (no DAgger episode,
 * dagger_soft 0, or a completion the budget stopped). The tests and
 * `bench_agent cuts` read it. */
int agent_train_dagger_soft(const agent_trainer *t, int i, const double **ccost, const float **target,
                            int *n_types);

#endif
