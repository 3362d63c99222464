//===- Zero.cpp - Data parallelism and ZeRO stages 0-3 --------------------===//
//
// Works on the step contract, after the optimizer pass: every gradient is
// the operand of one norm op (clip_grad_norm or global_norm) and every
// parameter has one optimizer op. Sharding is per tensor (flatten, pad to a
// multiple of the group, cut in equal chunks) rather than one flat buffer
// over all parameters, so a chunk never straddles two parameters and the
// IR keeps one value per parameter; buckets only group the collectives.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::ds {
#define GEN_PASS_DEF_ZERO
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kDpAxis = "dp";

/// One parameter's optimizer update in @train_step.
struct Update {
  Operation *op;                   // dstrain.adam / sgd / lamb
  unsigned paramArg;               // argument index of the parameter
  unsigned gradOperand;            // operand index of the gradient in `op`
  SmallVector<unsigned> stateArgs; // argument indices of its state
};

/// How a gradient mean over n ranks divides by n: all at once by the
/// collective (`avg`), or as a factor before a summing collective and one
/// after it (DeepSpeed's prescale_gradients / gradient_predivide_factor).
struct MeanSplit {
  double before = 1;
  double after = 1;
};

/// Builds the collectives and reshapes over the dp group.
class DpBuilder {
public:
  DpBuilder(OpBuilder &b, Location loc, int64_t n,
            std::optional<MeanSplit> split = std::nullopt,
            ArrayAttr axes = nullptr, bool expertRows = false)
      : b(b), loc(loc), n(n), axes(axes ? axes : b.getStrArrayAttr({kDpAxis})),
        split(split), expertRows(expertRows) {}

  /// The same group and chunking, building with `other` at `at`.
  DpBuilder with(OpBuilder &other, Location at) const {
    return DpBuilder(other, at, n, split, axes, expertRows);
  }

  static int64_t numel(RankedTensorType t) { return t.getNumElements(); }
  int64_t chunk(RankedTensorType t) const {
    if (!expertRows || t.getRank() == 0)
      return llvm::divideCeil(numel(t), n);
    int64_t k = t.getDimSize(0);
    return k * llvm::divideCeil(numel(t), n * k);
  }
  /// The type a ZeRO-3 chunk of parameter type `t` takes as an argument:
  /// the flat chunk, or with expert rows [local experts, chunk / experts],
  /// the leading dim the run side reads the expert count off, as it does
  /// for an unsharded expert parameter.
  RankedTensorType argChunkType(RankedTensorType t) const {
    if (!expertRows || t.getRank() == 0)
      return chunkType(t);
    int64_t k = t.getDimSize(0);
    return RankedTensorType::get({k, chunk(t) / k}, t.getElementType());
  }
  RankedTensorType chunkType(RankedTensorType t) const {
    return RankedTensorType::get({chunk(t)}, t.getElementType());
  }

