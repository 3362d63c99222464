//===- ds-run.cpp - JIT one function of an MLIR file on .npy inputs -------===//
//
//   ds-run FILE.mlir --entry forward --inputs a.npy,b.npy --outputs out_%d.npy
//
// Lowers FILE (dsnn ops first through ds-lower-nn-to-linalg when present,
// or any --pre-pipeline) with ds-lower-to-llvm, JITs it and calls --entry.
// Inputs are NumPy .npy files (or --random-inputs SEED); results are
// written as .npy (%d = result index), printed (--print), or compared with
// expected .npy files (--expect, --rtol, --atol; exit 1 on mismatch).
// --repeat N --time prints one JSON line with the per-call time.
//
//===----------------------------------------------------------------------===//

#include "ds/Execution/JIT.h"
#include "ds/Execution/Npy.h"
#include "ds/InitAllDS.h"

#include "dsrt/dsrt.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace mlir;
using namespace mlir::ds::exec;
namespace cl = llvm::cl;

static cl::OptionCategory category("ds-run options");
static cl::opt<std::string> inputFile(cl::cat(category), cl::Positional,
                                      cl::desc("<input.mlir>"), cl::init("-"));
static cl::opt<std::string> entry(cl::cat(category), "entry",
                                  cl::desc("function to call"),
                                  cl::init("forward"));
static cl::list<std::string>
    inputs(cl::cat(category), "inputs",
           cl::desc("comma-separated .npy files, one per argument"),
           cl::CommaSeparated);
static cl::opt<int> randomSeed(
    cl::cat(category), "random-inputs",
    cl::desc("fill every argument with uniform [-1, 1) values (floats) or "
             "[0, 8) (integers) from this seed instead of --inputs"),
    cl::init(-1));
static cl::opt<std::string>
    outputs(cl::cat(category), "outputs",
            cl::desc("write result i to this path with %d replaced by i"));
static cl::list<std::string>
    expect(cl::cat(category), "expect",
           cl::desc("comma-separated .npy files the results must "
                    "match (--rtol, --atol)"),
           cl::CommaSeparated);
static cl::opt<double> rtol(cl::cat(category), "rtol",
                            cl::desc("relative tolerance"), cl::init(1e-5));
static cl::opt<double> absTol(cl::cat(category), "atol",
                              cl::desc("absolute tolerance"), cl::init(1e-6));
static cl::opt<bool> print(cl::cat(category), "print",
                           cl::desc("print every result as text"));
static cl::list<int64_t>
    grid(cl::cat(category), "grid", cl::CommaSeparated,
         cl::desc("start libdsrt communication (backend: DSRT_BACKEND, else "
                  "mpi under mpirun, else self) over a device grid of these "
                  "axis sizes, in the order of the module's dsdist.grid"));
static cl::opt<std::string>
    prePipeline(cl::cat(category), "pre-pipeline",
                cl::desc("passes to run before ds-lower-to-llvm; default: "
                         "ds-lower-nn-to-linalg if the input has dsnn ops"),
                cl::init("auto"));
static cl::opt<bool> noBlas(cl::cat(category), "no-blas",
                            cl::desc("matmuls as loops, not BLAS"));
static cl::opt<bool> noPlan(cl::cat(category), "no-plan-buffers",
                            cl::desc("allocate temporaries on every call"));
static cl::opt<bool> noReuse(cl::cat(category), "no-reuse-buffers",
                             cl::desc("plan buffers without sharing bytes"));
static cl::opt<bool> noFuse(cl::cat(category), "no-fuse",
                            cl::desc("no elementwise fusion"));
static cl::opt<bool> noOutlineKernels(
    cl::cat(category), "no-outline-kernels",
    cl::desc("every linalg op inline (no ds-outline-kernels)"));
static cl::opt<bool> report(cl::cat(category), "report",
                            cl::desc("remarks from the BLAS rewrite and the "
                                     "buffer planner; workspace sizes"));
static cl::opt<unsigned> optLevel(cl::cat(category), "O",
                                  cl::desc("LLVM opt level (0-3)"), cl::init(3),
                                  cl::Prefix);
