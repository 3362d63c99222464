//===- LowerOptimizerToRuntime.cpp - dstrain updates to libdsrt kernels ---===//
//
// The optimizer update of a step calls libdsrt's fused kernels (one pass
// over p, g, m, v; OpenMP; AVX2/AVX-512) instead of running as linalg
// loops. It goes the way the dsdist collectives go (LowerCommToRuntime.cpp),
// for the same reason: a raw pointer handed to the runtime is invisible to
// bufferization and deallocation, so the pointers are taken only after both.
//
// 1. Bufferization (the external models below): `dstrain.adam`, `lamb` and
//    `sgd` update param and state in place — each result is equivalent to
//    its operand's buffer, so one-shot bufferization writes where the value
//    lives and copies first only when it must (a read-only function argument,
//    a value still read later) — and read the grad. The op becomes
//    `dstrain.apply` on buffers, a destination-style form with declared
//    effects, which later passes (buffer planning, deallocation) understand.
// 2. After deallocation placement, ds-lower-optimizer-to-runtime groups the
//    `dstrain.apply` ops of a block that share optimizer, hyper-parameters,
//    step and lr into one `dsrt_*_multi` call (one OpenMP region for all the
//    step's parameters instead of one per tensor), and lowers the rest to
//    the one-tensor `dsrt_*` calls. The kernels are elementwise per tensor
//    (Lamb's trust ratio is per list entry), so grouping never changes a bit
//    of the result: ZeRO stages that cut the same values differently still
//    agree bitwise.
//
//===----------------------------------------------------------------------===//
#include "RuntimeCall.h"

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"
#include "ds/Conversion/TrainToLinalg.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWEROPTIMIZERTORUNTIME
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::bufferization;
namespace train = mlir::ds::train;

namespace {

//===----------------------------------------------------------------------===//
// Bufferization
//===----------------------------------------------------------------------===//

/// Operand positions of one optimizer op kind: param 0, grad 1, then the
/// state (2 and 3 for Adam and Lamb, 2 for SGD), then step and lr.
template <typename OpTy> constexpr unsigned numStates() {
  return std::is_same_v<OpTy, train::SGDOp> ? 1 : 2;
}

/// The hyper-parameters as `dstrain.apply` keeps them: every one spelled
/// out, so two updates with the same dictionary run the same arithmetic.
DictionaryAttr hyperOf(train::AdamOp op) {
  Builder b(op.getContext());
  return b.getDictionaryAttr({
      b.getNamedAttr("adam_w_mode", b.getBoolAttr(op.getAdamWMode())),
      b.getNamedAttr("beta1", op.getBeta1Attr()),
      b.getNamedAttr("beta2", op.getBeta2Attr()),
      b.getNamedAttr("bias_correction", b.getBoolAttr(op.getBiasCorrection())),
      b.getNamedAttr("eps", op.getEpsAttr()),
      b.getNamedAttr("weight_decay", op.getWeightDecayAttr()),
  });
}
DictionaryAttr hyperOf(train::LambOp op) {
  Builder b(op.getContext());
  return b.getDictionaryAttr({
      b.getNamedAttr("beta1", op.getBeta1Attr()),
      b.getNamedAttr("beta2", op.getBeta2Attr()),
      b.getNamedAttr("bias_correction", b.getBoolAttr(op.getBiasCorrection())),
      b.getNamedAttr("eps", op.getEpsAttr()),
      b.getNamedAttr("max_coeff", op.getMaxCoeffAttr()),
      b.getNamedAttr("min_coeff", op.getMinCoeffAttr()),
      b.getNamedAttr("weight_decay", op.getWeightDecayAttr()),
  });
}
DictionaryAttr hyperOf(train::SGDOp op) {
  Builder b(op.getContext());
  return b.getDictionaryAttr({
      b.getNamedAttr("dampening", op.getDampeningAttr()),
      b.getNamedAttr("momentum", op.getMomentumAttr()),
      b.getNamedAttr("nesterov", b.getBoolAttr(op.getNesterov())),
      b.getNamedAttr("weight_decay", op.getWeightDecayAttr()),
  });
}

/// SGD without momentum neither reads nor writes its buffer: it passes
/// through, and a read-only one needs no copy.
bool touchesState(Operation *op) {
  if (auto sgd = dyn_cast<train::SGDOp>(op))
    return !sgd.getMomentum().isZero();
  return true;
}

/// Row-major without gaps; any offset (a chunk of a flat buffer) is fine.
bool isContiguous(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  auto [strides, offset] = type.getStridesAndOffset();
  int64_t expected = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    if (type.getDimSize(d) != 1 && strides[d] != expected)
      return false;
    expected *= type.getDimSize(d);
  }
  return true;
}

