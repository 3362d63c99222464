// RUN: ds-opt %s --ds-lower-nn-to-linalg='attention-block-size=4 attention-block-threshold=8' --split-input-file | FileCheck %s --implicit-check-not="= dsnn." --implicit-check-not="x10x10xf32>"

// Past the threshold: an scf.for over the two whole query blocks, each an
// scf.for over key blocks up to its own diagonal block (causal) carrying the
// row max, row sum and output, rescaled by exp(m_old - m_new), then out /
// sum written into the query block's rows. The last two queries are one
// more block after the loop, over every key block and the last two keys.
// No [Tq, Tk] tensor anywhere.
// CHECK-LABEL: func @attention_blocked
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK:         scf.for %[[I:[a-z0-9_]+]] = %[[C0]] to %[[C8]] step %[[C4]] iter_args(%[[OUT:[a-z0-9_]+]] = %{{.*}}) -> (tensor<8x10x4xf32>)
// CHECK:           %[[DIAG:.*]] = arith.addi %[[I]], %[[C4]] : index
// CHECK:           %[[QB:.*]] = tensor.extract_slice %{{.*}}[0, %[[I]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:           scf.for %[[J:[a-z0-9_]+]] = %[[C0]] to %[[DIAG]] step %[[C4]] iter_args({{.*}}) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4x4xf32>)
// CHECK:             %[[KB:.*]] = tensor.extract_slice %{{.*}}[0, %[[J]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:             linalg.batch_matmul {{.*}} ins(%[[QB]], %[[KB]] : tensor<8x4x4xf32>, tensor<8x4x4xf32>) outs(%{{.*}} : tensor<8x4x4xf32>)
// CHECK:               %[[QPOS:.*]] = arith.addi %{{.*}}, %[[I]] : index
// CHECK:               %[[KPOS:.*]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK:               arith.cmpi ugt, %[[KPOS]], %[[QPOS]]
// CHECK:               arith.maximumf
// CHECK:               math.exp
// CHECK:               math.exp
// CHECK:             linalg.batch_matmul
// CHECK:             scf.yield
// CHECK:             arith.divf
// CHECK:           tensor.insert_slice %{{.*}} into %[[OUT]][0, %[[I]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[0, 8, 0] [8, 2, 4] [1, 1, 1] : tensor<8x10x4xf32> to tensor<8x2x4xf32>
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C8]] step %[[C4]] {{.*}} -> (tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2x4xf32>)
// CHECK:         linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<8x2x2xf32>)
// CHECK:         tensor.insert_slice %{{.*}}[0, 8, 0] [8, 2, 4] [1, 1, 1] : tensor<8x2x4xf32> into tensor<8x10x4xf32>
func.func @attention_blocked(%q: tensor<2x4x10x4xf32>, %k: tensor<2x4x10x4xf32>, %v: tensor<2x4x10x4xf32>) -> tensor<2x4x10x4xf32> {
  %o = dsnn.attention %q, %k, %v {causal} : tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32> -> tensor<2x4x10x4xf32>
  return %o : tensor<2x4x10x4xf32>
}

// -----

// The gradient runs the forward's blocks for the output and the
// logsumexp, then loops over key blocks; each loops over the query blocks
// from its own (causal: the earlier ones see none of its keys), carrying
// dQ and the key block's dK and dV, which are then written whole.
// CHECK-LABEL: func @attention_grad_blocked
// CHECK:         math.log
// CHECK:         %[[R:.*]]:3 = scf.for %[[J:[a-z0-9_]+]] = {{.*}} -> (tensor<8x10x4xf32>, tensor<8x10x4xf32>, tensor<8x10x4xf32>)
// CHECK:           scf.for %[[I:[a-z0-9_]+]] = %[[J]] to %{{.*}} -> (tensor<8x10x4xf32>, tensor<8x4x4xf32>, tensor<8x4x4xf32>)
// CHECK:             math.exp
// CHECK:             tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[I]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:             scf.yield
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[J]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[J]], 0] [8, 4, 4] [1, 1, 1]
// CHECK:           scf.yield
// CHECK:         tensor.insert_slice %{{.*}} into %[[R]]#1[0, 8, 0] [8, 2, 4] [1, 1, 1]
func.func @attention_grad_blocked(%q: tensor<2x4x10x4xf32>, %k: tensor<2x4x10x4xf32>, %v: tensor<2x4x10x4xf32>, %do: tensor<2x4x10x4xf32>) -> (tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>) {
  %dq, %dk, %dv = dsnn.attention_grad %q, %k, %v, %do {causal} : tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>
  return %dq, %dk, %dv : tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>, tensor<2x4x10x4xf32>
}

// -----

// At the threshold the probabilities are materialized as before.
// CHECK-LABEL: func @attention_short
// CHECK-NOT:     scf.for
// CHECK:         linalg.batch_matmul {{.*}} -> tensor<8x8x8xf32>
func.func @attention_short(%q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x4xf32>) -> tensor<2x4x8x4xf32> {
  %o = dsnn.attention %q, %k, %v {causal} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  return %o : tensor<2x4x8x4xf32>
}

// -----

// A negative block size is an error, not "never".
// RUN: not ds-opt %s --ds-lower-nn-to-linalg='attention-block-size=-1' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: attention-block-size is -1 but must be 0 (never block) or positive
