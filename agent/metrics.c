/* metrics.c -- the training metrics (see metrics.h): one table of columns
 * (name, offset in agent_metrics) walked by the CSV writer and reader.
 */
#include "agent/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    size_t off;
} col;

#define C(n) {#n, offsetof(agent_metrics, n)}
static const col COLS[] = {
    C(step), C(episodes), C(time_s), C(samples_per_s), C(episodic_return), C(episodic_cost),
    C(best_cost), C(gap_mean), C(best_gap), C(best_from_ref), C(best_polished), C(infeasible_frac), C(policy_loss),
    C(entropy), C(zero_adv_share), C(grad_norm), C(lr), C(entropy_coef), C(node_return), C(eval_gap_greedy),
    C(eval_gap_sample), C(eval_infeasible), C(valid_gap_greedy), C(valid_node_at_best),
    C(valid_node_gap), C(dagger_xent), C(dagger_played),
};
#undef C
#define N_COLS ((int)(sizeof COLS / sizeof *COLS))

int agent_metrics_columns(const char ***names) {
    static const char *n[N_COLS];
    for (int i = 0; i < N_COLS; i++) n[i] = COLS[i].name;
    if (names) *names = n;
    return N_COLS;
}

static double mget(const agent_metrics *m, int i) {
    return *(const double *)((const char *)m + COLS[i].off);
}

static void mset(agent_metrics *m, int i, double v) { *(double *)((char *)m + COLS[i].off) = v; }

double agent_metrics_get(const agent_metrics *m, int i) { return mget(m, i); }

void agent_metrics_clear(agent_metrics *m) {
    for (int i = 0; i < N_COLS; i++) mset(m, i, NAN);
}

void agent_metrics_csv_header(FILE *f) {
    for (int i = 0; i < N_COLS; i++) fprintf(f, "%s%s", i ? "," : "", COLS[i].name);
    fputc('\n', f);
}

void agent_metrics_csv_row(FILE *f, const agent_metrics *m) {
    for (int i = 0; i < N_COLS; i++) {
        double v = mget(m, i);
        if (i) fputc(',', f);
        if (!isnan(v)) fprintf(f, "%.10g", v);
    }
    fputc('\n', f);
}

int agent_metrics_log_push(agent_metrics_log *h, const agent_metrics *m) {
    if (h->n == h->cap) {
        size_t c = h->cap ? 2 * h->cap : 1024;
        agent_metrics *r = realloc(h->rows, c * sizeof *r);
        if (!r) return -1;
        h->rows = r;
        h->cap = c;
    }
    h->rows[h->n++] = *m;
    return 0;
}

char *agent_metrics_log_csv(const agent_metrics_log *h) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    agent_metrics_csv_header(f);
    for (size_t i = 0; i < h->n; i++) agent_metrics_csv_row(f, &h->rows[i]);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* header_map sets map[j] to the table column of the header's field j (-1
 * when the table has none) for the header line at text; returns the number
 * of fields, or -1 when there are more than cap. */
static int header_map(const char *text, int *map, int cap) {
    int n = 0;
    const char *s = text;
    for (;;) {
        size_t len = strcspn(s, ",\n");
        if (n == cap) return -1;
        map[n] = -1;
        for (int i = 0; i < N_COLS; i++)
            if (strlen(COLS[i].name) == len && !strncmp(COLS[i].name, s, len)) map[n] = i;
        n++;
        if (s[len] != ',') break;
        s += len + 1;
    }
    return n;
}

int agent_metrics_log_parse(agent_metrics_log *h, const char *text) {
    h->n = 0;
    int map[4 * N_COLS];
    int nf = header_map(text, map, 4 * N_COLS);
    if (nf < 0) return -1;
    const char *s = strchr(text, '\n'); /* past the header */
    while (s && *++s) {
        agent_metrics m;
        agent_metrics_clear(&m);
        for (int j = 0; j < nf; j++) {
            char *end;
            double v = NAN;
            if (*s != ',' && *s != '\n' && *s) {
                v = strtod(s, &end);
                if (end == s) return -1;
                s = end;
            }
            if (map[j] >= 0) mset(&m, map[j], v);
            if (j + 1 < nf) {
                if (*s != ',') return -1;
                s++;
            }
        }
        if (agent_metrics_log_push(h, &m)) return -1;
        s = strchr(s, '\n');
    }
    return 0;
}

void agent_metrics_log_free(agent_metrics_log *h) {
    free(h->rows);
    memset(h, 0, sizeof *h);
}
