/*===- swap.h - runtime-internal side of the NVMe state swap ---------------===*
 *
 * Not part of the ABI: how optim.c hands an update over swapped state to
 * swap.c, which streams the state through staging buffers and calls back
 * the same kernel on each chunk.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_OFFLOAD_SWAP_H
#define DSRT_OFFLOAD_SWAP_H

#include <stdint.h>

/* Whether `p` lies in a tensor registered with dsrt_swap_add. */
int dsrt_swap_holds(const void *p);

/* Runs `num_tensors` updates in place: params, grads and params16 are
 * memory; exp_avgs and exp_avg_sqs are swapped keys. */
typedef int (*swap_update_fn)(void *ctx, int64_t num_tensors,
                              float *const *params, const void *const *grads,
                              float *const *exp_avgs, float *const *exp_avg_sqs,
                              const int64_t *counts, void *const *params16);

/* Calls `update` on chunks of the tensors whose two states are read from
 * their files ahead of it and written back behind it. A chunk cuts a tensor
 * only at multiples of `block` elements from its start, so each element
 * meets the kernel's same code path as in one unchunked call. */
int dsrt_swap_update(const char *fn, int64_t num_tensors, float *const *params,
                     const void *const *grads, int grad_dtype,
                     float *const *exp_avgs, float *const *exp_avg_sqs,
                     const int64_t *counts, void *const *params16,
                     int param16_dtype, int64_t block, swap_update_fn update,
                     void *ctx);

#endif /* DSRT_OFFLOAD_SWAP_H */
