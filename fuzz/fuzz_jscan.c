/* fuzz_jscan.c -- libFuzzer target: the JSON scanner and the extender's
 * ExtenderArgs reader, against jansson.
 *
 * Each input, from an exact-size copy (so that AddressSanitizer catches a
 * read past the text, the SSE2 loads included), goes three ways:
 *
 *   jscan_check        must accept exactly when json_loadb (JSON_DECODE_ANY)
 *                      does: the scanner accepts what jansson accepts. One
 *                      exception: a text holding a NUL byte, which is never
 *                      JSON and which jscan refuses, but which jansson
 *                      accepts after a number or literal ("1\0",
 *                      "[true\0]": its reader takes the NUL for the end of
 *                      its buffer);
 *   ka_read            must accept every object that json_loadb with
 *                      JSON_REJECT_DUPLICATES accepts, and accept nothing
 *                      that json_loadb refuses without that flag (it
 *                      refuses duplicates only where strata reads);
 *   when it accepts    Pod and NodeNames equal get_ci's values in jansson's
 *                      tree, Nodes.items has as many elements, and each
 *                      kept node's slim object (ka_node_json), name and raw
 *                      bytes equal what the tree gives (ka_slim);
 *   and again          with that read as prev (ka_memo), the same text and
 *                      a variant (one byte changed, or the first two nodes
 *                      swapped: a node list in another order) must read as
 *                      they read without prev: the same answer or error,
 *                      every node's fields at the same offsets.
 *
 * Any difference aborts (a finding). Seeds: fuzz/corpus/jscan/
 * (ExtenderArgs in both forms, Node objects as tests/kube_nodes.py writes
 * them, and texts at the edges of JSON).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "service/jscan.h"
#include "service/k8sargs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FINDING(...)                              \
    do {                                          \
        fprintf(stderr, "fuzz_jscan: " __VA_ARGS__); \
        fprintf(stderr, "\n");                    \
        abort();                                  \
    } while (0)

/* get_ci of service/k8s.c: exactly, else ignoring case (first in order). */
static json_t *get_ci(json_t *obj, const char *key) {
    if (!json_is_object(obj)) return NULL;
    json_t *v = json_object_get(obj, key);
    if (v) return v;
    const char *k;
    json_object_foreach(obj, k, v) {
        if (!strcasecmp(k, key)) return v;
    }
    return NULL;
}

