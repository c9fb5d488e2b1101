/* test_manifest.c -- env/manifest.h on one mixed plan worked by hand.
 *
 * The plan is written out, not solved, so that every figure below follows
 * from the numbers here and tests/fixture.h's cluster (cpu node n0 in z0,
 * gpu nodes n1 in z0 and n2 in z1):
 *
 *   stage 0: cpu, layer 0 (emb),      2 workers, 1 ps, mem 5e10 B, params 1e6 B
 *   stage 1: gpu, layers 1-2 (fc1-2), 3 workers, 2 ps, mem 2e8 B,  params 4e8 B
 *
 * Task order (env/place.h): 0 1 = stage 0 workers, 2 = its ps, 3 4 5 =
 * stage 1 workers, 6 7 = its ps tasks; 8 tasks, 5 workers and 3 ps.
 * Placed on nodes [n0 n0 n0 n1 n1 n2 n2 n2], stage 1's workers are cut by
 * zone: s1-w1 (tasks 3-4 on n1, z0) and s1-w2 (task 5 on n2, z1).
 *
 * Resources: a cpu worker requests 90% of the unit's 4 cpus = 3600m and
 * ceil(5e10 / 2^20) = 47684Mi; a gpu worker nvidia.com/gpu 1; a ps twice
 * its share of the stage's parameters, 256Mi at least: stage 0
 * 2 * 1e6 B -> 256Mi, stage 1 2 * 4e8 / 2 = 4e8 B -> ceil(381.47) = 382Mi.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "env/manifest.h"
#include "env/place.h"
#include "fixture.h"

typedef struct {
    fixture fx;
    model_plan *plan;
    manifest_type_labels labels[2];
} mixed;

static const int placed_nodes[8] = {0, 0, 0, 1, 1, 2, 2, 2};

static void mixed_init(mixed *m) {
    fixture_init(&m->fx);
    m->plan = model_plan_create(3);
    assert_non_null(m->plan);
    model_plan *p = m->plan;
    p->n_stages = 2;
    p->reason = MODEL_FEASIBLE;
    p->stages[0] = (model_stage){.type = FX_CPU, .first = 0, .last = 0, .mem = 5e10,
                                 .params = 1e6, .n_ps = 1, .units = 2};
    p->stages[1] = (model_stage){.type = FX_GPU, .first = 1, .last = 2, .mem = 2e8,
                                 .params = 4e8, .n_ps = 2, .units = 3};
    memset(m->labels, 0, sizeof m->labels);
    m->labels[FX_CPU].n_terms = 1;
    m->labels[FX_CPU].unit_cpus = 4;
    snprintf(m->labels[FX_CPU].terms[0].key, MANIFEST_KEY_MAX, "node.kubernetes.io/instance-type");
    m->labels[FX_CPU].terms[0].n_values = 1;
    snprintf(m->labels[FX_CPU].terms[0].values[0], MODEL_NAME_MAX, "r5n.24xlarge");
    /* gpu: no terms, so strata.io/type=gpu */
}

/* The value of env variable `name` of a pod template's first container. */
static const char *env_of(json_t *tpl, const char *name) {
    json_t *env = json_object_get(
        json_array_get(json_object_get(json_object_get(tpl, "spec"), "containers"), 0), "env");
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e) if (!strcmp(json_string_value(json_object_get(e, "name")), name))
        return json_string_value(json_object_get(e, "value"));
    return NULL;
}

static const char *ann_of(json_t *tpl, const char *key) {
    return json_string_value(
        json_object_get(json_object_get(json_object_get(tpl, "metadata"), "annotations"), key));
}

static const char *label_of(json_t *tpl, const char *key) {
    return json_string_value(
        json_object_get(json_object_get(json_object_get(tpl, "metadata"), "labels"), key));
}

static json_t *resources_of(json_t *tpl) {
    return json_object_get(
        json_array_get(json_object_get(json_object_get(tpl, "spec"), "containers"), 0),
        "resources");
}

/* The pod template of replicated job r of a JobSet. */
static json_t *rjob_pod(json_t *js, int r, json_t **jobspec) {
    json_t *rj = json_array_get(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), r);
    json_t *spec = json_object_get(json_object_get(rj, "template"), "spec");
    if (jobspec) *jobspec = spec;
    return json_object_get(spec, "template");
}

