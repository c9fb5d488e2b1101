/* test_serve_k8s.c -- `strata serve` as a Kubernetes scheduler extender.
 *
 * The real daemon over loopback, fed ExtenderArgs as kube-scheduler sends
 * them (Go field names: Pod, Nodes, NodeNames) for Kubeflow and Volcano
 * pods, in both the Nodes and the NodeNames forms, and for pods it must
 * let pass. No policy is loaded, so the extender plans with its fallback
 * (greedy plan, zone placement); the job below has a single feasible plan
 * so that the stages are known by hand:
 *
 *   types cpu: 1e12 FLOP/s, mem 192GB; gpu: 1e14 FLOP/s, mem 16GB; both
 *   net_bw 1e9 B/s. Job: B 10, R 100, alpha 0.05.
 *   emb (1e6 FLOP, 100GB): fits only cpu (100GB > 16GB).
 *   mlp (5e11 FLOP, 1GB): on cpu C = 10 * 5e11 / 1e12 = 5 s, q = R t / B
 *   >= 100 * 5 / 10 = 50 and alpha q >= 2.5 >= 1, so cpu can never reach R;
 *   on gpu C = 10 * 5e11 / 1e14 = 0.05 s, X = 2 * 10 * 1e3 / 1e9 = 2e-5 s,
 *   q = 100 * 0.05002 / 10 = 0.5002 <= 1: one unit.
 *   emb on cpu: t = 1e-5 + 2e-5 s, one unit. Params are 0: one ps each.
 *
 * So the plan is [cpu, gpu]: worker 0 runs stage 0 on cpu, worker 1 stage
 * 1 on gpu, ps 0 and ps 1 serve stages 0 and 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "env/import.h"
#include "tests/serve_client.h"

/* A Node object as the API server describes it. */
static json_t *node(const char *name, const char *type, const char *zone, const char *gpus,
                    const char *ann_key, const char *ann_val) {
    json_t *labels = json_pack("{s:s}", "kubernetes.io/hostname", name);
    if (type) json_object_set_new(labels, "node.kubernetes.io/instance-type", json_string(type));
    if (zone) json_object_set_new(labels, "topology.kubernetes.io/zone", json_string(zone));
    json_t *alloc = json_pack("{s:s, s:s}", "cpu", "32", "memory", "256Gi");
    if (gpus) json_object_set_new(alloc, "nvidia.com/gpu", json_string(gpus));
    json_t *ann = json_object();
    if (ann_key) json_object_set_new(ann, ann_key, json_string(ann_val));
    return json_pack("{s:s, s:s, s:{s:s, s:o, s:o}, s:{s:o}}", "kind", "Node", "apiVersion",
                     "v1", "metadata", "name", name, "labels", labels, "annotations", ann,
                     "status", "allocatable", alloc);
}

static json_t *node_list(void) {
    return json_pack("{s:s, s:[o,o,o,o,o,o]}", "kind", "NodeList", "items",
                     node("cpu-a", "cpu", "a", NULL, "strata.io/units", "4"),
                     node("cpu-b", "cpu", "b", NULL, "strata.io/units", "4"),
                     node("gpu-a", "gpu", "a", "4", NULL, NULL),
                     node("gpu-b", "gpu", "b", "4", NULL, NULL),
                     node("odd-1", "m5.large", "a", NULL, NULL, NULL),
                     node("bare-1", NULL, "a", NULL, NULL, NULL));
}

static json_t *kubeflow_pod(const char *jobname, const char *role, const char *index) {
    char name[96];
    snprintf(name, sizeof name, "%s-%s-%s", jobname, role, index);
    return json_pack("{s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:{}}", "metadata", "name", name,
                     "namespace", "default", "labels", "training.kubeflow.org/job-name", jobname,
                     "training.kubeflow.org/replica-type", role,
                     "training.kubeflow.org/replica-index", index, "spec");
}

/* A Volcano pod; index NULL: only the pod name carries it. */
static json_t *volcano_pod(const char *jobname, const char *task, const char *index,
                           const char *podname) {
    json_t *p = json_pack("{s:{s:s, s:{s:s, s:s}, s:{}}}", "metadata", "name", podname, "labels",
                          "volcano.sh/job-name", jobname, "volcano.sh/task-spec", task,
                          "annotations");
    if (index)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                            "volcano.sh/task-index", json_string(index));
    return p;
}

/* The registered cluster: both types, zones a and b, one node of each type
 * in each zone. The extender fixes the plan on these nodes at registration. */
static json_t *cluster4(void) {
    return json_pack(
        "{s:o, s:[{s:s}, {s:s}], s:[{s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:s, s:s},"
        " {s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:s, s:s}]}",
        "types", sv_two_types(), "zones", "name", "a", "name", "b", "nodes", "name", "cpu-a",
        "type",
        "cpu", "units", 4, "zone", "a", "bw", "1GB/s", "name", "cpu-b", "type", "cpu", "units",
        4, "zone", "b", "bw", "1GB/s", "name", "gpu-a", "type", "gpu", "units", 4, "zone", "a",
        "bw", "1GB/s", "name", "gpu-b", "type", "gpu", "units", 4, "zone", "b", "bw", "1GB/s");
}

static sv_proc start(void) {
    sv_proc p;
    assert_int_equal(sv_start(&p, "k8s", NULL), 0);
    return p;
}

static void put_job(int port, const char *name, json_t *cluster) {
    sv_resp r;
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", name);
    int st = sv_json_req(port, "PUT", path, json_pack("{s:o, s:o}", "cluster", cluster, "job",
                                                      sv_two_layer_job()), NULL, &r);
    if (st != 201) fail_msg("PUT %s: %d %s", path, st, r.body);
    sv_resp_free(&r);
}

/* Posts ExtenderArgs; returns the parsed answer (asserts status 200). */
static json_t *call(int port, const char *verb, json_t *pod, json_t *nodes, json_t *names) {
    json_t *args = json_pack("{s:o, s:o, s:o}", "Pod", pod, "Nodes", nodes ? nodes : json_null(),
                             "NodeNames", names ? names : json_null());
    sv_resp r;
    char path[64];
    snprintf(path, sizeof path, "/k8s/%s", verb);
    int st = sv_json_req(port, "POST", path, args, NULL, &r);
    if (st != 200) fail_msg("POST %s: %d %s", path, st, r.body);
    json_t *o = sv_body_json(&r);
    assert_non_null(o);
    sv_resp_free(&r);
    return o;
}

