/* ranks.c -- the collective operations of a training run (see ranks.h):
 * thin wrappers over MPI on MPI_COMM_WORLD, compiled out without MPI.
 */
#include "agent/ranks.h"

#ifdef STRATA_HAVE_MPI
#include <mpi.h>
#endif

void agent_ranks_world(int *rank, int *size) {
    *rank = 0;
    *size = 1;
#ifdef STRATA_HAVE_MPI
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) {
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
        MPI_Comm_size(MPI_COMM_WORLD, size);
    }
#endif
}

void agent_ranks_sum_d(int ranks, double *x, int n) {
#ifdef STRATA_HAVE_MPI
    if (ranks > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)ranks, (void)x, (void)n;
#endif
}

void agent_ranks_sum_f(int ranks, float *x, size_t n) {
#ifdef STRATA_HAVE_MPI
    if (ranks > 1) MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)ranks, (void)x, (void)n;
#endif
}

int agent_ranks_max_i(int ranks, int flag) {
#ifdef STRATA_HAVE_MPI
    if (ranks > 1) MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#else
    (void)ranks;
#endif
    return flag;
}

void agent_ranks_gather_d(int ranks, double *x, int n_local) {
#ifdef STRATA_HAVE_MPI
    if (ranks > 1) MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, n_local, MPI_DOUBLE, MPI_COMM_WORLD);
#else
    (void)ranks, (void)x, (void)n_local;
#endif
}

void agent_ranks_bcast_i(int ranks, int *x, int n, int root) {
#ifdef STRATA_HAVE_MPI
    if (ranks > 1) MPI_Bcast(x, n, MPI_INT, root, MPI_COMM_WORLD);
#else
    (void)ranks, (void)x, (void)n, (void)root;
#endif
}
