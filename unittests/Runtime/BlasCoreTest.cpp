//===- BlasCoreTest.cpp - which OpenBLAS kernels ds runs ------------------===//
//
// The choice over any CPU (dsrt_blas_core_choose is pure), and what this
// process reports about the OpenBLAS it loaded: under OPENBLAS_CORETYPE the
// kernels in use must be the ones named, so a run of the suite under each
// core (test/tools/blas-core-*.test) cannot silently run another.
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>
#include <strings.h>

namespace {

const char *avx512 = "avx avx2 fma avx512f avx512bw avx512dq avx512vl";
const char *avx2 = "avx avx2 fma";

std::string choose(const char *detected, const char *features, int amd) {
  const char *core = dsrt_blas_core_choose(detected, features, amd);
  return core ? core : "(keep)";
}

TEST(BlasCore, GenericDetectionGetsTheFastestCoreTheFeaturesAllow) {
  // The Xeon of issue 11: OpenBLAS 0.3.21 falls through to Prescott.
  EXPECT_EQ(choose("Prescott", avx512, 0), "SkylakeX");
  EXPECT_EQ(choose("Prescott", avx512, 1), "SkylakeX");
  EXPECT_EQ(choose("Prescott", avx2, 0), "Haswell");
  EXPECT_EQ(choose("Prescott", avx2, 1), "Zen");
  EXPECT_EQ(choose("Nehalem", "avx", 0), "Sandybridge");
  EXPECT_EQ(choose("Core2", avx2, 0), "Haswell");
  EXPECT_EQ(choose("Unknown", avx2, 0), "Haswell");
  EXPECT_EQ(choose("prescott", avx2, 1), "Zen") << "OpenBLAS ignores case";
}

TEST(BlasCore, PartialAvx512OrAvx2WithoutFmaIsNotEnough) {
  // Knights Landing: AVX-512F without BW/DQ/VL, which SkylakeX's kernels use.
  EXPECT_EQ(choose("Prescott", "avx avx2 fma avx512f", 0), "Haswell");
  EXPECT_EQ(choose("Prescott", "avx avx2", 0), "Sandybridge");
  // Whole words only: "avx512vl" does not stand for "avx".
  EXPECT_EQ(choose("Prescott", "avx512vl", 0), "(keep)");
}

TEST(BlasCore, SpecificDetectionIsKept) {
  for (const char *core :
       {"Sandybridge", "Haswell", "Zen", "SkylakeX", "Cooperlake", "Excavator"})
    EXPECT_EQ(choose(core, avx512, 0), "(keep)") << core;
}

TEST(BlasCore, NothingFasterOnAnSseOnlyCpu) {
  EXPECT_EQ(choose("Prescott", "", 0), "(keep)");
  EXPECT_EQ(choose("Prescott", "sse only", 0), "(keep)");
}

TEST(BlasCore, InfoDescribesTheLoadedOpenBLAS) {
  dsrt_blas_info info;
  ASSERT_EQ(dsrt_blas_info_get(&info), DSRT_OK);
  EXPECT_NE(std::string(info.library).find("openblas"), std::string::npos)
      << info.library;
  EXPECT_EQ(std::string(info.config).rfind("OpenBLAS ", 0), 0u) << info.config;
  EXPECT_NE(std::string(info.config).find(info.version), std::string::npos);
  EXPECT_NE(std::string(info.core), "");
  EXPECT_NE(std::string(info.best), "");
  // ds's dependency is Debian's OpenBLAS, built with DYNAMIC_ARCH.
  EXPECT_TRUE(info.dynamic) << info.config;
  EXPECT_EQ(dsrt_blas_info_get(nullptr), DSRT_ERR_INVALID_ARGUMENT);
}

TEST(BlasCore, KernelsInUseAreTheOnesTheEnvironmentNames) {
  dsrt_blas_info info;
  ASSERT_EQ(dsrt_blas_info_get(&info), DSRT_OK);
  const char *forced = std::getenv("OPENBLAS_CORETYPE");
  const char *fake = std::getenv("DSRT_BLAS_FAKE_DETECTED");
  if (forced && *forced) {
    EXPECT_EQ(strcasecmp(info.core, forced), 0)
        << "OPENBLAS_CORETYPE=" << forced << " but OpenBLAS runs " << info.core
        << " (a name OpenBLAS 0.3.21 does not accept?)";
    EXPECT_NE(info.source, DSRT_BLAS_CORE_DETECTED);
  } else {
    EXPECT_EQ(info.source, DSRT_BLAS_CORE_DETECTED);
    EXPECT_STREQ(info.detected, fake && *fake ? fake : info.core);
  }
  EXPECT_FALSE(info.unsupported)
      << info.core << " needs more than this CPU has: " << info.features;
}

} // namespace
