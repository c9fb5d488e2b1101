/* ckpt.c -- HDF5 checkpoints, atomic saves and validating loads; see ckpt.h
 * for the layout and the guarantees. This file builds the HDF5 file (in
 * memory) and validates loads; writing the image to disk atomically is
 * nets/ckpt_write.c's.
 */
#include "nets/ckpt.h"
#include "nets/ckpt_write.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MAX 63

/* ---- HDF5 error handling: silence, capture the innermost reason ---- */

typedef struct {
    H5E_auto2_t func;
    void *data;
} quiet_t;

static void quiet_begin(quiet_t *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const quiet_t *q)
{
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

typedef struct {
    char inner[200];
} reason_t;

static herr_t reason_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    reason_t *r = data;
    (void)n;
    if (r->inner[0] == '\0' && e->desc && e->desc[0]) snprintf(r->inner, sizeof r->inner, "%s", e->desc);
    return 0;
}

/* The most specific message on HDF5's current error stack, or "no detail". */
static const char *h5_reason(reason_t *r)
{
    r->inner[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_cb, r);
    if (r->inner[0] == '\0') snprintf(r->inner, sizeof r->inner, "no detail");
    return r->inner;
}

static void msg(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- writing helpers (return 0 or -1) ---- */

static hid_t str_type(int variable, size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return t;
    H5Tset_size(t, variable ? H5T_VARIABLE : len);
    H5Tset_cset(t, H5T_CSET_UTF8);
    if (!variable) H5Tset_strpad(t, H5T_STR_NULLPAD);
    return t;
}

static int attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = s < 0 ? -1 : H5Acreate2(obj, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a >= 0 && H5Awrite(a, mtype, v) >= 0) ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    return rc;
}

/* Scalar string attribute, fixed length: it lives inside the object
 * header, which carries a checksum. (Variable-length strings would go to
 * the global heap, which has none: HDF5 1.10 crashes on a damaged one.) */