  /// tensor<AxB> -> tensor<A*B>.
  Value flatten(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() == 1)
      return v;
    auto flat = RankedTensorType::get({numel(t)}, t.getElementType());
    if (t.getRank() == 0)
      return tensor::ExpandShapeOp::create(b, loc, flat, v,
                                           ArrayRef<ReassociationIndices>{});
    auto all = llvm::to_vector<2>(llvm::seq<int64_t>(0, t.getRank()));
    return tensor::CollapseShapeOp::create(b, loc, flat, v,
                                           ArrayRef<ReassociationIndices>{all});
  }

  /// The inverse of flatten.
  Value unflatten(Value flat, RankedTensorType t) {
    if (t.getRank() == 1)
      return flat;
    if (t.getRank() == 0)
      return tensor::CollapseShapeOp::create(b, loc, t, flat,
                                             ArrayRef<ReassociationIndices>{});
    auto all = llvm::to_vector<2>(llvm::seq<int64_t>(0, t.getRank()));
    return tensor::ExpandShapeOp::create(b, loc, t, flat,
                                         ArrayRef<ReassociationIndices>{all});
  }

  /// Flattened and zero-padded to n chunks: tensor<n*chunk>.
  Value flatPadded(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    Value flat = flatten(v);
    int64_t padded = chunk(t) * n;
    if (padded == numel(t))
      return flat;
    auto type = RankedTensorType::get({padded}, t.getElementType());
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(t.getElementType()));
    SmallVector<OpFoldResult> low = {b.getIndexAttr(0)};
    SmallVector<OpFoldResult> high = {b.getIndexAttr(padded - numel(t))};
    return tensor::PadOp::create(b, loc, type, flat, low, high, zero);
  }

  /// The first `count` elements of a 1-d tensor.
  Value prefix(Value flat, int64_t count) {
    auto t = cast<RankedTensorType>(flat.getType());
    if (t.getDimSize(0) == count)
      return flat;
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({count}, t.getElementType()), flat,
        ValueRange{}, ValueRange{}, ValueRange{}, b.getDenseI64ArrayAttr({0}),
        b.getDenseI64ArrayAttr({count}), b.getDenseI64ArrayAttr({1}));
  }

  /// This rank's chunk of a tensor every rank holds alike.
  Value shard(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return dist::ShardOp::create(b, loc, chunkType(t), flatPadded(v), axes,
                                 b.getI64IntegerAttr(0));
  }

  /// The whole tensor of type `t` from every rank's chunk.
  Value gather(Value chunkValue, RankedTensorType t) {
    auto full = RankedTensorType::get({chunk(t) * n}, t.getElementType());
    Value g = dist::AllGatherOp::create(b, loc, full, chunkValue, axes,
                                        b.getI64IntegerAttr(0));
    return unflatten(prefix(g, numel(t)), t);
  }

  Value allReduce(Value v, dist::ReductionKind kind) {
    return dist::AllReduceOp::create(
        b, loc, v.getType(), v, axes,
        dist::ReductionKindAttr::get(b.getContext(), kind));
  }

  /// Mean over the group of each of `values`, packed into buckets.
  SmallVector<Value> allReduceMean(ValueRange values,
                                   ArrayRef<SmallVector<unsigned>> buckets) {
    SmallVector<Value> out(values.size());
    for (ArrayRef<unsigned> bucket : buckets) {
      if (bucket.size() == 1) {
        out[bucket[0]] = allReduceMeanOf(values[bucket[0]]);
        continue;
      }
      SmallVector<Value> flats;
      SmallVector<int64_t> offsets;
      int64_t total = 0;
      for (unsigned i : bucket) {
        flats.push_back(flatten(values[i]));
        offsets.push_back(total);
        total += numel(cast<RankedTensorType>(values[i].getType()));
      }
      Value packed = concat(flats, 0);
      Value reduced = allReduceMeanOf(packed);
      for (auto [k, i] : llvm::enumerate(bucket)) {
        auto t = cast<RankedTensorType>(values[i].getType());
        out[i] = unflatten(extract(reduced, {offsets[k]}, {numel(t)}), t);
      }
    }
    return out;
  }

  /// Each rank's reduced (mean) chunk of each of `values`. A bucket is laid
  /// out [n, sum of chunks] so that row r, which rank r keeps, holds chunk r
  /// of every tensor in it.
  SmallVector<Value>
  reduceScatterMean(ValueRange values,
                    ArrayRef<SmallVector<unsigned>> buckets) {
    SmallVector<Value> out(values.size());
    for (ArrayRef<unsigned> bucket : buckets) {
      if (bucket.size() == 1) {
        auto t = cast<RankedTensorType>(values[bucket[0]].getType());
        out[bucket[0]] =
            reduceScatterMeanOf(flatPadded(values[bucket[0]]), chunkType(t));
        continue;
      }
      SmallVector<int64_t> offsets;
      int64_t total = 0;
      for (unsigned i : bucket) {
        offsets.push_back(total);
        total += chunk(cast<RankedTensorType>(values[i].getType()));
      }
      Type elt =
          cast<RankedTensorType>(values[bucket[0]].getType()).getElementType();
      SmallVector<Value> rows;
      for (unsigned i : bucket) {
        auto t = cast<RankedTensorType>(values[i].getType());
        rows.push_back(tensor::ExpandShapeOp::create(
            b, loc, RankedTensorType::get({n, chunk(t)}, elt),
            flatPadded(values[i]), ArrayRef<ReassociationIndices>{{0, 1}}));
      }
      Value packed = concat(rows, 1);
      Value mine =
          reduceScatterMeanOf(packed, RankedTensorType::get({1, total}, elt));
      for (auto [k, i] : llvm::enumerate(bucket)) {
        auto t = cast<RankedTensorType>(values[i].getType());
        Value row = extract(mine, {0, offsets[k]}, {1, chunk(t)});
        out[i] = tensor::CollapseShapeOp::create(
            b, loc, chunkType(t), row, ArrayRef<ReassociationIndices>{{0, 1}});
      }
    }
    return out;
  }

  /// The whole tensors (types `types`) from every rank's chunks, bucketed.
  SmallVector<Value> allGather(ValueRange chunks, ArrayRef<Type> types,
                               ArrayRef<SmallVector<unsigned>> buckets) {
    SmallVector<Value> out(chunks.size());
    for (ArrayRef<unsigned> bucket : buckets) {
      if (bucket.size() == 1) {
        out[bucket[0]] =
            gather(chunks[bucket[0]], cast<RankedTensorType>(types[bucket[0]]));
        continue;
      }
      SmallVector<int64_t> offsets;
      int64_t total = 0;
      for (unsigned i : bucket) {
        offsets.push_back(total);
        total += chunk(cast<RankedTensorType>(types[i]));
      }
      Type elt = cast<RankedTensorType>(types[bucket[0]]).getElementType();
      SmallVector<Value> rows;
      for (unsigned i : bucket) {
        int64_t c = chunk(cast<RankedTensorType>(types[i]));
        rows.push_back(tensor::ExpandShapeOp::create(
            b, loc, RankedTensorType::get({1, c}, elt), chunks[i],
            ArrayRef<ReassociationIndices>{{0, 1}}));
      }
      Value packed = concat(rows, 1);
      Value all = dist::AllGatherOp::create(
          b, loc, RankedTensorType::get({n, total}, elt), packed, axes,
          b.getI64IntegerAttr(0));
      for (auto [k, i] : llvm::enumerate(bucket)) {
        auto t = cast<RankedTensorType>(types[i]);
        Value rows = extract(all, {0, offsets[k]}, {n, chunk(t)});
        Value flat = tensor::CollapseShapeOp::create(
            b, loc, RankedTensorType::get({n * chunk(t)}, elt), rows,
            ArrayRef<ReassociationIndices>{{0, 1}});
        out[i] = unflatten(prefix(flat, numel(t)), t);
      }
    }
    return out;
  }

  ArrayAttr getAxes() const { return axes; }
  int64_t size() const { return n; }

private:
  /// `v` times `factor` (v unchanged for 1).
  Value scaled(Value v, double factor) {
    if (factor == 1)
      return v;
    auto t = cast<RankedTensorType>(v.getType());
    return nn::MulOp::create(
        b, loc, t, v, scalarConstant(b, loc, t.getElementType(), factor));
  }

  dist::ReductionKindAttr kindAttr(dist::ReductionKind kind) {
    return dist::ReductionKindAttr::get(b.getContext(), kind);
  }

  Value allReduceMeanOf(Value v) {
    if (!split)
      return allReduce(v, dist::ReductionKind::avg);
    Value sum = allReduce(scaled(v, split->before), dist::ReductionKind::sum);
    return scaled(sum, split->after);
  }

  Value reduceScatterMeanOf(Value v, Type resultType) {
    auto kind = split ? dist::ReductionKind::sum : dist::ReductionKind::avg;
    Value mine = dist::ReduceScatterOp::create(
        b, loc, resultType, split ? scaled(v, split->before) : v, axes,
        kindAttr(kind), b.getI64IntegerAttr(0));
    return split ? scaled(mine, split->after) : mine;
  }

  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  /// One op rather than a chain of insert_slices into one tensor: a bucket
  /// holds a tensor per parameter, and bufferization's conflict analysis is
  /// quadratic in a chain of in-place writes to one buffer.
  Value concat(ValueRange pieces, int64_t dim) {
    return tensor::ConcatOp::create(b, loc, dim, pieces);
  }
  Value extract(Value src, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    auto elt = cast<RankedTensorType>(src.getType()).getElementType();
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(sizes, elt), src, ValueRange{},
        ValueRange{}, ValueRange{}, b.getDenseI64ArrayAttr(offsets),
        b.getDenseI64ArrayAttr(sizes), b.getDenseI64ArrayAttr(ones));
  }

  OpBuilder &b;
  Location loc;
  int64_t n;
  ArrayAttr axes;
  /// Unset: the mean is the collective's `avg`.
  std::optional<MeanSplit> split;
  /// Expert parameters at stage 3: chunks padded to a multiple of the
  /// local expert count (argChunkType).
  bool expertRows;
};

