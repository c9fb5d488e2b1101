/* api.c -- the /v1 endpoints of the placement daemon.
 *
 * Each POST handler runs in three steps: find the parsed body in the cache
 * or parse it (JSON, then the config loader; any error is a 400 naming the
 * field, or the line and column of malformed JSON), decide, and render the
 * answer. Parsed bodies are immutable and shared by concurrent requests;
 * everything a decision writes (assignment, plan, task placement) is
 * allocated per request.
 */
#include "service/api.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/place.h"
#include "service/k8s.h"
#include "solvers/placers.h"

/* Cache kinds: one per body schema. */
enum { KIND_PLACE = 1, KIND_COST = 2, KIND_SOLVE = 3 };

/* ---- options ----------------------------------------------------------------- */

static const char *const PLACE_OPTION_KEYS[] = {"decode", "samples", "seed", "placement",
                                                "plan_method", "budget_ms"};

/* Names of placements accepted, for messages. */
static void placement_names(char *buf, size_t len, int with_policy) {
    size_t used = (size_t)snprintf(buf, len, "%s", with_policy ? "policy, " : "");
    for (int m = 0; m < PLACER_N_METHODS && used < len; m++)
        used += (size_t)snprintf(buf + used, len - used, "%s, ",
                                 placer_method_name((placer_method)m));
    if (used < len) snprintf(buf + used, len - used, "none");
}

static void method_names(char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int m = 0; m < SOLVE_N_METHODS && used < len; m++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", m ? ", " : "",
                                 solve_method_name((solve_method)m));
}

int api_opts_parse(const json_t *options, int has_nodes, long max_budget_ms, api_opts *o,
                   char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->from_policy = 1;
    o->decode = AGENT_DECODE_GREEDY;
    o->samples = 1;
    o->seed = 1;
    o->placement = has_nodes ? API_PLACE_POLICY : API_PLACE_NONE;
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
    long long samples = -1, seed = 1, budget = 0;
    if (rj_opt_string(options, "options", "decode", &decode, err, errlen) ||
        rj_opt_string(options, "options", "placement", &placement, err, errlen) ||
        rj_opt_string(options, "options", "plan_method", &plan_method, err, errlen) ||
        rj_opt_int(options, "options", "samples", 1, API_MAX_SAMPLES, &samples, err, errlen) ||
        rj_opt_int(options, "options", "seed", 0, 9007199254740991LL, &seed, err, errlen) ||
        rj_opt_int(options, "options", "budget_ms", 0, max_budget_ms, &budget, err, errlen))
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
    if (plan_method && strcmp(plan_method, "policy") != 0) {
        int m = solve_method_parse(plan_method);
        if (m < 0) {
            char names[256];
            method_names(names, sizeof names);
            snprintf(err, errlen, "options.plan_method: unknown method \"%.60s\" (policy, %s)",
                     plan_method, names);
            return -1;
        }
        o->from_policy = 0;
        o->plan_method = (solve_method)m;
        if (decode || samples > 0) {
            snprintf(err, errlen, "options.%s: only when the policy plans (plan_method policy)",
                     decode ? "decode" : "samples");
            return -1;
        }
        if (!placement) o->placement = has_nodes ? PLACER_ZONE : API_PLACE_NONE;
    }
    if (placement) {
        char names[160];
        if (!strcmp(placement, "none")) {
            o->placement = API_PLACE_NONE;
        } else if (!strcmp(placement, "policy")) {
            if (!o->from_policy) {
                snprintf(err, errlen, "options.placement: \"policy\" places the policy's own "
                         "plan; with plan_method \"%s\" name a placer (spread, pack, "
                         "aggregate, zone, best)", plan_method);
                return -1;
            }
            o->placement = API_PLACE_POLICY;
        } else {
            int m = placer_method_parse(placement);
            if (m < 0) {
                placement_names(names, sizeof names, o->from_policy);
                snprintf(err, errlen, "options.placement: unknown placement \"%.60s\" (%s)",
                         placement, names);
                return -1;
            }
            o->placement = m;
        }
        if (o->placement != API_PLACE_NONE && !has_nodes) {
            snprintf(err, errlen, "options.placement: the cluster lists no nodes to place "
                     "tasks on (send cluster.nodes, or \"placement\": \"none\")");
            return -1;
        }
    }
    return 0;
}

/* ---- deciding ------------------------------------------------------------------ */

void api_decision_free(api_decision *d) {
    if (!d) return;
    free(d->assign);
    free(d->task_node);
    model_plan_free(d->plan);
    model_plan_free(d->placed);
    memset(d, 0, sizeof *d);
}

#define API_MAX_TASKS (1 << 22) /* task_node buffers beyond this are refused */

