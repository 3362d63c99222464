//===- StepProfile.cpp - ds-train --profile -------------------------------===//
#include "ds/Driver/StepProfile.h"
#include "dsrt/dsrt.h"

#include "llvm/Support/Format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <vector>

using namespace ::ds::driver;
using nlohmann::ordered_json;

namespace {

/// How many kernels the table and the JSON list, slowest first.
constexpr size_t kTopKernels = 15;

/// One class's or one kernel's sums, per step.
struct Row {
  std::string name, cls;
  double calls = 0, seconds = 0, flops = 0, bytes = 0;

  void add(const dsrt_profile_kernel &k) {
    calls += double(k.calls);
    seconds += k.seconds;
    flops += double(k.flops);
    bytes += double(k.bytes);
  }
  Row perStep(int64_t steps) const {
    Row r = *this;
    for (double *v : {&r.calls, &r.seconds, &r.flops, &r.bytes})
      *v /= double(steps);
    return r;
  }
  double gflops() const { return seconds > 0 ? flops / seconds / 1e9 : 0; }
  double gbps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

  ordered_json toJson(double stepSeconds) const {
    ordered_json j = ordered_json::object();
    if (!name.empty())
      j["name"] = name;
    j["class"] = cls;
    j["calls"] = calls;
    j["seconds"] = seconds;
    j["share"] = stepSeconds > 0 ? seconds / stepSeconds : 0;
    // Integers: the counts are the compiler's, exact per step.
    j["flops"] = int64_t(flops);
    j["bytes"] = int64_t(bytes);
    j["gflop_per_s"] = gflops();
    j["gb_per_s"] = gbps();
    return j;
  }
};

void printRow(llvm::raw_ostream &os, const Row &r, double stepSeconds,
              llvm::StringRef label) {
  os << llvm::format(
      "  %-12s %9.2f %6.1f%% %8.0f", label.str().c_str(), r.seconds * 1e3,
      stepSeconds > 0 ? 100 * r.seconds / stepSeconds : 0.0, r.calls);
  if (r.flops > 0)
    os << llvm::format(" %9.1f", r.gflops());
  else
    os << llvm::format(" %9s", "-");
  if (r.bytes > 0)
    os << llvm::format(" %8.1f", r.gbps());
  else
    os << llvm::format(" %8s", "-");
}

} // namespace

void StepProfile::beforeStep(int64_t step, int64_t firstStep) {
  if (step <= firstStep + 1) {
    warmup = step - firstStep;
    dsrt_profile_reset();
    steps = 0;
    stepSeconds = commSeconds = 0;
    phaseSeconds = {};
  }
  since = dsrt_trace_now();
}

void StepProfile::afterStep(bool phases) {
  stepSeconds += dsrt_trace_now() - since;
  commSeconds += dsrt_comm_seconds();
  phasesTimed = phases;
  if (phases)
    for (int p = 0; p < 4; ++p)
      phaseSeconds[p] += dsrt_phase_seconds(DSRT_PHASE_FORWARD + p);
  ++steps;
}

llvm::Error StepProfile::write(const std::string &path,
                               llvm::raw_ostream &table) const {
  if (steps == 0)
    return llvm::createStringError("--profile: no step ran");
  const dsrt_profile_kernel *kernels = nullptr;
  int64_t count = 0;
  if (dsrt_profile_kernels(&kernels, &count) != DSRT_OK)
    return llvm::createStringError("--profile: %s", dsrt_last_error());
  std::vector<Row> classes(DSRT_PROFILE_CLASS_COUNT);
  std::vector<Row> rows;
  for (int32_t c = 0; c < DSRT_PROFILE_CLASS_COUNT; ++c)
    classes[c].cls = dsrt_profile_class_name(c);
  for (const dsrt_profile_kernel &k : llvm::ArrayRef(kernels, count)) {
    if (k.cls >= 0 && k.cls < DSRT_PROFILE_CLASS_COUNT)
      classes[k.cls].add(k);
    Row r{k.name, dsrt_profile_class_name(k.cls)};
    r.add(k);
    rows.push_back(r.perStep(steps));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
    return a.seconds > b.seconds;
  });
  rows.resize(std::min(rows.size(), kTopKernels));
  const double step = stepSeconds / double(steps);
  double attributed = 0;
  ordered_json j = ordered_json::object();
  j["steps"] = steps;
  j["warmup_steps"] = warmup;
  j["step_seconds"] = step;
  j["comm_seconds"] = commSeconds / double(steps);
  if (phasesTimed) {
    static const char *const names[] = {"forward", "backward", "reduction",
                                        "optimizer"};
    for (int p = 0; p < 4; ++p)
      j["phases"][names[p]] = phaseSeconds[p] / double(steps);
  }
  j["classes"] = ordered_json::array();
  for (Row &c : classes) {
    c = c.perStep(steps);
    attributed += c.seconds;
    j["classes"].push_back(c.toJson(step));
  }
  Row rest;
  rest.cls = "unattributed";
  rest.seconds = step - attributed;
  j["unattributed_seconds"] = rest.seconds;
  j["kernels"] = ordered_json::array();
  for (const Row &r : rows)
    j["kernels"].push_back(r.toJson(step));

  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out)
    return llvm::createStringError("--profile: cannot write %s", path.c_str());

  table << llvm::format("ds-train: profile of %lld step(s)", (long long)steps)
        << (warmup ? " after a warm-up step" : "")
        << llvm::format(", %.2f ms a step", step * 1e3)
        << (count == 0 ? " (the step has no profile spans: it was compiled "
                         "without --profile)"
                       : "")
        << "\n  class             ms   share    calls   GFLOP/s     GB/s\n";
  for (const Row &c : classes) {
    printRow(table, c, step, c.cls);
    table << "\n";
  }
  printRow(table, rest, step, rest.cls);
  table << "\n  top kernels       ms   share    calls   GFLOP/s     GB/s\n";
  for (const Row &r : rows) {
    printRow(table, r, step, r.cls);
    table << "  " << r.name << "\n";
  }
  return llvm::Error::success();
}
