/* schema_ctx.h -- the walker's loading context (internal; for the loaders
 * in env/: config.c's runs and placements, schema.c's cfg_doc).
 *
 * A cfg_ctx holds the files of one load (the top file and what it
 * includes, each parsed whole into a libyaml document that keeps its
 * marks), the file whose nodes are being walked (for messages), the stack
 * of files being included (for cycles) and the caller's error buffer.
 * Every function that fails writes "file:line:col: key.path: message" into
 * c->err and returns -1 (or NULL); the first error stops a load.
 */
#ifndef STRATA_SCHEMA_CTX_H
#define STRATA_SCHEMA_CTX_H

#include <stddef.h>
#include <sys/types.h>
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

typedef struct {
    char *path; /* as shown in messages */
    yaml_document_t doc;
    int has_doc;
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
} cfg_ctx;

/* cfg_ctx_init empties c and points its messages at err[errlen] (which it
 * clears); cfg_ctx_free releases every file and document of c. */
void cfg_ctx_init(cfg_ctx *c, char *err, size_t errlen);
void cfg_ctx_free(cfg_ctx *c);

/* cfg_say writes a message (printf-style) into c->err, as is. */
void cfg_say(cfg_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cfg_where writes "file:line:col" of node n of file f (just "file" when n
 * is NULL) into buf[len]. */
void cfg_where(const cfg_ctx *c, int f, const yaml_node_t *n, char *buf, size_t len);

/* cfg_fail writes "file:line:col: path: message" for node `at` of the
 * current file (no position when at is NULL, no path when path is empty)
 * and returns -1. */
int cfg_fail(cfg_ctx *c, const yaml_node_t *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Nodes of the current file: by libyaml id, a list's length and item i. */
yaml_node_t *cfg_node(cfg_ctx *c, int id);
int cfg_seq_len(const yaml_node_t *n);
yaml_node_t *cfg_seq_at(cfg_ctx *c, const yaml_node_t *n, int i);

/* cfg_describe writes what a node is ("a mapping", "a list", "an empty
 * value", or the quoted text), for "expected X, got Y" messages. */
void cfg_describe(const yaml_node_t *n, char *buf, size_t len);

/* Key paths: out = "base.key" (or "key" when base is empty), "base[i]";
 * always NUL-terminated, cut when full. */
void cfg_path_key(char *out, size_t len, const char *base, const char *key);
void cfg_path_index(char *out, size_t len, const char *base, int i);

/* cfg_find_name returns the index of name among n structs of `stride`
 * bytes at base whose first member is the name, or -1. */
int cfg_find_name(const char *name, const void *base, size_t stride, int n);

/* cfg_unknown_name fails at `at` with "unknown <what> 'word'" and either a
 * close name among the n at base (stride as above) or the list of them. */
int cfg_unknown_name(cfg_ctx *c, const yaml_node_t *at, const char *path, const char *what,
                     const char *word, const void *base, size_t stride, int n);

/* cfg_check_dup fails when name i of base (stride as above) equals one of
 * names 0..i-1, pointing at nodes[i] and naming where nodes[j] is. */
int cfg_check_dup(cfg_ctx *c, const void *base, size_t stride, int i,
                  yaml_node_t *const *nodes, const char *path, const char *what);

/* cfg_scalar_text points *text at scalar v's text ("" when empty or null),
 * refusing other nodes ("expected <what>") and embedded NULs. */
int cfg_scalar_text(cfg_ctx *c, yaml_node_t *v, const char *path, const char *what,
                    const char **text);

/* cfg_parse_field and cfg_walk_map: cfg_doc_value and cfg_doc_walk on the
 * current file of c (see schema.h). */
int cfg_parse_field(cfg_ctx *c, const cfg_field *f, yaml_node_t *v, const char *path,
                    void *obj);
int cfg_walk_map(cfg_ctx *c, yaml_node_t *map, const char *path, const char *what,
                 const cfg_field *f, int nf, void *obj, yaml_node_t **keys,
                 yaml_node_t **vals);

/* cfg_add_file appends an empty file record named path (for text held in
 * memory); returns its index, or -1 when out of memory (no message). */
int cfg_add_file(cfg_ctx *c, const char *path);

/* cfg_parse_doc parses text[len] into file idx's document: one YAML
 * document, syntax errors at their mark, lists and mappings nested at most
 * CFG_MAX_NESTING deep. Returns 0 or -1. */
int cfg_parse_doc(cfg_ctx *c, int idx, const char *text, size_t len);

/* cfg_root_of makes file idx current and returns its root, which must be a
 * mapping (`what` names it in messages), or NULL. */
yaml_node_t *cfg_root_of(cfg_ctx *c, int idx, const char *what);

/* cfg_open_file reads and parses path into a new file record. `from` (file
 * index, node, key path) names the include that asks for it, or from < 0
 * for the top file; a file already on c->stack is an include cycle. The
 * file is read with file_read (a regular file of at most FILE_MAX_CONFIG
 * bytes); an include beyond CFG_MAX_INCLUDES or CFG_MAX_LOAD_BYTES is
 * refused at the include's node. Returns the new file's index, or -1. */
int cfg_open_file(cfg_ctx *c, const char *path, int from, yaml_node_t *from_node,
                  const char *from_key);

/* cfg_open_include opens the file named by scalar node `name` of file
 * `from` (key path `path`), relative to the directory of `from` unless
 * absolute, through cfg_open_file. Returns its index, or -1. */
int cfg_open_include(cfg_ctx *c, int from, yaml_node_t *name, const char *path);

#endif