/* Names of the nodes a Nodes-form filter kept, comma-joined in order. */
static void kept_items(const json_t *res, char *buf, size_t len) {
    buf[0] = '\0';
    size_t i, used = 0;
    json_t *it;
    json_array_foreach(json_object_get(json_object_get(res, "Nodes"), "items"), i, it)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                                 json_string_value(json_object_get(json_object_get(it, "metadata"),
                                                                   "name")));
}

static void kept_names(const json_t *res, char *buf, size_t len) {
    buf[0] = '\0';
    size_t i, used = 0;
    json_t *it;
    json_array_foreach(json_object_get(res, "NodeNames"), i, it)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                                 json_string_value(it));
}

/* Why a filter failed a node that nothing can make fit (wrong type, not
 * judged, no units): FailedAndUnresolvableNodes, so that kube-scheduler
 * does not try preemption. */
static const char *failed_why(const json_t *res, const char *node) {
    assert_null(json_object_get(json_object_get(res, "FailedNodes"), node));
    return json_string_value(
        json_object_get(json_object_get(res, "FailedAndUnresolvableNodes"), node));
}

/* Why a filter failed a node that could fit once units free up. */
static const char *busy_why(const json_t *res, const char *node) {
    assert_null(json_object_get(json_object_get(res, "FailedAndUnresolvableNodes"), node));
    return json_string_value(json_object_get(json_object_get(res, "FailedNodes"), node));
}

static int score_of(const json_t *list, const char *host) {
    size_t i;
    json_t *h;
    json_array_foreach(list, i, h)
        if (!strcmp(json_string_value(json_object_get(h, "Host")), host))
            return (int)json_integer_value(json_object_get(h, "Score"));
    return -1;
}

/* The extender's decision for a job, from GET /v1/jobs/{name}. */
static json_t *state_of(int port, const char *name) {
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", name);
    sv_resp r;
    assert_int_equal(sv_http(port, "GET", path, NULL, NULL, 0, &r), 200);
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    json_t *ext = json_incref(json_object_get(o, "extender"));
    json_decref(o);
    return ext;
}

static const char *spot(const json_t *ext, const char *role, int i, const char *key) {
    return json_string_value(json_object_get(json_array_get(json_object_get(ext, role),
                                                             (size_t)i), key));
}

/* A Nodes-form filter answer's failure maps are written as text (not
 * dumped from jansson trees) and must read byte for byte as json_dumps
 * writes the same maps: names in the candidates' order, escaped where
 * needed, and a name sent twice in the map once, at its first place (as
 * jansson sets a key twice). */
static void test_filter_maps_text(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", cluster4());
    for (int twice = 0; twice < 2; twice++) {
        json_t *nl = node_list();
        json_t *items = json_object_get(nl, "items");
        json_array_append_new(items, node("odd\"2\\\n", "m5.large", "a", NULL, NULL, NULL));
        if (twice) json_array_append_new(items, node("odd-1", "m5.large", "b", NULL, NULL, NULL));
        json_t *args = json_pack("{s:o, s:o, s:n}", "Pod", kubeflow_pod("ctr", "worker", "1"),
                                 "Nodes", nl, "NodeNames");
        sv_resp r;
        assert_int_equal(sv_json_req(p.port, "POST", "/k8s/filter", args, NULL, &r), 200);
        json_t *res = sv_body_json(&r);
        assert_non_null(res);
        const json_t *un = json_object_get(res, "FailedAndUnresolvableNodes");
        assert_int_equal(json_object_size(un), 5);
        char *want = json_dumps(un, JSON_COMPACT);
        char *at = strstr(r.body, "\"FailedAndUnresolvableNodes\":");
        assert_non_null(at);
        assert_int_equal(strncmp(at + 29, want, strlen(want)), 0);
        assert_int_equal(strncmp(want, "{\"cpu-a\":", 9), 0); /* the candidates' order */
        assert_non_null(strstr(want, "\"odd\\\"2\\\\\\n\":"));
        const char *first = strstr(r.body, "\"odd-1\":");
        assert_non_null(first);
        assert_null(strstr(first + 1, "\"odd-1\":"));
        assert_non_null(strstr(r.body, "\"FailedNodes\":{},"));
        free(want);
        json_decref(res);
        sv_resp_free(&r);
    }
    assert_int_equal(sv_stop(&p), 0);
}

