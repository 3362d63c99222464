// REQUIRES: mpi
//
// Every lowered collective, blocking and asynchronous, run on two ranks.
// The ranks start from the same constant and `dsdist.shard` gives each its
// own slice, so every expected value below is worked out by hand from
// x = [1, 2, 3, 4, 5, 6] (rank 0 holds [1, 2, 3], rank 1 [4, 5, 6]).
// RUN: ds-launch --num_procs 2 -- sh -c 'ds-run %s --entry main --grid 2 --print > %t.rank$OMPI_COMM_WORLD_RANK'
// RUN: FileCheck %s --check-prefix=R0 < %t.rank0
// RUN: FileCheck %s --check-prefix=R1 < %t.rank1
// RUN: ds-opt %s --ds-lower-to-llvm | FileCheck %s --check-prefix=CALLS

// CALLS-DAG: call @dsrt_all_gather(
// CALLS-DAG: call @dsrt_all_reduce(
// CALLS-DAG: call @dsrt_reduce_scatter(
// CALLS-DAG: call @dsrt_broadcast(
// CALLS-DAG: call @dsrt_all_to_all(
// CALLS-DAG: call @dsrt_all_reduce_start(
// CALLS-DAG: call @dsrt_reduce_scatter_start(
// CALLS-DAG: call @dsrt_all_gather_start(
// CALLS-DAG: call @dsrt_wait(

// R0: result 0: tensor<6xf32> = [1, 2, 3, 4, 5, 6]
// R1: result 0: tensor<6xf32> = [1, 2, 3, 4, 5, 6]
// all_reduce sum: [1,2,3] + [4,5,6].
// R0: result 1: tensor<3xf32> = [5, 7, 9]
// R1: result 1: tensor<3xf32> = [5, 7, 9]
// reduce_scatter max of equal operands: each rank's slice of x.
// R0: result 2: tensor<3xf32> = [1, 2, 3]
// R1: result 2: tensor<3xf32> = [4, 5, 6]
// broadcast from rank 1.
// R0: result 3: tensor<3xf32> = [4, 5, 6]
// R1: result 3: tensor<3xf32> = [4, 5, 6]
// reduce_scatter_start sum: twice each rank's slice.
// R0: result 4: tensor<3xf32> = [2, 4, 6]
// R1: result 4: tensor<3xf32> = [8, 10, 12]
// all_reduce_start avg.
// R0: result 5: tensor<3xf32> = [2.5, 3.5, 4.5]
// R1: result 5: tensor<3xf32> = [2.5, 3.5, 4.5]
// R0: result 6: tensor<3xf32> = [1, 2, 3]
// R1: result 6: tensor<3xf32> = [4, 5, 6]
// R0: result 7: tensor<6xf32> = [1, 2, 3, 4, 5, 6]
// R1: result 7: tensor<6xf32> = [1, 2, 3, 4, 5, 6]
// all_to_all: rank r receives block r of every rank: [x_r, x_r].
// R0: result 8: tensor<3xf32> = [1, 2, 3]
// R1: result 8: tensor<3xf32> = [4, 5, 6]

module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @main() -> (tensor<6xf32>, tensor<3xf32>, tensor<3xf32>,
                        tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
                        tensor<3xf32>, tensor<6xf32>, tensor<3xf32>) {
    %x = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
    %mine = dsdist.shard %x over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
    // Blocking.
    %ag = dsdist.all_gather %mine over ["dp"] dim 0 : tensor<3xf32> -> tensor<6xf32>
    %ar = dsdist.all_reduce sum %mine over ["dp"] : tensor<3xf32>
    %rs = dsdist.reduce_scatter max %x over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
    %rev = dsdist.shard %x over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
    %bc = dsdist.broadcast %rev over ["dp"] root 1 : tensor<3xf32>
    // Asynchronous: started together, waited in the other order.
    %h1 = dsdist.all_reduce_start avg %mine over ["dp"] : tensor<3xf32>
    %h2 = dsdist.reduce_scatter_start sum %x over ["dp"] dim 0 : tensor<6xf32> -> !dsdist.handle<tensor<3xf32>>
    %h3 = dsdist.all_gather_start %mine over ["dp"] dim 0 : tensor<3xf32> -> !dsdist.handle<tensor<6xf32>>
    %ag2 = dsdist.wait %h3 : !dsdist.handle<tensor<6xf32>> -> tensor<6xf32>
    %rs2 = dsdist.wait %h2 : !dsdist.handle<tensor<3xf32>> -> tensor<3xf32>
    %av = dsdist.wait %h1 : !dsdist.handle<tensor<3xf32>> -> tensor<3xf32>
    // All-to-all with equal split and concat dims swaps the halves' halves.
    %a2a = dsdist.all_to_all %x over ["dp"] split 0 concat 0 : tensor<6xf32> -> tensor<6xf32>
    %a2a_mine = dsdist.shard %a2a over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
    return %ag, %ar, %rs, %bc, %rs2, %av, %mine, %ag2, %a2a_mine
        : tensor<6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
          tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6xf32>, tensor<3xf32>
  }
}
