/* decide.c -- the daemon's decision procedure (decide.h): options, the run of
 * a registered job, and planning and placing by the policy or by a solver
 * and a placer. Everything a decision writes is allocated per call, so any
 * number of requests decide at once on shared, immutable runs.
 */
#include "service/decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/place.h"
#include "solvers/placers.h"

/* ---- options ----------------------------------------------------------------- */

static const char *const PLACE_OPTION_KEYS[] = {"decode", "samples", "node_samples", "seed",
                                                "placement", "plan_method", "budget_ms", "polish"};

/* Names of placements accepted, for messages. */
void decide_placement_names(char *buf, size_t len, int with_policy) {
    size_t used = 0;
    buf[0] = '\0';
    for (int p = with_policy ? PLACER_PLACE_POLICY : 0; p < PLACER_N_METHODS && used < len; p++)
        used += (size_t)snprintf(buf + used, len - used, "%s, ", placer_placement_name(p));
    if (used < len) snprintf(buf + used, len - used, "%s", placer_placement_name(PLACER_PLACE_NONE));
}

void decide_method_names(char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int m = 0; m < SOLVE_N_METHODS && used < len; m++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", m ? ", " : "",
                                 solve_method_name((solve_method)m));
}

int decide_opts_parse(const json_t *options, int has_nodes, long max_budget_ms, decide_opts *o,
                      char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->from_policy = 1;
    o->decode = AGENT_DECODE_GREEDY;
    o->samples = 1;
    o->seed = 1;
    o->placement = has_nodes ? PLACER_PLACE_POLICY : PLACER_PLACE_NONE;
    o->fallback = 1;
    if (!options) return 0;
    if (!json_is_object(options)) {
        char d[96];
        rj_describe(options, d, sizeof d);
        snprintf(err, errlen, "options: expected an object, got %s", d);
        return -1;
    }
    if (rj_check_keys(options, "options", PLACE_OPTION_KEYS,
                      (int)(sizeof PLACE_OPTION_KEYS / sizeof *PLACE_OPTION_KEYS), err, errlen))
        return -1;
    const char *decode = NULL, *placement = NULL, *plan_method = NULL;
    long long samples = -1, node_samples = 0, seed = 1, budget = 0, polish = 0;
    if (rj_opt_string(options, "options", "decode", &decode, err, errlen) ||
        rj_opt_string(options, "options", "placement", &placement, err, errlen) ||
        rj_opt_string(options, "options", "plan_method", &plan_method, err, errlen) ||
        rj_opt_int(options, "options", "samples", 1, DECIDE_MAX_SAMPLES, &samples, err, errlen) ||
        rj_opt_int(options, "options", "node_samples", 0, DECIDE_MAX_NODE_SAMPLES, &node_samples,
                   err, errlen) ||
        rj_opt_int(options, "options", "seed", 0, 9007199254740991LL, &seed, err, errlen) ||
        rj_opt_int(options, "options", "budget_ms", 0, max_budget_ms, &budget, err, errlen) ||
        rj_opt_int(options, "options", "polish", 0, 1, &polish, err, errlen))
        return -1;
    if (decode) {
        if (!strcmp(decode, "greedy")) o->decode = AGENT_DECODE_GREEDY;
        else if (!strcmp(decode, "sample")) o->decode = AGENT_DECODE_SAMPLE;
        else {
            snprintf(err, errlen, "options.decode: expected \"greedy\" or \"sample\", got \"%.60s\"",
                     decode);
            return -1;
        }
    }
    if (samples > 0) {
        if (o->decode != AGENT_DECODE_SAMPLE && samples > 1) {
            snprintf(err, errlen, "options.samples: only with \"decode\": \"sample\"");
            return -1;
        }
        o->samples = (int)samples;
    } else if (o->decode == AGENT_DECODE_SAMPLE) {
        o->samples = 8;
    }
    o->seed = (uint64_t)seed;
    o->budget_ms = (long)budget;
    if (decode) o->fallback = 0; /* what was asked for is answered */
    if (plan_method && strcmp(plan_method, "policy") != 0) {
        int m = strcmp(plan_method, CLP_METHOD) ? solve_method_parse(plan_method) : 0;
        if (m < 0) {
            char names[256];
            decide_method_names(names, sizeof names);
            snprintf(err, errlen, "options.plan_method: unknown method \"%.60s\" (policy, "
                     CLP_METHOD ", %s)", plan_method, names);
            return -1;
        }
        o->from_policy = 0;
        o->cluster_policy = !strcmp(plan_method, CLP_METHOD);
        o->plan_method = (solve_method)m;
        o->fallback = 0;
        if (decode || samples > 0) {
            snprintf(err, errlen, "options.%s: only when the policy plans (plan_method policy)",
                     decode ? "decode" : "samples");
            return -1;
        }
        if (!placement) o->placement = has_nodes ? PLACER_ZONE : PLACER_PLACE_NONE;
    }
    if (placement) {
        if (placer_placement_parse(placement, &o->placement)) {
            char names[160];
            decide_placement_names(names, sizeof names, o->from_policy);
            snprintf(err, errlen, "options.placement: unknown placement \"%.60s\" (%s)",
                     placement, names);
            return -1;
        }
        if (o->placement == PLACER_PLACE_POLICY && !o->from_policy) {
            snprintf(err, errlen, "options.placement: \"policy\" places the policy's own "
                     "plan; with plan_method \"%s\" name a placer (spread, pack, "
                     "aggregate, zone, best)", plan_method);
            return -1;
        }
        if (o->placement != PLACER_PLACE_NONE && !has_nodes) {
            snprintf(err, errlen, "options.placement: the cluster lists no nodes to place "
                     "tasks on (send cluster.nodes, or \"placement\": \"none\")");
            return -1;
        }
    }
    if (node_samples > 0 && o->placement != PLACER_PLACE_POLICY) {
        snprintf(err, errlen, "options.node_samples: only when the policy's node head places "
                 "(\"placement\": \"policy\")");
        return -1;
    }
    o->node_samples = (int)node_samples;
    if (polish && !o->from_policy) {
        snprintf(err, errlen, "options.polish: finishes the policy's plan only (plan_method "
                 "policy)");
        return -1;
    }
    o->polish = (int)polish;
    return 0;
}

