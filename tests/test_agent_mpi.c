/* test_agent_mpi.c -- training over MPI ranks equals training in one process.
 *
 * `mpirun -np 2 strata train CONFIG` splits each step's episodes over the
 * two ranks (rank r plays the contiguous half r of the global batch, with
 * the same instances and the same random draws as one process would) and
 * sums the gradients with MPI_Allreduce. With the same global batch and
 * seed, the weights after a few steps must match one process's to float
 * tolerance (the only difference is the order of the gradient sums), and
 * so must the metrics, with and without NODE demonstrations. Skipped when the build has no MPI or $STRATA_MPIEXEC
 * is unset (CMakeLists.txt sets it, block "agent: MPI test").
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/ckptio.h"
#include "agent/net.h"
#include "nets/params.h"
#include "tests/agent_fixture.h"

static char tmp[1024];

/* The column of row `step` of a metrics CSV text. */
static double csv_at(const char *csv, int step, int col) {
    char key[32];
    snprintf(key, sizeof key, "\n%d,", step);
    const char *r = strstr(csv, key);
    if (!r) return NAN;
    r++;
    for (int c = 0; c < col; c++) {
        r = strchr(r, ',');
        if (!r) return NAN;
        r++;
    }
    return strtod(r, NULL);
}

/* two_ranks trains the config below plus `extra` (more keys) in one
 * process and over two ranks, in folders NAME-one and NAME-two, and
 * compares the weights and the metrics. */
static void two_ranks(const char *name, const char *extra) {
#ifndef STRATA_HAVE_MPI
    skip();
#endif
    const char *mpiexec = getenv("STRATA_MPIEXEC"), *bin = getenv("STRATA_BIN"), *t = getenv("STRATA_TMP"),
               *src = getenv("STRATA_SRC");
    if (!mpiexec || !*mpiexec || !bin || !t || !src) skip();
    afx_scratch(tmp, sizeof tmp, t, "agent_mpi");
    /* 4 generated instances x 4 samples; the shipped generator spec */
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "mode: general\n"
             "generator: %s/configs/train/gen.yaml\n"
             "valid: 0\n"
             "seed: 3\n"
             "steps: 4\n"
             "instances: 4\n"
             "samples: 4\n"
             "embed: 16\n"
             "hidden: 16\n"
             "decoder: 16\n"
             "scorer: 16\n"
             "eval_every: 0\n"
             "ckpt_every: 0\n"
             "threads: 1\n"
             "%s",
             src, extra);
    char file[64], one[64], two[64];
    snprintf(file, sizeof file, "%s.yaml", name);
    snprintf(one, sizeof one, "%s-one", name);
    snprintf(two, sizeof two, "%s-two", name);
    afx_write_file(tmp, file, cfg);
    assert_int_equal(sh_run("OPENBLAS_NUM_THREADS=1 %s train %s/%s --quiet --out %s/%s > /dev/null", bin, tmp, file, tmp, one), 0);
    int rc = sh_run("OPENBLAS_NUM_THREADS=1 %s --allow-run-as-root --oversubscribe -np 2 %s train %s/%s --quiet "
                    "--out %s/%s > %s/mpi.log 2>&1",
                    mpiexec, bin, tmp, file, tmp, two, tmp);
    if (rc != 0) {
        sh_run("cat %s/mpi.log", tmp);
        fail_msg("mpirun exited with %d", rc);
    }
    agent_ckpt_state sa, sb;
    nn_params *a = afx_load_run(tmp, one, 4, &sa), *b = afx_load_run(tmp, two, 4, &sb);
    assert_true(sa.episodes == sb.episodes);
    assert_int_equal(a->total, b->total);
    double maxd = 0, moved = 0;
    nn_params *init = NULL;
    {
        char err[256];
        nn_tensor_spec tb[AN_N_TENSORS];
        agent_net_dims d = {16, 16, 16, 16, 10.0f};
        agent_net_table(&d, tb);
        init = nn_params_create(tb, AN_N_TENSORS, err, sizeof err);
        nn_params_init(init, 3);
    }
    for (size_t e = 0; e < a->total; e++) {
        double d = fabs((double)a->params[e] - b->params[e]);
        if (d > maxd) maxd = d;
        double mv = fabs((double)a->params[e] - init->params[e]);
        if (mv > moved) moved = mv;
        if (d > 1e-4 + 1e-3 * fabs(a->params[e]))
            fail_msg("weight %zu: one rank %.9g, two ranks %.9g", e, a->params[e], b->params[e]);
    }
    print_message("largest difference %.3g; largest change from the initial weights %.3g\n", maxd, moved);
    assert_true(moved > 1e-3); /* training moved the weights: the comparison means something */
    /* the same episodes were played: same returns and costs, step by step */
    for (int s = 1; s <= 4; s++)
        for (int col = 4; col <= 5; col++) {
            double x = csv_at(sa.metrics_csv, s, col), y = csv_at(sb.metrics_csv, s, col);
            if (!(fabs(x - y) <= 1e-9 * fabs(x) + 1e-12)) fail_msg("step %d column %d: %.12g vs %.12g", s, col, x, y);
        }
    agent_ckpt_state_clear(&sa);
    agent_ckpt_state_clear(&sb);
    nn_params_free(a);
    nn_params_free(b);
    nn_params_free(init);
}

static void test_two_ranks(void **state) {
    (void)state;
    two_ranks("mpi", "");
}

/* The NODE demonstrations too: their plans (greedy) and lessons (`best`
 * seeded by the step, not by the episode's index) are the same whichever
 * rank plays them. */
static void test_two_ranks_node_demo(void **state) {
    (void)state;
    two_ranks("mpi-demo", "placement: policy\nnode_imitation: 1\n");
}

/* The DAgger demonstrations with the imitation ones: each instance's goes
 * to the rank of its first episode, its plan is greedy and its cut drawn
 * from (seed, step, instance), so the lesson is the same on either rank. */
static void test_two_ranks_dagger(void **state) {
    (void)state;
    two_ranks("mpi-dagger", "imitation: 1\ndagger: 1\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_ranks), cmocka_unit_test(test_two_ranks_node_demo),
                                       cmocka_unit_test(test_two_ranks_dagger)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