static void test_kubeflow_nodes_form(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", cluster4());
    char kept[256];

    /* Worker 1 runs stage 1 on gpu: only the gpu nodes pass. */
    json_t *res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "1"), node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "gpu-a,gpu-b");
    assert_non_null(strstr(failed_why(res, "cpu-a"), "stage 1 on gpu; the node is cpu"));
    assert_non_null(strstr(failed_why(res, "odd-1"), "instance type \"m5.large\" is not a type"));
    assert_non_null(strstr(failed_why(res, "bare-1"), "no instance-type label (node.kubernetes.io/instance-type)"));
    assert_true(json_is_null(json_object_get(res, "NodeNames")));
    assert_string_equal(json_string_value(json_object_get(res, "Error")), "");
    json_decref(res);

    /* The decision: greedy plan, zone placement, one zone for the job. */
    json_t *ext = state_of(p.port, "ctr");
    assert_true(json_is_true(json_object_get(ext, "planned")));
    assert_string_equal(json_string_value(json_object_get(ext, "plan_from")), "greedy");
    assert_string_equal(json_string_value(json_object_get(ext, "placement_by")), "zone");
    assert_int_equal(json_array_size(json_object_get(ext, "workers")), 2);
    assert_int_equal(json_array_size(json_object_get(ext, "ps")), 2);
    assert_string_equal(spot(ext, "workers", 0, "type"), "cpu");
    assert_string_equal(spot(ext, "workers", 1, "type"), "gpu");
    const char *zone = spot(ext, "workers", 1, "zone");
    assert_string_equal(spot(ext, "workers", 0, "zone"), zone);
    int in_a = !strcmp(zone, "a");
    const char *gpu_here = in_a ? "gpu-a" : "gpu-b", *gpu_there = in_a ? "gpu-b" : "gpu-a";
    const char *cpu_here = in_a ? "cpu-a" : "cpu-b", *cpu_there = in_a ? "cpu-b" : "cpu-a";
    assert_string_equal(spot(ext, "workers", 1, "node"), gpu_here);
    assert_string_equal(spot(ext, "workers", 0, "node"), cpu_here);

    /* Prioritize worker 1: 10 on its node, 4 on the gpu node of the other
     * zone, 0 where it cannot run. */
    json_t *list = call(p.port, "prioritize", kubeflow_pod("ctr", "worker", "1"), node_list(),
                        NULL);
    assert_int_equal(json_array_size(list), 6);
    assert_int_equal(score_of(list, gpu_here), 10);
    assert_int_equal(score_of(list, gpu_there), 4);
    assert_int_equal(score_of(list, "cpu-a"), 0);
    assert_int_equal(score_of(list, "odd-1"), 0);
    json_decref(list);

    /* Worker 0 runs stage 0 on cpu. */
    res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "0"), node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "cpu-a,cpu-b");
    json_decref(res);

    /* A ps may run on any node the extender knows; its planned node gets
     * 10, the others in its zone 7, the rest 4, unknown nodes 0. */
    res = call(p.port, "filter", kubeflow_pod("ctr", "ps", "1"), node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "cpu-a,cpu-b,gpu-a,gpu-b");
    json_decref(res);
    const char *ps_node = spot(ext, "ps", 1, "node");
    assert_string_equal(spot(ext, "ps", 1, "zone"), zone);
    list = call(p.port, "prioritize", kubeflow_pod("ctr", "ps", "1"), node_list(), NULL);
    assert_int_equal(score_of(list, ps_node), 10);
    const char *other_here = !strcmp(ps_node, gpu_here) ? cpu_here : gpu_here;
    assert_int_equal(score_of(list, other_here), 7);
    assert_int_equal(score_of(list, gpu_there), 4);
    assert_int_equal(score_of(list, cpu_there), 4);
    assert_int_equal(score_of(list, "bare-1"), 0);
    json_decref(list);

    /* The decision holds while the nodes stay the same. */
    json_t *again = state_of(p.port, "ctr");
    assert_string_equal(spot(again, "workers", 1, "node"), gpu_here);
    json_decref(again);
    json_decref(ext);

    /* A node whose annotation does not read is not judged. */
    json_t *nl = node_list();
    json_array_append_new(json_object_get(nl, "items"),
                          node("gpu-c", "gpu", "a", "4", "strata.io/bw", "fast"));
    res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "1"), nl, NULL);
    assert_non_null(strstr(failed_why(res, "gpu-c"), "annotation strata.io/bw: expected a rate"));
    json_decref(res);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_volcano(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "vc", cluster4());
    char kept[256];
    /* Index from volcano.sh/task-index. */
    json_t *res = call(p.port, "filter", volcano_pod("vc", "worker", "1", "vc-worker-1"),
                       node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "gpu-a,gpu-b");
    json_decref(res);
    /* Index from the pod name. */
    res = call(p.port, "filter", volcano_pod("vc", "worker", NULL, "vc-worker-0"), node_list(),
               NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "cpu-a,cpu-b");
    json_decref(res);
    json_t *ext = state_of(p.port, "vc");
    json_t *list = call(p.port, "prioritize", volcano_pod("vc", "ps", "0", "vc-ps-0"),
                        node_list(), NULL);
    assert_int_equal(score_of(list, spot(ext, "ps", 0, "node")), 10);
    json_decref(list);
    json_decref(ext);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_node_names_form(void **state) {
    (void)state;
    sv_proc p = start();
    /* nodeCacheCapable: the scheduler sends names only; the registered
     * cluster describes the nodes. */
    json_t *cl = cluster4();
    put_job(p.port, "named", cl);
    json_t *res = call(p.port, "filter", kubeflow_pod("named", "worker", "1"), NULL,
                       json_pack("[s,s,s,s]", "cpu-a", "gpu-a", "gpu-b", "ghost"));
    char kept[256];
    kept_names(res, kept, sizeof kept);
    assert_string_equal(kept, "gpu-a,gpu-b");
    assert_true(json_is_null(json_object_get(res, "Nodes")));
    assert_non_null(strstr(failed_why(res, "cpu-a"), "stage 1 on gpu"));
    assert_non_null(strstr(failed_why(res, "ghost"), "not among the registered cluster's nodes"));
    json_decref(res);
    json_t *ext = state_of(p.port, "named");
    const char *planned = spot(ext, "workers", 1, "node");
    json_t *list = call(p.port, "prioritize", volcano_pod("named", "worker", "1", "named-w-1"),
                        NULL, json_pack("[s,s,s]", "gpu-a", "gpu-b", "ghost"));
    assert_int_equal(score_of(list, planned), 10);
    assert_int_equal(score_of(list, !strcmp(planned, "gpu-a") ? "gpu-b" : "gpu-a"), 4);
    assert_int_equal(score_of(list, "ghost"), 0);
    json_decref(list);
    json_decref(ext);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_pass_through(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", cluster4());
    char kept[256];
    json_t *pods[] = {
        json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "web-1", "labels", "app", "web"),
        kubeflow_pod("unregistered", "worker", "0"),
        kubeflow_pod("ctr", "evaluator", "0"),
        kubeflow_pod("ctr", "worker", "x"),
    };
    for (int i = 0; i < 4; i++) {
        json_t *res = call(p.port, "filter", json_incref(pods[i]), node_list(), NULL);
        kept_items(res, kept, sizeof kept);
        assert_string_equal(kept, "cpu-a,cpu-b,gpu-a,gpu-b,odd-1,bare-1");
        assert_int_equal(json_object_size(json_object_get(res, "FailedNodes")), 0);
        assert_int_equal(json_object_size(json_object_get(res, "FailedAndUnresolvableNodes")), 0);
        json_decref(res);
        json_t *list = call(p.port, "prioritize", pods[i], node_list(), NULL);
        assert_int_equal(json_array_size(list), 6);
        for (size_t k = 0; k < 6; k++)
            assert_int_equal(json_integer_value(json_object_get(json_array_get(list, k),
                                                                "Score")), 0);
        json_decref(list);
    }
    /* A task the fixed plan does not know (it has 2 workers) is refused:
     * every node unresolvable, with the reason, and 0 everywhere. */
    json_t *res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "7"), node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "");
    json_t *un = json_object_get(res, "FailedAndUnresolvableNodes");
    assert_int_equal(json_object_size(un), 6);
    assert_non_null(strstr(json_string_value(json_object_get(un, "gpu-a")),
                           "job default/ctr worker 7 is not in its plan (the plan has 2 worker"));
    json_decref(res);
    json_t *list = call(p.port, "prioritize", kubeflow_pod("ctr", "worker", "7"), node_list(),
                        NULL);
    for (size_t k = 0; k < 6; k++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(list, k), "Score")), 0);
    json_decref(list);
    /* The same job name in another namespace is another job: not registered. */
    json_t *other = kubeflow_pod("ctr", "worker", "0");
    json_object_set_new(json_object_get(other, "metadata"), "namespace", json_string("team-b"));
    res = call(p.port, "filter", other, node_list(), NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "cpu-a,cpu-b,gpu-a,gpu-b,odd-1,bare-1");
    json_decref(res);
    res = call(p.port, "filter", kubeflow_pod("nobody", "ps", "0"), NULL,
                       json_pack("[s,s]", "x", "y"));
    kept_names(res, kept, sizeof kept);
    assert_string_equal(kept, "x,y");
    json_decref(res);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "/k8s/filter 200", "pass: not a training pod", NULL), 1);
    assert_int_equal(sv_log_count(&p, "/k8s/filter 200", "job default/unregistered is not "
                                  "registered", NULL), 1);
    assert_int_equal(sv_log_count(&p, "/k8s/filter 200", "job team-b/ctr is not registered",
                                  NULL), 1);
    assert_int_equal(sv_log_count(&p, "/k8s/filter 200", "the plan has 2 worker tasks", NULL), 1);
}