static int attr_str(hid_t obj, const char *name, const char *value)
{
    size_t len = strlen(value);
    hid_t t = str_type(0, len ? len : 1);
    int rc = t < 0 ? -1 : attr_write(obj, name, t, t, len ? value : "");
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int attr_i64(hid_t obj, const char *name, int64_t v)
{
    return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static int attr_u64(hid_t obj, const char *name, uint64_t v)
{
    return attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

static int attr_f64(hid_t obj, const char *name, double v)
{
    return attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

/* Array of n fixed-length, null-padded strings (how Keras stores
 * layer_names/weight_names; h5py reads a numpy array of bytes). */
static int attr_str_array(hid_t obj, const char *name, const char *const *vals, int n)
{
    if (n <= 0) return -1;
    size_t len = 1;
    for (int i = 0; i < n; i++)
        if (strlen(vals[i]) > len) len = strlen(vals[i]);
    char *buf = calloc((size_t)n, len);
    if (!buf) return -1;
    for (int i = 0; i < n; i++) memcpy(buf + (size_t)i * len, vals[i], strlen(vals[i]));
    hsize_t dim = (hsize_t)n;
    hid_t t = str_type(0, len);
    hid_t s = H5Screate_simple(1, &dim, NULL);
    hid_t a = (t < 0 || s < 0) ? -1 : H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a >= 0 && H5Awrite(a, t, buf) >= 0) ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    free(buf);
    return rc;
}

/* float32 dataset `name` under loc with the tensor's shape, one chunk,
 * Fletcher-32 checksum. */
static int write_tensor(hid_t loc, const char *name, const float *data, const nn_tensor_spec *s)
{
    hsize_t dims[NN_MAX_DIMS];
    for (int k = 0; k < s->ndim; k++) dims[k] = (hsize_t)s->dims[k];
    hid_t sp = H5Screate_simple(s->ndim, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc = -1;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, s->ndim, dims) >= 0 && H5Pset_fletcher32(dcpl) >= 0) {
        hid_t d = H5Dcreate2(loc, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (d >= 0) {
            rc = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0 ? 0 : -1;
            H5Dclose(d);
        }
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

static hid_t group_create(hid_t loc, const char *name, int track_order)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (track_order) H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t g = H5Gcreate2(loc, name, lcpl, gcpl, H5P_DEFAULT);
    H5Pclose(lcpl);
    H5Pclose(gcpl);
    return g;
}

/* ---- save ---- */

static int valid_key(const char *k)
{
    return k && k[0] && strlen(k) <= KEY_MAX && !strchr(k, '/');
}

/* Writes the whole checkpoint into the (new, empty) HDF5 file f. Returns 0,
 * or -1 with what failed in `what`. */
static int write_all(hid_t f, const nn_params *p, const ckpt_meta *meta, char *what, size_t wlen)
{
    /* layers in order of first appearance */
    const char **layers = calloc((size_t)p->n, sizeof *layers);
    const char **wn = calloc((size_t)p->n, sizeof *wn);
    int nl = 0, rc = -1;
    hid_t g = -1, meta_g = -1, hp = -1;
    if (!layers || !wn) {
        snprintf(what, wlen, "out of memory");
        goto done;
    }
    for (int i = 0; i < p->n; i++) {
        int seen = 0;
        for (int l = 0; l < nl; l++) seen |= strcmp(layers[l], p->spec[i].layer) == 0;
        if (!seen) layers[nl++] = p->spec[i].layer;
    }
    if (attr_str_array(f, "layer_names", layers, nl)) {
        snprintf(what, wlen, "writing attribute layer_names");
        goto done;
    }
    for (int l = 0; l < nl; l++) {
        g = group_create(f, layers[l], 0);
        int nw = 0;
        for (int i = 0; i < p->n; i++) {
            if (strcmp(p->spec[i].layer, layers[l]) != 0) continue;
            wn[nw++] = p->spec[i].name;
            if (g < 0 || write_tensor(g, p->spec[i].name, p->params + p->off[i], &p->spec[i])) {
                snprintf(what, wlen, "writing tensor %s/%s", p->spec[i].layer, p->spec[i].name);
                goto done;
            }
        }
        if (attr_str_array(g, "weight_names", wn, nw)) {
            snprintf(what, wlen, "writing %s/weight_names", layers[l]);
            goto done;
        }
        H5Gclose(g);
        g = -1;
    }
    meta_g = group_create(f, "meta", 0);
    if (meta_g < 0 || attr_str(meta_g, "format", CKPT_FORMAT) ||
        attr_i64(meta_g, "format_version", CKPT_VERSION) ||
        attr_i64(meta_g, "schema_version", meta->schema_version) || attr_i64(meta_g, "step", meta->step) ||
        attr_u64(meta_g, "rng_seed", meta->rng.seed) || attr_u64(meta_g, "rng_stream", meta->rng.stream) ||
        attr_u64(meta_g, "rng_counter", meta->rng.counter) || attr_str(meta_g, "optimizer", "adamw")) {
        snprintf(what, wlen, "writing /meta attributes");
        goto done;
    }
    hp = group_create(meta_g, "hparams", 1);
    if (hp < 0) {
        snprintf(what, wlen, "creating /meta/hparams");
        goto done;
    }
    for (int i = 0; i < meta->n_hparams; i++) {
        const ckpt_kv *kv = &meta->hparams[i];
        int bad = kv->type == CKPT_KV_INT    ? attr_i64(hp, kv->key, kv->i)
                  : kv->type == CKPT_KV_REAL ? attr_f64(hp, kv->key, kv->r)
                                             : attr_str(hp, kv->key, kv->s ? kv->s : "");
        if (bad) {
            snprintf(what, wlen, "writing hyperparameter '%s' (a duplicate key?)", kv->key);
            goto done;
        }
    }
    {
        /* one fixed-length string in a chunked dataset of shape [1], so that
     * Fletcher-32 covers it (h5py: f["meta/config_yaml"].asstr()[0]) */
        const char *yaml = meta->config_yaml ? meta->config_yaml : "";
        size_t len = strlen(yaml);
        hsize_t one = 1;
        hid_t t = str_type(0, len ? len : 1), s = H5Screate_simple(1, &one, NULL),
              dcpl = H5Pcreate(H5P_DATASET_CREATE);
        hid_t d = -1;
        if (t >= 0 && s >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 1, &one) >= 0 && H5Pset_fletcher32(dcpl) >= 0)
            d = H5Dcreate2(meta_g, "config_yaml", t, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        char *padded = calloc(1, len + 1);
        if (padded) memcpy(padded, yaml, len);
        int bad = d < 0 || !padded || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, padded) < 0;
        free(padded);
        if (d >= 0) H5Dclose(d);
        if (dcpl >= 0) H5Pclose(dcpl);
        if (s >= 0) H5Sclose(s);
        if (t >= 0) H5Tclose(t);
        if (bad) {
            snprintf(what, wlen, "writing /meta/config_yaml");
            goto done;
        }
    }
    for (int which = 0; which < 2; which++) {
        const float *buf = which ? p->v : p->m;
        for (int i = 0; i < p->n; i++) {
            char gname[96];
            snprintf(gname, sizeof gname, "optimizer/%s/%s", which ? "v" : "m", p->spec[i].layer);
            hid_t og = H5Gopen2(meta_g, gname, H5P_DEFAULT);
            if (og < 0) {
                H5Eclear2(H5E_DEFAULT);
                og = group_create(meta_g, gname, 0);
            }
            int bad = og < 0 || write_tensor(og, p->spec[i].name, buf + p->off[i], &p->spec[i]);
            if (og >= 0) H5Gclose(og);
            if (bad) {
                snprintf(what, wlen, "writing /meta/%s/%s", gname, p->spec[i].name);
                goto done;
            }
        }
    }
    rc = 0;
done:
    if (hp >= 0) H5Gclose(hp);
    if (meta_g >= 0) H5Gclose(meta_g);
    if (g >= 0) H5Gclose(g);
    free(layers);
    free(wn);
    return rc;
}

/* Builds the checkpoint as an HDF5 file in memory (core driver, no backing
 * store; `name` only names it) and takes its buffer when HDF5 closes it,
 * so that the image is the file HDF5 would have written: superblock
 * flagged closed and checksummed, cut at its end of allocation. (HDF5
 * 1.10's H5Fget_file_image clears the superblock's status flags without
 * updating its checksum: its images do not open.) Returns the image's
 * size with *image malloc'ed (the caller frees it), or -1 with a message
 * naming `path`. Every HDF5 handle is closed exactly once, here. */
static ssize_t build_image(const char *name, const nn_params *p, const ckpt_meta *meta, unsigned char **image,
                           char *err, size_t errlen, const char *path)
{
    quiet_t q;
    reason_t r;
    quiet_begin(&q);
    ssize_t n = -1;
    ckpt_write_image keep = {NULL, 0};
    H5FD_file_image_callbacks_t cb;
    ckpt_write_image_callbacks(&cb, &keep);
    *image = NULL;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* 1.10 object format: checksummed superblock, object headers and chunk
   * indexes; readable by HDF5 >= 1.10 (h5py, h5dump) */
    hid_t f = -1;
    if (fapl >= 0 && H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) >= 0 &&
        H5Pset_file_image_callbacks(fapl, &cb) >= 0 &&
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) >= 0)
        f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        msg(err, errlen, "ckpt_save '%s': HDF5 cannot create the file in memory (%s)", path, h5_reason(&r));
        quiet_end(&q);
        return -1;
    }
    char what[256];
    int bad = write_all(f, p, meta, what, sizeof what);
    if (bad)
        msg(err, errlen, "ckpt_save '%s': %s failed (HDF5: %s); the previous checkpoint is untouched", path, what,
            h5_reason(&r));
    /* a file in memory: closing it writes nothing to disk, so it cannot
     * fail for lack of space */
    if (H5Fclose(f) < 0 && !bad) {
        msg(err, errlen, "ckpt_save '%s': closing the in-memory file failed (HDF5: %s)", path, h5_reason(&r));
        bad = 1;
    }
    quiet_end(&q);
    /* the superblock (version 2 or 3, 8-byte addresses) ends the file at
     * its end-of-file address, bytes 28..35, little-endian */
    const unsigned char *m = keep.mem;
    uint64_t eof = 0;
    if (!bad && m && keep.size >= 48 && m[8] >= 2 && m[9] == 8)
        for (int k = 7; k >= 0; k--) eof = eof << 8 | m[28 + k];
    if (!bad && (eof < 48 || eof > (uint64_t)keep.size)) {
        msg(err, errlen, "ckpt_save '%s': HDF5 left no usable file image in memory", path);
        bad = 1;
    }
    if (bad) {
        free(keep.mem);
        return -1;
    }
    *image = keep.mem;
    n = (ssize_t)eof;
    return n;
}

