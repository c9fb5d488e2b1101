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
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
