//===- DistOps.h - dsdist attributes, types and ops --------------*- C++
//-*-===//
#ifndef DSDIST_DISTOPS_H
#define DSDIST_DISTOPS_H

#include "dsdist/DistDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dsdist/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dsdist/DistAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dsdist/DistTypes.h.inc"

#define GET_OP_CLASSES
#include "dsdist/DistOps.h.inc"

namespace mlir::ds::dist {

/// The grid on the nearest ancestor of `op` carrying a `dsdist.grid`
/// attribute, or null when there is none.
GridAttr lookupGrid(Operation *op);

/// Number of ranks in the group spanned by `axes` (a list of axis-name
/// strings) on the grid enclosing `op`; nullopt when there is no grid or an
/// axis is not on it.
std::optional<int64_t> getGroupSize(Operation *op, ArrayAttr axes);

} // namespace mlir::ds::dist

#endif // DSDIST_DISTOPS_H
