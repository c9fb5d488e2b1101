/* ranks.h -- the collective operations of a training run over MPI ranks.
 *
 * A run spans MPI_COMM_WORLD when the program called MPI_Init (built with
 * STRATA_HAVE_MPI); otherwise, or on one rank, every operation is a no-op
 * that leaves its buffer as it is. Every rank of a run must make the same
 * calls in the same order (they are collectives). `ranks` is the run's rank
 * count as agent_ranks_world gave it.
 */
#ifndef STRATA_AGENT_RANKS_H
#define STRATA_AGENT_RANKS_H

#include <stddef.h>

/* agent_ranks_world sets *rank and *size to this process's rank in
 * MPI_COMM_WORLD and the world's size while MPI is initialized and not
 * finalized, else to 0 and 1. */
void agent_ranks_world(int *rank, int *size);

/* x[n] := the element-wise sum of every rank's x[n]. */
void agent_ranks_sum_d(int ranks, double *x, int n);
void agent_ranks_sum_f(int ranks, float *x, size_t n);

/* agent_ranks_max_i returns the maximum of flag over the ranks. */
int agent_ranks_max_i(int ranks, int flag);

/* agent_ranks_gather_d: x holds ranks slices of n_local doubles, rank r's
 * own at x + r * n_local; afterwards every rank holds every slice. */
void agent_ranks_gather_d(int ranks, double *x, int n_local);

/* agent_ranks_bcast_i copies rank root's x[n] to every rank. */
void agent_ranks_bcast_i(int ranks, int *x, int n, int root);

#endif
