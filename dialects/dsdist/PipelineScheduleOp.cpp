//===- PipelineScheduleOp.cpp - pipeline_schedule verifier ----------------===//
//
// A schedule that passes this verifier runs without deadlock and without
// overwriting a live activation buffer: each stage's stream is checked on its
// own (data dependencies, buffer lifetimes, in-flight bound of 1F1B), then
// all streams are run together with blocking sends and receives.
//
//===----------------------------------------------------------------------===//
#include "dsdist/DistOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::ds::dist;

namespace {
/// What one stage has done with each micro-batch so far.
struct MicroBatchState {
  bool loaded = false, recvAct = false, forwarded = false, sentAct = false;
  bool recvGrad = false, backwarded = false, sentGrad = false;
};

class StageVerifier {
public:
  StageVerifier(PipelineScheduleOp op, int64_t stage, bool oneFOneB)
      : op(op), stage(stage), numStages(op.getNumStages()),
        numMicroBatches(op.getNumMicroBatches()), numChunks(op.getNumChunks()),
        oneFOneB(oneFOneB), mbs(numMicroBatches * numChunks) {}

  LogicalResult verify(ArrayAttr stream);

private:
  LogicalResult verifyInstr(PipeInstrAttr instr);
  LogicalResult verifyBuffer(int64_t mb, int64_t buf);
  /// "micro-batch 3" or, with several chunks, "micro-batch 3 of chunk 1".
  std::string name(int64_t key) const {
    std::string text = "micro-batch " + std::to_string(key % numMicroBatches);
    if (numChunks > 1)
      text += " of chunk " + std::to_string(key / numMicroBatches);
    return text;
  }
  InFlightDiagnostic fail() {
    std::string text;
    llvm::raw_string_ostream os(text);
    PipeInstrAttr instr =
        cast<PipeInstrAttr>(cast<ArrayAttr>(op.getStreams()[stage])[index]);
    instr.printBody(os);
    return op.emitOpError() << "stage " << stage << ", instruction " << index
                            << " (" << text << "): ";
  }

  PipelineScheduleOp op;
  int64_t stage, numStages, numMicroBatches, numChunks;
  bool oneFOneB;
  size_t index = 0;
  SmallVector<MicroBatchState> mbs;
  llvm::DenseMap<int64_t, int64_t> bufferOf, ownerOf;
  int64_t inFlight = 0;
  bool stepped = false;
};
} // namespace

LogicalResult StageVerifier::verify(ArrayAttr stream) {
  for (index = 0; index < stream.size(); ++index)
    if (failed(verifyInstr(cast<PipeInstrAttr>(stream[index]))))
      return failure();
  for (auto [key, state] : llvm::enumerate(mbs)) {
    if (!state.forwarded || !state.backwarded)
      return op.emitOpError()
             << "stage " << stage << " never "
             << (state.forwarded ? "backwards " : "forwards ") << name(key)
             << "; each is forwarded and backwarded once per stage"
             << (numChunks > 1 ? " and chunk" : "");
  }
  if (!stepped)
    return op.emitOpError()
           << "stage " << stage << ": the stream must end with optimizer_step";
  return success();
}

