//===- DsnnRunner.h - JIT a dsnn function (no LibTorch here) ----*- C++ -*-===//
//
// The MLIR half of the oracle harness, kept out of the LibTorch translation
// unit (which costs ~27 s to compile): dsnn text -> ds-lower-nn-to-linalg ->
// ds-lower-to-llvm -> a Runner.
//
//===----------------------------------------------------------------------===//
#ifndef DS_UNITTESTS_ORACLE_DSNNRUNNER_H
#define DS_UNITTESTS_ORACLE_DSNNRUNNER_H

#include "ds/Execution/JIT.h"

#include <memory>
#include <string>
#include <vector>

namespace ds::oracle {

/// `func.func @f(%a: argTypes[0], %b: ...) -> resultType { %r = BODY ... }`
/// where `body` is one op producing %r from %a, %b, ... (or several lines
/// ending in one that defines %r).
std::string wrapFunction(const std::vector<std::string> &argTypes,
                         const std::string &resultType,
                         const std::string &body);

/// Lowers dsnn (and anything below) and JITs the module; `prePipeline`
/// (e.g. "ds-autodiff") runs first.
llvm::Expected<std::unique_ptr<mlir::ds::exec::Runner>>
compileDsnn(const std::string &moduleText, const std::string &prePipeline = "");

} // namespace ds::oracle

#endif // DS_UNITTESTS_ORACLE_DSNNRUNNER_H
