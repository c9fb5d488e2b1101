/* train.c -- `strata train`: policy-gradient training of the placement policy.
 *
 *   strata train CONFIG [--resume CKPT | --overwrite] [--seconds N] [--steps N]
 *                [--stop-at N] [--out DIR] [--threads N] [--json] [--quiet]
 *   strata train --search FILE [--overwrite] [--seconds N] [--steps N]
 *                [--samples N] [--seed S] [--no-polish] [--out DIR] [--json]
 *                [--quiet] [--compare [--policy CKPT]]
 *
 * CONFIG is a train config (agent/trainconf.h, docs/agent.md), or a sim
 * train config (`mode: sim`, sim/spoltrain.h, docs/simulate.md) that
 * trains the policy of strata simulate over whole traces; --search
 * FILE trains from scratch on the one job of FILE with the search defaults
 * and prints the best plan found, as `strata solve` does (--json: the same
 * object, with method "policy-search"); --compare then prints the plan's
 * cost against the solvers' baselines (exact, homogeneous, rule, greedy)
 * and a trained general policy (CKPT, default checkpoints/general.h5, when
 * it exists). Progress goes to stderr: a bar
 * redrawn in place on a terminal, plain lines every few seconds otherwise.
 * Metrics go to OUT/metrics.csv, checkpoints to OUT/last.h5 and
 * OUT/best.h5; a new run (no --resume) refuses a folder that holds any of
 * them, from an earlier run, unless --overwrite. --steps changes the run's length (and so the learning-rate
 * and entropy schedules); --stop-at N stops after step N without changing
 * them, as an interruption would (a later --resume continues exactly). Under `mpirun -np K` the rollouts are split over the ranks
 * and only rank 0 prints and writes. Exit status: 0 done, 1 a failed run
 * (search found no plan, an error while training), 2 bad usage or input.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef STRATA_HAVE_MPI
#include <mpi.h>
#endif

#include "agent/policy.h"
#include "agent/train.h"
#include "agent/trainconf.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "env/render.h"
#include "sim/spoltrain.h"
#include "solvers/solve.h"

static void train_usage(FILE *f) {
    fprintf(f,
            "usage: strata train CONFIG [--resume CKPT | --overwrite] [--seconds N] [--steps N] [--stop-at N] "
            "[--out DIR] [--threads N] [--json] [--quiet]\n"
            "       strata train --search FILE [--overwrite] [--seconds N] [--steps N] [--samples N] [--seed S] "
            "[--no-polish] [--out DIR] [--json] [--quiet] [--compare [--policy CKPT]]\n"
            "  --resume CKPT  continue the run saved in CKPT (its files in the folder are updated)\n"
            "  --overwrite    start afresh even if the folder holds metrics.csv, last.h5 or best.h5\n"
            "                 of an earlier run (they are replaced); without it such a run is refused\n"
            "  --no-polish    search: no segment-move polish of the best samples (on by default;\n"
            "                 --polish, the former opt-in, is still accepted)\n");
}

/* earlier_run: 1 with a message in err when folder `out` holds a file of
 * an earlier run (metrics.csv, last.h5, best.h5) that a new run would
 * replace; else 0. */
static int earlier_run(const char *out, char *err, size_t errlen) {
    static const char *const files[] = {"last.h5", "best.h5", "metrics.csv"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        if (access(path, F_OK) == 0) {
            snprintf(err, errlen,
                     "%.600s exists, from an earlier run; a new run would replace it: pass --resume %.600s/last.h5 "
                     "to continue that run, --out DIR to train into another folder, or --overwrite to replace it",
                     path, out);
            return 1;
        }
    }
    return 0;
}

static int parse_num(const char *opt, const char *text, double lo, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo) || !isfinite(v)) {
        fprintf(stderr, "strata train: %s: expected a number >= %g, got '%s'\n", opt, lo, text);
        return -1;
    }
    *out = v;
    return 0;
}

