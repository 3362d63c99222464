//===- DistOps.cpp - dsdist op verifiers and folders ----------------------===//
#include "dsdist/DistOps.h"
#include "ds/Support/ShapeCheck.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::dist;

//===----------------------------------------------------------------------===//
// Grid and group lookup
//===----------------------------------------------------------------------===//

GridAttr dist::lookupGrid(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto grid = p->getAttrOfType<GridAttr>(DistDialect::kGridAttrName))
      return grid;
  return {};
}

std::optional<int64_t> dist::getGroupSize(Operation *op, ArrayAttr axes) {
  GridAttr grid = lookupGrid(op);
  if (!grid)
    return std::nullopt;
  int64_t size = 1;
  for (Attribute axis : axes) {
    std::optional<int64_t> s = grid.getAxisSize(cast<StringAttr>(axis));
    if (!s)
      return std::nullopt;
    size *= *s;
  }
  return size;
}

/// `["dp", "ep"]` for diagnostics.
static std::string formatGroup(ArrayAttr axes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(axes, os, [&](Attribute a) {
    os << "\"" << cast<StringAttr>(a).getValue() << "\"";
  });
  os << "]";
  return s;
}

static FailureOr<GridAttr> verifyGridPresent(Operation *op) {
  GridAttr grid = lookupGrid(op);
  if (!grid)
    return op->emitOpError()
           << "needs a device grid: add `" << DistDialect::kGridAttrName
           << " = #dsdist.grid<...>` to the module";
  return grid;
}

static FailureOr<int64_t> verifyAxis(Operation *op, GridAttr grid,
                                     StringRef axis) {
  std::optional<int64_t> size = grid.getAxisSize(axis);
  if (!size)
    return op->emitOpError()
           << "axis \"" << axis << "\" is not on the grid; its axes are "
           << grid.formatAxes();
  return *size;
}

/// Verifies a process group against the enclosing grid; returns its size.
static FailureOr<int64_t> verifyGroup(Operation *op, ArrayAttr axes) {
  FailureOr<GridAttr> grid = verifyGridPresent(op);
  if (failed(grid))
    return failure();
  if (axes.empty())
    return op->emitOpError(
        "group is empty; name at least one grid axis, e.g. [\"dp\"]");
  llvm::SmallSet<StringRef, 4> seen;
  int64_t size = 1;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!seen.insert(name).second)
      return op->emitOpError() << "group " << formatGroup(axes)
                               << " lists axis \"" << name << "\" twice";
    FailureOr<int64_t> s = verifyAxis(op, *grid, name);
    if (failed(s))
      return failure();
    size *= *s;
  }
  return size;
}

//===----------------------------------------------------------------------===//
// Reduction kind: written as a bare keyword (`all_reduce sum %x ...`)
//===----------------------------------------------------------------------===//

static ParseResult parseReduction(OpAsmParser &parser,
                                  ReductionKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  std::optional<ReductionKind> value = symbolizeReductionKind(name);
  if (!value)
    return parser.emitError(loc) << "unknown reduction '" << name
                                 << "'; expected sum, avg, max or min";
  kind = ReductionKindAttr::get(parser.getContext(), *value);
  return success();
}

static void printReduction(OpAsmPrinter &printer, Operation *,
                           ReductionKindAttr kind) {
  printer << stringifyReductionKind(kind.getValue());
}

//===----------------------------------------------------------------------===//
// Reshaping collectives
//===----------------------------------------------------------------------===//

static LogicalResult verifyDimAttr(Operation *op, StringRef name, int64_t dim,
                                   int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << name << " " << dim << " is out of range for input rank " << rank;
  return success();
}

