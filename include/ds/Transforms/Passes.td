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

//===----------------------------------------------------------------------===//
// Lowering phase: dsnn -> linalg on tensors
//===----------------------------------------------------------------------===//

def LowerNNToLinalg : Pass<"ds-lower-nn-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower every dsnn op to linalg, tensor, arith and math on tensors";
  let description = [{
    The compute half of the lowering phase. `dsnn.layer` bodies are inlined;
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
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
  ];
}

#endif // DS_TRANSFORMS_PASSES
