//===- SpecImporter.cpp - Model spec JSON -> model contract ---------------===//
//
// A spec names a model family and its sizes with Hugging Face config keys;
// this file builds exactly the module docs/models.md shows as PyTorch code.
// Reading is as strict as ds_config.json's: an unknown key (with a
// did-you-mean), a wrong type or an out-of-range value is one error naming
// the key, because a typo that silently falls back to a default costs a
// training run.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"

#include "ds/Config/Config.h"
#include "ds/Import/Import.h"
#include "ds/Support/ShapeCheck.h"
#include "ds/Support/StrictJson.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::importer;
using json = nlohmann::json;

namespace {

/// Thrown while reading; converted to llvm::Error at the API.
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &message) { throw SpecError(message); }

using ::ds::support::describeJson;

/// Reads one JSON object; every key asked for becomes a known key, and
/// `finish` rejects the rest with the closest known key as a suggestion.
class ObjectReader {
public:
  ObjectReader(const json &object, std::string prefix)
      : object(object), prefix(std::move(prefix)) {}

  std::string pathOf(StringRef key) const { return prefix + key.str(); }

  const json *find(StringRef key) {
    known.push_back(key.str());
    auto it = object.find(key.str());
    return it == object.end() ? nullptr : &*it;
  }

  int64_t getInt(StringRef key, std::optional<int64_t> defaultValue,
                 int64_t min) {
    const json *v = find(key);
    if (!v) {
      if (!defaultValue)
        failMissing(key, "it is required");
      return *defaultValue;
    }
    if (!v->is_number_integer())
      fail(pathOf(key) + ": expected an integer, got " + describeJson(*v));
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(pathOf(key) + ": " + v->dump() + " does not fit in 64 bits");
    int64_t value = v->get<int64_t>();
    if (value < min)
      fail(pathOf(key) + ": must be >= " + std::to_string(min) + ", got " +
           std::to_string(value));
    return value;
  }

  double getNumber(StringRef key, double defaultValue) {
    const json *v = find(key);
    if (!v)
      return defaultValue;
    if (!v->is_number())
      fail(pathOf(key) + ": expected a number, got " + describeJson(*v));
    return v->get<double>();
  }

  double getPositive(StringRef key, double defaultValue) {
    double value = getNumber(key, defaultValue);
    if (!(value > 0))
      fail(pathOf(key) + ": must be > 0, got " + formatNumber(value));
    return value;
  }

  double getProbability(StringRef key) {
    double value = getNumber(key, 0);
    if (!(value >= 0 && value < 1))
      fail(pathOf(key) + ": must be in [0, 1), got " + formatNumber(value));
    return value;
  }

  bool getBool(StringRef key, bool defaultValue) {
    const json *v = find(key);
    if (!v)
      return defaultValue;
    if (!v->is_boolean())
      fail(pathOf(key) + ": expected true or false, got " + describeJson(*v));
    return v->get<bool>();
  }

  std::string getChoice(StringRef key, std::optional<StringRef> defaultValue,
                        ArrayRef<StringRef> choices) {
    const json *v = find(key);
    std::string list;
    for (StringRef c : choices)
      list += (list.empty() ? "\"" : ", \"") + c.str() + "\"";
    if (!v) {
      if (!defaultValue)
        failMissing(key, "one of " + list);
      return defaultValue->str();
    }
    if (!v->is_string())
      fail(pathOf(key) + ": expected a string, got " + describeJson(*v));
    std::string value = v->get<std::string>();
    if (!llvm::is_contained(choices, value))
      fail(pathOf(key) + ": \"" + value + "\" is not one of " + list);
    return value;
  }

  std::vector<int64_t> getIntList(StringRef key, size_t minSize, int64_t min) {
    const json *v = find(key);
    if (!v)
      failMissing(key, "it is required");
    if (!v->is_array())
      fail(pathOf(key) + ": expected an array of integers, got " +
           describeJson(*v));
    if (v->size() < minSize)
      fail(pathOf(key) + ": needs at least " + std::to_string(minSize) +
           " entries, got " + std::to_string(v->size()));
    std::vector<int64_t> values;
    for (auto [i, e] : llvm::enumerate(*v)) {
      std::string at = pathOf(key) + "[" + std::to_string(i) + "]";
      if (!e.is_number_integer())
        fail(at + ": expected an integer, got " + describeJson(e));
      int64_t value = e.get<int64_t>();
      if (value < min)
        fail(at + ": must be >= " + std::to_string(min) + ", got " +
             std::to_string(value));
      values.push_back(value);
    }
    return values;
  }

  /// Unknown keys are errors, with the nearest known key when it is close
  /// enough to be a typo.
  void finish() {
    for (auto it = object.begin(); it != object.end(); ++it) {
      StringRef key = it.key();
      if (llvm::is_contained(known, key.str()))
        continue;
      std::string message = pathOf(key) + ": unknown key";
      if (auto guess = closest(key, known))
        message += "; did you mean \"" + *guess + "\"?";
      fail(message);
    }
  }

private:
  static bool isTypo(StringRef key, StringRef candidate) {
    return ::ds::support::isLikelyTypo(key, candidate);
  }

