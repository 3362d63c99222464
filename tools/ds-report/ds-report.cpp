//===- ds-report.cpp - What ds was built with and what it can use ---------===//
//
// Without arguments: the versions of ds and of every library it uses, and
// which collective backends this machine could run. With --config: the
// resolved ds_config.json (--json for the machine-readable form, with the
// tensor- and sequence-parallel group sizes); with --model as well, the
// model's pipeline partition and schedules, in --json each parameter's
// tensor-parallel cut, and whether the job fits this machine's memory on
// --world-size ranks (with the settings that would make it fit). With --comm-profile, run on a job's ranks: measured
// collective times for ds-schedule-comm's cost model.
//
// Optional libraries (NCCL, the CUDA driver) are probed with dlopen so that
// the report works on machines without them, the same way libdsrt will load
// them.
//
//===----------------------------------------------------------------------===//

#include "CommProfile.h"
#include "FitReport.h"
#include "PipelineReport.h"
#include "TensorParallelReport.h"

#include "ds/Config/Config.h"
#include "ds/Driver/CompileCache.h"
#include "ds/Execution/JitTarget.h"
#include "ds/Import/Import.h"
#include "ds/Target/CudaToolkit.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#ifdef DS_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace cl = llvm::cl;

static cl::OptionCategory category("ds-report options");
static cl::opt<std::string>
    configPath(cl::cat(category), "config",
               cl::desc("ds_config.json to resolve and print"),
               cl::value_desc("file"));
static cl::opt<std::string> modelPath(
    cl::cat(category), "model",
    cl::desc("with --config: also report the model's pipeline layers, their "
             "partition into stages, each stage's schedule, (with --json) "
             "each parameter's tensor-parallel cut, and whether the job fits "
             "this machine's memory (DS_MEMORY_BYTES: a rank's) on "
             "--world-size ranks, and if not, what would make it fit"),
    cl::value_desc("file"));
static cl::opt<int64_t>
    worldSize(cl::cat(category), "world-size",
              cl::desc("number of ranks to resolve the config for"),
              cl::init(1));
static cl::opt<bool>
    printJson(cl::cat(category), "json",
              cl::desc("print the resolved config as JSON (with --config)"));
static cl::opt<bool> printBlasCore(
    cl::cat(category), "blas-core",
    cl::desc("print only the OpenBLAS core ds runs here (bench/ gives it to "
             "its baselines)"));

static cl::opt<std::string> commProfilePath(
    cl::cat(category), "comm-profile",
    cl::desc("time all_gather, reduce_scatter and all_reduce on the ranks "
             "of this job (start it with ds-launch) and write the points "
             "to this JSON file, for ds-schedule-comm's comm-profile"),
    cl::value_desc("file"));
static cl::list<int64_t> commProfileSizes(
    cl::cat(category), "comm-profile-sizes",
    cl::desc("whole-tensor bytes to time (default 4 KiB to 64 MiB, x4)"),
    cl::CommaSeparated, cl::value_desc("bytes,..."));
static cl::opt<int>
    commProfileRepeats(cl::cat(category), "comm-profile-repeats",
                       cl::desc("timed calls per size (the median)"),
                       cl::init(5));

