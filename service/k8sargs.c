/* k8sargs.c -- kube-scheduler's ExtenderArgs, read without building it
 * (see k8sargs.h).
 *
 * One pass of jscan over the body: the top-level object, Nodes, its items
 * and, in each Node, metadata and status are walked member by member, each
 * with a jscan_keys set for duplicates; the values strata reads (Pod,
 * NodeNames, name, resourceVersion, labels, annotations, allocatable) are
 * validated in full, and any object or array among them goes through
 * json_loadb with JSON_REJECT_DUPLICATES too, so that the parts strata
 * reads are refused exactly as jansson refused the whole body. The rest
 * is skipped. A Node whose bytes are those of a node of the previous body
 * (ka_memo) is not walked: its read is copied from there (take_prev).
 */
#include "service/k8sargs.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rcslot.h"
#include "service/jscan.h"

/* The levels of objects walked, each with its set of keys. */
enum { KEYS_TOP, KEYS_NODES, KEYS_ITEM, KEYS_META, KEYS_FLAT, KEYS_N };

/* The reader's state across one body. */
typedef struct {
    jscan s;
    jscan_keys keys[KEYS_N]; /* one per walked level */
    char *arena;          /* decoded strings, at offsets (grows) */
    size_t used, room;
    int max_items;
    int nomem;
    const ka_args *prev;  /* an earlier read to take unchanged nodes from, or NULL */
    int prev_next;        /* the prev node after the last one taken: tried first */
    int reused;           /* nodes taken from prev */
    int misses;           /* nodes in a row that matched no node of prev */
} reader;

/* What one Nodes (or items) value held. */
typedef struct {
    int present;
    int type;             /* json_type */
    json_t *value;        /* when neither object/array nor null */
    int has_items, items_type;
    json_t *items_value;
    int n, cap;
    ka_node *nodes;
} nodes_read;

static void nodes_clear(nodes_read *r) {
    json_decref(r->value);
    json_decref(r->items_value);
    for (int i = 0; i < r->n && i < r->cap; i++) json_decref(r->nodes[i].slim);
    free(r->nodes);
    memset(r, 0, sizeof *r);
}

static int nomem(reader *r) {
    r->nomem = 1;
    return jscan_fail(&r->s, (size_t)(r->s.p - r->s.base), "out of memory");
}

/* The json_type of the value whose first byte is c. */
static int type_of(int c) {
    switch (c) {
    case '{': return JSON_OBJECT;
    case '[': return JSON_ARRAY;
    case '"': return JSON_STRING;
    case 't': return JSON_TRUE;
    case 'f': return JSON_FALSE;
    case 'n': return JSON_NULL;
    default: return JSON_INTEGER;
    }
}

/* Parses the value at the cursor with jansson (duplicates refused): the
 * value, or NULL with the error set. The cursor moves past it. */
static json_t *load_value(reader *r) {
    jscan *s = &r->s;
    jscan_peek(s);
    const char *start = s->p;
    if (jscan_skip(s)) return NULL; /* the syntax first, with jscan's positions */
    json_error_t je;
    json_t *v = json_loadb(start, (size_t)(s->p - start), JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
                           &je);
    if (!v) {
        size_t at = (size_t)(start - s->base) + (je.position > 0 ? (size_t)je.position - 1 : 0);
        if (json_error_code(&je) == json_error_out_of_memory) nomem(r);
        else jscan_fail(s, at, "%s", je.text);
    }
    return v;
}

/* Validates the value at the cursor, objects and arrays with their
 * duplicates; its slice into *out (when out). 0, or -1. */
static int take_value(reader *r, ka_slice *out) {
    jscan *s = &r->s;
    int c = jscan_peek(s);
    const char *start = s->p;
    if (c == '{' || c == '[') {
        json_t *v = load_value(r);
        if (!v) return -1;
        json_decref(v);
    } else if (jscan_skip(s)) {
        return -1;
    }
    if (out) {
        out->p = start;
        out->len = (size_t)(s->p - start);
    }
    return 0;
}

