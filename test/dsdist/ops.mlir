// RUN: ds-opt %s | ds-opt | FileCheck %s
// RUN: ds-opt %s --mlir-print-op-generic | ds-opt | FileCheck %s

// CHECK: module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2, tp = 1>}
module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2, tp = 1>} {

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<32x256xf32>, %big: tensor<128x256xf32>)
    -> (tensor<128x256xf32>, tensor<32x256xf32>, tensor<32x256xf32>,
        tensor<32x256xf32>, tensor<16x512xf32>, tensor<32x256xf32>) {
  // CHECK: dsdist.all_gather %{{.*}} over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<128x256xf32>
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<128x256xf32>
  // CHECK: dsdist.reduce_scatter sum %{{.*}} over ["dp"] dim 0 : tensor<128x256xf32> -> tensor<32x256xf32>
  %1 = dsdist.reduce_scatter sum %big over ["dp"] dim 0 : tensor<128x256xf32> -> tensor<32x256xf32>
  // CHECK: dsdist.all_reduce avg %{{.*}} over ["dp", "ep"] : tensor<32x256xf32>
  %2 = dsdist.all_reduce avg %x over ["dp", "ep"] : tensor<32x256xf32>
  // CHECK: dsdist.all_reduce max
  %3 = dsdist.all_reduce max %2 over ["pp"] : tensor<32x256xf32>
  // CHECK: dsdist.all_to_all %{{.*}} over ["ep"] split 0 concat 1 : tensor<32x256xf32> -> tensor<16x512xf32>
  %4 = dsdist.all_to_all %x over ["ep"] split 0 concat 1 : tensor<32x256xf32> -> tensor<16x512xf32>
  // CHECK: dsdist.broadcast %{{.*}} over ["dp"] root 3 : tensor<32x256xf32>
  %5 = dsdist.broadcast %x over ["dp"] root 3 : tensor<32x256xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<128x256xf32>, tensor<32x256xf32>, tensor<32x256xf32>,
                                 tensor<32x256xf32>, tensor<16x512xf32>, tensor<32x256xf32>
}

// CHECK-LABEL: func @async
func.func @async(%x: tensor<32x256xf32>) -> tensor<128x256xf32> {
  // CHECK: %[[H:.*]] = dsdist.all_gather_start %{{.*}} over ["dp"] dim 0 : tensor<32x256xf32> -> !dsdist.handle<tensor<128x256xf32>>
  %h = dsdist.all_gather_start %x over ["dp"] dim 0 : tensor<32x256xf32> -> !dsdist.handle<tensor<128x256xf32>>
  // CHECK: dsdist.reduce_scatter_start min %{{.*}} over ["ep"] dim 1 : tensor<32x256xf32> -> !dsdist.handle<tensor<32x128xf32>>
  %h1 = dsdist.reduce_scatter_start min %x over ["ep"] dim 1 : tensor<32x256xf32> -> !dsdist.handle<tensor<32x128xf32>>
  // CHECK: dsdist.all_reduce_start sum %{{.*}} over ["dp"] : tensor<32x256xf32>
  %h2 = dsdist.all_reduce_start sum %x over ["dp"] : tensor<32x256xf32>
  // CHECK: dsdist.all_to_all_start %{{.*}} over ["ep"] split 1 concat 1 : tensor<32x256xf32> -> !dsdist.handle<tensor<32x256xf32>>
  %h3 = dsdist.all_to_all_start %x over ["ep"] split 1 concat 1 : tensor<32x256xf32> -> !dsdist.handle<tensor<32x256xf32>>
  // CHECK: dsdist.broadcast_start %{{.*}} over ["dp"] root 0 : tensor<32x256xf32>
  %h4 = dsdist.broadcast_start %x over ["dp"] root 0 : tensor<32x256xf32>
  // CHECK: dsdist.wait %{{.*}} : !dsdist.handle<tensor<32x128xf32>> -> tensor<32x128xf32>
  %r1 = dsdist.wait %h1 : !dsdist.handle<tensor<32x128xf32>> -> tensor<32x128xf32>
  %r2 = dsdist.wait %h2 : !dsdist.handle<tensor<32x256xf32>> -> tensor<32x256xf32>
  %r3 = dsdist.wait %h3 : !dsdist.handle<tensor<32x256xf32>> -> tensor<32x256xf32>
  %r4 = dsdist.wait %h4 : !dsdist.handle<tensor<32x256xf32>> -> tensor<32x256xf32>
  // CHECK: %[[W:.*]] = dsdist.wait %[[H]] : !dsdist.handle<tensor<128x256xf32>> -> tensor<128x256xf32>
  %w = dsdist.wait %h : !dsdist.handle<tensor<128x256xf32>> -> tensor<128x256xf32>
  // CHECK: dsdist.release %[[W]] : tensor<128x256xf32>
  dsdist.release %w : tensor<128x256xf32>
  return %w : tensor<128x256xf32>
}

