// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/bf16-zero3.json world-size=2' | FileCheck %s --implicit-check-not='all_gather {{.*}}xf32>'

// bf16 with ZeRO-3 on two ranks: a parameter is read only through its bf16
// cast, and casting commutes with gathering, so every gather moves bf16
// chunks (half the bytes) in the forward and again in the backward (the
// cast is recomputed there, not saved from the forward), and the gathered
// copy is released after its last use. (overlap_comm is off: the blocking
// collectives as ds-zero makes them; ds-schedule-comm is tested on its own.)
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      %[[WTE:[^:]*]]: tensor<512xf32> {dsdist.sharding
// CHECK:         %[[C:.*]] = dsnn.cast %[[WTE]] : tensor<512xf32> -> tensor<512xbf16>
// CHECK-NEXT:    %[[G:.*]] = dsdist.all_gather %[[C]] over ["dp"] dim 0 {phase = "forward"} : tensor<512xbf16> -> tensor<1024xbf16>
// CHECK-NEXT:    %[[W:.*]] = tensor.expand_shape %[[G]] {{.*}} : tensor<1024xbf16> into tensor<64x16xbf16>
// CHECK:         dsnn.embedding %{{.*}}, %[[W]]
// CHECK:         dsdist.release %[[W]]
// CHECK:         dsdist.all_gather {{.*}} {phase = "backward"} : tensor<{{[0-9]+}}xbf16>
// CHECK:         dsnn.layer "h.1.backward"
// CHECK-LABEL: func.func @train_step(
