//===- TensorParallel.cpp - Megatron's layout on the model graph ----------===//
//
// Works on the model contract. A candidate column linear is followed
// forward from its output through ops that act on each slice of the cut dim
// alone; if every path ends in the input of another parameter linear (a row
// linear), the candidate is cut. Nothing is matched by name, so an MLP, a
// SwiGLU MLP and an attention block are the same case.
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
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ds {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kTpAxis = "tp";

/// `v` when it is a parameter argument that one op alone uses: only such a
/// parameter can be cut without changing its other users.
BlockArgument soleParam(Value v) {
  auto arg = dyn_cast_or_null<BlockArgument>(v);
  if (!arg || !arg.hasOneUse())
    return {};
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn || !fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName))
    return {};
  return arg;
}

/// A linear whose weight (and bias, if any) can be cut.
bool isCuttable(nn::LinearOp op) {
  return soleParam(op.getWeight()) &&
         (!op.getBias() || soleParam(op.getBias()));
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Where the cut dim `dim` of the reshape's input lands in its result: the
/// result dim with the same product of dims before it, when the cut slices
/// that dim evenly (its size is a multiple of `t`). Size-1 dims are passed
/// over: with a batch of 1, [1, KV, r, T, D] -> [1, H, T, D] keeps KV heads
/// in dim 1, not in dim 0.
std::optional<int64_t> reshapedDim(nn::ReshapeOp op, int64_t dim) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= in.getDimSize(d);
  int64_t product = 1;
  for (int64_t d = 0; d < out.getRank(); ++d) {
    if (product == before && out.getDimSize(d) != 1)
      return d;
    product *= out.getDimSize(d);
  }
  return std::nullopt;
}

/// Whether `v` is a linear's output, directly or as the result of the layer
/// (a module called on its own) that computed it.
bool madeByLinear(Value v) {
  if (auto result = dyn_cast<OpResult>(v))
    if (auto layer = dyn_cast<nn::LayerOp>(result.getOwner()))
      v = layer.getBody().front().getTerminator()->getOperand(
          result.getResultNumber());
  return isa_and_nonnull<nn::LinearOp>(v.getDefiningOp());
}

/// Everything a column linear's cut reaches: the values on 1/T of a dim,
/// the row linears it ends in, and the first problem that stops it.
struct Reach {
  llvm::MapVector<Value, int64_t> dims;
  llvm::SetVector<Operation *> rows;
  /// Operands a multi-input op needs cut too, with the dim it expects.
  SmallVector<std::pair<OpOperand *, int64_t>> needs;
  /// Operands broadcast along the cut dim: each rank reads them whole.
  SmallVector<OpOperand *> wholes;
  /// The op the cut could not follow through.
  Operation *stop = nullptr;
  int64_t blocks = 1;
  /// A width the group does not divide: reported only if the cut holds.
  std::string indivisible;
  bool ok = true;
};

/// Where a binary op puts its operand `use`'s cut dim `dim` under NumPy
/// broadcasting, noting what the other operand needs: cut alike where it
/// spans that dim, read whole where it broadcasts along it (RoPE's cos/sin
/// tables [T, D] against heads [B, H, T, D]; the zeros that repeat GQA's KV
/// heads). Nullopt when the cut dim itself is the one broadcast.
std::optional<int64_t> broadcastDim(Reach &r, OpOperand &use, int64_t dim) {
  Operation *op = use.getOwner();
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t at = dim + result.getRank() - rankOf(use.get());
  if (cast<RankedTensorType>(use.get().getType()).getDimSize(dim) !=
      result.getDimSize(at))
    return std::nullopt;
  OpOperand &other = op->getOpOperand(1 - use.getOperandNumber());
  auto type = cast<RankedTensorType>(other.get().getType());
  int64_t otherDim = at - (result.getRank() - type.getRank());
  if (otherDim >= 0 && type.getDimSize(otherDim) != 1)
    r.needs.push_back({&other, otherDim});
  else
    r.wholes.push_back(&other);
  return at;
}

/// Whether `column`'s output reaches a dsnn.attention (or, written out, a
/// batched product of scores) before any other linear: it is then a Q, K or
/// V projection.
bool feedsAttention(nn::LinearOp column) {
  SmallVector<Value> work{column.getResult()};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      if (isa<nn::AttentionOp, nn::BatchMatmulOp>(user))
        return true;
      if (isa<nn::YieldOp>(user) && isa<nn::LayerOp>(user->getParentOp()))
        llvm::append_range(work, user->getParentOp()->getResults());
      else if (!isa<nn::LinearOp>(user))
        llvm::append_range(work, user->getResults());
    }
  }
  return false;
}

