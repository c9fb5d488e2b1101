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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/place.h"
#include "env/render.h"
#include "service/cluster.h"
#include "service/k8s.h"
#include "service/probkey.h"
#include "solvers/placers.h"

/* Cache kinds: one per body schema; KIND_PLACE_NAMELESS + (offset << 8)
 * keys a /v1/place body by its bytes without its job's name (place_cached). */
enum { KIND_PLACE = 1, KIND_COST = 2, KIND_SOLVE = 3, KIND_PLACE_NAMELESS = 4 };

/* ---- rendering ------------------------------------------------------------------------ */

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
                     (json_int_t)pol->ref.generation, "loaded_at", pol->loaded_at);
}

/* ---- request bodies --------------------------------------------------------------- */

/* A parsed /v1/place body (immutable once cached). key is the canonical
 * bytes of its problem (service/probkey.h), the plan memo's key: bodies
 * that differ only by the job's name, key order or units share it. */
typedef struct {
    cfg_run *run;          /* NULL when online: the run is built per request */
    decide_opts opts;
    json_t *job;           /* online: the body's job, loaded on the free units */
    char commit[JOBS_KEY_MAX]; /* "ns/name" of commit.job, or "" */
    char *key;             /* [key_len] pk_place's bytes; NULL when online */
    size_t key_len;
    char *name_json;       /* the job's name as a JSON string ("\"bench-1\""), NUL-ended */
} place_body;

static void place_body_free(void *p) {
    place_body *b = p;
    if (!b) return;
    cfg_free(b->run);
    json_decref(b->job);
    free(b->key);
    free(b->name_json);
    free(b);
}

/* A plan memo entry: the JSON text of a deterministic policy answer without
 * its closing brace and without what differs per request (the job's name,
 * cached, elapsed_us: reply_answer appends them). */
typedef struct {
    char *text;
    size_t len;
    int feasible;
} plan_memo;

static void plan_memo_free(void *p) {
    plan_memo *m = p;
    if (!m) return;
    free(m->text);
    free(m);
}

/* The HTTP status of a library status code (runjson.h's rj_status). */
static int http_status(int rc) {
    return rc == RJ_NOMEM ? 500 : rc == DECIDE_TOO_BIG ? 422 : 400;
}

/* Reads options.on and commit of a /v1/place body: *online 1 when the
 * decision is on the daemon's free units (options.on "free", or a commit),
 * key gets commit.job as "ns/name" ("" when none), and *opts a copy of the
 * options without "on" (caller owns it; NULL when there were none).
 * Returns RJ_OK, or RJ_BAD with err naming the field. */
static int parse_online(const json_t *root, int *online, char *key, json_t **opts, char *err,
                        size_t errlen) {
    static const char *const ckeys[] = {"job"};
    const json_t *o = json_object_get(root, "options");
    const json_t *c = json_object_get(root, "commit");
    const char *on = NULL, *job = NULL;
    char d[96];
    *online = 0;
    key[0] = '\0';
    *opts = json_is_object(o) ? json_copy((json_t *)o) : o ? json_incref((json_t *)o) : NULL;
    if (json_is_object(o) && (rj_opt_string(o, "options", "on", &on, err, errlen)))
        return RJ_BAD;
    if (on && strcmp(on, "free") && strcmp(on, "all")) {
        snprintf(err, errlen, "options.on: expected \"free\" (the daemon's cluster less the "
                 "units taken) or \"all\", got \"%.40s\"", on);
        return RJ_BAD;
    }
    if (json_is_object(*opts)) json_object_del(*opts, "on");
    if (c) {
        if (!json_is_object(c)) {
            rj_describe(c, d, sizeof d);
            snprintf(err, errlen, "commit: expected {\"job\": \"namespace/name\"}, got %s", d);
            return RJ_BAD;
        }
        if (rj_check_keys(c, "commit", ckeys, 1, err, errlen) ||
            rj_opt_string(c, "commit", "job", &job, err, errlen))
            return RJ_BAD;
        if (!job) {
            snprintf(err, errlen, "commit.job: missing required key (\"namespace/name\")");
            return RJ_BAD;
        }
        if (on && !strcmp(on, "all")) {
            snprintf(err, errlen, "commit: takes free units only (options.on \"free\")");
            return RJ_BAD;
        }
        char ns[JOBS_NAME_MAX] = "", msg[512];
        const char *slash = strchr(job, '/');
        if (slash && (size_t)(slash - job) < sizeof ns)
            snprintf(ns, sizeof ns, "%.*s", (int)(slash - job), job);
        if (jobs_key(key, slash ? (ns[0] ? ns : "-") : NULL, slash ? slash + 1 : job, msg,
                     sizeof msg)) {
            snprintf(err, errlen, "commit.job: %s", msg);
            return RJ_BAD;
        }
    }
    *online = (on && !strcmp(on, "free")) || c;
    return RJ_OK;
}

/* place_from_root reads the parsed /v1/place body root into *out; with cl
 * (not NULL), root's cluster is ignored and the run is built on a copy of
 * cl (a cluster loaded before from the same bytes). Returns RJ_OK, or
 * RJ_BAD or RJ_NOMEM with err. */
