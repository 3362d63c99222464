// dsnn.linear_cross_entropy in row chunks equals the materialized LM head
// and loss (dsnn.linear, dsnn.cross_entropy and their gradients) within
// 1e-6 of each result's largest magnitude in f32, for 45 rows in chunks of
// 8 (5 whole chunks and 5 more rows) and in one chunk; and it is the same
// bits from run to run.
// RUN: rm -rf %t && mkdir -p %t
// RUN: ds-run %s --entry materialized --random-inputs 7 --outputs %t/m_%d.npy
// RUN: ds-run %s --entry chunked --random-inputs 7 --outputs %t/c_%d.npy
// RUN: %python %S/Inputs/npy_close.py 1e-6 %t/c_0.npy,%t/c_1.npy,%t/c_2.npy,%t/c_3.npy,%t/c_4.npy,%t/c_5.npy %t/m_0.npy,%t/m_1.npy,%t/m_2.npy,%t/m_0.npy,%t/m_1.npy,%t/m_2.npy | FileCheck %s
// CHECK-COUNT-6: within 1e-06 of max |x|
// RUN: ds-run %s --entry chunked --random-inputs 7 --expect %t/c_0.npy,%t/c_1.npy,%t/c_2.npy,%t/c_3.npy,%t/c_4.npy,%t/c_5.npy --rtol 0 --atol 0

func.func @materialized(%x: tensor<5x9x16xf32>, %w: tensor<13x16xf32>, %t: tensor<5x9xi64>, %dl: tensor<f32>)
    -> (tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>) {
  %y = dsnn.linear %x, %w : (tensor<5x9x16xf32>, tensor<13x16xf32>) -> tensor<5x9x13xf32>
  %l = dsnn.cross_entropy %y, %t : tensor<5x9x13xf32>, tensor<5x9xi64> -> tensor<f32>
  %dy = dsnn.cross_entropy_grad %y, %t, %dl : tensor<5x9x13xf32>, tensor<5x9xi64>, tensor<f32>
  %dy2 = dsnn.reshape %dy : tensor<5x9x13xf32> -> tensor<45x13xf32>
  %x2 = dsnn.reshape %x : tensor<5x9x16xf32> -> tensor<45x16xf32>
  %dx2 = dsnn.matmul %dy2, %w : tensor<45x13xf32>, tensor<13x16xf32> -> tensor<45x16xf32>
  %dx = dsnn.reshape %dx2 : tensor<45x16xf32> -> tensor<5x9x16xf32>
  %dw = dsnn.matmul %dy2, %x2 {transpose_a} : tensor<45x13xf32>, tensor<45x16xf32> -> tensor<13x16xf32>
  return %l, %dx, %dw : tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>
}

func.func @chunked(%x: tensor<5x9x16xf32>, %w: tensor<13x16xf32>, %t: tensor<5x9xi64>, %dl: tensor<f32>)
    -> (tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>) {
  %l = dsnn.linear_cross_entropy %x, %w, %t {chunk = 8 : i64} : tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<5x9xi64> -> tensor<f32>
  %dx, %dw = dsnn.linear_cross_entropy_grad %x, %w, %t, %dl {chunk = 8 : i64} : tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<5x9xi64>, tensor<f32>
  %l1 = dsnn.linear_cross_entropy %x, %w, %t {chunk = 45 : i64} : tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<5x9xi64> -> tensor<f32>
  %dx1, %dw1 = dsnn.linear_cross_entropy_grad %x, %w, %t, %dl {chunk = 45 : i64} : tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<5x9xi64>, tensor<f32>
  return %l, %dx, %dw, %l1, %dx1, %dw1 : tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>, tensor<f32>, tensor<5x9x16xf32>, tensor<13x16xf32>
}