/// The name of a cuttable linear's weight, for messages.
StringRef weightName(nn::LinearOp op) {
  auto arg = cast<BlockArgument>(op.getWeight());
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return fn
      .getArgAttrOfType<nn::ParamAttr>(arg.getArgNumber(), nn::kParamAttrName)
      .getName();
}

struct TensorParallelPass
    : mlir::ds::impl::TensorParallelBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-tensor-parallel: " << msg;
    signalPassFailure();
    return failure();
  }

  Reach follow(nn::LinearOp column);
  void visit(Reach &r, Value v, int64_t dim, OpOperand &use,
             SmallVectorImpl<std::pair<Value, int64_t>> &work);
  LogicalResult checkNeeds(const Reach &all);
  void cutParam(BlockArgument arg, int64_t dim, int64_t blocks);
  void rewriteRow(nn::LinearOp row);
  LogicalResult vocabParallel();
  Value vocabOffset(OpBuilder &b, Location loc, int64_t rows);
  Value allReduce(OpBuilder &b, Location loc, Value v,
                  dist::ReductionKind kind);

  // Megatron sequence parallelism (`sequence-parallel`).
  /// The sequence length, from the batch arguments [batch, sequence].
  int64_t seqLen = 0;
  /// The all-reduces (g, the embedding's) that become reduce-scatters.
  SmallVector<dist::AllReduceOp> seqSources;
  /// Values on this rank's 1/T of the sequence, and the dim it is.
  DenseMap<Value, int64_t> seqDim;

  LogicalResult findSeqLen(ModuleOp module);
  Value gatherSeq(OpBuilder &b, Location loc, Value v, int64_t dim);
  Value scatterSeq(OpBuilder &b, Location loc, Value v, int64_t dim);
  Value sliceSeq(OpBuilder &b, Location loc, Value v, int64_t dim);
  void sumOverGroup(Operation *op, unsigned operand);
  LogicalResult placeOnSequenceShards(ModuleOp module);
  LogicalResult visitSeq(Operation *op);
  LogicalResult setSeqResult(Operation *op, Value result, int64_t dim);
  LogicalResult elementwiseSeq(Operation *op, ArrayRef<unsigned> operands);
};