  static std::optional<std::string>
  closest(StringRef key, const std::vector<std::string> &candidates) {
    return ::ds::support::closestKey(key, candidates);
  }

  /// A required key is absent. A misspelling of it is the likelier story, so
  /// that is reported first.
  [[noreturn]] void failMissing(StringRef key, const std::string &expected) {
    for (auto it = object.begin(); it != object.end(); ++it)
      if (!llvm::is_contained(known, it.key()) && isTypo(it.key(), key))
        fail(pathOf(it.key()) + ": unknown key; did you mean \"" + key.str() +
             "\"?");
    fail(pathOf(key) + ": missing; " + expected);
  }

  const json &object;
  std::string prefix;
  std::vector<std::string> known;
};

struct MoESpec {
  int64_t numExperts = 1;
  int64_t k = 1;
  double capacityFactor = 1.0;
  double evalCapacityFactor = 1.0;
  int64_t minCapacity = 4;
  bool dropTokens = true;
  int64_t every = 1;
  double auxLossCoef = 0.01;
};

struct GptSpec {
  int64_t nLayer, nEmbd, nHead, vocab, nPositions, nInner;
  bool tie;
  double eps, initRange;
  std::string activation;
  double residP, attnP, embdP;
  int64_t initSeed;
  std::optional<MoESpec> moe;
};

/// Llama and the families that share its decoder (mistral, qwen2).
struct LlamaSpec {
  std::string family;
  int64_t nLayer, hidden, nHead, nKvHead, headDim, vocab, maxPositions, inner;
  bool tie;
  double eps, ropeTheta, initRange;
  bool qkvBias, oBias, mlpBias;
  /// Keys past this many positions are not attended to; unset: all are.
  std::optional<int64_t> slidingWindow;
  int64_t initSeed;
};

struct MlpSpec {
  std::vector<int64_t> sizes;
  std::string activation;
  std::string loss;
  int64_t initSeed;
};

const StringRef kActivations[] = {"gelu", "gelu_new", "gelu_pytorch_tanh",
                                  "relu", "silu",     "tanh"};

/// The config's moe section is the training-time view of the same experts:
/// it must agree with the spec on what shapes the model, and it supplies the
/// aux-loss coefficient.
void mergeMoEConfig(MoESpec &moe, const json &given,
                    const ::ds::config::Config *config) {
  if (!config || !config->moe.enabled)
    return;
  const ::ds::config::MoEConfig &c = config->moe;
  auto agreeInt = [&](StringRef key, int64_t &spec, int64_t cfg) {
    if (!given.contains(key.str())) {
      spec = cfg;
      return;
    }
    if (spec != cfg)
      fail("moe." + key.str() + " is " + std::to_string(spec) +
           " in the spec but " + std::to_string(cfg) +
           " in ds_config.json (moe." + key.str() +
           ", whose default applies when unset); make them equal");
  };
  auto agreeNum = [&](StringRef key, double &spec, double cfg) {
    if (!given.contains(key.str())) {
      spec = cfg;
      return;
    }
    if (spec != cfg)
      fail("moe." + key.str() + " is " + formatNumber(spec) +
           " in the spec but " + formatNumber(cfg) +
           " in ds_config.json (moe." + key.str() +
           ", whose default applies when unset); make them equal");
  };
  int64_t experts = moe.numExperts;
  agreeInt("num_experts", experts, c.numExperts);
  agreeInt("k", moe.k, c.k);
  agreeNum("capacity_factor", moe.capacityFactor, c.capacityFactor);
  agreeNum("eval_capacity_factor", moe.evalCapacityFactor,
           c.evalCapacityFactor);
  agreeInt("min_capacity", moe.minCapacity, c.minCapacity);
  if (given.contains("drop_tokens") && moe.dropTokens != c.dropTokens)
    fail("moe.drop_tokens differs between the spec and ds_config.json; "
         "make them equal");
  moe.dropTokens = c.dropTokens;
  moe.auxLossCoef = c.auxLossCoef;
}

