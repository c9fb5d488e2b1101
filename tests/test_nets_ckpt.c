/* test_nets_ckpt.c -- HDF5 checkpoints (nets/ckpt): bit-identical round
 * trips, the layout as h5py and h5dump see it, exact training resumption,
 * the error for every kind of bad file, and atomic saves under SIGKILL.
 *
 * Files go to $STRATA_TMP/nets_ckpt/. The h5py check runs
 * scripts/ckpt_inspect.py with /usr/bin/python3 ($STRATA_SRC locates it).
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "nets/ckpt.h"
#include "nets/layers.h"
#include "nets/params.h"
#include "nets/refnet.h"
#include "nets/rng.h"
#include "tests/harness.h"

static char dir[1024];

/* LeakSanitizer (ASan builds): HDF5 1.10.8 leaks the partly decoded object
 * header when a metadata checksum fails (H5O_protect error path), which is
 * exactly what test_corrupt provokes a thousand times. Suppress leaks whose
 * allocation stack runs through libhdf5 only; leaks from our own code have
 * no HDF5 frame and are still reported. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libhdf5_serial.so\n";
}

static const char *tmp_path(const char *name)
{
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* A table with every rank 1..4 and an LSTM-like pair. */
static int small_table(nn_tensor_spec *t)
{
    t[0] = nn_spec("embed", "weight", NN_INIT_NORMAL, 1.0f, 0, 7, 4, 0, 0);
    t[1] = nn_spec("encoder", "w_ih", NN_INIT_XAVIER, 1.0f, 0, 12, 4, 0, 0);
    t[2] = nn_spec("encoder", "w_hh", NN_INIT_ORTHO, 1.0f, 0, 12, 3, 0, 0);
    t[3] = nn_spec("encoder", "b", NN_INIT_LSTM_BIAS, 1.0f, 1, 12, 0, 0, 0);
    t[4] = nn_spec("conv", "kernel", NN_INIT_XAVIER, 1.0f, 0, 2, 3, 4, 5);
    t[5] = nn_spec("conv", "cube", NN_INIT_NORMAL, 0.1f, 0, 2, 2, 2, 0);
    return 6;
}

static nn_params *make_params(const nn_tensor_spec *t, int n, uint64_t seed)
{
    char err[256];
    nn_params *p = nn_params_create(t, n, err, sizeof err);
    if (!p) fail_msg("%s", err);
    nn_params_init(p, seed);
    rng_t r;
    rng_init(&r, seed + 1);
    /* tensor elements only: the alignment padding between tensors stays 0 */
    for (int i = 0; i < p->n; i++)
        for (size_t e = 0; e < p->size[i]; e++) {
            p->m[p->off[i] + e] = (float)rng_normal(&r);
            p->v[p->off[i] + e] = (float)rng_uniform(&r);
        }
    return p;
}

static const char *YAML = "# trained with\nagent:\n  hidden: 3\n  lr: 3.0e-4\nname: \"stra\xc3\x9f"
                          "e\"\n";

static ckpt_kv HP[] = {
    {.key = "hidden", .type = CKPT_KV_INT, .i = 3},
    {.key = "lr", .type = CKPT_KV_REAL, .r = 3e-4},
    {.key = "cell", .type = CKPT_KV_STR, .s = "lstm"},
    {.key = "batch", .type = CKPT_KV_INT, .i = -256},
};

/* big: RNG words above 2^63 (full uint64 range; JSON parsers stop at
 * 2^63 - 1, so the h5py check uses small ones). */
static ckpt_meta small_meta(int big)
{
    ckpt_meta m = {
        .step = 1234567890123LL, .schema_version = 3, .config_yaml = YAML, .hparams = HP, .n_hparams = 4};
    if (big)
        m.rng = (rng_t){.seed = 0xfedcba9876543210ULL, .stream = 7, .counter = 0x8000000000000001ULL};
    else
        m.rng = (rng_t){.seed = 0x0edcba9876543210ULL, .stream = 7, .counter = 123456789};
    return m;
}

