//===- CInterface.h - names of the C-interface entry points -----*- C++ -*-===//
//
// FuncToLLVM gives each function marked llvm.emit_c_interface a wrapper
// named with this prefix; the lowering moves the body into it and the JIT,
// ds-compile and the runner look entry points up by it. Header-only, so the
// run side (no MLIR) shares it.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_CINTERFACE_H
#define DS_SUPPORT_CINTERFACE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::ds {

/// The prefix of an entry point's C wrapper.
inline constexpr llvm::StringLiteral kCWrapperPrefix = "_mlir_ciface_";

/// The C wrapper of function `name`.
inline std::string cWrapperName(llvm::StringRef name) {
  return (kCWrapperPrefix + name).str();
}

} // namespace mlir::ds

#endif // DS_SUPPORT_CINTERFACE_H
