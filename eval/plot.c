/* plot.c -- data files, gnuplot scripts and PNGs (see plot.h).
 *
 * Each plot is written as NAME.dat (tab-separated) and NAME.gp, then
 * `gnuplot NAME.gp` runs in the plots folder with its output sent to
 * gnuplot.log. Series titles are written into the script (not read from
 * the data), with quotes and backslashes replaced, and the terminal is
 * `noenhanced` so that underscores in names print as they are.
 */
#include "eval/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"

#define PLOT_LOG_MAX ((size_t)64 << 20) /* the longest learning-curve log read */
#define MAX_GROUPS 60 /* bars per histogram: more are cut, and the title says so */

typedef struct {
    char dir[EVAL_PATH_MAX]; /* OUT/plots */
    const eval_spec *spec;
    const eval_instance *inst;
    int n_inst;
    const eval_row *rows;
    int n_rows;
    eval_plots *made;
    char *err;
    size_t errlen;
} plot_ctx;

/* clean copies s with quotes and backslashes replaced, for gnuplot strings. */
static void clean(char *out, size_t len, const char *s) {
    size_t i = 0;
    for (; *s && i + 1 < len; s++) out[i++] = (*s == '"' || *s == '\\') ? '\'' : *s;
    out[i] = '\0';
}

static FILE *open_in(plot_ctx *p, const char *name, const char *ext) {
    char path[EVAL_PATH_MAX + 96];
    snprintf(path, sizeof path, "%s/%s.%s", p->dir, name, ext);
    FILE *f = fopen(path, "w");
    if (!f) snprintf(p->err, p->errlen, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

void eval_plot_header(FILE *g, const char *name, int w, int h, const char *title) {
    char t[400];
    clean(t, sizeof t, title);
    fprintf(g, "# %s.gp -- written by strata; run `gnuplot %s.gp` in this folder\n"
               "set terminal pngcairo size %d,%d font \"sans,10\" noenhanced\n"
               "set output '%s.png'\n"
               "set title \"%s\" font \"sans,12\"\n"
               "set datafile separator \"\\t\"\n"
               "set datafile missing \"?\"\n"
               "set grid ytics lc rgb \"#dddddd\"\n"
               "set border 3\nset tics nomirror\n", name, name, w, h, name, t);
    /* 16 distinct colours (the default palette repeats after 8) */
    static const char *colours[16] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                      "#393b79", "#ad494a", "#637939", "#ce6dbd", "#fdd0a2",
                                      "#000000"};
    for (int i = 0; i < 16; i++)
        fprintf(g, "set linetype %d lc rgb \"%s\" lw 1.5\n", i + 1, colours[i]);
    fprintf(g, "set linetype cycle 16\n");
}

int eval_plot_render(const char *dir, const char *name, const char *title, eval_plots *made,
                     char *err, size_t errlen) {
    char gp[96], log[EVAL_PATH_MAX + 32];
    snprintf(gp, sizeof gp, "%s.gp", name);
    snprintf(log, sizeof log, "%s/gnuplot.log", dir);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "gnuplot: %s", strerror(errno));
            return -1;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, errlen, "gnuplot not found: install Debian's gnuplot-nox "
                     "(scripts/setup.sh does)");
        else
            snprintf(err, errlen, "gnuplot failed on %s/%s (see %s)", dir, gp, log);
        return -1;
    }
    eval_plots *m = made;
    if (m->n < EVAL_MAX_PLOTS) {
        snprintf(m->file[m->n], sizeof m->file[0], "plots/%.40s.png", name);
        snprintf(m->title[m->n], sizeof m->title[0], "%s", title);
        m->n++;
    }
    return 0;
}

/* render runs gnuplot on NAME.gp in the plots folder and lists NAME.png. */
static int render(plot_ctx *p, const char *name, const char *title) {
    return eval_plot_render(p->dir, name, title, p->made, p->err, p->errlen);
}

static void skip(plot_ctx *p, const char *what) {
    size_t l = strlen(p->made->skipped);
    snprintf(p->made->skipped + l, sizeof p->made->skipped - l, "%s%s", l ? "; " : "", what);
}

/* ---------------------------------------------------------------------------
 * Clustered bars: one group per instance, one bar per method
 * ------------------------------------------------------------------------ */

typedef double (*row_metric)(const plot_ctx *p, const eval_row *r); /* NAN: no figure */

