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

#endif // DS_TRANSFORMS_PASSES
