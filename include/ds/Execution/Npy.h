//===- Npy.h - NumPy .npy files <-> Tensor ---------------------*- C++ -*-===//
//
// The .npy format (format versions 1.0-3.0, little-endian, C order) is what
// ds-run reads and writes: numpy.save/numpy.load on the other side, no
// dependency here. bf16 has no NumPy dtype and is refused.
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_NPY_H
#define DS_EXECUTION_NPY_H

#include "ds/Execution/Tensor.h"

#include "llvm/Support/Error.h"

namespace mlir::ds::exec {

llvm::Expected<Tensor> readNpy(llvm::StringRef path);
llvm::Error writeNpy(llvm::StringRef path, const Tensor &tensor);

/// Parses a whole .npy image already in memory.
llvm::Expected<Tensor> parseNpy(llvm::StringRef bytes, llvm::StringRef what);
std::string serializeNpy(const Tensor &tensor);

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_NPY_H
