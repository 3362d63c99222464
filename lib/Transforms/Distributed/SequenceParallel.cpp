//===- SequenceParallel.cpp - DeepSpeed-Ulysses on the model graph --------===//
//
// Works on the model contract. Every rank of a sequence-parallel group reads
// the same micro-batch and keeps its T/S positions of it; the sequence dim
// is then followed forward through the graph, op by op, and each value that
// carries it is retyped to the rank's share. Attention is the one op that
// needs every position: an all-to-all over sp trades the sequence shard for
// a head shard before it, and the inverse all-to-all trades back after it.
// An op the pass does not know to act on each position alone is refused.
//
//===----------------------------------------------------------------------===//
#include "SequenceShards.h"
#include "ds/Transforms/Passes.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <numeric>

namespace mlir::ds {
#define GEN_PASS_DEF_SEQUENCEPARALLEL
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kSpAxis = "sp";
// ds-import's marker of a batch argument (ds/Import/Import.h).
constexpr StringLiteral kBatchAttr = "dsnn.batch";

using seq::withDim;

RankedTensorType permuted(Type t, ArrayRef<int64_t> perm) {
  auto ranked = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(ranked.getDimSize(p));
  return ranked.clone(shape);
}

RankedTensorType reshaped(Type t, ArrayRef<int64_t> shape) {
  return cast<RankedTensorType>(t).clone(shape);
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

struct SequenceParallelPass
    : mlir::ds::impl::SequenceParallelBase<SequenceParallelPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// The sequence length T and this rank's share T / S.
  int64_t seqLen = 0, local = 0;
  /// Values that hold this rank's share of the sequence, and the dim it is.
  DenseMap<Value, int64_t> seqDim;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-sequence-parallel: " << msg;
    signalPassFailure();
    return failure();
  }

  ArrayAttr axes() {
    return ArrayAttr::get(&getContext(),
                          {StringAttr::get(&getContext(), kSpAxis)});
  }

  Value slice(OpBuilder &b, Location loc, Value v, int64_t dim);
  Value exchange(OpBuilder &b, Location loc, Value v);
  Value toHeads(OpBuilder &b, Location loc, Value v);
  Value fromHeads(OpBuilder &b, Location loc, Value v);

  LogicalResult sliceInputs(func::FuncOp fn);
  LogicalResult visitBlock(Block &block);
  LogicalResult visit(Operation *op);
  LogicalResult setResult(Operation *op, Value result, int64_t dim);
  LogicalResult elementwise(Operation *op, ArrayRef<unsigned> checked);
  LogicalResult attention(nn::AttentionOp op);
  LogicalResult loss(nn::CrossEntropyOp op);
  void sumParamGradients(func::FuncOp fn);
};

/// This rank's share of `v` along `dim`.
Value SequenceParallelPass::slice(OpBuilder &b, Location loc, Value v,
                                  int64_t dim) {
  return seq::alongLeadingDim(
      b, loc, v, dim, local,
      [&](Value x, int64_t d, RankedTensorType type) -> Value {
        return dist::ShardOp::create(b, loc, type, x, axes(),
                                     b.getI64IntegerAttr(d));
      });
}

Value SequenceParallelPass::exchange(OpBuilder &b, Location loc, Value v) {
  ++numAllToAlls;
  return dist::AllToAllOp::create(b, loc, v.getType(), v, axes(),
                                  b.getI64IntegerAttr(0),
                                  b.getI64IntegerAttr(0));
}

/// [B, H, T/S, D] of this rank's positions -> [B, H/S, T, D] of its heads.
/// The exchange runs along the leading dim (heads in front): slice j of
/// the heads goes to group rank j, and what rank s sends is the block of
/// positions s·T/S onwards, so the blocks arrive in global order.
Value SequenceParallelPass::toHeads(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t batch = type.getDimSize(0), heads = type.getDimSize(1),
          dh = type.getDimSize(3), s = size;
  Value front = nn::TransposeOp::create(b, loc, permuted(type, {1, 0, 2, 3}), v,
                                        b.getDenseI64ArrayAttr({1, 0, 2, 3}));
  Value got = exchange(b, loc, front);
  Value blocks = nn::ReshapeOp::create(
      b, loc, reshaped(type, {s, heads / s, batch, local, dh}), got);
  Value ordered = nn::TransposeOp::create(
      b, loc, reshaped(type, {batch, heads / s, s, local, dh}), blocks,
      b.getDenseI64ArrayAttr({2, 1, 0, 3, 4}));
  return nn::ReshapeOp::create(
      b, loc, reshaped(type, {batch, heads / s, seqLen, dh}), ordered);
}

