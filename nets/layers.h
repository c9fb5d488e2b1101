/* layers.h -- forward and backward kernels of the network layers, llm.c style.
 *
 * Conventions (all layers):
 * - Outputs first, then inputs, then shapes. Every pointer argument has its
 *   shape in a comment; row-major, last index fastest.
 * - Backward functions ACCUMULATE (+=) into every gradient they write, so a
 *   tensor used twice just receives two calls; callers zero gradients once
 *   per step (nn_params_zero_grad). A gradient pointer documented as
 *   "or NULL" is skipped (e.g. no gradient for the network's raw inputs).
 * - Kernels do not allocate (except nn_gemm_trace); scratch is passed in.
 * - Matrix products go through cblas (OpenBLAS); pointwise work through
 *   nets/vmath (vectorised, AVX2 when available).
 * - Sequences are time-major: x[T,B,In] holds step t of instance b at row
 *   t*B + b, so one step is a contiguous [B,In] block and a whole sequence is
 *   one [T*B, In] matrix for a single GEMM.
 *
 * Every kernel exists twice: in float (nn_*), used by the network, and in
 * double (nn_*_d), used by the finite-difference tests. Both are generated
 * from one body, nets/layers_impl.inc, so the code that is checked against
 * finite differences is the code that runs: same loops, same GEMM calls
 * (cblas_sgemm vs cblas_dgemm), same index arithmetic. They differ only in
 * the pointwise math: the float build calls the vectorised approximations
 * of nets/vmath, the double build the libm functions. A reimplementation
 * for tests would prove the reimplementation right, not the kernels; a
 * float-only finite-difference check cannot resolve errors below ~1e-3
 * relative, which hides wrong terms of small magnitude. The vmath kernels
 * themselves are checked against the double ones (test_nets_grad.c) and the
 * whole float network against PyTorch (test_nets_torch.c).
 */
#ifndef STRATA_NETS_LAYERS_H
#define STRATA_NETS_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "nets/rng.h"

/* Declares a kernel in float (nn_x) and double (nn_x_d). */
#define NN_DECL_BOTH(ret, name, ...)                                                                         \
    ret name(__VA_ARGS__);                                                                                   \
    ret name##_d(__VA_ARGS__);

/* ---- dense: out[N,O] = in[N,In] w[O,In]^T + b[O] (w in PyTorch Linear layout) ---- */
void nn_dense_forward(float *out /*[N,O]*/, const float *in /*[N,In]*/, const float *w /*[O,In]*/,
                      const float *b /*[O] or NULL*/, int N, int In, int O);
void nn_dense_forward_d(double *out, const double *in, const double *w, const double *b, int N, int In,
                        int O);
void nn_dense_backward(float *din /*[N,In] or NULL*/, float *dw /*[O,In]*/, float *db /*[O] or NULL*/,
                       const float *dout /*[N,O]*/, const float *in /*[N,In]*/, const float *w /*[O,In]*/,
                       int N, int In, int O);
void nn_dense_backward_d(double *din, double *dw, double *db, const double *dout, const double *in,
                         const double *w, int N, int In, int O);

/* ---- embedding: out[n,:] = w[tok[n],:] ----
 * Returns the number of tokens outside [0,V); their rows are zeroed (and get
 * no gradient), so a bad token never reads out of bounds. */
int nn_embedding_forward(float *out /*[N,E]*/, const int *tok /*[N]*/, const float *w /*[V,E]*/, int N, int V,
                         int E);
int nn_embedding_forward_d(double *out, const int *tok, const double *w, int N, int V, int E);
void nn_embedding_backward(float *dw /*[V,E]*/, const float *dout /*[N,E]*/, const int *tok /*[N]*/, int N,
                           int V, int E);
void nn_embedding_backward_d(double *dw, const double *dout, const int *tok, int N, int V, int E);

