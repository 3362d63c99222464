//===- GpuPlacement.cpp - Where a GPU step's tensors live -----------------===//
#include "ds/Driver/GpuPlacement.h"

#include "ds/Execution/Tensor.h"

#include "dsrt/dsrt.h"

#include <cstdio>
#include <string>

using namespace ds::driver;

namespace {
void *allocateManaged(int64_t bytes) { return dsrt_cuda_managed_alloc(bytes); }
} // namespace

llvm::Error ds::driver::placeTensorsFor(llvm::StringRef target) {
  // "sm_90-emulated" runs its kernels as CPU loops, in host memory.
  if (target == "cpu" || target.ends_with("-emulated"))
    return llvm::Error::success();
  // ds-train asks before compiling and again before allocating: once.
  static std::string placed;
  if (placed == target)
    return llvm::Error::success();
  int major = 0, minor = 0;
  char rest = 0;
  // "sm_90": the last digit is the minor revision (sm_100 is 10.0).
  std::string name = target.str();
  if (std::sscanf(name.c_str(), "sm_%d%c", &major, &rest) != 1 || major < 10)
    return llvm::createStringError("the step is compiled for '%s', which is "
                                   "neither cpu nor a GPU chip sm_XY",
                                   name.c_str());
  minor = major % 10;
  major /= 10;
  if (dsrt_cuda_require(major, minor) != DSRT_OK)
    return llvm::createStringError(
        "%s; or compile it for this machine's CPU (--target cpu, the "
        "default)",
        dsrt_last_error());
  // The driver and the ds stream now, on this thread: loading them later
  // from a thread allocating tensors while the step's code is dlopen'd
  // (whose constructors load its kernels through the same driver) would
  // deadlock on the loader's lock.
  void *stream = nullptr;
  if (dsrt_cuda_stream(&stream) != DSRT_OK)
    return llvm::createStringError("%s", dsrt_last_error());
  mlir::ds::exec::Tensor::setAllocator(
      {&allocateManaged, &dsrt_cuda_managed_free});
  placed = target.str();
  return llvm::Error::success();
}
