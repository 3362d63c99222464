//===- TorchGraphImport.h - ts::Graph -> model contract ---------*- C++ -*-===//
//
// The one mapping from ATen ops to dsnn, shared by the TorchScript importer
// (a graph evaluated by LibTorch) and the torch.export importer (a graph read
// from a .pt2 archive): both hand it the plain structs of TorchGraph.h.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_IMPORT_TORCHGRAPHIMPORT_H
#define DS_LIB_IMPORT_TORCHGRAPHIMPORT_H

#include "TorchGraph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::ds::importer::ts {

/// Builds @forward from `graph`; `path` names the file in errors and
/// locations.
llvm::Expected<OwningOpRef<ModuleOp>> importTorchGraph(MLIRContext &context,
                                                       const Graph &graph,
                                                       llvm::StringRef path);

} // namespace mlir::ds::importer::ts

#endif // DS_LIB_IMPORT_TORCHGRAPHIMPORT_H
