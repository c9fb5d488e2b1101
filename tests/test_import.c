/* test_import.c -- strata import-nodes without Python: Kubernetes
 * quantities, the shipped catalogue, and the small hand-written node list
 * tests/data/nodes/small.json (an r5n.24xlarge with 95500m cpus allocatable,
 * a p4d.24xlarge under the beta labels, a bare Tesla-T4 host), imported and
 * loaded back through the run loader. test_import_kube.c does the same on
 * node lists written by the Kubernetes Python client.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "env/config.h"
#include "env/import.h"
#include "tests/harness.h"

static void test_quantity(void **state) {
    (void)state;
    static const struct {
        const char *s;
        double v;
    } OK[] = {{"96", 96}, {"95500m", 95.5}, {"2k", 2000}, {"1Gi", 1073741824.0},
              {"1.5", 1.5}, {"1e3", 1000}, {"100Mi", 104857600.0}, {"8", 8}, {"+4", 4},
              {"250u", 250e-6}, {"2E", 2e18}, {"3M", 3e6}, {"0", 0}};
    for (size_t i = 0; i < sizeof OK / sizeof *OK; i++) {
        double v = -1;
        assert_int_equal(imp_quantity(OK[i].s, &v), 0);
        if (fabs(v - OK[i].v) > 1e-12 * fabs(OK[i].v)) fail_msg("%s -> %.17g", OK[i].s, v);
    }
    static const char *BAD[] = {"", "abc", "1x", "-1", "1 Gi", "Gi", "1.2.3", "1e", "0x10", "nan"};
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        double v = 7;
        if (imp_quantity(BAD[i], &v) == 0) fail_msg("'%s' accepted as %g", BAD[i], v);
    }
}

static imp_catalogue *catalogue(void) {
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/configs/catalogue/instances.yaml", harness_src());
    imp_catalogue *cat = imp_catalogue_load(path, err, sizeof err);
    if (!cat) fail_msg("%s", err);
    return cat;
}

/* The catalogue gives aws-mixed's types the figures aws-mixed has. */
static void test_catalogue_matches_aws_mixed(void **state) {
    (void)state;
    imp_catalogue *cat = catalogue();
    char path[1024], err[2048], buf[4096];
    snprintf(path, sizeof path, "%s/configs/clusters/aws-mixed.yaml", harness_src());
    /* aws-mixed is a cluster file: give the loader a job beside it */
    snprintf(buf, sizeof buf, "%s/aws-run.yaml", harness_tmp());
    FILE *f = fopen(buf, "w");
    assert_non_null(f);
    fprintf(f, "include: %s\njob: {name: j, batch: 1, samples: 1, min_throughput: 1, layers: "
            "[{name: l, flops: 1, io: 0, act: 0, params: 0, mem: 0}]}\n", path);
    fclose(f);
    cfg_run *run = cfg_load(buf, err, sizeof err);
    if (!run) fail_msg("%s", err);
    int found = 0;
    for (int t = 0; t < run->cluster.n_types; t++)
        for (int e = 0; e < cat->n; e++) {
            const model_type *a = &run->cluster.types[t], *b = &cat->entries[e].type;
            if (strcmp(a->name, b->name)) continue;
            found++;
            assert_true(a->flops == b->flops && a->io_bw == b->io_bw && a->net_bw == b->net_bw &&
                        a->mem == b->mem && a->price == b->price && a->is_gpu == b->is_gpu);
        }
    assert_int_equal(found, 5);
    cfg_free(run);
    imp_catalogue_free(cat);
}

