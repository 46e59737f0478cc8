#!/usr/bin/env python3
"""PyTorch side of issue 37's real-size generation benchmark
(tools/llamabench, tools/bench.sh llama): batch-1 greedy decoding with a KV
cache by tools/pytorch/llama_reference.py's LlamaForCausalLM (Hugging
Face's module names), in float32, on the checkpoint `llamabench write`
made (config.json and model.safetensors, F32), with the same prompt ids as
zoo's side: (7919*i + 13) % vocab_size for i < --prompt.

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/llama_generate_bench.py --dir DIR \\
        [--prompt 128] [--new 128] [--runs 2] [--warmup 1] [--check N]

The cache is Hugging Face's DynamicCache: each layer's keys and values
(KV heads only, after the rotation) concatenated along the sequence per
step, repeat_kv'd for the grouped-query attention, eager attention as
llama_reference.py's LlamaAttention computes it. The prefill runs the
prompt once under the causal mask and keeps the logits of its last
position only (generate's logits_to_keep=1); each later step is one token.
torch.set_num_threads(2), torch.inference_mode().

Each timed call prints one JSON line with the fields of llamabench's
results (tools/llamabench/run.go): load_s (building the modules without
their random initialisation and reading the weights), prefill_tok_s (the
prompt's tokens over the time to the first new token), ms_per_token (the
steps after the first token), call_ms_per_token, peak_rss_mb (this
process's VmHWM), weight_bytes (one step's weights: the matrices and norms,
the embedding only as a tied head) and the greedy tokens. --check N first
asserts that decoding N tokens without the cache (the whole sequence
through LlamaForCausalLM.forward each step) gives the cached tokens.
"""

import argparse
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import llama_reference as ref  # noqa: E402  (sets float64 as the default dtype)
from bench_long import status_mb  # noqa: E402

THREADS = 2
_NP = {"F32": np.float32, "F64": np.float64, "BF16": None}


def read_config(d):
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    c.setdefault("attention_bias", False)
    c.setdefault("mlp_bias", False)
    c.setdefault("tie_word_embeddings", False)
    c.setdefault("rope_theta", 10000.0)
    return c


def build(c):
    """LlamaForCausalLM in float32 without its initialisation (the
    weights are read next): reset_parameters skipped while building."""
    saved = torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters
    torch.nn.Linear.reset_parameters = lambda self: None
    torch.nn.Embedding.reset_parameters = lambda self: None
    try:
        torch.set_default_dtype(torch.float32)
        m = ref.LlamaForCausalLM(c)
    finally:
        torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters = saved
    m.model.rotary_emb.inv_freq = m.model.rotary_emb.inv_freq.float()
    return m.eval()


