// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/adamw-clip.json' --ds-lower-nn-to-linalg --ds-lower-train-to-linalg=optimizer-kernels=false | FileCheck %s --check-prefix=ADAMW --implicit-check-not="= dsnn." --implicit-check-not=dsnn.yield --implicit-check-not="= dstrain."
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/lamb-onecycle.json' --ds-lower-nn-to-linalg --ds-lower-train-to-linalg=optimizer-kernels=false | FileCheck %s --check-prefix=LAMB --implicit-check-not="= dsnn." --implicit-check-not=dsnn.yield --implicit-check-not="= dstrain."
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/sgd-cosine.json' --ds-lower-nn-to-linalg --ds-lower-train-to-linalg=optimizer-kernels=false | FileCheck %s --check-prefix=SGD --implicit-check-not="= dsnn." --implicit-check-not=dsnn.yield --implicit-check-not="= dstrain."

// The whole training step of the example model lowers: no dsnn or dstrain
// op is left. gpt-tiny has 28 parameters, so 28 optimizer updates, each one
// generic updating parameter and state in place (outs are the arguments).

// ADAMW-LABEL: func.func @train_step
// The LR schedule (WarmupDecayLR), the global norm and the clip coefficient.
// ADAMW:         arith.truncf %{{.*}} : f64 to f32
// ADAMW:         math.sqrt %{{.*}} : f32
// ADAMW:         arith.minimumf
// ADAMW-COUNT-28: linalg.generic {{.*}} outs(%arg{{[0-9]+}}, %arg{{[0-9]+}}, %arg{{[0-9]+}} :
// ADAMW-NOT:     linalg.generic
// ADAMW:         return

// LAMB-LABEL: func.func @train_step
// LAMB:         math.floor
// LAMB-COUNT-28: iterator_types = ["reduction"{{.*}}outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// LAMB:         return

// Without gradient_clipping the norm is still measured and returned.
// SGD-LABEL: func.func @train_step
// SGD:         math.cos
// SGD:         math.sqrt %{{.*}} : f32
// SGD-COUNT-28: linalg.generic {{.*}} outs(%arg{{[0-9]+}}, %arg{{[0-9]+}} :
// SGD-NOT:     linalg.generic
// SGD:         return
