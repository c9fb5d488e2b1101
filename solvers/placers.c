/* placers.c -- the task placement methods of placers.h.
 *
 * Every method walks the plan's tasks and books room on the nodes as it
 * goes: a worker takes one unit of a node of its stage's type, a ps task one
 * ps slot of any node. Because a worker may use any node of its type and a
 * ps task any node with a slot, a greedy method never runs out of room as
 * long as the totals suffice, which room_check() verifies first. Each
 * result is scored by place_eval (env/place.h), never by a figure of its
 * own, so every method is judged by the same rule.
 *
 * `best` needs many evaluations; it calls place_eval on whole placements
 * (a few microseconds on the shipped instances) under an evaluation budget
 * and visits tasks in a seeded order, so a given seed and budget always
 * give the same placement.
 */
#include "solvers/placers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "env/place.h"

static const char *const method_names[PLACER_N_METHODS] = {
    [PLACER_SPREAD] = "spread",
    [PLACER_PACK] = "pack",
    [PLACER_AGGREGATE] = "aggregate",
    [PLACER_ZONE] = "zone",
    [PLACER_BEST] = "best",
};

const char *placer_method_name(placer_method m) {
    if ((int)m < 0 || m >= PLACER_N_METHODS) return "?";
    return method_names[m];
}

int placer_method_parse(const char *name) {
    for (int m = 0; m < PLACER_N_METHODS; m++)
        if (name && !strcmp(name, method_names[m])) return m;
    return -1;
}

const char *placer_placement_name(int placement) {
    if (placement == PLACER_PLACE_NONE) return "none";
    if (placement == PLACER_PLACE_POLICY) return "policy";
    return placer_method_name((placer_method)placement);
}

