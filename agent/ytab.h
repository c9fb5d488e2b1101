/* ytab.h -- declarative YAML tables for the agent's own files (the train
 * config, the generator spec), in the style of env/config.c.
 *
 * Each mapping is described by a table of yt_field rows (key, kind, units,
 * required or default, bounds, offset into a C struct). yt_walk checks a
 * mapping against its table -- unknown keys (with a "did you mean"),
 * duplicates, wrong node kinds, missing required keys, units and bounds --
 * and fills the struct; lists and nested mappings are handed back to the
 * caller as nodes. Every message reads "file:line:col: key.path: message".
 *
 * Ownership: yt_load returns a document the caller frees with yt_free.
 */
#ifndef STRATA_AGENT_YTAB_H
#define STRATA_AGENT_YTAB_H

#include <stddef.h>
#include <yaml.h>

#include "env/units.h"

typedef enum {
    YT_NUM,    /* a number with units -> double */
    YT_INT,    /* a whole number -> int */
    YT_BOOL,   /* true/false, yes/no, 1/0 -> int */
    YT_STR,    /* text -> char[YT_STR_MAX] */
    YT_ENUM,   /* one of choices "a|b|c" -> int index */
    YT_RANGE,  /* [lo, hi] or a single number (lo = hi), with units -> double[2] */
    YT_NODE,   /* any node, left to the caller (vals[] holds it) */
} yt_kind;

#define YT_STR_MAX 1024

typedef struct {
    const char *key;
    yt_kind kind;
    units_kind units; /* YT_NUM, YT_RANGE */
    int required;
    double def, def2; /* default (a range's lo and hi) */
    double lo, hi;    /* bounds every value must meet (inclusive) */
    size_t off;       /* offset of the field in the struct */
    const char *choices; /* YT_ENUM */
} yt_field;

#define YT_F_NUM(k, u, req, d, lo, hi, T, m) {k, YT_NUM, u, req, d, 0, lo, hi, offsetof(T, m), NULL}
#define YT_F_INT(k, req, d, lo, hi, T, m) {k, YT_INT, UNITS_COUNT, req, d, 0, lo, hi, offsetof(T, m), NULL}
#define YT_F_BOOL(k, d, T, m) {k, YT_BOOL, UNITS_NUMBER, 0, d, 0, 0, 1, offsetof(T, m), NULL}
#define YT_F_STR(k, req, T, m) {k, YT_STR, UNITS_NUMBER, req, 0, 0, 0, 0, offsetof(T, m), NULL}
#define YT_F_ENUM(k, ch, d, T, m) {k, YT_ENUM, UNITS_NUMBER, 0, d, 0, 0, 0, offsetof(T, m), ch}
#define YT_F_RANGE(k, u, req, d, d2, lo, hi, T, m) {k, YT_RANGE, u, req, d, d2, lo, hi, offsetof(T, m), NULL}
#define YT_F_NODE(k, req) {k, YT_NODE, UNITS_NUMBER, req, 0, 0, 0, 0, 0, NULL}

typedef struct {
    char path[1024];   /* as shown in messages */
    yaml_document_t doc;
    yaml_node_t *root; /* NULL for an empty file */
} yt_doc;

/* yt_load parses the file whole. Returns NULL with "file: message" or
 * "file:line:col: message" in err. */
yt_doc *yt_load(const char *path, char *err, size_t errlen);
void yt_free(yt_doc *d);

/* yt_walk checks mapping `map` (key path `path`, "" at the top) against
 * f[nf], fills obj (defaults first) and stores each key's value node in
 * vals[i] (NULL when absent; vals may be NULL). Returns 0, or -1 with the
 * message in err. */
int yt_walk(yt_doc *d, yaml_node_t *map, const char *path, const yt_field *f, int nf, void *obj,
            yaml_node_t **vals, char *err, size_t errlen);

/* yt_fail writes "file:line:col: path: message" for node `at` and returns -1. */
int yt_fail(const yt_doc *d, const yaml_node_t *at, const char *path, char *err, size_t errlen,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Sequences: length and i-th item (the node must be a sequence). */
int yt_seq_len(const yaml_node_t *n);
yaml_node_t *yt_seq_at(yt_doc *d, const yaml_node_t *n, int i);

/* yt_scalar returns the text of a scalar node, or NULL when it is not one. */
const char *yt_scalar(const yaml_node_t *n);

#endif
