//===- NNOps.cpp - dsnn op verifiers and folders
//---------------------------===//
#include "dsnn/NNOps.h"
#include "ds/Support/ShapeCheck.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nn;

static RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// All named values must share one element type.
static LogicalResult
verifySameElementType(Operation *op,
                      ArrayRef<std::pair<StringRef, Value>> values) {
  if (values.empty())
    return success();
  Type expected = getElementTypeOrSelf(values.front().second.getType());
  for (auto [name, v] : values.drop_front()) {
    Type got = getElementTypeOrSelf(v.getType());
    if (got != expected)
      return op->emitOpError()
             << name << " element type " << got << " does not match "
             << values.front().first << " element type " << expected;
  }
  return success();
}

static LogicalResult verifyResultShape(Operation *op, RankedTensorType result,
                                       ArrayRef<int64_t> expected,
                                       StringRef from) {
  if (!shapesCompatible(result.getShape(), expected))
    return op->emitOpError()
           << "result shape " << formatShape(result.getShape())
           << " does not match the expected " << formatShape(expected)
           << " (from " << from << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  auto in = rankedType(getInput()), w = rankedType(getWeight());
  if (in.getRank() < 1)
    return emitOpError("input must have rank >= 1, got a scalar");
  if (w.getRank() != 2)
    return emitOpError() << "weight must be rank 2 [out, in], got rank "
                         << w.getRank();
  if (!dimsCompatible(in.getShape().back(), w.getDimSize(1)))
    return emitOpError() << "weight dim 1 (in) is " << w.getDimSize(1)
                         << " but input's last dim is " << in.getShape().back();
  SmallVector<std::pair<StringRef, Value>> typed = {
      {"input", getInput()}, {"weight", getWeight()}, {"result", getResult()}};
  if (Value b = getBias()) {
    auto bt = rankedType(b);
    if (bt.getRank() != 1 || !dimsCompatible(bt.getDimSize(0), w.getDimSize(0)))
      return emitOpError() << "bias shape " << formatShape(bt.getShape())
                           << " but expected [" << w.getDimSize(0)
                           << "] (weight dim 0)";
    typed.push_back({"bias", b});
  }
  if (failed(verifySameElementType(*this, typed)))
    return failure();
  SmallVector<int64_t> expected(in.getShape().drop_back());
  expected.push_back(w.getDimSize(0));
  return verifyResultShape(*this, getResult().getType(), expected,
                           "input [..., in] and weight [out, in]");
}

//===----------------------------------------------------------------------===//
// MatmulOp / BatchMatmulOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyMatmul(Operation *op, Value lhs, Value rhs,
                                  Value result, bool ta, bool tb,
                                  bool batched) {
  auto a = rankedType(lhs), b = rankedType(rhs);
  if (!batched && (a.getRank() != 2 || b.getRank() != 2))
    return op->emitOpError() << "operands must be rank 2, got lhs rank "
                             << a.getRank() << " and rhs rank " << b.getRank();
  if (batched) {
    if (a.getRank() < 3 || a.getRank() != b.getRank())
      return op->emitOpError()
             << "operands must have the same rank >= 3, got lhs rank "
             << a.getRank() << " and rhs rank " << b.getRank();
    for (int64_t i = 0; i < a.getRank() - 2; ++i)
      if (!dimsCompatible(a.getDimSize(i), b.getDimSize(i)))
        return op->emitOpError()
               << "batch dim " << i << " differs: lhs " << a.getDimSize(i)
               << " vs rhs " << b.getDimSize(i);
  }
  int64_t r = a.getRank();
  int64_t m = a.getDimSize(ta ? r - 1 : r - 2);
  int64_t ka = a.getDimSize(ta ? r - 2 : r - 1);
  int64_t kb = b.getDimSize(tb ? r - 1 : r - 2);
  int64_t n = b.getDimSize(tb ? r - 2 : r - 1);
  if (!dimsCompatible(ka, kb))
    return op->emitOpError()
           << "contraction dims differ: lhs K = " << ka << ", rhs K = " << kb;
  if (failed(verifySameElementType(
          op, {{"lhs", lhs}, {"rhs", rhs}, {"result", result}})))
    return failure();
  SmallVector<int64_t> expected(a.getShape().drop_back(2));
  expected.append({m, n});
  return verifyResultShape(op, rankedType(result), expected, "lhs x rhs");
}

