//===- Hostfile.h - DeepSpeed's hostfile and --include/--exclude -*- C++
//-*-===//
//
// The launcher's inputs that come from files and flags, parsed apart from
// the launching so they can be tested and fuzzed alone.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LAUNCH_HOSTFILE_H
#define DS_LAUNCH_HOSTFILE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ds::launch {

/// The most slots one hostfile line may give a host.
inline constexpr int64_t kMaxSlots = 1 << 16;

struct Host {
  std::string name;
  int64_t slots = 0;
  unsigned line = 0;
};

/// The hosts to run on and, for each, the slot ids it contributes.
struct Resource {
  std::string host;
  std::vector<int64_t> slots;
};

/// Reads "HOST slots=N" lines (# comments, blank lines); `path` names
/// the file in errors.
llvm::Expected<std::vector<Host>> parseHostfile(llvm::StringRef path);
llvm::Expected<std::vector<Host>> parseHostfileText(llvm::StringRef text,
                                                    llvm::StringRef path);

/// The first host of a Slurm host list, each bracket at its first value:
/// "node[03-05,9],gpu1" -> "node03". "" for an empty list.
std::string firstSlurmHost(llvm::StringRef list);

/// Applies DeepSpeed's --include/--exclude syntax,
/// HOST[:SLOT[,SLOT...]][@HOST[:SLOT...]]..., to the pool.
llvm::Expected<std::vector<Resource>> applyFilter(llvm::ArrayRef<Host> pool,
                                                  llvm::StringRef spec,
                                                  bool isInclude,
                                                  llvm::StringRef poolName);

} // namespace ds::launch

#endif // DS_LAUNCH_HOSTFILE_H
