//===- Npy.cpp - NumPy .npy reader and writer
//------------------------------===//
//
// Format: "\x93NUMPY", major, minor, header length (u16 for 1.x, u32 for
// 2.x/3.x, little-endian), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a newline so the data starts at a multiple of 64 bytes.
//
//===----------------------------------------------------------------------===//
#include "ds/Execution/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir::ds::exec;
using llvm::createStringError;
using llvm::StringRef;

namespace {

struct DescrEntry {
  const char *descr;
  DType dtype;
};
const DescrEntry kDescrs[] = {
    {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16},
    {"b1", DType::I1},  {"i1", DType::I8},  {"i2", DType::I16},
    {"i4", DType::I32}, {"i8", DType::I64},
};

llvm::Error bad(StringRef what, const llvm::Twine &msg) {
  return createStringError(llvm::inconvertibleErrorCode(),
                           (what + ": " + msg).str());
}

// The value of 'key' in the header dict, up to the next top-level comma.
// A shape as numpy writes it in a header: (4,8), (5,), ().
std::string pythonShape(llvm::ArrayRef<int64_t> shape) {
  std::string out = "(";
  for (auto [i, d] : llvm::enumerate(shape))
    out += (i ? "," : "") + std::to_string(d);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::optional<StringRef> dictValue(StringRef header, StringRef key) {
  std::string quoted = ("'" + key + "'").str();
  size_t pos = header.find(quoted);
  if (pos == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(pos + quoted.size()).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  if (rest.starts_with("(")) {
    size_t close = rest.find(')');
    if (close == StringRef::npos)
      return std::nullopt;
    return rest.take_front(close + 1);
  }
  size_t end = rest.find_first_of(",}");
  return rest.take_front(end).rtrim();
}

} // namespace

llvm::Expected<NpyHeader> mlir::ds::exec::parseNpyHeader(StringRef bytes,
                                                         StringRef what) {
  if (!bytes.starts_with("\x93NUMPY") || bytes.size() < 10)
    return bad(what, "not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad(what, "truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                   << (8 * i);
    headerStart = 12;
  } else {
    return bad(what, "unsupported .npy format version " + llvm::Twine(major));
  }
  if (bytes.size() < headerStart + headerLen)
    return bad(what, "truncated header");
  StringRef header = bytes.substr(headerStart, headerLen);

  std::optional<StringRef> descr = dictValue(header, "descr");
  std::optional<StringRef> fortran = dictValue(header, "fortran_order");
  std::optional<StringRef> shapeText = dictValue(header, "shape");
  if (!descr || !fortran || !shapeText)
    return bad(what, "header lacks descr, fortran_order or shape: " + header);
  if (*fortran != "False")
    return bad(what, "Fortran-order arrays are not supported; save with "
                     "numpy.ascontiguousarray");
  StringRef d = descr->trim("'\"");
  if (d.size() < 2 || d.front() == '>')
    return bad(what, "dtype " + *descr + " is not little-endian");
  NpyHeader out;
  out.kind =
      d.drop_front(d.front() == '<' || d.front() == '|' || d.front() == '=' ? 1
                                                                            : 0)
          .str();
  if (out.kind.size() < 2 ||
      StringRef(out.kind).drop_front().getAsInteger(10, out.itemSize) ||
      !out.itemSize)
    return bad(what, "unsupported dtype " + *descr);
  StringRef dims = shapeText->trim("()");
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t v;
    if (p.getAsInteger(10, v) || v < 0)
      return bad(what, "bad shape " + *shapeText);
    out.shape.push_back(v);
  }
  out.dataOffset = headerStart + headerLen;
  return out;
}

llvm::Expected<Tensor> mlir::ds::exec::parseNpy(StringRef bytes,
                                                StringRef what) {
  auto header = parseNpyHeader(bytes, what);
  if (!header)
    return header.takeError();
  std::optional<DType> dtype;
  for (const DescrEntry &e : kDescrs)
    if (header->kind == e.descr)
      dtype = e.dtype;
  if (!dtype)
    return bad(what, "unsupported dtype " + header->kind +
                         " (supported: f4 f8 f2 b1 i1 i2 i4 i8)");
  // The header may claim any shape: the bytes must be there before
  // anything is allocated.
  uint64_t expected = dtypeBytes(*dtype);
  for (int64_t v : header->shape)
    if (__builtin_mul_overflow(expected, uint64_t(v), &expected))
      return bad(what, "shape " + pythonShape(header->shape) +
                           " holds more bytes than a file can");
  size_t dataStart = header->dataOffset;
  if (bytes.size() - dataStart != expected)
    return bad(what,
               llvm::Twine(bytes.size() - dataStart) + " data bytes for " +
                   Tensor::borrow(*dtype, header->shape, nullptr).typeString() +
                   " (" + llvm::Twine(expected) + " expected)");
  Tensor t = Tensor::zeros(*dtype, header->shape);
  if (expected) // an empty tensor may have no buffer
    std::memcpy(t.data(), bytes.data() + dataStart,
                static_cast<size_t>(t.byteSize()));
  return t;
}

llvm::Expected<Tensor> mlir::ds::exec::readNpy(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return bad(path, "cannot read: " + buffer.getError().message());
  return parseNpy((*buffer)->getBuffer(), path);
}

std::string mlir::ds::exec::serializeNpy(const Tensor &tensor) {
  const char *kind = nullptr;
  for (const DescrEntry &e : kDescrs)
    if (e.dtype == tensor.dtype())
      kind = e.descr;
  std::string shape;
  for (auto [i, d] : llvm::enumerate(tensor.shape()))
    shape += (i ? ", " : "") + std::to_string(d);
  if (tensor.rank() == 1)
    shape += ","; // a Python 1-tuple
  bool byteSized = tensor.dtype() == DType::I1 || tensor.dtype() == DType::I8;
  std::string dict = std::string("{'descr': '") + (byteSized ? "|" : "<") +
                     kind + "', 'fortran_order': False, 'shape': (" + shape +
                     "), }";
  // Pad so magic(6) + version(2) + len(2) + header is a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  out += dict;
  out.append(static_cast<const char *>(tensor.data()),
             static_cast<size_t>(tensor.byteSize()));
  return out;
}

llvm::Error mlir::ds::exec::writeNpy(StringRef path, const Tensor &tensor) {
  if (tensor.dtype() == DType::BF16)
    return bad(path, "bf16 has no NumPy dtype");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return bad(path, "cannot write: " + ec.message());
  os << serializeNpy(tensor);
  os.close();
  if (os.has_error())
    return bad(path, "write failed: " + os.error().message());
  return llvm::Error::success();
}
