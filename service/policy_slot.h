/* policy_slot.h -- the daemon's current policy, replaceable while serving.
 *
 * The slot holds at most one loaded policy (agent/policy.h) together with
 * the facts the daemon reports about it: the file, its training step and
 * weight hash, when it was loaded and how long loading took. A request
 * takes a reference with pslot_acquire and decodes with that policy until
 * it calls pslot_release, even if a reload swaps another policy in
 * meanwhile: the old one is freed when its last request lets go.
 *
 * pslot_load loads a file completely before touching the slot, so a file
 * that fails to load leaves the current policy serving; the message says
 * why. Loads are serialised by the caller (the daemon loads from its main
 * thread only).
 *
 * The slot is a base/rcslot.h: acquire and release take one mutex for a
 * pointer read and a counter update; nothing slow happens under it.
 */
#ifndef STRATA_SERVICE_POLICY_SLOT_H
#define STRATA_SERVICE_POLICY_SLOT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/policy.h"
#include "base/rcslot.h"

/* One loaded policy and its facts; read-only once published. */
typedef struct pslot_entry {
    agent_policy *policy;
    char path[1024];      /* the file, as given */
    int64_t step;         /* training step */
    char hash[80];        /* hex digest of the weights */
    double loaded_at;     /* wall clock, seconds since the epoch */
    double load_seconds;  /* how long loading took */
    rcslot_ref ref;       /* the slot's: ref.generation is 1 for the first policy
                             loaded, +1 per reload */
} pslot_entry;

typedef struct pslot pslot;

/* pslot_create returns an empty slot (or NULL when out of memory);
 * pslot_free frees it and its policy, accepts NULL; no reference may be
 * held. */
pslot *pslot_create(void);
void pslot_free(pslot *s);

/* pslot_load loads the policy at path and, on success, makes it current
 * (the previous one is freed once no request holds it). Returns 0, or -1
 * with the loader's message in err[errlen] and the slot unchanged. Counts
 * successes and failures for pslot_counts. */
int pslot_load(pslot *s, const char *path, char *err, size_t errlen);

/* pslot_acquire returns the current policy with a reference held, or NULL
 * when none is loaded. pslot_release gives it back (NULL accepted). */
const pslot_entry *pslot_acquire(pslot *s);
void pslot_release(pslot *s, const pslot_entry *e);

/* pslot_counts reports loads that succeeded and failed (either may be NULL). */
void pslot_counts(pslot *s, uint64_t *ok, uint64_t *failed);

#endif
