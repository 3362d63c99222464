//===- VJPs.cpp - Vector-Jacobian products of the dsnn ops
//-----------------===//
//
// One DifferentiableOpInterface external model per forward dsnn op. Fused
// backward ops (NNGradOps.td) are used where they exist; everything else is
// built from primitive dsnn ops, so later passes (sharding, fusion, lowering)
// see nothing new. `dsnn.layer` is structure, differentiated by ds-autodiff
// itself (its body reads values from above, which no operand list covers).
//
//===----------------------------------------------------------------------===//
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nn;

Value mlir::ds::scalarConstant(OpBuilder &b, Location loc, Type elementType,
                               double value) {
  auto type = RankedTensorType::get({}, elementType);
  auto attr = DenseElementsAttr::get(
      type, ArrayRef<Attribute>{FloatAttr::get(elementType, value)});
  return arith::ConstantOp::create(b, loc, attr);
}

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

/// The cotangent of a broadcast operand: sums `grad` over the dims that
/// broadcasting added or stretched, then reshapes to `target`.
Value unbroadcast(OpBuilder &b, Location loc, Value grad,
                  RankedTensorType target) {
  auto type = tensorType(grad);
  if (type == target)
    return grad;
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> dims, kept;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool stretched = d >= lead && target.getDimSize(d - lead) == 1 &&
                     type.getDimSize(d) != 1;
    if (d < lead || stretched)
      dims.push_back(d);
    else
      kept.push_back(type.getDimSize(d));
  }
  Value result = grad;
  if (!dims.empty())
    result = ReduceSumOp::create(
        b, loc, RankedTensorType::get(kept, type.getElementType()), grad, dims);
  if (result.getType() != target)
    result = ReshapeOp::create(b, loc, target, result);
  return result;
}

/// `v` [..., n] as the matrix [M, n] (M = product of the leading dims).
Value asMatrix(OpBuilder &b, Location loc, Value v) {
  auto type = tensorType(v);
  if (type.getRank() == 2)
    return v;
  int64_t m = 1;
  for (int64_t d : type.getShape().drop_back())
    m *= d;
  auto matrix =
      RankedTensorType::get({m, type.getShape().back()}, type.getElementType());
  return ReshapeOp::create(b, loc, matrix, v);
}

/// Reshapes `v` to `type` unless it already has it.
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  return v.getType() == type ? v : ReshapeOp::create(b, loc, type, v);
}

/// `grad` of a reduction's result, broadcast back to the input's shape.
Value unreduce(OpBuilder &b, Location loc, Value grad, RankedTensorType input,
               ArrayRef<int64_t> dims, bool keepDims, double scale) {
  SmallVector<int64_t> keptShape(input.getShape());
  for (int64_t d : dims)
    keptShape[*normalizeDim(d, input.getRank())] = 1;
  Type elementType = input.getElementType();
  Value g = grad;
  // Reduced leading dims broadcast back as they are; others need their 1s.
  SmallVector<int64_t> sorted;
  for (int64_t d : dims)
    sorted.push_back(*normalizeDim(d, input.getRank()));
  llvm::sort(sorted);
  bool leading = llvm::equal(sorted, llvm::seq<int64_t>(0, sorted.size()));
  if (!keepDims && !leading)
    g = reshapeTo(b, loc, g, RankedTensorType::get(keptShape, elementType));
  if (scale != 1.0)
    g = MulOp::create(b, loc, g.getType(), g,
                      scalarConstant(b, loc, elementType, scale));
  if (g.getType() == input)
    return g;
  return AddOp::create(b, loc, input, zeros(b, loc, input), g);
}

Value gradOrZeros(OpBuilder &b, Location loc, Value grad, Type type) {
  return grad ? grad : zeros(b, loc, cast<RankedTensorType>(type));
}

/// Shapes the VJPs reshape must be static; the model contract promises it
/// for parameters, this says so when a batch value breaks it.
LogicalResult requireStatic(Operation *op, Value v, StringRef what) {
  if (tensorType(v).hasStaticShape())
    return success();
  return op->emitOpError() << "cannot be differentiated: its " << what
                           << " has the dynamic shape "
                           << formatShape(tensorType(v).getShape())
                           << "; autodiff needs static shapes";
}

