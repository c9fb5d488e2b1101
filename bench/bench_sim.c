/* bench_sim.c -- strata simulate at scale: a 1,000-job trace on a 500-node
 * cluster, every heuristic (docs/simulate.md copies its table).
 *
 *   bench_sim [SRC_DIR] [JOBS] [LOAD] [SEED] [PRESET]
 *
 * Writes a cluster of the five types of configs/clusters/aws-mixed.yaml
 * with 100 nodes each (4 units a GPU node, 2 a CPU node: 1,800 units) to a
 * temporary file, draws a trace from the statistics of PRESET (philly,
 * helios or pai; sim/trace.h) on the shipped models (defaults: 1,000 jobs,
 * load 0.8, seed 1, philly), and plays it with each method (the policy
 * with SRC_DIR/checkpoints/sim-philly.h5, or an untrained network of the
 * same width when there is none: the same work per decision), printing a
 * Markdown table: wall seconds (set-up,
 * plan cache and run), jobs done, mean and p95 completion time, cost. The
 * goal is under a minute per method. Exit status 1 when a method fails or
 * takes a minute or more.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sim/methods.h"
#include "sim/sim.h"
#include "sim/spolicy.h"
#include "sim/trace.h"

#define NODES_PER_TYPE 100

static const char *TYPES =
    "cluster:\n"
    "  types:\n"
    "    - {name: T4, kind: gpu, flops: 3.24TFLOPS, io_bw: 3.94GB/s, net_bw: 12.5Gbit/s, mem: 16GiB, price: 0.978}\n"
    "    - {name: A10G, kind: gpu, flops: 10.92TFLOPS, io_bw: 7.88GB/s, net_bw: 10Gbit/s, mem: 24GiB, price: 1.418}\n"
    "    - {name: V100, kind: gpu, flops: 9.42TFLOPS, io_bw: 3.94GB/s, net_bw: 3.125Gbit/s, mem: 16GiB, price: 3.06}\n"
    "    - {name: A100, kind: gpu, flops: 11.7TFLOPS, io_bw: 7.88GB/s, net_bw: 50Gbit/s, mem: 40GiB, price: 4.0966}\n"
    "    - {name: CPU, kind: cpu, flops: 0.576TFLOPS, io_bw: 35.2GB/s, net_bw: 50Gbit/s, mem: 384GiB, price: 3.576}\n"
    "  nodes:\n";

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    int jobs = argc > 2 ? atoi(argv[2]) : 1000;
    double load = argc > 3 ? atof(argv[3]) : 0.8;
    unsigned long seed = argc > 4 ? strtoul(argv[4], NULL, 10) : 1;
    const char *preset_name = argc > 5 ? argv[5] : "philly";
    int preset = -1;
    for (int i = 0; i < SIM_N_PRESETS; i++)
        if (!strcmp(preset_name, sim_preset_get((sim_preset)i)->name)) preset = i;
    if (preset < 0) {
        fprintf(stderr, "bench_sim: PRESET: expected one of %s, got '%s'\n", SIM_PRESET_CHOICES,
                preset_name);
        return 1;
    }
    char cluster[] = "/tmp/bench-sim-XXXXXX.yaml";
    int fd = mkstemps(cluster, 5);
    if (fd < 0) {
        perror("bench_sim: mkstemps");
        return 1;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        perror("bench_sim: fdopen");
        close(fd);
        unlink(cluster);
        return 1;
    }
    fputs(TYPES, f);
    const char *names[5] = {"T4", "A10G", "V100", "A100", "CPU"};
    for (int t = 0; t < 5; t++)
        for (int i = 0; i < NODES_PER_TYPE; i++)
            fprintf(f, "    - {name: %s-%d, type: %s, units: %d, bw: 25Gbit/s}\n", names[t], i,
                    names[t], t == 4 ? 2 : 4);
    fclose(f);

    sim_gen_opts g;
    memset(&g, 0, sizeof g);
    g.jobs = jobs;
    g.load = load;
    g.seed = seed;
    g.arrivals = SIM_ARRIVE_POISSON;
    g.preset = (sim_preset)preset;
    const char *models[] = {"resnet50", "vgg16", "bert-base", "gpt2-small", "ctr-dlrm"};
    g.n_models = 5;
    for (int i = 0; i < 5; i++)
        snprintf(g.models[i], sizeof g.models[i], "%s/configs/models/%s.yaml", src, models[i]);
    char err[4096];
    double t0 = clock_now_s();
    sim_trace *t = sim_trace_generate(&g, cluster, ".", err, sizeof err);
    unlink(cluster);
    if (!t) {
        fprintf(stderr, "bench_sim: %s\n", err);
        return 1;
    }
    const model_cluster *cl = &t->models[0].run->cluster;
    long units = 0;
    for (int ty = 0; ty < cl->n_types; ty++) units += cl->types[ty].count;
    printf("%d jobs (%s statistics, load %.2f, seed %lu) on %d nodes, %ld units; trace drawn "
           "and models loaded in %.2f s\n\n", t->n_jobs, preset_name, load, seed, cl->n_nodes,
           units, clock_now_s() - t0);
    printf("| method | wall s | done | JCT mean | JCT p95 | queue mean | cost |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n");
    int n, status = 0;
    const sim_method *all = sim_methods(&n);
    char ck[2048];
    snprintf(ck, sizeof ck, "%s/checkpoints/sim-philly.h5", src);
    spol_net *net = spol_load(ck, NULL, err, sizeof err);
    if (!net) net = spol_net_create(32, 1, err, sizeof err);
    spol_run arg = {net, 0, {0, 0, 0}, NULL};
    for (int i = 0; i < n; i++) {
        double a = clock_now_s();
        sim *s = sim_create_with(t, cl, &all[i], &arg, err, sizeof err);
        if (!s || sim_run(s, err, sizeof err)) {
            fprintf(stderr, "bench_sim: %s: %s\n", all[i].name, err);
            sim_free(s);
            status = 1;
            continue;
        }
        double secs = clock_now_s() - a;
        sim_summary u;
        sim_summarise(s, &u);
        printf("| %s | %.2f | %d/%d | %.2f h | %.2f h | %.2f h | $%.0f |\n", all[i].name, secs,
               u.done, u.jobs, u.jct_mean / 3600, u.jct_p95 / 3600, u.queue_mean / 3600, u.cost);
        fflush(stdout);
        if (secs >= 60) status = 1;
        sim_free(s);
    }
    spol_net_free(net);
    sim_trace_free(t);
    return status;
}
