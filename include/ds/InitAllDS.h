//===- InitAllDS.h - Register every ds dialect and pass ----------*- C++
//-*-===//
//
// One place that knows the full list, so ds-opt, ds-train and the tests
// cannot disagree about what exists.
//
//===----------------------------------------------------------------------===//
#ifndef DS_INITALLDS_H
#define DS_INITALLDS_H

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"
#include "ds/Pipelines/Pipelines.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistDialect.h"
#include "dsnn/NNDialect.h"
#include "dstrain/TrainDialect.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::ds {

inline void registerAllDSDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, dist::DistDialect, train::TrainDialect>();
  registerDifferentiableOpInterfaceExternalModels(registry);
  registerDistBufferizationModels(registry);
  registerOptimizerBufferizationModels(registry);
}

inline void registerAllDSPasses() {
  registerDSPasses();
  registerTrainingPipeline();
  registerDSConversionPasses();
  registerLowerToLLVMPipeline();
}

} // namespace mlir::ds

#endif // DS_INITALLDS_H
