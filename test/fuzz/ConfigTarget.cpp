//===- ConfigTarget.cpp - ds_config.json -> resolved config ---------------===//
#include "FuzzTargets.h"

#include "ds/Config/Config.h"

#include "llvm/Support/Error.h"

int ds::fuzz::fuzzConfig(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  // The world sizes ds-train resolves against on one and on many ranks.
  for (int64_t worldSize : {1, 8}) {
    auto config = ::ds::config::parseConfig(text, {worldSize});
    if (!config) {
      llvm::consumeError(config.takeError());
      continue;
    }
    // What ds-train prints and records in a checkpoint.
    (void)::ds::config::toJson(*config).dump();
    (void)::ds::config::summarize(*config);
  }
  return 0;
}
