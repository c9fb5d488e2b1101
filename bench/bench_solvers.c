/* bench_solvers.c -- the plan solvers against each other (docs/solvers.md
 * copies its tables).
 *
 *   bench_solvers [SRC_DIR] [CLUSTER]
 *
 * Part 1: the exact solver on random 64-layer, 6-type instances (seeds
 * 1..20, the distribution of tests/test_solvers.c, drawn by
 * tests/random_instance.h: 1-6 free units per type, so capacity binds on
 * most): wall time to a proof of optimality (or of infeasibility), one
 * core, and whether capacity binds (the optimum with unlimited units is
 * cheaper). Seed 1 is "the" 64 x 6 instance of the
 * issue.
 *
 * Part 2: every method on those instances: plans found, mean and worst
 * cost ratio to the optimum, mean time (searches: seed 1).
 *
 * Part 3: every method on each shipped model (SRC_DIR/configs/models/
 * *.yaml, default SRC_DIR ".") composed with CLUSTER (default
 * configs/clusters/aws-mixed.yaml) through cfg_load: cost ratio to the
 * exact optimum and wall time. The searches run with the default budgets
 * (SOLVE_DEFAULT_EVALS evaluations) for seeds 1..5; their cell shows the
 * mean ratio, the worst in brackets. Exit status 1 when exact fails to
 * prove a result or a method beats it.
 */
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/shipped.h"
#include "env/config.h"
#include "solvers/solve.h"
#include "tests/random_instance.h"

#define N_SEEDS_64 20
#define N_SEEDS_SEARCH 5

/* ---- random instances: those of tests/test_solvers.c ---------------- */

/* part1 times the exact solver on the 64 x 6 instances of seeds
 * 1..N_SEEDS_64 and prints the table of part 1; returns 1 when it fails to
 * prove a result, else 0. */
static int part1(void) {
    int fail = 0;
    solve_result *res = solve_result_create(64), *free_res = solve_result_create(64);
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = 60000;
    printf("Exact solver, random 64-layer x 6-type instances (one core, budget 60 s).\n\n");
    printf("| seed | result | cost ($) | capacity binds | evaluations | seconds |\n");
    printf("|---:|---|---:|---|---:|---:|\n");
    double times[N_SEEDS_64], total = 0;
    for (int s = 1; s <= N_SEEDS_64; s++) {
        ri_instance in;
        ri_make(&in, 64, 6, (uint64_t)s);
        int rc = solve_run(&in.job, &in.cl, &so, res);
        times[s - 1] = res->seconds;
        total += res->seconds;
        const char *what = res->optimal ? "optimal" : res->infeasible ? "infeasible (proven)"
                                                                      : "NOT PROVEN";
        if (!res->optimal && !res->infeasible) fail = 1;
        char cost[32] = "-", binds[8] = "-";
        if (rc == 0) snprintf(cost, sizeof cost, "%.4f", res->plan->cost);
        /* Capacity binds when unlimited units give a cheaper optimum. */
        for (int t = 0; t < 6; t++) in.types[t].count = 1 << 20;
        int rf = solve_run(&in.job, &in.cl, &so, free_res);
        if (rf == 0)
            snprintf(binds, sizeof binds, "%s",
                     rc != 0 || free_res->plan->cost < res->plan->cost * (1 - 1e-9) ? "yes" : "no");
        printf("| %d | %s | %s | %s | %ld | %.3f |\n", s, what, cost, binds, res->evaluations,
               res->seconds);
    }
    double worst = 0;
    for (int i = 0; i < N_SEEDS_64; i++) worst = fmax(worst, times[i]);
    printf("\n64 x 6, seed 1: %.3f s to the proof; over seeds 1..%d: mean %.3f s, worst %.3f s\n\n",
           times[0], N_SEEDS_64, total / N_SEEDS_64, worst);
    solve_result_free(res);
    solve_result_free(free_res);
    return fail;
}

/* Every method on the feasible 64 x 6 instances: how often it finds a plan,
 * its mean and worst cost ratio to the optimum, its mean time. */
