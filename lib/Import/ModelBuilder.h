//===- ModelBuilder.h - Build a model-contract @forward ---------*- C++ -*-===//
//
// Shared by the spec and TorchScript importers: appends parameters to the
// signature on first use (which keeps them in module definition order, the
// order PyTorch's named_parameters() gives), computes every dsnn op's result
// type, and checks the finished module against the contract.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_IMPORT_MODELBUILDER_H
#define DS_LIB_IMPORT_MODELBUILDER_H

#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>

namespace mlir::ds::importer {

/// An llvm::Error carrying one user-facing message.
llvm::Error makeError(const llvm::Twine &message);

class ModelBuilder {
public:
  ModelBuilder(MLIRContext &context, Location loc);

  OpBuilder &builder() { return b; }
  Location loc() const { return currentLoc; }
  void setLoc(Location loc) { currentLoc = loc; }
  MLIRContext *context() { return b.getContext(); }

  RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                              Type elementType = {});
  Type f32() { return b.getF32Type(); }
  Type i64() { return b.getI64Type(); }

  /// A parameter argument; asking twice for one name returns the same value.
  Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
              nn::InitKind init, double stdOrBound = 0,
              llvm::StringRef tied = {}, std::optional<int64_t> expert = {},
              Type elementType = {});
  /// Declares an existing parameter value under a second name (an alias of
  /// a tied tensor): later `lookupParam(alias)` returns it.
  void aliasParam(llvm::StringRef alias, Value value) { params[alias] = value; }
  Value lookupParam(llvm::StringRef name) const { return params.lookup(name); }
  /// A batch argument, after all parameters; `name` goes in `dsnn.batch`.
  Value batch(llvm::StringRef name, RankedTensorType type);

  // Ops with inferred result types.
  Value linear(Value x, Value w, Value bias = {});
  Value matmul(Value a, Value bm, bool transA = false, bool transB = false);
  Value batchMatmul(Value a, Value bm, bool transA = false,
                    bool transB = false);
  Value embedding(Value ids, Value table);
  Value layerNorm(Value x, Value w, Value bias, double eps);
  Value rmsNorm(Value x, Value w, double eps);
  Value gelu(Value x, nn::GeluApproximation approximate);
  Value relu(Value x);
  Value silu(Value x);
  Value tanh(Value x);
  Value exp(Value x);
  Value neg(Value x);
  Value rsqrt(Value x);
  Value softmax(Value x, int64_t dim);
  Value logSoftmax(Value x, int64_t dim);
  Value attention(Value q, Value k, Value v, bool causal,
                  std::optional<double> scale = {});
  /// Identity when p == 0.
  Value dropout(Value x, double p);
  Value add(Value a, Value c);
  Value sub(Value a, Value c);
  Value mul(Value a, Value c);
  Value div(Value a, Value c);
  /// An i1 mask, `a == c` or `a != c` (broadcast).
  Value compare(nn::ComparePredicate predicate, Value a, Value c);
  /// `onTrue` where `condition` is set, else `onFalse` (broadcast).
  Value select(Value condition, Value onTrue, Value onFalse);
  /// Identity when the shape is unchanged.
  Value reshape(Value x, llvm::ArrayRef<int64_t> shape);
  /// Identity for the identity permutation.
  Value transpose(Value x, llvm::ArrayRef<int64_t> perm);
  /// `x` broadcast to `shape` (identity when it has it), as torch's expand.
  Value expand(Value x, llvm::ArrayRef<int64_t> shape);
  llvm::SmallVector<Value> split(Value x, int64_t dim,
                                 llvm::ArrayRef<int64_t> sizes);
  Value concat(llvm::ArrayRef<Value> xs, int64_t dim);
  Value cast(Value x, Type elementType);
  Value reduceSum(Value x, llvm::ArrayRef<int64_t> dims, bool keepDims);
  Value reduceMean(Value x, llvm::ArrayRef<int64_t> dims, bool keepDims);
  Value crossEntropy(Value logits, Value targets, int64_t ignoreIndex = -100);
  Value mseLoss(Value x, Value target);
  Value constant(DenseElementsAttr value);
  Value scalarConstant(double value, Type elementType = {});

  /// Builds `dsnn.layer name (type)`: `body` runs with the insertion point
  /// inside the layer and returns the values the layer yields.
  llvm::SmallVector<Value>
  layer(llvm::StringRef name, llvm::StringRef type,
        llvm::function_ref<llvm::SmallVector<Value>()> body);

  /// Finishes @forward returning `loss`, adds `moduleAttrs`, and runs the
  /// IR and model-contract verifiers; a failure there is an importer bug and
  /// comes back as an error quoting the diagnostics.
  llvm::Expected<OwningOpRef<ModuleOp>>
  finish(Value loss, llvm::ArrayRef<NamedAttribute> moduleAttrs = {});

private:
  Value binary(llvm::StringRef kind, Value a, Value c);

  OpBuilder b;
  Location currentLoc;
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;
  Block *entry = nullptr;
  unsigned numParams = 0;
  llvm::SmallVector<DictionaryAttr> paramAttrs;
  llvm::SmallVector<DictionaryAttr> batchAttrs;
  llvm::StringMap<Value> params;
};

/// The shape of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOf(Value v);

} // namespace mlir::ds::importer

#endif // DS_LIB_IMPORT_MODELBUILDER_H