/* Fails on a duplicate key k, naming it (decoded, cut to 60 bytes). */
static int duplicate(reader *r, const jscan_str *k) {
    char name[61];
    jscan_decode(k, name, sizeof name);
    return jscan_fail(&r->s, (size_t)(k->p - 1 - r->s.base), "duplicate object key \"%s\"",
                      name);
}

/* An object whose members strata reads one by one (labels, annotations,
 * allocatable): walked with its own duplicate check, each member's value
 * validated by take_value. Any other value goes to take_value whole. */
static int take_flat(reader *r, ka_slice *out, jscan_keys *keys) {
    jscan *s = &r->s;
    if (jscan_peek(s) != '{') return take_value(r, out);
    const char *start = s->p;
    if (jscan_enter(s, '{')) return -1;
    jscan_keys_reset(keys);
    jscan_str k;
    int rc, i;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        int d = jscan_keys_add(keys, &k);
        if (d < 0) return nomem(r);
        if (d > 0) return duplicate(r, &k);
        if (jscan_peek(s) == '"' ? jscan_skip(s) : take_value(r, NULL)) return -1;
    }
    if (rc < 0) return -1;
    out->p = start;
    out->len = (size_t)(s->p - start);
    return 0;
}

/* Makes room for len + 1 more bytes in the arena: 0, or -1. */
static int arena_room(reader *r, size_t len) {
    if (r->room - r->used >= len + 1) return 0;
    size_t room = r->room ? 2 * r->room : 65536;
    while (room - r->used < len + 1) room *= 2;
    char *b = realloc(r->arena, room);
    if (!b) return nomem(r);
    r->arena = b;
    r->room = room;
    return 0;
}

/* Reads the string value at the cursor into the arena: its offset + 1, or
 * 0 when the value is no string (validated all the same); -1 on error. */
static long long take_string(reader *r) {
    jscan *s = &r->s;
    if (jscan_peek(s) != '"') return take_value(r, NULL) ? -1 : 0;
    jscan_str str;
    if (jscan_string(s, &str)) return -1;
    if (arena_room(r, str.len)) return -1; /* decoded, a string is never longer */
    size_t at = r->used;
    size_t n = jscan_decode(&str, r->arena + at, str.len + 1);
    r->used += n + 1;
    return (long long)at + 1;
}

/* Copies the NUL-terminated str into the arena: its offset + 1 (0 for
 * NULL), or -1. */
static long long arena_copy(reader *r, const char *str) {
    if (!str) return 0;
    size_t len = strlen(str);
    if (arena_room(r, len)) return -1;
    size_t at = r->used;
    memcpy(r->arena + at, str, len + 1);
    r->used += len + 1;
    return (long long)at + 1;
}

/* The keys walked at a level: a duplicate is refused. */
static int key_seen(reader *r, jscan_keys *keys, const jscan_str *k) {
    int d = jscan_keys_add(keys, k);
    if (d < 0) return nomem(r);
    if (d > 0) return duplicate(r, k);
    return 0;
}

/* metadata: name, resourceVersion, labels, annotations. */
static int read_meta(reader *r, ka_node *n) {
    jscan *s = &r->s;
    if (jscan_peek(s) != '{') return take_value(r, NULL); /* not read: no metadata */
    if (jscan_enter(s, '{')) return -1;
    n->has_md = 1;
    n->name_at = n->rv_at = 0;
    memset(&n->labels, 0, sizeof n->labels);
    memset(&n->annotations, 0, sizeof n->annotations);
    jscan_keys *keys = &r->keys[KEYS_META];
    jscan_keys_reset(keys);
    jscan_str k;
    int rc, i;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        if (key_seen(r, keys, &k)) return -1;
        long long at = 0;
        if (jscan_equals(&k, "name")) {
            if ((at = take_string(r)) < 0) return -1;
            n->name_at = (size_t)at;
        } else if (jscan_equals(&k, "resourceVersion")) {
            if ((at = take_string(r)) < 0) return -1;
            n->rv_at = (size_t)at;
        } else if (jscan_equals(&k, "labels")) {
            if (take_flat(r, &n->labels, &r->keys[KEYS_FLAT])) return -1;
        } else if (jscan_equals(&k, "annotations")) {
            if (take_flat(r, &n->annotations, &r->keys[KEYS_FLAT])) return -1;
        } else if (jscan_skip(s)) {
            return -1;
        }
    }
    return rc;
}

