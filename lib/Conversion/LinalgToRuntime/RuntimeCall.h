//===- RuntimeCall.h - Calling dsrt_* from bufferized code ------*- C++ -*-===//
//
// The two things every rewrite to a libdsrt call needs after bufferization:
// the raw address of a buffer's first element, and a call to a dsrt symbol
// declared once per module. Shared by the lowerings that run after
// deallocation placement (see Pipeline.cpp for why they run there).
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_LINALGTORUNTIME_RUNTIMECALL_H
#define DS_LIB_CONVERSION_LINALGTORUNTIME_RUNTIMECALL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ds::runtime_call {

/// `!llvm.ptr` to the first element of `memref` (aligned pointer plus the
/// offset from its strided metadata).
inline Value elementPointer(OpBuilder &b, Location loc, Value memref) {
  Type i64 = b.getI64Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value baseI64 = arith::IndexCastOp::create(b, loc, i64, base);
  Value raw = LLVM::IntToPtrOp::create(b, loc, ptr, baseI64);
  Value off = arith::IndexCastOp::create(b, loc, i64, md.getOffset());
  return LLVM::GEPOp::create(
      b, loc, ptr, cast<MemRefType>(memref.getType()).getElementType(), raw,
      ValueRange{off});
}

/// Calls the external function `name` returning `result`, declaring it
/// (private) at the top of the module on first use.
inline Value call(OpBuilder &b, Location loc, ModuleOp module,
                  SymbolTable &symbols, StringRef name, ValueRange args,
                  Type result) {
  auto type = FunctionType::get(b.getContext(), args.getTypes(), {result});
  auto fn = symbols.lookup<func::FuncOp>(name);
  if (!fn) {
    OpBuilder top(module.getContext());
    top.setInsertionPointToStart(module.getBody());
    fn = func::FuncOp::create(top, module.getLoc(), name, type);
    fn.setPrivate();
    symbols.insert(fn);
  }
  return func::CallOp::create(b, loc, fn, args).getResult(0);
}

} // namespace mlir::ds::runtime_call

#endif // DS_LIB_CONVERSION_LINALGTORUNTIME_RUNTIMECALL_H
