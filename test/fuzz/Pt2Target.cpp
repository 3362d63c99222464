//===- Pt2Target.cpp - torch.export archive -> model contract -------------===//
#include "FuzzTargets.h"

#include "ds/Import/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

int ::ds::fuzz::fuzzPt2(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    mlir::ds::importer::registerImportDialects(*r);
    return r;
  }();
  // ds-import and ds-train read the archive by path, as here: the program
  // and then (ds-train) the weights.
  std::string path = scratchDir() + "/in.pt2";
  if (!writeFile(path, {reinterpret_cast<const char *>(data), size}))
    return 0;
  MLIRContext context(*registry);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  auto module =
      mlir::ds::importer::importExportedProgramFile(context, path, {});
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  (void)verify(**module);
  auto weights = mlir::ds::importer::readTorchWeights(path);
  if (!weights)
    llvm::consumeError(weights.takeError());
  return 0;
}
