//===- SharedObject.h - Compiled code loaded from a .so ---------*- C++ -*-===//
//
// An artifact's compiled step, loaded with dlopen: no compiler, no LLVM.
// The object's undefined dsrt_* and libc/libm symbols bind to the ones the
// process already has (libdsrt is linked into every ds binary).
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_SHAREDOBJECT_H
#define DS_EXECUTION_SHAREDOBJECT_H

#include "ds/Execution/PackedCall.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir::ds::exec {

class SharedObject {
public:
  static llvm::Expected<std::unique_ptr<SharedObject>>
  open(const std::string &path);
  ~SharedObject();
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;

  /// The packed entry of public function `name`.
  llvm::Expected<PackedEntry> entry(llvm::StringRef name) const;

private:
  SharedObject(void *handle, std::string path)
      : handle(handle), path(std::move(path)) {}
  void *handle;
  std::string path;
  WorkspacesRelease release = nullptr;
};

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_SHAREDOBJECT_H
