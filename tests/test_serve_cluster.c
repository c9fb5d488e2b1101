/* test_serve_cluster.c -- the daemon's cluster and occupancy (/v1/cluster).
 *
 * Black-box over real sockets against `strata serve --state FILE`: a
 * two-type cluster of four one-unit nodes (cpu-a, cpu-b in zones a and b,
 * gpu-a, gpu-b likewise, one ps slot each) is put; a job of two layers
 * (emb on cpu, mlp on gpu: one worker and one ps per stage, figures of
 * test_serve_k8s.c's job) committed through /v1/place takes one unit and
 * one ps slot on one cpu and one gpu node; the next job on the free units
 * must take the other two; a third finds nothing (409). A delete and a
 * complete release; a restart on the same file gives the same GET byte for
 * byte; a registered extender job takes units from the same occupancy; a
 * bad PUT names the field; two commits racing for the last units give one
 * 200 and one 409. `strata serve --cluster FILE` puts a YAML cluster file's
 * cluster at start (no PUT), leaves a state file holding that very
 * cluster untouched, replaces a different one keeping the occupancy, and
 * refuses to start on a bad file, naming file:line:col and the key.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/serve_client.h"

static char state_path[1024];

static int setup(void **st) {
    (void)st;
    mkdir(sv_tmp(), 0777);
    snprintf(state_path, sizeof state_path, "%s/serve-cluster-%d.db", sv_tmp(), (int)getpid());
    sv_remove_db(state_path);
    return 0;
}

/* n_zones 2: cpu-a, gpu-a in a and cpu-b, gpu-b in b; n_zones 1: only the
 * two nodes of zone a (room for exactly one job). */
static json_t *cluster(int n_zones) {
    json_t *nodes = json_array();
    static const char *const names[] = {"cpu-a", "gpu-a", "cpu-b", "gpu-b"};
    for (int i = 0; i < 2 * n_zones; i++)
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "name",
                                               names[i], "type", i % 2 ? "gpu" : "cpu", "units",
                                               1, "ps_slots", 1, "zone", i < 2 ? "a" : "b", "bw",
                                               "1GB/s"));
    return json_pack("{s:o, s:[{s:s}, {s:s}], s:o}", "types", sv_two_types(), "zones", "name", "a",
                     "name", "b", "nodes", nodes);
}

static sv_proc start(const char *max_nodes) {
    sv_proc p;
    const char *extra[] = {"--state", state_path, "--threads", "2",
                           max_nodes ? "--max-cluster-nodes" : NULL, max_nodes, NULL};
    assert_int_equal(sv_start(&p, "cluster", extra), 0);
    return p;
}

static void put_cluster(int port, json_t *cl) {
    sv_resp r;
    int st = sv_json_req(port, "PUT", "/v1/cluster", json_pack("{s:o}", "cluster", cl), NULL, &r);
    if (st != 200) fail_msg("PUT /v1/cluster: %d %s", st, r.body);
    sv_resp_free(&r);
}

/* POST /v1/place on the free units, committing for job (NULL: no commit);
 * returns the status, the answer in *out (caller owns it). */
static int place_free(int port, const char *jobname, json_t **out) {
    json_t *body = json_pack("{s:o, s:{s:s, s:s, s:s}}", "job", sv_two_layer_job(), "options",
                             "on", "free", "plan_method", "greedy", "placement", "zone");
    if (jobname) json_object_set_new(body, "commit", json_pack("{s:s}", "job", jobname));
    sv_resp r;
    int st = sv_json_req(port, "POST", "/v1/place", body, NULL, &r);
    *out = sv_body_json(&r);
    sv_resp_free(&r);
    return st;
}

static json_t *get_cluster(int port, char **text) {
    sv_resp r;
    assert_int_equal(sv_http(port, "GET", "/v1/cluster", NULL, NULL, 0, &r), 200);
    json_t *o = sv_body_json(&r);
    if (text) *text = strdup(r.body);
    sv_resp_free(&r);
    assert_non_null(o);
    return o;
}