static void fmt_dur(char *buf, size_t len, double s) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "--:--");
        return;
    }
    long x = (long)(s + 0.5);
    if (x >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", x / 3600, x / 60 % 60, x % 60);
    else
        snprintf(buf, len, "%ld:%02ld", x / 60, x % 60);
}

/* progress prints one status line: on a terminal in place, else plain. */
static void progress(const agent_trainconf *tc, const agent_metrics *m, double elapsed,
                     double budget, int tty, int final) {
    double per_step = m->step > 0 ? elapsed / m->step : 0;
    double eta_steps = (tc->steps - m->step) * per_step;
    double eta = budget > 0 ? fmin(budget - elapsed, eta_steps) : eta_steps;
    char e[32], el[32];
    fmt_dur(e, sizeof e, eta);
    fmt_dur(el, sizeof el, elapsed);
    char gap[64] = "";
    if (!isnan(m->best_gap))
        snprintf(gap, sizeof gap, " | gap %.2f%%", 100 * m->best_gap);
    else if (!isnan(m->gap_mean))
        snprintf(gap, sizeof gap, " | gap %.2f%%", 100 * m->gap_mean);
    char best[64] = "";
    if (!isnan(m->best_cost)) snprintf(best, sizeof best, " best $%.6g", m->best_cost);
    char ev[96] = "";
    const agent_metrics *last = m;
    if (!isnan(last->eval_gap_greedy))
        snprintf(ev, sizeof ev, " | held-out %.2f%% / %.2f%%", 100 * last->eval_gap_greedy,
                 100 * last->eval_gap_sample);
    char bar[32] = "";
    if (tty) { /* a bar of the budget used: steps or seconds, whichever is further */
        double f = m->step / (double)tc->steps;
        if (budget > 0 && elapsed / budget > f) f = elapsed / budget;
        if (f > 1) f = 1;
        int k = (int)(f * 20 + 0.5);
        bar[0] = '[';
        for (int i = 0; i < 20; i++) bar[1 + i] = i < k ? '#' : '-';
        bar[21] = ']';
        bar[22] = ' ';
        bar[23] = '\0';
    }
    fprintf(stderr, "%s%sstep %ld | %.0f ep/s | cost $%.6g%s%s%s | %s ETA %s%s",
            tty ? "\r\033[K" : "", bar, (long)m->step, m->samples_per_s, m->episodic_cost, best, gap,
            ev, el, e, tty && !final ? "" : "\n");
    fflush(stderr);
}

static void print_times(FILE *f, const agent_train_times *tm) {
    fprintf(f,
            "time: instances %.1f s, environments %.1f s, network in rollouts %.1f s, learning %.1f s, "
            "evaluation %.1f s, files %.1f s\n",
            tm->instances, tm->env, tm->net, tm->learn, tm->eval, tm->io);
}

