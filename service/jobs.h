/* jobs.h -- the jobs registered with the daemon (PUT /v1/jobs/{ns}/{name}).
 *
 * The Kubernetes extender needs, for a training pod, the layers of the job
 * it belongs to: a client registers each job under the name its pods carry
 * (the Kubeflow or Volcano job name) with a document {"cluster": ...,
 * "job": ..., "options": ...} that the API has validated. The registry
 * keeps those documents and the plan the extender fixed for each at
 * registration (see k8s.h), immutable once stored, and lets the extender hang
 * its own per-job state (the nodes it has seen, the placement it computed)
 * on an entry, guarded by the entry's mutex.
 *
 * Entries are refcounted: a reader holds one with jobs_get while it uses
 * it, so that a concurrent PUT or DELETE never frees it underneath.
 * Replacing a job (PUT again) makes a new entry with a new version and a
 * fresh extender state.
 *
 * Identity: a job is namespace/name, as Kubernetes names objects; the
 * registry's key is the string "namespace/name" (jobs_key builds it), so
 * jobs named alike in two namespaces are two jobs. service/store.h keeps
 * the registry in a file so that it outlives the process.
 *
 * Thread-safe: one mutex around the table; nothing slow happens under it.
 */
#ifndef STRATA_SERVICE_JOBS_H
#define STRATA_SERVICE_JOBS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define JOBS_NAME_MAX 64 /* names and namespaces are 1..63 characters */
#define JOBS_KEY_MAX (2 * JOBS_NAME_MAX) /* "namespace/name" */
#define JOBS_DEFAULT_NAMESPACE "default"
#define JOBS_DEFAULT_MAX 1024
#define JOBS_DEFAULT_MAX_BYTES ((size_t)64 << 20) /* 64 MiB of documents */

/* jobs_put's failures. */
#define JOBS_FULL (-1)
#define JOBS_NOMEM (-2)
#define JOBS_NOROOM (-3) /* the documents would pass max_bytes */

typedef struct jobs_entry {
    char name[JOBS_KEY_MAX]; /* the key: "namespace/name" */
    uint64_t version;     /* unique across the registry (and its state file), grows with every PUT */
    double registered_at; /* seconds since the epoch */
    json_t *doc;          /* {"cluster", "job", "options"}: read-only once stored */
    int n_layers;         /* layers of the job */
    json_t *plan;         /* the plan fixed at registration (k8s_fix_plan), read-only; or NULL */
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

/* jobs_key writes "namespace/name" into key[JOBS_KEY_MAX] (namespace NULL
 * or "": "default"); returns 0, or -1 with a message when either part is
 * not a valid name (jobs_name_ok). */
int jobs_key(char *key, const char *ns, const char *name, char *err, size_t errlen);

/* jobs_put stores doc (the reference is stolen) under name (a key), replacing an
 * existing job. Returns 1 when created, 0 when replaced, or JOBS_FULL
 * (the registry holds max_jobs others), JOBS_NOROOM (the documents
 * would take more than max_bytes; the message names both figures) or
 * JOBS_NOMEM with a message in err (doc is then released).
 * *version gets the new entry's version (may be NULL). */
int jobs_put(jobs_registry *r, const char *name, json_t *doc, int n_layers,
             uint64_t *version, char *err, size_t errlen);

/* jobs_room tells whether jobs_put of doc under key would fit: 0, or
 * JOBS_FULL / JOBS_NOROOM with jobs_put's message. */
int jobs_room(jobs_registry *r, const char *key, const json_t *doc, char *err, size_t errlen);

/* jobs_load is jobs_put with what a state file holds: the entry gets
 * version (the registry's own counter moves past it), registered_at and
 * plan (the reference is stolen, may be NULL). Same returns. */
int jobs_load(jobs_registry *r, const char *key, json_t *doc, int n_layers, json_t *plan,
              uint64_t version, double registered_at, char *err, size_t errlen);

/* jobs_keys returns a new array of the keys registered (caller owns it),
 * or NULL when out of memory. */
json_t *jobs_keys(jobs_registry *r);

/* jobs_get returns the job named name with a reference held, or NULL;
 * jobs_release gives it back (NULL accepted). */
jobs_entry *jobs_get(jobs_registry *r, const char *name);
void jobs_release(jobs_registry *r, jobs_entry *e);

/* jobs_delete removes the job and, once no reader holds it, frees it and
 * hands the freed heap back to the system (malloc_trim: glibc would keep
 * it in its arenas); returns 0, or -1 when there is none. */
int jobs_delete(jobs_registry *r, const char *name);

/* jobs_list returns a new array [{namespace, name, version, layers,
 * registered_at}] sorted by key (caller owns it), or NULL when out of memory. */
json_t *jobs_list(jobs_registry *r);

/* jobs_count returns the number of jobs registered. */
int jobs_count(jobs_registry *r);

#endif
