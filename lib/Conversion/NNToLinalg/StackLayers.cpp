//===- StackLayers.cpp - The ds-stack-layers pass -------------------------===//
//
// K equal consecutive layers become one loop holding the layer once, so the
// step's glue stops growing with depth. Per-layer values are stacked along a
// leading dimension of size K and sliced at the layer index.
//
//===----------------------------------------------------------------------===//
#include "Stacking.h"

#include "ds/Support/Outline.h"
#include "ds/Transforms/Passes.h"
#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_STACKLAYERS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

/// The values a layer's body reads from above, in order of first use in a
/// pre-order walk (equal bodies read them in the same order).
SmallVector<Value> readsFromAbove(nn::LayerOp layer) {
  llvm::SetVector<Value> reads;
  Region *body = &layer.getBody();
  layer.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!body->isAncestor(v.getParentRegion()))
        reads.insert(v);
  });
  return reads.takeVector();
}

/// How the K layers of a run obtain the value at one read position.
struct Read {
  enum Kind { Same, Carried, Param, Saved } kind = Same;
  /// Carried: the result index of the previous layer.
  /// Saved: the result index (or carried position, if `input`) in the
  /// paired run.
  unsigned index = 0;
  bool input = false;
  /// Param: the function arguments, by layer index.
  SmallVector<BlockArgument> args;
};

struct Run {
  SmallVector<nn::LayerOp> layers;       // in block order
  bool reverse = false;                  // layer index of layers[j] is K-1-j
  Run *paired = nullptr;                 // the run a reverse run's Saved reads
  SmallVector<SmallVector<Value>> reads; // per layer
  SmallVector<Read> how;                 // per read position
  // Results and carried inputs to stack (index by layer index).
  llvm::SetVector<unsigned> stackedResults, stackedInputs;
  // After building.
  scf::ForOp loop;
  llvm::DenseMap<unsigned, Value> resultStack, inputStack;

  unsigned size() const { return layers.size(); }
  unsigned layerIndex(unsigned j) const { return reverse ? size() - 1 - j : j; }
  nn::LayerOp at(unsigned k) const {
    return layers[reverse ? size() - 1 - k : k];
  }
};

bool isStackable(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.hasStaticShape();
}

/// The argument of layer `index`: a switch over the K arguments, which
/// bufferizes to a choice among their buffers (packing them into one
/// tensor would copy each per step, and one-shot bufferization's analysis
/// of a chain of K inserts grows superlinearly).
Value selectArgument(OpBuilder &b, Location loc, Value index,
                     ArrayRef<BlockArgument> args) {
  SmallVector<int64_t> cases;
  for (unsigned k = 0; k + 1 < args.size(); ++k)
    cases.push_back(k);
  auto sw = scf::IndexSwitchOp::create(b, loc, args.front().getType(), index,
                                       cases, cases.size());
  OpBuilder::InsertionGuard g(b);
  for (unsigned k = 0; k < args.size(); ++k) {
    Region &region =
        k + 1 < args.size() ? sw.getCaseRegions()[k] : sw.getDefaultRegion();
    b.setInsertionPointToStart(&region.emplaceBlock());
    scf::YieldOp::create(b, loc, Value(args[k]));
  }
  return sw.getResult(0);
}

/// Maximal runs of adjacent top-level layers with one type, direction and
/// body.
SmallVector<std::unique_ptr<Run>> findRuns(Block &block) {
  SmallVector<std::unique_ptr<Run>> runs;
  std::string prevKey;
  auto keyOf = [](nn::LayerOp layer) {
    Block &body = layer.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    if (ops.empty())
      return std::string();
    // Collectives and expert routing keep their per-layer schedule.
    bool distributed = false;
    layer.getBody().walk([&](Operation *op) {
      distributed |=
          isa<nn::MoEOp>(op) || op->getDialect()->getNamespace() == "dsdist";
    });
    if (distributed)
      return std::string();
    OpBuilder b(layer);
    NamedAttribute type(b.getStringAttr("dsnn.layer_type"),
                        layer.getLayerTypeAttr());
    NamedAttribute backward(b.getStringAttr("backward"),
                            b.getBoolAttr(layer->hasAttr("backward")));
    return FunctionOutliner::bodyKey(ops, body.getTerminator()->getOperands(),
                                     {type, backward});
  };
  Operation *prev = nullptr;
  for (Operation &op : block) {
    auto layer = dyn_cast<nn::LayerOp>(&op);
    if (!layer) {
      prev = nullptr;
      continue;
    }
    std::string key = keyOf(layer);
    if (prev && !key.empty() && key == prevKey)
      runs.back()->layers.push_back(layer);
    else {
      runs.push_back(std::make_unique<Run>());
      runs.back()->layers.push_back(layer);
    }
    prevKey = key;
    prev = &op;
  }
  llvm::erase_if(runs, [](auto &run) { return run->size() < 2; });
  return runs;
}

