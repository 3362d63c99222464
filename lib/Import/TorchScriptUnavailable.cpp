//===- TorchScriptUnavailable.cpp - .pt import without LibTorch -----------===//
//
// Built instead of TorchScriptLoader.cpp when LibTorch is not found, so
// ds-import still links (and reads .pt2 archives) and says why it cannot
// read a .pt file.
//
//===----------------------------------------------------------------------===//
#include "TorchGraph.h"

using namespace mlir::ds::importer;

bool ts::haveLibTorch() { return false; }

static llvm::Error noLibTorch() {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "this ds was built without LibTorch (install libtorch-dev and "
      "reconfigure)");
}

llvm::Expected<ts::Graph> ts::loadTorchScript(const std::string &,
                                              std::vector<InputType>,
                                              std::optional<int64_t>) {
  return noLibTorch();
}

llvm::Expected<std::vector<ts::Weights>>
ts::loadTorchWeights(const std::string &) {
  return noLibTorch();
}
