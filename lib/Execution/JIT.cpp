//===- JIT.cpp - lower, JIT and call ds functions on host buffers ---------===//
#include "ds/Execution/JIT.h"

#include "ds/Execution/JitTarget.h"
#include "ds/Support/CInterface.h"

#include "dsrt/dsrt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <cstdlib>

using namespace mlir;
using namespace mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

} // namespace

struct Runner::TargetMachineHolder {
  std::unique_ptr<llvm::TargetMachine> tm;
};

Runner::Runner() = default;
Runner::~Runner() {
  if (releaseWorkspaces_)
    releaseWorkspaces_();
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
    // MLIR's lexer finds the end at a NUL; a StringRef need not have one.
    std::string text = source.str();
    module = parseSourceString<ModuleOp>(text, ctx.get(), sourceName);
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
  auto lowered = lowerForExecution(module, options);
  if (!lowered)
    return lowered.takeError();
  functions_ = std::move(lowered->functions);
  blasCallSites_ = lowered->blasCallSites;
  arenaBytes_ = lowered->arenaBytes;
  compileTimes_.mlirSeconds = lowered->mlirSeconds;
  using Clock = std::chrono::steady_clock;
  Clock::time_point llvmStart = Clock::now();

  // The host CPU, or the level DS_JIT_CPU names, so the O3 pipeline
  // vectorizes for the machine the code runs on.
  auto target = resolveJitTargetFromEnvironment();
  if (!target)
    return target.takeError();
  auto transformerTM = createTargetMachine(*target, /*jit=*/true);
  if (!transformerTM)
    return transformerTM.takeError();
  auto engineTM = createTargetMachine(*target, /*jit=*/true);
  if (!engineTM)
    return engineTM.takeError();
  tm_ = std::make_unique<TargetMachineHolder>();
  tm_->tm = std::move(*transformerTM);

  auto transformer = makeOptimizer(options.optLevel, tm_->tm.get());
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
  // The planned buffers, allocated at load (ds-workspaces-at-load).
  if (arenaBytes_ > 0) {
    auto init = engine_->lookup(mlir::ds::kWorkspacesInitSymbol);
    if (!init)
      return makeError("the JIT'd step has arenas but no workspace entry: " +
                       llvm::toString(init.takeError()));
    auto release = engine_->lookup(mlir::ds::kWorkspacesReleaseSymbol);
    if (!release)
      return makeError("the JIT'd step has arenas but no workspace entry: " +
                       llvm::toString(release.takeError()));
    if (llvm::Error err = initWorkspaces(
            reinterpret_cast<WorkspacesInit>(*init), "the JIT'd step"))
      return err;
    releaseWorkspaces_ = reinterpret_cast<WorkspacesRelease>(*release);
  }
  // Compile everything now, so the first call is not the slow one.
  for (const FunctionSignature &sig : functions_) {
    auto fn = engine_->lookupPacked(mlir::ds::cWrapperName(sig.name));
    if (!fn)
      return makeError("cannot compile @" + sig.name + ": " +
                       llvm::toString(fn.takeError()));
    entries_.push_back(reinterpret_cast<PackedEntry>(*fn));
    if (dumpObject)
      if (auto addr = engine_->lookup(mlir::ds::cWrapperName(sig.name)))
        llvm::errs() << "ds-jit: @" << sig.name << " (C interface) at " << *addr
                     << "\n";
  }
  if (dumpObject)
    engine_->dumpToObjectFile(dumpObject);
  compileTimes_.llvmSeconds =
      std::chrono::duration<double>(Clock::now() - llvmStart).count();
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
    for (const ValueInfo &r : sig->callerResults())
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
  return callPacked(entries_[sig - functions_.data()], *sig, inputs, outputs);
}