/* A GPU node as clusters write it: the allocatable count in quantity form,
 * the GPU product label only (GKE's or NVIDIA GPU feature discovery's). */
static json_t *gpu_node(const char *name, const char *zone, const char *gpus,
                        const char *prod_key, const char *prod) {
    json_t *n = node(name, NULL, zone, gpus, NULL, NULL);
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), prod_key,
                        json_string(prod));
    return n;
}

/* Node facts read as clusters write them, and the filter's two kinds of
 * failure. The job of sv_two_layer_job() with min_throughput 250 has a gpu stage of two
 * workers: q = 250 * 0.05002 / 10 = 1.25 units, and two units reach
 * 2 / (1 + 0.05) = 1.90 >= 1.25. Its workers are then 0 (cpu), 1 and 2
 * (gpu). The registered cluster's gpu nodes hold one GPU each, both in
 * zone a: the plan fixed at registration puts one worker on each. The
 * call then shows those nodes and others the registry does not list,
 * which the extender reads from their Node objects. */
static void test_node_facts_and_failures(void **state) {
    (void)state;
    sv_proc p = start();
    json_t *j = sv_two_layer_job();
    json_object_set_new(j, "min_throughput", json_integer(250));
    json_t *cl = json_pack(
        "{s:o, s:[{s:s}, {s:s}], s:[{s:s, s:s, s:i, s:s, s:s}, {s:s, s:s, s:i, s:s, s:s},"
        " {s:s, s:s, s:i, s:s, s:s}]}",
        "types", sv_two_types(), "zones", "name", "a", "name", "b", "nodes", "name", "cpu-a",
        "type",
        "cpu", "units", 4, "zone", "a", "bw", "1GB/s", "name", "g1-a", "type", "gpu", "units", 1,
        "zone", "a", "bw", "1GB/s", "name", "g2-a", "type", "gpu", "units", 1, "zone", "a", "bw",
        "1GB/s");
    sv_resp r;
    int st = sv_json_req(p.port, "PUT", "/v1/jobs/facts",
                         json_pack("{s:o, s:o}", "cluster", cl, "job", j), NULL, &r);
    if (st != 201) fail_msg("PUT: %d %s", st, r.body);
    sv_resp_free(&r);
    json_t *ext = state_of(p.port, "facts");
    assert_int_equal(json_array_size(json_object_get(ext, "workers")), 3);
    const char *mine = spot(ext, "workers", 1, "node"), *other = spot(ext, "workers", 2, "node");
    assert_true((!strcmp(mine, "g1-a") && !strcmp(other, "g2-a")) ||
                (!strcmp(mine, "g2-a") && !strcmp(other, "g1-a")));
    json_t *nl = json_pack("{s:s, s:[o,o,o,o,o,o,o,o]}", "kind", "NodeList", "items",
                           node("cpu-a", NULL, "a", NULL, NULL, NULL),
                           node("g1-a", NULL, "a", NULL, NULL, NULL),
                           node("g2-a", NULL, "a", NULL, NULL, NULL),
                           gpu_node("gke-b", "b", "1", "cloud.google.com/gke-accelerator", "gpu"),
                           gpu_node("gfd-b", "b", "1", "nvidia.com/gpu.product", "gpu"),
                           node("big-b", "gpu", "b", "2k", NULL, NULL),
                           node("none-b", "gpu", "b", "0", NULL, NULL),
                           node("odd-b", "gpu", "b", "1.5", NULL, NULL));
    json_t *res = call(p.port, "filter", kubeflow_pod("facts", "worker", "1"), nl, NULL);
    char kept[256];
    kept_items(res, kept, sizeof kept);
    char want[96];
    /* GKE's and NVIDIA's product labels type gke-b and gfd-b; "2k" is
     * 2000 GPUs, not 0 */
    snprintf(want, sizeof want, "%s,gke-b,gfd-b,big-b", mine);
    assert_string_equal(kept, want);
    /* Taken by worker 2: it could fit once that unit is free. */
    assert_non_null(strstr(busy_why(res, other), "gives all 1 of the node's units"));
    /* Never: the wrong type, no GPUs at all, a GPU count that is no count. */
    assert_non_null(strstr(failed_why(res, "cpu-a"), "stage 1 on gpu; the node is cpu"));
    assert_non_null(strstr(failed_why(res, "none-b"), "no gpu units in total"));
    assert_non_null(strstr(failed_why(res, "odd-b"),
                           "allocatable nvidia.com/gpu '1.5' is not a whole number of GPUs"));
    json_decref(res);
    json_decref(ext);
    assert_int_equal(sv_stop(&p), 0);
}

