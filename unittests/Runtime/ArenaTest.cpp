//===- ArenaTest.cpp - the workspace arena
//---------------------------------===//
#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>

namespace {

TEST(Arena, BumpAllocationIsAlignedAndBounded) {
  dsrt_arena *arena = nullptr;
  ASSERT_EQ(dsrt_arena_create(1000, 64, &arena), DSRT_OK) << dsrt_last_error();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dsrt_arena_base(arena)) % 64, 0u);
  EXPECT_EQ(dsrt_arena_capacity(arena), 1000);

  void *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_EQ(dsrt_arena_alloc(arena, 10, 0, &a), DSRT_OK);
  ASSERT_EQ(dsrt_arena_alloc(arena, 100, 32, &b), DSRT_OK);
  EXPECT_EQ(a, dsrt_arena_base(arena));
  EXPECT_EQ(static_cast<char *>(b) - static_cast<char *>(a), 32);
  EXPECT_EQ(dsrt_arena_used(arena), 132);

  EXPECT_EQ(dsrt_arena_alloc(arena, 900, 0, &c), DSRT_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(dsrt_last_error()).find("do not fit"),
            std::string::npos);

  dsrt_arena_reset(arena);
  EXPECT_EQ(dsrt_arena_used(arena), 0);
  EXPECT_EQ(dsrt_arena_peak(arena), 132);
  ASSERT_EQ(dsrt_arena_alloc(arena, 1000, 0, &c), DSRT_OK);
  EXPECT_EQ(c, dsrt_arena_base(arena));
  dsrt_arena_destroy(arena);
}

TEST(Arena, BadArguments) {
  dsrt_arena *arena = nullptr;
  EXPECT_EQ(dsrt_arena_create(16, 24, &arena), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(arena, nullptr);
  EXPECT_EQ(dsrt_arena_create(-1, 0, &arena), DSRT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(dsrt_arena_create(0, 0, &arena), DSRT_OK);
  void *p = nullptr;
  EXPECT_EQ(dsrt_arena_alloc(arena, 8, 128, &p), DSRT_ERR_INVALID_ARGUMENT);
  dsrt_arena_destroy(arena);
  dsrt_arena_destroy(nullptr); // a no-op, like free(NULL)
}

} // namespace
