/* params.h -- the parameter store of a network.
 *
 * A network declares its tensors once, in a table of nn_tensor_spec (group
 * name, weight name, shape, initialiser). nn_params_create lays them out
 * back to back, in table order, in four contiguous float buffers of the
 * same length: params, grads, and the Adam moments m and v. Tensor i lives
 * at element offset off[i] of each buffer, so a layer gets its weights with
 * nn_param(p, i) and its gradients at the same offset in grads; whole-model
 * operations (zeroing, clipping, Adam, checkpoints) are single loops over
 * the buffers. Buffers are 64-byte aligned and every tensor starts on a
 * 16-float boundary.
 *
 * Initialisation is seeded and counter-based (nets/rng): element j of
 * tensor i is a function of (seed, i, j) only.
 */
#ifndef STRATA_NETS_PARAMS_H
#define STRATA_NETS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#define NN_MAX_DIMS 4
#define NN_NAME_MAX 64

typedef enum {
    NN_INIT_ZEROS = 0,
    NN_INIT_ONES,
    NN_INIT_XAVIER, /* U(-a, a), a = gain*sqrt(6/(fan_in+fan_out)); fan_in = prod(dims[1:]), fan_out = dims[0] */
    NN_INIT_ORTHO, /* 2-D: gain * (semi-)orthogonal; [k*C, C] gets k independent orthogonal C x C blocks (LSTM w_hh) */
    NN_INIT_NORMAL,    /* N(0, gain^2) */
    NN_INIT_LSTM_BIAS, /* [4H]: zeros, except the forget block [H, 2H) = gain (1 is customary) */
} nn_init_kind;

typedef struct {
    char layer[NN_NAME_MAX]; /* group, e.g. "encoder" (checkpoint group /encoder) */
    char name[NN_NAME_MAX];  /* weight in the group, e.g. "w_hh" */
    int ndim;                /* 1..NN_MAX_DIMS */
    int64_t dims[NN_MAX_DIMS];
    nn_init_kind init;
    float gain;   /* see nn_init_kind */
    int no_decay; /* 1: AdamW weight decay skips this tensor (biases, norms) */
} nn_tensor_spec;

typedef struct {
    int n;                /* number of tensors */
    nn_tensor_spec *spec; /* [n] copy of the table */
    size_t *off;          /* [n] element offset of tensor i in every buffer */
    size_t *size;         /* [n] element count of tensor i */
    size_t total;         /* length of each buffer (with alignment padding) */
    float *params;        /* [total] */
    float *grads;         /* [total] */
    float *m;             /* [total] Adam first moment */
    float *v;             /* [total] Adam second moment */
} nn_params;

/* Hyperparameters in double, as PyTorch holds them: 1 - beta2 computed from
 * a float 0.999f would be off by 1.3e-5 relative. */
typedef struct {
    double lr;           /* learning rate */
    double beta1, beta2; /* moment decay rates (0.9, 0.999) */
    double eps;          /* denominator guard (1e-8) */
    double weight_decay; /* decoupled (AdamW) decay, applied to tensors without no_decay */
} nn_adam_cfg;

/* Fills a spec; returns it for table initialisers. dims ends at the first 0
 * (up to NN_MAX_DIMS). */
nn_tensor_spec nn_spec(const char *layer, const char *name, nn_init_kind init, float gain, int no_decay,
                       int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* Creates the store for table[n]: buffers zeroed, nothing initialised.
 * Validates names (non-empty, no '/', unique layer/name pairs) and shapes
 * (1..4 dims, all > 0, initialiser fits the rank). Returns NULL and writes a
 * message naming the tensor on error. Free with nn_params_free. */
nn_params *nn_params_create(const nn_tensor_spec *table, int n, char *err, size_t errlen);
void nn_params_free(nn_params *p);

/* Index of tensor layer/name, or -1. */
int nn_params_find(const nn_params *p, const char *layer, const char *name);
/* Tensor i's weights / gradients (no bounds check beyond an assert). */
float *nn_param(const nn_params *p, int i);
float *nn_grad(const nn_params *p, int i);

/* Initialises every tensor from its spec with `seed`; zeroes grads, m, v. */
void nn_params_init(nn_params *p, uint64_t seed);
void nn_params_zero_grad(nn_params *p);

/* Global L2 norm of all gradients (accumulated in double). If it exceeds
 * max_norm > 0, scales every gradient by max_norm / (norm + 1e-6), as
 * torch.nn.utils.clip_grad_norm_ does. Returns the norm before clipping. */
double nn_clip_grad_norm(nn_params *p, double max_norm);

/* One AdamW step (Loshchilov & Hutter), t = 1 for the first step, with the
 * same operation order as torch.optim.AdamW:
 *   w *= 1 - lr*wd (unless no_decay); m = b1 m + (1-b1) g;
 *   v = b2 v + (1-b2) g^2; w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps). */
void nn_adam_step(nn_params *p, const nn_adam_cfg *cfg, int64_t t);

/* "[d0,d1,...]" into buf; returns buf. */
char *nn_shape_str(char *buf, size_t len, int ndim, const int64_t *dims);

#endif