/* A filter call whose Nodes form is `bytes` long: node_list() with one
 * node's annotation padded, as the images list pads real Node objects. */
static char *big_filter_body(size_t bytes) {
    json_t *nl = node_list();
    json_t *ann = json_object_get(json_object_get(json_array_get(json_object_get(nl, "items"), 0),
                                                  "metadata"), "annotations");
    char *pad = malloc(bytes);
    assert_non_null(pad);
    memset(pad, 'x', bytes - 1);
    pad[bytes - 1] = '\0';
    json_object_set_new(ann, "example.com/padding", json_string(pad));
    free(pad);
    json_t *args = json_pack("{s:o, s:o}", "Pod", kubeflow_pod("ctr", "worker", "1"), "Nodes", nl);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    return body;
}

/* The extender's verbs take bodies past the 1 MiB of the other endpoints
 * (the Nodes form of a large cluster), up to --max-k8s-body-mb; /v1/place
 * still refuses them. Before: 413 for any body over 1 MiB. */
static void test_body_limits(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", json_pack("{s:o}", "types", sv_two_types()));
    char *body = big_filter_body((size_t)3 << 20); /* 3 MiB */
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/k8s/filter", NULL, body, strlen(body), &r), 200);
    assert_non_null(strstr(r.body, "\"gpu-a\""));
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "POST", "/v1/place", NULL, body, strlen(body), &r), 413);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    /* A smaller limit names the flag and the fast path. */
    const char *extra[] = {"--max-k8s-body-mb", "2", NULL};
    assert_int_equal(sv_start(&p, "k8s-body", extra), 0);
    assert_int_equal(sv_http(p.port, "POST", "/k8s/prioritize", NULL, body, strlen(body), &r),
                     413);
    assert_non_null(strstr(r.body, "--max-k8s-body-mb"));
    assert_non_null(strstr(r.body, "nodeCacheCapable: true"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
    free(body);
}

/* With --catalogue, a node is typed as import-nodes types it: the label
 * p4d.24xlarge is no type of the job's cluster, but the catalogue makes it
 * A100; an r5n.24xlarge with 95690m allocatable is the catalogue's CPU
 * with unit_cpus 48: 2 units. The job's types are renamed CPU and A100
 * (stages 0 and 1) and its plan is fixed on two registered nodes; the call
 * shows three unregistered ones. Worker 1 then passes on the p4d node
 * only, worker 0 on the r5n node only. */
static void test_catalogue_types(void **state) {
    (void)state;
    char cat[1024];
    const char *src = getenv("STRATA_SRC");
    snprintf(cat, sizeof cat, "%s/configs/catalogue/instances.yaml", src ? src : ".");
    const char *extra[] = {"--catalogue", cat, NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "k8s-cat", extra), 0);
    json_t *ty = sv_two_types();
    json_object_set_new(json_array_get(ty, 0), "name", json_string("CPU"));
    json_object_set_new(json_array_get(ty, 1), "name", json_string("A100"));
    put_job(p.port, "cat", json_pack("{s:o, s:[{s:s, s:s, s:i, s:s}, {s:s, s:s, s:i, s:s}]}",
                                     "types", ty, "nodes", "name", "cpu-reg", "type", "CPU",
                                     "units", 2, "bw", "1GB/s", "name", "gpu-reg", "type", "A100",
                                     "units", 8, "bw", "1GB/s"));
    json_t *cpu = node("r5n-a", "r5n.24xlarge", "a", NULL, NULL, NULL);
    json_object_set_new(json_object_get(json_object_get(cpu, "status"), "allocatable"), "cpu",
                        json_string("95690m"));
    json_t *nl = json_pack("{s:s, s:[o,o,o]}", "kind", "NodeList", "items", cpu,
                           node("p4d-a", "p4d.24xlarge", "a", "8", NULL, NULL),
                           node("m5-a", "m5.large", "a", NULL, NULL, NULL));
    json_t *res = call(p.port, "filter", kubeflow_pod("cat", "worker", "1"), json_incref(nl), NULL);
    char kept[256];
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "p4d-a");
    assert_non_null(strstr(failed_why(res, "r5n-a"), "the node is CPU"));
    assert_non_null(strstr(failed_why(res, "m5-a"), "instance type \"m5.large\""));
    json_decref(res);
    /* worker 0 (stage 0 on CPU) passes on the r5n node */
    res = call(p.port, "filter", kubeflow_pod("cat", "worker", "0"), nl, NULL);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "r5n-a");
    json_decref(res);
    assert_int_equal(imp_cpu_units(95.69, 48.0), 2);
    assert_int_equal(imp_cpu_units(72.0, 48.0), 1); /* 1.5: ties go down */
    assert_int_equal(imp_cpu_units(72.1, 48.0), 2);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_bad_args(void **state) {
    (void)state;
    sv_proc p = start();
    struct {
        const char *body;
        const char *needle;
    } cases[] = {
        {"{\"Nodes\": {\"items\": []}}", "Pod: missing required key"},
        {"{\"Pod\": 3, \"NodeNames\": []}", "Pod: expected an object, got 3"},
        {"{\"Pod\": {}}", "Nodes or NodeNames: one of them is required"},
        {"{\"Pod\": {}, \"NodeNames\": [\"a\", 2]}", "NodeNames[1]: expected a node name"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {}}]}}",
         "Nodes.items[0].metadata.name: missing"},
        {"{\"Pod\": {}, \"Nodes\": []}", "Nodes: expected a NodeList object"},
        {"{\"Pod\": {},\n \"NodeNames\": [\"a\" \"b\"]}", "line 2, column"},
        /* the Nodes form is read by a scanner (service/jscan.h): refused alike */
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"name\": \"a\"}}",
         "malformed JSON at line 1, column 60"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"name\": \"a\"}]}}",
         "',' or '}' expected near ']'"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"status\": {\"images\": [{\"names\": "
         "[\"x\\q\"]}]}}]}}", "invalid escape"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [{\"metadata\": {\"name\": \"a\", "
         "\"name\": \"b\"}}]}}", "duplicate object key"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": {\"metadata\": {}}}}",
         "Nodes.items: expected a list of Node objects, got an object"},
        {"{\"Pod\": {}, \"Nodes\": {\"items\": [3]}}", "Nodes.items[0].metadata.name: missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int v = 0; v < 2; v++) {
            sv_resp r;
            int st = sv_http(p.port, "POST", v ? "/k8s/prioritize" : "/k8s/filter", NULL,
                             cases[i].body, strlen(cases[i].body), &r);
            json_t *o = sv_body_json(&r);
            const char *msg = json_string_value(json_object_get(o, "error"));
            if (st != 400 || !msg || !strstr(msg, cases[i].needle))
                fail_msg("case %zu: expected 400 with \"%s\", got %d %s", i, cases[i].needle, st,
                         r.body);
            json_decref(o);
            sv_resp_free(&r);
        }
    }
    /* Lower-case keys are read as Go's decoder reads them. */
    sv_resp r;
    const char *lower = "{\"pod\": {}, \"nodenames\": [\"a\"]}";
    assert_int_equal(sv_http(p.port, "POST", "/k8s/filter", NULL, lower, strlen(lower), &r), 200);
    assert_non_null(strstr(r.body, "\"NodeNames\":[\"a\"]"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* The filter's Nodes form passes the kept Node objects back as they came,
 * byte for byte (the scanner keeps their slices of the body), whatever
 * their strings hold. Before: re-dumped by jansson, compact, escapes
 * rewritten. */
static void test_nodes_passed_back(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", cluster4());
    const char *gpu_a =
        "{\n  \"kind\": \"Node\",\n  \"metadata\": {\"name\": \"gpu-a\", \"labels\": "
        "{\"node.kubernetes.io/instance-type\": \"gpu\", \"topology.kubernetes.io/zone\": "
        "\"a\", \"x\": \"caf\\u00e9 \\/ ]}\\\"{[\"}},\n  \"status\": {\"allocatable\": "
        "{\"nvidia.com/gpu\": \"4\"}, \"images\": [{\"names\": [\"a]\", \"b}\"], "
        "\"sizeBytes\": 1e3}]}\n}";
    const char *cpu_a = "{\"metadata\":{\"name\":\"cpu-a\",\"labels\":{"
                        "\"node.kubernetes.io/instance-type\":\"cpu\"}}}";
    char body[2048];
    snprintf(body, sizeof body, "{\"Pod\": {\"metadata\": {\"name\": \"ctr-worker-1\", "
             "\"namespace\": \"default\", \"labels\": {\"training.kubeflow.org/job-name\": "
             "\"ctr\", \"training.kubeflow.org/replica-type\": \"worker\", "
             "\"training.kubeflow.org/replica-index\": \"1\"}}},\n \"Nodes\": {\"items\": "
             "[%s, %s]}}", cpu_a, gpu_a);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "POST", "/k8s/filter", NULL, body, strlen(body), &r), 200);
    char want[2048];
    snprintf(want, sizeof want, "{\"Nodes\":{\"metadata\":{},\"items\":[%s]},", gpu_a);
    if (strncmp(r.body, want, strlen(want)))
        fail_msg("answer %s\nexpected to start %s", r.body, want);
    json_t *o = sv_body_json(&r);
    assert_non_null(o); /* the whole answer is JSON */
    assert_non_null(strstr(failed_why(o, "cpu-a"), "stage 1 on gpu; the node is cpu"));
    json_t *sent = json_loads(gpu_a, 0, NULL);
    assert_true(json_equal(json_array_get(json_object_get(json_object_get(o, "Nodes"), "items"),
                                          0), sent));
    json_decref(sent);
    json_decref(o);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

/* A Node outside the registry is read from its labels once per
 * resourceVersion: refused at "1", it stays refused (with its reason)
 * while the version is "1", even though its labels now say otherwise, and
 * is read again at "2". Before, every call read every node again. */
static void test_refused_by_version(void **state) {
    (void)state;
    sv_proc p = start();
    put_job(p.port, "ctr", cluster4());
    char kept[256];
    for (int round = 0; round < 3; round++) {
        json_t *n = node("gpu-c", round ? "gpu" : "m5.large", "a", "4", NULL, NULL);
        json_object_set_new(json_object_get(n, "metadata"), "resourceVersion",
                            json_string(round < 2 ? "1" : "2"));
        json_t *res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "1"),
                           json_pack("{s:[o]}", "items", n), NULL);
        kept_items(res, kept, sizeof kept);
        if (round < 2) {
            assert_string_equal(kept, "");
            assert_non_null(strstr(failed_why(res, "gpu-c"), "instance type \"m5.large\""));
        } else {
            assert_string_equal(kept, "gpu-c");
        }
        json_decref(res);
    }
    assert_int_equal(sv_stop(&p), 0);
}

