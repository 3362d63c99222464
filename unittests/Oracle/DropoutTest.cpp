//===- DropoutTest.cpp - dsnn.dropout's counter-based masks ---------------===//
//
// A keyed dropout through the whole lowering: the same (seed, stream, key)
// gives the same mask on every call, changing any of them gives another,
// the kept fraction is 1 - p within sampling error, kept values are scaled
// by exactly 1/(1-p), and the gradient ds-autodiff builds is exactly
// mask · scale · upstream (the backward recomputes the forward's mask).
//
//===----------------------------------------------------------------------===//
#include "DsnnRunner.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>
#include <vector>

using mlir::ds::exec::Runner;
using mlir::ds::exec::Tensor;

namespace {

constexpr int64_t kRows = 256, kCols = 256, kN = kRows * kCols;

std::string type() { return "tensor<256x256xf32>"; }

/// @f(x, key) with one dropout per (p, seed, stream) in `variants`.
std::unique_ptr<Runner> compileDropouts(double p) {
  std::string text;
  const int64_t variants[][2] = {{0, 0}, {0, 1}, {5, 0}};
  for (auto [i, v] : llvm::enumerate(variants))
    text += "func.func @f" + std::to_string(i) + "(%x: " + type() +
            ", %k: tensor<i64>) -> " + type() +
            " {\n  %y = dsnn.dropout %x key %k p " + std::to_string(p) +
            " {seed = " + std::to_string(v[0]) +
            " : i64, stream = " + std::to_string(v[1]) + " : i64} : " + type() +
            "\n  return %y : " + type() + "\n}\n";
  auto runner = ds::oracle::compileDsnn(text);
  EXPECT_FALSE(llvm::errorToBool(runner.takeError()));
  return runner ? std::move(*runner) : nullptr;
}

std::vector<float> run(Runner &r, const std::string &fn, const Tensor &x,
                       int64_t key) {
  auto outs = r.invoke(fn, {x, Tensor::scalar<int64_t>(key)});
  EXPECT_FALSE(llvm::errorToBool(outs.takeError()));
  return outs ? (*outs)[0].toVector<float>() : std::vector<float>();
}

Tensor ones() {
  return Tensor::fromVector<float>({kRows, kCols},
                                   std::vector<float>(kN, 1.0f));
}

double keptFraction(const std::vector<float> &y) {
  int64_t kept = 0;
  for (float v : y)
    kept += v != 0;
  return static_cast<double>(kept) / static_cast<double>(y.size());
}

TEST(Dropout, MasksAreReproducibleAndIndependent) {
  auto r = compileDropouts(0.1);
  ASSERT_TRUE(r);
  Tensor x = ones();
  std::vector<float> a = run(*r, "f0", x, 42);
  EXPECT_EQ(a, run(*r, "f0", x, 42)) << "same key, different mask";
  EXPECT_NE(a, run(*r, "f0", x, 43))
      << "the key (step, micro-batch) is ignored";
  EXPECT_NE(a, run(*r, "f1", x, 42)) << "the stream (op) is ignored";
  EXPECT_NE(a, run(*r, "f2", x, 42)) << "the seed is ignored";
  // Neighbouring keys and streams must not give correlated masks: the
  // fraction of elements where two masks agree is p² + (1-p)² for
  // independent ones.
  for (auto [fn, key] :
       {std::pair<std::string, int64_t>{"f0", 43}, {"f1", 42}}) {
    std::vector<float> b = run(*r, fn, x, key);
    int64_t agree = 0;
    for (int64_t i = 0; i < kN; ++i)
      agree += (a[i] != 0) == (b[i] != 0);
    EXPECT_NEAR(static_cast<double>(agree) / kN, 0.01 + 0.81, 0.01) << fn;
  }
}

TEST(Dropout, KeptFractionAndScale) {
  for (double p : {0.1, 0.5}) {
    auto r = compileDropouts(p);
    ASSERT_TRUE(r);
    Tensor x = ones();
    double sigma = std::sqrt(p * (1 - p) / kN);
    for (int64_t key : {1, 2, 1000}) {
      std::vector<float> y = run(*r, "f0", x, key);
      double kept = keptFraction(y);
      std::cout << "p " << p << " key " << key << ": kept " << kept << "\n";
      EXPECT_NEAR(kept, 1 - p, 5 * sigma) << "p " << p << ", key " << key;
      float scale = static_cast<float>(1.0 / (1.0 - p));
      for (float v : y)
        ASSERT_TRUE(v == 0.0f || v == scale)
            << v << " is neither 0 nor 1/(1-p)";
    }
  }
}

TEST(Dropout, GradientIsMaskTimesScaleTimesUpstream) {
  // loss = Σ dropout(x) · probe: dL/dx = mask · scale · probe, with the mask
  // of ds-autodiff's key, seed (the module's dsnn.init_seed, 3) and stream 0.
  std::vector<float> probe(kN);
  for (int64_t i = 0; i < kN; ++i)
    probe[i] = static_cast<float>(std::sin(0.37 * i) + 1.5);
  std::string text =
      "module attributes {dsnn.init_seed = 3 : i64} {\n"
      "func.func @forward(%x: " +
      type() +
      " {dsnn.param = #dsnn.param<name = \"x\", init = zeros>}, %probe: " +
      type() +
      ") -> tensor<f32> {\n"
      "  %y = dsnn.dropout %x p 0.2 : " +
      type() +
      "\n"
      "  %m = dsnn.mul %y, %probe : " +
      type() + ", " + type() + " -> " + type() +
      "\n"
      "  %l = dsnn.reduce_sum %m dims [0, 1] : " +
      type() +
      " -> tensor<f32>\n"
      "  return %l : tensor<f32>\n}\n"
      "func.func @mask(%x: " +
      type() + ", %k: tensor<i64>) -> " + type() +
      " {\n  %y = dsnn.dropout %x key %k p 0.2 {seed = 3 : i64} : " + type() +
      "\n  return %y : " + type() + "\n}\n}\n";
  auto r = ds::oracle::compileDsnn(text, "ds-autodiff");
  ASSERT_FALSE(llvm::errorToBool(r.takeError()));
  Tensor x = ones();
  Tensor probeT = Tensor::fromVector<float>({kRows, kCols}, probe);
  for (int64_t key : {7, 8}) {
    auto outs = (*r)->invoke("forward_backward",
                             {x, probeT, Tensor::scalar<int64_t>(key)});
    ASSERT_FALSE(llvm::errorToBool(outs.takeError()));
    std::vector<float> grad = (*outs)[1].toVector<float>();
    std::vector<float> maskScale = run(**r, "mask", x, key);
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_EQ(grad[i], maskScale[i] * probe[i]) << "element " << i;
  }
}

} // namespace
