//===- ExportedProgramReader.cpp - torch.export .pt2 -> TorchGraph.h ------===//
//
// A .pt2 archive (torch.export.save) is a zip file:
//
//   <name>/models/model.json                  the ExportedProgram (serde JSON)
//   <name>/data/weights/model_weights_config.json   name -> file, tensor meta
//   <name>/data/weights/weight_N              raw little-endian tensor bytes
//   <name>/data/constants/...                 the same for constants
//
// The program's graph is already in ATen ops with a shape on every value
// (torch.export traced it); sizes of a program exported with dynamic_shapes
// are sympy expressions, evaluated once the batch fixes their symbols
// (SymExpr.h). Unlike TorchScript nothing else needs evaluating: each node
// keeps its op name without the overload
// ("aten::linear"), its arguments are put in schema order with defaults
// filled in, and the nodes that only compute constants (arange, a causal
// mask from ones/tril/bitwise_not, a rotary table from the inv_freq buffer
// with cat/cos/sin) are folded here.
//
//===----------------------------------------------------------------------===//
#include "ExportedProgramReader.h"
#include "SymExpr.h"

#include "ds/Support/StrictJson.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <nlohmann/json.hpp>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>

using namespace mlir::ds::importer;
using json = nlohmann::json;
using ::ds::support::jsonInteger;
using ::ds::support::jsonIntegers;
using ts::DType;
using Kind = ts::Value::Kind;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The zip archive torch.export.save writes; entries are named relative to
/// its one top-level folder.
class Archive {
public:
  static llvm::Expected<std::unique_ptr<Archive>> open(const std::string &path);
  ~Archive() { zip_discard(z); }
  bool has(const std::string &name) const {
    return zip_name_locate(z, (prefix + name).c_str(), 0) >= 0;
  }
  llvm::Expected<std::string> read(const std::string &name) const;

private:
  explicit Archive(zip_t *z) : z(z) {}
  zip_t *z;
  std::string prefix;
};

llvm::Expected<std::unique_ptr<Archive>>
Archive::open(const std::string &path) {
  int code = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ)
      return error("cannot read: " + why);
    // A zip file starts with a local file header; one that does but has no
    // readable central directory at its end was cut short.
    char magic[4] = {};
    std::ifstream(path, std::ios::binary).read(magic, 4);
    if (std::memcmp(magic, "PK\x03\x04", 4) == 0)
      return error("truncated or corrupt zip archive (" + why +
                   "); save it again with torch.export.save");
    return error("not a zip archive, so not a torch.export.save .pt2 "
                 "archive (" +
                 why + ")");
  }
  std::unique_ptr<Archive> archive(new Archive(z));
  // The program sits at <folder>/models/model.json.
  static const llvm::StringLiteral modelJson = "models/model.json";
  zip_int64_t count = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    llvm::StringRef name = zip_get_name(z, i, 0);
    if (name.ends_with(modelJson)) {
      archive->prefix = name.drop_back(modelJson.size()).str();
      return archive;
    }
  }
  return error("a zip archive without models/model.json, so not written by "
               "torch.export.save");
}

llvm::Expected<std::string> Archive::read(const std::string &name) const {
  std::string full = prefix + name;
  zip_stat_t st;
  if (zip_stat(z, full.c_str(), 0, &st) != 0)
    return error("the archive has no " + name);
  std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> f(
      zip_fopen(z, full.c_str(), 0), zip_fclose);
  std::string data(st.size, '\0');
  if (!f || zip_fread(f.get(), data.data(), st.size) != zip_int64_t(st.size))
    return error("cannot read " + name +
                 " from the archive: " + zip_strerror(z));
  return data;
}

/// A serialized float: a number, or "Infinity", "-Infinity", "NaN" (JSON
/// has no literals for them).
double floatOf(const json &x) {
  if (x.is_number())
    return x.get<double>();
  std::string text = x.get<std::string>();
  if (text == "Infinity")
    return std::numeric_limits<double>::infinity();
  if (text == "-Infinity")
    return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

/// A constant's elements broadcast to `shape` (numpy rules), or nullopt if
/// it does not broadcast.
std::optional<std::vector<double>>
broadcast(const ts::Value &x, const std::vector<int64_t> &shape) {
  size_t rank = shape.size(), xRank = x.shape.size();
  int64_t count = 1, xCount = 1;
  for (int64_t d : shape)
    count *= d;
  for (int64_t d : x.shape)
    xCount *= d;
  size_t have = std::max(x.floats.size(), x.ints.size());
  if (xRank > rank || size_t(xCount) != have)
    return std::nullopt;
  for (size_t d = 0; d < xRank; ++d)
    if (x.shape[d] != 1 && x.shape[d] != shape[rank - xRank + d])
      return std::nullopt;
  std::vector<double> out(count);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = k, at = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      if (d + xRank < rank)
        continue;
      int64_t xd = x.shape[d + xRank - rank];
      if (xd != 1)
        at += c * stride;
      stride *= xd;
    }
    out[k] = x.floats.empty() ? double(x.ints[at]) : x.floats[at];
  }
  return out;
}

/// The elements of a constant tensor, or nullopt if it holds fewer or more
/// than its shape says (a malformed program).
std::optional<std::vector<double>> elementsOf(const ts::Value &x) {
  int64_t count = 1;
  for (int64_t d : x.shape)
    count *= d;
  if (size_t(count) != std::max(x.floats.size(), x.ints.size()))
    return std::nullopt;
  if (!x.floats.empty())
    return x.floats;
  return std::vector<double>(x.ints.begin(), x.ints.end());
}

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Gathers `shape`'s elements from `x`: element (c_0, ..., c_n) of the
/// result reads x at offset(c), with offset(c) = sum_i c_i * steps[i] +
/// base. Every view the rotary tables take (transpose, permute, slice,
/// select) is one such gather.
std::vector<double> gather(const std::vector<double> &x,
                           const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &steps, int64_t base) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<double> out(count);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = k, at = base;
    for (size_t d = shape.size(); d-- > 0;) {
      at += rest % shape[d] * steps[d];
      rest /= shape[d];
    }
    out[k] = x[at];
  }
  return out;
}

/// The product of constants `a` [..., M, K] and `b` [..., K, N] with
/// broadcast batch dims, as a `shape` result; nullopt if the shapes do not
/// multiply to it.
std::optional<std::vector<double>> matmul(const ts::Value &a,
                                          const ts::Value &b,
                                          const std::vector<int64_t> &shape) {
  size_t rank = shape.size();
  if (a.shape.size() < 2 || b.shape.size() < 2 || rank < 2)
    return std::nullopt;
  int64_t m = a.shape.end()[-2], k = a.shape.back(), n = b.shape.back();
  if (b.shape.end()[-2] != k || shape[rank - 2] != m || shape[rank - 1] != n)
    return std::nullopt;
  std::vector<int64_t> aShape(shape.begin(), shape.end() - 2),
      bShape = aShape;
  aShape.insert(aShape.end(), {m, k});
  bShape.insert(bShape.end(), {k, n});
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count == 0)
    return std::vector<double>();
  // A rotary table's product has K = 1; anything far larger is no constant
  // a model computes.
  if (k > (int64_t(1) << 20) || count * k > (int64_t(1) << 26))
    return std::nullopt;
  auto x = broadcast(a, aShape), y = broadcast(b, bShape);
  if (!x || !y)
    return std::nullopt;
  std::vector<double> out(count);
  for (int64_t at = 0; at < count; ++at) {
    int64_t batch = at / (m * n), i = at / n % m, j = at % n;
    double sum = 0;
    for (int64_t l = 0; l < k; ++l)
      sum += (*x)[(batch * m + i) * k + l] * (*y)[(batch * k + l) * n + j];
    out[at] = sum;
  }
  return out;
}

/// Constants `xs` concatenated along `dim` as a `shape` result (empty 1-D
/// tensors skipped, as torch.cat does); nullopt if they do not fit it.
std::optional<std::vector<double>> concat(const std::vector<ts::Value> &xs,
                                          int64_t dim,
                                          const std::vector<int64_t> &shape) {
  int64_t rank = shape.size();
  if (dim < 0)
    dim += rank;
  if (dim < 0 || dim >= rank)
    return std::nullopt;
  std::vector<std::vector<double>> parts;
  std::vector<int64_t> widths;
  int64_t total = 0;
  for (const ts::Value &x : xs) {
    if (x.shape.size() == 1 && x.shape[0] == 0)
      continue;
    auto elts = elementsOf(x);
    if (!elts || int64_t(x.shape.size()) != rank)
      return std::nullopt;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && x.shape[d] != shape[d])
        return std::nullopt;
    parts.push_back(std::move(*elts));
    widths.push_back(x.shape[dim]);
    total += x.shape[dim];
  }
  if (total != shape[dim])
    return std::nullopt;
  // Rows of the dims before `dim`, each the concatenation of every part's
  // block of width * inner elements.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= shape[d];
  std::vector<double> out;
  out.reserve(outer * total * inner);
  for (int64_t r = 0; r < outer; ++r)
    for (size_t p = 0; p < parts.size(); ++p) {
      auto first = parts[p].begin() + r * widths[p] * inner;
      out.insert(out.end(), first, first + widths[p] * inner);
    }
  return out;
}

