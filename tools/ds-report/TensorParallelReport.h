//===- TensorParallelReport.h - Tensor-parallel layout ----------*- C++ -*-===//
//
// With --model: how ds-tensor-parallel cuts each parameter of the model at
// the config's autotp_size, read back from the pass's output.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TOOLS_DS_REPORT_TENSORPARALLELREPORT_H
#define DS_TOOLS_DS_REPORT_TENSORPARALLELREPORT_H

#include "ds/Config/Config.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

struct TensorParallelReport {
  /// Each parameter's name with "column", "row", "vocab" or "replicated",
  /// in @forward's argument order.
  std::vector<std::pair<std::string, std::string>> layout;
};

llvm::Expected<TensorParallelReport>
reportTensorParallel(llvm::StringRef modelPath,
                     const ds::config::Config &config);

/// Adds "layout" to the resolved config's "tensor_parallel" object.
void addToJson(const TensorParallelReport &report, nlohmann::json &tp);

#endif // DS_TOOLS_DS_REPORT_TENSORPARALLELREPORT_H
