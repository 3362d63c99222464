/*===- mpi_liveness.h - naming the peers a timed-out wait lost ------------===*
 *
 * Not part of the ABI: the mpi backend's liveness pings (mpi_liveness.c).
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_COMM_MPI_LIVENESS_H
#define DSRT_COMM_MPI_LIVENESS_H

#include <mpi.h>
#include <stddef.h>

/* Collective over world (libdsrt's), after MPI_Init: a private duplicate for
 * pings and every rank's host name. Returns 0 when unavailable (timeouts
 * then name no peer). */
int dsrt_mpi_liveness_start(MPI_Comm world);
void dsrt_mpi_liveness_stop(void);
/* Answers the pings that arrived; cheap when none did. */
void dsrt_mpi_answer_peers(void);
/* Pings every other rank and waits up to window seconds for the answers;
 * writes "world rank R on HOST, ..." for the silent ones into out and
 * returns how many there are (-1: unavailable). */
int dsrt_mpi_unanswered_peers(double window, char *out, size_t n);

#endif /* DSRT_COMM_MPI_LIVENESS_H */
