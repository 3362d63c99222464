//===- TraceTest.cpp - libdsrt's timeline recording -----------------------===//
#include "dsrt/dsrt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

std::vector<dsrt_trace_event> recorded(int64_t *dropped = nullptr) {
  const dsrt_trace_event *events = nullptr;
  int64_t n = 0, lost = 0;
  EXPECT_EQ(dsrt_trace_events(&events, &n, &lost), DSRT_OK);
  if (dropped)
    *dropped = lost;
  return std::vector<dsrt_trace_event>(events, events + n);
}

TEST(Trace, NothingIsRecordedUntilStarted) {
  dsrt_trace_clear();
  dsrt_trace_begin("h.0", 0);
  dsrt_trace_end();
  dsrt_trace_span(DSRT_TRACE_COMPUTE, "step", "step", 1.0, 2.0, -1);
  EXPECT_EQ(dsrt_trace_recording(), 0);
  EXPECT_TRUE(recorded().empty());
}

TEST(Trace, MarksNestAndNameTheirKind) {
  ASSERT_EQ(dsrt_trace_start(100), DSRT_OK);
  // The names are copied: the caller's buffer may change afterwards.
  char outer[] = "h.0", inner[] = "h.1";
  dsrt_trace_begin(outer, 0);
  dsrt_trace_begin(inner, 1);
  dsrt_trace_end();
  dsrt_trace_end();
  dsrt_trace_end(); // unmatched: ignored
  outer[0] = inner[0] = 'x';
  dsrt_trace_stop();
  std::vector<dsrt_trace_event> events = recorded();
  ASSERT_EQ(events.size(), 2u);
  // Ends come innermost first.
  EXPECT_EQ(std::string(events[0].name), "h.1");
  EXPECT_EQ(std::string(events[0].cat), "backward");
  EXPECT_EQ(std::string(events[1].name), "h.0");
  EXPECT_EQ(std::string(events[1].cat), "forward");
  EXPECT_EQ(events[1].track, DSRT_TRACE_COMPUTE);
  EXPECT_GE(events[0].start_us, events[1].start_us);
  EXPECT_LE(events[0].start_us + events[0].dur_us,
            events[1].start_us + events[1].dur_us);
  EXPECT_GE(events[1].start_us, 0.0);
  dsrt_trace_clear();
}

TEST(Trace, SpansPastTheLimitAreCounted) {
  ASSERT_EQ(dsrt_trace_start(3), DSRT_OK);
  double t = dsrt_trace_now();
  for (int i = 0; i < 5; ++i)
    dsrt_trace_span(DSRT_TRACE_COMPUTE, "x", "x", t, t, -1);
  int64_t dropped = 0;
  EXPECT_EQ(recorded(&dropped).size(), 3u);
  EXPECT_EQ(dropped, 2);
  dsrt_trace_clear();
  EXPECT_EQ(dsrt_trace_start(0), DSRT_ERR_INVALID_ARGUMENT);
}

TEST(Trace, AsyncCollectiveSpansFromStartToWait) {
  ASSERT_EQ(dsrt_comm_init("self"), DSRT_OK);
  ASSERT_EQ(dsrt_trace_start(100), DSRT_OK);
  float send[4] = {1, 2, 3, 4}, recv[4] = {};
  dsrt_request *req = nullptr;
  ASSERT_EQ(
      dsrt_all_gather_start(dsrt_comm_world(), send, recv, 4, DSRT_F32, &req),
      DSRT_OK);
  double start = dsrt_trace_now();
  while (dsrt_trace_now() - start < 1e-3) {
  } // "compute" for a millisecond
  ASSERT_EQ(dsrt_wait(req), DSRT_OK);
  ASSERT_EQ(
      dsrt_all_reduce(dsrt_comm_world(), send, recv, 4, DSRT_F32, DSRT_SUM),
      DSRT_OK);
  dsrt_trace_stop();
  std::vector<dsrt_trace_event> events = recorded();
  ASSERT_EQ(events.size(), 3u);
  // The all-gather on the communication track spans the compute between its
  // start and its wait; the wait itself is on the compute track.
  EXPECT_EQ(std::string(events[0].name), "all_gather");
  EXPECT_EQ(std::string(events[0].cat), "collective");
  EXPECT_EQ(events[0].track, DSRT_TRACE_COMM);
  EXPECT_GE(events[0].dur_us, 1000.0);
  EXPECT_EQ(events[0].bytes, 16);
  EXPECT_EQ(std::string(events[1].cat), "wait");
  EXPECT_EQ(events[1].track, DSRT_TRACE_COMPUTE);
  EXPECT_LT(events[1].dur_us, events[0].dur_us);
  EXPECT_EQ(std::string(events[2].name), "all_reduce");
  EXPECT_EQ(std::string(events[2].cat), "blocking");
  dsrt_trace_clear();
  dsrt_comm_finalize();
}

} // namespace
