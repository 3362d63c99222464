//===- ExportedProgramReader.h - torch.export archives ----------*- C++ -*-===//
//
// Reads a program saved with torch.export.save (a .pt2 zip archive holding
// the ExportedProgram serialized as JSON by torch/_export/serde, and the raw
// weights) into the plain structs of TorchGraph.h, which the same mapping as
// TorchScript's turns into dsnn. No Python and no LibTorch: the archive and
// its JSON are read directly.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_IMPORT_EXPORTEDPROGRAMREADER_H
#define DS_LIB_IMPORT_EXPORTEDPROGRAMREADER_H

#include "TorchGraph.h"

namespace mlir::ds::importer::pt2 {

/// The major version of torch/_export/serde/schema.py's SCHEMA_VERSION that
/// this reader understands; archives of any other major are refused.
inline constexpr int64_t kSchemaMajor = 8;

/// The program's graph: parameters named by the graph signature, buffers and
/// constants as constant values, user inputs as batch arguments, and every
/// node with its positional ATen arguments (defaults filled in). A program
/// exported with dynamic_shapes gets static sizes: dim 0 of the batch
/// inputs is `microBatch` and dim 1 `seqLen` where those dims are symbols
/// (unset: the export's example sizes), within its range_constraints.
/// Errors name no path; the caller prefixes it.
llvm::Expected<ts::Graph> readExportedProgram(const std::string &path,
                                              std::optional<int64_t> microBatch,
                                              std::optional<int64_t> seqLen);

/// The parameters' values (one per tensor, under its first name), as f32.
llvm::Expected<std::vector<ts::Weights>>
readExportedWeights(const std::string &path);

} // namespace mlir::ds::importer::pt2

#endif // DS_LIB_IMPORT_EXPORTEDPROGRAMREADER_H
