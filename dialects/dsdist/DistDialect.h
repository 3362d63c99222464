//===- DistDialect.h - dsdist dialect ----------------------------*- C++
//-*-===//
#ifndef DSDIST_DISTDIALECT_H
#define DSDIST_DISTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dsdist/DistDialect.h.inc"

#endif // DSDIST_DISTDIALECT_H
