/* solve_jobs.c -- the several-jobs branch of `strata solve` (objective jct).
 *
 *   strata solve FILE [--method smd|sequential|PLAN_METHOD] [--plan-method M]
 *                [--budget-ms N] [--evals N] [--seed S] [--json]
 *
 * cmd_solve calls cmd_solve_jobs first. It takes over when the run lists
 * several jobs, has `objective: jct`, or --method names sequential or smd
 * (and no --job picks one job); otherwise it returns CLI_NOT_JOBS and
 * cmd_solve solves the single job. It builds every job's candidate plans
 * with the plan solver (--plan-method, or a plan method given as --method;
 * default exact; --budget-ms, --evals and --seed are that solver's),
 * allocates units by sequential and by smd (solvers/multi.h) and prints
 * both: per method the sum of completion times, the cost and the units per
 * type, then the chosen method's plan for every job. Exit status 0 when the
 * chosen method (default smd) gives every job a plan, 1 when not, 2 on bad
 * usage or input.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "env/config.h"
#include "solvers/runload.h"
#include "solvers/multi.h"
#include "solvers/solve.h"

static void human_seconds(char *buf, size_t len, double s) {
    if (!isfinite(s)) snprintf(buf, len, "-");
    else if (s >= 86400.0) snprintf(buf, len, "%.2f days", s / 86400.0);
    else if (s >= 3600.0) snprintf(buf, len, "%.2f h", s / 3600.0);
    else if (s >= 60.0) snprintf(buf, len, "%.2f min", s / 60.0);
    else snprintf(buf, len, "%.3g s", s);
}

/* "cpu x2 + gpu x5" for a units vector. */
static void units_text(char *buf, size_t len, const model_cluster *cl, const long *units) {
    buf[0] = '\0';
    size_t used = 0;
    for (int t = 0; t < cl->n_types && used < len; t++)
        if (units[t] > 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%s x%ld", used ? " + " : "",
                                     cl->types[t].name, units[t]);
    if (!buf[0]) snprintf(buf, len, "none");
}

/* Stage-wise assignment "cpu[0-1] gpu[2-4]". */
static void assign_text(char *buf, size_t len, const model_cluster *cl, const model_job *job,
                        const int *assign) {
    buf[0] = '\0';
    size_t used = 0;
    for (int l = 0; l < job->n_layers && used < len;) {
        int e = l;
        while (e + 1 < job->n_layers && assign[e + 1] == assign[l]) e++;
        if (e == l)
            used += (size_t)snprintf(buf + used, len - used, "%s%s[%d]", used ? " " : "",
                                     cl->types[assign[l]].name, l);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%s[%d-%d]", used ? " " : "",
                                     cl->types[assign[l]].name, l, e);
        l = e + 1;
    }
}

static json_t *units_json(const model_cluster *cl, const long *units) {
    json_t *o = json_object();
    for (int t = 0; t < cl->n_types; t++)
        json_object_set_new(o, cl->types[t].name, json_integer(units[t]));
    return o;
}

