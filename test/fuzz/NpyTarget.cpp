//===- NpyTarget.cpp - NumPy .npy -----------------------------------------===//
#include "FuzzTargets.h"

#include "ds/Execution/Npy.h"

int ds::fuzz::fuzzNpy(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto tensor = mlir::ds::exec::parseNpy(bytes, "fuzz.npy");
  if (!tensor) {
    llvm::consumeError(tensor.takeError());
    return 0;
  }
  // ds-run writes what it read back out: the round trip must be exact.
  std::string again = mlir::ds::exec::serializeNpy(*tensor);
  auto reread = mlir::ds::exec::parseNpy(again, "again.npy");
  if (!reread) {
    llvm::consumeError(reread.takeError());
    __builtin_trap(); // a file ds wrote that ds cannot read
  }
  return 0;
}
