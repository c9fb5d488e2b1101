/* fit.c -- Optimus's throughput curve by non-negative least squares.
 *
 * fit_nnls is Lawson and Hanson's active-set algorithm (Solving Least
 * Squares Problems, 1974, ch. 23): coefficients enter the passive set one
 * at a time by largest gradient; each passive-set least-squares problem is
 * solved by LAPACK's dgels (QR) from OpenBLAS, and a step that would make
 * a coefficient negative is cut back to the boundary. The problems here
 * are tiny (4 columns), so clarity wins over updating factorisations.
 *
 * fit_curve builds the weighted system of fit.h: row i is
 * f_i [1/w_i, 1/p_i, 1, p_i/w_i] with target 1. Columns are scaled to unit
 * norm before the solve (non-negativity is unchanged by positive column
 * scales) and the solution is scaled back.
 */
#include "solvers/fit.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK from OpenBLAS (no LAPACKE header on the build machines): QR least
 * squares. The trailing length is gfortran's hidden CHARACTER length. */
extern void dgels_(const char *trans, const int *m, const int *n, const int *nrhs,
                   double *a, const int *lda, double *b, const int *ldb, double *work,
                   const int *lwork, int *info, size_t trans_len);
/* LAPACK's singular value decomposition, for the fit's condition number. */
extern void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
                    const int *lda, double *s, double *u, const int *ldu, double *vt,
                    const int *ldvt, double *work, const int *lwork, int *info, size_t jobu_len,
                    size_t jobvt_len);

#define NNLS_MAX_N 16

/* Least squares on the passive columns: z[P] = argmin ||A_P z - b||, z = 0
 * elsewhere. work holds m * (n + 1) + lwork doubles. Returns dgels' info. */
static int passive_ls(double *z, const double *A, const double *b, int m, int n,
                      const int *passive, double *work, int lwork) {
    int cols[NNLS_MAX_N] = {0}, k = 0;
    for (int j = 0; j < n; j++)
        if (passive[j]) cols[k++] = j;
    double *Ap = work, *bp = work + (size_t)m * n, *w = bp + m;
    for (int c = 0; c < k; c++) memcpy(Ap + (size_t)c * m, A + (size_t)cols[c] * m,
                                       (size_t)m * sizeof *A);
    memcpy(bp, b, (size_t)m * sizeof *b);
    int nrhs = 1, info = 0, lda = m, ldb = m, mm = m;
    dgels_("N", &mm, &k, &nrhs, Ap, &lda, bp, &ldb, w, &lwork, &info, 1);
    for (int j = 0; j < n; j++) z[j] = 0.0;
    for (int c = 0; c < k; c++) z[cols[c]] = bp[c];
    return info;
}

/* grad = A^T (b - A x), resid scratch [m]. */
static void gradient(double *grad, double *resid, const double *A, const double *b,
                     const double *x, int m, int n) {
    memcpy(resid, b, (size_t)m * sizeof *b);
    cblas_dgemv(CblasColMajor, CblasNoTrans, m, n, -1.0, A, m, x, 1, 1.0, resid, 1);
    cblas_dgemv(CblasColMajor, CblasTrans, m, n, 1.0, A, m, resid, 1, 0.0, grad, 1);
}

int fit_nnls(double *x, const double *A, const double *b, int m, int n, char *err,
             size_t errlen) {
    if (m < 1 || n < 1 || n > NNLS_MAX_N) {
        snprintf(err, errlen, "nnls: bad size %d x %d", m, n);
        return -1;
    }
    int lwork = (m + n) * 64;
    double *work = malloc(((size_t)m * (n + 2) + (size_t)lwork) * sizeof *work);
    if (!work) {
        snprintf(err, errlen, "nnls: out of memory");
        return -1;
    }
    double *resid = work + (size_t)m * (n + 1) + lwork;
    int passive[NNLS_MAX_N] = {0};
    double grad[NNLS_MAX_N], z[NNLS_MAX_N];
    for (int j = 0; j < n; j++) x[j] = 0.0;
    double amax = 0.0;
    for (size_t i = 0; i < (size_t)m * n; i++) amax = fmax(amax, fabs(A[i]));
    double tol = 10.0 * DBL_EPSILON * amax * (m > n ? m : n);
    int rc = 0, outer = 0;
    for (;;) {
        gradient(grad, resid, A, b, x, m, n);
        int enter = -1;
        for (int j = 0; j < n; j++)
            if (!passive[j] && grad[j] > tol && (enter < 0 || grad[j] > grad[enter])) enter = j;
        if (enter < 0 || ++outer > 3 * n + 10) break;
        passive[enter] = 1;
        for (int inner = 0; inner < 3 * n + 10; inner++) {
            int info = passive_ls(z, A, b, m, n, passive, work, lwork);
            if (info != 0) {
                snprintf(err, errlen, "nnls: LAPACK dgels failed (info %d)", info);
                rc = -1;
                goto done;
            }
            double step = 1.0;
            int cut = 0;
            for (int j = 0; j < n; j++)
                if (passive[j] && z[j] <= 0.0) {
                    double a = x[j] / (x[j] - z[j]);
                    if (!cut || a < step) step = a;
                    cut = 1;
                }
            if (!cut) {
                memcpy(x, z, (size_t)n * sizeof *x);
                break;
            }
            for (int j = 0; j < n; j++) {
                x[j] += step * (z[j] - x[j]);
                if (passive[j] && x[j] <= tol) {
                    passive[j] = 0;
                    x[j] = 0.0;
                }
            }
        }
    }
done:
    free(work);
    return rc;
}

