/* test_config_json.c -- the config walker's JSON front end (cfg_load_json)
 * against its YAML one, on the same run.
 *
 * One run is written twice: as a block-style YAML config and as a JSON
 * value with some figures as JSON numbers (integers, reals, an integral
 * real) and others as strings with units. Both must load into identical
 * structs, with a few figures checked against values worked out by hand.
 * Then bad variants of the JSON text are loaded both ways -- as text by the
 * YAML reader (cfg_load_buffer) and as a parsed jansson value
 * (cfg_load_json) -- and must fail with the same message, which is also
 * checked word for word; only the position differs (a JSON value has no
 * marks: "t:1:1", as the daemon's in-memory YAML documents had before).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "env/config.h"
#include "env/model.h"

static const char YAML_RUN[] =
    "objective: jct\n"
    "cluster:\n"
    "  types:\n"
    "    - {name: cpu, kind: cpu, flops: 1.2TFLOPS, io_bw: 3.1GB/s, net_bw: 10Gbit/s,\n"
    "       mem: 192GiB, price: 0.68}\n"
    "    - name: A100\n"
    "      kind: gpu\n"
    "      flops: 60TFLOPS\n"
    "      io_bw: 6GB/s\n"
    "      net_bw: 100Gbit/s\n"
    "      mem: 80GiB\n"
    "      price: 4.1\n"
    "  zones: [{name: z0}, {name: z1}]\n"
    "  inter_bw: 10Gbit/s\n"
    "  inter_latency: 1ms\n"
    "  links:\n"
    "    - {zones: [z0, z1], bw: 5Gbit/s}\n"
    "  nodes:\n"
    "    - {name: n0, type: cpu, units: 16, ps_slots: 2, zone: z0, bw: 25Gbit/s,\n"
    "       latency: 20us, loss: 0.01%}\n"
    "    - {name: n1, type: A100, units: 8, zone: z1, bw: 2.5e9, latency: 2e-5}\n"
    "job:\n"
    "  name: j\n"
    "  batch: 64\n"
    "  samples: 1e8\n"
    "  min_throughput: 2000\n"
    "  alpha: 0.05\n"
    "  layers:\n"
    "    - {name: l0, flops: 2GFLOP, io: 64KB, act: 512KB, params: 3MB, mem: 500MB}\n"
    "    - {name: l1, flops: 1e9, io: 0, act: 0, params: 1.5e6, mem: 1GiB}\n"
    "  measurements:\n"
    "    - {workers: 1, ps: 1, throughput: 100}\n"
    "    - {workers: 2, ps: 1, throughput: 180}\n"
    "    - {workers: 4, ps: 2, throughput: 330}\n"
    "    - {workers: 8, ps: 2, throughput: 560}\n";

/* The same run as JSON: 2.5e9 and 1e8 are reals (jansson prints them
 * "2500000000.0", "100000000.0"), 2e-5 a real with an exponent, 64 and
 * 2000 integers. */
static const char JSON_RUN[] =
    "{\"objective\": \"jct\", \"cluster\": {\"types\": ["
    "{\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": \"1.2TFLOPS\", \"io_bw\": \"3.1GB/s\","
    " \"net_bw\": \"10Gbit/s\", \"mem\": \"192GiB\", \"price\": 0.68},"
    "{\"name\": \"A100\", \"kind\": \"gpu\", \"flops\": \"60TFLOPS\", \"io_bw\": \"6GB/s\","
    " \"net_bw\": \"100Gbit/s\", \"mem\": \"80GiB\", \"price\": 4.1}],"
    " \"zones\": [{\"name\": \"z0\"}, {\"name\": \"z1\"}],"
    " \"inter_bw\": \"10Gbit/s\", \"inter_latency\": \"1ms\","
    " \"links\": [{\"zones\": [\"z0\", \"z1\"], \"bw\": \"5Gbit/s\"}],"
    " \"nodes\": ["
    "{\"name\": \"n0\", \"type\": \"cpu\", \"units\": 16, \"ps_slots\": 2, \"zone\": \"z0\","
    " \"bw\": \"25Gbit/s\", \"latency\": \"20us\", \"loss\": \"0.01%\"},"
    "{\"name\": \"n1\", \"type\": \"A100\", \"units\": 8, \"zone\": \"z1\", \"bw\": 2.5e9,"
    " \"latency\": 2e-5}]},"
    " \"job\": {\"name\": \"j\", \"batch\": 64, \"samples\": 1e8, \"min_throughput\": 2000,"
    " \"alpha\": 0.05, \"layers\": ["
    "{\"name\": \"l0\", \"flops\": \"2GFLOP\", \"io\": \"64KB\", \"act\": \"512KB\","
    " \"params\": \"3MB\", \"mem\": \"500MB\"},"
    "{\"name\": \"l1\", \"flops\": 1e9, \"io\": 0, \"act\": 0, \"params\": 1.5e6,"
    " \"mem\": \"1GiB\"}],"
    " \"measurements\": [{\"workers\": 1, \"ps\": 1, \"throughput\": 100},"
    " {\"workers\": 2, \"ps\": 1, \"throughput\": 180},"
    " {\"workers\": 4, \"ps\": 2, \"throughput\": 330},"
    " {\"workers\": 8, \"ps\": 2, \"throughput\": 560}]}}";

