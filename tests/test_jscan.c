/* test_jscan.c -- the extender's Nodes form read without a whole jansson
 * tree (service/jscan.h, service/k8sargs.h).
 *
 * The scanner must accept exactly what json_loadb accepts: a table of
 * texts at the edges of JSON and of jansson's own limits (escapes,
 * surrogates, UTF-8, numbers that overflow, depth 2048, what may follow
 * the value) is checked against jansson itself and against the verdict
 * written beside each. The ExtenderArgs reader must see each Node as the
 * whole tree showed it: on the node lists of tests/kube_nodes.py (the
 * kube_nodes fixture: EKS, GKE and kubeadm nodes as the Python client
 * writes them, indented) and on a node as the bench makes them (50
 * images, conditions) with managedFields and hostile strings, each
 * node's slim object (ka_node_json) equals the one made from jansson's
 * tree (ka_slim), and its raw slice parses to the whole node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "service/jscan.h"
#include "service/k8sargs.h"
#include "tests/harness.h"

/* Checks text with jscan and with jansson: both must give want. */
static void agree(const char *text, size_t len, int want) {
    jscan s;
    int ours = jscan_check(&s, text, len) == 0;
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &je);
    int theirs = v != NULL;
    json_decref(v);
    if (ours != want || theirs != want)
        fail_msg("%.60s: jscan %s (%s), jansson %s (%s), expected %s", text,
                 ours ? "accepts" : "refuses", s.err, theirs ? "accepts" : "refuses",
                 theirs ? "" : je.text, want ? "accepted" : "refused");
}