/// The inverse of toHeads: [B, H/S, T, D] -> [B, H, T/S, D].
Value SequenceParallelPass::fromHeads(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t batch = type.getDimSize(0), localHeads = type.getDimSize(1),
          dh = type.getDimSize(3), s = size;
  Value blocks = nn::ReshapeOp::create(
      b, loc, reshaped(type, {batch, localHeads, s, local, dh}), v);
  Value byRank = nn::TransposeOp::create(
      b, loc, reshaped(type, {s, localHeads, batch, local, dh}), blocks,
      b.getDenseI64ArrayAttr({2, 1, 0, 3, 4}));
  Value flat = nn::ReshapeOp::create(
      b, loc, reshaped(type, {s * localHeads, batch, local, dh}), byRank);
  Value got = exchange(b, loc, flat);
  return nn::TransposeOp::create(
      b, loc, reshaped(type, {batch, s * localHeads, local, dh}), got,
      b.getDenseI64ArrayAttr({1, 0, 2, 3}));
}

/// The sequence's sources: the batch arguments [B, T, ...] and the
/// position ids (an integer constant [T] read only by embeddings), whose
/// slice holds the global positions of this rank's tokens.
LogicalResult SequenceParallelPass::sliceInputs(func::FuncOp fn) {
  OpBuilder b(fn.getBody());
  for (BlockArgument arg : fn.getArguments()) {
    if (!fn.getArgAttr(arg.getArgNumber(), kBatchAttr) || rankOf(arg) < 2)
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getDimSize(1) != seqLen)
      return fail(fn, "batch argument #" + Twine(arg.getArgNumber()) +
                          " has dim 1 of " + Twine(type.getDimSize(1)) +
                          ", not the sequence length " + Twine(seqLen) +
                          "; sequence parallelism splits [batch, sequence, "
                          "...] inputs");
    SmallVector<OpOperand *> uses(llvm::make_pointer_range(arg.getUses()));
    Value piece = slice(b, arg.getLoc(), arg, 1);
    for (OpOperand *use : uses)
      use->set(piece);
    seqDim[piece] = 1;
  }
  SmallVector<arith::ConstantOp> positions;
  fn.walk([&](arith::ConstantOp op) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (type && type.getRank() == 1 && type.getDimSize(0) == seqLen &&
        isa<IntegerType>(type.getElementType()) && !op->use_empty() &&
        llvm::all_of(op->getUses(), [](OpOperand &use) {
          return isa<nn::EmbeddingOp>(use.getOwner()) &&
                 use.getOperandNumber() == 0;
        }))
      positions.push_back(op);
  });
  for (arith::ConstantOp op : positions) {
    b.setInsertionPointAfter(op);
    SmallVector<OpOperand *> uses(
        llvm::make_pointer_range(op.getResult().getUses()));
    Value piece = slice(b, op.getLoc(), op, 0);
    for (OpOperand *use : uses)
      use->set(piece);
    seqDim[piece] = 0;
  }
  return success();
}

LogicalResult SequenceParallelPass::setResult(Operation *op, Value result,
                                              int64_t dim) {
  if (!seq::shrinkSequence(result, dim, seqLen, local, seqDim))
    return fail(op, "cannot follow the sequence dim through this op (result " +
                        Twine(dim < 0 ? -1 : dim) +
                        " is not the sequence of length " + Twine(seqLen) +
                        "); sequence parallelism supports GPT-style models");
  return success();
}

/// An op that acts on each position alone, with NumPy broadcasting: the
/// sequence dim stays where the operands align it. An operand in
/// `checked` that is not sharded but carries the sequence (a table indexed
/// by position) must be a constant, which is sliced.
LogicalResult SequenceParallelPass::elementwise(Operation *op,
                                                ArrayRef<unsigned> checked) {
  int64_t rank = rankOf(op->getResult(0));
  std::string why;
  FailureOr<int64_t> dim = seq::broadcastSequenceDim(op, checked, seqDim, why);
  if (failed(dim))
    return fail(op, why);
  for (unsigned i : checked) {
    Value v = op->getOperand(i);
    int64_t j = *dim - (rank - rankOf(v));
    if (seqDim.count(v) || j < 0 ||
        cast<RankedTensorType>(v.getType()).getDimSize(j) == 1)
      continue;
    // A constant table indexed by position (RoPE's cos and sin, a
    // broadcast of zeros): its slice holds this rank's global positions.
    if (!v.getDefiningOp<arith::ConstantOp>())
      return fail(op, "operand #" + Twine(i) +
                          " is indexed by the sequence but is neither "
                          "sharded along it nor a constant that could be "
                          "sliced");
    OpBuilder b(op);
    op->setOperand(i, slice(b, op->getLoc(), v, j));
  }
  for (Value r : op->getResults())
    if (failed(setResult(op, r, *dim)))
      return failure();
  return success();
}

