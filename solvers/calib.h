/* calib.h -- calibrating a cluster's per-type rates to measured runs.
 *
 * A measurements CSV has one measured run per row, with the columns (any
 * order, a header line first; other columns are ignored; '#' lines and
 * blank lines are skipped; no quoted fields)
 *
 *   job            a config with the model (a run config, or a file with
 *                  only job: such as configs/models/resnet50.yaml), relative
 *                  to the CSV's folder; its first job is used
 *   type           a type of the calibrated cluster
 *   workers, ps    whole numbers >= 1
 *   batch          samples per step per unit (> 0)
 *   samples_per_s  the measured throughput (> 0)
 *
 * A row's prediction is the cost model's (env/model.h) for the plan that
 * puts every layer on `type` with `workers` units: model_stage_eval gives
 * the step's compute C, input I and network X + P terms; the step becomes
 *
 *   s = max(C / fc, I / fi) + (X + P) / fn + o
 *
 * and the throughput model_stage_throughput(s, batch, workers, alpha),
 * alpha the job's (model_stage_alpha with `ps` ps tasks). Per type, the
 * factors fc, fi, fn on flops, io_bw and net_bw (each in [0.01, 100]) and
 * the per-step overhead o (in [0, 60] s) minimise the sum of squared log
 * errors ln(predicted / measured) over the type's fitted rows, by a
 * projected Levenberg-Marquardt on (ln fc, ln fi, ln fn, o).
 *
 * What the data cannot identify is not guessed: a rate whose term no row
 * exercises (zero in every row, or never the larger of C and I at the fit)
 * keeps factor 1 and is reported as not fitted; the overhead is fitted
 * only where it can be told apart from the rates; a rate that cannot be
 * told apart from the others, or fewer distinct (job, batch) points than
 * free parameters plus one, is refused with a message naming the type and
 * what to measure. Model v1 has no overhead term: the calibrated cluster
 * carries the scaled rates, the overhead is reported beside them.
 */
#ifndef STRATA_CALIB_H
#define STRATA_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "env/config.h"

#define CALIB_FACTOR_MIN 0.01
#define CALIB_FACTOR_MAX 100.0
#define CALIB_OVERHEAD_MAX 60.0

/* The limit on a measurements CSV (read whole with file_read, which also
 * refuses a FIFO or a device): 16 MiB, some 300,000 rows. */
#define CALIB_CSV_MAX_BYTES ((size_t)16 << 20)

enum { CALIB_COMPUTE = 0, CALIB_INPUT = 1, CALIB_NETWORK = 2, CALIB_OVERHEAD = 3, CALIB_NPAR = 4 };

/* One measured row. */
typedef struct {
    int line;          /* 1-based line in the CSV */
    int job;           /* index into calib_result.jobs */
    int type;          /* index into the cluster's types */
    int workers, ps;
    double batch;
    double measured;   /* samples/s */
    int holdout;       /* 1: held out of the fit */
    double c0, i0, n0; /* step terms at factors 1: C, I, X + P (s) */
    double scale;      /* batch * k / (1 + alpha (k - 1)): throughput = scale / step */
    double predicted;  /* after the fit, samples/s */
} calib_row;

/* The fit of one type. */
typedef struct {
    int n_fit, n_holdout; /* rows */
    int n_points;         /* distinct (job, batch) points among the fitted rows */
    int fitted[CALIB_NPAR];      /* 1 when the parameter was fitted */
    char why[CALIB_NPAR][200];   /* why not, when not fitted */
    double factor[3];            /* fc, fi, fn (1 when not fitted) */
    double overhead;             /* o, seconds per step (0 when not fitted) */
    int at_bound[CALIB_NPAR];    /* 1 when the fit stopped on a bound */
    double mape_fit;             /* percent, over the type's fitted rows */
} calib_type;

typedef struct {
    int n_rows;
    calib_row *rows;    /* [n_rows] in CSV order */
    int n_jobs;
    cfg_run **jobs;     /* [n_jobs] loaded job files */
    int n_types;
    calib_type *types;  /* [n_types], one per cluster type (n_fit 0: not measured) */
    int n_fit, n_holdout;
    double mape_fit;    /* percent, over all fitted rows */
    double mape_holdout; /* percent, over held-out rows (0 when none) */
} calib_result;

/* calib_fit reads csv_path, predicts each row on cluster cl and fits every
 * measured type, holding out round(holdout * n) of each type's n rows
 * (at most n - 2), picked by a shuffle seeded with seed. Returns the result
 * (free with calib_free), or NULL with "csv:line: message" (bad CSV, job
 * file or type) or "type T: message" (data that cannot identify a
 * factor) in err[errlen]. */
calib_result *calib_fit(const model_cluster *cl, const char *csv_path, double holdout,
                        uint64_t seed, char *err, size_t errlen);

/* calib_fit_split is calib_fit with a deterministic split when holdout_job
 * is not NULL: the rows whose job field is exactly holdout_job (as written
 * in the CSV) are held out, and holdout and seed are not used, so that one
 * model is predicted from a fit on the others. A holdout_job no row has, or
 * one that leaves a type fewer than 2 rows to fit, is an error (csv:line
 * for the latter, the type's last row). */
calib_result *calib_fit_split(const model_cluster *cl, const char *csv_path, double holdout,
                              uint64_t seed, const char *holdout_job, char *err, size_t errlen);

/* calib_load loads a run config as cfg_load does, and also a file that
 * gives only job: (a model file, such as configs/models/resnet50.yaml) or
 * only cluster: (configs/clusters/aws-mixed.yaml): a stand-in for the
 * missing half is appended after the file's text, so that the loader's
 * messages still point into the file. The caller uses only the half the
 * file gave. Returns the run (cfg_free) or NULL with the message in err. */
cfg_run *calib_load(const char *path, char *err, size_t errlen);

/* calib_free releases a result; accepts NULL. */
void calib_free(calib_result *r);

/* calib_apply scales the figures of cl's measured types in place:
 * flops *= fc, io_bw *= fi, net_bw *= fn. */
void calib_apply(const calib_result *r, model_cluster *cl);

#endif