/* training cost of the plan-making methods (Coach's picks price one
 * configuration of one type: they have their own gap plot) */
static double m_cost(const plot_ctx *p, const eval_row *r) {
    if (p->spec->methods[r->method].family == EVAL_FAM_FIT) return NAN;
    return r->objective == EVAL_OBJ_COST && r->feasible ? r->value : NAN;
}
static double m_jct(const plot_ctx *p, const eval_row *r) {
    (void)p;
    return r->objective == EVAL_OBJ_JCT && r->feasible ? r->value / 3600.0 : NAN;
}
/* placed throughput over the job's target: 1 is just enough */
static double m_tp(const plot_ctx *p, const eval_row *r) {
    if (!isfinite(r->cross_node) || r->job < 0) return NAN;
    return r->throughput / p->inst[r->inst].run->jobs[r->job].min_throughput;
}
static double m_node(const plot_ctx *p, const eval_row *r) {
    (void)p;
    return r->cross_node / 1e6;
}
static double m_zone(const plot_ctx *p, const eval_row *r) {
    (void)p;
    return r->cross_zone / 1e6;
}

static int bars(plot_ctx *p, const char *name, const char *title, const char *xlabel,
                const char *ylabel, row_metric metric, int allow_log, const char *line) {
    int use[EVAL_MAX_METHODS] = {0}, nm = 0;
    int *group = calloc((size_t)(p->n_inst > 0 ? p->n_inst : 1), sizeof *group);
    if (!group) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    int ng = 0;
    for (int i = 0; i < p->n_rows; i++)
        if (isfinite(metric(p, &p->rows[i]))) {
            if (!use[p->rows[i].method]) nm++;
            use[p->rows[i].method] = 1;
            group[p->rows[i].inst] = 1;
        }
    for (int i = 0; i < p->n_inst; i++) ng += group[i];
    if (nm == 0) {
        free(group);
        return 1;
    }
    int cut = ng > MAX_GROUPS;
    FILE *d = open_in(p, name, "dat");
    if (!d) {
        free(group);
        return -1;
    }
    double lo = INFINITY, hi = 0.0;
    fprintf(d, "# instance");
    for (int m = 0; m < p->spec->n_methods; m++)
        if (use[m]) fprintf(d, "\t%s", p->spec->methods[m].name);
    fprintf(d, "\n");
    int shown = 0;
    for (int ii = 0; ii < p->n_inst && shown < MAX_GROUPS; ii++) {
        if (!group[ii]) continue;
        shown++;
        fprintf(d, "%s", p->inst[ii].name);
        for (int m = 0; m < p->spec->n_methods; m++) {
            if (!use[m]) continue;
            double s = 0.0;
            int k = 0;
            for (int i = 0; i < p->n_rows; i++)
                if (p->rows[i].inst == ii && p->rows[i].method == m &&
                    isfinite(metric(p, &p->rows[i]))) {
                    s += metric(p, &p->rows[i]);
                    k++;
                }
            if (k) {
                double v = s / k;
                fprintf(d, "\t%.10g", v);
                if (v > 0 && v < lo) lo = v;
                if (v > hi) hi = v;
            } else {
                fprintf(d, "\t?");
            }
        }
        fprintf(d, "\n");
    }
    fclose(d);
    free(group);
    FILE *g = open_in(p, name, "gp");
    if (!g) return -1;
    int w = 260 + shown * (nm * 14 + 28);
    w = w < 900 ? 900 : w > 2600 ? 2600 : w;
    char t[300];
    snprintf(t, sizeof t, "%s (%s)%s", title, p->spec->name,
             cut ? " - first 60 instances" : "");
    eval_plot_header(g, name, w, 620, t);
    int logy = allow_log && lo < INFINITY && hi / lo > 30.0;
    int zeros = 0; /* a 0 has no bar on a log scale: say so */
    for (int i = 0; logy && i < p->n_rows; i++)
        zeros |= metric(p, &p->rows[i]) == 0.0;
    fprintf(g, "set style data histogram\nset style histogram clustered gap 1\n"
               "set style fill solid 0.85 border rgb \"#333333\"\nset boxwidth 0.9\n"
               "set xtics rotate by -35 left\n"
               "set xlabel \"%s%s\"\nset ylabel \"%s%s\"\n"
               "set key outside right top vertical title \"method\"\n", xlabel,
            zeros ? "; no bar: 0" : "", ylabel, logy ? ", log scale" : "");
    if (line && lo > 0.5) lo = 0.5; /* keep the reference line (at 1) in view */
    if (logy) fprintf(g, "set logscale y\nset yrange [%.6g:%.6g]\n", lo / 2.0, hi * 2.0);
    else fprintf(g, "set yrange [0:*]\n");
    fprintf(g, "plot \\\n");
    int col = 2, first = 1;
    for (int m = 0; m < p->spec->n_methods; m++) {
        if (!use[m]) continue;
        char nm_clean[MODEL_NAME_MAX];
        clean(nm_clean, sizeof nm_clean, p->spec->methods[m].name);
        fprintf(g, "%s  '%s.dat' using %d:xtic(1) title \"%s\"", first ? "" : ", \\\n", name,
                col++, nm_clean);
        first = 0;
    }
    if (line) fprintf(g, ", \\\n  %s", line);
    fprintf(g, "\n");
    fclose(g);
    return render(p, name, title);
}

