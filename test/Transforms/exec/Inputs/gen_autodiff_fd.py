#!/usr/bin/env python3
"""Generates ../autodiff-fd.mlir: every VJP of ds-autodiff against central
finite differences in f64.

@forward is one model whose loss is a sum over every forward dsnn op (each
op's output weighted by a fixed random probe, so the cotangents are not all
ones), with its own parameters per op; @main calls the @forward_backward
that ds-autodiff builds and, per parameter p with a random direction v,
prints |<dL/dp, v> - (L(p + hv) - L(p - hv)) / 2h| / max(1, |FD|).
Only the Python standard library is needed: `python3 gen_autodiff_fd.py`.
"""
import os
import random

rng = random.Random(0)
H = 1e-5


def shape_str(shape, elem="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def dense(values, shape):
    def nest(vals, dims):
        if not dims:
            return repr(vals[0])
        step = len(vals) // dims[0]
        return "[" + ", ".join(nest(vals[i * step:(i + 1) * step], dims[1:])
                               for i in range(dims[0])) + "]"
    if not shape:
        return repr(values[0])
    return nest(values, list(shape))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def rand(shape, lo=-1.0, hi=1.0):
    return [round(rng.uniform(lo, hi), 4) for _ in range(numel(shape))]


params = []   # (ssa name, shape, values)
batch = []    # (ssa name, type, dense literal)
body = []     # forward ops
scalars = []  # per-op scalar contributions
counter = [0]


def fresh(prefix="t"):
    counter[0] += 1
    return f"%{prefix}{counter[0]}"


def param(name, shape, lo=-1.0, hi=1.0):
    params.append((name, shape, rand(shape, lo, hi)))
    return "%" + name


def probe_sum(value, shape, indent="  "):
    """reduce_sum(value * probe) -> a scalar contribution to the loss."""
    p = fresh("probe")
    body.append(f"{indent}{p} = arith.constant dense<{dense(rand(shape), shape)}> : {shape_str(shape)}")
    m = fresh()
    t = shape_str(shape)
    body.append(f"{indent}{m} = dsnn.mul {value}, {p} : {t}, {t} -> {t}")
    s = fresh("s")
    dims = ", ".join(str(i) for i in range(len(shape)))
    body.append(f"{indent}{s} = dsnn.reduce_sum {m} dims [{dims}] : {t} -> tensor<f64>")
    scalars.append(s)


def op(text, shape):
    r = fresh()
    body.append(f"  {r} = {text}")
    probe_sum(r, shape)
    return r


T = shape_str
# Linear algebra.
x_lin = "%x_lin"
batch.append(("x_lin", T([2, 5, 4]), dense(rand([2, 5, 4]), [2, 5, 4])))
w, b = param("lin_w", [3, 4]), param("lin_b", [3])
op(f"dsnn.linear {x_lin}, {w}, {b} : ({T([2,5,4])}, {T([3,4])}, {T([3])}) -> {T([2,5,3])}", [2, 5, 3])
a, bb = param("mm_a", [3, 4]), param("mm_b", [5, 4])
op(f"dsnn.matmul {a}, {bb} {{transpose_b}} : {T([3,4])}, {T([5,4])} -> {T([3,5])}", [3, 5])
a, bb = param("mm_ta", [4, 3]), param("mm_tb", [5, 4])
op(f"dsnn.matmul {a}, {bb} {{transpose_a, transpose_b}} : {T([4,3])}, {T([5,4])} -> {T([3,5])}", [3, 5])
a, bb = param("bmm_a", [2, 3, 4]), param("bmm_b", [2, 4, 5])
op(f"dsnn.batch_matmul {a}, {bb} : {T([2,3,4])}, {T([2,4,5])} -> {T([2,3,5])}", [2, 3, 5])
# Embedding, norms, activations.
batch.append(("ids", "tensor<2x3xi64>", "[[0, 5, 2], [2, 3, 0]]"))
tbl = param("emb", [6, 4])
op(f"dsnn.embedding %ids, {tbl} : tensor<2x3xi64>, {T([6,4])} -> {T([2,3,4])}", [2, 3, 4])
x, g, bb = param("ln_x", [2, 5], -2, 2), param("ln_w", [5]), param("ln_b", [5])
op(f"dsnn.layer_norm {x}, {g}, {bb} eps 1.0e-05 : {T([2,5])}, {T([5])}, {T([5])}", [2, 5])
x, g = param("rms_x", [2, 5], -2, 2), param("rms_w", [5])
op(f"dsnn.rms_norm {x}, {g} eps 1.0e-06 : {T([2,5])}, {T([5])}", [2, 5])
for name, text in [("gelu", "dsnn.gelu {x}"), ("gelu_tanh", "dsnn.gelu {x} approximate tanh"),
                   ("relu", "dsnn.relu {x}"), ("silu", "dsnn.silu {x}"), ("tanh", "dsnn.tanh {x}"),
                   ("exp", "dsnn.exp {x}"), ("neg", "dsnn.neg {x}"),
                   ("softmax", "dsnn.softmax {x} dim -1"), ("log_softmax", "dsnn.log_softmax {x} dim 0"),
                   ("dropout", "dsnn.dropout {x} p 0.0")]:
    x = param(name + "_x", [2, 5], -2, 2)
    op(text.format(x=x) + f" : {T([2,5])}", [2, 5])
q, k, v = (param(n, [1, 2, 4, 3]) for n in ("att_q", "att_k", "att_v"))
t4 = T([1, 2, 4, 3])
op(f"dsnn.attention {q}, {k}, {v} {{causal}} : {t4}, {t4}, {t4} -> {t4}", [1, 2, 4, 3])
q, k, v = param("att2_q", [1, 2, 4, 3]), param("att2_k", [1, 2, 5, 3]), param("att2_v", [1, 2, 5, 2])
op(f"dsnn.attention {q}, {k}, {v} {{scale = 0.7 : f64}} : {T([1,2,4,3])}, {T([1,2,5,3])}, {T([1,2,5,2])} -> {T([1,2,4,2])}", [1, 2, 4, 2])
# Broadcasting arithmetic.
for name in ("add", "sub", "mul", "div"):
    a = param(name + "_a", [2, 3, 4])
    bb = param(name + "_b", [3, 1], 0.5, 2.0) if name == "div" else param(name + "_b", [3, 1])
    op(f"dsnn.{name} {a}, {bb} : {T([2,3,4])}, {T([3,1])} -> {T([2,3,4])}", [2, 3, 4])
# Shape ops and reductions.
x = param("reshape_x", [2, 6])
op(f"dsnn.reshape {x} : {T([2,6])} -> {T([3,4])}", [3, 4])
x = param("transpose_x", [2, 3, 4])
op(f"dsnn.transpose {x} perm [2, 0, 1] : {T([2,3,4])} -> {T([4,2,3])}", [4, 2, 3])
x = param("split_x", [2, 6])
pieces = fresh()
body.append(f"  {pieces}:2 = dsnn.split {x} dim 1 : {T([2,6])} -> {T([2,2])}, {T([2,4])}")
probe_sum(pieces + "#1", [2, 4])
a, bb = param("concat_a", [2, 2]), param("concat_b", [2, 3])
op(f"dsnn.concat {a}, {bb} dim 1 : {T([2,2])}, {T([2,3])} -> {T([2,5])}", [2, 5])
x = param("rsum_x", [2, 3, 4])
op(f"dsnn.reduce_sum {x} dims [1] : {T([2,3,4])} -> {T([2,4])}", [2, 4])
x = param("rmean_x", [2, 3, 4])
op(f"dsnn.reduce_mean {x} dims [0, 2] {{keep_dims}} : {T([2,3,4])} -> {T([1,3,1])}", [1, 3, 1])
# Losses (scalars, weighted by a probe too).
batch.append(("targets", "tensor<2x3xi64>", "[[1, -100, 5], [0, 2, 3]]"))
x = param("ce_logits", [2, 3, 6], -2, 2)
op(f"dsnn.cross_entropy {x}, %targets : {T([2,3,6])}, tensor<2x3xi64> -> tensor<f64>", [])
batch.append(("mse_t", T([2, 4]), dense(rand([2, 4]), [2, 4])))
x = param("mse_x", [2, 4])
op(f"dsnn.mse_loss {x}, %mse_t : {T([2,4])}, {T([2,4])} -> tensor<f64>", [])
# A parameter used twice gets the sum of both uses.
x = param("tied", [4, 4])
op(f"dsnn.matmul {x}, {x} : {T([4,4])}, {T([4,4])} -> {T([4,4])}", [4, 4])
# Layers, one nested: backward layers and saved activations.
x, w = param("layer_x", [2, 4]), param("layer_w", [3, 4])
out = fresh()
body.append(f"""  {out} = dsnn.layer "blk" ("Block") -> {T([2,3])} {{
    %lh = dsnn.linear {x}, {w} : ({T([2,4])}, {T([3,4])}) -> {T([2,3])}
    %li = dsnn.layer "blk.inner" ("Inner") -> {T([2,3])} {{
      %lt = dsnn.tanh %lh : {T([2,3])}
      %lm = dsnn.mul %lt, %lh : {T([2,3])}, {T([2,3])} -> {T([2,3])}
      dsnn.yield %lm : {T([2,3])}
    }}
    %lg = dsnn.gelu %li : {T([2,3])}
    dsnn.yield %lg : {T([2,3])}
  }}""")
probe_sum(out, [2, 3])
# A parameter that does not reach the loss gets zeros.
param("unused", [3])

# Mixture of experts, top-2 and top-1, 6 tokens over 3 experts with 3 slots
# each (so some choices are dropped): the gradient reaches the tokens
# (dispatch), the gate (combine weights, aux loss) and the experts. A gate
# far from uniform keeps every choice clear of a tie that h could flip.
for name, k in (("moe2", 2), ("moe1", 1)):
    x = param(name + "_x", [6, 4])
    gate = param(name + "_gate", [3, 4], -3, 3)
    w, bias = param(name + "_w", [3, 4, 4]), param(name + "_b", [3, 4])
    res = fresh()
    body.append(f"""  {res}:2 = dsnn.moe {x}, {gate} experts({w}, {bias} : {T([3,4,4])}, {T([3,4])})
      {{num_experts = 3 : i64, k = {k} : i64, capacity_factor = 1.0 : f64}}
      : {T([6,4])}, {T([3,4])} -> {T([6,4])}, tensor<f64> {{
    ^bb0(%{name}_tok: {T([3,3,4])}, %{name}_aw: {T([3,4,4])}, %{name}_ab: {T([3,4])}):
      %{name}_h = dsnn.batch_matmul %{name}_tok, %{name}_aw {{transpose_b}} : {T([3,3,4])}, {T([3,4,4])} -> {T([3,3,4])}
      %{name}_hb = dsnn.reshape %{name}_ab : {T([3,4])} -> {T([3,1,4])}
      %{name}_hs = dsnn.add %{name}_h, %{name}_hb : {T([3,3,4])}, {T([3,1,4])} -> {T([3,3,4])}
      %{name}_y = dsnn.tanh %{name}_hs : {T([3,3,4])}
      dsnn.yield %{name}_y : {T([3,3,4])}
  }}""")
    probe_sum(res + "#0", [6, 4])
    probe_sum(res + "#1", [])

# rsqrt (hand-written RMSNorm) on positive inputs.
x = param("rsqrt_x", [2, 5], 0.5, 2)
op(f"dsnn.rsqrt {x} : {T([2,5])}", [2, 5])
# Masks: compare gives no gradient; select sends each element's cotangent
# to the branch it took (on_false broadcast, so its cotangent sums back).
batch.append(("sel_keep", "tensor<2x3x4xi64>",
              dense([rng.choice([0, 1]) for _ in range(24)], [2, 3, 4])))
zero = fresh("zero")
body.append(f"  {zero} = arith.constant dense<0> : tensor<i64>")
mask = fresh("mask")
body.append(f"  {mask} = dsnn.compare ne %sel_keep, {zero} : tensor<2x3x4xi64>, tensor<i64> -> tensor<2x3x4xi1>")
a, bb = param("sel_a", [2, 3, 4]), param("sel_b", [3, 1])
op(f"dsnn.select {mask}, {a}, {bb} : tensor<2x3x4xi1>, {T([2,3,4])}, {T([3,1])} -> {T([2,3,4])}", [2, 3, 4])
# A comparison of a parameter (far from the threshold): no cotangent
# through it, only through the select's branch.
x = param("cmp_x", [2, 5], 0.5, 2)
limit = fresh("limit")
body.append(f"  {limit} = arith.constant dense<1.0> : tensor<f64>")
big = fresh("big")
body.append(f"  {big} = dsnn.compare eq {x}, {limit} : {T([2,5])}, tensor<f64> -> tensor<2x5xi1>")
op(f"dsnn.select {big}, {limit}, {x} : tensor<2x5xi1>, tensor<f64>, {T([2,5])} -> {T([2,5])}", [2, 5])
# The loss: the sum of every contribution.
loss = scalars[0]
for s in scalars[1:]:
    r = fresh("l")
    body.append(f"  {r} = dsnn.add {loss}, {s} : tensor<f64>, tensor<f64> -> tensor<f64>")
    loss = r

pattr = '{{dsnn.param = #dsnn.param<name = "{}", init = zeros>}}'
args = [f"%{n}: {T(s)} {pattr.format(n)}" for n, s, _ in params]
args += [f"%{n}: {t}" for n, t, _ in batch]
ptypes = [T(s) for _, s, _ in params]
btypes = [t for _, t, _ in batch]

lines = []
lines.append("// RUN: ds-opt %s --ds-autodiff | ds-opt --ds-lower-nn-to-linalg %lower-to-llvm | %mlir-runner | %allclose %s")
lines.append("// Generated by Inputs/gen_autodiff_fd.py; do not edit.")
lines.append("//")
lines.append("// Every dsnn VJP against central finite differences in f64: one model")
lines.append("// whose loss sums every forward op (weighted by random probes); per")
lines.append("// parameter, |<grad, v> - FD along v| / max(1, |FD|) must be below 1e-7.")
lines.append(f"// Parameters, in the order of the printed errors: {', '.join(n for n, _, _ in params)}.")
lines.append("// TOLERANCE: 0 1e-7")
lines.append("")
lines.append("func.func @forward(" + ",\n    ".join(args) + ") -> tensor<f64> {")
lines += body
lines.append(f"  return {loss} : tensor<f64>")
lines.append("}")
lines.append("")
fb_results = ", ".join(["tensor<f64>"] + ptypes)
lines.append(f"func.func private @forward_backward({', '.join(ptypes + btypes)}) -> ({fb_results})")
lines.append("func.func private @printMemrefF64(tensor<*xf64>)")
lines.append("")
lines.append("func.func @main() {")
for n, s, vals in params:
    lines.append(f"  %{n} = arith.constant dense<{dense(vals, s)}> : {T(s)}")
for n, t, lit in batch:
    lines.append(f"  %{n} = arith.constant dense<{lit}> : {t}")
lines.append(f"  %h = arith.constant dense<{H:.6e}> : tensor<f64>")
lines.append(f"  %two_h = arith.constant dense<{2 * H:.6e}> : tensor<f64>")
lines.append("  %one = arith.constant 1.0 : f64")
pnames = [f"%{n}" for n, _, _ in params]
bnames = [f"%{n}" for n, _, _ in batch]
sig = f"({', '.join(ptypes + btypes)})"
lines.append(f"  %g:{len(params) + 1} = func.call @forward_backward({', '.join(pnames + bnames)}) : {sig} -> ({fb_results})")
errs = []
for i, (n, s, _) in enumerate(params):
    t = T(s)
    dims = ", ".join(str(d) for d in range(len(s)))
    lines.append(f"  %v{i} = arith.constant dense<{dense(rand(s), s)}> : {t}")
    lines.append(f"  %gv{i} = dsnn.mul %g#{i + 1}, %v{i} : {t}, {t} -> {t}")
    lines.append(f"  %dot{i} = dsnn.reduce_sum %gv{i} dims [{dims}] : {t} -> tensor<f64>")
    lines.append(f"  %hv{i} = dsnn.mul %v{i}, %h : {t}, tensor<f64> -> {t}")
    lines.append(f"  %pp{i} = dsnn.add %{n}, %hv{i} : {t}, {t} -> {t}")
    lines.append(f"  %pm{i} = dsnn.sub %{n}, %hv{i} : {t}, {t} -> {t}")
    for tag, val in (("lp", f"%pp{i}"), ("lm", f"%pm{i}")):
        operands = [val if j == i else p for j, p in enumerate(pnames)] + bnames
        lines.append(f"  %{tag}{i} = func.call @forward({', '.join(operands)}) : {sig} -> tensor<f64>")
    lines.append(f"  %d{i} = dsnn.sub %lp{i}, %lm{i} : tensor<f64>, tensor<f64> -> tensor<f64>")
    lines.append(f"  %fd{i} = dsnn.div %d{i}, %two_h : tensor<f64>, tensor<f64> -> tensor<f64>")
    lines.append(f"  %a{i} = tensor.extract %dot{i}[] : tensor<f64>")
    lines.append(f"  %b{i} = tensor.extract %fd{i}[] : tensor<f64>")
    lines.append(f"  %diff{i} = arith.subf %a{i}, %b{i} : f64")
    lines.append(f"  %adiff{i} = math.absf %diff{i} : f64")
    lines.append(f"  %ab{i} = math.absf %b{i} : f64")
    lines.append(f"  %den{i} = arith.maximumf %ab{i}, %one : f64")
    lines.append(f"  %e{i} = arith.divf %adiff{i}, %den{i} : f64")
    errs.append(f"%e{i}")
lines.append(f"  %errs = tensor.from_elements {', '.join(errs)} : tensor<{len(errs)}xf64>")
lines.append(f"  %u = tensor.cast %errs : tensor<{len(errs)}xf64> to tensor<*xf64>")
lines.append("  func.call @printMemrefF64(%u) : (tensor<*xf64>) -> ()")
lines.append("  return")
lines.append("}")
lines.append("")
lines.append("// EXPECT: " + " ".join("0" for _ in params))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "autodiff-fd.mlir")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