static json_t *times_json(const agent_train_times *tm) {
    json_t *o = json_object();
    json_object_set_new(o, "instances", json_real(tm->instances));
    json_object_set_new(o, "env", json_real(tm->env));
    json_object_set_new(o, "net_rollout", json_real(tm->net));
    json_object_set_new(o, "learn", json_real(tm->learn));
    json_object_set_new(o, "eval", json_real(tm->eval));
    json_object_set_new(o, "io", json_real(tm->io));
    return o;
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* report_search prints the plan a search run returns (agent_train_answer:
 * its best sample, or a reference plan cheaper than every sample, said in
 * best_from). Returns the status. */
static int report_search(agent_trainer *t, const agent_trainconf *tc, int as_json, double secs) {
    const model_job *job;
    const model_cluster *cl;
    const int *assign, *sampled;
    double cost, exact, sampled_cost;
    char from[64];
    agent_train_best(t, &job, &cl, &sampled, &sampled_cost, &exact);
    agent_train_answer(t, &assign, &cost, from, sizeof from);
    const agent_metrics *m = agent_train_last(t);
    model_plan *plan = model_plan_create(job->n_layers);
    if (!plan) {
        fprintf(stderr, "strata: out of memory\n");
        return CLI_FAIL;
    }
    int found = assign && model_eval(job, cl, assign, plan) == 0;
    if (as_json) {
        json_t *o;
        if (found)
            o = render_plan_json(job, cl, plan);
        else {
            o = json_object();
            json_object_set_new(o, "feasible", json_false());
            json_object_set_new(o, "reason", json_string("the policy sampled no feasible plan"));
            json_object_set_new(o, "assignment", json_null());
            json_object_set_new(o, "cost", json_null());
            json_object_set_new(o, "throughput", json_null());
        }
        json_object_set_new(o, "found", json_boolean(found));
        json_object_set_new(o, "method", json_string("policy-search"));
        json_object_set_new(o, "optimal", json_false());
        json_object_set_new(o, "seconds", json_real(secs));
        json_object_set_new(o, "steps", json_integer(agent_train_step_count(t)));
        json_object_set_new(o, "episodes", json_real(m ? m->episodes : 0));
        json_object_set_new(o, "exact_cost", num_or_null(exact));
        json_object_set_new(o, "gap", found ? num_or_null(plan->cost / exact - 1) : json_null());
        json_object_set_new(o, "best_from", json_string(from));
        json_object_set_new(o, "sampled_cost", sampled ? num_or_null(sampled_cost) : json_null());
        json_object_set_new(o, "sampled_gap", sampled ? num_or_null(sampled_cost / exact - 1) : json_null());
        json_object_set_new(o, "checkpoint", json_string(agent_train_file(t, "best.h5")));
        json_object_set_new(o, "timers", times_json(agent_train_timing(t)));
        report_json_print(stdout, o);
    } else {
        if (found)
            report_plan_table(stdout, job, cl, plan);
        else
            printf("no feasible plan: the policy sampled none\n");
        printf("method: policy-search, %ld steps, %.0f episodes, %.1f s", agent_train_step_count(t),
               m ? m->episodes : 0.0, secs);
        if (found && isfinite(exact))
            printf("; exact optimum $%.6g, gap %.3f%%", exact, 100 * (plan->cost / exact - 1));
        printf("\nbest from: %s", from);
        if (sampled && !strncmp(from, "reference:", 10) && isfinite(exact))
            printf(" (best sample $%.6g, gap %.3f%%)", sampled_cost, 100 * (sampled_cost / exact - 1));
        printf("\ncheckpoint: %s\n", agent_train_file(t, "best.h5"));
        print_times(stdout, agent_train_timing(t));
    }
    (void)tc;
    model_plan_free(plan);
    return found ? CLI_OK : CLI_FAIL;
}

static void report_general(agent_trainer *t, int as_json, double secs) {
    const agent_metrics *m = agent_train_last(t);
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "mode", json_string("general"));
        json_object_set_new(o, "steps", json_integer(agent_train_step_count(t)));
        json_object_set_new(o, "episodes", json_real(m ? m->episodes : 0));
        json_object_set_new(o, "seconds", json_real(secs));
        json_object_set_new(o, "last", json_string(agent_train_file(t, "last.h5")));
        json_object_set_new(o, "best", json_string(agent_train_file(t, "best.h5")));
        json_object_set_new(o, "metrics", json_string(agent_train_file(t, "metrics.csv")));
        if (m) {
            const char **names;
            int n = agent_metrics_columns(&names);
            json_t *row = json_object();
            for (int i = 0; i < n; i++) {
                double v = agent_metrics_get(m, i);
                json_object_set_new(row, names[i], num_or_null(v));
            }
            json_object_set_new(o, "final", row);
        }
        agent_train_node_valid nv;
        agent_train_node_validation(t, &nv);
        if (!isnan(nv.start)) {
            json_t *v = json_object();
            json_object_set_new(v, "start", num_or_null(nv.start));
            json_object_set_new(v, "best", num_or_null(nv.best));
            json_object_set_new(v, "best_step", nv.best_step >= 0 ? json_integer(nv.best_step) : json_null());
            json_object_set_new(o, "node_validation", v);
        }
        json_object_set_new(o, "timers", times_json(agent_train_timing(t)));
        report_json_print(stdout, o);
    } else {
        printf("trained %ld steps, %.0f episodes, %.1f s\n", agent_train_step_count(t),
               m ? m->episodes : 0.0, secs);
        if (m && !isnan(m->eval_gap_greedy))
            printf("held-out gap to exact: greedy %.2f%%, best of samples %.2f%%, no plan on %.0f\n",
                   100 * m->eval_gap_greedy, 100 * m->eval_gap_sample, m->eval_infeasible);
        agent_train_node_valid nv;
        agent_train_node_validation(t, &nv);
        if (!isnan(nv.start)) {
            printf("node head at best's cost or less on validation: %.1f%% at the start", 100 * nv.start);
            if (nv.best_step >= 0) printf(", %.1f%% in best.h5 (step %ld)\n", 100 * nv.best, nv.best_step);
            else printf(", no step beat %.1f%%\n", 100 * nv.best);
        }
        /* a resumed run keeps the best validation gap it was saved with; when
         * no step beats it, this run wrote no best.h5, and saying it did
         * would send the user to a file that is not there */
        const char *best = agent_train_file(t, "best.h5");
        if (access(best, F_OK) == 0)
            printf("checkpoints: %s, %s\n", agent_train_file(t, "last.h5"), best);
        else
            printf("checkpoints: %s (no best.h5: no validation beat the gap the resumed "
                   "checkpoint carried)\n", agent_train_file(t, "last.h5"));
        printf("metrics: %s\n", agent_train_file(t, "metrics.csv"));
        print_times(stdout, agent_train_timing(t));
    }
}

