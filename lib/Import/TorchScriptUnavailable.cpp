//===- TorchScriptUnavailable.cpp - .pt import without LibTorch -----------===//
//
// Built instead of the TorchScript importer when LibTorch is not found, so
// ds-import still links and says why it cannot read a .pt file.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"

#include "ds/Import/Import.h"

using namespace mlir;
using namespace mlir::ds::importer;

bool mlir::ds::importer::haveTorchScriptImport() { return false; }

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::ds::importer::importTorchScriptFile(MLIRContext &, llvm::StringRef path,
                                          const ImportOptions &) {
  return makeError("cannot import \"" + path +
                   "\": this ds was built without LibTorch (install "
                   "libtorch-dev and reconfigure)");
}

llvm::Expected<std::vector<NamedWeights>>
mlir::ds::importer::readTorchWeights(llvm::StringRef path) {
  return makeError("cannot read weights from \"" + path +
                   "\": this ds was built without LibTorch (install "
                   "libtorch-dev and reconfigure)");
}
