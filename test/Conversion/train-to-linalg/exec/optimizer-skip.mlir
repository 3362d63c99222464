// RUN: ds-opt %s --ds-lower-train-to-linalg=optimizer-kernels=false %lower-to-llvm | %mlir-runner | %allclose %s
// RUN: ds-opt %s --ds-lower-train-to-linalg --ds-lower-to-llvm=workspaces-at-load=false | %dsrt-runner | %allclose %s

// A skipped step (fp16 overflow) leaves parameters and state exactly as
// they were; an applied one is step 1 of Adam (m̂ = g, v̂ = g², so
// p - lr·g/(|g| + eps)) and of SGD with momentum (buf = g, p - lr·g).
// Both paths: linalg loops and the libdsrt kernels.

func.func @step(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>,
                %q: tensor<4xf32>, %b: tensor<4xf32>, %skip: tensor<i1>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = arith.constant dense<1> : tensor<i64>
  %lr = arith.constant dense<0.1> : tensor<f32>
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr skip %skip : tensor<4xf32>, tensor<4xf32>
  %q1, %b1 = dstrain.sgd %q, %g, %b step %t lr %lr skip %skip {momentum = 0.9 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p1, %m1, %v1, %q1, %b1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func @print(%x: tensor<4xf32>) {
  %u = tensor.cast %x : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %p = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %g = arith.constant dense<[0.5, -0.5, 1.0, -2.0]> : tensor<4xf32>
  %m = arith.constant dense<[0.25, 0.5, 0.75, 1.0]> : tensor<4xf32>
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %yes = arith.constant dense<true> : tensor<i1>
  %no = arith.constant dense<false> : tensor<i1>
  %s:5 = func.call @step(%p, %g, %m, %m, %p, %m, %yes) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  func.call @print(%s#0) : (tensor<4xf32>) -> ()
  func.call @print(%s#1) : (tensor<4xf32>) -> ()
  func.call @print(%s#2) : (tensor<4xf32>) -> ()
  func.call @print(%s#3) : (tensor<4xf32>) -> ()
  func.call @print(%s#4) : (tensor<4xf32>) -> ()
  %a:5 = func.call @step(%p, %g, %z, %z, %p, %z, %no) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  func.call @print(%a#0) : (tensor<4xf32>) -> ()
  func.call @print(%a#1) : (tensor<4xf32>) -> ()
  func.call @print(%a#2) : (tensor<4xf32>) -> ()
  func.call @print(%a#3) : (tensor<4xf32>) -> ()
  func.call @print(%a#4) : (tensor<4xf32>) -> ()
  return
}

// TOLERANCE: 1e-6 1e-7
// Skipped: every output is its input.
// EXPECT: 1 2 3 4
// EXPECT: 0.25 0.5 0.75 1
// EXPECT: 0.25 0.5 0.75 1
// EXPECT: 1 2 3 4
// EXPECT: 0.25 0.5 0.75 1
// Applied.
// EXPECT: 0.9 2.1 2.9 4.1
// EXPECT: 0.05 -0.05 0.1 -0.2
// EXPECT: 0.00025 0.00025 0.001 0.004
// EXPECT: 0.95 2.05 2.9 4.2
// EXPECT: 0.5 -0.5 1 -2
