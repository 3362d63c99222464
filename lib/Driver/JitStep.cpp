//===- JitStep.cpp - Compile @train_step in memory with the JIT -----------===//
#include "ds/Driver/JitStep.h"
#include "ds/Conversion/Passes.h"
#include "ds/Driver/Artifact.h"
#include "ds/Driver/LoadModel.h"
#include "ds/Execution/JIT.h"
#include "ds/Execution/JitTarget.h"
#include "ds/Execution/ObjectCode.h"
#include "ds/Import/Import.h"
#include "ds/InitAllDS.h"
#include "ds/Pipelines/Pipelines.h"
#include "ds/Target/CudaToolkit.h"
#include "ds/Transforms/CommPrediction.h"
#include "ds/Transforms/MemoryPlan.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>

using namespace ::ds::driver;
using namespace mlir;
namespace nn = mlir::ds::nn;
namespace cfg = ::ds::config;
using llvm::createStringError;

namespace {

/// The passes that take the step contract down to the level ds-lower-to-llvm
/// starts from; every other lowering step lives in that pipeline.
void addStepLowering(OpPassManager &pm, bool stack,
                     const cfg::KernelsConfig &kernels) {
  // docs/architecture.md, "An entry point that does not grow with depth".
  // The layers, clipping and optimizer in one function first, so that the
  // step can take per-layer parameters and states stacked.
  if (stack) {
    pm.addPass(mlir::ds::createInlineGlue());
    pm.addPass(mlir::ds::createStackLayers());
    pm.addPass(mlir::ds::createStackArguments());
  }
  pm.addPass(mlir::ds::createOutlineLayers());
  mlir::ds::LowerNNToLinalgOptions nnToLinalg;
  nnToLinalg.attentionBlockSize = kernels.attentionBlockSize;
  nnToLinalg.attentionBlockThreshold = kernels.attentionBlockThreshold;
  pm.addPass(mlir::ds::createLowerNNToLinalg(nnToLinalg));
  pm.addPass(mlir::ds::createLowerTrainToLinalg());
  // The step's glue as one function (@forward_backward into @train_step):
  // no call of thousands of tensors to bufferize and lower.
  pm.addPass(mlir::ds::createInlineGlue());
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

StateInit stateInitOf(Attribute init) {
  StateInit out;
  if (!init)
    return out;
  if (auto f = dyn_cast<FloatAttr>(init)) {
    out.kind = StateInit::Float;
    out.floatValue = f.getValueAsDouble();
  } else if (auto v = dyn_cast<IntegerAttr>(init)) {
    out.kind = StateInit::Int;
    out.intValue = v.getInt();
  } else {
    out.kind = StateInit::Other;
  }
  return out;
}

/// The attributes of @train_step argument `i` as plain fields.
llvm::Expected<ArgSpec> argSpecOf(func::FuncOp step, unsigned i) {
  auto type = dyn_cast<RankedTensorType>(step.getArgument(i).getType());
  if (!type || !type.hasStaticShape())
    return createStringError(
        "@train_step argument #%u is not a statically shaped tensor", i);
  ArgSpec arg;
  arg.dtype =
      mlir::ds::exec::dtypeOf(type.getElementType()).value_or(DType::F32);
  arg.shape.assign(type.getShape().begin(), type.getShape().end());
  if (auto sharding = step.getArgAttrOfType<mlir::ds::dist::ShardingAttr>(
          i, mlir::ds::dist::DistDialect::kShardingAttrName))
    arg.fullShape.emplace(sharding.getShape().begin(),
                          sharding.getShape().end());
  if (auto experts = step.getArgAttrOfType<mlir::ds::dist::ShardingAttr>(
          i, mlir::ds::dist::DistDialect::kExpertsAttrName)) {
    arg.fullShape.emplace(experts.getShape().begin(), experts.getShape().end());
    arg.expertShards = experts.getShape()[0] / type.getDimSize(0);
  }
  if (auto cut = step.getArgAttrOfType<mlir::ds::dist::TensorShardAttr>(
          i, mlir::ds::dist::DistDialect::kTensorParallelAttrName)) {
    arg.tpDim = cut.getDim();
    arg.tpBlocks = cut.getBlocks();
    arg.tpShape.assign(cut.getShape().begin(), cut.getShape().end());
    // The piece's shape, not the argument's: ZeRO-3 holds a flat chunk of it.
    arg.tpSize = arg.tpShape[arg.tpDim] / arg.wholeShape()[arg.tpDim];
  }
  if (auto param =
          step.getArgAttrOfType<nn::ParamAttr>(i, nn::kParamAttrName)) {
    arg.kind = ArgSpec::Param;
    arg.name = param.getName().str();
    arg.init = initKindOf(param.getInit());
    arg.initStd = param.getStd().convertToDouble();
  } else if (auto state = step.getArgAttrOfType<DictionaryAttr>(
                 i, mlir::ds::kStateAttrName)) {
    arg.kind = ArgSpec::State;
    auto p = state.getAs<StringAttr>("param");
    auto k = state.getAs<StringAttr>("kind");
    // Step-wide state (the loss scaler's) is named by its kind alone.
    arg.name = p ? p.str() + "." + (k ? k.str() : "?") : (k ? k.str() : "?");
    arg.stateInit = stateInitOf(state.get("init"));
    arg.owner = p ? p.str() : "";
    arg.stateKind = k ? k.str() : "";
  } else if (step.getArgAttr(i, mlir::ds::kStepAttrName)) {
    arg.kind = ArgSpec::Step;
    arg.name = "step";
  } else {
    arg.kind = ArgSpec::Batch;
    auto name = step.getArgAttrOfType<StringAttr>(
        i, mlir::ds::importer::kBatchAttrName);
    arg.name = name ? name.str() : ("arg" + std::to_string(i));
  }
  return arg;
}

/// The arguments of @eval_step as plain fields.
llvm::Expected<std::vector<ArgSpec>> evalArgsOf(ModuleOp module) {
  std::vector<ArgSpec> args;
  auto eval = module.lookupSymbol<func::FuncOp>("eval_step");
  for (unsigned i = 0; eval && i < eval.getNumArguments(); ++i) {
    auto arg = argSpecOf(eval, i);
    if (!arg)
      return arg.takeError();
    args.push_back(std::move(*arg));
  }
  return args;
}

/// Everything the run side needs from the step module, before codegen.
llvm::Expected<StepManifest> manifestOf(ModuleOp module, func::FuncOp step,
                                        const cfg::Config &config) {
  StepManifest manifest;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    auto arg = argSpecOf(step, i);
    if (!arg)
      return arg.takeError();
    if (arg->kind == ArgSpec::Batch)
      manifest.batchArgs.push_back(i);
    if (arg->isModelState())
      manifest.results.push_back(
          {arg->name, int64_t(i), arg->dtype, arg->shape});
    manifest.args.push_back(std::move(*arg));
  }
  for (const char *name : {"loss", "lr", "grad_norm"})
    manifest.results.push_back({name, -1, DType::F32, {}});
  // Reports after grad_norm (ds-moe-routing-metrics): f32, named.
  for (unsigned r = manifest.results.size(); r < step.getNumResults(); ++r) {
    auto name =
        step.getResultAttrOfType<StringAttr>(r, mlir::ds::kMetricAttrName);
    if (!name)
      return llvm::createStringError(
          "@train_step result #%u follows grad_norm but has no %s name", r,
          mlir::ds::kMetricAttrName.data());
    auto type = cast<RankedTensorType>(step.getResultTypes()[r]);
    manifest.results.push_back(
        {name.str(), -1, DType::F32,
         std::vector<int64_t>(type.getShape().begin(), type.getShape().end())});
  }
  manifest.gradientAccumulationSteps = config.gradientAccumulationSteps;
  if (auto attr = module->getAttrOfType<IntegerAttr>(
          mlir::ds::importer::kInitSeedAttrName))
    manifest.initSeed = attr.getInt();
  module->walk([&](Operation *op) {
    if (auto ce = dyn_cast<nn::CrossEntropyOp>(op))
      manifest.crossEntropyClasses =
          cast<RankedTensorType>(ce.getLogits().getType()).getShape().back();
    else if (auto fused = dyn_cast<nn::LinearCrossEntropyOp>(op))
      manifest.crossEntropyClasses =
          cast<RankedTensorType>(fused.getWeight().getType()).getDimSize(0);
  });
  return manifest;
}

/// Rows of the smallest table a dsnn.embedding looks the model's token ids
/// up in, 0 if none does. The table's, not a parameter name's: Llama's is
/// model.embed_tokens.weight, a TorchScript model's any name.
int64_t tokenVocabOf(ModuleOp model) {
  int64_t vocab = 0;
  model->walk([&](nn::EmbeddingOp op) {
    auto ids = dyn_cast<BlockArgument>(op.getIndices());
    if (!ids || !ids.getOwner()->isEntryBlock())
      return;
    auto fn = dyn_cast<func::FuncOp>(ids.getOwner()->getParentOp());
    if (!fn ||
        !fn.getArgAttr(ids.getArgNumber(), mlir::ds::importer::kBatchAttrName))
      return;
    int64_t rows =
        cast<RankedTensorType>(op.getTable().getType()).getDimSize(0);
    vocab = vocab ? std::min(vocab, rows) : rows;
  });
  return vocab;
}

/// The step and the step-contract module it was compiled from, kept alive
/// for as long as the step runs.
class JitStepFunction : public StepFunction {
public:
  JitStepFunction(std::unique_ptr<MLIRContext> ctx,
                  OwningOpRef<ModuleOp> module,
                  std::unique_ptr<mlir::ds::exec::Runner> runner)
      : ctx(std::move(ctx)), module(std::move(module)),
        runner(std::move(runner)) {}
  llvm::Error run(llvm::ArrayRef<Tensor> args,
                  llvm::ArrayRef<Tensor> results) override {
    return runner->invokeInto("train_step", args, results);
  }
  llvm::Error evaluate(llvm::ArrayRef<Tensor> args,
                       const Tensor &loss) override {
    return runner->invokeInto("eval_step", args, {loss});
  }

private:
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<mlir::ds::exec::Runner> runner;
};

using DumpFn = std::function<void(llvm::StringRef stage, ModuleOp)>;

DumpFn dumpInto(const std::string &dir) {
  return [dir](llvm::StringRef stage, ModuleOp m) {
    if (dir.empty())
      return;
    llvm::sys::fs::create_directories(dir);
    std::error_code ec;
    llvm::raw_fd_ostream os(dir + "/" + stage.str() + ".mlir", ec);
    if (!ec)
      m.print(os);
  };
}

/// The step contract of a model + config, before code generation.
struct BuiltStep {
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  StepManifest manifest;
};

/// The pipeline stage `rank` runs: with tp x dp ranks per stage, ranks
/// stage * tp * dp onwards (DeepSpeed's PipeModelDataParallelTopology); 0
/// without a pipeline.
int64_t stageOfRank(const cfg::Config &config, int64_t rank) {
  return config.pipeline.stages > 1 ? rank / config.stageRanks() : 0;
}

llvm::Expected<BuiltStep> buildStep(const StepRequest &request,
                                    const DumpFn &dump, int64_t stage) {
  const cfg::Config &config = *request.config;
  // The cost model the schedule fits: read first, so a bad profile is
  // refused before anything is compiled.
  mlir::ds::CommCostModel commModel;
  if (!request.commProfile.empty()) {
    auto loaded = mlir::ds::CommCostModel::fromProfile(request.commProfile);
    if (!loaded)
      return createStringError("--comm-profile " +
                               llvm::toString(loaded.takeError()));
    commModel = *loaded;
  }
  DialectRegistry registry;
  mlir::ds::exec::registerRunnerDependencies(registry);
  mlir::ds::registerAllDSDialects(registry);
  mlir::ds::importer::registerImportDialects(registry);
  BuiltStep built;
  built.ctx = std::make_unique<MLIRContext>(registry);
  built.ctx->loadAllAvailableDialects();

  auto module =
      loadModel(*built.ctx, request.modelPath, config, request.seqLen);
  if (!module)
    return module.takeError();
  built.module = std::move(*module);
  dump("0-model", *built.module);
  // Before the pipeline split: a later stage no longer holds the embedding.
  int64_t tokenVocab = tokenVocabOf(*built.module);

  // Model contract -> step contract, as the config asks.
  {
    std::string diag;
    llvm::raw_string_ostream diagOs(diag);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, built.ctx.get(), diagOs);
    PassManager pm(built.ctx.get());
    if (llvm::Error err = mlir::ds::buildTrainingPipeline(
            pm, config, stage, request.eval, request.commProfile))
      return std::move(err);
    if (failed(pm.run(*built.module)))
      return createStringError("building the training step failed:\n" + diag);
  }
  dump("1-step", *built.module);

