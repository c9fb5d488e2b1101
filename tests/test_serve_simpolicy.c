/* test_serve_simpolicy.c -- the shared-cluster policy in the daemon
 * (`strata serve --sim-policy CKPT`, service/clpolicy.h).
 *
 * Black-box over real sockets against `strata serve --state FILE
 * --sim-policy checkpoints/sim-philly.h5`: a cluster of eight four-unit
 * nodes (cpu-0..3, gpu-0..3, one zone) is put; two jobs committed through
 * /v1/place (the greedy solver) take units; then a job posted with
 * "plan_method": "cluster-policy" on the free units gets the decision the
 * same policy makes in-process (agent/spolicy.h) on a view built here by
 * hand: the configured counts, the free counts read from GET /v1/cluster,
 * the job as a queue of one (waiting 0, no deadline), two running jobs.
 * The plan (assignment, units per stage, target), the candidate count and
 * the probability wait held must match; its commit takes the units it
 * names. A hand-set network that waits gives "wait" once a job runs (and
 * the same in-process), and its commit is 409 taking nothing. A damaged checkpoint (the real one cut in half, and a text file)
 * stops the daemon at start with exit 2 and a message naming the file; the
 * method without the checkpoint, or without options.on "free", is refused
 * naming why.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent/spolicy.h"
#include "service/runjson.h"
#include "solvers/solve.h"
#include "tests/harness.h"
#include "tests/serve_client.h"

static char state_path[1024], ckpt_path[1024];

static int setup(void **st) {
    (void)st;
    mkdir(sv_tmp(), 0777);
    snprintf(state_path, sizeof state_path, "%s/serve-simpol-%d.db", sv_tmp(), (int)getpid());
    sv_remove_db(state_path);
    const char *src = getenv("STRATA_SRC");
    snprintf(ckpt_path, sizeof ckpt_path, "%s/checkpoints/sim-philly.h5", src ? src : ".");
    return 0;
}

/* Eight nodes of four units, cpu-i and gpu-i, one ps slot a unit. */
static json_t *cluster_nodes(void) {
    json_t *nodes = json_array();
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s-%d", i % 2 ? "gpu" : "cpu", i / 2);
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "name", name,
                                               "type", i % 2 ? "gpu" : "cpu", "units", 4,
                                               "ps_slots", 4, "zone", "a", "bw", "1GB/s"));
    }
    return nodes;
}

/* PUTs the two types and cluster_nodes() as the daemon's /v1/cluster. */
static void put_cluster(int port) {
    sv_resp r;
    json_t *cl = json_pack("{s:{s:o, s:[{s:s}], s:o}}", "cluster", "types", sv_two_types(),
                           "zones", "name", "a", "nodes", cluster_nodes());
    assert_int_equal(sv_json_req(port, "PUT", "/v1/cluster", cl, NULL, &r), 200);
    sv_resp_free(&r);
}

/* A two-layer job both types can hold (emb: 10 GB), so the policy has
 * exact and one-type candidates on either type. */
static json_t *job(double r) {
    json_t *j = sv_two_layer_job();
    json_object_set_new(json_array_get(json_object_get(j, "layers"), 0), "mem",
                        json_string("10GB"));
    json_object_set_new(j, "min_throughput", json_real(r));
    return j;
}

static int place(int port, const char *method, double r, const char *commit, json_t **out) {
    json_t *body = json_pack("{s:o, s:{s:s, s:s}}", "job", job(r), "options", "on", "free",
                             "plan_method", method);
    if (commit) json_object_set_new(body, "commit", json_pack("{s:s}", "job", commit));
    sv_resp r2;
    int st = sv_json_req(port, "POST", "/v1/place", body, NULL, &r2);
    *out = sv_body_json(&r2);
    if (!*out) *out = json_pack("{s:s}", "raw", r2.body ? r2.body : "");
    sv_resp_free(&r2);
    return st;
}

