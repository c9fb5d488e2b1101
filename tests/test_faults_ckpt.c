/* test_faults_ckpt.c -- policy checkpoints that are well-formed HDF5 but
 * absurd inside are refused on load, naming what is wrong.
 *
 * From a real policy of the smallest network (embed 8, about 90 KB),
 * trained by `strata train` in setup, tests/ckpt_forge.h makes:
 *
 *   bad_clip_1e300.h5    clip = 1e300: finite, but logits become inf and
 *                        sampling used to hand back -1 as a type index
 *   bad_nan_weight.h5    one weight NaN (loaded silently, changing plans)
 *   bad_huge_dims.h5     every size 4096 and every tensor declared at that
 *                        shape, data never written: the loader used to
 *                        allocate about 6.3 GB for this small file
 *
 * Each must be refused by agent_policy_load with a message naming the
 * field (the hyperparameter; the tensor and index; the dataset). The huge
 * one is loaded under a 1 GiB address-space limit so that an allocation
 * of its declared size cannot pass. With STRATA_CORPUS_OUT=DIR set, the
 * files are also written to DIR: that is how fuzz/corpus/ckpt/bad_*.h5
 * were made (STRATA_CORPUS_OUT=fuzz/corpus/ckpt build/test_faults_ckpt).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/ckptio.h"
#include "agent/policy.h"
#include "tests/ckpt_forge.h"
#include "tests/shell.h"

static char dir[1024], tiny[1200];

static const char *TINY_YAML =
    "cluster:\n"
    "  types:\n"
    "    - {name: gpu, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, net_bw: 8Gbit/s, mem: 10GB, "
    "price: 3.6, count: 8}\n"
    "    - {name: cpu, kind: cpu, flops: 0.2TFLOPS, io_bw: 1GB/s, net_bw: 8Gbit/s, mem: 64GB, "
    "price: 0.5, count: 8}\n"
    "job:\n"
    "  name: tiny\n  batch: 10\n  samples: 3.6e6\n  min_throughput: 100\n  alpha: 0\n"
    "  layers:\n"
    "    - {name: a, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"
    "    - {name: b, flops: 1GFLOP, io: 0, act: 0, params: 0, mem: 1MB}\n";

static int setup(void **state) {
    (void)state;
    const char *t = getenv("STRATA_TMP"), *b = getenv("STRATA_BIN");
    if (!t || !b) return -1;
    snprintf(dir, sizeof dir, "%s/faults-ckpt-%d", t, (int)getpid());
    if (sh_run("rm -rf '%s' && mkdir -p '%s'", dir, dir)) return -1;
    char p[1300];
    snprintf(p, sizeof p, "%s/tiny.yaml", dir);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs(TINY_YAML, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/train.yaml", dir);
    f = fopen(p, "w");
    if (!f) return -1;
    fprintf(f, "mode: search\nproblem: tiny.yaml\nseed: 1\nsteps: 2\nsamples: 4\nthreads: 1\n"
               "embed: 8\nhidden: 8\ndecoder: 8\nscorer: 8\nout: run\n");
    fclose(f);
    snprintf(tiny, sizeof tiny, "%s/run/last.h5", dir);
    return sh_run("'%s' train '%s' --quiet > /dev/null", b, p);
}

static int teardown(void **state) {
    (void)state;
    sh_run("rm -rf '%s'", dir);
    return 0;
}

/* Copies the tiny policy to dir/name and returns the copy's path (static). */
static const char *copy_tiny(const char *name) {
    static char p[1300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(sh_run("cp '%s' '%s'", tiny, p), 0);
    return p;
}

/* Loads path as a policy, expects a refusal whose message holds each of
 * the NULL-terminated strings; also copies the file to $STRATA_CORPUS_OUT. */
static void expect_refused(const char *path, ...) {
    char err[2048] = "";
    agent_policy *p = agent_policy_load(path, err, sizeof err);
    if (p) {
        agent_policy_free(p);
        fail_msg("%s loaded; it must be refused", path);
    }
    print_message("  %s\n", err);
    va_list ap;
    va_start(ap, path);
    for (const char *w; (w = va_arg(ap, const char *)) != NULL;)
        if (!strstr(err, w)) fail_msg("the message lacks '%s': %s", w, err);
    va_end(ap);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size < 100 * 1024);
    const char *out = getenv("STRATA_CORPUS_OUT");
    if (out && *out) assert_int_equal(sh_run("cp '%s' '%s/'", path, out), 0);
}

