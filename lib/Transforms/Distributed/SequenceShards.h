//===- SequenceShards.h - Values on a rank's share of the sequence -*- C++
//-*-===//
//
// What ds-sequence-parallel (Ulysses) and ds-tensor-parallel's Megatron
// sequence parallelism share: a collective or slice along the sequence dim,
// which the runtime cuts only along a leading dim, and the dim an op on
// each position alone puts the sequence in.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_TRANSFORMS_DISTRIBUTED_SEQUENCESHARDS_H
#define DS_LIB_TRANSFORMS_DISTRIBUTED_SEQUENCESHARDS_H

#include "dsnn/NNOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace mlir::ds::seq {

/// `t` with dim `dim` of size `size`.
inline RankedTensorType withDim(Type t, int64_t dim, int64_t size) {
  auto ranked = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[dim] = size;
  return ranked.clone(shape);
}

/// `cut(x, d, type)`, a collective or slice of `x` along its dim `d` giving
/// `type`, applied to `v` along `dim`, whose size becomes `newSize`. The
/// runtime cuts a leading dim only, so when a dim before `dim` is not 1,
/// `dim` goes to the front and back with dsnn.transpose.
inline Value
alongLeadingDim(OpBuilder &b, Location loc, Value v, int64_t dim,
                int64_t newSize,
                function_ref<Value(Value, int64_t, RankedTensorType)> cut) {
  auto type = cast<RankedTensorType>(v.getType());
  if (llvm::all_of(type.getShape().take_front(dim),
                   [](int64_t d) { return d == 1; }))
    return cut(v, dim, withDim(type, dim, newSize));
  SmallVector<int64_t> perm{dim}, inverse(type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != dim)
      perm.push_back(d);
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  auto permute = [&](Value x, ArrayRef<int64_t> order) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : order)
      shape.push_back(t.getDimSize(p));
    return nn::TransposeOp::create(b, loc, t.clone(shape), x,
                                   b.getDenseI64ArrayAttr(order));
  };
  Value front = permute(v, perm);
  return permute(cut(front, 0, withDim(front.getType(), 0, newSize)), inverse);
}

/// The result dim in which an op on each position alone, with NumPy
/// broadcasting, carries the sequence of its `operands` found in `dims`;
/// failure, with `why`, when none is there or two put it in different dims.
inline FailureOr<int64_t>
broadcastSequenceDim(Operation *op, ArrayRef<unsigned> operands,
                     const DenseMap<Value, int64_t> &dims, std::string &why) {
  int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  std::optional<int64_t> dim;
  for (unsigned i : operands) {
    Value v = op->getOperand(i);
    auto it = dims.find(v);
    if (it == dims.end())
      continue;
    int64_t k =
        it->second + rank - cast<RankedTensorType>(v.getType()).getRank();
    if (dim && *dim != k) {
      why = "operands carry the sequence in different dims";
      return failure();
    }
    dim = k;
  }
  if (!dim) {
    why = "reads a sequence-sharded value in an unsupported place";
    return failure();
  }
  return *dim;
}

/// Gives `result` the share `local` of its sequence dim `dim` (of length
/// `seqLen`) and records it in `dims`; false if `dim` is not that.
inline bool shrinkSequence(Value result, int64_t dim, int64_t seqLen,
                           int64_t local, DenseMap<Value, int64_t> &dims) {
  auto type = cast<RankedTensorType>(result.getType());
  if (dim < 0 || dim >= type.getRank() || type.getDimSize(dim) != seqLen)
    return false;
  result.setType(withDim(type, dim, local));
  dims[result] = dim;
  return true;
}

} // namespace mlir::ds::seq

#endif // DS_LIB_TRANSFORMS_DISTRIBUTED_SEQUENCESHARDS_H
