//===- CommCostModel.h - Predicted time of a collective ---------*- C++ -*-===//
//
// The alpha-beta model of a ring collective over P ranks: a start-up cost
// per ring step (alpha) and a cost per byte on the wire (beta), each
// scaled by the steps and the share of the buffer a rank sends, as the
// ring algorithms of MPI and NCCL move it:
//
//   all_gather, reduce_scatter, all_to_all:  (P-1) alpha + (P-1)/P B beta
//   all_reduce:                            2 (P-1) alpha + 2(P-1)/P B beta
//
// with B the bytes of the whole buffer (the gathered result, the
// reduce-scatter's input, the all-reduced tensor). ds-schedule-comm
// decides fusion and prints its plan with it. The constants come from a
// profile of measured times when there is one (docs/communication.md).
//
//===----------------------------------------------------------------------===//
#ifndef DS_TRANSFORMS_COMMCOSTMODEL_H
#define DS_TRANSFORMS_COMMCOSTMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

namespace mlir::ds {

enum class CollectiveKind { AllGather, ReduceScatter, AllReduce, AllToAll };
constexpr unsigned kNumCollectiveKinds = 4;

/// The profile's name of a kind ("all_gather", ...), and back.
llvm::StringRef collectiveKindName(CollectiveKind kind);
std::optional<CollectiveKind> parseCollectiveKind(llvm::StringRef name);

/// seconds = alpha * steps + beta * wire bytes.
struct AlphaBeta {
  double alpha; // seconds per ring step
  double beta;  // seconds per byte a rank sends
};

/// The least-squares line y = a + b x through (x, y) points; with a < 0
/// (noise around a tiny start-up cost) the line through the origin that
/// fits best instead. Errors on fewer than two distinct x.
llvm::Expected<std::pair<double, double>>
fitLine(llvm::ArrayRef<std::pair<double, double>> points);

class CommCostModel {
public:
  /// Documented defaults (docs/communication.md): 20 us per ring step (an
  /// MPI message over TCP) and 10 Gbit/s per link, for every kind.
  static constexpr double kDefaultAlpha = 20e-6;
  static constexpr double kDefaultBeta = 8.0 / 10e9;

  CommCostModel();

  /// Reads a profile: {"version": 1, "backend": NAME, "group_size": P,
  /// "points": {"all_gather": [[bytes, seconds], ...], ...}}. Kinds the
  /// profile omits keep the defaults. Errors name the path and the fix.
  static llvm::Expected<CommCostModel> fromProfile(llvm::StringRef path);
  static llvm::Expected<CommCostModel> fromJson(llvm::StringRef text,
                                                llvm::StringRef origin);

  /// Predicted seconds of one collective of `bytes` (the whole buffer) on
  /// a group of `groupSize` ranks; 0 for one rank.
  double seconds(CollectiveKind kind, int64_t bytes, int64_t groupSize) const;

  AlphaBeta line(CollectiveKind kind) const {
    return lines[static_cast<unsigned>(kind)];
  }
  void setLine(CollectiveKind kind, AlphaBeta ab) {
    lines[static_cast<unsigned>(kind)] = ab;
  }

  /// Ring steps and the share of B a rank sends, for P ranks.
  static double steps(CollectiveKind kind, int64_t groupSize);
  static double wireShare(CollectiveKind kind, int64_t groupSize);

private:
  std::array<AlphaBeta, kNumCollectiveKinds> lines;
};

} // namespace mlir::ds

#endif // DS_TRANSFORMS_COMMCOSTMODEL_H