LogicalResult MatmulOp::verify() {
  return verifyMatmul(*this, getLhs(), getRhs(), getResult(), getTransposeA(),
                      getTransposeB(), /*batched=*/false);
}

LogicalResult BatchMatmulOp::verify() {
  return verifyMatmul(*this, getLhs(), getRhs(), getResult(), getTransposeA(),
                      getTransposeB(), /*batched=*/true);
}

//===----------------------------------------------------------------------===//
// EmbeddingOp, norms, softmax, attention, dropout
//===----------------------------------------------------------------------===//

/// A vocabulary piece's first row: one i64 element.
static LogicalResult verifyVocabOffset(Operation *op, Value offset) {
  if (!offset)
    return success();
  auto type = rankedType(offset);
  if (!type.hasStaticShape() || type.getNumElements() != 1 ||
      !type.getElementType().isInteger(64))
    return op->emitOpError() << "offset must be one i64 element, got " << type;
  return success();
}

/// Per-position statistics of a vocabulary-parallel cross-entropy: the
/// logits' shape without the vocabulary dim, the logits' element type.
static LogicalResult
verifyRowStats(Operation *op, Value logits,
               ArrayRef<std::pair<StringRef, Value>> stats) {
  auto type = rankedType(logits);
  for (auto [name, v] : stats) {
    if (!v)
      continue;
    auto t = rankedType(v);
    if (!shapesCompatible(t.getShape(), type.getShape().drop_back()) ||
        t.getElementType() != type.getElementType())
      return op->emitOpError()
             << name << " type " << t
             << " must have the logits' shape without its last dim, "
             << formatShape(type.getShape().drop_back()) << ", and element "
             << type.getElementType();
  }
  return success();
}

LogicalResult EmbeddingOp::verify() {
  auto table = rankedType(getTable());
  if (table.getRank() != 2)
    return emitOpError() << "table must be rank 2 [vocab, dim], got rank "
                         << table.getRank();
  if (failed(verifySameElementType(
          *this, {{"table", getTable()}, {"result", getResult()}})))
    return failure();
  if (failed(verifyVocabOffset(*this, getOffset())))
    return failure();
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  expected.push_back(table.getDimSize(1));
  return verifyResultShape(*this, getResult().getType(), expected,
                           "indices shape + [table dim 1]");
}

static LogicalResult verifyNorm(Operation *op, Value input,
                                ArrayRef<std::pair<StringRef, Value>> affine,
                                Value result, double eps) {
  auto in = rankedType(input);
  if (in.getRank() < 1)
    return op->emitOpError("input must have rank >= 1, got a scalar");
  for (auto [name, v] : affine) {
    auto t = rankedType(v);
    if (t.getRank() != 1 ||
        !dimsCompatible(t.getDimSize(0), in.getShape().back()))
      return op->emitOpError() << name << " shape " << formatShape(t.getShape())
                               << " but expected [" << in.getShape().back()
                               << "] (input's last dim)";
  }
  if (!(eps > 0))
    return op->emitOpError()
           << "epsilon is " << formatNumber(eps) << " but must be > 0";
  SmallVector<std::pair<StringRef, Value>> typed = {{"input", input}};
  typed.append(affine.begin(), affine.end());
  return verifySameElementType(op, typed);
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(),
                    {{"weight", getWeight()}, {"bias", getBias()}}, getResult(),
                    getEpsilon().convertToDouble());
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput(), {{"weight", getWeight()}}, getResult(),
                    getEpsilon().convertToDouble());
}

