//===- GPULaunchToLoops.cpp - The ds-gpu-launch-to-loops pass -------------===//
//
// ds-map-kernels-to-gpu's kernels as CPU loops with the same block and
// thread ids, the block-wide all-reduce combined in the GPU's shuffle-tree
// order: a step lowered this way checks the kernels' index maps against the
// CPU step on a machine without a GPU.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::ds {
#define GEN_PASS_DEF_GPULAUNCHTOLOOPS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// A launch dimension the kernels ds emits keep at 1 (y and z).
bool isOne(Value v) {
  auto c = v.getDefiningOp<arith::ConstantIndexOp>();
  return c && c.value() == 1;
}

/// `for (s = 1; s < n; s *= 2) for (i = 0; i + s < n; i += 2s) a[i] =
/// combine(a[i], a[i + s])`: the pairing of gpu.all_reduce's lowering (a
/// butterfly of xor shuffles within each warp, then across the warps'
/// values), whose lane 0 ends with exactly this tree over lanes in order.
Value combineInTreeOrder(OpBuilder &b, Location loc, Value values, int64_t n,
                         vector::CombiningKind kind) {
  for (int64_t s = 1; s < n; s *= 2) {
    auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                   index(b, loc, n - s), index(b, loc, 2 * s));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    Value partner = arith::AddIOp::create(b, loc, i, index(b, loc, s));
    Value lhs = memref::LoadOp::create(b, loc, values, ValueRange{i});
    Value rhs = memref::LoadOp::create(b, loc, values, ValueRange{partner});
    Value sum = vector::makeArithReduction(b, loc, kind, lhs, rhs);
    memref::StoreOp::create(b, loc, sum, values, ValueRange{i});
  }
  return memref::LoadOp::create(b, loc, values, ValueRange{index(b, loc, 0)});
}

struct GPULaunchToLoopsPass
    : ds::impl::GPULaunchToLoopsBase<GPULaunchToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
  }

  LogicalResult emulate(gpu::LaunchOp launch) {
    Location loc = launch.getLoc();
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.getDynamicSharedMemorySize() || !isOne(launch.getGridSizeY()) ||
        !isOne(launch.getGridSizeZ()) || !isOne(launch.getBlockSizeY()) ||
        !isOne(launch.getBlockSizeZ()))
      return launch.emitError("only synchronous one-dimensional launches run "
                              "as loops (ds-map-kernels-to-gpu's form)");
    Block &body = launch.getBody().front();
    gpu::AllReduceOp reduce;
    for (Operation &op : body.without_terminator()) {
      bool nested = false;
      op.walk([&](gpu::AllReduceOp inner) { nested |= inner != &op; });
      auto here = dyn_cast<gpu::AllReduceOp>(op);
      if (nested || (here && (reduce || !here.getOp())))
        return op.emitError("a block-wide all-reduce runs as loops only "
                            "once, at the top of the kernel, with a kind");
      if (here)
        reduce = here;
    }
    auto blockSize =
        launch.getBlockSizeX().getDefiningOp<arith::ConstantIndexOp>();
    if (reduce && !blockSize)
      return launch.emitError("a reducing kernel runs as loops only with a "
                              "constant block size");

    OpBuilder b(launch);
    Value zero = index(b, loc, 0), one = index(b, loc, 1);
    IRMapping base;
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    threads = launch.getThreadIds(),
                    grid = launch.getGridSizeOperandValues(),
                    block = launch.getBlockSizeOperandValues();
    base.map(launch.getGridSize().x, grid.x);
    base.map(launch.getGridSize().y, grid.y);
    base.map(launch.getGridSize().z, grid.z);
    base.map(launch.getBlockSize().x, block.x);
    base.map(launch.getBlockSize().y, block.y);
    base.map(launch.getBlockSize().z, block.z);
    for (Value id : {blocks.y, blocks.z, threads.y, threads.z})
      base.map(id, zero);

    // Each thread's value, outside the loops: one stack slot per thread.
    Value values;
    if (reduce)
      values = memref::AllocaOp::create(
          b, loc, MemRefType::get({blockSize.value()}, reduce.getType()));

    auto blockLoop = scf::ForOp::create(b, loc, zero, grid.x, one);
    b.setInsertionPointToStart(blockLoop.getBody());
    base.map(blocks.x, blockLoop.getInductionVar());
    // Runs `ops` once per thread, each with `seed`'s values and its id;
    // `then` adds to the thread's iteration.
    auto perThread = [&](ArrayRef<Operation *> ops, const IRMapping &seed,
                         llvm::function_ref<void(IRMapping &, Value)> then) {
      auto threadLoop = scf::ForOp::create(b, loc, zero, block.x, one);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(threadLoop.getBody());
      IRMapping mapping = seed;
      mapping.map(threads.x, threadLoop.getInductionVar());
      for (Operation *op : ops)
        b.clone(*op, mapping);
      then(mapping, threadLoop.getInductionVar());
    };
    auto opsOf = [](auto range) {
      SmallVector<Operation *> ops;
      for (Operation &op : range)
        ops.push_back(&op);
      return ops;
    };
    if (!reduce) {
      perThread(opsOf(body.without_terminator()), base,
                [](IRMapping &, Value) {});
    } else {
      SmallVector<Operation *> before =
          opsOf(llvm::make_range(body.begin(), reduce->getIterator()));
      perThread(before, base, [&](IRMapping &mapping, Value tid) {
        memref::StoreOp::create(b, loc, mapping.lookup(reduce.getValue()),
                                values, ValueRange{tid});
      });
      Value total =
          combineInTreeOrder(b, loc, values, blockSize.value(),
                             gpu::convertReductionKind(*reduce.getOp()));
      // The rest sees the values the first part defined: that part again,
      // less what only feeds the all-reduce (each thread's fold).
      Operation *fold = reduce.getValue().getDefiningOp();
      if (fold && llvm::all_of(fold->getUsers(), [&](Operation *user) {
            return user == reduce.getOperation();
          }))
        llvm::erase(before, fold);
      llvm::append_range(
          before, opsOf(llvm::make_range(std::next(reduce->getIterator()),
                                         body.getTerminator()->getIterator())));
      IRMapping withTotal = base;
      withTotal.map(reduce.getResult(), total);
      perThread(before, withTotal, [](IRMapping &, Value) {});
      ++numReductions;
    }
    launch.erase();
    ++numLaunches;
    return success();
  }
};

} // namespace
