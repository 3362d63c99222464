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

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::ds::exec {

llvm::Expected<Tensor> readNpy(llvm::StringRef path);
llvm::Error writeNpy(llvm::StringRef path, const Tensor &tensor);

/// What a .npy header says: the dtype as NumPy spells it without the byte
/// order ("f4", "u2", "i8"), its item size in bytes, the shape, and where
/// the data starts. For readers that map the data rather than copy it.
struct NpyHeader {
  std::string kind;
  unsigned itemSize = 0;
  llvm::SmallVector<int64_t, 4> shape;
  size_t dataOffset = 0;
};
llvm::Expected<NpyHeader> parseNpyHeader(llvm::StringRef bytes,
                                         llvm::StringRef what);

/// Parses a whole .npy image already in memory.
llvm::Expected<Tensor> parseNpy(llvm::StringRef bytes, llvm::StringRef what);
std::string serializeNpy(const Tensor &tensor);

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_NPY_H
