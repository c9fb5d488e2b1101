/* test_multi.c -- several jobs on one cluster: sequential and smd.
 *
 * A hand-worked knapsack on synthetic candidates, then the committed
 * instances (tests/data/multi, every .yaml file): on each, smd never does worse than
 * sequential and matches a brute-force search over the same candidates.
 * The figures measured here are the ones docs/jobs.md reports.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "env/config.h"
#include "solvers/multi.h"
#include "tests/fixture.h"
#include "tests/harness.h"

/* Appends a synthetic candidate (units on type 0, completion time) to job j. */
static void push(multi_cands *c, int j, long units0, long units1, double time, double samples) {
    if (c->count[j] == c->cap[j]) {
        c->cap[j] = c->cap[j] ? 2 * c->cap[j] : 8;
        c->cand[j] = realloc(c->cand[j], (size_t)c->cap[j] * sizeof **c->cand);
        assert_non_null(c->cand[j]);
    }
    multi_cand *m = &c->cand[j][c->count[j]++];
    memset(m, 0, sizeof *m);
    m->units[0] = units0;
    m->units[1] = units1;
    m->time = time;
    m->throughput = samples / time;
    m->cost = time * (units0 + units1) / 3600.0;
    snprintf(m->origin, sizeof m->origin, "synthetic");
}

/* Two jobs on one type with 4 units (S = 1e4 each, so theta = 1e4 / T):
 *   job a: 1 unit T 100, 2 units T 60, 3 units T 45
 *   job b: 1 unit T 80,  2 units T 50, 3 units T 40
 * Choices within 4 units: (1,1) 180, (1,2) 150, (1,3) 140, (2,1) 140,
 * (2,2) 110, (3,1) 125. The optimum is (2,2): 110 s. Sequential-style
 * greed (a takes its fastest, 3 units; b gets 1) would give 125. */
static void test_knapsack_by_hand(void **state) {
    (void)state;
    model_type types[2] = {{"u", 0, 1, 1, 1, 1, 1, 4}, {"v", 0, 1, 1, 1, 1, 1, 0}};
    model_cluster cl = {2, types, 0, NULL, 0, NULL, 0, 0, NULL, NULL};
    model_layer layer = {"l", 1, 0, 0, 0, 0};
    model_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    for (int j = 0; j < 2; j++) {
        snprintf(jobs[j].name, sizeof jobs[j].name, "%c", 'a' + j);
        jobs[j].n_layers = 1;
        jobs[j].layers = &layer;
        jobs[j].samples = 1e4;
        jobs[j].min_throughput = 50;
    }
    multi_cands *c = multi_cands_create(2, 2);
    push(c, 0, 1, 0, 100, 1e4), push(c, 0, 2, 0, 60, 1e4), push(c, 0, 3, 0, 45, 1e4);
    push(c, 1, 1, 0, 80, 1e4), push(c, 1, 2, 0, 50, 1e4), push(c, 1, 3, 0, 40, 1e4);
    multi_opts o;
    multi_opts_default(&o);
    multi_result *smd = multi_result_create(2), *bf = multi_result_create(2);
    char err[256];
    assert_int_equal(multi_smd(jobs, &cl, c, NULL, &o, smd, err, sizeof err), 0);
    assert_int_equal(smd->feasible, 1);
    assert_true(fabs(smd->sum_time - 110.0) < 1e-9);
    assert_int_equal(smd->pick[0], 1);
    assert_int_equal(smd->pick[1], 1);
    assert_int_equal(smd->units[0], 4);
    assert_int_equal(multi_brute(jobs, &cl, c, 1000, bf), 0);
    assert_true(fabs(bf->sum_time - 110.0) < 1e-9);
    /* The ratio iteration finds (2,2) itself; the exact check adds nothing. */
    assert_int_equal(smd->improved_by_check, 0);

    /* 2 units only: (1,1) is the one choice, 180 s. */
    types[0].count = 2;
    assert_int_equal(multi_smd(jobs, &cl, c, NULL, &o, smd, err, sizeof err), 0);
    assert_true(fabs(smd->sum_time - 180.0) < 1e-9);
    /* 1 unit: no choice fits. */
    types[0].count = 1;
    assert_int_equal(multi_smd(jobs, &cl, c, NULL, &o, smd, err, sizeof err), 0);
    assert_int_equal(smd->feasible, 0);
    assert_true(isinf(smd->sum_time));
    assert_non_null(strstr(smd->why, "cannot all run at once"));
    multi_result_free(smd);
    multi_result_free(bf);
    multi_cands_free(c);
}

