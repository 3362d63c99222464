//===- SinkReductions.cpp - Gradient buckets into the backward ------------===//
//
// ds-zero reduces each bucket of gradients once, after the call that makes
// them; here the bucket moves into the callee, cut into pieces that each
// start after the op making their last gradient, and the callee returns
// the reduced pieces. The ops that pack a gradient as a bucket row (and,
// under accumulation, add it to the accumulator and scale it) move along
// unchanged, so every element is summed as before.
//
//===----------------------------------------------------------------------===//
#include "SinkReductions.h"

#include "ds/Transforms/CommPrediction.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::ds;

namespace {

/// The value `v` is computed from through single-use reshapes (ds-zero's
/// packing of a gradient as a bucket row) and, under gradient
/// accumulation, the sum into the accumulator and the scaling by
/// 1 / steps, up to a value `isSource` accepts: `chain` gets those ops
/// from it to `v`. Of a sum or product, the operand followed is the one a
/// source or another such op makes; the other (the accumulator, the
/// constant) is an input the caller checks (chainInputs).
Value gradientSource(Value v, SmallVectorImpl<Operation *> &chain,
                     function_ref<bool(Value)> isSource) {
  auto followed = [&](Value x) {
    Operation *def = x.getDefiningOp();
    return isSource(x) || (def &&
                           isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                               nn::AddOp, nn::MulOp>(def) &&
                           def->hasOneUse());
  };
  while (!isSource(v)) {
    Operation *def = v.getDefiningOp();
    if (!def || !def->hasOneUse())
      break;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      chain.push_back(def);
      v = def->getOperand(0);
      continue;
    }
    if (!isa<nn::AddOp, nn::MulOp>(def))
      break;
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    if (followed(lhs) == followed(rhs))
      break;
    chain.push_back(def);
    v = followed(lhs) ? lhs : rhs;
  }
  std::reverse(chain.begin(), chain.end());
  return v;
}

/// A result of a func.call.
bool isCallResult(Value v) {
  auto res = dyn_cast<OpResult>(v);
  return res && isa<func::CallOp>(res.getOwner());
}

/// The operands of `chain`'s ops other than the value it carries from
/// `source`.
SmallVector<Value> chainInputs(Value source, ArrayRef<Operation *> chain) {
  SmallVector<Value> out;
  Value prev = source;
  for (Operation *op : chain) {
    for (Value operand : op->getOperands())
      if (operand != prev)
        out.push_back(operand);
    prev = op->getResult(0);
  }
  return out;
}

/// A constant, cloned where it is needed rather than passed.
bool isConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>();
}

/// `v` exists before `op` in `op`'s block.
bool availableBefore(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == op->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// One row of a bucket: a gradient the call returns, packed by `chain`.
struct Row {
  SmallVector<Operation *> chain;
  Value source;    // the call's result
  unsigned result; // of the call
  int64_t offset, width, bytes;
  Operation *anchor = nullptr; // where the callee has the gradient
  size_t pos = 0;
};

/// A reduction whose rows are gradients that one call returns.
struct Bucket {
  Operation *red;
  tensor::ConcatOp cat;
  func::CallOp call;
  func::FuncOp callee;
  bool scatter;
  unsigned dim; // the rows are joined along it
  RankedTensorType outType;
  SmallVector<Row> rows;
  /// What the rows' ops take besides the gradient (an accumulator, a
  /// scale), passed to the callee; constants are cloned instead.
  SmallVector<Value> extras;
  DenseMap<Value, unsigned> extraIndex;
};

/// The rows of `red`'s operand, (a call's results, through reshapes)
/// concatenated; its users must each take one row's part.
/// A reduce-scatter's rows are [n, c] (ds-zero's layout: row r of each is
/// rank r's chunk), joined along dim 1 and scattered along dim 0; an
/// all-reduce's are flat, joined along dim 0.
std::optional<Bucket> matchBucket(Operation *red, ModuleOp module) {
  Bucket b;
  b.red = red;
  b.scatter = isa<dist::ReduceScatterOp>(red);
  b.dim = b.scatter ? 1 : 0;
  b.outType = cast<RankedTensorType>(red->getResult(0).getType());
  if (b.outType.getRank() != b.dim + 1)
    return std::nullopt;
  b.cat = red->getOperand(0).getDefiningOp<tensor::ConcatOp>();
  if (!b.cat || b.cat.getDim() != b.dim || !b.cat->hasOneUse())
    return std::nullopt;
  int64_t offset = 0;
  for (Value in : b.cat.getInputs()) {
    Row row;
    Value src = gradientSource(in, row.chain, isCallResult);
    row.source = src;
    auto res = dyn_cast<OpResult>(src);
    auto c = res ? dyn_cast<func::CallOp>(res.getOwner()) : func::CallOp();
    if (!c || (b.call && c != b.call) || !src.hasOneUse() ||
        (b.scatter && row.chain.empty()))
      return std::nullopt;
    b.call = c;
    auto t = cast<RankedTensorType>(in.getType());
    row.result = res.getResultNumber();
    row.offset = offset;
    row.width = t.getDimSize(b.dim);
    row.bytes = bytesOf(t);
    offset += row.width;
    b.rows.push_back(std::move(row));
  }
  if (!b.call || b.call->getBlock() != red->getBlock())
    return std::nullopt;
  for (const Row &row : b.rows)
    for (Value v : chainInputs(row.source, row.chain)) {
      if (isConstant(v) || b.extraIndex.count(v))
        continue;
      if (!availableBefore(v, b.call))
        return std::nullopt;
      b.extraIndex[v] = b.extras.size();
      b.extras.push_back(v);
    }
  b.callee = module.lookupSymbol<func::FuncOp>(b.call.getCallee());
  if (!b.callee || b.callee.isExternal() || !b.callee.getBody().hasOneBlock())
    return std::nullopt;
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(b.callee, module);
  if (!uses || !llvm::hasSingleElement(*uses))
    return std::nullopt;
  for (Operation *user : red->getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || !slice.hasUnitStride() ||
        slice.getType().getRank() != b.outType.getRank() ||
        ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
        ShapedType::isDynamicShape(slice.getStaticSizes()))
      return std::nullopt;
    int64_t at = slice.getStaticOffsets()[b.dim],
            width = slice.getStaticSizes()[b.dim];
    if (!llvm::any_of(b.rows, [&](const Row &r) {
          return r.offset <= at && at + width <= r.offset + r.width;
        }))
      return std::nullopt;
  }
  return b;
}

