/* solve.c -- `strata solve`: find a layer-to-type plan with one method.
 *
 * `strata solve FILE --method M [--budget-ms N] [--evals N] [--seed S]
 * [--job NAME] [--json]` loads a run, solves the plan of one job with
 * solvers/solve.h and prints the plan as `strata cost` does, followed by
 * the method, whether the plan is proven optimal (and the lower bound when
 * known), the evaluations made and the wall time. With --json it prints
 * render_plan_json's object with the keys method, optimal, lower_bound
 * (when known), seconds, evaluations, stopped and, when no plan was found,
 * found: false, infeasible and reason. Exit status: 0 a plan was found,
 * 1 none was, 2 bad usage or input.
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
#include "env/render.h"
#include "solvers/fit.h"
#include "solvers/solve.h"

static void solve_usage(FILE *f) {
    fprintf(f, "usage: strata solve FILE [--method M] [--budget-ms N] [--evals N] [--seed S] "
               "[--job NAME] [--json]\n  methods:");
    for (int m = 0; m < SOLVE_N_METHODS; m++) fprintf(f, " %s", solve_method_name((solve_method)m));
    fprintf(f, " policy (default exact)\n  --method policy --policy CKPT [--samples N] [--polish]: decode a "
               "trained policy, greedy or the best of N plans\n    (greedy's, N/4 flips of it, up to N/4 flips of the best flip, the rest sampled; "
               "N <= 1000000;\n    sampling stops when --budget-ms is spent); --polish finishes the plan by segment "
               "moves\n  several jobs (objective: jct): --method sequential|smd "
               "[--plan-method M]\n  --budget-ms: wall-clock budget, default %ld (0: none)\n"
               "  --evals: evaluation budget of random/genetic/anneal, default %ld\n",
            SOLVE_DEFAULT_BUDGET_MS, SOLVE_DEFAULT_EVALS);
}

int cmd_solve(int argc, char **argv) {
    static const struct option opts[] = {
        CLI_SOLVE_OPTIONS,
        {"policy", required_argument, 0, 'P'},  /* agent: --method policy */
        {"samples", required_argument, 0, 'k'}, /* agent: --method policy */
        {"polish", no_argument, 0, 'O'},        /* agent: --method policy */
        {0, 0, 0, 0},
    };
    /* agent: --method policy decodes one job; cmd_solve_jobs does not know
     * its options, so it must not see (and permute) them */
    int policy_args = 0;
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], "--policy", 8) || !strcmp(argv[i], "--method=policy") ||
            (!strcmp(argv[i], "--method") && i + 1 < argc && !strcmp(argv[i + 1], "policy")))
            policy_args = 1;
    int jobs_status = policy_args ? CLI_NOT_JOBS : cmd_solve_jobs(argc, argv); /* several jobs: cli/solve_jobs.c */
    if (jobs_status != CLI_NOT_JOBS) return jobs_status;
    solve_opts so;
    solve_opts_default(&so);
    const char *job_name = NULL, *policy = NULL;
    int as_json = 0, c, use_policy = 0, samples = 0, polish = 0;
    long long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:b:e:s:j:JhP:k:O", opts, NULL)) != -1) {
        switch (c) {
        case 'P': policy = optarg; break;
        case 'k':
            if (cli_parse_int("--samples", optarg, 1, 1000000, &v)) return CLI_USAGE;
            samples = (int)v;
            break;
        case 'O': polish = 1; break;
        case 'm': {
            if (!strcmp(optarg, "policy")) { /* a trained policy: cli/train.c */
                use_policy = 1;
                break;
            }
            int m = solve_method_parse(optarg);
            if (m < 0) {
                fprintf(stderr, "strata solve: --method: unknown method '%s'\n", optarg);
                solve_usage(stderr);
                return CLI_USAGE;
            }
            so.method = (solve_method)m;
            break;
        }
        case 'b':
        case 'e':
        case 's':
            if (cli_solve_budget(c, optarg, &so)) return CLI_USAGE;
            break;
        case 'j': job_name = optarg; break;
        case 'J': as_json = 1; break;
        case 'h': solve_usage(stdout); return CLI_OK;
        default: solve_usage(stderr); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        solve_usage(stderr);
        return CLI_USAGE;
    }

    cfg_run *run = cli_load_run(argv[optind]);
    if (!run) return CLI_USAGE;
    int status = CLI_USAGE;
    solve_result *res = NULL;
    const model_job *job = cli_find_job(run, job_name);
    if (!job) goto done;
    if (use_policy || policy) {
        if (!use_policy || !policy) {
            fprintf(stderr, "strata solve: --method policy needs --policy CKPT (and --policy needs --method policy)\n");
            goto done;
        }
        status = cli_solve_policy(run, job, policy, samples, polish, so.seed, so.budget_ms, as_json);
        goto done;
    }
    res = solve_result_create(job->n_layers);
    if (!res) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    int rc = solve_run(job, &run->cluster, &so, res);
    if (rc == SOLVE_ERROR) {
        fprintf(stderr, "strata: %s\n", res->why);
        status = CLI_FAIL;
        goto done;
    }
    const char *method = solve_method_name(so.method);
    int known_lb = !isnan(res->lower_bound) && isfinite(res->lower_bound);
    if (as_json) {
        json_t *o;
        if (rc == 0) {
            o = render_plan_json(job, &run->cluster, res->plan);
        } else {
            o = json_object();
            json_object_set_new(o, "feasible", json_false());
            json_object_set_new(o, "reason", json_string(res->why));
            json_object_set_new(o, "assignment", json_null());
            json_object_set_new(o, "cost", json_null());
            json_object_set_new(o, "throughput", json_null());
            json_object_set_new(o, "infeasible", json_boolean(res->infeasible));
        }
        json_object_set_new(o, "found", json_boolean(rc == 0));
        json_object_set_new(o, "method", json_string(method));
        json_object_set_new(o, "optimal", json_boolean(res->optimal));
        if (known_lb) json_object_set_new(o, "lower_bound", json_real(res->lower_bound));
        json_object_set_new(o, "stopped", json_boolean(res->stopped));
        json_object_set_new(o, "seconds", json_real(res->seconds));
        json_object_set_new(o, "evaluations", json_integer(res->evaluations));
        report_json_print(stdout, o);
    } else {
        if (rc == 0) report_plan_table(stdout, job, &run->cluster, res->plan);
        else printf("no feasible plan: %s\n", res->why);
        printf("method: %s", method);
        if (rc == 0)
            printf(", %s", res->optimal ? "proven optimal"
                                        : so.method == SOLVE_EXACT ? "not proven optimal"
                                                                   : "not proven optimal (heuristic)");
        if (known_lb && !res->optimal) printf(", lower bound $%.6g", res->lower_bound);
        if (res->stopped) printf(", stopped by the budget");
        printf("\nevaluations: %ld, wall time: %.3f s\n", res->evaluations, res->seconds);
    }
    status = rc == 0 ? CLI_OK : CLI_FAIL;

done:
    solve_result_free(res);
    cfg_free(run);
    return status;
}
