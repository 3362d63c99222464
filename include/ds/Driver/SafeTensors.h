//===- SafeTensors.h - Read and write .safetensors files ---------*- C++
//-*-===//
//
// The interchange format for weights (--init-from, checkpoint export): an
// 8-byte little-endian header length, a JSON header mapping each tensor name
// to {dtype, shape, data_offsets}, then the raw little-endian data.
// Every structural problem is reported with the file and tensor it concerns.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_SAFETENSORS_H
#define DS_DRIVER_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ds::driver {

struct SafeTensorInfo {
  std::string name;
  std::string dtype; // "F32", "BF16", "F16", "I64", "I32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // byte range within the data section
  int64_t numElements() const;
};

/// Bytes per element of a safetensors dtype name, 0 if unknown.
unsigned safeTensorsDTypeSize(llvm::StringRef dtype);

class SafeTensorsFile {
public:
  static llvm::Expected<SafeTensorsFile> open(llvm::StringRef path);

  llvm::ArrayRef<SafeTensorInfo> tensors() const { return infos; }
  const SafeTensorInfo *find(llvm::StringRef name) const;
  const std::map<std::string, std::string> &metadata() const { return meta; }
  llvm::StringRef path() const { return filePath; }

  /// The tensor's raw bytes.
  llvm::StringRef raw(const SafeTensorInfo &info) const;

  /// The tensor as f32 (F32, BF16 and F16 convert exactly).
  llvm::Expected<std::vector<float>> readF32(llvm::StringRef name) const;

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint64_t dataOffset = 0;
  std::vector<SafeTensorInfo> infos;
  std::map<std::string, std::string> meta;
};

/// The tensors of a weights checkpoint that may span files, read as one:
/// a .safetensors file, a Hugging Face sharded checkpoint's index
/// (model.safetensors.index.json, {"weight_map": {tensor: shard file}}), or
/// a directory holding model.safetensors or that index.
class SafeTensorsCheckpoint {
public:
  static llvm::Expected<SafeTensorsCheckpoint> open(llvm::StringRef path);

  const SafeTensorInfo *find(llvm::StringRef name) const;
  /// The tensor as f32, from whichever file holds it.
  llvm::Expected<std::vector<float>> readF32(llvm::StringRef name) const;

private:
  std::vector<SafeTensorsFile> files;
  std::map<std::string, size_t, std::less<>> shardOf;
};

struct SafeTensorView {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` (in the given order) with optional string metadata.
llvm::Error
writeSafeTensors(llvm::StringRef path, llvm::ArrayRef<SafeTensorView> tensors,
                 const std::map<std::string, std::string> &meta = {});

/// bf16/f16 bit patterns to float (exact).
float bf16ToFloat(uint16_t bits);
float f16ToFloat(uint16_t bits);

/// float to bf16/f16 bit patterns, rounded to nearest even as arith.truncf
/// rounds (nan stays nan).
uint16_t floatToBF16(float value);
uint16_t floatToF16(float value);

} // namespace ds::driver

#endif // DS_DRIVER_SAFETENSORS_H