int placer_placement_parse(const char *name, int *placement) {
    int m = placer_method_parse(name);
    if (m < 0 && name && !strcmp(name, "none")) m = PLACER_PLACE_NONE;
    else if (m < 0 && name && !strcmp(name, "policy")) m = PLACER_PLACE_POLICY;
    else if (m < 0) return -1;
    *placement = m;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Shared state: room left on every node while tasks are booked
 * ------------------------------------------------------------------------ */

typedef struct {
    const model_job *job;
    const model_cluster *cl;
    const model_plan *plan;
    int n_tasks;
    int *free_units; /* [n_nodes] units still free */
    int *free_ps;    /* [n_nodes] ps slots still free */
    int *count;      /* [n_nodes] scratch: workers of the current stage per node */
    double *key;     /* [n_nodes] scratch: sort keys */
    unsigned char *allowed; /* [n_nodes] scratch: nodes in the chosen zones */
    uint64_t rng;    /* splitmix64 state */
} pctx;

/* rng_below returns a uniform integer in [0, n), n >= 1. */
static int rng_below(uint64_t *s, int n) {
    return (int)(splitmix64_next(s) % (uint64_t)n);
}

static int stage_offset(const model_plan *plan, int s) {
    int off = 0;
    for (int r = 0; r < s; r++) off += plan->stages[r].units + plan->stages[r].n_ps;
    return off;
}

/* Resets the room to the nodes' free units and slots. */
static void room_reset(pctx *c) {
    for (int n = 0; n < c->cl->n_nodes; n++) {
        c->free_units[n] = c->cl->nodes[n].units;
        c->free_ps[n] = c->cl->nodes[n].ps_slots;
    }
}

static int ctx_init(pctx *c, const model_job *job, const model_cluster *cl,
                    const model_plan *plan, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->job = job;
    c->cl = cl;
    c->plan = plan;
    c->n_tasks = place_task_count(plan);
    size_t n = (size_t)cl->n_nodes;
    c->free_units = calloc(n * 3, sizeof(int));
    c->key = calloc(n, sizeof(double));
    c->allowed = calloc(n, 1);
    if (!c->free_units || !c->key || !c->allowed) {
        free(c->free_units);
        free(c->key);
        free(c->allowed);
        return -1;
    }
    c->free_ps = c->free_units + n;
    c->count = c->free_ps + n;
    c->rng = seed;
    room_reset(c);
    return 0;
}

static void ctx_free(pctx *c) {
    free(c->free_units);
    free(c->key);
    free(c->allowed);
}

/* room_check: the nodes hold enough units of every type for the plan's
 * workers and enough ps slots for its ps tasks. Returns 0 or -1 with err. */
static int room_check(const pctx *c, char *err, size_t errlen) {
    const model_cluster *cl = c->cl;
    const model_plan *plan = c->plan;
    long need[MODEL_MAX_TYPES] = {0}, have[MODEL_MAX_TYPES] = {0};
    long need_ps = 0, have_ps = 0;
    for (int s = 0; s < plan->n_stages; s++) {
        need[plan->stages[s].type] += plan->stages[s].units;
        need_ps += plan->stages[s].n_ps;
    }
    for (int n = 0; n < cl->n_nodes; n++) {
        have[cl->nodes[n].type] += cl->nodes[n].units;
        have_ps += cl->nodes[n].ps_slots;
    }
    for (int t = 0; t < cl->n_types; t++)
        if (need[t] > have[t]) {
            snprintf(err, errlen, "placement: the plan runs %ld workers on %s, its nodes "
                     "hold %ld units", need[t], cl->types[t].name, have[t]);
            return -1;
        }
    if (need_ps > have_ps) {
        snprintf(err, errlen, "placement: the plan runs %ld ps tasks, the nodes have %ld "
                 "ps slots", need_ps, have_ps);
        return -1;
    }
    return 0;
}

/* fits: task (stage s, is_ps) has room on node n. */
static int fits(const pctx *c, int s, int is_ps, int n) {
    if (is_ps) return c->free_ps[n] > 0;
    return c->cl->nodes[n].type == c->plan->stages[s].type && c->free_units[n] > 0;
}

static void book(pctx *c, int is_ps, int n) {
    if (is_ps) c->free_ps[n]--;
    else c->free_units[n]--;
}

/* ---------------------------------------------------------------------------
 * spread: the Kubernetes default scheduler
 * ------------------------------------------------------------------------ */

/* The scheduler's score of node n for one more task: LeastAllocated (mean
 * free fraction of units and ps slots once the task is booked) plus
 * BalancedAllocation (1 minus the gap between the two used fractions),
 * with equal weights as in the default profile. A resource the node lacks
 * counts as fully used. */
static double spread_score(const pctx *c, int is_ps, int n) {
    const model_node *nd = &c->cl->nodes[n];
    double fu = 1.0, fp = 1.0;
    if (nd->units > 0) fu = (double)(nd->units - c->free_units[n] + !is_ps) / nd->units;
    if (nd->ps_slots > 0) fp = (double)(nd->ps_slots - c->free_ps[n] + is_ps) / nd->ps_slots;
    double least = ((1.0 - fu) + (1.0 - fp)) / 2.0;
    double balanced = 1.0 - fabs(fu - fp);
    return least + balanced;
}

static void place_spread(pctx *c, int *task_node) {
    for (int i = 0; i < c->n_tasks; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(c->plan, i, &s, &is_ps);
        int best = -1, ties = 0;
        double best_score = -INFINITY;
        for (int n = 0; n < c->cl->n_nodes; n++) {
            if (!fits(c, s, is_ps, n)) continue;
            double sc = spread_score(c, is_ps, n);
            if (sc > best_score + 1e-12) {
                best = n;
                best_score = sc;
                ties = 1;
            } else if (sc >= best_score - 1e-12 && rng_below(&c->rng, ++ties) == 0) {
                best = n; /* reservoir choice among equal scores */
            }
        }
        task_node[i] = best;
        book(c, is_ps, best);
    }
}

/* ---------------------------------------------------------------------------
 * pack: first fit in the cluster's node order
 * ------------------------------------------------------------------------ */

static void place_pack(pctx *c, int *task_node) {
    for (int i = 0; i < c->n_tasks; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(c->plan, i, &s, &is_ps);
        int n = 0;
        while (!fits(c, s, is_ps, n)) n++;
        task_node[i] = n;
        book(c, is_ps, n);
    }
}

/* ---------------------------------------------------------------------------
 * aggregate (DLTAP) and zone share the ps rule
 * ------------------------------------------------------------------------ */

/* Link quality of a node for ordering ties: its own bandwidth after loss. */
static double node_quality(const model_cluster *cl, int n) {
    return cl->nodes[n].bw * (1.0 - cl->nodes[n].loss);
}

/* place_ps books stage s's ps tasks (tasks first..first+g-1): each on the
 * allowed node (allowed == NULL: any) with a free slot holding most of the
 * stage's workers (c->count); ties go to the zone holding most of them,
 * then to the lowest rank[n] (NULL: highest own link quality), then to the
 * lowest index. */
static void place_ps(pctx *c, int s, int first, const unsigned char *allowed,
                     const double *rank, int *task_node) {
    const model_cluster *cl = c->cl;
    const model_stage *st = &c->plan->stages[s];
    int zone_w[MODEL_MAX_ZONES] = {0};
    for (int n = 0; n < cl->n_nodes; n++)
        if (cl->nodes[n].zone >= 0 && cl->nodes[n].zone < MODEL_MAX_ZONES)
            zone_w[cl->nodes[n].zone] += c->count[n];
    for (int r = 0; r < st->n_ps; r++) {
        int best = -1;
        for (int n = 0; n < cl->n_nodes; n++) {
            if (c->free_ps[n] <= 0 || (allowed && !allowed[n])) continue;
            if (best < 0) {
                best = n;
                continue;
            }
            if (c->count[n] != c->count[best]) {
                if (c->count[n] > c->count[best]) best = n;
                continue;
            }
            int zn = cl->nodes[n].zone, zb = cl->nodes[best].zone;
            if (zone_w[zn] != zone_w[zb]) {
                if (zone_w[zn] > zone_w[zb]) best = n;
                continue;
            }
            double qn = rank ? -rank[n] : node_quality(cl, n);
            double qb = rank ? -rank[best] : node_quality(cl, best);
            if (qn > qb) best = n;
        }
        task_node[first + r] = best;
        c->free_ps[best]--;
    }
}

/* The zone holding most of the workers placed so far (by task_node[0..upto)),
 * or -1 when none is placed. */
static int busiest_zone(const pctx *c, const int *task_node, int upto) {
    int load[MODEL_MAX_ZONES] = {0}, best = -1;
    for (int i = 0; i < upto; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(c->plan, i, &s, &is_ps);
        if (is_ps) continue;
        int z = c->cl->nodes[task_node[i]].zone;
        if (z < 0 || z >= MODEL_MAX_ZONES) continue;
        load[z]++;
        if (best < 0 || load[z] > load[best]) best = z;
    }
    return best;
}

static void place_aggregate(pctx *c, int *task_node) {
    const model_cluster *cl = c->cl;
    for (int s = 0; s < c->plan->n_stages; s++) {
        const model_stage *st = &c->plan->stages[s];
        int off = stage_offset(c->plan, s);
        int home = busiest_zone(c, task_node, off);
        memset(c->count, 0, (size_t)cl->n_nodes * sizeof *c->count);
        int rem = st->units, v = 0;
        while (rem > 0) {
            /* Best fit: the smallest node that takes all that remains; if
             * none does, the largest. Ties prefer the job's busiest zone. */
            int pick = -1, whole = 0;
            for (int n = 0; n < cl->n_nodes; n++) {
                if (cl->nodes[n].type != st->type || c->free_units[n] <= 0) continue;
                int f = c->free_units[n];
                int w = f >= rem;
                if (pick < 0) {
                    pick = n;
                    whole = w;
                    continue;
                }
                int fp = c->free_units[pick];
                int better;
                if (w != whole) better = w;
                else if (f != fp) better = w ? f < fp : f > fp;
                else better = cl->nodes[n].zone == home && cl->nodes[pick].zone != home;
                if (better) {
                    pick = n;
                    whole = w;
                }
            }
            int take = c->free_units[pick] < rem ? c->free_units[pick] : rem;
            for (int k = 0; k < take; k++) task_node[off + v++] = pick;
            c->free_units[pick] -= take;
            c->count[pick] += take;
            rem -= take;
        }
        place_ps(c, s, off + st->units, NULL, NULL, task_node);
    }
}

/* ---------------------------------------------------------------------------
 * zone: few zones, best link score inside
 * ------------------------------------------------------------------------ */

double placer_zone_time(const model_job *job, const model_cluster *cl,
                        const model_plan *plan, int s, int n) {
    const model_stage *st = &plan->stages[s];
    const model_node *nd = &cl->nodes[n];
    double a = 0.0;
    if (st->first > 0) a += job->layers[st->first - 1].act;
    if (st->last < job->n_layers - 1) a += job->layers[st->last].act;
    double m = 2.0 * st->params + 2.0 * job->batch * a;
    double bw = fmin(cl->types[st->type].net_bw, nd->bw) * (1.0 - nd->loss);
    return nd->latency + m / bw;
}

/* Fills task_node with the in-zone greedy for the zones marked in zmask,
 * whose rank (0 = first chosen) orders the stage's candidate nodes before
 * tau does. Returns 0, or -1 when the zones lack room. */
static int zone_fill(pctx *c, const int *zrank, int *task_node) {
    const model_cluster *cl = c->cl;
    unsigned char *allowed = c->allowed;
    room_reset(c);
    for (int s = 0; s < c->plan->n_stages; s++) {
        const model_stage *st = &c->plan->stages[s];
        int off = stage_offset(c->plan, s);
        memset(c->count, 0, (size_t)cl->n_nodes * sizeof *c->count);
        for (int n = 0; n < cl->n_nodes; n++) {
            allowed[n] = zrank[cl->nodes[n].zone] >= 0;
            c->key[n] = placer_zone_time(c->job, cl, c->plan, s, n);
        }
        /* The stage stays in one zone when a chosen zone can hold all its
         * workers (the first chosen such zone). */
        long zfree[MODEL_MAX_ZONES] = {0};
        for (int n = 0; n < cl->n_nodes; n++)
            if (allowed[n] && cl->nodes[n].type == st->type) zfree[cl->nodes[n].zone] += c->free_units[n];
        int home = -1;
        for (int z = 0; z < cl->n_zones && z < MODEL_MAX_ZONES; z++)
            if (zrank[z] >= 0 && zfree[z] >= st->units && (home < 0 || zrank[z] < zrank[home]))
                home = z;
        /* Node by node: one that takes all remaining workers if any (best
         * tau among those), else the first-ranked zone's best tau; each
         * node chosen is filled. */
        int rem = st->units, v = 0;
        while (rem > 0) {
            int pick = -1, whole = 0;
            for (int n = 0; n < cl->n_nodes; n++) {
                if (!allowed[n] || cl->nodes[n].type != st->type || c->free_units[n] <= 0 ||
                    (home >= 0 && cl->nodes[n].zone != home))
                    continue;
                int w = c->free_units[n] >= rem;
                if (pick < 0) {
                    pick = n;
                    whole = w;
                    continue;
                }
                int zn = zrank[cl->nodes[n].zone], zp = zrank[cl->nodes[pick].zone];
                int better;
                if (w != whole) better = w;
                else if (zn != zp) better = zn < zp;
                else better = c->key[n] < c->key[pick];
                if (better) {
                    pick = n;
                    whole = w;
                }
            }
            if (pick < 0) return -1;
            int take = c->free_units[pick] < rem ? c->free_units[pick] : rem;
            for (int k = 0; k < take; k++) task_node[off + v++] = pick;
            c->free_units[pick] -= take;
            c->count[pick] += take;
            rem -= take;
        }
        int slots = 0;
        for (int n = 0; n < cl->n_nodes; n++)
            if (allowed[n]) slots += c->free_ps[n];
        if (slots < st->n_ps) return -1;
        place_ps(c, s, off + st->units, allowed, c->key, task_node);
    }
    return 0;
}

/* Room of the zones marked in zrank (>= 0) for the plan, as the number of
 * tasks they can host (workers by type, ps by slots), capped by need; equal
 * to the task count when they host everything. */
static long zone_cover(const pctx *c, const int *zrank) {
    const model_cluster *cl = c->cl;
    long need[MODEL_MAX_TYPES] = {0}, have[MODEL_MAX_TYPES] = {0}, need_ps = 0, have_ps = 0;
    for (int s = 0; s < c->plan->n_stages; s++) {
        need[c->plan->stages[s].type] += c->plan->stages[s].units;
        need_ps += c->plan->stages[s].n_ps;
    }
    for (int n = 0; n < cl->n_nodes; n++) {
        if (zrank[cl->nodes[n].zone] < 0) continue;
        have[cl->nodes[n].type] += cl->nodes[n].units;
        have_ps += cl->nodes[n].ps_slots;
    }
    long cover = need_ps < have_ps ? need_ps : have_ps;
    for (int t = 0; t < cl->n_types; t++) cover += need[t] < have[t] ? need[t] : have[t];
    return cover;
}

/* A placement's rank for comparisons: placements keeping R first, then
 * lower cost', lower cross-node bytes, lower cross-zone bytes, lower sum of
 * stage step times. */
typedef struct {
    int ok;
    double cost, cross_node, cross_zone, steps;
} pkey;

static pkey key_of(const model_plan *p, int rc) {
    pkey k = {rc == MODEL_FEASIBLE, p->cost, p->cross_node_bytes, p->cross_zone_bytes, 0.0};
    for (int s = 0; s < p->n_stages; s++) k.steps += p->stages[s].step;
    return k;
}

/* -1 when a < b by more than a relative 1e-12, 1 when greater, else 0. */
static int cmp_rel(double a, double b) {
    double tol = 1e-12 * fmax(fabs(a), fabs(b));
    if (a < b - tol) return -1;
    if (a > b + tol) return 1;
    return 0;
}

static int key_better(pkey a, pkey b) {
    if (a.ok != b.ok) return a.ok > b.ok;
    int c;
    if ((c = cmp_rel(a.cost, b.cost))) return c < 0;
    if ((c = cmp_rel(a.cross_node, b.cross_node))) return c < 0;
    if ((c = cmp_rel(a.cross_zone, b.cross_zone))) return c < 0;
    return cmp_rel(a.steps, b.steps) < 0;
}

/* A zone's links, averaged over its nodes of the types the plan uses (so
 * that nodes the job cannot use, or a different mix of types, do not
 * weigh): for breaking ties away from bad zones. */
typedef struct {
    double loss, latency, bw;
} zlink;

static void zone_links(const model_cluster *cl, const model_plan *plan, zlink *zl, int nz) {
    int cnt[MODEL_MAX_ZONES] = {0};
    unsigned char used[MODEL_MAX_TYPES] = {0};
    for (int s = 0; s < plan->n_stages; s++)
        if (plan->stages[s].type >= 0 && plan->stages[s].type < MODEL_MAX_TYPES)
            used[plan->stages[s].type] = 1;
    memset(zl, 0, (size_t)nz * sizeof *zl);
    for (int n = 0; n < cl->n_nodes; n++) {
        int z = cl->nodes[n].zone, t = cl->nodes[n].type;
        if (z < 0 || z >= nz || t < 0 || t >= MODEL_MAX_TYPES || !used[t]) continue;
        zl[z].loss += cl->nodes[n].loss;
        zl[z].latency += cl->nodes[n].latency;
        zl[z].bw += cl->nodes[n].bw;
        cnt[z]++;
    }
    for (int z = 0; z < nz; z++)
        if (cnt[z]) {
            zl[z].loss /= cnt[z];
            zl[z].latency /= cnt[z];
            zl[z].bw /= cnt[z];
        }
}

/* 1 when zone a's links are better than b's: lower loss, then lower
 * latency, then higher bandwidth; 0 when worse or the same. */
static int zone_better(const zlink *zl, int a, int b) {
    int c;
    if ((c = cmp_rel(zl[a].loss, zl[b].loss))) return c < 0;
    if ((c = cmp_rel(zl[a].latency, zl[b].latency))) return c < 0;
    return cmp_rel(zl[a].bw, zl[b].bw) > 0;
}

/* place_zone: if single zones can host the job, the one whose in-zone
 * placement ranks best (key_better; equal ranks: the zone with the better
 * links, zone_better); when that zone misses the target, zones in the
 * order of their links, best first, until they host the job, if that
 * placement ranks better. Otherwise zones added greedily, each time the one
 * covering most of what is still missing (ties: better links, then lower
 * index), until they host it. So a
 * bad zone listed first wins no tie, and a job is not left whole in a zone
 * where it misses the target when spreading reaches it. Returns 0 or -1
 * (out of memory). */
static int place_zone(pctx *c, int *task_node) {
    const model_cluster *cl = c->cl;
    int nz = cl->n_zones > 0 ? cl->n_zones : 1;
    int zrank[MODEL_MAX_ZONES];
    zlink zl[MODEL_MAX_ZONES];
    zone_links(cl, c->plan, zl, nz);
    int best_zone = -1;
    int *trial = malloc((size_t)(c->n_tasks + 1) * sizeof *trial);
    model_plan *scored = model_plan_create(c->plan->n_stages);
    if (!trial || !scored) {
        free(trial);
        model_plan_free(scored);
        return -1;
    }
    long total = c->n_tasks;
    int found = 0;
    pkey best = {0, INFINITY, INFINITY, INFINITY, INFINITY};
    for (int z = 0; z < nz; z++) {
        for (int y = 0; y < nz; y++) zrank[y] = y == z ? 0 : -1;
        if (zone_cover(c, zrank) < total || zone_fill(c, zrank, trial) < 0) continue;
        int rc = place_eval(c->job, cl, c->plan, trial, scored);
        pkey k = key_of(scored, rc);
        int tie = found && !key_better(k, best) && !key_better(best, k);
        if (!found || key_better(k, best) || (tie && zone_better(zl, z, best_zone))) {
            best = k;
            best_zone = z;
            found = 1;
            memcpy(task_node, trial, (size_t)c->n_tasks * sizeof *trial);
        }
    }
    if (found && !best.ok) {
        /* The best single zone misses the target: zones by their links,
         * best first, added until they host the job. */
        for (int y = 0; y < nz; y++) zrank[y] = -1;
        for (int r = 0; r < nz; r++) {
            int pick = -1;
            for (int z = 0; z < nz; z++)
                if (zrank[z] < 0 && (pick < 0 || zone_better(zl, z, pick))) pick = z;
            zrank[pick] = r;
            if (zone_cover(c, zrank) >= total) break;
        }
        if (zone_fill(c, zrank, trial) == 0) {
            int rc = place_eval(c->job, cl, c->plan, trial, scored);
            if (key_better(key_of(scored, rc), best))
                memcpy(task_node, trial, (size_t)c->n_tasks * sizeof *trial);
        }
    }
    if (!found) {
        for (int y = 0; y < nz; y++) zrank[y] = -1;
        for (int r = 0; r < nz; r++) {
            int pick = -1;
            long pick_cover = -1;
            for (int z = 0; z < nz; z++) {
                if (zrank[z] >= 0) continue;
                zrank[z] = r;
                long cv = zone_cover(c, zrank);
                zrank[z] = -1;
                /* past the first pick, cover only what is still missing
                 * counts: zones that add nothing tie, and links decide */
                if (cv > pick_cover || (cv == pick_cover && zone_better(zl, z, pick))) {
                    pick = z;
                    pick_cover = cv;
                }
            }
            zrank[pick] = r;
            if (pick_cover >= total) break;
        }
        zone_fill(c, zrank, task_node); /* room_check guarantees room in all zones */
    }
    free(trial);
    model_plan_free(scored);
    return 0;
}

/* ---------------------------------------------------------------------------
 * best: local search over the others' results
 * ------------------------------------------------------------------------ */

/* Rebuilds the room from a full placement. */
static void room_from(pctx *c, const int *task_node) {
    room_reset(c);
    for (int i = 0; i < c->n_tasks; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(c->plan, i, &s, &is_ps);
        book(c, is_ps, task_node[i]);
    }
}

static int run_simple(pctx *c, placer_method m, int *task_node) {
    room_reset(c);
    switch (m) {
    case PLACER_SPREAD: place_spread(c, task_node); return 0;
    case PLACER_PACK: place_pack(c, task_node); return 0;
    case PLACER_AGGREGATE: place_aggregate(c, task_node); return 0;
    case PLACER_ZONE: return place_zone(c, task_node);
    default: return -1;
    }
}

/* The local search: first-improvement moves of one task to another node
 * with room, then swaps of two tasks of different stages that can trade
 * nodes (two workers of one type, or two ps tasks), visiting tasks in a
 * seeded order, until a pass improves nothing or the budget is spent.
 * Tasks before `first` stay where they are (placer_complete). */
static int local_search(pctx *c, int *cur, model_plan *scratch, int first, long max_evals,
                        long *evals) {
    const model_cluster *cl = c->cl;
    int nt = c->n_tasks;
    int *visit = malloc((size_t)(nt + 1) * sizeof *visit);
    int *stage = malloc((size_t)(nt + 1) * 2 * sizeof *stage);
    if (!visit || !stage) {
        free(visit);
        free(stage);
        return -1;
    }
    int *isps = stage + nt;
    for (int i = 0; i < nt; i++) place_task_stage(c->plan, i, &stage[i], &isps[i]);
    pkey cur_key = key_of(scratch, place_eval(c->job, cl, c->plan, cur, scratch));
    (*evals)++;
    room_from(c, cur);
    int improved = 1;
    while (improved && *evals < max_evals) {
        improved = 0;
        int nv = nt - first;
        for (int i = 0; i < nv; i++) visit[i] = first + i;
        for (int i = nv - 1; i > 0; i--) {
            int j = rng_below(&c->rng, i + 1), t = visit[i];
            visit[i] = visit[j];
            visit[j] = t;
        }
        for (int vi = 0; vi < nv && *evals < max_evals; vi++) {
            int i = visit[vi], from = cur[i];
            /* Moves. */
            for (int n = 0; n < cl->n_nodes && *evals < max_evals; n++) {
                if (n == from || !fits(c, stage[i], isps[i], n)) continue;
                cur[i] = n;
                int rc = place_eval(c->job, cl, c->plan, cur, scratch);
                (*evals)++;
                pkey k = key_of(scratch, rc);
                if (key_better(k, cur_key)) {
                    cur_key = k;
                    if (isps[i]) c->free_ps[from]++, c->free_ps[n]--;
                    else c->free_units[from]++, c->free_units[n]--;
                    from = n;
                    improved = 1;
                } else {
                    cur[i] = from;
                }
            }
            /* Swaps with tasks of other stages. */
            for (int j = first; j < nt && *evals < max_evals; j++) {
                if (stage[j] == stage[i] || isps[j] != isps[i] || cur[j] == cur[i]) continue;
                if (!isps[i] && c->plan->stages[stage[i]].type != c->plan->stages[stage[j]].type)
                    continue;
                int a = cur[i], b = cur[j];
                cur[i] = b;
                cur[j] = a;
                int rc = place_eval(c->job, cl, c->plan, cur, scratch);
                (*evals)++;
                pkey k = key_of(scratch, rc);
                if (key_better(k, cur_key)) {
                    cur_key = k;
                    improved = 1;
                } else {
                    cur[i] = a;
                    cur[j] = b;
                }
            }
        }
    }
    free(visit);
    free(stage);
    return 0;
}

static int run_best(pctx *c, int *task_node, long max_evals, long *evals) {
    int nt = c->n_tasks;
    int *trial = malloc((size_t)(nt + 1) * sizeof *trial);
    model_plan *scored = model_plan_create(c->plan->n_stages);
    if (!trial || !scored) {
        free(trial);
        model_plan_free(scored);
        return -1;
    }
    pkey best = {0, INFINITY, INFINITY, INFINITY, INFINITY};
    int found = 0, rc = 0;
    for (int m = 0; m < PLACER_BEST && rc == 0; m++) {
        if ((rc = run_simple(c, (placer_method)m, trial)) < 0) break;
        pkey k = key_of(scored, place_eval(c->job, c->cl, c->plan, trial, scored));
        (*evals)++;
        if (!found || key_better(k, best)) {
            best = k;
            found = 1;
            memcpy(task_node, trial, (size_t)nt * sizeof *trial);
        }
    }
    if (rc == 0) rc = local_search(c, task_node, scored, 0, max_evals, evals);
    free(trial);
    model_plan_free(scored);
    return rc;
}

/* run_complete keeps task_node[0, first), puts every later task on
 * start[i] where it has room (else on the first node with room) and runs
 * the local search over the later tasks. Returns 0; 1 + i when fixed task
 * i is on a node without room for it (of another type, or full: the room
 * check passed, so the later tasks always find room); -1 when out of
 * memory. */
static int run_complete(pctx *c, int first, const int *start, int *task_node, long max_evals,
                        long *evals) {
    int nt = c->n_tasks;
    room_reset(c);
    for (int i = 0; i < nt; i++) {
        int s = 0, is_ps = 0;
        place_task_stage(c->plan, i, &s, &is_ps);
        int n = i < first ? task_node[i] : start ? start[i] : -1;
        if (i >= first && (n < 0 || n >= c->cl->n_nodes || !fits(c, s, is_ps, n)))
            for (n = 0; n < c->cl->n_nodes && !fits(c, s, is_ps, n); n++) {}
        if (n < 0 || n >= c->cl->n_nodes || !fits(c, s, is_ps, n)) return 1 + i;
        book(c, is_ps, n);
        task_node[i] = n;
    }
    model_plan *scored = model_plan_create(c->plan->n_stages);
    if (!scored) return -1;
    int rc = local_search(c, task_node, scored, first, max_evals, evals);
    model_plan_free(scored);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */

/* run_method runs `method`, or with first >= 0 completes task_node from
 * task `first` (run_complete, start the proposed nodes). */
static int run_method(const model_job *job, const model_cluster *cl, const model_plan *plan,
                      placer_method method, uint64_t seed, long max_evals, long *evals,
                      int first, const int *start, int *task_node, model_plan *out, char *err,
                      size_t errlen) {
    long spent = 0;
    if (evals) *evals = 0;
    if ((int)method < 0 || method >= PLACER_N_METHODS) {
        snprintf(err, errlen, "placement: unknown method %d", (int)method);
        return PLACER_ERROR;
    }
    if (plan->reason != MODEL_FEASIBLE) {
        snprintf(err, errlen, "placement: the plan itself is infeasible: %s", plan->why);
        return PLACER_ERROR;
    }
    if (cl->n_nodes == 0) {
        snprintf(err, errlen, "placement: the cluster lists no nodes");
        return PLACER_ERROR;
    }
    if (cl->n_zones > MODEL_MAX_ZONES) {
        snprintf(err, errlen, "placement: at most %d zones are supported", MODEL_MAX_ZONES);
        return PLACER_ERROR;
    }
    if (out == plan || out->cap < plan->n_stages) {
        snprintf(err, errlen, "placement: bad output plan");
        return PLACER_ERROR;
    }
    pctx c;
    if (ctx_init(&c, job, cl, plan, seed) < 0) {
        snprintf(err, errlen, "placement: out of memory");
        return PLACER_ERROR;
    }
    if (room_check(&c, err, errlen) < 0) {
        ctx_free(&c);
        return PLACER_NOFIT;
    }
    if (first > c.n_tasks) first = c.n_tasks;
    long budget = max_evals > 0 ? max_evals : PLACER_BEST_EVALS;
    int rc = first >= 0             ? run_complete(&c, first, start, task_node, budget, &spent)
             : method == PLACER_BEST ? run_best(&c, task_node, budget, &spent)
                                     : run_simple(&c, method, task_node);
    ctx_free(&c);
    if (evals) *evals = spent;
    if (rc > 0) {
        snprintf(err, errlen, "placement: fixed task %d has no room on node %d", rc - 1,
                 task_node[rc - 1]);
        return PLACER_NOFIT;
    }
    if (rc < 0) {
        snprintf(err, errlen, "placement: out of memory");
        return PLACER_ERROR;
    }
    rc = place_eval(job, cl, plan, task_node, out);
    if (rc == MODEL_FEASIBLE) return PLACER_OK;
    if (out->placed) return PLACER_SLOW;
    /* A method booked a task where place_eval finds no room: a bug. */
    snprintf(err, errlen, "placement: internal error: %s", out->why);
    return PLACER_ERROR;
}

int placer_run(const model_job *job, const model_cluster *cl, const model_plan *plan,
               placer_method method, uint64_t seed, int *task_node, model_plan *out,
               char *err, size_t errlen) {
    return run_method(job, cl, plan, method, seed, 0, NULL, -1, NULL, task_node, out, err, errlen);
}

int placer_best_run(const model_job *job, const model_cluster *cl, const model_plan *plan,
                    uint64_t seed, long max_evals, long *evals, int *task_node,
                    model_plan *out, char *err, size_t errlen) {
    return run_method(job, cl, plan, PLACER_BEST, seed, max_evals, evals, -1, NULL, task_node, out,
                      err, errlen);
}

int placer_complete(const model_job *job, const model_cluster *cl, const model_plan *plan,
                    int first, const int *start, uint64_t seed, long max_evals, int *task_node,
                    model_plan *out, char *err, size_t errlen) {
    if (first < 0) first = 0;
    return run_method(job, cl, plan, PLACER_BEST, seed, max_evals, NULL, first, start, task_node,
                      out, err, errlen);
}