static LogicalResult verifySameRankAndElementType(Operation *op,
                                                  RankedTensorType in,
                                                  RankedTensorType out) {
  if (out.getRank() != in.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " does not match input rank " << in.getRank();
  if (out.getElementType() != in.getElementType())
    return op->emitOpError()
           << "result element type " << out.getElementType()
           << " does not match input element type " << in.getElementType();
  return success();
}

/// Dims the collective does not touch keep the input's size.
static LogicalResult verifyOtherDims(Operation *op, RankedTensorType in,
                                     RankedTensorType out,
                                     ArrayRef<int64_t> changed) {
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(changed, d) &&
        !dimsCompatible(out.getDimSize(d), in.getDimSize(d)))
      return op->emitOpError()
             << "result dim " << d << " is " << out.getDimSize(d)
             << " but must equal input dim " << d << " (" << in.getDimSize(d)
             << ")";
  return success();
}

static LogicalResult verifyDivisible(Operation *op, ArrayAttr axes, int64_t g,
                                     RankedTensorType in, int64_t dim) {
  int64_t n = in.getDimSize(dim);
  if (!ShapedType::isDynamic(n) && n % g != 0)
    return op->emitOpError()
           << "input dim " << dim << " is " << n << ", which the group "
           << formatGroup(axes) << " of size " << g << " does not divide";
  return success();
}

static LogicalResult verifyGather(Operation *op, ArrayAttr axes, int64_t dim,
                                  RankedTensorType in, RankedTensorType out) {
  FailureOr<int64_t> g = verifyGroup(op, axes);
  if (failed(g) || failed(verifySameRankAndElementType(op, in, out)) ||
      failed(verifyDimAttr(op, "dim", dim, in.getRank())))
    return failure();
  int64_t n = in.getDimSize(dim), m = out.getDimSize(dim);
  if (!ShapedType::isDynamic(n) && !dimsCompatible(m, *g * n))
    return op->emitOpError()
           << "result dim " << dim << " is " << m << " but the group "
           << formatGroup(axes) << " of size " << *g << " gathers " << *g
           << " x " << n << " = " << *g * n;
  return verifyOtherDims(op, in, out, {dim});
}

static LogicalResult verifyScatter(Operation *op, ArrayAttr axes, int64_t dim,
                                   RankedTensorType in, RankedTensorType out) {
  FailureOr<int64_t> g = verifyGroup(op, axes);
  if (failed(g) || failed(verifySameRankAndElementType(op, in, out)) ||
      failed(verifyDimAttr(op, "dim", dim, in.getRank())) ||
      failed(verifyDivisible(op, axes, *g, in, dim)))
    return failure();
  int64_t n = in.getDimSize(dim), m = out.getDimSize(dim);
  if (!ShapedType::isDynamic(n) && !dimsCompatible(m, n / *g))
    return op->emitOpError()
           << "result dim " << dim << " is " << m << " but the group "
           << formatGroup(axes) << " of size " << *g << " scatters " << n
           << " / " << *g << " = " << n / *g;
  return verifyOtherDims(op, in, out, {dim});
}

static LogicalResult verifyAllToAll(Operation *op, ArrayAttr axes,
                                    int64_t split, int64_t concat,
                                    RankedTensorType in, RankedTensorType out) {
  FailureOr<int64_t> g = verifyGroup(op, axes);
  if (failed(g) || failed(verifySameRankAndElementType(op, in, out)) ||
      failed(verifyDimAttr(op, "split_dim", split, in.getRank())) ||
      failed(verifyDimAttr(op, "concat_dim", concat, in.getRank())) ||
      failed(verifyDivisible(op, axes, *g, in, split)))
    return failure();
  if (split == concat)
    return verifyOtherDims(op, in, out, {});
  int64_t ns = in.getDimSize(split), nc = in.getDimSize(concat);
  if (!ShapedType::isDynamic(ns) &&
      !dimsCompatible(out.getDimSize(split), ns / *g))
    return op->emitOpError()
           << "result dim " << split << " (split) is " << out.getDimSize(split)
           << " but the group " << formatGroup(axes) << " of size " << *g
           << " splits it into " << ns << " / " << *g << " = " << ns / *g;
  if (!ShapedType::isDynamic(nc) &&
      !dimsCompatible(out.getDimSize(concat), *g * nc))
    return op->emitOpError()
           << "result dim " << concat << " (concat) is "
           << out.getDimSize(concat) << " but the group " << formatGroup(axes)
           << " of size " << *g << " concatenates " << *g << " x " << nc
           << " = " << *g * nc;
  return verifyOtherDims(op, in, out, {split, concat});
}

