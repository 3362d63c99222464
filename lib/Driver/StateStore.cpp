//===- StateStore.cpp - Parameters and optimizer state of a run -----------===//
#include "ds/Driver/StateStore.h"
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/ParamMap.h"
#include "ds/Driver/SafeTensors.h"
#include "dsrt/dsrt.h"

#include "llvm/Support/MathExtras.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

using namespace ::ds::driver;
using llvm::createStringError;

namespace {

/// The elements [first, first + count) of this rank's chunk of a tensor of
/// `numel` elements split in chunks of `chunk` (the rest is padding).
struct ChunkRange {
  int64_t first = 0, count = 0;
};
ChunkRange chunkRange(int64_t numel, int64_t chunk, int rank) {
  int64_t first = std::min<int64_t>(numel, rank * chunk);
  return {first, std::min<int64_t>(chunk, numel - first)};
}

/// The runs of the whole flattened tensor that tensor-parallel group rank
/// `r` holds of parameter `p`, in the order its piece stores them: for each
/// index of the dims before the cut, piece r of each block.
std::vector<ChunkRange> tensorParallelRuns(const ArgSpec &p, int64_t r) {
  llvm::ArrayRef<int64_t> whole = p.tpShape;
  int64_t outer = numElements(whole.take_front(p.tpDim));
  int64_t inner = numElements(whole.drop_front(p.tpDim + 1));
  int64_t block = whole[p.tpDim] / p.tpBlocks, piece = block / p.tpSize;
  std::vector<ChunkRange> runs;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < p.tpBlocks; ++b)
      runs.push_back({(o * whole[p.tpDim] + b * block + r * piece) * inner,
                      piece * inner});
  return runs;
}

/// Elements of the experts one expert-parallel rank holds of `param`.
int64_t expertSlice(const ArgSpec &param) {
  return numElements(param.wholeShape()) / param.expertShards;
}

/// Whether expert argument `arg` of parameter `param` is a ZeRO chunk of
/// this rank's experts rather than all of them: a moment's chunk, or at
/// stage 3 the parameter's own (held as [experts, chunk / experts]).
bool isExpertChunk(const ArgSpec &arg, const ArgSpec &param) {
  return arg.fullShape &&
         (!arg.expertShards || numElements(arg.shape) != expertSlice(param));
}

/// The expert parameter whose layout argument `arg` shares: `arg` itself
/// when expert parallelism cut it (dsdist.experts), its parameter for an
/// optimizer state of the same size (a moment, or its ZeRO chunk of one);
/// null for everything else.
const ArgSpec *expertParamOf(const StepManifest &manifest, const ArgSpec &arg) {
  if (arg.expertShards)
    return &arg;
  if (arg.kind != ArgSpec::State || arg.owner.empty())
    return nullptr;
  std::optional<size_t> owner = manifest.find(ArgSpec::Param, arg.owner);
  if (!owner || !manifest.args[*owner].expertShards)
    return nullptr;
  const ArgSpec &param = manifest.args[*owner];
  int64_t local = numElements(arg.fullShape ? *arg.fullShape : arg.shape);
  return local == expertSlice(param) ? &param : nullptr;
}

llvm::Expected<Tensor> gatherTensorParallel(const StepManifest &manifest,
                                            const ArgSpec &param, bool chunked,
                                            const Tensor &value);

/// The tensor-parallel parameter whose piece argument `arg` holds: `arg`
/// itself when ds-tensor-parallel cut it, its parameter for an optimizer
/// state of the piece's size (a moment or a master copy, or the ZeRO chunk
/// of one); null for everything else.
const ArgSpec *tensorParallelParamOf(const StepManifest &manifest,
                                     const ArgSpec &arg) {
  if (arg.tpSize)
    return &arg;
  if (arg.kind != ArgSpec::State || arg.owner.empty())
    return nullptr;
  std::optional<size_t> owner = manifest.find(ArgSpec::Param, arg.owner);
  if (!owner || !manifest.args[*owner].tpSize)
    return nullptr;
  const ArgSpec &param = manifest.args[*owner];
  return numElements(arg.wholeShape()) == numElements(param.wholeShape())
             ? &param
             : nullptr;
}

/// The names of the step's grid axes, outermost first (none without a
/// grid).
llvm::SmallVector<llvm::StringRef> gridAxisNames(const StepManifest &manifest) {
  llvm::SmallVector<llvm::StringRef> names;
  if (!manifest.gridAxes.empty())
    llvm::StringRef(manifest.gridAxes).split(names, ", ");
  return names;
}

/// The ranks of this rank's tensor- and sequence-parallel group: the
/// axes inside dp (consecutive ranks), whose ranks hold the same ZeRO
/// chunks.
int64_t innerGroupSize(const StepManifest &manifest) {
  int64_t inner = 1;
  for (auto [name, size] :
       llvm::zip(gridAxisNames(manifest), manifest.gridSizes))
    if (name == "tp" || name == "sp")
      inner *= size;
  return inner;
}