static void assert_same(const nn_params *a, const nn_params *b)
{
    assert_int_equal(a->total, b->total);
    assert_memory_equal(a->params, b->params, a->total * sizeof(float));
    assert_memory_equal(a->m, b->m, a->total * sizeof(float));
    assert_memory_equal(a->v, b->v, a->total * sizeof(float));
}

static void test_roundtrip(void **state)
{
    (void)state;
    nn_tensor_spec t[8];
    int n = small_table(t);
    nn_params *p = make_params(t, n, 42);
    ckpt_meta m = small_meta(1);
    char err[512];
    int rc = ckpt_save(tmp_path("rt.h5"), p, &m, err, sizeof err);
    if (rc) fail_msg("%s", err);
    nn_params *q = make_params(t, n, 99); /* different contents */
    ckpt_info info;
    rc = ckpt_load(tmp_path("rt.h5"), q, &info, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_same(p, q); /* bit-identical */
    assert_int_equal(info.format_version, CKPT_VERSION);
    assert_true(info.step == m.step);
    assert_true(info.rng.seed == m.rng.seed && info.rng.stream == 7 && info.rng.counter == m.rng.counter);
    assert_int_equal(info.schema_version, 3);
    assert_string_equal(info.config_yaml, YAML);
    assert_int_equal(info.n_hparams, 4);
    for (int i = 0; i < 4; i++) { /* order and types kept */
        assert_string_equal(info.hparams[i].key, HP[i].key);
        assert_int_equal(info.hparams[i].type, HP[i].type);
    }
    assert_true(ckpt_info_hparam(&info, "hidden")->i == 3);
    assert_true(ckpt_info_hparam(&info, "batch")->i == -256);
    assert_true(ckpt_info_hparam(&info, "lr")->r == 3e-4);
    assert_string_equal(ckpt_info_hparam(&info, "cell")->s, "lstm");
    assert_null(ckpt_info_hparam(&info, "nope"));
    ckpt_info_free(&info);
    /* a user replaces the config with h5py (a variable-length string):
     * still read */
    {
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 -c \"import h5py; f = h5py.File('%s', 'r+'); del f['meta/config_yaml']; "
                 "f['meta/config_yaml'] = 'edited: 1\\n'\"",
                 tmp_path("rt.h5"));
        assert_int_equal(system(cmd), 0);
        assert_int_equal(ckpt_load(tmp_path("rt.h5"), NULL, &info, err, sizeof err), CKPT_OK);
        assert_string_equal(info.config_yaml, "edited: 1\n");
        ckpt_info_free(&info);
        assert_int_equal(ckpt_save(tmp_path("rt.h5"), p, &m, err, sizeof err), CKPT_OK);
    }
    /* meta only (p NULL): what a caller reads first to build the network */
    rc = ckpt_load(tmp_path("rt.h5"), NULL, &info, err, sizeof err);
    assert_int_equal(rc, CKPT_OK);
    assert_string_equal(info.config_yaml, YAML);
    ckpt_info_free(&info);
    /* the file gets a normal mode (0666 & ~umask), not mkstemp's 0600,
     * and a save over an existing file keeps that file's mode */
    struct stat st;
    mode_t old_mask = umask(022);
    unlink(tmp_path("mode.h5"));
    assert_int_equal(ckpt_save(tmp_path("mode.h5"), p, &m, err, sizeof err), CKPT_OK);
    assert_int_equal(stat(tmp_path("mode.h5"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    chmod(tmp_path("mode.h5"), 0640);
    assert_int_equal(ckpt_save(tmp_path("mode.h5"), p, &m, err, sizeof err), CKPT_OK);
    assert_int_equal(stat(tmp_path("mode.h5"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    umask(old_mask);
    /* no temporary file is left behind */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) assert_null(strstr(e->d_name, "rt.h5.tmp"));
    closedir(d);
    nn_params_free(p);
    nn_params_free(q);
}

/* ---- h5py and h5dump ---- */

static char *run_capture(const char *cmd, int *status)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 1024) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    *status = pclose(f);
    return buf;
}

static void test_h5py_layout(void **state)
{
    (void)state;
    nn_tensor_spec t[8];
    int n = small_table(t);
    nn_params *p = make_params(t, n, 5);
    ckpt_meta m = small_meta(0);
    char err[512], cmd[4096];
    assert_int_equal(ckpt_save(tmp_path("layout.h5"), p, &m, err, sizeof err), CKPT_OK);
    const char *src = getenv("STRATA_SRC");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/scripts/ckpt_inspect.py %s", src ? src : ".",
             tmp_path("layout.h5"));
    int status;
    char *out = run_capture(cmd, &status);
    if (status != 0) fail_msg("ckpt_inspect.py failed (status %d): %s", status, out);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    if (!j) fail_msg("ckpt_inspect.py printed no JSON: %s", jerr.text);
    /* layer_names: groups in table order */
    const char *want_layers[3] = {"embed", "encoder", "conv"};
    json_t *ln = json_object_get(j, "layer_names");
    assert_int_equal(json_array_size(ln), 3);
    for (int i = 0; i < 3; i++) assert_string_equal(json_string_value(json_array_get(ln, i)), want_layers[i]);
    /* every weight: name in weight_names, true shape, float32, checksum
     * filter, same sum as the C buffer */
    json_t *layers = json_object_get(j, "layers");
    for (int i = 0; i < n; i++) {
        json_t *L = json_object_get(layers, t[i].layer);
        assert_non_null(L);
        json_t *wn = json_object_get(L, "weight_names");
        int found = 0;
        for (size_t k = 0; k < json_array_size(wn); k++)
            found |= strcmp(json_string_value(json_array_get(wn, k)), t[i].name) == 0;
        assert_true(found);
        json_t *w = json_object_get(json_object_get(L, "weights"), t[i].name);
        json_t *shape = json_object_get(w, "shape");
        assert_int_equal(json_array_size(shape), t[i].ndim);
        for (int k = 0; k < t[i].ndim; k++)
            assert_int_equal(json_integer_value(json_array_get(shape, k)), t[i].dims[k]);
        assert_string_equal(json_string_value(json_object_get(w, "dtype")), "float32");
        assert_true(json_is_true(json_object_get(w, "fletcher32")));
        double s = 0;
        for (size_t e = 0; e < p->size[i]; e++) s += nn_param(p, i)[e];
        double js = json_real_value(json_object_get(w, "sum"));
        assert_true(fabs(js - s) <= 1e-9 * fmax(1, fabs(s)));
        /* the moments too */
        char key[160];
        snprintf(key, sizeof key, "%.63s/%.63s", t[i].layer, t[i].name);
        json_t *mv = json_object_get(json_object_get(json_object_get(j, "optimizer"), "v"), key);
        assert_int_equal(json_array_size(json_object_get(mv, "shape")), t[i].ndim);
    }
    json_t *meta = json_object_get(j, "meta");
    assert_string_equal(json_string_value(json_object_get(meta, "format")), CKPT_FORMAT);
    assert_int_equal(json_integer_value(json_object_get(meta, "format_version")), CKPT_VERSION);
    assert_int_equal(json_integer_value(json_object_get(meta, "schema_version")), 3);
    assert_true(json_integer_value(json_object_get(meta, "step")) == 1234567890123LL);
    assert_int_equal(json_integer_value(json_object_get(meta, "rng_stream")), 7);
    assert_true(json_integer_value(json_object_get(meta, "rng_seed")) == 0x0edcba9876543210LL);
    assert_int_equal(json_integer_value(json_object_get(meta, "rng_counter")), 123456789);
    assert_string_equal(json_string_value(json_object_get(meta, "optimizer")), "adamw");
    json_t *hp = json_object_get(j, "hparams");
    assert_string_equal(json_string_value(json_object_get(json_object_get(hp, "hidden"), "type")), "int");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(hp, "hidden"), "value")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(hp, "lr"), "type")), "real");
    assert_true(json_real_value(json_object_get(json_object_get(hp, "lr"), "value")) == 3e-4);
    assert_string_equal(json_string_value(json_object_get(json_object_get(hp, "cell"), "value")), "lstm");
    assert_string_equal(json_string_value(json_object_get(j, "config_yaml")), YAML);
    json_decref(j);
    free(out);

    /* h5dump -A (attributes and structure, no data) reads it too */
    snprintf(cmd, sizeof cmd, "h5dump -A %s 2>&1", tmp_path("layout.h5"));
    out = run_capture(cmd, &status);
    if (status != 0) fail_msg("h5dump -A failed: %s", out);
    assert_non_null(strstr(out, "ATTRIBUTE \"layer_names\""));
    assert_non_null(strstr(out, "ATTRIBUTE \"weight_names\""));
    assert_non_null(strstr(out, "DATASET \"w_hh\""));
    assert_non_null(strstr(out, "( 12, 3 )"));
    assert_non_null(strstr(out, CKPT_FORMAT));
    free(out);
    nn_params_free(p);
}