static RankedTensorType payload(Value handle) {
  return cast<HandleType>(handle.getType()).getPayload();
}

LogicalResult AllGatherOp::verify() {
  return verifyGather(*this, getAxes(), getDim(), getInput().getType(),
                      getType());
}
LogicalResult AllGatherStartOp::verify() {
  return verifyGather(*this, getAxes(), getDim(), getInput().getType(),
                      payload(getHandle()));
}
LogicalResult ReduceScatterOp::verify() {
  return verifyScatter(*this, getAxes(), getDim(), getInput().getType(),
                       getType());
}
LogicalResult ReduceScatterStartOp::verify() {
  return verifyScatter(*this, getAxes(), getDim(), getInput().getType(),
                       payload(getHandle()));
}
LogicalResult AllToAllOp::verify() {
  return verifyAllToAll(*this, getAxes(), getSplitDim(), getConcatDim(),
                        getInput().getType(), getType());
}
LogicalResult AllToAllStartOp::verify() {
  return verifyAllToAll(*this, getAxes(), getSplitDim(), getConcatDim(),
                        getInput().getType(), payload(getHandle()));
}

LogicalResult ShardOp::verify() {
  return verifyScatter(*this, getAxes(), getDim(), getInput().getType(),
                       getType());
}

LogicalResult CommOp::verify() {
  if (failed(verifyGroup(*this, getAxes())))
    return failure();
  auto in = cast<MemRefType>(getInput().getType());
  auto out = cast<MemRefType>(getOutput().getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "input element type " << in.getElementType()
                         << " differs from output element type "
                         << out.getElementType();
  bool reduces = getCollective() == CollectiveKind::all_reduce ||
                 getCollective() == CollectiveKind::reduce_scatter;
  if (reduces != getKind().has_value())
    return emitOpError() << stringifyCollectiveKind(getCollective())
                         << (reduces ? " needs" : " takes no")
                         << " reduction `kind`";
  return success();
}

LogicalResult AllReduceOp::verify() { return verifyGroup(*this, getAxes()); }
LogicalResult CopyToGroupOp::verify() { return verifyGroup(*this, getAxes()); }
LogicalResult AllReduceStartOp::verify() {
  return verifyGroup(*this, getAxes());
}

static LogicalResult verifyBroadcast(Operation *op, ArrayAttr axes,
                                     int64_t root) {
  FailureOr<int64_t> g = verifyGroup(op, axes);
  if (failed(g))
    return failure();
  if (root < 0 || root >= *g)
    return op->emitOpError()
           << "root " << root << " is out of range for the group "
           << formatGroup(axes) << " of size " << *g
           << "; it is a rank within the group";
  return success();
}
LogicalResult BroadcastOp::verify() {
  return verifyBroadcast(*this, getAxes(), getRoot());
}
LogicalResult BroadcastStartOp::verify() {
  return verifyBroadcast(*this, getAxes(), getRoot());
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

static bool isSingleRankGroup(Operation *op, ArrayAttr axes) {
  std::optional<int64_t> g = getGroupSize(op, axes);
  return g && *g == 1;
}

/// True when every rank of the group `axes` holds the same value of `v`:
/// it comes from a collective whose own group covers `axes`.
static bool isReplicatedOver(Value v, ArrayAttr axes) {
  Operation *def = v.getDefiningOp();
  ArrayAttr defAxes;
  if (auto op = dyn_cast_or_null<AllReduceOp>(def))
    defAxes = op.getAxes();
  else if (auto op = dyn_cast_or_null<AllGatherOp>(def))
    defAxes = op.getAxes();
  else if (auto op = dyn_cast_or_null<BroadcastOp>(def))
    defAxes = op.getAxes();
  else
    return false;
  return llvm::all_of(
      axes, [&](Attribute a) { return llvm::is_contained(defAxes, a); });
}

OpFoldResult AllGatherOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && isSingleRankGroup(*this, getAxes()))
    return getInput();
  return {};
}