/* Runs both methods and brute force on one instance file. */
static void check_instance(const char *path) {
    char err[1024];
    cfg_run *run = cfg_load(path, err, sizeof err);
    if (!run) fail_msg("%s", err);
    int n = run->n_jobs;
    multi_opts o;
    multi_opts_default(&o);
    multi_cands *c = multi_cands_create(n, run->cluster.n_types);
    multi_result *seq = multi_result_create(n), *smd = multi_result_create(n),
                 *bf = multi_result_create(n);
    assert_non_null(c);
    if (multi_candidates(c, run->jobs, n, &run->cluster, &o, err, sizeof err) < 0)
        fail_msg("%s", err);
    if (multi_sequential(run->jobs, n, &run->cluster, &o, c, seq, err, sizeof err) < 0)
        fail_msg("%s", err);
    if (multi_smd(run->jobs, &run->cluster, c, seq, &o, smd, err, sizeof err) < 0)
        fail_msg("%s", err);
    assert_int_equal(multi_brute(run->jobs, &run->cluster, c, 50000000L, bf), 0);
    char counts[128] = "";
    for (int j = 0; j < n; j++)
        snprintf(counts + strlen(counts), sizeof counts - strlen(counts), "%s%d", j ? "/" : "",
                 c->count[j]);
    print_message("%s: %d jobs, candidates %s; sequential %s %.6g s $%.2f; smd %.6g s $%.2f "
                  "(%d knapsacks, fixed point %d, check improved %d); brute %.6g s\n",
                  strrchr(path, '/') + 1, n, counts, seq->feasible ? "" : "(infeasible)",
                  seq->sum_time, seq->cost, smd->sum_time, smd->cost, smd->iterations,
                  smd->fixed_point, smd->improved_by_check, bf->sum_time);
    /* Never worse than sequential; equal to the brute-force optimum. */
    if (seq->feasible) {
        assert_int_equal(smd->feasible, 1);
        assert_true(smd->sum_time <= seq->sum_time * (1.0 + 1e-12));
    }
    assert_int_equal(smd->feasible, bf->feasible);
    if (bf->feasible) assert_true(fabs(smd->sum_time / bf->sum_time - 1.0) < 1e-9);
    /* The picks respect the counts and every job's target. */
    for (int t = 0; t < run->cluster.n_types; t++)
        assert_true(smd->units[t] <= run->cluster.types[t].count);
    for (int j = 0; j < n && smd->feasible; j++) {
        assert_true(smd->plan[j].throughput >= run->jobs[j].min_throughput);
        assert_true(fabs(smd->plan[j].time - run->jobs[j].samples / smd->plan[j].throughput) <=
                    1e-9 * smd->plan[j].time);
    }
    multi_result_free(seq);
    multi_result_free(smd);
    multi_result_free(bf);
    multi_cands_free(c);
    cfg_free(run);
}

static void test_committed_instances(void **state) {
    (void)state;
    const char *src = getenv("STRATA_SRC");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/tests/data/multi", src ? src : ".");
    DIR *d = opendir(dir);
    if (!d) fail_msg("cannot open %s", dir);
    struct dirent *e;
    char names[32][128];
    int n = 0;
    while ((e = readdir(d)) && n < 32) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml"))
            snprintf(names[n++], sizeof names[0], "%.120s", e->d_name);
    }
    closedir(d);
    assert_true(n >= 4);
    for (int i = 0; i < n; i++) {
        char path[6200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        check_instance(path);
    }
}


/* `strata solve` on a committed instance: tight.yaml, where sequential
 * leaves the second job without a plan (exit 1 with --method sequential)
 * and smd places both (exit 0); the JSON's smd sum equals the library's. */
static void test_cli_solve_jobs(void **state) {
    (void)state;
    const char *bin = getenv("STRATA_BIN"), *src = getenv("STRATA_SRC");
    char path[1024], cmd[2300], err[512];
    snprintf(path, sizeof path, "%s/tests/data/multi/tight.yaml", src ? src : ".");
    snprintf(cmd, sizeof cmd, "%s solve %s --json", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 0);
    json_error_t jerr;
    json_t *o = json_loads(harness_out, 0, &jerr);
    if (!o) fail_msg("bad JSON: %s\n%s", jerr.text, harness_out);
    json_t *seq = json_object_get(o, "sequential"), *smd = json_object_get(o, "smd");
    assert_true(json_is_false(json_object_get(seq, "feasible")));
    assert_non_null(strstr(json_string_value(json_object_get(seq, "reason")),
                           "job second: no plan on the units the jobs before it left"));
    assert_true(json_is_true(json_object_get(smd, "feasible")));
    double sum = json_number_value(json_object_get(smd, "sum_time"));
    json_decref(o);

    cfg_run *run = cfg_load(path, err, sizeof err);
    if (!run) fail_msg("%s", err);
    multi_opts mo;
    multi_opts_default(&mo);
    multi_cands *c = multi_cands_create(run->n_jobs, run->cluster.n_types);
    multi_result *sq = multi_result_create(run->n_jobs), *sm = multi_result_create(run->n_jobs);
    assert_int_equal(multi_candidates(c, run->jobs, run->n_jobs, &run->cluster, &mo, err,
                                      sizeof err), 0);
    assert_int_equal(multi_sequential(run->jobs, run->n_jobs, &run->cluster, &mo, c, sq, err,
                                      sizeof err), 0);
    assert_int_equal(multi_smd(run->jobs, &run->cluster, c, sq, &mo, sm, err, sizeof err), 0);
    assert_true(fabs(sm->sum_time - sum) <= 1e-9 * sum);
    multi_result_free(sq);
    multi_result_free(sm);
    multi_cands_free(c);
    cfg_free(run);

    snprintf(cmd, sizeof cmd, "%s solve %s --method sequential", bin ? bin : "./strata", path);
    assert_int_equal(harness_run(cmd), 1);
    assert_non_null(strstr(harness_out, "second         no plan"));
    assert_non_null(strstr(harness_out, "smd: 2 knapsacks, the ratio iteration reached its fixed "
                                    "point"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knapsack_by_hand),
        cmocka_unit_test(test_committed_instances),
        cmocka_unit_test(test_cli_solve_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