def load_weights(m, path):
    """Copies model.safetensors (F32) into m tensor by tensor, reading each
    from the file on its own so that the file is never held whole."""
    params = dict(m.named_parameters())  # a tied lm_head.weight is embed_tokens'
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    seen = set()
    with torch.no_grad():
        for name, info in header.items():
            if info["dtype"] != "F32":
                raise SystemExit("%s: dtype %s; this benchmark reads F32 checkpoints" % (name, info["dtype"]))
            if name == "lm_head.weight" and m.c["tie_word_embeddings"]:
                continue  # transformers' tied checkpoints may carry it too
            if name not in params:
                raise SystemExit("%s: not a parameter of the model" % name)
            b, e = info["data_offsets"]
            arr = np.fromfile(path, dtype=np.float32, count=(e - b) // 4, offset=8 + n + b)
            params[name].copy_(torch.from_numpy(arr).reshape(info["shape"]))
            seen.add(name)
    missing = [k for k in params if k not in seen]
    if missing:
        raise SystemExit("missing from %s: %s" % (path, ", ".join(missing)))


def weight_bytes(c):
    d, ff, v, nl = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    hd, q, kv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
    per_layer = d * hd * q + 2 * d * hd * kv + hd * q * d + 3 * d * ff
    return 4 * (nl * per_layer + v * d) + 4 * (2 * nl + 1) * d


def forward_cached(m, ids, cache, start):
    """Logits (1, V) of the last of ids (1, T) at positions start…start+T-1,
    appending each layer's keys and values to cache (a list of (k, v) or
    None per layer), as transformers' LlamaModel does with a DynamicCache."""
    x = m.model.embed_tokens(ids)
    t = ids.shape[1]
    pos = torch.arange(start, start + t)[None]
    cos, sin = m.model.rotary_emb(x, pos)
    mask = None
    if t > 1:  # causal over the new tokens; every cached key is visible
        minv = torch.finfo(x.dtype).min
        mask = torch.cat([torch.zeros(t, start), torch.triu(torch.full((t, t), minv), diagonal=1)], 1)[None, None]
    for i, layer in enumerate(m.model.layers):
        a = layer.self_attn
        res = x
        h = layer.input_layernorm(x)
        shape = (1, t, -1, a.head_dim)
        q = a.q_proj(h).view(shape).transpose(1, 2)
        k = a.k_proj(h).view(shape).transpose(1, 2)
        v = a.v_proj(h).view(shape).transpose(1, 2)
        q, k = ref.apply_rotary_pos_emb(q, k, cos, sin)
        if cache[i] is not None:
            k = torch.cat([cache[i][0], k], dim=2)
            v = torch.cat([cache[i][1], v], dim=2)
        cache[i] = (k, v)
        k = ref.repeat_kv(k, a.num_key_value_groups)
        v = ref.repeat_kv(v, a.num_key_value_groups)
        w = torch.matmul(q, k.transpose(2, 3)) * a.scaling
        if mask is not None:
            w = w + mask
        w = torch.softmax(w, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).reshape(1, t, -1)
        x = res + a.o_proj(o)
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return m.lm_head(m.model.norm(x[:, -1:]))[:, 0]


def generate_cached(m, prompt, new):
    """Greedy tokens and the time of each, after prompt (list of ids)."""
    cache = [None] * len(m.model.layers)
    times, out = [], []
    ids = torch.tensor([prompt])
    start = 0
    for _ in range(new):
        logits = forward_cached(m, ids, cache, start)
        start += ids.shape[1]
        tok = int(torch.argmax(logits[0]))
        out.append(tok)
        times.append(time.perf_counter())
        ids = torch.tensor([[tok]])
    return out, times


def generate_uncached(m, prompt, new):
    seq = list(prompt)
    for _ in range(new):
        ids = torch.tensor([seq])
        logits, _ = m(ids, torch.ones_like(ids))
        seq.append(int(torch.argmax(logits[0, -1])))
    return seq[len(prompt):]


def main():
    ap = argparse.ArgumentParser(description="PyTorch LLaMA cached greedy decoding (float32)")
    ap.add_argument("--dir", required=True, help="checkpoint folder (llamabench write)")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--runs", type=int, default=2, help="timed calls, one JSON line each")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls first")
    ap.add_argument("--check", type=int, default=0, help="assert N uncached greedy tokens equal the cached ones")
    args = ap.parse_args()
    torch.set_num_threads(THREADS)
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        print("WARNING: OMP_WAIT_POLICY=PASSIVE not set; timings may be ~4x slower", file=sys.stderr)
    c = read_config(args.dir)
    t0 = time.perf_counter()
    m = build(c)
    load_weights(m, os.path.join(args.dir, "model.safetensors"))
    load = time.perf_counter() - t0
    prompt = [(7919 * i + 13) % c["vocab_size"] for i in range(args.prompt)]
    with torch.inference_mode():
        if args.check:
            want = generate_uncached(m, prompt, args.check)
            got, _ = generate_cached(m, prompt, args.check)
            if got != want:
                raise AssertionError("cached %s and uncached %s greedy tokens disagree" % (got, want))
            print("check: cached and uncached decoding give the same %d tokens" % args.check, file=sys.stderr)
        for i in range(args.warmup + args.runs):
            t0 = time.perf_counter()
            out, times = generate_cached(m, prompt, args.new)
            if i < args.warmup:
                continue
            peak = status_mb("VmHWM")
            print(json.dumps({
                "engine": "pytorch", "format": "f32", "model": os.path.basename(os.path.normpath(args.dir)),
                "prompt": args.prompt, "new": args.new, "load_s": load,
                "prefill_tok_s": args.prompt / (times[0] - t0),
                "ms_per_token": (times[-1] - times[0]) * 1e3 / (args.new - 1),
                "call_ms_per_token": (times[-1] - t0) * 1e3 / args.new,
                "peak_rss_mb": peak or 0, "weight_bytes": weight_bytes(c), "threads": torch.get_num_threads(),
                "tokens": out}))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