/* ---- resuming training is exact ---- */

/* One training step of the small reference network on inputs drawn from
 * the RNG cursor r (so the cursor is part of the state to restore). */
static void train_step(nn_refnet *net, nn_params *p, rng_t *r, int64_t t)
{
    const nn_refnet_cfg *g = &net->cfg;
    int TB = g->T * g->B, BK = g->B * g->K;
    int tokens[64], action[64], len[8];
    float cand[256], adv[64];
    uint8_t mask[64];
    for (int i = 0; i < TB; i++) tokens[i] = (int)(rng_uniform(r) * g->V);
    for (int b = 0; b < g->B; b++) len[b] = 1 + (int)(rng_uniform(r) * g->T);
    for (int i = 0; i < BK * g->C; i++) cand[i] = (float)rng_normal(r);
    for (int i = 0; i < BK; i++) mask[i] = (i % g->K) == 0 || rng_uniform(r) < 0.7;
    for (int i = 0; i < TB; i++) adv[i] = (float)rng_normal(r);
    char err[256];
    /* sample the actions from the current policy, as a rollout would */
    for (int i = 0; i < TB; i++) action[i] = -1;
    assert_int_equal(nn_refnet_forward(net, tokens, len, cand, mask, action, adv, err, sizeof err), 0);
    assert_int_equal(nn_sample(action, net->probs, net->mask_full, TB, g->K, r), 0);
    for (int tt = 0; tt < g->T; tt++)
        for (int b = 0; b < g->B; b++)
            if (tt >= len[b]) action[tt * g->B + b] = -1;
    assert_int_equal(nn_refnet_forward(net, tokens, len, cand, mask, action, adv, err, sizeof err), 0);
    nn_params_zero_grad(p);
    nn_refnet_backward(net);
    nn_clip_grad_norm(p, 1.0);
    nn_adam_cfg a = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    nn_adam_step(p, &a, t);
}

