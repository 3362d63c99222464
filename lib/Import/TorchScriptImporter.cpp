//===- TorchScriptImporter.cpp - Evaluated TorchScript -> model contract --===//
//
// Maps the data-carrying nodes of an evaluated TorchScript forward
// (TorchGraph.h) one-to-one onto dsnn ops; everything else was folded to
// constants by the evaluation. A traced attention arrives as matmul, div,
// masked_fill, softmax, matmul and stays that way: masked_fill with a
// constant mask becomes x·keep + fill (keep = 1 where unmasked, fill = the
// value where masked), which is exact for finite and infinite fill values.
// Calls of submodules (h.0, ln_f) become dsnn.layer regions named after them.
//
//===----------------------------------------------------------------------===//
#include "ExportedProgramReader.h"
#include "ModelBuilder.h"
#include "TorchGraphImport.h"

#include "ds/Import/Import.h"
#include "ds/Support/ShapeCheck.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::importer;
using ts::DType;

namespace {

using Kind = ts::Value::Kind;

Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Every aten/prim op the importer maps. Checked for all nodes before any is
/// mapped, so one error can list all the unsupported ones.
const llvm::StringSet<> &supportedOps() {
  static const llvm::StringSet<> ops = {"aten::linear",
                                        "aten::matmul",
                                        "aten::mm",
                                        "aten::bmm",
                                        "aten::addmm",
                                        "aten::baddbmm",
                                        "aten::embedding",
                                        "aten::layer_norm",
                                        "aten::rms_norm",
                                        "aten::scaled_dot_product_attention",
                                        "aten::gelu",
                                        "aten::relu",
                                        "aten::silu",
                                        "aten::tanh",
                                        "aten::exp",
                                        "aten::neg",
                                        "aten::rsqrt",
                                        "aten::softmax",
                                        "aten::_softmax",
                                        "aten::log_softmax",
                                        "aten::dropout",
                                        "aten::add",
                                        "aten::sub",
                                        "aten::rsub",
                                        "aten::mul",
                                        "aten::div",
                                        "aten::pow",
                                        "aten::view",
                                        "aten::reshape",
                                        "aten::_unsafe_view",
                                        "aten::flatten",
                                        "aten::unsqueeze",
                                        "aten::squeeze",
                                        "aten::view_as",
                                        "aten::reshape_as",
                                        "aten::expand",
                                        "aten::expand_as",
                                        "aten::transpose",
                                        "aten::t",
                                        "aten::permute",
                                        "aten::contiguous",
                                        "aten::clone",
                                        "aten::to",
                                        "aten::type_as",
                                        "aten::slice",
                                        "aten::select",
                                        "aten::split",
                                        "aten::split_with_sizes",
                                        "aten::chunk",
                                        "aten::unsafe_split",
                                        "aten::unsafe_chunk",
                                        "aten::cat",
                                        "aten::pad",
                                        "aten::concat",
                                        "aten::stack",
                                        "aten::masked_fill",
                                        "aten::eq",
                                        "aten::ne",
                                        "aten::where",
                                        "aten::cross_entropy_loss",
                                        "aten::nll_loss",
                                        "aten::nll_loss_nd",
                                        "aten::mse_loss",
                                        "aten::mean",
                                        "aten::sum",
                                        "aten::broadcast_tensors",
                                        "prim::ListConstruct",
                                        "prim::ListUnpack",
                                        "prim::TupleConstruct",
                                        "prim::TupleUnpack"};
  return ops;
}

Type elementType(MLIRContext *ctx, DType t) {
  Builder b(ctx);
  switch (t) {
  case DType::F64:
    return b.getF64Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I64:
    return b.getI64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::Bool:
    return b.getI1Type();
  default:
    return b.getF32Type();
  }
}

/// True for a constant boolean tensor [..., T, T] whose every [T, T] slice
/// keeps exactly the elements j <= i.
bool isCausalMask(const ts::Value &m) {
  if (m.dynamic || m.kind != Kind::Tensor || m.dtype != DType::Bool ||
      m.shape.size() < 2 || m.shape.end()[-1] != m.shape.end()[-2])
    return false;
  int64_t t = m.shape.back(), count = 1;
  for (int64_t d : m.shape)
    count *= d;
  if (int64_t(m.ints.size()) != count)
    return false;
  for (int64_t k = 0; k < count; ++k)
    if ((m.ints[k] != 0) != (k % t <= k / t % t))
      return false;
  return true;
}

std::string where(const ts::Node &n) {
  if (n.file.empty())
    return "unknown source";
  return n.file + ":" + std::to_string(n.line);
}

class Mapper {
public:
  Mapper(ModelBuilder &mb, const ts::Graph &g) : mb(mb), g(g) {}

  /// Binds a parameter or input value to its function argument.
  void bind(int id, Value v) { tensors[id] = v; }
  llvm::Error mapAll();
  llvm::Expected<Value> loss();

private:
  llvm::Error map(const ts::Node &n);
  // One group of node kinds each: the mapped node, or nullopt.
  std::optional<llvm::Error> mapLinearAlgebra(const ts::Node &n);
  std::optional<llvm::Error> mapNormAndActivation(const ts::Node &n);
  std::optional<llvm::Error> mapArithmetic(const ts::Node &n);
  std::optional<llvm::Error> mapShape(const ts::Node &n);
  std::optional<llvm::Error> mapLists(const ts::Node &n);
  std::optional<llvm::Error> mapMasks(const ts::Node &n);
  std::optional<llvm::Error> mapLossAndReduction(const ts::Node &n);
  llvm::Error fail(const ts::Node &n, const Twine &message) {
    return makeError(where(n) + ": " + n.kind + ": " + message);
  }

