//===- TorchModels.h - The spec models in LibTorch --------------*- C++ -*-===//
//
// The GPT, Llama and MLP a model spec describes, written directly in LibTorch
// from docs/models.md (raw ops on named parameter tensors, so the names are
// the spec's), as the oracle the whole-model tests compare ds with. Nothing
// here comes from ds.
//
//===----------------------------------------------------------------------===//
#ifndef DS_UNITTESTS_ORACLE_TORCHMODELS_H
#define DS_UNITTESTS_ORACLE_TORCHMODELS_H

#include <torch/torch.h>

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ds::oracle {

/// Named parameters, in the order the model defines them.
struct TorchParams {
  std::vector<std::pair<std::string, torch::Tensor>> params;

  torch::Tensor &get(const std::string &name) {
    for (auto &[n, t] : params)
      if (n == name)
        return t;
    ADD_FAILURE() << "no parameter " << name;
    static torch::Tensor none;
    return none;
  }
  void add(const std::string &name, const torch::Tensor &t) {
    params.emplace_back(name, t.contiguous().requires_grad_());
  }
  /// N(0, std^2) drawn in f64, so every dtype gets the same values.
  static torch::Tensor normal(std::vector<int64_t> shape, double std,
                              torch::Dtype dtype) {
    return (torch::randn(shape, torch::kDouble) * std).to(dtype);
  }
  std::vector<torch::Tensor> tensors() const {
    std::vector<torch::Tensor> out;
    for (auto &[n, t] : params)
      out.push_back(t);
    return out;
  }
};

inline torch::Tensor activate(const torch::Tensor &x, const std::string &act) {
  if (act == "gelu")
    return torch::gelu(x);
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    return torch::gelu(x, "tanh");
  if (act == "relu")
    return torch::relu(x);
  if (act == "silu")
    return torch::silu(x);
  if (act == "tanh")
    return torch::tanh(x);
  ADD_FAILURE() << "unknown activation " << act;
  return x;
}

struct GptSizes {
  int64_t nLayer, nEmbd, nHead, vocab, nPositions;
  int64_t nInner = 0; // 0: 4 * nEmbd
  bool tied = true;
  std::string act = "gelu";
  double eps = 1e-5;
  /// Mixture of experts (docs/models.md): 0 experts means none.
  int64_t moeExperts = 0, moeK = 1, moeEvery = 1, minCapacity = 4;
  double capacityFactor = 1.0;
  int64_t inner() const { return nInner ? nInner : 4 * nEmbd; }
  bool isMoE(int64_t block) const {
    return moeExperts > 0 && (block + 1) % moeEvery == 0;
  }
};

/// What the MoE layers of one TorchGpt::loss routed, so a test can check
/// that it exercised what it means to (drops) and that no choice was a
/// near-tie (which f32 and f64 could decide differently).
struct MoERoutingStats {
  int64_t dropped = 0, choices = 0;
  double minGap = std::numeric_limits<double>::infinity();
};

/// The MoE MLP of docs/models.md as DeepSpeed's top1gating/top2gating
/// compute it (deterministic: no random token selection, no second-expert
/// sampling), with its dense einsum dispatch and combine: softmax gate,
/// k choices by descending probability, capacity slots handed out choice by
/// choice in token order, combine weights = the kept choices' probabilities
/// (normalized over the kept choices for k >= 2), aux loss E · Σ_e
/// mean_prob_e · first_choice_fraction_e. `x` is [N, C]; returns [N, C].
inline torch::Tensor torchMoE(const torch::Tensor &x, const torch::Tensor &wg,
                              const torch::Tensor &w1, const torch::Tensor &b1,
                              const torch::Tensor &w2, const torch::Tensor &b2,
                              const GptSizes &sz, torch::Tensor &aux,
                              MoERoutingStats &stats) {
  namespace F = torch::nn::functional;
  const int64_t n = x.size(0), e = sz.moeExperts, k = sz.moeK;
  const int64_t capacity = std::max<int64_t>(
      static_cast<int64_t>(
          std::ceil(static_cast<double>(n) / e * sz.capacityFactor * k)),
      sz.minCapacity);
  torch::Tensor gates = torch::softmax(F::linear(x, wg), 1);
  torch::Tensor taken = torch::zeros({n, e}, torch::kBool);
  torch::Tensor prior = torch::zeros({1, e}, gates.options());
  torch::Tensor combine = torch::zeros({n, e, capacity}, gates.options());
  std::vector<torch::Tensor> kept, locations;
  torch::Tensor firstChoice;
  for (int64_t j = 0; j < k; ++j) {
    torch::Tensor free = gates.detach().masked_fill(taken, -1.0);
    auto top2 = free.topk(std::min<int64_t>(2, e - j), 1);
    if (e - j > 1)
      stats.minGap = std::min(stats.minGap, (std::get<0>(top2).select(1, 0) -
                                             std::get<0>(top2).select(1, 1))
                                                .min()
                                                .item<double>());
    torch::Tensor mask = F::one_hot(free.argmax(1), e).to(gates.dtype());
    if (j == 0)
      firstChoice = mask;
    taken = taken | mask.to(torch::kBool);
    torch::Tensor location = torch::cumsum(mask, 0) - 1 + prior;
    prior = prior + mask.sum(0, true);
    mask = mask * (location < capacity).to(gates.dtype());
    stats.choices += n;
    stats.dropped += n - mask.sum().item<int64_t>();
    kept.push_back(mask);
    locations.push_back((location * mask).sum(1).to(torch::kLong));
  }
  std::vector<torch::Tensor> weight;
  for (const torch::Tensor &mask : kept)
    weight.push_back((gates * mask).sum(1));
  if (k > 1) {
    torch::Tensor denom = weight[0];
    for (int64_t j = 1; j < k; ++j)
      denom = denom + weight[j];
    denom = torch::clamp(denom, std::numeric_limits<double>::epsilon());
    for (torch::Tensor &w : weight)
      w = w / denom;
  }
  for (int64_t j = 0; j < k; ++j)
    combine =
        combine +
        torch::einsum("se,sc->sec",
                      {weight[j].unsqueeze(1) * kept[j],
                       F::one_hot(locations[j], capacity).to(gates.dtype())});
  torch::Tensor dispatch = combine.ne(0).to(gates.dtype());
  torch::Tensor tokens = torch::einsum("sec,sm->ecm", {dispatch, x});
  torch::Tensor h = activate(
      torch::bmm(tokens, w1.transpose(1, 2)) + b1.unsqueeze(1), sz.act);
  torch::Tensor out = torch::bmm(h, w2.transpose(1, 2)) + b2.unsqueeze(1);
  aux = (gates.mean(0) * firstChoice.mean(0)).sum() * e;
  return torch::einsum("sec,ecm->sm", {combine, out});
}

/// The GPT of docs/models.md.
struct TorchGpt : TorchParams {
  GptSizes sz;
  /// Of the last loss() call.
  MoERoutingStats routing;

  /// Weights drawn from torch's generator (not ds's init), with LayerNorm
  /// scales and every bias away from 1 / 0 so that their gradients matter.
  static TorchGpt random(const GptSizes &sz, torch::Dtype dtype) {
    TorchGpt m;
    m.sz = sz;
    auto normal = [&](std::vector<int64_t> shape, double std) {
      return TorchParams::normal(shape, std, dtype);
    };
    auto around1 = [&](int64_t n) { return 1 + normal({n}, 0.1); };
    const int64_t c = sz.nEmbd, inner = sz.inner();
    m.add("wte.weight", normal({sz.vocab, c}, 0.02));
    m.add("wpe.weight", normal({sz.nPositions, c}, 0.02));
    for (int64_t i = 0; i < sz.nLayer; ++i) {
      std::string p = "h." + std::to_string(i) + ".";
      m.add(p + "ln_1.weight", around1(c));
      m.add(p + "ln_1.bias", normal({c}, 0.1));
      m.add(p + "attn.c_attn.weight", normal({3 * c, c}, 0.02));
      m.add(p + "attn.c_attn.bias", normal({3 * c}, 0.02));
      m.add(p + "attn.c_proj.weight", normal({c, c}, 0.02));
      m.add(p + "attn.c_proj.bias", normal({c}, 0.02));
      m.add(p + "ln_2.weight", around1(c));
      m.add(p + "ln_2.bias", normal({c}, 0.1));
      if (sz.isMoE(i)) {
        // A gate far from uniform: clear choices, and uneven loads that
        // overflow the capacity.
        const int64_t e = sz.moeExperts;
        m.add(p + "mlp.gate.weight", normal({e, c}, 1.0));
        m.add(p + "mlp.experts.c_fc.weight", normal({e, inner, c}, 0.02));
        m.add(p + "mlp.experts.c_fc.bias", normal({e, inner}, 0.02));
        m.add(p + "mlp.experts.c_proj.weight", normal({e, c, inner}, 0.02));
        m.add(p + "mlp.experts.c_proj.bias", normal({e, c}, 0.02));
        continue;
      }
      m.add(p + "mlp.c_fc.weight", normal({inner, c}, 0.02));
      m.add(p + "mlp.c_fc.bias", normal({inner}, 0.02));
      m.add(p + "mlp.c_proj.weight", normal({c, inner}, 0.02));
      m.add(p + "mlp.c_proj.bias", normal({c}, 0.02));
    }
    m.add("ln_f.weight", around1(c));
    m.add("ln_f.bias", normal({c}, 0.1));
    if (!sz.tied)
      m.add("lm_head.weight", normal({sz.vocab, c}, 0.02));
    return m;
  }

  /// Mean next-token cross-entropy; ids, targets: [B, T].
  torch::Tensor loss(const torch::Tensor &ids, const torch::Tensor &targets) {
    namespace F = torch::nn::functional;
    const int64_t b = ids.size(0), t = ids.size(1), c = sz.nEmbd,
                  hd = sz.nEmbd / sz.nHead;
    auto ln = [&](const torch::Tensor &x, const std::string &name) {
      return torch::layer_norm(x, {c}, get(name + ".weight"),
                               get(name + ".bias"), sz.eps);
    };
    auto linear = [&](const torch::Tensor &x, const std::string &name) {
      return F::linear(x, get(name + ".weight"), get(name + ".bias"));
    };
    auto heads = [&](const torch::Tensor &y) {
      return y.view({b, t, sz.nHead, hd}).transpose(1, 2);
    };
    torch::Tensor x =
        F::embedding(ids, get("wte.weight")) + get("wpe.weight").slice(0, 0, t);
    torch::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);
    torch::Tensor aux;
    routing = MoERoutingStats();
    for (int64_t i = 0; i < sz.nLayer; ++i) {
      std::string p = "h." + std::to_string(i) + ".";
      auto qkv = linear(ln(x, p + "ln_1"), p + "attn.c_attn").split(c, 2);
      torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
      torch::Tensor att =
          torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(hd));
      att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
      torch::Tensor y = torch::matmul(torch::softmax(att, -1), v)
                            .transpose(1, 2)
                            .reshape({b, t, c});
      x = x + linear(y, p + "attn.c_proj");
      if (sz.isMoE(i)) {
        std::string q = p + "mlp.experts.";
        torch::Tensor layerAux;
        torch::Tensor out =
            torchMoE(ln(x, p + "ln_2").reshape({b * t, c}),
                     get(p + "mlp.gate.weight"), get(q + "c_fc.weight"),
                     get(q + "c_fc.bias"), get(q + "c_proj.weight"),
                     get(q + "c_proj.bias"), sz, layerAux, routing);
        aux = aux.defined() ? aux + layerAux : layerAux;
        x = x + out.reshape({b, t, c});
        continue;
      }
      torch::Tensor h =
          activate(linear(ln(x, p + "ln_2"), p + "mlp.c_fc"), sz.act);
      x = x + linear(h, p + "mlp.c_proj");
    }
    torch::Tensor head = get(sz.tied ? "wte.weight" : "lm_head.weight");
    torch::Tensor logits = F::linear(ln(x, "ln_f"), head);
    torch::Tensor loss =
        F::cross_entropy(logits.view({-1, sz.vocab}), targets.view({-1}));
    // The importer's aux-loss coefficient without a config (DeepSpeed's).
    return aux.defined() ? loss + 0.01 * aux : loss;
  }
};