static void test_agrees_with_jansson(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int ok;
    } cases[] = {
        {"{}", 1}, {"[]", 1}, {" [1, 2.5, -0, 1E+5, 1.5e-3, true, false, null] \n", 1},
        {"\"a\\\"]}{[b\"", 1},            /* brackets and quotes inside a string */
        {"[\"\\/\\b\\f\\n\\r\\t\\\\\"]", 1},
        {"[\"\\uD834\\uDD1E\\u00e9\"]", 1}, /* a surrogate pair, a BMP escape */
        {"[\"\xf0\x9f\x98\x80\xc3\xa9\"]", 1},
        {"[9223372036854775807, -9223372036854775808, 1e-400, 1e308]", 1},
        {"[123456789012345678901234567890.5]", 1},
        {"[17976931348623157e292]", 1},
        {"{\"a\": 1, \"a\": 2}", 1},        /* duplicates are the caller's */
        /* refused */
        {"", 0}, {"   ", 0}, {"[", 0}, {"[1,", 0}, {"{\"a\"", 0}, {"{\"a\":", 0},
        {"[1]]", 0}, {"{\"a\": 1}}", 0}, {"[1} ", 0}, {"{\"a\": 1]", 0},
        {"[1] x", 0}, {"[]\n\t,", 0},
        {"[\"a\\x\"]", 0}, {"[\"\\u12\"]", 0}, {"[\"\\u12G4\"]", 0},
        {"[\"\\u0000\"]", 0}, {"{\"\\u0000a\": 1}", 0},
        {"[\"\\ud800\"]", 0}, {"[\"\\udc00\"]", 0}, {"[\"\\ud800\\u0041\"]", 0},
        {"[\"\t\"]", 0}, {"[\"\x7f\x01\"]", 0},
        {"[\"\xc0\x80\"]", 0}, {"[\"\xed\xa0\x80\"]", 0}, {"[\"\xf4\x90\x80\x80\"]", 0},
        {"[\"\xe0\x80\x80\"]", 0}, {"[\"\xc3\"]", 0}, {"[\"\x80\"]", 0},
        {"[\"abc", 0}, {"[\"abcdefghijklmnopqrstuvwxyz0123456789", 0},
        {"[01]", 0}, {"[-01]", 0}, {"[1.]", 0}, {"[.5]", 0}, {"[+1]", 0}, {"[-]", 0},
        {"[1e]", 0}, {"[1e+]", 0}, {"[1 2]", 0}, {"[1true]", 0}, {"[true1]", 0},
        {"[tru]", 0}, {"[nul]", 0}, {"[1,]", 0}, {"[,1]", 0}, {"{\"a\":1,}", 0},
        {"{a: 1}", 0}, {"{\"a\" 1}", 0}, {"[\xef\xbb\xbf]", 0}, {"\xef\xbb\xbf[]", 0},
        {"[99999999999999999999]", 0}, {"[9223372036854775808]", 0},
        {"[-9223372036854775809]", 0}, {"[1e400]", 0}, {"[1.0e400]", 0},
        {"[-1e400]", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        agree(cases[i].text, strlen(cases[i].text), cases[i].ok);
    agree("[1]\0", 4, 0); /* a NUL after the value */
    agree("[\"a\0b\"]", 7, 0);
    /* jansson takes a NUL after a number or literal for the end of its
     * buffer and accepts "[true\0]"; a NUL is never JSON: refused */
    jscan s;
    assert_int_equal(jscan_check(&s, "[true\0]", 7), -1);
    assert_int_equal(jscan_check(&s, "1\0", 2), -1);
    /* jansson's depth: a value inside 2,047 containers is the deepest */
    size_t n = 2100;
    char *deep = malloc(2 * n + 8);
    assert_non_null(deep);
    struct {
        int levels;
        const char *inner;
        int ok;
    } d[] = {{2048, "", 1}, {2049, "", 0}, {2047, "1", 1}, {2048, "1", 0},
             {2047, "{}", 1}, {2048, "{}", 0}, {2047, "{\"a\": 1}", 0}, {2046, "{\"a\": 1}", 1}};
    for (size_t k = 0; k < sizeof d / sizeof *d; k++) {
        size_t at = 0;
        for (int i = 0; i < d[k].levels; i++) deep[at++] = '[';
        at += (size_t)sprintf(deep + at, "%s", d[k].inner);
        for (int i = 0; i < d[k].levels; i++) deep[at++] = ']';
        agree(deep, at, d[k].ok);
    }
    free(deep);
}

/* Errors name the line and column of the text at fault. */
static void test_error_position(void **state) {
    (void)state;
    const char *text = "{\"Pod\": {},\n \"NodeNames\": [\"a\" \"b\"]}";
    jscan s;
    assert_int_equal(jscan_check(&s, text, strlen(text)), -1);
    char msg[256];
    jscan_message(&s, msg, sizeof msg);
    assert_string_equal(msg, "malformed JSON at line 2, column 20: ',' or ']' expected near '\"'");
    const char *esc = "[\"ok\",\n\"\xc3\xa9\xc3\xa9\\q\"]"; /* columns count characters */
    assert_int_equal(jscan_check(&s, esc, strlen(esc)), -1);
    jscan_message(&s, msg, sizeof msg);
    assert_string_equal(msg, "malformed JSON at line 2, column 4: invalid escape in a string");
}

static void test_decode_and_keys(void **state) {
    (void)state;
    const char *text = "\"a\\u00e9\\ud83d\\ude00\\n\\/\\\"b\"";
    jscan s;
    jscan_init(&s, text, strlen(text));
    jscan_str str;
    assert_int_equal(jscan_string(&s, &str), 0);
    assert_true(str.esc);
    char buf[64];
    assert_int_equal(jscan_decode(&str, buf, sizeof buf), 11);
    assert_string_equal(buf, "a\xc3\xa9\xf0\x9f\x98\x80\n/\"b");
    assert_int_equal(jscan_decode(&str, buf, 4), 11); /* cut to fit */
    assert_string_equal(buf, "a\xc3\xa9");
    jscan_str k1 = {"Items", 5, 0}, k2 = {"\\u0069tems", 10, 1};
    assert_true(jscan_iequals(&k1, "items"));
    assert_false(jscan_equals(&k1, "items"));
    assert_true(jscan_equals(&k2, "items"));
    /* duplicates, compared decoded; past 16 keys through the hash */
    jscan_keys keys;
    memset(&keys, 0, sizeof keys);
    for (int round = 0; round < 2; round++) {
        jscan_keys_reset(&keys);
        char names[40][8];
        for (int i = 0; i < 40; i++) {
            snprintf(names[i], sizeof names[i], "k%d", i);
            jscan_str k = {names[i], strlen(names[i]), 0};
            assert_int_equal(jscan_keys_add(&keys, &k), 0);
        }
        jscan_str again = {"\\u006b7", 7, 1}; /* "k7" */
        assert_int_equal(jscan_keys_add(&keys, &again), 1);
        jscan_str last = {"k39", 3, 0};
        assert_int_equal(jscan_keys_add(&keys, &last), 1);
    }
    jscan_keys_reset(&keys);
    jscan_str a = {"a", 1, 0}, a2 = {"\\u0061", 6, 1};
    assert_int_equal(jscan_keys_add(&keys, &a2), 0);
    assert_int_equal(jscan_keys_add(&keys, &a), 1);
    jscan_keys_free(&keys);
}

/* Reads body with ka_read and checks every node against jansson's tree of
 * the same body: name, resourceVersion, slim object, raw bytes. */
static void same_nodes(const char *body, size_t len, int want_n) {
    ka_args a;
    char err[512];
    int rc = ka_read(body, len, 16384, NULL, &a, err, sizeof err);
    if (rc != KA_OK) fail_msg("ka_read: %s", err);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) fail_msg("jansson: %s", je.text);
    const json_t *items = json_object_get(json_object_get(root, "Nodes"), "items");
    assert_int_equal(a.n, (int)json_array_size(items));
    assert_int_equal(a.n, want_n);
    assert_int_equal(a.kept, a.n);
    assert_true(json_equal(a.pod, json_object_get(root, "Pod")));
    for (int i = 0; i < a.n; i++) {
        const json_t *item = json_array_get(items, (size_t)i);
        ka_node *n = &a.nodes[i];
        json_t *want = ka_slim(item);
        const json_t *got = ka_node_json(n);
        if (!json_equal(want, got)) {
            char *w = json_dumps(want, JSON_COMPACT), *g = json_dumps(got, JSON_COMPACT);
            fail_msg("node %d: slim %s, expected %s", i, g, w);
        }
        json_t *raw = json_loadb(n->raw.p, n->raw.len, JSON_DECODE_ANY, NULL);
        assert_true(json_equal(raw, item));
        json_decref(raw);
        /* metadata as get_ci finds it: exactly, else ignoring case */
        const json_t *md = json_object_get(want, "metadata");
        if (!md) md = json_object_get(want, "Metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        if (name) assert_string_equal(n->name, name);
        else assert_null(n->name);
        if (rv) assert_string_equal(n->rv, rv);
        else assert_null(n->rv);
        json_decref(want);
    }
    json_decref(root);
    ka_free(&a);
}

/* A Node as bench/bench_extender.py makes them, plus managedFields, and
 * strings that a bracket-counting reader would trip on. */
static json_t *big_node(int i) {
    json_t *images = json_array();
    for (int k = 0; k < 50; k++) {
        char a[200], b[200];
        snprintf(a, sizeof a, "123456789012.dkr.ecr.us-east-1.amazonaws.com/team-%02d/svc-%02d"
                 "@sha256:%064x", k % 7, k, k * 7919);
        snprintf(b, sizeof b, "123456789012.dkr.ecr.us-east-1.amazonaws.com/team-%02d/svc-%02d"
                 ":v1.%d", k % 7, k, k);
        json_array_append_new(images, json_pack("{s:[s,s], s:I}", "names", a, b, "sizeBytes",
                                                (json_int_t)100000000 + k * 1234567));
    }
    char name[64], rv[32];
    snprintf(name, sizeof name, "ip-10-0-%d-%d.ec2.internal", i / 250, i % 250);
    snprintf(rv, sizeof rv, "%d", 1000 + i);
    json_t *mf = json_pack("[{s:s, s:s, s:{s:{s:{}, s:{s:{}}}}}]", "manager", "kubelet",
                           "operation", "Update", "fieldsV1", "f:status", "f:images",
                           "f:conditions", "k:{\"type\":\"Ready\"}");
    return json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:o, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s}},"
        " s:{s:s, s:[{s:s, s:s}]},"
        " s:{s:{s:s, s:s, s:s}, s:{s:s, s:s}, s:[{s:s, s:s, s:s}], s:o, s:{s:[i, f, b, n]}}}",
        "apiVersion", "v1", "kind", "Node",
        "metadata", "name", name, "resourceVersion", rv, "uid", "u-]}\"{[", "managedFields", mf,
        "labels", "node.kubernetes.io/instance-type", "p4d.24xlarge",
        "topology.kubernetes.io/zone", "us-east-1a", "example.com/odd", "\"}]{[\\", "caf\xc3\xa9",
        "\xe2\x9c\x93",
        "annotations", "strata.io/units", "8", "node.alpha.kubernetes.io/ttl", "0",
        "spec", "providerID", "aws:///{x}", "taints", "key", "nvidia.com/gpu", "effect",
        "NoSchedule",
        "status", "allocatable", "cpu", "95690m", "memory", "1176826588Ki", "nvidia.com/gpu", "8",
        "capacity", "cpu", "96", "nvidia.com/gpu", "8", "conditions", "type", "Ready", "status",
        "True", "message", "kubelet is posting ready status ]]]}}}", "images", images,
        "nodeInfo", "odd", 1, 2.5, 0);
}