/* The refused nodes a job remembers are bounded (K8S_REFUSED_PER_NODE
 * times --max-nodes): with --max-nodes 4 (the registered cluster's four
 * nodes fill the inventory), 16. Eighteen nodes refused at
 * resourceVersion 1 and shown again at 1 with labels that now fit: the 16
 * remembered keep their first reason, the other two are read again (and
 * refused now for the full inventory). */
static void test_refused_bounded(void **state) {
    (void)state;
    const char *extra[] = {"--max-nodes", "4", NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "k8s-bound", extra), 0);
    put_job(p.port, "ctr", cluster4());
    for (int round = 0; round < 2; round++) {
        json_t *items = json_array();
        for (int i = 1; i <= 18; i++) {
            char name[16];
            snprintf(name, sizeof name, "r%d", i);
            json_t *n = node(name, round ? "gpu" : "m5.large", "a", "4", NULL, NULL);
            json_object_set_new(json_object_get(n, "metadata"), "resourceVersion",
                                json_string("1"));
            json_array_append_new(items, n);
        }
        json_t *res = call(p.port, "filter", kubeflow_pod("ctr", "worker", "1"),
                           json_pack("{s:o}", "items", items), NULL);
        for (int i = 1; i <= 18; i++) {
            char name[16];
            snprintf(name, sizeof name, "r%d", i);
            const char *why = failed_why(res, name);
            assert_non_null(why);
            if (round == 0 || i <= 16) assert_non_null(strstr(why, "instance type \"m5.large\""));
            else assert_non_null(strstr(why, "already knows"));
        }
        json_decref(res);
    }
    assert_int_equal(sv_stop(&p), 0);
}

