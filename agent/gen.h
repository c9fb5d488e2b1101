/* gen.h -- random jobs and clusters for training a general policy.
 *
 * A generator spec (YAML, configs/train/gen.yaml) describes families of
 * jobs and a pool of resource types:
 *
 *   families:                      # one is drawn per instance, by weight
 *     - name: transformer
 *       weight: 1
 *       batch: [8, 64]             # ranges [low, high], drawn log-uniformly
 *       samples: [1e7, 3e8]
 *       alpha: [0.03, 0.08]        # (linear ranges: alpha)
 *       units: [1, 12]             # throughput target R = units x the speed
 *                                  # of one unit of the fastest type running
 *                                  # the whole job
 *       roles:                     # the layers, role after role, in order
 *         - {name: embed, count: 1, flops: [1MFLOP, 5MFLOP], io: [100KB, 4MB], ...}
 *         - {name: block, count: [4, 14], same: true, jitter: 0.05, flops: ...}
 *   cluster:
 *     types: [2, 5]                # how many types, drawn from the pool
 *     count: [4, 32]               # free units per type
 *     zones: [1, 3]
 *     nodes: true                  # list nodes (for placement)
 *     bad_zone: 0.3                # chance that the last zone is degraded
 *     inter_bw: [5Gbit/s, 20Gbit/s]
 *     inter_latency: [0.2ms, 1ms]
 *     tight: 0.3                   # share of instances whose target is
 *     tight_load: [0.5, 0.85]      # this share of what the whole cluster delivers
 *     single_type: 0.15            # share with one type 2-3x cheaper per FLOPS
 *                                  # than any other (a one-type optimum)
 *     pool:
 *       - {name: T4, kind: gpu, flops: [2.5TFLOPS, 4TFLOPS], io_bw: ..., net_bw: ...,
 *          mem: 16GiB, price: [0.6, 1.2], units: 4, ps_slots: 1}
 *
 *   curriculum:                    # optional: a schedule of max layers by draw
 *     - {from: 0, layers: 8}       # index (index = step x instances in
 *     - {from: 96000, layers: 24}  # training; validation indices, 2^40 on,
 *     - {from: 288000, layers: 64} # fall in the last stage)
 *
 * A curriculum cap takes layers off the role with the most layers until the
 * job fits. The keys tight and single_type draw only when non-zero, so a
 * spec without them draws the instances it always drew.
 *
 * Each layer figure (flops, io, act, params, mem) is a range: drawn
 * log-uniformly when its low end is > 0, uniformly from 0 otherwise; a
 * role with `same: true` draws its figures once and varies each layer by a
 * factor in [1 - jitter, 1 + jitter]. A role with `period: [lo, hi]`
 * draws p in that range and repeats a block of its first p layers: layer
 * i >= p is layer i - p with each figure varied by the jitter (a job built
 * of a repeated block of different layers; no draw when absent or 0, so a
 * spec without it draws what it always drew). A role's `count` may be 0
 * (optional layers). Draws come from the counter RNG of nets/rng keyed by (seed,
 * index, attempt): an instance is a pure function of them.
 *
 * Ownership: agent_gen_load returns a spec freed by agent_gen_free;
 * agent_gen_draw fills an agent_gen_inst whose arrays agent_gen_inst_clear
 * releases (it accepts a zeroed struct).
 */
#ifndef STRATA_AGENT_GEN_H
#define STRATA_AGENT_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

typedef struct agent_gen agent_gen;

/* A drawn instance: job and cluster with their own storage. */
typedef struct {
    model_job job;
    model_cluster cl;
    char family[MODEL_NAME_MAX];
    model_layer *layers; /* [job.n_layers] */
    model_type *types;   /* [cl.n_types] */
    model_node *nodes;   /* [cl.n_nodes] */
    model_zone *zones;   /* [cl.n_zones] */
} agent_gen_inst;

agent_gen *agent_gen_load(const char *path, char *err, size_t errlen);
void agent_gen_free(agent_gen *g);

/* agent_gen_draw draws instance (seed, index, attempt) into *out (cleared
 * first). Returns 0, or -1 when out of memory. */
int agent_gen_draw(const agent_gen *g, uint64_t seed, uint64_t index, int attempt,
                   agent_gen_inst *out);
void agent_gen_inst_clear(agent_gen_inst *inst);

/* agent_gen_families returns the number of families; agent_gen_family_name
 * the name of family i. */
int agent_gen_families(const agent_gen *g);
const char *agent_gen_family_name(const agent_gen *g, int i);

#endif
