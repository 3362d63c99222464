// RUN: ds-opt %s --ds-fixed-order-reductions='lanes=12' --verify-diagnostics

// expected-error @below {{ds-fixed-order-reductions: lanes is 12 but must be a power of two from 2 to 64}}
func.func @f() {
  return
}
