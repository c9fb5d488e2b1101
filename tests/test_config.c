/* test_config.c -- the YAML loader (env/config.h) on real files.
 *
 * Good runs come from tests/data/configs/ under $STRATA_SRC: every figure
 * is checked against the SI value converted by hand in the comments.
 * Errors are checked as exact "file:line:col: key.path: message" strings:
 * some from fixture files under tests/data/configs/bad/, most from small
 * variants of one base run (BASE below, with its line numbers) written into
 * $STRATA_TMP, so that the text and the expected position sit side by side.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "env/config.h"
#include "env/model.h"
#include "env/place.h"

static char g_src[1024]; /* $STRATA_SRC/tests/data/configs */
static char g_tmp[1024]; /* $STRATA_TMP */

static int setup(void **state)
{
    (void)state;
    const char *src = getenv("STRATA_SRC");
    const char *tmp = getenv("STRATA_TMP");
    snprintf(g_src, sizeof g_src, "%s/tests/data/configs", src ? src : ".");
    snprintf(g_tmp, sizeof g_tmp, "%s", tmp ? tmp : "/tmp");
    return 0;
}

/* fixture returns the path of a fixture file (static buffer, one at a time
 * per slot). */
static const char *fixture(int slot, const char *name)
{
    static char buf[4][2400];
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", g_src, name);
    return buf[slot];
}

/* expand replaces every '@' in pattern by path (the file named in the
 * message) and '#' by the fixture directory. */
static void expand(char *out, size_t len, const char *pattern, const char *path)
{
    size_t k = 0;
    for (const char *p = pattern; *p && k + 1 < len; p++) {
        const char *ins = *p == '@' ? path : *p == '#' ? g_src : NULL;
        if (ins) {
            int n = snprintf(out + k, len - k, "%s", ins);
            k += (size_t)n < len - k ? (size_t)n : len - k - 1;
        } else
            out[k++] = *p;
    }
    out[k] = '\0';
}

