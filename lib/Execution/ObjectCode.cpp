//===- ObjectCode.cpp - A ds module compiled into a shared object ---------===//
#include "ds/Execution/ObjectCode.h"

#include "ds/Support/CInterface.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <chrono>

using namespace mlir;
using namespace mlir::ds::exec;

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

/// `_mlir__mlir_ciface_f(void **args)`: loads argument i through args[i],
/// calls the C interface, stores a returned value through args[n]. The JIT
/// gets the same wrapper from ExecutionEngine, so the modules both
/// backends optimize are the same.
void addPackedWrapper(llvm::Module &module, llvm::Function &callee,
                      const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  auto *type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false);
  auto *wrapper = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, name, module);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value *argv = wrapper->getArg(0);
  llvm::SmallVector<llvm::Value *> args;
  for (llvm::Argument &arg : callee.args()) {
    llvm::Value *slot =
        b.CreateGEP(b.getPtrTy(), argv, b.getInt64(arg.getArgNo()));
    args.push_back(
        b.CreateLoad(arg.getType(), b.CreateLoad(b.getPtrTy(), slot)));
  }
  llvm::Value *result = b.CreateCall(&callee, args);
  if (!result->getType()->isVoidTy()) {
    llvm::Value *slot =
        b.CreateGEP(b.getPtrTy(), argv, b.getInt64(args.size()));
    b.CreateStore(result, b.CreateLoad(b.getPtrTy(), slot));
  }
  b.CreateRetVoid();
}

llvm::Error writeObject(llvm::Module &module, llvm::TargetMachine &tm,
                        const std::string &path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError(path + ": cannot write: " + ec.message());
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return makeError("the target cannot emit object files");
  pm.run(module);
  os.close();
  if (os.has_error())
    return makeError(path + ": cannot write: " + os.error().message());
  return llvm::Error::success();
}

/// Moves the step's glue, the functions the lowering marked optnone
/// (lib/Execution/Lowering.cpp), out of `module` into a module of its own,
/// which is compiled at CodeGenOptLevel::None. LLVM picks the register
/// allocator per module, not per function: at O3 the greedy allocator
/// spent ~2 s on the glue of a 96-layer step, a straight block of
/// thousands of calls and loads that the fast allocator takes as it
/// comes. Local symbols either side reads become hidden externals; the
/// shared object exports only the packed entries anyway. Returns null when
/// there is no glue.
std::unique_ptr<llvm::Module> splitGlue(llvm::Module &module) {
  llvm::SmallPtrSet<const llvm::GlobalValue *, 8> glue;
  llvm::SmallVector<llvm::Function *> bodies;
  for (llvm::Function &fn : module)
    if (!fn.isDeclaration() && fn.hasOptNone()) {
      glue.insert(&fn);
      bodies.push_back(&fn);
    }
  if (glue.empty())
    return nullptr;
  for (llvm::GlobalValue &value : module.global_values()) {
    if (value.isDeclaration() || !value.hasLocalLinkage())
      continue;
    if (!value.hasName())
      value.setName("__ds_local");
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> glueModule =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
        return glue.contains(value);
      });
  for (llvm::Function *fn : bodies)
    fn->deleteBody();
  return glueModule;
}

llvm::Error link(llvm::ArrayRef<std::string> objects, const std::string &so) {
  std::string linker = sharedObjectLinker();
  if (linker.empty())
    return makeError("cannot link the compiled step: no ld.lld on this "
                     "machine (install lld, e.g. apt install lld-22)");
  // No DT_NEEDED: dsrt_* and libm bind to the loading process's copies.
  llvm::SmallVector<llvm::StringRef> argv = {
      linker, "-shared", "--hash-style=gnu", "-z", "noexecstack", "-z", "relro",
      "-o",   so};
  argv.append(objects.begin(), objects.end());
  std::string message;
  std::string errorFile = so + ".link-errors";
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(errorFile)};
  int rc = llvm::sys::ExecuteAndWait(linker, argv, std::nullopt, redirects, 0,
                                     0, &message);
  auto errors = llvm::MemoryBuffer::getFile(errorFile);
  llvm::sys::fs::remove(errorFile);
  if (rc != 0)
    return makeError("linking " + so + " failed (" + linker + "): " +
                     (errors ? (*errors)->getBuffer().rtrim().str() : message));
  return llvm::Error::success();
}

} // namespace

