//===- DataFeeder.cpp - The batch arguments of every step -----------------===//
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/Random.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

llvm::Expected<DataFeeder> DataFeeder::open(const TrainOptions &options) {
  DataFeeder feeder;
  feeder.dataPath = options.dataPath;
  feeder.synthetic = options.synthetic;
  feeder.order = options.order;
  feeder.roles = options.batchRoles;
  if (options.synthetic)
    return feeder;
  if (options.dataPath.empty())
    return createStringError("no training data: give --data FILE (.txt "
                             "or .bin) or --synthetic");
  auto loaded = TokenData::load(options.dataPath);
  if (!loaded)
    return loaded.takeError();
  feeder.data = std::move(*loaded);
  return feeder;
}

std::string DataFeeder::roleOf(const ArgSpec &p) const {
  auto it = roles.find(p.name);
  if (it != roles.end())
    return it->second == "tokens" ? "input_ids" : "targets";
  // The common names of PyTorch code, when they hold token ids.
  if (p.dtype == DType::I64 &&
      llvm::is_contained({"x", "ids", "tokens", "idx"}, p.name))
    return "input_ids";
  if (p.dtype == DType::I64 && llvm::is_contained({"y", "labels"}, p.name))
    return "targets";
  return p.name;
}

std::optional<size_t> DataFeeder::findRole(const StepManifest &m,
                                           llvm::StringRef role) const {
  for (size_t i : m.batchArgs)
    if (roleOf(m.args[i]) == role)
      return i;
  return std::nullopt;
}

llvm::Error DataFeeder::plan(const StepManifest &manifest,
                             const cfg::Config &config,
                             std::optional<uint64_t> seedOption) {
  gas = manifest.gradientAccumulationSteps;
  micro = config.trainMicroBatchSizePerGpu;
  globalBatch = config.trainBatchSize;
  for (const auto &[name, role] : roles)
    if (!manifest.find(ArgSpec::Batch, name))
      return createStringError("--batch %s=%s: the model has no batch "
                               "argument \"%s\"",
                               name.c_str(), role.c_str(), name.c_str());
  bool hasInputIds = findRole(manifest, "input_ids").has_value();
  for (size_t i : manifest.batchArgs) {
    const ArgSpec &p = manifest.args[i];
    if (p.shape.size() < 2 || p.shape[0] != gas || p.shape[1] != micro)
      return createStringError(
          "batch argument \"%s\" has shape %s, but the config asks for "
          "gradient_accumulation_steps %lld x train_micro_batch_size_per_gpu "
          "%lld leading dims; import the model with the same micro-batch",
          p.name.c_str(), mlir::ds::exec::typeString(p.dtype, p.shape).c_str(),
          (long long)gas, (long long)micro);
    std::string role = roleOf(p);
    if (!synthetic && role != "input_ids" && role != "targets" &&
        p.dtype != DType::I64)
      return createStringError(
          "batch argument \"%s\": token data feeds only input_ids and "
          "targets; use --synthetic for this model",
          p.name.c_str());
    if (!synthetic && role != "input_ids" && role != "targets")
      return createStringError(
          "batch argument \"%s\": token data feeds only input_ids and "
          "targets; bind it with --batch %s=tokens (or =targets), or use "
          "--synthetic for this model",
          p.name.c_str(), p.name.c_str());
    // A classifier's targets: one class per sample, [micro-batches, batch].
    bool classTargets = role == "targets" && p.dtype == DType::I64 &&
                        p.shape.size() == 2 && !hasInputIds;
    if (classTargets && !synthetic)
      return createStringError(
          "batch argument \"targets\" holds one class per sample, which "
          "token data does not give; train this model with --synthetic");
    if ((role == "input_ids" || role == "targets") && !classTargets) {
      if (p.dtype != DType::I64 || p.shape.size() != 3)
        return createStringError("batch argument \"%s\" must be i64 "
                                 "[micro-batches, batch, seq]",
                                 p.name.c_str());
      sequence = p.shape[2];
    }
  }
  // The vocabulary: the token embedding's rows, or the classes of the
  // loss (a pipeline's last stage may hold no embedding). Every stage must
  // draw the same synthetic tokens.
  int64_t modelVocab = 0;
  if (std::optional<size_t> wte = manifest.find(ArgSpec::Param, "wte.weight"))
    modelVocab = manifest.args[*wte].wholeShape()[0];
  else if (manifest.crossEntropyClasses > 0)
    modelVocab = manifest.crossEntropyClasses;
  if (data && sequence)
    if (llvm::Error err = data->checkFits(
            sequence, modelVocab ? modelVocab : data->vocab(), dataPath))
      return err;
  if (synthetic && sequence)
    data = TokenData::synthetic(std::max<int64_t>(1 << 16, 4 * sequence),
                                modelVocab ? modelVocab : 256,
                                seedOption.value_or(0));
  return llvm::Error::success();
}

