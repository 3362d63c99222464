// ds-run's file interface: .npy in and out, --expect, and its errors.
// RUN: rm -rf %t && mkdir -p %t
// Write the two constant inputs of @make as .npy, feed them to @add, and
// check the sum both printed and against a .txt of expected values.
// RUN: ds-run %s --entry make --outputs %t/in_%d.npy
// RUN: ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --outputs %t/sum.npy --print | FileCheck %s
// RUN: echo "11 22.5 -3 # row 0" > %t/want.txt && echo "4 5 6.25" >> %t/want.txt
// RUN: ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --expect %t/want.txt
// RUN: ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --expect %t/sum.npy --atol 0 --rtol 0
// A wrong expectation fails and says where.
// RUN: echo "11 22.5 -3 4 5 7" > %t/bad.txt
// RUN: not ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --expect %t/bad.txt 2>&1 | FileCheck %s --check-prefix=MISMATCH
// Wrong input shape, unknown function, missing file: one clear line each.
// RUN: not ds-run %s --entry add --inputs %t/in_0.npy,%t/sum.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not ds-run %s --entry nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not ds-run %s --entry add --inputs %t/missing.npy,%t/in_1.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// An explicit pre-pipeline, with or without the builtin.module anchor.
// RUN: ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --pre-pipeline='builtin.module(canonicalize)' --expect %t/sum.npy
// RUN: ds-run %s --entry add --inputs %t/in_0.npy,%t/in_1.npy --pre-pipeline=canonicalize,cse --expect %t/sum.npy
// Timing prints one JSON line.
// RUN: ds-run %s --entry add --random-inputs 3 --repeat 5 --time | FileCheck %s --check-prefix=TIME

// CHECK: result 0: tensor<2x3xf32> = {{\[\[}}11, 22.5, -3],
// CHECK-NEXT: [4, 5, 6.25]]
// MISMATCH: ds-run: result 0 does not match {{.*}}bad.txt: 1 of 6 elements differ; worst at flat index 5: got 6.25, expected 7
// SHAPE: ds-run: error: @add: input 1 is tensor<2x3xf32> but the function takes tensor<3xf32>
// ENTRY: ds-run: error: no function @nope (the module has @make, @add)
// MISSING: ds-run: error: {{.*}}missing.npy: cannot read: No such file or directory
// TIME: {"entry": "add", "calls": 5, "ms_per_call": {{[0-9.e+-]+}}, "blas_core": "{{[A-Za-z0-9_]+}}"}

func.func @make() -> (tensor<2x3xf32>, tensor<3xf32>) {
  %a = arith.constant dense<[[1.0, 2.5, -4.0], [-6.0, -15.0, 5.25]]> : tensor<2x3xf32>
  %b = arith.constant dense<[10.0, 20.0, 1.0]> : tensor<3xf32>
  return %a, %b : tensor<2x3xf32>, tensor<3xf32>
}

func.func @add(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
