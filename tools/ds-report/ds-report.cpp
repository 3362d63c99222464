//===- ds-report.cpp - What ds was built with and what it can use ---------===//
//
// Without arguments: the versions of ds and of every library it uses, and
// which collective backends this machine could run. With --config: the
// resolved ds_config.json (--json for the machine-readable form).
//
// Optional libraries (NCCL, the CUDA driver) are probed with dlopen so that
// the report works on machines without them, the same way libdsrt will load
// them.
//
//===----------------------------------------------------------------------===//

#include "ds/Config/Config.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <optional>
#include <cstring>
#include <string>

#ifdef DS_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#ifdef DS_HAVE_OPENBLAS
extern "C" {
char *openblas_get_config(void);
int openblas_get_num_threads(void);
}
#endif

namespace cl = llvm::cl;

static cl::opt<std::string>
    configPath("config", cl::desc("ds_config.json to resolve and print"),
               cl::value_desc("file"));
static cl::opt<int64_t>
    worldSize("world-size",
              cl::desc("number of ranks to resolve the config for"),
              cl::init(1));
static cl::opt<bool>
    printJson("json",
              cl::desc("print the resolved config as JSON (with --config)"));

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

struct CudaDriver {
  bool loaded = false;
  int driverVersion = 0;
  int devices = 0;
  std::string problem;
};

CudaDriver probeCudaDriver() {
  CudaDriver result;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    result.problem = "libcuda.so.1 does not load";
    return result;
  }
  result.loaded = true;
  using Init = int (*)(unsigned);
  using IntOut = int (*)(int *);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto driverGetVersion =
      reinterpret_cast<IntOut>(dlsym(lib, "cuDriverGetVersion"));
  auto deviceGetCount =
      reinterpret_cast<IntOut>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !driverGetVersion || !deviceGetCount) {
    result.problem = "libcuda.so.1 lacks cuInit/cuDriverGetVersion";
    return result;
  }
  driverGetVersion(&result.driverVersion);
  if (int rc = init(0)) {
    result.problem = "cuInit failed with error " + std::to_string(rc);
    return result;
  }
  if (int rc = deviceGetCount(&result.devices))
    result.problem = "cuDeviceGetCount failed with error " + std::to_string(rc);
  return result;
}

std::string cudaVersion(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

void printVersions() {
  llvm::raw_ostream &os = llvm::outs();
  os << "ds " << DS_VERSION << "\n";
  os << "LLVM/MLIR " << LLVM_VERSION_STRING << "\n";

  Probe mpi = probeMpi();
  os << "MPI: " << mpi.text << "\n";
  Probe nccl = probeNccl();
  os << "NCCL: " << nccl.text << "\n";

  CudaDriver cuda = probeCudaDriver();
#ifdef DS_CUDA_TOOLKIT_VERSION
  os << "CUDA toolkit: " << DS_CUDA_TOOLKIT_VERSION << " (compiled against)\n";
#else
  os << "CUDA toolkit: not built with CUDA\n";
#endif
  os << "CUDA driver: ";
  if (cuda.loaded && cuda.driverVersion)
    os << cudaVersion(cuda.driverVersion) << ", ";
  if (cuda.problem.empty() && cuda.devices > 0)
    os << cuda.devices << " GPU(s)\n";
  else
    os << "no GPU" << (cuda.problem.empty() ? "" : " (" + cuda.problem + ")")
       << "\n";
  bool haveGpu = cuda.problem.empty() && cuda.devices > 0;

  os << "LibTorch: not linked\n";
#ifdef DS_HAVE_OPENBLAS
  os << "OpenBLAS: " << openblas_get_config() << ", "
     << openblas_get_num_threads() << " thread(s)\n";
#else
  os << "OpenBLAS: not linked\n";
#endif

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
  cl::ParseCommandLineOptions(
      argc, argv,
      "ds-report: versions, usable backends and resolved ds_config.json\n");

  if (configPath.empty()) {
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
  if (printJson)
    llvm::outs() << ds::config::toJson(*config).dump(2) << "\n";
  else
    llvm::outs() << ds::config::summarize(*config);
  return 0;
}