/* Free units per type from GET /v1/cluster (node names say the type). */
static void free_units(int port, int *cpu, int *gpu) {
    sv_resp r;
    assert_int_equal(sv_http(port, "GET", "/v1/cluster", NULL, NULL, 0, &r), 200);
    json_t *o = sv_body_json(&r);
    sv_resp_free(&r);
    assert_non_null(o);
    *cpu = *gpu = 0;
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(o, "nodes"), i, n) {
        int f = (int)json_integer_value(json_object_get(n, "free"));
        if (!strncmp(json_string_value(json_object_get(n, "name")), "cpu", 3)) *cpu += f;
        else *gpu += f;
    }
    json_decref(o);
}

/* A cluster of counts only (the view's full and free clusters). */
static cfg_run *load_counts(int cpu, int gpu, double r) {
    json_t *types = sv_two_types();
    json_object_set_new(json_array_get(types, 0), "count", json_integer(cpu));
    json_object_set_new(json_array_get(types, 1), "count", json_integer(gpu));
    json_t *cl = json_pack("{s:o}", "types", types), *jb = job(r);
    json_object_set_new(jb, "name", json_string("online"));
    rj_limits lim = {RJ_DEFAULT_MAX_LAYERS, RJ_DEFAULT_MAX_NODES, RJ_DEFAULT_MAX_TYPES};
    cfg_run *run = NULL;
    char err[512];
    if (rj_load_run(cl, jb, NULL, &lim, &run, err, sizeof err)) fail_msg("load: %s", err);
    json_decref(cl);
    json_decref(jb);
    return run;
}

/* The in-process decision: the view by hand, agent/spolicy's candidates,
 * the network, spol_greedy. */
typedef struct {
    int n, wait;
    double p_wait, target;
    int assign[2];
    const char *kind;
} local_dec;

static local_dec decide_here(int free_cpu, int free_gpu, int running, double r) {
    cfg_run *full = load_counts(16, 16, r), *fr = load_counts(free_cpu, free_gpu, r);
    const model_job *jb = &full->jobs[0];
    char err[512];
    spol_net *net = spol_load(ckpt_path, NULL, err, sizeof err);
    if (!net) fail_msg("%s", err);
    solve_opts so;
    solve_opts_default(&so);
    solve_result *res = solve_result_create(2);
    model_plan *empty = model_plan_create(2);
    int ee[2], ef[2];
    assert_int_equal(solve_run(jb, &full->cluster, &so, res), 0);
    memcpy(ee, res->assign, sizeof ee);
    model_eval(jb, &full->cluster, ee, empty);
    long demand = 0;
    int need[2] = {0, 0};
    for (int k = 0; k < empty->n_stages; k++) {
        need[empty->stages[k].type] += empty->stages[k].units;
        demand += empty->stages[k].units;
    }
    const int *exact_free = NULL;
    if (need[0] <= free_cpu && need[1] <= free_gpu) {
        exact_free = ee;
    } else if (solve_run(jb, &fr->cluster, &so, res) == 0) {
        memcpy(ef, res->assign, sizeof ef);
        exact_free = ef;
    }
    spol_job_view jv = {jb, 0, 0, ee, empty, exact_free, 0};
    spol_view v = {&full->cluster, &fr->cluster, 0, 1, demand, running};
    spol_cands *cs = spol_cands_create(2, 2);
    local_dec d;
    memset(&d, 0, sizeof d);
    d.n = spol_candidates_of(&v, &jv, 1, cs, err, sizeof err);
    assert_true(d.n > 0);
    float x[64 * SPOL_FEATURES], logits[64], probs[64], logp[64];
    assert_true(d.n <= 64);
    float *work = malloc(sizeof(float) * spol_work_size(d.n, spol_net_hidden(net)));
    for (int i = 0; i < d.n; i++) memcpy(x + i * SPOL_FEATURES, cs->c[i].x, sizeof cs->c[i].x);
    spol_forward(logits, work, net, x, d.n);
    int a = spol_greedy(logits, probs, logp, cs, d.n);
    for (int i = 0; i < d.n; i++)
        if (cs->c[i].job < 0) d.p_wait = probs[i];
    d.wait = cs->c[a].job < 0;
    d.target = cs->c[a].target;
    static const char *const kinds[] = {"wait", "exact-free", "exact-empty", "one-type"};
    d.kind = kinds[cs->c[a].kind];
    if (!d.wait) memcpy(d.assign, cs->c[a].assign, sizeof d.assign);
    free(work);
    spol_cands_free(cs);
    spol_net_free(net);
    model_plan_free(empty);
    solve_result_free(res);
    cfg_free(full);
    cfg_free(fr);
    return d;
}