/* ---- pointwise activations over n elements; backward uses the output ---- */
void nn_tanh_forward(float *out /*[n]*/, const float *in /*[n]*/, size_t n);
void nn_tanh_forward_d(double *out, const double *in, size_t n);
void nn_tanh_backward(float *din /*[n]*/, const float *out /*[n]*/, const float *dout /*[n]*/, size_t n);
void nn_tanh_backward_d(double *din, const double *out, const double *dout, size_t n);
void nn_sigmoid_forward(float *out /*[n]*/, const float *in /*[n]*/, size_t n);
void nn_sigmoid_forward_d(double *out, const double *in, size_t n);
void nn_sigmoid_backward(float *din /*[n]*/, const float *out /*[n]*/, const float *dout /*[n]*/, size_t n);
void nn_sigmoid_backward_d(double *din, const double *out, const double *dout, size_t n);
void nn_relu_forward(float *out /*[n]*/, const float *in /*[n]*/, size_t n);
void nn_relu_forward_d(double *out, const double *in, size_t n);
void nn_relu_backward(float *din /*[n]*/, const float *out /*[n]*/, const float *dout /*[n]*/, size_t n);
void nn_relu_backward_d(double *din, const double *out, const double *dout, size_t n);

/* ---- layer norm over the last axis: out = (in - mean) * rstd * g + b ----
 * Biased variance, as torch.nn.LayerNorm. mean, rstd are saved for backward. */
void nn_layernorm_forward(float *out /*[N,C]*/, float *mean /*[N]*/, float *rstd /*[N]*/,
                          const float *in /*[N,C]*/, const float *g /*[C]*/, const float *b /*[C]*/, int N,
                          int C, float eps);
void nn_layernorm_forward_d(double *out, double *mean, double *rstd, const double *in, const double *g,
                            const double *b, int N, int C, double eps);
void nn_layernorm_backward(float *din /*[N,C] or NULL*/, float *dg /*[C]*/, float *db /*[C]*/,
                           const float *dout /*[N,C]*/, const float *in /*[N,C]*/, const float *g /*[C]*/,
                           const float *mean /*[N]*/, const float *rstd /*[N]*/, int N, int C);
void nn_layernorm_backward_d(double *din, double *dg, double *db, const double *dout, const double *in,
                             const double *g, const double *mean, const double *rstd, int N, int C);

/* ---- LSTM over a time-major sequence (PyTorch gate order i, f, g, o) ----
 *   a_t = x_t w_ih^T + h_{t-1} w_hh^T + b            [B,4H]
 *   i,f,o = sigmoid(.), g = tanh(.); c_t = f c_{t-1} + i g; h_t = o tanh(c_t)
 * One GEMM computes the input part of all four gates for all T steps; then
 * one GEMM per step adds the recurrent part of all four gates.
 * Variable lengths: instance b runs len[b] steps (0 <= len[b] <= T); for
 * t >= len[b] its state is carried unchanged (h_t = h_{t-1}, c_t = c_{t-1}),
 * so h[T-1], c[T-1] are every instance's final state and padded steps get
 * no gradient. len NULL: all T. h0, c0 NULL: zeros.
 * x NULL: act already holds the input part x_t w_ih^T of every step on
 * entry (the caller computed it, e.g. from a projection shared by several
 * rows); w_ih and In are then unused.
 * Saved for backward: h, c, act (gate activations), tc = tanh(c). */
void nn_lstm_forward(float *h /*[T,B,H]*/, float *c /*[T,B,H]*/, float *act /*[T,B,4H]*/,
                     float *tc /*[T,B,H]*/, const float *x /*[T,B,In]*/, const float *h0 /*[B,H] or NULL*/,
                     const float *c0 /*[B,H] or NULL*/, const int *len /*[B] or NULL*/,
                     const float *w_ih /*[4H,In]*/, const float *w_hh /*[4H,H]*/, const float *b /*[4H]*/,
                     int T, int B, int In, int H);
void nn_lstm_forward_d(double *h, double *c, double *act, double *tc, const double *x, const double *h0,
                       const double *c0, const int *len, const double *w_ih, const double *w_hh,
                       const double *b, int T, int B, int In, int H);
/* Scratch floats nn_lstm_backward needs in `work`. */
size_t nn_lstm_work_size(int T, int B, int H);
/* dh: gradient of the loss w.r.t. every h_t (NULL = none); dcT: w.r.t. the
 * final cell state c[T-1] (NULL = none). The final hidden state is h[T-1],
 * so its gradient goes into dh's last step.
 * x NULL (the forward was given the input part in act): dx and dw_ih are
 * not touched, db still accumulates, and the gate gradients dgates[T,B,4H]
 * are left at the start of work for the caller's own input products. */
