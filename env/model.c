/* model.c -- the stage plan of docs/model.md §2: stages, units, cost.
 *
 * model_eval() is the one place where a layer-to-type assignment becomes a
 * cost. It walks the assignment once, closing a stage at every change of
 * type, computes the per-unit step time of each stage, provisions the
 * smallest number of units that reaches the throughput target, then checks
 * memory (per stage) and capacity (per type, summed over stages). It never
 * allocates: a plan is created once for the largest job and reused, which
 * keeps solvers that score millions of assignments fast.
 */
#include "env/model.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"

model_plan *model_plan_create(int max_layers) {
    if (max_layers < 1) max_layers = 1;
    model_plan *plan = calloc(1, sizeof(*plan));
    if (!plan) return NULL;
    plan->stages = calloc((size_t)max_layers, sizeof(*plan->stages));
    if (!plan->stages) {
        free(plan);
        return NULL;
    }
    plan->cap = max_layers;
    return plan;
}

void model_plan_free(model_plan *plan) {
    if (!plan) return;
    free(plan->stages);
    free(plan);
}

/* dup_array returns a malloc'd copy of n elements of size elem at src, or
 * NULL (also when n is 0 or src NULL: nothing to copy). */
static void *dup_array(const void *src, size_t n, size_t elem) {
    if (!src || n == 0) return NULL;
    void *p = malloc(n * elem);
    if (p) memcpy(p, src, n * elem);
    return p;
}

int model_cluster_copy(model_cluster *dst, const model_cluster *src) {
    size_t nz = (size_t)(src->n_zones > 0 ? src->n_zones : 0);
    *dst = *src;
    dst->types = dup_array(src->types, (size_t)src->n_types, sizeof *src->types);
    dst->nodes = dup_array(src->nodes, (size_t)src->n_nodes, sizeof *src->nodes);
    dst->zones = dup_array(src->zones, nz, sizeof *src->zones);
    dst->zone_bw = dup_array(src->zone_bw, nz * nz, sizeof *src->zone_bw);
    dst->zone_lat = dup_array(src->zone_lat, nz * nz, sizeof *src->zone_lat);
    if ((src->types && src->n_types > 0 && !dst->types) || (src->nodes && src->n_nodes > 0 && !dst->nodes) ||
        (src->zones && nz > 0 && !dst->zones) || (src->zone_bw && nz > 0 && !dst->zone_bw) ||
        (src->zone_lat && nz > 0 && !dst->zone_lat)) {
        model_cluster_clear(dst);
        return -1;
    }
    return 0;
}

void model_cluster_clear(model_cluster *cl) {
    free(cl->types);
    free(cl->nodes);
    free(cl->zones);
    free(cl->zone_bw);
    free(cl->zone_lat);
    memset(cl, 0, sizeof *cl);
}

/* k_s from docs/model.md §2: with q = R t / B, 1 when q <= 1, none (0) when
 * alpha q >= 1, else ceil(q (1 - alpha) / (1 - alpha q) - 1e-9). The 1e-9
 * keeps an exact boundary (theta(k) == R in real arithmetic) at k. */
int model_units(double step, double B, double R, double alpha) {
    double q = R * step / B;
    if (q <= 1.0) return 1;
    if (alpha * q >= 1.0) return 0;
    double k = ceil(q * (1.0 - alpha) / (1.0 - alpha * q) - 1e-9);
    if (k < 1.0) k = 1.0;
    if (k > (double)INT32_MAX) return 0; /* unreachable in any real cluster */
    return (int)k;
}

double model_stage_throughput(double step, double B, int k, double alpha) {
    return (B / step) * (double)k / (1.0 + alpha * (double)(k - 1));
}

double model_curve_eval(const model_curve *curve, double p, double w) {
    const double *th = curve->th;
    double den = th[0] + th[1] * w / p + th[2] * w + th[3] * p;
    return den > 0.0 ? w / den : INFINITY;
}

