/* bands.c -- the by-size table of a policy's gaps (see bands.h). */
#include "eval/bands.h"

#include <math.h>
#include <stdlib.h>

#include "agent/policy.h"
#include "solvers/placers.h"

static const int BAND_LO[EVAL_BANDS] = {1, 9, 17, 33, 65};
static const int BAND_HI[EVAL_BANDS] = {8, 16, 32, 64, 1 << 30};

static int band_of(int layers) {
    for (int b = 0; b < EVAL_BANDS; b++)
        if (layers <= BAND_HI[b]) return b;
    return EVAL_BANDS - 1;
}

/* find returns the first POLICY method decoding `decode` with placer
 * `placer`, or -1. */
static int find(const eval_spec *spec, int decode, int placer, int polish) {
    for (int m = 0; m < spec->n_methods; m++) {
        const eval_method *me = &spec->methods[m];
        if (me->family == EVAL_FAM_POLICY && me->decode == decode && me->placer == placer &&
            !me->polish == !polish)
            return m;
    }
    return -1;
}

/* find_placed returns the first POLICY method placed by `placer`, any
 * decode, whose node head samples placements (sampled 1) or does not
 * (sampled 0), or -1. */
static int find_placed(const eval_spec *spec, int placer, int sampled) {
    for (int m = 0; m < spec->n_methods; m++)
        if (spec->methods[m].family == EVAL_FAM_POLICY && spec->methods[m].placer == placer &&
            (spec->methods[m].node_samples > 0) == sampled)
            return m;
    return -1;
}

/* node_count adds the comparison of placement row n with best's row be to
 * (*count, *ok): a job counts when either placed, and is ok when n costs
 * at most best's (1e-9 relative slack) or best found none. */
static void node_count(const eval_row *n, const eval_row *be, int *count, int *ok) {
    if (!n || !be || !(n->feasible || be->feasible)) return;
    (*count)++;
    if (!be->feasible || (n->feasible && n->cost <= be->cost * (1 + 1e-9))) (*ok)++;
}

/* row_of returns the first-seed row of (inst, method), or NULL. */
static const eval_row *row_of(const eval_row *rows, int n_rows, int inst, int method) {
    for (int i = 0; i < n_rows; i++)
        if (rows[i].inst == inst && rows[i].method == method && rows[i].seed_idx == 0 &&
            rows[i].job >= 0)
            return &rows[i];
    return NULL;
}

/* mean_gap_over_seeds returns the mean gap of (inst, method) over the
 * seeds whose row has one, or NAN when none does. */
static double mean_gap_over_seeds(const eval_row *rows, int n_rows, int inst, int method) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < n_rows; i++)
        if (rows[i].inst == inst && rows[i].method == method && rows[i].job >= 0 &&
            isfinite(rows[i].gap)) {
            sum += rows[i].gap;
            n++;
        }
    return n ? sum / n : NAN;
}