template <typename OpTy>
struct OptimizerModel
    : BufferizableOpInterface::ExternalModel<OptimizerModel<OpTy>, OpTy> {
  static constexpr unsigned kStates = numStates<OpTy>();

  /// param (operand 0, result 0) and state (operands 2.., results 1..):
  /// updated in place.
  static bool isUpdated(unsigned operand) {
    return operand == 0 || (operand >= 2 && operand < 2 + kStates);
  }

  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    unsigned n = operand.getOperandNumber();
    return n < 2 || !isUpdated(n) || touchesState(op);
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    unsigned n = operand.getOperandNumber();
    return isUpdated(n) && (n == 0 || touchesState(op));
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    unsigned n = operand.getOperandNumber();
    if (!isUpdated(n))
      return {};
    unsigned result = n == 0 ? 0 : n - 1;
    return {{op->getResult(result), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto typed = cast<OpTy>(op);
    if (!isServedByOptimizerKernels(op))
      return op->emitOpError()
             << "has no runtime kernel (it needs static f32 param and state "
                "and an f32, f16 or bf16 grad); lower it with "
                "ds-lower-train-to-linalg{optimizer-kernels=false}";
    Location loc = op->getLoc();
    SmallVector<Value> buffers;
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> buf = getBuffer(rewriter, operand.get(), options, state);
      if (failed(buf))
        return failure();
      buffers.push_back(*buf);
    }
    // The kernels take flat arrays: a strided view (rare: a slice of a
    // bucket along an inner dim) goes through a contiguous copy, and the
    // updated ones come back.
    SmallVector<Value> original = buffers;
    SmallVector<std::pair<Value, Value>> copyBack;
    for (unsigned i = 0; i < 2 + kStates; ++i) {
      auto type = cast<MemRefType>(buffers[i].getType());
      if (isContiguous(type))
        continue;
      auto plain = MemRefType::get(type.getShape(), type.getElementType());
      Value copy = memref::AllocOp::create(rewriter, loc, plain);
      memref::CopyOp::create(rewriter, loc, buffers[i], copy);
      if (isUpdated(i))
        copyBack.push_back({copy, buffers[i]});
      buffers[i] = copy;
    }
    ValueRange states = ValueRange(buffers).slice(2, kStates);
    train::ApplyOp::create(rewriter, loc, typed->getName().stripDialect(),
                           buffers[0], buffers[1], states, buffers[2 + kStates],
                           buffers[3 + kStates], hyperOf(typed));
    for (auto [from, to] : copyBack)
      memref::CopyOp::create(rewriter, loc, from, to);
    // The results are the operands' buffers, updated.
    SmallVector<Value> results{original[0]};
    llvm::append_range(results, ArrayRef(original).slice(2, kStates));
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Grouping
//===----------------------------------------------------------------------===//

/// The bytes a buffer may cover: its allocation (or function argument), and
/// for a `memref.view` at a constant shift — how ds-plan-buffers places
/// temporaries in its arena — the byte range inside it. Without the range
/// every temporary would alias every other one (one arena), and the copies
/// bufferization places between updates would end each group.
struct Extent {
  Value root;
  int64_t lo = 0, hi = -1; // hi < 0: all of root

  bool overlaps(const Extent &o) const {
    return root == o.root && (hi < 0 || o.hi < 0 || (lo < o.hi && o.lo < hi));
  }
};

Extent extentOf(Value v) {
  // Reshapes cover the bytes of their source.
  if (isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp,
                      memref::CastOp>(v.getDefiningOp()))
    return extentOf(v.getDefiningOp()->getOperand(0));
  // A static subview: the span from its first to its last element.
  if (auto sub = v.getDefiningOp<memref::SubViewOp>()) {
    auto [strides, offset] = sub.getType().getStridesAndOffset();
    auto [srcStrides, srcOffset] =
        sub.getSource().getType().getStridesAndOffset();
    Extent base = extentOf(sub.getSource());
    bool known = base.hi >= 0 && sub.getType().hasStaticShape() &&
                 !ShapedType::isDynamic(offset) &&
                 !ShapedType::isDynamic(srcOffset) &&
                 llvm::none_of(strides, ShapedType::isDynamic);
    if (!known)
      return {base.root};
    int64_t bytes = sub.getType().getElementTypeBitWidth() / 8, span = 1;
    for (auto [size, stride] : llvm::zip(sub.getType().getShape(), strides))
      span += (size - 1) * stride;
    int64_t lo = base.lo + (offset - srcOffset) * bytes;
    return {base.root, lo, lo + span * bytes};
  }
  if (auto view = v.getDefiningOp<memref::ViewOp>()) {
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    MemRefType type = view.getType();
    if (shift && type.hasStaticShape()) {
      Extent base = extentOf(view.getSource());
      int64_t lo = base.lo + *shift;
      return {base.root, lo,
              lo + type.getNumElements() * type.getElementTypeBitWidth() / 8};
    }
  }
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto md = dyn_cast<memref::ExtractStridedMetadataOp>(def))
      v = md.getSource();
    else
      break;
  }
  return {v};
}

