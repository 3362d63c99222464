//===- LowerCommToRuntime.cpp - dsdist collectives to libdsrt calls -------===//
//
// Two steps. Bufferization turns each tensor collective into `dsdist.comm`
// on buffers (the external models below): all_reduce and broadcast work in
// place on their operand's buffer, the reshaping ones write a fresh one.
// After deallocation is placed, ds-lower-comm-to-runtime turns each
// `dsdist.comm` into dsrt_comm_axes + the dsrt_* collective + dsrt_check,
// with raw pointers, as ds-lower-to-runtime does for BLAS.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"
#include "dsdist/DistOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWERCOMMTORUNTIME
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::bufferization;
namespace dist = mlir::ds::dist;

namespace {

//===----------------------------------------------------------------------===//
// Bufferization
//===----------------------------------------------------------------------===//

/// A contiguous row-major copy of `buf` unless it already is one: the
/// runtime reads and writes plain arrays.
Value contiguous(RewriterBase &rewriter, Location loc, Value buf) {
  auto type = cast<MemRefType>(buf.getType());
  if (type.getLayout().isIdentity())
    return buf;
  auto plain = MemRefType::get(type.getShape(), type.getElementType());
  Value copy = memref::AllocOp::create(rewriter, loc, plain);
  memref::CopyOp::create(rewriter, loc, buf, copy);
  return copy;
}

/// all_reduce, broadcast: in place on the operand's buffer.
template <typename OpTy>
struct InPlaceModel
    : BufferizableOpInterface::ExternalModel<InPlaceModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto typed = cast<OpTy>(op);
    FailureOr<Value> buf =
        getBuffer(rewriter, typed.getInput(), options, state);
    if (failed(buf))
      return failure();
    Location loc = op->getLoc();
    Value plain = contiguous(rewriter, loc, *buf);
    dist::ReductionKindAttr kind;
    int64_t root = 0;
    dist::CollectiveKind collective = dist::CollectiveKind::broadcast;
    if constexpr (std::is_same_v<OpTy, dist::AllReduceOp>) {
      kind = typed.getKindAttr();
      collective = dist::CollectiveKind::all_reduce;
    } else {
      root = typed.getRoot();
    }
    dist::CommOp::create(rewriter, loc, collective, kind, plain, plain,
                         typed.getAxes(), root);
    if (plain != *buf)
      memref::CopyOp::create(rewriter, loc, plain, *buf);
    replaceOpWithBufferizedValues(rewriter, op, *buf);
    return success();
  }
};

/// all_gather, reduce_scatter, all_to_all, shard: a fresh result buffer.
template <typename OpTy>
struct OutOfPlaceModel
    : BufferizableOpInterface::ExternalModel<OutOfPlaceModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  static dist::CollectiveKind collectiveOf() {
    if constexpr (std::is_same_v<OpTy, dist::AllGatherOp>)
      return dist::CollectiveKind::all_gather;
    else if constexpr (std::is_same_v<OpTy, dist::ReduceScatterOp>)
      return dist::CollectiveKind::reduce_scatter;
    else if constexpr (std::is_same_v<OpTy, dist::AllToAllOp>)
      return dist::CollectiveKind::all_to_all;
    else
      return dist::CollectiveKind::shard;
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto typed = cast<OpTy>(op);
    // Chunks along a leading dim are contiguous; other dims would need a
    // transpose the runtime does not do.
    auto inType = cast<RankedTensorType>(typed.getInput().getType());
    int64_t dim = 0;
    if constexpr (std::is_same_v<OpTy, dist::AllToAllOp>) {
      if (typed.getSplitDim() != typed.getConcatDim())
        return op->emitOpError()
               << "lowers to the runtime only with split_dim == concat_dim";
      dim = typed.getSplitDim();
    } else {
      dim = typed.getDim();
    }
    for (int64_t d = 0; d < dim; ++d)
      if (inType.getDimSize(d) != 1)
        return op->emitOpError()
               << "lowers to the runtime only along the leading non-unit "
                  "dim (dim "
               << dim << " has outer dims that are not 1)";
    FailureOr<Value> buf =
        getBuffer(rewriter, typed.getInput(), options, state);
    if (failed(buf))
      return failure();
    Location loc = op->getLoc();
    Value in = contiguous(rewriter, loc, *buf);
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    auto outType =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    FailureOr<Value> out = options.createAlloc(rewriter, loc, outType, {});
    if (failed(out))
      return failure();
    dist::ReductionKindAttr kind;
    if constexpr (std::is_same_v<OpTy, dist::ReduceScatterOp>)
      kind = typed.getKindAttr();
    dist::CommOp::create(rewriter, loc, collectiveOf(), kind, in, *out,
                         typed.getAxes(), 0);
    replaceOpWithBufferizedValues(rewriter, op, *out);
    return success();
  }
};

