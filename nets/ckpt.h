/* ckpt.h -- HDF5 checkpoints of a network's parameters and training state.
 *
 * Layout (h5py: f["encoder"]["w_hh"] is the LSTM's recurrent weight):
 *   /                       attr layer_names: the groups, in table order
 *   /<layer>/               attr weight_names: its datasets, in table order
 *   /<layer>/<weight>       float32, the tensor's true shape
 *   /meta/                  attrs format ("strata-nets-checkpoint"),
 *                           format_version (1), schema_version (feature
 *                           schema), step, rng_seed, rng_stream,
 *                           rng_counter, optimizer ("adamw")
 *   /meta/hparams/          one attribute per hyperparameter (int64,
 *                           float64 or string)
 *   /meta/config_yaml       [1] string: the config the policy was trained
 *                           with (h5py: f["meta/config_yaml"].asstr()[0])
 *   /meta/optimizer/m/<layer>/<weight>, .../v/<layer>/<weight>
 *                           Adam moments, same shapes as the weights
 * Every dataset is chunked with the Fletcher-32 checksum filter, strings
 * are fixed-length (stored in object headers, not the unchecksummed global
 * heap), and the file uses the HDF5 1.10 object format, whose metadata
 * carry checksums: a damaged file is reported, not loaded and not a crash
 * (tests/test_nets_ckpt.c flips bytes all over a file). Readable by any
 * HDF5 >= 1.10 (h5py, h5dump).
 *
 * A save is atomic: HDF5 builds the file in memory (its core driver), and
 * the image is written under a temporary name in the same folder
 * (".<name>.tmp.<pid>.XXXXXX"), fsync'ed, renamed over the target and the
 * folder fsync'ed; a crash at any moment leaves either the old or the new
 * checkpoint, never a mix. HDF5 itself never writes to disk, so a full
 * disk or a file size limit is a plain write error (HDF5 1.10 cannot
 * survive a failed close: it closes the file again at exit, a SIGSEGV).
 * Temporary files left by dead processes are removed by the next save.
 *
 * Errors never print: HDF5's own error printing is switched off around
 * every call (and restored), and its innermost reason is folded into the
 * caller's message. Not thread-safe (the serial HDF5 library is not).
 */
#ifndef STRATA_NETS_CKPT_H
#define STRATA_NETS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "nets/params.h"
#include "nets/rng.h"

#define CKPT_FORMAT "strata-nets-checkpoint"
#define CKPT_VERSION 1

typedef enum {
    CKPT_OK = 0,
    CKPT_EARG = -1,     /* bad argument (NULL, bad hyperparameter key) */
    CKPT_EIO = -2,      /* cannot create, write, sync, rename or open */
    CKPT_ECORRUPT = -3, /* not HDF5, truncated, or a checksum failed */
    CKPT_EFORMAT = -4,  /* HDF5, but not a strata nets checkpoint */
    CKPT_EVERSION = -5, /* a checkpoint format version this build cannot read */
    CKPT_ESHAPE = -6,   /* tensors missing, extra, or of another shape */
    CKPT_EVALUE = -7,   /* a NaN or infinite value, a weight beyond +-CKPT_MAX_WEIGHT, a negative v */
} ckpt_status;

/* No weight of a trained network comes near this; a larger one (or a NaN,
 * an infinity) is refused on load. */
#define CKPT_MAX_WEIGHT 1e6f

typedef enum { CKPT_KV_INT, CKPT_KV_REAL, CKPT_KV_STR } ckpt_kv_type;

/* A hyperparameter. For ckpt_save the strings are borrowed; in a
 * ckpt_info they are owned by the info. */
typedef struct {
    const char *key; /* 1..63 characters, no '/' */
    ckpt_kv_type type;
    int64_t i;     /* CKPT_KV_INT */
    double r;      /* CKPT_KV_REAL */
    const char *s; /* CKPT_KV_STR */
} ckpt_kv;

/* Everything but the tensors. */
typedef struct {
    int64_t step;            /* training steps done (Adam's t) */
    rng_t rng;               /* the RNG cursor to resume with */
    int schema_version;      /* version of the feature schema the inputs follow */
    const char *config_yaml; /* config text (NULL: empty) */
    const ckpt_kv *hparams;  /* [n_hparams] */
    int n_hparams;
} ckpt_meta;

typedef struct {
    int format_version;
    int64_t step;
    rng_t rng;
    int schema_version;
    char *config_yaml; /* owned, never NULL after a successful load */
    ckpt_kv *hparams;  /* [n_hparams], owned */
    int n_hparams;
} ckpt_info;

/* Writes p's tensors (params, and Adam m and v) and meta to path,
 * atomically (see above). Returns CKPT_OK, or an error with a message in
 * err naming the file and the failing step; the previous file at path is
 * then untouched. */
int ckpt_save(const char *path, const nn_params *p, const ckpt_meta *meta, char *err, size_t errlen);

/* Reads the checkpoint at path. info (may be NULL) receives the metadata;
 * free it with ckpt_info_free. If p is not NULL, the file's tensors must
 * match p's table exactly (same layer/weight names, same shapes, no extra
 * ones, storage for every declared byte, every value finite, weights
 * within +-CKPT_MAX_WEIGHT, v >= 0) and are read into p->params, p->m and p->v; p is modified only if
 * the whole load succeeds. Returns CKPT_OK or an error; the message says
 * which (truncated, checksum, wrong format or version, which tensor has
 * which shape against which) and what to do. */
int ckpt_load(const char *path, nn_params *p, ckpt_info *info, char *err, size_t errlen);

/* Checks, without reading tensor data or allocating for it, that the file
 * at path holds every tensor of the table spec[n] (weights and both Adam
 * moments) with the table's shape, floating point, and with storage in the
 * file of at least the bytes its shape declares. Call it before creating
 * the network a file's hyperparameters describe: a small file declaring
 * huge tensors is refused here, naming the dataset, instead of costing
 * gigabytes. Returns CKPT_OK or an error with a message. */
int ckpt_check_sizes(const char *path, const nn_tensor_spec *spec, int n, char *err, size_t errlen);

void ckpt_info_free(ckpt_info *info);

/* Looks up a hyperparameter in a loaded info; NULL if absent. */
const ckpt_kv *ckpt_info_hparam(const ckpt_info *info, const char *key);

#endif
