//===- DTypeOf.cpp - the DType of an MLIR element type --------------------===//
//
// Apart from Tensor.cpp, which the artifact runner links without MLIR.
//
//===----------------------------------------------------------------------===//
#include "ds/Execution/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir::ds::exec;

static_assert(kDynamicDim == mlir::ShapedType::kDynamic,
              "Tensor.h's dynamic size is MLIR's");

std::optional<DType> mlir::ds::exec::dtypeOf(mlir::Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isIndex())
    return DType::I64;
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(type)) {
    switch (i.getWidth()) {
    case 1:
      return DType::I1;
    case 8:
      return DType::I8;
    case 16:
      return DType::I16;
    case 32:
      return DType::I32;
    case 64:
      return DType::I64;
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}
