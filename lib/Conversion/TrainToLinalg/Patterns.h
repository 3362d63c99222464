//===- Patterns.h - Shared pieces of the dstrain lowering -------*- C++ -*-===//
//
// The dstrain ops mix two kinds of IR: elementwise and reducing
// linalg.generics over parameter-sized tensors (built with NNToLinalg's
// builders), and a little scalar math on 0-d tensors (step, lr, norms, the
// loss scale), done on extracted scalars and put back with
// tensor.from_elements.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_TRAINTOLINALG_PATTERNS_H
#define DS_LIB_CONVERSION_TRAINTOLINALG_PATTERNS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds::traintolinalg {

/// The element of a 0-d tensor.
Value extractScalar(OpBuilder &b, Location loc, Value tensor);

/// A 0-d tensor holding `scalar`.
Value scalarTensor(OpBuilder &b, Location loc, Value scalar);

/// The i64 step of a 0-d tensor as an f64 scalar.
Value stepAsF64(OpBuilder &b, Location loc, Value stepTensor);

/// f64 `base ^ exponent` for a constant base.
Value powConst(OpBuilder &b, Location loc, double base, Value exponent);

/// `acc`'s value in a new 0-d tensor. A running accumulator threaded
/// through one reduction per tensor would otherwise be one buffer written
/// in place by all of them, and bufferization's conflict analysis is
/// quadratic in such an alias set (one per parameter of the step).
Value freshAccumulator(OpBuilder &b, Location loc, Value acc);

/// The 0-d sum of squares of every element of every input, each
/// accumulated in f64 by one reduction generic chained into the next,
/// starting from the 0-d tensor `init` when given (else from 0), and
/// converted to `elemType` (f32 when null) once at the end.
Value sumOfSquares(OpBuilder &b, Location loc, ValueRange inputs,
                   Value init = {}, Type elemType = {});

// Pattern groups; one per file.
/// With `skipKernelOps`, updates isServedByOptimizerKernels accepts are left.
void populateOptimizerPatterns(RewritePatternSet &patterns, bool skipKernelOps);
void populateNormPatterns(RewritePatternSet &patterns);
void populateLRSchedulePatterns(RewritePatternSet &patterns);
void populateLossScalePatterns(RewritePatternSet &patterns);

} // namespace mlir::ds::traintolinalg

#endif // DS_LIB_CONVERSION_TRAINTOLINALG_PATTERNS_H