namespace {

struct Probe {
  bool found = false;
  std::string text;
};

Probe probeMpi() {
#ifdef DS_HAVE_MPI
  // One of the few MPI calls allowed before MPI_Init.
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  // Open MPI counts the terminating NUL in `length`.
  std::string text(version, strnlen(version, length));
  text = text.substr(0, text.find_first_of("\r\n"));
  return {true, llvm::StringRef(text).rtrim().str()};
#else
  return {false, "not built with MPI"};
#endif
}

Probe probeNccl() {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return {false, "not found (libnccl.so.2 does not load)"};
  using GetVersion = int (*)(int *);
  auto getVersion = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
  int code = 0;
  if (!getVersion || getVersion(&code) != 0)
    return {false, "libnccl.so.2 loads but ncclGetVersion fails"};
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return {true, std::to_string(code / 10000) + "." +
                    std::to_string(code % 10000 / 100) + "." +
                    std::to_string(code % 100)};
}

// The kernels every ds process on this machine runs (ds-report has already
// been through dsrt_blas_core_select), and one warning line with the fix when
// they are slower than the CPU allows or cannot run on it.
void printBlas(llvm::raw_ostream &os) {
  dsrt_blas_info blas;
  dsrt_blas_info_get(&blas);
  os << "OpenBLAS: " << blas.version
     << (blas.dynamic ? ", DYNAMIC_ARCH" : ", one kernel set") << ", "
     << dsrt_threads_get() << " thread(s), " << blas.library << "\n";
  std::string forced =
      getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "";
  os << "BLAS core: " << blas.core << " (";
  if (blas.source == DSRT_BLAS_CORE_CHOSEN)
    os << "chosen by ds: OpenBLAS detected the generic " << blas.detected;
  else if (blas.source == DSRT_BLAS_CORE_USER)
    os << "OPENBLAS_CORETYPE=" << forced;
  else
    os << "OpenBLAS's detection";
  os << "); this CPU allows " << blas.best << " (" << blas.features << ")\n";

  std::string fix = "set OPENBLAS_CORETYPE=" + std::string(blas.best);
  if (!forced.empty())
    fix = "unset OPENBLAS_CORETYPE (ds then chooses) or " + fix;
  if (!blas.dynamic)
    fix = "use a DYNAMIC_ARCH OpenBLAS (Debian's libopenblas0-pthread), "
          "whose kernels ds can choose";
  if (blas.unsupported)
    llvm::WithColor::warning(llvm::errs(), "ds-report")
        << "BLAS core " << blas.core
        << " needs instructions this CPU lacks (it has " << blas.features
        << "): BLAS calls will die of SIGILL; " << fix << "\n";
  else if (blas.generic)
    llvm::WithColor::warning(llvm::errs(), "ds-report")
        << "OpenBLAS runs its generic " << blas.core
        << " kernels, several times slower than " << blas.best
        << ", which this CPU allows; " << fix << "\n";
  else if (blas.source == DSRT_BLAS_CORE_USER && blas.dynamic &&
           !llvm::StringRef(forced).equals_insensitive(blas.core))
    llvm::WithColor::warning(llvm::errs(), "ds-report")
        << "OpenBLAS " << blas.version
        << " does not accept OPENBLAS_CORETYPE=" << forced << " and runs "
        << blas.core << " instead; "
        << "unset OPENBLAS_CORETYPE or set it to a name docs/blas.md lists\n";
}

// What a bf16 x bf16 -> f32 product runs on in this process.
void printBF16Gemm(llvm::raw_ostream &os) {
  const char *why = nullptr;
  int backend = dsrt_bf16_gemm_backend(&why);
  os << "bf16 GEMM: ";
  if (backend == DSRT_BF16_GEMM_ONEDNN)
    os << "AVX512_BF16 dot products (" << why << ")\n";
  else if (backend == DSRT_BF16_GEMM_F32)
    os << "operands widened to f32, then sgemm (" << why << ")\n";
  else
    os << "none: " << dsrt_last_error() << "\n";
}

std::string cudaVersion(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

/// The CUDA section: the toolkit --target sm_XX compiles with, the driver
/// and devices a GPU step would run on, and which targets this machine can
/// compile and run. True when a GPU is usable.
bool printCuda(llvm::raw_ostream &os, const Probe &nccl) {
  os << "\nCUDA:\n";
  auto toolkit = ds::target::findCudaToolkit();
  if (toolkit)
    os << "  toolkit: " << toolkit->version << " at " << toolkit->root
       << " (from " << toolkit->from << "; ptxas, fatbinary, libdevice)\n";
  else
    os << "  toolkit: none (" << llvm::toString(toolkit.takeError()) << ")\n";
#ifdef DS_CUDA_TOOLKIT_VERSION
  os << "  libdsrt's CUDA kernels: built with " << DS_CUDA_TOOLKIT_VERSION
     << "\n";
#else
  os << "  libdsrt's CUDA kernels: not built (no nvcc at build time)\n";
#endif
  dsrt_cuda_info info;
  bool haveGpu = dsrt_cuda_probe(&info) == DSRT_OK;
  os << "  driver: ";
  if (!info.driver_loaded)
    os << "no driver";
  else
    os << (info.driver_version ? cudaVersion(info.driver_version)
                               : std::string("unknown version"));
  os << "\n  devices: ";
  if (!haveGpu) {
    os << "none (" << info.problem << ")\n";
  } else {
    os << info.device_count << "\n";
    for (int i = 0; i < std::min(info.device_count, DSRT_CUDA_MAX_DEVICES);
         ++i) {
      const dsrt_cuda_device &d = info.devices[i];
      os << llvm::format("    %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", i, d.name,
                         d.major, d.minor, d.multiprocessors,
                         d.total_bytes / double(1ull << 30));
    }
  }
  os << "  NCCL: " << nccl.text << "\n";
  os << "  targets this machine compiles: cpu";
  if (toolkit)
    os << ", " << llvm::join(toolkit->archs, ", ");
  os << "\n  targets this machine runs: cpu";
  if (haveGpu) {
    // A cubin for sm_XY runs on sm_XY and later minors of the same major.
    const dsrt_cuda_device &d = info.devices[0];
    if (toolkit)
      for (const std::string &arch : toolkit->archs) {
        auto t = ds::target::parseGpuTarget(arch);
        if (t && t->major == d.major && t->minor <= d.minor)
          os << ", " << arch;
        else if (!t)
          llvm::consumeError(t.takeError());
      }
    else
      os << ", sm_" << d.major << d.minor << " (with a toolkit to compile)";
  }
  os << "\n";
  return haveGpu;
}

/// What the JIT generates code for, and what DS_JIT_CPU could choose.
void printJitTarget(llvm::raw_ostream &os) {
  std::string levels =
      llvm::join(mlir::ds::exec::runnableJitTargetLevels(), ", ");
  auto target = mlir::ds::exec::resolveJitTargetFromEnvironment();
  if (!target) {
    os << "JIT target: warning: " << llvm::toString(target.takeError()) << "\n";
    return;
  }
  os << "JIT target: " << target->cpu;
  if (target->fromEnvironment)
    os << " (DS_JIT_CPU=" << target->level << ")";
  else
    os << " (native: this CPU; DS_JIT_CPU selects a level)";
  os << "; levels this CPU runs: " << levels << "\n";
}

/// Where ds-train keeps compiled steps (CompileCache.h) and how full it is.
void printCompileCache(llvm::raw_ostream &os) {
  auto settings = ds::driver::compileCacheSettings();
  if (!settings) {
    os << "compile cache: warning: " << llvm::toString(settings.takeError())
       << "\n";
    return;
  }
  if (!settings->enabled) {
    os << "compile cache: off (DS_COMPILE_CACHE=" << getenv("DS_COMPILE_CACHE")
       << "): ds-train compiles every run\n";
    return;
  }
  ds::driver::CompileCacheStats stats =
      ds::driver::compileCacheStats(settings->dir);
  os << llvm::format("compile cache: %s, %lld step(s), %.1f of %.0f MB "
                     "(DS_COMPILE_CACHE, DS_COMPILE_CACHE_MAX_MB)\n",
                     settings->dir.c_str(), (long long)stats.entries,
                     stats.bytes / 1048576.0, settings->maxBytes / 1048576.0);
}

void printVersions() {
  llvm::raw_ostream &os = llvm::outs();
  os << "ds " << DS_VERSION << "\n";
  os << "LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  printJitTarget(os);
  printCompileCache(os);

  Probe mpi = probeMpi();
  os << "MPI: " << mpi.text << "\n";
  Probe nccl = probeNccl();
  os << "NCCL: " << nccl.text << "\n";

  os << "LibTorch: "
     << (mlir::ds::importer::haveTorchScriptImport()
             ? "linked (TorchScript .pt import)"
             : "not linked (no .pt import)")
     << "\n";
  printBlas(os);
  printBF16Gemm(os);
  bool haveGpu = printCuda(os, nccl);

  // What the runtime could use here. libdsrt is not built yet, so this is a
  // statement about the machine, not about a loaded backend.
  os << "\ncollective backends on this machine (libdsrt is not built yet; "
        "this is what it could use):\n";
  os << "  self: usable (one rank, no dependency)\n";
  os << "  mpi:  "
     << (mpi.found ? "usable (MPI linked)" : "not usable (" + mpi.text + ")")
     << "\n";
  os << "  nccl: ";
  if (nccl.found && haveGpu)
    os << "usable (NCCL " << nccl.text << ", GPU present)\n";
  else if (!nccl.found)
    os << "not usable (NCCL not found)\n";
  else
    os << "not usable (NCCL " << nccl.text << " found, but no GPU)\n";
  os << "CPU features for the optimizer kernels: avx2 "
     << (__builtin_cpu_supports("avx2") ? "yes" : "no") << ", avx512f "
     << (__builtin_cpu_supports("avx512f") ? "yes" : "no") << "\n";
}

} // namespace

int main(int argc, char **argv) {
  // Report the BLAS kernels a ds-train here would run.
  dsrt_blas_core_select(argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ds-report: versions, usable backends and resolved ds_config.json\n");

  if (printBlasCore) {
    dsrt_blas_info blas;
    dsrt_blas_info_get(&blas);
    llvm::outs() << blas.core << "\n";
    return 0;
  }
  if (!commProfilePath.empty()) {
    std::vector<int64_t> sizes(commProfileSizes.begin(),
                               commProfileSizes.end());
    if (sizes.empty())
      for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4)
        sizes.push_back(bytes);
    ds::report::CommProfileOptions options;
    options.sizes = sizes;
    options.repeats = commProfileRepeats;
    if (llvm::Error err =
            ds::report::writeCommProfile(commProfilePath, options)) {
      llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
    return 0;
  }
  if (configPath.empty()) {
    if (!modelPath.empty()) {
      llvm::errs() << "error: --model needs --config FILE (the partition and "
                      "the schedule come from its pipeline section)\n";
      return 1;
    }
    if (printJson) {
      llvm::errs() << "error: --json needs --config FILE\n";
      return 1;
    }
    printVersions();
    return 0;
  }

  ds::config::ResolveOptions options;
  options.worldSize = worldSize;
  llvm::Expected<ds::config::Config> config =
      ds::config::loadConfig(configPath, options);
  if (!config) {
    llvm::errs() << "error: " << llvm::toString(config.takeError()) << "\n";
    return 1;
  }
  std::optional<PipelineReport> pipeline;
  if (!modelPath.empty()) {
    llvm::Expected<PipelineReport> report = reportPipeline(modelPath, *config);
    if (!report) {
      llvm::errs() << "error: " << llvm::toString(report.takeError()) << "\n";
      return 1;
    }
    pipeline = std::move(*report);
  }
  std::optional<FitReport> fit;
  if (!modelPath.empty()) {
    llvm::Expected<FitReport> report =
        reportFit(configPath, modelPath, *config);
    if (!report) {
      llvm::errs() << "error: " << llvm::toString(report.takeError()) << "\n";
      return 1;
    }
    fit = std::move(*report);
  }
  if (printJson) {
    nlohmann::json j = ds::config::toJson(*config);
    if (pipeline)
      addToJson(*pipeline, j["pipeline"]);
    // The group sizes come from the config alone; the layout needs the
    // model, cut by ds-tensor-parallel.
    j["tensor_parallel"]["size"] = config->tensorParallel.autotpSize;
    j["sequence_parallel"] = {{"size", config->sequenceParallelSize}};
    if (!modelPath.empty()) {
      llvm::Expected<TensorParallelReport> tp =
          reportTensorParallel(modelPath, *config);
      if (!tp) {
        llvm::errs() << "error: " << llvm::toString(tp.takeError()) << "\n";
        return 1;
      }
      addToJson(*tp, j["tensor_parallel"]);
    }
    if (fit)
      j["fit"] = toJson(*fit);
    llvm::outs() << j.dump(2) << "\n";
  } else {
    llvm::outs() << ds::config::summarize(*config);
    if (pipeline)
      llvm::outs() << summarize(*pipeline, *config);
    if (fit)
      llvm::outs() << summarize(*fit);
  }
  return 0;
}
