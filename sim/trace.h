/* trace.h -- the jobs of a simulated cluster over time: trace files and
 * trace generators (docs/simulate.md).
 *
 * A trace is a list of jobs, each arriving at a time, naming a model (a
 * file with a `job:` as under configs/models/), a throughput target, a
 * number of samples to train and an optional deadline. Trace files are
 * YAML, read with the declarative tables of env/schema.h, so a bad line is
 * reported as "file:line:col: jobs[i].key: message". The generator draws
 * arrivals (Poisson or bursty), job sizes and durations from the published
 * statistics docs/simulate.md cites, with splitmix64 (base/rng.h): one
 * seed gives one trace on every machine.
 *
 * Models are loaded once per distinct file, with the simulated cluster
 * (through run_load, so a model with measurements gets its fitted curve);
 * jobs point at them by index. Ownership: sim_trace_load and
 * sim_trace_generate return a trace the caller frees with sim_trace_free.
 */
#ifndef STRATA_SIM_TRACE_H
#define STRATA_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "env/config.h"
#include "env/model.h"

#define SIM_PATH_MAX 1024
#define SIM_MAX_JOBS 100000 /* a trace with more jobs is refused */
#define SIM_MAX_MODELS 64   /* distinct model files per trace */

/* One job of a trace. */
typedef struct {
    char name[MODEL_NAME_MAX];
    double arrival;  /* s from the start of the trace, >= 0 */
    int model;       /* index into the trace's models */
    double target;   /* R, samples/s the job must run at */
    double samples;  /* S, samples to train */
    double deadline; /* s after arrival by which it should finish; < 0: none */
} sim_job;

/* One model file, loaded with the cluster. */
typedef struct {
    char path[SIM_PATH_MAX]; /* as the trace names it, resolved to an absolute path */
    cfg_run *run;            /* the cluster and the model's job (jobs[0]) */
} sim_model;

typedef struct {
    char path[SIM_PATH_MAX]; /* the trace file ("" when generated) */
    int n_models;
    sim_model *models; /* [n_models] */
    int n_jobs;
    sim_job *jobs; /* [n_jobs], by arrival (ties in file order) */
} sim_trace;

/* Arrival processes of the generator. */
typedef enum { SIM_ARRIVE_POISSON = 0, SIM_ARRIVE_BURSTY = 1 } sim_arrivals;

/* Job-size and duration presets of the generator, after the statistics of
 * one real GPU cluster trace each (docs/simulate.md cites every figure):
 * Microsoft Philly (the default), SenseTime Helios, Alibaba PAI. */
typedef enum { SIM_PRESET_PHILLY = 0, SIM_PRESET_HELIOS = 1, SIM_PRESET_PAI = 2 } sim_preset;
#define SIM_N_PRESETS 3
#define SIM_PRESET_CHOICES "philly|helios|pai" /* in sim_preset's order */
#define SIM_PRESET_SIZES_MAX 8

/* What a preset draws. Sizes are in units of the job's fastest type (PAI's
 * may be fractions of a unit, as its jobs ask for shares of a GPU). The
 * lognormal presets draw durations as median * exp(sigma * z), z standard
 * normal, sigma = sqrt(2 ln(dur_mean / dur_median)) (so that the
 * distribution has the published median and mean), clamped to [1 s,
 * dur_max]; Philly's are Gavel's two-range log-uniform (dur_* are 0). */
typedef struct {
    const char *name;
    int n_sizes;
    double size[SIM_PRESET_SIZES_MAX];  /* [n_sizes], ascending */
    double share[SIM_PRESET_SIZES_MAX]; /* [n_sizes], probability of each; sums to 1 */
    double dur_median, dur_mean, dur_max; /* s */
} sim_preset_info;

/* What the generator draws (docs/simulate.md gives every figure's source). */
typedef struct {
    int jobs;              /* how many jobs */
    double load;           /* offered load: unit-seconds asked / unit-seconds offered */
    uint64_t seed;
    sim_arrivals arrivals; /* poisson or bursty */
    int n_models;
    char models[SIM_MAX_MODELS][SIM_PATH_MAX]; /* model files, drawn uniformly */
    double deadline_factor; /* > 0: each job's deadline is this times its
                               duration at its target; 0: no deadlines */
    sim_preset preset;      /* sizes and durations (0: philly) */
} sim_gen_opts;

