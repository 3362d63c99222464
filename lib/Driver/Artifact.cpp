//===- Artifact.cpp - A ds-compile artifact directory ---------------------===//
#include "ds/Driver/Artifact.h"
#include "ds/Support/StrictJson.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdio>

#ifndef DS_VERSION
#define DS_VERSION "unknown"
#endif

using namespace ::ds::driver;
using ds::support::jsonInteger;
using ds::support::jsonIntegers;
using ds::support::jsonIntegerValue;
using nlohmann::json;
namespace exec = mlir::ds::exec;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

std::string hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

uint64_t parseHex64(const std::string &s) {
  return std::strtoull(s.c_str(), nullptr, 16);
}

const char *const kArgKinds[] = {"param", "state", "step", "batch"};
const char *const kInitKinds[] = {"zeros", "ones", "normal", "uniform"};
const char *const kStateInits[] = {"zeros", "float", "int", "other"};

template <size_t N>
int64_t indexOf(const char *const (&names)[N], const std::string &name,
                const char *what) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i])
      return int64_t(i);
  throw std::runtime_error(std::string("unknown ") + what + " '" + name + "'");
}

exec::DType parseDType(const std::string &name) {
  using exec::DType;
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I1,
                  DType::I8, DType::I16, DType::I32, DType::I64})
    if (exec::dtypeName(d) == name)
      return d;
  throw std::runtime_error("unknown dtype '" + name + "'");
}

json argJson(const ArgSpec &a) {
  json j = {{"kind", kArgKinds[a.kind]},
            {"name", a.name},
            {"dtype", exec::dtypeName(a.dtype).str()},
            {"shape", a.shape}};
  if (a.fullShape)
    j["full_shape"] = *a.fullShape;
  if (a.expertShards)
    j["expert_shards"] = a.expertShards;
  if (a.tpSize)
    j["tensor_parallel"] = {{"size", a.tpSize},
                            {"dim", a.tpDim},
                            {"blocks", a.tpBlocks},
                            {"shape", a.tpShape}};
  if (a.kind == ArgSpec::Param) {
    j["init"] = kInitKinds[int(a.init)];
    j["init_std"] = a.initStd;
  }
  if (a.kind == ArgSpec::State) {
    j["owner"] = a.owner;
    j["state_kind"] = a.stateKind;
    j["state_init"] = {{"kind", kStateInits[a.stateInit.kind]},
                       {"float", a.stateInit.floatValue},
                       {"int", a.stateInit.intValue}};
  }
  return j;
}

ArgSpec argOf(const json &j) {
  ArgSpec a;
  a.kind = ArgSpec::Kind(indexOf(kArgKinds, j.at("kind"), "argument kind"));
  a.name = j.at("name");
  a.dtype = parseDType(j.at("dtype"));
  a.shape = jsonIntegers(j, "shape");
  if (j.contains("full_shape"))
    a.fullShape = jsonIntegers(j, "full_shape");
  a.expertShards = jsonInteger<decltype(a.expertShards)>(j, "expert_shards", 0);
  if (j.contains("tensor_parallel")) {
    const auto &tp = j["tensor_parallel"];
    a.tpSize = jsonInteger<int64_t>(tp, "size", 0);
    a.tpDim = jsonInteger<int64_t>(tp, "dim", 0);
    a.tpBlocks = jsonInteger<int64_t>(tp, "blocks", 1);
    a.tpShape = jsonIntegers(tp, "shape");
  }
  if (a.kind == ArgSpec::Param) {
    a.init = InitKind(indexOf(kInitKinds, j.at("init"), "init"));
    a.initStd = j.at("init_std");
  }
  if (a.kind == ArgSpec::State) {
    a.owner = j.at("owner");
    a.stateKind = j.at("state_kind");
    const json &init = j.at("state_init");
    a.stateInit.kind =
        StateInit::Kind(indexOf(kStateInits, init.at("kind"), "state init"));
    a.stateInit.floatValue = init.at("float");
    a.stateInit.intValue =
        jsonInteger<decltype(a.stateInit.intValue)>(init, "int");
  }
  return a;
}

