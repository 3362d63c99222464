//===- Data.h - Token streams, sample arrays and the sample order -*- C++
//-*-===//
//
// The sample order is part of ds's contract, not an implementation detail:
// multi-rank runs must see exactly the samples a single-rank run sees, split
// by rank, and resumed runs must continue the stream. docs/data.md states it.
// Files are memory-mapped, never read whole: a step reads only its samples.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_DATA_H
#define DS_DRIVER_DATA_H

#include "ds/Execution/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ds::driver {

enum class DataOrder { Sequential, Shuffled };

/// Global sample `j` of optimizer step `step` among `n` samples, for
/// `globalBatch` samples per step: (step * globalBatch + j) mod n, passed
/// through a seeded bijection of [0, n) when shuffled.
int64_t sampleIndex(int64_t step, int64_t globalBatch, int64_t j, int64_t n,
                    DataOrder order, uint64_t seed);

/// A read-only stream of token ids.
class TokenData {
public:
  /// A `.txt` file is byte-level text (each byte one token, vocab 256); a
  /// `.bin` file is little-endian uint16 tokens; a `.npy` file a 1-D array
  /// of uint16, uint32, int32 or int64 tokens. The ids of .bin and .npy
  /// files are checked against the model's vocabulary as windows are read.
  /// Anything else, an unreadable or malformed file, is an error.
  static llvm::Expected<TokenData> load(llvm::StringRef path);

  /// Uniform random tokens in [0, vocab) from `seed`, for tests and smoke runs.
  static TokenData synthetic(int64_t numTokens, int64_t vocab, uint64_t seed);

  int64_t size() const { return count; }
  /// The vocabulary the format fixes (256 for text, `vocab` when
  /// synthetic); 0 when only the model's bounds the ids.
  int64_t vocab() const { return vocabSize; }
  /// Token `i`, 0 <= i < size().
  int64_t at(int64_t i) const;

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
  /// the window's first seqLen tokens, targets the last seqLen. An id at or
  /// above the limit checkFits set is an error.
  llvm::Error fillBatch(int64_t step, int64_t globalBatch, int64_t firstSample,
                        int64_t numSamples, int64_t seqLen, DataOrder order,
                        uint64_t seed, int64_t *inputs, int64_t *targets) const;

  /// Error unless the stream holds at least one window of seqLen + 2 tokens
  /// and its vocabulary (when the format fixes one) is within `modelVocab`;
  /// later windows are checked against `modelVocab` as they are read.
  llvm::Error checkFits(int64_t seqLen, int64_t modelVocab,
                        llvm::StringRef what);

private:
  enum class Elem { U8, U16, U32, I32, I64 };
  std::shared_ptr<llvm::MemoryBuffer> file;
  std::vector<int32_t> owned; ///< synthetic tokens
  const char *base = nullptr;
  Elem elem = Elem::I32;
  int64_t count = 0, vocabSize = 0, limit = 0;
  std::string source;
};

/// One row per sample of a `.npy` file ([N, dims...]) that feeds a batch
/// argument of per-sample shape [dims...]: a classifier's inputs and
/// labels, a regression's targets.
class SampleArray {
public:
  /// Maps `path`; checks its dtype against `dtype` (f32 from float32 or
  /// float64; i64 from signed or unsigned integers) and its row shape
  /// against `rowShape`.
  static llvm::Expected<SampleArray> open(llvm::StringRef path,
                                          llvm::StringRef argName,
                                          mlir::ds::exec::DType dtype,
                                          llvm::ArrayRef<int64_t> rowShape);

  int64_t samples() const { return rows; }
  const std::string &path() const { return source; }
  /// Copies row `row` into `out` (one sample of the argument's dtype).
  void copyRow(int64_t row, void *out) const;

private:
  std::shared_ptr<llvm::MemoryBuffer> file;
  const char *base = nullptr;
  std::string kind, source;
  unsigned itemSize = 0;
  mlir::ds::exec::DType dtype = mlir::ds::exec::DType::F32;
  int64_t rows = 0, rowElements = 0;
};

} // namespace ds::driver

#endif // DS_DRIVER_DATA_H
