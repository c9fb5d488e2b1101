/* calib.c -- fitting per-type rate factors to measured runs (calib.h).
 *
 * Why a hand-written Levenberg-Marquardt: the problem is at most four
 * parameters per type, non-linear (a max of two terms, a log error) and
 * boxed; GLPK only does linear programs and fit_nnls (solvers/fit.h) only
 * linear least squares, and no other solver library is in the build. The
 * normal equations of a 4x4 system are solved by Cholesky here; the bounds
 * are kept by projecting each step onto the box.
 */
#include "solvers/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/file.h"
#include "base/rng.h"
#include "env/schema.h"
#include "env/units.h"

static const char *PAR_NAME[CALIB_NPAR] = {"compute (flops)", "input (io_bw)",
                                           "network (net_bw)", "per-step overhead"};

/* ---------------------------------------------------------------------------
 * Reading the CSV
 * ------------------------------------------------------------------------ */

enum { COL_JOB, COL_TYPE, COL_WORKERS, COL_PS, COL_BATCH, COL_SPS, N_COL };
static const char *COL_NAME[N_COL] = {"job", "type", "workers", "ps", "batch", "samples_per_s"};

void calib_free(calib_result *r) {
    if (!r) return;
    for (int j = 0; j < r->n_jobs; j++) cfg_free(r->jobs[j]);
    free(r->jobs);
    free(r->rows);
    free(r->types);
    free(r);
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* split cuts line at commas into f[<= max]; returns the number of fields. */
static int split(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (n < max) f[n] = trim(p);
        n++;
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

cfg_run *calib_load(const char *path, char *err, size_t errlen) {
    cfg_doc *d = cfg_doc_load(path, err, errlen);
    if (!d) return NULL;
    yaml_node_t *root = cfg_doc_root(d);
    int has[4] = {0, 0, 0, 0}; /* cluster, job or jobs, include, block style */
    if (root && root->type == YAML_MAPPING_NODE) {
        has[3] = root->data.mapping.style != YAML_FLOW_MAPPING_STYLE;
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            yaml_node_t *k = cfg_doc_node(d, p->key);
            const char *key = k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
            has[0] |= !strcmp(key, "cluster");
            has[1] |= !strcmp(key, "job") || !strcmp(key, "jobs");
            has[2] |= !strcmp(key, "include");
        }
    }
    cfg_doc_free(d);
    /* a run (or anything the loader should explain) is loaded as it is */
    if (has[2] || !has[3] || has[0] == has[1]) return cfg_load(path, err, errlen);
    static const char CLUSTER[] =
        "\ncluster: {types: [{name: stand-in, kind: cpu, flops: 1, io_bw: 1, net_bw: 1, "
        "mem: 1e17, price: 0, count: 1}]}\n";
    static const char JOB[] =
        "\njob: {name: stand-in, batch: 1, samples: 1, min_throughput: 1, layers: [{name: l, "
        "flops: 1, io: 0, act: 0, params: 0, mem: 0}]}\n";
    const char *add = has[0] ? JOB : CLUSTER;
    size_t len, alen = strlen(add);
    char *text, why[256];
    if (file_read(path, FILE_MAX_CONFIG, &text, &len, NULL, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    char *all = malloc(len + alen + 1);
    if (!all) {
        free(text);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    memcpy(all, text, len);
    memcpy(all + len, add, alen + 1);
    free(text);
    cfg_run *run = cfg_load_buffer(path, all, len + alen, err, errlen);
    free(all);
    return run;
}

#define FAIL(...)                           \
    do {                                    \
        snprintf(err, errlen, __VA_ARGS__); \
        goto fail;                          \
    } while (0)

/* read_csv fills r->rows and r->jobs from the file, marking held out the rows
 * whose job field is holdout_job (when not NULL); 0 or -1 with err. */
static int read_csv(calib_result *r, const model_cluster *cl, const char *csv,
                    const char *holdout_job, char *err, size_t errlen) {
    char line[4096], dir[1024], msg[1536], *text = NULL;
    int col[N_COL], cap = 0, jcap = 0, n_hdr = 0, lno = 0;
    char (*jpath)[1024] = NULL;
    size_t len = 0, pos = 0;
    if (file_read(csv, CALIB_CSV_MAX_BYTES, &text, &len, NULL, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", csv, msg);
        return -1;
    }
    snprintf(dir, sizeof dir, "%s", csv);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = '\0';
    else dir[0] = '\0';
    for (int c = 0; c < N_COL; c++) col[c] = -1;
    while (pos < len) { /* one line, its newline included, into line[] */
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        lno++;
        if (n > sizeof line - 1) FAIL("%s:%d: line longer than %zu characters", csv, lno, sizeof line - 2);
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos += n;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        if (strchr(s, '"')) FAIL("%s:%d: quoted fields are not supported", csv, lno);
        char *fld[64];
        int nf = split(s, fld, 64);
        if (nf > 64) FAIL("%s:%d: more than 64 fields", csv, lno);
        if (!n_hdr) { /* the header */
            n_hdr = nf;
            for (int i = 0; i < nf; i++)
                for (int c = 0; c < N_COL; c++)
                    if (!strcmp(fld[i], COL_NAME[c])) {
                        if (col[c] >= 0) FAIL("%s:%d: column '%s' given twice", csv, lno, COL_NAME[c]);
                        col[c] = i;
                    }
            for (int c = 0; c < N_COL; c++)
                if (col[c] < 0)
                    FAIL("%s:%d: missing column '%s' (the header needs job, type, workers, ps, "
                         "batch, samples_per_s)", csv, lno, COL_NAME[c]);
            continue;
        }
        if (nf != n_hdr) FAIL("%s:%d: %d fields, the header has %d", csv, lno, nf, n_hdr);
        if (r->n_rows == cap) {
            cap = cap ? 2 * cap : 64;
            calib_row *q = realloc(r->rows, (size_t)cap * sizeof *q);
            if (!q) FAIL("%s:%d: out of memory", csv, lno);
            r->rows = q;
        }
        calib_row *row = &r->rows[r->n_rows];
        memset(row, 0, sizeof *row);
        row->line = lno;
        double v;
        static const struct {
            int c;
            units_kind k;
        } NUM[] = {{COL_WORKERS, UNITS_COUNT}, {COL_PS, UNITS_COUNT}, {COL_BATCH, UNITS_NUMBER},
                   {COL_SPS, UNITS_NUMBER}};
        double got[4];
        for (int i = 0; i < 4; i++) {
            const char *t = fld[col[NUM[i].c]];
            if (units_parse(NUM[i].k, t, &v, msg, sizeof msg))
                FAIL("%s:%d: %s: %s", csv, lno, COL_NAME[NUM[i].c], msg);
            if (NUM[i].k == UNITS_COUNT ? v < 1 : v <= 0)
                FAIL("%s:%d: %s: must be %s, got \"%s\"", csv, lno, COL_NAME[NUM[i].c],
                     NUM[i].k == UNITS_COUNT ? ">= 1" : "> 0", t);
            got[i] = v;
        }
        row->workers = (int)got[0];
        row->ps = (int)got[1];
        row->batch = got[2];
        row->measured = got[3];
        const char *tn = fld[col[COL_TYPE]];
        row->type = model_cluster_type(cl, tn);
        if (row->type < 0) {
            char names[512] = "";
            size_t o = 0;
            for (int t = 0; t < cl->n_types && o < sizeof names - 70; t++)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", t ? ", " : "",
                                      cl->types[t].name);
            FAIL("%s:%d: type: no type '%s' in the cluster (it has %s)", csv, lno, tn, names);
        }
        const char *jn = fld[col[COL_JOB]];
        if (!*jn) FAIL("%s:%d: job: empty file name", csv, lno);
        char full[1024];
        int w = jn[0] == '/' ? snprintf(full, sizeof full, "%s", jn)
                             : snprintf(full, sizeof full, "%s%s", dir, jn);
        if (w < 0 || (size_t)w >= sizeof full) FAIL("%s:%d: job: file name too long", csv, lno);
        int j;
        for (j = 0; j < r->n_jobs; j++)
            if (!strcmp(jpath[j], full)) break;
        if (j == r->n_jobs) {
            if (r->n_jobs == jcap) {
                jcap = jcap ? 2 * jcap : 8;
                cfg_run **q = realloc(r->jobs, (size_t)jcap * sizeof *q);
                if (!q) FAIL("%s:%d: out of memory", csv, lno);
                r->jobs = q;
                char(*pq)[1024] = realloc(jpath, (size_t)jcap * sizeof *pq);
                if (!pq) FAIL("%s:%d: out of memory", csv, lno);
                jpath = pq;
            }
            cfg_run *run = calib_load(full, msg, sizeof msg);
            if (!run) FAIL("%s:%d: job: %s", csv, lno, msg);
            snprintf(jpath[j], sizeof jpath[j], "%s", full);
            r->jobs[r->n_jobs++] = run;
        }
        row->job = j;
        row->holdout = holdout_job && !strcmp(jn, holdout_job);
        r->n_rows++;
    }
    if (!n_hdr) FAIL("%s: empty: expected a header line (job, type, workers, ps, batch, samples_per_s)", csv);
    if (r->n_rows == 0) FAIL("%s: no measured rows after the header", csv);
    free(jpath);
    free(text);
    return 0;
fail:
    free(jpath);
    free(text);
    return -1;
}

/* ---------------------------------------------------------------------------
 * The model of one row and the fit
 * ------------------------------------------------------------------------ */

/* step of row at parameters x (ln fc, ln fi, ln fn, o); which branch of the
 * max binds goes to *io_binds (1 when I / fi > C / fc). */
static double step_at(const calib_row *w, const double *x, int *io_binds) {
    double c = w->c0 * exp(-x[0]), i = w->i0 * exp(-x[1]);
    if (io_binds) *io_binds = i > c;
    return (i > c ? i : c) + w->n0 * exp(-x[2]) + x[3];
}

/* jac fills J[n][4] (d ln s / d x) and res[n] (ln s - ln s_measured) at x. */
static double jac_res(calib_row *const *rows, int n, const double *x, double *J, double *res) {
    double cost = 0.0;
    for (int k = 0; k < n; k++) {
        const calib_row *w = rows[k];
        int io;
        double s = step_at(w, x, &io);
        double sm = w->scale / w->measured;
        res[k] = log(s) - log(sm);
        cost += res[k] * res[k];
        if (J) {
            double *j = J + 4 * k;
            j[0] = io ? 0.0 : -w->c0 * exp(-x[0]) / s;
            j[1] = io ? -w->i0 * exp(-x[1]) / s : 0.0;
            j[2] = -w->n0 * exp(-x[2]) / s;
            j[3] = 1.0 / s;
        }
    }
    return cost;
}

static const double LO[4] = {-4.605170185988091, -4.605170185988091, -4.605170185988091, 0.0};
static const double HI[4] = {4.605170185988091, 4.605170185988091, 4.605170185988091,
                             CALIB_OVERHEAD_MAX};

/* chol_solve solves A x = b for the m x m symmetric positive definite A
 * (overwritten); returns -1 when A is not positive definite. */
static int chol_solve(double *A, double *b, int m) {
    for (int j = 0; j < m; j++) {
        double d = A[j * m + j];
        for (int k = 0; k < j; k++) d -= A[j * m + k] * A[j * m + k];
        if (!(d > 0.0)) return -1;
        A[j * m + j] = sqrt(d);
        for (int i = j + 1; i < m; i++) {
            double s = A[i * m + j];
            for (int k = 0; k < j; k++) s -= A[i * m + k] * A[j * m + k];
            A[i * m + j] = s / A[j * m + j];
        }
    }
    for (int i = 0; i < m; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++) s -= A[i * m + k] * b[k];
        b[i] = s / A[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < m; k++) s -= A[k * m + i] * b[k];
        b[i] = s / A[i * m + i];
    }
    return 0;
}

/* lm minimises the sum of squared residuals over the free parameters of x
 * (free[p] 1), projected onto [LO, HI]; J and res have room for n rows. */
static void lm(calib_row *const *rows, int n, const int *free_, double *x, double *J, double *res) {
    int idx[4], m = 0;
    for (int p = 0; p < 4; p++)
        if (free_[p]) idx[m++] = p;
    if (m == 0) return;
    double lambda = 1e-3;
    double cost = jac_res(rows, n, x, J, res);
    for (int it = 0; it < 500 && cost > 1e-30; it++) {
        double H[16] = {0}, g[4] = {0};
        for (int k = 0; k < n; k++)
            for (int a = 0; a < m; a++) {
                g[a] += J[4 * k + idx[a]] * res[k];
                for (int b = 0; b < m; b++) H[a * m + b] += J[4 * k + idx[a]] * J[4 * k + idx[b]];
            }
        int improved = 0;
        while (lambda < 1e20) {
            double A[16], d[4], xn[4];
            memcpy(A, H, sizeof A);
            for (int a = 0; a < m; a++) {
                A[a * m + a] += lambda * (H[a * m + a] > 1e-300 ? H[a * m + a] : 1e-12);
                d[a] = -g[a];
            }
            if (chol_solve(A, d, m)) {
                lambda *= 10.0;
                continue;
            }
            memcpy(xn, x, sizeof xn);
            double moved = 0.0;
            for (int a = 0; a < m; a++) {
                int p = idx[a];
                double v = x[p] + d[a];
                v = v < LO[p] ? LO[p] : v > HI[p] ? HI[p] : v;
                moved += fabs(v - x[p]) / (1.0 + fabs(x[p]));
                xn[p] = v;
            }
            double cn = jac_res(rows, n, xn, NULL, res);
            if (cn < cost) {
                memcpy(x, xn, sizeof xn);
                lambda = lambda * 0.1 > 1e-12 ? lambda * 0.1 : 1e-12;
                improved = moved > 1e-15;
                cost = jac_res(rows, n, x, J, res);
                break;
            }
            lambda *= 10.0;
        }
        if (!improved) break;
    }
    jac_res(rows, n, x, J, res);
}

/* dependent returns the first free parameter (in order compute, input,
 * network, overhead) whose column of J is zero or a combination of the
 * columns before it (modified Gram-Schmidt on unit columns), or -1. */
static int dependent(const double *J, int n, const int *free_, int *zero) {
    double Q[4][512];
    int nq = 0;
    int nn = n > 512 ? 512 : n;
    for (int p = 0; p < 4; p++) {
        if (!free_[p]) continue;
        double v[512], norm = 0.0;
        for (int k = 0; k < nn; k++) norm += J[4 * k + p] * J[4 * k + p];
        norm = sqrt(norm);
        *zero = norm == 0.0;
        if (norm == 0.0) return p;
        for (int k = 0; k < nn; k++) v[k] = J[4 * k + p] / norm;
        for (int q = 0; q < nq; q++) {
            double dot = 0.0;
            for (int k = 0; k < nn; k++) dot += Q[q][k] * v[k];
            for (int k = 0; k < nn; k++) v[k] -= dot * Q[q][k];
        }
        double rn = 0.0;
        for (int k = 0; k < nn; k++) rn += v[k] * v[k];
        rn = sqrt(rn);
        if (rn < 1e-7) return p;
        for (int k = 0; k < nn; k++) Q[nq][k] = v[k] / rn;
        nq++;
    }
    return -1;
}

static int same_point(const calib_row *a, const calib_row *b) {
    return a->c0 == b->c0 && a->i0 == b->i0 && a->n0 == b->n0;
}

/* fit_type fits the rows[n] of type t; 0, or -1 with "type T: ..." in err. */
static int fit_type(const model_cluster *cl, int t, calib_row *const *rows, int n,
                    calib_type *ct, char *err, size_t errlen) {
    const char *tn = cl->types[t].name;
    double *J = malloc((size_t)n * 4 * sizeof *J), *res = malloc((size_t)n * sizeof *res);
    if (!J || !res) {
        free(J);
        free(res);
        snprintf(err, errlen, "type %s: out of memory", tn);
        return -1;
    }
    int rc = -1;
    int pts = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int q = 0; q < k && !seen; q++) seen = same_point(rows[q], rows[k]);
        pts += !seen;
    }
    ct->n_points = pts;
    int free_[4] = {0, 0, 0, 1};
    double present[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) {
        present[0] += rows[k]->c0;
        present[1] += rows[k]->i0;
        present[2] += rows[k]->n0;
    }
    static const char *ABSENT[3] = {
        "no measured job has FLOP", "no measured job reads input (io is 0 in every layer)",
        "no measured job synchronises parameters or passes activations (params and act are 0)"};
    for (int p = 0; p < 3; p++) {
        free_[p] = present[p] > 0.0;
        if (!free_[p]) snprintf(ct->why[p], sizeof ct->why[p], "%s", ABSENT[p]);
    }
    double x[4] = {0, 0, 0, 0};
    for (int round = 0; round < 8; round++) {
        /* start: every rate scaled alike to the rows' geometric mean */
        double lg = 0.0, x0[4] = {0, 0, 0, 0};
        for (int k = 0; k < n; k++) lg += log(step_at(rows[k], x0, NULL) / (rows[k]->scale / rows[k]->measured));
        lg /= n;
        for (int p = 0; p < 3; p++) x[p] = free_[p] ? (lg < LO[p] ? LO[p] : lg > HI[p] ? HI[p] : lg) : 0.0;
        x[3] = 0.0;
        lm(rows, n, free_, x, J, res);
        int zero = 0, dep = dependent(J, n, free_, &zero);
        int nfree = free_[0] + free_[1] + free_[2] + free_[3];
        if (dep == CALIB_OVERHEAD) {
            free_[3] = 0;
            snprintf(ct->why[3], sizeof ct->why[3],
                     "cannot be told apart from the rates with these rows (it needs jobs whose "
                     "network term differs relative to the rest, or more batch sizes)");
            continue;
        }
        if (dep >= 0 && dep < 3 && zero && dep != CALIB_NETWORK) {
            /* a rate whose branch of max(C, I) never binds at the fit */
            free_[dep] = 0;
            snprintf(ct->why[dep], sizeof ct->why[dep], "its term is never the larger of "
                     "compute and input at any measured row");
            continue;
        }
        if (dep >= 0) {
            snprintf(err, errlen, "type %s: the %s rate cannot be told apart from the other "
                     "factors with these %d rows (%d distinct job/batch point%s): measure it "
                     "with other batch sizes or other models", tn, PAR_NAME[dep], n, pts,
                     pts == 1 ? "" : "s");
            goto done;
        }
        if (pts <= nfree) {
            if (free_[3]) {
                free_[3] = 0;
                snprintf(ct->why[3], sizeof ct->why[3], "too few distinct points to fit it too");
                continue;
            }
            snprintf(err, errlen, "type %s: %d distinct job/batch point%s for %d factor%s: "
                     "measure at least %d distinct (job, batch) combinations, so that the fit "
                     "has an error to show", tn, pts, pts == 1 ? "" : "s", nfree,
                     nfree == 1 ? "" : "s", nfree + 1);
            goto done;
        }
        rc = 0;
        break;
    }
    if (rc) {
        snprintf(err, errlen, "type %s: the fit did not settle on the parameters to fit", tn);
        goto done;
    }
    for (int p = 0; p < 4; p++) {
        ct->fitted[p] = free_[p];
        if (free_[p]) ct->why[p][0] = '\0';
        ct->at_bound[p] = free_[p] && (x[p] <= LO[p] || x[p] >= HI[p]) && !(p == 3 && x[p] == 0.0);
    }
    for (int p = 0; p < 3; p++) ct->factor[p] = exp(x[p]);
    ct->overhead = x[3];
done:
    free(J);
    free(res);
    return rc;
}

/* predict fills row->predicted through the cost model on cl scaled by the
 * type's factors, plus its overhead. */
static void predict(const model_cluster *cl, const calib_result *r, calib_row *w) {
    const calib_type *ct = &r->types[w->type];
    model_type ty = cl->types[w->type];
    ty.flops *= ct->factor[0];
    ty.io_bw *= ct->factor[1];
    ty.net_bw *= ct->factor[2];
    model_cluster one = {.n_types = 1, .types = &ty, .n_zones = 0};
    model_job job = r->jobs[w->job]->jobs[0];
    job.batch = w->batch;
    model_stage st;
    model_stage_eval(&job, &one, 0, 0, job.n_layers - 1, &st);
    w->predicted = model_stage_throughput(st.step + ct->overhead, w->batch, w->workers,
                                          model_stage_alpha(&job, w->ps));
}

calib_result *calib_fit(const model_cluster *cl, const char *csv_path, double holdout,
                        uint64_t seed, char *err, size_t errlen) {
    return calib_fit_split(cl, csv_path, holdout, seed, NULL, err, errlen);
}

calib_result *calib_fit_split(const model_cluster *cl, const char *csv_path, double holdout,
                              uint64_t seed, const char *holdout_job, char *err, size_t errlen) {
    calib_result *r = calloc(1, sizeof *r);
    calib_row **sel = NULL;
    if (!r) {
        snprintf(err, errlen, "%s: out of memory", csv_path);
        return NULL;
    }
    r->n_types = cl->n_types;
    r->types = calloc((size_t)cl->n_types, sizeof *r->types);
    if (!r->types) FAIL("%s: out of memory", csv_path);
    if (read_csv(r, cl, csv_path, holdout_job, err, errlen)) goto fail;
    if (holdout_job) {
        int any = 0;
        for (int k = 0; k < r->n_rows && !any; k++) any = r->rows[k].holdout;
        if (!any) FAIL("%s: no row has job '%s' to hold out", csv_path, holdout_job);
    }
    sel = malloc((size_t)r->n_rows * sizeof *sel);
    if (!sel) FAIL("%s: out of memory", csv_path);
    /* the step terms of each row at factors 1, from the cost model */
    for (int k = 0; k < r->n_rows; k++) {
        calib_row *w = &r->rows[k];
        model_cluster one = {.n_types = 1, .types = &cl->types[w->type]};
        model_job job = r->jobs[w->job]->jobs[0];
        job.batch = w->batch;
        model_stage st;
        model_stage_eval(&job, &one, 0, 0, job.n_layers - 1, &st);
        w->c0 = st.compute;
        w->i0 = st.io;
        w->n0 = st.xfer + st.sync;
        w->scale = model_stage_throughput(1.0, w->batch, w->workers, model_stage_alpha(&job, w->ps));
    }
    for (int t = 0; t < cl->n_types; t++) {
        calib_type *ct = &r->types[t];
        for (int p = 0; p < 3; p++) ct->factor[p] = 1.0;
        int n = 0, last = 0;
        for (int k = 0; k < r->n_rows; k++)
            if (r->rows[k].type == t) sel[n++] = &r->rows[k], last = r->rows[k].line;
        if (n == 0) continue;
        if (n == 1)
            FAIL("%s:%d: type %s has only this one measured row: calibrating a type needs at "
                 "least 2 rows (and more distinct job/batch points than factors)", csv_path,
                 last, cl->types[t].name);
        int nh = 0;
        if (holdout_job) { /* the job's rows, marked by read_csv */
            for (int i = 0; i < n; i++) nh += sel[i]->holdout;
            if (n - nh < 2)
                FAIL("%s:%d: type %s: holding out job '%s' leaves %d row%s to fit: calibrating "
                     "a type needs at least 2", csv_path, last, cl->types[t].name, holdout_job,
                     n - nh, n - nh == 1 ? "" : "s");
        } else { /* seeded shuffle of the type's rows; the first nh are held out */
            nh = (int)floor(holdout * n + 0.5);
            if (nh > n - 2) nh = n - 2;
            uint64_t s = seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(t + 1));
            for (int i = n - 1; i > 0; i--) {
                int j = (int)(splitmix64_next(&s) % (uint64_t)(i + 1));
                calib_row *tmp = sel[i];
                sel[i] = sel[j];
                sel[j] = tmp;
            }
            for (int i = 0; i < nh; i++) sel[i]->holdout = 1;
        }
        ct->n_holdout = nh;
        ct->n_fit = n - nh;
        /* fit on the kept rows, in CSV order */
        int m = 0;
        for (int k = 0; k < r->n_rows; k++)
            if (r->rows[k].type == t && !r->rows[k].holdout) sel[m++] = &r->rows[k];
        if (fit_type(cl, t, sel, m, ct, err, errlen)) goto fail;
    }
    double sf = 0.0, sh = 0.0;
    for (int k = 0; k < r->n_rows; k++) {
        calib_row *w = &r->rows[k];
        predict(cl, r, w);
        double e = fabs(w->predicted - w->measured) / w->measured * 100.0;
        if (w->holdout) {
            sh += e;
            r->n_holdout++;
        } else {
            sf += e;
            r->n_fit++;
            r->types[w->type].mape_fit += e;
        }
    }
    for (int t = 0; t < r->n_types; t++)
        if (r->types[t].n_fit) r->types[t].mape_fit /= r->types[t].n_fit;
    r->mape_fit = r->n_fit ? sf / r->n_fit : 0.0;
    r->mape_holdout = r->n_holdout ? sh / r->n_holdout : 0.0;
    free(sel);
    return r;
fail:
    free(sel);
    calib_free(r);
    return NULL;
}

void calib_apply(const calib_result *r, model_cluster *cl) {
    for (int t = 0; t < r->n_types && t < cl->n_types; t++) {
        cl->types[t].flops *= r->types[t].factor[0];
        cl->types[t].io_bw *= r->types[t].factor[1];
        cl->types[t].net_bw *= r->types[t].factor[2];
    }
}