static cl::opt<int> repeat(cl::cat(category), "repeat",
                           cl::desc("call the function N times"), cl::init(1));
static cl::opt<bool>
    timeIt(cl::cat(category), "time",
           cl::desc("print {\"entry\", \"calls\", \"ms_per_call\", "
                    "\"blas_core\"} as JSON"));
static cl::opt<int> threads(cl::cat(category), "blas-threads",
                            cl::desc("BLAS threads (0: library default)"),
                            cl::init(0));
static cl::opt<std::string>
    dumpLLVM(cl::cat(category), "dump-llvm",
             cl::desc("write the LLVM-dialect module here"));

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "ds-run: error: " << msg << "\n";
  return 1;
}

static void printTensor(llvm::raw_ostream &os, const Tensor &t) {
  os << t.typeString() << " = ";
  int64_t n = t.numElements();
  auto element = [&](int64_t i) {
    char buf[32];
    switch (t.dtype()) {
    case DType::F32:
      std::snprintf(buf, sizeof(buf), "%.6g", t.data<float>()[i]);
      break;
    case DType::F64:
      std::snprintf(buf, sizeof(buf), "%.10g", t.data<double>()[i]);
      break;
    case DType::I64:
      std::snprintf(buf, sizeof(buf), "%lld",
                    static_cast<long long>(t.data<int64_t>()[i]));
      break;
    case DType::I32:
      std::snprintf(buf, sizeof(buf), "%d", t.data<int32_t>()[i]);
      break;
    case DType::I1:
    case DType::I8:
      std::snprintf(buf, sizeof(buf), "%d", static_cast<int8_t *>(t.data())[i]);
      break;
    default:
      std::snprintf(buf, sizeof(buf), "?");
    }
    os << buf;
  };
  // Nested brackets, innermost dim on one line.
  std::function<void(int64_t, int64_t)> rec = [&](int64_t dim, int64_t base) {
    if (dim == t.rank()) {
      element(base);
      return;
    }
    int64_t stride = 1;
    for (int64_t d = dim + 1; d < t.rank(); ++d)
      stride *= t.shape()[d];
    os << "[";
    for (int64_t i = 0; i < t.shape()[dim]; ++i) {
      if (i)
        os << (dim + 1 == t.rank() ? ", " : ",\n ");
      rec(dim + 1, base + i * stride);
    }
    os << "]";
  };
  if (n == 0 && t.rank() > 0)
    os << "[]";
  else
    rec(0, 0);
  os << "\n";
}

static Tensor randomTensor(const ValueInfo &info, std::mt19937 &gen) {
  llvm::SmallVector<int64_t> shape(info.shape.begin(), info.shape.end());
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = 1;
  Tensor t = Tensor::zeros(info.dtype,
                           info.isTensor ? shape : llvm::ArrayRef<int64_t>{});
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 7);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    switch (t.dtype()) {
    case DType::F32:
      t.data<float>()[i] = static_cast<float>(real(gen));
      break;
    case DType::F64:
      t.data<double>()[i] = real(gen);
      break;
    case DType::I64:
      t.data<int64_t>()[i] = integer(gen);
      break;
    case DType::I32:
      t.data<int32_t>()[i] = integer(gen);
      break;
    default:
      break; // zeros
    }
  }
  return t;
}

