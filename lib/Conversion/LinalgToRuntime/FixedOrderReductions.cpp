//===- FixedOrderReductions.cpp - sums in a target-independent order ------===//
//
// Runs on the loops convert-linalg-to-loops and ds-promote-accumulators
// leave: a reduction is an innermost scf.for carrying its accumulators in
// iter_args. Splitting it into a fixed number of lanes in the IR gives
// LLVM an elementwise loop over the lanes to vectorize, without the
// `reassoc` flag that would let it pick the association per target.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::ds {
#define GEN_PASS_DEF_FIXEDORDERREDUCTIONS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// Body ops beyond which a loop is left alone: the lane loop holds a copy
/// of the body, and a long body is compute-bound anyway.
constexpr unsigned kMaxBodyOps = 256;

/// The op combining iter_arg `i` into the value yielded at `i`, if that is
/// its only use and it is an addf or mulf.
Operation *combinerOf(scf::ForOp loop, unsigned i) {
  BlockArgument acc = loop.getRegionIterArgs()[i];
  if (!acc.hasOneUse())
    return nullptr;
  Operation *user = *acc.getUsers().begin();
  // Scalars only: the lanes are a buffer of the accumulator's type.
  if (!isa<arith::AddFOp, arith::MulFOp>(user) ||
      !isa<FloatType>(user->getResult(0).getType()) ||
      user->getBlock() != loop.getBody())
    return nullptr;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(i) != user->getResult(0) ||
      !user->getResult(0).hasOneUse())
    return nullptr;
  return user;
}

/// The value that leaves every other operand of `combiner` unchanged:
/// -0.0 for a sum (x + -0.0 == x for every x, +0.0 included), 1.0 for a
/// product.
Value identityOf(OpBuilder &b, Location loc, Operation *combiner) {
  auto type = cast<FloatType>(combiner->getResult(0).getType());
  llvm::APFloat value = isa<arith::AddFOp>(combiner)
                            ? llvm::APFloat::getZero(type.getFloatSemantics(),
                                                     /*Negative=*/true)
                            : llvm::APFloat::getOne(type.getFloatSemantics());
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

/// `combiner`'s op applied to (lhs, rhs), with its flags.
Value combine(OpBuilder &b, Location loc, Operation *combiner, Value lhs,
              Value rhs) {
  Operation *op = b.clone(*combiner);
  op->setOperands({lhs, rhs});
  return op->getResult(0);
}

struct FixedOrderReductionsPass
    : public ds::impl::FixedOrderReductionsBase<FixedOrderReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxLanes < 2 || maxLanes > 64 || !llvm::isPowerOf2_32(maxLanes)) {
      getOperation().emitError() << "ds-fixed-order-reductions: lanes is "
                                 << static_cast<unsigned>(maxLanes)
                                 << " but must be a power of two from 2 to 64";
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      if (split(loop))
        ++numSplit;
  }

  /// The lanes for a loop of `trips` iterations: at least two full rounds.
  unsigned lanesFor(int64_t trips) const {
    for (unsigned lanes = maxLanes; lanes >= 8; lanes /= 2)
      if (trips >= 2 * static_cast<int64_t>(lanes))
        return lanes;
    return 0;
  }

  bool split(scf::ForOp loop) {
    if (loop.getNumRegionIterArgs() == 0)
      return false;
    auto lb = getConstantIntValue(loop.getLowerBound());
    auto ub = getConstantIntValue(loop.getUpperBound());
    auto step = getConstantIntValue(loop.getStep());
    if (!lb || !ub || step != 1 || !loop.getInductionVar().getType().isIndex())
      return false;
    Block *body = loop.getBody();
    unsigned numOps = 0;
    bool nested = false;
    for (Operation &op : body->without_terminator()) {
      ++numOps;
      nested |= op.getNumRegions() > 0;
    }
    if (nested || numOps > kMaxBodyOps)
      return false;
    SmallVector<Operation *> combiners;
    for (unsigned i = 0, e = loop.getNumRegionIterArgs(); i < e; ++i) {
      Operation *c = combinerOf(loop, i);
      if (!c)
        return false;
      combiners.push_back(c);
    }
    unsigned lanes = lanesFor(*ub - *lb);
    if (!lanes)
      return false;
    int64_t mainEnd = *lb + (*ub - *lb) / lanes * lanes;

    OpBuilder b(loop);
    Location loc = loop.getLoc();
    unsigned numAcc = combiners.size();
    // Each accumulator's lanes live in a small stack buffer allocated once
    // per function: the loop over the lanes is then a plain elementwise
    // loop the loop vectorizer takes at any width.
    auto fn = loop->getParentOfType<FunctionOpInterface>();
    OpBuilder entry(&fn.getFunctionBody().front(),
                    fn.getFunctionBody().front().begin());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value numLanes = arith::ConstantIndexOp::create(b, loc, lanes);
    SmallVector<Value> buffers;
    for (Operation *c : combiners) {
      auto type = MemRefType::get({lanes}, c->getResult(0).getType());
      Value buffer = memref::AllocaOp::create(entry, loc, type);
      Value identity = identityOf(b, loc, c);
      scf::ForOp::create(b, loc, zero, numLanes, one, ValueRange{},
                         [&](OpBuilder &fb, Location l, Value k, ValueRange) {
                           memref::StoreOp::create(fb, l, identity, buffer, k);
                           scf::YieldOp::create(fb, l);
                         });
      buffers.push_back(buffer);
    }
    auto laneStep = [&](OpBuilder &kb, Location l, Value base, Value k) {
      IRMapping map;
      map.map(loop.getInductionVar(), arith::AddIOp::create(kb, l, base, k));
      for (auto [arg, buffer] : llvm::zip(loop.getRegionIterArgs(), buffers))
        map.map(arg, memref::LoadOp::create(kb, l, buffer, k));
      for (Operation &op : body->without_terminator())
        kb.clone(op, map);
      for (auto [v, buffer] :
           llvm::zip(body->getTerminator()->getOperands(), buffers))
        memref::StoreOp::create(kb, l, map.lookupOrDefault(v), buffer, k);
    };
    scf::ForOp::create(
        b, loc, loop.getLowerBound(),
        arith::ConstantIndexOp::create(b, loc, mainEnd), numLanes, ValueRange{},
        [&](OpBuilder &jb, Location l, Value base, ValueRange) {
          scf::ForOp::create(
              jb, l, zero, numLanes, one, ValueRange{},
              [&](OpBuilder &kb, Location kl, Value k, ValueRange) {
                laneStep(kb, kl, base, k);
                scf::YieldOp::create(kb, kl);
              });
          scf::YieldOp::create(jb, l);
        });

    // The lanes by a halving tree, then the initial value, then the rest
    // of the iterations in the original loop.
    SmallVector<Value> starts;
    for (unsigned r = 0; r < numAcc; ++r) {
      SmallVector<Value> vals;
      for (unsigned k = 0; k < lanes; ++k)
        vals.push_back(memref::LoadOp::create(
            b, loc, buffers[r],
            ValueRange{arith::ConstantIndexOp::create(b, loc, k)}));
      for (unsigned half = lanes / 2; half >= 1; half /= 2)
        for (unsigned k = 0; k < half; ++k)
          vals[k] = combine(b, loc, combiners[r], vals[k], vals[k + half]);
      starts.push_back(
          combine(b, loc, combiners[r], vals[0], loop.getInitArgs()[r]));
    }
    loop.getLowerBoundMutable().assign(
        arith::ConstantIndexOp::create(b, loc, mainEnd));
    loop.getInitArgsMutable().assign(starts);
    return true;
  }
};

} // namespace
