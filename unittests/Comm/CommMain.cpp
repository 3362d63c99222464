//===- CommMain.cpp - starts communication once for the whole suite -------===//
//
// dsrt_comm_init runs once per process, so main starts it (with
// DS_COMM_TEST_BACKEND, or auto) around RUN_ALL_TESTS. What must happen
// before init (calls on a runtime not yet started, nccl refusing to start
// without a GPU) is recorded here and checked by ordinary tests.
//
//===----------------------------------------------------------------------===//
#include "CommTest.h"

#include <cstdio>
#include <cstdlib>

namespace dscomm {
std::string skipReason, preInitWorldError, ncclNoGpuError, ncclNoGpuSkip;
} // namespace dscomm

using namespace dscomm;

namespace {

/// Ranks > 0 print only their failures, prefixed, so the log of a
/// multi-rank run reads like one run.
class RankFailures : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailures(int r) : r(r) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", r,
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.summary());
  }

private:
  int r;
};

/// Whether the test itself (not libdsrt) sees a usable GPU.
bool gpuUsable(std::string &why) {
#ifdef DS_COMM_TEST_CUDA
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    why = cudaGetErrorString(e);
  else if (n == 0)
    why = "no CUDA device";
  return e == cudaSuccess && n > 0;
#else
  why = "this build has no CUDA";
  return false;
#endif
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);

  if (!dsrt_comm_world())
    preInitWorldError = dsrt_last_error();
  std::string why;
  if (gpuUsable(why)) {
    ncclNoGpuSkip = "a GPU is usable here, so backend nccl starts";
  } else if (dsrt_comm_init("nccl") != DSRT_OK) {
    ncclNoGpuError = dsrt_last_error();
  } else {
    std::fprintf(stderr, "backend nccl started without a GPU (%s)\n",
                 why.c_str());
    return 1;
  }

  const char *want = std::getenv("DS_COMM_TEST_BACKEND");
  if (dsrt_comm_init(want) != DSRT_OK) {
    if (!want || std::string(want) != "nccl") {
      std::fprintf(stderr, "dsrt_comm_init: %s\n", dsrt_last_error());
      return 1;
    }
    skipReason =
        std::string("backend nccl cannot run here: ") + dsrt_last_error();
  }
  if (skipReason.empty() && rank() > 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailures(rank()));
  }
  int rc = RUN_ALL_TESTS();
  if (!skipReason.empty()) {
    std::fprintf(stderr, "skipped: %s\n", skipReason.c_str());
    return rc ? rc : 77; // ctest's SKIP_RETURN_CODE: not a silent pass
  }
  if (dsrt_comm_finalize() != DSRT_OK) {
    std::fprintf(stderr, "dsrt_comm_finalize: %s\n", dsrt_last_error());
    return 1;
  }
  return rc;
}
