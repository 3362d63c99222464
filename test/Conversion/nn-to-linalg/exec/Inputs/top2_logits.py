"""Checks ds's top-2 choices on logits an ulp apart against DeepSpeed's top2gating.

usage: top2_logits.py TEST.mlir < mlir-runner output
The logits are the test's `%logits = arith.constant dense<...>` (f32, hex
bits or decimal). The oracle is top2gating's own choice evaluated by torch:
first torch.argmax(softmax(logits)), second torch.argmax(logits.masked_fill(
mask1, -inf)) (torch.argmax returns the first maximum). Each `// TIED: n a b`
line of the test says token n's experts a and b have different logits but
the same f32 probability in torch, so ranking them by probability would pick
the lower index; the script checks that it is so before trusting the row.
ds's experts are the first printMemrefI64 tensor of stdin.
"""
import re
import struct
import sys

import torch

test = open(sys.argv[1]).read()
literal = re.search(r"%logits = arith.constant dense<(\[\[.*?\]\])>", test)[1]


def value(tok):
    if tok.startswith("0x"):
        return struct.unpack("<f", struct.pack("<I", int(tok, 16)))[0]
    return float(tok)


rows = [[value(t) for t in re.findall(r"0x[0-9A-Fa-f]+|-?[0-9.]+", r)]
        for r in re.findall(r"\[([^\[\]]*)\]", literal)]
logits = torch.tensor(rows, dtype=torch.float32)
e = logits.shape[1]
gates = torch.softmax(logits, dim=1)
first = torch.argmax(gates, dim=1)
mask1 = torch.nn.functional.one_hot(first, num_classes=e).bool()
second = torch.argmax(logits.masked_fill(mask1, float("-inf")), dim=1)
oracle = [[int(a), int(b)] for a, b in zip(first, second)]
print(f"DeepSpeed top2gating choices (torch): {oracle}")
for n, a, b in (map(int, m) for m in
                re.findall(r"^// TIED: (\d+) (\d+) (\d+)$", test, re.M)):
    tied = (logits[n, a] != logits[n, b]) and (gates[n, a] == gates[n, b])
    print(f"token {n}: logits of experts {a}, {b} differ, probabilities "
          f"{'tie' if tied else 'DO NOT TIE'}")
printed = sys.stdin.read().split("Unranked Memref")[1]
got = [int(x) for x in re.findall(r"-?\d+", printed.split("data =", 1)[1])]
ds = [got[i:i + 2] for i in range(0, len(got), 2)]
print(f"ds moe_route choices: {ds} {'ok' if ds == oracle else 'FAIL'}")