/* distinct_points counts the different (workers, ps) pairs among pts[n]. */
static int distinct_points(const model_point *pts, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = pts[j].workers == pts[i].workers && pts[j].ps == pts[i].ps;
        k += !seen;
    }
    return k;
}

/* identifiable checks that the column-scaled system A[n x 4] (column-major)
 * pins all four coefficients: its reciprocal condition number, smallest
 * over largest singular value, must be at least FIT_MIN_RCOND. Otherwise
 * err names the coefficients the measurements cannot tell apart (those
 * carrying the weakest direction, the last right singular vector) and
 * returns -1. */
static int identifiable(const double *A, int n, char *err, size_t errlen) {
    int m = n, four = 4, lda = n, one = 1, ldvt = 4, info = 0;
    int lwork = 5 * (n + 4) + 64;
    double *a = malloc(((size_t)n * 4 + (size_t)lwork) * sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double *work = a + (size_t)n * 4, sv[4], vt[16], u1;
    memcpy(a, A, (size_t)n * 4 * sizeof *a);
    dgesvd_("N", "A", &m, &four, a, &lda, sv, &u1, &one, vt, &ldvt, work, &lwork, &info, 1, 1);
    free(a);
    if (info != 0) {
        snprintf(err, errlen, "LAPACK dgesvd failed (info %d)", info);
        return -1;
    }
    double rcond = sv[0] > 0.0 ? sv[3] / sv[0] : 0.0;
    if (rcond >= FIT_MIN_RCOND) return 0;
    char names[64] = "";
    size_t used = 0;
    int k = 0;
    for (int j = 0; j < 4; j++)
        if (fabs(vt[3 + 4 * j]) > 0.1) /* row 3 of VT, column j */
            used += (size_t)snprintf(names + used, sizeof names - used, "%sth%d",
                                     k++ ? ", " : "", j);
    snprintf(err, errlen, "the measurements cannot tell %s apart (condition number %.3g, the "
             "fit needs at most %.0g): measure more (workers, ps) combinations, varying "
             "workers and ps independently", k > 1 ? names : "the coefficients",
             rcond > 0.0 ? 1.0 / rcond : INFINITY, 1.0 / FIT_MIN_RCOND);
    return -1;
}

int fit_curve(const model_point *pts, int n, fit_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (n < FIT_MIN_POINTS) {
        snprintf(err, errlen, "%d measurement%s, the fit needs at least %d (four "
                 "coefficients)", n, n == 1 ? "" : "s", FIT_MIN_POINTS);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (pts[i].workers < 1 || pts[i].ps < 1 || !(pts[i].throughput > 0.0) ||
            !isfinite(pts[i].throughput)) {
            snprintf(err, errlen, "measurement %d: needs workers >= 1, ps >= 1 and a "
                     "throughput > 0", i);
            return -1;
        }
    int distinct = distinct_points(pts, n);
    if (distinct < FIT_MIN_POINTS) {
        snprintf(err, errlen, "%d measurements but only %d distinct (workers, ps) point%s, the "
                 "fit needs at least %d (four coefficients): measure other worker and ps counts",
                 n, distinct, distinct == 1 ? "" : "s", FIT_MIN_POINTS);
        return -1;
    }
    double *A = malloc((size_t)n * 5 * sizeof *A);
    if (!A) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double *b = A + (size_t)n * 4;
    for (int i = 0; i < n; i++) {
        double w = pts[i].workers, p = pts[i].ps, f = pts[i].throughput;
        A[i + 0 * n] = f / w;
        A[i + 1 * n] = f / p;
        A[i + 2 * n] = f;
        A[i + 3 * n] = f * p / w;
        b[i] = 1.0;
    }
    double scale[4], th[4];
    for (int j = 0; j < 4; j++) {
        scale[j] = cblas_dnrm2(n, A + (size_t)j * n, 1);
        cblas_dscal(n, 1.0 / scale[j], A + (size_t)j * n, 1);
    }
    if (identifiable(A, n, err, errlen) < 0) {
        free(A);
        return -1;
    }
    int rc = fit_nnls(th, A, b, n, 4, err, errlen);
    free(A);
    if (rc < 0) return -1;
    for (int j = 0; j < 4; j++) {
        out->curve.th[j] = th[j] / scale[j];
        if (th[j] > 0.0) out->n_active++;
    }
    if (out->n_active == 0) {
        snprintf(err, errlen, "the fit found no curve (every coefficient is 0)");
        return -1;
    }
    out->curve.fitted = 1;
    out->n_points = n;
    double sq = 0.0;
    for (int i = 0; i < n; i++) {
        double fh = model_curve_eval(&out->curve, pts[i].ps, pts[i].workers);
        double r = (fh - pts[i].throughput) / pts[i].throughput;
        sq += r * r;
        out->max_rel = fmax(out->max_rel, fabs(r));
    }
    out->rms_rel = sqrt(sq / n);
    return 0;
}

int fit_job(model_job *job, fit_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (job->n_points == 0) return 0;
    char msg[400];
    if (fit_curve(job->points, job->n_points, out, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "job %s: measurements: %s", job->name, msg);
        return -1;
    }
    job->curve = out->curve;
    return 0;
}

int fit_run(cfg_run *run, char *err, size_t errlen) {
    for (int j = 0; j < run->n_jobs; j++) {
        fit_result r;
        if (fit_job(&run->jobs[j], &r, err, errlen) < 0) return -1;
    }
    return 0;
}

/* least_workers returns the least w in [lo, hi] with f(p, w) >= R, or hi + 1
 * when there is none; f is non-decreasing in w (fit_best's contract), so a
 * binary search on the curve's own figures finds the first w the scan of
 * every w would have found. */
static int least_workers(const model_curve *curve, int p, double R, int lo, int hi) {
    if (!(model_curve_eval(curve, p, hi) >= R)) return hi + 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (model_curve_eval(curve, p, mid) >= R) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* fit_best's search. For a fixed p the curve is f = w / (a + b w) with
 * a = th0 + th3 p >= 0 and b = th1/p + th2 >= 0: non-decreasing in w, and
 * the cost per sample w / f = a + b w non-decreasing too. So for each p the
 * cheapest w reaching R is the least one (a binary search), and the
 * fastest is reached at max_workers; the tie rules then pick among the p.
 * max_ps binary searches: fast for every count the flags allow. */
void fit_best(const model_curve *curve, double R, int max_workers, int max_ps, int fastest,
              fit_pick *out) {
    memset(out, 0, sizeof *out);
    if (max_workers < 1 || max_ps < 1) return;
    if (fastest) {
        /* The largest f, then, among the f within the 1e-12 tie margin of
         * it, the fewest workers, then the fewest ps. */
        double top = -INFINITY;
        for (int p = 1; p <= max_ps; p++) top = fmax(top, model_curve_eval(curve, p, max_workers));
        double floor_f = top / (1.0 + 1e-12);
        for (int p = 1; p <= max_ps; p++) {
            int w = least_workers(curve, p, floor_f, 1, max_workers);
            if (w > max_workers) continue;
            if (!out->found || w < out->workers) {
                out->found = 1;
                out->workers = w;
                out->ps = p;
            }
        }
    } else {
        for (int p = 1; p <= max_ps; p++) {
            int w = least_workers(curve, p, R, 1, max_workers);
            if (w > max_workers) continue;
            double u = w / model_curve_eval(curve, p, w);
            /* p rises, so an equal cost (within 1e-12) keeps the fewer ps */
            if (!out->found || u < out->unit_s * (1.0 - 1e-12)) {
                out->found = 1;
                out->workers = w;
                out->ps = p;
                out->unit_s = u;
            }
        }
    }
    if (out->found) {
        out->throughput = model_curve_eval(curve, out->ps, out->workers);
        out->unit_s = out->workers / out->throughput;
    }
}