/* compare prints, after a search, the search's best plan against the
 * solvers' baselines and, when the checkpoint `policy` loads, a trained
 * general policy (greedy and best of 16 samples). */
static void compare(agent_trainer *t, const char *policy, double secs) {
    const model_job *job;
    const model_cluster *cl;
    const int *assign;
    double cost, exact;
    agent_train_best(t, &job, &cl, &assign, &cost, &exact);
    printf("\ncomparison on job %s (%d layers, %d types):\n", job->name, job->n_layers, cl->n_types);
    printf("  %-34s %14s %12s\n", "method", "cost $", "vs exact");
    solve_result *res = solve_result_create(job->n_layers);
    if (!res) return;
    static const solve_method ms[] = {SOLVE_EXACT, SOLVE_HOMOGENEOUS, SOLVE_RULE, SOLVE_GREEDY};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        solve_opts o;
        solve_opts_default(&o);
        o.method = ms[i];
        if (solve_run(job, cl, &o, res) == 0)
            printf("  %-34s %14.6g %+11.2f%%\n", solve_method_name(ms[i]), res->plan->cost,
                   100 * (res->plan->cost / exact - 1));
        else
            printf("  %-34s %14s %12s\n", solve_method_name(ms[i]), "no plan", "");
    }
    char label[64];
    snprintf(label, sizeof label, "policy search (this run, %.0f s)", secs);
    if (assign)
        printf("  %-34s %14.6g %+11.2f%%\n", label, cost, 100 * (cost / exact - 1));
    else
        printf("  %-34s %14s\n", label, "no plan");
    solve_result_free(res);
    char err[2048];
    agent_policy *pol = policy ? agent_policy_load(policy, err, sizeof err) : NULL;
    if (!pol) {
        if (policy) printf("  (general policy not compared: %s)\n", err);
        return;
    }
    int *as = malloc((size_t)job->n_layers * sizeof *as);
    model_plan *plan = model_plan_create(job->n_layers);
    for (int k = 0; as && plan && k < 2; k++) {
        agent_decode_opts o = {.decode = k ? AGENT_DECODE_SAMPLE : AGENT_DECODE_GREEDY,
                               .samples = k ? 16 : 1,
                               .seed = 1,
                               .placement = PLACER_PLACE_NONE,
                               .budget_ms = 0};
        agent_decode_result r = {.assign = as, .task_node = NULL, .plan = plan};
        snprintf(label, sizeof label, "general policy, %s", k ? "best of 16" : "greedy");
        if (agent_policy_decode(pol, job, cl, &o, &r, err, sizeof err) == 0)
            printf("  %-34s %14.6g %+11.2f%%\n", label, plan->cost, 100 * (plan->cost / exact - 1));
        else
            printf("  %-34s %14s\n", label, "no plan");
    }
    printf("  (general policy: %s, step %lld)\n", agent_policy_path(pol), (long long)agent_policy_step(pol));
    free(as);
    model_plan_free(plan);
    agent_policy_free(pol);
}