int ckpt_save(const char *path, const nn_params *p, const ckpt_meta *meta, char *err, size_t errlen)
{
    if (!path || !path[0] || !p || !meta) {
        msg(err, errlen, "ckpt_save: path, parameters and meta are required");
        return CKPT_EARG;
    }
    for (int i = 0; i < meta->n_hparams; i++) {
        const ckpt_kv *kv = &meta->hparams[i];
        if (!valid_key(kv->key) || kv->type < CKPT_KV_INT || kv->type > CKPT_KV_STR) {
            msg(err, errlen,
                "ckpt_save '%s': hyperparameter %d has a bad key '%s' (1..%d characters, no '/') or type",
                path, i, kv->key ? kv->key : "(null)", KEY_MAX);
            return CKPT_EARG;
        }
    }
    ckpt_write_tx t;
    int rc = ckpt_write_begin(&t, path, err, errlen);
    if (rc != CKPT_OK) return rc;
    /* HDF5 builds the file in memory (the core driver, no backing store)
     * and we write its image ourselves: HDF5 then never meets a failed
     * write. When it does (a full disk, a file size limit), HDF5 1.10's
     * H5Fclose fails after freeing the file but leaves its ID registered,
     * and the library's atexit handler closes it again: a SIGSEGV at exit
     * after the error was reported. */
    unsigned char *image = NULL;
    ssize_t isize = build_image(t.tmp, p, meta, &image, err, errlen, path);
    if (isize < 0) {
        ckpt_write_abort(&t);
        return CKPT_EIO;
    }
    rc = ckpt_write_commit(&t, path, image, (size_t)isize, err, errlen);
    free(image);
    return rc;
}