// Max violation of |got - want| <= atol + rtol * |want|, as a message.
static std::optional<std::string> compare(const Tensor &got, const Tensor &want,
                                          bool anyDType) {
  if ((!anyDType && got.dtype() != want.dtype()) || got.shape() != want.shape())
    return "is " + got.typeString() + " but the expected file holds " +
           want.typeString();
  auto value = [](const Tensor &t, int64_t i) -> double {
    switch (t.dtype()) {
    case DType::F32:
      return t.data<float>()[i];
    case DType::F64:
      return t.data<double>()[i];
    case DType::I64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::I32:
      return t.data<int32_t>()[i];
    default:
      return static_cast<int8_t *>(t.data())[i];
    }
  };
  int64_t bad = 0, worst = -1;
  double worstExcess = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double g = value(got, i), w = value(want, i);
    double excess = std::fabs(g - w) - (absTol + rtol * std::fabs(w));
    if (excess > 0 || std::isnan(g) != std::isnan(w)) {
      ++bad;
      if (worst < 0 || excess > worstExcess) {
        worst = i;
        worstExcess = excess;
      }
    }
  }
  if (!bad)
    return std::nullopt;
  char buf[160];
  std::snprintf(
      buf, sizeof(buf),
      "%lld of %lld elements differ; worst at flat index %lld: "
      "got %.8g, expected %.8g",
      static_cast<long long>(bad), static_cast<long long>(got.numElements()),
      static_cast<long long>(worst), value(got, worst), value(want, worst));
  return std::string(buf);
}

// Expected values as text: whitespace-separated numbers ('#' starts a
// comment), row-major, as many as `like` has elements; read as f64.
static llvm::Expected<Tensor> readText(llvm::StringRef path,
                                       const Tensor &like) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": cannot read: " + buffer.getError().message());
  std::vector<double> values;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.split('#').first;
    llvm::SmallVector<llvm::StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef w : words) {
      w = w.trim(" \t\r,[]");
      if (w.empty())
        continue;
      double v;
      if (w.getAsDouble(v))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       path + ": '" + w + "' is not a number");
      values.push_back(v);
    }
  }
  if (static_cast<int64_t>(values.size()) != like.numElements())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + llvm::Twine(values.size()) +
                                       " values for " + like.typeString());
  return Tensor::fromVector<double>(like.shape(), values);
}

