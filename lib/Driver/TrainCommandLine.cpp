//===- TrainCommandLine.cpp - ds-train's and ds-runner's flags ------------===//
#include "ds/Driver/Trainer.h"

#include "dsrt/dsrt.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace ::ds::driver;

static cl::OptionCategory category("ds-train options");
static cl::opt<std::string> modelFile("model", cl::cat(category),
                                      cl::desc("model: .json spec, .mlir model "
                                               "contract or TorchScript .pt "
                                               "(with --compiled: checked "
                                               "against the artifact's)"));
static cl::opt<std::string> configFile(
    "config", cl::cat(category),
    cl::desc("DeepSpeed ds_config.json (with --compiled: default the "
             "artifact's, checked against it)"));
static cl::opt<std::string>
    compiled("compiled", cl::cat(category),
             cl::desc("run the ds-compile artifact DIR instead of compiling "
                      "(in ds-runner: no compiler in the process)"));
static cl::opt<std::string> data("data", cl::cat(category),
                                 cl::desc("training tokens: .txt (bytes), "
                                          ".bin (uint16) or 1-D .npy; or a "
                                          "DIR of NAME.npy per batch "
                                          "argument"));
static cl::opt<std::string>
    evalData("eval-data", cl::cat(category),
             cl::desc("held-out tokens (.txt, .bin or .npy): log the eval "
                      "loss (forward only, no dropout) every "
                      "--eval-interval steps"));
static cl::opt<int64_t>
    evalInterval("eval-interval", cl::init(0), cl::cat(category),
                 cl::desc("with --eval-data: evaluate every K steps "
                          "(default: every steps_per_print)"));
static cl::opt<bool> synthetic("synthetic", cl::cat(category),
                               cl::desc("train on seeded random tokens"));
static cl::opt<int64_t> steps("steps", cl::Required, cl::cat(category),
                              cl::desc("optimizer steps to run"));
static cl::opt<std::string> metrics("metrics", cl::cat(category),
                                    cl::desc("JSONL file, one line per step"));
static cl::opt<int64_t> seed("seed", cl::init(-1), cl::cat(category),
                             cl::desc("init/shuffle seed (default: the "
                                      "model's init_seed)"));
static cl::opt<std::string> initFrom("init-from", cl::cat(category),
                                     cl::desc("initial parameters from a "
                                              ".safetensors file, a .pt "
                                              "model or a torch.save'd "
                                              "state_dict"));
static cl::opt<std::string> paramMap(
    "param-map", cl::cat(category),
    cl::desc("FILE.json | gpt2: which tensor of --init-from holds each "
             "parameter, and whether it is stored transposed (gpt2: a "
             "Hugging Face GPT-2 checkpoint into a GPT spec)"));
static cl::list<std::string>
    batchBinding("batch", cl::cat(category),
                 cl::desc("NAME=tokens|targets|FILE.npy: feed forward's batch "
                          "argument NAME the token windows' inputs, "
                          "their next-token targets, or the rows of a "
                          ".npy file, one per sample (repeatable)"));
static cl::opt<bool> freshInit(
    "fresh-init", cl::cat(category),
    cl::desc("draw the parameters from the model's init attributes instead "
             "of starting from the weights a .pt model holds"));
static cl::opt<std::string>
    dataOrder("data-order", cl::init("shuffled"), cl::cat(category),
              cl::desc("shuffled (default, as DeepSpeed's data loader) | "
                       "sequential (see docs/data.md)"));
static cl::opt<std::string>
    saveWeights("save-weights", cl::cat(category),
                cl::desc("write the final parameters to a .safetensors file"));
static cl::opt<std::string> dumpIR("dump-ir", cl::cat(category),
                                   cl::desc("write each phase's IR to DIR"));
static cl::opt<std::string> commProfile(
    "comm-profile", cl::cat(category), cl::value_desc("FILE"),
    cl::desc("measured collective times (ds-report --comm-profile FILE) for "
             "ds-schedule-comm's cost model; with --compiled, must be the "
             "profile the artifact was compiled with"));
