/* policy_slot.c -- a refcounted pointer to the current policy.
 *
 * The slot itself holds one reference to the current entry; every request
 * holds one while it decodes. Swapping in a new entry drops the slot's
 * reference to the old one, which is freed by whoever drops the last.
 */
#include "service/policy_slot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct pslot {
    pthread_mutex_t mu;
    pslot_entry *cur; /* NULL until a policy loads */
    uint64_t generation;
    uint64_t ok, failed;
};

static void entry_free(pslot_entry *e) {
    if (!e) return;
    agent_policy_free(e->policy);
    free(e);
}

pslot *pslot_create(void) {
    pslot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void pslot_free(pslot *s) {
    if (!s) return;
    entry_free(s->cur);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int pslot_load(pslot *s, const char *path, char *err, size_t errlen) {
    double t0 = clock_now_s();
    pslot_entry *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", path);
        pthread_mutex_lock(&s->mu);
        s->failed++;
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    e->policy = agent_policy_load(path, err, errlen);
    if (!e->policy) {
        free(e);
        pthread_mutex_lock(&s->mu);
        s->failed++;
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    snprintf(e->path, sizeof e->path, "%s", path);
    e->step = agent_policy_step(e->policy);
    const char *h = agent_policy_hash(e->policy);
    snprintf(e->hash, sizeof e->hash, "%s", h ? h : "");
    e->loaded_at = clock_wall_s();
    e->load_seconds = clock_now_s() - t0;
    e->refs = 1;
    pthread_mutex_lock(&s->mu);
    e->generation = ++s->generation;
    pslot_entry *old = s->cur;
    s->cur = e;
    s->ok++;
    int dead = old && --old->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (dead) entry_free(old);
    return 0;
}

const pslot_entry *pslot_acquire(pslot *s) {
    pthread_mutex_lock(&s->mu);
    pslot_entry *e = s->cur;
    if (e) e->refs++;
    pthread_mutex_unlock(&s->mu);
    return e;
}

void pslot_release(pslot *s, const pslot_entry *ce) {
    if (!ce) return;
    pslot_entry *e = (pslot_entry *)ce;
    pthread_mutex_lock(&s->mu);
    int dead = --e->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (dead) entry_free(e);
}

void pslot_counts(pslot *s, uint64_t *ok, uint64_t *failed) {
    pthread_mutex_lock(&s->mu);
    if (ok) *ok = s->ok;
    if (failed) *failed = s->failed;
    pthread_mutex_unlock(&s->mu);
}
