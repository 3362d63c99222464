// RUN: ds-opt %s --ds-lower-optimizer-to-runtime --split-input-file | FileCheck %s --implicit-check-not=dstrain.apply
// RUN: ds-opt %s --ds-lower-optimizer-to-runtime=multi=false --split-input-file | FileCheck %s --check-prefix=SINGLE --implicit-check-not=dstrain.apply

// One update: dsrt_adam on the buffers' addresses, step and lr read from
// their 0-d buffers, the hyper-parameters as f32 constants, the status
// checked.
// CHECK-LABEL: func @adam_one
// CHECK-DAG:     %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[N:.*]] = arith.constant 64 : i64
// CHECK-DAG:     %[[B1:.*]] = arith.constant 0.899999976 : f32
// CHECK-DAG:     %[[WD:.*]] = arith.constant 0.00999999977 : f32
// CHECK-DAG:     %[[STEP:.*]] = memref.load %{{.*}}[] : memref<i64>
// CHECK-DAG:     %[[LR:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:         %[[ST:.*]] = call @dsrt_adam(%{{.*}}, %{{.*}}, %[[BF16]], %{{.*}}, %{{.*}}, %[[N]], %[[STEP]], %[[LR]], %[[B1]], %{{.*}}, %{{.*}}, %[[WD]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT:    call @dsrt_check(%[[ST]], %{{.*}})
// CHECK-NEXT:    return
func.func @adam_one(%p: memref<64xf32>, %g: memref<64xbf16>, %m: memref<64xf32>, %v: memref<64xf32>, %t: memref<i64>, %lr: memref<f32>) {
  dstrain.apply "adam" %p, %g state(%m, %v) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64}
      : memref<64xf32>, memref<64xbf16>, (memref<64xf32>, memref<64xf32>), memref<i64>, memref<f32>
  return
}

// -----

// The updates of a step with the same hyper-parameters, step and lr are one
// dsrt_adam_multi call over pointer and count arrays (allocated at entry),
// where the last one was; the pointer of an offset view includes the offset.
// CHECK-LABEL: func @adam_grouped
// CHECK:         %[[COUNTS:.*]] = llvm.alloca %{{.*}} x i64
// CHECK:         memref.copy
// CHECK:         %[[SLOT:.*]] = llvm.getelementptr %[[PARAMS:.*]][1]
// CHECK:         %{{.*}}, %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %{{.*}} : memref<32xf32, strided<[1], offset: 64>>
// CHECK:         %[[OFF:.*]] = arith.index_cast %[[OFFSET]] : index to i64
// CHECK:         %[[AT:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %[[AT]], %[[SLOT]]
// CHECK:         %[[TWO:.*]] = arith.constant 2 : i64
// CHECK:         call @dsrt_adam_multi(%[[TWO]], %[[PARAMS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[COUNTS]],
// CHECK-NOT:     call @dsrt_adam
// CHECK:         return
func.func @adam_grouped(%p0: memref<64xf32>, %g0: memref<64xf32>, %m0: memref<64xf32>, %v0: memref<64xf32>,
                        %flat: memref<96xf32>, %g1: memref<32xf32>, %m1: memref<32xf32>, %v1: memref<32xf32>,
                        %src: memref<8xf32>, %dst: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  dstrain.apply "adam" %p0, %g0 state(%m0, %v0) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : memref<64xf32>, memref<64xf32>, (memref<64xf32>, memref<64xf32>), memref<i64>, memref<f32>
  // Touches none of the group's buffers: the first update moves past it.
  memref.copy %src, %dst : memref<8xf32> to memref<8xf32>
  %p1 = memref.subview %flat[64] [32] [1] : memref<96xf32> to memref<32xf32, strided<[1], offset: 64>>
  dstrain.apply "adam" %p1, %g1 state(%m1, %v1) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : memref<32xf32, strided<[1], offset: 64>>, memref<32xf32>, (memref<32xf32>, memref<32xf32>), memref<i64>, memref<f32>
  return
}
// SINGLE-LABEL: func @adam_grouped
// SINGLE:         call @dsrt_adam(
// SINGLE:         memref.copy
// SINGLE:         call @dsrt_adam(

// -----