/* ---- deciding ------------------------------------------------------------------ */

void decide_result_free(decide_result *d) {
    if (!d) return;
    free(d->assign);
    free(d->task_node);
    model_plan_free(d->plan);
    model_plan_free(d->placed);
    memset(d, 0, sizeof *d);
}

#define DECIDE_MAX_TASKS (1 << 22) /* task_node buffers beyond this are refused */

static int place_found(const model_job *job, const model_cluster *cl, int placement,
                       uint64_t seed, decide_result *d, char *err, size_t errlen);

/* Plans with solver `method` and places by `placement` into d's buffers
 * (sized for job; task_node grown to the plan's tasks). Returns RJ_OK
 * (d->found 0 and d->why when no plan), RJ_BAD for a solver error, or
 * RJ_NOMEM. */
static int solve_and_place(const model_job *job, const model_cluster *cl, solve_method method,
                           int placement, uint64_t seed, long budget, long cpu_ms,
                           decide_result *d, char *err, size_t errlen) {
    int L = job->n_layers;
    d->found = 0;
    d->why[0] = d->placement_by[0] = '\0';
    d->final = d->plan;
    solve_result *res = solve_result_create(L);
    if (!res) {
        snprintf(err, errlen, "out of memory");
        return RJ_NOMEM;
    }
    solve_opts so;
    solve_opts_default(&so);
    so.method = method;
    so.seed = seed;
    so.budget_ms = budget > 0 ? budget : DECIDE_DEFAULT_SOLVE_BUDGET_MS;
    if (cpu_ms > 0 && so.budget_ms > cpu_ms) so.budget_ms = cpu_ms;
    int rc = solve_run(job, cl, &so, res);
    d->stopped = res->stopped;
    snprintf(d->plan_from, sizeof d->plan_from, "%s", solve_method_name(so.method));
    if (rc == SOLVE_ERROR) {
        snprintf(err, errlen, "plan_method %s: %s", solve_method_name(so.method), res->why);
        solve_result_free(res);
        return RJ_BAD;
    }
    if (rc != 0) {
        snprintf(d->why, sizeof d->why, "plan_method %s found no feasible plan: %.900s",
                 solve_method_name(so.method), res->why);
        solve_result_free(res);
        return 0;
    }
    memcpy(d->assign, res->assign, (size_t)L * sizeof *d->assign);
    solve_result_free(res);
    d->found = 1;
    model_eval(job, cl, d->assign, d->plan);
    return place_found(job, cl, placement, seed, d, err, errlen);
}