  const ts::Value &val(int id) const { return g.values[id]; }
  bool isNone(int id) const { return val(id).kind == Kind::None; }
  int64_t intArg(int id) const { return val(id).i; }
  double numArg(int id) const {
    return val(id).kind == Kind::Float ? val(id).f
                                       : static_cast<double>(val(id).i);
  }
  bool isScalar(int id) const {
    Kind k = val(id).kind;
    return k == Kind::Int || k == Kind::Float || k == Kind::Bool;
  }

  /// The tensor for value `id`: a mapped dynamic value, or the constant
  /// materialized (once per region) as an arith.constant.
  Value tensor(int id);
  /// A scalar operand as a 0-d constant of `like`'s element type.
  Value scalarLike(int id, Value like);
  /// An elementwise operand: numbers and constant 0-d tensors (which
  /// PyTorch's type promotion does not let widen a tensor) take `like`'s
  /// element type.
  Value operand(int id, Value like) {
    const ts::Value &v = val(id);
    if (isScalar(id))
      return scalarLike(id, like);
    if (!v.dynamic && v.kind == Kind::Tensor && v.shape.empty()) {
      Type elt = cast<RankedTensorType>(like.getType()).getElementType();
      return mb.scalarConstant(
          v.floats.empty() ? double(v.ints[0]) : v.floats[0], elt);
    }
    return tensor(id);
  }
  Value constantTensor(ArrayRef<int64_t> shape, Type elt,
                       ArrayRef<double> data);
  /// A comparison operand: numbers and constant 0-d tensors as a 0-d
  /// constant of `like`'s element type, float or integer.
  Value operandOfType(int id, Value like) {
    const ts::Value &v = val(id);
    bool number = isScalar(id) ||
                  (!v.dynamic && v.kind == Kind::Tensor && v.shape.empty());
    if (!number)
      return tensor(id);
    double d = isScalar(id)
                   ? numArg(id)
                   : (v.floats.empty() ? double(v.ints[0]) : v.floats[0]);
    return constantTensor({}, elementOf(like), {d});
  }
  /// A mask as i1: bool tensors the importer holds as i64 constants are
  /// compared with 0.
  Value asMask(Value m) {
    if (elementOf(m).isInteger(1))
      return m;
    return mb.compare(nn::ComparePredicate::ne, m,
                      constantTensor({}, elementOf(m), {0.0}));
  }

  /// Elements [start, end) of `x` along `d`: dsnn has no slice, a split
  /// into before/piece/after is one.
  Value range(Value x, int64_t d, int64_t start, int64_t end);

  llvm::Error set(const ts::Node &n, unsigned i, Value v);
  int64_t dim(int64_t d, int64_t rank) const { return d < 0 ? d + rank : d; }

