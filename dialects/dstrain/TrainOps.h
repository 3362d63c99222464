//===- TrainOps.h - dstrain attributes and ops -------------------*- C++
//-*-===//
#ifndef DSTRAIN_TRAINOPS_H
#define DSTRAIN_TRAINOPS_H

#include "dstrain/TrainDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <charconv>
#include <string>

#include "dstrain/TrainEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dstrain/TrainAttrs.h.inc"

#define GET_OP_CLASSES
#include "dstrain/TrainOps.h.inc"

namespace mlir::ds::train {
/// A hyper-parameter as a user writes it ("20", "0.001", "1e-08"): the
/// shortest text that reads back to the same double.
inline std::string formatHyperParam(double value) {
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}
} // namespace mlir::ds::train

#endif // DSTRAIN_TRAINOPS_H
