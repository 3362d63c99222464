//===- OracleTest.cpp - dsnn ops through the whole lowering vs LibTorch ---===//
//
// Each case is one dsnn op in a function @f(%a, %b, ...) -> %r: it goes
// through ds-lower-nn-to-linalg + ds-lower-to-llvm + the JIT and is
// compared with the same computation in LibTorch on the same inputs (f32:
// standard normal from a fixed seed; i64: uniform in [0, intHigh)).
//
// Adding an op is one row of kCases:
//   {"name", {"arg types"...}, "result type", "dsnn op text", torch lambda}
//
// This is the only translation unit that includes LibTorch (~27 s).
//
//===----------------------------------------------------------------------===//

#include "DsnnRunner.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

#include <functional>
#include <string>
#include <vector>

using namespace mlir::ds::exec;
using In = const std::vector<torch::Tensor> &;

namespace {

struct OracleCase {
  std::string name;
  std::vector<std::string> argTypes;
  std::string resultType;
  std::string body; // defines %r from %a, %b, ...
  std::function<torch::Tensor(In)> torchFn;
  int64_t intHigh = 4; // integer inputs are uniform in [0, intHigh)
  double rtol = 1e-5, atol = 1e-5;
};

// PyTorch 1.13 has no rms_norm; this is its definition.
torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &g,
                      double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) * g;
}

torch::Tensor causalAttention(const torch::Tensor &q, const torch::Tensor &k,
                              const torch::Tensor &v, double scale) {
  auto s = torch::matmul(q, k.transpose(-2, -1)) * scale;
  int64_t t = q.size(-2);
  auto mask = torch::ones({t, t}, torch::kBool).triu(1);
  s = s.masked_fill(mask, -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(s, -1), v);
}

// The vector-Jacobian product of f at the primals x[0..n) with cotangent
// x[n] (the last input), with respect to primal `wrt`: LibTorch autograd,
// independent of ds's own VJP rules.
torch::Tensor
vjp(const std::function<torch::Tensor(std::vector<torch::Tensor>)> &f, In x,
    size_t wrt) {
  torch::AutoGradMode enable(true);
  std::vector<torch::Tensor> primals;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    torch::Tensor p = x[i].detach().clone();
    if (p.is_floating_point())
      p.requires_grad_(true);
    primals.push_back(p);
  }
  torch::Tensor y = f(primals);
  return torch::autograd::grad({y}, {primals[wrt]}, {x.back()})[0];
}

