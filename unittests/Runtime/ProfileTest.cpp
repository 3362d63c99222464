//===- ProfileTest.cpp - libdsrt's per-kernel profile ---------------------===//
#include "dsrt/dsrt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

std::vector<dsrt_profile_kernel> kernels() {
  const dsrt_profile_kernel *out = nullptr;
  int64_t n = 0;
  EXPECT_EQ(dsrt_profile_kernels(&out, &n), DSRT_OK);
  return std::vector<dsrt_profile_kernel>(out, out + n);
}

TEST(Profile, SumsCallsFlopsAndBytesPerKernelInFirstCallOrder) {
  dsrt_profile_reset();
  static const char gemm[] = "step:0 gemm 4x4x4";
  static const char add[] = "step:1 elementwise 16";
  for (int i = 0; i < 3; ++i) {
    dsrt_profile_begin();
    dsrt_profile_end(gemm, DSRT_PROFILE_GEMM, 128, 192);
    dsrt_profile_begin();
    dsrt_profile_end(add, DSRT_PROFILE_ELEMENTWISE, 16, 192);
  }
  std::vector<dsrt_profile_kernel> k = kernels();
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(std::string(k[0].name), gemm);
  EXPECT_EQ(k[0].cls, DSRT_PROFILE_GEMM);
  EXPECT_EQ(k[0].calls, 3);
  EXPECT_EQ(k[0].flops, 384);
  EXPECT_EQ(k[0].bytes, 576);
  EXPECT_GE(k[0].seconds, 0.0);
  EXPECT_EQ(std::string(k[1].name), add);
  EXPECT_EQ(k[1].flops, 48);
}

TEST(Profile, AnEndWithoutBeginIsIgnored) {
  dsrt_profile_reset();
  static const char name[] = "k";
  dsrt_profile_end(name, DSRT_PROFILE_COPY, 0, 8);
  EXPECT_TRUE(kernels().empty());
}

TEST(Profile, ManyKernelsKeepTheirOwnCounts) {
  dsrt_profile_reset();
  std::vector<std::string> names(1000);
  for (int i = 0; i < 1000; ++i)
    names[i] = "k" + std::to_string(i);
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 1000; ++i) {
      dsrt_profile_begin();
      dsrt_profile_end(names[i].c_str(), DSRT_PROFILE_FILL, i, 0);
    }
  std::vector<dsrt_profile_kernel> k = kernels();
  ASSERT_EQ(k.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(k[i].calls, 2);
    EXPECT_EQ(k[i].flops, 2 * i);
  }
  dsrt_profile_reset();
  EXPECT_TRUE(kernels().empty());
}

TEST(Profile, ClassNames) {
  EXPECT_STREQ(dsrt_profile_class_name(DSRT_PROFILE_GEMM), "gemm");
  EXPECT_STREQ(dsrt_profile_class_name(DSRT_PROFILE_COLLECTIVE), "collective");
  EXPECT_STREQ(dsrt_profile_class_name(DSRT_PROFILE_CLASS_COUNT), "?");
}

} // namespace
