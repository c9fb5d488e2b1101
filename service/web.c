/* web.c -- building replies and parsing JSON bodies for the daemon's handlers.
 *
 * Every reply body the daemon sends is made here: JSON documents dumped by
 * jansson (compact, reals with 17 significant digits so that figures round
 * trip exactly), error objects, and plain text (the Prometheus page).
 */
#include "service/web.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

uint64_t web_now_ns(void) { return clock_now_ns(); }

long long web_elapsed_us(const web_request *req) {
    return (long long)((web_now_ns() - req->start_ns) / 1000u);
}

/* Replaces the body; frees the old one. */
static void set_body(web_reply *r, char *body, size_t len) {
    free(r->body);
    r->body = body;
    r->len = len;
}

void web_reply_json(web_reply *r, int status, json_t *obj) {
    char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(obj);
    if (!text) {
        static const char oom[] = "{\"error\":\"out of memory\"}";
        char *b = malloc(sizeof oom);
        if (b) memcpy(b, oom, sizeof oom);
        set_body(r, b, b ? sizeof oom - 1 : 0);
        r->status = 500;
        r->content_type = NULL;
        snprintf(r->note, sizeof r->note, "out of memory");
        return;
    }
    set_body(r, text, strlen(text));
    r->status = status;
    r->content_type = NULL;
}

void web_reply_take(web_reply *r, int status, char *body, size_t len) {
    set_body(r, body, len);
    r->status = status;
    r->content_type = NULL;
}

/* Replaces, in place, every byte of s that does not belong to a well-formed
 * UTF-8 sequence with '?'. Messages quote the client's text and are cut to
 * fit their buffers, which can split a character: JSON needs valid UTF-8. */
static void utf8_clean(char *s) {
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p >> 5) == 0x6 ? 2 : (*p >> 4) == 0xe ? 3
              : (*p >> 3) == 0x1e ? 4 : 0;
        int ok = n > 0;
        for (int i = 1; ok && i < n; i++) ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 2) ok = *p >= 0xc2;                      /* overlong */
        if (ok && n == 3) ok = !(*p == 0xe0 && p[1] < 0xa0) &&   /* overlong */
                              !(*p == 0xed && p[1] >= 0xa0);    /* surrogate */
        if (ok && n == 4) ok = !(*p == 0xf0 && p[1] < 0x90) && *p <= 0xf4 &&
                              !(*p == 0xf4 && p[1] >= 0x90);    /* past U+10FFFF */
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

size_t web_escape_controls(char *dst, size_t cap, const char *src) {
    if (cap == 0) return 0;
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
        char esc[5];
        size_t n;
        if (*p >= 0x20 && *p != 0x7f) {
            esc[0] = (char)*p;
            n = 1;
        } else if (*p == '\n' || *p == '\r' || *p == '\t' || *p == 0x1b) {
            esc[0] = '\\';
            esc[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : *p == '\t' ? 't' : 'e';
            n = 2;
        } else {
            static const char hex[] = "0123456789abcdef";
            esc[0] = '\\', esc[1] = 'x', esc[2] = hex[*p >> 4], esc[3] = hex[*p & 15];
            n = 4;
        }
        if (j + n >= cap) break;
        memcpy(dst + j, esc, n);
        j += n;
    }
    dst[j] = '\0';
    return j;
}

void web_reply_error(web_reply *r, int status, const char *fmt, ...) {
    char raw[2048], msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    web_escape_controls(msg, sizeof msg, raw);
    utf8_clean(msg);
    snprintf(r->note, sizeof r->note, "%.250s", msg);
    web_reply_json(r, status, json_pack("{s:s}", "error", msg));
    if (r->status != 500 || status == 500) r->status = status;
}

void web_reply_text(web_reply *r, int status, const char *content_type, const char *text,
                    size_t len) {
    char *b = malloc(len + 1);
    if (!b) {
        web_reply_error(r, 500, "out of memory");
        return;
    }
    memcpy(b, text, len);
    b[len] = '\0';
    set_body(r, b, len);
    r->status = status;
    r->content_type = content_type;
}

void web_reply_header(web_reply *r, const char *name, const char *value) {
    if (r->n_headers >= WEB_MAX_HEADERS) return;
    r->header_name[r->n_headers] = name;
    snprintf(r->header_value[r->n_headers], sizeof r->header_value[0], "%s", value);
    r->n_headers++;
}

void web_reply_clear(web_reply *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
    r->status = 500;
}

json_t *web_parse_json(const char *body, size_t len, char *err, size_t errlen) {
    json_error_t je;
    if (len == 0) {
        snprintf(err, errlen, "empty body: expected a JSON object");
        return NULL;
    }
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "malformed JSON at line %d, column %d: %s", je.line, je.column,
                 je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        static const char *kinds[] = {"an object", "an array", "a string", "a number",
                                      "a number", "true", "false", "null"};
        snprintf(err, errlen, "the body must be a JSON object, got %s",
                 kinds[json_typeof(root)]);
        json_decref(root);
        return NULL;
    }
    return root;
}