/* The combined objective a trace is judged on (docs/simulate.md), in $:
 *   cost x (total $ of the finished jobs)
 *   + jct x (sum over jobs of completion time, in job-hours; a job still
 *           queued or running when the run ends counts until then)
 *   + missed x (jobs with a deadline that finished late or never).
 * Rejected jobs (no plan even on the empty cluster) count nothing. */
typedef struct {
    double cost;   /* weight per $ (1: dollars as they are) */
    double jct;    /* $ per job-hour of completion time */
    double missed; /* $ per missed deadline */
} sim_weights;
#define SIM_W_COST 1.0   /* the defaults, when a config gives no objective: */
#define SIM_W_JCT 1.0    /* $1 per job-hour */
#define SIM_W_MISSED 0.0 /* deadlines only reported */

/* sim_weights_load reads an objective: mapping (node; NULL gives the
 * defaults) of doc into w, reporting "file:line:col: KEY.field: ..." */
struct yaml_node_s;
struct cfg_doc;
int sim_weights_load(struct cfg_doc *doc, struct yaml_node_s *node, const char *key,
                     sim_weights *w, char *err, size_t errlen);

/* A simulate config (under configs/sim/; docs/simulate.md): the cluster,
 * the trace (a file, or a generator section), the methods to compare. */
#define SIM_MAX_METHODS 16
typedef struct {
    char path[SIM_PATH_MAX];    /* the config file, as given */
    char name[MODEL_NAME_MAX];  /* name: (default: the file's base name) */
    char cluster[SIM_PATH_MAX]; /* cluster file, absolute */
    char trace[SIM_PATH_MAX];   /* trace file, joined to the config's folder; "" when none */
    int has_gen;                /* 1 when a generate: section is given */
    sim_gen_opts gen;           /* models absolute */
    char policy[SIM_PATH_MAX];  /* policy: checkpoint of the policy method, joined to the
                                   config's folder; "" when none */
    sim_weights w;              /* objective: weights of the combined objective */
    int n_methods;              /* 0: every method */
    char methods[SIM_MAX_METHODS][MODEL_NAME_MAX];
} sim_spec;

/* sim_spec_load reads a simulate config into *out (files relative to the
 * config's folder). Needs trace: or generate: (both may be given: the
 * trace is then used unless the caller asks to generate). Returns 0, or -1
 * with "file:line:col: key: message" in err. */
int sim_spec_load(const char *path, sim_spec *out, char *err, size_t errlen);

/* sim_trace_load reads the trace at path; model files are relative to the
 * trace's folder and are loaded with the cluster of cluster_path (a file
 * with a `cluster:` and no `job:`). Returns the trace, or NULL with
 * "file:line:col: jobs[i].key: message" in err[errlen] (2048 bytes or more
 * avoids truncation). */
sim_trace *sim_trace_load(const char *path, const char *cluster_path, char *err, size_t errlen);

/* sim_trace_generate draws a trace by o on the cluster of cluster_path
 * (model files relative to base_dir, or as given when absolute). Returns
 * it, or NULL with err. */
sim_trace *sim_trace_generate(const sim_gen_opts *o, const char *cluster_path,
                              const char *base_dir, char *err, size_t errlen);

/* sim_trace_write writes t as a trace file at path, model files relative
 * to path's folder. Numbers keep 17 significant digits, so loading the
 * file gives the same trace. Returns 0, or -1 with err. */
int sim_trace_write(const sim_trace *t, const char *path, char *err, size_t errlen);

/* sim_trace_free releases a trace and its models; accepts NULL. */
void sim_trace_free(sim_trace *t);

/* sim_philly_units and sim_philly_duration draw one job's size (units of
 * its fastest type: 1, 2, 4 or 8) and duration (s) from the Philly
 * distribution docs/simulate.md cites. Exposed for the tests. */
int sim_philly_units(uint64_t *rng);
double sim_philly_duration(uint64_t *rng);

/* sim_preset_get returns preset p's figures (static; never NULL for a
 * valid p). sim_preset_size and sim_preset_duration draw one job's size
 * (units, see sim_preset_info) and duration (s) from p; for philly they are
 * sim_philly_units and sim_philly_duration, draw for draw. */
const sim_preset_info *sim_preset_get(sim_preset p);
double sim_preset_size(sim_preset p, uint64_t *rng);
double sim_preset_duration(sim_preset p, uint64_t *rng);

#endif
