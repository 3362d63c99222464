//===- NNGradOps.td - dsnn backward ops --------------------*- tablegen -*-===//
//
// Fused backward ops that autodiff emits where building the VJP from
// primitive ops would take several memory passes (norms, attention, the
// loss) or a function the forward ops cannot express (erf'). Everything else
// differentiates into primitive dsnn ops.
//
//===----------------------------------------------------------------------===//
#ifndef DSNN_GRAD_OPS
#define DSNN_GRAD_OPS

include "dsnn/NNBase.td"
include "dsnn/NNAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class NN_ActivationGradOp<string mnemonic, string fwd>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of dsnn." # fwd # " w.r.t. its input";
  let description = [{
    dx = dy · f'(x) elementwise, from the forward input `x` and the result
    cotangent `dy`.

      %dx = dsnn.}] # mnemonic # [{ %x, %dy : tensor<8x64xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}

def NN_GeluGradOp : NN_Op<"gelu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of dsnn.gelu w.r.t. its input";
  let description = [{
    dx = dy · gelu'(x) for the same `approximate` form as the forward op.

      %dx = dsnn.gelu_grad %x, %dy approximate tanh : tensor<8x64xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad,
      DefaultValuedAttr<NN_GeluApproximation,
                        "::mlir::ds::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad (`approximate` $approximate^)? attr-dict `:` type($result)
  }];
}

def NN_ReluGradOp : NN_ActivationGradOp<"relu_grad", "relu">;
def NN_SiluGradOp : NN_ActivationGradOp<"silu_grad", "silu">;