static double num(const json_t *o, const char *k) {
    const json_t *x = json_object_get(o, k);
    if (!json_is_number(x)) fail_msg("%s: not a number", k);
    return json_number_value(x);
}

/* Posts a cluster-policy decision for a job of target r and checks it
 * against the in-process one; returns the answer (caller owns it). */
static json_t *check_same(int port, double r, int running) {
    int fc, fg;
    free_units(port, &fc, &fg);
    json_t *ans;
    int st = place(port, "cluster-policy", r, NULL, &ans);
    if (st != 200) fail_msg("cluster-policy: %d %s", st, json_dumps(ans, 0));
    local_dec here = decide_here(fc, fg, running, r);
    const json_t *cp = json_object_get(ans, "cluster_policy");
    assert_non_null(cp);
    assert_int_equal(json_integer_value(json_object_get(cp, "running_jobs")), running);
    assert_int_equal(json_integer_value(json_object_get(cp, "candidates")), here.n);
    assert_true(fabs(num(cp, "p_wait") - here.p_wait) < 1e-6);
    const char *decision = json_string_value(json_object_get(ans, "decision"));
    assert_non_null(decision);
    print_message("R %.0f, %d running: %s (%s), %d candidates, p_wait %.4f\n", r, running,
                  decision, here.wait ? "wait" : here.kind, here.n, here.p_wait);
    if (here.wait) {
        assert_string_equal(decision, "wait");
        assert_true(json_is_null(json_object_get(ans, "plan")));
        assert_non_null(strstr(json_string_value(json_object_get(ans, "reason")), "waits"));
        return ans;
    }
    assert_string_equal(decision, "start");
    assert_string_equal(json_string_value(json_object_get(cp, "kind")), here.kind);
    assert_true(fabs(num(cp, "target") - here.target) < 1e-9);
    /* the plan: the same assignment, scored on the free units at the target */
    const json_t *plan = json_object_get(ans, "plan");
    const json_t *as = json_object_get(plan, "assignment");
    for (int l = 0; l < 2; l++)
        assert_string_equal(json_string_value(json_array_get(as, (size_t)l)),
                            here.assign[l] ? "gpu" : "cpu");
    cfg_run *fr = load_counts(fc, fg, here.target);
    model_plan *p = model_plan_create(2);
    model_eval(&fr->jobs[0], &fr->cluster, here.assign, p);
    const json_t *stages = json_object_get(plan, "stages");
    assert_int_equal(json_array_size(stages), p->n_stages);
    for (int k = 0; k < p->n_stages; k++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(stages, (size_t)k),
                                                            "units")),
                         p->stages[k].units);
    assert_true(fabs(num(ans, "throughput") - p->throughput) <= 1e-9 * p->throughput);
    assert_true(json_is_true(json_object_get(ans, "feasible")));
    assert_true(json_array_size(json_object_get(ans, "placement")) > 0);
    model_plan_free(p);
    cfg_free(fr);
    return ans;
}