  ModelBuilder &mb;
  const ts::Graph &g;
  llvm::DenseMap<int, Value> tensors;
  llvm::DenseMap<int, SmallVector<Value>> lists;
  llvm::DenseMap<int, Value> constants;
};

Value Mapper::constantTensor(ArrayRef<int64_t> shape, Type elt,
                             ArrayRef<double> data) {
  auto type = mb.tensorType(shape, elt);
  SmallVector<Attribute> attrs;
  for (double d : data)
    attrs.push_back(isa<FloatType>(elt) ? Attribute(FloatAttr::get(elt, d))
                                        : Attribute(IntegerAttr::get(
                                              elt, static_cast<int64_t>(d))));
  return mb.constant(DenseElementsAttr::get(type, attrs));
}

Value Mapper::tensor(int id) {
  if (Value v = tensors.lookup(id))
    return v;
  if (Value v = constants.lookup(id))
    return v;
  const ts::Value &c = val(id);
  Type elt = elementType(mb.context(), c.dtype);
  Value v;
  if (c.dtype == DType::Bool)
    elt = mb.i64();
  auto type = mb.tensorType(c.shape, elt);
  if (isa<FloatType>(elt)) {
    SmallVector<APFloat> data;
    for (double d : c.floats) {
      APFloat f(d);
      bool lost;
      f.convert(cast<FloatType>(elt).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      data.push_back(f);
    }
    v = mb.constant(DenseElementsAttr::get(type, data));
  } else {
    unsigned width = elt.getIntOrFloatBitWidth();
    SmallVector<APInt> data;
    for (int64_t d : c.ints)
      data.push_back(APInt(width, d, /*isSigned=*/true));
    v = mb.constant(DenseElementsAttr::get(type, data));
  }
  constants[id] = v;
  return v;
}

Value Mapper::scalarLike(int id, Value like) {
  Type elt = cast<RankedTensorType>(like.getType()).getElementType();
  return mb.scalarConstant(numArg(id), elt);
}

Value Mapper::range(Value x, int64_t d, int64_t start, int64_t end) {
  int64_t size = shapeOf(x)[d];
  if (start == 0 && end == size)
    return x;
  SmallVector<int64_t> sizes;
  if (start > 0)
    sizes.push_back(start);
  sizes.push_back(end - start);
  if (end < size)
    sizes.push_back(size - end);
  return mb.split(x, d, sizes)[start > 0 ? 1 : 0];
}

llvm::Error Mapper::set(const ts::Node &n, unsigned i, Value v) {
  const ts::Value &expected = val(n.outputs[i]);
  ArrayRef<int64_t> got = shapeOf(v);
  if (expected.kind == Kind::Tensor && ArrayRef<int64_t>(expected.shape) != got)
    return fail(n, "internal error: mapped to shape " + formatShape(got) +
                       " but PyTorch computed " + formatShape(expected.shape));
  tensors[n.outputs[i]] = v;
  return llvm::Error::success();
}

/// Matrix products and the embedding, when `n` is one; nullopt otherwise.
std::optional<llvm::Error> Mapper::mapLinearAlgebra(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  const ts::Value &result = val(n.outputs[0]);
  if (k == "aten::linear")
    return out(mb.linear(in(0), in(1), isNone(n.inputs[2]) ? Value() : in(2)));
  if (k == "aten::mm")
    return out(mb.matmul(in(0), in(1)));
  if (k == "aten::bmm")
    return out(mb.batchMatmul(in(0), in(1)));
  if (k == "aten::matmul") {
    Value a = in(0), b = in(1);
    auto sa = shapeOf(a), sb = shapeOf(b);
    if (sa.size() == 2 && sb.size() == 2)
      return out(mb.matmul(a, b));
    if (sa.size() >= 3 && sa.size() == sb.size() &&
        sa.drop_back(2) == sb.drop_back(2))
      return out(mb.batchMatmul(a, b));
    if (sa.size() >= 3 && sb.size() == 2) {
      // [..., M, K] x [K, N]: fold the leading dims into M.
      int64_t rows = 1;
      for (int64_t d : sa.drop_back())
        rows *= d;
      Value flat = mb.reshape(a, {rows, sa.back()});
      return out(mb.reshape(mb.matmul(flat, b), result.shape));
    }
    return fail(n, "operand shapes " + formatShape(sa) + " and " +
                       formatShape(sb) +
                       " need broadcasting or vectors, which dsnn matmuls "
                       "do not do");
  }
  if (k == "aten::addmm") {
    if (numArg(n.inputs[3]) != 1 || numArg(n.inputs[4]) != 1)
      return fail(n, "beta and alpha other than 1 are not supported");
    return out(mb.add(mb.matmul(in(1), in(2)), in(0)));
  }
  if (k == "aten::baddbmm") {
    // beta·input + alpha·(b1 @ b2): nn.MultiheadAttention adds its mask so.
    Value prod = mb.batchMatmul(in(1), in(2));
    if (numArg(n.inputs[4]) != 1)
      prod = mb.mul(prod, scalarLike(n.inputs[4], prod));
    Value bias = operand(n.inputs[0], prod);
    if (numArg(n.inputs[3]) == 0)
      return out(prod);
    if (numArg(n.inputs[3]) != 1)
      bias = mb.mul(bias, scalarLike(n.inputs[3], prod));
    return out(mb.add(prod, bias));
  }
  if (k == "aten::embedding") {
    if (intArg(n.inputs[2]) != -1)
      return fail(n, "padding_idx is not supported (its row must get no "
                     "gradient)");
    return out(mb.embedding(in(1), in(0)));
  }
  return std::nullopt;
}

/// Normalization, activations, softmax and dropout, when `n` is one; nullopt
/// otherwise.
std::optional<llvm::Error> Mapper::mapNormAndActivation(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  // layer_norm and rms_norm: (input, normalized_shape, weight, ...) over
  // the last dim; an absent weight (or bias) is ones (zeros).
  auto normParam = [&](unsigned i, double fill) -> Value {
    Value x = in(0);
    int64_t c = shapeOf(x).back();
    return isNone(n.inputs[i])
               ? constantTensor({c}, elementOf(x), std::vector<double>(c, fill))
               : in(i);
  };
  if (k == "aten::layer_norm" || k == "aten::rms_norm") {
    Value x = in(0);
    ArrayRef<int64_t> normalized = val(n.inputs[1]).ints;
    if (normalized.size() != 1 || normalized[0] != shapeOf(x).back())
      return fail(n, "only normalization over the last dim is supported");
    if (k == "aten::layer_norm")
      return out(mb.layerNorm(x, normParam(2, 1.0), normParam(3, 0.0),
                              numArg(n.inputs[4])));
    // eps=None is torch.finfo(x.dtype).eps.
    Type elt = elementOf(x);
    double eps =
        isNone(n.inputs[3])
            ? std::ldexp(1.0, 1 - cast<FloatType>(elt).getFPMantissaWidth())
            : numArg(n.inputs[3]);
    Value w = normParam(2, 1.0);
    return out(mb.rmsNorm(x, w, eps));
  }
  if (k == "aten::scaled_dot_product_attention") {
    // (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    // A constant boolean mask that keeps exactly j <= i (how Hugging Face
    // passes causality) is the causal flag.
    bool causalMask = !isNone(n.inputs[3]) && isCausalMask(val(n.inputs[3]));
    if (!isNone(n.inputs[3]) && !causalMask)
      return fail(n, "attn_mask other than a constant causal mask is not "
                     "supported yet");
    if (numArg(n.inputs[4]) != 0)
      return fail(n, "dropout_p > 0 is not supported");
    Value q = in(0), key = in(1), v = in(2);
    if (n.inputs.size() > 7 && intArg(n.inputs[7])) {
      // enable_gqa: each key/value head serves `group` consecutive query
      // heads (repeat_interleave on dim -3), so repeat them as Hugging
      // Face's repeat_kv does: [.., Hkv, 1, S, D] -> expand -> reshape.
      auto sq = shapeOf(q), sk = shapeOf(key);
      if (sq.size() < 3 || sk.size() != sq.size() || shapeOf(v) != sk ||
          sk.end()[-3] == 0 || sq.end()[-3] % sk.end()[-3] != 0)
        return fail(n, "enable_gqa needs query heads " +
                           formatShape(sq) +
                           " a multiple of key/value heads " +
                           formatShape(sk) + " on dim -3");
      int64_t group = sq.end()[-3] / sk.end()[-3];
      auto repeat = [&](Value x) {
        if (group == 1)
          return x;
        SmallVector<int64_t> one(sk.begin(), sk.end()), wide, out;
        one.insert(one.end() - 2, 1);
        wide = one;
        wide.end()[-3] = group;
        out.assign(sk.begin(), sk.end());
        out.end()[-3] *= group;
        return mb.reshape(mb.expand(mb.reshape(x, one), wide), out);
      };
      key = repeat(key);
      v = repeat(v);
    }
    bool causal = intArg(n.inputs[5]) != 0 || causalMask;
    if (causal && shapeOf(q).end()[-2] != shapeOf(key).end()[-2])
      return fail(n, "is_causal needs as many queries as keys");
    std::optional<double> scale;
    if (n.inputs.size() > 6 && !isNone(n.inputs[6]))
      scale = numArg(n.inputs[6]);
    return out(mb.attention(q, key, v, causal, scale));
  }
  if (k == "aten::gelu") {
    bool tanh = n.inputs.size() > 1 && val(n.inputs[1]).s == "tanh";
    return out(mb.gelu(in(0), tanh ? nn::GeluApproximation::tanh
                                   : nn::GeluApproximation::none));
  }
  if (k == "aten::relu")
    return out(mb.relu(in(0)));
  if (k == "aten::silu")
    return out(mb.silu(in(0)));
  if (k == "aten::tanh")
    return out(mb.tanh(in(0)));
  if (k == "aten::exp")
    return out(mb.exp(in(0)));
  if (k == "aten::neg")
    return out(mb.neg(in(0)));
  if (k == "aten::rsqrt")
    return out(mb.rsqrt(in(0)));
  if (k == "aten::softmax" || k == "aten::_softmax" ||
      k == "aten::log_softmax") {
    Value x = in(0);
    int64_t d = dim(intArg(n.inputs[1]), shapeOf(x).size());
    return out(k == "aten::log_softmax" ? mb.logSoftmax(x, d)
                                        : mb.softmax(x, d));
  }
  if (k == "aten::dropout") {
    bool train = intArg(n.inputs[2]) != 0;
    return out(train ? mb.dropout(in(0), numArg(n.inputs[1])) : in(0));
  }
  return std::nullopt;
}

/// Elementwise add, sub, mul, div and pow, when `n` is one; nullopt otherwise.
std::optional<llvm::Error> Mapper::mapArithmetic(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  if (k == "aten::add" || k == "aten::sub" || k == "aten::rsub") {
    Value a = in(0), b = operand(n.inputs[1], a);
    if (n.inputs.size() > 2 && numArg(n.inputs[2]) != 1)
      b = mb.mul(b, scalarLike(n.inputs[2], a));
    if (k == "aten::add")
      return out(mb.add(a, b));
    if (k == "aten::sub")
      return out(mb.sub(a, b));
    // rsub(a, b, alpha) = b - alpha·a
    Value scaled = in(0);
    if (n.inputs.size() > 2 && numArg(n.inputs[2]) != 1)
      scaled = mb.mul(scaled, scalarLike(n.inputs[2], scaled));
    return out(mb.sub(operand(n.inputs[1], scaled), scaled));
  }
  if (k == "aten::mul" || k == "aten::div") {
    if (k == "aten::div" && n.inputs.size() > 2 && !isNone(n.inputs[2]))
      return fail(n, "rounding division is not differentiable");
    bool aIsScalar = isScalar(n.inputs[0]) || (!val(n.inputs[0]).dynamic &&
                                               val(n.inputs[0]).shape.empty());
    Value a = aIsScalar ? Value() : in(0);
    Value b = operand(n.inputs[1], a ? a : in(1));
    if (!a)
      a = operand(n.inputs[0], b);
    return out(k == "aten::mul" ? mb.mul(a, b) : mb.div(a, b));
  }
  if (k == "aten::pow") {
    // Small integer powers (x ** 3 in GPT-2's tanh GELU) as products.
    double e = isScalar(n.inputs[1]) ? numArg(n.inputs[1]) : 0;
    if (e != std::floor(e) || e < 1 || e > 4)
      return fail(n, "only x ** 1, 2, 3 or 4 is supported");
    Value x = in(0), y = x;
    for (int i = 1; i < int(e); ++i)
      y = mb.mul(y, x);
    return out(y);
  }
  return std::nullopt;
}

/// Views, broadcasts, transposes, slices and splits, when `n` is one; nullopt
/// otherwise.
std::optional<llvm::Error> Mapper::mapShape(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  const ts::Value &result = val(n.outputs[0]);
  if (k == "aten::view" || k == "aten::reshape" || k == "aten::_unsafe_view" ||
      k == "aten::flatten" || k == "aten::unsqueeze" || k == "aten::squeeze" ||
      k == "aten::view_as" || k == "aten::reshape_as")
    return out(mb.reshape(in(0), result.shape));
  if (k == "aten::expand" || k == "aten::expand_as") {
    // A malformed program's result shape must not reach the builder.
    Value x = in(0);
    auto have = shapeOf(x);
    ArrayRef<int64_t> want = result.shape;
    bool ok = have.size() <= want.size();
    for (size_t i = 0; ok && i < have.size(); ++i) {
      int64_t w = want[want.size() - have.size() + i];
      ok = have[i] == w || have[i] == 1;
    }
    if (!ok)
      return fail(n, "cannot expand " + formatShape(have) + " to " +
                         formatShape(want));
    return out(mb.expand(x, want));
  }
  if (k == "aten::transpose" || k == "aten::t") {
    Value x = in(0);
    int64_t rank = shapeOf(x).size();
    if (rank < 2)
      return out(x);
    int64_t a = rank - 2, b = rank - 1;
    if (k == "aten::transpose") {
      a = dim(intArg(n.inputs[1]), rank);
      b = dim(intArg(n.inputs[2]), rank);
    }
    if (a < 0 || a >= rank || b < 0 || b >= rank)
      return fail(n, "dims out of range for rank " + Twine(rank));
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i == a ? b : i == b ? a : i);
    return out(mb.transpose(x, perm));
  }
  if (k == "aten::permute") {
    Value x = in(0);
    int64_t rank = shapeOf(x).size();
    SmallVector<int64_t> perm;
    llvm::SmallBitVector seen(rank);
    for (int64_t d : val(n.inputs[1]).ints) {
      int64_t p = dim(d, rank);
      if (p < 0 || p >= rank || seen.test(p))
        return fail(n, "dims are no permutation of rank " + Twine(rank));
      seen.set(p);
      perm.push_back(p);
    }
    if (int64_t(perm.size()) != rank)
      return fail(n, "dims are no permutation of rank " + Twine(rank));
    return out(mb.transpose(x, perm));
  }
  if (k == "aten::contiguous" || k == "aten::clone" || k == "aten::to" ||
      k == "aten::type_as") {
    Value x = in(0);
    Type from = cast<RankedTensorType>(x.getType()).getElementType();
    Type to = elementType(mb.context(), result.dtype);
    if (from == to)
      return out(x);
    if (!isa<FloatType>(from) || !isa<FloatType>(to))
      return fail(n, "only float-to-float conversions are supported");
    return out(mb.cast(x, to));
  }
  if (k == "aten::slice" || k == "aten::select") {
    Value x = in(0);
    auto shape = shapeOf(x);
    int64_t d = dim(intArg(n.inputs[1]), shape.size());
    if (d < 0 || d >= int64_t(shape.size()))
      return fail(n, "dim " + Twine(intArg(n.inputs[1])) + " out of range");
    int64_t size = shape[d];
    if (k == "aten::select") {
      int64_t start = dim(intArg(n.inputs[2]), size);
      if (start < 0 || start >= size)
        return fail(n, "index " + Twine(intArg(n.inputs[2])) +
                           " out of range");
      return out(mb.reshape(range(x, d, start, start + 1), result.shape));
    }
    auto clampIndex = [&](int id, int64_t dflt) {
      if (isNone(id))
        return dflt;
      int64_t v = intArg(id);
      if (v < 0)
        v += size;
      return std::clamp<int64_t>(v, 0, size);
    };
    int64_t start = clampIndex(n.inputs[2], 0);
    int64_t end = std::max(start, clampIndex(n.inputs[3], size));
    int64_t step = n.inputs.size() > 4 ? intArg(n.inputs[4]) : 1;
    if (step == 1)
      return out(mb.reshape(range(x, d, start, end), result.shape));
    // x[a:b:s] (rotary embeddings' even/odd features): a window of
    // count·s elements viewed as [count, s], of which one column is taken.
    // The window starts `offset` before `a` when it would run past the end.
    int64_t count = (end - start + step - 1) / step;
    int64_t offset = std::max<int64_t>(0, start + step * count - size);
    if (count == 0 || offset > start)
      return fail(n, "this strided slice is not supported");
    Value window = range(x, d, start - offset, start - offset + step * count);
    SmallVector<int64_t> grouped(shapeOf(window));
    grouped[d] = count;
    grouped.insert(grouped.begin() + d + 1, step);
    Value column =
        range(mb.reshape(window, grouped), d + 1, offset, offset + 1);
    return out(mb.reshape(column, result.shape));
  }
  if (k == "aten::split" || k == "aten::split_with_sizes" ||
      k == "aten::unsafe_split" || k == "aten::chunk" ||
      k == "aten::unsafe_chunk") {
    Value x = in(0);
    auto shape = shapeOf(x);
    int64_t d = dim(intArg(n.inputs[2]), shape.size()), size = shape[d];
    SmallVector<int64_t> sizes;
    if (val(n.inputs[1]).kind == Kind::IntList) {
      sizes.assign(val(n.inputs[1]).ints.begin(), val(n.inputs[1]).ints.end());
    } else {
      int64_t step = intArg(n.inputs[1]);
      if (k.ends_with("chunk"))
        step = (size + step - 1) / step;
      for (int64_t at = 0; at < size; at += step)
        sizes.push_back(std::min(step, size - at));
    }
    lists[n.outputs[0]] = mb.split(x, d, sizes);
    return llvm::Error::success();
  }
  if (k == "aten::broadcast_tensors") {
    auto it = lists.find(n.inputs[0]);
    if (it == lists.end())
      return fail(n, "the tensors to broadcast are unknown");
    SmallVector<int64_t> shape;
    for (Value x : it->second) {
      auto b = broadcastShapes(shape, shapeOf(x));
      if (!b)
        return fail(n, "shapes do not broadcast");
      shape = *b;
    }
    SmallVector<Value> expanded;
    for (Value x : it->second)
      expanded.push_back(mb.expand(x, shape));
    lists[n.outputs[0]] = expanded;
    return llvm::Error::success();
  }
  return std::nullopt;
}

/// Lists, tuples, and their concatenation, when `n` is one; nullopt otherwise.
std::optional<llvm::Error> Mapper::mapLists(const ts::Node &n) {
  StringRef k = n.kind;
  auto out = [&](Value v) { return set(n, 0, v); };
  if (k == "prim::ListConstruct" || k == "prim::TupleConstruct") {
    SmallVector<Value> elements;
    for (int id : n.inputs) {
      if (val(id).kind != Kind::Tensor)
        return fail(n, "only lists and tuples of tensors are supported");
      elements.push_back(tensor(id));
    }
    lists[n.outputs[0]] = elements;
    return llvm::Error::success();
  }
  if (k == "prim::ListUnpack" || k == "prim::TupleUnpack") {
    auto it = lists.find(n.inputs[0]);
    if (it == lists.end() || it->second.size() != n.outputs.size())
      return fail(n, "cannot unpack this list");
    for (unsigned i = 0; i < n.outputs.size(); ++i)
      if (auto err = set(n, i, it->second[i]))
        return err;
    return llvm::Error::success();
  }
  if (k == "aten::pad") {
    // (self, pad, mode, value): constant padding, last dim first, as a
    // concat with constant blocks (the shifted labels of a causal LM loss).
    Value x = tensor(n.inputs[0]);
    ArrayRef<int64_t> pads = val(n.inputs[1]).ints;
    if (val(n.inputs[2]).s != "constant" || pads.size() % 2 ||
        pads.size() / 2 > shapeOf(x).size() ||
        llvm::any_of(pads, [](int64_t p) { return p < 0; }))
      return fail(n, "only non-negative constant padding is supported");
    double fill = isNone(n.inputs[3]) ? 0.0 : numArg(n.inputs[3]);
    for (size_t i = 0; i < pads.size(); ++i) {
      if (!pads[i])
        continue;
      int64_t d = shapeOf(x).size() - 1 - i / 2;
      SmallVector<int64_t> shape(shapeOf(x));
      shape[d] = pads[i];
      int64_t count = 1;
      for (int64_t s : shape)
        count *= s;
      Value block =
          constantTensor(shape, elementOf(x), std::vector<double>(count, fill));
      x = i % 2 ? mb.concat({x, block}, d) : mb.concat({block, x}, d);
    }
    return out(x);
  }
  if (k == "aten::cat" || k == "aten::concat" || k == "aten::stack") {
    auto it = lists.find(n.inputs[0]);
    if (it == lists.end())
      return fail(n, "the tensors to concatenate are unknown");
    SmallVector<Value> xs;
    // Empty pieces (an empty key/value cache) add nothing.
    for (Value x : it->second)
      if (llvm::all_of(shapeOf(x), [](int64_t d) { return d != 0; }))
        xs.push_back(x);
    if (xs.size() == 1 && k != "aten::stack")
      return out(xs.front());
    if (xs.empty())
      return fail(n, "concatenates only empty tensors");
    int64_t rank = shapeOf(xs.front()).size() + (k == "aten::stack" ? 1 : 0);
    int64_t d = dim(intArg(n.inputs[1]), rank);
    if (k == "aten::stack")
      for (Value &x : xs) {
        SmallVector<int64_t> shape(shapeOf(x));
        shape.insert(shape.begin() + d, 1);
        x = mb.reshape(x, shape);
      }
    return out(mb.concat(xs, d));
  }
  return std::nullopt;
}

/// Comparisons, where and masked_fill, when `n` is one; nullopt otherwise.
std::optional<llvm::Error> Mapper::mapMasks(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  if (k == "aten::eq" || k == "aten::ne") {
    // `ids == pad`, `mask == 0`: a mask computed from the data.
    Value a = in(0);
    Value c = operandOfType(n.inputs[1], a);
    if (elementOf(a) != elementOf(c))
      return fail(n, "compares tensors of two element types");
    return out(mb.compare(k == "aten::eq" ? nn::ComparePredicate::eq
                                          : nn::ComparePredicate::ne,
                          a, c));
  }
  if (k == "aten::where") {
    if (n.inputs.size() != 3)
      return fail(n, "only where(condition, x, y) is supported");
    Value cond = asMask(in(0));
    bool xIsScalar = isScalar(n.inputs[1]);
    Value x = xIsScalar ? Value() : in(1);
    Value y = operand(n.inputs[2], x ? x : in(2));
    if (!x)
      x = operand(n.inputs[1], y);
    if (!isa<FloatType>(elementOf(x)) || elementOf(x) != elementOf(y))
      return fail(n, "only float values of one type can be selected");
    return out(mb.select(cond, x, y));
  }
  if (k == "aten::masked_fill" && val(n.inputs[1]).dynamic) {
    // A mask from the data: select, exact for any fill (-inf too).
    Value x = in(0);
    return out(mb.select(asMask(in(1)), operand(n.inputs[2], x), x));
  }
  if (k == "aten::masked_fill") {
    const ts::Value &mask = val(n.inputs[1]);
    Value x = in(0);
    double fill = isScalar(n.inputs[2])
                      ? numArg(n.inputs[2])
                      : (val(n.inputs[2]).floats.empty()
                             ? static_cast<double>(val(n.inputs[2]).ints[0])
                             : val(n.inputs[2]).floats[0]);
    std::vector<double> keep, fills;
    for (int64_t m : mask.ints) {
      keep.push_back(m ? 0.0 : 1.0);
      fills.push_back(m ? fill : 0.0);
    }
    Type elt = cast<RankedTensorType>(x.getType()).getElementType();
    Value kept = mb.mul(x, constantTensor(mask.shape, elt, keep));
    return out(mb.add(kept, constantTensor(mask.shape, elt, fills)));
  }
  return std::nullopt;
}

/// Losses, mean and sum, when `n` is one; nullopt otherwise.
std::optional<llvm::Error> Mapper::mapLossAndReduction(const ts::Node &n) {
  StringRef k = n.kind;
  auto in = [&](unsigned i) { return tensor(n.inputs[i]); };
  auto out = [&](Value v) { return set(n, 0, v); };
  if (k == "aten::cross_entropy_loss" || k == "aten::nll_loss" ||
      k == "aten::nll_loss_nd") {
    bool ce = k == "aten::cross_entropy_loss";
    if (!isNone(n.inputs[2]))
      return fail(n, "class weights are not supported");
    if (intArg(n.inputs[3]) != 1)
      return fail(n, "only reduction='mean' is supported");
    if (ce && n.inputs.size() > 5 && numArg(n.inputs[5]) != 0)
      return fail(n, "label smoothing is not supported");
    Value logits = in(0);
    if (!ce) {
      // nll_loss(log_softmax(z)) is cross_entropy(z), gradients included.
      auto lsm = logits.getDefiningOp<nn::LogSoftmaxOp>();
      if (!lsm || lsm.getNormalizedDim() != 1)
        return fail(n, "nll_loss is supported only on a log_softmax over "
                       "the class dim");
      logits = lsm.getInput();
    }
    int64_t rank = shapeOf(logits).size();
    if (rank < 2)
      return fail(n, "unbatched inputs are not supported");
    if (rank > 2) {
      // PyTorch's class dim is 1; dsnn's is the last.
      SmallVector<int64_t> perm{0};
      for (int64_t i = 2; i < rank; ++i)
        perm.push_back(i);
      perm.push_back(1);
      logits = mb.transpose(logits, perm);
    }
    return out(mb.crossEntropy(logits, in(1), intArg(n.inputs[4])));
  }
  if (k == "aten::mse_loss") {
    if (intArg(n.inputs[2]) != 1)
      return fail(n, "only reduction='mean' is supported");
    return out(mb.mseLoss(in(0), in(1)));
  }
  if (k == "aten::mean" || k == "aten::sum") {
    Value x = in(0);
    int64_t rank = shapeOf(x).size();
    SmallVector<int64_t> dims;
    bool keep = false;
    if (n.inputs.size() >= 4 && !isNone(n.inputs[1])) {
      for (int64_t d : val(n.inputs[1]).ints)
        dims.push_back(dim(d, rank));
      keep = intArg(n.inputs[2]) != 0;
    } else {
      for (int64_t i = 0; i < rank; ++i)
        dims.push_back(i);
    }
    llvm::sort(dims);
    return out(k == "aten::mean" ? mb.reduceMean(x, dims, keep)
                                 : mb.reduceSum(x, dims, keep));
  }
  return std::nullopt;
}

llvm::Error Mapper::map(const ts::Node &n) {
  for (auto group :
       {&Mapper::mapLinearAlgebra, &Mapper::mapNormAndActivation,
        &Mapper::mapArithmetic, &Mapper::mapShape, &Mapper::mapLists,
        &Mapper::mapMasks, &Mapper::mapLossAndReduction})
    if (std::optional<llvm::Error> done = (this->*group)(n))
      return std::move(*done);
  return fail(n, "no mapping (internal error: listed as supported)");
}

llvm::Error Mapper::mapAll() {
  // One error for every op ds cannot map, before mapping anything.
  std::string unsupported;
  unsigned count = 0;
  for (const ts::Node &n : g.nodes) {
    if (supportedOps().contains(n.kind))
      continue;
    unsupported += (count++ ? ", " : "") + n.kind + " (" + where(n) + ")";
  }
  if (count)
    return makeError(Twine(count) + " unsupported TorchScript op" +
                     (count > 1 ? "s" : "") + ": " + unsupported);

  // A run of nodes from one submodule that reads parameters becomes a
  // layer; parameterless submodules (activations, dropout) called in many
  // places would only make layers of one op with repeated names.
  llvm::DenseSet<int> paramValues;
  for (const ts::Param &p : g.params)
    paramValues.insert(p.value);
  auto moduleOf = [&](const ts::Node &n) { return StringRef(n.module); };
  std::vector<std::pair<size_t, size_t>> groups; // [begin, end) node ranges
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (groups.empty() || moduleOf(g.nodes[i]) != moduleOf(g.nodes[i - 1]))
      groups.push_back({i, i});
    groups.back().second = i + 1;
  }
  std::vector<bool> isLayer(groups.size(), false);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (size_t i = groups[gi].first; i < groups[gi].second; ++i)
      for (int id : g.nodes[i].inputs)
        if (!g.nodes[i].module.empty() && paramValues.contains(id))
          isLayer[gi] = true;

