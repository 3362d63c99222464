/*===- unavailable.c - the CUDA entry points of a build without nvcc ------===*/
#include "core/error.h"
#include "dsrt/dsrt.h"

int dsrt_cuda_adam_multi(
    int64_t num_tensors, float *const *params, const void *const *grads,
    int grad_dtype, float *const *exp_avgs, float *const *exp_avg_sqs,
    const int64_t *counts, int64_t step, float lr, float beta1, float beta2,
    float eps, float weight_decay, int adamw_mode, int bias_correction,
    float grad_scale, void *const *params16, int param16_dtype, void *stream) {
  (void)num_tensors, (void)params, (void)grads, (void)grad_dtype;
  (void)exp_avgs, (void)exp_avg_sqs, (void)counts, (void)step, (void)lr;
  (void)beta1, (void)beta2, (void)eps, (void)weight_decay, (void)adamw_mode;
  (void)bias_correction, (void)grad_scale, (void)params16;
  (void)param16_dtype, (void)stream;
  return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                   "dsrt_cuda_adam_multi: libdsrt was built without CUDA "
                   "(no nvcc at configure time; see DS_NVCC)");
}
