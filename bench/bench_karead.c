/* bench_karead.c -- what reading one Nodes-form ExtenderArgs body costs.
 *
 *   /usr/bin/python3 bench/bench_extender.py --dump-body /tmp/body.json
 *   bench_karead /tmp/body.json [REPS]
 *
 * Reads the body file into memory and runs ka_read (service/k8sargs.h) on
 * it REPS times (default 20), as the extender's filter and prioritize
 * handlers do (every node read, up to K8S_MAX_CANDIDATES), then jscan_check over the whole body (the skipper alone),
 * then ka_read again with the read of an earlier body as its prev: an
 * identical copy of the body, or the file EARLIER (the extender's steady
 * state: kube-scheduler sends the same nodes each call, and every node is
 * matched byte for byte instead of scanned).
 * Each pass is timed on this thread's CPU clock; prints the minimum and
 * median of each in milliseconds, and the nodes read. The minimum is the
 * figure to compare between builds on a shared machine. Under
 * `valgrind --tool=callgrind bench_karead FILE 1` it gives the instruction
 * counts, which this VM's noise does not move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file.h"
#include "service/jscan.h"
#include "service/k8s.h"
#include "service/k8sargs.h"

static void keep_nothing(void *ud) { (void)ud; }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t[n] and prints its minimum and median under label. */
static void report(const char *label, double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%-12s min %7.2f ms  median %7.2f ms  (%d passes)\n", label, t[0], t[n / 2], n);
}

/* The bytes of file path (file_read's, *len of them), or NULL after a
 * message naming the file. */
static char *slurp(const char *path, size_t *len) {
    char *b = NULL, why[256];
    if (file_read(path, (size_t)1 << 30, &b, len, NULL, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", path, why);
        return NULL;
    }
    return b;
}

/* Reads body[len] into *a (the caller's to free) with prev as ka_read's;
 * returns the milliseconds it took on this thread's CPU clock. A refused
 * body stops the program. */
static double timed_read(const char *body, size_t len, const ka_args *prev, ka_args *a) {
    char err[256];
    double t0 = now_ms();
    int rc = ka_read(body, len, K8S_MAX_CANDIDATES, prev, a, err, sizeof err);
    double t = now_ms() - t0;
    if (rc != KA_OK) {
        fprintf(stderr, "ka_read%s: %s\n", prev ? " with prev" : "", err);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_karead BODY.json [REPS [EARLIER.json]]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (reps < 1) reps = 1;
    size_t len = 0, copy_len = 0;
    char *body = slurp(argv[1], &len);
    if (!body) return 1;
    double *t_read = malloc((size_t)reps * sizeof *t_read);
    double *t_check = malloc((size_t)reps * sizeof *t_check);
    double *t_prev = malloc((size_t)reps * sizeof *t_prev);
    char *copy = argc > 3 ? slurp(argv[3], &copy_len) : malloc(len);
    ka_memo *memo = ka_memo_create();
    if (!t_read || !t_check || !t_prev || !copy || !memo) return 1;
    if (argc <= 3) { /* the earlier body: a copy apart, as the daemon's are */
        memcpy(copy, body, len);
        copy_len = len;
    }
    {
        ka_args a;
        timed_read(copy, copy_len, NULL, &a);
        if (ka_memo_set(memo, &a, keep_nothing, NULL)) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    }
    const ka_args *prev = ka_memo_get(memo);
    int reused = 0;
    int n = 0;
    for (int r = 0; r < reps; r++) {
        ka_args a;
        t_read[r] = timed_read(body, len, NULL, &a);
        n = a.n;
        ka_free(&a);
        jscan s;
        double t0 = now_ms();
        int rc = jscan_check(&s, body, len);
        t_check[r] = now_ms() - t0;
        if (rc) {
            char msg[256];
            jscan_message(&s, msg, sizeof msg);
            fprintf(stderr, "jscan_check: %s\n", msg);
            return 1;
        }
        t_prev[r] = timed_read(body, len, prev, &a);
        reused = a.reused;
        ka_free(&a);
    }
    printf("body %.1f MB, %d nodes\n", (double)len / 1e6, n);
    report("ka_read", t_read, reps);
    report("jscan_check", t_check, reps);
    report("ka_read prev", t_prev, reps);
    printf("with prev: %d of %d nodes matched to the earlier body\n", reused, n);
    ka_memo_put(memo, prev);
    ka_memo_free(memo);
    free(copy);
    free(t_prev);
    free(t_read);
    free(t_check);
    free(body);
    return 0;
}
