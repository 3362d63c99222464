//===- DistOps.td - dsdist operations ----------------------*- tablegen -*-===//
#ifndef DSDIST_OPS
#define DSDIST_OPS

include "dsdist/DistBase.td"
include "dsdist/DistAttrs.td"
include "dsdist/DistTypes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_FloatTensor : RankedTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Collectives are Pure: every rank runs the same program through the same
// passes, so removing or merging one happens on all ranks of its group alike.
// Their `*_start` forms launch work and are kept in place.

// A collective whose result shape differs from its operand's.
multiclass Dist_ReshapingCollective<string mnemonic, string sum, string desc,
                                    dag attrs, string pre, string post> {
  def Op : Dist_Op<mnemonic, [Pure]> {
    let summary = sum;
    let description = desc;
    let arguments = !con((ins AnyRankedTensor:$input, StrArrayAttr:$axes),
                         attrs);
    let results = (outs AnyRankedTensor:$result);
    let assemblyFormat = pre # " $input `over` $axes " # post #
        " attr-dict `:` type($input) `->` type($result)";
    let hasVerifier = 1;
    let hasFolder = 1;
  }
  def StartOp : Dist_Op<mnemonic # "_start"> {
    let summary = "Starts an asynchronous " # mnemonic;
    let description = "Starts `dsdist." # mnemonic # "` and returns a handle "
        # "carrying its result type; `dsdist.wait` delivers the result.";
    let arguments = !con((ins AnyRankedTensor:$input, StrArrayAttr:$axes),
                         attrs);
    let results = (outs Dist_TensorHandle:$handle);
    let assemblyFormat = pre # " $input `over` $axes " # post #
        " attr-dict `:` type($input) `->` type($handle)";
    let hasVerifier = 1;
  }
}

// A collective whose result has its operand's type.
multiclass Dist_SameTypeCollective<string mnemonic, string sum, string desc,
                                   dag attrs, string pre, string post> {
  def Op : Dist_Op<mnemonic, [Pure, AllTypesMatch<["input", "result"]>]> {
    let summary = sum;
    let description = desc;
    let arguments = !con((ins AnyRankedTensor:$input, StrArrayAttr:$axes),
                         attrs);
    let results = (outs AnyRankedTensor:$result);
    let assemblyFormat = pre # " $input `over` $axes " # post #
        " attr-dict `:` type($input)";
    let hasVerifier = 1;
    let hasFolder = 1;
  }
  def StartOp : Dist_Op<mnemonic # "_start", [
      TypesMatchWith<"handle delivers the input type", "input", "handle",
          "::mlir::ds::dist::HandleType::get($_ctxt, "
          "::llvm::cast<::mlir::RankedTensorType>($_self))">]> {
    let summary = "Starts an asynchronous " # mnemonic;
    let description = "Starts `dsdist." # mnemonic # "` and returns a handle "
        # "carrying the input type; `dsdist.wait` delivers the result.";
    let arguments = !con((ins AnyRankedTensor:$input, StrArrayAttr:$axes),
                         attrs);
    let results = (outs Dist_AnyHandle:$handle);
    let assemblyFormat = pre # " $input `over` $axes " # post #
        " attr-dict `:` type($input)";
    let hasVerifier = 1;
  }
}

defm Dist_AllGather : Dist_ReshapingCollective<"all_gather",
  "Concatenates the group's tensors along one dim", [{
    Every rank of the group receives the concatenation, in group rank order,
    of all ranks' operands along `dim`: the result's `dim` is group size ×
    the operand's. ZeRO-3 uses it to rebuild a parameter before use.

      %w = dsdist.all_gather %w_shard over ["dp"] dim 0
             : tensor<32x256xf32> -> tensor<128x256xf32>
  }], (ins I64Attr:$dim), "", "`dim` $dim">;

defm Dist_ReduceScatter : Dist_ReshapingCollective<"reduce_scatter",
  "Reduces over the group and leaves each rank one slice", [{
    Combines the group's operands elementwise with `kind`, then rank `i` of
    the group keeps slice `i` along `dim`: the result's `dim` is the
    operand's divided by the group size (which must divide it). ZeRO-2/3
    use it to leave each rank the reduced gradients of its own shard.

      %g = dsdist.reduce_scatter sum %grad over ["dp"] dim 0
             : tensor<128x256xf32> -> tensor<32x256xf32>
  }], (ins Dist_ReductionKindAttr:$kind, I64Attr:$dim), "custom<Reduction>($kind)", "`dim` $dim">;

