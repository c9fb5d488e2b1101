/* reqcache.c -- an LRU of parsed request bodies keyed by their bytes.
 *
 * A small array of slots scanned linearly: with tens (or a thousand) of
 * entries a scan of their hashes is cheaper than any table, and eviction
 * is a scan for the oldest use. Hashes and last uses are kept in arrays
 * beside the slots, so that a scan reads contiguous memory rather than
 * every entry. Each entry carries a refcount; the slot that holds it counts
 * as one reference.
 */
#include "service/reqcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rc_entry {
    uint64_t hash;
    uint64_t kind;
    size_t len;
    size_t size;    /* len plus the value's bytes, as counted in max_bytes */
    char *key;      /* [len] copy of the body, NULL for a private entry */
    void *value;
    void (*value_free)(void *);
    int refs;       /* holders, the slot included; guarded by the cache mutex */
    rc_entry *next; /* in a list of evicted entries, while being freed */
};

struct rc_cache {
    pthread_mutex_t mu;
    int capacity;
    size_t max_bytes;
    size_t bytes;     /* sum of size over held entries */
    rc_entry **slot;  /* [capacity], NULL when free */
    uint64_t *shash;  /* [capacity] the hash of slot i's entry (any value when free) */
    uint64_t *sused;  /* [capacity] tick of slot i's last use */
    uint64_t tick;
    uint64_t hits, misses;
};