static int place_from_root(const api_env *env, json_t *root, const model_cluster *cl, void **out,
                           char *err, size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "options", "model", "commit"};
    int rc = RJ_NOMEM, online = 0;
    json_t *opts = NULL;
    place_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    if (!b || (rc = rj_check_keys(root, "", keys, 5, err, errlen)) ||
        (rc = parse_online(root, &online, b->commit, &opts, err, errlen)))
        goto fail;
    if (online && cl) { /* no cluster to take: the caller reads the body afresh */
        snprintf(err, errlen, "options.on: online body");
        rc = RJ_BAD;
        goto fail;
    }
    if (online) {
        const json_t *job = json_object_get(root, "job");
        rc = RJ_BAD;
        if (json_object_get(root, "cluster") || json_object_get(root, "model")) {
            snprintf(err, errlen, "%s: on the free units the daemon's cluster (PUT /v1/cluster) "
                     "is used; leave %s out", json_object_get(root, "cluster") ? "cluster" : "model",
                     json_object_get(root, "cluster") ? "cluster" : "model");
            goto fail;
        }
        if (!json_is_object(job)) {
            char d[96];
            rj_describe(job, d, sizeof d);
            if (!job) snprintf(err, errlen, "job: missing required key");
            else snprintf(err, errlen, "job: expected an object, got %s", d);
            goto fail;
        }
        if (!(b->job = json_copy((json_t *)job))) {
            snprintf(err, errlen, "out of memory");
            rc = RJ_NOMEM;
            goto fail;
        }
        if (!json_object_get(b->job, "name")) /* as PUT /v1/jobs names it */
            json_object_set_new(b->job, "name", json_string(b->commit[0] ? strchr(b->commit, '/') + 1
                                                                           : "online"));
        if ((rc = decide_opts_parse(opts, 1, env->max_budget_ms, &b->opts, err, errlen)))
            goto fail;
    } else if ((rc = cl ? rj_load_run_on(cl, json_object_get(root, "job"), json_object_get(root, "model"),
                                         &env->limits, &b->run, err, errlen)
                        : rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                                      json_object_get(root, "model"), &env->limits, &b->run, err,
                                      errlen)) ||
               (rc = decide_opts_parse(opts, b->run->cluster.n_nodes > 0, env->max_budget_ms,
                                       &b->opts, err, errlen)))
        goto fail;
    if (!online && b->opts.cluster_policy) {
        snprintf(err, errlen, "options.plan_method: \"" CLP_METHOD "\" decides on the daemon's "
                 "cluster and occupancy: send options.on \"free\" (and no cluster)");
        rc = RJ_BAD;
        goto fail;
    }
    if (!online) {
        json_t *name = json_string(b->run->jobs[0].name);
        b->name_json = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
        json_decref(name);
        b->key = pk_place(&b->run->jobs[0], &b->run->cluster, &b->opts, &b->key_len);
        if (!b->name_json || !b->key) {
            snprintf(err, errlen, "out of memory");
            rc = RJ_NOMEM;
            goto fail;
        }
    }
    json_decref(opts);
    *out = b;
    return RJ_OK;
fail:
    json_decref(opts);
    place_body_free(b);
    return rc;
}

static void cluster_free(void *p) {
    model_cluster *cl = p;
    if (!cl) return;
    model_cluster_clear(cl);
    free(cl);
}

/* place_on_known reads a /v1/place body whose cluster (the bytes at
 * body + off, vlen of them) was loaded before, from env->clusters: only
 * the rest of the body is parsed (the cluster's bytes replaced by null),
 * and the run gets a copy of the loaded cluster. The bytes were a valid
 * cluster object in an earlier body, so this body is valid exactly when
 * its rest is, and reads as the full parse would read it. Returns 1 with
 * *out, or 0 when the cluster is not known or anything is amiss: the
 * caller then parses the whole body, which also words any error. */
static int place_on_known(const api_env *env, const web_request *req, size_t off, size_t vlen,
                          void **out) {
    rc_entry *ref = NULL;
    const model_cluster *cl = rc_get(env->clusters, 1, req->body + off, vlen, &ref);
    if (!cl) return 0;
    size_t n = req->body_len - vlen + 4;
    char *rest = malloc(n), err[1024];
    json_t *root = NULL;
    int ok = 0;
    if (rest) {
        memcpy(rest, req->body, off);
        memcpy(rest + off, "null", 4);
        memcpy(rest + off + 4, req->body + off + vlen, req->body_len - off - vlen);
        json_error_t je;
        root = json_loadb(rest, n, JSON_REJECT_DUPLICATES, &je);
        free(rest);
    }
    if (json_is_object(root) && json_is_null(json_object_get(root, "cluster")))
        ok = place_from_root(env, root, cl, out, err, sizeof err) == RJ_OK;
    json_decref(root);
    rc_release(env->clusters, ref);
    return ok;
}

/* Parses the body of /v1/place into *out. Returns RJ_OK, or RJ_BAD or
 * RJ_NOMEM with err. A cluster read from a body is kept (env->clusters,
 * by the bytes of its value), so that a body that repeats it, as a
 * scheduler's requests do, reads only its job. */
