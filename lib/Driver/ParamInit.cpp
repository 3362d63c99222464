//===- ParamInit.cpp - Deterministic parameter initialization -------------===//
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/Random.h"

#include "dsrt/dsrt.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace ds::driver;

namespace {

/// Elements below which one thread draws a tensor: a thread's start-up
/// costs about as much as drawing this many normals.
constexpr int64_t kParallelMinElements = 1 << 16;

/// Threads lent to the draws (DrawThreadLoan).
std::atomic<int> lentThreads{0};

void drawRange(uint64_t key, InitKind kind, double scale, int64_t first,
               int64_t count, float *out) {
  if (kind == InitKind::Normal) {
    randomNormalsAt(key, scale, uint64_t(first), count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint64_t index = static_cast<uint64_t>(first + i);
    switch (kind) {
    case InitKind::Zeros:
      out[i] = 0.0f;
      break;
    case InitKind::Ones:
      out[i] = 1.0f;
      break;
    case InitKind::Normal: // drawn above
      break;
    case InitKind::Uniform:
      out[i] =
          static_cast<float>(scale * (2.0 * randomUniformAt(key, index) - 1.0));
      break;
    }
  }
}

} // namespace

void ds::driver::initParameter(llvm::StringRef name, InitKind kind,
                               double scale, uint64_t seed, int64_t first,
                               int64_t count, float *out) {
  uint64_t key = streamKey(seed, streamOf(name));
  // Each element depends only on its index, so the runtime's threads (the
  // BLAS thread count the user or the launcher chose, and any lent) draw
  // contiguous pieces and the values are the same for any thread count.
  int64_t threads =
      std::min<int64_t>(std::max(1, dsrt_threads_get()) + lentThreads.load(),
                        count / kParallelMinElements);
  if (threads <= 1) {
    drawRange(key, kind, scale, first, count, out);
    return;
  }
  std::vector<std::thread> workers;
  auto piece = [&](int64_t t) {
    int64_t begin = count * t / threads, end = count * (t + 1) / threads;
    drawRange(key, kind, scale, first + begin, end - begin, out + begin);
  };
  for (int64_t t = 1; t < threads; ++t)
    workers.emplace_back(piece, t);
  piece(0);
  for (std::thread &w : workers)
    w.join();
}

DrawThreadLoan::DrawThreadLoan(int threads) : threads(threads) {
  lentThreads += threads;
}

DrawThreadLoan::~DrawThreadLoan() { lentThreads -= threads; }
