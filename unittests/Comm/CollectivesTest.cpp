//===- CollectivesTest.cpp - every collective x dtype x reduce op ---------===//
//
// Expected values come from formulas over the ranks, never from the code
// under test. The values are small integers (and halves), exact in every
// dtype, so every comparison is exact.
//
//===----------------------------------------------------------------------===//
#include "CommTest.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace dscomm;

namespace {

const int kOps[] = {DSRT_SUM, DSRT_AVG, DSRT_MAX, DSRT_MIN};

/// Rank r's element i: a small signed integer, exact in every dtype, whose
/// sums over up to 4 ranks stay exact too.
double value(int r, int64_t i) {
  return (r + 1) * (i % 7 + 1) * (i % 2 ? -1.0 : 1.0);
}

/// op over every rank's value(., i); avg divides like the ABI says
/// (integers truncate).
double reduced(int op, int64_t i, int n, bool isInt) {
  double acc = value(0, i);
  for (int r = 1; r < n; ++r) {
    double v = value(r, i);
    acc = op == DSRT_MAX   ? std::max(acc, v)
          : op == DSRT_MIN ? std::min(acc, v)
                           : acc + v;
  }
  if (op != DSRT_AVG)
    return acc;
  return isInt ? static_cast<double>(static_cast<int64_t>(acc) / n) : acc / n;
}

/// Counts that hit every case of the uneven-size convention at this size.
std::vector<int64_t> counts(int n) {
  // 50001: past 64 KiB in every dtype, where the mpi backend's all-reduce
  // switches algorithm; it divides by 3 but not by 2 or 4.
  std::vector<int64_t> c = {0, 1, n, 2 * n + 1, 1003, 50001};
  if (n > 2)
    c.push_back(n - 1); // count < n: some ranks own nothing
  return c;
}

template <class D> std::vector<typename D::Type> ofRank(int r, int64_t count) {
  std::vector<typename D::Type> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = D::from(value(r, i));
  return v;
}

template <class D> class Collectives : public CommTest {};
using DTypes = ::testing::Types<F32, F16, BF16T, I32, I64>;
TYPED_TEST_SUITE(Collectives, DTypes);

TYPED_TEST(Collectives, AllReduceEveryOp) {
  using D = TypeParam;
  int n = size(), r = rank();
  for (int op : kOps)
    for (int64_t count : counts(n))
      for (bool inPlace : {false, true}) {
        Tensor<typename D::Type> send(count), recv(count);
        send.host = ofRank<D>(r, count);
        send.upload();
        auto *out = inPlace ? send.ptr() : recv.ptr();
        ASSERT_EQ(dsrt_all_reduce(world(), send.ptr(), out, count, D::code, op),
                  DSRT_OK)
            << lastError();
        auto &got = (inPlace ? send : recv).download();
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(D::to(got[i]), reduced(op, i, n, D::isInt))
              << "op " << op << " count " << count << " i " << i
              << (inPlace ? " in place" : "");
      }
}

TYPED_TEST(Collectives, ReduceScatterEveryOpUneven) {
  using D = TypeParam;
  int n = size(), r = rank();
  for (int op : kOps)
    for (int64_t count : counts(n))
      for (bool inPlace : {false, true}) {
        int64_t c = (count + n - 1) / n;
        Tensor<typename D::Type> send(count), recv(c, D::from(99));
        send.host = ofRank<D>(r, count);
        send.upload();
        auto *out = inPlace ? send.ptr() : recv.ptr();
        ASSERT_EQ(
            dsrt_reduce_scatter(world(), send.ptr(), out, count, D::code, op),
            DSRT_OK)
            << lastError();
        auto &got = (inPlace ? send : recv).download();
        for (int64_t j = 0; j < c; ++j) {
          int64_t g = r * c + j; // the global element slot j holds
          double want = g < count ? reduced(op, g, n, D::isInt) : 0.0;
          ASSERT_EQ(D::to(got[j]), want)
              << "op " << op << " count " << count << " slot " << j
              << (inPlace ? " in place" : "");
        }
      }
}

TYPED_TEST(Collectives, AllGatherUneven) {
  using D = TypeParam;
  int n = size(), r = rank();
  for (int64_t count : counts(n))
    for (bool inPlace : {false, true}) {
      int64_t c = (count + n - 1) / n;
      int64_t begin = std::min(r * c, count), end = std::min(begin + c, count);
      Tensor<typename D::Type> send(end - begin), recv(count, D::from(99));
      for (int64_t g = begin; g < end; ++g)
        (inPlace ? recv.host[g] : send.host[g - begin]) = D::from(value(0, g));
      send.upload();
      recv.upload();
      const void *in =
          inPlace ? static_cast<const void *>(recv.ptr() + begin) : send.ptr();
      ASSERT_EQ(dsrt_all_gather(world(), in, recv.ptr(), count, D::code),
                DSRT_OK)
          << lastError();
      auto &got = recv.download();
      for (int64_t g = 0; g < count; ++g)
        ASSERT_EQ(D::to(got[g]), value(0, g))
            << "count " << count << " element " << g
            << (inPlace ? " in place" : "");
    }
}

TYPED_TEST(Collectives, BroadcastFromEveryRoot) {
  using D = TypeParam;
  int n = size(), r = rank();
  for (int root = 0; root < n; ++root) {
    Tensor<typename D::Type> buf(37);
    buf.host = ofRank<D>(r, 37);
    buf.upload();
    ASSERT_EQ(dsrt_broadcast(world(), buf.ptr(), 37, D::code, root), DSRT_OK)
        << lastError();
    auto &got = buf.download();
    for (int64_t i = 0; i < 37; ++i)
      ASSERT_EQ(D::to(got[i]), value(root, i)) << "root " << root;
  }
}

TYPED_TEST(Collectives, AllToAll) {
  using D = TypeParam;
  int n = size(), r = rank();
  const int64_t per = 5;
  Tensor<typename D::Type> send(n * per), recv(n * per);
  // Block j of rank r's send: value(r, j * per + k), destined for rank j.
  send.host = ofRank<D>(r, n * per);
  send.upload();
  ASSERT_EQ(dsrt_all_to_all(world(), send.ptr(), recv.ptr(), per, D::code),
            DSRT_OK)
      << lastError();
  auto &got = recv.download();
  for (int src = 0; src < n; ++src)
    for (int64_t k = 0; k < per; ++k)
      ASSERT_EQ(D::to(got[src * per + k]), value(src, r * per + k))
          << "block from rank " << src;
}

TYPED_TEST(Collectives, SendRecvRing) {
  using D = TypeParam;
  int n = size(), r = rank();
  Tensor<typename D::Type> out(11), in(11);
  out.host = ofRank<D>(r, 11);
  out.upload();
  // Everyone sends right and receives from the left: async sends, so no
  // ordering of blocking calls can deadlock the ring.
  dsrt_request *req = nullptr;
  ASSERT_EQ(
      dsrt_send_start(world(), out.ptr(), 11, D::code, (r + 1) % n, 7, &req),
      DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_recv(world(), in.ptr(), 11, D::code, (r + n - 1) % n, 7),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_wait(req), DSRT_OK) << lastError();
  auto &got = in.download();
  for (int64_t i = 0; i < 11; ++i)
    ASSERT_EQ(D::to(got[i]), value((r + n - 1) % n, i));
}

TYPED_TEST(Collectives, AsyncOverlappingThenWaitedOutOfOrder) {
  using D = TypeParam;
  int n = size(), r = rank();
  const int64_t count = 2 * n + 1, c = (count + n - 1) / n;
  Tensor<typename D::Type> a(count), ar(count), rs(c), bc(9);
  a.host = ofRank<D>(r, count);
  a.upload();
  int64_t begin = std::min(r * c, count), end = std::min(begin + c, count);
  Tensor<typename D::Type> mine(end - begin), ag(count);
  for (int64_t g = begin; g < end; ++g)
    mine.host[g - begin] = D::from(value(0, g));
  mine.upload();
  bc.host = ofRank<D>(r, 9);
  bc.upload();

  dsrt_request *reqs[4] = {};
  ASSERT_EQ(dsrt_all_reduce_start(world(), a.ptr(), ar.ptr(), count, D::code,
                                  DSRT_AVG, &reqs[0]),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_reduce_scatter_start(world(), a.ptr(), rs.ptr(), count,
                                      D::code, DSRT_MAX, &reqs[1]),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_all_gather_start(world(), mine.ptr(), ag.ptr(), count, D::code,
                                  &reqs[2]),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(
      dsrt_broadcast_start(world(), bc.ptr(), 9, D::code, n - 1, &reqs[3]),
      DSRT_OK)
      << lastError();
  for (int k = 3; k >= 0; --k)
    ASSERT_EQ(dsrt_wait(reqs[k]), DSRT_OK) << lastError();

  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(D::to(ar.download()[i]), reduced(DSRT_AVG, i, n, D::isInt));
  for (int64_t j = 0; j < c; ++j) {
    int64_t g = r * c + j;
    ASSERT_EQ(D::to(rs.download()[j]),
              g < count ? reduced(DSRT_MAX, g, n, D::isInt) : 0.0);
  }
  for (int64_t g = 0; g < count; ++g)
    ASSERT_EQ(D::to(ag.download()[g]), value(0, g));
  for (int64_t i = 0; i < 9; ++i)
    ASSERT_EQ(D::to(bc.download()[i]), value(n - 1, i));
}

// 16-bit sums round to nearest even: rank 0 adds x with an odd last bit,
// rank 1 adds half of its last place, the others add 0 (exact in any order).
// Rounding the exact sum (a tie) to even goes up; truncation would not.
TEST_F(CommTest, HalfSumsRoundToNearestEven) {
  int n = size(), r = rank();
  if (n < 2)
    GTEST_SKIP() << "needs two ranks to add anything";
  for (int code : {DSRT_F16, DSRT_BF16}) {
    // f16: x = 1 + 2^-10, ulp/2 = 2^-11; bf16: x = 1 + 2^-7, ulp/2 = 2^-8.
    int bits = code == DSRT_F16 ? 10 : 7;
    double x = 1 + std::ldexp(1, -bits), half = std::ldexp(1, -bits - 1);
    double mine = r == 0 ? x : r == 1 ? half : 0.0;
    Tensor<uint16_t> buf(1);
    if (code == DSRT_F16) {
      _Float16 h = static_cast<_Float16>(mine);
      std::memcpy(buf.host.data(), &h, 2);
    } else {
      buf.host[0] = BF16T::from(mine).bits;
    }
    buf.upload();
    ASSERT_EQ(dsrt_all_reduce(world(), buf.ptr(), buf.ptr(), 1, code, DSRT_SUM),
              DSRT_OK)
        << lastError();
    uint16_t got = buf.download()[0];
    double sum;
    if (code == DSRT_F16) {
      _Float16 h;
      std::memcpy(&h, &got, 2);
      sum = static_cast<double>(h);
    } else {
      sum = BF16T::to(BF16{got});
    }
    EXPECT_EQ(sum, 1 + std::ldexp(1, -bits + 1))
        << (code == DSRT_F16 ? "f16" : "bf16");
  }
}

} // namespace

namespace {

// Deterministic mode adds contributions in rank order, so the result is the
// left-to-right f32 sum computed here, bit for bit — values chosen so that
// another order rounds differently (1e8 absorbs small terms unless they
// are added to each other first).
TEST_F(CommTest, DeterministicReductionsSumInRankOrder) {
  int n = size(), r = rank();
  if (n < 2 || onDevice())
    GTEST_SKIP() << "needs two host ranks";
  auto contribution = [](int rank, int64_t i) {
    return rank == 0 ? 1e8f : 3.0f + float(i % 5) + 0.25f * float(rank);
  };
  const int64_t count = 7 * n + 3; // uneven chunks for the reduce-scatter
  std::vector<float> send(count), expect(count);
  for (int64_t i = 0; i < count; ++i) {
    send[i] = contribution(r, i);
    float acc = contribution(0, i);
    for (int j = 1; j < n; ++j)
      acc += contribution(j, i);
    expect[i] = acc;
  }
  ASSERT_EQ(dsrt_comm_set_deterministic(1), DSRT_OK);
  std::vector<float> all(count);
  ASSERT_EQ(dsrt_all_reduce(world(), send.data(), all.data(), count, DSRT_F32,
                            DSRT_SUM),
            DSRT_OK)
      << lastError();
  int64_t c = (count + n - 1) / n;
  std::vector<float> mine(c, -1.0f);
  ASSERT_EQ(dsrt_reduce_scatter(world(), send.data(), mine.data(), count,
                                DSRT_F32, DSRT_SUM),
            DSRT_OK)
      << lastError();
  // The async form (what scheduled code calls) sums in the same order.
  std::vector<float> started(count, -1.0f);
  dsrt_request *req = nullptr;
  ASSERT_EQ(dsrt_all_reduce_start(world(), send.data(), started.data(), count,
                                  DSRT_F32, DSRT_SUM, &req),
            DSRT_OK)
      << lastError();
  ASSERT_EQ(dsrt_wait(req), DSRT_OK) << lastError();
  ASSERT_EQ(dsrt_comm_set_deterministic(0), DSRT_OK);
  EXPECT_EQ(started, all);
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(all[i], expect[i]) << "element " << i;
  for (int64_t i = 0; i < c; ++i) {
    int64_t g = r * c + i;
    ASSERT_EQ(mine[i], g < count ? expect[g] : 0.0f) << "element " << g;
  }
}

} // namespace
