//===- MoEExpertParallel.cpp - Experts spread over an ep group ------------===//
//
// Works on the model contract: each dsnn.moe is spelled out (MoEOp::expand)
// with the experts' step replaced by all-to-all, the local experts, and the
// all-to-all back. Expert parallelism is a layout change: routing stays
// per rank, and each expert sees the same token rows as with ep-size 1.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_MOEEXPERTPARALLEL
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kEpAxis = "ep";

/// `t` with its leading dim `from` replaced by `to`; other types unchanged.
Type withLeadingDim(Type t, int64_t from, int64_t to) {
  auto ranked = dyn_cast<RankedTensorType>(t);
  if (!ranked || ranked.getRank() == 0 || ranked.getDimSize(0) != from)
    return t;
  SmallVector<int64_t> shape(ranked.getShape());
  shape[0] = to;
  return ranked.clone(shape);
}

struct MoEExpertParallelPass
    : mlir::ds::impl::MoEExpertParallelBase<MoEExpertParallelPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-moe-expert-parallel: " << msg;
    signalPassFailure();
    return failure();
  }

  LogicalResult setGrid(ModuleOp module, int64_t dp);
  LogicalResult sliceParams(ArrayRef<nn::MoEOp> moes);
  Value runLocalExperts(RewriterBase &rewriter, nn::MoEOp op, Value dispatched);
};

LogicalResult MoEExpertParallelPass::setGrid(ModuleOp module, int64_t dp) {
  MLIRContext *ctx = &getContext();
  SmallVector<StringAttr> axes = {StringAttr::get(ctx, "dp"),
                                  StringAttr::get(ctx, kEpAxis)};
  SmallVector<int64_t> sizes = {dp / epSize, epSize};
  auto existing =
      module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
  // Experts within dp, a tensor-parallel group inside: each rank of a tp
  // group holds the same experts whole, and its dp place picks them.
  if (std::optional<int64_t> tp = existing ? existing.getAxisSize("tp")
                                           : std::nullopt;
      tp && existing.getAxisSize("dp") == dp && existing.getSizes().size() == 2) {
    axes.push_back(StringAttr::get(ctx, "tp"));
    sizes.push_back(*tp);
    existing = {};
  }
  auto grid = dist::GridAttr::get(ctx, axes, sizes);
  if (existing && existing != grid)
    return fail(module, "the module's grid " +
                            llvm::Twine(existing.formatAxes()) +
                            " is not the expert-parallel grid dp = " +
                            Twine(dp / epSize) + ", ep = " + Twine(epSize) +
                            "; run this pass before any other distribution");
  module->setAttr(dist::DistDialect::kGridAttrName, grid);
  return success();
}

/// Cuts every expert parameter (a function argument) to this rank's
/// experts: leading dim E -> E / G, marked with dsdist.experts.
LogicalResult MoEExpertParallelPass::sliceParams(ArrayRef<nn::MoEOp> moes) {
  MLIRContext *ctx = &getContext();
  llvm::SetVector<BlockArgument> params;
  for (nn::MoEOp op : moes)
    for (Value p : op.getExpertParams()) {
      auto arg = dyn_cast<BlockArgument>(p);
      auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
      if (!fn || !fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName))
        return fail(op, "expert parameter is not a dsnn.param argument of "
                        "its function; expert parallelism slices parameters");
      params.insert(arg);
    }
  for (BlockArgument arg : params) {
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    for (OpOperand &use : arg.getUses()) {
      auto moe = dyn_cast<nn::MoEOp>(use.getOwner());
      if (!moe || use.getOperandNumber() < 2)
        return fail(use.getOwner(),
                    "expert parameter \"" +
                        fn.getArgAttrOfType<nn::ParamAttr>(arg.getArgNumber(),
                                                           nn::kParamAttrName)
                            .getName() +
                        "\" is used outside the experts of a dsnn.moe");
    }
    auto whole = cast<RankedTensorType>(arg.getType());
    int64_t e = whole.getDimSize(0);
    arg.setType(withLeadingDim(whole, e, e / epSize));
    fn.setArgAttr(arg.getArgNumber(), dist::DistDialect::kExpertsAttrName,
                  dist::ShardingAttr::get(
                      ctx, ArrayAttr::get(ctx, {StringAttr::get(ctx, kEpAxis)}),
                      whole.getShape()));
    fn.setFunctionType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(),
                                         fn.getResultTypes()));
  }
  return success();
}