/// CRTP base: every model implements `vjp(op, b, loc, dys, dxs)`; the
/// interface entry point unpacks the op.
template <typename Model, typename OpTy>
struct VJP : DifferentiableOpInterface::ExternalModel<Model, OpTy> {
  LogicalResult buildVJP(Operation *op, OpBuilder &b, ValueRange resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    return static_cast<const Model *>(this)->vjp(
        cast<OpTy>(op), b, op->getLoc(), resultGrads, operandGrads);
  }
};

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

struct LinearVJP : VJP<LinearVJP, LinearOp> {
  // y = x·Wᵀ + b over x flattened to [M, in]: dx = dy·W, dW = dyᵀ·x,
  // db = Σ_M dy.
  LogicalResult vjp(LinearOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    if (failed(requireStatic(op, op.getInput(), "input")))
      return failure();
    Value dy = asMatrix(b, loc, dys[0]);
    Value x = asMatrix(b, loc, op.getInput());
    auto xm = tensorType(x), w = tensorType(op.getWeight());
    auto dxm = RankedTensorType::get({xm.getDimSize(0), w.getDimSize(1)},
                                     w.getElementType());
    Value dx = MatmulOp::create(b, loc, dxm, dy, op.getWeight());
    dxs.push_back(reshapeTo(b, loc, dx, tensorType(op.getInput())));
    dxs.push_back(MatmulOp::create(b, loc, w, dy, x, /*transpose_a=*/true));
    if (Value bias = op.getBias())
      dxs.push_back(ReduceSumOp::create(b, loc, bias.getType(), dy,
                                        ArrayRef<int64_t>{0}));
    return success();
  }
};