/// release: buffers are planned by liveness; the marker has done its job.
struct ReleaseModel
    : BufferizableOpInterface::ExternalModel<ReleaseModel, dist::ReleaseOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// dsdist.comm -> dsrt_* calls
//===----------------------------------------------------------------------===//

/// dsrt_dtype of an element type, or -1.
int dtypeCode(Type t) {
  if (t.isF32())
    return 0;
  if (t.isF16())
    return 1;
  if (t.isBF16())
    return 2;
  if (t.isSignlessInteger(32))
    return 3;
  if (t.isSignlessInteger(64))
    return 4;
  return -1;
}

class CommRewriter {
public:
  explicit CommRewriter(ModuleOp module) : module(module), symbols(module) {}

  LogicalResult rewrite(dist::CommOp op, int64_t &count) {
    dist::GridAttr grid = dist::lookupGrid(op);
    if (!grid)
      return op.emitOpError() << "needs a dsdist.grid on the module";
    uint64_t mask = 0;
    for (Attribute axis : op.getAxes()) {
      auto it = llvm::find(grid.getAxes(), cast<StringAttr>(axis));
      if (it == grid.getAxes().end())
        return op.emitOpError() << "axis " << axis << " is not on the grid";
      mask |= uint64_t(1) << (it - grid.getAxes().begin());
    }
    auto inType = cast<MemRefType>(op.getInput().getType());
    auto outType = cast<MemRefType>(op.getOutput().getType());
    int dtype = dtypeCode(inType.getElementType());
    if (dtype < 0)
      return op.emitOpError() << "element type " << inType.getElementType()
                              << " has no runtime collective (f32, f16, "
                                 "bf16, i32, i64)";
    if (!inType.hasStaticShape() || !outType.hasStaticShape())
      return op.emitOpError() << "needs static shapes";

    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64c = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    auto i32c = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
    };
    auto pointer = [&](Value memref) -> Value {
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value baseI64 = arith::IndexCastOp::create(b, loc, i64, base);
      Value raw = LLVM::IntToPtrOp::create(b, loc, ptr, baseI64);
      Value off = arith::IndexCastOp::create(b, loc, i64, md.getOffset());
      return LLVM::GEPOp::create(
          b, loc, ptr, cast<MemRefType>(memref.getType()).getElementType(), raw,
          ValueRange{off});
    };