/// Updates that can become one `dsrt_*_multi` call, issued where the last
/// one is: each earlier member moves down past the ops in between, which is
/// legal when none of them touches the bytes the members read or write.
/// Distinct roots are taken not to overlap (function arguments: the driver
/// passes distinct buffers, as one-shot bufferization assumes).
struct Group {
  SmallVector<train::ApplyOp> members;
  SmallVector<Extent> read, written;

  bool matches(train::ApplyOp op) const {
    train::ApplyOp first = members.front();
    return op->getBlock() == first->getBlock() &&
           op.getOptimizer() == first.getOptimizer() &&
           op.getHyper() == first.getHyper() &&
           op.getStep() == first.getStep() && op.getLr() == first.getLr() &&
           cast<MemRefType>(op.getGrad().getType()).getElementType() ==
               cast<MemRefType>(first.getGrad().getType()).getElementType();
  }

  void add(train::ApplyOp op) {
    members.push_back(op);
    for (Value v : {op.getGrad(), op.getStep(), op.getLr()})
      read.push_back(extentOf(v));
    written.push_back(extentOf(op.getParam()));
    for (Value s : op.getState())
      written.push_back(extentOf(s));
  }

  static bool anyOverlap(ArrayRef<Extent> set, const Extent &e) {
    return llvm::any_of(set, [&](const Extent &x) { return x.overlaps(e); });
  }

  /// Whether `op`, between two members, stops the earlier ones from moving
  /// past it.
  bool conflictsWith(Operation *op) const {
    if (isMemoryEffectFree(op))
      return false;
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface || op->getNumRegions() != 0)
      return true;
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &e : effects) {
      if (isa<MemoryEffects::Allocate>(e.getEffect()))
        continue;
      Value v = e.getValue();
      if (!v)
        return true;
      Extent extent = extentOf(v);
      if (anyOverlap(written, extent))
        return true;
      if (!isa<MemoryEffects::Read>(e.getEffect()) && anyOverlap(read, extent))
        return true;
    }
    return false;
  }
};

//===----------------------------------------------------------------------===//
// dstrain.apply -> dsrt_* calls
//===----------------------------------------------------------------------===//

/// dsrt_dtype of a gradient element type.
int gradDtype(Type t) { return t.isF16() ? 1 : t.isBF16() ? 2 : 0; }

class OptimizerRewriter {
public:
  explicit OptimizerRewriter(ModuleOp module)
      : module(module), symbols(module) {}

  /// One call for the group, where its last member is; the members go.
  void emit(ArrayRef<train::ApplyOp> members) {
    train::ApplyOp last = members.back();
    OpBuilder b(last);
    Location loc = last.getLoc();
    MLIRContext *ctx = b.getContext();
    Type i32 = b.getI32Type();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64c = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    auto i32c = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
    };
    auto f32c = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
    };
    DictionaryAttr hyper = last.getHyper();
    auto real = [&](StringRef name) {
      return f32c(cast<FloatAttr>(hyper.get(name)).getValueAsDouble());
    };
    auto flag = [&](StringRef name) {
      return i32c(cast<BoolAttr>(hyper.get(name)).getValue());
    };
    Value null = LLVM::ZeroOp::create(b, loc, ptr);

    // One pointer per tensor, or with several an array of them on the
    // stack of the function (allocated once, at its entry).
    bool multi = members.size() > 1;
    auto operand = [&](function_ref<Value(train::ApplyOp)> get) -> Value {
      if (!multi)
        return runtime_call::elementPointer(b, loc, get(last));
      Value array = entryAlloca(last, ptr, members.size());
      for (auto [i, m] : llvm::enumerate(members)) {
        Value at = LLVM::GEPOp::create(b, loc, ptr, ptr, array,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
        LLVM::StoreOp::create(b, loc,
                              runtime_call::elementPointer(b, loc, get(m)), at);
      }
      return array;
    };
    auto count = [](train::ApplyOp m) {
      return cast<MemRefType>(m.getParam().getType()).getNumElements();
    };

    StringRef opt = last.getOptimizer();
    Value params = operand([](train::ApplyOp m) { return m.getParam(); });
    Value grads = operand([](train::ApplyOp m) { return m.getGrad(); });
    Value state0 = operand([](train::ApplyOp m) { return m.getState()[0]; });
    Value state1 = opt == "sgd" ? Value() : operand([](train::ApplyOp m) {
      return m.getState()[1];
    });
    if (opt == "sgd" &&
        cast<FloatAttr>(hyper.get("momentum")).getValue().isZero())
      state0 = null; // the kernel neither reads nor writes it
    Value counts;
    if (multi) {
      counts = entryAlloca(last, b.getI64Type(), members.size());
      for (auto [i, m] : llvm::enumerate(members))
        LLVM::StoreOp::create(
            b, loc, i64c(count(m)),
            LLVM::GEPOp::create(b, loc, ptr, b.getI64Type(), counts,
                                ArrayRef<LLVM::GEPArg>{int32_t(i)}));
    } else {
      counts = i64c(count(last));
    }
    Value step = memref::LoadOp::create(b, loc, last.getStep(), ValueRange{});
    Value lr = memref::LoadOp::create(b, loc, last.getLr(), ValueRange{});
    Value dtype = i32c(
        gradDtype(cast<MemRefType>(last.getGrad().getType()).getElementType()));
    Value one = f32c(1.0); // grad_scale: unscaling happens before the op
    Value i32zero = i32c(0);

    SmallVector<Value> args;
    if (multi)
      args.push_back(i64c(members.size()));
    args.append({params, grads, dtype, state0});
    if (state1)
      args.push_back(state1);
    args.append({counts, step, lr});
    if (opt == "adam") {
      args.append({real("beta1"), real("beta2"), real("eps"),
                   real("weight_decay"), flag("adam_w_mode"),
                   flag("bias_correction"), one, null, i32zero});
    } else if (opt == "lamb") {
      args.append({real("beta1"), real("beta2"), real("eps"),
                   real("weight_decay"), flag("bias_correction"),
                   real("min_coeff"), real("max_coeff"), one, null, i32zero,
                   null});
    } else {
      args.append({real("momentum"), real("dampening"), flag("nesterov"),
                   real("weight_decay"), one, null, i32zero});
    }
    std::string name = ("dsrt_" + opt + (multi ? "_multi" : "")).str();
    Value status = runtime_call::call(b, loc, module, symbols, name, args, i32);
    runtime_call::call(b, loc, module, symbols, "dsrt_check", {status, null},
                       i32);
    for (train::ApplyOp m : members)
      m.erase();
  }