/* ---------------------------------------------------------------------------
 * Gap distribution: a box per method
 * ------------------------------------------------------------------------ */

static int gaps(plot_ctx *p) {
    const char *name = "gap_by_method";
    int n_series = 0, idx[EVAL_MAX_METHODS];
    FILE *d = open_in(p, name, "dat");
    if (!d) return -1;
    for (int m = 0; m < p->spec->n_methods; m++) {
        int k = 0;
        if (p->spec->methods[m].family == EVAL_FAM_PLACE) continue; /* its plan's gap */
        for (int i = 0; i < p->n_rows; i++)
            if (p->rows[i].method == m && isfinite(p->rows[i].gap)) {
                if (k == 0) fprintf(d, "%s# %s\n", n_series ? "\n\n" : "", p->spec->methods[m].name);
                fprintf(d, "%d\t%.10g\n", n_series + 1, 100.0 * p->rows[i].gap);
                k++;
            }
        if (k) idx[n_series++] = m;
    }
    fclose(d);
    if (n_series == 0) return 1;
    FILE *g = open_in(p, name, "gp");
    if (!g) return -1;
    char t[300];
    snprintf(t, sizeof t, "Gap to exact per method (%s)", p->spec->name);
    int w = 240 + n_series * 90;
    eval_plot_header(g, name, w < 900 ? 900 : w > 2400 ? 2400 : w, 600, t);
    fprintf(g, "set style data boxplot\nset style boxplot outliers pointtype 7\nset pointsize 0.6\n"
               "set style fill solid 0.5 border -1\nset boxwidth 0.6\n"
               "set xlabel \"method\"\nset ylabel \"gap to the exact reference (%%)\"\n"
               "set autoscale yfixmin\nset offsets 0, 0, graph 0.05, graph 0.05\n"
               "set key outside right top vertical title \"method\"\n"
               "set xrange [0.3:%g]\nset xtics (", n_series + 0.7);
    for (int s = 0; s < n_series; s++) {
        char c[MODEL_NAME_MAX];
        clean(c, sizeof c, p->spec->methods[idx[s]].name);
        fprintf(g, "%s\"%s\" %d", s ? ", " : "", c, s + 1);
    }
    fprintf(g, ")\nset xtics rotate by -30 left\nplot \\\n");
    for (int s = 0; s < n_series; s++) {
        char c[MODEL_NAME_MAX];
        clean(c, sizeof c, p->spec->methods[idx[s]].name);
        fprintf(g, "%s  '%s.dat' index %d using (%d):2 title \"%s\"", s ? ", \\\n" : "", name, s,
                s + 1, c);
    }
    fprintf(g, "\n");
    fclose(g);
    return render(p, name, "Distribution of the gap to exact, per method");
}

/* ---------------------------------------------------------------------------
 * Solve time against layers
 * ------------------------------------------------------------------------ */

