//===- CommCostModel.cpp - Predicted time of a collective -----------------===//
//
// A profile holds times measured on one group size P0; each point (B, t)
// becomes (wireShare(P0) B, t), the line fitted through them gives beta
// (its slope) and steps(P0) alpha (its intercept), and the model then
// predicts any group size from the same per-step and per-byte costs.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/CommCostModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <sstream>
#include <string>

using namespace mlir::ds;
using llvm::createStringError;

namespace {
constexpr llvm::StringLiteral kKindNames[] = {"all_gather", "reduce_scatter",
                                              "all_reduce", "all_to_all"};
} // namespace

llvm::StringRef mlir::ds::collectiveKindName(CollectiveKind kind) {
  return kKindNames[static_cast<unsigned>(kind)];
}

std::optional<CollectiveKind>
mlir::ds::parseCollectiveKind(llvm::StringRef name) {
  for (unsigned k = 0; k < kNumCollectiveKinds; ++k)
    if (name == kKindNames[k])
      return static_cast<CollectiveKind>(k);
  return std::nullopt;
}

llvm::Expected<std::pair<double, double>>
mlir::ds::fitLine(llvm::ArrayRef<std::pair<double, double>> points) {
  double n = points.size(), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double det = n * sxx - sx * sx;
  // Relative to the scale of x, so byte counts of any size fit.
  if (points.size() < 2 || !(det > 1e-12 * n * sxx))
    return createStringError("a line needs at least two points of "
                             "different sizes");
  double slope = (n * sxy - sx * sy) / det;
  double intercept = (sy - slope * sx) / n;
  if (intercept < 0)
    return std::make_pair(0.0, sxy / sxx);
  return std::make_pair(intercept, slope);
}

CommCostModel::CommCostModel() {
  lines.fill(AlphaBeta{kDefaultAlpha, kDefaultBeta});
}

double CommCostModel::steps(CollectiveKind kind, int64_t groupSize) {
  double ring = static_cast<double>(groupSize - 1);
  return kind == CollectiveKind::AllReduce ? 2 * ring : ring;
}

double CommCostModel::wireShare(CollectiveKind kind, int64_t groupSize) {
  double p = static_cast<double>(groupSize);
  return steps(kind, groupSize) / p;
}

double CommCostModel::seconds(CollectiveKind kind, int64_t bytes,
                              int64_t groupSize) const {
  if (groupSize <= 1)
    return 0;
  AlphaBeta ab = line(kind);
  return ab.alpha * steps(kind, groupSize) +
         ab.beta * wireShare(kind, groupSize) * static_cast<double>(bytes);
}

namespace {

/// The [[bytes, seconds], ...] of one kind as points of the fitted line.
llvm::Error readPoints(const llvm::json::Value &value, llvm::StringRef where,
                       double share,
                       llvm::SmallVectorImpl<std::pair<double, double>> &out) {
  const llvm::json::Array *points = value.getAsArray();
  if (!points)
    return createStringError(where + ": expected a list of [bytes, seconds] "
                                     "pairs");
  for (auto [i, point] : llvm::enumerate(*points)) {
    const llvm::json::Array *pair = point.getAsArray();
    std::optional<double> bytes, secs;
    if (pair && pair->size() == 2) {
      bytes = (*pair)[0].getAsNumber();
      secs = (*pair)[1].getAsNumber();
    }
    if (!bytes || !secs || *bytes <= 0 || *secs < 0)
      return createStringError(where + "[" + llvm::Twine(i) +
                               "]: expected [bytes, seconds] with bytes > 0 "
                               "and seconds >= 0");
    out.push_back({*bytes * share, *secs});
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<CommCostModel> CommCostModel::fromJson(llvm::StringRef text,
                                                      llvm::StringRef origin) {
  auto fail = [&](const llvm::Twine &msg) -> llvm::Error {
    return createStringError(origin + ": " + msg);
  };
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return fail("not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *top = parsed->getAsObject();
  if (!top)
    return fail("expected an object with version, group_size and points");
  std::optional<int64_t> version = top->getInteger("version");
  if (version != 1)
    return fail("version must be 1 (the format ds-report --comm-profile "
                "writes)");
  std::optional<int64_t> group = top->getInteger("group_size");
  if (!group || *group < 2)
    return fail("group_size must be the number of ranks measured, >= 2 (one "
                "rank moves no bytes)");
  const llvm::json::Object *points = top->getObject("points");
  if (!points)
    return fail("points: expected an object of kind -> [[bytes, seconds], "
                "...]");
  CommCostModel model;
  for (const auto &[key, value] : *points) {
    std::optional<CollectiveKind> kind = parseCollectiveKind(key);
    std::string where = "points." + key.str();
    if (!kind)
      return fail(where + ": unknown collective; use all_gather, "
                          "reduce_scatter, all_reduce or all_to_all");
    llvm::SmallVector<std::pair<double, double>> xy;
    if (llvm::Error err =
            readPoints(value, where, wireShare(*kind, *group), xy))
      return fail(llvm::toString(std::move(err)));
    llvm::Expected<std::pair<double, double>> fit = fitLine(xy);
    if (!fit)
      return fail(where + ": " + llvm::toString(fit.takeError()));
    if (!(fit->second > 0)) {
      std::ostringstream slope;
      slope << fit->second;
      return fail(where + ": time does not grow with size (fitted " +
                  slope.str() + " s per byte); measure larger sizes");
    }
    model.setLine(*kind, {fit->first / steps(*kind, *group), fit->second});
  }
  return model;
}

llvm::Expected<CommCostModel> CommCostModel::fromProfile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file)
    return createStringError(path +
                             ": cannot read the communication "
                             "profile: " +
                             file.getError().message());
  return fromJson((*file)->getBuffer(), path);
}