/* 11 items: six bench-like nodes (big_node), then odd shapes: metadata
 * under another case, a name that is no string, metadata under two cases,
 * a string, labels holding an array. */
static json_t *odd_items(void) {
    json_t *items = json_array();
    for (int i = 0; i < 6; i++) json_array_append_new(items, big_node(i));
    json_array_append_new(items, json_pack("{s:{s:s, s:n, s:i}}", "Metadata", "name", "ci",
                                           "labels", "annotations", 3));
    json_array_append_new(items, json_pack("{s:{s:i, s:s}, s:s}", "metadata", "name", 7,
                                           "resourceVersion", "9", "status", "gone"));
    json_array_append_new(items, json_pack("{s:s, s:{s:s}, s:{s:s}}", "METADATA", "x",
                                           "metadata", "name", "exact", "status",
                                           "allocatable", "1"));
    json_array_append_new(items, json_string("not a node"));
    json_array_append_new(items, json_pack("{s:{s:s, s:{s:[i,{s:s}]}}}", "metadata", "name",
                                           "deep", "labels", "a", 1, "b", "c"));
    return items;
}

static char *args_body(json_t *items, int indent) {
    json_t *args = json_pack("{s:{s:{s:s}}, s:{s:s, s:o}, s:n}", "Pod", "metadata", "name", "p",
                             "Nodes", "kind", "NodeList", "items", items, "NodeNames");
    char *body = json_dumps(args, indent ? JSON_INDENT(indent) : JSON_COMPACT);
    json_decref(args);
    return body;
}

