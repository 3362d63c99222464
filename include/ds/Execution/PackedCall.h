//===- PackedCall.h - Call compiled functions on host Tensors ---*- C++ -*-===//
//
// The calling convention of every compiled entry point, JIT'd or loaded
// from an artifact, without MLIR: a public function `f` is called through
// its packed C wrapper `_mlir__mlir_ciface_f(void **args)`, where args[i]
// points at argument i (for a tensor: at a pointer to a row-major memref
// descriptor {allocated, aligned, offset, sizes[rank], strides[rank]} over
// the Tensor's data, never copied). Tensor results are trailing
// out-parameters the caller allocates; a single scalar result is stored
// through the last pointer. A runtime error inside the call
// (dsrt_last_error) becomes the returned llvm::Error.
//
// Callers pass values in their own order, one tensor each; an argument or
// result marked ds.stack (CInterface.h, kStackAttrName) takes K of them as
// one tensor<K x T>. When the K tensors lie back to back in memory it is a
// view over them; otherwise they are copied into (and, for results, out
// of) a staging buffer around the call.
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_PACKEDCALL_H
#define DS_EXECUTION_PACKEDCALL_H

#include "ds/Execution/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::ds::exec {

/// One argument or result of a public function.
struct ValueInfo {
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> shape; ///< kDynamicDim for ?
  bool isTensor = true;                ///< false: a scalar passed by value
  /// ds.stack: the caller positions this value takes, slice k of its
  /// leading dimension being caller value stack[k]. Empty: one caller
  /// value, at the next position no stack takes.
  std::vector<int64_t> stack;

  /// What the caller passes for it: one slice when stacked.
  ValueInfo callerValue() const;
};

/// Where a function's values meet the caller's: value v takes the caller
/// positions positions[v] (its stack, or the one position left to it), of
/// `arity` caller values in all.
struct CallerLayout {
  std::vector<llvm::SmallVector<int64_t, 1>> positions;
  int64_t arity = 0;
};

/// The layout of `values` (a function's inputs or results), or an error
/// naming function `fn`'s value (`what` i) whose stack is not a tensor with
/// a leading dimension of its length, or whose positions repeat or fall
/// outside the caller's arity.
llvm::Expected<CallerLayout> callerLayout(llvm::ArrayRef<ValueInfo> values,
                                          llvm::StringRef fn,
                                          llvm::StringRef what);

struct FunctionSignature {
  std::string name;
  std::vector<ValueInfo> inputs, results; ///< the function's own
  int64_t workspaceBytes = 0;             ///< the planned arena (0: none)

  /// The values callers pass (receive), in their order: inputs (results)
  /// with every stack split into its slices. The signature's stacks must
  /// be valid (callerLayout).
  std::vector<ValueInfo> callerInputs() const;
  std::vector<ValueInfo> callerResults() const;
};

/// `void _mlir__mlir_ciface_<name>(void **args)`.
using PackedEntry = void (*)(void **);

/// The symbol of `name`'s packed C wrapper.
std::string packedEntrySymbol(llvm::StringRef name);

/// A loaded module's workspace entry points (ds-workspaces-at-load).
using WorkspacesInit = int64_t (*)();
using WorkspacesRelease = void (*)();

/// Calls `init`, which allocates the workspace of the code loaded from
/// `what`; the error names the size libdsrt could not allocate.
llvm::Error initWorkspaces(WorkspacesInit init, llvm::StringRef what);

/// Checks `inputs` and `outputs` (in the caller's order) against
/// `signature`, then calls `entry`.
llvm::Error callPacked(PackedEntry entry, const FunctionSignature &signature,
                       llvm::ArrayRef<Tensor> inputs,
                       llvm::ArrayRef<Tensor> outputs);

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_PACKEDCALL_H