llvm::Error DataFeeder::initialize(const StepManifest &stepManifest,
                                   uint64_t runSeed, int runRank) {
  manifest = &stepManifest;
  seed = runSeed;
  rank = runRank;
  buffers.assign(manifest->args.size(), Tensor());
  for (size_t i = 0; i < manifest->args.size(); ++i) {
    const ArgSpec &p = manifest->args[i];
    if (p.isModelState())
      continue;
    buffers[i] = Tensor::zeros(p.dtype, p.shape);
    if (p.kind == ArgSpec::Batch && p.dtype == DType::F32) {
      // Synthetic float batches (MLP): fixed per run, drawn once.
      initParameter(p.name, InitKind::Normal, 1.0, seed, 0,
                    numElements(p.shape), buffers[i].data<float>());
    }
    if (p.kind == ArgSpec::Batch && p.name == "targets" &&
        p.shape.size() == 2 && synthetic) {
      // Synthetic class labels, fixed per run like the inputs: uniform over
      // the classes of the model's cross-entropy.
      int64_t classes = manifest->crossEntropyClasses;
      if (classes < 1)
        return createStringError("batch argument \"targets\" [batch] needs "
                                 "a dsnn.cross_entropy in the model to give "
                                 "its number of classes");
      int64_t *labels = buffers[i].data<int64_t>();
      for (int64_t k = 0, n = numElements(p.shape); k < n; ++k)
        labels[k] =
            int64_t(randomBits(seed, streamOf(p.name), k) % uint64_t(classes));
    }
  }
  return llvm::Error::success();
}

void DataFeeder::bind(std::vector<Tensor> &args) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!buffers[i].isNull())
      args[i] = buffers[i];
}

void DataFeeder::fill(int64_t step) {
  for (size_t i = 0; i < manifest->args.size(); ++i) {
    const ArgSpec &p = manifest->args[i];
    if (p.kind == ArgSpec::Step) {
      *buffers[i].data<int64_t>() = step + 1;
      continue;
    }
    // Token data fills input_ids and targets together; a pipeline's first
    // stage takes only the inputs and its last only the targets.
    std::optional<size_t> ids = findRole(*manifest, "input_ids");
    std::optional<size_t> tgt = findRole(*manifest, "targets");
    if (p.kind != ArgSpec::Batch ||
        (ids ? roleOf(p) != "input_ids"
             : roleOf(p) != "targets" || p.shape.size() != 3))
      continue;
    scratch.resize(numElements(p.shape));
    int64_t *in = ids ? buffers[*ids].data<int64_t>() : scratch.data();
    int64_t *out = tgt ? buffers[*tgt].data<int64_t>() : scratch.data();
    // This rank's contiguous block of the global batch.
    int64_t first = int64_t(rank) * micro * gas;
    for (int64_t m = 0; m < gas; ++m)
      data->fillBatch(step, globalBatch, first + m * micro, micro, sequence,
                      order, seed, in + m * micro * sequence,
                      out + m * micro * sequence);
  }
}
