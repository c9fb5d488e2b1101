/* config.c -- loading runs and placements from YAML (see config.h).
 *
 * Each file is parsed whole with libyaml's document API; its nodes keep
 * their line/column marks, so every message can point at the offending
 * value. Every object (top level, cluster, type, zone, link, node, job,
 * layer, placement stage) is described by one table of cfg_field rows: key,
 * field type, unit kind, required or default, bounds, offset into the C
 * struct. One walker, walk_map(), checks a mapping against its table
 * (unknown keys with a "did you mean", duplicates, wrong node types,
 * missing required keys, units, bounds) and fills the struct; the code
 * around it only handles lists, name references and cross-object rules.
 *
 * The first error stops loading; it is written as
 * "file:line:col: key.path: message" with 1-based line and column.
 * Included files are loaded depth-first; their documents stay alive until
 * the run is built, since the walk over the cluster and jobs happens after
 * every top-level key has been collected from every file.
 */
#include "env/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "env/place.h"
#include "env/units.h"

/* ---------------------------------------------------------------------------
 * Loaded files and the error context
 * ------------------------------------------------------------------------ */

#define CFG_MAX_DEPTH 64 /* include nesting */
#define CFG_MAX_FIGURE 1e18  /* largest magnitude of any figure */
#define CFG_MIN_FIGURE 1e-12 /* smallest non-zero magnitude */
#define CFG_PATH_MAX 4096

typedef struct {
    char *path; /* as shown in messages */
    yaml_document_t doc;
    int has_doc;
    dev_t dev; /* identity, for include cycles */
    ino_t ino;
} cfg_file;

enum { TOP_MODEL, TOP_OBJECTIVE, TOP_INCLUDE, TOP_CLUSTER, TOP_JOB, TOP_JOBS, N_TOP };

/* Where a top-level key was defined. */
typedef struct {
    int file; /* -1 when not seen yet */
    yaml_node_t *key, *val;
} cfg_origin;

typedef struct {
    cfg_file **files; /* [n_files] */
    int n_files;
    int stack[CFG_MAX_DEPTH]; /* files being loaded, outermost first */
    int depth;
    int cur; /* file whose nodes are being walked (for messages) */
    char *err;
    size_t errlen;
    int no_include;          /* refuse include: (buffers) */
    cfg_origin top[N_TOP];   /* objective, cluster, job, jobs across files */
    int objective;           /* value of the objective key, when seen */
} cfg_ctx;

static void ctx_init(cfg_ctx *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->err = err;
    c->errlen = errlen;
    for (int i = 0; i < N_TOP; i++)
        c->top[i].file = -1;
    if (err && errlen)
        err[0] = '\0';
}

static void ctx_free(cfg_ctx *c)
{
    for (int i = 0; i < c->n_files; i++) {
        if (c->files[i]->has_doc)
            yaml_document_delete(&c->files[i]->doc);
        free(c->files[i]->path);
        free(c->files[i]);
    }
    free(c->files);
}

/* say writes a message into c->err (printf-style). */
static void say(cfg_ctx *c, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
}

/* where writes "file:line:col" of node n of file f into buf[len]. */
static void where(const cfg_ctx *c, int f, const yaml_node_t *n, char *buf, size_t len)
{
    if (n)
        snprintf(buf, len, "%s:%lu:%lu", c->files[f]->path,
                 (unsigned long)n->start_mark.line + 1,
                 (unsigned long)n->start_mark.column + 1);
    else
        snprintf(buf, len, "%s", c->files[f]->path);
}

/* fail writes "file:line:col: path: message" for node `at` of the current
 * file (no position when at is NULL, no path when path is empty) and
 * returns -1. */
