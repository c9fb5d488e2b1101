/* test_eval.c -- `strata eval`: configs, instances, the run, its outputs.
 *
 * The acceptance run is the shipped configs/eval/quick.yaml, run by the
 * real program twice (--jobs 1 --no-times, then --jobs 2 with times): the
 * CSV must have exactly the documented columns, every gap must be the
 * row's plan cost over the exact plan's cost of the same instance, minus
 * one (checked by hand on VGG-16, see below), and the two runs must agree
 * on every column but solve_seconds. The library is also driven directly:
 * config errors with file:line:col, generated runs written and read back
 * to the bit, and a run on 1 and 3 threads with repeats giving the same
 * rows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <yaml.h>

#include "env/config.h"
#include "eval/gen.h"
#include "eval/instances.h"
#include "eval/plot.h"
#include "eval/report.h"
#include "eval/run.h"
#include "eval/spec.h"
#include "solvers/solve.h"

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---------------------------------------------------------------------------
 * CSV reading
 * ------------------------------------------------------------------------ */

#define MAX_COLS 32

typedef struct {
    int n_rows, n_cols;
    char *head[MAX_COLS];
    char **cell; /* [n_rows * n_cols] */
} csv;

/* split_line cuts one CSV line (quotes: RFC 4180) into fields. */
static int split_line(const char *line, char **out, int max) {
    int n = 0;
    const char *p = line;
    for (;;) {
        char buf[2048];
        size_t k = 0;
        if (*p == '"') {
            p++;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"') p++;
                if (k + 1 < sizeof buf) buf[k++] = *p;
                p++;
            }
            if (*p == '"') p++;
        } else {
            while (*p && *p != ',' && *p != '\n') {
                if (k + 1 < sizeof buf) buf[k++] = *p;
                p++;
            }
        }
        buf[k] = '\0';
        if (n < max) out[n++] = strdup(buf);
        if (*p != ',') break;
        p++;
    }
    return n;
}

static void csv_read(const char *path, csv *c) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    c->n_cols = split_line(line, c->head, MAX_COLS);
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *fields[MAX_COLS];
        int n = split_line(line, fields, MAX_COLS);
        assert_int_equal(n, c->n_cols);
        if (c->n_rows == cap) {
            cap = cap ? 2 * cap : 64;
            c->cell = realloc(c->cell, sizeof *c->cell * (size_t)(cap * c->n_cols));
            assert_non_null(c->cell);
        }
        for (int i = 0; i < n; i++) c->cell[c->n_rows * c->n_cols + i] = fields[i];
        c->n_rows++;
    }
    fclose(f);
}

static void csv_free(csv *c) {
    for (int i = 0; i < c->n_cols; i++) free(c->head[i]);
    for (int i = 0; i < c->n_rows * c->n_cols; i++) free(c->cell[i]);
    free(c->cell);
}

static int col(const csv *c, const char *name) {
    for (int i = 0; i < c->n_cols; i++)
        if (!strcmp(c->head[i], name)) return i;
    fail_msg("no column %s", name);
    return -1;
}

static const char *at(const csv *c, int r, const char *name) {
    return c->cell[r * c->n_cols + col(c, name)];
}

static double num(const csv *c, int r, const char *name) {
    const char *s = at(c, r, name);
    return *s ? strtod(s, NULL) : NAN;
}

/* ---------------------------------------------------------------------------
 * The acceptance run: configs/eval/quick.yaml through the program
 * ------------------------------------------------------------------------ */

static int run_eval(const char *out, const char *extra) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' eval '%s/configs/eval/quick.yaml' --out '%s' --quiet %s",
             env_or("STRATA_BIN", "strata"), env_or("STRATA_SRC", "."), out, extra);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int file_is_png(const char *path) {
    unsigned char sig[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(sig, 1, 8, f);
    fclose(f);
    return n == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8);
}

