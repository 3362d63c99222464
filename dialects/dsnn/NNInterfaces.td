//===- NNInterfaces.td - dsnn op interfaces ----------------*- tablegen -*-===//
#ifndef DSNN_INTERFACES
#define DSNN_INTERFACES

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::ds::nn";
  let description = [{
    An op that reverse-mode autodiff (`ds-autodiff`) can differentiate.
    `buildVJP` emits, at the builder's insertion point, the vector-Jacobian
    product of the op: given one cotangent per result (a null Value where a
    result does not reach the loss) it appends one cotangent per operand
    (null where the operand has no gradient, e.g. integer token ids).
    The op's own operands and results may be used: autodiff keeps them live.
  }];
  let methods = [
    InterfaceMethod<
      "Whether operand `index` carries a gradient (float tensors do by default).",
      "bool", "isOperandDifferentiable", (ins "unsigned":$index), [{}],
      [{
        return ::mlir::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf($_op->getOperand(index).getType()));
      }]>,
    InterfaceMethod<
      "Emits the VJP; appends exactly one (possibly null) Value per operand.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // DSNN_INTERFACES