static cl::opt<int64_t>
    seqLen("seq-len", cl::cat(category),
           cl::desc("sequence length T of a .json spec (default: its "
                    "n_positions / max_position_embeddings) or of a .pt2 "
                    "exported with a dynamic sequence dim"));
static cl::opt<std::string>
    target("target", cl::init("cpu"), cl::cat(category),
           cl::desc("what the step runs on: cpu (default) or a GPU chip, "
                    "e.g. sm_90 for H100/H200 (the CUDA toolkit compiles it; "
                    "running it needs that GPU and its driver)"));
static cl::opt<std::string>
    backend("backend", cl::cat(category),
            cl::desc("communication backend: self, mpi, nccl or auto "
                     "(default: DSRT_BACKEND, else nccl with a GPU, mpi "
                     "under mpirun, self otherwise)"));
static cl::opt<bool> deterministic(
    "deterministic", cl::cat(category),
    cl::desc("reduce gradients in a fixed rank order, so runs are bitwise "
             "reproducible across ZeRO stages (slower)"));
static cl::opt<bool> quiet("quiet", cl::cat(category),
                           cl::desc("no progress lines"));
static cl::opt<std::string>
    saveDir("save", cl::cat(category),
            cl::desc("write checkpoints to DIR/global_step<N> (at the end, "
                     "and every --save-interval steps)"));
static cl::opt<int64_t>
    saveInterval("save-interval", cl::init(0), cl::cat(category),
                 cl::desc("checkpoint every K steps (0: only at the end)"));
static cl::opt<bool>
    saveSync("save-sync", cl::cat(category),
             cl::desc("write checkpoints before training continues (default: "
                      "a background thread writes a copy)"));
enum class OnSaveError { Stop, Continue };
static cl::opt<OnSaveError> onSaveError(
    "on-save-error", cl::init(OnSaveError::Stop), cl::cat(category),
    cl::desc("when a checkpoint save fails (full disk, read-only "
             "filesystem): stop training, or report it and continue (the "
             "last committed checkpoint stays `latest`)"),
    cl::values(clEnumValN(OnSaveError::Stop, "stop", "end the run (default)"),
               clEnumValN(OnSaveError::Continue, "continue",
                          "warn and keep training")));
static cl::opt<std::string>
    loadDir("load", cl::cat(category),
            cl::desc("resume from the checkpoint DIR/latest names"));
static cl::opt<std::string>
    trace("trace", cl::cat(category),
          cl::desc("write a Chrome trace (chrome://tracing, Perfetto) of the "
                   "run to FILE.json: every rank's layers, collectives, "
                   "waits, optimizer and checkpoint saves"));
static cl::opt<std::string>
    profile("profile", cl::cat(category),
            cl::desc("compile the step with a timer around each kernel and "
                     "write where rank 0's step time goes to FILE.json (per "
                     "class of kernel: ms, share, GFLOP/s, GB/s); a table "
                     "on stderr"));
static cl::opt<std::string> loadTag("tag", cl::cat(category),
                                    cl::desc("with --load: the tag to resume "
                                             "from (e.g. global_step100)"));

