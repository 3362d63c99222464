//===- Data.cpp - Token streams, sample arrays and the sample order -------===//
#include "ds/Driver/Data.h"
#include "ds/Driver/Random.h"

#include "ds/Execution/Npy.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

using namespace ds::driver;
using llvm::createStringError;

namespace {
llvm::Expected<std::shared_ptr<llvm::MemoryBuffer>>
mapFile(llvm::StringRef path) {
  // Files past a few pages are mapped, not read: a step touches only the
  // pages of its samples.
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError("%s: cannot read data file: %s",
                             path.str().c_str(),
                             buf.getError().message().c_str());
  return std::shared_ptr<llvm::MemoryBuffer>(std::move(*buf));
}

std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

/// The header of a mapped .npy file whose data must hold `elements` items.
llvm::Expected<mlir::ds::exec::NpyHeader> npyHeader(llvm::StringRef bytes,
                                                    llvm::StringRef path) {
  auto header = mlir::ds::exec::parseNpyHeader(bytes, path);
  if (!header)
    return header.takeError();
  uint64_t need = header->itemSize;
  for (int64_t d : header->shape)
    need *= uint64_t(d);
  if (bytes.size() - header->dataOffset < need)
    return createStringError(
        "%s: %zu data bytes, but its header's %s array of %s needs %llu; "
        "the file is truncated",
        path.str().c_str(), bytes.size() - header->dataOffset,
        shapeText(header->shape).c_str(), header->kind.c_str(),
        (unsigned long long)need);
  return header;
}
} // namespace

llvm::Expected<TokenData> TokenData::load(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext != ".txt" && ext != ".bin" && ext != ".npy")
    return createStringError(
        "%s: unknown data format '%s'; use a .txt file (byte-level text, "
        "vocab 256), a .bin file (little-endian uint16 tokens) or a .npy "
        "file (1-D uint16, uint32, int32 or int64 tokens)",
        path.str().c_str(), ext.str().c_str());
  auto file = mapFile(path);
  if (!file)
    return file.takeError();
  TokenData data;
  data.file = std::move(*file);
  data.source = path.str();
  llvm::StringRef bytes = data.file->getBuffer();
  data.base = bytes.data();
  if (ext == ".txt") {
    data.elem = Elem::U8;
    data.count = bytes.size();
    data.vocabSize = 256;
    return data;
  }
  if (ext == ".bin") {
    if (bytes.size() % 2)
      return createStringError("%s: %zu bytes is not a whole number of "
                               "uint16 tokens; the file is truncated or not "
                               "a token file",
                               path.str().c_str(), bytes.size());
    data.elem = Elem::U16;
    data.count = bytes.size() / 2;
    return data;
  }
  auto header = npyHeader(bytes, path);
  if (!header)
    return header.takeError();
  if (header->shape.size() != 1)
    return createStringError("%s: a token corpus is a 1-D array, but this "
                             "one is %s; save the tokens flattened",
                             path.str().c_str(),
                             shapeText(header->shape).c_str());
  std::optional<Elem> elem =
      llvm::StringSwitch<std::optional<Elem>>(header->kind)
          .Case("u1", Elem::U8)
          .Case("u2", Elem::U16)
          .Case("u4", Elem::U32)
          .Case("i4", Elem::I32)
          .Case("i8", Elem::I64)
          .Default(std::nullopt);
  if (!elem)
    return createStringError("%s: token ids must be uint16, uint32, int32 or "
                             "int64, but the array holds %s",
                             path.str().c_str(), header->kind.c_str());
  data.elem = *elem;
  data.base += header->dataOffset;
  data.count = header->shape[0];
  return data;
}

int64_t TokenData::at(int64_t i) const {
  auto load = [&](auto zero) -> int64_t {
    decltype(zero) v;
    std::memcpy(&v, base + i * sizeof v, sizeof v);
    return int64_t(v);
  };
  switch (elem) {
  case Elem::U8:
    return load(uint8_t());
  case Elem::U16:
    return load(uint16_t());
  case Elem::U32:
    return load(uint32_t());
  case Elem::I32:
    return load(int32_t());
  case Elem::I64:
    return load(int64_t());
  }
  return 0;
}

