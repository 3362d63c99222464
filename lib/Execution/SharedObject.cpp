//===- SharedObject.cpp - Compiled code loaded from a .so -----------------===//
#include "ds/Execution/SharedObject.h"

#include "ds/Support/CInterface.h"

#include <dlfcn.h>

using namespace mlir::ds::exec;

llvm::Expected<std::unique_ptr<SharedObject>>
SharedObject::open(const std::string &path) {
  // RTLD_NOW: a symbol the process lacks fails here, not mid-step.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return llvm::createStringError(
        "%s: cannot load the compiled step: %s; recompile it with ds-compile",
        path.c_str(), dlerror());
  std::unique_ptr<SharedObject> object(new SharedObject(handle, path));
  // The planned buffers, allocated now rather than static in the object.
  if (void *init = dlsym(handle, mlir::ds::kWorkspacesInitSymbol.data())) {
    if (llvm::Error err =
            initWorkspaces(reinterpret_cast<WorkspacesInit>(init), path))
      return std::move(err);
    object->release = reinterpret_cast<WorkspacesRelease>(
        dlsym(handle, mlir::ds::kWorkspacesReleaseSymbol.data()));
  }
  return object;
}

SharedObject::~SharedObject() {
  if (release)
    release();
  dlclose(handle);
}

llvm::Expected<PackedEntry> SharedObject::entry(llvm::StringRef name) const {
  std::string symbol = packedEntrySymbol(name);
  void *address = dlsym(handle, symbol.c_str());
  if (!address)
    return llvm::createStringError(
        "%s has no entry point %s (@%s): not a ds artifact, or a damaged one",
        path.c_str(), symbol.c_str(), name.str().c_str());
  return reinterpret_cast<PackedEntry>(address);
}