int api_decide(const model_job *job, const model_cluster *cl, const api_opts *o,
               const pslot_entry *pol, api_decision *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    int L = job->n_layers;
    /* The policy writes tasks while it decodes: its own bound sizes the
     * buffer. The solver path sizes it once the plan is known. */
    int cap = o->from_policy && pol ? agent_policy_max_tasks(job, cl) : 0;
    if (cap < 0 || cap > API_MAX_TASKS) {
        snprintf(err, errlen, "cluster: plans on this cluster may have %d tasks, more than the "
                 "daemon places (%d)", cap, API_MAX_TASKS);
        return 400;
    }
    d->task_cap = cap;
    d->assign = malloc((size_t)L * sizeof *d->assign);
    d->task_node = malloc((size_t)(cap + 1) * sizeof *d->task_node);
    d->plan = model_plan_create(L);
    d->placed = model_plan_create(L);
    if (!d->assign || !d->task_node || !d->plan || !d->placed) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    d->final = d->plan;
    if (o->from_policy) {
        agent_decode_opts ao = {o->decode, o->samples, o->seed,
                                o->placement != API_PLACE_NONE,
                                o->placement >= 0 ? placer_method_name((placer_method)o->placement)
                                                  : NULL,
                                (int)o->budget_ms};
        agent_decode_result res = {d->assign, ao.place ? d->task_node : NULL, d->plan, 0, 0};
        char msg[1024] = "";
        int rc = agent_policy_decode(pol->policy, job, cl, &ao, &res, msg, sizeof msg);
        if (rc < 0) {
            snprintf(err, errlen, "options: %s", msg);
            return 400;
        }
        d->samples_used = res.samples_used;
        snprintf(d->plan_from, sizeof d->plan_from, "policy");
        if (ao.place && d->plan->placed)
            snprintf(d->placement_by, sizeof d->placement_by, "%s",
                     ao.placement ? ao.placement : "policy");
        d->found = d->plan->n_stages > 0;
        if (!d->found) snprintf(d->why, sizeof d->why, "%s", d->plan->why);
        return 0;
    }
    solve_result *res = solve_result_create(L);
    if (!res) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    solve_opts so;
    solve_opts_default(&so);
    so.method = o->plan_method;
    so.seed = o->seed;
    so.budget_ms = o->budget_ms > 0 ? o->budget_ms : API_DEFAULT_SOLVE_BUDGET_MS;
    int rc = solve_run(job, cl, &so, res);
    snprintf(d->plan_from, sizeof d->plan_from, "%s", solve_method_name(so.method));
    if (rc == SOLVE_ERROR) {
        snprintf(err, errlen, "plan_method %s: %s", solve_method_name(so.method), res->why);
        solve_result_free(res);
        return 400;
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
    if (o->placement == API_PLACE_NONE || d->plan->reason != MODEL_FEASIBLE) return 0;
    int tasks = place_task_count(d->plan);
    if (tasks > API_MAX_TASKS) {
        snprintf(d->why, sizeof d->why, "the plan has %d tasks, more than the daemon places (%d)",
                 tasks, API_MAX_TASKS);
        return 0;
    }
    int *tn = realloc(d->task_node, (size_t)(tasks + 1) * sizeof *tn);
    if (!tn) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    d->task_node = tn;
    d->task_cap = tasks;
    char msg[1024] = "";
    int pr = placer_run(job, cl, d->plan, (placer_method)o->placement, o->seed, d->task_node,
                        d->placed, msg, sizeof msg);
    if (pr == PLACER_OK || pr == PLACER_SLOW) {
        d->final = d->placed;
        snprintf(d->placement_by, sizeof d->placement_by, "%s",
                 placer_method_name((placer_method)o->placement));
    } else {
        snprintf(d->why, sizeof d->why, "placement %s: %.900s",
                 placer_method_name((placer_method)o->placement), msg);
    }
    return 0;
}

json_t *api_tasks_json(const model_cluster *cl, const model_plan *plan, const int *task_node) {
    json_t *arr = json_array();
    int n = place_task_count(plan);
    for (int i = 0; i < n && arr; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(plan, i, &s, &is_ps);
        const model_node *nd = &cl->nodes[task_node[i]];
        json_array_append_new(arr, json_pack("{s:i, s:i, s:s, s:s, s:s}", "task", i, "stage", s,
                                             "role", is_ps ? "ps" : "worker", "node", nd->name,
                                             "zone",
                                             cl->n_zones > 0 ? cl->zones[nd->zone].name : ""));
    }
    return arr;
}

json_t *api_policy_json(const pslot_entry *pol) {
    if (!pol) return json_null();
    return json_pack("{s:s, s:I, s:s, s:I, s:f}", "file", pol->path, "step",
                     (json_int_t)pol->step, "hash", pol->hash, "generation",
                     (json_int_t)pol->generation, "loaded_at", pol->loaded_at);
}

/* ---- request bodies --------------------------------------------------------------- */

/* A parsed /v1/place body, and the memo of its last deterministic policy
 * answer: the JSON text of the answer without its closing brace (elapsed_us
 * and cached are appended per request), for the policy generation that
 * decoded it. The parse is immutable; the memo is guarded by memo_lock. */
typedef struct {
    cfg_run *run;
    api_opts opts;
    pthread_mutex_t memo_lock;
    uint64_t memo_gen; /* 0: no memo */
    char *memo;        /* malloc'd, memo_len bytes, no NUL needed */
    size_t memo_len;
    int memo_feasible;
} place_body;

static void place_body_free(void *p) {
    place_body *b = p;
    if (!b) return;
    cfg_free(b->run);
    pthread_mutex_destroy(&b->memo_lock);
    free(b->memo);
    free(b);
}

/* Parses the body of /v1/place; returns NULL with err on a bad body. */
static place_body *parse_place(const api_env *env, const web_request *req, char *err,
                               size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "options", "model"};
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return NULL;
    place_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    else pthread_mutex_init(&b->memo_lock, NULL);
    if (!b || rj_check_keys(root, "", keys, 4, err, errlen)) goto fail;
    b->run = rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                         json_object_get(root, "model"), &env->limits, err, errlen);
    if (!b->run) goto fail;
    if (api_opts_parse(json_object_get(root, "options"), b->run->cluster.n_nodes > 0,
                       env->max_budget_ms, &b->opts, err, errlen))
        goto fail;
    json_decref(root);
    return b;