/* status: allocatable. */
static int read_status(reader *r, ka_node *n) {
    jscan *s = &r->s;
    if (jscan_peek(s) != '{') return jscan_skip(s);
    if (jscan_enter(s, '{')) return -1;
    n->has_status = 1;
    jscan_keys *keys = &r->keys[KEYS_META];
    jscan_keys_reset(keys);
    jscan_str k;
    int rc, i;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        if (key_seen(r, keys, &k)) return -1;
        if (jscan_equals(&k, "allocatable")) {
            if (take_flat(r, &n->allocatable, &r->keys[KEYS_FLAT])) return -1;
        } else if (jscan_skip(s)) {
            return -1;
        }
    }
    return rc;
}

/* One element of items: what strata reads of it into *n. */
static int read_node(reader *r, ka_node *n) {
    jscan *s = &r->s;
    memset(n, 0, sizeof *n);
    int c = jscan_peek(s);
    n->raw.p = s->p;
    if (c != '{') {
        if (jscan_skip(s)) return -1;
        n->raw.len = (size_t)(s->p - n->raw.p);
        return 0;
    }
    n->is_object = 1;
    if (jscan_enter(s, '{')) return -1;
    /* metadata exactly, else the first key equal to it ignoring case */
    ka_node ci;
    int have_exact = 0, have_ci = 0;
    memset(&ci, 0, sizeof ci);
    jscan_keys *keys = &r->keys[KEYS_ITEM];
    jscan_keys_reset(keys);
    jscan_str k;
    int rc, i;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        if (key_seen(r, keys, &k)) return -1;
        if (jscan_equals(&k, "metadata")) {
            have_exact = 1;
            if (read_meta(r, n)) return -1;
        } else if (!have_exact && !have_ci && jscan_iequals(&k, "metadata")) {
            have_ci = 1;
            if (read_meta(r, &ci)) return -1;
        } else if (jscan_equals(&k, "status")) {
            if (read_status(r, n)) return -1;
        } else if (jscan_skip(s)) {
            return -1;
        }
    }
    if (rc < 0) return -1;
    if (have_exact) {
        n->md_exact = 1;
    } else if (have_ci) {
        n->has_md = ci.has_md;
        n->labels = ci.labels;
        n->annotations = ci.annotations;
        n->name_at = ci.name_at;
        n->rv_at = ci.rv_at;
    }
    n->raw.len = (size_t)(s->p - n->raw.p);
    return 0;
}

/* Nodes in a row matched to no node of prev after which a read stops
 * comparing (take_prev). */
#define PREV_GIVE_UP 64

/* Says whether node o of prev (an object) stands byte for byte at the
 * cursor. */
static int same_bytes(const jscan *s, const ka_node *o) {
    return o->is_object && (size_t)(s->end - s->p) >= o->raw.len &&
           s->p[o->raw.len - 1] == o->raw.p[o->raw.len - 1] &&
           !memcmp(s->p, o->raw.p, o->raw.len);
}

/* The name a Node object at the cursor gives in its first bytes
 * ("metadata":{"name":"...", as Go and the Kubernetes clients write it),
 * or NULL. Only a hint of which node of prev to compare with: the bytes
 * decide. */
static const char *name_hint(const jscan *s, size_t *len) {
    static const char key[] = "\"metadata\":{\"name\":\"";
    size_t look = (size_t)(s->end - s->p) < 512 ? (size_t)(s->end - s->p) : 512;
    const char *k = memmem(s->p, look, key, sizeof key - 1);
    if (!k) return NULL;
    const char *name = k + sizeof key - 1;
    const char *q = memchr(name, '"', (size_t)(s->end - name) < 512 ? (size_t)(s->end - name) : 512);
    if (!q || memchr(name, '\\', (size_t)(q - name))) return NULL;
    *len = (size_t)(q - name);
    return name;
}

