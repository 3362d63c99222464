//===- Evaluator.cpp - The eval loss every --eval-interval steps ----------===//
#include "ds/Driver/Evaluator.h"
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/StateStore.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

llvm::Expected<std::unique_ptr<Evaluator>>
Evaluator::open(const TrainOptions &options, const cfg::Config &config) {
  if (options.evalDataPath.empty())
    return nullptr;
  if (config.moe.enabled &&
      config.moe.evalCapacityFactor != config.moe.capacityFactor)
    return createStringError(
        "--eval-data with moe.eval_capacity_factor %g != capacity_factor "
        "%g is not supported yet: the expert region is built for the "
        "training capacity; set them equal to evaluate",
        config.moe.evalCapacityFactor, config.moe.capacityFactor);
  std::unique_ptr<Evaluator> eval(new Evaluator());
  eval->path = options.evalDataPath;
  if (llvm::sys::fs::is_directory(options.evalDataPath)) {
    eval->sampleDir = true;
  } else {
    auto loaded = TokenData::load(options.evalDataPath);
    if (!loaded)
      return loaded.takeError();
    eval->data = std::move(*loaded);
  }
  eval->interval = options.evalInterval > 0
                       ? options.evalInterval
                       : std::max<int64_t>(1, config.stepsPerPrint);
  eval->micro = config.trainMicroBatchSizePerGpu;
  eval->gas = config.gradientAccumulationSteps;
  eval->globalBatch = config.trainBatchSize;
  eval->stageRanks = config.stageRanks();
  eval->stages = config.pipeline.stages;
  return eval;
}

llvm::Error Evaluator::plan(const StepManifest &manifest,
                            const DataFeeder &feeder, int programRank) {
  rank = programRank;
  if (manifest.evalArgs.empty())
    return createStringError("--eval-data: the training step was built "
                             "without an eval function; for --compiled, "
                             "compile it with ds-compile --eval");
  numArgs = manifest.evalArgs.size();
  args.assign(numArgs, Tensor());
  params.assign(manifest.evalArgs.size(), std::nullopt);
  for (size_t i = 0; i < manifest.evalArgs.size(); ++i) {
    const ArgSpec &a = manifest.evalArgs[i];
    if (a.kind == ArgSpec::Param) {
      std::optional<size_t> at = manifest.find(ArgSpec::Param, a.name);
      // ds-zero gave @eval_step the parameters as the step holds them
      // (ZeRO-3 chunks, 16-bit copies, expert slices): it reads them in
      // place.
      if (!at || manifest.args[*at].fullShape != a.fullShape ||
          manifest.args[*at].expertShards != a.expertShards ||
          manifest.args[*at].dtype != a.dtype ||
          manifest.args[*at].shape != a.shape)
        return createStringError(
            "--eval-data: @eval_step reads parameter \"%s\" as %s but the "
            "step holds it otherwise; the eval function and the step were "
            "built apart",
            a.name.c_str(),
            mlir::ds::exec::typeString(a.dtype, a.shape).c_str());
      params[i] = at;
      continue;
    }
    if (sampleDir) {
      if (llvm::Error err = openSamples(i, a))
        return err;
      continue;
    }
    std::string role = feeder.roleOf(a);
    if ((role != "input_ids" && role != "targets") || a.dtype != DType::I64 ||
        a.shape.size() != 2 || a.shape[0] != micro)
      return createStringError(
          "--eval-data: batch argument \"%s\" (%s) is not a token window; "
          "eval data is a token corpus for models of (input_ids, targets)",
          a.name.c_str(), mlir::ds::exec::typeString(a.dtype, a.shape).c_str());
    sequence = a.shape[1];
    (role == "input_ids" ? inputsAt : targetsAt) = i;
    args[i] = Tensor::zeros(a.dtype, a.shape);
  }
  if (sampleDir)
    return llvm::Error::success();
  // A pipeline stage feeds what its chunk reads: the first stage the
  // inputs, the last the targets, a middle stage neither.
  if (stages > 1 && !inputsAt && !targetsAt)
    return llvm::Error::success();
  if ((!inputsAt || !targetsAt) && stages == 1)
    return createStringError("--eval-data: the model's forward takes no "
                             "input_ids and targets to feed; give a "
                             "directory of NAME.npy per batch argument");
  for (std::optional<size_t> *missing : {&inputsAt, &targetsAt})
    if (!*missing) {
      *missing = args.size();
      args.push_back(Tensor::zeros(DType::I64, {micro, sequence}));
    }
  int64_t modelVocab = manifest.vocab();
  return data.checkFits(sequence, modelVocab ? modelVocab : data.vocab(), path);
}

