/* spolicy.h -- the learned policy of strata simulate: who starts now, with
 * which plan, or whether to wait (docs/simulate.md, "The learned policy").
 *
 * At every scheduling instant the policy looks at the first SPOL_HEAD (4)
 * queued jobs and at the SPOL_SHORT (4) shortest (run time at their
 * target) of the next ones up to queue position SPOL_SCAN (64), so that it
 * can let a short job pass, and builds for each a small set of candidate
 * plans that fit the free units, all from the existing solvers and the cost model:
 *   exact-free   the exact (cost-optimal) plan on the units free now
 *   exact-empty  the job's exact plan on the empty cluster, when it fits
 *   one-type     the whole job on one type, provisioned for its target R
 *                and for 2R (a faster plan on more units), on every type
 *                where it fits
 * plus one "wait" candidate. Identical plans of a job (same units of every
 * type, same throughput) are kept once. Each candidate is a row of
 * SPOL_FEATURES numbers (spol_candidates documents them) scored by a small
 * MLP, llm.c style over nets/:
 *   h1 = tanh(x W1^T + b1)   [n,H]
 *   h2 = tanh(h1 W2^T + b2)  [n,H]
 *   s  = h2 w3^T + b3        [n,1]
 * and a softmax over the n candidates of the instant gives the
 * probabilities. The policy samples (training) or decodes greedily
 * (evaluation: spol_greedy), starts the chosen plan, and repeats until it
 * picks "wait" or nothing fits. "wait" is not offered when no job is running: an idle
 * cluster with a queue never waits (it could wait forever).
 *
 * Parameters live in one nets/params store built from a table of sizes
 * (spol_table); checkpoints are nets/ckpt HDF5 files (the same walker as
 * the agent's) whose /meta/hparams say format "strata-sim-policy", version,
 * feature version, features, hidden and window; a file of another kind or
 * shape is refused naming the file and the field.
 *
 * Ownership: spol_net_create / spol_load return a network freed with
 * spol_net_free; spol_episode_free mirrors spol_episode_create.
 */
#ifndef STRATA_SIM_SPOLICY_H
#define STRATA_SIM_SPOLICY_H

#include <stddef.h>
#include <stdint.h>

#include "nets/params.h"
#include "nets/rng.h"
#include "sim/sim.h"

#define SPOL_FEATURES 20       /* numbers per candidate row */
#define SPOL_FEATURES_VERSION 2 /* bumped whenever their meaning changes */
#define SPOL_HEAD 4            /* the first queued jobs, always looked at */
#define SPOL_SHORT 4           /* and the shortest of the next ones ... */
#define SPOL_SCAN 64           /* ... up to this queue position */
#define SPOL_WINDOW (SPOL_HEAD + SPOL_SHORT) /* queued jobs looked at per decision */
#define SPOL_CKPT_FORMAT "strata-sim-policy"
#define SPOL_CKPT_VERSION 1
#define SPOL_HIDDEN_MAX 1024

/* What a candidate is. */
typedef enum {
    SPOL_WAIT = 0,
    SPOL_EXACT_FREE = 1,
    SPOL_EXACT_EMPTY = 2,
    SPOL_ONE_TYPE = 3,
} spol_kind;

/* One candidate of an instant. */
typedef struct {
    int job;     /* trace index; -1 for wait */
    int qpos;    /* its job's position in the queue */
    int kind;    /* spol_kind (the first that produced this plan) */
    int type;    /* one-type: the type; else -1 */
    double target; /* samples/s it is provisioned for (>= the job's R) */
    int *assign; /* [layers] owned by the candidate set */
    int units[MODEL_MAX_TYPES];
    double time, cost, unit_price, throughput; /* the cost model's figures */
    float x[SPOL_FEATURES];
} spol_cand;

/* The candidates of one instant. */
typedef struct {
    int n, cap;
    spol_cand *c; /* [cap] */
    int layers;   /* assign capacity of each */
    model_plan *plan; /* scratch */
    int *free_assign[SPOL_WINDOW]; /* [layers] scratch: exact plans on the free units */
} spol_cands;

/* What the candidates are built from, with or without a simulator (the
 * daemon builds it from its occupancy). */
typedef struct {
    const model_cluster *full;  /* the cluster as configured (counts: all units) */
    const model_cluster *freec; /* the same types, counts: the free units */
    double now;                 /* s */
    int queue_len;              /* jobs waiting in all */
    long queue_demand;          /* units their exact plans on the empty cluster need */
    int n_running;              /* jobs holding units */
} spol_view;

/* One queued job. */
typedef struct {
    const model_job *job;     /* min_throughput = its target R, samples = S */
    double arrival, deadline; /* s; deadline <= 0: none */
    const int *exact_empty;   /* its exact plan on the empty cluster ... */
    const model_plan *empty;  /* ... scored (NULL: none, the job is skipped) */
    const int *exact_free;    /* its exact plan on the free units, or NULL */
    int qpos;                 /* its position in the queue (0: the head) */
} spol_job_view;

/* spol_candidates_of fills cs from v and n (<= SPOL_WINDOW) queued jobs
 * (their index in jobs as the candidates' job), as spol_candidates
 * describes.
 * Returns the count, 0 when nothing fits, or -1 with err. */
