//===- Passes.td - ds conversion passes --------------------*- tablegen -*-===//
//
// The level below linalg: buffers, the runtime ABI (dsrt_*), LLVM. The
// named pipeline `ds-lower-to-llvm` strings these together with upstream
// bufferization and LLVM conversions; see docs/architecture.md.
//
//===----------------------------------------------------------------------===//
#ifndef DS_CONVERSION_PASSES
#define DS_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def LowerToRuntime : Pass<"ds-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "Rewrite f32 matmuls on memrefs into dsrt_sgemm calls";
  let description = [{
    Every linalg contraction on buffers with one M, one N, one K and at most
    one batch dimension — `linalg.matmul`, `linalg.batch_matmul` (transposed
    or batch-broadcast operands through `indexing_maps`), or an equivalent
    `linalg.generic` / `linalg.contract` with a multiply-add body — whose
    operands are f32 memrefs with static strides and a unit stride on one
    matrix dimension becomes a call to the runtime's fixed symbols
    `dsrt_sgemm` / `dsrt_sgemm_strided_batched` (runtime/include/dsrt/dsrt.h)
    on the aligned pointers plus offsets. A transposed operand is passed as
    a BLAS transpose flag, a column-major output by computing Cᵀ = Bᵀ·Aᵀ. A
    `linalg.fill` of zero into the output right before the matmul (nothing
    reading the output in between) is folded into beta = 0.

    A contraction it cannot match (another element type, a dynamic or
    non-unit inner stride, two K dimensions, …) is left for the loop lowering;
    with `report` each one gets a remark saying why, and the module a summary
    remark. `memref.copy` between non-contiguous buffers becomes `linalg.copy`
    so it lowers to loops instead of a call into MLIR's C runner utilities.

    Example:

      linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
      linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>)
                    outs(%c : memref<8x16xf32>)

    becomes (pointers are `!llvm.ptr`, sizes `i64`):

      call @dsrt_sgemm(%false, %false, %c8, %c16, %c4, %one, %pa, %c4, %pb,
                       %c16, %zero, %pc, %c16) : (i32, i32, i64, ...) -> i32
  }];
  let options = [
    Option<"foldFill", "fold-fill", "bool", "true",
           "fold a zero fill of the output into beta = 0">,
    Option<"report", "report", "bool", "false",
           "emit a remark for every contraction left as loops, and a summary">,
  ];
  let statistics = [
    Statistic<"numBlasCalls", "blas-calls", "contractions lowered to dsrt calls">,
    Statistic<"numUnmatched", "unmatched", "contractions left as loop nests">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::linalg::LinalgDialect",
  ];
}

