/* test_faults_reload.c -- the daemon keeps serving through bad policy files.
 *
 * A small policy is trained by the real program (`strata train --search
 * FILE --steps 3`, a fraction of a second); the daemon serves it from a
 * file the test controls. The file is then replaced, one after the other,
 * by broken versions and SIGHUP is sent after each:
 *
 *   truncated  the first half of the checkpoint
 *   corrupt    the checkpoint with 64 bytes in its middle overwritten
 *   empty      zero bytes
 *   old-format the file the fuzzer found that crashed HDF5 (superblock
 *              version 0, a local heap claiming 123 TB)
 *   missing    no file at all
 *   directory  a folder in its place
 *   clip       the checkpoint with clip = 1e300 (finite, absurd: it used to
 *              load, and sampling then read a type index of -1)
 *   nan        the checkpoint with one NaN weight (it used to load)
 *   huge       the checkpoint with every size 4096 and tensors declared at
 *              those shapes, never written (it used to cost ~6 GB)
 *
 * After each one: the reload is counted as failed in /metrics
 * (strata_policy_loads_total{result="error"} grows by one), /readyz still
 * reports the first policy (same hash, generation 1), /v1/place with the
 * policy answers 200, and the log says that the reload failed and the old
 * policy keeps serving. Finally the good file comes back and loads
 * (generation 2).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/ckpt_forge.h"
#include "tests/serve_client.h"

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

static const char *BODY =
    "{\"cluster\": {\"types\": [{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": \"1TFLOPS\","
    " \"io_bw\": \"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", \"price\": 3.6,"
    " \"count\": 8}]}, \"job\": {\"name\": \"tiny\", \"batch\": 10, \"samples\": 3.6e6,"
    " \"min_throughput\": 100, \"alpha\": 0, \"layers\": [{\"name\": \"a\", \"flops\": "
    "\"1GFLOP\", \"io\": 0, \"act\": 0, \"params\": \"1MB\", \"mem\": \"1MB\"}, {\"name\": \"b\","
    " \"flops\": \"1GFLOP\", \"io\": 0, \"act\": 0, \"params\": 0, \"mem\": \"1MB\"}]}}";

static char dir[1024], good[1100], live[1100];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/faults-reload-%d", sv_tmp(), (int)getpid());
    if (sh_run("rm -rf '%s' && mkdir -p '%s'", dir, dir)) return -1;
    char yaml[1100], out[1100];
    snprintf(yaml, sizeof yaml, "%s/tiny.yaml", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    if (sv_write_file(yaml, TINY_YAML) || sv_train_search(yaml, 3, 1, out)) return -1;
    snprintf(good, sizeof good, "%s/run/last.h5", dir);
    snprintf(live, sizeof live, "%s/live.h5", dir);
    return sh_run("cp '%s' '%s'", good, live);
}

static int teardown(void **state) {
    (void)state;
    sh_run("rm -rf '%s'", dir);
    return 0;
}

/* The policy /readyz reports: hash into buf, returns the generation. */
static long long ready_policy(int port, char *hash, size_t len) {
    sv_resp r;
    assert_int_equal(sv_http(port, "GET", "/readyz", NULL, NULL, 0, &r), 200);
    json_t *o = sv_body_json(&r);
    json_t *pol = json_object_get(o, "policy");
    snprintf(hash, len, "%s", json_string_value(json_object_get(pol, "hash")));
    long long g = json_integer_value(json_object_get(pol, "generation"));
    json_decref(o);
    sv_resp_free(&r);
    return g;
}

static void place_ok(int port, const char *what) {
    sv_resp r;
    int st = sv_http(port, "POST", "/v1/place", NULL, BODY, strlen(BODY), &r);
    if (st != 200 || !strstr(r.body, "\"plan_from\":\"policy\""))
        fail_msg("after the %s reload: /v1/place gave %d: %.300s", what, st, r.body);
    sv_resp_free(&r);
}

