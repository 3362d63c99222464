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
#include "RuntimeCall.h"
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

/// Chunks along a leading dim are contiguous; others would need a
/// transpose the runtime does not do.
LogicalResult checkLeadingDim(Operation *op, RankedTensorType type,
                              int64_t dim) {
  for (int64_t d = 0; d < dim; ++d)
    if (type.getDimSize(d) != 1)
      return op->emitOpError()
             << "lowers to the runtime only along the leading non-unit dim "
                "(dim "
             << dim << " has outer dims that are not 1)";
  return success();
}

/// The analysis answers of an op that never writes its tensor operands and
/// whose results (if any) are fresh buffers: it only reads them, or (a
/// marker) not even that.
template <typename Derived, typename OpTy, bool Reads>
struct NoAliasModel : BufferizableOpInterface::ExternalModel<Derived, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return Reads;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
};

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
struct OutOfPlaceModel : NoAliasModel<OutOfPlaceModel<OpTy>, OpTy, true> {
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
    if (failed(checkLeadingDim(op, inType, dim)))
      return failure();
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
struct ReleaseModel : NoAliasModel<ReleaseModel, dist::ReleaseOp, false> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    rewriter.eraseOp(op);
    return success();
  }
};

/// A fresh contiguous copy of `buf`: what an asynchronous operation sends
/// from, so that the operand's own buffer may be reused while it is in
/// flight (the analysis sees the operand's last read at the start).
FailureOr<Value> snapshot(RewriterBase &rewriter, Location loc, Value buf,
                          const BufferizationOptions &options) {
  auto type = cast<MemRefType>(buf.getType());
  auto plain = MemRefType::get(type.getShape(), type.getElementType());
  FailureOr<Value> copy = options.createAlloc(rewriter, loc, plain, {});
  if (succeeded(copy))
    memref::CopyOp::create(rewriter, loc, buf, *copy);
  return copy;
}

/// The *_start collectives and send_start/recv_start: dsdist.comm_start on
/// a snapshot of the operand into a fresh buffer, which the matching
/// dsdist.wait delivers.
template <typename OpTy>
struct StartModel : NoAliasModel<StartModel<OpTy>, OpTy, true> {

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto typed = cast<OpTy>(op);
    Location loc = op->getLoc();
    MLIRContext *ctx = op->getContext();
    dist::CollectiveKind collective;
    dist::ReductionKindAttr kind;
    ArrayAttr axes;
    int64_t root = 0, offset = 0, dim = 0;
    if constexpr (std::is_same_v<OpTy, dist::SendStartOp> ||
                  std::is_same_v<OpTy, dist::RecvStartOp>) {
      axes = ArrayAttr::get(ctx, {typed.getAxisAttr()});
      offset = typed.getOffset();
      collective = std::is_same_v<OpTy, dist::SendStartOp>
                       ? dist::CollectiveKind::send
                       : dist::CollectiveKind::recv;
    } else {
      axes = typed.getAxes();
      if constexpr (std::is_same_v<OpTy, dist::AllReduceStartOp>) {
        collective = dist::CollectiveKind::all_reduce;
        kind = typed.getKindAttr();
      } else if constexpr (std::is_same_v<OpTy, dist::BroadcastStartOp>) {
        collective = dist::CollectiveKind::broadcast;
        root = typed.getRoot();
      } else if constexpr (std::is_same_v<OpTy, dist::AllGatherStartOp>) {
        collective = dist::CollectiveKind::all_gather;
        dim = typed.getDim();
      } else if constexpr (std::is_same_v<OpTy, dist::ReduceScatterStartOp>) {
        collective = dist::CollectiveKind::reduce_scatter;
        kind = typed.getKindAttr();
        dim = typed.getDim();
      } else {
        collective = dist::CollectiveKind::all_to_all;
        if (typed.getSplitDim() != typed.getConcatDim())
          return op->emitOpError()
                 << "lowers to the runtime only with split_dim == concat_dim";
        dim = typed.getSplitDim();
      }
      if (failed(checkLeadingDim(
              op, cast<RankedTensorType>(typed.getInput().getType()), dim)))
        return failure();
    }
    Value in, out;
    if constexpr (!std::is_same_v<OpTy, dist::RecvStartOp>) {
      FailureOr<Value> buf =
          getBuffer(rewriter, typed.getInput(), options, state);
      if (failed(buf))
        return failure();
      FailureOr<Value> copy = snapshot(rewriter, loc, *buf, options);
      if (failed(copy))
        return failure();
      in = *copy;
    }
    auto handleType = cast<dist::HandleType>(typed.getHandle().getType());
    // all_reduce reads the snapshot and writes a fresh buffer (so the
    // delivered buffer is never a copy target); broadcast and send work
    // on the snapshot itself.
    bool inPlace = collective == dist::CollectiveKind::broadcast ||
                   collective == dist::CollectiveKind::send;
    if (inPlace) {
      out = in;
    } else {
      RankedTensorType payload = handleType.getPayload();
      FailureOr<Value> alloc = options.createAlloc(
          rewriter, loc,
          MemRefType::get(payload.getShape(), payload.getElementType()), {});
      if (failed(alloc))
        return failure();
      out = *alloc;
      if (!in)
        in = out;
    }
    Value handle = dist::CommStartOp::create(
        rewriter, loc, dist::HandleType::get(ctx), collective, kind, in, out,
        axes, root, offset);
    replaceOpWithBufferizedValues(rewriter, op, handle);
    return success();
  }
};