LogicalResult StageVerifier::verifyInstr(PipeInstrAttr instr) {
  if (stepped)
    return fail() << "comes after optimizer_step, which must be last";
  PipeInstrKind kind = instr.getKind();

  if (!PipeInstrAttr::isPerMicroBatch(kind)) {
    if (kind == PipeInstrKind::optimizer_step) {
      stepped = true;
      return success();
    }
    for (auto [key, state] : llvm::enumerate(mbs))
      if (!state.backwarded)
        return fail() << "reduces gradients before " << name(key)
                      << " is backwarded";
    return success();
  }

  int64_t mb = *instr.getMicroBatch(), chunk = instr.getChunkOr0();
  if (mb >= numMicroBatches)
    return fail() << "micro-batch " << mb
                  << " is out of range; micro_batches is " << numMicroBatches;
  if (chunk >= numChunks)
    return fail() << "chunk " << chunk << " is out of range; the stage holds "
                  << numChunks << " model chunk" << (numChunks > 1 ? "s" : "");
  // The model's first and last chunk have no neighbour before or after.
  int64_t modelChunk = chunk * numStages + stage;
  bool first = modelChunk == 0, last = modelChunk == numStages * numChunks - 1;
  int64_t key = chunk * numMicroBatches + mb;
  MicroBatchState &s = mbs[key];
  std::string what = name(key);
  auto twice = [&](bool done, StringRef doing) -> LogicalResult {
    if (done)
      return fail() << what << " " << doing << " twice";
    return success();
  };

  switch (kind) {
  case PipeInstrKind::load_micro_batch:
    if (failed(twice(s.loaded, "is loaded")))
      return failure();
    if (s.forwarded)
      return fail() << what << " is loaded after its forward";
    s.loaded = true;
    break;
  case PipeInstrKind::recv_activation:
    if (first)
      return fail() << "the first stage has no previous stage to receive "
                       "activations from";
    // A receive after the forward is caught as a second receive: the
    // forward of a non-first stage already required one.
    if (failed(twice(s.recvAct, "receives activations")))
      return failure();
    s.recvAct = true;
    break;
  case PipeInstrKind::forward:
    if (failed(twice(s.forwarded, "is forwarded")))
      return failure();
    if (!first && !s.recvAct)
      return fail() << what
                    << " is forwarded before recv_activation delivers its "
                       "input";
    s.forwarded = true;
    if (oneFOneB && ++inFlight > numStages - stage)
      return fail() << inFlight
                    << " micro-batches are in flight (forwarded, not yet "
                       "backwarded) but 1f1b stage "
                    << stage << " of " << numStages << " holds at most "
                    << numStages - stage;
    break;
  case PipeInstrKind::send_activation:
    if (last)
      return fail() << "the last stage has no next stage to send activations "
                       "to";
    if (failed(twice(s.sentAct, "sends activations")))
      return failure();
    if (!s.forwarded)
      return fail() << what << " sends activations before its forward";
    s.sentAct = true;
    break;
  case PipeInstrKind::recv_grad:
    if (last)
      return fail() << "the last stage has no next stage to receive gradients "
                       "from";
    if (failed(twice(s.recvGrad, "receives gradients")))
      return failure();
    if (!s.sentAct)
      return fail() << what
                    << " receives gradients before sending its activations";
    s.recvGrad = true;
    break;
  case PipeInstrKind::backward:
    if (failed(twice(s.backwarded, "is backwarded")))
      return failure();
    if (!s.forwarded)
      return fail() << what << " is backwarded before its forward";
    if (!last && !s.recvGrad)
      return fail() << what
                    << " is backwarded before recv_grad delivers its output "
                       "gradient";
    s.backwarded = true;
    if (oneFOneB)
      --inFlight;
    break;
  case PipeInstrKind::send_grad:
    if (first)
      return fail() << "the first stage has no previous stage to send "
                       "gradients to";
    if (failed(twice(s.sentGrad, "sends gradients")))
      return failure();
    if (!s.backwarded)
      return fail() << what << " sends gradients before its backward";
    s.sentGrad = true;
    break;
  default:
    llvm_unreachable("not a per-micro-batch instruction");
  }
  return verifyBuffer(key, *instr.getBuffer());
}

// A buffer belongs to one micro-batch (of one chunk) from its first use
// until that micro-batch is backwarded; only then may another take it.
LogicalResult StageVerifier::verifyBuffer(int64_t key, int64_t buf) {
  auto used = bufferOf.find(key);
  if (used != bufferOf.end() && used->second != buf)
    return fail() << name(key) << " used buffer " << used->second
                  << " before; a micro-batch keeps one buffer";
  auto owner = ownerOf.find(buf);
  if (owner != ownerOf.end() && owner->second != key &&
      !mbs[owner->second].backwarded)
    return fail() << "buffer " << buf << " still holds " << name(owner->second)
                  << ", which is not backwarded yet";
  bufferOf[key] = buf;
  ownerOf[buf] = key;
  return success();
}

namespace {
/// Where a p2p instruction of a stage's chunk goes: the peer stage (the
/// stages form a ring), the peer's chunk, and the instruction there that
/// completes it.
struct P2p {
  int64_t peer, peerChunk;
  bool send;
  PipeInstrKind match;
};

std::optional<P2p> p2pOf(PipeInstrAttr instr, int64_t stage,
                         int64_t numStages) {
  int64_t chunk = instr.getChunkOr0();
  int64_t next = (stage + 1) % numStages,
          prev = (stage + numStages - 1) % numStages;
  // Crossing from the last stage to the first moves to the next chunk.
  int64_t nextChunk = chunk + (stage == numStages - 1),
          prevChunk = chunk - (stage == 0);
  switch (instr.getKind()) {
  case PipeInstrKind::send_activation:
    return P2p{next, nextChunk, true, PipeInstrKind::recv_activation};
  case PipeInstrKind::recv_activation:
    return P2p{prev, prevChunk, false, PipeInstrKind::send_activation};
  case PipeInstrKind::send_grad:
    return P2p{prev, prevChunk, true, PipeInstrKind::recv_grad};
  case PipeInstrKind::recv_grad:
    return P2p{next, nextChunk, false, PipeInstrKind::send_grad};
  default:
    return std::nullopt;
  }
}

std::string describe(PipelineScheduleOp op, int64_t stage, size_t index) {
  auto stream = cast<ArrayAttr>(op.getStreams()[stage]);
  if (index >= stream.size())
    return llvm::formatv("stage {0} (its stream has ended)", stage);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "stage " << stage << ", instruction " << index << " (";
  cast<PipeInstrAttr>(stream[index]).printBody(os);
  return text + ")";
}
} // namespace

