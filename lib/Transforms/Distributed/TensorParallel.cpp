//===- TensorParallel.cpp - Megatron's layout on the model graph ----------===//
//
// Works on the model contract. A candidate column linear is followed
// forward from its output through ops that act on each slice of the cut dim
// alone; if every path ends in the input of another parameter linear (a row
// linear), the candidate is cut. Nothing is matched by name, so an MLP, a
// SwiGLU MLP and an attention block are the same case.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ds {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kTpAxis = "tp";

/// `v` when it is a parameter argument that one op alone uses: only such a
/// parameter can be cut without changing its other users.
BlockArgument soleParam(Value v) {
  auto arg = dyn_cast_or_null<BlockArgument>(v);
  if (!arg || !arg.hasOneUse())
    return {};
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn || !fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName))
    return {};
  return arg;
}

/// A linear whose weight (and bias, if any) can be cut.
bool isCuttable(nn::LinearOp op) {
  return soleParam(op.getWeight()) &&
         (!op.getBias() || soleParam(op.getBias()));
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Where the cut dim `dim` of the reshape's input lands in its result: the
/// result dim with the same product of dims before it, when the cut slices
/// that dim evenly (its size is a multiple of `t`).
std::optional<int64_t> reshapedDim(nn::ReshapeOp op, int64_t dim) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= in.getDimSize(d);
  int64_t product = 1;
  for (int64_t d = 0; d < out.getRank(); ++d) {
    if (product == before)
      return d;
    product *= out.getDimSize(d);
  }
  return std::nullopt;
}

/// Everything a column linear's cut reaches: the values on 1/T of a dim,
/// the row linears it ends in, and the first problem that stops it.
struct Reach {
  llvm::MapVector<Value, int64_t> dims;
  llvm::SetVector<Operation *> rows;
  /// Operands a multi-input op needs cut too, with the dim it expects.
  SmallVector<std::pair<OpOperand *, int64_t>> needs;
  int64_t blocks = 1;
  /// A width the group does not divide: reported only if the cut holds.
  std::string indivisible;
  bool ok = true;
};

struct TensorParallelPass
    : mlir::ds::impl::TensorParallelBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-tensor-parallel: " << msg;
    signalPassFailure();
    return failure();
  }

  Reach follow(nn::LinearOp column);
  void visit(Reach &r, Value v, int64_t dim, OpOperand &use,
             SmallVectorImpl<std::pair<Value, int64_t>> &work);
  LogicalResult checkNeeds(const Reach &all);
  void cutParam(BlockArgument arg, int64_t dim, int64_t blocks);
  void rewriteRow(nn::LinearOp row);
};

