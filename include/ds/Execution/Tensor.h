//===- Tensor.h - host buffers handed to and from JIT'd functions -*- C++
//-*-===//
//
// A plain {dtype, shape, data} value: dense, row-major, either owned
// (64-byte aligned, shared between copies of the handle like a
// torch::Tensor) or borrowed from the caller (zero-copy in and out).
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_TENSOR_H
#define DS_EXECUTION_TENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Type;
} // namespace mlir

namespace mlir::ds::exec {

enum class DType : uint8_t { F32, F64, F16, BF16, I1, I8, I16, I32, I64 };

/// Bytes per element (I1 is stored as one byte, as the LLVM lowering does).
int64_t dtypeBytes(DType dtype);
/// MLIR spelling: "f32", "i64", ...
llvm::StringRef dtypeName(DType dtype);
/// The dtype of an MLIR element type (index maps to I64), if supported.
/// Defined in DSExecution (with MLIR); the rest of this header is not.
std::optional<DType> dtypeOf(mlir::Type type);

/// A dynamic size in a shape, as MLIR spells it (ShapedType::kDynamic).
inline constexpr int64_t kDynamicDim = std::numeric_limits<int64_t>::min();

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <> struct DTypeOf<double> {
  static constexpr DType value = DType::F64;
};
template <> struct DTypeOf<int8_t> {
  static constexpr DType value = DType::I8;
};
template <> struct DTypeOf<int16_t> {
  static constexpr DType value = DType::I16;
};
template <> struct DTypeOf<int32_t> {
  static constexpr DType value = DType::I32;
};
template <> struct DTypeOf<int64_t> {
  static constexpr DType value = DType::I64;
};
template <> struct DTypeOf<bool> { static constexpr DType value = DType::I1; };

/// Where owned tensors take their memory from: a GPU step's loader installs
/// device-accessible (managed) memory, so the parameters, states, batches
/// and results it is handed need no copy. Null members: calloc/free.
struct TensorAllocator {
  void *(*allocate)(int64_t bytes) = nullptr; ///< null when out of memory
  void (*release)(void *) = nullptr;
};

class Tensor {
public:
  Tensor() = default;

  /// The allocator of every owned tensor created from now on (tensors
  /// already created keep theirs); returns the previous one.
  static TensorAllocator setAllocator(TensorAllocator allocator);

  /// Owned, zero-initialized.
  static Tensor zeros(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// Borrowed: `data` must hold numElements() elements and outlive every use.
  static Tensor borrow(DType dtype, llvm::ArrayRef<int64_t> shape, void *data);
  /// Owned copy of `values` (row-major).
  template <typename T>
  static Tensor fromVector(llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<T> values) {
    Tensor t = zeros(DTypeOf<T>::value, shape);
    copyIn(t, values.data(), static_cast<int64_t>(values.size()) * sizeof(T));
    return t;
  }
  template <typename T> static Tensor scalar(T value) {
    return fromVector<T>({}, llvm::ArrayRef<T>(value));
  }

  DType dtype() const { return dtype_; }
  llvm::ArrayRef<int64_t> shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const;
  int64_t byteSize() const { return numElements() * dtypeBytes(dtype_); }
  bool isBorrowed() const { return data_ && !owned_; }
  bool isNull() const { return data_ == nullptr; }

  /// The data is mutable through any handle (handles are shallow).
  void *data() const { return data_; }
  template <typename T> T *data() const {
    checkDType(DTypeOf<T>::value);
    return static_cast<T *>(data_);
  }
  template <typename T> std::vector<T> toVector() const {
    const T *p = data<T>();
    return std::vector<T>(p, p + numElements());
  }

  /// Owned deep copy.
  Tensor clone() const;
  /// "tensor<2x3xf32>".
  std::string typeString() const;

private:
  static void copyIn(Tensor &t, const void *src, int64_t bytes);
  void checkDType(DType expected) const;

  DType dtype_ = DType::F32;
  llvm::SmallVector<int64_t, 4> shape_;
  std::shared_ptr<void> owned_;
  void *data_ = nullptr;
};

/// "tensor<2x3xf32>" for a dtype and shape (dynamic dims print as ?).
std::string typeString(DType dtype, llvm::ArrayRef<int64_t> shape);

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_TENSOR_H
