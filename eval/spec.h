/* spec.h -- eval configs: what `strata eval` runs (docs/eval.md).
 *
 * An eval config is YAML, read with the run loader's declarative tables
 * (env/schema.h, cfg_doc): every object has one table of keys, and every
 * error reads "file:line:col: key.path: message". It names
 *
 *   instances  where the problems come from: complete run files or globs,
 *              a cluster crossed with model files, batches of models for
 *              the several-jobs methods, or generator specs with a seed;
 *   methods    what is compared: the plan solvers (exact and the
 *              baselines), a trained policy with its decoding, the
 *              placement methods on a plan, the several-jobs methods, and
 *              Coach's fit from noisy measurements;
 *   budgets, seeds and repeats, and optionally a training log to plot.
 *
 * File names in the config are relative to the config's folder. The spec
 * only describes; eval/instances.c expands it into problems and eval/run.c
 * runs it.
 *
 * Ownership: eval_spec_load returns a spec the caller frees with
 * eval_spec_free (NULL accepted).
 */
#ifndef STRATA_EVAL_SPEC_H
#define STRATA_EVAL_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"
#include "eval/heldout.h"

#define EVAL_PATH_MAX 1024
#define EVAL_MAX_SEEDS 1000
#define EVAL_MAX_REPEATS 100   /* runs of each cell (`repeats`) */
#define EVAL_MAX_GENERATE 1000 /* problems one `generate:` draws (`count`), each a file */
#define EVAL_MAX_METHODS 64

/* What a method is, which decides how a cell runs and what its row holds. */
typedef enum {
    EVAL_FAM_PLAN = 0, /* a plan solver of solvers/solve.h (objective cost) */
    EVAL_FAM_POLICY,   /* a trained policy (agent/policy.h), maybe placed */
    EVAL_FAM_PLACE,    /* a placer of solvers/placers.h on a solver's plan */
    EVAL_FAM_MULTI,    /* sequential or smd on all the jobs of an instance (jct) */
    EVAL_FAM_FIT,      /* Coach: pick (workers, ps) from noisy measurements */
} eval_family;

/* Coach methods (family FIT). */
typedef enum {
    EVAL_FIT_CURVE = 0, /* fit Optimus's curve to the points, pick on the curve */
    EVAL_FIT_MEASURED,  /* no fit: the best measured point that reaches R */
} eval_fit_kind;

/* Several-jobs methods (family MULTI). */
typedef enum { EVAL_MULTI_SEQUENTIAL = 0, EVAL_MULTI_SMD } eval_multi_kind;

/* One method, as configured. */
typedef struct {
    char name[MODEL_NAME_MAX]; /* label in tables and plots (unique) */
    eval_family family;
    int solver;       /* PLAN: the solve_method; PLACE: the method of the plan placed */
    int placer;       /* PLACE: the placer_method; POLICY: the placer_placement
                         (solvers/placers.h); else -1 */
    int multi;        /* MULTI: eval_multi_kind */
    int fit;          /* FIT: eval_fit_kind */
    double budget_s;  /* wall-clock budget of solvers, s (the config's default) */
    long evals;       /* evaluation budget of the searches and of `best` */
    char checkpoint[EVAL_PATH_MAX]; /* POLICY: checkpoint file (resolved) */
    int decode;       /* POLICY: agent_decode_kind */
    int samples;      /* POLICY: plans sampled when decode is sample */
    int node_samples; /* POLICY with placement policy: placements the node head
                         samples for the decoded plan besides its greedy one
                         (agent_decode_opts.node_samples; 0: none) */
    int polish;       /* POLICY: the kept plan finished by segment moves
                         (agent_decode_opts.polish) */
    int points;       /* FIT: measured (workers, ps) points */
    double noise;     /* FIT: relative noise of a measurement, uniform +-noise */
    char type[MODEL_NAME_MAX]; /* FIT: type the job runs on ("" = homogeneous plan's) */
    int max_ps;       /* FIT: ps tasks searched 1..max_ps */
    int truth;        /* FIT: placer_method placing the tasks of the true figures */
} eval_method;

/* Where one entry of `instances:` draws its problems from. */
typedef enum {
    EVAL_SRC_RUNS = 0, /* complete run files (run: FILE|GLOB|[...]) */
    EVAL_SRC_MODELS,   /* cluster x each model file */
    EVAL_SRC_BATCH,    /* cluster + all the model files as one several-jobs instance */
    EVAL_SRC_GEN,      /* generated with a seed (generate: {...}) */
    EVAL_SRC_HELDOUT,  /* job and cluster from eval/heldout.h (heldout: {...}) */
} eval_source;

/* Generator of random instances (eval/gen.h). */
typedef struct {
    uint64_t seed;
    int count;            /* instances generated */
    int random_cluster;   /* 1: perturb the cluster's types, counts and nodes */
    int layers_lo, layers_hi; /* layers of a random model */
    int jobs_lo, jobs_hi;     /* jobs per instance (> 1: a batch) */
    double load_lo, load_hi;  /* factor on each job's min_throughput */
} eval_gen;

typedef struct {
    char name[MODEL_NAME_MAX]; /* prefix of the instance names ("" = derived) */
    eval_source source;
    int n_files;          /* run files (RUNS) or model files (MODELS, BATCH, GEN pool) */
    char **files;         /* [n_files] resolved names, sorted glob matches */
    char cluster[EVAL_PATH_MAX]; /* file giving the cluster ("" for RUNS) */
    int n_targets;        /* factors on min_throughput, default {1} */
    double *targets;      /* [n_targets] */
    eval_gen gen;         /* GEN only */
    eval_heldout_conf heldout; /* HELDOUT only */
    int line;             /* line of the entry in the config, for messages */
} eval_instance_spec;

/* A training log to plot as a learning curve. */
typedef struct {
    char file[EVAL_PATH_MAX]; /* "" when none */
    char x[MODEL_NAME_MAX];   /* column of the x axis (default: first) */
    char y[MODEL_NAME_MAX];   /* column of the y axis (default: second) */
    char x_label[128];        /* axis labels, with units */
    char y_label[128];
} eval_curve_spec;

typedef struct {
    char path[EVAL_PATH_MAX]; /* the config file, as given */
    char name[MODEL_NAME_MAX]; /* `name:`, default the file's stem */
    char title[256];           /* `title:`, shown atop summary.md and plots */
    int n_seeds;
    uint64_t *seeds;   /* [n_seeds] */
    int repeats;       /* runs of each cell (timing; results must agree) */
    double budget_s;   /* default wall-clock budget of the solvers, s */
    long evals;        /* default evaluation budget */
    int n_instances;
    eval_instance_spec *instances; /* [n_instances] */
    int n_methods;
    eval_method *methods; /* [n_methods] */
    eval_curve_spec curve;
} eval_spec;

/* eval_spec_load reads the eval config at path. Returns the spec, or NULL
 * with "file:line:col: key.path: message" in err[errlen] (2048 bytes or
 * more avoid truncation). Globs that match nothing, unknown method names,
 * duplicate labels and a missing checkpoint file are errors here. */
eval_spec *eval_spec_load(const char *path, char *err, size_t errlen);
void eval_spec_free(eval_spec *s);

/* eval_family_name: "plan", "policy", "place", "multi" or "fit". */
const char *eval_family_name(eval_family f);

#endif
