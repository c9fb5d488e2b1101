/* fit.h -- throughput curves fitted to measurements (Optimus, Coach; docs/jobs.md).
 *
 * A job may carry measured throughputs: (workers w, ps p, samples/s f)
 * points. This module fits Optimus's curve
 *
 *     f(p, w) = w / (th0 + th1 w/p + th2 w + th3 p),   th >= 0,
 *
 * to them. The inverse 1/f = th0/w + th1/p + th2 + th3 p/w is linear in th,
 * so the fit is a non-negative least-squares problem (Lawson-Hanson, with
 * each step's unconstrained least squares solved by LAPACK's dgels from
 * OpenBLAS). Row i is weighted by the measured f_i, so the residual is
 * f_i / f_hat_i - 1: the fit minimises relative error, which keeps the
 * slow, small-w points from being drowned by the fast ones.
 *
 * fit_best then reads the curve the way Optimus does: the (w, p) that reach
 * a target at least cost (worker unit-seconds per sample, w / f) or the
 * fastest one, within bounds.
 */
#ifndef STRATA_FIT_H
#define STRATA_FIT_H

#include <stddef.h>

#include "env/config.h"
#include "env/model.h"

#define FIT_MIN_POINTS 4 /* four coefficients: fewer distinct points cannot pin them */
#define FIT_MIN_RCOND 1e-8 /* least reciprocal condition number of the (column-scaled)
                              system: below it the measurements cannot separate the
                              coefficients and the fit is refused */

typedef struct {
    model_curve curve; /* th0..th3 >= 0, fitted = 1 */
    int n_points;      /* points used */
    double rms_rel;    /* sqrt(mean((f_hat_i - f_i) / f_i)^2) */
    double max_rel;    /* max |f_hat_i - f_i| / f_i */
    int n_active;      /* coefficients > 0 at the optimum */
} fit_result;

/* fit_nnls solves min ||A x - b||_2 subject to x >= 0 by Lawson-Hanson.
 * A is m x n column-major (A[i + j*m]), m >= 1, 1 <= n <= 16; x[n] gets the
 * solution. A and b are not modified. Returns 0, or -1 when out of memory
 * or LAPACK fails (err says which). */
int fit_nnls(double *x, const double *A, const double *b, int m, int n, char *err,
             size_t errlen);

/* fit_curve fits the curve to pts[n] (each with workers >= 1, ps >= 1,
 * throughput > 0) and fills *out. Returns 0, or -1 with a message in err
 * (fewer than FIT_MIN_POINTS points or distinct (workers, ps) pairs, a bad
 * point, a system too ill-conditioned to identify the four coefficients --
 * reciprocal condition below FIT_MIN_RCOND, the message names the
 * coefficients it cannot tell apart -- or no fit). */
int fit_curve(const model_point *pts, int n, fit_result *out, char *err, size_t errlen);

/* fit_job fits job->points and stores the curve in job->curve (fitted = 1)
 * so that the model scales the job's stages with it. Jobs without points
 * are left as they are (returns 0 with out->n_points = 0). Returns 0 or -1
 * with "job NAME: message" in err. */
int fit_job(model_job *job, fit_result *out, char *err, size_t errlen);

/* fit_run fits every job of run that carries measurements (fit_job), so
 * that the plan solvers and every report use the fitted curves. Loaders
 * call it through run_load (solvers/runload.h). Returns 0, or -1 with the first job's
 * error in err. */
int fit_run(cfg_run *run, char *err, size_t errlen);

#define FIT_MAX_SEARCH 100000 /* largest workers or ps count `strata fit` searches */

/* The configuration fit_best picks. */
typedef struct {
    int found;         /* 0 when no (w, p) within the bounds reaches R */
    int workers, ps;   /* the pick */
    double throughput; /* f(ps, workers) samples/s */
    double unit_s;     /* worker unit-seconds per sample, workers / throughput */
} fit_pick;

/* fit_best searches workers 1..max_workers and ps 1..max_ps. With
 * fastest == 0 it picks the least w / f(p, w) among those with f >= R (ties:
 * fewer ps, then fewer workers); with fastest == 1, the largest f (ties,
 * within a relative 1e-12: fewer workers, then fewer ps; R is ignored).
 * The curve's coefficients must be >= 0 (fit_curve's are): then f is
 * non-decreasing in w for each p and the search takes max_ps binary
 * searches, not max_workers * max_ps evaluations. */
void fit_best(const model_curve *curve, double R, int max_workers, int max_ps, int fastest,
              fit_pick *out);

#endif