static int fail(cfg_ctx *c, const yaml_node_t *at, const char *path, const char *fmt, ...)
{
    char msg[1024], pos[CFG_PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    where(c, c->cur, at, pos, sizeof pos);
    if (path && *path)
        say(c, "%s: %s: %s", pos, path, msg);
    else
        say(c, "%s: %s", pos, msg);
    return -1;
}

/* ---------------------------------------------------------------------------
 * Small helpers on nodes, paths and names
 * ------------------------------------------------------------------------ */

static yaml_node_t *get(cfg_ctx *c, int id)
{
    return yaml_document_get_node(&c->files[c->cur]->doc, id);
}

static const char *sval(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* is_empty: an empty scalar or a plain null ("~", "null"). */
static int is_empty(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE)
        return 0;
    if (n->data.scalar.length == 0)
        return 1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *s = sval(n);
    return strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

/* describe writes what a node is, for "expected X, got Y" messages. */
static void describe(const yaml_node_t *n, char *buf, size_t len)
{
    if (n->type == YAML_MAPPING_NODE)
        snprintf(buf, len, "a mapping");
    else if (n->type == YAML_SEQUENCE_NODE)
        snprintf(buf, len, "a list");
    else if (is_empty(n))
        snprintf(buf, len, "an empty value");
    else {
        size_t l = n->data.scalar.length;
        snprintf(buf, len, "\"%.*s%s\"", (int)(l > 40 ? 40 : l), sval(n), l > 40 ? "..." : "");
    }
}

static int seq_len(const yaml_node_t *n)
{
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(cfg_ctx *c, const yaml_node_t *n, int i)
{
    return get(c, n->data.sequence.items.start[i]);
}

/* put appends src to out[*n] (room len, always NUL-terminated, cut when
 * full). The key paths below are built for every key a document holds and
 * read only on error, so they are assembled by hand: snprintf was a sixth
 * of the daemon's parse time. */
static void put(char *out, size_t len, size_t *n, const char *src)
{
    size_t k = strlen(src);
    if (*n + k >= len)
        k = len - 1 - *n;
    memcpy(out + *n, src, k);
    *n += k;
    out[*n] = '\0';
}

static void path_key(char *out, size_t len, const char *base, const char *key)
{
    size_t n = 0;
    out[0] = '\0';
    if (base && *base) {
        put(out, len, &n, base);
        put(out, len, &n, ".");
    }
    put(out, len, &n, key);
}

static void path_index(char *out, size_t len, const char *base, int i)
{
    char num[24] = "[";
    size_t k = 1 + units_put_long(num + 1, i);
    num[k] = ']';
    num[k + 1] = '\0';
    size_t n = 0;
    out[0] = '\0';
    put(out, len, &n, base);
    put(out, len, &n, num);
}

/* lev returns the case-insensitive edit distance between a and b, or a
 * large number when either is longer than 63 characters. */
static int lev(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 1000;
    int row[64], prev[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
        }
        memcpy(prev, row, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

/* close_enough: whether a candidate at distance d from word is worth
 * suggesting. */
static int close_enough(const char *word, int d)
{
    int l = (int)strlen(word);
    return d < l && d <= (l >= 6 ? 2 : 1);
}

/* prefix_of: whether the shorter of a and b (3 characters or more) starts
 * the longer one, ignoring case ("memory" and "mem"). */
static int prefix_of(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), m = la < lb ? la : lb;
    return m >= 3 && strncasecmp(a, b, m) == 0;
}

/* distance: lev(), but a prefix match counts as 1 */
static int distance(const char *word, const char *cand)
{
    int d = lev(word, cand);
    return d > 1 && prefix_of(word, cand) ? 1 : d;
}

/* suggest_name returns the name closest to word among n structs of `stride`
 * bytes starting at base whose first member is the name, or NULL. */
static const char *suggest_name(const char *word, const void *base, size_t stride, int n)
{
    const char *best = NULL;
    int bd = 1 << 30;
    for (int i = 0; i < n; i++) {
        const char *cand = (const char *)base + (size_t)i * stride;
        int d = distance(word, cand);
        if (d < bd) {
            bd = d;
            best = cand;
        }
    }
    return best && close_enough(word, bd) ? best : NULL;
}

/* list_names writes "a, b, c" (truncated with ", ...") into buf[len]. */
static void list_names(const void *base, size_t stride, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = (const char *)base + (size_t)i * stride;
        if (used + strlen(name) + 8 >= len) {
            snprintf(buf + used, len - used, ", ...");
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", name);
    }
}

/* unknown_name fails at node `at` with "unknown <what> 'x'" and either a
 * suggestion or the list of declared names. */
static int unknown_name(cfg_ctx *c, const yaml_node_t *at, const char *path, const char *what,
                        const char *word, const void *base, size_t stride, int n)
{
    const char *s = suggest_name(word, base, stride, n);
    if (s)
        return fail(c, at, path, "unknown %s '%s' (did you mean '%s'?)", what, word, s);
    char names[400];
    list_names(base, stride, n, names, sizeof names);
    return fail(c, at, path, "unknown %s '%s' (declared: %s)", what, word, names);
}

/* find_name returns the index of name among n structs (name first), or -1. */
static int find_name(const char *name, const void *base, size_t stride, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, (const char *)base + (size_t)i * stride) == 0)
            return i;
    return -1;
}

/* ---------------------------------------------------------------------------
 * The declarative tables and the generic walker
 * ------------------------------------------------------------------------ */

/* cfg_ftype, cfg_bound, cfg_field and the CFG_ROW_* row constructors are
 * declared in config.h (other loaders reuse the walker through cfg_doc, at
 * the end of this file). */

static const char *bound_op(cfg_bound b)
{
    switch (b) {
    case CFG_B_GT: return ">";
    case CFG_B_GE: return ">=";
    case CFG_B_LT: return "<";
    case CFG_B_LE: return "<=";
    case CFG_B_NONE: break;
    }
    return "";
}

static int bound_ok(cfg_bound b, double lim, double v)
{
    switch (b) {
    case CFG_B_GT: return v > lim;
    case CFG_B_GE: return v >= lim;
    case CFG_B_LT: return v < lim;
    case CFG_B_LE: return v <= lim;
    case CFG_B_NONE: break;
    }
    return 1;
}

/* scalar_text gets the text of scalar v for field path, refusing non-
 * scalars (with "expected <what>") and embedded NUL characters. Empty and
 * null scalars give "". */
static int scalar_text(cfg_ctx *c, yaml_node_t *v, const char *path, const char *what,
                       const char **text)
{
    char d[96];
    if (v->type != YAML_SCALAR_NODE) {
        describe(v, d, sizeof d);
        return fail(c, v, path, "expected %s, got %s", what, d);
    }
    if (strlen(sval(v)) != v->data.scalar.length)
        return fail(c, v, path, "expected %s, got a value with a NUL character", what);
    *text = is_empty(v) ? "" : sval(v);
    return 0;
}

/* short_text reads scalar v as non-empty text shorter than max bytes
 * (`what` names it in "expected ...", `noun` in "... is longer than"),
 * pointing *text into the document. Returns 0 or -1 with the message set. */
static int short_text(cfg_ctx *c, yaml_node_t *v, const char *path, const char *what,
                      const char *noun, size_t max, const char **text)
{
    if (scalar_text(c, v, path, what, text))
        return -1;
    if (!**text)
        return fail(c, v, path, "expected %s, got an empty value", what);
    if (strlen(*text) >= max)
        return fail(c, v, path, "%s is longer than %d characters", noun, (int)max - 1);
    return 0;
}

/* parse_field checks value node v of field f (key path `path`) and, for
 * scalar fields and ranges, stores it into obj. A range's ends are checked
 * as CFG_FT_DOUBLE values (key path `path[0]`, `path[1]`), so they meet the
 * row's bounds and the figure guard. Returns 0 or -1 (message set). */
static int parse_field(cfg_ctx *c, const cfg_field *f, yaml_node_t *v, const char *path,
                       void *obj)
{
    char d[96], msg[512];
    const char *text;
    switch (f->type) {
    case CFG_FT_LIST:
        if (v->type == YAML_SEQUENCE_NODE)
            return 0;
        describe(v, d, sizeof d);
        return fail(c, v, path, "expected a list, got %s", d);
    case CFG_FT_MAP:
        if (v->type == YAML_MAPPING_NODE)
            return 0;
        describe(v, d, sizeof d);
        return fail(c, v, path, "expected a mapping, got %s", d);
    case CFG_FT_ANY:
        return 0;
    case CFG_FT_DOUBLE:
    case CFG_FT_INT: {
        units_kind kind = f->type == CFG_FT_INT ? UNITS_COUNT : f->units;
        if (scalar_text(c, v, path, units_expect(kind), &text))
            return -1;
        double x;
        if (units_parse(kind, text, &x, msg, sizeof msg))
            return fail(c, v, path, "%s", msg);
        int lo = bound_ok(f->lo_op, f->lo, x), hi = bound_ok(f->hi_op, f->hi, x);
        if (!lo || !hi) {
            char b[128];
            if (f->lo_op != CFG_B_NONE && f->hi_op != CFG_B_NONE)
                snprintf(b, sizeof b, "%s %g and %s %g", bound_op(f->lo_op), f->lo,
                         bound_op(f->hi_op), f->hi);
            else if (f->lo_op != CFG_B_NONE)
                snprintf(b, sizeof b, "%s %g", bound_op(f->lo_op), f->lo);
            else
                snprintf(b, sizeof b, "%s %g", bound_op(f->hi_op), f->hi);
            return fail(c, v, path, "must be %s, got \"%s\"", b, text);
        }
        /* Every figure the model multiplies is kept within [1e-12, 1e18]
         * (zero aside), so that no product of them -- a cost, a training
         * time -- can overflow a double, whatever a file or request says. */
        if (f->type == CFG_FT_DOUBLE && x != 0.0 && (fabs(x) > CFG_MAX_FIGURE ||
                                                    fabs(x) < CFG_MIN_FIGURE))
            return fail(c, v, path, "\"%s\" is absurdly %s: figures must lie between %g "
                        "and %g (or be 0)", text, fabs(x) > CFG_MAX_FIGURE ? "large" : "small",
                        CFG_MIN_FIGURE, CFG_MAX_FIGURE);
        if (f->type == CFG_FT_INT)
            *(int *)((char *)obj + f->off) = (int)x;
        else
            *(double *)((char *)obj + f->off) = x;
        return 0;
    }
    case CFG_FT_NAME: {
        if (short_text(c, v, path, "a name", "name", MODEL_NAME_MAX, &text))
            return -1;
        for (const char *p = text; *p; p++)
            if (*p == ',' || (unsigned char)*p < 0x20 || *p == 0x7f)
                return fail(c, v, path,
                            "a name cannot contain commas or control characters, got \"%s\"",
                            text);
        memcpy((char *)obj + f->off, text, strlen(text) + 1);
        return 0;
    }
    case CFG_FT_ENUM: {
        if (scalar_text(c, v, path, "a name", &text))
            return -1;
        const char *ch = f->choices;
        for (int i = 0; *ch; i++) {
            size_t l = strcspn(ch, "|");
            if (strlen(text) == l && strncmp(text, ch, l) == 0) {
                *(int *)((char *)obj + f->off) = i;
                return 0;
            }
            ch += l + (ch[l] == '|');
        }
        char list[128];
        size_t k = 0;
        for (ch = f->choices; *ch && k + 3 < sizeof list; ch++) {
            if (*ch == '|') {
                list[k++] = ',';
                list[k++] = ' ';
            } else
                list[k++] = *ch;
        }
        list[k] = '\0';
        return fail(c, v, path, "unsupported value \"%s\" (expected one of: %s)", text, list);
    }
    case CFG_FT_BOOL: {
        if (scalar_text(c, v, path, "true or false", &text))
            return -1;
        int *b = (int *)((char *)obj + f->off);
        if (!strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcasecmp(text, "on") ||
            !strcmp(text, "1"))
            *b = 1;
        else if (!strcasecmp(text, "false") || !strcasecmp(text, "no") ||
                 !strcasecmp(text, "off") || !strcmp(text, "0"))
            *b = 0;
        else {
            describe(v, d, sizeof d);
            return fail(c, v, path, "expected true or false, got %s", d);
        }
        return 0;
    }
    case CFG_FT_RANGE: {
        /* each end is parsed as the plain number field it stands for */
        cfg_field one = *f;
        double r[2];
        one.type = CFG_FT_DOUBLE;
        one.off = 0;
        if (v->type == YAML_SCALAR_NODE) {
            if (parse_field(c, &one, v, path, &r[0]))
                return -1;
            r[1] = r[0];
        } else if (v->type == YAML_SEQUENCE_NODE && seq_len(v) == 2) {
            char ipath[1100];
            for (int i = 0; i < 2; i++) {
                path_index(ipath, sizeof ipath, path, i);
                if (parse_field(c, &one, seq_at(c, v, i), ipath, &r[i]))
                    return -1;
            }
            if (r[1] < r[0])
                return fail(c, v, path, "the high end %g is below the low end %g", r[1], r[0]);
        } else {
            describe(v, d, sizeof d);
            return fail(c, v, path, "expected %s, or a pair [low, high] of them, got %s",
                        units_expect(f->units), d);
        }
        memcpy((char *)obj + f->off, r, sizeof r);
        return 0;
    }
    case CFG_FT_TEXT: {
        if (short_text(c, v, path, "text", "text", CFG_TEXT_MAX, &text))
            return -1;
        memcpy((char *)obj + f->off, text, strlen(text) + 1);
        return 0;
    }
    }
    return 0;
}

/* set_default writes field f's default at `at` (its place in the object).
 * Kept out of line: inlined into a walk over a table without ranges, the
 * range case would look to the compiler like a write past a small object. */
static __attribute__((noinline)) void set_default(const cfg_field *f, char *at)
{
    if (f->type == CFG_FT_DOUBLE)
        *(double *)at = f->def;
    else if (f->type == CFG_FT_INT || f->type == CFG_FT_ENUM || f->type == CFG_FT_BOOL)
        *(int *)at = (int)f->def;
    else if (f->type == CFG_FT_RANGE)
        ((double *)at)[0] = ((double *)at)[1] = f->def;
    else if (f->type == CFG_FT_TEXT)
        at[0] = '\0';
}

/* walk_map checks that `map` is a mapping whose keys all belong to the
 * table f[nf] and appear once, parses scalar fields into obj (optional ones
 * first get their default) and records each key's key and value nodes in
 * keys[] and vals[] (NULL when absent). Required keys missing are reported
 * at the mapping. `what` names the expected node ("a mapping"). Returns 0
 * or -1 with the message set. */
static int walk_map(cfg_ctx *c, yaml_node_t *map, const char *path, const char *what,
                    const cfg_field *f, int nf, void *obj, yaml_node_t **keys,
                    yaml_node_t **vals)
{
    char d[96], kpath[1024];
    if (map->type != YAML_MAPPING_NODE) {
        describe(map, d, sizeof d);
        return fail(c, map, path, "expected %s, got %s", what, d);
    }
    for (int i = 0; i < nf; i++) {
        keys[i] = vals[i] = NULL;
        if (!f[i].required && obj)
            set_default(&f[i], (char *)obj + f[i].off);
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = get(c, p->key), *v = get(c, p->value);
        if (k->type != YAML_SCALAR_NODE) {
            describe(k, d, sizeof d);
            return fail(c, k, path, "keys must be plain names, got %s", d);
        }
        const char *name = sval(k);
        path_key(kpath, sizeof kpath, path, name);
        int idx = -1;
        for (int i = 0; i < nf; i++)
            if (strcmp(f[i].key, name) == 0)
                idx = i;
        if (idx < 0) {
            const char *best = NULL;
            int bd = 1 << 30;
            for (int i = 0; i < nf; i++) {
                int dd = distance(name, f[i].key);
                if (dd < bd) {
                    bd = dd;
                    best = f[i].key;
                }
            }
            if (best && close_enough(name, bd))
                return fail(c, k, kpath, "unknown key (did you mean '%s'?)", best);
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (int i = 0; i < nf && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         f[i].key);
            return fail(c, k, kpath, "unknown key (valid keys: %s)", list);
        }
        if (keys[idx]) {
            char first[CFG_PATH_MAX + 64];
            where(c, c->cur, keys[idx], first, sizeof first);
            return fail(c, k, kpath, "duplicate key (first at %s)", first);
        }
        keys[idx] = k;
        vals[idx] = v;
        if (parse_field(c, &f[idx], v, kpath, obj))
            return -1;
    }
    for (int i = 0; i < nf; i++)
        if (f[i].required && !keys[i]) {
            path_key(kpath, sizeof kpath, path, f[i].key);
            return fail(c, map, kpath, "missing required key");
        }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

typedef struct {
    int model;     /* index in "v1" */
    int objective; /* index in "cost|jct" */
} top_in;

static const cfg_field TOP_FIELDS[N_TOP] = {
    [TOP_MODEL] = CFG_ROW_ENUM("model", "v1", 0, 0, top_in, model),
    [TOP_OBJECTIVE] = CFG_ROW_ENUM("objective", "cost|jct", 0, CFG_OBJECTIVE_COST, top_in,
                                   objective),
    [TOP_INCLUDE] = CFG_ROW_NODE("include", CFG_FT_ANY, 0),
    [TOP_CLUSTER] = CFG_ROW_NODE("cluster", CFG_FT_MAP, 0),
    [TOP_JOB] = CFG_ROW_NODE("job", CFG_FT_MAP, 0),
    [TOP_JOBS] = CFG_ROW_NODE("jobs", CFG_FT_LIST, 0),
};

enum { CL_TYPES, CL_ZONES, CL_INTER_BW, CL_INTER_LAT, CL_LINKS, CL_NODES, N_CL };
static const cfg_field CLUSTER_FIELDS[N_CL] = {
    [CL_TYPES] = CFG_ROW_NODE("types", CFG_FT_LIST, 1),
    [CL_ZONES] = CFG_ROW_NODE("zones", CFG_FT_LIST, 0),
    [CL_INTER_BW] = CFG_ROW_NUM("inter_bw", UNITS_RATE_BYTES, 0, 1.25e9, CFG_B_GT, 0, CFG_B_NONE, 0,
                                model_cluster, inter_bw),
    [CL_INTER_LAT] = CFG_ROW_NUM("inter_latency", UNITS_SECONDS, 0, 0.001, CFG_B_GE, 0, CFG_B_NONE,
                                 0, model_cluster, inter_latency),
    [CL_LINKS] = CFG_ROW_NODE("links", CFG_FT_LIST, 0),
    [CL_NODES] = CFG_ROW_NODE("nodes", CFG_FT_LIST, 0),
};

enum { TY_NAME, TY_KIND, TY_FLOPS, TY_IO_BW, TY_NET_BW, TY_MEM, TY_PRICE, TY_COUNT, N_TY };
static const cfg_field TYPE_FIELDS[N_TY] = {
    [TY_NAME] = CFG_ROW_NAME("name", 1, model_type, name),
    [TY_KIND] = CFG_ROW_ENUM("kind", "cpu|gpu", 1, 0, model_type, is_gpu),
    [TY_FLOPS] = CFG_ROW_NUM("flops", UNITS_FLOPS, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_type,
                             flops),
    [TY_IO_BW] = CFG_ROW_NUM("io_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                             model_type, io_bw),
    [TY_NET_BW] = CFG_ROW_NUM("net_bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                              model_type, net_bw),
    [TY_MEM] = CFG_ROW_NUM("mem", UNITS_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_type, mem),
    [TY_PRICE] = CFG_ROW_NUM("price", UNITS_DOLLARS, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_type,
                             price),
    /* -1: absent; then derived from the nodes (see build_cluster) */
    [TY_COUNT] = CFG_ROW_INT("count", 0, -1, CFG_B_GE, 0, CFG_B_NONE, 0, model_type, count),
};

enum { ZO_NAME, N_ZO };
static const cfg_field ZONE_FIELDS[N_ZO] = {
    [ZO_NAME] = CFG_ROW_NAME("name", 1, model_zone, name),
};

typedef struct {
    double bw, lat; /* -1: absent, then the cluster's inter_bw / inter_latency */
} link_in;

enum { LK_ZONES, LK_BW, LK_LAT, N_LK };
static const cfg_field LINK_FIELDS[N_LK] = {
    [LK_ZONES] = CFG_ROW_NODE("zones", CFG_FT_LIST, 1),
    [LK_BW] = CFG_ROW_NUM("bw", UNITS_RATE_BYTES, 0, -1, CFG_B_GT, 0, CFG_B_NONE, 0, link_in, bw),
    [LK_LAT] = CFG_ROW_NUM("latency", UNITS_SECONDS, 0, -1, CFG_B_GE, 0, CFG_B_NONE, 0, link_in,
                           lat),
};

typedef struct {
    model_node n;
    char type[MODEL_NAME_MAX];
    char zone[MODEL_NAME_MAX];
} node_in;

enum { NO_NAME, NO_TYPE, NO_UNITS, NO_PS, NO_ZONE, NO_BW, NO_LAT, NO_LOSS, N_NO };
static const cfg_field NODE_FIELDS[N_NO] = {
    [NO_NAME] = CFG_ROW_NAME("name", 1, node_in, n.name),
    [NO_TYPE] = CFG_ROW_NAME("type", 1, node_in, type),
    [NO_UNITS] = CFG_ROW_INT("units", 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, node_in, n.units),
    [NO_PS] = CFG_ROW_INT("ps_slots", 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, node_in, n.ps_slots),
    [NO_ZONE] = CFG_ROW_NAME("zone", 0, node_in, zone),
    [NO_BW] = CFG_ROW_NUM("bw", UNITS_RATE_BYTES, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, node_in, n.bw),
    [NO_LAT] = CFG_ROW_NUM("latency", UNITS_SECONDS, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, node_in,
                           n.latency),
    [NO_LOSS] = CFG_ROW_NUM("loss", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LT, 1, node_in,
                            n.loss),
};

enum { JO_NAME, JO_BATCH, JO_SAMPLES, JO_MINTP, JO_ALPHA, JO_SHARD, JO_LAYERS, JO_MEAS, N_JO };
static const cfg_field JOB_FIELDS[N_JO] = {
    [JO_NAME] = CFG_ROW_NAME("name", 1, model_job, name),
    [JO_BATCH] = CFG_ROW_NUM("batch", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_job,
                             batch),
    [JO_SAMPLES] = CFG_ROW_NUM("samples", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_job,
                               samples),
    [JO_MINTP] = CFG_ROW_NUM("min_throughput", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0,
                             model_job, min_throughput),
    [JO_ALPHA] = CFG_ROW_NUM("alpha", UNITS_FRACTION, 0, MODEL_DEFAULT_ALPHA, CFG_B_GE, 0, CFG_B_LT,
                             1, model_job, alpha),
    [JO_SHARD] = CFG_ROW_NUM("shard", UNITS_BYTES, 0, MODEL_DEFAULT_SHARD, CFG_B_GT, 0, CFG_B_NONE,
                             0, model_job, shard),
    [JO_LAYERS] = CFG_ROW_NODE("layers", CFG_FT_LIST, 1),
    [JO_MEAS] = CFG_ROW_NODE("measurements", CFG_FT_LIST, 0),
};

/* One measured throughput (docs/jobs.md): fitted by solvers/fit.h. */
enum { ME_WORKERS, ME_PS, ME_TP, N_ME };
static const cfg_field MEAS_FIELDS[N_ME] = {
    [ME_WORKERS] = CFG_ROW_INT("workers", 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, model_point, workers),
    [ME_PS] = CFG_ROW_INT("ps", 1, 0, CFG_B_GE, 1, CFG_B_NONE, 0, model_point, ps),
    [ME_TP] = CFG_ROW_NUM("throughput", UNITS_NUMBER, 1, 0, CFG_B_GT, 0, CFG_B_NONE, 0, model_point,
                          throughput),
};

enum { LA_NAME, LA_FLOPS, LA_IO, LA_ACT, LA_PARAMS, LA_MEM, N_LA };
static const cfg_field LAYER_FIELDS[N_LA] = {
    [LA_NAME] = CFG_ROW_NAME("name", 1, model_layer, name),
    [LA_FLOPS] = CFG_ROW_NUM("flops", UNITS_FLOP, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer,
                             flops),
    [LA_IO] = CFG_ROW_NUM("io", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, io),
    [LA_ACT] = CFG_ROW_NUM("act", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, act),
    [LA_PARAMS] = CFG_ROW_NUM("params", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer,
                              params),
    [LA_MEM] = CFG_ROW_NUM("mem", UNITS_BYTES, 1, 0, CFG_B_GE, 0, CFG_B_NONE, 0, model_layer, mem),
};

enum { PL_PLACEMENT, N_PL };
static const cfg_field PLACE_FIELDS[N_PL] = {
    [PL_PLACEMENT] = CFG_ROW_NODE("placement", CFG_FT_LIST, 1),
};

enum { PS_WORKERS, PS_PS, N_PS };
static const cfg_field STAGE_FIELDS[N_PS] = {
    [PS_WORKERS] = CFG_ROW_NODE("workers", CFG_FT_LIST, 1),
    [PS_PS] = CFG_ROW_NODE("ps", CFG_FT_LIST, 1),
};

/* check_dup fails when names[i] equals one of names[0..i-1] (struct
 * stride), pointing at name node nodes[i] and naming nodes[j]. */
static int check_dup(cfg_ctx *c, const void *base, size_t stride, int i,
                     yaml_node_t *const *nodes, const char *path, const char *what)
{
    const char *name = (const char *)base + (size_t)i * stride;
    int j = find_name(name, base, stride, i);
    if (j < 0)
        return 0;
    char first[CFG_PATH_MAX + 64];
    where(c, c->cur, nodes[j], first, sizeof first);
    return fail(c, nodes[i], path, "duplicate %s name '%s' (first at %s)", what, name, first);
}

/* ---------------------------------------------------------------------------
 * Reading and parsing files
 * ------------------------------------------------------------------------ */

/* read_whole reads the file at path into a malloc'd buffer (*text, *len)
 * and its identity into *st. Returns 0, or an errno value. */
static int read_whole(const char *path, char **text, size_t *len, struct stat *st)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return errno ? errno : EIO;
    if (fstat(fileno(fp), st) != 0) {
        int e = errno;
        fclose(fp);
        return e;
    }
    if (S_ISDIR(st->st_mode)) {
        fclose(fp);
        return EISDIR;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(fp);
        return ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(fp);
                return ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp)) {
                int e = errno ? errno : EIO;
                free(buf);
                fclose(fp);
                return e;
            }
            break;
        }
    }
    fclose(fp);
    *text = buf;
    *len = n;
    return 0;
}

/* add_file appends a file record named path; returns its index or -1. */
static int add_file(cfg_ctx *c, const char *path)
{
    cfg_file **nf = realloc(c->files, sizeof *nf * (size_t)(c->n_files + 1));
    if (!nf)
        return -1;
    c->files = nf;
    cfg_file *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return -1;
    }
    c->files[c->n_files] = f;
    return c->n_files++;
}

