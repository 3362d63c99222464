//===- StackArguments.cpp - The ds-stack-arguments pass -------------------===//
//
// A stacked run's per-layer parameters and Adam states become one argument
// each, their updates one op over the stacks and their new values one
// result each, so the glue around the layer loops stops growing with depth.
//
//===----------------------------------------------------------------------===//
#include "Stacking.h"

#include "ds/Support/CInterface.h"
#include "ds/Transforms/Passes.h"
#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_STACKARGUMENTS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

/// K arguments of the function that the switches of a run choose among,
/// and what the step does with them.
struct Group {
  SmallVector<BlockArgument> params; // by layer index
  SmallVector<scf::IndexSwitchOp> switches;
  SmallVector<train::AdamOp> updates; // by layer index
  SmallVector<BlockArgument> expAvg, expAvgSq;
  /// The backward run's stacked gradient the updates read slices of.
  Value grads;
  /// The clip the slices go through (null: none) and each slice's operand
  /// position there, by layer index.
  train::ClipGradNormOp clip;
  SmallVector<unsigned> clipPositions;
  bool valid = true;

  unsigned size() const { return params.size(); }
};

/// The K distinct entry-block arguments `sw` yields, case k yielding layer
/// k's; empty if it is not such a switch.
SmallVector<BlockArgument> switchedArguments(scf::IndexSwitchOp sw,
                                             Block &entry) {
  if (sw.getNumResults() != 1)
    return {};
  for (auto [i, c] : llvm::enumerate(sw.getCases()))
    if (c != static_cast<int64_t>(i))
      return {};
  auto yielded = [&](Region &region) -> BlockArgument {
    Block &block = region.front();
    if (!llvm::hasSingleElement(block))
      return {};
    auto yield = dyn_cast<scf::YieldOp>(block.getTerminator());
    if (!yield || yield.getNumOperands() != 1)
      return {};
    auto arg = dyn_cast<BlockArgument>(yield.getOperand(0));
    if (!arg || arg.getOwner() != &entry)
      return {};
    return arg;
  };
  SmallVector<BlockArgument> args;
  for (Region &region : sw.getCaseRegions())
    args.push_back(yielded(region));
  args.push_back(yielded(sw.getDefaultRegion()));
  llvm::SmallPtrSet<Value, 8> seen;
  auto type = dyn_cast<RankedTensorType>(sw.getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return {};
  for (BlockArgument arg : args)
    if (!arg || arg.getType() != type || !seen.insert(arg).second)
      return {};
  return args;
}

/// The single user of `v`, if it has exactly one use.
Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// Layer `k`'s full slice of a stack of `k`-or-more layers: the stack, or
/// null.
Value sliceSource(Value v, unsigned k, unsigned layers) {
  auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return {};
  auto source = slice.getSourceType();
  auto type = slice.getResultType();
  if (source.getRank() != type.getRank() + 1 ||
      source.getDimSize(0) != layers || stackedType(type, layers) != source)
    return {};
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  if (getConstantIntValue(offsets[0]) != static_cast<int64_t>(k) ||
      getConstantIntValue(sizes[0]) != 1 || !slice.hasUnitStride())
    return {};
  for (unsigned d = 1; d < offsets.size(); ++d)
    if (getConstantIntValue(offsets[d]) != 0 ||
        getConstantIntValue(sizes[d]) != source.getDimSize(d))
      return {};
  return slice.getSource();
}

/// An Adam state argument read only by `update`.
BlockArgument stateArgument(Value v, train::AdamOp update, Block &entry) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &entry || soleUser(arg) != update)
    return {};
  return arg;
}