std::string mlir::ds::exec::sharedObjectLinker() {
  if (llvm::sys::fs::can_execute(DS_LD_LLD))
    return DS_LD_LLD;
  for (const char *name : {"ld.lld", "ld.lld-22"})
    if (auto found = llvm::sys::findProgramByName(name))
      return *found;
  return "";
}

llvm::Expected<LoweredModule> mlir::ds::exec::compileSharedObject(
    ModuleOp module, const RunnerOptions &options, const JitTarget &target,
    const std::string &soPath, ObjectCodeTimes *times) {
  auto lowered = lowerForExecution(module, options);
  if (!lowered)
    return lowered.takeError();
  Clock::time_point llvmStart = Clock::now();
  auto tm = createTargetMachine(target, /*jit=*/false);
  if (!tm)
    return tm.takeError();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return makeError("translating the lowered module to LLVM IR failed");
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  std::vector<std::string> exported;
  for (const FunctionSignature &sig : lowered->functions) {
    exported.push_back(packedEntrySymbol(sig.name));
    // The lowering built it already when the body was in the C interface.
    if (llvmModule->getFunction(exported.back()))
      continue;
    llvm::Function *ciface =
        llvmModule->getFunction(mlir::ds::cWrapperName(sig.name));
    if (!ciface)
      return makeError("@" + sig.name + " has no C interface");
    addPackedWrapper(*llvmModule, *ciface, exported.back());
  }
  for (llvm::StringRef workspaces :
       {mlir::ds::kWorkspacesInitSymbol, mlir::ds::kWorkspacesReleaseSymbol})
    if (llvmModule->getFunction(workspaces))
      exported.push_back(workspaces.str());
  if (llvm::Error err =
          makeOptimizer(options.optLevel, tm->get())(llvmModule.get()))
    return makeError("optimizing the step failed: " +
                     llvm::toString(std::move(err)));
  std::unique_ptr<llvm::Module> glueModule = splitGlue(*llvmModule);
  // Only the packed entries are the objects' interface.
  for (llvm::Module *m : {llvmModule.get(), glueModule.get()})
    if (m)
      for (llvm::GlobalValue &value : m->global_values())
        if (!value.isDeclaration() && !value.hasLocalLinkage() &&
            !llvm::is_contained(exported, value.getName().str()))
          value.setVisibility(llvm::GlobalValue::HiddenVisibility);

  // Written next to the target and renamed into place: ranks that load a
  // shared artifact directory never see a partial file.
  std::string tmp =
      soPath + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  std::vector<std::string> objects = {tmp + ".o"};
  llvm::Error written = writeObject(*llvmModule, **tm, objects.back());
  if (!written && glueModule) {
    (*tm)->setOptLevel(llvm::CodeGenOptLevel::None);
    objects.push_back(tmp + ".glue.o");
    written = writeObject(*glueModule, **tm, objects.back());
  }
  double llvmSeconds = secondsSince(llvmStart);
  Clock::time_point linkStart = Clock::now();
  llvm::Error linked = written ? std::move(written) : link(objects, tmp);
  for (const std::string &object : objects)
    llvm::sys::fs::remove(object);
  if (linked) {
    llvm::sys::fs::remove(tmp);
    return std::move(linked);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, soPath)) {
    llvm::sys::fs::remove(tmp);
    return makeError(soPath + ": cannot write: " + ec.message());
  }
  if (times) {
    times->mlirSeconds = lowered->mlirSeconds;
    times->llvmSeconds = llvmSeconds;
    times->linkSeconds = secondsSince(linkStart);
  }
  return std::move(*lowered);
}
