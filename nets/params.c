/* params.c -- table of tensor sizes -> contiguous params/grads/m/v buffers,
 * seeded initialisation, global-norm clipping and AdamW; see params.h.
 */
#include "nets/params.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nets/rng.h"

#define ALIGN_FLOATS 16 /* 64 bytes */

nn_tensor_spec nn_spec(const char *layer, const char *name, nn_init_kind init, float gain, int no_decay,
                       int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    nn_tensor_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.layer, sizeof s.layer, "%s", layer ? layer : "");
    snprintf(s.name, sizeof s.name, "%s", name ? name : "");
    int64_t d[NN_MAX_DIMS] = {d0, d1, d2, d3};
    for (int k = 0; k < NN_MAX_DIMS && d[k] != 0; k++) s.dims[s.ndim++] = d[k];
    s.init = init;
    s.gain = gain;
    s.no_decay = no_decay;
    return s;
}

char *nn_shape_str(char *buf, size_t len, int ndim, const int64_t *dims)
{
    size_t used = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < ndim && used < len; k++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", k ? "," : "", (long long)dims[k]);
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

static int valid_name(const char *s)
{
    return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, "meta") != 0;
}

nn_params *nn_params_create(const nn_tensor_spec *table, int n, char *err, size_t errlen)
{
    if (n <= 0 || !table) {
        snprintf(err, errlen, "parameter table is empty");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        const nn_tensor_spec *s = &table[i];
        if (!valid_name(s->layer) || !valid_name(s->name)) {
            snprintf(err, errlen, "tensor %d ('%s/%s'): names must be non-empty, without '/', and not 'meta'",
                     i, s->layer, s->name);
            return NULL;
        }
        if (s->ndim < 1 || s->ndim > NN_MAX_DIMS) {
            snprintf(err, errlen, "tensor %s/%s: rank %d, must be 1..%d", s->layer, s->name, s->ndim,
                     NN_MAX_DIMS);
            return NULL;
        }
        for (int k = 0; k < s->ndim; k++)
            if (s->dims[k] <= 0 || s->dims[k] > (1LL << 31)) {
                snprintf(err, errlen, "tensor %s/%s: dimension %d is %lld, must be in 1..2^31", s->layer,
                         s->name, k, (long long)s->dims[k]);
                return NULL;
            }
        if ((s->init == NN_INIT_XAVIER && s->ndim < 2) || (s->init == NN_INIT_ORTHO && s->ndim != 2) ||
            (s->init == NN_INIT_LSTM_BIAS && (s->ndim != 1 || s->dims[0] % 4 != 0))) {
            snprintf(err, errlen, "tensor %s/%s: initialiser %d does not fit rank %d", s->layer, s->name,
                     (int)s->init, s->ndim);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(table[j].layer, s->layer) == 0 && strcmp(table[j].name, s->name) == 0) {
                snprintf(err, errlen, "tensor %s/%s is declared twice (entries %d and %d)", s->layer, s->name,
                         j, i);
                return NULL;
            }
    }
    nn_params *p = calloc(1, sizeof *p);
    if (!p) goto oom;
    p->n = n;
    p->spec = malloc((size_t)n * sizeof *p->spec);
    p->off = malloc((size_t)n * sizeof *p->off);
    p->size = malloc((size_t)n * sizeof *p->size);
    if (!p->spec || !p->off || !p->size) goto oom;
    memcpy(p->spec, table, (size_t)n * sizeof *p->spec);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t sz = 1;
        for (int k = 0; k < table[i].ndim; k++) sz *= (size_t)table[i].dims[k];
        p->off[i] = total;
        p->size[i] = sz;
        total += (sz + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
    }
    p->total = total;
    size_t bytes = total * sizeof(float);
    float **bufs[4] = {&p->params, &p->grads, &p->m, &p->v};
    for (int b = 0; b < 4; b++) {
        *bufs[b] = aligned_alloc(64, bytes);
        if (!*bufs[b]) goto oom;
        memset(*bufs[b], 0, bytes);
    }
    return p;
oom:
    nn_params_free(p);
    snprintf(err, errlen, "out of memory for %d tensors", n);
    return NULL;
}

void nn_params_free(nn_params *p)
{
    if (!p) return;
    free(p->spec);
    free(p->off);
    free(p->size);
    free(p->params);
    free(p->grads);
    free(p->m);
    free(p->v);
    free(p);
}

int nn_params_find(const nn_params *p, const char *layer, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->spec[i].layer, layer) == 0 && strcmp(p->spec[i].name, name) == 0) return i;
    return -1;
}

float *nn_param(const nn_params *p, int i)
{
    assert(i >= 0 && i < p->n);
    return p->params + p->off[i];
}

float *nn_grad(const nn_params *p, int i)
{
    assert(i >= 0 && i < p->n);
    return p->grads + p->off[i];
}

/* Semi-orthogonal R x C matrix (row-major, R >= C: orthonormal columns)
 * into w, scaled by gain: modified Gram-Schmidt, run twice for accuracy, on
 * a Gaussian matrix from the counter RNG. The matrices are small (at most a
 * few hundred columns), so this is cheaper to read than a LAPACK call the
 * build does not otherwise need. q is a double scratch of R*C. */
