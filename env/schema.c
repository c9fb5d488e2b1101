/* schema.c -- the declarative tables and their walker (see schema.h and
 * schema_ctx.h).
 *
 * Each file is parsed whole with libyaml's document API; its nodes keep
 * their line/column marks, so every message can point at the offending
 * value. One walker, cfg_walk_map(), checks a mapping against a table of
 * cfg_field rows (unknown keys with a "did you mean", duplicates, wrong
 * node types, missing required keys, units, bounds, the figure guard) and
 * fills the struct. Around it: reading and parsing files, resolving
 * `include:` names relative to the including file (with the cycle and
 * depth checks), and the one message format "file:line:col: key.path:
 * message". The run loader (config.c) and, through cfg_doc, the loaders of
 * agent/ and eval/ stand on it.
 *
 * The walker has a second front end: a JSON value already parsed by
 * jansson (the daemon's requests, cfg_add_json) is walked as it is, with
 * the same tables and the same messages, its scalars read as a YAML reader
 * would read them from JSON text (scalar() below), so that a request is
 * never rebuilt as a YAML document. JSON values have no marks: their
 * position reads "file:1:1", as a document built in memory had.
 */
#include "env/schema.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "base/file.h"
#include "env/model.h"
#include "env/schema_ctx.h"
#include "env/units.h"

#define CFG_MAX_FIGURE 1e18  /* largest magnitude of any figure */
#define CFG_MIN_FIGURE 1e-12 /* smallest non-zero magnitude */

void cfg_ctx_init(cfg_ctx *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->err = err;
    c->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
}

/* Nodes as libyaml's and jansson's types, for the helpers below. */
static const yaml_node_t *Y(const cfg_item *n)
{
    return (const yaml_node_t *)n;
}

static const json_t *J(const cfg_item *n)
{
    return (const json_t *)n;
}

/* is_json: the file being walked is a JSON value (cfg_add_json). */
static int is_json(const cfg_ctx *c)
{
    return c->files[c->cur]->json != NULL;
}

void cfg_ctx_free(cfg_ctx *c)
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
void cfg_say(cfg_ctx *c, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
}

/* where writes "file:line:col" of node n of file f into buf[len]. */
void cfg_where(const cfg_ctx *c, int f, const cfg_item *n, char *buf, size_t len)
{
    if (n && c->files[f]->json)
        snprintf(buf, len, "%s:1:1", c->files[f]->path);
    else if (n)
        snprintf(buf, len, "%s:%lu:%lu", c->files[f]->path,
                 (unsigned long)Y(n)->start_mark.line + 1,
                 (unsigned long)Y(n)->start_mark.column + 1);
    else
        snprintf(buf, len, "%s", c->files[f]->path);
}

/* fail writes "file:line:col: path: message" for node `at` of the current
 * file (no position when at is NULL, no path when path is empty) and
 * returns -1. */
