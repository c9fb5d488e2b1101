/* spoltrain.h -- training the learned policy of strata simulate over whole
 * traces (sim/spolicy.h; docs/simulate.md, "Training").
 *
 * Trace seeds: training draws them in [2,000,000, 3,000,000) (from the
 * config's seed and the step), validation uses 1,000,000 + i, so that
 * held-out traces with seeds below 1,000,000 are never trained on.
 *
 * A sim train config (configs/train/sim-*.yaml, `mode: sim`) names the
 * cluster and the models, the trace generator's parameters for training
 * (jobs per trace, a range of loads, arrivals, deadline factor, seed), the
 * combined objective's weights, the network's width and the optimiser's
 * settings. One step draws `traces` traces (each with its own seed and a
 * load drawn uniformly from the range), plays `episodes` episodes of each
 * with the policy sampling, and takes one Adam step of REINFORCE:
 *
 *   decision k of episode e, at time t_k, gets the return
 *     G = -(the objective accrued from t_k on, sim_objective(e, w, t_k))
 *   and the baseline b = the mean of the same figure over the trace's
 *   other episodes at the same t_k (an input-driven, time-based baseline
 *   after Decima, Mao et al., SIGCOMM'19: every episode of a trace sees the
 *   same arrivals, so b removes the trace's own difficulty);
 *   adv = (G - b) / the standard deviation of the batch's advantages;
 *   loss = mean over decisions of -adv log p(chosen) - entropy x H(p).
 *
 * Every eval_every steps (and at the end) the policy decodes greedily the
 * `valid` validation traces (seeds apart from training ones, load
 * valid_load); best.h5 keeps the step with the lowest validation objective,
 * last.h5 the latest, metrics.csv one row per step.
 *
 * Ownership: spt_conf_load returns a config freed with spt_conf_free;
 * spt_create a trainer freed with spt_free.
 */
#ifndef STRATA_SIM_SPOLTRAIN_H
#define STRATA_SIM_SPOLTRAIN_H

#include <stddef.h>

#include "sim/spolicy.h"
#include "sim/trace.h"

typedef struct {
    char path[SIM_PATH_MAX];
    char *text;                 /* the config's text, owned (kept in checkpoints) */
    char cluster[SIM_PATH_MAX]; /* absolute */
    sim_gen_opts gen;           /* models absolute; jobs, arrivals, deadline factor, seed */
    double load_lo, load_hi;    /* training loads, drawn uniformly per trace */
    sim_weights w;
    int hidden;
    double lr, entropy, grad_clip;
    int steps;
    double seconds;             /* wall-clock budget (0: none) */
    int traces, episodes;       /* per step */
    int valid;                  /* validation traces */
    double valid_load;
    int eval_every;
    char out[SIM_PATH_MAX];
} spt_conf;

/* spt_conf_is returns 1 when the YAML file at path is a sim train config
 * (its top-level mode: is sim), 0 otherwise (or unreadable: the regular
 * loader then reports). */
int spt_conf_is(const char *path);

/* spt_conf_load reads path; NULL with "file:line:col: key: message". */
spt_conf *spt_conf_load(const char *path, char *err, size_t errlen);
void spt_conf_free(spt_conf *c);

typedef struct spt spt;

/* What a step reports. */
typedef struct {
    int step;
    double seconds;       /* since the start */
    double episodes;      /* played so far */
    double train_obj;     /* mean objective of the step's episodes, $ */
    double entropy;       /* mean entropy of the decisions */
    double valid_obj;     /* greedy objective summed over the validation traces (NAN: not run) */
    double valid_best_h;  /* the best heuristic's on the same traces */
    double decisions;     /* per episode */
} spt_metrics;

/* spt_create prepares a run (network from cf->seed, validation traces and
 * their heuristics' objectives, out folder). NULL with err. */
spt *spt_create(const spt_conf *cf, char *err, size_t errlen);
void spt_free(spt *t);

/* spt_step runs one training step; 0 or -1 with err. */
int spt_step(spt *t, char *err, size_t errlen);
/* spt_validate decodes the validation traces greedily, keeps best.h5 and
 * writes last.h5; 0 or -1 with err. */
int spt_validate(spt *t, char *err, size_t errlen);
const spt_metrics *spt_last(const spt *t);
int spt_done(const spt *t);

#endif
