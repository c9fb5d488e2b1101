/* cost.c -- `strata cost` and `strata check`.
 *
 * `strata cost FILE --assign T1,T2,...` scores one layer-to-type plan by
 * docs/model.md and prints its stage table (or, with --json, one object);
 * with --placement P.yaml it also places the plan's tasks on the named
 * nodes and reports the refined figures and the traffic. `strata check
 * FILE` loads a config and prints a one-line summary, or the first error
 * with its file, line and column.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/report.h"
#include "env/config.h"
#include "env/place.h"
#include "env/render.h"

int cmd_cost(int argc, char **argv) {
    static const struct option opts[] = {
        {"assign", required_argument, 0, 'a'},
        {"placement", required_argument, 0, 'p'},
        {"job", required_argument, 0, 'j'},
        {"json", no_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *assign_text = NULL, *placement = NULL, *job_name = NULL;
    int as_json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "a:p:j:Jh", opts, NULL)) != -1) {
        switch (c) {
        case 'a': assign_text = optarg; break;
        case 'p': placement = optarg; break;
        case 'j': job_name = optarg; break;
        case 'J': as_json = 1; break;
        case 'h':
            printf("usage: strata cost FILE --assign T1,T2,...|T [--placement P.yaml] "
                   "[--job NAME] [--json]\n");
            return CLI_OK;
        default: return CLI_USAGE;
        }
    }
    if (optind != argc - 1 || !assign_text) {
        fprintf(stderr, "usage: strata cost FILE --assign T1,T2,...|T [--placement P.yaml] "
                        "[--job NAME] [--json]\n");
        return CLI_USAGE;
    }

    char err[2048];
    cfg_run *run = cli_load_run(argv[optind]);
    if (!run) return CLI_USAGE;
    int status = CLI_USAGE;
    model_plan *plan = NULL;
    int *assign = NULL, *task_node = NULL;
    const model_job *job = cli_find_job(run, job_name);
    if (!job) goto done;

    assign = malloc((size_t)job->n_layers * sizeof *assign);
    plan = model_plan_create(job->n_layers);
    if (!assign || !plan) {
        fprintf(stderr, "strata: out of memory\n");
        goto done;
    }
    if (model_assign_parse(job, &run->cluster, assign_text, assign, err, sizeof err) < 0) {
        fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    int rc = model_eval(job, &run->cluster, assign, plan);
    if (rc == MODEL_FEASIBLE && placement) {
        task_node = malloc((size_t)(place_task_count(plan) + 1) * sizeof *task_node);
        if (!task_node) {
            fprintf(stderr, "strata: out of memory\n");
            goto done;
        }
        if (cfg_load_placement(placement, run, plan, task_node, err, sizeof err) < 0) {
            fprintf(stderr, "strata: %s\n", err);
            goto done;
        }
        rc = place_eval(job, &run->cluster, plan, task_node, plan);
    }
    if (as_json) report_json_print(stdout, render_plan_json(job, &run->cluster, plan));
    else report_plan_table(stdout, job, &run->cluster, plan);
    status = rc == MODEL_FEASIBLE ? CLI_OK : CLI_FAIL;

done:
    free(task_node);
    free(assign);
    model_plan_free(plan);
    cfg_free(run);
    return status;
}

int cmd_check(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: strata check FILE\n");
        return CLI_USAGE;
    }
    cfg_run *run = cli_load_run(argv[1]);
    if (!run) return CLI_USAGE;
    const model_cluster *cl = &run->cluster;
    int units = 0;
    for (int t = 0; t < cl->n_types; t++) units += cl->types[t].count;
    printf("%s: ok: model v1, objective %s, %d types (%d units), %d nodes in %d zones; ",
           argv[1], run->objective == CFG_OBJECTIVE_JCT ? "jct" : "cost", cl->n_types,
           units, cl->n_nodes, cl->n_zones);
    for (int j = 0; j < run->n_jobs; j++)
        printf("%sjob %s: %d layers, batch %g, target %g samples/s", j ? "; " : "",
               run->jobs[j].name, run->jobs[j].n_layers, run->jobs[j].batch,
               run->jobs[j].min_throughput);
    printf("\n");
    cfg_free(run);
    return CLI_OK;
}
