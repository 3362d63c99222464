//===- CudaToolkit.cpp - Find ptxas, fatbinary and libdevice --------------===//
#include "ds/Target/CudaToolkit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

#include <cstdlib>
#include <optional>

using namespace ds::target;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

/// stdout and stderr of `program args...`, or nullopt if it did not run.
std::optional<std::string> capture(llvm::StringRef program,
                                   llvm::ArrayRef<llvm::StringRef> args) {
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("ds-cuda-probe", "txt", out))
    return std::nullopt;
  llvm::FileRemover remove(out);
  std::vector<llvm::StringRef> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, out.str(),
                                                out.str()};
  std::string message;
  llvm::sys::ExecuteAndWait(program, argv, /*Env=*/std::nullopt, redirects,
                            /*SecondsToWait=*/30, 0, &message);
  auto buffer = llvm::MemoryBuffer::getFile(out);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

} // namespace

llvm::Expected<CudaToolkit> ds::target::findCudaToolkit() {
  CudaToolkit kit;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    const char *value = std::getenv(var);
    if (value && *value) {
      kit.root = value;
      kit.from = var;
      break;
    }
  }
  if (kit.root.empty()) {
    if (auto ptxas = llvm::sys::findProgramByName("ptxas")) {
      llvm::SmallString<128> real;
      if (llvm::sys::fs::real_path(*ptxas, real))
        real = *ptxas;
      kit.root =
          llvm::sys::path::parent_path(llvm::sys::path::parent_path(real))
              .str();
      kit.from = "ptxas on PATH";
    } else {
      kit.root = "/usr/local/cuda";
      kit.from = "the default location";
    }
  }
  auto in = [&](llvm::StringRef relative) {
    llvm::SmallString<128> p(kit.root);
    llvm::sys::path::append(p, relative);
    return p.str().str();
  };
  kit.ptxas = in("bin/ptxas");
  kit.fatbinary = in("bin/fatbinary");
  kit.libdevice = in("nvvm/libdevice/libdevice.10.bc");
  for (const std::string &file : {kit.ptxas, kit.fatbinary, kit.libdevice})
    if (!llvm::sys::fs::exists(file))
      return makeError("no CUDA toolkit for a GPU target: " + file +
                       " does not exist (toolkit at " + kit.root + ", from " +
                       kit.from +
                       "); install the CUDA toolkit or set CUDA_HOME to it");

  std::optional<std::string> version = capture(kit.ptxas, {"--version"});
  llvm::SmallVector<llvm::StringRef> match;
  if (!version ||
      !llvm::Regex("V([0-9]+\\.[0-9]+\\.[0-9]+)").match(*version, &match))
    return makeError(kit.ptxas + " --version does not run or print a "
                                 "version; is the CUDA toolkit complete?");
  kit.version = match[1].str();
  // ptxas --help lists the allowed --gpu-name values; the real ones are
  // sm_<digits> (compute_* are virtual, *a/*f are family variants).
  std::optional<std::string> help = capture(kit.ptxas, {"--help"});
  if (help) {
    llvm::Regex arch("'(sm_[0-9]+)'");
    llvm::StringRef rest = *help;
    while (arch.match(rest, &match)) {
      std::string name = match[1].str();
      if (!llvm::is_contained(kit.archs, name))
        kit.archs.push_back(name);
      rest = rest.substr(rest.find(match[0]) + match[0].size());
    }
  }
  if (kit.archs.empty())
    return makeError(kit.ptxas + " --help lists no sm_* architecture");
  llvm::sort(kit.archs, [](const std::string &a, const std::string &b) {
    int x = 0, y = 0;
    llvm::StringRef(a).drop_front(3).getAsInteger(10, x);
    llvm::StringRef(b).drop_front(3).getAsInteger(10, y);
    return x < y;
  });
  return kit;
}

llvm::Expected<GpuTarget> ds::target::parseGpuTarget(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> match;
  if (!llvm::Regex("^sm_([1-9][0-9]?)([0-9])$").match(name, &match))
    return makeError("'" + name +
                     "' is not a target: use cpu or sm_<major><minor>, "
                     "e.g. sm_90 for H100/H200");
  GpuTarget target;
  target.chip = name.str();
  match[1].getAsInteger(10, target.major);
  match[2].getAsInteger(10, target.minor);
  return target;
}

llvm::Expected<GpuTarget>
ds::target::resolveGpuTarget(llvm::StringRef name, const CudaToolkit &toolkit) {
  auto target = parseGpuTarget(name);
  if (!target)
    return target.takeError();
  if (!llvm::is_contained(toolkit.archs, target->chip))
    return makeError("the CUDA toolkit " + toolkit.version + " at " +
                     toolkit.root + " does not build for " + target->chip +
                     " (it builds for " + llvm::join(toolkit.archs, ", ") +
                     ")");
  return target;
}