fail:
    json_decref(root);
    place_body_free(b);
    return NULL;
}

/* Finds the parsed body in the cache or parses and caches it. Returns the
 * value with *ref held, or NULL after filling rep with a 400 (or 500). */
static void *cached_body(const api_env *env, const web_request *req, web_reply *rep, int kind,
                         void *(*parse)(const api_env *, const web_request *, char *, size_t),
                         void (*value_free)(void *), rc_entry **ref) {
    void *v = rc_get(env->cache, kind, req->body, req->body_len, ref);
    if (v) return v;
    char err[2048];
    v = parse(env, req, err, sizeof err);
    if (!v) {
        web_reply_error(rep, strcmp(err, "out of memory") ? 400 : 500, "%s", err);
        return NULL;
    }
    v = rc_put(env->cache, kind, req->body, req->body_len, v, value_free, ref);
    if (!v) web_reply_error(rep, 500, "out of memory");
    return v;
}

static void *parse_place_v(const api_env *env, const web_request *req, char *err, size_t n) {
    return parse_place(env, req, err, n);
}

/* ---- POST /v1/place ------------------------------------------------------------------ */

/* A policy decode is memoised when it is a function of the body and the
 * policy alone: greedy, or sampling with no time budget (the seed is in
 * the body). Solvers and placers are cheap and always run. */
static int memoisable(const api_opts *o) {
    return o->from_policy && (o->decode == AGENT_DECODE_GREEDY || o->budget_ms == 0);
}

/* reply_answer sends text[len] (a JSON object without its closing brace)
 * with "cached" and "elapsed_us" appended. Returns 0, or -1 when out of
 * memory (rep untouched). */
static int reply_answer(web_reply *rep, const web_request *req, const char *text, size_t len,
                        int cached, int feasible) {
    char tail[64];
    int n = snprintf(tail, sizeof tail, ",\"cached\":%s,\"elapsed_us\":%lld}",
                     cached ? "true" : "false", web_elapsed_us(req));
    char *body = malloc(len + (size_t)n + 1);
    if (!body) return -1;
    memcpy(body, text, len);
    memcpy(body + len, tail, (size_t)n + 1);
    free(rep->body);
    rep->status = 200;
    rep->body = body;
    rep->len = len + (size_t)n;
    rep->content_type = NULL;
    if (!feasible) snprintf(rep->note, sizeof rep->note, "infeasible");
    return 0;
}

/* memo_answer replies from b's memo when it was decoded by generation gen.
 * Returns 1 when it replied, else 0. */
static int memo_answer(place_body *b, uint64_t gen, const web_request *req, web_reply *rep) {
    int done = 0;
    pthread_mutex_lock(&b->memo_lock);
    if (b->memo && b->memo_gen == gen)
        done = reply_answer(rep, req, b->memo, b->memo_len, 1, b->memo_feasible) == 0;
    pthread_mutex_unlock(&b->memo_lock);
    return done;
}