static json_int_t at(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    assert_true(json_is_integer(x));
    return json_integer_value(x);
}

static const json_t *node_of(const json_t *occ, const char *name) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(occ, "nodes"), i, n)
        if (!strcmp(json_string_value(json_object_get(n, "name")), name)) return n;
    fail_msg("no node %s in GET /v1/cluster", name);
    return NULL;
}

/* The nodes a /v1/place answer put its tasks on, as "n1,n2,..." in task order. */
static void nodes_of(const json_t *ans, char *buf, size_t len) {
    buf[0] = '\0';
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(ans, "placement"), i, t) {
        size_t k = strlen(buf);
        snprintf(buf + k, len - k, "%s%s", k ? "," : "", json_string_value(json_object_get(t, "node")));
    }
}

/* Checks one node's figures. */
static void expect_node(const json_t *occ, const char *name, int taken, int ps_taken,
                        const char *holder) {
    const json_t *n = node_of(occ, name);
    assert_int_equal(at(n, "units", NULL), 1);
    assert_int_equal(at(n, "taken", NULL), taken);
    assert_int_equal(at(n, "free", NULL), 1 - taken);
    assert_int_equal(at(n, "ps_taken", NULL), ps_taken);
    const json_t *h = json_object_get(n, "holders");
    assert_int_equal(json_array_size(h), holder ? 2 : 0); /* a worker and a ps */
    if (holder) {
        assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "job")), holder);
        assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "role")),
                            "worker");
        assert_string_equal(json_string_value(json_object_get(json_array_get(h, 1), "role")), "ps");
    }
}

