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
};

struct FunctionSignature {
  std::string name;
  std::vector<ValueInfo> inputs, results;
  int64_t workspaceBytes = 0; ///< the planned arena (0: none)
};

/// `void _mlir__mlir_ciface_<name>(void **args)`.
using PackedEntry = void (*)(void **);

/// The symbol of `name`'s packed C wrapper.
std::string packedEntrySymbol(llvm::StringRef name);

/// Checks `inputs` and `outputs` against `signature`, then calls `entry`.
llvm::Error callPacked(PackedEntry entry, const FunctionSignature &signature,
                       llvm::ArrayRef<Tensor> inputs,
                       llvm::ArrayRef<Tensor> outputs);

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_PACKEDCALL_H