/// Adds the values `use` makes cut, or marks the reach failed.
void TensorParallelPass::visit(
    Reach &r, Value v, int64_t dim, OpOperand &use,
    SmallVectorImpl<std::pair<Value, int64_t>> &work) {
  Operation *user = use.getOwner();
  auto cutTo = [&](Value result, int64_t d) {
    int64_t n = cast<RankedTensorType>(result.getType()).getDimSize(d);
    if (n % size != 0 && r.indivisible.empty())
      r.indivisible = "'" + user->getName().getStringRef().str() +
                      "' result dim " + std::to_string(d) + " is " +
                      std::to_string(n) + ", which tensor-parallel size " +
                      std::to_string(size) +
                      " does not divide (heads, key/value heads and MLP width "
                      "must split evenly over the ranks)";
    work.push_back({result, d});
  };
  if (auto linear = dyn_cast<nn::LinearOp>(user)) {
    if (use.getOperandNumber() == 0 && dim == rankOf(v) - 1 &&
        isCuttable(linear)) {
      r.rows.insert(linear);
      return;
    }
  } else if (isa<nn::GeluOp, nn::ReluOp, nn::SiluOp, nn::TanhOp, nn::NegOp>(
                 user)) {
    return cutTo(user->getResult(0), dim);
  } else if (isa<nn::AddOp, nn::MulOp, nn::SubOp, nn::DivOp>(user)) {
    if (std::optional<int64_t> d = broadcastDim(r, use, dim))
      return cutTo(user->getResult(0), *d);
  } else if (auto concat = dyn_cast<nn::ConcatOp>(user)) {
    // RoPE's rotate_half joins pieces of head_dim: each head stays on its
    // rank. Joining along the cut dim would interleave the ranks' pieces.
    if (concat.getDim() != dim) {
      for (OpOperand &operand : user->getOpOperands())
        if (&operand != &use)
          r.needs.push_back({&operand, dim});
      return cutTo(concat.getResult(), dim);
    }
  } else if (auto split = dyn_cast<nn::SplitOp>(user)) {
    // Along the cut dim only as a fused projection's equal blocks (Q, K,
    // V); GQA's unequal Q and KV blocks have no such piece yet.
    bool fused = split.getDim() == dim && madeByLinear(v) &&
                 llvm::all_equal(split.getResultTypes());
    if (split.getDim() != dim || fused) {
      if (fused)
        r.blocks = split.getNumResults();
      for (Value piece : split.getResults())
        cutTo(piece, dim);
      return;
    }
  } else if (auto reshape = dyn_cast<nn::ReshapeOp>(user)) {
    if (std::optional<int64_t> d = reshapedDim(reshape, dim))
      return cutTo(reshape.getResult(), *d);
  } else if (auto transpose = dyn_cast<nn::TransposeOp>(user)) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    auto it = llvm::find(perm, dim);
    return cutTo(transpose.getResult(), it - perm.begin());
  } else if (isa<nn::YieldOp>(user) && isa<nn::LayerOp>(user->getParentOp())) {
    // Out of its layer: a projection called as a module of its own.
    return cutTo(user->getParentOp()->getResult(use.getOperandNumber()), dim);
  } else if (auto select = dyn_cast<nn::SelectOp>(user)) {
    // masked_fill with a mask from the data: a branch cut like the value
    // where it spans the cut dim, read whole where it broadcasts along it
    // (a fill constant). The i1 mask has no gradient to lose, so it may be
    // read whole even when computed.
    auto result = cast<RankedTensorType>(select.getType());
    int64_t at = dim + result.getRank() - rankOf(v);
    if (use.getOperandNumber() != 0 &&
        cast<RankedTensorType>(v.getType()).getDimSize(dim) ==
            result.getDimSize(at)) {
      for (OpOperand &other : user->getOpOperands()) {
        if (&other == &use)
          continue;
        auto type = cast<RankedTensorType>(other.get().getType());
        int64_t d = at - (result.getRank() - type.getRank());
        if (d >= 0 && type.getDimSize(d) != 1)
          r.needs.push_back({&other, d});
        else if (other.getOperandNumber() != 0)
          r.wholes.push_back(&other);
      }
      return cutTo(select.getResult(), at);
    }
  } else if (auto softmax = dyn_cast<nn::SoftmaxOp>(user)) {
    // Attention written out (an imported model's scores): normalizing
    // along another dim than the heads keeps each head on its rank.
    if (softmax.getNormalizedDim() != dim)
      return cutTo(softmax.getResult(), dim);
  } else if (auto bmm = dyn_cast<nn::BatchMatmulOp>(user)) {
    // Q·Kᵀ and P·V over [batch, heads, ..]: a batch dim cut in both
    // operands is cut in the product.
    if (dim < rankOf(v) - 2) {
      r.needs.push_back({&user->getOpOperand(1 - use.getOperandNumber()),
                         dim});
      return cutTo(bmm.getResult(), dim);
    }
  } else if (auto attention = dyn_cast<nn::AttentionOp>(user)) {
    // [batch, heads, seq, head_dim]: each rank attends over its heads.
    if (dim == 1) {
      for (OpOperand &operand : user->getOpOperands())
        if (&operand != &use)
          r.needs.push_back({&operand, 1});
      return cutTo(attention.getResult(), 1);
    }
  }
  r.ok = false;
  r.stop = user;
}

Reach TensorParallelPass::follow(nn::LinearOp column) {
  Reach r;
  SmallVector<std::pair<Value, int64_t>> work{
      {column.getResult(), rankOf(column.getResult()) - 1}};
  while (!work.empty() && r.ok) {
    auto [v, dim] = work.pop_back_val();
    auto [it, inserted] = r.dims.insert({v, dim});
    if (!inserted) {
      r.ok = it->second == dim;
      if (!r.ok)
        r.stop = v.getDefiningOp();
      continue;
    }
    for (OpOperand &use : v.getUses()) {
      visit(r, v, dim, use, work);
      if (!r.ok)
        break;
    }
  }
  return r;
}

/// A multi-input op on cut values needs every input cut the same way: a
/// whole operand (RoPE's tables, a mask) has no per-rank slice yet.
LogicalResult TensorParallelPass::checkNeeds(const Reach &all) {
  for (auto [operand, dim] : all.needs) {
    auto it = all.dims.find(operand->get());
    if (it == all.dims.end() || it->second != dim)
      return fail(operand->getOwner(),
                  "operand #" + Twine(operand->getOperandNumber()) +
                      " is not cut like the other operands, which come from "
                      "a column-parallel linear; ds cannot place this op on "
                      "a tensor-parallel shard yet (a whole table or mask "
                      "combined with heads), use autotp_size 1");
  }
  // A whole operand broadcast over the cut gets on each rank only its
  // part's gradient; constants (RoPE's tables) have none to lose.
  for (OpOperand *operand : all.wholes) {
    if (!matchPattern(operand->get(), m_Constant()))
      return fail(operand->getOwner(),
                  "operand #" + Twine(operand->getOperandNumber()) +
                      " is broadcast along the tensor-parallel cut of the "
                      "other operand but is not a constant: each rank would "
                      "see only its part of its gradient; use autotp_size 1");
  }
  return success();
}

