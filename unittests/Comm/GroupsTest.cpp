//===- GroupsTest.cpp - split, grid groups, backend choice, timing --------===//
#include "CommTest.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>

using namespace dscomm;

namespace {

/// The sum over a group of each member's world rank, by the group itself.
int64_t sumOfWorldRanks(dsrt_comm *g) {
  Tensor<int64_t> v(1, rank());
  v.upload();
  EXPECT_EQ(dsrt_all_reduce(g, v.ptr(), v.ptr(), 1, DSRT_I64, DSRT_SUM),
            DSRT_OK)
      << lastError();
  return v.download()[0];
}

TEST_F(CommTest, AutoPicksTheBackendOfHowWeWereStarted) {
  if (std::getenv("DS_COMM_TEST_BACKEND"))
    GTEST_SKIP() << "the backend was named, not picked";
  bool mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK");
  // No GPU on the machines this runs on without DS_COMM_TEST_BACKEND.
  EXPECT_STREQ(dsrt_comm_backend(), mpirun ? "mpi" : "self");
  if (!mpirun)
    EXPECT_EQ(size(), 1);
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), size());
}

TEST_F(CommTest, SplitOrdersByKeyThenParentRank) {
  int n = size(), r = rank();
  dsrt_comm *g = nullptr;
  // Two groups (even and odd ranks), each ordered backwards by key.
  ASSERT_EQ(dsrt_comm_split(world(), r % 2, -r, &g), DSRT_OK) << lastError();
  std::vector<int> members;
  for (int q = n - 1; q >= 0; --q)
    if (q % 2 == r % 2)
      members.push_back(q);
  EXPECT_EQ(dsrt_comm_size(g), static_cast<int>(members.size()));
  EXPECT_EQ(dsrt_comm_rank(g),
            std::find(members.begin(), members.end(), r) - members.begin());
  EXPECT_EQ(sumOfWorldRanks(g),
            std::accumulate(members.begin(), members.end(), 0));
  ASSERT_EQ(dsrt_comm_free(g), DSRT_OK) << lastError();
}

/// Checks every axes mask of a grid: the group holds the ranks that differ
/// from this one only along the masked axes, in world-rank order.
void checkGrid(const std::vector<int64_t> &sizes) {
  int nd = static_cast<int>(sizes.size()), r = rank();
  ASSERT_EQ(dsrt_comm_set_grid(nd, sizes.data()), DSRT_OK) << lastError();
  auto coords = [&](int q) {
    std::vector<int64_t> c(nd);
    for (int d = nd - 1; d >= 0; --d) {
      c[d] = q % sizes[d];
      q /= static_cast<int>(sizes[d]);
    }
    return c;
  };
  for (uint64_t mask = 1; mask < (1ull << nd); ++mask) {
    std::vector<int> members;
    for (int q = 0; q < size(); ++q) {
      bool same = true;
      for (int d = 0; d < nd; ++d)
        if (!(mask & (1ull << d)) && coords(q)[d] != coords(r)[d])
          same = false;
      if (same)
        members.push_back(q);
    }
    dsrt_comm *g = dsrt_comm_axes(mask);
    ASSERT_NE(g, nullptr) << "mask " << mask << ": " << lastError();
    EXPECT_EQ(dsrt_comm_size(g), static_cast<int>(members.size()))
        << "mask " << mask;
    EXPECT_EQ(dsrt_comm_rank(g),
              std::find(members.begin(), members.end(), r) - members.begin())
        << "mask " << mask;
    EXPECT_EQ(sumOfWorldRanks(g),
              std::accumulate(members.begin(), members.end(), 0))
        << "mask " << mask;
  }
  // Masks naming no axis, or one past the grid, have no group.
  EXPECT_EQ(dsrt_comm_axes(0), nullptr);
  EXPECT_NE(lastError().find("names no axis"), std::string::npos)
      << lastError();
  EXPECT_EQ(dsrt_comm_axes(1ull << nd), nullptr);
  // Grid groups belong to the runtime.
  EXPECT_EQ(dsrt_comm_free(dsrt_comm_axes(1)), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("runtime owns"), std::string::npos);
}

TEST_F(CommTest, GridGroupsForEveryAxesMask) {
  int n = size();
  if (n == 4)
    checkGrid({2, 2}); // masks 1 (dp-like), 2 (tp-like), 3 (all)
  checkGrid({static_cast<int64_t>(n), 1});
  checkGrid({1, static_cast<int64_t>(n), 1});
  // A new grid replaces the old one (and its groups).
  checkGrid({static_cast<int64_t>(n)});
  EXPECT_EQ(dsrt_comm_axes(2), nullptr);
}

TEST_F(CommTest, GridMustCoverTheWorld) {
  int64_t sizes[] = {size() + 1, 2};
  EXPECT_EQ(dsrt_comm_set_grid(2, sizes), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("multiply to the world size"), std::string::npos)
      << lastError();
  int64_t zero[] = {0};
  EXPECT_EQ(dsrt_comm_set_grid(1, zero), DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("sizes[0] is 0"), std::string::npos)
      << lastError();
  EXPECT_EQ(dsrt_comm_set_grid(0, sizes), DSRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CommTest, SendToSelfWithAsyncSend) {
  Tensor<int32_t> out(3), in(3);
  out.host = {4, 5, 6};
  out.upload();
  dsrt_request *req = nullptr;
  ASSERT_EQ(dsrt_send_start(world(), out.ptr(), 3, DSRT_I32, rank(), 3, &req),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_recv(world(), in.ptr(), 3, DSRT_I32, rank(), 3), DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_wait(req), DSRT_OK) << lastError();
  EXPECT_EQ(in.download(), out.host);
}

TEST_F(CommTest, BarrierAndSecondsWaited) {
  dsrt_comm_seconds_reset();
  EXPECT_EQ(dsrt_comm_seconds(), 0.0);
  ASSERT_EQ(dsrt_barrier(world()), DSRT_OK) << lastError();
  dsrt_request *req = nullptr;
  Tensor<float> x(1000, 1.0f);
  ASSERT_EQ(dsrt_all_reduce_start(world(), x.ptr(), x.ptr(), 1000, DSRT_F32,
                                  DSRT_SUM, &req),
            DSRT_OK);
  ASSERT_EQ(dsrt_wait(req), DSRT_OK) << lastError();
  double t = dsrt_comm_seconds();
  EXPECT_GT(t, 0.0);
  EXPECT_LT(t, 10.0);
  dsrt_comm_seconds_reset();
  EXPECT_EQ(dsrt_comm_seconds(), 0.0);
}

TEST_F(CommTest, SymbolTableListsTheCommunicationEntryPoints) {
  const dsrt_symbol *table = nullptr;
  int64_t count = 0;
  ASSERT_EQ(dsrt_symbol_table(&table, &count), DSRT_OK);
  auto find = [&](const char *name) -> void * {
    for (int64_t i = 0; i < count; ++i)
      if (std::string(table[i].name) == name)
        return table[i].address;
    return nullptr;
  };
  EXPECT_EQ(find("dsrt_all_reduce"),
            reinterpret_cast<void *>(&dsrt_all_reduce));
  EXPECT_EQ(find("dsrt_wait"), reinterpret_cast<void *>(&dsrt_wait));
  EXPECT_EQ(find("dsrt_comm_axes"), reinterpret_cast<void *>(&dsrt_comm_axes));
  EXPECT_EQ(find("dsrt_check"), reinterpret_cast<void *>(&dsrt_check));
  EXPECT_EQ(find("dsrt_recv_start"),
            reinterpret_cast<void *>(&dsrt_recv_start));
}

} // namespace
