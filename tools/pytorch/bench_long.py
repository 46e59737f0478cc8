#!/usr/bin/env python3
"""PyTorch CPU reference for the long-sequence sweep: layers'
BenchmarkAttentionLong and models/gpt's BenchmarkTrainStepLong, with peak RSS.

Run on the same 2-core machine as the Go benchmarks, with OpenBLAS
(tools/bench.sh long does this, interleaved with the Go rows):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_long.py [--iters N] [--warmup N] [name-filter]

float32, torch.set_num_threads(2); T = 128, 256, 512, 1024, 2048:

  AttentionLong/B2_T{T}_d256_h4
      causal self-attention, batch 2, 4 heads: separate q, k, v and out
      projections with biases (bench_layers.py's parameters), written out
      with matmuls + masked_fill(-inf) + softmax as bench_layers.py does (no
      fused kernel, no nn.MultiheadAttention); forward and backward of
      (y * r).sum() for a fixed random r of y's shape, gradients for every
      parameter and for x: the Go benchmark's Σ y ⊙ r.  tokens/s = 2*T / s.
  TrainStepLong/V512_T{T}_d256_h4_L4_ff1024_B{2048/T}
      bench_gpt.py's training step (gpt2_reference.GPT2LMHeadModel, Hugging
      Face's GPT-2 with eager attention and gelu_new, dropouts 0; forward,
      mean cross-entropy over all B*T positions, backward, AdamW.step(),
      zero_grad(set_to_none)) with n_positions 2048 in every row and 2048
      tokens per batch, B = 2048/T, as the Go benchmark; targets are random
      ids (none ignored, as in Go).  tokens/s = 2048 / s.

Every row runs in its own child process (this script with --row NAME), so
that its peak RSS is its own:

  peakRSS_MB  VmHWM of the child, from /proc/self/status, in MB (10^6 bytes):
              the most resident memory it had, torch itself included.
              ru_maxrss is not used: Linux carries it over execve from the
              process that started the child.  internal/peakrss reads the
              same field for the Go rows.
  base_MB     the child's resident memory (VmRSS) after `import torch`, before
              the row builds anything: what the runtime costs on its own.

Each row: --warmup (default 1) untimed iterations, then the median of --iters
(default 5) timed ones.  The table is what tools/bench_ratios.py reads
(column 2 = ms per iteration, and the peakRSS_MB column).
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = 2
LENGTHS = (128, 256, 512, 1024, 2048)
ATT_B, D, H = 2, 256, 4
V, L, FF, NPOS, TOKENS = 512, 4, 1024, 2048, 2048


def attention_name(t):
    return "AttentionLong/B%d_T%d_d%d_h%d" % (ATT_B, t, D, H)


def train_name(t):
    return "TrainStepLong/V%d_T%d_d%d_h%d_L%d_ff%d_B%d" % (V, t, D, H, L, FF, TOKENS // t)


ROWS = [attention_name(t) for t in LENGTHS] + [train_name(t) for t in LENGTHS]


def status_mb(field):
    """A "kB" field of /proc/self/status (VmHWM, VmRSS) in MB, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    kb = line.split()[1]
                    return int(kb) * 1024 / 1e6
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------
# one row, in the child
# --------------------------------------------------------------------------


def build_attention(t):
    import torch
    from bench_layers import mha_params

    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(ATT_B, t, D, generator=gen).requires_grad_(True)
    r = torch.randn(ATT_B, t, D, generator=gen)
    ps = mha_params(D, gen)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    hd = D // H

    def run():
        wq, bq, wk, bk, wv, bv, wo, bo = ps
        F = torch.nn.functional
        q = F.linear(x, wq, bq).view(ATT_B, t, H, hd).transpose(1, 2)  # (B, h, T, hd)
        k = F.linear(x, wk, bk).view(ATT_B, t, H, hd).transpose(1, 2)
        v = F.linear(x, wv, bv).view(ATT_B, t, H, hd).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)  # (B, h, T, T)
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(ATT_B, t, D)
        y = F.linear(ctx, wo, bo)
        (y * r).sum().backward()
        for p in ps + [x]:
            p.grad = None

    return run, ATT_B * t


def build_train(t):
    import torch
    import torch.nn.functional as F
    from gpt2_reference import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)
    b = TOKENS // t
    cfg = GPT2Config(vocab_size=V, n_positions=NPOS, n_embd=D, n_layer=L, n_head=H, n_inner=FF,
                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, bos_token_id=V - 1, eos_token_id=V - 1)
    model = GPT2LMHeadModel(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, V, (b, t), generator=gen)
    y = torch.randint(0, V, (b, t), generator=gen)

    def run():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return run, b * t


def run_row(name, iters, warmup):
    """Times one row in this process and prints its table line."""
    import torch

    base = status_mb("VmRSS")
    torch.set_num_threads(THREADS)
    torch.set_default_dtype(torch.float32)
    t = None
    for n in LENGTHS:
        if name == attention_name(n):
            fn, tokens = build_attention(n)
            t = n
        elif name == train_name(n):
            fn, tokens = build_train(n)
            t = n
    if t is None:
        raise SystemExit("unknown row %r; rows: %s" % (name, ", ".join(ROWS)))
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    peak = status_mb("VmHWM")
    print("| %s | %.2f | %.0f | %s | %s | %.0f–%.0f | %d |" % (
        name, med * 1e3, tokens / med, "%.1f" % peak if peak else "",
        "%.1f" % base if base else "", min(times) * 1e3, max(times) * 1e3, iters))
    sys.stdout.flush()


# --------------------------------------------------------------------------
# the parent: one child per row
# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description="PyTorch long-sequence CPU reference (float32, peak RSS per row)")
    ap.add_argument("--iters", type=int, default=5, help="timed iterations per row")
    ap.add_argument("--warmup", type=int, default=1, help="untimed iterations first")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # internal: run this one row here
    ap.add_argument("filter", nargs="?", default="", help="substring filter on row names")
    args = ap.parse_args()
    iters, warmup = max(1, args.iters), max(0, args.warmup)
    sys.path.insert(0, HERE)
    if args.row:
        run_row(args.row, iters, warmup)
        return 0

    from bench_layers import ContentionWatch, print_environment
    import torch

    torch.set_num_threads(THREADS)
    print_environment("fwd+bwd, one process per row, warm-up %d, median of %d" % (warmup, iters))
    print()
    print("| benchmark | ms/iter | tokens/s | peakRSS_MB | base_MB | min–max ms/iter | iters |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    sys.stdout.flush()
    watch = ContentionWatch()
    failed = 0
    for name in ROWS:
        if args.filter and args.filter not in name:
            continue
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--row", name,
                            "--iters", str(iters), "--warmup", str(warmup)])
        if p.returncode != 0:
            failed += 1
            print("| %s | failed (exit %d) | | | | | |" % (name, p.returncode))
            sys.stdout.flush()
    watch.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