/// Gives parameter `arg` its piece: `dim` divided by the group size, in
/// `blocks` blocks of which each rank holds its part.
void TensorParallelPass::cutParam(BlockArgument arg, int64_t dim,
                                  int64_t blocks) {
  MLIRContext *ctx = &getContext();
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto whole = cast<RankedTensorType>(arg.getType());
  SmallVector<int64_t> shape(whole.getShape());
  shape[dim] /= size;
  arg.setType(whole.clone(shape));
  fn.setArgAttr(arg.getArgNumber(), dist::DistDialect::kTensorParallelAttrName,
                dist::TensorShardAttr::get(
                    ctx, ArrayAttr::get(ctx, {StringAttr::get(ctx, kTpAxis)}),
                    dim, blocks, whole.getShape()));
  fn.setFunctionType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(),
                                       fn.getResultTypes()));
}

/// The row linear's partial sums, all-reduced (g), then its bias once.
void TensorParallelPass::rewriteRow(nn::LinearOp row) {
  ++numRow;
  auto weight = cast<BlockArgument>(row.getWeight());
  cutParam(weight, 1, 1);
  OpBuilder b(row);
  Location loc = row.getLoc();
  Type type = row.getResult().getType();
  Value partial =
      nn::LinearOp::create(b, loc, type, row.getInput(), weight, Value());
  auto reduce = dist::AllReduceOp::create(
      b, loc, type, partial, b.getStrArrayAttr({kTpAxis}),
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::sum));
  seqSources.push_back(reduce);
  Value sum = reduce;
  if (Value bias = row.getBias())
    sum = nn::AddOp::create(b, loc, type, sum, bias);
  row.getResult().replaceAllUsesWith(sum);
  row.erase();
}

Value TensorParallelPass::allReduce(OpBuilder &b, Location loc, Value v,
                                    dist::ReductionKind kind) {
  return dist::AllReduceOp::create(
      b, loc, v.getType(), v, b.getStrArrayAttr({kTpAxis}),
      dist::ReductionKindAttr::get(b.getContext(), kind));
}

/// This rank's first vocabulary row: piece r of [0, rows, 2 rows, ...].
Value TensorParallelPass::vocabOffset(OpBuilder &b, Location loc,
                                      int64_t rows) {
  SmallVector<int64_t> starts;
  for (int64_t r = 0; r < size; ++r)
    starts.push_back(r * rows);
  auto all = RankedTensorType::get({size}, b.getI64Type());
  Value table = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(all, ArrayRef<int64_t>(starts)));
  return dist::ShardOp::create(b, loc,
                               RankedTensorType::get({1}, b.getI64Type()),
                               table, b.getStrArrayAttr({kTpAxis}), 0);
}

