//===- JIT.cpp - lower, JIT and call ds functions on host buffers ---------===//
#include "ds/Execution/JIT.h"

#include "ds/Execution/JitTarget.h"

#include "ds/Conversion/LinalgToRuntime.h"
#include "dsrt/dsrt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cstdlib>
#include <mutex>

using namespace mlir;
using namespace mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

// Collects a context's diagnostics while alive; errors go into the
// llvm::Error of the failing step, remarks and warnings to stderr.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          llvm::raw_string_ostream os(
              d.getSeverity() == DiagnosticSeverity::Error ? errors : others);
          os << d.getLocation() << ": " << severityName(d.getSeverity()) << ": "
             << d << "\n";
          for (Diagnostic &note : d.getNotes())
            os << note.getLocation() << ": note: " << note << "\n";
          return success();
        }) {}
  ~DiagnosticCapture() {
    if (!others.empty())
      llvm::errs() << others;
  }
  llvm::Error error(const llvm::Twine &what) {
    std::string msg = what.str();
    if (!errors.empty())
      msg += ":\n" + llvm::StringRef(errors).rtrim().str();
    errors.clear();
    return makeError(msg);
  }

private:
  static const char *severityName(DiagnosticSeverity s) {
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
  std::string errors, others;
  ScopedDiagnosticHandler handler;
};

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

// Row-major contiguous memref descriptor over `t`'s data:
// {allocated, aligned, offset, sizes[rank], strides[rank]}.
std::vector<int64_t> descriptorFor(const Tensor &t) {
  std::vector<int64_t> d(3 + 2 * t.rank());
  d[0] = d[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data()));
  d[2] = 0;
  int64_t stride = 1;
  for (int64_t i = t.rank() - 1; i >= 0; --i) {
    d[3 + i] = t.shape()[i];
    d[3 + t.rank() + i] = stride;
    stride *= t.shape()[i];
  }
  return d;
}

llvm::Error checkValue(const Tensor &t, const ValueInfo &info,
                       llvm::StringRef fn, llvm::StringRef what,
                       unsigned index) {
  if (t.isNull())
    return makeError("@" + fn + ": " + what + " " + llvm::Twine(index) +
                     " is a null tensor");
  bool ok = t.dtype() == info.dtype;
  if (info.isTensor) {
    ok = ok && t.rank() == static_cast<int64_t>(info.shape.size());
    for (int64_t i = 0; ok && i < t.rank(); ++i)
      ok =
          ShapedType::isDynamic(info.shape[i]) || info.shape[i] == t.shape()[i];
  } else {
    ok = ok && t.numElements() == 1;
  }
  if (ok)
    return llvm::Error::success();
  std::string expected = info.isTensor ? typeString(info.dtype, info.shape)
                                       : dtypeName(info.dtype).str();
  return makeError("@" + fn + ": " + what + " " + llvm::Twine(index) + " is " +
                   t.typeString() + " but the function takes " + expected);
}

} // namespace

struct Runner::TargetMachineHolder {
  std::unique_ptr<llvm::TargetMachine> tm;
};

Runner::Runner() = default;
Runner::~Runner() = default;

void mlir::ds::exec::registerRunnerDependencies(DialectRegistry &registry) {
  ds::registerLowerToLLVMDependencies(registry);
  registerAllToLLVMIRTranslations(registry);
}

llvm::Expected<std::unique_ptr<Runner>>
Runner::create(ModuleOp module, const RunnerOptions &options) {
  DialectRegistry registry;
  registerRunnerDependencies(registry);
  if (options.registerDialects)
    options.registerDialects(registry);
  module->getContext()->appendDialectRegistry(registry);
  std::unique_ptr<Runner> runner(new Runner());
  if (llvm::Error err = runner->lowerAndLoad(module, options))
    return std::move(err);
  return runner;
}

llvm::Expected<std::unique_ptr<Runner>>
Runner::fromSource(llvm::StringRef source, const RunnerOptions &options,
                   llvm::StringRef sourceName) {
  DialectRegistry registry;
  registerRunnerDependencies(registry);
  if (options.registerDialects)
    options.registerDialects(registry);
  auto ctx = std::make_unique<MLIRContext>(registry);
  OwningOpRef<ModuleOp> module;
  {
    DiagnosticCapture diags(ctx.get());
    module = parseSourceString<ModuleOp>(source, ctx.get(), sourceName);
    if (!module)
      return diags.error("cannot parse the input");
  }
  std::unique_ptr<Runner> runner(new Runner());
  if (llvm::Error err = runner->lowerAndLoad(*module, options))
    return std::move(err);
  runner->ownedModule_ = std::move(module);
  runner->ownedContext_ = std::move(ctx);
  return runner;
}

