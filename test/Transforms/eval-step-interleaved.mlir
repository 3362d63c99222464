// RUN: ds-opt %s --ds-eval-step | FileCheck %s

// An interleaved stage (stage 1 of 2, chunks 1 and 3 of the model's 4):
// its chunks are chained, each chunk's pipe input received from the stage
// before on the ring, chunk 1's output sent on, chunk 3 returning the
// loss. The arguments are the chunks' union.
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME:      %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1"
// CHECK-SAME:      %[[W3:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w3"
// CHECK-SAME:      %[[T:[^:]*]]: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32>
// CHECK-NEXT:    %[[IN1:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// CHECK-NEXT:    %[[H1:.*]] = dsnn.linear %[[IN1]], %[[W1]]
// CHECK-NEXT:    dsdist.send %[[H1]] to "pp" offset 1
// CHECK-NEXT:    %[[IN3:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// CHECK-NEXT:    %[[H3:.*]] = dsnn.linear %[[IN3]], %[[W3]]
// CHECK-NEXT:    %[[L:.*]] = dsnn.mse_loss %[[H3]], %[[T]]
// CHECK-NEXT:    return %[[L]] : tensor<f32>
module attributes {dsdist.grid = #dsdist.grid<pp = 2>, dsdist.pipeline = {shared = {}, stage = 1 : i64, stages = 2 : i64, virtual_stages = 2 : i64}} {
  func.func @forward_chunk0(
      %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = zeros>},
      %x: tensor<2x4xf32> {dsdist.pipe_input = 0 : i64}) -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64}) {
    %h = dsnn.linear %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %h : tensor<2x4xf32>
  }
  func.func @forward_chunk1(
      %w3: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w3", init = zeros>},
      %x: tensor<2x4xf32> {dsdist.pipe_input = 0 : i64},
      %t: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
    %h = dsnn.linear %x, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %loss = dsnn.mse_loss %h, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
