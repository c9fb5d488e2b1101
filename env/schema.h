/* schema.h -- declarative tables of YAML keys and the one walker that
 * checks them (libyaml underneath).
 *
 * A loader describes each object of its files by a table of cfg_field rows
 * (key, kind, units, required or default, bounds, place in a C struct) and
 * lets the walker check a mapping against it: unknown keys with a "did
 * you mean", duplicates, wrong node types, missing required keys, units,
 * bounds and the figure guard. Every message reads
 *
 *   file:line:col: key.path: message
 *
 * with 1-based line and column pointing at the offending value (or at the
 * mapping that lacks a required key). The run loader (env/config.h) is
 * built on it; strata eval's configs (eval/spec.c), the agent's train
 * configs and generator specs (agent/trainconf.c, agent/gen.c) use it
 * through cfg_doc: one parsed YAML file that keeps its marks.
 *
 * Ownership: cfg_doc_load() returns a cfg_doc the caller frees with
 * cfg_doc_free(); nodes it hands out belong to it.
 */
#ifndef STRATA_SCHEMA_H
#define STRATA_SCHEMA_H

#include <stddef.h>

#include "env/units.h"

/* ---------------------------------------------------------------------------
 * The declarative tables
 *
 * Every object of a run is described by a table of cfg_field rows that one
 * walker checks (unknown keys with a "did you mean", duplicates, missing
 * required keys, units, bounds, enums) and stores into a struct. Every
 * non-zero figure (a CFG_FT_DOUBLE, either end of a CFG_FT_RANGE) must also
 * lie between 1e-12 and 1e18 in magnitude, whatever the row's bounds, so
 * that no product of figures can overflow a double. Other loaders (strata
 * eval's configs in eval/spec.c, the agent's train configs and generator
 * specs in agent/trainconf.c and agent/gen.c) reuse the same walker and
 * messages through cfg_doc: one parsed YAML file that keeps its marks.
 * ------------------------------------------------------------------------ */

struct yaml_node_s; /* libyaml's yaml_node_t */

typedef enum {
    CFG_FT_DOUBLE, /* a number with units (units), stored as double */
    CFG_FT_INT,    /* a whole number, stored as int */
    CFG_FT_NAME,   /* a name, stored as char[MODEL_NAME_MAX] */
    CFG_FT_ENUM,   /* one of choices ("a|b"), stored as int index */
    CFG_FT_BOOL,   /* true or false (also yes/no, on/off, 1/0), stored as int */
    CFG_FT_RANGE,  /* [low, high], or one number for both, with units (units),
                    * stored as double[2]; each end is checked as a
                    * CFG_FT_DOUBLE (bounds, figure guard) and low <= high */
    CFG_FT_TEXT,   /* non-empty text such as a file name, stored as
                    * char[CFG_TEXT_MAX] */
    CFG_FT_LIST,   /* a sequence, left to the caller */
    CFG_FT_MAP,    /* a mapping, left to the caller */
    CFG_FT_ANY,    /* any node, left to the caller */
} cfg_ftype;

typedef enum { CFG_B_NONE, CFG_B_GT, CFG_B_GE, CFG_B_LT, CFG_B_LE } cfg_bound;

#define CFG_TEXT_MAX 1024 /* CFG_FT_TEXT storage, NUL included */

/* One key of an object: its name, kind, whether required, the default of
 * an optional scalar, bounds (checked on given values only) and where the
 * value goes in the struct. */
typedef struct {
    const char *key;
    cfg_ftype type;
    units_kind units;    /* CFG_FT_DOUBLE */
    int required;
    double def;          /* default of an optional scalar (-1: "absent" sentinel;
                          * both ends of a CFG_FT_RANGE; a CFG_FT_TEXT's is "") */
    cfg_bound lo_op;     /* lower bound */
    double lo;
    cfg_bound hi_op;     /* upper bound */
    double hi;
    size_t off;          /* offset of the field in the struct */
    const char *choices; /* CFG_FT_ENUM: "a|b|c" */
} cfg_field;

/* Row constructors for cfg_field tables, one per kind, so that every loader
 * (runs here, eval specs, train configs, generator specs) writes its rows
 * alike: k the key, req 1 when required, d the default, lop/lo and hop/hi
 * the bounds (CFG_B_NONE, 0 for none), T the struct and m its member. */