// CHECK-LABEL: func @p2p
func.func @p2p(%act: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: dsdist.send %{{.*}} to "pp" offset 1 : tensor<4x16xf32>
  dsdist.send %act to "pp" offset 1 : tensor<4x16xf32>
  // CHECK: dsdist.recv from "pp" offset -1 : tensor<4x16xf32>
  %r = dsdist.recv from "pp" offset -1 : tensor<4x16xf32>
  // CHECK: %[[S:.*]] = dsdist.send_start %{{.*}} to "dp" offset 3 : tensor<4x16xf32>
  %s = dsdist.send_start %r to "dp" offset 3 : tensor<4x16xf32>
  // CHECK: dsdist.recv_start from "dp" offset -3 : !dsdist.handle<tensor<4x16xf32>>
  %h = dsdist.recv_start from "dp" offset -3 : !dsdist.handle<tensor<4x16xf32>>
  // CHECK: dsdist.wait %[[S]] : !dsdist.handle{{$}}
  dsdist.wait %s : !dsdist.handle
  %t = dsdist.wait %h : !dsdist.handle<tensor<4x16xf32>> -> tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}

// CHECK-LABEL: func @moe
func.func @moe(%tokens: tensor<16x64xf32>, %mask: tensor<16x4x8xf32>)
    -> tensor<16x64xf32> {
  // CHECK: dsdist.moe_dispatch %{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<16x4x8xf32> -> tensor<4x8x64xf32>
  %d = dsdist.moe_dispatch %tokens, %mask : tensor<16x64xf32>, tensor<16x4x8xf32> -> tensor<4x8x64xf32>
  %e = dsdist.all_to_all %d over ["ep"] split 0 concat 0 : tensor<4x8x64xf32> -> tensor<4x8x64xf32>
  // CHECK: dsdist.moe_combine %{{.*}}, %{{.*}} : tensor<4x8x64xf32>, tensor<16x4x8xf32> -> tensor<16x64xf32>
  %y = dsdist.moe_combine %e, %mask : tensor<4x8x64xf32>, tensor<16x4x8xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// CHECK:       dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
// CHECK-NEXT:    stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
// CHECK-NEXT:    stage 1: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
// CHECK-NEXT:  }
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

// Tensor parallelism's f and a parameter piece.
// CHECK-LABEL: func @tensor_parallel
// CHECK-SAME: {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48, 16]>}
// CHECK: dsdist.copy_to_group %{{.*}} over ["tp"] : tensor<2x16xf32>
func.func @tensor_parallel(%w: tensor<24x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48, 16]>},
                           %x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = dsdist.copy_to_group %x over ["tp"] : tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// The attribute forms, outside an op.
// CHECK-LABEL: func @attrs
// CHECK-SAME: test.instr = #dsdist.instr<forward(mb = 2, buf = 1)>
// CHECK-SAME: test.kind = #dsdist<reduction avg>
// CHECK-SAME: test.step = #dsdist.instr<optimizer_step>
func.func @attrs() attributes {test.instr = #dsdist.instr<forward(mb = 2, buf = 1)>,
                               test.step = #dsdist.instr<optimizer_step>,
                               test.kind = #dsdist<reduction avg>} {
  return
}

}