int cfg_fail(cfg_ctx *c, const cfg_item *at, const char *path, const char *fmt, ...)
{
    char msg[1024], pos[CFG_PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cfg_where(c, c->cur, at, pos, sizeof pos);
    if (path && *path)
        cfg_say(c, "%s: %s: %s", pos, path, msg);
    else
        cfg_say(c, "%s: %s", pos, msg);
    return -1;
}

/* ---------------------------------------------------------------------------
 * Small helpers on nodes, paths and names
 * ------------------------------------------------------------------------ */

/* node returns node `id` of the current (YAML) file. */
static cfg_item *node(cfg_ctx *c, int id)
{
    return (cfg_item *)yaml_document_get_node(&c->files[c->cur]->doc, id);
}

cfg_kind cfg_kind_of(const cfg_ctx *c, const cfg_item *n)
{
    if (is_json(c))
        return json_is_object(J(n)) ? CFG_K_MAP : json_is_array(J(n)) ? CFG_K_SEQ : CFG_K_SCALAR;
    return Y(n)->type == YAML_MAPPING_NODE    ? CFG_K_MAP
           : Y(n)->type == YAML_SEQUENCE_NODE ? CFG_K_SEQ
                                              : CFG_K_SCALAR;
}

/* scalar returns the text of scalar node n as a YAML reader sees it, with
 * its length in *len and *plain 1 for a plain (unquoted) scalar. A JSON
 * value reads as it would from JSON text: a string quoted, a number as
 * jansson prints it (into num[48]), true, false and null plain. */
static const char *scalar(const cfg_ctx *c, const cfg_item *n, char *num, size_t *len,
                          int *plain)
{
    if (!is_json(c)) {
        *len = Y(n)->data.scalar.length;
        *plain = Y(n)->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return (const char *)Y(n)->data.scalar.value;
    }
    const json_t *v = J(n);
    const char *text = num;
    *plain = 1;
    switch (json_typeof(v)) {
    case JSON_STRING:
        *plain = 0;
        *len = json_string_length(v);
        return json_string_value(v);
    case JSON_INTEGER:
        snprintf(num, 48, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(num, 48, "%.17g", json_real_value(v));
        if (!strpbrk(num, ".eEni"))
            strcat(num, ".0");
        break;
    case JSON_TRUE: text = "true"; break;
    case JSON_FALSE: text = "false"; break;
    default: text = "null"; break;
    }
    *len = strlen(text);
    return text;
}

/* is_empty: an empty scalar or a plain null ("~", "null"). */
static int is_empty(const cfg_ctx *c, const cfg_item *n)
{
    char num[48];
    size_t len;
    int plain;
    if (cfg_kind_of(c, n) != CFG_K_SCALAR)
        return 0;
    const char *s = scalar(c, n, num, &len, &plain);
    if (len == 0)
        return 1;
    if (!plain)
        return 0;
    return strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

/* describe writes what a node is, for "expected X, got Y" messages. */
void cfg_describe(const cfg_ctx *c, const cfg_item *n, char *buf, size_t len)
{
    cfg_kind k = cfg_kind_of(c, n);
    if (k == CFG_K_MAP)
        snprintf(buf, len, "a mapping");
    else if (k == CFG_K_SEQ)
        snprintf(buf, len, "a list");
    else if (is_empty(c, n))
        snprintf(buf, len, "an empty value");
    else {
        char num[48];
        size_t l;
        int plain;
        const char *s = scalar(c, n, num, &l, &plain);
        snprintf(buf, len, "\"%.*s%s\"", (int)(l > 40 ? 40 : l), s, l > 40 ? "..." : "");
    }
}

int cfg_seq_len(const cfg_ctx *c, const cfg_item *n)
{
    if (is_json(c))
        return (int)json_array_size(J(n));
    return (int)(Y(n)->data.sequence.items.top - Y(n)->data.sequence.items.start);
}

cfg_item *cfg_seq_at(cfg_ctx *c, const cfg_item *n, int i)
{
    if (is_json(c))
        return (cfg_item *)json_array_get(J(n), (size_t)i);
    return node(c, Y(n)->data.sequence.items.start[i]);
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

void cfg_path_key(char *out, size_t len, const char *base, const char *key)
{
    size_t n = 0;
    out[0] = '\0';
    if (base && *base) {
        put(out, len, &n, base);
        put(out, len, &n, ".");
    }
    put(out, len, &n, key);
}

void cfg_path_index(char *out, size_t len, const char *base, int i)
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
int cfg_unknown_name(cfg_ctx *c, const cfg_item *at, const char *path, const char *what,
                     const char *word, const void *base, size_t stride, int n)
{
    const char *s = suggest_name(word, base, stride, n);
    if (s)
        return cfg_fail(c, at, path, "unknown %s '%s' (did you mean '%s'?)", what, word, s);
    char names[400];
    list_names(base, stride, n, names, sizeof names);
    return cfg_fail(c, at, path, "unknown %s '%s' (declared: %s)", what, word, names);
}

/* find_name returns the index of name among n structs (name first), or -1. */
int cfg_find_name(const char *name, const void *base, size_t stride, int n)
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
 * declared in schema.h (other loaders reuse the walker through cfg_doc, at
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
int cfg_scalar_text(cfg_ctx *c, cfg_item *v, const char *path, const char *what,
                    const char **text)
{
    char d[96];
    if (cfg_kind_of(c, v) != CFG_K_SCALAR) {
        cfg_describe(c, v, d, sizeof d);
        return cfg_fail(c, v, path, "expected %s, got %s", what, d);
    }
    size_t len;
    int plain;
    const char *s = scalar(c, v, c->num, &len, &plain);
    if (strlen(s) != len)
        return cfg_fail(c, v, path, "expected %s, got a value with a NUL character", what);
    *text = is_empty(c, v) ? "" : s;
    return 0;
}

/* short_text reads scalar v as non-empty text shorter than max bytes
 * (`what` names it in "expected ...", `noun` in "... is longer than"),
 * pointing *text into the document. Returns 0 or -1 with the message set. */
static int short_text(cfg_ctx *c, cfg_item *v, const char *path, const char *what,
                      const char *noun, size_t max, const char **text)
{
    if (cfg_scalar_text(c, v, path, what, text))
        return -1;
    if (!**text)
        return cfg_fail(c, v, path, "expected %s, got an empty value", what);
    if (strlen(*text) >= max)
        return cfg_fail(c, v, path, "%s is longer than %d characters", noun, (int)max - 1);
    return 0;
}

/* parse_field checks value node v of field f (key path `path`) and, for
 * scalar fields and ranges, stores it into obj. A range's ends are checked
 * as CFG_FT_DOUBLE values (key path `path[0]`, `path[1]`), so they meet the
 * row's bounds and the figure guard. Returns 0 or -1 (message set). */
int cfg_parse_field(cfg_ctx *c, const cfg_field *f, cfg_item *v, const char *path,
                    void *obj)
{
    char d[96], msg[512];
    const char *text;
    switch (f->type) {
    case CFG_FT_LIST:
        if (cfg_kind_of(c, v) == CFG_K_SEQ)
            return 0;
        cfg_describe(c, v, d, sizeof d);
        return cfg_fail(c, v, path, "expected a list, got %s", d);
    case CFG_FT_MAP:
        if (cfg_kind_of(c, v) == CFG_K_MAP)
            return 0;
        cfg_describe(c, v, d, sizeof d);
        return cfg_fail(c, v, path, "expected a mapping, got %s", d);
    case CFG_FT_ANY:
        return 0;
    case CFG_FT_DOUBLE:
    case CFG_FT_INT: {
        units_kind kind = f->type == CFG_FT_INT ? UNITS_COUNT : f->units;
        if (cfg_scalar_text(c, v, path, units_expect(kind), &text))
            return -1;
        double x;
        if (units_parse(kind, text, &x, msg, sizeof msg))
            return cfg_fail(c, v, path, "%s", msg);
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
            return cfg_fail(c, v, path, "must be %s, got \"%s\"", b, text);
        }
        /* Every figure the model multiplies is kept within [1e-12, 1e18]
         * (zero aside), so that no product of them -- a cost, a training
         * time -- can overflow a double, whatever a file or request says. */
        if (f->type == CFG_FT_DOUBLE && x != 0.0 && (fabs(x) > CFG_MAX_FIGURE ||
                                                    fabs(x) < CFG_MIN_FIGURE))
            return cfg_fail(c, v, path, "\"%s\" is absurdly %s: figures must lie between %g "
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
                return cfg_fail(c, v, path,
                                "a name cannot contain commas or control characters, got \"%s\"",
                                text);
        memcpy((char *)obj + f->off, text, strlen(text) + 1);
        return 0;
    }
    case CFG_FT_ENUM: {
        if (cfg_scalar_text(c, v, path, "a name", &text))
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
        return cfg_fail(c, v, path, "unsupported value \"%s\" (expected one of: %s)", text, list);
    }
    case CFG_FT_BOOL: {
        if (cfg_scalar_text(c, v, path, "true or false", &text))
            return -1;
        int *b = (int *)((char *)obj + f->off);
        if (!strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcasecmp(text, "on") ||
            !strcmp(text, "1"))
            *b = 1;
        else if (!strcasecmp(text, "false") || !strcasecmp(text, "no") ||
                 !strcasecmp(text, "off") || !strcmp(text, "0"))
            *b = 0;
        else {
            cfg_describe(c, v, d, sizeof d);
            return cfg_fail(c, v, path, "expected true or false, got %s", d);
        }
        return 0;
    }
    case CFG_FT_RANGE: {
        /* each end is parsed as the plain number field it stands for */
        cfg_field one = *f;
        double r[2];
        one.type = CFG_FT_DOUBLE;
        one.off = 0;
        if (cfg_kind_of(c, v) == CFG_K_SCALAR) {
            if (cfg_parse_field(c, &one, v, path, &r[0]))
                return -1;
            r[1] = r[0];
        } else if (cfg_kind_of(c, v) == CFG_K_SEQ && cfg_seq_len(c, v) == 2) {
            char ipath[1100];
            for (int i = 0; i < 2; i++) {
                cfg_path_index(ipath, sizeof ipath, path, i);
                if (cfg_parse_field(c, &one, cfg_seq_at(c, v, i), ipath, &r[i]))
                    return -1;
            }
            if (r[1] < r[0])
                return cfg_fail(c, v, path, "the high end %g is below the low end %g", r[1], r[0]);
        } else {
            cfg_describe(c, v, d, sizeof d);
            return cfg_fail(c, v, path, "expected %s, or a pair [low, high] of them, got %s",
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

void cfg_fields_default(const cfg_field *f, int nf, void *obj)
{
    for (int i = 0; i < nf; i++)
        if (!f[i].required)
            set_default(&f[i], (char *)obj + f[i].off);
}

/* walk_key handles key `name` of a mapping (its key node k, value node v;
 * kpath[1024] gets its key path) for cfg_walk_map: finds its row of f[nf]
 * (an unknown one is refused with a "did you mean"), refuses it seen twice,
 * records its nodes and parses its value. Returns 0 or -1 (message set). */
static int walk_key(cfg_ctx *c, cfg_item *k, const char *name, cfg_item *v, const char *path,
                    const cfg_field *f, int nf, void *obj, cfg_item **keys, cfg_item **vals,
                    char *kpath)
{
    cfg_path_key(kpath, 1024, path, name);
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
            return cfg_fail(c, k, kpath, "unknown key (did you mean '%s'?)", best);
        char list[512];
        size_t used = 0;
        list[0] = '\0';
        for (int i = 0; i < nf && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     f[i].key);
        return cfg_fail(c, k, kpath, "unknown key (valid keys: %s)", list);
    }
    if (keys[idx]) {
        char first[CFG_PATH_MAX + 64];
        cfg_where(c, c->cur, keys[idx], first, sizeof first);
        return cfg_fail(c, k, kpath, "duplicate key (first at %s)", first);
    }
    keys[idx] = k;
    vals[idx] = v;
    return cfg_parse_field(c, &f[idx], v, kpath, obj);
}

/* cfg_walk_map checks that `map` is a mapping whose keys all belong to the
 * table f[nf] and appear once, parses scalar fields into obj (optional ones
 * first get their default) and records each key's key and value nodes in
 * keys[] and vals[] (NULL when absent; in a JSON object, the value's node
 * for both). Required keys missing are reported at the mapping. `what`
 * names the expected node ("a mapping"). Returns 0 or -1 with the message
 * set. The same walk for YAML mappings and JSON objects, in their order. */
int cfg_walk_map(cfg_ctx *c, cfg_item *map, const char *path, const char *what,
                 const cfg_field *f, int nf, void *obj, cfg_item **keys,
                 cfg_item **vals)
{
    char d[96], kpath[1024];
    if (cfg_kind_of(c, map) != CFG_K_MAP) {
        cfg_describe(c, map, d, sizeof d);
        return cfg_fail(c, map, path, "expected %s, got %s", what, d);
    }
    for (int i = 0; i < nf; i++)
        keys[i] = vals[i] = NULL;
    if (obj)
        cfg_fields_default(f, nf, obj);
    if (is_json(c)) {
        const char *name;
        json_t *v;
        json_object_foreach((json_t *)J(map), name, v) {
            if (walk_key(c, (cfg_item *)v, name, (cfg_item *)v, path, f, nf, obj, keys, vals,
                         kpath))
                return -1;
        }
    } else {
        const yaml_node_t *m = Y(map);
        for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
             p++) {
            cfg_item *k = node(c, p->key), *v = node(c, p->value);
            if (Y(k)->type != YAML_SCALAR_NODE) {
                cfg_describe(c, k, d, sizeof d);
                return cfg_fail(c, k, path, "keys must be plain names, got %s", d);
            }
            if (walk_key(c, k, (const char *)Y(k)->data.scalar.value, v, path, f, nf, obj, keys,
                         vals, kpath))
                return -1;
        }
    }
    for (int i = 0; i < nf; i++)
        if (f[i].required && !keys[i]) {
            cfg_path_key(kpath, sizeof kpath, path, f[i].key);
            return cfg_fail(c, map, kpath, "missing required key");
        }
    return 0;
}

/* check_dup fails when names[i] equals one of names[0..i-1] (struct
 * stride), pointing at name node nodes[i] and naming nodes[j]. */
int cfg_check_dup(cfg_ctx *c, const void *base, size_t stride, int i,
                  cfg_item *const *nodes, const char *path, const char *what)
{
    const char *name = (const char *)base + (size_t)i * stride;
    int j = cfg_find_name(name, base, stride, i);
    if (j < 0)
        return 0;
    char first[CFG_PATH_MAX + 64];
    cfg_where(c, c->cur, nodes[j], first, sizeof first);
    return cfg_fail(c, nodes[i], path, "duplicate %s name '%s' (first at %s)", what, name, first);
}

/* ---------------------------------------------------------------------------
 * Reading and parsing files
 * ------------------------------------------------------------------------ */

/* add_file appends a file record named path; returns its index or -1. */
int cfg_add_file(cfg_ctx *c, const char *path)
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

int cfg_add_json(cfg_ctx *c, const char *path, const json_t *root)
{
    int idx = cfg_add_file(c, path);
    if (idx >= 0)
        c->files[idx]->json = root;
    return idx;
}

/* too_deep scans the events of text[len] (file f) and fails at the first
 * list or mapping nested more than CFG_MAX_NESTING deep. libyaml spends
 * time proportional to the nesting on every token, so a 200 KB file of
 * "[[[[..." would take the document loader half a minute; this scan stops
 * at the offending event, having spent at most CFG_MAX_NESTING per token.
 * Syntax errors are left to the loader (which reports them the same way).
 * Returns 1 with the message set, else 0. */
static int too_deep(cfg_ctx *c, const cfg_file *f, const char *text, size_t len)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return 0;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, deep = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > CFG_MAX_NESTING) {
                cfg_say(c, "%s:%lu:%lu: lists and mappings nested more than %d deep",
                        f->path, (unsigned long)ev.start_mark.line + 1,
                        (unsigned long)ev.start_mark.column + 1, CFG_MAX_NESTING);
                deep = 1;
            }
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&ev);
        if (deep || t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    return deep;
}

/* parse_doc parses text[len] into file idx's document. A syntax error is
 * reported at libyaml's problem mark; a second document in the stream is
 * refused. Returns 0 or -1. */
int cfg_parse_doc(cfg_ctx *c, int idx, const char *text, size_t len)
{
    cfg_file *f = c->files[idx];
    if (too_deep(c, f, text, len))
        return -1;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        cfg_say(c, "%s: out of memory", f->path);
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
                cfg_say(c, "%s:%lu:%lu: only one YAML document per file is supported", f->path,
                        (unsigned long)r->start_mark.line + 1,
                        (unsigned long)r->start_mark.column + 1);
            }
            yaml_document_delete(&extra);
        }
    }
    if (!ok) {
        if (p.error == YAML_MEMORY_ERROR) {
            cfg_say(c, "%s: out of memory", f->path);
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
            cfg_say(c, "%s:%lu:%lu: syntax error: %s", f->path, (unsigned long)line,
                    (unsigned long)col, p.problem ? p.problem : "cannot read");
        } else if (p.context) {
            cfg_say(c, "%s:%lu:%lu: syntax error: %s (%s at %lu:%lu)", f->path,
                    (unsigned long)p.problem_mark.line + 1,
                    (unsigned long)p.problem_mark.column + 1,
                    p.problem ? p.problem : "invalid YAML", p.context,
                    (unsigned long)p.context_mark.line + 1,
                    (unsigned long)p.context_mark.column + 1);
        } else {
            cfg_say(c, "%s:%lu:%lu: syntax error: %s", f->path,
                    (unsigned long)p.problem_mark.line + 1,
                    (unsigned long)p.problem_mark.column + 1,
                    p.problem ? p.problem : "invalid YAML");
        }
    }
    yaml_parser_delete(&p);
    return ok && !extra_root ? 0 : -1;
}

/* root_of returns the root node of file idx (which must be a mapping), or
 * NULL with the message set. */
cfg_item *cfg_file_root(cfg_ctx *c, int idx)
{
    if (c->files[idx]->json)
        return (cfg_item *)c->files[idx]->json;
    return (cfg_item *)yaml_document_get_root_node(&c->files[idx]->doc);
}

cfg_item *cfg_root_of(cfg_ctx *c, int idx, const char *what)
{
    c->cur = idx;
    cfg_item *r = cfg_file_root(c, idx);
    if (!r) {
        cfg_say(c, "%s:1:1: the file is empty (expected %s)", c->files[idx]->path, what);
        return NULL;
    }
    if (cfg_kind_of(c, r) != CFG_K_MAP) {
        char d[96];
        cfg_describe(c, r, d, sizeof d);
        cfg_fail(c, r, "", "expected %s, got %s", what, d);
        return NULL;
    }
    return r;
}

/* open_file reads and parses path into a new file record; `from` (file
 * index, node) names the include that asked for it, or from < 0 for the
 * top file. Refuses include cycles. Returns the index or -1. */
int cfg_open_file(cfg_ctx *c, const char *path, int from, cfg_item *from_node,
                  const char *from_key)
{
    /* Bounds on one load, whatever its includes: a file included from
     * several places (a "diamond", each file including the next twice) is
     * no cycle but is loaded once per path to it, 2^N times for N levels. */
    if (from >= 0 && ++c->n_includes > CFG_MAX_INCLUDES) {
        c->cur = from;
        return cfg_fail(c, from_node, from_key,
                        "more than %d includes in one load (a file included from several "
                        "places counts each time): %s",
                        CFG_MAX_INCLUDES, path);
    }
    char *text = NULL, why[256];
    size_t len = 0;
    file_info st;
    if (file_read(path, FILE_MAX_CONFIG, &text, &len, &st, why, sizeof why)) {
        if (from < 0) {
            cfg_say(c, "%s: %s", path, why);
        } else {
            char pos[CFG_PATH_MAX + 64];
            cfg_where(c, from, from_node, pos, sizeof pos);
            cfg_say(c, "%s: %s (included from %s)", path, why, pos);
        }
        return -1;
    }
    c->bytes += len;
    if (from >= 0 && c->bytes > CFG_MAX_LOAD_BYTES) {
        free(text);
        c->cur = from;
        return cfg_fail(c, from_node, from_key,
                        "the files of this load exceed %d MiB in total with %s",
                        (int)(CFG_MAX_LOAD_BYTES >> 20), path);
    }
    for (int i = 0; i < c->depth; i++) {
        cfg_file *g = c->files[c->stack[i]];
        if (g->dev == st.dev && g->ino == st.ino) {
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
            return cfg_fail(c, from_node, from_key, "include cycle: %s", chain);
        }
    }
    if (c->depth >= CFG_MAX_DEPTH) {
        free(text);
        c->cur = from;
        return cfg_fail(c, from_node, from_key, "includes nested more than %d deep", CFG_MAX_DEPTH);
    }
    int idx = cfg_add_file(c, path);
    if (idx < 0) {
        free(text);
        cfg_say(c, "%s: out of memory", path);
        return -1;
    }
    c->files[idx]->dev = st.dev;
    c->files[idx]->ino = st.ino;
    int rc = cfg_parse_doc(c, idx, text, len);
    free(text);
    return rc ? -1 : idx;
}
int cfg_open_include(cfg_ctx *c, int from, cfg_item *name, const char *path)
{
    const char *text = NULL;
    c->cur = from;
    if (cfg_scalar_text(c, name, path, "a file name", &text))
        return -1;
    if (!*text)
        return cfg_fail(c, name, path, "expected a file name, got an empty value");
    char full[CFG_PATH_MAX];
    const char *base = c->files[from]->path;
    const char *slash = strrchr(base, '/');
    int n;
    if (text[0] == '/' || !slash)
        n = snprintf(full, sizeof full, "%s", text);
    else
        n = snprintf(full, sizeof full, "%.*s/%s", (int)(slash - base), base, text);
    if (n < 0 || (size_t)n >= sizeof full)
        return cfg_fail(c, name, path, "file name too long");
    return cfg_open_file(c, full, from, name, path);
}

/* ---------------------------------------------------------------------------
 * cfg_doc: the walker for other YAML files (see schema.h)
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
    cfg_ctx_init(&d->c, err, errlen);
    if (cfg_open_file(&d->c, path, -1, NULL, "") != 0) {
        cfg_doc_free(d);
        return NULL;
    }
    return d;
}

void cfg_doc_free(cfg_doc *d)
{
    if (!d)
        return;
    cfg_ctx_free(&d->c);
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
    return cfg_walk_map(&d->c, (cfg_item *)map, path, what, f, nf, obj, (cfg_item **)keys,
                        (cfg_item **)vals);
}

int cfg_doc_value(cfg_doc *d, const cfg_field *f, yaml_node_t *v, const char *path, void *obj,
                  char *err, size_t errlen)
{
    d->c.err = err;
    d->c.errlen = errlen;
    d->c.cur = 0;
    return cfg_parse_field(&d->c, f, (cfg_item *)v, path, obj);
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
    return cfg_fail(&d->c, (const cfg_item *)at, path, "%s", msg);
}

const char *cfg_doc_path(const cfg_doc *d)
{
    return d->c.files[0]->path;
}