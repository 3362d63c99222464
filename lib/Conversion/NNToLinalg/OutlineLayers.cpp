//===- OutlineLayers.cpp - The ds-outline-layers pass ---------------------===//
//
// One function per distinct layer body, called once per layer: compile time
// then grows with the number of distinct layers, not with depth.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/Outline.h"
#include "ds/Support/RuntimeSymbols.h"
#include "ds/Transforms/Passes.h"
#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ds {
#define GEN_PASS_DEF_OUTLINELAYERS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

/// layer_<type>[_backward], made a C identifier (LLVM and the artifact
/// loader see these names).
std::string baseName(nn::LayerOp layer) {
  std::string name = "layer_";
  for (char c : layer.getLayerType())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (layer->hasAttr("backward"))
    name += "_backward";
  return name;
}

constexpr llvm::StringLiteral kTraceBegin = "dsrt_trace_begin";
constexpr llvm::StringLiteral kTraceEnd = "dsrt_trace_end";

/// The timeline's marks around each top-level layer call: libdsrt's
/// dsrt_trace_begin(name, backward) and dsrt_trace_end(), which return at
/// once unless `ds-train --trace` records. The names are constant C strings
/// in the module.
class TraceMarks {
public:
  explicit TraceMarks(ModuleOp module) : module(module), symbols(module) {
    Builder b(module.getContext());
    auto ptr = LLVM::LLVMPointerType::get(module.getContext());
    begin = declareRuntimeFunction(
        module, symbols, kTraceBegin,
        b.getFunctionType({ptr, b.getI32Type()}, {}));
    end = declareRuntimeFunction(module, symbols, kTraceEnd,
                                 b.getFunctionType({}, {}));
  }

  void around(func::CallOp call, StringRef layerName, bool backward) {
    OpBuilder b(call);
    Value name = LLVM::AddressOfOp::create(b, call.getLoc(), global(layerName));
    around(call, name, backward);
  }

  /// Around a call in the body of `loop`, named by iteration: iteration j
  /// reads `names[j]` from a table of equal-width C strings.
  void around(func::CallOp call, ArrayAttr names, scf::ForOp loop,
              bool backward) {
    size_t width = 1;
    for (auto n : names.getAsValueRange<StringAttr>())
      width = std::max(width, n.size() + 1);
    std::string table;
    for (auto n : names.getAsValueRange<StringAttr>()) {
      table += n.str();
      table.resize(table.size() + width - n.size(), '\0');
    }
    table.pop_back(); // the constant ends in a NUL of its own
    OpBuilder b(call);
    Location loc = call.getLoc();
    Value base = LLVM::AddressOfOp::create(b, loc, global(table));
    Value offset =
        arith::MulIOp::create(b, loc, loop.getInductionVar(),
                              arith::ConstantIndexOp::create(b, loc, width));
    offset = arith::IndexCastOp::create(b, loc, b.getI64Type(), offset);
    Value name = LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(),
                                     base, ValueRange{offset});
    around(call, name, backward);
  }

private:
  void around(func::CallOp call, Value name, bool backward) {
    OpBuilder b(call);
    Location loc = call.getLoc();
    Value kind = arith::ConstantIntOp::create(b, loc, backward ? 1 : 0, 32);
    func::CallOp::create(b, loc, begin, ValueRange{name, kind});
    b.setInsertionPointAfter(call);
    func::CallOp::create(b, loc, end, ValueRange{});
  }

  /// A constant holding `text` and a terminating NUL.
  LLVM::GlobalOp global(StringRef text) {
    LLVM::GlobalOp &g = globals[text];
    if (!g)
      g = createCString(module, symbols, text, "ds_layer_name");
    return g;
  }

  ModuleOp module;
  SymbolTable symbols;
  func::FuncOp begin, end;
  llvm::StringMap<LLVM::GlobalOp> globals;
};

/// A layer function argument some call passes a slice of a stacked tensor
/// (ds-stack-layers) bufferizes to a buffer with the slice's dynamic offset
/// and the contiguous strides of its shape, so that the call passes a view
/// instead of a copy made for every layer and step.
void passSlicesInPlace(ModuleOp module) {
  SymbolTableCollection symbols;
  module.walk([&](func::CallOp call) {
    auto callee =
        dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&symbols));
    if (!callee || !callee->hasAttr("dsnn.layer_count"))
      return;
    for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
      auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>();
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!slice || !slice.hasUnitStride() || !type || !type.hasStaticShape())
        continue;
      SmallVector<int64_t> strides(type.getRank(), 1);
      for (int64_t d = type.getRank() - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * type.getDimSize(d + 1);
      callee.setArgAttr(
          i, bufferization::BufferizationDialect::kBufferLayoutAttrName,
          StridedLayoutAttr::get(call.getContext(), ShapedType::kDynamic,
                                 strides));
    }
  });
}

struct OutlineLayersPass : ds::impl::OutlineLayersBase<OutlineLayersPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registry.insert<arith::ArithDialect, LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    // Inner layers first, so an outer body holds calls when it is compared.
    SmallVector<nn::LayerOp> layers;
    getOperation().walk<WalkOrder::PostOrder>(
        [&](nn::LayerOp layer) { layers.push_back(layer); });
    if (layers.empty())
      return;
    // Marks only around top-level layers: an inner layer's name would make
    // otherwise equal outer bodies differ.
    struct Marked {
      func::CallOp call;
      std::string name;
      bool backward;
      ArrayAttr iterationNames; // with the loop running them, if any
      scf::ForOp loop;
    };
    SmallVector<Marked> marked;
    FunctionOutliner outliner(getOperation(), "dsnn.layer_count");
    for (nn::LayerOp layer : layers) {
      Block &body = layer.getBody().front();
      SmallVector<Operation *> ops;
      for (Operation &op : body.without_terminator())
        ops.push_back(&op);
      if (ops.empty()) // nothing to compile: the yielded values are outside
        continue;
      OpBuilder b(layer);
      NamedAttribute type(b.getStringAttr("dsnn.layer_type"),
                          layer.getLayerTypeAttr());
      func::CallOp call = outliner.outline(
          b, ops, body.getTerminator()->getOperands(), baseName(layer), {type});
      layer.replaceAllUsesWith(call.getResults());
      if (!layer->getParentOfType<nn::LayerOp>()) {
        Marked m{call, layer.getLayerName().str(), layer->hasAttr("backward"),
                 layer->getAttrOfType<ArrayAttr>(nn::kIterationNamesAttrName),
                 dyn_cast<scf::ForOp>(layer->getParentOp())};
        if (!m.loop || !m.iterationNames)
          m.iterationNames = nullptr;
        marked.push_back(m);
      }
      layer.erase();
    }
    passSlicesInPlace(getOperation());
    // After outlining: the outliner's symbol table must not see these.
    TraceMarks marks(getOperation());
    for (Marked &m : marked) {
      if (m.iterationNames)
        marks.around(m.call, m.iterationNames, m.loop, m.backward);
      else
        marks.around(m.call, m.name, m.backward);
    }
  }
};

} // namespace