/// Packs tensors into buckets of at most `limit` elements (a tensor larger
/// than the limit gets a bucket of its own), last tensor first: the backward
/// produces gradients in that order, so the first bucket is ready first. A
/// tensor of at least `packLimit` elements is never packed: its collective
/// works on its own buffer, where a pack would be a copy of it.
SmallVector<SmallVector<unsigned>>
makeBuckets(ArrayRef<int64_t> sizes, int64_t limit, int64_t packLimit) {
  SmallVector<SmallVector<unsigned>> buckets;
  std::optional<size_t> open; // the bucket the next small tensor joins
  int64_t fill = 0;
  for (unsigned i = sizes.size(); i-- > 0;) {
    if (sizes[i] >= packLimit) {
      buckets.push_back({i});
      continue;
    }
    if (!open || fill + sizes[i] > limit) {
      open = buckets.size();
      buckets.emplace_back();
      fill = 0;
    }
    buckets[*open].push_back(i);
    fill += sizes[i];
  }
  return buckets;
}

/// The entries `members` of `values`.
SmallVector<int64_t> pick(ArrayRef<int64_t> values,
                          ArrayRef<unsigned> members) {
  SmallVector<int64_t> out;
  for (unsigned i : members)
    out.push_back(values[i]);
  return out;
}

/// The gradient mean over `n` ranks as DeepSpeed splits it around a summing
/// collective; none when the collective's own `avg` does it.
std::optional<MeanSplit> meanSplit(double n, bool prescale, double predivide) {
  if (prescale)
    return MeanSplit{1 / n, 1};
  if (predivide != 1.0)
    return MeanSplit{1 / predivide, predivide / n};
  return std::nullopt;
}

/// With expert parallelism (an `ep` axis on the grid), two groups: the
/// whole data-parallel group ["dp", "ep"] for dense parameters, and the
/// expert-data-parallel group ["dp"] (the ranks holding the same experts)
/// for expert parameters. An expert gradient already sums the tokens of
/// its expert-parallel group (the all-to-all's adjoint brought them), so
/// summing it over ["dp"] covers every rank's tokens once: its mean divides
/// by the whole data-parallel size, never by the smaller group's.
struct Groups {
  DpBuilder dense;
  std::optional<DpBuilder> experts;
  SmallVector<bool> isExpert;

  DpBuilder &of(unsigned p) { return isExpert[p] ? *experts : dense; }
  /// Indices of the parameters in each group, with their builder.
  SmallVector<std::pair<DpBuilder *, SmallVector<unsigned>>> partition() {
    SmallVector<std::pair<DpBuilder *, SmallVector<unsigned>>> out;
    out.push_back({&dense, {}});
    if (experts)
      out.push_back({&*experts, {}});
    for (unsigned p = 0; p < isExpert.size(); ++p)
      out[isExpert[p] ? 1 : 0].second.push_back(p);
    return out;
  }
};

/// Runs `f(builder, members, values of the group)` per group and puts its
/// results back in parameter order.
using GroupFn = function_ref<SmallVector<Value>(DpBuilder &, ArrayRef<unsigned>,
                                                ValueRange)>;
SmallVector<Value> perGroup(Groups &groups, ValueRange values, GroupFn f) {
  SmallVector<Value> out(values.size());
  for (auto &[builder, members] : groups.partition()) {
    SmallVector<Value> sub;
    for (unsigned p : members)
      sub.push_back(values[p]);
    SmallVector<Value> got = f(*builder, members, sub);
    for (auto [k, p] : llvm::enumerate(members))
      out[p] = got[k];
  }
  return out;
}

/// @train_step as the phases of ds-zero see it.
struct Step {
  func::FuncOp fn;
  func::ReturnOp ret;
  SmallVector<Update> updates;
  unsigned numParams, lossIdx, normIdx;
  Operation *normOp; // the norm of every gradient (ds-clip-grads)
  Groups groups;
  ArrayAttr denseAxes;
  SmallVector<Type> fullTypes;     // the parameters' types, whole
  SmallVector<int64_t> chunkSizes; // elements of a rank's chunk
  SmallVector<bool> partitioned;   // stage 3, not persistent
  Block &body() { return fn.getBody().front(); }
  dist::ShardingAttr shardingOf(unsigned p) {
    return dist::ShardingAttr::get(
        fn.getContext(), groups.of(p).getAxes(),
        cast<RankedTensorType>(fullTypes[p]).getShape());
  }
};

struct ZeroPass : mlir::ds::impl::ZeroBase<ZeroPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-zero: " << msg;
    signalPassFailure();
    return failure();
  }

  LogicalResult collectUpdates(func::FuncOp fn, SmallVector<Update> &updates);
  /// Stage 3: gathers each argument of `fn` in `args` (pairs of an
  /// argument of `fn` and the step parameter it receives, partitioned)
  /// before its uses in each phase and releases it after the last.
  LogicalResult
  gatherParamsIn(func::FuncOp fn, Step &step,
                 ArrayRef<std::pair<unsigned, unsigned>> args);
  /// Stage 3 in a pipeline stage: the functions @train_step calls per
  /// micro-batch (@stage_forward, @stage_backward) take the chunks.
  LogicalResult partitionParamsInCallees(Step &step, ArrayRef<Type> argTypes);
  LogicalResult readNarrowParams(func::FuncOp eval, unsigned numParams,
                                 Type narrow);

  /// The options make sense together.
  LogicalResult checkOptions(ModuleOp module);
  /// Puts the `dp` grid on the module, or checks the one there; returns
  /// the size of its `ep` axis (1 without expert parallelism).
  FailureOr<int64_t> setUpGrid(ModuleOp module);
  /// Phase 2: the norm of this rank's gradient `chunks` summed over the
  /// group (and the pipeline's stages), `grads` clipped by it when the
  /// step clips; returns what the optimizer reads.
  SmallVector<Value> normAndClip(ModuleOp module, Step &step, OpBuilder &b,
                                 ArrayRef<Value> chunks, ArrayRef<Value> grads);
  /// Phase 4, stage 1-3: the optimizer works on this rank's chunks.
  LogicalResult shardOptimizer(ModuleOp module, Step &step, OpBuilder &b,
                               ArrayRef<Value> grads);
  /// Mixed precision at stage 1/2: the f32 master chunks become optimizer
  /// state and the parameters 16-bit; returns where the masters start
  /// among the step's arguments.
  FailureOr<unsigned> addMasterWeights(Step &step, OpBuilder &b, Type narrow,
                                       func::FuncOp grad, func::FuncOp eval,
                                       SmallVectorImpl<Value> &masters);
  /// Stage 3: @forward_backward and @eval_step take the partitioned
  /// parameters as chunks and gather them before use.
  LogicalResult partitionParamsIn(ModuleOp module, Step &step,
                                  ArrayRef<Type> argTypes, func::FuncOp eval);
};

