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
 *                      bytes equal what the tree gives (ka_slim).
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
    int rc = ka_read(text, size, 64, &a, err, sizeof err);
    json_t *strict = json_loadb(text, size, JSON_REJECT_DUPLICATES, &je);
    json_t *loose = json_loadb(text, size, 0, &je);
    if (rc != KA_OK && rc != KA_BAD) FINDING("ka_read returned %d (%s)", rc, err);
    if (rc != KA_OK && !err[0]) FINDING("ka_read refused without a message");
    if (!nul && json_is_object(strict) && rc != KA_OK) FINDING("ka_read refuses an object: %s", err);
    if (rc == KA_OK && !json_is_object(loose)) FINDING("ka_read accepts what jansson refuses");
    if (rc == KA_OK) compare(&a, loose);
    ka_free(&a);
    json_decref(strict);
    json_decref(loose);
    free(text);
    return 0;
}