/// This rank's place in its data-parallel group, by which its ZeRO chunks
/// are placed.
int64_t dataParallelIndex(const StepManifest &manifest, int rank) {
  return rank / innerGroupSize(manifest);
}

/// Where argument `arg` of this rank sits in the checkpoint's tensor, which
/// is always the whole tensor of the one-rank model: its shape, the
/// elements this rank holds, and whether it writes them. Expert
/// parallelism gives rank r the experts of slice r % ep (a contiguous run
/// of the flattened tensor, the expert dim leading); ZeRO then splits that
/// slice over the ranks holding the same experts (expert-data-parallel
/// index r / ep). Those ranks hold the same slice unsplit, so only index 0
/// writes it. The ranks of a tp or sp group hold the same ZeRO chunk of a
/// dense tensor, which the first of them writes.
struct Placement {
  llvm::ArrayRef<int64_t> whole;
  ChunkRange held;
  bool expert = false;
  bool writes = true; ///< of a chunk; whole tensors: see checkpointTensors
};
Placement placementOf(const StepManifest &manifest, const ArgSpec &arg,
                      int rank) {
  Placement at;
  const ArgSpec *param = expertParamOf(manifest, arg);
  at.whole = param ? param->wholeShape() : arg.wholeShape();
  int64_t whole = numElements(at.whole);
  if (!param) {
    at.held = arg.fullShape ? chunkRange(whole, arg.shape[0],
                                         dataParallelIndex(manifest, rank))
                            : ChunkRange{0, whole};
    at.writes = rank % innerGroupSize(manifest) == 0;
    return at;
  }
  // Experts within dp: a tp group (inside) holds the same experts whole,
  // which its first rank writes.
  int64_t inner = innerGroupSize(manifest);
  int64_t ep = param->expertShards, slice = whole / ep;
  int64_t expertRank = rank / inner % ep, expertDpRank = rank / inner / ep;
  at.expert = true;
  at.held = {0, slice};
  at.writes = expertDpRank == 0 && rank % inner == 0;
  if (isExpertChunk(arg, *param)) {
    at.held = chunkRange(slice, numElements(arg.shape), expertDpRank);
    at.writes = rank % inner == 0;
  }
  at.held.first += expertRank * slice;
  return at;
}

/// Fills `into` (f32) with rank `rank`'s piece of tensor-parallel
/// parameter `param`, each run of the whole tensor from `read`: the whole
/// piece, or with `chunk` > 0 its chunk of the flattened piece by the rank's
/// dp index (ZeRO; the rest of the chunk is left as it is). The one source
/// of a piece's values: drawn, from --init-from, from a checkpoint.
llvm::Error
readPiece(const StepManifest &manifest, const ArgSpec &param, int rank,
          int64_t chunk, float *into,
          llvm::function_ref<llvm::Error(ChunkRange, float *)> read) {
  std::vector<float> piece(chunk ? numElements(param.wholeShape()) : 0);
  float *at = piece.empty() ? into : piece.data();
  for (ChunkRange run : tensorParallelRuns(param, rank % param.tpSize)) {
    if (llvm::Error err = read(run, at))
      return err;
    at += run.count;
  }
  if (chunk) {
    ChunkRange c = chunkRange(int64_t(piece.size()), chunk,
                              dataParallelIndex(manifest, rank));
    std::copy_n(piece.data() + c.first, c.count, into);
  }
  return llvm::Error::success();
}

/// Draws the one-rank model's values of `param`'s piece (see readPiece).
void drawPiece(const StepManifest &manifest, const ArgSpec &param,
               uint64_t seed, int rank, int64_t chunk, float *into) {
  llvm::cantFail(readPiece(manifest, param, rank, chunk, into,
                           [&](ChunkRange run, float *at) {
                             initParameter(param.name, param.init,
                                           param.initStd, seed, run.first,
                                           run.count, at);
                             return llvm::Error::success();
                           }));
}

/// The chunk length of a ZeRO-chunked argument, 0 for a whole one.
int64_t chunkOf(const ArgSpec &arg) {
  return arg.fullShape ? arg.shape[0] : 0;
}

/// Rounds f32 values to the nearest even 16-bit float of `dtype`, as the
/// step's own casts (arith.truncf) do; f32 is copied.
void storeAs(DType dtype, const float *src, int64_t n, void *dst) {
  if (dtype != DType::BF16 && dtype != DType::F16) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  auto *out = static_cast<uint16_t *>(dst);
  for (int64_t i = 0; i < n; ++i)
    out[i] = dtype == DType::BF16 ? floatToBF16(src[i]) : floatToF16(src[i]);
}

const char *ckptDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I1:
    return "BOOL";
  case DType::I8:
    return "I8";
  case DType::I16:
    return "I16";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

/// `value` of argument `arg` in f32: itself, or a 16-bit parameter's
/// values widened (exactly).
Tensor widened(const ArgSpec &arg, const Tensor &value) {
  if (arg.dtype != DType::BF16 && arg.dtype != DType::F16)
    return value;
  Tensor wide = Tensor::zeros(DType::F32, arg.shape);
  const auto *bits = static_cast<const uint16_t *>(value.data());
  for (int64_t k = 0, n = numElements(arg.shape); k < n; ++k)
    wide.data<float>()[k] =
        arg.dtype == DType::BF16 ? bf16ToFloat(bits[k]) : f16ToFloat(bits[k]);
  return wide;
}

