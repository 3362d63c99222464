//===- ProfileSpans.cpp - The ds-profile-spans pass -----------------------===//
//
// A step is one compiled function: timing it from outside says how long it
// took, not where the time went. Each kernel gets profile calls around it
// that carry what the compiler knows of it (its kind, FLOPs and bytes from
// its shapes), so the runtime can say how close each kind runs to the
// machine's limits.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"
#include "ds/Support/RuntimeSymbols.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PROFILESPANS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

// dsrt_profile_class in runtime/include/dsrt/dsrt.h, in its order: the
// runtime reads the number.
enum Class : int32_t {
  Gemm,
  Elementwise,
  Reduction,
  Copy,
  Fill,
  Collective,
  Optimizer
};

StringRef className(Class c) {
  static const char *const names[] = {"gemm",     "elementwise", "reduction",
                                      "copy",     "fill",        "collective",
                                      "optimizer"};
  return names[c];
}

/// The class of a call into libdsrt, or none for the calls that are no
/// kernel (dsrt_check, dsrt_comm_rank, ...).
std::optional<Class> classOfCallee(StringRef callee) {
  if (!callee.consume_front("dsrt_"))
    return std::nullopt;
  callee.consume_back("_start");
  callee.consume_back("_multi");
  return llvm::StringSwitch<std::optional<Class>>(callee)
      .Cases({"sgemm", "sgemm_strided_batched", "gemm_bf16",
              "gemm_bf16_strided_batched"},
             Gemm)
      .Cases({"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
              "broadcast", "send", "recv", "wait"},
             Collective)
      .Cases({"adam", "lamb", "sgd"}, Optimizer)
      .Default(std::nullopt);
}

/// A count known statically, or read at run time (a dynamic size); kept
/// as a number while it can be, so static shapes give one constant.
struct Count {
  int64_t known = 0;
  Value value; ///< i64, when not known
};

/// `v` when the IR says it statically: a constant, or (through index
/// casts) a static size of a memref's strided metadata, which is how the
/// BLAS rewrite passes M, N and K.
std::optional<int64_t> staticValue(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
    return staticValue(cast.getIn());
  auto md = v.getDefiningOp<memref::ExtractStridedMetadataOp>();
  if (!md)
    return std::nullopt;
  auto type = cast<MemRefType>(md.getSource().getType());
  for (auto [d, size] : llvm::enumerate(md.getSizes()))
    if (size == v && !type.isDynamicDim(d))
      return type.getDimSize(d);
  return std::nullopt;
}

/// What one profile call carries, computed before the kernel from its
/// operands.
struct Span {
  Class cls;
  std::string label; ///< "elementwise 128x768"
  Count flops, bytes;
};

class SpanBuilder {
public:
  SpanBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value materialize(Count c) {
    return c.value ? c.value
                   : arith::ConstantIntOp::create(b, loc, c.known, 64);
  }
  Count of(Value v) {
    if (std::optional<int64_t> c = staticValue(v))
      return {*c, nullptr};
    if (v.getType().isIndex())
      v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
    return {0, v};
  }
  Count mul(Count x, Count y) {
    if (!x.value && !y.value)
      return {x.known * y.known, nullptr};
    if (!x.value && x.known == 1)
      return y;
    if (!y.value && y.known == 1)
      return x;
    return {0, arith::MulIOp::create(b, loc, materialize(x), materialize(y))};
  }
  Count add(Count x, Count y) {
    if (!x.value && !y.value)
      return {x.known + y.known, nullptr};
    if (!x.value && x.known == 0)
      return y;
    if (!y.value && y.known == 0)
      return x;
    return {0, arith::AddIOp::create(b, loc, materialize(x), materialize(y))};
  }
  static Count n(int64_t v) { return {v, nullptr}; }