class NN_SoftmaxGradLike<string mnemonic, string fwd, string formula>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of dsnn." # fwd # " from its output";
  let description = [{
    Takes the forward *output* `y` (not the input) and the cotangent `dy`:
    }] # formula # [{ along `dim`.

      %dx = dsnn.}] # mnemonic # [{ %y, %dy dim -1 : tensor<2x4x8x8xf32>
  }];
  let arguments = (ins NN_FloatTensor:$output, NN_FloatTensor:$grad,
                       I64Attr:$dim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_SoftmaxGradOp : NN_SoftmaxGradLike<"softmax_grad", "softmax",
    "dx = y · (dy − Σ dy·y)">;
def NN_LogSoftmaxGradOp : NN_SoftmaxGradLike<"log_softmax_grad", "log_softmax",
    "dx = dy − exp(y) · Σ dy">;

def NN_LayerNormGradOp : NN_Op<"layer_norm_grad", [Pure,
    AllTypesMatch<["input", "grad", "input_grad"]>,
    AllTypesMatch<["weight", "weight_grad", "bias_grad"]>]> {
  let summary = "Gradients of dsnn.layer_norm w.r.t. input, weight and bias";
  let description = [{
    Recomputes the row statistics from `input` (cheaper than keeping them)
    and returns (dx, dweight, dbias); dweight and dbias are summed over all
    leading dims.

      %dx, %dw, %db = dsnn.layer_norm_grad %x, %w, %dy eps 1.0e-05
          : tensor<2x8x16xf32>, tensor<16xf32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$weight_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad `eps` $epsilon attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def NN_RMSNormGradOp : NN_Op<"rms_norm_grad", [Pure,
    AllTypesMatch<["input", "grad", "input_grad"]>,
    AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Gradients of dsnn.rms_norm w.r.t. input and weight";
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad `eps` $epsilon attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def NN_AttentionGradOp : NN_Op<"attention_grad", [Pure,
    AllTypesMatch<["query", "query_grad"]>, AllTypesMatch<["key", "key_grad"]>,
    AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "Gradients of dsnn.attention w.r.t. query, key and value";
  let description = [{
    Recomputes the attention probabilities from `query` and `key` with the
    forward op's `causal` and `scale`, then returns (dq, dk, dv) for the
    output cotangent `grad` `[..., Tq, Dv]`.

      %dq, %dk, %dv = dsnn.attention_grad %q, %k, %v, %do {causal}
          : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value, NN_FloatTensor:$grad,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale);
  let results = (outs NN_FloatTensor:$query_grad, NN_FloatTensor:$key_grad,
                      NN_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def NN_CrossEntropyGradOp : NN_Op<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>, AttrSizedOperandSegments]> {
  let summary = "Gradient of dsnn.cross_entropy w.r.t. the logits";
  let description = [{
    dlogits = dloss · (softmax(logits) − onehot(target)) / N for the N
    positions whose target is not `ignore_index` (rows with the ignored
    target get zero).

      %dl = dsnn.cross_entropy_grad %logits, %t, %dloss
          : tensor<2x8x50xf32>, tensor<2x8xi64>, tensor<f32>

    Vocabulary-parallel form: `logits` are columns o to o + V − 1
    (`offset` o) and `stats` the whole row's max and Σ exp(x − max); the
    result is this piece of the whole gradient, softmax − onehot over its
    columns.

      %dl = dsnn.cross_entropy_grad %logits, %t, %dloss stats %m, %s offset %o
          : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<f32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64>
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$targets,
                       NN_ScalarTensor:$grad,
                       Optional<NN_FloatTensor>:$max,
                       Optional<NN_FloatTensor>:$sum_exp,
                       Optional<NN_IntTensor>:$offset,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad (`stats` $max^ `,` $sum_exp `offset` $offset)? attr-dict `:` type($logits) `,`
    type($targets) `,` type($grad) (`,` type($max)^ `,` type($sum_exp) `,` type($offset))?
  }];
  let hasVerifier = 1;
}

def NN_LinearCrossEntropyGradOp : NN_Op<"linear_cross_entropy_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Gradients of dsnn.linear_cross_entropy w.r.t. input and weight";
  let description = [{
    Per chunk of `chunk` rows: recomputes the logits, dlogits = `grad` ·
    (softmax − onehot(target)) / N (zero on ignored rows), then the chunk's
    rows of dinput = dlogits·weight and dweight += dlogitsᵀ·input, summed
    over the chunks in order.

      %dx, %dw = dsnn.linear_cross_entropy_grad %x, %w, %t, %dloss {chunk = 256 : i64}
          : tensor<8x1024x768xf32>, tensor<50257x768xf32>, tensor<8x1024xi64>, tensor<f32>
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_IntTensor:$targets, NN_ScalarTensor:$grad,
                       I64Attr:$chunk,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $targets `,` $grad attr-dict `:` type($input) `,`
    type($weight) `,` type($targets) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def NN_EmbeddingGradOp : NN_Op<"embedding_grad", [Pure]> {
  let summary = "Gradient of dsnn.embedding w.r.t. the table (scatter-add)";
  let description = [{
    dtable[v] = Σ over positions p with indices[p] = v of grad[p]; the result
    type is the table's `[V, C]`.

      %dw = dsnn.embedding_grad %ids, %dy : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<50x16xf32>

    With `offset` o (as on `dsnn.embedding`) the result holds rows o to
    o + V − 1, and positions whose index falls outside add nothing.
  }];
  let arguments = (ins NN_IntTensor:$indices, NN_FloatTensor:$grad,
                       Optional<NN_IntTensor>:$offset);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad (`offset` $offset^)? attr-dict `:` type($indices) `,` type($grad) (`,` type($offset)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MoEGateGradOp : NN_Op<"moe_gate_grad", [Pure,
    AllTypesMatch<["probs", "result"]>, AllTypesMatch<["experts", "slots"]>]> {
  let summary = "Gradient of dsnn.moe_gate w.r.t. the gate probabilities";
  let description = [{
    From the forward operands and the cotangent `grad` `[N, k]` of the
    combine weights: with `normalize`, S = Σ_j g_j, S' = max(S, eps) and
    dg_j = grad_j / S' − [S >= eps] · Σ_i grad_i · g_i / S'² (the clamp's
    gradient as torch.clamp has it), else dg_j = grad_j; then
    `result[n, e] = Σ over kept choices j with experts[n, j] = e of dg_j`.

      %dp = dsnn.moe_gate_grad %probs, %e, %s, %dw {normalize}
          : tensor<16x4xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  }];
  let arguments = (ins NN_FloatTensor:$probs, NN_IntTensor:$experts,
                       NN_IntTensor:$slots, NN_FloatTensor:$grad,
                       UnitAttr:$normalize);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $probs `,` $experts `,` $slots `,` $grad attr-dict `:` type($probs) `,`
    type($experts) `,` type($grad)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$probs,
      "::mlir::Value":$experts, "::mlir::Value":$slots, "::mlir::Value":$grad,
      "bool":$normalize), [{
    build($_builder, $_state, probs.getType(), probs, experts, slots, grad,
          normalize);
  }]>];
  let hasVerifier = 1;
}

#endif // DSNN_GRAD_OPS
