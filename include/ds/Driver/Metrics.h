//===- Metrics.h - Per-step metrics and progress lines -----------*- C++
//-*-===//
#ifndef DS_DRIVER_METRICS_H
#define DS_DRIVER_METRICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace ds::driver {

/// Peak resident set size of this process in bytes (getrusage).
int64_t peakRssBytes();
/// Resident set size of this process now, in bytes (/proc/self/statm; 0
/// where it cannot be read).
int64_t currentRssBytes();

/// One JSON object per line, flushed per step so a killed run keeps what it
/// measured. Keys keep the order they were added in.
class MetricsWriter {
public:
  using Value =
      std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

  /// Opens (truncates) `path`; an empty path writes nothing.
  static llvm::Expected<MetricsWriter> open(llvm::StringRef path);

  void write(const std::vector<std::pair<std::string, Value>> &fields);

  /// Appends a field to the next line written (events of the step, such as
  /// a checkpoint save, that only some steps have).
  void addToNextLine(std::string key, Value value) {
    extra.emplace_back(std::move(key), std::move(value));
  }

private:
  std::string path;
  std::vector<std::pair<std::string, Value>> extra;
  std::unique_ptr<std::ofstream> out;
};

} // namespace ds::driver

#endif // DS_DRIVER_METRICS_H