static void test_good_loads(void **state) {
    (void)state;
    char err[2048];
    agent_policy *p = agent_policy_load(tiny, err, sizeof err);
    if (!p) fail_msg("%s", err);
    agent_policy_free(p);
}

static void test_absurd_clip(void **state) {
    (void)state;
    const char *p = copy_tiny("bad_clip_1e300.h5");
    assert_int_equal(forge_set_real(p, "clip", 1e300), 0);
    expect_refused(p, "hyperparameter clip", "1.0000000000000001e+300", "outside [0.001, 1000]", NULL);
    /* every ranged hyperparameter is checked, not only clip */
    p = copy_tiny("bad_base.h5");
    assert_int_equal(forge_set_real(p, "base_type", NAN), 0);
    expect_refused(p, "hyperparameter base_type", NULL);
}

static void test_nan_weight(void **state) {
    (void)state;
    agent_net_dims d;
    agent_net_dims_default(&d);
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table(&d, t);
    char dset[300], want[400];
    snprintf(dset, sizeof dset, "/%s/%s", t[1].layer, t[1].name);
    const char *p = copy_tiny("bad_nan_weight.h5");
    assert_int_equal(forge_poke(p, dset, 3, NAN), 0);
    snprintf(want, sizeof want, "tensor %s holds a non-finite value (nan) at index 3", dset);
    expect_refused(p, want, NULL);
    p = copy_tiny("bad_inf_moment.h5");
    snprintf(dset, sizeof dset, "/meta/optimizer/v/%s/%s", t[0].layer, t[0].name);
    assert_int_equal(forge_poke(p, dset, 0, INFINITY), 0);
    snprintf(want, sizeof want, "tensor %s holds a non-finite value (inf) at index 0", dset);
    expect_refused(p, want, NULL);
}

