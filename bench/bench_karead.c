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

/* The bytes of file path (malloc'd, *len of them), or NULL after a message. */
static char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = *len > 0 ? malloc((size_t)*len) : NULL;
    if (!b || fread(b, 1, (size_t)*len, f) != (size_t)*len) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_karead BODY.json [REPS [EARLIER.json]]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (reps < 1) reps = 1;
    long len = 0, copy_len = 0;
    char *body = slurp(argv[1], &len);
    if (!body) return 1;
    double *t_read = malloc((size_t)reps * sizeof *t_read);
    double *t_check = malloc((size_t)reps * sizeof *t_check);
    double *t_prev = malloc((size_t)reps * sizeof *t_prev);
    char *copy = argc > 3 ? slurp(argv[3], &copy_len) : malloc((size_t)len);
    ka_memo *memo = ka_memo_create();
    if (!t_read || !t_check || !t_prev || !copy || !memo) return 1;
    if (argc <= 3) { /* the earlier body: a copy apart, as the daemon's are */
        memcpy(copy, body, (size_t)len);
        copy_len = len;
    }
    {
        ka_args a;
        char err[256];
        if (ka_read(copy, (size_t)copy_len, K8S_MAX_CANDIDATES, NULL, &a, err, sizeof err) != KA_OK ||
            ka_memo_set(memo, &a, keep_nothing, NULL)) {
            fprintf(stderr, "ka_read: %s\n", err);
            return 1;
        }
        ka_free(&a);
    }
    const ka_args *prev = ka_memo_get(memo);
    int reused = 0;
    int n = 0;
    for (int r = 0; r < reps; r++) {
        ka_args a;
        char err[256];
        double t0 = now_ms();
        int rc = ka_read(body, (size_t)len, K8S_MAX_CANDIDATES, NULL, &a, err, sizeof err);
        t_read[r] = now_ms() - t0;
        n = a.n;
        ka_free(&a);
        if (rc != KA_OK) {
            fprintf(stderr, "ka_read: %s\n", err);
            return 1;
        }
        jscan s;
        t0 = now_ms();
        rc = jscan_check(&s, body, (size_t)len);
        t_check[r] = now_ms() - t0;
        if (rc) {
            char msg[256];
            jscan_message(&s, msg, sizeof msg);
            fprintf(stderr, "jscan_check: %s\n", msg);
            return 1;
        }
        t0 = now_ms();
        rc = ka_read(body, (size_t)len, K8S_MAX_CANDIDATES, prev, &a, err, sizeof err);
        t_prev[r] = now_ms() - t0;
        reused = a.reused;
        ka_free(&a);
        if (rc != KA_OK) {
            fprintf(stderr, "ka_read with prev: %s\n", err);
            return 1;
        }
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
