//===- Optimizers.cpp - adam, lamb and sgd --------------------------------===//
//
// An optimizer update is memory-bound: it reads and writes every parameter
// and state element once, so each op is one linalg.generic that reads the
// gradient and has the parameter and state tensors as its `outs`. Reading
// them through the outs block arguments (instead of as separate inputs into
// tensor.empty) lets one-shot bufferization update them in place. What
// depends only on the step and the rate is computed once, outside, in f64
// as DeepSpeed's host code does, and captured by the body.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "../NNToLinalg/Utils.h"

#include "ds/Conversion/TrainToLinalg.h"
#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;
using namespace mlir::ds::traintolinalg;

namespace {

/// Small arithmetic vocabulary over one builder, so the update bodies read
/// like the formulas in the op descriptions.
struct Arith {
  OpBuilder &b;
  Location loc;

  Value cst(Type t, double v) { return floatConst(b, loc, t, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value mul(Value x, double c) { return mul(x, cst(x.getType(), c)); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value f32(Value x) { return convertScalar(b, loc, x, b.getF32Type()); }
  Value f64(Value x) { return convertScalar(b, loc, x, b.getF64Type()); }
};

/// The moments of Adam and Lamb after one step:
/// m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g².
std::pair<Value, Value> updateMoments(Arith &a, Value g, Value m, Value v,
                                      double beta1, double beta2) {
  Value m1 = a.add(a.mul(m, beta1), a.mul(g, 1.0 - beta1));
  Value v1 = a.add(a.mul(v, beta2), a.mul(a.mul(g, g), 1.0 - beta2));
  return {m1, v1};
}

/// 1 - beta^t, in f64.
Value biasCorrection(Arith &a, double beta, Value t) {
  return a.sub(a.cst(t.getType(), 1.0), powConst(a.b, a.loc, beta, t));
}

/// An update lowering that leaves what the runtime kernels serve when asked
/// to (ds-lower-train-to-linalg{optimizer-kernels}).
template <typename OpTy> struct OptimizerPattern : OpRewritePattern<OpTy> {
  OptimizerPattern(MLIRContext *ctx, bool skipKernelOps)
      : OpRewritePattern<OpTy>(ctx), skipKernelOps(skipKernelOps) {}
  bool skipKernelOps;
};

struct AdamLowering : OptimizerPattern<train::AdamOp> {
  using OptimizerPattern::OptimizerPattern;

  LogicalResult matchAndRewrite(train::AdamOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    if (op.getSkip())
      return rewriter.notifyMatchFailure(op, "skip not yet an scf.if");
    if (skipKernelOps && isServedByOptimizerKernels(op))
      return rewriter.notifyMatchFailure(op, "left for the runtime kernels");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Arith a{rewriter, loc};
    double beta1 = op.getBeta1().convertToDouble(),
           beta2 = op.getBeta2().convertToDouble(),
           eps = op.getEps().convertToDouble(),
           wd = op.getWeightDecay().convertToDouble();
    bool adamW = op.getAdamWMode();

    // p -= lr / bc1 · m / (sqrt(v) / sqrt(bc2) + eps), DeepSpeed's CPU Adam
    // with the reciprocal of sqrt(bc2) hoisted out of the loop.
    Value lr = a.f64(extractScalar(rewriter, loc, op.getLr()));
    Value stepSize = lr;
    Value invSqrtBc2 = a.cst(rewriter.getF64Type(), 1.0);
    if (op.getBiasCorrection()) {
      Value t = stepAsF64(rewriter, loc, op.getStep());
      stepSize = a.div(lr, biasCorrection(a, beta1, t));
      invSqrtBc2 = a.div(invSqrtBc2, a.sqrt(biasCorrection(a, beta2, t)));
    }
    Value negStepSize = a.f32(arith::NegFOp::create(rewriter, loc, stepSize));
    Value invSqrtBc2F = a.f32(invSqrtBc2);
    // AdamW: p *= 1 - lr · weight_decay before the Adam step.
    Value decay;
    if (adamW && wd != 0)
      decay = a.f32(a.sub(a.cst(lr.getType(), 1.0), a.mul(lr, wd)));

    unsigned rank = tensorType(op.getParam()).getRank();
    AffineMap id = identityMap(ctx, rank);
    SmallVector<Value> results = buildGeneric(
        rewriter, loc, tensorType(op.getParam()).getShape(), op.getGrad(), id,
        ValueRange{op.getParam(), op.getExpAvg(), op.getExpAvgSq()},
        {id, id, id}, {},
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          Arith e{b, loc};
          Value g = args[0], p = args[1];
          if (!adamW && wd != 0)
            g = e.add(g, e.mul(p, wd)); // L2: the decay joins the gradient
          auto [m, v] = updateMoments(e, g, args[2], args[3], beta1, beta2);
          Value denom =
              e.add(e.mul(e.sqrt(v), invSqrtBc2F), e.cst(v.getType(), eps));
          if (decay)
            p = e.mul(p, decay);
          p = e.add(p, e.mul(negStepSize, e.div(m, denom)));
          return {p, m, v};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LambLowering : OptimizerPattern<train::LambOp> {
  using OptimizerPattern::OptimizerPattern;

  LogicalResult matchAndRewrite(train::LambOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    if (op.getSkip())
      return rewriter.notifyMatchFailure(op, "skip not yet an scf.if");
    if (skipKernelOps && isServedByOptimizerKernels(op))
      return rewriter.notifyMatchFailure(op, "left for the runtime kernels");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Arith a{rewriter, loc};
    Type f32 = rewriter.getF32Type();
    double beta1 = op.getBeta1().convertToDouble(),
           beta2 = op.getBeta2().convertToDouble(),
           eps = op.getEps().convertToDouble(),
           wd = op.getWeightDecay().convertToDouble();

    // DeepSpeed's FusedLamb: the update u = m / (sqrt(v) + eps) + wd p uses
    // the uncorrected moments; the bias correction is a step size applied
    // outside the trust ratio.
    auto update = [=](Arith &e, ValueRange gpmv) {
      auto [m, v] = updateMoments(e, gpmv[0], gpmv[2], gpmv[3], beta1, beta2);
      Value u = e.div(m, e.add(e.sqrt(v), e.cst(v.getType(), eps)));
      if (wd != 0)
        u = e.add(u, e.mul(gpmv[1], wd));
      return std::make_tuple(u, m, v);
    };

    // Pass 1: ‖p‖² and ‖u‖² from the same reads pass 2 makes, so no update
    // tensor is stored in between.
    ArrayRef<int64_t> shape = tensorType(op.getParam()).getShape();
    unsigned rank = shape.size();
    AffineMap id = identityMap(ctx, rank);
    auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    SmallVector<Value> sums = buildReduction(
        rewriter, loc, shape,
        ValueRange{op.getGrad(), op.getParam(), op.getExpAvg(),
                   op.getExpAvgSq()},
        {id, id, id, id}, all, f32, {0.0, 0.0},
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          Arith e{b, loc};
          Value u = std::get<0>(update(e, args.take_front(4)));
          Value p = args[1];
          return {e.add(args[4], e.mul(p, p)), e.add(args[5], e.mul(u, u))};
        });

    // Trust ratio ‖p‖ / ‖u‖ clamped to [min_coeff, max_coeff], 1 when either
    // norm is 0.
    Value pNorm = a.sqrt(extractScalar(rewriter, loc, sums[0]));
    Value uNorm = a.sqrt(extractScalar(rewriter, loc, sums[1]));
    Value zero = a.cst(f32, 0.0);
    Value bothNonZero = arith::AndIOp::create(
        rewriter, loc,
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNE, pNorm,
                              zero),
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNE, uNorm,
                              zero));
    Value ratio = a.div(pNorm, uNorm);
    ratio = arith::MaximumFOp::create(
        rewriter, loc, ratio, a.cst(f32, op.getMinCoeff().convertToDouble()));
    ratio = arith::MinimumFOp::create(
        rewriter, loc, ratio, a.cst(f32, op.getMaxCoeff().convertToDouble()));
    ratio = arith::SelectOp::create(rewriter, loc, bothNonZero, ratio,
                                    a.cst(f32, 1.0));

    // step_size = lr sqrt(1 - beta2^t) / (1 - beta1^t).
    Value stepSize = a.f64(extractScalar(rewriter, loc, op.getLr()));
    if (op.getBiasCorrection()) {
      Value t = stepAsF64(rewriter, loc, op.getStep());
      stepSize = a.div(a.mul(stepSize, a.sqrt(biasCorrection(a, beta2, t))),
                       biasCorrection(a, beta1, t));
    }
    Value scale =
        arith::NegFOp::create(rewriter, loc, a.mul(a.f32(stepSize), ratio));

    // Pass 2: moments and parameter, in place.
    SmallVector<Value> results = buildGeneric(
        rewriter, loc, shape, op.getGrad(), id,
        ValueRange{op.getParam(), op.getExpAvg(), op.getExpAvgSq()},
        {id, id, id}, {},
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          Arith e{b, loc};
          auto [u, m, v] = update(e, args);
          return {e.add(args[1], e.mul(scale, u)), m, v};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct SGDLowering : OptimizerPattern<train::SGDOp> {
  using OptimizerPattern::OptimizerPattern;

  LogicalResult matchAndRewrite(train::SGDOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    if (op.getSkip())
      return rewriter.notifyMatchFailure(op, "skip not yet an scf.if");
    if (skipKernelOps && isServedByOptimizerKernels(op))
      return rewriter.notifyMatchFailure(op, "left for the runtime kernels");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    double momentum = op.getMomentum().convertToDouble(),
           dampening = op.getDampening().convertToDouble(),
           wd = op.getWeightDecay().convertToDouble();
    bool nesterov = op.getNesterov();

    Value negLr = arith::NegFOp::create(
        rewriter, loc, extractScalar(rewriter, loc, op.getLr()));
    // PyTorch creates the buffer from the first gradient.
    Value first;
    if (momentum != 0) {
      Value step = extractScalar(rewriter, loc, op.getStep());
      Value one = arith::ConstantOp::create(
          rewriter, loc, rewriter.getIntegerAttr(step.getType(), 1));
      first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                    step, one);
    }

    // Without momentum the buffer is not read or written.
    SmallVector<Value> inits{op.getParam()};
    if (momentum != 0)
      inits.push_back(op.getMomentumBuffer());
    unsigned rank = tensorType(op.getParam()).getRank();
    AffineMap id = identityMap(ctx, rank);
    SmallVector<AffineMap> initMaps(inits.size(), id);
    SmallVector<Value> results = buildGeneric(
        rewriter, loc, tensorType(op.getParam()).getShape(), op.getGrad(), id,
        inits, initMaps, {},
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          Arith e{b, loc};
          Value d = args[0], p = args[1];
          if (wd != 0)
            d = e.add(d, e.mul(p, wd));
          SmallVector<Value> out;
          Value buf;
          if (momentum != 0) {
            Value damped = dampening != 0 ? e.mul(d, 1.0 - dampening) : d;
            Value later = e.add(e.mul(args[2], momentum), damped);
            buf = arith::SelectOp::create(b, loc, first, d, later);
            d = nesterov ? e.add(d, e.mul(buf, momentum)) : buf;
          }
          out.push_back(e.add(p, e.mul(d, negLr)));
          if (buf)
            out.push_back(buf);
          return out;
        });
    if (momentum == 0)
      results.push_back(op.getMomentumBuffer());
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::ds::traintolinalg::populateOptimizerPatterns(
    RewritePatternSet &patterns, bool skipKernelOps) {
  patterns.add<AdamLowering, LambLowering, SGDLowering>(patterns.getContext(),
                                                        skipKernelOps);
}
