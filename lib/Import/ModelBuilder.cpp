//===- ModelBuilder.cpp - Build a model-contract @forward -----------------===//
#include "ModelBuilder.h"

#include "ds/Import/Import.h"
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::importer;

llvm::Error importer::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

ArrayRef<int64_t> importer::shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

void importer::registerImportDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
}

ModelBuilder::ModelBuilder(MLIRContext &context, Location loc)
    : b(&context), currentLoc(loc) {
  context.loadDialect<nn::NNDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  fn = func::FuncOp::create(b, loc, "forward", b.getFunctionType({}, {}));
  entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
}

RankedTensorType ModelBuilder::tensorType(ArrayRef<int64_t> shape,
                                          Type elementType) {
  return RankedTensorType::get(shape, elementType ? elementType : f32());
}

Value ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                          nn::InitKind init, double stdOrBound, StringRef tied,
                          std::optional<int64_t> expert, Type elementType) {
  if (Value existing = params.lookup(name))
    return existing;
  StringAttr tiedAttr = tied.empty() ? StringAttr() : b.getStringAttr(tied);
  auto attr = nn::ParamAttr::get(context(), name, init,
                                 llvm::APFloat(stdOrBound), tiedAttr, expert);
  Value arg = entry->insertArgument(numParams++, tensorType(shape, elementType),
                                    currentLoc);
  paramAttrs.push_back(
      b.getDictionaryAttr(b.getNamedAttr(nn::kParamAttrName, attr)));
  params[name] = arg;
  return arg;
}

Value ModelBuilder::batch(StringRef name, RankedTensorType type) {
  Value arg = entry->addArgument(type, currentLoc);
  batchAttrs.push_back(b.getDictionaryAttr(
      b.getNamedAttr(kBatchAttrName, b.getStringAttr(name))));
  return arg;
}

Value ModelBuilder::linear(Value x, Value w, Value bias) {
  SmallVector<int64_t> shape(shapeOf(x));
  shape.back() = shapeOf(w)[0];
  return nn::LinearOp::create(b, currentLoc, tensorType(shape, elementOf(x)), x,
                              w, bias);
}

Value ModelBuilder::matmul(Value a, Value bm, bool transA, bool transB) {
  auto sa = shapeOf(a), sb = shapeOf(bm);
  int64_t m = transA ? sa[1] : sa[0], n = transB ? sb[0] : sb[1];
  return nn::MatmulOp::create(b, currentLoc, tensorType({m, n}, elementOf(a)),
                              a, bm, transA, transB);
}

Value ModelBuilder::batchMatmul(Value a, Value bm, bool transA, bool transB) {
  auto sa = shapeOf(a), sb = shapeOf(bm);
  size_t r = sa.size();
  SmallVector<int64_t> shape(sa.begin(), sa.end() - 2);
  shape.push_back(transA ? sa[r - 1] : sa[r - 2]);
  shape.push_back(transB ? sb[r - 2] : sb[r - 1]);
  return nn::BatchMatmulOp::create(
      b, currentLoc, tensorType(shape, elementOf(a)), a, bm, transA, transB);
}

Value ModelBuilder::embedding(Value ids, Value table) {
  SmallVector<int64_t> shape(shapeOf(ids));
  shape.push_back(shapeOf(table)[1]);
  return nn::EmbeddingOp::create(
      b, currentLoc, tensorType(shape, elementOf(table)), ids, table,
      /*offset=*/Value());
}

Value ModelBuilder::layerNorm(Value x, Value w, Value bias, double eps) {
  return nn::LayerNormOp::create(b, currentLoc, x, w, bias, eps);
}

Value ModelBuilder::rmsNorm(Value x, Value w, double eps) {
  return nn::RMSNormOp::create(b, currentLoc, x.getType(), x, w,
                               b.getF64FloatAttr(eps));
}

Value ModelBuilder::gelu(Value x, nn::GeluApproximation approximate) {
  return nn::GeluOp::create(b, currentLoc, x.getType(), x, approximate);
}
Value ModelBuilder::relu(Value x) {
  return nn::ReluOp::create(b, currentLoc, x.getType(), x);
}
Value ModelBuilder::silu(Value x) {
  return nn::SiluOp::create(b, currentLoc, x.getType(), x);
}
Value ModelBuilder::tanh(Value x) {
  return nn::TanhOp::create(b, currentLoc, x.getType(), x);
}
Value ModelBuilder::exp(Value x) {
  return nn::ExpOp::create(b, currentLoc, x.getType(), x);
}
Value ModelBuilder::neg(Value x) {
  return nn::NegOp::create(b, currentLoc, x.getType(), x);
}
Value ModelBuilder::rsqrt(Value x) {
  return nn::RsqrtOp::create(b, currentLoc, x.getType(), x);
}

