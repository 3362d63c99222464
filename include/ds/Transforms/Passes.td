//===- Passes.td - ds passes -------------------------------*- tablegen -*-===//
#ifndef DS_TRANSFORMS_PASSES
#define DS_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def VerifyModelContract : Pass<"ds-verify-model-contract", "mlir::ModuleOp"> {
  let summary = "Check that a module is a valid model contract (import output)";
  let description = [{
    The model contract is what every importer produces and every training
    pass consumes: a `func.func` named by `entry` (default `forward`) whose
    arguments are the parameters, each carrying a `#dsnn.param` attribute,
    followed by the batch (arguments without one), and whose single result is
    the scalar float loss. Parameter names are unique; parameters of one
    `tied` group have one type; expert parameters appear only as
    `expert_params` of a `dsnn.moe`; the body uses only `dsnn`, `arith`
    constants, `tensor` and `func.return`. Each violation is reported at the
    offending argument or op; the pass fails if there is any.

      func.func @forward(
          %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 2.0e-02>},
          %x: tensor<2x8xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
        %h = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
        %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
        return %l : tensor<f32>
      }
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"",
           "name of the forward function">,
    Option<"summary", "summary", "bool", "false",
           "emit a remark with the parameter, element and layer counts">,
  ];
  let statistics = [
    Statistic<"numParams", "params", "parameters found">,
    Statistic<"numParamElements", "param-elements",
              "parameter elements (the model size Ψ)">,
    Statistic<"numLayers", "layers", "dsnn.layer ops found">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect"];
}

//===----------------------------------------------------------------------===//
// Training phase: model contract -> step contract
//===----------------------------------------------------------------------===//

