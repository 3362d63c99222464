//===- CheckpointTest.cpp - Checkpoint save, read, verify, export ---------===//
//
// One rank (no communication): the multi-rank paths run in
// test/Checkpoint/*.test under ds-launch.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/Checkpoint.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Driver/StateStore.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using namespace ds::driver;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    llvm::SmallString<128> p;
    llvm::sys::fs::createUniqueDirectory("ds-ckpt-test", p);
    path = std::string(p);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
};

/// A parameter, its state and a bf16 tensor, with recognizable values.
struct State {
  std::vector<float> w, m;
  std::vector<uint16_t> h;
  State() : w(15), m(15), h(7) {
    for (int i = 0; i < 15; ++i) {
      w[i] = 0.5f * i - 3;
      m[i] = 1.0f / (i + 1);
    }
    for (int i = 0; i < 7; ++i)
      h[i] = uint16_t(0x3f80 + i); // bf16 1.0, 1.0078125, ...
  }
  std::vector<CkptTensor> tensors() {
    std::vector<CkptTensor> t(3);
    t[0] = {"w", "param", "F32", {3, 5}, w.data()};
    t[1] = {"w.exp_avg", "state", "F32", {3, 5}, m.data()};
    t[2] = {"h", "param", "BF16", {7}, h.data()};
    return t;
  }
};

CkptRunInfo runAt(int64_t step) {
  CkptRunInfo run;
  run.step = step;
  run.seed = 42;
  run.seedOption = 42;
  run.dataOrder = "shuffled";
  run.globalBatch = 8;
  run.configJson = R"({"train_batch_size": 8})";
  run.modelPath = "m.json";
  run.modelHash = "0123456789abcdef";
  return run;
}

void expectSaved(const std::string &dir, const State &want) {
  auto ckpt = CheckpointReader::open(dir);
  ASSERT_TRUE(bool(ckpt)) << llvm::toString(ckpt.takeError());
  EXPECT_EQ(ckpt->tag(), "global_step3");
  EXPECT_EQ(ckpt->run().seed, 42u);
  EXPECT_EQ(ckpt->run().seedOption, std::optional<uint64_t>(42));
  EXPECT_EQ(ckpt->run().globalBatch, 8);
  const CkptTensorInfo *w = ckpt->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{3, 5}));
  // A range inside the tensor, as a resharded rank reads it.
  std::vector<float> part(7);
  ASSERT_FALSE(bool(ckpt->read(*w, 4, 7, part.data())));
  EXPECT_EQ(part, std::vector<float>(want.w.begin() + 4, want.w.begin() + 11));
  std::vector<float> m(15);
  ASSERT_FALSE(bool(ckpt->read(*ckpt->find("w.exp_avg"), 0, 15, m.data())));
  EXPECT_EQ(m, want.m);
  EXPECT_FALSE(bool(ckpt->verify()));
}

TEST(Checkpoint, SyncSaveReadsBack) {
  TempDir dir;
  State state;
  auto saver = CheckpointSaver::create(dir.path, /*async=*/false, CkptPlace());
  ASSERT_TRUE(bool(saver));
  ASSERT_FALSE(bool((*saver)->save(runAt(3), state.tensors())));
  EXPECT_EQ((*saver)->lastBytes(), 15 * 4 * 2 + 7 * 2);
  expectSaved(dir.path, state);
}

TEST(Checkpoint, AsyncSaveKeepsTheStateOfItsStep) {
  TempDir dir;
  State state, original;
  auto saver = CheckpointSaver::create(dir.path, /*async=*/true, CkptPlace());
  ASSERT_TRUE(bool(saver));
  ASSERT_FALSE(bool((*saver)->save(runAt(3), state.tensors())));
  // Step 4 updates the buffers in place, once beforeStep says the writer
  // is done with them; later steps do not wait again.
  EXPECT_GE((*saver)->beforeStep(4), 0.0);
  std::fill(state.w.begin(), state.w.end(), -1.0f);
  EXPECT_EQ((*saver)->beforeStep(5), 0.0);
  std::fill(state.w.begin(), state.w.end(), -1.0f);
  std::fill(state.m.begin(), state.m.end(), -1.0f);
  // Not committed before finish(): `latest` does not exist yet.
  EXPECT_FALSE(llvm::sys::fs::exists(dir.path + "/latest"));
  ASSERT_FALSE(bool((*saver)->finish()));
  expectSaved(dir.path, original);
}