/* memo_keep stores text[len] as b's memo for generation gen (a copy; on
 * allocation failure the memo is simply not kept). */
static void memo_keep(place_body *b, uint64_t gen, const char *text, size_t len, int feasible) {
    char *copy = malloc(len ? len : 1);
    if (!copy) return;
    memcpy(copy, text, len);
    pthread_mutex_lock(&b->memo_lock);
    free(b->memo);
    b->memo = copy;
    b->memo_len = len;
    b->memo_gen = gen;
    b->memo_feasible = feasible;
    pthread_mutex_unlock(&b->memo_lock);
}

/* place_answer renders d as the /v1/place answer, without elapsed_us and
 * cached. Returns a new reference (NULL when out of memory). */
static json_t *place_answer(const api_env *env, const place_body *b, const pslot_entry *pol,
                            const api_decision *d, int *feasible_out) {
    const model_job *job = &b->run->jobs[0];
    const model_cluster *cl = &b->run->cluster;
    const model_plan *p = d->final;
    int placed = d->found && p->placed;
    int feasible = d->found && p->reason == MODEL_FEASIBLE && !d->why[0];
    json_t *o = json_object();
    json_object_set_new(o, "feasible", json_boolean(feasible));
    if (!feasible) json_object_set_new(o, "reason", json_string(d->why[0] ? d->why : p->why));
    json_object_set_new(o, "plan", d->found ? env->plan_json(job, cl, p) : json_null());
    json_object_set_new(o, "placement", placed ? api_tasks_json(cl, p, d->task_node) : json_null());
    int scored = d->found && (p->reason == MODEL_FEASIBLE || p->placed);
    json_object_set_new(o, "throughput", scored ? json_real(p->throughput) : json_null());
    json_object_set_new(o, "cost", scored ? json_real(p->cost) : json_null());
    json_object_set_new(o, "traffic",
                        placed ? json_pack("{s:f, s:f}", "cross_node_bytes", p->cross_node_bytes,
                                           "cross_zone_bytes", p->cross_zone_bytes)
                               : json_null());
    json_object_set_new(o, "plan_from", json_string(d->plan_from));
    json_object_set_new(o, "placement_by",
                        d->placement_by[0] ? json_string(d->placement_by) : json_null());
    json_object_set_new(o, "policy", api_policy_json(b->opts.from_policy ? pol : NULL));
    if (b->opts.from_policy) json_object_set_new(o, "samples_used", json_integer(d->samples_used));
    *feasible_out = feasible;
    return o;
}

void api_place(const api_env *env, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    place_body *b = cached_body(env, req, rep, KIND_PLACE, parse_place_v, place_body_free, &ref);
    if (!b) return;
    const pslot_entry *pol = pslot_acquire(env->policy);
    if (b->opts.from_policy && !pol) {
        web_reply_error(rep, 503, "no policy loaded: start the daemon with --policy, or name "
                        "a solver in options.plan_method (e.g. \"greedy\") and a placer in "
                        "options.placement");
        rc_release(env->cache, ref);
        return;
    }
    int memo = memoisable(&b->opts);
    if (memo && memo_answer(b, pol->generation, req, rep)) {
        if (env->counters) env->counters->memo_hits++;
        pslot_release(env->policy, pol);
        rc_release(env->cache, ref);
        return;
    }
    if (memo && env->counters) env->counters->memo_misses++;
    api_decision d;
    char err[1024];
    int rc = api_decide(&b->run->jobs[0], &b->run->cluster, &b->opts,
                        b->opts.from_policy ? pol : NULL, &d, err, sizeof err);
    if (rc != 0) {
        web_reply_error(rep, rc, "%s", err);
    } else {
        int feasible = 0;
        json_t *o = place_answer(env, b, pol, &d, &feasible);
        char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        size_t len = text ? strlen(text) : 0;
        json_decref(o);
        if (!text || len < 2 || reply_answer(rep, req, text, len - 1, 0, feasible)) {
            web_reply_error(rep, 500, "out of memory");
        } else if (memo) {
            memo_keep(b, pol->generation, text, len - 1, feasible);
        }
        free(text);
    }
    api_decision_free(&d);
    pslot_release(env->policy, pol);
    rc_release(env->cache, ref);
}

/* ---- POST /v1/cost -------------------------------------------------------------------- */

typedef struct {
    cfg_run *run;
    int *assign;        /* [n_layers] */
    json_t *placement;  /* the request's placement array, or NULL */
} cost_body;

static void cost_body_free(void *p) {
    cost_body *b = p;
    if (!b) return;
    cfg_free(b->run);
    free(b->assign);
    json_decref(b->placement);
    free(b);
}

