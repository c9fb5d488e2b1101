/* rcslot.h -- a refcounted "current entry" that readers hold while a writer
 * swaps it.
 *
 * The daemon keeps three things that a reload or a new request replaces
 * while other requests still read the old one: the placement policy
 * (service/policy_slot.h), the shared-cluster policy (service/clpolicy.h)
 * and the last Nodes body of the scheduler extender (service/k8sargs.h's
 * ka_memo). Each is an rcslot: at most one current entry; a reader takes
 * it with one more reference (rcslot_acquire) and gives it back
 * (rcslot_release); rcslot_set makes a new entry current and drops the
 * slot's reference to the old one. An entry is freed, by the slot's free
 * function and outside its lock, when its last reference goes, so a reader
 * that acquired before a swap keeps its entry whole until it lets go.
 *
 * An entry embeds an rcslot_ref (anywhere in its struct); the slot works on
 * that member and RCSLOT_ENTRY gets the entry back from it. Thread-safe:
 * acquire, release and set take one mutex for a pointer and a counter;
 * nothing slow (no free) happens under it.
 *
 * Ownership: rcslot_free mirrors rcslot_create and frees the current entry;
 * no reference may be held then.
 */
#ifndef STRATA_BASE_RCSLOT_H
#define STRATA_BASE_RCSLOT_H

#include <stddef.h>
#include <stdint.h>

/* The slot's part of an entry. */
typedef struct {
    int refs;            /* holders, the slot's own included; guarded by the slot */
    uint64_t generation; /* rcslot_set's: 1 for the slot's first entry, +1 per swap */
} rcslot_ref;

/* RCSLOT_ENTRY(r, type, member) is the `type` whose rcslot_ref `member` r
 * points to (r may be NULL: NULL); r is evaluated once. */
static inline void *rcslot_container(rcslot_ref *r, size_t offset) {
    return r ? (void *)((char *)r - offset) : NULL;
}
#define RCSLOT_ENTRY(r, type, member) ((type *)rcslot_container((r), offsetof(type, member)))

typedef struct rcslot rcslot;

/* rcslot_create returns an empty slot whose entries free_entry frees (it
 * gets the entry's rcslot_ref), or NULL when out of memory. rcslot_free
 * frees the slot and its current entry; accepts NULL. */
rcslot *rcslot_create(void (*free_entry)(rcslot_ref *r));
void rcslot_free(rcslot *s);

/* rcslot_set makes r (a new entry, not yet shared) current with the slot's
 * reference, stamps its generation, and returns that generation; the
 * previous entry is freed now or by its last reader. */
uint64_t rcslot_set(rcslot *s, rcslot_ref *r);

/* rcslot_acquire returns the current entry with one more reference, or
 * NULL when there is none. rcslot_release drops a reference (NULL
 * accepted) and frees the entry when it was the last. */
rcslot_ref *rcslot_acquire(rcslot *s);
void rcslot_release(rcslot *s, rcslot_ref *r);

#endif