struct LlamaSizes {
  std::string family; // "llama", "mistral" or "qwen2"
  int64_t nLayer, hidden, nHead, nKvHead, inner, vocab, nPositions;
  int64_t headDim = 0; // 0: hidden / nHead
  bool tied = false;
  double eps = 1e-6, theta = 10000;
  /// llama's attention_bias (q/k/v/o) and mlp_bias (gate/up/down).
  bool attentionBias = false, mlpBias = false;
  int64_t head() const { return headDim ? headDim : hidden / nHead; }
};

/// The Llama-family decoder of docs/models.md, with Hugging Face's formulas:
/// RMSNorm, rotate_half rotary embeddings, k/v heads repeated by expand,
/// SwiGLU; qwen2 has q/k/v biases, llama those its sizes ask for.
struct TorchLlama : TorchParams {
  LlamaSizes sz;

  /// Norm scales away from 1 and biases away from 0, so that their
  /// gradients matter.
  static TorchLlama random(const LlamaSizes &sz, torch::Dtype dtype) {
    TorchLlama m;
    m.sz = sz;
    const int64_t c = sz.hidden, d = sz.head();
    const bool qkvBias = sz.family == "qwen2" || sz.attentionBias;
    auto around1 = [&](int64_t n) { return 1 + normal({n}, 0.1, dtype); };
    m.add("model.embed_tokens.weight", normal({sz.vocab, c}, 0.5, dtype));
    for (int64_t i = 0; i < sz.nLayer; ++i) {
      std::string p = "model.layers." + std::to_string(i) + ".";
      auto proj = [&](const std::string &name, int64_t out, int64_t in,
                      bool bias) {
        m.add(p + name + ".weight",
              normal({out, in}, 1 / std::sqrt(in), dtype));
        if (bias)
          m.add(p + name + ".bias", normal({out}, 0.1, dtype));
      };
      proj("self_attn.q_proj", sz.nHead * d, c, qkvBias);
      proj("self_attn.k_proj", sz.nKvHead * d, c, qkvBias);
      proj("self_attn.v_proj", sz.nKvHead * d, c, qkvBias);
      proj("self_attn.o_proj", c, sz.nHead * d, sz.attentionBias);
      proj("mlp.gate_proj", sz.inner, c, sz.mlpBias);
      proj("mlp.up_proj", sz.inner, c, sz.mlpBias);
      proj("mlp.down_proj", c, sz.inner, sz.mlpBias);
      m.add(p + "input_layernorm.weight", around1(c));
      m.add(p + "post_attention_layernorm.weight", around1(c));
    }
    m.add("model.norm.weight", around1(c));
    if (!sz.tied)
      m.add("lm_head.weight", normal({sz.vocab, c}, 0.2, dtype));
    return m;
  }

