/*===- mpi_join.h - one world from several mpirun jobs --------------------===*
 *
 * Not part of the ABI: `ds-launch --no_ssh` starts one mpirun per node, each
 * with the same ompi-server; the ranks join here (mpi_join.c).
 *
 *===----------------------------------------------------------------------===*/
#ifndef DSRT_COMM_MPI_JOIN_H
#define DSRT_COMM_MPI_JOIN_H

#include <mpi.h>

/* After MPI_Init, collective over MPI_COMM_WORLD. Without the launcher's
 * DSRT_MPI_JOIN_* variables, or with one node, *world is MPI_COMM_WORLD;
 * else the merged communicator of every node's ranks, ordered by node rank
 * (node R's ranks follow node R-1's). Returns a DSRT status. */
int dsrt_mpi_join(MPI_Comm *world);
/* The world dsrt_mpi_join made: MPI_COMM_WORLD when it joined nothing. */
MPI_Comm dsrt_mpi_world(void);
/* Before MPI_Finalize: frees the merged world and disconnects from the
 * other jobs, so no rank writes to a socket another job's end closed. */
void dsrt_mpi_join_end(void);

#endif /* DSRT_COMM_MPI_JOIN_H */