json valuesJson(const std::vector<exec::ValueInfo> &values) {
  json list = json::array();
  for (const exec::ValueInfo &v : values) {
    json value = {
        {"dtype", exec::dtypeName(v.dtype).str()},
        {"shape", std::vector<int64_t>(v.shape.begin(), v.shape.end())},
        {"tensor", v.isTensor}};
    if (!v.stack.empty())
      value["stack"] = v.stack;
    list.push_back(std::move(value));
  }
  return list;
}

std::vector<exec::ValueInfo> valuesOf(const json &list) {
  std::vector<exec::ValueInfo> values;
  for (const json &j : list) {
    exec::ValueInfo v;
    v.dtype = parseDType(j.at("dtype"));
    auto shape = jsonIntegers(j, "shape");
    v.shape.assign(shape.begin(), shape.end());
    v.isTensor = j.at("tensor");
    if (j.contains("stack"))
      v.stack = jsonIntegers(j, "stack");
    values.push_back(std::move(v));
  }
  return values;
}

json stepJson(const StepManifest &m) {
  json args = json::array(), results = json::array();
  for (const ArgSpec &a : m.args)
    args.push_back(argJson(a));
  for (const ResultSpec &r : m.results)
    results.push_back({{"name", r.name},
                       {"updates", r.updates},
                       {"dtype", exec::dtypeName(r.dtype).str()},
                       {"shape", r.shape}});
  json j = {{"args", args},
            {"batch_args", m.batchArgs},
            {"results", results},
            {"gradient_accumulation_steps", m.gradientAccumulationSteps},
            {"grid", {{"sizes", m.gridSizes}, {"axes", m.gridAxes}}},
            {"startup_hash", hex64(m.startupHash)},
            {"cross_entropy_classes", m.crossEntropyClasses},
            {"token_vocab", m.tokenVocab},
            {"blas_call_sites", m.blasCallSites},
            {"workspace_bytes", m.workspaceBytes},
            {"arena_bytes", m.arenaBytes},
            {"planned_peak_bytes", m.plannedPeakBytes},
            {"target", m.target}};
  if (!m.evalArgs.empty()) {
    json evalArgs = json::array();
    for (const ArgSpec &a : m.evalArgs)
      evalArgs.push_back(argJson(a));
    j["eval_args"] = std::move(evalArgs);
  }
  if (m.initSeed)
    j["init_seed"] = *m.initSeed;
  if (m.predictedCommMs >= 0)
    j["predicted_comm_ms"] = {m.predictedCommMs, m.predictedExposedCommMs};
  return j;
}

StepManifest stepOf(const json &j) {
  StepManifest m;
  for (const json &a : j.at("args"))
    m.args.push_back(argOf(a));
  // Absent in an artifact compiled without @eval_step.
  if (j.contains("eval_args"))
    for (const json &a : j.at("eval_args"))
      m.evalArgs.push_back(argOf(a));
  for (const json &i : j.at("batch_args"))
    m.batchArgs.push_back(jsonIntegerValue<size_t>(i, "\"batch_args\" entry"));
  for (const json &r : j.at("results"))
    m.results.push_back({r.at("name"), r.at("updates"),
                         parseDType(r.at("dtype")), jsonIntegers(r, "shape")});
  m.gradientAccumulationSteps =
      jsonInteger<decltype(m.gradientAccumulationSteps)>(
          j, "gradient_accumulation_steps");
  m.gridSizes = jsonIntegers(j.at("grid"), "sizes");
  m.gridAxes = j.at("grid").at("axes");
  m.startupHash = parseHex64(j.at("startup_hash"));
  m.crossEntropyClasses =
      jsonInteger<decltype(m.crossEntropyClasses)>(j, "cross_entropy_classes");
  m.blasCallSites =
      jsonInteger<decltype(m.blasCallSites)>(j, "blas_call_sites");
  m.workspaceBytes =
      jsonInteger<decltype(m.workspaceBytes)>(j, "workspace_bytes");
  // Artifacts written before these fields: unknown (and CPU code).
  if (j.contains("target"))
    m.target = j.at("target").get<std::string>();
  if (j.contains("arena_bytes"))
    m.arenaBytes = jsonInteger<decltype(m.arenaBytes)>(j, "arena_bytes");
  if (j.contains("planned_peak_bytes"))
    m.plannedPeakBytes =
        jsonInteger<decltype(m.plannedPeakBytes)>(j, "planned_peak_bytes");
  if (j.contains("token_vocab"))
    m.tokenVocab = jsonInteger<decltype(m.tokenVocab)>(j, "token_vocab");
  if (j.contains("init_seed"))
    m.initSeed = jsonInteger<uint64_t>(j, "init_seed");
  if (j.contains("predicted_comm_ms")) {
    const json &p = j.at("predicted_comm_ms");
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() ||
        !p[1].is_number())
      throw std::runtime_error(
          "\"predicted_comm_ms\" must be [total, exposed] in ms");
    m.predictedCommMs = p[0].get<double>();
    m.predictedExposedCommMs = p[1].get<double>();
  }
  for (size_t i : m.batchArgs)
    if (i >= m.args.size())
      throw std::runtime_error("batch argument index out of range");
  return m;
}

