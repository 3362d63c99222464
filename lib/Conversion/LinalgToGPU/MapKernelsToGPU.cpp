//===- MapKernelsToGPU.cpp - The ds-map-kernels-to-gpu pass ---------------===//
//
// Every linalg op on buffers that the CPU path lowers to loops becomes one
// gpu.launch: all-parallel ops one thread per element, ops whose iterators
// reduce one block per output element with a fixed-order reduction (each
// thread folds a strided slice in order, then gpu.all_reduce's shuffle tree),
// so a GPU step gives the same bits run after run.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_MAPKERNELSTOGPU
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

constexpr int64_t kWarp = 32;

Value constantIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The multi-index of `linear` in row-major `sizes` (64-bit index math: a
/// buffer may pass 2^31 elements).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> idx(sizes.size());
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    Value size = constantIndex(b, loc, sizes[d]);
    idx[d] = d == 0 ? linear : arith::RemUIOp::create(b, loc, linear, size);
    if (d > 0)
      linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  return idx;
}

/// The element `operand` of `op` reads at loop indices `ivs`.
SmallVector<Value> operandIndices(OpBuilder &b, Location loc,
                                  linalg::GenericOp op, OpOperand &operand,
                                  ValueRange ivs) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<Value> idx;
  for (unsigned i = 0; i < map.getNumResults(); ++i)
    idx.push_back(
        affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), ivs));
  return idx;
}

/// Loads of every input the body reads, at `ivs`.
void mapInputs(OpBuilder &b, Location loc, linalg::GenericOp op, ValueRange ivs,
               IRMapping &mapping) {
  Block *body = op.getBlock();
  for (OpOperand *in : op.getDpsInputOperands()) {
    BlockArgument arg = body->getArgument(in->getOperandNumber());
    if (arg.use_empty())
      continue;
    if (!isa<MemRefType>(in->get().getType())) {
      mapping.map(arg, in->get());
      continue;
    }
    mapping.map(arg,
                memref::LoadOp::create(b, loc, in->get(),
                                       operandIndices(b, loc, op, *in, ivs)));
  }
}

/// Clones the body's ops (not its yield) under `mapping`; linalg.index
/// becomes the loop index. Returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, linalg::GenericOp op, ValueRange ivs,
                             IRMapping &mapping) {
  Block *body = op.getBlock();
  for (Operation &inner : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  SmallVector<Value> results;
  for (Value v : body->getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

std::optional<gpu::AllReduceOperation> reduceKind(Operation *combiner) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(combiner)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::MUL; })
      .Case<arith::MaximumFOp>([](auto) { return K::MAXIMUMF; })
      .Case<arith::MinimumFOp>([](auto) { return K::MINIMUMF; })
      .Case<arith::MaxNumFOp>([](auto) { return K::MAXNUMF; })
      .Case<arith::MinNumFOp>([](auto) { return K::MINNUMF; })
      .Case<arith::MaxSIOp>([](auto) { return K::MAXSI; })
      .Case<arith::MinSIOp>([](auto) { return K::MINSI; })
      .Case<arith::MaxUIOp>([](auto) { return K::MAXUI; })
      .Case<arith::MinUIOp>([](auto) { return K::MINUI; })
      .Case<arith::AndIOp>([](auto) { return K::AND; })
      .Case<arith::OrIOp>([](auto) { return K::OR; })
      .Case<arith::XOrIOp>([](auto) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// Why `op` cannot become a kernel, or "" if it can.
std::string unsupportedReason(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics())
    return "it is not on buffers";
  for (int64_t size : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(size))
      return "its loop ranges are not static";
  if (op.getNumReductionLoops() == 0)
    return "";
  if (op.getNumDpsInits() != 1)
    return "it reduces into more than one output";
  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1)
    return "its body is not one combiner over the output";
  if (!reduceKind(combiners.front()) ||
      !arith::getNeutralElement(combiners.front()))
    return "its combiner has no GPU all-reduce";
  return "";
}

/// One thread per iteration point.
void mapParallel(OpBuilder &b, linalg::GenericOp op, int64_t blockSize) {
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t total = 1;
  for (int64_t r : ranges)
    total *= r;
  int64_t threads = std::min<int64_t>(blockSize, llvm::alignTo(total, kWarp));
  Value one = constantIndex(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, constantIndex(b, loc, llvm::divideCeil(total, threads)), one, one,
      constantIndex(b, loc, threads), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            launch.getBlockSize().x),
      launch.getThreadIds().x);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                                        constantIndex(b, loc, total));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  SmallVector<Value> ivs = delinearize(b, loc, id, ranges);
  IRMapping mapping;
  mapInputs(b, loc, op, ivs, mapping);
  Block *body = op.getBlock();
  for (OpOperand &out : op.getDpsInitsMutable()) {
    BlockArgument arg = body->getArgument(out.getOperandNumber());
    if (!arg.use_empty())
      mapping.map(arg,
                  memref::LoadOp::create(b, loc, out.get(),
                                         operandIndices(b, loc, op, out, ivs)));
  }
  SmallVector<Value> results = cloneBody(b, op, ivs, mapping);
  for (auto [out, value] : llvm::zip(op.getDpsInitsMutable(), results))
    memref::StoreOp::create(b, loc, value, out.get(),
                            operandIndices(b, loc, op, out, ivs));
}

