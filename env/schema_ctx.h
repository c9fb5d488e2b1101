/* schema_ctx.h -- the walker's loading context (internal; for the loaders
 * in env/: config.c's runs and placements, schema.c's cfg_doc).
 *
 * A cfg_ctx holds the files of one load (the top file and what it
 * includes, each parsed whole into a libyaml document that keeps its
 * marks; or one JSON value a caller parsed with jansson, walked as it is), the file whose nodes are being walked (for messages), the stack
 * of files being included (for cycles) and the caller's error buffer.
 * Every function that fails writes "file:line:col: key.path: message" into
 * c->err and returns -1 (or NULL); the first error stops a load.
 */
#ifndef STRATA_SCHEMA_CTX_H
#define STRATA_SCHEMA_CTX_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include <yaml.h>

#include "env/schema.h"

#define CFG_MAX_DEPTH 64  /* include nesting */
#define CFG_PATH_MAX 4096 /* a file name, NUL included */

/* Bounds on one load (docs/reliability.md): how many includes in all, how
 * many bytes all its files hold together (each one is also limited to
 * FILE_MAX_CONFIG, base/file.h), and how deep lists and mappings may nest
 * in one file (libyaml's time grows with the square of the nesting). */
#define CFG_MAX_INCLUDES 256
#define CFG_MAX_LOAD_BYTES ((size_t)16 << 20)
#define CFG_MAX_NESTING 64

/* A node of a file being walked: a libyaml yaml_node_t in a YAML file, a
 * jansson json_t in a JSON one (cfg_file.json set). Never dereferenced but
 * through the helpers below, which look at the kind of the current file;
 * in a JSON file, an object's key has no node of its own and the value's
 * node stands for it. */
typedef struct cfg_item cfg_item;

/* What a node is, whatever the file's syntax. */
typedef enum { CFG_K_SCALAR, CFG_K_SEQ, CFG_K_MAP } cfg_kind;

typedef struct {
    char *path; /* as shown in messages */
    yaml_document_t doc;
    int has_doc;
    const json_t *json; /* the JSON front end: the root value (borrowed), or
                         * NULL for a YAML file */
    dev_t dev; /* identity, for include cycles */
    ino_t ino;
} cfg_file;

typedef struct {
    cfg_file **files; /* [n_files] */
    int n_files;
    int stack[CFG_MAX_DEPTH]; /* files being loaded, outermost first */
    int depth;
    int cur; /* file whose nodes are being walked (for messages) */
    char *err;
    size_t errlen;
    int n_includes; /* includes opened so far (CFG_MAX_INCLUDES) */
    size_t bytes;   /* bytes of every file read so far (CFG_MAX_LOAD_BYTES) */
    char num[48];   /* cfg_scalar_text's text of a JSON number */
} cfg_ctx;

/* cfg_ctx_init empties c and points its messages at err[errlen] (which it
 * clears); cfg_ctx_free releases every file and document of c. */
void cfg_ctx_init(cfg_ctx *c, char *err, size_t errlen);
void cfg_ctx_free(cfg_ctx *c);

