/* ckpt_forge.h -- bad policy checkpoints made from a good one, for tests.
 *
 * tests/test_faults_ckpt.c (the loader, and the seeds of
 * fuzz/corpus/ckpt/) and tests/test_faults_reload.c (the daemon's SIGHUP
 * reload) edit a copy of a real checkpoint in place with HDF5:
 *
 *   forge_set_real   a real hyperparameter of /meta/hparams set to a value
 *                    (clip = 1e300: finite, absurd)
 *   forge_poke       one float of a dataset set to a value (a NaN weight)
 *   forge_huge_dims  the network's sizes set to 4096 and every tensor
 *                    (weights and Adam moments) redeclared at the shape
 *                    they imply, its data never written (storage 0 bytes)
 *
 * Each returns 0, or -1 when the file could not be edited.
 */
#ifndef STRATA_TEST_CKPT_FORGE_H
#define STRATA_TEST_CKPT_FORGE_H

#include <hdf5.h>
#include <stdlib.h>

#include "agent/net.h"

/* Replaces attribute key of /meta/hparams by a scalar of file type ft
 * holding *v (memory type mt). Replaced rather than rewritten: HDF5 1.10
 * loses track of an attribute rewritten in a creation-ordered group. */
static inline int forge_attr(hid_t f, const char *key, hid_t ft, hid_t mt, const void *v) {
    hid_t g = H5Gopen2(f, "/meta/hparams", H5P_DEFAULT), sp = H5Screate(H5S_SCALAR), a = -1;
    if (g >= 0 && sp >= 0 && H5Adelete(g, key) >= 0) a = H5Acreate2(g, key, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, mt, v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (g >= 0) H5Gclose(g);
    return rc;
}

static inline int forge_set_real(const char *path, const char *key, double v) {
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    int rc = forge_attr(f, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
    return H5Fclose(f) < 0 ? -1 : rc;
}

static inline int forge_poke(const char *path, const char *dset, size_t index, float v) {
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), sp = d >= 0 ? H5Dget_space(d) : -1;
    hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    float *buf = n > 0 ? malloc((size_t)n * sizeof *buf) : NULL;
    int rc = -1;
    if (buf && (hssize_t)index < n && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        buf[index] = v;
        rc = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0 ? 0 : -1;
    }
    free(buf);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return H5Fclose(f) < 0 ? -1 : rc;
}

static inline int forge_huge_dims(const char *path) {
    static const char *const keys[] = {"embed", "hidden", "decoder", "scorer"};
    static const char *const where[] = {"", "/meta/optimizer/m", "/meta/optimizer/v"};
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    int rc = 0;
    for (int k = 0; k < 4 && rc == 0; k++) {
        long long v = 4096;
        rc = forge_attr(f, keys[k], H5T_STD_I64LE, H5T_NATIVE_LLONG, &v);
    }
    agent_net_dims d;
    agent_net_dims_default(&d);
    d.embed = d.hidden = d.decoder = d.scorer = 4096;
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table(&d, t);
    for (int w = 0; w < 3 && rc == 0; w++)
        for (int i = 0; i < AN_N_TENSORS && rc == 0; i++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%.200s/%.200s", where[w], t[i].layer, t[i].name);
            hsize_t dims[NN_MAX_DIMS];
            for (int j = 0; j < t[i].ndim; j++) dims[j] = (hsize_t)t[i].dims[j];
            hid_t sp = H5Screate_simple(t[i].ndim, dims, NULL);
            /* contiguous, allocated late: declared, never written */
            hid_t ds = -1;
            if (sp >= 0 && H5Ldelete(f, p, H5P_DEFAULT) >= 0)
                ds = H5Dcreate2(f, p, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            rc = ds >= 0 ? 0 : -1;
            if (ds >= 0) H5Dclose(ds);
            if (sp >= 0) H5Sclose(sp);
        }
    return H5Fclose(f) < 0 ? -1 : rc;
}

#endif
