//===- DistDialect.cpp - dsdist dialect, attributes, types ----------------===//
#include "dsdist/DistDialect.h"
#include "dsdist/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ds::dist;

#include "dsdist/DistDialect.cpp.inc"
#include "dsdist/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dsdist/DistAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dsdist/DistTypes.cpp.inc"

void DistDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsdist/DistAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dsdist/DistTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dsdist/DistOps.cpp.inc"
      >();
}

// Rejecting unknown names catches misspellings such as `dsdist.gird`, which
// would otherwise leave collectives without a grid and fail far away.
// Function arguments may say how they are split over a group.
/// A pipe input, grad or output index: a non-negative i64.
static LogicalResult verifyPipeIndex(Operation *op, NamedAttribute attr,
                                     StringRef where, unsigned index) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || value.getInt() < 0)
    return op->emitError() << where << " #" << index << ": '"
                           << attr.getName().getValue()
                           << "' must be a non-negative integer";
  return success();
}

/// A tensor-parallel cut names its dim within the whole shape and splits
/// it into whole blocks.
static LogicalResult verifyTensorShard(Operation *op, NamedAttribute attr,
                                       unsigned argIndex) {
  auto shard = dyn_cast<TensorShardAttr>(attr.getValue());
  if (!shard)
    return op->emitError() << "argument #" << argIndex << ": '"
                           << attr.getName().getValue()
                           << "' must be a #dsdist.tensor_shard<...>";
  int64_t rank = shard.getShape().size(), dim = shard.getDim();
  if (dim < 0 || dim >= rank)
    return op->emitError() << "argument #" << argIndex << ": tensor_shard dim "
                           << dim << " is out of range for its shape of rank "
                           << rank;
  if (shard.getBlocks() < 1 || shard.getShape()[dim] % shard.getBlocks() != 0)
    return op->emitError() << "argument #" << argIndex << ": tensor_shard dim "
                           << dim << " of size " << shard.getShape()[dim]
                           << " is not " << shard.getBlocks()
                           << " equal blocks";
  return success();
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() == kPipeInputAttrName ||
      attr.getName() == kPipeGradAttrName)
    return verifyPipeIndex(op, attr, "argument", argIndex);
  if (attr.getName() == kTensorParallelAttrName)
    return verifyTensorShard(op, attr, argIndex);
  if (attr.getName() != kShardingAttrName && attr.getName() != kExpertsAttrName)
    return op->emitError() << "unknown argument attribute '"
                           << attr.getName().getValue()
                           << "'; the dsdist dialect defines '"
                           << kShardingAttrName << "', '" << kExpertsAttrName
                           << "', '" << kTensorParallelAttrName << "', '"
                           << kPipeInputAttrName << "' and '"
                           << kPipeGradAttrName << "' on arguments";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "argument #" << argIndex << ": '"
                           << attr.getName().getValue()
                           << "' must be a #dsdist.sharding<...>";
  for (Attribute axis : sharding.getAxes())
    if (!isa<StringAttr>(axis))
      return op->emitError()
             << "argument #" << argIndex << ": sharding axes must be strings";
  if (llvm::any_of(sharding.getShape(), [](int64_t d) { return d < 0; }))
    return op->emitError() << "argument #" << argIndex
                           << ": sharding shape must be static and >= 0";
  return success();
}

int64_t ShardingAttr::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : getShape())
    n *= d;
  return n;
}

int64_t ShardingAttr::getChunkSize(int64_t groupSize) const {
  return llvm::divideCeil(getNumElements(), groupSize);
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() != kPipeOutputAttrName)
    return op->emitError() << "unknown result attribute '"
                           << attr.getName().getValue()
                           << "'; the dsdist dialect defines only '"
                           << kPipeOutputAttrName << "' on results";
  return verifyPipeIndex(op, attr, "result", resultIndex);
}

/// `{stage = s, stages = p, shared = {...}, virtual_stages = v}` with
/// 0 <= s < p and v >= 1 (the stage's model chunks; 1 when absent).
static LogicalResult verifyPipelineAttr(Operation *op, Attribute value) {
  auto dict = dyn_cast<DictionaryAttr>(value);
  auto stage = dict ? dict.getAs<IntegerAttr>("stage") : IntegerAttr();
  auto stages = dict ? dict.getAs<IntegerAttr>("stages") : IntegerAttr();
  if (!stage || !stages || stage.getInt() < 0 ||
      stage.getInt() >= stages.getInt())
    return op->emitError() << "'" << DistDialect::kPipelineAttrName
                           << "' must be {stage = s, stages = p} with 0 <= s "
                              "< p, got "
                           << value;
  if (Attribute chunks = dict.get("virtual_stages")) {
    auto v = dyn_cast<IntegerAttr>(chunks);
    if (!v || v.getInt() < 1)
      return op->emitError()
             << "'" << DistDialect::kPipelineAttrName
             << "' virtual_stages must be an integer >= 1, got " << chunks;
  }
  if (Attribute shared = dict.get("shared")) {
    auto entries = dyn_cast<DictionaryAttr>(shared);
    if (!entries)
      return op->emitError() << "'" << DistDialect::kPipelineAttrName
                             << "' shared must be a dictionary";
    for (NamedAttribute entry : entries) {
      auto holders = dyn_cast<DenseI64ArrayAttr>(entry.getValue());
      if (!holders || holders.size() != 2 || holders[0] >= holders[1] ||
          holders[0] < 0 || holders[1] >= stages.getInt())
        return op->emitError()
               << "'" << DistDialect::kPipelineAttrName << "' shared "
               << entry.getName() << ": must name two stages in order, got "
               << entry.getValue();
    }
  }
  return success();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kPipelineAttrName)
    return verifyPipelineAttr(op, attr.getValue());
  if (attr.getName() != kGridAttrName)
    return op->emitError() << "unknown attribute '" << attr.getName().getValue()
                           << "'; the dsdist dialect defines '" << kGridAttrName
                           << "' and '" << kPipelineAttrName << "'";
  if (!isa<GridAttr>(attr.getValue()))
    return op->emitError() << "'" << kGridAttrName
                           << "' must be a #dsdist.grid<...>, got "
                           << attr.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// GridAttr
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kKnownAxes[] = {"pp", "dp", "ep", "tp",
                                                     "sp"};