def LowerCommToRuntime : Pass<"ds-lower-comm-to-runtime", "mlir::ModuleOp"> {
  let summary = "Rewrite dsdist.comm on buffers into libdsrt collective calls";
  let description = [{
    Bufferization turns the tensor collectives into `dsdist.comm` on
    buffers (all_reduce and broadcast in place; all_gather, reduce_scatter,
    all_to_all and shard into a fresh buffer; release disappears). This pass
    makes each one a call sequence on raw pointers: the group from
    `dsrt_comm_axes(mask)` (bit i = axis i of the module's `dsdist.grid`),
    then the collective (`dsrt_all_reduce`, `dsrt_all_gather`,
    `dsrt_reduce_scatter`, `dsrt_all_to_all`, `dsrt_broadcast`), whose
    status goes to `dsrt_check`, which ends the whole job with the runtime's
    message if it failed — compiled code has no error path, and a rank that
    carried on alone would leave the others waiting. `shard` communicates
    nothing: it copies this rank's slice (rank from `dsrt_comm_rank`).

      dsdist.comm all_gather %s into %w over ["dp"] : memref<512xf32>, memref<1024xf32>

    becomes

      %g = call @dsrt_comm_axes(%mask) : (i64) -> !llvm.ptr
      %st = call @dsrt_all_gather(%g, %ps, %pw, %c1024, %f32) : (...) -> i32
      %0 = call @dsrt_check(%st, %null) : (i32, !llvm.ptr) -> i32
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "emit a remark with the number of collectives lowered">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
  ];
}

def LowerOptimizerToRuntime
    : Pass<"ds-lower-optimizer-to-runtime", "mlir::ModuleOp"> {
  let summary = "Rewrite dstrain.apply on buffers into libdsrt's fused "
                "optimizer kernels";
  let description = [{
    Bufferization turns each f32 `dstrain.adam`, `dstrain.lamb` and
    `dstrain.sgd` that `ds-lower-train-to-linalg` left for the kernels into
    `dstrain.apply` on buffers: param and state updated in place (copied
    first only where one-shot bufferization must, e.g. a read-only function
    argument), the grad read. This pass, which runs after deallocation
    placement because the runtime sees raw pointers the deallocation
    analysis cannot, makes them calls to `dsrt_adam`, `dsrt_lamb`,
    `dsrt_sgd` (runtime/include/dsrt/dsrt.h; fp32 state, f32/f16/bf16
    grads, OpenMP, AVX2/AVX-512, bitwise equal across vector paths), whose
    status goes to `dsrt_check`.

    Updates of one block with the same optimizer, hyper-parameters, step,
    lr and grad type become one `dsrt_*_multi` call over arrays of
    pointers and counts (one parallel region for the whole step), issued
    where the last of them was: each earlier update moves down past the ops
    in between only if none of them reads or writes a buffer it uses (by
    declared memory effects; an op with unknown effects, e.g. a call, ends
    the group). The kernels treat every tensor of a list as a call of its
    own would, so grouping changes no bit of the result. Step and lr are
    read from their 0-d buffers; the hyper-parameters become f32 constants.

      dstrain.apply "adam" %p0, %g0 state(%m0, %v0) step %t lr %lr hyper {...}
          : memref<64xf32>, memref<64xf32>, (memref<64xf32>, memref<64xf32>),
            memref<i64>, memref<f32>
      dstrain.apply "adam" %p1, %g1 state(%m1, %v1) step %t lr %lr hyper {...}
          : memref<32xf32>, memref<32xbf16>, ...

    becomes (the second has a bf16 grad, so it is a group of its own)

      %st = call @dsrt_adam(%pp0, %pg0, %f32, %pm0, %pv0, %c64, %step, %lr,
                            %b1, %b2, %eps, %wd, %adamw, %bc, %one, %null,
                            %c0) : (...) -> i32
      %0 = call @dsrt_check(%st, %null) : (i32, !llvm.ptr) -> i32
      ...

    and with several f32 updates, `dsrt_adam_multi(%n, %params, %grads,
    %f32, %exp_avgs, %exp_avg_sqs, %counts, ...)` on arrays allocated with
    `llvm.alloca` at the function's entry.
  }];
  let options = [
    Option<"multi", "multi", "bool", "true",
           "group updates that share optimizer, hyper-parameters, step and "
           "lr into one dsrt_*_multi call">,
    Option<"report", "report", "bool", "false",
           "emit a remark with the number of updates and calls">,
  ];
  let statistics = [
    Statistic<"numUpdates", "updates", "dstrain.apply ops lowered">,
    Statistic<"numCalls", "calls", "dsrt optimizer calls emitted">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
  ];
}

def BF16Contractions : Pass<"ds-bf16-contractions", "mlir::ModuleOp"> {
  let summary = "A contraction of widened bf16 operands reads the bf16 operands";
  let description = [{
    The NN lowering computes a 16-bit matmul as an f32 contraction of its
    operands widened by `arith.extf` (exact: the products of a matrix unit
    with f32 accumulation). For bf16 this pass makes each such contraction
    (on tensors, f32 result) whose two operands are whole-tensor
    bf16 -> f32 widenings read the bf16 tensors instead, as a
    `linalg.generic` that widens each element in its body; the widenings
    die unless something else reads them. The products and sums are the
    same. `ds-lower-to-runtime` then calls `dsrt_gemm_bf16`, which runs on
    the CPU's AVX512_BF16 dot products (oneDNN) where it has them, else on
    sgemm over operands it widens itself (the numbers of the contraction
    this pass started from). Runs on the CPU target only, before
    `ds-fuse-elementwise` (which would fuse a widening into its producer).

      %wa = linalg.generic {...} ins(%a : tensor<8x16xbf16>) ... { arith.extf }
      %wb = linalg.generic {...} ins(%b : tensor<16x4xbf16>) ... { arith.extf }
      %c = linalg.matmul ins(%wa, %wb : ...) outs(%z : tensor<8x4xf32>)

    becomes

      %c = linalg.generic {...matmul maps...} ins(%a, %b : ...) outs(%z : ...) {
        ^bb0(%x: bf16, %y: bf16, %acc: f32):
          %xf = arith.extf %x : bf16 to f32
          %yf = arith.extf %y : bf16 to f32
          ... mulf, addf
      }
  }];
  let statistics = [
    Statistic<"numContractions", "contractions", "contractions reading bf16 operands">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect"];
}

def FuseElementwise : Pass<"ds-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse elementwise linalg producers into consumers that read each element once";
  let description = [{
    Upstream `linalg-fuse-elementwise-ops` also propagates reshapes through
    contractions (a matmul behind a `tensor.collapse_shape` becomes a
    multi-dimensional `linalg.generic`) and fuses elementwise producers into
    them — a layer norm fused into the matmul that consumes it is recomputed
    once per output column, and BLAS can no longer take the product. This
    pass keeps the useful half: an elementwise `linalg.generic` producer
    with one use is fused into a `linalg.generic` consumer only when the
    consumer reads the producer's result through a permutation map (every
    element exactly once: elementwise chains, a reduction over an
    elementwise input such as softmax's exp-then-sum). Contractions,
    broadcasting reads and reshapes are left alone, so every matmul reaches
    `ds-lower-to-runtime` as a matmul. Nor is a producer fused into a
    consumer of the same block with a call of a defined function (a layer,
    a pipeline stage's chunk; not a declaration such as a trace marker)
    between them: fused, the producer's inputs would stay alive through
    that call (a pipeline schedule's per-micro-batch gradients, all held
    for one sum at the end instead of added as they come).

      %e = linalg.generic {...["parallel"]} ins(%x) { math.exp }
      %s = linalg.generic {...["reduction"]} ins(%e) { arith.addf }

    becomes one reduction computing exp inside the sum.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ApproximateMath : Pass<"ds-approximate-math", "mlir::ModuleOp"> {
  let summary = "Replace exp, log, tanh, erf, ... by polynomial approximations LLVM can vectorize";
  let description = [{
    `math.exp`, `math.log` and friends lower to scalar calls (`expf`,
    `erff`) that stop LLVM's loop vectorizer: in a GPT forward the erf of
    GELU, the exp of softmax and cross-entropy are then most of the time
    not spent in BLAS. This pass rewrites the f32 ones listed in `ops` into
    MLIR's polynomial approximations (arith only, a few ulp, checked against
    LibTorch by the oracle tests), which vectorize with the rest of the loop.

      %y = math.erf %x : f32

    becomes a branch-free polynomial in `arith` ops.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "math ops to approximate (default: exp, expm1, log, log1p, "
               "log2, tanh, erf)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def RelaxReductions : Pass<"ds-relax-reductions", "mlir::ModuleOp"> {
  let summary = "Let exactly associative reductions (max, min) be vectorized freely";
  let description = [{
    A `linalg.generic` reduction lowers to a loop carrying one accumulator;
    without permission to reassociate, LLVM must combine the elements in
    order, one at a time (a row max ran at 3.3 GB/s against 21 GB/s for an
    elementwise loop). For `maximumf`, `minimumf`, `maxnumf` and `minnumf`
    the order cannot change the result, so this pass gives the op that
    combines into the accumulator block argument the `reassoc` fast-math
    flag and lets the loop vectorizer keep as many partial results as the
    target likes. Sums and products are not associative in floating point:
    they keep their order here and get a fixed, target-independent one from
    `ds-fixed-order-reductions`.

      ^bb0(%in: f32, %acc: f32):
        %m = arith.maximumf %in, %acc : f32

    becomes

        %m = arith.maximumf %in, %acc fastmath<reassoc> : f32
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def OutlineKernels : Pass<"ds-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Compile each distinct linalg op on buffers once, as a function";
  let description = [{
    After bufferization a step holds the same loop nest many times: the
    gradient accumulation, the mean, the norm and the clipping of every
    parameter, for every layer's parameters of one shape. Each linalg op on
    buffers becomes a call of a private function holding that op on the
    function's arguments (its operands, then values its body reads from
    above; constants are cloned in); equal ops — body, indexing maps,
    iterator types, operand types, attributes — share one function, so the
    loops below grow with the number of distinct ops rather than with depth.
    Shapes stay static, so every loop lowers exactly as it would inline:
    the results are bitwise the same.

    A function is named `@kernel_<n>`, carries `ds.kernel_count` and is
    `noinline`. In a layer function (`dsnn.layer_count`), an op that occurs
    once is left where it is; elsewhere, in the step's glue, every op moves,
    since the glue is compiled without optimization
    (lib/Execution/Lowering.cpp) and its loops must not be. Runs after the BLAS and runtime rewrites (what they match
    is gone) and before the loop lowering.

      linalg.generic {...} ins(%a, %b : memref<16xf32>, memref<16xf32>)
                           outs(%c : memref<16xf32>) { ... arith.addf ... }

    becomes

      call @kernel_0(%a, %b, %c) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def ProfileSpans : Pass<"ds-profile-spans", "mlir::ModuleOp"> {
  let summary = "Bracket each kernel of the step with libdsrt's profile calls";
  let description = [{
    `ds-train --profile` attributes a step's time to kinds of work: matrix
    products, fused elementwise loop nests, reductions, copies, fills,
    collectives and optimizer kernels. Each kernel on buffers gets
    `dsrt_profile_begin()` before it and
    `dsrt_profile_end(name, class, flops, bytes)` after it, where `name` is
    a constant string (`<function>:<ordinal> <class> <loop sizes>`), and
    `flops` and `bytes` are what the shapes say: 2·M·N·K for a matrix
    product; the float arith and math ops of a loop body times its
    iterations; each memref operand's size once. Dynamic sizes are read at
    run time. Kernels are: every linalg op on buffers not inside another
    (they become loops or BLAS calls later), every `memref.copy`, and every
    call of `dsrt_sgemm*`, of a collective (`dsrt_all_reduce`, ...,
    `dsrt_wait`) and of a fused optimizer (`dsrt_adam`, ...). Collectives
    and optimizer calls carry no FLOP or byte counts. Runs after the
    runtime rewrites and before ds-outline-kernels, so an outlined kernel's
    call is bracketed as its op was. The calls touch no buffer, so results
    are bitwise the same as without them. Off unless ds-lower-to-llvm's
    `profile` asks for it.

      linalg.generic {iterator_types = ["parallel"]}
          ins(%a, %b : memref<16xf32>, memref<16xf32>)
          outs(%c : memref<16xf32>) { arith.addf ... }

    becomes

      call @dsrt_profile_begin() : () -> ()
      linalg.generic ...
      %name = llvm.mlir.addressof @ds_profile_name : !llvm.ptr
      call @dsrt_profile_end(%name, %c1_i32, %c16_i64, %c192_i64)
          : (!llvm.ptr, i32, i64, i64) -> ()
  }];
  let statistics = [
    Statistic<"numKernels", "kernels", "kernels bracketed">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def InlineGlue : Pass<"ds-inline-glue", "mlir::ModuleOp"> {
  let summary = "Inline each function called once that is not a layer function";
  let description = [{
    A step's @train_step calls @forward_backward once (or once in the
    micro-batch loop), passing every parameter and receiving every
    gradient: thousands of tensors at depth. Bufferization asks, for each
    result of a call, which of its operands it may alias, one operand at
    a time (quadratic in the call's arity: most of one-shot bufferization
    at 96 layers), and lowered, the call passes every field of every
    descriptor. Both functions are glue (the layers and kernels hold the
    arithmetic), so one function of glue is what is compiled.

    Every `func.call` of a defined single-block function with no
    `dsnn.layer_count` (not a layer function) whose only use is that call
    is replaced by the callee's body, its arguments mapped to the call's
    operands and its results to the returned values; a private callee is
    erased, a public one stays for other callers (ds-train runs this pass
    on the step contract, where @forward_backward is public, and drops it
    later as unused).
    Functions called more than once stay (a pipeline schedule calls each
    stage's chunk functions once per micro-batch), and so do layer
    functions, which are compiled once for all their calls. The ops are
    moved unchanged, so the arithmetic is the same.

      func.func private @forward_backward(%p: tensor<4xf32>) -> tensor<4xf32> {
        %g = call @layer_Block(%p) : (tensor<4xf32>) -> tensor<4xf32>
        return %g : tensor<4xf32>
      }
      func.func @train_step(%p: tensor<4xf32>) -> tensor<4xf32> {
        %g = call @forward_backward(%p) : (tensor<4xf32>) -> tensor<4xf32>
        ...

    becomes

      func.func @train_step(%p: tensor<4xf32>) -> tensor<4xf32> {
        %g = call @layer_Block(%p) : (tensor<4xf32>) -> tensor<4xf32>
        ...
  }];
  let statistics = [
    Statistic<"numInlined", "inlined", "calls replaced by the callee's body">,
  ];
}

def InlineIntoCWrappers : Pass<"ds-inline-into-c-wrappers", "mlir::ModuleOp"> {
  let summary = "Move each C-interface function's body into its _mlir_ciface_ wrapper";
  let description = [{
    The C wrapper of a function with `llvm.emit_c_interface` loads every
    memref descriptor its caller passes and calls the function with all
    their fields: for a step, one call with 3 + 2 x rank values per
    parameter, gradient and optimizer state (about 10000 at 24 layers).
    LLVM's interprocedural passes are quadratic in the arguments of such a
    call (CalledValuePropagation alone took 20 of 23 s of O3 at 24 layers),
    and its code generation stores the arguments one stack slot at a time.
    With the body in the wrapper there is no such call: the wrapper's
    signature (descriptor pointers, what callers see) is unchanged, and the
    function, when nothing else calls it, goes. Of each descriptor, the
    fields the body reads are loaded one by one where they are first used:
    held from the top of a step, thousands of pointers would each be
    spilled, and LLVM's fast instruction selection has no aggregate loads.
    The body's reads of the descriptors it rebuilds from those fields
    (FuncToLLVM's entry block) are forwarded to the fields first, so a
    field the body does not read is never loaded, and one it reads is
    loaded where it is used, not where the descriptor was rebuilt.

      llvm.func @step(%a: !llvm.ptr, %b: !llvm.ptr, %off: i64, ...) { body }
      llvm.func @_mlir_ciface_step(%d: !llvm.ptr) {
        %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, ...)>
        ...
        llvm.call @step(%a, %b, %off, ...)
        llvm.return
      }

    becomes

      llvm.func @_mlir_ciface_step(%d: !llvm.ptr) {
        ...
        %p = llvm.getelementptr inbounds %d[0, 1] : ... -> !llvm.ptr
        %aligned = llvm.load %p : !llvm.ptr -> !llvm.ptr
        body, %aligned where %b was
      }
  }];
  let statistics = [
    Statistic<"numInlined", "inlined", "functions moved into their C wrapper">,
  ];
}

def InternalizeFunctions : Pass<"ds-internalize-functions", "mlir::ModuleOp"> {
  let summary = "Give private LLVM functions with a body internal linkage";
  let description = [{
    `func.func private` becomes an `llvm.func` with external linkage: LLVM
    sees every layer and kernel function as callable from outside. It then
    keeps each one's whole exploded memref descriptors (3 + 2 x rank values
    per memref, almost all of them constants the body never reads), the
    ExecutionEngine gives each a packed wrapper, and interprocedural passes
    leave them alone. Internal, LLVM's dead-argument elimination cuts the
    calls down to the pointers actually used: the step's calls pass a few
    registers instead of dozens of stack slots, whose stores make
    instruction selection superlinear in the size of the step's block.
    Runs after the conversion to the LLVM dialect; public functions and
    declarations keep their linkage.

      llvm.func @kernel_0(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, ...)
          attributes {sym_visibility = "private"} { ... }

    becomes

      llvm.func internal @kernel_0(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, ...)
          attributes {sym_visibility = "private"} { ... }
  }];
  let statistics = [
    Statistic<"numInternalized", "internalized", "functions made internal">,
  ];
}

def CanonicalizeCallees : Pass<"ds-canonicalize-callees", "mlir::ModuleOp"> {
  let summary = "Canonicalize every LLVM function but the entry points' C wrappers";
  let description = [{
    The canonicalizer at the end of ds-lower-to-llvm, less the step's glue
    (the `_mlir_ciface_` wrappers that ds-inline-into-c-wrappers moved the
    entry points into). That glue is compiled without optimization and
    holds nothing left to fold (the descriptors it rebuilt are gone); what
    the canonicalizer did there was only merging duplicate constants,
    which LLVM IR does not have, yet visiting the glue's ~130000 ops of a
    96-layer step took it about half a second. Layer and kernel functions
    are canonicalized as before, each on its own (the canonicalizer folds
    within a function, so the result is the same).

      llvm.func @_mlir_ciface_step(...) { %c = llvm.mlir.constant(0 : i64) ... }  // as is
      llvm.func internal @kernel_0(...) { ... }                                   // canonicalized
  }];
}

def SplitEntryBlocks : Pass<"ds-split-entry-blocks", "mlir::ModuleOp"> {
  let summary = "Move each function's body out of its entry block";
  let description = [{
    The conversion of `func.func` to the LLVM dialect replaces every memref
    argument by a descriptor built at the top of the entry block, and each
    replacement asks the block for the order of its ops, which the
    insertion before it invalidated: quadratic in arguments times ops. A
    step's entry point has thousands of both (a 96-layer GPT: 7000
    arguments, the conversion took 3-7 s of a compile). With the body in a
    second block, the entry block holds only the branch and the
    descriptors. Runs before the control-flow and function conversions; no
    value or order of execution changes.

      func.func @step(%a: memref<4xf32>) {
        call @kernel_0(%a) : (memref<4xf32>) -> ()
        return
      }

    becomes

      func.func @step(%a: memref<4xf32>) {
        cf.br ^bb1
      ^bb1:
        call @kernel_0(%a) : (memref<4xf32>) -> ()
        return
      }
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numSplit", "split", "functions whose entry block was split">,
  ];
}

def StaticCopies : Pass<"ds-static-copies", "mlir::ModuleOp"> {
  let summary = "Copy statically shaped buffers with a constant-size memcpy";
  let description = [{
    The upstream lowering of `memref.copy` reads the offset and every size
    from both descriptors, even when the type fixes them: for a step's
    function argument those are loads from the caller's descriptor that LLVM
    cannot fold, about a dozen instructions per copy. A step copies each
    parameter and optimizer state it updates (thousands at depth), and that
    code was most of its entry point, on which instruction selection and
    register allocation are superlinear. Between two memrefs of one static
    shape and identity layout (offset 0 by type) this pass copies the
    aligned pointers' bytes with a size known at compile time; other copies
    keep the upstream lowering. A copy between two function arguments
    copies nothing when they are one buffer (a state the driver updates in
    place, which may be an NVMe-swapped moment that no memory backs).
    Runs before the memref-to-LLVM conversion.

      memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>

    becomes

      %src = memref.extract_aligned_pointer_as_index %a : memref<4x8xf32> -> index
      %dst = memref.extract_aligned_pointer_as_index %b : memref<4x8xf32> -> index
      ... llvm.inttoptr of each ...
      "llvm.intr.memcpy"(%dstPtr, %srcPtr, %c128) <{isVolatile = false}>
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
  let statistics = [
    Statistic<"numCopies", "copies", "copies given a constant size">,
  ];
}

def FixedOrderReductions
    : Pass<"ds-fixed-order-reductions", "mlir::func::FuncOp"> {
  let summary = "Sum reductions in an order that does not depend on the vector width";
  let description = [{
    A floating-point sum computed by a vectorized loop is associated by the
    vector width and interleave count LLVM picks for the target, so the
    same program gives different bits on an AVX2 and an AVX-512 machine,
    and a sum over a whole tensor composes differently from sums over its
    chunks on each. This pass fixes the association in the IR instead: an
    innermost `scf.for` (static bounds, step 1, at least 2·L iterations)
    whose every `iter_args` value is combined by one `arith.addf` or
    `arith.mulf` and yielded is rewritten into L lanes — lane k combines the
    iterations i with i mod L = k, in order, in a stack buffer of L values
    — then the lanes are combined by a fixed halving tree (k with k + L/2,
    ...), then with the initial value, and the iterations past the last
    multiple of L follow one at a time. The loop over the lanes is
    elementwise, so LLVM vectorizes it at any width without `reassoc`, and
    every target computes the same bits. L is the largest of 32, 16, 8 not
    above half the trip count (`lanes` caps it); loops with other uses of
    the accumulator, nested regions or dynamic bounds are left in order.

      %r = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %init) -> (f32) {
        %x = memref.load %m[%i] : memref<64xf32>
        %s = arith.addf %x, %acc : f32
        scf.yield %s : f32
      }

    becomes

      %lanes = memref.alloca() : memref<32xf32>      // at the function entry
      scf.for %k = %c0 to %c32 step %c1 {            // -0.0 in every lane
        memref.store %neg_zero, %lanes[%k] : memref<32xf32>
      }
      scf.for %j = %c0 to %c64 step %c32 {
        scf.for %k = %c0 to %c32 step %c1 {
          %i = arith.addi %j, %k : index
          %acc = memref.load %lanes[%k] : memref<32xf32>
          %x = memref.load %m[%i] : memref<64xf32>
          %s = arith.addf %x, %acc : f32
          memref.store %s, %lanes[%k] : memref<32xf32>
        }
      }
      // 31 arith.addf over the lanes (0+16, 1+17, ...), then + %init,
      // then the original loop from 64 (empty here).
  }];
  let options = [
    Option<"maxLanes", "lanes", "unsigned", "32",
           "the most lanes a reduction is split into (a power of two, 2-64)">,
  ];
  let statistics = [
    Statistic<"numSplit", "reductions-split", "reduction loops split into lanes">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def ExpandBF16Casts : Pass<"ds-expand-bf16-casts", "mlir::ModuleOp"> {
  let summary = "bf16 conversions as integer arithmetic, the same on every target";
  let description = [{
    LLVM lowers `fptrunc float to bfloat` to a native instruction where the
    target has one (AVX512-BF16: which flushes denormals) and otherwise to
    a call to `__truncsfbf2`, which the JIT cannot resolve where the C
    runtime lacks it (GCC 12's libgcc). This pass rewrites every
    `arith.truncf` to bf16 and `arith.extf` from bf16, scalar or vector,
    into bit operations on i32 (round to nearest even, NaN kept quiet), so
    compiled code needs no runtime support and rounds the same on every
    CPU level.

      %h = arith.truncf %x : f32 to bf16

    becomes a bitcast to i32, the rounding bias added, a shift right by 16,
    a truncation to i16 and a bitcast to bf16.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ParallelizeLoops : Pass<"ds-parallelize-loops", "mlir::ModuleOp"> {
  let summary = "Run the outermost parallel loop of each big loop nest across the threads";
  let description = [{
    Runs on the loops convert-linalg-to-parallel-loops leaves, before any
    pass that gives a function stack buffers (ds-fixed-order-reductions):
    every outermost `scf.parallel` (no results, constant bounds, step 1 in
    its first dimension) whose nest runs at least `min-iterations`
    iterations in all moves into a function `fn(ctx, begin, end)` that runs
    the nest over [begin, end) of its first dimension, and is replaced by
    `dsrt_parallel_for(fn, ctx, lb, ub)`, which splits [lb, ub) into one
    contiguous block per thread (runtime/core/parallel.c). `ctx` is a stack
    array of the addresses of the buffers the nest reads and writes (static
    shapes and layouts, so an address rebuilds the descriptor); constants
    are cloned in. An iteration of an `scf.parallel` depends on no other, a
    reduction is a loop inside one iteration, and only whole iterations move
    between threads: every element is computed by the same operations in
    the same order whatever the thread count, so results are bitwise equal
    for every count. Nests reading other values from above, and small nests
    (a fork costs microseconds), stay where they are. The new function
    carries `ds.kernel_count`, so the JIT optimizes it like a kernel.

      scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
        %x = memref.load %a[%i, %j] : memref<512x256xf32>
        ...
        memref.store %y, %b[%i, %j] : memref<512x256xf32>
      }

    becomes

      %ctx = memref.alloca() : memref<2xi64>        // at the function entry
      ... the addresses of %a and %b stored into %ctx ...
      %fn = constant @f_par0 : (!llvm.ptr, i64, i64) -> ()
      call @dsrt_parallel_for(%fn, %p, %c0_i64, %c512_i64)

      func.func private @f_par0(%ctx: !llvm.ptr, %b: i64, %e: i64)
          attributes {ds.kernel_count = 1 : i64} {
        ... %a and %b rebuilt from the addresses in %ctx ...
        scf.parallel (%i, %j) = (%b', %c0) to (%e', %c256) step (%c1, %c1) { ... }
      }
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t", "32768",
           "iterations a nest needs (all its loops' trip counts multiplied) "
           "to run across the threads">,
  ];
  let statistics = [
    Statistic<"numParallel", "parallel", "loop nests run across the threads">,
    Statistic<"numSmall", "small", "loop nests left serial for their size">,
    Statistic<"numUnsupported", "unsupported",
              "loop nests left serial for what they read from above or "
              "their bounds">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect",
  ];
}

def PromoteAccumulators : Pass<"ds-promote-accumulators", "mlir::func::FuncOp"> {
  let summary = "Keep a reduction loop's accumulator in a register (scf.for iter_args)";
  let description = [{
    `convert-linalg-to-loops` lowers a reduction to an `scf.for` that loads
    the accumulator from the output buffer, combines, and stores it back on
    every iteration. LLVM can only keep it in a register if it can prove the
    output does not alias the inputs, which it cannot for two views of one
    arena or for function arguments, so the loop stays scalar (a 4096-wide
    softmax row sum ran one element per iteration through memory). This
    pass moves a load/store pair of the same loop-invariant element of one
    memref out of the loop and carries the value in `iter_args`, when the
    loop's only write is that store and nothing else in it reads that
    memref. Other reads in the loop are assumed not to alias it, which holds
    for loops lowered from bufferized linalg ops (one-shot bufferization
    never lets an output alias an input of the same op, and ds-plan-buffers
    never overlaps buffers that are alive together).

      scf.for %k = %c0 to %n step %c1 {
        %a = memref.load %out[%i] : memref<?xf32>
        %x = memref.load %in[%i, %k] : memref<?x?xf32>
        %s = arith.addf %x, %a : f32
        memref.store %s, %out[%i] : memref<?xf32>
      }

    becomes

      %a0 = memref.load %out[%i] : memref<?xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%a = %a0) -> (f32) {
        %x = memref.load %in[%i, %k] : memref<?x?xf32>
        %s = arith.addf %x, %a : f32
        scf.yield %s : f32
      }
      memref.store %r, %out[%i] : memref<?xf32>
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def SplitInitTensors : Pass<"ds-split-init-tensors", "mlir::func::FuncOp"> {
  let summary = "One tensor.empty, and one zero fill of one, per use, just before its user";
  let description = [{
    One-shot bufferization allocates each `tensor.empty` where it stands,
    and an op that overwrites its init writes into that buffer when nothing
    live reads it. After CSE one empty of a type (and one `linalg.fill` of
    it with a given value) serves every op of the step that starts from a
    fresh tensor of that type: the logits of the last micro-batch start
    from the buffer made for the first micro-batch's, which then lives from
    one to the other and holds arena bytes through everything in between
    (and a copy keeps the zeros for the second user). This pass gives each
    use of a fill of an empty its own fill of its own empty, placed just
    before the user (before the user's op in the fill's block: a use in a
    loop counts at the loop). An empty's uses are grouped: a use with a
    call between it and the previous one (a layer running) starts a new
    group with its own empty, unless it reads a value written into an
    earlier group's buffer (an accumulation into a gradient made earlier,
    which bufferization then writes in place); uses with no call between
    them share one, as bufferization writes one value after the other
    into its buffer, packed as tight as it gets. Each original moves before
    its first user. Runs after the last CSE, before `one-shot-bufferize`.

      %e = tensor.empty() : tensor<16x64xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> ...
      %a = linalg.matmul ins(...) outs(%z : tensor<16x64xf32>) -> ...
      ...
      %b = linalg.matmul ins(...) outs(%z : tensor<16x64xf32>) -> ...

    becomes

      %e = tensor.empty() : tensor<16x64xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> ...
      %a = linalg.matmul ins(...) outs(%z : tensor<16x64xf32>) -> ...
      ...
      %e1 = tensor.empty() : tensor<16x64xf32>
      %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x64xf32>) -> ...
      %b = linalg.matmul ins(...) outs(%z1 : tensor<16x64xf32>) -> ...
  }];
  let statistics = [
    Statistic<"numSplit", "inits", "copies of an empty or a fill made">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def ElementwiseInPlace : Pass<"ds-elementwise-in-place", "mlir::func::FuncOp"> {
  let summary = "An elementwise op writes over an input that dies there";
  let description = [{
    A `linalg.generic` whose loops are all parallel, and whose init is a
    `tensor.empty` its body does not read, indexed by the identity, takes
    as its init an input of the same type, indexed by the identity too,
    that nothing reads after it (made by an op: not a block argument nor a
    constant; other inputs, broadcast or not, stay as they are). Then
    one-shot bufferization writes the result over that input's buffer
    rather than a fresh one — or copies, where its analysis finds the
    buffer still read through an alias. Each element is read before it is
    written at the same place, so the result is the same. Runs after
    `ds-split-init-tensors`, before `one-shot-bufferize`.

      %e = tensor.empty() : tensor<64x16xf32>
      %s = linalg.generic {...} ins(%a, %b : ...) outs(%e : ...) {
        ^bb0(%x: f32, %y: f32, %o: f32):
          %r = arith.addf %x, %y : f32
          linalg.yield %r : f32
      } -> tensor<64x16xf32>

    becomes (with `%a` read only here) the same op with `outs(%a : ...)`.
  }];
  let statistics = [
    Statistic<"numInPlace", "in-place", "elementwise results written over a dying input">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def FoldResultCopies : Pass<"ds-fold-result-copies", "mlir::func::FuncOp"> {
  let summary = "A buffer copied into an out-param at the end, and used no more, is the out-param";
  let description = [{
    `buffer-results-to-out-params` writes a result straight into its
    out-param only when the returned buffer is an allocation the function
    made; a value a call returned (the out-param the caller allocated for a
    layer function) is copied into the function's out-param at the return
    instead. A pipeline stage's forward returns every activation its layers
    saved for the backward that way: each held twice, in the stage's arena
    and in the caller's buffer, and copied once more per micro-batch.

    A `memref.copy` in a function's entry block from a `memref.alloc` of
    that block into an entry-block argument of the same type is folded when
    the argument has no other use (nothing reads or writes the out-param
    but the copy) and neither the allocation nor any view of it is used
    after the copy or escapes (returned, yielded): the allocation is
    replaced by the argument and the copy erased. The caller's out-param is
    a buffer of its own, as every caller in ds allocates one per result, so
    writing it earlier changes nothing it can see. Runs after
    `buffer-results-to-out-params`, before `ds-plan-buffers`.

      %a = memref.alloc() : memref<2x8x16xf32>
      call @layer_Block(%x, %a) : (memref<2x8x16xf32>, memref<2x8x16xf32>) -> ()
      memref.copy %a, %out : memref<2x8x16xf32> to memref<2x8x16xf32>
      return

    becomes

      call @layer_Block(%x, %out) : (memref<2x8x16xf32>, memref<2x8x16xf32>) -> ()
      return
  }];
  let statistics = [
    Statistic<"numFolded", "copies", "copies into out-params folded">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def CopyRepeatedResults
    : Pass<"ds-copy-repeated-results", "mlir::func::FuncOp"> {
  let summary = "Return a fresh copy for each repeat of a returned buffer";
  let description = [{
    After CSE a function can return one value twice: in a parallel
    attention + MLP layer the output gradient reaches both branches' last
    bias unchanged, so both bias gradients are the same reduce_sum.
    Upstream `buffer-results-to-out-params` assumes distinct result buffers
    and rewrites the one allocation twice (a use after free). Each repeat of
    a ranked, identity-layout memref operand of `func.return` after its
    first becomes a new allocation holding a copy; a function whose return
    operands are distinct is left as it is. Runs after bufferization,
    before `buffer-results-to-out-params`.

      return %g, %g : memref<32xf32>, memref<32xf32>

    becomes

      %copy = memref.alloc() : memref<32xf32>
      memref.copy %g, %copy : memref<32xf32> to memref<32xf32>
      return %g, %copy : memref<32xf32>, memref<32xf32>
  }];
  let statistics = [
    Statistic<"numCopies", "copies", "repeated results copied">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def PlanBuffers : Pass<"ds-plan-buffers", "mlir::ModuleOp"> {
  let summary = "Place each function's static buffers in one arena, reused by liveness";
  let description = [{
    After bufferization, every `memref.alloc` of static shape in a function's
    entry block or in the body of an `scf.for` (nested in `scf.for` only, at
    any depth) whose buffer does not escape (is not returned, stored or
    yielded out of a region — through any chain of views) gets a fixed byte
    offset in one per-function arena, a private `memref.global` of i8 named
    `__ds_arena_<function>`, and becomes a `memref.view` of it; its
    `memref.dealloc`s are erased. The arena is allocated once (static storage
    of the loaded code) and reused by every call, so a training step
    allocates nothing for its temporaries, micro-batch loop included.
    Functions using the arena are not reentrant: one call at a time per
    function.

    A buffer passed to a loop as an initial iteration argument lives until
    the last use of the loop's result. A buffer made in a loop body and
    yielded to the next iteration (a gradient accumulator: `acc + g` into a
    fresh buffer) gets two slots, used alternately by the parity of the
    iteration number, so iteration k never writes the buffer it reads from
    iteration k-1; this needs the iteration argument not to be yielded
    again and the loop result not to leave the loop's block, else the
    buffer stays on the heap. The computation is unchanged, so are the
    numbers.

    With `reuse` (the default) two buffers share bytes when their live
    ranges do not overlap: greedy first fit in three orders (largest,
    longest-lived, and most bytes times lifetime first), keeping the
    smallest arena. A live range
    runs from the alloc to the last use of any alias, counted at the op of
    the alloc's own block that holds the use: a buffer used inside a loop
    is live for the whole loop, a loop body's temporary for part of one
    iteration, an accumulator's two slots from the loop to the last use of
    its result. The function gets `ds.workspace_bytes` (the arena size) and
    `ds.workspace_unplanned_bytes` (the sum of the slots' sizes, what reuse
    saves against).

    Example: two temporaries whose lives do not overlap share offset 0:

      %t0 = memref.alloc() : memref<64xf32>   // used, then dead
      %t1 = memref.alloc() : memref<64xf32>

    becomes

      memref.global "private" @__ds_arena_f : memref<256xi8> {alignment = 64}
      %g  = memref.get_global @__ds_arena_f : memref<256xi8>
      %t0 = memref.view %g[%c0][] : memref<256xi8> to memref<64xf32>
      %t1 = memref.view %g[%c0][] : memref<256xi8> to memref<64xf32>

    and an accumulator

      %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (memref<64xf32>) {
        %new = memref.alloc() : memref<64xf32>
        linalg.add ins(%acc, %grad : ...) outs(%new : memref<64xf32>)
        scf.yield %new : memref<64xf32>
      }

    gets (the arena also holding %init and %grad)

        %even = arith.cmpi eq, ((%i - %lb) / %s) & 1, 0
        %off = arith.select %even, %c256, %c512 : index
        %new = memref.view %g[%off][] : memref<1024xi8> to memref<64xf32>
  }];
  let options = [
    Option<"reuse", "reuse", "bool", "true",
           "share arena bytes between buffers whose live ranges do not overlap">,
    Option<"alignment", "alignment", "int64_t", "64",
           "byte alignment of the arena and of every buffer in it">,
    Option<"report", "report", "bool", "false",
           "emit a remark per function with the arena size and what reuse saved">,
  ];
  let statistics = [
    Statistic<"numPlanned", "planned", "allocations placed in an arena">,
    Statistic<"numKept", "kept", "allocations left to the allocator">,
    Statistic<"numDoubleBuffered", "double-buffered",
              "planned loop-body allocations carried to the next iteration "
              "(two slots each)">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def WorkspacesAtLoad : Pass<"ds-workspaces-at-load", "mlir::ModuleOp"> {
  let summary = "Allocate the planned arenas when the code is loaded, not as "
                "static storage";
  let description = [{
    ds-plan-buffers gives each function an arena, a private global of i8
    (`__ds_arena_<function>`). As static storage of the loaded code it is
    reached PC-relative, which the small code model limits to 2 GiB: a step
    whose arenas grow with the parameter count (gradients, casts, optimizer
    scratch) stops linking at about half a billion parameters, and a GPU
    target needs them in device memory anyway. After the conversion to the
    LLVM dialect, each arena global becomes a pointer of the same name
    (`ds.workspace_bytes` on it records the arena's size), every address of
    the arena becomes a load of that pointer, and the module gets two
    public functions:

      i64 __ds_workspaces_init()     one dsrt_workspace_alloc for all arenas,
                                     each pointer set to its slice; returns
                                     the bytes, or -1 (dsrt_last_error says
                                     why)
      void __ds_workspaces_release() dsrt_workspace_free, pointers reset

    The loader (JIT or shared object) calls the first before any entry point
    and the second when it unloads. Slices keep each arena's alignment. A
    module without arenas is left as it is.

      llvm.mlir.global private @__ds_arena_f() {alignment = 64 : i64} : !llvm.array<256 x i8>
      %a = llvm.mlir.addressof @__ds_arena_f : !llvm.ptr

    becomes

      llvm.mlir.global internal @__ds_arena_f() {alignment = 8 : i64, ds.workspace_bytes = 256 : i64} : !llvm.ptr
      %s = llvm.mlir.addressof @__ds_arena_f : !llvm.ptr
      %a = llvm.load %s : !llvm.ptr -> !llvm.ptr
  }];
  let statistics = [
    Statistic<"numArenas", "arenas", "arenas allocated at load">,
    Statistic<"numWorkspaceBytes", "workspace-bytes",
              "bytes of the one load-time allocation">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MapKernelsToGPU : Pass<"ds-map-kernels-to-gpu", "mlir::ModuleOp"> {
  let summary = "Run each linalg op on buffers as a GPU kernel: a thread per "
                "element, or a block per reduced row";
  let description = [{
    The GPU target's counterpart of lowering linalg to loops. Buffer copies
    (`memref.copy` with static shapes) become `linalg.copy`, and named ops
    are generalized; then each linalg.generic on buffers with static
    ranges becomes one `gpu.launch` in place:

    - all iterators parallel: one thread per iteration point (the flattened
      index split by 64-bit div/rem, so a buffer may pass 2^31 elements),
      blocks of `block-size` threads, a bounds guard for the last block;
    - some iterators reduce, into one output, through one combiner of the
      output (add, mul, max/min, and/or/xor, as `matchReduction` finds it):
      one block per output element. Each thread folds the reduced points
      tid, tid + blockDim, ... in order, starting from the combiner's
      neutral element; `gpu.all_reduce` combines the threads in its fixed
      shuffle tree; thread 0 folds the total into the output's value. The
      order never depends on timing, so a step gives the same bits run to
      run (not the CPU's bits: the CPU sums in another order).

    Loads and stores follow the op's indexing maps (affine.apply);
    `linalg.index` is the loop index. Anything else (dynamic shapes, several
    reduced outputs, a body that is not one combiner) stays a linalg op and,
    with `report`, gets a remark saying why.

      linalg.generic {iterator_types = ["parallel", "reduction"]}
          ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>)
        ^bb0(%in: f32, %acc: f32):
          %a = arith.addf %in, %acc : f32
          linalg.yield %a : f32

    becomes a `gpu.launch` of 8 blocks of 64 threads, an `scf.for` from the
    thread id by the block size, `gpu.all_reduce add` and a store by thread 0.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "threads per block (rounded down to what an op needs, in warps)">,
    Option<"report", "report", "bool", "false",
           "a remark on each linalg op left on the host, saying why">,
  ];
  let statistics = [
    Statistic<"numCopyKernels", "copy-kernels",
              "buffer copies (memref.copy) run as kernels">,
    Statistic<"numParallelKernels", "parallel-kernels",
              "ops mapped one thread per element">,
    Statistic<"numReductionKernels", "reduction-kernels",
              "ops mapped one block per reduced element">,
    Statistic<"numHostOps", "host-ops", "linalg ops left on the host">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def GPULaunchToLoops : Pass<"ds-gpu-launch-to-loops", "mlir::ModuleOp"> {
  let summary = "Run ds-map-kernels-to-gpu's kernels as CPU loops, in the "
                "order a GPU combines them: the kernels' index maps checked "
                "without a GPU";
  let description = [{
    The CPU half of checking the GPU lowering on a machine without a GPU
    (`--target sm_90-emulated`): each `gpu.launch` becomes loops over its
    blocks and threads with the same ids, so every load and store goes
    where the kernel's would, and a step computed this way can be compared
    with the CPU step.

    A launch without `gpu.all_reduce` runs its body once per (block,
    thread). A launch whose body reduces (one `gpu.all_reduce` at its top
    level, as ds-map-kernels-to-gpu emits for a reduction) runs, per block:
    the body up to the all-reduce for every thread, keeping each thread's
    value; the values combined as the GPU's shuffle tree does (lanes paired
    at distance 1, 2, 4, ..., a lane without a partner keeping its value);
    then the rest of the body for every thread with the total.

      gpu.launch blocks(%bx, ...) in (%gx = %c8, ...) threads(%tx, ...) in
          (%sx = %c64, ...) {
        %p = scf.for %i = %tx to %c64 step %sx ... // this thread's part
        %t = gpu.all_reduce add %p uniform {} : (f32) -> f32
        ...                                         // thread 0 stores %t
      }

    becomes `scf.for %bx` around an `scf.for %tx` storing each %p, six
    pairing loops, and an `scf.for %tx` running the rest with %t.
  }];
  let statistics = [
    Statistic<"numLaunches", "launches", "kernels run as loops">,
    Statistic<"numReductions", "reductions",
              "of them with a block-wide all-reduce">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // DS_CONVERSION_PASSES

def GPUHostRuntime : Pass<"ds-gpu-host-runtime", "mlir::ModuleOp"> {
  let summary = "The host side of a GPU step: its runtime calls, its memory "
                "and its host accesses on the device's terms";
  let description = [{
    Runs last on a GPU target's host code (LLVM dialect, kernels already
    `gpu.launch_func`). The CPU lowering's runtime calls are redirected to
    their device forms in libdsrt:

      dsrt_sgemm, dsrt_sgemm_strided_batched   ->  dsrt_cuda_sgemm[...] (cuBLAS)
      dsrt_adam_multi (+ a null stream: the ds stream, which is blocking)
                                               ->  dsrt_cuda_adam_multi
      dsrt_workspace_alloc / _free             ->  dsrt_cuda_workspace_alloc / _free
      malloc / free                            ->  dsrt_cuda_managed_alloc / _free

    Every buffer of the step is then GPU memory the host may also address
    (managed memory: the workspace, and the buffers the loader passes), so
    the few scalars the host still computes (the step counter, the learning
    rate, a norm's square root) read and write it directly. Kernels launched
    by `gpu.launch_func` synchronize when they return; GEMMs and the
    optimizer do not, so a host load or store after a call is preceded by
    `dsrt_cuda_host_sync` (once per run of accesses, not per access).

    A call the device has no form of (another optimizer's fused kernel) is
    an error naming it, at compile time.
  }];
  let statistics = [
    Statistic<"numRedirected", "redirected-calls",
              "runtime calls redirected to their device forms">,
    Statistic<"numSyncs", "host-syncs",
              "dsrt_cuda_host_sync calls before host accesses">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}