/* Reads "assignment": ["T1", ...] (one per layer), or "T1,T2,..." or "T". */
static int parse_assignment(const json_t *v, const model_job *job, const model_cluster *cl,
                            int *assign, char *err, size_t errlen) {
    char d[96];
    if (!v) {
        snprintf(err, errlen, "assignment: missing required key (a type name per layer)");
        return -1;
    }
    if (json_is_string(v)) {
        char msg[1024];
        if (model_assign_parse(job, cl, json_string_value(v), assign, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "assignment: %s", msg);
            return -1;
        }
        return 0;
    }
    if (!json_is_array(v)) {
        rj_describe(v, d, sizeof d);
        snprintf(err, errlen, "assignment: expected a list of type names, got %s", d);
        return -1;
    }
    if ((int)json_array_size(v) != job->n_layers) {
        snprintf(err, errlen, "assignment: %zu entries for %d layers (one type per layer)",
                 json_array_size(v), job->n_layers);
        return -1;
    }
    for (int l = 0; l < job->n_layers; l++) {
        const json_t *e = json_array_get(v, (size_t)l);
        if (!json_is_string(e)) {
            rj_describe(e, d, sizeof d);
            snprintf(err, errlen, "assignment[%d]: expected a type name, got %s", l, d);
            return -1;
        }
        int t = model_cluster_type(cl, json_string_value(e));
        if (t < 0) {
            snprintf(err, errlen, "assignment[%d]: unknown type \"%.60s\"", l,
                     json_string_value(e));
            return -1;
        }
        assign[l] = t;
    }
    return 0;
}

static void *parse_cost_v(const api_env *env, const web_request *req, char *err,
                          size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "assignment", "placement", "model"};
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return NULL;
    cost_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    if (!b || rj_check_keys(root, "", keys, 5, err, errlen)) goto fail;
    b->run = rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                         json_object_get(root, "model"), &env->limits, err, errlen);
    if (!b->run) goto fail;
    const model_job *job = &b->run->jobs[0];
    b->assign = malloc((size_t)job->n_layers * sizeof *b->assign);
    if (!b->assign) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (parse_assignment(json_object_get(root, "assignment"), job, &b->run->cluster, b->assign,
                         err, errlen))
        goto fail;
    json_t *pl = json_object_get(root, "placement");
    if (pl && !json_is_null(pl)) {
        if (!json_is_array(pl)) {
            char d[96];
            rj_describe(pl, d, sizeof d);
            snprintf(err, errlen, "placement: expected a list with one {workers, ps} per "
                     "stage, got %s", d);
            goto fail;
        }
        if (b->run->cluster.n_nodes == 0) {
            snprintf(err, errlen, "placement: the cluster lists no nodes");
            goto fail;
        }
        b->placement = json_incref(pl);
    }
    json_decref(root);
    return b;
fail:
    json_decref(root);
    cost_body_free(b);
    return NULL;
}

/* Resolves one list of node names of placement[s] into out[count]. */
static int resolve_names(const json_t *stage, int s, const char *key, int count,
                         const model_cluster *cl, int *out, char *err, size_t errlen) {
    const json_t *list = json_object_get(stage, key);
    char d[96];
    if (!json_is_array(list)) {
        if (!list) snprintf(err, errlen, "placement[%d].%s: missing required key", s, key);
        else {
            rj_describe(list, d, sizeof d);
            snprintf(err, errlen, "placement[%d].%s: expected a list of node names, got %s", s,
                     key, d);
        }
        return -1;
    }
    if ((int)json_array_size(list) != count) {
        snprintf(err, errlen, "placement[%d].%s: expected %d node names (the plan's stage %d "
                 "has %d %s), got %zu", s, key, count, s, count,
                 !strcmp(key, "ps") ? "ps tasks" : "units", json_array_size(list));
        return -1;
    }
    for (int i = 0; i < count; i++) {
        const json_t *e = json_array_get(list, (size_t)i);
        if (!json_is_string(e)) {
            rj_describe(e, d, sizeof d);
            snprintf(err, errlen, "placement[%d].%s[%d]: expected a node name, got %s", s, key,
                     i, d);
            return -1;
        }
        int n = -1;
        for (int k = 0; k < cl->n_nodes && n < 0; k++)
            if (!strcmp(cl->nodes[k].name, json_string_value(e))) n = k;
        if (n < 0) {
            snprintf(err, errlen, "placement[%d].%s[%d]: unknown node \"%.60s\"", s, key, i,
                     json_string_value(e));
            return -1;
        }
        out[i] = n;
    }
    return 0;
}

