/* k8sargs.h -- kube-scheduler's ExtenderArgs, read without building it.
 *
 * A filter or prioritize call carries {"Pod": {...}, "Nodes": {"items":
 * [Node, ...]}, "NodeNames": [...]}; in the Nodes form, 5,000 Node objects
 * are ~74 MB, mostly status.images, metadata.managedFields and conditions,
 * none of which strata reads. ka_read walks the body with jscan
 * (service/jscan.h): Pod and NodeNames are handed to jansson whole; of
 * each Node object only the raw bytes of the parts strata reads are kept
 * (metadata.name and resourceVersion, decoded; metadata.labels and
 * annotations and status.allocatable as slices of the body), together with
 * the slice of the whole object, which a filter answer passes back as it
 * came. Everything else is validated and skipped.
 *
 * Keys are looked up as the handlers looked them up in the jansson tree
 * (get_ci in service/k8s.c: Pod, Nodes, NodeNames, items and metadata
 * exactly, else ignoring case; the rest exactly), so that a Node's slim
 * object (ka_node_json) answers every lookup of derive_node and
 * imp_node_read as the whole object did. The body is refused as jansson
 * refused it: malformed JSON anywhere, with its line and column; a
 * duplicate key in an object strata reads (the top level, Nodes, each
 * Node, its metadata and status, labels, annotations, allocatable, and
 * within Pod and NodeNames). A duplicate inside a part strata skips
 * (managedFields, images, spec...) is not looked for: its value is never
 * read.
 *
 * kube-scheduler sends the same Node objects call after call, and a node's
 * bytes change only when the node does (its resourceVersion with them).
 * Given the read of an earlier body (prev, kept alive with its body by a
 * ka_memo), ka_read matches each Node object byte for byte against the
 * earlier body's node of the same name (found by its metadata.name at the
 * head of the object, as Go writes it) and, when they are equal, takes that
 * read with its slices moved to the new bytes instead of scanning them
 * again: a JSON value's validity and its duplicate keys do not depend on
 * what surrounds it, so the result, errors included, is that of a full
 * read. memcmp reads the two copies at memory speed, where scanning and
 * walking a 15 KB Node costs about twice as much.
 */
#ifndef STRATA_SERVICE_K8SARGS_H
#define STRATA_SERVICE_K8SARGS_H

#include <stddef.h>

#include <jansson.h>

/* A slice of the body: p NULL when absent. */
typedef struct {
    const char *p;
    size_t len;
} ka_slice;

/* What strata reads of one Node object. */
typedef struct {
    ka_slice raw;          /* the whole object (any JSON value) as sent */
    int is_object;         /* 1 when raw is an object */
    int md_exact;          /* metadata came under "metadata" (1) or another case (0) */
    int has_md;            /* 1 when the node has a metadata object */
    const char *name;      /* metadata.name when a string (decoded), else NULL */
    const char *rv;        /* metadata.resourceVersion when a string, else NULL */
    ka_slice labels, annotations; /* metadata.labels, .annotations (any value) */
    int has_status;        /* 1 when "status" is an object */
    ka_slice allocatable;  /* status.allocatable (any value) */
    json_t *slim;          /* ka_node_json's answer, kept */
    size_t name_at, rv_at; /* internal: offsets + 1 of name and rv in the arena, 0 for none */
} ka_node;

/* The ExtenderArgs of one call. Ownership: everything here belongs to the
 * ka_args (ka_free); slices point into the body, which must outlive it. */
typedef struct {
    json_t *pod;           /* Pod (any value), NULL when absent */
    json_t *names;         /* NodeNames (any value), NULL when absent */
    int has_nodes;         /* Nodes is present */
    int nodes_type;        /* json_type of Nodes when present */
    json_t *nodes_value;   /* Nodes when it is neither an object nor null (messages) */
    int has_items;         /* Nodes.items is present */
    int items_type;        /* its json_type */
    json_t *items_value;   /* items when neither an array nor null (messages) */
    int n;                 /* elements of Nodes.items */
    int kept;              /* of which the first kept read (at most max_items) */
    ka_node *nodes;        /* [kept] */
    char *arena;           /* the decoded names and resourceVersions */
    int reused;            /* of the kept nodes, those matched to prev's bytes */
    json_t *index;         /* ka_memo_set's: metadata.name -> index in nodes, or NULL */
} ka_args;

/* Return codes of ka_read. */
enum { KA_OK = 0, KA_BAD = -1, KA_NOMEM = -2 };

/* ka_read reads body[len] into *a; of Nodes.items, the first max_items
 * elements are kept, the rest only validated and counted. prev is NULL, or
 * an earlier read whose body is still alive (ka_memo_get): a Node object
 * whose bytes equal those of prev's node of the same name is taken from
 * prev (a->reused counts them). Returns KA_OK; KA_BAD with err naming
 * the line and column of malformed JSON or a duplicate key ("malformed
 * JSON at line 3, column 9: ..."), or saying that the body is not an
 * object; KA_NOMEM. *a is always left for ka_free. */
int ka_read(const char *body, size_t len, int max_items, const ka_args *prev, ka_args *a,
            char *err, size_t errlen);

/* ka_node_json returns the node as a Node object holding only what strata
 * reads: {"metadata": {name, resourceVersion, labels, annotations},
 * "status": {"allocatable": ...}} (keys present as in the body). Owned by
 * the node (built once); NULL when out of memory. */
const json_t *ka_node_json(ka_node *n);

/* ka_get_ci looks key up in obj as Go's encoding/json does: exactly,
 * else ignoring ASCII case (whatever the locale). Borrowed reference, or
 * NULL (obj not an object, or no such key). */
json_t *ka_get_ci(const json_t *obj, const char *key);

/* ka_slim makes the same object of a whole Node object in a jansson tree:
 * what tests and fuzz/fuzz_jscan.c compare ka_node_json with. New
 * reference, or NULL. */
json_t *ka_slim(const json_t *node);

void ka_free(ka_args *a);

/* ---- the last body, kept ------------------------------------------------------------- */

/* A ka_memo holds the read of the last Nodes-form body together with that
 * body, for the next call's ka_read. The body's buffer belongs to whoever
 * received it (the server); the memo calls release(ud) once the read is
 * replaced and no call reads it any more. Thread-safe: any number of calls
 * read the held body while another replaces it. */
typedef struct ka_memo ka_memo;

/* ka_memo_create returns an empty memo, or NULL; ka_memo_free accepts NULL
 * and releases the body held (no call may be reading it). */
ka_memo *ka_memo_create(void);
void ka_memo_free(ka_memo *m);

/* ka_memo_get returns the held read with a reference (give it back with
 * ka_memo_put), or NULL when there is none (or m is NULL). */
const ka_args *ka_memo_get(ka_memo *m);
void ka_memo_put(ka_memo *m, const ka_args *held);

/* ka_memo_set makes *a (a successful read whose slices point into a body
 * that stays valid until release(ud)) the held read: *a is moved (left
 * empty), its Pod and NodeNames freed, its nodes indexed by name. The read
 * held before is released once unused. Returns 0, or -1 when out of memory
 * (then *a is left as it was and release(ud) is called at once). */
int ka_memo_set(ka_memo *m, ka_args *a, void (*release)(void *ud), void *ud);

/* The nodes ka_read took from a held read, and those it read in full,
 * over every call that used the memo (for /metrics). */
void ka_memo_counts(ka_memo *m, unsigned long *reused, unsigned long *read);
void ka_memo_count(ka_memo *m, const ka_args *a);

#endif
