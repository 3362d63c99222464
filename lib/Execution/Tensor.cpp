//===- Tensor.cpp - host buffers for compiled code ------------------------===//
//
// No MLIR here: the artifact runner links this file without the compiler.
//
//===----------------------------------------------------------------------===//
#include "ds/Execution/Tensor.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

using namespace mlir::ds::exec;

int64_t mlir::ds::exec::dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::I1:
  case DType::I8:
    return 1;
  }
  llvm_unreachable("unknown dtype");
}

llvm::StringRef mlir::ds::exec::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  llvm_unreachable("unknown dtype");
}

std::string mlir::ds::exec::typeString(DType dtype,
                                       llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : shape) {
    if (d == kDynamicDim)
      os << "?";
    else
      os << d;
    os << "x";
  }
  os << dtypeName(dtype) << ">";
  return s;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

namespace {
// Set once by a loader before the tensors of a step exist; read on every
// allocation, from any thread.
std::atomic<void *(*)(int64_t)> allocateFn{nullptr};
std::atomic<void (*)(void *)> releaseFn{nullptr};
} // namespace

TensorAllocator Tensor::setAllocator(TensorAllocator allocator) {
  TensorAllocator previous{allocateFn.exchange(allocator.allocate),
                           releaseFn.exchange(allocator.release)};
  return previous;
}

Tensor Tensor::zeros(DType dtype, llvm::ArrayRef<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_.assign(shape.begin(), shape.end());
  // 64-byte aligned like the compiler's own allocations; never zero bytes
  // so data() is non-null for empty tensors too.
  size_t bytes = static_cast<size_t>(t.byteSize());
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  // calloc, aligned by hand: memory fresh from the kernel (a large block)
  // is zero already and stays untouched here; a model's states are GBs,
  // whose pages then fault in where they are first written, not twice.
  void *raw = nullptr;
  void *(*allocate)(int64_t) = allocateFn.load();
  void (*release)(void *) = releaseFn.load();
  if (allocate && release) {
    raw = allocate(static_cast<int64_t>(rounded + 64));
    if (raw)
      std::memset(raw, 0, rounded + 64);
  } else {
    raw = std::calloc(rounded + 64, 1);
    release = std::free;
  }
  if (!raw)
    llvm::report_fatal_error("ds::exec::Tensor: out of memory");
  auto address = reinterpret_cast<uintptr_t>(raw);
  t.owned_ = std::shared_ptr<void>(raw, release);
  t.data_ = reinterpret_cast<void *>((address + 63) / 64 * 64);
  return t;
}

Tensor Tensor::borrow(DType dtype, llvm::ArrayRef<int64_t> shape, void *data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_.assign(shape.begin(), shape.end());
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = zeros(dtype_, shape_);
  if (data_)
    std::memcpy(t.data_, data_, static_cast<size_t>(byteSize()));
  return t;
}

std::string Tensor::typeString() const {
  return mlir::ds::exec::typeString(dtype_, shape_);
}

void Tensor::copyIn(Tensor &t, const void *src, int64_t bytes) {
  if (bytes != t.byteSize())
    llvm::report_fatal_error(llvm::Twine("ds::exec::Tensor: ") +
                             llvm::Twine(bytes) + " bytes of data for " +
                             t.typeString());
  std::memcpy(t.data_, src, static_cast<size_t>(bytes));
}

void Tensor::checkDType(DType expected) const {
  if (expected != dtype_)
    llvm::report_fatal_error(llvm::Twine("ds::exec::Tensor: data<") +
                             dtypeName(expected) + ">() on a " + typeString());
}