// An op that reads an updated buffer in between keeps the updates apart: it
// must see the first one done.
// CHECK-LABEL: func @read_in_between
// CHECK:         call @dsrt_sgd(
// CHECK:         memref.copy %[[P0:.*]], %{{.*}}
// CHECK:         call @dsrt_sgd(
func.func @read_in_between(%p0: memref<8xf32>, %p1: memref<8xf32>, %g: memref<8xf32>, %b0: memref<8xf32>, %b1: memref<8xf32>, %out: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  dstrain.apply "sgd" %p0, %g state(%b0) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  memref.copy %p0, %out : memref<8xf32> to memref<8xf32>
  dstrain.apply "sgd" %p1, %g state(%b1) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

// A call (unknown effects) ends a group as well; different hyper-parameters
// or a different step never share a call.
// CHECK-LABEL: func @not_grouped
// CHECK:         call @dsrt_sgd(
// CHECK:         call @opaque
// CHECK:         call @dsrt_sgd(
// CHECK:         call @dsrt_sgd(
func.func private @opaque()
func.func @not_grouped(%p0: memref<8xf32>, %p1: memref<8xf32>, %p2: memref<8xf32>, %g: memref<8xf32>, %b: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  dstrain.apply "sgd" %p0, %g state(%b) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  call @opaque() : () -> ()
  dstrain.apply "sgd" %p1, %g state(%b) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  dstrain.apply "sgd" %p2, %g state(%b) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.1 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

// SGD without momentum passes no buffer (NULL); Lamb asks for no trust
// ratios (NULL).
// CHECK-LABEL: func @sgd_and_lamb
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         call @dsrt_sgd(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]],
// CHECK:         call @dsrt_lamb(
// CHECK-SAME:      %[[NULL2:[^,]*]], %{{.*}}, %[[NULL2]])
func.func @sgd_and_lamb(%p: memref<8xf32>, %q: memref<8xf32>, %g: memref<8xf32>, %b: memref<8xf32>, %m: memref<8xf32>, %v: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  dstrain.apply "sgd" %p, %g state(%b) step %t lr %lr hyper {dampening = 0.0 : f64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  dstrain.apply "lamb" %q, %g state(%m, %v) step %t lr %lr hyper {beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-06 : f64, max_coeff = 10.0 : f64, min_coeff = 0.01 : f64, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>, memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

// ds-plan-buffers' arena: views at constant byte shifts (and static
// subviews and reshapes of them) are told apart by their byte ranges, so a
// copy into another slot of the arena does not end the group, while one
// into a grad's slot does.
// CHECK-LABEL: func @arena_slots
// CHECK:         memref.copy %{{.*}}, %[[OTHER:.*]] :
// CHECK:         memref.copy %{{.*}}, %[[SLOT:.*]] :
// CHECK:         call @dsrt_adam_multi(
// CHECK:         memref.copy %{{.*}}, %{{.*}} :
// CHECK:         call @dsrt_adam(
func.func @arena_slots(%p0: memref<8xf32>, %p1: memref<8xf32>, %p2: memref<8xf32>, %m0: memref<8xf32>, %v0: memref<8xf32>, %m1: memref<8xf32>, %v1: memref<8xf32>, %m2: memref<8xf32>, %v2: memref<8xf32>,
                       %src: memref<4xf32>, %t: memref<i64>, %lr: memref<f32>) {
  %arena = memref.alloc() : memref<256xi8>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %g0 = memref.view %arena[%c0][] : memref<256xi8> to memref<2x4xf32>
  %g0flat = memref.collapse_shape %g0 [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  %g1 = memref.view %arena[%c64][] : memref<256xi8> to memref<16xf32>
  %g1part = memref.subview %g1[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  %other = memref.view %arena[%c128][] : memref<256xi8> to memref<4xf32>
  dstrain.apply "adam" %p0, %g0flat state(%m0, %v0) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>, memref<8xf32>), memref<i64>, memref<f32>
  // Bytes 128..144: no grad's.
  memref.copy %src, %other : memref<4xf32> to memref<4xf32>
  // Bytes 64..80: the first half of %g1, not the part the update reads.
  %g1head = memref.subview %g1[0] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1]>>
  memref.copy %src, %g1head : memref<4xf32> to memref<4xf32, strided<[1]>>
  dstrain.apply "adam" %p1, %g1part state(%m1, %v1) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32, strided<[1], offset: 8>>, (memref<8xf32>, memref<8xf32>), memref<i64>, memref<f32>
  // Bytes 96..112: what the second update reads; the third waits.
  %g1tail = memref.subview %g1[8] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 8>>
  memref.copy %src, %g1tail : memref<4xf32> to memref<4xf32, strided<[1], offset: 8>>
  dstrain.apply "adam" %p2, %g0flat state(%m2, %v2) step %t lr %lr hyper {adam_w_mode = true, beta1 = 0.9 : f64, beta2 = 0.999 : f64, bias_correction = true, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : memref<8xf32>, memref<8xf32>, (memref<8xf32>, memref<8xf32>), memref<i64>, memref<f32>
  memref.dealloc %arena : memref<256xi8>
  return
}