/// dsdist.wait: completes the start and delivers its output buffer.
struct WaitModel : NoAliasModel<WaitModel, dist::WaitOp, false> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    auto wait = cast<dist::WaitOp>(op);
    auto start = wait.getHandle().getDefiningOp<dist::CommStartOp>();
    if (!start)
      return op->emitOpError()
             << "its handle must come straight from a *_start in the same "
                "function (not through control flow or a call) to lower to "
                "the runtime";
    SmallVector<Value> buffers = {start.getInput()};
    if (start.getOutput() != start.getInput())
      buffers.push_back(start.getOutput());
    dist::CommWaitOp::create(rewriter, op->getLoc(), start.getHandle(),
                             buffers);
    if (wait.getResult())
      replaceOpWithBufferizedValues(rewriter, op, start.getOutput());
    else
      rewriter.eraseOp(op);
    return success();
  }
};

/// Blocking send: reads its operand's buffer.
struct SendModel : NoAliasModel<SendModel, dist::SendOp, true> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto send = cast<dist::SendOp>(op);
    FailureOr<Value> buf = getBuffer(rewriter, send.getInput(), options, state);
    if (failed(buf))
      return failure();
    Value plain = contiguous(rewriter, op->getLoc(), *buf);
    dist::CommOp::create(rewriter, op->getLoc(), dist::CollectiveKind::send,
                         dist::ReductionKindAttr(), plain, plain,
                         ArrayAttr::get(op->getContext(), {send.getAxisAttr()}),
                         0, send.getOffset());
    rewriter.eraseOp(op);
    return success();
  }
};

