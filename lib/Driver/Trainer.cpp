//===- Trainer.cpp - Compile a model + config and run training ------------===//
#include "ds/Driver/Trainer.h"
#include "ds/Config/Config.h"
#include "ds/Driver/Checkpoint.h"
#include "ds/Driver/Metrics.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/Random.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Execution/JIT.h"
#include "ds/Import/Import.h"
#include "ds/InitAllDS.h"
#include "ds/Pipelines/Pipelines.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsrt/dsrt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cstring>
#include <thread>

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
  Attribute init;      // State: its first value (zeros when absent)
  std::string owner;   // State: the parameter it belongs to ("" if none)
  std::string stateKind;
  /// Param/State split over the dp group: the whole tensor's shape (the
  /// argument itself is this rank's flat, zero-padded chunk).
  std::optional<llvm::SmallVector<int64_t>> fullShape;
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
    if (auto sharding = step.getArgAttrOfType<mlir::ds::dist::ShardingAttr>(
            i, mlir::ds::dist::DistDialect::kShardingAttrName))
      plan.fullShape.emplace(sharding.getShape().begin(),
                             sharding.getShape().end());
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
      // Step-wide state (the loss scaler's) is named by its kind alone.
      plan.name = p ? p.str() + "." + (k ? k.str() : "?") : (k ? k.str() : "?");
      plan.init = state.get("init");
      plan.owner = p ? p.str() : "";
      plan.stateKind = k ? k.str() : "";
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

/// The elements [first, first + count) of this rank's chunk of a tensor of
/// `numel` elements split in chunks of `chunk` (the rest is padding).
struct ChunkRange {
  int64_t first = 0, count = 0;
};
ChunkRange chunkRange(int64_t numel, int64_t chunk, int rank) {
  int64_t first = std::min<int64_t>(numel, rank * chunk);
  return {first, std::min<int64_t>(chunk, numel - first)};
}

/// Rounds f32 values to the nearest even 16-bit float of `dtype`, as the
/// step's own casts (arith.truncf) do; f32 is copied.
void storeAs(DType dtype, const float *src, int64_t n, void *dst) {
  if (dtype != DType::BF16 && dtype != DType::F16) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  auto *out = static_cast<uint16_t *>(dst);
  for (int64_t i = 0; i < n; ++i)
    out[i] = dtype == DType::BF16 ? floatToBF16(src[i]) : floatToF16(src[i]);
}

/// The f32 master copy of parameter plan `param` (mixed precision with
/// ZeRO-1/2 keeps the parameter in 16 bits), if the step has one.
std::optional<size_t> masterOf(llvm::ArrayRef<ArgPlan> plans,
                               const ArgPlan &param) {
  for (size_t i = 0; i < plans.size(); ++i)
    if (plans[i].kind == ArgPlan::State && plans[i].stateKind == "master" &&
        plans[i].owner == param.name)
      return i;
  return std::nullopt;
}

/// The parameter plan state plan `state` belongs to.
const ArgPlan *ownerOf(llvm::ArrayRef<ArgPlan> plans, const ArgPlan &state) {
  for (const ArgPlan &p : plans)
    if (p.kind == ArgPlan::Param && p.name == state.owner)
      return &p;
  return nullptr;
}

llvm::Error loadInitialWeights(llvm::StringRef path,
                               llvm::ArrayRef<ArgPlan> plans, int rank,
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
    llvm::ArrayRef<int64_t> shape =
        plans[i].fullShape ? *plans[i].fullShape : plans[i].shape;
    if (info->shape != std::vector<int64_t>(shape.begin(), shape.end()))
      return createStringError(
          "%s: tensor \"%s\" has shape %s but the model's parameter is %s",
          path.str().c_str(), plans[i].name.c_str(),
          mlir::ds::exec::typeString(DType::F32, info->shape).c_str(),
          mlir::ds::exec::typeString(DType::F32, shape).c_str());
    auto data = file->readF32(plans[i].name);
    if (!data)
      return data.takeError();
    ChunkRange r = plans[i].fullShape
                       ? chunkRange(data->size(), plans[i].shape[0], rank)
                       : ChunkRange{0, int64_t(data->size())};
    storeAs(plans[i].dtype, data->data() + r.first, r.count, values[i].data());
    // A 16-bit parameter's f32 master copy: this rank's chunk.
    if (std::optional<size_t> m = masterOf(plans, plans[i])) {
      ChunkRange c = chunkRange(data->size(), plans[*m].shape[0], rank);
      std::memcpy(values[*m].data(), data->data() + c.first,
                  c.count * sizeof(float));
    }
  }
  return llvm::Error::success();
}