/* ---- load ---- */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    reason_t r;
} lctx;

/* Reads a string attribute (variable or fixed length) into a malloc'ed
 * string; NULL if absent or not a string. */
static char *read_str_attr(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0) return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return NULL;
    hid_t ft = H5Aget_type(a);
    char *out = NULL;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            hid_t mt = str_type(1, 0);
            char *s = NULL;
            if (H5Aread(a, mt, &s) >= 0 && s) {
                out = strdup(s);
                H5free_memory(s);
            }
            H5Tclose(mt);
        } else {
            size_t n = H5Tget_size(ft);
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            H5Tset_cset(mt, H5Tget_cset(ft)); /* HDF5 converts no character sets */
            out = calloc(1, n + 1);
            if (out && H5Aread(a, mt, out) < 0) {
                free(out);
                out = NULL;
            }
            H5Tclose(mt);
        }
    }
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return out;
}

/* Integer attribute: 0 and *v, or -1 if absent or not an integer. */
static int read_int_attr(hid_t obj, const char *name, hid_t mtype, void *v)
{
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int rc = (ft >= 0 && H5Tget_class(ft) == H5T_INTEGER && H5Aread(a, mtype, v) >= 0) ? 0 : -1;
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

typedef struct {
    ckpt_kv *kv;
    int n, cap, bad;
} kv_list;

static herr_t hparam_cb(hid_t loc, const char *name, const H5A_info_t *ainfo, void *data)
{
    (void)ainfo;
    kv_list *l = data;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ckpt_kv *kv = realloc(l->kv, (size_t)cap * sizeof *kv);
        if (!kv) return -1;
        l->kv = kv;
        l->cap = cap;
    }
    ckpt_kv *kv = &l->kv[l->n];
    memset(kv, 0, sizeof *kv);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    int ok = 0;
    if (cls == H5T_INTEGER) {
        kv->type = CKPT_KV_INT;
        ok = H5Aread(a, H5T_NATIVE_INT64, &kv->i) >= 0;
    } else if (cls == H5T_FLOAT) {
        kv->type = CKPT_KV_REAL;
        ok = H5Aread(a, H5T_NATIVE_DOUBLE, &kv->r) >= 0;
    } else if (cls == H5T_STRING) {
        kv->type = CKPT_KV_STR;
        kv->s = read_str_attr(loc, name);
        ok = kv->s != NULL;
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    kv->key = strdup(name);
    if (!ok || !kv->key) {
        free((char *)kv->key);
        free((char *)kv->s);
        l->bad = 1;
        return -1;
    }
    l->n++;
    return 0;
}

void ckpt_info_free(ckpt_info *info)
{
    if (!info) return;
    for (int i = 0; i < info->n_hparams; i++) {
        free((char *)info->hparams[i].key);
        free((char *)info->hparams[i].s);
    }
    free(info->hparams);
    free(info->config_yaml);
    memset(info, 0, sizeof *info);
}

const ckpt_kv *ckpt_info_hparam(const ckpt_info *info, const char *key)
{
    for (int i = 0; i < info->n_hparams; i++)
        if (strcmp(info->hparams[i].key, key) == 0) return &info->hparams[i];
    return NULL;
}

static int read_meta(lctx *c, hid_t f, ckpt_info *info)
{
    hid_t m = -1;
    if (H5Lexists(f, "meta", H5P_DEFAULT) > 0) m = H5Gopen2(f, "meta", H5P_DEFAULT);
    char *fmt = m >= 0 ? read_str_attr(m, "format") : NULL;
    if (!fmt || strcmp(fmt, CKPT_FORMAT) != 0) {
        msg(c->err, c->errlen,
            "'%s' is an HDF5 file but not a strata nets checkpoint (/meta format is %s%s%s, expected "
            "\"%s\"); "
            "pass a file written by ckpt_save / strata train",
            c->path, fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "", CKPT_FORMAT);
        free(fmt);
        if (m >= 0) H5Gclose(m);
        return CKPT_EFORMAT;
    }
    free(fmt);
    int64_t ver = 0, schema = 0;
    if (read_int_attr(m, "format_version", H5T_NATIVE_INT64, &ver)) {
        msg(c->err, c->errlen,
            "checkpoint '%s': /meta has no integer format_version; the file is damaged or was "
            "not written by ckpt_save",
            c->path);
        H5Gclose(m);
        return CKPT_EFORMAT;
    }
    if (ver != CKPT_VERSION) {
        msg(c->err, c->errlen,
            "checkpoint '%s' has format version %lld, this build reads version %d; load it with the strata "
            "version that wrote it (or convert it), or retrain",
            c->path, (long long)ver, CKPT_VERSION);
        H5Gclose(m);
        return CKPT_EVERSION;
    }
    ckpt_info tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.format_version = (int)ver;
    int bad = read_int_attr(m, "schema_version", H5T_NATIVE_INT64, &schema) ||
              read_int_attr(m, "step", H5T_NATIVE_INT64, &tmp.step) ||
              read_int_attr(m, "rng_seed", H5T_NATIVE_UINT64, &tmp.rng.seed) ||
              read_int_attr(m, "rng_stream", H5T_NATIVE_UINT64, &tmp.rng.stream) ||
              read_int_attr(m, "rng_counter", H5T_NATIVE_UINT64, &tmp.rng.counter);
    tmp.schema_version = (int)schema;
    if (bad) {
        msg(c->err, c->errlen,
            "checkpoint '%s': /meta lacks schema_version, step or the rng_* attributes (HDF5: %s); the file "
            "is "
            "damaged: use an older checkpoint",
            c->path, h5_reason(&c->r));
        H5Gclose(m);
        return CKPT_ECORRUPT;
    }
    /* config text */
    hid_t d = H5Lexists(m, "config_yaml", H5P_DEFAULT) > 0 ? H5Dopen2(m, "config_yaml", H5P_DEFAULT) : -1;
    if (d >= 0) {
        hid_t ft = H5Dget_type(d), sp = H5Dget_space(d);
        /* a fixed-length string is allocated at its declared size: only
         * when the file does hold that many bytes */
        if (ft >= 0 && sp >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) == 0 &&
            H5Sget_simple_extent_npoints(sp) == 1 && H5Dget_storage_size(d) >= H5Tget_size(ft)) {
            size_t n = H5Tget_size(ft);
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            H5Tset_cset(mt, H5Tget_cset(ft)); /* HDF5 converts no character sets */
            tmp.config_yaml = calloc(1, n + 1);
            if (tmp.config_yaml && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, tmp.config_yaml) < 0) {
                free(tmp.config_yaml);
                tmp.config_yaml = NULL;
            }
            H5Tclose(mt);
        } else if (ft >= 0 && sp >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) > 0 &&
                   H5Sget_simple_extent_npoints(sp) == 1) {
            /* what h5py writes for f["meta/config_yaml"] = "..." (an edited file) */
            hid_t mt = str_type(1, 0);
            H5Tset_cset(mt, H5Tget_cset(ft));
            char *v = NULL;
            if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0 && v) {
                tmp.config_yaml = strdup(v);
                H5free_memory(v);
            }
            H5Tclose(mt);
        }
        if (sp >= 0) H5Sclose(sp);
        if (ft >= 0) H5Tclose(ft);
        H5Dclose(d);
    }
    if (!tmp.config_yaml) {
        msg(c->err, c->errlen,
            "checkpoint '%s': /meta/config_yaml is missing or unreadable (HDF5: %s); the file is "
            "damaged: use an older checkpoint",
            c->path, h5_reason(&c->r));
        H5Gclose(m);
        return CKPT_ECORRUPT;
    }
    /* hyperparameters, in the order they were written */
    kv_list l = {0};
    hid_t hp = H5Lexists(m, "hparams", H5P_DEFAULT) > 0 ? H5Gopen2(m, "hparams", H5P_DEFAULT) : -1;
    if (hp < 0 || H5Aiterate2(hp, H5_INDEX_CRT_ORDER, H5_ITER_INC, NULL, hparam_cb, &l) < 0) {
        /* files written elsewhere may lack the creation-order index */
        if (hp >= 0 && !l.bad && l.n == 0 &&
            H5Aiterate2(hp, H5_INDEX_NAME, H5_ITER_INC, NULL, hparam_cb, &l) >= 0) {
            /* ok */
        } else {
            msg(c->err, c->errlen,
                "checkpoint '%s': /meta/hparams is missing or unreadable (HDF5: %s); the file is "
                "damaged: use an older checkpoint",
                c->path, h5_reason(&c->r));
            tmp.hparams = l.kv;
            tmp.n_hparams = l.n;
            ckpt_info_free(&tmp);
            if (hp >= 0) H5Gclose(hp);
            H5Gclose(m);
            return CKPT_ECORRUPT;
        }
    }
    tmp.hparams = l.kv;
    tmp.n_hparams = l.n;
    H5Gclose(hp);
    H5Gclose(m);
    if (info)
        *info = tmp;
    else
        ckpt_info_free(&tmp);
    return CKPT_OK;
}

