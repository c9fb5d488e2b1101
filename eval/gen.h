/* gen.h -- random instances for evaluations, and writing runs as YAML.
 *
 * `strata eval` asks questions of problems nobody wrote by hand: models
 * and clusters drawn from a seed. The generator draws
 *
 *   a model    a chain of layers shaped like one of three families -- a
 *              CNN (image input, shrinking activations, parameter-heavy
 *              classifier at the end), a transformer (embedding, equal
 *              blocks, a large head) or a CTR model (IO-heavy embedding
 *              tables with large memory, then MLPs) -- with per-layer
 *              figures drawn log-uniformly around those of the shipped
 *              models, a batch and a throughput target that some plan on
 *              the cluster reaches (checked with the exact solver);
 *   a cluster  from a base cluster: a subset of its types with speed,
 *              input and network rates and prices scaled by random
 *              factors, new nodes in one to three zones, one of which may
 *              be lossy and slow.
 *
 * Everything is drawn from eval_rng, a counter-based generator (splitmix64)
 * seeded by the config, so a seed fixes the instance on any machine.
 *
 * eval_write_run writes a run (cluster + jobs) as a YAML run file that
 * cfg_load reads back to the same doubles (%.17g), so every instance of an
 * evaluation is a file a user can re-run with `strata solve`.
 */
#ifndef STRATA_EVAL_GEN_H
#define STRATA_EVAL_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

typedef struct {
    uint64_t state;
} eval_rng;

/* eval_rng_seed starts a stream; two streams with different (seed, salt)
 * are independent for our purposes. */
void eval_rng_seed(eval_rng *r, uint64_t seed, uint64_t salt);
uint64_t eval_rng_next(eval_rng *r);
double eval_rng_uniform(eval_rng *r);                 /* [0, 1) */
double eval_rng_range(eval_rng *r, double lo, double hi); /* uniform [lo, hi) */
double eval_rng_log(eval_rng *r, double lo, double hi);   /* log-uniform, lo > 0 */
int eval_rng_int(eval_rng *r, int lo, int hi);             /* uniform in lo..hi */

/* eval_gen_cluster draws a cluster from base into *out (see above; out's
 * arrays are allocated, free with eval_gen_cluster_free). Returns 0 or -1
 * when out of memory. */
int eval_gen_cluster(model_cluster *out, const model_cluster *base, eval_rng *r);
void eval_gen_cluster_free(model_cluster *cl);

/* eval_gen_model draws a model of `layers` layers named `name` whose
 * target some plan on cl reaches, in at most 50 draws (the exact solver
 * checks each). Fills *out (layers allocated; free with
 * eval_gen_job_free). Returns 0, 1 when no draw was feasible (out is then
 * the last draw), or -1 when out of memory. */
int eval_gen_model(model_job *out, const model_cluster *cl, int layers, const char *name,
                   eval_rng *r);
void eval_gen_job_free(model_job *job);

/* eval_yaml_quote writes s as one double-quoted YAML scalar into out[len]
 * (NUL-terminated), by libyaml's emitter: quotes, backslashes and control
 * characters (tab, newline, ...) are escaped, UTF-8 is kept, and no line
 * is folded, so that cfg_load reads back exactly s. Every path and name
 * eval writes into YAML goes through it. Returns 0, or -1 when s is not
 * valid UTF-8 or out is too small (out is then ""); 6 strlen(s) + 16
 * bytes are always enough. */
int eval_yaml_quote(char *out, size_t len, const char *s);

/* eval_write_run writes a run file at path: the comment (each line
 * prefixed with "# "; may be NULL; control characters other than tab
 * become '?', so a path quoted in it cannot end the comment), `model: v1`,
 * `objective`, then either `include: cluster_include` (when not NULL) or
 * the cluster cl in full, then the jobs (`job:` for one, `jobs:` for
 * several, with their measurements when they carry some); names and the
 * include path are written by eval_yaml_quote. Returns 0, or -1 with
 * "path: message" in err[errlen]. */
int eval_write_run(const char *path, const char *comment, const char *objective,
                   const char *cluster_include, const model_cluster *cl, const model_job *jobs,
                   int n_jobs, char *err, size_t errlen);

#endif
