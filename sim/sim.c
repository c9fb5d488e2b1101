/* sim.c -- the event loop, occupancy and plan cache of strata simulate
 * (see sim.h).
 *
 * Events (arrivals, completions) sit in a binary min-heap ordered by
 * (time, kind, sequence): completions before arrivals of the same
 * instant, and otherwise the order they were pushed in, so that ties are
 * broken the same way on every run. Occupancy is incremental: starting a
 * job subtracts its units from the free counts and from nodes taken first
 * fit; completion gives them back.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/methods.h"
#include "solvers/solve.h"

enum { EV_DONE = 0, EV_ARRIVE = 1 };

typedef struct {
    double time;
    int kind; /* EV_DONE before EV_ARRIVE at one instant */
    int job;
    long seq;
} event;

/* One (model, target) class: its exact plan on the empty cluster. */
typedef struct {
    int model;
    double target;
    int state;       /* 0 not solved yet, 1 has a plan, 2 none exists */
    int *assign;     /* [n_layers] when state == 1 */
    model_plan *plan; /* when state == 1, scored with the first job's samples */
    long fail_version; /* occupancy version at which the free units had no plan */
    char why[160];
} plan_class;

struct sim {
    const sim_trace *t;
    const sim_method *m;
    void *mstate;
    model_cluster full, freec; /* types only */
    int n_nodes;               /* real and virtual */
    int *node_type, *node_cap, *node_used;
    model_job *jobs;           /* [n_jobs] the trace's jobs as the model sees them */
    int *cls;                  /* [n_jobs] class of each job */
    int n_cls;
    plan_class *classes;
    sim_outcome *out;
    int **alloc;               /* [n_jobs] node, units pairs (-1 ended), while running */
    int *queue, q_len;
    event *heap;
    int n_heap, heap_cap;
    long seq;
    double now;
    long version; /* bumped at every start and completion */
    sim_sample *samples;
    int n_samples, cap_samples;
    int max_layers;
    model_plan *scratch;
    solve_result *res;
    int *assign_buf;
    solve_opts so;
    void *marg;    /* the method's argument (sim_create_with), borrowed */
    int n_running; /* jobs holding units now */
};

/* ---------------------------------------------------------------------------
 * The event heap
 * ------------------------------------------------------------------------ */

static int ev_less(const event *a, const event *b) {
    if (a->time != b->time) return a->time < b->time;
    if (a->kind != b->kind) return a->kind < b->kind;
    return a->seq < b->seq;
}

static int heap_push(sim *s, double time, int kind, int job) {
    if (s->n_heap == s->heap_cap) {
        int cap = s->heap_cap ? 2 * s->heap_cap : 64;
        event *h = realloc(s->heap, sizeof *h * (size_t)cap);
        if (!h) return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    int i = s->n_heap++;
    s->heap[i] = (event){time, kind, job, s->seq++};
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ev_less(&s->heap[i], &s->heap[p])) break;
        event tmp = s->heap[p];
        s->heap[p] = s->heap[i];
        s->heap[i] = tmp;
        i = p;
    }
    return 0;
}

static event heap_pop(sim *s) {
    event top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n_heap && ev_less(&s->heap[l], &s->heap[m])) m = l;
        if (r < s->n_heap && ev_less(&s->heap[r], &s->heap[m])) m = r;
        if (m == i) break;
        event tmp = s->heap[m];
        s->heap[m] = s->heap[i];
        s->heap[i] = tmp;
        i = m;
    }
    return top;
}

/* ---------------------------------------------------------------------------
 * Set-up
 * ------------------------------------------------------------------------ */

static int copy_types(model_cluster *dst, const model_cluster *src) {
    memset(dst, 0, sizeof *dst);
    dst->n_types = src->n_types;
    dst->types = malloc(sizeof *dst->types * (size_t)src->n_types);
    if (!dst->types) return -1;
    memcpy(dst->types, src->types, sizeof *dst->types * (size_t)src->n_types);
    dst->inter_bw = src->inter_bw;
    dst->inter_latency = src->inter_latency;
    return 0;
}

