/* report.c -- results.csv and summary.md (see report.h).
 *
 * Tables are built cell by cell as text, then printed as Markdown with
 * every column padded to its widest cell, so that summary.md reads in a
 * terminal as well as rendered. Means are over the rows that have the
 * figure (a gap exists only for feasible rows with a reference).
 */
#include "eval/report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "solvers/placers.h"

static const char *CSV_HEADER =
    "instance,cluster,job,layers,method,family,seed,feasible,objective,cost,throughput,time,"
    "plan_cost,reference,gap,homogeneous,vs_homogeneous,cross_node_bytes,cross_zone_bytes,"
    "solve_seconds,note";

const char *eval_csv_header(void) { return CSV_HEADER; }

/* ---------------------------------------------------------------------------
 * CSV
 * ------------------------------------------------------------------------ */

/* csv_text writes s, quoted when it holds a comma, a quote or a newline. */
static void csv_text(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v) {
    fputc(',', f);
    if (isfinite(v)) fprintf(f, "%.12g", v);
}

static const char *job_name(const eval_instance *in, const eval_row *r) {
    return r->job >= 0 ? in->run->jobs[r->job].name : "*";
}

int eval_write_csv(const char *path, const eval_spec *spec, const eval_instance *inst,
                   const eval_row *rows, int n_rows, int no_times, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "%s\n", CSV_HEADER);
    for (int i = 0; i < n_rows; i++) {
        const eval_row *r = &rows[i];
        const eval_instance *in = &inst[r->inst];
        const eval_method *m = &spec->methods[r->method];
        csv_text(f, in->name);
        fputc(',', f);
        csv_text(f, in->cluster);
        fputc(',', f);
        csv_text(f, job_name(in, r));
        fprintf(f, ",%d,", r->layers);
        csv_text(f, m->name);
        fprintf(f, ",%s,%llu,%d,%s", eval_family_name(m->family), (unsigned long long)r->seed,
                r->feasible, r->objective == EVAL_OBJ_JCT ? "jct" : "cost");
        csv_num(f, r->cost);
        csv_num(f, r->throughput);
        csv_num(f, r->time);
        csv_num(f, r->plan_cost);
        csv_num(f, r->reference);
        csv_num(f, r->gap);
        csv_num(f, r->homogeneous);
        csv_num(f, r->vs_homogeneous);
        csv_num(f, r->cross_node);
        csv_num(f, r->cross_zone);
        csv_num(f, no_times ? NAN : r->seconds);
        fputc(',', f);
        csv_text(f, r->note);
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Text tables
 * ------------------------------------------------------------------------ */

/* (eval_table: see report.h) */
void eval_table_init(eval_table *t, int cols, const int *right) {
    memset(t, 0, sizeof *t);
    t->cols = cols;
    t->right = right;
}

/* eval_table_row appends one row of t->cols cells (copies). Returns 0 or -1. */
int eval_table_row(eval_table *t, char **cells) {
    if (t->rows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        char **nc = realloc(t->cell, sizeof *nc * (size_t)(cap * t->cols));
        if (!nc) return -1;
        t->cell = nc;
        t->cap = cap;
    }
    for (int c = 0; c < t->cols; c++) {
        char *s = strdup(cells[c] ? cells[c] : "");
        if (!s) return -1;
        t->cell[t->rows * t->cols + c] = s;
    }
    t->rows++;
    return 0;
}

void eval_table_free(eval_table *t) {
    for (int i = 0; i < t->rows * t->cols; i++) free(t->cell[i]);
    free(t->cell);
}

/* Column width in characters (UTF-8 continuation bytes do not count). */
static int width(const char *s) {
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void pad(FILE *f, int n) {
    while (n-- > 0) fputc(' ', f);
}

void eval_table_print(FILE *f, const eval_table *t) {
    int w[64] = {0};
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->cols && c < 64; c++) {
            int cw = width(t->cell[r * t->cols + c]);
            if (cw > w[c]) w[c] = cw;
        }
    for (int c = 0; c < t->cols; c++)
        if (w[c] < 3) w[c] = 3;
    for (int r = 0; r < t->rows; r++) {
        fputc('|', f);
        for (int c = 0; c < t->cols; c++) {
            const char *s = t->cell[r * t->cols + c];
            int gap = w[c] - width(s);
            fputc(' ', f);
            if (t->right && t->right[c] && r > 0) pad(f, gap);
            fputs(s, f);
            if (!(t->right && t->right[c] && r > 0)) pad(f, gap);
            fputs(" |", f);
        }
        fputc('\n', f);
        if (r == 0) {
            fputc('|', f);
            for (int c = 0; c < t->cols; c++) {
                fputc(' ', f);
                for (int k = 0; k < w[c] - 1; k++) fputc('-', f);
                fputc(t->right && t->right[c] ? ':' : '-', f);
                fputs(" |", f);
            }
            fputc('\n', f);
        }
    }
    fputc('\n', f);
}

/* ---------------------------------------------------------------------------
 * Figures
 * ------------------------------------------------------------------------ */

typedef struct {
    double sum, max;
    int n;
} stat;

static void stat_add(stat *s, double v) {
    if (!isfinite(v)) return;
    if (s->n == 0 || v > s->max) s->max = v;
    s->sum += v;
    s->n++;
}

static double stat_mean(const stat *s) { return s->n ? s->sum / s->n : NAN; }

static void fmt(char *buf, size_t len, const char *f, double v) {
    if (!isfinite(v)) snprintf(buf, len, "-");
    else snprintf(buf, len, f, v);
}

static void fmt_pct(char *buf, size_t len, double v) {
    if (!isfinite(v)) snprintf(buf, len, "-");
    else if (fabs(v) < 5e-5) snprintf(buf, len, "0.00%%");
    else snprintf(buf, len, "%+.2f%%", 100.0 * v);
}

/* Byte counts as the report has always written them: lower-case kB, up
 * to TB, "-" when not finite. */
static const bytes_style REPORT_BYTES = {1000.0, {"B", "kB", "MB", "GB", "TB", NULL}, 3, 1};

static void fmt_bytes(char *buf, size_t len, double b) { bytes_format(buf, len, b, &REPORT_BYTES); }

static void fmt_seconds(char *buf, size_t len, double s) {
    if (!isfinite(s)) snprintf(buf, len, "-");
    else if (s >= 1.0) snprintf(buf, len, "%.2f s", s);
    else if (s >= 1e-3) snprintf(buf, len, "%.2f ms", s * 1e3);
    else snprintf(buf, len, "%.0f us", s * 1e6);
}

/* fmt_value shows an objective value: dollars, or hours for jct. */
static void fmt_value(char *buf, size_t len, int objective, double v) {
    if (!isfinite(v)) snprintf(buf, len, "-");
    else if (objective == EVAL_OBJ_JCT) snprintf(buf, len, "%.2f h", v / 3600.0);
    else snprintf(buf, len, "$%.2f", v);
}

/* spread_row finds the row of the spread placement (same plan solver)
 * with the same instance, job and seed as r, or NULL. */
static const eval_row *spread_row(const eval_spec *spec, const eval_row *rows, int n,
                                  const eval_row *r) {
    const eval_method *m = &spec->methods[r->method];
    for (int i = 0; i < n; i++) {
        const eval_method *o = &spec->methods[rows[i].method];
        if (o->family == EVAL_FAM_PLACE && o->placer == PLACER_SPREAD &&
            (m->family != EVAL_FAM_PLACE || o->solver == m->solver) && rows[i].inst == r->inst &&
            rows[i].job == r->job && rows[i].seed == r->seed)
            return &rows[i];
    }
    return NULL;
}

/* ---------------------------------------------------------------------------
 * summary.md
 * ------------------------------------------------------------------------ */

static void method_table(FILE *f, const eval_spec *spec, const eval_row *rows, int n,
                         int no_times) {
    int has_spread = 0, has_placed = 0, has_homog = 0, has_ref = 0, has_gap = 0;
    for (int i = 0; i < n; i++) {
        const eval_method *m = &spec->methods[rows[i].method];
        has_spread |= m->family == EVAL_FAM_PLACE && m->placer == PLACER_SPREAD;
        has_placed |= isfinite(rows[i].cross_node);
        int judged = m->family != EVAL_FAM_PLACE; /* a placement's gap is its plan's */
        has_homog |= judged && isfinite(rows[i].vs_homogeneous);
        has_gap |= judged && isfinite(rows[i].gap);
        has_ref |= isfinite(rows[i].reference);
    }
    static const int right[] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const char *head[14];
    int nc = 0;
    head[nc++] = "method";
    head[nc++] = "kind";
    head[nc++] = "cells";
    head[nc++] = "feasible";
    if (has_ref) head[nc++] = "feasible where exact found one";
    if (has_gap) head[nc++] = "mean gap";
    if (has_gap) head[nc++] = "worst gap";
    if (has_homog) head[nc++] = "cost / homogeneous";
    if (has_placed) head[nc++] = "cross-node / step";
    if (has_placed && has_spread) head[nc++] = "throughput / spread (geo. mean)";
    if (has_placed && has_spread) head[nc++] = "cross-node / spread (total)";
    if (has_placed && has_spread) head[nc++] = "cross-zone / spread (total)";
    if (!no_times) head[nc++] = "mean time";
    if (!no_times) head[nc++] = "max time";
    eval_table t;
    eval_table_init(&t, nc, right);
    eval_table_row(&t, (char **)head);
    for (int mi = 0; mi < spec->n_methods; mi++) {
        const eval_method *m = &spec->methods[mi];
        stat gap = {0}, vh = {0}, sec = {0}, cn = {0}, rt = {0};
        double node_m = 0, node_s = 0, zone_m = 0, zone_s = 0; /* method, spread: sums */
        int cells = 0, feas = 0, solvable = 0, feas_solvable = 0;
        for (int i = 0; i < n; i++) {
            const eval_row *r = &rows[i];
            if (r->method != mi) continue;
            cells++;
            feas += r->feasible;
            if (isfinite(r->reference)) {
                solvable++;
                feas_solvable += r->feasible;
            }
            if (m->family != EVAL_FAM_PLACE) {
                stat_add(&gap, r->gap);
                stat_add(&vh, r->vs_homogeneous);
            }
            stat_add(&sec, r->seconds);
            stat_add(&cn, r->cross_node);
            const eval_row *sp = isfinite(r->cross_node) ? spread_row(spec, rows, n, r) : NULL;
            if (sp && isfinite(sp->throughput) && sp->throughput > 0 && r->throughput > 0)
                stat_add(&rt, log(r->throughput / sp->throughput));
            if (sp && isfinite(sp->cross_node) && isfinite(sp->cross_zone)) {
                node_m += r->cross_node;
                node_s += sp->cross_node;
                zone_m += r->cross_zone;
                zone_s += sp->cross_zone;
            }
        }
        if (cells == 0) continue;
        char c[14][64];
        char *cell[14];
        int k = 0;
        snprintf(c[k++], 64, "%s", m->name);
        snprintf(c[k++], 64, "%s", eval_family_name(m->family));
        snprintf(c[k++], 64, "%d", cells);
        snprintf(c[k++], 64, "%d/%d (%.0f%%)", feas, cells, 100.0 * feas / cells);
        if (has_ref && solvable)
            snprintf(c[k++], 64, "%d/%d (%.0f%%)", feas_solvable, solvable,
                     100.0 * feas_solvable / solvable);
        else if (has_ref)
            snprintf(c[k++], 64, "-");
        if (has_gap) fmt_pct(c[k++], 64, stat_mean(&gap));
        if (has_gap) fmt_pct(c[k++], 64, gap.n ? gap.max : NAN);
        if (has_homog) fmt(c[k++], 64, "%.3f", stat_mean(&vh));
        if (has_placed) fmt_bytes(c[k++], 64, stat_mean(&cn));
        if (has_placed && has_spread) fmt(c[k++], 64, "%.3f", exp(stat_mean(&rt)));
        if (has_placed && has_spread) fmt(c[k++], 64, "%.3f", node_s > 0 ? node_m / node_s : NAN);
        if (has_placed && has_spread) fmt(c[k++], 64, "%.3f", zone_s > 0 ? zone_m / zone_s : NAN);
        if (!no_times) fmt_seconds(c[k++], 64, stat_mean(&sec));
        if (!no_times) fmt_seconds(c[k++], 64, sec.n ? sec.max : NAN);
        for (int j = 0; j < k; j++) cell[j] = c[j];
        eval_table_row(&t, cell);
    }
    eval_table_print(f, &t);
    eval_table_free(&t);
}

/* which figure a pivot shows */
typedef enum { PV_VALUE, PV_THROUGHPUT, PV_NODE, PV_ZONE } pivot_kind;

static double pivot_of(const eval_row *r, pivot_kind k) {
    switch (k) {
    case PV_VALUE: return r->feasible ? r->value : NAN;
    case PV_THROUGHPUT: return r->throughput;
    case PV_NODE: return r->cross_node;
    case PV_ZONE: return r->cross_zone;
    }
    return NAN;
}

/* pivot prints one row per instance and job, one column per method with
 * rows passing `want`, each cell the mean over seeds of the figure. */
static void pivot(FILE *f, const eval_spec *spec, const eval_instance *inst, int n_inst,
                  const eval_row *rows, int n, int objective, pivot_kind kind, int placed_only) {
    int use[EVAL_MAX_METHODS] = {0}, nm = 0;
    for (int i = 0; i < n; i++) {
        const eval_row *r = &rows[i];
        if (r->objective != objective || (placed_only && !isfinite(r->cross_node))) continue;
        if (!use[r->method]) nm++;
        use[r->method] = 1;
    }
    if (nm == 0) return;
    int right[EVAL_MAX_METHODS + 2];
    const char *head[EVAL_MAX_METHODS + 2];
    int nc = 0;
    right[nc] = 0;
    head[nc++] = objective == EVAL_OBJ_JCT ? "instance" : "instance / job";
    int with_ref = kind == PV_VALUE;
    if (with_ref) {
        right[nc] = 1;
        head[nc++] = "reference";
    }
    for (int m = 0; m < spec->n_methods; m++)
        if (use[m]) {
            right[nc] = 1;
            head[nc++] = spec->methods[m].name;
        }
    eval_table t;
    eval_table_init(&t, nc, right);
    eval_table_row(&t, (char **)head);
    for (int ii = 0; ii < n_inst; ii++) {
        int any = 0;
        for (int i = 0; i < n && !any; i++)
            any = rows[i].inst == ii && rows[i].objective == objective && use[rows[i].method] &&
                  (!placed_only || isfinite(rows[i].cross_node));
        if (!any) continue;
        char c[EVAL_MAX_METHODS + 2][96];
        char *cell[EVAL_MAX_METHODS + 2];
        int k = 0;
        snprintf(c[k++], 96, "%.95s", inst[ii].name);
        if (with_ref) {
            double ref = NAN;
            for (int i = 0; i < n && !isfinite(ref); i++)
                if (rows[i].inst == ii && rows[i].objective == objective) ref = rows[i].reference;
            fmt_value(c[k++], 96, objective, ref);
        }
        for (int m = 0; m < spec->n_methods; m++) {
            if (!use[m]) continue;
            stat s = {0};
            int cells = 0;
            for (int i = 0; i < n; i++)
                if (rows[i].inst == ii && rows[i].method == m) {
                    cells++;
                    stat_add(&s, pivot_of(&rows[i], kind));
                }
            char v[64];
            double mean = stat_mean(&s);
            if (kind == PV_VALUE) fmt_value(v, sizeof v, objective, mean);
            else if (kind == PV_THROUGHPUT) fmt(v, sizeof v, "%.6g", mean);
            else fmt_bytes(v, sizeof v, mean);
            if (cells == 0) snprintf(c[k++], 96, " ");
            else if (s.n == 0 && kind == PV_VALUE) snprintf(c[k++], 96, "infeasible");
            else if (s.n < cells) snprintf(c[k++], 96, "%s (%d/%d)", v, s.n, cells);
            else snprintf(c[k++], 96, "%s", v);
        }
        for (int j = 0; j < k; j++) cell[j] = c[j];
        eval_table_row(&t, cell);
    }
    eval_table_print(f, &t);
    eval_table_free(&t);
}

int eval_write_summary(const char *path, const char *command, const eval_spec *spec,
                       const eval_instance *inst, int n_inst, const eval_row *rows, int n_rows,
                       const eval_plots *plots, int no_times, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# %s\n\n", spec->title[0] ? spec->title : spec->name);
    fprintf(f, "    %s\n\n", command);
    int n_jobs = 0, n_batches = 0;
    for (int i = 0; i < n_inst; i++) {
        if (inst[i].run->n_jobs > 1) n_batches++;
        else n_jobs++;
    }
    fprintf(f, "Config `%s`: %d instance%s (%d single-job, %d several-jobs), %d method%s, "
               "%d seed%s (", spec->path, n_inst, n_inst == 1 ? "" : "s", n_jobs, n_batches,
            spec->n_methods, spec->n_methods == 1 ? "" : "s", spec->n_seeds,
            spec->n_seeds == 1 ? "" : "s");
    for (int s = 0; s < spec->n_seeds && s < 10; s++)
        fprintf(f, "%s%llu", s ? ", " : "", (unsigned long long)spec->seeds[s]);
    fprintf(f, "%s), %d repeat%s: %d cells. Budgets: %g s wall clock, %ld evaluations.\n\n",
            spec->n_seeds > 10 ? ", ..." : "", spec->repeats, spec->repeats == 1 ? "" : "s",
            n_rows, spec->budget_s, spec->evals);
    fprintf(f, "Gap: the method's objective over the exact reference, minus one (plans: the "
               "exact plan's cost; Coach: the truly best (workers, ps); several jobs: the best "
               "choice among the candidates). Columns are defined in docs/eval.md.\n\n");

    fprintf(f, "## Per method\n\n");
    method_table(f, spec, rows, n_rows, no_times);

    int has_cost = 0, has_jct = 0, has_placed = 0;
    for (int i = 0; i < n_rows; i++) {
        has_cost |= rows[i].objective == EVAL_OBJ_COST;
        has_jct |= rows[i].objective == EVAL_OBJ_JCT;
        has_placed |= isfinite(rows[i].cross_node);
    }
    if (has_cost) {
        fprintf(f, "## Cost per instance (dollars, mean over seeds; (k/n): feasible in k of n "
                   "seeds)\n\n");
        pivot(f, spec, inst, n_inst, rows, n_rows, EVAL_OBJ_COST, PV_VALUE, 0);
    }
    if (has_jct) {
        fprintf(f, "## Sum of completion times per batch (hours)\n\n");
        pivot(f, spec, inst, n_inst, rows, n_rows, EVAL_OBJ_JCT, PV_VALUE, 0);
    }
    if (has_placed) {
        fprintf(f, "## Placed: throughput (samples/s)\n\n");
        pivot(f, spec, inst, n_inst, rows, n_rows, EVAL_OBJ_COST, PV_THROUGHPUT, 1);
        fprintf(f, "## Placed: cross-node traffic per step\n\n");
        pivot(f, spec, inst, n_inst, rows, n_rows, EVAL_OBJ_COST, PV_NODE, 1);
        fprintf(f, "## Placed: cross-zone traffic per step\n\n");
        pivot(f, spec, inst, n_inst, rows, n_rows, EVAL_OBJ_COST, PV_ZONE, 1);
    }
    int bad = 0;
    for (int i = 0; i < n_rows; i++) bad += !rows[i].feasible;
    if (bad) {
        /* one line per instance, method and reason, with the seeds it holds for */
        fprintf(f, "## Infeasible cells (%d)\n\n", bad);
        char *done = calloc((size_t)n_rows, 1);
        int groups = 0, left = 0;
        for (int i = 0; i < n_rows; i++) {
            const eval_row *r = &rows[i];
            if (r->feasible || (done && done[i])) continue;
            if (groups == 40 || !done) {
                left++;
                continue;
            }
            char seeds[128] = "";
            size_t used = 0;
            int k = 0;
            for (int j = i; j < n_rows; j++) {
                const eval_row *q = &rows[j];
                if (q->feasible || done[j] || q->inst != r->inst || q->method != r->method ||
                    q->job != r->job || strcmp(q->note, r->note))
                    continue;
                done[j] = 1;
                if (used + 24 < sizeof seeds)
                    used += (size_t)snprintf(seeds + used, sizeof seeds - used, "%s%llu",
                                             k ? ", " : "", (unsigned long long)q->seed);
                k++;
            }
            fprintf(f, "- %s, %s, seed%s %s: %s\n", inst[r->inst].name,
                    spec->methods[r->method].name, k == 1 ? "" : "s", seeds,
                    r->note[0] ? r->note : "no plan");
            groups++;
        }
        if (left) fprintf(f, "- ... and %d more cells (results.csv)\n", left);
        fprintf(f, "\n");
        free(done);
    }
    if (plots && (plots->n > 0 || plots->skipped[0])) {
        fprintf(f, "## Plots\n\n");
        for (int p = 0; p < plots->n; p++)
            fprintf(f, "- %s: [%s](%s)\n", plots->title[p], plots->file[p], plots->file[p]);
        if (plots->skipped[0]) fprintf(f, "- not made: %s\n", plots->skipped);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