static LogicalResult verifyDimAttr(Operation *op, int64_t dim, int64_t rank) {
  if (!normalizeDim(dim, rank))
    return op->emitOpError()
           << "dim " << dim << " is out of range for rank " << rank
           << " (allowed " << -rank << ".." << rank - 1 << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyDimAttr(*this, getDim(), getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyDimAttr(*this, getDim(), getType().getRank());
}

/// Checks q/k/v against each other and returns the output shape
/// [..., Tq, Dv] in `outShape`.
static LogicalResult
verifyAttentionOperands(Operation *op, Value query, Value key, Value value,
                        bool causal, std::optional<APFloat> scale,
                        SmallVectorImpl<int64_t> &outShape) {
  auto q = rankedType(query), k = rankedType(key), v = rankedType(value);
  int64_t r = q.getRank();
  if (r < 2 || k.getRank() != r || v.getRank() != r)
    return op->emitOpError()
           << "query, key and value must have the same rank >= 2, got " << r
           << ", " << k.getRank() << ", " << v.getRank();
  for (int64_t i = 0; i < r - 2; ++i)
    if (!dimsCompatible(q.getDimSize(i), k.getDimSize(i)) ||
        !dimsCompatible(q.getDimSize(i), v.getDimSize(i)))
      return op->emitOpError()
             << "leading dim " << i << " differs: query " << q.getDimSize(i)
             << ", key " << k.getDimSize(i) << ", value " << v.getDimSize(i);
  if (!dimsCompatible(q.getDimSize(r - 1), k.getDimSize(r - 1)))
    return op->emitOpError()
           << "key head dim is " << k.getDimSize(r - 1)
           << " but query head dim is " << q.getDimSize(r - 1);
  if (!dimsCompatible(k.getDimSize(r - 2), v.getDimSize(r - 2)))
    return op->emitOpError() << "value length is " << v.getDimSize(r - 2)
                             << " but key length is " << k.getDimSize(r - 2);
  if (causal && !dimsCompatible(q.getDimSize(r - 2), k.getDimSize(r - 2)))
    return op->emitOpError()
           << "causal attention needs query length == key length, got "
           << q.getDimSize(r - 2) << " and " << k.getDimSize(r - 2);
  if (scale && !(scale->convertToDouble() > 0))
    return op->emitOpError()
           << "scale is " << formatNumber(scale->convertToDouble())
           << " but must be > 0";
  if (failed(verifySameElementType(
          op, {{"query", query}, {"key", key}, {"value", value}})))
    return failure();
  outShape.assign(q.getShape().begin(), q.getShape().end() - 1);
  outShape.push_back(v.getDimSize(r - 1));
  return success();
}

LogicalResult AttentionOp::verify() {
  SmallVector<int64_t> expected;
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getCausal(), getScale(), expected)) ||
      failed(verifySameElementType(
          *this, {{"query", getQuery()}, {"result", getResult()}})))
    return failure();
  return verifyResultShape(*this, getResult().getType(), expected,
                           "query [..., Tq, D] and value [..., Tk, Dv]");
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError() << "p is " << formatNumber(p)
                         << " but must be in [0, 1)";
  return success();
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  if (getP().isZero())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Binary elementwise
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinary(Operation *op, Value lhs, Value rhs,
                                  Value result) {
  if (failed(verifySameElementType(
          op, {{"lhs", lhs}, {"rhs", rhs}, {"result", result}})))
    return failure();
  auto a = rankedType(lhs), b = rankedType(rhs);
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (!shape)
    return op->emitOpError()
           << "operand shapes " << formatShape(a.getShape()) << " and "
           << formatShape(b.getShape()) << " do not broadcast";
  return verifyResultShape(op, rankedType(result), *shape,
                           "broadcasting lhs and rhs");
}

LogicalResult AddOp::verify() {
  return verifyBinary(*this, getLhs(), getRhs(), getResult());
}
LogicalResult SubOp::verify() {
  return verifyBinary(*this, getLhs(), getRhs(), getResult());
}
LogicalResult MulOp::verify() {
  return verifyBinary(*this, getLhs(), getRhs(), getResult());
}
LogicalResult DivOp::verify() {
  return verifyBinary(*this, getLhs(), getRhs(), getResult());
}

LogicalResult CompareOp::verify() {
  auto a = rankedType(getLhs()), b = rankedType(getRhs());
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "compares " << a.getElementType() << " with "
                         << b.getElementType()
                         << "; cast one operand to the other's type";
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (!shape)
    return emitOpError() << "operand shapes " << formatShape(a.getShape())
                         << " and " << formatShape(b.getShape())
                         << " do not broadcast";
  return verifyResultShape(*this, rankedType(getResult()), *shape,
                           "broadcasting lhs and rhs");
}