TEST(Checkpoint, CommittedTagsAreNeverOverwritten) {
  TempDir dir;
  State state;
  auto first = CheckpointSaver::create(dir.path, false, CkptPlace());
  ASSERT_FALSE(bool((*first)->save(runAt(3), state.tensors())));
  auto second = CheckpointSaver::create(dir.path, false, CkptPlace());
  llvm::Error planned = (*second)->checkPlannedSaves(0, 3, 0);
  ASSERT_TRUE(bool(planned));
  EXPECT_NE(llvm::toString(std::move(planned))
                .find("global_step3 already holds a committed checkpoint"),
            std::string::npos);
  llvm::Error err = (*second)->save(runAt(3), state.tensors());
  ASSERT_TRUE(bool(err));
  llvm::consumeError(std::move(err));
  // Saves that do not collide are fine.
  EXPECT_FALSE(bool((*second)->checkPlannedSaves(3, 10, 5)));
}

TEST(Checkpoint, CorruptSliceNamesFileAndTensor) {
  TempDir dir;
  State state;
  auto saver = CheckpointSaver::create(dir.path, false, CkptPlace());
  ASSERT_FALSE(bool((*saver)->save(runAt(3), state.tensors())));
  auto ckpt = CheckpointReader::open(dir.path);
  ASSERT_TRUE(bool(ckpt));
  const CkptSlice &slice = ckpt->find("w.exp_avg")->slices[0];
  std::string file = dir.path + "/global_step3/rank0.safetensors";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(slice.offset + 5);
    f.put('\x7f');
  }
  llvm::Error err = ckpt->verify();
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("rank0.safetensors: checksum mismatch in tensor "
                     "\"w.exp_avg\""),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("\"w\""), std::string::npos) << msg;
}

TEST(Checkpoint, ExportStreamsAndWidensBf16) {
  TempDir dir;
  State state;
  auto saver = CheckpointSaver::create(dir.path, false, CkptPlace());
  ASSERT_FALSE(bool((*saver)->save(runAt(3), state.tensors())));
  auto ckpt = CheckpointReader::open(dir.path);
  ASSERT_TRUE(bool(ckpt));
  std::string out = dir.path + "/out.safetensors";
  auto peak = exportSafeTensors(*ckpt, out, /*toF32=*/true,
                                /*withState=*/false);
  ASSERT_TRUE(bool(peak)) << llvm::toString(peak.takeError());
  // The largest tensor: w (60 bytes); h is 14 bytes + its 28-byte f32 copy.
  EXPECT_EQ(*peak, 60);
  auto file = SafeTensorsFile::open(out);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->tensors().size(), 2u); // parameters only
  EXPECT_EQ(file->find("w.exp_avg"), nullptr);
  ASSERT_NE(file->find("h"), nullptr);
  EXPECT_EQ(file->find("h")->dtype, "F32");
  auto h = file->readF32("h");
  ASSERT_TRUE(bool(h));
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ((*h)[i], bf16ToFloat(state.h[i]));
  auto w = file->readF32("w");
  ASSERT_TRUE(bool(w));
  EXPECT_EQ(*w, state.w);
}

TEST(Checkpoint, ListingMarksIncompleteTags) {
  TempDir dir;
  State state;
  auto saver = CheckpointSaver::create(dir.path, false, CkptPlace());
  ASSERT_FALSE(bool((*saver)->save(runAt(3), state.tensors())));
  llvm::sys::fs::create_directories(dir.path + "/global_step10");
  auto listing = listCheckpoints(dir.path);
  ASSERT_TRUE(bool(listing));
  ASSERT_EQ(listing->tags.size(), 2u);
  EXPECT_TRUE(listing->tags[0].complete);
  EXPECT_EQ(listing->tags[1].tag, "global_step10");
  EXPECT_FALSE(listing->tags[1].complete);
  EXPECT_EQ(listing->latest, "global_step3");
  auto open = CheckpointReader::open(dir.path, "global_step10");
  ASSERT_FALSE(bool(open));
  EXPECT_NE(llvm::toString(open.takeError()).find("did not complete"),
            std::string::npos);
}

