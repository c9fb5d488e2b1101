/* test_import_kube.c -- strata import-nodes on node lists written by the
 * Kubernetes Python client (tests/kube_nodes.py, run first by ctest as the
 * kube_nodes fixture into $STRATA_TMP/nodes): an EKS, a GKE and a kubeadm
 * cluster. Each is imported by the program, included with a shipped model
 * by a run config, checked with `strata check`, and loaded to assert its
 * exact types, units and zones (worked out from the node lists in
 * kube_nodes.py and the catalogue).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "env/config.h"
#include "tests/harness.h"

/* import imports nodes/NAME.json, writes a run including it and resnet50,
 * checks it with the program and returns the loaded run. */
static cfg_run *import(const char *name) {
    char cmd[4096], run[1024], err[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s import-nodes %s/nodes/%s.json --out %s/nodes/%s.yaml",
             harness_src(), harness_bin(), harness_tmp(), name, harness_tmp(), name);
    assert_int_equal(harness_run(cmd), 0);
    snprintf(run, sizeof run, "%s/nodes/%s-run.yaml", harness_tmp(), name);
    FILE *f = fopen(run, "w");
    assert_non_null(f);
    fprintf(f, "include: [%s.yaml, %s/configs/models/resnet50.yaml]\n", name, harness_src());
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s check %s", harness_bin(), run);
    assert_int_equal(harness_run(cmd), 0);
    cfg_run *r = cfg_load(run, err, sizeof err);
    if (!r) fail_msg("%s", err);
    return r;
}

static void expect_type(const model_cluster *cl, int t, const char *name, int gpu, int count) {
    assert_string_equal(cl->types[t].name, name);
    assert_int_equal(cl->types[t].is_gpu, gpu);
    assert_int_equal(cl->types[t].count, count);
}

static void test_eks(void **state) {
    (void)state;
    cfg_run *r = import("eks");
    const model_cluster *cl = &r->cluster;
    assert_int_equal(cl->n_types, 3);
    expect_type(cl, 0, "CPU", 0, 4); /* 2 x r5n.24xlarge, 95690m / 48 -> 2 each */
    expect_type(cl, 1, "A100", 1, 8); /* p4d.24xlarge, not the GPU product entry */
    expect_type(cl, 2, "T4", 1, 8);   /* 2 x g4dn.12xlarge */
    assert_int_equal(cl->n_zones, 2);
    assert_string_equal(cl->zones[0].name, "us-east-1a");
    assert_string_equal(cl->zones[1].name, "us-east-1b");
    assert_int_equal(cl->n_nodes, 5);
    assert_string_equal(cl->nodes[4].name, "ip-10-0-2-31.ec2.internal");
    assert_int_equal(cl->nodes[4].zone, 1);
    assert_int_equal(cl->nodes[4].units, 4);
    assert_true(cl->types[2].flops == 3.24e12 && cl->types[2].price == 0.978);
    cfg_free(r);
}

static void test_gke(void **state) {
    (void)state;
    cfg_run *r = import("gke");
    const model_cluster *cl = &r->cluster;
    assert_int_equal(cl->n_types, 3);
    expect_type(cl, 0, "T4-gke", 1, 2);     /* n1-standard-8 + nvidia-tesla-t4 x1, twice */
    expect_type(cl, 1, "A100-a2-8g", 1, 8); /* the a2 instance type wins over the accelerator */
    expect_type(cl, 2, "CPU-n1-96", 0, 2);  /* beta labels; "95.69" cpus / 48 -> 2 */
    assert_int_equal(cl->n_zones, 2);
    assert_string_equal(cl->zones[0].name, "us-central1-a");
    assert_string_equal(cl->zones[1].name, "us-central1-b");
    assert_int_equal(cl->nodes[3].zone, 1); /* from failure-domain.beta.kubernetes.io/zone */
    assert_int_equal(cl->nodes[1].zone, 1);
    cfg_free(r);
}

static void test_kubeadm(void **state) {
    (void)state;
    cfg_run *r = import("kubeadm");
    const model_cluster *cl = &r->cluster;
    assert_int_equal(cl->n_types, 2);
    expect_type(cl, 0, "A100-SXM4-40GB", 1, 16);
    expect_type(cl, 1, "Tesla-T4", 1, 2);
    assert_int_equal(cl->n_zones, 1); /* no zone labels: the loader's implicit zone */
    assert_string_equal(cl->zones[0].name, "default");
    assert_int_equal(cl->n_nodes, 3);
    cfg_free(r);
}

/* The control-plane node carries neither an instance type nor a GPU. */
static void test_kubeadm_control_plane(void **state) {
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s import-nodes %s/nodes/kubeadm-control-plane.json 2>&1 "
             ">/dev/null | sed 's|.*/nodes/||'", harness_src(), harness_bin(), harness_tmp());
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(harness_out,
                        "kubeadm-control-plane.json: node cp-1: no instance-type label "
                        "(node.kubernetes.io/instance-type): strata cannot tell its type; label "
                        "the node, or write its type into the cluster by hand\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eks),
        cmocka_unit_test(test_gke),
        cmocka_unit_test(test_kubeadm),
        cmocka_unit_test(test_kubeadm_control_plane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
