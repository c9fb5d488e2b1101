/* test_faults_train.c -- `strata train` when its folder is full or taken.
 *
 * A small search-mode run (`strata train --search tiny.yaml --steps 3`)
 * makes OUT/last.h5 and OUT/best.h5 (about 3 MB each). Then:
 *
 *   no space  the run is resumed in a child whose file size limit
 *             (RLIMIT_FSIZE, SIGXFSZ ignored, as a full disk answers
 *             EFBIG/ENOSPC) is 64 KiB: every checkpoint save fails. The
 *             program must say so (the file, "File too large", the
 *             previous checkpoint untouched) and exit with status 1, not
 *             die of a signal (HDF5 1.10 used to segfault in its exit
 *             handler, closing again the file whose close had failed);
 *             last.h5 and best.h5 must be byte for byte the ones before,
 *             and load as policies.
 *   taken     a new run (no --resume) into a folder holding an earlier
 *             run's last.h5, best.h5 or metrics.csv is refused (status 2,
 *             a message naming the file and --overwrite), the files kept
 *             byte for byte; --overwrite replaces them; --resume goes on.
 */
#include <setjmp.h>
#include <signal.h>
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
#include "tests/harness.h"
#include "tests/shell.h"

static const char *TINY_YAML =
    "cluster:\n"
    "  types:\n"
    "    - {name: gpu, kind: gpu, flops: 1TFLOPS, io_bw: 1GB/s, net_bw: 8Gbit/s, mem: 10GB, "
    "price: 3.6, count: 8}\n"
    "job:\n"
    "  name: tiny\n  batch: 10\n  samples: 3.6e6\n  min_throughput: 100\n  alpha: 0\n"
    "  layers:\n"
    "    - {name: a, flops: 1GFLOP, io: 0, act: 0, params: 1MB, mem: 1MB}\n"
    "    - {name: b, flops: 1GFLOP, io: 0, act: 0, params: 0, mem: 1MB}\n";

static char dir[1024], yaml[1100], out[1100], bin[1024];

static int setup(void **state) {
    (void)state;
    const char *t = getenv("STRATA_TMP"), *b = getenv("STRATA_BIN");
    if (!t || !b) return -1;
    snprintf(bin, sizeof bin, "%s", b);
    snprintf(dir, sizeof dir, "%s/faults-train-%d", t, (int)getpid());
    if (sh_run("rm -rf '%s' && mkdir -p '%s'", dir, dir)) return -1;
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    FILE *f = fopen(yaml, "w");
    if (!f) return -1;
    fputs(TINY_YAML, f);
    fclose(f);
    return sh_run("'%s' train --search '%s' --steps 3 --seed 1 --out '%s' --quiet >/dev/null 2>&1", bin, yaml,
                  out);
}

static int teardown(void **state) {
    (void)state;
    sh_run("rm -rf '%s'", dir);
    return 0;
}

/* Runs argv (NULL-terminated, argv[0] the program) with the file size
 * limit `fsize` (0: none) and SIGXFSZ ignored, stdout to /dev/null and
 * stderr to errpath; returns the wait status. */
