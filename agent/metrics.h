/* metrics.h -- the training metrics: one row per step, its CSV columns and
 * the run's history of rows.
 *
 * The history is what a checkpoint stores (as CSV text, agent/ckptio.h) and
 * what a resumed run writes back to metrics.csv before its new rows, so a
 * resumed run's metrics.csv reads as an uninterrupted run's. A figure that
 * does not apply to a step is NAN (an empty CSV field).
 * Ownership: an agent_metrics_log owns its rows; agent_metrics_log_free
 * releases them (and accepts a zeroed log).
 */
#ifndef STRATA_AGENT_METRICS_H
#define STRATA_AGENT_METRICS_H

#include <stddef.h>
#include <stdio.h>

/* One row of metrics. NAN where a figure does not apply to the step. */
typedef struct {
    double step;             /* updates done */
    double episodes;         /* episodes played so far (global) */
    double time_s;           /* training wall time so far, over all runs */
    double samples_per_s;    /* episodes per second in this step */
    double episodic_return;  /* mean return (r_type + r_node) */
    double episodic_cost;    /* mean cost of the feasible episodes, dollars */
    double best_cost;        /* search: cheapest plan sampled so far */
    double gap_mean;         /* mean plan cost / exact - 1 over feasible episodes */
    double best_gap;         /* search: best_cost / exact - 1 */
    double best_from_ref;    /* search: 1 when a reference plan (exact, ...) is cheaper than
                                every sample so far, and is what the search returns; else 0 */
    double best_polished;    /* search: 1 when best_cost is a sample improved by polish
                                (segment moves, agent/train.c) rather than a sample as
                                played; else 0 */
    double infeasible_frac;  /* episodes without a feasible plan (or placement) */
    double policy_loss;      /* mean over episodes of -sum adv logp */
    double entropy;          /* mean entropy per decision (of the episodes with a gradient) */
    double zero_adv_share;   /* share of the episodes with a gradient whose TYPE advantage
                                is 0: near 1, the reward tells no sample from another */
    double grad_norm;        /* before clipping */
    double lr;
    double entropy_coef;
    double node_return;      /* mean r_node of the placed episodes */
    double eval_gap_greedy;  /* held-out configs: mean gap, greedy decoding */
    double eval_gap_sample;  /* ... sample eval_samples, keep the best */
    double eval_infeasible;  /* ... configs where greedy found no plan */
    double valid_gap_greedy; /* generated validation instances, greedy */
    double valid_node_at_best; /* placement: policy: share of the validation instances (of those
                                  where either places) whose greedy plan the node head places
                                  at `best`'s cost or less; a node-head phase keeps best.h5 by it */
    double valid_node_gap;   /* ... mean head / best - 1 where both keep the target */
    double dagger_xent;      /* dagger > 0: mean cross-entropy of the DAgger decisions
                                (from the cut on), as played, before the step */
    double dagger_played;    /* dagger > 0: share of the instances whose DAgger episode
                                was played (the others: a dead end, no completion);
                                node_dagger > 0: share whose node DAgger episode got a
                                lesson (the completion from its cut kept R) */
} agent_metrics;

/* The CSV columns, in order (names as in agent_metrics); agent_metrics_get
 * returns column i of m. */
int agent_metrics_columns(const char ***names);
double agent_metrics_get(const agent_metrics *m, int i);

/* agent_metrics_clear sets every figure of *m to NAN. */
void agent_metrics_clear(agent_metrics *m);

/* agent_metrics_csv_header writes the header line, agent_metrics_csv_row
 * one row (NAN as an empty field), into f. */
void agent_metrics_csv_header(FILE *f);
void agent_metrics_csv_row(FILE *f, const agent_metrics *m);

/* The rows of a run, oldest first. */
typedef struct {
    agent_metrics *rows; /* [n] */
    size_t n, cap;
} agent_metrics_log;

/* agent_metrics_log_push appends a copy of *m. Returns 0, or -1 when out of
 * memory (the log unchanged). */
int agent_metrics_log_push(agent_metrics_log *h, const agent_metrics *m);

/* agent_metrics_log_csv returns the log as CSV text, header first
 * (malloc'ed, the caller frees it), or NULL when out of memory. */
char *agent_metrics_log_csv(const agent_metrics_log *h);

/* agent_metrics_log_parse replaces the rows of h by those of CSV text
 * written by agent_metrics_log_csv, matching columns by the header's
 * names: a column the text lacks (a checkpoint older than the column) is
 * NAN, a column the table lacks is skipped. Returns 0, or -1 when the text
 * is malformed or memory runs out (h then holds the rows read so far). */
int agent_metrics_log_parse(agent_metrics_log *h, const char *text);

/* agent_metrics_log_free releases the rows and zeroes *h. */
void agent_metrics_log_free(agent_metrics_log *h);

#endif
