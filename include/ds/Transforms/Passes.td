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

#endif // DS_TRANSFORMS_PASSES
