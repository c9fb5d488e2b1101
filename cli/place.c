/* place.c -- `strata place`: put a plan's tasks on the cluster's nodes.
 *
 *   strata place FILE --method spread|pack|aggregate|zone|best|all
 *                [--assign T1,T2,...|T | --plan-method M2] [--job NAME]
 *                [--seed N] [--json]
 *   strata place FILE --method policy --policy CKPT [--job NAME] [--seed N] [--json]
 *   ... [--workers W] [--ps P] [--node-samples K]
 *
 * The plan is the one given by --assign, or the one the plan solver
 * --plan-method finds (default exact). Every task of it is placed by the
 * method (solvers/placers.h) and scored by place_eval: the stage table then
 * shows the refined X_s' (act) and P_s' (sync), and the run's throughput',
 * cost' and cross-node / cross-zone bytes per step follow, then every task
 * with its node. A placement that cannot keep throughput' >= R is shown
 * with the stage that falls short, and the exit status is 1. `--method all`
 * prints one row per method instead. A job carrying measurements is first
 * fitted (solvers/fit.h) and its reports say so. `--method policy` decodes
 * the plan and its placement with a trained policy (greedy: its layer head,
 * then its node head), as the daemon does for a job registered with the
 * policy loaded; the same report follows. --workers W and --ps P fix the
 * plan's task counts beforehand, as a job's replica counts do
 * (model_plan_set_counts: extra tasks to the stages with the fewest), and
 * the method places exactly those tasks: the policy then decodes a plan
 * that holds them and its node head places them, as the daemon does for a
 * job registered with replicas. --node-samples K has the node head also
 * sample K placements of the plan it decoded and keep the cheapest (its
 * greedy one included, so never dearer; a greedy placement that misses R
 * is not the end).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "agent/policy.h"
#include "cli/report.h"
#include "env/config.h"
#include "env/place.h"
#include "env/render.h"
#include "solvers/fit.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#define PLACE_USAGE                                                                    \
    "usage: strata place FILE --method spread|pack|aggregate|zone|best|all\n"          \
    "                    [--assign T1,T2,...|T | --plan-method M] [--job NAME] [--seed N] [--json]\n" \
    "       strata place FILE --method policy --policy CKPT [--job NAME] [--seed N] [--json]\n" \
    "       ... [--workers W] [--ps P]   (the plan's task counts, fixed beforehand)\n" \
    "       ... [--node-samples K]      (K placements sampled besides greedy's, 0 to 64)\n"

static const char *status_word(int rc) {
    switch (rc) {
    case PLACER_OK: return "ok";
    case PLACER_SLOW: return "misses R";
    case PLACER_NOFIT: return "no room";
    default: return "error";
    }
}

/* Prints every task with its node, stage by stage. */
static void print_tasks(const model_job *job, const model_cluster *cl, const model_plan *plan,
                        const int *task_node) {
    int n = place_task_count(plan);
    printf("%-5s %-5s %-6s %-24s %s\n", "task", "stage", "role", "node", "zone");
    for (int i = 0; i < n; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(plan, i, &s, &is_ps);
        const model_node *nd = &cl->nodes[task_node[i]];
        printf("%-5d %-5d %-6s %-24s %s\n", i, s, is_ps ? "ps" : "worker", nd->name,
               cl->n_zones > 0 ? cl->zones[nd->zone].name : "-");
    }
    (void)job;
}

static json_t *tasks_json(const model_cluster *cl, const model_plan *plan,
                          const int *task_node) {
    json_t *arr = json_array();
    int n = place_task_count(plan);
    for (int i = 0; i < n; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(plan, i, &s, &is_ps);
        const model_node *nd = &cl->nodes[task_node[i]];
        json_array_append_new(arr, json_pack("{s:i, s:i, s:s, s:s, s:s}", "task", i, "stage",
                                             s, "role", is_ps ? "ps" : "worker", "node",
                                             nd->name, "zone",
                                             cl->n_zones > 0 ? cl->zones[nd->zone].name : ""));
    }
    return arr;
}