/// A node's arguments by name.
using Given = std::unordered_map<std::string, const json *>;

/// The number argument `arg` (an int, bool or float), or `otherwise` when it
/// is absent or None.
double numberOf(const Given &given, const char *arg, double otherwise) {
  auto it = given.find(arg);
  if (it == given.end())
    return otherwise;
  const json &a = *it->second;
  if (a.contains("as_int"))
    return double(jsonInteger<int64_t>(a, "as_int"));
  if (a.contains("as_bool"))
    return a.at("as_bool").get<bool>() ? 1.0 : 0.0;
  if (a.contains("as_float"))
    return floatOf(a.at("as_float"));
  return otherwise;
}

/// `x` as an index: out-of-range values (INT64_MAX for "to the end", or a
/// malformed program's) stay out of range without overflowing, NaN too.
int64_t indexOf(double x) {
  if (std::isnan(x))
    return std::numeric_limits<int64_t>::min() / 2;
  return int64_t(std::clamp(x, -1e18, 1e18));
}

/// The elements of constant `x` through the view `name` (transpose, t,
/// permute, slice, select) as a `shape` result. nullopt if `name` is no such
/// view; an empty inner optional if the view does not give `shape`.
std::optional<std::optional<std::vector<double>>>
view(llvm::StringRef name, const Given &given,
     const std::optional<ts::Value> &x, const std::vector<int64_t> &shape) {
  static const llvm::StringSet<> views = {
      "aten.transpose.int", "aten.t.default", "aten.permute.default",
      "aten.slice.Tensor", "aten.select.int"};
  if (!x || !views.contains(name))
    return std::nullopt;
  std::optional<std::vector<double>> mismatch;
  auto elements = elementsOf(*x);
  if (!elements)
    return mismatch;
  int64_t rank = x->shape.size();
  std::vector<int64_t> strides = stridesOf(x->shape);
  std::vector<int64_t> sizes = x->shape, steps = strides;
  int64_t base = 0;
  auto axis = [&](const char *arg) -> std::optional<int64_t> {
    int64_t d = indexOf(numberOf(given, arg, 0));
    if (d < 0)
      d += rank;
    if (d < 0 || d >= rank)
      return std::nullopt;
    return d;
  };
  if (name == "aten.transpose.int" || name == "aten.t.default") {
    std::optional<int64_t> a = rank - 2, b = rank - 1;
    if (name == "aten.transpose.int") {
      a = axis("dim0");
      b = axis("dim1");
      if (!a || !b)
        return mismatch;
    }
    if (rank >= 2) {
      std::swap(sizes[*a], sizes[*b]);
      std::swap(steps[*a], steps[*b]);
    }
  } else if (name == "aten.permute.default") {
    auto it = given.find("dims");
    if (it == given.end() || !it->second->contains("as_ints"))
      return mismatch;
    std::vector<int64_t> perm = jsonIntegers(*it->second, "as_ints");
    std::vector<bool> seen(rank);
    if (int64_t(perm.size()) != rank)
      return mismatch;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
      if (p < 0 || p >= rank || seen[p])
        return mismatch;
      seen[p] = true;
      sizes[i] = x->shape[p];
      steps[i] = strides[p];
    }
  } else {
    auto d = axis("dim");
    if (!d)
      return mismatch;
    int64_t size = x->shape[*d];
    // Negative bounds count from the end; out-of-range ones clamp (a slice
    // to the end says INT64_MAX).
    auto bound = [&](const char *arg, int64_t otherwise) {
      int64_t at = indexOf(numberOf(given, arg, double(otherwise)));
      if (at < 0)
        at += size;
      return std::clamp<int64_t>(at, 0, size);
    };
    if (name == "aten.select.int") {
      int64_t at = indexOf(numberOf(given, "index", 0));
      if (at < 0)
        at += size;
      if (at < 0 || at >= size)
        return mismatch;
      base = at * strides[*d];
      sizes.erase(sizes.begin() + *d);
      steps.erase(steps.begin() + *d);
    } else {
      int64_t start = bound("start", 0), end = bound("end", size);
      // A step past the end takes one element, as the size's step would.
      int64_t step = std::min(indexOf(numberOf(given, "step", 1)),
                              std::max<int64_t>(size, 1));
      if (step < 1)
        return mismatch;
      base = start * strides[*d];
      sizes[*d] = end > start ? (end - start + step - 1) / step : 0;
      steps[*d] *= step;
    }
  }
  if (sizes != shape)
    return mismatch;
  return gather(*elements, sizes, steps, base);
}

/// torch/_export/serde/schema.py's ScalarType.
DType toDType(int64_t t) {
  switch (t) {
  case 4:
    return DType::I32;
  case 5:
    return DType::I64;
  case 6:
    return DType::F16;
  case 7:
    return DType::F32;
  case 8:
    return DType::F64;
  case 12:
    return DType::Bool;
  case 13:
    return DType::BF16;
  default:
    return DType::Other;
  }
}

size_t bytesOf(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::Bool:
    return 1;
  default:
    return 0;
  }
}

/// One argument of an op schema: its name and the default used when the
/// serialized node omits it (torch.export leaves out arguments that have
/// their default).
struct Arg {
  const char *name;
  enum { Required, None, Int, Float, Bool, String } kind = Required;
  double value = 0;
  const char *text = "";
};
constexpr Arg req(const char *n) { return {n}; }
constexpr Arg none(const char *n) { return {n, Arg::None}; }
constexpr Arg i(const char *n, int64_t v) { return {n, Arg::Int, double(v)}; }
constexpr Arg f(const char *n, double v) { return {n, Arg::Float, v}; }
constexpr Arg b(const char *n, bool v) { return {n, Arg::Bool, v ? 1.0 : 0}; }

std::string where(const ts::Node &n) {
  if (n.file.empty())
    return "unknown source";
  return n.file + ":" + std::to_string(n.line);
}

/// What an argument must be, by its schema name, so that a malformed program
/// cannot hand the mapping a number where it reads a tensor or the reverse.
enum class Want { Tensor, OptionalTensor, TensorOrNumber, TensorList, Other };
Want wantOf(llvm::StringRef op, llvm::StringRef arg) {
  static const llvm::StringSet<> tensors = {
      "self",    "input",     "mat1",   "mat2",  "batch1", "batch2",
      "indices", "condition", "target", "query", "key",    "mask"};
  auto is = [&](std::initializer_list<const char *> ops) {
    return llvm::any_of(ops, [&](const char *o) { return op.starts_with(o); });
  };
  if (tensors.contains(arg))
    return Want::Tensor;
  if (arg == "value")
    return is({"aten.scaled_dot_product_attention"}) ? Want::Tensor
                                                     : Want::TensorOrNumber;
  if (arg == "weight")
    return is({"aten.linear", "aten.embedding"}) ? Want::Tensor
                                                 : Want::OptionalTensor;
  if (arg == "bias" || arg == "attn_mask")
    return Want::OptionalTensor;
  if (arg == "other")
    return is({"aten.matmul", "aten.mm", "aten.bmm", "aten.where",
               "aten.type_as", "aten.expand_as"})
               ? Want::Tensor
               : Want::TensorOrNumber;
  if (arg == "tensors")
    return Want::TensorList;
  return Want::Other;
}