LogicalResult SelectOp::verify() {
  if (failed(verifySameElementType(*this, {{"on_true", getOnTrue()},
                                           {"on_false", getOnFalse()},
                                           {"result", getResult()}})))
    return failure();
  auto c = rankedType(getCondition()), t = rankedType(getOnTrue()),
       f = rankedType(getOnFalse());
  auto values = broadcastShapes(t.getShape(), f.getShape());
  auto shape = values ? broadcastShapes(c.getShape(), *values) : std::nullopt;
  if (!shape)
    return emitOpError() << "condition, on_true and on_false shapes "
                         << formatShape(c.getShape()) << ", "
                         << formatShape(t.getShape()) << " and "
                         << formatShape(f.getShape()) << " do not broadcast";
  return verifyResultShape(*this, rankedType(getResult()), *shape,
                           "broadcasting condition, on_true and on_false");
}

//===----------------------------------------------------------------------===//
// Shape and dtype ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from input element type "
                         << in.getElementType() << "; use dsnn.cast";
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "input " << formatShape(in.getShape()) << " has "
                         << in.getNumElements() << " elements but result "
                         << formatShape(out.getShape()) << " has "
                         << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  // reshape(reshape(x)) is one reshape of x.
  if (auto prev = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(prev.getInput());
    return getResult();
  }
  return {};
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType();
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries but the input has rank " << in.getRank();
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t p : perm)
    if (p < 0 || p >= in.getRank() || !seen.insert(p).second)
      return emitOpError() << "permutation ["
                           << llvm::make_range(perm.begin(), perm.end())
                           << "] is not a permutation of 0.."
                           << in.getRank() - 1;
  if (in.getElementType() != getResult().getType().getElementType())
    return emitOpError("result element type differs from the input's");
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(in.getDimSize(p));
  return verifyResultShape(*this, getResult().getType(), expected,
                           "permuting the input");
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p1), p2) = transpose(x, p1 ∘ p2).
  if (auto prev = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> inner = prev.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner[p]);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return prev.getInput();
    getInputMutable().assign(prev.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

LogicalResult SplitOp::verify() {
  auto in = getInput().getType();
  auto dim = normalizeDim(getDim(), in.getRank());
  if (!dim)
    return verifyDimAttr(*this, getDim(), in.getRank());
  if (getResults().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  bool dynamic = false;
  for (auto [i, v] : llvm::enumerate(getResults())) {
    auto t = rankedType(v);
    if (t.getRank() != in.getRank() ||
        t.getElementType() != in.getElementType())
      return emitOpError() << "result " << i << " type " << t
                           << " must have the input's rank and element type";
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (d != *dim && !dimsCompatible(t.getDimSize(d), in.getDimSize(d)))
        return emitOpError()
               << "result " << i << " dim " << d << " is " << t.getDimSize(d)
               << " but the input's is " << in.getDimSize(d);
    dynamic |= t.isDynamicDim(*dim);
    total += t.getDimSize(*dim);
  }
  if (!dynamic && !in.isDynamicDim(*dim) && total != in.getDimSize(*dim))
    return emitOpError() << "result sizes along dim " << *dim << " add up to "
                         << total << " but the input has "
                         << in.getDimSize(*dim);
  return success();
}

LogicalResult SplitOp::fold(FoldAdaptor, SmallVectorImpl<OpFoldResult> &out) {
  if (getNumResults() == 1 && getResult(0).getType() == getInput().getType()) {
    out.push_back(getInput());
    return success();
  }
  return failure();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto out = getResult().getType();
  auto dim = normalizeDim(getDim(), out.getRank());
  if (!dim)
    return verifyDimAttr(*this, getDim(), out.getRank());
  int64_t total = 0;
  bool dynamic = false;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = rankedType(v);
    if (t.getRank() != out.getRank() ||
        t.getElementType() != out.getElementType())
      return emitOpError() << "input " << i << " type " << t
                           << " must have the result's rank and element type";
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (d != *dim && !dimsCompatible(t.getDimSize(d), out.getDimSize(d)))
        return emitOpError()
               << "input " << i << " dim " << d << " is " << t.getDimSize(d)
               << " but the result's is " << out.getDimSize(d);
    dynamic |= t.isDynamicDim(*dim);
    total += t.getDimSize(*dim);
  }
  if (!dynamic && !out.isDynamicDim(*dim) && total != out.getDimSize(*dim))
    return emitOpError() << "input sizes along dim " << *dim << " add up to "
                         << total << " but the result has "
                         << out.getDimSize(*dim);
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 &&
      getInputs().front().getType() == getResult().getType())
    return getInputs().front();
  return {};
}

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (!shapesCompatible(in.getShape(), out.getShape()))
    return emitOpError() << "result shape " << formatShape(out.getShape())
                         << " differs from input shape "
                         << formatShape(in.getShape())
                         << "; a cast changes only the element type";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

