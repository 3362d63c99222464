//===- CommTest.h - shared helpers of the communication tests -------------===//
//
// The suite runs once per backend (self without mpirun; mpi under mpirun -n
// 2, 3, 4; nccl under mpirun where a GPU is usable). Every buffer goes
// through Tensor so the same tests hand device memory to nccl.
//
//===----------------------------------------------------------------------===//
#ifndef DS_UNITTESTS_COMM_COMMTEST_H
#define DS_UNITTESTS_COMM_COMMTEST_H

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#ifdef DS_COMM_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

namespace dscomm {

/// Set by main when the requested backend cannot run here (every test then
/// skips with it as the reason).
extern std::string skipReason;
/// What main saw from calls made before dsrt_comm_init.
extern std::string preInitWorldError, ncclNoGpuError, ncclNoGpuSkip;

inline dsrt_comm *world() { return dsrt_comm_world(); }
inline int rank() { return dsrt_comm_rank(world()); }
inline int size() { return dsrt_comm_size(world()); }
inline bool onDevice() { return std::string(dsrt_comm_backend()) == "nccl"; }
inline std::string lastError() { return dsrt_last_error(); }

/// Skips the test (with the reason) when the backend cannot run here.
class CommTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!skipReason.empty())
      GTEST_SKIP() << skipReason;
  }
};

/// count elements of T on the host, mirrored on the device for nccl.
template <class T> class Tensor {
public:
  explicit Tensor(size_t count, T fill = T()) : host(count, fill) {
#ifdef DS_COMM_TEST_CUDA
    if (onDevice()) {
      cudaMalloc(&dev, bytes() ? bytes() : 1);
      upload();
    }
#endif
  }
  ~Tensor() {
#ifdef DS_COMM_TEST_CUDA
    if (dev)
      cudaFree(dev);
#endif
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  T *ptr() { return dev ? static_cast<T *>(dev) : host.data(); }
  size_t bytes() const { return host.size() * sizeof(T); }
  void upload() {
#ifdef DS_COMM_TEST_CUDA
    if (dev)
      cudaMemcpy(dev, host.data(), bytes(), cudaMemcpyHostToDevice);
#endif
  }
  std::vector<T> &download() {
#ifdef DS_COMM_TEST_CUDA
    if (dev)
      cudaMemcpy(host.data(), dev, bytes(), cudaMemcpyDeviceToHost);
#endif
    return host;
  }

  std::vector<T> host;

private:
  void *dev = nullptr;
};

/// bf16 as its bits; the test values are exact in bf16, so truncating the
/// f32 bits is the conversion (checked).
struct BF16 {
  uint16_t bits;
};

/// One dtype of the ABI: its host type, its code, exact conversions.
template <class T, int Code> struct DType {
  using Type = T;
  static constexpr int code = Code;
  static constexpr bool isInt = std::is_integral<T>::value;
  static T from(double v) { return static_cast<T>(v); }
  static double to(T v) { return static_cast<double>(v); }
};
template <> struct DType<BF16, DSRT_BF16> {
  using Type = BF16;
  static constexpr int code = DSRT_BF16;
  static constexpr bool isInt = false;
  static BF16 from(double v) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    EXPECT_EQ(bits & 0xffff, 0u) << v << " is not exact in bf16";
    return BF16{static_cast<uint16_t>(bits >> 16)};
  }
  static double to(BF16 v) {
    uint32_t bits = static_cast<uint32_t>(v.bits) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

using F32 = DType<float, DSRT_F32>;
using F16 = DType<_Float16, DSRT_F16>;
using BF16T = DType<BF16, DSRT_BF16>;
using I32 = DType<int32_t, DSRT_I32>;
using I64 = DType<int64_t, DSRT_I64>;

} // namespace dscomm

#endif // DS_UNITTESTS_COMM_COMMTEST_H
