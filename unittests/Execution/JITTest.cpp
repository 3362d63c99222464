//===- JITTest.cpp - parse MLIR text, lower, JIT, run
//----------------------===//
//
// Each test writes a small function at linalg/tensor level, runs it through
// Runner (ds-lower-to-llvm + ExecutionEngine) and compares with values
// computed here by plain loops.
//
//===----------------------------------------------------------------------===//

#include "ds/Execution/JIT.h"

#include "mlir/IR/BuiltinTypes.h"

#include "GemmOracle.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace mlir::ds::exec;

namespace {

std::unique_ptr<Runner> compile(const std::string &source,
                                RunnerOptions options = {}) {
  auto runner = Runner::fromSource(source, options);
  if (!runner) {
    ADD_FAILURE() << llvm::toString(runner.takeError());
    return nullptr;
  }
  return std::move(*runner);
}

std::vector<float> random(int64_t n, unsigned seed) {
  return dstest::randomMatrix(n, seed);
}

// C[m][n] = sum_k A(m, k) B(k, n), A and B row-major, optionally stored
// transposed.
std::vector<float> matmul(const std::vector<float> &a,
                          const std::vector<float> &b, int64_t M, int64_t N,
                          int64_t K, bool tA = false, bool tB = false) {
  std::vector<float> c(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(tA ? a[k * M + i] : a[i * K + k]) *
               double(tB ? b[j * K + k] : b[k * N + j]);
      c[i * N + j] = float(acc);
    }
  return c;
}

void expectNear(const Tensor &got, const std::vector<float> &want,
                float tol = 1e-4f) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size()));
  const float *g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(g[i], want[i], tol) << "at flat index " << i;
}

const char *kMatmul = R"mlir(
func.func @mm(%a: tensor<37x19xf32>, %b: tensor<19x23xf32>) -> tensor<37x23xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x23xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<37x23xf32>) -> tensor<37x23xf32>
  %c = linalg.matmul ins(%a, %b : tensor<37x19xf32>, tensor<19x23xf32>)
                     outs(%f : tensor<37x23xf32>) -> tensor<37x23xf32>
  return %c : tensor<37x23xf32>
}
)mlir";

TEST(Runner, MatmulThroughBlasAndThroughLoops) {
  std::vector<float> a = random(37 * 19, 1), b = random(19 * 23, 2);
  std::vector<float> want = matmul(a, b, 37, 23, 19);
  for (bool blas : {true, false}) {
    RunnerOptions options;
    options.blas = blas;
    auto runner = compile(kMatmul, options);
    ASSERT_TRUE(runner);
    EXPECT_EQ(runner->blasCallSites(), blas ? 1 : 0);
    auto out = runner->invoke("mm", {Tensor::fromVector<float>({37, 19}, a),
                                     Tensor::fromVector<float>({19, 23}, b)});
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].shape(), llvm::ArrayRef<int64_t>({37, 23}));
    expectNear((*out)[0], want);
  }
}

