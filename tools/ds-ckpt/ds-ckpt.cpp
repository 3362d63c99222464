//===- ds-ckpt.cpp - Inspect, verify and export ds checkpoints ------------===//
//
//   ds-ckpt inspect DIR [--tag T]
//   ds-ckpt verify DIR [--tag T]
//   ds-ckpt export DIR [--tag T] --format safetensors -o OUT
//                      [--dtype native|fp32] [--with-state]
//
// Exit status: 0 on success, 1 when the checkpoint is corrupt or unusable
// (each problem on one line naming the file and the tensor), 2 on a usage
// error.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/Checkpoint.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace ds::driver;

static cl::OptionCategory category("ds-ckpt options");
static cl::SubCommand inspectCmd("inspect",
                                 "list the tags, the world layout and every "
                                 "tensor with its slices");
static cl::SubCommand verifyCmd("verify", "check every file's size and "
                                          "checksums; exit 1 naming each "
                                          "corrupt file and tensor");
static cl::SubCommand exportCmd("export",
                                "write the parameters as one safetensors "
                                "file, one tensor in memory at a time");

static cl::opt<std::string> dir(cl::cat(category), cl::Positional,
                                cl::desc("DIR"), cl::Required,
                                cl::sub(inspectCmd), cl::sub(verifyCmd),
                                cl::sub(exportCmd));
static cl::opt<std::string> tag(cl::cat(category), "tag",
                                cl::desc("the tag (default: DIR/latest)"),
                                cl::sub(inspectCmd), cl::sub(verifyCmd),
                                cl::sub(exportCmd));
static cl::opt<std::string> outFormat(cl::cat(category), "format",
                                      cl::init("safetensors"),
                                      cl::desc("output format (safetensors)"),
                                      cl::sub(exportCmd));
static cl::opt<std::string> output(cl::cat(category), "o",
                                   cl::desc("output file"), cl::sub(exportCmd));
static cl::opt<std::string>
    dtype(cl::cat(category), "dtype", cl::init("native"),
          cl::desc("native (the training dtype) or fp32"), cl::sub(exportCmd));
static cl::opt<bool> withState(cl::cat(category), "with-state",
                               cl::desc("also export the optimizer state"),
                               cl::sub(exportCmd));

static int fail(const Twine &message, int code = 1) {
  outs().flush();
  WithColor::error(errs(), "ds-ckpt") << message << "\n";
  return code;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static int inspect() {
  auto listing = listCheckpoints(dir);
  if (!listing)
    return fail(toString(listing.takeError()));
  outs() << "checkpoint directory " << dir << "\n";
  for (const auto &e : listing->tags)
    outs() << "  " << e.tag << (e.complete ? "" : "  (incomplete: no manifest)")
           << (e.tag == listing->latest ? "  <- latest" : "") << "\n";
  if (listing->latest.empty())
    outs() << "  no `latest`: no save completed\n";
  if (tag.empty() && listing->latest.empty())
    return listing->tags.empty() ? 1 : 0;
  auto ckpt = CheckpointReader::open(dir, tag);
  if (!ckpt)
    return fail(toString(ckpt.takeError()));
  const CkptRunInfo &run = ckpt->run();
  std::string stages =
      run.stages > 1 ? formatv("{0} pipeline stages, ", run.stages).str() : "";
  std::string experts =
      run.epSize > 1 ? formatv(", expert-parallel {0}", run.epSize).str() : "";
  outs() << formatv("tag {0}: step {1}, ds {2}; {3} rank(s), {4}data-parallel "
                    "{5}{6}, ZeRO stage {7}; seed {8}, data order {9}, global "
                    "batch {10}\n",
                    ckpt->tag(), run.step, ckpt->dsVersion, run.worldSize,
                    stages, run.dpSize, experts, run.zeroStage, run.seed,
                    run.dataOrder, run.globalBatch);
  outs() << "model " << run.modelPath << " (xxh3 " << run.modelHash << ")\n";
  uint64_t fileBytes = 0;
  outs() << "files:\n";
  for (const CkptFileInfo &f : ckpt->files()) {
    outs() << formatv(
        "  {0,-24} rank {1,-3} {2,12} bytes{3}\n", f.name, f.rank, f.size,
        run.stages > 1 ? formatv("  stage {0}", f.stage).str() : "");
    fileBytes += f.size;
  }
  uint64_t paramBytes = 0, stateBytes = 0;
  outs() << "tensors:\n";
  for (const CkptTensorInfo &t : ckpt->tensors()) {
    uint64_t b = uint64_t(t.numElements()) * t.elementBytes();
    (t.kind == "param" ? paramBytes : stateBytes) += b;
    std::string slices;
    for (const CkptSlice &s : t.slices)
      slices += formatv(" r{0}[{1},{2})", s.rank, s.first, s.first + s.count);
    // A tied weight's later stages: the same bytes, never read.
    for (const CkptSlice &s : t.copies)
      slices +=
          formatv(" copy r{0}[{1},{2})", s.rank, s.first, s.first + s.count);
    outs() << formatv("  {0,-32} {1,-5} {2,-4} {3,-12} {4,10} bytes {5}\n",
                      t.name, t.kind, t.dtype, shapeString(t.shape), b, slices);
  }
  outs() << formatv("total: {0} tensors, {1} bytes of parameters, {2} bytes "
                    "of optimizer state, {3} bytes in {4} files\n",
                    ckpt->tensors().size(), paramBytes, stateBytes, fileBytes,
                    ckpt->files().size());
  return 0;
}

static int verify() {
  auto ckpt = CheckpointReader::open(dir, tag);
  if (!ckpt)
    return fail(toString(ckpt.takeError()));
  if (Error err = ckpt->verify())
    return fail(toString(std::move(err)));
  size_t slices = 0;
  for (const CkptTensorInfo &t : ckpt->tensors())
    slices += t.slices.size();
  outs() << formatv("{0}: {1} files, {2} tensors, {3} slices: every "
                    "checksum matches\n",
                    ckpt->tagDir(), ckpt->files().size(),
                    ckpt->tensors().size(), slices);
  return 0;
}

static int exportCheckpoint() {
  if (outFormat != "safetensors")
    return fail("--format " + outFormat + ": only safetensors is supported", 2);
  if (output.empty())
    return fail("export needs -o OUT", 2);
  if (dtype != "native" && dtype != "fp32")
    return fail("--dtype must be native or fp32, got '" + dtype + "'", 2);
  auto ckpt = CheckpointReader::open(dir, tag);
  if (!ckpt)
    return fail(toString(ckpt.takeError()));
  auto peak = exportSafeTensors(*ckpt, output, dtype == "fp32", withState);
  if (!peak)
    return fail(toString(peak.takeError()));
  int64_t count = 0;
  for (const CkptTensorInfo &t : ckpt->tensors())
    count += t.kind == "param" || withState;
  outs() << formatv("{0}: {1} tensors of {2} written to {3}; largest buffer "
                    "held {4} bytes\n",
                    ckpt->tagDir(), count, ckpt->tag(), output, *peak);
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "ds-ckpt: inspect, verify and export ds "
                              "checkpoints\n");
  if (inspectCmd)
    return inspect();
  if (verifyCmd)
    return verify();
  if (exportCmd)
    return exportCheckpoint();
  return fail("give a command: inspect, verify or export (see --help)", 2);
}
