//===- TokensTarget.cpp - uint16 token files ------------------------------===//
#include "FuzzTargets.h"

#include "ds/Driver/Data.h"

#include <vector>

using namespace ::ds::driver;

int ds::fuzz::fuzzTokens(const uint8_t *data, size_t size) {
  std::string path = scratchDir() + "/tokens.bin";
  if (!writeFile(path, {reinterpret_cast<const char *>(data), size}))
    return 0;
  auto tokens = TokenData::load(path);
  if (!tokens) {
    llvm::consumeError(tokens.takeError());
    return 0;
  }
  // What ds-train does next: check the windows fit, then draw batches.
  const int64_t seqLen = 4, batch = 2;
  if (llvm::Error err = tokens->checkFits(seqLen, 65536, path)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  std::vector<int64_t> inputs(batch * seqLen), targets(batch * seqLen);
  for (DataOrder order : {DataOrder::Sequential, DataOrder::Shuffled})
    for (int64_t step = 0; step < 3; ++step)
      // An id outside the vocabulary is found as its window is read.
      if (llvm::Error err =
              tokens->fillBatch(step, batch, 0, batch, seqLen, order,
                                /*seed=*/7, inputs.data(), targets.data())) {
        llvm::consumeError(std::move(err));
        return 0;
      }
  return 0;
}
