//===- TrainDialect.h - dstrain dialect --------------------------*- C++
//-*-===//
#ifndef DSTRAIN_TRAINDIALECT_H
#define DSTRAIN_TRAINDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "dstrain/TrainDialect.h.inc"

#endif // DSTRAIN_TRAINDIALECT_H