static json_t *result_json(const cfg_run *run, const multi_result *r, int is_smd) {
    const model_cluster *cl = &run->cluster;
    json_t *o = json_object();
    json_object_set_new(o, "feasible", json_boolean(r->feasible));
    if (!r->feasible) json_object_set_new(o, "reason", json_string(r->why));
    json_object_set_new(o, "sum_time", r->feasible ? json_real(r->sum_time) : json_null());
    json_object_set_new(o, "cost", json_real(r->cost));
    json_object_set_new(o, "units", units_json(cl, r->units));
    if (is_smd) {
        json_object_set_new(o, "knapsacks", json_integer(r->iterations));
        json_object_set_new(o, "fixed_point", json_boolean(r->fixed_point));
        json_object_set_new(o, "improved_by_check", json_boolean(r->improved_by_check));
    }
    json_t *jobs = json_array();
    for (int j = 0; j < run->n_jobs; j++) {
        const model_job *job = &run->jobs[j];
        const multi_cand *m = &r->plan[j];
        json_t *jo = json_pack("{s:s, s:b}", "name", job->name, "fitted_curve",
                               job->curve.fitted);
        if (r->pick[j] < 0) {
            json_object_set_new(jo, "plan", json_null());
        } else {
            json_t *as = json_array();
            for (int l = 0; l < job->n_layers; l++)
                json_array_append_new(as, json_string(cl->types[m->assign[l]].name));
            json_object_set_new(jo, "assignment", as);
            json_object_set_new(jo, "units", units_json(cl, m->units));
            json_object_set_new(jo, "target", json_real(m->target));
            json_object_set_new(jo, "throughput", json_real(m->throughput));
            json_object_set_new(jo, "time", json_real(m->time));
            json_object_set_new(jo, "cost", json_real(m->cost));
            json_object_set_new(jo, "origin", json_string(m->origin));
        }
        json_array_append_new(jobs, jo);
    }
    json_object_set_new(o, "jobs", jobs);
    return o;
}

static void print_result(const cfg_run *run, const char *name, const multi_result *r) {
    char tb[32], ub[256];
    human_seconds(tb, sizeof tb, r->sum_time);
    units_text(ub, sizeof ub, &run->cluster, r->units);
    printf("%-10s %18s %12.2f   %s\n", name, r->feasible ? tb : "no plan", r->cost, ub);
}

static void print_plans(const cfg_run *run, const multi_result *r) {
    const model_cluster *cl = &run->cluster;
    printf("%-14s %-30s %-26s %12s %12s %10s  %s\n", "job", "plan (type[layers])", "units",
           "samples/s", "time", "cost $", "candidate");
    for (int j = 0; j < run->n_jobs; j++) {
        const model_job *job = &run->jobs[j];
        const multi_cand *m = &r->plan[j];
        char name[80];
        snprintf(name, sizeof name, "%.60s%s", job->name, job->curve.fitted ? " (fitted)" : "");
        if (r->pick[j] < 0) {
            printf("%-14s no plan\n", name);
            continue;
        }
        char ab[256], ub[128], tb[32];
        assign_text(ab, sizeof ab, cl, job, m->assign);
        units_text(ub, sizeof ub, cl, m->units);
        human_seconds(tb, sizeof tb, m->time);
        printf("%-14s %-30s %-26s %12.6g %12s %10.2f  %s\n", name, ab, ub, m->throughput, tb,
               m->cost, m->origin);
    }
}