/* train_sim runs a sim train config (sim/spoltrain.h): steps until the
 * config's steps or seconds (or --steps/--seconds), validation every
 * eval_every steps and at the end, a progress line every few seconds. */
static int train_sim(const char *path, double seconds, double steps, const char *out,
                     int overwrite, int as_json, int quiet) {
    char err[2048];
    spt_conf *cf = spt_conf_load(path, err, sizeof err);
    if (!cf) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    if (seconds >= 0) cf->seconds = seconds;
    if (steps > 0) cf->steps = (int)fmin(steps, 2147483647.0);
    if (out) snprintf(cf->out, sizeof cf->out, "%s", out);
    if (!overwrite && earlier_run(cf->out, err, sizeof err)) {
        fprintf(stderr, "strata: %s\n", err);
        spt_conf_free(cf);
        return CLI_USAGE;
    }
    spt *t = spt_create(cf, err, sizeof err);
    if (!t) {
        fprintf(stderr, "strata: %s\n", err);
        spt_conf_free(cf);
        return CLI_USAGE;
    }
    int status = CLI_OK;
    double t0 = clock_now_s(), last = -1e9;
    while (!spt_done(t) && !(cf->seconds > 0 && clock_now_s() - t0 >= cf->seconds)) {
        if (spt_step(t, err, sizeof err)) {
            fprintf(stderr, "strata: train: %s\n", err);
            status = CLI_FAIL;
            break;
        }
        const spt_metrics *m = spt_last(t);
        if (!quiet && (clock_now_s() - last >= 5 || isfinite(m->valid_obj))) {
            fprintf(stderr, "step %d | %.0f s | %.0f episodes | train objective $%.0f | entropy %.3f"
                            " | %.0f decisions/episode",
                    m->step, m->seconds, m->episodes, m->train_obj, m->entropy, m->decisions);
            if (isfinite(m->valid_obj))
                fprintf(stderr, " | valid $%.0f (best heuristic $%.0f, %+.1f%%)", m->valid_obj,
                        m->valid_best_h, 100 * (m->valid_obj / m->valid_best_h - 1));
            fputc('\n', stderr);
            last = clock_now_s();
        }
    }
    if (status == CLI_OK && spt_validate(t, err, sizeof err)) {
        fprintf(stderr, "strata: train: %s\n", err);
        status = CLI_FAIL;
    }
    if (status == CLI_OK) {
        const spt_metrics *m = spt_last(t);
        if (as_json) {
            json_t *o = json_object();
            json_object_set_new(o, "mode", json_string("sim"));
            json_object_set_new(o, "steps", json_integer(m->step));
            json_object_set_new(o, "episodes", json_real(m->episodes));
            json_object_set_new(o, "seconds", json_real(clock_now_s() - t0));
            json_object_set_new(o, "valid_objective",
                                isfinite(m->valid_obj) ? json_real(m->valid_obj) : json_null());
            json_object_set_new(o, "valid_best_heuristic",
                                isfinite(m->valid_best_h) ? json_real(m->valid_best_h) : json_null());
            json_object_set_new(o, "out", json_string(cf->out));
            report_json_print(stdout, o);
        } else if (!quiet) {
            printf("trained %d steps (%.0f episodes) in %.0f s; checkpoints in %s (last.h5, best.h5)\n",
                   m->step, m->episodes, clock_now_s() - t0, cf->out);
            if (isfinite(m->valid_obj))
                printf("validation: policy $%.2f, best heuristic $%.2f (%+.1f%%)\n", m->valid_obj,
                       m->valid_best_h, 100 * (m->valid_obj / m->valid_best_h - 1));
        }
    }
    spt_free(t);
    spt_conf_free(cf);
    return status;
}

