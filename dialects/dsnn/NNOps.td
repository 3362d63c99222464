//===- NNOps.td - dsnn operations --------------------------*- tablegen -*-===//
#ifndef DSNN_OPS
#define DSNN_OPS

include "dsnn/NNBase.td"
include "dsnn/NNAttrs.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def NN_FloatTensor : RankedTensorOf<[AnyFloat]>;
def NN_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def NN_ScalarTensor : 0DTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_LinearOp : NN_Op<"linear", [Pure]> {
  let summary = "Affine map y = x·Wᵀ + b, weight in nn.Linear layout [out, in]";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]`, the optional `bias` is
    `[out]`; the result is `[..., out]`.

      %y = dsnn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<64x16xf32>,
                                      tensor<64xf32>) -> tensor<8x64xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class NN_MatmulLike<string mnemonic, string shapes> : NN_Op<mnemonic, [Pure]> {
  let description = shapes # [{
    `transpose_a` / `transpose_b` use the operand transposed in its last two
    dims (e.g. attention scores Q·Kᵀ without a separate transpose).
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MatmulOp : NN_MatmulLike<"matmul", [{
    Matrix product of two rank-2 tensors: `[M, K] x [K, N] -> [M, N]`.
  }]> {
  let summary = "Matrix product of two rank-2 tensors";
}

def NN_BatchMatmulOp : NN_MatmulLike<"batch_matmul", [{
    Batched matrix product: `[..., M, K] x [..., K, N] -> [..., M, N]`; both
    operands have the same rank (≥ 3) and the same leading batch dims.
  }]> {
  let summary = "Batched matrix product over identical leading dims";
}

//===----------------------------------------------------------------------===//
// Embedding, normalization, activations
//===----------------------------------------------------------------------===//

def NN_EmbeddingOp : NN_Op<"embedding", [Pure]> {
  let summary = "Row gather: table[indices]";
  let description = [{
    `indices` of any shape `S` select rows of `table` `[V, C]`; the result is
    `S + [C]`.

      %e = dsnn.embedding %ids, %wte : tensor<2x8xi64>, tensor<50x16xf32> -> tensor<2x8x16xf32>

    With `offset` (a one-element i64 tensor, o) the table holds the rows
    o to o + V − 1 of a larger vocabulary: index i reads row i − o, and an
    index outside that range gives a zero row. A vocabulary-parallel
    embedding is this on every rank, then a sum over the group.

      %e = dsnn.embedding %ids, %wte_piece offset %o : tensor<2x8xi64>, tensor<25x16xf32>, tensor<1xi64> -> tensor<2x8x16xf32>
  }];
  let arguments = (ins NN_IntTensor:$indices, NN_FloatTensor:$table,
                       Optional<NN_IntTensor>:$offset);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $table (`offset` $offset^)? attr-dict `:` type($indices) `,` type($table) (`,` type($offset)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_Op<"layer_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "LayerNorm over the last dim with affine weight and bias";
  let description = [{
    y = (x - mean) / sqrt(var + eps) * weight + bias, statistics over the last
    dim (biased variance), `weight` and `bias` of shape `[C]`.

      %y = dsnn.layer_norm %x, %g, %b eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$bias, F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $epsilon attr-dict `:` type($input) `,`
    type($weight) `,` type($bias)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                                 "::mlir::Value":$bias, "double":$epsilon), [{
    build($_builder, $_state, input.getType(), input, weight, bias,
          $_builder.getF64FloatAttr(epsilon));
  }]>];
  let hasVerifier = 1;
}

def NN_RMSNormOp : NN_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMSNorm over the last dim: x / sqrt(mean(x²) + eps) * weight";
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $epsilon attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

class NN_UnaryOp<string mnemonic, string sum, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = sum;
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_GeluOp : NN_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "GELU, exact (erf) or the tanh approximation";
  let description = [{
    `approximate = none` (the default, PyTorch's `gelu`) is
    x·½(1 + erf(x/√2)); `tanh` (GPT-2's `gelu_new`) is
    x·½(1 + tanh(√(2/π)(x + 0.044715x³))).

      %y = dsnn.gelu %x approximate tanh : tensor<8x64xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximation,
                        "::mlir::ds::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` $approximate^)? attr-dict `:` type($result)
  }];
}