#define assert_exact(got, want)                                                            \
    do {                                                                                   \
        if ((got) != (want))                                                               \
            fail_msg("%s = %.17g, want %.17g", #got, (double)(got), (double)(want));       \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Good files                                                               */
/* ------------------------------------------------------------------------ */

/* good.yaml: objective and jobs in the top file, the cluster from
 * base/good_cluster.yaml (include composition). */
static void test_good_file(void **state)
{
    (void)state;
    char err[2048];
    cfg_run *run = cfg_load(fixture(0, "good.yaml"), err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    assert_string_equal(run->path, fixture(0, "good.yaml"));
    assert_int_equal(run->objective, CFG_OBJECTIVE_JCT);

    const model_cluster *cl = &run->cluster;
    assert_int_equal(cl->n_types, 3);
    const model_type *cpu = &cl->types[0], *a100 = &cl->types[1], *v100 = &cl->types[2];
    assert_string_equal(cpu->name, "cpu");
    assert_int_equal(cpu->is_gpu, 0);
    assert_exact(cpu->flops, 1.2e12);          /* 1.2TFLOPS */
    assert_exact(cpu->io_bw, 3.1e9);           /* 3.1GB/s */
    assert_exact(cpu->net_bw, 1.25e9);         /* 10Gbit/s = 10e9 / 8 */
    assert_exact(cpu->mem, 206158430208.0);    /* 192GiB = 192 * 2^30 */
    assert_exact(cpu->price, 0.68);            /* $0.68 */
    assert_int_equal(cpu->count, 24);          /* no count: nodes c1 16 + c2 8 */
    assert_string_equal(a100->name, "A100");
    assert_int_equal(a100->is_gpu, 1);
    assert_exact(a100->flops, 1.56e14);        /* 156TFLOP/s */
    assert_exact(a100->io_bw, 2e9);            /* 2GB/s */
    assert_exact(a100->net_bw, 1.25e10);       /* 100Gbps = 100e9 / 8 */
    assert_exact(a100->mem, 85899345920.0);    /* 80GiB = 80 * 2^30 */
    assert_exact(a100->price, 3.06);
    assert_int_equal(a100->count, 12);         /* given, and g1 8 + g2 4 = 12 */
    assert_string_equal(v100->name, "V100");
    assert_exact(v100->flops, 1.4e13);
    assert_exact(v100->io_bw, 1.25e9);
    assert_exact(v100->net_bw, 3.125e9);       /* 25Gbit/s = 25e9 / 8 */
    assert_exact(v100->mem, 17179869184.0);    /* 16GiB = 16 * 2^30 */
    assert_exact(v100->price, 2.48);
    assert_int_equal(v100->count, 4);          /* given; no V100 nodes to check */

    assert_int_equal(cl->n_zones, 3);
    assert_string_equal(cl->zones[0].name, "east");
    assert_string_equal(cl->zones[1].name, "west");
    assert_string_equal(cl->zones[2].name, "north");
    assert_exact(cl->inter_bw, 3.125e9);       /* 25Gbit/s */
    assert_exact(cl->inter_latency, 0.002);    /* 2ms */

    assert_int_equal(cl->n_nodes, 4);
    const model_node *n = cl->nodes;
    /* c1: cpu, 16 units, default ps_slots 1, east, 10Gbit/s, defaults 0 */
    assert_string_equal(n[0].name, "c1");
    assert_int_equal(n[0].type, 0);
    assert_int_equal(n[0].units, 16);
    assert_int_equal(n[0].ps_slots, 1);
    assert_int_equal(n[0].zone, 0);
    assert_exact(n[0].bw, 1.25e9);
    assert_exact(n[0].latency, 0.0);
    assert_exact(n[0].loss, 0.0);
    /* c2: 4 ps slots, west, 50us = 5e-5 s, 0.1% = 0.001 */
    assert_string_equal(n[1].name, "c2");
    assert_int_equal(n[1].type, 0);
    assert_int_equal(n[1].units, 8);
    assert_int_equal(n[1].ps_slots, 4);
    assert_int_equal(n[1].zone, 1);
    assert_exact(n[1].latency, 5e-5);
    assert_exact(n[1].loss, 0.001);
    /* g1: A100, east, 100Gbit/s = 1.25e10, 0.5ms = 5e-4 s */
    assert_int_equal(n[2].type, 1);
    assert_int_equal(n[2].zone, 0);
    assert_exact(n[2].bw, 1.25e10);
    assert_exact(n[2].latency, 5e-4);
    /* g2: A100, north, no ps slots, 3.2GB/s, loss 0.01 */
    assert_int_equal(n[3].type, 1);
    assert_int_equal(n[3].units, 4);
    assert_int_equal(n[3].ps_slots, 0);
    assert_int_equal(n[3].zone, 2);
    assert_exact(n[3].bw, 3.2e9);
    assert_exact(n[3].loss, 0.01);

    /* links: east-west 5Gbps = 6.25e8 B/s, 30ms; north-east 100MiB/s =
     * 104857600 B/s with the default latency 2ms; west-north and the
     * diagonal keep inter_bw / inter_latency. Symmetric. */
    assert_non_null(cl->zone_bw);
    assert_non_null(cl->zone_lat);
    const double *bw = cl->zone_bw, *lat = cl->zone_lat;
    assert_exact(bw[0 * 3 + 1], 6.25e8);
    assert_exact(bw[1 * 3 + 0], 6.25e8);
    assert_exact(lat[0 * 3 + 1], 0.03);
    assert_exact(lat[1 * 3 + 0], 0.03);
    assert_exact(bw[2 * 3 + 0], 104857600.0);
    assert_exact(bw[0 * 3 + 2], 104857600.0);
    assert_exact(lat[2 * 3 + 0], 0.002);
    assert_exact(lat[0 * 3 + 2], 0.002);
    assert_exact(bw[1 * 3 + 2], 3.125e9);
    assert_exact(bw[2 * 3 + 1], 3.125e9);
    assert_exact(lat[1 * 3 + 2], 0.002);

    assert_int_equal(run->n_jobs, 2);
    const model_job *ctr = &run->jobs[0], *cnn = &run->jobs[1];
    assert_string_equal(ctr->name, "ctr");
    assert_exact(ctr->batch, 512.0);
    assert_exact(ctr->samples, 1e8);
    assert_exact(ctr->min_throughput, 20000.0);
    assert_exact(ctr->alpha, 0.05);            /* default */
    assert_exact(ctr->shard, 1073741824.0);    /* default 1GiB */
    assert_int_equal(ctr->n_layers, 2);
    const model_layer *l = ctr->layers;
    assert_string_equal(l[0].name, "emb");
    assert_exact(l[0].flops, 2e6);             /* 2MFLOP */
    assert_exact(l[0].io, 4096.0);             /* 4KiB */
    assert_exact(l[0].act, 16384.0);           /* 16KiB */
    assert_exact(l[0].params, 0.0);
    assert_exact(l[0].mem, 25769803776.0);     /* 24GiB = 24 * 2^30 */
    assert_string_equal(l[1].name, "mlp");
    assert_exact(l[1].flops, 1.5e9);           /* 1.5GFLOP */
    assert_exact(l[1].io, 0.0);
    assert_exact(l[1].act, 1000.0);            /* 1KB */
    assert_exact(l[1].params, 67108864.0);     /* 64MiB = 64 * 2^20 */
    assert_exact(l[1].mem, 2e9);               /* 2GB */
    assert_string_equal(cnn->name, "cnn");
    assert_exact(cnn->batch, 32.0);
    assert_exact(cnn->samples, 1.2e6);
    assert_exact(cnn->min_throughput, 500.0);
    assert_exact(cnn->alpha, 0.1);             /* 10% */
    assert_exact(cnn->shard, 536870912.0);     /* 512MiB = 2^29 */
    assert_int_equal(cnn->n_layers, 1);
    assert_exact(cnn->layers[0].flops, 4.1e9); /* 4.1GFLOP */
    assert_exact(cnn->layers[0].io, 1.5e5);    /* 150KB */
    assert_exact(cnn->layers[0].act, 3.2e6);   /* 3.2MB */
    assert_exact(cnn->layers[0].params, 1e8);  /* 100MB */
    assert_exact(cnn->layers[0].mem, 8589934592.0); /* 8GiB */
    cfg_free(run);
}

/* cfg_cluster_default and cfg_node_default (what strata import-nodes
 * starts from) give what minimal.yaml, which sets none of those keys,
 * loads with, field by field. */
static void test_defaults_in_code(void **state)
{
    (void)state;
    char err[2048];
    cfg_run *run = cfg_load(fixture(0, "minimal.yaml"), err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    model_cluster cl;
    memset(&cl, 0, sizeof cl);
    cfg_cluster_default(&cl);
    assert_true(cl.inter_bw == run->cluster.inter_bw);
    assert_true(cl.inter_latency == run->cluster.inter_latency);
    assert_null(cl.types); /* nothing else written */
    assert_int_equal(cl.n_nodes, 0);
    model_node n;
    memset(&n, 0xff, sizeof n);
    cfg_node_default(&n);
    for (int i = 0; i < 3; i++) {
        const model_node *got = &run->cluster.nodes[i];
        assert_int_equal(n.ps_slots, got->ps_slots);
        assert_true(n.latency == got->latency);
        assert_true(n.loss == got->loss);
    }
    assert_int_equal(n.units, 0);
    assert_int_equal(n.name[0], 0);
    cfg_free(run);
}

/* minimal.yaml: defaults everywhere, implicit zone, counts from nodes. */
static void test_defaults(void **state)
{
    (void)state;
    char err[2048];
    cfg_run *run = cfg_load(fixture(0, "minimal.yaml"), err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    const model_cluster *cl = &run->cluster;
    assert_int_equal(run->objective, CFG_OBJECTIVE_COST);
    assert_int_equal(cl->n_types, 2);
    assert_int_equal(cl->types[0].count, 2); /* n0 */
    assert_int_equal(cl->types[1].count, 5); /* n1 2 + n2 3 */
    assert_int_equal(cl->n_zones, 1);
    assert_string_equal(cl->zones[0].name, "default");
    assert_null(cl->zone_bw);
    assert_null(cl->zone_lat);
    assert_exact(cl->inter_bw, 1.25e9);  /* default 10Gbit/s */
    assert_exact(cl->inter_latency, 0.001);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cl->nodes[i].zone, 0);
        assert_int_equal(cl->nodes[i].ps_slots, 1);
        assert_exact(cl->nodes[i].latency, 0.0);
        assert_exact(cl->nodes[i].loss, 0.0);
    }
    assert_int_equal(cl->nodes[2].type, 1);
    assert_int_equal(run->n_jobs, 1);
    assert_string_equal(run->jobs[0].name, "fx");
    assert_exact(run->jobs[0].alpha, MODEL_DEFAULT_ALPHA);
    assert_exact(run->jobs[0].shard, MODEL_DEFAULT_SHARD);
    assert_int_equal(run->jobs[0].n_layers, 3);
    assert_exact(run->jobs[0].layers[0].mem, 5e10);
    cfg_free(run);
    cfg_free(NULL);
}

/* The same run as JSON through cfg_load_buffer (libyaml reads JSON as YAML
 * flow); errors then name the buffer. */
static void test_buffer_json(void **state)
{
    (void)state;
    static const char json[] =
        "{\"cluster\": {\"types\": [\n"
        "  {\"name\": \"cpu\", \"kind\": \"cpu\", \"flops\": 1e12, \"io_bw\": \"10GB/s\",\n"
        "   \"net_bw\": \"8Gbit/s\", \"mem\": 1e11, \"price\": 1, \"count\": 10}]},\n"
        " \"job\": {\"name\": \"j\", \"batch\": 100, \"samples\": 1e8, \"min_throughput\": 1000,\n"
        "  \"layers\": [{\"name\": \"a\", \"flops\": 1e6, \"io\": 0, \"act\": 0,\n"
        "              \"params\": 0, \"mem\": \"1GiB\"}]}}\n";
    char err[2048];
    cfg_run *run = cfg_load_buffer("request", json, strlen(json), err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    assert_string_equal(run->path, "request");
    assert_exact(run->cluster.types[0].io_bw, 1e10);
    assert_exact(run->cluster.types[0].net_bw, 1e9); /* 8e9 / 8 */
    assert_int_equal(run->cluster.types[0].count, 10);
    assert_exact(run->jobs[0].layers[0].mem, 1073741824.0);
    cfg_free(run);

    /* an error in JSON: line 1, column 23 is the '[' of the empty list */
    static const char bad[] = "{\"cluster\": {\"types\": []}, \"job\": {}}";
    assert_null(cfg_load_buffer("request", bad, strlen(bad), err, sizeof err));
    assert_string_equal(err, "request:1:23: cluster.types: must list at least one type");

    /* include is refused in a buffer, before any file is touched */
    static const char inc[] = "include: /etc/passwd\n";
    assert_null(cfg_load_buffer("request", inc, strlen(inc), err, sizeof err));
    assert_string_equal(err, "request:1:1: include: not allowed here: a request cannot name "
                             "files to read; send the whole run in one document");

    /* only len bytes are read (the text need not end in NUL): the first 9
     * of "objective: cost" are a lone scalar */
    assert_null(cfg_load_buffer("request", "objective: cost", 9, err, sizeof err));
    assert_string_equal(err, "request:1:1: expected a mapping of top-level keys, got "
                             "\"objective\"");
}

/* ------------------------------------------------------------------------ */
/* Errors in variants of one base run                                       */
/* ------------------------------------------------------------------------ */

/* Line numbers of BASE, used by the expected messages below. */
static const char BASE[] =
    "job:\n"                                                                       /* 1 */
    "  name: j\n"                                                                  /* 2 */
    "  batch: 32\n"                                                                /* 3 */
    "  samples: 1e6\n"                                                             /* 4 */
    "  min_throughput: 100\n"                                                      /* 5 */
    "  layers:\n"                                                                  /* 6 */
    "    - {name: emb, flops: 1MFLOP, io: 1KB, act: 4KB, params: 0, mem: 8GiB}\n"  /* 7 */
    "    - {name: fc, flops: 1GFLOP, io: 0, act: 1KB, params: 16MB, mem: 1GiB}\n"  /* 8 */
    "cluster:\n"                                                                   /* 9 */
    "  types:\n"                                                                   /* 10 */
    "    - name: cpu\n"                                                            /* 11 */
    "      kind: cpu\n"                                                            /* 12 */
    "      flops: 1TFLOPS\n"                                                       /* 13 */
    "      io_bw: 1GB/s\n"                                                         /* 14 */
    "      net_bw: 10Gbit/s\n"                                                     /* 15 */
    "      mem: 64GiB\n"                                                           /* 16 */
    "      price: 0.5\n"                                                           /* 17 */
    "      count: 8\n"                                                             /* 18 */
    "    - name: gpu\n"                                                            /* 19 */
    "      kind: gpu\n"                                                            /* 20 */
    "      flops: 14TFLOPS\n"                                                      /* 21 */
    "      io_bw: 2GB/s\n"                                                         /* 22 */
    "      net_bw: 25Gbit/s\n"                                                     /* 23 */
    "      mem: 16GiB\n"                                                           /* 24 */
    "      price: 3.06\n"                                                          /* 25 */
    "      count: 4\n";                                                            /* 26 */
/* text appended to BASE starts at line 27 and stays inside cluster: when
 * indented by two spaces */

typedef struct {
    const char *from; /* replaced (first occurrence); "" appends, "^" prepends */
    const char *to;
    const char *want; /* '@' stands for the file's path */
} variant;

/* write_variant writes BASE with v applied to $STRATA_TMP/name. */
static void write_variant(const char *path, const variant *v)
{
    static char text[8192];
    const char *at;
    if (strcmp(v->from, "^") == 0)
        snprintf(text, sizeof text, "%s%s", v->to, BASE);
    else if (v->from[0] == '\0')
        snprintf(text, sizeof text, "%s%s", BASE, v->to);
    else {
        at = strstr(BASE, v->from);
        if (!at)
            fail_msg("variant: \"%s\" not in BASE", v->from);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - BASE), BASE, v->to,
                 at + strlen(v->from));
    }
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void run_variants(const variant *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[2400], want[4096], err[4096];
        snprintf(path, sizeof path, "%s/cfg_variant_%zu.yaml", g_tmp, i);
        write_variant(path, &v[i]);
        cfg_run *run = cfg_load(path, err, sizeof err);
        if (!v[i].want) {
            if (!run)
                fail_msg("variant %zu should load: %s", i, err);
            cfg_free(run);
            continue;
        }
        if (run) {
            cfg_free(run);
            fail_msg("variant %zu (%s -> %s) loaded, want: %s", i, v[i].from, v[i].to,
                     v[i].want);
        }
        expand(want, sizeof want, v[i].want, path);
        if (strcmp(err, want) != 0)
            fail_msg("variant %zu:\n got  %s\n want %s", i, err, want);
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_base_loads(void **state)
{
    (void)state;
    static const variant v[] = {{"", "", NULL}};
    run_variants(v, N(v));
}

/* Unknown, missing and duplicate keys; wrong node types. */
static void test_key_errors(void **state)
{
    (void)state;
    static const variant v[] = {
        /* unknown key, close to a valid one: line 16 col 7 */
        {"      mem: 64GiB", "      memroy: 64GiB",
         "@:16:7: cluster.types[0].memroy: unknown key (did you mean 'mem'?)"},
        /* a longer spelling of a key is suggested too */
        {"      mem: 64GiB", "      memory: 64GiB",
         "@:16:7: cluster.types[0].memory: unknown key (did you mean 'mem'?)"},
        /* nothing close: list the valid keys */
        {"  samples: 1e6", "  epochs: 3",
         "@:4:3: job.epochs: unknown key (valid keys: name, batch, samples, min_throughput, "
         "alpha, shard, layers, measurements)"},
        /* top level */
        {"^", "clusters: {}\n", "@:1:1: clusters: unknown key (did you mean 'cluster'?)"},
        /* missing key: reported at the type's mapping, line 19 col 7 */
        {"      price: 3.06\n", "",
         "@:19:7: cluster.types[1].price: missing required key"},
        /* missing key in a flow mapping: at its '{', line 7 col 7 */
        {"act: 4KB, ", "", "@:7:7: job.layers[0].act: missing required key"},
        /* duplicate key: second batch on line 4, first on line 3 */
        {"  batch: 32\n", "  batch: 32\n  batch: 64\n",
         "@:4:3: job.batch: duplicate key (first at @:3:3)"},
        /* wrong type: a list where a number goes, line 3 col 10 */
        {"  batch: 32", "  batch: [32]",
         "@:3:10: job.batch: expected a number such as 0.5 or 1e6, got a list"},
        {"    - name: cpu", "    - name: {n: cpu}",
         "@:11:13: cluster.types[0].name: expected a name, got a mapping"},
        {"  layers:\n", "  layers: emb\n  unused:\n",
         "@:6:11: job.layers: expected a list, got \"emb\""},
        {"  name: j", "  name:", "@:2:8: job.name: expected a name, got an empty value"},
        {"  name: j", "  name: a,b",
         "@:2:9: job.name: a name cannot contain commas or control characters, got \"a,b\""},
        /* missing top-level keys are reported at the top file's root */
        {"cluster:\n", "clusterx:\n",
         "@:9:1: clusterx: unknown key (did you mean 'cluster'?)"},
        {"^", "objective: price\n",
         "@:1:12: objective: unsupported value \"price\" (expected one of: cost, jct)"},
        {"^", "model: v2\n", "@:1:8: model: unsupported value \"v2\" (expected one of: v1)"},
        {"^", "model: v1\nobjective: jct\n", NULL},
        {"      kind: gpu", "      kind: tpu",
         "@:20:13: cluster.types[1].kind: unsupported value \"tpu\" (expected one of: cpu, gpu)"},
    };
    run_variants(v, N(v));
}

/* Values: units, bounds. */
static void test_value_errors(void **state)
{
    (void)state;
    static const variant v[] = {
        /* non-positive: line 21 col 14 */
        {"      flops: 14TFLOPS", "      flops: 0",
         "@:21:14: cluster.types[1].flops: must be > 0, got \"0\""},
        {"      price: 0.5", "      price: -1",
         "@:17:14: cluster.types[0].price: must be >= 0, got \"-1\""},
        {"  min_throughput: 100", "  min_throughput: -5",
         "@:5:19: job.min_throughput: must be > 0, got \"-5\""},
        /* bad unit: a size where a rate goes, line 15 col 15 */
        {"      net_bw: 10Gbit/s", "      net_bw: 16GiB",
         "@:15:15: cluster.types[0].net_bw: expected a rate such as 25Gbit/s or 3.1GB/s, "
         "got \"16GiB\""},
        {"      mem: 16GiB", "      mem: 16Gb",
         "@:24:12: cluster.types[1].mem: ambiguous unit in \"16Gb\": write B for bytes, e.g. "
         "16GB or 16GiB"},
        {"      mem: 16GiB", "      mem: lots",
         "@:24:12: cluster.types[1].mem: expected a size such as 16GiB or 512MB, got \"lots\""},
        {"      count: 8", "      count: 2.5",
         "@:18:14: cluster.types[0].count: expected a whole number such as 8, got \"2.5\""},
        {"      count: 8", "      count: -1",
         "@:18:14: cluster.types[0].count: must be >= 0, got \"-1\""},
        /* out-of-range fraction: alpha in [0, 1) */
        {"  min_throughput: 100\n", "  min_throughput: 100\n  alpha: 1\n",
         "@:6:10: job.alpha: must be >= 0 and < 1, got \"1\""},
        {"  min_throughput: 100\n", "  min_throughput: 100\n  alpha: 5%\n", NULL},
        {"  min_throughput: 100\n", "  min_throughput: 100\n  shard: 0B\n",
         "@:6:10: job.shard: must be > 0, got \"0B\""},
        /* overflow */
        {"  samples: 1e6", "  samples: 1e999",
         "@:4:12: job.samples: \"1e999\" is out of range"},
        {"  samples: 1e6", "  samples: .nan",
         "@:4:12: job.samples: expected a number such as 0.5 or 1e6, got \".nan\""},
        /* quoted values are read the same as plain ones */
        {"  samples: 1e6", "  samples: \"1e6\"", NULL},
    };
    run_variants(v, N(v));
}

/* Names: duplicates, unknown references, layers that fit nowhere. */
static void test_name_errors(void **state)
{
    (void)state;
    static const variant v[] = {
        /* duplicate type name: second at line 19 col 13, first at 11:13 */
        {"    - name: gpu", "    - name: cpu",
         "@:19:13: cluster.types[1].name: duplicate type name 'cpu' (first at @:11:13)"},
        /* duplicate layer name: line 8, "    - {name: " puts the value at col 14 */
        {"{name: fc,", "{name: emb,",
         "@:8:14: job.layers[1].name: duplicate layer name 'emb' (first at @:7:14)"},
        /* a layer whose mem exceeds every type's mem: "mem: " of line 7
         * ends at col 68, the value starts at col 69 */
        {"mem: 8GiB}", "mem: 96GiB}",
         "@:7:69: job.layers[0].mem: layer 'emb' needs 96GiB, more than any type's mem "
         "(largest: 64GiB on cpu)"},
        {"mem: 8GiB}", "mem: 64GiB}", NULL}, /* exactly the largest fits */
        /* unknown type on a node: line 28, "    - {name: n0, type: " is 23
         * characters, the value starts at col 24 */
        {"", "  nodes:\n    - {name: n0, type: gpx, units: 4, bw: 1GB/s}\n",
         "@:28:24: cluster.nodes[0].type: unknown type 'gpx' (did you mean 'gpu'?)"},
        {"", "  nodes:\n    - {name: n0, type: tpu9000, units: 4, bw: 1GB/s}\n",
         "@:28:24: cluster.nodes[0].type: unknown type 'tpu9000' (declared: cpu, gpu)"},
        /* duplicate node name */
        {"",
         "  nodes:\n"
         "    - {name: g0, type: gpu, units: 2, bw: 1GB/s}\n"
         "    - {name: g0, type: gpu, units: 2, bw: 1GB/s}\n",
         "@:29:14: cluster.nodes[1].name: duplicate node name 'g0' (first at @:28:14)"},
        /* count disagreeing with the nodes: gpu count 4 (line 26 col 14),
         * nodes hold 2 + 1 = 3; cpu count 8 has no nodes to check against */
        {"",
         "  nodes:\n"
         "    - {name: g0, type: gpu, units: 2, bw: 1GB/s}\n"
         "    - {name: g1, type: gpu, units: 1, bw: 1GB/s}\n",
         "@:26:14: cluster.types[1].count: count 4 disagrees with the nodes of type 'gpu', "
         "which hold 3 units in total"},
        {"",
         "  nodes:\n"
         "    - {name: g0, type: gpu, units: 2, bw: 1GB/s}\n"
         "    - {name: g1, type: gpu, units: 2, bw: 1GB/s}\n",
         NULL},
        /* no count and no nodes: count is required; at the type, 19:7 */
        {"      count: 4\n", "",
         "@:19:7: cluster.types[1].count: missing required key (needed when the cluster lists "
         "no nodes)"},
        /* node with a loss of 100% */
        {"", "  nodes:\n    - {name: g0, type: gpu, units: 4, bw: 1GB/s, loss: 100%}\n",
         "@:28:56: cluster.nodes[0].loss: must be >= 0 and < 1, got \"100%\""},
        {"", "  nodes:\n    - {name: g0, type: gpu, units: 4, bw: 1GB/s, ps_slots: 1.5}\n",
         "@:28:60: cluster.nodes[0].ps_slots: expected a whole number such as 8, got \"1.5\""},
        {"", "  nodes:\n    - {name: g0, type: gpu, units: 4}\n",
         "@:28:7: cluster.nodes[0].bw: missing required key"},
    };
    run_variants(v, N(v));
}

/* Zones and links. */
static void test_zone_errors(void **state)
{
    (void)state;
    static const variant v[] = {
        /* zones declared: every node needs one (node mapping at 31:7) */
        {"",
         "  zones:\n"                                               /* 27 */
         "    - name: a\n"                                          /* 28 */
         "    - name: b\n"                                          /* 29 */
         "  nodes:\n"                                               /* 30 */
         "    - {name: g0, type: gpu, units: 4, bw: 1GB/s}\n",      /* 31 */
         "@:31:7: cluster.nodes[0].zone: missing required key (the cluster declares zones)"},
        {"",
         "  zones:\n"
         "    - name: a\n"
         "    - name: b\n"
         "  nodes:\n"
         "    - {name: g0, type: gpu, units: 4, bw: 1GB/s, zone: c}\n",
         "@:31:56: cluster.nodes[0].zone: unknown zone 'c' (declared: a, b)"},
        /* without zones: only the implicit zone "default" exists */
        {"", "  nodes:\n    - {name: g0, type: gpu, units: 4, bw: 1GB/s, zone: east}\n",
         "@:28:56: cluster.nodes[0].zone: unknown zone 'east' (declared: default)"},
        {"",
         "  zones: [{name: a}, {name: a}]\n",
         "@:27:29: cluster.zones[1].name: duplicate zone name 'a' (first at @:27:18)"},
        /* links */
        {"",
         "  zones: [{name: a}, {name: b}]\n"                      /* 27 */
         "  links:\n"                                             /* 28 */
         "    - {zones: [a, a], bw: 1GB/s}\n",                    /* 29 */
         "@:29:15: cluster.links[0].zones: a link joins two different zones, got 'a' twice"},
        {"",
         "  zones: [{name: a}, {name: b}]\n"
         "  links:\n"
         "    - {zones: [a, c], bw: 1GB/s}\n",
         "@:29:19: cluster.links[0].zones[1]: unknown zone 'c' (declared: a, b)"},
        {"",
         "  zones: [{name: a}, {name: b}]\n"
         "  links:\n"
         "    - {zones: [a], bw: 1GB/s}\n",
         "@:29:15: cluster.links[0].zones: expected two zone names, got 1"},
        {"",
         "  zones: [{name: a}, {name: b}]\n"
         "  links:\n"
         "    - {zones: [a, b], bw: 1GB/s}\n"
         "    - {zones: [b, a], latency: 1ms}\n",
         "@:30:15: cluster.links[1].zones: the link between 'b' and 'a' is already given "
         "(at @:29:15)"},
        {"",
         "  zones: [{name: a}, {name: b}]\n"
         "  links:\n"
         "    - {zones: [a, b], bw: 0}\n",
         "@:29:27: cluster.links[0].bw: must be > 0, got \"0\""},
    };
    run_variants(v, N(v));
}

/* Top-level composition rules, empty lists. */
static void test_run_errors(void **state)
{
    (void)state;
    static const variant v[] = {
        /* job and jobs both */
        {"", "jobs:\n  - name: k\n",
         "@:27:1: jobs: 'job' and 'jobs' cannot both be given ('job' at @:1:1); use jobs: for "
         "several jobs"},
        /* no cluster at all (job only): at the root, 1:1 */
        {"cluster:\n", "other:\n", "@:9:1: other: unknown key (valid keys: model, objective, "
                                   "include, cluster, job, jobs)"},
        {"  layers:\n"
         "    - {name: emb, flops: 1MFLOP, io: 1KB, act: 4KB, params: 0, mem: 8GiB}\n"
         "    - {name: fc, flops: 1GFLOP, io: 0, act: 1KB, params: 16MB, mem: 1GiB}\n",
         "  layers: []\n", "@:6:11: job.layers: must list at least one layer"},
        /* the type items become node items, checked after the types */
        {"  types:\n", "  types: []\n  nodes:\n",
         "@:10:10: cluster.types: must list at least one type"},
        {"job:\n", "unused:\n", "@:1:1: unused: unknown key (valid keys: model, objective, "
                                "include, cluster, job, jobs)"},
    };
    run_variants(v, N(v));

    /* a run with no job, and one with no cluster */
    char path[2400], want[4096], err[4096];
    snprintf(path, sizeof path, "%s/cfg_nojob.yaml", g_tmp);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(strstr(BASE, "cluster:"), fp); /* lines 9..26 only */
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    expand(want, sizeof want,
           "@:1:1: job: missing required key: give job: (one job) or jobs: (a list), here or "
           "in an included file",
           path);
    assert_string_equal(err, want);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "objective: cost\n%.*s", (int)(strstr(BASE, "cluster:") - BASE), BASE);
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    expand(want, sizeof want,
           "@:1:1: cluster: missing required key (neither this file nor its includes give it)",
           path);
    assert_string_equal(err, want);

    /* an empty list of jobs */
    fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "jobs: []\n%s", strstr(BASE, "cluster:"));
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    expand(want, sizeof want, "@:1:7: jobs: must list at least one job", path);
    assert_string_equal(err, want);

    /* several jobs: names are unique; paths say jobs[i] */
    fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "%s", strstr(BASE, "cluster:"));
    fputs("jobs:\n"                                                               /* 27 */
          "  - name: a\n"                                                         /* 28 */
          "    batch: 1\n"                                                        /* 29 */
          "    samples: 1\n"                                                      /* 30 */
          "    min_throughput: 1\n"                                               /* 31 */
          "    layers: [{name: l, flops: 1, io: 0, act: 0, params: 0, mem: 1}]\n" /* 32 */
          "  - name: a\n"                                                         /* 33 */
          "    batch: 1\n"
          "    samples: 1\n"
          "    min_throughput: 1\n"
          "    layers: [{name: l, flops: 1, io: 0, act: 0, params: 0, mem: 1}]\n",
          fp);
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    /* the cluster part is 18 lines, so jobs: is at line 19 and the second
     * name at line 25, col 11 */
    expand(want, sizeof want, "@:25:11: jobs[1].name: duplicate job name 'a' (first at @:20:11)",
           path);
    assert_string_equal(err, want);
}

/* ------------------------------------------------------------------------ */
/* Errors in fixture files: syntax, files, includes                         */
/* ------------------------------------------------------------------------ */

static void check_fixture_error(const char *name, const char *pattern)
{
    char err[4096], want[4096];
    const char *path = fixture(1, name);
    cfg_run *run = cfg_load(path, err, sizeof err);
    if (run) {
        cfg_free(run);
        fail_msg("%s loaded", name);
    }
    expand(want, sizeof want, pattern, path);
    if (strcmp(err, want) != 0)
        fail_msg("%s:\n got  %s\n want %s", name, err, want);
}

static void test_file_errors(void **state)
{
    (void)state;
    /* libyaml's problem mark: line 5, column 6 (the under-indented key) */
    check_fixture_error("bad/syntax.yaml",
                        "@:5:6: syntax error: did not find expected '-' indicator (while "
                        "parsing a block collection at 3:5)");
    check_fixture_error("bad/model_v2.yaml",
                        "@:2:8: model: unsupported value \"v2\" (expected one of: v1)");
    /* cycle_a includes cycle_b (line 1), which includes cycle_a (line 2,
     * the list item at col 11) */
    check_fixture_error("bad/cycle_a.yaml",
                        "#/bad/cycle_b.yaml:2:11: include[0]: include cycle: "
                        "#/bad/cycle_a.yaml -> #/bad/cycle_b.yaml -> #/bad/cycle_a.yaml");
    /* the missing file is named relative to the including file's folder */
    check_fixture_error("bad/missing_include.yaml",
                        "#/bad/nowhere.yaml: cannot open: No such file or directory "
                        "(included from @:4:5)");
    /* a key defined in the file and in what it includes: both places */
    check_fixture_error("bad/twice.yaml", "#/bad/../base/good_cluster.yaml:3:1: cluster: "
                                          "defined twice (first at @:3:1)");
    check_fixture_error("bad/job_and_jobs.yaml",
                        "@:9:1: jobs: 'job' and 'jobs' cannot both be given ('job' at @:3:1); "
                        "use jobs: for several jobs");
    check_fixture_error("bad/two_docs.yaml",
                        "@:3:1: only one YAML document per file is supported");
    check_fixture_error("bad/empty.yaml",
                        "@:1:1: the file is empty (expected a mapping of top-level keys)");
    check_fixture_error("bad/no_such_file.yaml", "@: cannot open: No such file or directory");
    check_fixture_error("bad", "@: cannot open: Is a directory");
    /* a non-mapping top level */
    check_fixture_error("placement_good.yaml",
                        "@:4:1: placement: unknown key (valid keys: model, objective, include, "
                        "cluster, job, jobs)");

    /* a file that includes itself, by another name */
    char path[2400], err[8192], want[8192];
    snprintf(path, sizeof path, "%s/cfg_self.yaml", g_tmp);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("objective: cost\ninclude: ./cfg_self.yaml\n", fp);
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    snprintf(want, sizeof want, "%s:2:10: include: include cycle: %s -> %s/./cfg_self.yaml",
             path, path, g_tmp);
    assert_string_equal(err, want);

    /* errors inside an included file name that file; two included files
     * defining the same key name both */
    char dir[1100], sub[1200];
    snprintf(dir, sizeof dir, "%s/cfg_inc", g_tmp);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    snprintf(path, sizeof path, "%s/main.yaml", dir);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "include: [sub/a.yaml, sub/b.yaml]\n%.*s", (int)(strstr(BASE, "cluster:") - BASE),
            BASE);
    fclose(fp);
    char a[1300], b[1300];
    snprintf(a, sizeof a, "%s/a.yaml", sub);
    snprintf(b, sizeof b, "%s/b.yaml", sub);
    fp = fopen(a, "w");
    assert_non_null(fp);
    fprintf(fp, "objective: jct\n%s", strstr(BASE, "cluster:"));
    fclose(fp);
    fp = fopen(b, "w");
    assert_non_null(fp);
    fputs("# b\nobjective: cost\n", fp);
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    /* b.yaml's objective (its line 2) after a.yaml's (line 1) */
    snprintf(want, sizeof want, "%s/sub/b.yaml:2:1: objective: defined twice (first at "
             "%s/sub/a.yaml:1:1)", dir, dir);
    assert_string_equal(err, want);
    fp = fopen(b, "w");
    assert_non_null(fp);
    fputs("# b has nothing to add\n{}\n", fp);
    fclose(fp);
    cfg_run *run = cfg_load(path, err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    assert_int_equal(run->objective, CFG_OBJECTIVE_JCT); /* from a.yaml */
    assert_int_equal(run->cluster.n_types, 2);
    assert_int_equal(run->jobs[0].n_layers, 2);
    cfg_free(run);
    /* a bad value in a.yaml: the cluster starts on its line 2, so BASE's
     * line 16 (mem of cpu) is a.yaml's line 9 */
    fp = fopen(a, "w");
    assert_non_null(fp);
    const char *cl = strstr(BASE, "cluster:"), *mem = strstr(cl, "      mem: 64GiB");
    fprintf(fp, "objective: jct\n%.*s      mem: -64GiB%s", (int)(mem - cl), cl,
            mem + strlen("      mem: 64GiB"));
    fclose(fp);
    assert_null(cfg_load(path, err, sizeof err));
    snprintf(want, sizeof want,
             "%s/sub/a.yaml:9:12: cluster.types[0].mem: must be > 0, got \"-64GiB\"", dir);
    assert_string_equal(err, want);

    /* a small err buffer is filled, truncated, and NUL-terminated */
    char tiny[16];
    assert_null(cfg_load(fixture(1, "bad/model_v2.yaml"), tiny, sizeof tiny));
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    assert_null(cfg_load(fixture(1, "bad/model_v2.yaml"), NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* Placements                                                               */
/* ------------------------------------------------------------------------ */

/* The plan cpu,gpu,gpu of minimal.yaml at R = 1000: stage 0 (emb) on cpu
 * and stage 1 (fc1, fc2) on gpu, one worker and one ps task each (see
 * tests/test_place.c; params 1e6 and 8e6 bytes are under one 1 GiB shard). */
static void test_placement(void **state)
{
    (void)state;
    char err[4096], want[4096];
    cfg_run *run = cfg_load(fixture(0, "minimal.yaml"), err, sizeof err);
    if (!run)
        fail_msg("%s", err);
    model_plan *plan = model_plan_create(3);
    assert_non_null(plan);
    int assign[3] = {0, 1, 1};
    assert_int_equal(model_eval(&run->jobs[0], &run->cluster, assign, plan), MODEL_FEASIBLE);
    assert_int_equal(plan->n_stages, 2);
    assert_int_equal(plan->stages[0].units, 1);
    assert_int_equal(plan->stages[0].n_ps, 1);
    assert_int_equal(plan->stages[1].units, 1);
    assert_int_equal(plan->stages[1].n_ps, 1);
    assert_int_equal(place_task_count(plan), 4);

    /* task order: s0 worker n0, s0 ps n0, s1 worker n2, s1 ps n1 */
    int tn[4] = {-1, -1, -1, -1};
    if (cfg_load_placement(fixture(1, "placement_good.yaml"), run, plan, tn, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(tn[0], 0);
    assert_int_equal(tn[1], 0);
    assert_int_equal(tn[2], 2);
    assert_int_equal(tn[3], 1);

    /* a worker on a node of the wrong type is place_eval's to refuse */
    if (cfg_load_placement(fixture(1, "placement_wrong_type.yaml"), run, plan, tn, err,
                           sizeof err))
        fail_msg("%s", err);
    assert_int_equal(tn[0], 1);
    model_plan *out = model_plan_create(3);
    assert_int_equal(place_eval(&run->jobs[0], &run->cluster, plan, tn, out),
                     MODEL_ERR_PLACEMENT);
    model_plan_free(out);

    static const struct {
        const char *file, *want;
    } bad[] = {
        {"placement_unknown_node.yaml",
         "@:5:10: placement[1].ps[0]: unknown node 'n9' (did you mean 'n0'?)"},
        {"placement_count.yaml",
         "@:4:14: placement[1].workers: stage 1 (layers 1..2 on gpu) runs 1 worker, got 2"},
        {"placement_stages.yaml",
         "@:2:3: placement: expected one entry per stage of the plan (2), got 1"},
        {"good.yaml",
         "@:3:1: model: unknown key (valid keys: placement)"},
        {"no_such_placement.yaml", "@: cannot open: No such file or directory"},
    };
    for (size_t i = 0; i < N(bad); i++) {
        const char *path = fixture(1, bad[i].file);
        assert_int_equal(cfg_load_placement(path, run, plan, tn, err, sizeof err), -1);
        expand(want, sizeof want, bad[i].want, path);
        if (strcmp(err, want) != 0)
            fail_msg("%s:\n got  %s\n want %s", bad[i].file, err, want);
    }

    /* wrong type of node for a stage entry, in a written file */
    char path[2400];
    snprintf(path, sizeof path, "%s/cfg_place.yaml", g_tmp);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("placement:\n  - {workers: [n0], ps: [n0]}\n  - {workers: n2, ps: [n1]}\n", fp);
    fclose(fp);
    assert_int_equal(cfg_load_placement(path, run, plan, tn, err, sizeof err), -1);
    expand(want, sizeof want, "@:3:15: placement[1].workers: expected a list, got \"n2\"", path);
    assert_string_equal(err, want);

    model_plan_free(plan);
    cfg_free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),   cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_defaults_in_code),
        cmocka_unit_test(test_buffer_json), cmocka_unit_test(test_base_loads),
        cmocka_unit_test(test_key_errors),  cmocka_unit_test(test_value_errors),
        cmocka_unit_test(test_name_errors), cmocka_unit_test(test_zone_errors),
        cmocka_unit_test(test_run_errors),  cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_placement),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
