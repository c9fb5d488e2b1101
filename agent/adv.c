/* adv.c -- the rewards the advantages see, baselines and advantages (see
 * adv.h). */
#include "agent/adv.h"

#include <math.h>
#include <stdlib.h>

#include "agent/trainconf.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define HAS(e) (!has || has[e])

int agent_advantages(const agent_adv_opts *o, int G, int S, const double *r, const uint8_t *has,
                     double *adv, uint8_t *keep, double *base, int *init, int init_bit) {
    int B = G * S;
    for (int e = 0; e < B; e++) adv[e] = 0;
    if (o->risk > 0 && keep) {
        double *v = malloc((size_t)S * sizeof *v);
        if (!v) return -1;
        for (int g = 0; g < G; g++) {
            int n = 0;
            for (int s = 0; s < S; s++)
                if (HAS(g * S + s)) v[n++] = r[g * S + s];
            if (n == 0) continue;
            qsort(v, (size_t)n, sizeof *v, cmp_double);
            int qi = (int)floor((1.0 - o->risk) * n);
            if (qi >= n) qi = n - 1;
            double q = v[qi];
            for (int s = 0; s < S; s++) {
                int e = g * S + s;
                if (!HAS(e)) continue;
                if (r[e] >= q)
                    adv[e] = r[e] - q;
                else
                    keep[e] = 0;
            }
        }
        free(v);
    } else if (o->baseline == AGENT_BASE_SHARED) {
        for (int g = 0; g < G; g++) {
            double sum = 0;
            int n = 0;
            for (int s = 0; s < S; s++)
                if (HAS(g * S + s)) {
                    sum += r[g * S + s];
                    n++;
                }
            if (n < 2) continue;
            for (int s = 0; s < S; s++) {
                int e = g * S + s;
                if (HAS(e)) adv[e] = r[e] - (sum - r[e]) / (n - 1);
            }
        }
    } else {
        double sum = 0;
        int n = 0;
        for (int e = 0; e < B; e++)
            if (HAS(e)) {
                sum += r[e];
                n++;
            }
        if (n > 0) {
            double mean = sum / n;
            if (!(*init & init_bit)) {
                *base = mean;
                *init |= init_bit;
            }
            for (int e = 0; e < B; e++)
                if (HAS(e)) adv[e] = r[e] - *base;
            *base = o->decay * *base + (1 - o->decay) * mean;
        }
    }
    if (o->norm) {
        double s1 = 0, s2 = 0;
        int n = 0;
        for (int e = 0; e < B; e++) {
            if (!HAS(e) || (keep && !keep[e])) continue;
            s1 += adv[e];
            s2 += adv[e] * adv[e];
            n++;
        }
        if (n > 1) {
            double m = s1 / n, var = s2 / n - m * m;
            double sd = sqrt(var > 0 ? var : 0) + 1e-8;
            for (int e = 0; e < B; e++) adv[e] /= sd;
        }
    }
    return 0;
}

int agent_rewards_settle(int mode, double penalty, int G, int S, double *r, const uint8_t *ok,
                         const uint8_t *has) {
    if (mode == AGENT_REWARD_RATIO) return 0;
    double *v = malloc((size_t)S * sizeof *v);
    if (!v) return -1;
    for (int g = 0; g < G; g++) {
        double *rg = r + (size_t)g * S;
        const uint8_t *og = ok + (size_t)g * S, *hg = has ? has + (size_t)g * S : NULL;
        if (mode == AGENT_REWARD_LOG) {
            double w = INFINITY;
            for (int s = 0; s < S; s++)
                if ((!hg || hg[s]) && og[s] && rg[s] < w) w = rg[s];
            double floor = (isfinite(w) ? w : 0.0) - log(penalty);
            for (int s = 0; s < S; s++)
                if ((!hg || hg[s]) && !og[s]) rg[s] = floor;
            continue;
        }
        int n = 0;
        for (int s = 0; s < S; s++) n += !hg || hg[s];
        for (int s = 0; s < S; s++) {
            if (hg && !hg[s]) continue;
            int better = 0;
            for (int f = 0; f < S; f++) {
                if (hg && !hg[f]) continue;
                better += og[f] != og[s] ? og[f] > og[s] : og[s] && rg[f] > rg[s];
            }
            v[s] = n > 1 ? -(double)better / (n - 1) : 0.0;
        }
        for (int s = 0; s < S; s++)
            if (!hg || hg[s]) rg[s] = v[s];
    }
    free(v);
    return 0;
}

double agent_zero_adv_share(int B, const double *adv, const uint8_t *has, const uint8_t *keep) {
    int n = 0, z = 0;
    for (int e = 0; e < B; e++) {
        if ((has && !has[e]) || (keep && !keep[e])) continue;
        n++;
        z += fabs(adv[e]) < 1e-12;
    }
    return n ? (double)z / n : NAN;
}