/* ---- JSON text piece by piece (web_text) ---- */

void web_text_put(web_text *t, const char *p, size_t n) {
    if (t->bad) return;
    if (t->cap - t->n < n + 1) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap - t->n < n + 1) cap *= 2;
        char *b = realloc(t->b, cap);
        if (!b) {
            t->bad = 1;
            return;
        }
        t->b = b;
        t->cap = cap;
    }
    memcpy(t->b + t->n, p, n);
    t->n += n;
    t->b[t->n] = '\0';
}

void web_text_string(web_text *t, const char *p, size_t n) {
    size_t i = 0;
    while (i < n && p[i] != '"' && p[i] != '\\' && (unsigned char)p[i] >= 0x20) i++;
    if (i == n) {
        web_text_put(t, "\"", 1);
        web_text_put(t, p, n);
        web_text_put(t, "\"", 1);
        return;
    }
    json_t *s = json_stringn(p, n);
    char *d = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (!d) {
        t->bad = 1;
        return;
    }
    web_text_put(t, d, strlen(d));
    free(d);
}

char *web_dump_strings(const json_t *obj, size_t *len) {
    web_text t = {NULL, 0, 0, !json_is_object(obj)};
    const char *k;
    json_t *v;
    web_text_put(&t, "{", 1);
    int first = 1;
    json_object_foreach((json_t *)obj, k, v) {
        if (!json_is_string(v)) t.bad = 1;
        if (t.bad) break;
        if (!first) web_text_put(&t, ",", 1);
        first = 0;
        web_text_string(&t, k, strlen(k));
        web_text_put(&t, ":", 1);
        web_text_string(&t, json_string_value(v), json_string_length(v));
    }
    web_text_put(&t, "}", 1);
    if (t.bad) {
        free(t.b);
        return NULL;
    }
    *len = t.n;
    return t.b;
}

/* ---- finding a member's bytes (web_json_member) ---- */

static size_t skip_ws(const char *b, size_t i, size_t n) {
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
    return i;
}

/* skip_string returns the index after the string opening at b[i] == '"',
 * or 0 when it does not close. */
static size_t skip_string(const char *b, size_t i, size_t n) {
    for (i++; i < n; i++) {
        if (b[i] == '\\') i++;
        else if (b[i] == '"') return i + 1;
    }
    return 0;
}

/* skip_value returns the index after the value starting at b[i] (a string,
 * an object or array by its nesting, else a scalar up to a delimiter), or
 * 0 when it does not end. */
static size_t skip_value(const char *b, size_t i, size_t n) {
    if (i >= n) return 0;
    if (b[i] == '"') return skip_string(b, i, n);
    if (b[i] != '{' && b[i] != '[') {
        size_t j = i;
        while (j < n && !strchr(",}] \t\n\r", b[j])) j++;
        return j > i ? j : 0;
    }
    long depth = 0;
    for (; i < n; i++) {
        char c = b[i];
        if (c == '"') {
            size_t j = skip_string(b, i, n);
            if (!j) return 0;
            i = j - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return 0;
}

/* The scan of web_json_member and web_json_string_member: the member's
 * value must start with `open` ('{' or '"'). */
static int member_scan(const char *b, size_t n, const char *key, char open, size_t *off,
                       size_t *vlen) {
    size_t klen = strlen(key), i = skip_ws(b, 0, n);
    int found = 0;
    if (i >= n || b[i] != '{') return 0;
    i = skip_ws(b, i + 1, n);
    if (i < n && b[i] == '}') return 0;
    for (;;) {
        if (i >= n || b[i] != '"') return 0;
        size_t j = skip_string(b, i, n);
        if (!j || memchr(b + i + 1, '\\', j - i - 2)) return 0;
        int match = j - i - 2 == klen && !memcmp(b + i + 1, key, klen);
        i = skip_ws(b, j, n);
        if (i >= n || b[i] != ':') return 0;
        i = skip_ws(b, i + 1, n);
        size_t e = skip_value(b, i, n);
        if (!e) return 0;
        if (match) {
            if (found || b[i] != open) return 0;
            found = 1;
            *off = i;
            *vlen = e - i;
        }
        i = skip_ws(b, e, n);
        if (i < n && b[i] == ',') {
            i = skip_ws(b, i + 1, n);
            continue;
        }
        if (i < n && b[i] == '}') return found;
        return 0;
    }
}

int web_json_member(const char *b, size_t n, const char *key, size_t *off, size_t *vlen) {
    return member_scan(b, n, key, '{', off, vlen);
}

int web_json_string_member(const char *b, size_t n, const char *key, size_t *off,
                           size_t *vlen) {
    return member_scan(b, n, key, '"', off, vlen);
}