GptSpec readGpt(ObjectReader &r, const json &root,
                const ImportOptions &options) {
  GptSpec s;
  s.nLayer = r.getInt("n_layer", std::nullopt, 1);
  s.nEmbd = r.getInt("n_embd", std::nullopt, 1);
  s.nHead = r.getInt("n_head", std::nullopt, 1);
  s.vocab = r.getInt("vocab_size", std::nullopt, 1);
  s.nPositions = r.getInt("n_positions", std::nullopt, 1);
  s.nInner = r.getInt("n_inner", 4 * s.nEmbd, 1);
  s.tie = r.getBool("tie_word_embeddings", true);
  s.eps = r.getPositive("layer_norm_epsilon", 1e-5);
  s.initRange = r.getNumber("initializer_range", 0.02);
  if (s.initRange < 0)
    fail("initializer_range: must be >= 0, got " + formatNumber(s.initRange));
  s.activation = r.getChoice("activation_function", "gelu", kActivations);
  s.residP = r.getProbability("resid_pdrop");
  s.attnP = r.getProbability("attn_pdrop");
  s.embdP = r.getProbability("embd_pdrop");
  s.initSeed = r.getInt("init_seed", 0, 0);
  if (const json *moe = r.find("moe")) {
    if (!moe->is_object())
      fail("moe: expected an object, got " + describeJson(*moe));
    ObjectReader m(*moe, "moe.");
    MoESpec spec;
    spec.numExperts = m.getInt("num_experts", std::nullopt, 1);
    spec.k = m.getInt("k", 1, 1);
    spec.capacityFactor = m.getPositive("capacity_factor", 1.0);
    spec.evalCapacityFactor = m.getPositive("eval_capacity_factor", 1.0);
    spec.minCapacity = m.getInt("min_capacity", 4, 0);
    spec.dropTokens = m.getBool("drop_tokens", true);
    spec.every = m.getInt("every", 1, 1);
    m.finish();
    mergeMoEConfig(spec, *moe, options.config);
    if (spec.k > spec.numExperts)
      fail("moe.k " + std::to_string(spec.k) + " exceeds moe.num_experts " +
           std::to_string(spec.numExperts));
    if (spec.every > s.nLayer)
      fail("moe.every " + std::to_string(spec.every) + " exceeds n_layer " +
           std::to_string(s.nLayer) + ": no block would be a MoE block");
    s.moe = spec;
  }
  r.finish();
  (void)root;
  if (s.nEmbd % s.nHead != 0)
    fail("n_embd " + std::to_string(s.nEmbd) + " is not divisible by n_head " +
         std::to_string(s.nHead) + " (each head gets n_embd / n_head dims)");
  return s;
}

/// Far above any model's (head sizes are at most 256 today, head counts
/// 128): the import builds rotary tables of T x head size values, and
/// heads x head size must not overflow.
constexpr int64_t kMaxHeadSize = 65536, kMaxHeads = 65536;

/// The rest of a Hugging Face config.json, so that a model directory's own
/// file is a spec: keys for generation, serving and bookkeeping change
/// nothing in training and are read past; those that would change the
/// model are honoured or refused by name.
void readHuggingFaceExtras(ObjectReader &r, LlamaSpec &s) {
  // ds_config.json sets the precision (torch_dtype / dtype only say how
  // the weights are stored), and pretraining_tp only splits the same
  // products.
  for (StringRef key :
       {"architectures", "auto_map", "bos_token_id", "eos_token_id",
        "pad_token_id", "torch_dtype", "dtype", "transformers_version",
        "use_cache", "_name_or_path", "pretraining_tp"})
    r.find(key);
  double dropout = r.getNumber("attention_dropout", 0);
  if (dropout != 0)
    fail("attention_dropout: ds trains without dropout in attention; set "
         "it to 0, got " + formatNumber(dropout));
  // transformers 5 writes the rotary settings as rope_parameters, older
  // releases as rope_theta and rope_scaling.
  auto defaultRope = [&](const json &v, StringRef key, StringRef typeKey) {
    if (v.is_null())
      return;
    std::string type = v.is_object() && v.contains(typeKey) &&
                               v[typeKey.str()].is_string()
                           ? v[typeKey.str()].get<std::string>()
                           : "";
    if (type != "default")
      fail(r.pathOf(key) + ": rotary scaling \"" +
           (type.empty() ? v.dump() : type) +
           "\" is not supported; ds computes the default rotary "
           "frequencies from rope_theta (remove the scaling, or train at "
           "the original context length)");
  };
  if (const json *v = r.find("rope_scaling"))
    defaultRope(*v, "rope_scaling", v->contains("rope_type") ? "rope_type"
                                                               : "type");
  if (const json *v = r.find("rope_parameters")) {
    defaultRope(*v, "rope_parameters", "rope_type");
    if (v->is_object() && v->contains("rope_theta")) {
      const json &theta = (*v)["rope_theta"];
      if (!theta.is_number() || !(theta.get<double>() > 0))
        fail(r.pathOf("rope_parameters") +
             ".rope_theta: expected a number > 0, got " + describeJson(theta));
      s.ropeTheta = theta.get<double>();
    }
  }
  // Every layer attends the same way (the sliding window is checked by
  // family below).
  if (const json *v = r.find("layer_types")) {
    if (!v->is_array())
      fail(r.pathOf("layer_types") + ": expected a list, got " +
           describeJson(*v));
    for (const json &t : *v)
      if (!t.is_string() || (t.get<std::string>() != "full_attention" &&
                             t.get<std::string>() != "sliding_attention"))
        fail(r.pathOf("layer_types") + ": " + t.dump() +
             " is not full_attention or sliding_attention");
  }
}