def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)">;
def NN_SiluOp : NN_UnaryOp<"silu", "x·sigmoid(x)">;
def NN_TanhOp : NN_UnaryOp<"tanh", "Hyperbolic tangent">;
def NN_ExpOp : NN_UnaryOp<"exp", "Natural exponential">;
def NN_NegOp : NN_UnaryOp<"neg", "Negation">;
def NN_RsqrtOp : NN_UnaryOp<"rsqrt", "Reciprocal square root, 1/√x"> {
  let description = [{
    What PyTorch's `torch.rsqrt` computes; RMSNorm written out by hand
    (`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)`) imports to it.

      %y = dsnn.rsqrt %x : tensor<8x1xf32>
  }];
}

class NN_SoftmaxLike<string mnemonic, string sum>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = sum;
  let description = [{
    Normalizes along `dim` (negative values count from the back).

      %p = dsnn.}] # mnemonic # [{ %x dim -1 : tensor<2x4x8x8xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$dim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `dim` as a non-negative index.
    int64_t getNormalizedDim() {
      int64_t d = getDim();
      return d < 0 ? d + getType().getRank() : d;
    }
  }];
}

def NN_SoftmaxOp : NN_SoftmaxLike<"softmax", "Softmax along one dim">;
def NN_LogSoftmaxOp : NN_SoftmaxLike<"log_softmax", "Log-softmax along one dim">;

