/* place.c -- scoring a task placement (docs/model.md §3).
 *
 * Given a feasible stage plan and a node for every task, place_eval checks
 * that the tasks fit the nodes, then replaces the plan's idealised network
 * terms with the links actually used: P_s' from each worker's parameter
 * servers, X_s' from the slowest link to a neighbouring stage. It also
 * counts the bytes that cross nodes and zones per step. The unit counts
 * k_s stay those of the plan; a placement whose slower links drop a stage
 * below the target is reported as such.
 *
 * Two choices the model text leaves open, fixed here and in docs/model.md:
 *  - "the slowest link" for X_s' is the worker pair (one of s, one of a
 *    neighbouring stage, on different nodes) whose transfer is slowest,
 *    i.e. with the largest 2 B a / b + 2 lat; when every such pair shares a
 *    node, X_s' = 0;
 *  - the activation traffic of a worker of s (2 B a_{j_s} per step) is
 *    spread evenly over the k_{s+1} workers of the next stage, so the part
 *    that crosses nodes is the share of those workers on other nodes.
 */
#include "env/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack on theta' >= R: provisioning puts theta_s(k_s) on R up to
 * rounding when the target falls on an exact boundary. */
#define PLACE_R_SLACK 1e-9

int place_task_count(const model_plan *plan) {
    int n = 0;
    for (int s = 0; s < plan->n_stages; s++)
        n += plan->stages[s].units + plan->stages[s].n_ps;
    return n;
}

int place_task_stage(const model_plan *plan, int i, int *stage, int *is_ps) {
    if (i < 0) return -1;
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        if (i < st->units + st->n_ps) {
            *stage = s;
            *is_ps = i >= st->units;
            return 0;
        }
        i -= st->units + st->n_ps;
    }
    return -1;
}

static double zone_pair(const model_cluster *cl, const double *table,
                        double dflt, int za, int zb) {
    return table ? table[za * cl->n_zones + zb] : dflt;
}

double place_link_bw(const model_cluster *cl, int t, int n, int m) {
    const model_node *a = &cl->nodes[n], *b = &cl->nodes[m];
    double keep = 1.0 - fmax(a->loss, b->loss);
    double bw = fmin(cl->types[t].net_bw, fmin(a->bw, b->bw)) * keep;
    if (a->zone != b->zone)
        bw = fmin(bw, zone_pair(cl, cl->zone_bw, cl->inter_bw, a->zone, b->zone) * keep);
    return bw;
}

double place_link_lat(const model_cluster *cl, int n, int m) {
    const model_node *a = &cl->nodes[n], *b = &cl->nodes[m];
    double lat = fmax(a->latency, b->latency);
    if (a->zone != b->zone)
        lat += zone_pair(cl, cl->zone_lat, cl->inter_latency, a->zone, b->zone);
    return lat;
}

/* Checks that every task sits on a node with room: workers on a node of
 * their stage's type with a free unit, ps tasks within ps_slots. Returns 0
 * or fills why and returns -1. */
static int check_fit(const model_job *job, const model_cluster *cl,
                     const model_plan *plan, const int *task_node,
                     int *used_units, int *used_ps, char *why, size_t len) {
    int n_tasks = place_task_count(plan);
    for (int i = 0; i < n_tasks; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(plan, i, &s, &is_ps);
        const model_stage *st = &plan->stages[s];
        int n = task_node[i];
        const char *role = is_ps ? "ps" : "worker";
        if (n < 0 || n >= cl->n_nodes) {
            snprintf(why, len, "placement: task %d (%s of stage %d) names node %d, "
                     "the cluster has %d nodes", i, role, s, n, cl->n_nodes);
            return -1;
        }
        const model_node *nd = &cl->nodes[n];
        if (is_ps) {
            if (++used_ps[n] > nd->ps_slots) {
                snprintf(why, len, "placement: node %s has %d ps slots, more ps tasks "
                         "are placed on it (task %d, stage %d)",
                         nd->name, nd->ps_slots, i, s);
                return -1;
            }
        } else {
            if (nd->type != st->type) {
                snprintf(why, len, "placement: task %d (worker of stage %d, layers "
                         "%s..%s) runs on %s but node %s holds %s",
                         i, s, job->layers[st->first].name, job->layers[st->last].name,
                         cl->types[st->type].name, nd->name, cl->types[nd->type].name);
                return -1;
            }
            if (++used_units[n] > nd->units) {
                snprintf(why, len, "placement: node %s has %d units, more workers are "
                         "placed on it (task %d, stage %d)",
                         nd->name, nd->units, i, s);
                return -1;
            }
        }
    }
    return 0;
}

/* Index of stage s's first task in the task order. */
static int stage_offset(const model_plan *plan, int s) {
    int off = 0;
    for (int r = 0; r < s; r++) off += plan->stages[r].units + plan->stages[r].n_ps;
    return off;
}