OpFoldResult ShardOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && isSingleRankGroup(*this, getAxes()))
    return getInput();
  return {};
}

OpFoldResult ReduceScatterOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && isSingleRankGroup(*this, getAxes()))
    return getInput();
  return {};
}

OpFoldResult AllToAllOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && isSingleRankGroup(*this, getAxes()))
    return getInput();
  return {};
}

// The max, min or average of identical values is that value; a sum is not.
OpFoldResult AllReduceOp::fold(FoldAdaptor) {
  if (isSingleRankGroup(*this, getAxes()) ||
      (getKind() != ReductionKind::sum &&
       isReplicatedOver(getInput(), getAxes())))
    return getInput();
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (isSingleRankGroup(*this, getAxes()) ||
      isReplicatedOver(getInput(), getAxes()))
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Point to point, wait
//===----------------------------------------------------------------------===//

static LogicalResult verifyPeer(Operation *op, StringRef axis, int64_t offset) {
  FailureOr<GridAttr> grid = verifyGridPresent(op);
  if (failed(grid))
    return failure();
  FailureOr<int64_t> size = verifyAxis(op, *grid, axis);
  if (failed(size))
    return failure();
  if (offset == 0)
    return op->emitOpError("offset is 0; the peer must be another rank");
  if (offset <= -*size || offset >= *size)
    return op->emitOpError()
           << "offset " << offset << " is out of range for axis \"" << axis
           << "\" of size " << *size << "; |offset| must be < " << *size;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getAxis(), getOffset());
}
LogicalResult SendStartOp::verify() {
  return verifyPeer(*this, getAxis(), getOffset());
}
LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getAxis(), getOffset());
}
LogicalResult RecvStartOp::verify() {
  return verifyPeer(*this, getAxis(), getOffset());
}

LogicalResult WaitOp::verify() {
  RankedTensorType delivered = payload(getHandle());
  Value result = getResult();
  if (delivered && !result)
    return emitOpError() << "the handle delivers " << delivered
                         << "; wait must return it";
  if (!delivered && result)
    return emitOpError("the handle delivers nothing (a send); wait has no "
                       "result");
  if (result && result.getType() != delivered)
    return emitOpError() << "result type " << result.getType()
                         << " does not match the handle's tensor type "
                         << delivered;
  return success();
}

//===----------------------------------------------------------------------===//
// Pipeline schedule: the printed form
//===----------------------------------------------------------------------===//

// Each stage on its own line reads like DeepSpeed's per-stage command list:
//   { stage 0: forward(mb = 0, buf = 0), ...  stage 1: ... }
static ParseResult parseStreams(OpAsmParser &parser, ArrayAttr &streams) {
  if (parser.parseLBrace())
    return failure();
  SmallVector<Attribute> stages;
  while (succeeded(parser.parseOptionalKeyword("stage"))) {
    SMLoc loc = parser.getCurrentLocation();
    int64_t index;
    if (parser.parseInteger(index) || parser.parseColon())
      return failure();
    if (index != static_cast<int64_t>(stages.size()))
      return parser.emitError(loc)
             << "expected stage " << stages.size() << ", got stage " << index;
    SmallVector<Attribute> instrs;
    do {
      FailureOr<PipeInstrAttr> instr = PipeInstrAttr::parseBody(parser);
      if (failed(instr))
        return failure();
      instrs.push_back(*instr);
    } while (succeeded(parser.parseOptionalComma()));
    stages.push_back(parser.getBuilder().getArrayAttr(instrs));
  }
  if (parser.parseRBrace())
    return failure();
  streams = parser.getBuilder().getArrayAttr(stages);
  return success();
}

