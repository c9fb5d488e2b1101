/* clpolicy.h -- the learned shared-cluster policy (agent/spolicy.h) in the
 * daemon: `strata serve --sim-policy CKPT` and POST /v1/place with
 * "plan_method": "cluster-policy" on the free units (options.on "free").
 *
 * The daemon's view is the one strata simulate builds at a scheduling
 * instant (sim/spolicy.c), from /v1/cluster instead of the event loop: the
 * cluster as configured, its free units (the configured units less the
 * occupancy), the posted job as a queue of one (position 0, waiting time 0,
 * no deadline) and the jobs holding units as the running ones. Its
 * candidates, features, network and decision rule (spol_greedy: "wait"
 * when it holds more than half the probability) are agent/spolicy's, so an
 * online decision sees what the simulation sees.
 *
 * The network sits in a refcounted slot (base/rcslot.h), as the placement
 * policy does in policy_slot.h: a request holds a reference while it decides, and a reload
 * (SIGHUP) swaps in a new network without disturbing requests in flight.
 *
 * Ownership: clp_slot_free mirrors clp_slot_create; entries returned by
 * clp_acquire are given back with clp_release.
 */
#ifndef STRATA_SERVICE_CLPOLICY_H
#define STRATA_SERVICE_CLPOLICY_H

#include <stddef.h>
#include <stdint.h>

#include "agent/spolicy.h"
#include "base/rcslot.h"
#include "env/model.h"

#define CLP_METHOD "cluster-policy" /* options.plan_method of /v1/place */

/* One loaded network. */
typedef struct {
    spol_net *net;
    char path[1024];
    int64_t step;        /* the checkpoint's training step */
    rcslot_ref ref;      /* the slot's: ref.generation is 1 for the first load,
                            +1 per reload */
} clp_entry;

typedef struct clp_slot clp_slot;

/* clp_slot_create returns an empty slot (no network), NULL when out of
 * memory; clp_slot_free frees it and its network, accepts NULL. */
clp_slot *clp_slot_create(void);
void clp_slot_free(clp_slot *s);

/* clp_slot_load loads the sim policy checkpoint at path (spol_load) and
 * makes it the current one. Returns 0, or -1 with "PATH: why" in err (the
 * old network, if any, keeps serving). */
int clp_slot_load(clp_slot *s, const char *path, char *err, size_t errlen);

/* clp_acquire returns the current entry with a reference taken (NULL when
 * none is loaded); clp_release gives it back (accepts NULL). */
const clp_entry *clp_acquire(clp_slot *s);
void clp_release(clp_slot *s, const clp_entry *e);

/* What the policy decided for one job. */
typedef struct {
    int wait;         /* 1: the policy waits (no plan) */
    int n_cands;      /* candidates scored, wait included (0: nothing fits) */
    double p_wait;    /* the probability of wait (0 when not offered) */
    double p_chosen;  /* the probability of the chosen candidate */
    int kind;         /* spol_kind of the chosen plan */
    int type;         /* one-type: its type, else -1 */
    double target;    /* samples/s the plan is provisioned for (>= the job's R) */
    char why[256];    /* when wait or n_cands == 0 */
} clp_decision;

/* clp_decide decides for job on full (the cluster as configured) whose
 * free units are freec (the same types in the same order), with n_running
 * jobs holding units: the view above, agent/spolicy's candidates, the
 * network's scores and spol_greedy. On a plan, assign[job->n_layers] gets
 * it and *dec its kind and target (a copy of job with min_throughput =
 * target is the job to score and place); on wait or when nothing fits,
 * dec->why says why. Returns 0, or -1 with err (out of memory, a solver
 * error). */
int clp_decide(const spol_net *net, const model_job *job, const model_cluster *full,
               const model_cluster *freec, int n_running, int *assign, clp_decision *dec,
               char *err, size_t errlen);

/* clp_kind_name names a spol_kind ("exact-free", "exact-empty",
 * "one-type", "wait"). */
const char *clp_kind_name(int kind);

#endif
