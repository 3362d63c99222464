// RUN: ds-opt %s --ds-expand-bf16-casts | FileCheck %s --implicit-check-not=arith.truncf --implicit-check-not=arith.extf

// Round to nearest even through i32: bias 0x7FFF plus the lowest kept bit,
// then the high half; NaN stays a quiet NaN.
// CHECK-LABEL: func @narrow
// CHECK-DAG:     %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-DAG:     %[[BIAS:.*]] = arith.constant 32767 : i32
// CHECK:         %[[ISNAN:.*]] = arith.cmpf une, %arg0, %arg0 : f32
// CHECK:         %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK:         %[[LOW:.*]] = arith.shrui %[[BITS]]
// CHECK:         %[[ODD:.*]] = arith.andi %[[LOW]]
// CHECK:         %[[RND:.*]] = arith.addi %[[ODD]], %[[BIAS]]
// CHECK:         %[[SUM:.*]] = arith.addi %[[BITS]], %[[RND]]
// CHECK:         %[[HIGH:.*]] = arith.shrui %[[SUM]]
// CHECK:         %[[H:.*]] = arith.trunci %[[HIGH]] : i32 to i16
// CHECK:         %[[SEL:.*]] = arith.select %[[ISNAN]], %[[QNAN]], %[[H]] : i16
// CHECK:         arith.bitcast %[[SEL]] : i16 to bf16
func.func @narrow(%x: f32) -> bf16 {
  %h = arith.truncf %x : f32 to bf16
  return %h : bf16
}

// Widening is a shift into the high half, on vectors too.
// CHECK-LABEL: func @widen
// CHECK:         arith.bitcast %{{.*}} : vector<8xbf16> to vector<8xi16>
// CHECK:         arith.extui %{{.*}} : vector<8xi16> to vector<8xi32>
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
func.func @widen(%h: vector<8xbf16>) -> vector<8xf32> {
  %x = arith.extf %h : vector<8xbf16> to vector<8xf32>
  return %x : vector<8xf32>
}

// Other widths are left to LLVM.
// CHECK-LABEL: func @f16_untouched
// CHECK:         %{{.*}} = arith.truncf %{{.*}} : f32 to f16
func.func @f16_untouched(%x: f32) -> f16 {
  %h = arith.truncf %x : f32 to f16
  return %h : f16
}