/// The schemas (ATen's native_functions.yaml) of the ops the TorchScript
/// mapping handles, by serialized target without "torch.ops.".
const llvm::StringMap<std::vector<Arg>> &schemas() {
  static const llvm::StringMap<std::vector<Arg>> table = {
      {"aten.linear.default", {req("input"), req("weight"), none("bias")}},
      {"aten.mm.default", {req("self"), req("mat2")}},
      {"aten.bmm.default", {req("self"), req("mat2")}},
      {"aten.matmul.default", {req("self"), req("other")}},
      {"aten.addmm.default",
       {req("self"), req("mat1"), req("mat2"), i("beta", 1), i("alpha", 1)}},
      {"aten.baddbmm.default",
       {req("self"), req("batch1"), req("batch2"), i("beta", 1),
        i("alpha", 1)}},
      {"aten.embedding.default",
       {req("weight"), req("indices"), i("padding_idx", -1),
        b("scale_grad_by_freq", false), b("sparse", false)}},
      {"aten.layer_norm.default",
       {req("input"), req("normalized_shape"), none("weight"), none("bias"),
        f("eps", 1e-5), b("cudnn_enable", true)}},
      {"aten.rms_norm.default",
       {req("input"), req("normalized_shape"), none("weight"), none("eps")}},
      {"aten.gelu.default",
       {req("self"), {"approximate", Arg::String, 0, "none"}}},
      {"aten.relu.default", {req("self")}},
      {"aten.silu.default", {req("self")}},
      {"aten.tanh.default", {req("self")}},
      {"aten.exp.default", {req("self")}},
      {"aten.neg.default", {req("self")}},
      {"aten.rsqrt.default", {req("self")}},
      {"aten.softmax.int", {req("self"), req("dim"), none("dtype")}},
      {"aten._softmax.default",
       {req("self"), req("dim"), req("half_to_float")}},
      {"aten.log_softmax.int", {req("self"), req("dim"), none("dtype")}},
      {"aten.dropout.default", {req("input"), req("p"), req("train")}},
      {"aten.add.Tensor", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.add.Scalar", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.sub.Tensor", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.sub.Scalar", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.rsub.Tensor", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.rsub.Scalar", {req("self"), req("other"), i("alpha", 1)}},
      {"aten.mul.Tensor", {req("self"), req("other")}},
      {"aten.mul.Scalar", {req("self"), req("other")}},
      {"aten.div.Tensor", {req("self"), req("other")}},
      {"aten.div.Scalar", {req("self"), req("other")}},
      {"aten.pow.Tensor_Scalar", {req("self"), req("exponent")}},
      {"aten.view.default", {req("self"), req("size")}},
      {"aten.reshape.default", {req("self"), req("shape")}},
      {"aten._unsafe_view.default", {req("self"), req("size")}},
      {"aten.flatten.using_ints",
       {req("self"), i("start_dim", 0), i("end_dim", -1)}},
      {"aten.unsqueeze.default", {req("self"), req("dim")}},
      {"aten.squeeze.dim", {req("self"), req("dim")}},
      {"aten.squeeze.default", {req("self")}},
      {"aten.expand.default", {req("self"), req("size"), b("implicit", false)}},
      {"aten.expand_as.default", {req("self"), req("other")}},
      {"aten.transpose.int", {req("self"), req("dim0"), req("dim1")}},
      {"aten.t.default", {req("self")}},
      {"aten.permute.default", {req("self"), req("dims")}},
      {"aten.contiguous.default", {req("self"), none("memory_format")}},
      {"aten.clone.default", {req("self"), none("memory_format")}},
      {"aten.to.dtype",
       {req("self"), req("dtype"), b("non_blocking", false), b("copy", false),
        none("memory_format")}},
      {"aten.to.device",
       {req("self"), req("device"), req("dtype"), b("non_blocking", false),
        b("copy", false), none("memory_format")}},
      {"aten.to.dtype_layout",
       {req("self"), none("dtype"), none("layout"), none("device"),
        none("pin_memory"), b("non_blocking", false), b("copy", false),
        none("memory_format")}},
      {"aten._to_copy.default",
       {req("self"), none("dtype"), none("layout"), none("device"),
        none("pin_memory"), b("non_blocking", false), none("memory_format")}},
      {"aten.alias.default", {req("self")}},
      {"aten.type_as.default", {req("self"), req("other")}},
      {"aten.slice.Tensor",
       {req("self"), i("dim", 0), none("start"), none("end"), i("step", 1)}},
      {"aten.select.int", {req("self"), req("dim"), req("index")}},
      {"aten.split.Tensor", {req("self"), req("split_size"), i("dim", 0)}},
      {"aten.split_with_sizes.default",
       {req("self"), req("split_sizes"), i("dim", 0)}},
      {"aten.chunk.default", {req("self"), req("chunks"), i("dim", 0)}},
      {"aten.cat.default", {req("tensors"), i("dim", 0)}},
      {"aten.stack.default", {req("tensors"), i("dim", 0)}},
      {"aten.broadcast_tensors.default", {req("tensors")}},
      {"aten.pad.default",
       {req("self"),
        req("pad"),
        {"mode", Arg::String, 0, "constant"},
        none("value")}},
      {"aten.masked_fill.Scalar", {req("self"), req("mask"), req("value")}},
      {"aten.masked_fill.Tensor", {req("self"), req("mask"), req("value")}},
      {"aten.eq.Tensor", {req("self"), req("other")}},
      {"aten.eq.Scalar", {req("self"), req("other")}},
      {"aten.ne.Tensor", {req("self"), req("other")}},
      {"aten.ne.Scalar", {req("self"), req("other")}},
      {"aten.where.self", {req("condition"), req("self"), req("other")}},
      {"aten.cross_entropy_loss.default",
       {req("self"), req("target"), none("weight"), i("reduction", 1),
        i("ignore_index", -100), f("label_smoothing", 0)}},
      {"aten.nll_loss.default",
       {req("self"), req("target"), none("weight"), i("reduction", 1),
        i("ignore_index", -100)}},
      {"aten.nll_loss_nd.default",
       {req("self"), req("target"), none("weight"), i("reduction", 1),
        i("ignore_index", -100)}},
      {"aten.mse_loss.default",
       {req("self"), req("target"), i("reduction", 1)}},
      {"aten.mean.dim",
       {req("self"), req("dim"), b("keepdim", false), none("dtype")}},
      {"aten.mean.default", {req("self"), none("dtype")}},
      {"aten.sum.dim_IntList",
       {req("self"), req("dim"), b("keepdim", false), none("dtype")}},
      {"aten.sum.default", {req("self"), none("dtype")}},
      {"aten.scaled_dot_product_attention.default",
       {req("query"), req("key"), req("value"), none("attn_mask"),
        f("dropout_p", 0), b("is_causal", false), none("scale"),
        b("enable_gqa", false)}},
  };
  return table;
}

/// Builds the TorchGraph.h structs from the serialized program.
class Reader {
public:
  Reader(const Archive &archive, const json &program)
      : archive(archive), gm(program.at("graph_module")),
        graph(gm.at("graph")) {}
  llvm::Error read(std::optional<int64_t> microBatch);
  /// The stored tensor of a parameter, buffer or constant, read from the
  /// weights or constants folder; `file` gets its entry's name.
  llvm::Expected<ts::Value> storedTensor(const std::string &fqn,
                                         std::string *file = nullptr);
  ts::Graph g;

private:
  int add(ts::Value v) {
    g.values.push_back(std::move(v));
    return int(g.values.size()) - 1;
  }
  /// The value of a named graph tensor, created from its meta on first use.
  llvm::Expected<int> tensorNamed(const std::string &name);
  llvm::Error inputs();
  llvm::Expected<int> argument(const json &arg, ts::Node &node);
  llvm::Error node(const json &n);
  /// Folds a node that only computes a constant (positions, a causal mask),
  /// as TorchScript's evaluation does; nullopt if it is not one of those.
  std::optional<llvm::Error>
  fold(llvm::StringRef name, const json &n,
       const std::unordered_map<std::string, const json *> &given,
       const ts::Node &node);

  const Archive &archive;
  const json &gm, &graph;
  std::unordered_map<std::string, int> ids;
  /// Values computed so far: a node may only read these.
  std::unordered_set<int> defined;
  std::optional<json> weightsConfig, constantsConfig;
  std::vector<std::string> unsupported;
  /// The first router of a mixture of experts: refused alone, since its
  /// ops are not what is missing.
  std::string moeRouter;
};

llvm::Expected<ts::Value> tensorMeta(const json &meta) {
  ts::Value v;
  v.kind = Kind::Tensor;
  v.dtype = toDType(jsonInteger<int64_t>(meta, "dtype"));
  for (const json &d : meta.at("sizes")) {
    if (!d.contains("as_int"))
      return error("a tensor has a dim that is neither an integer nor a "
                   "size expression: " +
                   d.dump().substr(0, 200));
    v.shape.push_back(jsonInteger<int64_t>(d, "as_int"));
  }
  // Bounded so that element counts and byte sizes cannot overflow.
  int64_t numel = 1;
  for (int64_t d : v.shape) {
    if (d < 0 || d > (int64_t(1) << 40) ||
        (d && numel > (int64_t(1) << 44) / d))
      return error("a tensor has an impossible shape " +
                   meta.at("sizes").dump());
    numel *= d;
  }
  return v;
}

llvm::Expected<int> Reader::tensorNamed(const std::string &name) {
  auto it = ids.find(name);
  if (it != ids.end())
    return it->second;
  const json &values = graph.at("tensor_values");
  if (!values.contains(name))
    return error("graph tensor \"" + name + "\" has no meta");
  auto v = tensorMeta(values.at(name));
  if (!v)
    return v.takeError();
  v->dynamic = true;
  int id = add(std::move(*v));
  ids[name] = id;
  return id;
}

llvm::Expected<ts::Value> Reader::storedTensor(const std::string &fqn,
                                               std::string *file) {
  auto loadConfig = [&](std::optional<json> &config,
                        const std::string &name) -> llvm::Error {
    if (config)
      return llvm::Error::success();
    config = json::object();
    if (!archive.has(name))
      return llvm::Error::success();
    auto text = archive.read(name);
    if (!text)
      return text.takeError();
    config = json::parse(*text).at("config");
    return llvm::Error::success();
  };
  if (auto err =
          loadConfig(weightsConfig, "data/weights/model_weights_config.json"))
    return std::move(err);
  if (auto err = loadConfig(constantsConfig,
                            "data/constants/model_constants_config.json"))
    return std::move(err);
  std::string folder = "data/weights/";
  const json *entry = nullptr;
  if (weightsConfig->contains(fqn)) {
    entry = &weightsConfig->at(fqn);
  } else if (constantsConfig->contains(fqn)) {
    entry = &constantsConfig->at(fqn);
    folder = "data/constants/";
  } else {
    return error("no stored tensor \"" + fqn + "\" in the archive");
  }
  if (entry->value("use_pickle", false))
    return error("tensor \"" + fqn +
                 "\" is stored pickled, which ds cannot read");
  const json &meta = entry->at("tensor_meta");
  auto v = tensorMeta(meta);
  if (!v)
    return v.takeError();
  size_t elt = bytesOf(v->dtype);
  if (!elt)
    return error("tensor \"" + fqn + "\" has unsupported dtype " +
                 meta.at("dtype").dump());
  // Stored tensors are their own contiguous storage.
  int64_t numel = 1, stride = 1;
  auto strides = meta.at("strides");
  for (int64_t d = int64_t(v->shape.size()) - 1; d >= 0; --d) {
    if (v->shape[d] != 1 &&
        jsonInteger<int64_t>(strides.at(d), "as_int") != stride)
      return error("tensor \"" + fqn + "\" is not stored contiguously");
    stride *= v->shape[d];
  }
  numel = stride;
  if (jsonInteger<int64_t>(meta.at("storage_offset"), "as_int") != 0)
    return error("tensor \"" + fqn + "\" does not start its storage");
  std::string path = folder + entry->at("path_name").get<std::string>();
  if (file)
    *file = path;
  auto bytes = archive.read(path);
  if (!bytes)
    return bytes.takeError();
  if (bytes->size() < size_t(numel) * elt)
    return error(path + " holds " + llvm::Twine(bytes->size()) +
                 " bytes, fewer than tensor \"" + fqn + "\" needs");
  const char *p = bytes->data();
  for (int64_t k = 0; k < numel; ++k, p += elt) {
    switch (v->dtype) {
    case DType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      v->floats.push_back(x);
      break;
    }
    case DType::F64: {
      double x;
      std::memcpy(&x, p, 8);
      v->floats.push_back(x);
      break;
    }
    case DType::BF16: {
      uint32_t bits = uint32_t(uint8_t(p[0]) | uint8_t(p[1]) << 8) << 16;
      float x;
      std::memcpy(&x, &bits, 4);
      v->floats.push_back(x);
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      v->ints.push_back(x);
      break;
    }
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      v->ints.push_back(x);
      break;
    }
    case DType::Bool:
      v->ints.push_back(p[0] != 0);
      break;
    default:
      return error("tensor \"" + fqn + "\" is f16, which ds cannot read yet");
    }
  }
  return v;
}

