/* jobs.h -- the jobs registered with the daemon (PUT /v1/jobs/{name}).
 *
 * The Kubernetes extender needs, for a training pod, the layers of the job
 * it belongs to: a client registers each job under the name its pods carry
 * (the Kubeflow or Volcano job name) with a document {"cluster": ...,
 * "job": ..., "options": ...} that the API has validated. The registry
 * keeps those documents, immutable once stored, and lets the extender hang
 * its own per-job state (the nodes it has seen, the placement it computed)
 * on an entry, guarded by the entry's mutex.
 *
 * Entries are refcounted: a reader holds one with jobs_get while it uses
 * it, so that a concurrent PUT or DELETE never frees it underneath.
 * Replacing a job (PUT again) makes a new entry with a new version and a
 * fresh extender state.
 *
 * Thread-safe: one mutex around the table; nothing slow happens under it.
 */
#ifndef STRATA_SERVICE_JOBS_H
#define STRATA_SERVICE_JOBS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define JOBS_NAME_MAX 64 /* names are 1..63 characters */
#define JOBS_DEFAULT_MAX 1024
#define JOBS_DEFAULT_MAX_BYTES ((size_t)64 << 20) /* 64 MiB of documents */

/* jobs_put's failures. */
#define JOBS_FULL (-1)
#define JOBS_NOMEM (-2)
#define JOBS_NOROOM (-3) /* the documents would pass max_bytes */

typedef struct jobs_entry {
    char name[JOBS_NAME_MAX];
    uint64_t version;     /* unique across the registry, grows with every PUT */
    double registered_at; /* seconds since the epoch */
    json_t *doc;          /* {"cluster", "job", "options"}: read-only once stored */
    int n_layers;         /* layers of the job */
    size_t bytes;         /* what doc costs in memory (jobs_doc_bytes), charged to the registry */
    pthread_mutex_t mu;   /* guards ext */
    void *ext;            /* the extender's state for this job, or NULL */
    void (*ext_free)(void *);
    int refs;             /* holders, the table included; guarded by the registry */
} jobs_entry;

typedef struct jobs_registry jobs_registry;

/* jobs_create returns an empty registry of at most max_jobs jobs whose
 * documents take at most max_bytes together (0: no byte bound), or NULL;
 * jobs_free frees it and every entry (none may be held), accepts NULL. */
jobs_registry *jobs_create(int max_jobs, size_t max_bytes);

/* jobs_doc_bytes estimates the heap a parsed document takes (jansson's
 * values, keys, strings and tables, with the allocator's overhead). */
size_t jobs_doc_bytes(const json_t *doc);

/* jobs_bytes returns the bytes charged by the jobs registered. */
size_t jobs_bytes(jobs_registry *r);
void jobs_free(jobs_registry *r);

/* jobs_name_ok checks a job name: 1..63 characters from [A-Za-z0-9._-],
 * starting with a letter or digit. Returns 0, or -1 with a message. */
int jobs_name_ok(const char *name, char *err, size_t errlen);

/* jobs_put stores doc (the reference is stolen) under name, replacing an
 * existing job. Returns 1 when created, 0 when replaced, or JOBS_FULL
 * (the registry holds max_jobs others), JOBS_NOROOM (the documents
 * would take more than max_bytes; the message names both figures) or
 * JOBS_NOMEM with a message in err (doc is then released).
 * *version gets the new entry's version (may be NULL). */
int jobs_put(jobs_registry *r, const char *name, json_t *doc, int n_layers,
             uint64_t *version, char *err, size_t errlen);

/* jobs_get returns the job named name with a reference held, or NULL;
 * jobs_release gives it back (NULL accepted). */
jobs_entry *jobs_get(jobs_registry *r, const char *name);
void jobs_release(jobs_registry *r, jobs_entry *e);

/* jobs_delete removes the job and, once no reader holds it, frees it and
 * hands the freed heap back to the system (malloc_trim: glibc would keep
 * it in its arenas); returns 0, or -1 when there is none. */
int jobs_delete(jobs_registry *r, const char *name);

/* jobs_list returns a new array [{name, version, layers, registered_at}]
 * sorted by name (caller owns it), or NULL when out of memory. */
json_t *jobs_list(jobs_registry *r);

/* jobs_count returns the number of jobs registered. */
int jobs_count(jobs_registry *r);

#endif
