//===- PackedCall.cpp - Call compiled functions on host Tensors -----------===//
#include "ds/Execution/PackedCall.h"

#include "ds/Support/CInterface.h"

#include "dsrt/dsrt.h"

#include <cstring>

using namespace mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

// Row-major contiguous memref descriptor over `data` of `shape`:
// {allocated, aligned, offset, sizes[rank], strides[rank]}.
std::vector<int64_t> descriptorFor(void *data, llvm::ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  std::vector<int64_t> d(3 + 2 * rank);
  d[0] = d[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(data));
  d[2] = 0;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    d[3 + i] = shape[i];
    d[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return d;
}

llvm::Error checkValue(const Tensor &t, const ValueInfo &info,
                       llvm::StringRef fn, llvm::StringRef what, int64_t index,
                       const llvm::Twine &of = "") {
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
                   t.typeString() + " but the function takes " + expected + of);
}

/// Checks the caller's tensors `slices` of stacked value `info` (function
/// `what` `index`), each a slice of it and all of one shape.
llvm::Error checkSlices(llvm::ArrayRef<const Tensor *> slices,
                        llvm::ArrayRef<int64_t> positions,
                        const ValueInfo &info, llvm::StringRef fn,
                        llvm::StringRef what, unsigned index) {
  ValueInfo slice = info.callerValue();
  llvm::StringRef kind = what == "input" ? "argument" : "result";
  for (auto [k, t] : llvm::enumerate(slices)) {
    std::string of =
        (" (slice " + llvm::Twine(k) + " of its " + kind + " " +
         llvm::Twine(index) + ", " + mlir::ds::kStackAttrName + ")")
            .str();
    if (llvm::Error err = checkValue(*t, slice, fn, what, positions[k], of))
      return err;
    if (t->shape() != slices[0]->shape())
      return makeError("@" + fn + ": " + what + " " +
                       llvm::Twine(positions[k]) + " is " + t->typeString() +
                       " but " + what + " " + llvm::Twine(positions[0]) +
                       ", stacked with it, is " + slices[0]->typeString());
  }
  return llvm::Error::success();
}

/// Whether `slices` lie back to back: slice k at slice 0's data plus k
/// times its bytes (they share one shape).
bool contiguous(llvm::ArrayRef<const Tensor *> slices) {
  auto *base = static_cast<char *>(slices[0]->data());
  int64_t bytes = slices[0]->byteSize();
  for (auto [k, t] : llvm::enumerate(slices))
    if (static_cast<char *>(t->data()) != base + int64_t(k) * bytes)
      return false;
  return true;
}

} // namespace

ValueInfo ValueInfo::callerValue() const {
  ValueInfo slice = *this;
  if (!stack.empty()) {
    slice.shape.erase(slice.shape.begin());
    slice.stack.clear();
  }
  return slice;
}

llvm::Expected<CallerLayout>
mlir::ds::exec::callerLayout(llvm::ArrayRef<ValueInfo> values,
                             llvm::StringRef fn, llvm::StringRef what) {
  CallerLayout layout;
  for (const ValueInfo &v : values)
    layout.arity += v.stack.empty() ? 1 : int64_t(v.stack.size());
  layout.positions.resize(values.size());
  std::vector<bool> taken(layout.arity);
  for (auto [i, v] : llvm::enumerate(values)) {
    if (v.stack.empty())
      continue;
    int64_t k = v.stack.size();
    auto fail = [&](const llvm::Twine &why) {
      return makeError("@" + fn + ": " + what + " " + llvm::Twine(i) + " (" +
                       mlir::ds::kStackAttrName + " of " + llvm::Twine(k) +
                       " caller values) " + why);
    };
    if (!v.isTensor || v.shape.empty())
      return fail("is not a tensor with a leading dimension to stack along");
    if (v.shape[0] != k)
      return fail("has type " + typeString(v.dtype, v.shape) +
                  ", whose leading dimension is not " + llvm::Twine(k));
    for (int64_t p : v.stack) {
      if (p < 0 || p >= layout.arity)
        return fail("names caller position " + llvm::Twine(p) +
                    ", but the caller has " + llvm::Twine(layout.arity) +
                    " (0 to " + llvm::Twine(layout.arity - 1) + ")");
      if (taken[p])
        return fail("names caller position " + llvm::Twine(p) +
                    ", which another stacked value or this one takes too");
      taken[p] = true;
    }
    layout.positions[i].assign(v.stack.begin(), v.stack.end());
  }
  // The positions no stack takes, one per unstacked value: as many as
  // there are, since every stack's positions are distinct and in range.
  int64_t next = 0;
  for (auto [i, v] : llvm::enumerate(values)) {
    if (!v.stack.empty())
      continue;
    while (taken[next])
      ++next;
    layout.positions[i] = {next++};
  }
  return layout;
}

namespace {
std::vector<ValueInfo> callerValues(llvm::ArrayRef<ValueInfo> values,
                                    llvm::StringRef fn) {
  CallerLayout layout = llvm::cantFail(callerLayout(values, fn, "value"));
  std::vector<ValueInfo> out(layout.arity);
  for (auto [v, positions] : llvm::enumerate(layout.positions))
    for (int64_t p : positions)
      out[p] = values[v].callerValue();
  return out;
}
} // namespace

