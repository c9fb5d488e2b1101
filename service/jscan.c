/* jscan.c -- a validating JSON scanner that builds nothing (see jscan.h).
 *
 * The skipper is a loop over a small state machine (a value is expected, a
 * key, or what follows a value) with the open containers on a bit stack;
 * the bytes of strings, most of a Kubernetes object, are scanned 16 at a
 * time (SSE2, else 8 at a time in a 64-bit word) for the only bytes that
 * need a look: '"', '\\', a control byte or the lead of a multi-byte
 * UTF-8 character. Every rule jansson applies is applied here: the
 * escapes, \u surrogate pairs, no \u0000, UTF-8 without overlong forms or
 * surrogates, numbers in JSON's grammar whose integer fits a long long and
 * whose real does not overflow, the depth limit and the end of the text.
 */
#include "service/jscan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

void jscan_init(jscan *s, const char *text, size_t len) {
    s->base = text;
    s->p = text;
    s->end = text + len;
    s->depth = 0;
    s->err_at = 0;
    s->err[0] = '\0';
}

int jscan_fail(jscan *s, size_t at, const char *fmt, ...) {
    if (s->err[0]) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    if (!s->err[0]) snprintf(s->err, sizeof s->err, "malformed");
    s->err_at = at;
    return -1;
}

#define AT(q) ((size_t)((q) - s->base))

/* A token for messages: the byte at q, or "end of text". */
static void near(const jscan *s, const char *q, char *buf, size_t len) {
    if (q >= s->end) snprintf(buf, len, "the end of the text");
    else if ((unsigned char)*q >= 0x20 && (unsigned char)*q < 0x7f) snprintf(buf, len, "'%c'", *q);
    else snprintf(buf, len, "byte 0x%02x", (unsigned char)*q);
}

static int unexpected(jscan *s, const char *q, const char *want) {
    char b[32];
    near(s, q, b, sizeof b);
    return jscan_fail(s, AT(q), "%s expected near %s", want, b);
}

/* The length of the well-formed UTF-8 character at q, or 0. */
static size_t utf8_len(const unsigned char *q, const unsigned char *end) {
    unsigned c = q[0];
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n || (size_t)(end - q) < n) return 0;
    for (size_t i = 1; i < n; i++)
        if ((q[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((c == 0xe0 && q[1] < 0xa0) || (c == 0xed && q[1] >= 0xa0))) return 0;
    if (n == 4 && ((c == 0xf0 && q[1] < 0x90) || (c == 0xf4 && q[1] >= 0x90))) return 0;
    return n;
}

static int hex4(const char *q, const char *end, unsigned *v) {
    if (end - q < 4) return -1;
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)q[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        x = x * 16 + (unsigned)d;
    }
    *v = x;
    return 0;
}

/* Validates the escape at q (on the backslash); returns the byte after
 * it, or NULL with the error set. open: the string's opening quote. */