static LogicalResult verifyReduce(Operation *op, Value input, Value result,
                                  ArrayRef<int64_t> dims, bool keepDims) {
  auto in = rankedType(input);
  llvm::SmallSet<int64_t, 8> reduced;
  for (int64_t d : dims) {
    auto nd = normalizeDim(d, in.getRank());
    if (!nd)
      return verifyDimAttr(op, d, in.getRank());
    if (!reduced.insert(*nd).second)
      return op->emitOpError() << "dim " << d << " is listed twice";
  }
  if (failed(verifySameElementType(op, {{"input", input}, {"result", result}})))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!reduced.contains(d))
      expected.push_back(in.getDimSize(d));
    else if (keepDims)
      expected.push_back(1);
  }
  return verifyResultShape(op, rankedType(result), expected,
                           keepDims ? "reducing dims, keeping them as 1"
                                    : "removing the reduced dims");
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), getKeepDims());
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), getKeepDims());
}

static LogicalResult verifyCrossEntropyOperands(Operation *op, Value logitsV,
                                                Value targetsV) {
  auto logits = rankedType(logitsV), targets = rankedType(targetsV);
  if (logits.getRank() < 1)
    return op->emitOpError("logits must have rank >= 1 [..., vocab]");
  if (!shapesCompatible(targets.getShape(), logits.getShape().drop_back()))
    return op->emitOpError()
           << "targets shape " << formatShape(targets.getShape())
           << " must equal the logits shape without its last dim, "
           << formatShape(logits.getShape().drop_back());
  return success();
}

LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getInput(), getResult(), getDims(), getKeepDims());
}

/// The vocabulary-parallel cross-entropy's operands and statistics.
template <typename OpTy> static LogicalResult verifyVocabLoss(OpTy op) {
  if (failed(verifyCrossEntropyOperands(op, op.getLogits(), op.getTargets())) ||
      failed(verifyVocabOffset(op, op.getOffset())))
    return failure();
  return verifyRowStats(op, op.getLogits(),
                        {{"max", op.getMax()},
                         {"sum_exp", op.getSumExp()},
                         {"picked", op.getPicked()}});
}

LogicalResult CrossEntropyOp::verify() { return verifyVocabLoss(*this); }

LogicalResult CrossEntropyPartsOp::verify() { return verifyVocabLoss(*this); }

