#!/usr/bin/env python3
"""Golden float32 bits of every float16 and bfloat16 bit pattern.

PyTorch converts each of the 65536 patterns of torch.float16 and of
torch.bfloat16 to torch.float32; this prints the SHA-256 of the float32
bits (little-endian uint32, in pattern order 0x0000 … 0xffff), which
internal/safetensors' TestHalfConversionAllPatterns compares with zoo's
conversion (safetensors.Tensor.Float32s) bit for bit, NaN payloads
included. It also prints how many patterns are NaN, and the bits of a few.

    /usr/bin/python3 tools/pytorch/half_golden.py
"""

import hashlib
import struct

import torch


def bits_of(dtype):
    patterns = torch.arange(65536, dtype=torch.int32).to(torch.int16)  # wraps to the int16 bit pattern
    x = patterns.view(dtype).to(torch.float32)
    u = x.view(torch.int32).tolist()
    return struct.pack("<65536I", *[v & 0xFFFFFFFF for v in u]), x


def main():
    print("torch", torch.__version__)
    for name, dtype in [("f16", torch.float16), ("bf16", torch.bfloat16)]:
        raw, x = bits_of(dtype)
        nan = int(torch.isnan(x).sum())
        words = struct.unpack("<65536I", raw)
        sample = {p: f"{words[p]:#010x}" for p in (0x0001, 0x03FF, 0x7C00, 0x7C01, 0x7E00, 0xFC01, 0x7F80, 0x7F81, 0xFFFF)}
        print(f"{name} sha256 {hashlib.sha256(raw).hexdigest()} nan {nan} sample {sample}")


if __name__ == "__main__":
    main()