static void test_decides_as_in_process(void **state) {
    (void)state;
    sv_proc p;
    const char *extra[] = {"--state", state_path, "--threads", "2", "--sim-policy", ckpt_path, NULL};
    assert_int_equal(sv_start(&p, "simpol", extra), 0);
    put_cluster(p.port);
    sv_resp r;
    /* nothing runs: the idle cluster never waits */
    json_decref(check_same(p.port, 100, 0));
    /* two jobs take units (greedy), then the policy decides on what is left */
    json_t *a;
    assert_int_equal(place(p.port, "greedy", 400, "default/a", &a), 200);
    json_decref(a);
    assert_int_equal(place(p.port, "greedy", 400, "default/b", &a), 200);
    json_decref(a);
    json_decref(check_same(p.port, 100, 2));
    json_decref(check_same(p.port, 300, 2));
    /* a commit with the policy takes the units its plan names */
    int fc0, fg0, fc1, fg1;
    free_units(p.port, &fc0, &fg0);
    json_t *ans;
    int st = place(p.port, "cluster-policy", 100, "default/c", &ans);
    const char *decision = json_string_value(json_object_get(ans, "decision"));
    if (decision && !strcmp(decision, "start")) {
        assert_int_equal(st, 200);
        assert_string_equal(json_string_value(json_object_get(json_object_get(ans, "committed"),
                                                              "job")),
                            "default/c");
        int took[2] = {0, 0};
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(json_object_get(ans, "plan"), "stages"), i, s)
            took[strcmp(json_string_value(json_object_get(s, "type")), "cpu") ? 1 : 0] +=
                (int)json_integer_value(json_object_get(s, "units"));
        free_units(p.port, &fc1, &fg1);
        assert_int_equal(fc0 - fc1, took[0]);
        assert_int_equal(fg0 - fg1, took[1]);
    } else {
        assert_int_equal(st, 409); /* a wait commits nothing */
    }
    json_decref(ans);
    /* the method needs the free units */
    json_t *body = json_pack("{s:o, s:o, s:{s:s}}", "cluster",
                             json_pack("{s:o}", "types", sv_two_types()), "job", job(100),
                             "options", "plan_method", "cluster-policy");
    json_object_set_new(json_object_get(body, "job"), "name", json_string("offline"));
    json_object_set_new(json_array_get(json_object_get(json_object_get(body, "cluster"), "types"), 0),
                        "count", json_integer(4));
    json_object_set_new(json_array_get(json_object_get(json_object_get(body, "cluster"), "types"), 1),
                        "count", json_integer(4));
    assert_int_equal(sv_json_req(p.port, "POST", "/v1/place", body, NULL, &r), 400);
    if (!strstr(r.body, "options.on")) fail_msg("%s", r.body);
    sv_resp_free(&r);
    assert_int_equal(sv_stop(&p), 0);
}

static void test_without_checkpoint(void **state) {
    (void)state;
    sv_proc p;
    char st2[1100];
    snprintf(st2, sizeof st2, "%s-none.db", state_path);
    remove(st2);
    const char *extra[] = {"--state", st2, NULL};
    assert_int_equal(sv_start(&p, "simpol-none", extra), 0);
    put_cluster(p.port);
    json_t *ans;
    assert_int_equal(place(p.port, "cluster-policy", 100, NULL, &ans), 503);
    char *text = json_dumps(ans, 0);
    assert_non_null(strstr(text, "--sim-policy"));
    free(text);
    json_decref(ans);
    assert_int_equal(sv_stop(&p), 0);
}

/* A network that wants to wait: only the wait flag (x0) reaches the
 * score, 10 tanh(3 tanh(3)) = 9.95 for wait and 0 for every plan, so wait
 * holds > 0.99 whenever it is offered (some job running). The idle cluster
 * still starts the job (no wait row); with one job running the answer is
 * "wait" with no plan, as in-process, and its commit is 409 taking nothing. */
