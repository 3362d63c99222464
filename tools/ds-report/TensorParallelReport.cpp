//===- TensorParallelReport.cpp - ds-report's tensor-parallel layout ------===//
#include "TensorParallelReport.h"

#include "ds/Driver/LoadModel.h"
#include "ds/Import/Import.h"
#include "ds/Transforms/Passes.h"
#include "dsdist/DistDialect.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
namespace nn = mlir::ds::nn;
namespace dist = mlir::ds::dist;
using llvm::createStringError;

/// The Megatron name of the cut ds-tensor-parallel gave `arg`, read from
/// its `dsdist.tensor_parallel` piece and the graph after the pass:
///  - no piece: "replicated" (layer norms, position embeddings, row biases,
///    and any linear the pass could not place);
///  - dim 1: "row", a row linear's weight [out, in] cut along its input
///    (rewriteRow is the pass's only dim-1 cut);
///  - dim 0 of a table an embedding looks up at a vocabulary offset, or of
///    the weight or bias of the linear whose logits feed the cross-entropy
///    (the LM head, also through its layer and a flattening reshape):
///    "vocab" (vocabParallel);
///  - any other dim 0: "column", a column linear's weight or bias cut along
///    its output (in blocks for a fused QKV).
/// Whether `logits` reach a cross-entropy, also out of their layer and
/// through the flattening an imported model applies before the loss.
static bool feedsLoss(Value logits) {
  for (int hop = 0; hop < 3 && logits; ++hop) {
    if (llvm::any_of(logits.getUsers(), llvm::IsaPred<nn::CrossEntropyOp>))
      return true;
    if (!logits.hasOneUse())
      return false;
    OpOperand &use = *logits.use_begin();
    Operation *user = use.getOwner();
    if (isa<nn::YieldOp>(user) && isa<nn::LayerOp>(user->getParentOp()))
      logits = user->getParentOp()->getResult(use.getOperandNumber());
    else if (auto reshape = dyn_cast<nn::ReshapeOp>(user))
      logits = reshape.getResult();
    else
      return false;
  }
  return false;
}

static StringRef layoutOf(func::FuncOp forward, BlockArgument arg) {
  auto cut = forward.getArgAttrOfType<dist::TensorShardAttr>(
      arg.getArgNumber(), dist::DistDialect::kTensorParallelAttrName);
  if (!cut)
    return "replicated";
  if (cut.getDim() == 1)
    return "row";
  for (Operation *user : arg.getUsers()) {
    if (auto lookup = dyn_cast<nn::EmbeddingOp>(user))
      if (lookup.getOffset())
        return "vocab";
    if (auto head = dyn_cast<nn::LinearOp>(user))
      if (feedsLoss(head.getResult()))
        return "vocab";
  }
  return "column";
}

llvm::Expected<TensorParallelReport>
reportTensorParallel(llvm::StringRef modelPath,
                     const ::ds::config::Config &config) {
  DialectRegistry registry;
  mlir::ds::importer::registerImportDialects(registry);
  registry.insert<dist::DistDialect, arith::ArithDialect>();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  auto module = ::ds::driver::loadModel(ctx, modelPath, config);
  if (!module)
    return module.takeError();
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      diag += (diag.empty() ? "" : "; ") + d.str();
    return success();
  });
  // The training pipeline's first passes, with its options
  // (lib/Pipelines/TrainingPipeline.cpp): the layout is the pass's.
  PassManager pm(&ctx);
  pm.addPass(mlir::ds::createVerifyModelContract());
  if (config.tensorParallel.autotpSize > 1) {
    mlir::ds::TensorParallelOptions tensor;
    tensor.size = config.tensorParallel.autotpSize;
    tensor.dpSize = config.dpSize;
    pm.addPass(mlir::ds::createTensorParallel(tensor));
  }
  if (failed(pm.run(**module)))
    return createStringError(modelPath.str() + ": " + diag);
  auto forward = (*module)->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return createStringError(modelPath.str() + ": the model has no @forward");

  TensorParallelReport report;
  for (BlockArgument arg : forward.getArguments())
    if (auto param = forward.getArgAttrOfType<nn::ParamAttr>(
            arg.getArgNumber(), nn::kParamAttrName))
      report.layout.emplace_back(param.getName().str(),
                                 layoutOf(forward, arg).str());
  return report;
}

void addToJson(const TensorParallelReport &report, nlohmann::json &tp) {
  nlohmann::json layout = nlohmann::json::object();
  for (const auto &[name, cut] : report.layout)
    layout[name] = cut;
  tp["layout"] = layout;
}