static void test_resume_exact(void **state)
{
    (void)state;
    nn_refnet_cfg cfg = {.T = 4,
                         .B = 3,
                         .V = 5,
                         .E = 4,
                         .H = 8,
                         .D = 6,
                         .K = 4,
                         .C = 3,
                         .beta = 0.01f,
                         .clip = 0,
                         .ln_eps = 1e-5f};
    nn_tensor_spec t[NN_REFNET_TENSORS];
    nn_refnet_table(&cfg, t);
    char err[512];
    /* straight through: 6 steps */
    nn_params *a = nn_params_create(t, NN_REFNET_TENSORS, err, sizeof err);
    nn_params_init(a, 11);
    nn_refnet *na = nn_refnet_create(&cfg, a, err, sizeof err);
    rng_t ra;
    rng_init(&ra, 77);
    for (int64_t s = 1; s <= 6; s++) train_step(na, a, &ra, s);
    /* 3 steps, checkpoint, a fresh process state, load, 3 more */
    nn_params *b = nn_params_create(t, NN_REFNET_TENSORS, err, sizeof err);
    nn_params_init(b, 11);
    nn_refnet *nb = nn_refnet_create(&cfg, b, err, sizeof err);
    rng_t rb;
    rng_init(&rb, 77);
    for (int64_t s = 1; s <= 3; s++) train_step(nb, b, &rb, s);
    ckpt_meta m = {
        .step = 3, .rng = rb, .schema_version = 1, .config_yaml = "", .hparams = NULL, .n_hparams = 0};
    assert_int_equal(ckpt_save(tmp_path("resume.h5"), b, &m, err, sizeof err), CKPT_OK);
    nn_refnet_free(nb);
    nn_params_free(b);

    nn_params *c = nn_params_create(t, NN_REFNET_TENSORS, err, sizeof err);
    nn_params_init(c, 999); /* wrong on purpose: the load must overwrite all */
    ckpt_info info;
    int rc = ckpt_load(tmp_path("resume.h5"), c, &info, err, sizeof err);
    if (rc) fail_msg("%s", err);
    nn_refnet *nc = nn_refnet_create(&cfg, c, err, sizeof err);
    rng_t rc_ = info.rng;
    for (int64_t s = info.step + 1; s <= 6; s++) train_step(nc, c, &rc_, s);
    assert_memory_equal(a->params, c->params, a->total * sizeof(float));
    assert_memory_equal(a->m, c->m, a->total * sizeof(float));
    assert_memory_equal(a->v, c->v, a->total * sizeof(float));
    assert_true(ra.counter == rc_.counter);
    ckpt_info_free(&info);
    nn_refnet_free(na);
    nn_refnet_free(nc);
    nn_params_free(a);
    nn_params_free(c);
}

