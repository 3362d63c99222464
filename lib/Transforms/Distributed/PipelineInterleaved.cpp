//===- PipelineInterleaved.cpp - Megatron's interleaved 1F1B streams ------===//
//
// Each stage runs its chunks' forwards and backwards in Megatron's order.
// The streams are made by running all stages together, one compute per
// stage per step: a stage whose next compute still waits for its input
// idles that step. The messages a step produces are then sent and received
// by every stage in one shared order (sender, then kind), so each
// blocking send meets its receive: no stage ever waits on a pair that
// comes later in the shared order.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Pipeline.h"

#include <cassert>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::pipeline;
using dist::PipeInstrKind;

namespace {
/// One forward or backward of a stage's chunk.
struct Compute {
  bool forward;
  int64_t chunk, microBatch;
};

/// Megatron's order of stage `stage`'s computes
/// (forward_backward_pipelining_with_interleaving).
std::vector<Compute> megatronOrder(int64_t m, int64_t p, int64_t v,
                                   int64_t stage) {
  int64_t total = m * v;
  // With as many micro-batches as stages every forward comes first.
  int64_t warmup =
      m == p ? total : std::min(total, (p - stage - 1) * 2 + (v - 1) * p);
  auto at = [&](int64_t k, bool forward) {
    int64_t inGroup = k % (p * v);
    int64_t chunk = inGroup / p;
    return Compute{forward, forward ? chunk : v - 1 - chunk,
                   k / (p * v) * p + k % p};
  };
  std::vector<Compute> order;
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(at(k, true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(at(warmup + k, true));
    order.push_back(at(k, false));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    order.push_back(at(k, false));
  return order;
}

/// A message between two stages' chunks, produced in the current step.
struct Message {
  int64_t from, fromChunk, to, toChunk, microBatch;
  bool activation;
};
} // namespace

std::vector<std::vector<Step>>
mlir::ds::pipeline::interleavedSchedule(int64_t m, int64_t p, int64_t v) {
  assert(m % p == 0 && "micro-batches must be a multiple of the stages");
  int64_t numChunks = p * v;
  std::vector<std::vector<Compute>> orders;
  for (int64_t s = 0; s < p; ++s)
    orders.push_back(megatronOrder(m, p, v, s));
  // Inputs that arrived: [stage][chunk * m + mb].
  std::vector<std::vector<bool>> haveAct(p, std::vector<bool>(v * m)),
      haveGrad(p, std::vector<bool>(v * m));
  std::vector<size_t> next(p, 0);
  std::vector<std::vector<Step>> streams(p);
  auto buffer = [&](int64_t chunk, int64_t mb) { return chunk * m + mb; };
  auto instr = [&](PipeInstrKind kind, int64_t chunk, int64_t mb) {
    return Instr{kind, mb, buffer(chunk, mb), chunk};
  };

  for (bool running = true; running;) {
    running = false;
    bool computed = false;
    std::vector<Step> steps(p);
    std::vector<Message> messages;
    for (int64_t s = 0; s < p; ++s) {
      if (next[s] == orders[s].size())
        continue;
      running = true;
      Compute c = orders[s][next[s]];
      int64_t model = c.chunk * p + s, key = c.chunk * m + c.microBatch;
      bool first = model == 0, last = model == numChunks - 1;
      if (c.forward ? !first && !haveAct[s][key] : !last && !haveGrad[s][key])
        continue; // its input comes in a later step
      ++next[s];
      computed = true;
      if (c.forward && (first || last))
        steps[s].push_back(
            instr(PipeInstrKind::load_micro_batch, c.chunk, c.microBatch));
      steps[s].push_back(
          instr(c.forward ? PipeInstrKind::forward : PipeInstrKind::backward,
                c.chunk, c.microBatch));
      if (c.forward && !last)
        messages.push_back({s, c.chunk, (s + 1) % p, c.chunk + (s == p - 1),
                            c.microBatch, true});
      if (!c.forward && !first)
        messages.push_back({s, c.chunk, (s + p - 1) % p, c.chunk - (s == 0),
                            c.microBatch, false});
    }
    // Stages are visited in order, so messages are sorted by sender.
    for (const Message &msg : messages) {
      steps[msg.from].push_back(instr(msg.activation
                                          ? PipeInstrKind::send_activation
                                          : PipeInstrKind::send_grad,
                                      msg.fromChunk, msg.microBatch));
      steps[msg.to].push_back(instr(msg.activation
                                        ? PipeInstrKind::recv_activation
                                        : PipeInstrKind::recv_grad,
                                    msg.toChunk, msg.microBatch));
      int64_t key = msg.toChunk * m + msg.microBatch;
      (msg.activation ? haveAct : haveGrad)[msg.to][key] = true;
    }
    if (!running)
      break;
    assert(computed && "Megatron's order always lets some stage compute");
    (void)computed;
    for (int64_t s = 0; s < p; ++s)
      streams[s].push_back(std::move(steps[s]));
  }
  for (std::vector<Step> &stream : streams)
    for (PipeInstrKind kind :
         {PipeInstrKind::reduce_tied_grads, PipeInstrKind::reduce_grads,
          PipeInstrKind::optimizer_step})
      stream.back().push_back({kind, std::nullopt, std::nullopt});
  return streams;
}