int spol_candidates_of(const spol_view *v, const spol_job_view *jobs, int n, spol_cands *cs,
                       char *err, size_t errlen);

/* spol_cands_create returns an empty set for jobs of up to `layers` layers
 * and clusters of n_types types, or NULL (out of memory). */
spol_cands *spol_cands_create(int layers, int n_types);
void spol_cands_free(spol_cands *cs);

/* spol_candidates fills cs with the candidates of the current instant of
 * s: the plans of the SPOL_WINDOW queued jobs looked at (above), then the
 * wait row when some job is running. Features of a job's candidate:
 *   x0 0 (1 for wait)  x1 exact-free  x2 exact-empty  x3 one-type
 *   x4 target / R - 1 (0 or 1)
 *   x5 log2(1 + units taken) / 4
 *   x6 units taken / free units     x7 max over types of taken_t / free_t
 *   x8 sum over types of taken_t / all units of t
 *   x9 ln(cost / the exact-empty plan's cost)
 *   x10 ln(time / the exact-empty plan's time)
 *   x11 its run time in hours / 24   x12 ln(1 + hours waited so far)
 *   x13 ln(1 + queue position) / ln(1 + SPOL_SCAN)   x14 1 when it has a deadline
 *   x15 slack: (due - now - time) / time, clipped to [-3, 3] (0: none)
 * and of every row (wait included): x16 free units / all units,
 * x17 ln(1 + queue length) / 3, x18 ln(1 + units the queue's exact-empty
 * plans need / (1 + free units)), x19 ln(1 + running jobs) / 3.
 * Returns the number of candidates (0: nothing fits, nothing to decide),
 * or -1 with err. */
int spol_candidates(sim *s, spol_cands *cs, char *err, size_t errlen);

/* The network. */
typedef struct spol_net spol_net;

/* spol_table fills table[SPOL_N_TENSORS] for hidden width h. */
#define SPOL_N_TENSORS 6
void spol_table(int h, nn_tensor_spec *table);

/* spol_net_create builds a network of hidden width h initialised from
 * seed. NULL with err when h is out of [1, SPOL_HIDDEN_MAX] or memory. */
spol_net *spol_net_create(int h, uint64_t seed, char *err, size_t errlen);
void spol_net_free(spol_net *n);
nn_params *spol_net_params(spol_net *n);
int spol_net_hidden(const spol_net *n);

/* spol_forward scores rows x[n,F] into logits[n]; work holds
 * spol_work_size(n) floats (h1, h2 as saved for backward). */
size_t spol_work_size(int n, int h);
void spol_forward(float *logits /*[n]*/, float *work, const spol_net *net,
                  const float *x /*[n,F]*/, int n);
/* spol_backward accumulates the gradients of the parameters given
 * dlogits[n] and the work of the matching spol_forward (whose second half
 * it uses as scratch). */
void spol_backward(spol_net *net, const float *dlogits /*[n]*/, float *work,
                   const float *x /*[n,F]*/, int n);

/* spol_greedy is the evaluation's decision over the n candidates of cs
 * with scores logits: "wait" when its probability exceeds 1/2 (the mode
 * of the start-or-wait choice, which a plain argmax over one wait row and
 * many plan rows would not respect: wait would win with 5% of the mass
 * when the plans split the rest), else the plan of highest score.
 * probs and logp [n] are scratch. Returns the index. */
int spol_greedy(const float *logits, float *probs, float *logp, const spol_cands *cs, int n);

/* One recorded decision of an episode (training). */
typedef struct {
    int n;        /* candidates */
    int chosen;   /* index among them */
    double time;  /* s: the instant */
    size_t row;   /* its first row in the episode's x */
} spol_decision;

typedef struct {
    spol_decision *d;
    int n, cap;
    float *x; /* [rows, F] */
    size_t rows, cap_rows;
} spol_episode;

spol_episode *spol_episode_create(void);
void spol_episode_free(spol_episode *e);
void spol_episode_clear(spol_episode *e);

/* What the "policy" sim method reads through sim_method_arg: the network
 * (borrowed), sample (1: draw from the softmax with rng; 0: argmax), and
 * an episode to record every decision into (or NULL). */
typedef struct {
    const spol_net *net;
    int sample;
    rng_t rng;
    spol_episode *rec;
} spol_run;

/* The sim_method callbacks of "policy" (sim/methods.c lists them). create
 * fails, naming what is missing, when sim_method_arg gives no spol_run. */
int spol_method_create(sim *s, void **state, char *err, size_t errlen);
void spol_method_destroy(void *state);
int spol_method_schedule(sim *s, void *state, char *err, size_t errlen);

/* Checkpoints. meta: step, seed, episodes, seconds and the train config's
 * text (may be NULL). spol_save writes atomically; spol_load returns the
 * network (NULL with "FILE: ..." in err: not a sim policy, another version
 * or feature version, a size out of range, damaged tensors). */
typedef struct {
    int64_t step;
    int seed;
    double episodes, seconds;
    const char *config_yaml;
} spol_meta;
int spol_save(const char *path, const spol_net *n, const spol_meta *m, char *err, size_t errlen);
spol_net *spol_load(const char *path, int64_t *step, char *err, size_t errlen);

#endif
