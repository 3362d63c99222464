//===- NNDialect.h - dsnn dialect --------------------------------*- C++
//-*-===//
#ifndef DSNN_NNDIALECT_H
#define DSNN_NNDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dsnn/NNDialect.h.inc"

#endif // DSNN_NNDIALECT_H