  // The step and the resolved config: what every rank must agree on.
  std::string text;
  llvm::raw_string_ostream os(text);
  built.module->print(os);
  os << cfg::toJson(config).dump() << request.target;
  uint64_t startupHash = llvm::xxh3_64bits(text);
  if (request.agreeOnStep)
    if (llvm::Error err = request.agreeOnStep(startupHash))
      return std::move(err);

  auto step = built.module->lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return createStringError("the training pipeline produced no @train_step");
  auto manifest = manifestOf(*built.module, step, config);
  if (!manifest)
    return manifest.takeError();
  manifest->startupHash = startupHash;
  manifest->target = request.target;
  manifest->tokenVocab = tokenVocab;
  {
    mlir::ds::CommPrediction comm = mlir::ds::predictComm(step, commModel);
    manifest->predictedCommMs = comm.seconds * 1e3;
    manifest->predictedExposedCommMs = comm.exposed * 1e3;
  }
  if (auto plan = mlir::ds::planPeakMemory(*built.module, "train_step"))
    manifest->plannedPeakBytes = plan->total();
  auto evalArgs = evalArgsOf(*built.module);
  if (!evalArgs)
    return evalArgs.takeError();
  manifest->evalArgs = std::move(*evalArgs);
  if (auto grid = (*built.module)
                      ->getAttrOfType<mlir::ds::dist::GridAttr>(
                          mlir::ds::dist::DistDialect::kGridAttrName)) {
    manifest->gridSizes.assign(grid.getSizes().begin(), grid.getSizes().end());
    manifest->gridAxes = grid.formatAxes();
  }
  // The step's own lowering: stacked arguments change how it is called,
  // which the run side must know before code generation (the state store
  // keeps stacked groups contiguous).
  {
    PassManager pm(built.ctx.get());
    addStepLowering(pm, stackLayers(config), config.kernels);
    if (failed(pm.run(*built.module)))
      return createStringError("lowering the training step failed");
    auto signature = mlir::ds::exec::signatureOf(step);
    if (!signature)
      return signature.takeError();
    if (llvm::Error err = setArgStacks(*manifest, *signature))
      return std::move(err);
  }
  if (request.beforeCodegen)
    if (llvm::Error err = request.beforeCodegen(*manifest))
      return std::move(err);
  built.manifest = std::move(*manifest);
  return built;
}

