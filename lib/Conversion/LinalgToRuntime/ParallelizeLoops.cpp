//===- ParallelizeLoops.cpp - The ds-parallelize-loops pass ---------------===//
//
// The step's own loop nests (fused elementwise kernels, row reductions,
// fills) across the threads the GEMMs use. The first dimension of an
// outermost scf.parallel is split into contiguous blocks, one per thread,
// by dsrt_parallel_for: only whole iterations move, so every element is
// computed as it is serially (bitwise equal for every thread count).
//
// The nest moves into a function of (ctx, begin, end) because the runtime
// calls it through a C function pointer; its buffers travel as addresses in
// a stack array and are rebuilt from their static types. It runs before
// ds-promote-accumulators and ds-fixed-order-reductions so the stack
// buffers those give a reduction land in the outlined function, one per
// thread, not in the caller where the threads would share them.
//
//===----------------------------------------------------------------------===//
#include "RuntimeCall.h"

#include "ds/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PARALLELIZELOOPS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// A static trip count, or nullopt.
std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub),
       s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? (*u - *l + *s - 1) / *s : 0;
}

/// Iterations of the deepest loop path in `region` (1 without loops);
/// a loop with dynamic bounds counts once, which only errs toward serial.
int64_t nestedIterations(Region &region) {
  int64_t most = 1;
  for (Operation &op : region.getOps()) {
    int64_t trips = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      trips = tripCount(loop.getLowerBound(), loop.getUpperBound(),
                        loop.getStep())
                  .value_or(1);
    else if (auto par = dyn_cast<scf::ParallelOp>(op))
      for (auto [l, u, s] : llvm::zip(par.getLowerBound(), par.getUpperBound(),
                                      par.getStep()))
        trips *= tripCount(l, u, s).value_or(1);
    for (Region &inner : op.getRegions())
      most = std::max(most, trips * nestedIterations(inner));
  }
  return most;
}

/// A buffer whose address alone rebuilds its descriptor.
bool isStaticBuffer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  SmallVector<int64_t> strides;
  int64_t offset;
  return memref && memref.hasStaticShape() &&
         succeeded(memref.getStridesAndOffset(strides, offset)) &&
         !ShapedType::isDynamic(offset) &&
         llvm::none_of(strides, ShapedType::isDynamic);
}