LogicalResult ZeroPass::collectUpdates(func::FuncOp fn,
                                       SmallVector<Update> &updates) {
  unsigned numParams = numLeadingParams(fn);
  SmallVector<Operation *> byParam(numParams, nullptr);
  for (Operation &op : fn.getBody().front()) {
    if (!isa<train::AdamOp, train::SGDOp, train::LambOp>(op))
      continue;
    auto param = dyn_cast<BlockArgument>(op.getOperand(0));
    if (!param || param.getArgNumber() >= numParams)
      return fail(&op, "the optimizer op's parameter is not a parameter "
                       "argument of @" +
                           fn.getName() +
                           "; run ds-zero on the step contract "
                           "as ds-optimizer builds it");
    Update u{&op, param.getArgNumber(), 1, {}};
    for (Value v : op.getOperands().drop_front(2))
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && fn.getArgAttr(arg.getArgNumber(), kStateAttrName))
        u.stateArgs.push_back(arg.getArgNumber());
    if (byParam[u.paramArg])
      return fail(&op, "parameter \"" + paramName(fn, u.paramArg) +
                           "\" has two optimizer updates");
    byParam[u.paramArg] = &op;
    updates.push_back(std::move(u));
  }
  for (unsigned p = 0; p < numParams; ++p)
    if (!byParam[p])
      return fail(fn, "parameter \"" + paramName(fn, p) +
                          "\" has no optimizer update; run ds-optimizer "
                          "before ds-zero");
  llvm::sort(updates, [](const Update &a, const Update &b) {
    return a.paramArg < b.paramArg;
  });
  return success();
}

/// The one 16-bit float type all of `users` cast to (mixed precision reads
/// a parameter only through such casts); null if any user is something
/// else or the casts disagree.
Type narrowCastType(ArrayRef<Operation *> users) {
  Type narrow;
  for (Operation *user : users) {
    auto castOp = dyn_cast<nn::CastOp>(user);
    if (!castOp)
      return {};
    Type to = castOp.getType().getElementType();
    if ((narrow && narrow != to) || to.getIntOrFloatBitWidth() != 16)
      return {};
    narrow = to;
  }
  return narrow;
}

/// The 16-bit type mixed precision reads every parameter as, when
/// @forward_backward reads each only through casts to it and @train_step
/// uses each only to call it and to update it; null otherwise.
Type castOnlyType(func::FuncOp step, func::FuncOp grad, unsigned numParams,
                  ArrayRef<Update> updates) {
  if (!grad || grad.isExternal() || numLeadingParams(grad) != numParams)
    return {};
  SmallVector<Operation *> users;
  for (unsigned p = 0; p < numParams; ++p)
    llvm::append_range(users, grad.getArgument(p).getUsers());
  Type narrow = narrowCastType(users);
  if (!narrow)
    return {};
  for (const Update &u : updates)
    for (OpOperand &use : step.getArgument(u.paramArg).getUses()) {
      auto call = dyn_cast<func::CallOp>(use.getOwner());
      bool ok = (use.getOwner() == u.op && use.getOperandNumber() == 0) ||
                (call && call.getCallee() == grad.getName());
      if (!ok)
        return {};
    }
  return narrow;
}

/// The eval function reads the 16-bit parameters the step now holds in
/// place of its casts of the f32 ones.
LogicalResult ZeroPass::readNarrowParams(func::FuncOp eval, unsigned numParams,
                                         Type narrow) {
  for (unsigned p = 0; p < numParams; ++p) {
    BlockArgument arg = eval.getArgument(p);
    SmallVector<Operation *> users(arg.getUsers());
    if (!users.empty() && narrowCastType(users) != narrow)
      return fail(
          eval,
          "@" + evalEntry + " reads parameter \"" + paramName(eval, p) +
              "\" other than through casts to the 16-bit type the gradient "
              "function reads it as");
    arg.setType(cast<RankedTensorType>(arg.getType()).clone(narrow));
    for (Operation *user : users) {
      user->getResult(0).replaceAllUsesWith(arg);
      user->erase();
    }
  }
  eval.setFunctionType(FunctionType::get(
      eval.getContext(), eval.getBody().front().getArgumentTypes(),
      eval.getResultTypes()));
  return success();
}

