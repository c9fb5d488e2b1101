/* simulate.c -- `strata simulate`: a shared cluster over time (sim/).
 *
 *   strata simulate CONFIG [--method M]... [--out DIR] [--json] [--quiet]
 *                   [--generate N] [--load L] [--seed S] [--arrivals poisson|bursty]
 *                   [--preset philly|helios|pai] [--write-trace FILE] [--policy CKPT]
 *
 * Loads the simulate config (sim/trace.h), takes its trace file or draws a
 * trace with its generator (--generate N, or a config without trace:;
 * --load, --seed, --arrivals and --preset override the generate: section), plays it
 * with every method asked for (--method, repeatable; default the config's
 * methods:, else all) and prints a summary per method, or with --json one
 * object with each method's summary, occupancy curve and every job's
 * figures. --out DIR writes DIR/results.csv (one
 * row per method and job), DIR/summary.md and DIR/plots/ (busy units per
 * type over time, CDF of completion time) with eval's machinery.
 * --write-trace FILE saves the trace played (to ship a generated one).
 * Every method is also judged on the config's combined objective
 * (objective:, sim_weights). The policy method decodes greedily with the
 * checkpoint of --policy CKPT (default: the config's policy:).
 *
 * Exit status: 0 done; 1 a method failed or the plots could not be made;
 * 2 bad usage, a bad config or trace, an unwritable folder.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "eval/instances.h"
#include "eval/plot.h"
#include "eval/report.h"
#include "sim/methods.h"
#include "sim/sim.h"
#include "sim/spolicy.h"
#include "sim/trace.h"

#define SIM_USAGE                                                                             \
    "usage: strata simulate CONFIG [--method M]... [--out DIR] [--json] [--quiet]\n"          \
    "                       [--generate N] [--load L] [--seed S] [--arrivals poisson|bursty]\n" \
    "                       [--preset philly|helios|pai] [--write-trace FILE]\n"           \
    "                       [--policy CKPT]\n"
#define ERRLEN 4096

static const char *STATE_NAMES[] = {"pending", "waiting", "running", "done", "rejected", "starved"};

/* One method's run, kept for the reports. */
typedef struct {
    const sim_method *m;
    sim *s;
    sim_summary sum;
    double objective; /* the combined objective, $ */
} run_out;

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *units_json(const model_cluster *cl, const int *units) {
    json_t *o = json_object();
    for (int t = 0; t < cl->n_types; t++)
        if (units[t]) json_object_set_new(o, cl->types[t].name, json_integer(units[t]));
    return o;
}

static json_t *summary_json(const model_cluster *cl, const sim_summary *u, double objective) {
    json_t *o = json_object();
    json_object_set_new(o, "objective", num(objective));
    json_object_set_new(o, "jobs", json_integer(u->jobs));
    json_object_set_new(o, "done", json_integer(u->done));
    json_object_set_new(o, "rejected", json_integer(u->rejected));
    json_object_set_new(o, "starved", json_integer(u->starved));
    json_object_set_new(o, "deadline_jobs", json_integer(u->deadline_jobs));
    json_object_set_new(o, "missed_deadlines", json_integer(u->missed));
    json_object_set_new(o, "jct_mean", num(u->jct_mean));
    json_object_set_new(o, "jct_p50", num(u->jct_p50));
    json_object_set_new(o, "jct_p95", num(u->jct_p95));
    json_object_set_new(o, "queue_mean", num(u->queue_mean));
    json_object_set_new(o, "queue_p50", num(u->queue_p50));
    json_object_set_new(o, "queue_p95", num(u->queue_p95));
    json_object_set_new(o, "cost", num(u->cost));
    json_object_set_new(o, "makespan", num(u->makespan));
    json_t *ut = json_object();
    for (int t = 0; t < cl->n_types; t++) json_object_set_new(ut, cl->types[t].name, num(u->util[t]));
    json_object_set_new(o, "utilisation", ut);
    json_object_set_new(o, "utilisation_all", num(u->util_all));
    return o;
}

