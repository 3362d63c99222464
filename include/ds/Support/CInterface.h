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

/// `ds.stack = array<i64: i0, ..., iK-1>` on an entry point's argument (or
/// result) of type tensor<K x T>: it stands for the caller's inputs (or
/// outputs) number i0..iK-1, each a T, slice k of the leading dimension
/// being caller value ik. Values without it take the remaining caller
/// positions in increasing order, so the caller passes (#unstacked +
/// sum of the K's) values and never sees the stacks (PackedCall.h).
inline constexpr llvm::StringLiteral kStackAttrName = "ds.stack";

/// What ds-workspaces-at-load adds to a module with planned arenas: the
/// loader calls `int64_t init(void)` (the workspace's bytes, or -1 with
/// dsrt_last_error() set) before any entry point, `void release(void)` when
/// it unloads the code.
inline constexpr llvm::StringLiteral kWorkspacesInitSymbol =
    "__ds_workspaces_init";
inline constexpr llvm::StringLiteral kWorkspacesReleaseSymbol =
    "__ds_workspaces_release";

} // namespace mlir::ds

#endif // DS_SUPPORT_CINTERFACE_H