static void test_quick_run(void **state) {
    (void)state;
    char a[1024], b[1024], path[1200];
    snprintf(a, sizeof a, "%s/eval-quick-a", env_or("STRATA_TMP", "/tmp"));
    snprintf(b, sizeof b, "%s/eval-quick-b", env_or("STRATA_TMP", "/tmp"));
    assert_int_equal(run_eval(a, "--jobs 1 --no-times"), 0);
    assert_int_equal(run_eval(b, "--jobs 2"), 0);

    csv x, y;
    snprintf(path, sizeof path, "%s/results.csv", a);
    csv_read(path, &x);
    snprintf(path, sizeof path, "%s/results.csv", b);
    csv_read(path, &y);

    /* the documented columns, in order */
    static const char *want[] = {
        "instance", "cluster", "job", "layers", "method", "family", "seed", "feasible",
        "objective", "cost", "throughput", "time", "plan_cost", "reference", "gap",
        "homogeneous", "vs_homogeneous", "cross_node_bytes", "cross_zone_bytes",
        "solve_seconds", "note"};
    assert_int_equal(x.n_cols, (int)(sizeof want / sizeof *want));
    for (int i = 0; i < x.n_cols; i++) assert_string_equal(x.head[i], want[i]);
    assert_true(x.n_rows > 100);

    /* the same numbers on 1 and 2 threads: every column but the time */
    assert_int_equal(x.n_rows, y.n_rows);
    int t_col = col(&x, "solve_seconds");
    int timed = 0;
    for (int r = 0; r < x.n_rows; r++) {
        for (int c = 0; c < x.n_cols; c++) {
            if (c == t_col) continue;
            if (strcmp(x.cell[r * x.n_cols + c], y.cell[r * y.n_cols + c]))
                fail_msg("row %d column %s: '%s' then '%s'", r + 2, x.head[c],
                         x.cell[r * x.n_cols + c], y.cell[r * y.n_cols + c]);
        }
        assert_string_equal(x.cell[r * x.n_cols + t_col], ""); /* --no-times */
        timed += y.cell[r * y.n_cols + t_col][0] != '\0';
    }
    assert_true(timed > x.n_rows / 2);

    /* gaps: plan-like rows against the exact row of the same instance and
     * seed; Coach and several-jobs rows never below their reference */
    int checked = 0, vgg = 0;
    for (int r = 0; r < x.n_rows; r++) {
        const char *fam = at(&x, r, "family");
        double gap = num(&x, r, "gap"), ref = num(&x, r, "reference");
        int feasible = atoi(at(&x, r, "feasible"));
        if (!strcmp(fam, "plan") || !strcmp(fam, "place")) {
            int e = -1;
            for (int k = 0; k < x.n_rows; k++)
                if (!strcmp(at(&x, k, "instance"), at(&x, r, "instance")) &&
                    !strcmp(at(&x, k, "method"), "exact") &&
                    !strcmp(at(&x, k, "seed"), at(&x, r, "seed")))
                    e = k;
            assert_true(e >= 0);
            if (!feasible || isnan(ref)) {
                assert_true(isnan(gap));
                continue;
            }
            assert_string_equal(at(&x, r, "reference"), at(&x, e, "cost"));
            double want_gap = num(&x, r, "plan_cost") / ref - 1.0;
            if (fabs(gap - want_gap) > 1e-9 * (1.0 + fabs(want_gap)))
                fail_msg("row %d: gap %.12g, plan_cost/reference - 1 = %.12g", r + 2, gap,
                         want_gap);
            assert_true(gap > -1e-9); /* exact is optimal */
            checked++;
        } else if (feasible && !isnan(gap)) {
            assert_true(gap > -1e-9);
        }
        /* VGG-16 on aws-mixed: all-A100 (the homogeneous plan) costs
         * $1755.04, the exact split plan $941.10 (docs/data.md):
         * 1755.0421647 / 941.0990586 - 1 = 0.8648857 */
        if (!strcmp(at(&x, r, "instance"), "aws-mixed/vgg16") &&
            !strcmp(at(&x, r, "method"), "homogeneous")) {
            assert_true(fabs(gap - 0.8648857) < 1e-6);
            assert_true(fabs(num(&x, r, "cost") - 1755.0421647) < 1e-6);
            vgg++;
        }
    }
    assert_true(checked > 50);
    assert_int_equal(vgg, 2); /* two seeds */

    /* smd never loses to sequential (its candidates include sequential's) */
    for (int r = 0; r < x.n_rows; r++) {
        if (strcmp(at(&x, r, "method"), "smd")) continue;
        for (int k = 0; k < x.n_rows; k++)
            if (!strcmp(at(&x, k, "method"), "sequential") &&
                !strcmp(at(&x, k, "instance"), at(&x, r, "instance")) &&
                !strcmp(at(&x, k, "seed"), at(&x, r, "seed")))
                assert_true(num(&x, r, "time") <= num(&x, k, "time") * (1 + 1e-12));
    }
    csv_free(&x);
    csv_free(&y);

    /* summary.md and the plots */
    snprintf(path, sizeof path, "%s/summary.md", b);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "## Per method"));
    assert_non_null(strstr(text, "| genetic "));
    assert_non_null(strstr(text, "mean gap"));
    static const char *plots[] = {"cost_by_method", "gap_by_method", "time_vs_layers",
                                  "jct_by_method", "cross_node_by_method"};
    for (size_t i = 0; i < sizeof plots / sizeof *plots; i++) {
        snprintf(path, sizeof path, "%s/plots/%s.png", b, plots[i]);
        if (!file_is_png(path)) fail_msg("%s is not a PNG", path);
    }
    snprintf(path, sizeof path, "%s/plots/time_vs_layers.png", a); /* --no-times: none */
    assert_false(file_is_png(path));
}