llvm::Error Reader::inputs() {
  const json &specs = gm.at("signature").at("input_specs");
  const json &placeholders = graph.at("inputs");
  if (specs.size() != placeholders.size())
    return error("the graph signature has " + llvm::Twine(specs.size()) +
                 " inputs but the graph " + llvm::Twine(placeholders.size()));
  // Tied parameters are one stored file under several names.
  std::unordered_map<std::string, int> paramByFile;
  for (const json &spec : specs) {
    if (spec.contains("user_input")) {
      const json &arg = spec.at("user_input").at("arg");
      if (!arg.contains("as_tensor"))
        return error("only tensor inputs are supported, got " + arg.dump());
      std::string name = arg.at("as_tensor").at("name");
      auto id = tensorNamed(name);
      if (!id)
        return id.takeError();
      g.inputs.push_back({name, *id});
      defined.insert(*id);
      continue;
    }
    std::string fqn, arg;
    if (spec.contains("parameter")) {
      fqn = spec.at("parameter").at("parameter_name");
      arg = spec.at("parameter").at("arg").at("name");
    } else if (spec.contains("buffer")) {
      fqn = spec.at("buffer").at("buffer_name");
      arg = spec.at("buffer").at("arg").at("name");
    } else if (spec.contains("tensor_constant")) {
      fqn = spec.at("tensor_constant").at("tensor_constant_name");
      arg = spec.at("tensor_constant").at("arg").at("name");
    } else {
      return error("unsupported graph input " + spec.dump().substr(0, 200));
    }
    std::string file;
    auto stored = storedTensor(fqn, &file);
    if (!stored)
      return stored.takeError();
    if (!spec.contains("parameter")) {
      // Buffers and constants fold into the graph, as TorchScript's
      // evaluation folds them.
      ids[arg] = add(std::move(*stored));
      defined.insert(ids[arg]);
      continue;
    }
    auto tied = paramByFile.find(file);
    if (tied != paramByFile.end()) {
      ts::Param &p = g.params[tied->second];
      p.aliases.push_back(fqn);
      ids[arg] = p.value;
      continue;
    }
    ts::Param p;
    p.name = fqn;
    p.shape = stored->shape;
    p.dtype = stored->dtype;
    const std::vector<double> &x = stored->floats;
    if (!x.empty()) {
      p.allZeros = p.allOnes = true;
      double sum = 0;
      for (double d : x) {
        p.allZeros &= d == 0;
        p.allOnes &= d == 1;
        sum += d;
      }
      p.mean = sum / double(x.size());
      double var = 0;
      for (double d : x)
        var += (d - p.mean) * (d - p.mean);
      p.std = x.size() > 1 ? std::sqrt(var / double(x.size())) : 0;
    }
    ts::Value v;
    v.kind = Kind::Tensor;
    v.dynamic = true;
    v.shape = p.shape;
    v.dtype = p.dtype;
    p.value = add(std::move(v));
    ids[arg] = p.value;
    defined.insert(p.value);
    paramByFile[file] = int(g.params.size());
    g.params.push_back(std::move(p));
  }
  return llvm::Error::success();
}

/// One serialized argument as a value id; a list of tensors becomes a
/// prim::ListConstruct node ahead of `node`.
llvm::Expected<int> Reader::argument(const json &arg, ts::Node &node) {
  ts::Value v;
  auto read = [&](const json &t) -> llvm::Expected<int> {
    auto id = tensorNamed(t.at("name"));
    if (id && !defined.count(*id))
      return error(where(node) + ": reads tensor " + t.at("name").dump() +
                   " before anything computes it");
    return id;
  };
  if (arg.contains("as_tensor"))
    return read(arg.at("as_tensor"));
  if (arg.contains("as_tensors")) {
    ts::Node list;
    list.kind = "prim::ListConstruct";
    list.file = node.file;
    list.line = node.line;
    list.module = node.module;
    list.moduleType = node.moduleType;
    for (const json &t : arg.at("as_tensors")) {
      auto id = read(t);
      if (!id)
        return id.takeError();
      list.inputs.push_back(*id);
    }
    v.kind = Kind::TensorList;
    v.dynamic = true;
    v.elements = list.inputs;
    int id = add(std::move(v));
    list.outputs.push_back(id);
    g.nodes.push_back(std::move(list));
    return id;
  }
  if (arg.contains("as_none")) {
    v.kind = Kind::None;
  } else if (arg.contains("as_int")) {
    v.kind = Kind::Int;
    v.i = jsonInteger<int64_t>(arg, "as_int");
  } else if (arg.contains("as_float")) {
    v.kind = Kind::Float;
    v.f = floatOf(arg.at("as_float"));
  } else if (arg.contains("as_bool")) {
    v.kind = Kind::Bool;
    v.i = arg.at("as_bool").get<bool>();
  } else if (arg.contains("as_string")) {
    v.kind = Kind::String;
    v.s = arg.at("as_string");
  } else if (arg.contains("as_ints")) {
    v.kind = Kind::IntList;
    v.ints = jsonIntegers(arg, "as_ints");
  } else if (arg.contains("as_floats")) {
    v.kind = Kind::FloatList;
    v.floats = arg.at("as_floats").get<std::vector<double>>();
  } else if (arg.contains("as_scalar_type")) {
    v.kind = Kind::Int;
    v.i = jsonInteger<int64_t>(arg, "as_scalar_type");
  }
  // Devices, layouts and memory formats: nothing the mapping reads.
  return add(std::move(v));
}

