//===- NNDialect.cpp - dsnn dialect registration
//---------------------------===//
#include "dsnn/NNDialect.h"
#include "ds/Support/ShapeCheck.h"
#include "dsnn/NNOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nn;

#include "dsnn/NNDialect.cpp.inc"
#include "dsnn/NNEnums.cpp.inc"
#include "dsnn/NNInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dsnn/NNAttrs.cpp.inc"

void NNDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsnn/NNAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dsnn/NNOps.cpp.inc"
      >();
}

LogicalResult ParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, InitKind init, APFloat stdAttr,
                                StringAttr tied,
                                std::optional<int64_t> expert) {
  if (name.empty())
    return emitError() << "#dsnn.param needs a non-empty qualified name";
  double std = stdAttr.convertToDouble();
  if (std < 0)
    return emitError() << "#dsnn.param \"" << name << "\": std is "
                       << formatNumber(std) << " but must be >= 0";
  if (tied && tied.getValue().empty())
    return emitError() << "#dsnn.param \"" << name
                       << "\": tied group name is empty; omit it or name it";
  if (expert && *expert < 0)
    return emitError() << "#dsnn.param \"" << name << "\": expert index is "
                       << *expert << " but must be >= 0";
  return success();
}