void nn_lstm_backward(float *dx /*[T,B,In] or NULL*/, float *dh0 /*[B,H] or NULL*/,
                      float *dc0 /*[B,H] or NULL*/, float *dw_ih /*[4H,In]*/, float *dw_hh /*[4H,H]*/,
                      float *db /*[4H]*/, float *work /*[nn_lstm_work_size]*/,
                      const float *dh /*[T,B,H] or NULL*/, const float *dcT /*[B,H] or NULL*/,
                      const float *x /*[T,B,In]*/, const float *h0, const float *c0, const int *len,
                      const float *h /*[T,B,H]*/, const float *c /*[T,B,H]*/, const float *act /*[T,B,4H]*/,
                      const float *tc /*[T,B,H]*/, const float *w_ih, const float *w_hh, int T, int B, int In,
                      int H);
void nn_lstm_backward_d(double *dx, double *dh0, double *dc0, double *dw_ih, double *dw_hh, double *db,
                        double *work, const double *dh, const double *dcT, const double *x, const double *h0,
                        const double *c0, const int *len, const double *h, const double *c, const double *act,
                        const double *tc, const double *w_ih, const double *w_hh, int T, int B, int In,
                        int H);
/* The pointwise part of one LSTM step (see vm_kernels.lstm_fwd/lstm_bwd):
 * exposed for the kernel tests. */
void nn_lstm_cell_forward(float *act /*[B,4H] pre -> act*/, float *c /*[B,H]*/, float *tc /*[B,H]*/,
                          float *h /*[B,H]*/, const float *c_prev /*[B,H] or NULL*/, int B, int H);
void nn_lstm_cell_forward_d(double *act, double *c, double *tc, double *h, const double *c_prev, int B,
                            int H);
void nn_lstm_cell_backward(float *dpre /*[B,4H] overwritten*/, float *dc_prev /*[B,H] overwritten*/,
                           const float *dh /*[B,H]*/, const float *dc /*[B,H] or NULL*/, const float *act,
                           const float *c_prev /*or NULL*/, const float *tc, int B, int H);
void nn_lstm_cell_backward_d(double *dpre, double *dc_prev, const double *dh, const double *dc,
                             const double *act, const double *c_prev, const double *tc, int B, int H);

/* ---- pointer scoring: Q queries per instance against K candidate rows ----
 *   u[q,b,k] = scale * <query[q,b,:], keys[b,k,:]>
 *   scores   = u                 (clip == 0)
 *            = clip * tanh(u)    (clip > 0: logit clipping, Bello et al. 2016)
 * Queries are time/step-major like the LSTM output (a single decoder step is
 * Q = 1: query[B,D]); keys are the candidates of each instance projected to
 * D (e.g. nn_dense over the [B*K, C] candidate features). K is the padded
 * candidate count: mask the padding in nn_softmax. One GEMM per instance. */
void nn_pointer_forward(float *scores /*[Q,B,K]*/, const float *query /*[Q,B,D]*/,
                        const float *keys /*[B,K,D]*/, int Q, int B, int K, int D, float scale, float clip);
void nn_pointer_forward_d(double *scores, const double *query, const double *keys, int Q, int B, int K, int D,
                          double scale, double clip);
void nn_pointer_backward(float *dquery /*[Q,B,D] or NULL*/, float *dkeys /*[B,K,D] or NULL*/,
                         float *work /*[Q*B*K] if clip > 0, else NULL*/, const float *dscores /*[Q,B,K]*/,
                         const float *scores /*[Q,B,K]*/, const float *query, const float *keys, int Q, int B,
                         int K, int D, float scale, float clip);
void nn_pointer_backward_d(double *dquery, double *dkeys, double *work, const double *dscores,
                           const double *scores, const double *query, const double *keys, int Q, int B, int K,
                           int D, double scale, double clip);

/* ---- masked softmax over the last axis, with log-probabilities and entropy ----
 * mask[n,k] = 1 for a real candidate, 0 for padding (NULL: all real).
 * Masked entries get probs 0 and logp -INFINITY; ent[n] = -sum p logp over
 * the real ones. A row with no real entry gets probs 0, logp -INFINITY and
 * ent 0 (nn_sample returns -1 for it). */
void nn_softmax_forward(float *probs /*[N,K]*/, float *logp /*[N,K]*/, float *ent /*[N]*/,
                        const float *logits /*[N,K]*/, const uint8_t *mask /*[N,K] or NULL*/, int N, int K);