LlamaSpec readLlama(ObjectReader &r, StringRef family) {
  LlamaSpec s;
  s.family = family.str();
  s.hidden = r.getInt("hidden_size", std::nullopt, 1);
  s.inner = r.getInt("intermediate_size", std::nullopt, 1);
  s.nLayer = r.getInt("num_hidden_layers", std::nullopt, 1);
  s.nHead = r.getInt("num_attention_heads", std::nullopt, 1);
  s.nKvHead = r.getInt("num_key_value_heads", s.nHead, 1);
  // 0: not given, hidden_size / num_attention_heads.
  s.headDim = r.getInt("head_dim", 0, 1);
  s.vocab = r.getInt("vocab_size", std::nullopt, 1);
  s.maxPositions = r.getInt("max_position_embeddings", std::nullopt, 1);
  s.eps = r.getPositive("rms_norm_eps", 1e-6);
  s.ropeTheta = r.getPositive("rope_theta", 10000);
  readHuggingFaceExtras(r, s);
  s.tie = r.getBool("tie_word_embeddings", false);
  s.initRange = r.getNumber("initializer_range", 0.02);
  if (s.initRange < 0)
    fail("initializer_range: must be >= 0, got " + formatNumber(s.initRange));
  r.getChoice("hidden_act", "silu", {"silu"});
  s.initSeed = r.getInt("init_seed", 0, 0);
  // What differs between the families: biases and the sliding window.
  s.qkvBias = s.oBias = s.mlpBias = false;
  auto window = [&](StringRef key) -> std::optional<int64_t> {
    const json *v = r.find(key);
    if (!v || v->is_null())
      return std::nullopt;
    return r.getInt(key, std::nullopt, 1);
  };
  if (family == "llama") {
    s.qkvBias = s.oBias = r.getBool("attention_bias", false);
    s.mlpBias = r.getBool("mlp_bias", false);
  } else if (family == "qwen2") {
    s.qkvBias = true;
    bool sliding = r.getBool("use_sliding_window", false);
    std::optional<int64_t> size = window("sliding_window");
    // Which layers slide: a window shorter than T is refused for any.
    r.getInt("max_window_layers", 0, 0);
    if (sliding)
      s.slidingWindow = size;
  } else {
    s.slidingWindow = window("sliding_window");
  }
  r.finish();

  if (s.headDim == 0) {
    if (s.hidden % s.nHead != 0)
      fail("hidden_size " + std::to_string(s.hidden) +
           " is not divisible by num_attention_heads " +
           std::to_string(s.nHead) +
           " (each head gets hidden_size / num_attention_heads dims); "
           "change one, or give head_dim");
    s.headDim = s.hidden / s.nHead;
  }
  if (s.nHead % s.nKvHead != 0)
    fail("num_attention_heads " + std::to_string(s.nHead) +
         " is not divisible by num_key_value_heads " +
         std::to_string(s.nKvHead) +
         " (each key/value head serves the same number of query heads); "
         "make num_key_value_heads a divisor of num_attention_heads");
  if (s.headDim % 2 != 0)
    fail("the head size " + std::to_string(s.headDim) +
         " is odd; rotary embeddings turn pairs of dims, so it must be even");
  if (s.headDim > kMaxHeadSize)
    fail("the head size " + std::to_string(s.headDim) + " exceeds " +
         std::to_string(kMaxHeadSize) +
         "; use more heads or a smaller head_dim");
  if (s.nHead > kMaxHeads)
    fail("num_attention_heads " + std::to_string(s.nHead) + " exceeds " +
         std::to_string(kMaxHeads));
  return s;
}

MlpSpec readMlp(ObjectReader &r) {
  MlpSpec s;
  s.sizes = r.getIntList("sizes", 2, 1);
  s.activation = r.getChoice("activation", "relu",
                             {"gelu", "gelu_new", "relu", "silu", "tanh"});
  s.loss = r.getChoice("loss", "cross_entropy", {"cross_entropy", "mse"});
  s.initSeed = r.getInt("init_seed", 0, 0);
  r.finish();
  return s;
}

Value activate(ModelBuilder &mb, Value x, StringRef activation) {
  if (activation == "gelu")
    return mb.gelu(x, nn::GeluApproximation::none);
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh")
    return mb.gelu(x, nn::GeluApproximation::tanh);
  if (activation == "relu")
    return mb.relu(x);
  if (activation == "silu")
    return mb.silu(x);
  return mb.tanh(x);
}

/// Tokens per expert, as DeepSpeed's top-k gate computes it:
/// ceil(N / E * capacity_factor * k), at least min_capacity; without token
/// dropping an expert may receive every token. DeepSpeed multiplies in
/// float32 (N / E times torch.tensor(capacity_factor * k)), and that
/// rounding decides the ceiling: N = 80, E = 3, factor 1.05 gives 28 where
/// double arithmetic gives 29.
int64_t expertCapacity(const MoESpec &moe, int64_t tokens) {
  if (!moe.dropTokens)
    return tokens;
  auto perExpert = static_cast<float>(static_cast<double>(tokens) /
                                      static_cast<double>(moe.numExperts));
  auto factor = static_cast<float>(moe.capacityFactor * moe.k);
  float product = perExpert * factor;
  auto capacity = static_cast<int64_t>(std::ceil(product));
  return std::max(capacity, moe.minCapacity);
}