  /// Mean next-token cross-entropy; ids, targets: [B, T].
  torch::Tensor loss(const torch::Tensor &ids, const torch::Tensor &targets) {
    namespace F = torch::nn::functional;
    const int64_t b = ids.size(0), t = ids.size(1), h = sz.nHead,
                  kv = sz.nKvHead, d = sz.head();
    auto rmsNorm = [&](const torch::Tensor &x, const std::string &name) {
      return x * torch::rsqrt(x.pow(2).mean(-1, true) + sz.eps) * get(name);
    };
    auto linear = [&](const torch::Tensor &x, const std::string &name) {
      bool hasBias = false;
      for (auto &[n, p] : params)
        hasBias |= n == name + ".bias";
      return F::linear(x, get(name + ".weight"),
                       hasBias ? get(name + ".bias") : torch::Tensor());
    };
    auto heads = [&](const torch::Tensor &y, int64_t n) {
      return y.view({b, t, n, d}).transpose(1, 2);
    };
    torch::Tensor invFreq =
        1.0 / torch::pow(sz.theta, torch::arange(0, d, 2, torch::kDouble) / d);
    torch::Tensor freqs =
        torch::outer(torch::arange(t, torch::kDouble), invFreq);
    torch::Tensor angles = torch::cat({freqs, freqs}, -1);
    torch::Tensor cos = angles.cos(), sin = angles.sin();
    auto rope = [&](const torch::Tensor &x) {
      torch::Tensor turned =
          torch::cat({-x.slice(-1, d / 2, d), x.slice(-1, 0, d / 2)}, -1);
      return x * cos + turned * sin;
    };
    auto repeatKv = [&](const torch::Tensor &x) {
      return x.unsqueeze(2).expand({b, kv, h / kv, t, d}).reshape({b, h, t, d});
    };
    torch::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);

