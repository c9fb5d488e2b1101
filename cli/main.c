/* main.c -- the `strata` program: dispatches to a subcommand.
 *
 * The table below is the list of subcommands; each lives in its own file
 * under cli/ and is declared in cli.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static const command commands[] = {
    {"cost", cmd_cost, "cost FILE --assign T1,T2,... [--placement P.yaml] [--json]   score a plan"},
    {"check", cmd_check, "check FILE                                              validate a config"},
    {"solve", cmd_solve, "solve FILE [--method exact|homogeneous|rule|greedy|random|genetic|anneal] [--budget-ms N] [--evals N] [--seed S] [--json]   find a plan"},
    {"place", cmd_place, "place FILE --method spread|pack|aggregate|zone|best|all [--assign ...|--plan-method M] [--json]   place a plan's tasks on nodes"},
    {"fit", cmd_fit, "fit FILE [--job NAME] [--max-speed] [--max-workers N] [--max-ps N] [--json]   fit a throughput curve to measurements"},
    {"import-nodes", cmd_import_nodes, "import-nodes NODES.json [--out CLUSTER.yaml] [--catalogue FILE] [--allow-unknown]   a cluster from kubectl get nodes -o json"},
    {"calibrate", cmd_calibrate, "calibrate CONFIG MEASUREMENTS.csv [--holdout F] [--seed S] [--holdout-job JOB] [--out CALIBRATED.yaml] [--json]   fit the cluster's rates to measured runs"},
    {"manifest", cmd_manifest, "manifest FILE [--method M | --policy CKPT] [--placement P] [--kind jobset|volcano|tfjob|pytorchjob|auto] [--out F] [--command ...]   Kubernetes YAML that runs the plan"},
    {"serve", cmd_serve, "serve [--policy FILE.h5] [--listen HOST:PORT] [--threads N] [--token-file F]   run the placement daemon"},
    {"eval", cmd_eval, "eval CONFIG [--out DIR] [--jobs N] [--no-times] [--quiet]   evaluation runs: results.csv, summary.md, plots"},
    {"simulate", cmd_simulate, "simulate CONFIG [--method M]... [--out DIR] [--json] [--generate N --load L --seed S --preset P] [--write-trace FILE]   a shared cluster over time"},
    {"train", cmd_train, "train CONFIG [--resume CKPT | --overwrite] [--seconds N] [--json] | train --search FILE [--seconds N] [--json]   train the placement policy"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: strata COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  strata %s\n", commands[i].usage);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "strata: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
