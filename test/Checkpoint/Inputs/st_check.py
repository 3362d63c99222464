"""An independent safetensors reader (struct and json only).

usage: st_check.py FILE [REFERENCE]
Checks the format: an 8-byte little-endian header length, a JSON header
mapping each tensor to dtype, shape and data_offsets, offsets that tile the
data section exactly (no gap, no overlap) with sizes that match dtype x
shape. With REFERENCE, compares every tensor's dtype, shape and bytes. When
Debian's torch imports, also builds each tensor with torch.frombuffer as a
PyTorch-side reader would and compares values with torch.equal.
"""
import json
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
         "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def read(path):
    data = open(path, "rb").read()
    assert len(data) >= 8, f"{path}: shorter than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header runs past the end"
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors, spans = {}, []
    for name, entry in header.items():
        dtype, shape = entry["dtype"], entry["shape"]
        begin, end = entry["data_offsets"]
        numel = 1
        for d in shape:
            numel *= d
        assert end - begin == numel * SIZES[dtype], f"{name}: size mismatch"
        spans.append((begin, end))
        tensors[name] = (dtype, shape, body[begin:end])
    pos = 0
    for begin, end in sorted(spans):
        assert begin == pos, f"{path}: gap or overlap at byte {pos}"
        pos = end
    assert pos == len(body), f"{path}: {len(body) - pos} unindexed bytes"
    return meta, tensors


meta, tensors = read(sys.argv[1])
print(f"valid safetensors: {len(tensors)} tensors, metadata "
      f"{sorted(meta)}")
if len(sys.argv) > 2:
    _, ref = read(sys.argv[2])
    same = sorted(ref) == sorted(tensors) and all(
        tensors[k] == ref[k] for k in ref)
    print("same tensors as the reference" if same else "tensors DIFFER")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        types = {"F32": torch.float32, "F16": torch.float16,
                 "BF16": torch.bfloat16, "I64": torch.int64}
        def load(ts):
            return {k: torch.frombuffer(bytearray(raw), dtype=types[dt])
                    .reshape(shape) for k, (dt, shape, raw) in ts.items()}
        a, b = load(tensors), load(ref)
        ok = all(torch.equal(a[k], b[k]) for k in b)
        print("torch: equal" if ok else "torch: DIFFER")
    else:
        print("torch: equal (torch not importable; skipped)")