/// The CUDA toolkit's root for a GPU `target` ("" for the CPU): compiling
/// for a GPU needs ptxas, fatbinary and libdevice, not a GPU.
llvm::Expected<std::string> toolkitFor(llvm::StringRef target) {
  if (target == "cpu")
    return "";
  // The kernels as CPU loops: no device code, no toolkit.
  if (target.consume_back("-emulated")) {
    if (auto gpu = ::ds::target::parseGpuTarget(target); !gpu)
      return gpu.takeError();
    return "";
  }
  auto toolkit = ::ds::target::findCudaToolkit();
  if (!toolkit)
    return toolkit.takeError();
  if (auto gpu = ::ds::target::resolveGpuTarget(target, *toolkit); !gpu)
    return gpu.takeError();
  return toolkit->root;
}

/// How @train_step is lowered, for the JIT and for artifacts alike.
mlir::ds::exec::RunnerOptions stepRunnerOptions(const DumpFn &dump,
                                                bool eval = false,
                                                llvm::StringRef target = "cpu",
                                                llvm::StringRef toolkit = "",
                                                bool profile = false) {
  mlir::ds::exec::RunnerOptions options;
  options.target = target.str();
  options.profile = profile;
  options.cudaToolkit = toolkit.str();
  // Only the step (and @eval_step) is called; @forward and
  // @forward_backward stay uncompiled.
  options.entryPoints = {"train_step"};
  if (eval)
    options.entryPoints.push_back("eval_step");
  options.onStage = [dump](llvm::StringRef stage, ModuleOp m) {
    dump(stage == "pre" ? "2-linalg" : "3-llvm", m);
  };
  return options;
}