/* ---------------------------------------------------------------------------
 * Config errors
 * ------------------------------------------------------------------------ */

/* expect_error loads text as an eval config and checks that the message
 * is path + want (only its start, when want ends with "...": the unit
 * parser's wording belongs to env/units.c). */
static void expect_error(const char *name, const char *text, const char *want) {
    char path[1024], err[4096], full[1200];
    snprintf(path, sizeof path, "%s/%s", env_or("STRATA_TMP", "/tmp"), name);
    write_file(path, text);
    eval_spec *s = eval_spec_load(path, err, sizeof err);
    if (s) {
        eval_spec_free(s);
        fail_msg("%s loaded; expected %s", name, want);
    }
    snprintf(full, sizeof full, "%s%s", path, want);
    size_t n = strlen(full);
    int prefix = n > 3 && !strcmp(full + n - 3, "...");
    if (prefix ? strncmp(err, full, n - 3) : strcmp(err, full))
        fail_msg("got  %s\nwant %s", err, full);
}

static void test_config_errors(void **state) {
    (void)state;
    char cl[1200];
    snprintf(cl, sizeof cl, "%s/configs/clusters/aws-mixed.yaml", env_or("STRATA_SRC", "."));
    char text[4096];
    expect_error("ev1.yaml", "instances: [{run: x.yaml}]\nmethod: [exact]\n",
                 ":2:1: method: unknown key (did you mean 'methods'?)");
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods:\n  - exact\n"
             "  - exakt\n", cl, cl);
    expect_error("ev2.yaml", text,
                 ":5:5: methods[1]: unknown method 'exakt' (plan: exact, homogeneous, rule, "
                 "greedy, random, genetic, anneal; policy; placement: spread, pack, aggregate, "
                 "zone, best; several jobs: sequential, smd; Coach: fit, measured)");
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods:\n"
             "  - {method: exact, noise: 5%%}\n", cl, cl);
    expect_error("ev3.yaml", text,
                 ":4:21: methods[0].noise: does not apply to method 'exact' (a plan method)");
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods:\n"
             "  - {method: policy, checkpoint: %s, node_samples: 4}\n", cl, cl, cl);
    char want[200];
    snprintf(want, sizeof want, ":4:%d: methods[0].node_samples: needs placement: policy (the "
             "node head samples the placements)", (int)strlen(cl) + 50);
    expect_error("ev3b.yaml", text, want);
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods:\n"
             "  - {method: genetic, polish: true}\n", cl, cl);
    expect_error("ev3c.yaml", text,
                 ":4:23: methods[0].polish: does not apply to method 'genetic' (a plan method)");
    snprintf(text, sizeof text, "instances:\n  - {models: /nowhere/*.yaml, cluster: %s}\n"
             "methods: [exact]\n", cl);
    expect_error("ev4.yaml", text, ":2:14: instances[0].models: '/nowhere/*.yaml' matches no file");
    snprintf(text, sizeof text, "repeats: 0\ninstances:\n  - {cluster: %s, models: %s}\n"
             "methods: [exact]\n", cl, cl);
    expect_error("ev5.yaml", text, ":1:10: repeats: must be >= 1 and <= 100, got \"0\"");
    /* upper bounds (issue 13): 1e6 repeats, or a count drawing thousands of
     * files, were taken */
    snprintf(text, sizeof text, "repeats: 101\ninstances:\n  - {cluster: %s, models: %s}\n"
             "methods: [exact]\n", cl, cl);
    expect_error("ev5b.yaml", text, ":1:10: repeats: must be >= 1 and <= 100, got \"101\"");
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s,\n     generate: {seed: 1, "
             "count: 3759, layers: [4, 9]}}\nmethods: [exact]\n", cl);
    expect_error("ev5c.yaml", text, ":3:33: instances[0].generate.count: must be >= 1 and <= 1000, got "
                 "\"3759\"");
    snprintf(text, sizeof text, "instances:\n  - {modles: %s, cluster: %s}\nmethods: [exact]\n",
             cl, cl);
    expect_error("ev6.yaml", text, ":2:6: instances[0].modles: unknown key (did you mean "
                 "'models'?)");
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods: [greedy, "
             "{method: genetic, name: greedy}]\n", cl, cl);
    expect_error("ev7.yaml", text, ":3:19: methods[1]: a second method labelled 'greedy' (give "
                 "one of them name: LABEL)");
    snprintf(text, sizeof text, "budget: 5 parsecs\ninstances: [{run: %s}]\nmethods: [exact]\n",
             cl);
    expect_error("ev8.yaml", text, ":1:9: budget: expected a duration...");
}