/// Where in the callee each row's gradient is made.
void locateRows(Bucket &b) {
  Block &body = b.callee.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<Operation *, size_t> pos;
  size_t k = 0;
  for (Operation &op : body)
    pos[&op] = k++;
  for (Row &row : b.rows) {
    Operation *def = ret.getOperand(row.result).getDefiningOp();
    row.anchor = def ? body.findAncestorOpInBlock(*def) : nullptr;
    row.pos = row.anchor ? pos.lookup(row.anchor) + 1 : 0;
  }
}

/// Pieces: rows ready at one op stay together; the next group joins the
/// piece while the joined collective is predicted to take < kFuseGain x
/// the longer of the two, else it starts a piece. An all-reduce on 3 or
/// more ranks is not cut: its algorithm, and so the order of each
/// element's sum, depends on the message size (Open MPI's ring cuts the
/// buffer in n parts, libnbc's tree below 64 KiB), so a piece could round
/// differently from the bucket. On 2 ranks each element is a + b in any
/// algorithm, and a reduce-scatter's row r is rank r's chunk whatever the
/// width, so those are cut.
SmallVector<SmallVector<unsigned>>
cutPieces(const Bucket &b, const CommCostModel &model, int64_t n) {
  bool cut = b.scatter || n == 2;
  auto secs = [&](int64_t bytes) {
    return model.seconds(kindOf(b.red), bytes, n);
  };
  const SmallVector<Row> &rows = b.rows;
  SmallVector<SmallVector<unsigned>> pieces;
  int64_t pieceBytes = 0;
  size_t pieceReady = 0;
  for (unsigned i = 0; i < rows.size();) {
    unsigned j = i;
    int64_t groupBytes = 0;
    for (; j < rows.size() && rows[j].pos == rows[i].pos; ++j)
      groupBytes += rows[j].bytes;
    bool join = !pieces.empty() &&
                (!cut || rows[i].pos <= pieceReady ||
                 secs(pieceBytes + groupBytes) <
                     kFuseGain * std::max(secs(pieceBytes), secs(groupBytes)));
    if (!join) {
      pieces.emplace_back();
      pieceBytes = 0;
    }
    for (; i < j; ++i)
      pieces.back().push_back(i);
    pieceBytes += groupBytes;
    pieceReady = std::max(pieceReady, rows[j - 1].pos);
  }
  return pieces;
}