static int parse_place(const api_env *env, const web_request *req, void **out, char *err,
                       size_t errlen) {
    size_t off = 0, vlen = 0;
    int span = env->clusters && web_json_member(req->body, req->body_len, "cluster", &off, &vlen);
    if (span && place_on_known(env, req, off, vlen, out)) return RJ_OK;
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return RJ_BAD;
    int rc = place_from_root(env, root, NULL, out, err, errlen);
    json_decref(root);
    const place_body *b = rc == RJ_OK ? *out : NULL;
    if (span && b && b->run) { /* keep the cluster for the bodies that repeat it */
        model_cluster *cl = calloc(1, sizeof *cl);
        if (cl && model_cluster_copy(cl, &b->run->cluster) == 0) {
            rc_entry *ref = NULL;
            if (rc_put(env->clusters, 1, req->body + off, vlen, cl, cluster_free, &ref))
                rc_release(env->clusters, ref);
        } else {
            free(cl);
        }
    }
    return rc;
}

/* Finds the parsed body in the cache or parses and caches it. Returns the
 * value with *ref held, or NULL after filling rep with a 400 (or 500). */
static void *cached_body(const api_env *env, const web_request *req, web_reply *rep, int kind,
                         int (*parse)(const api_env *, const web_request *, void **, char *,
                                      size_t),
                         void (*value_free)(void *), rc_entry **ref) {
    void *v = rc_get(env->cache, kind, req->body, req->body_len, ref);
    if (v) return v;
    char err[2048];
    int rc = parse(env, req, &v, err, sizeof err);
    if (rc != RJ_OK) {
        web_reply_error(rep, http_status(rc), "%s", err);
        return NULL;
    }
    v = rc_put(env->cache, kind, req->body, req->body_len, v, value_free, ref);
    if (!v) web_reply_error(rep, 500, "out of memory");
    return v;
}

/* ---- POST /v1/place ------------------------------------------------------------------ */

/* plain_job_name finds the job's name in a /v1/place body without parsing
 * it: returns 1 with the name's string (quotes included) at body + *off,
 * *len bytes, when the body reads as an object with one "job" object whose
 * one "name" is a plain name: 1 to MODEL_NAME_MAX - 1 letters, digits, '.',
 * '_' or '-', written without escapes. Any such name is one the loader
 * takes as it is written; else 0. */
