//===- DataFeeder.cpp - The batch arguments of every step -----------------===//
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/Random.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

/// A --batch binding to a file rather than to a part of the token windows.
static bool isFileBinding(llvm::StringRef role) {
  return role != "tokens" && role != "targets";
}

llvm::Expected<DataFeeder> DataFeeder::open(const TrainOptions &options) {
  DataFeeder feeder;
  feeder.dataPath = options.dataPath;
  feeder.synthetic = options.synthetic;
  feeder.order = options.order;
  feeder.roles = options.batchRoles;
  bool files = llvm::any_of(feeder.roles, [](const auto &binding) {
    return isFileBinding(binding.second);
  });
  if (options.synthetic || (options.dataPath.empty() && files))
    return feeder;
  if (options.dataPath.empty())
    return createStringError("no training data: give --data FILE (.txt, "
                             ".bin or .npy tokens), --data DIR (NAME.npy per "
                             "batch argument), --batch NAME=FILE.npy or "
                             "--synthetic");
  if (llvm::sys::fs::is_directory(options.dataPath)) {
    feeder.sampleDir = options.dataPath;
    return feeder;
  }
  auto loaded = TokenData::load(options.dataPath);
  if (!loaded)
    return loaded.takeError();
  feeder.data = std::move(*loaded);
  return feeder;
}

std::string DataFeeder::fileOf(const ArgSpec &p) const {
  auto it = roles.find(p.name);
  if (it != roles.end())
    return isFileBinding(it->second) ? it->second : "";
  if (sampleDir.empty())
    return "";
  llvm::SmallString<128> path(sampleDir);
  llvm::sys::path::append(path, p.name + ".npy");
  return path.str().str();
}

llvm::Error DataFeeder::openSamples(const StepManifest &manifest) {
  const SampleArray *first = nullptr;
  for (size_t i : manifest.batchArgs) {
    const ArgSpec &p = manifest.args[i];
    std::string path = fileOf(p);
    if (path.empty())
      continue;
    if (!sampleDir.empty() && !roles.count(p.name) &&
        !llvm::sys::fs::exists(path))
      return createStringError("--data %s: no %s.npy for batch argument "
                               "\"%s\" (a directory holds one NAME.npy per "
                               "batch argument of forward)",
                               sampleDir.c_str(), p.name.c_str(),
                               p.name.c_str());
    auto array = SampleArray::open(path, p.name, p.dtype,
                                   llvm::ArrayRef(p.shape).drop_front(2));
    if (!array)
      return array.takeError();
    if (first && array->samples() != first->samples())
      return createStringError(
          "%s holds %lld samples but %s %lld: the files of one batch are "
          "paired row by row and must have as many rows",
          array->path().c_str(), (long long)array->samples(),
          first->path().c_str(), (long long)first->samples());
    first = &arrays.emplace(i, std::move(*array)).first->second;
  }
  return llvm::Error::success();
}

std::string DataFeeder::roleOf(const ArgSpec &p) const {
  auto it = roles.find(p.name);
  if (it != roles.end() && isFileBinding(it->second))
    return p.name;
  if (it != roles.end())
    return it->second == "tokens" ? "input_ids" : "targets";
  if (!fileOf(p).empty())
    return p.name;
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
  }
  if (llvm::Error err = openSamples(manifest))
    return err;
  for (size_t i : manifest.batchArgs) {
    const ArgSpec &p = manifest.args[i];
    if (arrays.count(i))
      continue;
    std::string role = roleOf(p);
    if (!synthetic && role != "input_ids" && role != "targets" &&
        p.dtype != DType::I64)
      return createStringError(
          "batch argument \"%s\": token data feeds only input_ids and "
          "targets; give its samples with --batch %s=FILE.npy, or use "
          "--synthetic for this model",
          p.name.c_str(), p.name.c_str());
    if (!synthetic && role != "input_ids" && role != "targets")
      return createStringError(
          "batch argument \"%s\": token data feeds only input_ids and "
          "targets; bind it with --batch %s=tokens (or =targets, or "
          "=FILE.npy), or use --synthetic for this model",
          p.name.c_str(), p.name.c_str());
    // A classifier's targets: one class per sample, [micro-batches, batch].
    bool classTargets = role == "targets" && p.dtype == DType::I64 &&
                        p.shape.size() == 2 && !hasInputIds;
    if (classTargets && !synthetic)
      return createStringError(
          "batch argument \"%s\" holds one class per sample, which token "
          "data does not give; give the labels with --batch %s=FILE.npy, or "
          "train this model with --synthetic",
          p.name.c_str(), p.name.c_str());
    if ((role == "input_ids" || role == "targets") && !classTargets) {
      if (p.dtype != DType::I64 || p.shape.size() != 3)
        return createStringError("batch argument \"%s\" must be i64 "
                                 "[micro-batches, batch, seq]",
                                 p.name.c_str());
      sequence = p.shape[2];
    }
  }
  // Every stage must draw the same synthetic tokens, below every table
  // they index.
  int64_t modelVocab = manifest.vocab();
  if (sequence && !data && !synthetic)
    return createStringError("the model's batch takes token windows; give "
                             "the tokens with --data FILE (.txt, .bin or "
                             ".npy)");
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

llvm::Error DataFeeder::fill(int64_t step) {
  // This rank's contiguous block of the global batch.
  const int64_t first = int64_t(rank) * micro * gas;
  for (size_t i = 0; i < manifest->args.size(); ++i) {
    const ArgSpec &p = manifest->args[i];
    if (p.kind == ArgSpec::Step) {
      *buffers[i].data<int64_t>() = step + 1;
      continue;
    }
    auto array = arrays.find(i);
    if (array != arrays.end()) {
      int64_t rowBytes = numElements(llvm::ArrayRef(p.shape).drop_front(2)) *
                         mlir::ds::exec::dtypeBytes(p.dtype);
      auto *out = static_cast<char *>(buffers[i].data());
      for (int64_t k = 0; k < gas * micro; ++k)
        array->second.copyRow(sampleIndex(step, globalBatch, first + k,
                                          array->second.samples(), order, seed),
                              out + k * rowBytes);
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
    for (int64_t m = 0; m < gas; ++m)
      if (llvm::Error err = data->fillBatch(
              step, globalBatch, first + m * micro, micro, sequence, order,
              seed, in + m * micro * sequence, out + m * micro * sequence))
        return err;
  }
  return llvm::Error::success();
}