static void test_wait_and_its_commit(void **state) {
    (void)state;
    char err[512];
    spol_net *net = spol_net_create(2, 1, err, sizeof err);
    assert_non_null(net);
    nn_params *pp = spol_net_params(net);
    static const size_t sizes[SPOL_N_TENSORS] = {2 * SPOL_FEATURES, 2, 4, 2, 2, 1};
    for (int t = 0; t < SPOL_N_TENSORS; t++) memset(nn_param(pp, t), 0, sizes[t] * sizeof(float));
    nn_param(pp, 0)[0] = 3;  /* w1[0][x0] */
    nn_param(pp, 2)[0] = 3;  /* w2[0][0] */
    nn_param(pp, 4)[0] = 10; /* w3[0] */
    snprintf(ckpt_path, sizeof ckpt_path, "%s/simpol-wait-%d.h5", sv_tmp(), (int)getpid());
    spol_meta m = {1, 1, 0, 0, NULL};
    if (spol_save(ckpt_path, net, &m, err, sizeof err)) fail_msg("%s", err);
    spol_net_free(net);
    sv_proc p;
    const char *extra[] = {"--state", state_path, "--sim-policy", ckpt_path, NULL};
    assert_int_equal(sv_start(&p, "simpol-wait", extra), 0);
    put_cluster(p.port);
    json_t *ans = check_same(p.port, 100, 0);
    assert_string_equal(json_string_value(json_object_get(ans, "decision")), "start");
    json_decref(ans);
    assert_int_equal(place(p.port, "greedy", 400, "default/a", &ans), 200);
    json_decref(ans);
    ans = check_same(p.port, 100, 1);
    assert_string_equal(json_string_value(json_object_get(ans, "decision")), "wait");
    assert_true(num(json_object_get(ans, "cluster_policy"), "p_wait") > 0.99);
    json_decref(ans);
    int fc0, fg0, fc1, fg1;
    free_units(p.port, &fc0, &fg0);
    assert_int_equal(place(p.port, "cluster-policy", 100, "default/w", &ans), 409);
    char *text = json_dumps(ans, 0);
    assert_non_null(strstr(text, "the policy waits"));
    free(text);
    json_decref(ans);
    free_units(p.port, &fc1, &fg1);
    assert_int_equal(fc1, fc0);
    assert_int_equal(fg1, fg0);
    assert_int_equal(sv_stop(&p), 0);
    remove(ckpt_path);
}

/* Runs strata serve with --sim-policy path; expects exit 2 naming it. */
static void expect_refused(const char *path) {
    const char *bin = getenv("STRATA_BIN");
    assert_non_null(bin);
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' serve --listen 127.0.0.1:0 --sim-policy '%s' 2>&1", bin, path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 2 || !strstr(out, "--sim-policy: ") ||
        !strstr(out, path))
        fail_msg("strata serve --sim-policy %s: expected exit 2 naming the file, got %d: %s", path,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
}

static void test_corrupt_checkpoint_refused(void **state) {
    (void)state;
    char half[1100], text[1100];
    snprintf(half, sizeof half, "%s/simpol-half-%d.h5", sv_tmp(), (int)getpid());
    snprintf(text, sizeof text, "%s/simpol-text-%d.h5", sv_tmp(), (int)getpid());
    size_t size;
    char *buf = harness_slurp(ckpt_path, &size);
    assert_non_null(buf);
    FILE *out = fopen(half, "wb");
    assert_non_null(out);
    fwrite(buf, 1, (size_t)size / 2, out);
    fclose(out);
    free(buf);
    assert_int_equal(sv_write_file(text, "not a checkpoint\n"), 0);
    expect_refused(half);
    expect_refused(text);
    remove(half);
    remove(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_decides_as_in_process, setup),
        cmocka_unit_test_setup(test_wait_and_its_commit, setup),
        cmocka_unit_test_setup(test_without_checkpoint, setup),
        cmocka_unit_test_setup(test_corrupt_checkpoint_refused, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