llvm::Expected<std::unique_ptr<Runner>>
Runner::fromFile(llvm::StringRef path, const RunnerOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  return fromSource((*buffer)->getBuffer(), options, path);
}

llvm::Error Runner::lowerAndLoad(ModuleOp module,
                                 const RunnerOptions &options) {
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
    FunctionSignature sig;
    sig.name = fn.getName().str();
    for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
      auto info = valueInfo(type, sig.name, "argument", i);
      if (!info)
        return info.takeError();
      sig.inputs.push_back(*info);
    }
    int scalars = 0;
    for (auto [i, type] : llvm::enumerate(fn.getResultTypes())) {
      auto info = valueInfo(type, sig.name, "result", i);
      if (!info)
        return info.takeError();
      if (info->isTensor && llvm::any_of(info->shape, ShapedType::isDynamic))
        return makeError("@" + sig.name + ": result " + llvm::Twine(i) +
                         " has a dynamic shape; results become "
                         "caller-allocated buffers and need static shapes");
      if (!info->isTensor && ++scalars > 1)
        return makeError("@" + sig.name +
                         ": more than one scalar result; return tensors");
      sig.results.push_back(*info);
    }
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(ctx));
    // Inputs are the caller's: bufferization must not write into them.
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (isa<TensorType>(fn.getArgument(i).getType()))
        fn.setArgAttr(i, "bufferization.writable", BoolAttr::get(ctx, false));
    functions_.push_back(std::move(sig));
  }

  {
    PassManager pm(ctx);
    ds::LowerToLLVMPipelineOptions pipeline;
    pipeline.fuseElementwise = options.fuseElementwise;
    pipeline.planBuffers = options.planBuffers;
    pipeline.reuseBuffers = options.reuseBuffers;
    pipeline.blas = options.blas;
    pipeline.outlineKernels = options.outlineKernels;
    pipeline.report = options.report;
    pipeline.outParams = true; // the calling convention below relies on it
    ds::buildLowerToLLVMPipeline(pm, pipeline);
    if (failed(pm.run(module)))
      return diags.error("lowering to LLVM failed");
  }
  compileTimes_.mlirSeconds = seconds(mlirStart);
  if (options.onStage)
    options.onStage("llvm", module);
  Clock::time_point llvmStart = Clock::now();

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
  for (const FunctionSignature &sig : functions_)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(sig.name)) {
      fn.setLinkage(LLVM::Linkage::Internal);
      fn.setNoInline(true);
    }
  module.walk([&](LLVM::CallOp call) {
    if (auto callee = call.getCallee();
        callee && callee->starts_with(ds::kSgemmSymbol))
      ++blasCallSites_;
  });
  for (FunctionSignature &sig : functions_)
    if (auto arena =
            module.lookupSymbol<LLVM::GlobalOp>("__ds_arena_" + sig.name))
      if (auto array = dyn_cast<LLVM::LLVMArrayType>(arena.getType()))
        sig.workspaceBytes = static_cast<int64_t>(array.getNumElements());

  static std::once_flag nativeTargetOnce;
  std::call_once(nativeTargetOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  // The host CPU, or the level DS_JIT_CPU names, so the O3 pipeline
  // vectorizes for the machine the code runs on.
  auto target = resolveJitTargetFromEnvironment();
  if (!target)
    return target.takeError();
  auto makeTM = [&]() -> llvm::Expected<std::unique_ptr<llvm::TargetMachine>> {
    llvm::orc::JITTargetMachineBuilder builder(
        llvm::Triple(llvm::sys::getProcessTriple()));
    builder.setCPU(target->cpu);
    builder.addFeatures(target->features);
    builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    return builder.createTargetMachine();
  };
  auto transformerTM = makeTM();
  if (!transformerTM)
    return transformerTM.takeError();
  auto engineTM = makeTM();
  if (!engineTM)
    return engineTM.takeError();
  tm_ = std::make_unique<TargetMachineHolder>();
  tm_->tm = std::move(*transformerTM);

  auto transformer = makeOptimizingTransformer(options.optLevel,
                                               /*sizeLevel=*/0, tm_->tm.get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = options.optLevel >= 3
                                         ? llvm::CodeGenOptLevel::Aggressive
                                         : llvm::CodeGenOptLevel::Default;
  // DS_JIT_PERF=1: register JIT'd code with perf/gdb (profiling sessions).
  bool listeners = std::getenv("DS_JIT_PERF") != nullptr;
  engineOptions.enableGDBNotificationListener = listeners;
  engineOptions.enablePerfNotificationListener = listeners;
  // DS_JIT_DUMP_OBJECT=FILE: write the compiled object (disassembly when
  // profiling; function addresses are printed to stderr).
  const char *dumpObject = std::getenv("DS_JIT_DUMP_OBJECT");
  engineOptions.enableObjectDump = dumpObject != nullptr;
  auto engine =
      ExecutionEngine::create(module, engineOptions, std::move(*engineTM));
  if (!engine)
    return makeError("cannot create the JIT: " +
                     llvm::toString(engine.takeError()));
  engine_ = std::move(*engine);

  // dsrt_* from the linked runtime, by its own table (no dlsym, no drift).
  engine_->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    const dsrt_symbol *table = nullptr;
    int64_t count = 0;
    if (dsrt_symbol_table(&table, &count) == DSRT_OK)
      for (int64_t i = 0; i < count; ++i)
        map[interner(table[i].name)] = {
            llvm::orc::ExecutorAddr::fromPtr(table[i].address),
            llvm::JITSymbolFlags::Exported};
    return map;
  });
  engine_->initialize();
  // Compile everything now, so the first call is not the slow one.
  for (const FunctionSignature &sig : functions_) {
    if (auto fn = engine_->lookupPacked("_mlir_ciface_" + sig.name); !fn)
      return makeError("cannot compile @" + sig.name + ": " +
                       llvm::toString(fn.takeError()));
    if (dumpObject)
      if (auto addr = engine_->lookup(sig.name))
        llvm::errs() << "ds-jit: @" << sig.name << " at " << *addr << "\n";
  }
  if (dumpObject)
    engine_->dumpToObjectFile(dumpObject);
  compileTimes_.llvmSeconds = seconds(llvmStart);
  return llvm::Error::success();
}