/* parse_doc parses text[len] into file idx's document. A syntax error is
 * reported at libyaml's problem mark; a second document in the stream is
 * refused. Returns 0 or -1. */
static int parse_doc(cfg_ctx *c, int idx, const char *text, size_t len)
{
    cfg_file *f = c->files[idx];
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        say(c, "%s: out of memory", f->path);
        return -1;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int ok = yaml_parser_load(&p, &f->doc);
    yaml_document_t extra;
    int extra_root = 0;
    if (ok) {
        f->has_doc = 1;
        ok = yaml_parser_load(&p, &extra);
        if (ok) {
            yaml_node_t *r = yaml_document_get_root_node(&extra);
            if (r) {
                extra_root = 1;
                say(c, "%s:%lu:%lu: only one YAML document per file is supported", f->path,
                    (unsigned long)r->start_mark.line + 1,
                    (unsigned long)r->start_mark.column + 1);
            }
            yaml_document_delete(&extra);
        }
    }
    if (!ok) {
        if (p.error == YAML_MEMORY_ERROR) {
            say(c, "%s: out of memory", f->path);
        } else if (p.error == YAML_READER_ERROR) {
            /* no mark: count lines up to the offending byte */
            size_t line = 1, col = 1;
            for (size_t i = 0; i < p.problem_offset && i < len; i++) {
                if (text[i] == '\n') {
                    line++;
                    col = 1;
                } else
                    col++;
            }
            say(c, "%s:%lu:%lu: syntax error: %s", f->path, (unsigned long)line,
                (unsigned long)col, p.problem ? p.problem : "cannot read");
        } else if (p.context) {
            say(c, "%s:%lu:%lu: syntax error: %s (%s at %lu:%lu)", f->path,
                (unsigned long)p.problem_mark.line + 1, (unsigned long)p.problem_mark.column + 1,
                p.problem ? p.problem : "invalid YAML", p.context,
                (unsigned long)p.context_mark.line + 1, (unsigned long)p.context_mark.column + 1);
        } else {
            say(c, "%s:%lu:%lu: syntax error: %s", f->path,
                (unsigned long)p.problem_mark.line + 1, (unsigned long)p.problem_mark.column + 1,
                p.problem ? p.problem : "invalid YAML");
        }
    }
    yaml_parser_delete(&p);
    return ok && !extra_root ? 0 : -1;
}