/// The vocabulary-parallel LM head, its cross-entropy and the embeddings
/// of its vocabulary: a cross-entropy of a parameter linear's logits cuts
/// the weight (tied or not) and every embedding table of that vocabulary
/// by rows. No rank holds whole-vocabulary logits: the loss takes the row
/// max (all-reduce max), Σ exp and the target logit (all-reduce sum) of
/// the pieces.
LogicalResult TensorParallelPass::vocabParallel() {
  SmallVector<nn::CrossEntropyOp> losses;
  getOperation().walk([&](nn::CrossEntropyOp op) {
    if (!op.getMax())
      losses.push_back(op);
  });
  for (nn::CrossEntropyOp ce : losses) {
    // An imported model's head is its own layer and its logits are
    // flattened to [rows, vocab] for the loss: the chain from the linear to
    // the loss, each link used once, whose last dim stays the vocabulary.
    SmallVector<Value> chain{ce.getLogits()};
    auto vocabKept = [](Value in, Value out) {
      auto a = cast<RankedTensorType>(in.getType());
      auto b = cast<RankedTensorType>(out.getType());
      return a.getShape().back() == b.getShape().back();
    };
    if (auto flat = chain.back().getDefiningOp<nn::ReshapeOp>();
        flat && flat.getResult().hasOneUse() &&
        vocabKept(flat.getInput(), flat.getResult()))
      chain.push_back(flat.getInput());
    if (auto result = dyn_cast<OpResult>(chain.back());
        result && isa<nn::LayerOp>(result.getOwner()) && result.hasOneUse()) {
      Region &body = cast<nn::LayerOp>(result.getOwner()).getBody();
      chain.push_back(body.front().getTerminator()->getOperand(
          result.getResultNumber()));
    }
    auto head = chain.back().getDefiningOp<nn::LinearOp>();
    if (!head || !head.getResult().hasOneUse())
      continue;
    auto weight = dyn_cast<BlockArgument>(head.getWeight());
    auto fn = weight ? dyn_cast<func::FuncOp>(weight.getOwner()->getParentOp())
                     : func::FuncOp();
    if (!fn || !fn.getArgAttr(weight.getArgNumber(), nn::kParamAttrName) ||
        (head.getBias() && !soleParam(head.getBias())))
      continue;
    int64_t vocab = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    // The tables to cut: the head's weight (which a tied embedding also
    // reads) and every other parameter table of the same vocabulary.
    llvm::SetVector<BlockArgument> tables;
    tables.insert(weight);
    SmallVector<nn::EmbeddingOp> embeddings;
    bool whole = false;
    fn.walk([&](nn::EmbeddingOp op) {
      auto table = dyn_cast<BlockArgument>(op.getTable());
      if (!table || op.getOffset() ||
          cast<RankedTensorType>(table.getType()).getDimSize(0) != vocab ||
          !fn.getArgAttr(table.getArgNumber(), nn::kParamAttrName))
        return;
      tables.insert(table);
      embeddings.push_back(op);
    });
    for (BlockArgument table : tables)
      for (Operation *user : table.getUsers())
        whole |= user != head && !llvm::is_contained(embeddings, user);
    if (whole)
      continue;
    if (vocab % size != 0) {
      auto param = fn.getArgAttrOfType<nn::ParamAttr>(weight.getArgNumber(),
                                                      nn::kParamAttrName);
      return fail(head, "the vocabulary of '" + param.getName() + "' (" +
                            Twine(vocab) +
                            " rows) is not divisible by tensor-parallel "
                            "size " +
                            Twine(size) + "; pad vocab_size to a multiple of " +
                            Twine(size) + " (" +
                            Twine((vocab + size - 1) / size * size) +
                            ") or use autotp_size 1");
    }
    int64_t rows = vocab / size;
    ++numVocab;
    for (BlockArgument table : tables)
      cutParam(table, 0, 1);
    if (Value bias = head.getBias())
      cutParam(cast<BlockArgument>(bias), 0, 1);

    // Each rank looks up its rows (zeros elsewhere); the sum is the row.
    for (nn::EmbeddingOp op : embeddings) {
      OpBuilder b(op);
      Value lookup = nn::EmbeddingOp::create(b, op.getLoc(), op.getType(),
                                             op.getIndices(), op.getTable(),
                                             vocabOffset(b, op.getLoc(), rows));
      Value sum = allReduce(b, op.getLoc(), lookup, dist::ReductionKind::sum);
      seqSources.push_back(sum.getDefiningOp<dist::AllReduceOp>());
      op.replaceAllUsesWith(sum);
      op.erase();
    }

    // The head is a column linear over the vocabulary (f on its input).
    OpBuilder b(head);
    Location loc = head.getLoc();
    head.getInputMutable().assign(dist::CopyToGroupOp::create(
        b, loc, head.getInput().getType(), head.getInput(),
        b.getStrArrayAttr({kTpAxis})));
    for (Value link : chain) {
      auto type = cast<RankedTensorType>(link.getType());
      SmallVector<int64_t> piece(type.getShape());
      piece.back() = rows;
      link.setType(type.clone(piece));
    }
    auto full = cast<RankedTensorType>(ce.getLogits().getType());
    SmallVector<int64_t> shape(full.getShape());

    b.setInsertionPoint(ce);
    loc = ce.getLoc();
    Value logits = ce.getLogits();
    auto statType = RankedTensorType::get(ArrayRef<int64_t>(shape).drop_back(),
                                          full.getElementType());
    Value offset = vocabOffset(b, loc, rows);
    Value max = allReduce(
        b, loc,
        nn::ReduceMaxOp::create(b, loc, statType, logits,
                                b.getDenseI64ArrayAttr({full.getRank() - 1}),
                                /*keep_dims=*/false),
        dist::ReductionKind::max);
    auto parts = nn::CrossEntropyPartsOp::create(
        b, loc, statType, statType, logits, ce.getTargets(), max, offset);
    Value sumExp =
        allReduce(b, loc, parts.getSumExp(), dist::ReductionKind::sum);
    Value picked =
        allReduce(b, loc, parts.getPicked(), dist::ReductionKind::sum);
    Value loss = nn::CrossEntropyOp::create(
        b, loc, ce.getType(), logits, ce.getTargets(), max, sumExp, picked,
        offset, ce.getIgnoreIndexAttr());
    ce.getResult().replaceAllUsesWith(loss);
    ce.erase();
  }
  return success();
}

void TensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (size < 1 || dpSize < 1) {
    module.emitError() << "ds-tensor-parallel: size " << size << " and dp-size "
                       << dpSize << " must be >= 1";
    return signalPassFailure();
  }
  if (size == 1)
    return;
  // A pass instance may run on several modules.
  seqSources.clear();
  seqDim.clear();
  seqLen = 0;
  if (sequenceParallel && failed(findSeqLen(module)))
    return;
  MLIRContext *ctx = &getContext();
  if (module->hasAttr(dist::DistDialect::kGridAttrName))
    return (void)fail(module, "the module already has a device grid; run "
                              "this pass first, before any other "
                              "distribution (expert parallelism does not "
                              "compose with it yet)");
  module->setAttr(dist::DistDialect::kGridAttrName,
                  dist::GridAttr::get(ctx,
                                      {StringAttr::get(ctx, "dp"),
                                       StringAttr::get(ctx, kTpAxis)},
                                      {dpSize, size}));

  if (failed(vocabParallel()))
    return;

  // Program order, so a linear that ends an earlier cut (a row) is never
  // taken as the start of another.
  SmallVector<nn::LinearOp> candidates;
  module.walk([&](nn::LinearOp op) {
    if (isCuttable(op))
      candidates.push_back(op);
  });
  Reach all;
  SmallVector<std::pair<nn::LinearOp, int64_t>> columns;
  llvm::SetVector<Operation *> rows;
  for (nn::LinearOp op : candidates) {
    if (rows.contains(op) || all.dims.contains(op.getInput()))
      continue;
    Reach r = follow(op);
    // Megatron cuts attention by heads: a projection that stays whole
    // would be a silent change of layout, so the op that stopped it is
    // named instead.
    if (!r.ok && r.stop && feedsAttention(op))
      return (void)fail(r.stop,
                        "cannot follow the heads of '" + weightName(op) +
                            "' (an attention projection) through this op, "
                            "so ds cannot cut that attention by heads; use "
                            "autotp_size 1");
    if (!r.ok || r.rows.empty())
      continue;
    int64_t out =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    if (out % (r.blocks * size) != 0)
      return (void)fail(op, "output width " + Twine(out) + " in " +
                                Twine(r.blocks) +
                                " block(s) is not divisible by "
                                "tensor-parallel size " +
                                Twine(size) + " per block");
    if (!r.indivisible.empty())
      return (void)fail(op, "cutting the output of '" + weightName(op) +
                                "': " + r.indivisible);
    for (auto [v, d] : r.dims)
      all.dims.insert({v, d});
    all.needs.append(r.needs);
    all.wholes.append(r.wholes);
    rows.insert(r.rows.begin(), r.rows.end());
    columns.push_back({op, r.blocks});
  }
  if (columns.empty() && !numVocab)
    return (void)fail(module, "no linear could be cut: tensor parallelism "
                              "needs a parameter linear whose output reaches "
                              "only other parameter linears (an MLP or an "
                              "attention block); use autotp_size 1");
  if (failed(checkNeeds(all)))
    return;
  for (Operation *row : rows)
    if (all.dims.contains(cast<nn::LinearOp>(row).getResult()))
      return (void)fail(row, "this linear both ends one tensor-parallel cut "
                             "and continues another");

  // The cut values' types: 1/T of their cut dim.
  for (auto [v, dim] : all.dims) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= size;
    v.setType(type.clone(shape));
  }
  // f: one copy per column input, however many columns read it.
  DenseMap<Value, Value> copies;
  for (auto [op, blocks] : columns) {
    ++numColumn;
    cutParam(cast<BlockArgument>(op.getWeight()), 0, blocks);
    if (Value bias = op.getBias())
      cutParam(cast<BlockArgument>(bias), 0, blocks);
    Value x = op.getInput();
    Value &copy = copies[x];
    if (!copy) {
      OpBuilder b(ctx);
      b.setInsertionPointAfterValue(x);
      copy = dist::CopyToGroupOp::create(b, op.getLoc(), x.getType(), x,
                                         b.getStrArrayAttr({kTpAxis}));
    }
    op.getInputMutable().assign(copy);
  }
  for (Operation *row : rows)
    rewriteRow(cast<nn::LinearOp>(row));
  if (sequenceParallel)
    (void)placeOnSequenceShards(module);
}