Value ModelBuilder::softmax(Value x, int64_t dim) {
  return nn::SoftmaxOp::create(b, currentLoc, x.getType(), x,
                               b.getI64IntegerAttr(dim));
}

Value ModelBuilder::logSoftmax(Value x, int64_t dim) {
  return nn::LogSoftmaxOp::create(b, currentLoc, x.getType(), x,
                                  b.getI64IntegerAttr(dim));
}

Value ModelBuilder::attention(Value q, Value k, Value v, bool causal,
                              std::optional<double> scale) {
  SmallVector<int64_t> shape(shapeOf(q));
  shape.back() = shapeOf(v).back();
  FloatAttr scaleAttr = scale ? b.getF64FloatAttr(*scale) : FloatAttr();
  return nn::AttentionOp::create(b, currentLoc, tensorType(shape, elementOf(q)),
                                 q, k, v, causal, scaleAttr);
}

Value ModelBuilder::dropout(Value x, double p) {
  if (p == 0)
    return x;
  return nn::DropoutOp::create(b, currentLoc, x, p);
}

Value ModelBuilder::binary(StringRef kind, Value a, Value c) {
  auto shape = broadcastShapes(shapeOf(a), shapeOf(c));
  assert(shape && "importer built a non-broadcastable elementwise op");
  Type type = tensorType(*shape, elementOf(a));
  if (kind == "add")
    return nn::AddOp::create(b, currentLoc, type, a, c);
  if (kind == "sub")
    return nn::SubOp::create(b, currentLoc, type, a, c);
  if (kind == "mul")
    return nn::MulOp::create(b, currentLoc, type, a, c);
  return nn::DivOp::create(b, currentLoc, type, a, c);
}

Value ModelBuilder::add(Value a, Value c) { return binary("add", a, c); }
Value ModelBuilder::sub(Value a, Value c) { return binary("sub", a, c); }
Value ModelBuilder::mul(Value a, Value c) { return binary("mul", a, c); }
Value ModelBuilder::div(Value a, Value c) { return binary("div", a, c); }

Value ModelBuilder::compare(nn::ComparePredicate predicate, Value a, Value c) {
  auto shape = broadcastShapes(shapeOf(a), shapeOf(c));
  assert(shape && "importer built a non-broadcastable comparison");
  return nn::CompareOp::create(b, currentLoc, tensorType(*shape, b.getI1Type()),
                               predicate, a, c);
}

Value ModelBuilder::select(Value condition, Value onTrue, Value onFalse) {
  auto values = broadcastShapes(shapeOf(onTrue), shapeOf(onFalse));
  assert(values && "importer built a non-broadcastable select");
  auto shape = broadcastShapes(shapeOf(condition), *values);
  assert(shape && "importer built a non-broadcastable select");
  return nn::SelectOp::create(b, currentLoc,
                              tensorType(*shape, elementOf(onTrue)), condition,
                              onTrue, onFalse);
}

Value ModelBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return nn::ReshapeOp::create(b, currentLoc, tensorType(shape, elementOf(x)),
                               x);
}

Value ModelBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  bool identity = true;
  SmallVector<int64_t> shape;
  for (auto [i, p] : llvm::enumerate(perm)) {
    identity &= static_cast<int64_t>(i) == p;
    shape.push_back(shapeOf(x)[p]);
  }
  if (identity)
    return x;
  return nn::TransposeOp::create(b, currentLoc, tensorType(shape, elementOf(x)),
                                 x, b.getDenseI64ArrayAttr(perm));
}

Value ModelBuilder::expand(Value x, ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> have = shapeOf(x);
  if (have == shape)
    return x;
  // Adding zeros expands, and the add's VJP sums back. The zeros leave out
  // the leading dims `x` already has, so they need not know the batch size.
  size_t lead = 0;
  if (have.size() == shape.size())
    while (have[lead] == shape[lead])
      ++lead;
  auto type = tensorType(shape.drop_front(lead), elementOf(x));
  Value zeros = constant(
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
  return add(x, zeros);
}

SmallVector<Value> ModelBuilder::split(Value x, int64_t dim,
                                       ArrayRef<int64_t> sizes) {
  SmallVector<Type> types;
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(shapeOf(x));
    shape[dim] = size;
    types.push_back(tensorType(shape, elementOf(x)));
  }
  auto op =
      nn::SplitOp::create(b, currentLoc, types, x, b.getI64IntegerAttr(dim));
  return SmallVector<Value>(op.getResults());
}

