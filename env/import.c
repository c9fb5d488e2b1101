/* import.c -- a strata cluster from `kubectl get nodes -o json` (import.h).
 *
 * The catalogue is a YAML file walked with the run loader's own table
 * walker (cfg_doc_walk), so its messages read like every config's. The
 * nodes are JSON read with jansson; JSON carries no line numbers once
 * parsed, so messages name the node (items[i], metadata.name) instead.
 */
#include "env/import.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "base/file.h"
#include "env/config.h"
#include "env/schema.h"
#include "env/units.h"

/* ---------------------------------------------------------------------------
 * The catalogue
 * ------------------------------------------------------------------------ */

typedef struct {
    char name[MODEL_NAME_MAX];
    int kind, by;
    double flops, io_bw, net_bw, mem, price, node_bw, unit_cpus;
    int ps_slots;
} ent_in;

enum { E_NAME, E_KIND, E_BY, E_MATCH, E_FLOPS, E_IO, E_NET, E_MEM, E_PRICE, E_NODEBW,
       E_PS, E_UCPU, N_E };

static const cfg_field ENTRY[N_E] = {
    [E_NAME] = CFG_ROW_NAME("name", 1, ent_in, name),
    [E_KIND] = CFG_ROW_ENUM("kind", "cpu|gpu", 1, 0, ent_in, kind),
    [E_BY] = CFG_ROW_ENUM("by", "instance|gpu", 1, 0, ent_in, by),
    [E_MATCH] = CFG_ROW_NODE("match", CFG_FT_LIST, 1),
    [E_FLOPS] = CFG_ROW_NUM("flops", UNITS_FLOPS, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, ent_in, flops),
    [E_IO] = CFG_ROW_NUM("io_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, ent_in, io_bw),
    [E_NET] = CFG_ROW_NUM("net_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, ent_in,
                          net_bw),
    [E_MEM] = CFG_ROW_NUM("mem", UNITS_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, ent_in, mem),
    [E_PRICE] = CFG_ROW_NUM("price", UNITS_DOLLARS, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, ent_in,
                            price),
    [E_NODEBW] = CFG_ROW_NUM("node_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                             ent_in, node_bw),
    [E_PS] = CFG_ROW_INT("ps_slots", 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, ent_in, ps_slots),
    [E_UCPU] = CFG_ROW_NUM("unit_cpus", UNITS_NUMBER, 0, 1, CFG_B_GT, 0, CFG_B_NONE, 0, ent_in,
                           unit_cpus),
};

static const cfg_field TOP[1] = {CFG_ROW_NODE("types", CFG_FT_LIST, 1)};
static const cfg_field MATCH_ITEM = CFG_ROW_NAME("match", 1, ent_in, name);

static int seq_n(const yaml_node_t *n) {
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

void imp_catalogue_free(imp_catalogue *cat) {
    if (!cat) return;
    for (int i = 0; i < cat->n; i++) free(cat->entries[i].match);
    free(cat->entries);
    free(cat);
}

/* read_entry fills e from the mapping map (entry i of the list); returns 0
 * or -1 with the message in err. */
static int read_entry(cfg_doc *d, yaml_node_t *map, int i, imp_entry *e, char *err,
                      size_t errlen) {
    char path[64], kp[96];
    snprintf(path, sizeof path, "types[%d]", i);
    ent_in in;
    memset(&in, 0, sizeof in);
    yaml_node_t *keys[N_E], *vals[N_E];
    if (cfg_doc_walk(d, map, path, "a mapping (a catalogue entry)", ENTRY, N_E, &in, keys, vals,
                     err, errlen))
        return -1;
    snprintf(kp, sizeof kp, "%s.match", path);
    yaml_node_t *ml = vals[E_MATCH];
    int n = seq_n(ml);
    if (n < 1) return cfg_doc_fail(d, ml, kp, err, errlen, "must list at least one label value");
    e->match = calloc((size_t)n, sizeof *e->match);
    if (!e->match) return cfg_doc_fail(d, ml, kp, err, errlen, "out of memory");
    for (int j = 0; j < n; j++) {
        ent_in item;
        char ip[112];
        snprintf(ip, sizeof ip, "%s[%d]", kp, j);
        yaml_node_t *v = cfg_doc_node(d, ml->data.sequence.items.start[j]);
        if (cfg_doc_value(d, &MATCH_ITEM, v, ip, &item, err, errlen)) return -1;
        memcpy(e->match[j], item.name, MODEL_NAME_MAX);
        e->n_match = j + 1;
    }
    snprintf(e->type.name, sizeof e->type.name, "%s", in.name);
    e->type.is_gpu = in.kind == 1;
    e->type.flops = in.flops;
    e->type.io_bw = in.io_bw;
    e->type.net_bw = in.net_bw;
    e->type.mem = in.mem;
    e->type.price = in.price;
    e->by_gpu = in.by == 1;
    e->node_bw = in.node_bw;
    e->ps_slots = in.ps_slots;
    e->unit_cpus = in.unit_cpus;
    if (e->by_gpu && !e->type.is_gpu)
        return cfg_doc_fail(d, vals[E_BY], path, err, errlen,
                            "an entry matched by GPU product must have kind: gpu");
    if (vals[E_UCPU] && e->type.is_gpu)
        return cfg_doc_fail(d, vals[E_UCPU], path, err, errlen,
                            "unit_cpus is for CPU entries (a GPU node's units are its GPUs)");
    /* names and label values must be unique across entries */
    for (int k = 0; k < i; k++) {
        const imp_entry *o = (const imp_entry *)e - (i - k);
        if (!strcmp(o->type.name, e->type.name))
            return cfg_doc_fail(d, vals[E_NAME], path, err, errlen,
                                "name '%s' is already used by types[%d]", e->type.name, k);
        for (int a = 0; a < e->n_match; a++)
            for (int b = 0; b < o->n_match; b++)
                if (o->by_gpu == e->by_gpu && o->type.is_gpu == e->type.is_gpu &&
                    !strcmp(o->match[b], e->match[a]))
                    return cfg_doc_fail(d, vals[E_MATCH], kp, err, errlen,
                                        "label value '%s' is already matched by types[%d]",
                                        e->match[a], k);
    }
    return 0;
}

imp_catalogue *imp_catalogue_load(const char *path, char *err, size_t errlen) {
    cfg_doc *d = cfg_doc_load(path, err, errlen);
    if (!d) return NULL;
    imp_catalogue *cat = calloc(1, sizeof *cat);
    yaml_node_t *root = cfg_doc_root(d), *keys[1], *vals[1];
    char dummy;
    if (!cat) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    snprintf(cat->path, sizeof cat->path, "%s", path);
    if (!root) {
        cfg_doc_fail(d, NULL, "", err, errlen, "expected a mapping with types:, the file is empty");
        goto fail;
    }
    if (cfg_doc_walk(d, root, "", "a mapping with types: (a catalogue)", TOP, 1, &dummy, keys,
                     vals, err, errlen))
        goto fail;
    int n = seq_n(vals[0]);
    if (n < 1) {
        cfg_doc_fail(d, vals[0], "types", err, errlen, "must list at least one entry");
        goto fail;
    }
    cat->entries = calloc((size_t)n, sizeof *cat->entries);
    if (!cat->entries) {
        cfg_doc_fail(d, vals[0], "types", err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        cat->n = i + 1;
        yaml_node_t *m = cfg_doc_node(d, vals[0]->data.sequence.items.start[i]);
        if (read_entry(d, m, i, &cat->entries[i], err, errlen)) goto fail;
    }
    cfg_doc_free(d);
    return cat;
fail:
    cfg_doc_free(d);
    imp_catalogue_free(cat);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Kubernetes quantities
 * ------------------------------------------------------------------------ */

int imp_quantity(const char *text, double *out) {
    static const struct {
        const char *s;
        double f;
    } SUF[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0},
        {"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9},
        {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
    };
    if (!text || !*text) return -1;
    const char *p = text;
    if (*p == '+') p++;
    /* digits, one optional point, digits: no sign other than '+', no spaces */
    const char *num = p;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return -1;
    char buf[64];
    size_t len = (size_t)(p - num);
    if (len >= sizeof buf) return -1;
    memcpy(buf, num, len);
    buf[len] = '\0';
    double v = strtod(buf, NULL), f = 1.0;
    if (*p == 'e' || *p == 'E') {
        /* "1e3" is a decimal exponent; a lone "E" is the exa suffix */
        const char *q = p + 1;
        if (*q == '+' || *q == '-') q++;
        if (*q >= '0' && *q <= '9') {
            char *end;
            errno = 0;
            long e = strtol(p + 1, &end, 10);
            if (*end || errno || e > 300 || e < -300) return -1;
            f = pow(10.0, (double)e);
            p = end;
        }
    }
    if (*p) {
        size_t i;
        for (i = 0; i < sizeof SUF / sizeof *SUF; i++)
            if (!strcmp(p, SUF[i].s)) break;
        if (i == sizeof SUF / sizeof *SUF) return -1;
        f = SUF[i].f;
    }
    v *= f;
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Nodes
 * ------------------------------------------------------------------------ */

void imp_result_free(imp_result *r) {
    if (!r) return;
    free(r->cl.types);
    free(r->cl.nodes);
    free(r->cl.zones);
    free(r->note);
    free(r->placeholder);
    free(r);
}

static const char *label(json_t *labels, const char *key) {
    json_t *v = json_object_get(labels, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const imp_entry *lookup(const imp_catalogue *cat, const char *value, int by_gpu,
                               int is_gpu) {
    if (!value || !cat) return NULL;
    for (int i = 0; i < cat->n; i++) {
        const imp_entry *e = &cat->entries[i];
        if (e->by_gpu != by_gpu || e->type.is_gpu != is_gpu) continue;
        for (int j = 0; j < e->n_match; j++)
            if (!strcmp(e->match[j], value)) return e;
    }
    return NULL;
}

const imp_entry *imp_catalogue_match(const imp_catalogue *cat, const imp_node_facts *f) {
    const imp_entry *e = lookup(cat, f->inst, 0, f->is_gpu);
    if (!e && f->is_gpu) e = lookup(cat, f->prod, 1, 1);
    return e;
}

int imp_cpu_units(double cpus, double unit_cpus) {
    if (!(cpus > 0) || !(unit_cpus > 0)) return 0;
    double u = ceil(cpus / unit_cpus - 0.5);
    return u > 1e6 ? 1000000 : (int)u;
}

/* Reads allocatable[key] as a quantity into *out: 1 when read, 0 when
 * absent, -1 when present but not a quantity (text[len] gets what it was). */
static int alloc_quantity(const json_t *alloc, const char *key, double *out, char *text,
                          size_t len) {
    const json_t *v = json_object_get(alloc, key);
    if (!v) return 0;
    if (json_is_number(v)) {
        double x = json_number_value(v);
        snprintf(text, len, "%g", x);
        if (!isfinite(x) || x < 0) return -1;
        *out = x;
        return 1;
    }
    const char *t = json_string_value(v);
    snprintf(text, len, "%.60s", t ? t : "(not a string)");
    return t && !imp_quantity(t, out) ? 1 : -1;
}

int imp_node_read(const json_t *node, imp_node_facts *f, char *why, size_t whylen) {
    memset(f, 0, sizeof *f);
    f->cpus = -1.0;
    json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
    f->inst_key = "node.kubernetes.io/instance-type";
    f->inst = label(labels, f->inst_key);
    if (!f->inst) {
        f->inst_key = "beta.kubernetes.io/instance-type";
        f->inst = label(labels, f->inst_key);
    }
    f->prod_key = "cloud.google.com/gke-accelerator";
    f->prod = label(labels, f->prod_key);
    if (!f->prod) {
        f->prod_key = "nvidia.com/gpu.product";
        f->prod = label(labels, f->prod_key);
    }
    f->zone = label(labels, "topology.kubernetes.io/zone");
    if (!f->zone) f->zone = label(labels, "failure-domain.beta.kubernetes.io/zone");
    char text[64];
    const char *gkey = "nvidia.com/gpu";
    int r = alloc_quantity(alloc, gkey, &f->gpus, text, sizeof text);
    if (r == 0) r = alloc_quantity(alloc, gkey = "amd.com/gpu", &f->gpus, text, sizeof text);
    if (r < 0 || (r > 0 && (f->gpus != floor(f->gpus) || f->gpus > 1e6))) {
        snprintf(why, whylen, "allocatable %s '%s' is not a whole number of GPUs", gkey, text);
        return -1;
    }
    f->is_gpu = f->gpus >= 1.0;
    r = alloc_quantity(alloc, "cpu", &f->cpus, text, sizeof text);
    if (r < 0) {
        snprintf(why, whylen, "allocatable cpu '%s' is not a quantity", text);
        return -1;
    }
    return 0;
}

/* find_or_add returns the index of a type named name in r, adding one
 * (with figures from t) when absent; -1 when the table is full. */
static int find_or_add(imp_result *r, const model_type *t, const char *note, int placeholder) {
    for (int i = 0; i < r->cl.n_types; i++)
        if (!strcmp(r->cl.types[i].name, t->name)) return i;
    if (r->cl.n_types >= MODEL_MAX_TYPES) return -1;
    int i = r->cl.n_types++;
    r->cl.types[i] = *t;
    r->cl.types[i].count = 0;
    snprintf(r->note[i], IMP_NOTE_MAX, "%s", note);
    r->placeholder[i] = placeholder;
    r->n_placeholders += placeholder;
    return i;
}

static int zone_index(imp_result *r, const char *zone) {
    for (int i = 0; i < r->cl.n_zones; i++)
        if (!strcmp(r->cl.zones[i].name, zone)) return i;
    if (r->cl.n_zones >= MODEL_MAX_ZONES) return -1;
    snprintf(r->cl.zones[r->cl.n_zones].name, MODEL_NAME_MAX, "%s", zone);
    return r->cl.n_zones++;
}

/* clean_name copies a label value into a type name (at most 63
 * characters; commas, which names cannot hold, become '-'). */
static void clean_name(char *out, const char *v) {
    snprintf(out, MODEL_NAME_MAX, "%s", v);
    for (char *c = out; *c; c++)
        if (*c == ',' || (unsigned char)*c < 0x20) *c = '-';
}

#define FAIL(...)                                \
    do {                                         \
        snprintf(err, errlen, __VA_ARGS__);      \
        goto fail;                               \
    } while (0)

imp_result *imp_nodes_import(const char *path, const imp_catalogue *cat, int allow_unknown,
                             char *err, size_t errlen) {
    json_error_t je;
    char *text = NULL, why[256];
    size_t len = 0;
    if (file_read(path, IMP_NODES_MAX_BYTES, &text, &len, NULL, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    imp_result *r = NULL;
    if (!root) {
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        return NULL;
    }
    json_t *items = json_object_get(root, "items");
    const char *kind = json_string_value(json_object_get(root, "kind"));
    int single = !items && kind && !strcmp(kind, "Node");
    if (!single && !json_is_array(items))
        FAIL("%s: expected `kubectl get nodes -o json` output: a List with items (or one Node)",
             path);
    size_t n = single ? 1 : json_array_size(items);
    if (n == 0) FAIL("%s: the list holds no nodes", path);
    if (n > MODEL_MAX_NODES) FAIL("%s: %zu nodes, more than %d", path, n, MODEL_MAX_NODES);
    r = calloc(1, sizeof *r);
    if (!r) FAIL("%s: out of memory", path);
    r->cl.types = calloc(MODEL_MAX_TYPES, sizeof *r->cl.types);
    r->cl.nodes = calloc(n, sizeof *r->cl.nodes);
    r->cl.zones = calloc(MODEL_MAX_ZONES, sizeof *r->cl.zones);
    r->note = calloc(MODEL_MAX_TYPES, sizeof *r->note);
    r->placeholder = calloc(MODEL_MAX_TYPES, sizeof *r->placeholder);
    if (!r->cl.types || !r->cl.nodes || !r->cl.zones || !r->note || !r->placeholder)
        FAIL("%s: out of memory", path);
    cfg_cluster_default(&r->cl); /* the run loader's defaults, written out explicitly */
    int zoned = -1; /* 1 when the first node has a zone label */
    char first_name[MODEL_NAME_MAX] = "";
    for (size_t i = 0; i < n; i++) {
        json_t *node = single ? root : json_array_get(items, i);
        json_t *meta = json_object_get(node, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (!name || !*name) FAIL("%s: items[%zu]: no metadata.name", path, i);
        if (strlen(name) >= MODEL_NAME_MAX)
            FAIL("%s: node %s: name longer than %d characters", path, name, MODEL_NAME_MAX - 1);
        imp_node_facts nf;
        if (!json_is_object(json_object_get(json_object_get(node, "status"), "allocatable")))
            FAIL("%s: node %s: no status.allocatable", path, name);
        if (imp_node_read(node, &nf, why, sizeof why)) FAIL("%s: node %s: %s", path, name, why);
        int is_gpu = nf.is_gpu;
        double gpus = nf.gpus, cpus = nf.cpus;
        if (!is_gpu && cpus < 0)
            FAIL("%s: node %s: allocatable cpu (missing) is not a quantity", path, name);
        const char *inst = nf.inst, *inst_key = nf.inst_key;
        const char *prod = nf.prod, *prod_key = nf.prod_key;
        const imp_entry *e = imp_catalogue_match(cat, &nf);
        int t;
        double per_unit = e && !is_gpu ? e->unit_cpus : 1.0;
        if (e) {
            char note[IMP_NOTE_MAX];
            snprintf(note, sizeof note, "%s: %s '%s' in %.300s", e->type.name,
                     e->by_gpu ? "GPU product" : "instance type",
                     e->by_gpu ? prod : inst, cat->path);
            t = find_or_add(r, &e->type, note, 0);
        } else {
            /* what to name in the message: the most specific label the node has */
            const char *key = is_gpu && prod ? prod_key : inst ? inst_key : NULL;
            const char *val = is_gpu && prod ? prod : inst;
            if (!allow_unknown || !val) {
                if (!val)
                    FAIL("%s: node %s: no instance-type label (node.kubernetes.io/instance-type)%s:"
                         " strata cannot tell its type; label the node, or write its type into "
                         "the cluster by hand",
                         path, name, is_gpu ? " and no GPU product label "
                                              "(nvidia.com/gpu.product, "
                                              "cloud.google.com/gke-accelerator)" : "");
                FAIL("%s: node %s: %s '%s' (label %s) is not in the catalogue %s: add an entry "
                     "with name, kind: %s, by: %s, match: [%s], flops, io_bw, net_bw, mem, "
                     "price and node_bw (docs/calibration.md), or pass --allow-unknown for "
                     "placeholders", path, name, key == prod_key ? "GPU product" : "instance type",
                     val, key, cat->path, is_gpu ? "gpu" : "cpu",
                     key == prod_key ? "gpu" : "instance", val);
            }
            model_type ph = {.is_gpu = is_gpu, .flops = 1e12, .io_bw = 1e9, .net_bw = 1.25e9,
                             .mem = 17179869184.0, .price = 0.0};
            clean_name(ph.name, val);
            char note[IMP_NOTE_MAX];
            snprintf(note, sizeof note, "PLACEHOLDER: %s '%s' (label %s, node %s) is not in %.300s: "
                     "fill in flops, io_bw, net_bw, mem and price, and each node's bw",
                     key == prod_key ? "GPU product" : "instance type", val, key, name, cat->path);
            t = find_or_add(r, &ph, note, 1);
        }
        if (t < 0) FAIL("%s: node %s: more than %d types", path, name, MODEL_MAX_TYPES);
        model_node *nd = &r->cl.nodes[r->cl.n_nodes++];
        cfg_node_default(nd);
        snprintf(nd->name, sizeof nd->name, "%s", name);
        for (int k = 0; k < r->cl.n_nodes - 1; k++)
            if (!strcmp(r->cl.nodes[k].name, name)) FAIL("%s: node %s: listed twice", path, name);
        nd->type = t;
        nd->units = is_gpu ? (int)gpus : imp_cpu_units(cpus, per_unit);
        if (e) nd->ps_slots = e->ps_slots;
        nd->bw = e ? e->node_bw : 1.25e9;
        r->cl.types[t].count += nd->units;
        const char *zone = nf.zone;
        if (zoned < 0) {
            zoned = zone != NULL;
            snprintf(first_name, sizeof first_name, "%s", name);
        } else if (zoned != (zone != NULL)) {
            FAIL("%s: node %s %s a zone label (topology.kubernetes.io/zone) but node %s %s: "
                 "label every node or none", path, name, zone ? "has" : "has no", first_name,
                 zone ? "has none" : "has one");
        }
        if (zone) {
            if (!*zone || strlen(zone) >= MODEL_NAME_MAX)
                FAIL("%s: node %s: zone label '%s' is empty or too long", path, name, zone);
            nd->zone = zone_index(r, zone);
            if (nd->zone < 0) FAIL("%s: node %s: more than %d zones", path, name, MODEL_MAX_ZONES);
        }
    }
    if (r->cl.n_zones == 0) { /* the loader's implicit zone */
        snprintf(r->cl.zones[0].name, MODEL_NAME_MAX, "default");
        r->cl.n_zones = 1;
    }
    json_decref(root);
    return r;
fail:
    json_decref(root);
    imp_result_free(r);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Writing a cluster
 * ------------------------------------------------------------------------ */

/* fig writes v of kind with a unit when that text reads back as exactly v,
 * else as a bare number with the fewest of 15-17 significant digits
 * that reads back exactly. */
static const char *fig(char *buf, size_t len, units_kind kind, double v) {
    char e[128];
    double back;
    units_format(kind, v, buf, len);
    if (units_parse(kind, buf, &back, e, sizeof e) == 0 && back == v) return buf;
    for (int prec = 15; prec <= 17; prec++) { /* the shortest that reads back exactly */
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* name writes a name plain when it only holds [A-Za-z0-9._-/], else quoted. */
static const char *yname(char *buf, size_t len, const char *s) {
    int plain = *s != '\0' && *s != '-' && *s != '.';
    for (const char *c = s; *c && plain; c++)
        plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-' || *c == '/';
    if (plain) {
        snprintf(buf, len, "%s", s);
        return buf;
    }
    size_t o = 0;
    buf[o++] = '"';
    for (const char *c = s; *c && o + 3 < len; c++) {
        if (*c == '"' || *c == '\\') buf[o++] = '\\';
        buf[o++] = *c;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

void imp_cluster_write(FILE *f, const model_cluster *cl, const char (*note)[IMP_NOTE_MAX],
                       const char *header) {
    char a[64], b[64], c[64], d[64], e[64], nm[160], z1[160];
    if (header) {
        const char *p = header;
        while (*p) {
            const char *nl = strchr(p, '\n');
            int len = nl ? (int)(nl - p) : (int)strlen(p);
            fprintf(f, "#%s%.*s\n", len ? " " : "", len, p);
            p += len + (nl != NULL);
        }
    }
    fprintf(f, "cluster:\n  types:\n");
    for (int t = 0; t < cl->n_types; t++) {
        const model_type *ty = &cl->types[t];
        if (note && note[t][0]) fprintf(f, "    # %s\n", note[t]);
        fprintf(f, "    - {name: %s, kind: %s, flops: %s, io_bw: %s, net_bw: %s, mem: %s, "
                "price: %s", yname(nm, sizeof nm, ty->name), ty->is_gpu ? "gpu" : "cpu",
                fig(a, sizeof a, UNITS_FLOPS, ty->flops), fig(b, sizeof b, UNITS_RATE_BYTES, ty->io_bw),
                fig(c, sizeof c, UNITS_RATE_BYTES, ty->net_bw), fig(d, sizeof d, UNITS_BYTES, ty->mem),
                fig(e, sizeof e, UNITS_NUMBER, ty->price));
        if (cl->n_nodes == 0) fprintf(f, ", count: %d", ty->count);
        fprintf(f, "}\n");
    }
    int zones = cl->n_zones > 1 || (cl->n_zones == 1 && strcmp(cl->zones[0].name, "default"));
    if (zones) {
        fprintf(f, "  zones:\n");
        for (int z = 0; z < cl->n_zones; z++)
            fprintf(f, "    - {name: %s}\n", yname(nm, sizeof nm, cl->zones[z].name));
    }
    fprintf(f, "  inter_bw: %s\n  inter_latency: %s\n",
            fig(a, sizeof a, UNITS_RATE_BYTES, cl->inter_bw),
            fig(b, sizeof b, UNITS_SECONDS, cl->inter_latency));
    int links = 0;
    for (int i = 0; cl->zone_bw && i < cl->n_zones; i++)
        for (int j = i + 1; j < cl->n_zones; j++) {
            double bw = cl->zone_bw[i * cl->n_zones + j], lat = cl->zone_lat[i * cl->n_zones + j];
            if (bw == cl->inter_bw && lat == cl->inter_latency) continue;
            if (!links++) fprintf(f, "  links:\n");
            fprintf(f, "    - {zones: [%s, %s], bw: %s, latency: %s}\n",
                    yname(nm, sizeof nm, cl->zones[i].name), yname(z1, sizeof z1, cl->zones[j].name),
                    fig(a, sizeof a, UNITS_RATE_BYTES, bw), fig(b, sizeof b, UNITS_SECONDS, lat));
        }
    if (cl->n_nodes > 0) fprintf(f, "  nodes:\n");
    for (int k = 0; k < cl->n_nodes; k++) {
        const model_node *nd = &cl->nodes[k];
        fprintf(f, "    - {name: %s, type: %s, units: %d, ps_slots: %d", yname(nm, sizeof nm, nd->name),
                yname(z1, sizeof z1, cl->types[nd->type].name), nd->units, nd->ps_slots);
        if (zones) fprintf(f, ", zone: %s", yname(nm, sizeof nm, cl->zones[nd->zone].name));
        fprintf(f, ", bw: %s, latency: %s, loss: %s}\n", fig(a, sizeof a, UNITS_RATE_BYTES, nd->bw),
                fig(b, sizeof b, UNITS_SECONDS, nd->latency),
                fig(c, sizeof c, UNITS_FRACTION, nd->loss));
    }
}