/* root_of returns the root node of file idx (which must be a mapping), or
 * NULL with the message set. */
static yaml_node_t *root_of(cfg_ctx *c, int idx, const char *what)
{
    c->cur = idx;
    yaml_node_t *r = yaml_document_get_root_node(&c->files[idx]->doc);
    if (!r) {
        say(c, "%s:1:1: the file is empty (expected %s)", c->files[idx]->path, what);
        return NULL;
    }
    if (r->type != YAML_MAPPING_NODE) {
        char d[96];
        describe(r, d, sizeof d);
        fail(c, r, "", "expected %s, got %s", what, d);
        return NULL;
    }
    return r;
}

/* open_file reads and parses path into a new file record; `from` (file
 * index, node) names the include that asked for it, or from < 0 for the
 * top file. Refuses include cycles. Returns the index or -1. */
static int open_file(cfg_ctx *c, const char *path, int from, yaml_node_t *from_node,
                     const char *from_key)
{
    char *text = NULL;
    size_t len = 0;
    struct stat st;
    int e = read_whole(path, &text, &len, &st);
    if (e) {
        if (from < 0) {
            say(c, "%s: cannot open: %s", path, strerror(e));
        } else {
            char pos[CFG_PATH_MAX + 64];
            where(c, from, from_node, pos, sizeof pos);
            say(c, "%s: cannot open: %s (included from %s)", path, strerror(e), pos);
        }
        return -1;
    }
    for (int i = 0; i < c->depth; i++) {
        cfg_file *g = c->files[c->stack[i]];
        if (g->dev == st.st_dev && g->ino == st.st_ino) {
            char chain[2048];
            size_t used = 0;
            chain[0] = '\0';
            for (int j = i; j < c->depth && used < sizeof chain; j++)
                used += (size_t)snprintf(chain + used, sizeof chain - used, "%s -> ",
                                         c->files[c->stack[j]]->path);
            if (used < sizeof chain)
                snprintf(chain + used, sizeof chain - used, "%s", path);
            free(text);
            c->cur = from;
            return fail(c, from_node, from_key, "include cycle: %s", chain);
        }
    }
    if (c->depth >= CFG_MAX_DEPTH) {
        free(text);
        c->cur = from;
        return fail(c, from_node, from_key, "includes nested more than %d deep", CFG_MAX_DEPTH);
    }
    int idx = add_file(c, path);
    if (idx < 0) {
        free(text);
        say(c, "%s: out of memory", path);
        return -1;
    }
    c->files[idx]->dev = st.st_dev;
    c->files[idx]->ino = st.st_ino;
    int rc = parse_doc(c, idx, text, len);
    free(text);
    return rc ? -1 : idx;
}