/* Turns the request's placement into task_node in place.h's task order. */
static int resolve_placement(const json_t *pl, const model_plan *plan, const model_cluster *cl,
                             int *task_node, char *err, size_t errlen) {
    if ((int)json_array_size(pl) != plan->n_stages) {
        snprintf(err, errlen, "placement: %zu entries for a plan of %d stages (one {workers, ps} "
                 "per stage)", json_array_size(pl), plan->n_stages);
        return -1;
    }
    int at = 0;
    for (int s = 0; s < plan->n_stages; s++) {
        const json_t *st = json_array_get(pl, (size_t)s);
        if (!json_is_object(st)) {
            char d[96];
            rj_describe(st, d, sizeof d);
            snprintf(err, errlen, "placement[%d]: expected {workers: [...], ps: [...]}, got %s",
                     s, d);
            return -1;
        }
        static const char *const keys[] = {"workers", "ps"};
        char where[32];
        snprintf(where, sizeof where, "placement[%d]", s);
        if (rj_check_keys(st, where, keys, 2, err, errlen) ||
            resolve_names(st, s, "workers", plan->stages[s].units, cl, task_node + at, err,
                          errlen))
            return -1;
        at += plan->stages[s].units;
        if (resolve_names(st, s, "ps", plan->stages[s].n_ps, cl, task_node + at, err, errlen))
            return -1;
        at += plan->stages[s].n_ps;
    }
    return 0;
}

void api_cost(const api_env *env, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    cost_body *b = cached_body(env, req, rep, KIND_COST, parse_cost_v, cost_body_free, &ref);
    if (!b) return;
    const model_job *job = &b->run->jobs[0];
    const model_cluster *cl = &b->run->cluster;
    model_plan *plan = model_plan_create(job->n_layers);
    model_plan *out = model_plan_create(job->n_layers);
    int *task_node = NULL;
    if (!plan || !out) {
        web_reply_error(rep, 500, "out of memory");
        goto done;
    }
    model_eval(job, cl, b->assign, plan);
    const model_plan *final = plan;
    json_t *tasks = json_null();
    if (b->placement) {
        if (plan->reason != MODEL_FEASIBLE) {
            json_t *o = json_pack("{s:b, s:s, s:o, s:n, s:I}", "feasible", 0, "reason", plan->why,
                                  "plan", env->plan_json(job, cl, plan), "placement",
                                  "elapsed_us", (json_int_t)web_elapsed_us(req));
            web_reply_json(rep, 200, o);
            goto done;
        }
        task_node = malloc((size_t)(place_task_count(plan) + 1) * sizeof *task_node);
        if (!task_node) {
            web_reply_error(rep, 500, "out of memory");
            goto done;
        }
        char err[1024];
        if (resolve_placement(b->placement, plan, cl, task_node, err, sizeof err)) {
            web_reply_error(rep, 400, "%s", err);
            goto done;
        }
        place_eval(job, cl, plan, task_node, out);
        final = out;
        tasks = api_tasks_json(cl, out, task_node);
    }
    int feasible = final->reason == MODEL_FEASIBLE;
    json_t *o = json_object();
    json_object_set_new(o, "feasible", json_boolean(feasible));
    if (!feasible) json_object_set_new(o, "reason", json_string(final->why));
    json_object_set_new(o, "plan", env->plan_json(job, cl, final));
    json_object_set_new(o, "placement", tasks);
    json_object_set_new(o, "elapsed_us", json_integer(web_elapsed_us(req)));
    web_reply_json(rep, 200, o);
done:
    free(task_node);
    model_plan_free(plan);
    model_plan_free(out);
    rc_release(env->cache, ref);
}

/* ---- POST /v1/solve ------------------------------------------------------------------- */

typedef struct {
    cfg_run *run;
    solve_opts so;
    int placement; /* API_PLACE_NONE or a placer_method */
} solve_body;

static void solve_body_free(void *p) {
    solve_body *b = p;
    if (!b) return;
    cfg_free(b->run);
    free(b);
}