void nn_softmax_forward_d(double *probs, double *logp, double *ent, const double *logits, const uint8_t *mask,
                          int N, int K);
/* dlogits += d(logp)/d(logits)^T dlogp + d(ent)/d(logits)^T dent; masked
 * entries get nothing. dlogp, dent may be NULL. */
void nn_softmax_backward(float *dlogits /*[N,K]*/, const float *dlogp /*[N,K] or NULL*/,
                         const float *dent /*[N] or NULL*/, const float *probs /*[N,K]*/,
                         const float *logp /*[N,K]*/, const float *ent /*[N]*/,
                         const uint8_t *mask /*[N,K] or NULL*/, int N, int K);
void nn_softmax_backward_d(double *dlogits, const double *dlogp, const double *dent, const double *probs,
                           const double *logp, const double *ent, const uint8_t *mask, int N, int K);

/* ---- REINFORCE loss with entropy bonus ----
 *   loss = sum over rows n with action[n] >= 0 of
 *          -adv[n] * logp[n, action[n]] - beta * ent[n]
 * (action < 0 marks a padded row: no loss, no gradient). Returns 0, or -1
 * (loss untouched) if an action is >= K or picks a masked entry. */
int nn_pg_loss_forward(double *loss, const float *logp /*[N,K]*/, const float *ent /*[N]*/,
                       const int *action /*[N]*/, const float *adv /*[N]*/, float beta, int N, int K);
int nn_pg_loss_forward_d(double *loss, const double *logp, const double *ent, const int *action,
                         const double *adv, double beta, int N, int K);
/* dlogp[n, action[n]] += -adv[n] * dloss; dent[n] += -beta * dloss. */
void nn_pg_loss_backward(float *dlogp /*[N,K]*/, float *dent /*[N]*/, const int *action /*[N]*/,
                         const float *adv /*[N]*/, float beta, float dloss, int N, int K);
void nn_pg_loss_backward_d(double *dlogp, double *dent, const int *action, const double *adv, double beta,
                           double dloss, int N, int K);

/* ---- sampling ----
 * Row n draws u from the block (r->seed, r->stream, r->counter + n) and
 * takes the first real entry whose cumulative probability exceeds u times
 * the row's total; afterwards r->counter += N. The draws are therefore
 * independent of threading or of how a batch is split. A row with real
 * entries but no positive probability among them (NaN or underflowed
 * logits) takes one of them uniformly: action[n] = -1 only for a row with
 * no real entry. Returns the number of such rows. */
int nn_sample(int *action /*[N]*/, const float *probs /*[N,K]*/, const uint8_t *mask /*[N,K] or NULL*/, int N,
              int K, rng_t *r);
/* Greedy: the real entry of largest value (first on ties), -1 if none. */
int nn_argmax(int *action /*[N]*/, const float *values /*[N,K]*/, const uint8_t *mask /*[N,K] or NULL*/,
              int N, int K);

/* ---- a product over sub-matrices ----
 * C[M,N] = alpha op(A) op(B) + beta C, row-major with leading dimensions
 * (op: transpose when ta / tb is 1), for what nn_dense cannot express,
 * e.g. a column block of a weight matrix. The same routine as every float
 * kernel here: traced, one-row products through sgemv. */
void nn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A /*[op: M,K]*/, int lda,
             const float *B /*[op: K,N]*/, int ldb, float beta, float *C /*[M,N]*/, int ldc);

/* ---- GEMM trace (benchmarks) ----
 * Between nn_gemm_trace_begin(t) and nn_gemm_trace_end(), every float GEMM
 * the calling thread makes through this module is appended to t (shapes and
 * scalars, not data), so a benchmark can replay exactly the GEMMs of a
 * forward+backward pass. t->calls grows with realloc; free with
 * nn_gemm_trace_free. */
typedef struct {
    int trans_a, trans_b; /* 0 or 1 */
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
} nn_gemm_call;

typedef struct {
    nn_gemm_call *calls; /* [n] */
    int n, cap;
    int oom; /* 1 if a call could not be recorded */
} nn_gemm_trace;

void nn_gemm_trace_begin(nn_gemm_trace *t);
void nn_gemm_trace_end(void);
void nn_gemm_trace_free(nn_gemm_trace *t);

#endif