/* A method given by name alone ("- fit") gets the defaults a mapping
 * without those keys ("{method: fit}") gets from the walk, field by field:
 * both come from the one table. */
static void test_method_shorthand_defaults(void **state) {
    (void)state;
    char cl[1200], path[1300], err[4096], text[4096];
    snprintf(cl, sizeof cl, "%s/configs/clusters/aws-mixed.yaml", env_or("STRATA_SRC", "."));
    snprintf(path, sizeof path, "%s/ev-shorthand.yaml", env_or("STRATA_TMP", "/tmp"));
    snprintf(text, sizeof text, "instances:\n  - {cluster: %s, models: %s}\nmethods:\n  - fit\n"
             "  - {method: fit, name: fit2}\n", cl, cl);
    write_file(path, text);
    eval_spec *s = eval_spec_load(path, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(s->n_methods, 2);
    const eval_method *a = &s->methods[0], *b = &s->methods[1];
    assert_string_equal(a->name, "fit");
    assert_string_equal(b->name, "fit2");
    assert_int_equal(a->family, b->family);
    assert_int_equal(a->solver, b->solver);
    assert_int_equal(a->placer, b->placer);
    assert_int_equal(a->multi, b->multi);
    assert_int_equal(a->fit, b->fit);
    assert_true(a->budget_s == b->budget_s);
    assert_int_equal(a->evals, b->evals);
    assert_string_equal(a->checkpoint, b->checkpoint);
    assert_int_equal(a->decode, b->decode);
    assert_int_equal(a->samples, b->samples);
    assert_int_equal(a->points, b->points);
    assert_true(a->noise == b->noise);
    assert_string_equal(a->type, b->type);
    assert_int_equal(a->max_ps, b->max_ps);
    assert_int_equal(a->truth, b->truth);
    /* the table's figures (docs/eval.md) */
    assert_int_equal(a->points, 6);
    assert_true(a->noise == 0.05);
    assert_int_equal(a->max_ps, 8);
    assert_int_equal(a->samples, 16);
    eval_spec_free(s);
}

/* ---------------------------------------------------------------------------
 * Generated runs: written and read back to the bit
 * ------------------------------------------------------------------------ */

static void test_generated_round_trip(void **state) {
    (void)state;
    char path[1200], err[4096];
    snprintf(path, sizeof path, "%s/gen-base.yaml", env_or("STRATA_TMP", "/tmp"));
    char text[2048];
    snprintf(text, sizeof text, "include: [\"%s/configs/clusters/aws-mixed.yaml\", "
             "\"%s/configs/models/resnet50.yaml\"]\n", env_or("STRATA_SRC", "."),
             env_or("STRATA_SRC", "."));
    write_file(path, text);
    cfg_run *base = cfg_load(path, err, sizeof err);
    if (!base) fail_msg("%s", err);
    int planned = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        eval_rng r;
        eval_rng_seed(&r, seed, 0);
        model_cluster cl;
        assert_int_equal(eval_gen_cluster(&cl, &base->cluster, &r), 0);
        model_job jobs[2];
        int st[2];
        st[0] = eval_gen_model(&jobs[0], &cl, 5 + (int)seed, "a", &r);
        st[1] = eval_gen_model(&jobs[1], &cl, 12, "b", &r);
        assert_true(st[0] >= 0 && st[1] >= 0);
        planned += (st[0] == 0) + (st[1] == 0);
        snprintf(path, sizeof path, "%s/gen-%d.yaml", env_or("STRATA_TMP", "/tmp"), (int)seed);
        assert_int_equal(eval_write_run(path, "test\nround trip", "jct", NULL, &cl, jobs, 2, err,
                                        sizeof err), 0);
        cfg_run *back = cfg_load(path, err, sizeof err);
        if (!back) fail_msg("%s", err);
        const model_cluster *bc = &back->cluster;
        assert_int_equal(bc->n_types, cl.n_types);
        assert_int_equal(bc->n_nodes, cl.n_nodes);
        assert_int_equal(bc->n_zones, cl.n_zones);
        assert_true(bc->inter_bw == cl.inter_bw && bc->inter_latency == cl.inter_latency);
        for (int t = 0; t < cl.n_types; t++) {
            const model_type *p = &cl.types[t], *q = &bc->types[t];
            assert_string_equal(p->name, q->name);
            assert_true(p->is_gpu == q->is_gpu && p->flops == q->flops && p->io_bw == q->io_bw &&
                        p->net_bw == q->net_bw && p->mem == q->mem && p->price == q->price &&
                        p->count == q->count);
        }
        for (int n = 0; n < cl.n_nodes; n++) {
            const model_node *p = &cl.nodes[n], *q = &bc->nodes[n];
            assert_string_equal(p->name, q->name);
            assert_true(p->type == q->type && p->units == q->units &&
                        p->ps_slots == q->ps_slots && p->zone == q->zone && p->bw == q->bw &&
                        p->latency == q->latency && p->loss == q->loss);
        }
        assert_int_equal(back->n_jobs, 2);
        assert_int_equal((int)back->objective, (int)CFG_OBJECTIVE_JCT);
        for (int j = 0; j < 2; j++) {
            const model_job *a = &jobs[j], *b2 = &back->jobs[j];
            assert_string_equal(a->name, b2->name);
            assert_true(a->batch == b2->batch && a->samples == b2->samples &&
                        a->min_throughput == b2->min_throughput && a->alpha == b2->alpha &&
                        a->shard == b2->shard);
            assert_int_equal(a->n_layers, b2->n_layers);
            for (int l = 0; l < a->n_layers; l++) {
                const model_layer *p = &a->layers[l], *q = &b2->layers[l];
                assert_string_equal(p->name, q->name);
                assert_true(p->flops == q->flops && p->io == q->io && p->act == q->act &&
                            p->params == q->params && p->mem == q->mem);
            }
            /* a draw the generator accepts is one exact can plan */
            solve_result *res = solve_result_create(a->n_layers);
            solve_opts so;
            solve_opts_default(&so);
            assert_int_equal(solve_run(b2, bc, &so, res) == 0, st[j] == 0);
            solve_result_free(res);
            eval_gen_job_free(&jobs[j]);
        }
        cfg_free(back);
        eval_gen_cluster_free(&cl);
    }
    assert_true(planned >= 6); /* of 8 models: random clusters can be too small */
    cfg_free(base);
}