/// An entry point's fields: train_step's sit in the program object itself
/// (as format 1 has always written them), eval_step's in its "eval".
void addSignature(json &j, const exec::FunctionSignature &sig) {
  j["entry"] = sig.name;
  j["symbol"] = exec::packedEntrySymbol(sig.name);
  j["inputs"] = valuesJson(sig.inputs);
  j["outputs"] = valuesJson(sig.results);
}

exec::FunctionSignature signatureOf(const json &j) {
  exec::FunctionSignature sig;
  sig.name = j.at("entry");
  sig.inputs = valuesOf(j.at("inputs"));
  sig.results = valuesOf(j.at("outputs"));
  auto layout = exec::callerLayout(sig.results, sig.name, "result");
  if (!layout)
    throw std::runtime_error(llvm::toString(layout.takeError()));
  return sig;
}

} // namespace

llvm::StringRef ds::driver::dsVersion() { return DS_VERSION; }

const ArtifactProgram *ArtifactManifest::programOf(int64_t rank) const {
  for (const ArtifactProgram &p : programs)
    if (llvm::is_contained(p.ranks, rank))
      return &p;
  return nullptr;
}

llvm::Expected<uint64_t> ds::driver::hashFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  return llvm::xxh3_64bits((*buffer)->getBuffer());
}

llvm::Error ds::driver::writeArtifactManifest(const ArtifactManifest &m,
                                              const std::string &dir) {
  json programs = json::array();
  for (const ArtifactProgram &p : m.programs) {
    json program = {
        {"object", p.object}, {"ranks", p.ranks}, {"step", stepJson(p.step)}};
    addSignature(program, p.signature);
    if (p.evalSignature) {
      json eval = {{"workspace_bytes", p.evalSignature->workspaceBytes}};
      addSignature(eval, *p.evalSignature);
      program["eval"] = std::move(eval);
    }
    programs.push_back(std::move(program));
  }
  json j = {{"format", "ds-artifact"},
            {"format_version", m.formatVersion},
            {"ds_version", m.dsVersion},
            {"world_size", m.worldSize},
            {"cpu",
             {{"level", m.cpuLevel},
              {"name", m.cpuName},
              {"features", m.cpuFeatures}}},
            {"model", {{"path", m.modelPath}, {"xxh3", hex64(m.modelHash)}}},
            {"config", m.config},
            {"programs", programs}};
  if (!m.commProfilePath.empty())
    j["comm_profile"] = {{"path", m.commProfilePath},
                         {"xxh3", hex64(m.commProfileHash)}};
  std::string path = dir + "/manifest.json", tmp = path + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return makeError(tmp + ": cannot write: " + ec.message());
    os << j.dump(1) << "\n";
    os.close();
    if (os.has_error())
      return makeError(tmp + ": cannot write: " + os.error().message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path))
    return makeError(path + ": cannot write: " + ec.message());
  return llvm::Error::success();
}

