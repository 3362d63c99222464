//===- ds-opt.cpp - mlir-opt with every ds dialect and pass
//----------------===//
//
// The compiler engineer's window into ds: any phase's IR can be read,
// fed back in and run through any pass, upstream or ds's own.
//
//===----------------------------------------------------------------------===//
#include "ds/InitAllDS.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::ds::registerAllDSPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::ds::registerAllDSDialects(registry);
  // gpu-module-to-binary translates each gpu.module to LLVM IR in-process.
  mlir::registerAllToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ds optimizer driver: ds and upstream MLIR passes\n",
      registry));
}