static int plain_job_name(const char *body, size_t n, size_t *off, size_t *len) {
    size_t joff = 0, jlen = 0, noff = 0, nlen = 0;
    if (!web_json_member(body, n, "job", &joff, &jlen) ||
        !web_json_string_member(body + joff, jlen, "name", &noff, &nlen) || nlen < 3 ||
        nlen - 2 >= MODEL_NAME_MAX)
        return 0;
    const char *s = body + joff + noff;
    for (size_t i = 1; i + 1 < nlen; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    *off = joff + noff;
    *len = nlen;
    return 1;
}

/* place_cached finds the parsed /v1/place body in the cache or parses and
 * caches it, as cached_body does, and writes the job's name as a JSON
 * string into name[MODEL_NAME_MAX + 2] ("" when the body's own parse
 * holds it: use b->name_json). A body whose job has a plain name
 * (plain_job_name) is kept by its bytes with the name cut out, the cut's
 * offset in its kind: bodies that differ only by the job's name (a job
 * resubmitted under a new name) share one parse, each answered under its
 * own name; nothing but the name differs between them, so each reads as
 * the parse that is kept (the name is read by nothing the decision does:
 * service/probkey.h). Online bodies are kept by their full bytes (their
 * job, name included, goes to the state file). Returns the value with
 * *ref held, or NULL after filling rep. */
static place_body *place_cached(const api_env *env, const web_request *req, web_reply *rep,
                                char *name, rc_entry **ref) {
    size_t off = 0, nlen = 0, slen = 0;
    char *shape = NULL;
    uint64_t kind = 0;
    name[0] = '\0';
    if (plain_job_name(req->body, req->body_len, &off, &nlen) &&
        (shape = malloc(req->body_len - nlen + 1))) {
        slen = req->body_len - nlen;
        memcpy(shape, req->body, off);
        memcpy(shape + off, req->body + off + nlen, req->body_len - off - nlen);
        kind = KIND_PLACE_NAMELESS + ((uint64_t)off << 8);
        memcpy(name, req->body + off, nlen);
        name[nlen] = '\0';
        place_body *b = rc_try(env->cache, kind, shape, slen, ref);
        if (b) {
            free(shape);
            return b;
        }
    }
    place_body *b = rc_get(env->cache, KIND_PLACE, req->body, req->body_len, ref);
    if (b) {
        free(shape);
        name[0] = '\0';
        return b;
    }
    char err[2048];
    void *v = NULL;
    int rc = parse_place(env, req, &v, err, sizeof err);
    if (rc != RJ_OK) {
        free(shape);
        web_reply_error(rep, http_status(rc), "%s", err);
        return NULL;
    }
    b = v;
    if (shape && b->run) {
        b = rc_put(env->cache, kind, shape, slen, b, place_body_free, ref);
    } else {
        name[0] = '\0';
        b = rc_put(env->cache, KIND_PLACE, req->body, req->body_len, b, place_body_free, ref);
    }
    free(shape);
    if (!b) web_reply_error(rep, 500, "out of memory");
    return b;
}

/* A policy decode is memoised when it is a function of the body and the
 * policy alone: greedy, or sampling with no time budget (the seed is in
 * the body). Solvers and placers are cheap and always run. */
static int memoisable(const decide_opts *o) {
    return o->from_policy && (o->decode == AGENT_DECODE_GREEDY || o->budget_ms == 0);
}

/* reply_answer sends text[len] (a JSON object without its closing brace)
 * with "job" (name_json, a JSON string), "cached" and "elapsed_us"
 * appended. Returns 0, or -1 when out of memory (rep untouched). */
static int reply_answer(web_reply *rep, const web_request *req, const char *text, size_t len,
                        const char *name_json, int cached, int feasible) {
    char tail[64];
    int n = snprintf(tail, sizeof tail, ",\"cached\":%s,\"elapsed_us\":%lld}",
                     cached ? "true" : "false", web_elapsed_us(req));
    size_t nl = strlen(name_json);
    char *body = malloc(len + 7 + nl + (size_t)n + 1);
    if (!body) return -1;
    memcpy(body, text, len);
    memcpy(body + len, ",\"job\":", 7);
    memcpy(body + len + 7, name_json, nl);
    memcpy(body + len + 7 + nl, tail, (size_t)n + 1);
    free(rep->body);
    rep->status = 200;
    rep->body = body;
    rep->len = len + 7 + nl + (size_t)n;
    rep->content_type = NULL;
    if (!feasible) snprintf(rep->note, sizeof rep->note, "infeasible");
    return 0;
}

/* memo_answer replies from the plan memo when it holds b's problem decoded
 * by policy generation gen (the generation is the memo's kind: an entry
 * put by a request still on the previous policy never answers for the
 * next); the answer names the job name_json. Returns 1 when it replied, else 0. */
static int memo_answer(const api_env *env, const place_body *b, const char *name_json,
                       uint64_t gen, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    const plan_memo *m = rc_get(env->plans, gen, b->key, b->key_len, &ref);
    int done = m && reply_answer(rep, req, m->text, m->len, name_json, 1, m->feasible) == 0;
    rc_release(env->plans, ref);
    return done;
}

/* memo_keep puts text[len] (malloc'd; the memo takes it, the caller no
 * longer owns it) in the plan memo for b's problem and generation gen; on
 * allocation failure the memo is simply not kept. */
static void memo_keep(const api_env *env, const place_body *b, uint64_t gen, char *text,
                      size_t len, int feasible) {
    plan_memo *m = calloc(1, sizeof *m);
    if (!m) {
        free(text);
        return;
    }
    m->text = text;
    m->len = len;
    m->feasible = feasible;
    rc_entry *ref = NULL;
    if (rc_put_sized(env->plans, gen, b->key, b->key_len, m, len, plan_memo_free, &ref))
        rc_release(env->plans, ref);
}

/* place_answer renders d as the /v1/place answer, without elapsed_us and
 * cached. Returns a new reference (NULL when out of memory). */
static json_t *place_answer(const place_body *b, const pslot_entry *pol,
                            const decide_result *d, int *feasible_out) {
    const model_job *job = &b->run->jobs[0];
    const model_cluster *cl = &b->run->cluster;
    const model_plan *p = d->final;
    int placed = d->found && p->placed;
    int feasible = d->found && p->reason == MODEL_FEASIBLE && !d->why[0];
    json_t *o = json_object();
    json_object_set_new(o, "feasible", json_boolean(feasible));
    if (!feasible) json_object_set_new(o, "reason", json_string(d->why[0] ? d->why : p->why));
    json_object_set_new(o, "plan", d->found ? render_plan_json(job, cl, p) : json_null());
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
    json_object_set_new(o, "stopped", json_boolean(d->stopped));
    *feasible_out = feasible;
    return o;
}

/* The units a placed plan takes, as store_put_placements reads them:
 * {workers: [{node, type, zone}], ps: [...]}, each on its node's type. */
static json_t *taken_plan(const model_cluster *cl, const model_plan *p, const int *task_node) {
    json_t *workers = json_array(), *ps = json_array();
    int n = place_task_count(p);
    for (int i = 0; i < n; i++) {
        int stage = 0, is_ps = 0;
        place_task_stage(p, i, &stage, &is_ps);
        const model_node *nd = &cl->nodes[task_node[i]];
        json_array_append_new(is_ps ? ps : workers,
                              json_pack("{s:s, s:s, s:s}", "node", nd->name, "type",
                                        cl->types[nd->type].name, "zone",
                                        cl->n_zones > 0 ? cl->zones[nd->zone].name : ""));
    }
    return json_pack("{s:o, s:o}", "workers", workers, "ps", ps);
}

/* POST /v1/place on the daemon's free units (options.on "free"), taking
 * them for b->commit when it names a job. The cluster and occupancy are
 * read in a write transaction of the state file; with a commit the
 * decision and the write happen inside it, so two commits racing for the
 * last units are serialised: the second decides on what the first left
 * and gets 409 with the reason when its job no longer fits. */
static void place_online(const api_env *env, const place_body *b, const pslot_entry *pol,
                         const clp_entry *cp, const web_request *req, web_reply *rep) {
    char err[2048] = "";
    int commit = b->commit[0] != '\0', status = 0, decided = 0, feasible = 0, n_running = 0;
    json_t *cl = NULL, *taken = NULL, *nodes = NULL, *doc = NULL, *o = NULL, *plan = NULL;
    cfg_run *run = NULL, *full = NULL;
    decide_result d;
    memset(&d, 0, sizeof d);
    if (store_begin(env->state, err, sizeof err)) {
        web_reply_error(rep, 503, "%s", err);
        return;
    }
    int begun = 1, held = commit ? store_holds(env->state, b->commit, err, sizeof err) : 0;
    if (held) {
        if (held > 0)
            snprintf(err, sizeof err, "commit.job: %s already takes units or is registered "
                     "(DELETE /v1/jobs/%s or POST .../complete releases them)", b->commit,
                     b->commit);
        status = held > 0 ? 409 : 503;
        goto done;
    }
    if (!(cl = store_get_cluster(env->state, 1, err, sizeof err)) ||
        !(taken = store_taken(env->state, "", err, sizeof err))) {
        status = 503;
        goto done;
    }
    if (json_is_null(cl)) {
        snprintf(err, sizeof err, "options.on: the daemon has no cluster yet (PUT /v1/cluster)");
        status = 409;
        goto done;
    }
    rj_limits lim = env->limits;
    if (lim.max_nodes < env->max_cluster_nodes) lim.max_nodes = env->max_cluster_nodes;
    nodes = cluster_free_nodes(json_object_get(cl, "nodes"), taken);
    doc = json_pack("{s:O, s:O}", "cluster", cl, "job", b->job);
    if (!nodes || !doc) {
        snprintf(err, sizeof err, "out of memory");
        status = 500;
        goto done;
    }
    if (!(run = decide_load_registered(&lim, doc, nodes, NULL, err, sizeof err))) {
        status = 400;
        goto done;
    }
    /* the shared-cluster policy also sees the cluster as configured and how
     * many jobs hold units (service/clpolicy.h) */
    if (b->opts.cluster_policy &&
        (!(full = decide_load_registered(&lim, doc, json_object_get(cl, "nodes"), NULL, err,
                                         sizeof err)) ||
         (n_running = store_n_holding(env->state, err, sizeof err)) < 0)) {
        status = full ? 503 : 400;
        goto done;
    }
    if (!commit) { /* a plain decision reads the occupancy, then lets go */
        store_end(env->state, 0, NULL, 0);
        begun = 0;
    }
    decide_opts dop = b->opts;
    dop.cpu_ms = env->request_cpu_ms;
    dop.mem_bytes = env->request_mem_bytes;
    dop.cancelled = req->gone;
    dop.cancel_ud = req->gone_ud;
    int rc = b->opts.cluster_policy
                 ? decide_cluster_policy(&run->jobs[0], &full->cluster, &run->cluster, n_running,
                                         &dop, cp->net, &d, err, sizeof err)
                 : decide_run(&run->jobs[0], &run->cluster, &dop,
                              b->opts.from_policy ? pol : NULL, &d, err, sizeof err);
    decided = 1;
    if (rc != RJ_OK) {
        status = http_status(rc);
        goto done;
    }
    place_body view;
    memset(&view, 0, sizeof view);
    view.run = run;
    view.opts = b->opts;
    if (!(o = place_answer(&view, pol, &d, &feasible))) {
        snprintf(err, sizeof err, "out of memory");
        status = 500;
        goto done;
    }
    if (b->opts.cluster_policy) {
        json_object_set_new(o, "decision", json_string(d.wait ? "wait" : d.found ? "start"
                                                                                : "none"));
        json_object_set_new(o, "cluster_policy",
                            json_pack("{s:s, s:I, s:I, s:i, s:i, s:f, s:f, s:s?, s:o?}", "file",
                                      cp->path, "step", (json_int_t)cp->step, "generation",
                                      (json_int_t)cp->ref.generation, "candidates", d.clp.n_cands,
                                      "running_jobs", n_running, "p_wait", d.clp.p_wait,
                                      "p_chosen", d.clp.p_chosen, "kind",
                                      d.found ? clp_kind_name(d.clp.kind) : NULL, "target",
                                      d.found ? json_real(d.clp.target) : NULL));
    }
    if (commit) {
        if (d.wait) {
            snprintf(err, sizeof err, "commit: job %s: %.1500s", b->commit, d.why);
            status = 409;
            goto done;
        }
        if (!feasible || !d.final->placed) {
            snprintf(err, sizeof err, "commit: job %s does not fit on the free units: %.1500s",
                     b->commit, d.why[0] ? d.why : d.final ? d.final->why : "no plan");
            status = 409;
            goto done;
        }
        plan = taken_plan(&run->cluster, d.final, d.task_node);
        if (!plan || store_put_placements(env->state, b->commit, plan, err, sizeof err)) {
            if (!plan) snprintf(err, sizeof err, "out of memory");
            status = plan ? 503 : 500;
            goto done;
        }
        begun = 0;
        if (store_end(env->state, 1, err, sizeof err)) {
            status = 503;
            goto done;
        }
        json_object_set_new(o, "committed", json_pack("{s:s, s:I}", "job", b->commit, "tasks",
                                                      (json_int_t)place_task_count(d.final)));
    }
    json_object_set_new(o, "on", json_string("free"));
    json_object_set_new(o, "job", json_string(run->jobs[0].name));
    json_object_set_new(o, "cached", json_false());
    json_object_set_new(o, "elapsed_us", json_integer(web_elapsed_us(req)));
    web_reply_json(rep, 200, o);
    o = NULL;
    if (!feasible) snprintf(rep->note, sizeof rep->note, "infeasible on the free units");
    else if (commit) snprintf(rep->note, sizeof rep->note, "committed %.130s", b->commit);
done:
    if (begun) store_end(env->state, 0, NULL, 0);
    if (status) web_reply_error(rep, status, "%s", err);
    if (decided) decide_result_free(&d);
    json_decref(o);
    json_decref(plan);
    json_decref(doc);
    json_decref(nodes);
    json_decref(taken);
    json_decref(cl);
    cfg_free(run);
    cfg_free(full);
}

void api_place(const api_env *env, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    char name[MODEL_NAME_MAX + 2];
    place_body *b = place_cached(env, req, rep, name, &ref);
    if (!b) return;
    const char *name_json = name[0] ? name : b->name_json;
    const pslot_entry *pol = pslot_acquire(env->policy);
    if (b->opts.from_policy && !pol) {
        web_reply_error(rep, 503, "no policy loaded: start the daemon with --policy, or name "
                        "a solver in options.plan_method (e.g. \"greedy\") and a placer in "
                        "options.placement");
        rc_release(env->cache, ref);
        return;
    }
    if (!b->run) { /* on the daemon's free units */
        const clp_entry *cp = b->opts.cluster_policy ? clp_acquire(env->sim_policy) : NULL;
        if (b->opts.cluster_policy && !cp)
            web_reply_error(rep, 503, "no shared-cluster policy loaded: start the daemon with "
                            "--sim-policy CKPT (strata train configs/train/sim-philly.yaml "
                            "writes one)");
        else
            place_online(env, b, pol, cp, req, rep);
        clp_release(env->sim_policy, cp);
        pslot_release(env->policy, pol);
        rc_release(env->cache, ref);
        return;
    }
    int memo = env->plans && memoisable(&b->opts);
    if (memo && memo_answer(env, b, name_json, pol->ref.generation, req, rep)) {
        if (env->counters) env->counters->memo_hits++;
        pslot_release(env->policy, pol);
        rc_release(env->cache, ref);
        return;
    }
    if (memo && env->counters) env->counters->memo_misses++;
    decide_result d;
    char err[1024];
    decide_opts dop = b->opts; /* b is shared: the per-request limits go on a copy */
    dop.cpu_ms = env->request_cpu_ms;
    dop.mem_bytes = env->request_mem_bytes;
    dop.cancelled = req->gone;
    dop.cancel_ud = req->gone_ud;
    int rc = decide_run(&b->run->jobs[0], &b->run->cluster, &dop,
                        b->opts.from_policy ? pol : NULL, &d, err, sizeof err);
    if (env->counters && d.cancelled) env->counters->abandoned++;
    else if (env->counters && d.stopped) env->counters->stopped++;
    if (rc != RJ_OK) {
        web_reply_error(rep, http_status(rc), "%s", err);
    } else {
        int feasible = 0;
        json_t *o = place_answer(b, pol, &d, &feasible);
        char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        size_t len = text ? strlen(text) : 0;
        json_decref(o);
        if (!text || len < 2 ||
            reply_answer(rep, req, text, len - 1, name_json, 0, feasible)) {
            web_reply_error(rep, 500, "out of memory");
        } else if (memo && !d.stopped) { /* a cut decode depends on the clock */
            memo_keep(env, b, pol->ref.generation, text, len - 1, feasible);
            text = NULL; /* the memo's now */
        }
        free(text);
    }
    if (d.cancelled)
        snprintf(rep->note, sizeof rep->note, "abandoned: the client closed the connection; "
                 "decoding stopped after %d samples", d.samples_used);
    else if (d.stopped)
        snprintf(rep->note, sizeof rep->note, "stopped: the time budget of %ld ms cut the "
                 "search after %d samples", dop.budget_ms > 0 && (dop.cpu_ms <= 0 || dop.budget_ms < dop.cpu_ms)
                 ? dop.budget_ms : dop.cpu_ms, d.samples_used);
    decide_result_free(&d);
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

/* Parses the body of /v1/cost into *out: RJ_OK, or RJ_BAD or RJ_NOMEM
 * with err. */
static int parse_cost(const api_env *env, const web_request *req, void **out, char *err,
                      size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "assignment", "placement", "model"};
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return RJ_BAD;
    int rc = RJ_NOMEM;
    cost_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    if (!b || (rc = rj_check_keys(root, "", keys, 5, err, errlen)) ||
        (rc = rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                          json_object_get(root, "model"), &env->limits, &b->run, err, errlen)))
        goto fail;
    rc = RJ_BAD;
    const model_job *job = &b->run->jobs[0];
    b->assign = malloc((size_t)job->n_layers * sizeof *b->assign);
    if (!b->assign) {
        snprintf(err, errlen, "out of memory");
        rc = RJ_NOMEM;
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
    *out = b;
    return RJ_OK;
fail:
    json_decref(root);
    cost_body_free(b);
    return rc;
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
    cost_body *b = cached_body(env, req, rep, KIND_COST, parse_cost, cost_body_free, &ref);
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
                                  "plan", render_plan_json(job, cl, plan), "placement",
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
    json_object_set_new(o, "plan", render_plan_json(job, cl, final));
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
    int placement; /* PLACER_PLACE_NONE or a placer_method */
} solve_body;

static void solve_body_free(void *p) {
    solve_body *b = p;
    if (!b) return;
    cfg_free(b->run);
    free(b);
}

/* Parses the body of /v1/solve into *out: RJ_OK, or RJ_BAD or RJ_NOMEM
 * with err. */
static int parse_solve(const api_env *env, const web_request *req, void **out, char *err,
                       size_t errlen) {
    static const char *const keys[] = {"cluster", "job", "options", "model"};
    static const char *const okeys[] = {"method", "budget_ms", "max_evals", "seed", "placement"};
    json_t *root = web_parse_json(req->body, req->body_len, err, errlen);
    if (!root) return RJ_BAD;
    int rc = RJ_NOMEM;
    solve_body *b = calloc(1, sizeof *b);
    if (!b) snprintf(err, errlen, "out of memory");
    if (!b || (rc = rj_check_keys(root, "", keys, 4, err, errlen)) ||
        (rc = rj_load_run(json_object_get(root, "cluster"), json_object_get(root, "job"),
                          json_object_get(root, "model"), &env->limits, &b->run, err, errlen)))
        goto fail;
    rc = RJ_BAD;
    json_t *opt = json_object_get(root, "options");
    if (opt && !json_is_object(opt)) {
        char d[96];
        rj_describe(opt, d, sizeof d);
        snprintf(err, errlen, "options: expected an object, got %s", d);
        goto fail;
    }
    if (opt && rj_check_keys(opt, "options", okeys, 5, err, errlen)) goto fail;
    solve_opts_default(&b->so);
    b->so.budget_ms = DECIDE_DEFAULT_SOLVE_BUDGET_MS;
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
            decide_method_names(names, sizeof names);
            snprintf(err, errlen, "options.method: unknown method \"%.60s\" (%s)", method, names);
            goto fail;
        }
        b->so.method = (solve_method)m;
    }
    b->so.budget_ms = (long)budget;
    if (evals > 0) b->so.max_evals = (long)evals;
    b->so.seed = (uint64_t)seed;
    b->placement = PLACER_PLACE_NONE;
    if (placement && (placer_placement_parse(placement, &b->placement) ||
                      b->placement == PLACER_PLACE_POLICY)) { /* no policy plans here */
        char names[160];
        decide_placement_names(names, sizeof names, 0);
        snprintf(err, errlen, "options.placement: unknown placement \"%.60s\" (%s)",
                 placement, names);
        goto fail;
    }
    if (b->placement != PLACER_PLACE_NONE && b->run->cluster.n_nodes == 0) {
        snprintf(err, errlen, "options.placement: the cluster lists no nodes to place "
                 "tasks on");
        goto fail;
    }
    json_decref(root);
    *out = b;
    return RJ_OK;
