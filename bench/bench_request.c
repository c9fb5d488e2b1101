/* bench_request.c -- what reading one new /v1/place body costs the daemon.
 *
 *   bench_request [REPS]
 *
 * Builds the body of bench/serve_wrk.sh --miss (bench/wrk/place.lua: a
 * 32-layer job on a 64-node cluster of 4 types and 4 zones, about 12 KB)
 * and reads it REPS times (default 2000) as the daemon reads a body its
 * parse cache has never seen: jansson (json_loadb, as web_parse_json
 * calls it), then rj_load_run (limits, the config walker, the fit). Where
 * the tree has rj_load_run_on (RJ_LOAD_RUN_ON), it also reads each body as
 * the daemon reads one whose cluster it read before (service/api.c
 * parse_place): web_json_member finds the cluster's bytes, the cache of
 * clusters (an rc_cache) finds them, json_loadb parses the rest with null
 * in their place, and rj_load_run_on loads the job on the kept cluster.
 * Each read is timed on this thread's CPU clock; prints the minimum and
 * median of each part in microseconds. The minimum is the figure to compare
 * between builds on a shared machine: other processes can only add to it.
 * Only rj_load_run's public contract is used, so the same file builds
 * against older trees for a before/after table (docs/serve.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "env/config.h"
#include "service/runjson.h"
#ifdef RJ_LOAD_RUN_ON
#include "service/reqcache.h"
#include "service/web.h"
#endif

/* The body of place.lua for job name `name` into buf[len]; returns its
 * length (0 when it does not fit). */
static size_t build_body(char *buf, size_t len, const char *name)
{
    static const char *const types[] = {
        "{\"name\":\"cpu\",\"kind\":\"cpu\",\"flops\":\"1.2TFLOPS\",\"io_bw\":\"3.1GB/s\","
        "\"net_bw\":\"10Gbit/s\",\"mem\":\"192GiB\",\"price\":0.68}",
        "{\"name\":\"V100\",\"kind\":\"gpu\",\"flops\":\"8.4TFLOPS\",\"io_bw\":\"3.94GB/s\","
        "\"net_bw\":\"25Gbit/s\",\"mem\":\"32GiB\",\"price\":3.06}",
        "{\"name\":\"T4\",\"kind\":\"gpu\",\"flops\":\"3.24TFLOPS\",\"io_bw\":\"3.94GB/s\","
        "\"net_bw\":\"25Gbit/s\",\"mem\":\"16GiB\",\"price\":0.978}",
        "{\"name\":\"A100\",\"kind\":\"gpu\",\"flops\":\"60TFLOPS\",\"io_bw\":\"6GB/s\","
        "\"net_bw\":\"100Gbit/s\",\"mem\":\"80GiB\",\"price\":4.1}",
    };
    static const char *const tn[] = {"cpu", "V100", "T4", "A100"};
    size_t n = 0;
#define PUT(...)                                                         \
    do {                                                                 \
        int w_ = snprintf(buf + n, len - n, __VA_ARGS__);                \
        if (w_ < 0 || (size_t)w_ >= len - n)                             \
            return 0;                                                    \
        n += (size_t)w_;                                                 \
    } while (0)
    PUT("{\"cluster\":{\"types\":[%s,%s,%s,%s],", types[0], types[1], types[2], types[3]);
    PUT("\"zones\":[{\"name\":\"z0\"},{\"name\":\"z1\"},{\"name\":\"z2\"},{\"name\":\"z3\"}],"
        "\"inter_bw\":\"10Gbit/s\",\"inter_latency\":\"1ms\",\"nodes\":[");
    for (int i = 0; i < 64; i++)
        PUT("%s{\"name\":\"n%02d\",\"type\":\"%s\",\"units\":%d,\"ps_slots\":2,\"zone\":\"z%d\","
            "\"bw\":\"25Gbit/s\",\"latency\":\"20us\",\"loss\":\"0.01%%\"}",
            i ? "," : "", i, tn[i % 4], i % 4 == 0 ? 16 : 8, i % 4);
    PUT("]},\"job\":{\"name\":\"%s\",\"batch\":64,\"samples\":1e8,\"min_throughput\":2000,"
        "\"layers\":[", name);
    for (int i = 0; i < 32; i++)
        PUT("%s{\"name\":\"l%02d\",\"flops\":\"%dGFLOP\",\"io\":\"%s\",\"act\":\"512KB\","
            "\"params\":\"%dMB\",\"mem\":\"500MB\"}",
            i ? "," : "", i, 1 + i % 5, i < 2 ? "64KB" : "0", 1 + i % 7);
    PUT("]},\"options\":{}}");
#undef PUT
    return n;
}

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("%-28s min %8.1f us   median %8.1f us\n", what, t[0], t[n / 2]);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 2000;
    if (reps < 1 || reps > 1000000) {
        fprintf(stderr, "usage: bench_request [REPS]  (1 to 1000000)\n");
        return 2;
    }
    static char body[32768];
    double *tj = malloc(sizeof(double) * (size_t)reps), *tl = malloc(sizeof(double) * (size_t)reps);
    double *tt = malloc(sizeof(double) * (size_t)reps);
    if (!tj || !tl || !tt) {
        fprintf(stderr, "bench_request: out of memory\n");
        return 1;
    }
    rj_limits lim = {RJ_DEFAULT_MAX_LAYERS, RJ_DEFAULT_MAX_NODES, RJ_DEFAULT_MAX_TYPES};
    size_t len = 0;
    for (int r = 0; r < reps; r++) {
        char name[32], err[2048];
        snprintf(name, sizeof name, "bench-%d", r % 1000 + 1); /* every body new, as --miss */
        len = build_body(body, sizeof body, name);
        if (!len) {
            fprintf(stderr, "bench_request: the body does not fit\n");
            return 1;
        }
        double t0 = cpu_us();
        json_error_t je;
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
        double t1 = cpu_us();
        cfg_run *run = NULL;
        int rc = root ? rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                                    NULL, &lim, &run, err, sizeof err)
                      : -1;
        double t2 = cpu_us();
        if (rc != 0) {
            fprintf(stderr, "bench_request: %s\n", root ? err : je.text);
            return 1;
        }
        cfg_free(run);
        json_decref(root);
        tj[r] = t1 - t0;
        tl[r] = t2 - t1;
        tt[r] = t2 - t0;
    }
    printf("body: %zu bytes (32 layers, 64 nodes), %d reads, thread CPU time\n", len, reps);
    report("json_loadb", tj, reps);
    report("rj_load_run (walk, limits)", tl, reps);
    report("read in all", tt, reps);