//===- Checkpoint hooks (the format and protocol live in Checkpoint.cpp) --===//

const char *ckptDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I1:
    return "BOOL";
  case DType::I8:
    return "I8";
  case DType::I16:
    return "I16";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

/// Every parameter and optimizer-state argument, as its plan says, over
/// the buffers that hold its current value.
std::vector<CkptTensor> checkpointTensors(llvm::ArrayRef<ArgPlan> plans,
                                          llvm::ArrayRef<Tensor> values) {
  std::vector<CkptTensor> tensors;
  for (size_t i = 0; i < plans.size(); ++i) {
    const ArgPlan &p = plans[i];
    if (p.kind != ArgPlan::Param && p.kind != ArgPlan::State)
      continue;
    CkptTensor t;
    t.name = p.name;
    t.kind = p.kind == ArgPlan::Param ? "param" : "state";
    t.dtype = ckptDType(p.dtype);
    llvm::ArrayRef<int64_t> shape = p.fullShape ? *p.fullShape : p.shape;
    t.shape.assign(shape.begin(), shape.end());
    if (p.fullShape)
      t.chunk = p.shape[0];
    t.data = values[i].data();
    tensors.push_back(std::move(t));
  }
  return tensors;
}

/// This rank's part of every parameter and optimizer state from `ckpt`,
/// whatever world size and ZeRO stage wrote it: the slices the index says
/// hold the elements this rank needs are read and checksummed.
llvm::Expected<std::vector<std::vector<char>>>
readCheckpointState(const CheckpointReader &ckpt, llvm::ArrayRef<ArgPlan> plans,
                    int rank) {
  std::vector<std::vector<char>> values(plans.size());
  std::string where = (ckpt.tagDir()).str();
  for (size_t i = 0; i < plans.size(); ++i) {
    const ArgPlan &p = plans[i];
    if (p.kind != ArgPlan::Param && p.kind != ArgPlan::State)
      continue;
    const CkptTensorInfo *t = ckpt.find(p.name);
    // Mixed precision keeps a parameter in f32, or (ZeRO-1/2) in 16 bits
    // next to an f32 master copy: either layout continues the other. The
    // f32 values are the truth; a 16-bit parameter is their rounding.
    llvm::ArrayRef<int64_t> wanted = p.fullShape ? *p.fullShape : p.shape;
    const CkptTensorInfo *f32 = nullptr;
    if (p.kind == ArgPlan::Param && t && t->dtype != ckptDType(p.dtype)) {
      f32 = ckpt.find(p.name + ".master");
      if (!f32 && t->dtype == "F32")
        f32 = t;
    }
    if (p.kind == ArgPlan::State && p.stateKind == "master" && !t)
      f32 = ckpt.find(p.owner);
    if (f32 && f32->dtype == "F32" &&
        f32->shape == std::vector<int64_t>(wanted.begin(), wanted.end())) {
      ChunkRange r = p.fullShape ? chunkRange(product(wanted), p.shape[0], rank)
                                 : ChunkRange{0, product(wanted)};
      std::vector<float> wide(r.count);
      if (llvm::Error err = ckpt.read(*f32, r.first, r.count, wide.data()))
        return err;
      values[i].assign(product(p.shape) * mlir::ds::exec::dtypeBytes(p.dtype),
                       0);
      storeAs(p.dtype, wide.data(), r.count, values[i].data());
      continue;
    }
    if (!t)
      return createStringError(
          "%s: no tensor \"%s\", which this run's training step needs (the "
          "checkpoint was saved with another model, optimizer or precision); "
          "to start from its weights only, export them with `ds-ckpt export` "
          "and pass --init-from",
          where.c_str(), p.name.c_str());
    llvm::ArrayRef<int64_t> shape = p.fullShape ? *p.fullShape : p.shape;
    if (t->shape != std::vector<int64_t>(shape.begin(), shape.end()) ||
        t->dtype != ckptDType(p.dtype)) {
      auto str = [](llvm::StringRef dtype, llvm::ArrayRef<int64_t> dims) {
        std::string out = dtype.str() + " [";
        for (size_t d = 0; d < dims.size(); ++d)
          out += (d ? ", " : "") + std::to_string(dims[d]);
        return out + "]";
      };
      return createStringError(
          "%s: tensor \"%s\" is %s in the checkpoint but %s in this run",
          where.c_str(), p.name.c_str(), str(t->dtype, t->shape).c_str(),
          str(ckptDType(p.dtype), shape).c_str());
    }
    ChunkRange r = p.fullShape ? chunkRange(product(shape), p.shape[0], rank)
                               : ChunkRange{0, product(shape)};
    values[i].assign(product(p.shape) * mlir::ds::exec::dtypeBytes(p.dtype), 0);
    if (llvm::Error err = ckpt.read(*t, r.first, r.count, values[i].data()))
      return err;
  }
  return values;
}