/// ZeRO-Offload on a GPU target would keep the optimizer state in host
/// memory and update it there; the GPU step keeps it in device memory.
llvm::Error checkOffload(const StepRequest &request) {
  const cfg::ZeroConfig &zero = request.config->zero;
  if (request.target == "cpu" ||
      (!zero.offloadOptimizer.enabled() && !zero.offloadParam.enabled()))
    return llvm::Error::success();
  return createStringError(
      "zero_optimization.%s with --target %s: the GPU step keeps every state "
      "in device memory, and ZeRO-Offload to host memory on a GPU is not "
      "supported yet; remove the offload or compile for the CPU",
      zero.offloadOptimizer.enabled() ? "offload_optimizer" : "offload_param",
      request.target.c_str());
}

} // namespace

namespace ds::driver {
llvm::Expected<CompiledStep> compileJitStep(const StepRequest &request) {
  DumpFn dump = dumpInto(request.dumpIRDir);
  // A missing toolkit is refused before the slow part.
  if (llvm::Error err = checkOffload(request))
    return std::move(err);
  auto toolkit = toolkitFor(request.target);
  if (!toolkit)
    return toolkit.takeError();
  auto built =
      buildStep(request, dump, stageOfRank(*request.config, request.rank));
  if (!built)
    return built.takeError();
  // Lower and JIT everything at once: the step is the hot path.
  auto runner = mlir::ds::exec::Runner::create(
      *built->module,
      stepRunnerOptions(dump, request.eval, request.target, *toolkit,
                        request.profile));
  if (!runner)
    return runner.takeError();
  built->manifest.blasCallSites = (*runner)->blasCallSites();
  if (const auto *signature = (*runner)->signature("train_step")) {
    built->manifest.workspaceBytes = signature->workspaceBytes;
    if (llvm::Error err = setArgStacks(built->manifest, *signature))
      return std::move(err);
  }
  built->manifest.arenaBytes = (*runner)->arenaBytes();

  CompiledStep compiled;
  compiled.manifest = std::move(built->manifest);
  compiled.function = std::make_unique<JitStepFunction>(
      std::move(built->ctx), std::move(built->module), std::move(*runner));
  return compiled;
}

llvm::Error compileArtifact(const ArtifactRequest &request,
                            llvm::raw_ostream &log) {
  auto target = mlir::ds::exec::compileTargetFor(request.cpuLevel);
  if (!target)
    return target.takeError();
  if (llvm::Error err = checkOffload(request.step))
    return err;
  auto toolkit = toolkitFor(request.step.target);
  if (!toolkit)
    return toolkit.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(request.dir))
    return createStringError("%s: cannot create: %s", request.dir.c_str(),
                             ec.message().c_str());
  auto modelHash = hashFile(request.step.modelPath);
  if (!modelHash)
    return modelHash.takeError();
  if (std::error_code ec = llvm::sys::fs::copy_file(
          request.configPath, request.dir + "/ds_config.json"))
    return createStringError("%s: cannot copy into %s: %s",
                             request.configPath.c_str(), request.dir.c_str(),
                             ec.message().c_str());
  // One program per pipeline stage; every rank of a stage's data-parallel
  // group runs the same one.
  const cfg::Config &config = *request.step.config;
  int64_t stages = config.pipeline.stages;
  std::vector<ArtifactProgram> programs(stages);
  mlir::ds::exec::ObjectCodeTimes times;
  std::mutex timesMutex;
  // Each stage builds in a context of its own: the stages compile in
  // parallel, one per core (a 70B-shaped step's 8 stages spend ~9 s each in
  // LLVM).
  auto compileStage = [&](int64_t stage) -> llvm::Error {
    std::string irDir = request.writeIR ? request.dir + "/ir" : "";
    if (stages > 1 && !irDir.empty())
      irDir += "/stage" + std::to_string(stage);
    DumpFn dump = dumpInto(irDir);
    auto built = buildStep(request.step, dump, stage);
    if (!built)
      return built.takeError();
    ArtifactProgram program;
    program.object = stages > 1
                         ? "train_step.stage" + std::to_string(stage) + ".so"
                         : "train_step.so";
    for (int64_t r = 0; r < request.step.worldSize; ++r)
      if (stageOfRank(config, r) == stage)
        program.ranks.push_back(r);
    mlir::ds::exec::ObjectCodeTimes stageTimes;
    const bool eval = request.step.eval;
    auto lowered = mlir::ds::exec::compileSharedObject(
        *built->module,
        stepRunnerOptions(dump, eval, request.step.target, *toolkit,
                          request.step.profile),
        *target,
        request.dir + "/" + program.object, &stageTimes);
    if (!lowered)
      return lowered.takeError();
    if (lowered->functions.size() != (eval ? 2 : 1))
      return createStringError("the lowered step has %zu entry points, not %d",
                               lowered->functions.size(), eval ? 2 : 1);
    for (mlir::ds::exec::FunctionSignature &fn : lowered->functions)
      if (fn.name == "eval_step")
        program.evalSignature = std::move(fn);
      else
        program.signature = std::move(fn);
    {
      std::lock_guard<std::mutex> lock(timesMutex);
      times.mlirSeconds += stageTimes.mlirSeconds;
      times.llvmSeconds += stageTimes.llvmSeconds;
      times.linkSeconds += stageTimes.linkSeconds;
    }
    program.step = std::move(built->manifest);
    program.step.blasCallSites = lowered->blasCallSites;
    program.step.workspaceBytes = program.signature.workspaceBytes;
    program.step.arenaBytes = lowered->arenaBytes;
    if (llvm::Error err = setArgStacks(program.step, program.signature))
      return err;
    programs[stage] = std::move(program);
    return llvm::Error::success();
  };
  std::vector<std::optional<llvm::Error>> errors(stages);
  if (stages == 1) {
    errors[0].emplace(compileStage(0));
  } else {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (int64_t stage = 0; stage < stages; ++stage)
      pool.async([&, stage] { errors[stage].emplace(compileStage(stage)); });
    pool.wait();
  }
  // The first stage's error; the others' are dropped.
  llvm::Error first = llvm::Error::success();
  for (std::optional<llvm::Error> &err : errors)
    if (*err) {
      if (first)
        llvm::consumeError(std::move(*err));
      else
        first = std::move(*err);
    }
  if (first)
    return first;