fail:
    json_decref(root);
    solve_body_free(b);
    return rc;
}

void api_solve(const api_env *env, const web_request *req, web_reply *rep) {
    rc_entry *ref = NULL;
    solve_body *b = cached_body(env, req, rep, KIND_SOLVE, parse_solve, solve_body_free, &ref);
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
    solve_opts so = b->so; /* b is shared: the time cap goes on a copy */
    if (env->request_cpu_ms > 0 && (so.budget_ms <= 0 || so.budget_ms > env->request_cpu_ms))
        so.budget_ms = env->request_cpu_ms;
    int rc = solve_run(job, cl, &so, res);
    if (env->counters && res->stopped) env->counters->stopped++;
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
    if (rc == 0 && b->placement != PLACER_PLACE_NONE) {
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
    json_object_set_new(o, "plan", final ? render_plan_json(job, cl, final) : json_null());
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

/* The extender's view of the API's environment, for k8s_fix_plan. */
static k8s_env k8s_of(const api_env *env) {
    return (k8s_env){env->policy, env->jobs, env->limits, env->max_budget_ms,
                     env->request_cpu_ms, env->request_mem_bytes, env->state, NULL, NULL, NULL};
}

/* PUT /v1/jobs/{key}: validates the document, fixes the job's plan on its
 * registered nodes less what the other jobs' plans take (inside one write
 * transaction of the state file, so that two replicas never hand the same
 * units to two jobs), stores both, and answers {namespace, name, version,
 * layers, created, extender: the plan}. A plan that cannot be made (or
 * cannot have the registered replica counts) gets 422 with the reason. */
static void jobs_put_handler(const api_env *env, const web_request *req, const char *key,
                             web_reply *rep) {
    static const char *const keys[] = {"cluster", "job", "options", "replicas"};
    char err[2048] = "";
    json_t *root = web_parse_json(req->body, req->body_len, err, sizeof err);
    if (!root) {
        web_reply_error(rep, 400, "%s", err);
        return;
    }
    if (rj_check_keys(root, "", keys, 4, err, sizeof err)) {
        web_reply_error(rep, 400, "%s", err);
        json_decref(root);
        return;
    }
    const char *name = strchr(key, '/') + 1;
    json_t *job = json_object_get(root, "job");
    if (json_is_object(job) && !json_object_get(job, "name"))
        json_object_set_new(job, "name", json_string(name));
    cfg_run *run = decide_load_registered(&env->limits, root, NULL, NULL, err, sizeof err);
    decide_opts o;
    if (!run || decide_opts_parse(json_object_get(root, "options"), 1, env->max_budget_ms, &o, err,
                               sizeof err)) {
        web_reply_error(rep, 400, "%s", err);
        cfg_free(run);
        json_decref(root);
        return;
    }
    int n_layers = run->jobs[0].n_layers;
    cfg_free(run);
    if (store_begin(env->state, err, sizeof err)) {
        web_reply_error(rep, 503, "%s", err);
        json_decref(root);
        return;
    }
    k8s_env kenv = k8s_of(env);
    /* registrations are serialised by the store: the room checked here is
     * still there when the job is loaded below */
    int room = jobs_room(env->jobs, key, root, err, sizeof err);
    json_t *taken = room == 0 ? store_taken(env->state, key, err, sizeof err) : NULL;
    json_t *plan = NULL;
    uint64_t version = 0;
    double at = 0;
    int status = 0;
    if (room < 0) status = room == JOBS_NOROOM ? 507 : 409;
    else if (!taken) status = 500;
    else if (k8s_fix_plan(&kenv, root, taken, &plan, err, sizeof err)) status = 422;
    else if (store_put_job(env->state, key, root, n_layers, plan, &version, &at, err, sizeof err))
        status = 500;
    json_decref(taken);
    if (store_end(env->state, status == 0, err[0] ? NULL : err, err[0] ? 0 : sizeof err) &&
        !status)
        status = 500;
    if (status) {
        web_reply_error(rep, status, "%s", err);
        json_decref(plan);
        json_decref(root);
        return;
    }
    jobs_entry *held = jobs_get(env->jobs, key);
    int created = held == NULL;
    jobs_release(env->jobs, held);
    int rc = jobs_load(env->jobs, key, root, n_layers, json_incref(plan), version, at, err,
                       sizeof err);
    if (rc < 0) { /* out of memory: the file has the job, the next sync loads it */
        json_decref(plan);
        web_reply_error(rep, 500, "%s", err);
        return;
    }
    web_reply_json(rep, created ? 201 : 200,
                   json_pack("{s:s%, s:s, s:I, s:i, s:b, s:o}", "namespace", key,
                             (size_t)(name - 1 - key), "name", name, "version",
                             (json_int_t)version, "layers", n_layers, "created", created,
                             "extender", plan));
}

void api_jobs(const api_env *env, const web_request *req, const char *name, web_reply *rep) {
    char err[1024] = "";
    if (store_sync(env->state, env->jobs, 0, err, sizeof err)) {
        web_reply_error(rep, 503, "%s", err);
        return;
    }
    if (!name) { /* GET /v1/jobs */
        json_t *list = jobs_list(env->jobs);
        if (!list) web_reply_error(rep, 500, "out of memory");
        else web_reply_json(rep, 200, json_pack("{s:o}", "jobs", list));
        return;
    }
    /* POST {namespace}/{name}/complete: the job finished, as a DELETE */
    static const char done_suffix[] = "/complete";
    char trimmed[2 * JOBS_KEY_MAX];
    int complete = !strcmp(req->method, "POST");
    if (complete) {
        size_t n = strlen(name), k = sizeof done_suffix - 1;
        if (n <= k || n - k >= sizeof trimmed || strcmp(name + n - k, done_suffix)) {
            web_reply_error(rep, 404, "POST /v1/jobs/{namespace}/{name}/complete is the only "
                            "POST under /v1/jobs/");
            return;
        }
        snprintf(trimmed, sizeof trimmed, "%.*s", (int)(n - k), name);
        name = trimmed;
    }
    /* {name} is "namespace/name" or "name" (namespace "default") */
    char key[JOBS_KEY_MAX], ns[JOBS_NAME_MAX] = "";
    const char *slash = strchr(name, '/');
    if (slash && (size_t)(slash - name) < sizeof ns) snprintf(ns, sizeof ns, "%.*s", (int)(slash - name), name);
    if (jobs_key(key, slash ? (ns[0] ? ns : "-") : NULL, slash ? slash + 1 : name, err,
                 sizeof err)) {
        web_reply_error(rep, 400, "%s", err);
        return;
    }
    if (!strcmp(req->method, "PUT")) {
        jobs_put_handler(env, req, key, rep);
        return;
    }
    if (complete || !strcmp(req->method, "DELETE")) { /* releases the units its plan took */
        int rc = store_delete_job(env->state, key, err, sizeof err);
        if (rc < 0) web_reply_error(rep, 503, "%s", err);
        else if (jobs_delete(env->jobs, key) < 0 && rc == 0)
            web_reply_error(rep, 404, "no job named \"%.130s\"", key);
        else rep->status = 204;
        return;
    }
    jobs_entry *e = jobs_get(env->jobs, key);
    if (!e) {
        web_reply_error(rep, 404, "no job named \"%.130s\"", key);
        return;
    }
    json_t *o = json_pack("{s:s%, s:s, s:I, s:f, s:i, s:O, s:O, s:O, s:O}", "namespace", key,
                          (size_t)(strchr(key, '/') - key), "name", strchr(key, '/') + 1,
                          "version", (json_int_t)e->version, "registered_at", e->registered_at,
                          "layers", e->n_layers, "cluster", json_object_get(e->doc, "cluster"),
                          "job", json_object_get(e->doc, "job"), "options",
                          json_object_get(e->doc, "options") ? json_object_get(e->doc, "options")
                                                             : json_null(),
                          "replicas", json_object_get(e->doc, "replicas")
                                          ? json_object_get(e->doc, "replicas")
                                          : json_null());
    if (o) json_object_set_new(o, "extender", k8s_job_state_json(e));
    jobs_release(env->jobs, e);
    web_reply_json(rep, 200, o);
}
