/* layers.c -- instantiates the kernels of layers_impl.inc in float (vmath
 * pointwise, cblas_sgemm, with the GEMM trace) and in double (libm
 * pointwise, cblas_dgemm), plus sampling and argmax. See layers.h.
 */
#include "nets/layers.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nets/vmath.h"

/* ---- GEMM trace ---- */

static _Thread_local nn_gemm_trace *trace_cur;

void nn_gemm_trace_begin(nn_gemm_trace *t)
{
    trace_cur = t;
}
void nn_gemm_trace_end(void)
{
    trace_cur = NULL;
}

void nn_gemm_trace_free(nn_gemm_trace *t)
{
    if (!t) return;
    free(t->calls);
    t->calls = NULL;
    t->n = t->cap = 0;
}

static void trace_record(int ta, int tb, int M, int N, int K, float alpha, int lda, int ldb, float beta,
                         int ldc)
{
    nn_gemm_trace *t = trace_cur;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 256;
        nn_gemm_call *c = realloc(t->calls, (size_t)cap * sizeof *c);
        if (!c) {
            t->oom = 1;
            return;
        }
        t->calls = c;
        t->cap = cap;
    }
    t->calls[t->n++] = (nn_gemm_call){ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
}

/* Row-major C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C.
 *
 * A product with one row or one column (a batch-1 decode step, a layer with
 * one output) goes to cblas_sgemv: sgemm would pack the whole weight matrix
 * into its panel layout first, which for a single row costs as much as the
 * product itself. beta == 0 clears the output first, as sgemm does, so an
 * uninitialised output is never read. */
static void gemm_f(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (trace_cur) trace_record(ta, tb, M, N, K, alpha, lda, ldb, beta, ldc);
    if (K > 0 && M == 1) {
        /* c[N] = alpha op(B)^T a + beta c, a = row 0 of op(A) */
        if (beta == 0.0f) memset(C, 0, (size_t)N * sizeof *C);
        cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? N : K, tb ? K : N, alpha, B, ldb, A,
                    ta ? lda : 1, beta, C, 1);
        return;
    }
    if (K > 0 && N == 1) {
        /* c[M] (stride ldc) = alpha op(A) b + beta c, b = column 0 of op(B) */
        if (beta == 0.0f)
            for (int i = 0; i < M; i++) C[(size_t)i * ldc] = 0.0f;
        cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, ta ? K : M, ta ? M : K, alpha, A, lda, B,
                    tb ? 1 : ldb, beta, C, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
}

