#!/usr/bin/env python3
"""PyTorch CPU reference timings for the Go GPT benchmarks (models/gpt).

Run on the same 2-core machine as the Go benchmarks, with OpenBLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_gpt.py [--iters N] [name-filter]

The model is tools/pytorch/gpt2_reference.py's GPT2LMHeadModel (HF GPT-2,
eager attention written out with matmuls, gelu_new) in float32 with
V=512, n_positions=128, n_embd=256, n_head=4, n_layer=4, n_inner=1024,
all dropouts 0.  torch.set_num_threads(2).  Every benchmark: 3 warm-up
iterations, then the median of at least --iters (default 10) timed ones.

  GPTTrainStep/...   one optimiser step on a (16, 128) batch: forward, mean
                     cross-entropy over all B*T positions (targets given per
                     position, ~10% = -100, ignore_index=-100), backward,
                     torch.optim.AdamW.step(); zero_grad(set_to_none) included.
                     tokens/s = B*T / seconds.
  GPTGenerate/nocache/...  greedy decoding, batch 1, 16-token prompt, 112 new
                     tokens, eval + no_grad; every step runs the full forward
                     of the whole (growing) sequence (generate_greedy).
  GPTGenerate/cache/...    same with past_key_values (HF-style concat of past
                     k, v): one 16-token prefill, then 111 one-token forwards.
                     ms/token = wall time of the whole generation / 112
                     (prefill included); both variants must emit the same
                     tokens, which the script asserts.

--bf16 runs GPTTrainStep only, its forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's own mixed precision:
the weights, their gradients and AdamW stay float32; autocast's linear,
matmul and bmm take bf16 copies of their inputs and return bf16, which on
torch 1.13 run through oneDNN's brgemm avx512_core_bf16 kernels where the
CPU has AVX-512 BF16), named with a _bf16 suffix
(GPTTrainStep/V512_T128_d256_h4_L4_ff1024_B16_bf16), as zoo's bf16 row.

--activation gelu (exact erf GELU) is for comparison only: Debian's torch 1.13
evaluates tanh with a scalar, single-threaded loop (~4.6 ms per 2M floats on
the dev box), so gelu_new = 0.5x(1+tanh(...)) written out as HF does costs
far more than the fused erf GELU kernel.

The BLAS actually loaded and the CPU used by other processes are printed
(helpers shared with bench_layers.py).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layers import ContentionWatch, print_environment  # noqa: E402
from gpt2_reference import (GPT2Config, GPT2LMHeadModel, generate_greedy,  # noqa: E402
                            generate_greedy_cached)

THREADS = 2
V, NPOS, D, H, L, FF = 512, 128, 256, 4, 4, 1024
B, T = 16, 128
PROMPT, NEW = 16, 112


def make_model(activation="gelu_new"):
    cfg = GPT2Config(vocab_size=V, n_positions=NPOS, n_embd=D, n_layer=L, n_head=H, n_inner=FF,
                     activation_function=activation, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, bos_token_id=V - 1, eos_token_id=V - 1)
    return GPT2LMHeadModel(cfg)


def bench(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def build_cases(gen, activation, bf16=False):
    cases = []
    arch = "V%d_T%d_d%d_h%d_L%d_ff%d" % (V, T, D, H, L, FF)
    suffix = "" if activation == "gelu_new" else "_" + activation

    # --- training step -----------------------------------------------------
    model = make_model(activation).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randint(0, V, (B, T), generator=gen)
    y = torch.randint(0, V, (B, T), generator=gen)
    y[torch.rand(B, T, generator=gen) < 0.1] = -100

    def train_step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, V), y.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    cases.append(("GPTTrainStep/%s_B%d%s%s" % (arch, B, suffix, "_bf16" if bf16 else ""), train_step, "step", B * T))
    if bf16:  # the decoding rows stay float32
        return cases

    # --- generation ----------------------------------------------------------
    gmodel = make_model(activation).eval()
    prompt = torch.randint(0, V, (PROMPT,), generator=gen)
    a = generate_greedy(gmodel, prompt, NEW, NPOS)
    b = generate_greedy_cached(gmodel, prompt, NEW)
    if a.tolist() != b.tolist():
        raise AssertionError("cached and uncached greedy decoding disagree")
    gname = "V%d_d%d_h%d_L%d_ff%d_P%d_N%d_B1%s" % (V, D, H, L, FF, PROMPT, NEW, suffix)

    def gen_nocache():
        with torch.no_grad():
            generate_greedy(gmodel, prompt, NEW, NPOS)

    def gen_cache():
        with torch.no_grad():
            generate_greedy_cached(gmodel, prompt, NEW)

    cases.append(("GPTGenerate/nocache/" + gname, gen_nocache, "token", NEW))
    cases.append(("GPTGenerate/cache/" + gname, gen_cache, "token", NEW))
    return cases


def main():
    ap = argparse.ArgumentParser(description="PyTorch GPT CPU reference timings (float32)")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations (>= 10)")
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="torch.set_num_threads (default %(default)s, the 2-core box; the scaling table of docs/speed.md runs 1 to 16)")
    ap.add_argument("--activation", default="gelu_new", choices=("gelu_new", "gelu", "relu"),
                    help="MLP activation (GPT-2 uses gelu_new; other values add a name suffix)")
    ap.add_argument("--bf16", action="store_true",
                    help="the training step only, its forward and loss under torch.autocast(\"cpu\", "
                         "dtype=torch.bfloat16); names get a _bf16 suffix")
    ap.add_argument("filter", nargs="?", default="", help="substring filter on benchmark names")
    args = ap.parse_args()
    iters = max(10, args.iters)

    torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)

    print_environment("%s%s, warm-up 3, median of %d" % (
        args.activation, ", autocast bf16" if args.bf16 else "", iters))
    print()
    print("| benchmark | ms/step | ms/token | tokens/s | min–max ms/iter | iters |")
    print("|---|---:|---:|---:|---:|---:|")
    cases = build_cases(gen, args.activation, args.bf16)
    watch = ContentionWatch()
    for name, fn, unit, tokens in cases:
        if args.filter and args.filter not in name:
            continue
        med, lo, hi = bench(fn, iters)
        if unit == "step":
            cols = ("%.1f" % (med * 1e3), "", "%.0f" % (tokens / med))
        else:
            cols = ("", "%.2f" % (med * 1e3 / tokens), "%.0f" % (tokens / med))
        print("| %s | %s | %s | %s | %.0f–%.0f | %d |" % ((name,) + cols + (lo * 1e3, hi * 1e3, iters)))
        sys.stdout.flush()
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
