//===- StateStoreTest.cpp - Stacked groups in the state store -------------===//
//
// A manifest whose step takes two layers' weights as one stacked argument:
// the store holds their current and next values each back to back in layer
// order, while init, restore and checkpoints keep working per tensor.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/StateStore.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace ds::driver;

namespace {

ArgSpec param(const char *name, std::vector<int64_t> shape) {
  ArgSpec a;
  a.kind = ArgSpec::Param;
  a.name = name;
  a.shape = std::move(shape);
  a.init = InitKind::Normal;
  a.initStd = 0.02;
  return a;
}

// Arguments: the batch, h.1.w, h.0.w, h.0.b; the step takes [h.0.w, h.1.w]
// stacked (layer order, not argument order).
StepManifest stackedManifest() {
  StepManifest m;
  ArgSpec batch;
  batch.kind = ArgSpec::Batch;
  batch.name = "x";
  batch.shape = {4};
  m.args = {batch, param("h.1.w", {2, 3}), param("h.0.w", {2, 3}),
            param("h.0.b", {3})};
  m.batchArgs = {0};
  m.results = {{"h.0.w", 2, DType::F32, {2, 3}},
               {"h.1.w", 1, DType::F32, {2, 3}},
               {"h.0.b", 3, DType::F32, {3}},
               {"loss", -1, DType::F32, {}}};
  m.argStacks = {{2, 1}};
  return m;
}

const char *at(const Tensor &t, int64_t k) {
  return static_cast<const char *>(t.data()) + k * t.byteSize();
}

TEST(StateStore, StackedGroupsAreContiguousInLayerOrder) {
  StepManifest manifest = stackedManifest();
  StateStore store(manifest, 0);
  std::vector<Tensor> args(4), results(4);
  store.bind(args, results);
  EXPECT_EQ(args[1].data(), at(args[2], 1));
  EXPECT_EQ(args[1].shape(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(store.current(2).data(), args[2].data());
  EXPECT_EQ(store.current(1).data(), at(store.current(2), 1));
}

// The model states are held once: each result that updates an argument is
// that argument's buffer, so the step writes the next value over it.
TEST(StateStore, ResultsUpdateTheirArgumentsInPlace) {
  StepManifest manifest = stackedManifest();
  StateStore store(manifest, 0);
  std::vector<Tensor> args(4), results(4);
  store.bind(args, results);
  EXPECT_EQ(results[0].data(), args[2].data());
  EXPECT_EQ(results[1].data(), args[1].data());
  EXPECT_EQ(results[2].data(), args[3].data());
  EXPECT_TRUE(results[3].isNull()); // the loss is the step loop's
  static_cast<float *>(results[2].data())[1] = 7;
  EXPECT_EQ(store.current(3).toVector<float>()[1], 7);
}

TEST(StateStore, StackedTensorsInitRestoreAndSaveOneByOne) {
  StepManifest stacked = stackedManifest(), plain = stackedManifest();
  plain.argStacks.clear();
  StateStore a(stacked, 0), b(plain, 0);
  ASSERT_FALSE(llvm::errorToBool(a.initialize(42, "")));
  ASSERT_FALSE(llvm::errorToBool(b.initialize(42, "")));
  for (size_t i : {1, 2, 3})
    EXPECT_EQ(a.current(i).toVector<float>(), b.current(i).toVector<float>())
        << stacked.args[i].name;
  EXPECT_NE(a.current(1).toVector<float>(), a.current(2).toVector<float>());

  std::vector<std::vector<char>> restored(4);
  std::vector<float> h1 = {1, 2, 3, 4, 5, 6};
  restored[1].resize(h1.size() * sizeof(float));
  std::memcpy(restored[1].data(), h1.data(), restored[1].size());
  std::vector<float> h0 = a.current(2).toVector<float>();
  a.restore(restored);
  EXPECT_EQ(a.current(1).toVector<float>(), h1);
  EXPECT_EQ(a.current(2).toVector<float>(), h0);

  std::vector<CkptTensor> tensors = llvm::cantFail(a.checkpointTensors());
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].name, "h.1.w");
  EXPECT_EQ(tensors[0].data, a.current(1).data());
  EXPECT_EQ(tensors[1].data, a.current(2).data());
}

} // namespace
