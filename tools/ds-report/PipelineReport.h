//===- PipelineReport.h - ds-report's pipeline section ----------*- C++ -*-===//
//
// With --model: the model's pipeline layers, DeepSpeed's boundary list for
// the config's partition method, what each stage holds, and every stage's
// instruction stream, checked by the dsdist.pipeline_schedule verifier.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TOOLS_DS_REPORT_PIPELINEREPORT_H
#define DS_TOOLS_DS_REPORT_PIPELINEREPORT_H

#include "ds/Config/Config.h"
#include "ds/Transforms/Pipeline.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

struct PipelineReport {
  ds::config::PipelineConfig config;
  std::vector<mlir::ds::pipeline::Layer> layers;
  std::vector<int64_t> parts;
  std::vector<int64_t> stageParams;
  std::vector<std::vector<mlir::ds::pipeline::Step>> schedule;
};

llvm::Expected<PipelineReport> reportPipeline(llvm::StringRef modelPath,
                                              const ds::config::Config &config);

/// The keys ds-report adds to the resolved config's "pipeline" object;
/// "schedule" becomes an object holding the schedule's name as "kind".
void addToJson(const PipelineReport &report, nlohmann::json &pipeline);

/// The partition as DeepSpeed prints it, one line per stage and per layer.
std::string summarize(const PipelineReport &report,
                      const ds::config::Config &config);

#endif // DS_TOOLS_DS_REPORT_PIPELINEREPORT_H