/// The innermost "File ..., line N" of a node's stack trace.
void sourceOf(const json &meta, ts::Node &node) {
  if (!meta.contains("stack_trace") || !meta.at("stack_trace").is_string())
    return;
  llvm::StringRef trace = meta.at("stack_trace").get_ref<const std::string &>();
  size_t at = trace.rfind("File \"");
  if (at == llvm::StringRef::npos)
    return;
  llvm::StringRef rest = trace.drop_front(at + 6);
  auto [file, tail] = rest.split('"');
  tail.consume_front(", line ");
  int64_t line = 0;
  tail.take_while([](char c) { return c >= '0' && c <= '9'; })
      .getAsInteger(10, line);
  node.file = file.str();
  node.line = line;
}

/// The innermost submodule of nn_module_stack whose class names a mixture
/// of experts (MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock), as "path
/// (Class)"; empty when none does.
std::string moeModuleOf(const json &meta) {
  if (!meta.contains("nn_module_stack") ||
      !meta.at("nn_module_stack").is_string())
    return "";
  llvm::SmallVector<llvm::StringRef> frames;
  llvm::StringRef(meta.at("nn_module_stack").get_ref<const std::string &>())
      .split(frames, ';');
  for (llvm::StringRef frame : llvm::reverse(frames)) {
    llvm::SmallVector<llvm::StringRef> parts;
    frame.split(parts, ',');
    llvm::StringRef type = parts.back().rsplit('.').second;
    if (type.empty())
      type = parts.back();
    if (parts.size() >= 3 && type.contains_insensitive("moe"))
      return (parts[1] + " (" + type + ")").str();
  }
  return "";
}

/// The outermost submodule of nn_module_stack ("key,path,type;..."), whose
/// first entry is the root module.
void moduleOf(const json &meta, ts::Node &node) {
  if (!meta.contains("nn_module_stack") ||
      !meta.at("nn_module_stack").is_string())
    return;
  llvm::StringRef stack =
      meta.at("nn_module_stack").get_ref<const std::string &>();
  llvm::SmallVector<llvm::StringRef> frames;
  stack.split(frames, ';');
  for (llvm::StringRef frame : frames) {
    llvm::SmallVector<llvm::StringRef> parts;
    frame.split(parts, ',');
    if (parts.size() < 3 || parts[1].empty())
      continue;
    node.module = parts[1].str();
    node.moduleType = parts.back().rsplit('.').second.str();
    if (node.moduleType.empty())
      node.moduleType = parts.back().str();
    return;
  }
}

std::optional<llvm::Error>
Reader::fold(llvm::StringRef name, const json &n,
             const std::unordered_map<std::string, const json *> &given,
             const ts::Node &node) {
  static const llvm::StringSet<> foldable = {
      "aten.arange.default", "aten.arange.start", "aten.arange.start_step",
      "aten.ones.default", "aten.zeros.default", "aten.full.default",
      "aten.tril.default", "aten.triu.default", "aten.bitwise_not.default",
      "aten.logical_not.default",
      // Copies, views and casts of a constant (a mask, a rotary table).
      "aten.alias.default", "aten.detach.default", "aten.detach_.default",
      "aten.lift_fresh_copy.default", "aten.clone.default",
      "aten.contiguous.default", "aten.to.dtype", "aten.to.device",
      "aten.to.dtype_layout", "aten._to_copy.default",
      // Reshapes of a constant.
      "aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
      "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
      "aten.flatten.using_ints",
      // Broadcasting arithmetic and comparisons of constants (a causal mask
      // from aranges, as Hugging Face builds it).
      "aten.expand.default", "aten.add.Tensor", "aten.sub.Tensor",
      "aten.mul.Tensor", "aten.le.Tensor", "aten.lt.Tensor", "aten.ge.Tensor",
      "aten.gt.Tensor", "aten.eq.Tensor", "aten.ne.Tensor",
      "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor",
      "aten.logical_and.default", "aten.logical_or.default",
      // A rotary table from the inv_freq buffer and the positions (Hugging
      // Face's Llama, Qwen3, Mistral): their product, its views, cat, cos
      // and sin.
      "aten.matmul.default", "aten.mm.default", "aten.bmm.default",
      "aten.transpose.int", "aten.t.default", "aten.permute.default",
      "aten.slice.Tensor", "aten.select.int", "aten.cat.default",
      "aten.cos.default", "aten.sin.default"};
  if (!foldable.contains(name))
    return std::nullopt;
  auto number = [&](const char *arg, double otherwise) {
    return numberOf(given, arg, otherwise);
  };
  // Only constant operands fold; a copy: adding values moves them.
  auto constant = [&](const json &t) -> std::optional<ts::Value> {
    auto it = ids.find(t.at("name").get<std::string>());
    if (it == ids.end() || g.values[it->second].dynamic)
      return std::nullopt;
    return g.values[it->second];
  };
  std::optional<ts::Value> self, mat2;
  for (auto [arg, value] :
       {std::pair{"self", &self}, std::pair{"mat2", &mat2}}) {
    if (!given.count(arg))
      continue;
    const json &a = *given.at(arg);
    if (!a.contains("as_tensor"))
      return std::nullopt;
    *value = constant(a.at("as_tensor"));
    if (!*value)
      return std::nullopt;
  }
  std::vector<ts::Value> list;
  if (given.count("tensors")) {
    const json &a = *given.at("tensors");
    if (!a.contains("as_tensors"))
      return std::nullopt;
    for (const json &t : a.at("as_tensors")) {
      auto x = constant(t);
      if (!x)
        return std::nullopt;
      list.push_back(std::move(*x));
    }
  }
  std::optional<ts::Value> other;
  if (given.count("other")) {
    const json &a = *given.at("other");
    if (a.contains("as_tensor")) {
      other = constant(a.at("as_tensor"));
      if (!other)
        return std::nullopt;
    } else {
      other = ts::Value();
      other->kind = Kind::Tensor;
      other->floats = {number("other", 0)};
    }
  }
  if (given.count("alpha") && number("alpha", 1) != 1)
    return std::nullopt;
  const json &out = n.at("outputs").at(0).at("as_tensor");
  auto id = tensorNamed(out.at("name"));
  if (!id)
    return id.takeError();
  ts::Value v = g.values[*id];
  int64_t numel = 1;
  for (int64_t d : v.shape)
    numel *= d;
  // Constants the model computes are masks and positions, not weights.
  if (numel > (int64_t(1) << 24))
    return error(where(node) + ": " + name + " makes a constant of " +
                 llvm::Twine(numel) + " elements, too many to fold");
  std::vector<double> data;
  if (name.starts_with("aten.arange.")) {
    double start = number("start", 0), end = number("end", 0),
           step = number("step", 1);
    if (step == 0)
      return error(where(node) + ": arange with step 0");
    for (double x = start;
         (step > 0 ? x < end : x > end) && int64_t(data.size()) <= numel;
         x += step)
      data.push_back(x);
  } else if (name == "aten.cat.default") {
    auto joined = concat(list, indexOf(number("dim", 0)), v.shape);
    if (!joined)
      return error(where(node) + ": " + name +
                   " of constants that do not concatenate to its result's "
                   "shape");
    data = std::move(*joined);
  } else if (self && (mat2 || (name == "aten.matmul.default" && other))) {
    auto product = matmul(*self, mat2 ? *mat2 : *other, v.shape);
    if (!product)
      return error(where(node) + ": " + name +
                   " of constants that do not multiply to its result's "
                   "shape, or too large to fold");
    data = std::move(*product);
  } else if (auto viewed = view(name, given, self, v.shape)) {
    if (!*viewed)
      return error(where(node) + ": " + name +
                   " of a constant does not give its result's shape");
    data = std::move(**viewed);
  } else if (!self && !given.count("self")) {
    double fill = name == "aten.ones.default"    ? 1.0
                  : name == "aten.zeros.default" ? 0.0
                                                 : number("fill_value", 0);
    data.assign(numel, fill);
  } else if (name.starts_with("aten.expand") || other) {
    auto a = broadcast(*self, v.shape);
    auto b = other ? broadcast(*other, v.shape) : std::nullopt;
    if (!a || (other && !b))
      return error(where(node) + ": " + name +
                   " does not broadcast to its result's shape");
    data = std::move(*a);
    if (other) {
      llvm::StringRef op = name.drop_front(5).split('.').first;
      for (size_t k = 0; k < data.size(); ++k) {
        double x = data[k], y = (*b)[k];
        data[k] = op == "add"           ? x + y
                  : op == "sub"         ? x - y
                  : op == "mul"         ? x * y
                  : op == "le"          ? double(x <= y)
                  : op == "lt"          ? double(x < y)
                  : op == "ge"          ? double(x >= y)
                  : op == "gt"          ? double(x > y)
                  : op == "eq"          ? double(x == y)
                  : op == "ne"          ? double(x != y)
                  : op.ends_with("and") ? double(x != 0 && y != 0)
                                        : double(x != 0 || y != 0);
      }
    }
  } else {
    bool reshape = name.starts_with("aten.view") || name.contains("reshape") ||
                   name.contains("squeeze") || name.contains("_view") ||
                   name.starts_with("aten.flatten");
    if ((!reshape && self->shape != v.shape) ||
        std::max(self->floats.size(), self->ints.size()) != size_t(numel))
      return error(where(node) + ": " + name + " changes its operand's shape");
    for (int64_t k = 0; k < numel; ++k)
      data.push_back(self->floats.empty() ? double(self->ints[k])
                                          : self->floats[k]);
    if (name.starts_with("aten.tril") || name.starts_with("aten.triu")) {
      bool lower = name.starts_with("aten.tril");
      int64_t diag = int64_t(number("diagonal", 0));
      int64_t rows = v.shape.size() >= 2 ? v.shape.end()[-2] : 1;
      int64_t cols = v.shape.empty() ? 1 : v.shape.back();
      for (int64_t k = 0; k < numel; ++k) {
        int64_t c = k % cols, r = k / cols % rows;
        if (lower ? c - r > diag : c - r < diag)
          data[k] = 0;
      }
    } else if (name.contains("_not")) {
      for (double &x : data)
        x = v.dtype == DType::Bool ? double(x == 0) : double(~int64_t(x));
    } else if (name == "aten.cos.default") {
      for (double &x : data)
        x = std::cos(x);
    } else if (name == "aten.sin.default") {
      for (double &x : data)
        x = std::sin(x);
    }
  }
  if (int64_t(data.size()) != numel)
    return error(where(node) + ": " + name + " folds to " +
                 llvm::Twine(data.size()) + " elements but its result has " +
                 llvm::Twine(numel));
  v.dynamic = false;
  bool isFloat = v.dtype == DType::F32 || v.dtype == DType::F64 ||
                 v.dtype == DType::F16 || v.dtype == DType::BF16;
  for (double x : data) {
    // Each step rounds to the result's type, as torch computes it (a rotary
    // table's angles are f32 before their cosine).
    if (isFloat)
      v.floats.push_back(v.dtype == DType::F32 ? double(float(x)) : x);
    else
      v.ints.push_back(int64_t(x));
  }
  g.values[*id] = std::move(v);
  defined.insert(*id);
  return llvm::Error::success();
}