static void *parse_solve_v(const api_env *env, const web_request *req, char *err,
                           size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "options", "model"};
    static const char *const okeys[] = {"method", "budget_ms", "max_evals", "seed", "placement"};
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return NULL;
    solve_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    if (!b || rj_check_keys(root, "", keys, 4, err, errlen)) goto fail;
    b->run = rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                         json_object_get(root, "model"), &env->limits, err, errlen);
    if (!b->run) goto fail;
    json_t *opt = json_object_get(root, "options");
    if (opt && !json_is_object(opt)) {
        char d[96];
        rj_describe(opt, d, sizeof d);
        snprintf(err, errlen, "options: expected an object, got %s", d);
        goto fail;
    }
    if (opt && rj_check_keys(opt, "options", okeys, 5, err, errlen)) goto fail;
    solve_opts_default(&b->so);
    b->so.budget_ms = API_DEFAULT_SOLVE_BUDGET_MS;
    if (b->so.budget_ms > env->max_budget_ms) b->so.budget_ms = env->max_budget_ms;
    const char *method = NULL, *placement = NULL;
    long long budget = b->so.budget_ms, evals = 0, seed = 1;
    if (rj_opt_string(opt, "options", "method", &method, err, errlen) ||
        rj_opt_string(opt, "options", "placement", &placement, err, errlen) ||
        rj_opt_int(opt, "options", "budget_ms", 1, env->max_budget_ms, &budget, err, errlen) ||
        rj_opt_int(opt, "options", "max_evals", 1, 100000000LL, &evals, err, errlen) ||
        rj_opt_int(opt, "options", "seed", 0, 9007199254740991LL, &seed, err, errlen))
        goto fail;
    if (method) {
        int m = solve_method_parse(method);
        if (m < 0) {
            char names[256];
            method_names(names, sizeof names);
            snprintf(err, errlen, "options.method: unknown method \"%.60s\" (%s)", method, names);
            goto fail;
        }
        b->so.method = (solve_method)m;
    }
    b->so.budget_ms = (long)budget;
    if (evals > 0) b->so.max_evals = (long)evals;
    b->so.seed = (uint64_t)seed;
    b->placement = API_PLACE_NONE;
    if (placement && strcmp(placement, "none") != 0) {
        int m = placer_method_parse(placement);
        if (m < 0) {
            char names[160];
            placement_names(names, sizeof names, 0);
            snprintf(err, errlen, "options.placement: unknown placement \"%.60s\" (%s)",
                     placement, names);
            goto fail;
        }
        if (b->run->cluster.n_nodes == 0) {
            snprintf(err, errlen, "options.placement: the cluster lists no nodes to place "
                     "tasks on");
            goto fail;
        }
        b->placement = m;
    }
    json_decref(root);
    return b;
fail:
    json_decref(root);
    solve_body_free(b);
    return NULL;
}

void api_solve(const api_env *env, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    solve_body *b = cached_body(env, req, rep, KIND_SOLVE, parse_solve_v, solve_body_free, &ref);
    if (!b) return;
    const model_job *job = &b->run->jobs[0];
    const model_cluster *cl = &b->run->cluster;
    solve_result *res = solve_result_create(job->n_layers);
    model_plan *out = model_plan_create(job->n_layers);
    int *task_node = NULL;
    if (!res || !out) {
        web_reply_error(rep, 500, "out of memory");
        goto done;
    }
    int rc = solve_run(job, cl, &b->so, res);
    if (rc == SOLVE_ERROR) {
        web_reply_error(rep, 400, "options.method %s: %s", solve_method_name(b->so.method),
                        res->why);
        goto done;
    }
    json_t *o = json_object();
    const model_plan *final = rc == 0 ? res->plan : NULL;
    json_t *tasks = json_null();
    const char *place_err = NULL;
    char perr[1024] = "";
    if (rc == 0 && b->placement != API_PLACE_NONE) {
        task_node = malloc((size_t)(place_task_count(res->plan) + 1) * sizeof *task_node);
        if (!task_node) {
            json_decref(o);
            web_reply_error(rep, 500, "out of memory");
            goto done;
        }
        int pr = placer_run(job, cl, res->plan, (placer_method)b->placement, b->so.seed,
                            task_node, out, perr, sizeof perr);
        if (pr == PLACER_OK || pr == PLACER_SLOW) {
            final = out;
            tasks = api_tasks_json(cl, out, task_node);
        } else {
            place_err = perr;
        }
    }
    int feasible = final && final->reason == MODEL_FEASIBLE && !place_err;
    json_object_set_new(o, "feasible", json_boolean(feasible));
    json_object_set_new(o, "found", json_boolean(rc == 0));
    if (!feasible)
        json_object_set_new(o, "reason", json_string(place_err ? place_err
                                                     : final ? final->why : res->why));
    json_object_set_new(o, "method", json_string(solve_method_name(res->method)));
    json_object_set_new(o, "plan", final ? env->plan_json(job, cl, final) : json_null());
    json_object_set_new(o, "placement", tasks);
    json_object_set_new(o, "placement_by",
                        json_is_array(tasks)
                            ? json_string(placer_method_name((placer_method)b->placement))
                            : json_null());
    json_object_set_new(o, "optimal", json_boolean(res->optimal));
    json_object_set_new(o, "infeasible", json_boolean(res->infeasible));
    json_object_set_new(o, "stopped", json_boolean(res->stopped));
    json_object_set_new(o, "lower_bound",
                        isfinite(res->lower_bound) ? json_real(res->lower_bound) : json_null());
    json_object_set_new(o, "evaluations", json_integer(res->evaluations));
    json_object_set_new(o, "seconds", json_real(res->seconds));
    json_object_set_new(o, "note", json_string(res->why));
    json_object_set_new(o, "elapsed_us", json_integer(web_elapsed_us(req)));
    web_reply_json(rep, 200, o);
done:
    free(task_node);
    model_plan_free(out);
    solve_result_free(res);
    rc_release(env->cache, ref);
}

