//===- PackedCall.cpp - Call compiled functions on host Tensors -----------===//
#include "ds/Execution/PackedCall.h"

#include "ds/Support/CInterface.h"

#include "dsrt/dsrt.h"

using namespace mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

// Row-major contiguous memref descriptor over `t`'s data:
// {allocated, aligned, offset, sizes[rank], strides[rank]}.
std::vector<int64_t> descriptorFor(const Tensor &t) {
  std::vector<int64_t> d(3 + 2 * t.rank());
  d[0] = d[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data()));
  d[2] = 0;
  int64_t stride = 1;
  for (int64_t i = t.rank() - 1; i >= 0; --i) {
    d[3 + i] = t.shape()[i];
    d[3 + t.rank() + i] = stride;
    stride *= t.shape()[i];
  }
  return d;
}

llvm::Error checkValue(const Tensor &t, const ValueInfo &info,
                       llvm::StringRef fn, llvm::StringRef what,
                       unsigned index) {
  if (t.isNull())
    return makeError("@" + fn + ": " + what + " " + llvm::Twine(index) +
                     " is a null tensor");
  bool ok = t.dtype() == info.dtype;
  if (info.isTensor) {
    ok = ok && t.rank() == static_cast<int64_t>(info.shape.size());
    for (int64_t i = 0; ok && i < t.rank(); ++i)
      ok = info.shape[i] == kDynamicDim || info.shape[i] == t.shape()[i];
  } else {
    ok = ok && t.numElements() == 1;
  }
  if (ok)
    return llvm::Error::success();
  std::string expected = info.isTensor ? typeString(info.dtype, info.shape)
                                       : dtypeName(info.dtype).str();
  return makeError("@" + fn + ": " + what + " " + llvm::Twine(index) + " is " +
                   t.typeString() + " but the function takes " + expected);
}

} // namespace

std::string mlir::ds::exec::packedEntrySymbol(llvm::StringRef name) {
  // The JIT's packed form of a C wrapper.
  return "_mlir_" + mlir::ds::cWrapperName(name);
}

// UBSan's -fsanitize=function (part of -fsanitize=undefined) reads a type
// signature from the 8 bytes before an indirect call's target; code the JIT
// or ds-compile generated has none, and a function at the start of its
// mapping faults there (make test-sanitize, eval steps).
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
llvm::Error
mlir::ds::exec::callPacked(PackedEntry entry, const FunctionSignature &sig,
                           llvm::ArrayRef<Tensor> inputs,
                           llvm::ArrayRef<Tensor> outputs) {
  const std::string &name = sig.name;
  if (inputs.size() != sig.inputs.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig.inputs.size()) +
                     " input(s), got " + llvm::Twine(inputs.size()));
  if (outputs.size() != sig.results.size())
    return makeError("@" + name + " has " + llvm::Twine(sig.results.size()) +
                     " result(s), got " + llvm::Twine(outputs.size()) +
                     " output buffer(s)");

  size_t n = inputs.size() + outputs.size();
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPtrs;
  descriptors.reserve(n);
  descriptorPtrs.reserve(n); // stable: args point into it
  llvm::SmallVector<void *> args;
  auto pushTensor = [&](const Tensor &t) {
    descriptors.push_back(descriptorFor(t));
    descriptorPtrs.push_back(descriptors.back().data());
    args.push_back(&descriptorPtrs.back());
  };
  for (auto [i, t] : llvm::enumerate(inputs)) {
    if (llvm::Error err = checkValue(t, sig.inputs[i], name, "input", i))
      return err;
    if (sig.inputs[i].isTensor)
      pushTensor(t);
    else
      args.push_back(t.data()); // scalars by value: the wrapper loads it
  }
  // Tensor results are trailing out-params; a scalar result is returned,
  // and the packed wrapper stores it through the last pointer.
  void *scalarResult = nullptr;
  for (auto [i, t] : llvm::enumerate(outputs)) {
    if (llvm::Error err = checkValue(t, sig.results[i], name, "output", i))
      return err;
    if (sig.results[i].isTensor)
      pushTensor(t);
    else
      scalarResult = t.data();
  }
  if (scalarResult)
    args.push_back(scalarResult);

  dsrt_error_clear();
  entry(args.data());
  if (const char *msg = dsrt_last_error(); msg && *msg)
    return makeError("@" + name + ": runtime error: " + msg);
  return llvm::Error::success();
}