/* deadline_met: 1 met, 0 missed, -1 no deadline */
static int deadline_met(const sim_job *tj, const sim_outcome *r) {
    if (tj->deadline <= 0) return -1;
    return r->state == SIM_DONE && r->finish - tj->arrival <= tj->deadline;
}

static json_t *jobs_json(const sim_trace *t, const model_cluster *cl, const sim_outcome *out) {
    json_t *a = json_array();
    for (int j = 0; j < t->n_jobs; j++) {
        const sim_job *tj = &t->jobs[j];
        const sim_outcome *r = &out[j];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(tj->name));
        json_object_set_new(o, "model", json_string(t->models[tj->model].run->jobs[0].name));
        json_object_set_new(o, "state", json_string(STATE_NAMES[r->state]));
        json_object_set_new(o, "arrival", num(tj->arrival));
        json_object_set_new(o, "target", num(tj->target));
        json_object_set_new(o, "samples", num(tj->samples));
        json_object_set_new(o, "deadline", tj->deadline > 0 ? num(tj->deadline) : json_null());
        json_object_set_new(o, "start", num(r->start));
        json_object_set_new(o, "finish", num(r->finish));
        json_object_set_new(o, "queue_delay", num(r->start - tj->arrival));
        json_object_set_new(o, "completion_time", num(r->finish - tj->arrival));
        int met = deadline_met(tj, r);
        json_object_set_new(o, "deadline_met", met < 0 ? json_null() : json_boolean(met));
        if (r->state == SIM_DONE) {
            json_object_set_new(o, "throughput", num(r->throughput));
            json_object_set_new(o, "cost", num(r->cost));
            json_object_set_new(o, "plan", json_string(r->plan));
            json_object_set_new(o, "units", units_json(cl, r->units));
        }
        if (r->why[0]) json_object_set_new(o, "why", json_string(r->why));
        json_array_append_new(a, o);
    }
    return a;
}

/* occupancy_json: the busy units of each type over time, as parallel
 * arrays (from time[i] on, until time[i+1], busy[T][i] units of T). */
static json_t *occupancy_json(const sim *s, const model_cluster *cl) {
    int n;
    const sim_sample *sm = sim_samples(s, &n);
    json_t *o = json_object(), *tm = json_array(), *busy = json_object();
    for (int i = 0; i < n; i++) json_array_append_new(tm, json_real(sm[i].time));
    for (int t = 0; t < cl->n_types; t++) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(sm[i].used[t]));
        json_object_set_new(busy, cl->types[t].name, a);
    }
    json_object_set_new(o, "time", tm);
    json_object_set_new(o, "busy", busy);
    return o;
}

static void fmt_h(char *b, size_t n, double s) {
    if (!isfinite(s)) snprintf(b, n, "-");
    else snprintf(b, n, "%.2f h", s / 3600.0);
}