#ifdef RJ_LOAD_RUN_ON
    /* the cluster known: keep the one of the first body, by its bytes */
    rc_cache *kept = rc_create(8, 64u << 20);
    char err[2048], *rest = malloc(sizeof body);
    size_t off = 0, vlen = 0;
    cfg_run *first = NULL;
    json_t *r0 = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (!kept || !rest || !r0 || !web_json_member(body, len, "cluster", &off, &vlen) ||
        rj_load_run(json_object_get(r0, "cluster"), json_object_get(r0, "job"), NULL, &lim, &first,
                    err, sizeof err)) {
        fprintf(stderr, "bench_request: cannot set the known cluster up\n");
        return 1;
    }
    json_decref(r0);
    model_cluster *kc = calloc(1, sizeof *kc);
    rc_entry *ref = NULL;
    if (!kc || model_cluster_copy(kc, &first->cluster) ||
        !rc_put(kept, 1, body + off, vlen, kc, NULL, &ref)) {
        fprintf(stderr, "bench_request: out of memory\n");
        return 1;
    }
    rc_release(kept, ref);
    cfg_free(first);
    for (int r = 0; r < reps; r++) {
        char name[32];
        snprintf(name, sizeof name, "bench-%d", r % 1000 + 1);
        len = build_body(body, sizeof body, name);
        double t0 = cpu_us();
        const model_cluster *cl = NULL;
        if (web_json_member(body, len, "cluster", &off, &vlen))
            cl = rc_get(kept, 1, body + off, vlen, &ref);
        size_t n = len - vlen + 4;
        memcpy(rest, body, off);
        memcpy(rest + off, "null", 4);
        memcpy(rest + off + 4, body + off + vlen, len - off - vlen);
        json_t *root = cl ? json_loadb(rest, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
        double t1 = cpu_us();
        cfg_run *run = NULL;
        int rc = root ? rj_load_run_on(cl, json_object_get(root, "job"), NULL, &lim, &run, err,
                                       sizeof err)
                      : -1;
        double t2 = cpu_us();
        if (rc != 0) {
            fprintf(stderr, "bench_request: the known-cluster read failed: %s\n", root ? err : "");
            return 1;
        }
        cfg_free(run);
        json_decref(root);
        rc_release(kept, ref);
        tj[r] = t1 - t0;
        tl[r] = t2 - t1;
        tt[r] = t2 - t0;
    }
    printf("the cluster read before (its bytes found in the daemon's cache of clusters):\n");
    report("find, json_loadb of the rest", tj, reps);
    report("rj_load_run_on (job)", tl, reps);
    report("read in all", tt, reps);
    model_cluster_clear(kc);
    free(kc);
    free(rest);
    rc_free(kept);
#endif
    free(tj);
    free(tl);
    free(tt);
    return 0;
}