  // Values used after the group of nodes that defines them: what a layer
  // must yield.
  llvm::DenseMap<int, size_t> groupOf;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (size_t i = groups[gi].first; i < groups[gi].second; ++i)
      for (int id : g.nodes[i].outputs)
        groupOf[id] = gi;
  std::vector<llvm::SmallVector<int>> escaping(groups.size());
  llvm::DenseSet<int> escaped;
  auto use = [&](int id, size_t user) {
    auto it = groupOf.find(id);
    if (it != groupOf.end() && it->second != user && escaped.insert(id).second)
      escaping[it->second].push_back(id);
  };
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (size_t i = groups[gi].first; i < groups[gi].second; ++i)
      for (int id : g.nodes[i].inputs)
        use(id, gi);
  use(g.output, groups.size());

  for (size_t gi = 0; gi < groups.size(); ++gi) {
    auto [begin, end] = groups[gi];
    const ts::Node &first = g.nodes[begin];
    auto body = [&]() -> llvm::Error {
      for (size_t i = begin; i < end; ++i) {
        mb.setLoc(FileLineColLoc::get(mb.context(), g.nodes[i].file,
                                      g.nodes[i].line, 1));
        if (auto err = map(g.nodes[i]))
          return err;
      }
      return llvm::Error::success();
    };
    if (!isLayer[gi]) {
      if (auto err = body())
        return err;
      continue;
    }
    // Constants made inside a layer are not visible after it.
    constants.clear();
    llvm::Error error = llvm::Error::success();
    SmallVector<int> yielded;
    auto results =
        mb.layer(first.module, first.moduleType, [&]() -> SmallVector<Value> {
          SmallVector<Value> values;
          if ((error = body()))
            return values;
          for (int id : escaping[gi]) {
            if (Value v = tensors.lookup(id)) {
              values.push_back(v);
              yielded.push_back(id);
            } else if (lists.count(id)) {
              for (Value v : lists[id]) {
                values.push_back(v);
                yielded.push_back(-1 - id);
              }
            }
          }
          return values;
        });
    constants.clear();
    if (error)
      return error;
    // Later groups read the layer's results instead of its insides.
    llvm::DenseMap<int, unsigned> listPos;
    for (auto [id, v] : llvm::zip(yielded, results)) {
      if (id >= 0) {
        tensors[id] = v;
      } else {
        int list = -1 - id;
        lists[list][listPos[list]++] = v;
      }
    }
  }
  return llvm::Error::success();
}