static void test_bad_reloads(void **state) {
    (void)state;
    const char *args[] = {"--policy", live, "--threads", "2", NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "faults-reload", args), 0);
    char hash0[128], hash[128];
    assert_int_equal(ready_policy(p.port, hash0, sizeof hash0), 1);
    place_ok(p.port, "first");
    struct stat st;
    assert_int_equal(stat(good, &st), 0);
    long half = (long)st.st_size / 2;
    static const struct {
        const char *what, *cmd;
    } bad[] = {
        {"truncated", "head -c %2$ld '%1$s' > '%3$s.new' && mv '%3$s.new' '%3$s'"},
        {"corrupt", "cp '%1$s' '%3$s.new' && dd if=/dev/urandom of='%3$s.new' bs=1 count=64 "
                    "seek=%2$ld conv=notrunc 2>/dev/null && mv '%3$s.new' '%3$s'"},
        {"empty", ": > '%3$s.new' && mv '%3$s.new' '%3$s'"},
        {"old-format", "cp \"$STRATA_SRC/tests/data/faults/ckpt_v0_heap_segv.h5\" '%3$s.new' && "
                       "mv '%3$s.new' '%3$s'"},
        {"missing", "rm -f '%3$s'"},
        {"directory", "mkdir '%3$s'"},
    };
    int n = (int)(sizeof bad / sizeof *bad);
    for (int i = 0; i < n; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, bad[i].cmd, good, half, live);
        assert_int_equal(sh_run("%s", cmd), 0);
        kill(p.pid, SIGHUP);
        if (!sv_wait_series(p.port, "strata_policy_loads_total{result=\"error\"}", i + 1))
            fail_msg("the %s reload was not counted as failed", bad[i].what);
        assert_int_equal(ready_policy(p.port, hash, sizeof hash), 1);
        assert_string_equal(hash, hash0);
        place_ok(p.port, bad[i].what);
    }
    /* Well-formed files whose contents are absurd (tests/ckpt_forge.h). */
    static const char *const forged[] = {"clip", "nan", "huge"};
    int nf = (int)(sizeof forged / sizeof *forged);
    for (int i = 0; i < nf; i++) {
        char tmp[1200];
        snprintf(tmp, sizeof tmp, "%s.new", live);
        assert_int_equal(sh_run("rm -rf '%s' && cp '%s' '%s'", live, good, tmp), 0);
        int rc = i == 0 ? forge_set_real(tmp, "clip", 1e300)
                 : i == 1 ? forge_poke(tmp, "/embed/b", 3, NAN)
                          : forge_huge_dims(tmp);
        assert_int_equal(rc, 0);
        assert_int_equal(rename(tmp, live), 0);
        kill(p.pid, SIGHUP);
        if (!sv_wait_series(p.port, "strata_policy_loads_total{result=\"error\"}", n + i + 1))
            fail_msg("the %s reload was not counted as failed", forged[i]);
        assert_int_equal(ready_policy(p.port, hash, sizeof hash), 1);
        assert_string_equal(hash, hash0);
        place_ok(p.port, forged[i]);
    }
    /* The good file back: it loads. */
    assert_int_equal(sh_run("rm -rf '%s' && cp '%s' '%s'", live, good, live), 0);
    kill(p.pid, SIGHUP);
    assert_true(sv_wait_series(p.port, "strata_policy_loads_total{result=\"ok\"}", 2));
    assert_int_equal(ready_policy(p.port, hash, sizeof hash), 2);
    assert_string_equal(hash, hash0);
    place_ok(p.port, "good");
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "SIGHUP: reload failed, the old policy keeps serving",
                                  live, NULL), n + nf);
    /* the log says why, naming the field, the tensor or the dataset */
    assert_int_equal(sv_log_count(&p, "hyperparameter clip", NULL), 1);
    assert_int_equal(sv_log_count(&p, "tensor /embed/b holds a non-finite value", NULL), 1);
    assert_int_equal(sv_log_count(&p, "declares shape", NULL), 1);
    assert_int_equal(sv_log_count(&p, "SIGHUP: reloaded", NULL), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_reloads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