std::vector<std::string> Runner::functionNames() const {
  std::vector<std::string> names;
  for (const FunctionSignature &sig : functions_)
    names.push_back(sig.name);
  return names;
}

const FunctionSignature *Runner::signature(llvm::StringRef name) const {
  for (const FunctionSignature &sig : functions_)
    if (sig.name == name)
      return &sig;
  return nullptr;
}

llvm::Expected<std::vector<Tensor>>
Runner::invoke(llvm::StringRef name, llvm::ArrayRef<Tensor> inputs) {
  const FunctionSignature *sig = signature(name);
  std::vector<Tensor> outputs;
  if (sig)
    for (const ValueInfo &r : sig->results)
      outputs.push_back(Tensor::zeros(r.dtype, r.shape));
  if (llvm::Error err = invokeInto(name, inputs, outputs))
    return std::move(err);
  return outputs;
}

llvm::Error Runner::invokeInto(llvm::StringRef name,
                               llvm::ArrayRef<Tensor> inputs,
                               llvm::ArrayRef<Tensor> outputs) {
  const FunctionSignature *sig = signature(name);
  if (!sig) {
    std::string names;
    for (const FunctionSignature &s : functions_)
      names += (names.empty() ? "@" : ", @") + s.name;
    return makeError("no public function @" + name + " (the module has " +
                     (names.empty() ? std::string("none") : names) + ")");
  }
  if (inputs.size() != sig->inputs.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig->inputs.size()) +
                     " input(s), got " + llvm::Twine(inputs.size()));
  if (outputs.size() != sig->results.size())
    return makeError("@" + name + " has " + llvm::Twine(sig->results.size()) +
                     " result(s), got " + llvm::Twine(outputs.size()) +
                     " output buffer(s)");

  size_t n = inputs.size() + outputs.size();
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPtrs;
  descriptors.reserve(n);
  descriptorPtrs.reserve(n); // stable: args point into it
  llvm::SmallVector<void *> args;
  auto pushTensor = [&](const Tensor &t) {
    descriptors.push_back(descriptorFor(t));
    descriptorPtrs.push_back(descriptors.back().data());
    args.push_back(&descriptorPtrs.back());
  };
  for (auto [i, t] : llvm::enumerate(inputs)) {
    if (llvm::Error err = checkValue(t, sig->inputs[i], name, "input", i))
      return err;
    if (sig->inputs[i].isTensor)
      pushTensor(t);
    else
      args.push_back(t.data()); // scalars by value: the wrapper loads it
  }
  // Tensor results are trailing out-params; a scalar result is returned,
  // and the packed wrapper stores it through the last pointer.
  void *scalarResult = nullptr;
  for (auto [i, t] : llvm::enumerate(outputs)) {
    if (llvm::Error err = checkValue(t, sig->results[i], name, "output", i))
      return err;
    if (sig->results[i].isTensor)
      pushTensor(t);
    else
      scalarResult = t.data();
  }
  if (scalarResult)
    args.push_back(scalarResult);

  dsrt_error_clear();
  if (llvm::Error err =
          engine_->invokePacked(("_mlir_ciface_" + name).str(), args))
    return err;
  if (const char *msg = dsrt_last_error(); msg && *msg)
    return makeError("@" + name + ": runtime error: " + msg);
  return llvm::Error::success();
}
