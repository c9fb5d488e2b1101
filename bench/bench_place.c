/* bench_place.c -- cross-node traffic of the placement methods on the
 * shipped cluster and models (docs/placement.md copies its table).
 *
 *   bench_place [SRC_DIR] [CLUSTER]
 *
 * For every model file (configs/models, *.yaml) under SRC_DIR (default ".") on CLUSTER
 * (default configs/clusters/aws-mixed.yaml): the cost-optimal plan (plan
 * solver `exact`), then each placement method. spread breaks ties at
 * random, so it runs with seeds 1..20 and the table shows its mean and,
 * for the reductions, its luckiest (lowest-traffic) seed: a method beats
 * spread only if it beats every one of those draws. Prints two Markdown
 * tables: cross-node bytes per step with the reductions, then throughput'
 * against R and cost' per method. Exit status 1 when aggregate or zone
 * does not lower cross-node traffic against spread on some model.
 */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/clock.h"
#include "bench/shipped.h"
#include "env/config.h"
#include "env/place.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#define SPREAD_SEEDS 20

/* Byte counts up to TB, 3 significant digits even under a kilobyte. */
static const bytes_style BENCH_BYTES = {1000.0, {"B", "KB", "MB", "GB", "TB", NULL}, 3, 0};

static void human(char *buf, size_t len, double b) { bytes_format(buf, len, b, &BENCH_BYTES); }

typedef struct {
    char model[64];
    int tasks, stages;
    double R;
    double bytes[PLACER_N_METHODS];  /* spread: mean over seeds */
    double spread_min;               /* spread's lowest over seeds */
    double zone_bytes[PLACER_N_METHODS];
    double theta[PLACER_N_METHODS], cost[PLACER_N_METHODS];
    int ok[PLACER_N_METHODS];
    int spread_ok;                   /* seeds keeping R */
    double best_ms;
} row;

/* bench_model fills r for model on cluster: the exact plan, then every
 * placement method on it. Returns 0, or -1 after printing why. */
static int bench_model(const char *cluster, const char *model, row *r) {
    char err[1024];
    cfg_run *run = shipped_load("bench_place", cluster, model);
    if (!run) return -1;
    const model_job *job = &run->jobs[0];
    const model_cluster *cl = &run->cluster;
    snprintf(r->model, sizeof r->model, "%s", job->name);
    r->R = job->min_throughput;
    solve_opts so;
    solve_opts_default(&so);
    solve_result *res = solve_result_create(job->n_layers);
    model_plan *out = model_plan_create(job->n_layers);
    int *tasks = NULL, rc = -1;
    if (!res || !out) goto done;
    if (solve_run(job, cl, &so, res) != 0) {
        fprintf(stderr, "bench_place: %s: no plan: %s\n", job->name, res->why);
        goto done;
    }
    const model_plan *plan = res->plan;
    r->stages = plan->n_stages;
    r->spread_min = INFINITY;
    r->tasks = place_task_count(plan);
    tasks = malloc((size_t)(r->tasks + 1) * sizeof *tasks);
    if (!tasks) goto done;
    for (int m = 0; m < PLACER_N_METHODS; m++) {
        int seeds = m == PLACER_SPREAD ? SPREAD_SEEDS : 1;
        double sum = 0.0, zsum = 0.0;
        for (int k = 1; k <= seeds; k++) {
            double t0 = clock_now_s();
            int st = placer_run(job, cl, plan, (placer_method)m, (uint64_t)k, tasks, out, err,
                                sizeof err);
            if (m == PLACER_BEST) r->best_ms = (clock_now_s() - t0) * 1e3;
            if (st != PLACER_OK && st != PLACER_SLOW) {
                fprintf(stderr, "bench_place: %s: %s: %s\n", job->name,
                        placer_method_name((placer_method)m), err);
                goto done;
            }
            sum += out->cross_node_bytes;
            zsum += out->cross_zone_bytes;
            if (m == PLACER_SPREAD) {
                r->spread_min = fmin(r->spread_min, out->cross_node_bytes);
                r->spread_ok += st == PLACER_OK;
            }
            if (k == 1) {
                r->theta[m] = out->throughput;
                r->cost[m] = out->cost;
                r->ok[m] = st == PLACER_OK;
            }
        }
        r->bytes[m] = sum / seeds;
        r->zone_bytes[m] = zsum / seeds;
    }
    rc = 0;
done:
    free(tasks);
    model_plan_free(out);
    solve_result_free(res);
    cfg_free(run);
    return rc;
}