private:
  /// `n` elements of `type` on the stack, allocated at the entry of the
  /// function holding `at` (so a loop around `at` does not grow the stack).
  Value entryAlloca(Operation *at, Type type, int64_t n) {
    Block &entry =
        at->getParentOfType<FunctionOpInterface>().getFunctionBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = at->getLoc();
    Value size = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(n));
    return LLVM::AllocaOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), type, size);
  }

  ModuleOp module;
  SymbolTable symbols;
};

struct LowerOptimizerToRuntimePass
    : ds::impl::LowerOptimizerToRuntimeBase<LowerOptimizerToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<SmallVector<train::ApplyOp>> groups;
    module.walk([&](Block *block) { collectGroups(*block, groups); });
    OptimizerRewriter rewriter(module);
    for (ArrayRef<train::ApplyOp> members : groups) {
      rewriter.emit(members);
      ++numCalls;
      numUpdates += members.size();
    }
    if (report)
      emitRemark(module.getLoc())
          << "ds-lower-optimizer-to-runtime: " << numUpdates.getValue()
          << " update(s) in " << numCalls.getValue() << " libdsrt call(s)";
  }

  /// Splits the updates of `block` into groups, in block order.
  void collectGroups(Block &block,
                     SmallVectorImpl<SmallVector<train::ApplyOp>> &out) {
    SmallVector<Group> open;
    auto close = [&](llvm::function_ref<bool(const Group &)> pred) {
      for (Group &g : open)
        if (pred(g))
          out.push_back(std::move(g.members));
      llvm::erase_if(open, [&](Group &g) { return g.members.empty(); });
    };
    for (Operation &op : block) {
      auto apply = dyn_cast<train::ApplyOp>(op);
      close([&](const Group &g) {
        return !(apply && multi && g.matches(apply)) && g.conflictsWith(&op);
      });
      if (!apply)
        continue;
      Group *join = nullptr;
      for (Group &g : open)
        if (multi && g.matches(apply))
          join = &g;
      // Two updates of the same buffer never share a call.
      if (join && join->conflictsWith(&op)) {
        out.push_back(std::move(join->members));
        llvm::erase_if(open, [&](Group &g) { return g.members.empty(); });
        join = nullptr;
      }
      if (!join) {
        open.push_back(Group{});
        join = &open.back();
      }
      join->add(apply);
    }
    close([](const Group &) { return true; });
  }
};

} // namespace

void ds::registerOptimizerBufferizationModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, train::TrainDialect *) {
    train::AdamOp::attachInterface<OptimizerModel<train::AdamOp>>(*ctx);
    train::LambOp::attachInterface<OptimizerModel<train::LambOp>>(*ctx);
    train::SGDOp::attachInterface<OptimizerModel<train::SGDOp>>(*ctx);
  });
}