/* A Kubeflow chief as the training operator labels it (replica-type
 * "chief" for a TFJob's Chief, "master" for a PyTorchJob's Master, index
 * 0, job-role master) is worker 0 of the plan when the job is registered
 * with it in its replicas; the Kubeflow workers are then plan workers 1..W.
 * Plans (the job of the file's head, [cpu, gpu], 2 workers at least):
 *   PyTorchJob {Master: 1, Worker: 1}: workers 2 = the plan's own: master
 *   -> worker 0 (cpu), Worker 0 -> worker 1 (gpu), Worker 1 not planned.
 *   TFJob {Chief: 1, Worker: 2, PS: 2}: 3 workers, the extra one to the
 *   stage with the fewest (a tie: stage 0): workers cpu, cpu, gpu; chief
 *   -> cpu, Worker 0 -> plan worker 1 (cpu), Worker 1 -> plan worker 2 (gpu). */
static json_t *with_role_label(json_t *pod) {
    json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    json_object_set_new(labels, "training.kubeflow.org/job-role", json_string("master"));
    json_object_set_new(labels, "training.kubeflow.org/operator-name",
                        json_string("pytorchjob-controller"));
    return pod;
}

static void put_job_replicas(int port, const char *name, json_t *replicas, int want) {
    sv_resp r;
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", name);
    int st = sv_json_req(port, "PUT", path, json_pack("{s:o, s:o, s:o}", "cluster", cluster4(),
                                                      "job", sv_two_layer_job(), "replicas",
                                                      replicas), NULL, &r);
    if (st != want) fail_msg("PUT %s: %d (wanted %d) %s", path, st, want, r.body);
    sv_resp_free(&r);
}

static void expect_kept(int port, json_t *pod, const char *want) {
    json_t *res = call(port, "filter", pod, node_list(), NULL);
    char kept[256];
    kept_items(res, kept, sizeof kept);
    if (strcmp(kept, want)) fail_msg("kept %s, wanted %s: %s", kept, want,
                                     json_dumps(res, JSON_COMPACT));
    json_decref(res);
}

static void test_kubeflow_chief(void **state) {
    (void)state;
    sv_proc p = start();
    put_job_replicas(p.port, "pt", json_pack("{s:{s:i}, s:{s:i}}", "Master", "replicas", 1,
                                             "Worker", "replicas", 1), 201);
    json_t *ext = state_of(p.port, "pt");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ext, "replicas"),
                                                        "chief")), 1);
    assert_int_equal(json_array_size(json_object_get(ext, "workers")), 2);
    expect_kept(p.port, with_role_label(kubeflow_pod("pt", "master", "0")), "cpu-a,cpu-b");
    expect_kept(p.port, kubeflow_pod("pt", "worker", "0"), "gpu-a,gpu-b");
    /* the chief scores its planned node, plan worker 0's */
    json_t *list = call(p.port, "prioritize", with_role_label(kubeflow_pod("pt", "master", "0")),
                        node_list(), NULL);
    assert_int_equal(score_of(list, spot(ext, "workers", 0, "node")), 10);
    json_decref(list);
    json_decref(ext);
    /* Worker 1 would be plan worker 2: refused, counted without the chief */
    json_t *res = call(p.port, "filter", kubeflow_pod("pt", "worker", "1"), node_list(), NULL);
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_object_get(res, "FailedAndUnresolvableNodes"), "cpu-a")),
                           "worker 1 is not in its plan (the plan has 1 worker tasks besides "
                           "the chief"));
    json_decref(res);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/pt", NULL, NULL, 0, &r), 204);
    sv_resp_free(&r); /* its ps slots back (one per node) */

    put_job_replicas(p.port, "tf", json_pack("{s:{s:i}, s:{s:i}, s:{s:i}}", "Chief", "replicas",
                                             1, "Worker", "replicas", 2, "PS", "replicas", 2),
                     201);
    ext = state_of(p.port, "tf");
    json_t *want = json_pack("{s:i, s:i, s:i}", "worker", 3, "ps", 2, "chief", 1);
    assert_true(json_equal(json_object_get(ext, "replicas"), want));
    json_decref(want);
    assert_string_equal(spot(ext, "workers", 0, "type"), "cpu");
    assert_string_equal(spot(ext, "workers", 1, "type"), "cpu");
    assert_string_equal(spot(ext, "workers", 2, "type"), "gpu");
    json_decref(ext);
    expect_kept(p.port, kubeflow_pod("tf", "chief", "0"), "cpu-a,cpu-b");
    expect_kept(p.port, kubeflow_pod("tf", "worker", "0"), "cpu-a,cpu-b");
    expect_kept(p.port, kubeflow_pod("tf", "worker", "1"), "gpu-a,gpu-b");
    expect_kept(p.port, kubeflow_pod("tf", "ps", "1"), "cpu-a,cpu-b,gpu-a,gpu-b");
    /* a second chief index is refused */
    res = call(p.port, "filter", kubeflow_pod("tf", "chief", "1"), node_list(), NULL);
    assert_int_equal(json_object_size(json_object_get(res, "FailedAndUnresolvableNodes")), 6);
    json_decref(res);
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/tf", NULL, NULL, 0, &r), 204);
    sv_resp_free(&r);

    /* A chief of a job registered without one: refused with the fix. */
    put_job(p.port, "plain", cluster4());
    res = call(p.port, "filter", kubeflow_pod("plain", "chief", "0"), node_list(), NULL);
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_object_get(res, "FailedAndUnresolvableNodes"), "gpu-a")),
                           "has a chief pod but was registered without one"));
    json_decref(res);
    /* Two chiefs, or a chief count other than 1, do not register. */
    put_job_replicas(p.port, "two", json_pack("{s:{s:i}, s:{s:i}}", "Chief", "replicas", 2,
                                              "Worker", "replicas", 2), 422);
    put_job_replicas(p.port, "both", json_pack("{s:i, s:i, s:i}", "Chief", 1, "Master", 1,
                                               "Worker", 2), 422);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "/k8s/filter 200", "job default/tf chief 0 -> cpu-",
                                  "plan worker 0", NULL), 1);
}