double model_curve_alpha(const model_curve *curve, int p) {
    const double *th = curve->th;
    double den = th[0] + th[1] / p + th[2] + th[3] * p;
    return den > 0.0 ? (th[1] / p + th[2]) / den : 0.0;
}

double model_stage_alpha(const model_job *job, int n_ps) {
    return job->curve.fitted ? model_curve_alpha(&job->curve, n_ps) : job->alpha;
}

void model_stage_eval(const model_job *job, const model_cluster *cl, int t,
                      int first, int last, model_stage *st) {
    model_span sum = {0, 0, 0, 0, 0};
    for (int l = first; l <= last; l++) {
        sum.flops += job->layers[l].flops;
        sum.io += job->layers[l].io;
        sum.params += job->layers[l].params;
        sum.mem += job->layers[l].mem;
    }
    if (first > 0) sum.act += job->layers[first - 1].act;
    if (last < job->n_layers - 1) sum.act += job->layers[last].act;
    model_stage_fill(job, cl, t, first, last, &sum, st);
}

void model_stage_fill(const model_job *job, const model_cluster *cl, int t,
                      int first, int last, const model_span *sum,
                      model_stage *st) {
    const model_type *ty = &cl->types[t];
    const double B = job->batch;
    st->type = t;
    st->first = first;
    st->last = last;
    st->compute = B * sum->flops / ty->flops;
    st->io = B * sum->io / ty->io_bw;
    st->xfer = 2.0 * B * sum->act / ty->net_bw;
    st->sync = 2.0 * sum->params / ty->net_bw;
    st->step = fmax(st->compute, st->io) + st->xfer + st->sync;
    st->mem = sum->mem;
    st->params = sum->params;
    double g = ceil(sum->params / job->shard);
    st->n_ps = g < 1.0 ? 1 : (g > 1e6 ? 1000000 : (int)g);
    double alpha = model_stage_alpha(job, st->n_ps);
    st->units = model_units(st->step, B, job->min_throughput, alpha);
    st->throughput = st->units
        ? model_stage_throughput(st->step, B, st->units, alpha) : 0.0;
}

int model_eval(const model_job *job, const model_cluster *cl,
               const int *assign, model_plan *plan) {
    assert(plan->cap >= job->n_layers);
    plan->n_stages = 0;
    plan->reason = MODEL_FEASIBLE;
    plan->bad_stage = -1;
    plan->bad_type = -1;
    plan->why[0] = '\0';
    plan->throughput = plan->time = plan->cost = plan->unit_price = 0.0;
    plan->placed = 0;
    plan->cross_node_bytes = plan->cross_zone_bytes = 0.0;

    /* Cut into maximal runs of one type and score each stage. */
    for (int first = 0; first < job->n_layers;) {
        int t = assign[first];
        assert(t >= 0 && t < cl->n_types);
        int last = first;
        while (last + 1 < job->n_layers && assign[last + 1] == t) last++;
        model_stage_eval(job, cl, t, first, last, &plan->stages[plan->n_stages++]);
        first = last + 1;
    }

    /* Memory and throughput, stage by stage; the first broken rule wins. */
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        const model_type *ty = &cl->types[st->type];
        if (st->mem > ty->mem) {
            char need[32], have[32];
            bytes_format(need, sizeof need, st->mem, &BYTES_IEC);
            bytes_format(have, sizeof have, ty->mem, &BYTES_IEC);
            snprintf(plan->why, sizeof plan->why,
                     "memory: stage %d (layers %s..%s on %s) needs %s, a unit has %s",
                     s, job->layers[st->first].name, job->layers[st->last].name,
                     ty->name, need, have);
            plan->reason = MODEL_ERR_MEMORY;
            plan->bad_stage = s;
            plan->bad_type = st->type;
            return plan->reason;
        }
        if (st->units == 0) {
            snprintf(plan->why, sizeof plan->why,
                     "throughput: stage %d (layers %s..%s on %s) peaks at %.6g samples/s, "
                     "below the target %.6g for any number of units",
                     s, job->layers[st->first].name, job->layers[st->last].name,
                     ty->name, job->batch / (st->step * model_stage_alpha(job, st->n_ps)),
                     job->min_throughput);
            plan->reason = MODEL_ERR_THROUGHPUT;
            plan->bad_stage = s;
            plan->bad_type = st->type;
            return plan->reason;
        }
    }

    /* Capacity: units of each type summed over its stages. Types are few;
     * a per-type tally on the stack keeps this allocation-free. */
    long need[MODEL_MAX_TYPES] = {0};
    assert(cl->n_types <= MODEL_MAX_TYPES);
    for (int s = 0; s < plan->n_stages; s++)
        need[plan->stages[s].type] += plan->stages[s].units;
    for (int t = 0; t < cl->n_types; t++) {
        if (need[t] > cl->types[t].count) {
            snprintf(plan->why, sizeof plan->why,
                     "capacity: the plan needs %ld units of %s, %d are free",
                     need[t], cl->types[t].name, cl->types[t].count);
            plan->reason = MODEL_ERR_CAPACITY;
            plan->bad_type = t;
            return plan->reason;
        }
    }

    double theta = INFINITY, price = 0.0;
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        if (st->throughput < theta) theta = st->throughput;
        price += st->units * cl->types[st->type].price;
    }
    plan->throughput = theta;
    plan->time = job->samples / theta;
    plan->unit_price = price;
    plan->cost = plan->time / 3600.0 * price;
    return MODEL_FEASIBLE;
}

