//===- CsvMonitor.h - DeepSpeed's csv_monitor files -------------*- C++ -*-===//
//
// The files DeepSpeed's CSV monitor writes (deepspeed/monitor/csv_monitor.py):
// under output_path/job_name/, one file per event name with '/' and ' '
// replaced by '_' (Train/Samples/train_loss -> Train_Samples_train_loss.csv),
// opened for appending; a header row "step,<last part of the name>" the first
// time this process writes the file, then one "step,value" row per event,
// where step is the number of samples trained so far and value is printed as
// Python prints a float. Only rank 0 writes, as in DeepSpeed.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_CSVMONITOR_H
#define DS_DRIVER_CSVMONITOR_H

#include "ds/Config/Config.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace ds::driver {

/// `value` as Python's repr() prints a float (shortest digits that read
/// back to the same double; "0.001", "65536.0", "1e-05", "nan").
std::string pythonFloat(double value);

class CsvMonitor {
public:
  /// Creates output_path/job_name on rank 0 when enabled; otherwise writes
  /// nothing.
  static llvm::Expected<CsvMonitor>
  open(const ::ds::config::CsvMonitorConfig &config, int rank);

  bool enabled() const { return !dir.empty(); }

  /// One row per event in the file of its name.
  llvm::Error write(int64_t samples,
                    const std::vector<std::pair<std::string, double>> &events);

private:
  std::string dir;
  /// Files that have their header from this process.
  llvm::StringSet<> started;
};

} // namespace ds::driver

#endif // DS_DRIVER_CSVMONITOR_H