/* ---- registered jobs ------------------------------------------------------------------ */

cfg_run *api_load_registered(const api_env *env, const json_t *doc, const json_t *nodes,
                             const json_t *zones, char *err, size_t errlen) {
    const json_t *cl = json_object_get(doc, "cluster");
    if (!json_is_object(cl)) return rj_load_run(cl, json_object_get(doc, "job"), NULL,
                                                &env->limits, err, errlen);
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
    cfg_run *run = rj_load_run(copy, json_object_get(doc, "job"), NULL, &env->limits, err,
                               errlen);
    json_decref(copy);
    return run;
}

static void jobs_put_handler(const api_env *env, const web_request *req, const char *name,
                             web_reply *rep) {
    static const char *const keys[] = {"cluster", "job", "options"};
    char err[2048];
    if (jobs_name_ok(name, err, sizeof err)) {
        web_reply_error(rep, 400, "job name \"%.80s\": %s", name, err);
        return;
    }
    json_t *root = web_parse_json(req->body, req->body_len, err, sizeof err);
    if (!root) {
        web_reply_error(rep, 400, "%s", err);
        return;
    }
    if (rj_check_keys(root, "", keys, 3, err, sizeof err)) {
        web_reply_error(rep, 400, "%s", err);
        json_decref(root);
        return;
    }
    json_t *job = json_object_get(root, "job");
    if (json_is_object(job) && !json_object_get(job, "name"))
        json_object_set_new(job, "name", json_string(name));
    cfg_run *run = api_load_registered(env, root, NULL, NULL, err, sizeof err);
    api_opts o;
    if (!run || api_opts_parse(json_object_get(root, "options"), 1, env->max_budget_ms, &o, err,
                               sizeof err)) {
        web_reply_error(rep, 400, "%s", err);
        cfg_free(run);
        json_decref(root);
        return;
    }
    int n_layers = run->jobs[0].n_layers;
    cfg_free(run);
    uint64_t version = 0;
    int rc = jobs_put(env->jobs, name, root, n_layers, &version, err, sizeof err);
    if (rc < 0) {
        web_reply_error(rep, strcmp(err, "out of memory") ? 409 : 500, "%s", err);
        return;
    }
    web_reply_json(rep, rc == 1 ? 201 : 200,
                   json_pack("{s:s, s:I, s:i, s:b}", "name", name, "version",
                             (json_int_t)version, "layers", n_layers, "created", rc == 1));
}

void api_jobs(const api_env *env, const web_request *req, const char *name, web_reply *rep) {
    if (!name) { /* GET /v1/jobs */
        json_t *list = jobs_list(env->jobs);
        if (!list) web_reply_error(rep, 500, "out of memory");
        else web_reply_json(rep, 200, json_pack("{s:o}", "jobs", list));
        return;
    }
    if (!strcmp(req->method, "PUT")) {
        jobs_put_handler(env, req, name, rep);
        return;
    }
    if (!strcmp(req->method, "DELETE")) {
        if (jobs_delete(env->jobs, name) < 0) web_reply_error(rep, 404, "no job named \"%.80s\"", name);
        else rep->status = 204;
        return;
    }
    jobs_entry *e = jobs_get(env->jobs, name);
    if (!e) {
        web_reply_error(rep, 404, "no job named \"%.80s\"", name);
        return;
    }
    json_t *o = json_pack("{s:s, s:I, s:f, s:i, s:O, s:O, s:O}", "name", e->name, "version",
                          (json_int_t)e->version, "registered_at", e->registered_at, "layers",
                          e->n_layers, "cluster", json_object_get(e->doc, "cluster"), "job",
                          json_object_get(e->doc, "job"), "options",
                          json_object_get(e->doc, "options") ? json_object_get(e->doc, "options")
                                                             : json_null());
    if (o) json_object_set_new(o, "extender", k8s_job_state_json(e));
    jobs_release(env->jobs, e);
    web_reply_json(rep, 200, o);
}