TEST(Runner, TransposedOperandsAndBatchBroadcast) {
  // y[b] = x[b] @ w^T as a linalg.generic contraction (w shared by the
  // batch, PyTorch Linear layout) and g = dy^T @ x2 (A transposed).
  const char *source = R"mlir(
func.func @linear(%x: tensor<3x5x4xf32>, %w: tensor<6x4xf32>) -> tensor<3x5x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5x6xf32>) -> tensor<3x5x6xf32>
  %y = linalg.generic {indexing_maps = [
         affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (n, k)>,
         affine_map<(b, m, n, k) -> (b, m, n)>],
         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%x, %w : tensor<3x5x4xf32>, tensor<6x4xf32>) outs(%f : tensor<3x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x5x6xf32>
  return %y : tensor<3x5x6xf32>
}
func.func @grad(%dy: tensor<7x6xf32>, %x: tensor<7x4xf32>) -> tensor<6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x4xf32>) -> tensor<6x4xf32>
  %g = linalg.matmul indexing_maps = [
         affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>,
         affine_map<(m, n, k) -> (m, n)>]
       ins(%dy, %x : tensor<7x6xf32>, tensor<7x4xf32>) outs(%f : tensor<6x4xf32>) -> tensor<6x4xf32>
  return %g : tensor<6x4xf32>
}
)mlir";
  auto runner = compile(source);
  ASSERT_TRUE(runner);
  EXPECT_EQ(runner->blasCallSites(), 2);

  std::vector<float> x = random(3 * 5 * 4, 3), w = random(6 * 4, 4);
  auto y = runner->invoke("linear", {Tensor::fromVector<float>({3, 5, 4}, x),
                                     Tensor::fromVector<float>({6, 4}, w)});
  ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
  std::vector<float> want;
  for (int b = 0; b < 3; ++b) {
    std::vector<float> xb(x.begin() + b * 20, x.begin() + (b + 1) * 20);
    std::vector<float> yb = matmul(xb, w, 5, 6, 4, false, true);
    want.insert(want.end(), yb.begin(), yb.end());
  }
  expectNear((*y)[0], want);

  std::vector<float> dy = random(7 * 6, 5), x2 = random(7 * 4, 6);
  auto g = runner->invoke("grad", {Tensor::fromVector<float>({7, 6}, dy),
                                   Tensor::fromVector<float>({7, 4}, x2)});
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  expectNear((*g)[0], matmul(dy, x2, 6, 4, 7, true, false));
}

TEST(Runner, ElementwiseErfScalarArgAndResult) {
  // y = erf(x * s), and the sum of y as a scalar result.
  const char *source = R"mlir(
#id = affine_map<(i) -> (i)>
#all = affine_map<(i) -> ()>
func.func @f(%x: tensor<10xf32>, %s: f32) -> (tensor<10xf32>, f32) {
  %e = tensor.empty() : tensor<10xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
         ins(%x : tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %s : f32
    %r = math.erf %m : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
           ins(%y : tensor<10xf32>) outs(%z : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %v, %acc : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %r = tensor.extract %sum[] : tensor<f32>
  return %y, %r : tensor<10xf32>, f32
}
)mlir";
  auto runner = compile(source);
  ASSERT_TRUE(runner);
  const FunctionSignature *sig = runner->signature("f");
  ASSERT_TRUE(sig);
  ASSERT_EQ(sig->inputs.size(), 2u);
  EXPECT_FALSE(sig->inputs[1].isTensor);
  ASSERT_EQ(sig->results.size(), 2u);
  EXPECT_FALSE(sig->results[1].isTensor);

  std::vector<float> x = random(10, 7);
  auto out = runner->invoke(
      "f", {Tensor::fromVector<float>({10}, x), Tensor::scalar<float>(1.5f)});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> want(10);
  double sum = 0;
  for (int i = 0; i < 10; ++i) {
    want[i] = std::erf(x[i] * 1.5f);
    sum += want[i];
  }
  expectNear((*out)[0], want, 1e-6f);
  EXPECT_NEAR((*out)[1].data<float>()[0], sum, 1e-5);
}

TEST(Runner, BorrowedOutputsAndRepeatedCallsReuseTheArena) {
  // p = x*x; q = p - x; a = q + 1 + p; b = 2a; c = a*b; d = c - a;
  // f = d + b with fusion off: p dies at a, so a later temporary can take
  // its bytes. Called several times into one borrowed output.
  const char *source = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%x, %x : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%p, %x : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.subf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%q, %p : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r0 = arith.addf %v, %one : f32
    %r = arith.addf %r0, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %two : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a, %b : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%c, %a : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.subf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %f = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%d, %b : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.addf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  return %f : tensor<16x8xf32>
}
)mlir";
  int64_t withReuse = 0, withoutReuse = 0, inPlace = 0;
  for (int mode : {0, 1, 2}) {
    // 0, 1: buffer reuse on and off, each result in a buffer of its own;
    // 2: results written over inputs that die there, no reuse.
    RunnerOptions options;
    options.fuseElementwise = false;
    options.reuseBuffers = mode == 0;
    options.elementwiseInPlace = mode == 2;
    auto runner = compile(source, options);
    ASSERT_TRUE(runner);
    (mode == 0 ? withReuse : mode == 1 ? withoutReuse : inPlace) =
        runner->signature("chain")->workspaceBytes;
    std::vector<float> out(16 * 8, -7.0f);
    Tensor outT = Tensor::borrow(DType::F32, {16, 8}, out.data());
    for (unsigned seed = 0; seed < 5; ++seed) {
      std::vector<float> x = random(16 * 8, 10 + seed);
      ASSERT_FALSE(bool(runner->invokeInto(
          "chain", {Tensor::fromVector<float>({16, 8}, x)}, {outT})));
      std::vector<float> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        float p = x[i] * x[i], q = p - x[i], a = q + 1.0f + p, b = a * 2.0f;
        want[i] = (a * b - a) + b;
      }
      expectNear(outT, want, 1e-5f);
    }
  }
  // Three 512-byte temporaries left after in-place bufferization (the
  // last result goes straight to the output); at most two are alive at a
  // time, so reuse needs two slots.
  EXPECT_EQ(withoutReuse, 3 * 512);
  EXPECT_EQ(withReuse, 2 * 512);
  // In place, a is written over q and d over c (each dies there), and f
  // over d, the output: p and b are left, two temporaries without reuse.
  EXPECT_EQ(inPlace, 2 * 512);
}

