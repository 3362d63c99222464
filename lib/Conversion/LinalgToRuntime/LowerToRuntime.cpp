//===- LowerToRuntime.cpp - contractions on buffers -> dsrt_sgemm ---------===//
//
// Matches every linalg contraction on memrefs that BLAS can compute (one M,
// N, K dimension, at most one batch dimension, f32, a unit stride on one
// matrix dimension of each operand) and replaces it with a call to the fixed
// runtime symbol dsrt_sgemm / dsrt_sgemm_strided_batched (bf16 operands into
// an f32 result: dsrt_gemm_bf16 and its batched form). Leading dimensions,
// batch strides and offsets come from memref.extract_strided_metadata, so
// subviews and dynamic sizes work; only the choice of transposes is static.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

// How one operand is read: the BLAS transpose flag, and the memref dims that
// hold the leading dimension and the batch (-1: the operand has no batch
// dim, i.e. it is broadcast over the batch).
struct OperandLayout {
  bool trans = false;
  int64_t ldDim = -1;
  int64_t batchDim = -1;
};

// Position of loop dimension `loopDim` among the results of `map`, or -1.
int64_t resultPos(AffineMap map, unsigned loopDim) {
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == loopDim)
      return static_cast<int64_t>(i);
  return -1;
}

// The layout of a row x col matrix operand (plus optional batch dim), or a
// reason why BLAS cannot read it.
FailureOr<OperandLayout> matchOperand(Value memref, AffineMap map,
                                      unsigned rowLoop, unsigned colLoop,
                                      std::optional<unsigned> batchLoop,
                                      bool batchRequired, StringRef name,
                                      std::string &why) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t row = resultPos(map, rowLoop), col = resultPos(map, colLoop);
  int64_t batch = batchLoop ? resultPos(map, *batchLoop) : -1;
  int64_t expectedRank = 2 + (batch >= 0 ? 1 : 0);
  if (row < 0 || col < 0 || map.getNumResults() != expectedRank) {
    why =
        (name + " is not indexed by exactly its matrix (and batch) dims").str();
    return failure();
  }
  if (batchRequired && batch < 0) {
    why = (name + " has no batch dim").str();
    return failure();
  }
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset))) {
    why = (name + " has a non-strided layout").str();
    return failure();
  }
  auto isStatic = [](int64_t s) { return !ShapedType::isDynamic(s); };
  if (!isStatic(strides[row]) || !isStatic(strides[col])) {
    why = (name + " has a dynamic matrix stride").str();
    return failure();
  }
  OperandLayout layout;
  layout.batchDim = batch;
  // Row-major (unit stride along columns) reads as-is; column-major is the
  // transpose of a row-major matrix.
  if (strides[col] == 1) {
    layout.trans = false;
    layout.ldDim = row;
  } else if (strides[row] == 1) {
    layout.trans = true;
    layout.ldDim = col;
  } else {
    why = (name + " has no unit stride on a matrix dim").str();
    return failure();
  }
  return layout;
}

class BlasRewriter {
public:
  BlasRewriter(ModuleOp module, const LinalgToRuntimeOptions &options)
      : module(module), symbols(module), options(options) {}

  LogicalResult run(LinalgToRuntimeStats &stats) {
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && isMatmulLike(op))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      std::string why;
      FailureOr<bool> done = rewrite(op, why);
      if (failed(done))
        return failure();
      if (*done) {
        ++stats.blasCalls;
        continue;
      }
      ++stats.unmatched;
      if (options.report)
        emitRemark(op->getLoc()) << "left as loops: " << why;
    }
    SmallVector<memref::CopyOp> copies;
    module.walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp copy : copies)
      stats.copiesToLoops += rewriteStridedCopy(copy);
    if (options.report)
      emitRemark(module.getLoc()) << "ds-lower-to-runtime: " << stats.blasCalls
                                  << " contraction(s) call BLAS, "
                                  << stats.unmatched << " left as loops";
    return success();
  }