/* load_json parses text with jansson (as the daemon does) and loads it with
 * cfg_load_json. */
static cfg_run *load_json(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        fail_msg("bad JSON in the test: %s (line %d)", je.text, je.line);
    cfg_run *run = cfg_load_json("t", root, err, errlen);
    json_decref(root);
    return run;
}

#define assert_exact(a, b) assert_true((a) == (b))

/* Same bytes in n elements of two arrays (both NULL when n is 0). */
static void assert_same(const void *a, const void *b, size_t size)
{
    if (size == 0)
        return;
    assert_non_null(a);
    assert_non_null(b);
    assert_memory_equal(a, b, size);
}

static void test_same_structs(void **state)
{
    (void)state;
    char err[2048];
    cfg_run *y = cfg_load_buffer("t", YAML_RUN, strlen(YAML_RUN), err, sizeof err);
    if (!y)
        fail_msg("YAML: %s", err);
    cfg_run *j = load_json(JSON_RUN, err, sizeof err);
    if (!j)
        fail_msg("JSON: %s", err);

    assert_int_equal(j->objective, CFG_OBJECTIVE_JCT);
    assert_int_equal(y->objective, j->objective);
    const model_cluster *a = &y->cluster, *b = &j->cluster;
    assert_int_equal(b->n_types, 2);
    assert_int_equal(b->n_nodes, 2);
    assert_int_equal(b->n_zones, 2);
    assert_int_equal(a->n_types, b->n_types);
    assert_int_equal(a->n_nodes, b->n_nodes);
    assert_int_equal(a->n_zones, b->n_zones);
    assert_same(a->types, b->types, sizeof *a->types * (size_t)a->n_types);
    assert_same(a->nodes, b->nodes, sizeof *a->nodes * (size_t)a->n_nodes);
    assert_same(a->zones, b->zones, sizeof *a->zones * (size_t)a->n_zones);
    assert_same(a->zone_bw, b->zone_bw, sizeof(double) * 4);
    assert_same(a->zone_lat, b->zone_lat, sizeof(double) * 4);
    assert_exact(a->inter_bw, b->inter_bw);
    assert_exact(a->inter_latency, b->inter_latency);
    /* by hand: 10 Gbit/s = 1.25e9 B/s; the z0-z1 link 5 Gbit/s = 6.25e8 B/s;
     * n1's bw 2.5e9 B/s (a JSON real), latency 2e-5 s; n0's loss 1e-4;
     * the types' counts derived from the nodes: 16 and 8 */
    assert_exact(b->inter_bw, 1.25e9);
    assert_exact(b->zone_bw[0 * 2 + 1], 6.25e8);
    assert_exact(b->zone_bw[1 * 2 + 0], 6.25e8);
    assert_exact(b->zone_bw[0], 1.25e9);
    assert_exact(b->nodes[1].bw, 2.5e9);
    assert_exact(b->nodes[1].latency, 2e-5);
    assert_exact(b->nodes[0].loss, 1e-4);
    assert_int_equal(b->nodes[0].ps_slots, 2);
    assert_int_equal(b->nodes[1].ps_slots, 1);
    assert_int_equal(b->nodes[1].zone, 1);
    assert_int_equal(b->types[0].count, 16);
    assert_int_equal(b->types[1].count, 8);
    assert_exact(b->types[1].mem, 80.0 * 1073741824.0);

    assert_int_equal(y->n_jobs, 1);
    assert_int_equal(j->n_jobs, 1);
    const model_job *p = &y->jobs[0], *q = &j->jobs[0];
    assert_string_equal(p->name, q->name);
    assert_exact(p->batch, q->batch);
    assert_exact(p->samples, q->samples);
    assert_exact(p->min_throughput, q->min_throughput);
    assert_exact(p->alpha, q->alpha);
    assert_exact(p->shard, q->shard);
    assert_int_equal(q->n_layers, 2);
    assert_int_equal(p->n_layers, q->n_layers);
    assert_same(p->layers, q->layers, sizeof *p->layers * (size_t)p->n_layers);
    assert_int_equal(q->n_points, 4);
    assert_int_equal(p->n_points, q->n_points);
    assert_same(p->points, q->points, sizeof *p->points * (size_t)p->n_points);
    /* by hand: batch 64 (a JSON integer), samples 1e8 (a JSON real), l1's
     * params 1.5e6 B, l0's io 64 KB = 64000 B, mem 500 MB = 5e8 B */
    assert_exact(q->batch, 64.0);
    assert_exact(q->samples, 1e8);
    assert_exact(q->layers[1].params, 1.5e6);
    assert_exact(q->layers[0].io, 64000.0);
    assert_exact(q->layers[0].mem, 5e8);
    assert_exact(q->points[3].throughput, 560.0);
    cfg_free(y);
    cfg_free(j);
}