static void test_nodes_like_jansson(void **state) {
    (void)state;
    /* the node lists of tests/kube_nodes.py, as the client wrote them */
    const char *lists[] = {"eks", "gke", "kubeadm", "kubeadm-control-plane"};
    const int counts[] = {5, 4, 3, 4};
    for (int l = 0; l < 4; l++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/nodes/%s.json", harness_tmp(), lists[l]);
        json_error_t je;
        json_t *list = json_load_file(path, 0, &je);
        if (!list) fail_msg("%s: %s (the kube_nodes fixture writes it)", path, je.text);
        char *body = args_body(json_incref(json_object_get(list, "items")), 4);
        same_nodes(body, strlen(body), counts[l]);
        free(body);
        json_decref(list);
    }
    /* bench-like nodes, compact and indented, and odd shapes */
    json_t *items = odd_items();
    for (int indent = 0; indent <= 2; indent += 2) {
        char *body = args_body(json_incref(items), indent);
        same_nodes(body, strlen(body), 11);
        free(body);
    }
    json_decref(items);
}

/* The offset of slice sl in body (SIZE_MAX when absent), for comparing
 * two reads of one body. */
static size_t off(const ka_slice *sl, const char *body) {
    return sl->p ? (size_t)(sl->p - body) : (size_t)-1;
}

/* Reads body[len] with prev and without, and checks that both reads say the
 * same, node by node and field by field (slices at the same offsets);
 * returns the reused count. */