    torch::Tensor x = F::embedding(ids, get("model.embed_tokens.weight"));
    for (int64_t i = 0; i < sz.nLayer; ++i) {
      std::string p = "model.layers." + std::to_string(i) + ".";
      torch::Tensor n = rmsNorm(x, p + "input_layernorm.weight");
      torch::Tensor q = rope(heads(linear(n, p + "self_attn.q_proj"), h));
      torch::Tensor k =
          repeatKv(rope(heads(linear(n, p + "self_attn.k_proj"), kv)));
      torch::Tensor v = repeatKv(heads(linear(n, p + "self_attn.v_proj"), kv));
      torch::Tensor att =
          torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(d));
      att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
      torch::Tensor y = torch::matmul(torch::softmax(att, -1), v)
                            .transpose(1, 2)
                            .reshape({b, t, h * d});
      x = x + linear(y, p + "self_attn.o_proj");
      n = rmsNorm(x, p + "post_attention_layernorm.weight");
      torch::Tensor gate = torch::silu(linear(n, p + "mlp.gate_proj"));
      x = x + linear(gate * linear(n, p + "mlp.up_proj"), p + "mlp.down_proj");
    }
    torch::Tensor head =
        get(sz.tied ? "model.embed_tokens.weight" : "lm_head.weight");
    torch::Tensor logits = F::linear(rmsNorm(x, "model.norm.weight"), head);
    return F::cross_entropy(logits.view({-1, sz.vocab}), targets.view({-1}));
  }
};

