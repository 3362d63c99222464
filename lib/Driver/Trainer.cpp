//===- Trainer.cpp - Compile a model + config and run training ------------===//
//
// The orchestration only: start communication, resolve the config, open the
// checkpoints and the data, compile the step, then hand the run to the
// state store, the data feeder, the step loop and the checkpointer.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/Trainer.h"

#include "ds/Config/Config.h"
#include "ds/Driver/Artifact.h"
#include "ds/Driver/Checkpointer.h"
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/Evaluator.h"
#include "ds/Driver/GpuPlacement.h"
#include "ds/Driver/MemoryFit.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/ParamMap.h"
#include "ds/Driver/StateStore.h"
#include "ds/Driver/StateSwap.h"
#include "ds/Driver/StepLoop.h"
#include "ds/Driver/Timeline.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

namespace {

/// One process per rank. Communication comes first: the world size
/// resolves the config's batch triangle.
llvm::Error startCommunication(const TrainOptions &options) {
  if (dsrt_comm_init(options.backend.empty() ? nullptr
                                             : options.backend.c_str()) != 0)
    return createStringError("cannot start communication: %s",
                             dsrt_last_error());
  dsrt_comm_set_deterministic(options.deterministic);
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
  return llvm::Error::success();
}

bool isTorchFile(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  return ext == ".pt" || ext == ".pth" || ext == ".pt2";
}

/// The safetensors file the parameters start from: --init-from, or the
/// weights a PyTorch file holds (the .pt model itself unless --fresh-init),
/// exported into `temporary`, which the caller removes.
llvm::Expected<std::string> initialWeights(const TrainOptions &options,
                                           const StepSource &source,
                                           llvm::SmallString<128> &temporary) {
  std::string from = options.initFrom;
  // An artifact compiled from a PyTorch file starts from that file's
  // weights, which ds-compile put beside its manifest (--model, if given,
  // is checked to be that file).
  if (from.empty() && !options.freshInit && options.loadDir.empty() &&
      !options.compiledDir.empty()) {
    std::string weights =
        options.compiledDir + "/" + kArtifactWeightsFile.str();
    if (llvm::sys::fs::exists(weights))
      return weights;
  }
  if (from.empty() && !options.freshInit && options.loadDir.empty() &&
      options.compiledDir.empty() && isTorchFile(options.modelPath))
    from = options.modelPath;
  if (!isTorchFile(from))
    return from;
  if (!source.exportTorchWeights)
    return createStringError("%s: this program cannot read PyTorch files; "
                             "pass the weights as .safetensors",
                             from.c_str());
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "ds-weights", "safetensors", temporary))
    return createStringError("cannot create a temporary file for the "
                             "weights of %s: %s",
                             from.c_str(), ec.message().c_str());
  if (llvm::Error err = source.exportTorchWeights(from, temporary))
    return std::move(err);
  return temporary.str().str();
}

/// Every rank of a pipeline stage (every rank, without a pipeline) must run
/// the same program: compare the start-up hash before anything waits on
/// anything else.
llvm::Error agreeOnStep(uint64_t hash, int rank, int worldSize,
                        int64_t ranksPerProgram) {
  if (worldSize < 2)
    return llvm::Error::success();
  int64_t mine = int64_t(hash);
  std::vector<int64_t> all(worldSize);
  if (dsrt_all_gather(dsrt_comm_world(), &mine, all.data(), worldSize,
                      DSRT_I64) != 0)
    return createStringError("start-up check: %s", dsrt_last_error());
  int64_t first = rank / ranksPerProgram * ranksPerProgram;
  for (int64_t r = first; r < first + ranksPerProgram && r < worldSize; ++r)
    if (all[r] != mine)
      return createStringError(
          "rank %lld compiled a different training step than rank %d: the "
          "model, the config or the ds build differ between ranks; give "
          "every rank the same files and binaries",
          (long long)r, rank);
  return llvm::Error::success();
}

llvm::Error setGrid(const StepManifest &manifest, int worldSize) {
  if (manifest.gridSizes.empty())
    return llvm::Error::success();
  std::vector<int64_t> sizes(manifest.gridSizes);
  if (dsrt_comm_set_grid(int(sizes.size()), sizes.data()) != 0)
    return createStringError("device grid %s over %d ranks: %s",
                             manifest.gridAxes.c_str(), worldSize,
                             dsrt_last_error());
  return llvm::Error::success();
}

