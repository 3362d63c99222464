//===- ElementwiseInPlace.cpp - The ds-elementwise-in-place pass ----------===//
//
// An elementwise op starts from a `tensor.empty`, so bufferization gives it
// a fresh buffer even when one of its inputs has the same shape and dies
// there. At the end of a tied model's backward the embedding's and the LM
// head's gradients are summed: three vocabulary-sized buffers at once,
// where two suffice. Writing such an op into its dying input lets one-shot
// bufferization reuse that input's buffer; where the analysis finds the
// buffer still read (through an alias), it copies, as it would have
// allocated anyway. The input and the init indexed alike (the identity)
// in parallel loops means each element is read before it is written at
// the same place, so the arithmetic is unchanged.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"
#include "ds/Support/DiesAt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::ds {
#define GEN_PASS_DEF_ELEMENTWISEINPLACE
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// The input of `op` that can become its init `init`: of the init's type,
/// read where the init is written (both maps the identity), made by an op
/// (not a block argument: a caller's buffer or a loop's carried value; not
/// a constant), and read by nothing after `op`.
Value dyingInput(linalg::GenericOp op, OpOperand &init) {
  if (!op.getMatchingIndexingMap(&init).isIdentity())
    return {};
  for (OpOperand *in : op.getDpsInputOperands()) {
    Value v = in->get();
    if (v.getType() == init.get().getType() &&
        op.getMatchingIndexingMap(in).isIdentity() && v.getDefiningOp() &&
        !v.getDefiningOp<arith::ConstantOp>() &&
        mlir::ds::diesAt(v, op))
      return v;
  }
  return {};
}

struct ElementwiseInPlacePass
    : ds::impl::ElementwiseInPlaceBase<ElementwiseInPlacePass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics() ||
          op.getNumParallelLoops() != op.getNumLoops())
        return;
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (!init.get().getDefiningOp<tensor::EmptyOp>() ||
            op.payloadUsesValueFromOperand(&init))
          continue;
        // An input one init took is read twice here: no other init takes it.
        if (Value in = dyingInput(op, init)) {
          init.set(in);
          ++numInPlace;
        }
      }
    });
  }
};

} // namespace
