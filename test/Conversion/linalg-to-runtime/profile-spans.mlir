// RUN: ds-opt %s --ds-profile-spans --split-input-file | FileCheck %s

#id = affine_map<(i) -> (i)>

// A fused loop nest: class 1 (elementwise), two float ops per iteration,
// each operand's buffer once (3 x 64 bytes). The name says where it is.
// CHECK:       llvm.mlir.global internal constant @[[NAME:ds_profile_name[_0-9]*]]("elementwise:0 elementwise 16\00")
// CHECK-DAG:   func.func private @dsrt_profile_begin()
// CHECK-DAG:   func.func private @dsrt_profile_end(!llvm.ptr, i32, i64, i64)
// CHECK-LABEL: func @elementwise
// CHECK:         call @dsrt_profile_begin() : () -> ()
// CHECK-NEXT:    linalg.generic
// CHECK:         linalg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[P:.*]] = llvm.mlir.addressof @[[NAME]]
// CHECK-DAG:     %[[CLS:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[FLOPS:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[BYTES:.*]] = arith.constant 192 : i64
// CHECK:         call @dsrt_profile_end(%[[P]], %[[CLS]], %[[FLOPS]], %[[BYTES]])
// CHECK-NEXT:    return
func.func @elementwise(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : memref<16xf32>, memref<16xf32>) outs(%c : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %s : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A reduction loop: class 2; one add per iteration (8 x 16), bytes of the
// input and the result (512 + 32).
// CHECK:       llvm.mlir.global internal constant @{{.*}}("reduction:0 reduction 8x16\00")
// CHECK-LABEL: func @reduction
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    linalg.generic
// CHECK-DAG:     arith.constant 2 : i32
// CHECK-DAG:     arith.constant 128 : i64
// CHECK-DAG:     arith.constant 544 : i64
// CHECK:         call @dsrt_profile_end(
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @reduction(%a: memref<8x16xf32>, %c: memref<8xf32>) {
  linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x16xf32>) outs(%c : memref<8xf32>) {
  ^bb0(%x: f32, %z: f32):
    %s = arith.addf %x, %z : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A BLAS call: class 0, 2·M·N·K FLOPs, A, B and C once (4 x (32 + 64 + 128)).
// CHECK:       llvm.mlir.global internal constant @{{.*}}("gemm:0 sgemm 8x16x4\00")
// CHECK-LABEL: func @gemm
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    call @dsrt_sgemm(
// CHECK-DAG:     arith.constant 0 : i32
// CHECK-DAG:     arith.constant 1024 : i64
// CHECK-DAG:     arith.constant 896 : i64
// CHECK:         call @dsrt_profile_end(
func.func private @dsrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
func.func @gemm(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) -> i32 {
  %nt = arith.constant 0 : i32
  %m = arith.constant 8 : i64
  %n = arith.constant 16 : i64
  %k = arith.constant 4 : i64
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %r = call @dsrt_sgemm(%nt, %nt, %m, %n, %k, %one, %a, %k, %b, %n, %zero, %c, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
  return %r : i32
}

// -----

// A fill (class 4) writes its buffer; a copy (class 3) reads one and writes
// the other. Each kernel of a function has its own ordinal.
// CHECK-DAG:   llvm.mlir.global internal constant @{{.*}}("copy_and_fill:0 fill 16\00")
// CHECK-DAG:   llvm.mlir.global internal constant @{{.*}}("copy_and_fill:1 copy\00")
// CHECK-LABEL: func @copy_and_fill
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    linalg.fill
// CHECK-DAG:     arith.constant 4 : i32
// CHECK-DAG:     arith.constant 64 : i64
// CHECK:         call @dsrt_profile_end(
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    memref.copy
// CHECK-DAG:     arith.constant 3 : i32
// CHECK-DAG:     arith.constant 128 : i64
// CHECK:         call @dsrt_profile_end(
func.func @copy_and_fill(%a: memref<16xf32>, %b: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%a : memref<16xf32>)
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  return
}

// -----

// A dynamic size is read before the kernel: FLOPs = n (one exp each),
// bytes = 4·n + 4·n.
// CHECK:       llvm.mlir.global internal constant @{{.*}}("dynamic:0 elementwise ?\00")
// CHECK-LABEL: func @dynamic
// CHECK:         %[[D:.*]] = memref.dim %arg0, %{{.*}}
// CHECK-NEXT:    %[[N:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    linalg.generic
// CHECK:         call @dsrt_profile_end(%{{.*}}, %{{.*}}, %[[N]], %{{.*}})
#id = affine_map<(i) -> (i)>
func.func @dynamic(%a: memref<?xf32>, %c: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%c : memref<?xf32>) {
  ^bb0(%x: f32, %z: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A collective is timed (class 5) without counts; dsrt_check is no kernel.
// CHECK:       llvm.mlir.global internal constant @{{.*}}("collective:0 all_reduce\00")
// CHECK-LABEL: func @collective
// CHECK:         call @dsrt_profile_begin()
// CHECK-NEXT:    %[[S:.*]] = call @dsrt_all_reduce(
// CHECK:         call @dsrt_profile_end(
// CHECK:         call @dsrt_check(%[[S]]
// CHECK-NOT:     dsrt_profile
func.func private @dsrt_all_reduce(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
func.func private @dsrt_check(i32, !llvm.ptr) -> i32
func.func @collective(%comm: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr) {
  %n = arith.constant 16 : i64
  %dt = arith.constant 0 : i32
  %op = arith.constant 0 : i32
  %s = call @dsrt_all_reduce(%comm, %a, %b, %n, %dt, %op) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
  %null = llvm.mlir.zero : !llvm.ptr
  %r = call @dsrt_check(%s, %null) : (i32, !llvm.ptr) -> i32
  return
}
