//===- CommPrediction.cpp - A step's communication, predicted -------------===//
//
// Walks a function in order, the way it runs: a blocking collective costs
// its predicted time; a started one is charged at its wait, less the
// compute estimated between start and wait; calls and constant loops
// repeat what they hold.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/CommPrediction.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::ds;

int64_t mlir::ds::bytesOf(Type type) {
  auto t = cast<RankedTensorType>(type);
  return t.getNumElements() *
         llvm::divideCeil(t.getElementType().getIntOrFloatBitWidth(), 8);
}

int64_t mlir::ds::groupSizeOf(Operation *op, dist::GridAttr grid) {
  int64_t n = 1;
  auto axes = op->getAttrOfType<ArrayAttr>("axes");
  if (!grid || !axes)
    return n;
  for (auto axis : axes.getAsRange<StringAttr>())
    n *= grid.getAxisSize(axis.getValue()).value_or(1);
  return n;
}

CollectiveKind mlir::ds::kindOf(Operation *op) {
  if (isa<dist::AllGatherOp, dist::AllGatherStartOp>(op))
    return CollectiveKind::AllGather;
  if (isa<dist::ReduceScatterOp, dist::ReduceScatterStartOp>(op))
    return CollectiveKind::ReduceScatter;
  if (isa<dist::AllToAllOp, dist::AllToAllStartOp>(op))
    return CollectiveKind::AllToAll;
  return CollectiveKind::AllReduce;
}

int64_t mlir::ds::costBytes(Operation *op) {
  if (kindOf(op) == CollectiveKind::ReduceScatter)
    return bytesOf(op->getOperand(0).getType());
  Type result = op->getResult(0).getType();
  if (auto handle = dyn_cast<dist::HandleType>(result))
    result = handle.getPayload();
  return bytesOf(result);
}

double mlir::ds::flopsOf(Operation *root) {
  double flops = 0;
  root->walk([&](Operation *op) {
    if (!isa<nn::NNDialect>(op->getDialect()) || op->getNumRegions() != 0 ||
        op->getNumResults() == 0)
      return;
    auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!out || !out.hasStaticShape())
      return;
    double elements = static_cast<double>(out.getNumElements());
    if (isa<nn::LinearOp, nn::MatmulOp, nn::BatchMatmulOp>(op)) {
      auto lhs = cast<RankedTensorType>(op->getOperand(0).getType());
      flops += 2 * elements * static_cast<double>(lhs.getShape().back());
      return;
    }
    flops += elements;
  });
  return flops;
}

namespace {

bool isBlockingCollective(Operation *op) {
  return isa<dist::AllGatherOp, dist::ReduceScatterOp, dist::AllReduceOp,
             dist::AllToAllOp>(op);
}

bool isStartedCollective(Operation *op) {
  return isa<dist::AllGatherStartOp, dist::ReduceScatterStartOp,
             dist::AllReduceStartOp, dist::AllToAllStartOp>(op);
}

struct Walker {
  const CommCostModel &model;
  dist::GridAttr grid;
  ModuleOp module;
  CommPrediction out;
  /// Started collectives not yet waited, and the flops run since.
  llvm::MapVector<Operation *, double> open;

  double secondsOf(Operation *op) {
    return model.seconds(kindOf(op), costBytes(op), groupSizeOf(op, grid));
  }

  void walk(Block &block, double times, int depth) {
    for (Operation &op : block) {
      if (isBlockingCollective(&op)) {
        double t = times * secondsOf(&op);
        out.seconds += t;
        out.exposed += t;
      } else if (isStartedCollective(&op)) {
        open[&op] = 0;
      } else if (auto wait = dyn_cast<dist::WaitOp>(op)) {
        Operation *start = wait->getOperand(0).getDefiningOp();
        auto it = start ? open.find(start) : open.end();
        if (it == open.end())
          continue;
        double t = secondsOf(start);
        double hidden = std::min(t, it->second / kPlanFlopsPerSecond);
        out.seconds += times * t;
        out.exposed += times * (t - hidden);
        open.erase(it);
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (callee && !callee.isExternal() && depth < 16)
          walk(callee.getBody().front(), times, depth + 1);
      } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
        std::optional<APInt> trips = loop.getStaticTripCount();
        walk(*loop.getBody(), times * (trips ? trips->getSExtValue() : 1),
             depth + 1);
      } else {
        double f = flopsOf(&op);
        for (auto &entry : open)
          entry.second += f;
      }
    }
  }
};

} // namespace

CommPrediction mlir::ds::predictComm(func::FuncOp fn,
                                     const CommCostModel &model) {
  auto module = fn->getParentOfType<ModuleOp>();
  Walker w{model,
           module ? module->getAttrOfType<dist::GridAttr>(
                        dist::DistDialect::kGridAttrName)
                  : dist::GridAttr(),
           module,
           {},
           {}};
  if (!fn.isExternal())
    w.walk(fn.getBody().front(), 1, 0);
  return w.out;
}
