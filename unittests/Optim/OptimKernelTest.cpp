//===- OptimKernelTest.cpp - CPU optimizer kernels vs a scalar reference --===//
//
// The reference below is the documented math written plainly, one element at
// a time, with its own 16-bit conversions (_Float16 for fp16). Every vector
// path the CPU has (scalar, avx2, avx512) must match it bit for bit: the
// kernels use no FMA and correctly rounded sqrt/division, so there is no
// tolerance to document except Lamb's trust ratio, whose norms are sums in a
// different order (see LambMatchesReference).
//
// Counts are chosen around the vector widths (8, 16), the lane groups (16)
// and the blocks (2048) so every tail and block boundary is exercised.
//
//===----------------------------------------------------------------------===//

#include "OptimTestUtil.h"

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace ds::optimtest;

namespace {

const int64_t kCounts[] = {0, 1, 7, 15, 16, 17, 33, 2047, 2048, 2049, 6001};

// Paths this CPU runs.
std::vector<std::string> paths() {
  std::vector<std::string> out;
  for (const char *p : {"scalar", "avx2", "avx512"})
    if (dsrt_optim_simd_set(p) == DSRT_OK)
      out.push_back(p);
  dsrt_optim_simd_set(nullptr);
  return out;
}

/*--- 16-bit conversions, independent of the kernels' ----------------------*/

uint16_t toF16(float x) {
  _Float16 h = (_Float16)x;
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float fromF16(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return (float)h;
}
uint16_t toBF16(float x) {
  if (std::isnan(x))
    return (uint16_t)((bits(x) >> 16) | 0x40);
  if (std::isinf(x))
    return (uint16_t)(bits(x) >> 16);
  // Round to nearest even through double: the two bf16 neighbours and the
  // midpoint are exact there.
  uint32_t u = bits(x), lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float flo, fhi;
  std::memcpy(&flo, &lo, 4);
  std::memcpy(&fhi, &hi, 4);
  double dlo = std::fabs((double)x - flo), dhi = std::fabs((double)fhi - x);
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0))
    return (uint16_t)(lo >> 16);
  return (uint16_t)(hi >> 16);
}
float fromBF16(uint16_t u) {
  uint32_t w = (uint32_t)u << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// A gradient of `dtype` holding (the 16-bit rounding of) `values`.
struct Grad {
  int dtype;
  std::vector<float> f32;
  std::vector<uint16_t> h16;
  Grad(int dtype, const std::vector<float> &values) : dtype(dtype) {
    f32 = values;
    if (dtype == DSRT_F32)
      return;
    h16.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      h16[i] = dtype == DSRT_F16 ? toF16(values[i]) : toBF16(values[i]);
      f32[i] = dtype == DSRT_F16 ? fromF16(h16[i]) : fromBF16(h16[i]);
    }
  }
  const void *data() const {
    return dtype == DSRT_F32 ? (const void *)f32.data()
                             : (const void *)h16.data();
  }
};

uint16_t narrow(float x, int dtype) {
  return dtype == DSRT_F16 ? toF16(x) : toBF16(x);
}

/*--- Reference steps (the formulas of dsrt.h) -----------------------------*/

struct AdamHp {
  float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.0f;
  int adamw = 0, biasCorrection = 1;
  float gradScale = 1.0f;
};

void refAdam(std::vector<float> &p, const std::vector<float> &g,
             std::vector<float> &m, std::vector<float> &v, int64_t step,
             const AdamHp &h) {
  double bc1 = h.biasCorrection ? 1.0 - std::pow((double)h.beta1, step) : 1.0;
  double bc2 = h.biasCorrection ? 1.0 - std::pow((double)h.beta2, step) : 1.0;
  float omb1 = (float)(1.0 - h.beta1), omb2 = (float)(1.0 - h.beta2);
  float bc2Sqrt = (float)std::sqrt(bc2), negStep = (float)(-(h.lr / bc1));
  float decay = (float)(1.0 - (double)h.lr * h.wd);
  for (size_t i = 0; i < p.size(); ++i) {
    float gi = g[i] * h.gradScale;
    if (!h.adamw && h.wd != 0.0f)
      gi = gi + h.wd * p[i];
    else if (h.adamw)
      p[i] = p[i] * decay;
    m[i] = m[i] * h.beta1 + omb1 * gi;
    v[i] = v[i] * h.beta2 + omb2 * gi * gi;
    float denom = std::sqrt(v[i]) / bc2Sqrt + h.eps;
    p[i] = p[i] + negStep * m[i] / denom;
  }
}

