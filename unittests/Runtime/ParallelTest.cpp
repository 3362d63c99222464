//===- ParallelTest.cpp - dsrt_parallel_for -------------------------------===//
//
// Every iteration runs exactly once, in blocks of consecutive iterations,
// whatever the thread count; a call from inside a block runs serially.
//
//===----------------------------------------------------------------------===//
#include "dsrt/dsrt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace {

struct Marks {
  std::vector<std::atomic<int>> runs;
  explicit Marks(size_t n) : runs(n) {}
};

void mark(void *ctx, int64_t b, int64_t e) {
  auto *marks = static_cast<Marks *>(ctx);
  for (int64_t i = b; i < e; ++i)
    marks->runs[i].fetch_add(1);
}

class ParallelFor : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override {
    saved = dsrt_threads_get();
    dsrt_threads_set(GetParam());
  }
  void TearDown() override { dsrt_threads_set(saved); }
  int saved = 1;
};

TEST_P(ParallelFor, EveryIterationOnce) {
  for (int64_t n : {1, 2, 3, 7, 64, 1000, 100003}) {
    Marks marks(n + 10);
    // Many calls: a late worker must never run a chunk of the next call.
    for (int repeat = 0; repeat < 50; ++repeat)
      ASSERT_EQ(dsrt_parallel_for(mark, &marks, 5, 5 + n), DSRT_OK);
    for (int64_t i = 0; i < n + 10; ++i)
      ASSERT_EQ(marks.runs[i].load(), i >= 5 && i < 5 + n ? 50 : 0)
          << "n " << n << " index " << i;
  }
}

TEST_P(ParallelFor, EmptyRangeRunsNothing) {
  Marks marks(4);
  EXPECT_EQ(dsrt_parallel_for(mark, &marks, 3, 3), DSRT_OK);
  EXPECT_EQ(dsrt_parallel_for(mark, &marks, 3, 1), DSRT_OK);
  for (auto &r : marks.runs)
    EXPECT_EQ(r.load(), 0);
}

void nested(void *ctx, int64_t b, int64_t e) {
  auto *marks = static_cast<Marks *>(ctx);
  for (int64_t i = b; i < e; ++i)
    dsrt_parallel_for(mark, marks, i * 100, i * 100 + 100);
}

TEST_P(ParallelFor, NestedCallsRunEveryIteration) {
  Marks marks(16 * 100);
  ASSERT_EQ(dsrt_parallel_for(nested, &marks, 0, 16), DSRT_OK);
  for (auto &r : marks.runs)
    ASSERT_EQ(r.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelFor, ::testing::Values(1, 2, 3, 4));

} // namespace
