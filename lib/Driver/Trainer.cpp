//===- Trainer.cpp - Compile a model + config and run training ------------===//
#include "ds/Driver/Trainer.h"
#include "ds/Config/Config.h"
#include "ds/Driver/Metrics.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Execution/JIT.h"
#include "ds/Import/Import.h"
#include "ds/InitAllDS.h"
#include "ds/Pipelines/Pipelines.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>

using namespace ::ds::driver;
using namespace mlir;
namespace nn = mlir::ds::nn;
using mlir::ds::exec::DType;
using mlir::ds::exec::Tensor;
namespace cfg = ::ds::config;
using llvm::createStringError;

namespace {

/// What ds-train must feed each @train_step argument.
struct ArgPlan {
  enum Kind { Param, State, Step, Batch } kind;
  std::string name; // parameter / batch name; state: "<param>.<kind>"
  DType dtype;
  llvm::SmallVector<int64_t> shape;
  nn::ParamAttr param; // Param only
};

llvm::Expected<OwningOpRef<ModuleOp>> loadModel(MLIRContext &ctx,
                                                const TrainOptions &options,
                                                const cfg::Config &config) {
  llvm::StringRef ext = llvm::sys::path::extension(options.modelPath);
  mlir::ds::importer::ImportOptions importOptions;
  importOptions.microBatch = config.trainMicroBatchSizePerGpu;
  importOptions.config = &config;
  if (ext == ".json")
    return mlir::ds::importer::importSpecFile(ctx, options.modelPath,
                                              importOptions);
  if (ext == ".pt")
    return mlir::ds::importer::importTorchScriptFile(ctx, options.modelPath,
                                                     importOptions);
  if (ext != ".mlir")
    return createStringError("%s: unknown model format '%s'; give a .json "
                             "model spec, a .mlir model contract or a "
                             "TorchScript .pt",
                             options.modelPath.c_str(), ext.str().c_str());
  std::string diag;
  llvm::raw_string_ostream diagOs(diag);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, diagOs);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(options.modelPath, sourceMgr, &ctx);
  if (!module)
    return createStringError(diag.empty() ? options.modelPath + ": cannot parse"
                                          : diag);
  return module;
}

DType dtypeOrF32(Type type) {
  return mlir::ds::exec::dtypeOf(getElementTypeOrSelf(type))
      .value_or(DType::F32);
}

llvm::Expected<std::vector<ArgPlan>> planArguments(func::FuncOp step) {
  std::vector<ArgPlan> plans;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    auto type = dyn_cast<RankedTensorType>(step.getArgument(i).getType());
    if (!type || !type.hasStaticShape())
      return createStringError(
          "@train_step argument #%u is not a statically shaped tensor", i);
    ArgPlan plan;
    plan.dtype = dtypeOrF32(type);
    plan.shape.assign(type.getShape().begin(), type.getShape().end());
    if (auto param =
            step.getArgAttrOfType<nn::ParamAttr>(i, nn::kParamAttrName)) {
      plan.kind = ArgPlan::Param;
      plan.name = param.getName().str();
      plan.param = param;
    } else if (auto state = step.getArgAttrOfType<DictionaryAttr>(
                   i, mlir::ds::kStateAttrName)) {
      plan.kind = ArgPlan::State;
      auto p = state.getAs<StringAttr>("param");
      auto k = state.getAs<StringAttr>("kind");
      plan.name = (p ? p.str() : "?") + "." + (k ? k.str() : "?");
    } else if (step.getArgAttr(i, mlir::ds::kStepAttrName)) {
      plan.kind = ArgPlan::Step;
      plan.name = "step";
    } else {
      plan.kind = ArgPlan::Batch;
      auto name = step.getArgAttrOfType<StringAttr>(
          i, mlir::ds::importer::kBatchAttrName);
      plan.name = name ? name.str() : ("arg" + std::to_string(i));
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

mlir::ds::exec::Tensor makeTensor(const ArgPlan &plan) {
  return Tensor::zeros(plan.dtype, plan.shape);
}

int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

InitKind initKindOf(nn::InitKind kind) {
  switch (kind) {
  case nn::InitKind::zeros:
    return InitKind::Zeros;
  case nn::InitKind::ones:
    return InitKind::Ones;
  case nn::InitKind::normal:
    return InitKind::Normal;
  case nn::InitKind::uniform:
    return InitKind::Uniform;
  }
  return InitKind::Zeros;
}

llvm::Error loadInitialWeights(llvm::StringRef path,
                               llvm::ArrayRef<ArgPlan> plans,
                               std::vector<Tensor> &values) {
  auto file = SafeTensorsFile::open(path);
  if (!file)
    return file.takeError();
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].kind != ArgPlan::Param)
      continue;
    const SafeTensorInfo *info = file->find(plans[i].name);
    if (!info)
      return createStringError(
          "%s: no tensor for parameter \"%s\"; the file must hold every "
          "parameter of the model by its qualified name",
          path.str().c_str(), plans[i].name.c_str());
    if (info->shape !=
        std::vector<int64_t>(plans[i].shape.begin(), plans[i].shape.end()))
      return createStringError(
          "%s: tensor \"%s\" has shape %s but the model's parameter is %s",
          path.str().c_str(), plans[i].name.c_str(),
          mlir::ds::exec::typeString(DType::F32, info->shape).c_str(),
          mlir::ds::exec::typeString(DType::F32, plans[i].shape).c_str());
    auto data = file->readF32(plans[i].name);
    if (!data)
      return data.takeError();
    std::memcpy(values[i].data(), data->data(), data->size() * sizeof(float));
  }
  return llvm::Error::success();
}

} // namespace

