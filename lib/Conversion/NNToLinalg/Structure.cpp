//===- Structure.cpp - layer, dropout -------------------------------------===//
//
// A dsnn.layer only names a block for partitioning and checkpointing; once
// lowering starts those passes are done, so its body is inlined. Dropout
// with a key draws its mask from that
// counter: the mask is a counter-based hash of (seed, stream, key, element
// index), computed inside the generic, never stored (docs/models.md). A
// dropout without a key is evaluation mode, the identity.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

struct InlineLayer : OpRewritePattern<nn::LayerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LayerOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    auto yield = cast<nn::YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&body, op);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// SplitMix64's output mixer.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Value i64(OpBuilder &b, Location loc, uint64_t v) {
  return arith::ConstantIntOp::create(b, loc, static_cast<int64_t>(v), 64);
}

/// The same mixer on an i64 value.
Value mix(OpBuilder &b, Location loc, Value z) {
  auto step = [&](Value v, int64_t shift, uint64_t mul) {
    Value s = arith::ShRUIOp::create(b, loc, v, i64(b, loc, shift));
    Value x = arith::XOrIOp::create(b, loc, v, s);
    return mul ? arith::MulIOp::create(b, loc, x, i64(b, loc, mul)).getResult()
               : x;
  };
  return step(
      step(step(z, 30, 0xbf58476d1ce4e5b9ULL), 27, 0x94d049bb133111ebULL), 31,
      0);
}

struct DropoutLowering : OpRewritePattern<nn::DropoutOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::DropoutOp op,
                                PatternRewriter &rewriter) const override {
    // Without a key the op is evaluation-mode dropout (torch's model.eval()):
    // the identity. ds-autodiff keys every dropout it trains through.
    double p = op.getP().convertToDouble();
    if (p == 0 || !op.getKey()) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
    // base = mix(mix(mix(seed) ^ stream) ^ key): the first two at compile time.
    uint64_t opKey = mix(mix(static_cast<uint64_t>(op.getSeed())) ^
                         static_cast<uint64_t>(op.getStream()));
    Value key =
        tensor::ExtractOp::create(rewriter, loc, op.getKey(), ValueRange{});
    Value base = mix(
        rewriter, loc,
        arith::XOrIOp::create(rewriter, loc, key, i64(rewriter, loc, opKey)));
    // Kept iff u >= floor(p · 2^64), unsigned: P(kept) = 1 - p.
    double scaled = std::ldexp(p, 64);
    uint64_t threshold =
        scaled >= 0x1p64 ? ~0ULL : static_cast<uint64_t>(scaled);
    Type ct = getComputeType(type.getElementType());
    double scale = 1.0 / (1.0 - p);
    ArrayRef<int64_t> shape = type.getShape();
    Value y = buildElementwise(
        rewriter, loc, type, op.getInput(),
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          // Row-major element index.
          Value index = i64(b, l, 0);
          for (auto [d, size] : llvm::enumerate(shape)) {
            Value id = arith::IndexCastOp::create(
                b, l, b.getI64Type(), linalg::IndexOp::create(b, l, d));
            index = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, index, i64(b, l, size)), id);
          }
          Value counter = arith::MulIOp::create(
              b, l, arith::AddIOp::create(b, l, index, i64(b, l, 1)),
              i64(b, l, kGamma));
          Value u = mix(b, l, arith::AddIOp::create(b, l, base, counter));
          Value kept = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, u,
                                             i64(b, l, threshold));
          Value scaledX =
              arith::MulFOp::create(b, l, a[0], floatConst(b, l, ct, scale));
          return {arith::SelectOp::create(b, l, kept, scaledX,
                                          floatConst(b, l, ct, 0.0))};
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateStructurePatterns(
    RewritePatternSet &patterns) {
  patterns.add<InlineLayer, DropoutLowering>(patterns.getContext());
}
