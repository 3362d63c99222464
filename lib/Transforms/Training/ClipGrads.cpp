//===- ClipGrads.cpp - Global gradient norm and clipping
//-------------------===//
//
// The norm is computed every step, clipping or not, because DeepSpeed
// reports it and ds-train logs it; only the rescaling depends on
// gradient_clipping.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_CLIPGRADS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

/// The model's gradient norm where this rank holds only part of it: a
/// pipeline stage's share summed over the stages, a tensor-parallel piece's
/// over tp (pipeline::normSquares). Null on one whole model, and when
/// ds-zero will rebuild the norm from the data-parallel shards (dp > 1 on
/// the module's grid).
Value modelParallelNorm(OpBuilder &b, Location loc, ModuleOp module,
                        func::FuncOp fn, ArrayRef<Value> grads) {
  bool pipelined = module->getAttr(pipeline::kPipelineAttrName) != nullptr;
  auto grid =
      module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
  bool tensorParallel = grid && grid.getAxisSize("tp").value_or(1) > 1;
  // Experts sit within dp: ds-zero's data-parallel group is dp x ep.
  if ((!pipelined && !tensorParallel) ||
      (grid && grid.getAxisSize("dp").value_or(1) *
                       grid.getAxisSize("ep").value_or(1) >
                   1))
    return Value();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value total = pipeline::normSquares(b, loc, module, fn, grads);
  if (pipelined)
    total = dist::AllReduceOp::create(b, loc, scalar, total,
                                      b.getStrArrayAttr({"pp"}),
                                      dist::ReductionKind::sum);
  return math::SqrtOp::create(b, loc, total);
}

struct ClipGradsPass : mlir::ds::impl::ClipGradsBase<ClipGradsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxNorm < 0) {
      module.emitError() << "ds-clip-grads: max-norm is "
                         << formatNumber(maxNorm)
                         << " but gradient_clipping must be >= 0";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ds-clip-grads: no func.func @" << entry
                         << " with a body; run ds-accumulate-grads first";
      return signalPassFailure();
    }
    unsigned numParams = numLeadingParams(fn);
    auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    bool shapeOk = numParams > 0 && ret.getNumOperands() == numParams + 1;
    for (unsigned i = 0; shapeOk && i < numParams; ++i)
      shapeOk = ret.getOperand(i + 1).getType() == fn.getArgumentTypes()[i];
    if (!shapeOk) {
      fn.emitError() << "ds-clip-grads: @" << entry << " returns "
                     << ret.getNumOperands() << " values but must return "
                     << "(loss, " << numParams
                     << " gradients of its parameters' types), as "
                        "ds-accumulate-grads builds it";
      return signalPassFailure();
    }

    OpBuilder b(ret);
    Location loc = ret.getLoc();
    SmallVector<Value> grads(ret.getOperands().drop_front());
    auto normType = RankedTensorType::get({}, b.getF32Type());
    SmallVector<Value> results = {ret.getOperand(0)};
    Value norm = modelParallelNorm(b, loc, module, fn, grads);
    if (maxNorm > 0) {
      auto clip = train::ClipGradNormOp::create(
          b, loc, ValueRange(grads).getTypes(), normType, grads,
          llvm::APFloat(static_cast<double>(maxNorm)), /*norm_in=*/norm);
      llvm::append_range(results, clip.getClipped());
      norm = clip.getNorm();
    } else if (norm) {
      llvm::append_range(results, grads);
    } else {
      llvm::append_range(results, grads);
      norm = train::GlobalNormOp::create(b, loc, normType, grads,
                                         /*squared=*/nullptr,
                                         /*init=*/Value());
    }
    results.push_back(norm);
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    fn.setFunctionType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  }
};

} // namespace