/* `--method all`: one row per method. */
static int compare_all(const model_job *job, const model_cluster *cl, const model_plan *plan,
                       uint64_t seed, int as_json, int *task_node, model_plan *out) {
    json_t *rows = as_json ? json_array() : NULL;
    if (!as_json)
        printf("%-10s %-9s %14s %12s %16s %16s\n", "method", "status", "samples/s",
               "cost $", "cross-node B", "cross-zone B");
    int any_ok = 0;
    for (int m = 0; m < PLACER_N_METHODS; m++) {
        char err[512];
        int rc = placer_run(job, cl, plan, (placer_method)m, seed, task_node, out, err,
                            sizeof err);
        if (rc == PLACER_OK) any_ok = 1;
        int placed = rc == PLACER_OK || rc == PLACER_SLOW;
        if (as_json) {
            json_t *r = json_pack("{s:s, s:s}", "method", placer_method_name((placer_method)m),
                                  "status", status_word(rc));
            if (placed) {
                json_object_set_new(r, "throughput", json_real(out->throughput));
                json_object_set_new(r, "cost", json_real(out->cost));
                json_object_set_new(r, "cross_node_bytes", json_real(out->cross_node_bytes));
                json_object_set_new(r, "cross_zone_bytes", json_real(out->cross_zone_bytes));
                if (rc == PLACER_SLOW) json_object_set_new(r, "reason", json_string(out->why));
            } else {
                json_object_set_new(r, "reason", json_string(err));
            }
            json_array_append_new(rows, r);
        } else if (placed) {
            printf("%-10s %-9s %14.6g %12.2f %16.6g %16.6g\n",
                   placer_method_name((placer_method)m), status_word(rc), out->throughput,
                   out->cost, out->cross_node_bytes, out->cross_zone_bytes);
        } else {
            printf("%-10s %-9s %s\n", placer_method_name((placer_method)m), status_word(rc),
                   err);
        }
    }
    if (as_json) report_json_print(stdout, json_pack("{s:o}", "methods", rows));
    return any_ok ? CLI_OK : CLI_FAIL;
}

/* `--method policy`: the policy's greedy decode with its node head places
 * the plan it decodes. Prints the report; returns the exit status (0, 1
 * when the decode finds no feasible placement, 2 on a checkpoint that
 * does not load). */
static int place_with_policy(const model_job *job, const model_cluster *cl, const char *ckpt,
                             uint64_t seed, int workers, int ps, int node_samples, int as_json) {
    char err[2048];
    cli_blas_one_thread();
    agent_policy *pol = agent_policy_load(ckpt, err, sizeof err);
    if (!pol) {
        fprintf(stderr, "strata: --policy: %s\n", err);
        return CLI_USAGE;
    }
    int status = CLI_FAIL;
    agent_decode_opts o = {.decode = AGENT_DECODE_GREEDY, .samples = 1, .seed = seed,
                           .placement = PLACER_PLACE_POLICY, .workers = workers, .ps = ps,
                           .node_samples = node_samples};
    int cap = agent_policy_task_cap(job, cl, &o);
    int *assign = malloc((size_t)job->n_layers * sizeof *assign);
    int *task_node = cap >= 0 ? malloc((size_t)(cap + 1) * sizeof *task_node) : NULL;
    model_plan *plan = model_plan_create(job->n_layers);
    if (!assign || !task_node || !plan) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    agent_decode_result res = {.assign = assign, .task_node = task_node, .plan = plan};
    int rc = agent_policy_decode(pol, job, cl, &o, &res, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "strata: %s\n", err);
        status = CLI_USAGE;
        goto done;
    }
    if (rc != 0 || !plan->placed) {
        fprintf(stderr, "strata: the policy's decode found no feasible placement: %s\n",
                plan->why);
        goto done;
    }
    if (as_json) {
        json_t *j = render_plan_json(job, cl, plan);
        json_object_set_new(j, "plan_from", json_string("policy"));
        json_object_set_new(j, "method", json_string("policy"));
        json_object_set_new(j, "meets_target", json_true());
        json_object_set_new(j, "tasks", tasks_json(cl, plan, task_node));
        report_json_print(stdout, j);
    } else {
        printf("plan from policy, placement by policy (its node head%s; %s, step %lld)\n",
               node_samples > 0 ? ", the cheapest of greedy's and the sampled placements" : "",
               agent_policy_path(pol), (long long)agent_policy_step(pol));
        report_plan_table(stdout, job, cl, plan);
        print_tasks(job, cl, plan, task_node);
    }
    status = CLI_OK;
