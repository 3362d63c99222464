//===- GradientsTest.cpp - whole-model gradients vs LibTorch autograd -----===//
//
// A model spec goes through the importer and ds-autodiff; the resulting
// @forward_backward is lowered (ds-lower-nn-to-linalg, ds-lower-to-llvm)
// and JIT-compiled, then called on random weights and a random batch. The
// loss and every parameter's gradient are compared with LibTorch autograd
// of the same model (TorchModels.h) on the same values, computed in f64 so
// the reference carries no f32 rounding of its own: what is measured is
// ds's f32 error. Per tensor, max |ds - torch| / max |torch| <= 1e-5.
//
//===----------------------------------------------------------------------===//

#include "TorchModels.h"

#include "ds/Execution/JIT.h"
#include "ds/Import/Import.h"
#include "ds/InitAllDS.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace ds::oracle;
using mlir::ds::exec::DType;
using mlir::ds::exec::Runner;
using mlir::ds::exec::Tensor;

namespace {

constexpr double kTolerance = 1e-5;

/// @forward_backward of a spec, JIT-compiled, with its parameter names.
struct CompiledGradients {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<Runner> runner;
  std::vector<std::string> paramNames;
};

llvm::Expected<CompiledGradients> compileGradients(const std::string &spec,
                                                   int64_t microBatch) {
  CompiledGradients c;
  mlir::DialectRegistry registry;
  mlir::ds::exec::registerRunnerDependencies(registry);
  mlir::ds::registerAllDSDialects(registry);
  mlir::ds::importer::registerImportDialects(registry);
  c.context = std::make_unique<mlir::MLIRContext>(registry);
  c.context->loadAllAvailableDialects();

  mlir::ds::importer::ImportOptions options;
  options.microBatch = microBatch;
  auto module =
      mlir::ds::importer::importSpec(*c.context, spec, "spec.json", options);
  if (!module)
    return module.takeError();
  c.module = std::move(*module);

  mlir::PassManager pm(c.context.get());
  pm.addPass(mlir::ds::createAutodiff());
  if (mlir::failed(pm.run(*c.module)))
    return llvm::createStringError("ds-autodiff failed");
  auto fb = c.module->lookupSymbol<mlir::func::FuncOp>("forward_backward");
  if (!fb)
    return llvm::createStringError("no @forward_backward");
  for (unsigned i = 0, e = mlir::ds::numLeadingParams(fb); i < e; ++i)
    c.paramNames.push_back(mlir::ds::paramName(fb, i).str());
  // @forward_backward holds its own forward; compiling @forward too would
  // double the JIT time for nothing.
  if (auto forward = c.module->lookupSymbol<mlir::func::FuncOp>("forward"))
    if (mlir::SymbolTable::symbolKnownUseEmpty(forward, *c.module))
      forward.erase();

  mlir::ds::exec::RunnerOptions runnerOptions;
  runnerOptions.preLowering = [](mlir::OpPassManager &pm) {
    pm.addPass(mlir::ds::createLowerNNToLinalg());
  };
  auto runner = Runner::create(*c.module, runnerOptions);
  if (!runner)
    return runner.takeError();
  c.runner = std::move(*runner);
  return c;
}

Tensor borrow(const torch::Tensor &t) {
  DType dtype = t.scalar_type() == torch::kLong ? DType::I64 : DType::F32;
  return Tensor::borrow(dtype, t.sizes().vec(), t.data_ptr());
}

/// Calls @forward_backward on `params` (f32 copies of the f64 reference
/// weights, by name) and `batch`, and checks the loss and each gradient
/// against `reference` (f64 autograd on the same values).
template <typename Model>
void expectGradientsMatch(const CompiledGradients &c, Model &reference,
                          const std::vector<torch::Tensor> &batch,
                          const std::string &what) {
  torch::Tensor loss = reference.loss(batch[0], batch[1]);
  loss.backward();

  ASSERT_EQ(c.paramNames.size(), reference.params.size()) << what;
  std::vector<torch::Tensor> f32;
  std::vector<Tensor> inputs;
  for (const std::string &name : c.paramNames) {
    f32.push_back(reference.get(name).detach().to(torch::kFloat).contiguous());
    inputs.push_back(borrow(f32.back()));
  }
  std::vector<torch::Tensor> batchF32;
  for (const torch::Tensor &b : batch) {
    batchF32.push_back(b.is_floating_point() ? b.to(torch::kFloat).contiguous()
                                             : b.contiguous());
    inputs.push_back(borrow(batchF32.back()));
  }
  auto outs = c.runner->invoke("forward_backward", inputs);
  ASSERT_FALSE(llvm::errorToBool(outs.takeError())) << what;
  ASSERT_EQ(outs->size(), c.paramNames.size() + 1) << what;

  double dsLoss = *(*outs)[0].data<float>(), want = loss.item<double>();
  double lossErr = std::abs(dsLoss - want) / std::abs(want);
  EXPECT_LE(lossErr, kTolerance)
      << what << ": loss ds " << dsLoss << " vs LibTorch " << want;
  double worst = 0;
  std::string worstName;
  for (size_t i = 0; i < c.paramNames.size(); ++i) {
    const std::string &name = c.paramNames[i];
    torch::Tensor grad = reference.get(name).grad();
    ASSERT_TRUE(grad.defined()) << what << ": no LibTorch gradient of " << name;
    const Tensor &out = (*outs)[i + 1];
    ASSERT_EQ(out.shape().vec(), grad.sizes().vec()) << what << ": " << name;
    torch::Tensor got = torch::from_blob(const_cast<float *>(out.data<float>()),
                                         grad.sizes(), torch::kFloat)
                            .to(torch::kDouble);
    double scale = grad.abs().max().item<double>();
    ASSERT_GT(scale, 0) << what << ": " << name
                        << " has a zero gradient; the case tests nothing";
    double err = (got - grad).abs().max().item<double>() / scale;
    EXPECT_LE(err, kTolerance)
        << what << ": gradient of " << name << ", max |ds - LibTorch| / max "
        << "|LibTorch| = " << err;
    if (err > worst) {
      worst = err;
      worstName = name;
    }
  }
  std::cout << what << ": loss rel err " << lossErr << ", worst gradient "
            << worstName << " rel err " << worst << "\n";
}

struct GptCase {
  std::string name;
  GptSizes sizes;
  int64_t batch;
};

// Test names (and ctest's) show the case, not its bytes.
void PrintTo(const GptCase &c, std::ostream *os) { *os << c.name; }

std::string specOf(const GptSizes &s) {
  std::string spec =
      "{\"model_type\": \"gpt\", \"n_layer\": " + std::to_string(s.nLayer) +
      ", \"n_embd\": " + std::to_string(s.nEmbd) +
      ", \"n_head\": " + std::to_string(s.nHead) +
      ", \"vocab_size\": " + std::to_string(s.vocab) +
      ", \"n_positions\": " + std::to_string(s.nPositions) +
      ", \"activation_function\": \"" + s.act + "\"" +
      ", \"tie_word_embeddings\": " + (s.tied ? "true" : "false");
  if (s.nInner)
    spec += ", \"n_inner\": " + std::to_string(s.nInner);
  if (s.moeExperts)
    spec += ", \"moe\": {\"num_experts\": " + std::to_string(s.moeExperts) +
            ", \"k\": " + std::to_string(s.moeK) +
            ", \"capacity_factor\": " + std::to_string(s.capacityFactor) +
            ", \"min_capacity\": " + std::to_string(s.minCapacity) +
            ", \"every\": " + std::to_string(s.moeEvery) + "}";
  return spec + "}";
}

std::string specOf(const LlamaSizes &s);

/// The spec of `sizes` against `reference` on random token ids and
/// targets, [batch, n_positions].
template <typename Model, typename Sizes>
void expectTokenModelMatches(Model &reference, const Sizes &sizes,
                             int64_t batch, const std::string &what) {
  auto compiled = compileGradients(specOf(sizes), batch);
  ASSERT_FALSE(llvm::errorToBool(compiled.takeError()));
  std::vector<int64_t> shape = {batch, sizes.nPositions};
  std::vector<torch::Tensor> tokens = {
      torch::randint(0, sizes.vocab, shape, torch::kLong),
      torch::randint(0, sizes.vocab, shape, torch::kLong)};
  expectGradientsMatch(*compiled, reference, tokens, what);
}

class GptGradients : public testing::TestWithParam<GptCase> {};

TEST_P(GptGradients, MatchLibTorchAutograd) {
  const GptCase &gc = GetParam();
  torch::manual_seed(7);
  TorchGpt reference = TorchGpt::random(gc.sizes, torch::kDouble);
  ASSERT_NO_FATAL_FAILURE(
      expectTokenModelMatches(reference, gc.sizes, gc.batch, gc.name));
  if (gc.sizes.moeExperts) {
    const MoERoutingStats &r = reference.routing;
    std::cout << gc.name << ": " << r.dropped << " of " << r.choices
              << " expert choices dropped, smallest top-k gap " << r.minGap
              << "\n";
    // The same routing in f32 and f64 needs clear choices; the case must
    // drop tokens to test capacity.
    EXPECT_GT(r.minGap, 1e-4) << gc.name << ": a near-tie in the routing";
    EXPECT_GT(r.dropped, 0) << gc.name << ": no choice over capacity";
  }
}

// gpt-tiny.json's sizes; then untied, with the tanh GELU and a non-default
// MLP width, so the LM head's own gradient and those paths are covered.
INSTANTIATE_TEST_SUITE_P(
    Specs, GptGradients,
    testing::Values(
        GptCase{"gpt_tiny", {2, 16, 2, 64, 8}, 2},
        GptCase{
            "gpt_untied_gelu_new", {1, 24, 3, 50, 6, 40, false, "gelu_new"}, 3},
        // gpt-moe.json's shape, tiny: top-2 in block h.1 and
        // top-1 in both blocks, each overflowing capacity.
        GptCase{"gpt_moe_top2",
                {2, 16, 2, 64, 8, 0, true, "gelu", 1e-5, 4, 2, 2, 4, 1.0},
                2},
        GptCase{"gpt_moe_top1",
                {2, 16, 2, 64, 8, 0, true, "gelu", 1e-5, 4, 1, 1, 2, 1.0},
                2}),
    [](const testing::TestParamInfo<GptCase> &info) {
      return info.param.name;
    });

struct LlamaCase {
  std::string name;
  LlamaSizes sizes;
  int64_t batch;
};

void PrintTo(const LlamaCase &c, std::ostream *os) { *os << c.name; }

std::string specOf(const LlamaSizes &s) {
  std::string spec =
      "{\"model_type\": \"" + s.family +
      "\", \"num_hidden_layers\": " + std::to_string(s.nLayer) +
      ", \"hidden_size\": " + std::to_string(s.hidden) +
      ", \"num_attention_heads\": " + std::to_string(s.nHead) +
      ", \"num_key_value_heads\": " + std::to_string(s.nKvHead) +
      ", \"intermediate_size\": " + std::to_string(s.inner) +
      ", \"vocab_size\": " + std::to_string(s.vocab) +
      ", \"max_position_embeddings\": " + std::to_string(s.nPositions) +
      ", \"rms_norm_eps\": " + std::to_string(s.eps) +
      ", \"rope_theta\": " + std::to_string(s.theta) +
      ", \"tie_word_embeddings\": " + (s.tied ? "true" : "false");
  if (s.headDim)
    spec += ", \"head_dim\": " + std::to_string(s.headDim);
  if (s.attentionBias || s.mlpBias)
    spec += std::string(", \"attention_bias\": ") +
            (s.attentionBias ? "true" : "false") +
            ", \"mlp_bias\": " + (s.mlpBias ? "true" : "false");
  return spec + "}";
}

class LlamaGradients : public testing::TestWithParam<LlamaCase> {};

TEST_P(LlamaGradients, MatchLibTorchAutograd) {
  const LlamaCase &lc = GetParam();
  torch::manual_seed(13);
  TorchLlama reference = TorchLlama::random(lc.sizes, torch::kDouble);
  expectTokenModelMatches(reference, lc.sizes, lc.batch, lc.name);
}

// llama-tiny.json's shape with 2 query heads per key/value head; qwen2 with
// q/k/v biases, one key/value head for 3 query heads and a tied head; a
// head_dim other than hidden_size / num_attention_heads; llama's
// attention_bias and mlp_bias.
INSTANTIATE_TEST_SUITE_P(
    Specs, LlamaGradients,
    testing::Values(
        LlamaCase{"llama_gqa", {"llama", 2, 32, 4, 2, 64, 64, 8}, 2},
        LlamaCase{"qwen2_mqa_tied",
                  {"qwen2", 1, 24, 3, 1, 40, 50, 6, 0, true, 1e-5, 1000},
                  3},
        LlamaCase{
            "mistral_head_dim", {"mistral", 1, 16, 2, 2, 32, 40, 5, 12}, 2},
        LlamaCase{"llama_biases",
                  {"llama", 1, 16, 2, 1, 24, 40, 5, 0, false, 1e-6, 10000, true,
                   true},
                  2}),
    [](const testing::TestParamInfo<LlamaCase> &info) {
      return info.param.name;
    });

struct MlpCase {
  std::string name, activation, loss;
};

void PrintTo(const MlpCase &c, std::ostream *os) { *os << c.name; }

class MlpGradients : public testing::TestWithParam<MlpCase> {};

// examples/models/mlp.json's sizes and activation, with each loss.
TEST_P(MlpGradients, MatchLibTorchAutograd) {
  const MlpCase &mc = GetParam();
  const std::vector<int64_t> sizes = {32, 64, 64, 10};
  const int64_t b = 4;
  std::string spec = "{\"model_type\": \"mlp\", \"sizes\": [32, 64, 64, 10], "
                     "\"activation\": \"" +
                     mc.activation + "\", \"loss\": \"" + mc.loss + "\"}";
  auto compiled = compileGradients(spec, b);
  ASSERT_FALSE(llvm::errorToBool(compiled.takeError()));
  torch::manual_seed(11);
  TorchMlp reference = TorchMlp::random(sizes, mc.activation, torch::kDouble);
  torch::Tensor inputs = torch::randn({b, sizes.front()}, torch::kDouble);
  torch::Tensor targets =
      mc.loss == "mse" ? torch::randn({b, sizes.back()}, torch::kDouble)
                       : torch::randint(0, sizes.back(), {b}, torch::kLong);
  expectGradientsMatch(*compiled, reference, {inputs, targets}, mc.name);
}

INSTANTIATE_TEST_SUITE_P(Specs, MlpGradients,
                         testing::Values(MlpCase{"cross_entropy", "gelu",
                                                 "cross_entropy"},
                                         MlpCase{"mse", "gelu", "mse"},
                                         MlpCase{"mse_relu", "relu", "mse"}),
                         [](const testing::TestParamInfo<MlpCase> &info) {
                           return info.param.name;
                         });

} // namespace