// DeepSpeed's _create_expert_and_data_parallel with ep 2 on 4 ranks:
// expert-parallel groups {0,1} {2,3} hold different experts, expert-data-
// parallel groups {0,2} {1,3} the same ones. An expert weight [4, 3] is
// rows 0-1 on ranks 0 and 2, rows 2-3 on ranks 1 and 3; ZeRO-1 splits each
// rank's moment [2, 3] in two over its expert-data-parallel group.
TEST(Checkpoint, ExpertTensorsAreSavedOncePerSlice) {
  // A parameter cut by expert parallelism, and its Adam moment as ZeRO-1
  // leaves it: a flat chunk of this rank's [2, 3].
  auto arg = [](ArgSpec::Kind kind, const char *name,
                std::vector<int64_t> shape, std::vector<int64_t> whole) {
    ArgSpec a;
    a.kind = kind;
    a.name = name;
    a.shape = std::move(shape);
    a.fullShape = std::move(whole);
    return a;
  };
  StepManifest manifest;
  manifest.args = {arg(ArgSpec::Param, "experts.w", {2, 3}, {4, 3}),
                   arg(ArgSpec::State, "experts.w.exp_avg", {3}, {2, 3})};
  manifest.args[0].expertShards = 2;
  manifest.args[1].owner = "experts.w";
  struct Expected {
    int64_t first, count;
    bool writes;
  };
  const Expected param[4] = {
      {0, 6, true}, {6, 6, true}, {0, 6, false}, {6, 6, false}};
  const Expected moment[4] = {
      {0, 3, true}, {6, 3, true}, {3, 3, true}, {9, 3, true}};
  for (int rank = 0; rank < 4; ++rank) {
    StateStore store(manifest, rank);
    std::vector<CkptTensor> tensors = llvm::cantFail(store.checkpointTensors());
    ASSERT_EQ(tensors.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      const Expected &want = i == 0 ? param[rank] : moment[rank];
      SCOPED_TRACE(tensors[i].name + " on rank " + std::to_string(rank));
      EXPECT_EQ(tensors[i].shape, (std::vector<int64_t>{4, 3}));
      ASSERT_TRUE(tensors[i].held.has_value());
      EXPECT_EQ(tensors[i].held->first, want.first);
      EXPECT_EQ(tensors[i].held->count, want.count);
      EXPECT_EQ(tensors[i].held->writes, want.writes);
    }
  }
}

} // namespace

// SP=2 x DP=2 (Megatron's order: sp innermost, ranks {0,1} and {2,3} are the
// sp groups): a dense moment [4, 3] chunked by ZeRO over dp holds elements
// 0-5 on ranks 0 and 1, 6-11 on ranks 2 and 3 (the dp index, not the
// rank), and the first rank of each sp group writes them.
TEST(Checkpoint, ChunksAnSpGroupSharesAreSavedOnceAtTheDpIndex) {
  ArgSpec moment;
  moment.kind = ArgSpec::State;
  moment.name = "w.exp_avg";
  moment.shape = {6};
  moment.fullShape = std::vector<int64_t>{4, 3};
  StepManifest manifest;
  manifest.args = {moment};
  manifest.gridSizes = {2, 2};
  manifest.gridAxes = "dp, sp";
  for (int rank = 0; rank < 4; ++rank) {
    StateStore store(manifest, rank);
    std::vector<CkptTensor> tensors = llvm::cantFail(store.checkpointTensors());
    ASSERT_EQ(tensors.size(), 1u);
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_TRUE(tensors[0].held.has_value());
    EXPECT_EQ(tensors[0].held->first, rank / 2 * 6);
    EXPECT_EQ(tensors[0].held->count, 6);
    EXPECT_EQ(tensors[0].held->writes, rank % 2 == 0);
  }
}