llvm::Expected<ArtifactManifest>
ds::driver::readArtifactManifest(const std::string &dir) {
  std::string path = dir + "/manifest.json";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(path + ": cannot read (" + buffer.getError().message() +
                     "); --compiled takes a directory ds-compile wrote");
  json j = json::parse((*buffer)->getBuffer().begin(),
                       (*buffer)->getBuffer().end(), nullptr,
                       /*allow_exceptions=*/false);
  // Read before the version check, so read defensively: any type may be
  // there in a manifest of another version, or in a damaged one.
  auto field = [&](const char *key) -> const json * {
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  };
  auto text = [&](const char *key) {
    const json *v = field(key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  if (j.is_discarded() || !j.is_object() || text("format") != "ds-artifact")
    return makeError(path + ": not a ds-compile manifest");
  ArtifactManifest m;
  const json *version = field("format_version");
  m.formatVersion =
      version && version->is_number_integer() && version->get<int64_t>() >= 0
          ? version->get<int64_t>()
          : -1;
  m.dsVersion = text("ds_version");
  if (m.formatVersion != ArtifactManifest::kFormatVersion ||
      m.dsVersion != dsVersion())
    return makeError(dir + " was compiled by ds " + m.dsVersion +
                     " (manifest format " + llvm::Twine(m.formatVersion) +
                     "); this is ds " + dsVersion() + " (format " +
                     llvm::Twine(ArtifactManifest::kFormatVersion) +
                     "): compile it again with this ds-compile");
  try {
    m.worldSize = jsonInteger<decltype(m.worldSize)>(j, "world_size");
    const json &cpu = j.at("cpu");
    m.cpuLevel = cpu.at("level");
    m.cpuName = cpu.at("name");
    m.cpuFeatures = cpu.at("features").get<std::vector<std::string>>();
    m.modelPath = j.at("model").at("path");
    m.modelHash = parseHex64(j.at("model").at("xxh3"));
    m.config = j.at("config");
    if (j.contains("comm_profile")) {
      m.commProfilePath = j.at("comm_profile").at("path");
      m.commProfileHash = parseHex64(j.at("comm_profile").at("xxh3"));
    }
    for (const json &p : j.at("programs")) {
      ArtifactProgram program;
      program.object = p.at("object");
      program.ranks = jsonIntegers(p, "ranks");
      program.signature = signatureOf(p);
      program.step = stepOf(p.at("step"));
      program.signature.workspaceBytes = program.step.workspaceBytes;
      if (llvm::Error err = setArgStacks(program.step, program.signature))
        throw std::runtime_error(llvm::toString(std::move(err)));
      if (p.contains("eval")) {
        const json &eval = p.at("eval");
        program.evalSignature = signatureOf(eval);
        program.evalSignature->workspaceBytes =
            jsonInteger<int64_t>(eval, "workspace_bytes");
        auto inputs =
            exec::callerLayout(program.evalSignature->inputs,
                               program.evalSignature->name, "argument");
        if (!inputs)
          throw std::runtime_error(llvm::toString(inputs.takeError()));
        if (inputs->arity != int64_t(program.step.evalArgs.size()))
          throw std::runtime_error(
              "@eval_step takes " + std::to_string(inputs->arity) +
              " input(s) but \"eval_args\" lists " +
              std::to_string(program.step.evalArgs.size()));
      } else if (!program.step.evalArgs.empty()) {
        throw std::runtime_error("\"eval_args\" without an \"eval\" entry");
      }
      m.programs.push_back(std::move(program));
    }
  } catch (const std::exception &e) {
    return makeError(path + ": damaged manifest (" + e.what() +
                     "); compile it again with ds-compile");
  }
  return m;
}

std::string ds::driver::firstDifference(const json &a, const json &b) {
  if (a == b)
    return "";
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key()))
        return it.key() + ": " + it.value().dump() + " vs (absent)";
      std::string sub = firstDifference(it.value(), b.at(it.key()));
      if (!sub.empty())
        return it.key() + (sub[0] == ':' ? "" : ".") + sub;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key()))
        return it.key() + ": (absent) vs " + it.value().dump();
  }
  return std::string(": ") + a.dump() + " vs " + b.dump();
}
