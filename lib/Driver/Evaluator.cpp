//===- Evaluator.cpp - The eval loss every --eval-interval steps ----------===//
#include "ds/Driver/Evaluator.h"
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/StateStore.h"
#include "dsrt/dsrt.h"

#include <cstring>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

llvm::Expected<std::unique_ptr<Evaluator>>
Evaluator::open(const TrainOptions &options, const cfg::Config &config) {
  if (options.evalDataPath.empty())
    return nullptr;
  if (config.pipeline.stages > 1)
    return createStringError("--eval-data with a pipeline "
                             "(pipeline.stages %lld) is not supported yet; "
                             "evaluate the saved weights without one",
                             (long long)config.pipeline.stages);
  if (config.moe.enabled &&
      config.moe.evalCapacityFactor != config.moe.capacityFactor)
    return createStringError(
        "--eval-data with moe.eval_capacity_factor %g != capacity_factor "
        "%g is not supported yet: the expert region is built for the "
        "training capacity; set them equal to evaluate",
        config.moe.evalCapacityFactor, config.moe.capacityFactor);
  auto loaded = TokenData::load(options.evalDataPath);
  if (!loaded)
    return loaded.takeError();
  std::unique_ptr<Evaluator> eval(new Evaluator());
  eval->data = std::move(*loaded);
  eval->path = options.evalDataPath;
  eval->interval = options.evalInterval > 0
                       ? options.evalInterval
                       : std::max<int64_t>(1, config.stepsPerPrint);
  eval->micro = config.trainMicroBatchSizePerGpu;
  eval->gas = config.gradientAccumulationSteps;
  eval->globalBatch = config.trainBatchSize;
  eval->dpSize = config.dpSize;
  return eval;
}

llvm::Error Evaluator::plan(const StepManifest &manifest,
                            const DataFeeder &feeder, int programRank) {
  rank = programRank;
  if (manifest.evalArgs.empty())
    return createStringError("--eval-data: the training step was built "
                             "without an eval function (a ds-compile "
                             "artifact has none); run without --compiled "
                             "to evaluate");
  args.assign(manifest.evalArgs.size(), Tensor());
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
  if (!inputsAt || !targetsAt)
    return createStringError("--eval-data: the model's forward takes no "
                             "input_ids and targets to feed");
  int64_t modelVocab = 0;
  if (std::optional<size_t> wte = manifest.find(ArgSpec::Param, "wte.weight"))
    modelVocab = manifest.args[*wte].wholeShape()[0];
  else
    modelVocab = manifest.crossEntropyClasses;
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
    if (llvm::Error err = data.fillBatch(evals, globalBatch, first + m * micro,
                                         micro, sequence, DataOrder::Sequential,
                                         0, args[*inputsAt].data<int64_t>(),
                                         args[*targetsAt].data<int64_t>()))
      return std::move(err);
    if (llvm::Error err = step.evaluate(args, loss))
      return std::move(err);
    sum += *loss.data<float>();
  }
  ++evals;
  double mean = sum / double(gas);
  if (dpSize == 1)
    return mean;
  // Every rank's mean, in f64 (as bits), summed in rank order: the same
  // value on every rank and in every run.
  int64_t bits;
  std::memcpy(&bits, &mean, sizeof bits);
  std::vector<int64_t> all(dpSize);
  if (dsrt_all_gather(dsrt_comm_world(), &bits, all.data(), dpSize, DSRT_I64) !=
      0)
    return createStringError("averaging the eval loss: %s", dsrt_last_error());
  double total = 0;
  for (int64_t b : all) {
    double v;
    std::memcpy(&v, &b, sizeof v);
    total += v;
  }
  return total / double(dpSize);
}
