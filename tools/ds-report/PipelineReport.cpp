//===- PipelineReport.cpp - ds-report's pipeline section ------------------===//
#include "PipelineReport.h"

#include "ds/Driver/LoadModel.h"
#include "ds/Import/Import.h"
#include "dsdist/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
namespace pipeline = mlir::ds::pipeline;
using llvm::createStringError;

/// Runs the schedule op's verifier on the streams, so a stream ds-report
/// prints is one the compiler accepts.
static llvm::Error
verifySchedule(MLIRContext &ctx, const ::ds::config::PipelineConfig &config,
               ArrayRef<std::vector<pipeline::Step>> stages) {
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag += d.str();
    return success();
  });
  OpBuilder builder(&ctx);
  OwningOpRef<ModuleOp> holder = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(holder->getBody());
  Operation *op = pipeline::buildScheduleOp(builder, builder.getUnknownLoc(),
                                            config, stages);
  if (failed(mlir::verify(op)))
    return createStringError("internal error: the generated schedule fails "
                             "its verifier: " +
                             diag);
  return llvm::Error::success();
}

llvm::Expected<PipelineReport>
reportPipeline(llvm::StringRef modelPath, const ::ds::config::Config &config) {
  DialectRegistry registry;
  mlir::ds::importer::registerImportDialects(registry);
  registry.insert<mlir::ds::dist::DistDialect>();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  auto module = ::ds::driver::loadModel(ctx, modelPath, config);
  if (!module)
    return module.takeError();
  auto forward = (*module)->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return createStringError(modelPath.str() +
                             ": the model has no @forward to partition");

  PipelineReport report;
  report.config = config.pipeline;
  auto layers = pipeline::collectLayers(forward);
  if (!layers)
    return layers.takeError();
  report.layers = std::move(*layers);
  auto parts = pipeline::partitionLayers(report.layers, config.pipeline);
  if (!parts)
    return parts.takeError();
  report.parts = std::move(*parts);
  report.stageParams =
      pipeline::stageParams(forward, report.layers, report.parts);
  auto schedule = pipeline::buildSchedule(config.pipeline);
  if (!schedule)
    return schedule.takeError();
  report.schedule = std::move(*schedule);
  if (llvm::Error err = verifySchedule(ctx, config.pipeline, report.schedule))
    return std::move(err);
  return report;
}

void addToJson(const PipelineReport &report, nlohmann::json &pipe) {
  std::string kind = pipe["schedule"];
  int64_t numStages = report.schedule.size();
  nlohmann::json names = nlohmann::json::array(),
                 types = nlohmann::json::array();
  for (const pipeline::Layer &layer : report.layers) {
    names.push_back(layer.name);
    types.push_back(layer.type);
  }
  pipe["layers"] = names;
  pipe["types"] = types;
  pipe["parts"] = report.parts;
  pipe["stage_params"] = report.stageParams;
  std::vector<int64_t> buffers;
  for (int64_t s = 0; s < numStages; ++s)
    buffers.push_back(pipeline::numBuffers(report.config, s));
  nlohmann::json stages = nlohmann::json::array();
  for (const std::vector<pipeline::Step> &steps : report.schedule) {
    nlohmann::json stream = nlohmann::json::array();
    for (const pipeline::Step &step : steps) {
      nlohmann::json cmds = nlohmann::json::array();
      for (const pipeline::Instr &instr : step) {
        nlohmann::json buffer = nullptr;
        if (instr.buffer)
          buffer = *instr.buffer;
        nlohmann::json cmd = {pipeline::deepSpeedName(instr.kind).str(),
                              buffer};
        // DeepSpeed has no interleaved schedule: its chunk comes third.
        if (instr.chunk)
          cmd.push_back(*instr.chunk);
        cmds.push_back(cmd);
      }
      stream.push_back(cmds);
    }
    stages.push_back(stream);
  }
  pipe["schedule"] = {{"kind", kind},
                      {"steps", report.schedule.front().size()},
                      {"buffers", buffers},
                      {"stages", stages}};
}

std::string summarize(const PipelineReport &report,
                      const ::ds::config::Config &config) {
  std::string s;
  int64_t numStages = config.pipeline.stages;
  bool interleaved = report.parts.size() > size_t(numStages) + 1;
  // Under the interleaved schedule the parts are model chunks, chunk c on
  // stage c mod stages.
  for (size_t part = 0; part + 1 < report.parts.size(); ++part) {
    int64_t start = report.parts[part], stop = report.parts[part + 1];
    int64_t stage = int64_t(part) % numStages;
    // The stage's ranks, consecutive: its dp replicas, each a tp group.
    int64_t per = config.stageRanks(), first = stage * per;
    std::string ranks = std::to_string(first);
    if (per > 1)
      ranks += "-" + std::to_string(first + per - 1);
    if (interleaved)
      s += "chunk=" + std::to_string(part) + " ";
    s += "stage=" + std::to_string(stage) +
         " layers=" + std::to_string(stop - start) +
         " params=" + std::to_string(report.stageParams[part]) +
         " ranks=" + ranks + "\n";
    for (int64_t l = start; l < stop; ++l) {
      std::string index = std::to_string(l);
      s += std::string(index.size() < 2 ? 5 : 4, ' ') + index + ": " +
           report.layers[l].name + " (" + report.layers[l].type + ")\n";
    }
  }
  size_t steps = report.schedule.empty() ? 0 : report.schedule[0].size();
  s += "schedule: " +
       ::ds::config::stringifyPipelineSchedule(config.pipeline.schedule).str() +
       ", " + std::to_string(steps) + " steps per stage over " +
       std::to_string(config.pipeline.microBatches) + " micro-batches\n";
  return s;
}
