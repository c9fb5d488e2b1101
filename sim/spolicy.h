/* spolicy.h -- the simulator's side of the learned policy of strata
 * simulate (agent/spolicy.h has the policy itself: candidates, features,
 * network, decision rule, checkpoints; docs/simulate.md, "The learned
 * policy").
 *
 * spol_candidates fills agent/spolicy's view from the event loop, and the
 * "policy" sim method decodes with the network and starts the chosen plans
 * until it picks "wait" or nothing fits. The names keep the spol_ prefix:
 * this is the same policy, split so that the daemon (service/, which may
 * not include sim/) shares it.
 */
#ifndef STRATA_SIM_SPOLICY_H
#define STRATA_SIM_SPOLICY_H

#include <stddef.h>

#include "agent/spolicy.h"
#include "nets/rng.h"
#include "sim/sim.h"

/* spol_candidates fills cs with the candidates of the current instant of
 * s: the plans of the SPOL_WINDOW queued jobs looked at (above), then the
 * wait row when some job is running. The view: the cluster as configured and its free units,
 * the time, the queue's length and demand, the running jobs; the jobs: the
 * first SPOL_HEAD queued and the SPOL_SHORT shortest of the next ones up to
 * position SPOL_SCAN, with their exact plans on the empty cluster and on
 * the free units. The candidates' job is the trace index.
 * Returns the number of candidates (0: nothing fits, nothing to decide),
 * or -1 with err. */
int spol_candidates(sim *s, spol_cands *cs, char *err, size_t errlen);

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

#endif