std::string modelHash(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return "";
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx",
           (unsigned long long)llvm::xxh3_64bits((*buf)->getBuffer()));
  return hex;
}

/// Opens --load's checkpoint (checking it can continue this run) and
/// --save's directory.
llvm::Error openCheckpoints(const TrainOptions &options,
                            const cfg::Config &config, int worldSize, int rank,
                            std::optional<uint64_t> &seedOption,
                            std::optional<CheckpointReader> &resume,
                            std::unique_ptr<CheckpointSaver> &saver) {
  if (options.saveInterval < 0)
    return createStringError("--save-interval must be >= 0, got %lld",
                             (long long)options.saveInterval);
  if (!options.saveDir.empty()) {
    auto created = CheckpointSaver::create(
        options.saveDir, /*async=*/!options.saveSync, rank, worldSize);
    if (!created)
      return created.takeError();
    saver = std::move(*created);
  }
  if (options.loadDir.empty()) {
    if (!options.loadTag.empty())
      return createStringError("--tag needs --load DIR");
    if (saver)
      return saver->checkPlannedSaves(0, options.steps, options.saveInterval);
    return llvm::Error::success();
  }
  if (!options.initFrom.empty())
    return createStringError("give --load (the whole training state) or "
                             "--init-from (weights only), not both");
  auto ckpt = CheckpointReader::open(options.loadDir, options.loadTag);
  if (!ckpt)
    return ckpt.takeError();
  const CkptRunInfo &run = ckpt->run();
  std::string where = ckpt->tagDir().str();
  if (options.steps <= run.step)
    return createStringError("%s is at step %lld; --steps %lld leaves "
                             "nothing to run (--steps is the step the "
                             "continued run ends at)",
                             where.c_str(), (long long)run.step,
                             (long long)options.steps);
  if (run.globalBatch != config.trainBatchSize)
    return createStringError(
        "%s: saved with train_batch_size %lld, this config has %lld; the "
        "data position is counted in global batches, keep it the same "
        "(micro-batch, accumulation and world size may change)",
        where.c_str(), (long long)run.globalBatch,
        (long long)config.trainBatchSize);
  std::string order =
      options.order == DataOrder::Shuffled ? "shuffled" : "sequential";
  if (run.dataOrder != order)
    return createStringError("%s: saved with --data-order %s, this run "
                             "uses %s; give --data-order %s",
                             where.c_str(), run.dataOrder.c_str(),
                             order.c_str(), run.dataOrder.c_str());
  if (!seedOption)
    seedOption = run.seedOption;
  resume.emplace(std::move(*ckpt));
  if (saver)
    return saver->checkPlannedSaves(run.step, options.steps,
                                    options.saveInterval);
  return llvm::Error::success();
}

} // namespace

