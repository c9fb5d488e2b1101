/* bench_search_gap.c -- issue #15's study: how far from the optimum search
 * mode ends, by reward (docs/agent.md copies its tables).
 *
 *   bench_search_gap [N [SECONDS [REWARDS [SEED [THREADS [FIRST [POLISH]]]]]]]
 *
 * N random instances (default 200; FIRST.. FIRST+N-1, default FIRST 0) of 6
 * to 12 layers, family SEED
 * (default 1), drawn by tests/search_instance.h: plain, homogeneous-optimum
 * and tight-capacity ones in turn. Each instance's optimum is found by
 * brute force (every type assignment through model_eval) and checked
 * against the exact solver the trainer runs. Then, for each reward of
 * REWARDS (a comma list of log, ratio, rank; default "log,ratio"), search
 * mode with its defaults trains from scratch on it for at most SECONDS
 * (default 20) of CPU time (the process's: with THREADS = 1, the default,
 * and OPENBLAS_NUM_THREADS=1 it is one core's time, whatever the load of
 * a shared machine; wall time is printed beside it), stopping early
 * once the best plan reaches the optimum. POLISH 1 (the default) keeps
 * search mode's polish of its best samples (segment moves), 0 turns it off
 * (the sampling alone). Printed: one line per instance and
 * reward (the best sample's gap, the answer's best_from, the mean share of
 * zero advantages, time), then per reward the distribution of the best
 * sample's gap (min, median, p90, p99, max; count above 1%), the same over
 * the single-type optima and over the instances where capacity binds, and
 * the worst gap of the answers (never above 0: a reference plan is
 * returned when it is cheaper). Exit status 1 when the exact solver
 * disagrees with brute force.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/search_instance.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* pct returns the q-quantile (nearest rank) of sorted v[n]. */
static double pct(const double *v, int n, double q) {
    int i = (int)ceil(q * n) - 1;
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    return v[i];
}

