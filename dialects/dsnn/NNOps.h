//===- NNOps.h - dsnn attributes, interfaces and ops -------------*- C++
//-*-===//
#ifndef DSNN_NNOPS_H
#define DSNN_NNOPS_H

#include "dsnn/NNDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dsnn/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dsnn/NNAttrs.h.inc"

#include "dsnn/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dsnn/NNOps.h.inc"

namespace mlir::ds::nn {
/// Name of the function-argument attribute that marks parameters.
inline constexpr llvm::StringLiteral kParamAttrName = "dsnn.param";
/// On a layer that ds-stack-layers made the body of an `scf.for`: the names
/// of the layers it runs, by iteration (the timeline names each span).
inline constexpr llvm::StringLiteral kIterationNamesAttrName =
    "dsnn.iteration_names";
} // namespace mlir::ds::nn

#endif // DSNN_NNOPS_H