TokenData TokenData::synthetic(int64_t numTokens, int64_t vocab,
                               uint64_t seed) {
  TokenData data;
  data.vocabSize = vocab;
  data.source = "synthetic tokens";
  data.owned.resize(numTokens);
  for (int64_t i = 0; i < numTokens; ++i)
    data.owned[i] =
        static_cast<int32_t>(randomBits(seed, streamOf("synthetic"), i) %
                             static_cast<uint64_t>(vocab));
  data.base = reinterpret_cast<const char *>(data.owned.data());
  data.count = numTokens;
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

int64_t ds::driver::sampleIndex(int64_t step, int64_t globalBatch, int64_t j,
                                int64_t n, DataOrder order, uint64_t seed) {
  int64_t index = static_cast<int64_t>(
      static_cast<unsigned __int128>(step * globalBatch + j) % n);
  return order == DataOrder::Sequential ? index : permute(index, n, seed);
}

llvm::Error TokenData::fillBatch(int64_t step, int64_t globalBatch,
                                 int64_t firstSample, int64_t numSamples,
                                 int64_t seqLen, DataOrder order, uint64_t seed,
                                 int64_t *inputs, int64_t *targets) const {
  for (int64_t s = 0; s < numSamples; ++s) {
    int64_t start =
        sampleStart(step, globalBatch, firstSample + s, seqLen, order, seed);
    for (int64_t t = 0; t <= seqLen; ++t) {
      int64_t id = at(start + t);
      if (id < 0 || (limit > 0 && id >= limit))
        return createStringError(
            "%s: the token at position %lld is %lld, outside the model's "
            "vocabulary [0, "
            "%lld); the file was tokenized for another model",
            source.c_str(), (long long)(start + t), (long long)id,
            (long long)limit);
      if (t < seqLen)
        inputs[s * seqLen + t] = id;
      if (t > 0)
        targets[s * seqLen + t - 1] = id;
    }
  }
  return llvm::Error::success();
}

llvm::Error TokenData::checkFits(int64_t seqLen, int64_t modelVocab,
                                 llvm::StringRef what) {
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
  limit = modelVocab;
  return llvm::Error::success();
}

llvm::Expected<SampleArray>
SampleArray::open(llvm::StringRef path, llvm::StringRef argName,
                  mlir::ds::exec::DType dtype,
                  llvm::ArrayRef<int64_t> rowShape) {
  using mlir::ds::exec::DType;
  if (llvm::sys::path::extension(path) != ".npy")
    return createStringError("--batch %s=%s: per-sample data is a .npy file "
                             "(one row per sample)",
                             argName.str().c_str(), path.str().c_str());
  auto file = mapFile(path);
  if (!file)
    return file.takeError();
  llvm::StringRef bytes = (*file)->getBuffer();
  auto header = npyHeader(bytes, path);
  if (!header)
    return header.takeError();
  SampleArray out;
  out.file = std::move(*file);
  out.source = path.str();
  out.kind = header->kind;
  out.itemSize = header->itemSize;
  out.dtype = dtype;
  out.base = bytes.data() + header->dataOffset;
  llvm::ArrayRef<int64_t> shape = header->shape;
  if (shape.empty() || shape.drop_front() != rowShape)
    return createStringError(
        "%s: an array %s, but batch argument \"%s\" takes samples of shape "
        "%s: the file must be %s (one row per sample)",
        path.str().c_str(), shapeText(shape).c_str(), argName.str().c_str(),
        shapeText(rowShape).c_str(),
        ("[samples" +
         (rowShape.empty() ? "]" : ", " + shapeText(rowShape).substr(1)))
            .c_str());
  out.rows = shape[0];
  out.rowElements = 1;
  for (int64_t d : rowShape)
    out.rowElements *= d;
  bool isFloat = out.kind == "f4" || out.kind == "f8";
  bool isInt =
      llvm::is_contained({"i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"},
                         llvm::StringRef(out.kind));
  if (dtype == DType::F32 ? !isFloat : dtype == DType::I64 ? !isInt : true)
    return createStringError(
        "%s: the array holds %s, but batch argument \"%s\" is %s; give %s",
        path.str().c_str(), out.kind.c_str(), argName.str().c_str(),
        mlir::ds::exec::dtypeName(dtype).str().c_str(),
        dtype == DType::F32   ? "float32 or float64 values"
        : dtype == DType::I64 ? "integer values (e.g. int64 class labels)"
                              : "an f32 or i64 batch argument");
  if (out.rows < 1)
    return createStringError("%s: no samples (the array has 0 rows)",
                             path.str().c_str());
  return out;
}

void SampleArray::copyRow(int64_t row, void *out) const {
  const char *src = base + row * rowElements * itemSize;
  auto convert = [&](auto zero, auto *dst) {
    for (int64_t i = 0; i < rowElements; ++i) {
      decltype(zero) v;
      std::memcpy(&v, src + i * sizeof v, sizeof v);
      dst[i] = static_cast<std::remove_pointer_t<decltype(dst)>>(v);
    }
  };
  if (dtype == mlir::ds::exec::DType::F32) {
    auto *dst = static_cast<float *>(out);
    if (kind == "f4")
      std::memcpy(dst, src, rowElements * sizeof(float));
    else
      convert(double(), dst);
    return;
  }
  auto *dst = static_cast<int64_t *>(out);
  switch (kind[0] == 'u' ? -int(itemSize) : int(itemSize)) {
  case 1:
    return convert(int8_t(), dst);
  case 2:
    return convert(int16_t(), dst);
  case 4:
    return convert(int32_t(), dst);
  case 8:
    return convert(int64_t(), dst);
  case -1:
    return convert(uint8_t(), dst);
  case -2:
    return convert(uint16_t(), dst);
  case -4:
    return convert(uint32_t(), dst);
  case -8:
    return convert(uint64_t(), dst);
  }
}