/* ---- every kind of bad file ---- */

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

#define expect_fail(rc_expr, code, needle)                                                                   \
    do {                                                                                                     \
        err[0] = '\0';                                                                                       \
        int rc_ = (rc_expr);                                                                                 \
        print_message("  [%d] %s\n", rc_, err);                                                              \
        if (rc_ != (code)) fail_msg("expected %d, got %d: %s", (code), rc_, err);                            \
        if (!strstr(err, (needle))) fail_msg("message lacks \"%s\": %s", (needle), err);                     \
    } while (0)

static void set_meta_attr(const char *path, const char *name, int64_t v)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    /* (H5Aopen_by_name + H5Awrite fails in HDF5 1.10.8: open the group) */
    hid_t g = H5Gopen2(f, "meta", H5P_DEFAULT);
    hid_t a = H5Aopen(g, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Gclose(g);
    H5Fclose(f);
}

static void test_bad_files(void **state)
{
    (void)state;
    nn_tensor_spec t[8];
    int n = small_table(t);
    nn_params *p = make_params(t, n, 1);
    ckpt_meta m = small_meta(1);
    char err[1024];
    char good[1200];
    snprintf(good, sizeof good, "%s", tmp_path("good.h5"));
    assert_int_equal(ckpt_save(good, p, &m, err, sizeof err), CKPT_OK);
    size_t len;
    unsigned char *bytes = (unsigned char *)harness_slurp(good, &len);
    assert_non_null(bytes);

    expect_fail(ckpt_load(tmp_path("missing.h5"), p, NULL, err, sizeof err), CKPT_EIO, "check the path");
    const char *text = "agent:\n  lr: 1\n";
    write_bytes(tmp_path("text.h5"), text, strlen(text));
    expect_fail(ckpt_load(tmp_path("text.h5"), p, NULL, err, sizeof err), CKPT_ECORRUPT, "not an HDF5 file");
    /* truncated: empty, inside the superblock, half, all but the last byte */
    size_t cuts[4] = {0, 40, len / 2, len - 1};
    for (int i = 0; i < 4; i++) {
        write_bytes(tmp_path("cut.h5"), bytes, cuts[i]);
        expect_fail(ckpt_load(tmp_path("cut.h5"), p, NULL, err, sizeof err), CKPT_ECORRUPT, "cut.h5");
    }
    write_bytes(tmp_path("cut.h5"), bytes, len / 2);
    expect_fail(ckpt_load(tmp_path("cut.h5"), p, NULL, err, sizeof err), CKPT_ECORRUPT, "truncated");

    /* HDF5, but not a checkpoint */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fcreate(tmp_path("other.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Fclose(f);
    expect_fail(ckpt_load(tmp_path("other.h5"), p, NULL, err, sizeof err), CKPT_EFORMAT,
                "not a strata nets checkpoint");

    /* a future format version */
    write_bytes(tmp_path("v2.h5"), bytes, len);
    set_meta_attr(tmp_path("v2.h5"), "format_version", 2);
    expect_fail(ckpt_load(tmp_path("v2.h5"), p, NULL, err, sizeof err), CKPT_EVERSION,
                "format version 2, this build reads version 1");

    /* another network: w_hh [12,3] in the file, [8,2] expected; the load
     * must not touch p (tensors before w_hh do match) */
    nn_tensor_spec t2[8];
    small_table(t2);
    t2[2].dims[0] = 8;
    t2[2].dims[1] = 2;
    nn_params *q = make_params(t2, n, 3);
    float first = q->params[0];
    expect_fail(ckpt_load(good, q, NULL, err, sizeof err), CKPT_ESHAPE,
                "encoder/w_hh has shape [12,3] in the file but the network expects [8,2]");
    assert_true(q->params[0] == first);
    nn_params_free(q);
    /* a tensor the file lacks */
    t2[2] = t[2];
    t2[6] = nn_spec("head", "w", NN_INIT_XAVIER, 1, 0, 3, 3, 0, 0);
    q = make_params(t2, n + 1, 3);
    expect_fail(ckpt_load(good, q, NULL, err, sizeof err), CKPT_ESHAPE, "has no tensor /head/w");
    nn_params_free(q);
    /* a tensor the network lacks */
    q = make_params(t, n - 1, 3);
    expect_fail(ckpt_load(good, q, NULL, err, sizeof err), CKPT_ESHAPE,
                "/conv/cube, which the network does not have");
    nn_params_free(q);

    /* bad arguments and an impossible destination */
    ckpt_kv badkv = {.key = "a/b", .type = CKPT_KV_INT};
    ckpt_meta mb = m;
    mb.hparams = &badkv;
    mb.n_hparams = 1;
    expect_fail(ckpt_save(tmp_path("x.h5"), p, &mb, err, sizeof err), CKPT_EARG, "bad key 'a/b'");
    expect_fail(ckpt_save(tmp_path("no/such/dir/x.h5"), p, &m, err, sizeof err), CKPT_EIO,
                "cannot create a temporary file");
    free(bytes);
    nn_params_free(p);
}

/* Corruption: one flipped byte in a tensor's data is caught by its
 * checksum; then a sweep flipping one byte at 1000 spread offsets: every
 * load either fails with a message or returns exactly the saved data
 * (bytes HDF5 never reads, such as padding), and nothing crashes. */
static void test_corrupt(void **state)
{
    (void)state;
    nn_tensor_spec t[8];
    int n = small_table(t);
    nn_params *p = make_params(t, n, 8);
    /* a recognisable pattern in conv/kernel to find its bytes */
    float *k = nn_param(p, 4);
    for (size_t e = 0; e < p->size[4]; e++) k[e] = 1000.0f + (float)e;
    ckpt_meta m = small_meta(1);
    char err[1024];
    char good[1200], bad[1200];
    snprintf(good, sizeof good, "%s", tmp_path("c.h5"));
    snprintf(bad, sizeof bad, "%s", tmp_path("c_bad.h5"));
    assert_int_equal(ckpt_save(good, p, &m, err, sizeof err), CKPT_OK);
    size_t len;
    unsigned char *bytes = (unsigned char *)harness_slurp(good, &len);
    assert_non_null(bytes);
    unsigned char pat[8];
    memcpy(pat, k + 10, 8);
    unsigned char *hit = memmem(bytes, len, pat, 8);
    assert_non_null(hit);
    size_t off = (size_t)(hit - bytes);
    bytes[off + 1] ^= 0x10;
    write_bytes(bad, bytes, len);
    bytes[off + 1] ^= 0x10;
    nn_params *q = make_params(t, n, 9);
    expect_fail(ckpt_load(bad, q, NULL, err, sizeof err), CKPT_ECORRUPT, "conv/kernel");
    assert_non_null(strstr(err, "corrupt"));

    int detected = 0, harmless = 0;
    for (int i = 0; i < 1000; i++) {
        size_t at = (size_t)i * (len - 1) / 999;
        bytes[at] ^= 0xA5;
        write_bytes(bad, bytes, len);
        bytes[at] ^= 0xA5;
        err[0] = '\0';
        ckpt_info info;
        int rc = ckpt_load(bad, q, &info, err, sizeof err);
        if (rc == CKPT_OK) {
            /* a load that succeeds returns exactly what was saved */
            assert_same(p, q);
            if (info.step != m.step || info.rng.seed != m.rng.seed || info.rng.counter != m.rng.counter ||
                info.schema_version != m.schema_version || strcmp(info.config_yaml, YAML) != 0 ||
                info.n_hparams != 4 || strcmp(info.hparams[2].s, "lstm") != 0 || info.hparams[1].r != 3e-4)
                fail_msg("flip at %zu: metadata silently changed (yaml \"%s\")", at, info.config_yaml);
            ckpt_info_free(&info);
            harmless++;
        } else {
            assert_true(strlen(err) > 20);
            detected++;
        }
    }
    print_message("  byte flips at 1000 offsets of %zu bytes: %d reported, %d in bytes never read\n", len,
                  detected, harmless);
    assert_true(detected > 100);
    free(bytes);
    nn_params_free(p);
    nn_params_free(q);
}

/* ---- SIGKILL in the middle of saves ---- */

typedef struct {
    volatile int in_save;
    volatile int saves;
} shared_t;

/* Every tensor of a save with step s holds s, m holds s + 0.5, v s + 0.25:
 * a file mixing two saves would show two values. */
static void fill_step(nn_params *p, int64_t s)
{
    for (size_t e = 0; e < p->total; e++) {
        p->params[e] = (float)s;
        p->m[e] = (float)s + 0.5f;
        p->v[e] = (float)s + 0.25f;
    }
}

static int count_temps(const char *base)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    int c = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) c += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return c;
}

