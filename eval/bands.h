/* bands.h -- a trained policy judged by job size: the table of issue #15.
 *
 * For the single-job cost instances of an evaluation, grouped by layers
 * into bands (1-8, 9-16, 17-32, 33-64, and 65+ when any), eval_bands
 * reports for the policy methods found in the spec:
 *
 *   greedy   the first policy method decoding greedily with no placement
 *            and no polish:
 *            mean and worst gap of its plan to the exact optimum (rows whose
 *            exact plan is proven optimal), and `no plan`: decodes without
 *            a plan where exact has one;
 *   bo16     the first policy method decoding by sampling, no placement,
 *            no polish: mean gap (the config names the sample count, 16
 *            for the best-of-16), each job's gap the mean over the
 *            spec's seeds (the samples are the seed's draw);
 *   polish   the same for the first such method with polish (its kept
 *            plan finished by segment moves, agent_decode_opts.polish);
 *            its column is printed only when the spec has one;
 *   node     the first policy method placed by its node head's greedy
 *            placement alone (node_samples 0), against the first placed by
 *            `best` (the search placer): the share of jobs where the node
 *            head's placed cost is at most best's (1e-9 relative slack) or
 *            best found no placement;
 *   nodes    the same for the first policy method whose node head also
 *            samples placements (node_samples > 0): the cheapest of its
 *            greedy and sampled placements against best's. Its column is
 *            printed only when the spec has such a method.
 *
 * A column whose method the spec lacks reads "-". Apart from bo16, only
 * the rows of the first seed count (greedy decoding does not depend on
 * the seed). Ownership: nothing is kept; rows are read only.
 */
#ifndef STRATA_EVAL_BANDS_H
#define STRATA_EVAL_BANDS_H

#include <stdio.h>

#include "eval/run.h"
#include "eval/spec.h"

#define EVAL_BANDS 5

/* One band's figures (NAN when nothing to average). */
typedef struct {
    int lo, hi;          /* layers */
    int jobs;            /* single-job cost instances in the band */
    int gap_n;           /* greedy rows with a gap */
    double greedy_mean, greedy_worst;
    int no_plan;         /* greedy decodes without a plan where exact has one */
    int sample_n;
    double sample_mean;
    int polish_n;        /* the first sampling method with polish, no placement */
    double polish_mean;
    int node_n, node_ok; /* jobs compared; node head at least as good as best */
    int nodes_n, nodes_ok; /* the same with sampled placements (node_samples > 0) */
} eval_band;

/* eval_bands computes the bands into b[EVAL_BANDS]. Returns 1 when the
 * spec has a greedy policy method (the table applies), else 0. */
int eval_bands(const eval_spec *spec, const eval_row *rows, int n_rows, eval_band *b);

/* eval_bands_write prints the table as Markdown to f (nothing when
 * eval_bands returns 0). Returns 1 when it printed. */
int eval_bands_write(FILE *f, const eval_spec *spec, const eval_row *rows, int n_rows);

#endif