/* 1 if every link along the absolute path exists, else 0 (H5Lexists
 * fails, rather than saying no, when an intermediate group is missing). */
static int path_exists(hid_t f, const char *path)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *q = buf + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char keep = *q;
            *q = '\0';
            if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
            if (keep == '\0') return 1;
            *q = keep;
        }
    }
}

/* Opens tensor s under group path `where` (e.g. "/" or
 * "/meta/optimizer/m") into *dout, checking, before anything is read or
 * allocated, that it exists, has s's shape, is floating point and that
 * its storage in the file holds at least as many bytes as its shape
 * declares (ckpt_save writes float32, uncompressed: a dataset declared
 * large whose data were never written holds 0 bytes). dpath receives the
 * dataset's path. Returns CKPT_OK with *dout open (the caller closes it),
 * or an error with *dout = -1. */
static int open_tensor(lctx *c, hid_t f, const char *where, const nn_tensor_spec *s, hid_t *dout, char *dpath,
                       size_t dlen)
{
    char want[128], got[128];
    *dout = -1;
    snprintf(dpath, dlen, "%s/%s/%s", strcmp(where, "/") ? where : "", s->layer, s->name);
    nn_shape_str(want, sizeof want, s->ndim, s->dims);
    if (!path_exists(f, dpath)) {
        msg(c->err, c->errlen,
            "checkpoint '%s' has no tensor %s (the network expects one of shape %s); it was saved from "
            "another "
            "network: build the network from the checkpoint's /meta/hparams and /meta/config_yaml, or start "
            "from "
            "scratch",
            c->path, dpath, want);
        return CKPT_ESHAPE;
    }
    hid_t d = H5Dopen2(f, dpath, H5P_DEFAULT);
    if (d < 0) {
        msg(c->err, c->errlen,
            "checkpoint '%s': tensor %s cannot be opened (HDF5: %s); the file is damaged: use an "
            "older checkpoint",
            c->path, dpath, h5_reason(&c->r));
        return CKPT_ECORRUPT;
    }
    hid_t sp = H5Dget_space(d), ft = H5Dget_type(d);
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    hsize_t dims[32];
    int64_t di[32];
    int same = nd == s->ndim && nd > 0 && nd <= 32;
    if (nd > 0 && nd <= 32) {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        for (int k = 0; k < nd; k++) di[k] = (int64_t)dims[k];
        for (int k = 0; same && k < nd; k++) same = di[k] == s->dims[k];
    }
    uint64_t n = 1;
    for (int k = 0; k < s->ndim; k++) n *= (uint64_t)s->dims[k];
    int rc = CKPT_OK;
    if (nd < 0 || ft < 0) {
        msg(c->err, c->errlen,
            "checkpoint '%s': tensor %s is unreadable (HDF5: %s); the file is damaged: use an "
            "older checkpoint",
            c->path, dpath, h5_reason(&c->r));
        rc = CKPT_ECORRUPT;
    } else if (!same) {
        nn_shape_str(got, sizeof got, nd > 0 && nd <= 32 ? nd : 0, di);
        msg(c->err, c->errlen,
            "checkpoint '%s': tensor %s has shape %s in the file but the network expects %s; the checkpoint "
            "was "
            "trained with other hyperparameters: build the network from its /meta/hparams and "
            "/meta/config_yaml, "
            "or start from scratch",
            c->path, dpath, got, want);
        rc = CKPT_ESHAPE;
    } else if (H5Tget_class(ft) != H5T_FLOAT) {
        msg(c->err, c->errlen,
            "checkpoint '%s': tensor %s is not floating point; not a strata checkpoint tensor", c->path,
            dpath);
        rc = CKPT_EFORMAT;
    } else if ((uint64_t)H5Dget_storage_size(d) < n * sizeof(float)) {
        msg(c->err, c->errlen,
            "checkpoint '%s': dataset %s declares shape %s (%llu bytes of float32) but holds %llu bytes in "
            "the file; its data were never written or are compressed, which ckpt_save never does: the file "
            "is damaged or forged, use an older checkpoint",
            c->path, dpath, want, (unsigned long long)(n * sizeof(float)),
            (unsigned long long)H5Dget_storage_size(d));
        rc = CKPT_ECORRUPT;
    }
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    if (rc == CKPT_OK)
        *dout = d;
    else
        H5Dclose(d);
    return rc;
}