TEST(Runner, InputsAreNeverWritten) {
  // The generic's init is the argument itself: bufferized in place it
  // would overwrite the caller's tensor.
  const char *source = R"mlir(
func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} outs(%x : tensor<4xf32>) {
  ^bb0(%o: f32):
    %r = arith.addf %o, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
)mlir";
  auto runner = compile(source);
  ASSERT_TRUE(runner);
  Tensor x = Tensor::fromVector<float>({4}, {1, 2, 3, 4});
  auto out = runner->invoke("double", {x});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_EQ((*out)[0].toVector<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(x.toVector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Runner, ClearErrors) {
  auto runner = compile(kMatmul);
  ASSERT_TRUE(runner);
  auto wrongShape = runner->invoke("mm", {Tensor::zeros(DType::F32, {37, 18}),
                                          Tensor::zeros(DType::F32, {19, 23})});
  ASSERT_FALSE(bool(wrongShape));
  EXPECT_EQ(llvm::toString(wrongShape.takeError()),
            "@mm: input 0 is tensor<37x18xf32> but the function takes "
            "tensor<37x19xf32>");
  auto wrongCount = runner->invoke("mm", {Tensor::zeros(DType::F32, {37, 19})});
  ASSERT_FALSE(bool(wrongCount));
  EXPECT_EQ(llvm::toString(wrongCount.takeError()),
            "@mm takes 2 input(s), got 1");
  auto noSuch = runner->invoke("forward", {});
  ASSERT_FALSE(bool(noSuch));
  EXPECT_EQ(llvm::toString(noSuch.takeError()),
            "no public function @forward (the module has @mm)");

  auto bad = Runner::fromSource("func.func @f( {");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("cannot parse the input"),
            std::string::npos);
}

TEST(Runner, PreLoweringCallbackAndStages) {
  // The callback sees the module before the ds lowering; onStage after.
  RunnerOptions options;
  bool sawPre = false, sawLLVM = false;
  options.onStage = [&](llvm::StringRef stage, mlir::ModuleOp) {
    sawPre |= stage == "pre";
    sawLLVM |= stage == "llvm";
  };
  auto runner = compile(kMatmul, options);
  ASSERT_TRUE(runner);
  EXPECT_TRUE(sawPre);
  EXPECT_TRUE(sawLLVM);
  EXPECT_EQ(runner->functionNames(), std::vector<std::string>{"mm"});
}

} // namespace
