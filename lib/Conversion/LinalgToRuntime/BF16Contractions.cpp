//===- BF16Contractions.cpp - The ds-bf16-contractions pass ---------------===//
//
// The NN lowering widens a 16-bit matmul's operands to f32 and contracts the
// widened tensors: exact, and sgemm can take it. On the CPU that costs two
// f32 copies per product and keeps the product in f32 arithmetic. Reading
// the bf16 values themselves (each widened in the body, as a matrix unit
// does) lets ds-lower-to-runtime call dsrt_gemm_bf16, which runs on the
// CPU's bf16 dot-product instructions where it has them and on sgemm over
// widened operands where not: the widening moves from the step into the
// runtime, which knows the CPU.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_BF16CONTRACTIONS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// The bf16 tensor `v` widens, when `v` is an elementwise linalg.generic
/// doing nothing but `arith.extf` bf16 -> f32 over the whole tensor.
Value widenedFrom(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return {};
  auto ext = dyn_cast<arith::ExtFOp>(body.front());
  if (!ext || ext.getIn() != body.getArgument(0) ||
      !ext.getIn().getType().isBF16() || !ext.getType().isF32() ||
      body.getTerminator()->getOperand(0) != ext.getResult())
    return {};
  return generic.getDpsInputOperand(0)->get();
}

struct BF16ContractionsPass
    : ds::impl::BF16ContractionsBase<BF16ContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInputs() == 2 &&
          op.getNumDpsInits() == 1 &&
          getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType())
              .isF32() &&
          linalg::isaContractionOpInterface(op) &&
          widenedFrom(op.getDpsInputOperand(0)->get()) &&
          widenedFrom(op.getDpsInputOperand(1)->get()))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> named =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(named))
          continue;
        generic = *named;
      }
      // Each operand is now the bf16 tensor, widened in the body: the same
      // products and sums as before.
      Block &body = generic.getRegion().front();
      rewriter.setInsertionPointToStart(&body);
      for (unsigned i = 0; i < 2; ++i) {
        OpOperand *in = generic.getDpsInputOperand(i);
        in->set(widenedFrom(in->get()));
        BlockArgument arg = body.getArgument(i);
        arg.setType(rewriter.getBF16Type());
        auto ext = arith::ExtFOp::create(rewriter, generic.getLoc(),
                                         rewriter.getF32Type(), arg);
        rewriter.replaceAllUsesExcept(arg, ext.getResult(), ext);
      }
      ++numContractions;
    }
  }
};

} // namespace