namespace ds::driver {
llvm::Error runTraining(const TrainOptions &options, llvm::raw_ostream &log) {
  using Clock = std::chrono::steady_clock;
  auto compileStart = Clock::now();

  // One process per rank. Communication comes first: the world size
  // resolves the config's batch triangle.
  if (dsrt_comm_init(options.backend.empty() ? nullptr
                                             : options.backend.c_str()) != 0)
    return createStringError("cannot start communication: %s",
                             dsrt_last_error());
  dsrt_comm_set_deterministic(options.deterministic);
  dsrt_comm *world = dsrt_comm_world();
  const int rank = dsrt_comm_rank(world), worldSize = dsrt_comm_size(world);
  const bool lead = rank == 0;
  // Ranks sharing a machine share its cores: unless the user pinned the
  // thread count, give each local rank its share (oversubscribed BLAS
  // threads halve the speed of every rank).
  if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS"))
    if (const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
      int ranksHere = std::max(1, atoi(local));
      unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      if (ranksHere > 1)
        dsrt_threads_set(std::max(1, int(cores) / ranksHere));
    }

  auto config = cfg::loadConfig(options.configPath, {worldSize});
  if (!config)
    return config.takeError();
  if (options.steps < 1)
    return createStringError("--steps must be >= 1, got %lld",
                             (long long)options.steps);

  // --load: the checkpoint's seed and data position apply before anything
  // draws from them; --save: a bad directory fails before the compile.
  std::optional<uint64_t> seedOption = options.seed;
  std::optional<CheckpointReader> resume;
  std::unique_ptr<CheckpointSaver> saver;
  if (llvm::Error err = openCheckpoints(options, *config, worldSize, rank,
                                        seedOption, resume, saver))
    return err;

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

  // Every rank must run the same program: compare a hash of the step and
  // the resolved config before anything waits on anything else.
  if (worldSize > 1) {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*module)->print(os);
    os << cfg::toJson(*config).dump();
    int64_t mine = int64_t(llvm::xxh3_64bits(text));
    std::vector<int64_t> all(worldSize);
    if (dsrt_all_gather(world, &mine, all.data(), worldSize, DSRT_I64) != 0)
      return createStringError("start-up check: %s", dsrt_last_error());
    for (int r = 0; r < worldSize; ++r)
      if (all[r] != mine)
        return createStringError(
            "rank %d compiled a different training step than rank %d: the "
            "model, the config or the ds build differ between ranks; give "
            "every rank the same files and binaries",
            r, rank);
  }

