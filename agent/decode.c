/* decode.c -- greedy decoding with backtracking (see decode.h). */
#include "agent/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int depth;   /* the decision revisited */
    int *prefix; /* [depth] actions before it */
    int alt[64]; /* other allowed actions, most likely first */
    int n_alt, next;
} frame;

typedef struct {
    frame *f;
    int n, cap;
} stack;

static void stack_free(stack *s) {
    for (int i = 0; i < s->n; i++) free(s->f[i].prefix);
    free(s->f);
}

/* push_frames pushes, for every decision j in [from, d), a frame with the
 * allowed actions other than the one played, by descending probability;
 * the deepest ends on top. Returns 0 or -1 (no memory). */
static int push_frames(stack *s, const agent_rollout *ro, int from, int d) {
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(ro, &T, &K, &action, &mask, &probs);
    for (int j = from; j < d; j++) {
        /* B = 1: row j */
        if (s->n == s->cap) {
            int c = s->cap ? 2 * s->cap : 64;
            frame *f = realloc(s->f, (size_t)c * sizeof *f);
            if (!f) return -1;
            s->f = f;
            s->cap = c;
        }
        frame *fr = &s->f[s->n];
        memset(fr, 0, sizeof *fr);
        fr->depth = j;
        fr->prefix = malloc((size_t)(j > 0 ? j : 1) * sizeof *fr->prefix);
        if (!fr->prefix) return -1;
        for (int t = 0; t < j; t++) fr->prefix[t] = action[t];
        for (int k = 0; k < K && fr->n_alt < 64; k++)
            if (mask[(size_t)j * K + k] && k != action[j]) fr->alt[fr->n_alt++] = k;
        /* insertion sort by probability, descending (ties: lower index first) */
        const float *pr = probs + (size_t)j * K;
        for (int a = 1; a < fr->n_alt; a++)
            for (int b = a; b > 0 && pr[fr->alt[b]] > pr[fr->alt[b - 1]]; b--) {
                int tmp = fr->alt[b];
                fr->alt[b] = fr->alt[b - 1];
                fr->alt[b - 1] = tmp;
            }
        s->n++;
    }
    return 0;
}

/* decode_from is agent_decode_greedy with the first n_prefix TYPE actions
 * forced to prefix[] (n_prefix 0: none); backtracking revisits only the
 * decisions from n_fixed on (n_fixed <= n_prefix: n_prefix keeps the
 * prefix, 0 lets it revisit every one). Same returns. */
static int decode_from(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                       int placement, double penalty, const int *prefix, int n_prefix, int n_fixed,
                       int max_runs, int *assign, int *runs, char *err, size_t errlen) {
    int L = in->job->n_layers;
    int *forced = malloc((size_t)L * sizeof *forced);
    if (!forced) {
        snprintf(err, errlen, "decode: out of memory");
        return -1;
    }
    const int *fp[1] = {forced};
    int of[1] = {0};
    stack st = {NULL, 0, 0};
    int status = 1, n = 0, plen = n_fixed;
    for (int t = 0; t < L; t++) forced[t] = t < n_prefix ? prefix[t] : -1;
    if (max_runs < 1) max_runs = 1;
    for (;;) {
        agent_rollout_opts o = {.placement = placement,
                                .greedy = 1,
                                .penalty = penalty,
                                .seed = 0,
                                .stream = 0,
                                .ep_base = 0,
                                .ep_total = 1,
                                .record = 0,
                                .forced = fp};
        if (agent_rollout_run(ro, p, in, 1, of, 1, &o, NULL, err, errlen)) {
            status = -1;
            break;
        }
        n++;
        const agent_episode *e = agent_rollout_episode(ro, 0);
        if (e->feasible) {
            memcpy(assign, agent_rollout_assign(ro, 0), (size_t)L * sizeof *assign);
            status = 0;
            break;
        }
        if (n >= max_runs) break;
        int T, K;
        const int *action;
        const uint8_t *mask;
        const float *probs;
        agent_rollout_type_steps(ro, &T, &K, &action, &mask, &probs);
        int d = 0;
        while (d < L && action[d] >= 0) d++;
        if (push_frames(&st, ro, plen, d)) {
            snprintf(err, errlen, "decode: out of memory");
            status = -1;
            break;
        }
        /* the deepest frame with an alternative left */
        while (st.n > 0 && st.f[st.n - 1].next >= st.f[st.n - 1].n_alt) {
            free(st.f[st.n - 1].prefix);
            st.n--;
        }
        if (st.n == 0) break; /* every allowed prefix tried: none completes */
        frame *fr = &st.f[st.n - 1];
        for (int t = 0; t < L; t++) forced[t] = -1;
        memcpy(forced, fr->prefix, (size_t)fr->depth * sizeof *forced);
        forced[fr->depth] = fr->alt[fr->next++];
        plen = fr->depth + 1;
    }
    stack_free(&st);
    free(forced);
    if (runs) *runs = n;
    return status;
}

int agent_decode_greedy(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                        int placement, double penalty, int max_runs, int *assign, int *runs,
                        char *err, size_t errlen) {
    return decode_from(ro, p, in, placement, penalty, NULL, 0, 0, max_runs, assign, runs, err,
                       errlen);
}

int agent_decode_played(const agent_rollout *ro, int b, int *played) {
    int T, K;
    const int *action;
    const uint8_t *mask;
    const float *probs;
    agent_rollout_type_steps(ro, &T, &K, &action, &mask, &probs);
    int B = agent_rollout_episodes(ro), n = 0;
    if (b < 0 || b >= B) return 0;
    while (n < T && action[(size_t)n * B + b] >= 0) {
        played[n] = action[(size_t)n * B + b];
        n++;
    }
    return n;
}

int agent_decode_repair(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                        int placement, double penalty, const int *played, int n_played,
                        int max_runs, int *assign, int *runs, char *err, size_t errlen) {
    if (n_played < 0 || n_played > in->job->n_layers) {
        snprintf(err, errlen, "decode: %d played actions for a job of %d layers", n_played,
                 in->job->n_layers);
        return -1;
    }
    return decode_from(ro, p, in, placement, penalty, played, n_played, 0, max_runs, assign, runs,
                       err, errlen);
}

int agent_decode_anchored(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                          int placement, double penalty, const int *anchor, int max_runs,
                          int *assign, int *runs, int *n_anchored, char *err, size_t errlen) {
    int L = in->job->n_layers, total = 0, status = 1;
    if (max_runs < 1) max_runs = 1;
    *n_anchored = 0;
    /* k = L/8, 2L/8, ..., L (distinct, increasing): the first that
     * completes is kept; k = L is the anchor itself, which the sound mask
     * lets through */
    for (int step = 1, last = 0; step <= AGENT_ANCHOR_STEPS && status == 1; step++) {
        int k = (int)(((long)L * step + AGENT_ANCHOR_STEPS - 1) / AGENT_ANCHOR_STEPS);
        if (k <= last) continue;
        last = k;
        int n = 0;
        status = decode_from(ro, p, in, placement, penalty, anchor, k, k, k == L ? 1 : max_runs,
                             assign, &n, err, errlen);
        total += n;
        if (status == 0) *n_anchored = k;
    }
    if (runs) *runs = total;
    return status;
}
