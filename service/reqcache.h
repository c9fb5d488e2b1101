/* reqcache.h -- parsed request bodies, kept by their exact bytes.
 *
 * Reading a request's cluster and job (JSON by jansson, then the config
 * loader) costs far more than answering it, and a placement service sees
 * the same cluster and job over and over (a scheduler asking about the
 * pods of one job, a client retrying with another seed... ). This cache
 * maps (kind, body bytes) to what a handler parsed from them, so that a
 * body seen before skips both parsers. The cache holds what a handler
 * parsed; /v1/place also keeps, inside its parsed value, the memo of a
 * deterministic policy answer (service/api.c), while solvers and placers
 * run on every request.
 *
 * Keys are compared byte for byte (the 64-bit hash only picks candidates),
 * so two bodies share an entry only when they are identical. The cache
 * holds at most `capacity` entries and `max_bytes` of keys (and of the
 * values' own bytes, for values put with rc_put_sized); the least
 * recently used entry goes first. Values are immutable once inserted (but for
 * what a value guards with a lock of its own, like /v1/place's memo) and
 * refcounted: an entry evicted while a request still uses it is freed when
 * that request releases it.
 *
 * Thread-safe: one mutex, held only for the scan of at most `capacity`
 * hashes and the refcount updates.
 */
#ifndef STRATA_SERVICE_REQCACHE_H
#define STRATA_SERVICE_REQCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rc_cache rc_cache;
typedef struct rc_entry rc_entry;

/* rc_create returns an empty cache of at most capacity entries (>= 1) and
 * max_bytes of keys, or NULL when out of memory. rc_free frees it and
 * every value; it accepts NULL. No reference may be held when freeing. */
rc_cache *rc_create(int capacity, size_t max_bytes);
void rc_free(rc_cache *c);

/* kind is any number that sets keys apart beside their bytes (a body
 * schema, a policy generation). rc_get returns the value parsed from
 * (kind, body[len]) and a reference in *ref that the caller gives back with
 * rc_release; NULL on a miss. */
void *rc_get(rc_cache *c, uint64_t kind, const char *body, size_t len, rc_entry **ref);

/* rc_try is rc_get for a first of two lookups of one request: a hit counts,
 * a miss does not (the second lookup, by rc_get, counts it). */
void *rc_try(rc_cache *c, uint64_t kind, const char *body, size_t len, rc_entry **ref);

/* rc_put inserts value (ownership passes to the cache; value_free frees it)
 * for (kind, body[len]) and returns the value to use, with a reference in
 * *ref: the given one, or an equal entry another thread inserted first (the
 * given value is then freed). A key longer than max_bytes is not kept: the
 * value is returned in a private entry freed on release. Returns NULL only
 * when out of memory (the value is freed). */
void *rc_put(rc_cache *c, uint64_t kind, const char *body, size_t len, void *value,
             void (*value_free)(void *), rc_entry **ref);

/* rc_put_sized is rc_put for a value that holds value_bytes of its own:
 * they count with the key's against max_bytes (an entry whose key and value
 * pass max_bytes is private, as a long key is). */
void *rc_put_sized(rc_cache *c, uint64_t kind, const char *body, size_t len, void *value,
                   size_t value_bytes, void (*value_free)(void *), rc_entry **ref);

/* rc_release drops a reference from rc_get/rc_put; accepts NULL. */
void rc_release(rc_cache *c, rc_entry *ref);

/* rc_clear drops every entry (an entry a request still holds is freed when
 * it is released); the hit and miss counts stay. */
void rc_clear(rc_cache *c);

/* rc_stats reports hits, misses and entries held (any may be NULL). */
void rc_stats(rc_cache *c, uint64_t *hits, uint64_t *misses, int *entries);

/* rc_hash returns a 64-bit hash of data[len] (a mix of 8-byte words). */
uint64_t rc_hash(const void *data, size_t len);

#endif