static int read_both(const char *body, size_t len, const ka_args *prev, int want_rc) {
    ka_args a, b;
    char ea[512] = "", eb[512] = "";
    int ra = ka_read(body, len, 16384, prev, &a, ea, sizeof ea);
    int rb = ka_read(body, len, 16384, NULL, &b, eb, sizeof eb);
    assert_int_equal(ra, want_rc);
    assert_int_equal(rb, want_rc);
    assert_string_equal(ea, eb);
    assert_int_equal(a.n, b.n);
    assert_int_equal(a.kept, b.kept);
    for (int i = 0; ra == KA_OK && i < a.kept; i++) {
        const ka_node *x = &a.nodes[i], *y = &b.nodes[i];
        assert_int_equal(off(&x->raw, body), off(&y->raw, body));
        assert_int_equal(x->raw.len, y->raw.len);
        assert_int_equal(x->is_object, y->is_object);
        assert_int_equal(x->md_exact, y->md_exact);
        assert_int_equal(x->has_md, y->has_md);
        assert_int_equal(x->has_status, y->has_status);
        const ka_slice *sx[] = {&x->labels, &x->annotations, &x->allocatable};
        const ka_slice *sy[] = {&y->labels, &y->annotations, &y->allocatable};
        for (int k = 0; k < 3; k++) {
            assert_int_equal(off(sx[k], body), off(sy[k], body));
            assert_int_equal(sx[k]->len, sy[k]->len);
        }
        if (y->name) assert_string_equal(x->name, y->name);
        else assert_null(x->name);
        if (y->rv) assert_string_equal(x->rv, y->rv);
        else assert_null(x->rv);
    }
    int reused = a.reused;
    assert_int_equal(b.reused, 0);
    ka_free(&a);
    ka_free(&b);
    return reused;
}

static int released;
static void count_release(void *ud) {
    (void)ud;
    released++;
}

/* A node whose bytes are those of a node of the last body is taken from
 * it: in another order (kube-scheduler starts its list at another node each
 * call), with nodes changed, added and removed around it; and the read is
 * the full read's, field by field, errors included. The memo gives the
 * body back once, when replaced and unused. */
static void test_reuse_prev(void **state) {
    (void)state;
    json_t *items = odd_items();
    char *first = args_body(json_incref(items), 0);
    ka_memo *m = ka_memo_create();
    assert_non_null(m);
    assert_null(ka_memo_get(m));
    ka_args a;
    char err[512];
    assert_int_equal(ka_read(first, strlen(first), 16384, NULL, &a, err, sizeof err), KA_OK);
    assert_int_equal(ka_memo_set(m, &a, count_release, NULL), 0);
    assert_int_equal(a.kept, 0); /* moved */
    const ka_args *prev = ka_memo_get(m);
    assert_int_equal(prev->kept, 11);

    /* The same body: every object node, in order. */
    assert_int_equal(read_both(first, strlen(first), prev, KA_OK), 10);

    /* Started at node 4, node 2's zone and node 7's resourceVersion changed,
     * node 5 gone, a new node after the string: of the 7 unchanged objects,
     * 6 are taken (by their place after the last one taken, or by their
     * name); node 6 is read in full: it follows the gone node 5 and its
     * "Metadata" gives no name at its head. */
    json_t *next = json_array();
    for (int k = 0; k < 11; k++) {
        int i = (k + 4) % 11;
        if (i == 5) continue;
        json_t *n = json_deep_copy(json_array_get(items, (size_t)i));
        if (i == 2)
            json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                                "topology.kubernetes.io/zone", json_string("us-east-1b"));
        if (i == 7)
            json_object_set_new(json_object_get(n, "metadata"), "resourceVersion",
                                json_string("10"));
        json_array_append_new(next, n);
        if (i == 9) json_array_append_new(next, big_node(40));
    }
    char *second = args_body(json_incref(next), 0);
    assert_int_equal(read_both(second, strlen(second), prev, KA_OK), 6);
    /* Indented, the nodes' bytes differ: nothing taken, the same read. */
    char *spaced = args_body(json_incref(next), 2);
    assert_int_equal(read_both(spaced, strlen(spaced), prev, KA_OK), 0);
    /* A node equal to one of the last body up to a byte short of its end,
     * and errors after taken nodes: refused as the full read refuses. */
    size_t len = strlen(second);
    char *cut = strdup(second);
    char *tail = strstr(cut, "\"name\":\"deep\"");
    assert_non_null(tail);
    char *close = strstr(tail, "}}");
    memmove(close + 1, close + 2, strlen(close + 2) + 1); /* drops a '}' */
    read_both(cut, strlen(cut), prev, KA_BAD);
    strcpy(cut, second);
    strcpy(cut + len - 3, "}]");                            /* items not closed */
    read_both(cut, strlen(cut), prev, KA_BAD);
    free(cut);

    /* New nodes ahead of nodes 0-3: after 10, those are taken; after 64
     * in a row (a cluster-wide change), the read stops comparing. */
    for (int ahead = 10; ahead <= 64; ahead += 54) {
        json_t *more = json_array();
        for (int k = 0; k < ahead; k++) json_array_append_new(more, big_node(100 + k));
        for (int i = 0; i < 4; i++) json_array_append(more, json_array_get(items, (size_t)i));
        char *b = args_body(more, 0);
        assert_int_equal(read_both(b, strlen(b), prev, KA_OK), ahead < 64 ? 4 : 0);
        free(b);
    }

    /* Replaced while a reader holds the old read: given back at the put. */
    assert_int_equal(ka_read(second, strlen(second), 16384, prev, &a, err, sizeof err), KA_OK);
    assert_int_equal(ka_memo_set(m, &a, count_release, NULL), 0);
    assert_int_equal(released, 0);
    ka_memo_put(m, prev);
    assert_int_equal(released, 1);
    prev = ka_memo_get(m);
    assert_int_equal(prev->kept, 11);
    ka_memo_put(m, prev);
    ka_memo_free(m);
    assert_int_equal(released, 2);
    ka_memo_free(NULL);
    free(first);
    free(second);
    free(spaced);
    json_decref(items);
    json_decref(next);
}