llvm::Expected<Value> Mapper::loss() {
  auto isLoss = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.getRank() == 0 && isa<FloatType>(t.getElementType());
  };
  if (Value v = tensors.lookup(g.output)) {
    if (isLoss(v))
      return v;
    return makeError("forward must return the scalar loss, but returns a "
                     "tensor of shape " +
                     formatShape(shapeOf(v)));
  }
  auto it = lists.find(g.output);
  if (it != lists.end()) {
    SmallVector<Value> scalars;
    for (Value v : it->second)
      if (isLoss(v))
        scalars.push_back(v);
    if (scalars.size() == 1)
      return scalars.front();
  }
  return makeError("forward must return the scalar loss (or a tuple with "
                   "exactly one scalar float tensor) computed from the "
                   "parameters and inputs");
}

/// Parses "4x64xi64" into a shape and element type.
llvm::Expected<ts::InputType> parseInputType(StringRef text) {
  auto [shapeText, dtypeText] = text.rsplit('x');
  if (dtypeText.empty())
    std::swap(shapeText, dtypeText);
  ts::InputType type;
  static const std::pair<StringRef, DType> dtypes[] = {
      {"f32", DType::F32},   {"f64", DType::F64}, {"f16", DType::F16},
      {"bf16", DType::BF16}, {"i64", DType::I64}, {"i32", DType::I32},
      {"i1", DType::Bool}};
  bool found = false;
  for (auto [name, dtype] : dtypes)
    if (dtypeText == name) {
      type.dtype = dtype;
      found = true;
    }
  if (!found)
    return makeError("--inputs: \"" + text +
                     "\" must be DIMSxTYPE with TYPE one of f32, f64, f16, "
                     "bf16, i64, i32, i1 (e.g. 4x64xi64)");
  SmallVector<StringRef> dims;
  if (!shapeText.empty())
    shapeText.split(dims, 'x');
  for (StringRef d : dims) {
    int64_t size;
    if (d.getAsInteger(10, size) || size < 1)
      return makeError("--inputs: \"" + text + "\" has a bad dim \"" + d +
                       "\"");
    type.shape.push_back(size);
  }
  return type;
}

} // namespace

