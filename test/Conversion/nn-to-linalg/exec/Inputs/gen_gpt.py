"""Writes ../gpt-tiny-grads.mlir: examples/models/gpt-tiny.mlir through
ds-autodiff and ds-lower-nn-to-linalg, run on deterministic weights, against
the same model in PyTorch (loss and every parameter gradient).

    /usr/bin/python3 Inputs/gen_gpt.py

Weights are scale·(((i·p + q) mod 2003) / 2003 − 0.5) in f32: integer
arithmetic and IEEE division give bit-identical values on both sides. Each
gradient is printed as its dot product with a probe vector of the same kind
(a random projection catches any wrong element without printing them all).
"""
import os
import re

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.normpath(os.path.join(HERE, *[".."] * 4))
MODEL = os.path.join(ROOT, "examples", "models", "gpt-tiny.mlir")


def pattern(n, p, q, scale, offset=0.0):
    m = (torch.arange(n, dtype=torch.int64) * p + q) % 2003
    v = (m.float() / 2003.0 - 0.5) * scale
    return v + offset if offset else v


def mlir_pattern(name, shape, p, q, scale, offset=0.0):
    n = 1
    for d in shape:
        n *= d
    ty = "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"
    flat = f"tensor<{n}xf32>"
    lines = [
        f"%{name}_e = tensor.empty() : {flat}",
        f"%{name}_f = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>], "
        f"iterator_types = [\"parallel\"]}} outs(%{name}_e : {flat}) {{",
        "^bb0(%o: f32):",
        "  %i = linalg.index 0 : index",
        "  %ii = arith.index_cast %i : index to i64",
        f"  %p = arith.constant {p} : i64",
        f"  %q = arith.constant {q} : i64",
        "  %m0 = arith.muli %ii, %p : i64",
        "  %m1 = arith.addi %m0, %q : i64",
        "  %md = arith.constant 2003 : i64",
        "  %m = arith.remsi %m1, %md : i64",
        "  %mf = arith.sitofp %m : i64 to f32",
        "  %d = arith.constant 2003.0 : f32",
        "  %u = arith.divf %mf, %d : f32",
        "  %h = arith.constant 0.5 : f32",
        "  %c = arith.subf %u, %h : f32",
        f"  %s = arith.constant {scale!r} : f32",
        "  %v = arith.mulf %c, %s : f32",
    ]
    if offset:
        lines += [f"  %off = arith.constant {offset!r} : f32",
                  "  %w = arith.addf %v, %off : f32",
                  "  linalg.yield %w : f32"]
    else:
        lines.append("  linalg.yield %v : f32")
    lines.append(f"}} -> {flat}")
    if len(shape) == 1:
        lines.append(f"%{name} = tensor.cast %{name}_f : {flat} to {ty}")
    else:
        lines.append(f"%{name} = tensor.expand_shape %{name}_f [[{', '.join(str(i) for i in range(len(shape)))}]] "
                     f"output_shape [{', '.join(str(d) for d in shape)}] : {flat} into {ty}")
    return lines


