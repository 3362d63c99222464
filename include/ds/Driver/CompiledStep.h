//===- CompiledStep.h - A compiled training step and its manifest -*- C++
//-*-===//
//
// What compiling a model + config yields: one callable @train_step and the
// manifest the run side needs to feed it (argument plan, batch arguments,
// result layout, grid, start-up hash). The manifest is plain C++ so that it
// can be written out next to compiled code and read by a process without
// the compiler; only the code that builds the step knows about the IR.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_COMPILEDSTEP_H
#define DS_DRIVER_COMPILEDSTEP_H

#include "ds/Driver/ParamInit.h"
#include "ds/Execution/PackedCall.h"
#include "ds/Execution/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ds::config {
struct Config;
} // namespace ds::config

namespace ds::driver {

using DType = mlir::ds::exec::DType;
using Tensor = mlir::ds::exec::Tensor;

int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// What the step's first value of a step-wide or optimizer state is.
struct StateInit {
  enum Kind {
    Zeros, ///< no init given: the buffer stays zero
    Float,
    Int,
    Other ///< a value of no element type ds-train can fill (refused)
  } kind = Zeros;
  double floatValue = 0;
  int64_t intValue = 0;
};

/// What ds-train must feed one @train_step argument.
struct ArgSpec {
  enum Kind { Param, State, Step, Batch } kind = Batch;
  std::string name; ///< parameter / batch name; state: "<param>.<kind>"
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< the argument as this rank holds it
  /// Param/State split over the dp group: the whole tensor's shape (the
  /// argument itself is this rank's flat, zero-padded chunk).
  std::optional<std::vector<int64_t>> fullShape;
  /// Param: an expert parameter cut by expert parallelism over this many
  /// ranks (dsdist.experts): `shape` is the whole tensor's with the leading
  /// (expert) dim divided, and rank r % expertShards holds slice r.
  int64_t expertShards = 0;
  /// Param: a piece of a tensor-parallel cut (dsdist.tensor_parallel) over
  /// this many ranks (0: whole); group rank r % tpSize holds piece r of
  /// each of tpBlocks blocks of dim tpDim of the whole tpShape.
  int64_t tpSize = 0, tpDim = 0, tpBlocks = 1;
  std::vector<int64_t> tpShape;
  /// Param: how its first value is drawn.
  InitKind init = InitKind::Zeros;
  double initStd = 0;
  /// State: the parameter it belongs to ("" for step-wide state) and its
  /// kind ("exp_avg", "master", "loss_scale", ...).
  std::string owner, stateKind;
  StateInit stateInit;

  bool isModelState() const { return kind == Param || kind == State; }
  /// The whole tensor: fullShape when sharded, else shape.
  llvm::ArrayRef<int64_t> wholeShape() const {
    if (fullShape)
      return *fullShape;
    return shape;
  }
};

/// One result of @train_step: the next value of argument `updates`, or a
/// scalar the step reports (`updates` = -1).
struct ResultSpec {
  std::string name;
  int64_t updates = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

struct StepManifest {
  std::vector<ArgSpec> args;
  std::vector<size_t> batchArgs; ///< indices into args, in argument order
  /// The updated parameters and states in argument order, then loss, lr
  /// and grad_norm.
  std::vector<ResultSpec> results;
  int64_t gradientAccumulationSteps = 1;
  std::vector<int64_t> gridSizes; ///< empty: the step has no device grid
  std::string gridAxes;           ///< the grid as its axes print, for errors
  /// A hash of the step and the resolved config: ranks compare it.
  uint64_t startupHash = 0;
  std::optional<uint64_t> initSeed; ///< the model's own init seed
  /// Classes of the model's cross-entropy (last dim of its logits), 0 if
  /// it has none: synthetic class labels are drawn below it.
  int64_t crossEntropyClasses = 0;
  /// Rows of the table the model's token ids (a batch argument) index, 0
  /// if no dsnn.embedding reads them. From the whole model, so every
  /// pipeline stage knows it, the first stage's (no loss) included.
  int64_t tokenVocab = 0;
  /// The arguments of @eval_step (the forward, no dropout, one
  /// micro-batch; StepRequest::eval, ds-compile --eval): parameters by
  /// name, then batch arguments. Empty when the step has none.
  std::vector<ArgSpec> evalArgs;
  /// The communication of one step as ds-schedule-comm's cost model
  /// predicts it (CommPrediction.h), in ms: all of it, and the part not
  /// hidden by compute; negative when not known (a --compiled artifact).
  double predictedCommMs = -1, predictedExposedCommMs = -1;
  /// Filled once code is generated.
  int64_t blasCallSites = 0;
  /// The arguments @train_step takes as one stacked argument each
  /// (ds.stack), as indices into args in slice (layer) order; the state
  /// store keeps each group contiguous so the call passes it without a
  /// copy. From the step's signature (setArgStacks), not its IR.
  std::vector<std::vector<size_t>> argStacks;
  int64_t workspaceBytes = 0;
  /// What the code runs on: "cpu", or the GPU chip it was compiled for
  /// ("sm_90"), whose arguments the loader places in device-accessible
  /// memory (docs/gpu.md).
  std::string target = "cpu";
  /// Every arena of the loaded code (ds-plan-buffers), held at once.
  int64_t arenaBytes = 0;
  /// What ds-plan-memory predicts this rank holds at most during a step
  /// (ds.planned_peak_bytes) before the arenas are known, and with them;
  /// -1 when not known.
  int64_t plannedPeakBytes = -1;

