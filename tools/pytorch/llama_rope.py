#!/usr/bin/env python3
"""Golden inverse frequencies of Hugging Face's rotary embeddings.

Re-implements, with transformers' names, modeling_rope_utils.py's
_compute_default_rope_parameters and _compute_llama3_parameters (the
rope_type "default" and "llama3" entries of ROPE_INIT_FUNCTIONS), and writes
their inv_freq for a few configs to models/llama/testdata/rope_golden.json,
which models/llama's TestInvFreqGolden compares at 1e-12.

Each case is computed twice: in float64 ("inv_freq", the golden the Go code
matches), and in float32 as transformers computes it ("inv_freq_f32",
torch.arange(...).float() and float32 arithmetic), for reference.

    /usr/bin/python3 tools/pytorch/llama_rope.py [--out models/llama/testdata/rope_golden.json]

No transformers install is needed (torch 1.13 from the Debian package).
"""

import argparse
import json
import math

import torch


class Config:
    """The attributes of a LlamaConfig the rope init functions read."""

    def __init__(self, head_dim, rope_theta, rope_scaling=None, partial_rotary_factor=1.0):
        self.head_dim = head_dim
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling
        self.partial_rotary_factor = partial_rotary_factor


def _compute_default_rope_parameters(config, device=None, seq_len=None, dtype=torch.float64):
    base = config.rope_theta
    partial_rotary_factor = getattr(config, "partial_rotary_factor", 1.0)
    head_dim = config.head_dim
    dim = int(head_dim * partial_rotary_factor)

    attention_factor = 1.0  # Unused in this type of RoPE

    # Compute the inverse frequencies
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=dtype) / dim))
    return inv_freq, attention_factor


def _compute_llama3_parameters(config, device=None, seq_len=None, dtype=torch.float64):
    # Gets the default RoPE parameters
    inv_freq, attention_factor = _compute_default_rope_parameters(config, device, seq_len, dtype)

    factor = config.rope_scaling["factor"]  # `8` in the original implementation
    low_freq_factor = config.rope_scaling["low_freq_factor"]  # `1` in the original implementation
    high_freq_factor = config.rope_scaling["high_freq_factor"]  # `4` in the original implementation
    old_context_len = config.rope_scaling["original_max_position_embeddings"]  # `8192` in the original implementation

    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor

    wavelen = 2 * math.pi / inv_freq
    # wavelen < high_freq_wavelen: do nothing
    # wavelen > low_freq_wavelen: divide by factor
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    # otherwise: interpolate between the two, using a smooth factor
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)

    return inv_freq_llama, attention_factor


ROPE_INIT_FUNCTIONS = {
    "default": _compute_default_rope_parameters,
    "llama3": _compute_llama3_parameters,
}

LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
LLAMA32 = dict(LLAMA31, factor=32.0)
# Small enough that all three bands (kept, divided, interpolated) hold
# several frequencies of a 16-wide head.
TINY = {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}

CASES = [
    ("tinyllama default", Config(64, 10000.0)),
    ("qwen2.5 default", Config(64, 1000000.0)),
    ("llama3.1-8b llama3", Config(128, 500000.0, LLAMA31)),
    ("llama3.2-1b llama3", Config(64, 500000.0, LLAMA32)),
    ("tiny llama3", Config(16, 10000.0, TINY)),
    ("tiny default", Config(8, 10000.0)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/llama/testdata/rope_golden.json")
    args = ap.parse_args()
    out = {"generator": "tools/pytorch/llama_rope.py", "torch": torch.__version__, "cases": []}
    for name, cfg in CASES:
        rope_type = cfg.rope_scaling["rope_type"] if cfg.rope_scaling else "default"
        fn = ROPE_INIT_FUNCTIONS[rope_type]
        inv64, scale = fn(cfg, dtype=torch.float64)
        inv32, _ = fn(cfg, dtype=torch.float32)
        out["cases"].append({
            "name": name, "head_dim": cfg.head_dim, "rope_theta": cfg.rope_theta,
            "rope_scaling": cfg.rope_scaling, "attention_scaling": scale,
            "inv_freq": [float(x) for x in inv64.tolist()],
            "inv_freq_f32": [float(x) for x in inv32.tolist()],
        })
        print(f"{name}: {len(inv64)} frequencies, first {inv64[0].item()!r}, last {inv64[-1].item()!r}")
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
