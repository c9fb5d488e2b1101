/* vmath.h -- vectorised single-precision pointwise kernels for nets/layers.
 *
 * The float network spends everything that is not a GEMM in these loops
 * (LSTM gate activations, tanh/sigmoid/relu and their gradients, layer
 * norm, row adds), so they are written with GCC vector extensions and
 * compiled twice: once for the x86-64 baseline (SSE2, 4 lanes) and once
 * for AVX2+FMA (8 lanes); each call picks the best variant the running CPU
 * supports. The build needs no -march flag and the program still runs on
 * any x86-64 (and, with the generic variant only, on other architectures).
 *
 * tanh is a rational minimax approximation (the one Eigen uses for float):
 * absolute error below 4e-7 on all of R; sigmoid(x) = (1 + tanh(x/2)) / 2.
 * Gradients use the stored outputs (1 - y^2, y (1 - y)), as PyTorch does.
 * The double-precision twins in nets/layers (used by the finite-difference
 * tests) call libm instead; tests/test_nets_grad.c checks that both variants
 * of every kernel here agree with them to float accuracy.
 *
 * Shapes: n is an element count; B rows of H (LSTM) as documented below.
 * All outputs may not alias inputs unless stated.
 */
#ifndef STRATA_NETS_VMATH_H
#define STRATA_NETS_VMATH_H

#include <stddef.h>

typedef struct {
    const char *name; /* "generic" or "avx2" */
    /* y[n] = f(x[n]); y may equal x */
    void (*tanh_fwd)(float *y, const float *x, size_t n);
    void (*sigmoid_fwd)(float *y, const float *x, size_t n);
    void (*relu_fwd)(float *y, const float *x, size_t n);
    /* dx[n] += dy[n] * f'(.) written with the output y[n] */
    void (*tanh_bwd)(float *dx, const float *y, const float *dy, size_t n);
    void (*sigmoid_bwd)(float *dx, const float *y, const float *dy, size_t n);
    void (*relu_bwd)(float *dx, const float *y, const float *dy, size_t n);
    /* y[n] += x[n] */
    void (*add)(float *y, const float *x, size_t n);
    /* LSTM pointwise step over B rows. On entry act[B,4H] holds the gate
   * pre-activations (i, f, g, o blocks of H, PyTorch order); on return the
   * activations sigmoid(i), sigmoid(f), tanh(g), sigmoid(o). Writes
   * c[B,H] = f*c_prev + i*g, tc[B,H] = tanh(c), h[B,H] = o*tc.
   * c_prev[B,H] may be NULL (zeros). */
    void (*lstm_fwd)(float *act, float *c, float *tc, float *h, const float *c_prev, int B, int H);
    /* LSTM pointwise backward over B rows: from dh[B,H] (total gradient of h)
   * and dc[B,H] (gradient of c from later steps, NULL = zeros) writes
   * (overwrites) dpre[B,4H] (gradient of the gate pre-activations) and
   * dc_prev[B,H] (gradient of c_prev). dc_prev may alias dc. c_prev may be
   * NULL (zeros). */
    void (*lstm_bwd)(float *dpre, float *dc_prev, const float *dh, const float *dc, const float *act,
                     const float *c_prev, const float *tc, int B, int H);
    /* lstm_fwd with the gate bias bias[4H] added to the pre-activations
     * first (saves a pass over act); bias NULL: lstm_fwd. */
    void (*lstm_fwd_bias)(float *act, float *c, float *tc, float *h, const float *c_prev, const float *bias,
                          int B, int H);
    /* Layer norm over N rows of C: nn_layernorm_forward/backward in float
     * (sums in float lanes). */
    void (*ln_fwd)(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b,
                   int N, int C, float eps);
    void (*ln_bwd)(float *din, float *dg, float *db, const float *dout, const float *in, const float *g,
                   const float *mean, const float *rstd, int N, int C);
} vm_kernels;

/* The baseline variant: always available. */
const vm_kernels *vm_generic(void);
/* The AVX2+FMA variant, or NULL if the CPU (or the build target) lacks it. */
const vm_kernels *vm_avx2(void);
/* The best variant for this CPU; STRATA_VMATH=generic in the environment
 * forces the baseline (for comparisons). */
const vm_kernels *vm_best(void);

#endif
