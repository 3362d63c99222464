//===- MoEExpand.cpp - dsnn.moe spelled out as its routing
//-----------------===//
//
// A dsnn.moe is one op so that the model contract reads like the model and
// expert parallelism finds its experts; training and lowering need its
// routing explicit: the gradient flows through the combine weights into the
// gate and through the experts, never through the (piecewise constant)
// choice of experts. MoEOp::expand is that one rewrite, shared by ds-autodiff
// and ds-lower-nn-to-linalg.
//
//===----------------------------------------------------------------------===//
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ds::nn;

static RankedTensorType typeOf(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

void MoEOp::expand(RewriterBase &rewriter,
                   function_ref<Value(Value)> runExperts) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(*this);
  Location loc = getLoc();
  auto inType = getInput().getType();
  Type et = inType.getElementType();
  int64_t c = inType.getShape().back();
  int64_t n = 1;
  for (int64_t d : inType.getShape().drop_back())
    n *= d;
  int64_t e = getNumExpertsAttr().getInt(), k = getKAttr().getInt();
  int64_t capacity = getCapacity();
  auto reduceSum = [&](Value v, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> dims) -> Value {
    return ReduceSumOp::create(rewriter, loc, typeOf(shape, et), v, dims);
  };
  auto mul = [&](Value a, Value b, ArrayRef<int64_t> shape) -> Value {
    return MulOp::create(rewriter, loc, typeOf(shape, et), a, b);
  };

  // Gate: softmax(x · Wgᵀ) over the experts, for the N tokens.
  Value x = ReshapeOp::create(rewriter, loc, typeOf({n, c}, et), getInput());
  Value logits = LinearOp::create(rewriter, loc, typeOf({n, e}, et), x,
                                  getGateWeight(), Value());
  Value probs = SoftmaxOp::create(rewriter, loc, logits.getType(), logits, 1);
  auto i64 = typeOf({n, k}, rewriter.getI64Type());
  auto route = MoERouteOp::create(rewriter, loc, i64, i64, typeOf({e}, et),
                                  probs, k, capacity);
  Value experts = route.getExperts(), slots = route.getSlots();
  Value weights = MoEGateOp::create(rewriter, loc, typeOf({n, k}, et), probs,
                                    experts, slots, /*normalize=*/k > 1);

  // Dispatch, the experts (the region, inlined), gather.
  Block &body = getExperts().front();
  auto tokensType = cast<RankedTensorType>(body.getArgument(0).getType());
  Value dispatched =
      MoEDispatchOp::create(rewriter, loc, tokensType, x, experts, slots);
  Value expertOut;
  if (runExperts) {
    expertOut = runExperts(dispatched);
  } else {
    SmallVector<Value> regionArgs = {dispatched};
    llvm::append_range(regionArgs, getExpertParams());
    auto yield = cast<YieldOp>(body.getTerminator());
    expertOut = yield.getValues().front();
    rewriter.inlineBlockBefore(&body, *this, regionArgs);
    rewriter.eraseOp(yield);
  }
  Value gathered = MoEGatherOp::create(rewriter, loc, typeOf({n, k, c}, et),
                                       expertOut, experts, slots);

  // Combine: Σ_j weight[n, j] · expert output of choice j.
  Value w3 = ReshapeOp::create(rewriter, loc, typeOf({n, k, 1}, et), weights);
  Value combined = reduceSum(mul(gathered, w3, {n, k, c}), {n, c}, {1});
  Value y = ReshapeOp::create(rewriter, loc, inType, combined);

  // Aux loss: E · Σ_e mean_n(probs[n, e]) · load[e].
  Value meanProb = ReduceMeanOp::create(rewriter, loc, typeOf({e}, et), probs,
                                        ArrayRef<int64_t>{0});
  Value dot = reduceSum(mul(meanProb, route.getLoad(), {e}), {}, {0});
  auto scalar = typeOf({}, et);
  Value numExperts = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(scalar, ArrayRef<Attribute>{rewriter.getFloatAttr(
                                         et, static_cast<double>(e))}));
  Value aux = mul(dot, numExperts, {});
  rewriter.replaceOp(*this, {y, aux});
}