static const char *escape(jscan *s, const char *q, const char *open) {
    const char *end = s->end;
    if (end - q < 2) {
        jscan_fail(s, AT(open), "unterminated string");
        return NULL;
    }
    switch (q[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return q + 2;
    case 'u': break;
    default:
        jscan_fail(s, AT(q), "invalid escape in a string");
        return NULL;
    }
    unsigned v, w;
    if (hex4(q + 2, end, &v)) {
        jscan_fail(s, AT(q), "invalid \\u escape in a string");
        return NULL;
    }
    if (v == 0) {
        jscan_fail(s, AT(q), "\\u0000 is not allowed in a string");
        return NULL;
    }
    if (v >= 0xdc00 && v <= 0xdfff) {
        jscan_fail(s, AT(q), "invalid Unicode '\\u%04X' (a lone low surrogate)", v);
        return NULL;
    }
    if (v < 0xd800 || v > 0xdbff) return q + 6;
    if (end - q < 8 || q[6] != '\\' || q[7] != 'u') {
        jscan_fail(s, AT(q), "invalid Unicode '\\u%04X' (a high surrogate alone)", v);
        return NULL;
    }
    if (hex4(q + 8, end, &w)) {
        jscan_fail(s, AT(q + 6), "invalid \\u escape in a string");
        return NULL;
    }
    if (w < 0xdc00 || w > 0xdfff) {
        jscan_fail(s, AT(q), "invalid Unicode '\\u%04X\\u%04X'", v, w);
        return NULL;
    }
    return q + 12;
}

/* Scans the string whose opening quote is at q; returns the byte after its
 * closing quote, or NULL with the error set. *esc |= 1 when it holds an
 * escape. */
static inline __attribute__((always_inline)) const char *string_end(jscan *s, const char *q,
                                                                     int *esc) {
    const char *open = q, *end = s->end;
    q++;
    for (;;) {
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'),
                      space = _mm_set1_epi8(0x20);
        while (end - q >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
            /* signed: bytes >= 0x80 are below 0x20 too */
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
                                     _mm_cmplt_epi8(v, space));
            unsigned mask = (unsigned)_mm_movemask_epi8(m);
            if (mask) {
                q += __builtin_ctz(mask);
                goto special;
            }
            q += 16;
        }
#else
        while (end - q >= 8) {
            uint64_t v;
            memcpy(&v, q, 8);
            const uint64_t lo = 0x0101010101010101ULL, hi = 0x8080808080808080ULL;
            uint64_t a = v ^ (lo * '"'), b = v ^ (lo * '\\');
            uint64_t m = (((a - lo) & ~a) | ((b - lo) & ~b) | ((v - lo * 0x20) & ~v) | v) & hi;
            if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                break; /* the bytewise loop below finds it */
#else
                q += __builtin_ctzll(m) / 8;
                goto special;
#endif
            }
            q += 8;
        }
#endif
        while (q < end && (unsigned char)*q >= 0x20 && *q != '"' && *q != '\\' &&
               (unsigned char)*q < 0x80)
            q++;
        if (q >= end) {
            jscan_fail(s, AT(open), "unterminated string");
            return NULL;
        }
    special:;
        unsigned char c = (unsigned char)*q;
        if (c == '"') return q + 1;
        if (c == '\\') {
            *esc = 1;
            if (!(q = escape(s, q, open))) return NULL;
        } else if (c < 0x20) {
            jscan_fail(s, AT(q), "control character 0x%x in a string", c);
            return NULL;
        } else {
            size_t n = utf8_len((const unsigned char *)q, (const unsigned char *)end);
            if (!n) {
                jscan_fail(s, AT(q), "invalid UTF-8 byte 0x%02x in a string", c);
                return NULL;
            }
            q += n;
        }
    }
}

/* Scans the number at q; returns the byte after it, or NULL with the
 * error set. An integer must fit a long long and a real must not overflow,
 * as jansson checks with strtoll and strtod. */
static const char *number_end(jscan *s, const char *q) {
    const char *start = q, *end = s->end;
    int neg = 0, real = 0, exp = 0;
    if (q < end && *q == '-') neg = 1, q++;
    const char *digits = q;
    if (q < end && *q == '0') q++;
    else if (q < end && *q >= '1' && *q <= '9') {
        while (q < end && *q >= '0' && *q <= '9') q++;
    } else {
        jscan_fail(s, AT(start), "invalid number");
        return NULL;
    }
    size_t nint = (size_t)(q - digits);
    if (q < end && *q == '.') {
        real = 1;
        q++;
        if (q >= end || *q < '0' || *q > '9') {
            jscan_fail(s, AT(start), "invalid number");
            return NULL;
        }
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        real = exp = 1;
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q >= end || *q < '0' || *q > '9') {
            jscan_fail(s, AT(start), "invalid number");
            return NULL;
        }
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (!real) {
        if (nint <= 18) return q;
        /* 19 digits: compare with LLONG_MAX / -LLONG_MIN, as text */
        const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
        if (nint > 19 || memcmp(digits, lim, 19) > 0) {
            jscan_fail(s, AT(start), "too big %sinteger", neg ? "negative " : "");
            return NULL;
        }
        return q;
    }
    if (!exp && nint <= 308) return q; /* below 1e308 */
    size_t n = (size_t)(q - start);
    char small[64], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) {
        jscan_fail(s, AT(start), "out of memory");
        return NULL;
    }
    memcpy(buf, start, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    int over = errno == ERANGE && isinf(v);
    if (buf != small) free(buf);
    if (over) {
        jscan_fail(s, AT(start), "real number overflow");
        return NULL;
    }
    return q;
}