llvm::Error Reader::node(const json &n) {
  std::string target = n.at("target");
  llvm::StringRef name(target);
  name.consume_front("torch.ops.");
  ts::Node node;
  const json &meta = n.at("metadata");
  sourceOf(meta, node);
  moduleOf(meta, node);
  // "aten.linear.default" -> "aten::linear": the overload is in the args.
  auto [ns, rest] = name.split('.');
  node.kind = (ns + "::" + rest.split('.').first).str();

  // Arguments by name, then in schema order.
  std::unordered_map<std::string, const json *> given;
  for (const json &in : n.at("inputs"))
    given[in.at("name")] = &in.at("arg");
  // A check torch.export inserts before a cast; the mapping checks every
  // shape against the program's anyway.
  if (name == "aten._assert_tensor_metadata.default")
    return llvm::Error::success();
  if (std::optional<llvm::Error> folded = fold(name, n, given, node))
    return std::move(*folded);
  // Views and casts of computed values map as TorchScript's clone and to.
  if (name == "aten.alias.default")
    node.kind = "aten::clone";
  else if (name.starts_with("aten.to.") || name == "aten._to_copy.default")
    node.kind = "aten::to";
  const auto &table = schemas();
  auto schema = table.find(name);
  if (schema == table.end()) {
    unsupported.push_back(name.str() + " (" + where(node) + ")");
    std::string moe = moeModuleOf(meta);
    if (moeRouter.empty() && !moe.empty() && name.starts_with("aten.topk."))
      moeRouter = moe + " routes tokens to experts by " + name.str() + " (" +
                  where(node) + ")";
    // Its results count as computed, so that the one error lists every
    // unsupported op rather than stopping at the first reader of one.
    for (const json &out : n.at("outputs")) {
      std::vector<json> tensors;
      if (out.contains("as_tensor"))
        tensors.push_back(out.at("as_tensor"));
      else if (out.contains("as_tensors"))
        tensors = out.at("as_tensors").get<std::vector<json>>();
      for (const json &t : tensors) {
        auto id = tensorNamed(t.at("name"));
        if (!id)
          return id.takeError();
        defined.insert(*id);
      }
    }
    return llvm::Error::success();
  }
  for (const Arg &a : schema->second) {
    auto it = given.find(a.name);
    if (it != given.end()) {
      auto id = argument(*it->second, node);
      if (!id)
        return id.takeError();
      Kind got = g.values[*id].kind;
      bool number = got == Kind::Int || got == Kind::Float || got == Kind::Bool;
      bool ok = true;
      switch (wantOf(name, a.name)) {
      case Want::Tensor:
        ok = got == Kind::Tensor;
        break;
      case Want::OptionalTensor:
        ok = got == Kind::Tensor || got == Kind::None;
        break;
      case Want::TensorOrNumber:
        ok = got == Kind::Tensor || number;
        break;
      case Want::TensorList:
        ok = got == Kind::TensorList;
        break;
      case Want::Other:
        // Numbers and lists where the schema has them (a default of None
        // stands for an optional one).
        // Devices, layouts and memory formats read as Other, and no mapping
        // reads them.
        ok = got != Kind::Tensor && got != Kind::TensorList &&
             (got != Kind::Other || a.kind == Arg::None ||
              llvm::StringRef(a.name) == "device") &&
             (got != Kind::None || a.kind == Arg::None) &&
             (a.kind != Arg::Int || got == Kind::Int || got == Kind::Bool);
        break;
      }
      if (!ok)
        return error(where(node) + ": " + name + ": argument \"" + a.name +
                     "\" has the wrong kind");
      node.inputs.push_back(*id);
      continue;
    }
    ts::Value v;
    switch (a.kind) {
    case Arg::Required:
      return error(name + " without its argument \"" + a.name + "\"");
    case Arg::None:
      v.kind = Kind::None;
      break;
    case Arg::Int:
      v.kind = Kind::Int;
      v.i = int64_t(a.value);
      break;
    case Arg::Bool:
      v.kind = Kind::Bool;
      v.i = a.value != 0;
      break;
    case Arg::Float:
      v.kind = Kind::Float;
      v.f = a.value;
      break;
    case Arg::String:
      v.kind = Kind::String;
      v.s = a.text;
      break;
    }
    node.inputs.push_back(add(std::move(v)));
  }
  // Sizes and steps the mapping divides or loops by.
  for (llvm::StringRef arg : {"split_size", "chunks", "step"}) {
    auto it = given.find(arg.str());
    if (it != given.end() && it->second->contains("as_int") &&
        jsonInteger<int64_t>(*it->second, "as_int") < 1)
      return error(where(node) + ": " + name + ": " + arg + " must be >= 1");
  }
  for (auto &[argName, _] : given)
    if (llvm::none_of(schema->second,
                      [&](const Arg &a) { return argName == a.name; }))
      return error(name + " has an argument \"" + argName +
                   "\" ds does not know");

  // Results; a list of tensors is unpacked right away.
  std::vector<int> unpacked;
  for (const json &out : n.at("outputs")) {
    if (out.contains("as_tensor")) {
      auto id = tensorNamed(out.at("as_tensor").at("name"));
      if (!id)
        return id.takeError();
      node.outputs.push_back(*id);
      defined.insert(*id);
    } else if (out.contains("as_tensors")) {
      ts::Value list;
      list.kind = Kind::TensorList;
      list.dynamic = true;
      for (const json &t : out.at("as_tensors")) {
        auto id = tensorNamed(t.at("name"));
        if (!id)
          return id.takeError();
        list.elements.push_back(*id);
      }
      unpacked = list.elements;
      defined.insert(unpacked.begin(), unpacked.end());
      node.outputs.push_back(add(std::move(list)));
      defined.insert(node.outputs.back());
    } else {
      return error(name + " has a non-tensor result " + out.dump());
    }
  }
  if (node.outputs.empty())
    return error(where(node) + ": " + name + " has no result");
  ts::Node unpack;
  if (!unpacked.empty()) {
    unpack = node;
    unpack.kind = "prim::ListUnpack";
    unpack.inputs = {node.outputs.back()};
    unpack.outputs = unpacked;
  }
  g.nodes.push_back(std::move(node));
  if (!unpacked.empty())
    g.nodes.push_back(std::move(unpack));
  return llvm::Error::success();
}

