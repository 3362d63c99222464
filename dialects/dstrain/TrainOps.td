//===- TrainOps.td - dstrain operations --------------------*- tablegen -*-===//
#ifndef DSTRAIN_OPS
#define DSTRAIN_OPS

include "dstrain/TrainBase.td"
include "dstrain/TrainAttrs.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_FloatTensor : RankedTensorOf<[AnyFloat]>;

// 0-d tensors with one fixed type: buildable, so formats need not spell them.
def Train_F32Scalar : 0DTensorOf<[F32]>,
  BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
// A running sum of squares: f64 where one rank chains the sums (see
// global_norm), f32 where ranks add theirs up.
def Train_SquaresScalar : 0DTensorOf<[F32, F64]>;
def Train_I64Scalar : 0DTensorOf<[I64]>,
  BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;
def Train_I1Scalar : 0DTensorOf<[I1]>,
  BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI1Type())">;

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

def Train_AdamOp : Train_Op<"adam", [Pure, AllTypesMatch<["param", "exp_avg",
    "exp_avg_sq", "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "Fused Adam / AdamW update";
  let description = [{
    One step of DeepSpeed's FusedAdam for `step` t (1 for the first update):

      m = beta1 m + (1 - beta1) g          v = beta2 v + (1 - beta2) g²
      m̂ = m / (1 - beta1^t), v̂ = v / (1 - beta2^t)   (if bias_correction)
      p = p - lr (m̂ / (sqrt(v̂) + eps) + weight_decay p)   (adam_w_mode)

    Without `adam_w_mode` the decay is L2 instead: `g += weight_decay p`
    before the moments. The grad is read in its own precision and widened
    to f32. With `skip` true (an fp16 step whose gradients overflowed) the
    results are the inputs unchanged; the same holds for `dstrain.lamb` and
    `dstrain.sgd`.

      %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr
          {weight_decay = 0.01 : f64} : tensor<4096xf32>, tensor<4096xbf16>
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
      Train_FloatTensor:$exp_avg, Train_FloatTensor:$exp_avg_sq,
      Train_I64Scalar:$step, Train_F32Scalar:$lr,
      Optional<Train_I1Scalar>:$skip,
      DefaultValuedAttr<F64Attr, "0.9">:$beta1,
      DefaultValuedAttr<F64Attr, "0.999">:$beta2,
      DefaultValuedAttr<F64Attr, "1e-8">:$eps,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
      DefaultValuedAttr<BoolAttr, "true">:$adam_w_mode,
      DefaultValuedAttr<BoolAttr, "true">:$bias_correction);
  let results = (outs Train_FloatTensor:$new_param,
      Train_FloatTensor:$new_exp_avg, Train_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `step` $step `lr` $lr
    (`skip` $skip^)? attr-dict `:` type($param) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Train_LambOp : Train_Op<"lamb", [Pure, AllTypesMatch<["param", "exp_avg",
    "exp_avg_sq", "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "Fused LAMB update (Adam with a layer-wise trust ratio)";
  let description = [{
    The Adam update `u = m̂ / (sqrt(v̂) + eps) + weight_decay p` (moments as
    in `dstrain.adam`) is scaled by the trust ratio
    `clamp(‖p‖ / ‖u‖, min_coeff, max_coeff)` (1 when either norm is 0):
    `p = p - lr · ratio · u`, as DeepSpeed's FusedLamb. The norms are over
    the whole operand, so a sharded parameter needs its norms reduced first.

      %p1, %m1, %v1 = dstrain.lamb %p, %g, %m, %v step %t lr %lr
          : tensor<4096xf32>, tensor<4096xf16>
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
      Train_FloatTensor:$exp_avg, Train_FloatTensor:$exp_avg_sq,
      Train_I64Scalar:$step, Train_F32Scalar:$lr,
      Optional<Train_I1Scalar>:$skip,
      DefaultValuedAttr<F64Attr, "0.9">:$beta1,
      DefaultValuedAttr<F64Attr, "0.999">:$beta2,
      DefaultValuedAttr<F64Attr, "1e-8">:$eps,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
      DefaultValuedAttr<BoolAttr, "true">:$bias_correction,
      DefaultValuedAttr<F64Attr, "10.0">:$max_coeff,
      DefaultValuedAttr<F64Attr, "0.01">:$min_coeff);
  let results = (outs Train_FloatTensor:$new_param,
      Train_FloatTensor:$new_exp_avg, Train_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `step` $step `lr` $lr
    (`skip` $skip^)? attr-dict `:` type($param) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Train_SGDOp : Train_Op<"sgd", [Pure, AllTypesMatch<["param",
    "momentum_buffer", "new_param", "new_momentum_buffer"]>]> {
  let summary = "SGD with momentum, dampening and Nesterov, as PyTorch";
  let description = [{
    `g += weight_decay p`; with momentum, `buf = g` at step 1 and
    `buf = momentum buf + (1 - dampening) g` afterwards, then `g = buf`
    (or `g + momentum buf` with `nesterov`); `p = p - lr g`. With momentum 0
    the buffer passes through unchanged.

      %p1, %b1 = dstrain.sgd %p, %g, %buf step %t lr %lr {momentum = 0.9 : f64}
          : tensor<4096xf32>, tensor<4096xf32>
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
      Train_FloatTensor:$momentum_buffer,
      Train_I64Scalar:$step, Train_F32Scalar:$lr,
      Optional<Train_I1Scalar>:$skip,
      DefaultValuedAttr<F64Attr, "0.0">:$momentum,
      DefaultValuedAttr<F64Attr, "0.0">:$dampening,
      DefaultValuedAttr<BoolAttr, "false">:$nesterov,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param,
      Train_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `step` $step `lr` $lr
    (`skip` $skip^)? attr-dict `:` type($param) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Train_ApplyOp : Train_Op<"apply"> {
  let summary = "An optimizer update on buffers, in place";
  let description = [{
    The bufferized form of `dstrain.adam`, `dstrain.lamb` and `dstrain.sgd`
    (`optimizer` names which): reads `grad`, `step` and `lr`, updates
    `param` and the `state` buffers in place (`exp_avg`, `exp_avg_sq` for
    adam and lamb; `momentum_buffer` for sgd). `hyper` holds the tensor op's
    hyper-parameters, every one spelled out. Buffers are contiguous row-major
    (an offset is fine); param and state are f32, grad f32, f16 or bf16.
    Made by bufferization, lowered to `dsrt_adam_multi` and friends by
    `ds-lower-optimizer-to-runtime`.

      dstrain.apply "adam" %p, %g state(%m, %v) step %t lr %lr
          hyper {adam_w_mode = true, beta1 = 0.9 : f64, ...}
          : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>,
            memref<i64>, memref<f32>
  }];
  let arguments = (ins StrAttr:$optimizer,
      Arg<AnyMemRef, "updated", [MemRead, MemWrite]>:$param,
      Arg<AnyMemRef, "read", [MemRead]>:$grad,
      Arg<Variadic<AnyMemRef>, "updated", [MemRead, MemWrite]>:$state,
      Arg<MemRefRankOf<[I64], [0]>, "read", [MemRead]>:$step,
      Arg<MemRefRankOf<[F32], [0]>, "read", [MemRead]>:$lr,
      DictionaryAttr:$hyper);
  let assemblyFormat = [{
    $optimizer $param `,` $grad `state` `(` $state `)` `step` $step `lr` $lr
    `hyper` $hyper attr-dict `:` type($param) `,` type($grad) `,`
    `(` type($state) `)` `,` type($step) `,` type($lr)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss scaling, norms, clipping
//===----------------------------------------------------------------------===//

def Train_HasOverflowOp : Train_Op<"has_overflow", [Pure]> {
  let summary = "Whether any element of the tensors is inf or nan";
  let description = [{
    The overflow check of mixed-precision training, over all gradients at
    once.

      %overflow = dstrain.has_overflow %g0, %g1 : tensor<4096xf16>, tensor<64xf16>
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$inputs);
  let results = (outs Train_I1Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Train_LossScaleUpdateOp : Train_Op<"loss_scale_update", [Pure]> {
  let summary = "One step of DeepSpeed's dynamic loss scaler";
  let description = [{
    The scaler's state is three tensors: the `scale`, the number of clean
    steps since the last overflow (`good_steps`, start at 0) and the
    overflows still tolerated before the scale drops (`hysteresis_left`,
    start at `hysteresis`). `skip` is the overflow flag: an overflowing step
    is skipped. On overflow, `good_steps` becomes 0 and, once hysteresis is
    used up (`hysteresis_left` or `hysteresis` is 1), the scale is divided
    by `scale_factor` but not below `min_scale`; otherwise `hysteresis_left`
    counts down. On a clean step `good_steps` counts up and every
    `scale_window` clean steps the scale is multiplied by `scale_factor` and
    `hysteresis_left` refilled (on every clean step with
    `consecutive_hysteresis`). With `static_scale` set, the scale is that
    constant and only `skip` is computed.

      %scale1, %good1, %hyst1, %skip = dstrain.loss_scale_update scale %scale
          good_steps %good hysteresis_left %hyst overflow %overflow
          {scale_window = 1000 : i64, hysteresis = 2 : i64}
  }];
  let arguments = (ins Train_F32Scalar:$scale, Train_I64Scalar:$good_steps,
      Train_I64Scalar:$hysteresis_left, Train_I1Scalar:$overflow,
      DefaultValuedAttr<I64Attr, "1000">:$scale_window,
      DefaultValuedAttr<I64Attr, "2">:$hysteresis,
      DefaultValuedAttr<F64Attr, "1.0">:$min_scale,
      DefaultValuedAttr<BoolAttr, "false">:$consecutive_hysteresis,
      DefaultValuedAttr<F64Attr, "2.0">:$scale_factor,
      OptionalAttr<F64Attr>:$static_scale);
  let results = (outs Train_F32Scalar:$new_scale,
      Train_I64Scalar:$new_good_steps, Train_I64Scalar:$new_hysteresis_left,
      Train_I1Scalar:$skip);
  let assemblyFormat = [{
    `scale` $scale `good_steps` $good_steps `hysteresis_left` $hysteresis_left
    `overflow` $overflow attr-dict
  }];
  let hasVerifier = 1;
}

def Train_GlobalNormOp : Train_Op<"global_norm", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "L2 norm over all elements of all tensors";
  let description = [{
    `sqrt(sum of squares)` over every tensor, the squares accumulated in
    f64 in operand order (a model's hundreds of millions of squares drift by
    1e-4 relative in f32) and rounded to f32 once; with `squared`, the sum of
    squares itself, which ranks holding shards add up before the square root
    (ds-zero). With `init` (only with `squared`) the sum continues from that
    running sum instead of 0. A squared result may be f64 (then `init` is
    too): a chain of such ops adds the squares in the same order, and
    rounds them at the same point, as one op over all of their inputs
    (ds-stack-arguments sums stacked gradients layer by layer).

      %norm = dstrain.global_norm %g0, %g1 : tensor<4096xf32>, tensor<64xf32>
      %part = dstrain.global_norm %s0 squared : tensor<2048xf32> -> tensor<f32>
      %more = dstrain.global_norm %s1 squared init %run : tensor<64xf32> -> tensor<f64>
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$inputs, UnitAttr:$squared,
                       Optional<Train_SquaresScalar>:$init);
  let results = (outs Train_SquaresScalar:$result);
  let assemblyFormat = [{
    $inputs (`squared` $squared^)? (`init` $init^)? attr-dict `:` type($inputs)
    custom<SquaresType>(type($result), type($init), ref($init))
  }];
  let hasVerifier = 1;
}

def Train_ClipGradNormOp : Train_Op<"clip_grad_norm", [Pure,
    AttrSizedOperandSegments,
    RangedTypesMatchWith<"clipped grads keep their types", "grads", "clipped",
                         "$_self">]> {
  let summary = "Scales gradients so that their global L2 norm is at most max_norm";
  let description = [{
    With `norm` the global L2 norm of `grads`, every gradient is multiplied
    by `max_norm / (norm + 1e-6)` when that is below 1 (DeepSpeed's
    `clip_grad_norm_`). Returns the clipped gradients and the norm before
    clipping. When the gradients are shards, the norm over all ranks comes
    in as the optional `norm` operand and is the one used and returned.

      %c:2, %norm = dstrain.clip_grad_norm %g0, %g1 max_norm 1.0
          : tensor<4096xf32>, tensor<64xf32>
      %s:1, %n = dstrain.clip_grad_norm %s0 max_norm 1.0 norm %global
          : tensor<2048xf32>
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$grads, F64Attr:$max_norm,
                       Optional<Train_F32Scalar>:$norm_in);
  let results = (outs Variadic<Train_FloatTensor>:$clipped,
                      Train_F32Scalar:$norm);
  let assemblyFormat = [{
    $grads `max_norm` $max_norm (`norm` $norm_in^)? attr-dict `:` type($grads)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Learning rate
//===----------------------------------------------------------------------===//

def Train_LRScheduleOp : Train_Op<"lr_schedule", [Pure]> {
  let summary = "The learning rate at a step, by a DeepSpeed schedule";
  let description = [{
    `step` is the scheduler's `last_batch_iteration` (0 for the first
    step); `schedule` is one of `#dstrain.warmup_lr`,
    `#dstrain.warmup_decay_lr`, `#dstrain.warmup_cosine_lr`,
    `#dstrain.one_cycle`. A constant step folds to a constant rate for the
    warmup schedules.

      %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 100> at %step
  }];
  let arguments = (ins Train_I64Scalar:$step, Train_LRScheduleAttr:$schedule);
  let results = (outs Train_F32Scalar:$lr);
  let assemblyFormat = "$schedule `at` $step attr-dict";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The rate at `step`, computed as DeepSpeed does (in double), or
    /// nullopt for a schedule without a folder.
    std::optional<double> evaluate(int64_t step);
  }];
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

def Train_CheckpointSaveOp : Train_Op<"checkpoint_save",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Writes named tensors to the checkpoint `tag`";
  let description = [{
    `names` has one unique, non-empty name per tensor (the qualified
    parameter or state name); `tag` names the checkpoint (DeepSpeed's
    `global_step100`).

      dstrain.checkpoint_save %w, %m ["wte.weight", "wte.weight.exp_avg"]
          tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$tensors,
                       StrArrayAttr:$names, StrAttr:$tag);
  let assemblyFormat = [{
    $tensors $names `tag` $tag attr-dict `:` type($tensors)
  }];
  let hasVerifier = 1;
}

def Train_CheckpointLoadOp : Train_Op<"checkpoint_load",
    [MemoryEffects<[MemRead]>]> {
  let summary = "Reads named tensors from the checkpoint `tag`";
  let description = [{
      %w, %m = dstrain.checkpoint_load ["wte.weight", "wte.weight.exp_avg"]
          tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  }];
  let arguments = (ins StrArrayAttr:$names, StrAttr:$tag);
  let results = (outs Variadic<AnyRankedTensor>:$tensors);
  let assemblyFormat = [{
    $names `tag` $tag attr-dict `:` type($tensors)
  }];
  let hasVerifier = 1;
}

#endif // DSTRAIN_OPS