/* summary_table writes the per-method table (Markdown, aligned). */
static int summary_table(FILE *f, const model_cluster *cl, const run_out *runs, int n) {
    enum { NC_FIXED = 13 };
    int nc = NC_FIXED + cl->n_types;
    static int right[NC_FIXED + MODEL_MAX_TYPES];
    for (int c = 0; c < nc; c++) right[c] = c > 0;
    eval_table t;
    eval_table_init(&t, nc, right);
    char *head[NC_FIXED + MODEL_MAX_TYPES];
    char hbuf[MODEL_MAX_TYPES][MODEL_NAME_MAX + 8];
    const char *fixed[NC_FIXED] = {"method", "done", "rejected", "starved", "JCT mean",
                                   "JCT p50", "JCT p95", "queue mean", "queue p95",
                                   "missed deadlines", "cost", "makespan", "objective"};
    for (int c = 0; c < NC_FIXED; c++) head[c] = (char *)fixed[c];
    for (int ty = 0; ty < cl->n_types; ty++) {
        snprintf(hbuf[ty], sizeof hbuf[ty], "%s busy", cl->types[ty].name);
        head[NC_FIXED + ty] = hbuf[ty];
    }
    int rc = eval_table_row(&t, head);
    for (int i = 0; i < n && !rc; i++) {
        const sim_summary *u = &runs[i].sum;
        char b[NC_FIXED + MODEL_MAX_TYPES][48];
        char *cell[NC_FIXED + MODEL_MAX_TYPES];
        snprintf(b[0], sizeof b[0], "%s", runs[i].m->name);
        snprintf(b[1], sizeof b[1], "%d/%d", u->done, u->jobs);
        snprintf(b[2], sizeof b[2], "%d", u->rejected);
        snprintf(b[3], sizeof b[3], "%d", u->starved);
        fmt_h(b[4], sizeof b[4], u->jct_mean);
        fmt_h(b[5], sizeof b[5], u->jct_p50);
        fmt_h(b[6], sizeof b[6], u->jct_p95);
        fmt_h(b[7], sizeof b[7], u->queue_mean);
        fmt_h(b[8], sizeof b[8], u->queue_p95);
        snprintf(b[9], sizeof b[9], "%d/%d", u->missed, u->deadline_jobs);
        snprintf(b[10], sizeof b[10], "$%.2f", u->cost);
        fmt_h(b[11], sizeof b[11], u->makespan);
        snprintf(b[12], sizeof b[12], "$%.2f", runs[i].objective);
        for (int ty = 0; ty < cl->n_types; ty++)
            snprintf(b[NC_FIXED + ty], sizeof b[0], "%.1f%%", 100.0 * u->util[ty]);
        for (int c = 0; c < nc; c++) cell[c] = b[c];
        rc = eval_table_row(&t, cell);
    }
    if (!rc) eval_table_print(f, &t);
    eval_table_free(&t);
    return rc;
}

/* csv_num prints v with 12 significant digits, nothing when not finite. */
static void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.12g", v);
}