/// The causal mask as an additive constant: 0 on and below the diagonal,
/// -inf above.
Value causalMask(ModelBuilder &mb, int64_t t) {
  std::vector<float> mask(t * t, 0.0f);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = i + 1; j < t; ++j)
      mask[i * t + j] = -std::numeric_limits<float>::infinity();
  return mb.constant(DenseElementsAttr::get(mb.tensorType({t, t}),
                                            llvm::ArrayRef<float>(mask)));
}

llvm::Expected<OwningOpRef<ModuleOp>> buildGpt(MLIRContext &context,
                                               const GptSpec &s, Location loc,
                                               int64_t batchSize,
                                               int64_t seqLen) {
  ModelBuilder mb(context, loc);
  OpBuilder &b = mb.builder();
  const int64_t B = batchSize, T = seqLen, C = s.nEmbd, H = s.nHead, D = C / H,
                V = s.vocab, I = s.nInner;
  const double std = s.initRange;
  auto gelu = [&](Value x) { return activate(mb, x, s.activation); };

  Value ids = mb.batch("input_ids", mb.tensorType({B, T}, mb.i64()));
  Value targets = mb.batch("targets", mb.tensorType({B, T}, mb.i64()));

  Value wte = mb.param("wte.weight", {V, C}, nn::InitKind::normal, std,
                       s.tie ? "wte" : "");
  Value h = mb.layer("embed", "GPT2Embedding", [&]() -> SmallVector<Value> {
    Value wpe =
        mb.param("wpe.weight", {s.nPositions, C}, nn::InitKind::normal, std);
    Value tok = mb.embedding(ids, wte);
    // Positions are a constant, not a batch argument: they never change,
    // and the data loader then only supplies tokens. wpe rows past T are
    // never read (and get zero gradient).
    SmallVector<int64_t> positions;
    for (int64_t i = 0; i < T; ++i)
      positions.push_back(i);
    Value pos = mb.constant(DenseElementsAttr::get(
        mb.tensorType({T}, mb.i64()), ArrayRef<int64_t>(positions)));
    Value x = mb.add(tok, mb.embedding(pos, wpe));
    return {mb.dropout(x, s.embdP)};
  })[0];

  auto heads = [&](Value x) {
    return mb.transpose(mb.reshape(x, {B, T, H, D}), {0, 2, 1, 3});
  };
  SmallVector<Value> auxLosses;
  for (int64_t i = 0; i < s.nLayer; ++i) {
    std::string p = "h." + std::to_string(i) + ".";
    bool isMoE = s.moe && (i + 1) % s.moe->every == 0;
    auto block = mb.layer(
        p.substr(0, p.size() - 1), "GPT2Block", [&]() -> SmallVector<Value> {
          auto weight = [&](StringRef name, ArrayRef<int64_t> shape) {
            return mb.param(p + name.str() + ".weight", shape,
                            nn::InitKind::normal, std);
          };
          auto bias = [&](StringRef name, int64_t size) {
            return mb.param(p + name.str() + ".bias", {size},
                            nn::InitKind::zeros);
          };
          auto norm = [&](StringRef name, Value x) {
            Value w =
                mb.param(p + name.str() + ".weight", {C}, nn::InitKind::ones);
            return mb.layerNorm(x, w, bias(name, C), s.eps);
          };

          Value ln1 = norm("ln_1", h);
          // Parameters are requested in statements of their own: the order of
          // first use is the signature order.
          Value wAttn = weight("attn.c_attn", {3 * C, C});
          Value qkv = mb.linear(ln1, wAttn, bias("attn.c_attn", 3 * C));
          auto parts = mb.split(qkv, 2, {C, C, C});
          Value q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
          Value att;
          if (s.attnP == 0) {
            att = mb.attention(q, k, v, /*causal=*/true);
          } else {
            // dsnn.attention has no dropout on its probabilities; spell it out.
            Value qk = mb.batchMatmul(q, k, false, true);
            Value scores =
                mb.mul(qk, mb.scalarConstant(1.0 / std::sqrt(double(D))));
            // One mask per layer: a value defined in one layer's region is not
            // visible in the next.
            Value probs = mb.softmax(mb.add(scores, causalMask(mb, T)), 3);
            att = mb.batchMatmul(mb.dropout(probs, s.attnP), v);
          }
          Value y = mb.reshape(mb.transpose(att, {0, 2, 1, 3}), {B, T, C});
          Value wProj = weight("attn.c_proj", {C, C});
          Value proj = mb.linear(y, wProj, bias("attn.c_proj", C));
          Value res1 = mb.add(h, mb.dropout(proj, s.residP));
          Value ln2 = norm("ln_2", res1);

          if (!isMoE) {
            Value wFc = weight("mlp.c_fc", {I, C});
            Value fc = mb.linear(ln2, wFc, bias("mlp.c_fc", I));
            Value wOut = weight("mlp.c_proj", {C, I});
            Value out = mb.linear(gelu(fc), wOut, bias("mlp.c_proj", C));
            return {mb.add(res1, mb.dropout(out, s.residP))};
          }

          const MoESpec &moe = *s.moe;
          int64_t E = moe.numExperts;
          Value gate = weight("mlp.gate", {E, C});
          // All experts' weights in one tensor each, stacked on a leading E
          // dim; `expert = 0` is the global index of the expert in slice 0, so
          // a shard made by expert parallelism can say which experts it holds.
          auto expertParam = [&](StringRef name, ArrayRef<int64_t> shape,
                                 nn::InitKind init) {
            return mb.param(p + "mlp.experts." + name.str(), shape, init,
                            init == nn::InitKind::normal ? std : 0.0, {},
                            int64_t{0});
          };
          SmallVector<Value> experts = {
              expertParam("c_fc.weight", {E, I, C}, nn::InitKind::normal),
              expertParam("c_fc.bias", {E, I}, nn::InitKind::zeros),
              expertParam("c_proj.weight", {E, C, I}, nn::InitKind::normal),
              expertParam("c_proj.bias", {E, C}, nn::InitKind::zeros)};
          int64_t capacity = expertCapacity(moe, B * T);
          auto op = nn::MoEOp::create(b, mb.loc(), ln2.getType(),
                                      mb.tensorType({}), ln2, gate, experts, E,
                                      moe.k, llvm::APFloat(moe.capacityFactor),
                                      llvm::APFloat(moe.evalCapacityFactor),
                                      moe.minCapacity, moe.dropTokens);
          Block &body = op.getExperts().emplaceBlock();
          Value tokens =
              body.addArgument(mb.tensorType({E, capacity, C}), mb.loc());
          for (Value e : experts)
            body.addArgument(e.getType(), mb.loc());
          {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(&body);
            Value fc = mb.batchMatmul(tokens, body.getArgument(1), false, true);
            fc = mb.add(fc, mb.reshape(body.getArgument(2), {E, 1, I}));
            Value out =
                mb.batchMatmul(gelu(fc), body.getArgument(3), false, true);
            out = mb.add(out, mb.reshape(body.getArgument(4), {E, 1, C}));
            nn::YieldOp::create(b, mb.loc(), ValueRange{out});
          }
          return {mb.add(res1, mb.dropout(op.getResult(), s.residP)),
                  op.getAuxLoss()};
        });
    h = block[0];
    if (block.size() > 1)
      auxLosses.push_back(block[1]);
  }

  h = mb.layer("ln_f", "LayerNorm", [&]() -> SmallVector<Value> {
    Value w = mb.param("ln_f.weight", {C}, nn::InitKind::ones);
    Value bias = mb.param("ln_f.bias", {C}, nn::InitKind::zeros);
    return {mb.layerNorm(h, w, bias, s.eps)};
  })[0];
  Value head =
      s.tie ? wte
            : mb.param("lm_head.weight", {V, C}, nn::InitKind::normal, std);
  Value loss = mb.crossEntropy(mb.linear(h, head), targets);
  if (!auxLosses.empty()) {
    Value aux = auxLosses.front();
    for (Value a : ArrayRef<Value>(auxLosses).drop_front())
      aux = mb.add(aux, a);
    Value coef = mb.scalarConstant(s.moe->auxLossCoef);
    coef.getDefiningOp()->setAttr(kAuxLossCoefAttrName, b.getUnitAttr());
    loss = mb.add(loss, mb.mul(aux, coef));
  }
  return mb.finish(loss, {b.getNamedAttr(kInitSeedAttrName,
                                         b.getI64IntegerAttr(s.initSeed))});
}