LogicalResult SequenceParallelPass::attention(nn::AttentionOp op) {
  for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
    auto it = seqDim.find(v);
    if (rankOf(v) != 4 || it == seqDim.end() || it->second != 2)
      return fail(op, "expects [batch, heads, sequence, head_dim] operands "
                      "sharded along the sequence");
    int64_t heads = cast<RankedTensorType>(v.getType()).getDimSize(1);
    if (heads % size != 0)
      return fail(op, Twine(heads) +
                          " attention heads are not divisible by "
                          "sequence_parallel_size " +
                          Twine(size) +
                          "; each rank of the sp group attends with heads / "
                          "sequence_parallel_size heads");
  }
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value q = toHeads(b, loc, op.getQuery());
  Value k = toHeads(b, loc, op.getKey());
  Value v = toHeads(b, loc, op.getValue());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  auto vType = cast<RankedTensorType>(v.getType());
  auto resultType = out.clone(
      {out.getDimSize(0), vType.getDimSize(1), seqLen, out.getDimSize(3)});
  // Global positions on every rank: the causal mask is the one-rank one.
  auto whole = nn::AttentionOp::create(b, loc, resultType, q, k, v,
                                       op.getCausalAttr(), op.getScaleAttr());
  Value back = fromHeads(b, loc, whole);
  op.getResult().replaceAllUsesWith(back);
  op.erase();
  seqDim[back] = 2;
  ++numAttention;
  return success();
}

/// Each rank's loss is the mean over its T/S positions; the group's mean of
/// those, the same value on every rank, is the mean over the global tokens
/// when every position counts. Its backward seeds each rank with 1/S.
LogicalResult SequenceParallelPass::loss(nn::CrossEntropyOp op) {
  if (op.getMax())
    return fail(op, "the vocabulary-parallel cross-entropy is not "
                    "supported with sequence parallelism");
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getResult().getType());
  Value inverse = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          type, b.getFloatAttr(type.getElementType(), 1.0 / double(size))));
  Value part = nn::MulOp::create(b, loc, type, op.getResult(), inverse);
  Value sum = dist::AllReduceOp::create(
      b, loc, type, part, axes(),
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::sum));
  op.getResult().replaceAllUsesExcept(sum, part.getDefiningOp());
  return success();
}

LogicalResult SequenceParallelPass::visit(Operation *op) {
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (failed(visitBlock(block)))
        return failure();
  if (auto layer = dyn_cast<nn::LayerOp>(op)) {
    Operation *yield = layer.getBody().front().getTerminator();
    for (auto [r, y] : llvm::zip(layer->getResults(), yield->getOperands()))
      if (auto it = seqDim.find(y); it != seqDim.end()) {
        r.setType(y.getType());
        seqDim[r] = it->second;
      }
    return success();
  }
  if (!llvm::any_of(op->getOperands(),
                    [&](Value v) { return seqDim.count(v); }))
    return success();
  if (isa<nn::YieldOp>(op))
    return success();
  if (isa<func::ReturnOp>(op))
    return fail(op, "returns a sequence-sharded value; the model contract "
                    "must end in a loss (dsnn.cross_entropy)");
  if (auto attn = dyn_cast<nn::AttentionOp>(op))
    return attention(attn);
  if (auto ce = dyn_cast<nn::CrossEntropyOp>(op))
    return loss(ce);
  if (isa<nn::EmbeddingOp>(op)) {
    if (!seqDim.count(op->getOperand(0)) || seqDim.count(op->getOperand(1)))
      return fail(op, "only the indices of an embedding may be sharded "
                      "along the sequence");
    return setResult(op, op->getResult(0), seqDim[op->getOperand(0)]);
  }
  if (auto linear = dyn_cast<nn::LinearOp>(op)) {
    int64_t dim = seqDim.lookup(linear.getInput());
    if (!seqDim.count(linear.getInput()) ||
        dim == rankOf(linear.getInput()) - 1)
      return fail(op, "a linear must read the sequence-sharded value as its "
                      "input, outside its feature dim");
    return setResult(op, linear.getResult(), dim);
  }
  if (auto concat = dyn_cast<nn::ConcatOp>(op)) {
    for (Value v : concat.getInputs())
      if (!seqDim.count(v) || seqDim[v] == int64_t(concat.getDim()))
        return fail(op, "concatenates along the sequence dim or with a "
                        "value that is not sharded along it");
    SmallVector<unsigned> all(op->getNumOperands());
    std::iota(all.begin(), all.end(), 0);
    return elementwise(op, all);
  }
  if (auto split = dyn_cast<nn::SplitOp>(op)) {
    if (int64_t(split.getDim()) == seqDim.lookup(split.getInput()))
      return fail(op, "splits along the sequence dim");
    return elementwise(op, {0});
  }
  if (auto reshape = dyn_cast<nn::ReshapeOp>(op)) {
    // The result dim with the same product of dims before it.
    auto in = cast<RankedTensorType>(reshape.getInput().getType());
    auto out = cast<RankedTensorType>(reshape.getResult().getType());
    int64_t dim = seqDim.lookup(reshape.getInput()), before = 1, k = 0;
    for (int64_t d = 0; d < dim; ++d)
      before *= in.getDimSize(d);
    for (int64_t prod = 1; k < out.getRank(); prod *= out.getDimSize(k++))
      if (prod == before && out.getDimSize(k) == seqLen)
        break;
    return setResult(op, reshape.getResult(), k);
  }
  if (auto transpose = dyn_cast<nn::TransposeOp>(op)) {
    int64_t dim = seqDim.lookup(transpose.getInput());
    auto perm = transpose.getPermutation();
    auto at = llvm::find(perm, dim);
    return setResult(op, transpose.getResult(), at - perm.begin());
  }
  if (isa<nn::LayerNormOp, nn::RMSNormOp>(op)) {
    // Normalized over the last dim, which is never the sequence.
    if (seqDim.lookup(op->getOperand(0)) == rankOf(op->getOperand(0)) - 1)
      return fail(op, "normalizes over the sequence dim");
    return elementwise(op, {0});
  }
  if (isa<nn::GeluOp, nn::ReluOp, nn::SiluOp, nn::TanhOp, nn::ExpOp, nn::NegOp,
          nn::RsqrtOp, nn::CastOp>(op))
    return elementwise(op, {0});
  if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op))
    return elementwise(op, {0, 1});
  return fail(op,
              "'" + op->getName().getStringRef() +
                  "' reads a sequence-sharded value but is not known to "
                  "act on each position alone; sequence parallelism supports "
                  "GPT-style models (embeddings, layer norms, linears, "
                  "elementwise ops, attention, cross-entropy)");
}

