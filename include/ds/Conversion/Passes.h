//===- Passes.h - ds conversion passes ---------------------------*- C++
//-*-===//
#ifndef DS_CONVERSION_PASSES_H
#define DS_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::ds {
#define GEN_PASS_DECL
#include "ds/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

#endif // DS_CONVERSION_PASSES_H
