/* fixture.h -- the small hand-worked instance shared by the model and
 * placement tests (tests/test_model.c, tests/test_place.c).
 *
 * Two types, three layers, three nodes in two zones. Every expected figure
 * in those tests is worked out by hand from the numbers below; change a
 * number here and the arithmetic in the tests' comments must be redone.
 */
#ifndef STRATA_TEST_FIXTURE_H
#define STRATA_TEST_FIXTURE_H

#include <string.h>

#include "env/model.h"

enum { FX_CPU = 0, FX_GPU = 1 };

typedef struct {
    model_type types[2];
    model_layer layers[3];
    model_node nodes[3];
    model_zone zones[2];
    model_cluster cl;
    model_job job;
} fixture;

/*   type  flops  io_bw  net_bw  mem     price  count
 *   cpu   1e12   1e10   1e9     1e11    1.0    10
 *   gpu   1e13   1e9    2e9     1.6e10  3.0    4
 *
 *   layer  flops  io    act   params  mem
 *   emb    1e6    1e5   1e4   1e6     5e10
 *   fc1    1e9    0     1e4   4e6     1e8
 *   fc2    1e9    0     1e3   4e6     1e8
 *
 *   job: B 100, S 1e8, R 1000, alpha 0.05, shard 1 GiB
 *
 *   node  type  units  ps_slots  zone  bw    latency  loss
 *   n0    cpu   2      1         z0    1e9   1e-4     0
 *   n1    gpu   2      1         z0    4e9   1e-4     0.01
 *   n2    gpu   2      2         z1    4e9   2e-4     0
 *   between zones: inter_bw 5e8, inter_latency 1e-3
 */
static inline void fixture_init(fixture *fx) {
    memset(fx, 0, sizeof *fx);
    fx->types[0] = (model_type){"cpu", 0, 1e12, 1e10, 1e9, 1e11, 1.0, 10};
    fx->types[1] = (model_type){"gpu", 1, 1e13, 1e9, 2e9, 1.6e10, 3.0, 4};
    fx->layers[0] = (model_layer){"emb", 1e6, 1e5, 1e4, 1e6, 5e10};
    fx->layers[1] = (model_layer){"fc1", 1e9, 0, 1e4, 4e6, 1e8};
    fx->layers[2] = (model_layer){"fc2", 1e9, 0, 1e3, 4e6, 1e8};
    fx->zones[0] = (model_zone){"z0"};
    fx->zones[1] = (model_zone){"z1"};
    fx->nodes[0] = (model_node){"n0", FX_CPU, 2, 1, 0, 1e9, 1e-4, 0.0};
    fx->nodes[1] = (model_node){"n1", FX_GPU, 2, 1, 0, 4e9, 1e-4, 0.01};
    fx->nodes[2] = (model_node){"n2", FX_GPU, 2, 2, 1, 4e9, 2e-4, 0.0};
    fx->cl = (model_cluster){2, fx->types, 3, fx->nodes, 2, fx->zones, 5e8, 1e-3, NULL, NULL};
    fx->job = (model_job){"fx", 3, fx->layers, 100, 1e8, 1000, 0.05, MODEL_DEFAULT_SHARD,
                          0, NULL, {{0, 0, 0, 0}, 0}};
}

/* Relative closeness for figures computed in a different order. */
static inline int fixture_close(double got, double want) {
    double d = got - want;
    if (d < 0) d = -d;
    double m = want < 0 ? -want : want;
    return d <= 1e-12 * (m > 1e-300 ? m : 1e-300);
}

#endif