llvm::Expected<TrainOptions>
ds::driver::parseTrainCommandLine(int argc, char **argv,
                                  llvm::StringRef overview) {
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, overview, &errs()))
    return createStringError("bad command line (see --help)");
  TrainOptions options;
  options.modelPath = modelFile;
  options.configPath = configFile;
  options.dataPath = data;
  options.synthetic = synthetic;
  options.steps = steps;
  options.metricsPath = metrics;
  if (seed >= 0)
    options.seed = static_cast<uint64_t>(seed);
  options.initFrom = initFrom;
  options.freshInit = freshInit;
  options.paramMap = paramMap;
  if (!paramMap.empty() && initFrom.empty())
    return createStringError("--param-map %s names the tensors of an "
                             "--init-from file; give --init-from FILE",
                             paramMap.getValue().c_str());
  for (const std::string &binding : batchBinding) {
    auto [name, role] = llvm::StringRef(binding).split('=');
    if (name.empty() ||
        (role != "tokens" && role != "targets" && !role.ends_with(".npy")))
      return createStringError("--batch %s: expected NAME=tokens, "
                               "NAME=targets or NAME=FILE.npy (e.g. --batch "
                               "x=tokens --batch y=targets, or --batch "
                               "x=x.npy --batch y=y.npy)",
                               binding.c_str());
    options.batchRoles[name.str()] = role.str();
  }
  if (freshInit && !initFrom.empty())
    return createStringError("--fresh-init and --init-from contradict each "
                             "other; pass one");
  options.evalDataPath = evalData;
  options.evalInterval = evalInterval;
  if (evalInterval < 0 || (evalInterval > 0 && evalData.empty()))
    return createStringError("--eval-interval %lld: needs --eval-data FILE "
                             "and K >= 1",
                             (long long)evalInterval.getValue());
  options.saveWeights = saveWeights;
  options.dumpIRDir = dumpIR;
  options.commProfile = commProfile;
  options.target = target;
  options.quiet = quiet;
  options.deterministic = deterministic;
  options.saveDir = saveDir;
  options.saveInterval = saveInterval;
  options.saveSync = saveSync;
  options.continueOnSaveError = onSaveError == OnSaveError::Continue;
  options.loadDir = loadDir;
  options.loadTag = loadTag;
  options.compiledDir = compiled;
  options.tracePath = trace;
  options.profilePath = profile;
  if (!options.profilePath.empty() && options.target != "cpu")
    return createStringError("--profile times kernels as the CPU runs them; "
                             "with --target %s they run asynchronously on "
                             "the GPU: profile a CPU step",
                             options.target.c_str());
  if (options.compiledDir.empty() && (modelFile.empty() || configFile.empty()))
    return createStringError("--model and --config are required (or "
                             "--compiled DIR, a ds-compile artifact)");
  if (seqLen.getNumOccurrences()) {
    if (seqLen < 1)
      return createStringError("--seq-len must be >= 1, got %lld",
                               (long long)seqLen);
    if (!options.compiledDir.empty())
      return createStringError("--seq-len with --compiled: an artifact "
                               "runs at the length it was compiled for "
                               "(ds-compile --seq-len); drop --seq-len");
    options.seqLen = seqLen;
  }
  if (!options.compiledDir.empty() && target.getNumOccurrences())
    return createStringError("--target %s with --compiled: an artifact runs "
                             "on the target it was compiled for (ds-compile "
                             "--target); drop --target",
                             target.getValue().c_str());
  if (!options.compiledDir.empty() && options.configPath.empty())
    options.configPath = options.compiledDir + "/ds_config.json";
  if (backend != "auto")
    options.backend = backend;
  if (dataOrder == "shuffled") {
    options.order = DataOrder::Shuffled;
  } else if (dataOrder == "sequential") {
    options.order = DataOrder::Sequential;
  } else {
    return createStringError("--data-order must be sequential or shuffled, "
                             "got '%s'",
                             dataOrder.getValue().c_str());
  }
  return options;
}

int ds::driver::trainMain(
    int argc, char **argv, llvm::StringRef overview,
    const std::function<llvm::Expected<StepSource>(const TrainOptions &)>
        &sourceFor) {
  // Before anything else: may re-execute with faster BLAS kernels.
  dsrt_blas_core_select(argv);
  InitLLVM init(argc, argv);
  auto fail = [](Error err) {
    outs().flush();
    // One write: the ranks of a job share one stderr, and a line written
    // in pieces interleaves with another rank's.
    std::string line;
    raw_string_ostream os(line);
    WithColor::error(os, "ds-train") << toString(std::move(err)) << "\n";
    errs() << line;
    return 1;
  };
  auto options = parseTrainCommandLine(argc, argv, overview);
  if (!options)
    return fail(options.takeError());
  auto source = sourceFor(*options);
  if (!source)
    return fail(source.takeError());
  if (Error err = runTraining(*options, *source, outs()))
    return fail(std::move(err));
  return 0;
}
