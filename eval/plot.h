/* plot.h -- the evaluation's plots, drawn by gnuplot (Debian's gnuplot-nox).
 *
 * For every plot a tab-separated data file and a gnuplot script are
 * written to OUT/plots/ (so a reader can restyle any plot by editing the
 * script and running `gnuplot NAME.gp` there), then gnuplot renders
 * NAME.png with the pngcairo terminal. Every plot has a title, axis labels
 * with units and a legend. The plots, each made when the run has rows for
 * it:
 *
 *   cost_by_method      training cost ($) per instance, one bar per method
 *   jct_by_method       sum of completion times (h) per batch and method
 *   gap_by_method       distribution of the gap to exact (%), a box per method
 *   time_vs_layers      solve time (s) against the job's layers, per method
 *   throughput_by_method, cross_node_by_method, cross_zone_by_method
 *                       placed rows: throughput' (samples/s) and traffic
 *                       per step (MB) per instance and method
 *   learning_curve      the training log named by learning_curve: in the config
 *
 * gnuplot's own messages go to OUT/plots/gnuplot.log.
 */
#ifndef STRATA_EVAL_PLOT_H
#define STRATA_EVAL_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "eval/instances.h"
#include "eval/report.h"
#include "eval/run.h"
#include "eval/spec.h"

/* eval_plots_make writes and renders every plot that applies into
 * out_dir/plots and lists them in *made (and those skipped, with why).
 * no_times skips time_vs_layers. Returns 0, or -1 with err when a file
 * cannot be written or gnuplot fails (those made so far are listed). */
int eval_plots_make(const char *out_dir, const eval_spec *spec, const eval_instance *inst,
                    int n_inst, const eval_row *rows, int n_rows, int no_times,
                    eval_plots *made, char *err, size_t errlen);

/* Building blocks for other reports' plots (strata simulate's): each plot
 * is NAME.dat and NAME.gp in a plots folder the caller made (eval_mkdirs).
 * eval_plot_header writes the gnuplot preamble (pngcairo terminal w x h,
 * output NAME.png, title, tab-separated data, "?" as missing, grid and 16
 * distinct line colours); eval_plot_render runs gnuplot on NAME.gp in dir
 * (its messages appended to dir/gnuplot.log) and lists plots/NAME.png
 * with its title in *made. Returns 0, or -1 with err (gnuplot missing or
 * failing). */
void eval_plot_header(FILE *g, const char *name, int w, int h, const char *title);
int eval_plot_render(const char *dir, const char *name, const char *title, eval_plots *made,
                     char *err, size_t errlen);

#endif
