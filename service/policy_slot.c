/* policy_slot.c -- the daemon's current policy (policy_slot.h): a
 * base/rcslot of loaded policies, and the count of loads that succeeded and
 * failed.
 */
#include "service/policy_slot.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct pslot {
    rcslot *slot;                /* of pslot_entry, NULL entry until a policy loads */
    atomic_ullong ok, failed;    /* pslot_load's outcomes */
};

static void entry_free(rcslot_ref *r) {
    pslot_entry *e = RCSLOT_ENTRY(r, pslot_entry, ref);
    agent_policy_free(e->policy);
    free(e);
}

pslot *pslot_create(void) {
    pslot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (!(s->slot = rcslot_create(entry_free))) {
        free(s);
        return NULL;
    }
    return s;
}

void pslot_free(pslot *s) {
    if (!s) return;
    rcslot_free(s->slot);
    free(s);
}

int pslot_load(pslot *s, const char *path, char *err, size_t errlen) {
    double t0 = clock_now_s();
    pslot_entry *e = calloc(1, sizeof *e);
    if (!e) snprintf(err, errlen, "%s: out of memory", path);
    if (e && !(e->policy = agent_policy_load(path, err, errlen))) {
        free(e);
        e = NULL;
    }
    if (!e) {
        atomic_fetch_add(&s->failed, 1);
        return -1;
    }
    snprintf(e->path, sizeof e->path, "%s", path);
    e->step = agent_policy_step(e->policy);
    const char *h = agent_policy_hash(e->policy);
    snprintf(e->hash, sizeof e->hash, "%s", h ? h : "");
    e->loaded_at = clock_wall_s();
    e->load_seconds = clock_now_s() - t0;
    rcslot_set(s->slot, &e->ref);
    atomic_fetch_add(&s->ok, 1);
    return 0;
}

const pslot_entry *pslot_acquire(pslot *s) {
    return RCSLOT_ENTRY(rcslot_acquire(s->slot), pslot_entry, ref);
}

void pslot_release(pslot *s, const pslot_entry *e) {
    if (e) rcslot_release(s->slot, (rcslot_ref *)&e->ref);
}

void pslot_counts(pslot *s, uint64_t *ok, uint64_t *failed) {
    if (ok) *ok = atomic_load(&s->ok);
    if (failed) *failed = atomic_load(&s->failed);
}
