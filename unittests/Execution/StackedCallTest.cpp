//===- StackedCallTest.cpp - ds.stack arguments and results ---------------===//
//
// A function whose arguments and results carry ds.stack is called with one
// tensor per slice, in the caller's order, whether the slices lie back to
// back (passed as one view) or not (staged); every output is compared with
// values computed here.
//
//===----------------------------------------------------------------------===//

#include "ds/Execution/JIT.h"

#include "gtest/gtest.h"

using namespace mlir::ds::exec;

namespace {

// Caller inputs: 0 = b, 1/3/4 = slices 0/1/2 of a, 2 = c. Caller outputs:
// 2/0/1 = slices 0/1/2 of y, 3 = z. y[k] = 2 a[k] + b, z = b + c.
const char *kStacked = R"mlir(
#ki = affine_map<(k, i) -> (k, i)>
#i = affine_map<(k, i) -> (i)>
#id = affine_map<(i) -> (i)>
func.func @stacked(%b: tensor<4xf32>,
                   %a: tensor<3x4xf32> {ds.stack = array<i64: 1, 3, 4>},
                   %c: f32)
    -> (tensor<4xf32>, tensor<3x4xf32> {ds.stack = array<i64: 2, 0, 1>}) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %y = linalg.generic {indexing_maps = [#ki, #i, #ki],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b : tensor<3x4xf32>, tensor<4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %t = arith.mulf %x, %two : f32
    %r = arith.addf %t, %v : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
         ins(%b : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %c : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %z, %y : tensor<4xf32>, tensor<3x4xf32>
}
)mlir";

std::unique_ptr<Runner> compile(const std::string &source) {
  auto runner = Runner::fromSource(source);
  if (!runner) {
    ADD_FAILURE() << llvm::toString(runner.takeError());
    return nullptr;
  }
  return std::move(*runner);
}

std::string compileError(const std::string &source) {
  auto runner = Runner::fromSource(source);
  if (runner)
    return "(compiled)";
  return llvm::toString(runner.takeError());
}

struct Values {
  std::vector<float> b{1, 2, 3, 4};
  std::vector<std::vector<float>> a{
      {10, 20, 30, 40}, {-1, -2, -3, -4}, {0.5f, 0.25f, 0, 8}};
  float c = 100;

  std::vector<float> y(int k) const {
    std::vector<float> out(4);
    for (int i = 0; i < 4; ++i)
      out[i] = 2 * a[k][i] + b[i];
    return out;
  }
  std::vector<float> z() const {
    std::vector<float> out(4);
    for (int i = 0; i < 4; ++i)
      out[i] = b[i] + c;
    return out;
  }
};

TEST(StackedCall, SignatureIsTheCallers) {
  auto runner = compile(kStacked);
  ASSERT_TRUE(runner);
  const FunctionSignature *sig = runner->signature("stacked");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->inputs.size(), 3u);
  EXPECT_EQ(sig->inputs[1].stack, (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(sig->results[1].stack, (std::vector<int64_t>{2, 0, 1}));
  std::vector<ValueInfo> in = sig->callerInputs(), out = sig->callerResults();
  ASSERT_EQ(in.size(), 5u);
  ASSERT_EQ(out.size(), 4u);
  for (int p : {1, 3, 4})
    EXPECT_EQ(in[p].shape, (llvm::SmallVector<int64_t, 4>{4}));
  EXPECT_FALSE(in[2].isTensor);
  for (int p : {0, 1, 2, 3})
    EXPECT_EQ(out[p].shape, (llvm::SmallVector<int64_t, 4>{4}));
}

TEST(StackedCall, ContiguousSlicesAndResults) {
  auto runner = compile(kStacked);
  ASSERT_TRUE(runner);
  Values v;
  // The stacked input's slices back to back in one buffer, as are the
  // stacked result's (in its own caller order 2, 0, 1).
  std::vector<float> aBuf, yBuf(12, -7);
  for (const auto &slice : v.a)
    aBuf.insert(aBuf.end(), slice.begin(), slice.end());
  auto view = [](std::vector<float> &buf, int k) {
    return Tensor::borrow(DType::F32, {4}, buf.data() + 4 * k);
  };
  std::vector<Tensor> inputs = {Tensor::fromVector<float>({4}, v.b),
                                view(aBuf, 0), Tensor::scalar(v.c),
                                view(aBuf, 1), view(aBuf, 2)};
  Tensor z = Tensor::zeros(DType::F32, {4});
  std::vector<Tensor> outputs = {view(yBuf, 1), view(yBuf, 2), view(yBuf, 0),
                                 z};
  ASSERT_FALSE(bool(runner->invokeInto("stacked", inputs, outputs)));
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(
        std::vector<float>(yBuf.begin() + 4 * k, yBuf.begin() + 4 * k + 4),
        v.y(k))
        << "slice " << k;
  EXPECT_EQ(z.toVector<float>(), v.z());
  // The inputs are not written.
  EXPECT_EQ(std::vector<float>(aBuf.begin(), aBuf.begin() + 4), v.a[0]);
}

TEST(StackedCall, ScatteredSlicesAreStaged) {
  auto runner = compile(kStacked);
  ASSERT_TRUE(runner);
  Values v;
  // Separate tensors, and a buffer holding the slices in reverse order:
  // neither is one view.
  std::vector<float> reversed;
  for (int k = 2; k >= 0; --k)
    reversed.insert(reversed.end(), v.a[k].begin(), v.a[k].end());
  auto view = [&](int k) {
    return Tensor::borrow(DType::F32, {4}, reversed.data() + 4 * (2 - k));
  };
  for (bool separate : {true, false}) {
    std::vector<Tensor> a;
    for (int k = 0; k < 3; ++k)
      a.push_back(separate ? Tensor::fromVector<float>({4}, v.a[k]) : view(k));
    // Caller outputs 2, 0, 1 are slices 0, 1, 2 of y.
    auto out =
        runner->invoke("stacked", {Tensor::fromVector<float>({4}, v.b), a[0],
                                   Tensor::scalar(v.c), a[1], a[2]});
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    ASSERT_EQ(out->size(), 4u);
    EXPECT_EQ((*out)[2].toVector<float>(), v.y(0));
    EXPECT_EQ((*out)[0].toVector<float>(), v.y(1));
    EXPECT_EQ((*out)[1].toVector<float>(), v.y(2));
    EXPECT_EQ((*out)[3].toVector<float>(), v.z());
  }
}

TEST(StackedCall, ErrorsNameTheCallerPosition) {
  auto runner = compile(kStacked);
  ASSERT_TRUE(runner);
  Tensor f4 = Tensor::zeros(DType::F32, {4});
  auto wrong = runner->invoke("stacked", {f4, f4, Tensor::scalar(1.0f), f4,
                                          Tensor::zeros(DType::F32, {5})});
  ASSERT_FALSE(bool(wrong));
  EXPECT_EQ(llvm::toString(wrong.takeError()),
            "@stacked: input 4 is tensor<5xf32> but the function takes "
            "tensor<4xf32> (slice 2 of its argument 1, ds.stack)");
  auto count = runner->invoke("stacked", {f4, f4, Tensor::scalar(1.0f)});
  ASSERT_FALSE(bool(count));
  EXPECT_EQ(llvm::toString(count.takeError()),
            "@stacked takes 5 input(s), got 3");
}

TEST(StackedCall, InvalidStacksAreRefused) {
  EXPECT_EQ(compileError(R"mlir(
func.func @f(%a: tensor<2x4xf32> {ds.stack = array<i64: 0, 1, 2>}) -> tensor<2x4xf32> {
  return %a : tensor<2x4xf32>
}
)mlir"),
            "@f: argument 0 (ds.stack of 3 caller values) has type "
            "tensor<2x4xf32>, whose leading dimension is not 3");
  EXPECT_EQ(compileError(R"mlir(
func.func @f(%a: tensor<2x4xf32> {ds.stack = array<i64: 0, 1>},
             %b: tensor<2x4xf32> {ds.stack = array<i64: 1, 2>}) -> tensor<2x4xf32> {
  return %a : tensor<2x4xf32>
}
)mlir"),
            "@f: argument 1 (ds.stack of 2 caller values) names caller "
            "position 1, which another stacked value or this one takes too");
  EXPECT_EQ(compileError(R"mlir(
func.func @f(%a: tensor<2x4xf32>) -> (tensor<2x4xf32> {ds.stack = array<i64: 0, 2>}) {
  return %a : tensor<2x4xf32>
}
)mlir"),
            "@f: result 0 (ds.stack of 2 caller values) names caller "
            "position 2, but the caller has 2 (0 to 1)");
  EXPECT_EQ(compileError(R"mlir(
func.func @f(%a: tensor<2x4xf32> {ds.stack = 3 : i64}) -> tensor<2x4xf32> {
  return %a : tensor<2x4xf32>
}
)mlir"),
            "@f: argument 0: ds.stack must be a non-empty array<i64: ...> of "
            "caller positions");
}

} // namespace
