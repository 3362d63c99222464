// RUN: ds-opt %s | ds-opt | FileCheck %s

// The #dsnn.param attribute round-trips with every optional field, and a
// default std (0.0) is elided.

// CHECK-LABEL: func @params
// CHECK-SAME: {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 2.000000e-02, tied = "wte">}
// CHECK-SAME: {dsnn.param = #dsnn.param<name = "ln_f.weight", init = ones>}
// CHECK-SAME: {dsnn.param = #dsnn.param<name = "h.1.mlp.experts.c_fc.weight", init = uniform, std = 1.000000e-01, expert = 3>}
func.func @params(
    %a: tensor<50x16xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02, tied = "wte">},
    %b: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_f.weight", init = ones, std = 0.0>},
    %c: tensor<4x16xf32> {dsnn.param = #dsnn.param<name = "h.1.mlp.experts.c_fc.weight", init = uniform, std = 0.1, expert = 3>}) {
  return
}