  /// Token ids must be below this: tokenVocab, or the cross-entropy's
  /// classes for a model without a token embedding; 0 if neither.
  int64_t vocab() const {
    return tokenVocab ? tokenVocab : crossEntropyClasses;
  }
  /// The argument named `name` of `kind`, if any.
  std::optional<size_t> find(ArgSpec::Kind kind, llvm::StringRef name) const;
  /// The f32 master copy of parameter `param` (mixed precision with
  /// ZeRO-1/2 keeps the parameter in 16 bits), if the step has one.
  std::optional<size_t> masterOf(const ArgSpec &param) const;
};

/// Fills `manifest.argStacks` from @train_step's signature, whose caller
/// inputs are the manifest's arguments in order; an error if the two
/// disagree on their number or on a stacked argument's type.
llvm::Error setArgStacks(StepManifest &manifest,
                         const mlir::ds::exec::FunctionSignature &signature);

/// The callable part: one call is one optimizer step. Arguments and
/// results are exactly the manifest's, borrowed for the call.
class StepFunction {
public:
  virtual ~StepFunction() = default;
  virtual llvm::Error run(llvm::ArrayRef<Tensor> args,
                          llvm::ArrayRef<Tensor> results) = 0;
  /// One call of @eval_step: the loss of one micro-batch, nothing updated.
  virtual llvm::Error evaluate(llvm::ArrayRef<Tensor> args,
                               const Tensor &loss) {
    return llvm::createStringError(
        "this training step has no eval function (an artifact needs "
        "ds-compile --eval)");
  }
};

struct CompiledStep {
  StepManifest manifest;
  std::unique_ptr<StepFunction> function;
  /// Where the step came from, for the summary line: "compiled",
  /// "loaded DIR", "compile cache hit (DIR)", ...
  std::string origin = "compiled";
};

/// What the run side asks of whatever yields the step: the JIT, an
/// artifact directory or the compile cache.
struct StepRequest {
  std::string modelPath;  ///< .json spec, .mlir model contract or .pt
  /// --seq-len: a .json spec's sequence length (default: its positions).
  std::optional<int64_t> seqLen;
  std::string configPath; ///< the file `config` was resolved from
  const ::ds::config::Config *config = nullptr;
  int64_t worldSize = 1, rank = 0;
  std::string dumpIRDir; ///< writes each phase's IR here (empty: none)
  /// Also compile @eval_step, the model's forward without dropout.
  bool eval = false;
  /// Measured collective times (`ds-report --comm-profile`) for the
  /// schedule's cost model; empty: the model's defaults.
  std::string commProfile;
  /// "cpu", or a GPU chip ("sm_90", ds-compile/ds-train --target): each
  /// linalg op a kernel, GEMMs through cuBLAS, the arena and every buffer
  /// of the step in device-accessible memory.
  std::string target = "cpu";
  /// Profile calls around each kernel (ds-train --profile).
  bool profile = false;
  /// Called with the start-up hash as soon as the step is known, before
  /// anything else can fail: ranks compare it.
  std::function<llvm::Error(uint64_t startupHash)> agreeOnStep;
  /// Called with the manifest before code generation, the slow part: what
  /// the manifest alone can refuse is refused first.
  std::function<llvm::Error(const StepManifest &)> beforeCodegen;
};

using StepProvider =
    std::function<llvm::Expected<CompiledStep>(const StepRequest &)>;

} // namespace ds::driver

#endif // DS_DRIVER_COMPILEDSTEP_H
