"""Minimal safetensors reader and writer (json + struct + numpy; F32, F64,
I64) shared by the reference scripts. The format: an 8-byte little-endian
header length, a JSON header {name: {dtype, shape, data_offsets}} with an
optional "__metadata__", padded with spaces to a multiple of 8, then the
tensors' little-endian bytes, contiguous, in header order."""

import json
import struct
from collections import OrderedDict

import numpy as np
import torch


_DT = {torch.float32: ("F32", "<f4"), torch.float64: ("F64", "<f8"), torch.int64: ("I64", "<i8")}
_NP = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}
_TORCH = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}


def write_safetensors(path, tensors, metadata=None):
    """tensors: ordered name -> tensor (float32/float64/int64), written in
    the given order. metadata: dict of str -> str."""
    header = OrderedDict()
    if metadata is not None:
        header["__metadata__"] = OrderedDict((str(k), str(v)) for k, v in metadata.items())
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        code, npdt = _DT[t.dtype]
        data = t.numpy().astype(npdt, copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Returns (OrderedDict name -> tensor in file order, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"), object_pairs_hook=OrderedDict)
    meta = header.pop("__metadata__", {})
    base, expect, out = 8 + n, 0, OrderedDict()
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == expect, "non-contiguous offsets at %s" % name
        expect = e
        arr = np.frombuffer(raw[base + b: base + e], dtype=_NP[info["dtype"]]).copy()
        out[name] = torch.from_numpy(arr).to(_TORCH[info["dtype"]]).reshape(info["shape"])
    assert base + expect == len(raw), "trailing bytes"
    return out, meta