int cmd_train(int argc, char **argv) {
    static const struct option opts[] = {
        {"resume", required_argument, 0, 'r'}, {"seconds", required_argument, 0, 's'},
        {"steps", required_argument, 0, 'n'},  {"out", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 't'}, {"search", required_argument, 0, 'S'},
        {"samples", required_argument, 0, 'k'}, {"seed", required_argument, 0, 'e'},
        {"polish", no_argument, 0, 'p'},       {"json", no_argument, 0, 'J'},
        {"no-polish", no_argument, 0, 'N'},
        {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
        {"stop-at", required_argument, 0, 'x'},
        {"compare", no_argument, 0, 'c'},      {"policy", required_argument, 0, 'P'},
        {"overwrite", no_argument, 0, 'w'},
        {0, 0, 0, 0},
    };
    const char *resume = NULL, *search = NULL, *out = NULL, *policy = "checkpoints/general.h5";
    double seconds = -1, steps = -1, threads = -1, samples = -1, seed = -1, stop_at = -1;
    int as_json = 0, quiet = 0, polish = 0, do_compare = 0, overwrite = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "r:s:n:o:t:S:k:e:x:cP:pNwJqh", opts, NULL)) != -1) {
        switch (c) {
        case 'r': resume = optarg; break;
        case 's': if (parse_num("--seconds", optarg, 0, &seconds)) return CLI_USAGE; break;
        case 'n': if (parse_num("--steps", optarg, 1, &steps)) return CLI_USAGE; break;
        case 'o': out = optarg; break;
        case 't': if (parse_num("--threads", optarg, 0, &threads)) return CLI_USAGE; break;
        case 'S': search = optarg; break;
        case 'k': if (parse_num("--samples", optarg, 2, &samples)) return CLI_USAGE; break;
        case 'e': if (parse_num("--seed", optarg, 0, &seed)) return CLI_USAGE; break;
        case 'x': if (parse_num("--stop-at", optarg, 1, &stop_at)) return CLI_USAGE; break;
        case 'p': polish = 1; break;
        case 'N': polish = -1; break;
        case 'w': overwrite = 1; break;
        case 'c': do_compare = 1; break;
        case 'P': policy = optarg; break;
        case 'J': as_json = 1; break;
        case 'q': quiet = 1; break;
        case 'h': train_usage(stdout); return CLI_OK;
        default: train_usage(stderr); return CLI_USAGE;
        }
    }
    if ((search && optind != argc) || (!search && optind != argc - 1)) {
        train_usage(stderr);
        return CLI_USAGE;
    }
    if (!search && spt_conf_is(argv[optind])) {
        if (resume) {
            fprintf(stderr, "strata: %s: --resume is not supported for a sim train config (mode: "
                            "sim); start a new run\n", argv[optind]);
            return CLI_USAGE;
        }
        return train_sim(argv[optind], seconds, steps, out, overwrite, as_json, quiet);
    }
    int mpi = 0, rank = 0;