struct SgdHp {
  float lr = 0.05f, momentum = 0.9f, dampening = 0.0f, wd = 0.0f;
  int nesterov = 0;
  float gradScale = 1.0f;
};

void refSgd(std::vector<float> &p, const std::vector<float> &g,
            std::vector<float> &buf, int64_t step, const SgdHp &h) {
  float omd = (float)(1.0 - h.dampening);
  for (size_t i = 0; i < p.size(); ++i) {
    float d = g[i] * h.gradScale;
    if (h.wd != 0.0f)
      d = d + h.wd * p[i];
    if (h.momentum != 0.0f) {
      buf[i] = step == 1 ? d : buf[i] * h.momentum + omd * d;
      d = h.nesterov ? d + h.momentum * buf[i] : buf[i];
    }
    p[i] = p[i] + (-h.lr) * d;
  }
}

struct LambHp {
  float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, wd = 0.01f;
  int biasCorrection = 1;
  float minCoeff = 0.01f, maxCoeff = 10.0f, gradScale = 1.0f;
};

// Returns the trust ratio.
float refLamb(std::vector<float> &p, const std::vector<float> &g,
              std::vector<float> &m, std::vector<float> &v, int64_t step,
              const LambHp &h) {
  float omb1 = (float)(1.0 - h.beta1), omb2 = (float)(1.0 - h.beta2);
  auto update = [&](size_t i) {
    return m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * p[i];
  };
  double w2 = 0, u2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    float gi = g[i] * h.gradScale;
    m[i] = m[i] * h.beta1 + omb1 * gi;
    v[i] = v[i] * h.beta2 + omb2 * gi * gi;
    float u = update(i);
    w2 += (double)p[i] * p[i];
    u2 += (double)u * u;
  }
  float w = (float)std::sqrt(w2), u = (float)std::sqrt(u2), ratio = 1.0f;
  if (w != 0.0f && u != 0.0f)
    ratio = std::min(std::max(w / u, h.minCoeff), h.maxCoeff);
  float stepSize =
      h.biasCorrection
          ? (float)((double)h.lr *
                    std::sqrt(1.0 - std::pow((double)h.beta2, step)) /
                    (1.0 - std::pow((double)h.beta1, step)))
          : h.lr;
  float s = stepSize * ratio;
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = p[i] - s * update(i);
  return ratio;
}

/*--- Comparison -----------------------------------------------------------*/

// Largest distance in units in the last place between same-signed floats
// (bitwise-equal NaNs and +-0 count as 0).
int64_t maxUlp(const std::vector<float> &a, const std::vector<float> &b) {
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (bits(a[i]) == bits(b[i]) || a[i] == b[i])
      continue;
    if (std::isnan(a[i]) || std::isnan(b[i]) ||
        std::signbit(a[i]) != std::signbit(b[i]))
      return INT64_MAX;
    worst = std::max(
        worst, (int64_t)std::llabs((int64_t)bits(a[i]) - (int64_t)bits(b[i])));
  }
  return worst;
}

#define EXPECT_BITWISE(a, b, what) EXPECT_EQ(maxUlp(a, b), 0) << what

const int kGradDtypes[] = {DSRT_F32, DSRT_F16, DSRT_BF16};
const char *dtypeName(int dt) {
  return dt == DSRT_F32 ? "f32" : dt == DSRT_F16 ? "f16" : "bf16";
}

class OptimPaths : public ::testing::Test {
protected:
  void TearDown() override { dsrt_optim_simd_set(nullptr); }
};

/*--- Tests ----------------------------------------------------------------*/

TEST_F(OptimPaths, SimdQueryAndOverride) {
  std::vector<std::string> all = paths();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0], "scalar");
  for (const std::string &p : all) {
    ASSERT_EQ(dsrt_optim_simd_set(p.c_str()), DSRT_OK);
    EXPECT_EQ(std::string(dsrt_optim_simd_get()), p);
  }
  // "auto" is the best this CPU has: the last one in the list.
  ASSERT_EQ(dsrt_optim_simd_set("auto"), DSRT_OK);
  EXPECT_EQ(std::string(dsrt_optim_simd_get()), all.back());
  EXPECT_EQ(dsrt_optim_simd_set("sse9"), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("scalar, avx2, avx512"),
            std::string::npos)
      << dsrt_last_error();
}