/// Row `row`'s packing, cloned at `b`'s point onto the callee's gradient.
Value packRow(const Bucket &bucket, const Row &row, OpBuilder &b,
              unsigned firstExtra) {
  func::FuncOp callee = bucket.callee;
  Block &body = callee.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value v = ret.getOperand(row.result), prev = row.source;
  for (Operation *op : row.chain) {
    IRMapping map;
    for (Value operand : op->getOperands())
      if (operand == prev)
        map.map(operand, v);
      else if (isConstant(operand))
        map.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
      else
        map.map(operand, body.getArgument(firstExtra +
                                          bucket.extraIndex.lookup(operand)));
    prev = op->getResult(0);
    v = b.clone(*op, map)->getResult(0);
  }
  return v;
}

/// In the callee: each piece packed and reduced after the op that makes
/// its last gradient, in bucket order. Returns the reduced pieces;
/// `pieceStart` gets each one's offset in the bucket.
SmallVector<Value> reduceInCallee(Bucket &bucket,
                                  ArrayRef<SmallVector<unsigned>> pieces,
                                  SmallVectorImpl<int64_t> &pieceStart) {
  func::FuncOp callee = bucket.callee;
  Block &body = callee.getBody().front();
  unsigned firstExtra = callee.getNumArguments();
  for (Value v : bucket.extras)
    (void)callee.insertArgument(callee.getNumArguments(), v.getType(),
                                DictionaryAttr(), v.getLoc());
  Location loc = bucket.red->getLoc();
  SmallVector<Value> reduced;
  Operation *last = nullptr;
  for (ArrayRef<unsigned> piece : pieces) {
    Operation *anchor = nullptr;
    for (unsigned i : piece)
      if (bucket.rows[i].anchor &&
          (!anchor || anchor->isBeforeInBlock(bucket.rows[i].anchor)))
        anchor = bucket.rows[i].anchor;
    OpBuilder b(&body, body.begin());
    if (last && (!anchor || !last->isBeforeInBlock(anchor)))
      b.setInsertionPointAfter(last);
    else if (anchor)
      b.setInsertionPointAfter(anchor);
    SmallVector<Value> packed;
    int64_t width = 0;
    for (unsigned i : piece) {
      packed.push_back(packRow(bucket, bucket.rows[i], b, firstExtra));
      width += bucket.rows[i].width;
    }
    Value in =
        packed.size() == 1
            ? packed.front()
            : tensor::ConcatOp::create(b, loc, bucket.dim, packed).getResult();
    OperationState state(loc, bucket.red->getName());
    state.addOperands(in);
    state.addAttributes(bucket.red->getAttrs());
    SmallVector<int64_t> shape(bucket.outType.getShape());
    shape[bucket.dim] = width;
    state.addTypes(
        RankedTensorType::get(shape, bucket.outType.getElementType()));
    last = b.create(state);
    reduced.push_back(last->getResult(0));
    pieceStart.push_back(bucket.rows[piece.front()].offset);
  }
  return reduced;
}

/// The callee returns the reduced pieces instead of the gradients, and
/// the caller's users of the bucket read them; the bucket goes.
bool rewire(Bucket &bucket, ArrayRef<Value> reduced,
            ArrayRef<int64_t> pieceStart) {
  func::FuncOp callee = bucket.callee;
  auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
  llvm::BitVector gone(callee.getNumResults());
  for (const Row &row : bucket.rows)
    gone.set(row.result);
  SmallVector<Value> operands;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (!gone.test(i))
      operands.push_back(v);
  llvm::append_range(operands, reduced);
  unsigned kept = operands.size() - reduced.size();
  ret->setOperands(operands);
  if (failed(callee.eraseResults(gone)))
    return false; // not reached: results are plain
  for (auto [i, v] : llvm::enumerate(reduced))
    (void)callee.insertResult(kept + i, v.getType(), DictionaryAttr());

  func::CallOp call = bucket.call;
  OpBuilder b(call);
  SmallVector<Value> callOperands(call.getOperands());
  llvm::append_range(callOperands, bucket.extras);
  auto newCall = func::CallOp::create(b, call.getLoc(), callee, callOperands);
  unsigned next = 0;
  for (auto [i, r] : llvm::enumerate(call.getResults()))
    if (!gone.test(i))
      r.replaceAllUsesWith(newCall.getResult(next++));
  unsigned dim = bucket.dim;
  for (Operation *user : llvm::make_early_inc_range(bucket.red->getUsers())) {
    auto slice = cast<tensor::ExtractSliceOp>(user);
    int64_t at = slice.getStaticOffsets()[dim];
    unsigned p = pieceStart.size() - 1;
    while (pieceStart[p] > at)
      --p;
    OpBuilder sb(slice);
    SmallVector<int64_t> offsets(slice.getStaticOffsets());
    offsets[dim] = at - pieceStart[p];
    auto moved = tensor::ExtractSliceOp::create(
        sb, slice.getLoc(), slice.getType(), newCall.getResult(kept + p),
        ValueRange{}, ValueRange{}, ValueRange{},
        sb.getDenseI64ArrayAttr(offsets), slice.getStaticSizes(),
        slice.getStaticStrides());
    slice.getResult().replaceAllUsesWith(moved.getResult());
    slice->erase();
  }
  bucket.red->erase();
  bucket.cat->erase();
  for (Row &row : llvm::reverse(bucket.rows))
    for (Operation *op : llvm::reverse(row.chain))
      op->erase();
  call->erase();
  return true;
}

} // namespace