//===----------------------------------------------------------------------===//
// Megatron sequence parallelism
//===----------------------------------------------------------------------===//

/// The sequence length: dim 1 of the [batch, sequence] batch arguments,
/// which T must divide.
LogicalResult TensorParallelPass::findSeqLen(ModuleOp module) {
  module.walk([&](func::FuncOp fn) {
    for (BlockArgument arg : fn.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), "dsnn.batch") && rankOf(arg) >= 2 &&
          !seqLen)
        seqLen = cast<RankedTensorType>(arg.getType()).getDimSize(1);
  });
  if (!seqLen)
    return fail(module, "sequence parallelism needs a [batch, sequence] "
                        "batch argument (dsnn.batch) to find the sequence "
                        "length; use sequence_parallel false");
  if (seqLen % size != 0)
    return fail(module, "sequence length " + Twine(seqLen) +
                            " is not divisible by tensor-parallel size " +
                            Twine(size) +
                            " (tensor_parallel.sequence_parallel keeps 1/" +
                            Twine(size) +
                            " of the sequence on each rank between blocks); "
                            "use a sequence length that is a multiple of " +
                            Twine(size) + " or sequence_parallel false");
  return success();
}

/// The whole sequence from the group's shards (before a column linear).
Value TensorParallelPass::gatherSeq(OpBuilder &b, Location loc, Value v,
                                    int64_t dim) {
  ++numSeqGathers;
  return seq::alongLeadingDim(
      b, loc, v, dim, seqLen,
      [&](Value x, int64_t d, RankedTensorType type) -> Value {
        return dist::AllGatherOp::create(b, loc, type, x,
                                         b.getStrArrayAttr({kTpAxis}),
                                         b.getI64IntegerAttr(d));
      });
}

/// The group's sum, this rank's shard of the sequence (after a row linear).
Value TensorParallelPass::scatterSeq(OpBuilder &b, Location loc, Value v,
                                     int64_t dim) {
  ++numSeqScatters;
  return seq::alongLeadingDim(
      b, loc, v, dim, seqLen / size,
      [&](Value x, int64_t d, RankedTensorType type) -> Value {
        return dist::ReduceScatterOp::create(
            b, loc, type, x, b.getStrArrayAttr({kTpAxis}),
            dist::ReductionKindAttr::get(b.getContext(),
                                         dist::ReductionKind::sum),
            b.getI64IntegerAttr(d));
      });
}

/// This rank's positions of a value every rank holds alike (a constant).
Value TensorParallelPass::sliceSeq(OpBuilder &b, Location loc, Value v,
                                   int64_t dim) {
  return seq::alongLeadingDim(
      b, loc, v, dim, seqLen / size,
      [&](Value x, int64_t d, RankedTensorType type) -> Value {
        return dist::ShardOp::create(b, loc, type, x,
                                     b.getStrArrayAttr({kTpAxis}),
                                     b.getI64IntegerAttr(d));
      });
}

/// A replicated parameter read on a sequence shard gets only its shard's
/// gradient: through f, the group sums it (Megatron's all-reduce of the
/// norms' and biases' gradients).
void TensorParallelPass::sumOverGroup(Operation *op, unsigned operand) {
  OpBuilder b(op);
  Value v = op->getOperand(operand);
  op->setOperand(operand,
                 dist::CopyToGroupOp::create(b, op->getLoc(), v.getType(), v,
                                             b.getStrArrayAttr({kTpAxis})));
}

bool isParam(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                : func::FuncOp();
  return fn && fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName);
}

LogicalResult TensorParallelPass::setSeqResult(Operation *op, Value result,
                                               int64_t dim) {
  if (!seq::shrinkSequence(result, dim, seqLen, seqLen / size, seqDim))
    return fail(op, "cannot keep this op on a sequence shard (its result has "
                    "no sequence dim of length " +
                        Twine(seqLen) +
                        "); use tensor_parallel.sequence_parallel false");
  return success();
}