TEST_F(OptimPaths, AdamMatchesReference) {
  struct Case {
    int adamw, biasCorrection;
    float wd, gradScale;
  } cases[] = {{0, 1, 0.0f, 1.0f},
               {0, 1, 0.1f, 0.5f},
               {1, 1, 0.1f, 1.0f},
               {1, 0, 0.01f, 0.25f}};
  for (const std::string &path : paths()) {
    ASSERT_EQ(dsrt_optim_simd_set(path.c_str()), DSRT_OK);
    for (const Case &c : cases)
      for (int gdt : kGradDtypes)
        for (int64_t n : kCounts) {
          AdamHp h;
          h.adamw = c.adamw;
          h.biasCorrection = c.biasCorrection;
          h.wd = c.wd;
          h.gradScale = c.gradScale;
          std::vector<float> p = uniform(n, -1, 1, 1), m(n, 0.0f), v(n, 0.0f);
          std::vector<float> rp = p, rm = m, rv = v;
          std::vector<uint16_t> p16(n);
          int p16dt = gdt == DSRT_F32 ? DSRT_BF16 : gdt;
          std::string what = path + " adamw=" + std::to_string(c.adamw) +
                             " grad=" + dtypeName(gdt) +
                             " n=" + std::to_string(n);
          for (int64_t step = 1; step <= 3; ++step) {
            Grad g(gdt, uniform(n, -2, 2, 10 + step));
            ASSERT_EQ(dsrt_adam(p.data(), g.data(), gdt, m.data(), v.data(), n,
                                step, h.lr, h.beta1, h.beta2, h.eps, h.wd,
                                h.adamw, h.biasCorrection, h.gradScale,
                                p16.data(), p16dt),
                      DSRT_OK)
                << dsrt_last_error();
            refAdam(rp, g.f32, rm, rv, step, h);
          }
          EXPECT_BITWISE(p, rp, what + " param");
          EXPECT_BITWISE(m, rm, what + " exp_avg");
          EXPECT_BITWISE(v, rv, what + " exp_avg_sq");
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(p16[i], narrow(rp[i], p16dt)) << what << " i=" << i;
        }
  }
}

TEST_F(OptimPaths, SgdMatchesReference) {
  struct Case {
    float momentum, dampening, wd;
    int nesterov;
  } cases[] = {{0.0f, 0.0f, 0.0f, 0},
               {0.0f, 0.0f, 0.1f, 0},
               {0.9f, 0.0f, 0.0f, 0},
               {0.9f, 0.2f, 0.05f, 0},
               {0.9f, 0.0f, 0.05f, 1}};
  for (const std::string &path : paths()) {
    ASSERT_EQ(dsrt_optim_simd_set(path.c_str()), DSRT_OK);
    for (const Case &c : cases)
      for (int gdt : kGradDtypes)
        for (int64_t n : kCounts) {
          SgdHp h;
          h.momentum = c.momentum;
          h.dampening = c.dampening;
          h.wd = c.wd;
          h.nesterov = c.nesterov;
          h.gradScale = 0.5f;
          std::vector<float> p = uniform(n, -1, 1, 2), buf(n, 0.0f);
          std::vector<float> rp = p, rbuf = buf;
          std::vector<uint16_t> p16(n);
          int p16dt = gdt == DSRT_BF16 ? DSRT_F16 : DSRT_BF16;
          std::string what = path + " momentum=" + std::to_string(c.momentum) +
                             " nesterov=" + std::to_string(c.nesterov) +
                             " grad=" + dtypeName(gdt) +
                             " n=" + std::to_string(n);
          for (int64_t step = 1; step <= 3; ++step) {
            Grad g(gdt, uniform(n, -2, 2, 20 + step));
            ASSERT_EQ(dsrt_sgd(p.data(), g.data(), gdt,
                               c.momentum != 0.0f ? buf.data() : nullptr, n,
                               step, h.lr, h.momentum, h.dampening, h.nesterov,
                               h.wd, h.gradScale, p16.data(), p16dt),
                      DSRT_OK)
                << dsrt_last_error();
            refSgd(rp, g.f32, rbuf, step, h);
          }
          EXPECT_BITWISE(p, rp, what + " param");
          EXPECT_BITWISE(buf, rbuf, what + " momentum_buf");
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(p16[i], narrow(rp[i], p16dt)) << what << " i=" << i;
        }
  }
}

