/*===- mpi_progress.h - moving bytes while the caller computes ------------===*
 *
 * Open MPI advances nonblocking operations only inside MPI calls. A started
 * collective therefore sits still while the rank computes, and all of its
 * transfer lands in the wait. mpi_progress.c runs one thread per process
 * that calls into MPI while operations are in flight and the caller has
 * not called MPI for a while. MPI runs at MPI_THREAD_SERIALIZED: every MPI
 * call of the backend, and the thread's, holds one lock.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_COMM_MPI_PROGRESS_H
#define DSRT_COMM_MPI_PROGRESS_H

#include <mpi.h>

/* An in-flight operation's MPI requests, linked while it is in flight. */
typedef struct dsrt_mpi_inflight {
  struct dsrt_mpi_inflight *prev, *next;
  int n;
  MPI_Request *reqs;
} dsrt_mpi_inflight;

/* Starts the thread unless DSRT_COMM_PROGRESS_US is 0 or MPI's thread level
 * is below MPI_THREAD_SERIALIZED; returns whether it runs. Each pass that
 * tests the requests in flight first calls each_pass (under the lock): the
 * backend posts the operations that waited for earlier ones. */
int dsrt_mpi_progress_start(void (*each_pass)(void));
void dsrt_mpi_progress_stop(void);

/* Around every MPI call of the backend. */
void dsrt_mpi_lock(void);
void dsrt_mpi_unlock(void);

/* Under the lock: an operation enters or leaves the in-flight list. */
void dsrt_mpi_track(dsrt_mpi_inflight *op);
void dsrt_mpi_untrack(dsrt_mpi_inflight *op);
/* Not under the lock: the caller starts (on = 1) or stops (0) spinning in
 * a wait, in which its own MPI_Test calls progress everything in flight;
 * the thread sleeps until no caller spins. */
void dsrt_mpi_caller_waits(int on);
/* Not under the lock: an operation was started to complete in the
 * background; wakes the thread unless a caller waits. A blocking call's
 * operation does not wake it while its caller spins (dsrt_comm_wait_on):
 * one wake per call cost 5-10% of a 1 MiB all-to-all on a loaded 2-core
 * machine. */
void dsrt_mpi_async_started(void);

#endif /* DSRT_COMM_MPI_PROGRESS_H */