static void test_commit_release_restart(void **st) {
    (void)st;
    sv_proc p = start(NULL);
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/v1/cluster", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    put_cluster(p.port, cluster(2));
    json_t *occ = get_cluster(p.port, NULL);
    assert_int_equal(at(occ, "total", "units"), 4);
    assert_int_equal(at(occ, "total", "taken"), 0);
    json_decref(occ);

    /* A: one cpu worker + ps, one gpu worker + ps; the zone placer keeps it in one zone */
    json_t *a = NULL;
    assert_int_equal(place_free(p.port, "team/a", &a), 200);
    assert_true(json_is_true(json_object_get(a, "feasible")));
    assert_int_equal(at(a, "committed", "tasks"), 4);
    char an[256];
    nodes_of(a, an, sizeof an);
    int in_a = !strcmp(an, "cpu-a,cpu-a,gpu-a,gpu-a");
    if (!in_a && strcmp(an, "cpu-b,cpu-b,gpu-b,gpu-b")) fail_msg("A placed on %s", an);
    const char *cpu_a = in_a ? "cpu-a" : "cpu-b", *gpu_a = in_a ? "gpu-a" : "gpu-b";
    const char *cpu_o = in_a ? "cpu-b" : "cpu-a", *gpu_o = in_a ? "gpu-b" : "gpu-a";
    json_decref(a);
    occ = get_cluster(p.port, NULL);
    expect_node(occ, cpu_a, 1, 1, "team/a");
    expect_node(occ, gpu_a, 1, 1, "team/a");
    expect_node(occ, cpu_o, 0, 0, NULL);
    assert_int_equal(at(occ, "total", "taken"), 2);
    assert_int_equal(at(occ, "total", "free"), 2);
    assert_int_equal(at(json_object_get(occ, "types"), "cpu", "taken"), 1);
    assert_int_equal(at(json_object_get(occ, "types"), "gpu", "free"), 1);
    assert_int_equal(at(json_object_get(occ, "zones"), in_a ? "a" : "b", "free"), 0);
    assert_int_equal(at(json_object_get(occ, "zones"), in_a ? "b" : "a", "free"), 2);
    json_decref(occ);

    /* the same job again: it already holds units */
    json_t *again = NULL;
    assert_int_equal(place_free(p.port, "team/a", &again), 409);
    assert_non_null(strstr(json_string_value(json_object_get(again, "error")), "already"));
    json_decref(again);

    /* B, decided without commit, then committed: the other two nodes */
    json_t *b = NULL;
    char bn[256];
    assert_int_equal(place_free(p.port, NULL, &b), 200);
    nodes_of(b, bn, sizeof bn);
    assert_null(json_object_get(b, "committed"));
    json_decref(b);
    assert_int_equal(place_free(p.port, "team/b", &b), 200);
    char want[256];
    snprintf(want, sizeof want, "%s,%s,%s,%s", cpu_o, cpu_o, gpu_o, gpu_o);
    nodes_of(b, bn, sizeof bn);
    assert_string_equal(bn, want);
    json_decref(b);

    /* C: nothing is free */
    json_t *c = NULL;
    assert_int_equal(place_free(p.port, "team/c", &c), 409);
    assert_non_null(strstr(json_string_value(json_object_get(c, "error")), "does not fit"));
    json_decref(c);

    /* A is deleted, B completes: all free again, then A' takes units */
    assert_int_equal(sv_http(p.port, "DELETE", "/v1/jobs/team/a", NULL, NULL, 0, &r), 204);
    sv_resp_free(&r);
    occ = get_cluster(p.port, NULL);
    expect_node(occ, cpu_a, 0, 0, NULL);
    expect_node(occ, cpu_o, 1, 1, "team/b");
    json_decref(occ);
    assert_int_equal(sv_http(p.port, "POST", "/v1/jobs/team/b/complete", NULL, NULL, 0, &r), 204);
    sv_resp_free(&r);
    assert_int_equal(sv_http(p.port, "POST", "/v1/jobs/team/b/complete", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    occ = get_cluster(p.port, NULL);
    assert_int_equal(at(occ, "total", "taken"), 0);
    json_decref(occ);

    /* a registered extender job takes from the same occupancy */
    int code = sv_json_req(p.port, "PUT", "/v1/jobs/team/ext",
                           json_pack("{s:o, s:o, s:{s:s, s:s}}", "cluster", cluster(2), "job",
                                     sv_two_layer_job(), "options", "plan_method", "greedy",
                                     "placement", "zone"),
                           NULL, &r);
    if (code != 201) fail_msg("PUT /v1/jobs/team/ext: %d %s", code, r.body);
    sv_resp_free(&r);
    occ = get_cluster(p.port, NULL);
    assert_int_equal(at(occ, "total", "taken"), 2);
    json_t *jobs = json_object_get(occ, "jobs");
    assert_int_equal(json_array_size(jobs), 1);
    assert_string_equal(json_string_value(json_array_get(jobs, 0)), "team/ext");
    json_decref(occ);
    assert_int_equal(place_free(p.port, "team/d", &c), 200);
    json_decref(c);
    assert_int_equal(place_free(p.port, "team/e", &c), 409);
    json_decref(c);

    /* a restart on the same file shows the same cluster, byte for byte */
    char *before = NULL, *after = NULL;
    json_decref(get_cluster(p.port, &before));
    assert_int_equal(sv_stop(&p), 0);
    p = start(NULL);
    json_decref(get_cluster(p.port, &after));
    assert_string_equal(after, before);
    free(before);
    free(after);
    assert_int_equal(sv_stop(&p), 0);
}

static void expect_bad_put(int port, json_t *body, int status, const char *needle) {
    sv_resp r;
    int st = sv_json_req(port, "PUT", "/v1/cluster", body, NULL, &r);
    if (st != status || !strstr(r.body, needle))
        fail_msg("PUT /v1/cluster: %d %s (wanted %d naming %s)", st, r.body, status, needle);
    sv_resp_free(&r);
}

static void test_bad_put(void **st) {
    (void)st;
    sv_proc p = start("3");
    json_t *cl = cluster(1);
    json_object_set_new(json_array_get(json_object_get(cl, "nodes"), 1), "units",
                        json_string("many"));
    expect_bad_put(p.port, json_pack("{s:o}", "cluster", cl), 400, "cluster.nodes[1].units");
    cl = cluster(1);
    json_object_set_new(json_array_get(json_object_get(cl, "nodes"), 1), "name",
                        json_string("cpu-a"));
    expect_bad_put(p.port, json_pack("{s:o}", "cluster", cl), 400, "cluster.nodes[1].name");
    expect_bad_put(p.port, json_pack("{s:o}", "cluster", cluster(2)), 413,
                   "--max-cluster-nodes");
    expect_bad_put(p.port, json_pack("{s:{s:o}}", "cluster", "types", sv_two_types()), 400,
                   "cluster.nodes");
    /* nothing was kept */
    sv_resp r;
    assert_int_equal(sv_http(p.port, "GET", "/v1/cluster", NULL, NULL, 0, &r), 404);
    sv_resp_free(&r);
    /* a commit names a bad job key, options.on a bad value */
    json_t *body = json_pack("{s:o, s:{s:s}}", "job", sv_two_layer_job(), "options", "on", "spare");
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place", body, NULL, &r), 400);
    assert_non_null(strstr(r.body, "options.on"));
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

typedef struct {
    int port;
    const char *job;
    int status;
    char error[512];
} racer;

static void *race(void *arg) {
    racer *x = arg;
    json_t *ans = NULL;
    x->status = place_free(x->port, x->job, &ans);
    const char *e = json_string_value(json_object_get(ans, "error"));
    snprintf(x->error, sizeof x->error, "%s", e ? e : "");
    json_decref(ans);
    return NULL;
}

static void test_racing_commits(void **st) {
    (void)st;
    sv_proc p = start(NULL);
    put_cluster(p.port, cluster(1)); /* room for one job */
    racer x[2] = {{p.port, "race/x", 0, ""}, {p.port, "race/y", 0, ""}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, race, &x[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    int won = x[0].status == 200 ? 0 : 1;
    if (x[won].status != 200 || x[1 - won].status != 409)
        fail_msg("racing commits: %d (%s) and %d (%s)", x[0].status, x[0].error, x[1].status,
                 x[1].error);
    assert_non_null(strstr(x[1 - won].error, "does not fit on the free units"));
    json_t *occ = get_cluster(p.port, NULL);
    expect_node(occ, "cpu-a", 1, 1, x[won].job);
    expect_node(occ, "gpu-a", 1, 1, x[won].job);
    json_decref(occ);
    assert_int_equal(sv_stop(&p), 0);
}

/* The four nodes of cluster(2) as a cluster file (what `strata import-nodes`
 * writes: cluster: only, units with their units). zone_a_only: the two
 * nodes of zone a, with 2 units each. */
static void write_cluster_yaml(const char *path, int zone_a_only, const char *bad_units) {
    char text[2048];
    snprintf(text, sizeof text,
             "cluster:\n"
             "  types:\n"
             "    - {name: cpu, kind: cpu, flops: 1TFLOPS, io_bw: 10GB/s, net_bw: 1GB/s, "
             "mem: 192GB, price: 1.0}\n"
             "    - {name: gpu, kind: gpu, flops: 100TFLOPS, io_bw: 1GB/s, net_bw: 1GB/s, "
             "mem: 16GB, price: 3.0}\n"
             "  zones: [{name: a}, {name: b}]\n"
             "  inter_latency: 2ms\n"
             "  nodes:\n"
             "    - {name: cpu-a, type: cpu, units: %s, ps_slots: 1, zone: a, bw: 1GB/s}\n"
             "    - {name: gpu-a, type: gpu, units: %d, ps_slots: 1, zone: a, bw: 1GB/s}\n"
             "%s",
             bad_units ? bad_units : zone_a_only ? "2" : "1", zone_a_only ? 2 : 1,
             zone_a_only ? ""
                         : "    - {name: cpu-b, type: cpu, units: 1, ps_slots: 1, zone: b, "
                           "bw: 1GB/s}\n"
                           "    - {name: gpu-b, type: gpu, units: 1, ps_slots: 1, zone: b, "
                           "bw: 1GB/s}\n");
    assert_int_equal(sv_write_file(path, text), 0);
}

static sv_proc start_with(const char *yaml) {
    sv_proc p;
    const char *extra[] = {"--state", state_path, "--cluster", yaml, NULL};
    assert_int_equal(sv_start(&p, "cluster-file", extra), 0);
    return p;
}

static void test_cluster_file(void **st) {
    (void)st;
    char yaml[1100], yaml2[1100], bad[1100];
    snprintf(yaml, sizeof yaml, "%s/serve-cluster-%d.yaml", sv_tmp(), (int)getpid());
    snprintf(yaml2, sizeof yaml2, "%s/serve-cluster-%d-a.yaml", sv_tmp(), (int)getpid());
    snprintf(bad, sizeof bad, "%s/serve-cluster-%d-bad.yaml", sv_tmp(), (int)getpid());
    write_cluster_yaml(yaml, 0, NULL);
    write_cluster_yaml(yaml2, 1, NULL);
    write_cluster_yaml(bad, 0, "lots");

    /* the file's cluster is the daemon's cluster from the start: no PUT */
    sv_proc p = start_with(yaml);
    char *first = NULL;
    json_t *occ = get_cluster(p.port, &first);
    assert_int_equal(at(occ, "total", "units"), 4);
    expect_node(occ, "gpu-b", 0, 0, NULL);
    const json_t *cl = json_object_get(occ, "cluster");
    assert_true(json_real_value(json_object_get(cl, "inter_latency")) == 0.002);
    const json_t *n0 = json_array_get(json_object_get(cl, "nodes"), 0);
    assert_true(json_real_value(json_object_get(n0, "bw")) == 1e9);
    assert_string_equal(json_string_value(json_object_get(n0, "zone")), "a");
    json_decref(occ);
    json_t *a = NULL;
    assert_int_equal(place_free(p.port, "team/a", &a), 200);
    char an[256];
    nodes_of(a, an, sizeof an);
    json_decref(a);
    char *held = NULL;
    json_decref(get_cluster(p.port, &held));
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "--cluster", "4 nodes put (the state file held no "
                                  "cluster)", NULL), 1);

    /* restarted with the same file on the same state: nothing changes */
    p = start_with(yaml);
    char *again = NULL;
    json_decref(get_cluster(p.port, &again));
    assert_string_equal(again, held);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "the cluster the state file already holds", NULL), 1);

    /* another file replaces the cluster; the occupancy stays */
    p = start_with(yaml2);
    occ = get_cluster(p.port, NULL);
    assert_int_equal(json_array_size(json_object_get(occ, "nodes")), 2);
    assert_int_equal(at(occ, "total", "units"), 4);
    int in_a = !strcmp(an, "cpu-a,cpu-a,gpu-a,gpu-a");
    assert_int_equal(at(occ, "total", "taken"), in_a ? 2 : 0);
    assert_int_equal(at(node_of(occ, "gpu-a"), "units", NULL), 2);
    json_decref(occ);
    assert_int_equal(sv_stop(&p), 0);
    assert_int_equal(sv_log_count(&p, "2 nodes replace the state file's cluster of 4 nodes",
                                  in_a ? "0 of them on nodes the file no longer lists"
                                       : "2 of them on nodes the file no longer lists",
                                  NULL), 1);

    /* a bad file stops the start, naming file:line:col and the key */
    sv_proc q;
    const char *extra[] = {"--state", state_path, "--cluster", bad, NULL};
    assert_int_equal(sv_start(&q, "cluster-bad", extra), -1);
    char needle[1200];
    snprintf(needle, sizeof needle, "--cluster: %s:8:", bad);
    assert_int_equal(sv_log_count(&q, needle, "cluster.nodes[0].units", NULL), 1);
    free(first);
    free(held);
    free(again);
    remove(yaml);
    remove(yaml2);
    remove(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_commit_release_restart, setup),
        cmocka_unit_test_setup(test_bad_put, setup),
        cmocka_unit_test_setup(test_racing_commits, setup),
        cmocka_unit_test_setup(test_cluster_file, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