/* One daemon, two listeners: the token listener registers jobs (/v1), the
 * extender listener (--extender-listen) answers kube-scheduler's verbs
 * without a token from the same registry, and refuses every /v1 path (and
 * /metrics) even with the token. No port-forward to a second registry. */
static void test_extender_listener(void **state) {
    (void)state;
    char tok[1100];
    snprintf(tok, sizeof tok, "%s/k8s-token-%d", sv_tmp(), (int)getpid());
    assert_int_equal(sv_write_file(tok, "s3cret\n"), 0);
    const char *args[] = {"--token-file", tok, "--extender-listen", "127.0.0.1:0", NULL};
    sv_proc p;
    assert_int_equal(sv_start(&p, "k8s-listeners", args), 0);
    assert_true(p.ext_port > 0 && p.ext_port != p.port);
    const char *auth = "Authorization: Bearer s3cret\r\n";
    sv_resp r;
    json_t *doc = json_pack("{s:o, s:o}", "cluster", cluster4(), "job", sv_two_layer_job());
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/team-a/ctr", json_incref(doc), NULL,
                                 &r), 401);
    sv_resp_free(&r);
    assert_int_equal(sv_json_req(p.port, "PUT", "/v1/jobs/team-a/ctr", doc, auth, &r), 201);
    sv_resp_free(&r);

    /* kube-scheduler's call, no token, on the extender listener: the job
     * registered on the other listener places worker 1 on the gpu nodes. */
    json_t *pod = kubeflow_pod("ctr", "worker", "1");
    json_object_set_new(json_object_get(pod, "metadata"), "namespace", json_string("team-a"));
    json_t *args_j = json_pack("{s:o, s:o, s:n}", "Pod", pod, "Nodes", node_list(), "NodeNames");
    assert_int_equal(sv_json_req(p.ext_port, "POST", "/k8s/filter", json_incref(args_j), NULL,
                                 &r), 200);
    json_t *res = sv_body_json(&r);
    sv_resp_free(&r);
    char kept[256];
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "gpu-a,gpu-b");
    json_decref(res);
    assert_int_equal(sv_json_req(p.ext_port, "POST", "/k8s/prioritize", json_incref(args_j),
                                 NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"Score\":10"));
    sv_resp_free(&r);
    /* the main listener still wants the token for the extender's verbs */
    assert_int_equal(sv_json_req(p.port, "POST", "/k8s/filter", json_incref(args_j), NULL, &r),
                     401);
    sv_resp_free(&r);

    /* The extender listener refuses /v1 and /metrics, token or not. */
    static const struct {
        const char *method, *path;
    } refused[] = {{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/team-a/ctr"},
                   {"DELETE", "/v1/jobs/team-a/ctr"}, {"PUT", "/v1/jobs/team-a/evil"},
                   {"POST", "/v1/place"}, {"GET", "/v1/cluster"}, {"GET", "/metrics"},
                   {"GET", "/nowhere"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        for (int with = 0; with < 2; with++) {
            int st = sv_http(p.ext_port, refused[i].method, refused[i].path, with ? auth : NULL,
                             "{}", 2, &r);
            if (st != 403 || !strstr(r.body, "the extender listener serves only"))
                fail_msg("%s %s on the extender listener (%s token): %d %s", refused[i].method,
                         refused[i].path, with ? "with" : "without", st, r.body);
            sv_resp_free(&r);
        }
    }
    assert_int_equal(sv_http(p.ext_port, "GET", "/healthz", NULL, NULL, 0, &r), 200);
    sv_resp_free(&r);
    /* the bind verb is the extender's too (no --kube-api here: it says so) */
    const char *bind = "{\"PodName\": \"ctr-worker-1\", \"PodNamespace\": \"team-a\", "
                       "\"PodUID\": \"u1\", \"Node\": \"gpu-a\"}";
    assert_int_equal(sv_http(p.ext_port, "POST", "/k8s/bind", NULL, bind, strlen(bind), &r), 200);
    assert_non_null(strstr(r.body, "started without --kube-api"));
    sv_resp_free(&r);
    /* the refused DELETE deleted nothing; the main listener's does */
    assert_int_equal(sv_http(p.port, "GET", "/v1/jobs/team-a/ctr", auth, NULL, 0, &r), 200);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/team-a/ctr", auth, NULL, 0, &r), 204);
    sv_resp_free(&r);
    /* and the extender listener follows: the pod's job is gone, it passes */
    assert_int_equal(sv_json_req(p.ext_port, "POST", "/k8s/filter", args_j, NULL, &r), 200);
    res = sv_body_json(&r);
    sv_resp_free(&r);
    kept_items(res, kept, sizeof kept);
    assert_string_equal(kept, "cpu-a,cpu-b,gpu-a,gpu-b,odd-1,bare-1");
    json_decref(res);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "extender verbs on 127.0.0.1:", NULL), 1);
    remove(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeflow_nodes_form),
        cmocka_unit_test(test_filter_maps_text),
        cmocka_unit_test(test_volcano),
        cmocka_unit_test(test_node_names_form),
        cmocka_unit_test(test_pass_through),
        cmocka_unit_test(test_node_facts_and_failures),
        cmocka_unit_test(test_body_limits),
        cmocka_unit_test(test_catalogue_types),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_nodes_passed_back),
        cmocka_unit_test(test_refused_by_version),
        cmocka_unit_test(test_refused_bounded),
        cmocka_unit_test(test_extender_listener),
        cmocka_unit_test(test_kubeflow_chief),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