static int load_top(cfg_ctx *c, int idx);

/* load_include opens the file named by scalar node `name` (relative to the
 * directory of file `from`) and loads its top-level keys. */
static int load_include(cfg_ctx *c, int from, yaml_node_t *name, const char *path)
{
    const char *text = NULL;
    c->cur = from;
    if (scalar_text(c, name, path, "a file name", &text))
        return -1;
    if (!*text)
        return fail(c, name, path, "expected a file name, got an empty value");
    char full[CFG_PATH_MAX];
    const char *base = c->files[from]->path;
    const char *slash = strrchr(base, '/');
    int n;
    if (text[0] == '/' || !slash)
        n = snprintf(full, sizeof full, "%s", text);
    else
        n = snprintf(full, sizeof full, "%.*s/%s", (int)(slash - base), base, text);
    if (n < 0 || (size_t)n >= sizeof full)
        return fail(c, name, path, "file name too long");
    int idx = open_file(c, full, from, name, path);
    if (idx < 0)
        return -1;
    int rc = load_top(c, idx);
    c->cur = from;
    return rc;
}

/* load_top walks the top-level mapping of file idx: checks model and
 * objective, records cluster/job/jobs/objective (refusing one defined
 * twice, or job with jobs), then loads its includes depth-first. */
static int load_top(cfg_ctx *c, int idx)
{
    yaml_node_t *root = root_of(c, idx, "a mapping of top-level keys");
    if (!root)
        return -1;
    yaml_node_t *keys[N_TOP], *vals[N_TOP];
    top_in t;
    if (walk_map(c, root, "", "a mapping of top-level keys", TOP_FIELDS, N_TOP, &t, keys, vals))
        return -1;
    static const int reg[] = {TOP_OBJECTIVE, TOP_CLUSTER, TOP_JOB, TOP_JOBS};
    for (size_t r = 0; r < sizeof reg / sizeof reg[0]; r++) {
        int k = reg[r];
        if (!keys[k])
            continue;
        char first[CFG_PATH_MAX + 64];
        if (c->top[k].file >= 0) {
            where(c, c->top[k].file, c->top[k].key, first, sizeof first);
            return fail(c, keys[k], TOP_FIELDS[k].key, "defined twice (first at %s)", first);
        }
        int other = k == TOP_JOB ? TOP_JOBS : k == TOP_JOBS ? TOP_JOB : -1;
        if (other >= 0 && c->top[other].file >= 0) {
            where(c, c->top[other].file, c->top[other].key, first, sizeof first);
            return fail(c, keys[k], TOP_FIELDS[k].key,
                        "'job' and 'jobs' cannot both be given ('%s' at %s); use jobs: for "
                        "several jobs",
                        TOP_FIELDS[other].key, first);
        }
        c->top[k].file = idx;
        c->top[k].key = keys[k];
        c->top[k].val = vals[k];
        if (k == TOP_OBJECTIVE)
            c->objective = t.objective;
    }
    yaml_node_t *inc = vals[TOP_INCLUDE];
    if (!inc)
        return 0;
    if (c->no_include)
        return fail(c, keys[TOP_INCLUDE], "include",
                    "not allowed here: a request cannot name files to read; send the whole "
                    "run in one document");
    if (c->depth >= CFG_MAX_DEPTH)
        return fail(c, inc, "include", "includes nested more than %d deep", CFG_MAX_DEPTH);
    c->stack[c->depth++] = idx;
    int rc = 0;
    if (inc->type == YAML_SEQUENCE_NODE) {
        for (int i = 0; i < seq_len(inc) && rc == 0; i++) {
            char p[64];
            path_index(p, sizeof p, "include", i);
            c->cur = idx;
            rc = load_include(c, idx, seq_at(c, inc, i), p);
        }
    } else if (inc->type == YAML_SCALAR_NODE) {
        rc = load_include(c, idx, inc, "include");
    } else {
        char d[96];
        describe(inc, d, sizeof d);
        rc = fail(c, inc, "include", "expected a file name or a list of them, got %s", d);
    }
    c->depth--;
    c->cur = idx;
    return rc;
}

/* ---------------------------------------------------------------------------
 * Building the cluster
 * ------------------------------------------------------------------------ */

/* build_types reads cluster.types into cl; type mapping and count nodes
 * go to maps[] and counts[] (count NULL when absent). */
static int build_types(cfg_ctx *c, yaml_node_t *list, model_cluster *cl, yaml_node_t **maps,
                       yaml_node_t **counts)
{
    int n = seq_len(list);
    if (n == 0)
        return fail(c, list, "cluster.types", "must list at least one type");
    if (n > MODEL_MAX_TYPES)
        return fail(c, list, "cluster.types", "at most %d types are supported, got %d",
                    MODEL_MAX_TYPES, n);
    cl->types = calloc((size_t)n, sizeof *cl->types);
    if (!cl->types)
        return fail(c, list, "cluster.types", "out of memory");
    cl->n_types = n;
    yaml_node_t *names[MODEL_MAX_TYPES];
    for (int i = 0; i < n; i++) {
        char p[64];
        yaml_node_t *keys[N_TY], *vals[N_TY];
        path_index(p, sizeof p, "cluster.types", i);
        maps[i] = seq_at(c, list, i);
        if (walk_map(c, maps[i], p, "a mapping", TYPE_FIELDS, N_TY, &cl->types[i], keys, vals))
            return -1;
        names[i] = vals[TY_NAME];
        counts[i] = vals[TY_COUNT];
        char np[96];
        path_key(np, sizeof np, p, "name");
        if (check_dup(c, cl->types, sizeof *cl->types, i, names, np, "type"))
            return -1;
    }
    return 0;
}