static void test_groups_unplaced(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_group g[8];
    assert_int_equal(manifest_groups(&m.fx.cl, m.plan, NULL, g), 4);
    const char *names[4] = {"s0-w", "s0-ps", "s1-w", "s1-ps"};
    const int base[4] = {0, 2, 3, 6}, role_base[4] = {0, 0, 2, 1}, count[4] = {2, 1, 3, 2};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(g[i].name, names[i]);
        assert_int_equal(g[i].index_base, base[i]);
        assert_int_equal(g[i].role_base, role_base[i]);
        assert_int_equal(g[i].count, count[i]);
        assert_int_equal(g[i].zone, -1);
    }
    model_plan_free(m.plan);
}

static void test_groups_placed(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_group g[8];
    assert_int_equal(manifest_groups(&m.fx.cl, m.plan, placed_nodes, g), 5);
    const char *names[5] = {"s0-w", "s0-ps", "s1-w1", "s1-w2", "s1-ps"};
    const int base[5] = {0, 2, 3, 5, 6}, role_base[5] = {0, 0, 2, 4, 1};
    const int count[5] = {2, 1, 2, 1, 2}, zone[5] = {0, 0, 0, 1, 1};
    const int type[5] = {FX_CPU, FX_CPU, FX_GPU, FX_GPU, FX_GPU};
    for (int i = 0; i < 5; i++) {
        assert_string_equal(g[i].name, names[i]);
        assert_int_equal(g[i].index_base, base[i]);
        assert_int_equal(g[i].role_base, role_base[i]);
        assert_int_equal(g[i].count, count[i]);
        assert_int_equal(g[i].zone, zone[i]);
        assert_int_equal(g[i].type, type[i]);
    }
    model_plan_free(m.plan);
}