/* Reads tensor i of p from group path `where` into dst (see open_tensor
 * for what is checked first), then checks its values: every one finite,
 * weights (which = 0) of magnitude at most CKPT_MAX_WEIGHT, Adam's second
 * moments (which = 2) not negative. */
static int read_tensor(lctx *c, hid_t f, const char *where, int which, const nn_params *p, int i, float *dst)
{
    char dpath[512];
    hid_t d;
    int rc = open_tensor(c, f, where, &p->spec[i], &d, dpath, sizeof dpath);
    if (rc != CKPT_OK) return rc;
    if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst) < 0) {
        msg(c->err, c->errlen,
            "checkpoint '%s': reading tensor %s failed (HDF5: %s); the file is corrupt: use an older "
            "checkpoint",
            c->path, dpath, h5_reason(&c->r));
        rc = CKPT_ECORRUPT;
    }
    H5Dclose(d);
    for (size_t k = 0; rc == CKPT_OK && k < p->size[i]; k++) {
        float v = dst[k];
        const char *bad = !isfinite(v)                                   ? "a non-finite value"
                          : which == 0 && fabsf(v) > CKPT_MAX_WEIGHT ? "a weight beyond +-1e6"
                          : which == 2 && v < 0                          ? "a negative second moment"
                                                                         : NULL;
        if (bad) {
            msg(c->err, c->errlen,
                "checkpoint '%s': tensor %s holds %s (%g) at index %zu of %zu; the weights are unusable "
                "(a diverged run or a damaged file): use an older checkpoint",
                c->path, dpath, bad, (double)v, k, p->size[i]);
            rc = CKPT_EVALUE;
        }
    }
    return rc;
}