bool mlir::ds::importer::haveTorchScriptImport() { return ts::haveLibTorch(); }

llvm::Expected<std::vector<NamedWeights>>
mlir::ds::importer::readTorchWeights(StringRef path) {
  if (!llvm::sys::fs::exists(path))
    return makeError("cannot read weights file \"" + path +
                     "\": No such file or directory");
  auto weights = path.ends_with(".pt2") ? pt2::readExportedWeights(path.str())
                                        : ts::loadTorchWeights(path.str());
  if (!weights)
    return makeError(path + ": " + llvm::toString(weights.takeError()));
  std::vector<NamedWeights> out;
  for (ts::Weights &w : *weights)
    out.push_back({std::move(w.name), std::move(w.shape), std::move(w.values)});
  return out;
}

llvm::Expected<OwningOpRef<ModuleOp>>
ts::importTorchGraph(MLIRContext &context, const ts::Graph &g, StringRef path) {
  auto prefixed = [&](llvm::Error err) {
    return makeError(path + ": " + llvm::toString(std::move(err)));
  };
  ModelBuilder mb(context, FileLineColLoc::get(&context, path, 1, 1));
  Mapper mapper(mb, g);
  // All parameters, in named_parameters() order, including any forward
  // never reads: they are still the model's state. Their values are in the
  // file; the init attributes only describe them (all zeros, all ones, or
  // normal with their standard deviation).
  for (const ts::Param &p : g.params) {
    if (p.dtype == DType::Other || p.dtype == DType::I64 ||
        p.dtype == DType::I32 || p.dtype == DType::Bool)
      return makeError(path + ": parameter \"" + p.name +
                       "\" is not a float tensor");
    nn::InitKind init = p.allZeros  ? nn::InitKind::zeros
                        : p.allOnes ? nn::InitKind::ones
                                    : nn::InitKind::normal;
    // A tensor reachable under several names (a tied LM head) is one
    // parameter whose group is named after its first module (wte).
    std::string tied;
    if (!p.aliases.empty())
      tied = StringRef(p.name).rsplit('.').first.str();
    mlir::Value v = mb.param(p.name, p.shape, init,
                             init == nn::InitKind::normal ? p.std : 0.0, tied,
                             {}, elementType(&context, p.dtype));
    if (p.value >= 0)
      mapper.bind(p.value, v);
  }
  for (const ts::Input &input : g.inputs) {
    const ts::Value &v = g.values[input.value];
    mapper.bind(
        input.value,
        mb.batch(input.name,
                 mb.tensorType(v.shape, elementType(&context, v.dtype))));
  }
  if (auto err = mapper.mapAll())
    return prefixed(std::move(err));
  auto loss = mapper.loss();
  if (!loss)
    return prefixed(loss.takeError());
  return mb.finish(*loss);
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::ds::importer::importTorchScriptFile(MLIRContext &context, StringRef path,
                                          const ImportOptions &options) {
  auto prefix = [&](llvm::Error err) {
    return makeError(path + ": " + llvm::toString(std::move(err)));
  };
  std::vector<ts::InputType> inputTypes;
  for (const std::string &text : options.inputTypes) {
    auto type = parseInputType(text);
    if (!type)
      return prefix(type.takeError());
    inputTypes.push_back(*type);
  }
  if (!llvm::sys::fs::exists(path))
    return makeError("cannot read TorchScript file \"" + path +
                     "\": No such file or directory");
  auto graph = ts::loadTorchScript(path.str(), inputTypes, options.microBatch);
  if (!graph)
    return prefix(graph.takeError());

  return ts::importTorchGraph(context, *graph, path);
}