/* Places d->plan (found, scored by model_eval on cl) by `placement` into
 * d's buffers (task_node grown to the plan's tasks): d->final becomes the
 * placed plan, or d->why says why it could not be placed. Returns RJ_OK or
 * RJ_NOMEM. */
static int place_found(const model_job *job, const model_cluster *cl, int placement,
                       uint64_t seed, decide_result *d, char *err, size_t errlen) {
    if (placement == PLACER_PLACE_NONE || d->plan->reason != MODEL_FEASIBLE) return 0;
    int tasks = place_task_count(d->plan);
    if (tasks > DECIDE_MAX_TASKS) {
        snprintf(d->why, sizeof d->why, "the plan has %d tasks, more than the daemon places (%d)",
                 tasks, DECIDE_MAX_TASKS);
        return 0;
    }
    if (tasks > d->task_cap) {
        int *tn = realloc(d->task_node, (size_t)(tasks + 1) * sizeof *tn);
        if (!tn) {
            snprintf(err, errlen, "out of memory");
            return RJ_NOMEM;
        }
        d->task_node = tn;
        d->task_cap = tasks;
    }
    char msg[1024] = "";
    int pr = placer_run(job, cl, d->plan, (placer_method)placement, seed, d->task_node,
                        d->placed, msg, sizeof msg);
    if (pr == PLACER_OK || pr == PLACER_SLOW) {
        d->final = d->placed;
        snprintf(d->placement_by, sizeof d->placement_by, "%s",
                 placer_method_name((placer_method)placement));
    } else {
        snprintf(d->why, sizeof d->why, "placement %s: %.900s",
                 placer_method_name((placer_method)placement), msg);
    }
    return 0;
}

/* Whether a decision is one to act on: a plan that keeps the target and,
 * when placing was asked, is placed. */
static int decision_ok(const decide_result *d, int place) {
    return d->found && !d->why[0] && d->final->reason == MODEL_FEASIBLE &&
           (!place || d->final->placed || d->placement_by[0]);
}

/* The policy's decode into d (greedy or sampled, by ao). Returns RJ_OK or
 * RJ_BAD with err. */
static int policy_decode(const model_job *job, const model_cluster *cl,
                         const agent_decode_opts *ao, const pslot_entry *pol, int place,
                         decide_result *d, char *err, size_t errlen) {
    agent_decode_result res = {.assign = d->assign, .task_node = place ? d->task_node : NULL, .plan = d->plan};
    char msg[1024] = "";
    d->found = 0;
    d->why[0] = d->placement_by[0] = '\0';
    d->final = d->plan;
    int rc = agent_policy_decode(pol->policy, job, cl, ao, &res, msg, sizeof msg);
    if (rc < 0) {
        snprintf(err, errlen, "options: %s", msg);
        return RJ_BAD;
    }
    d->samples_used = res.samples_used;
    d->stopped = res.stopped;
    d->cancelled = res.cancelled;
    snprintf(d->plan_from, sizeof d->plan_from, "policy");
    if (place && d->plan->placed)
        snprintf(d->placement_by, sizeof d->placement_by, "%s",
                 placer_placement_name(ao->placement));
    d->found = d->plan->n_stages > 0;
    if (!d->found) snprintf(d->why, sizeof d->why, "%s", d->plan->why);
    return 0;
}

/* result_alloc gives d its buffers for a job of L layers and n_tasks
 * task slots, with d->final the plan. Returns 0, or -1 with "out of
 * memory" in err (what was taken is decide_result_free's to free). */