/// Fills in how the step uses `g`'s arguments; false if it is anything but
/// one Adam update per layer of that layer's gradient slice.
bool matchUpdates(Group &g, Block &entry) {
  llvm::SmallPtrSet<Operation *, 4> switches;
  for (scf::IndexSwitchOp sw : g.switches)
    switches.insert(sw);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  for (unsigned k = 0; k < g.size(); ++k) {
    train::AdamOp update;
    for (OpOperand &use : g.params[k].getUses()) {
      Operation *user = use.getOwner();
      if (isa<scf::YieldOp>(user) && switches.contains(user->getParentOp()))
        continue;
      auto adam = dyn_cast<train::AdamOp>(user);
      if (!adam || update || use.getOperandNumber() != 0)
        return false;
      update = adam;
    }
    if (!update)
      return false;
    train::AdamOp first = k ? g.updates.front() : update;
    if (update.getStep() != first.getStep() ||
        update.getLr() != first.getLr() ||
        update.getSkip() != first.getSkip() ||
        update->getAttrDictionary() != first->getAttrDictionary())
      return false;
    for (Value result : update->getResults())
      if (soleUser(result) != ret)
        return false;
    BlockArgument m = stateArgument(update.getExpAvg(), update, entry);
    BlockArgument v = stateArgument(update.getExpAvgSq(), update, entry);
    if (!m || !v || m == v)
      return false;
    // The gradient: layer k's slice of the stacked gradient, clipped or not.
    Value grad = update.getGrad();
    if (soleUser(grad) != update)
      return false;
    train::ClipGradNormOp clip;
    if (auto r = dyn_cast<OpResult>(grad))
      clip = dyn_cast<train::ClipGradNormOp>(r.getOwner());
    if (clip) {
      unsigned pos = cast<OpResult>(grad).getResultNumber();
      if (pos >= clip.getGrads().size() || clip.getNormIn())
        return false;
      grad = clip.getGrads()[pos];
      if (soleUser(grad) != clip)
        return false;
      g.clipPositions.push_back(pos);
    }
    Value stack = sliceSource(grad, k, g.size());
    if (!stack || (k && (stack != g.grads || clip != g.clip)))
      return false;
    g.grads = stack;
    g.clip = clip;
    g.updates.push_back(update);
    g.expAvg.push_back(m);
    g.expAvgSq.push_back(v);
  }
  return true;
}

/// The groups through `clip`, sorted by slot, if their gradients are its
/// operands layer-major (layer 0's slots, then layer 1's, ...) in one
/// contiguous range; else empty.
SmallVector<Group *> layerMajorSlots(ArrayRef<Group *> groups) {
  SmallVector<Group *> slots(groups);
  llvm::sort(slots, [](Group *a, Group *b) {
    return a->clipPositions.front() < b->clipPositions.front();
  });
  unsigned lo = slots.front()->clipPositions.front();
  unsigned n = slots.size(), layers = slots.front()->size();
  for (auto [s, g] : llvm::enumerate(slots)) {
    if (g->size() != layers)
      return {};
    for (unsigned k = 0; k < layers; ++k)
      if (g->clipPositions[k] != lo + k * n + s)
        return {};
  }
  return slots;
}

struct StackArgumentsPass : ds::impl::StackArgumentsBase<StackArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!fn.isExternal() && fn.getBody().hasOneBlock() &&
          SymbolTable::symbolKnownUseEmpty(fn, module))
        runOnFunction(fn);
  }

  void runOnFunction(func::FuncOp fn);
  /// One `dstrain.global_norm squared` of `inputs` continuing `init`.
  Value sumOfSquares(OpBuilder &b, Location loc, ValueRange inputs, Value init);
  /// The clip over the stacks instead of their slices, summing in the
  /// original order. Returns the clipped stack of each slot.
  SmallVector<Value> restackClip(train::ClipGradNormOp clip,
                                 ArrayRef<Group *> slots);
};

Value StackArgumentsPass::sumOfSquares(OpBuilder &b, Location loc,
                                       ValueRange inputs, Value init) {
  // f64 running sums: rounded to f32 once at the end of the chain, as the
  // one op over every gradient they stand for rounds its sum.
  auto scalar = RankedTensorType::get({}, b.getF64Type());
  return train::GlobalNormOp::create(b, loc, scalar, inputs, b.getUnitAttr(),
                                     init);
}

