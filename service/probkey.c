/* probkey.c -- the canonical bytes of a placement problem (probkey.h).
 *
 * Into a growing byte buffer: a tag, the job's and cluster's bytes
 * (env/modelkey.h, which checks their structs' sizes), then the decision
 * options. The options' writer names every field of decide_opts, written
 * or not, and its size is checked at compile time (on LP64, where the
 * daemon runs): a field added to it stops the build here, until the
 * writer is told whether the decision reads it.
 */
#include "service/probkey.h"

#include "env/modelkey.h"
#include "service/web.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__LP64__)
_Static_assert(sizeof(decide_opts) == 96, "decide_opts changed: update pk_place's writer");
#endif

/* The key is built in a web_text (service/web.h): a growing buffer of
 * bytes, here binary, whose trailing NUL the key does not count. */
typedef web_text kbuf;

static void put(kbuf *k, const void *v, size_t n) { web_text_put(k, v, n); }

static void put_i(kbuf *k, int64_t v) { put(k, &v, sizeof v); }

/* mkey_write's sink: appends to the key. */
static void kput(void *ud, const void *bytes, size_t n) { put(ud, bytes, n); }

static void put_opts(kbuf *k, const decide_opts *o) {
    put_i(k, o->from_policy);
    put_i(k, o->cluster_policy);
    put_i(k, (int64_t)o->plan_method);
    put_i(k, o->placement);
    put_i(k, (int64_t)o->decode);
    put_i(k, o->samples);
    put_i(k, o->node_samples);
    put_i(k, o->polish);
    put_i(k, (int64_t)o->seed);
    put_i(k, o->budget_ms);
    put_i(k, o->fallback);
    put_i(k, o->workers);
    put_i(k, o->ps);
    /* cpu_ms, mem_bytes, cancelled, cancel_ud: set by the daemon per
     * request, not part of the problem */
}

char *pk_place(const model_job *job, const model_cluster *cl, const decide_opts *o, size_t *len) {
    kbuf k = {0};
    static const char tag[8] = "place/1";
    put(&k, tag, sizeof tag);
    mkey_write(job, cl, kput, &k);
    put_opts(&k, o);
    if (k.bad) {
        free(k.b);
        return NULL;
    }
    *len = k.n;
    return k.b;
}
