//===- ds-fuzz-replay.cpp - Replays fuzz inputs without libFuzzer ---------===//
//
// ds-fuzz-replay TARGET PATH...: passes every file (folders: every file in
// them) through TARGET's entry point, the function the libFuzzer binary
// calls. A crash is a crash here too; in a sanitizer build so is a leak or
// undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <vector>

using namespace ds::fuzz;

static bool collect(llvm::StringRef path, std::vector<std::string> &files) {
  if (!llvm::sys::fs::is_directory(path)) {
    if (!llvm::sys::fs::exists(path))
      return false;
    files.push_back(path.str());
    return true;
  }
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
       it != end && !ec; it.increment(ec))
    // Dot files (.keep) hold a folder in git, not an input.
    if (!llvm::sys::fs::is_directory(it->path()) &&
        !llvm::sys::path::filename(it->path()).starts_with("."))
      files.push_back(it->path());
  return !ec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    llvm::errs() << "usage: ds-fuzz-replay TARGET PATH...\ntargets:";
    for (const Target &t : targets())
      llvm::errs() << " " << t.name;
    llvm::errs() << "\n";
    return 2;
  }
  const Target *target = llvm::find_if(targets(), [&](const Target &t) {
    return llvm::StringRef(t.name) == argv[1];
  });
  if (target == targets().end()) {
    llvm::errs() << "ds-fuzz-replay: no target '" << argv[1]
                 << "' (run without arguments for the list)\n";
    return 2;
  }
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i)
    if (!collect(argv[i], files)) {
      llvm::errs() << "ds-fuzz-replay: cannot read " << argv[i] << "\n";
      return 2;
    }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf) {
      llvm::errs() << "ds-fuzz-replay: cannot read " << file << "\n";
      return 2;
    }
    llvm::StringRef bytes = (*buf)->getBuffer();
    // A copy of exactly the input's size, so an overread is caught.
    std::vector<uint8_t> input(bytes.begin(), bytes.end());
    target->entry(input.data(), input.size());
  }
  llvm::outs() << target->name << ": " << files.size() << " inputs replayed\n";
  return 0;
}