static const char *literal_end(jscan *s, const char *q) {
    const char *word = *q == 't' ? "true" : *q == 'f' ? "false" : "null";
    size_t n = strlen(word);
    if ((size_t)(s->end - q) < n || memcmp(q, word, n)) {
        jscan_fail(s, AT(q), "invalid token");
        return NULL;
    }
    return q + n;
}

/* The bit stack of the containers a skip has opened: 1 for an object. */
typedef struct {
    uint64_t bits[JSCAN_MAX_DEPTH / 64 + 1];
} open_stack;

int jscan_skip(jscan *s) {
    const char *p = s->p, *end = s->end;
    int depth = 0; /* opened by this skip */
    int room = JSCAN_MAX_DEPTH - s->depth; /* values may sit at levels 1..room */
    open_stack st;
value:
    p = jscan_skip_ws(p, end);
    if (depth + 1 > room) {
        char b[32];
        near(s, p, b, sizeof b);
        return jscan_fail(s, AT(p), "maximum parsing depth (%d) reached near %s",
                          JSCAN_MAX_DEPTH, b);
    }
    if (p >= end) return unexpected(s, p, "a value");
    switch (*p) {
    case '"': {
        int esc = 0;
        if (!(p = string_end(s, p, &esc))) return -1;
        goto after;
    }
    case '{':
        st.bits[depth / 64] |= (uint64_t)1 << (depth % 64);
        depth++;
        p = jscan_skip_ws(p + 1, end);
        if (p < end && *p == '}') {
            depth--;
            p++;
            goto after;
        }
        goto key;
    case '[':
        st.bits[depth / 64] &= ~((uint64_t)1 << (depth % 64));
        depth++;
        p = jscan_skip_ws(p + 1, end);
        if (p < end && *p == ']') {
            depth--;
            p++;
            goto after;
        }
        goto value;
    case 't': case 'f': case 'n':
        if (!(p = literal_end(s, p))) return -1;
        goto after;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
    case '8': case '9':
        if (!(p = number_end(s, p))) return -1;
        goto after;
    default:
        return unexpected(s, p, "a value");
    }
key:
    if (p >= end || *p != '"') return unexpected(s, p, "a string key or '}'");
    {
        int esc = 0;
        if (!(p = string_end(s, p, &esc))) return -1;
    }
    p = jscan_skip_ws(p, end);
    if (p >= end || *p != ':') return unexpected(s, p, "':'");
    p++;
    goto value;
after:
    if (depth == 0) {
        s->p = p;
        return 0;
    }
    p = jscan_skip_ws(p, end);
    {
        int obj = (int)((st.bits[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1);
        if (p < end && *p == ',') {
            p = jscan_skip_ws(p + 1, end);
            if (obj) goto key;
            goto value;
        }
        if (p < end && *p == (obj ? '}' : ']')) {
            depth--;
            p++;
            goto after;
        }
        return unexpected(s, p, obj ? "',' or '}'" : "',' or ']'");
    }
}

int jscan_string(jscan *s, jscan_str *out) {
    if (jscan_peek(s) != '"') return unexpected(s, s->p, "a string");
    int esc = 0;
    const char *q = string_end(s, s->p, &esc);
    if (!q) return -1;
    out->p = s->p + 1;
    out->len = (size_t)(q - s->p) - 2;
    out->esc = esc;
    s->p = q;
    return 0;
}

int jscan_enter(jscan *s, int open) {
    if (jscan_peek(s) != open) return unexpected(s, s->p, open == '{' ? "'{'" : "'['");
    if (s->depth + 1 > JSCAN_MAX_DEPTH)
        return jscan_fail(s, AT(s->p), "maximum parsing depth (%d) reached", JSCAN_MAX_DEPTH);
    s->depth++;
    s->p++;
    return 0;
}

/* Steps over ',' between items, or out through close; 1 when an item
 * follows, 0 when the container was left. */
static int next_item(jscan *s, int i, int close) {
    int c = jscan_peek(s);
    if (c == close) {
        s->p++;
        s->depth--;
        return 0;
    }
    if (i > 0) {
        if (c != ',') return unexpected(s, s->p, close == '}' ? "',' or '}'" : "',' or ']'");
        s->p++;
    }
    return 1;
}

int jscan_member(jscan *s, jscan_str *key, int i) {
    int r = next_item(s, i, '}');
    if (r <= 0) return r;
    if (jscan_peek(s) != '"') return unexpected(s, s->p, "a string key or '}'");
    if (jscan_string(s, key)) return -1;
    if (jscan_peek(s) != ':') return unexpected(s, s->p, "':'");
    s->p++;
    if (s->depth + 1 > JSCAN_MAX_DEPTH) /* the value's level */
        return jscan_fail(s, AT(s->p), "maximum parsing depth (%d) reached", JSCAN_MAX_DEPTH);
    return 1;
}

int jscan_element(jscan *s, int i) {
    int r = next_item(s, i, ']');
    if (r <= 0) return r;
    if (s->depth + 1 > JSCAN_MAX_DEPTH)
        return jscan_fail(s, AT(s->p), "maximum parsing depth (%d) reached", JSCAN_MAX_DEPTH);
    return 1;
}

int jscan_end(jscan *s) {
    if (jscan_peek(s) >= 0) return unexpected(s, s->p, "the end of the text");
    return 0;
}

int jscan_check(jscan *s, const char *text, size_t len) {
    jscan_init(s, text, len);
    if (jscan_skip(s)) return -1;
    return jscan_end(s);
}

void jscan_where(const char *text, size_t at, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t i = 0; i < at; i++) {
        unsigned char b = (unsigned char)text[i];
        if (b == '\n') l++, c = 1;
        else if ((b & 0xc0) != 0x80) c++; /* a character's first byte */
    }
    *line = l;
    *col = c;
}

void jscan_message(const jscan *s, char *buf, size_t len) {
    int line, col;
    jscan_where(s->base, s->err_at, &line, &col);
    snprintf(buf, len, "malformed JSON at line %d, column %d: %s", line, col,
             s->err[0] ? s->err : "malformed");
}

/* Appends code point v as UTF-8 to buf[cap] at *n (counting past cap). */
static void put_utf8(char *buf, size_t cap, size_t *n, unsigned v) {
    unsigned char u[4];
    size_t k;
    if (v < 0x80) u[0] = (unsigned char)v, k = 1;
    else if (v < 0x800) u[0] = (unsigned char)(0xc0 | v >> 6), u[1] = (unsigned char)(0x80 | (v & 0x3f)), k = 2;
    else if (v < 0x10000)
        u[0] = (unsigned char)(0xe0 | v >> 12), u[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3f)),
        u[2] = (unsigned char)(0x80 | (v & 0x3f)), k = 3;
    else
        u[0] = (unsigned char)(0xf0 | v >> 18), u[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3f)),
        u[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3f)), u[3] = (unsigned char)(0x80 | (v & 0x3f)),
        k = 4;
    for (size_t i = 0; i < k; i++, (*n)++)
        if (*n + 1 < cap) buf[*n] = (char)u[i];
}