namespace ds::driver {
llvm::Error runTraining(const TrainOptions &options, llvm::raw_ostream &log) {
  using Clock = std::chrono::steady_clock;
  auto compileStart = Clock::now();

  auto config = cfg::loadConfig(options.configPath, {/*worldSize=*/1});
  if (!config)
    return config.takeError();
  if (options.steps < 1)
    return createStringError("--steps must be >= 1, got %lld",
                             (long long)options.steps);

  std::optional<TokenData> data;
  if (!options.synthetic) {
    if (options.dataPath.empty())
      return createStringError("no training data: give --data FILE (.txt "
                               "or .bin) or --synthetic");
    auto loaded = TokenData::load(options.dataPath);
    if (!loaded)
      return loaded.takeError();
    data = std::move(*loaded);
  }

  DialectRegistry registry;
  mlir::ds::exec::registerRunnerDependencies(registry);
  mlir::ds::registerAllDSDialects(registry);
  mlir::ds::importer::registerImportDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  auto module = loadModel(ctx, options, *config);
  if (!module)
    return module.takeError();
  auto dump = [&](llvm::StringRef stage, ModuleOp m) {
    if (options.dumpIRDir.empty())
      return;
    llvm::sys::fs::create_directories(options.dumpIRDir);
    std::error_code ec;
    llvm::raw_fd_ostream os(options.dumpIRDir + "/" + stage.str() + ".mlir",
                            ec);
    if (!ec)
      m.print(os);
  };
  dump("0-model", **module);

  // Model contract -> step contract, as the config asks.
  {
    std::string diag;
    llvm::raw_string_ostream diagOs(diag);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, diagOs);
    PassManager pm(&ctx);
    if (llvm::Error err = mlir::ds::buildTrainingPipeline(pm, *config))
      return err;
    if (failed(pm.run(**module)))
      return createStringError("building the training step failed:\n" + diag);
  }
  dump("1-step", **module);

