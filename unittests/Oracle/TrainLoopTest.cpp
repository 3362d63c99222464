//===- TrainLoopTest.cpp - ds-train vs a LibTorch training loop -----------===//
//
// Ten optimizer steps of the real ds-train binary against the same training
// written directly in LibTorch: the GPT of docs/models.md as raw ops on
// named tensors (TorchModels.h), torch::optim::AdamW, clip_grad_norm_, the
// WarmupLR rate computed from DeepSpeed's formula, gradient accumulation by
// backward() of loss / gradient_accumulation_steps, and the sequential sample
// order of docs/data.md. Both start from weights this test draws and hands to
// ds-train with --init-from; both see the same byte file. Per-step loss,
// grad_norm and lr, and the final weights (--save-weights), must agree.
//
// Nothing on the LibTorch side is computed by ds code: only the
// safetensors reader/writer is shared, as the file format between the two.
//
//===----------------------------------------------------------------------===//

#include "TorchModels.h"

#include "ds/Driver/SafeTensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace {

using ds::oracle::GptSizes;
using ds::oracle::TorchGpt;

// The run: sizes of the model, the batch and the optimizer, from which the
// spec and the config are written. Weight decay 0.1 (not a gentler 0.01)
// moves the weights by ~7e-4 over the run, so a decay applied wrongly shows
// above the 1e-4 tolerance; the clip threshold sits inside the range of the
// gradient norms so that some steps are clipped and some not.
constexpr int64_t kLayers = 2, kEmbd = 32, kHeads = 2, kVocab = 256, kSeq = 16;
constexpr int64_t kMicro = 4, kAccum = 2, kGlobal = kMicro * kAccum;
constexpr int64_t kSteps = 10, kDataBytes = 1000;
constexpr double kLr = 1e-3, kMinLr = 1e-4, kBeta1 = 0.9, kBeta2 = 0.95,
                 kEps = 1e-8, kWeightDecay = 0.1, kClip = 0.75;
constexpr int64_t kWarmup = 5;

std::string specJson() {
  return nlohmann::json{{"model_type", "gpt"},  {"n_layer", kLayers},
                        {"n_embd", kEmbd},      {"n_head", kHeads},
                        {"vocab_size", kVocab}, {"n_positions", kSeq}}
      .dump();
}

std::string configJson() {
  using J = nlohmann::json;
  return J{{"train_batch_size", kGlobal},
           {"train_micro_batch_size_per_gpu", kMicro},
           {"gradient_accumulation_steps", kAccum},
           {"gradient_clipping", kClip},
           {"steps_per_print", 1000},
           {"optimizer",
            {{"type", "AdamW"},
             {"params",
              {{"lr", kLr},
               {"betas", {kBeta1, kBeta2}},
               {"eps", kEps},
               {"weight_decay", kWeightDecay}}}}},
           {"scheduler",
            {{"type", "WarmupLR"},
             {"params",
              {{"warmup_min_lr", kMinLr},
               {"warmup_max_lr", kLr},
               {"warmup_num_steps", kWarmup},
               {"warmup_type", "linear"}}}}}}
      .dump(2);
}

/// DeepSpeed's WarmupLR (linear) at scheduler iteration `it` (the step
/// number minus one): warmup_num_steps is raised to at least 2.
double warmupLr(int64_t it) {
  int64_t n = std::max<int64_t>(2, kWarmup);
  double gamma = it < n ? double(it) / double(n) : 1.0;
  return kMinLr + (kLr - kMinLr) * gamma;
}