static int part3(void) {
    int fail = 0;
    solve_result *res = solve_result_create(64);
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = 60000;
    double opt[N_SEEDS_64 + 1];
    int n_feas = 0;
    for (int s = 1; s <= N_SEEDS_64; s++) {
        ri_instance in;
        ri_make(&in, 64, 6, (uint64_t)s);
        so.method = SOLVE_EXACT;
        opt[s] = solve_run(&in.job, &in.cl, &so, res) == 0 && res->optimal ? res->plan->cost
                                                                             : INFINITY;
        n_feas += isfinite(opt[s]);
    }
    printf("Every method on the %d feasible 64 x 6 instances above (searches: seed 1, %ld "
           "evaluations).\n\n| method | plans found | mean ratio to exact | worst ratio | mean "
           "time |\n|---|---:|---:|---:|---:|\n",
           n_feas, SOLVE_DEFAULT_EVALS);
    for (int m = 0; m < SOLVE_N_METHODS; m++) {
        int found = 0;
        double sum = 0, worst = 0, secs = 0;
        for (int s = 1; s <= N_SEEDS_64; s++) {
            if (!isfinite(opt[s])) continue;
            ri_instance in;
            ri_make(&in, 64, 6, (uint64_t)s);
            so.method = (solve_method)m;
            so.seed = 1;
            int r = solve_run(&in.job, &in.cl, &so, res);
            secs += res->seconds;
            if (r != 0) continue;
            double ratio = res->plan->cost / opt[s];
            if (ratio < 1 - 1e-9) fail = 1;
            found++;
            sum += ratio;
            worst = fmax(worst, ratio);
        }
        if (found)
            printf("| %s | %d/%d | %.3fx | %.3fx | %.1f ms |\n", solve_method_name((solve_method)m),
                   found, n_feas, sum / found, worst, 1e3 * secs / n_feas);
        else
            printf("| %s | 0/%d | - | - | %.1f ms |\n", solve_method_name((solve_method)m), n_feas,
                   1e3 * secs / n_feas);
    }
    printf("\n");
    solve_result_free(res);
    return fail;
}

/* ---- the shipped models ------------------------------------------------ */

/* One table row: the exact optimum, then each method's ratio and time. */
static int bench_model(const char *cluster, const char *model) {
    cfg_run *run = shipped_load("bench_solvers", cluster, model);
    if (!run) return 1;
    const model_job *job = &run->jobs[0];
    const model_cluster *cl = &run->cluster;
    solve_result *res = solve_result_create(job->n_layers);
    solve_opts so;
    solve_opts_default(&so);
    so.budget_ms = 60000;
    int fail = 0;
    int rc = solve_run(job, cl, &so, res);
    if (rc != 0 || !res->optimal) {
        printf("| %s | %d | exact: %s | | | | | | |\n", job->name, job->n_layers,
               rc == 0 ? "not proven" : res->why);
        solve_result_free(res);
        cfg_free(run);
        return 1;
    }
    double opt = res->plan->cost;
    printf("| %s | %d | %.2f | %d | %.1f ms |", job->name, job->n_layers, opt,
           res->plan->n_stages, 1e3 * res->seconds);
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) {
        int seeds = m >= SOLVE_RANDOM ? N_SEEDS_SEARCH : 1, found = 0;
        double sum = 0, worst = 0, secs = 0;
        for (int s = 1; s <= seeds; s++) {
            so.method = (solve_method)m;
            so.seed = (uint64_t)s;
            int r = solve_run(job, cl, &so, res);
            secs += res->seconds;
            if (r != 0) continue;
            double ratio = res->plan->cost / opt;
            if (ratio < 1 - 1e-9) fail = 1; /* beating a proven optimum: a bug */
            found++;
            sum += ratio;
            worst = fmax(worst, ratio);
        }
        so.method = SOLVE_EXACT;
        if (!found) printf(" none (%.1f ms) |", 1e3 * secs / seeds);
        else if (seeds == 1) printf(" %.3fx (%.2f ms) |", sum, 1e3 * secs);
        else if (found < seeds)
            printf(" %.3fx [%.3fx; %d/%d found] (%.0f ms) |", sum / found, worst, found, seeds,
                   1e3 * secs / seeds);
        else printf(" %.3fx [%.3fx] (%.0f ms) |", sum / found, worst, 1e3 * secs / seeds);
    }
    printf("\n");
    solve_result_free(res);
    cfg_free(run);
    return fail;
}

int main(int argc, char **argv) {
    char cluster[4200], absrc[4096];
    if (shipped_paths("bench_solvers", argc > 1 ? argv[1] : ".", argc > 2 ? argv[2] : NULL, absrc,
                      cluster, sizeof cluster))
        return 2;
    int fail = part1();
    fail |= part3();

    glob_t g;
    if (shipped_models("bench_solvers", absrc, &g)) return 2;
    printf("Cost ratio to the exact optimum (1.000x = optimal) and wall time, models on %s.\n"
           "Searches: %ld evaluations, seeds 1..%d, mean ratio [worst]; none = no feasible "
           "plan found.\n\n",
           shipped_name(cluster), SOLVE_DEFAULT_EVALS, N_SEEDS_SEARCH);
    printf("| model | layers | exact $ | stages | exact time |");
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++)
        printf(" %s |", solve_method_name((solve_method)m));
    printf("\n|---|---:|---:|---:|---:|");
    for (int m = SOLVE_HOMOGENEOUS; m < SOLVE_N_METHODS; m++) printf("---:|");
    printf("\n");
    for (size_t i = 0; i < g.gl_pathc; i++) fail |= bench_model(cluster, g.gl_pathv[i]);
    globfree(&g);
    return fail;
}