  auto step = (*module)->lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return createStringError("the training pipeline produced no @train_step");
  auto plans = planArguments(step);
  if (!plans)
    return plans.takeError();
  int64_t gas = config->gradientAccumulationSteps;
  int64_t micro = config->trainMicroBatchSizePerGpu;
  int64_t globalBatch = config->trainBatchSize;
  int64_t seqLen = 0, modelVocab = 0;
  for (const ArgPlan &p : *plans) {
    if (p.kind != ArgPlan::Batch)
      continue;
    if (p.shape.size() < 2 || p.shape[0] != gas || p.shape[1] != micro)
      return createStringError(
          "batch argument \"%s\" has shape %s, but the config asks for "
          "gradient_accumulation_steps %lld x train_micro_batch_size_per_gpu "
          "%lld leading dims; import the model with the same micro-batch",
          p.name.c_str(), mlir::ds::exec::typeString(p.dtype, p.shape).c_str(),
          (long long)gas, (long long)micro);
    if (!options.synthetic && p.name != "input_ids" && p.name != "targets")
      return createStringError(
          "batch argument \"%s\": token data feeds only input_ids and "
          "targets; use --synthetic for this model",
          p.name.c_str());
    if (p.name == "input_ids" || p.name == "targets") {
      if (p.dtype != DType::I64 || p.shape.size() != 3)
        return createStringError("batch argument \"%s\" must be i64 "
                                 "[micro-batches, batch, seq]",
                                 p.name.c_str());
      seqLen = p.shape[2];
    }
  }
  for (const ArgPlan &p : *plans)
    if (p.kind == ArgPlan::Param && p.name == "wte.weight")
      modelVocab = p.shape[0];
  if (data && seqLen) {
    if (llvm::Error err = data->checkFits(
            seqLen, modelVocab ? modelVocab : data->vocab(), options.dataPath))
      return err;
  }
  if (options.synthetic && seqLen)
    data = TokenData::synthetic(std::max<int64_t>(1 << 16, 4 * seqLen),
                                modelVocab ? modelVocab : 256,
                                options.seed.value_or(0));

  uint64_t seed = options.seed.value_or(0);
  if (!options.seed)
    if (auto attr = (**module)->getAttrOfType<IntegerAttr>(
            mlir::ds::importer::kInitSeedAttrName))
      seed = attr.getInt();

  // Lower and JIT everything at once: the step is the hot path.
  mlir::ds::exec::RunnerOptions runnerOptions;
  // Only the step is called; @forward and @forward_backward stay uncompiled.
  runnerOptions.entryPoints = {"train_step"};
  runnerOptions.preLowering = [](OpPassManager &pm) {
    pm.addPass(mlir::ds::createLowerNNToLinalg());
    pm.addPass(mlir::ds::createLowerTrainToLinalg());
  };
  runnerOptions.onStage = [&](llvm::StringRef stage, ModuleOp m) {
    dump(stage == "pre" ? "2-linalg" : "3-llvm", m);
  };
  auto runner = mlir::ds::exec::Runner::create(**module, runnerOptions);
  if (!runner)
    return runner.takeError();
  double compileS =
      std::chrono::duration<double>(Clock::now() - compileStart).count();

  // Inputs, and a second set of parameter/state buffers the step writes
  // into; the two sets swap roles every step.
  std::vector<Tensor> inputs, next;
  for (const ArgPlan &p : *plans)
    inputs.push_back(makeTensor(p));
  int64_t numUpdated = 0;
  for (const ArgPlan &p : *plans)
    if (p.kind == ArgPlan::Param || p.kind == ArgPlan::State) {
      next.push_back(makeTensor(p));
      ++numUpdated;
    }
  for (size_t i = 0; i < plans->size(); ++i) {
    const ArgPlan &p = (*plans)[i];
    if (p.kind == ArgPlan::Param && options.initFrom.empty())
      initParameter(p.name, initKindOf(p.param.getInit()),
                    p.param.getStd().convertToDouble(), seed, 0,
                    product(p.shape), inputs[i].data<float>());
    if (p.kind == ArgPlan::Batch && p.dtype == DType::F32) {
      // Synthetic float batches (MLP): fixed per run, drawn once.
      initParameter(p.name, InitKind::Normal, 1.0, seed, 0, product(p.shape),
                    inputs[i].data<float>());
    }
  }
  if (!options.initFrom.empty())
    if (llvm::Error err = loadInitialWeights(options.initFrom, *plans, inputs))
      return err;
  Tensor loss = Tensor::zeros(DType::F32, {}),
         lr = Tensor::zeros(DType::F32, {}),
         gradNorm = Tensor::zeros(DType::F32, {});
  std::vector<Tensor> outputs(next);
  outputs.push_back(loss);
  outputs.push_back(lr);
  outputs.push_back(gradNorm);

  auto metrics = MetricsWriter::open(options.metricsPath);
  if (!metrics)
    return metrics.takeError();