/// The [cols, rows] transpose of a row-major [rows, cols] matrix.
std::vector<float> transposed(const std::vector<float> &m, int64_t rows,
                              int64_t cols) {
  std::vector<float> out(m.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[c * rows + r] = m[r * cols + c];
  return out;
}

int64_t localBytes(const ArgSpec &arg) {
  return numElements(arg.shape) * mlir::ds::exec::dtypeBytes(arg.dtype);
}

std::string describe(llvm::StringRef dtype, llvm::ArrayRef<int64_t> dims) {
  std::string out = dtype.str() + " [";
  for (size_t d = 0; d < dims.size(); ++d)
    out += (d ? ", " : "") + std::to_string(dims[d]);
  return out + "]";
}

/// Mixed precision keeps a parameter in f32, or (ZeRO-1/2) in 16 bits next
/// to an f32 master copy: either layout continues the other. The f32
/// values are the truth; a 16-bit parameter is their rounding. The f32
/// tensor of `ckpt` that argument `arg` is rebuilt from, if that applies.
const CkptTensorInfo *f32Source(const CheckpointReader &ckpt,
                                const ArgSpec &arg, const CkptTensorInfo *t,
                                llvm::ArrayRef<int64_t> wanted) {
  const CkptTensorInfo *f32 = nullptr;
  if (arg.kind == ArgSpec::Param && t && t->dtype != ckptDType(arg.dtype)) {
    f32 = ckpt.find(arg.name + ".master");
    if (!f32 && t->dtype == "F32")
      f32 = t;
  }
  if (arg.kind == ArgSpec::State && arg.stateKind == "master" && !t)
    f32 = ckpt.find(arg.owner);
  if (f32 && f32->dtype == "F32" &&
      f32->shape == std::vector<int64_t>(wanted.begin(), wanted.end()))
    return f32;
  return nullptr;
}

/// This rank's bytes of argument `arg` from `ckpt`.
llvm::Expected<std::vector<char>> readArgument(const CheckpointReader &ckpt,
                                               const StepManifest &manifest,
                                               const ArgSpec &arg, int rank) {
  std::string where = ckpt.tagDir().str();
  const CkptTensorInfo *t = ckpt.find(arg.name);
  std::vector<char> bytes;
  if (const ArgSpec *param = tensorParallelParamOf(manifest, arg)) {
    // A master copy continues a run that kept the f32 parameter itself,
    // and a 16-bit parameter saved next to its master (ZeRO 1-2 without
    // TP) is read from the master.
    if (!t && arg.stateKind == "master")
      t = ckpt.find(arg.owner);
    if (t && t->dtype != "F32" && arg.kind == ArgSpec::Param)
      if (const CkptTensorInfo *master = ckpt.find(arg.name + ".master"))
        t = master;
    // This rank's piece (or its ZeRO chunk of it) from the whole tensor,
    // saved in f32 whatever the run's precision (checkpointTensors).
    std::vector<int64_t> whole(param->tpShape);
    if (!t || t->dtype != "F32" || t->shape != whole)
      return createStringError(
          "%s: tensor \"%s\" of this tensor-parallel run must be F32 %s in "
          "the checkpoint",
          where.c_str(), arg.name.c_str(), describe("F32", whole).c_str());
    std::vector<float> values(numElements(arg.shape), 0.0f);
    if (llvm::Error err = readPiece(manifest, *param, rank, chunkOf(arg),
                                    values.data(),
                                    [&](ChunkRange run, float *at) {
                                      return ckpt.read(*t, run.first,
                                                       run.count, at);
                                    }))
      return std::move(err);
    bytes.assign(localBytes(arg), 0);
    storeAs(arg.dtype, values.data(), int64_t(values.size()), bytes.data());
    return bytes;
  }
  Placement at = placementOf(manifest, arg, rank);
  ChunkRange r = at.held;
  if (const CkptTensorInfo *f32 = f32Source(ckpt, arg, t, at.whole)) {
    std::vector<float> wide(r.count);
    if (llvm::Error err = ckpt.read(*f32, r.first, r.count, wide.data()))
      return std::move(err);
    bytes.assign(localBytes(arg), 0);
    storeAs(arg.dtype, wide.data(), r.count, bytes.data());
    return bytes;
  }
  if (!t)
    return createStringError(
        "%s: no tensor \"%s\", which this run's training step needs (the "
        "checkpoint was saved with another model, optimizer or precision); "
        "to start from its weights only, export them with `ds-ckpt export` "
        "and pass --init-from",
        where.c_str(), arg.name.c_str());
  llvm::ArrayRef<int64_t> shape = at.whole;
  if (t->shape != std::vector<int64_t>(shape.begin(), shape.end()) ||
      t->dtype != ckptDType(arg.dtype))
    return createStringError(
        "%s: tensor \"%s\" is %s in the checkpoint but %s in this run",
        where.c_str(), arg.name.c_str(), describe(t->dtype, t->shape).c_str(),
        describe(ckptDType(arg.dtype), shape).c_str());
  bytes.assign(localBytes(arg), 0);
  if (llvm::Error err = ckpt.read(*t, r.first, r.count, bytes.data()))
    return std::move(err);
  return bytes;
}

} // namespace