/// The top-level op of `block` that contains `op`.
Operation *topLevel(Operation *op, Block &block) {
  while (op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

LogicalResult
ZeroPass::gatherParamsIn(func::FuncOp grad, Step &step,
                         ArrayRef<std::pair<unsigned, unsigned>> args) {
  Block &body = grad.getBody().front();
  // The backward starts at the first op autodiff marked as such; everything
  // before it is the forward (and the loss).
  Operation *firstBackward = nullptr;
  for (Operation &op : body)
    if (op.hasAttr(kBackwardAttrName)) {
      firstBackward = &op;
      break;
    }
  auto inBackward = [&](Operation *top) {
    return firstBackward &&
           (top == firstBackward || firstBackward->isBeforeInBlock(top));
  };

  for (auto [a, p] : args) {
    BlockArgument arg = body.getArgument(a);
    auto full = cast<RankedTensorType>(step.fullTypes[p]);
    // Uses grouped by phase: [forward, backward].
    SmallVector<OpOperand *> uses[2];
    for (OpOperand &use : arg.getUses())
      uses[inBackward(topLevel(use.getOwner(), body))].push_back(&use);
    for (auto [index, phase] : llvm::enumerate(uses)) {
      if (phase.empty())
        continue;
      Operation *first = topLevel(phase.front()->getOwner(), body);
      Operation *last = first;
      for (OpOperand *use : phase) {
        Operation *top = topLevel(use->getOwner(), body);
        if (top->isBeforeInBlock(first))
          first = top;
        if (last->isBeforeInBlock(top))
          last = top;
      }
      OpBuilder b(first);
      // An expert parameter is gathered over the ranks holding the same
      // experts, a dense one over the whole data-parallel group.
      DpBuilder dp = step.groups.of(p).with(b, grad.getLoc());
      // Mixed precision reads a parameter only through casts to its 16-bit
      // type: casting commutes with gathering, so gather the 16-bit chunks
      // (half the bytes) and let the gathered value replace the casts.
      SmallVector<Operation *> users;
      for (OpOperand *use : phase)
        users.push_back(use->getOwner());
      Type narrow = narrowCastType(users);
      bool onlyCasts = static_cast<bool>(narrow);
      Value source = arg;
      RankedTensorType wholeType = full;
      if (onlyCasts) {
        source = nn::CastOp::create(
            b, grad.getLoc(),
            cast<RankedTensorType>(arg.getType()).clone(narrow), arg);
        wholeType = full.clone(narrow);
      }
      auto flat = RankedTensorType::get({dp.chunk(full) * dp.size()},
                                        wholeType.getElementType());
      auto gathered =
          dist::AllGatherOp::create(b, grad.getLoc(), flat, dp.flatten(source),
                                    dp.getAxes(), b.getI64IntegerAttr(0));
      // Named by phase, so CSE cannot merge the backward's gather into the
      // forward's and keep the whole parameter alive in between.
      gathered->setAttr("phase",
                        b.getStringAttr(index ? "backward" : "forward"));
      Value whole =
          dp.unflatten(dp.prefix(gathered, DpBuilder::numel(full)), wholeType);
      for (OpOperand *use : phase) {
        if (!onlyCasts) {
          use->set(whole);
          continue;
        }
        Operation *castOp = use->getOwner();
        castOp->getResult(0).replaceAllUsesWith(whole);
        castOp->erase();
      }
      if (onlyCasts) {
        // The gathered copy now lives as long as the casts' users.
        last = whole.getDefiningOp();
        for (Operation *user : whole.getUsers())
          if (Operation *top = topLevel(user, body); last->isBeforeInBlock(top))
            last = top;
      }
      // A pipeline stage's forward may return the gathered value (a 16-bit
      // cast its backward reads): the caller then holds it until that
      // backward, which reads it instead of gathering again.
      if (last->hasTrait<OpTrait::IsTerminator>())
        continue;
      b.setInsertionPointAfter(last);
      dist::ReleaseOp::create(b, grad.getLoc(), whole);
    }
  }
  return success();
}

LogicalResult ZeroPass::checkOptions(ModuleOp module) {
  auto bad = [&](const Twine &msg) {
    module.emitError() << "ds-zero: " << msg;
    signalPassFailure();
    return failure();
  };
  if (stage < 0 || stage > 3)
    return bad("stage " + Twine(stage) +
               " does not exist; zero_optimization.stage is 0, 1, 2 or 3");
  if (dpSize < 1 || reduceBucketSize < 1 || allgatherBucketSize < 1 ||
      packLimit < 1)
    return bad("dp-size, reduce-bucket-size, allgather-bucket-size and "
               "pack-limit must be >= 1");
  if (paramPersistenceThreshold < 0)
    return bad("param-persistence-threshold is " +
               Twine(paramPersistenceThreshold) +
               "; give a number of elements >= 0 (0 partitions every "
               "parameter)");
  if (!(gradientPredivideFactor > 0))
    return bad("gradient-predivide-factor must be > 0");
  if (prescaleGradients && gradientPredivideFactor != 1.0)
    return bad("prescale-gradients divides by dp-size before the reduction; "
               "leave gradient-predivide-factor at 1");
  return success();
}

FailureOr<int64_t> ZeroPass::setUpGrid(ModuleOp module) {
  MLIRContext *ctx = &getContext();
  auto grid =
      module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
  if (!grid) {
    module->setAttr(
        dist::DistDialect::kGridAttrName,
        dist::GridAttr::get(ctx, {StringAttr::get(ctx, kDpAxis)}, {dpSize}));
    return 1;
  }
  std::optional<int64_t> size = grid.getAxisSize(kDpAxis);
  int64_t epSize = grid.getAxisSize("ep").value_or(1);
  if (size.value_or(1) * epSize != dpSize) {
    module.emitError() << "ds-zero: the module's grid " << grid
                       << " has dp = " << size.value_or(1)
                       << " x ep = " << epSize << " but dp-size is " << dpSize
                       << "; pass the same data-parallel size";
    signalPassFailure();
    return failure();
  }
  return epSize;
}

SmallVector<Value> ZeroPass::normAndClip(ModuleOp module, Step &step,
                                         OpBuilder &b, ArrayRef<Value> chunks,
                                         ArrayRef<Value> grads) {
  // The norm from the chunks, summed over the group; a pipeline stage's
  // share (a weight two stages hold counted once) is then summed over the
  // stages.
  Location loc = step.normOp->getLoc();
  auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
  Value partial = pipeline::normSquares(b, loc, module, step.fn, chunks);
  Value total = step.groups.dense.allReduce(partial, dist::ReductionKind::sum);
  if (module->getAttr(pipeline::kPipelineAttrName))
    total = dist::AllReduceOp::create(b, loc, scalarF32, total,
                                      b.getStrArrayAttr({"pp"}),
                                      dist::ReductionKind::sum);
  Value norm = math::SqrtOp::create(b, loc, total);
  SmallVector<Value> out(grads);
  if (auto clip = dyn_cast<train::ClipGradNormOp>(step.normOp)) {
    auto newClip = train::ClipGradNormOp::create(
        b, loc, ValueRange(out).getTypes(), scalarF32, out,
        clip.getMaxNormAttr(), norm);
    out.assign(newClip.getClipped().begin(), newClip.getClipped().end());
  }
  step.ret->setOperand(step.normIdx, norm);
  return out;
}

/// An fp16 step skips when any rank's gradients overflowed: each rank
/// checked its own, so the flag is their OR.
static void orOverflowFlags(Block &body, int64_t dpSize, ArrayAttr axes) {
  for (auto check :
       llvm::make_early_inc_range(body.getOps<train::HasOverflowOp>())) {
    OpBuilder fb(check->getContext());
    fb.setInsertionPointAfter(check);
    Location at = check.getLoc();
    auto scalarF32 = RankedTensorType::get({}, fb.getF32Type());
    DpBuilder dpFlag(fb, at, dpSize, std::nullopt, axes);
    auto asFloat = arith::UIToFPOp::create(fb, at, scalarF32, check);
    Value any = dpFlag.allReduce(asFloat, dist::ReductionKind::max);
    Value zero = arith::ConstantOp::create(
        fb, at, DenseElementsAttr::get(scalarF32, fb.getF32FloatAttr(0.0f)));
    Value flag =
        arith::CmpFOp::create(fb, at, arith::CmpFPredicate::OGT, any, zero);
    check.getResult().replaceAllUsesExcept(flag, asFloat);
  }
}

FailureOr<unsigned>
ZeroPass::addMasterWeights(Step &step, OpBuilder &b, Type narrow,
                           func::FuncOp grad, func::FuncOp eval,
                           SmallVectorImpl<Value> &masters) {
  func::FuncOp fn = step.fn;
  Block &body = step.body();
  unsigned numParams = step.numParams;
  unsigned masterAt = numParams;
  while (masterAt < fn.getNumArguments()) {
    auto st = fn.getArgAttrOfType<DictionaryAttr>(masterAt, kStateAttrName);
    if (!st || !st.get("param"))
      break;
    ++masterAt;
  }
  SmallVector<unsigned> at(numParams, masterAt);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs(numParams, fn.getLoc());
  for (unsigned p = 0; p < numParams; ++p) {
    // An expert parameter's master is cut over the ranks holding the
    // same experts, like its moments.
    types.push_back(
        step.groups.of(p).chunkType(cast<RankedTensorType>(step.fullTypes[p])));
    attrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(
             kStateAttrName,
             b.getDictionaryAttr(
                 {b.getNamedAttr("param", b.getStringAttr(paramName(fn, p))),
                  b.getNamedAttr("kind", b.getStringAttr("master"))})),
         b.getNamedAttr(dist::DistDialect::kShardingAttrName,
                        step.shardingOf(p))}));
  }
  if (failed(fn.insertArguments(at, types, attrs, locs)))
    return fail(fn, "cannot add the master-weight arguments");
  for (unsigned p = 0; p < numParams; ++p) {
    masters[p] = body.getArgument(masterAt + p);
    auto low = cast<RankedTensorType>(step.fullTypes[p]).clone(narrow);
    body.getArgument(p).setType(low);
  }
  // @forward_backward reads the 16-bit parameters directly.
  SmallVector<Type> gradArgs(grad.getArgumentTypes());
  for (unsigned p = 0; p < numParams; ++p) {
    BlockArgument arg = grad.getArgument(p);
    arg.setType(body.getArgument(p).getType());
    gradArgs[p] = arg.getType();
    for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
      user->getResult(0).replaceAllUsesWith(arg);
      user->erase();
    }
  }
  grad.setFunctionType(
      FunctionType::get(fn.getContext(), gradArgs, grad.getResultTypes()));
  if (eval && failed(readNarrowParams(eval, numParams, narrow)))
    return failure();
  return masterAt;
}