  int64_t paramCount = 0;
  for (const ArgPlan &p : *plans)
    if (p.kind == ArgPlan::Param)
      paramCount += product(p.shape);
  if (!options.quiet)
    log << llvm::formatv("ds-train: {0} parameters, global batch {1} = "
                         "micro-batch {2} x accumulation {3} x data-parallel "
                         "{4}, seq {5}; compiled in {6:f1} s ({7} BLAS call "
                         "sites)\n",
                         paramCount, globalBatch, micro, gas, config->dpSize,
                         seqLen, compileS, (*runner)->blasCallSites());

  int64_t printEvery = std::max<int64_t>(1, config->stepsPerPrint);
  for (int64_t s = 0; s < options.steps; ++s) {
    auto stepStart = Clock::now();
    for (size_t i = 0; i < plans->size(); ++i) {
      const ArgPlan &p = (*plans)[i];
      if (p.kind == ArgPlan::Step) {
        *inputs[i].data<int64_t>() = s + 1;
      } else if (p.kind == ArgPlan::Batch && p.name == "input_ids") {
        auto tgt = llvm::find_if(*plans, [](const ArgPlan &q) {
          return q.kind == ArgPlan::Batch && q.name == "targets";
        });
        int64_t *in = inputs[i].data<int64_t>();
        int64_t *out = tgt != plans->end()
                           ? inputs[tgt - plans->begin()].data<int64_t>()
                           : nullptr;
        std::vector<int64_t> scratch;
        if (!out) {
          scratch.resize(product(p.shape));
          out = scratch.data();
        }
        for (int64_t m = 0; m < gas; ++m)
          data->fillBatch(s, globalBatch, m * micro, micro, seqLen,
                          options.order, seed, in + m * micro * seqLen,
                          out + m * micro * seqLen);
      }
    }
    if (llvm::Error err = (*runner)->invokeInto("train_step", inputs, outputs))
      return err;
    // The new parameters and state become the next step's inputs.
    for (size_t i = 0, u = 0; i < plans->size(); ++i)
      if ((*plans)[i].kind == ArgPlan::Param ||
          (*plans)[i].kind == ArgPlan::State) {
        std::swap(inputs[i], outputs[u]);
        ++u;
      }
    double stepMs =
        std::chrono::duration<double, std::milli>(Clock::now() - stepStart)
            .count();
    float lossV = *loss.data<float>(), lrV = *lr.data<float>(),
          normV = *gradNorm.data<float>();
    double tokensPerS = globalBatch * seqLen / (stepMs / 1000.0);
    if (!std::isfinite(lossV))
      return createStringError(
          "step %lld: the loss is %f; training diverged (lower the learning "
          "rate or enable gradient_clipping)",
          (long long)(s + 1), lossV);
    metrics->write({{"step", s + 1},
                    {"loss", double(lossV)},
                    {"lr", double(lrV)},
                    {"grad_norm", double(normV)},
                    {"tokens_per_s", tokensPerS},
                    {"step_ms", stepMs},
                    {"peak_rss_bytes", peakRssBytes()},
                    {"rank", int64_t(0)}});
    if (!options.quiet &&
        ((s + 1) % printEvery == 0 || s == 0 || s + 1 == options.steps))
      log << llvm::formatv("step {0,5}/{1}  loss {2:f4}  lr {3:e2}  "
                           "grad_norm {4:f3}  tokens/s {5,8:f0}  step {6:f1} "
                           "ms\n",
                           s + 1, options.steps, lossV, lrV, normV, tokensPerS,
                           stepMs);
  }

  if (!options.saveWeights.empty()) {
    std::vector<SafeTensorView> views;
    for (size_t i = 0; i < plans->size(); ++i)
      if ((*plans)[i].kind == ArgPlan::Param)
        views.push_back({(*plans)[i].name, "F32",
                         std::vector<int64_t>((*plans)[i].shape.begin(),
                                              (*plans)[i].shape.end()),
                         inputs[i].data()});
    if (llvm::Error err =
            writeSafeTensors(options.saveWeights, views,
                             {{"format", "pt"}, {"producer", "ds-train"}}))
      return err;
  }
  return llvm::Error::success();
}
} // namespace ds::driver
