//===- ModelSpecTarget.cpp - model spec JSON -> model contract ------------===//
#include "FuzzTargets.h"

#include "ds/Config/Config.h"
#include "ds/Import/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

int ::ds::fuzz::fuzzModelSpec(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    mlir::ds::importer::registerImportDialects(*r);
    return r;
  }();
  // A fresh context per input: uniqued types and attributes do not pile up.
  MLIRContext context(*registry);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  mlir::ds::importer::ImportOptions options;
  options.seqLen = 8; // a GPT spec's n_positions may be huge: the import
                      // must not build what it would not run
  auto module =
      mlir::ds::importer::importSpec(context, text, "fuzz.json", options);
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  (void)verify(**module);
  return 0;
}
