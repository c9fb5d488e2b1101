/* agent_fixture.h -- the set-up the agent's end-to-end tests share.
 *
 * tests/test_agent_train.c and tests/test_agent_mpi.c train with the real
 * program ($STRATA_BIN train ..., run with sh_run of tests/shell.h) in a
 * scratch folder of their own under $STRATA_TMP, write their train
 * configs there, and read the checkpoints back (weights and training
 * state) to compare runs. Include after <cmocka.h>: the helpers fail the
 * running test on what the test cannot go on without.
 */
#ifndef STRATA_TEST_AGENT_FIXTURE_H
#define STRATA_TEST_AGENT_FIXTURE_H

#include <stdio.h>
#include <sys/stat.h>

#include "agent/ckptio.h"
#include "agent/net.h"
#include "nets/params.h"
#include "tests/shell.h"

/* The agent tests' small cluster: a config's opening up to its types, a
 * CPU and a GPU type of 8 units each (a job: follows). */
#define AFX_SMALL_CLUSTER                                                                          \
    "model: v1\n"                                                                                  \
    "cluster:\n"                                                                                   \
    "  types:\n"                                                                                   \
    "    - {name: cpu, kind: cpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 1GB/s, mem: 100GB, "       \
    "price: 1.0, count: 8}\n"                                                                      \
    "    - {name: gpu, kind: gpu, flops: 10TFLOPS, io_bw: 1GB/s, net_bw: 2GB/s, mem: 16GB, "        \
    "price: 3.0, count: 8}\n"

/* afx_scratch puts root/name (root: the tests' scratch folder, usually
 * $STRATA_TMP) into dir and makes it a new, empty folder (the runs of an
 * earlier ctest are removed: `strata train` refuses to start a new run
 * over an earlier one's files without --overwrite). */
static inline void afx_scratch(char *dir, size_t len, const char *root, const char *name) {
    snprintf(dir, len, "%s/%s", root, name);
    mkdir(root, 0777);
    sh_run("rm -rf '%s'", dir);
    mkdir(dir, 0777);
}

/* afx_write_file writes text to dir/name (replacing it); fails the test
 * when the file cannot be created. */
static inline void afx_write_file(const char *dir, const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* afx_load_file reads dir/run/file, a checkpoint a `strata train --out
 * DIR/RUN` wrote (last.h5, best.h5, average.h5). Returns its weights (free
 * with nn_params_free) and fills st with its training state (clear with
 * agent_ckpt_state_clear). Fails the test, with the loader's message, when
 * the file is not a readable checkpoint. */
static inline nn_params *afx_load_file(const char *dir, const char *run, const char *file,
                                       agent_ckpt_state *st) {
    char path[1200], err[2048];
    snprintf(path, sizeof path, "%s/%s/%s", dir, run, file);
    agent_net_dims d;
    if (agent_ckpt_peek(path, &d, st, err, sizeof err)) fail_msg("%s", err);
    agent_ckpt_state_clear(st);
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table(&d, t);
    nn_params *p = nn_params_create(t, AN_N_TENSORS, err, sizeof err);
    assert_non_null(p);
    if (agent_ckpt_read(path, p, &d, st, err, sizeof err)) fail_msg("%s", err);
    return p;
}

/* afx_load_run is afx_load_file of dir/run/last.h5, the last checkpoint,
 * and asserts that the run got to step `steps`. */
static inline nn_params *afx_load_run(const char *dir, const char *run, long long steps,
                                      agent_ckpt_state *st) {
    nn_params *p = afx_load_file(dir, run, "last.h5", st);
    assert_int_equal(st->step, steps);
    return p;
}

#endif
