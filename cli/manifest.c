/* manifest.c -- `strata manifest`: a plan as apply-able Kubernetes YAML.
 *
 *   strata manifest CONFIG [--method M | --policy CKPT] [--placement P]
 *       [--kind jobset|volcano|tfjob|pytorchjob|auto] [--framework
 * tensorflow|pytorch]
 *       [--image IMG] [--namespace NS] [--name NAME] [--job NAME] [--seed S]
 *       [--catalogue FILE] [--node-label TYPE=KEY=V1,V2 ...] [--no-scheduler]
 *       [--out FILE] [--command CMD ARGS...]
 *
 * The plan is the one --method finds (default exact) or the policy
 * checkpoint --policy decodes (greedy); --placement places its tasks by a
 * placer method (spread, pack, aggregate, zone, best) or reads a placement
 * file (cfg_load_placement's format). The object is env/manifest.h's; the
 * labels that name each type on the nodes come from --node-label, else
 * from the catalogue entry of the same name (configs/catalogue/instances.yaml,
 * the names `strata import-nodes` gives types), else strata.io/type=<name>
 * (said on stderr). Everything after --command is the training command.
 * Exit status: 0 written, 1 no feasible plan or placement, 2 bad usage or
 * input (among them --kind tfjob for a plan that mixes types).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/policy.h"
#include "cli/cli.h"
#include "cli/common.h"
#include "env/config.h"
#include "env/import.h"
#include "env/manifest.h"
#include "env/place.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#define MANIFEST_USAGE                                                                             \
    "usage: strata manifest CONFIG [--method M | --policy CKPT] [--placement "                     \
    "METHOD|FILE]\n"                                                                               \
    "         [--kind jobset|volcano|tfjob|pytorchjob|auto] [--framework "                         \
    "tensorflow|pytorch]\n"                                                                        \
    "         [--image IMG] [--namespace NS] [--name NAME] [--job NAME] "                          \
    "[--seed S]\n"                                                                                 \
    "         [--catalogue FILE] [--node-label TYPE=KEY=V1,V2 ...] "                               \
    "[--no-scheduler]\n"                                                                           \
    "         [--out FILE] [--command CMD ARGS...]\n"

#define DEFAULT_CATALOGUE "configs/catalogue/instances.yaml"

/* Fills one term from "KEY=V1,V2". Returns 0, or -1. */
static int parse_term(const char *text, manifest_term *t) {
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || (size_t)(eq - text) >= sizeof t->key || !eq[1]) return -1;
    memset(t, 0, sizeof *t);
    memcpy(t->key, text, (size_t)(eq - text));
    const char *p = eq + 1;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 0 || n >= MODEL_NAME_MAX || t->n_values == MANIFEST_MAX_VALUES) return -1;
        memcpy(t->values[t->n_values++], p, n);
        p += n + (c ? 1 : 0);
    }
    return 0;
}

/* The labels of type t from catalogue entry e: its instance types, or its
 * GPU products under NVIDIA GPU feature discovery's label and, for the
 * lower-case nvidia-* values GKE uses, cloud.google.com/gke-accelerator. */
static void labels_from_entry(const imp_entry *e, manifest_type_labels *tl) {
    memset(tl, 0, sizeof *tl);
    tl->unit_cpus = e->unit_cpus;
    manifest_term *product = NULL, *gke = NULL;
    for (int i = 0; i < e->n_match; i++) {
        manifest_term **slot = &product;
        const char *key = "nvidia.com/gpu.product";
        if (!e->by_gpu)
            key = "node.kubernetes.io/instance-type";
        else if (!strncmp(e->match[i], "nvidia-", 7)) {
            slot = &gke;
            key = "cloud.google.com/gke-accelerator";
        }
        if (!*slot) {
            if (tl->n_terms == MANIFEST_MAX_TERMS) return;
            *slot = &tl->terms[tl->n_terms++];
            snprintf((*slot)->key, sizeof(*slot)->key, "%s", key);
        }
        if ((*slot)->n_values < MANIFEST_MAX_VALUES)
            snprintf((*slot)->values[(*slot)->n_values++], MODEL_NAME_MAX, "%s", e->match[i]);
    }
}