size_t jscan_decode(const jscan_str *str, char *buf, size_t cap) {
    size_t n = 0;
    const char *q = str->p, *end = str->p + str->len;
    if (!str->esc) {
        n = str->len;
        if (cap) {
            size_t k = n < cap ? n : cap - 1;
            memcpy(buf, q, k);
            buf[k] = '\0';
        }
        return n;
    }
    while (q < end) {
        if (*q != '\\') {
            if (n + 1 < cap) buf[n] = *q;
            n++, q++;
            continue;
        }
        char c = q[1];
        q += 2;
        if (c != 'u') {
            char out = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r'
                     : c == 't' ? '\t' : c;
            if (n + 1 < cap) buf[n] = out;
            n++;
            continue;
        }
        unsigned v = 0, w = 0;
        hex4(q, end, &v);
        q += 4;
        if (v >= 0xd800 && v <= 0xdbff) { /* validated: a low surrogate follows */
            hex4(q + 2, end, &w);
            q += 6;
            v = 0x10000 + ((v - 0xd800) << 10) + (w - 0xdc00);
        }
        put_utf8(buf, cap, &n, v);
    }
    if (cap) buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

int jscan_equals_escaped(const jscan_str *str, const char *key, size_t kl) {
    char buf[256];
    if (kl >= sizeof buf) return 0;
    size_t n = jscan_decode(str, buf, sizeof buf);
    return n == kl && !memcmp(buf, key, kl);
}

int jscan_iequals(const jscan_str *str, const char *key) {
    size_t kl = strlen(key);
    char buf[256];
    const char *t = str->p;
    size_t n = str->len;
    if (str->esc) {
        if (kl >= sizeof buf) return 0;
        n = jscan_decode(str, buf, sizeof buf);
        t = buf;
    }
    if (n != kl) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = (unsigned char)t[i], b = (unsigned char)key[i];
        if (a >= 'A' && a <= 'Z') a = (unsigned char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (unsigned char)(b - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

/* ---- duplicate keys ------------------------------------------------------------------- */

static uint32_t key_hash(const char *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* Objects of fewer keys than this compare them one by one; from this many
 * on, they are hashed. */
#define KEYS_LINEAR 16

/* Puts every key held into the (cleared) slots. */
static void hash_all(jscan_keys *k) {
    for (size_t i = 0; i < k->n; i++) {
        size_t j = key_hash(k->keys[i].p, k->keys[i].len) & (k->nslot - 1);
        while (k->slot[j]) j = (j + 1) & (k->nslot - 1);
        k->slot[j] = (uint32_t)i + 1;
        k->at[i] = (uint32_t)j;
    }
}

/* Clears the object's keys; the room stays, and only the slots taken are
 * cleared, so that a small object after a large one costs little. */
void jscan_keys_reset(jscan_keys *k) {
    for (size_t i = 0; k->n >= KEYS_LINEAR && i < k->n; i++) k->slot[k->at[i]] = 0;
    for (size_t i = 0; i < k->n; i++) {
        free(k->own[i]);
        k->own[i] = NULL;
    }
    k->n = 0;
}

/* Doubles the room (keys and slots); 0, or -1 when out of memory. */
static int keys_grow(jscan_keys *k) {
    size_t cap = k->cap ? 2 * k->cap : 16;
    jscan_str *keys = realloc(k->keys, cap * sizeof *keys);
    if (keys) k->keys = keys;
    char **own = realloc(k->own, cap * sizeof *own);
    if (own) k->own = own;
    uint32_t *at = realloc(k->at, cap * sizeof *at);
    if (at) k->at = at;
    uint32_t *slot = calloc(2 * cap, sizeof *slot);
    if (!keys || !own || !at || !slot) {
        free(slot);
        return -1;
    }
    for (size_t i = k->cap; i < cap; i++) k->own[i] = NULL;
    free(k->slot);
    k->slot = slot;
    k->nslot = 2 * cap;
    k->cap = cap;
    if (k->n >= KEYS_LINEAR) hash_all(k);
    return 0;
}

int jscan_keys_add(jscan_keys *k, const jscan_str *key) {
    if (k->n >= UINT32_MAX - 1) return -1;
    if (k->n + 1 > k->cap && keys_grow(k)) return -1;
    jscan_str d = *key;
    char *copy = NULL;
    if (key->esc) { /* compare decoded: "a" and "\u0061" are one key */
        copy = malloc(key->len + 1);
        if (!copy) return -1;
        d.len = jscan_decode(key, copy, key->len + 1);
        d.p = copy;
        d.esc = 0;
    }
    if (k->n < KEYS_LINEAR) { /* a few keys: compared one by one */
        for (size_t i = 0; i < k->n; i++)
            if (k->keys[i].len == d.len && !memcmp(k->keys[i].p, d.p, d.len)) {
                free(copy);
                return 1;
            }
        k->keys[k->n] = d;
        k->own[k->n] = copy;
        if (++k->n == KEYS_LINEAR) hash_all(k);
        return 0;
    }
    size_t j = key_hash(d.p, d.len) & (k->nslot - 1);
    for (; k->slot[j]; j = (j + 1) & (k->nslot - 1)) {
        const jscan_str *o = &k->keys[k->slot[j] - 1];
        if (o->len == d.len && !memcmp(o->p, d.p, d.len)) {
            free(copy);
            return 1;
        }
    }
    k->slot[j] = (uint32_t)k->n + 1;
    k->at[k->n] = (uint32_t)j;
    k->keys[k->n] = d;
    k->own[k->n] = copy;
    k->n++;
    return 0;
}

void jscan_keys_free(jscan_keys *k) {
    if (!k) return;
    jscan_keys_reset(k);
    free(k->keys);
    free(k->own);
    free(k->slot);
    free(k->at);
    memset(k, 0, sizeof *k);
}