SmallVector<Value> StackArgumentsPass::restackClip(train::ClipGradNormOp clip,
                                                   ArrayRef<Group *> slots) {
  OpBuilder b(clip);
  Location loc = clip.getLoc();
  unsigned layers = slots.front()->size();
  unsigned lo = slots.front()->clipPositions.front();
  unsigned hi = lo + layers * slots.size();
  ValueRange grads = clip.getGrads();
  SmallVector<Value> before(grads.take_front(lo)), after(grads.drop_front(hi));
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto scalar64 = RankedTensorType::get({}, b.getF64Type());
  Value sum = before.empty()
                  ? arith::ConstantOp::create(
                        b, loc, cast<TypedAttr>(b.getZeroAttr(scalar64)))
                        .getResult()
                  : sumOfSquares(b, loc, before, Value());
  // Layer by layer, each layer's slots in operand order.
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value cK = arith::ConstantIndexOp::create(b, loc, layers);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, c0, cK, c1, ValueRange{sum},
      [&](OpBuilder &body, Location loc, Value k, ValueRange acc) {
        SmallVector<Value> slices;
        for (Group *g : slots)
          slices.push_back(extractLayer(body, loc, g->grads, k,
                                        g->params.front().getType()));
        scf::YieldOp::create(body, loc,
                             sumOfSquares(body, loc, slices, acc.front()));
      });
  sum = loop.getResult(0);
  if (!after.empty())
    sum = sumOfSquares(b, loc, after, sum);
  Value norm = math::SqrtOp::create(
      b, loc,
      arith::TruncFOp::create(
          b, loc, b.getF32Type(),
          tensor::ExtractOp::create(b, loc, sum, ValueRange{})));
  norm = tensor::FromElementsOp::create(b, loc, scalar, norm);

  SmallVector<Value> operands(before);
  for (Group *g : slots)
    operands.push_back(g->grads);
  llvm::append_range(operands, after);
  SmallVector<Type> types;
  for (Value v : operands)
    types.push_back(v.getType());
  auto stacked = train::ClipGradNormOp::create(b, loc, types, scalar, operands,
                                               clip.getMaxNormAttr(), norm);
  ResultRange oldClipped = clip.getClipped(), newClipped = stacked.getClipped();
  for (unsigned i = 0; i < lo; ++i)
    oldClipped[i].replaceAllUsesWith(newClipped[i]);
  for (unsigned i = hi; i < grads.size(); ++i)
    oldClipped[i].replaceAllUsesWith(newClipped[i - hi + lo + slots.size()]);
  clip.getNorm().replaceAllUsesWith(stacked.getNorm());
  SmallVector<Value> result;
  for (unsigned s = 0; s < slots.size(); ++s)
    result.push_back(newClipped[lo + s]);
  return result;
}