static void test_jobset_placed(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_opts o;
    manifest_opts_default(&o);
    o.kind = MANIFEST_JOBSET;
    o.labels = m.labels;
    char err[512];
    json_t *js = manifest_build(&m.fx.job, &m.fx.cl, m.plan, placed_nodes, &o, err, sizeof err);
    assert_non_null(js);
    assert_string_equal(json_string_value(json_object_get(js, "kind")), "JobSet");
    json_t *rjs = json_object_get(json_object_get(js, "spec"), "replicatedJobs");
    assert_int_equal(json_array_size(rjs), 5);

    /* s0-w: two cpu workers on n0 in z0 */
    json_t *jobspec;
    json_t *pod = rjob_pod(js, 0, &jobspec);
    assert_int_equal(json_integer_value(json_object_get(jobspec, "completions")), 2);
    assert_int_equal(json_integer_value(json_object_get(jobspec, "parallelism")), 2);
    assert_string_equal(json_string_value(json_object_get(jobspec, "completionMode")), "Indexed");
    assert_string_equal(label_of(pod, "strata.io/role"), "worker");
    assert_string_equal(label_of(pod, "strata.io/stage"), "0");
    assert_string_equal(label_of(pod, "strata.io/type"), "cpu");
    assert_string_equal(label_of(pod, "strata.io/group"), "s0-w");
    assert_string_equal(ann_of(pod, "strata.io/zone"), "z0");
    assert_string_equal(ann_of(pod, "strata.io/layers"), "0-0");
    assert_string_equal(ann_of(pod, "strata.io/index-base"), "0");
    assert_string_equal(ann_of(pod, "strata.io/nodes"), "n0,n0");
    json_t *req = json_object_get(resources_of(pod), "requests");
    assert_string_equal(json_string_value(json_object_get(req, "cpu")), "3600m");
    assert_string_equal(json_string_value(json_object_get(req, "memory")), "47684Mi");
    json_t *term = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(json_object_get(pod, "spec"),
                                                            "affinity"),
                                            "nodeAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"),
            "nodeSelectorTerms"),
        0);
    json_t *expr = json_array_get(json_object_get(term, "matchExpressions"), 0);
    assert_string_equal(json_string_value(json_object_get(expr, "key")),
                        "node.kubernetes.io/instance-type");
    assert_string_equal(json_string_value(json_array_get(json_object_get(expr, "values"), 0)),
                        "r5n.24xlarge");
    assert_string_equal(env_of(pod, "STRATA_INDEX_BASE"), "0");
    assert_string_equal(env_of(pod, "STRATA_TF_TYPE"), "worker");
    assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "spec"),
                                                          "schedulerName")),
                        "strata-scheduler");

    /* s0-ps: task 2, on n0; no stage label, no layers annotation */
    pod = rjob_pod(js, 1, NULL);
    assert_string_equal(label_of(pod, "strata.io/role"), "ps");
    assert_null(label_of(pod, "strata.io/stage"));
    assert_null(ann_of(pod, "strata.io/layers"));
    assert_string_equal(ann_of(pod, "strata.io/index-base"), "2");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(resources_of(pod), "requests"), "memory")),
                        "256Mi");

    /* s1-w1: tasks 3-4 on n1 in z0, a GPU each; gpu is known by strata.io/type */
    pod = rjob_pod(js, 2, &jobspec);
    assert_int_equal(json_integer_value(json_object_get(jobspec, "completions")), 2);
    assert_string_equal(label_of(pod, "strata.io/group"), "s1-w1");
    assert_string_equal(ann_of(pod, "strata.io/layers"), "1-2");
    assert_string_equal(ann_of(pod, "strata.io/index-base"), "3");
    assert_string_equal(ann_of(pod, "strata.io/nodes"), "n1,n1");
    assert_string_equal(ann_of(pod, "strata.io/zone"), "z0");
    assert_string_equal(env_of(pod, "STRATA_ROLE_INDEX_BASE"), "2");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(resources_of(pod), "limits"), "nvidia.com/gpu")),
                        "1");
    /* s1-w2: task 5 on n2 in z1 */
    pod = rjob_pod(js, 3, NULL);
    assert_string_equal(ann_of(pod, "strata.io/index-base"), "5");
    assert_string_equal(ann_of(pod, "strata.io/zone"), "z1");
    assert_string_equal(ann_of(pod, "strata.io/nodes"), "n2");
    /* s1-ps: tasks 6-7 on n2 (a gpu node), 382Mi each */
    pod = rjob_pod(js, 4, &jobspec);
    assert_int_equal(json_integer_value(json_object_get(jobspec, "completions")), 2);
    assert_string_equal(ann_of(pod, "strata.io/index-base"), "6");
    assert_string_equal(ann_of(pod, "strata.io/nodes"), "n2,n2");
    assert_string_equal(label_of(pod, "strata.io/type"), "gpu");
    assert_string_equal(env_of(pod, "STRATA_ROLE_INDEX_BASE"), "1");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(resources_of(pod), "requests"), "memory")),
                        "382Mi");

    /* the TensorFlow cluster: workers then ps tasks, in plan order */
    assert_string_equal(env_of(pod, "STRATA_TF_CLUSTER"),
                        "{\"worker\":[\"fx-s0-w-0-0.fx:2222\",\"fx-s0-w-0-1.fx:2222\","
                        "\"fx-s1-w1-0-0.fx:2222\",\"fx-s1-w1-0-1.fx:2222\","
                        "\"fx-s1-w2-0-0.fx:2222\"],\"ps\":[\"fx-s0-ps-0-0.fx:2222\","
                        "\"fx-s1-ps-0-0.fx:2222\",\"fx-s1-ps-0-1.fx:2222\"]}");
    /* the JobSet succeeds when its worker groups have */
    json_t *targets = json_object_get(
        json_object_get(json_object_get(js, "spec"), "successPolicy"), "targetReplicatedJobs");
    assert_int_equal(json_array_size(targets), 3);
    json_decref(js);
    model_plan_free(m.plan);
}