/// Samples [first, first + count) of optimizer step `step` (0-based) in
/// the sequential order of docs/data.md: sample j starts at
/// ((step * B + j) * T) mod (N - T - 1); inputs are T tokens from there,
/// targets the T after the first.
std::pair<torch::Tensor, torch::Tensor>
sequentialBatch(const std::vector<uint8_t> &tokens, int64_t step, int64_t first,
                int64_t count) {
  int64_t span = int64_t(tokens.size()) - kSeq - 1;
  torch::Tensor ids = torch::empty({count, kSeq}, torch::kLong);
  torch::Tensor targets = torch::empty({count, kSeq}, torch::kLong);
  auto in = ids.accessor<int64_t, 2>(), out = targets.accessor<int64_t, 2>();
  for (int64_t s = 0; s < count; ++s) {
    int64_t start = ((step * kGlobal + first + s) * kSeq) % span;
    for (int64_t t = 0; t < kSeq; ++t) {
      in[s][t] = tokens[start + t];
      out[s][t] = tokens[start + t + 1];
    }
  }
  return {ids, targets};
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

double relErr(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

TEST(TrainLoop, DsTrainMatchesLibTorchAdamW) {
  llvm::SmallString<128> dirBuf;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("ds-train-loop", dirBuf));
  std::string dir(dirBuf.str());

  torch::manual_seed(20240611);
  TorchGpt model = TorchGpt::random(
      GptSizes{kLayers, kEmbd, kHeads, kVocab, kSeq}, torch::kFloat);

  // Byte tokens over the whole range; 1000 bytes make the 80 samples wrap
  // around the end of the stream (span 983 < 80 x 16).
  torch::Tensor bytes = torch::randint(0, 256, {kDataBytes}, torch::kLong);
  std::vector<uint8_t> tokens(kDataBytes);
  for (int64_t i = 0; i < kDataBytes; ++i)
    tokens[i] = uint8_t(bytes[i].item<int64_t>());
  writeFile(dir + "/data.txt", std::string(tokens.begin(), tokens.end()));
  writeFile(dir + "/gpt.json", specJson());
  writeFile(dir + "/config.json", configJson());

  std::vector<ds::driver::SafeTensorView> views;
  for (auto &[name, t] : model.params)
    views.push_back({name, "F32", t.sizes().vec(), t.data_ptr<float>()});
  ASSERT_FALSE(llvm::errorToBool(
      ds::driver::writeSafeTensors(dir + "/init.safetensors", views)));

  // ds-train, as a user runs it.
  std::vector<std::string> argv = {DS_TRAIN_PATH,
                                   "--model",
                                   dir + "/gpt.json",
                                   "--config",
                                   dir + "/config.json",
                                   "--data",
                                   dir + "/data.txt",
                                   "--data-order",
                                   "sequential",
                                   "--steps",
                                   std::to_string(kSteps),
                                   "--init-from",
                                   dir + "/init.safetensors",
                                   "--save-weights",
                                   dir + "/final.safetensors",
                                   "--metrics",
                                   dir + "/metrics.jsonl",
                                   "--quiet"};
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  std::string log = dir + "/ds-train.log";
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  std::string execErr;
  int rc = llvm::sys::ExecuteAndWait(DS_TRAIN_PATH, args, std::nullopt,
                                     redirects, 0, 0, &execErr);
  ASSERT_EQ(rc, 0) << execErr << readFile(log);

  std::vector<nlohmann::json> metrics;
  {
    std::ifstream in(dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);)
      metrics.push_back(nlohmann::json::parse(line, nullptr, false));
  }
  ASSERT_EQ(int64_t(metrics.size()), kSteps);

  // The same training in LibTorch.
  torch::optim::AdamW optimizer(model.tensors(),
                                torch::optim::AdamWOptions(kLr)
                                    .betas({kBeta1, kBeta2})
                                    .eps(kEps)
                                    .weight_decay(kWeightDecay));
  double maxLossErr = 0, maxNormErr = 0;
  int64_t clippedSteps = 0;
  for (int64_t s = 0; s < kSteps; ++s) {
    double lr = warmupLr(s);
    for (auto &group : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions &>(group.options()).lr(lr);
    optimizer.zero_grad();
    double loss = 0;
    for (int64_t m = 0; m < kAccum; ++m) {
      auto [ids, targets] = sequentialBatch(tokens, s, m * kMicro, kMicro);
      torch::Tensor l = model.loss(ids, targets);
      (l / double(kAccum)).backward();
      loss += l.item<double>() / double(kAccum);
    }
    double norm = torch::nn::utils::clip_grad_norm_(model.tensors(), kClip);
    clippedSteps += norm > kClip;
    optimizer.step();

    const nlohmann::json &row = metrics[s];
    ASSERT_TRUE(row.is_object()) << "metrics line " << s + 1;
    EXPECT_EQ(row["step"].get<int64_t>(), s + 1);
    double dsLoss = row["loss"].get<double>(), dsNorm = row["grad_norm"],
           dsLr = row["lr"];
    EXPECT_LE(relErr(dsLoss, loss), 1e-4)
        << "step " << s + 1 << ": ds " << dsLoss << " vs LibTorch " << loss;
    EXPECT_LE(relErr(dsNorm, norm), 1e-4)
        << "step " << s + 1 << ": grad_norm ds " << dsNorm << " vs LibTorch "
        << norm;
    EXPECT_LE(relErr(dsLr, lr), 1e-6)
        << "step " << s + 1 << ": lr ds " << dsLr << " vs WarmupLR " << lr;
    maxLossErr = std::max(maxLossErr, relErr(dsLoss, loss));
    maxNormErr = std::max(maxNormErr, relErr(dsNorm, norm));
  }
  // The run must exercise clipping both ways, or a wrong clip goes unseen.
  EXPECT_GT(clippedSteps, 0);
  EXPECT_LT(clippedSteps, kSteps);

  auto final = ds::driver::SafeTensorsFile::open(dir + "/final.safetensors");
  ASSERT_FALSE(llvm::errorToBool(final.takeError()));
  double maxParamErr = 0;
  std::string worstParam;
  for (auto &[name, t] : model.params) {
    auto values = final->readF32(name);
    ASSERT_FALSE(llvm::errorToBool(values.takeError())) << name;
    torch::Tensor got =
        torch::from_blob(values->data(), t.sizes(), torch::kFloat).clone();
    torch::Tensor want = t.detach();
    ASSERT_EQ(got.sizes(), want.sizes()) << name;
    // The key third of c_attn.bias adds q.b_k to a whole row of scores,
    // which softmax ignores: its exact gradient is zero, so on either side
    // Adam moves it by that side's rounding noise over eps (~1e-7 a step).
    // It gets a noise-sized bound; the rest the tight one.
    torch::Tensor noise = torch::zeros_like(want, torch::kBool);
    if (llvm::StringRef(name).ends_with("attn.c_attn.bias"))
      noise.slice(0, kEmbd, 2 * kEmbd).fill_(true);
    torch::Tensor excess = (got - want).abs() -
                           torch::where(noise, 1e-5, 1e-6 + 1e-4 * want.abs());
    EXPECT_LE(excess.max().item<double>(), 0)
        << name << ": |ds - LibTorch| exceeds its bound by "
        << excess.max().item<double>() << " at element "
        << excess.argmax().item<int64_t>();
    got = got.masked_fill(noise, 0);
    want = want.masked_fill(noise, 0);
    double err = ((got - want).abs().max() / want.abs().max()).item<double>();
    if (err > maxParamErr) {
      maxParamErr = err;
      worstParam = name;
    }
  }
  RecordProperty("max_loss_rel_err", std::to_string(maxLossErr));
  RecordProperty("max_grad_norm_rel_err", std::to_string(maxNormErr));
  RecordProperty("max_param_rel_err", std::to_string(maxParamErr));
  std::cout << "max relative error: loss " << maxLossErr << ", grad_norm "
            << maxNormErr << ", final parameters " << maxParamErr << " ("
            << worstParam << ", max |ds - LibTorch| / max |LibTorch|)"
            << "; clipped " << clippedSteps << "/" << kSteps << " steps\n";
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
