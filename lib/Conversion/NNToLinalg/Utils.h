//===- Utils.h - Builders shared by the dsnn lowering patterns ---*- C++
//-*-===//
//
// Every dsnn op lowers to a handful of shapes of IR: an elementwise or
// reducing linalg.generic, a zero-filled matmul, a reshape. These builders
// keep the conventions (compute type, broadcasting, fill values) in one place
// so the patterns read like the math they implement.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_NNTOLINALG_UTILS_H
#define DS_LIB_CONVERSION_NNTOLINALG_UTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds::nntolinalg {

/// The type arithmetic runs in: f32 for narrower floats (f32 accumulation),
/// otherwise the type itself.
Type getComputeType(Type elemType);

/// Converts a float scalar with extf/truncf; other values pass through.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to);

/// A float constant of type `type`.
Value floatConst(OpBuilder &b, Location loc, Type type, double value);

/// The one i64 element of a vocabulary piece's `offset` operand, or null
/// when there is none.
Value vocabOffset(OpBuilder &b, Location loc, Value offset);

/// Index `id` as a row of the vocabulary piece starting at `offset` and
/// holding `rows` rows: the row as an index (0 when outside the piece) and
/// whether it is inside.
std::pair<Value, Value> pieceRow(OpBuilder &b, Location loc, Value id,
                                 Value offset, int64_t rows);

/// tensor.empty of a static shape.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elemType);

/// tensor.empty filled with `value` by linalg.fill.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elemType, double value);

/// (d0..dn-1) -> (d0..dn-1).
AffineMap identityMap(MLIRContext *ctx, unsigned rank);

/// (d0..dn-1) -> the dims not in `dropped`, in order.
AffineMap dropDimsMap(MLIRContext *ctx, unsigned rank,
                      ArrayRef<int64_t> dropped);

/// NumPy broadcasting as an indexing map: operand dims align with the loop
/// dims from the back; a size-1 operand dim against a larger loop dim reads
/// index 0.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> loopShape,
                       ArrayRef<int64_t> operandShape);

/// Receives the block arguments (float ones already in their compute type)
/// and returns one value per output (converted to the output's element type
/// by the caller).
using BodyFn =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// One linalg.generic over `loopShape`. `reducedDims` become reduction
/// iterators. Float block arguments reach `body` in their compute type;
/// outputs are converted back to each init's element type.
SmallVector<Value> buildGeneric(OpBuilder &b, Location loc,
                                ArrayRef<int64_t> loopShape, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps, ValueRange inits,
                                ArrayRef<AffineMap> initMaps,
                                ArrayRef<int64_t> reducedDims, BodyFn body);

/// Elementwise generic producing `resultType`; inputs broadcast NumPy-style.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, BodyFn body);

/// Reduction of `inputs` (given with their maps over `loopShape`) over
/// `reducedDims` into one accumulator per entry of `initValues`, each of
/// element type `accType` and of `loopShape` without the reduced dims.
SmallVector<Value> buildReduction(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> loopShape,
                                  ValueRange inputs,
                                  ArrayRef<AffineMap> inputMaps,
                                  ArrayRef<int64_t> reducedDims, Type accType,
                                  ArrayRef<double> initValues, BodyFn body);

/// `shape` without the dims in `dims`.
SmallVector<int64_t> dropDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims);

/// Matrix product into a zero-filled accumulator of the compute type:
/// rank-2 operands give linalg.matmul, rank-3 linalg.batch_matmul. A
/// transposed operand is expressed by the op's indexing_maps (the
/// MatmulTransposeA/B forms of MLIR), never by a copy.
Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                  bool transposeA, bool transposeB);

/// Same elements, new static shape: one tensor.collapse_shape or
/// expand_shape when the shapes allow it, otherwise collapse to 1-D and
/// expand.
Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Converts every element to `elemType` (identity when it already is).
Value castElements(OpBuilder &b, Location loc, Value v, Type elemType);

/// Applies `softmax` (or log-softmax) along `dim` of a compute-type tensor:
/// max-reduce, exp(x - max), sum-reduce, then divide (or x - max - log sum).
Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim, bool log);

/// acc + x, written into `acc` (the generic's outs) so that bufferization
/// updates a carried accumulator in place.
Value addInto(OpBuilder &b, Location loc, Value x, Value acc);

/// Receives a block's start and static size and the carried values;
/// returns their next values.
using BlockFn = function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value start, int64_t size, ValueRange carried)>;

/// Runs `body` in order over the whole blocks of [begin, end) (an scf.for;
/// none when both are constants and the range is empty), then, when `rest`
/// is positive, over [end, end + rest). Static shapes throughout.
SmallVector<Value> forEachBlock(OpBuilder &b, Location loc, OpFoldResult begin,
                                OpFoldResult end, int64_t blockSize,
                                int64_t rest, ValueRange inits, BlockFn body);

/// The blocks of [0, t).
SmallVector<Value> forEachBlock(OpBuilder &b, Location loc, int64_t t,
                                int64_t blockSize, ValueRange inits,
                                BlockFn body);

/// True when every operand and result of `op` has a static shape.
bool hasStaticShapes(Operation *op);

/// Product of a static shape.
int64_t numElements(ArrayRef<int64_t> shape);

/// A value's ranked tensor type.
inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

// Pattern groups; one per file.
void populateElementwisePatterns(RewritePatternSet &patterns);
void populateMatmulPatterns(RewritePatternSet &patterns);
void populateShapePatterns(RewritePatternSet &patterns);
void populateNormalizationPatterns(RewritePatternSet &patterns);
void populateSoftmaxPatterns(RewritePatternSet &patterns);
/// Attention with more than `threshold` keys lowers by blocks of
/// `blockSize` keys (online softmax); blockSize 0 never blocks.
void populateAttentionPatterns(RewritePatternSet &patterns, int64_t blockSize,
                               int64_t threshold);
void populateLossPatterns(RewritePatternSet &patterns);
void populateEmbeddingPatterns(RewritePatternSet &patterns);
void populateStructurePatterns(RewritePatternSet &patterns);
void populateMoEPatterns(RewritePatternSet &patterns);

} // namespace mlir::ds::nntolinalg

#endif // DS_LIB_CONVERSION_NNTOLINALG_UTILS_H
