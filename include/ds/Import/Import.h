//===- Import.h - Model spec and TorchScript import -------------*- C++ -*-===//
//
// The importers turn a model description into the model contract: one
// `func.func @forward(params..., batch...) -> tensor<f32>` in dsnn ops (see
// docs/models.md and the contract in docs/architecture.md). Every entry point
// runs the contract verifier on its result, so a module that comes back is
// valid; anything wrong with the input comes back as one error message.
//
//===----------------------------------------------------------------------===//
#ifndef DS_IMPORT_IMPORT_H
#define DS_IMPORT_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds::config {
struct Config;
} // namespace ds::config

namespace mlir::ds::importer {

/// Module attribute holding the seed parameters are drawn from at run time.
inline constexpr llvm::StringLiteral kInitSeedAttrName = "dsnn.init_seed";
/// Argument attribute naming a batch argument ("input_ids", "targets", ...).
inline constexpr llvm::StringLiteral kBatchAttrName = "dsnn.batch";
/// Unit attribute on the `arith.constant` holding the MoE aux-loss
/// coefficient, so a driver can find (and replace) it.
inline constexpr llvm::StringLiteral kAuxLossCoefAttrName =
    "dsnn.aux_loss_coef";

/// What the model description does not fix: the batch shape and the
/// training-time MoE settings.
struct ImportOptions {
  /// Micro-batch size B (the leading dim of every batch argument). For a
  /// TorchScript model, unset keeps the batch dim of the recorded inputs.
  std::optional<int64_t> microBatch;
  /// Sequence length T of a GPT spec; unset means n_positions.
  std::optional<int64_t> seqLen;
  /// The resolved ds_config.json, or null. Its `moe` section supplies the
  /// aux-loss coefficient and must agree with the spec's experts.
  const ::ds::config::Config *config = nullptr;
  /// TorchScript only: the batch argument types ("4x64xi64"), overriding
  /// those recorded in the .pt file.
  std::vector<std::string> inputTypes;
};

/// The micro-batch size a spec import uses when none is given.
inline constexpr int64_t kDefaultMicroBatch = 4;

/// Imports a model spec (JSON text; `fileName` only names it in errors).
llvm::Expected<OwningOpRef<ModuleOp>> importSpec(MLIRContext &context,
                                                 llvm::StringRef jsonText,
                                                 llvm::StringRef fileName,
                                                 const ImportOptions &options);

/// Reads and imports a model spec file.
llvm::Expected<OwningOpRef<ModuleOp>>
importSpecFile(MLIRContext &context, llvm::StringRef path,
               const ImportOptions &options);

/// True when ds was built with LibTorch and can read .pt files.
bool haveTorchScriptImport();

/// One parameter's values, in f32.
struct NamedWeights {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Imports a program saved with torch.export.save (a .pt2 archive, read
/// without Python or LibTorch): its forward must return the loss. The
/// shapes are the exported ones; a micro-batch that differs is an error.
llvm::Expected<OwningOpRef<ModuleOp>>
importExportedProgramFile(MLIRContext &context, llvm::StringRef path,
                          const ImportOptions &options);

/// Imports a TorchScript module saved with torch.jit.save (traced or
/// scripted): its inlined `forward` must return the loss.
llvm::Expected<OwningOpRef<ModuleOp>>
importTorchScriptFile(MLIRContext &context, llvm::StringRef path,
                      const ImportOptions &options);

/// The parameter values of a TorchScript module (named as the importer names
/// its parameters: the first of named_parameters() per tensor), of a
/// state_dict saved with torch.save (floating tensors, by key), or of a .pt2
/// archive (named by its graph signature, the first name per tensor).
llvm::Expected<std::vector<NamedWeights>>
readTorchWeights(llvm::StringRef path);

/// Registers the dialects an imported module uses.
void registerImportDialects(DialectRegistry &registry);

} // namespace mlir::ds::importer

#endif // DS_IMPORT_IMPORT_H