llvm::Error Reader::read(std::optional<int64_t> microBatch) {
  if (auto err = inputs())
    return err;
  for (const json &n : graph.at("nodes"))
    if (auto err = node(n))
      return err;
  if (!moeRouter.empty())
    return error(moeRouter +
                 ": mixture-of-experts models are not imported from "
                 "PyTorch programs; ds's MoE layers come from a GPT spec's "
                 "\"moe\" section (docs/models.md)");
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string &op : unsupported)
      list += (list.empty() ? "" : ", ") + op;
    return error(llvm::Twine(unsupported.size()) + " unsupported ATen op" +
                 (unsupported.size() > 1 ? "s" : "") + ": " + list);
  }
  // The graph's shapes are the ones it was exported with.
  if (microBatch)
    for (const ts::Input &in : g.inputs) {
      const ts::Value &v = g.values[in.value];
      if (!v.shape.empty() && v.shape[0] != *microBatch)
        return error("input \"" + in.name + "\" was exported with batch " +
                     llvm::Twine(v.shape[0]) + " but the micro-batch is " +
                     llvm::Twine(*microBatch) +
                     "; export with that batch or a dynamic one "
                     "(dynamic_shapes={\"" +
                     in.name +
                     "\": {0: Dim(\"batch\")}, ...}), or set "
                     "train_micro_batch_size_per_gpu to " +
                     llvm::Twine(v.shape[0]));
    }
  const json &outputs = graph.at("outputs");
  std::vector<int> results;
  for (const json &out : outputs) {
    if (!out.contains("as_tensor"))
      continue;
    auto id = tensorNamed(out.at("as_tensor").at("name"));
    if (!id)
      return id.takeError();
    if (!defined.count(*id))
      return error("the program returns " + out.dump() +
                   ", which nothing computes");
    results.push_back(*id);
  }
  if (results.size() == 1 && outputs.size() == 1) {
    g.output = results[0];
    return llvm::Error::success();
  }
  ts::Node tuple;
  tuple.kind = "prim::TupleConstruct";
  tuple.inputs = results;
  ts::Value list;
  list.kind = Kind::TensorList;
  list.dynamic = true;
  list.elements = results;
  g.output = add(std::move(list));
  tuple.outputs = {g.output};
  g.nodes.push_back(std::move(tuple));
  return llvm::Error::success();
}

/// The text of an expression for a message, shortened.
std::string inQuotes(const std::string &text) {
  return "\"" + (text.size() > 160 ? text.substr(0, 157) + "..." : text) + "\"";
}

/// Fixes a program exported with dynamic_shapes to static sizes: binds
/// each input symbol (dim 0 of a batch input to `microBatch`, dim 1 to
/// `seqLen`, any other to the export's example size, its hint), checks
/// each against the program's range_constraints, and rewrites every
/// symbolic size, stride, offset and sym-int argument as the integer it
/// evaluates to. Nodes that only compute sym-ints (aten.sym_size.int and
/// their arithmetic) go: their values are in sym_int_values; a runtime
/// assert (aten._assert_scalar) is checked here.
llvm::Error specialize(json &program, std::optional<int64_t> microBatch,
                       std::optional<int64_t> seqLen) {
  json &graph = program.at("graph_module").at("graph");
  json &values = graph.at("tensor_values");
  llvm::StringMap<int64_t> symbols;
  // What set each symbol, for messages.
  llvm::StringMap<std::string> setBy;
  auto exprOf = [](const json &symInt) -> const json * {
    if (!symInt.is_object() || !symInt.contains("as_expr"))
      return nullptr;
    return &symInt.at("as_expr");
  };

  // Binds the one unbound symbol of `text` so that it evaluates to `want`:
  // `text` is that symbol alone, or linear in it (a derived Dim such as
  // 2*s0). false if it is neither; an error if it never takes `want`.
  auto bindTo = [&](const std::string &text, int64_t want,
                    const std::string &by) -> llvm::Expected<bool> {
    std::vector<std::string> unbound;
    for (const std::string &name : pt2::symbolsOf(text))
      if (!symbols.count(name))
        unbound.push_back(name);
    if (unbound.size() != 1)
      return false;
    const std::string &sym = unbound[0];
    auto at = [&](int64_t k) -> std::optional<int64_t> {
      llvm::StringMap<int64_t> trial = symbols;
      trial[sym] = k;
      auto v = pt2::evaluateSymExpr(text, trial);
      if (!v) {
        llvm::consumeError(v.takeError());
        return std::nullopt;
      }
      return *v;
    };
    auto f1 = at(1), f2 = at(2), f3 = at(3);
    if (!f1 || !f2 || !f3)
      return false;
    int64_t a = *f2 - *f1, b = *f1 - a;
    if (a == 0 || *f3 != 3 * a + b)
      return false;
    if ((want - b) % a != 0)
      return error(by + ": the program has that dim as " + inQuotes(text) +
                   ", which is " + llvm::Twine(a) + " x " + sym +
                   (b ? " + " + std::to_string(b) : std::string()) +
                   " and never " + llvm::Twine(want));
    symbols[sym] = (want - b) / a;
    setBy[sym] = by;
    return true;
  };

  // The batch inputs' dims 0 and 1, set by the options: symbols alone
  // first, then dims derived from one.
  bool seqDynamic = false;
  std::optional<std::pair<std::string, int64_t>> seqStatic;
  struct Wanted {
    std::string text, by;
    int64_t value;
  };
  std::vector<Wanted> wanted;
  for (const json &spec :
       program.at("graph_module").at("signature").at("input_specs")) {
    if (!spec.contains("user_input") ||
        !spec.at("user_input").at("arg").contains("as_tensor"))
      continue;
    std::string name =
        spec.at("user_input").at("arg").at("as_tensor").at("name");
    if (!values.contains(name))
      continue; // The reader says so.
    const json &sizes = values.at(name).at("sizes");
    for (size_t d = 0; d < 2 && d < sizes.size(); ++d) {
      const json *e = exprOf(sizes[d]);
      if (!e) {
        if (d == 1 && !seqStatic)
          seqStatic = {name, jsonInteger<int64_t>(sizes[d], "as_int")};
        continue;
      }
      seqDynamic |= d == 1;
      std::optional<int64_t> want = d == 0 ? microBatch : seqLen;
      if (!want)
        continue;
      std::string text = e->at("expr_str");
      std::string by = (d == 0 ? "--micro-batch " : "--seq-len ") +
                       std::to_string(*want) + " (dim " + std::to_string(d) +
                       " of input \"" + name + "\")";
      wanted.push_back({text, by, *want});
      auto sym = pt2::bareSymbol(text);
      if (!sym)
        continue;
      auto [it, added] = symbols.try_emplace(*sym, *want);
      if (!added && it->second != *want)
        return error(by + " and " + setBy[*sym] + " set symbol " + *sym +
                     ", one size of the program, to different values");
      setBy.try_emplace(*sym, by);
    }
  }
  for (const Wanted &w : wanted)
    if (auto bound = bindTo(w.text, w.value, w.by); !bound)
      return bound.takeError();
  if (seqLen && !seqDynamic) {
    if (!seqStatic)
      return error("--seq-len " + llvm::Twine(*seqLen) +
                   ": no batch input of the program has a sequence dim "
                   "(dim 1)");
    if (seqStatic->second != *seqLen)
      return error("input \"" + seqStatic->first +
                   "\" was exported with a static sequence length " +
                   llvm::Twine(seqStatic->second) + ", so --seq-len " +
                   llvm::Twine(*seqLen) +
                   " cannot change it; export with a dynamic dim 1 "
                   "(torch.export.export(..., dynamic_shapes={\"" +
                   seqStatic->first + "\": {1: Dim(\"seq\")}, ...}))");
  }

  // Every other symbol takes the export's example size (its hint), again
  // symbols alone first.
  std::vector<std::pair<std::string, int64_t>> hinted;
  auto noteHint = [&](const json &symInt) {
    const json *e = exprOf(symInt);
    if (!e || !e->contains("hint") || !e->at("hint").is_object() ||
        !e->at("hint").contains("as_int"))
      return;
    std::string text = e->at("expr_str");
    int64_t hint = jsonInteger<int64_t>(e->at("hint"), "as_int");
    auto sym = pt2::bareSymbol(text);
    if (!sym)
      hinted.emplace_back(text, hint);
    else if (symbols.try_emplace(*sym, hint).second)
      setBy[*sym] = "the export's example size";
  };
  for (auto &[name, meta] : values.items())
    for (const json &d : meta.at("sizes"))
      noteHint(d);
  if (graph.contains("sym_int_values"))
    for (auto &[name, v] : graph.at("sym_int_values").items())
      noteHint(v);
  for (const auto &[text, hint] : hinted)
    if (auto bound = bindTo(text, hint, "the export's example size"); !bound)
      return bound.takeError();

  // Within the ranges the program was exported for (keyed by a symbol or,
  // for a derived Dim, by the expression of one).
  if (program.contains("range_constraints") &&
      program.at("range_constraints").is_object())
    for (auto &[key, range] : program.at("range_constraints").items()) {
      auto value = pt2::evaluateSymExpr(key, symbols);
      if (!value) {
        llvm::consumeError(value.takeError());
        continue;
      }
      const json &lo = range.value("min_val", json()),
                 &hi = range.value("max_val", json());
      int64_t v = *value;
      if ((lo.is_number() && v < lo.get<double>()) ||
          (hi.is_number() && v > hi.get<double>())) {
        std::vector<std::string> syms = pt2::symbolsOf(key);
        std::string by =
            syms.empty() ? std::string("the program") : setBy.lookup(syms[0]);
        return error(by + ": " + (pt2::bareSymbol(key) ? "symbol " : "") + key +
                     " = " + llvm::Twine(v) + " is outside [" +
                     (lo.is_number() ? lo.dump() : "-inf") + ", " +
                     (hi.is_number() ? hi.dump() : "inf") +
                     "], the range the program was exported for (its "
                     "Dim's min and max, narrowed by the model's own "
                     "checks); use a size in range or export again with "
                     "a wider Dim");
      }
    }

  // What the options asked for is what the dims are.
  for (const Wanted &w : wanted) {
    auto v = pt2::evaluateSymExpr(w.text, symbols);
    if (v && *v != w.value)
      return error(w.by + ": the program has that dim as " + inQuotes(w.text) +
                   ", " + llvm::Twine(*v) +
                   " at the sizes the other "
                   "options and the export's example give");
    if (!v)
      llvm::consumeError(v.takeError());
  }

  // Every symbolic size, stride and offset as the integer it is.
  auto resolve = [&](json &symInt, const std::string &where) -> llvm::Error {
    const json *e = exprOf(symInt);
    if (!e)
      return llvm::Error::success();
    std::string text = e->at("expr_str");
    auto v = pt2::evaluateSymExpr(text, symbols);
    if (!v)
      return error(where + ": size expression " + inQuotes(text) + " " +
                   llvm::toString(v.takeError()));
    symInt = json{{"as_int", *v}};
    return llvm::Error::success();
  };
  for (auto &[name, meta] : values.items()) {
    for (const char *field : {"sizes", "strides"}) {
      if (!meta.contains(field))
        continue;
      json &dims = meta.at(field);
      for (size_t d = 0; d < dims.size(); ++d)
        if (auto err = resolve(dims[d], "tensor \"" + name + "\" " + field +
                                            "[" + std::to_string(d) + "]"))
          return err;
    }
    if (meta.contains("storage_offset"))
      if (auto err = resolve(meta.at("storage_offset"),
                             "tensor \"" + name + "\" storage_offset"))
        return err;
  }

  // Named sym-ints and sym-bools, evaluated when a node reads them.
  auto named = [&](const char *table, const std::string &name,
                   const char *plain) -> llvm::Expected<int64_t> {
    if (!graph.contains(table) || !graph.at(table).contains(name))
      return error("the program reads " + name + ", which no " + table +
                   " entry defines");
    json v = graph.at(table).at(name);
    if (v.contains(plain))
      return v.at(plain).is_boolean() ? int64_t(v.at(plain).get<bool>())
                                      : jsonInteger<int64_t>(v, plain);
    if (auto err = resolve(v, name))
      return std::move(err);
    return jsonInteger<int64_t>(v, "as_int");
  };
  auto symArg = [&](const json &a, const char *table,
                    const char *plain) -> llvm::Expected<int64_t> {
    if (a.contains("as_name"))
      return named(table, a.at("as_name"), plain);
    if (a.contains(plain))
      return a.at(plain).is_boolean() ? int64_t(a.at(plain).get<bool>())
                                      : jsonInteger<int64_t>(a, plain);
    return error("a symbolic argument " + a.dump().substr(0, 200) +
                 " that is neither a name nor a constant");
  };
  json kept = json::array();
  for (json &n : graph.at("nodes")) {
    std::string target = n.at("target");
    bool symOnly = !n.at("outputs").empty();
    for (const json &out : n.at("outputs"))
      symOnly &= out.is_object() &&
                 (out.contains("as_sym_int") || out.contains("as_sym_ints") ||
                  out.contains("as_sym_bool") || out.contains("as_sym_bools"));
    if (target == "torch.ops.aten._assert_scalar.default") {
      for (const json &in : n.at("inputs")) {
        if (in.at("name") != "self" || !in.at("arg").contains("as_sym_bool"))
          continue;
        auto holds = symArg(in.at("arg").at("as_sym_bool"), "sym_bool_values",
                            "as_bool");
        if (!holds)
          return holds.takeError();
        if (!*holds) {
          std::string msg;
          for (const json &m : n.at("inputs"))
            if (m.at("name") == "assert_msg" &&
                m.at("arg").contains("as_string"))
              msg = m.at("arg").at("as_string");
          return error(
              "at these sizes the program's check fails: " +
              (msg.empty() ? std::string("aten._assert_scalar") : msg));
        }
      }
      continue;
    }
    if (symOnly || target == "torch.ops.aten.sym_constrain_range.default" ||
        target == "torch.ops.aten.sym_constrain_range_for_size.default")
      continue;
    for (json &in : n.at("inputs")) {
      json &arg = in.at("arg");
      if (arg.contains("as_sym_int")) {
        auto v = symArg(arg.at("as_sym_int"), "sym_int_values", "as_int");
        if (!v)
          return v.takeError();
        arg = json{{"as_int", *v}};
      } else if (arg.contains("as_sym_ints")) {
        std::vector<int64_t> ints;
        for (const json &a : arg.at("as_sym_ints")) {
          auto v = symArg(a, "sym_int_values", "as_int");
          if (!v)
            return v.takeError();
          ints.push_back(*v);
        }
        arg = json{{"as_ints", ints}};
      } else if (arg.contains("as_sym_bool")) {
        auto v = symArg(arg.at("as_sym_bool"), "sym_bool_values", "as_bool");
        if (!v)
          return v.takeError();
        arg = json{{"as_bool", *v != 0}};
      } else if (arg.contains("as_sym_float") ||
                 arg.contains("as_sym_floats")) {
        return error(target + " (" + n.at("outputs").dump().substr(0, 80) +
                     "): a symbolic float argument \"" +
                     in.at("name").get<std::string>() +
                     "\", which ds does not evaluate");
      }
    }
    kept.push_back(std::move(n));
  }
  graph["nodes"] = std::move(kept);
  return llvm::Error::success();
}