const std::vector<OracleCase> &cases() {
  namespace F = torch::nn::functional;
  static const std::vector<OracleCase> kCases = {
      // Products (through dsrt_sgemm).
      {"linear_bias",
       {"tensor<2x3x8xf32>", "tensor<5x8xf32>", "tensor<5xf32>"},
       "tensor<2x3x5xf32>",
       "dsnn.linear %a, %b, %c : (tensor<2x3x8xf32>, tensor<5x8xf32>, "
       "tensor<5xf32>) -> tensor<2x3x5xf32>",
       [](In x) { return F::linear(x[0], x[1], x[2]); }},
      {"matmul_transpose_b",
       {"tensor<4x8xf32>", "tensor<3x8xf32>"},
       "tensor<4x3xf32>",
       "dsnn.matmul %a, %b {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> "
       "-> tensor<4x3xf32>",
       [](In x) { return torch::matmul(x[0], x[1].t()); }},
      {"batch_matmul_transpose_a",
       {"tensor<2x3x8x4xf32>", "tensor<2x3x8x5xf32>"},
       "tensor<2x3x4x5xf32>",
       "dsnn.batch_matmul %a, %b {transpose_a} : tensor<2x3x8x4xf32>, "
       "tensor<2x3x8x5xf32> -> tensor<2x3x4x5xf32>",
       [](In x) { return torch::matmul(x[0].transpose(-2, -1), x[1]); }},
      {"attention_causal",
       {"tensor<2x2x6x4xf32>", "tensor<2x2x6x4xf32>", "tensor<2x2x6x3xf32>"},
       "tensor<2x2x6x3xf32>",
       "dsnn.attention %a, %b, %c {causal, scale = 0.5 : f64} : "
       "tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x3xf32> -> "
       "tensor<2x2x6x3xf32>",
       [](In x) { return causalAttention(x[0], x[1], x[2], 0.5); }},
      // Activations (erf through libm).
      {"gelu",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.gelu %a : tensor<4x8xf32>",
       [](In x) { return torch::gelu(x[0]); }},
      {"gelu_tanh",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.gelu %a approximate tanh : tensor<4x8xf32>",
       [](In x) { return torch::gelu(x[0], "tanh"); }},
      {"relu",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.relu %a : tensor<4x8xf32>",
       [](In x) { return torch::relu(x[0]); }},
      {"silu",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.silu %a : tensor<4x8xf32>",
       [](In x) { return F::silu(x[0]); }},
      {"tanh",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.tanh %a : tensor<4x8xf32>",
       [](In x) { return torch::tanh(x[0]); }},
      {"exp",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.exp %a : tensor<4x8xf32>",
       [](In x) { return torch::exp(x[0]); }},
      {"rsqrt",
       {"tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "%e = dsnn.exp %a : tensor<4x8xf32>\n"
       "%r = dsnn.rsqrt %e : tensor<4x8xf32>",
       [](In x) { return torch::rsqrt(torch::exp(x[0])); }},
      {"softmax",
       {"tensor<3x4x10xf32>"},
       "tensor<3x4x10xf32>",
       "dsnn.softmax %a dim -1 : tensor<3x4x10xf32>",
       [](In x) { return torch::softmax(x[0], -1); }},
      {"log_softmax_dim1",
       {"tensor<3x4x10xf32>"},
       "tensor<3x4x10xf32>",
       "dsnn.log_softmax %a dim 1 : tensor<3x4x10xf32>",
       [](In x) { return torch::log_softmax(x[0], 1); }},
      // Normalization.
      {"layer_norm",
       {"tensor<2x5x16xf32>", "tensor<16xf32>", "tensor<16xf32>"},
       "tensor<2x5x16xf32>",
       "dsnn.layer_norm %a, %b, %c eps 1.0e-05 : tensor<2x5x16xf32>, "
       "tensor<16xf32>, tensor<16xf32>",
       [](In x) { return torch::layer_norm(x[0], {16}, x[1], x[2], 1e-5); }},
      {"rms_norm",
       {"tensor<2x5x16xf32>", "tensor<16xf32>"},
       "tensor<2x5x16xf32>",
       "dsnn.rms_norm %a, %b eps 1.0e-06 : tensor<2x5x16xf32>, "
       "tensor<16xf32>",
       [](In x) { return rmsNorm(x[0], x[1], 1e-6); }},
      // Broadcasting arithmetic.
      {"add_broadcast",
       {"tensor<8x6xf32>", "tensor<6xf32>"},
       "tensor<8x6xf32>",
       "dsnn.add %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>",
       [](In x) { return x[0] + x[1]; }},
      {"sub_outer",
       {"tensor<8x1xf32>", "tensor<6xf32>"},
       "tensor<8x6xf32>",
       "dsnn.sub %a, %b : tensor<8x1xf32>, tensor<6xf32> -> tensor<8x6xf32>",
       [](In x) { return x[0] - x[1]; }},
      {"mul_scalar",
       {"tensor<8x6xf32>", "tensor<f32>"},
       "tensor<8x6xf32>",
       "dsnn.mul %a, %b : tensor<8x6xf32>, tensor<f32> -> tensor<8x6xf32>",
       [](In x) { return x[0] * x[1]; }},
      {"div_rows",
       {"tensor<8x6xf32>", "tensor<8x1xf32>"},
       "tensor<8x6xf32>",
       "dsnn.div %a, %b : tensor<8x6xf32>, tensor<8x1xf32> -> "
       "tensor<8x6xf32>",
       [](In x) { return x[0] / x[1]; },
       4,
       1e-4,
       1e-5},
      // Shapes and reductions.
      {"transpose",
       {"tensor<2x3x4xf32>"},
       "tensor<3x2x4xf32>",
       "dsnn.transpose %a perm [1, 0, 2] : tensor<2x3x4xf32> -> "
       "tensor<3x2x4xf32>",
       [](In x) {
         return x[0].permute({1, 0, 2});
       }},
      {"reshape",
       {"tensor<2x3x4xf32>"},
       "tensor<6x4xf32>",
       "dsnn.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>",
       [](In x) {
         return x[0].reshape({6, 4});
       }},
      {"concat",
       {"tensor<2x3x4xf32>", "tensor<2x3x2xf32>"},
       "tensor<2x3x6xf32>",
       "dsnn.concat %a, %b dim -1 : tensor<2x3x4xf32>, tensor<2x3x2xf32> -> "
       "tensor<2x3x6xf32>",
       [](In x) {
         return torch::cat({x[0], x[1]}, -1);
       }},
      {"reduce_sum",
       {"tensor<2x3x4xf32>"},
       "tensor<4xf32>",
       "dsnn.reduce_sum %a dims [0, 1] : tensor<2x3x4xf32> -> tensor<4xf32>",
       [](In x) {
         return x[0].sum(std::vector<int64_t>{0, 1});
       }},
      {"reduce_mean_keepdims",
       {"tensor<2x3x4xf32>"},
       "tensor<2x3x1xf32>",
       "dsnn.reduce_mean %a dims [-1] {keep_dims} : tensor<2x3x4xf32> -> "
       "tensor<2x3x1xf32>",
       [](In x) { return x[0].mean(std::vector<int64_t>{-1}, true); }},
      // Embedding and losses (i64 inputs).
      {"embedding",
       {"tensor<2x5xi64>", "tensor<11x4xf32>"},
       "tensor<2x5x4xf32>",
       "dsnn.embedding %a, %b : tensor<2x5xi64>, tensor<11x4xf32> -> "
       "tensor<2x5x4xf32>",
       [](In x) { return F::embedding(x[0], x[1]); },
       11},
      {"cross_entropy",
       {"tensor<2x5x7xf32>", "tensor<2x5xi64>"},
       "tensor<f32>",
       "dsnn.cross_entropy %a, %b : tensor<2x5x7xf32>, tensor<2x5xi64> -> "
       "tensor<f32>",
       [](In x) {
         return F::cross_entropy(x[0].reshape({10, 7}), x[1].reshape({10}));
       },
       7},
      // Gradients (dsnn's fused *_grad ops) vs LibTorch autograd.
      {"gelu_grad",
       {"tensor<4x8xf32>", "tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.gelu_grad %a, %b : tensor<4x8xf32>",
       [](In x) {
         return vjp([](auto p) { return torch::gelu(p[0]); }, x, 0);
       }},
      {"gelu_tanh_grad",
       {"tensor<4x8xf32>", "tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.gelu_grad %a, %b approximate tanh : tensor<4x8xf32>",
       [](In x) {
         return vjp([](auto p) { return torch::gelu(p[0], "tanh"); }, x, 0);
       }},
      {"silu_grad",
       {"tensor<4x8xf32>", "tensor<4x8xf32>"},
       "tensor<4x8xf32>",
       "dsnn.silu_grad %a, %b : tensor<4x8xf32>",
       [](In x) { return vjp([](auto p) { return F::silu(p[0]); }, x, 0); }},
      {"softmax_grad",
       {"tensor<3x10xf32>", "tensor<3x10xf32>"},
       "tensor<3x10xf32>",
       "%y = dsnn.softmax %a dim -1 : tensor<3x10xf32>\n"
       "  %r = dsnn.softmax_grad %y, %b dim -1 : tensor<3x10xf32>",
       [](In x) {
         return vjp([](auto p) { return torch::softmax(p[0], -1); }, x, 0);
       }},
      {"log_softmax_grad",
       {"tensor<3x10xf32>", "tensor<3x10xf32>"},
       "tensor<3x10xf32>",
       "%y = dsnn.log_softmax %a dim -1 : tensor<3x10xf32>\n"
       "  %r = dsnn.log_softmax_grad %y, %b dim -1 : tensor<3x10xf32>",
       [](In x) {
         return vjp([](auto p) { return torch::log_softmax(p[0], -1); }, x, 0);
       }},
      {"layer_norm_grad_input",
       {"tensor<2x5x16xf32>", "tensor<16xf32>", "tensor<2x5x16xf32>"},
       "tensor<2x5x16xf32>",
       "%r, %dw, %db = dsnn.layer_norm_grad %a, %b, %c eps 1.0e-05 : "
       "tensor<2x5x16xf32>, tensor<16xf32>",
       [](In x) {
         return vjp(
             [](auto p) {
               return torch::layer_norm(p[0], {16}, p[1], {}, 1e-5);
             },
             x, 0);
       },
       4,
       1e-4,
       1e-5},
      {"layer_norm_grad_weight",
       {"tensor<2x5x16xf32>", "tensor<16xf32>", "tensor<2x5x16xf32>"},
       "tensor<16xf32>",
       "%dx, %r, %db = dsnn.layer_norm_grad %a, %b, %c eps 1.0e-05 : "
       "tensor<2x5x16xf32>, tensor<16xf32>",
       [](In x) {
         return vjp(
             [](auto p) {
               return torch::layer_norm(p[0], {16}, p[1], {}, 1e-5);
             },
             x, 1);
       },
       4,
       1e-4,
       1e-5},
      {"cross_entropy_grad",
       {"tensor<2x5x7xf32>", "tensor<2x5xi64>", "tensor<f32>"},
       "tensor<2x5x7xf32>",
       "dsnn.cross_entropy_grad %a, %b, %c : tensor<2x5x7xf32>, "
       "tensor<2x5xi64>, tensor<f32>",
       [](In x) {
         return vjp(
             [](auto p) {
               return F::cross_entropy(p[0].reshape({10, 7}),
                                       p[1].reshape({10}));
             },
             x, 0);
       },
       7},
      {"embedding_grad",
       {"tensor<2x5xi64>", "tensor<2x5x4xf32>"},
       "tensor<11x4xf32>",
       "dsnn.embedding_grad %a, %b : tensor<2x5xi64>, tensor<2x5x4xf32> -> "
       "tensor<11x4xf32>",
       [](In x) {
         // d(table) of embedding(ids, table) · dy: a scatter-add of dy rows.
         auto table = torch::zeros({11, 4}, torch::requires_grad());
         torch::AutoGradMode enable(true);
         auto y = F::embedding(x[0], table);
         return torch::autograd::grad({y}, {table}, {x[1]})[0];
       },
       11},
      {"attention_grad_query",
       {"tensor<2x2x6x4xf32>", "tensor<2x2x6x4xf32>", "tensor<2x2x6x3xf32>",
        "tensor<2x2x6x3xf32>"},
       "tensor<2x2x6x4xf32>",
       "%r, %dk, %dv = dsnn.attention_grad %a, %b, %c, %d {causal, scale = "
       "0.5 : f64} : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, "
       "tensor<2x2x6x3xf32>, tensor<2x2x6x3xf32>",
       [](In x) {
         return vjp(
             [](auto p) { return causalAttention(p[0], p[1], p[2], 0.5); }, x,
             0);
       },
       4,
       1e-4,
       1e-5},
      {"attention_grad_value",
       {"tensor<2x2x6x4xf32>", "tensor<2x2x6x4xf32>", "tensor<2x2x6x3xf32>",
        "tensor<2x2x6x3xf32>"},
       "tensor<2x2x6x3xf32>",
       "%dq, %dk, %r = dsnn.attention_grad %a, %b, %c, %d {causal, scale = "
       "0.5 : f64} : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, "
       "tensor<2x2x6x3xf32>, tensor<2x2x6x3xf32>",
       [](In x) {
         return vjp(
             [](auto p) { return causalAttention(p[0], p[1], p[2], 0.5); }, x,
             2);
       },
       4,
       1e-4,
       1e-5},
      {"mse_loss",
       {"tensor<3x4xf32>", "tensor<3x4xf32>"},
       "tensor<f32>",
       "dsnn.mse_loss %a, %b : tensor<3x4xf32>, tensor<3x4xf32> -> "
       "tensor<f32>",
       [](In x) { return F::mse_loss(x[0], x[1]); }},
  };
  return kCases;
}

torch::Tensor toTorch(const Tensor &t) {
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  auto dtype = t.dtype() == DType::I64 ? torch::kInt64 : torch::kFloat32;
  return torch::from_blob(t.data(), shape, dtype).clone();
}

Tensor randomInput(const ValueInfo &info, int64_t intHigh,
                   torch::Generator &gen) {
  std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
  torch::Tensor t = info.dtype == DType::I64
                        ? torch::randint(0, intHigh, shape, gen, torch::kInt64)
                        : torch::randn(shape, gen, torch::kFloat32);
  Tensor out = Tensor::zeros(info.dtype, info.shape);
  std::memcpy(out.data(), t.data_ptr(), static_cast<size_t>(out.byteSize()));
  return out;
}

class DsnnOracle : public ::testing::TestWithParam<size_t> {};

TEST_P(DsnnOracle, MatchesLibTorch) {
  const OracleCase &c = cases()[GetParam()];
  std::string text = ds::oracle::wrapFunction(c.argTypes, c.resultType, c.body);
  auto runner = ds::oracle::compileDsnn(text);
  ASSERT_TRUE(bool(runner)) << llvm::toString(runner.takeError()) << "\n"
                            << text;
  const FunctionSignature *sig = (*runner)->signature("f");
  ASSERT_TRUE(sig);

  torch::manual_seed(0);
  auto gen = torch::make_generator<torch::CPUGeneratorImpl>(1234);
  std::vector<Tensor> inputs;
  std::vector<torch::Tensor> torchInputs;
  for (const ValueInfo &info : sig->inputs) {
    inputs.push_back(randomInput(info, c.intHigh, gen));
    torchInputs.push_back(toTorch(inputs.back()));
  }
  auto outs = (*runner)->invoke("f", inputs);
  ASSERT_TRUE(bool(outs)) << llvm::toString(outs.takeError());
  ASSERT_EQ(outs->size(), 1u);

  torch::Tensor got = toTorch((*outs)[0]);
  torch::Tensor want;
  {
    torch::NoGradGuard noGrad;
    want = c.torchFn(torchInputs).contiguous();
  }
  ASSERT_EQ(got.sizes(), want.sizes()) << c.name;
  double maxErr = (got - want).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(got, want, c.rtol, c.atol))
      << c.name << ": max |ds - torch| = " << maxErr << "\n"
      << text;
}

INSTANTIATE_TEST_SUITE_P(Ops, DsnnOracle,
                         ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           return cases()[info.param].name;
                         });

} // namespace