/// all-to-all, the region once per source rank on [E/G, capacity, C], and
/// the all-to-all back.
Value MoEExpertParallelPass::runLocalExperts(RewriterBase &rewriter,
                                             nn::MoEOp op, Value dispatched) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(dispatched.getType());
  int64_t e = type.getDimSize(0), local = e / epSize;
  auto axes = rewriter.getStrArrayAttr({kEpAxis});
  auto exchange = [&](Value v) -> Value {
    ++numAllToAlls;
    return dist::AllToAllOp::create(rewriter, loc, type, v, axes,
                                    rewriter.getI64IntegerAttr(0),
                                    rewriter.getI64IntegerAttr(0));
  };
  // Row block s of the received tokens came from group rank s.
  Value received = exchange(dispatched);
  auto pieceType = cast<RankedTensorType>(withLeadingDim(type, e, local));
  SmallVector<Type> pieceTypes(epSize, pieceType);
  auto split = nn::SplitOp::create(rewriter, loc, pieceTypes, received, 0);

  Block &body = op.getExperts().front();
  SmallVector<Value> outputs;
  for (Value piece : split.getResults()) {
    IRMapping map;
    map.map(body.getArgument(0), piece);
    for (auto [arg, param] :
         llvm::zip(body.getArguments().drop_front(), op.getExpertParams()))
      map.map(arg, param);
    for (Operation &inner : body.without_terminator()) {
      Operation *copy = rewriter.clone(inner, map);
      for (OpResult r : copy->getResults())
        r.setType(withLeadingDim(r.getType(), e, local));
    }
    outputs.push_back(map.lookup(body.getTerminator()->getOperand(0)));
  }
  Value joined = nn::ConcatOp::create(rewriter, loc, type, outputs, 0);
  return exchange(joined);
}

void MoEExpertParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  int64_t dp = dpSize == 0 ? epSize : dpSize;
  if (epSize < 1 || dp < 1) {
    module.emitError() << "ds-moe-expert-parallel: ep-size " << epSize
                       << " and dp-size " << dp << " must be >= 1";
    return signalPassFailure();
  }
  if (epSize == 1)
    return;
  if (dp % epSize != 0)
    return (void)fail(module, "ep-size " + Twine(epSize) +
                                  " does not divide the data-parallel size " +
                                  Twine(dp) +
                                  "; expert-parallel groups are carved out of "
                                  "the data-parallel ranks");
  SmallVector<nn::MoEOp> moes;
  module.walk([&](nn::MoEOp op) { moes.push_back(op); });
  if (moes.empty())
    return (void)fail(module, "moe.ep_size " + Twine(epSize) +
                                  " but the model has no MoE layer "
                                  "(dsnn.moe); set ep_size to 1 or train a "
                                  "model with experts");
  for (nn::MoEOp op : moes) {
    int64_t e = op.getNumExpertsAttr().getInt();
    if (e % epSize != 0)
      return (void)fail(op, "num_experts " + Twine(e) +
                                " is not divisible by ep-size " +
                                Twine(epSize) +
                                "; every expert-parallel rank holds the same "
                                "number of experts");
  }
  if (failed(setGrid(module, dp)) || failed(sliceParams(moes)))
    return;
  IRRewriter rewriter(&getContext());
  for (nn::MoEOp op : moes) {
    ++numLayers;
    op.expand(rewriter, [&](Value dispatched) {
      return runLocalExperts(rewriter, op, dispatched);
    });
  }
}

} // namespace