static void test_volcano_pytorch(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_opts o;
    manifest_opts_default(&o);
    o.kind = MANIFEST_VOLCANO;
    o.framework = MANIFEST_PYTORCH;
    o.name = "My_Job";
    char err[512];
    json_t *vj = manifest_build(&m.fx.job, &m.fx.cl, m.plan, NULL, &o, err, sizeof err);
    assert_non_null(vj);
    json_t *spec = json_object_get(vj, "spec");
    assert_int_equal(json_integer_value(json_object_get(spec, "minAvailable")), 8);
    json_t *tasks = json_object_get(spec, "tasks");
    assert_int_equal(json_array_size(tasks), 4);
    const int replicas[4] = {2, 1, 3, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            json_integer_value(json_object_get(json_array_get(tasks, (size_t)i), "replicas")),
            replicas[i]);
    json_t *pod = json_object_get(json_array_get(tasks, 2), "template");
    assert_string_equal(label_of(pod, "strata.io/job"), "my-job");
    assert_string_equal(env_of(pod, "MASTER_ADDR"), "my-job-s0-w-0.my-job");
    assert_string_equal(env_of(pod, "WORLD_SIZE"), "8");
    assert_string_equal(env_of(pod, "STRATA_INDEX_BASE"), "3");
    assert_string_equal(ann_of(pod, "strata.io/zone"), "");
    assert_null(ann_of(pod, "strata.io/nodes"));
    /* Volcano's own scheduler gangs the pods: no strata-scheduler here */
    assert_null(json_object_get(json_object_get(pod, "spec"), "schedulerName"));
    json_decref(vj);
    model_plan_free(m.plan);
}

static void test_tfjob_refused_for_mixed(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_opts o;
    manifest_opts_default(&o);
    o.kind = MANIFEST_TFJOB;
    char err[512] = "";
    assert_null(manifest_build(&m.fx.job, &m.fx.cl, m.plan, NULL, &o, err, sizeof err));
    assert_non_null(strstr(err, "cpu (stage 0), gpu (stage 1)"));
    /* auto: a JobSet for the mixed plan, a TFJob once it is one stage */
    o.kind = MANIFEST_AUTO;
    json_t *v = manifest_build(&m.fx.job, &m.fx.cl, m.plan, NULL, &o, err, sizeof err);
    assert_string_equal(json_string_value(json_object_get(v, "kind")), "JobSet");
    json_decref(v);
    m.plan->n_stages = 1;
    m.plan->stages[0] = m.plan->stages[1];
    m.plan->stages[0].first = 0;
    v = manifest_build(&m.fx.job, &m.fx.cl, m.plan, NULL, &o, err, sizeof err);
    assert_string_equal(json_string_value(json_object_get(v, "kind")), "TFJob");
    json_t *reps = json_object_get(json_object_get(v, "spec"), "tfReplicaSpecs");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(reps, "Worker"),
                                                        "replicas")),
                     3);
    json_t *ps = json_object_get(json_object_get(reps, "PS"), "template");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(reps, "PS"), "replicas")),
                     2);
    assert_string_equal(ann_of(ps, "strata.io/index-base"), "3");
    json_decref(v);
    model_plan_free(m.plan);
}

/* The YAML: strings a reader would take for numbers are quoted, the
 * wrapper script is a literal block, and the plan hash follows the nodes. */
static void test_yaml_and_hash(void **state) {
    (void)state;
    mixed m;
    mixed_init(&m);
    manifest_opts o;
    manifest_opts_default(&o);
    o.kind = MANIFEST_JOBSET;
    char err[512], *buf = NULL;
    size_t len = 0;
    json_t *js = manifest_build(&m.fx.job, &m.fx.cl, m.plan, placed_nodes, &o, err, sizeof err);
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(manifest_write_yaml(f, js, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "strata.io/index-base: \"3\"\n"));
    assert_non_null(strstr(buf, "strata.io/stage: \"1\"\n"));
    assert_non_null(strstr(buf, "strata.io/layers: \"1-2\"\n"));
    assert_non_null(strstr(buf, "completions: 2\n"));
    assert_non_null(strstr(buf, "enableDNSHostnames: true\n"));
    assert_non_null(strstr(buf, "- |\n"));
    free(buf);
    json_decref(js);

    char h1[17], h2[17], h3[17];
    manifest_plan_hash(&m.fx.job, &m.fx.cl, m.plan, placed_nodes, h1);
    manifest_plan_hash(&m.fx.job, &m.fx.cl, m.plan, placed_nodes, h2);
    manifest_plan_hash(&m.fx.job, &m.fx.cl, m.plan, NULL, h3);
    assert_int_equal(strlen(h1), 16);
    assert_string_equal(h1, h2);
    assert_string_not_equal(h1, h3);
    model_plan_free(m.plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_unplaced),   cmocka_unit_test(test_groups_placed),
        cmocka_unit_test(test_jobset_placed),     cmocka_unit_test(test_volcano_pytorch),
        cmocka_unit_test(test_tfjob_refused_for_mixed), cmocka_unit_test(test_yaml_and_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
