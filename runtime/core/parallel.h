/*===- parallel.h - libdsrt's own uses of the loop pool ----------*- C -*-===*/
#ifndef DSRT_CORE_PARALLEL_H
#define DSRT_CORE_PARALLEL_H

#include "dsrt/dsrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dsrt_parallel_for with an explicit thread count, for a kernel that has
 * set the BLAS to one thread for the calls inside its chunks. */
int dsrt_parallel_for_threads(dsrt_range_fn fn, void *ctx, int64_t begin,
                              int64_t end, int64_t threads);

#ifdef __cplusplus
}
#endif

#endif
