//===- Lowering.cpp - A ds module down to LLVM IR, for any backend --------===//
#include "ds/Execution/Lowering.h"

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Execution/PackedCall.h"
#include "ds/Support/CInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

const char *severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "diagnostic";
}

llvm::Expected<ValueInfo> valueInfo(Type type, llvm::StringRef fn,
                                    llvm::StringRef what, unsigned index) {
  auto fail = [&]() {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "@" << fn << ": " << what << " " << index << " has type " << type
       << ", which the JIT cannot pass (tensors, identity-layout memrefs and "
          "int/float/index scalars)";
    return makeError(s);
  };
  ValueInfo info;
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!shaped.hasRank() || (memref && !memref.getLayout().isIdentity()) ||
        !(isa<RankedTensorType>(type) || memref))
      return fail();
    std::optional<DType> dt = dtypeOf(shaped.getElementType());
    if (!dt)
      return fail();
    info.dtype = *dt;
    info.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
    info.isTensor = true;
    return info;
  }
  std::optional<DType> dt = dtypeOf(type);
  if (!dt)
    return fail();
  info.dtype = *dt;
  info.isTensor = false;
  return info;
}

/// The caller positions `info` takes (kStackAttrName in `attrs`), if any.
llvm::Error readStack(DictionaryAttr attrs, ValueInfo &info, llvm::StringRef fn,
                      llvm::StringRef what, unsigned index) {
  Attribute stack = attrs ? attrs.get(mlir::ds::kStackAttrName) : Attribute();
  if (!stack)
    return llvm::Error::success();
  auto positions = dyn_cast<DenseI64ArrayAttr>(stack);
  if (!positions || positions.empty())
    return makeError("@" + fn + ": " + what + " " + llvm::Twine(index) + ": " +
                     mlir::ds::kStackAttrName +
                     " must be a non-empty array<i64: ...> of caller "
                     "positions");
  info.stack.assign(positions.asArrayRef().begin(),
                    positions.asArrayRef().end());
  return llvm::Error::success();
}

/// The glue of a step: every defined function that is not a layer or
/// kernel function (the entry point, holding @forward_backward since
/// ds-inline-glue). It is straight-line calls, copies and descriptor moves
/// growing with depth, on which LLVM's instruction scheduling and register
/// allocation are superlinear and optimization buys nothing; the
/// arithmetic lives in the layer and kernel functions, which keep the full
/// pipeline. optnone needs noinline.
void markGlueOptimizeNone(ModuleOp module) {
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
    if (fn.isExternal() || fn->hasAttr("dsnn.layer_count") ||
        fn->hasAttr("ds.kernel_count"))
      continue;
    fn.setOptimizeNone(true);
    fn.setNoInline(true);
  }
}

/// Turns entry point `name`'s C wrapper, which holds its body
/// (ds-inline-into-c-wrappers), into the packed wrapper callers use,
/// `_mlir__mlir_ciface_<name>(void **args)` (PackedCall.h): argument i is
/// loaded through args[i] where it is used, a returned value is stored
/// through the last pointer. A step takes thousands of descriptor pointers;
/// as parameters of the body, most of them passed on the stack, LLVM
/// lowers them as one block of loads whose scheduling is superlinear in
/// their number, and the packed wrapper that called it was one call
/// passing all of them.
void packEntryPoint(ModuleOp module, llvm::StringRef name) {
  auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(mlir::ds::cWrapperName(name));
  if (!fn || fn.isExternal())
    return;
  MLIRContext *ctx = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(fn);
  auto packed = LLVM::LLVMFuncOp::create(
      b, fn.getLoc(), packedEntrySymbol(name),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
  for (llvm::StringRef attr :
       {"dsnn.layer_count", "ds.kernel_count", "ds.workspace_bytes"})
    if (Attribute value = fn->getAttr(attr))
      packed->setAttr(attr, value);
  packed.getBody().takeBody(fn.getBody());
  Block &entry = packed.getBody().front();
  unsigned n = entry.getNumArguments();
  Value args = entry.addArgument(ptr, fn.getLoc());
  // The address of argument (or result) slot i, loaded where it is needed.
  auto slot = [&](OpBuilder &at, Location loc, int64_t i) -> Value {
    Value p = LLVM::GEPOp::create(at, loc, ptr, ptr, args,
                                  llvm::ArrayRef<LLVM::GEPArg>{i});
    return LLVM::LoadOp::create(at, loc, ptr, p);
  };
  for (unsigned i = 0; i < n; ++i) {
    BlockArgument arg = entry.getArgument(i);
    for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
      OpBuilder at(use.getOwner());
      Location loc = use.getOwner()->getLoc();
      use.set(LLVM::LoadOp::create(at, loc, arg.getType(), slot(at, loc, i)));
    }
  }
  packed.walk([&](LLVM::ReturnOp ret) {
    OpBuilder at(ret);
    if (ret.getNumOperands() == 1)
      LLVM::StoreOp::create(at, ret.getLoc(), ret.getOperand(0),
                            slot(at, ret.getLoc(), n));
    LLVM::ReturnOp::create(at, ret.getLoc(), ValueRange{});
    ret.erase();
  });
  entry.eraseArguments(0, n);
  fn.erase();
}

} // namespace