static int result_alloc(decide_result *d, int L, int n_tasks, char *err, size_t errlen) {
    d->assign = malloc((size_t)L * sizeof *d->assign);
    d->task_node = malloc((size_t)n_tasks * sizeof *d->task_node);
    d->plan = model_plan_create(L);
    d->placed = model_plan_create(L);
    if (!d->assign || !d->task_node || !d->plan || !d->placed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->final = d->plan;
    return 0;
}

int decide_run(const model_job *job, const model_cluster *cl, const decide_opts *o,
               const pslot_entry *pol, decide_result *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    int L = job->n_layers;
    if (o->cluster_policy) {
        snprintf(err, errlen, "options.plan_method: \"" CLP_METHOD "\" decides on the daemon's "
                 "free units only: POST /v1/place with options.on \"free\"");
        return RJ_BAD;
    }
    /* the time cap of the request: budget_ms as asked, never past cpu_ms */
    long budget = o->budget_ms;
    if (o->cpu_ms > 0 && (budget <= 0 || budget > o->cpu_ms)) budget = o->cpu_ms;
    agent_decode_opts ao = {o->decode, o->samples, o->seed, o->placement, (int)budget,
                            o->cancelled, o->cancel_ud, o->workers, o->ps, o->node_samples,
                            o->polish};
    /* The policy writes tasks while it decodes: its own bound sizes the
     * buffer. The solver path sizes it once the plan is known. */
    int cap = o->from_policy && pol ? agent_policy_task_cap(job, cl, &ao) : 0;
    if (cap < 0 || cap > DECIDE_MAX_TASKS) {
        snprintf(err, errlen, "cluster: plans on this cluster may have %d tasks, more than the "
                 "daemon places (%d)", cap, DECIDE_MAX_TASKS);
        return RJ_BAD;
    }
    d->task_cap = cap;
    if (o->from_policy && pol) {
        d->mem_estimate = agent_policy_decode_bytes(job, cl, &ao);
        if (o->mem_bytes > 0 && d->mem_estimate > o->mem_bytes) {
            snprintf(err, errlen, "request too large: decoding %d layers on %d nodes with %d "
                     "samples needs about %zu MiB, over the daemon's per-request memory limit "
                     "of %zu MiB (--request-mem-mb); send fewer samples, layers or nodes",
                     L, cl->n_nodes, ao.decode == AGENT_DECODE_SAMPLE ? ao.samples : 1,
                     (d->mem_estimate + (1u << 20) - 1) >> 20, o->mem_bytes >> 20);
            return DECIDE_TOO_BIG;
        }
    }
    if (result_alloc(d, L, cap + 1, err, errlen)) return RJ_NOMEM;
    int place = o->placement != PLACER_PLACE_NONE;
    /* The fallback's placer: the one asked for, zone for the policy's own. */
    int placer = o->placement == PLACER_PLACE_POLICY ? PLACER_ZONE : o->placement;
    char first[700];
    if (o->from_policy) {
        int rc = policy_decode(job, cl, &ao, pol, place, d, err, errlen);
        if (rc || !o->fallback || o->decode != AGENT_DECODE_GREEDY || decision_ok(d, place) ||
            d->cancelled)
            return rc;
        /* The greedy decode found no plan to act on: sample, then the exact
         * solver, and say so in plan_from. */
        snprintf(first, sizeof first, "%.690s", d->why[0] ? d->why : d->final->why);
        agent_decode_opts so = ao;
        so.decode = AGENT_DECODE_SAMPLE;
        so.samples = DECIDE_FALLBACK_SAMPLES;
        if (!o->mem_bytes || agent_policy_decode_bytes(job, cl, &so) <= o->mem_bytes) {
            rc = policy_decode(job, cl, &so, pol, place, d, err, errlen);
            if (rc) return rc;
            if (decision_ok(d, place)) {
                snprintf(d->plan_from, sizeof d->plan_from, "policy sample (greedy decode "
                         "infeasible)");
                return 0;
            }
            if (d->cancelled) return 0;
        }
        rc = solve_and_place(job, cl, SOLVE_EXACT, placer, o->seed, budget, o->cpu_ms, d, err,
                             errlen);
        if (rc) return rc;
        if (decision_ok(d, place)) {
            snprintf(d->plan_from, sizeof d->plan_from, "exact (greedy decode infeasible)");
            return 0;
        }
        /* Nothing better: the greedy decode's answer, with what was tried. */
        rc = policy_decode(job, cl, &ao, pol, place, d, err, errlen);
        char *w = d->why[0] ? d->why : NULL;
        if (w) snprintf(w, sizeof d->why, "%.700s (nor did %d sampled plans or the exact "
                        "solver find a plan to act on)", first, DECIDE_FALLBACK_SAMPLES);
        return rc;
    }
    int rc = solve_and_place(job, cl, o->plan_method, o->placement, o->seed, budget, o->cpu_ms,
                             d, err, errlen);
    if (rc || !o->fallback || o->plan_method != SOLVE_GREEDY || decision_ok(d, place))
        return rc;
    /* The greedy solver found no plan to act on: the exact solver. */
    snprintf(first, sizeof first, "%.690s", d->why[0] ? d->why : d->final->why);
    rc = solve_and_place(job, cl, SOLVE_EXACT, placer, o->seed, budget, o->cpu_ms, d, err,
                         errlen);
    if (rc) return rc;
    if (decision_ok(d, place)) {
        snprintf(d->plan_from, sizeof d->plan_from, "exact (greedy infeasible)");
        return 0;
    }
    rc = solve_and_place(job, cl, o->plan_method, o->placement, o->seed, budget, o->cpu_ms, d,
                         err, errlen);
    return rc;
}

/* ---- registered jobs ------------------------------------------------------------------ */

cfg_run *decide_load_registered(const rj_limits *lim, const json_t *doc, const json_t *nodes,
                                const json_t *zones, char *err, size_t errlen) {
    const json_t *cl = json_object_get(doc, "cluster");
    cfg_run *run = NULL;
    if (!json_is_object(cl)) {
        rj_load_run(cl, json_object_get(doc, "job"), NULL, lim, &run, err, errlen);
        return run;
    }
    /* A shallow copy of the cluster with its own types (counts removed or
     * defaulted) and, when given, the nodes and zones in place of its own. */
    json_t *copy = json_copy((json_t *)cl);
    json_t *types = json_deep_copy(json_object_get(cl, "types"));
    if (!copy || (json_object_get(cl, "types") && !types)) {
        json_decref(copy);
        json_decref(types);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (nodes) json_object_set(copy, "nodes", (json_t *)nodes);
    if (zones) json_object_set(copy, "zones", (json_t *)zones);
    int has_nodes = json_array_size(json_object_get(copy, "nodes")) > 0;
    size_t i;
    json_t *t;
    if (json_is_array(types)) {
        json_array_foreach(types, i, t) {
            if (!json_is_object(t)) continue;
            if (nodes) json_object_del(t, "count"); /* counts come from the nodes */
            else if (!has_nodes && !json_object_get(t, "count"))
                json_object_set_new(t, "count", json_integer(0)); /* nodes come later */
        }
        json_object_set(copy, "types", types);
    }
    json_decref(types);
    rj_load_run(copy, json_object_get(doc, "job"), NULL, lim, &run, err, errlen);
    json_decref(copy);
    return run;
}

/* ---- the shared-cluster policy ---------------------------------------------- */

int decide_cluster_policy(const model_job *job, const model_cluster *full,
                          const model_cluster *freec, int n_running, const decide_opts *o,
                          const spol_net *net, decide_result *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    int L = job->n_layers > 0 ? job->n_layers : 1;
    if (result_alloc(d, L, 1, err, errlen)) return RJ_NOMEM;
    snprintf(d->plan_from, sizeof d->plan_from, "%s", CLP_METHOD);
    if (clp_decide(net, job, full, freec, n_running, d->assign, &d->clp, err, errlen))
        return strstr(err, "out of memory") ? RJ_NOMEM : RJ_BAD;
    if (d->clp.wait || d->clp.n_cands == 0) {
        d->wait = d->clp.wait;
        snprintf(d->why, sizeof d->why, "%s", d->clp.why);
        return RJ_OK;
    }
    /* the plan as the policy provisioned it: for its target, on the free units */
    model_job at = *job;
    if (d->clp.target > at.min_throughput) at.min_throughput = d->clp.target;
    d->found = 1;
    model_eval(&at, freec, d->assign, d->plan);
    return place_found(&at, freec, o->placement, o->seed, d, err, errlen);
}