/* ---------------------------------------------------------------------------
 * The library: threads and repeats give the same rows
 * ------------------------------------------------------------------------ */

static void test_threads_and_repeats(void **state) {
    (void)state;
    char path[1200], out[1200], err[4096], text[4096];
    const char *src = env_or("STRATA_SRC", ".");
    snprintf(path, sizeof path, "%s/ev-threads.yaml", env_or("STRATA_TMP", "/tmp"));
    snprintf(out, sizeof out, "%s/ev-threads-out", env_or("STRATA_TMP", "/tmp"));
    snprintf(text, sizeof text,
             "seeds: 3\nrepeats: 2\nevals: 3000\ninstances:\n"
             "  - {cluster: %s/configs/clusters/onprem-small.yaml, models: "
             "%s/configs/models/ctr-dlrm.yaml, target: [1, 0.5]}\n"
             "  - {name: g, cluster: %s/configs/clusters/onprem-small.yaml, generate: "
             "{seed: 3, count: 2, cluster: random, layers: [4, 9]}}\n"
             "methods: [exact, random, genetic, spread, best, "
             "{method: fit, points: 5, noise: 10%%}]\n",
             src, src, src);
    write_file(path, text);
    eval_spec *s = eval_spec_load(path, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(s->n_seeds, 3);
    assert_int_equal(s->repeats, 2);
    eval_instance *inst;
    int n_inst;
    if (eval_instances_build(s, out, &inst, &n_inst, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(n_inst, 4);
    assert_string_equal(inst[1].name, "onprem-small/ctr-dlrm@x0.5");
    assert_true(inst[1].run->jobs[0].min_throughput == 20000.0); /* 40000 x 0.5 */
    eval_row *r1, *r3;
    int n1, n3;
    eval_run_opts o1 = {.jobs = 1}, o3 = {.jobs = 3};
    assert_int_equal(eval_run(s, inst, n_inst, &o1, &r1, &n1, err, sizeof err), 0);
    assert_int_equal(eval_run(s, inst, n_inst, &o3, &r3, &n3, err, sizeof err), 0);
    assert_int_equal(n1, 4 * 6 * 3);
    assert_int_equal(n3, n1);
    for (int i = 0; i < n1; i++) {
        if (!eval_row_same(&r1[i], &r3[i])) fail_msg("row %d differs between 1 and 3 threads", i);
        assert_null(strstr(r1[i].note, "NONDETERMINISTIC"));
    }
    /* a lower target never costs more (exact is optimal for each) */
    assert_true(r1[6 * 3].cost <= r1[0].cost);
    free(r1);
    free(r3);
    eval_instances_free(inst, n_inst);
    eval_spec_free(s);
}

/* A training log named by learning_curve: becomes learning_curve.png; a
 * column that is not in the log is an error naming it. */
static void test_learning_curve(void **state) {
    (void)state;
    char path[1300], log[1200], out[1200], err[4096], text[4096];
    const char *tmp = env_or("STRATA_TMP", "/tmp"), *src = env_or("STRATA_SRC", ".");
    snprintf(log, sizeof log, "%s/ev-metrics.csv", tmp);
    FILE *f = fopen(log, "w");
    assert_non_null(f);
    fprintf(f, "step,seconds,mean_cost,best_cost\n");
    for (int i = 0; i <= 50; i++) fprintf(f, "%d,%g,%g,%g\n", i, 0.5 * i, 100.0 / (1 + i), 90.0);
    fclose(f);
    snprintf(out, sizeof out, "%s/ev-curve-out", tmp);
    for (int bad = 0; bad <= 1; bad++) {
        snprintf(path, sizeof path, "%s/ev-curve.yaml", tmp);
        snprintf(text, sizeof text,
                 "instances: [{cluster: %s/configs/clusters/onprem-small.yaml, models: "
                 "%s/configs/models/ctr-dlrm.yaml}]\nmethods: [exact]\n"
                 "learning_curve: {log: ev-metrics.csv, x: step, y: %s, y_label: \"cost ($)\"}\n",
                 src, src, bad ? "reward" : "mean_cost");
        write_file(path, text);
        eval_spec *s = eval_spec_load(path, err, sizeof err);
        if (!s) fail_msg("%s", err);
        assert_string_equal(s->curve.file, log); /* relative to the config */
        eval_instance *inst;
        int n_inst, n_rows;
        eval_row *rows;
        assert_int_equal(eval_instances_build(s, out, &inst, &n_inst, err, sizeof err), 0);
        eval_run_opts o = {.jobs = 1};
        assert_int_equal(eval_run(s, inst, n_inst, &o, &rows, &n_rows, err, sizeof err), 0);
        eval_plots plots;
        int rc = eval_plots_make(out, s, inst, n_inst, rows, n_rows, 1, &plots, err, sizeof err);
        if (bad) {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err, "has no column 'reward'"));
        } else {
            if (rc) fail_msg("%s", err);
            snprintf(path, sizeof path, "%s/plots/learning_curve.png", out);
            assert_true(file_is_png(path));
            int listed = 0;
            for (int i = 0; i < plots.n; i++) listed |= !strcmp(plots.file[i], "plots/learning_curve.png");
            assert_true(listed);
        }
        free(rows);
        eval_instances_free(inst, n_inst);
        eval_spec_free(s);
    }
}

/* copy_file copies src to dst byte for byte; fails the test otherwise. */
static void copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* Paths eval writes into YAML go through libyaml's emitter. A folder named
 * with a tab, a double quote, a colon and a line break holds the spec, its
 * cluster and model and the --out folder: eval runs (before, its probe
 * file `include: ["...", "..."]` broke on the quote, and a line break in
 * double quotes folds into a space: another file), every instance file
 * loads back with the cluster it names, and eval_yaml_quote's output reads
 * back as the same string (and invalid UTF-8 is refused). */
static void test_awkward_paths(void **state) {
    (void)state;
    const char *src = env_or("STRATA_SRC", ".");
    char dir[1200], path[1400], out[1300], cmd[4400];
    snprintf(dir, sizeof dir, "%s/ev\tq\"c:o\nn #x", env_or("STRATA_TMP", "/tmp"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    assert_int_equal(system(cmd), 0);
    char from[1200];
    snprintf(from, sizeof from, "%s/configs/clusters/onprem-small.yaml", src);
    snprintf(path, sizeof path, "%s/onprem-small.yaml", dir);
    copy_file(from, path);
    snprintf(from, sizeof from, "%s/configs/models/resnet50.yaml", src);
    snprintf(path, sizeof path, "%s/resnet50.yaml", dir);
    copy_file(from, path);
    snprintf(path, sizeof path, "%s/spec.yaml", dir);
    write_file(path, "name: w\nseeds: [1]\ninstances:\n  - cluster: onprem-small.yaml\n"
                     "    models: [resnet50.yaml]\n  - name: gen\n    cluster: onprem-small.yaml\n"
                     "    generate: {seed: 7, count: 1, layers: [4, 6]}\nmethods: [exact]\n");
    snprintf(out, sizeof out, "%s/out\t\"o:\n", dir);
    snprintf(cmd, sizeof cmd, "'%s' eval '%s' --out '%s' --quiet --no-times",
             env_or("STRATA_BIN", "strata"), path, out);
    assert_int_equal(system(cmd), 0);
    const char *files[] = {"onprem-small_resnet50.yaml", "gen-1.yaml"};
    for (int i = 0; i < 2; i++) {
        char f[1500], err[1024];
        snprintf(f, sizeof f, "%s/instances/%s", out, files[i]);
        cfg_run *run = cfg_load(f, err, sizeof err);
        if (!run) fail_msg("%s", err);
        assert_int_equal(run->n_jobs, 1);
        if (i == 0) assert_int_equal(run->cluster.n_types, 3); /* the included onprem-small */
        cfg_free(run);
    }

    const char *strs[] = {"a\tb\"c:d\ne #f\\g", "  lead: and trail  ", "ü/日本/\x01\x7f", ""};
    for (int i = 0; i < 4; i++) {
        char q[256], doc[300], err[1024];
        assert_int_equal(eval_yaml_quote(q, sizeof q, strs[i]), 0);
        assert_int_equal(q[0], '"');
        assert_null(strchr(q, '\n'));
        assert_null(strchr(q, '\t'));
        /* libyaml's parser reads it back as the one scalar of a document */
        snprintf(doc, sizeof doc, "key: %s\n", q);
        yaml_parser_t p;
        yaml_document_t d;
        assert_true(yaml_parser_initialize(&p));
        yaml_parser_set_input_string(&p, (const unsigned char *)doc, strlen(doc));
        assert_true(yaml_parser_load(&p, &d));
        yaml_node_t *root = yaml_document_get_root_node(&d);
        assert_non_null(root);
        assert_int_equal(root->type, YAML_MAPPING_NODE);
        yaml_node_t *v = yaml_document_get_node(&d, root->data.mapping.pairs.start->value);
        assert_int_equal(v->type, YAML_SCALAR_NODE);
        snprintf(err, sizeof err, "%.*s", (int)v->data.scalar.length,
                 (const char *)v->data.scalar.value);
        assert_string_equal(err, strs[i]);
        yaml_document_delete(&d);
        yaml_parser_delete(&p);
    }
    char small[4];
    assert_int_equal(eval_yaml_quote(small, sizeof small, "abcdef"), -1);
    assert_string_equal(small, "");
    char q[64];
    assert_int_equal(eval_yaml_quote(q, sizeof q, "bad \xff utf-8"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_method_shorthand_defaults),
        cmocka_unit_test(test_generated_round_trip),
        cmocka_unit_test(test_threads_and_repeats),
        cmocka_unit_test(test_learning_curve),
        cmocka_unit_test(test_quick_run),
        cmocka_unit_test(test_awkward_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