Attribute GridAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<StringAttr> axes;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    StringRef name;
    int64_t size;
    if (parser.parseKeyword(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    axes.push_back(StringAttr::get(parser.getContext(), name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater,
                                     parseAxis))
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    axes, sizes);
}

void GridAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(
      llvm::zip_equal(getAxes(), getSizes()), printer, [&](auto axis) {
        printer << std::get<0>(axis).getValue() << " = " << std::get<1>(axis);
      });
  printer << ">";
}

LogicalResult GridAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> axes,
                               ArrayRef<int64_t> sizes) {
  assert(axes.size() == sizes.size() && "one size per axis");
  if (axes.empty())
    return emitError() << "#dsdist.grid needs at least one axis, e.g. "
                          "#dsdist.grid<dp = 1>";
  llvm::SmallSet<StringRef, 4> seen;
  for (auto [axis, size] : llvm::zip_equal(axes, sizes)) {
    StringRef name = axis.getValue();
    if (!llvm::is_contained(kKnownAxes, name))
      return emitError() << "#dsdist.grid: unknown axis \"" << name
                         << "\"; axes are pp, dp, ep, tp and sp";
    if (!seen.insert(name).second)
      return emitError() << "#dsdist.grid: axis \"" << name
                         << "\" appears twice";
    if (size < 1)
      return emitError() << "#dsdist.grid: axis \"" << name << "\" has size "
                         << size << " but must be >= 1";
  }
  return success();
}

std::optional<int64_t> GridAttr::getAxisSize(StringRef name) const {
  for (auto [axis, size] : llvm::zip_equal(getAxes(), getSizes()))
    if (axis.getValue() == name)
      return size;
  return std::nullopt;
}

int64_t GridAttr::getNumRanks() const {
  int64_t n = 1;
  for (int64_t size : getSizes())
    n *= size;
  return n;
}

std::string GridAttr::formatAxes() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(getAxes(), os,
                        [&](StringAttr a) { os << a.getValue(); });
  return s;
}

//===----------------------------------------------------------------------===//
// PipeInstrAttr
//===----------------------------------------------------------------------===//

FailureOr<PipeInstrAttr> PipeInstrAttr::parseBody(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  std::optional<PipeInstrKind> kind = symbolizePipeInstrKind(name);
  if (!kind) {
    InFlightDiagnostic diag = parser.emitError(loc)
                              << "unknown pipeline instruction '" << name
                              << "'; expected one of ";
    for (unsigned i = 0; i <= getMaxEnumValForPipeInstrKind(); ++i)
      diag << (i ? ", " : "") << stringifyPipeInstrKind(PipeInstrKind(i));
    return diag;
  }
  std::optional<int64_t> mb, buf, chunk;
  if (succeeded(parser.parseOptionalLParen())) {
    int64_t m, b;
    if (parser.parseKeyword("mb") || parser.parseEqual() ||
        parser.parseInteger(m) || parser.parseComma() ||
        parser.parseKeyword("buf") || parser.parseEqual() ||
        parser.parseInteger(b))
      return failure();
    if (succeeded(parser.parseOptionalComma())) {
      int64_t c;
      if (parser.parseKeyword("chunk") || parser.parseEqual() ||
          parser.parseInteger(c))
        return failure();
      chunk = c;
    }
    if (parser.parseRParen())
      return failure();
    mb = m;
    buf = b;
  }
  auto attr = getChecked([&] { return parser.emitError(loc); },
                         parser.getContext(), *kind, mb, buf, chunk);
  if (!attr)
    return failure();
  return attr;
}

void PipeInstrAttr::printBody(llvm::raw_ostream &os) const {
  os << stringifyPipeInstrKind(getKind());
  if (!getMicroBatch())
    return;
  os << "(mb = " << *getMicroBatch() << ", buf = " << *getBuffer();
  if (getChunk())
    os << ", chunk = " << *getChunk();
  os << ")";
}

Attribute PipeInstrAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<PipeInstrAttr> attr = parseBody(parser);
  if (failed(attr) || parser.parseGreater())
    return {};
  return *attr;
}

void PipeInstrAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printBody(printer.getStream());
  printer << ">";
}

LogicalResult
PipeInstrAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      PipeInstrKind kind, std::optional<int64_t> microBatch,
                      std::optional<int64_t> buffer,
                      std::optional<int64_t> chunk) {
  StringRef name = stringifyPipeInstrKind(kind);
  if (!isPerMicroBatch(kind)) {
    if (microBatch || buffer || chunk)
      return emitError() << name << " takes no micro-batch, buffer or chunk";
    return success();
  }
  if (chunk && *chunk < 0)
    return emitError() << name << ": chunk " << *chunk << " must be >= 0";
  if (!microBatch || !buffer)
    return emitError() << name << " needs a micro-batch and a buffer: " << name
                       << "(mb = N, buf = N)";
  if (*microBatch < 0 || *buffer < 0)
    return emitError() << name << ": micro-batch " << *microBatch
                       << " and buffer " << *buffer << " must be >= 0";
  return success();
}
