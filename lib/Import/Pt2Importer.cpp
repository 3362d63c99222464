//===- Pt2Importer.cpp - torch.export archive -> model contract -----------===//
//
// A .pt2 archive's graph (ExportedProgramReader.h) goes through the same
// ATen -> dsnn mapping as an evaluated TorchScript forward.
//
//===----------------------------------------------------------------------===//
#include "ExportedProgramReader.h"
#include "ModelBuilder.h"
#include "TorchGraphImport.h"

#include "ds/Import/Import.h"

#include "llvm/Support/FileSystem.h"

using namespace mlir;
using namespace mlir::ds::importer;

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::ds::importer::importExportedProgramFile(MLIRContext &context,
                                              llvm::StringRef path,
                                              const ImportOptions &options) {
  if (!options.inputTypes.empty())
    return makeError(path + ": --inputs applies to TorchScript files; a .pt2 "
                            "program has the shapes it was exported with");
  if (!llvm::sys::fs::exists(path))
    return makeError("cannot read torch.export archive \"" + path +
                     "\": No such file or directory");
  auto graph =
      pt2::readExportedProgram(path.str(), options.microBatch, options.seqLen);
  if (!graph)
    return makeError(path + ": " + llvm::toString(graph.takeError()));
  return ts::importTorchGraph(context, *graph, path);
}
