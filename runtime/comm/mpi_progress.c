/*===- mpi_progress.c - a thread that progresses MPI while ranks compute --===*
 *
 * The thread sleeps on a condition variable while nothing is in flight.
 * While something is, it wakes every DSRT_COMM_PROGRESS_US microseconds
 * (default 250) and, if the caller made no MPI call since the last wake (a
 * rank inside a wait progresses by itself), tests every in-flight request:
 * each MPI_Test runs Open MPI's progress engine, which moves the bytes of
 * every pending transfer and steps libnbc's collective schedules. It never
 * completes an operation for the caller: finishing work (averaging,
 * copies) stays in the backend's test, on the caller's thread.
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "comm/mpi_progress.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define DSRT_DEFAULT_PROGRESS_US 250

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static dsrt_mpi_inflight *in_flight;
static int caller_called;  /* an MPI call since the thread's last pass */
static int caller_waiting; /* threads inside a wait, which progress MPI */
static int running, stopping;
static long interval_ns;
static pthread_t thread;
static void (*pass_hook)(void);

void dsrt_mpi_lock(void) { pthread_mutex_lock(&lock); }

void dsrt_mpi_unlock(void) {
  caller_called = 1;
  pthread_mutex_unlock(&lock);
}

void dsrt_mpi_track(dsrt_mpi_inflight *op) {
  op->prev = NULL;
  op->next = in_flight;
  if (in_flight)
    in_flight->prev = op;
  in_flight = op;
}

void dsrt_mpi_untrack(dsrt_mpi_inflight *op) {
  if (op->prev)
    op->prev->next = op->next;
  else if (in_flight == op)
    in_flight = op->next;
  if (op->next)
    op->next->prev = op->prev;
  op->prev = op->next = NULL;
}

void dsrt_mpi_caller_waits(int on) {
  pthread_mutex_lock(&lock);
  caller_waiting += on ? 1 : -1;
  /* Woken also for a blocking call's operation: the caller stopped
   * spinning on it. */
  if (!caller_waiting && in_flight && running)
    pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
}

void dsrt_mpi_async_started(void) {
  pthread_mutex_lock(&lock);
  if (!caller_waiting && in_flight && running)
    pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
}

static void *progress_loop(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!stopping) {
    /* Each wake costs a context switch even when the pass does nothing. */
    if (!in_flight || caller_waiting) {
      pthread_cond_wait(&wake, &lock);
      continue;
    }
    if (!caller_called && pass_hook)
      pass_hook();
    if (!caller_called)
      for (dsrt_mpi_inflight *op = in_flight; op; op = op->next) {
        int flag;
        MPI_Testall(op->n, op->reqs, &flag, MPI_STATUSES_IGNORE);
      }
    caller_called = 0;
    pthread_mutex_unlock(&lock);
    struct timespec pause = {0, interval_ns};
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

int dsrt_mpi_progress_start(void (*each_pass)(void)) {
  const char *env = getenv("DSRT_COMM_PROGRESS_US");
  long us = env && *env ? atol(env) : DSRT_DEFAULT_PROGRESS_US;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (us <= 0 || level < MPI_THREAD_SERIALIZED || running)
    return running;
  interval_ns = us * 1000;
  pass_hook = each_pass;
  stopping = 0;
  running = pthread_create(&thread, NULL, progress_loop, NULL) == 0;
  return running;
}

void dsrt_mpi_progress_stop(void) {
  if (!running)
    return;
  pthread_mutex_lock(&lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  running = 0;
  in_flight = NULL; /* abandoned operations are leaked, not tracked */
}