void sim_free(sim *s) {
    if (!s) return;
    if (s->m && s->m->destroy) s->m->destroy(s->mstate);
    free(s->full.types);
    free(s->freec.types);
    free(s->node_type);
    free(s->node_cap);
    free(s->node_used);
    free(s->jobs);
    free(s->cls);
    for (int c = 0; c < s->n_cls; c++) {
        free(s->classes[c].assign);
        model_plan_free(s->classes[c].plan);
    }
    free(s->classes);
    free(s->out);
    if (s->alloc)
        for (int j = 0; j < s->t->n_jobs; j++) free(s->alloc[j]);
    free(s->alloc);
    free(s->queue);
    free(s->heap);
    free(s->samples);
    model_plan_free(s->scratch);
    solve_result_free(s->res);
    free(s->assign_buf);
    free(s);
}

sim *sim_create(const sim_trace *t, const model_cluster *cl, const sim_method *m, char *err,
                size_t errlen) {
    return sim_create_with(t, cl, m, NULL, err, errlen);
}

sim *sim_create_with(const sim_trace *t, const model_cluster *cl, const sim_method *m, void *arg,
                     char *err, size_t errlen) {
    sim *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->t = t;
    s->marg = arg;
    int n = t->n_jobs;
    if (copy_types(&s->full, cl) || copy_types(&s->freec, cl)) goto oom;
    /* nodes, and one virtual node per type that has none */
    int has[MODEL_MAX_TYPES] = {0};
    for (int i = 0; i < cl->n_nodes; i++) has[cl->nodes[i].type] = 1;
    int nn = cl->n_nodes;
    for (int ty = 0; ty < cl->n_types; ty++) nn += !has[ty];
    s->node_type = calloc((size_t)nn, sizeof *s->node_type);
    s->node_cap = calloc((size_t)nn, sizeof *s->node_cap);
    s->node_used = calloc((size_t)nn, sizeof *s->node_used);
    if (!s->node_type || !s->node_cap || !s->node_used) goto oom;
    for (int i = 0; i < cl->n_nodes; i++) {
        s->node_type[i] = cl->nodes[i].type;
        s->node_cap[i] = cl->nodes[i].units;
    }
    s->n_nodes = cl->n_nodes;
    for (int ty = 0; ty < cl->n_types; ty++)
        if (!has[ty]) {
            s->node_type[s->n_nodes] = ty;
            s->node_cap[s->n_nodes++] = cl->types[ty].count;
        }
    /* jobs and their classes */
    s->jobs = calloc((size_t)n, sizeof *s->jobs);
    s->cls = calloc((size_t)n, sizeof *s->cls);
    s->classes = calloc((size_t)n, sizeof *s->classes);
    s->out = calloc((size_t)n, sizeof *s->out);
    s->alloc = calloc((size_t)n, sizeof *s->alloc);
    s->queue = calloc((size_t)n, sizeof *s->queue);
    if (!s->jobs || !s->cls || !s->classes || !s->out || !s->alloc || !s->queue) goto oom;
    for (int j = 0; j < n; j++) {
        const sim_job *tj = &t->jobs[j];
        s->jobs[j] = t->models[tj->model].run->jobs[0];
        s->jobs[j].min_throughput = tj->target;
        s->jobs[j].samples = tj->samples;
        snprintf(s->jobs[j].name, sizeof s->jobs[j].name, "%s", tj->name);
        if (s->jobs[j].n_layers > s->max_layers) s->max_layers = s->jobs[j].n_layers;
        int c = 0;
        for (; c < s->n_cls; c++)
            if (s->classes[c].model == tj->model && s->classes[c].target == tj->target) break;
        if (c == s->n_cls) {
            s->classes[c].model = tj->model;
            s->classes[c].target = tj->target;
            s->classes[c].fail_version = -1;
            s->n_cls++;
        }
        s->cls[j] = c;
        s->out[j].state = SIM_PENDING;
        s->out[j].start = s->out[j].finish = NAN;
    }
    s->scratch = model_plan_create(s->max_layers > 0 ? s->max_layers : 1);
    s->res = solve_result_create(s->max_layers > 0 ? s->max_layers : 1);
    s->assign_buf = calloc((size_t)(s->max_layers > 0 ? s->max_layers : 1), sizeof(int));
    if (!s->scratch || !s->res || !s->assign_buf) goto oom;
    solve_opts_default(&s->so);
    s->m = m;
    if (m->create && m->create(s, &s->mstate, err, errlen)) {
        s->m = NULL; /* nothing of its state to destroy */
        sim_free(s);
        return NULL;
    }
    return s;
oom:
    snprintf(err, errlen, "out of memory");
    sim_free(s);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * What methods see
 * ------------------------------------------------------------------------ */

double sim_now(const sim *s) { return s->now; }
const sim_trace *sim_get_trace(const sim *s) { return s->t; }
const model_cluster *sim_full(const sim *s) { return &s->full; }
const model_cluster *sim_free_units(const sim *s) { return &s->freec; }
int sim_queue_len(const sim *s) { return s->q_len; }
long sim_version(const sim *s) { return s->version; }
int sim_queue_at(const sim *s, int i) { return s->queue[i]; }
const model_job *sim_job_of(const sim *s, int j) { return &s->jobs[j]; }
int sim_cache_key(const sim *s, int j) { return s->cls[j]; }
int sim_cache_classes(const sim *s) { return s->n_cls; }
int sim_n_nodes(const sim *s) { return s->n_nodes; }
int sim_node_used(const sim *s, int n) { return s->node_used[n]; }
void *sim_method_arg(const sim *s) { return s->marg; }
int sim_n_running(const sim *s) { return s->n_running; }

/* solve_class fills class c's plan on the empty cluster (once). */
static void solve_class(sim *s, int c, int j) {
    plan_class *pc = &s->classes[c];
    if (pc->state) return;
    const model_job *job = &s->jobs[j];
    int rc = solve_run(job, &s->full, &s->so, s->res);
    if (rc != 0) {
        pc->state = 2;
        snprintf(pc->why, sizeof pc->why, "%.150s", s->res->why[0] ? s->res->why : "no plan");
        return;
    }
    pc->assign = malloc(sizeof *pc->assign * (size_t)job->n_layers);
    pc->plan = model_plan_create(job->n_layers);
    if (!pc->assign || !pc->plan) {
        free(pc->assign);
        model_plan_free(pc->plan);
        pc->assign = NULL;
        pc->plan = NULL;
        pc->state = 2;
        snprintf(pc->why, sizeof pc->why, "out of memory");
        return;
    }
    memcpy(pc->assign, s->res->assign, sizeof *pc->assign * (size_t)job->n_layers);
    model_eval(job, &s->full, pc->assign, pc->plan);
    pc->state = 1;
}

const model_plan *sim_empty_plan(sim *s, int j, const int **assign) {
    int c = s->cls[j];
    solve_class(s, c, j);
    if (s->classes[c].state != 1) return NULL;
    if (assign) *assign = s->classes[c].assign;
    return s->classes[c].plan;
}

int sim_fits(const sim *s, const model_plan *plan) {
    int need[MODEL_MAX_TYPES] = {0};
    for (int k = 0; k < plan->n_stages; k++) need[plan->stages[k].type] += plan->stages[k].units;
    for (int ty = 0; ty < s->freec.n_types; ty++)
        if (need[ty] > s->freec.types[ty].count) return 0;
    return 1;
}

int sim_plan_free_now(sim *s, int j, const int **assign, char *err, size_t errlen) {
    const model_plan *p = sim_empty_plan(s, j, assign);
    if (!p) return SOLVE_NONE;
    if (sim_fits(s, p)) return 0;
    plan_class *pc = &s->classes[s->cls[j]];
    if (pc->fail_version == s->version) return SOLVE_NONE; /* same free units as last time */
    long total = 0;
    for (int ty = 0; ty < s->freec.n_types; ty++) total += s->freec.types[ty].count;
    int rc = total > 0 ? solve_run(&s->jobs[j], &s->freec, &s->so, s->res) : SOLVE_NONE;
    if (rc == SOLVE_ERROR) {
        snprintf(err, errlen, "job %s: %s", s->jobs[j].name, s->res->why);
        return -1;
    }
    if (rc != 0) {
        pc->fail_version = s->version;
        return SOLVE_NONE;
    }
    memcpy(s->assign_buf, s->res->assign, sizeof(int) * (size_t)s->jobs[j].n_layers);
    *assign = s->assign_buf;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Starting and finishing
 * ------------------------------------------------------------------------ */

static int add_sample(sim *s) {
    int used[MODEL_MAX_TYPES] = {0};
    for (int ty = 0; ty < s->full.n_types; ty++)
        used[ty] = s->full.types[ty].count - s->freec.types[ty].count;
    if (s->n_samples > 0) {
        sim_sample *last = &s->samples[s->n_samples - 1];
        if (!memcmp(last->used, used, sizeof used)) return 0;
        if (last->time == s->now) {
            memcpy(last->used, used, sizeof used);
            return 0;
        }
    }
    if (s->n_samples == s->cap_samples) {
        int cap = s->cap_samples ? 2 * s->cap_samples : 256;
        sim_sample *g = realloc(s->samples, sizeof *g * (size_t)cap);
        if (!g) return -1;
        s->samples = g;
        s->cap_samples = cap;
    }
    s->samples[s->n_samples].time = s->now;
    memcpy(s->samples[s->n_samples].used, used, sizeof used);
    s->n_samples++;
    return 0;
}

int sim_start(sim *s, int j, const int *assign, double target) {
    if (s->out[j].state != SIM_WAITING) return -1;
    model_plan *p = s->scratch;
    model_job job = s->jobs[j];
    if (target > job.min_throughput) job.min_throughput = target;
    if (model_eval(&job, &s->full, assign, p) != MODEL_FEASIBLE || !sim_fits(s, p)) return -1;
    int need[MODEL_MAX_TYPES] = {0};
    for (int k = 0; k < p->n_stages; k++) need[p->stages[k].type] += p->stages[k].units;
    /* nodes, first fit: at most one pair per node */
    int pairs = 0;
    for (int i = 0; i < s->n_nodes; i++) pairs += need[s->node_type[i]] > 0;
    int *al = malloc(sizeof *al * (size_t)(2 * pairs + 1));
    if (!al) return -2;
    int left[MODEL_MAX_TYPES], o = 0;
    memcpy(left, need, sizeof left);
    for (int i = 0; i < s->n_nodes; i++) {
        int ty = s->node_type[i];
        int take = s->node_cap[i] - s->node_used[i];
        if (take > left[ty]) take = left[ty];
        if (take <= 0) continue;
        s->node_used[i] += take;
        left[ty] -= take;
        al[o++] = i;
        al[o++] = take;
    }
    al[o] = -1;
    s->alloc[j] = al;
    for (int ty = 0; ty < s->full.n_types; ty++) s->freec.types[ty].count -= need[ty];
    sim_outcome *r = &s->out[j];
    r->state = SIM_RUNNING;
    r->start = s->now;
    r->finish = s->now + p->time;
    r->throughput = p->throughput;
    r->unit_price = p->unit_price;
    r->cost = p->cost;
    memcpy(r->units, need, sizeof r->units);
    size_t w = 0;
    r->plan[0] = '\0';
    for (int k = 0; k < p->n_stages && w < sizeof r->plan; k++)
        w += (size_t)snprintf(r->plan + w, sizeof r->plan - w, "%s%sx%d", k ? "+" : "",
                              s->full.types[p->stages[k].type].name, p->stages[k].units);
    for (int q = 0; q < s->q_len; q++)
        if (s->queue[q] == j) {
            memmove(s->queue + q, s->queue + q + 1, sizeof *s->queue * (size_t)(s->q_len - q - 1));
            s->q_len--;
            break;
        }
    s->version++;
    s->n_running++;
    if (heap_push(s, r->finish, EV_DONE, j)) return -2;
    return 0;
}

static void finish(sim *s, int j) {
    sim_outcome *r = &s->out[j];
    for (const int *a = s->alloc[j]; *a >= 0; a += 2) s->node_used[a[0]] -= a[1];
    free(s->alloc[j]);
    s->alloc[j] = NULL;
    for (int ty = 0; ty < s->full.n_types; ty++) s->freec.types[ty].count += r->units[ty];
    r->state = SIM_DONE;
    s->version++;
    s->n_running--;
}

int sim_run(sim *s, char *err, size_t errlen) {
    for (int j = 0; j < s->t->n_jobs; j++)
        if (heap_push(s, s->t->jobs[j].arrival, EV_ARRIVE, j)) goto oom;
    s->now = 0;
    if (add_sample(s)) goto oom;
    while (s->n_heap > 0) {
        s->now = s->heap[0].time;
        while (s->n_heap > 0 && s->heap[0].time == s->now) {
            event e = heap_pop(s);
            if (e.kind == EV_DONE) {
                finish(s, e.job);
                continue;
            }
            const int *as;
            if (!sim_empty_plan(s, e.job, &as)) {
                sim_outcome *r = &s->out[e.job];
                r->state = SIM_REJECTED;
                snprintf(r->why, sizeof r->why, "%s", s->classes[s->cls[e.job]].why);
                continue;
            }
            s->out[e.job].state = SIM_WAITING;
            s->queue[s->q_len++] = e.job;
        }
        if (s->q_len > 0 && s->m->schedule(s, s->mstate, err, errlen)) return -1;
        if (add_sample(s)) goto oom;
    }
    for (int q = 0; q < s->q_len; q++) s->out[s->queue[q]].state = SIM_STARVED;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* ---------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------ */

const sim_outcome *sim_outcomes(const sim *s) { return s->out; }

const sim_sample *sim_samples(const sim *s, int *n) {
    *n = s->n_samples;
    return s->samples;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* quantile of sorted v[n] by linear interpolation between order
 * statistics (NAN when n == 0). */
static double quantile(const double *v, int n, double q) {
    if (n == 0) return NAN;
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

double sim_objective(const sim *s, const sim_weights *w, double from) {
    double total = 0;
    for (int j = 0; j < s->t->n_jobs; j++) {
        const sim_outcome *r = &s->out[j];
        const sim_job *tj = &s->t->jobs[j];
        if (r->state == SIM_REJECTED || r->state == SIM_PENDING) continue;
        int done = r->state == SIM_DONE;
        if (done && r->start >= from) total += w->cost * r->cost;
        /* a job not finished when the run ended counts until then */
        double end = done ? r->finish : s->now;
        double a = tj->arrival > from ? tj->arrival : from;
        if (end > a) total += w->jct * (end - a) / 3600.0;
        if (tj->deadline > 0 && tj->arrival + tj->deadline >= from &&
            (!done || r->finish - tj->arrival > tj->deadline))
            total += w->missed;
    }
    return total;
}

void sim_summarise(const sim *s, sim_summary *o) {
    memset(o, 0, sizeof *o);
    int n = s->t->n_jobs;
    double *jct = malloc(sizeof *jct * (size_t)(n ? n : 1));
    double *qd = malloc(sizeof *qd * (size_t)(n ? n : 1));
    o->jobs = n;
    double sj = 0, sq = 0;
    for (int j = 0; j < n; j++) {
        const sim_outcome *r = &s->out[j];
        const sim_job *tj = &s->t->jobs[j];
        if (tj->deadline > 0) o->deadline_jobs++;
        if (r->state == SIM_REJECTED) o->rejected++;
        if (r->state == SIM_STARVED) o->starved++;
        if (r->state != SIM_DONE) {
            if (tj->deadline > 0) o->missed++;
            continue;
        }
        double c = r->finish - tj->arrival, w = r->start - tj->arrival;
        if (tj->deadline > 0 && c > tj->deadline) o->missed++;
        if (jct && qd) {
            jct[o->done] = c;
            qd[o->done] = w;
        }
        o->done++;
        sj += c;
        sq += w;
        o->cost += r->cost;
        if (r->finish > o->makespan) o->makespan = r->finish;
    }
    o->jct_mean = o->done ? sj / o->done : NAN;
    o->queue_mean = o->done ? sq / o->done : NAN;
    o->jct_p50 = o->jct_p95 = o->queue_p50 = o->queue_p95 = NAN;
    if (jct && qd) {
        qsort(jct, (size_t)o->done, sizeof *jct, cmp_double);
        qsort(qd, (size_t)o->done, sizeof *qd, cmp_double);
        o->jct_p50 = quantile(jct, o->done, 0.50);
        o->jct_p95 = quantile(jct, o->done, 0.95);
        o->queue_p50 = quantile(qd, o->done, 0.50);
        o->queue_p95 = quantile(qd, o->done, 0.95);
    }
    free(jct);
    free(qd);
    /* time-averaged occupancy over [0, makespan] */
    double busy[MODEL_MAX_TYPES] = {0}, all_busy = 0, all_cap = 0;
    for (int i = 0; i < s->n_samples; i++) {
        double t0 = s->samples[i].time;
        double t1 = i + 1 < s->n_samples ? s->samples[i + 1].time : o->makespan;
        if (t1 > o->makespan) t1 = o->makespan;
        if (t1 <= t0) continue;
        for (int ty = 0; ty < s->full.n_types; ty++) busy[ty] += s->samples[i].used[ty] * (t1 - t0);
    }
    for (int ty = 0; ty < s->full.n_types; ty++) {
        double cap = (double)s->full.types[ty].count * o->makespan;
        o->util[ty] = cap > 0 ? busy[ty] / cap : 0;
        all_busy += busy[ty];
        all_cap += cap;
    }
    o->util_all = all_cap > 0 ? all_busy / all_cap : 0;
}