def MixedPrecision : Pass<"ds-mixed-precision", "mlir::ModuleOp"> {
  let summary = "16-bit forward (and so backward) over f32 master parameters";
  let description = [{
    On the model contract, before ds-autodiff: every `dsnn` op computes in
    `dtype` (bf16 or f16) — its float operands are cast to it
    (`dsnn.cast`) and its float results take it — except the ops that need
    f32, which get f32 operands: the losses (`dsnn.cross_entropy`,
    `dsnn.mse_loss`) and MoE routing (`dsnn.moe`, gating as DeepSpeed does
    it in f32). Parameters stay f32 arguments (the master weights the
    optimizer updates); each use reads a 16-bit cast of it, so ds-autodiff's
    VJP of the cast hands back f32 gradients. A `dsdist` op keeps the
    operand types it was built with, except an all-to-all, which carries
    its 16-bit operand: a parameter's `dsdist.copy_to_group` over `sp`
    (ds-sequence-parallel) reads the f32 parameter, so the gradient sum
    over the group is f32 while attention's exchanges move 16 bits. The
    lowering computes every
    16-bit op in f32 registers (reductions accumulate in f32, matmuls widen
    their operands and accumulate in f32) and stores 16-bit activations.

    With `loss-scale` (fp16), `@forward` also takes the loss scale right
    after the parameters, `tensor<f32> {dstrain.state = {kind =
    "loss_scale"}}`, and the returned loss goes through `dsnn.grad_scale`,
    so the backward starts from the scale; ds-loss-scale unscales, checks
    for overflow and updates the scale.

      %w16 = dsnn.cast %w : tensor<64x16xf32> -> tensor<64x16xbf16>
      %y = dsnn.linear %x, %w16 : (tensor<4x16xbf16>, tensor<64x16xbf16>) -> tensor<4x64xbf16>
      %y32 = dsnn.cast %y : tensor<4x64xbf16> -> tensor<4x64xf32>
      %l = dsnn.cross_entropy %y32, %t : tensor<4x64xf32>, tensor<4xi64> -> tensor<f32>
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "the 16-bit compute type: bf16 or f16">,
    Option<"lossScale", "loss-scale", "bool", "false",
           "take a loss scale and seed the backward with it (fp16)">,
    Option<"entry", "entry", "std::string", "\"forward\"",
           "the model contract's function">,
  ];
  let statistics = [
    Statistic<"numCasts", "casts", "dsnn.cast ops inserted">,
    Statistic<"numLowOps", "low-precision-ops", "ops computing in dtype">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect"];
}

def Autodiff : Pass<"ds-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: @forward -> @forward_backward";
  let description = [{
    Adds, next to the model contract's `@forward`, the gradient function
    `@forward_backward(<same arguments and attributes>) -> (loss, one gradient
    per parameter, in parameter order and of the parameter's type)`. It holds
    the forward ops followed by each op's `DifferentiableOpInterface` VJP in
    reverse program order. Only values that depend on a parameter get
    cotangents; a parameter used several times (a tied embedding and LM
    head) gets the sum, one that does not reach the loss gets zeros.

    A `dsnn.layer "h.0"` gets its backward in `dsnn.layer "h.0.backward"`
    (same type string, `backward` attribute) whose results are the
    cotangents of the values the forward layer reads from above; the
    activations that backward needs become extra results of the forward
    layer. An op on the gradient path without a VJP (or whose VJP cannot be
    built, e.g. `dsnn.dropout` with p > 0, `dsnn.moe`) is an error at that op.
    A declaration of the result function (a harness that calls it) is
    replaced by the definition when the types agree.

      func.func @forward(%w: tensor<4x8xf32> {dsnn.param = ...},
                         %x: tensor<2x8xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
        %h = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
        %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
        return %l : tensor<f32>
      }

    becomes, in addition,

      func.func @forward_backward(%w: ..., %x: ..., %y: ...)
          -> (tensor<f32>, tensor<4x8xf32>) {
        %h = dsnn.linear %x, %w ...
        %l = dsnn.mse_loss %h, %y ...
        %one = arith.constant dense<1.0> : tensor<f32>
        ...                                  // dh = 2 (h - y) / 8
        %dw = dsnn.matmul %dh, %x {transpose_a} : ... -> tensor<4x8xf32>
        return %l, %dw : tensor<f32>, tensor<4x8xf32>
      }
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"",
           "name of the forward (model contract) function">,
    Option<"result", "result", "std::string", "\"forward_backward\"",
           "name of the gradient function to create">,
  ];
  let statistics = [
    Statistic<"numVJPs", "vjps", "VJPs emitted">,
    Statistic<"numBackwardLayers", "backward-layers",
              "dsnn.layer backward regions emitted">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::arith::ArithDialect"];
}

def EvalStep : Pass<"ds-eval-step", "mlir::ModuleOp"> {
  let summary = "@eval_step: the model's forward as DeepSpeed's eval_batch runs it";
  let description = [{
    Adds `@eval_step`, a copy of the model contract's `@forward` as it is
    when the pass runs (after ds-mixed-precision and
    ds-moe-expert-parallel: the same compute dtype and the same expert
    exchanges as training's forward) with what only training does taken
    out: every `dsnn.dropout` is the identity (PyTorch's `model.eval()`),
    `dsnn.grad_scale` passes the loss through, and fp16's loss-scale
    argument goes. It returns the loss in f32 and takes the parameters and
    batch arguments of `@forward`; ds-zero later gives it the parameters
    as the step holds them (ZeRO-3 chunks gathered before use, 16-bit
    copies). Run it after the step is built and before ds-zero. A MoE layer
    whose `eval_capacity_factor` differs from its `capacity_factor` is
    refused: its expert region is typed for the training capacity.

      func.func @forward(%w: tensor<64x16xf32> {dsnn.param = ...}, ...) -> tensor<f32> {
        %h = dsnn.dropout %x {p = 1.0e-01 : f64} ...

    gets, next to it,

      func.func @eval_step(%w: tensor<64x16xf32> {dsnn.param = ...}, ...) -> tensor<f32> {
        // %x used in place of the dropout
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"",
           "the model contract's function">,
    Option<"result", "result", "std::string", "\"eval_step\"",
           "name of the eval function to create">,
  ];
  let statistics = [
    Statistic<"numDropouts", "dropouts", "dropouts made the identity">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::ds::dist::DistDialect",
                           "::mlir::arith::ArithDialect"];
}

def FuseLinearCrossEntropy
    : Pass<"ds-fuse-linear-cross-entropy", "mlir::ModuleOp"> {
  let summary = "The LM head and its cross-entropy as one op computed in "
                "row chunks";
  let description = [{
    On the model contract, before ds-autodiff: a `dsnn.cross_entropy` of a
    bias-free `dsnn.linear`'s logits (the LM head), with no other use of the
    logits, becomes one `dsnn.linear_cross_entropy` when the logits would
    hold more than `min-logits` elements. Its lowering makes `chunk` rows of
    logits at a time and its gradient recomputes them, so neither the
    `[N, V]` logits nor their gradient is ever whole: the step's workspace
    no longer grows with batch × sequence × vocabulary (for GPT-2 at
    micro-batch 8 and sequence 1024, 1.6 GB of logits and as much again
    for their gradient).

      %y = dsnn.linear %h, %wte : (tensor<4x1024x768xf32>, tensor<50257x768xf32>) -> tensor<4x1024x50257xf32>
      %l = dsnn.cross_entropy %y, %t : tensor<4x1024x50257xf32>, tensor<4x1024xi64> -> tensor<f32>
    becomes
      %l = dsnn.linear_cross_entropy %h, %wte, %t {chunk = 256 : i64}
          : tensor<4x1024x768xf32>, tensor<50257x768xf32>, tensor<4x1024xi64> -> tensor<f32>

    The sums run in another order than one GEMM and one row reduction
    (the weight's gradient is summed chunk by chunk), so results agree with
    the materialized form to rounding, and bitwise from run to run.
    Mixed precision's 16-bit logits widened for the loss (a `dsnn.cast`
    between the two ops, with no other use) fuse too: the op rounds each
    chunk's logits to the head's type first, as the linear did.
    Vocabulary-parallel losses (with `stats`) are left as they are.
  }];
  let options = [
    Option<"minLogits", "min-logits", "int64_t", "33554432",
           "fuse when the logits would hold more elements than this "
           "(default 2^25: 128 MiB of f32)">,
    Option<"chunk", "chunk", "int64_t", "256",
           "rows of logits per chunk">,
  ];
}

def CheckpointActivations
    : Pass<"ds-checkpoint-activations", "mlir::ModuleOp"> {
  let summary = "Recompute each block of layers in its backward instead of "
                "saving its activations";
  let description = [{
    Activation checkpointing on the gradient function (after ds-autodiff,
    before ds-accumulate-grads or ds-pipeline-schedule). The top-level
    forward `dsnn.layer`s of every function holding backward layers are
    grouped, in order, in blocks of `interval` consecutive layers (a pipeline
    stage counts from its own first layer, as DeepSpeed's PipelineModule
    does). Right before the first backward layer of a block, a copy of the
    block's forward layers (marked `recompute`) runs again from the values
    the block reads from above — its input activation, the parameters, the
    dropout key — and the backward reads the copy's results. The forward
    layers' saved activations then die as soon as they are produced: across
    the forward only block inputs stay alive, and one block's activations
    at a time during the backward.

    The copy is the same op on the same values, so the recomputed values
    are bitwise the forward's (dropout masks come from the same key, seed
    and stream). The `recompute` attribute keeps CSE from folding the copy
    into the forward layer; ds-outline-layers then calls the same layer
    function a second time (recompute = call the forward again). Lowered
    without outlining, CSE would fold the copy back: the arithmetic is the
    same, the memory is not saved. Functions that already hold `recompute`
    layers are left alone; `interval = 0` changes nothing.

      %h0:3 = dsnn.layer "h.0" ("Block") -> (...) { ... }   // %h0#1, %h0#2 saved
      %h1:3 = dsnn.layer "h.1" ("Block") -> (...) { ... }
      ...
      %d1:2 = dsnn.layer "h.1.backward" ("Block") -> (...) attributes {backward} {
        ... reads %h0#0, %h1#1, %h1#2 ...
      }
      %d0:1 = dsnn.layer "h.0.backward" ("Block") -> (...) attributes {backward} {
        ... reads %x, %h0#1, %h0#2 ...
      }

    becomes, with `interval=2`,

      %h0:3 = dsnn.layer "h.0" ("Block") -> (...) { ... }   // only %h0#0 used, by h.1
      %h1:3 = dsnn.layer "h.1" ("Block") -> (...) { ... }
      ...
      %r0:3 = dsnn.layer "h.0" ("Block") -> (...) attributes {recompute} { ... reads %x }
      %r1:3 = dsnn.layer "h.1" ("Block") -> (...) attributes {recompute} { ... reads %r0#0 }
      %d1:2 = dsnn.layer "h.1.backward" ... { ... reads %r0#0, %r1#1, %r1#2 ... }
      %d0:1 = dsnn.layer "h.0.backward" ... { ... reads %x, %r0#1, %r0#2 ... }
  }];
  let options = [
    Option<"interval", "interval", "int64_t", "1",
           "layers per checkpointed block (pipeline.activation_checkpoint_"
           "interval); 0 checkpoints nothing">,
  ];
  let statistics = [
    Statistic<"numBlocks", "blocks", "blocks recomputed in the backward">,
    Statistic<"numLayers", "recomputed-layers",
              "forward layers copied into the backward">,
    Statistic<"numDropped", "dropped-saved-values",
              "saved activations the backward no longer reads from the "
              "forward">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect"];
}

def AccumulateGrads : Pass<"ds-accumulate-grads", "mlir::ModuleOp"> {
  let summary = "Build @train_step: the micro-batch loop over @forward_backward";
  let description = [{
    Creates `@train_step(<params>, <batch, each with a leading steps dim>)
    -> (loss, one gradient per parameter)` (the first stage of the step
    contract; ds-clip-grads and ds-optimizer complete it). Micro-batch `i`
    is `tensor.extract_slice` `[i]` of every batch argument; the loss and
    the gradients are the mean over the micro-batches, as DeepSpeed scales
    the loss by 1/gradient_accumulation_steps before backward. For
    `steps > 1` the loop is an `scf.for` carrying the sums; `steps = 1` is
    one straight call (the batch still has its leading dim of 1). The
    function gets `dstrain.gradient_accumulation_steps = steps`. Step-wide
    state the forward reads (arguments right after the parameters with
    `dstrain.state`, the fp16 loss scale) is passed to every micro-batch as
    is and stays right after the parameters.

      %r:3 = scf.for %i = %c0 to %c4 step %c1
          iter_args(%l = %zero, %g0 = %zw, %g1 = %zb) -> (...) {
        %ids = tensor.extract_slice %ids4[%i, 0, 0] [1, 2, 8] [1, 1, 1]
            : tensor<4x2x8xi64> to tensor<2x8xi64>
        %out:3 = func.call @forward_backward(%w, %b, %ids) : ...
        %l1 = dsnn.add %l, %out#0 : ...
        ...
        scf.yield %l1, %g01, %g11 : ...
      }
      %quarter = arith.constant dense<2.500000e-01> : tensor<f32>
      %loss = dsnn.mul %r#0, %quarter : tensor<f32>, tensor<f32> -> tensor<f32>
  }];
  let options = [
    Option<"steps", "steps", "int64_t", "1",
           "gradient_accumulation_steps: micro-batches per optimizer step">,
    Option<"entry", "entry", "std::string", "\"forward_backward\"",
           "the gradient function (ds-autodiff's result)">,
    Option<"result", "result", "std::string", "\"train_step\"",
           "name of the step function to create">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::func::FuncDialect"];
}

def ClipGrads : Pass<"ds-clip-grads", "mlir::ModuleOp"> {
  let summary = "Global L2 gradient norm, and clipping when max-norm > 0";
  let description = [{
    On `@train_step` as ds-accumulate-grads leaves it, `(loss, grads...)`,
    computes the global L2 norm over all gradients and, when `max-norm`
    (ds_config `gradient_clipping`) is above 0, scales them so it is at most
    `max-norm` (`dstrain.clip_grad_norm`); with 0 it only measures
    (`dstrain.global_norm`), since the norm is reported every step either
    way. The norm becomes the last result: `(loss, grads..., grad_norm)`.

      %c:2, %norm = dstrain.clip_grad_norm %g0, %g1 max_norm 1.0
          : tensor<4x8xf32>, tensor<4xf32>
      return %loss, %c#0, %c#1, %norm : ...

    On a pipeline stage (`dsdist.pipeline`) the norm is the whole model's:
    each stage's sum of squares (a weight two stages hold counted by the
    first), all-reduced over `"pp"`, then the square root, given to the
    clip as its `norm`.
  }];
  let options = [
    Option<"maxNorm", "max-norm", "double", "0.0",
           "gradient_clipping: the largest global L2 norm (0: no clipping)">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
  ];
  let dependentDialects = ["::mlir::ds::train::TrainDialect",
                           "::mlir::ds::dist::DistDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def Optimizer : Pass<"ds-optimizer", "mlir::ModuleOp"> {
  let summary = "The optimizer update: params and state in, new params and state out";
  let description = [{
    Completes `@train_step` from `(loss, grads..., grad_norm)` (ds-clip-grads'
    form) to the step contract of docs/architecture.md: it adds the optimizer
    state after the parameters (per parameter, in parameter order:
    `exp_avg`, `exp_avg_sq` for Adam/AdamW/Lamb, `momentum_buffer` for SGD;
    each of the parameter's type with `dstrain.state = {param = "<name>",
    kind = "<kind>"}`), then, after any step-wide state already there (the
    fp16 loss scale), `%step: tensor<i64> {dstrain.step}` (1 for the
    first update), and one `dstrain.adam`/`lamb`/`sgd` per parameter. The
    results become `(new params, new state, loss, lr, grad_norm)`; `lr` is
    the constant `lr` until ds-lr-schedule replaces it. As DeepSpeed does
    when handed `model.parameters()`, `weight-decay` applies to every
    parameter (biases and norms included). Options mirror ds_config's
    `optimizer.type` and `optimizer.params`.

      %w1, %m1, %v1 = dstrain.adam %w, %gw, %m, %v step %step lr %lr
          {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-08, weight_decay = 0.01}
          : tensor<4x8xf32>, tensor<4x8xf32>
  }];
  let options = [
    Option<"type", "type", "std::string", "\"Adam\"",
           "optimizer.type: Adam, AdamW, Lamb or SGD (any case)">,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    ListOption<"betas", "betas", "double",
               "Adam/Lamb (beta1, beta2); default 0.9,0.999">,
    Option<"eps", "eps", "double", "1e-8", "Adam/Lamb epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "weight decay, applied to every parameter">,
    Option<"adamWMode", "adam-w-mode", "bool", "true",
           "Adam: decoupled weight decay (always on for AdamW)">,
    Option<"biasCorrection", "bias-correction", "bool", "true",
           "Adam/Lamb: bias-correct the moments">,
    Option<"maxCoeff", "max-coeff", "double", "10.0",
           "Lamb: upper bound of the trust ratio">,
    Option<"minCoeff", "min-coeff", "double", "0.01",
           "Lamb: lower bound of the trust ratio">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
  ];
  let statistics = [
    Statistic<"numStateTensors", "state-tensors",
              "optimizer state tensors added">,
  ];
  let dependentDialects = ["::mlir::ds::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

def LRSchedule : Pass<"ds-lr-schedule", "mlir::ModuleOp"> {
  let summary = "Replace @train_step's constant learning rate by a DeepSpeed schedule";
  let description = [{
    On a complete `@train_step` (after ds-optimizer), replaces the constant
    learning rate that feeds every optimizer op and the `lr` result by
    `dstrain.lr_schedule` at the scheduler's `last_batch_iteration`, which is
    `%step - 1`. Options mirror ds_config's `scheduler.type` and
    `scheduler.params`; `type=none` (the default) keeps the constant.
    WarmupCosineLR scales the optimizer's `lr` (the constant it replaces).

      %c1 = arith.constant dense<1> : tensor<i64>
      %it = arith.subi %step, %c1 : tensor<i64>
      %lr = dstrain.lr_schedule %it #dstrain.warmup_lr<min_lr = 0.0,
          max_lr = 1.0e-3, warmup_num_steps = 100, warmup_type = linear>
  }];
  let options = [
    Option<"type", "type", "std::string", "\"none\"",
           "scheduler.type: none, WarmupLR, WarmupDecayLR, WarmupCosineLR or "
           "OneCycle (any case)">,
    Option<"warmupMinLr", "warmup-min-lr", "double", "0.0",
           "WarmupLR/WarmupDecayLR: rate at step 0">,
    Option<"warmupMaxLr", "warmup-max-lr", "double", "0.001",
           "WarmupLR/WarmupDecayLR: rate after warmup">,
    Option<"warmupNumSteps", "warmup-num-steps", "int64_t", "1000",
           "warmup length">,
    Option<"warmupType", "warmup-type", "std::string", "\"log\"",
           "warmup curve: log or linear">,
    Option<"totalNumSteps", "total-num-steps", "int64_t", "0",
           "WarmupDecayLR/WarmupCosineLR: end of the decay">,
    Option<"warmupMinRatio", "warmup-min-ratio", "double", "0.0",
           "WarmupCosineLR: ratio of lr at step 0">,
    Option<"cosMinRatio", "cos-min-ratio", "double", "0.0001",
           "WarmupCosineLR: ratio of lr at the end">,
    Option<"cycleMinLr", "cycle-min-lr", "double", "0.0",
           "OneCycle: lowest rate">,
    Option<"cycleMaxLr", "cycle-max-lr", "double", "0.0",
           "OneCycle: highest rate">,
    Option<"decayLrRate", "decay-lr-rate", "double", "0.0",
           "OneCycle: post-cycle decay rate">,
    Option<"cycleFirstStepSize", "cycle-first-step-size", "int64_t", "2000",
           "OneCycle: steps of the rising half">,
    Option<"cycleSecondStepSize", "cycle-second-step-size", "int64_t", "-1",
           "OneCycle: steps of the falling half (-1: as the rising half)">,
    Option<"cycleFirstStairCount", "cycle-first-stair-count", "int64_t", "0",
           "OneCycle: stairs of the rising half">,
    Option<"cycleSecondStairCount", "cycle-second-stair-count", "int64_t",
           "-1", "OneCycle: stairs of the falling half (-1: as the rising half)">,
    Option<"decayStepSize", "decay-step-size", "int64_t", "0",
           "OneCycle: steps between decays">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
  ];
  let dependentDialects = ["::mlir::ds::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

def LossScale : Pass<"ds-loss-scale", "mlir::ModuleOp"> {
  let summary = "fp16 loss scaling: unscale, overflow check, skip, scale update";
  let description = [{
    On `@train_step` whose backward ds-mixed-precision seeded with the loss
    scale (the `dstrain.state = {kind = "loss_scale"}` argument), after
    ds-lr-schedule. DeepSpeed's dynamic loss scaler, as IR:

    - the scaler's state joins the step-wide state after the scale:
      `loss_scale_good_steps`, `loss_scale_hysteresis` and `skipped_steps`
      (each with its `init` value; the scale starts at
      2^`initial-scale-power`, or at `static-scale` when that is > 0);
    - the gradients are multiplied by 1/scale before the norm, so clipping
      and the optimizer see unscaled gradients;
    - `dstrain.has_overflow` over them is the step's skip flag (ds-zero
      makes it the OR over the data-parallel group);
    - every optimizer update takes `skip`, and the optimizer and the LR
      schedule count applied updates, `step - skipped_steps`, as DeepSpeed
      neither steps the optimizer nor the scheduler on an overflow;
    - `dstrain.loss_scale_update` computes the next scale, and
      `skipped_steps` counts the skipped step.
  }];
  let options = [
    Option<"staticScale", "static-scale", "double", "0.0",
           "fp16.loss_scale: a fixed scale (0: dynamic)">,
    Option<"initialScalePower", "initial-scale-power", "int64_t", "16",
           "fp16.initial_scale_power: the dynamic scale starts at 2^this">,
    Option<"scaleWindow", "scale-window", "int64_t", "1000",
           "fp16.loss_scale_window: clean steps before the scale doubles">,
    Option<"hysteresis", "hysteresis", "int64_t", "2",
           "fp16.hysteresis: overflows tolerated before the scale halves">,
    Option<"minScale", "min-scale", "double", "1.0",
           "fp16.min_loss_scale: the scale never drops below this">,
    Option<"consecutiveHysteresis", "consecutive-hysteresis", "bool", "false",
           "fp16.consecutive_hysteresis: refill hysteresis on every clean "
           "step">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
  ];
  let dependentDialects = ["::mlir::ds::train::TrainDialect",
                           "::mlir::ds::nn::NNDialect",
                           "::mlir::arith::ArithDialect"];
}

def VerifyStepContract : Pass<"ds-verify-step-contract", "mlir::ModuleOp"> {
  let summary = "Check @train_step (and @forward_backward) against the step contract";
  let description = [{
    The step contract (docs/architecture.md) is what the training passes
    produce and what distribution, lowering and ds-train consume:

      func.func @train_step(<params {dsnn.param}>,
                            <state {dstrain.state = {param, kind}}>,
                            %step: tensor<i64> {dstrain.step},
                            <batch, leading dim = gradient_accumulation_steps>)
          -> (<new params>, <new state>, loss, lr, grad_norm,
              <metrics {dstrain.metric = "<name>"}>)
          attributes {dstrain.gradient_accumulation_steps = N}

    Checked: the parameters come first and have unique names; every state
    tensor names an existing parameter, has its type (a chunk carrying
    `dsdist.sharding` stands for the whole tensor) and a known kind, and
    every parameter has the same kinds in the same order; one `tensor<i64>`
    step; every batch argument leads with N; the results are the
    parameters' and state's types followed by three `tensor<f32>`; the body
    uses only dsnn, dstrain, dsdist, arith, math, tensor, scf and func ops.
    `@forward_backward`,
    when present, takes the same parameters and returns (loss, their
    gradients). Both may end with results named by `dstrain.metric`
    (reports such as ds-moe-routing-metrics' counts). One diagnostic per violation; the pass fails if any.
  }];
  let options = [
    Option<"prescaleGradients", "prescale-gradients", "bool", "false",
           "prescale_gradients: divide gradients by dp-size before the "
           "reduction (a sum) instead of after it">,
    Option<"gradientPredivideFactor", "gradient-predivide-factor", "double",
           "1.0",
           "gradient_predivide_factor: without prescaling, divide by this "
           "before the reduction (a sum) and by dp-size / this after it">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
    Option<"gradientEntry", "gradient-entry", "std::string",
           "\"forward_backward\"",
           "the gradient function, checked when present">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::ds::train::TrainDialect"];
}

def PhaseTimers : Pass<"ds-phase-timers", "mlir::ModuleOp"> {
  let summary = "Time the forward, backward, reduction and optimizer phases of the step";
  let description = [{
    ds_config `wall_clock_breakdown: true`. The step is one compiled
    function, so its phases are timed from inside: this pass calls libdsrt's
    `dsrt_phase_begin(phase)` where each phase starts, and the runtime
    charges the wall-clock time until the next call to that phase
    (`dsrt_phase_seconds`, read by ds-train after each step):

    - `@forward_backward`: forward (1) at its entry, backward (2) right
      after the op that defines the loss it returns (the reverse sweep
      follows it);
    - `@train_step`: reduction (3) after the last top-level op that calls
      `@forward_backward` (the micro-batch loop or the one call), optimizer
      (4) before the first later top-level op of the dstrain dialect
      (clipping, loss scaling, the update), none (0) before the return.

    What a phase holds is what runs between its marks in the compiled code:
    the gradient accumulation between micro-batches counts as backward,
    ZeRO-3's all-gathers as forward or backward, ZeRO-1/2's parameter
    all-gather after the update as optimizer. Elementwise fusion can move a
    small amount of work across a mark (it fuses producers into consumers),
    never the matmuls or collectives. A pipeline stage's step
    (`dsdist.pipeline`) is left unmarked.

      func.func @forward_backward(...) {
        %c1 = arith.constant 1 : i32
        func.call @dsrt_phase_begin(%c1) : (i32) -> ()
        ...
        %loss = dsnn.cross_entropy ...
        %c2 = arith.constant 2 : i32
        func.call @dsrt_phase_begin(%c2) : (i32) -> ()
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
    Option<"gradientEntry", "gradient-entry", "std::string",
           "\"forward_backward\"", "the gradient function">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Distribution phase
//===----------------------------------------------------------------------===//

def PipelineSplit : Pass<"ds-pipeline-split", "mlir::ModuleOp"> {
  let summary = "Keep one pipeline stage's layers of the model contract";
  let description = [{
    Cuts the model contract's layer list (its top-level `dsnn.layer`s, then
    the head: the ops after the last layer that read a parameter) into
    `stages` contiguous stages with `partition` (DeepSpeed's `uniform`,
    `parameters`, `type:REGEX`, or `flops`; docs/pipeline.md), and rewrites
    `@forward` into stage `stage`'s part of it. Every rank compiles only its
    own stage.

    - Ops outside layers run with the layer after them; the ops after the
      last layer run on the last stage. Constants are copied into every
      stage that reads them.
    - The stage takes only the parameters and batch arguments its ops read
      (a tied weight is an argument of every stage that uses it), every
      step-state argument (`dstrain.state`: the fp16 loss scale, which each
      stage's scaler keeps), and, after those, one argument
      `{dsdist.pipe_input = i}` per value the previous stage computes and it
      reads.
    - The last stage returns the loss; the others return the values the
      next stage reads, each marked `{dsdist.pipe_output = i}`. A value that
      skips a stage is an error: activations pass between neighbours only.

    The module records `dsdist.pipeline = {stage = s, stages = p}`. With
    one stage the pass does nothing.

    With `virtual-stages` v > 1 (the interleaved schedule) the layer list
    is cut into `stages * v` model chunks instead, chunk `c` belonging to
    stage `c mod stages` (Megatron's round-robin), and stage s gets one
    function per chunk it holds, `@forward_chunk0` ... `@forward_chunk<v-1>`
    (its chunks s, s + p, ...), each cut as above with "chunk" for "stage":
    activations pass from chunk c to chunk c + 1, so from the last stage
    around to the first. The module also records `virtual_stages = v`.

      func.func @forward(%wte {dsnn.param = ...}, ..., %ids {dsnn.batch = "input_ids"}, ...)
          -> tensor<f32>
    becomes, for stage 0 of 2,
      func.func @forward(%wte {dsnn.param = ...}, ..., %ids {dsnn.batch = "input_ids"})
          -> (tensor<4x64x128xf32> {dsdist.pipe_output = 0 : i64})
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "pipeline stages">,
    Option<"stage", "stage", "int64_t", "0", "the stage to keep (0-based)">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "model chunks per stage (the interleaved schedule)">,
    Option<"partition", "partition", "std::string", "\"parameters\"",
           "partition_method: parameters, uniform, flops or type:REGEX">,
    Option<"entry", "entry", "std::string", "\"forward\"",
           "the model-contract function">,
  ];
  let statistics = [
    Statistic<"numLayers", "layers", "layers the stage keeps">,
    Statistic<"numParams", "params", "parameter arguments the stage keeps">,
    Statistic<"numInputs", "pipe-inputs", "values received from the previous stage">,
    Statistic<"numOutputs", "pipe-outputs", "values sent to the next stage">,
  ];
  let dependentDialects = ["::mlir::ds::dist::DistDialect"];
}

def PipelineSchedule : Pass<"ds-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "Compile a pipeline stage's schedule into its @train_step";
  let description = [{
    On a stage of a split module (`dsdist.pipeline`, ds-pipeline-split) after
    ds-autodiff, in place of ds-accumulate-grads: builds the `@train_step`
    that runs this stage's instruction stream of `schedule` (`1f1b`, as
    DeepSpeed's TrainSchedule, or `gpipe`) over `micro-batches`
    micro-batches, with the same signature and results as
    ds-accumulate-grads gives (parameters, step state such as the fp16 loss
    scale, the step counter when dropout needs one, batch arguments with a
    leading micro-batch dim; the mean loss and gradients), so clipping, the optimizer and ZeRO follow unchanged.

    `@forward_backward` is cut in two by data flow: `@stage_forward`
    computes what the stage sends on (or the loss) and returns the values
    the backward reads as well (the saved activations of one micro-batch);
    `@stage_backward` takes those and the output gradient and returns the
    parameter gradients and the gradients of the pipe inputs. The step then
    is the stream, instruction by instruction:

    - `load_micro_batch`: a slice of each batch argument;
    - `recv_activation` / `send_activation`: `dsdist.recv` / `dsdist.send`
      over `"pp"` offset -1 / +1; `recv_grad` / `send_grad` the reverse;
    - `forward` / `backward`: calls, with the gradients summed in micro-batch
      order (as ds-accumulate-grads sums them);
    - `reduce_tied_grads`: a parameter two stages read (`shared` in
      `dsdist.pipeline`) gets the sum of both stages' gradients, added in
      the same order on both, so the copies stay bitwise equal;
    - `reduce_grads` and `optimizer_step` are left to ds-zero and
      ds-optimizer.

    Under `interleaved` (Megatron's interleaved 1F1B; the module split into
    `virtual_stages` chunks per stage) each chunk's
    `@forward_backward_chunk<j>` is cut the same way into
    `@stage_forward_chunk<j>` / `@stage_backward_chunk<j>`; the step takes
    the union of the chunks' parameters and batch arguments, instructions
    call their chunk's functions, and a parameter's gradients are summed
    over its chunks. Sends and receives use the same offsets on a ring: the
    last stage's +1 is the first stage, which holds the next chunk.

    The last stage's mean loss is broadcast over `"pp"`, so every rank
    reports it. The module's grid becomes `pp = stages, dp = dp-size`
    (rank = stage * dp + d), or `pp` before the grid an earlier pass set
    (`dp x ep` with experts, `dp x tp`, `dp x ep x tp`), so each stage's
    groups are its own ranks. The stream is checked by the
    `dsdist.pipeline_schedule` verifier first.

      %x = dsdist.recv from "pp" offset -1 : tensor<4x64x128xf32>
      %y:5 = func.call @stage_forward(%w0, %w1, %x) : ...
      dsdist.send %y#0 to "pp" offset 1 : tensor<4x64x128xf32>
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "pipeline.schedule: 1f1b, gpipe or interleaved">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches per step (gradient_accumulation_steps)">,
    Option<"dpSize", "dp-size", "int64_t", "1",
           "data-parallel ranks per stage">,
    Option<"entry", "entry", "std::string", "\"forward_backward\"",
           "the gradient function (ds-autodiff)">,
    Option<"result", "result", "std::string", "\"train_step\"",
           "the step function to build">,
  ];
  let statistics = [
    Statistic<"numResiduals", "saved-values",
              "values a micro-batch's forward saves for its backward">,
    Statistic<"numInstrs", "instructions", "instructions of the stream">,
  ];
  let dependentDialects = ["::mlir::ds::dist::DistDialect",
                           "::mlir::ds::nn::NNDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def MoEExpertParallel : Pass<"ds-moe-expert-parallel", "mlir::ModuleOp"> {
  let summary = "Spreads each MoE layer's experts over an expert-parallel group";
  let description = [{
    On the model contract, before ds-autodiff. With `ep-size` G > 1, the
    `dp-size` data-parallel ranks form DeepSpeed's groups
    (`_create_expert_and_data_parallel`): expert-parallel groups of G
    consecutive ranks (grid axis `ep`) hold different experts, and the
    ranks at the same place in each (axis `dp`, stride G) hold the same
    experts. The module gets `dsdist.grid = #dsdist.grid<dp = N / G, ep = G>`;
    the whole data-parallel group is then `["dp", "ep"]`.

    Every expert parameter (a `dsnn.moe` expert operand, leading dim E)
    becomes this rank's E / G experts: its type's leading dim is E / G and
    `dsdist.experts = #dsdist.sharding<axes = ["ep"], shape = [E, ...]>` says
    which slice group rank r holds (rows r·E/G to (r+1)·E/G). Each `dsnn.moe`
    is spelled out as its routing (as ds-autodiff does), computed from this
    rank's own tokens exactly as with G = 1, so which tokens are dropped
    does not depend on G. The dispatched tokens `[E, capacity, C]` go
    through an all-to-all over `["ep"]`: rank r receives, from each rank s
    of its group, the rows of its own experts. The local experts run once
    per source rank (`[E/G, capacity, C]` each, so each expert's gradient
    adds the source ranks' contributions as a data-parallel all-reduce
    would), and a second all-to-all returns the outputs to the ranks whose
    tokens they are. ds-autodiff mirrors both exchanges in the backward
    (the adjoint of an all-to-all is the all-to-all back).

      %d = dsnn.moe_dispatch %x, %e, %s : ... -> tensor<4x4x8xf32>
      %r = dsdist.all_to_all %d over ["ep"] split 0 concat 0
             : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
      %r0, %r1 = dsnn.split %r dim 0 : ... -> tensor<2x4x8xf32>, tensor<2x4x8xf32>
      %y0 = dsnn.batch_matmul %r0, %w1 {transpose_b} ...   // %w1: tensor<2x8x8xf32>
      %y1 = dsnn.batch_matmul %r1, %w1 {transpose_b} ...
      %y = dsnn.concat %y0, %y1 dim 0 : ... -> tensor<4x4x8xf32>
      %o = dsdist.all_to_all %y over ["ep"] split 0 concat 0
             : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
      %g = dsnn.moe_gather %o, %e, %s : ...

    ds-zero then reduces expert gradients over `["dp"]` only, divided by
    the whole data-parallel size N (the mean over every rank's tokens, as
    with G = 1), and the others over `["dp", "ep"]`.
  }];
  let options = [
    Option<"epSize", "ep-size", "int64_t", "1",
           "ranks an expert-parallel group spreads each layer's experts over">,
    Option<"dpSize", "dp-size", "int64_t", "0",
           "the data-parallel size (0: ep-size)">,
  ];
  let statistics = [
    Statistic<"numLayers", "moe-layers", "MoE layers made expert-parallel">,
    Statistic<"numAllToAlls", "all-to-alls", "all-to-alls inserted">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::ds::dist::DistDialect"];
}

def TensorParallel : Pass<"ds-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Megatron's tensor-parallel layout, found on the model graph";
  let description = [{
    On the model contract, before ds-autodiff. With `size` T > 1, the
    `dp-size` x T ranks form the grid `#dsdist.grid<dp = D, tp = T>`: the T
    ranks of a tensor-parallel group are consecutive (Megatron's and
    DeepSpeed's order).

    The layout is found on the graph, not by parameter names. A *column*
    linear is a `dsnn.linear` whose weight is a parameter used once and
    whose output reaches, through ops that act on each slice of its last
    dim alone (activations, elementwise products of such values, `split`
    along that dim, `reshape`/`transpose` that keep it a leading factor,
    `attention` over heads), only the inputs of other parameter linears:
    the *row* linears. That is an MLP (up, and gate for SwiGLU, then down)
    or an attention block (Q, K, V or the fused QKV, then the output
    projection). A column weight `[out, in]` and its bias are cut along
    `out` (a fused QKV as 3 blocks, so each rank holds its heads' Q, K and
    V); a row weight along `in`. Everything between runs on 1/T of the
    width, the heads included. Every other parameter stays whole.

    The collectives are Megatron's `f` and `g`: the column linear's input
    goes through `dsdist.copy_to_group` (identity; its gradient is summed
    over the group), and the row linear's partial output through
    `dsdist.all_reduce sum`, after which its bias is added once:

      %x1 = dsdist.copy_to_group %ln over ["tp"] : tensor<2x8x16xf32>
      %fc = dsnn.linear %x1, %w_fc, %b_fc : (..., tensor<32x16xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
      %act = dsnn.gelu %fc : tensor<2x8x32xf32>
      %p = dsnn.linear %act, %w_proj : (tensor<2x8x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16xf32>
      %s = dsdist.all_reduce sum %p over ["tp"] : tensor<2x8x16xf32>
      %mlp = dsnn.add %s, %b_proj : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>

    A cut parameter's type is its piece, and `dsdist.tensor_parallel =
    #dsdist.tensor_shard<...>` gives the whole shape and which piece group
    rank r holds, so initialization draws the slice of the one-rank
    model's tensor. With f and g every replicated value, and so every
    replicated parameter's gradient, is the same on all ranks of the
    group: no further reduction is needed. A width (heads, MLP width, or a
    fused projection's blocks) that T does not divide is an error naming
    the op and the numbers.

    With `sequence-parallel` (Megatron-SP, `tensor_parallel.
    sequence_parallel`), the regions between the blocks (layer norms,
    dropout, residual adds, the final norm) run on 1/T of the sequence:
    each `g` becomes a `dsdist.reduce_scatter sum` along the sequence dim
    and each `f` a `dsdist.all_gather` along it (each one's VJP is the
    other), the vocabulary-parallel embedding's all-reduce a reduce-scatter
    too. A collective lowers along a leading dim, so the sequence goes to
    the front and back with `dsnn.transpose`. A replicated parameter read on
    a shard (a norm's weight and bias, a row bias, the position table) goes
    through `dsdist.copy_to_group`, so its gradient is summed over `tp`;
    the position ids are sliced to the rank's positions. A sequence length
    that T does not divide is an error naming both numbers:

      %t = dsnn.transpose %p perm [1, 0, 2] : tensor<2x8x16xf32> -> tensor<8x2x16xf32>
      %r = dsdist.reduce_scatter sum %t over ["tp"] dim 0 : tensor<8x2x16xf32> -> tensor<4x2x16xf32>
      %s = dsnn.transpose %r perm [1, 0, 2] : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
  }];
  let options = [
    Option<"size", "size", "int64_t", "1", "ranks of a tensor-parallel group">,
    Option<"dpSize", "dp-size", "int64_t", "1",
           "the data-parallel size (grid axis dp, outside tp)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Megatron sequence parallelism: the regions between blocks on "
           "sequence shards">,
  ];
  let statistics = [
    Statistic<"numColumn", "column-linears", "linears cut by output">,
    Statistic<"numRow", "row-linears", "linears cut by input">,
    Statistic<"numVocab", "vocab-parallel-heads",
              "LM heads (and their embeddings) cut by vocabulary rows">,
    Statistic<"numSeqGathers", "sequence-all-gathers",
              "all-gathers along the sequence before column linears">,
    Statistic<"numSeqScatters", "sequence-reduce-scatters",
              "reduce-scatters along the sequence in place of all-reduces">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::ds::dist::DistDialect"];
}

def Zero : Pass<"ds-zero", "mlir::ModuleOp"> {
  let summary = "Data parallelism and ZeRO stages 0-3 on the step contract";
  let description = [{
    Rewrites `@train_step` (and, for stage 3, `@forward_backward`) into the
    program every rank of a data-parallel group of `dp-size` ranks runs,
    with the communication explicit as `dsdist` collectives over `["dp"]`.
    The module gets `dsdist.grid = #dsdist.grid<dp = N>` (an existing grid
    must agree). Every rank reduces its micro-batch gradients at the step
    boundary only, after the accumulation loop; the loss it returns is the
    mean over the group.

    - stage 0: gradients are all-reduced (mean), bucketed: gradients are
      packed, last parameter first, into flat buffers of at most
      `reduce-bucket-size` elements, one collective per buffer. A gradient
      of at least `pack-limit` elements (2^20 by default: 4 MiB in f32,
      where a collective's fixed cost is small against its transfer) is
      reduced alone in its own buffer: a pack is a copy, and packing every
      gradient would hold a second model-sized gradient for a moment.
    - stage 1: optimizer state is sharded: each state argument becomes this
      rank's chunk (`dsdist.sharding`): the tensor flattened, zero-padded to
      a multiple of N and cut in N chunks. Gradients are all-reduced as in
      stage 0; each rank updates its chunk of each parameter and the new
      parameters are all-gathered (buckets of `allgather-bucket-size`).
    - stage 2: as stage 1, but gradients are reduce-scattered, so a rank
      only ever holds the reduced gradient of its own chunk.
    - stage 3: as stage 2, and parameters are sharded too: in
      `@forward_backward` each parameter is all-gathered before its first
      use in the forward, released after its last forward use, gathered
      again before its first backward use and released after its last;
      the step returns the updated chunks without gathering them. On a
      pipeline stage (no `@forward_backward`) the same happens in each
      function the step calls with parameters (`@stage_forward`,
      `@stage_backward`), once per micro-batch; a gathered value such a
      forward returns for its backward is not released there.
      Parameters of at most `param-persistence-threshold` elements
      (DeepSpeed's stage3_param_persistence_threshold, default 1e5) persist:
      as in DeepSpeed they stay whole on every rank and are treated as at
      stage 2 (gradient reduce-scattered, state sharded, the updated chunks
      all-gathered after the step), so the gradient function reads them
      without a gather. 0 partitions every parameter.

    An eval function (`eval-entry`, made by ds-eval-step) reads the
    parameters as the step holds them: at stage 3 it takes the chunks and
    gathers each before its first use and releases it after its last, as
    the forward of `@forward_backward` does; with mixed precision at stage
    1/2 it takes the 16-bit parameters (its casts go).

    Mixed precision (every parameter read by `@forward_backward` only
    through casts to one 16-bit type): at stage 1/2 the parameters become
    that 16-bit type on every rank (the casts go) and each rank's chunk of
    the f32 master copy becomes optimizer state (`kind = "master"`); the
    update writes the master chunk and its 16-bit rounding, which the
    all-gather spreads (half the bytes). At stage 3 each parameter's chunk
    is cast before its gather. An fp16 step's overflow flag
    (`dstrain.has_overflow`, each rank over its own gradients) becomes the
    OR over the group.

    With N > 1 the gradient norm (reported, and used by clipping) is always
    computed from the chunks, each rank its own, and summed over the group,
    so every stage computes it with the same additions in the same order:
    the stages differ in communication and memory, not in numbers.
    The gradient mean is the collective's `avg`; DeepSpeed's
    `prescale_gradients` and `gradient_predivide_factor` split the division
    around a summing collective instead (`dsnn.mul` by 1/N before, or by
    1/factor before and factor/N after). DeepSpeed does that to keep fp16
    sums in range; ds reduces in f32, so the result is the mean up to
    rounding. Lamb
    needs whole-tensor norms per parameter and is refused with stage >= 1,
    as in DeepSpeed.

      %g = dsdist.reduce_scatter avg %flat over ["dp"] dim 0
             : tensor<2048xf32> -> tensor<1024xf32>
      %p, %m, %v = dstrain.adam %w_chunk, %g, %m_chunk, %v_chunk step %s lr %lr
      %w_new = dsdist.all_gather %p over ["dp"] dim 0
             : tensor<1024xf32> -> tensor<2048xf32>
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "0",
           "zero_optimization.stage: 0, 1, 2 or 3">,
    Option<"dpSize", "dp-size", "int64_t", "1",
           "ranks in the data-parallel group">,
    Option<"reduceBucketSize", "reduce-bucket-size", "int64_t", "500000000",
           "zero_optimization.reduce_bucket_size: elements per gradient "
           "reduction">,
    Option<"allgatherBucketSize", "allgather-bucket-size", "int64_t",
           "500000000",
           "zero_optimization.allgather_bucket_size: elements per parameter "
           "all-gather after the update">,
    Option<"packLimit", "pack-limit", "int64_t", "1048576",
           "a gradient or parameter chunk of at least this many elements is "
           "reduced or gathered in its own buffer, never copied into a "
           "bucket">,
    Option<"prescaleGradients", "prescale-gradients", "bool", "false",
           "prescale_gradients: divide gradients by dp-size before the "
           "reduction (a sum) instead of after it">,
    Option<"gradientPredivideFactor", "gradient-predivide-factor", "double",
           "1.0",
           "gradient_predivide_factor: without prescaling, divide by this "
           "before the reduction (a sum) and by dp-size / this after it">,
    Option<"paramPersistenceThreshold", "param-persistence-threshold",
           "int64_t", "100000",
           "stage3_param_persistence_threshold: at stage 3, parameters of at "
           "most this many elements stay whole on every rank">,
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
    Option<"gradientEntry", "gradient-entry", "std::string",
           "\"forward_backward\"",
           "the gradient function (stage 3 gathers parameters there)">,
    Option<"evalEntry", "eval-entry", "std::string", "\"eval_step\"",
           "the eval function (ds-eval-step), if the module has one: it "
           "reads the parameters as the gradient function's forward does">,
  ];
  let dependentDialects = ["::mlir::ds::dist::DistDialect",
                           "::mlir::ds::train::TrainDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MoERoutingMetrics : Pass<"ds-moe-routing-metrics", "mlir::ModuleOp"> {
  let summary = "Return each MoE layer's per-expert token counts, dropped choices and aux loss from the step";
  let description = [{
    After ds-zero. Each forward `dsnn.moe_route` of the gradient function
    (not a recomputed copy) gets three results of `@forward_backward`, after
    the gradients: the choices routed to each expert before capacity drops
    (`tensor<Exf32>`, summing to N·k), the dropped choices (`tensor<f32>`)
    and the layer's aux loss. `@train_step` sums the first two over its
    micro-batches and the whole data-parallel group (every grid axis) and
    means the aux loss the way it means the loss; it returns them after
    grad_norm, named by `dstrain.metric = "moe/<layer>/<what>"`:

      %c, %d = scf.for ... // over the N·k choices of the route
      return ..., %c, %d, %aux   // {dstrain.metric = "moe/h.1/exp_counts"}, ...

      %0:33 = scf.for ... iter_args(..., %cs = %zeros, ...) {
        %r:33 = func.call @forward_backward(...)
        %s = dsnn.add %cs, %r#30 ...
      }
      %counts = dsdist.all_reduce %0#30 over ["dp", "ep"] sum

    A pipelined step is left as it is (no routing metrics).
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
    Option<"gradientEntry", "gradient-entry", "std::string",
           "\"forward_backward\"", "the gradient function">,
  ];
  let statistics = [
    Statistic<"numLayers", "moe-layers", "MoE layers reported">,
  ];
  let dependentDialects = ["::mlir::ds::dist::DistDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def ScheduleComm : Pass<"ds-schedule-comm", "mlir::ModuleOp"> {
  let summary = "Overlap communication with compute: start collectives "
                "early, wait late, within a memory budget";
  let description = [{
    Runs on the SPMD program after `ds-zero`. In the top-level block of
    every function, each blocking `dsdist.all_gather` (and, with
    `overlap-reduce`, each `dsdist.reduce_scatter` and `dsdist.all_reduce`)
    becomes a `*_start` and a `dsdist.wait`: the wait sinks to just before
    the first use of the result, and the start rises as early as its
    operand allows — a ZeRO-3 parameter's gather, whose operand is the
    step's shard argument, rises above the compute of the layers before its
    own — in the order the collectives had, so every rank still issues them
    alike. The memory budget stops the rise: a gather's buffer is live from
    its start to the `dsdist.release` (or last use) of its result, and a
    start rises past an op only while the gathered elements live there stay
    within `max-live-parameters` and the elements in flight (started, not
    yet waited) within `prefetch-bucket-size` (DeepSpeed's
    stage3_max_live_parameters and stage3_prefetch_bucket_size, counted in
    elements as DeepSpeed counts them). A collective whose buffer alone
    exceeds a budget stays where it was, and so does one whose buffer would
    take the gathered bytes live past `memory-budget`. Arithmetic does not
    move: the schedule changes when bytes travel, never what is computed.

    Before that, adjacent all-gathers (those ds-zero puts before one op:
    same group, element type and phase, only views and shard casts between
    them) fuse into one collective of the chunks packed as rows
    (`tensor.concat`, one `dsdist.all_gather`, each parameter its columns
    of the result: copies only), as DeepCompile fuses them: a run grows
    while the cost model predicts the fused gather to take less than 1.2 x
    the longer of the run and the next gather, and stays under
    `fuse-bytes`. Before fusing, where `memory-budget` (default 90% of the
    rank's share of the machine's memory) and `max-live-parameters` have
    headroom over the peak of gathered parameters, a parameter gathered in
    the forward and again in the backward keeps its forward buffer until
    its last backward use and the backward gather goes. Which ones: with
    `selective-unshard` (DeepCompile's selective gather), greedily the most
    predicted all-gather time per byte first; else those whose backward
    gather comes within `max-reuse-distance` elements of parameters
    gathered after their forward gather (DeepSpeed's
    stage3_max_reuse_distance, default 1e9: a parameter reused that soon is
    not released), the nearest reuse first. The cost model is the alpha-beta ring model of
    `ds/Transforms/CommCostModel.h`, with its documented defaults or
    fitted to the measured points of `comm-profile`. `print-plan` emits a
    remark per collective (where it starts, where it is waited, its
    predicted time and the compute between) and per function (the peak of
    gathered bytes live at once).

    With `overlap-reduce`, a `dsdist.reduce_scatter` or `dsdist.all_reduce`
    of gradients that a function returns (ds-zero packs them as the rows of
    one bucket after the call) moves into that function when it has this
    one call: the bucket is cut where its gradients become ready (the layer
    that produces them), pieces kept together while the cost model predicts
    the joined collective under 1.2 x the longer piece, so each piece
    starts during the backward of the layers before its own; the function
    returns the reduced pieces. The sums are the same element by element.
    An all-reduce bucket on 3 or more ranks moves whole (started after its
    last gradient): there the order of its sums depends on the message
    size.
    Gradient buckets in flight (started, not waited) hold their whole
    gradients: when a reduction would start with more than
    `reduce-bucket-size` elements of buckets in flight (DeepSpeed's
    reduce_bucket_size), the oldest are waited first, so the whole
    gradients die as the backward goes and a rank keeps the reduced
    chunks (ZeRO 2 and 3) rather than a whole gradient of the model.
    Under gradient accumulation (an `scf.for` calling the function once per
    micro-batch, summing the gradients, a bucket after it reducing the
    scaled sums), the last micro-batch runs after the loop through its own
    copy of the function, into which the bucket moves with the sum into
    the accumulator (passed as an argument) and the scaling: the same ops
    in the same order, so the sums are bitwise the same.

    Before (one layer, ZeRO-3):

      %g1 = dsdist.all_gather %w1 over ["dp"] dim 0 {phase = "forward"} ...
      %y1 = dsnn.layer "h.1" ... uses %g1
      dsdist.release %g1

    After: the gather of layer 1 starts before layer 0's compute.

      %h1 = dsdist.all_gather_start %w1 over ["dp"] dim 0 ...
      %y0 = dsnn.layer "h.0" ...
      %g1 = dsdist.wait %h1 ...
      %y1 = dsnn.layer "h.1" ... uses %g1
      dsdist.release %g1
  }];
  let options = [
    Option<"maxLiveParameters", "max-live-parameters", "int64_t",
           "1000000000",
           "stage3_max_live_parameters: elements of gathered parameters "
           "live at any point">,
    Option<"prefetchBucketSize", "prefetch-bucket-size", "int64_t",
           "50000000",
           "stage3_prefetch_bucket_size: elements of all-gathers in flight "
           "at any point">,
    Option<"reduceBucketSize", "reduce-bucket-size", "int64_t",
           "500000000",
           "reduce_bucket_size: elements of gradient buckets in flight at "
           "any point; an older reduction is waited before a newer one "
           "starts past it">,
    Option<"overlapReduce", "overlap-reduce", "bool", "true",
           "also start gradient reductions early and wait late "
           "(overlap_comm)">,
    Option<"commProfile", "comm-profile", "std::string", "",
           "JSON profile of measured collective times (see "
           "docs/communication.md); empty: the default cost constants">,
    Option<"fuseBytes", "fuse-bytes", "int64_t", "1000000000",
           "largest fused all-gather, in bytes (0 turns fusion off)">,
    Option<"memoryBudget", "memory-budget", "int64_t", "0",
           "bytes of gathered parameters live at any point; 0: 90% of this "
           "rank's share of the machine's memory (as DeepCompile)">,
    Option<"maxReuseDistance", "max-reuse-distance", "int64_t",
           "1000000000",
           "stage3_max_reuse_distance: a parameter whose backward gather "
           "comes within this many elements of parameters gathered after "
           "its forward gather keeps the forward's buffer instead, while "
           "memory-budget and max-live-parameters allow (0: none)">,
    Option<"selectiveUnshard", "selective-unshard", "bool", "false",
           "keep forward gathers live for the backward, most expensive per "
           "byte first, while memory-budget and max-live-parameters allow">,
    Option<"printPlan", "print-plan", "bool", "false",
           "print each collective's start, wait, predicted time and "
           "overlap as remarks">,
  ];
  let statistics = [
    Statistic<"numAsync", "async-collectives",
              "collectives turned into start/wait pairs">,
    Statistic<"numHoisted", "hoisted-starts",
              "starts issued before at least one compute op">,
    Statistic<"numFused", "fused-all-gathers",
              "all-gathers merged into the one before them">,
    Statistic<"numUnsharded", "unsharded-params",
              "backward all-gathers dropped: the forward's buffer kept">,
    Statistic<"numSunk", "sunk-reductions",
              "gradient reduction buckets moved into the gradient "
              "function, split where the gradients become ready">,
    Statistic<"numBounded", "bounded-reductions",
              "gradient reductions waited before a later one starts, to "
              "keep reduce-bucket-size elements in flight">,
    Statistic<"numPeeled", "peeled-micro-batches",
              "accumulation loops whose last micro-batch runs after them, "
              "so its backward overlaps the reduction">,
  ];
  let dependentDialects = ["::mlir::ds::dist::DistDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def PlanMemory : Pass<"ds-plan-memory", "mlir::ModuleOp"> {
  let summary = "Predict each rank's model states, activations and peak "
                "memory from the step's IR";
  let description = [{
    Without running anything, reports (as a remark on the step function,
    and as its `ds.model_state_bytes` attribute) the bytes one rank holds
    between steps: parameters and optimizer state as the step's arguments
    hold them (whole, or chunks carrying `dsdist.sharding`), and the
    gradient each optimizer update reads as the step boundary leaves it —
    whole after an all-reduce (ZeRO 0 and 1: stage 1 updates only a
    `dsdist.shard` of it), a chunk after a reduce-scatter (2 and 3). Next to
    it, the ZeRO paper's fp32 figure for the same parameter count and group
    (16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N); padding to a multiple of N is
    the difference. ds-train reports what it allocated as
    `model_state_bytes`.

      $ ds-opt --ds-training-pipeline="config=zero3.json world-size=2" --ds-plan-memory
      remark: ds-plan-memory: per rank (dp = 2, ZeRO stage 3): parameters
        15488 B, gradients 15488 B, optimizer state 30976 B; model states
        61952 B (ZeRO formula for 7744 parameters: 61952 B)

    A second remark (and `ds.activation_bytes`) predicts activations: the
    bytes of the values one micro-batch's forward leaves for its backward
    (in `@forward_backward`, what the backward reads from the ops the loss
    needs; in a pipeline stage, what `@stage_backward` takes from
    `@stage_forward` and the activation received), times the micro-batches
    whose backward is pending at once (1 without a pipeline; the schedule's
    peak in a stage), plus the largest block of `recompute` layers
    (ds-checkpoint-activations) the backward holds at a time. Temporaries
    inside a layer or an op are not counted.

      (GPT-tiny, micro-batch 2, activation_checkpoint_interval 1)
      remark: ds-plan-memory: activations per rank: 8192 B saved per
        micro-batch x 1 in flight + 15360 B recomputed = 23552 B

    A third remark (and `ds.planned_peak_bytes`) predicts the most one rank
    holds during a step: the step's arguments and results (a result that
    updates a model state is written over its argument, so counted once), plus its
    buffers at their most live at once (each live from the op that makes
    it to its last use, through views; a gathered parameter to its
    `dsdist.release`; a collective between its start and wait holds a
    snapshot of its operand and its result; a loop's accumulators two
    slots; a function called once has its buffers counted where it is
    called), plus the buffers of the functions with an arena of their own
    (each distinct layer function, a function called from more than one
    place, and `eval-entry` when the module has it: an eval set), all held
    at once. ds-train reports it as
    `planned_peak_bytes` next to libdsrt's measured `peak_tracked_bytes`.

      (GPT-tiny, micro-batch 2, ZeRO-3 on 2 ranks with overlap_comm)
      remark: ds-plan-memory: peak per rank 190360 B = arguments and
        results 46996 B + step buffers 122884 B (gathered parameters
        0 B, in flight 57216 B of it) + other functions' buffers 20480 B;
        gathered parameters at most 13120 B, in flight at most 83808 B

    With `explain=K`, a fourth remark names the K ops whose buffers hold
    the most of the step buffers at that peak (an op's results summed),
    largest first, each with its bytes and location: where to look when
    the peak is larger than the model states and activations explain.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the step function">,
    Option<"evalEntry", "eval-entry", "std::string", "\"eval_step\"",
           "the eval step, when the module has one (an eval set): its "
           "arena counts in the peak">,
    Option<"explain", "explain", "unsigned", "0",
           "name this many of the ops whose buffers make the step's peak, "
           "largest first">,
  ];
}

//===----------------------------------------------------------------------===//
// Lowering phase: dsnn -> linalg on tensors
//===----------------------------------------------------------------------===//

def OutlineLayers : Pass<"ds-outline-layers", "mlir::ModuleOp"> {
  let summary = "Outline every dsnn.layer into one function per distinct body";
  let description = [{
    The first step of the lowering phase: compile each distinct layer once.
    Every `dsnn.layer` region becomes a call of a private function whose
    arguments are the values the region reads from above (in order of first
    use; constants are cloned in instead) and whose results are the layer's.
    Layers with the same body on different values — the `h.0`, `h.1`, ... of
    a GPT, and their backward layers — become calls of one function, so the
    code below grows with the number of distinct layers, not with depth.
    Bodies are compared as printed, so two layers share a function exactly
    when their ops, types and attributes are equal.

    A function is named after the layer type (`@layer_GPT2Block`, with
    `_backward` for a backward layer and `_1`, `_2`, ... for another body of
    the same type), carries `dsnn.layer_type` and the number of layers it
    serves as `dsnn.layer_count`, and `passthrough = ["noinline"]`: LLVM
    would otherwise inline a function called once (and its code generation
    is superlinear in function size). The arithmetic is unchanged, so
    results are bitwise those of the inlined layers.

      %h = dsnn.layer "h.0" ("GPT2Block") -> tensor<4x8x16xf32> {
        %y = dsnn.layer_norm %x, %g, %b eps 1.0e-05 : ...
        dsnn.yield %y : tensor<4x8x16xf32>
      }

    becomes

      %h = func.call @layer_GPT2Block(%x, %g, %b) : (...) -> tensor<4x8x16xf32>
      func.func private @layer_GPT2Block(%arg0: ..., %arg1: ..., %arg2: ...)
          -> tensor<4x8x16xf32> attributes {dsnn.layer_count = 1 : i64, ...}

    Each top-level layer call is bracketed by calls of libdsrt's
    `dsrt_trace_begin(name, backward)` and `dsrt_trace_end()` (the layer's
    name a constant string in the module): the spans of `ds-train --trace`.
    They return after one branch unless a trace is recording, so the
    compiled step is the same with and without tracing. Layers nested in
    another layer get no marks, so equal outer bodies still share one
    function.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def StackLayers : Pass<"ds-stack-layers", "mlir::ModuleOp"> {
  let summary = "Run K equal consecutive layers as one loop over stacked per-layer values";
  let description = [{
    A step towards a step whose glue does not grow with depth (run before
    `ds-outline-layers`, off in the training pipeline). In each function, a
    run of K >= 2 adjacent top-level `dsnn.layer` ops of one layer type with
    the same body (the equivalence `ds-outline-layers` uses) becomes one
    `scf.for %j = 0 to K` holding the layer once. Every value the body reads
    from above is, across the K layers, either

    - the same value (used as is),
    - the previous layer's result at one index (carried: an `iter_arg`
      starting from the first layer's operand),
    - K distinct arguments of the function (a per-layer parameter: an
      `scf.index_switch` on the layer index yields that layer's argument,
      which bufferizes to a choice of buffer, no copy), or
    - for a run after an equal-length run already stacked, in reverse
      order (the backward layers), a result or carried input of the
      matching layer of that run (a saved activation: the earlier loop
      stacks it with `tensor.insert_slice`, this one slices it).

    A run with any other operand, or holding a collective or a `dsnn.moe`,
    is left alone. The layer index of
    iteration `%j` is `%j` for a forward run and `K - 1 - %j` for a reverse
    one, so every stacked tensor holds layer k at index k. The last layer's
    carried result replaces the run's output; any other use of a layer's
    result outside the stacked runs (the gradients the function returns)
    reads its slice of the stacked result. The function's signature does
    not change: the switches and the slices at exit are the boundary that
    stacked step arguments would remove. Each iteration computes the same
    ops on the same values as the layer it replaces.

      %h0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> { ... %x, %w0 ... }
      %h1 = dsnn.layer "h.1" ("Block") -> tensor<4xf32> { ... %h0, %w1 ... }

    becomes

      %h1 = scf.for %j = %c0 to %c2 step %c1 iter_args(%h = %x) {
        %w = scf.index_switch %j -> tensor<4xf32>
        case 0 { scf.yield %w0 : tensor<4xf32> }
        default { scf.yield %w1 : tensor<4xf32> }
        %y = dsnn.layer "h.0" ("Block") -> tensor<4xf32> { ... %h, %w ... }
        scf.yield %y
      }
  }];
  let statistics = [
    Statistic<"numRuns", "runs", "runs of layers made loops">,
    Statistic<"numLayers", "layers", "layers folded into loops">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def StackArguments : Pass<"ds-stack-arguments", "mlir::ModuleOp"> {
  let summary = "Take a stacked run's per-layer parameters and optimizer states as one argument each";
  let description = [{
    After `ds-stack-layers` (with `ds-inline-glue` before it, so the layers,
    the clipping and the optimizer are in one function), the step still
    takes one argument per layer and parameter, chosen by an
    `scf.index_switch`, and clips and updates each on its own: glue that
    grows with depth. In a function nothing calls (the step), a group of K
    arguments that the switches of a run choose among, and that are
    otherwise only the `param` of one `dstrain.adam` each, becomes one
    argument `tensor<K x ...>` sliced at the layer index; their Adam states
    become stacked arguments too, the K updates one `dstrain.adam` over the
    stacks (elementwise: each element is computed as before), and the K new
    values one stacked result. The stacked argument sits where its first
    member was, the others go, and it carries `ds.stack` with the member
    positions in layer order (the calling convention: see
    include/ds/Support/CInterface.h); the results likewise.

    Each update's gradient must be the slice of the backward run's stacked
    gradient at its layer, through `dstrain.clip_grad_norm` or directly.
    Clipping keeps its order of summation: the squares are added in f64
    operand by operand, layer-major, and rounded to f32 once, so the pass
    sums the operands before the run with one f64 `dstrain.global_norm
    squared`, then loops over the layers summing each layer's slices in
    slot order (`init` threads the f64 running sum), then the operands after
    it, rounds, and gives the clip that norm (`norm`); the clip then scales
    the stacks as wholes. A group or run
    that does not match (other users, a different optimizer, attributes or
    step operands that differ, an fp16 overflow check, sharded gradients)
    is left as `ds-stack-layers` made it.

      %w = scf.index_switch %j -> tensor<4xf32>
      case 0 { scf.yield %w0 : tensor<4xf32> }
      default { scf.yield %w1 : tensor<4xf32> }

    becomes, with `%w0` and `%w1` replaced by
    `%ws: tensor<2x4xf32> {ds.stack = array<i64: 3, 7>}`,

      %w = tensor.extract_slice %ws[%j, 0] [1, 4] [1, 1]
          : tensor<2x4xf32> to tensor<4xf32>
  }];
  let statistics = [
    Statistic<"numGroups", "groups", "parameters taken stacked">,
    Statistic<"numArguments", "arguments", "per-layer arguments folded into stacks">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def LowerNNToLinalg : Pass<"ds-lower-nn-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower every dsnn op to linalg, tensor, arith and math on tensors";
  let description = [{
    The compute half of the lowering phase. `dsnn.layer` bodies are inlined
    (after `ds-outline-layers` none are left in the step);
    every other dsnn op, forward and backward, becomes value-semantic IR that
    one-shot bufferization and the loop/LLVM lowering take from there:

    - Products are `linalg.matmul` (rank 2) or `linalg.batch_matmul` (rank 3,
      leading batch dims folded into one by `tensor.collapse_shape`) on
      row-major operands, accumulating into `linalg.fill` 0 of a
      `tensor.empty` in f32 (f64 for f64). A transposed operand is expressed
      by the op's `indexing_maps` only: MLIR's MatmulTransposeA/B forms
      (A as `(m, n, k) -> (k, m)`, B as `(m, n, k) -> (n, k)`, with a leading
      `b` for batches), both at once for AᵀBᵀ. `dsnn.linear` is a matmul
      with transposed B (the `[out, in]` weight) followed by a bias-add
      `linalg.generic`; attention and its gradient are batch matmuls around
      a softmax.
    - Everything else is `linalg.generic` (elementwise with NumPy
      broadcasting through the indexing maps; reductions), `linalg.fill`,
      `linalg.transpose`, `tensor.collapse_shape`/`expand_shape`,
      `tensor.extract_slice`/`insert_slice` (split, concat) and `math` ops.
      Softmax, log-softmax and cross-entropy subtract the row max; layer
      norm uses the biased variance; reductions accumulate in f32.
    - `dsnn.embedding_grad` is an `scf.for` over positions adding each
      gradient row into its table row with `extract_slice`/`insert_slice`,
      which bufferizes in place (a linalg.generic cannot scatter).

    - Attention over more keys than `attention-block-threshold` never
      materializes the `[B, Tq, Tk]` probabilities: `scf.for` loops over
      blocks of `attention-block-size` queries and keys (then one shorter
      block for the rest) carry the running row max, row sum and
      unnormalized output (FlashAttention-2's online softmax, f32 for
      16-bit inputs); the gradient recomputes each block's probabilities
      from the logsumexp. Causal attention skips the blocks above the
      diagonal. Temporaries are `[B, block, block]` plus per-row state, so
      memory grows linearly in T.
      Shorter attention keeps the materialized form above.

    Shapes must be static. `dsnn.moe` and `dsnn.dropout` with p > 0 are not
    lowered yet; the pass fails naming every dsnn op it could not lower.

      %y = dsnn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<64x16xf32>,
                                      tensor<64xf32>) -> tensor<8x64xf32>

    becomes

      %0 = tensor.empty() : tensor<8x64xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x64xf32>) -> tensor<8x64xf32>
      %2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                          affine_map<(m, n, k) -> (n, k)>,
                                          affine_map<(m, n, k) -> (m, n)>]
             ins(%x, %w : tensor<8x16xf32>, tensor<64x16xf32>)
             outs(%1 : tensor<8x64xf32>) -> tensor<8x64xf32>
      %3 = linalg.generic {...} ins(%2, %b : tensor<8x64xf32>, tensor<64xf32>) ...
  }];
  let options = [
    Option<"attentionBlockSize", "attention-block-size", "int64_t", "256",
           "keys per block of the online-softmax attention lowering (0: "
           "always materialize the [Tq, Tk] probabilities)">,
    Option<"attentionBlockThreshold", "attention-block-threshold", "int64_t",
           "1024", "attention over more keys than this is lowered by blocks">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Lowering phase: dstrain -> linalg on tensors
//===----------------------------------------------------------------------===//

def LowerTrainToLinalg : Pass<"ds-lower-train-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower the dstrain optimizer, norm, loss-scale and LR ops to linalg, arith and math on tensors";
  let description = [{
    The training half of the compute lowering (`ds-lower-nn-to-linalg` is the
    model half). Each update keeps DeepSpeed's and PyTorch's arithmetic:

    - `dstrain.adam`, `dstrain.sgd`: one `linalg.generic` per op, a single
      pass reading the gradient and updating parameter and state in place
      (the parameter and state tensors are the generic's `outs`, so
      bufferization writes them where they are). Step-dependent scalars
      (bias corrections, step size, decay factor, SGD's first-step flag) are
      computed once with `arith`/`math` on `tensor.extract`ed scalars.
      Adam follows DeepSpeed's kernels: `denom = sqrt(v) / sqrt(1 - beta2^t)
      + eps`; AdamW decays the parameter by `lr * weight_decay` first.
    - `dstrain.lamb`: DeepSpeed's FusedLamb in two passes: a reduction of
      `‖p‖²` and `‖u‖²` with `u = m / (sqrt(v) + eps) + weight_decay p` on
      the updated moments, then the update `p -= step_size · ratio · u`,
      `step_size = lr sqrt(1 - beta2^t) / (1 - beta1^t)`, ratio clamped to
      `[min_coeff, max_coeff]` (1 when a norm is 0).
    - `dstrain.global_norm`, `dstrain.has_overflow`: one reduction
      `linalg.generic` per input into a running 0-d accumulator (f32 sum of
      squares; i1 "any element is inf or nan"). `dstrain.clip_grad_norm`
      adds one elementwise generic per gradient scaling by
      `min(1, max_norm / (norm + 1e-6))`.
    - `dstrain.lr_schedule` and `dstrain.loss_scale_update`: scalar `arith`
      and `math` (f64 for the schedules, as DeepSpeed computes them in
      Python floats) wrapped in `tensor.from_elements`.

    `dstrain.checkpoint_save` / `checkpoint_load` stay: checkpoint ops are
    lowered by the runtime lowering. Shapes must be static; the pass fails
    naming every other dstrain op it could not lower.

    With `optimizer-kernels` (the default) the updates libdsrt's fused CPU
    kernels serve — static f32 param and state, f32/f16/bf16 grad, which is
    every update ds-optimizer makes today — stay as they are: bufferization
    makes them `dstrain.apply` and `ds-lower-optimizer-to-runtime` calls
    `dsrt_adam_multi` and friends (one OpenMP pass for all the parameters).
    `optimizer-kernels=false` lowers them to the generics below, for
    comparison and for runs without libdsrt (e.g. `mlir-runner`).

      %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr
          {weight_decay = 0.01 : f64} : tensor<64xf32>, tensor<64xbf16>

    becomes (scalars elided)

      %r:3 = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                             iterator_types = ["parallel"]}
          ins(%g : tensor<64xbf16>)
          outs(%p, %m, %v : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
      ^bb0(%gi: bf16, %pi: f32, %mi: f32, %vi: f32):
        ...  // m, v, then p, in one pass
        linalg.yield %pn, %mn, %vn : f32, f32, f32
      } -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  }];
  let options = [
    Option<"optimizerKernels", "optimizer-kernels", "bool", "true",
           "leave the f32 optimizer updates for libdsrt's fused kernels "
           "(ds-lower-optimizer-to-runtime) instead of lowering them to "
           "linalg">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def SequenceParallel : Pass<"ds-sequence-parallel", "mlir::ModuleOp"> {
  let summary = "DeepSpeed-Ulysses: the sequence split over an sp group";
  let description = [{
    On the model contract, before ds-autodiff. With `size` S > 1, the
    `dp-size` x S ranks form the grid `#dsdist.grid<dp = D, sp = S>`: the S
    ranks of a sequence-parallel group are consecutive.

    Every rank of the group reads the same micro-batch; the pass keeps this
    rank's T/S positions of each `dsnn.batch` argument `[B, T, ...]` and of
    the position ids (so position embeddings take the rank's slice of the
    global positions). Everything outside attention then runs on
    `[B, T/S, ...]`. Around each `dsnn.attention` (`[B, H, T/S, D]`
    operands) an all-to-all over `sp` turns sequence shards into head
    shards, so the attention, its causal mask included, sees all T global
    positions on H/S heads; the inverse all-to-all follows it:

      %t = dsnn.transpose %q perm [1, 0, 2, 3] : tensor<2x2x4x8xf32> -> tensor<2x2x4x8xf32>
      %a = dsdist.all_to_all %t over ["sp"] split 0 concat 0 : tensor<2x2x4x8xf32> -> tensor<2x2x4x8xf32>
      %r = dsnn.reshape %a : tensor<2x2x4x8xf32> -> tensor<2x1x2x4x8xf32>
      %p = dsnn.transpose %r perm [2, 1, 0, 3, 4] : tensor<2x1x2x4x8xf32> -> tensor<2x1x2x4x8xf32>
      %qh = dsnn.reshape %p : tensor<2x1x2x4x8xf32> -> tensor<2x1x8x8xf32>

    The loss is each rank's mean over its positions, times 1/S, summed
    over `sp` (`dsdist.all_reduce sum`): the mean over the global tokens,
    the same on every rank of the group. Each parameter goes through
    `dsdist.copy_to_group` over `sp`, so its gradient is summed over the
    group and stays equal on all of its ranks; ds-zero then reduces it
    over `dp` as usual. Under ds-mixed-precision (bf16, fp16) the sum is
    f32 and the all-to-alls 16-bit; every rank of the group checks the
    same summed gradients for fp16 overflow. A sequence length or a head count that S does not
    divide, and an op the pass cannot place on sequence shards, are errors
    naming the op and the numbers.
  }];
  let options = [
    Option<"size", "size", "int64_t", "1",
           "ranks of a sequence-parallel group">,
    Option<"dpSize", "dp-size", "int64_t", "1",
           "the data-parallel size (grid axis dp, outside sp)">,
  ];
  let statistics = [
    Statistic<"numAttention", "attentions",
              "attentions wrapped in all-to-alls">,
    Statistic<"numAllToAlls", "all-to-alls", "all-to-alls inserted">,
  ];
  let dependentDialects = ["::mlir::ds::nn::NNDialect",
                           "::mlir::ds::dist::DistDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // DS_TRANSFORMS_PASSES