DiagnosticCapture::DiagnosticCapture(MLIRContext *ctx)
    : handler(
          std::make_unique<ScopedDiagnosticHandler>(ctx, [this](Diagnostic &d) {
            llvm::raw_string_ostream os(
                d.getSeverity() == DiagnosticSeverity::Error ? errors : others);
            os << d.getLocation() << ": " << severityName(d.getSeverity())
               << ": " << d << "\n";
            for (Diagnostic &note : d.getNotes())
              os << note.getLocation() << ": note: " << note << "\n";
            return success();
          })) {}

DiagnosticCapture::~DiagnosticCapture() {
  handler.reset();
  if (!others.empty())
    llvm::errs() << others;
}

llvm::Error DiagnosticCapture::error(const llvm::Twine &what) {
  std::string msg = what.str();
  if (!errors.empty())
    msg += ":\n" + llvm::StringRef(errors).rtrim().str();
  errors.clear();
  return makeError(msg);
}

void mlir::ds::exec::registerRunnerDependencies(DialectRegistry &registry) {
  ds::registerLowerToLLVMDependencies(registry);
  registerAllToLLVMIRTranslations(registry);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::ds::exec::createTargetMachine(const JitTarget &target, bool jit) {
  static std::once_flag nativeTargetOnce;
  std::call_once(nativeTargetOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::orc::JITTargetMachineBuilder builder{
      llvm::Triple(llvm::sys::getProcessTriple())};
  builder.setCPU(target.cpu);
  builder.addFeatures(target.features);
  builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  if (jit)
    return builder.createTargetMachine();
  // The same target, options and level, as position-independent code for
  // a shared object.
  std::string error;
  const llvm::Target *t =
      llvm::TargetRegistry::lookupTarget(builder.getTargetTriple(), error);
  if (!t)
    return makeError("no LLVM target for " + builder.getTargetTriple().str() +
                     ": " + error);
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      builder.getTargetTriple(), builder.getCPU(),
      builder.getFeatures().getString(), builder.getOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

std::function<llvm::Error(llvm::Module *)>
mlir::ds::exec::makeOptimizer(unsigned optLevel, llvm::TargetMachine *tm) {
  if (optLevel != 3)
    return makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm);
  // LLVM's O3, as makeOptimizingTransformer builds it, less
  // CalledValuePropagation: it annotates indirect calls, of which compiled
  // steps have none, and is superlinear in the size of a step's entry
  // point (a fifth of code generation at 96 layers).
  return [tm](llvm::Module *module) -> llvm::Error {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassInstrumentationCallbacks callbacks;
    callbacks.registerShouldRunOptionalPassCallback(
        [](llvm::StringRef pass, llvm::Any) {
          return pass != "CalledValuePropagationPass";
        });
    // Function passes skip optnone functions (the step's glue).
    llvm::OptNoneInstrumentation optNone(/*DebugLogging=*/false);
    optNone.registerCallbacks(callbacks);
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = true;
    tuning.LoopInterleaving = true;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder builder(tm, tuning, std::nullopt, &callbacks);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager pipeline =
        builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    pipeline.run(*module, mam);
    return llvm::Error::success();
  };
}

llvm::Expected<FunctionSignature> mlir::ds::exec::signatureOf(func::FuncOp fn) {
  FunctionSignature sig;
  sig.name = fn.getName().str();
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
    auto info = valueInfo(type, sig.name, "argument", i);
    if (!info)
      return info.takeError();
    if (llvm::Error err =
            readStack(fn.getArgAttrDict(i), *info, sig.name, "argument", i))
      return err;
    sig.inputs.push_back(*info);
  }
  int scalars = 0;
  for (auto [i, type] : llvm::enumerate(fn.getResultTypes())) {
    auto info = valueInfo(type, sig.name, "result", i);
    if (!info)
      return info.takeError();
    if (llvm::Error err =
            readStack(fn.getResultAttrDict(i), *info, sig.name, "result", i))
      return err;
    if (info->isTensor && llvm::any_of(info->shape, ShapedType::isDynamic))
      return makeError("@" + sig.name + ": result " + llvm::Twine(i) +
                       " has a dynamic shape; results become "
                       "caller-allocated buffers and need static shapes");
    if (!info->isTensor && ++scalars > 1)
      return makeError("@" + sig.name +
                       ": more than one scalar result; return tensors");
    sig.results.push_back(*info);
  }
  for (auto [values, what] :
       {std::pair{&sig.inputs, "argument"}, std::pair{&sig.results, "result"}})
    if (auto layout = callerLayout(*values, sig.name, what); !layout)
      return layout.takeError();
  return sig;
}

llvm::Expected<LoweredModule>
mlir::ds::exec::lowerForExecution(ModuleOp module,
                                  const RunnerOptions &options) {
  LoweredModule lowered;
  std::vector<FunctionSignature> &functions = lowered.functions;
  MLIRContext *ctx = module.getContext();
  DiagnosticCapture diags(ctx);
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  Clock::time_point mlirStart = Clock::now();

  if (options.preLowering) {
    PassManager pm(ctx);
    options.preLowering(pm);
    if (failed(pm.run(module)))
      return diags.error("the pre-lowering passes failed");
  }
  if (options.onStage)
    options.onStage("pre", module);

  // Only the requested entry points stay public; symbol-dce drops the
  // functions they do not call, which then need no compiling.
  if (!options.entryPoints.empty()) {
    for (const std::string &name : options.entryPoints) {
      auto fn = module.lookupSymbol<func::FuncOp>(name);
      if (fn && !fn.isExternal())
        continue;
      std::string names;
      for (auto f : module.getOps<func::FuncOp>())
        if (!f.isExternal())
          names += (names.empty() ? "@" : ", @") + f.getName().str();
      return makeError("no function @" + name + " (the module has " +
                       (names.empty() ? std::string("none") : names) + ")");
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal() &&
          !llvm::is_contained(options.entryPoints, fn.getName().str()))
        fn.setPrivate();
    PassManager pm(ctx);
    pm.addPass(createSymbolDCEPass());
    if (failed(pm.run(module)))
      return diags.error("dropping unused functions failed");
  }

  // The caller-visible signatures, before bufferization rewrites them.
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || !fn.isPublic())
      continue;
    auto sig = signatureOf(fn);
    if (!sig)
      return sig.takeError();
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(ctx));
    // Inputs are the caller's: bufferization must not write into them.
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (isa<TensorType>(fn.getArgument(i).getType()))
        fn.setArgAttr(i, "bufferization.writable", BoolAttr::get(ctx, false));
    functions.push_back(std::move(*sig));
  }

  {
    PassManager pm(ctx);
    // Verified once below rather than after each of its ~40 passes: at 96
    // layers verifying the step's glue after every pass took half of the
    // MLIR time. Each pass is verified on its own by its lit tests.
    pm.enableVerifier(false);
    ds::LowerToLLVMPipelineOptions pipeline;
    pipeline.fuseElementwise = options.fuseElementwise;
    pipeline.elementwiseInPlace = options.elementwiseInPlace;
    pipeline.planBuffers = options.planBuffers;
    pipeline.reuseBuffers = options.reuseBuffers;
    pipeline.blas = options.blas;
    pipeline.outlineKernels = options.outlineKernels;
    pipeline.profile = options.profile;
    pipeline.target = options.target;
    pipeline.cudaToolkit = options.cudaToolkit;
    pipeline.report = options.report;
    pipeline.outParams = true; // the calling convention below relies on it
    ds::buildLowerToLLVMPipeline(pm, pipeline);
    if (failed(pm.run(module)))
      return diags.error("lowering to LLVM failed");
  }
  // Heap buffers through libdsrt, which counts them (dsrt_mem_peak_bytes).
  for (auto [libc, dsrt] : {std::pair{"malloc", "dsrt_malloc"},
                            std::pair{"aligned_alloc", "dsrt_aligned_alloc"},
                            std::pair{"free", "dsrt_free"}})
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(libc)) {
      if (failed(SymbolTable::replaceAllSymbolUses(
              fn, StringAttr::get(ctx, dsrt), module)))
        return diags.error(llvm::Twine("cannot redirect ") + libc);
      SymbolTable::setSymbolName(fn, dsrt);
    }
  for (const FunctionSignature &sig : functions)
    packEntryPoint(module, sig.name);
  // Without kernel outlining the glue still holds loops.
  if (options.outlineKernels)
    markGlueOptimizeNone(module);
  if (failed(verify(module)))
    return diags.error("the lowering produced invalid IR");
  lowered.mlirSeconds = seconds(mlirStart);
  if (options.onStage)
    options.onStage("llvm", module);

  // Argument attributes of other dialects (dsnn.param, ...) mean nothing to
  // LLVM and would each be a translation warning.
  module.walk([&](LLVM::LLVMFuncOp llvmFn) {
    auto fn = cast<FunctionOpInterface>(llvmFn.getOperation());
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      ArrayRef<NamedAttribute> attrs = fn.getArgAttrs(i);
      SmallVector<NamedAttribute> keep;
      for (NamedAttribute attr : attrs)
        if (attr.getName().strref().starts_with("llvm."))
          keep.push_back(attr);
      if (keep.size() != attrs.size())
        fn.setArgAttrs(i, keep);
    }
  });
  // Callers use the C wrappers only. ExecutionEngine would also give each
  // entry point a packed wrapper: one call passing every memref field
  // (thousands of stack stores in one basic block for a step, on which
  // LLVM's code generation is superlinear). Internal, it gets none; not
  // inlined, its body stays out of the wrapper's one block of loads.
  for (const FunctionSignature &sig : functions)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(sig.name)) {
      fn.setLinkage(LLVM::Linkage::Internal);
      fn.setNoInline(true);
    }
  module.walk([&](LLVM::CallOp call) {
    if (auto callee = call.getCallee();
        callee && (callee->starts_with(ds::kSgemmSymbol) ||
                   callee->starts_with(ds::kGemmBF16Symbol)))
      ++lowered.blasCallSites;
  });
  // The arenas, allocated at load (ds-workspaces-at-load).
  auto arenaBytes = [](LLVM::GlobalOp global) -> int64_t {
    auto bytes = global->getAttrOfType<IntegerAttr>(ds::kWorkspaceBytesAttr);
    return bytes ? bytes.getInt() : 0;
  };
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getSymName().starts_with(ds::kArenaPrefix))
      lowered.arenaBytes += arenaBytes(global);
  for (FunctionSignature &sig : functions)
    if (auto arena = module.lookupSymbol<LLVM::GlobalOp>(
            (ds::kArenaPrefix + sig.name).str()))
      sig.workspaceBytes = arenaBytes(arena);
  return lowered;
}
