/* kubeapi.c -- creating a pod's Binding through the API server (libcurl).
 *
 * One POST per bind, on its own curl handle, bounded by the client's
 * timeout; the answer's body is read (bounded) only for the API server's
 * Status message when the bind is refused.
 */
#include "service/kubeapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "base/file.h"

#define KAPI_TOKEN_MAX 16384 /* bytes of a token file */
#define KAPI_BODY_MAX 65536  /* bytes of an answer kept for its message */

struct kapi_client {
    char *url;        /* without a trailing slash */
    char *token_file; /* or NULL */
    char *ca_file;    /* or NULL */
    long timeout_ms;
};

int kapi_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1; }

kapi_client *kapi_create(const char *url, const char *token_file, const char *ca_file,
                         long timeout_ms, char *err, size_t errlen) {
    if (!url || (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))) {
        snprintf(err, errlen, "--kube-api: expected an http:// or https:// URL, got \"%s\"",
                 url ? url : "");
        return NULL;
    }
    if (token_file) { /* read once now, so that a wrong path stops the start */
        char *buf, why[256];
        size_t n;
        if (file_read(token_file, KAPI_TOKEN_MAX, &buf, &n, NULL, why, sizeof why)) {
            snprintf(err, errlen, "--kube-token-file %s: %s", token_file, why);
            return NULL;
        }
        free(buf);
    }
    kapi_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->url = strdup(url);
    c->token_file = token_file ? strdup(token_file) : NULL;
    c->ca_file = ca_file ? strdup(ca_file) : NULL;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    if (!c->url || (token_file && !c->token_file) || (ca_file && !c->ca_file)) {
        kapi_free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t n = strlen(c->url);
    while (n > 0 && c->url[n - 1] == '/') c->url[--n] = '\0';
    return c;
}

void kapi_free(kapi_client *c) {
    if (!c) return;
    free(c->url);
    free(c->token_file);
    free(c->ca_file);
    free(c);
}

/* The answer's body, kept up to KAPI_BODY_MAX bytes. */
typedef struct {
    char buf[KAPI_BODY_MAX + 1];
    size_t len;
} answer;

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
    answer *a = ud;
    size_t bytes = size * n, room = KAPI_BODY_MAX - a->len;
    size_t k = bytes < room ? bytes : room;
    memcpy(a->buf + a->len, data, k);
    a->len += k;
    a->buf[a->len] = '\0';
    return bytes;
}

/* Reads the token file into a header "Authorization: Bearer TOKEN" (caller
 * frees). NULL with err. */
static char *auth_header(const kapi_client *c, char *err, size_t errlen) {
    char *buf, why[256];
    size_t n;
    if (file_read(c->token_file, KAPI_TOKEN_MAX, &buf, &n, NULL, why, sizeof why)) {
        snprintf(err, errlen, "token file %s: %s", c->token_file, why);
        return NULL;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
            free(buf);
            snprintf(err, errlen, "token file %s: control byte in the token", c->token_file);
            return NULL;
        }
    char *h = NULL;
    if (asprintf(&h, "Authorization: Bearer %.*s", (int)n, buf) < 0) h = NULL;
    free(buf);
    if (!h) snprintf(err, errlen, "out of memory");
    return h;
}

int kapi_bind(const kapi_client *c, const char *ns, const char *name, const char *uid,
              const char *node, char *err, size_t errlen) {
    json_t *md = json_pack("{s:s, s:s}", "name", name, "namespace", ns);
    if (md && uid && *uid) json_object_set_new(md, "uid", json_string(uid));
    json_t *b = md ? json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                               "Binding", "metadata", md, "target", "apiVersion", "v1", "kind",
                               "Node", "name", node)
                   : NULL;
    char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    char *url = NULL;
    CURL *h = curl_easy_init();
    char *ens = h ? curl_easy_escape(h, ns, 0) : NULL;
    char *ename = h ? curl_easy_escape(h, name, 0) : NULL;
    if (ens && ename &&
        asprintf(&url, "%s/api/v1/namespaces/%s/pods/%s/binding", c->url, ens, ename) < 0)
        url = NULL;
    curl_free(ens);
    curl_free(ename);
    char *auth = NULL;
    struct curl_slist *hdr = NULL;
    answer *a = calloc(1, sizeof *a);
    int rc = -1;
    if (!body || !h || !url || !a) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (c->token_file && !(auth = auth_header(c, err, errlen))) goto done;
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Accept: application/json");
    if (auth) hdr = curl_slist_append(hdr, auth);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    if (c->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "POST %s: %s", url, curl_easy_strerror(cc));
    } else if (status != 201 && status != 200) {
        json_t *st = json_loadb(a->buf, a->len, 0, NULL);
        const char *msg = json_string_value(json_object_get(st, "message"));
        snprintf(err, errlen, "the API server refused the binding of %s/%s to %s: %ld%s%.300s",
                 ns, name, node, status, msg ? ": " : "", msg ? msg : "");
        json_decref(st);
    } else {
        rc = 0;
    }
done:
    curl_slist_free_all(hdr);
    if (h) curl_easy_cleanup(h);
    free(auth);
    free(url);
    free(body);
    free(a);
    return rc;
}