int main(int argc, char **argv) {
  // Before anything else: may re-execute with faster BLAS kernels.
  dsrt_blas_core_select(argv);
  llvm::InitLLVM init(argc, argv);
  mlir::ds::registerAllDSPasses();
  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ... for
                                    // --pre-pipeline
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "ds-run: JIT and call one function of an MLIR "
                              "file on .npy inputs\n");
  if (threads > 0)
    dsrt_threads_set(threads);
  if (!grid.empty()) {
    std::vector<int64_t> sizes(grid.begin(), grid.end());
    if (dsrt_comm_init(nullptr) != 0 ||
        dsrt_comm_set_grid(int(sizes.size()), sizes.data()) != 0) {
      llvm::errs() << "ds-run: error: --grid: " << dsrt_last_error() << "\n";
      return 1;
    }
    std::atexit([] { dsrt_comm_finalize(); });
  }

  RunnerOptions options;
  options.registerDialects = [](DialectRegistry &registry) {
    mlir::ds::registerAllDSDialects(registry);
  };
  options.fuseElementwise = !noFuse;
  options.planBuffers = !noPlan;
  options.reuseBuffers = !noReuse;
  options.blas = !noBlas;
  options.outlineKernels = !noOutlineKernels;
  options.report = report;
  options.optLevel = optLevel;
  options.entryPoints = {entry}; // compile only what --entry needs
  // Default: dsnn ops (if any) go through ds-lower-nn-to-linalg first; the
  // pass leaves a module without dsnn ops unchanged.
  std::string pre = prePipeline;
  if (pre == "auto")
    pre = PassInfo::lookup("ds-lower-nn-to-linalg") ? "ds-lower-nn-to-linalg"
                                                    : "";
  // A module pass manager given "builtin.module(...)" nests it and runs
  // nothing: strip the anchor.
  if (llvm::StringRef(pre).starts_with("builtin.module(") &&
      llvm::StringRef(pre).ends_with(")"))
    pre = pre.substr(15, pre.size() - 16);
  if (!pre.empty()) {
    OpPassManager probe("builtin.module");
    if (failed(parsePassPipeline(pre, probe, llvm::errs())))
      return fail("bad --pre-pipeline '" + pre + "'");
    options.preLowering = [pre](OpPassManager &pm) {
      (void)parsePassPipeline(pre, pm, llvm::errs());
    };
  }
  if (!dumpLLVM.empty())
    options.onStage = [](llvm::StringRef stage, ModuleOp module) {
      if (stage != "llvm")
        return;
      std::error_code ec;
      llvm::raw_fd_ostream os(dumpLLVM, ec);
      if (!ec)
        module.print(os);
    };

  auto runner = Runner::fromFile(inputFile, options);
  if (!runner)
    return fail(llvm::toString(runner.takeError()));
  const FunctionSignature *sig = (*runner)->signature(entry);
  if (!sig) {
    std::string names;
    for (const std::string &n : (*runner)->functionNames())
      names += (names.empty() ? "@" : ", @") + n;
    return fail("no public function @" + entry + " in " + inputFile +
                " (it has " + (names.empty() ? std::string("none") : names) +
                ")");
  }
  if (report)
    llvm::errs() << "ds-run: @" << entry << ": " << (*runner)->blasCallSites()
                 << " BLAS call site(s) in the "
                 << "module, workspace " << sig->workspaceBytes
                 << " bytes; compile " << (*runner)->compileTimes().mlirSeconds
                 << " s MLIR + " << (*runner)->compileTimes().llvmSeconds
                 << " s LLVM\n";

  std::vector<Tensor> args;
  if (randomSeed >= 0) {
    std::mt19937 gen(static_cast<unsigned>(randomSeed));
    for (const ValueInfo &info : sig->callerInputs())
      args.push_back(randomTensor(info, gen));
  } else {
    for (const std::string &path : inputs) {
      auto t = readNpy(path);
      if (!t)
        return fail(llvm::toString(t.takeError()));
      args.push_back(*t);
    }
  }

  std::vector<Tensor> results;
  for (const ValueInfo &r : sig->callerResults())
    results.push_back(Tensor::zeros(r.dtype, r.shape));
  // One warm-up call when timing, so page faults of fresh buffers and the
  // arena are not counted.
  if (timeIt)
    if (llvm::Error err = (*runner)->invokeInto(entry, args, results))
      return fail(llvm::toString(std::move(err)));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < std::max(1, static_cast<int>(repeat)); ++i)
    if (llvm::Error err = (*runner)->invokeInto(entry, args, results))
      return fail(llvm::toString(std::move(err)));
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  int calls = std::max(1, static_cast<int>(repeat));
  if (timeIt) {
    // The OpenBLAS kernels the timed calls ran, for benchmarks' baselines.
    dsrt_blas_info blas;
    dsrt_blas_info_get(&blas);
    llvm::outs() << "{\"entry\": \"" << entry << "\", \"calls\": " << calls
                 << ", \"ms_per_call\": " << ms / calls << ", \"blas_core\": \""
                 << blas.core << "\"}\n";
  }

  for (auto [i, t] : llvm::enumerate(results)) {
    if (print) {
      llvm::outs() << "result " << i << ": ";
      printTensor(llvm::outs(), t);
    }
    if (!outputs.empty()) {
      std::string path = outputs;
      if (size_t pos = path.find("%d"); pos != std::string::npos)
        path.replace(pos, 2, std::to_string(i));
      else if (results.size() > 1)
        return fail("--outputs needs %d for a function with several results");
      if (llvm::Error err = writeNpy(path, t))
        return fail(llvm::toString(std::move(err)));
    }
  }
  if (!expect.empty()) {
    if (expect.size() != results.size())
      return fail("--expect has " + llvm::Twine(expect.size()) +
                  " file(s) for " + llvm::Twine(results.size()) + " result(s)");
    int mismatches = 0;
    for (auto [i, path] : llvm::enumerate(expect)) {
      bool text = llvm::StringRef(path).ends_with(".txt");
      auto want = text ? readText(path, results[i]) : readNpy(path);
      if (!want)
        return fail(llvm::toString(want.takeError()));
      if (auto why = compare(results[i], *want, text)) {
        llvm::errs() << "ds-run: result " << i << " does not match " << path
                     << ": " << *why << "\n";
        ++mismatches;
      }
    }
    if (mismatches)
      return 1;
  }
  llvm::outs().flush();
  return 0;
}
