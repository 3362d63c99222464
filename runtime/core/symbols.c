/*===- symbols.c - name -> address of every entry point compiled code calls
 * ===*/
#include "core/error.h"
#include "dsrt/dsrt.h"

#define DSRT_SYMBOL(fn)                                                        \
  { #fn, (void *)&fn }

static const dsrt_symbol symbols[] = {
    DSRT_SYMBOL(dsrt_version_string),
    DSRT_SYMBOL(dsrt_abi_version),
    DSRT_SYMBOL(dsrt_last_error),
    DSRT_SYMBOL(dsrt_error_clear),
    DSRT_SYMBOL(dsrt_status_string),
    DSRT_SYMBOL(dsrt_sgemm),
    DSRT_SYMBOL(dsrt_sgemm_strided_batched),
    DSRT_SYMBOL(dsrt_threads_set),
    DSRT_SYMBOL(dsrt_threads_get),
    DSRT_SYMBOL(dsrt_arena_create),
    DSRT_SYMBOL(dsrt_arena_destroy),
    DSRT_SYMBOL(dsrt_arena_base),
    DSRT_SYMBOL(dsrt_arena_capacity),
    DSRT_SYMBOL(dsrt_arena_alloc),
    DSRT_SYMBOL(dsrt_arena_reset),
    DSRT_SYMBOL(dsrt_arena_used),
    DSRT_SYMBOL(dsrt_arena_peak),
    DSRT_SYMBOL(dsrt_malloc),
    DSRT_SYMBOL(dsrt_aligned_alloc),
    DSRT_SYMBOL(dsrt_free),
    DSRT_SYMBOL(dsrt_mem_hold),
    DSRT_SYMBOL(dsrt_mem_bytes),
    DSRT_SYMBOL(dsrt_mem_peak_bytes),
    DSRT_SYMBOL(dsrt_mem_peak_reset),
    DSRT_SYMBOL(dsrt_workspace_alloc),
    DSRT_SYMBOL(dsrt_workspace_free),
    DSRT_SYMBOL(dsrt_adam),
    DSRT_SYMBOL(dsrt_adam_multi),
    DSRT_SYMBOL(dsrt_sgd),
    DSRT_SYMBOL(dsrt_sgd_multi),
    DSRT_SYMBOL(dsrt_lamb),
    DSRT_SYMBOL(dsrt_lamb_multi),
    DSRT_SYMBOL(dsrt_optim_simd_set),
    DSRT_SYMBOL(dsrt_optim_simd_get),
    DSRT_SYMBOL(dsrt_cuda_adam_multi),
    DSRT_SYMBOL(dsrt_comm_init),
    DSRT_SYMBOL(dsrt_comm_finalize),
    DSRT_SYMBOL(dsrt_comm_backend),
    DSRT_SYMBOL(dsrt_comm_world),
    DSRT_SYMBOL(dsrt_comm_rank),
    DSRT_SYMBOL(dsrt_comm_size),
    DSRT_SYMBOL(dsrt_comm_split),
    DSRT_SYMBOL(dsrt_comm_free),
    DSRT_SYMBOL(dsrt_comm_set_grid),
    DSRT_SYMBOL(dsrt_comm_axes),
    DSRT_SYMBOL(dsrt_all_reduce),
    DSRT_SYMBOL(dsrt_all_gather),
    DSRT_SYMBOL(dsrt_reduce_scatter),
    DSRT_SYMBOL(dsrt_all_to_all),
    DSRT_SYMBOL(dsrt_broadcast),
    DSRT_SYMBOL(dsrt_send),
    DSRT_SYMBOL(dsrt_recv),
    DSRT_SYMBOL(dsrt_barrier),
    DSRT_SYMBOL(dsrt_all_reduce_start),
    DSRT_SYMBOL(dsrt_all_gather_start),
    DSRT_SYMBOL(dsrt_reduce_scatter_start),
    DSRT_SYMBOL(dsrt_all_to_all_start),
    DSRT_SYMBOL(dsrt_broadcast_start),
    DSRT_SYMBOL(dsrt_send_start),
    DSRT_SYMBOL(dsrt_recv_start),
    DSRT_SYMBOL(dsrt_wait),
    DSRT_SYMBOL(dsrt_check),
    DSRT_SYMBOL(dsrt_comm_set_deterministic),
    DSRT_SYMBOL(dsrt_comm_deterministic),
    DSRT_SYMBOL(dsrt_comm_seconds),
    DSRT_SYMBOL(dsrt_p2p_seconds),
    DSRT_SYMBOL(dsrt_comm_seconds_reset),
    DSRT_SYMBOL(dsrt_phase_begin),
    DSRT_SYMBOL(dsrt_phase_seconds),
    DSRT_SYMBOL(dsrt_phase_reset),
    DSRT_SYMBOL(dsrt_trace_begin),
    DSRT_SYMBOL(dsrt_trace_end),
    DSRT_SYMBOL(dsrt_symbol_table),
};

int dsrt_symbol_table(const dsrt_symbol **out, int64_t *count) {
  if (!out || !count)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_symbol_table: out or count is NULL");
  *out = symbols;
  *count = (int64_t)(sizeof(symbols) / sizeof(symbols[0]));
  return DSRT_OK;
}