static void orthonormal_columns(double *q, int R, int C, uint64_t seed, uint64_t stream, uint64_t base)
{
    for (size_t e = 0; e < (size_t)R * C; e++) q[e] = rng_normal_at(seed, stream, base + e);
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < C; j++) {
            for (int k = 0; k < j; k++) {
                double dot = 0;
                for (int r = 0; r < R; r++) dot += q[(size_t)r * C + k] * q[(size_t)r * C + j];
                for (int r = 0; r < R; r++) q[(size_t)r * C + j] -= dot * q[(size_t)r * C + k];
            }
            double nrm = 0;
            for (int r = 0; r < R; r++) nrm += q[(size_t)r * C + j] * q[(size_t)r * C + j];
            nrm = sqrt(nrm);
            for (int r = 0; r < R; r++) q[(size_t)r * C + j] /= nrm;
        }
}

/* Orthogonal init of w[R,C]; returns 0, or -1 if out of memory (w zeroed). */
static int init_ortho(float *w, int64_t R, int64_t C, float gain, uint64_t seed, uint64_t stream)
{
    /* [k*C, C]: k independent C x C orthogonal blocks (one per LSTM gate). */
    int64_t blocks = (R > C && R % C == 0) ? R / C : 1;
    int64_t br = R / blocks;                                  /* rows per block */
    int64_t rows = br >= C ? br : C, cols = br >= C ? C : br; /* tall orientation */
    double *q = malloc((size_t)(rows * cols) * sizeof *q);
    if (!q) {
        memset(w, 0, (size_t)(R * C) * sizeof *w);
        return -1;
    }
    for (int64_t k = 0; k < blocks; k++) {
        orthonormal_columns(q, (int)rows, (int)cols, seed, stream, (uint64_t)(k * rows * cols));
        float *blk = w + k * br * C;
        for (int64_t r = 0; r < br; r++)
            for (int64_t c = 0; c < C; c++)
                blk[r * C + c] = (float)(gain * (br >= C ? q[r * cols + c] : q[c * cols + r]));
    }
    free(q);
    return 0;
}

void nn_params_init(nn_params *p, uint64_t seed)
{
    for (int i = 0; i < p->n; i++) {
        const nn_tensor_spec *s = &p->spec[i];
        float *w = nn_param(p, i);
        size_t n = p->size[i];
        uint64_t stream = ((uint64_t)RNG_STREAM_INIT << 32) | (uint64_t)i;
        switch (s->init) {
        case NN_INIT_ZEROS: memset(w, 0, n * sizeof *w); break;
        case NN_INIT_ONES:
            for (size_t e = 0; e < n; e++) w[e] = 1.0f;
            break;
        case NN_INIT_XAVIER: {
            double fan_out = (double)s->dims[0], fan_in = (double)n / fan_out;
            double a = s->gain * sqrt(6.0 / (fan_in + fan_out));
            for (size_t e = 0; e < n; e++) w[e] = (float)(a * (2.0 * rng_uniform_at(seed, stream, e) - 1.0));
            break;
        }
        case NN_INIT_ORTHO: init_ortho(w, s->dims[0], s->dims[1], s->gain, seed, stream); break;
        case NN_INIT_NORMAL:
            for (size_t e = 0; e < n; e++) w[e] = (float)(s->gain * rng_normal_at(seed, stream, e));
            break;
        case NN_INIT_LSTM_BIAS: {
            size_t H = n / 4;
            memset(w, 0, n * sizeof *w);
            for (size_t e = H; e < 2 * H; e++) w[e] = s->gain;
            break;
        }
        }
    }
    memset(p->grads, 0, p->total * sizeof(float));
    memset(p->m, 0, p->total * sizeof(float));
    memset(p->v, 0, p->total * sizeof(float));
}

void nn_params_zero_grad(nn_params *p)
{
    memset(p->grads, 0, p->total * sizeof(float));
}

double nn_clip_grad_norm(nn_params *p, double max_norm)
{
    /* the gradients are one buffer (any gaps between tensors hold zeros):
     * one dot product, accumulated in double */
    double norm = sqrt(cblas_dsdot((blasint)p->total, p->grads, 1, p->grads, 1));
    if (max_norm > 0 && norm > max_norm)
        cblas_sscal((blasint)p->total, (float)(max_norm / (norm + 1e-6)), p->grads, 1);
    return norm;
}

void nn_adam_step(nn_params *p, const nn_adam_cfg *cfg, int64_t t)
{
    double bc1 = 1.0 - pow(cfg->beta1, (double)t);
    double bc2 = 1.0 - pow(cfg->beta2, (double)t);
    float step_size = (float)(cfg->lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1 = (float)cfg->beta1, b2 = (float)cfg->beta2, eps = (float)cfg->eps;
    float omb1 = (float)(1.0 - cfg->beta1), omb2 = (float)(1.0 - cfg->beta2);
    for (int i = 0; i < p->n; i++) {
        /* four disjoint buffers: restrict lets the loop run in SIMD lanes */
        float *restrict w = nn_param(p, i);
        const float *restrict g = nn_grad(p, i);
        float *restrict m = p->m + p->off[i], *restrict v = p->v + p->off[i];
        float decay = p->spec[i].no_decay ? 1.0f : (float)(1.0 - cfg->lr * cfg->weight_decay);
        for (size_t e = 0; e < p->size[i]; e++) {
            w[e] *= decay;
            m[e] = m[e] * b1 + g[e] * omb1;
            v[e] = v[e] * b2 + g[e] * g[e] * omb2;
            float denom = sqrtf(v[e]) / bc2_sqrt + eps;
            w[e] -= step_size * (m[e] / denom);
        }
    }
}
