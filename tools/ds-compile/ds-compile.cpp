//===- ds-compile.cpp - Compile a model + ds_config.json once, run anywhere
//===//
//
// Writes an artifact directory (include/ds/Driver/Artifact.h) that
// `ds-train --compiled DIR` runs on every rank without compiling: one shared
// object per distinct rank program, for one CPU level, and the manifest.
//
//===----------------------------------------------------------------------===//
#include "ds/Config/Config.h"
#include "ds/Driver/Artifact.h"
#include "ds/Driver/JitStep.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Import/Import.h"
#include "ds/Execution/JitTarget.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

static cl::OptionCategory category("ds-compile options");
static cl::opt<std::string> model("model", cl::Required, cl::cat(category),
                                  cl::desc("model: .json spec, .mlir model "
                                           "contract or TorchScript .pt"));
static cl::opt<std::string> config("config", cl::Required, cl::cat(category),
                                   cl::desc("DeepSpeed ds_config.json"));
static cl::opt<int64_t> worldSize("world-size", cl::Required, cl::cat(category),
                                  cl::desc("ranks the artifact runs on"));
static cl::opt<std::string> output("o", cl::Required, cl::cat(category),
                                   cl::value_desc("DIR"),
                                   cl::desc("the artifact directory to write"));
static cl::opt<std::string>
    cpu("cpu", cl::init("x86-64-v3"), cl::cat(category),
        cl::desc("CPU level the code is for: x86-64-v3 (default: AVX2+FMA, "
                 "so mixed clusters run the same bits), x86-64-v4 "
                 "(AVX-512), x86-64-v2 or native (this machine's CPU)"));
static cl::opt<std::string>
    target("target", cl::init("cpu"), cl::cat(category),
           cl::desc("what the step runs on: cpu (default) or a GPU chip, "
                    "e.g. sm_90 for H100/H200: kernels assembled with the "
                    "CUDA toolkit (CUDA_HOME, else ptxas on PATH), GEMMs "
                    "through cuBLAS, the step's memory on the GPU"));
static cl::opt<std::string> commProfile(
    "comm-profile", cl::cat(category), cl::value_desc("FILE"),
    cl::desc("measured collective times (ds-report --comm-profile FILE) for "
             "ds-schedule-comm's cost model; recorded in the manifest"));
static cl::opt<bool>
    eval("eval", cl::cat(category),
         cl::desc("also compile @eval_step (the forward without dropout), "
                  "so that ds-train --compiled DIR --eval-data runs; adds "
                  "the forward's code generation to the compile"));
static cl::opt<int64_t>
    seqLen("seq-len", cl::cat(category),
           cl::desc("sequence length T of a .json spec (default: its "
                    "n_positions / max_position_embeddings) or of a .pt2 "
                    "exported with a dynamic sequence dim"));
static cl::opt<bool> quiet("quiet", cl::cat(category),
                           cl::desc("no summary line"));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ds-compile: compile a model and a ds_config.json into an artifact "
      "that ds-train --compiled runs without the compiler\n");
  auto fail = [](Error err) {
    WithColor::error(errs(), "ds-compile") << toString(std::move(err)) << "\n";
    return 1;
  };
  if (worldSize < 1)
    return fail(createStringError("--world-size must be >= 1, got %lld",
                                  (long long)worldSize));
  auto resolved = ds::config::loadConfig(config, {worldSize});
  if (!resolved)
    return fail(resolved.takeError());
  ds::driver::ArtifactRequest request;
  request.step.modelPath = model;
  if (seqLen.getNumOccurrences()) {
    if (seqLen < 1)
      return fail(createStringError("--seq-len must be >= 1, got %lld",
                                    (long long)seqLen));
    request.step.seqLen = seqLen;
  }
  request.step.config = &*resolved;
  request.step.worldSize = worldSize;
  request.step.commProfile = commProfile;
  request.step.target = target;
  request.step.eval = eval;
  request.configPath = config;
  request.dir = output;
  request.cpuLevel = cpu;
  request.quiet = quiet;
  if (Error err = ds::driver::compileArtifact(request, outs()))
    return fail(std::move(err));
  // A PyTorch file's own weights are where its run starts; ds-runner reads
  // no PyTorch files, so the artifact carries them (weights.safetensors).
  StringRef ext = llvm::sys::path::extension(model.getValue());
  if (ext == ".pt" || ext == ".pt2") {
    auto weights = mlir::ds::importer::readTorchWeights(model);
    if (!weights)
      return fail(weights.takeError());
    std::vector<ds::driver::SafeTensorView> views;
    for (const auto &w : *weights)
      views.push_back({w.name, "F32", w.shape, w.values.data()});
    if (Error err = ds::driver::writeSafeTensors(
            output + "/" + ds::driver::kArtifactWeightsFile.str(), views))
      return fail(std::move(err));
  }
  return 0;
}