done:
    free(assign);
    free(task_node);
    model_plan_free(plan);
    agent_policy_free(pol);
    return status;
}

int cmd_place(int argc, char **argv) {
    static const struct option opts[] = {
        {"method", required_argument, 0, 'm'},
        {"assign", required_argument, 0, 'a'},
        {"plan-method", required_argument, 0, 'P'},
        {"job", required_argument, 0, 'j'},
        {"seed", required_argument, 0, 's'},
        {"json", no_argument, 0, 'J'},
        {"policy", required_argument, 0, 'p'},
        {"workers", required_argument, 0, 'w'},
        {"ps", required_argument, 0, 'g'},
        {"node-samples", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *method_text = NULL, *assign_text = NULL, *plan_text = NULL, *job_name = NULL;
    const char *policy = NULL;
    unsigned long long seed = 1;
    int as_json = 0, c, workers = 0, ps = 0, node_samples = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:a:P:j:s:Jp:w:g:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': method_text = optarg; break;
        case 'a': assign_text = optarg; break;
        case 'P': plan_text = optarg; break;
        case 'j': job_name = optarg; break;
        case 's': {
            long long v;
            if (cli_parse_int("--seed", optarg, 0, INT64_MAX, &v)) return CLI_USAGE;
            seed = (unsigned long long)v;
            break;
        }
        case 'J': as_json = 1; break;
        case 'p': policy = optarg; break;
        case 'w':
        case 'g': {
            long long v;
            if (cli_parse_int(c == 'w' ? "--workers" : "--ps", optarg, 1, 100000, &v))
                return CLI_USAGE;
            *(c == 'w' ? &workers : &ps) = (int)v;
            break;
        }
        case 'n': {
            long long v;
            if (cli_parse_int("--node-samples", optarg, 0, 64, &v)) return CLI_USAGE;
            node_samples = (int)v;
            break;
        }
        case 'h': printf(PLACE_USAGE); return CLI_OK;
        default: fprintf(stderr, PLACE_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc - 1 || !method_text || (assign_text && plan_text)) {
        fprintf(stderr, PLACE_USAGE);
        return CLI_USAGE;
    }
    int all = !strcmp(method_text, "all"), by_policy = !strcmp(method_text, "policy");
    if (by_policy != (policy != NULL) || (by_policy && (assign_text || plan_text))) {
        fprintf(stderr, "strata place: --method policy needs --policy CKPT (and --policy needs "
                "--method policy; the policy plans, so no --assign or --plan-method)\n");
        return CLI_USAGE;
    }
    if (node_samples > 0 && !by_policy) {
        fprintf(stderr, "strata place: --node-samples: only with --method policy (the node head "
                "samples the placements)\n");
        return CLI_USAGE;
    }
    int method = all || by_policy ? 0 : placer_method_parse(method_text);
    if (method < 0) {
        fprintf(stderr, "strata: --method: unknown placement method '%s' (spread, pack, "
                        "aggregate, zone, best, all, policy)\n", method_text);
        return CLI_USAGE;
    }
    int plan_method = solve_method_parse(plan_text ? plan_text : "exact");
    if (plan_method < 0) {
        fprintf(stderr, "strata: --plan-method: unknown plan method '%s'\n", plan_text);
        return CLI_USAGE;
    }

    char err[1024];
    cfg_run *run = cli_load_run(argv[optind]);
    if (!run) return CLI_USAGE;
    int status = CLI_USAGE;
    int *assign = NULL, *task_node = NULL;
    model_plan *plan = NULL, *out = NULL;
    solve_result *res = NULL;
    model_job *job = cli_find_job(run, job_name);
    if (!job) goto done;
    const model_cluster *cl = &run->cluster;
    if (cl->n_nodes == 0) {
        fprintf(stderr, "strata: %s: the cluster lists no nodes to place tasks on\n",
                run->path);
        goto done;
    }
    if (by_policy) {
        status = place_with_policy(job, cl, policy, seed, workers, ps, node_samples, as_json);
        goto done;
    }
    assign = malloc((size_t)job->n_layers * sizeof *assign);
    plan = model_plan_create(job->n_layers);
    out = model_plan_create(job->n_layers);
    if (!assign || !plan || !out) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    const char *plan_from;
    if (assign_text) {
        if (model_assign_parse(job, cl, assign_text, assign, err, sizeof err) < 0) {
            fprintf(stderr, "strata: %s\n", err);
            goto done;
        }
        plan_from = "--assign";
    } else {
        solve_opts so;
        solve_opts_default(&so);
        so.method = (solve_method)plan_method;
        so.seed = seed;
        res = solve_result_create(job->n_layers);
        if (!res) {
            fprintf(stderr, "strata: out of memory\n");
            goto done;
        }
        int rc = solve_run(job, cl, &so, res);
        if (rc != 0) {
            fprintf(stderr, "strata: plan method %s: %s\n", solve_method_name(so.method),
                    res->why);
            status = rc == SOLVE_NONE ? CLI_FAIL : CLI_USAGE;
            goto done;
        }
        memcpy(assign, res->assign, (size_t)job->n_layers * sizeof *assign);
        plan_from = solve_method_name(so.method);
    }
    if (model_eval(job, cl, assign, plan) != MODEL_FEASIBLE ||
        ((workers || ps) && model_plan_set_counts(job, cl, plan, workers, ps) != MODEL_FEASIBLE)) {
        if (as_json) report_json_print(stdout, render_plan_json(job, cl, plan));
        else report_plan_table(stdout, job, cl, plan);
        status = CLI_FAIL;
        goto done;
    }
    task_node = malloc((size_t)(place_task_count(plan) + 1) * sizeof *task_node);
    if (!task_node) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    if (all) {
        if (!as_json)
            printf("job %s: plan from %s, %d stages, %d tasks%s\n", job->name, plan_from,
                   plan->n_stages, place_task_count(plan),
                   job->curve.fitted ? " (throughput curve FITTED to measurements)" : "");
        status = compare_all(job, cl, plan, seed, as_json, task_node, out);
        goto done;
    }
    int rc = placer_run(job, cl, plan, (placer_method)method, seed, task_node, out, err,
                        sizeof err);
    if (rc == PLACER_NOFIT || rc == PLACER_ERROR) {
        fprintf(stderr, "strata: %s\n", err);
        status = CLI_FAIL;
        goto done;
    }
    if (as_json) {
        json_t *o = render_plan_json(job, cl, out);
        json_object_set_new(o, "plan_from", json_string(plan_from));
        json_object_set_new(o, "method", json_string(method_text));
        json_object_set_new(o, "meets_target", json_boolean(rc == PLACER_OK));
        if (rc == PLACER_SLOW) json_object_set_new(o, "bad_stage", json_integer(out->bad_stage));
        json_object_set_new(o, "tasks", tasks_json(cl, out, task_node));
        report_json_print(stdout, o);
    } else {
        printf("plan from %s, placement by %s (act = X_s', sync = P_s' on the links used)\n",
               plan_from, method_text);
        report_plan_table(stdout, job, cl, out);
        print_tasks(job, cl, out, task_node);
    }
    status = rc == PLACER_OK ? CLI_OK : CLI_FAIL;

done:
    free(task_node);
    free(assign);
    model_plan_free(plan);
    model_plan_free(out);
    solve_result_free(res);
    cfg_free(run);
    return status;
}