defm Dist_AllToAll : Dist_ReshapingCollective<"all_to_all",
  "Exchanges slices between all ranks of the group", [{
    Splits the operand into group-size slices along `split_dim`, sends
    slice `j` to group rank `j`, and concatenates what it receives along
    `concat_dim`. With `split_dim == concat_dim` the shape is unchanged
    (MoE expert-parallel dispatch and combine).

      %t = dsdist.all_to_all %x over ["ep"] split 0 concat 1
             : tensor<8x4x16xf32> -> tensor<2x16x16xf32>
  }], (ins I64Attr:$split_dim, I64Attr:$concat_dim), "",
  "`split` $split_dim `concat` $concat_dim">;

defm Dist_AllReduce : Dist_SameTypeCollective<"all_reduce",
  "Reduces over the group; every rank gets the result", [{
    Combines the group's operands elementwise with `kind` (`avg` divides the
    sum by the group size). ZeRO-0 (plain data parallel) all-reduces the
    gradients over `dp`.

      %g = dsdist.all_reduce avg %grad over ["dp"] : tensor<1024xf32>
  }], (ins Dist_ReductionKindAttr:$kind), "custom<Reduction>($kind)", "">;

defm Dist_Broadcast : Dist_SameTypeCollective<"broadcast",
  "Copies the root rank's tensor to every rank of the group", [{
    `root` is a rank within the group (0 ≤ root < group size), not a global
    rank.

      %w = dsdist.broadcast %w0 over ["dp"] root 0 : tensor<64x64xf32>
  }], (ins I64Attr:$root), "", "`root` $root">;