/* dist prints the distribution of gaps g[n] (percent). */
static void dist(const char *label, double *g, int n) {
    if (n == 0) {
        printf("  %-26s (none)\n", label);
        return;
    }
    qsort(g, (size_t)n, sizeof *g, cmp_d);
    int over = 0;
    for (int i = 0; i < n; i++) over += g[i] > 0.01;
    printf("  %-26s n %3d  min %.3f%%  median %.3f%%  p90 %.3f%%  p99 %.3f%%  max %.3f%%  over 1%%: %d\n", label, n,
           100 * g[0], 100 * pct(g, n, 0.5), 100 * pct(g, n, 0.9), 100 * pct(g, n, 0.99), 100 * g[n - 1], over);
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 200;
    double secs = argc > 2 ? atof(argv[2]) : 20.0;
    const char *rewards = argc > 3 ? argv[3] : "log,ratio";
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    int threads = argc > 5 ? atoi(argv[5]) : 1;
    int first = argc > 6 ? atoi(argv[6]) : 0;
    int polish = argc > 7 ? atoi(argv[7]) != 0 : 1;
    int rw[3], nr = 0;
    static const char *const RNAME[3] = {"log", "ratio", "rank"};
    char buf[64];
    snprintf(buf, sizeof buf, "%s", rewards);
    for (char *tok = strtok(buf, ","); tok && nr < 3; tok = strtok(NULL, ",")) {
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (!strcmp(tok, RNAME[j])) k = j; /* the order of agent_reward */
        if (k < 0 || N < 1) {
            fprintf(stderr, "usage: bench_search_gap [N [SECONDS [log,ratio,rank [SEED [THREADS [FIRST [POLISH]]]]]]]\n");
            return 2;
        }
        rw[nr++] = k;
    }
    char out[] = "/tmp/strata-search-gap-XXXXXX";
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        return 1;
    }
    double *gap = calloc((size_t)N * nr, sizeof *gap), *ans = calloc((size_t)N * nr, sizeof *ans);
    double *zadv = calloc((size_t)N * nr, sizeof *zadv), *tsec = calloc((size_t)N * nr, sizeof *tsec);
    int *single = calloc((size_t)N, sizeof *single), *cap = calloc((size_t)N, sizeof *cap);
    int *from_ref = calloc((size_t)N * nr, sizeof *from_ref);
    if (!gap || !ans || !zadv || !tsec || !single || !cap || !from_ref) return 1;
    int mismatch = 0, n_single = 0, n_cap = 0;
    printf("search mode, %d instances of family %llu, at most %.0f CPU s each, %d thread(s), polish %s\n", N,
           (unsigned long long)seed, secs, threads, polish ? "on" : "off");
    printf("%-22s %3s %2s %6s %3s %3s | %-5s %9s %8s %7s %6s %6s %s\n", "instance", "L", "T", "brute", "1ty", "cap",
           "reward", "gap", "zero_adv", "steps", "cpu", "wall", "best_from");
    for (int i = 0; i < N; i++) {
        ri_instance in;
        sg_brute_result b;
        sg_make(&in, seed, first + i, &b);
        single[i] = b.single_type;
        cap[i] = b.cap_binds;
        n_single += b.single_type;
        n_cap += b.cap_binds;
        for (int k = 0; k < nr; k++) {
            sg_search_result r;
            char err[1024];
            if (sg_search(&in, rw[k], secs, 1 << 30, b.opt, threads, polish, out, &r, err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", in.job.name, err);
                return 1;
            }
            if (k == 0 && fabs(r.exact - b.opt) > 1e-9 * b.opt) {
                mismatch++;
                printf("MISMATCH %s: exact $%.10g, brute force $%.10g\n", in.job.name, r.exact, b.opt);
            }
            int e = i * nr + k;
            gap[e] = isfinite(r.sampled) ? r.sampled / b.opt - 1 : INFINITY;
            ans[e] = r.answer / b.opt - 1;
            zadv[e] = r.zero_adv_mean;
            tsec[e] = r.seconds;
            from_ref[e] = strncmp(r.from, "reference:", 10) == 0;
            printf("%-22s %3d %2d %6ld %3s %3s | %-5s %8.3f%% %8.3f %7ld %5.1fs %5.1fs %s\n", in.job.name,
                   in.job.n_layers, in.cl.n_types, b.n, b.single_type ? "yes" : "no", b.cap_binds ? "yes" : "no",
                   RNAME[rw[k]], 100 * gap[e], r.zero_adv_mean, r.steps, r.seconds, r.wall, r.from);
            fflush(stdout);
        }
    }
    printf("\n%d instances: %d with a single-type optimum, %d where capacity binds; exact = brute force on %d\n", N,
           n_single, n_cap, N - mismatch);
    double *g = malloc((size_t)N * sizeof *g);
    if (!g) return 1;
    for (int k = 0; k < nr; k++) {
        printf("reward %s: gap of the best sample to the optimum\n", RNAME[rw[k]]);
        int n = 0;
        for (int i = 0; i < N; i++) g[n++] = gap[i * nr + k];
        dist("all", g, n);
        n = 0;
        for (int i = 0; i < N; i++)
            if (single[i]) g[n++] = gap[i * nr + k];
        dist("single-type optimum", g, n);
        n = 0;
        for (int i = 0; i < N; i++)
            if (cap[i]) g[n++] = gap[i * nr + k];
        dist("capacity binds", g, n);
        double worst_ans = -INFINITY, z = 0, ts = 0;
        int nref = 0;
        for (int i = 0; i < N; i++) {
            int e = i * nr + k;
            if (ans[e] > worst_ans) worst_ans = ans[e];
            nref += from_ref[e];
            z += zadv[e];
            ts += tsec[e];
        }
        printf("  answers: worst gap %.3f%%, a reference plan returned on %d; mean zero_adv_share %.3f; "
               "%.0f CPU s in all\n",
               100 * worst_ans, nref, z / N, ts);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    remove(path);
    rmdir(out);
    free(g);
    free(gap);
    free(ans);
    free(zadv);
    free(tsec);
    free(single);
    free(cap);
    free(from_ref);
    return mismatch ? 1 : 0;
}
