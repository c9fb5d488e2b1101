/* rcslot.c -- a refcounted current entry (rcslot.h). */
#include "base/rcslot.h"

#include <pthread.h>
#include <stdlib.h>

struct rcslot {
    pthread_mutex_t mu;           /* guards cur, generation and every entry's refs */
    rcslot_ref *cur;              /* NULL until the first rcslot_set */
    uint64_t generation;          /* the last one given */
    void (*free_entry)(rcslot_ref *r);
};

rcslot *rcslot_create(void (*free_entry)(rcslot_ref *r)) {
    rcslot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (pthread_mutex_init(&s->mu, NULL)) {
        free(s);
        return NULL;
    }
    s->free_entry = free_entry;
    return s;
}

void rcslot_free(rcslot *s) {
    if (!s) return;
    if (s->cur) s->free_entry(s->cur);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

uint64_t rcslot_set(rcslot *s, rcslot_ref *r) {
    r->refs = 1;
    pthread_mutex_lock(&s->mu);
    uint64_t g = r->generation = ++s->generation;
    rcslot_ref *old = s->cur;
    s->cur = r;
    int dead = old && --old->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (dead) s->free_entry(old);
    return g;
}

rcslot_ref *rcslot_acquire(rcslot *s) {
    pthread_mutex_lock(&s->mu);
    rcslot_ref *r = s->cur;
    if (r) r->refs++;
    pthread_mutex_unlock(&s->mu);
    return r;
}

void rcslot_release(rcslot *s, rcslot_ref *r) {
    if (!r) return;
    pthread_mutex_lock(&s->mu);
    int dead = --r->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (dead) s->free_entry(r);
}
