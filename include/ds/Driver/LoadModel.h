//===- LoadModel.h - A model file as the model contract ---------*- C++ -*-===//
//
// The model ds-train is given, by extension: a .json spec, a TorchScript
// .pt, or a .mlir model contract, imported for the config's micro-batch.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_LOADMODEL_H
#define DS_DRIVER_LOADMODEL_H

#include "ds/Config/Config.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace ds::driver {

/// Imports (or parses) the model at `path`; an unknown extension or a file
/// that does not import is one error naming the file. `seqLen` sets a
/// .json spec's sequence length (its positions otherwise); other formats
/// have theirs and refuse it.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
loadModel(mlir::MLIRContext &context, llvm::StringRef path,
          const ::ds::config::Config &config,
          std::optional<int64_t> seqLen = std::nullopt);

} // namespace ds::driver

#endif // DS_DRIVER_LOADMODEL_H