// Lamb's norms are sums over the whole tensor: the kernel adds in 16 lanes
// per 2048-element block (so every path and thread count gives the same
// bits), the reference adds left to right. Both are double; the float trust
// ratio then agrees to within 1 ulp, and so does the parameter.
TEST_F(OptimPaths, LambMatchesReference) {
  for (const std::string &path : paths()) {
    ASSERT_EQ(dsrt_optim_simd_set(path.c_str()), DSRT_OK);
    for (int gdt : kGradDtypes)
      for (int64_t n : kCounts) {
        LambHp h;
        h.gradScale = 0.5f;
        std::vector<float> p = uniform(n, -1, 1, 3), m(n, 0.0f), v(n, 0.0f);
        std::vector<float> rp = p, rm = m, rv = v;
        std::vector<uint16_t> p16(n);
        std::string what =
            path + " grad=" + dtypeName(gdt) + " n=" + std::to_string(n);
        for (int64_t step = 1; step <= 3; ++step) {
          Grad g(gdt, uniform(n, -2, 2, 30 + step));
          float ratio = -1.0f;
          ASSERT_EQ(dsrt_lamb(p.data(), g.data(), gdt, m.data(), v.data(), n,
                              step, h.lr, h.beta1, h.beta2, h.eps, h.wd,
                              h.biasCorrection, h.minCoeff, h.maxCoeff,
                              h.gradScale, p16.data(), DSRT_BF16, &ratio),
                    DSRT_OK)
              << dsrt_last_error();
          float rratio = refLamb(rp, g.f32, rm, rv, step, h);
          EXPECT_LE(maxUlp({ratio}, {rratio}), 1) << what;
        }
        EXPECT_BITWISE(m, rm, what + " exp_avg");
        EXPECT_BITWISE(v, rv, what + " exp_avg_sq");
        EXPECT_LE(maxUlp(p, rp), 1) << what;
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(p16[i], narrow(p[i], DSRT_BF16)) << what << " i=" << i;
      }
  }
}

// The trust ratio is clamped, and 1 when a norm is zero.
TEST_F(OptimPaths, LambTrustRatioClampAndZero) {
  const int64_t n = 100;
  std::vector<float> g = uniform(n, -1, 1, 5), m(n), v(n);
  float ratio = 0;
  std::vector<float> big(n, 1000.0f);
  ASSERT_EQ(dsrt_lamb(big.data(), g.data(), DSRT_F32, m.data(), v.data(), n, 1,
                      1e-3f, 0.9f, 0.999f, 1e-6f, 0.0f, 1, 0.01f, 10.0f, 1.0f,
                      nullptr, 0, &ratio),
            DSRT_OK);
  EXPECT_EQ(ratio, 10.0f);
  std::vector<float> zero(n, 0.0f);
  std::fill(m.begin(), m.end(), 0.0f);
  std::fill(v.begin(), v.end(), 0.0f);
  ASSERT_EQ(dsrt_lamb(zero.data(), g.data(), DSRT_F32, m.data(), v.data(), n, 1,
                      1e-3f, 0.9f, 0.999f, 1e-6f, 0.0f, 1, 0.01f, 10.0f, 1.0f,
                      nullptr, 0, &ratio),
            DSRT_OK);
  EXPECT_EQ(ratio, 1.0f);
}