int cmd_solve_jobs(int argc, char **argv) {
    static const struct option opts[] = {
        CLI_SOLVE_OPTIONS,
        {"plan-method", required_argument, 0, 'P'},
        {0, 0, 0, 0},
    };
    const char *method = NULL, *plan_method = NULL, *budget = NULL, *evals = NULL,
               *seed = NULL;
    int as_json = 0, has_job = 0, c, unknown = 0;
    int saved_opterr = opterr;
    opterr = 0; /* cmd_solve reports bad options itself */
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:P:b:e:s:j:Jh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': method = optarg; break;
        case 'P': plan_method = optarg; break;
        case 'b': budget = optarg; break;
        case 'e': evals = optarg; break;
        case 's': seed = optarg; break;
        case 'j': has_job = 1; break;
        case 'J': as_json = 1; break;
        default: unknown = 1; break; /* includes --help */
        }
    }
    opterr = saved_opterr;
    int file_at = optind;
    optind = 1;
    if (unknown || file_at != argc - 1) return CLI_NOT_JOBS;
    int multi_named = method && (!strcmp(method, "smd") || !strcmp(method, "sequential"));
    if (method && !multi_named && solve_method_parse(method) < 0) return CLI_NOT_JOBS;
    if (has_job) {
        if (!multi_named && !plan_method) return CLI_NOT_JOBS;
        fprintf(stderr, "strata solve: --job solves one job; --method %s and --plan-method "
                        "are for several jobs\n", method ? method : "smd");
        return CLI_USAGE;
    }

    char err[1024];
    cfg_run *run = run_load(argv[file_at], err, sizeof err);
    if (!run) return CLI_NOT_JOBS; /* cmd_solve reports the error */
    if (run->n_jobs == 1 && run->objective != CFG_OBJECTIVE_JCT && !multi_named && !plan_method) {
        cfg_free(run);
        return CLI_NOT_JOBS;
    }

    int status = CLI_USAGE;
    multi_cands *cands = NULL;
    multi_result *seq = NULL, *smd = NULL;
    multi_opts mo;
    multi_opts_default(&mo);
    const char *pm = plan_method ? plan_method : (method && !multi_named ? method : NULL);
    if (pm) {
        int m = solve_method_parse(pm);
        if (m < 0) {
            fprintf(stderr, "strata solve: --plan-method: unknown method '%s'\n", pm);
            goto done;
        }
        mo.plan.method = (solve_method)m;
    }
    if ((budget && cli_solve_budget('b', budget, &mo.plan)) ||
        (evals && cli_solve_budget('e', evals, &mo.plan)) ||
        (seed && cli_solve_budget('s', seed, &mo.plan)))
        goto done;
    int want_seq = multi_named && !strcmp(method, "sequential");
    const model_cluster *cl = &run->cluster;
    int n = run->n_jobs;
    cands = multi_cands_create(n, cl->n_types);
    seq = multi_result_create(n);
    smd = multi_result_create(n);
    if (!cands || !seq || !smd) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    if (multi_candidates(cands, run->jobs, n, cl, &mo, err, sizeof err) < 0 ||
        multi_sequential(run->jobs, n, cl, &mo, cands, seq, err, sizeof err) < 0 ||
        multi_smd(run->jobs, cl, cands, seq, &mo, smd, err, sizeof err) < 0) {
        fprintf(stderr, "strata: %s\n", err);
        status = CLI_FAIL;
        goto done;
    }
    const multi_result *chosen = want_seq ? seq : smd;
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "objective", json_string("jct"));
        json_object_set_new(o, "method", json_string(want_seq ? "sequential" : "smd"));
        json_object_set_new(o, "plan_method", json_string(solve_method_name(mo.plan.method)));
        json_t *counts = json_array();
        for (int j = 0; j < n; j++) json_array_append_new(counts, json_integer(cands->count[j]));
        json_object_set_new(o, "candidates", counts);
        json_object_set_new(o, "sequential", result_json(run, seq, 0));
        json_object_set_new(o, "smd", result_json(run, smd, 1));
        report_json_print(stdout, o);
    } else {
        printf("%s: %d job%s sharing the cluster, objective jct (sum of completion times); "
               "candidate plans from %s:", run->path, n, n == 1 ? "" : "s",
               solve_method_name(mo.plan.method));
        for (int j = 0; j < n; j++) printf(" %s %d%s", run->jobs[j].name, cands->count[j],
                                           j + 1 < n ? "," : "");
        printf("\n%-10s %18s %12s   %s\n", "method", "sum of times", "cost $", "units used");
        print_result(run, "sequential", seq);
        print_result(run, "smd", smd);
        printf("smd: %d knapsacks, %s%s\n", smd->iterations,
               smd->fixed_point ? "the ratio iteration reached its fixed point"
                                : "no fixed point (the iteration cycles)",
               smd->improved_by_check ? "; the exact check improved on it" : "");
        if (seq->feasible && smd->feasible && seq->sum_time > 0)
            printf("smd vs sequential: %.1f%% less total completion time\n",
                   100.0 * (1.0 - smd->sum_time / seq->sum_time));
        printf("\n%s's plans:\n", want_seq ? "sequential" : "smd");
        print_plans(run, chosen);
        if (!chosen->feasible) printf("infeasible: %s\n", chosen->why);
    }
    status = chosen->feasible ? CLI_OK : CLI_FAIL;
done:
    multi_cands_free(cands);
    multi_result_free(seq);
    multi_result_free(smd);
    cfg_free(run);
    return status;
}