/// One block per output element: each thread folds the reduced indices
/// tid, tid + blockDim, ... in order from the combiner's neutral element,
/// gpu.all_reduce combines the threads in a fixed tree, and thread 0 folds
/// the total into the output's value.
void mapReduction(OpBuilder &b, linalg::GenericOp op, int64_t blockSize) {
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> outer, inner;
  for (auto [dim, kind] : llvm::enumerate(iterators))
    (kind == utils::IteratorType::parallel ? outer : inner).push_back(dim);
  auto extent = [&](ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= ranges[d];
    return n;
  };
  SmallVector<int64_t> outerSizes, innerSizes;
  for (int64_t d : outer)
    outerSizes.push_back(ranges[d]);
  for (int64_t d : inner)
    innerSizes.push_back(ranges[d]);
  int64_t rows = extent(outer), width = extent(inner);
  int64_t threads = std::min<int64_t>(blockSize, llvm::alignTo(width, kWarp));

  SmallVector<Operation *> combiners;
  Value partialValue = matchReduction(op.getRegionOutputArgs(), 0, combiners);
  Operation *combiner = combiners.front();
  BlockArgument outArg = op.getRegionOutputArgs().front();
  OpOperand &out = op.getDpsInitsMutable()[0];
  Type elementType = outArg.getType();
  (void)partialValue;

  Value one = constantIndex(b, loc, 1);
  auto launch =
      gpu::LaunchOp::create(b, loc, constantIndex(b, loc, rows), one, one,
                            constantIndex(b, loc, threads), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  SmallVector<Value> outerIdx =
      delinearize(b, loc, launch.getBlockIds().x, outerSizes);
  Value zero = constantIndex(b, loc, 0);
  auto merge = [&](ValueRange innerIdx) {
    SmallVector<Value> ivs(ranges.size(), zero);
    for (auto [d, v] : llvm::zip(outer, outerIdx))
      ivs[d] = v;
    for (auto [d, v] : llvm::zip(inner, innerIdx))
      ivs[d] = v;
    return ivs;
  };

  Value neutral =
      arith::ConstantOp::create(b, loc, *arith::getNeutralElement(combiner));
  auto loop = scf::ForOp::create(b, loc, tid, constantIndex(b, loc, width),
                                 launch.getBlockSize().x, ValueRange{neutral});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs =
        merge(delinearize(b, loc, loop.getInductionVar(), innerSizes));
    IRMapping mapping;
    mapInputs(b, loc, op, ivs, mapping);
    mapping.map(outArg, loop.getRegionIterArg(0));
    SmallVector<Value> results = cloneBody(b, op, ivs, mapping);
    scf::YieldOp::create(b, loc, results.front());
  }
  auto total = gpu::AllReduceOp::create(
      b, loc, elementType, loop.getResult(0),
      gpu::AllReduceOperationAttr::get(b.getContext(), *reduceKind(combiner)),
      b.getUnitAttr());
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
  auto guard = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  SmallVector<Value> ivs = merge(SmallVector<Value>(inner.size(), zero));
  SmallVector<Value> outIdx = operandIndices(b, loc, op, out, ivs);
  Value initial = memref::LoadOp::create(b, loc, out.get(), outIdx);
  IRMapping fold;
  for (Value operand : combiner->getOperands())
    fold.map(operand, operand == outArg ? initial : total.getResult());
  Value result = b.clone(*combiner, fold)->getResult(0);
  memref::StoreOp::create(b, loc, result, out.get(), outIdx);
}

struct MapKernelsToGPUPass
    : ds::impl::MapKernelsToGPUBase<MapKernelsToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    // Buffer copies (bufferization's, subviews included) as linalg.copy:
    // on the device they are kernels like any other, where the CPU path
    // makes them memcpy or loops.
    SmallVector<memref::CopyOp> copies;
    module.walk([&](memref::CopyOp op) {
      auto source = dyn_cast<MemRefType>(op.getSource().getType());
      if (source && source.hasStaticShape() &&
          !op->getParentOfType<gpu::LaunchOp>())
        copies.push_back(op);
    });
    for (memref::CopyOp op : copies) {
      rewriter.setInsertionPoint(op);
      linalg::CopyOp::create(rewriter, op.getLoc(), ValueRange{op.getSource()},
                             ValueRange{op.getTarget()});
      rewriter.eraseOp(op);
      ++numCopyKernels;
    }
    // Named ops (fill, copy, transpose, reduce...) as generics: one path.
    SmallVector<linalg::LinalgOp> named;
    module.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }
    SmallVector<linalg::GenericOp> generics;
    module.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        if (report)
          op.emitRemark() << "left on the host: " << reason;
        ++numHostOps;
        continue;
      }
      OpBuilder b(op);
      if (op.getNumReductionLoops() == 0) {
        mapParallel(b, op, blockSize);
        ++numParallelKernels;
      } else {
        mapReduction(b, op, blockSize);
        ++numReductionKernels;
      }
      op.erase();
    }
  }
};

} // namespace
