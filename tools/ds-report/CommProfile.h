//===- CommProfile.h - Measured collective times for the cost model -------===//
//
// `ds-report --comm-profile FILE`, run on every rank of a job (ds-launch),
// times all-gather, reduce-scatter and all-reduce at several sizes on the
// group of all ranks, and rank 0 writes the points ds-schedule-comm fits
// its cost model to (docs/communication.md, "Cost model").
//
//===----------------------------------------------------------------------===//
#ifndef DS_TOOLS_DS_REPORT_COMMPROFILE_H
#define DS_TOOLS_DS_REPORT_COMMPROFILE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace ds::report {

struct CommProfileOptions {
  /// Whole-tensor bytes per point: the all-gather's output, the
  /// reduce-scatter's input, the all-reduce's buffer.
  llvm::ArrayRef<int64_t> sizes;
  /// Timed calls per point; the point is their median.
  int repeats = 5;
};

/// Measures on the world group and writes `path` on rank 0. Collective:
/// every rank calls it. Prints one line per point on rank 0.
llvm::Error writeCommProfile(llvm::StringRef path,
                             const CommProfileOptions &options);

} // namespace ds::report

#endif // DS_TOOLS_DS_REPORT_COMMPROFILE_H