/* Takes the Node object at the cursor from prev when its bytes are those
 * of prev's node at r->prev_next (kube-scheduler keeps its order between
 * calls, mostly) or of prev's node of the same name: *n becomes that node's
 * read with its slices moved to the new bytes, and the cursor moves past
 * it. Returns 1 when taken, 0 when not (nothing moved), -1 out of memory. */
static int take_prev(reader *r, ka_node *n) {
    const ka_args *pv = r->prev;
    jscan *s = &r->s;
    if (!pv || jscan_peek(s) != '{') return 0;
    const ka_node *o = NULL;
    if (r->prev_next < pv->kept && same_bytes(s, &pv->nodes[r->prev_next])) {
        o = &pv->nodes[r->prev_next];
    } else if (pv->index) {
        size_t len = 0;
        const char *name = name_hint(s, &len);
        json_t *at = name ? json_object_getn(pv->index, name, len) : NULL;
        json_int_t j = json_integer_value(at);
        if (at && j >= 0 && j < pv->kept && j != r->prev_next && same_bytes(s, &pv->nodes[j]))
            o = &pv->nodes[j]; /* (prev_next itself was compared just above) */
    }
    if (!o) {
        /* A body whose nodes all changed (a cluster-wide update) would pay
         * a failed comparison per node on top of the full read: past
         * PREV_GIVE_UP misses in a row, the rest of the body is read in
         * full. */
        if (++r->misses >= PREV_GIVE_UP) r->prev = NULL;
        return 0;
    }
    r->misses = 0;
    long long name_at = arena_copy(r, o->name), rv_at = name_at < 0 ? -1 : arena_copy(r, o->rv);
    if (rv_at < 0) return -1;
    *n = *o;
    n->slim = NULL;
    n->name = n->rv = NULL;
    n->name_at = (size_t)name_at;
    n->rv_at = (size_t)rv_at;
    ka_slice *sl[] = {&n->raw, &n->labels, &n->annotations, &n->allocatable};
    for (size_t i = 0; i < sizeof sl / sizeof *sl; i++)
        if (sl[i]->p) sl[i]->p = s->p + (sl[i]->p - o->raw.p);
    s->p += o->raw.len;
    r->prev_next = (int)(o - pv->nodes) + 1;
    r->reused++;
    return 1;
}

/* After node n was read in full: the next node is first compared with the
 * one after n's namesake in prev (a node changed, or kube-scheduler began
 * its list at another node: the order holds from there). */
static void resync(reader *r, const ka_node *n) {
    if (!r->prev || !r->prev->index || !n->name_at) return;
    json_t *at = json_object_get(r->prev->index, r->arena + n->name_at - 1);
    if (at) r->prev_next = (int)json_integer_value(at) + 1;
}

/* Nodes.items: an array of Node objects, else any value. */
static int read_items(reader *r, nodes_read *out) {
    jscan *s = &r->s;
    int c = jscan_peek(s);
    out->has_items = 1;
    out->items_type = type_of(c);
    if (c != '[') {
        if (c == 'n') return jscan_skip(s);
        return (out->items_value = load_value(r)) ? 0 : -1;
    }
    if (jscan_enter(s, '[')) return -1;
    int rc, i;
    for (i = 0; (rc = jscan_element(s, i)) > 0; i++) {
        if (i >= r->max_items) { /* counted and validated, not kept */
            if (jscan_skip(s)) return -1;
            continue;
        }
        if (i >= out->cap) {
            int cap = out->cap ? 2 * out->cap : 64;
            if (cap > r->max_items) cap = r->max_items;
            ka_node *nodes = realloc(out->nodes, (size_t)cap * sizeof *nodes);
            if (!nodes) return nomem(r);
            out->nodes = nodes;
            out->cap = cap;
        }
        out->n = i; /* the nodes before this one are complete */
        int took = take_prev(r, &out->nodes[i]);
        if (took < 0 || (!took && read_node(r, &out->nodes[i]))) return -1;
        if (!took) resync(r, &out->nodes[i]);
    }
    if (rc < 0) return -1;
    out->n = i;
    return 0;
}