/* build_zones reads cluster.zones, or makes the implicit zone "default"
 * when list is NULL or empty. Sets *declared. */
static int build_zones(cfg_ctx *c, yaml_node_t *list, model_cluster *cl, int *declared)
{
    int n = list ? seq_len(list) : 0;
    *declared = n > 0;
    if (n > MODEL_MAX_ZONES)
        return fail(c, list, "cluster.zones", "at most %d zones are supported, got %d",
                    MODEL_MAX_ZONES, n);
    cl->zones = calloc((size_t)(n > 0 ? n : 1), sizeof *cl->zones);
    if (!cl->zones)
        return fail(c, list, "cluster.zones", "out of memory");
    if (n == 0) {
        cl->n_zones = 1;
        snprintf(cl->zones[0].name, sizeof cl->zones[0].name, "default");
        return 0;
    }
    cl->n_zones = n;
    yaml_node_t *names[MODEL_MAX_ZONES];
    for (int i = 0; i < n; i++) {
        char p[64], np[96];
        yaml_node_t *keys[N_ZO], *vals[N_ZO];
        path_index(p, sizeof p, "cluster.zones", i);
        if (walk_map(c, seq_at(c, list, i), p, "a mapping", ZONE_FIELDS, N_ZO, &cl->zones[i],
                     keys, vals))
            return -1;
        names[i] = vals[ZO_NAME];
        path_key(np, sizeof np, p, "name");
        if (check_dup(c, cl->zones, sizeof *cl->zones, i, names, np, "zone"))
            return -1;
    }
    return 0;
}

/* zone_ref resolves a zone name held by scalar node v. */
static int zone_ref(cfg_ctx *c, const model_cluster *cl, yaml_node_t *v, const char *name,
                    const char *path, int *out)
{
    int z = find_name(name, cl->zones, sizeof *cl->zones, cl->n_zones);
    if (z < 0)
        return unknown_name(c, v, path, "zone", name, cl->zones, sizeof *cl->zones,
                            cl->n_zones);
    *out = z;
    return 0;
}

static int build_nodes(cfg_ctx *c, yaml_node_t *list, model_cluster *cl, int zones_declared)
{
    int n = seq_len(list);
    if (n == 0)
        return 0;
    if (n > MODEL_MAX_NODES)
        return fail(c, list, "cluster.nodes", "at most %d nodes are supported, got %d",
                    MODEL_MAX_NODES, n);
    cl->nodes = calloc((size_t)n, sizeof *cl->nodes);
    yaml_node_t **names = calloc((size_t)n, sizeof *names);
    if (!cl->nodes || !names) {
        free(names);
        return fail(c, list, "cluster.nodes", "out of memory");
    }
    cl->n_nodes = n;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char p[64], kp[96];
        yaml_node_t *keys[N_NO], *vals[N_NO];
        node_in in;
        memset(&in, 0, sizeof in);
        path_index(p, sizeof p, "cluster.nodes", i);
        yaml_node_t *map = seq_at(c, list, i);
        if (walk_map(c, map, p, "a mapping", NODE_FIELDS, N_NO, &in, keys, vals)) {
            rc = -1;
            break;
        }
        model_node *nd = &cl->nodes[i];
        *nd = in.n;
        names[i] = vals[NO_NAME];
        path_key(kp, sizeof kp, p, "name");
        if (check_dup(c, cl->nodes, sizeof *cl->nodes, i, names, kp, "node")) {
            rc = -1;
            break;
        }
        path_key(kp, sizeof kp, p, "type");
        nd->type = find_name(in.type, cl->types, sizeof *cl->types, cl->n_types);
        if (nd->type < 0) {
            rc = unknown_name(c, vals[NO_TYPE], kp, "type", in.type, cl->types,
                              sizeof *cl->types, cl->n_types);
            break;
        }
        path_key(kp, sizeof kp, p, "zone");
        if (!vals[NO_ZONE]) {
            if (zones_declared) {
                rc = fail(c, map, kp, "missing required key (the cluster declares zones)");
                break;
            }
            nd->zone = 0;
        } else if (zone_ref(c, cl, vals[NO_ZONE], in.zone, kp, &nd->zone)) {
            rc = -1;
            break;
        }
    }
    free(names);
    return rc;
}

static int build_links(cfg_ctx *c, yaml_node_t *list, model_cluster *cl)
{
    int n = seq_len(list), nz = cl->n_zones;
    if (n == 0)
        return 0;
    cl->zone_bw = malloc(sizeof(double) * (size_t)nz * (size_t)nz);
    cl->zone_lat = malloc(sizeof(double) * (size_t)nz * (size_t)nz);
    yaml_node_t **seen = calloc((size_t)nz * (size_t)nz, sizeof *seen);
    if (!cl->zone_bw || !cl->zone_lat || !seen) {
        free(seen);
        return fail(c, list, "cluster.links", "out of memory");
    }
    for (int i = 0; i < nz * nz; i++) {
        cl->zone_bw[i] = cl->inter_bw;
        cl->zone_lat[i] = cl->inter_latency;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char p[64], zp[96], ip[112];
        yaml_node_t *keys[N_LK], *vals[N_LK];
        link_in in;
        path_index(p, sizeof p, "cluster.links", i);
        if (walk_map(c, seq_at(c, list, i), p, "a mapping", LINK_FIELDS, N_LK, &in, keys,
                     vals)) {
            rc = -1;
            break;
        }
        yaml_node_t *zl = vals[LK_ZONES];
        path_key(zp, sizeof zp, p, "zones");
        if (seq_len(zl) != 2) {
            rc = fail(c, zl, zp, "expected two zone names, got %d", seq_len(zl));
            break;
        }
        int z[2];
        for (int k = 0; k < 2 && rc == 0; k++) {
            const char *name;
            yaml_node_t *v = seq_at(c, zl, k);
            path_index(ip, sizeof ip, zp, k);
            if (scalar_text(c, v, ip, "a zone name", &name) ||
                zone_ref(c, cl, v, name, ip, &z[k]))
                rc = -1;
        }
        if (rc)
            break;
        if (z[0] == z[1]) {
            rc = fail(c, zl, zp, "a link joins two different zones, got '%s' twice",
                      cl->zones[z[0]].name);
            break;
        }
        if (seen[z[0] * nz + z[1]]) {
            char first[CFG_PATH_MAX + 64];
            where(c, c->cur, seen[z[0] * nz + z[1]], first, sizeof first);
            rc = fail(c, zl, zp, "the link between '%s' and '%s' is already given (at %s)",
                      cl->zones[z[0]].name, cl->zones[z[1]].name, first);
            break;
        }
        seen[z[0] * nz + z[1]] = seen[z[1] * nz + z[0]] = zl;
        double bw = vals[LK_BW] ? in.bw : cl->inter_bw;
        double lat = vals[LK_LAT] ? in.lat : cl->inter_latency;
        cl->zone_bw[z[0] * nz + z[1]] = cl->zone_bw[z[1] * nz + z[0]] = bw;
        cl->zone_lat[z[0] * nz + z[1]] = cl->zone_lat[z[1] * nz + z[0]] = lat;
    }
    free(seen);
    return rc;
}

/* build_cluster reads the cluster mapping into cl (zeroed by the caller,
 * freed by cfg_free even when this fails half-way). */
