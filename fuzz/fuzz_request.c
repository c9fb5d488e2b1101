/* fuzz_request.c -- libFuzzer target: the daemon's request handlers.
 *
 * Drives the handlers of service/api.h and service/k8s.h in-process, as
 * service/server.c's dispatch calls them after reading a body, with no
 * socket: the first byte of an input picks the endpoint, the rest is the
 * body.
 *
 *   byte % 6:  0 POST /v1/place    1 POST /v1/cost    2 POST /v1/solve
 *              3 PUT /v1/jobs/fz (then GET and DELETE it)
 *              4 POST /k8s/filter  5 POST /k8s/prioritize
 *
 * The environment is the daemon's (parse cache, cluster cache, jobs registry, no policy:
 * /v1/place then needs a plan_method) with budget_ms capped at 50 ms so
 * that no input can hold a run for long; a job "tiny" is registered at
 * start so that extender payloads naming it reach the planner. The checks
 * beyond ASan/UBSan: every answer has a status from 200 to 503 other than
 * 500 (out of memory is the only 500), and a non-empty body that is JSON;
 * and the cluster bytes web_json_member finds in a /v1/place body are that
 * body's cluster, as jansson reads it (check_member).
 *
 * Seeds: fuzz/corpus/request/ (request bodies of the daemon tests and of
 * docs/serve.md, each behind its endpoint byte).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "service/api.h"
#include "service/k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static api_env env;
static k8s_env k8s; /* the same policy, jobs and limits as env */

/* The job the extender payloads of the corpus name (kubeflow job "tiny"). */
static const char TINY_JOB[] =
    "{\"cluster\": {\"types\": [{\"name\": \"gpu\", \"kind\": \"gpu\", \"flops\": \"1TFLOPS\","
    " \"io_bw\": \"1GB/s\", \"net_bw\": \"8Gbit/s\", \"mem\": \"10GB\", \"price\": 3.6},"
    " {\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": \"100GFLOPS\", \"io_bw\": \"2GB/s\","
    " \"net_bw\": \"10Gbit/s\", \"mem\": \"64GB\", \"price\": 0.5}]},"
    " \"job\": {\"batch\": 10, \"samples\": 3.6e6, \"min_throughput\": 100, \"alpha\": 0,"
    " \"layers\": [{\"name\": \"a\", \"flops\": \"1GFLOP\", \"io\": 0, \"act\": 0,"
    " \"params\": \"1MB\", \"mem\": \"1MB\"}, {\"name\": \"b\", \"flops\": \"1GFLOP\","
    " \"io\": 0, \"act\": 0, \"params\": 0, \"mem\": \"1MB\"}]}}";

/* Checks one answer; aborts (a finding) when it breaks the contract. */
static void check_reply(const web_reply *rep) {
    if (rep->status < 200 || rep->status > 503 || rep->status == 500) {
        fprintf(stderr, "fuzz_request: status %d: %.*s\n", rep->status, (int)rep->len,
                rep->body ? rep->body : "");
        abort();
    }
    if (rep->body && rep->len > 0 && !rep->content_type) {
        json_error_t je;
        json_t *o = json_loadb(rep->body, rep->len, 0, &je);
        if (!o) {
            fprintf(stderr, "fuzz_request: answer is not JSON (%s)\n", je.text);
            abort();
        }
        json_decref(o);
    }
}

static void run(int endpoint, const char *method, const char *body, size_t len,
                const char *name) {
    web_request req = {method, "", body, len, web_now_ns()};
    web_reply rep;
    memset(&rep, 0, sizeof rep);
    switch (endpoint) {
    case 0: req.path = "/v1/place"; api_place(&env, &req, &rep); break;
    case 1: req.path = "/v1/cost"; api_cost(&env, &req, &rep); break;
    case 2: req.path = "/v1/solve"; api_solve(&env, &req, &rep); break;
    case 3: req.path = "/v1/jobs/fz"; api_jobs(&env, &req, name, &rep); break;
    case 4: req.path = "/k8s/filter"; k8s_filter(&k8s, &req, &rep); break;
    default: req.path = "/k8s/prioritize"; k8s_prioritize(&k8s, &req, &rep); break;
    }
    check_reply(&rep);
    web_reply_clear(&rep);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    env.policy = pslot_create();
    env.jobs = jobs_create(JOBS_DEFAULT_MAX, JOBS_DEFAULT_MAX_BYTES);
    env.cache = rc_create(64, 64u << 20);
    env.clusters = rc_create(8, 64u << 20); /* bodies repeating a cluster read only the rest */
    env.limits.max_layers = RJ_DEFAULT_MAX_LAYERS;
    env.limits.max_nodes = RJ_DEFAULT_MAX_NODES;
    env.limits.max_types = RJ_DEFAULT_MAX_TYPES;
    env.max_budget_ms = 50;
    char serr[256];
    env.state = store_open(NULL, serr, sizeof serr); /* in memory */
    if (!env.policy || !env.jobs || !env.cache || !env.clusters || !env.state) abort();
    k8s = (k8s_env){env.policy, env.jobs, env.limits, env.max_budget_ms, 0, 0, env.state};
    web_request req = {"PUT", "/v1/jobs/tiny", TINY_JOB, sizeof TINY_JOB - 1, web_now_ns()};
    web_reply rep;
    memset(&rep, 0, sizeof rep);
    api_jobs(&env, &req, "tiny", &rep);
    if (rep.status != 201) {
        fprintf(stderr, "fuzz_request: registering tiny: %d %.*s\n", rep.status, (int)rep.len,
                rep.body);
        abort();
    }
    web_reply_clear(&rep);
    return 0;
}

/* check_member holds web_json_member (the daemon's cluster finder) to
 * jansson on a /v1/place body: when both accept the body, the bytes found
 * parse to the member's value, and the body with null in their place
 * parses to the same object but for that member (what the daemon's
 * known-cluster read relies on). Aborts (a finding) otherwise. */
static void check_member(const char *body, size_t len) {
    size_t off = 0, vlen = 0;
    if (!web_json_member(body, len, "cluster", &off, &vlen)) return;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (!root) return;
    json_t *v = json_loadb(body + off, vlen, JSON_REJECT_DUPLICATES, NULL);
    char *rest = malloc(len - vlen + 4);
    if (!rest) abort();
    memcpy(rest, body, off);
    memcpy(rest + off, "null", 4);
    memcpy(rest + off + 4, body + off + vlen, len - off - vlen);
    json_t *r2 = json_loadb(rest, len - vlen + 4, JSON_REJECT_DUPLICATES, NULL);
    free(rest);
    if (!v || !json_equal(v, json_object_get(root, "cluster")) || !r2 ||
        !json_is_null(json_object_get(r2, "cluster")) || json_object_set(r2, "cluster", v) ||
        !json_equal(r2, root)) {
        fprintf(stderr, "fuzz_request: web_json_member found bytes %zu+%zu that are not the "
                "body's cluster\n", off, vlen);
        abort();
    }
    json_decref(v);
    json_decref(r2);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int endpoint = data[0] % 6;
    /* the server hands handlers a NUL-terminated copy of exactly the body */
    size_t len = size - 1;
    char *body = malloc(len + 1);
    if (!body) return 0;
    memcpy(body, data + 1, len);
    body[len] = '\0';
    if (endpoint == 3) {
        run(3, "PUT", body, len, "fz");
        run(3, "GET", "", 0, "fz");
        run(3, "DELETE", "", 0, "fz");
    } else {
        if (endpoint == 0) check_member(body, len);
        run(endpoint, "POST", body, len, NULL);
    }
    free(body);
    return 0;
}