llvm::Expected<std::vector<std::vector<char>>>
ds::driver::readCheckpointState(const CheckpointReader &ckpt,
                                const StepManifest &manifest, int rank) {
  std::vector<std::vector<char>> values(manifest.args.size());
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    if (!manifest.args[i].isModelState())
      continue;
    auto bytes = readArgument(ckpt, manifest, manifest.args[i], rank);
    if (!bytes)
      return bytes.takeError();
    values[i] = std::move(*bytes);
  }
  return values;
}

StateStore::StateStore(const StepManifest &manifest, int rank,
                       const StateSwap *swap)
    : manifest(manifest), rank(rank), swap(swap),
      currentValues(manifest.args.size()) {
  // A stacked group's values back to back in layer order, in one buffer:
  // the step takes them as one tensor without a copy (PackedCall.h).
  // setArgStacks checked that they share a type.
  for (const std::vector<size_t> &group : manifest.argStacks) {
    if (group.empty() || !llvm::all_of(group, [&](size_t i) {
          return manifest.args[i].isModelState();
        }))
      continue;
    const ArgSpec &first = manifest.args[group.front()];
    std::vector<int64_t> shape = {int64_t(group.size())};
    shape.insert(shape.end(), first.shape.begin(), first.shape.end());
    int64_t bytes = localBytes(first);
    stackBuffers.push_back(Tensor::zeros(first.dtype, shape));
    auto *base = static_cast<char *>(stackBuffers.back().data());
    for (auto [k, i] : llvm::enumerate(group))
      currentValues[i] =
          Tensor::borrow(first.dtype, first.shape, base + int64_t(k) * bytes);
  }
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &arg = manifest.args[i];
    if (!arg.isModelState() || !currentValues[i].isNull())
      continue;
    // The swap's files start at zero, as these buffers do.
    currentValues[i] = swapped(i)
                           ? Tensor::borrow(arg.dtype, arg.shape, swap->key(i))
                           : Tensor::zeros(arg.dtype, arg.shape);
  }
}

llvm::Error StateStore::initialize(uint64_t seed, llvm::StringRef initFrom,
                                   const ParamMap &map,
                                   llvm::StringRef shownAs) {
  if (llvm::Error err = drawInitialValues(seed, initFrom.empty()))
    return err;
  if (!initFrom.empty())
    return loadInitialWeights(initFrom, map,
                              shownAs.empty() ? initFrom : shownAs);
  return llvm::Error::success();
}

llvm::Error StateStore::drawInitialValues(uint64_t seed, bool parameters) {
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &p = manifest.args[i];
    Tensor &value = currentValues[i];
    if (p.kind == ArgSpec::Param && parameters && p.tpSize) {
      // A ZeRO-3 chunk of the piece or the whole piece, rounded to 16 bits
      // when the parameter is (bf16 at ZeRO 1-2).
      std::vector<float> drawn(p.dtype == DType::F32 ? 0
                                                     : numElements(p.shape));
      float *into = drawn.empty() ? value.data<float>() : drawn.data();
      drawPiece(manifest, p, seed, rank, chunkOf(p), into);
      if (!drawn.empty())
        storeAs(p.dtype, drawn.data(), int64_t(drawn.size()), value.data());
    } else if (p.kind == ArgSpec::Param && parameters) {
      // The same values as one rank would draw; a shard draws its slice.
      ChunkRange r = placementOf(manifest, p, rank).held;
      std::vector<float> drawn(p.dtype == DType::F32 ? 0 : r.count);
      float *into = drawn.empty() ? value.data<float>() : drawn.data();
      initParameter(p.name, p.init, p.initStd, seed, r.first, r.count, into);
      if (!drawn.empty())
        storeAs(p.dtype, drawn.data(), r.count, value.data());
    }
    if (p.kind == ArgSpec::State && p.stateKind == "master" && parameters) {
      // The f32 values the 16-bit parameter was rounded from.
      std::optional<size_t> owner = manifest.find(ArgSpec::Param, p.owner);
      if (!owner || !p.fullShape)
        return createStringError("master state \"%s\" has no parameter "
                                 "\"%s\" or no sharding",
                                 p.name.c_str(), p.owner.c_str());
      const ArgSpec &o = manifest.args[*owner];
      if (o.tpSize) {
        // A dp chunk of the piece, as the parameter's moments are.
        drawPiece(manifest, o, seed, rank, p.shape[0], value.data<float>());
      } else {
        ChunkRange r = placementOf(manifest, p, rank).held;
        initParameter(o.name, o.init, o.initStd, seed, r.first, r.count,
                      value.data<float>());
      }
    }
    if (p.kind == ArgSpec::State && p.stateInit.kind != StateInit::Zeros) {
      int64_t n = numElements(p.shape);
      if (p.stateInit.kind == StateInit::Float && p.dtype == DType::F32)
        std::fill_n(value.data<float>(), n, float(p.stateInit.floatValue));
      else if (p.stateInit.kind == StateInit::Int && p.dtype == DType::I64)
        std::fill_n(value.data<int64_t>(), n, p.stateInit.intValue);
      else
        return createStringError("state \"%s\": its init value does not "
                                 "match its element type",
                                 p.name.c_str());
    }
  }
  return llvm::Error::success();
}