int main(int argc, char **argv) {
    char cluster[4200], absrc[4096];
    glob_t g;
    if (shipped_paths("bench_place", argc > 1 ? argv[1] : ".", argc > 2 ? argv[2] : NULL, absrc,
                      cluster, sizeof cluster) ||
        shipped_models("bench_place", absrc, &g))
        return 2;
    row *rows = calloc(g.gl_pathc, sizeof *rows);
    int n = 0, fail = 0;
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (bench_model(cluster, g.gl_pathv[i], &rows[n]) == 0) n++;
        else fail = 1;
    globfree(&g);

    printf("Cross-node bytes per step on %s, cost-optimal plan (exact) per model.\n"
           "spread: mean over seeds 1..%d; the reductions are against its lowest seed.\n\n",
           shipped_name(cluster), SPREAD_SEEDS);
    printf("| model | tasks | spread (mean) | spread (lowest) | pack | aggregate | zone | best "
           "| aggregate vs spread | zone vs spread | best vs spread |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double red_sum[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        char b[PLACER_N_METHODS][32], lo[32];
        for (int m = 0; m < PLACER_N_METHODS; m++) human(b[m], sizeof b[m], r->bytes[m]);
        human(lo, sizeof lo, r->spread_min);
        double ra = 1.0 - r->bytes[PLACER_AGGREGATE] / r->spread_min;
        double rz = 1.0 - r->bytes[PLACER_ZONE] / r->spread_min;
        double rb = 1.0 - r->bytes[PLACER_BEST] / r->spread_min;
        red_sum[0] += ra, red_sum[1] += rz, red_sum[2] += rb;
        if (!(r->bytes[PLACER_AGGREGATE] < r->spread_min) ||
            !(r->bytes[PLACER_ZONE] < r->spread_min))
            fail = 1;
        printf("| %s | %d | %s | %s | %s | %s | %s | %s | -%.1f%% | -%.1f%% | -%.1f%% |\n",
               r->model, r->tasks, b[PLACER_SPREAD], lo, b[PLACER_PACK], b[PLACER_AGGREGATE],
               b[PLACER_ZONE], b[PLACER_BEST], 100 * ra, 100 * rz, 100 * rb);
    }
    if (n > 0)
        printf("| mean | | | | | | | | -%.1f%% | -%.1f%% | -%.1f%% |\n", 100 * red_sum[0] / n,
               100 * red_sum[1] / n, 100 * red_sum[2] / n);

    printf("\nThroughput' (samples/s; * = below the target R) and cost' ($), seed 1; cross-zone "
           "bytes per step; spread keeps R on k of %d seeds.\n\n", SPREAD_SEEDS);
    printf("| model | R | spread | pack | aggregate | zone | best | cross-zone spread / "
           "aggregate / zone | spread keeps R | best ms |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        printf("| %s | %g |", r->model, r->R);
        for (int m = 0; m < PLACER_N_METHODS; m++)
            printf(" %.4g%s / $%.2f |", r->theta[m], r->ok[m] ? "" : "*", r->cost[m]);
        char z0[32], z1[32], z2[32];
        human(z0, sizeof z0, r->zone_bytes[PLACER_SPREAD]);
        human(z1, sizeof z1, r->zone_bytes[PLACER_AGGREGATE]);
        human(z2, sizeof z2, r->zone_bytes[PLACER_ZONE]);
        printf(" %s / %s / %s | %d/%d | %.1f |\n", z0, z1, z2, r->spread_ok, SPREAD_SEEDS,
               r->best_ms);
    }
    free(rows);
    return fail;
}
