/* methods.h -- who runs next on the simulated cluster: the methods of
 * strata simulate behind one function table (docs/simulate.md).
 *
 * A method is a sim_method: a name, optional set-up and tear-down of its
 * own state, and `schedule`, which the simulator calls once at every
 * instant where jobs arrived or finished. schedule looks at the queue
 * (sim_queue_len / sim_queue_at, arrival order) and the free units, and
 * starts jobs with sim_start; whatever it leaves waits for the next
 * instant. Running jobs are never moved. The heuristics:
 *
 *   fcfs        first come, first served: the head of the queue gets the
 *               exact (cost-optimal) plan on the units free now; when none
 *               fits, everyone behind it waits
 *   exact-wait  the head gets its exact plan on the empty cluster and
 *               waits until those units are free; same head-of-line order
 *   smd         SMD over the queue (solvers/multi.h): the longest prefix of
 *               the first SIM_SMD_WINDOW queued jobs that can all start
 *               gets the plans minimising their sum of completion times
 *   gavel       heterogeneity-aware max-min fairness over throughput
 *               normalised per job, after Gavel (Narayanan et al.,
 *               OSDI'20), simplified to whole units without preemption
 *   sjf         shortest job first: the whole queue by expected run time
 *               at target (samples / target, ties by arrival), each job
 *               the exact plan on the free units if one fits; one that
 *               does not fit is passed over (backfilling), so long wide
 *               jobs can wait while shorter ones keep taking the units
 *
 * and the learned policy:
 *
 *   policy      a trained network (sim/spolicy.h, whose checkpoint comes in
 *               through sim_create_with's argument) scores candidate plans
 *               of the first queued jobs and "wait"; it starts the best
 *               until it picks wait or nothing fits
 */
#ifndef STRATA_SIM_METHODS_H
#define STRATA_SIM_METHODS_H

#include <stddef.h>

#include "sim/sim.h"

#define SIM_SMD_WINDOW 6 /* queued jobs smd decides over at once */

typedef struct sim_method {
    const char *name;
    const char *about; /* one line, for --help and the reports */
    /* create sets up the method's state for a run of s (may be NULL: no
     * state). Returns 0, or -1 with err. */
    int (*create)(sim *s, void **state, char *err, size_t errlen);
    /* destroy releases what create made; accepts NULL (may be NULL). */
    void (*destroy)(void *state);
    /* schedule starts queued jobs (sim_start) at the current instant.
     * Returns 0, or -1 with err (a solver failing, out of memory). */
    int (*schedule)(sim *s, void *state, char *err, size_t errlen);
} sim_method;

/* sim_methods returns the table of methods and their count in *n;
 * sim_method_find returns the one named name, or NULL. */
const sim_method *sim_methods(int *n);
const sim_method *sim_method_find(const char *name);

#endif
