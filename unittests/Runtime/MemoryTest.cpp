//===- MemoryTest.cpp - libdsrt's count of the bytes a step holds ---------===//
#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>

namespace {

TEST(Memory, HeapBuffersAndHoldsAreCountedWithTheirPeak) {
  int64_t base = dsrt_mem_bytes();
  dsrt_mem_peak_reset();
  EXPECT_EQ(dsrt_mem_peak_bytes(), base);

  void *a = dsrt_malloc(1000);
  void *b = dsrt_aligned_alloc(256, 3000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 256, 0u);
  // The bytes asked for are usable.
  std::memset(a, 1, 1000);
  std::memset(b, 2, 3000);
  EXPECT_EQ(dsrt_mem_bytes(), base + 4000);

  dsrt_free(a);
  EXPECT_EQ(dsrt_mem_bytes(), base + 3000);
  dsrt_mem_hold(500);
  EXPECT_EQ(dsrt_mem_bytes(), base + 3500);
  dsrt_free(b);
  dsrt_mem_hold(-500);
  dsrt_free(nullptr);
  EXPECT_EQ(dsrt_mem_bytes(), base);
  // The most held at once: both buffers.
  EXPECT_EQ(dsrt_mem_peak_bytes(), base + 4000);

  dsrt_mem_peak_reset();
  EXPECT_EQ(dsrt_mem_peak_bytes(), base);
}

TEST(Memory, AlignmentNotAPowerOfTwoFails) {
  EXPECT_EQ(dsrt_aligned_alloc(24, 48), nullptr);
  EXPECT_EQ(dsrt_aligned_alloc(0, 48), nullptr);
}

} // namespace