/// Each update runs on this rank's chunk of its parameter (the master
/// chunk under mixed precision); returns the updated chunks, in the
/// parameters' type.
static SmallVector<Value> shardUpdates(Step &step, OpBuilder &b,
                                       ArrayRef<Value> grads, Type narrow,
                                       SmallVectorImpl<Value> &masters) {
  SmallVector<Value> newChunks(step.numParams);
  for (const Update &u : step.updates) {
    Operation *op = u.op;
    b.setInsertionPoint(op);
    Value param = step.body().getArgument(u.paramArg);
    DpBuilder &group = step.groups.of(u.paramArg);
    // A partitioned expert chunk is held as rows (argChunkType); the
    // update runs on it flat, like its state.
    Value paramChunk = masters[u.paramArg];
    if (!narrow)
      paramChunk = step.partitioned[u.paramArg] ? group.flatten(param)
                                                : group.shard(param);
    SmallVector<Value> operands(op->getOperands());
    operands[0] = paramChunk;
    operands[u.gradOperand] = grads[u.paramArg];
    Type chunkT = paramChunk.getType();
    SmallVector<Type> resultTypes(op->getNumResults(), chunkT);
    OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                         op->getAttrs());
    Operation *sharded = b.create(state);
    op->replaceAllUsesWith(sharded->getResults());
    newChunks[u.paramArg] = sharded->getResult(0);
    if (param.getType() != chunkT && !narrow && step.partitioned[u.paramArg]) {
      Value rows = group.unflatten(sharded->getResult(0),
                                   cast<RankedTensorType>(param.getType()));
      sharded->getResult(0).replaceAllUsesExcept(rows, rows.getDefiningOp());
      newChunks[u.paramArg] = rows;
    }
    if (narrow) {
      masters[u.paramArg] = sharded->getResult(0);
      newChunks[u.paramArg] = nn::CastOp::create(
          b, op->getLoc(), cast<RankedTensorType>(chunkT).clone(narrow),
          sharded->getResult(0));
    }
    op->erase();
  }
  return newChunks;
}

/// Every rank needs the whole updated parameters (all of them below stage
/// 3, the persistent ones at it) for the next forward: the step returns
/// them all-gathered.
static void returnWholeParams(Step &step, OpBuilder &b,
                              ArrayRef<Value> newChunks, Type narrow,
                              int64_t allgatherBucketSize, int64_t packLimit) {
  b.setInsertionPoint(step.ret);
  SmallVector<Type> gatherTypes(step.fullTypes);
  if (narrow)
    for (Type &t : gatherTypes)
      t = cast<RankedTensorType>(t).clone(narrow);
  ArrayRef<bool> partitioned = step.partitioned;
  SmallVector<Value> whole = perGroup(
      step.groups, newChunks,
      [&](DpBuilder &g, ArrayRef<unsigned> members, ValueRange v) {
        SmallVector<unsigned> kept;
        SmallVector<Value> chunks;
        SmallVector<Type> types;
        for (auto [k, p] : llvm::enumerate(members))
          if (!partitioned[p]) {
            kept.push_back(p);
            chunks.push_back(v[k]);
            types.push_back(gatherTypes[p]);
          }
        SmallVector<Value> gathered = g.allGather(
            chunks, types,
            makeBuckets(pick(step.chunkSizes, kept), allgatherBucketSize,
                        packLimit / g.size()));
        SmallVector<Value> out(members.size());
        for (auto [k, p] : llvm::enumerate(kept))
          out[llvm::find(members, p) - members.begin()] = gathered[k];
        return out;
      });
  for (unsigned p = 0; p < step.numParams; ++p)
    if (!partitioned[p])
      step.ret->setOperand(p, whole[p]);
}