def main():
    text = open(MODEL).read()
    body = text[text.index("  func.func @forward"):text.rindex("}")].rstrip()
    params = re.findall(r"%(\w+): tensor<([0-9x]+)xf32> \{dsnn.param = #dsnn.param<name = \"([^\"]+)\"", body)

    C, H, T, B, V = 16, 2, 8, 2, 64
    ids = (torch.arange(B * T).reshape(B, T) * 7 + 3) % V
    pos = torch.arange(T)
    targets = (torch.arange(B * T).reshape(B, T) * 5 + 1) % V

    weights = {}
    init = []
    for k, (arg, shape, name) in enumerate(params):
        dims = [int(d) for d in shape.split("x")]
        n = 1
        for d in dims:
            n *= d
        p, q = 37 + 2 * k, 11 * k + 5
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            scale, offset = 0.2, 1.0
        elif name.endswith("bias"):
            scale, offset = 0.1, 0.0
        else:
            scale, offset = 0.2, 0.0
        weights[name] = pattern(n, p, q, scale, offset).reshape(dims).requires_grad_(True)
        init += mlir_pattern(f"w{k}", dims, p, q, scale, offset)

    def W(n):
        return weights[n]

    def block(x, i):
        pre = f"h.{i}."
        h = F.layer_norm(x, (C,), W(pre + "ln_1.weight"), W(pre + "ln_1.bias"), 1e-5)
        qkv = F.linear(h, W(pre + "attn.c_attn.weight"), W(pre + "attn.c_attn.bias"))
        q, k, v = qkv.split(C, 2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / (C // H) ** 0.5
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(a, W(pre + "attn.c_proj.weight"), W(pre + "attn.c_proj.bias"))
        h = F.layer_norm(x, (C,), W(pre + "ln_2.weight"), W(pre + "ln_2.bias"), 1e-5)
        h = F.gelu(F.linear(h, W(pre + "mlp.c_fc.weight"), W(pre + "mlp.c_fc.bias")))
        return x + F.linear(h, W(pre + "mlp.c_proj.weight"), W(pre + "mlp.c_proj.bias"))

    x = F.embedding(ids, W("wte.weight")) + F.embedding(pos, W("wpe.weight"))
    x = block(block(x, 0), 1)
    x = F.layer_norm(x, (C,), W("ln_f.weight"), W("ln_f.bias"), 1e-5)
    loss = F.cross_entropy(F.linear(x, W("wte.weight")).reshape(B * T, V), targets.reshape(-1))
    grads = torch.autograd.grad(loss, [weights[n] for _, _, n in params])

    expect = [f"{loss.item():.8g}"]
    probes = []
    for k, ((arg, shape, name), g) in enumerate(zip(params, grads)):
        n = g.numel()
        probe = pattern(n, 101 + 2 * k, 7 * k + 1, 1.0)
        expect.append(f"{(g.double().flatten() * probe.double()).sum().item():.8g}")
        probes.append((k, shape, n))

    types = [f"tensor<{s}xf32>" for _, s, _ in params]
    lines = [
        "// RUN: ds-opt %s --ds-autodiff \\",
        "// RUN:   | sed -e '/func.func private @fb_stub/d' -e 's/@fb_stub/@forward_backward/g' \\",
        "// RUN:   | ds-opt --ds-lower-nn-to-linalg %lower-to-llvm | %mlir-runner | %allclose %s",
        "// Generated by Inputs/gen_gpt.py from examples/models/gpt-tiny.mlir; expected values",
        "// from PyTorch " + torch.__version__.split("a")[0] + " autograd on the same weights and batch.",
        "// Loss, then each parameter gradient's dot product with a probe vector.",
        "// TOLERANCE: 1e-4 1e-6",
        "",
        "module {",
        body,
        "",
        "  // @main is written against @forward_backward, which ds-autodiff creates;",
        "  // it calls this stand-in until the RUN line renames it.",
        f"  func.func private @fb_stub({', '.join(types)}, tensor<2x8xi64>, tensor<8xi64>, tensor<2x8xi64>) -> (tensor<f32>, {', '.join(types)})",
        "  func.func private @printMemrefF32(tensor<*xf32>)",
        "  func.func @main() {",
    ]
    lines += ["    " + l for l in init]
    lines += [
        f"    %ids = arith.constant dense<{ids.tolist()}> : tensor<2x8xi64>",
        f"    %pos = arith.constant dense<{pos.tolist()}> : tensor<8xi64>",
        f"    %tgt = arith.constant dense<{targets.tolist()}> : tensor<2x8xi64>",
        f"    %r:{len(params) + 1} = func.call @fb_stub({', '.join(f'%w{k}' for k in range(len(params)))}, %ids, %pos, %tgt) : "
        f"({', '.join(types)}, tensor<2x8xi64>, tensor<8xi64>, tensor<2x8xi64>) -> (tensor<f32>, {', '.join(types)})",
        "    %lu = tensor.cast %r#0 : tensor<f32> to tensor<*xf32>",
        "    func.call @printMemrefF32(%lu) : (tensor<*xf32>) -> ()",
    ]
    for k, shape, n in probes:
        dims = [int(d) for d in shape.split("x")]
        lines += ["    " + l for l in mlir_pattern(f"p{k}", [n], 101 + 2 * k, 7 * k + 1, 1.0)]
        g = f"%r#{k + 1}"
        if len(dims) > 1:
            lines.append(f"    %g{k} = tensor.collapse_shape {g} [[{', '.join(str(i) for i in range(len(dims)))}]] : tensor<{shape}xf32> into tensor<{n}xf32>")
            g = f"%g{k}"
        lines += [
            f"    %gm{k} = dsnn.mul {g}, %p{k} : tensor<{n}xf32>, tensor<{n}xf32> -> tensor<{n}xf32>",
            f"    %gd{k} = dsnn.reduce_sum %gm{k} dims [0] : tensor<{n}xf32> -> tensor<f32>",
            f"    %gu{k} = tensor.cast %gd{k} : tensor<f32> to tensor<*xf32>",
            f"    func.call @printMemrefF32(%gu{k}) : (tensor<*xf32>) -> ()",
        ]
    lines += ["    return", "  }", "}", ""]
    lines += ["// EXPECT: " + e for e in expect]
    with open(os.path.join(HERE, "gpt-tiny-grads.mlir"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