/// Adds the values `use` makes cut, or marks the reach failed.
void TensorParallelPass::visit(
    Reach &r, Value v, int64_t dim, OpOperand &use,
    SmallVectorImpl<std::pair<Value, int64_t>> &work) {
  Operation *user = use.getOwner();
  auto cutTo = [&](Value result, int64_t d) {
    int64_t n = cast<RankedTensorType>(result.getType()).getDimSize(d);
    if (n % size != 0 && r.indivisible.empty())
      r.indivisible = "'" + user->getName().getStringRef().str() +
                      "' result dim " + std::to_string(d) + " is " +
                      std::to_string(n) + ", which tensor-parallel size " +
                      std::to_string(size) +
                      " does not divide (heads and MLP width must split "
                      "evenly over the ranks)";
    work.push_back({result, d});
  };
  if (auto linear = dyn_cast<nn::LinearOp>(user)) {
    if (use.getOperandNumber() == 0 && dim == rankOf(v) - 1 &&
        isCuttable(linear)) {
      r.rows.insert(linear);
      return;
    }
  } else if (isa<nn::GeluOp, nn::ReluOp, nn::SiluOp, nn::TanhOp>(user)) {
    return cutTo(user->getResult(0), dim);
  } else if (isa<nn::AddOp, nn::MulOp, nn::SubOp, nn::DivOp>(user)) {
    // Both operands cut alike: no broadcasting against a whole value.
    if (user->getOperand(0).getType() == user->getOperand(1).getType() &&
        user->getOperand(0).getType() == user->getResult(0).getType()) {
      r.needs.push_back({&user->getOpOperand(1 - use.getOperandNumber()), dim});
      return cutTo(user->getResult(0), dim);
    }
  } else if (auto split = dyn_cast<nn::SplitOp>(user)) {
    // Along the cut dim only as a fused projection's equal blocks (Q, K,
    // V); GQA's unequal Q and KV blocks have no such piece yet.
    bool fused = split.getDim() == dim &&
                 isa_and_nonnull<nn::LinearOp>(v.getDefiningOp()) &&
                 llvm::all_equal(split.getResultTypes());
    if (split.getDim() != dim || fused) {
      if (fused)
        r.blocks = split.getNumResults();
      for (Value piece : split.getResults())
        cutTo(piece, dim);
      return;
    }
  } else if (auto reshape = dyn_cast<nn::ReshapeOp>(user)) {
    if (std::optional<int64_t> d = reshapedDim(reshape, dim))
      return cutTo(reshape.getResult(), *d);
  } else if (auto transpose = dyn_cast<nn::TransposeOp>(user)) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    auto it = llvm::find(perm, dim);
    return cutTo(transpose.getResult(), it - perm.begin());
  } else if (auto attention = dyn_cast<nn::AttentionOp>(user)) {
    // [batch, heads, seq, head_dim]: each rank attends over its heads.
    if (dim == 1) {
      for (OpOperand &operand : user->getOpOperands())
        if (&operand != &use)
          r.needs.push_back({&operand, 1});
      return cutTo(attention.getResult(), 1);
    }
  }
  r.ok = false;
}

Reach TensorParallelPass::follow(nn::LinearOp column) {
  Reach r;
  SmallVector<std::pair<Value, int64_t>> work{
      {column.getResult(), rankOf(column.getResult()) - 1}};
  while (!work.empty() && r.ok) {
    auto [v, dim] = work.pop_back_val();
    auto [it, inserted] = r.dims.insert({v, dim});
    if (!inserted) {
      r.ok = it->second == dim;
      continue;
    }
    for (OpOperand &use : v.getUses()) {
      visit(r, v, dim, use, work);
      if (!r.ok)
        break;
    }
  }
  return r;
}

/// A multi-input op on cut values needs every input cut the same way: a
/// whole operand (RoPE's tables, a mask) has no per-rank slice yet.
LogicalResult TensorParallelPass::checkNeeds(const Reach &all) {
  for (auto [operand, dim] : all.needs) {
    auto it = all.dims.find(operand->get());
    if (it == all.dims.end() || it->second != dim)
      return fail(operand->getOwner(),
                  "operand #" + Twine(operand->getOperandNumber()) +
                      " is not cut like the other operands, which come from "
                      "a column-parallel linear; ds cannot place this op on "
                      "a tensor-parallel shard yet (a whole table or mask "
                      "combined with heads), use autotp_size 1");
  }
  return success();
}

/// Gives parameter `arg` its piece: `dim` divided by the group size, in
/// `blocks` blocks of which each rank holds its part.
void TensorParallelPass::cutParam(BlockArgument arg, int64_t dim,
                                  int64_t blocks) {
  MLIRContext *ctx = &getContext();
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto whole = cast<RankedTensorType>(arg.getType());
  SmallVector<int64_t> shape(whole.getShape());
  shape[dim] /= size;
  arg.setType(whole.clone(shape));
  fn.setArgAttr(arg.getArgNumber(), dist::DistDialect::kTensorParallelAttrName,
                dist::TensorShardAttr::get(
                    ctx, ArrayAttr::get(ctx, {StringAttr::get(ctx, kTpAxis)}),
                    dim, blocks, whole.getShape()));
  fn.setFunctionType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(),
                                       fn.getResultTypes()));
}

