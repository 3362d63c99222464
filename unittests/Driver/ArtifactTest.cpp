//===- ArtifactTest.cpp - The artifact manifest round trip ----------------===//
#include "ds/Driver/Artifact.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <fstream>

using namespace ds::driver;
namespace exec = mlir::ds::exec;

namespace {

std::string freshDir(const char *name) {
  llvm::SmallString<128> dir;
  llvm::sys::fs::createUniqueDirectory(name, dir);
  return dir.str().str();
}

ArtifactManifest sample() {
  ArtifactManifest m;
  m.dsVersion = dsVersion().str();
  m.worldSize = 2;
  m.cpuLevel = "native";
  m.cpuName = "znver3";
  m.cpuFeatures = {"+avx2", "-avx512f"};
  m.modelPath = "gpt.json";
  m.modelHash = 0xfedcba9876543210ull;
  m.config = {{"train_batch_size", 8}, {"zero_optimization", {{"stage", 3}}}};
  ArtifactProgram p;
  p.object = "train_step.so";
  p.ranks = {0, 1};
  ArgSpec w;
  w.kind = ArgSpec::Param;
  w.name = "h.0.attn.w";
  w.dtype = exec::DType::BF16;
  w.shape = {32};
  w.fullShape = std::vector<int64_t>{8, 8};
  w.init = InitKind::Normal;
  w.initStd = 0.02;
  ArgSpec s;
  s.kind = ArgSpec::State;
  s.name = "h.0.attn.w.exp_avg";
  s.owner = "h.0.attn.w";
  s.stateKind = "exp_avg";
  s.stateInit.kind = StateInit::Float;
  s.stateInit.floatValue = 0.5;
  s.shape = {32};
  ArgSpec b;
  b.kind = ArgSpec::Batch;
  b.name = "input_ids";
  b.dtype = exec::DType::I64;
  b.shape = {4, 16};
  p.step.args = {w, s, b};
  p.step.batchArgs = {2};
  p.step.results = {{"h.0.attn.w", 0, exec::DType::BF16, {32}},
                    {"loss", -1, exec::DType::F32, {}}};
  p.step.gradientAccumulationSteps = 2;
  p.step.gridSizes = {2};
  p.step.gridAxes = "dp=2";
  p.step.startupHash = 0x0123456789abcdefull;
  p.step.initSeed = 7;
  p.step.crossEntropyClasses = 256;
  p.step.tokenVocab = 64;
  p.step.blasCallSites = 22;
  p.step.workspaceBytes = 4096;
  p.signature.name = "train_step";
  for (const ArgSpec &a : p.step.args)
    p.signature.inputs.push_back(
        {a.dtype, {a.shape.begin(), a.shape.end()}, true});
  p.signature.results.push_back({exec::DType::F32, {}, true});
  m.programs.push_back(p);
  return m;
}

TEST(Artifact, ManifestRoundTrips) {
  std::string dir = freshDir("ds-artifact-test");
  ArtifactManifest m = sample();
  ASSERT_FALSE(llvm::errorToBool(writeArtifactManifest(m, dir)));
  auto back = readArtifactManifest(dir);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->worldSize, 2);
  EXPECT_EQ(back->cpuFeatures, m.cpuFeatures);
  EXPECT_EQ(back->modelHash, m.modelHash);
  EXPECT_EQ(back->config, m.config);
  ASSERT_EQ(back->programs.size(), 1u);
  const ArtifactProgram &p = back->programs[0];
  EXPECT_EQ(p.ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(back->programOf(1), &back->programs[0]);
  EXPECT_EQ(back->programOf(2), nullptr);
  const StepManifest &s = p.step;
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[0].kind, ArgSpec::Param);
  EXPECT_EQ(s.args[0].dtype, exec::DType::BF16);
  EXPECT_EQ(*s.args[0].fullShape, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(s.args[0].init, InitKind::Normal);
  EXPECT_EQ(s.args[0].initStd, 0.02);
  EXPECT_EQ(s.args[1].owner, "h.0.attn.w");
  EXPECT_EQ(s.args[1].stateInit.kind, StateInit::Float);
  EXPECT_EQ(s.args[1].stateInit.floatValue, 0.5);
  EXPECT_FALSE(s.args[1].fullShape.has_value());
  EXPECT_EQ(s.args[2].dtype, exec::DType::I64);
  EXPECT_EQ(s.batchArgs, (std::vector<size_t>{2}));
  EXPECT_EQ(s.results[1].updates, -1);
  EXPECT_EQ(s.gridAxes, "dp=2");
  EXPECT_EQ(s.startupHash, 0x0123456789abcdefull);
  EXPECT_EQ(s.initSeed, std::optional<uint64_t>(7));
  EXPECT_EQ(s.crossEntropyClasses, 256);
  EXPECT_EQ(s.tokenVocab, 64);
  EXPECT_EQ(s.workspaceBytes, 4096);
  EXPECT_EQ(p.signature.workspaceBytes, 4096);
  ASSERT_EQ(p.signature.inputs.size(), 3u);
  EXPECT_EQ(p.signature.inputs[2].shape[1], 16);
  // No "stack" fields: nothing stacked.
  EXPECT_TRUE(p.signature.inputs[0].stack.empty());
  EXPECT_TRUE(s.argStacks.empty());
  llvm::sys::fs::remove_directories(dir);
}

// Two layers' weights (arguments 0 and 3) as one ds.stack argument, and
// their next values as one stacked result.
ArtifactManifest stackedSample() {
  ArtifactManifest m = sample();
  ArtifactProgram &p = m.programs[0];
  ArgSpec w1 = p.step.args[0];
  w1.name = "h.1.attn.w";
  p.step.args.push_back(w1);
  p.step.results.insert(p.step.results.begin() + 1,
                        {"h.1.attn.w", 3, exec::DType::BF16, {32}});
  exec::ValueInfo stacked{exec::DType::BF16, {2, 32}, true, {0, 3}};
  p.signature.inputs = {stacked, p.signature.inputs[1], p.signature.inputs[2]};
  exec::ValueInfo next = stacked;
  next.stack = {0, 1};
  p.signature.results = {next, {exec::DType::F32, {}, true}};
  return m;
}

TEST(Artifact, StacksRoundTrip) {
  std::string dir = freshDir("ds-artifact-test");
  ASSERT_FALSE(llvm::errorToBool(writeArtifactManifest(stackedSample(), dir)));
  auto back = readArtifactManifest(dir);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  const ArtifactProgram &p = back->programs[0];
  EXPECT_EQ(p.signature.inputs[0].stack, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(p.signature.inputs[1].stack.empty());
  EXPECT_EQ(p.signature.results[0].stack, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.signature.callerInputs().size(), 4u);
  EXPECT_EQ(p.signature.callerResults().size(), 3u);
  EXPECT_EQ(p.step.argStacks, (std::vector<std::vector<size_t>>{{0, 3}}));
  llvm::sys::fs::remove_directories(dir);
}

TEST(Artifact, BadStackIsDamage) {
  std::string dir = freshDir("ds-artifact-test");
  ArtifactManifest m = stackedSample();
  m.programs[0].signature.inputs[0].stack = {0, 7};
  ASSERT_FALSE(llvm::errorToBool(writeArtifactManifest(m, dir)));
  auto back = readArtifactManifest(dir);
  ASSERT_FALSE(bool(back));
  std::string error = llvm::toString(back.takeError());
  EXPECT_NE(error.find("damaged manifest (@train_step: argument 0 (ds.stack "
                       "of 2 caller values) names caller position 7"),
            std::string::npos)
      << error;
  llvm::sys::fs::remove_directories(dir);
}

TEST(Artifact, BadIndexIsDamage) {
  std::string dir = freshDir("ds-artifact-test");
  ArtifactManifest m = sample();
  m.programs[0].step.batchArgs = {9};
  ASSERT_FALSE(llvm::errorToBool(writeArtifactManifest(m, dir)));
  auto back = readArtifactManifest(dir);
  ASSERT_FALSE(bool(back));
  EXPECT_NE(llvm::toString(back.takeError()).find("damaged manifest"),
            std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST(Artifact, FirstDifferenceNamesTheKeyPath) {
  nlohmann::json a = {{"zero", {{"stage", 3}, {"bucket", 5}}}, {"lr", 1}};
  nlohmann::json b = {{"zero", {{"stage", 2}, {"bucket", 5}}}, {"lr", 1}};
  EXPECT_EQ(firstDifference(a, a), "");
  EXPECT_EQ(firstDifference(a, b), "zero.stage: 3 vs 2");
  nlohmann::json c = {{"zero", {{"stage", 3}, {"bucket", 5}}}};
  EXPECT_EQ(firstDifference(a, c), "lr: 1 vs (absent)");
  EXPECT_EQ(firstDifference(c, a), "lr: (absent) vs 1");
}

} // namespace