#define CFG_ROW_NUM(k, u, req, d, lop, lo, hop, hi, T, m) \
    {k, CFG_FT_DOUBLE, u, req, d, lop, lo, hop, hi, offsetof(T, m), NULL}
#define CFG_ROW_RANGE(k, u, req, d, lop, lo, hop, hi, T, m) \
    {k, CFG_FT_RANGE, u, req, d, lop, lo, hop, hi, offsetof(T, m), NULL}
#define CFG_ROW_INT(k, req, d, lop, lo, hop, hi, T, m) \
    {k, CFG_FT_INT, UNITS_COUNT, req, d, lop, lo, hop, hi, offsetof(T, m), NULL}
#define CFG_ROW_BOOL(k, req, d, T, m) \
    {k, CFG_FT_BOOL, UNITS_NUMBER, req, d, CFG_B_NONE, 0, CFG_B_NONE, 0, offsetof(T, m), NULL}
#define CFG_ROW_NAME(k, req, T, m) \
    {k, CFG_FT_NAME, UNITS_NUMBER, req, 0, CFG_B_NONE, 0, CFG_B_NONE, 0, offsetof(T, m), NULL}
#define CFG_ROW_TEXT(k, req, T, m) \
    {k, CFG_FT_TEXT, UNITS_NUMBER, req, 0, CFG_B_NONE, 0, CFG_B_NONE, 0, offsetof(T, m), NULL}
#define CFG_ROW_ENUM(k, ch, req, d, T, m) \
    {k, CFG_FT_ENUM, UNITS_NUMBER, req, d, CFG_B_NONE, 0, CFG_B_NONE, 0, offsetof(T, m), ch}
/* A key whose value the caller reads itself (a list, a map, any node). */
#define CFG_ROW_NODE(k, ft, req) {k, ft, UNITS_NUMBER, req, 0, CFG_B_NONE, 0, CFG_B_NONE, 0, 0, NULL}

typedef struct cfg_doc cfg_doc;

/* cfg_doc_load parses the one YAML document of the file at path. Returns
 * it, or NULL with "file[:line:col]: message" in err[errlen] (cannot open,
 * syntax error, a second document). cfg_doc_free releases it (NULL ok). */
cfg_doc *cfg_doc_load(const char *path, char *err, size_t errlen);
void cfg_doc_free(cfg_doc *d);

/* cfg_doc_root returns the root node, or NULL when the file is empty;
 * cfg_doc_node returns the node with libyaml id `id` (for walking lists
 * and mappings with libyaml's own types). Both are owned by d. */
struct yaml_node_s *cfg_doc_root(cfg_doc *d);
struct yaml_node_s *cfg_doc_node(cfg_doc *d, int id);

/* cfg_doc_walk checks mapping `map` against the table f[nf] exactly as the
 * run loader does: scalar fields are parsed into obj (optional ones get
 * their default first), and each key's key and value nodes go to keys[i]
 * and vals[i] (NULL when absent). `path` is the key path of the mapping
 * ("" at the top), `what` names it in "expected X" messages. Returns 0, or
 * -1 with "file:line:col: path.key: message" in err[errlen]. */
int cfg_doc_walk(cfg_doc *d, struct yaml_node_s *map, const char *path, const char *what,
                 const cfg_field *f, int nf, void *obj, struct yaml_node_s **keys,
                 struct yaml_node_s **vals, char *err, size_t errlen);

/* cfg_fields_default writes the default of every optional row of f[nf]
 * into obj, as a walk does before it reads a mapping, for callers that
 * start from the defaults without a document. */
void cfg_fields_default(const cfg_field *f, int nf, void *obj);

/* cfg_doc_value parses one scalar node v (a list item, say) as field f
 * would be and stores it into obj at f->off; messages as cfg_doc_walk. */
int cfg_doc_value(cfg_doc *d, const cfg_field *f, struct yaml_node_s *v, const char *path,
                  void *obj, char *err, size_t errlen);

/* cfg_doc_fail writes "file:line:col: path: message" (printf-style) for
 * node `at` (no position when NULL) into err[errlen] and returns -1. */
int cfg_doc_fail(cfg_doc *d, const struct yaml_node_s *at, const char *path, char *err,
                 size_t errlen, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* cfg_doc_path returns the file name as given to cfg_doc_load. */
const char *cfg_doc_path(const cfg_doc *d);

#endif