/// The row linear's partial sums, all-reduced (g), then its bias once.
void TensorParallelPass::rewriteRow(nn::LinearOp row) {
  ++numRow;
  auto weight = cast<BlockArgument>(row.getWeight());
  cutParam(weight, 1, 1);
  OpBuilder b(row);
  Location loc = row.getLoc();
  Type type = row.getResult().getType();
  Value partial =
      nn::LinearOp::create(b, loc, type, row.getInput(), weight, Value());
  Value sum = dist::AllReduceOp::create(
      b, loc, type, partial, b.getStrArrayAttr({kTpAxis}),
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::sum));
  if (Value bias = row.getBias())
    sum = nn::AddOp::create(b, loc, type, sum, bias);
  row.getResult().replaceAllUsesWith(sum);
  row.erase();
}

void TensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (size < 1 || dpSize < 1) {
    module.emitError() << "ds-tensor-parallel: size " << size << " and dp-size "
                       << dpSize << " must be >= 1";
    return signalPassFailure();
  }
  if (size == 1)
    return;
  MLIRContext *ctx = &getContext();
  if (module->hasAttr(dist::DistDialect::kGridAttrName))
    return (void)fail(module, "the module already has a device grid; run "
                              "this pass first, before any other "
                              "distribution (expert parallelism does not "
                              "compose with it yet)");
  module->setAttr(dist::DistDialect::kGridAttrName,
                  dist::GridAttr::get(ctx,
                                      {StringAttr::get(ctx, "dp"),
                                       StringAttr::get(ctx, kTpAxis)},
                                      {dpSize, size}));

  // Program order, so a linear that ends an earlier cut (a row) is never
  // taken as the start of another.
  SmallVector<nn::LinearOp> candidates;
  module.walk([&](nn::LinearOp op) {
    if (isCuttable(op))
      candidates.push_back(op);
  });
  Reach all;
  SmallVector<std::pair<nn::LinearOp, int64_t>> columns;
  llvm::SetVector<Operation *> rows;
  for (nn::LinearOp op : candidates) {
    if (rows.contains(op) || all.dims.contains(op.getInput()))
      continue;
    Reach r = follow(op);
    if (!r.ok || r.rows.empty())
      continue;
    int64_t out =
        cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
    if (out % (r.blocks * size) != 0)
      return (void)fail(op, "output width " + Twine(out) + " in " +
                                Twine(r.blocks) +
                                " block(s) is not divisible by "
                                "tensor-parallel size " +
                                Twine(size) + " per block");
    if (!r.indivisible.empty())
      return (void)fail(op, "cutting this linear's output: " + r.indivisible);
    for (auto [v, d] : r.dims)
      all.dims.insert({v, d});
    all.needs.append(r.needs);
    rows.insert(r.rows.begin(), r.rows.end());
    columns.push_back({op, r.blocks});
  }
  if (columns.empty())
    return (void)fail(module, "no linear could be cut: tensor parallelism "
                              "needs a parameter linear whose output reaches "
                              "only other parameter linears (an MLP or an "
                              "attention block); use autotp_size 1");
  if (failed(checkNeeds(all)))
    return;
  for (Operation *row : rows)
    if (all.dims.contains(cast<nn::LinearOp>(row).getResult()))
      return (void)fail(row, "this linear both ends one tensor-parallel cut "
                             "and continues another");

  // The cut values' types: 1/T of their cut dim.
  for (auto [v, dim] : all.dims) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= size;
    v.setType(type.clone(shape));
  }
  // f: one copy per column input, however many columns read it.
  DenseMap<Value, Value> copies;
  for (auto [op, blocks] : columns) {
    ++numColumn;
    cutParam(cast<BlockArgument>(op.getWeight()), 0, blocks);
    if (Value bias = op.getBias())
      cutParam(cast<BlockArgument>(bias), 0, blocks);
    Value x = op.getInput();
    Value &copy = copies[x];
    if (!copy) {
      OpBuilder b(ctx);
      b.setInsertionPointAfterValue(x);
      copy = dist::CopyToGroupOp::create(b, op.getLoc(), x.getType(), x,
                                         b.getStrArrayAttr({kTpAxis}));
    }
    op.getInputMutable().assign(copy);
  }
  for (Operation *row : rows)
    rewriteRow(cast<nn::LinearOp>(row));
}

} // namespace