static int same(const json_t *a, const json_t *b) {
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* Compares what ka_read kept with the tree of the same text. */
static void compare(ka_args *a, json_t *root) {
    if (!same(a->pod, get_ci(root, "Pod"))) FINDING("Pod differs");
    if (!same(a->names, get_ci(root, "NodeNames"))) FINDING("NodeNames differs");
    json_t *nodes = get_ci(root, "Nodes");
    if (a->has_nodes != (nodes != NULL)) FINDING("Nodes present: %d, tree %d", a->has_nodes,
                                                 nodes != NULL);
    if (!nodes) return;
    if (a->nodes_type != (int)json_typeof(nodes) &&
        !(json_is_number(nodes) && a->nodes_type == JSON_INTEGER))
        FINDING("Nodes type %d, tree %d", a->nodes_type, (int)json_typeof(nodes));
    if (!json_is_object(nodes)) return;
    json_t *items = get_ci(nodes, "items");
    if (a->has_items != (items != NULL)) FINDING("items present differs");
    if (!json_is_array(items)) return;
    if ((size_t)a->n != json_array_size(items)) FINDING("items: %d, tree %zu", a->n,
                                                        json_array_size(items));
    for (int i = 0; i < a->kept; i++) {
        json_t *item = json_array_get(items, (size_t)i);
        ka_node *n = &a->nodes[i];
        json_t *want = ka_slim(item);
        const json_t *got = ka_node_json(n);
        if (!got || !json_equal(want, got)) FINDING("item %d: slim object differs", i);
        const json_t *md = json_object_get(want, "metadata");
        if (!md) md = json_object_get(want, "Metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        if (name ? !n->name || strcmp(name, n->name) : n->name != NULL)
            FINDING("item %d: name differs", i);
        json_decref(want);
        json_t *raw = json_loadb(n->raw.p, n->raw.len, JSON_DECODE_ANY, NULL);
        if (!raw || !json_equal(raw, item)) FINDING("item %d: raw bytes differ", i);
        json_decref(raw);
    }
}

static size_t off(const ka_slice *sl, const char *body) {
    return sl->p ? (size_t)(sl->p - body) : (size_t)-1;
}

static int same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Reads text[size] with prev and without: they must agree. */
static void with_prev(const char *text, size_t size, const ka_args *prev) {
    ka_args a, b;
    char ea[512] = "", eb[512] = "";
    int ra = ka_read(text, size, 64, prev, &a, ea, sizeof ea);
    int rb = ka_read(text, size, 64, NULL, &b, eb, sizeof eb);
    if (ra != rb || strcmp(ea, eb)) FINDING("with prev %d (%s), without %d (%s)", ra, ea, rb, eb);
    if (ra == KA_OK) {
        if (a.n != b.n || a.kept != b.kept) FINDING("with prev %d/%d nodes, without %d/%d",
                                                    a.n, a.kept, b.n, b.kept);
        for (int i = 0; i < a.kept; i++) {
            const ka_node *x = &a.nodes[i], *y = &b.nodes[i];
            if (off(&x->raw, text) != off(&y->raw, text) || x->raw.len != y->raw.len ||
                x->is_object != y->is_object || x->md_exact != y->md_exact ||
                x->has_md != y->has_md || x->has_status != y->has_status ||
                off(&x->labels, text) != off(&y->labels, text) ||
                x->labels.len != y->labels.len ||
                off(&x->annotations, text) != off(&y->annotations, text) ||
                x->annotations.len != y->annotations.len ||
                off(&x->allocatable, text) != off(&y->allocatable, text) ||
                x->allocatable.len != y->allocatable.len || !same_str(x->name, y->name) ||
                !same_str(x->rv, y->rv))
                FINDING("item %d: with prev, another read", i);
        }
    }
    ka_free(&a);
    ka_free(&b);
}

static void no_release(void *ud) { (void)ud; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    jscan s;
    int ours = jscan_check(&s, text, size) == 0;
    json_error_t je;
    json_t *any = json_loadb(text, size, JSON_DECODE_ANY, &je);
    int nul = size && memchr(text, '\0', size) != NULL;
    if (nul && ours) FINDING("jscan accepts a NUL byte");
    if (!nul && ours != (any != NULL))
        FINDING("jscan %s (%s), jansson %s (%s)", ours ? "accepts" : "refuses", s.err,
                any ? "accepts" : "refuses", any ? "" : je.text);
    if (!ours && !s.err[0]) FINDING("refused without a message");
    json_decref(any);

    ka_args a;
    char err[512] = "";
    int rc = ka_read(text, size, 64, NULL, &a, err, sizeof err);
    json_t *strict = json_loadb(text, size, JSON_REJECT_DUPLICATES, &je);
    json_t *loose = json_loadb(text, size, 0, &je);
    if (rc != KA_OK && rc != KA_BAD) FINDING("ka_read returned %d (%s)", rc, err);
    if (rc != KA_OK && !err[0]) FINDING("ka_read refused without a message");
    if (!nul && json_is_object(strict) && rc != KA_OK) FINDING("ka_read refuses an object: %s", err);
    if (rc == KA_OK && !json_is_object(loose)) FINDING("ka_read accepts what jansson refuses");
    if (rc == KA_OK) compare(&a, loose);
    if (rc == KA_OK && a.kept > 0) {
        ka_memo *m = ka_memo_create();
        if (m && ka_memo_set(m, &a, no_release, NULL) == 0) {
            const ka_args *prev = ka_memo_get(m);
            with_prev(text, size, prev);
            char *v = malloc(size);
            if (v) {
                /* one byte changed, at a place and to a value the input picks */
                memcpy(v, text, size);
                size_t at = ((size_t)data[0] * 131 + data[size - 1]) % size;
                v[at] = (char)(v[at] ^ (data[size / 2] | 1));
                with_prev(v, size, prev);
                /* the first two nodes swapped: ...[A,B... -> ...[B,A... */
                const ka_node *n0 = &prev->nodes[0], *n1 = prev->kept > 1 ? &prev->nodes[1] : NULL;
                if (n1 && n1->raw.p == n0->raw.p + n0->raw.len + 1) {
                    size_t at0 = (size_t)(n0->raw.p - text);
                    memcpy(v, text, size);
                    memcpy(v + at0, n1->raw.p, n1->raw.len);
                    v[at0 + n1->raw.len] = ',';
                    memcpy(v + at0 + n1->raw.len + 1, n0->raw.p, n0->raw.len);
                    with_prev(v, size, prev);
                }
                free(v);
            }
            ka_memo_put(m, prev);
        }
        ka_memo_free(m);
    }
    ka_free(&a);
    json_decref(strict);
    json_decref(loose);
    free(text);
    return 0;
}