llvm::Expected<double> Evaluator::run(StepFunction &step,
                                      const StateStore &store) {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i])
      args[i] = store.current(*params[i]);
  Tensor loss = Tensor::zeros(DType::F32, {});
  double sum = 0;
  int64_t first = int64_t(rank) * micro * gas;
  for (int64_t m = 0; m < gas; ++m) {
    if (sampleDir)
      fillSamples(first + m * micro);
    else if (inputsAt)
      if (llvm::Error err = data.fillBatch(
              evals, globalBatch, first + m * micro, micro, sequence,
              DataOrder::Sequential, 0, args[*inputsAt].data<int64_t>(),
              args[*targetsAt].data<int64_t>()))
        return std::move(err);
    // A stage's own arguments; a pipeline's scratch window stays behind.
    if (llvm::Error err =
            step.evaluate(llvm::ArrayRef(args).take_front(numArgs), loss))
      return std::move(err);
    sum += *loss.data<float>();
  }
  ++evals;
  double mean = sum / double(gas);
  // With a pipeline only the last stage computed a loss (its ranks are the
  // last stageRanks, PipeModelDataParallelTopology). The ranks of a tp or
  // sp group hold the same mean, so averaging them with the dp ranks'
  // keeps the dp mean.
  int64_t world = dsrt_comm_size(dsrt_comm_world());
  if (world == 1)
    return mean;
  return meanOfRanks(mean, world, stages > 1 ? world - stageRanks : 0);
}

llvm::Expected<double> Evaluator::meanOfRanks(double mean, int64_t count,
                                              int64_t first) const {
  // Every rank's mean, in f64 (as bits), summed in rank order: the same
  // value on every rank and in every run.
  int64_t bits;
  std::memcpy(&bits, &mean, sizeof bits);
  std::vector<int64_t> all(count);
  if (dsrt_all_gather(dsrt_comm_world(), &bits, all.data(), count, DSRT_I64) !=
      0)
    return createStringError("averaging the eval loss: %s", dsrt_last_error());
  double total = 0;
  for (int64_t r = first; r < count; ++r) {
    double v;
    std::memcpy(&v, &all[r], sizeof v);
    total += v;
  }
  return total / double(count - first);
}

llvm::Error Evaluator::openSamples(size_t i, const ArgSpec &a) {
  llvm::SmallString<128> file(path);
  llvm::sys::path::append(file, a.name + ".npy");
  if (!llvm::sys::fs::exists(file))
    return createStringError("--eval-data %s: no %s.npy for batch argument "
                             "\"%s\" (a directory holds one NAME.npy per "
                             "batch argument of forward)",
                             path.c_str(), a.name.c_str(), a.name.c_str());
  if (a.shape.empty() || a.shape[0] != micro)
    return createStringError(
        "--eval-data: batch argument \"%s\" (%s) has "
        "no leading micro-batch dim of %lld",
        a.name.c_str(), mlir::ds::exec::typeString(a.dtype, a.shape).c_str(),
        (long long)micro);
  auto array = SampleArray::open(file, a.name, a.dtype,
                                 llvm::ArrayRef(a.shape).drop_front(1));
  if (!array)
    return array.takeError();
  if (!arrays.empty() && array->samples() != arrays.begin()->second.samples())
    return createStringError(
        "%s holds %lld samples but %s %lld: the files of one batch are "
        "paired row by row and must have as many rows",
        array->path().c_str(), (long long)array->samples(),
        arrays.begin()->second.path().c_str(),
        (long long)arrays.begin()->second.samples());
  arrays.emplace(i, std::move(*array));
  args[i] = Tensor::zeros(a.dtype, a.shape);
  return llvm::Error::success();
}

void Evaluator::fillSamples(int64_t first) {
  for (auto &[i, array] : arrays) {
    const Tensor &t = args[i];
    int64_t rowBytes = t.byteSize() / micro;
    auto *out = static_cast<char *>(t.data());
    for (int64_t k = 0; k < micro; ++k)
      array.copyRow(sampleIndex(evals, globalBatch, first + k, array.samples(),
                                DataOrder::Sequential, 0),
                    out + k * rowBytes);
  }
}
