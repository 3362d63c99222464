//===- AccumulateGrads.cpp - The micro-batch loop of a training step
//-------===//
//
// Creates @train_step around @forward_backward: one call per micro-batch,
// the loss and gradients averaged. The loop stays an scf.for (not unrolled)
// so the step's size does not grow with gradient_accumulation_steps and
// pipeline scheduling can later see one micro-batch body.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_ACCUMULATEGRADS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

Value mlir::ds::microBatchSlice(OpBuilder &b, Location loc, Value full,
                                OpFoldResult index) {
  auto type = cast<RankedTensorType>(full.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[0] = index;
  for (int64_t d : type.getShape().drop_front())
    sizes.push_back(b.getIndexAttr(d));
  auto slice = RankedTensorType::get(type.getShape().drop_front(),
                                     type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, slice, full, offsets, sizes,
                                        strides);
}

Value mlir::ds::microBatchKey(OpBuilder &b, Location loc, Value step,
                              int64_t steps, OpFoldResult index) {
  Value s = tensor::ExtractOp::create(b, loc, step, ValueRange{});
  Value n = arith::ConstantIntOp::create(b, loc, steps, 64);
  Value i = getValueOrCreateConstantIndexOp(b, loc, index);
  i = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
  Value k =
      arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, s, n), i);
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()), k);
}

SmallVector<Value> mlir::ds::microBatchMean(OpBuilder &b, Location loc,
                                            ValueRange sums, int64_t steps) {
  SmallVector<Value> means;
  DenseMap<Type, Value> inverse;
  for (Value sum : sums) {
    auto type = cast<RankedTensorType>(sum.getType());
    Value &inv = inverse[type.getElementType()];
    if (!inv)
      inv = scalarConstant(b, loc, type.getElementType(),
                           1.0 / static_cast<double>(steps));
    means.push_back(nn::MulOp::create(b, loc, type, sum, inv));
  }
  return means;
}

namespace {

struct AccumulateGradsPass
    : ds::impl::AccumulateGradsBase<AccumulateGradsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (steps < 1) {
      module.emitError() << "ds-accumulate-grads: steps is " << steps
                         << " but gradient_accumulation_steps must be >= 1";
      return signalPassFailure();
    }
    auto grad = module.lookupSymbol<func::FuncOp>(entry);
    if (!grad) {
      module.emitError() << "ds-accumulate-grads: no func.func @" << entry
                         << "; run ds-autodiff first (or pass entry=NAME)";
      return signalPassFailure();
    }
    if (module.lookupSymbol(result)) {
      grad.emitError() << "ds-accumulate-grads: @" << result
                       << " already exists";
      return signalPassFailure();
    }
    unsigned numParams = numLeadingParams(grad);
    FunctionType gradType = grad.getFunctionType();
    bool shapeOk = gradType.getNumResults() == numParams + 1;
    for (unsigned i = 0; shapeOk && i < numParams; ++i)
      shapeOk = gradType.getResult(i + 1) == gradType.getInput(i);
    if (!shapeOk) {
      grad.emitError() << "ds-accumulate-grads: @" << entry
                       << " must return (loss, one gradient per parameter "
                          "of its type), as ds-autodiff builds it";
      return signalPassFailure();
    }
    if (failed(build(module, grad, numParams)))
      return signalPassFailure();
  }

  LogicalResult build(ModuleOp module, func::FuncOp grad, unsigned numParams) {
    MLIRContext *ctx = module.getContext();
    Location loc = grad.getLoc();
    FunctionType gradType = grad.getFunctionType();

    // A model with dropout takes its masks' counter last (ds-autodiff);
    // @train_step derives it from the step, which it then takes right after
    // the parameters (where ds-optimizer keeps it).
    unsigned numInputs = gradType.getNumInputs();
    bool keyed = numInputs > numParams &&
                 grad.getArgAttr(numInputs - 1, kRngKeyAttrName);
    // Step state the forward reads (the fp16 loss scale) follows the
    // parameters and is passed to every micro-batch as is.
    unsigned numGlobal = 0;
    while (numParams + numGlobal < numInputs &&
           grad.getArgAttr(numParams + numGlobal, kStateAttrName))
      ++numGlobal;
    unsigned numBatch = numInputs - numParams - numGlobal - (keyed ? 1 : 0);

    // Batch arguments gain the leading micro-batch dim.
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    for (auto [i, type] : llvm::enumerate(gradType.getInputs())) {
      if (i >= numParams + numGlobal + numBatch)
        break;
      argAttrs.push_back(grad.getArgAttrDict(i));
      if (i < numParams + numGlobal) {
        argTypes.push_back(type);
        continue;
      }
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.hasStaticShape())
        return grad.emitError()
               << "ds-accumulate-grads: batch argument #" << i << " has type "
               << type << "; micro-batching needs statically shaped tensors";
      SmallVector<int64_t> shape = {steps};
      llvm::append_range(shape, tensor.getShape());
      argTypes.push_back(tensor.clone(shape));
    }
    SmallVector<Type> resultTypes(gradType.getResults());
    OpBuilder b(ctx);
    if (keyed) {
      argTypes.insert(argTypes.begin() + numParams + numGlobal,
                      RankedTensorType::get({}, b.getI64Type()));
      argAttrs.insert(
          argAttrs.begin() + numParams + numGlobal,
          b.getDictionaryAttr(b.getNamedAttr(kStepAttrName, b.getUnitAttr())));
    }

    b.setInsertionPointAfter(grad);
    auto step = func::FuncOp::create(
        b, loc, result, FunctionType::get(ctx, argTypes, resultTypes));
    step.setAllArgAttrs(argAttrs);
    step->setAttr(kAccumStepsAttrName, b.getI64IntegerAttr(steps));
    Block *body = step.addEntryBlock();
    b.setInsertionPointToStart(body);

    ValueRange params = body->getArguments().take_front(numParams + numGlobal);
    Value stepArg = keyed ? body->getArgument(numParams + numGlobal) : Value();
    ValueRange batch = body->getArguments().take_back(numBatch);
    auto microBatch = [&](OpBuilder &nb, Location l, OpFoldResult index) {
      SmallVector<Value> operands(params);
      for (Value full : batch)
        operands.push_back(microBatchSlice(nb, l, full, index));
      if (keyed)
        operands.push_back(microBatchKey(nb, l, stepArg, steps, index));
      return func::CallOp::create(nb, l, grad, operands);
    };

    if (steps == 1) {
      auto call = microBatch(b, loc, b.getIndexAttr(0));
      func::ReturnOp::create(b, loc, call.getResults());
      return success();
    }

    SmallVector<Value> init;
    for (Type type : resultTypes)
      init.push_back(arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(type))));
    Value lb = arith::ConstantIndexOp::create(b, loc, 0);
    Value ub = arith::ConstantIndexOp::create(b, loc, steps);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, one, init,
        [&](OpBuilder &nb, Location l, Value iv, ValueRange sums) {
          auto call = microBatch(nb, l, iv);
          SmallVector<Value> next;
          for (auto [sum, value] : llvm::zip(sums, call.getResults()))
            next.push_back(nn::AddOp::create(nb, l, sum.getType(), sum, value));
          scf::YieldOp::create(nb, l, next);
        });

    SmallVector<Value> means = microBatchMean(b, loc, loop.getResults(), steps);
    func::ReturnOp::create(b, loc, means);
    return success();
  }
};

} // namespace