/// The MLP of docs/models.md: `layers.i` = nn.Linear(sizes[i], sizes[i+1]),
/// the activation between layers, then cross-entropy (integer targets) or
/// mean squared error (float targets).
struct TorchMlp : TorchParams {
  std::vector<int64_t> sizes;
  std::string act;

  static TorchMlp random(std::vector<int64_t> sizes, std::string act,
                         torch::Dtype dtype) {
    TorchMlp m;
    m.sizes = sizes;
    m.act = act;
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      std::string p = "layers." + std::to_string(i);
      double bound = 1 / std::sqrt(double(sizes[i]));
      auto uniform = [&](std::vector<int64_t> shape) {
        return ((torch::rand(shape, torch::kDouble) * 2 - 1) * bound).to(dtype);
      };
      m.add(p + ".weight", uniform({sizes[i + 1], sizes[i]}));
      m.add(p + ".bias", uniform({sizes[i + 1]}));
    }
    return m;
  }

  torch::Tensor loss(const torch::Tensor &inputs,
                     const torch::Tensor &targets) {
    namespace F = torch::nn::functional;
    torch::Tensor x = inputs;
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      std::string p = "layers." + std::to_string(i);
      x = F::linear(x, get(p + ".weight"), get(p + ".bias"));
      if (i + 2 < sizes.size())
        x = activate(x, act);
    }
    return targets.is_floating_point() ? F::mse_loss(x, targets)
                                       : F::cross_entropy(x, targets);
  }
};

} // namespace ds::oracle

#endif // DS_UNITTESTS_ORACLE_TORCHMODELS_H