// A list in one call gives the same bits as one call per tensor, for tensor
// sizes that straddle blocks and thread boundaries, empty ones included.
TEST_F(OptimPaths, MultiTensorEqualsPerTensorCalls) {
  std::vector<int64_t> counts;
  std::mt19937 gen(7);
  for (int t = 0; t < 100; ++t)
    counts.push_back(t % 17 == 0 ? 0 : (int64_t)(gen() % 5000));
  int64_t nt = (int64_t)counts.size();
  auto state = [&](unsigned seed) {
    std::vector<std::vector<float>> out;
    for (int64_t t = 0; t < nt; ++t)
      out.push_back(uniform(counts[t], -1, 1, seed + (unsigned)t));
    return out;
  };
  auto ptrs = [](std::vector<std::vector<float>> &vs) {
    std::vector<float *> out;
    for (auto &v : vs)
      out.push_back(v.data());
    return out;
  };
  std::vector<std::vector<float>> p = state(100), g = state(300), m(nt), v(nt),
                                  buf(nt);
  for (int64_t t = 0; t < nt; ++t) {
    m[t].assign(counts[t], 0.0f);
    v[t].assign(counts[t], 0.0f);
    buf[t].assign(counts[t], 0.0f);
  }
  auto rp = p, rm = m, rv = v, rbuf = buf;
  std::vector<std::vector<uint16_t>> p16(nt), rp16(nt);
  std::vector<void *> p16ptr;
  for (int64_t t = 0; t < nt; ++t) {
    p16[t].resize(counts[t]);
    rp16[t].resize(counts[t]);
    p16ptr.push_back(p16[t].data());
  }
  std::vector<float *> pp = ptrs(p), mp = ptrs(m), vp = ptrs(v), bp = ptrs(buf);
  std::vector<const void *> gp;
  for (auto &x : g)
    gp.push_back(x.data());
  std::vector<float> ratios(nt), rratios(nt);
  for (int64_t step = 1; step <= 2; ++step) {
    ASSERT_EQ(dsrt_adam_multi(nt, pp.data(), gp.data(), DSRT_F32, mp.data(),
                              vp.data(), counts.data(), step, 1e-2f, 0.9f,
                              0.999f, 1e-8f, 0.01f, 1, 1, 1.0f, p16ptr.data(),
                              DSRT_F16),
              DSRT_OK)
        << dsrt_last_error();
    ASSERT_EQ(dsrt_sgd_multi(nt, pp.data(), gp.data(), DSRT_F32, bp.data(),
                             counts.data(), step, 1e-2f, 0.9f, 0.0f, 1, 0.0f,
                             1.0f, nullptr, 0),
              DSRT_OK)
        << dsrt_last_error();
    ASSERT_EQ(dsrt_lamb_multi(nt, pp.data(), gp.data(), DSRT_F32, mp.data(),
                              vp.data(), counts.data(), step, 1e-2f, 0.9f,
                              0.999f, 1e-6f, 0.01f, 1, 0.01f, 10.0f, 1.0f,
                              nullptr, 0, ratios.data()),
              DSRT_OK)
        << dsrt_last_error();
    for (int64_t t = 0; t < nt; ++t) {
      int64_t n = counts[t];
      ASSERT_EQ(dsrt_adam(rp[t].data(), g[t].data(), DSRT_F32, rm[t].data(),
                          rv[t].data(), n, step, 1e-2f, 0.9f, 0.999f, 1e-8f,
                          0.01f, 1, 1, 1.0f, rp16[t].data(), DSRT_F16),
                DSRT_OK);
      ASSERT_EQ(dsrt_sgd(rp[t].data(), g[t].data(), DSRT_F32, rbuf[t].data(), n,
                         step, 1e-2f, 0.9f, 0.0f, 1, 0.0f, 1.0f, nullptr, 0),
                DSRT_OK);
      ASSERT_EQ(dsrt_lamb(rp[t].data(), g[t].data(), DSRT_F32, rm[t].data(),
                          rv[t].data(), n, step, 1e-2f, 0.9f, 0.999f, 1e-6f,
                          0.01f, 1, 0.01f, 10.0f, 1.0f, nullptr, 0,
                          &rratios[t]),
                DSRT_OK);
    }
  }
  for (int64_t t = 0; t < nt; ++t) {
    std::string what = "tensor " + std::to_string(t);
    EXPECT_BITWISE(p[t], rp[t], what);
    EXPECT_BITWISE(m[t], rm[t], what);
    EXPECT_BITWISE(buf[t], rbuf[t], what);
    EXPECT_EQ(p16[t], rp16[t]) << what;
    if (counts[t])
      EXPECT_EQ(bits(ratios[t]), bits(rratios[t])) << what;
  }
}