def NN_AttentionOp : NN_Op<"attention", [Pure]> {
  let summary = "Scaled dot-product attention, optionally causal";
  let description = [{
    softmax(Q·Kᵀ·scale + mask)·V over `[..., T, D]` operands: `query`
    `[..., Tq, D]`, `key` `[..., Tk, D]`, `value` `[..., Tk, Dv]`, result
    `[..., Tq, Dv]`. `scale` defaults to 1/√D. `causal` masks position j > i
    (requires Tq = Tk).

      %o = dsnn.attention %q, %k, %v {causal} : tensor<2x4x8x4xf32>,
             tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

// The per-call counter of a dropout's random stream (see dsnn.dropout).
def NN_RngKey : 0DTensorOf<[I64]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI64Type())";
}

def NN_DropoutOp : NN_Op<"dropout", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Inverted dropout with probability p (identity when p = 0)";
  let description = [{
    Zeroes each element with probability `p` and scales the rest by
    1/(1-p), as `torch.nn.functional.dropout` in training mode.

    The mask is a pure function of (`seed`, `stream`, `key`, element index),
    never stored: element i (row-major) is kept iff
    `u_i >= floor(p · 2^64)` (unsigned), with SplitMix64's mixer `mix` and
    `γ = 0x9E3779B97F4A7C15`:

        base = mix(mix(mix(seed) ^ stream) ^ key)
        u_i  = mix(base + (i + 1) · γ)

    `key` is the call's counter (ds-autodiff makes it an argument of the
    gradient function; @train_step passes step · micro-batches + micro-batch
    index), `stream` numbers the dropout ops of a model, `seed` is the
    module's `dsnn.init_seed`. So masks are reproducible across runs and
    machines, differ per step, micro-batch and op, and the backward — a
    dropout with the same key, seed and stream applied to the cotangent —
    recomputes exactly the forward's mask. Without `key` (the model
    contract, when it is evaluated rather than trained) the op is
    evaluation-mode dropout, as after torch's `model.eval()`: the identity.

      %y = dsnn.dropout %x key %k p 1.000000e-01 {seed = 0 : i64, stream = 3 : i64} : tensor<2x8x16xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, Optional<NN_RngKey>:$key,
                       F64Attr:$p, DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input (`key` $key^)? `p` $p attr-dict `:` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "double":$p), [{
    build($_builder, $_state, input.getType(), input, ::mlir::Value(),
          $_builder.getF64FloatAttr(p), ::mlir::IntegerAttr(),
          ::mlir::IntegerAttr());
  }]>];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (NumPy broadcasting)
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string sum, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure], traits)> {
  let summary = sum;
  let description = [{
    Elementwise with NumPy broadcasting: shapes are aligned from the back and
    each pair of dims must be equal or 1; the result has the broadcast shape
    and the operands' element type.

      %z = dsnn.}] # mnemonic # [{ %x, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_AddOp : NN_BinaryOp<"add", "Elementwise sum", [Commutative]>;
def NN_SubOp : NN_BinaryOp<"sub", "Elementwise difference">;
def NN_MulOp : NN_BinaryOp<"mul", "Elementwise product", [Commutative]>;
def NN_DivOp : NN_BinaryOp<"div", "Elementwise quotient">;

def NN_CompareOp : NN_Op<"compare", [Pure]> {
  let summary = "Elementwise comparison into a boolean mask";
  let description = [{
    `eq` or `ne` of two tensors of one element type (float or integer),
    NumPy-broadcast, into an `i1` mask: PyTorch's `ids == pad`,
    `mask == 0`. A mask carries no gradient: the VJP gives its operands
    none (PyTorch's comparisons are not differentiable either).

      %m = dsnn.compare eq %ids, %pad : tensor<2x8xi64>, tensor<i64> -> tensor<2x8xi1>
  }];
  let arguments = (ins NN_ComparePredicate:$predicate, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $predicate $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_SelectOp : NN_Op<"select", [Pure]> {
  let summary = "Elementwise choice by a mask: on_true where set, else on_false";
  let description = [{
    `torch.where(condition, on_true, on_false)`, and `masked_fill` with a
    mask computed from the data (`x.masked_fill(m, v)` is
    `select(m, v, x)`); exact for any value, -inf included. All three
    NumPy-broadcast; the values share one float type. The cotangent goes
    to the chosen branch only (`select(c, dy, 0)` and `select(c, 0, dy)`,
    summed back over broadcast dims); the mask gets none.

      %y = dsnn.select %m, %fill, %x : tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$condition,
                       NN_FloatTensor:$on_true, NN_FloatTensor:$on_false);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,` type($on_true) `,` type($on_false) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and dtype
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_Op<"reshape", [Pure]> {
  let summary = "Same elements, new shape (row-major)";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_TransposeOp : NN_Op<"transpose", [Pure]> {
  let summary = "Permutes dims: result dim i is input dim permutation[i]";
  let arguments = (ins AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `perm` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_SplitOp : NN_Op<"split", [Pure]> {
  let summary = "Splits along one dim into consecutive pieces";
  let description = [{
    The results' sizes along `dim` add up to the input's; all other dims are
    unchanged. Used for q/k/v out of a fused `c_attn` projection.

      %q, %k, %v = dsnn.split %qkv dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$dim);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_ConcatOp : NN_Op<"concat", [Pure]> {
  let summary = "Concatenates along one dim";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_CastOp : NN_Op<"cast", [Pure]> {
  let summary = "Converts the float element type (mixed precision casts)";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_GradScaleOp : NN_Op<"grad_scale", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Identity whose cotangent is multiplied by `scale`";
  let description = [{
    The forward value is `input`; the VJP is `scale · dy`. fp16 training
    puts it on the loss so the backward starts from the loss scale instead
    of 1 (dynamic loss scaling: small gradients stay above fp16's
    subnormals); the reported loss stays unscaled. ds-mixed-precision
    inserts it, ds-loss-scale owns the scale.

      %l = dsnn.grad_scale %loss by %scale : tensor<f32>, tensor<f32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_ScalarTensor:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `by` $scale attr-dict `:` type($input) `,` type($scale)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string sum> : NN_Op<mnemonic, [Pure]> {
  let summary = sum;
  let description = [{
    Reduces over `dims` (distinct, in range); with `keep_dims` the reduced
    dims stay as size 1.

      %s = dsnn.}] # mnemonic # [{ %x dims [0, 1] : tensor<2x8x16xf32> -> tensor<16xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "Sum over dims">;
def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "Mean over dims">;
// No VJP: only the vocabulary-parallel cross-entropy's row max uses it, and
// that max only steadies the exponentials (no cotangent reaches it).
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "Maximum over dims">;

def NN_CrossEntropyOp : NN_Op<"cross_entropy", [Pure, AttrSizedOperandSegments]> {
  let summary = "Mean softmax cross-entropy over all positions";
  let description = [{
    `logits` `[..., V]`, integer `targets` `[...]` (same leading dims); the
    result is the scalar mean of -log softmax(logits)[target] over the
    positions whose target is not `ignore_index` (default -100, as PyTorch).

      %loss = dsnn.cross_entropy %logits, %t : tensor<2x8x50xf32>, tensor<2x8xi64> -> tensor<f32>

    Vocabulary-parallel form: `logits` are this rank's columns o to
    o + V − 1 (`offset` o) and `stats` give each position's whole-vocabulary
    row max m, Σ exp(x − m) and target logit, as
    `dsnn.cross_entropy_parts` and sums over the group make them. The loss
    is then the mean of log Σ + m − x[target], and `logits` serve only the
    gradient (no cotangent reaches the statistics).

      %loss = dsnn.cross_entropy %logits, %t stats %m, %s, %x offset %o
          : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64> -> tensor<f32>
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$targets,
                       Optional<NN_FloatTensor>:$max,
                       Optional<NN_FloatTensor>:$sum_exp,
                       Optional<NN_FloatTensor>:$picked,
                       Optional<NN_IntTensor>:$offset,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_ScalarTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets (`stats` $max^ `,` $sum_exp `,` $picked `offset` $offset)? attr-dict `:` type($logits) `,` type($targets) (`,` type($max)^ `,` type($sum_exp) `,` type($picked) `,` type($offset))? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_LinearCrossEntropyOp : NN_Op<"linear_cross_entropy", [Pure]> {
  let summary = "dsnn.cross_entropy of dsnn.linear's logits, in row chunks";
  let description = [{
    The mean cross-entropy of the logits `input`·`weight`ᵀ (`input`
    `[..., D]`, `weight` `[V, D]`, integer `targets` `[...]`) computed
    `chunk` rows at a time, so no `[N, V]` logits exist: per chunk the
    logits, their row max and Σ exp(x − max) are made and used, then
    dropped. The logits are rounded to the input's element type, as
    `dsnn.linear`'s result is, and the loss is f32. Equal to
    `dsnn.cross_entropy(dsnn.cast(dsnn.linear(input, weight)))` up to the
    order of float sums; ds-fuse-linear-cross-entropy makes it.

      %loss = dsnn.linear_cross_entropy %x, %w, %t {chunk = 256 : i64}
          : tensor<8x1024x768xf32>, tensor<50257x768xf32>, tensor<8x1024xi64> -> tensor<f32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_IntTensor:$targets, I64Attr:$chunk,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_ScalarTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $targets attr-dict `:` type($input) `,` type($weight) `,` type($targets) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_CrossEntropyPartsOp : NN_Op<"cross_entropy_parts", [Pure]> {
  let summary = "A vocabulary piece's share of the cross-entropy statistics";
  let description = [{
    `logits` `[..., V]` are columns o to o + V − 1 (`offset` o) of a larger
    vocabulary and `max` `[...]` is the whole row's max. Per position:
    `sum_exp` = Σ exp(x − max) over these columns, `picked` = the target's
    logit when the target falls in them, else 0. Summed over the ranks that
    hold the pieces, they are the whole row's. Not differentiated: the
    vocabulary-parallel `dsnn.cross_entropy` gives the logits' gradient.

      %s, %x = dsnn.cross_entropy_parts %logits, %t, %m offset %o
          : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<1xi64> -> tensor<2x8xf32>, tensor<2x8xf32>
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$targets,
                       NN_FloatTensor:$max, NN_IntTensor:$offset);
  let results = (outs NN_FloatTensor:$sum_exp, NN_FloatTensor:$picked);
  let assemblyFormat = [{
    $logits `,` $targets `,` $max `offset` $offset attr-dict `:` type($logits) `,` type($targets) `,` type($max) `,` type($offset) `->` type($sum_exp) `,` type($picked)
  }];
  let hasVerifier = 1;
}

def NN_MSELossOp : NN_Op<"mse_loss", [Pure]> {
  let summary = "Mean squared error over all elements";
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$target);
  let results = (outs NN_ScalarTensor:$result);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` type($input) `,` type($target) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structure: layers and mixture of experts
//===----------------------------------------------------------------------===//

def NN_LayerOp : NN_Op<"layer", [SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A named block of the model (a transformer block, the head…)";
  let description = [{
    Groups the ops of one model block. `layer_name` is the module path
    (`h.0`), `layer_type` the class name (`GPT2Block`) matched by pipeline
    partitioning `type:REGEX`. The body reads values from above (parameters,
    activations) and yields the layer's results.

      %h1 = dsnn.layer "h.0" ("GPT2Block") -> tensor<2x8x16xf32> {
        ...
        dsnn.yield %out : tensor<2x8x16xf32>
      }
  }];
  let arguments = (ins StrAttr:$layer_name, StrAttr:$layer_type);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $layer_name `(` $layer_type `)` (`->` type($results)^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
}

def NN_MoEOp : NN_Op<"moe", [SingleBlock, RecursiveMemoryEffects]> {
  let summary = "Top-k gated mixture of experts with an expert region";
  let description = [{
    Routes each token of `input` `[..., C]` to its top-`k` experts by
    softmax(input·gate_weightᵀ) (`gate_weight` is `[E, C]`), with per-expert
    capacity max(min_capacity, ceil(k·N/E·capacity_factor)) for N tokens
    (tokens over capacity are dropped when `drop_tokens`). The region is
    the batched computation of all experts: its arguments are the dispatched
    tokens `[E, capacity, C]` followed by one argument per `expert_params`
    operand (each with leading dim E), and it yields `[E, capacity, C]`.
    Results: the combined output (input's type) and the scalar load-balancing
    auxiliary loss.

      %y, %aux = dsnn.moe %x, %wg experts(%w1, %w2 : tensor<4x64x16xf32>, tensor<4x16x64xf32>)
          {num_experts = 4 : i64, k = 1 : i64, ...}
          : tensor<16x16xf32>, tensor<4x16xf32> -> tensor<16x16xf32>, tensor<f32> {
        ^bb0(%tok: tensor<4x8x16xf32>, %a: tensor<4x64x16xf32>, %b: tensor<4x16x64xf32>):
          ...
          dsnn.yield %out : tensor<4x8x16xf32>
      }
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gate_weight,
                       Variadic<NN_FloatTensor>:$expert_params,
                       I64Attr:$num_experts, I64Attr:$k,
                       F64Attr:$capacity_factor,
                       DefaultValuedAttr<F64Attr, "1.0">:$eval_capacity_factor,
                       DefaultValuedAttr<I64Attr, "4">:$min_capacity,
                       DefaultValuedAttr<BoolAttr, "true">:$drop_tokens);
  let results = (outs NN_FloatTensor:$result, NN_ScalarTensor:$aux_loss);
  let regions = (region SizedRegion<1>:$experts);
  let assemblyFormat = [{
    $input `,` $gate_weight (`experts` `(` $expert_params^ `:` type($expert_params) `)`)?
    attr-dict `:` type($input) `,` type($gate_weight) `->` type($result) `,`
    type($aux_loss) $experts
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The capacity: dim 1 of the expert region's token argument.
    int64_t getCapacity();
    /// Replaces the op by its routing spelled out (gate linear, softmax,
    /// moe_route, moe_gate, moe_dispatch, the expert region inlined,
    /// moe_gather, the weighted sum over k, the aux loss); see docs/models.md.
    /// `experts`, when given, builds the experts' output `[E, capacity, C]`
    /// from the dispatched tokens in place of the inlined region (expert
    /// parallelism puts its all-to-alls there).
    void expand(::mlir::RewriterBase &rewriter,
                ::llvm::function_ref<::mlir::Value(::mlir::Value)> experts =
                    nullptr);
  }];
}

// The routing of a mixture of experts, spelled out. ds-autodiff and
// ds-lower-nn-to-linalg expand a dsnn.moe into these (MoEOp::expand), so the
// gradient function shows gate -> route -> dispatch -> experts -> gather ->
// combine, where expert parallelism can put its all-to-alls.

def NN_MoERouteOp : NN_Op<"moe_route", [Pure]> {
  let summary = "Top-k expert choice and capacity slots of each token";
  let description = [{
    From the gate probabilities `probs` `[N, E]` (a softmax over experts),
    token n's choices j = 0..k-1 are its k most probable experts, best
    first (ties: the lower expert index). Slots are handed out choice by
    choice, token by token (all first choices in token order, then all
    second choices, ...: DeepSpeed's top2gating order): a choice takes the
    next free slot of its expert, or is dropped (slot -1) when the expert's
    `capacity` slots are taken. Results:

    - `experts` `[N, k]` i64: the chosen expert of each choice;
    - `slots` `[N, k]` i64: its slot in that expert's buffer, -1 if dropped;
    - `load` `[E]`: the fraction of tokens whose first choice is expert e
      (before dropping), the `ce` of the load-balancing loss.

    The decision is piecewise constant in `probs`: it has no gradient.

      %e, %s, %load = dsnn.moe_route %probs {k = 2 : i64, capacity = 8 : i64}
          : tensor<16x4xf32> -> tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xf32>
  }];
  let arguments = (ins NN_FloatTensor:$probs, I64Attr:$k, I64Attr:$capacity);
  let results = (outs NN_IntTensor:$experts, NN_IntTensor:$slots,
                      NN_FloatTensor:$load);
  let assemblyFormat = [{
    $probs attr-dict `:` type($probs) `->` type($experts) `,` type($slots) `,`
    type($load)
  }];
  let hasVerifier = 1;
}

def NN_MoEGateOp : NN_Op<"moe_gate", [Pure,
    AllTypesMatch<["experts", "slots"]>]> {
  let summary = "Combine weights of the routed choices";
  let description = [{
    `g[n, j] = probs[n, experts[n, j]]` for a kept choice (`slots[n, j] >=
    0`), 0 for a dropped one. With `normalize` (k >= 2, as DeepSpeed's
    top2gating / topkgating) the result is `g / max(Σ_j g[n, j], eps)`
    (eps: the element type's machine epsilon), otherwise `g` (top-1).

      %w = dsnn.moe_gate %probs, %e, %s {normalize}
          : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  }];
  let arguments = (ins NN_FloatTensor:$probs, NN_IntTensor:$experts,
                       NN_IntTensor:$slots, UnitAttr:$normalize);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $probs `,` $experts `,` $slots attr-dict `:` type($probs) `,`
    type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MoEDispatchOp : NN_Op<"moe_dispatch", [Pure,
    AllTypesMatch<["experts", "slots"]>]> {
  let summary = "Tokens into their experts' capacity slots";
  let description = [{
    `result[experts[n, j], slots[n, j], :] = x[n, :]` (or `x[n, j, :]` for a
    per-choice `x` `[N, k, C]`) for every kept choice; slots nobody took are
    zero. The result `[E, capacity, C]` is what the experts compute on (and
    what expert parallelism exchanges over `ep`). Its adjoint is
    dsnn.moe_gather.

      %d = dsnn.moe_dispatch %x, %e, %s
          : tensor<16x8xf32>, tensor<16x2xi64> -> tensor<4x8x8xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_IntTensor:$experts,
                       NN_IntTensor:$slots);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $experts `,` $slots attr-dict `:` type($input) `,`
    type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MoEGatherOp : NN_Op<"moe_gather", [Pure,
    AllTypesMatch<["experts", "slots"]>]> {
  let summary = "Each choice's row of the experts' output";
  let description = [{
    `result[n, j, :] = y[experts[n, j], slots[n, j], :]` for a kept choice,
    zero for a dropped one: `y` `[E, capacity, C]` back in token order
    `[N, k, C]`. The adjoint of dsnn.moe_dispatch; weighting by dsnn.moe_gate
    and summing over k is the combine.

      %g = dsnn.moe_gather %y, %e, %s
          : tensor<4x8x8xf32>, tensor<16x2xi64> -> tensor<16x2x8xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_IntTensor:$experts,
                       NN_IntTensor:$slots);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $experts `,` $slots attr-dict `:` type($input) `,`
    type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_YieldOp : NN_Op<"yield", [Pure, Terminator, ReturnLike,
                                 ParentOneOf<["LayerOp", "MoEOp"]>]> {
  let summary = "Ends a layer or expert region, yielding its results";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
}

include "dsnn/NNGradOps.td"

#endif // DSNN_OPS