/// The rotary tables of Hugging Face's `rotate_half` form, [T, D]: position
/// t turns dims i and i + D/2 by t * theta^(-2i/D).
std::pair<DenseElementsAttr, DenseElementsAttr>
rotaryTables(ModelBuilder &mb, int64_t t, int64_t d, double theta) {
  std::vector<float> cos(t * d), sin(t * d);
  for (int64_t pos = 0; pos < t; ++pos)
    for (int64_t i = 0; i < d / 2; ++i) {
      double angle = pos * std::pow(theta, -2.0 * i / d);
      for (int64_t at : {pos * d + i, pos * d + i + d / 2}) {
        cos[at] = static_cast<float>(std::cos(angle));
        sin[at] = static_cast<float>(std::sin(angle));
      }
    }
  auto type = mb.tensorType({t, d});
  return {DenseElementsAttr::get(type, ArrayRef<float>(cos)),
          DenseElementsAttr::get(type, ArrayRef<float>(sin))};
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildLlama(MLIRContext &context, const LlamaSpec &s, Location loc,
           int64_t batchSize, int64_t seqLen) {
  ModelBuilder mb(context, loc);
  OpBuilder &b = mb.builder();
  const int64_t B = batchSize, T = seqLen, C = s.hidden, H = s.nHead,
                KV = s.nKvHead, D = s.headDim, V = s.vocab, I = s.inner;
  const double std = s.initRange;
  // Layer types are the Hugging Face class names: LlamaDecoderLayer, ...
  std::string prefix = s.family == "llama"     ? "Llama"
                       : s.family == "mistral" ? "Mistral"
                                               : "Qwen2";
  auto rotary = rotaryTables(mb, T, D, s.ropeTheta);

  Value ids = mb.batch("input_ids", mb.tensorType({B, T}, mb.i64()));
  Value targets = mb.batch("targets", mb.tensorType({B, T}, mb.i64()));

  Value embed =
      mb.param("model.embed_tokens.weight", {V, C}, nn::InitKind::normal, std,
               s.tie ? "model.embed_tokens" : "");
  Value h =
      mb.layer("model.embed_tokens", "Embedding", [&]() -> SmallVector<Value> {
        return {mb.embedding(ids, embed)};
      })[0];

  for (int64_t i = 0; i < s.nLayer; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    h = mb.layer(
        p.substr(0, p.size() - 1), prefix + "DecoderLayer",
        [&]() -> SmallVector<Value> {
          // A projection's weight [out, in] and, when the family has one,
          // its bias.
          auto proj = [&](StringRef name, int64_t out, int64_t in,
                          bool hasBias) -> std::pair<Value, Value> {
            Value w = mb.param(p + name.str() + ".weight", {out, in},
                               nn::InitKind::normal, std);
            if (!hasBias)
              return {w, Value()};
            return {w, mb.param(p + name.str() + ".bias", {out},
                                nn::InitKind::zeros)};
          };
          // Parameters are declared before use, in named_parameters()
          // order: attention, MLP, then the two norms.
          auto [wq, bq] = proj("self_attn.q_proj", H * D, C, s.qkvBias);
          auto [wk, bk] = proj("self_attn.k_proj", KV * D, C, s.qkvBias);
          auto [wv, bv] = proj("self_attn.v_proj", KV * D, C, s.qkvBias);
          auto [wo, bo] = proj("self_attn.o_proj", C, H * D, s.oBias);
          auto [wGate, bGate] = proj("mlp.gate_proj", I, C, s.mlpBias);
          auto [wUp, bUp] = proj("mlp.up_proj", I, C, s.mlpBias);
          auto [wDown, bDown] = proj("mlp.down_proj", C, I, s.mlpBias);
          Value inNorm =
              mb.param(p + "input_layernorm.weight", {C}, nn::InitKind::ones);
          Value postNorm = mb.param(p + "post_attention_layernorm.weight", {C},
                                    nn::InitKind::ones);

          auto heads = [&](Value x, int64_t n) {
            return mb.transpose(mb.reshape(x, {B, T, n, D}), {0, 2, 1, 3});
          };
          // One table per layer: a value defined in one layer's region is
          // not visible in the next.
          Value cos = mb.constant(rotary.first),
                sin = mb.constant(rotary.second);
          // One op per statement: argument evaluation order is unspecified,
          // and the IR should not depend on the compiler.
          auto rotate = [&](Value x) {
            auto halves = mb.split(x, 3, {D / 2, D / 2});
            Value turned = mb.concat({mb.neg(halves[1]), halves[0]}, 3);
            Value xCos = mb.mul(x, cos);
            return mb.add(xCos, mb.mul(turned, sin));
          };
          // Grouped-query attention: query head j reads key/value head
          // j / (H / KV).
          auto repeatKv = [&](Value x) {
            if (H == KV)
              return x;
            Value e = mb.expand(mb.reshape(x, {B, KV, 1, T, D}),
                                {B, KV, H / KV, T, D});
            return mb.reshape(e, {B, H, T, D});
          };

          Value x = mb.rmsNorm(h, inNorm, s.eps);
          Value q = rotate(heads(mb.linear(x, wq, bq), H));
          Value k = rotate(heads(mb.linear(x, wk, bk), KV));
          Value v = heads(mb.linear(x, wv, bv), KV);
          k = repeatKv(k);
          v = repeatKv(v);
          Value att = mb.attention(q, k, v, /*causal=*/true);
          Value y = mb.reshape(mb.transpose(att, {0, 2, 1, 3}), {B, T, H * D});
          Value res = mb.add(h, mb.linear(y, wo, bo));

          x = mb.rmsNorm(res, postNorm, s.eps);
          Value gate = mb.silu(mb.linear(x, wGate, bGate));
          Value up = mb.linear(x, wUp, bUp);
          Value down = mb.linear(mb.mul(gate, up), wDown, bDown);
          return {mb.add(res, down)};
        })[0];
  }

  h = mb.layer("model.norm", prefix + "RMSNorm", [&]() -> SmallVector<Value> {
    Value w = mb.param("model.norm.weight", {C}, nn::InitKind::ones);
    return {mb.rmsNorm(h, w, s.eps)};
  })[0];
  Value head =
      s.tie ? embed
            : mb.param("lm_head.weight", {V, C}, nn::InitKind::normal, std);
  Value loss = mb.crossEntropy(mb.linear(h, head), targets);
  return mb.finish(loss, {b.getNamedAttr(kInitSeedAttrName,
                                         b.getI64IntegerAttr(s.initSeed))});
}

llvm::Expected<OwningOpRef<ModuleOp>> buildMlp(MLIRContext &context,
                                               const MlpSpec &s, Location loc,
                                               int64_t batchSize) {
  ModelBuilder mb(context, loc);
  OpBuilder &b = mb.builder();
  const int64_t B = batchSize, out = s.sizes.back();
  Value x = mb.batch("inputs", mb.tensorType({B, s.sizes.front()}));
  Value targets = s.loss == "mse"
                      ? mb.batch("targets", mb.tensorType({B, out}))
                      : mb.batch("targets", mb.tensorType({B}, mb.i64()));
  size_t n = s.sizes.size() - 1;
  for (size_t i = 0; i < n; ++i) {
    std::string name = "layers." + std::to_string(i);
    x = mb.layer(name, "Linear", [&]() -> SmallVector<Value> {
      int64_t in = s.sizes[i], outDim = s.sizes[i + 1];
      // nn.Linear's own default: U(-1/sqrt(in), 1/sqrt(in)) for both.
      double bound = 1.0 / std::sqrt(static_cast<double>(in));
      Value w = mb.param(name + ".weight", {outDim, in}, nn::InitKind::uniform,
                         bound);
      Value bias =
          mb.param(name + ".bias", {outDim}, nn::InitKind::uniform, bound);
      Value y = mb.linear(x, w, bias);
      return {i + 1 < n ? activate(mb, y, s.activation) : y};
    })[0];
  }
  Value loss =
      s.loss == "mse" ? mb.mseLoss(x, targets) : mb.crossEntropy(x, targets);
  return mb.finish(loss, {b.getNamedAttr(kInitSeedAttrName,
                                         b.getI64IntegerAttr(s.initSeed))});
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
importer::importSpec(MLIRContext &context, StringRef jsonText,
                     StringRef fileName, const ImportOptions &options) {
  try {
    json root;
    try {
      root = json::parse(jsonText.begin(), jsonText.end());
    } catch (const json::parse_error &e) {
      // nlohmann's message starts with "[json.exception.parse_error.101] ".
      std::string what = e.what();
      size_t at = what.find("] ");
      fail("malformed JSON: " +
           (at == std::string::npos ? what : what.substr(at + 2)));
    }
    if (!root.is_object())
      fail("expected a JSON object, got " + describeJson(root));

    int64_t batchSize = kDefaultMicroBatch;
    if (options.microBatch)
      batchSize = *options.microBatch;
    else if (options.config)
      batchSize = options.config->trainMicroBatchSizePerGpu;
    if (batchSize < 1)
      fail("the micro-batch size must be >= 1, got " +
           std::to_string(batchSize));

    ObjectReader r(root, "");
    std::string type =
        r.getChoice("model_type", std::nullopt,
                    {"gpt", "gpt2", "llama", "mistral", "mlp", "qwen2"});
    Location loc = FileLineColLoc::get(&context, fileName, 1, 1);
    if (type == "mlp") {
      if (options.seqLen)
        fail("--seq-len applies to GPT and Llama specs only; an MLP has no "
             "sequence");
      return buildMlp(context, readMlp(r), loc, batchSize);
    }
    if (type == "llama" || type == "mistral" || type == "qwen2") {
      LlamaSpec spec = readLlama(r, type);
      int64_t seqLen = options.seqLen.value_or(spec.maxPositions);
      if (seqLen < 1 || seqLen > spec.maxPositions)
        fail("the sequence length " + std::to_string(seqLen) +
             " must be in [1, max_position_embeddings = " +
             std::to_string(spec.maxPositions) + "]");
      if (spec.slidingWindow && *spec.slidingWindow < seqLen)
        fail(
            "sliding_window " + std::to_string(*spec.slidingWindow) +
            " is shorter than the sequence length " + std::to_string(seqLen) +
            ", and ds attends over the whole causal window; use --seq-len <= " +
            std::to_string(*spec.slidingWindow));
      return buildLlama(context, spec, loc, batchSize, seqLen);
    }
    GptSpec spec = readGpt(r, root, options);
    int64_t seqLen = options.seqLen.value_or(spec.nPositions);
    if (seqLen < 1 || seqLen > spec.nPositions)
      fail("the sequence length " + std::to_string(seqLen) +
           " must be in [1, n_positions = " + std::to_string(spec.nPositions) +
           "]");
    return buildGpt(context, spec, loc, batchSize, seqLen);
  } catch (const SpecError &e) {
    return makeError(fileName + ": " + e.what());
  } catch (const json::exception &e) {
    return makeError(fileName + ": " + e.what());
  }
}

llvm::Expected<OwningOpRef<ModuleOp>>
importer::importSpecFile(MLIRContext &context, StringRef path,
                         const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return makeError("cannot read model spec \"" + path +
                     "\": " + buffer.getError().message());
  return importSpec(context, (*buffer)->getBuffer(), path, options);
}
