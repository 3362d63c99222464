//===- DsnnRunner.cpp - JIT a dsnn function
//--------------------------------===//
#include "DsnnRunner.h"

#include "ds/InitAllDS.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <mutex>

using namespace mlir::ds::exec;

std::string ds::oracle::wrapFunction(const std::vector<std::string> &argTypes,
                                     const std::string &resultType,
                                     const std::string &body) {
  std::string text = "func.func @f(";
  for (size_t i = 0; i < argTypes.size(); ++i)
    text +=
        (i ? ", %" : "%") + std::string(1, char('a' + i)) + ": " + argTypes[i];
  text += ") -> " + resultType + " {\n";
  // The body defines %r itself (several lines, or one of several results)
  // or is one op whose single result becomes %r.
  if (body.find("%r = ") == std::string::npos &&
      body.find("%r, ") == std::string::npos)
    text += "  %r = ";
  text += body + "\n  return %r : " + resultType + "\n}\n";
  return text;
}

llvm::Expected<std::unique_ptr<Runner>>
ds::oracle::compileDsnn(const std::string &moduleText,
                        const std::string &prePipeline) {
  static std::once_flag registered;
  std::call_once(registered, [] { mlir::ds::registerAllDSPasses(); });
  RunnerOptions options;
  options.registerDialects = [](mlir::DialectRegistry &registry) {
    mlir::ds::registerAllDSDialects(registry);
  };
  options.preLowering = [prePipeline](mlir::OpPassManager &pm) {
    std::string pipeline = "ds-lower-nn-to-linalg";
    if (!prePipeline.empty())
      pipeline = prePipeline + "," + pipeline;
    (void)mlir::parsePassPipeline(pipeline, pm);
  };
  return Runner::fromSource(moduleText, options, "oracle-case");
}
