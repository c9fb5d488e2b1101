/* web.h -- one HTTP exchange of the placement daemon, as its handlers see it.
 *
 * The server (service/server.c) reads a request into a web_request: method,
 * path, the bytes of the body and the time it started. A handler answers by
 * filling a web_reply: a status, a body it owns (usually a JSON document)
 * and at most a couple of extra headers. The helpers here build the usual
 * replies (a JSON document, an error {"error": "..."}), and parse a JSON
 * body with jansson into an error message that names the line and column.
 *
 * Ownership: a web_reply owns its body (malloc'd) until the server hands it
 * to libmicrohttpd; web_reply_clear releases it. Handlers never print.
 */
#ifndef STRATA_SERVICE_WEB_H
#define STRATA_SERVICE_WEB_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define WEB_MAX_HEADERS 2

/* What a handler reads. */
typedef struct {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* URL path without the query, e.g. "/v1/place" */
    const char *body;   /* NUL-terminated body bytes (may hold NULs before len) */
    size_t body_len;    /* bytes of body */
    uint64_t start_ns;  /* CLOCK_MONOTONIC when its first bytes came */
    int (*gone)(void *ud); /* NULL, or nonzero once the client has closed its
                              connection (the answer would reach no one) */
    void *gone_ud;
    /* NULL, or keeps the body's buffer past the handler: returns 1 and
     * sets *release and *release_ud (body stays valid until the handler,
     * or whoever it hands them to, calls release(release_ud) once), or 0
     * when it cannot (no body, or no memory). */
    int (*keep)(void *ud, void (**release)(void *), void **release_ud);
    void *keep_ud;
} web_request;

/* What a handler writes. */
typedef struct {
    int status;               /* HTTP status, e.g. 200 */
    char *body;               /* malloc'd bytes, or NULL for an empty body */
    size_t len;               /* bytes of body */
    const char *content_type; /* static string; NULL: application/json */
    const char *header_name[WEB_MAX_HEADERS];  /* static strings */
    char header_value[WEB_MAX_HEADERS][128];
    int n_headers;
    char note[256]; /* a short word for the log line (an error's gist), or "" */
} web_reply;

/* web_now_ns returns CLOCK_MONOTONIC in nanoseconds (clock_now_ns). */
uint64_t web_now_ns(void);

/* web_reply_json sets status and the body to obj dumped compactly (reals at
 * full precision). Steals the reference to obj. On allocation failure the
 * reply becomes a 500. */
void web_reply_json(web_reply *r, int status, json_t *obj);

/* web_reply_take sets status and the body to body[len], a JSON document
 * the caller made (malloc'd, NUL-terminated; the reply owns it now). */
void web_reply_take(web_reply *r, int status, char *body, size_t len);

/* web_reply_error sets status and the body {"error": message}; the message
 * is printf-formatted, its control bytes escaped (web_escape_controls),
 * and also kept (shortened) in r->note for the log. */
void web_reply_error(web_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* web_reply_text sets status and a body of text with the given static
 * content type (copied). */
void web_reply_text(web_reply *r, int status, const char *content_type, const char *text,
                    size_t len);

/* web_reply_header adds a header (name static, value copied, truncated to
 * 127 bytes); extra headers beyond WEB_MAX_HEADERS are dropped. */
void web_reply_header(web_reply *r, const char *name, const char *value);

/* web_reply_clear frees the body and resets r to an empty 500 reply. */
void web_reply_clear(web_reply *r);

/* web_escape_controls copies src into dst[cap] (always NUL-terminated,
 * cut to fit), writing each control byte as an escape: \n, \r, \t, \e
 * (ESC), and \xHH for the other bytes below 0x20 and for 0x7f. Every log
 * line (srv_log) and every error message (web_reply_error) goes through
 * it, so a newline or a terminal escape sent by a client can neither forge
 * a log line nor reach a terminal. Returns the length written. */
size_t web_escape_controls(char *dst, size_t cap, const char *src);

/* web_parse_json parses body[len] as one JSON object. Returns it (caller
 * owns the reference), or NULL with a message in err[errlen] naming the
 * line and column of malformed JSON ("malformed JSON at line 3, column 9:
 * ..."), or saying that the document is not an object. Duplicate keys are
 * refused. */
json_t *web_parse_json(const char *body, size_t len, char *err, size_t errlen);

/* A JSON text written piece by piece, for answers too large to build as
 * a jansson tree first: zero-initialise; b is malloc'd and NUL-terminated
 * (n bytes), bad set once memory ran out (or a value could not be
 * written), after which nothing more is added. The caller frees b. */
typedef struct {
    char *b;
    size_t n, cap;
    int bad;
} web_text;

/* web_text_put appends p[n] as it is. */
void web_text_put(web_text *t, const char *p, size_t n);

/* web_text_string appends the string p[n] (valid UTF-8) byte for byte as
 * json_dumps writes it: between quotes as it is when no byte needs an
 * escape (no '"', '\\' or byte below 0x20), else escaped by jansson. */
void web_text_string(web_text *t, const char *p, size_t n);

/* web_dump_strings writes obj, an object whose values are all strings,
 * byte for byte as json_dumps(obj, JSON_COMPACT) does (members in the
 * object's order), into a new malloc'd, NUL-terminated string of *len
 * bytes. The extender's failure maps (5,000 node names with a reason each)
 * are written several times faster than by json_dumps, which walks every
 * string code point by code point. Returns NULL when out of memory or when
 * obj is not such an object. */
char *web_dump_strings(const json_t *obj, size_t *len);

/* web_json_member finds, without parsing it, the bytes of the value of the
 * top-level member `key` of the JSON object text body[len]: returns 1 with
 * the value's first byte at body + *off and its length in *vlen when the
 * text reads as an object whose members include key exactly once, with an
 * object as its value; else 0 (no such member, twice, a top-level key
 * written with escapes, or the text not shaped as expected). The scan
 * only delimits (strings, nesting): it does not validate. The daemon uses
 * it to find a request's cluster before parsing the rest. */
int web_json_member(const char *body, size_t len, const char *key, size_t *off, size_t *vlen);

/* web_json_string_member is web_json_member for a member whose value is a
 * string: *off and *vlen delimit it, quotes included (escapes are left as
 * they are written). */
int web_json_string_member(const char *body, size_t len, const char *key, size_t *off,
                           size_t *vlen);

/* web_elapsed_us returns the whole microseconds since req->start_ns. */
long long web_elapsed_us(const web_request *req);

#endif