/* Refused as the whole-tree parse refused: malformed JSON anywhere (with
 * its position), a duplicate key anywhere strata reads; a duplicate inside
 * a part it skips is left alone. Elements past max_items are counted. */
static void test_refusals(void **state) {
    (void)state;
    static const struct {
        const char *body;
        const char *needle; /* NULL: accepted */
    } cases[] = {
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"name\": \"a\"}}", "line 1, column 60"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{]}}", "string key or '}' expected"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"status\": {\"images\": [[]]]}}]}}",
         "',' or '}' expected near ']'"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"spec\": \"a\\qb\"}]}}", "invalid escape"},
        {"{\"Pod\": {}, \"Pod\": {}}", "line 1, column 13: duplicate object key \"Pod\""},
        {"{\"Pod\": {\"a\": 1, \"a\": 2}, \"NodeNames\": []}", "duplicate object key"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [], \"items\": []}}", "duplicate object key"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"labels\": {\"x\": \"1\", "
         "\"\\u0078\": \"2\"}}}]}}", "duplicate object key \"x\""},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"annotations\": {\"x\": "
         "{\"y\": 1, \"y\": 2}}}}]}}", "duplicate object key"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"status\": {\"allocatable\": {}, "
         "\"allocatable\": {}}}]}}", "duplicate object key"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"status\": {\"images\": [{\"a\": 1, "
         "\"a\": 2}]}}]}}", NULL},
        {"[{\"Pod\": {}}]", "the body must be a JSON object, got an array"},
        {"\"Pod\"", "line 1, column 1: '[' or '{' expected"},
        {"{\"Pod\": {}} {}", "the end of the text expected"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [\"x\\ud800\"]}}", "invalid Unicode"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ka_args a;
        char err[512] = "";
        int rc = ka_read(cases[i].body, strlen(cases[i].body), 100, NULL, &a, err, sizeof err);
        if (cases[i].needle ? rc != KA_BAD || !strstr(err, cases[i].needle) : rc != KA_OK)
            fail_msg("case %zu: expected %s%s, got %d %s", i,
                     cases[i].needle ? "a refusal with " : "acceptance",
                     cases[i].needle ? cases[i].needle : "", rc, err);
        ka_free(&a);
    }
    /* 300 items: all counted, 100 kept */
    char body[4096];
    size_t at = (size_t)snprintf(body, sizeof body, "{\"pod\": {}, \"nodes\": {\"Items\": [");
    for (int i = 0; i < 300; i++) at += (size_t)snprintf(body + at, sizeof body - at, "%s{}",
                                                         i ? "," : "");
    snprintf(body + at, sizeof body - at, "]}}");
    ka_args a;
    char err[256];
    assert_int_equal(ka_read(body, strlen(body), 100, NULL, &a, err, sizeof err), KA_OK);
    assert_int_equal(a.n, 300);
    assert_int_equal(a.kept, 100);
    assert_non_null(a.pod); /* keys matched ignoring case, as Go does */
    ka_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_jansson),
        cmocka_unit_test(test_error_position),
        cmocka_unit_test(test_decode_and_keys),
        cmocka_unit_test(test_nodes_like_jansson),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reuse_prev),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
