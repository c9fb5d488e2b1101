/* bench_nets.c -- forward+backward time of the policy-sized reference
 * network (nets/refnet) against the time of its GEMMs alone.
 *
 * For each (batch B, hidden H) in {256, 1024} x {128, 256}, with T = 16
 * steps (a job's layers), vocabulary 64, embedding 32, D = H, K = 32
 * candidates of 16 features (about 20% of them padding), it times one
 * training pass (zero grads, forward, backward; no optimizer step) and,
 * in the same run, replays exactly the GEMM calls that pass made (recorded
 * with nn_gemm_trace: same shapes, transposes, leading dimensions, alpha,
 * beta) on scratch buffers. The ratio network / GEMMs-only is the cost of
 * everything that is not a matrix product. Times are medians of --reps
 * runs after two warm-ups. bench/run_nets.sh adds PyTorch's time for the
 * same network (scripts/bench_torch.py) and the speed-up.
 *
 * Usage: bench_nets [--threads N] [--reps R] [--batch B] [--hidden H]
 * Output: a table, and one "RESULT B H net_ms gemm_ms" line per case.
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "nets/layers.h"
#include "nets/params.h"
#include "nets/refnet.h"
#include "nets/rng.h"
#include "nets/vmath.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    int *tokens, *action;
    float *cand, *adv;
    uint8_t *mask;
} inputs;

static void make_inputs(inputs *in, const nn_refnet_cfg *g, uint64_t seed)
{
    int TB = g->T * g->B, BK = g->B * g->K;
    rng_t r;
    rng_init(&r, seed);
    in->tokens = malloc((size_t)TB * sizeof(int));
    in->action = malloc((size_t)TB * sizeof(int));
    in->adv = malloc((size_t)TB * sizeof(float));
    in->cand = malloc((size_t)BK * g->C * sizeof(float));
    in->mask = malloc((size_t)BK);
    for (int i = 0; i < TB; i++) in->tokens[i] = (int)(rng_uniform(&r) * g->V);
    for (int i = 0; i < BK * g->C; i++) in->cand[i] = (float)rng_normal(&r);
    for (int i = 0; i < BK; i++) in->mask[i] = (i % g->K) == 0 || rng_uniform(&r) < 0.8;
    for (int t = 0; t < g->T; t++)
        for (int b = 0; b < g->B; b++) {
            int a;
            do a = (int)(rng_uniform(&r) * g->K);
            while (!in->mask[b * g->K + a]);
            in->action[t * g->B + b] = a;
            in->adv[t * g->B + b] = (float)rng_normal(&r);
        }
}

static void free_inputs(inputs *in)
{
    free(in->tokens), free(in->action), free(in->adv), free(in->cand), free(in->mask);
}

static int pass(nn_refnet *net, nn_params *p, const inputs *in)
{
    char err[256];
    nn_params_zero_grad(p);
    if (nn_refnet_forward(net, in->tokens, NULL, in->cand, in->mask, in->action, in->adv, err, sizeof err)) {
        fprintf(stderr, "bench_nets: %s\n", err);
        return -1;
    }
    nn_refnet_backward(net);
    return 0;
}

/* Replays the recorded GEMMs once on scratch buffers a, b, c. */
static void replay(const nn_gemm_trace *t, const float *a, const float *b, float *c)
{
    for (int i = 0; i < t->n; i++) {
        const nn_gemm_call *g = &t->calls[i];
        cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                    g->trans_b ? CblasTrans : CblasNoTrans, g->M, g->N, g->K, g->alpha, a, g->lda, b, g->ldb,
                    g->beta, c, g->ldc);
    }
}