  auto step = (*module)->lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return createStringError("the training pipeline produced no @train_step");
  auto plans = planArguments(step);
  if (!plans)
    return plans.takeError();
  int64_t gas = config->gradientAccumulationSteps;
  int64_t micro = config->trainMicroBatchSizePerGpu;
  int64_t globalBatch = config->trainBatchSize;
  int64_t seqLen = 0, modelVocab = 0, classes = 0;
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
    // A classifier's targets: one class per sample, [micro-batches, batch].
    bool classTargets =
        p.name == "targets" && p.dtype == DType::I64 && p.shape.size() == 2 &&
        llvm::none_of(*plans, [](const ArgPlan &q) {
          return q.kind == ArgPlan::Batch && q.name == "input_ids";
        });
    if (classTargets)
      (*module)->walk([&](nn::CrossEntropyOp op) {
        classes =
            cast<RankedTensorType>(op.getLogits().getType()).getShape().back();
      });
    if (classTargets && !options.synthetic)
      return createStringError(
          "batch argument \"targets\" holds one class per sample, which "
          "token data does not give; train this model with --synthetic");
    if ((p.name == "input_ids" || p.name == "targets") && !classTargets) {
      if (p.dtype != DType::I64 || p.shape.size() != 3)
        return createStringError("batch argument \"%s\" must be i64 "
                                 "[micro-batches, batch, seq]",
                                 p.name.c_str());
      seqLen = p.shape[2];
    }
  }
  for (const ArgPlan &p : *plans)
    if (p.kind == ArgPlan::Param && p.name == "wte.weight")
      modelVocab = p.fullShape ? (*p.fullShape)[0] : p.shape[0];
  if (data && seqLen) {
    if (llvm::Error err = data->checkFits(
            seqLen, modelVocab ? modelVocab : data->vocab(), options.dataPath))
      return err;
  }
  if (options.synthetic && seqLen)
    data = TokenData::synthetic(std::max<int64_t>(1 << 16, 4 * seqLen),
                                modelVocab ? modelVocab : 256,
                                seedOption.value_or(0));

  uint64_t seed = seedOption.value_or(0);
  if (!seedOption)
    if (auto attr = (**module)->getAttrOfType<IntegerAttr>(
            mlir::ds::importer::kInitSeedAttrName))
      seed = attr.getInt();
  std::vector<std::vector<char>> restored;
  if (resume) {
    if (seed != resume->run().seed)
      return createStringError(
          "%s: saved by a run with seed %llu, but this run's seed is %llu; "
          "the sample order and dropout masks would differ (drop --seed or "
          "give the checkpoint's)",
          resume->tagDir().str().c_str(),
          (unsigned long long)resume->run().seed, (unsigned long long)seed);
    auto values = readCheckpointState(*resume, *plans, rank);
    // Ranks read different slices: all must agree before the JIT, or the
    // ones that succeeded would wait on the others forever.
    int32_t failed = values ? 0 : 1;
    if (worldSize > 1 &&
        dsrt_all_reduce(world, &failed, &failed, 1, DSRT_I32, DSRT_MAX) != 0)
      return createStringError("--load: %s", dsrt_last_error());
    if (!values)
      return values.takeError();
    if (failed)
      return createStringError("--load %s: another rank could not read its "
                               "part of the checkpoint (its error says why)",
                               options.loadDir.c_str());
    restored = std::move(*values);
  }

  // Lower and JIT everything at once: the step is the hot path.
  mlir::ds::exec::RunnerOptions runnerOptions;
  // Only the step is called; @forward and @forward_backward stay uncompiled.
  runnerOptions.entryPoints = {"train_step"};
  runnerOptions.preLowering = [](OpPassManager &pm) {
    pm.addPass(mlir::ds::createOutlineLayers());
    pm.addPass(mlir::ds::createLowerNNToLinalg());
    pm.addPass(mlir::ds::createLowerTrainToLinalg());
  };
  runnerOptions.onStage = [&](llvm::StringRef stage, ModuleOp m) {
    dump(stage == "pre" ? "2-linalg" : "3-llvm", m);
  };
  auto runner = mlir::ds::exec::Runner::create(**module, runnerOptions);
  if (!runner)
    return runner.takeError();
  if (auto grid = (**module)->getAttrOfType<mlir::ds::dist::GridAttr>(
          mlir::ds::dist::DistDialect::kGridAttrName)) {
    llvm::SmallVector<int64_t> sizes(grid.getSizes());
    if (dsrt_comm_set_grid(int(sizes.size()), sizes.data()) != 0)
      return createStringError("device grid %s over %d ranks: %s",
                               grid.formatAxes().c_str(), worldSize,
                               dsrt_last_error());
  }
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
    if (p.kind == ArgPlan::Param && options.initFrom.empty()) {
      // The same values as one rank would draw; a shard draws its slice.
      ChunkRange r = p.fullShape
                         ? chunkRange(product(*p.fullShape), p.shape[0], rank)
                         : ChunkRange{0, product(p.shape)};
      std::vector<float> drawn(p.dtype == DType::F32 ? 0 : r.count);
      float *into = drawn.empty() ? inputs[i].data<float>() : drawn.data();
      initParameter(p.name, initKindOf(p.param.getInit()),
                    p.param.getStd().convertToDouble(), seed, r.first, r.count,
                    into);
      if (!drawn.empty())
        storeAs(p.dtype, drawn.data(), r.count, inputs[i].data());
    }
    if (p.kind == ArgPlan::State && p.stateKind == "master" &&
        options.initFrom.empty()) {
      // The f32 values the 16-bit parameter was rounded from.
      const ArgPlan *owner = ownerOf(*plans, p);
      if (!owner || !p.fullShape)
        return createStringError("master state \"%s\" has no parameter "
                                 "\"%s\" or no sharding",
                                 p.name.c_str(), p.owner.c_str());
      ChunkRange r = chunkRange(product(*p.fullShape), p.shape[0], rank);
      initParameter(owner->name, initKindOf(owner->param.getInit()),
                    owner->param.getStd().convertToDouble(), seed, r.first,
                    r.count, inputs[i].data<float>());
    }
    if (p.kind == ArgPlan::State && p.init) {
      int64_t n = product(p.shape);
      if (auto f = dyn_cast<FloatAttr>(p.init); f && p.dtype == DType::F32)
        std::fill_n(inputs[i].data<float>(), n, float(f.getValueAsDouble()));
      else if (auto v = dyn_cast<IntegerAttr>(p.init);
               v && p.dtype == DType::I64)
        std::fill_n(inputs[i].data<int64_t>(), n, v.getInt());
      else
        return createStringError("state \"%s\": its init value does not "
                                 "match its element type",
                                 p.name.c_str());
    }
    if (p.kind == ArgPlan::Batch && p.dtype == DType::F32) {
      // Synthetic float batches (MLP): fixed per run, drawn once.
      initParameter(p.name, InitKind::Normal, 1.0, seed, 0, product(p.shape),
                    inputs[i].data<float>());
    }
    if (p.kind == ArgPlan::Batch && p.name == "targets" &&
        p.shape.size() == 2 && options.synthetic) {
      // Synthetic class labels, fixed per run like the inputs: uniform over
      // the classes of the model's cross-entropy.
      if (classes < 1)
        return createStringError("batch argument \"targets\" [batch] needs "
                                 "a dsnn.cross_entropy in the model to give "
                                 "its number of classes");
      int64_t *labels = inputs[i].data<int64_t>();
      for (int64_t k = 0, n = product(p.shape); k < n; ++k)
        labels[k] =
            int64_t(randomBits(seed, streamOf(p.name), k) % uint64_t(classes));
    }
  }
  if (!options.initFrom.empty())
    if (llvm::Error err =
            loadInitialWeights(options.initFrom, *plans, rank, inputs))
      return err;
  for (size_t i = 0; i < restored.size(); ++i)
    if (!restored[i].empty())
      std::memcpy(inputs[i].data(), restored[i].data(), restored[i].size());
  Tensor loss = Tensor::zeros(DType::F32, {}),
         lr = Tensor::zeros(DType::F32, {}),
         gradNorm = Tensor::zeros(DType::F32, {});
  std::vector<Tensor> outputs(next);
  outputs.push_back(loss);
  outputs.push_back(lr);
  outputs.push_back(gradNorm);

  // Rank 0 writes the metrics file it was given; rank r > 0 writes
  // NAME.rank<r>.EXT next to it.
  std::string metricsPath = options.metricsPath;
  if (!metricsPath.empty() && rank > 0) {
    llvm::SmallString<256> path(metricsPath);
    std::string ext = llvm::sys::path::extension(path).str();
    llvm::sys::path::replace_extension(path, "");
    metricsPath = (path + ".rank" + llvm::Twine(rank) + ext).str();
  }
  auto metrics = MetricsWriter::open(metricsPath);
  if (!metrics)
    return metrics.takeError();

  // Model states resident on this rank between steps: parameters and
  // optimizer state as the step holds them (whole or chunks), and the
  // gradient as the step boundary leaves it: whole after an all-reduce
  // (ZeRO 0/1), this rank's chunk after a reduce-scatter (ZeRO 2/3).
  int64_t paramCount = 0, modelStateBytes = 0;
  for (const ArgPlan &p : *plans) {
    if (p.kind != ArgPlan::Param && p.kind != ArgPlan::State)
      continue;
    int64_t local = product(p.shape) * mlir::ds::exec::dtypeBytes(p.dtype);
    modelStateBytes += local;
    if (p.kind != ArgPlan::Param)
      continue;
    int64_t whole = product(p.fullShape ? *p.fullShape : p.shape);
    paramCount += whole;
    int64_t chunk = llvm::divideCeil(whole, config->dpSize);
    modelStateBytes +=
        4 * (config->zero.stage >= 2 && config->dpSize > 1 ? chunk : whole);
  }
  bool talk = lead && !options.quiet;
  if (talk)
    log << llvm::formatv("ds-train: {0} parameters, global batch {1} = "
                         "micro-batch {2} x accumulation {3} x data-parallel "
                         "{4}, seq {5}; ZeRO stage {8}, {9} MB model states "
                         "per rank; compiled in {6:f1} s ({7} BLAS call "
                         "sites)\n",
                         paramCount, globalBatch, micro, gas, config->dpSize,
                         seqLen, compileS, (*runner)->blasCallSites(),
                         config->zero.stage, modelStateBytes / 1e6);

  // The fp16 loss scaler's state, when the step has one: reported, and a
  // skipped step's non-finite loss is the overflow it skipped, not
  // divergence.
  std::optional<size_t> scaleArg, skippedArg, hysteresisArg;
  for (size_t i = 0; i < plans->size(); ++i)
    if ((*plans)[i].kind == ArgPlan::State) {
      if ((*plans)[i].name == "loss_scale")
        scaleArg = i;
      else if ((*plans)[i].name == "skipped_steps")
        skippedArg = i;
      else if ((*plans)[i].name == "loss_scale_hysteresis")
        hysteresisArg = i;
    }
  const bool dynamicScale = config->fp16.enabled && config->fp16.lossScale == 0;

  // A save in flight reads these buffers: on any early return it ends
  // before they go.
  auto dropSave = llvm::make_scope_exit([&] {
    if (saver)
      saver->abandon();
  });
  int64_t printEvery = std::max<int64_t>(1, config->stepsPerPrint);
  const int64_t firstStep = resume ? resume->run().step : 0;
  if (resume && talk)
    log << llvm::formatv("ds-train: resuming from {0} at step {1}\n",
                         resume->tagDir(), firstStep);
  for (int64_t s = firstStep; s < options.steps; ++s) {
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
        // This rank's contiguous block of the global batch.
        int64_t first = int64_t(rank) * micro * gas;
        for (int64_t m = 0; m < gas; ++m)
          data->fillBatch(s, globalBatch, first + m * micro, micro, seqLen,
                          options.order, seed, in + m * micro * seqLen,
                          out + m * micro * seqLen);
      }
    }
    if (saver)
      if (double waited = saver->beforeStep(s + 1))
        metrics->addToNextLine("checkpoint_copy_wait_ms", waited * 1000.0);
    int64_t skippedBefore =
        skippedArg ? *inputs[*skippedArg].data<int64_t>() : 0;
    float scaleBefore = scaleArg ? *inputs[*scaleArg].data<float>() : 0;
    int64_t hysteresisBefore =
        hysteresisArg ? *inputs[*hysteresisArg].data<int64_t>() : 0;
    dsrt_comm_seconds_reset();
    if (llvm::Error err = (*runner)->invokeInto("train_step", inputs, outputs))
      return err;
    double commMs = dsrt_comm_seconds() * 1000.0;
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
    // Samples, for a model without a sequence dim.
    double tokensPerS =
        globalBatch * std::max<int64_t>(seqLen, 1) / (stepMs / 1000.0);
    bool skipped =
        skippedArg && *inputs[*skippedArg].data<int64_t>() > skippedBefore;
    // An overflow the scaler can no longer answer by lowering the scale
    // would skip every step from here on: stop, as DeepSpeed does.
    if (skipped && dynamicScale && scaleBefore <= config->fp16.minLossScale &&
        (config->fp16.hysteresis <= 1 || hysteresisBefore <= 1))
      return createStringError(
          "step %lld: the fp16 gradients overflow at the minimum loss scale "
          "(fp16.min_loss_scale = %g), so every further step would be "
          "skipped; lower fp16.min_loss_scale, lower the learning rate, or "
          "train in bf16",
          (long long)(s + 1), config->fp16.minLossScale);
    if (!std::isfinite(lossV) && !skipped)
      return createStringError(
          "step %lld: the loss is %f; training diverged (lower the learning "
          "rate or enable gradient_clipping)",
          (long long)(s + 1), lossV);
    if (saver &&
        (s + 1 == options.steps ||
         (options.saveInterval > 0 && (s + 1) % options.saveInterval == 0))) {
      CkptRunInfo run;
      run.step = s + 1;
      run.seed = seed;
      run.seedOption = seedOption;
      run.dataOrder =
          options.order == DataOrder::Shuffled ? "shuffled" : "sequential";
      run.globalBatch = globalBatch;
      run.worldSize = worldSize;
      run.dpSize = config->dpSize;
      run.zeroStage = config->zero.stage;
      run.configJson = cfg::toJson(*config).dump();
      run.modelPath = options.modelPath;
      run.modelHash = modelHash(options.modelPath);
      if (llvm::Error err = saver->save(run, checkpointTensors(*plans, inputs)))
        return err;
      metrics->addToNextLine("checkpoint_stall_ms",
                             saver->lastStallSeconds() * 1000.0);
      metrics->addToNextLine("checkpoint_bytes", saver->lastBytes());
      if (saver->lastWriteSeconds() > 0)
        metrics->addToNextLine("checkpoint_write_s", saver->lastWriteSeconds());
    }
    std::vector<std::pair<std::string, MetricsWriter::Value>> fields = {
        {"step", s + 1},
        {"loss", double(lossV)},
        {"lr", double(lrV)},
        {"grad_norm", double(normV)},
        {"tokens_per_s", tokensPerS},
        {"step_ms", stepMs},
        {"peak_rss_bytes", peakRssBytes()},
        {"comm_ms", commMs},
        {"model_state_bytes", modelStateBytes},
        {"rank", int64_t(rank)}};
    if (scaleArg) {
      fields.push_back(
          {"loss_scale", double(*inputs[*scaleArg].data<float>())});
      fields.push_back({"skipped", skipped});
    }
    metrics->write(fields);
    if (talk &&
        ((s + 1) % printEvery == 0 || s == 0 || s + 1 == options.steps)) {
      log << llvm::formatv("step {0,5}/{1}  loss {2:f4}  lr {3:e2}  "
                           "grad_norm {4:f3}  tokens/s {5,8:f0}  step {6:f1} "
                           "ms",
                           s + 1, options.steps, lossV, lrV, normV, tokensPerS,
                           stepMs);
      if (scaleArg)
        log << llvm::formatv("  loss_scale {0}{1}",
                             *inputs[*scaleArg].data<float>(),
                             skipped ? "  (skipped: overflow)" : "");
      log << "\n";
    }
  }

  if (saver) {
    if (llvm::Error err = saver->finish())
      return err;
    if (talk)
      log << llvm::formatv("ds-train: checkpoint {0}/{1}: {2:f1} MB per rank "
                           "written in {3:f3} s\n",
                           options.saveDir, ckptTagForStep(options.steps),
                           saver->lastBytes() / 1e6, saver->lastWriteSeconds());
  }

  if (!options.saveWeights.empty()) {
    // Sharded parameters are gathered (every rank takes part); rank 0
    // writes the file.
    std::vector<Tensor> gathered;
    std::vector<SafeTensorView> views;
    for (size_t i = 0; i < plans->size(); ++i) {
      const ArgPlan &p = (*plans)[i];
      if (p.kind != ArgPlan::Param)
        continue;
      // A 16-bit parameter is saved from its f32 master copy.
      size_t from = masterOf(*plans, p).value_or(i);
      const ArgPlan &src = (*plans)[from];
      const void *data = inputs[from].data();
      llvm::ArrayRef<int64_t> shape = src.shape;
      if (src.fullShape) {
        shape = *src.fullShape;
        gathered.push_back(Tensor::zeros(DType::F32, shape));
        if (dsrt_all_gather(dsrt_comm_axes(1), inputs[from].data(),
                            gathered.back().data(), product(shape),
                            DSRT_F32) != 0)
          return createStringError("gathering \"%s\" to save it: %s",
                                   p.name.c_str(), dsrt_last_error());
        data = gathered.back().data();
      }
      views.push_back({p.name, "F32",
                       std::vector<int64_t>(shape.begin(), shape.end()), data});
    }
    if (lead)
      if (llvm::Error err =
              writeSafeTensors(options.saveWeights, views,
                               {{"format", "pt"}, {"producer", "ds-train"}}))
        return err;
  }
  dsrt_comm_finalize();
  return llvm::Error::success();
}
} // namespace ds::driver
