/* heldout.h -- a held-out instance generator for judging general policies.
 *
 * Written apart from the training generator (agent/gen.h) and from eval's
 * own random models (eval/gen.h), with other distributions, so that a
 * policy trained on one is judged on jobs and clusters it cannot have
 * fitted:
 *
 *   layers   log-normal FLOPs (median `flops_median`, sigma `flops_sigma`
 *            in natural-log units) instead of log-uniform ranges; with
 *            share `blocks` the job is a short block of 1 to 4 layers
 *            repeated (3% jitter), transformer-like; each layer is
 *            memory-bound (memory x20..x200) with chance `mem_bound` and
 *            IO-bound (1 to 50 MB read per sample) with chance `io_bound`;
 *            the layer count: a size band (1-8, 9-16, 17-32, 33-64, 65-128,
 *            129-256) uniformly among those meeting `layers`, then
 *            uniformly within it, so that every band gets its share;
 *   types    made up, not drawn from a pool: a GPU with chance 0.75,
 *            per-unit FLOPS log-normal around 12 TFLOPS (CPU 0.5), price
 *            ~ (FLOPS/10 TFLOPS)^0.6 times a log-normal factor (sigma 0.5),
 *            so price per FLOPS varies far more than in the pools;
 *   capacity with share `tight` the target is 50-85% of what the whole
 *            cluster can deliver, else 1 to 4 units of the fastest type.
 *
 * Every instance has a feasible plan (checked with the exact solver, up
 * to 30 draws). Draws come from eval_rng seeded by (seed, index), so an
 * instance is a pure function of them.
 *
 * Config section (an `instances:` entry of an eval config, docs/eval.md):
 *   heldout: {seed: 8, count: 40, layers: [1, 64], types: [2, 8], tight: 0.3,
 *             blocks: 0.5, mem_bound: 0.08, io_bound: 0.06,
 *             flops_median: 2GFLOP, flops_sigma: 2.0}
 */
#ifndef STRATA_EVAL_HELDOUT_H
#define STRATA_EVAL_HELDOUT_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

struct cfg_doc;
struct yaml_node_s;

typedef struct {
    int seed;            /* the draws' seed (>= 0) */
    int count;           /* instances */
    double layers[2];    /* layer count range, within 1..MODEL_MAX_LAYERS */
    double types[2];     /* types per cluster, within 1..MODEL_MAX_TYPES */
    double tight;        /* share of instances with a tight target */
    double blocks;       /* share of jobs made of a repeated block */
    double mem_bound;    /* chance a layer is memory-bound */
    double io_bound;     /* chance a layer is IO-bound */
    double flops_median; /* FLOP per sample, median of a layer */
    double flops_sigma;  /* sigma of log FLOPs */
} eval_heldout_conf;

/* eval_heldout_walk reads the mapping `map` (key path `path`) of an eval
 * config into *c through the module's table (bounds per key; defaults as
 * in the header above). Returns 0, or -1 with "file:line:col: path.key:
 * message" in err[errlen]. */
int eval_heldout_walk(struct cfg_doc *d, struct yaml_node_s *map, const char *path,
                      eval_heldout_conf *c, char *err, size_t errlen);

/* eval_heldout_default fills *c with the defaults. */
void eval_heldout_default(eval_heldout_conf *c);

/* eval_heldout_draw draws instance `index` of seed c->seed: a job (layers
 * allocated, named "heldout<index>") and a cluster (types, nodes, zones
 * allocated). Free both with eval_heldout_clear. Returns 0, 1 when no draw
 * had a feasible plan (out is the last draw), or -1 when out of memory. */
int eval_heldout_draw(const eval_heldout_conf *c, int index, model_job *job,
                      model_cluster *cl);
void eval_heldout_clear(model_job *job, model_cluster *cl);

#endif