llvm::Error StateStore::loadInitialWeights(llvm::StringRef safetensors,
                                           const ParamMap &map,
                                           llvm::StringRef path) {
  auto file = SafeTensorsCheckpoint::open(safetensors);
  if (!file)
    return file.takeError();
  std::vector<std::string> params;
  for (const ArgSpec &p : manifest.args)
    if (p.kind == ArgSpec::Param)
      params.push_back(p.name);
  if (llvm::Error err = map.checkParams(params))
    return err;
  ParamMap names = map;
  names.stripWrapperPrefix(
      params, [&](llvm::StringRef name) { return file->find(name); });
  std::string via = map.isIdentity() ? "" : " (" + map.origin() + ")";
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &p = manifest.args[i];
    if (p.kind != ArgSpec::Param)
      continue;
    ParamSource source = names.sourceOf(
        p.name, [&](llvm::StringRef name) { return file->find(name); });
    const SafeTensorInfo *info = file->find(source.name);
    if (!info && source.name == p.name)
      return createStringError(
          "%s: no tensor for parameter \"%s\"%s; the file must hold every "
          "parameter of the model by its qualified name (or by that name "
          "less one leading path, as a wrapper module's export names "
          "them), or --param-map names where it is",
          path.str().c_str(), p.name.c_str(), via.c_str());
    if (!info)
      return createStringError("%s: no tensor \"%s\", which holds parameter "
                               "\"%s\"%s",
                               path.str().c_str(), source.name.c_str(),
                               p.name.c_str(), via.c_str());
    // The one-rank model's shape, of which a tensor-parallel run draws its
    // pieces.
    llvm::ArrayRef<int64_t> shape =
        p.tpSize ? llvm::ArrayRef<int64_t>(p.tpShape) : p.wholeShape();
    std::vector<int64_t> stored(shape.begin(), shape.end());
    if (source.transpose && stored.size() == 2)
      std::swap(stored[0], stored[1]);
    if (info->shape != stored || (source.transpose && shape.size() != 2))
      return createStringError(
          "%s: tensor \"%s\" has shape %s but the model's parameter \"%s\" "
          "is %s%s%s",
          path.str().c_str(), source.name.c_str(),
          mlir::ds::exec::typeString(DType::F32, info->shape).c_str(),
          p.name.c_str(), mlir::ds::exec::typeString(DType::F32, shape).c_str(),
          source.transpose ? ", stored transposed" : "", via.c_str());
    auto data = file->readF32(source.name);
    if (!data)
      return data.takeError();
    if (source.transpose)
      *data = transposed(*data, stored[0], stored[1]);
    // This rank's part of the whole tensor, and of a 16-bit parameter's f32
    // master copy: a chunk, a tensor-parallel piece, or a chunk of that.
    auto copyRun = [&](ChunkRange run, float *at) {
      std::copy_n(data->data() + run.first, run.count, at);
      return llvm::Error::success();
    };
    std::optional<size_t> m = manifest.masterOf(p);
    if (p.tpSize) {
      std::vector<float> part(numElements(p.shape));
      llvm::cantFail(readPiece(manifest, p, rank, chunkOf(p), part.data(),
                               copyRun));
      storeAs(p.dtype, part.data(), int64_t(part.size()),
              currentValues[i].data());
      if (m)
        llvm::cantFail(readPiece(manifest, p, rank,
                                 chunkOf(manifest.args[*m]),
                                 currentValues[*m].data<float>(), copyRun));
      continue;
    }
    ChunkRange r = placementOf(manifest, p, rank).held;
    storeAs(p.dtype, data->data() + r.first, r.count, currentValues[i].data());
    if (m) {
      ChunkRange c = placementOf(manifest, manifest.args[*m], rank).held;
      std::memcpy(currentValues[*m].data(), data->data() + c.first,
                  c.count * sizeof(float));
    }
  }
  return llvm::Error::success();
}

llvm::Error
StateStore::restore(const std::vector<std::vector<char>> &restored) {
  for (size_t i = 0; i < restored.size(); ++i) {
    if (restored[i].empty())
      continue;
    if (!swapped(i)) {
      std::memcpy(currentValues[i].data(), restored[i].data(),
                  restored[i].size());
    } else if (dsrt_swap_store(currentValues[i].data(), restored[i].data()) !=
               DSRT_OK) {
      return createStringError("%s", dsrt_last_error());
    }
  }
  return llvm::Error::success();
}