static void test_kill_during_save(void **state)
{
    (void)state;
    /* 3 x 512K floats: 6 MB of weights per save, 18 MB with the moments */
    nn_tensor_spec t[3];
    t[0] = nn_spec("a", "w", NN_INIT_ZEROS, 0, 0, 512, 1024, 0, 0);
    t[1] = nn_spec("b", "w", NN_INIT_ZEROS, 0, 0, 1024, 512, 0, 0);
    t[2] = nn_spec("c", "w", NN_INIT_ZEROS, 0, 0, 512 * 1024, 0, 0, 0);
    char err[1024];
    nn_params *p = nn_params_create(t, 3, err, sizeof err);
    assert_non_null(p);
    const char *path = tmp_path("kill.h5");
    ckpt_meta m = {.step = 1, .schema_version = 1, .config_yaml = "k: 1\n"};
    fill_step(p, 1);
    double t0 = clock_now_s();
    assert_int_equal(ckpt_save(path, p, &m, err, sizeof err), CKPT_OK);
    double save_ms = (clock_now_s() - t0) * 1e3;
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    int64_t last_good = 1, mid = 0;
    int strays = 0;
    const int rounds = 12;
    for (int k = 0; k < rounds; k++) {
        sh->in_save = 0;
        sh->saves = 0;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* child: save forever with increasing steps */
            for (int64_t s = 100 * (k + 1);; s++) {
                fill_step(p, s);
                m.step = s;
                sh->in_save = 1;
                ckpt_save(path, p, &m, err, sizeof err);
                sh->in_save = 0;
                sh->saves++;
            }
        }
        /* kill at a moment spread over the first ~3 saves */
        useconds_t delay = (useconds_t)(1000.0 * save_ms * (0.2 + 2.8 * k / (rounds - 1)));
        usleep(delay);
        mid += sh->in_save;
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        assert_true(WIFSIGNALED(st));
        nn_params *q = nn_params_create(t, 3, err, sizeof err);
        ckpt_info info;
        int rc = ckpt_load(path, q, &info, err, sizeof err);
        if (rc) fail_msg("round %d: the checkpoint is not loadable after SIGKILL: %s", k, err);
        /* either the previous good one or a complete newer save */
        assert_true(info.step == last_good || info.step >= 100 * (k + 1));
        for (size_t e = 0; e < q->total; e++) {
            if (q->params[e] != (float)info.step || q->m[e] != (float)info.step + 0.5f ||
                q->v[e] != (float)info.step + 0.25f)
                fail_msg("round %d: element %zu mixes saves (step %lld)", k, e, (long long)info.step);
        }
        print_message("  round %2d: killed after %6.1f ms (%d complete saves, %s), loaded step %lld\n", k,
                      delay / 1000.0, sh->saves, sh->in_save ? "mid-save" : "between saves",
                      (long long)info.step);
        last_good = info.step;
        /* (each child's first save removes the temp files of the children
         * killed before it, so at most a few are ever present) */
        strays += count_temps("kill.h5");
        ckpt_info_free(&info);
        nn_params_free(q);
    }
    print_message(
        "  one save takes %.0f ms; %lld of %d kills hit a save in progress; %d stray temp files seen\n",
        save_ms, (long long)mid, rounds, strays);
    assert_true(mid >= rounds / 2);
    assert_true(strays >= 1); /* the kills did leave temp files... */
    /* ...which break nothing: the next save succeeds and removes those of
     * dead processes, but not the temp file of a live one (a concurrent
     * save): plant one of each */
    pid_t live = fork();
    if (live == 0) {
        pause();
        _exit(0);
    }
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char planted[1200];
    snprintf(planted, sizeof planted, "%s/.kill.h5.tmp.%ld.AbCdEf", dir, (long)dead);
    write_bytes(planted, "junk", 4);
    snprintf(planted, sizeof planted, "%s/.kill.h5.tmp.%ld.AbCdEf", dir, (long)live);
    write_bytes(planted, "junk", 4);
    int before = count_temps("kill.h5");
    fill_step(p, 7);
    m.step = 7;
    assert_int_equal(ckpt_save(path, p, &m, err, sizeof err), CKPT_OK);
    print_message("  temp files before the next save: %d, after: %d (the live process's)\n", before,
                  count_temps("kill.h5"));
    assert_int_equal(count_temps("kill.h5"), 1);
    assert_int_equal(access(planted, F_OK), 0);
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    unlink(planted);
    ckpt_info info;
    assert_int_equal(ckpt_load(path, p, &info, err, sizeof err), CKPT_OK);
    assert_true(info.step == 7 && p->v[p->total - 1] == 7.25f);
    ckpt_info_free(&info);
    munmap(sh, sizeof *sh);
    unlink(path);
    nn_params_free(p);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TMP");
    snprintf(dir, sizeof dir, "%s/nets_ckpt", tmp ? tmp : "/tmp");
    mkdir(tmp ? tmp : "/tmp", 0777);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_h5py_layout),
        cmocka_unit_test(test_resume_exact), cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_corrupt),      cmocka_unit_test(test_kill_during_save),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