LogicalResult SequenceParallelPass::visitBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block))
    if (failed(visit(&op)))
      return failure();
  return success();
}

/// Each parameter through Megatron's f over sp: its gradient is summed
/// over the group's positions, so it stays the same on every rank of it.
void SequenceParallelPass::sumParamGradients(func::FuncOp fn) {
  OpBuilder b(fn.getBody());
  for (BlockArgument arg : fn.getArguments()) {
    if (!fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName) ||
        arg.use_empty() ||
        !isa<FloatType>(cast<RankedTensorType>(arg.getType()).getElementType()))
      continue;
    auto copy = dist::CopyToGroupOp::create(b, arg.getLoc(), arg.getType(), arg,
                                            axes());
    arg.replaceAllUsesExcept(copy, copy);
  }
}

void SequenceParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  if (size < 1 || dpSize < 1) {
    module.emitError() << "ds-sequence-parallel: size " << size
                       << " and dp-size " << dpSize << " must be >= 1";
    return signalPassFailure();
  }
  if (size == 1)
    return;
  // A pass instance may run on several modules.
  seqDim.clear();
  seqLen = local = 0;
  if (module->hasAttr(dist::DistDialect::kGridAttrName))
    return (void)fail(module,
                      "the module already has a grid; run this pass first, "
                      "before any other distribution");
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.isExternal())
    return (void)fail(module, "no func.func @forward with a body (the model "
                              "contract)");
  SmallVector<nn::AttentionOp> attentions;
  fn.walk([&](nn::AttentionOp op) { attentions.push_back(op); });
  if (attentions.empty())
    return (void)fail(fn, "the model has no dsnn.attention; Ulysses "
                          "sequence parallelism splits attention by heads");
  for (nn::AttentionOp op : attentions) {
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto k = cast<RankedTensorType>(op.getKey().getType());
    int64_t t = q.getDimSize(q.getRank() - 2);
    if (t != k.getDimSize(k.getRank() - 2) || (seqLen && t != seqLen))
      return (void)fail(op, "attention over different sequence lengths is "
                            "not supported with sequence parallelism");
    seqLen = t;
  }
  if (seqLen % size != 0)
    return (void)fail(fn, "sequence length " + Twine(seqLen) +
                              " is not divisible by sequence_parallel_size " +
                              Twine(size) +
                              "; use a sequence length that is a multiple of "
                              "it");
  local = seqLen / size;
  module->setAttr(dist::DistDialect::kGridAttrName,
                  dist::GridAttr::get(ctx,
                                      {StringAttr::get(ctx, "dp"),
                                       StringAttr::get(ctx, kSpAxis)},
                                      {dpSize, size}));
  if (failed(sliceInputs(fn)) || failed(visitBlock(fn.getBody().front())))
    return;
  sumParamGradients(fn);
}

} // namespace
