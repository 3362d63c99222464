//===- SwapTest.cpp - Adam over NVMe-swapped state vs Adam in memory ------===//
//
// dsrt_swap keys passed as exp_avg/exp_avg_sq make dsrt_adam_multi stream
// the moments through small staging buffers; the parameters and moments
// must come out bit for bit as from the call over memory, whatever the
// chunking (buffer sizes that cut tensors, 2 or more slots, one request at
// a time). An I/O error names the file.
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// A fresh directory under TMPDIR (or `base`), removed with its files.
struct TempDir {
  explicit TempDir(const char *base = nullptr) {
    std::string tmpl =
        std::string(base ? base
                         : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp")) +
        "/ds-swap-XXXXXX";
    path = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    if (!path.empty())
      (void)!system(("rm -rf '" + path + "'").c_str());
  }
  std::string path;
};

struct Tensors {
  std::vector<std::vector<float>> p, g, m, v;
  std::vector<int64_t> counts;
};

Tensors randomTensors(const std::vector<int64_t> &counts, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Tensors t;
  t.counts = counts;
  for (int64_t n : counts) {
    auto draw = [&] {
      std::vector<float> x(n);
      for (float &e : x)
        e = normal(rng);
      return x;
    };
    t.p.push_back(draw());
    t.g.push_back(draw());
    t.m.push_back(std::vector<float>(n, 0.0f));
    t.v.push_back(std::vector<float>(n, 0.0f));
  }
  return t;
}

int adamStep(int64_t n, float **p, const void **g, float **m, float **v,
             const int64_t *counts, int64_t step) {
  return dsrt_adam_multi(n, p, g, DSRT_F32, m, v, counts, step, 1e-3f, 0.9f,
                         0.999f, 1e-8f, 0.01f, /*adamw_mode=*/1,
                         /*bias_correction=*/1, 1.0f, nullptr, 0);
}

void expectSwappedEqualsMemory(const dsrt_swap_options &options,
                               const char *base = nullptr) {
  TempDir dir(base);
  ASSERT_FALSE(dir.path.empty());
  std::vector<int64_t> counts = {1, 2047, 2049, 6001, 0, 17, 10000};
  Tensors mem = randomTensors(counts, 7), swp = randomTensors(counts, 7);
  dsrt_swap *s = nullptr;
  ASSERT_EQ(dsrt_swap_open((dir.path + "/rank0").c_str(), &options, &s),
            DSRT_OK)
      << dsrt_last_error();
  int64_t n = int64_t(counts.size());
  std::vector<float *> pm(n), ps(n), mm(n), vm(n), ms(n), vs(n);
  std::vector<const void *> gm(n), gs(n);
  for (int64_t t = 0; t < n; ++t) {
    pm[t] = mem.p[t].data();
    ps[t] = swp.p[t].data();
    gm[t] = mem.g[t].data();
    gs[t] = swp.g[t].data();
    mm[t] = mem.m[t].data();
    vm[t] = mem.v[t].data();
    void *km = nullptr, *kv = nullptr;
    ASSERT_EQ(dsrt_swap_add(s, ("t" + std::to_string(t) + ".m").c_str(),
                            counts[t] * 4, &km),
              DSRT_OK)
        << dsrt_last_error();
    ASSERT_EQ(dsrt_swap_add(s, ("t" + std::to_string(t) + ".v").c_str(),
                            counts[t] * 4, &kv),
              DSRT_OK);
    ms[t] = static_cast<float *>(km);
    vs[t] = static_cast<float *>(kv);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_EQ(adamStep(n, pm.data(), gm.data(), mm.data(), vm.data(),
                       counts.data(), step),
              DSRT_OK);
    ASSERT_EQ(adamStep(n, ps.data(), gs.data(), ms.data(), vs.data(),
                       counts.data(), step),
              DSRT_OK)
        << dsrt_last_error();
  }
  for (int64_t t = 0; t < n; ++t) {
    EXPECT_EQ(0, std::memcmp(mem.p[t].data(), swp.p[t].data(), counts[t] * 4))
        << "tensor " << t;
    std::vector<float> m(counts[t]), v(counts[t]);
    ASSERT_EQ(dsrt_swap_load(ms[t], m.data()), DSRT_OK);
    ASSERT_EQ(dsrt_swap_load(vs[t], v.data()), DSRT_OK);
    EXPECT_EQ(0, std::memcmp(m.data(), mem.m[t].data(), counts[t] * 4));
    EXPECT_EQ(0, std::memcmp(v.data(), mem.v[t].data(), counts[t] * 4));
  }
  int64_t read = 0, written = 0;
  dsrt_swap_traffic(s, &read, &written);
  EXPECT_GT(read, 0);
  EXPECT_GT(written, 0);
  EXPECT_EQ(dsrt_swap_close(s), DSRT_OK);
}

dsrt_swap_options options(int64_t bufferSize, int count, int depth,
                          int single) {
  dsrt_swap_options o;
  o.block_size = 8192;
  o.queue_depth = depth;
  o.single_submit = single;
  o.buffer_count = count;
  o.buffer_size = bufferSize;
  return o;
}

TEST(Swap, AdamOverFilesEqualsAdamInMemory) {
  expectSwappedEqualsMemory(options(4096, 3, 4, 0));     // cuts tensors
  expectSwappedEqualsMemory(options(2048, 2, 1, 1));     // one block a chunk
  expectSwappedEqualsMemory(options(1 << 20, 4, 32, 0)); // one chunk
}

// tmpfs takes no O_DIRECT: the files are opened without it.
TEST(Swap, FallsBackWithoutDirectIO) {
  if (access("/dev/shm", W_OK) != 0)
    GTEST_SKIP() << "no writable /dev/shm";
  expectSwappedEqualsMemory(options(4096, 3, 4, 0), "/dev/shm");
}

TEST(Swap, StoreThenLoadRoundTrips) {
  TempDir dir;
  dsrt_swap *s = nullptr;
  ASSERT_EQ(dsrt_swap_open(dir.path.c_str(), nullptr, &s), DSRT_OK);
  void *key = nullptr;
  ASSERT_EQ(dsrt_swap_add(s, "x", 5000 * 4, &key), DSRT_OK);
  std::vector<float> x(5000), y(5000, -1.0f);
  for (int i = 0; i < 5000; ++i)
    x[i] = float(i) * 0.5f;
  ASSERT_EQ(dsrt_swap_load(key, y.data()), DSRT_OK); // zeros at first
  EXPECT_EQ(y[4999], 0.0f);
  ASSERT_EQ(dsrt_swap_store(key, x.data()), DSRT_OK);
  ASSERT_EQ(dsrt_swap_load(key, y.data()), DSRT_OK);
  EXPECT_EQ(x, y);
  int dummy = 0;
  EXPECT_EQ(dsrt_swap_load(&dummy, y.data()), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dsrt_swap_close(s), DSRT_OK);
}

// A file cut short behind the swap's back: the update fails naming it.
TEST(Swap, ReadErrorNamesTheFile) {
  TempDir dir;
  dsrt_swap *s = nullptr;
  dsrt_swap_options o = options(4096, 2, 4, 0);
  ASSERT_EQ(dsrt_swap_open(dir.path.c_str(), &o, &s), DSRT_OK);
  void *km = nullptr, *kv = nullptr;
  ASSERT_EQ(dsrt_swap_add(s, "w.exp_avg.swp", 8192 * 4, &km), DSRT_OK);
  ASSERT_EQ(dsrt_swap_add(s, "w.exp_avg_sq.swp", 8192 * 4, &kv), DSRT_OK);
  ASSERT_EQ(truncate((dir.path + "/w.exp_avg_sq.swp").c_str(), 0), 0);
  std::vector<float> p(8192, 1.0f), g(8192, 1.0f);
  float *pp = p.data(), *mp = static_cast<float *>(km),
        *vp = static_cast<float *>(kv);
  const void *gp = g.data();
  int64_t count = 8192;
  EXPECT_EQ(adamStep(1, &pp, &gp, &mp, &vp, &count, 1), DSRT_ERR_IO);
  std::string error = dsrt_last_error();
  EXPECT_NE(error.find(dir.path + "/w.exp_avg_sq.swp: read of"),
            std::string::npos)
      << error;
  EXPECT_EQ(dsrt_swap_close(s), DSRT_OK);
}

TEST(Swap, RefusesBadOptions) {
  dsrt_swap *s = nullptr;
  dsrt_swap_options o = options(4096, 1, 4, 0);
  EXPECT_EQ(dsrt_swap_open("/tmp", &o, &s), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("buffer_count 1"),
            std::string::npos);
  o = options(4096, 2, 4, 0);
  o.block_size = 1000;
  EXPECT_EQ(dsrt_swap_open("/tmp", &o, &s), DSRT_ERR_INVALID_ARGUMENT);
}

} // namespace
