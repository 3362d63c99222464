//===- RoutingMonitor.cpp - MoE routing metrics of each step --------------===//
#include "ds/Driver/RoutingMonitor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace ds::driver;

RoutingMonitor::RoutingMonitor(const StepManifest &manifest) {
  for (size_t k = 0; k < manifest.results.size(); ++k) {
    llvm::StringRef name = manifest.results[k].name;
    if (!name.consume_front("moe/"))
      continue;
    auto [layer, what] = name.rsplit('/');
    auto it = std::find_if(layers.begin(), layers.end(),
                           [&](const Layer &l) { return l.name == layer; });
    if (it == layers.end())
      it = layers.insert(layers.end(), Layer{layer.str()});
    if (what == "exp_counts") {
      it->countsAt = k;
      int64_t experts = manifest.results[k].shape.empty()
                            ? 1
                            : manifest.results[k].shape.front();
      it->counts.assign(experts, 0);
      it->idleSteps.assign(experts, 0);
    } else if (what == "dropped") {
      it->droppedAt = k;
    } else if (what == "aux_loss") {
      it->auxAt = k;
    }
  }
}

void RoutingMonitor::observe(llvm::ArrayRef<Tensor> results) {
  for (Layer &l : layers) {
    const float *counts = results[l.countsAt].data<float>();
    int64_t total = 0;
    for (size_t e = 0; e < l.counts.size(); ++e) {
      // Sums of whole counts in f32: exact below 2^24 tokens per step.
      l.counts[e] = std::llround(counts[e]);
      total += l.counts[e];
      l.idleSteps[e] = l.counts[e] == 0 ? l.idleSteps[e] + 1 : 0;
    }
    double dropped = *results[l.droppedAt].data<float>();
    l.droppedFraction = total > 0 ? dropped / double(total) : 0.0;
    l.auxLoss = *results[l.auxAt].data<float>();
  }
}

void RoutingMonitor::addFields(
    std::vector<std::pair<std::string, MetricsWriter::Value>> &fields) const {
  for (const Layer &l : layers) {
    std::string prefix = "moe/" + l.name + "/";
    fields.push_back({prefix + "exp_counts", l.counts});
    fields.push_back({prefix + "dropped_fraction", l.droppedFraction});
    fields.push_back({prefix + "aux_loss", l.auxLoss});
  }
}

std::string RoutingMonitor::collapseWarning(int64_t window) const {
  std::string warning;
  for (const Layer &l : layers) {
    std::string idle;
    int64_t steps = 0;
    for (size_t e = 0; e < l.idleSteps.size(); ++e) {
      if (l.idleSteps[e] < window)
        continue;
      idle += (idle.empty() ? "" : ",") + std::to_string(e);
      steps = steps ? std::min(steps, l.idleSteps[e]) : l.idleSteps[e];
    }
    if (!idle.empty())
      warning +=
          llvm::formatv("  routing collapse: {0} expert{1} {2} got "
                        "no token for {3} steps",
                        l.name, idle.find(',') == std::string::npos ? "" : "s",
                        idle, steps)
              .str();
  }
  return warning;
}