void StateStore::bind(std::vector<Tensor> &args,
                      std::vector<Tensor> &results) const {
  for (size_t i = 0; i < manifest.args.size(); ++i)
    if (manifest.args[i].isModelState())
      args[i] = currentValues[i];
  for (size_t k = 0; k < manifest.results.size(); ++k)
    if (manifest.results[k].updates >= 0)
      results[k] = currentValues[manifest.results[k].updates];
}

llvm::Expected<std::vector<CkptTensor>> StateStore::checkpointTensors() const {
  std::vector<CkptTensor> tensors;
  wholePieces.clear();
  // No reallocation: the tensors point into these buffers.
  wholePieces.reserve(manifest.args.size());
  // The ranks of this program (a pipeline stage's, without pp), which
  // `rank` counts.
  int64_t ranks = 1, wholeCount = 0;
  for (auto [name, size] :
       llvm::zip(gridAxisNames(manifest), manifest.gridSizes))
    if (name != "pp")
      ranks *= size;
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &p = manifest.args[i];
    if (!p.isModelState())
      continue;
    if (const ArgSpec *param = tensorParallelParamOf(manifest, p)) {
      // Whole on every rank once gathered (the ZeRO chunks over dp, then
      // the pieces over tp): written as a whole f32 tensor, which any
      // stage, precision and tensor-parallel size reads. One rank in turn
      // writes it and keeps it until then; the others drop it at once, so
      // a save holds about 1/ranks of these tensors per rank.
      Tensor held = currentValues[i];
      if (swapped(i)) {
        held = Tensor::zeros(p.dtype, p.shape);
        if (dsrt_swap_load(currentValues[i].data(), held.data()) != DSRT_OK)
          return createStringError("%s", dsrt_last_error());
      }
      auto whole = gatherTensorParallel(manifest, *param,
                                        p.fullShape.has_value(),
                                        widened(p, held));
      if (!whole)
        return whole.takeError();
      int64_t numel = numElements(param->tpShape);
      bool writes = wholeCount++ % ranks == rank;
      CkptTensor t;
      t.name = p.name;
      t.kind = p.kind == ArgSpec::Param ? "param" : "state";
      t.dtype = "F32";
      t.shape = param->tpShape;
      t.held = CkptTensor::Held{0, writes ? numel : 0, writes};
      if (writes) {
        wholePieces.push_back(std::move(*whole));
        t.data = wholePieces.back().data();
      }
      tensors.push_back(std::move(t));
      continue;
    }
    // Saved under the one-rank model's names and shapes, so that any
    // layout can load it; expert tensors say which part this rank holds.
    Placement at = placementOf(manifest, p, rank);
    CkptTensor t;
    t.name = p.name;
    t.kind = p.kind == ArgSpec::Param ? "param" : "state";
    t.dtype = ckptDType(p.dtype);
    t.shape.assign(at.whole.begin(), at.whole.end());
    // A ZeRO chunk sits at the rank's dp index, not its program rank,
    // once tp or sp groups share chunks.
    if (at.expert || p.fullShape)
      t.held = CkptTensor::Held{at.held.first, at.held.count, at.writes};
    t.data = currentValues[i].data();
    if (swapped(i)) {
      // Read from its file and kept until the next checkpoint, as a
      // gathered piece is: the save may write it after the next step.
      wholePieces.push_back(Tensor::zeros(p.dtype, p.shape));
      if (dsrt_swap_load(t.data, wholePieces.back().data()) != DSRT_OK)
        return createStringError("%s", dsrt_last_error());
      t.data = wholePieces.back().data();
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

namespace {
/// The grid-axis bits of the group ZeRO chunks a dense tensor over: dp (the
/// fastest axis but for tp or sp inside it), and ep with experts, which
/// sit within dp.
uint64_t dataParallelAxis(const StepManifest &manifest) {
  llvm::SmallVector<llvm::StringRef> names = gridAxisNames(manifest);
  const auto *dp = llvm::find(names, "dp");
  size_t axes = std::max<size_t>(manifest.gridSizes.size(), 1);
  uint64_t mask = uint64_t(1)
                  << (dp != names.end() ? dp - names.begin() : axes - 1);
  if (const auto *ep = llvm::find(names, "ep"); ep != names.end())
    mask |= uint64_t(1) << (ep - names.begin());
  return mask;
}

/// Fills the f32 tensor `into` by an all-gather over the grid axes of `mask`.
llvm::Error gatherOver(uint64_t mask, const void *from, Tensor &into) {
  if (dsrt_all_gather(dsrt_comm_axes(mask), from, into.data(),
                      numElements(into.shape()), DSRT_F32) != 0)
    return createStringError("%s", dsrt_last_error());
  return llvm::Error::success();
}

/// The whole f32 tensor of a sharded argument (a ZeRO-3 parameter chunk, an
/// expert parameter, a 16-bit parameter's master chunk), gathered from the
/// ranks holding its parts. Without experts, over the data-parallel axis
/// (dataParallelAxis). With experts the grid is
/// dp x ep: an expert parameter is cut over ep, its master further over dp
/// (the ranks holding the same experts), a dense master over both.
llvm::Expected<Tensor> gatherWhole(const StepManifest &manifest,
                                   const ArgSpec &arg, const Tensor &value) {
  size_t axes = std::max<size_t>(manifest.gridSizes.size(), 1);
  // The ep axis: the fastest but for a tp group inside it.
  llvm::SmallVector<llvm::StringRef> names = gridAxisNames(manifest);
  const auto *epAxis = llvm::find(names, "ep");
  uint64_t fastest =
      uint64_t(1) << (epAxis != names.end() ? epAxis - names.begin() : axes - 1);
  bool experts = llvm::any_of(
      manifest.args, [](const ArgSpec &a) { return a.expertShards != 0; });
  const ArgSpec *param = expertParamOf(manifest, arg);
  Tensor whole =
      Tensor::zeros(DType::F32, param ? param->wholeShape() : arg.wholeShape());
  if (!experts) {
    if (llvm::Error err =
            gatherOver(dataParallelAxis(manifest), value.data(), whole))
      return std::move(err);
  } else if (arg.expertShards && !isExpertChunk(arg, *param)) {
    if (llvm::Error err = gatherOver(fastest, value.data(), whole))
      return std::move(err);
  } else if (!param) {
    if (llvm::Error err =
            gatherOver(dataParallelAxis(manifest), value.data(), whole))
      return std::move(err);
  } else {
    // The chunks over dp (the ranks holding the same experts), then the
    // slices over ep, each read from the front of the gathered chunks (a
    // ZeRO-3 expert chunk may be padded past the slice).
    // By name: a pipeline's pp axis comes before dp.
    size_t dp = llvm::find(names, "dp") - names.begin();
    Tensor parts = Tensor::zeros(
        DType::F32, {manifest.gridSizes[dp] * numElements(arg.shape)});
    if (llvm::Error err = gatherOver(uint64_t(1) << dp, value.data(), parts))
      return std::move(err);
    if (llvm::Error err = gatherOver(fastest, parts.data(), whole))
      return std::move(err);
  }
  return whole;
}

/// The whole f32 tensor of tensor-parallel parameter `param` from `value`,
/// this rank's piece of it: the group's pieces gathered over tp (the grid's
/// fastest axis), each put back in its runs. A `chunked` value (a ZeRO
/// chunk of the piece: the parameter at ZeRO-3, a bf16 parameter's master)
/// is first gathered into the piece over dp.
llvm::Expected<Tensor> gatherTensorParallel(const StepManifest &manifest,
                                            const ArgSpec &param, bool chunked,
                                            const Tensor &value) {
  size_t axes = std::max<size_t>(manifest.gridSizes.size(), 1);
  const void *held = value.data();
  Tensor piece;
  if (chunked) {
    piece = Tensor::zeros(DType::F32, param.wholeShape());
    if (llvm::Error err =
            gatherOver(dataParallelAxis(manifest), value.data(), piece))
      return std::move(err);
    held = piece.data();
  }
  int64_t local = numElements(param.wholeShape());
  Tensor pieces = Tensor::zeros(DType::F32, {param.tpSize * local});
  if (llvm::Error err = gatherOver(uint64_t(1) << (axes - 1), held, pieces))
    return std::move(err);
  Tensor whole = Tensor::zeros(DType::F32, param.tpShape);
  const float *from = pieces.data<float>();
  for (int64_t r = 0; r < param.tpSize; ++r)
    for (ChunkRange run : tensorParallelRuns(param, r)) {
      std::copy_n(from, run.count, whole.data<float>() + run.first);
      from += run.count;
    }
  return whole;
}

/// The parameters of a later pipeline stage, sent from its first rank to
/// rank 0: the header (names and shapes, as JSON) and the f32 data, each
/// after its length.
constexpr int kWeightsTag = 7301;

llvm::Error sendWeights(llvm::ArrayRef<SafeTensorView> views) {
  nlohmann::json header = nlohmann::json::array();
  for (const SafeTensorView &v : views)
    header.push_back({v.name, v.shape});
  std::string text = header.dump();
  int64_t length = int64_t(text.size());
  std::vector<int64_t> words((text.size() + 7) / 8, 0);
  std::memcpy(words.data(), text.data(), text.size());
  dsrt_comm *world = dsrt_comm_world();
  if (dsrt_send(world, &length, 1, DSRT_I64, 0, kWeightsTag) ||
      dsrt_send(world, words.data(), int64_t(words.size()), DSRT_I64, 0,
                kWeightsTag))
    return createStringError("sending this stage's weights to rank 0: %s",
                             dsrt_last_error());
  for (const SafeTensorView &v : views)
    if (dsrt_send(world, v.data, numElements(v.shape), DSRT_F32, 0,
                  kWeightsTag))
      return createStringError("sending \"%s\" to rank 0: %s", v.name.c_str(),
                               dsrt_last_error());
  return llvm::Error::success();
}

/// Receives what sendWeights sent from `peer`, appending the parameters
/// `views` does not hold yet (a tied weight comes from its first stage).
llvm::Error receiveWeights(int peer, std::vector<SafeTensorView> &views,
                           std::vector<Tensor> &held) {
  dsrt_comm *world = dsrt_comm_world();
  int64_t length = 0;
  if (dsrt_recv(world, &length, 1, DSRT_I64, peer, kWeightsTag))
    return createStringError("receiving the weights of rank %d: %s", peer,
                             dsrt_last_error());
  std::vector<int64_t> words((length + 7) / 8);
  if (dsrt_recv(world, words.data(), int64_t(words.size()), DSRT_I64, peer,
                kWeightsTag))
    return createStringError("receiving the weights of rank %d: %s", peer,
                             dsrt_last_error());
  nlohmann::json header = nlohmann::json::parse(
      llvm::StringRef(reinterpret_cast<const char *>(words.data()), length));
  for (const nlohmann::json &entry : header) {
    std::string name = entry[0].get<std::string>();
    auto shape = entry[1].get<std::vector<int64_t>>();
    Tensor data = Tensor::zeros(DType::F32, shape);
    if (dsrt_recv(world, data.data(), numElements(shape), DSRT_F32, peer,
                  kWeightsTag))
      return createStringError("receiving \"%s\" from rank %d: %s",
                               name.c_str(), peer, dsrt_last_error());
    if (llvm::any_of(views,
                     [&](const SafeTensorView &v) { return v.name == name; }))
      continue;
    held.push_back(std::move(data));
    views.push_back({name, "F32", shape, held.back().data()});
  }
  return llvm::Error::success();
}
} // namespace

llvm::Error StateStore::saveWeights(llvm::StringRef path,
                                    const CkptPlace &place) const {
  // Sharded parameters are gathered over the stage's data-parallel group
  // (every rank takes part; dataParallelAxis), tensor-parallel pieces then
  // over tp, and expert
  // parameters over their expert-parallel group (ep, then the fastest).
  std::vector<Tensor> gathered;
  std::vector<SafeTensorView> views;
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &p = manifest.args[i];
    if (p.kind != ArgSpec::Param)
      continue;
    // A 16-bit parameter is saved from its f32 master copy (of a
    // tensor-parallel piece: a dp chunk of it).
    size_t from = manifest.masterOf(p).value_or(i);
    const ArgSpec &src = manifest.args[from];
    const void *data = currentValues[from].data();
    llvm::ArrayRef<int64_t> shape = src.shape;
    if (p.tpSize || src.fullShape) {
      llvm::Expected<Tensor> whole =
          p.tpSize
              ? gatherTensorParallel(manifest, p, src.fullShape.has_value(),
                                     currentValues[from])
              : gatherWhole(manifest, src, currentValues[from]);
      if (!whole)
        return createStringError("gathering \"%s\" to save it: %s",
                                 p.name.c_str(),
                                 llvm::toString(whole.takeError()).c_str());
      shape = p.tpSize ? llvm::ArrayRef<int64_t>(p.tpShape) : p.wholeShape();
      gathered.push_back(std::move(*whole));
      data = gathered.back().data();
    }
    views.push_back({p.name, "F32",
                     std::vector<int64_t>(shape.begin(), shape.end()), data});
  }
  // A pipeline stage holds only its layers: the first rank of every later
  // stage sends them to rank 0, which writes the whole model once.
  if (place.programRank != 0)
    return llvm::Error::success();
  if (place.rank != 0)
    return sendWeights(views);
  std::vector<Tensor> received;
  for (int peer = place.programSize; peer < place.worldSize;
       peer += place.programSize)
    if (llvm::Error err = receiveWeights(peer, views, received))
      return err;
  return writeSafeTensors(path, views,
                          {{"format", "pt"}, {"producer", "ds-train"}});
}

int64_t StateStore::parameterCount() const {
  int64_t count = 0;
  for (const ArgSpec &p : manifest.args)
    if (p.kind == ArgSpec::Param)
      count += numElements(p.wholeShape());
  return count;
}

int64_t StateStore::residentBytes(int64_t dpSize, int64_t zeroStage) const {
  // Parameters and optimizer state as the step holds them (whole or
  // chunks), and the gradient as the step boundary leaves it: whole after
  // an all-reduce (ZeRO 0/1), this rank's chunk after a reduce-scatter
  // (ZeRO 2/3).
  int64_t bytes = 0;
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    const ArgSpec &p = manifest.args[i];
    if (!p.isModelState())
      continue;
    if (!swapped(i))
      bytes += localBytes(p);
    if (p.kind != ArgSpec::Param)
      continue;
    // An expert parameter's gradient is this rank's experts', reduced over
    // the ranks holding the same experts.
    int64_t whole =
        p.expertShards ? expertSlice(p) : numElements(p.wholeShape());
    int64_t group = p.expertShards ? dpSize / p.expertShards : dpSize;
    int64_t chunk = llvm::divideCeil(whole, group);
    bytes += 4 * (zeroStage >= 2 && group > 1 ? chunk : whole);
  }
  return bytes;
}