void nn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
             float beta, float *C, int ldc)
{
    gemm_f(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void gemm_d(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                   const double *B, int ldb, double beta, double *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
}

/* ---- double pointwise kernels: the exact formulas, with libm ---- */

static double sigm_d(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static void pwd_tanh_fwd(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = tanh(x[i]);
}
static void pwd_sigmoid_fwd(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = sigm_d(x[i]);
}
static void pwd_relu_fwd(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
}
static void pwd_tanh_bwd(double *dx, const double *y, const double *dy, size_t n)
{
    for (size_t i = 0; i < n; i++) dx[i] += dy[i] * (1 - y[i] * y[i]);
}
static void pwd_sigmoid_bwd(double *dx, const double *y, const double *dy, size_t n)
{
    for (size_t i = 0; i < n; i++) dx[i] += dy[i] * y[i] * (1 - y[i]);
}
static void pwd_relu_bwd(double *dx, const double *y, const double *dy, size_t n)
{
    for (size_t i = 0; i < n; i++) dx[i] += y[i] > 0 ? dy[i] : 0;
}
static void pwd_add(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

static void pwd_lstm_fwd_b(double *act, double *c, double *tc, double *h, const double *c_prev,
                           const double *bias, int B, int H)
{
    for (int b = 0; b < B; b++) {
        double *a = act + (size_t)b * 4 * H;
        size_t o = (size_t)b * H;
        if (bias)
            for (int j = 0; j < 4 * H; j++) a[j] += bias[j];
        for (int j = 0; j < H; j++) {
            double i = sigm_d(a[j]), f = sigm_d(a[H + j]), g = tanh(a[2 * H + j]), og = sigm_d(a[3 * H + j]);
            double cv = f * (c_prev ? c_prev[o + j] : 0) + i * g;
            a[j] = i;
            a[H + j] = f;
            a[2 * H + j] = g;
            a[3 * H + j] = og;
            c[o + j] = cv;
            tc[o + j] = tanh(cv);
            h[o + j] = og * tc[o + j];
        }
    }
}

static void pwd_lstm_fwd(double *act, double *c, double *tc, double *h, const double *c_prev, int B, int H)
{
    pwd_lstm_fwd_b(act, c, tc, h, c_prev, NULL, B, H);
}

/* Layer norm, statistics accumulated in double. */
static void pwd_ln_fwd(double *out, double *mean, double *rstd, const double *in, const double *g,
                       const double *b, int N, int C, double eps)
{
    for (int n = 0; n < N; n++) {
        const double *x = in + (size_t)n * C;
        double *o = out + (size_t)n * C;
        double s = 0;
        for (int i = 0; i < C; i++) s += x[i];
        double m = s / C, v = 0;
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        double rs = 1.0 / sqrt(v / C + eps);
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * rs * g[i] + b[i];
        mean[n] = m;
        rstd[n] = rs;
    }
}

static void pwd_ln_bwd(double *din, double *dg, double *db, const double *dout, const double *in,
                       const double *g, const double *mean, const double *rstd, int N, int C)
{
    for (int n = 0; n < N; n++) {
        const double *x = in + (size_t)n * C, *dy = dout + (size_t)n * C;
        double m = mean[n], rs = rstd[n];
        double sd = 0, sdn = 0; /* sums of dnorm and dnorm*norm */
        for (int i = 0; i < C; i++) {
            double nrm = (x[i] - m) * rs;
            double dn = dy[i] * g[i];
            sd += dn;
            sdn += dn * nrm;
            dg[i] += nrm * dy[i];
            db[i] += dy[i];
        }
        if (!din) continue;
        double md = sd / C, mdn = sdn / C;
        double *dx = din + (size_t)n * C;
        for (int i = 0; i < C; i++) {
            double nrm = (x[i] - m) * rs;
            dx[i] += (dy[i] * g[i] - md - nrm * mdn) * rs;
        }
    }
}

static void pwd_lstm_bwd(double *dpre, double *dc_prev, const double *dh, const double *dc, const double *act,
                         const double *c_prev, const double *tc, int B, int H)
{
    for (int b = 0; b < B; b++) {
        const double *a = act + (size_t)b * 4 * H;
        double *dp = dpre + (size_t)b * 4 * H;
        size_t o = (size_t)b * H;
        for (int j = 0; j < H; j++) {
            double i = a[j], f = a[H + j], g = a[2 * H + j], og = a[3 * H + j], t = tc[o + j];
            double cp = c_prev ? c_prev[o + j] : 0;
            double d_o = dh[o + j] * t;
            double dcv = (dc ? dc[o + j] : 0) + dh[o + j] * og * (1 - t * t);
            dc_prev[o + j] = dcv * f;
            dp[j] = dcv * g * i * (1 - i);
            dp[H + j] = dcv * cp * f * (1 - f);
            dp[2 * H + j] = dcv * i * (1 - g * g);
            dp[3 * H + j] = d_o * og * (1 - og);
        }
    }
}

/* ---- float instantiation ---- */

#define REAL float
#define SFX(x) x
#define GEMM gemm_f
#define EXPR(x) expf(x)
#define PW_TANH_FWD(y, x, n) vm_best()->tanh_fwd(y, x, n)
#define PW_SIGMOID_FWD(y, x, n) vm_best()->sigmoid_fwd(y, x, n)
#define PW_RELU_FWD(y, x, n) vm_best()->relu_fwd(y, x, n)
#define PW_TANH_BWD(dx, y, dy, n) vm_best()->tanh_bwd(dx, y, dy, n)
#define PW_SIGMOID_BWD(dx, y, dy, n) vm_best()->sigmoid_bwd(dx, y, dy, n)
#define PW_RELU_BWD(dx, y, dy, n) vm_best()->relu_bwd(dx, y, dy, n)
#define PW_ADD(y, x, n) vm_best()->add(y, x, n)
#define PW_LSTM_FWD(...) vm_best()->lstm_fwd(__VA_ARGS__)
#define PW_LSTM_FWD_B(...) vm_best()->lstm_fwd_bias(__VA_ARGS__)
#define PW_LSTM_BWD(...) vm_best()->lstm_bwd(__VA_ARGS__)
#define PW_LN_FWD(...) vm_best()->ln_fwd(__VA_ARGS__)
#define PW_LN_BWD(...) vm_best()->ln_bwd(__VA_ARGS__)
#include "nets/layers_impl.inc"
#undef REAL
#undef SFX
#undef GEMM
#undef EXPR
#undef PW_TANH_FWD
#undef PW_SIGMOID_FWD
#undef PW_RELU_FWD
#undef PW_TANH_BWD
#undef PW_SIGMOID_BWD
#undef PW_RELU_BWD
#undef PW_ADD
#undef PW_LSTM_FWD
#undef PW_LSTM_FWD_B
#undef PW_LSTM_BWD
#undef PW_LN_FWD
#undef PW_LN_BWD

/* ---- double instantiation ---- */

#define REAL double
#define SFX(x) x##_d
#define GEMM gemm_d
#define EXPR(x) exp(x)
#define PW_TANH_FWD pwd_tanh_fwd
#define PW_SIGMOID_FWD pwd_sigmoid_fwd
#define PW_RELU_FWD pwd_relu_fwd
#define PW_TANH_BWD pwd_tanh_bwd
#define PW_SIGMOID_BWD pwd_sigmoid_bwd
#define PW_RELU_BWD pwd_relu_bwd
#define PW_ADD pwd_add
#define PW_LSTM_FWD pwd_lstm_fwd
#define PW_LSTM_FWD_B pwd_lstm_fwd_b
#define PW_LSTM_BWD pwd_lstm_bwd
#define PW_LN_FWD pwd_ln_fwd
#define PW_LN_BWD pwd_ln_bwd
#include "nets/layers_impl.inc"

size_t nn_lstm_work_size(int T, int B, int H)
{
    return (size_t)T * B * 4 * H + 4 * (size_t)B * H;
}

/* ---- sampling ---- */

int nn_sample(int *action, const float *probs, const uint8_t *mask, int N, int K, rng_t *r)
{
    int none = 0;
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * K;
        const uint8_t *mk = mask ? mask + (size_t)n * K : NULL;
        double total = 0;
        int last = -1;
        for (int k = 0; k < K; k++)
            if ((!mk || mk[k]) && p[k] > 0) {
                total += p[k];
                last = k;
            }
        if (last < 0) {
            /* no positive probability (NaN or underflowed logits): draw
             * uniformly among the real entries rather than hand back -1,
             * which a caller would use as an index; -1 only when the row
             * has no real entry at all */
            int real = 0;
            for (int k = 0; k < K; k++) real += !mk || mk[k];
            if (real == 0) {
                action[n] = -1;
                none++;
                continue;
            }
            int j = (int)(rng_uniform_at(r->seed, r->stream, r->counter + (uint64_t)n) * real);
            if (j >= real) j = real - 1;
            for (int k = 0; k < K; k++)
                if ((!mk || mk[k]) && j-- == 0) {
                    action[n] = k;
                    break;
                }
            continue;
        }
        double u = rng_uniform_at(r->seed, r->stream, r->counter + (uint64_t)n) * total, cum = 0;
        int pick = last; /* rounding: u*total may reach the float sum */
        for (int k = 0; k < K; k++) {
            if ((mk && !mk[k]) || !(p[k] > 0)) continue;
            cum += p[k];
            if (u < cum) {
                pick = k;
                break;
            }
        }
        action[n] = pick;
    }
    r->counter += (uint64_t)N;
    return none;
}

int nn_argmax(int *action, const float *values, const uint8_t *mask, int N, int K)
{
    int none = 0;
    for (int n = 0; n < N; n++) {
        const float *v = values + (size_t)n * K;
        const uint8_t *mk = mask ? mask + (size_t)n * K : NULL;
        int best = -1;
        for (int k = 0; k < K; k++)
            if ((!mk || mk[k]) && (best < 0 || v[k] > v[best])) best = k;
        action[n] = best;
        none += best < 0;
    }
    return none;
}