uint64_t rc_hash(const void *data, size_t len) {
    /* Words are read with memcpy (no alignment assumed) and mixed by a
     * multiply-xorshift; the tail is zero-padded and the length mixed in. */
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (i < len) memcpy(&w, p + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return h;
}

rc_cache *rc_create(int capacity, size_t max_bytes) {
    if (capacity < 1) capacity = 1;
    rc_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->slot = calloc((size_t)capacity, sizeof *c->slot);
    c->shash = calloc((size_t)capacity, sizeof *c->shash);
    c->sused = calloc((size_t)capacity, sizeof *c->sused);
    if (!c->slot || !c->shash || !c->sused) {
        free(c->slot);
        free(c->shash);
        free(c->sused);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->capacity = capacity;
    c->max_bytes = max_bytes;
    return c;
}

static void entry_free(rc_entry *e) {
    if (e->value_free) e->value_free(e->value);
    free(e->key);
    free(e);
}

/* Drops one reference with the mutex held; returns the entry when it is
 * to be freed (outside the lock), else NULL. */
static rc_entry *unref_locked(rc_entry *e) {
    return --e->refs == 0 ? e : NULL;
}

void rc_free(rc_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->capacity; i++)
        if (c->slot[i] && unref_locked(c->slot[i])) entry_free(c->slot[i]);
    pthread_mutex_destroy(&c->mu);
    free(c->slot);
    free(c->shash);
    free(c->sused);
    free(c);
}

static int find_locked(rc_cache *c, uint64_t kind, const char *body, size_t len, uint64_t h) {
    for (int i = 0; i < c->capacity; i++) {
        if (c->shash[i] != h) continue;
        rc_entry *e = c->slot[i];
        if (e && e->hash == h && e->kind == kind && e->len == len &&
            memcmp(e->key, body, len) == 0)
            return i;
    }
    return -1;
}

/* The lookup of rc_get and rc_try; count_miss 0 leaves a miss uncounted. */
static void *lookup(rc_cache *c, uint64_t kind, const char *body, size_t len, rc_entry **ref,
                    int count_miss) {
    uint64_t h = rc_hash(body, len);
    pthread_mutex_lock(&c->mu);
    int i = find_locked(c, kind, body, len, h);
    void *v = NULL;
    *ref = NULL;
    if (i >= 0) {
        rc_entry *e = c->slot[i];
        e->refs++;
        c->sused[i] = ++c->tick;
        c->hits++;
        *ref = e;
        v = e->value;
    } else if (count_miss) {
        c->misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return v;
}

void *rc_get(rc_cache *c, uint64_t kind, const char *body, size_t len, rc_entry **ref) {
    return lookup(c, kind, body, len, ref, 1);
}

void *rc_try(rc_cache *c, uint64_t kind, const char *body, size_t len, rc_entry **ref) {
    return lookup(c, kind, body, len, ref, 0);
}

/* Evicts the least recently used entry; returns it when it must be freed
 * (no other holder), else NULL. With entries held, one is always evicted. */
static rc_entry *evict_locked(rc_cache *c) {
    int victim = -1;
    for (int i = 0; i < c->capacity; i++)
        if (c->slot[i] && (victim < 0 || c->sused[i] < c->sused[victim])) victim = i;
    if (victim < 0) return NULL;
    rc_entry *e = c->slot[victim];
    c->slot[victim] = NULL;
    c->bytes -= e->size;
    return unref_locked(e);
}

void *rc_put(rc_cache *c, uint64_t kind, const char *body, size_t len, void *value,
             void (*value_free)(void *), rc_entry **ref) {
    return rc_put_sized(c, kind, body, len, value, 0, value_free, ref);
}

void *rc_put_sized(rc_cache *c, uint64_t kind, const char *body, size_t len, void *value,
                   size_t value_bytes, void (*value_free)(void *), rc_entry **ref) {
    *ref = NULL;
    rc_entry *e = calloc(1, sizeof *e);
    size_t size = len + value_bytes;
    int keep = size >= len && size <= c->max_bytes;
    char *key = keep ? malloc(len ? len : 1) : NULL;
    if (!e || (keep && !key)) {
        free(e);
        free(key);
        if (value_free) value_free(value);
        return NULL;
    }
    if (key) memcpy(key, body, len);
    e->hash = rc_hash(body, len);
    e->kind = kind;
    e->len = len;
    e->size = size;
    e->key = key;
    e->value = value;
    e->value_free = value_free;
    e->refs = 1; /* the caller's */
    if (!keep) {
        *ref = e;
        return value;
    }
    rc_entry *dead = NULL; /* evicted entries to free outside the lock */
    pthread_mutex_lock(&c->mu);
    int i = find_locked(c, kind, body, len, e->hash);
    if (i >= 0) { /* another thread parsed the same body first: use its entry */
        rc_entry *old = c->slot[i];
        old->refs++;
        c->sused[i] = ++c->tick;
        pthread_mutex_unlock(&c->mu);
        entry_free(e);
        *ref = old;
        return old->value;
    }
    /* Make room: a free slot, and sizes within max_bytes (size <=
     * max_bytes, so emptying the cache always suffices). */
    int free_slot;
    for (;;) {
        free_slot = -1;
        for (int k = 0; k < c->capacity && free_slot < 0; k++)
            if (!c->slot[k]) free_slot = k;
        if (free_slot >= 0 && c->bytes + size <= c->max_bytes) break;
        rc_entry *d = evict_locked(c);
        if (d) {
            d->next = dead;
            dead = d;
        }
    }
    e->refs = 2; /* the slot and the caller */
    c->sused[free_slot] = ++c->tick;
    c->shash[free_slot] = e->hash;
    c->slot[free_slot] = e;
    c->bytes += size;
    pthread_mutex_unlock(&c->mu);
    while (dead) {
        rc_entry *next = dead->next;
        entry_free(dead);
        dead = next;
    }
    *ref = e;
    return value;
}

void rc_release(rc_cache *c, rc_entry *ref) {
    if (!ref) return;
    pthread_mutex_lock(&c->mu);
    rc_entry *dead = unref_locked(ref);
    pthread_mutex_unlock(&c->mu);
    if (dead) entry_free(dead);
}

void rc_clear(rc_cache *c) {
    rc_entry *dead = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->capacity; i++) {
        rc_entry *e = c->slot[i];
        if (!e) continue;
        c->slot[i] = NULL;
        c->bytes -= e->size;
        if (unref_locked(e)) {
            e->next = dead;
            dead = e;
        }
    }
    pthread_mutex_unlock(&c->mu);
    while (dead) {
        rc_entry *next = dead->next;
        entry_free(dead);
        dead = next;
    }
}

void rc_stats(rc_cache *c, uint64_t *hits, uint64_t *misses, int *entries) {
    pthread_mutex_lock(&c->mu);
    if (hits) *hits = c->hits;
    if (misses) *misses = c->misses;
    if (entries) {
        int n = 0;
        for (int i = 0; i < c->capacity; i++) n += c->slot[i] != NULL;
        *entries = n;
    }
    pthread_mutex_unlock(&c->mu);
}