Value ModelBuilder::concat(ArrayRef<Value> xs, int64_t dim) {
  SmallVector<int64_t> shape(shapeOf(xs.front()));
  shape[dim] = 0;
  for (Value x : xs)
    shape[dim] += shapeOf(x)[dim];
  return nn::ConcatOp::create(b, currentLoc,
                              tensorType(shape, elementOf(xs.front())), xs,
                              b.getI64IntegerAttr(dim));
}

Value ModelBuilder::cast(Value x, Type elementType) {
  if (elementOf(x) == elementType)
    return x;
  return nn::CastOp::create(b, currentLoc, tensorType(shapeOf(x), elementType),
                            x);
}

template <typename OpT>
static Value reduce(ModelBuilder &mb, Value x, ArrayRef<int64_t> dims,
                    bool keepDims) {
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(shapeOf(x))) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      shape.push_back(size);
    else if (keepDims)
      shape.push_back(1);
  }
  OpBuilder &b = mb.builder();
  return OpT::create(b, mb.loc(), mb.tensorType(shape, elementOf(x)), x,
                     b.getDenseI64ArrayAttr(dims),
                     keepDims ? b.getUnitAttr() : UnitAttr());
}

Value ModelBuilder::reduceSum(Value x, ArrayRef<int64_t> dims, bool keepDims) {
  return reduce<nn::ReduceSumOp>(*this, x, dims, keepDims);
}

Value ModelBuilder::reduceMean(Value x, ArrayRef<int64_t> dims, bool keepDims) {
  return reduce<nn::ReduceMeanOp>(*this, x, dims, keepDims);
}

Value ModelBuilder::crossEntropy(Value logits, Value targets,
                                 int64_t ignoreIndex) {
  return nn::CrossEntropyOp::create(
      b, currentLoc, tensorType({}, elementOf(logits)), logits, targets,
      /*max=*/Value(),
      /*sum_exp=*/Value(), /*picked=*/Value(),
      /*offset=*/Value(), b.getI64IntegerAttr(ignoreIndex));
}

Value ModelBuilder::mseLoss(Value x, Value target) {
  return nn::MSELossOp::create(b, currentLoc, tensorType({}, elementOf(x)), x,
                               target);
}

Value ModelBuilder::constant(DenseElementsAttr value) {
  return arith::ConstantOp::create(b, currentLoc, value);
}

Value ModelBuilder::scalarConstant(double value, Type elementType) {
  auto type = tensorType({}, elementType ? elementType : f32());
  return constant(DenseElementsAttr::get(
      type, FloatAttr::get(type.getElementType(), value)));
}

SmallVector<Value>
ModelBuilder::layer(StringRef name, StringRef type,
                    function_ref<SmallVector<Value>()> body) {
  auto block = std::make_unique<Block>();
  SmallVector<Value> results;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(block.get());
    results = body();
    nn::YieldOp::create(b, currentLoc, results);
  }
  auto op = nn::LayerOp::create(b, currentLoc, ValueRange(results).getTypes(),
                                name, type);
  op.getBody().push_back(block.release());
  return SmallVector<Value>(op.getResults());
}

llvm::Expected<OwningOpRef<ModuleOp>>
ModelBuilder::finish(Value loss, ArrayRef<NamedAttribute> moduleAttrs) {
  func::ReturnOp::create(b, currentLoc, loss);
  fn.setFunctionType(
      b.getFunctionType(entry->getArgumentTypes(), {loss.getType()}));
  SmallVector<Attribute> argAttrs(paramAttrs.begin(), paramAttrs.end());
  argAttrs.append(batchAttrs.begin(), batchAttrs.end());
  fn.setAllArgAttrs(argAttrs);
  for (NamedAttribute attr : moduleAttrs)
    (*module)->setAttr(attr.getName(), attr.getValue());

  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(context(), [&](Diagnostic &diag) {
    os << "\n  " << diag;
    return success();
  });
  bool ok = succeeded(verify(*module));
  if (ok) {
    PassManager pm(context());
    pm.addPass(createVerifyModelContract());
    ok = succeeded(pm.run(*module));
  }
  if (!ok)
    return makeError("internal error: the imported model is not a valid "
                     "model contract (please report this):" +
                     diagnostics);
  return std::move(module);
}