/* without_position drops the "t:LINE:COL: " before a message. */
static const char *without_position(const char *msg)
{
    if (strncmp(msg, "t:", 2) != 0)
        return msg;
    const char *p = msg + 2;
    while ((*p >= '0' && *p <= '9') || *p == ':')
        p++;
    return *p == ' ' ? p + 1 : p;
}

/* bad_variant_yaml replaces `from` (which must occur once in JSON_RUN) by
 * `to`, loads the text both ways and checks that both fail, the JSON value
 * with `expect` after the position "t:1:1", the text with expect_yaml;
 * bad_variant expects the same message of both. */
static void bad_variant_yaml(const char *from, const char *to, const char *expect,
                             const char *expect_yaml)
{
    const char *at = strstr(JSON_RUN, from);
    assert_non_null(at);
    assert_null(strstr(at + 1, from));
    char text[sizeof JSON_RUN + 256];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - JSON_RUN), JSON_RUN, to,
             at + strlen(from));
    char ey[2048], ej[2048];
    cfg_run *y = cfg_load_buffer("t", text, strlen(text), ey, sizeof ey);
    cfg_run *j = load_json(text, ej, sizeof ej);
    if (y || j)
        fail_msg("'%s' loaded (%s, %s)", to, y ? "YAML" : "-", j ? "JSON" : "-");
    assert_string_equal(without_position(ey), expect_yaml);
    assert_string_equal(without_position(ej), expect);
    assert_true(strncmp(ej, "t:1:1: ", 7) == 0);
}

static void bad_variant(const char *from, const char *to, const char *expect)
{
    bad_variant_yaml(from, to, expect, expect);
}

static void test_same_errors(void **state)
{
    (void)state;
    /* a string where a size goes */
    bad_variant("\"mem\": \"80GiB\"", "\"mem\": \"fast\"",
                "cluster.types[1].mem: expected a size such as 16GiB or 512MB, got \"fast\"");
    /* a JSON integer below a bound: quoted as printed */
    bad_variant("\"min_throughput\": 2000", "\"min_throughput\": -3",
                "job.min_throughput: must be > 0, got \"-3\"");
    /* an integral JSON real where a whole number goes is fine; 2.5 is not */
    bad_variant("\"units\": 8", "\"units\": 2.5",
                "cluster.nodes[1].units: expected a whole number such as 8, got \"2.5\"");
    /* a JSON real at the upper bound: alpha < 1 */
    bad_variant("\"alpha\": 0.05", "\"alpha\": 1.0",
                "job.alpha: must be >= 0 and < 1, got \"1.0\"");
    /* null reads as an empty value; the string "null" as text */
    bad_variant("\"batch\": 64", "\"batch\": null",
                "job.batch: expected a number such as 0.5 or 1e6, got an empty value");
    bad_variant("\"zone\": \"z1\"", "\"zone\": \"null\"",
                "cluster.nodes[1].zone: unknown zone 'null' (declared: z0, z1)");
    /* booleans, objects and lists where scalars or lists go */
    bad_variant("\"kind\": \"gpu\"", "\"kind\": true",
                "cluster.types[1].kind: unsupported value \"true\" (expected one of: cpu, gpu)");
    bad_variant("\"name\": \"l1\"", "\"name\": {\"a\": 1}",
                "job.layers[1].name: expected a name, got a mapping");
    bad_variant("\"zones\": [{\"name\": \"z0\"}, {\"name\": \"z1\"}]",
                "\"zones\": {\"name\": \"z0\"}", "cluster.zones: expected a list, got a mapping");
    /* keys: a misspelt one, a missing required one */
    bad_variant("\"layers\": [", "\"lyers\": [", "job.lyers: unknown key (did you mean 'layers'?)");
    bad_variant("\"price\": 4.1}", "\"cost\": 4.1}",
                "cluster.types[1].cost: unknown key (valid keys: name, kind, flops, io_bw, "
                "net_bw, mem, price, count)");
    bad_variant("{\"name\": \"n1\", ", "{",
                "cluster.nodes[1].name: missing required key");
    /* a duplicate name names where the first is: in the text, its column */
    bad_variant_yaml("{\"name\": \"n1\"", "{\"name\": \"n0\"",
                     "cluster.nodes[1].name: duplicate node name 'n0' (first at t:1:1)",
                     "cluster.nodes[1].name: duplicate node name 'n0' (first at t:1:460)");
}

