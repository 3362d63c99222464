// RUN: ds-opt %s --split-input-file --verify-diagnostics --ds-gpu-host-runtime | FileCheck %s

// The CPU lowering's calls go to their device forms; the optimizer gets the
// (null: legacy default, ordered with the blocking ds stream) stream; host
// accesses after asynchronous work wait once, stack slots and the
// workspace pointer never.

// CHECK-DAG:   llvm.func @dsrt_cuda_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
// CHECK-DAG:   llvm.func @dsrt_cuda_adam_multi(i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG:   llvm.func @dsrt_cuda_host_sync()
// CHECK-LABEL: llvm.func @step
// CHECK:       llvm.call @dsrt_cuda_sgemm(
// CHECK:       llvm.call @dsrt_cuda_sgemm_strided_batched(
// CHECK:       %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:       llvm.call @dsrt_cuda_adam_multi({{.*}}, %[[NULL]])
// CHECK-NEXT:  llvm.mlir.addressof @__ds_arena_step
// CHECK-NEXT:  llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:  llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:  llvm.load %arg0 : !llvm.ptr -> f32
// CHECK-NEXT:  llvm.store {{.*}}, %arg0 : f32, !llvm.ptr
// CHECK-NEXT:  llvm.mlir.constant
// CHECK-NEXT:  %[[SLOT:.*]] = llvm.alloca
// CHECK-NEXT:  llvm.store {{.*}}, %[[SLOT]] : f32, !llvm.ptr
// CHECK-NEXT:  llvm.call @dsrt_trace_end()
// CHECK-NEXT:  llvm.load %arg0 : !llvm.ptr -> f32
// CHECK-NEXT:  llvm.call @dsrt_cuda_managed_alloc(
// CHECK-NEXT:  llvm.call @dsrt_cuda_managed_free(
// CHECK-NEXT:  llvm.return
// CHECK-NOT:   llvm.func @dsrt_sgemm(
// CHECK-NOT:   llvm.func @malloc(
module {
  llvm.mlir.global internal @__ds_arena_step() : !llvm.ptr
  llvm.func @dsrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
  llvm.func @dsrt_sgemm_strided_batched(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64, i64) -> i32
  llvm.func @dsrt_adam_multi(i64, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @dsrt_trace_end()
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @step(%arg0: !llvm.ptr, %i: i32, %n: i64, %f: f32) {
    %0 = llvm.call @dsrt_sgemm(%i, %i, %n, %n, %n, %f, %arg0, %n, %arg0, %n, %f, %arg0, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
    %1 = llvm.call @dsrt_sgemm_strided_batched(%i, %i, %n, %n, %n, %f, %arg0, %n, %n, %arg0, %n, %n, %f, %arg0, %n, %n, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64, i64) -> i32
    %2 = llvm.call @dsrt_adam_multi(%n, %arg0, %arg0) : (i64, !llvm.ptr, !llvm.ptr) -> i32
    %ws = llvm.mlir.addressof @__ds_arena_step : !llvm.ptr
    %base = llvm.load %ws : !llvm.ptr -> !llvm.ptr
    %x = llvm.load %arg0 : !llvm.ptr -> f32
    llvm.store %x, %arg0 : f32, !llvm.ptr
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %slot = llvm.alloca %c1 x f32 : (i64) -> !llvm.ptr
    llvm.store %x, %slot : f32, !llvm.ptr
    llvm.call @dsrt_trace_end() : () -> ()
    %y = llvm.load %arg0 : !llvm.ptr -> f32
    %m = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.call @free(%m) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// A fused optimizer with no device form is refused, naming it.
module {
  llvm.func @dsrt_lamb_multi(i64) -> i32
  llvm.func @step(%n: i64) {
    // expected-error @+1 {{the GPU target has no device kernel for dsrt_lamb_multi yet: train with Adam or AdamW}}
    %0 = llvm.call @dsrt_lamb_multi(%n) : (i64) -> i32
    llvm.return
  }
}

// -----

// Across blocks: a host loop reading device memory after a GEMM waits once,
// at the end of the block that issued the GEMM, not in every iteration; a
// loop that issues work itself waits at the end of its body; an access at
// the top of the function waits for the caller's work, once.
// CHECK-LABEL: llvm.func @loops
// CHECK:         llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:    llvm.load %arg0 : !llvm.ptr -> f32
// CHECK:         llvm.call @dsrt_cuda_sgemm(
// CHECK-NEXT:    llvm.mlir.constant
// CHECK-NEXT:    llvm.mlir.constant
// CHECK-NEXT:    llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:    llvm.br ^[[HEAD:bb[0-9]+]]
// CHECK:       ^[[HEAD]](
// CHECK-NOT:     llvm.call
// CHECK:         llvm.cond_br
// CHECK-NEXT:  ^[[BODY:bb[0-9]+]]:
// CHECK-NEXT:    llvm.load %arg0
// CHECK-NEXT:    llvm.store
// CHECK-NEXT:    llvm.add
// CHECK-NEXT:    llvm.br ^[[HEAD]]
// CHECK:       ^[[LOOP2:bb[0-9]+]](
// CHECK-NEXT:    llvm.load %arg0
// CHECK-NEXT:    llvm.call @dsrt_cuda_sgemm(
// CHECK-NEXT:    llvm.add
// CHECK-NEXT:    llvm.icmp
// CHECK-NEXT:    llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:    llvm.cond_br {{.*}}, ^[[LOOP2]]
// CHECK:         llvm.return
module {
  llvm.func @dsrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
  llvm.func @loops(%arg0: !llvm.ptr, %i: i32, %n: i64, %f: f32) {
    %first = llvm.load %arg0 : !llvm.ptr -> f32
    %0 = llvm.call @dsrt_sgemm(%i, %i, %n, %n, %n, %f, %arg0, %n, %arg0, %n, %f, %arg0, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    llvm.br ^head(%zero : i64)
  ^head(%k: i64):
    %more = llvm.icmp "slt" %k, %n : i64
    llvm.cond_br %more, ^body, ^second(%zero : i64)
  ^body:
    %x = llvm.load %arg0 : !llvm.ptr -> f32
    llvm.store %x, %arg0 : f32, !llvm.ptr
    %next = llvm.add %k, %one : i64
    llvm.br ^head(%next : i64)
  ^second(%j: i64):
    %y = llvm.load %arg0 : !llvm.ptr -> f32
    %1 = llvm.call @dsrt_sgemm(%i, %i, %n, %n, %n, %f, %arg0, %n, %arg0, %n, %f, %arg0, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
    %j1 = llvm.add %j, %one : i64
    %again = llvm.icmp "slt" %j1, %n : i64
    llvm.cond_br %again, ^second(%j1 : i64), ^done
  ^done:
    llvm.return
  }
}

// -----

// A collective's backend reads its buffers on the host's order, not the ds
// stream's: it waits for the GEMM before it, like a host access; work after
// it is pending again.
// CHECK-LABEL: llvm.func @collective
// CHECK:         llvm.call @dsrt_cuda_sgemm(
// CHECK-NEXT:    llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:    llvm.call @dsrt_all_reduce_start(
// CHECK-NEXT:    llvm.call @dsrt_wait(
// CHECK-NEXT:    llvm.call @dsrt_cuda_host_sync()
// CHECK-NEXT:    llvm.load %arg0
module {
  llvm.func @dsrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
  llvm.func @dsrt_all_reduce_start(!llvm.ptr, i64) -> !llvm.ptr
  llvm.func @dsrt_wait(!llvm.ptr) -> i32
  llvm.func @collective(%arg0: !llvm.ptr, %i: i32, %n: i64, %f: f32) {
    %0 = llvm.call @dsrt_sgemm(%i, %i, %n, %n, %n, %f, %arg0, %n, %arg0, %n, %f, %arg0, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
    %r = llvm.call @dsrt_all_reduce_start(%arg0, %n) : (!llvm.ptr, i64) -> !llvm.ptr
    %w = llvm.call @dsrt_wait(%r) : (!llvm.ptr) -> i32
    %x = llvm.load %arg0 : !llvm.ptr -> f32
    llvm.return
  }
}
