//===- HostfileTarget.cpp - ds-launch's hostfile and --include/--exclude --===//
//
// An input's first line is a filter ("+SPEC" for --include, "-SPEC" for
// --exclude, anything else none); the rest is the hostfile.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "../../tools/ds-launch/Hostfile.h"

int ds::fuzz::fuzzHostfile(const uint8_t *data, size_t size) {
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  auto [filter, text] = input.split('\n');
  auto hosts = ::ds::launch::parseHostfileText(text, "hostfile");
  if (!hosts) {
    llvm::consumeError(hosts.takeError());
    return 0;
  }
  if (filter.empty() || (filter[0] != '+' && filter[0] != '-'))
    return 0;
  auto chosen = ::ds::launch::applyFilter(*hosts, filter.drop_front(),
                                          filter[0] == '+', "hostfile");
  if (!chosen)
    llvm::consumeError(chosen.takeError());
  return 0;
}