void StackArgumentsPass::runOnFunction(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  // Groups by their arguments.
  llvm::MapVector<Value, std::unique_ptr<Group>> byFirst;
  fn.walk([&](scf::IndexSwitchOp sw) {
    SmallVector<BlockArgument> args = switchedArguments(sw, entry);
    if (args.empty())
      return;
    std::unique_ptr<Group> &g = byFirst[args.front()];
    if (!g) {
      g = std::make_unique<Group>();
      g->params = args;
    } else if (g->params != args) {
      g->valid = false;
    }
    g->switches.push_back(sw);
  });
  SmallVector<Group *> groups;
  for (auto &[first, g] : byFirst)
    if (g->valid && matchUpdates(*g, entry))
      groups.push_back(g.get());
  // Per clip: its groups' gradients must be a layer-major block.
  llvm::MapVector<Operation *, SmallVector<Group *>> byClip;
  for (Group *g : groups)
    if (g->clip)
      byClip[g->clip].push_back(g);
  llvm::SmallPtrSet<Group *, 16> dropped;
  SmallVector<std::pair<train::ClipGradNormOp, SmallVector<Group *>>> clips;
  for (auto &[op, members] : byClip) {
    SmallVector<Group *> slots = layerMajorSlots(members);
    if (slots.empty())
      dropped.insert(members.begin(), members.end());
    else
      clips.emplace_back(cast<train::ClipGradNormOp>(op), std::move(slots));
  }
  llvm::erase_if(groups, [&](Group *g) { return dropped.contains(g); });
  if (groups.empty())
    return;

  // The clips over stacks; each group's (clipped) stacked gradient.
  llvm::DenseMap<Group *, Value> stackedGrad;
  for (Group *g : groups)
    stackedGrad[g] = g->grads;
  for (auto &[clip, slots] : clips) {
    SmallVector<Value> clipped = restackClip(clip, slots);
    for (auto [g, v] : llvm::zip_equal(slots, clipped))
      stackedGrad[g] = v;
  }

  // New arguments, each before its first member.
  MLIRContext *ctx = fn.getContext();
  Builder attrs(ctx);
  struct Insertion {
    unsigned at;
    SmallVector<BlockArgument> members;
  };
  SmallVector<Insertion> insertions;
  for (Group *g : groups)
    for (ArrayRef<BlockArgument> members :
         {ArrayRef(g->params), ArrayRef(g->expAvg), ArrayRef(g->expAvgSq)}) {
      unsigned at = members.front().getArgNumber();
      for (BlockArgument a : members)
        at = std::min(at, a.getArgNumber());
      insertions.push_back({at, SmallVector<BlockArgument>(members)});
    }
  llvm::sort(insertions, [](const Insertion &a, const Insertion &b) {
    return a.at < b.at;
  });
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> locs;
  llvm::BitVector erase(fn.getNumArguments());
  for (const Insertion &ins : insertions) {
    SmallVector<int64_t> positions;
    for (BlockArgument a : ins.members) {
      positions.push_back(a.getArgNumber());
      erase.set(a.getArgNumber());
    }
    indices.push_back(ins.at);
    types.push_back(
        stackedType(ins.members.front().getType(), ins.members.size()));
    argAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr(
        kStackAttrName, attrs.getDenseI64ArrayAttr(positions))));
    locs.push_back(ins.members.front().getLoc());
  }
  // Each stacked argument, by its first member.
  llvm::DenseMap<Value, BlockArgument> stackOf;
  {
    SmallVector<Value> firsts;
    for (const Insertion &ins : insertions)
      firsts.push_back(ins.members.front());
    if (failed(fn.insertArguments(indices, types, argAttrs, locs)))
      return signalPassFailure();
    for (auto [j, ins] : llvm::enumerate(insertions))
      stackOf[firsts[j]] = entry.getArgument(ins.at + j);
  }

  // Switches become slices of the stacked parameter; the K updates one.
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  struct ResultGroup {
    SmallVector<int64_t> positions;
    Value stacked;
  };
  SmallVector<ResultGroup> resultGroups;
  for (Group *g : groups) {
    BlockArgument params = stackOf[g->params.front()];
    for (scf::IndexSwitchOp sw : g->switches) {
      OpBuilder b(sw);
      Value slice = extractLayer(b, sw.getLoc(), params, sw.getArg(),
                                 sw.getResult(0).getType());
      sw.getResult(0).replaceAllUsesWith(slice);
      sw.erase();
    }
    train::AdamOp first = g->updates.front();
    OpBuilder b(first);
    OperationState state(first.getLoc(), first->getName());
    state.addOperands({params, stackedGrad[g], stackOf[g->expAvg.front()],
                       stackOf[g->expAvgSq.front()], first.getStep(),
                       first.getLr()});
    if (Value skip = first.getSkip())
      state.addOperands(skip);
    state.addTypes(SmallVector<Type>(3, params.getType()));
    state.addAttributes(first->getAttrs());
    Operation *update = b.create(state);
    for (unsigned r = 0; r < 3; ++r) {
      ResultGroup rg;
      for (train::AdamOp u : g->updates)
        rg.positions.push_back(
            u->getResult(r).getUses().begin()->getOperandNumber());
      rg.stacked = update->getResult(r);
      resultGroups.push_back(std::move(rg));
    }
    ++numGroups;
    numArguments += 3 * g->size();
  }

  // Results: each stack where its first member was, the others gone.
  llvm::DenseMap<int64_t, const ResultGroup *> groupAt;
  llvm::DenseSet<int64_t> member;
  for (const ResultGroup &rg : resultGroups) {
    groupAt[*llvm::min_element(rg.positions)] = &rg;
    member.insert(rg.positions.begin(), rg.positions.end());
  }
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    if (auto it = groupAt.find(i); it != groupAt.end()) {
      results.push_back(it->second->stacked);
      resultAttrs.push_back(attrs.getDictionaryAttr(attrs.getNamedAttr(
          kStackAttrName, attrs.getDenseI64ArrayAttr(it->second->positions))));
    } else if (!member.contains(i)) {
      results.push_back(ret.getOperand(i));
      resultAttrs.push_back(fn.getResultAttrDict(i));
    }
  }
  ret->setOperands(results);
  for (Group *g : groups)
    for (train::AdamOp u : g->updates)
      u.erase();
  for (auto &[clip, slots] : clips)
    clip.erase();
  // The slices of the stacked gradients the old clip or updates read.
  for (Group *g : groups)
    for (Operation *user : llvm::make_early_inc_range(g->grads.getUsers()))
      if (isa<tensor::ExtractSliceOp>(user) && user->use_empty())
        user->erase();
  // The old arguments, shifted past the insertions before them.
  llvm::BitVector shifted(fn.getNumArguments());
  for (int i : erase.set_bits()) {
    unsigned before = llvm::count_if(insertions, [&](const Insertion &ins) {
      return ins.at <= unsigned(i);
    });
    shifted.set(i + before);
  }
  if (failed(fn.eraseArguments(shifted)))
    return signalPassFailure();
  fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(),
                               TypeRange(ValueRange(results))));
  fn.setAllResultAttrs(resultAttrs);
}

} // namespace