static int times(plot_ctx *p) {
    const char *name = "time_vs_layers";
    int n_series = 0, idx[EVAL_MAX_METHODS];
    FILE *d = open_in(p, name, "dat");
    if (!d) return -1;
    double lo = INFINITY;
    for (int m = 0; m < p->spec->n_methods; m++) {
        int k = 0;
        for (int i = 0; i < p->n_rows; i++)
            if (p->rows[i].method == m && isfinite(p->rows[i].seconds) && p->rows[i].seconds > 0) {
                if (k == 0) fprintf(d, "%s# %s\n", n_series ? "\n\n" : "", p->spec->methods[m].name);
                fprintf(d, "%d\t%.6g\n", p->rows[i].layers, p->rows[i].seconds);
                if (p->rows[i].seconds < lo) lo = p->rows[i].seconds;
                k++;
            }
        if (k) idx[n_series++] = m;
    }
    fclose(d);
    if (n_series == 0) return 1;
    FILE *g = open_in(p, name, "gp");
    if (!g) return -1;
    char t[300];
    snprintf(t, sizeof t, "Solve time against the job's layers (%s)", p->spec->name);
    eval_plot_header(g, name, 1000, 620, t);
    fprintf(g, "set logscale y\nset format y \"%%g\"\nset xlabel \"layers in the job (count; a batch: all its jobs)\"\n"
               "set ylabel \"solve time (s, log scale)\"\n"
               "set key outside right top vertical title \"method\"\nset offsets 1, 1, 0, 0\n"
               "plot \\\n");
    for (int s = 0; s < n_series; s++) {
        char c[MODEL_NAME_MAX];
        clean(c, sizeof c, p->spec->methods[idx[s]].name);
        /* a small offset per method keeps coinciding points apart */
        double dx = (s - (n_series - 1) / 2.0) * 0.12;
        fprintf(g, "%s  '%s.dat' index %d using ($1%+.3f):2 with points pointtype %d "
                   "pointsize 1.1 title \"%s\"", s ? ", \\\n" : "", name, s, dx, 4 + 2 * (s % 6), c);
    }
    fprintf(g, "\n");
    fclose(g);
    return render(p, name, "Solve time against layers");
}

/* ---------------------------------------------------------------------------
 * Learning curve from a training log
 * ------------------------------------------------------------------------ */

/* split cuts line into fields at sep (or at runs of blanks when sep is 0). */
static int split(char *line, char sep, char **f, int max) {
    int n = 0;
    char *s = line;
    while (n < max) {
        if (!sep)
            while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        f[n++] = s;
        char *e = sep ? strchr(s, sep) : s + strcspn(s, " \t");
        if (!e || !*e) break;
        *e = '\0';
        s = e + 1;
    }
    return n;
}

/* is_number: a finite number ("nan" and "inf" cells are left out). */
static int is_number(const char *s) {
    char *end;
    double v = strtod(s, &end);
    return end != s && (*end == '\0' || *end == ' ') && isfinite(v);
}

static int curve(plot_ctx *p) {
    const eval_curve_spec *cs = &p->spec->curve;
    const char *name = "learning_curve";
    char *in, why[256];
    size_t in_len;
    if (file_read(cs->file, PLOT_LOG_MAX, &in, &in_len, NULL, why, sizeof why)) {
        snprintf(p->err, p->errlen, "learning_curve.log: %s: %s", cs->file, why);
        return -1;
    }
    FILE *d = open_in(p, name, "dat");
    if (!d) {
        free(in);
        return -1;
    }
    char line[8192], head_x[64] = "", head_y[64] = "";
    char sep = 0;
    int cx = 0, cy = 1, have_head = 0, points = 0;
    for (const char *at = in; *at;) { /* line by line, each cut at 8191 bytes */
        size_t l = strcspn(at, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(l < sizeof line ? l : sizeof line - 1), at);
        at += l + (at[l] == '\n');
        line[strcspn(line, "\r\n")] = '\0';
        char *s = line;
        while (*s == ' ' || *s == '#') s++;
        if (!*s) continue;
        if (!have_head && !sep) sep = strchr(s, ',') ? ',' : strchr(s, '\t') ? '\t' : 0;
        char *f[128];
        int n = split(s, sep, f, 128);
        if (n < 2) continue;
        if (!have_head && !is_number(f[0])) { /* the header */
            have_head = 1;
            for (int i = 0; i < n; i++) {
                if (cs->x[0] && !strcmp(f[i], cs->x)) cx = i;
                if (cs->y[0] && !strcmp(f[i], cs->y)) cy = i;
            }
            if ((cs->x[0] && strcmp(f[cx], cs->x)) || (cs->y[0] && strcmp(f[cy], cs->y))) {
                snprintf(p->err, p->errlen, "learning_curve: %s has no column '%s'", cs->file,
                         cs->x[0] && strcmp(f[cx], cs->x) ? cs->x : cs->y);
                free(in);
                fclose(d);
                return -1;
            }
            snprintf(head_x, sizeof head_x, "%.63s", f[cx]);
            snprintf(head_y, sizeof head_y, "%.63s", f[cy]);
            continue;
        }
        have_head = 1;
        if (cx < n && cy < n && is_number(f[cx]) && is_number(f[cy])) {
            fprintf(d, "%s\t%s\n", f[cx], f[cy]);
            points++;
        }
    }
    free(in);
    fclose(d);
    if (points == 0) {
        snprintf(p->err, p->errlen, "learning_curve: %s holds no data rows", cs->file);
        return -1;
    }
    FILE *g = open_in(p, name, "gp");
    if (!g) return -1;
    const char *stem = strrchr(cs->file, '/');
    stem = stem ? stem + 1 : cs->file;
    char t[300], xl[200], yl[200], ser[100];
    snprintf(t, sizeof t, "Learning curve: %.100s (%s)", stem, p->spec->name);
    clean(xl, sizeof xl, cs->x_label[0] ? cs->x_label : head_x[0] ? head_x : "step");
    clean(yl, sizeof yl, cs->y_label[0] ? cs->y_label : head_y[0] ? head_y : "value");
    clean(ser, sizeof ser, head_y[0] ? head_y : "value");
    eval_plot_header(g, name, 1000, 600, t);
    fprintf(g, "set xlabel \"%s\"\nset ylabel \"%s\"\nset key top right\n"
               "plot '%s.dat' using 1:2 with lines linewidth 2 title \"%s\"\n", xl, yl, name,
            ser);
    fclose(g);
    return render(p, name, "Learning curve");
}

