//===- ds-import.cpp - Model spec / TorchScript -> model contract ---------===//
//
//   ds-import --spec gpt.json [--config ds_config.json] [-o out.mlir]
//   ds-import model.pt [--inputs 4x64xi64,4x64xi64] [-o out.mlir]
//   ds-import model.pt2 [-o out.mlir]
//
// Prints the model contract (docs/models.md). Every problem with the input is
// one "error:" line on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//
#include "ds/Config/Config.h"
#include "ds/Import/Import.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace cl = llvm::cl;
using namespace mlir;
using namespace mlir::ds;

static cl::OptionCategory category("ds-import options");
static cl::opt<std::string>
    inputPath(cl::cat(category), cl::Positional,
              cl::desc("<model.json | model.pt | model.pt2>"), cl::init(""));
static cl::opt<std::string>
    specPath(cl::cat(category), "spec",
             cl::desc("model spec JSON to import ('-' for stdin)"),
             cl::value_desc("file"));
static cl::opt<std::string> outputPath(cl::cat(category), "o",
                                       cl::desc("output file"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string>
    configPath(cl::cat(category), "config",
               cl::desc("ds_config.json: micro-batch size "
                        "(train_micro_batch_size_per_gpu) and MoE settings"),
               cl::value_desc("file"));
static cl::opt<int64_t>
    worldSize(cl::cat(category), "world-size",
              cl::desc("number of ranks the config is resolved for"),
              cl::init(1));
static cl::opt<int64_t>
    microBatch(cl::cat(category), "micro-batch",
               cl::desc("micro-batch size B (default: the config's "
                        "train_micro_batch_size_per_gpu, else 4)"),
               cl::init(0));
static cl::opt<int64_t>
    seqLen(cl::cat(category), "seq-len",
           cl::desc("sequence length T of a .json spec (default n_positions / "
                    "max_position_embeddings) or of a .pt2 exported with a "
                    "dynamic sequence dim (default: the export's)"),
           cl::init(0));
static cl::list<std::string>
    inputTypes(cl::cat(category), "inputs",
               cl::desc("TorchScript batch argument types, e.g. "
                        "4x64xi64,4x64xi64 (default: recorded in the .pt)"),
               cl::CommaSeparated, cl::value_desc("types"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-debuginfo shows the Python source line of each imported op.
  registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ds-import: model spec, TorchScript or torch.export "
      "program -> the "
      "ds model contract\n");

  bool isSpec = !specPath.empty();
  std::string path = isSpec ? specPath.getValue() : inputPath.getValue();
  if (isSpec && !inputPath.empty())
    return fail("give either --spec FILE or a positional model file, not "
                "both");
  if (path.empty())
    return fail("no model given; use --spec FILE.json or MODEL.pt");
  llvm::StringRef ext = llvm::StringRef(path).rsplit('.').second;
  if (!isSpec) {
    if (ext == "json")
      isSpec = true;
    else if (ext != "pt" && ext != "pth" && ext != "pt2")
      return fail("cannot tell the format of \"" + path +
                  "\" from its extension; use --spec FILE for a JSON spec, "
                  "a .pt/.pth TorchScript file or a .pt2 torch.export "
                  "archive");
  }

  importer::ImportOptions options;
  if (microBatch.getNumOccurrences()) {
    if (microBatch < 1)
      return fail("--micro-batch must be >= 1, got " +
                  llvm::Twine(microBatch.getValue()));
    options.microBatch = microBatch;
  }
  if (seqLen.getNumOccurrences()) {
    if (seqLen < 1)
      return fail("--seq-len must be >= 1, got " +
                  llvm::Twine(seqLen.getValue()));
    options.seqLen = seqLen;
  }
  options.inputTypes.assign(inputTypes.begin(), inputTypes.end());
  std::optional<::ds::config::Config> config;
  if (!configPath.empty()) {
    ::ds::config::ResolveOptions resolve;
    resolve.worldSize = worldSize;
    auto loaded = ::ds::config::loadConfig(configPath, resolve);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    config = std::move(*loaded);
    options.config = &*config;
  }
  if (!isSpec && !options.microBatch && config)
    options.microBatch = config->trainMicroBatchSizePerGpu;

  DialectRegistry registry;
  importer::registerImportDialects(registry);
  MLIRContext context(registry);
  auto module =
      isSpec ? importer::importSpecFile(context, path, options)
      : ext == "pt2"
          ? importer::importExportedProgramFile(context, path, options)
          : importer::importTorchScriptFile(context, path, options);
  if (!module)
    return fail(llvm::toString(module.takeError()));

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(error);
  (*module)->print(output->os(), OpPrintingFlags());
  output->os() << "\n";
  output->keep();
  return 0;
}