/// input [..., D], weight [V, D] of one float type, targets [...].
template <typename OpTy> static LogicalResult verifyLinearLoss(OpTy op) {
  auto in = rankedType(op.getInput()), w = rankedType(op.getWeight());
  if (in.getRank() < 1)
    return op.emitOpError("input must have rank >= 1 [..., D]");
  if (w.getRank() != 2)
    return op.emitOpError() << "weight must be rank 2 [vocab, D], got rank "
                            << w.getRank();
  if (!dimsCompatible(in.getShape().back(), w.getDimSize(1)))
    return op.emitOpError() << "weight dim 1 is " << w.getDimSize(1)
                            << " but input's last dim is "
                            << in.getShape().back();
  if (failed(verifySameElementType(
          op, {{"input", op.getInput()}, {"weight", op.getWeight()}})))
    return failure();
  if (!shapesCompatible(rankedType(op.getTargets()).getShape(),
                        in.getShape().drop_back()))
    return op.emitOpError()
           << "targets shape "
           << formatShape(rankedType(op.getTargets()).getShape())
           << " must equal the input shape without its last dim, "
           << formatShape(in.getShape().drop_back());
  if (op.getChunk() < 1)
    return op.emitOpError() << "chunk must be positive, got "
                            << op.getChunk();
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() { return verifyLinearLoss(*this); }

LogicalResult LinearCrossEntropyGradOp::verify() {
  return verifyLinearLoss(*this);
}

LogicalResult MSELossOp::verify() {
  if (getInput().getType() != getTarget().getType())
    return emitOpError() << "target type " << getTarget().getType()
                         << " must equal the input type "
                         << getInput().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// LayerOp, MoEOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyYield(Operation *op, Block &block,
                                 TypeRange expected, StringRef what) {
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError("region must end with dsnn.yield");
  if (yield.getValues().getTypes() != expected) {
    std::string got, want;
    llvm::raw_string_ostream g(got), w(want);
    llvm::interleaveComma(yield.getValues().getTypes(), g);
    llvm::interleaveComma(expected, w);
    return op->emitOpError() << "region yields (" << got << ") but " << what
                             << " (" << want << ")";
  }
  return success();
}

LogicalResult LayerOp::verifyRegions() {
  if (getLayerName().empty())
    return emitOpError("layer_name must not be empty");
  if (getBody().front().getNumArguments() != 0)
    return emitOpError("body takes no block arguments; it reads values "
                       "defined above");
  return verifyYield(*this, getBody().front(), getResultTypes(),
                     "the layer's results are");
}

LogicalResult MoEOp::verify() {
  // I64Attr getters are unsigned; read the signed values for range checks.
  int64_t e = getNumExpertsAttr().getInt(), k = getKAttr().getInt();
  int64_t minCapacity = getMinCapacityAttr().getInt();
  if (e < 1)
    return emitOpError() << "num_experts is " << e << " but must be >= 1";
  if (k < 1 || k > e)
    return emitOpError() << "k is " << k << " but must be in [1, " << e
                         << "] (num_experts)";
  if (!(getCapacityFactor().convertToDouble() > 0) ||
      !(getEvalCapacityFactor().convertToDouble() > 0))
    return emitOpError("capacity_factor and eval_capacity_factor must be > 0");
  if (minCapacity < 0)
    return emitOpError() << "min_capacity is " << minCapacity
                         << " but must be >= 0";
  auto in = getInput().getType(), gate = getGateWeight().getType();
  if (in.getRank() < 1)
    return emitOpError("input must have rank >= 1 [..., C]");
  int64_t c = in.getShape().back();
  if (gate.getRank() != 2 || !dimsCompatible(gate.getDimSize(0), e) ||
      !dimsCompatible(gate.getDimSize(1), c))
    return emitOpError() << "gate_weight shape " << formatShape(gate.getShape())
                         << " but expected [" << e << ", " << c
                         << "] (num_experts, input dim)";
  if (getResult().getType() != in)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the input type " << in;
  for (auto [i, p] : llvm::enumerate(getExpertParams())) {
    auto t = rankedType(p);
    if (t.getRank() < 1 || !dimsCompatible(t.getDimSize(0), e))
      return emitOpError() << "expert_params #" << i << " shape "
                           << formatShape(t.getShape())
                           << " must lead with num_experts = " << e;
  }
  return success();
}

LogicalResult MoEOp::verifyRegions() {
  Block &body = getExperts().front();
  size_t nParams = getExpertParams().size();
  if (body.getNumArguments() != nParams + 1)
    return emitOpError() << "expert region takes " << body.getNumArguments()
                         << " arguments but needs " << nParams + 1
                         << " (dispatched tokens + one per expert param)";
  auto tokens = dyn_cast<RankedTensorType>(body.getArgument(0).getType());
  int64_t c = getInput().getType().getShape().back();
  if (!tokens || tokens.getRank() != 3 ||
      !dimsCompatible(tokens.getDimSize(0), getNumExperts()) ||
      !dimsCompatible(tokens.getDimSize(2), c))
    return emitOpError() << "expert region argument 0 has type "
                         << body.getArgument(0).getType() << " but must be ["
                         << getNumExperts() << ", capacity, " << c << "]";
  for (auto [i, p] : llvm::enumerate(getExpertParams()))
    if (body.getArgument(i + 1).getType() != p.getType())
      return emitOpError() << "expert region argument " << i + 1 << " has type "
                           << body.getArgument(i + 1).getType()
                           << " but expert_params #" << i << " is "
                           << p.getType();
  return verifyYield(*this, body, TypeRange{tokens},
                     "the experts must yield the dispatched tokens' type");
}

int64_t MoEOp::getCapacity() {
  return cast<RankedTensorType>(getExperts().front().getArgument(0).getType())
      .getDimSize(1);
}

//===----------------------------------------------------------------------===//
// MoE routing: moe_route, moe_gate, moe_dispatch, moe_gather
//===----------------------------------------------------------------------===//

/// `experts` and `slots` are i64 [N, k] of one shape; N must be `tokens`
/// when that is known. Returns k, or failure after the diagnostic.
static FailureOr<int64_t> verifyRouting(Operation *op, Value experts,
                                        Value slots, int64_t tokens) {
  auto e = rankedType(experts), s = rankedType(slots);
  if (e.getRank() != 2 || !e.getElementType().isSignlessInteger(64))
    return op->emitOpError() << "experts must be i64 [N, k], got " << e;
  if (s != e)
    return op->emitOpError()
           << "slots type " << s << " must equal the experts type " << e;
  if (tokens != ShapedType::kDynamic &&
      !dimsCompatible(e.getDimSize(0), tokens))
    return op->emitOpError()
           << "experts has " << e.getDimSize(0)
           << " tokens (dim 0) but the tokens operand has " << tokens;
  return e.getDimSize(1);
}

LogicalResult MoERouteOp::verify() {
  auto probs = getProbs().getType();
  if (probs.getRank() != 2)
    return emitOpError() << "probs must be rank 2 [tokens, experts], got rank "
                         << probs.getRank();
  int64_t n = probs.getDimSize(0), e = probs.getDimSize(1);
  int64_t k = getKAttr().getInt(), capacity = getCapacityAttr().getInt();
  if (k < 1 || (e != ShapedType::kDynamic && k > e))
    return emitOpError() << "k is " << k << " but must be in [1, " << e
                         << "] (the experts, probs dim 1)";
  if (capacity < 1)
    return emitOpError() << "capacity is " << capacity << " but must be >= 1";
  SmallVector<int64_t> choices = {n, k};
  for (auto [name, v] : {std::pair<StringRef, Value>{"experts", getExperts()},
                         {"slots", getSlots()}}) {
    auto t = rankedType(v);
    if (!shapesCompatible(t.getShape(), choices) ||
        !t.getElementType().isSignlessInteger(64))
      return emitOpError() << name << " type " << t << " but expected i64 "
                           << formatShape(choices) << " (tokens, k)";
  }
  auto load = getLoad().getType();
  if (load.getRank() != 1 || !dimsCompatible(load.getDimSize(0), e) ||
      load.getElementType() != probs.getElementType())
    return emitOpError() << "load type " << load << " but expected [" << e
                         << "] of the probs' element type";
  return success();
}

LogicalResult MoEGateOp::verify() {
  auto probs = getProbs().getType();
  if (probs.getRank() != 2)
    return emitOpError() << "probs must be rank 2 [tokens, experts], got rank "
                         << probs.getRank();
  if (failed(
          verifyRouting(*this, getExperts(), getSlots(), probs.getDimSize(0))))
    return failure();
  if (failed(verifySameElementType(
          *this, {{"probs", getProbs()}, {"result", getResult()}})))
    return failure();
  return verifyResultShape(*this, getResult().getType(),
                           rankedType(getExperts()).getShape(),
                           "one weight per choice, experts [N, k]");
}

LogicalResult MoEGateGradOp::verify() {
  auto probs = getProbs().getType();
  if (probs.getRank() != 2)
    return emitOpError() << "probs must be rank 2 [tokens, experts], got rank "
                         << probs.getRank();
  if (failed(
          verifyRouting(*this, getExperts(), getSlots(), probs.getDimSize(0))))
    return failure();
  auto g = getGrad().getType();
  if (!shapesCompatible(g.getShape(), rankedType(getExperts()).getShape()) ||
      g.getElementType() != probs.getElementType())
    return emitOpError() << "grad type " << g
                         << " must be the combine weights': the experts' "
                            "shape and the probs' element type";
  return success();
}

LogicalResult MoEDispatchOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() != 2 && in.getRank() != 3)
    return emitOpError() << "input must be [N, C] or [N, k, C], got rank "
                         << in.getRank();
  FailureOr<int64_t> k =
      verifyRouting(*this, getExperts(), getSlots(), in.getDimSize(0));
  if (failed(k))
    return failure();
  if (in.getRank() == 3 && !dimsCompatible(in.getDimSize(1), *k))
    return emitOpError() << "input dim 1 is " << in.getDimSize(1)
                         << " but a per-choice input needs k = " << *k;
  if (out.getRank() != 3 ||
      !dimsCompatible(out.getDimSize(2), in.getShape().back()))
    return emitOpError() << "result type " << out << " must be [experts, "
                         << "capacity, " << in.getShape().back() << "]";
  return verifySameElementType(
      *this, {{"input", getInput()}, {"result", getResult()}});
}