static int run_case(int B, int H, int reps)
{
    nn_refnet_cfg cfg = {.T = 16,
                         .B = B,
                         .V = 64,
                         .E = 32,
                         .H = H,
                         .D = H,
                         .K = 32,
                         .C = 16,
                         .beta = 0.01f,
                         .clip = 0.0f,
                         .ln_eps = 1e-5f};
    nn_tensor_spec t[NN_REFNET_TENSORS];
    char err[256];
    nn_refnet_table(&cfg, t);
    nn_params *p = nn_params_create(t, NN_REFNET_TENSORS, err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench_nets: %s\n", err);
        return -1;
    }
    nn_params_init(p, 1);
    nn_refnet *net = nn_refnet_create(&cfg, p, err, sizeof err);
    if (!net) {
        fprintf(stderr, "bench_nets: %s\n", err);
        nn_params_free(p);
        return -1;
    }
    inputs in;
    make_inputs(&in, &cfg, 2);
    int rc = 0;
    /* the GEMMs of one pass */
    nn_gemm_trace tr = {0};
    nn_gemm_trace_begin(&tr);
    rc |= pass(net, p, &in);
    nn_gemm_trace_end();
    size_t sa = 0, sb = 0, sc = 0;
    double flops = 0;
    for (int i = 0; i < tr.n; i++) {
        const nn_gemm_call *g = &tr.calls[i];
        size_t ra = (size_t)(g->trans_a ? g->K : g->M), rb = (size_t)(g->trans_b ? g->N : g->K);
        if (ra * g->lda > sa) sa = ra * g->lda;
        if (rb * g->ldb > sb) sb = rb * g->ldb;
        if ((size_t)g->M * g->ldc > sc) sc = (size_t)g->M * g->ldc;
        flops += 2.0 * g->M * g->N * g->K;
    }
    float *ga = calloc(sa, sizeof(float)), *gb = calloc(sb, sizeof(float)), *gc = calloc(sc, sizeof(float));
    for (size_t i = 0; i < sa; i++) ga[i] = 1e-3f * (float)(i % 97);
    for (size_t i = 0; i < sb; i++) gb[i] = 1e-3f * (float)(i % 89);
    double *tn = malloc((size_t)reps * sizeof(double)), *tg = malloc((size_t)reps * sizeof(double));
    for (int w = 0; w < 2; w++) {
        rc |= pass(net, p, &in);
        replay(&tr, ga, gb, gc);
    }
    /* interleaved, so both see the same machine state */
    for (int r = 0; r < reps && !rc; r++) {
        double t0 = clock_now_s();
        rc |= pass(net, p, &in);
        double t1 = clock_now_s();
        replay(&tr, ga, gb, gc);
        double t2 = clock_now_s();
        tn[r] = t1 - t0;
        tg[r] = t2 - t1;
    }
    if (!rc) {
        double mn = median(tn, reps) * 1e3, mg = median(tg, reps) * 1e3;
        printf("| %5d | %4d | %9.2f | %9.2f | %5.2f | %5d | %6.1f | %6.1f |\n", B, H, mn, mg, mn / mg, tr.n,
               flops / (mn * 1e-3) * 1e-9, flops / (mg * 1e-3) * 1e-9);
        printf("RESULT %d %d %.3f %.3f\n", B, H, mn, mg);
        fflush(stdout);
    }
    free(tn), free(tg), free(ga), free(gb), free(gc);
    nn_gemm_trace_free(&tr);
    free_inputs(&in);
    nn_refnet_free(net);
    nn_params_free(p);
    return rc;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 7, only_b = 0, only_h = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            only_b = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hidden") && i + 1 < argc)
            only_h = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_nets [--threads N] [--reps R] [--batch B] [--hidden H]\n");
            return 2;
        }
    }
    if (threads < 1 || reps < 1) {
        fprintf(stderr, "bench_nets: --threads and --reps must be >= 1\n");
        return 2;
    }
    openblas_set_num_threads(threads);
    printf("bench_nets: reference policy network, T=16 V=64 E=32 D=H K=32 C=16, forward+backward\n");
    printf("threads %d (OpenBLAS), pointwise kernels %s, median of %d\n\n", threads, vm_best()->name, reps);
    printf("| batch | hidden | net ms | GEMMs-only ms | ratio | GEMMs | net GFLOP/s | GEMM GFLOP/s |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    int Bs[2] = {256, 1024}, Hs[2] = {128, 256};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            if ((only_b && Bs[i] != only_b) || (only_h && Hs[j] != only_h)) continue;
            if (run_case(Bs[i], Hs[j], reps)) return 1;
        }
    return 0;
}
