//===- SafeTensors.cpp - Read and write .safetensors files
//-----------------===//
#include "ds/Driver/SafeTensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

using namespace ds::driver;
using llvm::createStringError;

int64_t SafeTensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

unsigned ds::driver::safeTensorsDTypeSize(llvm::StringRef dtype) {
  return llvm::StringSwitch<unsigned>(dtype)
      .Cases({"F64", "I64", "U64"}, 8)
      .Cases({"F32", "I32", "U32"}, 4)
      .Cases({"F16", "BF16", "I16", "U16"}, 2)
      .Cases({"I8", "U8", "BOOL"}, 1)
      .Default(0);
}

float ds::driver::bf16ToFloat(uint16_t bits) {
  uint32_t w = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t ds::driver::floatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // nan: keep it a (quiet) nan
    return uint16_t((bits >> 16) | 0x40);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

uint16_t ds::driver::floatToF16(float value) {
  _Float16 h = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float ds::driver::f16ToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f,
           mant = h & 0x3ffu, w;
  if (exp == 0x1f) {
    w = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      w = sign;
    } else { // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      w = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    w = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

llvm::Expected<SafeTensorsFile> SafeTensorsFile::open(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError("%s: cannot read: %s", path.str().c_str(),
                             buf.getError().message().c_str());
  SafeTensorsFile file;
  file.filePath = path.str();
  file.buffer = std::move(*buf);
  llvm::StringRef bytes = file.buffer->getBuffer();
  auto fail = [&](const llvm::Twine &why) -> llvm::Error {
    return createStringError(path + ": not a valid safetensors file: " + why);
  };
  if (bytes.size() < 8)
    return fail("shorter than the 8-byte header length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[i]);
  if (headerLen > bytes.size() - 8)
    return fail("header length " + llvm::Twine(headerLen) +
                " runs past the end of the file (" + llvm::Twine(bytes.size()) +
                " bytes); is it truncated?");
  file.dataOffset = 8 + headerLen;
  uint64_t dataSize = bytes.size() - file.dataOffset;
  nlohmann::json header = nlohmann::json::parse(
      bytes.substr(8, headerLen).begin(), bytes.substr(8, headerLen).end(),
      nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return fail("the header is not a JSON object");
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        return fail("__metadata__ is not an object");
      for (auto &[k, v] : entry.items())
        if (v.is_string())
          file.meta[k] = v.get<std::string>();
      continue;
    }
    auto bad = [&](const llvm::Twine &why) {
      return fail("tensor \"" + name + "\": " + why);
    };
    if (!entry.is_object() || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      return bad("needs dtype (string), shape (array) and data_offsets "
                 "([begin, end])");
    SafeTensorInfo info;
    info.name = name;
    info.dtype = entry["dtype"].get<std::string>();
    unsigned elt = safeTensorsDTypeSize(info.dtype);
    if (!elt)
      return bad("unknown dtype " + info.dtype);
    // A header may claim any shape: its byte count is checked against the
    // file before anything is allocated from it.
    uint64_t shapeBytes = elt;
    for (auto &d : entry["shape"]) {
      if (!d.is_number_unsigned())
        return bad("shape entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (__builtin_mul_overflow(shapeBytes, dim, &shapeBytes) ||
          shapeBytes > uint64_t(INT64_MAX))
        return bad("shape " + llvm::Twine(entry["shape"].dump()) +
                   " holds more bytes than a file can");
      info.shape.push_back(int64_t(dim));
    }
    for (auto &o : entry["data_offsets"])
      if (!o.is_number_unsigned())
        return bad("data_offsets must be non-negative integers");
    info.begin = entry["data_offsets"][0].get<uint64_t>();
    info.end = entry["data_offsets"][1].get<uint64_t>();
    if (info.begin > info.end || info.end > dataSize)
      return bad("data_offsets [" + llvm::Twine(info.begin) + ", " +
                 llvm::Twine(info.end) + "] lie outside the " +
                 llvm::Twine(dataSize) +
                 "-byte data section; is it truncated?");
    if (info.end - info.begin != shapeBytes)
      return bad("holds " + llvm::Twine(info.end - info.begin) +
                 " bytes but its shape and dtype need " +
                 llvm::Twine(shapeBytes));
    file.infos.push_back(std::move(info));
  }
  // Keep file order, so tools list tensors the way they were written.
  std::sort(file.infos.begin(), file.infos.end(),
            [](const SafeTensorInfo &a, const SafeTensorInfo &b) {
              return a.begin < b.begin;
            });
  for (size_t i = 1; i < file.infos.size(); ++i)
    if (file.infos[i].begin < file.infos[i - 1].end)
      return fail("tensors \"" + file.infos[i - 1].name + "\" and \"" +
                  file.infos[i].name + "\" overlap");
  return file;
}

const SafeTensorInfo *SafeTensorsFile::find(llvm::StringRef name) const {
  for (const SafeTensorInfo &info : infos)
    if (info.name == name)
      return &info;
  return nullptr;
}

llvm::StringRef SafeTensorsFile::raw(const SafeTensorInfo &info) const {
  return buffer->getBuffer().substr(dataOffset + info.begin,
                                    info.end - info.begin);
}

llvm::Expected<std::vector<float>>
SafeTensorsFile::readF32(llvm::StringRef name) const {
  const SafeTensorInfo *info = find(name);
  if (!info)
    return createStringError("%s: no tensor named \"%s\"", filePath.c_str(),
                             name.str().c_str());
  llvm::StringRef bytes = raw(*info);
  std::vector<float> out(info->numElements());
  if (info->dtype == "F32") {
    if (!out.empty()) // an empty vector's data() may be null
      std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if (info->dtype == "BF16" || info->dtype == "F16") {
    bool bf = info->dtype == "BF16";
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + 2 * i, 2);
      out[i] = bf ? bf16ToFloat(bits) : f16ToFloat(bits);
    }
  } else {
    return createStringError("%s: tensor \"%s\" has dtype %s; parameters "
                             "must be F32, BF16 or F16",
                             filePath.c_str(), name.str().c_str(),
                             info->dtype.c_str());
  }
  return out;
}

llvm::Expected<SafeTensorsCheckpoint>
SafeTensorsCheckpoint::open(llvm::StringRef path) {
  std::string file = path.str();
  if (llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<256> single(path), index(path);
    llvm::sys::path::append(single, "model.safetensors");
    llvm::sys::path::append(index, "model.safetensors.index.json");
    if (llvm::sys::fs::exists(single))
      file = single.str().str();
    else if (llvm::sys::fs::exists(index))
      file = index.str().str();
    else
      return createStringError(
          "%s: a directory without model.safetensors or "
          "model.safetensors.index.json; give a Hugging Face checkpoint "
          "directory or a .safetensors file",
          path.str().c_str());
  }
  SafeTensorsCheckpoint ckpt;
  auto add = [&](llvm::StringRef shard) -> llvm::Error {
    auto opened = SafeTensorsFile::open(shard);
    if (!opened)
      return opened.takeError();
    for (const SafeTensorInfo &info : opened->tensors()) {
      auto [it, isNew] = ckpt.shardOf.emplace(info.name, ckpt.files.size());
      if (!isNew)
        return createStringError("%s: tensor \"%s\" is in both %s and %s",
                                 file.c_str(), info.name.c_str(),
                                 ckpt.files[it->second].path().str().c_str(),
                                 shard.str().c_str());
    }
    ckpt.files.push_back(std::move(*opened));
    return llvm::Error::success();
  };
  if (!llvm::StringRef(file).ends_with(".json")) {
    if (llvm::Error err = add(file))
      return std::move(err);
    return ckpt;
  }
  // A sharded checkpoint: the index names the file of every tensor.
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return createStringError("%s: cannot read: %s", file.c_str(),
                             buf.getError().message().c_str());
  nlohmann::json index = nlohmann::json::parse(
      (*buf)->getBuffer().begin(), (*buf)->getBuffer().end(), nullptr, false);
  auto bad = [&](const llvm::Twine &why) {
    return createStringError(file + ": not a safetensors checkpoint index (" +
                             why + ")");
  };
  if (index.is_discarded() || !index.is_object() ||
      !index.contains("weight_map") || !index["weight_map"].is_object())
    return bad("a JSON object with \"weight_map\": {tensor: file} expected");
  llvm::StringRef dir = llvm::sys::path::parent_path(file);
  std::map<std::string, std::string> shardOfTensor;
  std::vector<std::string> shards;
  for (auto &[tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      return bad("the file of \"" + tensor + "\" is not a string");
    std::string name = shard.get<std::string>();
    // Shards sit beside their index, as save_pretrained writes them.
    if (name.empty() || name.find('/') != std::string::npos)
      return bad("shard \"" + name + "\" is not a file name in the index's "
                 "directory");
    shardOfTensor[tensor] = name;
    if (!llvm::is_contained(shards, name))
      shards.push_back(name);
  }
  for (const std::string &name : shards) {
    llvm::SmallString<256> shardPath(dir);
    llvm::sys::path::append(shardPath, name);
    if (llvm::Error err = add(shardPath))
      return std::move(err);
  }
  for (const auto &[tensor, shard] : shardOfTensor) {
    auto it = ckpt.shardOf.find(tensor);
    if (it == ckpt.shardOf.end() ||
        llvm::sys::path::filename(ckpt.files[it->second].path()) != shard)
      return createStringError("%s: the index puts tensor \"%s\" in %s, "
                               "which does not hold it; the checkpoint is "
                               "incomplete or its index is from another one",
                               file.c_str(), tensor.c_str(), shard.c_str());
  }
  return ckpt;
}

const SafeTensorInfo *
SafeTensorsCheckpoint::find(llvm::StringRef name) const {
  auto it = shardOf.find(name);
  return it == shardOf.end() ? nullptr : files[it->second].find(name);
}

llvm::Expected<std::vector<float>>
SafeTensorsCheckpoint::readF32(llvm::StringRef name) const {
  auto it = shardOf.find(name);
  if (it == shardOf.end())
    return createStringError("no tensor named \"%s\"", name.str().c_str());
  return files[it->second].readF32(name);
}

llvm::Error
ds::driver::writeSafeTensors(llvm::StringRef path,
                             llvm::ArrayRef<SafeTensorView> tensors,
                             const std::map<std::string, std::string> &meta) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!meta.empty())
    header["__metadata__"] = meta;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const SafeTensorView &t : tensors) {
    unsigned elt = safeTensorsDTypeSize(t.dtype);
    if (!elt)
      return createStringError("safetensors: unknown dtype %s for \"%s\"",
                               t.dtype.c_str(), t.name.c_str());
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    sizes.push_back(n * elt);
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + n * elt}}};
    offset += n * elt;
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return createStringError("%s: cannot write: %s", path.str().c_str(),
                             ec.message().c_str());
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    os << static_cast<char>((len >> (8 * i)) & 0xff);
  os << text;
  for (size_t i = 0; i < tensors.size(); ++i)
    os.write(static_cast<const char *>(tensors[i].data), sizes[i]);
  os.close();
  if (os.has_error())
    return createStringError("%s: write failed: %s", path.str().c_str(),
                             os.error().message().c_str());
  return llvm::Error::success();
}