LogicalResult MoEGatherOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() != 3)
    return emitOpError() << "input must be [experts, capacity, C], got rank "
                         << in.getRank();
  if (failed(
          verifyRouting(*this, getExperts(), getSlots(), ShapedType::kDynamic)))
    return failure();
  if (failed(verifySameElementType(
          *this, {{"input", getInput()}, {"result", getResult()}})))
    return failure();
  SmallVector<int64_t> expected(rankedType(getExperts()).getShape());
  expected.push_back(in.getDimSize(2));
  return verifyResultShape(*this, getResult().getType(), expected,
                           "experts [N, k] + [input dim 2]");
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxGradOp::verify() {
  return verifyDimAttr(*this, getDim(), getType().getRank());
}

LogicalResult LogSoftmaxGradOp::verify() {
  return verifyDimAttr(*this, getDim(), getType().getRank());
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNorm(*this, getInput(), {{"weight", getWeight()}},
                    getInputGrad(), getEpsilon().convertToDouble());
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNorm(*this, getInput(), {{"weight", getWeight()}},
                    getInputGrad(), getEpsilon().convertToDouble());
}

LogicalResult AttentionGradOp::verify() {
  SmallVector<int64_t> expected;
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getCausal(), getScale(), expected)))
    return failure();
  auto g = getGrad().getType();
  if (!shapesCompatible(g.getShape(), expected) ||
      g.getElementType() != getQuery().getType().getElementType())
    return emitOpError() << "grad type " << g << " must be the attention "
                         << "output's: shape " << formatShape(expected)
                         << ", element type "
                         << getQuery().getType().getElementType();
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyCrossEntropyOperands(*this, getLogits(), getTargets())) ||
      failed(verifyVocabOffset(*this, getOffset())))
    return failure();
  return verifyRowStats(*this, getLogits(),
                        {{"max", getMax()}, {"sum_exp", getSumExp()}});
}

LogicalResult EmbeddingGradOp::verify() {
  auto table = getResult().getType();
  if (table.getRank() != 2)
    return emitOpError() << "result must be the rank-2 table [vocab, dim], "
                            "got rank "
                         << table.getRank();
  if (failed(verifySameElementType(
          *this, {{"grad", getGrad()}, {"result", getResult()}})))
    return failure();
  if (failed(verifyVocabOffset(*this, getOffset())))
    return failure();
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  expected.push_back(table.getDimSize(1));
  if (!shapesCompatible(getGrad().getType().getShape(), expected))
    return emitOpError() << "grad shape "
                         << formatShape(getGrad().getType().getShape())
                         << " must be indices shape + [table dim 1] = "
                         << formatShape(expected);
  return success();
}

#define GET_OP_CLASSES
#include "dsnn/NNOps.cpp.inc"