/* Marks plan infeasible for reason at stage s / type t (-1: none). */
static int set_counts_fail(model_plan *plan, int reason, int s, int t) {
    plan->reason = (model_reason)reason;
    plan->bad_stage = s;
    plan->bad_type = t;
    plan->throughput = plan->time = plan->cost = plan->unit_price = 0.0;
    return reason;
}

int model_plan_set_counts(const model_job *job, const model_cluster *cl, model_plan *plan,
                          int workers, int ps) {
    assert(plan->reason == MODEL_FEASIBLE && plan->n_stages > 0);
    int kw = 0, kp = 0, S = plan->n_stages;
    for (int s = 0; s < S; s++) {
        kw += plan->stages[s].units;
        kp += plan->stages[s].n_ps;
    }
    if (workers > 0 && workers < kw) {
        snprintf(plan->why, sizeof plan->why, "capacity: the plan needs %d workers over its %d "
                 "stages to reach the job's min_throughput, %d asked", kw, S, workers);
        return set_counts_fail(plan, MODEL_ERR_CAPACITY, -1, -1);
    }
    if (ps > 0 && ps < kp) {
        snprintf(plan->why, sizeof plan->why, "capacity: the plan needs %d ps tasks over its %d "
                 "stages, %d asked", kp, S, ps);
        return set_counts_fail(plan, MODEL_ERR_CAPACITY, -1, -1);
    }
    for (; workers > kw; kw++) {
        int best = 0;
        for (int s = 1; s < S; s++)
            if (plan->stages[s].units < plan->stages[best].units) best = s;
        plan->stages[best].units++;
    }
    for (; ps > kp; kp++) {
        int best = 0;
        for (int s = 1; s < S; s++)
            if (plan->stages[s].n_ps < plan->stages[best].n_ps) best = s;
        plan->stages[best].n_ps++;
    }
    long need[MODEL_MAX_TYPES] = {0};
    double theta = INFINITY, price = 0.0;
    for (int s = 0; s < S; s++) {
        model_stage *st = &plan->stages[s];
        const model_type *ty = &cl->types[st->type];
        st->throughput = model_stage_throughput(st->step, job->batch, st->units,
                                                model_stage_alpha(job, st->n_ps));
        if (st->throughput < job->min_throughput) {
            snprintf(plan->why, sizeof plan->why, "throughput: stage %d (layers %s..%s on %s) "
                     "with %d workers and %d ps tasks reaches %.6g samples/s, below the target "
                     "%.6g", s, job->layers[st->first].name, job->layers[st->last].name,
                     ty->name, st->units, st->n_ps, st->throughput, job->min_throughput);
            return set_counts_fail(plan, MODEL_ERR_THROUGHPUT, s, st->type);
        }
        need[st->type] += st->units;
        if (st->throughput < theta) theta = st->throughput;
        price += st->units * ty->price;
    }
    for (int t = 0; t < cl->n_types; t++)
        if (need[t] > cl->types[t].count) {
            snprintf(plan->why, sizeof plan->why, "capacity: with %d workers the plan needs %ld "
                     "units of %s, %d are free", kw, need[t], cl->types[t].name,
                     cl->types[t].count);
            return set_counts_fail(plan, MODEL_ERR_CAPACITY, -1, t);
        }
    plan->throughput = theta;
    plan->time = job->samples / theta;
    plan->unit_price = price;
    plan->cost = plan->time / 3600.0 * price;
    return MODEL_FEASIBLE;
}