/// Blocking recv: into a fresh buffer.
struct RecvModel
    : BufferizableOpInterface::ExternalModel<RecvModel, dist::RecvOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &) const {
    auto recv = cast<dist::RecvOp>(op);
    RankedTensorType type = recv.getType();
    FailureOr<Value> out = options.createAlloc(
        rewriter, op->getLoc(),
        MemRefType::get(type.getShape(), type.getElementType()), {});
    if (failed(out))
      return failure();
    dist::CommOp::create(rewriter, op->getLoc(), dist::CollectiveKind::recv,
                         dist::ReductionKindAttr(), *out, *out,
                         ArrayAttr::get(op->getContext(), {recv.getAxisAttr()}),
                         0, recv.getOffset());
    replaceOpWithBufferizedValues(rewriter, op, *out);
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

  /// dsdist.comm (blocking) or dsdist.comm_start (async: the request goes
  /// into `requests` for the matching dsdist.comm_wait).
  template <typename OpTy> LogicalResult rewrite(OpTy op) {
    constexpr bool async = std::is_same_v<OpTy, dist::CommStartOp>;
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

    Value comm = call(b, loc, "dsrt_comm_axes", {i64c(int64_t(mask))}, ptr);
    Value in = pointer(b, loc, op.getInput());
    Value out = pointer(b, loc, op.getOutput());
    int64_t inCount = inType.getNumElements();
    int64_t outCount = outType.getNumElements();
    int op32 = op.getKind() ? int(*op.getKind()) : 0;
    // The axis is a ring (the interleaved schedule's last stage sends on
    // to the first): (rank + offset + size) mod size, |offset| < size.
    auto peer = [&]() -> Value {
      Value rank = call(b, loc, "dsrt_comm_rank", {comm}, i32);
      std::optional<int64_t> size =
          dist::getGroupSize(op, op->template getAttrOfType<ArrayAttr>("axes"));
      if (!size)
        return arith::AddIOp::create(b, loc, rank, i32c(op.getOffset()));
      Value shifted =
          arith::AddIOp::create(b, loc, rank, i32c(op.getOffset() + *size));
      return arith::RemSIOp::create(b, loc, shifted, i32c(*size));
    };
    // The async forms take one more argument: where to put the request,
    // a stack slot allocated once at function entry.
    Value slot;
    if constexpr (async) {
      auto fn = op->template getParentOfType<func::FuncOp>();
      OpBuilder entry = OpBuilder::atBlockBegin(&fn.getBody().front());
      Value one =
          arith::ConstantOp::create(entry, loc, entry.getI64IntegerAttr(1));
      slot = LLVM::AllocaOp::create(entry, loc, ptr, ptr, one);
    }
    auto collective = [&](StringRef name, SmallVector<Value> args) -> Value {
      if constexpr (async)
        args.push_back(slot);
      return call(b, loc, async ? (name + "_start").str() : name.str(), args,
                  i32);
    };

    Value status;
    switch (op.getCollective()) {
    case dist::CollectiveKind::all_reduce:
      status = collective("dsrt_all_reduce", {comm, in, out, i64c(inCount),
                                              i32c(dtype), i32c(op32)});
      break;
    case dist::CollectiveKind::all_gather:
      status = collective("dsrt_all_gather",
                          {comm, in, out, i64c(outCount), i32c(dtype)});
      break;
    case dist::CollectiveKind::reduce_scatter:
      status = collective("dsrt_reduce_scatter", {comm, in, out, i64c(inCount),
                                                  i32c(dtype), i32c(op32)});
      break;
    case dist::CollectiveKind::all_to_all:
      status = collective(
          "dsrt_all_to_all",
          {comm, in, out, i64c(inCount / groupSize(op)), i32c(dtype)});
      break;
    case dist::CollectiveKind::broadcast:
      status = collective("dsrt_broadcast", {comm, out, i64c(outCount),
                                             i32c(dtype), i32c(op.getRoot())});
      break;
    case dist::CollectiveKind::send:
      status = collective(
          "dsrt_send", {comm, in, i64c(inCount), i32c(dtype), peer(), i32c(0)});
      break;
    case dist::CollectiveKind::recv:
      status = collective("dsrt_recv", {comm, out, i64c(outCount), i32c(dtype),
                                        peer(), i32c(0)});
      break;
    case dist::CollectiveKind::shard: {
      if constexpr (async)
        return op.emitOpError() << "shard has no asynchronous form";
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
      check(b, loc, status);
    if constexpr (async) {
      requests[op.getHandle()] = LLVM::LoadOp::create(b, loc, ptr, slot);
      // Its waits still use the handle: erased after them (eraseStarts).
      starts.push_back(op);
    } else {
      op.erase();
    }
    ++count;
    return success();
  }

  /// The lowered starts, once their waits are lowered too.
  void eraseStarts() {
    for (Operation *op : starts)
      op->erase();
    starts.clear();
    requests.clear();
  }

  LogicalResult rewrite(dist::CommWaitOp op) {
    auto it = requests.find(op.getHandle());
    if (it == requests.end())
      return op.emitOpError()
             << "its handle does not come from a dsdist.comm_start lowered "
                "in this module";
    OpBuilder b(op);
    Value status =
        call(b, op.getLoc(), "dsrt_wait", {it->second}, b.getI32Type());
    check(b, op.getLoc(), status);
    op.erase();
    return success();
  }

  int64_t count = 0;

private:
  int64_t groupSize(Operation *op) {
    return dist::getGroupSize(op, op->getAttrOfType<ArrayAttr>("axes"))
        .value_or(1);
  }

  Value pointer(OpBuilder &b, Location loc, Value memref) {
    return runtime_call::elementPointer(b, loc, memref);
  }

  void check(OpBuilder &b, Location loc, Value status) {
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    call(b, loc, "dsrt_check", {status, LLVM::ZeroOp::create(b, loc, ptr)},
         b.getI32Type());
  }

  Value call(OpBuilder &b, Location loc, StringRef name, ValueRange args,
             Type result) {
    return runtime_call::call(b, loc, module, symbols, name, args, result);
  }

  ModuleOp module;
  SymbolTable symbols;
  DenseMap<Value, Value> requests;
  SmallVector<Operation *> starts;
};

struct LowerCommToRuntimePass
    : ds::impl::LowerCommToRuntimeBase<LowerCommToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    SmallVector<dist::CommWaitOp> waits;
    module.walk([&](Operation *op) {
      if (isa<dist::CommOp, dist::CommStartOp>(op))
        ops.push_back(op);
      else if (auto wait = dyn_cast<dist::CommWaitOp>(op))
        waits.push_back(wait);
    });
    CommRewriter rewriter(module);
    // Starts before waits: a wait needs its start's request.
    for (Operation *op : ops) {
      LogicalResult ok = success();
      if (auto c = dyn_cast<dist::CommOp>(op))
        ok = rewriter.rewrite(c);
      else
        ok = rewriter.rewrite(cast<dist::CommStartOp>(op));
      if (failed(ok))
        return signalPassFailure();
    }
    for (dist::CommWaitOp wait : waits)
      if (failed(rewriter.rewrite(wait)))
        return signalPassFailure();
    rewriter.eraseStarts();
    if (report)
      emitRemark(module.getLoc())
          << "ds-lower-comm-to-runtime: " << rewriter.count
          << " communication(s) call libdsrt";
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
    dist::AllReduceStartOp::attachInterface<StartModel<dist::AllReduceStartOp>>(
        *ctx);
    dist::BroadcastStartOp::attachInterface<StartModel<dist::BroadcastStartOp>>(
        *ctx);
    dist::AllGatherStartOp::attachInterface<StartModel<dist::AllGatherStartOp>>(
        *ctx);
    dist::ReduceScatterStartOp::attachInterface<
        StartModel<dist::ReduceScatterStartOp>>(*ctx);
    dist::AllToAllStartOp::attachInterface<StartModel<dist::AllToAllStartOp>>(
        *ctx);
    dist::SendStartOp::attachInterface<StartModel<dist::SendStartOp>>(*ctx);
    dist::RecvStartOp::attachInterface<StartModel<dist::RecvStartOp>>(*ctx);
    dist::WaitOp::attachInterface<WaitModel>(*ctx);
    dist::SendOp::attachInterface<SendModel>(*ctx);
    dist::RecvOp::attachInterface<RecvModel>(*ctx);
  });
}
