// RUN: ds-opt %s --ds-parallelize-loops --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-parallelize-loops='min-iterations=1000000' --split-input-file | FileCheck %s --check-prefix=SMALL

// Row softmax-like nest, 512 rows x 256: the rows run across the threads.
// The caller stores both buffers' addresses into a stack array at its
// entry (in order of first use) and hands the outlined nest to dsrt_parallel_for over rows 0..512;
// the outlined function rebuilds the buffers from those addresses and runs
// rows [begin, end), each row's reduction loop unchanged inside.
// CHECK-LABEL: func.func @rows
// CHECK:         %[[CTX:.*]] = memref.alloca() : memref<2xi64>
// CHECK:         %[[A:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK:         %[[AI:.*]] = arith.index_cast %[[A]] : index to i64
// CHECK:         memref.store %[[AI]], %[[CTX]][%{{.*}}]
// CHECK:         %[[B:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK:         %[[BI:.*]] = arith.index_cast %[[B]] : index to i64
// CHECK:         memref.store %[[BI]], %[[CTX]][%{{.*}}]
// CHECK:         %[[P:.*]] = llvm.inttoptr
// CHECK:         %[[FN:.*]] = constant @rows_par0 : (!llvm.ptr, i64, i64) -> ()
// CHECK-DAG:     %[[LO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[HI:.*]] = arith.constant 512 : i64
// CHECK:         call @dsrt_parallel_for(%[[FN]], %[[P]], %[[LO]], %[[HI]])
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK:       func.func private @rows_par0(%[[C:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK-SAME:      ds.kernel_count = 1 : i64
// CHECK:         llvm.getelementptr %[[C]][0]
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<{{.*}}> to memref<512xf32>
// CHECK:         llvm.getelementptr %[[C]][1]
// CHECK:         %[[IN:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<{{.*}}> to memref<512x256xf32>
// CHECK:         %[[LB:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK:         %[[UB:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK:         scf.parallel (%[[I:.*]]) = (%[[LB]]) to (%[[UB]])
// CHECK:           scf.for
// CHECK:             memref.load %[[IN]][%[[I]], %{{.*}}]
// CHECK:             memref.store %{{.*}}, %[[OUT]][%[[I]]]
// SMALL-LABEL: func.func @rows
// SMALL:         scf.parallel
// SMALL-NOT:     dsrt_parallel_for
func.func @rows(%in: memref<512x256xf32>, %out: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %out[%i] : memref<512xf32>
      %x = memref.load %in[%i, %k] : memref<512x256xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %out[%i] : memref<512xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A strided view (a column block) keeps its layout: offset and strides
// come from the type. Only the first dimension is split; the second keeps
// its bounds.
// CHECK-LABEL: func.func @view
// CHECK:         call @dsrt_parallel_for
// CHECK:       func.func private @view_par0
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} to memref<128x256xf32, strided<[512, 1], offset: 256>>
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %c0{{.*}}) to (%{{.*}}, %c256{{.*}})
func.func @view(%v: memref<128x256xf32, strided<[512, 1], offset: 256>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c256) step (%c1, %c1) {
    memref.store %zero, %v[%i, %j] : memref<128x256xf32, strided<[512, 1], offset: 256>>
    scf.reduce
  }
  return
}

// -----

// Under the size threshold (4 x 256 = 1024 iterations): a fork would cost
// more than the nest.
// CHECK-LABEL: func.func @small
// CHECK:         scf.parallel
// CHECK-NOT:     dsrt_parallel_for
func.func @small(%m: memref<4x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c256) step (%c1, %c1) {
    memref.store %zero, %m[%i, %j] : memref<4x256xf32>
    scf.reduce
  }
  return
}

// -----

// A dynamic buffer cannot be rebuilt from its address alone, and a value
// computed above is not a constant: both nests stay serial.
// CHECK-LABEL: func.func @dynamic
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK-NOT:     dsrt_parallel_for
func.func @dynamic(%m: memref<?x256xf32>, %s: memref<512x256xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
    memref.store %zero, %m[%i, %j] : memref<?x256xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
    memref.store %x, %s[%i, %j] : memref<512x256xf32>
    scf.reduce
  }
  return
}