/* ---------------------------------------------------------------------------
 * Entry point
 * ------------------------------------------------------------------------ */

int eval_plots_make(const char *out_dir, const eval_spec *spec, const eval_instance *inst,
                    int n_inst, const eval_row *rows, int n_rows, int no_times,
                    eval_plots *made, char *err, size_t errlen) {
    memset(made, 0, sizeof *made);
    plot_ctx p = {.spec = spec, .inst = inst, .n_inst = n_inst, .rows = rows, .n_rows = n_rows,
                  .made = made, .err = err, .errlen = errlen};
    snprintf(p.dir, sizeof p.dir, "%s/plots", out_dir);
    if (eval_mkdirs(p.dir) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", p.dir, strerror(errno));
        return -1;
    }
    char log[EVAL_PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/gnuplot.log", p.dir);
    unlink(log);
    int rc;
    if ((rc = bars(&p, "cost_by_method", "Training cost by method",
                   "instance (cluster/model); no bar: no feasible plan",
                   "training cost ($)", m_cost, 1, NULL)) < 0)
        return -1;
    if ((rc = bars(&p, "jct_by_method", "Sum of completion times by method",
                   "batch of jobs; no bar: no allocation meets every target",
                   "sum of completion times (h)", m_jct, 1, NULL)) < 0)
        return -1;
    if ((rc = gaps(&p)) < 0) return -1;
    if (rc == 1)
        skip(&p, "gap_by_method (no plan, policy, Coach or several-jobs row has a gap; "
                 "placements are compared by throughput and traffic)");
    if (no_times) skip(&p, "time_vs_layers (--no-times)");
    else if (times(&p) < 0) return -1;
    if ((rc = bars(&p, "throughput_by_method", "Throughput over the placed links by method",
                   "instance (cluster/model); below the dashed line: misses the target",
                   "throughput after placement / the job's target R (ratio)", m_tp, 1,
                   "1 with lines dashtype 2 lc rgb \"#000000\" lw 1.5 title \"target R\"")) < 0)
        return -1;
    if (rc == 0) {
        if (bars(&p, "cross_node_by_method", "Cross-node traffic by method",
                 "instance (cluster/model)", "cross-node traffic per step (MB)", m_node, 1,
                 NULL) < 0 ||
            bars(&p, "cross_zone_by_method", "Cross-zone traffic by method",
                 "instance (cluster/model)", "cross-zone traffic per step (MB)", m_zone, 0,
                 NULL) < 0)
            return -1;
    }
    if (spec->curve.file[0] && curve(&p) < 0) return -1;
    return 0;
}