/// Classifies every read position of `run`; false if one has no
/// stacked form. `earlier` are the runs already classified.
bool classify(Run &run, ArrayRef<Run *> earlier, Block &entry) {
  unsigned n = run.size();
  for (nn::LayerOp layer : run.layers)
    run.reads.push_back(readsFromAbove(layer));
  for (unsigned j = 1; j < n; ++j)
    if (run.reads[j].size() != run.reads[0].size())
      return false;
  // A reverse run pairs with the nearest earlier run of its length: its
  // first layer must read something of that run's last layer.
  if (run.layers.front()->hasAttr("backward")) {
    for (Run *p : llvm::reverse(earlier))
      if (p->size() == n && !p->reverse) {
        run.paired = p;
        run.reverse = true;
        break;
      }
  }
  auto readsOf = [&](unsigned k) -> ArrayRef<Value> {
    return run.reads[run.reverse ? n - 1 - k : k];
  };
  for (unsigned p = 0; p < run.reads[0].size(); ++p) {
    Read how;
    auto all = [&](auto pred) {
      for (unsigned k = 0; k < n; ++k)
        if (!pred(k, readsOf(k)[p]))
          return false;
      return true;
    };
    Value first = run.reads[0][p];
    auto asResult = [](Value v, Operation *of) -> std::optional<unsigned> {
      auto r = dyn_cast<OpResult>(v);
      if (r && r.getOwner() == of)
        return r.getResultNumber();
      return std::nullopt;
    };
    // The same value for every layer.
    if (llvm::all_of(run.reads,
                     [&](ArrayRef<Value> r) { return r[p] == first; })) {
      how.kind = Read::Same;
      run.how.push_back(how);
      continue;
    }
    // Carried: layers[j] reads layers[j-1]'s result r (block order).
    if (auto r = asResult(run.reads[1][p], run.layers[0])) {
      bool ok = true;
      for (unsigned j = 1; j < n && ok; ++j)
        ok = asResult(run.reads[j][p], run.layers[j - 1]) == r;
      if (ok) {
        how.kind = Read::Carried;
        how.index = *r;
        run.how.push_back(how);
        continue;
      }
    }
    // A per-layer parameter: K distinct arguments of the function.
    llvm::SmallPtrSet<Value, 8> seen;
    if (isStackable(first.getType()) && all([&](unsigned, Value v) {
          auto arg = dyn_cast<BlockArgument>(v);
          return arg && arg.getOwner() == &entry &&
                 v.getType() == first.getType() && seen.insert(v).second;
        })) {
      how.kind = Read::Param;
      for (unsigned k = 0; k < n; ++k)
        how.args.push_back(cast<BlockArgument>(readsOf(k)[p]));
      run.how.push_back(how);
      continue;
    }
    // Saved by the paired run: its layer k's result r or carried input q.
    Run *pr = run.paired;
    if (!pr || !isStackable(first.getType()))
      return false;
    if (auto r = asResult(readsOf(0)[p], pr->at(0));
        r &&
        all([&](unsigned k, Value v) { return asResult(v, pr->at(k)) == r; })) {
      how.kind = Read::Saved;
      how.index = *r;
      pr->stackedResults.insert(*r);
      run.how.push_back(how);
      continue;
    }
    bool found = false;
    for (unsigned q = 0; q < pr->how.size() && !found; ++q) {
      if (pr->how[q].kind != Read::Carried)
        continue;
      if (!all([&](unsigned k, Value v) { return pr->reads[k][q] == v; }))
        continue;
      how.kind = Read::Saved;
      how.index = q;
      how.input = true;
      pr->stackedInputs.insert(q);
      found = true;
    }
    if (!found)
      return false;
    run.how.push_back(how);
  }
  return true;
}

bool inAnyRun(Operation *op, const llvm::SmallPtrSetImpl<Operation *> &runs) {
  for (; op; op = op->getParentOp())
    if (runs.contains(op))
      return true;
  return false;
}