def Dist_CopyToGroupOp : Dist_Op<"copy_to_group", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Identity whose cotangent is summed over the group";
  let description = [{
    Megatron's `f`: the input of a column-parallel layer is the same on
    every rank of the tensor-parallel group, and each rank computes only
    its part of what reads it, so the gradient of the input is the sum of
    the ranks' partial gradients. The forward value is `input`; the VJP
    all-reduces (sum) the cotangent over `axes`. Its dual, `g`, is a
    `dsdist.all_reduce sum` in the forward whose VJP passes the cotangent
    through. ds-autodiff replaces the op by its input once the backward
    holds that all-reduce, so it never reaches the lowering.

      %x1 = dsdist.copy_to_group %x over ["tp"] : tensor<2x8x16xf32>
  }];
  let arguments = (ins Dist_FloatTensor:$input, StrArrayAttr:$axes);
  let results = (outs Dist_FloatTensor:$result);
  let assemblyFormat = "$input `over` $axes attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_ShardOp : Dist_Op<"shard", [Pure]> {
  let summary = "Keeps this rank's slice of a replicated tensor";
  let description = [{
    The slice `dsdist.reduce_scatter` would leave on this rank, without
    reducing: group rank `i` keeps slice `i` along `dim` of an operand that
    every rank of the group holds alike. No communication. ZeRO uses it to
    cut a replicated parameter or gradient down to the shard its optimizer
    state covers.

      %p = dsdist.shard %w over ["dp"] dim 0 : tensor<1024xf32> -> tensor<512xf32>
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $axes `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Dist_CommOp : Dist_Op<"comm"> {
  let summary = "A collective on buffers";
  let description = [{
    The bufferized form of the tensor collectives, `dsdist.shard` and
    point-to-point, in destination style: reads `input`, writes `output`
    (the same buffer for `all_reduce`, `broadcast`, `send` and `recv`).
    Slices are along the leading dimension, so each rank's part is
    contiguous. `send`/`recv` talk to the rank `offset` steps away along
    the one axis in `axes`. Made by bufferization and lowered to libdsrt
    calls by `ds-lower-comm-to-runtime`.

      dsdist.comm all_gather %shard into %full over ["dp"]
          : memref<512xf32>, memref<1024xf32>
      dsdist.comm all_reduce %g into %g over ["dp"]
          {kind = #dsdist.reduction<avg>} : memref<64xf32>, memref<64xf32>
  }];
  let arguments = (ins Dist_CollectiveKindAttr:$collective,
                       OptionalAttr<Dist_ReductionKindAttr>:$kind,
                       Arg<AnyMemRef, "read", [MemRead]>:$input,
                       Arg<AnyMemRef, "written", [MemWrite]>:$output,
                       StrArrayAttr:$axes,
                       DefaultValuedAttr<I64Attr, "0">:$root,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let assemblyFormat = [{
    $collective $input `into` $output `over` $axes attr-dict
    `:` type($input) `,` type($output)
  }];
  let hasVerifier = 1;
}

def Dist_CommStartOp : Dist_Op<"comm_start"> {
  let summary = "Starts a collective on buffers; dsdist.comm_wait completes it";
  let description = [{
    `dsdist.comm` started asynchronously (the bufferized `*_start`,
    `send_start` and `recv_start`): `input` must not be written and
    `output` not read until `dsdist.comm_wait` on the handle, which names
    both buffers so that they stay allocated until then.

      %h = dsdist.comm_start all_gather %s into %w over ["dp"]
          : memref<512xf32>, memref<1024xf32>
      dsdist.comm_wait %h, %s, %w : memref<512xf32>, memref<1024xf32>
  }];
  let arguments = (ins Dist_CollectiveKindAttr:$collective,
                       OptionalAttr<Dist_ReductionKindAttr>:$kind,
                       Arg<AnyMemRef, "read", [MemRead]>:$input,
                       Arg<AnyMemRef, "written", [MemWrite]>:$output,
                       StrArrayAttr:$axes,
                       DefaultValuedAttr<I64Attr, "0">:$root,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs Dist_SendHandle:$handle);
  let assemblyFormat = [{
    $collective $input `into` $output `over` $axes attr-dict
    `:` type($input) `,` type($output)
  }];
}

def Dist_CommWaitOp : Dist_Op<"comm_wait"> {
  let summary = "Completes a dsdist.comm_start";
  let description = [{
    Blocks until the communication behind `handle` is done. `buffers` are
    the ones it reads and writes, listed so that no buffer planner or
    deallocation reuses them while the communication is in flight.
  }];
  let arguments = (ins Dist_SendHandle:$handle,
                       Arg<Variadic<AnyMemRef>, "in flight", [MemRead, MemWrite]>:$buffers);
  let assemblyFormat = [{
    $handle (`,` $buffers^ `:` type($buffers))? attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

// Send and recv are not Pure: two receives from the same peer deliver
// different messages and must never be merged.

def Dist_SendOp : Dist_Op<"send"> {
  let summary = "Sends a tensor to the rank `offset` steps away along an axis";
  let description = [{
    The peer is the rank whose coordinate along `axis` is this rank's plus
    `offset` (non-zero, |offset| < axis size) modulo the axis size, so the
    axis is a ring; all other coordinates are the same. The next pipeline
    stage is `+1` on `"pp"`, and under the interleaved schedule the last
    stage's `+1` is the first stage (its next model chunk).

      dsdist.send %act to "pp" offset 1 : tensor<4x128x256xf32>
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$axis,
                       I64Attr:$offset);
  let assemblyFormat = [{
    $input `to` $axis `offset` $offset attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_SendStartOp : Dist_Op<"send_start"> {
  let summary = "Starts an asynchronous send";
  let description = [{
    Like `dsdist.send`; the payload-less handle is completed by `dsdist.wait`.

      %h = dsdist.send_start %act to "pp" offset 1 : tensor<4x128x256xf32>
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$axis,
                       I64Attr:$offset);
  let results = (outs Dist_SendHandle:$handle);
  let assemblyFormat = [{
    $input `to` $axis `offset` $offset attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv"> {
  let summary = "Receives a tensor from the rank `offset` steps away along an axis";
  let description = [{
    The peer is found as for `dsdist.send`; the previous pipeline stage is
    `-1` on `"pp"`. The result type is the type the peer sends.

      %act = dsdist.recv from "pp" offset -1 : tensor<4x128x256xf32>
  }];
  let arguments = (ins StrAttr:$axis, I64Attr:$offset);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` $axis `offset` $offset attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_RecvStartOp : Dist_Op<"recv_start"> {
  let summary = "Starts an asynchronous receive";
  let description = [{
      %h = dsdist.recv_start from "pp" offset -1 : !dsdist.handle<tensor<4x256xf32>>
  }];
  let arguments = (ins StrAttr:$axis, I64Attr:$offset);
  let results = (outs Dist_TensorHandle:$handle);
  let assemblyFormat = [{
    `from` $axis `offset` $offset attr-dict `:` type($handle)
  }];
  let hasVerifier = 1;
}

def Dist_WaitOp : Dist_Op<"wait"> {
  let summary = "Completes an asynchronous communication";
  let description = [{
    Blocks until the communication behind `handle` is done and returns the
    tensor it delivers; a send's handle delivers nothing and its wait has no
    result.

      %w = dsdist.wait %h : !dsdist.handle<tensor<128x256xf32>> -> tensor<128x256xf32>
      dsdist.wait %s : !dsdist.handle
  }];
  let arguments = (ins Dist_AnyHandle:$handle);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $handle attr-dict `:` type($handle) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
}

def Dist_ReleaseOp : Dist_Op<"release"> {
  let summary = "Ends the life of a gathered buffer";
  let description = [{
    Marks the last use of a tensor rebuilt by an all-gather (a ZeRO-3
    parameter): its memory may be freed and reused from here on.

      dsdist.release %w_full : tensor<128x256xf32>
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Pipeline schedule
//===----------------------------------------------------------------------===//

def Dist_PipeInstrStreams : TypedArrayAttrBase<
    TypedArrayAttrBase<Dist_PipeInstrAttr, "instruction stream">,
    "one instruction stream per stage">;

def Dist_PipelineScheduleOp : Dist_Op<"pipeline_schedule"> {
  let summary = "The instruction stream of every pipeline stage";
  let description = [{
    Stage `s` runs stream `s` once per training step. The instructions are
    those of DeepSpeed's `TrainSchedule`; `kind` is `"1f1b"` (one forward,
    one backward: stage `s` of `S` keeps at most `S - s` micro-batches in
    flight), `"gpipe"` (all forwards, then all backwards) or
    `"interleaved"` (Megatron's interleaved 1F1B: each stage holds
    `virtual_stages` model chunks, chunk `j` of stage `s` being the model's
    chunk `j * S + s`, and instructions name their chunk; activations flow
    from the last stage's chunk `j` to the first stage's chunk `j + 1`).

    The verifier checks, per stage: every micro-batch is forwarded once and
    backwarded once, after its forward; activations are received before the
    forward and sent after it, gradients received before the backward and
    sent after it, only where the neighbour stage exists; a micro-batch
    keeps one buffer, and a buffer is reused only once its micro-batch is
    backwarded; gradients are reduced after the last backward and the
    stream ends with `optimizer_step`. Across stages, the streams run to
    the end together when every send blocks until its neighbour reaches
    the matching receive of the same micro-batch (and chunk), a receive
    taking the peer's next message whatever its kind, as MPI matches them:
    no deadlock, no swapped micro-batches. A failure names the instruction
    on both stages.

      dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
        stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0),
                 send_activation(mb = 0, buf = 0), recv_grad(mb = 0, buf = 0),
                 backward(mb = 0, buf = 0), reduce_tied_grads, reduce_grads,
                 optimizer_step
        stage 1: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0),
                 forward(mb = 0, buf = 0), backward(mb = 0, buf = 0),
                 send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads,
                 optimizer_step
      }
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$num_stages,
                       I64Attr:$num_micro_batches,
                       OptionalAttr<I64Attr>:$virtual_stages,
                       Dist_PipeInstrStreams:$streams);
  let assemblyFormat = [{
    $kind `stages` $num_stages `micro_batches` $num_micro_batches
    (`virtual_stages` $virtual_stages^)?
    custom<Streams>($streams) attr-dict
  }];
  let extraClassDeclaration = [{
    /// The model chunks each stage holds (1 unless interleaved).
    int64_t getNumChunks() { return getVirtualStages().value_or(1); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Dist_MoEDispatchOp : Dist_Op<"moe_dispatch", [Pure]> {
  let summary = "Packs tokens into per-expert capacity slots";
  let description = [{
    `result[e, c, :] = sum_s mask[s, e, c] * tokens[s, :]` (einsum
    `"sec,sm->ecm"`, as GShard and DeepSpeed MoE): tokens `[S, M]` and the
    0/1 dispatch mask `[S, E, C]` give `[E, C, M]`, ready for the all-to-all
    over `ep`.

      %d = dsdist.moe_dispatch %tokens, %mask
             : tensor<16x64xf32>, tensor<16x4x8xf32> -> tensor<4x8x64xf32>
  }];
  let arguments = (ins Dist_FloatTensor:$tokens, Dist_FloatTensor:$mask);
  let results = (outs Dist_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $mask attr-dict `:` type($tokens) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_MoECombineOp : Dist_Op<"moe_combine", [Pure]> {
  let summary = "Weights expert outputs back into token order";
  let description = [{
    `result[s, :] = sum_{e,c} weights[s, e, c] * expert_out[e, c, :]`
    (einsum `"sec,ecm->sm"`): expert output `[E, C, M]` and combine weights
    `[S, E, C]` give `[S, M]`.

      %y = dsdist.moe_combine %expert_out, %weights
             : tensor<4x8x64xf32>, tensor<16x4x8xf32> -> tensor<16x64xf32>
  }];
  let arguments = (ins Dist_FloatTensor:$expert_out, Dist_FloatTensor:$weights);
  let results = (outs Dist_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_out `,` $weights attr-dict `:` type($expert_out) `,` type($weights)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // DSDIST_OPS