int cmd_manifest(int argc, char **argv) {
    static const struct option opts[] = {
        {"method", required_argument, 0, 'm'},
        {"policy", required_argument, 0, 'P'},
        {"placement", required_argument, 0, 'p'},
        {"kind", required_argument, 0, 'k'},
        {"framework", required_argument, 0, 'f'},
        {"image", required_argument, 0, 'i'},
        {"namespace", required_argument, 0, 'n'},
        {"name", required_argument, 0, 'N'},
        {"job", required_argument, 0, 'j'},
        {"seed", required_argument, 0, 's'},
        {"catalogue", required_argument, 0, 'c'},
        {"node-label", required_argument, 0, 'L'},
        {"no-scheduler", no_argument, 0, 'S'},
        {"out", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    /* the training command: everything after --command */
    int n_command = 0;
    char **command = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--command")) {
            command = argv + i + 1;
            n_command = argc - i - 1;
            argc = i;
            if (n_command == 0) {
                fprintf(stderr, "strata manifest: --command: give the command and its arguments\n");
                return CLI_USAGE;
            }
            break;
        }
    manifest_opts mo;
    manifest_opts_default(&mo);
    mo.n_command = n_command;
    mo.command = command;
    const char *method_text = NULL, *policy = NULL, *placement = NULL, *job_name = NULL;
    const char *catalogue = NULL, *out_path = NULL;
    const char *node_labels[MODEL_MAX_TYPES];
    int n_node_labels = 0, c;
    uint64_t seed = 1;
    long long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:P:p:k:f:i:n:N:j:s:c:L:So:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': method_text = optarg; break;
        case 'P': policy = optarg; break;
        case 'p': placement = optarg; break;
        case 'k': {
            int k = manifest_kind_parse(optarg);
            if (k < 0) {
                fprintf(stderr,
                        "strata manifest: --kind: unknown kind '%s' (jobset, volcano, "
                        "tfjob, pytorchjob, auto)\n",
                        optarg);
                return CLI_USAGE;
            }
            mo.kind = (manifest_kind)k;
            break;
        }
        case 'f':
            if (!strcmp(optarg, "tensorflow"))
                mo.framework = MANIFEST_TENSORFLOW;
            else if (!strcmp(optarg, "pytorch"))
                mo.framework = MANIFEST_PYTORCH;
            else {
                fprintf(stderr,
                        "strata manifest: --framework: expected tensorflow or pytorch, "
                        "got '%s'\n",
                        optarg);
                return CLI_USAGE;
            }
            break;
        case 'i': mo.image = optarg; break;
        case 'n': mo.ns = optarg; break;
        case 'N': mo.name = optarg; break;
        case 'j': job_name = optarg; break;
        case 's':
            if (cli_parse_int("--seed", optarg, 0, INT64_MAX, &v)) return CLI_USAGE;
            seed = (uint64_t)v;
            break;
        case 'c': catalogue = optarg; break;
        case 'L':
            if (n_node_labels == MODEL_MAX_TYPES) {
                fprintf(stderr, "strata manifest: --node-label: at most %d\n", MODEL_MAX_TYPES);
                return CLI_USAGE;
            }
            node_labels[n_node_labels++] = optarg;
            break;
        case 'S': mo.scheduler = 0; break;
        case 'o': out_path = optarg; break;
        case 'h': printf(MANIFEST_USAGE); return CLI_OK;
        default: fprintf(stderr, MANIFEST_USAGE); return CLI_USAGE;
        }
    }
    if (optind != argc - 1 || (method_text && policy)) {
        fprintf(stderr, MANIFEST_USAGE);
        return CLI_USAGE;
    }
    int plan_method = solve_method_parse(method_text ? method_text : "exact");
    if (plan_method < 0) {
        fprintf(stderr, "strata manifest: --method: unknown method '%s'\n", method_text);
        return CLI_USAGE;
    }

    char err[2048] = "";
    cfg_run *run = cli_load_run(argv[optind]);
    if (!run) return CLI_USAGE;
    int status = CLI_USAGE;
    int *assign = NULL, *task_node = NULL;
    model_plan *plan = NULL, *placed = NULL;
    solve_result *res = NULL;
    agent_policy *pol = NULL;
    imp_catalogue *cat = NULL;
    manifest_type_labels *labels = NULL;
    json_t *obj = NULL;
    FILE *out = NULL;
    const model_job *job = cli_find_job(run, job_name);
    if (!job) goto done;
    const model_cluster *cl = &run->cluster;

    /* how each type's nodes are recognised */
    labels = calloc((size_t)cl->n_types, sizeof *labels);
    if (!labels) goto oom;
    for (int i = 0; i < n_node_labels; i++) {
        char tname[MODEL_NAME_MAX];
        const char *eq = strchr(node_labels[i], '=');
        size_t n = eq ? (size_t)(eq - node_labels[i]) : 0;
        int t = -1;
        if (n > 0 && n < sizeof tname) {
            memcpy(tname, node_labels[i], n);
            tname[n] = '\0';
            t = model_cluster_type(cl, tname);
        }
        manifest_type_labels *tl = t >= 0 ? &labels[t] : NULL;
        if (!tl || tl->n_terms == MANIFEST_MAX_TERMS ||
            parse_term(eq + 1, &tl->terms[tl->n_terms])) {
            fprintf(stderr,
                    "strata manifest: --node-label '%s': expected TYPE=KEY=V1,V2 with "
                    "TYPE a type of the cluster\n",
                    node_labels[i]);
            goto done;
        }
        tl->n_terms++;
    }
    if (catalogue || access(DEFAULT_CATALOGUE, R_OK) == 0) {
        cat = imp_catalogue_load(catalogue ? catalogue : DEFAULT_CATALOGUE, err, sizeof err);
        if (!cat) {
            fprintf(stderr, "strata: %s\n", err);
            goto done;
        }
    }
    for (int t = 0; t < cl->n_types; t++) {
        if (labels[t].n_terms > 0) continue;
        for (int e = 0; cat && e < cat->n; e++)
            if (!strcmp(cat->entries[e].type.name, cl->types[t].name)) {
                labels_from_entry(&cat->entries[e], &labels[t]);
                break;
            }
        if (labels[t].n_terms == 0)
            fprintf(stderr,
                    "strata manifest: type %s is in no catalogue: its pods need nodes "
                    "labelled strata.io/type=%s (or give --node-label %s=KEY=VALUE)\n",
                    cl->types[t].name, cl->types[t].name, cl->types[t].name);
    }
    mo.labels = labels;

    /* the plan */
    assign = malloc((size_t)job->n_layers * sizeof *assign);
    plan = model_plan_create(job->n_layers);
    placed = model_plan_create(job->n_layers);
    if (!assign || !plan || !placed) goto oom;
    if (policy) {
        cli_blas_one_thread();
        pol = agent_policy_load(policy, err, sizeof err);
        if (!pol) {
            fprintf(stderr, "strata: %s\n", err);
            goto done;
        }
        agent_decode_opts o = {.decode = AGENT_DECODE_GREEDY,
                               .samples = 1,
                               .seed = seed,
                               .placement = PLACER_PLACE_NONE};
        agent_decode_result r = {.assign = assign, .task_node = NULL, .plan = plan};
        int rc = agent_policy_decode(pol, job, cl, &o, &r, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "strata: %s\n", err);
            goto done;
        }
        if (rc != 0) {
            fprintf(stderr, "strata: policy %s: no feasible plan: %s\n", policy, plan->why);
            status = CLI_FAIL;
            goto done;
        }
    } else {
        solve_opts so;
        solve_opts_default(&so);
        so.method = (solve_method)plan_method;
        so.seed = seed;
        res = solve_result_create(job->n_layers);
        if (!res) goto oom;
        int rc = solve_run(job, cl, &so, res);
        if (rc != 0) {
            fprintf(stderr, "strata: plan method %s: %s\n", solve_method_name(so.method), res->why);
            status = rc == SOLVE_NONE ? CLI_FAIL : CLI_USAGE;
            goto done;
        }
        memcpy(assign, res->assign, (size_t)job->n_layers * sizeof *assign);
    }
    if (model_eval(job, cl, assign, plan) != MODEL_FEASIBLE) {
        fprintf(stderr, "strata: job %s: the plan is infeasible: %s\n", job->name, plan->why);
        status = CLI_FAIL;
        goto done;
    }

    /* its placement, if asked */
    if (placement) {
        if (cl->n_nodes == 0) {
            fprintf(stderr, "strata: %s: --placement: the cluster lists no nodes\n", run->path);
            goto done;
        }
        task_node = malloc((size_t)(place_task_count(plan) + 1) * sizeof *task_node);
        if (!task_node) goto oom;
        int pm = placer_method_parse(placement);
        if (pm >= 0) {
            int rc = placer_run(job, cl, plan, (placer_method)pm, seed, task_node, placed, err,
                                sizeof err);
            if (rc == PLACER_NOFIT || rc == PLACER_ERROR) {
                fprintf(stderr, "strata: --placement %s: %s\n", placement, err);
                status = CLI_FAIL;
                goto done;
            }
            if (rc == PLACER_SLOW)
                fprintf(stderr, "strata manifest: warning: placement %s: %s\n", placement,
                        placed->why);
        } else {
            if (cfg_load_placement(placement, run, plan, task_node, err, sizeof err) < 0) {
                fprintf(stderr, "strata: %s\n", err);
                goto done;
            }
            if (place_eval(job, cl, plan, task_node, placed) != MODEL_FEASIBLE) {
                if (!placed->placed) { /* the tasks do not fit the nodes named */
                    fprintf(stderr, "strata: %s: %s\n", placement, placed->why);
                    status = CLI_FAIL;
                    goto done;
                }
                fprintf(stderr, "strata manifest: warning: placement %s: %s\n", placement,
                        placed->why);
            }
        }
    }

    /* the tasks are the plan's; the placement's refined figures do not
     * change them */
    obj = manifest_build(job, cl, plan, task_node, &mo, err, sizeof err);
    if (!obj) {
        fprintf(stderr, "strata: %s\n", err);
        goto done;
    }
    if (mo.framework == MANIFEST_PYTORCH &&
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                        "strata.io/ps-omitted"))
        fprintf(stderr,
                "strata manifest: a PyTorchJob runs the plan's workers with DDP "
                "(all-reduce); its %d ps tasks have no replica type there\n",
                plan->stages[0].n_ps);
    out = out_path ? fopen(out_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "strata: %s: cannot write: %s\n", out_path, strerror(errno));
        goto done;
    }
    if (manifest_write_yaml(out, obj, err, sizeof err) < 0 || fflush(out) != 0) {
        fprintf(stderr, "strata: %s: %s\n", out_path ? out_path : "stdout",
                err[0] ? err : "write failed");
        goto done;
    }
    status = CLI_OK;
    goto done;
oom:
    fprintf(stderr, "strata: out of memory\n");
done:
    if (out && out != stdout && fclose(out) != 0 && status == CLI_OK) {
        fprintf(stderr, "strata: %s: write failed\n", out_path);
        status = CLI_USAGE;
    }
    json_decref(obj);
    free(labels);
    imp_catalogue_free(cat);
    agent_policy_free(pol);
    solve_result_free(res);
    model_plan_free(placed);
    model_plan_free(plan);
    free(task_node);
    free(assign);
    cfg_free(run);
    return status;
}