  ArtifactManifest manifest;
  manifest.dsVersion = dsVersion().str();
  manifest.worldSize = request.step.worldSize;
  manifest.cpuLevel = target->level;
  manifest.cpuName = target->cpu;
  manifest.cpuFeatures = target->features;
  manifest.modelPath = request.step.modelPath;
  manifest.modelHash = *modelHash;
  if (!request.step.commProfile.empty()) {
    auto profileHash = hashFile(request.step.commProfile);
    if (!profileHash)
      return profileHash.takeError();
    manifest.commProfilePath = request.step.commProfile;
    manifest.commProfileHash = *profileHash;
  }
  manifest.config = cfg::toJson(*request.step.config);
  manifest.programs = std::move(programs);
  if (llvm::Error err = writeArtifactManifest(manifest, request.dir))
    return err;
  if (!request.quiet) {
    // The largest rank's: what the machines must hold.
    int64_t peak = 0, workspace = 0;
    for (const ArtifactProgram &program : manifest.programs) {
      peak = std::max(peak, program.step.plannedPeakBytes);
      workspace = std::max(workspace, program.step.arenaBytes);
    }
    const double gib = double(1 << 30);
    log << llvm::format(
        "ds-compile: %s: %zu program(s)%s for %lld rank(s), "
        "CPU %s%s; MLIR %.1f s, LLVM %.1f s, link %.2f s; "
        "planned peak %.2f GiB per rank (workspace %.2f "
        "GiB, allocated at load)\n",
        request.dir.c_str(), manifest.programs.size(),
        request.step.eval ? " with @eval_step" : "",
        (long long)manifest.worldSize, manifest.cpuLevel.c_str(),
        request.step.target == "cpu" ? ""
                                     : (", GPU " + request.step.target).c_str(),
        times.mlirSeconds, times.llvmSeconds, times.linkSeconds, peak / gib,
        workspace / gib);
  }
  return llvm::Error::success();
}

bool stackLayers(const cfg::Config &config) {
  if (const char *forced = std::getenv("DS_STACK_LAYERS")) {
    if (std::string_view(forced) == "1")
      return true;
    if (std::string_view(forced) == "0")
      return false;
  }
  // Where ds-stack-arguments takes every per-layer value stacked: one rank
  // updating whole parameters with Adam, no loss scaler, one micro-batch.
  // Elsewhere a stacked loop would still read one argument per layer and
  // parameter, which compiles slower than the unrolled layers.
  bool adam = config.optimizer.type == cfg::OptimizerType::Adam ||
              config.optimizer.type == cfg::OptimizerType::AdamW;
  return config.worldSize == 1 && config.zero.stage == 0 &&
         config.pipeline.stages <= 1 && !config.moe.enabled &&
         config.gradientAccumulationSteps == 1 && !config.fp16.enabled &&
         !config.bf16.enabled && adam;
}

} // namespace ds::driver