#ifdef STRATA_HAVE_MPI
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) {
        MPI_Init(NULL, NULL);
        mpi = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
#endif
    char err[2048];
    int status = CLI_USAGE;
    agent_trainer *t = NULL;
    agent_trainconf *tc = search ? agent_trainconf_search(search, err, sizeof err)
                                 : agent_trainconf_load(argv[optind], err, sizeof err);
    if (!tc) {
        if (rank == 0) fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    if (seconds >= 0) tc->seconds = seconds;
    if (steps > 0) tc->steps = (int)fmin(steps, 2147483647.0);
    if (threads >= 0) tc->threads = (int)threads;
    if (samples > 0) tc->samples = (int)samples;
    if (seed >= 0) tc->seed = (int)fmin(seed, 2147483647.0);
    if (polish) tc->polish = polish > 0;
    if (out) snprintf(tc->out, sizeof tc->out, "%s", out);
    if (search && !out) snprintf(tc->out, sizeof tc->out, "runs/search");
    /* rank 0 looks (before it writes there) and tells the others, so that
     * all refuse together */
    int refuse = !resume && !overwrite && rank == 0 && earlier_run(tc->out, err, sizeof err);
#ifdef STRATA_HAVE_MPI
    if (mpi) MPI_Bcast(&refuse, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    if (refuse) {
        if (rank == 0) fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    t = agent_train_create(tc, resume, err, sizeof err);
    if (!t) {
        if (rank == 0) fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    int tty = isatty(2) && !quiet;
    double t0 = clock_now_s(), last_print = -1e9;
    status = CLI_OK;
    for (;;) {
        double el = clock_now_s() - t0;
        int stop = agent_train_done(t) || (tc->seconds > 0 && el >= tc->seconds) ||
                   (stop_at > 0 && agent_train_step_count(t) >= (long)stop_at);
        if (agent_train_agree(t, stop)) break;
        if (agent_train_step(t, err, sizeof err)) {
            fprintf(stderr, "\nstrata: train (rank %d): %s\n", rank, err);
            status = CLI_FAIL;
            break;
        }
        const agent_metrics *m = agent_train_last(t);
        double n = clock_now_s();
        if (rank == 0 && !quiet && m && (n - last_print >= (tty ? 0.1 : 5.0))) {
            progress(tc, m, n - t0, tc->seconds, tty, 0);
            last_print = n;
        }
    }
    double secs = clock_now_s() - t0;
    if (status == CLI_OK) {
        const agent_metrics *m = agent_train_last(t);
        if (rank == 0 && !quiet && m) progress(tc, m, secs, tc->seconds, tty, 1);
        if (agent_train_finish(t, err, sizeof err)) {
            fprintf(stderr, "strata: %s\n", err);
            status = CLI_FAIL;
        } else if (rank == 0) {
            if (tc->mode == AGENT_MODE_SEARCH) {
                status = report_search(t, tc, as_json, secs);
                if (do_compare && !as_json) compare(t, policy, secs);
            } else
                report_general(t, as_json, secs);
        }
    }
done:
    agent_train_free(t);
    agent_trainconf_free(tc);
#ifdef STRATA_HAVE_MPI
    if (mpi) MPI_Finalize();
#endif
    (void)mpi;
    return status;
}

/* ---------------------------------------------------------------------------
 * strata solve --method policy
 * ------------------------------------------------------------------------ */

int cli_solve_policy(const cfg_run *run, const model_job *job, const char *ckpt, int samples,
                     int polish, uint64_t seed, long budget_ms, int as_json) {
    char err[2048];
    cli_blas_one_thread();
    agent_policy *pol = agent_policy_load(ckpt, err, sizeof err);
    if (!pol) {
        fprintf(stderr, "strata: %s\n", err);
        return CLI_USAGE;
    }
    const model_cluster *cl = &run->cluster;
    int status = CLI_FAIL;
    int *assign = malloc((size_t)job->n_layers * sizeof *assign);
    model_plan *plan = model_plan_create(job->n_layers);
    if (!assign || !plan) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    agent_decode_opts o = {.decode = samples > 1 ? AGENT_DECODE_SAMPLE : AGENT_DECODE_GREEDY,
                           .samples = samples > 1 ? samples : 1,
                           .seed = seed,
                           .placement = PLACER_PLACE_NONE,
                           .budget_ms = budget_ms <= 0 ? 0 : budget_ms > INT_MAX ? INT_MAX : (int)budget_ms,
                           .polish = polish};
    agent_decode_result res = {.assign = assign, .task_node = NULL, .plan = plan};
    double t0 = clock_now_s();
    int rc = agent_policy_decode(pol, job, cl, &o, &res, err, sizeof err);
    double secs = clock_now_s() - t0;
    if (rc < 0) {
        fprintf(stderr, "strata: %s\n", err);
        status = CLI_USAGE;
        goto done;
    }
    const char *decoding = samples > 1 ? "sample" : "greedy";
    if (as_json) {
        json_t *o2;
        if (rc == 0)
            o2 = render_plan_json(job, cl, plan);
        else {
            o2 = json_object();
            json_object_set_new(o2, "feasible", json_false());
            json_object_set_new(o2, "reason", json_string(plan->why));
            json_object_set_new(o2, "assignment", json_null());
            json_object_set_new(o2, "cost", json_null());
            json_object_set_new(o2, "throughput", json_null());
        }
        json_object_set_new(o2, "found", json_boolean(rc == 0));
        json_object_set_new(o2, "method", json_string("policy"));
        json_object_set_new(o2, "optimal", json_false());
        json_object_set_new(o2, "stopped", json_boolean(res.stopped));
        json_object_set_new(o2, "seconds", json_real(secs));
        json_object_set_new(o2, "evaluations", json_integer(res.samples_used));
        json_object_set_new(o2, "decoding", json_string(decoding));
        json_object_set_new(o2, "samples", json_integer(res.samples_used));
        if (polish) { /* only then: the answers without polish are unchanged */
            json_object_set_new(o2, "polished", json_boolean(res.polished));
            json_object_set_new(o2, "cost_before_polish",
                                isfinite(res.unpolished) ? json_real(res.unpolished) : json_null());
        }
        if (res.anchored) { /* only then: the answers of plans the policy decoded alone are unchanged */
            json_object_set_new(o2, "anchored_layers", json_integer(res.anchored));
            json_object_set_new(o2, "anchor_method",
                                json_string(solve_method_name((solve_method)res.anchor_method)));
        }
        json_t *po = json_object();
        json_object_set_new(po, "path", json_string(agent_policy_path(pol)));
        json_object_set_new(po, "step", json_integer(agent_policy_step(pol)));
        json_object_set_new(po, "hash", json_string(agent_policy_hash(pol)));
        json_object_set_new(o2, "policy", po);
        report_json_print(stdout, o2);
    } else {
        if (rc == 0)
            report_plan_table(stdout, job, cl, plan);
        else
            printf("no feasible plan: %s\n", plan->why);
        if (polish && res.polished)
            printf("polish: segment moves took the policy's plan from $%.2f to $%.2f\n", res.unpolished,
                   plan->cost);
        else if (polish && rc == 0)
            printf("polish: no segment move lowers the policy's plan's cost\n");
        if (res.anchored)
            printf("dead end: the first %d of %d layers are %s's plan, the rest decoded by the policy\n",
                   res.anchored, job->n_layers, solve_method_name((solve_method)res.anchor_method));
        printf("method: policy (%s, %d decoded%s), not proven optimal\npolicy: %s, step %lld, weights %s\n"
               "wall time: %.3f s\n",
               decoding, res.samples_used, res.stopped ? ", stopped by the budget" : "",
               agent_policy_path(pol), (long long)agent_policy_step(pol), agent_policy_hash(pol), secs);
    }
    status = rc == 0 ? CLI_OK : CLI_FAIL;
done:
    free(assign);
    model_plan_free(plan);
    agent_policy_free(pol);
    return status;
}
