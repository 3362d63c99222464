"""Lists the device code a shared object embeds: every CUDA fat binary
(magic 0xBA55ED50) and, per entry, its kind (ELF: a cubin, PTX) and the
architecture it is for, read from the fatbin's documented-by-fatbinary
header layout. Prints a summary line for FileCheck:

  fatbins N, elf sm_XX N, ptx sm_XX N, bad N

"bad" counts ELF entries whose payload is not an ELF image, or fatbins
whose entries do not add up to the fatbin's size.
"""
import struct
import sys
from collections import Counter

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "ptx", 2: "elf"}


def main(path):
    data = open(path, "rb").read()
    fatbins = 0
    bad = 0
    entries = Counter()
    at = data.find(MAGIC)
    while at >= 0:
        _, _, header, size = struct.unpack_from("<IHHQ", data, at)
        fatbins += 1
        offset, end = at + header, at + header + size
        while offset < end:
            kind, _, entry_header, payload = struct.unpack_from(
                "<HHIQ", data, offset)
            (arch,) = struct.unpack_from("<I", data, offset + 28)
            name = KINDS.get(kind, "kind%d" % kind)
            body = data[offset + entry_header:offset + entry_header + 4]
            if name == "elf" and body != b"\x7fELF":
                bad += 1
            entries["%s sm_%d" % (name, arch)] += 1
            offset += entry_header + payload
        if offset != end:
            bad += 1
        at = data.find(MAGIC, max(end, at + 4))
    parts = ["fatbins %d" % fatbins]
    parts += ["%s %d" % (k, v) for k, v in sorted(entries.items())]
    parts.append("bad %d" % bad)
    print(", ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
