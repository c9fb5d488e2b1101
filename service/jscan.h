/* jscan.h -- a validating JSON scanner that builds nothing.
 *
 * jansson parses a whole document into a tree; it has no selective or
 * streaming parse. The extender's Nodes form is a 74 MB document for 5,000
 * nodes of which strata reads a few hundred bytes each (name, labels,
 * annotations, resourceVersion, allocatable): building and freeing the
 * tree was 95% of a call's 2.6 s. jscan walks the text instead, with a
 * cursor: it enters the objects and arrays its caller asks for, hands out
 * keys and the raw bytes of values (which the caller may give to
 * json_loadb whole), and skips everything else by validating it in place,
 * strings 16 bytes at a time.
 *
 * It accepts exactly the JSON that jansson's json_loadb accepts (RFC 8259;
 * strings in valid UTF-8 without \u0000; integers within long long; reals
 * that do not overflow a double; at most JSCAN_MAX_DEPTH levels of values;
 * only whitespace after the top value), which fuzz/fuzz_jscan.c checks
 * against jansson itself. What it does not do by itself is refuse
 * duplicate keys: the caller checks the objects it walks with jscan_keys.
 *
 * Errors carry the byte offset of the text at fault; jscan_message turns
 * it into "malformed JSON at line L, column C: what" as web_parse_json
 * words jansson's errors.
 */
#ifndef STRATA_SERVICE_JSCAN_H
#define STRATA_SERVICE_JSCAN_H

#include <stddef.h>
#include <stdint.h>

/* jansson's JSON_PARSER_MAX_DEPTH: a value inside 2,047 containers is the
 * deepest accepted. */
#define JSCAN_MAX_DEPTH 2048

/* A cursor over one JSON text. */
typedef struct {
    const char *base;  /* the text [end - base bytes] */
    const char *p;     /* the cursor */
    const char *end;
    int depth;         /* containers entered with jscan_enter and not yet left */
    size_t err_at;     /* after an error: byte offset of the text at fault */
    char err[160];     /* after an error: what is wrong; "" before */
} jscan;

/* A string as it stands in the text: the bytes between its quotes. */
typedef struct {
    const char *p;
    size_t len;
    int esc;           /* 1 when it holds a backslash escape (decode it) */
} jscan_str;

/* jscan_init puts the cursor at the start of text[len]. */
void jscan_init(jscan *s, const char *text, size_t len);

/* jscan_skip_ws returns the first byte at or after p (before end) that is
 * not JSON's whitespace: ' ', '\t', '\n', '\r' (all below '!'). */
static inline const char *jscan_skip_ws(const char *p, const char *end) {
    while (p < end && (unsigned char)*p <= ' ' &&
           (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* jscan_peek skips whitespace and returns the next byte ('{', '[', '"',
 * 't', '-', ...), leaving the cursor on it; -1 at the end of the text.
 * Inline: the extender's reader peeks some two million times a call. */
static inline int jscan_peek(jscan *s) {
    s->p = jscan_skip_ws(s->p, s->end);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

/* jscan_skip validates the value at the cursor and moves past it. Returns
 * 0, or -1 with the error set. */
int jscan_skip(jscan *s);

/* jscan_string reads the string value at the cursor into *out and moves
 * past it. Returns 0, or -1 (not a string, or a malformed one). */
int jscan_string(jscan *s, jscan_str *out);

/* jscan_enter moves into the object ('{') or array ('[') at the cursor
 * (open says which is expected). Returns 0, or -1 when something else is
 * there or the depth limit is passed. */
int jscan_enter(jscan *s, int open);

/* jscan_member steps to the next member of the object entered last: i is
 * the number of members read so far (0 for the first). Returns 1 with its
 * key in *key and the cursor on its value (which the caller must consume:
 * jscan_skip, jscan_string or jscan_enter), 0 after the closing '}' (the
 * object is left), -1 on an error. */
int jscan_member(jscan *s, jscan_str *key, int i);

/* jscan_element steps to the next element of the array entered last (i as
 * for jscan_member): 1 with the cursor on it, 0 after ']', -1 on an error. */
int jscan_element(jscan *s, int i);

/* jscan_end checks that only whitespace follows the cursor: 0, or -1. */
int jscan_end(jscan *s);

/* jscan_fail sets the error (at byte offset at) unless one is set; -1. */
int jscan_fail(jscan *s, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* jscan_message writes "malformed JSON at line L, column C: what" for the
 * error of s into buf[len] (lines and columns from 1, columns in
 * characters, as jansson counts them). */
void jscan_message(const jscan *s, char *buf, size_t len);

/* jscan_where gives the line and column of byte offset at of text. */
void jscan_where(const char *text, size_t at, int *line, int *col);

/* jscan_decode writes the string str (validated by jscan) decoded, as
 * UTF-8, into buf[cap], NUL-terminated and cut to fit. Returns the decoded
 * length (which may be more than cap - 1 when it was cut). */
size_t jscan_decode(const jscan_str *str, char *buf, size_t cap);

/* jscan_equals says whether the string str decodes to key (NUL-terminated);
 * jscan_iequals ignores ASCII case, as Go's encoding/json matches field
 * names. jscan_equals is inline, so that the length of a literal key is
 * known when compiling; an escaped str goes to jscan_equals_escaped. */
int jscan_equals_escaped(const jscan_str *str, const char *key, size_t kl);
static inline int jscan_equals(const jscan_str *str, const char *key) {
    size_t kl = __builtin_strlen(key);
    if (str->esc) return jscan_equals_escaped(str, key, kl);
    return str->len == kl && !__builtin_memcmp(str->p, key, kl);
}
int jscan_iequals(const jscan_str *str, const char *key);

/* jscan_check validates text[len] as one JSON value (any kind) with only
 * whitespace around it. Returns 0, or -1 with s's error set. */
int jscan_check(jscan *s, const char *text, size_t len);

/* The keys of one object, to refuse a duplicate as jansson's
 * JSON_REJECT_DUPLICATES does (keys compared decoded). Zero-initialise,
 * jscan_keys_reset before each object, jscan_keys_free at the end. The
 * bytes of the keys added must stay valid until the next reset (escaped
 * keys are copied). */
typedef struct {
    size_t n, cap;        /* keys held; room */
    jscan_str *keys;      /* [cap]: decoded when escaped (then owned: p in own) */
    char **own;           /* [cap]: the decoded copies, or NULL */
    uint32_t *slot;       /* [nslot] index + 1 of the key there, 0 when free */
    uint32_t *at;         /* [cap]: the slot each key took (objects of many keys) */
    size_t nslot;
} jscan_keys;

void jscan_keys_reset(jscan_keys *k);

/* jscan_keys_add adds key; returns 0, 1 when the object already has it,
 * -1 when out of memory. */
int jscan_keys_add(jscan_keys *k, const jscan_str *key);

void jscan_keys_free(jscan_keys *k);

#endif