int eval_bands(const eval_spec *spec, const eval_row *rows, int n_rows, eval_band *b) {
    int mg = find(spec, AGENT_DECODE_GREEDY, PLACER_PLACE_NONE, 0);
    int ms = find(spec, AGENT_DECODE_SAMPLE, PLACER_PLACE_NONE, 0);
    int mp = find(spec, AGENT_DECODE_SAMPLE, PLACER_PLACE_NONE, 1);
    int mn = find_placed(spec, PLACER_PLACE_POLICY, 0);
    int mns = find_placed(spec, PLACER_PLACE_POLICY, 1);
    int mb = find_placed(spec, PLACER_BEST, 0);
    for (int k = 0; k < EVAL_BANDS; k++) {
        b[k] = (eval_band){.lo = BAND_LO[k], .hi = BAND_HI[k], .greedy_mean = NAN,
                           .greedy_worst = NAN, .sample_mean = NAN, .polish_mean = NAN};
    }
    if (mg < 0) return 0;
    double sg[EVAL_BANDS] = {0}, ss[EVAL_BANDS] = {0}, sp[EVAL_BANDS] = {0};
    for (int i = 0; i < n_rows; i++) {
        const eval_row *g = &rows[i];
        if (g->method != mg || g->seed_idx != 0 || g->job < 0 || g->objective != EVAL_OBJ_COST)
            continue;
        eval_band *bb = &b[band_of(g->layers)];
        int k = band_of(g->layers);
        bb->jobs++;
        if (isfinite(g->gap)) {
            sg[k] += g->gap;
            bb->greedy_worst = bb->gap_n ? fmax(bb->greedy_worst, g->gap) : g->gap;
            bb->gap_n++;
        }
        if (!g->feasible && isfinite(g->reference)) bb->no_plan++;
        double sgap = ms >= 0 ? mean_gap_over_seeds(rows, n_rows, g->inst, ms) : NAN;
        if (isfinite(sgap)) {
            ss[k] += sgap;
            bb->sample_n++;
        }
        double pgap = mp >= 0 ? mean_gap_over_seeds(rows, n_rows, g->inst, mp) : NAN;
        if (isfinite(pgap)) {
            sp[k] += pgap;
            bb->polish_n++;
        }
        const eval_row *be = mb >= 0 ? row_of(rows, n_rows, g->inst, mb) : NULL;
        node_count(mn >= 0 ? row_of(rows, n_rows, g->inst, mn) : NULL, be, &bb->node_n,
                   &bb->node_ok);
        node_count(mns >= 0 ? row_of(rows, n_rows, g->inst, mns) : NULL, be, &bb->nodes_n,
                   &bb->nodes_ok);
    }
    for (int k = 0; k < EVAL_BANDS; k++) {
        if (b[k].gap_n) b[k].greedy_mean = sg[k] / b[k].gap_n;
        if (b[k].sample_n) b[k].sample_mean = ss[k] / b[k].sample_n;
        if (b[k].polish_n) b[k].polish_mean = sp[k] / b[k].polish_n;
    }
    return 1;
}

static void pct(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, " %.2f%% |", 100 * v);
    else fprintf(f, " - |");
}

int eval_bands_write(FILE *f, const eval_spec *spec, const eval_row *rows, int n_rows) {
    eval_band b[EVAL_BANDS];
    if (!eval_bands(spec, rows, n_rows, b)) return 0;
    int mns = find_placed(spec, PLACER_PLACE_POLICY, 1);
    int mp = find(spec, AGENT_DECODE_SAMPLE, PLACER_PLACE_NONE, 1);
    fprintf(f, "| layers | jobs | greedy gap mean | greedy gap worst | no plan | best-of-N gap "
               "mean |");
    if (mp >= 0) fprintf(f, " best-of-%d + polish gap mean |", spec->methods[mp].samples);
    fprintf(f, " node head >= best |");
    if (mns >= 0)
        fprintf(f, " node head, best of %d placements >= best |",
                spec->methods[mns].node_samples + 1);
    fprintf(f, "\n|---|---:|---:|---:|---:|---:|%s---:|%s\n", mp >= 0 ? "---:|" : "",
            mns >= 0 ? "---:|" : "");
    for (int k = 0; k < EVAL_BANDS; k++) {
        if (k == EVAL_BANDS - 1 && b[k].jobs == 0) continue;
        if (k == EVAL_BANDS - 1) fprintf(f, "| %d+ | %d |", b[k].lo, b[k].jobs);
        else fprintf(f, "| %d-%d | %d |", b[k].lo, b[k].hi, b[k].jobs);
        pct(f, b[k].greedy_mean);
        pct(f, b[k].greedy_worst);
        fprintf(f, " %d |", b[k].no_plan);
        pct(f, b[k].sample_mean);
        if (mp >= 0) pct(f, b[k].polish_mean);
        if (b[k].node_n) fprintf(f, " %d/%d |", b[k].node_ok, b[k].node_n);
        else fprintf(f, " - |");
        if (mns >= 0 && b[k].nodes_n) fprintf(f, " %d/%d |", b[k].nodes_ok, b[k].nodes_n);
        else if (mns >= 0) fprintf(f, " - |");
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
    return 1;
}
