//===- Outline.cpp - ops into functions shared by equal bodies ------------===//
//
// Bodies are compared by their printed generic form with a fixed name:
// equal text means equal ops, types, attributes and argument order (first
// use in a pre-order walk is the same for every instance of a body).
//
//===----------------------------------------------------------------------===//
#include "ds/Support/Outline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::ds;

namespace {

bool isCloneableConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->hasTrait<OpTrait::ConstantLike>();
}

struct Captures {
  llvm::SetVector<Value> args, constants;
};

Captures capturedValues(ArrayRef<Operation *> ops, ValueRange results) {
  llvm::SmallPtrSet<Operation *, 16> inRange(ops.begin(), ops.end());
  auto inside = [&](Value v) {
    Operation *owner = v.getDefiningOp();
    if (!owner)
      owner = v.getParentBlock()->getParentOp();
    for (; owner; owner = owner->getParentOp())
      if (inRange.contains(owner))
        return true;
    return false;
  };
  Captures c;
  auto use = [&](Value v) {
    if (inside(v))
      return;
    if (isCloneableConstant(v))
      c.constants.insert(v);
    else
      c.args.insert(v);
  };
  for (Operation *top : ops)
    top->walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value v : op->getOperands())
        use(v);
    });
  // A result may be a value from outside, passed through.
  for (Value v : results)
    use(v);
  return c;
}

func::FuncOp buildCandidate(ArrayRef<Operation *> ops, ValueRange results,
                            const Captures &c, ArrayRef<NamedAttribute> attrs) {
  Location loc = ops.front()->getLoc();
  MLIRContext *ctx = loc.getContext();
  SmallVector<Type> argTypes;
  for (Value v : c.args)
    argTypes.push_back(v.getType());
  auto type = FunctionType::get(ctx, argTypes, results.getTypes());
  OpBuilder b(ctx);
  auto fn = func::FuncOp::create(b, loc, "__candidate", type);
  fn.setPrivate();
  for (NamedAttribute attr : attrs)
    fn->setAttr(attr.getName(), attr.getValue());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(c.args, entry->getArguments()))
    map.map(v, arg);
  for (Value k : c.constants)
    map.map(k, b.clone(*k.getDefiningOp())
                   ->getResult(cast<OpResult>(k).getResultNumber()));
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> returned;
  for (Value v : results)
    returned.push_back(map.lookup(v));
  func::ReturnOp::create(b, loc, returned);
  return fn;
}

std::string printed(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  fn->print(os, OpPrintingFlags().printGenericOpForm());
  return text;
}

} // namespace

std::string FunctionOutliner::bodyKey(ArrayRef<Operation *> ops,
                                      ValueRange results,
                                      ArrayRef<NamedAttribute> attrs) {
  func::FuncOp candidate =
      buildCandidate(ops, results, capturedValues(ops, results), attrs);
  std::string key = printed(candidate);
  candidate.erase();
  return key;
}

FunctionOutliner::FunctionOutliner(ModuleOp module, llvm::StringRef countAttr)
    : symbols_(module), countAttr_(countAttr.str()) {}

func::CallOp FunctionOutliner::outline(OpBuilder &b, ArrayRef<Operation *> ops,
                                       ValueRange results,
                                       llvm::StringRef baseName,
                                       ArrayRef<NamedAttribute> attrs) {
  return outline(b, ops, results, bodyKey(ops, results, attrs), baseName,
                 attrs);
}

func::CallOp FunctionOutliner::outline(OpBuilder &b, ArrayRef<Operation *> ops,
                                       ValueRange results, llvm::StringRef key,
                                       llvm::StringRef baseName,
                                       ArrayRef<NamedAttribute> attrs) {
  Captures c = capturedValues(ops, results);
  func::FuncOp &fn = byBody_[key];
  if (fn) {
    int64_t count = fn->getAttrOfType<IntegerAttr>(countAttr_).getInt();
    fn->setAttr(countAttr_, b.getI64IntegerAttr(count + 1));
  } else {
    fn = buildCandidate(ops, results, c, attrs);
    std::string name = baseName.str();
    for (int i = 1; symbols_.lookup(name); ++i)
      name = baseName.str() + "_" + std::to_string(i);
    fn.setName(name);
    fn->setAttr(countAttr_, b.getI64IntegerAttr(1));
    // LLVM would inline a function called once, and its code generation
    // is superlinear in function size.
    fn->setAttr("passthrough", b.getStrArrayAttr({"noinline"}));
    symbols_.insert(fn);
  }
  auto call =
      func::CallOp::create(b, ops.front()->getLoc(), fn, c.args.getArrayRef());
  return call;
}