/// The archive and its program JSON, schema version checked.
llvm::Expected<std::pair<std::unique_ptr<Archive>, json>>
openProgram(const std::string &path) {
  auto archive = Archive::open(path);
  if (!archive)
    return archive.takeError();
  auto text = (*archive)->read("models/model.json");
  if (!text)
    return text.takeError();
  json program = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (program.is_discarded() || !program.is_object())
    return error("models/model.json is not valid JSON");
  const json &version = program.value("schema_version", json());
  if (!version.is_object() || !version.value("major", json()).is_number())
    return error("models/model.json has no schema_version; not a program "
                 "serialized by torch.export.save");
  int64_t major = jsonInteger<int64_t>(version, "major"),
          minor = jsonInteger<int64_t>(version, "minor", 0);
  if (major != pt2::kSchemaMajor)
    return error("the program is serialized with schema version " +
                 llvm::Twine(major) + "." + llvm::Twine(minor) + " (torch " +
                 program.value("torch_version", std::string("unknown")) +
                 "); ds reads schema version " +
                 llvm::Twine(pt2::kSchemaMajor) +
                 ".x (torch.export of PyTorch 2.x)");
  return std::make_pair(std::move(*archive), std::move(program));
}

} // namespace

llvm::Expected<ts::Graph>
pt2::readExportedProgram(const std::string &path,
                         std::optional<int64_t> microBatch,
                         std::optional<int64_t> seqLen) {
  try {
    auto opened = openProgram(path);
    if (!opened)
      return opened.takeError();
    if (auto err = specialize(opened->second, microBatch, seqLen))
      return std::move(err);
    Reader reader(*opened->first, opened->second);
    if (auto err = reader.read(microBatch))
      return std::move(err);
    return std::move(reader.g);
  } catch (const std::exception &e) {
    return error("malformed program: " + std::string(e.what()));
  }
}

llvm::Expected<std::vector<ts::Weights>>
pt2::readExportedWeights(const std::string &path) {
  auto graph = readExportedProgram(path, std::nullopt, std::nullopt);
  if (!graph)
    return graph.takeError();
  try {
    auto opened = openProgram(path);
    if (!opened)
      return opened.takeError();
    Reader reader(*opened->first, opened->second);
    std::vector<ts::Weights> out;
    for (const ts::Param &p : graph->params) {
      // Read again by name: the graph keeps only the statistics.
      auto v = reader.storedTensor(p.name);
      if (!v)
        return v.takeError();
      ts::Weights w{p.name, v->shape, {}};
      w.values.assign(v->floats.begin(), v->floats.end());
      out.push_back(std::move(w));
    }
    return out;
  } catch (const std::exception &e) {
    return error("malformed program: " + std::string(e.what()));
  }
}