static int build_cluster(cfg_ctx *c, yaml_node_t *map, model_cluster *cl)
{
    yaml_node_t *keys[N_CL], *vals[N_CL];
    if (walk_map(c, map, "cluster", "a mapping", CLUSTER_FIELDS, N_CL, cl, keys, vals))
        return -1;
    yaml_node_t *maps[MODEL_MAX_TYPES], *counts[MODEL_MAX_TYPES];
    int declared;
    if (build_types(c, vals[CL_TYPES], cl, maps, counts) ||
        build_zones(c, vals[CL_ZONES], cl, &declared))
        return -1;
    if (vals[CL_NODES] && build_nodes(c, vals[CL_NODES], cl, declared))
        return -1;
    if (vals[CL_LINKS] && build_links(c, vals[CL_LINKS], cl))
        return -1;
    /* counts: derived from, or checked against, the nodes */
    long long sum[MODEL_MAX_TYPES] = {0};
    int has[MODEL_MAX_TYPES] = {0};
    for (int i = 0; i < cl->n_nodes; i++) {
        sum[cl->nodes[i].type] += cl->nodes[i].units;
        has[cl->nodes[i].type] = 1;
    }
    for (int t = 0; t < cl->n_types; t++) {
        char p[96];
        model_type *ty = &cl->types[t];
        snprintf(p, sizeof p, "cluster.types[%d].count", t);
        if (!counts[t]) {
            if (cl->n_nodes == 0)
                return fail(c, maps[t], p,
                            "missing required key (needed when the cluster lists no nodes)");
            if (sum[t] > 2147483647LL)
                return fail(c, maps[t], p, "the nodes of type '%s' hold %lld units, too many",
                            ty->name, sum[t]);
            ty->count = (int)sum[t];
        } else if (has[t] && sum[t] != ty->count) {
            return fail(c, counts[t], p,
                        "count %d disagrees with the nodes of type '%s', which hold %lld "
                        "units in total",
                        ty->count, ty->name, sum[t]);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Building the jobs
 * ------------------------------------------------------------------------ */

/* build_job reads one job mapping at key path `path` into job, checking
 * every layer's memory against the largest type memory of cl; *name_node
 * gets the node of the job's name. */
static int build_job(cfg_ctx *c, yaml_node_t *map, const char *path, model_job *job,
                     const model_cluster *cl, yaml_node_t **name_node)
{
    yaml_node_t *keys[N_JO], *vals[N_JO];
    if (walk_map(c, map, path, "a mapping", JOB_FIELDS, N_JO, job, keys, vals))
        return -1;
    *name_node = vals[JO_NAME];
    yaml_node_t *list = vals[JO_LAYERS];
    char lp[96];
    path_key(lp, sizeof lp, path, "layers");
    int n = seq_len(list);
    if (n == 0)
        return fail(c, list, lp, "must list at least one layer");
    if (n > MODEL_MAX_LAYERS)
        return fail(c, list, lp, "at most %d layers are supported, got %d", MODEL_MAX_LAYERS,
                    n);
    job->layers = calloc((size_t)n, sizeof *job->layers);
    if (!job->layers)
        return fail(c, list, lp, "out of memory");
    job->n_layers = n;
    int big = 0;
    for (int t = 1; t < cl->n_types; t++)
        if (cl->types[t].mem > cl->types[big].mem)
            big = t;
    yaml_node_t *names[MODEL_MAX_LAYERS];
    for (int i = 0; i < n; i++) {
        char p[128], kp[160];
        yaml_node_t *lkeys[N_LA], *lvals[N_LA];
        model_layer *l = &job->layers[i];
        path_index(p, sizeof p, lp, i);
        if (walk_map(c, seq_at(c, list, i), p, "a mapping", LAYER_FIELDS, N_LA, l, lkeys,
                     lvals))
            return -1;
        names[i] = lvals[LA_NAME];
        path_key(kp, sizeof kp, p, "name");
        if (check_dup(c, job->layers, sizeof *job->layers, i, names, kp, "layer"))
            return -1;
        if (cl->n_types > 0 && l->mem > cl->types[big].mem) {
            char need[32], have[32];
            units_format(UNITS_BYTES, l->mem, need, sizeof need);
            units_format(UNITS_BYTES, cl->types[big].mem, have, sizeof have);
            path_key(kp, sizeof kp, p, "mem");
            return fail(c, lvals[LA_MEM], kp,
                        "layer '%s' needs %s, more than any type's mem (largest: %s on %s)",
                        l->name, need, have, cl->types[big].name);
        }
    }
    int bad;
    char why[320];
    if (model_job_check(job, &bad, why, sizeof why) < 0) { /* finite figures: env/model.h */
        char p[128];
        path_index(p, sizeof p, lp, bad);
        return fail(c, bad < 0 ? list : seq_at(c, list, bad), bad < 0 ? lp : p, "%s", why);
    }
    yaml_node_t *meas = vals[JO_MEAS];
    if (meas) {
        /* Four coefficients to fit: fewer points cannot pin them (FIT_MIN_POINTS). */
        path_key(lp, sizeof lp, path, "measurements");
        int m = seq_len(meas);
        if (m < 4)
            return fail(c, meas, lp, "the throughput curve has four coefficients: give at "
                        "least 4 measurements, got %d", m);
        job->points = calloc((size_t)m, sizeof *job->points);
        if (!job->points)
            return fail(c, meas, lp, "out of memory");
        job->n_points = m;
        for (int i = 0; i < m; i++) {
            char p[128];
            yaml_node_t *mkeys[N_ME], *mvals[N_ME];
            path_index(p, sizeof p, lp, i);
            if (walk_map(c, seq_at(c, meas, i), p, "a mapping", MEAS_FIELDS, N_ME,
                         &job->points[i], mkeys, mvals))
                return -1;
        }
    }
    return 0;
}

static int build_jobs(cfg_ctx *c, cfg_run *run)
{
    cfg_origin *o = c->top[TOP_JOB].file >= 0 ? &c->top[TOP_JOB] : &c->top[TOP_JOBS];
    int single = o == &c->top[TOP_JOB];
    c->cur = o->file;
    int n = single ? 1 : seq_len(o->val);
    if (n == 0)
        return fail(c, o->val, "jobs", "must list at least one job");
    run->jobs = calloc((size_t)n, sizeof *run->jobs);
    yaml_node_t **names = calloc((size_t)n, sizeof *names);
    if (!run->jobs || !names) {
        free(names);
        return fail(c, o->val, "jobs", "out of memory");
    }
    run->n_jobs = n;
    int rc = 0;
    for (int j = 0; j < n && rc == 0; j++) {
        char p[64], kp[96];
        yaml_node_t *map = single ? o->val : seq_at(c, o->val, j);
        if (single)
            snprintf(p, sizeof p, "job");
        else
            path_index(p, sizeof p, "jobs", j);
        rc = build_job(c, map, p, &run->jobs[j], &run->cluster, &names[j]);
        if (rc)
            break;
        path_key(kp, sizeof kp, p, "name");
        rc = check_dup(c, run->jobs, sizeof *run->jobs, j, names, kp, "job");
    }
    free(names);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Public entry points
 * ------------------------------------------------------------------------ */

/* build_run turns the collected top-level keys into a run, or NULL. */
static cfg_run *build_run(cfg_ctx *c, const char *path)
{
    yaml_node_t *root = yaml_document_get_root_node(&c->files[0]->doc);
    c->cur = 0;
    if (c->top[TOP_CLUSTER].file < 0) {
        fail(c, root, "cluster",
             "missing required key (neither this file nor its includes give it)");
        return NULL;
    }
    if (c->top[TOP_JOB].file < 0 && c->top[TOP_JOBS].file < 0) {
        fail(c, root, "job",
             "missing required key: give job: (one job) or jobs: (a list), here or in an "
             "included file");
        return NULL;
    }
    cfg_run *run = calloc(1, sizeof *run);
    if (!run) {
        say(c, "%s: out of memory", path);
        return NULL;
    }
    snprintf(run->path, sizeof run->path, "%s", path);
    run->objective = c->top[TOP_OBJECTIVE].file >= 0 ? (cfg_objective)c->objective
                                                     : CFG_OBJECTIVE_COST;
    c->cur = c->top[TOP_CLUSTER].file;
    if (build_cluster(c, c->top[TOP_CLUSTER].val, &run->cluster) || build_jobs(c, run)) {
        cfg_free(run);
        return NULL;
    }
    return run;
}

cfg_run *cfg_load(const char *path, char *err, size_t errlen)
{
    cfg_ctx c;
    ctx_init(&c, err, errlen);
    cfg_run *run = NULL;
    if (!path) {
        say(&c, "(null): cannot open: no file name");
        return NULL;
    }
    int idx = open_file(&c, path, -1, NULL, NULL);
    if (idx >= 0 && load_top(&c, idx) == 0)
        run = build_run(&c, path);
    ctx_free(&c);
    return run;
}

/* load_in_memory loads a run that has no file behind it, from text[len]
 * when doc is NULL, else from *doc (taken over: deleted in every case and
 * zeroed). `include:` is refused, so that a request never names a file. */
static cfg_run *load_in_memory(const char *name, const char *text, size_t len,
                               yaml_document_t *doc, char *err, size_t errlen)
{
    cfg_ctx c;
    ctx_init(&c, err, errlen);
    c.no_include = 1;
    cfg_run *run = NULL;
    int idx = add_file(&c, name), ok = idx >= 0;
    if (!ok) {
        say(&c, "%s: out of memory", name);
        if (doc)
            yaml_document_delete(doc);
    } else if (doc) {
        c.files[idx]->doc = *doc; /* the context deletes it from here on */
        c.files[idx]->has_doc = 1;
    } else {
        ok = parse_doc(&c, idx, text, len) == 0;
    }
    if (doc)
        memset(doc, 0, sizeof *doc);
    if (ok && load_top(&c, idx) == 0)
        run = build_run(&c, name);
    ctx_free(&c);
    return run;
}

cfg_run *cfg_load_buffer(const char *name, const char *text, size_t len, char *err,
                         size_t errlen)
{
    return load_in_memory(name ? name : "<buffer>", text ? text : "", text ? len : 0, NULL, err,
                          errlen);
}

cfg_run *cfg_load_document(const char *name, yaml_document_t *doc, char *err, size_t errlen)
{
    return load_in_memory(name ? name : "<document>", NULL, 0, doc, err, errlen);
}

void cfg_free(cfg_run *run)
{
    if (!run)
        return;
    model_cluster *cl = &run->cluster;
    free(cl->types);
    free(cl->nodes);
    free(cl->zones);
    free(cl->zone_bw);
    free(cl->zone_lat);
    for (int j = 0; j < run->n_jobs; j++) {
        free(run->jobs[j].layers);
        free(run->jobs[j].points);
    }
    free(run->jobs);
    free(run);
}

/* place_list resolves the node names of list (key path `path`) into
 * out[count]; the list must hold exactly `count` names. */
static int place_list(cfg_ctx *c, yaml_node_t *list, const char *path, int count,
                      const char *what, const model_cluster *cl, int *out)
{
    if (seq_len(list) != count)
        return fail(c, list, path, "%s, got %d", what, seq_len(list));
    for (int i = 0; i < count; i++) {
        char p[128];
        const char *name;
        yaml_node_t *v = seq_at(c, list, i);
        path_index(p, sizeof p, path, i);
        if (scalar_text(c, v, p, "a node name", &name))
            return -1;
        int n = find_name(name, cl->nodes, sizeof *cl->nodes, cl->n_nodes);
        if (n < 0)
            return unknown_name(c, v, p, "node", name, cl->nodes, sizeof *cl->nodes,
                                cl->n_nodes);
        out[i] = n;
    }
    return 0;
}

int cfg_load_placement(const char *path, const cfg_run *run, const model_plan *plan,
                       int *task_node, char *err, size_t errlen)
{
    cfg_ctx c;
    ctx_init(&c, err, errlen);
    if (!path || !run || !plan || !task_node) {
        say(&c, "%s: cfg_load_placement: missing argument", path ? path : "(null)");
        return -1;
    }
    int rc = -1;
    int idx = open_file(&c, path, -1, NULL, NULL);
    yaml_node_t *root = idx >= 0 ? root_of(&c, idx, "a mapping with key placement") : NULL;
    yaml_node_t *keys[N_PL], *vals[N_PL];
    const model_cluster *cl = &run->cluster;
    if (!root ||
        walk_map(&c, root, "", "a mapping with key placement", PLACE_FIELDS, N_PL, NULL, keys,
                 vals))
        goto out;
    if (plan->reason != MODEL_FEASIBLE) {
        fail(&c, vals[PL_PLACEMENT], "placement",
             "the plan is infeasible (%s); there is nothing to place", plan->why);
        goto out;
    }
    if (cl->n_nodes == 0) {
        fail(&c, vals[PL_PLACEMENT], "placement",
             "the cluster lists no nodes (cluster.nodes) to place tasks on");
        goto out;
    }
    yaml_node_t *list = vals[PL_PLACEMENT];
    if (seq_len(list) != plan->n_stages) {
        fail(&c, list, "placement", "expected one entry per stage of the plan (%d), got %d",
             plan->n_stages, seq_len(list));
        goto out;
    }
    int off = 0;
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        char p[64], wp[96], what[256];
        yaml_node_t *skeys[N_PS], *svals[N_PS];
        path_index(p, sizeof p, "placement", s);
        if (walk_map(&c, seq_at(&c, list, s), p, "a mapping", STAGE_FIELDS, N_PS, NULL, skeys,
                     svals))
            goto out;
        const char *tname = st->type >= 0 && st->type < cl->n_types ? cl->types[st->type].name
                                                                    : "?";
        path_key(wp, sizeof wp, p, "workers");
        snprintf(what, sizeof what, "stage %d (layers %d..%d on %s) runs %d worker%s", s,
                 st->first, st->last, tname, st->units, st->units == 1 ? "" : "s");
        if (place_list(&c, svals[PS_WORKERS], wp, st->units, what, cl, task_node + off))
            goto out;
        off += st->units;
        path_key(wp, sizeof wp, p, "ps");
        snprintf(what, sizeof what, "stage %d (layers %d..%d on %s) runs %d ps task%s", s,
                 st->first, st->last, tname, st->n_ps, st->n_ps == 1 ? "" : "s");
        if (place_list(&c, svals[PS_PS], wp, st->n_ps, what, cl, task_node + off))
            goto out;
        off += st->n_ps;
    }
    if (off != place_task_count(plan)) {
        fail(&c, list, "placement", "internal error: %d tasks read, the plan has %d", off,
             place_task_count(plan));
        goto out;
    }
    rc = 0;
out:
    ctx_free(&c);
    return rc;
}

/* ---------------------------------------------------------------------------
 * cfg_doc: the walker for other YAML files (see config.h)
 * ------------------------------------------------------------------------ */

struct cfg_doc {
    cfg_ctx c; /* one file, index 0 */
};

cfg_doc *cfg_doc_load(const char *path, char *err, size_t errlen)
{
    cfg_doc *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    ctx_init(&d->c, err, errlen);
    if (open_file(&d->c, path, -1, NULL, "") != 0) {
        cfg_doc_free(d);
        return NULL;
    }
    return d;
}

void cfg_doc_free(cfg_doc *d)
{
    if (!d)
        return;
    ctx_free(&d->c);
    free(d);
}

yaml_node_t *cfg_doc_root(cfg_doc *d)
{
    return yaml_document_get_root_node(&d->c.files[0]->doc);
}

yaml_node_t *cfg_doc_node(cfg_doc *d, int id)
{
    return yaml_document_get_node(&d->c.files[0]->doc, id);
}

int cfg_doc_walk(cfg_doc *d, yaml_node_t *map, const char *path, const char *what,
                 const cfg_field *f, int nf, void *obj, yaml_node_t **keys, yaml_node_t **vals,
                 char *err, size_t errlen)
{
    d->c.err = err;
    d->c.errlen = errlen;
    d->c.cur = 0;
    return walk_map(&d->c, map, path, what, f, nf, obj, keys, vals);
}

int cfg_doc_value(cfg_doc *d, const cfg_field *f, yaml_node_t *v, const char *path, void *obj,
                  char *err, size_t errlen)
{
    d->c.err = err;
    d->c.errlen = errlen;
    d->c.cur = 0;
    return parse_field(&d->c, f, v, path, obj);
}

int cfg_doc_fail(cfg_doc *d, const yaml_node_t *at, const char *path, char *err,
                 size_t errlen, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->c.err = err;
    d->c.errlen = errlen;
    d->c.cur = 0;
    return fail(&d->c, at, path, "%s", msg);
}

const char *cfg_doc_path(const cfg_doc *d)
{
    return d->c.files[0]->path;
}