/* Nodes: a NodeList object (items read), else any value. */
static int read_nodes(reader *r, nodes_read *out) {
    jscan *s = &r->s;
    int c = jscan_peek(s);
    out->present = 1;
    out->type = type_of(c);
    if (c != '{') {
        if (c == 'n') return jscan_skip(s);
        return (out->value = load_value(r)) ? 0 : -1;
    }
    if (jscan_enter(s, '{')) return -1;
    nodes_read ci;
    memset(&ci, 0, sizeof ci);
    int have_exact = 0;
    jscan_keys *keys = &r->keys[KEYS_NODES];
    jscan_keys_reset(keys);
    jscan_str k;
    int rc, i;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        if (key_seen(r, keys, &k)) goto fail;
        if (jscan_equals(&k, "items")) {
            have_exact = 1;
            if (read_items(r, out)) goto fail;
        } else if (!have_exact && !ci.has_items && jscan_iequals(&k, "items")) {
            if (read_items(r, &ci)) goto fail;
        } else if (jscan_skip(s)) {
            goto fail;
        }
    }
    if (rc < 0) goto fail;
    if (!have_exact && ci.has_items) {
        out->has_items = 1;
        out->items_type = ci.items_type;
        out->items_value = ci.items_value;
        out->n = ci.n;
        out->cap = ci.cap;
        out->nodes = ci.nodes;
        memset(&ci, 0, sizeof ci);
    }
    nodes_clear(&ci);
    return 0;
fail:
    nodes_clear(&ci);
    return -1;
}

static void set_err(reader *r, char *err, size_t errlen) {
    jscan_message(&r->s, err, errlen);
}

int ka_read(const char *body, size_t len, int max_items, const ka_args *prev, ka_args *a,
            char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    if (len == 0) {
        snprintf(err, errlen, "empty body: expected a JSON object");
        return KA_BAD;
    }
    reader r;
    memset(&r, 0, sizeof r);
    r.max_items = max_items > 0 ? max_items : 1;
    r.prev = prev;
    jscan *s = &r.s;
    jscan_init(s, body, len);
    int c = jscan_peek(s);
    if (c != '{') {
        if (c == '[' && jscan_check(s, body, len) == 0) {
            snprintf(err, errlen, "the body must be a JSON object, got an array");
            return KA_BAD;
        }
        if (c != '[') jscan_fail(s, (size_t)(s->p - body), "'[' or '{' expected");
        set_err(&r, err, errlen);
        return KA_BAD;
    }
    json_t *pod_ci = NULL, *names_ci = NULL;
    int pod_exact = 0, names_exact = 0;
    nodes_read nodes, nodes_ci;
    memset(&nodes, 0, sizeof nodes);
    memset(&nodes_ci, 0, sizeof nodes_ci);
    int rc = -1, i;
    jscan_str k;
    if (jscan_enter(s, '{')) goto done;
    for (i = 0; (rc = jscan_member(s, &k, i)) > 0; i++) {
        rc = -1;
        if (key_seen(&r, &r.keys[KEYS_TOP], &k)) goto done;
        if (jscan_equals(&k, "Pod")) {
            pod_exact = 1;
            if (!(a->pod = load_value(&r))) goto done;
        } else if (!pod_exact && !pod_ci && jscan_iequals(&k, "Pod")) {
            if (!(pod_ci = load_value(&r))) goto done;
        } else if (jscan_equals(&k, "NodeNames")) {
            names_exact = 1;
            if (!(a->names = load_value(&r))) goto done;
        } else if (!names_exact && !names_ci && jscan_iequals(&k, "NodeNames")) {
            if (!(names_ci = load_value(&r))) goto done;
        } else if (jscan_equals(&k, "Nodes")) {
            if (read_nodes(&r, &nodes)) goto done;
        } else if (!nodes.present && !nodes_ci.present && jscan_iequals(&k, "Nodes")) {
            if (read_nodes(&r, &nodes_ci)) goto done;
        } else if (jscan_skip(s)) {
            goto done;
        }
    }
    if (rc == 0) rc = jscan_end(s);
done:
    if (rc < 0) {
        set_err(&r, err, errlen);
        if (r.nomem) snprintf(err, errlen, "out of memory");
        json_decref(pod_ci);
        json_decref(names_ci);
        nodes_clear(&nodes);
        nodes_clear(&nodes_ci);
        for (int j = 0; j < KEYS_N; j++) jscan_keys_free(&r.keys[j]);
        free(r.arena);
        return r.nomem ? KA_NOMEM : KA_BAD;
    }
    for (int j = 0; j < KEYS_N; j++) jscan_keys_free(&r.keys[j]);
    if (!pod_exact) a->pod = pod_ci, pod_ci = NULL;
    if (!names_exact) a->names = names_ci, names_ci = NULL;
    json_decref(pod_ci);
    json_decref(names_ci);
    nodes_read *use = nodes.present ? &nodes : &nodes_ci;
    if (use->present) {
        a->has_nodes = 1;
        a->nodes_type = use->type;
        a->nodes_value = use->value;
        a->has_items = use->has_items;
        a->items_type = use->items_type;
        a->items_value = use->items_value;
        a->n = use->n;
        a->kept = use->n < use->cap ? use->n : use->cap;
        a->nodes = use->nodes;
        a->reused = r.reused;
        memset(use, 0, sizeof *use);
    }
    a->arena = r.arena; /* complete: the nodes' strings can point into it */
    for (int j = 0; j < a->kept; j++) {
        ka_node *n = &a->nodes[j];
        n->name = n->name_at ? a->arena + n->name_at - 1 : NULL;
        n->rv = n->rv_at ? a->arena + n->rv_at - 1 : NULL;
    }
    nodes_clear(&nodes);
    nodes_clear(&nodes_ci);
    return KA_OK;
}

