//===- LoadModel.cpp - A model file as the model contract -----------------===//
#include "ds/Driver/LoadModel.h"
#include "ds/Import/Import.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using llvm::createStringError;

namespace ds::driver {

llvm::Expected<OwningOpRef<ModuleOp>>
loadModel(MLIRContext &ctx, llvm::StringRef modelPath,
          const ::ds::config::Config &config, std::optional<int64_t> seqLen) {
  std::string path = modelPath.str();
  llvm::StringRef ext = llvm::sys::path::extension(path);
  mlir::ds::importer::ImportOptions importOptions;
  importOptions.microBatch = config.trainMicroBatchSizePerGpu;
  importOptions.config = &config;
  importOptions.seqLen = seqLen;
  if (ext == ".json")
    return mlir::ds::importer::importSpecFile(ctx, path, importOptions);
  // A .pt2 exported with a dynamic sequence dim takes it (and one with a
  // static dim says so); TorchScript and .mlir shapes are their own.
  if (seqLen && ext != ".pt2")
    return createStringError("%s: --seq-len sets the sequence length of a "
                             ".json spec or of a .pt2 exported with a "
                             "dynamic sequence dim; this model's batch "
                             "shapes are its own (export or trace it at the "
                             "length you want)",
                             path.c_str());
  if (ext == ".pt")
    return mlir::ds::importer::importTorchScriptFile(ctx, path, importOptions);
  if (ext == ".pt2")
    return mlir::ds::importer::importExportedProgramFile(ctx, path,
                                                         importOptions);
  if (ext != ".mlir")
    return createStringError("%s: unknown model format '%s'; give a .json "
                             "model spec, a .mlir model contract, a "
                             "TorchScript .pt or a torch.export .pt2",
                             path.c_str(), ext.str().c_str());
  std::string diag;
  llvm::raw_string_ostream diagOs(diag);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, diagOs);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(path, sourceMgr, &ctx);
  if (!module)
    return createStringError(diag.empty() ? path + ": cannot parse" : diag);
  return module;
}

} // namespace ds::driver