// Runs the streams with blocking (rendezvous) sends and receives, as
// MPI_Send of a large message behaves: a send completes only when its peer
// reaches a receive from this stage, and a receive takes the peer's next
// message whatever it is (one tag, as the lowering uses). Every stage
// finishing proves the schedule deadlock-free; a send and receive that pair
// but disagree (kind, micro-batch, chunk), or streams that cannot advance,
// get a diagnostic naming the instructions on both sides.
static LogicalResult verifyRendezvous(PipelineScheduleOp op) {
  int64_t numStages = op.getNumStages();
  auto streamOf = [&](int64_t s) {
    return cast<ArrayAttr>(op.getStreams()[s]);
  };
  SmallVector<size_t> pc(numStages, 0);
  // The p2p instruction stage s waits at, advancing past everything else.
  auto waiting = [&](int64_t s) -> PipeInstrAttr {
    ArrayAttr stream = streamOf(s);
    while (pc[s] < stream.size()) {
      auto instr = cast<PipeInstrAttr>(stream[pc[s]]);
      if (p2pOf(instr, s, numStages))
        return instr;
      ++pc[s];
    }
    return {};
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < numStages; ++s) {
      PipeInstrAttr mine = waiting(s);
      if (!mine)
        continue;
      P2p need = *p2pOf(mine, s, numStages);
      PipeInstrAttr theirs = waiting(need.peer);
      if (!theirs)
        continue;
      P2p back = *p2pOf(theirs, need.peer, numStages);
      if (back.peer != s || back.send == need.send)
        continue;
      if (theirs.getKind() != need.match ||
          theirs.getMicroBatch() != mine.getMicroBatch() ||
          theirs.getChunkOr0() != need.peerChunk)
        return op.emitOpError()
               << describe(op, s, pc[s]) << " pairs with "
               << describe(op, need.peer, pc[need.peer])
               << ": sends and receives between neighbours must name the "
                  "same kind, micro-batches and chunks in the same order";
      ++pc[s];
      ++pc[need.peer];
      progress = true;
    }
  }
  for (int64_t s = 0; s < numStages; ++s) {
    PipeInstrAttr mine = waiting(s);
    if (!mine)
      continue;
    P2p need = *p2pOf(mine, s, numStages);
    return op.emitOpError()
           << describe(op, s, pc[s]) << " waits for "
           << stringifyPipeInstrKind(need.match) << " on stage " << need.peer
           << ", which is blocked at " << describe(op, need.peer, pc[need.peer])
           << ": with blocking sends the streams deadlock; reorder them so "
              "each send meets its receive";
  }
  return success();
}

LogicalResult PipelineScheduleOp::verify() {
  StringRef kind = getKind();
  if (kind != "1f1b" && kind != "gpipe" && kind != "interleaved")
    return emitOpError() << "kind \"" << kind
                         << "\" is unknown; expected \"1f1b\", \"gpipe\" or "
                            "\"interleaved\"";
  if ((kind == "interleaved") != (getNumChunks() > 1))
    return emitOpError() << "virtual_stages " << getNumChunks()
                         << " with kind \"" << kind
                         << "\": only the interleaved schedule holds several "
                            "model chunks per stage, and it holds at least 2";
  int64_t numStages = getNumStages(), numMicroBatches = getNumMicroBatches();
  if (numStages < 1 || numMicroBatches < 1)
    return emitOpError() << "stages (" << numStages << ") and micro_batches ("
                         << numMicroBatches << ") must be >= 1";
  if (static_cast<int64_t>(getStreams().size()) != numStages)
    return emitOpError() << "has " << getStreams().size()
                         << " instruction streams but stages is " << numStages
                         << "; give one stream per stage";

  for (int64_t s = 0; s < numStages; ++s) {
    StageVerifier stage(*this, s, kind == "1f1b");
    if (failed(stage.verify(cast<ArrayAttr>(getStreams()[s]))))
      return failure();
  }
  return verifyRendezvous(*this);
}