/* A value of the body parsed by jansson: validated before, so only memory
 * can fail. */
static json_t *load_slice(const ka_slice *sl) {
    return json_loadb(sl->p, sl->len, JSON_DECODE_ANY, NULL);
}

const json_t *ka_node_json(ka_node *n) {
    if (n->slim) return n->slim;
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = 1;
    if (n->has_md) {
        json_t *md = json_object();
        ok = md && !json_object_set_new(o, n->md_exact ? "metadata" : "Metadata", md);
        if (ok && n->name) ok = !json_object_set_new(md, "name", json_string(n->name));
        if (ok && n->rv) ok = !json_object_set_new(md, "resourceVersion", json_string(n->rv));
        if (ok && n->labels.p) ok = !json_object_set_new(md, "labels", load_slice(&n->labels));
        if (ok && n->annotations.p)
            ok = !json_object_set_new(md, "annotations", load_slice(&n->annotations));
    }
    if (ok && n->has_status) {
        json_t *st = json_object();
        ok = st && !json_object_set_new(o, "status", st);
        if (ok && n->allocatable.p)
            ok = !json_object_set_new(st, "allocatable", load_slice(&n->allocatable));
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    n->slim = o;
    return o;
}

json_t *ka_get_ci(const json_t *obj, const char *key) {
    if (!json_is_object(obj)) return NULL;
    json_t *v = json_object_get(obj, key);
    if (v) return v;
    const char *k;
    json_object_foreach((json_t *)obj, k, v) {
        size_t i;
        for (i = 0; k[i] && key[i]; i++) {
            unsigned char a = (unsigned char)k[i], b = (unsigned char)key[i];
            if (a >= 'A' && a <= 'Z') a = (unsigned char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = (unsigned char)(b - 'A' + 'a');
            if (a != b) break;
        }
        if (!k[i] && !key[i]) return v;
    }
    return NULL;
}

json_t *ka_slim(const json_t *node) {
    json_t *o = json_object();
    if (!o || !json_is_object(node)) return o;
    const json_t *md = ka_get_ci(node, "metadata");
    if (json_is_object(md)) {
        json_t *m = json_object();
        json_object_set_new(o, json_object_get(node, "metadata") ? "metadata" : "Metadata", m);
        const char *keys[] = {"name", "resourceVersion", "labels", "annotations"};
        for (int i = 0; i < 4; i++) {
            json_t *v = json_object_get(md, keys[i]);
            if (v && (i >= 2 || json_is_string(v))) json_object_set(m, keys[i], v);
        }
    }
    const json_t *st = json_object_get(node, "status");
    if (json_is_object(st)) {
        json_t *so = json_object();
        json_object_set_new(o, "status", so);
        json_t *al = json_object_get(st, "allocatable");
        if (al) json_object_set(so, "allocatable", al);
    }
    return o;
}

void ka_free(ka_args *a) {
    if (!a) return;
    json_decref(a->pod);
    json_decref(a->names);
    json_decref(a->nodes_value);
    json_decref(a->items_value);
    for (int i = 0; a->nodes && i < a->kept; i++) json_decref(a->nodes[i].slim);
    free(a->nodes);
    free(a->arena);
    json_decref(a->index);
    memset(a, 0, sizeof *a);
}

/* ---- the last body, kept ------------------------------------------------------------- */

/* A read with the body it points into; a (first) is what callers see. */
typedef struct {
    ka_args a;
    rcslot_ref ref;            /* the memo's slot's */
    void (*release)(void *ud); /* gives the body back */
    void *ud;
} held;

struct ka_memo {
    rcslot *slot;              /* of held: the read ka_memo_get hands out */
    atomic_ulong reused, read; /* ka_memo_count's sums */
};

static void held_free(rcslot_ref *r) {
    held *h = RCSLOT_ENTRY(r, held, ref);
    ka_free(&h->a);
    h->release(h->ud);
    free(h);
}

ka_memo *ka_memo_create(void) {
    ka_memo *m = calloc(1, sizeof *m);
    if (m && !(m->slot = rcslot_create(held_free))) {
        free(m);
        return NULL;
    }
    return m;
}

void ka_memo_free(ka_memo *m) {
    if (!m) return;
    rcslot_free(m->slot);
    free(m);
}

const ka_args *ka_memo_get(ka_memo *m) {
    if (!m) return NULL;
    held *h = RCSLOT_ENTRY(rcslot_acquire(m->slot), held, ref);
    return h ? &h->a : NULL;
}

void ka_memo_put(ka_memo *m, const ka_args *a) {
    /* a is the first member of its held */
    if (m && a) rcslot_release(m->slot, &((held *)(void *)a)->ref);
}

int ka_memo_set(ka_memo *m, ka_args *a, void (*release)(void *ud), void *ud) {
    held *h = m ? calloc(1, sizeof *h) : NULL;
    json_t *index = h ? json_object() : NULL;
    for (int i = 0; index && i < a->kept; i++)
        if (a->nodes[i].name &&
            json_object_set_new_nocheck(index, a->nodes[i].name, json_integer(i)))
            json_decref(index), index = NULL;
    if (!index) {
        free(h);
        release(ud);
        return -1;
    }
    h->a = *a;
    memset(a, 0, sizeof *a);
    h->a.index = index;
    json_decref(h->a.pod), h->a.pod = NULL; /* only the nodes are read again */
    json_decref(h->a.names), h->a.names = NULL;
    for (int i = 0; i < h->a.kept; i++) json_decref(h->a.nodes[i].slim), h->a.nodes[i].slim = NULL;
    h->release = release;
    h->ud = ud;
    rcslot_set(m->slot, &h->ref);
    return 0;
}

void ka_memo_count(ka_memo *m, const ka_args *a) {
    if (!m) return;
    atomic_fetch_add(&m->reused, (unsigned long)a->reused);
    atomic_fetch_add(&m->read, (unsigned long)(a->kept - a->reused));
}

void ka_memo_counts(ka_memo *m, unsigned long *reused, unsigned long *read) {
    *reused = m ? atomic_load(&m->reused) : 0;
    *read = m ? atomic_load(&m->read) : 0;
}