int place_eval(const model_job *job, const model_cluster *cl,
               const model_plan *plan, const int *task_node, model_plan *out) {
    if (out != plan) {
        model_stage *keep = out->stages;
        int cap = out->cap;
        *out = *plan;
        out->stages = keep;
        out->cap = cap;
        memcpy(out->stages, plan->stages, (size_t)plan->n_stages * sizeof(*keep));
    }
    out->cross_node_bytes = out->cross_zone_bytes = 0.0;
    out->placed = 0;
    if (plan->reason != MODEL_FEASIBLE) {
        out->reason = MODEL_ERR_PLACEMENT;
        snprintf(out->why, sizeof out->why, "placement: the plan itself is infeasible");
        return MODEL_ERR_PLACEMENT;
    }
    if (cl->n_nodes == 0) {
        out->reason = MODEL_ERR_PLACEMENT;
        snprintf(out->why, sizeof out->why, "placement: the cluster lists no nodes");
        return MODEL_ERR_PLACEMENT;
    }

    int *used_units = calloc((size_t)cl->n_nodes * 2, sizeof(int));
    if (!used_units) {
        out->reason = MODEL_ERR_PLACEMENT;
        snprintf(out->why, sizeof out->why, "placement: out of memory");
        return MODEL_ERR_PLACEMENT;
    }
    int *used_ps = used_units + cl->n_nodes;
    if (check_fit(job, cl, plan, task_node, used_units, used_ps, out->why,
                  sizeof out->why) < 0) {
        free(used_units);
        out->reason = MODEL_ERR_PLACEMENT;
        return MODEL_ERR_PLACEMENT;
    }
    free(used_units);

    const double B = job->batch;
    double cross_node = 0.0, cross_zone = 0.0;
    for (int s = 0; s < plan->n_stages; s++) {
        model_stage *st = &out->stages[s];
        const int *workers = task_node + stage_offset(plan, s);
        const int *ps = workers + st->units;
        double shard = st->params / st->n_ps; /* W_s / g_s */

        /* P_s': the slowest worker's exchange with its stage's ps tasks. */
        double sync = 0.0;
        for (int v = 0; v < st->units; v++) {
            double pv = 0.0;
            for (int r = 0; r < st->n_ps; r++) {
                if (ps[r] == workers[v]) continue;
                pv += 2.0 * shard / place_link_bw(cl, st->type, workers[v], ps[r])
                    + 2.0 * place_link_lat(cl, workers[v], ps[r]);
                cross_node += 2.0 * shard;
                if (cl->nodes[ps[r]].zone != cl->nodes[workers[v]].zone)
                    cross_zone += 2.0 * shard;
            }
            if (pv > sync) sync = pv;
        }

        /* X_s': the slowest link to a worker of a neighbouring stage. */
        double a = 0.0;
        if (st->first > 0) a += job->layers[st->first - 1].act;
        if (st->last < job->n_layers - 1) a += job->layers[st->last].act;
        double xfer = 0.0;
        for (int nb = s - 1; nb <= s + 1; nb += 2) {
            if (nb < 0 || nb >= plan->n_stages) continue;
            const int *other = task_node + stage_offset(plan, nb);
            for (int v = 0; v < st->units; v++)
                for (int u = 0; u < out->stages[nb].units; u++) {
                    if (other[u] == workers[v]) continue;
                    double x = 2.0 * B * a / place_link_bw(cl, st->type, workers[v], other[u])
                             + 2.0 * place_link_lat(cl, workers[v], other[u]);
                    if (x > xfer) xfer = x;
                }
        }

        /* Activation traffic to the next stage, spread over its workers. */
        if (s + 1 < plan->n_stages) {
            const model_stage *next = &plan->stages[s + 1];
            const int *nw = task_node + stage_offset(plan, s + 1);
            double per = 2.0 * B * job->layers[st->last].act / next->units;
            for (int v = 0; v < st->units; v++)
                for (int u = 0; u < next->units; u++) {
                    if (nw[u] == workers[v]) continue;
                    cross_node += per;
                    if (cl->nodes[nw[u]].zone != cl->nodes[workers[v]].zone)
                        cross_zone += per;
                }
        }

        st->xfer = xfer;
        st->sync = sync;
        st->step = fmax(st->compute, st->io) + xfer + sync;
        st->throughput = model_stage_throughput(st->step, B, st->units,
                                                model_stage_alpha(job, st->n_ps));
    }

    double theta = INFINITY;
    int slow = 0;
    for (int s = 0; s < out->n_stages; s++)
        if (out->stages[s].throughput < theta) {
            theta = out->stages[s].throughput;
            slow = s;
        }
    out->throughput = theta;
    out->time = job->samples / theta;
    out->cost = out->time / 3600.0 * out->unit_price;
    out->cross_node_bytes = cross_node;
    out->cross_zone_bytes = cross_zone;
    out->placed = 1;
    if (theta < job->min_throughput * (1.0 - PLACE_R_SLACK)) {
        const model_stage *st = &out->stages[slow];
        snprintf(out->why, sizeof out->why,
                 "placement: stage %d (layers %s..%s on %s) reaches %.6g samples/s "
                 "over its links, below the target %.6g",
                 slow, job->layers[st->first].name, job->layers[st->last].name,
                 cl->types[st->type].name, theta, job->min_throughput);
        out->reason = MODEL_ERR_PLACEMENT;
        out->bad_stage = slow;
        out->bad_type = st->type;
        return MODEL_ERR_PLACEMENT;
    }
    out->reason = MODEL_FEASIBLE;
    out->why[0] = '\0';
    return MODEL_FEASIBLE;
}