/// An op on each position alone, NumPy broadcasting: the sequence stays in
/// the dim the sharded operands align it to. Another operand that spans
/// the sequence is sliced (a constant) or looked up at this rank's
/// positions (a position embedding of constant ids); a parameter that does
/// not span it gets its gradient summed over the group.
LogicalResult TensorParallelPass::elementwiseSeq(Operation *op,
                                                 ArrayRef<unsigned> operands) {
  int64_t rank = rankOf(op->getResult(0));
  std::string why;
  FailureOr<int64_t> dim = seq::broadcastSequenceDim(op, operands, seqDim, why);
  if (failed(dim))
    return fail(op, why + "; use tensor_parallel.sequence_parallel false");
  for (unsigned i : operands) {
    Value v = op->getOperand(i);
    if (seqDim.count(v))
      continue;
    int64_t j = *dim - (rank - rankOf(v));
    if (j < 0 || cast<RankedTensorType>(v.getType()).getDimSize(j) == 1) {
      if (isParam(v))
        sumOverGroup(op, i);
      continue;
    }
    OpBuilder b(op);
    if (v.getDefiningOp<arith::ConstantOp>()) {
      op->setOperand(i, sliceSeq(b, op->getLoc(), v, j));
      continue;
    }
    // wpe(positions): the table looked up at this rank's positions.
    auto lookup = v.getDefiningOp<nn::EmbeddingOp>();
    if (lookup && v.hasOneUse() && !lookup.getOffset() &&
        lookup.getIndices().getDefiningOp<arith::ConstantOp>() &&
        j < rankOf(lookup.getIndices())) {
      b.setInsertionPoint(lookup);
      lookup.getIndicesMutable().assign(
          sliceSeq(b, lookup.getLoc(), lookup.getIndices(), j));
      if (isParam(lookup.getTable()))
        sumOverGroup(lookup, 1);
      if (failed(setSeqResult(lookup, lookup.getResult(), j)))
        return failure();
      continue;
    }
    return fail(op, "operand #" + Twine(i) +
                        " spans the sequence but is neither on a sequence "
                        "shard nor a constant or a position embedding that "
                        "could be sliced; use "
                        "tensor_parallel.sequence_parallel false");
  }
  for (Value r : op->getResults())
    if (failed(setSeqResult(op, r, *dim)))
      return failure();
  return success();
}

LogicalResult TensorParallelPass::visitSeq(Operation *op) {
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &inner : llvm::make_early_inc_range(block))
        if (failed(visitSeq(&inner)))
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
                    [&](Value v) { return seqDim.count(v); }) ||
      isa<nn::YieldOp>(op))
    return success();
  // f before a column linear (or the LM head): the whole sequence.
  if (auto copy = dyn_cast<dist::CopyToGroupOp>(op)) {
    OpBuilder b(op);
    copy.replaceAllUsesWith(gatherSeq(b, copy.getLoc(), copy.getInput(),
                                      seqDim.lookup(copy.getInput())));
    copy.erase();
    return success();
  }
  if (isa<nn::LayerNormOp, nn::RMSNormOp>(op)) {
    if (seqDim.lookup(op->getOperand(0)) == rankOf(op->getOperand(0)) - 1)
      return fail(op, "normalizes over the sequence dim");
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      if (isParam(op->getOperand(i)))
        sumOverGroup(op, i);
    return elementwiseSeq(op, {0});
  }
  if (isa<nn::GeluOp, nn::ReluOp, nn::SiluOp, nn::TanhOp, nn::ExpOp, nn::NegOp,
          nn::RsqrtOp, nn::CastOp, nn::DropoutOp>(op))
    return elementwiseSeq(op, {0});
  if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op))
    return elementwiseSeq(op, {0, 1});
  return fail(op, "'" + op->getName().getStringRef() +
                      "' reads a value on a sequence shard but is not known "
                      "to act on each position alone; Megatron sequence "
                      "parallelism supports layer norms, dropout, "
                      "elementwise ops and residual adds between the "
                      "blocks; use tensor_parallel.sequence_parallel false");
}

/// Each g (and the vocabulary-parallel embedding's sum) becomes a
/// reduce-scatter along the sequence, each f an all-gather along it, and
/// what lies between runs on this rank's positions.
LogicalResult TensorParallelPass::placeOnSequenceShards(ModuleOp module) {
  for (dist::AllReduceOp reduce : seqSources) {
    auto type = cast<RankedTensorType>(reduce.getType());
    if (type.getRank() < 2 || type.getDimSize(1) != seqLen)
      return fail(reduce, "expected a [batch, sequence, ...] activation with "
                          "a sequence of " +
                              Twine(seqLen) +
                              " to place on sequence shards; use "
                              "tensor_parallel.sequence_parallel false");
    OpBuilder b(reduce);
    Value shard = scatterSeq(b, reduce.getLoc(), reduce.getInput(), 1);
    reduce.replaceAllUsesWith(shard);
    reduce.erase();
    seqDim[shard] = 1;
  }
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    if (failed(visitSeq(fn)))
      return failure();
  return success();
}

} // namespace