struct ParallelizeLoopsPass
    : ds::impl::ParallelizeLoopsBase<ParallelizeLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> nests;
    module.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        nests.push_back(op);
    });
    SymbolTable symbols(module);
    LLVMTypeConverter converter(&getContext());
    llvm::StringMap<unsigned> perFunction;
    for (scf::ParallelOp op : nests) {
      auto parent = op->getParentOfType<func::FuncOp>();
      if (!parent) {
        ++numUnsupported;
        continue;
      }
      SmallVector<Value> buffers;
      if (!supported(op, buffers)) {
        ++numUnsupported;
        continue;
      }
      int64_t iterations = 1;
      for (auto [l, u, s] : llvm::zip(op.getLowerBound(), op.getUpperBound(),
                                      op.getStep()))
        iterations *= *tripCount(l, u, s);
      iterations *= nestedIterations(op.getRegion());
      if (iterations < minIterations ||
          *tripCount(op.getLowerBound()[0], op.getUpperBound()[0],
                     op.getStep()[0]) < 2) {
        ++numSmall;
        continue;
      }
      std::string name = (parent.getSymName() + "_par" +
                           Twine(perFunction[parent.getSymName()]++))
                             .str();
      outline(op, parent, buffers, name, symbols, converter);
      ++numParallel;
    }
  }

  /// Whether `op` can move: constant bounds, step 1 in its first dimension,
  /// no results, and only static buffers and constants read from above
  /// (collected in `buffers`, in order of first use).
  bool supported(scf::ParallelOp op, SmallVectorImpl<Value> &buffers) {
    if (op.getNumResults() != 0 ||
        getConstantIntValue(op.getStep()[0]) != std::optional<int64_t>(1))
      return false;
    for (Value bound : op->getOperands())
      if (!matchPattern(bound, m_Constant()))
        return false;
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op.getRegion(), above);
    for (Value value : above) {
      if (matchPattern(value, m_Constant()))
        continue;
      if (!isStaticBuffer(value.getType()))
        return false;
      buffers.push_back(value);
    }
    return true;
  }

  void outline(scf::ParallelOp op, func::FuncOp parent,
               ArrayRef<Value> buffers, StringRef name, SymbolTable &symbols,
               const LLVMTypeConverter &converter) {
    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    Type i64 = IntegerType::get(ctx, 64);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type index = IndexType::get(ctx);
    auto type = FunctionType::get(ctx, {ptr, i64, i64}, {});

    // The function: buffers from ctx, constants cloned, the nest over
    // [begin, end) of its first dimension.
    OpBuilder top(ctx);
    top.setInsertionPointAfter(parent);
    auto fn = func::FuncOp::create(top, loc, name, type);
    fn.setPrivate();
    fn->setAttr("ds.kernel_count", top.getI64IntegerAttr(1));
    symbols.insert(fn);
    Block *entry = fn.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (auto [k, buffer] : llvm::enumerate(buffers)) {
      Value slot =
          LLVM::GEPOp::create(b, loc, ptr, i64, entry->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(k)});
      Value address = LLVM::LoadOp::create(b, loc, ptr, slot);
      auto memrefType = cast<MemRefType>(buffer.getType());
      Value descriptor = MemRefDescriptor::fromStaticShape(
          b, loc, converter, memrefType, address);
      map.map(buffer, UnrealizedConversionCastOp::create(b, loc, memrefType,
                                                         descriptor)
                          .getResult(0));
    }
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op.getRegion(), above);
    above.insert(op->getOperands().begin(), op->getOperands().end());
    for (Value value : above)
      if (!map.contains(value))
        map.map(value, b.clone(*value.getDefiningOp())->getResult(0));
    Value begin = arith::IndexCastOp::create(b, loc, index,
                                             entry->getArgument(1));
    Value end = arith::IndexCastOp::create(b, loc, index,
                                           entry->getArgument(2));
    auto nest = cast<scf::ParallelOp>(b.clone(*op, map));
    nest->setOperand(0, begin);
    nest->setOperand(nest.getNumLoops(), end);
    func::ReturnOp::create(b, loc);

    // The call: the buffers' addresses into a stack array at the caller's
    // entry (not in a loop, where each alloca would grow the stack).
    OpBuilder at(op);
    Value ctxPtr;
    if (buffers.empty()) {
      ctxPtr = LLVM::ZeroOp::create(at, loc, ptr);
    } else {
      OpBuilder head = OpBuilder::atBlockBegin(&parent.getBody().front());
      Value array = memref::AllocaOp::create(
          head, loc, MemRefType::get({int64_t(buffers.size())}, i64));
      for (auto [k, buffer] : llvm::enumerate(buffers)) {
        Value address =
            memref::ExtractAlignedPointerAsIndexOp::create(at, loc, buffer);
        memref::StoreOp::create(
            at, loc, arith::IndexCastOp::create(at, loc, i64, address), array,
            ValueRange{arith::ConstantIndexOp::create(at, loc, k)});
      }
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(at, loc, array);
      Value baseI64 = arith::IndexCastOp::create(at, loc, i64, base);
      ctxPtr = LLVM::IntToPtrOp::create(at, loc, ptr, baseI64);
    }
    Value fnPtr = func::ConstantOp::create(at, loc, type,
                                           FlatSymbolRefAttr::get(fn));
    auto bound = [&](Value v) {
      return arith::ConstantIntOp::create(at, loc, i64,
                                          *getConstantIntValue(v));
    };
    ds::runtime_call::call(at, loc, parent->getParentOfType<ModuleOp>(),
                           symbols, "dsrt_parallel_for",
                           {fnPtr, ctxPtr, bound(op.getLowerBound()[0]),
                            bound(op.getUpperBound()[0])},
                           IntegerType::get(ctx, 32));
    op.erase();
  }
};

} // namespace
