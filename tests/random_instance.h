/* random_instance.h -- the random plan-solver instances of
 * tests/test_solvers.c, shared with bench/bench_solvers.c.
 *
 * An instance is a job of up to RI_MAX_LAYERS layers on a cluster of up to
 * RI_MAX_TYPES types (no nodes), drawn from a seed with a SplitMix64
 * stream: the same seed gives the same instance in the test and in the
 * benchmark, so the benchmark's tables speak of the distribution the test
 * checks. The test owns the distribution (its counts of instances where
 * capacity or memory binds depend on it); the benchmark only reads it.
 * Header-only (static functions): each test and benchmark is one program.
 */
#ifndef STRATA_TEST_RANDOM_INSTANCE_H
#define STRATA_TEST_RANDOM_INSTANCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"
#include "env/model.h"

#define RI_MAX_LAYERS 64
#define RI_MAX_TYPES 6

typedef struct {
    model_type types[RI_MAX_TYPES];
    model_layer layers[RI_MAX_LAYERS];
    model_cluster cl;
    model_job job;
} ri_instance;

/* ri_logu draws log-uniformly from [lo, hi) (lo, hi > 0). */
static inline double ri_logu(uint64_t *x, double lo, double hi) {
    return lo * pow(hi / lo, splitmix64_unit(x));
}

/* ri_make fills in with L <= RI_MAX_LAYERS layers and T <= RI_MAX_TYPES
 * types drawn from seed (job named "rand<seed>"; in->cl and in->job point
 * into in, so in must not be copied). Magnitudes follow real hardware
 * loosely (0.2-20 TFLOP/s, 8-80 GB, $0.2-4/h, 1-6 free units per type;
 * layers of 10 MFLOP-3 GFLOP, 0.1-30 GB); the target R is a random
 * multiple (0.3x-8x) of what the median type does alone, so most plans
 * need several units and counts bind. */
static inline void ri_make(ri_instance *in, int L, int T, uint64_t seed) {
    memset(in, 0, sizeof *in);
    uint64_t x = seed;
    double med_flops = 0;
    for (int t = 0; t < T; t++) {
        model_type *ty = &in->types[t];
        snprintf(ty->name, sizeof ty->name, "t%d", t);
        ty->flops = ri_logu(&x, 2e11, 2e13);
        ty->is_gpu = ty->flops > 3e12;
        ty->io_bw = ri_logu(&x, 1e8, 1e10);
        ty->net_bw = ri_logu(&x, 1e9, 1.25e10);
        ty->mem = ri_logu(&x, 8e9, 8e10);
        ty->price = ri_logu(&x, 0.2, 4.0);
        ty->count = 1 + (int)(splitmix64_next(&x) % 6);
        med_flops += log(ty->flops) / T;
    }
    med_flops = exp(med_flops);
    double sumf = 0;
    for (int l = 0; l < L; l++) {
        model_layer *ly = &in->layers[l];
        snprintf(ly->name, sizeof ly->name, "l%d", l);
        ly->flops = ri_logu(&x, 1e7, 3e9);
        ly->io = splitmix64_unit(&x) < 0.3 ? ri_logu(&x, 1e4, 1e6) : 0.0;
        ly->act = ri_logu(&x, 1e3, 1e6);
        ly->params = ri_logu(&x, 1e5, 5e7);
        ly->mem = ri_logu(&x, 1e8, 3e10);
        sumf += ly->flops;
    }
    in->cl = (model_cluster){.n_types = T, .types = in->types};
    in->job = (model_job){.n_layers = L, .layers = in->layers, .batch = 64,
                          .samples = 1e7, .alpha = 0.01 + 0.09 * splitmix64_unit(&x),
                          .shard = MODEL_DEFAULT_SHARD};
    snprintf(in->job.name, sizeof in->job.name, "rand%llu", (unsigned long long)seed);
    in->job.min_throughput = ri_logu(&x, 0.3, 8.0) * med_flops / sumf;
}

#endif