int model_eval_counts(const model_job *job, const model_cluster *cl, const int *assign,
                      int workers, int ps, model_plan *plan) {
    int rc = model_eval(job, cl, assign, plan);
    if (rc == MODEL_FEASIBLE && (workers > 0 || ps > 0))
        rc = model_plan_set_counts(job, cl, plan, workers, ps);
    return rc;
}

int model_job_check(const model_job *job, int *bad_layer, char *err, size_t errlen) {
    int bad = -1, zero = 0;
    *bad_layer = -1;
    for (int l = 0; l < job->n_layers; l++) {
        const model_layer *ly = &job->layers[l];
        if (ly->flops > 0.0 || ly->io > 0.0) continue;
        if (bad < 0) bad = l;
        zero += ly->params == 0.0;
    }
    if (bad < 0) return 0;
    if (zero == job->n_layers) {
        snprintf(err, errlen, "job %s: every layer has flops, io and params 0: the job does no "
                 "work and its throughput would be infinite; give the layers' figures",
                 job->name);
        return -1;
    }
    *bad_layer = bad;
    snprintf(err, errlen, "job %s: layer '%s' has flops 0 and io 0: a stage of it alone does no "
             "work per sample and its throughput can be infinite; give its forward + backward "
             "FLOP (or the input bytes it reads)", job->name, job->layers[bad].name);
    return -1;
}

int model_cluster_type(const model_cluster *cl, const char *name) {
    for (int t = 0; t < cl->n_types; t++)
        if (strcmp(cl->types[t].name, name) == 0) return t;
    return -1;
}

int model_assign_parse(const model_job *job, const model_cluster *cl,
                       const char *text, int *assign, char *err, size_t errlen) {
    int n = 0;
    const char *p = text;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        char name[MODEL_NAME_MAX];
        if (len == 0 || len >= sizeof name) {
            snprintf(err, errlen, "--assign: entry %d is %s", n + 1,
                     len ? "too long" : "empty");
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        int t = model_cluster_type(cl, name);
        if (t < 0) {
            snprintf(err, errlen, "--assign: entry %d: no type named '%s' in the cluster",
                     n + 1, name);
            return -1;
        }
        if (n >= job->n_layers) {
            snprintf(err, errlen, "--assign: more than the job's %d layers",
                     job->n_layers);
            return -1;
        }
        assign[n++] = t;
        if (!e) break;
        p = e + 1;
    }
    if (n == 1 && job->n_layers > 1) {
        for (int l = 1; l < job->n_layers; l++) assign[l] = assign[0];
        return 0;
    }
    if (n != job->n_layers) {
        snprintf(err, errlen, "--assign: %d types given for the job's %d layers",
                 n, job->n_layers);
        return -1;
    }
    return 0;
}
