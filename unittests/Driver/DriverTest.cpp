//===- DriverTest.cpp - Data, init, safetensors and metrics for ds-train
//---===//
#include "ds/Driver/Data.h"
#include "ds/Driver/Metrics.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/ParamMap.h"
#include "ds/Driver/Random.h"
#include "ds/Driver/SafeTensors.h"

#include "dsrt/dsrt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

using namespace ds::driver;

namespace {

/// A fresh file path under the system temp dir, removed at destruction.
struct TempFile {
  std::string path;
  explicit TempFile(llvm::StringRef suffix) {
    llvm::SmallString<128> p;
    llvm::sys::fs::createTemporaryFile("ds-driver-test", suffix, p);
    path = std::string(p);
  }
  ~TempFile() { llvm::sys::fs::remove(path); }
  void write(const std::string &bytes) const {
    std::ofstream(path, std::ios::binary) << bytes;
  }
};

std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

//===----------------------------------------------------------------------===//
// Random
//===----------------------------------------------------------------------===//

TEST(Random, SplitMix64ReferenceValues) {
  // The first two outputs of SplitMix64 seeded with 0 (reference values of
  // the published generator): state advances by the golden gamma each call.
  EXPECT_EQ(mix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(mix64(0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
}

TEST(Random, NormalMomentsAndDeterminism) {
  const int n = 200000;
  double sum = 0, sumSq = 0;
  for (int i = 0; i < n; ++i) {
    double x = randomNormal(7, streamOf("w"), i);
    sum += x;
    sumSq += x * x;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  // Standard errors: mean 1/sqrt(n) ~ 0.0022, variance sqrt(2/n) ~ 0.0032.
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.015);
  EXPECT_EQ(randomNormal(7, streamOf("w"), 123),
            randomNormal(7, streamOf("w"), 123));
  EXPECT_NE(randomNormal(7, streamOf("w"), 123),
            randomNormal(8, streamOf("w"), 123));
}

TEST(Random, UniformInUnitInterval) {
  for (int i = 0; i < 10000; ++i) {
    double u = randomUniform(1, 2, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Random, BlockOfNormalsIsBitwiseTheScalarDraws) {
  // Every scale kind: tiny (subnormal floats, zeros of either sign), huge
  // (infinities), negative; offsets past 2^32; a count that is not a
  // whole number of blocks.
  const int64_t count = 3 * detail::kCosBlock * 100 + 17;
  std::vector<float> block(count);
  for (double scale : {1.0, 0.02, -0.5, 1e-42, 1e38})
    for (uint64_t first : {uint64_t(0), uint64_t(12345678901)}) {
      uint64_t key = streamKey(3, streamOf("h.7.attn.c_attn.weight"));
      randomNormalsAt(key, scale, first, count, block.data());
      for (int64_t i = 0; i < count; ++i) {
        float scalar =
            static_cast<float>(scale * randomNormalAt(key, first + i));
        ASSERT_EQ(std::memcmp(&scalar, &block[i], sizeof scalar), 0)
            << "scale " << scale << " element " << first + i << ": " << scalar
            << " vs " << block[i];
      }
    }
}

TEST(Random, BlockCosineIsWithinItsBound) {
  // The bound randomNormalsAt's rounding check relies on, against long
  // double cosl: next to each multiple of pi/2 in [0, 2 pi] (where cos
  // vanishes or the reduction changes quadrant) and over the range.
  std::vector<double> xs;
  for (int k = 0; k <= 4; ++k)
    for (double toward : {-1.0, 10.0}) {
      double x = k * M_PI_2;
      for (int j = 0; j < 20000 && x >= 0 && x <= 2 * M_PI; ++j) {
        xs.push_back(x);
        x = std::nextafter(x, toward);
      }
    }
  for (int i = 0; i < 200000; ++i)
    xs.push_back(2.0 * M_PI * randomUniform(5, 6, i));
  xs.resize((xs.size() / detail::kCosBlock + 1) * detail::kCosBlock, 1.0);
  std::vector<double> cs(xs.size());
  for (size_t i = 0; i < xs.size(); i += detail::kCosBlock)
    detail::cosBlock(&xs[i], &cs[i]);
  for (size_t i = 0; i < xs.size(); ++i) {
    long double exact = cosl(static_cast<long double>(xs[i]));
    long double error = fabsl(cs[i] - exact);
    ASSERT_LE(error, fabsl(exact) * 0x1.0p-44L + 0x1.0p-90L)
        << "cos(" << xs[i] << ")";
  }
}

//===----------------------------------------------------------------------===//
// ParamInit
//===----------------------------------------------------------------------===//

TEST(ParamInit, KindsAndScale) {
  std::vector<float> v(4096);
  initParameter("b", InitKind::Zeros, 0.0, 0, 0, v.size(), v.data());
  for (float x : v)
    ASSERT_EQ(x, 0.0f);
  initParameter("g", InitKind::Ones, 0.0, 0, 0, v.size(), v.data());
  for (float x : v)
    ASSERT_EQ(x, 1.0f);
  initParameter("u", InitKind::Uniform, 0.1, 0, 0, v.size(), v.data());
  for (float x : v)
    ASSERT_LE(std::fabs(x), 0.1f);
  initParameter("w", InitKind::Normal, 0.02, 0, 0, v.size(), v.data());
  double sumSq = 0;
  for (float x : v)
    sumSq += double(x) * x;
  EXPECT_NEAR(std::sqrt(sumSq / v.size()), 0.02, 0.002);
}

TEST(ParamInit, ShardsComposeToTheWhole) {
  // A rank initializing elements [first, first + count) gets exactly the
  // slice of the full tensor: what ZeRO-3 sharded init relies on.
  std::vector<float> whole(100), a(37), b(63);
  initParameter("h.0.w", InitKind::Normal, 0.02, 3, 0, 100, whole.data());
  initParameter("h.0.w", InitKind::Normal, 0.02, 3, 0, 37, a.data());
  initParameter("h.0.w", InitKind::Normal, 0.02, 3, 37, 63, b.data());
  for (int i = 0; i < 37; ++i)
    EXPECT_EQ(whole[i], a[i]);
  for (int i = 0; i < 63; ++i)
    EXPECT_EQ(whole[37 + i], b[i]);
}

TEST(ParamInit, AnyThreadCountDrawsTheSameValues) {
  // Large tensors are drawn by the runtime's threads in pieces; each value
  // must still be Box-Muller of its own index (the per-element formula).
  const int64_t n = 300000, first = 5;
  const int before = dsrt_threads_get();
  for (int threads : {1, 3, 4}) {
    dsrt_threads_set(threads);
    std::vector<float> v(n);
    initParameter("h.1.w", InitKind::Normal, 0.02, 9, first, n, v.data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(v[i], static_cast<float>(
                          0.02 * randomNormal(9, streamOf("h.1.w"), first + i)))
          << "element " << i << " with " << threads << " threads";
  }
  dsrt_threads_set(before);
}

TEST(ParamInit, NamesAreIndependentStreams) {
  std::vector<float> x(8), y(8);
  initParameter("a", InitKind::Normal, 1.0, 0, 0, 8, x.data());
  initParameter("b", InitKind::Normal, 1.0, 0, 0, 8, y.data());
  EXPECT_NE(0, std::memcmp(x.data(), y.data(), sizeof(float) * 8));
}

//===----------------------------------------------------------------------===//
// TokenData
//===----------------------------------------------------------------------===//

TEST(TokenData, TextIsBytes) {
  TempFile f(".txt");
  f.write("Hi!\n");
  auto data = TokenData::load(f.path);
  ASSERT_TRUE(bool(data)) << errorText(data.takeError());
  EXPECT_EQ(data->vocab(), 256);
  ASSERT_EQ(data->size(), 4);
  EXPECT_EQ(data->at(0), 'H');
  EXPECT_EQ(data->at(3), '\n');
}

TEST(TokenData, BinIsLittleEndianUint16) {
  TempFile f(".bin");
  f.write(std::string("\x01\x00\x34\x12\xff\xff", 6));
  auto data = TokenData::load(f.path);
  ASSERT_TRUE(bool(data)) << errorText(data.takeError());
  ASSERT_EQ(data->size(), 3);
  EXPECT_EQ(data->at(0), 1);
  EXPECT_EQ(data->at(1), 0x1234);
  EXPECT_EQ(data->at(2), 0xffff);
  // Not scanned: ids are checked against the model's as windows are read.
  EXPECT_EQ(data->vocab(), 0);
}

TEST(TokenData, OddBinSizeIsAnError) {
  TempFile f(".bin");
  f.write(std::string("\x01\x00\x02", 3));
  auto data = TokenData::load(f.path);
  ASSERT_FALSE(bool(data));
  EXPECT_NE(errorText(data.takeError()).find("3 bytes is not a whole number"),
            std::string::npos);
}

TEST(TokenData, MissingFileAndUnknownFormat) {
  auto missing = TokenData::load("/nonexistent/corpus.txt");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(errorText(missing.takeError()).find("cannot read data file"),
            std::string::npos);
  auto csv = TokenData::load("corpus.csv");
  ASSERT_FALSE(bool(csv));
  EXPECT_NE(errorText(csv.takeError()).find("unknown data format '.csv'"),
            std::string::npos);
}

TEST(TokenData, SequentialOrderFollowsTheFormula) {
  // N = 20 tokens 0..19, T = 3: span = N - T - 1 = 16; sample j of step s
  // starts at ((s * B + j) * T) mod 16 with B = 4.
  TempFile f(".bin");
  std::string bytes;
  for (int i = 0; i < 20; ++i)
    bytes += std::string{char(i), char(0)};
  f.write(bytes);
  auto seq = TokenData::load(f.path);
  ASSERT_TRUE(bool(seq));
  EXPECT_EQ(seq->sampleStart(0, 4, 0, 3, DataOrder::Sequential, 0), 0);
  EXPECT_EQ(seq->sampleStart(0, 4, 3, 3, DataOrder::Sequential, 0), 9);
  EXPECT_EQ(seq->sampleStart(1, 4, 2, 3, DataOrder::Sequential, 0), 2); // 18%16
  std::vector<int64_t> in(2 * 3), tgt(2 * 3);
  // Step 1, samples 2 and 3 (what rank 1 of 2 gets with B = 4).
  ASSERT_FALSE(bool(seq->fillBatch(1, 4, 2, 2, 3, DataOrder::Sequential, 0,
                                   in.data(), tgt.data())));
  EXPECT_EQ(in, (std::vector<int64_t>{2, 3, 4, 5, 6, 7})); // starts 2, 5
  EXPECT_EQ(tgt, (std::vector<int64_t>{3, 4, 5, 6, 7, 8}));
}

TEST(TokenData, ShuffledOrderIsASeededPermutation) {
  TokenData data = TokenData::synthetic(1000, 256, 0);
  int64_t span = 1000 - 1 - 1; // T = 1
  std::set<int64_t> seen;
  for (int64_t i = 0; i < span; ++i)
    seen.insert(data.sampleStart(0, 1, i, 1, DataOrder::Shuffled, 5));
  EXPECT_EQ(int64_t(seen.size()), span);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), span - 1);
  int differences = 0;
  for (int64_t i = 0; i < 50; ++i)
    differences += data.sampleStart(0, 1, i, 1, DataOrder::Shuffled, 5) !=
                   data.sampleStart(0, 1, i, 1, DataOrder::Shuffled, 6);
  EXPECT_GT(differences, 40);
}

TEST(TokenData, SampleIndexVisitsEverySampleOncePerPass) {
  // Sequential: (s * B + j) mod n; shuffled: a seeded permutation of that.
  EXPECT_EQ(sampleIndex(2, 8, 3, 20, DataOrder::Sequential, 0), 19);
  EXPECT_EQ(sampleIndex(2, 8, 4, 20, DataOrder::Sequential, 0), 0);
  std::set<int64_t> seen;
  for (int64_t j = 0; j < 20; ++j)
    seen.insert(sampleIndex(0, 20, j, 20, DataOrder::Shuffled, 7));
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(*seen.rbegin(), 19);
}

TEST(TokenData, CheckFits) {
  TokenData data = TokenData::synthetic(10, 256, 0);
  EXPECT_FALSE(bool(data.checkFits(4, 256, "corpus")));
  std::string small = errorText(data.checkFits(9, 256, "corpus"));
  EXPECT_NE(small.find("corpus: 10 tokens"), std::string::npos) << small;
  std::string vocab = errorText(data.checkFits(4, 100, "corpus"));
  EXPECT_NE(vocab.find("model's vocab_size is 100"), std::string::npos)
      << vocab;
}

//===----------------------------------------------------------------------===//
// SafeTensors
//===----------------------------------------------------------------------===//

TEST(SafeTensors, ParsesHandWrittenFile) {
  // Built byte by byte from the format: header length, JSON, data.
  std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},)"
      R"("__metadata__":{"format":"pt"}})";
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes += char((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  float a[2] = {1.5f, -2.0f};
  bytes.append(reinterpret_cast<const char *>(a), 8);
  bytes += std::string("\x80\x3f", 2); // bf16 1.0
  TempFile f(".safetensors");
  f.write(bytes);
  auto file = SafeTensorsFile::open(f.path);
  ASSERT_TRUE(bool(file)) << errorText(file.takeError());
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  auto va = file->readF32("a");
  ASSERT_TRUE(bool(va));
  EXPECT_EQ(*va, (std::vector<float>{1.5f, -2.0f}));
  auto vb = file->readF32("b");
  ASSERT_TRUE(bool(vb));
  EXPECT_EQ((*vb)[0], 1.0f);
  auto missing = file->readF32("c");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(errorText(missing.takeError()).find("no tensor named \"c\""),
            std::string::npos);
}

TEST(SafeTensors, ClaimedSizesAreCheckedBeforeAnyAllocation) {
  // 2^31 x 2^31 x 4 bytes overflows 63 bits; 2^30 elements claim 4 GiB of
  // an 8-byte data section.
  auto headerOnly = [](const std::string &header) {
    std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    std::string bytes;
    for (int i = 0; i < 8; ++i)
      bytes += char((padded.size() >> (8 * i)) & 0xff);
    return bytes + padded + std::string(8, '\0');
  };
  TempFile f(".safetensors");
  f.write(headerOnly(R"({"w":{"dtype":"F32","shape":[2147483648,2147483648],)"
                     R"("data_offsets":[0,8]}})"));
  auto file = SafeTensorsFile::open(f.path);
  ASSERT_FALSE(bool(file));
  EXPECT_NE(errorText(file.takeError())
                .find("tensor \"w\": shape [2147483648,2147483648] holds "
                      "more bytes than a file can"),
            std::string::npos);
  f.write(headerOnly(R"({"w":{"dtype":"F32","shape":[1073741824],)"
                     R"("data_offsets":[0,8]}})"));
  file = SafeTensorsFile::open(f.path);
  ASSERT_FALSE(bool(file));
  EXPECT_NE(errorText(file.takeError())
                .find("holds 8 bytes but its shape and dtype need 4294967296"),
            std::string::npos);
}

TEST(SafeTensors, WriteThenRead) {
  TempFile f(".safetensors");
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<uint16_t> h = {0x3C00, 0x0001}; // f16 1.0 and 2^-24
  ASSERT_FALSE(bool(writeSafeTensors(
      f.path, {{"w", "F32", {2, 3}, w.data()}, {"h", "F16", {2}, h.data()}},
      {{"ds", "test"}})));
  // The data section starts 8-byte aligned.
  std::ifstream in(f.path, std::ios::binary);
  uint64_t len = 0;
  in.read(reinterpret_cast<char *>(&len), 8);
  EXPECT_EQ(len % 8, 0u);
  auto file = SafeTensorsFile::open(f.path);
  ASSERT_TRUE(bool(file)) << errorText(file.takeError());
  EXPECT_EQ(file->tensors()[0].name, "w");
  EXPECT_EQ(file->tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*file->readF32("w"), w);
  auto hv = file->readF32("h");
  ASSERT_TRUE(bool(hv));
  EXPECT_EQ((*hv)[0], 1.0f);
  EXPECT_EQ((*hv)[1], std::ldexp(1.0f, -24));
}

TEST(SafeTensors, TruncatedAndCorruptFilesAreErrors) {
  TempFile f(".safetensors");
  std::vector<float> w(16, 1.0f);
  ASSERT_FALSE(bool(writeSafeTensors(f.path, {{"w", "F32", {16}, w.data()}})));
  std::string whole;
  {
    std::ifstream in(f.path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  f.write(whole.substr(0, whole.size() - 4));
  auto truncated = SafeTensorsFile::open(f.path);
  ASSERT_FALSE(bool(truncated));
  EXPECT_NE(errorText(truncated.takeError()).find("tensor \"w\""),
            std::string::npos);
  f.write(std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10));
  auto badLen = SafeTensorsFile::open(f.path);
  ASSERT_FALSE(bool(badLen));
  EXPECT_NE(errorText(badLen.takeError()).find("runs past the end"),
            std::string::npos);
  f.write(std::string("\x04\x00\x00\x00\x00\x00\x00\x00[1,2", 12));
  auto notJson = SafeTensorsFile::open(f.path);
  ASSERT_FALSE(bool(notJson));
  EXPECT_NE(errorText(notJson.takeError()).find("not a JSON object"),
            std::string::npos);
}

TEST(SafeTensors, HalfConversions) {
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(f16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(f16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(f16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16ToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(f16ToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7E00)));
}

TEST(SafeTensors, NarrowingRoundsToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties go to even (1);
  // a hair above rounds up.
  EXPECT_EQ(floatToBF16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(floatToBF16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
            0x3F81);
  EXPECT_EQ(floatToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(floatToBF16(-2.0f), 0xC000);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  EXPECT_TRUE(std::isinf(bf16ToFloat(floatToBF16(INFINITY))));
  // f16: ties to even, overflow past 65520 to inf, subnormals kept.
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);
  EXPECT_EQ(floatToF16(std::ldexp(1023.0f, -24)), 0x03FF);
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

TEST(Metrics, JsonLinesInOrder) {
  TempFile f(".jsonl");
  auto writer = MetricsWriter::open(f.path);
  ASSERT_TRUE(bool(writer));
  writer->write({{"step", int64_t(1)}, {"loss", 5.5}, {"rank", int64_t(0)}});
  writer->write({{"step", int64_t(2)}, {"loss", 5.25}, {"skipped", false}});
  std::ifstream in(f.path);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l1, R"({"step":1,"loss":5.5,"rank":0})");
  EXPECT_EQ(l2, R"({"step":2,"loss":5.25,"skipped":false})");
  EXPECT_GT(peakRssBytes(), 1 << 20);
}

TEST(Metrics, UnwritablePathIsAnError) {
  auto writer = MetricsWriter::open("/nonexistent/dir/m.jsonl");
  ASSERT_FALSE(bool(writer));
  EXPECT_NE(errorText(writer.takeError()).find("cannot open the metrics file"),
            std::string::npos);
}

// A wrapper's export names its parameters under one more leading path than
// the model's own checkpoint; the identity map drops the shortest such path
// that names every parameter, and nothing when none does.
TEST(ParamMap, StripsTheWrapperPrefixThatNamesEveryParameter) {
  std::set<std::string> file = {"model.embed.weight", "lm_head.weight",
                                "model.layers.0.w"};
  auto inFile = [&](llvm::StringRef n) { return file.count(n.str()) > 0; };
  ParamMap map;
  std::vector<std::string> wrapped = {"model.model.embed.weight",
                                      "model.lm_head.weight",
                                      "model.model.layers.0.w"};
  EXPECT_EQ(map.stripWrapperPrefix(wrapped, inFile), "model.");
  EXPECT_EQ(map.sourceOf("model.model.layers.0.w", inFile).name,
            "model.layers.0.w");
  // A name the file holds as it is stays as it is.
  EXPECT_EQ(map.sourceOf("model.embed.weight", inFile).name,
            "model.embed.weight");

  std::vector<std::string> own = {"model.embed.weight", "lm_head.weight"};
  EXPECT_EQ(map.stripWrapperPrefix(own, inFile), "");

  // Two levels of wrapping: the shortest path that works is longer.
  std::vector<std::string> twice = {"a.b.model.embed.weight",
                                    "a.b.lm_head.weight"};
  EXPECT_EQ(map.stripWrapperPrefix(twice, inFile), "a.b.");

  // No path names every parameter: the names stay, so the error is about
  // the model's own name.
  std::vector<std::string> foreign = {"model.model.embed.weight",
                                      "model.other.weight"};
  EXPECT_EQ(map.stripWrapperPrefix(foreign, inFile), "");
  EXPECT_EQ(map.sourceOf("model.other.weight", inFile).name,
            "model.other.weight");
}

} // namespace