  /// A memref's size in bytes; 0 for one whose elements have no byte size.
  Count bytesOf(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.getElementType().isIntOrFloat() ||
        type.getElementTypeBitWidth() % 8)
      return n(0);
    Count bytes = n(type.getElementTypeBitWidth() / 8);
    for (int64_t d = 0; d < type.getRank(); ++d)
      bytes = mul(bytes, type.isDynamicDim(d)
                             ? of(memref::DimOp::create(b, loc, memref, d))
                             : n(type.getDimSize(d)));
    return bytes;
  }

  /// The span of a linalg op: its class from its iterators and body, FLOPs
  /// per iteration from the body.
  Span linalgSpan(linalg::LinalgOp op) {
    Count iterations = n(1);
    std::string dims;
    for (auto [i, size] : llvm::enumerate(op.getStaticLoopRanges())) {
      iterations =
          mul(iterations,
              ShapedType::isDynamic(size) ? of(loopSize(op, i)) : n(size));
      dims += (dims.empty() ? "" : "x") +
              (ShapedType::isDynamic(size) ? "?" : std::to_string(size));
    }
    Count bytes = n(0);
    for (OpOperand &operand : op->getOpOperands())
      if (isa<MemRefType>(operand.get().getType()))
        bytes = add(bytes, bytesOf(operand.get()));
    Span span{classOf(op), "", n(0), bytes};
    span.flops = mul(iterations, n(span.cls == Gemm ? 2 : floatOps(op)));
    span.label =
        (className(span.cls) + " " + (dims.empty() ? "1" : dims)).str();
    return span;
  }

  Span copySpan(memref::CopyOp op) {
    Count bytes = add(bytesOf(op.getSource()), bytesOf(op.getTarget()));
    return {Copy, "copy", n(0), bytes};
  }

  /// dsrt_sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
  /// ldc) and dsrt_sgemm_strided_batched(..., batchCount) last (and their
  /// dsrt_gemm_bf16 forms): 2·M·N·K
  /// FLOPs per problem, each matrix read or written once.
  Span callSpan(func::CallOp call, Class cls) {
    StringRef callee = call.getCallee();
    callee.consume_front("dsrt_");
    if (cls != Gemm)
      return {cls, callee.str(), n(0), n(0)};
    bool batched = callee.ends_with("_batched");
    // bf16 operands: half the bytes of A and B.
    bool bf16 = callee.starts_with("gemm_bf16");
    SmallVector<Value> sizes = {call.getOperand(2), call.getOperand(3),
                                call.getOperand(4)};
    if (batched)
      sizes.insert(sizes.begin(), call.getOperands().back());
    std::string dims;
    for (Value v : sizes) {
      std::optional<int64_t> c = staticValue(v);
      dims += (dims.empty() ? "" : "x") + (c ? std::to_string(*c) : "?");
    }
    Count m = of(call.getOperand(2)), nn = of(call.getOperand(3)),
          k = of(call.getOperand(4));
    Count batch = batched ? of(call.getOperands().back()) : n(1);
    Count flops = mul(mul(mul(mul(n(2), m), nn), k), batch);
    Count operands = mul(add(mul(m, k), mul(k, nn)), n(bf16 ? 2 : 4));
    Count bytes = mul(add(operands, mul(mul(m, nn), n(4))), batch);
    return {Gemm, (callee + " " + dims).str(), flops, bytes};
  }

