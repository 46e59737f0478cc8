#!/usr/bin/env python3
"""PyTorch CPU reference for models/gpt's BenchmarkGenerateGPT2Small: GPT-2
small (124M) greedy decoding with the KV cache, batch 1, random weights.

Run on the same 2-core machine as the Go benchmark, with OpenBLAS
(tools/bench.sh decode does this, interleaved with the Go rows):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_gpt2_generate.py [--iters N] [--warmup N] [--check]

The model is tools/pytorch/gpt2_reference.py's GPT2LMHeadModel (Hugging
Face's GPT-2 with its module names, eager attention, gelu_new) with
GPT2Config's defaults, which are GPT-2 small: V 50257, n_positions 1024,
d 768, 12 heads, 12 layers, 124,439,808 parameters (lm_head tied to wte),
float32, HF's initialisation after torch.manual_seed(1) (random weights, as
the Go side's: the two pick different tokens, and time the same work).
torch.set_num_threads(2); eval mode, under torch.inference_mode().

  GenerateGPT2Small/P16_N64_B1
      generate_greedy_cached: a 16-token prompt (ids (7919*i + 13) % 50257,
      as in Go) run once with use_cache, then 63 one-token forwards with
      past_key_values (HF's concatenation of past keys and values), argmax
      each time: 64 new tokens, no early stop.  ms/token = wall time of the
      whole call / 64, prefill included.

--warmup (default 1) untimed calls, then the median of --iters (default 3).
peakRSS_MB is this process's VmHWM (/proc/self/status) in MB (10^6 bytes):
the model, torch and everything; base_MB its VmRSS after `import torch`.
--check first asserts that decoding without the cache (generate_greedy)
gives the same 64 tokens.  The table is what tools/bench_ratios.py reads
(the ms/token column).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from bench_long import status_mb  # noqa: E402

from bench_layers import ContentionWatch, print_environment  # noqa: E402
from gpt2_reference import (GPT2Config, GPT2LMHeadModel, generate_greedy,  # noqa: E402
                            generate_greedy_cached)

THREADS = 2
PROMPT, NEW = 16, 64
NAME = "GenerateGPT2Small/P%d_N%d_B1" % (PROMPT, NEW)


def main():
    ap = argparse.ArgumentParser(description="PyTorch GPT-2 small cached greedy decoding (float32)")
    ap.add_argument("--iters", type=int, default=3, help="timed calls")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls first")
    ap.add_argument("--check", action="store_true", help="assert uncached decoding gives the same tokens")
    args = ap.parse_args()
    iters, warmup = max(1, args.iters), max(0, args.warmup)
    base = status_mb("VmRSS")

    torch.set_num_threads(THREADS)
    torch.set_default_dtype(torch.float32)
    print_environment("GPT-2 small, inference_mode, warm-up %d, median of %d" % (warmup, iters))
    torch.manual_seed(1)
    cfg = GPT2Config()
    model = GPT2LMHeadModel(cfg).eval()
    n = sum(p.numel() for p in model.parameters())  # the tied lm_head counted once
    print("parameters: %d (%.1f MB in float32)" % (n, 4 * n / 1e6))
    prompt = torch.tensor([(7919 * i + 13) % cfg.vocab_size for i in range(PROMPT)])

    def run():
        with torch.inference_mode():
            return generate_greedy_cached(model, prompt, NEW)

    if args.check:
        with torch.inference_mode():
            want = generate_greedy(model, prompt, NEW)
        if run().tolist() != want.tolist():
            raise AssertionError("cached and uncached greedy decoding disagree")
        print("check: cached and uncached decoding give the same %d tokens" % NEW)
    print()
    print("| benchmark | ms/step | ms/token | tokens/s | peakRSS_MB | base_MB | min–max ms/token | iters |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    sys.stdout.flush()
    watch = ContentionWatch()
    for _ in range(warmup):
        out = run()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    if out.numel() != NEW:
        raise AssertionError("%d new tokens, want %d" % (out.numel(), NEW))
    med = statistics.median(times)
    peak = status_mb("VmHWM")
    print("| %s |  | %.2f | %.1f | %s | %s | %.1f–%.1f | %d |" % (
        NAME, med * 1e3 / NEW, NEW / med, "%.1f" % peak if peak else "",
        "%.1f" % base if base else "", min(times) * 1e3 / NEW, max(times) * 1e3 / NEW, iters))
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
