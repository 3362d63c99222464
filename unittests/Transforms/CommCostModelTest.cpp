//===- CommCostModelTest.cpp - The alpha-beta fit -------------------------===//
//
// Profiles are made from known lines (alpha per ring step, beta per byte
// sent) with the ring factors written out by hand, so the fit must give
// the lines back and predict other group sizes from them.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/CommCostModel.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::ds;

namespace {

std::string errorOf(llvm::Expected<CommCostModel> model) {
  if (model)
    return "";
  return llvm::toString(model.takeError());
}

TEST(FitLine, RecoversAnExactLine) {
  std::vector<std::pair<double, double>> points;
  for (double x : {1e3, 1e5, 1e7, 3e8})
    points.push_back({x, 3e-5 + 2e-9 * x});
  auto fit = fitLine(points);
  ASSERT_TRUE(static_cast<bool>(fit));
  EXPECT_NEAR(fit->first, 3e-5, 1e-12);
  EXPECT_NEAR(fit->second, 2e-9, 1e-18);
}

TEST(FitLine, SymmetricNoiseCancels) {
  // The same sizes measured twice, +e and -e around the line: least
  // squares lands on the line.
  std::vector<std::pair<double, double>> points;
  for (double x : {1e4, 1e6, 1e8})
    for (double e : {-4e-6, 4e-6})
      points.push_back({x, 1e-5 + 1e-9 * x + e});
  auto fit = fitLine(points);
  ASSERT_TRUE(static_cast<bool>(fit));
  EXPECT_NEAR(fit->first, 1e-5, 1e-11);
  EXPECT_NEAR(fit->second, 1e-9, 1e-18);
}

TEST(FitLine, NegativeInterceptFitsThroughTheOrigin) {
  // y = 2x - 1 at x = 1, 2, 3; through the origin the best slope is
  // sum(xy) / sum(xx) = (1 + 6 + 15) / 14.
  auto fit = fitLine({{1, 1}, {2, 3}, {3, 5}});
  ASSERT_TRUE(static_cast<bool>(fit));
  EXPECT_EQ(fit->first, 0);
  EXPECT_DOUBLE_EQ(fit->second, 22.0 / 14.0);
}

TEST(FitLine, OneSizeIsNotALine) {
  auto fit = fitLine({{5, 1}, {5, 2}});
  ASSERT_FALSE(static_cast<bool>(fit));
  EXPECT_EQ(llvm::toString(fit.takeError()),
            "a line needs at least two points of different sizes");
}

TEST(CommCostModel, DefaultsAreTheDocumentedRing) {
  CommCostModel model;
  // 2 ranks: one ring step, half the buffer sent.
  EXPECT_DOUBLE_EQ(model.seconds(CollectiveKind::AllGather, 1000000000, 2),
                   20e-6 + 0.5 * 1e9 * 8.0 / 10e9);
  // 4 ranks all-reduce: 6 steps, 2 * 3/4 of the buffer.
  EXPECT_DOUBLE_EQ(model.seconds(CollectiveKind::AllReduce, 4000, 4),
                   6 * 20e-6 + 1.5 * 4000 * 8.0 / 10e9);
  EXPECT_EQ(model.seconds(CollectiveKind::ReduceScatter, 1 << 20, 1), 0);
}

TEST(CommCostModel, ProfileFitsEachKindAndPredictsOtherGroups) {
  // Measured on 4 ranks: all_gather alpha 10 us, beta 1 ns/B; all_reduce
  // alpha 30 us, beta 0.5 ns/B. t = steps * alpha + share * B * beta.
  auto ag = [](double b) { return 3 * 10e-6 + 0.75 * b * 1e-9; };
  auto ar = [](double b) { return 6 * 30e-6 + 1.5 * b * 0.5e-9; };
  std::string json = "{\"version\": 1, \"backend\": \"mpi\", "
                     "\"group_size\": 4, \"points\": {\"all_gather\": [";
  for (double b : {4096.0, 1048576.0, 67108864.0})
    json += "[" + std::to_string(b) + ", " + std::to_string(ag(b)) + "],";
  json.back() = ']';
  json += ", \"all_reduce\": [";
  for (double b : {4096.0, 1048576.0, 67108864.0})
    json += "[" + std::to_string(b) + ", " + std::to_string(ar(b)) + "],";
  json.back() = ']';
  json += "}}";
  auto model = CommCostModel::fromJson(json, "profile.json");
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  // std::to_string keeps 6 decimals: seconds are exact to 1e-6 s.
  EXPECT_NEAR(model->line(CollectiveKind::AllGather).alpha, 10e-6, 1e-7);
  EXPECT_NEAR(model->line(CollectiveKind::AllGather).beta, 1e-9, 1e-13);
  EXPECT_NEAR(model->line(CollectiveKind::AllReduce).alpha, 30e-6, 1e-7);
  EXPECT_NEAR(model->line(CollectiveKind::AllReduce).beta, 0.5e-9, 1e-13);
  // A kind the profile omits keeps the defaults.
  EXPECT_EQ(model->line(CollectiveKind::ReduceScatter).alpha,
            CommCostModel::kDefaultAlpha);
  // On 2 ranks an all-gather of 64 MiB: 1 step, half the bytes.
  EXPECT_NEAR(model->seconds(CollectiveKind::AllGather, 67108864, 2),
              10e-6 + 0.5 * 67108864 * 1e-9, 1e-6);
}

TEST(CommCostModel, BadProfilesSayWhatToFix) {
  EXPECT_EQ(errorOf(CommCostModel::fromJson("{\"version\": 2}", "p.json")),
            "p.json: version must be 1 (the format ds-report --comm-profile "
            "writes)");
  EXPECT_EQ(errorOf(CommCostModel::fromJson(
                "{\"version\": 1, \"group_size\": 1, \"points\": {}}", "p")),
            "p: group_size must be the number of ranks measured, >= 2 (one "
            "rank moves no bytes)");
  EXPECT_EQ(errorOf(CommCostModel::fromJson(
                "{\"version\": 1, \"group_size\": 2, \"points\": "
                "{\"allgather\": []}}",
                "p")),
            "p: points.allgather: unknown collective; use all_gather, "
            "reduce_scatter, all_reduce or all_to_all");
  EXPECT_EQ(errorOf(CommCostModel::fromJson(
                "{\"version\": 1, \"group_size\": 2, \"points\": "
                "{\"all_gather\": [[1, 2, 3]]}}",
                "p")),
            "p: points.all_gather[0]: expected [bytes, seconds] with bytes > "
            "0 and seconds >= 0");
  EXPECT_EQ(errorOf(CommCostModel::fromJson(
                "{\"version\": 1, \"group_size\": 2, \"points\": "
                "{\"all_gather\": [[100, 0.5]]}}",
                "p")),
            "p: points.all_gather: a line needs at least two points of "
            "different sizes");
  EXPECT_EQ(errorOf(CommCostModel::fromJson(
                "{\"version\": 1, \"group_size\": 2, \"points\": "
                "{\"all_gather\": [[100, 0.5], [200, 0.4]]}}",
                "p")),
            "p: points.all_gather: time does not grow with size (fitted -0.002 "
            "s per byte); measure larger sizes");
  EXPECT_NE(errorOf(CommCostModel::fromProfile("/nonexistent/p.json"))
                .find("/nonexistent/p.json: cannot read the communication "
                      "profile"),
            std::string::npos);
}

} // namespace