private:
  /// The run-time trip count of loop `i`: the size of the first operand
  /// dimension it indexes.
  Value loopSize(linalg::LinalgOp op, unsigned i) {
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (auto [d, expr] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(expr);
            dim && dim.getPosition() == i)
          return memref::DimOp::create(b, loc, operand.get(), d);
    }
    return arith::ConstantIndexOp::create(b, loc, 1);
  }

  static Class classOf(linalg::LinalgOp op) {
    if (isa<linalg::FillOp>(op.getOperation()))
      return Fill;
    // A matrix product has rows and columns; a contraction without them
    // (the row sums of P·dP in a softmax gradient) is a reduction.
    if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()))
      return Gemm;
    if (linalg::isaContractionOpInterface(op)) {
      FailureOr<linalg::ContractionDimensions> dims =
          linalg::inferContractionDims(op);
      if (succeeded(dims) && !dims->m.empty() && !dims->n.empty())
        return Gemm;
    }
    if (op.getNumReductionLoops() > 0)
      return Reduction;
    // A body that only yields an input: a copy, transpose or broadcast.
    Block *body = op.getBlock();
    if (isa<linalg::CopyOp, linalg::TransposeOp, linalg::BroadcastOp>(
            op.getOperation()) ||
        (body && body->getOperations().size() == 1 &&
         llvm::all_of(body->getTerminator()->getOperands(), [&](Value v) {
           auto arg = dyn_cast<BlockArgument>(v);
           return arg && arg.getOwner() == body;
         })))
      return Copy;
    return Elementwise;
  }

  /// Float arith and math ops per iteration (a select or compare is none).
  static int64_t floatOps(linalg::LinalgOp op) {
    int64_t n = 0;
    op->walk([&](Operation *inner) {
      if (inner == op.getOperation() || inner->getNumResults() != 1 ||
          !isa<FloatType>(inner->getResult(0).getType()))
        return;
      if (isa<math::MathDialect>(inner->getDialect()) ||
          isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
              arith::RemFOp, arith::NegFOp, arith::MaximumFOp,
              arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(inner))
        ++n;
    });
    return n;
  }

  OpBuilder &b;
  Location loc;
};

class Bracketer {
public:
  explicit Bracketer(ModuleOp module) : module(module), symbols(module) {
    Builder b(module.getContext());
    auto ptr = LLVM::LLVMPointerType::get(module.getContext());
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    begin = declareRuntimeFunction(module, symbols, "dsrt_profile_begin",
                                   b.getFunctionType({}, {}));
    end = declareRuntimeFunction(module, symbols, "dsrt_profile_end",
                                 b.getFunctionType({ptr, i32, i64, i64}, {}));
  }

  /// Brackets `op`, the `ordinal`th kernel of `fn`; `build` makes its span
  /// before the kernel runs (its operands' sizes are read there).
  void around(Operation *op, StringRef fn, int64_t ordinal,
              llvm::function_ref<Span(SpanBuilder &)> build) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    SpanBuilder spans(b, loc);
    Span span = build(spans);
    func::CallOp::create(b, loc, begin, ValueRange{});
    b.setInsertionPointAfter(op);
    std::string name =
        (fn + ":" + std::to_string(ordinal) + " " + span.label).str();
    // The runtime keys a kernel by this address.
    Value namePtr = LLVM::AddressOfOp::create(
        b, loc, createCString(module, symbols, name, "ds_profile_name"));
    Value cls = arith::ConstantIntOp::create(b, loc, span.cls, 32);
    func::CallOp::create(b, loc, end,
                         ValueRange{namePtr, cls, spans.materialize(span.flops),
                                    spans.materialize(span.bytes)});
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  func::FuncOp begin, end;
};

struct ProfileSpansPass : ds::impl::ProfileSpansBase<ProfileSpansPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Bracketer bracketer(module);
    SmallVector<func::FuncOp> fns(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : fns) {
      if (fn.isExternal())
        continue;
      SmallVector<Operation *> kernels;
      fn.walk([&](Operation *op) {
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
          if (linalgOp.hasPureBufferSemantics() &&
              !op->getParentOfType<linalg::LinalgOp>())
            kernels.push_back(op);
        } else if (isa<memref::CopyOp>(op)) {
          kernels.push_back(op);
        } else if (auto call = dyn_cast<func::CallOp>(op)) {
          if (classOfCallee(call.getCallee()))
            kernels.push_back(op);
        }
      });
      for (auto [ordinal, op] : llvm::enumerate(kernels)) {
        bracketer.around(op, fn.getName(), ordinal, [&](SpanBuilder &s) {
          if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
            return s.linalgSpan(linalgOp);
          if (auto copy = dyn_cast<memref::CopyOp>(op))
            return s.copySpan(copy);
          auto call = cast<func::CallOp>(op);
          return s.callSpan(call, *classOfCallee(call.getCallee()));
        });
        ++numKernels;
      }
    }
  }
};

} // namespace