static void printStreams(OpAsmPrinter &printer, PipelineScheduleOp,
                         ArrayAttr streams) {
  printer << "{";
  printer.increaseIndent();
  for (auto [s, stream] : llvm::enumerate(streams)) {
    printer.printNewline();
    printer << "stage " << s << ": ";
    llvm::interleaveComma(cast<ArrayAttr>(stream), printer, [&](Attribute a) {
      cast<PipeInstrAttr>(a).printBody(printer.getStream());
    });
  }
  printer.decreaseIndent();
  printer.printNewline();
  printer << "}";
}

//===----------------------------------------------------------------------===//
// MoE dispatch / combine
//===----------------------------------------------------------------------===//

static LogicalResult
verifyElementTypes(Operation *op, StringRef refName, Value ref,
                   ArrayRef<std::pair<StringRef, Value>> others) {
  Type expected = getElementTypeOrSelf(ref.getType());
  for (auto [name, v] : others) {
    Type got = getElementTypeOrSelf(v.getType());
    if (got != expected)
      return op->emitOpError()
             << name << " element type " << got << " does not match " << refName
             << " element type " << expected;
  }
  return success();
}

LogicalResult MoEDispatchOp::verify() {
  auto tokens = getTokens().getType(), mask = getMask().getType();
  if (tokens.getRank() != 2)
    return emitOpError() << "tokens must be rank 2 [S, M], got rank "
                         << tokens.getRank();
  if (mask.getRank() != 3)
    return emitOpError() << "mask must be rank 3 [S, E, C], got rank "
                         << mask.getRank();
  if (!dimsCompatible(mask.getDimSize(0), tokens.getDimSize(0)))
    return emitOpError() << "mask dim 0 (S) is " << mask.getDimSize(0)
                         << " but tokens dim 0 (S) is " << tokens.getDimSize(0);
  if (failed(
          verifyElementTypes(*this, "tokens", getTokens(),
                             {{"mask", getMask()}, {"result", getResult()}})))
    return failure();
  SmallVector<int64_t> expected = {mask.getDimSize(1), mask.getDimSize(2),
                                   tokens.getDimSize(1)};
  if (!shapesCompatible(getType().getShape(), expected))
    return emitOpError() << "result shape " << formatShape(getType().getShape())
                         << " does not match [E, C, M] = "
                         << formatShape(expected)
                         << " (from mask [S, E, C] and tokens [S, M])";
  return success();
}

LogicalResult MoECombineOp::verify() {
  auto experts = getExpertOut().getType(), weights = getWeights().getType();
  if (experts.getRank() != 3)
    return emitOpError() << "expert_out must be rank 3 [E, C, M], got rank "
                         << experts.getRank();
  if (weights.getRank() != 3)
    return emitOpError() << "weights must be rank 3 [S, E, C], got rank "
                         << weights.getRank();
  if (!dimsCompatible(weights.getDimSize(1), experts.getDimSize(0)) ||
      !dimsCompatible(weights.getDimSize(2), experts.getDimSize(1)))
    return emitOpError() << "weights shape " << formatShape(weights.getShape())
                         << " must be [S, " << experts.getDimSize(0) << ", "
                         << experts.getDimSize(1)
                         << "] (E and C from expert_out)";
  if (failed(verifyElementTypes(
          *this, "expert_out", getExpertOut(),
          {{"weights", getWeights()}, {"result", getResult()}})))
    return failure();
  SmallVector<int64_t> expected = {weights.getDimSize(0),
                                   experts.getDimSize(2)};
  if (!shapesCompatible(getType().getShape(), expected))
    return emitOpError()
           << "result shape " << formatShape(getType().getShape())
           << " does not match [S, M] = " << formatShape(expected)
           << " (from weights [S, E, C] and expert_out [E, C, M])";
  return success();
}

#define GET_OP_CLASSES
#include "dsdist/DistOps.cpp.inc"
