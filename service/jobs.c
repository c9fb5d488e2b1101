/* jobs.c -- a small table of registered jobs with refcounted entries.
 *
 * A few hundred jobs at most: a flat array searched by name is plenty.
 */
#include "service/jobs.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct jobs_registry {
    pthread_mutex_t mu;
    int max;
    int n;
    size_t max_bytes; /* 0: no byte bound */
    size_t bytes;     /* charged by the entries in the table */
    jobs_entry **e; /* [max] */
    uint64_t version;
};

jobs_registry *jobs_create(int max_jobs, size_t max_bytes) {
    if (max_jobs < 1) max_jobs = 1;
    jobs_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->e = calloc((size_t)max_jobs, sizeof *r->e);
    if (!r->e) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->max = max_jobs;
    r->max_bytes = max_bytes;
    return r;
}

/* One heap block of n bytes as glibc gives it: 16 bytes aligned, plus its
 * 8-byte header. */
static size_t block(size_t n) { return (n + 8 + 15) & ~(size_t)15; }

size_t jobs_doc_bytes(const json_t *v) {
    if (!v) return 0;
    size_t n = 0, i;
    const char *k;
    json_t *x;
    switch (json_typeof(v)) {
    case JSON_OBJECT: /* the value, its hashtable (buckets, one pair per key) */
        n = block(64) + block(16 * (json_object_size(v) * 2 + 8));
        json_object_foreach((json_t *)v, k, x) n += block(40 + strlen(k) + 1) + jobs_doc_bytes(x);
        return n;
    case JSON_ARRAY:
        n = block(40) + block(8 * (json_array_size(v) + 8));
        json_array_foreach(v, i, x) n += jobs_doc_bytes(x);
        return n;
    case JSON_STRING: return block(40) + block(json_string_length(v) + 1);
    case JSON_INTEGER:
    case JSON_REAL: return block(32);
    default: return 0; /* true, false, null: shared singletons */
    }
}

size_t jobs_bytes(jobs_registry *r) {
    pthread_mutex_lock(&r->mu);
    size_t b = r->bytes;
    pthread_mutex_unlock(&r->mu);
    return b;
}

static void entry_free(jobs_entry *e) {
    if (!e) return;
    if (e->ext && e->ext_free) e->ext_free(e->ext);
    json_decref(e->doc);
    json_decref(e->plan);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void jobs_free(jobs_registry *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) entry_free(r->e[i]);
    pthread_mutex_destroy(&r->mu);
    free(r->e);
    free(r);
}

int jobs_name_ok(const char *name, char *err, size_t errlen) {
    size_t n = strlen(name);
    if (n == 0 || n >= JOBS_NAME_MAX) {
        snprintf(err, errlen, "a job name has 1 to %d characters, got %zu", JOBS_NAME_MAX - 1,
                 n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (alnum || (i > 0 && (c == '-' || c == '.' || c == '_'))) continue;
        snprintf(err, errlen, "a job name is letters, digits, '-', '.' and '_' (starting "
                 "with a letter or digit); character %zu is not allowed", i + 1);
        return -1;
    }
    return 0;
}

static int find_locked(jobs_registry *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->e[i]->name, name)) return i;
    return -1;
}

/* Drops a reference with the mutex held; returns 1 when it was the last. */
static int unref_locked(jobs_entry *e) { return --e->refs == 0; }

int jobs_key(char *key, const char *ns, const char *name, char *err, size_t errlen) {
    char msg[200];
    if (!ns || !*ns) ns = JOBS_DEFAULT_NAMESPACE;
    if (jobs_name_ok(ns, msg, sizeof msg)) {
        snprintf(err, errlen, "namespace \"%.80s\": %s", ns, msg);
        return -1;
    }
    if (jobs_name_ok(name, msg, sizeof msg)) {
        snprintf(err, errlen, "job name \"%.80s\": %s", name, msg);
        return -1;
    }
    snprintf(key, JOBS_KEY_MAX, "%s/%s", ns, name);
    return 0;
}

/* Whether an entry of `bytes` fits in place of entry i (-1: a new one);
 * r->mu held. Returns 0, JOBS_FULL or JOBS_NOROOM with a message. */
static int room_locked(jobs_registry *r, int i, size_t bytes, char *err, size_t errlen) {
    if (i < 0 && r->n >= r->max) {
        snprintf(err, errlen, "the registry holds %d jobs already (its limit); delete one first",
                 r->max);
        return JOBS_FULL;
    }
    size_t keep = r->bytes - (i >= 0 ? r->e[i]->bytes : 0);
    if (r->max_bytes && keep + bytes > r->max_bytes) {
        snprintf(err, errlen, "the job registry is full: this job takes about %zu KiB in "
                 "memory and the %d jobs registered take %zu KiB of its %zu KiB "
                 "(--jobs-max-mb); delete jobs first", (bytes + 1023) >> 10, r->n,
                 (r->bytes + 1023) >> 10, r->max_bytes >> 10);
        return JOBS_NOROOM;
    }
    return 0;
}

/* What an entry for doc is charged. */
static size_t entry_bytes(const json_t *doc) { return block(sizeof(jobs_entry)) + jobs_doc_bytes(doc); }