struct StackLayersPass : ds::impl::StackLayersBase<StackLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        runOnFunction(fn);
  }

  void runOnFunction(func::FuncOp fn) {
    Block &entry = fn.getBody().front();
    SmallVector<std::unique_ptr<Run>> found = findRuns(entry);
    SmallVector<Run *> runs;
    for (auto &run : found) {
      if (classify(*run, runs, entry))
        runs.push_back(run.get());
      else
        run->paired = nullptr;
    }
    if (runs.empty())
      return;
    llvm::SmallPtrSet<Operation *, 32> inRuns;
    for (Run *run : runs)
      for (nn::LayerOp layer : run->layers)
        inRuns.insert(layer);
    // A result read outside the runs (other than the last layer's carried
    // one) is read from its stack.
    for (Run *run : runs) {
      llvm::SmallDenseSet<unsigned> carried;
      for (const Read &how : run->how)
        if (how.kind == Read::Carried)
          carried.insert(how.index);
      for (unsigned j = 0; j < run->size(); ++j)
        for (OpResult r : run->layers[j]->getResults()) {
          bool last =
              j + 1 == run->size() && carried.contains(r.getResultNumber());
          if (last)
            continue;
          if (llvm::any_of(r.getUsers(), [&](Operation *user) {
                return !inAnyRun(user, inRuns);
              }))
            run->stackedResults.insert(r.getResultNumber());
        }
    }
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = fn.getLoc();
    for (Run *run : runs)
      buildLoop(*run);
    // Reads outside the runs: the last carried value or the stacked slice.
    for (Run *run : runs) {
      unsigned n = run->size();
      llvm::DenseMap<unsigned, Value> finals;
      unsigned iter = 0;
      for (const Read &how : run->how)
        if (how.kind == Read::Carried)
          finals[how.index] = run->loop.getResult(iter++);
      b.setInsertionPointAfter(run->loop);
      for (unsigned j = 0; j < n; ++j) {
        nn::LayerOp layer = run->layers[j];
        for (OpResult r : layer->getResults()) {
          auto outside = [&](OpOperand &use) {
            return !inAnyRun(use.getOwner(), inRuns);
          };
          if (!llvm::any_of(r.getUses(), outside))
            continue;
          Value v;
          if (j + 1 == n && finals.count(r.getResultNumber()))
            v = finals[r.getResultNumber()];
          else {
            Value index =
                arith::ConstantIndexOp::create(b, loc, run->layerIndex(j));
            v = extractLayer(b, loc, run->resultStack[r.getResultNumber()],
                             index, r.getType());
          }
          r.replaceUsesWithIf(v, outside);
        }
      }
    }
    for (Run *run : llvm::reverse(runs)) {
      for (nn::LayerOp layer : llvm::reverse(run->layers))
        layer.erase();
      ++numRuns;
      numLayers += run->size();
    }
  }

  void buildLoop(Run &run) {
    nn::LayerOp first = run.layers.front();
    Location loc = first.getLoc();
    unsigned n = run.size();
    OpBuilder b(first);
    // Loop-carried: the carried reads, then the stacks.
    SmallVector<Value> inits;
    for (auto [p, how] : llvm::enumerate(run.how))
      if (how.kind == Read::Carried)
        inits.push_back(run.reads[0][p]);
    auto emptyStack = [&](Type layerType) -> Value {
      auto type = stackedType(layerType, n);
      return tensor::EmptyOp::create(b, loc, type.getShape(),
                                     type.getElementType());
    };
    for (unsigned r : run.stackedResults)
      inits.push_back(emptyStack(first->getResult(r).getType()));
    for (unsigned q : run.stackedInputs)
      inits.push_back(emptyStack(run.reads[0][q].getType()));
    Value lb = arith::ConstantIndexOp::create(b, loc, 0);
    Value ub = arith::ConstantIndexOp::create(b, loc, n);
    Value step = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, lb, ub, step, inits);
    run.loop = loop;
    OpBuilder body = OpBuilder::atBlockBegin(loop.getBody());
    Value j = loop.getInductionVar();
    Value index = j;
    if (run.reverse) {
      Value last = arith::ConstantIndexOp::create(body, loc, n - 1);
      index = arith::SubIOp::create(body, loc, last, j);
    }
    IRMapping map;
    unsigned iter = 0;
    llvm::DenseMap<unsigned, Value> carriedIn; // read position -> iter arg
    for (auto [p, how] : llvm::enumerate(run.how)) {
      Value from = run.reads[0][p];
      switch (how.kind) {
      case Read::Same:
        break;
      case Read::Carried:
        carriedIn[p] = loop.getRegionIterArg(iter++);
        map.map(from, carriedIn[p]);
        break;
      case Read::Param:
        map.map(from, selectArgument(body, loc, index, how.args));
        break;
      case Read::Saved: {
        Run &pr = *run.paired;
        Value stack =
            how.input ? pr.inputStack[how.index] : pr.resultStack[how.index];
        map.map(from, extractLayer(body, loc, stack, index, from.getType()));
        break;
      }
      }
    }
    auto layer = cast<nn::LayerOp>(body.clone(*first, map));
    // Iteration j runs run.layers[j] in either direction.
    SmallVector<Attribute> names;
    for (nn::LayerOp l : run.layers)
      names.push_back(l.getLayerNameAttr());
    layer->setAttr(nn::kIterationNamesAttrName, body.getArrayAttr(names));
    SmallVector<Value> yields;
    for (const Read &how : run.how)
      if (how.kind == Read::Carried)
        yields.push_back(layer->getResult(how.index));
    for (unsigned r : run.stackedResults)
      yields.push_back(insertLayer(body, loc, layer->getResult(r),
                                   loop.getRegionIterArg(iter++), index));
    for (unsigned q : run.stackedInputs)
      yields.push_back(insertLayer(body, loc, carriedIn[q],
                                   loop.getRegionIterArg(iter++), index));
    if (!yields.empty()) // else the loop has its terminator already
      scf::YieldOp::create(body, loc, yields);
    unsigned result =
        iter - run.stackedResults.size() - run.stackedInputs.size();
    for (unsigned r : run.stackedResults)
      run.resultStack[r] = loop.getResult(result++);
    for (unsigned q : run.stackedInputs)
      run.inputStack[q] = loop.getResult(result++);
  }
};

} // namespace
