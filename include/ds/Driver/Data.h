//===- Data.h - Token streams and batch sampling for ds-train ----*- C++
//-*-===//
//
// The sample order is part of ds's contract, not an implementation detail:
// multi-rank runs must see exactly the samples a single-rank run sees, split
// by rank, and resumed runs must continue the stream. docs/data.md states it.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_DATA_H
#define DS_DRIVER_DATA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace ds::driver {

enum class DataOrder { Sequential, Shuffled };

/// A read-only stream of token ids.
class TokenData {
public:
  /// A `.txt` file is byte-level text (each byte one token, vocab 256); a
  /// `.bin` file is little-endian uint16 tokens (vocab = max id + 1, at
  /// least 1). Anything else, an unreadable or too small file, is an error.
  static llvm::Expected<TokenData> load(llvm::StringRef path);

  /// Uniform random tokens in [0, vocab) from `seed`, for tests and smoke runs.
  static TokenData synthetic(int64_t numTokens, int64_t vocab, uint64_t seed);

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t vocab() const { return vocabSize; }
  llvm::ArrayRef<int32_t> data() const { return tokens; }

  /// First token of global sample `j` of optimizer step `step`, for windows
  /// of `seqLen + 1` tokens and `globalBatch` samples per step:
  ///   sequential: ((step * globalBatch + j) * seqLen) mod (N - seqLen - 1)
  ///   shuffled:   the same index passed through a seeded bijection of
  ///               [0, N - seqLen - 1) first, so every start still occurs once
  ///               per pass but in a seed-dependent order.
  int64_t sampleStart(int64_t step, int64_t globalBatch, int64_t j,
                      int64_t seqLen, DataOrder order, uint64_t seed) const;

  /// Fills inputs/targets ([numSamples, seqLen] each, row-major) with global
  /// samples [firstSample, firstSample + numSamples) of `step`: inputs are
  /// the window's first seqLen tokens, targets the last seqLen.
  void fillBatch(int64_t step, int64_t globalBatch, int64_t firstSample,
                 int64_t numSamples, int64_t seqLen, DataOrder order,
                 uint64_t seed, int64_t *inputs, int64_t *targets) const;

  /// Error unless the stream holds at least one window of seqLen + 2 tokens
  /// and every token id is below `modelVocab`.
  llvm::Error checkFits(int64_t seqLen, int64_t modelVocab,
                        llvm::StringRef what) const;

private:
  std::vector<int32_t> tokens;
  int64_t vocabSize = 0;
};

} // namespace ds::driver

#endif // DS_DRIVER_DATA_H
