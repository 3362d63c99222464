//===- Data.cpp - Token streams and batch sampling for ds-train
//------------===//
#include "ds/Driver/Data.h"
#include "ds/Driver/Random.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace ds::driver;
using llvm::createStringError;

llvm::Expected<TokenData> TokenData::load(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext != ".txt" && ext != ".bin")
    return createStringError(
        "%s: unknown data format '%s'; use a .txt file (byte-level text, "
        "vocab 256) or a .bin file (little-endian uint16 tokens)",
        path.str().c_str(), ext.str().c_str());
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError("%s: cannot read data file: %s",
                             path.str().c_str(),
                             buf.getError().message().c_str());
  llvm::StringRef bytes = (*buf)->getBuffer();
  TokenData data;
  if (ext == ".txt") {
    data.tokens.reserve(bytes.size());
    for (unsigned char c : bytes)
      data.tokens.push_back(c);
    data.vocabSize = 256;
    return data;
  }
  if (bytes.size() % 2)
    return createStringError("%s: %zu bytes is not a whole number of uint16 "
                             "tokens; the file is truncated or not a token "
                             "file",
                             path.str().c_str(), bytes.size());
  data.tokens.reserve(bytes.size() / 2);
  int32_t maxId = 0;
  for (size_t i = 0; i < bytes.size(); i += 2) {
    int32_t id = static_cast<unsigned char>(bytes[i]) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8);
    data.tokens.push_back(id);
    maxId = std::max(maxId, id);
  }
  data.vocabSize = maxId + 1;
  return data;
}

TokenData TokenData::synthetic(int64_t numTokens, int64_t vocab,
                               uint64_t seed) {
  TokenData data;
  data.vocabSize = vocab;
  data.tokens.resize(numTokens);
  for (int64_t i = 0; i < numTokens; ++i)
    data.tokens[i] =
        static_cast<int32_t>(randomBits(seed, streamOf("synthetic"), i) %
                             static_cast<uint64_t>(vocab));
  return data;
}

/// A seeded bijection of [0, n): a 4-round Feistel network on the smallest
/// even bit width covering n, cycle-walking values that land outside.
static int64_t permute(int64_t x, int64_t n, uint64_t seed) {
  int bits = 2;
  while ((int64_t(1) << bits) < n)
    bits += 2;
  int half = bits / 2;
  uint64_t mask = (uint64_t(1) << half) - 1;
  uint64_t v = static_cast<uint64_t>(x);
  do {
    uint64_t left = v >> half, right = v & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      uint64_t f = randomBits(seed, streamOf("shuffle") + round, right) & mask;
      uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    v = (left << half) | right;
  } while (static_cast<int64_t>(v) >= n);
  return static_cast<int64_t>(v);
}

int64_t TokenData::sampleStart(int64_t step, int64_t globalBatch, int64_t j,
                               int64_t seqLen, DataOrder order,
                               uint64_t seed) const {
  int64_t span = size() - seqLen - 1;
  int64_t index = step * globalBatch + j;
  int64_t start = static_cast<int64_t>(
      (static_cast<unsigned __int128>(index) * seqLen) % span);
  return order == DataOrder::Sequential ? start : permute(start, span, seed);
}

void TokenData::fillBatch(int64_t step, int64_t globalBatch,
                          int64_t firstSample, int64_t numSamples,
                          int64_t seqLen, DataOrder order, uint64_t seed,
                          int64_t *inputs, int64_t *targets) const {
  for (int64_t s = 0; s < numSamples; ++s) {
    int64_t start =
        sampleStart(step, globalBatch, firstSample + s, seqLen, order, seed);
    for (int64_t t = 0; t < seqLen; ++t) {
      inputs[s * seqLen + t] = tokens[start + t];
      targets[s * seqLen + t] = tokens[start + t + 1];
    }
  }
}

llvm::Error TokenData::checkFits(int64_t seqLen, int64_t modelVocab,
                                 llvm::StringRef what) const {
  if (size() < seqLen + 2)
    return createStringError(
        "%s: %lld tokens, but one sample needs seq_len + 1 = %lld (and one "
        "more to vary the start); use a larger file or a shorter sequence",
        what.str().c_str(), (long long)size(), (long long)(seqLen + 1));
  if (vocab() > modelVocab)
    return createStringError(
        "%s: token ids go up to %lld but the model's vocab_size is %lld; "
        "use a model with vocab_size >= %lld",
        what.str().c_str(), (long long)(vocab() - 1), (long long)modelVocab,
        (long long)vocab());
  return llvm::Error::success();
}