/// Gives the arguments of `f` in `args` (argument, step parameter) the
/// parameters' chunk types from `argTypes` and their sharding.
static void takeChunks(func::FuncOp f, Step &step,
                       ArrayRef<Type> argTypes,
                       ArrayRef<std::pair<unsigned, unsigned>> args) {
  for (auto [a, p] : args) {
    f.getBody().front().getArgument(a).setType(argTypes[p]);
    f.setArgAttr(a, dist::DistDialect::kShardingAttrName, step.shardingOf(p));
  }
  f.setFunctionType(FunctionType::get(f.getContext(),
                                      f.getBody().front().getArgumentTypes(),
                                      f.getResultTypes()));
}

LogicalResult ZeroPass::partitionParamsInCallees(Step &step,
                                                 ArrayRef<Type> argTypes) {
  // Each callee's (argument, parameter) pairs; every call of it must pass
  // the same parameters at the same places, as the schedule's calls do.
  llvm::MapVector<Operation *, SmallVector<std::pair<unsigned, unsigned>>>
      callees;
  Block &body = step.body();
  for (auto call : body.getOps<func::CallOp>()) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    SmallVector<std::pair<unsigned, unsigned>> args;
    for (auto [a, operand] : llvm::enumerate(call.getOperands()))
      if (auto arg = dyn_cast<BlockArgument>(operand);
          arg && arg.getOwner() == &body && arg.getArgNumber() < step.numParams &&
          step.partitioned[arg.getArgNumber()])
        args.push_back({unsigned(a), arg.getArgNumber()});
    if (args.empty())
      continue;
    if (!callee || callee.isExternal())
      return fail(call, "stage 3 gathers parameters inside the functions "
                        "@" + step.fn.getName() +
                            " calls, but @" + call.getCallee() +
                            " has no body");
    auto [it, inserted] = callees.insert({callee, args});
    if (!inserted && it->second != args)
      return fail(call, "@" + call.getCallee() +
                            " is called with other parameters at other "
                            "places; stage 3 needs one layout per function");
  }
  for (auto &[f, args] : callees) {
    takeChunks(cast<func::FuncOp>(f), step, argTypes, args);
    if (failed(gatherParamsIn(cast<func::FuncOp>(f), step, args)))
      return failure();
  }
  return success();
}

LogicalResult ZeroPass::partitionParamsIn(ModuleOp module, Step &step,
                                          ArrayRef<Type> argTypes,
                                          func::FuncOp eval) {
  func::FuncOp fn = step.fn;
  unsigned numParams = step.numParams;
  SmallVector<std::pair<unsigned, unsigned>> own;
  for (unsigned p = 0; p < numParams; ++p)
    if (step.partitioned[p])
      own.push_back({p, p});
  // A pipeline stage's step calls its forward and backward once per
  // micro-batch: each gathers what it reads, as @forward_backward does.
  if (module->getAttr(pipeline::kPipelineAttrName)) {
    if (failed(partitionParamsInCallees(step, argTypes)))
      return failure();
  } else {
    auto grad = module.lookupSymbol<func::FuncOp>(gradientEntry);
    if (!grad || grad.isExternal() || numLeadingParams(grad) != numParams)
      return fail(fn, "stage 3 gathers parameters inside @" + gradientEntry +
                          ", which must exist and take the same parameters "
                          "(ds-autodiff builds it)");
    takeChunks(grad, step, argTypes, own);
    if (failed(gatherParamsIn(grad, step, own)))
      return failure();
  }
  if (!eval)
    return success();
  takeChunks(eval, step, argTypes, own);
  return gatherParamsIn(eval, step, own);
}

LogicalResult ZeroPass::shardOptimizer(ModuleOp module, Step &step,
                                       OpBuilder &b, ArrayRef<Value> grads) {
  func::FuncOp fn = step.fn;
  Block &body = step.body();
  unsigned numParams = step.numParams;
  // Mixed precision at stage 1/2 keeps DeepSpeed's layout: every rank
  // holds the parameters in 16 bits (what the forward reads) and its
  // chunk of the f32 master copy as optimizer state; the update writes
  // the master chunk and the 16-bit chunk the all-gather spreads (half
  // the bytes of an f32 gather).
  auto grad = module.lookupSymbol<func::FuncOp>(gradientEntry);
  auto eval = module.lookupSymbol<func::FuncOp>(evalEntry);
  if (eval && (eval.isExternal() || numLeadingParams(eval) != numParams))
    return fail(eval, "@" + evalEntry +
                          " must take the step's parameters first, as "
                          "ds-eval-step builds it");
  Type narrow =
      stage <= 2 ? castOnlyType(fn, grad, numParams, step.updates) : Type();
  SmallVector<Value> masters(numParams);
  unsigned masterAt = 0;
  if (narrow) {
    FailureOr<unsigned> at =
        addMasterWeights(step, b, narrow, grad, eval, masters);
    if (failed(at))
      return failure();
    masterAt = *at;
  }
  SmallVector<Type> argTypes(body.getArgumentTypes());
  // State (and, at stage 3, parameters) become chunks.
  for (const Update &u : step.updates) {
    auto chunkT =
        step.groups.of(u.paramArg)
            .chunkType(cast<RankedTensorType>(step.fullTypes[u.paramArg]));
    SmallVector<unsigned> sharded(u.stateArgs);
    if (step.partitioned[u.paramArg])
      sharded.push_back(u.paramArg);
    for (unsigned a : sharded) {
      argTypes[a] = a == u.paramArg
                        ? step.groups.of(a).argChunkType(cast<RankedTensorType>(
                              step.fullTypes[u.paramArg]))
                        : chunkT;
      body.getArgument(a).setType(argTypes[a]);
      fn.setArgAttr(a, dist::DistDialect::kShardingAttrName,
                    step.shardingOf(u.paramArg));
    }
  }
  SmallVector<Value> newChunks = shardUpdates(step, b, grads, narrow, masters);
  if (!llvm::all_of(step.partitioned, [](bool p) { return p; }))
    returnWholeParams(step, b, newChunks, narrow, allgatherBucketSize,
                      packLimit);
  if (narrow) {
    SmallVector<Value> results(step.ret.getOperands());
    results.insert(results.begin() + masterAt, masters.begin(), masters.end());
    b.setInsertionPoint(step.ret);
    auto newRet = func::ReturnOp::create(b, step.ret.getLoc(), results);
    step.ret.erase();
    step.ret = newRet;
  }
  SmallVector<Type> resultTypes(step.ret.getOperandTypes());
  fn.setFunctionType(FunctionType::get(fn.getContext(), argTypes, resultTypes));
  if (stage == 3)
    return partitionParamsIn(module, step, argTypes, eval);
  return success();
}

void ZeroPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkOptions(module)))
    return;
  FailureOr<int64_t> epSize = setUpGrid(module);
  if (failed(epSize))
    return;

  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn || fn.isExternal()) {
    module.emitError() << "ds-zero: no func.func @" << entry
                       << " with a body; run the training passes first";
    return signalPassFailure();
  }
  SmallVector<Update> updates;
  if (failed(collectUpdates(fn, updates)))
    return;
  if (stage >= 1)
    for (const Update &u : updates)
      if (isa<train::LambOp>(u.op)) {
        (void)fail(u.op, "Lamb's trust ratio needs each parameter's whole "
                         "norm, which ZeRO stage " +
                             Twine(stage) +
                             " shards; use Adam/AdamW/SGD or stage 0 (as "
                             "DeepSpeed, which refuses Lamb with ZeRO)");
        return;
      }
  if (dpSize == 1)
    return;

  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  unsigned numParams = numLeadingParams(fn);
  unsigned numResults = ret.getNumOperands();

  // The norm op: its operands are the accumulated gradients, in parameter
  // order (ds-clip-grads).
  Operation *normOp = ret.getOperand(numResults - 1).getDefiningOp();
  if (!normOp || !isa<train::ClipGradNormOp, train::GlobalNormOp>(normOp) ||
      normOp->getNumOperands() != numParams)
    return (void)fail(fn, "@" + entry +
                              " must return the gradient norm of "
                              "dstrain.clip_grad_norm or dstrain.global_norm "
                              "over every gradient (ds-clip-grads)");
  SmallVector<Value> grads(normOp->getOperands());

  OpBuilder b(normOp);
  Location loc = normOp->getLoc();
  // DeepSpeed's gradient reduction: with prescaling all of the division
  // comes before the sum; otherwise 1/predivide before and predivide/n
  // after. The default (predivide 1) is the collective's own mean.
  double n = static_cast<double>(dpSize);
  std::optional<MeanSplit> split =
      meanSplit(n, prescaleGradients, gradientPredivideFactor);
  ArrayAttr denseAxes = *epSize > 1 ? b.getStrArrayAttr({kDpAxis, "ep"})
                                    : b.getStrArrayAttr({kDpAxis});
  Step step{
      fn,
      ret,
      std::move(updates),
      numParams,
      numResults - 3,
      numResults - 1,
      normOp,
      Groups{DpBuilder(b, loc, dpSize, split, denseAxes), std::nullopt, {}},
      denseAxes,
      SmallVector<Type>(fn.getArgumentTypes().take_front(numParams)),
      {},
      {}};
  Groups &groups = step.groups;
  for (unsigned p = 0; p < numParams; ++p)
    groups.isExpert.push_back(
        *epSize > 1 && fn.getArgAttr(p, dist::DistDialect::kExpertsAttrName));
  if (*epSize > 1)
    groups.experts.emplace(
        b, loc, dpSize / *epSize,
        meanSplit(n, prescaleGradients, gradientPredivideFactor)
            .value_or(MeanSplit{1, 1 / n}),
        b.getStrArrayAttr({kDpAxis}), /*expertRows=*/stage == 3);
  SmallVector<int64_t> sizes;
  for (auto [p, t] : llvm::enumerate(step.fullTypes)) {
    sizes.push_back(DpBuilder::numel(cast<RankedTensorType>(t)));
    step.chunkSizes.push_back(groups.of(p).chunk(cast<RankedTensorType>(t)));
  }
  // Stage 3 partitions a parameter unless it persists (DeepSpeed's
  // `ds_numel <= stage3_param_persistence_threshold`): a persistent one is
  // whole on every rank, as at stage 2. So does an expert parameter whose
  // experts no other rank holds (ep_size = the data-parallel size).
  for (auto [p, size] : llvm::enumerate(sizes))
    step.partitioned.push_back(stage == 3 && size > paramPersistenceThreshold &&
                               groups.of(p).size() > 1);

  // 1. Reduce the gradients at the step boundary.
  SmallVector<Value> reduced, chunks;
  if (stage <= 1) {
    reduced =
        perGroup(groups, grads,
                 [&](DpBuilder &g, ArrayRef<unsigned> members, ValueRange v) {
                   return g.allReduceMean(
                       v, makeBuckets(pick(sizes, members), reduceBucketSize, packLimit));
                 });
    for (auto [p, g] : llvm::enumerate(reduced))
      chunks.push_back(groups.of(p).shard(g));
  } else {
    chunks = perGroup(
        groups, grads,
        [&](DpBuilder &g, ArrayRef<unsigned> members, ValueRange v) {
          return g.reduceScatterMean(
              v, makeBuckets(pick(step.chunkSizes, members), reduceBucketSize,
                          packLimit / g.size()));
        });
  }

  // 2. The norm from the chunks, and the clipping. 2b. Overflow flags.
  SmallVector<Value> finalGrads =
      normAndClip(module, step, b, chunks, stage == 0 ? reduced : chunks);
  orOverflowFlags(body, dpSize, denseAxes);

  // 3. The loss every rank reports: the group's mean.
  b.setInsertionPoint(step.ret);
  step.ret->setOperand(step.lossIdx,
                       groups.dense.allReduce(step.ret.getOperand(step.lossIdx),
                                              dist::ReductionKind::avg));

  // 4. The optimizer update.
  if (stage == 0) {
    for (const Update &u : step.updates)
      u.op->setOperand(u.gradOperand, finalGrads[u.paramArg]);
  } else if (failed(shardOptimizer(module, step, b, finalGrads))) {
    return;
  }
  normOp->erase();
}

} // namespace