// Rounding to 16 bits at the edges (overflow to inf, subnormals, ties) and
// widening of 16-bit gradients at the edges, on every path. Rounding: zero
// gradients and lr = 0 leave p as it was, so param16 is its rounding.
// Widening: SGD's first momentum buffer is the gradient as read.
TEST_F(OptimPaths, SixteenBitEdges) {
  std::vector<float> edge = {
      0.0f,           -0.0f,     1.0f,           65504.0f,        65519.996f,
      65520.0f,       -70000.0f, 6.1035156e-05f, 6.0e-5f,         5.96e-8f,
      2.9802322e-08f, 1e-9f,     1.00048828125f, 1.000732421875f, 3.0e38f,
      -3.0e38f,       INFINITY,  -INFINITY,      1.0039063f,      1.0117188f,
      -2.5e-41f};
  // Pad to 70 so the vector bodies (not only the tails) see the edges.
  std::vector<float> p;
  while (p.size() < 70)
    p.insert(p.end(), edge.begin(), edge.end());
  p.resize(70);
  int64_t n = (int64_t)p.size();
  for (const std::string &path : paths()) {
    ASSERT_EQ(dsrt_optim_simd_set(path.c_str()), DSRT_OK);
    for (int dt : {(int)DSRT_F16, (int)DSRT_BF16}) {
      std::string what = path + " " + dtypeName(dt);
      std::vector<float> q = p, zero(n, 0.0f), buf(n);
      std::vector<uint16_t> q16(n);
      ASSERT_EQ(dsrt_sgd(q.data(), zero.data(), DSRT_F32, nullptr, n, 1, 0.0f,
                         0.0f, 0.0f, 0, 0.0f, 1.0f, q16.data(), dt),
                DSRT_OK);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(q16[i], narrow(p[i], dt)) << what << " narrow " << p[i];
      Grad g(dt, p);
      ASSERT_EQ(dsrt_sgd(q.data(), g.data(), dt, buf.data(), n, 1, 0.0f, 0.9f,
                         0.0f, 0, 0.0f, 1.0f, nullptr, 0),
                DSRT_OK);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(bits(buf[i]), bits(g.f32[i])) << what << " widen " << p[i];
    }
  }
}

TEST_F(OptimPaths, BadArgumentsSayWhat) {
  float p[4] = {0}, g[4] = {0}, m[4] = {0}, v[4] = {0};
  auto adam = [&](int gdt, int64_t count, int64_t step, float *param) {
    return dsrt_adam(param, g, gdt, m, v, count, step, 1e-3f, 0.9f, 0.999f,
                     1e-8f, 0.0f, 0, 1, 1.0f, nullptr, 0);
  };
  auto lastError = [] { return std::string(dsrt_last_error()); };
  EXPECT_EQ(adam(DSRT_I32, 4, 1, p), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("grad_dtype 3"), std::string::npos) << lastError();
  EXPECT_EQ(adam(DSRT_F32, 4, 0, p), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("steps count from 1"), std::string::npos);
  EXPECT_EQ(adam(DSRT_F32, -1, 1, p), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(adam(DSRT_F32, 4, 1, nullptr), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("params[0] is NULL"), std::string::npos)
      << lastError();
  EXPECT_EQ(adam(DSRT_F32, 0, 1, nullptr), DSRT_OK); // nothing to update
  EXPECT_EQ(dsrt_adam(p, g, DSRT_F32, m, v, 4, 1, 1e-3f, 0.9f, 0.999f, 1e-8f,
                      0.0f, 0, 1, 1.0f, p, DSRT_F32),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("param16_dtype"), std::string::npos);
  EXPECT_EQ(dsrt_sgd(p, g, DSRT_F32, nullptr, 4, 1, 0.1f, 0.9f, 0.0f, 0, 0.0f,
                     1.0f, nullptr, 0),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("momentum_buf"), std::string::npos) << lastError();
  EXPECT_EQ(dsrt_sgd(p, g, DSRT_F32, m, 4, 1, 0.1f, 0.9f, 0.1f, 1, 0.0f, 1.0f,
                     nullptr, 0),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("nesterov"), std::string::npos);
  EXPECT_EQ(dsrt_lamb(p, g, DSRT_F32, m, v, 4, 1, 1e-3f, 0.9f, 0.999f, 1e-6f,
                      0.0f, 1, 10.0f, 0.01f, 1.0f, nullptr, 0, nullptr),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("min_coeff"), std::string::npos);
}

TEST(OptimSymbols, KernelsAreInTheSymbolTable) {
  const dsrt_symbol *table = nullptr;
  int64_t count = 0;
  ASSERT_EQ(dsrt_symbol_table(&table, &count), DSRT_OK);
  for (const char *name :
       {"dsrt_adam", "dsrt_adam_multi", "dsrt_sgd", "dsrt_sgd_multi",
        "dsrt_lamb", "dsrt_lamb_multi", "dsrt_optim_simd_set",
        "dsrt_optim_simd_get", "dsrt_cuda_adam_multi"}) {
    bool found = false;
    for (int64_t i = 0; i < count; ++i)
      found |= std::string(table[i].name) == name && table[i].address;
    EXPECT_TRUE(found) << name;
  }
}

} // namespace