bool mlir::ds::sinkReduction(Operation *red, ModuleOp module,
                             const CommCostModel &model, dist::GridAttr grid) {
  std::optional<Bucket> bucket = matchBucket(red, module);
  if (!bucket)
    return false;
  locateRows(*bucket);
  SmallVector<SmallVector<unsigned>> pieces =
      cutPieces(*bucket, model, groupSizeOf(red, grid));
  SmallVector<int64_t> pieceStart;
  SmallVector<Value> reduced = reduceInCallee(*bucket, pieces, pieceStart);
  return rewire(*bucket, reduced, pieceStart);
}

bool mlir::ds::peelLastMicroBatch(scf::ForOp loop, ModuleOp module) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                         ub = getConstantIntValue(loop.getUpperBound()),
                         step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0 || *ub - *lb < 2 * *step ||
      !loop.getInductionVar().getType().isIndex())
    return false;
  Block &body = *loop.getBody();
  func::CallOp call;
  for (Operation &op : body.without_terminator())
    if (auto c = dyn_cast<func::CallOp>(op)) {
      if (call)
        return false;
      call = c;
    }
  if (!call)
    return false;
  auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal())
    return false;
  // Worth it only when a bucket after the loop reduces what the loop sums
  // from the call's gradients: every row from a loop result, which the
  // body makes from the call's result.
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  auto isLoopResult = [&](Value v) {
    auto res = dyn_cast<OpResult>(v);
    return res && res.getOwner() == loop.getOperation();
  };
  auto isCallsResult = [&](Value v) {
    auto res = dyn_cast<OpResult>(v);
    return res && res.getOwner() == call.getOperation() && v.hasOneUse();
  };
  auto rowFed = [&](Value in) {
    SmallVector<Operation *> after, inside;
    Value r = gradientSource(in, after, isLoopResult);
    if (!isLoopResult(r) || !r.hasOneUse())
      return false;
    Value y = yield.getOperand(cast<OpResult>(r).getResultNumber());
    return isCallsResult(gradientSource(y, inside, isCallsResult));
  };
  bool fed = false;
  for (Operation *op = loop->getNextNode(); op && !fed; op = op->getNextNode())
    if (isa<dist::ReduceScatterOp, dist::AllReduceOp>(op))
      if (auto cat = op->getOperand(0).getDefiningOp<tensor::ConcatOp>())
        fed = llvm::all_of(cat.getInputs(), rowFed);
  if (!fed)
    return false;

  // The loop stops one micro-batch early; its body runs once more after
  // it, on the loop's results, with the last induction value.
  int64_t last = *lb + (*ub - *lb - 1) / *step * *step;
  OpBuilder b(loop);
  Value lastIv = arith::ConstantIndexOp::create(b, loop.getLoc(), last);
  loop.getUpperBoundMutable().assign(lastIv);
  b.setInsertionPointAfter(loop);
  IRMapping map;
  map.map(loop.getInductionVar(), lastIv);
  for (auto [arg, result] :
       llvm::zip(loop.getRegionIterArgs(), loop.getResults()))
    map.map(arg, result);
  DenseSet<Operation *> peeled;
  func::CallOp lastCall;
  for (Operation &op : body.without_terminator()) {
    Operation *copy = b.clone(op, map);
    peeled.insert(copy);
    if (&op == call.getOperation())
      lastCall = cast<func::CallOp>(copy);
  }
  for (auto [result, value] : llvm::zip(loop.getResults(), yield.getOperands()))
    result.replaceUsesWithIf(map.lookupOrDefault(value), [&](OpOperand &use) {
      return !peeled.contains(
          loop->getBlock()->findAncestorOpInBlock(*use.getOwner()));
    });
  // Its own copy of the gradient function, which the reductions join.
  auto copy = cast<func::FuncOp>(callee->clone());
  copy.setSymName((callee.getSymName() + kLastMicroBatchSuffix).str());
  StringAttr name = SymbolTable(module).insert(copy);
  lastCall.setCallee(name.getValue());
  return true;
}