static int write_csv(const char *path, const sim_trace *t, const run_out *runs, int n, char *err,
                     size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "method,job,model,state,arrival,target,samples,deadline,start,finish,queue_delay,"
               "completion_time,throughput,cost,deadline_met,plan\n");
    for (int i = 0; i < n; i++) {
        const sim_outcome *out = sim_outcomes(runs[i].s);
        for (int j = 0; j < t->n_jobs; j++) {
            const sim_job *tj = &t->jobs[j];
            const sim_outcome *r = &out[j];
            fprintf(f, "%s,%s,%s,%s,", runs[i].m->name, tj->name,
                    t->models[tj->model].run->jobs[0].name, STATE_NAMES[r->state]);
            csv_num(f, tj->arrival);
            fputc(',', f);
            csv_num(f, tj->target);
            fputc(',', f);
            csv_num(f, tj->samples);
            fputc(',', f);
            if (tj->deadline > 0) csv_num(f, tj->deadline);
            fputc(',', f);
            csv_num(f, r->start);
            fputc(',', f);
            csv_num(f, r->finish);
            fputc(',', f);
            csv_num(f, r->start - tj->arrival);
            fputc(',', f);
            csv_num(f, r->finish - tj->arrival);
            fputc(',', f);
            if (r->state == SIM_DONE) csv_num(f, r->throughput);
            fputc(',', f);
            if (r->state == SIM_DONE) csv_num(f, r->cost);
            int met = deadline_met(tj, r);
            fprintf(f, ",%s,%s\n", met < 0 ? "" : met ? "yes" : "no",
                    r->state == SIM_DONE ? r->plan : "");
        }
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* make_plots draws, in dir/plots: util_METHOD (busy units per type over
 * time, one step line per type) and jct_cdf (completion time CDF, one
 * line per method). */
static int make_plots(const char *dir, const sim_trace *t, const model_cluster *cl,
                      const run_out *runs, int n, eval_plots *made, char *err, size_t errlen) {
    char pd[SIM_PATH_MAX + 16];
    snprintf(pd, sizeof pd, "%s/plots", dir);
    if (eval_mkdirs(pd) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", pd, strerror(errno));
        return -1;
    }
    char path[SIM_PATH_MAX + 96];
    for (int i = 0; i < n; i++) {
        char name[64], title[160];
        snprintf(name, sizeof name, "util_%s", runs[i].m->name);
        snprintf(path, sizeof path, "%s/%s.dat", pd, name);
        FILE *d = fopen(path, "w");
        if (!d) goto cannot;
        int ns;
        const sim_sample *sm = sim_samples(runs[i].s, &ns);
        for (int k = 0; k < ns; k++) {
            fprintf(d, "%.9g", sm[k].time / 3600.0);
            for (int ty = 0; ty < cl->n_types; ty++) fprintf(d, "\t%d", sm[k].used[ty]);
            fputc('\n', d);
        }
        if (ns > 0) { /* hold the last level to the end */
            fprintf(d, "%.9g", runs[i].sum.makespan / 3600.0);
            for (int ty = 0; ty < cl->n_types; ty++) fprintf(d, "\t%d", sm[ns - 1].used[ty]);
            fputc('\n', d);
        }
        fclose(d);
        snprintf(path, sizeof path, "%s/%s.gp", pd, name);
        FILE *g = fopen(path, "w");
        if (!g) goto cannot;
        snprintf(title, sizeof title, "Busy units per type over time: %s", runs[i].m->name);
        eval_plot_header(g, name, 1000, 560, title);
        fprintf(g, "set xlabel \"time (h)\"\nset ylabel \"busy units\"\nset key outside right\n"
                   "plot ");
        for (int ty = 0; ty < cl->n_types; ty++)
            fprintf(g, "%s'%s.dat' using 1:%d with steps title \"%s (%d units)\"", ty ? ", " : "",
                    name, ty + 2, cl->types[ty].name, cl->types[ty].count);
        fprintf(g, "\n");
        fclose(g);
        if (eval_plot_render(pd, name, title, made, err, errlen)) return -1;
    }
    /* CDF of completion time */
    snprintf(path, sizeof path, "%s/jct_cdf.dat", pd);
    FILE *d = fopen(path, "w");
    if (!d) goto cannot;
    double *v = malloc(sizeof *v * (size_t)(t->n_jobs ? t->n_jobs : 1));
    if (!v) {
        fclose(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const sim_outcome *out = sim_outcomes(runs[i].s);
        int m = 0;
        for (int j = 0; j < t->n_jobs; j++)
            if (out[j].state == SIM_DONE) v[m++] = (out[j].finish - t->jobs[j].arrival) / 3600.0;
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        fprintf(d, "# %s\n", runs[i].m->name);
        for (int k = 0; k < m; k++) fprintf(d, "%.9g\t%.9g\n", v[k], (k + 1.0) / t->n_jobs);
        fprintf(d, "\n\n");
    }
    free(v);
    fclose(d);
    snprintf(path, sizeof path, "%s/jct_cdf.gp", pd);
    FILE *g = fopen(path, "w");
    if (!g) goto cannot;
    eval_plot_header(g, "jct_cdf", 900, 560, "CDF of job completion time");
    fprintf(g, "set xlabel \"completion time, arrival to finish (h)\"\n"
               "set ylabel \"share of the trace's jobs\"\nset logscale x\nset key bottom right\n"
               "set yrange [0:1]\nplot ");
    for (int i = 0; i < n; i++)
        fprintf(g, "%s'jct_cdf.dat' index %d using 1:2 with steps title \"%s\"", i ? ", " : "", i,
                runs[i].m->name);
    fprintf(g, "\n");
    fclose(g);
    return eval_plot_render(pd, "jct_cdf", "CDF of job completion time", made, err, errlen);
cannot:
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return -1;
}

static int write_summary(const char *path, const char *command, const sim_spec *sp,
                         const sim_trace *t, const model_cluster *cl, const run_out *runs, int n,
                         const eval_plots *plots, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# strata simulate: %s\n\n`%s`\n\n", sp->name, command);
    long units = 0;
    for (int ty = 0; ty < cl->n_types; ty++) units += cl->types[ty].count;
    fprintf(f, "%d jobs (%s), %d distinct models; cluster %s: %d types, %ld units.\n\n",
            t->n_jobs, t->path[0] ? t->path : "generated", t->n_models, sp->cluster, cl->n_types,
            units);
    fprintf(f, "JCT is the completion time (finish - arrival), queue the queueing delay "
               "(start - arrival), both over finished jobs; p50/p95 interpolate between order "
               "statistics. Busy is each type's time-averaged share of busy units up to the "
               "makespan. The objective is %g x cost + $%g per job-hour of completion time + "
               "$%g per missed deadline.\n\n", sp->w.cost, sp->w.jct, sp->w.missed);
    summary_table(f, cl, runs, n);
    for (int i = 0; i < plots->n; i++)
        fprintf(f, "![%s](%s)\n\n", plots->title[i], plots->file[i]);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int parse_double(const char *opt, const char *text, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v > lo) || v > hi) {
        fprintf(stderr, "strata: %s: expected a number above %g and at most %g, got '%s'\n", opt,
                lo, hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cmd_simulate(int argc, char **argv) {
    static const struct option opts[] = {
        {"method", required_argument, 0, 'm'},   {"out", required_argument, 0, 'o'},
        {"json", no_argument, 0, 'J'},           {"quiet", no_argument, 0, 'q'},
        {"generate", required_argument, 0, 'g'}, {"load", required_argument, 0, 'l'},
        {"seed", required_argument, 0, 's'},     {"arrivals", required_argument, 0, 'a'},
        {"write-trace", required_argument, 0, 'w'}, {"preset", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},             {"policy", required_argument, 0, 'P'},
        {0, 0, 0, 0},
    };
    const char *out_dir = NULL, *write_trace = NULL, *policy = NULL;
    const char *names[SIM_MAX_METHODS];
    int n_names = 0, as_json = 0, quiet = 0, c;
    long long gen_jobs = 0, seed = -1;
    double load = 0;
    int arrivals = -1, preset = -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:Jqg:l:s:a:w:p:P:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (!sim_method_find(optarg)) {
                int nm;
                const sim_method *all = sim_methods(&nm);
                fprintf(stderr, "strata: --method: unknown method '%s' (one of:", optarg);
                for (int i = 0; i < nm; i++) fprintf(stderr, " %s", all[i].name);
                fprintf(stderr, ")\n");
                return CLI_USAGE;
            }
            if (n_names == SIM_MAX_METHODS) {
                fprintf(stderr, "strata: --method: at most %d\n", SIM_MAX_METHODS);
                return CLI_USAGE;
            }
            names[n_names++] = optarg;
            break;
        case 'o': out_dir = optarg; break;
        case 'J': as_json = 1; break;
        case 'q': quiet = 1; break;
        case 'g':
            if (cli_parse_int("--generate", optarg, 1, SIM_MAX_JOBS, &gen_jobs)) return CLI_USAGE;
            break;
        case 'l':
            if (parse_double("--load", optarg, 0, 100, &load)) return CLI_USAGE;
            break;
        case 's':
            if (cli_parse_int("--seed", optarg, 0, 2147483647, &seed)) return CLI_USAGE;
            break;
        case 'a':
            if (!strcmp(optarg, "poisson")) arrivals = SIM_ARRIVE_POISSON;
            else if (!strcmp(optarg, "bursty")) arrivals = SIM_ARRIVE_BURSTY;
            else {
                fprintf(stderr, "strata: --arrivals: expected poisson or bursty, got '%s'\n",
                        optarg);
                return CLI_USAGE;
            }
            break;
        case 'w': write_trace = optarg; break;
        case 'P': policy = optarg; break;
        case 'p':
            for (int i = 0; i < SIM_N_PRESETS; i++)
                if (!strcmp(optarg, sim_preset_get((sim_preset)i)->name)) preset = i;
            if (preset < 0) {
                fprintf(stderr, "strata: --preset: expected one of %s, got '%s'\n",
                        SIM_PRESET_CHOICES, optarg);
                return CLI_USAGE;
            }
            break;
        case 'h': fputs(SIM_USAGE, stdout); return CLI_OK;
        default: fputs(SIM_USAGE, stderr); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs(SIM_USAGE, stderr);
        return CLI_USAGE;
    }
    char err[ERRLEN];
    static sim_spec sp;
    if (sim_spec_load(argv[optind], &sp, err, sizeof err)) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    int generate =
        gen_jobs > 0 || !sp.trace[0] || load > 0 || seed >= 0 || arrivals >= 0 || preset >= 0;
    sim_trace *t = NULL;
    if (generate) {
        if (!sp.has_gen) {
            fprintf(stderr, "strata: %s: generating a trace needs a generate: section with "
                            "models (docs/simulate.md)\n", sp.path);
            return CLI_USAGE;
        }
        sim_gen_opts g = sp.gen;
        if (gen_jobs > 0) g.jobs = (int)gen_jobs;
        if (load > 0) g.load = load;
        if (seed >= 0) g.seed = (uint64_t)seed;
        if (arrivals >= 0) g.arrivals = (sim_arrivals)arrivals;
        if (preset >= 0) g.preset = (sim_preset)preset;
        t = sim_trace_generate(&g, sp.cluster, ".", err, sizeof err);
    } else {
        t = sim_trace_load(sp.trace, sp.cluster, err, sizeof err);
    }
    if (!t) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    if (write_trace && sim_trace_write(t, write_trace, err, sizeof err)) {
        fprintf(stderr, "strata: %s\n", err);
        sim_trace_free(t);
        return CLI_USAGE;
    }
    /* the methods */
    const sim_method *ms[SIM_MAX_METHODS];
    int n = 0;
    if (n_names) {
        for (int i = 0; i < n_names; i++) ms[n++] = sim_method_find(names[i]);
    } else if (sp.n_methods) {
        for (int i = 0; i < sp.n_methods; i++) ms[n++] = sim_method_find(sp.methods[i]);
    } else {
        int nm;
        const sim_method *all = sim_methods(&nm);
        /* every method; the policy only when a checkpoint is at hand */
        for (int i = 0; i < nm && n < SIM_MAX_METHODS; i++)
            if (strcmp(all[i].name, "policy") || policy || sp.policy[0]) ms[n++] = &all[i];
    }
    /* the policy's checkpoint, when the policy method is asked for */
    spol_run prun;
    memset(&prun, 0, sizeof prun);
    spol_net *net = NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(ms[i]->name, "policy")) continue;
        const char *ck = policy ? policy : sp.policy[0] ? sp.policy : NULL;
        if (!ck) {
            fprintf(stderr, "strata: simulate: the policy method needs a checkpoint: --policy CKPT "
                            "or policy: in %s (strata train configs/train/sim-philly.yaml makes "
                            "one)\n", sp.path);
            sim_trace_free(t);
            return CLI_USAGE;
        }
        if (!(net = spol_load(ck, NULL, err, sizeof err))) {
            fprintf(stderr, "strata: %s\n", err);
            sim_trace_free(t);
            return CLI_USAGE;
        }
        prun.net = net;
        break;
    }
    const model_cluster *cl = &t->models[0].run->cluster;
    run_out runs[SIM_MAX_METHODS];
    memset(runs, 0, sizeof runs);
    int status = CLI_OK, n_run = 0;
    for (int i = 0; i < n; i++) {
        runs[i].m = ms[i];
        runs[i].s = sim_create_with(t, cl, ms[i], &prun, err, sizeof err);
        if (!runs[i].s || sim_run(runs[i].s, err, sizeof err)) {
            fprintf(stderr, "strata: simulate: %s: %s\n", ms[i]->name, err);
            sim_free(runs[i].s);
            runs[i].s = NULL;
            status = CLI_FAIL;
            break;
        }
        sim_summarise(runs[i].s, &runs[i].sum);
        runs[i].objective = sim_objective(runs[i].s, &sp.w, 0);
        n_run++;
    }
    const model_cluster *full = n_run ? sim_full(runs[0].s) : cl;
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "config", json_string(sp.path));
        json_object_set_new(o, "name", json_string(sp.name));
        json_t *tr = json_object();
        json_object_set_new(tr, "source", json_string(t->path[0] ? t->path : "generated"));
        json_object_set_new(tr, "jobs", json_integer(t->n_jobs));
        json_object_set_new(o, "trace", tr);
        json_t *wo = json_object();
        json_object_set_new(wo, "cost", json_real(sp.w.cost));
        json_object_set_new(wo, "jct_per_job_hour", json_real(sp.w.jct));
        json_object_set_new(wo, "missed", json_real(sp.w.missed));
        json_object_set_new(o, "objective_weights", wo);
        json_t *ma = json_array();
        for (int i = 0; i < n_run; i++) {
            json_t *mo = json_object();
            json_object_set_new(mo, "method", json_string(runs[i].m->name));
            json_object_set_new(mo, "summary", summary_json(full, &runs[i].sum, runs[i].objective));
            json_object_set_new(mo, "occupancy", occupancy_json(runs[i].s, full));
            json_object_set_new(mo, "jobs", jobs_json(t, full, sim_outcomes(runs[i].s)));
            json_array_append_new(ma, mo);
        }
        json_object_set_new(o, "methods", ma);
        report_json_print(stdout, o);
    } else if (!quiet) {
        long units = 0;
        for (int ty = 0; ty < full->n_types; ty++) units += full->types[ty].count;
        printf("%s: %d jobs (%s) on %d types, %ld units\n\n", sp.name, t->n_jobs,
               t->path[0] ? t->path : "generated", full->n_types, units);
        summary_table(stdout, full, runs, n_run);
    }
    if (out_dir && n_run) {
        char path[SIM_PATH_MAX + 32], command[2048] = "strata";
        for (int i = 0; i < argc; i++)
            snprintf(command + strlen(command), sizeof command - strlen(command), " %s",
                     i == 0 ? "simulate" : argv[i]);
        if (eval_mkdirs(out_dir) != 0) {
            fprintf(stderr, "strata: %s: cannot create: %s\n", out_dir, strerror(errno));
            status = CLI_USAGE;
            goto done;
        }
        snprintf(path, sizeof path, "%s/results.csv", out_dir);
        if (write_csv(path, t, runs, n_run, err, sizeof err)) {
            fprintf(stderr, "strata: %s\n", err);
            status = CLI_USAGE;
            goto done;
        }
        eval_plots plots;
        memset(&plots, 0, sizeof plots);
        if (make_plots(out_dir, t, full, runs, n_run, &plots, err, sizeof err)) {
            fprintf(stderr, "strata: plots: %s\n", err);
            status = CLI_FAIL;
        }
        snprintf(path, sizeof path, "%s/summary.md", out_dir);
        if (write_summary(path, command, &sp, t, full, runs, n_run, &plots, err, sizeof err)) {
            fprintf(stderr, "strata: %s\n", err);
            status = CLI_USAGE;
        }
    }
done:
    for (int i = 0; i < n_run; i++) sim_free(runs[i].s);
    spol_net_free(net);
    sim_trace_free(t);
    return status;
}
