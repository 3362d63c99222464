//===- RoutingMonitor.h - MoE routing metrics of each step -------*- C++
//-*-===//
//
// The compiled step returns, per MoE layer, the choices routed to each
// expert before capacity drops, the dropped choices and the aux loss, all
// over the whole data-parallel group (ds-moe-routing-metrics). This turns
// them into JSONL fields and watches for experts that get no token.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_ROUTINGMONITOR_H
#define DS_DRIVER_ROUTINGMONITOR_H

#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/Metrics.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace ds::driver {

class RoutingMonitor {
public:
  /// Finds the step's "moe/<layer>/<what>" results in `manifest`.
  explicit RoutingMonitor(const StepManifest &manifest);

  bool empty() const { return layers.empty(); }

  /// Reads this step's results and extends each expert's run of steps
  /// without a token.
  void observe(llvm::ArrayRef<Tensor> results);

  /// moe/<layer>/exp_counts, dropped_fraction and aux_loss of the last step.
  void addFields(
      std::vector<std::pair<std::string, MetricsWriter::Value>> &fields) const;

  /// "routing collapse: ..." when an expert has had no token for `window`
  /// steps or more; empty otherwise.
  std::string collapseWarning(int64_t window) const;

private:
  struct Layer {
    std::string name;
    size_t countsAt = 0, droppedAt = 0, auxAt = 0;
    std::vector<int64_t> counts;
    double droppedFraction = 0, auxLoss = 0;
    /// Consecutive steps each expert received no token, up to now.
    std::vector<int64_t> idleSteps;
  };
  std::vector<Layer> layers;
};

} // namespace ds::driver

#endif // DS_DRIVER_ROUTINGMONITOR_H
