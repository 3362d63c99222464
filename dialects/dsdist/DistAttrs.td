//===- DistAttrs.td - dsdist attributes and enums ----------*- tablegen -*-===//
#ifndef DSDIST_ATTRS
#define DSDIST_ATTRS

include "dsdist/DistBase.td"

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of a group", [
  I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"avg", 1>,
  I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>
]> {
  let cppNamespace = "::mlir::ds::dist";
  let genSpecializedAttr = 0;
}
def Dist_ReductionKindAttr
    : EnumAttr<Dist_Dialect, Dist_ReductionKind, "reduction">;

def Dist_GridAttr : Dist_Attr<"Grid", "grid"> {
  let summary = "The device grid: named axes and their sizes";
  let description = [{
    Axes come from `pp` (pipeline stages), `dp` (data parallel, the ZeRO
    axis), `ep` (expert parallel), `tp` (tensor parallel) and `sp`
    (sequence parallel), each at most once, each of size ≥ 1; an absent axis has size 1. The order is the
    rank layout: the last axis varies fastest, as in DeepSpeed's process
    topology (`pp = 2, dp = 4` puts ranks 0-3 on stage 0).

      module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 1, tp = 1>}
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "axis names">:$axes,
    ArrayRefParameter<"int64_t", "axis sizes">:$sizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Size of axis `name`, or nullopt when the grid does not have it.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name) const;
    /// Number of ranks in the whole grid.
    int64_t getNumRanks() const;
    /// "pp, dp" for diagnostics.
    std::string formatAxes() const;
  }];
}

def Dist_ShardingAttr : Dist_Attr<"Sharding", "sharding"> {
  let summary = "How a function argument is split over a process group";
  let description = [{
    On a function argument (`dsdist.sharding`): the argument is this rank's
    chunk of a tensor of global `shape`, flattened row-major, zero-padded to
    a multiple of the group size G and cut into G equal chunks; group rank r
    holds chunk r, so the local type is `tensor<ceil(numel / G) x T>`. ZeRO
    shards optimizer state (stage ≥ 1) and parameters (stage 3) this way.

      %m: tensor<1024xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [64, 32]>}
  }];
  let parameters = (ins "::mlir::ArrayAttr":$axes,
                        ArrayRefParameter<"int64_t", "global shape">:$shape);
  let assemblyFormat = "`<` `axes` `=` $axes `,` `shape` `=` `[` $shape `]` `>`";
  let extraClassDeclaration = [{
    /// Elements of the global tensor.
    int64_t getNumElements() const;
    /// Elements of each rank's chunk for a group of `groupSize` ranks.
    int64_t getChunkSize(int64_t groupSize) const;
  }];
}

def Dist_TensorShardAttr : Dist_Attr<"TensorShard", "tensor_shard"> {
  let summary = "How tensor parallelism cut a parameter";
  let description = [{
    On a parameter argument (`dsdist.tensor_parallel`): the argument is
    this rank's piece of the whole tensor of `shape`, cut along `dim` over
    the group of `axes` (size G). The whole dim is `blocks` equal blocks
    (3 for a fused QKV projection: Q, K and V), each cut in G equal
    pieces; group rank r holds piece r of every block, concatenated in
    block order. So a column-parallel weight `[out, in]` has `dim = 0`, a
    row-parallel one `dim = 1`, and the local type is the whole type with
    `dim` divided by G.

      %w: tensor<24x16xf32> {dsdist.tensor_parallel =
            #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48, 16]>}
  }];
  let parameters = (ins "::mlir::ArrayAttr":$axes, "int64_t":$dim,
                        "int64_t":$blocks,
                        ArrayRefParameter<"int64_t", "whole shape">:$shape);
  let assemblyFormat = [{
    `<` `axes` `=` $axes `,` `dim` `=` $dim `,` `blocks` `=` $blocks `,`
    `shape` `=` `[` $shape `]` `>`
  }];
}

def Dist_CollectiveKind : I32EnumAttr<"CollectiveKind",
    "which collective a buffer-level dsdist.comm performs", [
  I32EnumAttrCase<"all_reduce", 0>, I32EnumAttrCase<"all_gather", 1>,
  I32EnumAttrCase<"reduce_scatter", 2>, I32EnumAttrCase<"all_to_all", 3>,
  I32EnumAttrCase<"broadcast", 4>, I32EnumAttrCase<"shard", 5>,
  I32EnumAttrCase<"send", 6>, I32EnumAttrCase<"recv", 7>
]> {
  let cppNamespace = "::mlir::ds::dist";
  let genSpecializedAttr = 0;
}
def Dist_CollectiveKindAttr
    : EnumAttr<Dist_Dialect, Dist_CollectiveKind, "collective">;

def Dist_PipeInstrKind : I32EnumAttr<"PipeInstrKind",
    "a pipeline instruction (DeepSpeed TrainSchedule)", [
  I32EnumAttrCase<"load_micro_batch", 0>, I32EnumAttrCase<"forward", 1>,
  I32EnumAttrCase<"backward", 2>, I32EnumAttrCase<"send_activation", 3>,
  I32EnumAttrCase<"recv_activation", 4>, I32EnumAttrCase<"send_grad", 5>,
  I32EnumAttrCase<"recv_grad", 6>, I32EnumAttrCase<"reduce_tied_grads", 7>,
  I32EnumAttrCase<"reduce_grads", 8>, I32EnumAttrCase<"optimizer_step", 9>
]> {
  let cppNamespace = "::mlir::ds::dist";
  let genSpecializedAttr = 0;
}

def Dist_PipeInstrAttr : Dist_Attr<"PipeInstr", "instr"> {
  let summary = "One instruction of a pipeline stage's stream";
  let description = [{
    The per-micro-batch instructions (`load_micro_batch`, `forward`,
    `backward`, `send_activation`, `recv_activation`, `send_grad`,
    `recv_grad`) name the micro-batch `mb` and the activation buffer `buf`
    they work on; the end-of-batch ones (`reduce_tied_grads`,
    `reduce_grads`, `optimizer_step`) name neither. Under the interleaved
    schedule a stage holds several model chunks and a per-micro-batch
    instruction also names the stage's chunk (0 when absent): chunk `j` of
    stage `s` of `p` is the model's chunk `j * p + s`.

      #dsdist.instr<forward(mb = 1, buf = 1)>
      #dsdist.instr<backward(mb = 3, buf = 7, chunk = 1)>
      #dsdist.instr<optimizer_step>
  }];
  let parameters = (ins
    EnumParameter<Dist_PipeInstrKind>:$kind,
    OptionalParameter<"std::optional<int64_t>", "micro-batch id">:$micro_batch,
    OptionalParameter<"std::optional<int64_t>", "buffer id">:$buffer,
    OptionalParameter<"std::optional<int64_t>", "the stage's model chunk">:$chunk);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether instructions of `kind` name a micro-batch and a buffer.
    static bool isPerMicroBatch(PipeInstrKind kind) {
      return kind != PipeInstrKind::reduce_tied_grads &&
             kind != PipeInstrKind::reduce_grads &&
             kind != PipeInstrKind::optimizer_step;
    }
    /// The instruction without the `<` `>` around it: `forward(mb = 0, buf = 0)`.
    static ::mlir::FailureOr<PipeInstrAttr> parseBody(::mlir::AsmParser &parser);
    void printBody(::llvm::raw_ostream &os) const;
    /// The stage's model chunk the instruction works on (0 outside the
    /// interleaved schedule).
    int64_t getChunkOr0() const { return getChunk().value_or(0); }
  }];
}

#endif // DSDIST_ATTRS