private:
  static bool isMatmulLike(linalg::LinalgOp op) {
    return isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()) ||
           linalg::isaContractionOpInterface(op);
  }

  // Declares (once) `func.func private @name(types) -> i32`.
  FailureOr<func::FuncOp> declare(StringRef name, TypeRange argTypes) {
    MLIRContext *ctx = module.getContext();
    auto type = FunctionType::get(ctx, argTypes, {IntegerType::get(ctx, 32)});
    if (auto existing = symbols.lookup<func::FuncOp>(name)) {
      if (existing.getFunctionType() != type) {
        existing.emitError()
            << "'" << name << "' is declared as " << existing.getFunctionType()
            << " but the runtime ABI is " << type;
        return failure();
      }
      return existing;
    }
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
    fn.setPrivate();
    symbols.insert(fn);
    return fn;
  }

  // Is `out` set to zero by a linalg.fill right before `op`, with nothing
  // that touches memory in between? Returns the fill.
  linalg::FillOp zeroFillBefore(Operation *op, Value out) {
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      if (auto fill = dyn_cast<linalg::FillOp>(prev)) {
        if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == out &&
            matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
          return fill;
        return nullptr;
      }
      if (!isMemoryEffectFree(prev))
        return nullptr;
    }
    return nullptr;
  }

  // Returns true if rewritten, false (with `why`) if left alone.
  FailureOr<bool> rewrite(linalg::LinalgOp op, std::string &why) {
    if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) {
      why = "not two inputs and one output";
      return false;
    }
    Value a = op.getDpsInputOperand(0)->get();
    Value b = op.getDpsInputOperand(1)->get();
    Value c = op.getDpsInitOperand(0)->get();
    auto elementType = [](Value v) -> Type {
      auto type = dyn_cast<MemRefType>(v.getType());
      return type ? type.getElementType() : Type();
    };
    Type ta = elementType(a), tb = elementType(b), tc = elementType(c);
    // f32 x f32 -> f32 (sgemm), or bf16 x bf16 -> f32 (ds-bf16-contractions).
    bool bf16 = ta && tb && ta.isBF16() && tb.isBF16();
    if (!tc || !tc.isF32() || (!bf16 && (!ta || !tb || !ta.isF32() ||
                                         !tb.isF32()))) {
      why = "element types are not f32, or bf16 operands into f32";
      return false;
    }
    if (!linalg::isaContractionOpInterface(op)) {
      why = "body is not a plain multiply-add";
      return false;
    }
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // A batch dim only one operand has (a weight shared by the batch) looks
    // like a second M (or N) dim: take the outer one in C as the batch.
    if (succeeded(dims) && dims->batch.empty() && dims->k.size() == 1) {
      auto split = [&](SmallVector<unsigned, 2> &dimsMN) {
        if (dimsMN.size() != 2)
          return;
        int64_t p0 = resultPos(maps[2], dimsMN[0]);
        int64_t p1 = resultPos(maps[2], dimsMN[1]);
        unsigned outer = p0 < p1 ? dimsMN[0] : dimsMN[1];
        unsigned inner = p0 < p1 ? dimsMN[1] : dimsMN[0];
        dims->batch = {outer};
        dimsMN = {inner};
      };
      if (dims->m.size() == 2 && dims->n.size() == 1)
        split(dims->m);
      else if (dims->n.size() == 2 && dims->m.size() == 1)
        split(dims->n);
    }
    if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
        dims->k.size() != 1 || dims->batch.size() > 1) {
      why = "not one M, one N, one K and at most one batch dim";
      return false;
    }
    std::optional<unsigned> batch;
    if (!dims->batch.empty())
      batch = dims->batch.front();
    FailureOr<OperandLayout> la = matchOperand(
        a, maps[0], dims->m[0], dims->k[0], batch, false, "A", why);
    if (failed(la))
      return false;
    FailureOr<OperandLayout> lb = matchOperand(
        b, maps[1], dims->k[0], dims->n[0], batch, false, "B", why);
    if (failed(lb))
      return false;
    FailureOr<OperandLayout> lc = matchOperand(
        c, maps[2], dims->m[0], dims->n[0], batch, batch.has_value(), "C", why);
    if (failed(lc))
      return false;

    OpBuilder bld(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
    Type f32 = Float32Type::get(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);

    struct Meta {
      Value ptr;
      SmallVector<Value> sizes, strides;
    };
    auto toI64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(bld, loc, i64, index);
    };
    auto meta = [&](Value memref) {
      auto md = memref::ExtractStridedMetadataOp::create(bld, loc, memref);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(bld, loc, memref);
      Value raw = LLVM::IntToPtrOp::create(bld, loc, ptr, toI64(base));
      Value p = LLVM::GEPOp::create(
          bld, loc, ptr, cast<MemRefType>(memref.getType()).getElementType(),
          raw, ValueRange{toI64(md.getOffset())});
      Meta m{p, {}, {}};
      for (Value s : md.getSizes())
        m.sizes.push_back(toI64(s));
      for (Value s : md.getStrides())
        m.strides.push_back(toI64(s));
      return m;
    };
    Meta ma = meta(a), mb = meta(b), mc = meta(c);

    // Sizes from the output (M, N) and from A (K).
    int64_t cRow = resultPos(maps[2], dims->m[0]);
    int64_t cCol = resultPos(maps[2], dims->n[0]);
    int64_t aK = resultPos(maps[0], dims->k[0]);
    Value m = mc.sizes[cRow], n = mc.sizes[cCol], k = ma.sizes[aK];

    // The leading dimension; when the matrix has a single row (or column,
    // transposed) BLAS still wants ld >= the other extent.
    auto leading = [&](const Meta &mm, const OperandLayout &l,
                       Value minimum) -> Value {
      Value ld = mm.strides[l.ldDim];
      return arith::MaxSIOp::create(bld, loc, ld, minimum);
    };
    // One constant per distinct value (the IR stays readable).
    DenseMap<Attribute, Value> constants;
    auto constant = [&](TypedAttr attr) -> Value {
      Value &v = constants[attr];
      if (!v)
        v = arith::ConstantOp::create(bld, loc, attr);
      return v;
    };
    auto cst = [&](Type t, int64_t v) -> Value {
      return constant(IntegerAttr::get(t, v));
    };
    auto cstF = [&](double v) -> Value {
      return constant(FloatAttr::get(f32, v));
    };

    Value one = cst(i64, 1);
    auto maxOne = [&](Value v) -> Value {
      return arith::MaxSIOp::create(bld, loc, v, one);
    };
    // Minimal leading dims as BLAS checks them: stored columns.
    Value lda = leading(ma, *la, maxOne(la->trans ? m : k));
    Value ldb = leading(mb, *lb, maxOne(lb->trans ? k : n));
    Value ldc = leading(mc, *lc, maxOne(lc->trans ? m : n));

    Value beta;
    if (options.foldFill)
      if (linalg::FillOp fill = zeroFillBefore(op, c)) {
        beta = fill.getInputs()[0]; // the zero itself
        fill.erase();
      }
    if (!beta)
      beta = cstF(1.0);

    // Column-major C: compute Cᵀ = Bᵀ·Aᵀ instead.
    bool tA = la->trans, tB = lb->trans;
    Value pA = ma.ptr, pB = mb.ptr, M = m, N = n;
    Value ldA = lda, ldB = ldb;
    const OperandLayout *layA = &*la, *layB = &*lb;
    const Meta *metaA = &ma, *metaB = &mb;
    if (lc->trans) {
      std::swap(pA, pB);
      std::swap(ldA, ldB);
      std::swap(M, N);
      std::swap(layA, layB);
      std::swap(metaA, metaB);
      bool newTA = !tB, newTB = !tA;
      tA = newTA;
      tB = newTB;
    }

    SmallVector<Value> args = {cst(i32, tA), cst(i32, tB), M,   N,  k,
                               cstF(1.0),    pA,           ldA, pB, ldB};
    StringRef callee = bf16 ? kGemmBF16Symbol : kSgemmSymbol;
    if (batch) {
      auto batchStride = [&](const Meta &mm, const OperandLayout &l) -> Value {
        return l.batchDim < 0 ? cst(i64, 0) : mm.strides[l.batchDim];
      };
      int64_t cBatch = resultPos(maps[2], *batch);
      // Insert the A and B batch strides after their leading dims.
      args = {cst(i32, tA),
              cst(i32, tB),
              M,
              N,
              k,
              cstF(1.0),
              pA,
              ldA,
              batchStride(*metaA, *layA),
              pB,
              ldB,
              batchStride(*metaB, *layB)};
      args.append({beta, mc.ptr, ldc, mc.strides[cBatch], mc.sizes[cBatch]});
      callee =
          bf16 ? kGemmBF16StridedBatchedSymbol : kSgemmStridedBatchedSymbol;
    } else {
      args.append({beta, mc.ptr, ldc});
    }
    SmallVector<Type> types;
    for (Value v : args)
      types.push_back(v.getType());
    FailureOr<func::FuncOp> fn = declare(callee, types);
    if (failed(fn))
      return failure();
    // The status is not checked here: a failure is recorded in the runtime's
    // dsrt_last_error(), which the JIT driver checks after every call.
    func::CallOp::create(bld, loc, *fn, args);
    op->erase();
    return true;
  }

  // memref.copy between buffers that are not both contiguous lowers to a
  // call into MLIR's C runner utilities; linalg.copy lowers to loops. A
  // contiguous view (a layer's slice of a stack: static strides, dynamic
  // offset) is copied with memcpy like an identity-layout buffer.
  static bool rewriteStridedCopy(memref::CopyOp copy) {
    auto src = dyn_cast<MemRefType>(copy.getSource().getType());
    auto dst = dyn_cast<MemRefType>(copy.getTarget().getType());
    if (!src || !dst)
      return false;
    if (memref::isStaticShapeAndContiguousRowMajor(src) &&
        memref::isStaticShapeAndContiguousRowMajor(dst))
      return false;
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
    return true;
  }

  ModuleOp module;
  SymbolTable symbols;
  const LinalgToRuntimeOptions &options;
};

struct LowerToRuntimePass
    : public ds::impl::LowerToRuntimeBase<LowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    LinalgToRuntimeOptions opts;
    opts.foldFill = foldFill;
    opts.report = report;
    LinalgToRuntimeStats stats;
    if (failed(ds::lowerLinalgToRuntime(getOperation(), opts, stats)))
      return signalPassFailure();
    numBlasCalls += stats.blasCalls;
    numUnmatched += stats.unmatched;
  }
};

} // namespace

LogicalResult mlir::ds::lowerLinalgToRuntime(ModuleOp module,
                                             const LinalgToRuntimeOptions &opts,
                                             LinalgToRuntimeStats &stats) {
  return BlasRewriter(module, opts).run(stats);
}