/* cfg_say writes a message (printf-style) into c->err, as is. */
void cfg_say(cfg_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cfg_where writes "file:line:col" of node n of file f (just "file" when n
 * is NULL) into buf[len]. A JSON value has no marks: "file:1:1", as a
 * document built in memory has. */
void cfg_where(const cfg_ctx *c, int f, const cfg_item *n, char *buf, size_t len);

/* cfg_fail writes "file:line:col: path: message" for node `at` of the
 * current file (no position when at is NULL, no path when path is empty)
 * and returns -1. */
int cfg_fail(cfg_ctx *c, const cfg_item *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Nodes of the current file: what node n is, a list's length and item i
 * (n must be a list). */
cfg_kind cfg_kind_of(const cfg_ctx *c, const cfg_item *n);
int cfg_seq_len(const cfg_ctx *c, const cfg_item *n);
cfg_item *cfg_seq_at(cfg_ctx *c, const cfg_item *n, int i);

/* cfg_describe writes what a node of the current file is ("a mapping", "a
 * list", "an empty value", or the quoted text), for "expected X, got Y"
 * messages. */
void cfg_describe(const cfg_ctx *c, const cfg_item *n, char *buf, size_t len);

/* Key paths: out = "base.key" (or "key" when base is empty), "base[i]";
 * always NUL-terminated, cut when full. */
void cfg_path_key(char *out, size_t len, const char *base, const char *key);
void cfg_path_index(char *out, size_t len, const char *base, int i);

/* cfg_find_name returns the index of name among n structs of `stride`
 * bytes at base whose first member is the name, or -1. */
int cfg_find_name(const char *name, const void *base, size_t stride, int n);

/* cfg_unknown_name fails at `at` with "unknown <what> 'word'" and either a
 * close name among the n at base (stride as above) or the list of them. */
int cfg_unknown_name(cfg_ctx *c, const cfg_item *at, const char *path, const char *what,
                     const char *word, const void *base, size_t stride, int n);

/* cfg_check_dup fails when name i of base (stride as above) equals one of
 * names 0..i-1, pointing at nodes[i] and naming where nodes[j] is. */
int cfg_check_dup(cfg_ctx *c, const void *base, size_t stride, int i,
                  cfg_item *const *nodes, const char *path, const char *what);

/* cfg_scalar_text points *text at scalar v's text ("" when empty or null),
 * refusing other nodes ("expected <what>") and embedded NULs. A JSON value
 * reads as a YAML reader would read it from JSON text: a string as a
 * quoted scalar; a number as jansson prints it (17 significant digits,
 * ".0" on an integral real, held in c->num until the next call), true,
 * false and null as plain scalars. */
int cfg_scalar_text(cfg_ctx *c, cfg_item *v, const char *path, const char *what,
                    const char **text);

/* cfg_parse_field and cfg_walk_map: cfg_doc_value and cfg_doc_walk on the
 * current file of c (see schema.h). */
int cfg_parse_field(cfg_ctx *c, const cfg_field *f, cfg_item *v, const char *path,
                    void *obj);
int cfg_walk_map(cfg_ctx *c, cfg_item *map, const char *path, const char *what,
                 const cfg_field *f, int nf, void *obj, cfg_item **keys,
                 cfg_item **vals);

/* cfg_add_file appends an empty file record named path (for text held in
 * memory); returns its index, or -1 when out of memory (no message). */
int cfg_add_file(cfg_ctx *c, const char *path);

/* cfg_parse_doc parses text[len] into file idx's document: one YAML
 * document, syntax errors at their mark, lists and mappings nested at most
 * CFG_MAX_NESTING deep. Returns 0 or -1. */
int cfg_parse_doc(cfg_ctx *c, int idx, const char *text, size_t len);

/* cfg_add_json appends a file record named path whose content is the JSON
 * value root (borrowed: it must outlive the load); returns its index, or
 * -1 when out of memory (no message). */
int cfg_add_json(cfg_ctx *c, const char *path, const json_t *root);

/* cfg_root_of makes file idx current and returns its root, which must be a
 * mapping (`what` names it in messages), or NULL. cfg_file_root returns
 * file idx's root as it is (NULL when empty). */
cfg_item *cfg_root_of(cfg_ctx *c, int idx, const char *what);
cfg_item *cfg_file_root(cfg_ctx *c, int idx);

/* cfg_open_file reads and parses path into a new file record. `from` (file
 * index, node, key path) names the include that asks for it, or from < 0
 * for the top file; a file already on c->stack is an include cycle. The
 * file is read with file_read (a regular file of at most FILE_MAX_CONFIG
 * bytes); an include beyond CFG_MAX_INCLUDES or CFG_MAX_LOAD_BYTES is
 * refused at the include's node. Returns the new file's index, or -1. */
int cfg_open_file(cfg_ctx *c, const char *path, int from, cfg_item *from_node,
                  const char *from_key);

/* cfg_open_include opens the file named by scalar node `name` of file
 * `from` (key path `path`), relative to the directory of `from` unless
 * absolute, through cfg_open_file. Returns its index, or -1. */
int cfg_open_include(cfg_ctx *c, int from, cfg_item *name, const char *path);

#endif