/// Runs the state store's first fill on a thread of its own, over a copy of
/// the manifest that lives as long as this (the store refers to it).
class StateInitializer {
public:
  using Fill = std::function<llvm::Error(const StepManifest &)>;

  void start(const StepManifest &manifest, Fill fill) {
    copy = std::make_unique<StepManifest>(manifest);
    thread =
        std::thread([this, fill = std::move(fill)] { result = fill(*copy); });
  }
  /// Waits for the fill, lending this thread's core to its draws; success
  /// if none was started.
  llvm::Error finish() {
    DrawThreadLoan loan(1);
    if (thread.joinable())
      thread.join();
    return std::move(result);
  }
  ~StateInitializer() { llvm::consumeError(finish()); }

private:
  std::unique_ptr<StepManifest> copy;
  std::thread thread;
  llvm::Error result = llvm::Error::success();
};

/// Bytes of one value of every model state `store` holds.
int64_t stateBytes(const StateStore &store, const StepManifest &manifest) {
  int64_t bytes = 0;
  for (size_t i = 0; i < manifest.args.size(); ++i)
    if (manifest.args[i].isModelState() && !store.swapped(i))
      bytes += store.current(i).byteSize();
  return bytes;
}

} // namespace

namespace ds::driver {
llvm::Error runTraining(const TrainOptions &options, const StepSource &source,
                        llvm::raw_ostream &log) {
  using Clock = std::chrono::steady_clock;
  auto compileStart = Clock::now();
  if (llvm::Error err = startCommunication(options))
    return err;
  dsrt_comm *world = dsrt_comm_world();
  const int rank = dsrt_comm_rank(world), worldSize = dsrt_comm_size(world);
  if (source.checkWorldSize)
    if (llvm::Error err = source.checkWorldSize(worldSize))
      return err;

  auto config = cfg::loadConfig(options.configPath, {worldSize});
  if (!config)
    return config.takeError();
  if (options.steps < 1)
    return createStringError("--steps must be >= 1, got %lld",
                             (long long)options.steps);
  const bool nvme =
      config->zero.offloadOptimizer.device == cfg::OffloadDevice::Nvme;
  if (nvme)
    if (llvm::Error err =
            StateSwap::checkDirectory(config->zero.offloadOptimizer))
      return err;

  // A pipeline runs one program per stage, on that stage's dp ranks.
  const bool pipelined = config->pipeline.stages > 1;
  CkptPlace place;
  place.rank = rank;
  place.worldSize = worldSize;
  place.programSize = pipelined ? int(config->stageRanks()) : worldSize;
  place.programRank = rank % place.programSize;
  // The ranks of a tensor-parallel group (consecutive) read the same batch,
  // and so do those of a sequence-parallel group (the step keeps each
  // rank's share of the sequence).
  const int dataRank =
      place.programRank /
      int(config->tensorParallel.autotpSize * config->sequenceParallelSize);
  // --load: the checkpoint's seed and data position apply before anything
  // draws from them; --save: a bad directory fails before the compile.
  auto checkpointer = Checkpointer::open(options, *config, place);
  if (!checkpointer)
    return checkpointer.takeError();
  auto feeder = DataFeeder::open(options);
  if (!feeder)
    return feeder.takeError();

  auto evaluator = Evaluator::open(options, *config);
  if (!evaluator)
    return evaluator.takeError();
  ParamMap paramMap;
  if (!options.paramMap.empty()) {
    auto loaded = ParamMap::load(options.paramMap);
    if (!loaded)
      return loaded.takeError();
    paramMap = std::move(*loaded);
  }

  llvm::SmallString<128> temporaryWeights;
  llvm::scope_exit removeWeights([&] {
    if (!temporaryWeights.empty())
      llvm::sys::fs::remove(temporaryWeights);
  });
  auto initFrom = initialWeights(options, source, temporaryWeights);
  if (!initFrom)
    return initFrom.takeError();

  // What the manifest alone refuses is refused before the slow codegen; a
  // resumed state is read there too, so ranks agree before the JIT. The
  // first values need only the manifest: they are drawn (or read) on a
  // thread of their own while the code is generated.
  uint64_t seed = 0;
  std::vector<std::vector<char>> restored;
  StateInitializer initializer; // outlives the store, which refers to it
  std::unique_ptr<StateSwap> swap; // likewise
  std::unique_ptr<StateStore> store;
  const char *localSize = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranksOnHost = localSize ? std::max(1, atoi(localSize)) : 1;
  auto startInit = [&](const StepManifest &manifest) {
    initializer.start(
        manifest,
        [&, rank = place.programRank](const StepManifest &m) -> llvm::Error {
          if (nvme) {
            auto opened = StateSwap::open(*config, m, rank, ranksOnHost);
            if (!opened)
              return opened.takeError();
            swap = std::move(*opened);
          }
          store = std::make_unique<StateStore>(m, rank, swap.get());
          return store->initialize(seed, *initFrom, paramMap,
                                   options.initFrom.empty() ? options.modelPath
                                                            : options.initFrom);
        });
  };
  StepRequest request;
  request.modelPath = options.modelPath;
  request.seqLen = options.seqLen;
  request.configPath = options.configPath;
  request.config = &*config;
  request.worldSize = worldSize;
  request.rank = rank;
  request.dumpIRDir = options.dumpIRDir;
  request.commProfile = options.commProfile;
  request.target = options.target;
  request.profile = !options.profilePath.empty();
  request.eval = *evaluator != nullptr;
  request.agreeOnStep = [&](uint64_t hash) {
    return agreeOnStep(hash, rank, worldSize, place.programSize);
  };
  request.beforeCodegen = [&](const StepManifest &manifest) -> llvm::Error {
    // A GPU step needs its GPU before anything is compiled or allocated.
    if (llvm::Error err = placeTensorsFor(manifest.target))
      return err;
    // A step that cannot fit is refused now, not killed in step 1.
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (llvm::Error err = checkStepFits(
            manifest, *config, memoryPerRank(local ? atoll(local) : 1)))
      return err;
    std::optional<uint64_t> seedOption = checkpointer->seedOption();
    if (llvm::Error err = feeder->plan(manifest, *config, seedOption))
      return err;
    if (*evaluator)
      if (llvm::Error err = (*evaluator)->plan(manifest, *feeder, dataRank))
        return err;
    seed = seedOption.value_or(manifest.initSeed.value_or(0));
    auto values = checkpointer->readState(manifest, seed);
    if (!values)
      return values.takeError();
    restored = std::move(*values);
    startInit(manifest);
    return llvm::Error::success();
  };
  // A GPU step without its GPU is refused before the compile, not after.
  if (options.compiledDir.empty())
    if (llvm::Error err = placeTensorsFor(options.target))
      return err;
  auto compiled = source.provide(request);
  llvm::Error initialized = initializer.finish();
  if (!compiled) {
    llvm::consumeError(std::move(initialized));
    return compiled.takeError();
  }
  if (initialized)
    return initialized;
  const StepManifest &manifest = compiled->manifest;
  if (llvm::Error err = setGrid(manifest, worldSize))
    return err;
  if (!store) { // a step provider that did not ask before its codegen
    if (llvm::Error err = placeTensorsFor(manifest.target))
      return err;
    startInit(manifest);
    if (llvm::Error err = initializer.finish())
      return err;
  }
  double compileS =
      std::chrono::duration<double>(Clock::now() - compileStart).count();
  // The states were filled during the compile: what the process held
  // before them is what it holds now less one value of each.
  int64_t rssBeforeStates = currentRssBytes() - stateBytes(*store, manifest);

  if (llvm::Error err = feeder->initialize(manifest, seed, dataRank))
    return err;
  if (llvm::Error err = store->restore(restored))
    return err;
  restored = {}; // a swapped state's bytes are in its file now
  auto loop = StepLoop::create(manifest, options, *config, rank);
  if (!loop)
    return loop.takeError();
  loop->setRssBaseline(rssBeforeStates);
  loop->printSummary(*store, *feeder, compileS, compiled->origin, log);

  // A save in flight reads the store's buffers: on any early return it
  // ends before they go.
  auto dropSave = llvm::make_scope_exit([&] { checkpointer->abandon(); });
  if (llvm::Error err = startTimeline(options.tracePath, world))
    return err;
  if (llvm::Error err = loop->run(*compiled->function, *store, *feeder,
                                  *checkpointer, seed, log, evaluator->get()))
    return err;
  if (llvm::Error err = checkpointer->finish(loop->talks(), log))
    return err;
  if (llvm::Error err = writeTimeline(options.tracePath, world))
    return err;
  if (!options.saveWeights.empty())
    if (llvm::Error err = store->saveWeights(options.saveWeights, place))
      return err;
  dsrt_comm_finalize();
  return llvm::Error::success();
}
} // namespace ds::driver