std::vector<ValueInfo> FunctionSignature::callerInputs() const {
  return callerValues(inputs, name);
}

std::vector<ValueInfo> FunctionSignature::callerResults() const {
  return callerValues(results, name);
}

llvm::Error mlir::ds::exec::initWorkspaces(WorkspacesInit init,
                                           llvm::StringRef what) {
  if (init() >= 0)
    return llvm::Error::success();
  return makeError(what + ": " + dsrt_last_error());
}

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
  auto inLayout = callerLayout(sig.inputs, name, "argument");
  if (!inLayout)
    return inLayout.takeError();
  auto outLayout = callerLayout(sig.results, name, "result");
  if (!outLayout)
    return outLayout.takeError();
  if (int64_t(inputs.size()) != inLayout->arity)
    return makeError("@" + name + " takes " + llvm::Twine(inLayout->arity) +
                     " input(s), got " + llvm::Twine(inputs.size()));
  if (int64_t(outputs.size()) != outLayout->arity)
    return makeError("@" + name + " has " + llvm::Twine(outLayout->arity) +
                     " result(s), got " + llvm::Twine(outputs.size()) +
                     " output buffer(s)");

  size_t n = sig.inputs.size() + sig.results.size();
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPtrs;
  descriptors.reserve(n);
  descriptorPtrs.reserve(n); // stable: args point into it
  llvm::SmallVector<void *> args;
  auto pushTensor = [&](void *data, llvm::ArrayRef<int64_t> shape) {
    descriptors.push_back(descriptorFor(data, shape));
    descriptorPtrs.push_back(descriptors.back().data());
    args.push_back(&descriptorPtrs.back());
  };
  // Stacks whose caller tensors are not back to back: staging buffers,
  // alive over the call, and the results' slices to copy out after it.
  std::vector<Tensor> staged;
  std::vector<std::pair<Tensor, llvm::SmallVector<const Tensor *>>> copyOut;
  auto pushStack = [&](llvm::ArrayRef<Tensor> values,
                       llvm::ArrayRef<int64_t> positions, const ValueInfo &info,
                       llvm::StringRef what, unsigned index) -> llvm::Error {
    llvm::SmallVector<const Tensor *> slices;
    for (int64_t p : positions)
      slices.push_back(&values[p]);
    if (llvm::Error err =
            checkSlices(slices, positions, info, name, what, index))
      return err;
    const Tensor &first = *slices.front();
    llvm::SmallVector<int64_t> shape{int64_t(slices.size())};
    shape.append(first.shape().begin(), first.shape().end());
    if (contiguous(slices)) {
      pushTensor(first.data(), shape);
      return llvm::Error::success();
    }
    Tensor stage = Tensor::zeros(first.dtype(), shape);
    int64_t bytes = first.byteSize();
    if (what == "input")
      for (auto [k, t] : llvm::enumerate(slices))
        std::memcpy(static_cast<char *>(stage.data()) + k * bytes, t->data(),
                    bytes);
    else
      copyOut.emplace_back(stage, slices);
    pushTensor(stage.data(), shape);
    staged.push_back(std::move(stage));
    return llvm::Error::success();
  };
  // Each of the function's values in its order, from the caller's
  // tensors; a scalar goes to `scalar`.
  auto pushValues =
      [&](llvm::ArrayRef<ValueInfo> infos, const CallerLayout &layout,
          llvm::ArrayRef<Tensor> values, llvm::StringRef what,
          llvm::function_ref<void(void *)> scalar) -> llvm::Error {
    for (auto [i, info] : llvm::enumerate(infos)) {
      llvm::ArrayRef<int64_t> at = layout.positions[i];
      if (!info.stack.empty()) {
        if (llvm::Error err = pushStack(values, at, info, what, i))
          return err;
        continue;
      }
      const Tensor &t = values[at[0]];
      if (llvm::Error err = checkValue(t, info, name, what, at[0]))
        return err;
      if (info.isTensor)
        pushTensor(t.data(), t.shape());
      else
        scalar(t.data());
    }
    return llvm::Error::success();
  };
  // Scalar inputs by value: the wrapper loads them.
  if (llvm::Error err = pushValues(sig.inputs, *inLayout, inputs, "input",
                                   [&](void *data) { args.push_back(data); }))
    return err;
  // Tensor results are trailing out-params; a scalar result is returned,
  // and the packed wrapper stores it through the last pointer.
  void *scalarResult = nullptr;
  if (llvm::Error err = pushValues(sig.results, *outLayout, outputs, "output",
                                   [&](void *data) { scalarResult = data; }))
    return err;
  if (scalarResult)
    args.push_back(scalarResult);

  dsrt_error_clear();
  entry(args.data());
  if (const char *msg = dsrt_last_error(); msg && *msg)
    return makeError("@" + name + ": runtime error: " + msg);
  for (auto &[stage, slices] : copyOut) {
    int64_t bytes = slices.front()->byteSize();
    for (auto [k, t] : llvm::enumerate(slices))
      std::memcpy(t->data(), static_cast<char *>(stage.data()) + k * bytes,
                  bytes);
  }
  return llvm::Error::success();
}