/// C = op(A)·op(B) with op = transpose when the flag is set:
///   d op(A) = dC·op(B)ᵀ, d op(B) = op(A)ᵀ·dC, each transposed back when
/// its operand was; the flags fold every transpose into the matmuls.
template <typename OpTy> struct MatmulVJP : VJP<MatmulVJP<OpTy>, OpTy> {
  LogicalResult vjp(OpTy op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Value a = op.getLhs(), bm = op.getRhs(), dc = dys[0];
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    auto mm = [&](Type type, Value l, Value r, bool tl, bool tr) -> Value {
      return OpTy::create(b, loc, type, l, r, tl, tr);
    };
    Value da = ta ? mm(a.getType(), bm, dc, tb, true)
                  : mm(a.getType(), dc, bm, false, !tb);
    Value db = tb ? mm(bm.getType(), dc, a, true, ta)
                  : mm(bm.getType(), a, dc, !ta, false);
    dxs.append({da, db});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Embedding, normalization, activations, attention
//===----------------------------------------------------------------------===//

struct EmbeddingVJP : VJP<EmbeddingVJP, EmbeddingOp> {
  LogicalResult vjp(EmbeddingOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(Value());
    dxs.push_back(EmbeddingGradOp::create(b, loc, op.getTable().getType(),
                                          op.getIndices(), dys[0],
                                          op.getOffset()));
    if (op.getOffset())
      dxs.push_back(Value());
    return success();
  }
};

struct LayerNormVJP : VJP<LayerNormVJP, LayerNormOp> {
  LogicalResult vjp(LayerNormOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    auto grad = LayerNormGradOp::create(
        b, loc, op.getInput().getType(), op.getWeight().getType(),
        op.getBias().getType(), op.getInput(), op.getWeight(), dys[0],
        op.getEpsilonAttr());
    dxs.append(grad->result_begin(), grad->result_end());
    return success();
  }
};

struct RMSNormVJP : VJP<RMSNormVJP, RMSNormOp> {
  LogicalResult vjp(RMSNormOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    auto grad = RMSNormGradOp::create(
        b, loc, op.getInput().getType(), op.getWeight().getType(),
        op.getInput(), op.getWeight(), dys[0], op.getEpsilonAttr());
    dxs.append(grad->result_begin(), grad->result_end());
    return success();
  }
};

struct GeluVJP : VJP<GeluVJP, GeluOp> {
  LogicalResult vjp(GeluOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(GeluGradOp::create(b, loc, op.getType(), op.getInput(),
                                     dys[0], op.getApproximate()));
    return success();
  }
};

/// relu and silu: a fused grad op from the forward input.
template <typename OpTy, typename GradOpTy>
struct ActivationVJP : VJP<ActivationVJP<OpTy, GradOpTy>, OpTy> {
  LogicalResult vjp(OpTy op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(
        GradOpTy::create(b, loc, op.getType(), op.getInput(), dys[0]));
    return success();
  }
};

struct TanhVJP : VJP<TanhVJP, TanhOp> {
  // From the output: dx = dy·(1 − y²).
  LogicalResult vjp(TanhOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Type type = op.getType();
    Value y = op.getResult();
    Value y2 = MulOp::create(b, loc, type, y, y);
    Value one = scalarConstant(b, loc, op.getType().getElementType(), 1.0);
    Value d = SubOp::create(b, loc, type, one, y2);
    dxs.push_back(MulOp::create(b, loc, type, dys[0], d));
    return success();
  }
};

struct ExpVJP : VJP<ExpVJP, ExpOp> {
  // From the output: dx = dy·y.
  LogicalResult vjp(ExpOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(MulOp::create(b, loc, op.getType(), dys[0], op.getResult()));
    return success();
  }
};

struct NegVJP : VJP<NegVJP, NegOp> {
  LogicalResult vjp(NegOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(NegOp::create(b, loc, op.getType(), dys[0]));
    return success();
  }
};

struct RsqrtVJP : VJP<RsqrtVJP, RsqrtOp> {
  // From the output: d(x^-½)/dx = -½·x^-3/2, so dx = -½·dy·y³.
  LogicalResult vjp(RsqrtOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Type type = op.getType();
    Value y = op.getResult();
    Value y3 =
        MulOp::create(b, loc, type, MulOp::create(b, loc, type, y, y), y);
    Value half = scalarConstant(b, loc, op.getType().getElementType(), -0.5);
    Value d = MulOp::create(b, loc, type, dys[0], y3);
    dxs.push_back(MulOp::create(b, loc, type, d, half));
    return success();
  }
};

/// softmax and log_softmax: fused grad ops from the forward output.
template <typename OpTy, typename GradOpTy>
struct SoftmaxVJP : VJP<SoftmaxVJP<OpTy, GradOpTy>, OpTy> {
  LogicalResult vjp(OpTy op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(GradOpTy::create(b, loc, op.getType(), op.getResult(), dys[0],
                                   op.getDimAttr()));
    return success();
  }
};

struct AttentionVJP : VJP<AttentionVJP, AttentionOp> {
  LogicalResult vjp(AttentionOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    auto grad = AttentionGradOp::create(
        b, loc, op.getQuery().getType(), op.getKey().getType(),
        op.getValue().getType(), op.getQuery(), op.getKey(), op.getValue(),
        dys[0], op.getCausalAttr(), op.getScaleAttr());
    dxs.append(grad->result_begin(), grad->result_end());
    return success();
  }
};

struct DropoutVJP : VJP<DropoutVJP, DropoutOp> {
  // dx = mask · dy / (1 − p): the same dropout (same key, seed and stream,
  // hence the same mask, recomputed rather than stored) of the cotangent.
  LogicalResult vjp(DropoutOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    double p = op.getP().convertToDouble();
    if (p == 0.0) {
      dxs.push_back(dys[0]);
      if (op.getKey())
        dxs.push_back(Value());
      return success();
    }
    if (!op.getKey())
      return op.emitOpError()
             << "with p = " << formatNumber(p)
             << " has no key operand, so its backward cannot recompute its "
                "mask; ds-autodiff gives every dropout of the function it "
                "differentiates a key";
    dxs.push_back(DropoutOp::create(b, loc, op.getType(), dys[0], op.getKey(),
                                    op.getPAttr(), op.getSeedAttr(),
                                    op.getStreamAttr()));
    dxs.push_back(Value());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Broadcasting arithmetic
//===----------------------------------------------------------------------===//

struct AddVJP : VJP<AddVJP, AddOp> {
  LogicalResult vjp(AddOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(unbroadcast(b, loc, dys[0], tensorType(op.getLhs())));
    dxs.push_back(unbroadcast(b, loc, dys[0], tensorType(op.getRhs())));
    return success();
  }
};

struct SubVJP : VJP<SubVJP, SubOp> {
  LogicalResult vjp(SubOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(unbroadcast(b, loc, dys[0], tensorType(op.getLhs())));
    Value neg = NegOp::create(b, loc, dys[0].getType(), dys[0]);
    dxs.push_back(unbroadcast(b, loc, neg, tensorType(op.getRhs())));
    return success();
  }
};

struct MulVJP : VJP<MulVJP, MulOp> {
  LogicalResult vjp(MulOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Type type = op.getType();
    Value da = MulOp::create(b, loc, type, dys[0], op.getRhs());
    Value db = MulOp::create(b, loc, type, dys[0], op.getLhs());
    dxs.push_back(unbroadcast(b, loc, da, tensorType(op.getLhs())));
    dxs.push_back(unbroadcast(b, loc, db, tensorType(op.getRhs())));
    return success();
  }
};

struct DivVJP : VJP<DivVJP, DivOp> {
  // y = a / b: da = dy / b, db = −(dy / b)·y.
  LogicalResult vjp(DivOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Type type = op.getType();
    Value da = DivOp::create(b, loc, type, dys[0], op.getRhs());
    Value prod = MulOp::create(b, loc, type, da, op.getResult());
    Value db = NegOp::create(b, loc, type, prod);
    dxs.push_back(unbroadcast(b, loc, da, tensorType(op.getLhs())));
    dxs.push_back(unbroadcast(b, loc, db, tensorType(op.getRhs())));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// A comparison is piecewise constant: no cotangent for either operand.
struct CompareVJP : VJP<CompareVJP, CompareOp> {
  LogicalResult vjp(CompareOp, OpBuilder &, Location, ValueRange,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.append({Value(), Value()});
    return success();
  }
};

/// The cotangent goes to the branch each element came from.
struct SelectVJP : VJP<SelectVJP, SelectOp> {
  LogicalResult vjp(SelectOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Value dy = dys[0];
    Value zero = zeros(b, loc, tensorType(dy));
    Type type = dy.getType();
    Value dt = SelectOp::create(b, loc, type, op.getCondition(), dy, zero);
    Value df = SelectOp::create(b, loc, type, op.getCondition(), zero, dy);
    dxs.push_back(Value());
    dxs.push_back(unbroadcast(b, loc, dt, tensorType(op.getOnTrue())));
    dxs.push_back(unbroadcast(b, loc, df, tensorType(op.getOnFalse())));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Shape and dtype: each inverts itself
//===----------------------------------------------------------------------===//

struct ReshapeVJP : VJP<ReshapeVJP, ReshapeOp> {
  LogicalResult vjp(ReshapeOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(ReshapeOp::create(b, loc, op.getInput().getType(), dys[0]));
    return success();
  }
};

struct TransposeVJP : VJP<TransposeVJP, TransposeOp> {
  LogicalResult vjp(TransposeOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    ArrayRef<int64_t> perm = op.getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    dxs.push_back(
        TransposeOp::create(b, loc, op.getInput().getType(), dys[0], inverse));
    return success();
  }
};

struct SplitVJP : VJP<SplitVJP, SplitOp> {
  // Pieces that do not reach the loss contribute zeros.
  LogicalResult vjp(SplitOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    SmallVector<Value> pieces;
    for (auto [dy, result] : llvm::zip(dys, op.getResults()))
      pieces.push_back(gradOrZeros(b, loc, dy, result.getType()));
    dxs.push_back(ConcatOp::create(b, loc, op.getInput().getType(), pieces,
                                   op.getDimAttr()));
    return success();
  }
};

struct ConcatVJP : VJP<ConcatVJP, ConcatOp> {
  LogicalResult vjp(ConcatOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    auto split = SplitOp::create(b, loc, op.getInputs().getTypes(), dys[0],
                                 op.getDimAttr());
    dxs.append(split->result_begin(), split->result_end());
    return success();
  }
};

struct CastVJP : VJP<CastVJP, CastOp> {
  LogicalResult vjp(CastOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(CastOp::create(b, loc, op.getInput().getType(), dys[0]));
    return success();
  }
};

struct GradScaleVJP : VJP<GradScaleVJP, GradScaleOp> {
  LogicalResult vjp(GradScaleOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    Type elem = tensorType(dys[0]).getElementType();
    Value scale = op.getScale();
    if (tensorType(scale).getElementType() != elem)
      scale = CastOp::create(b, loc, RankedTensorType::get({}, elem), scale);
    dxs.push_back(MulOp::create(b, loc, dys[0].getType(), dys[0], scale));
    dxs.push_back(Value()); // the scale is a constant of the step
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

struct ReduceSumVJP : VJP<ReduceSumVJP, ReduceSumOp> {
  LogicalResult vjp(ReduceSumOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    if (failed(requireStatic(op, op.getInput(), "input")))
      return failure();
    dxs.push_back(unreduce(b, loc, dys[0], tensorType(op.getInput()),
                           op.getDims(), op.getKeepDims(), 1.0));
    return success();
  }
};

struct ReduceMeanVJP : VJP<ReduceMeanVJP, ReduceMeanOp> {
  LogicalResult vjp(ReduceMeanOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    if (failed(requireStatic(op, op.getInput(), "input")))
      return failure();
    auto input = tensorType(op.getInput());
    int64_t n = 1;
    for (int64_t d : op.getDims())
      n *= input.getDimSize(*normalizeDim(d, input.getRank()));
    dxs.push_back(unreduce(b, loc, dys[0], input, op.getDims(),
                           op.getKeepDims(), 1.0 / static_cast<double>(n)));
    return success();
  }
};

struct CrossEntropyVJP : VJP<CrossEntropyVJP, CrossEntropyOp> {
  LogicalResult vjp(CrossEntropyOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    // Vocabulary-parallel: the gradient through the whole rows' statistics
    // is in the logits' (softmax − onehot), so they get none.
    dxs.push_back(CrossEntropyGradOp::create(
        b, loc, op.getLogits().getType(), op.getLogits(), op.getTargets(),
        dys[0], op.getMax(), op.getSumExp(), op.getOffset(),
        op.getIgnoreIndexAttr()));
    dxs.resize(op->getNumOperands(), Value());
    return success();
  }
};

struct LinearCrossEntropyVJP
    : VJP<LinearCrossEntropyVJP, LinearCrossEntropyOp> {
  // Recomputes each chunk's logits rather than keeping [N, V] of them.
  LogicalResult vjp(LinearCrossEntropyOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    auto grad = LinearCrossEntropyGradOp::create(
        b, loc, op.getInput().getType(), op.getWeight().getType(),
        op.getInput(), op.getWeight(), op.getTargets(), dys[0],
        op.getChunkAttr(), op.getIgnoreIndexAttr());
    dxs.append(grad->result_begin(), grad->result_end());
    dxs.push_back(Value());
    return success();
  }
};

struct MSELossVJP : VJP<MSELossVJP, MSELossOp> {
  // L = mean((x − t)²): dx = dL·2(x − t)/N, dt = −dx.
  LogicalResult vjp(MSELossOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    if (failed(requireStatic(op, op.getInput(), "input")))
      return failure();
    auto input = tensorType(op.getInput());
    Type scalarType = dys[0].getType();
    double n = static_cast<double>(input.getNumElements());
    Value scale =
        MulOp::create(b, loc, scalarType, dys[0],
                      scalarConstant(b, loc, input.getElementType(), 2.0 / n));
    Value diff = SubOp::create(b, loc, input, op.getInput(), op.getTarget());
    Value dx = MulOp::create(b, loc, input, diff, scale);
    dxs.push_back(dx);
    dxs.push_back(NegOp::create(b, loc, input, dx));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Mixture-of-experts routing (dsnn.moe itself is expanded by ds-autodiff)
//===----------------------------------------------------------------------===//

struct MoERouteVJP : VJP<MoERouteVJP, MoERouteOp> {
  // The choice of experts and slots is piecewise constant in the
  // probabilities: no gradient (the aux loss's gradient flows through its
  // mean probabilities, as in DeepSpeed where ce is a one-hot mean).
  LogicalResult vjp(MoERouteOp, OpBuilder &, Location, ValueRange,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(Value());
    return success();
  }
};

struct MoEGateVJP : VJP<MoEGateVJP, MoEGateOp> {
  LogicalResult vjp(MoEGateOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(MoEGateGradOp::create(b, loc, op.getProbs(), op.getExperts(),
                                        op.getSlots(), dys[0],
                                        op.getNormalize()));
    dxs.append({Value(), Value()});
    return success();
  }
};

struct MoEDispatchVJP : VJP<MoEDispatchVJP, MoEDispatchOp> {
  // Dispatch and gather are adjoint: each kept choice's row comes back from
  // its slot; a token shared by its k choices gets their sum.
  LogicalResult vjp(MoEDispatchOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    auto in = tensorType(op.getInput());
    auto choices = tensorType(op.getExperts());
    int64_t c = in.getShape().back();
    auto perChoice = RankedTensorType::get(
        {choices.getDimSize(0), choices.getDimSize(1), c}, in.getElementType());
    Value g = MoEGatherOp::create(b, loc, perChoice, dys[0], op.getExperts(),
                                  op.getSlots());
    if (in.getRank() == 2)
      g = ReduceSumOp::create(b, loc, in, g, ArrayRef<int64_t>{1});
    dxs.append({g, Value(), Value()});
    return success();
  }
};

struct MoEGatherVJP : VJP<MoEGatherVJP, MoEGatherOp> {
  LogicalResult vjp(MoEGatherOp op, OpBuilder &b, Location loc, ValueRange dys,
                    SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(MoEDispatchOp::create(b, loc, op.getInput().getType(), dys[0],
                                        op.getExperts(), op.getSlots()));
    dxs.append({Value(), Value()});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Collectives in the forward (expert parallelism's exchange)
//===----------------------------------------------------------------------===//

struct AllToAllVJP : VJP<AllToAllVJP, dist::AllToAllOp> {
  // An all-to-all permutes slices between ranks; its adjoint sends every
  // slice back: the all-to-all with split and concat dims swapped.
  LogicalResult vjp(dist::AllToAllOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(dist::AllToAllOp::create(
        b, loc, op.getInput().getType(), dys[0], op.getAxes(),
        op.getConcatDimAttr(), op.getSplitDimAttr()));
    return success();
  }
};

// Tensor parallelism's pair (Megatron's f and g). The loss is the same on
// every rank of the group, so a replicated value's cotangent is one value
// held by every rank, not a per-rank term of a sum.
struct AllReduceVJP : VJP<AllReduceVJP, dist::AllReduceOp> {
  // g: the sum is replicated, and so is its cotangent: each rank's partial
  // sum contributed it once.
  LogicalResult vjp(dist::AllReduceOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    if (op.getKind() != dist::ReductionKind::sum)
      return op.emitOpError("in the forward must be a sum (tensor "
                            "parallelism's g) to be differentiated");
    dxs.push_back(dys[0]);
    return success();
  }
};

struct CopyToGroupVJP : VJP<CopyToGroupVJP, dist::CopyToGroupOp> {
  // f: each rank's cotangent is its part's; the input's is their sum.
  LogicalResult vjp(dist::CopyToGroupOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(dist::AllReduceOp::create(
        b, loc, dys[0].getType(), dys[0], op.getAxes(),
        dist::ReductionKindAttr::get(b.getContext(),
                                     dist::ReductionKind::sum)));
    return success();
  }
};

// Megatron sequence parallelism's pair, each the other's dual. The all-gather
// before a column linear is read by this rank's part of the layer, so its
// cotangent is a per-rank term: the shard's gradient sums the group's terms
// for its slice. The reduce-scatter after a row linear leaves each rank its
// slice of the sum, whose cotangent is whole: every partial input reads all
// of them.
struct AllGatherVJP : VJP<AllGatherVJP, dist::AllGatherOp> {
  LogicalResult vjp(dist::AllGatherOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    dxs.push_back(dist::ReduceScatterOp::create(
        b, loc, op.getInput().getType(), dys[0], op.getAxes(),
        dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::sum),
        op.getDimAttr()));
    return success();
  }
};

struct ReduceScatterVJP : VJP<ReduceScatterVJP, dist::ReduceScatterOp> {
  LogicalResult vjp(dist::ReduceScatterOp op, OpBuilder &b, Location loc,
                    ValueRange dys, SmallVectorImpl<Value> &dxs) const {
    if (op.getKind() != dist::ReductionKind::sum)
      return op.emitOpError("in the forward must be a sum (sequence "
                            "parallelism's reduce-scatter) to be "
                            "differentiated");
    dxs.push_back(dist::AllGatherOp::create(b, loc, op.getInput().getType(),
                                            dys[0], op.getAxes(),
                                            op.getDimAttr()));
    return success();
  }
};

} // namespace

void mlir::ds::registerDifferentiableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, NNDialect *) {
    LinearOp::attachInterface<LinearVJP>(*ctx);
    MatmulOp::attachInterface<MatmulVJP<MatmulOp>>(*ctx);
    BatchMatmulOp::attachInterface<MatmulVJP<BatchMatmulOp>>(*ctx);
    EmbeddingOp::attachInterface<EmbeddingVJP>(*ctx);
    LayerNormOp::attachInterface<LayerNormVJP>(*ctx);
    RMSNormOp::attachInterface<RMSNormVJP>(*ctx);
    GeluOp::attachInterface<GeluVJP>(*ctx);
    ReluOp::attachInterface<ActivationVJP<ReluOp, ReluGradOp>>(*ctx);
    SiluOp::attachInterface<ActivationVJP<SiluOp, SiluGradOp>>(*ctx);
    TanhOp::attachInterface<TanhVJP>(*ctx);
    ExpOp::attachInterface<ExpVJP>(*ctx);
    NegOp::attachInterface<NegVJP>(*ctx);
    RsqrtOp::attachInterface<RsqrtVJP>(*ctx);
    SoftmaxOp::attachInterface<SoftmaxVJP<SoftmaxOp, SoftmaxGradOp>>(*ctx);
    LogSoftmaxOp::attachInterface<SoftmaxVJP<LogSoftmaxOp, LogSoftmaxGradOp>>(
        *ctx);
    AttentionOp::attachInterface<AttentionVJP>(*ctx);
    DropoutOp::attachInterface<DropoutVJP>(*ctx);
    AddOp::attachInterface<AddVJP>(*ctx);
    SubOp::attachInterface<SubVJP>(*ctx);
    MulOp::attachInterface<MulVJP>(*ctx);
    DivOp::attachInterface<DivVJP>(*ctx);
    CompareOp::attachInterface<CompareVJP>(*ctx);
    SelectOp::attachInterface<SelectVJP>(*ctx);
    ReshapeOp::attachInterface<ReshapeVJP>(*ctx);
    TransposeOp::attachInterface<TransposeVJP>(*ctx);
    SplitOp::attachInterface<SplitVJP>(*ctx);
    ConcatOp::attachInterface<ConcatVJP>(*ctx);
    CastOp::attachInterface<CastVJP>(*ctx);
    GradScaleOp::attachInterface<GradScaleVJP>(*ctx);
    ReduceSumOp::attachInterface<ReduceSumVJP>(*ctx);
    ReduceMeanOp::attachInterface<ReduceMeanVJP>(*ctx);
    CrossEntropyOp::attachInterface<CrossEntropyVJP>(*ctx);
    LinearCrossEntropyOp::attachInterface<LinearCrossEntropyVJP>(*ctx);
    MSELossOp::attachInterface<MSELossVJP>(*ctx);
    MoERouteOp::attachInterface<MoERouteVJP>(*ctx);
    MoEGateOp::attachInterface<MoEGateVJP>(*ctx);
    MoEDispatchOp::attachInterface<MoEDispatchVJP>(*ctx);
    MoEGatherOp::attachInterface<MoEGatherVJP>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, dist::DistDialect *) {
    dist::AllToAllOp::attachInterface<AllToAllVJP>(*ctx);
    dist::AllReduceOp::attachInterface<AllReduceVJP>(*ctx);
    dist::CopyToGroupOp::attachInterface<CopyToGroupVJP>(*ctx);
    dist::AllGatherOp::attachInterface<AllGatherVJP>(*ctx);
    dist::ReduceScatterOp::attachInterface<ReduceScatterVJP>(*ctx);
  });
}
