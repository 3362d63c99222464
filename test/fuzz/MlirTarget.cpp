//===- MlirTarget.cpp - MLIR text -> parse, verify, training pipeline -----===//
#include "FuzzTargets.h"

#include "ds/Config/Config.h"
#include "ds/Import/Import.h"
#include "ds/Pipelines/Pipelines.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistDialect.h"
#include "dsnn/NNDialect.h"
#include "dstrain/TrainDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

int ::ds::fuzz::fuzzMlir(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    // What the training pipeline needs (registerAllDSDialects also brings
    // the lowering's bufferization models, which it does not).
    auto *r = new DialectRegistry();
    r->insert<mlir::ds::nn::NNDialect, mlir::ds::dist::DistDialect,
              mlir::ds::train::TrainDialect>();
    mlir::ds::registerDifferentiableOpInterfaceExternalModels(*r);
    mlir::ds::importer::registerImportDialects(*r);
    return r;
  }();
  // The smallest config the pipeline accepts: AdamW, one rank.
  static const ::ds::config::Config *config = [] {
    auto c = ::ds::config::parseConfig(
        R"({"train_batch_size": 2, "optimizer": {"type": "AdamW"}})", {1});
    if (!c) {
      llvm::consumeError(c.takeError());
      return (const ::ds::config::Config *)nullptr;
    }
    return (const ::ds::config::Config *)new ::ds::config::Config(*c);
  }();
  // What ds-train does with a .mlir model: parse, then the training
  // pipeline (whose first pass verifies the model contract).
  MLIRContext context(*registry);
  context.allowUnregisteredDialects(false);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  // MLIR's lexer stops at a NUL, which a file read by ds-train always has
  // after its last byte (MemoryBuffer); libFuzzer's input has none.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module || failed(verify(*module)) || !config)
    return 0;
  PassManager pm(&context);
  if (llvm::Error err = mlir::ds::buildTrainingPipeline(pm, *config)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  (void)pm.run(*module);
  return 0;
}