static int run_limited(const char *const *argv, rlim_t fsize, const char *errpath) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (fsize) {
            struct rlimit rl = {fsize, fsize};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl)) _exit(126);
        }
        if (!freopen("/dev/null", "w", stdout) || !freopen(errpath, "w", stderr)) _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void test_no_space_for_checkpoints(void **state) {
    (void)state;
    char last[1200], best[1200], errpath[1200], err[2048];
    snprintf(last, sizeof last, "%s/last.h5", out);
    snprintf(best, sizeof best, "%s/best.h5", out);
    snprintf(errpath, sizeof errpath, "%s/nospace.err", dir);
    size_t nl0, nb0, nl1, nb1, ne;
    char *l0 = harness_slurp(last, &nl0), *b0 = harness_slurp(best, &nb0);
    assert_non_null(l0);
    assert_non_null(b0);
    assert_true(nl0 > 65536); /* the limit below does stop a save */
    const char *argv[] = {bin, "train", "--search", yaml, "--steps", "6", "--seed", "1", "--resume", last,
                          "--out", out, "--quiet", NULL};
    int st = run_limited(argv, 65536, errpath);
    char *e = harness_slurp(errpath, &ne);
    assert_non_null(e);
    print_message("  stderr: %s", e ? e : "(unreadable)");
    if (WIFSIGNALED(st)) fail_msg("strata train died of signal %d after a failed save", WTERMSIG(st));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_non_null(strstr(e, "last.h5"));
    assert_non_null(strstr(e, "File too large"));
    assert_non_null(strstr(e, "previous checkpoint is untouched"));
    /* the checkpoints of before, untouched and loadable */
    char *l1 = harness_slurp(last, &nl1), *b1 = harness_slurp(best, &nb1);
    assert_non_null(l1);
    assert_non_null(b1);
    assert_true(nl1 == nl0 && memcmp(l0, l1, nl0) == 0);
    assert_true(nb1 == nb0 && memcmp(b0, b1, nb0) == 0);
    for (int k = 0; k < 2; k++) {
        agent_policy *p = agent_policy_load(k ? best : last, err, sizeof err);
        if (!p) fail_msg("%s", err);
        assert_int_equal(agent_policy_step(p), 3);
        agent_policy_free(p);
    }
    /* no temporary file of the failed saves is left */
    assert_int_equal(sh_run("ls -a '%s' | grep -q '\\.tmp\\.'", out), 1);
    free(l0);
    free(b0);
    free(l1);
    free(b1);
    free(e);
}

/* The step of FOLDER/last.h5, loaded as a policy. */
static long long step_of(const char *folder) {
    char path[1300], err[2048];
    snprintf(path, sizeof path, "%s/last.h5", folder);
    agent_policy *p = agent_policy_load(path, err, sizeof err);
    if (!p) fail_msg("%s", err);
    long long s = agent_policy_step(p);
    agent_policy_free(p);
    return s;
}

static void test_earlier_run_is_kept(void **state) {
    (void)state;
    char taken[1200], errpath[1200], last[1300], csv[1300];
    snprintf(taken, sizeof taken, "%s/taken", dir);
    snprintf(errpath, sizeof errpath, "%s/taken.err", dir);
    snprintf(last, sizeof last, "%s/last.h5", taken);
    snprintf(csv, sizeof csv, "%s/metrics.csv", taken);
    assert_int_equal(sh_run("rm -rf '%s' && cp -r '%s' '%s'", taken, out, taken), 0);
    size_t n0, n1, ne;
    char *l0 = harness_slurp(last, &n0);
    assert_non_null(l0);
    /* a new run over it: refused, nothing replaced */
    const char *fresh[] = {bin, "train", "--search", yaml, "--steps", "2", "--seed", "2", "--out", taken, "--quiet",
                           NULL};
    int st = run_limited(fresh, 0, errpath);
    char *e = harness_slurp(errpath, &ne);
    assert_non_null(e);
    print_message("  stderr: %s", e ? e : "(unreadable)");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    assert_non_null(strstr(e, last));
    assert_non_null(strstr(e, "--overwrite"));
    free(e);
    char *l1 = harness_slurp(last, &n1);
    assert_true(l1 && n1 == n0 && memcmp(l0, l1, n0) == 0);
    free(l1);
    assert_int_equal(step_of(taken), 3);
    /* only metrics.csv left: still refused, naming it */
    assert_int_equal(sh_run("rm -f '%s/last.h5' '%s/best.h5'", taken, taken), 0);
    st = run_limited(fresh, 0, errpath);
    e = harness_slurp(errpath, &ne);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_non_null(strstr(e, csv));
    free(e);
    /* --overwrite: a new run, from step 0 */
    const char *over[] = {bin, "train", "--search", yaml, "--steps", "2", "--seed", "2", "--out", taken, "--quiet",
                          "--overwrite", NULL};
    st = run_limited(over, 0, errpath);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(step_of(taken), 2);
    /* --resume continues it in the same folder */
    const char *resume[] = {bin, "train", "--search", yaml, "--steps", "4", "--seed", "2", "--resume", last,
                            "--out", taken, "--quiet", NULL};
    st = run_limited(resume, 0, errpath);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(step_of(taken), 4);
    free(l0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_space_for_checkpoints),
        cmocka_unit_test(test_earlier_run_is_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