int ckpt_check_sizes(const char *path, const nn_tensor_spec *spec, int n, char *err, size_t errlen)
{
    if (!path || !spec || n < 0) {
        msg(err, errlen, "ckpt_check_sizes: path and table are required");
        return CKPT_EARG;
    }
    lctx c = {path, err, errlen, {{0}}};
    quiet_t q;
    quiet_begin(&q);
    int rc = CKPT_OK;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        msg(err, errlen, "checkpoint '%s' cannot be opened (HDF5: %s); use an older checkpoint", path,
            h5_reason(&c.r));
        rc = CKPT_ECORRUPT;
    }
    const char *where[3] = {"/", "/meta/optimizer/m", "/meta/optimizer/v"};
    for (int w = 0; w < 3 && rc == CKPT_OK; w++)
        for (int i = 0; i < n && rc == CKPT_OK; i++) {
            char dpath[512];
            hid_t d;
            rc = open_tensor(&c, f, where[w], &spec[i], &d, dpath, sizeof dpath);
            if (rc == CKPT_OK) H5Dclose(d);
        }
    if (f >= 0) H5Fclose(f);
    quiet_end(&q);
    return rc;
}

typedef struct {
    const nn_params *p;
    const char *layer; /* NULL while iterating the root */
    char extra[256];
} extra_ctx;

static herr_t extra_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    extra_ctx *e = data;
    if (!e->layer) {
        if (strcmp(name, "meta") == 0) return 0;
        for (int i = 0; i < e->p->n; i++)
            if (strcmp(e->p->spec[i].layer, name) == 0) {
                extra_ctx sub = {e->p, name, ""};
                if (H5Literate_by_name(g, name, H5_INDEX_NAME, H5_ITER_INC, NULL, extra_cb, &sub,
                                       H5P_DEFAULT) < 0 &&
                    !sub.extra[0])
                    snprintf(sub.extra, sizeof sub.extra, "%s (unreadable)", name);
                if (sub.extra[0]) {
                    snprintf(e->extra, sizeof e->extra, "%s", sub.extra);
                    return 1;
                }
                return 0;
            }
        snprintf(e->extra, sizeof e->extra, "/%s", name);
        return 1;
    }
    if (nn_params_find(e->p, e->layer, name) >= 0) return 0;
    snprintf(e->extra, sizeof e->extra, "/%s/%s", e->layer, name);
    return 1;
}