/* Imported, written, loaded back: the exact types, units and zones. */
static void test_import_small(void **state) {
    (void)state;
    imp_catalogue *cat = catalogue();
    char path[1024], err[2048], out[1024];
    snprintf(path, sizeof path, "%s/tests/data/nodes/small.json", harness_src());
    imp_result *r = imp_nodes_import(path, cat, 0, err, sizeof err);
    if (!r) fail_msg("%s", err);
    model_cluster dflt; /* the run loader's defaults, which the import writes out */
    memset(&dflt, 0, sizeof dflt);
    cfg_cluster_default(&dflt);
    assert_true(r->cl.inter_bw == dflt.inter_bw && r->cl.inter_latency == dflt.inter_latency);
    snprintf(out, sizeof out, "%s/small-run.yaml", harness_tmp());
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    imp_cluster_write(f, &r->cl, (const char(*)[IMP_NOTE_MAX])r->note, "test");
    fprintf(f, "job: {name: j, batch: 1, samples: 1, min_throughput: 1, layers: "
            "[{name: l, flops: 1, io: 0, act: 0, params: 0, mem: 0}]}\n");
    fclose(f);
    cfg_run *run = cfg_load(out, err, sizeof err);
    if (!run) fail_msg("%s", err);
    const model_cluster *cl = &run->cluster;
    assert_int_equal(cl->n_types, 3);
    assert_string_equal(cl->types[0].name, "CPU");
    assert_string_equal(cl->types[1].name, "A100");
    assert_string_equal(cl->types[2].name, "Tesla-T4");
    assert_int_equal(cl->types[0].count, 2); /* 95.5 cpus / 48 per unit -> 2 */
    assert_int_equal(cl->types[1].count, 8);
    assert_int_equal(cl->types[2].count, 2);
    assert_true(cl->types[1].flops == 11.7e12 && cl->types[1].price == 4.0966);
    assert_int_equal(cl->n_zones, 2);
    assert_string_equal(cl->zones[0].name, "z-a");
    assert_string_equal(cl->zones[1].name, "z-b");
    assert_int_equal(cl->n_nodes, 3);
    assert_string_equal(cl->nodes[1].name, "gpu-b");
    assert_int_equal(cl->nodes[1].zone, 1);
    assert_int_equal(cl->nodes[1].ps_slots, 2);
    assert_true(cl->nodes[1].bw == 400e9 / 8);
    assert_int_equal(cl->nodes[2].zone, 0);
    cfg_free(run);
    imp_result_free(r);
    imp_catalogue_free(cat);
}

/* An unknown instance type: the node, the label, its value and the keys
 * to fill in; --allow-unknown writes a marked placeholder instead. */
static void test_unknown(void **state) {
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s import-nodes tests/data/nodes/unknown.json 2>&1",
             harness_src(), harness_bin());
    assert_int_equal(harness_run(cmd), 2);
    assert_string_equal(harness_out,
                        "strata: tests/data/nodes/unknown.json: node big-1: instance type "
                        "'p5e.48xlarge' (label node.kubernetes.io/instance-type) is not in the "
                        "catalogue configs/catalogue/instances.yaml: add an entry with name, "
                        "kind: gpu, by: instance, match: [p5e.48xlarge], flops, io_bw, net_bw, "
                        "mem, price and node_bw (docs/calibration.md), or pass --allow-unknown "
                        "for placeholders\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s import-nodes tests/data/nodes/unknown.json "
             "--allow-unknown 2>/dev/null | grep -c 'PLACEHOLDER: instance type .p5e.48xlarge.'",
             harness_src(), harness_bin());
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(harness_out, "1\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s import-nodes tests/data/nodes/unknown.json "
             "--allow-unknown 2>/dev/null | grep -c 'name: p5e.48xlarge, kind: gpu'",
             harness_src(), harness_bin());
    assert_int_equal(harness_run(cmd), 0);
    assert_string_equal(harness_out, "1\n");
}

/* A bad catalogue entry is reported at its line like any config. */
static void test_bad_catalogue(void **state) {
    (void)state;
    char path[1024], err[2048];
    snprintf(path, sizeof path, "%s/bad-cat.yaml", harness_tmp());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "types:\n  - {name: X, kind: gpu, by: gpu, match: [x], flops: 1TFLOPS, io_bw: 1GB/s,\n"
            "     net_bw: 16GiB, mem: 1GiB, price: 1, node_bw: 1GB/s}\n");
    fclose(f);
    assert_null(imp_catalogue_load(path, err, sizeof err));
    char want[2048];
    snprintf(want, sizeof want, "%s:3:14: types[0].net_bw: expected a rate such as 25Gbit/s or "
             "3.1GB/s, got \"16GiB\"", path);
    assert_string_equal(err, want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_catalogue_matches_aws_mixed),
        cmocka_unit_test(test_import_small),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_bad_catalogue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