int jobs_room(jobs_registry *r, const char *key, const json_t *doc, char *err, size_t errlen) {
    pthread_mutex_lock(&r->mu);
    int rc = room_locked(r, find_locked(r, key), entry_bytes(doc), err, errlen);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* jobs_put and jobs_load: version 0 takes the next of the registry's. */
static int put_entry(jobs_registry *r, const char *name, json_t *doc, int n_layers,
                     json_t *plan, uint64_t version, double registered_at, uint64_t *version_out,
                     char *err, size_t errlen) {
    jobs_entry *e = calloc(1, sizeof *e);
    if (!e) {
        json_decref(doc);
        json_decref(plan);
        snprintf(err, errlen, "out of memory");
        return JOBS_NOMEM;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->doc = doc;
    e->plan = plan;
    e->n_layers = n_layers;
    e->bytes = entry_bytes(doc); /* the plan is small beside it: a few lines per task */
    e->registered_at = registered_at > 0 ? registered_at : clock_wall_s();
    pthread_mutex_init(&e->mu, NULL);
    e->refs = 1;
    jobs_entry *old = NULL;
    pthread_mutex_lock(&r->mu);
    int i = find_locked(r, name);
    int rc = room_locked(r, i, e->bytes, err, errlen);
    if (rc < 0) {
        pthread_mutex_unlock(&r->mu);
        entry_free(e);
        return rc;
    }
    size_t keep = r->bytes - (i >= 0 ? r->e[i]->bytes : 0);
    r->bytes = keep + e->bytes;
    if (version) {
        e->version = version;
        if (version > r->version) r->version = version;
    } else {
        e->version = ++r->version;
    }
    if (version_out) *version_out = e->version;
    if (i >= 0) {
        old = unref_locked(r->e[i]) ? r->e[i] : NULL;
        r->e[i] = e;
    } else {
        r->e[r->n++] = e;
    }
    pthread_mutex_unlock(&r->mu);
    entry_free(old);
    return i < 0 ? 1 : 0;
}

int jobs_put(jobs_registry *r, const char *name, json_t *doc, int n_layers,
             uint64_t *version, char *err, size_t errlen) {
    return put_entry(r, name, doc, n_layers, NULL, 0, 0, version, err, errlen);
}

int jobs_load(jobs_registry *r, const char *key, json_t *doc, int n_layers, json_t *plan,
              uint64_t version, double registered_at, char *err, size_t errlen) {
    return put_entry(r, key, doc, n_layers, plan, version ? version : 1, registered_at, NULL,
                     err, errlen);
}

json_t *jobs_keys(jobs_registry *r) {
    json_t *arr = json_array();
    if (!arr) return NULL;
    pthread_mutex_lock(&r->mu);
    int ok = 1;
    for (int i = 0; i < r->n && ok; i++) ok = !json_array_append_new(arr, json_string(r->e[i]->name));
    pthread_mutex_unlock(&r->mu);
    if (!ok) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

jobs_entry *jobs_get(jobs_registry *r, const char *name) {
    pthread_mutex_lock(&r->mu);
    int i = find_locked(r, name);
    jobs_entry *e = i >= 0 ? r->e[i] : NULL;
    if (e) e->refs++;
    pthread_mutex_unlock(&r->mu);
    return e;
}

void jobs_release(jobs_registry *r, jobs_entry *e) {
    if (!e) return;
    pthread_mutex_lock(&r->mu);
    int dead = unref_locked(e);
    pthread_mutex_unlock(&r->mu);
    if (dead) entry_free(e);
}

int jobs_delete(jobs_registry *r, const char *name) {
    pthread_mutex_lock(&r->mu);
    int i = find_locked(r, name);
    if (i < 0) {
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    jobs_entry *e = r->e[i];
    r->e[i] = r->e[--r->n];
    r->e[r->n] = NULL;
    r->bytes -= e->bytes;
    int dead = unref_locked(e);
    pthread_mutex_unlock(&r->mu);
    if (dead) {
        entry_free(e);
        malloc_trim(0); /* the document's many small blocks, back to the system */
    }
    return 0;
}

static int by_key(const void *a, const void *b) {
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "namespace")),
                   json_string_value(json_object_get(y, "namespace")));
    return c ? c : strcmp(json_string_value(json_object_get(x, "name")),
                          json_string_value(json_object_get(y, "name")));
}

json_t *jobs_list(jobs_registry *r) {
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    json_t **rows = calloc((size_t)(n ? n : 1), sizeof *rows);
    for (int i = 0; rows && i < n; i++) {
        jobs_entry *e = r->e[i];
        const char *slash = strchr(e->name, '/');
        int nslen = slash ? (int)(slash - e->name) : 0;
        rows[i] = json_pack("{s:s%, s:s, s:I, s:i, s:f}", "namespace", e->name, (size_t)nslen,
                            "name", slash ? slash + 1 : e->name, "version",
                            (json_int_t)e->version, "layers", e->n_layers, "registered_at",
                            e->registered_at);
    }
    pthread_mutex_unlock(&r->mu);
    if (!rows) return NULL;
    json_t *arr = json_array();
    int ok = arr != NULL;
    for (int i = 0; i < n; i++) ok = ok && rows[i];
    if (ok) {
        qsort(rows, (size_t)n, sizeof *rows, by_key);
        for (int i = 0; i < n; i++) json_array_append(arr, rows[i]);
    }
    for (int i = 0; i < n; i++) json_decref(rows[i]);
    free(rows);
    if (!ok) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

int jobs_count(jobs_registry *r) {
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}