int ckpt_load(const char *path, nn_params *p, ckpt_info *info, char *err, size_t errlen)
{
    if (info) memset(info, 0, sizeof *info);
    if (!path || !path[0]) {
        msg(err, errlen, "ckpt_load: no path");
        return CKPT_EARG;
    }
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
        msg(err, errlen, "cannot open checkpoint '%s': %s; check the path", path, strerror(errno));
        return CKPT_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        msg(err, errlen, "checkpoint '%s' is not a regular file", path);
        return CKPT_EIO;
    }
    lctx c = {path, err, errlen, {{0}}};
    quiet_t q;
    quiet_begin(&q);
    int rc;
    hid_t f = -1;
    float *buf = NULL;
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        msg(err, errlen,
            "checkpoint '%s' (%lld bytes) is not an HDF5 file or its header is damaged (HDF5: %s); use an "
            "older "
            "checkpoint",
            path, (long long)st.st_size, is < 0 ? h5_reason(&c.r) : "no HDF5 signature");
        rc = CKPT_ECORRUPT;
        goto out;
    }
    /* ckpt_save writes the HDF5 1.10 format: the superblock (version 3) at
     * offset 0, and metadata that carry checksums. Older superblocks (0 and
     * 1) lead to metadata without checksums, whose damaged length fields
     * HDF5 1.10 trusts (a local heap of 123 TB: HDF5 then copies into the
     * NULL its malloc returned, a crash the fuzzer found); such a file
     * cannot be ours, so it is refused before HDF5 reads any of it. */
    unsigned char sb[9] = {0};
    size_t got = 0;
    /* opened with O_NONBLOCK and checked with fstat: the stat above
     * refused a FIFO, but the path may have been replaced by one since,
     * and a FIFO without a writer would block the open for ever */
    int hfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat hst;
    if (hfd < 0) {
        msg(err, errlen, "cannot open checkpoint '%s': %s; check the path", path, strerror(errno));
        rc = CKPT_EIO;
        goto out;
    }
    if (fstat(hfd, &hst) != 0 || !S_ISREG(hst.st_mode)) {
        close(hfd);
        msg(err, errlen, "checkpoint '%s' is not a regular file", path);
        rc = CKPT_EIO;
        goto out;
    }
    while (got < sizeof sb) {
        ssize_t k = read(hfd, sb + got, sizeof sb - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(hfd);
    if (got < sizeof sb || memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0) {
        msg(err, errlen,
            "checkpoint '%s' is HDF5 but not a strata nets checkpoint: its superblock is not at the "
            "start of the file, where ckpt_save writes it; pass a file written by ckpt_save / "
            "strata train",
            path);
        rc = CKPT_EFORMAT;
        goto out;
    }
    if (sb[8] < 2) {
        msg(err, errlen,
            "checkpoint '%s' is HDF5 but not a strata nets checkpoint: its superblock (version %d) "
            "has no checksums, and ckpt_save writes version 3 at the start of the file; pass a file "
            "written by ckpt_save / strata train",
            path, sb[8]);
        rc = CKPT_EFORMAT;
        goto out;
    }
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        const char *why = h5_reason(&c.r);
        msg(err, errlen,
            "checkpoint '%s' (%lld bytes) cannot be opened: %s (HDF5: %s); the file was cut short or "
            "damaged, "
            "e.g. by an incomplete copy: use an older checkpoint",
            path, (long long)st.st_size, strstr(why, "truncated") ? "it is truncated" : "it is corrupt", why);
        rc = CKPT_ECORRUPT;
        goto out;
    }
    rc = read_meta(&c, f, info);
    if (rc != CKPT_OK || !p) goto out;
    /* every expected tensor, into a scratch copy first: all or nothing */
    buf = malloc(3 * p->total * sizeof *buf);
    if (!buf) {
        msg(err, errlen, "ckpt_load '%s': out of memory", path);
        rc = CKPT_EIO;
        goto out;
    }
    memset(buf, 0, 3 * p->total * sizeof *buf);
    const char *where[3] = {"", "/meta/optimizer/m", "/meta/optimizer/v"};
    for (int w = 0; w < 3 && rc == CKPT_OK; w++)
        for (int i = 0; i < p->n && rc == CKPT_OK; i++)
            rc = read_tensor(&c, f, w ? where[w] : "/", w, p, i, buf + (size_t)w * p->total + p->off[i]);
    if (rc != CKPT_OK) goto out;
    /* nothing the network does not have */
    extra_ctx e = {p, NULL, ""};
    if (H5Literate(f, H5_INDEX_NAME, H5_ITER_INC, NULL, extra_cb, &e) < 0 && !e.extra[0]) {
        msg(err, errlen,
            "checkpoint '%s': its groups cannot be listed (HDF5: %s); the file is damaged: use an older "
            "checkpoint",
            path, h5_reason(&c.r));
        rc = CKPT_ECORRUPT;
        goto out;
    }
    if (e.extra[0]) {
        msg(err, errlen,
            "checkpoint '%s' has %s, which the network does not have; it was saved from another network: "
            "build "
            "the network from its /meta/hparams and /meta/config_yaml, or start from scratch",
            path, e.extra);
        rc = CKPT_ESHAPE;
        goto out;
    }
    memcpy(p->params, buf, p->total * sizeof *buf);
    memcpy(p->m, buf + p->total, p->total * sizeof *buf);
    memcpy(p->v, buf + 2 * p->total, p->total * sizeof *buf);
out:
    free(buf);
    if (f >= 0) H5Fclose(f);
    quiet_end(&q);
    if (rc != CKPT_OK && info) ckpt_info_free(info);
    return rc;
}
