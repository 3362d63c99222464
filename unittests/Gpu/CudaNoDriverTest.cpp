//===- CudaNoDriverTest.cpp - the GPU host side where no driver exists ----===//
//
// Loading a GPU step's code runs mgpuModuleLoad in a constructor: it must
// not fail there. Every later device call fails once, naming the missing
// driver. Skipped where libcuda.so.1 loads (a GPU machine).
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <dlfcn.h>
#include <string>

extern "C" {
void *mgpuModuleLoad(void *data, size_t bytes);
void *mgpuModuleGetFunction(void *module, const char *name);
}

namespace {

bool driverPresent() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib)
    dlclose(lib);
  return lib != nullptr;
}

TEST(CudaNoDriver, EveryEntryPointNamesTheMissingDriver) {
  if (driverPresent())
    GTEST_SKIP() << "libcuda.so.1 loads here";
  void *p = nullptr;
  EXPECT_EQ(dsrt_cuda_malloc(&p, 64), DSRT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(dsrt_last_error()).find("no NVIDIA driver"),
            std::string::npos)
      << dsrt_last_error();
  void *stream = nullptr;
  EXPECT_EQ(dsrt_cuda_stream(&stream), DSRT_ERR_UNSUPPORTED);
  float x = 0;
  EXPECT_EQ(dsrt_cuda_sgemm(0, 0, 1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1),
            DSRT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(dsrt_last_error()).find("no NVIDIA driver"),
            std::string::npos)
      << dsrt_last_error();
}

TEST(CudaNoDriver, ModuleLoadReturnsAndTheFirstUseReports) {
  if (driverPresent())
    GTEST_SKIP() << "libcuda.so.1 loads here";
  unsigned char image[16] = {0x50, 0xED, 0x55, 0xBA};
  void *module = mgpuModuleLoad(image, sizeof(image));
  EXPECT_EQ(module, nullptr);
  EXPECT_DEATH(mgpuModuleGetFunction(module, "kernel_0_kernel"),
               "device code is not loaded \\(no usable GPU: no NVIDIA driver");
}

} // namespace
