//===- TorchOptimTest.cpp - ten steps vs LibTorch's torch::optim ----------===//
//
// The same parameters and the same gradient sequence through dsrt_adam /
// dsrt_sgd and through torch::optim::Adam, AdamW and SGD (LibTorch 1.13's
// C++ optimizers, whose formulas PyTorch's Python ones share). Scalars are
// handed to torch as the doubles of our floats so both sides round the same
// constants. Remaining differences come from LibTorch's vector kernels (FMA
// in add/addcmul): the bound is 1e-6 relative, measured max is printed.
//
//===----------------------------------------------------------------------===//

#include "OptimTestUtil.h"

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

using namespace ds::optimtest;

namespace {

constexpr int64_t kCount = 10007;
constexpr int kSteps = 10;

// max_i |a_i - b_i| / max_i |b_i|: the error relative to the tensor's scale
// (an element that passes near 0 keeps the absolute rounding error it got
// when it was large, so a per-element ratio would measure nothing useful).
double maxRelError(const std::vector<float> &a, const torch::Tensor &b) {
  torch::Tensor bc = b.contiguous();
  const float *pb = bc.data_ptr<float>();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs((double)a[i] - pb[i]));
    scale = std::max(scale, std::fabs((double)pb[i]));
  }
  return worst / scale;
}

torch::Tensor asTensor(std::vector<float> &v) {
  return torch::from_blob(v.data(), {(int64_t)v.size()}, torch::kFloat32);
}

// Runs kSteps of `ours` (given the step and the gradient) against `theirs`
// on a copy of the same parameters; returns the max relative error.
double compare(
    const std::function<void(int64_t, std::vector<float> &,
                             std::vector<float> &)> &ours,
    const std::function<std::unique_ptr<torch::optim::Optimizer>(torch::Tensor)>
        &theirs) {
  std::vector<float> p = uniform(kCount, -1, 1, 1);
  torch::Tensor tp = asTensor(p).clone().set_requires_grad(true);
  std::unique_ptr<torch::optim::Optimizer> opt = theirs(tp);
  for (int64_t step = 1; step <= kSteps; ++step) {
    std::vector<float> g = uniform(kCount, -1, 1, 100 + (unsigned)step);
    tp.mutable_grad() = asTensor(g).clone();
    opt->step();
    ours(step, p, g);
  }
  return maxRelError(p, tp.detach());
}

TEST(TorchOptim, AdamAndAdamWMatchTorch) {
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  for (int adamw : {0, 1}) {
    std::vector<float> m(kCount, 0.0f), v(kCount, 0.0f);
    double err = compare(
        [&](int64_t step, std::vector<float> &p, std::vector<float> &g) {
          ASSERT_EQ(dsrt_adam(p.data(), g.data(), DSRT_F32, m.data(), v.data(),
                              kCount, step, lr, b1, b2, eps, wd, adamw, 1, 1.0f,
                              nullptr, 0),
                    DSRT_OK);
        },
        [&](torch::Tensor t) -> std::unique_ptr<torch::optim::Optimizer> {
          if (adamw)
            return std::make_unique<torch::optim::AdamW>(
                std::vector<torch::Tensor>{t},
                torch::optim::AdamWOptions(lr)
                    .betas({(double)b1, (double)b2})
                    .eps(eps)
                    .weight_decay(wd));
          return std::make_unique<torch::optim::Adam>(
              std::vector<torch::Tensor>{t},
              torch::optim::AdamOptions(lr)
                  .betas({(double)b1, (double)b2})
                  .eps(eps)
                  .weight_decay(wd));
        });
    EXPECT_LE(err, 1e-6) << (adamw ? "AdamW" : "Adam");
    std::printf("[ info ] %s vs torch::optim, %d steps: max rel error %.3g\n",
                adamw ? "AdamW" : "Adam", kSteps, err);
  }
}

TEST(TorchOptim, SgdMatchesTorch) {
  struct Case {
    float momentum, dampening, wd;
    bool nesterov;
  } cases[] = {{0.0f, 0.0f, 0.0f, false},
               {0.9f, 0.1f, 0.01f, false},
               {0.9f, 0.0f, 0.01f, true}};
  const float lr = 0.05f;
  for (const Case &c : cases) {
    std::vector<float> buf(kCount, 0.0f);
    double err = compare(
        [&](int64_t step, std::vector<float> &p, std::vector<float> &g) {
          ASSERT_EQ(dsrt_sgd(p.data(), g.data(), DSRT_F32,
                             c.momentum != 0.0f ? buf.data() : nullptr, kCount,
                             step, lr, c.momentum, c.dampening, c.nesterov,
                             c.wd, 1.0f, nullptr, 0),
                    DSRT_OK);
        },
        [&](torch::Tensor t) -> std::unique_ptr<torch::optim::Optimizer> {
          return std::make_unique<torch::optim::SGD>(
              std::vector<torch::Tensor>{t}, torch::optim::SGDOptions(lr)
                                                 .momentum(c.momentum)
                                                 .dampening(c.dampening)
                                                 .weight_decay(c.wd)
                                                 .nesterov(c.nesterov));
        });
    EXPECT_LE(err, 1e-6) << "momentum " << c.momentum << " nesterov "
                         << c.nesterov;
    std::printf("[ info ] SGD momentum=%g nesterov=%d vs torch::optim, %d "
                "steps: max rel error %.3g\n",
                c.momentum, (int)c.nesterov, kSteps, err);
  }
}

} // namespace
