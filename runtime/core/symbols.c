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
    DSRT_SYMBOL(dsrt_adam),
    DSRT_SYMBOL(dsrt_adam_multi),
    DSRT_SYMBOL(dsrt_sgd),
    DSRT_SYMBOL(dsrt_sgd_multi),
    DSRT_SYMBOL(dsrt_lamb),
    DSRT_SYMBOL(dsrt_lamb_multi),
    DSRT_SYMBOL(dsrt_optim_simd_set),
    DSRT_SYMBOL(dsrt_optim_simd_get),
    DSRT_SYMBOL(dsrt_cuda_adam_multi),
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
