// RUN: ds-opt %s -split-input-file -verify-diagnostics

// One case per dsdist verifier message (the pipeline schedule's are in
// pipeline_schedule.mlir).

// expected-error @+1 {{unknown attribute 'dsdist.gird'; the dsdist dialect defines 'dsdist.grid' and 'dsdist.pipeline'}}
module attributes {dsdist.gird = #dsdist.grid<dp = 2>} {}

// -----

// expected-error @+1 {{'dsdist.grid' must be a #dsdist.grid<...>, got ["dp"]}}
module attributes {dsdist.grid = ["dp"]} {}

// -----

// expected-error @+1 {{#dsdist.grid needs at least one axis, e.g. #dsdist.grid<dp = 1>}}
module attributes {dsdist.grid = #dsdist.grid<>} {}

// -----

// expected-error @+1 {{#dsdist.grid: unknown axis "xp"; axes are pp, dp, ep, tp and sp}}
module attributes {dsdist.grid = #dsdist.grid<dp = 2, xp = 2>} {}

// -----

// expected-error @+1 {{#dsdist.grid: axis "dp" appears twice}}
module attributes {dsdist.grid = #dsdist.grid<dp = 2, dp = 2>} {}

// -----

// expected-error @+1 {{#dsdist.grid: axis "tp" has size 0 but must be >= 1}}
module attributes {dsdist.grid = #dsdist.grid<dp = 2, tp = 0>} {}

// -----

func.func @no_grid(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.all_reduce' op needs a device grid: add `dsdist.grid = #dsdist.grid<...>` to the module}}
  %0 = dsdist.all_reduce sum %x over ["dp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.all_reduce' op axis "tp" is not on the grid; its axes are pp, dp, ep}}
  %0 = dsdist.all_reduce sum %x over ["tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @empty_group(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.broadcast' op group is empty; name at least one grid axis, e.g. ["dp"]}}
  %0 = dsdist.broadcast %x over [] root 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @axis_twice(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.all_reduce' op group ["dp", "ep", "dp"] lists axis "dp" twice}}
  %0 = dsdist.all_reduce sum %x over ["dp", "ep", "dp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @unknown_reduction(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown reduction 'prod'; expected sum, avg, max or min}}
  %0 = dsdist.all_reduce prod %x over ["dp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_dim_range(%x: tensor<32x256xf32>) -> tensor<32x256xf32> {
  // expected-error @+1 {{'dsdist.all_gather' op dim 2 is out of range for input rank 2}}
  %0 = dsdist.all_gather %x over ["dp"] dim 2 : tensor<32x256xf32> -> tensor<32x256xf32>
  return %0 : tensor<32x256xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_rank(%x: tensor<32x256xf32>) -> tensor<128xf32> {
  // expected-error @+1 {{'dsdist.all_gather' op result rank 1 does not match input rank 2}}
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<128xf32>
  return %0 : tensor<128xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_elt(%x: tensor<32x256xf32>) -> tensor<128x256xbf16> {
  // expected-error @+1 {{'dsdist.all_gather' op result element type 'bf16' does not match input element type 'f32'}}
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<128x256xbf16>
  return %0 : tensor<128x256xbf16>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_size(%x: tensor<32x256xf32>) -> tensor<96x256xf32> {
  // expected-error @+1 {{'dsdist.all_gather' op result dim 0 is 96 but the group ["dp"] of size 4 gathers 4 x 32 = 128}}
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<96x256xf32>
  return %0 : tensor<96x256xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_start_size(%x: tensor<32x256xf32>) {
  // expected-error @+1 {{'dsdist.all_gather_start' op result dim 1 is 256 but the group ["dp", "ep"] of size 8 gathers 8 x 256 = 2048}}
  %h = dsdist.all_gather_start %x over ["dp", "ep"] dim 1 : tensor<32x256xf32> -> !dsdist.handle<tensor<32x256xf32>>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @gather_other_dim(%x: tensor<32x256xf32>) -> tensor<128x128xf32> {
  // expected-error @+1 {{'dsdist.all_gather' op result dim 1 is 128 but must equal input dim 1 (256)}}
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x256xf32> -> tensor<128x128xf32>
  return %0 : tensor<128x128xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @scatter_divides(%x: tensor<30x256xf32>) -> tensor<7x256xf32> {
  // expected-error @+1 {{'dsdist.reduce_scatter' op input dim 0 is 30, which the group ["dp"] of size 4 does not divide}}
  %0 = dsdist.reduce_scatter sum %x over ["dp"] dim 0 : tensor<30x256xf32> -> tensor<7x256xf32>
  return %0 : tensor<7x256xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @scatter_size(%x: tensor<128x256xf32>) -> tensor<16x256xf32> {
  // expected-error @+1 {{'dsdist.reduce_scatter' op result dim 0 is 16 but the group ["dp"] of size 4 scatters 128 / 4 = 32}}
  %0 = dsdist.reduce_scatter sum %x over ["dp"] dim 0 : tensor<128x256xf32> -> tensor<16x256xf32>
  return %0 : tensor<16x256xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @a2a_dim_range(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'dsdist.all_to_all' op concat_dim 3 is out of range for input rank 2}}
  %0 = dsdist.all_to_all %x over ["ep"] split 0 concat 3 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @a2a_divides(%x: tensor<7x4xf32>) -> tensor<7x4xf32> {
  // expected-error @+1 {{'dsdist.all_to_all' op input dim 0 is 7, which the group ["ep"] of size 2 does not divide}}
  %0 = dsdist.all_to_all %x over ["ep"] split 0 concat 0 : tensor<7x4xf32> -> tensor<7x4xf32>
  return %0 : tensor<7x4xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @a2a_same_dim(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dsdist.all_to_all' op result dim 0 is 4 but must equal input dim 0 (8)}}
  %0 = dsdist.all_to_all %x over ["ep"] split 0 concat 0 : tensor<8x4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @a2a_split(%x: tensor<8x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'dsdist.all_to_all' op result dim 0 (split) is 8 but the group ["ep"] of size 2 splits it into 8 / 2 = 4}}
  %0 = dsdist.all_to_all %x over ["ep"] split 0 concat 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @a2a_concat(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'dsdist.all_to_all_start' op result dim 1 (concat) is 4 but the group ["ep"] of size 2 concatenates 2 x 4 = 8}}
  %h = dsdist.all_to_all_start %x over ["ep"] split 0 concat 1 : tensor<8x4xf32> -> !dsdist.handle<tensor<4x4xf32>>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @root(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.broadcast' op root 4 is out of range for the group ["dp"] of size 4; it is a rank within the group}}
  %0 = dsdist.broadcast %x over ["dp"] root 4 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @offset_zero(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dsdist.send' op offset is 0; the peer must be another rank}}
  dsdist.send %x to "pp" offset 0 : tensor<8xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @offset_range() -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.recv' op offset -2 is out of range for axis "pp" of size 2; |offset| must be < 2}}
  %0 = dsdist.recv from "pp" offset -2 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @peer_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dsdist.send_start' op axis "tp" is not on the grid; its axes are pp, dp, ep}}
  %h = dsdist.send_start %x to "tp" offset 1 : tensor<8xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @wait_missing_result() {
  %h = dsdist.recv_start from "pp" offset 1 : !dsdist.handle<tensor<8xf32>>
  // expected-error @+1 {{'dsdist.wait' op the handle delivers 'tensor<8xf32>'; wait must return it}}
  dsdist.wait %h : !dsdist.handle<tensor<8xf32>>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @wait_send(%x: tensor<8xf32>) {
  %h = dsdist.send_start %x to "pp" offset 1 : tensor<8xf32>
  // expected-error @+1 {{'dsdist.wait' op the handle delivers nothing (a send); wait has no result}}
  %0 = dsdist.wait %h : !dsdist.handle -> tensor<8xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @wait_type(%x: tensor<8xf32>) {
  %h = dsdist.all_reduce_start sum %x over ["dp"] : tensor<8xf32>
  // expected-error @+1 {{'dsdist.wait' op result type 'tensor<4xf32>' does not match the handle's tensor type 'tensor<8xf32>'}}
  %0 = dsdist.wait %h : !dsdist.handle<tensor<8xf32>> -> tensor<4xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @tokens_rank(%t: tensor<16x2x64xf32>, %m: tensor<16x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_dispatch' op tokens must be rank 2 [S, M], got rank 3}}
  %0 = dsdist.moe_dispatch %t, %m : tensor<16x2x64xf32>, tensor<16x4x8xf32> -> tensor<4x8x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @mask_rank(%t: tensor<16x64xf32>, %m: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsdist.moe_dispatch' op mask must be rank 3 [S, E, C], got rank 2}}
  %0 = dsdist.moe_dispatch %t, %m : tensor<16x64xf32>, tensor<16x4xf32> -> tensor<4x8x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @mask_s(%t: tensor<16x64xf32>, %m: tensor<8x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_dispatch' op mask dim 0 (S) is 8 but tokens dim 0 (S) is 16}}
  %0 = dsdist.moe_dispatch %t, %m : tensor<16x64xf32>, tensor<8x4x8xf32> -> tensor<4x8x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @mask_type(%t: tensor<16x64xf32>, %m: tensor<16x4x8xf16>) {
  // expected-error @+1 {{'dsdist.moe_dispatch' op mask element type 'f16' does not match tokens element type 'f32'}}
  %0 = dsdist.moe_dispatch %t, %m : tensor<16x64xf32>, tensor<16x4x8xf16> -> tensor<4x8x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @dispatch_shape(%t: tensor<16x64xf32>, %m: tensor<16x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_dispatch' op result shape [4, 64, 8] does not match [E, C, M] = [4, 8, 64] (from mask [S, E, C] and tokens [S, M])}}
  %0 = dsdist.moe_dispatch %t, %m : tensor<16x64xf32>, tensor<16x4x8xf32> -> tensor<4x64x8xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @expert_rank(%e: tensor<4x64xf32>, %w: tensor<16x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_combine' op expert_out must be rank 3 [E, C, M], got rank 2}}
  %0 = dsdist.moe_combine %e, %w : tensor<4x64xf32>, tensor<16x4x8xf32> -> tensor<16x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @weights_rank(%e: tensor<4x8x64xf32>, %w: tensor<16x32xf32>) {
  // expected-error @+1 {{'dsdist.moe_combine' op weights must be rank 3 [S, E, C], got rank 2}}
  %0 = dsdist.moe_combine %e, %w : tensor<4x8x64xf32>, tensor<16x32xf32> -> tensor<16x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @weights_shape(%e: tensor<4x8x64xf32>, %w: tensor<16x8x4xf32>) {
  // expected-error @+1 {{'dsdist.moe_combine' op weights shape [16, 8, 4] must be [S, 4, 8] (E and C from expert_out)}}
  %0 = dsdist.moe_combine %e, %w : tensor<4x8x64xf32>, tensor<16x8x4xf32> -> tensor<16x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @result_type(%e: tensor<4x8x64xf32>, %w: tensor<16x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_combine' op result element type 'bf16' does not match expert_out element type 'f32'}}
  %0 = dsdist.moe_combine %e, %w : tensor<4x8x64xf32>, tensor<16x4x8xf32> -> tensor<16x64xbf16>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4, ep = 2>} {
func.func @combine_shape(%e: tensor<4x8x64xf32>, %w: tensor<16x4x8xf32>) {
  // expected-error @+1 {{'dsdist.moe_combine' op result shape [8, 64] does not match [S, M] = [16, 64] (from weights [S, E, C] and expert_out [E, C, M])}}
  %0 = dsdist.moe_combine %e, %w : tensor<4x8x64xf32>, tensor<16x4x8xf32> -> tensor<8x64xf32>
  return
}
}

// -----

module attributes {dsdist.grid = #dsdist.grid<dp = 4>} {
func.func @copy_unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsdist.copy_to_group' op axis "tp" is not on the grid; its axes are dp}}
  %0 = dsdist.copy_to_group %x over ["tp"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

// expected-error @+1 {{argument #0: tensor_shard dim 2 is out of range for its shape of rank 2}}
func.func @shard_dim(%w: tensor<8x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 2, blocks = 1, shape = [16, 16]>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: tensor_shard dim 0 of size 16 is not 3 equal blocks}}
func.func @shard_blocks(%w: tensor<8x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [16, 16]>}) {
  return
}