/* Sets /meta's schema_version of path to v (replaced, as forge_attr does). */
static int set_schema(const char *path, int64_t v) {
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t g = H5Gopen2(f, "/meta", H5P_DEFAULT), sp = H5Screate(H5S_SCALAR), a = -1;
    if (g >= 0 && sp >= 0 && H5Adelete(g, "schema_version") >= 0)
        a = H5Acreate2(g, "schema_version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (g >= 0) H5Gclose(g);
    H5Fclose(f);
    return rc;
}

/* write_older writes a policy of dims d whose rows read ft type and fn node
 * features (an older schema's widths) to path, weights from seed, at the
 * given step; returns its parameters (the caller frees them). */
static nn_params *write_older(const char *path, const agent_net_dims *d, int ft, int fn, uint64_t seed,
                              int64_t step) {
    nn_tensor_spec t[AN_N_TENSORS];
    char err[2048];
    agent_net_table_feats(d, ft, fn, t);
    nn_params *old = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    assert_non_null(old);
    nn_params_init(old, seed);
    agent_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = step;
    st.mode = 1;
    st.placement = -1;
    st.best_valid = st.best_cost = 1.0;
    if (agent_ckpt_write(path, old, d, &st, err, sizeof err)) fail_msg("%s", err);
    return old;
}

/* read_grown reads path into a network of this build's widths (dims d),
 * checking the step; returns it with the state's feature widths in *ft and
 * *fn. */
static nn_params *read_grown(const char *path, const agent_net_dims *d, int64_t step, int *ft, int *fn) {
    nn_tensor_spec t[AN_N_TENSORS];
    char err[2048];
    agent_net_table(d, t);
    nn_params *p = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    assert_non_null(p);
    agent_ckpt_state rs;
    if (agent_ckpt_read(path, p, d, &rs, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rs.step, step);
    *ft = rs.type_feats;
    *fn = rs.node_feats;
    agent_ckpt_state_clear(&rs);
    return p;
}

/* A policy of feature schema 1 (node rows of 16 features, before the two
 * zone features) loads, grown with zero weights on the features it lacks:
 * every other weight as in the file, and the node head's probabilities
 * the old network's whatever the new features hold. A file that says
 * schema 1 but holds 18-feature rows, or a schema this build does not
 * know, is refused naming the file. */
static void test_schema1_migrates(void **state) {
    (void)state;
    agent_net_dims d = {8, 8, 8, 8, 10.0f};
    char path[1300];
    int ft, fn;
    snprintf(path, sizeof path, "%s/schema1.h5", dir);
    nn_params *old = write_older(path, &d, AGENT_FT, AGENT_FN_SCHEMA1, 3, 7);
    assert_int_equal(set_schema(path, 1), 0);
    nn_params *p = read_grown(path, &d, 7, &ft, &fn);
    assert_int_equal(fn, AGENT_FN_SCHEMA1);
    for (int i = 0; i < AN_N_TENSORS; i++) {
        if (i == AN_NROW_W) continue;
        assert_memory_equal(nn_param(p, i), nn_param(old, i), p->size[i] * sizeof(float));
    }
    const float *w = nn_param(p, AN_NROW_W), *w0 = nn_param(old, AN_NROW_W);
    for (int r = 0; r < d.scorer; r++)
        for (int c = 0; c < AGENT_FN; c++)
            assert_true(w[r * AGENT_FN + c] == (c < AGENT_FN_SCHEMA1 ? w0[r * AGENT_FN_SCHEMA1 + c] : 0.0f));
    /* the node head's probabilities do not depend on the new features */
    enum { B = 2, K = 3 };
    float glob[B * AGENT_FG], r0[B * K * AGENT_FN], r1[B * K * AGENT_FN], q0[B * K], q1[B * K];
    uint8_t mask[B * K] = {1, 1, 1, 1, 0, 1};
    for (int i = 0; i < B * AGENT_FG; i++) glob[i] = (float)((i * 7) % 5) * 0.3f - 0.5f;
    for (int k = 0; k < B * K; k++)
        for (int c = 0; c < AGENT_FN; c++) {
            float v = (float)((k * 13 + c * 5) % 11) * 0.2f - 1.0f;
            r0[k * AGENT_FN + c] = c < AGENT_FN_SCHEMA1 ? v : 0.0f;
            r1[k * AGENT_FN + c] = c < AGENT_FN_SCHEMA1 ? v : 3.0f + (float)k;
        }
    agent_net_ws *ws = agent_net_ws_create(&d);
    assert_int_equal(agent_net_node_step(ws, p, glob, r0, mask, B, K, q0), 0);
    assert_int_equal(agent_net_node_step(ws, p, glob, r1, mask, B, K, q1), 0);
    for (int i = 0; i < B * K; i++) assert_true(q0[i] == q1[i]);
    agent_net_ws_free(ws);
    nn_params_free(p);
    /* schema 1 with 18-feature rows: refused at the sizes check */
    snprintf(path, sizeof path, "%s/schema1_wide.h5", dir);
    nn_params *now = write_older(path, &d, AGENT_FT, AGENT_FN, 4, 7);
    assert_int_equal(set_schema(path, 1), 0);
    expect_refused(path, "schema1_wide.h5", "node_row", NULL);
    snprintf(path, sizeof path, "%s/schema9.h5", dir);
    nn_params_free(write_older(path, &d, AGENT_FT, AGENT_FN, 4, 7));
    assert_int_equal(set_schema(path, 9), 0);
    expect_refused(path, "schema9.h5", "feature schema 9", NULL);
    nn_params_free(now);
    nn_params_free(old);
}

/* migrate_type writes a policy whose type rows read ft features (an older
 * look-ahead version's width) and says look-ahead version v, reads it into
 * this build's network and checks that it is grown with zero weights on
 * the features it lacks -- in the type scorer's rows and in the decoder's
 * input of the previous choice -- every other weight as in the file, and
 * that the type head's probabilities do not depend on those features. */
static void migrate_type(const char *name, int ft, int64_t v) {
    agent_net_dims d = {8, 8, 8, 8, 10.0f};
    char path[1300];
    int rft, rfn;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    nn_params *old = write_older(path, &d, ft, AGENT_FN, 5, 9);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_int_equal(forge_attr(f, "agent_features", H5T_STD_I64LE, H5T_NATIVE_INT64, &v), 0);
    H5Fclose(f);
    nn_params *p = read_grown(path, &d, 9, &rft, &rfn);
    assert_int_equal(rft, ft);
    assert_int_equal(rfn, AGENT_FN);
    for (int i = 0; i < AN_N_TENSORS; i++) {
        if (i == AN_TROW_W || i == AN_DEC_WIH) continue;
        assert_memory_equal(nn_param(p, i), nn_param(old, i), p->size[i] * sizeof(float));
    }
    const float *w = nn_param(p, AN_TROW_W), *w0 = nn_param(old, AN_TROW_W);
    for (int r = 0; r < d.scorer; r++)
        for (int c = 0; c < AGENT_FT; c++)
            assert_true(w[r * AGENT_FT + c] == (c < ft ? w0[r * ft + c] : 0.0f));
    int din = 2 * d.hidden + AGENT_FG + AGENT_FT, din0 = din - AGENT_FT + ft, pc = din - AGENT_FT;
    w = nn_param(p, AN_DEC_WIH);
    w0 = nn_param(old, AN_DEC_WIH);
    for (int r = 0; r < 4 * d.decoder; r++)
        for (int c = 0; c < din; c++)
            assert_true(w[r * din + c] == (c < pc + ft ? w0[r * din0 + c] : 0.0f));
    /* the type head's probabilities do not depend on the new features */
    enum { B = 2, K = 3 };
    float lf[2 * AGENT_FL], glob[B * AGENT_FG], r0[B * K * AGENT_FT], r1[B * K * AGENT_FT];
    float p0[B * AGENT_FT], p1[B * AGENT_FT], q0[B * K], q1[B * K];
    uint8_t mask[B * K] = {1, 1, 1, 1, 0, 1}, act[B] = {1, 1};
    int len[1] = {2}, inst[B] = {0, 0};
    for (int i = 0; i < 2 * AGENT_FL; i++) lf[i] = (float)((i * 3) % 7) * 0.2f - 0.6f;
    for (int i = 0; i < B * AGENT_FG; i++) glob[i] = (float)((i * 7) % 5) * 0.3f - 0.5f;
    for (int k = 0; k < B * K; k++)
        for (int c = 0; c < AGENT_FT; c++) {
            float x = (float)((k * 13 + c * 5) % 11) * 0.2f - 1.0f;
            r0[k * AGENT_FT + c] = c < ft ? x : 0.0f;
            r1[k * AGENT_FT + c] = c < ft ? x : 2.0f + (float)k;
        }
    for (int b = 0; b < B; b++)
        for (int c = 0; c < AGENT_FT; c++) {
            float x = (float)((b * 5 + c * 3) % 7) * 0.25f - 0.7f;
            p0[b * AGENT_FT + c] = c < ft ? x : 0.0f;
            p1[b * AGENT_FT + c] = c < ft ? x : -1.5f;
        }
    agent_net_ws *ws = agent_net_ws_create(&d);
    assert_int_equal(agent_net_encode(ws, p, lf, len, 2, 1, inst, B), 0);
    assert_int_equal(agent_net_type_step(ws, p, 1, glob, r0, p0, mask, act, K, q0), 0);
    assert_int_equal(agent_net_encode(ws, p, lf, len, 2, 1, inst, B), 0);
    assert_int_equal(agent_net_type_step(ws, p, 1, glob, r1, p1, mask, act, K, q1), 0);
    for (int i = 0; i < B * K; i++) assert_true(q0[i] == q1[i]);
    assert_true(q0[0] > 0 && q0[0] < 1);
    agent_net_ws_free(ws);
    nn_params_free(p);
    nn_params_free(old);
}

/* Policies of look-ahead features version 2 (type rows of 4 look-ahead
 * features, before the completions by stages) and versions 3 and 4 (7,
 * before the completions that fit the counts) load, grown with zero
 * weights on the features they lack, and play the old policy whatever
 * those features hold. A version-4 file with this build's wider rows, and
 * a version this build does not know, are refused naming the file. */
static void test_features2_migrate(void **state) {
    (void)state;
    migrate_type("features2.h5", AGENT_FT_V2, 2);
    migrate_type("features3.h5", AGENT_FT_V4, 3);
    migrate_type("features4.h5", AGENT_FT_V4, 4);
    agent_net_dims d = {8, 8, 8, 8, 10.0f};
    char path[1300];
    snprintf(path, sizeof path, "%s/features4_wide.h5", dir);
    nn_params *now = write_older(path, &d, AGENT_FT, AGENT_FN, 5, 9);
    int64_t v = 4;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_int_equal(forge_attr(f, "agent_features", H5T_STD_I64LE, H5T_NATIVE_INT64, &v), 0);
    H5Fclose(f);
    expect_refused(path, "features4_wide.h5", "/decoder/w_ih", NULL);
    v = AGENT_FEATURES_VERSION + 1; /* the next version, not known yet */
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_int_equal(forge_attr(f, "agent_features", H5T_STD_I64LE, H5T_NATIVE_INT64, &v), 0);
    H5Fclose(f);
    char want[64];
    snprintf(want, sizeof want, "look-ahead features version %d", AGENT_FEATURES_VERSION + 1);
    expect_refused(path, "features4_wide.h5", want, NULL);
    nn_params_free(now);
}

static void test_huge_dims(void **state) {
    (void)state;
    const char *p = copy_tiny("bad_huge_dims.h5");
    assert_int_equal(forge_huge_dims(p), 0);
    /* in a child under a 1 GiB address-space limit: the refusal must come
     * before any allocation of the declared sizes */
    char errpath[1300];
    snprintf(errpath, sizeof errpath, "%s/huge.err", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory needs terabytes of address space */
        struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
        setrlimit(RLIMIT_AS, &rl);
#endif
        char err[2048] = "";
        agent_policy *pol = agent_policy_load(p, err, sizeof err);
        FILE *f = fopen(errpath, "w");
        if (f) {
            fputs(err, f);
            fclose(f);
        }
        _exit(pol ? 3 : 0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char err[2048] = "";
    FILE *f = fopen(errpath, "r");
    assert_non_null(f);
    size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = '\0';
    fclose(f);
    print_message("  %s\n", err);
    assert_non_null(strstr(err, "declares shape"));
    assert_non_null(strstr(err, "holds 0 bytes"));
    assert_non_null(strstr(err, "dataset /"));
    expect_refused(p, "declares shape", NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_loads),
        cmocka_unit_test(test_absurd_clip),
        cmocka_unit_test(test_nan_weight),
        cmocka_unit_test(test_huge_dims),
        cmocka_unit_test(test_schema1_migrates),
        cmocka_unit_test(test_features2_migrate),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