    Value comm = call(b, loc, "dsrt_comm_axes", {i64c(int64_t(mask))}, ptr);
    Value in = pointer(op.getInput()), out = pointer(op.getOutput());
    int64_t inCount = inType.getNumElements();
    int64_t outCount = outType.getNumElements();
    int op32 = op.getKind() ? int(*op.getKind()) : 0;
    Value status;
    StringRef what;
    switch (op.getCollective()) {
    case dist::CollectiveKind::all_reduce:
      what = "dsrt_all_reduce";
      status =
          call(b, loc, what,
               {comm, in, out, i64c(inCount), i32c(dtype), i32c(op32)}, i32);
      break;
    case dist::CollectiveKind::all_gather:
      what = "dsrt_all_gather";
      status =
          call(b, loc, what, {comm, in, out, i64c(outCount), i32c(dtype)}, i32);
      break;
    case dist::CollectiveKind::reduce_scatter:
      what = "dsrt_reduce_scatter";
      status =
          call(b, loc, what,
               {comm, in, out, i64c(inCount), i32c(dtype), i32c(op32)}, i32);
      break;
    case dist::CollectiveKind::all_to_all:
      what = "dsrt_all_to_all";
      status = call(b, loc, what,
                    {comm, in, out, i64c(inCount / groupSize(op)), i32c(dtype)},
                    i32);
      break;
    case dist::CollectiveKind::broadcast:
      what = "dsrt_broadcast";
      status = call(
          b, loc, what,
          {comm, out, i64c(outCount), i32c(dtype), i32c(op.getRoot())}, i32);
      break;
    case dist::CollectiveKind::shard: {
      // No communication: copy this rank's slice.
      Value rank = call(b, loc, "dsrt_comm_rank", {comm}, i32);
      Value offset = arith::MulIOp::create(
          b, loc, arith::ExtSIOp::create(b, loc, i64, rank), i64c(outCount));
      Value src = LLVM::GEPOp::create(b, loc, ptr, inType.getElementType(), in,
                                      ValueRange{offset});
      unsigned bytes = inType.getElementTypeBitWidth() / 8;
      LLVM::MemcpyOp::create(b, loc, out, src, i64c(outCount * bytes),
                             /*isVolatile=*/false);
      break;
    }
    }
    if (status)
      call(b, loc, "dsrt_check", {status, LLVM::ZeroOp::create(b, loc, ptr)},
           i32);
    op.erase();
    ++count;
    return success();
  }

private:
  int64_t groupSize(dist::CommOp op) {
    return dist::getGroupSize(op, op.getAxes()).value_or(1);
  }

  Value call(OpBuilder &b, Location loc, StringRef name, ValueRange args,
             Type result) {
    auto type = FunctionType::get(b.getContext(), ValueRange(args).getTypes(),
                                  {result});
    auto fn = symbols.lookup<func::FuncOp>(name);
    if (!fn) {
      OpBuilder top(module.getContext());
      top.setInsertionPointToStart(module.getBody());
      fn = func::FuncOp::create(top, module.getLoc(), name, type);
      fn.setPrivate();
      symbols.insert(fn);
    }
    return func::CallOp::create(b, loc, fn, args).getResult(0);
  }

  ModuleOp module;
  SymbolTable symbols;
};

struct LowerCommToRuntimePass
    : ds::impl::LowerCommToRuntimeBase<LowerCommToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<dist::CommOp> ops;
    module.walk([&](dist::CommOp op) { ops.push_back(op); });
    CommRewriter rewriter(module);
    int64_t count = 0;
    for (dist::CommOp op : ops)
      if (failed(rewriter.rewrite(op, count)))
        return signalPassFailure();
    if (report)
      emitRemark(module.getLoc())
          << "ds-lower-comm-to-runtime: " << count << " collective(s) call "
          << "libdsrt";
  }
};

} // namespace

void ds::registerDistBufferizationModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, dist::DistDialect *) {
    dist::AllReduceOp::attachInterface<InPlaceModel<dist::AllReduceOp>>(*ctx);
    dist::BroadcastOp::attachInterface<InPlaceModel<dist::BroadcastOp>>(*ctx);
    dist::AllGatherOp::attachInterface<OutOfPlaceModel<dist::AllGatherOp>>(
        *ctx);
    dist::ReduceScatterOp::attachInterface<
        OutOfPlaceModel<dist::ReduceScatterOp>>(*ctx);
    dist::AllToAllOp::attachInterface<OutOfPlaceModel<dist::AllToAllOp>>(*ctx);
    dist::ShardOp::attachInterface<OutOfPlaceModel<dist::ShardOp>>(*ctx);
    dist::ReleaseOp::attachInterface<ReleaseModel>(*ctx);
  });
}
