/* report.h -- what an evaluation writes: results.csv and summary.md.
 *
 * results.csv has one row per (instance, job, method, seed), in the order
 * of eval_run, with the header
 *
 *   instance,cluster,job,layers,method,family,seed,feasible,objective,
 *   cost,throughput,time,plan_cost,reference,gap,homogeneous,vs_homogeneous,
 *   cross_node_bytes,cross_zone_bytes,solve_seconds,note
 *
 * (docs/eval.md defines every column). Figures that do not apply are
 * empty. Numbers are printed with 12 significant digits, so two runs of
 * one config give the same file byte for byte but for solve_seconds (and
 * identical files altogether with no_times, which leaves it empty).
 *
 * summary.md holds the tables a reader wants, laid out so that they also
 * read well in a terminal: per method (rows, feasibility, mean and worst
 * gap to exact, cost relative to the homogeneous plan, traffic relative to
 * spread, solve time), then each objective per instance and method, the
 * placed figures, the infeasible cells and the plots.
 */
#ifndef STRATA_EVAL_REPORT_H
#define STRATA_EVAL_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "eval/instances.h"
#include "eval/run.h"
#include "eval/spec.h"

/* The plots made, for summary.md (eval/plot.h fills it). */
#define EVAL_MAX_PLOTS 16
typedef struct {
    int n;
    char file[EVAL_MAX_PLOTS][64];   /* relative to the out folder */
    char title[EVAL_MAX_PLOTS][160];
    char skipped[512];               /* plots not made, and why ("" when none) */
} eval_plots;

/* eval_write_csv writes results.csv at path. Returns 0 or -1 with err. */
int eval_write_csv(const char *path, const eval_spec *spec, const eval_instance *inst,
                   const eval_row *rows, int n_rows, int no_times, char *err, size_t errlen);

/* eval_write_summary writes summary.md at path; command is the command
 * line that made the run (shown at the top), plots the plots made. */
int eval_write_summary(const char *path, const char *command, const eval_spec *spec,
                       const eval_instance *inst, int n_inst, const eval_row *rows, int n_rows,
                       const eval_plots *plots, int no_times, char *err, size_t errlen);

/* eval_csv_header returns the header line of results.csv (no newline). */
const char *eval_csv_header(void);

/* The aligned Markdown tables summary.md is made of, for other reports
 * (strata simulate's): eval_table_init empties t for `cols` columns
 * (right[c] 1: right-aligned, a number; right may be NULL);
 * eval_table_row appends a row (row 0 is the header) of copies of
 * cells[cols] (NULL cells print empty), returning 0 or -1 when out of
 * memory; eval_table_print writes the table with a blank line after it;
 * eval_table_free releases the copies. */
typedef struct {
    int cols, rows, cap;
    char **cell;      /* [rows * cols], row 0 is the header */
    const int *right; /* [cols] 1: right-aligned (numbers) */
} eval_table;

void eval_table_init(eval_table *t, int cols, const int *right);
int eval_table_row(eval_table *t, char **cells);
void eval_table_print(FILE *f, const eval_table *t);
void eval_table_free(eval_table *t);

#endif