/* load_on loads text's root without its cluster, on cl (cfg_load_json_on). */
static cfg_run *load_on(const char *text, const model_cluster *cl, int drop, char *err, size_t errlen)
{
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(root);
    if (drop)
        json_object_del(root, "cluster");
    cfg_run *run = cfg_load_json_on("t", root, cl, err, errlen);
    json_decref(root);
    return run;
}

/* cfg_load_json_on: the jobs read on a cluster loaded before give the run
 * of a full load, with the same messages; a root with its own cluster is
 * refused. */
static void test_on_cluster(void **state)
{
    (void)state;
    char err[2048], e2[2048];
    cfg_run *full = load_json(JSON_RUN, err, sizeof err);
    if (!full)
        fail_msg("%s", err);
    cfg_run *on = load_on(JSON_RUN, &full->cluster, 1, err, sizeof err);
    if (!on)
        fail_msg("%s", err);
    const model_cluster *a = &full->cluster, *b = &on->cluster;
    assert_true(a->types != b->types); /* a copy of its own */
    assert_int_equal(b->n_types, 2);
    assert_int_equal(b->n_nodes, 2);
    assert_int_equal(b->n_zones, 2);
    assert_same(a->types, b->types, sizeof *a->types * 2);
    assert_same(a->nodes, b->nodes, sizeof *a->nodes * 2);
    assert_same(a->zones, b->zones, sizeof *a->zones * 2);
    assert_same(a->zone_bw, b->zone_bw, sizeof(double) * 4);
    assert_same(a->zone_lat, b->zone_lat, sizeof(double) * 4);
    assert_exact(a->inter_bw, b->inter_bw);
    assert_int_equal(on->objective, CFG_OBJECTIVE_JCT);
    assert_int_equal(on->n_jobs, 1);
    assert_string_equal(on->jobs[0].name, "j");
    assert_same(full->jobs[0].layers, on->jobs[0].layers, sizeof *on->jobs[0].layers * 2);
    assert_same(full->jobs[0].points, on->jobs[0].points, sizeof *on->jobs[0].points * 4);
    cfg_free(on);
    /* a job the cluster cannot hold: the full load's message */
    const char *from = "\"mem\": \"1GiB\"";
    const char *at = strstr(JSON_RUN, from);
    assert_non_null(at);
    char text[sizeof JSON_RUN + 64];
    snprintf(text, sizeof text, "%.*s\"mem\": \"200GiB\"%s", (int)(at - JSON_RUN), JSON_RUN,
             at + strlen(from));
    assert_null(load_json(text, err, sizeof err));
    assert_null(load_on(text, &full->cluster, 1, e2, sizeof e2));
    assert_string_equal(err, e2);
    assert_non_null(strstr(err, "job.layers[1].mem: layer 'l1' needs"));
    /* a root that brings its own cluster */
    assert_null(load_on(JSON_RUN, &full->cluster, 0, err, sizeof err));
    assert_string_equal(without_position(err), "cluster: given twice (loaded already)");
    cfg_free(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_structs),
        cmocka_unit_test(test_same_errors),
        cmocka_unit_test(test_on_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
