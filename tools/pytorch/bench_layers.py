#!/usr/bin/env python3
"""PyTorch CPU reference timings for the Go layer benchmarks.

Run on the same 2-core machine as the Go benchmarks, with:

    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_layers.py

(Without OMP_WAIT_POLICY=PASSIVE the spinning OpenMP threads make this about
4x slower on a 2-core box.)  The script also calls torch.set_num_threads(2).

Debian's python3-torch is linked against the generic libblas.so.3; with the
default netlib reference BLAS all matmuls are single-threaded and ~10x slower.
For a fair reference install libopenblas0-pthread and point the loader at it
(see tools/pytorch/README.md):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \
        /usr/bin/python3 tools/pytorch/bench_layers.py

The BLAS library actually loaded is printed in the header line.

Every benchmark is forward + backward in float32: 3 warm-up iterations, then
the median of at least --iters (default 20, minimum 10) timed iterations;
cheap ops get more iterations so that each timed loop lasts >= ~1 s.  tokens/s =
B*T / seconds per iteration (for the standalone ops: rows / seconds, where
rows = 16*128 = 2048 token positions).

The attention code is written out with matmuls + masked_fill + softmax (the
same math as tools/pytorch/golden_layers.py), not torch's fused kernels, so
the comparison with the Go implementation is like-for-like.
"""

import argparse
import math
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

THREADS = 2


def cpu_busy_seconds():
    """Total non-idle CPU seconds of the whole machine (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    return (sum(vals[:8]) - idle) / float(os.sysconf("SC_CLK_TCK"))


def own_cpu_seconds():
    """CPU seconds of this process and of its finished children (bench_long.py
    runs each row in a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def blas_library():
    """Which BLAS shared object the process actually mapped (Linux only)."""
    torch.randn(64, 64) @ torch.randn(64, 64)  # make sure BLAS is loaded
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if "blas" in base or "mkl" in base:
                    libs.add(os.path.realpath(path))
    except OSError:
        return "unknown"
    return ", ".join(sorted(libs)) or "none found"


class ContentionWatch:
    """Measures the CPU other processes used while benchmarks ran."""

    def __init__(self):
        self.busy, self.own, self.wall = cpu_busy_seconds(), own_cpu_seconds(), time.time()

    def report(self):
        busy_end = cpu_busy_seconds()
        if self.busy is None or busy_end is None:
            return
        wall = time.time() - self.wall
        foreign = (busy_end - self.busy) - (own_cpu_seconds() - self.own)
        frac = max(0.0, foreign) / (wall * os.cpu_count())
        print()
        print("CPU used by other processes during the run: %.0f%% of %d cores%s" % (
            100.0 * frac, os.cpu_count(), "  (timings unreliable)" if frac > 0.1 else ""))


def print_environment(what):
    """Prints torch, thread and BLAS settings and warns about what skews timings:
    a missing OMP_WAIT_POLICY=PASSIVE, other processes busy, reference BLAS."""
    env = " ".join("%s=%s" % (k, os.environ.get(k, "<unset>"))
                   for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"))
    print("torch %s, %s, threads=%d, %s, float32, %s" % (
        torch.__version__, platform.machine(), torch.get_num_threads(), env, what))
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        print("WARNING: OMP_WAIT_POLICY=PASSIVE not set; timings may be ~4x slower",
              file=sys.stderr)
    busy0 = cpu_busy_seconds()
    time.sleep(0.5)
    busy1 = cpu_busy_seconds()
    if busy0 is not None and busy1 is not None:
        print("CPU busy before start (other processes): %.0f%% of %d cores" % (
            100.0 * (busy1 - busy0) / (0.5 * os.cpu_count()), os.cpu_count()))
    blas = blas_library()
    print("BLAS: %s" % blas)
    if "openblas" not in blas and "mkl" not in blas:
        print("WARNING: reference (netlib) BLAS in use; matmuls are single-threaded and ~10x "
              "slower. See tools/pytorch/README.md (LD_LIBRARY_PATH=.../openblas-pthread).",
              file=sys.stderr)


def linear_params(n_in, n_out, gen):
    w = (torch.randn(n_out, n_in, generator=gen) / math.sqrt(n_in)).requires_grad_(True)
    b = torch.zeros(n_out).requires_grad_(True)
    return [w, b]


def mha_params(d, gen):
    ps = []
    for _ in range(4):  # q, k, v, out
        ps += linear_params(d, d, gen)
    return ps


def mha_forward(ps, x, heads, key_mask):
    """Self-attention; key_mask: (B,T) bool, True = attend."""
    wq, bq, wk, bk, wv, bv, wo, bo = ps
    B, T, d = x.shape
    hd = d // heads
    q = F.linear(x, wq, bq).view(B, T, heads, hd).transpose(1, 2)
    k = F.linear(x, wk, bk).view(B, T, heads, hd).transpose(1, 2)
    v = F.linear(x, wv, bv).view(B, T, heads, hd).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    scores = scores.masked_fill(~key_mask.view(B, 1, 1, T), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    ctx = (probs @ v).transpose(1, 2).reshape(B, T, d)
    return F.linear(ctx, wo, bo)


def make_key_mask(B, T, gen):
    # each sequence keeps a random length in [T/2, T]; the rest is padding
    lens = torch.randint(T // 2, T + 1, (B,), generator=gen)
    return torch.arange(T).view(1, T) < lens.view(B, 1)


def bench(fn, params, iters, warmup=3, min_total=1.0, max_iters=1000):
    """Median seconds/iter.  Cheap ops get more iterations (up to max_iters) so
    that the timed loop lasts at least ~min_total seconds."""
    t_warm = 0.0
    for _ in range(warmup):
        t0 = time.perf_counter()
        fn()
        t_warm = time.perf_counter() - t0
        for p in params:
            p.grad = None
    if t_warm > 0:
        iters = max(iters, min(max_iters, int(math.ceil(min_total / t_warm))))
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        for p in params:
            p.grad = None
    return statistics.median(times), iters


def build_cases(gen):
    B, T, d, h, dff = 16, 128, 256, 4, 1024
    N = B * T
    cases = []

    # --- MHA self-attention -------------------------------------------------
    x = torch.randn(B, T, d, generator=gen).requires_grad_(True)
    mask = make_key_mask(B, T, gen)
    ps = mha_params(d, gen)

    def run_mha():
        mha_forward(ps, x, h, mask).sum().backward()

    cases.append(("MHA/B%d_T%d_d%d_h%d" % (B, T, d, h), run_mha, ps + [x], N))

    # --- Encoder block (pre-norm, gelu) ------------------------------------
    eps_ = 1e-5
    ln1 = [torch.ones(d).requires_grad_(True), torch.zeros(d).requires_grad_(True)]
    ln2 = [torch.ones(d).requires_grad_(True), torch.zeros(d).requires_grad_(True)]
    sa = mha_params(d, gen)
    fc1 = linear_params(d, dff, gen)
    fc2 = linear_params(dff, d, gen)
    xe = torch.randn(B, T, d, generator=gen).requires_grad_(True)

    def run_enc():
        hln = F.layer_norm(xe, (d,), ln1[0], ln1[1], eps_)
        hh = xe + mha_forward(sa, hln, h, mask)
        f = F.linear(F.gelu(F.linear(F.layer_norm(hh, (d,), ln2[0], ln2[1], eps_), *fc1)), *fc2)
        (hh + f).sum().backward()

    cases.append(("EncoderBlock/B%d_T%d_d%d_h%d_ff%d" % (B, T, d, h, dff), run_enc,
                  ln1 + ln2 + sa + fc1 + fc2 + [xe], N))

    # --- standalone ops (backward with a fixed random upstream gradient) ---
    xl = torch.randn(N, d, generator=gen).requires_grad_(True)
    lnw = torch.ones(d).requires_grad_(True)
    lnb = torch.zeros(d).requires_grad_(True)
    gl = torch.randn(N, d, generator=gen)

    def run_ln():
        F.layer_norm(xl, (d,), lnw, lnb, eps_).backward(gl)

    cases.append(("LayerNorm/N%d_D%d" % (N, d), run_ln, [xl, lnw, lnb], N))

    xg = torch.randn(N, dff, generator=gen).requires_grad_(True)
    gg = torch.randn(N, dff, generator=gen)

    def run_gelu():
        F.gelu(xg).backward(gg)

    cases.append(("GELU/N%d_D%d" % (N, dff), run_gelu, [xg], N))

    BH = B * h
    xs = torch.randn(BH, T, T, generator=gen).requires_grad_(True)
    smask = mask.view(B, 1, 1, T).expand(B, h, 1, T).reshape(BH, 1, T)
    gs = torch.randn(BH, T, T, generator=gen)
    scale = 1.0 / math.sqrt(d // h)

    def run_softmax():
        torch.softmax((xs * scale).masked_fill(~smask, float("-inf")), dim=-1).backward(gs)

    cases.append(("MaskedSoftmax/BH%d_T%d" % (BH, T), run_softmax, [xs], N))

    V = 512
    logits = torch.randn(N, V, generator=gen).requires_grad_(True)
    targets = torch.randint(0, V, (N,), generator=gen)
    targets[torch.rand(N, generator=gen) < 0.1] = -100

    def run_ce():
        F.cross_entropy(logits, targets, ignore_index=-100).backward()

    cases.append(("CrossEntropy/N%d_V%d" % (N, V), run_ce, [logits], N))
    cases.extend(encoder_step_cases(gen))
    return cases


def encoder_step_cases(gen):
    """Whole encoder training steps (forward + backward of the loss, no
    optimizer) at the performance issue's BERT-like and ViT-like shapes, the
    same models as BenchmarkEncoderStep in layers/bench_test.go."""
    cases = []
    torch.manual_seed(0)
    B, T, V, d = 16, 128, 1024, 256
    bert = BertLike(V, d)
    ids = torch.randint(0, V, (B, T), generator=gen)
    labels = torch.full((B, T), -100, dtype=torch.long)
    labels.view(-1)[::7] = torch.randint(0, V, ((labels.numel() + 6) // 7,), generator=gen)

    def run_bert():
        bert(ids, labels).backward()

    cases.append(("EncoderStep/bert_like_V1024_T128_d256_h4_L4_ff1024_B16", run_bert, list(bert.parameters()), B * T))

    Bv = 64
    vit = ViTLike()
    img = torch.randn(Bv, 1, 28, 28, generator=gen)
    y = torch.arange(Bv) % 10

    def run_vit():
        vit(img, y).backward()

    cases.append(("EncoderStep/vit_like_28x28x1_p4_d128_h4_L6_ff256_B64", run_vit, list(vit.parameters()), Bv))
    return cases


class BertLike(torch.nn.Module):
    """Word + position embeddings, LayerNorm, a post-norm GELU encoder and a
    masked-LM head (dense, GELU, LayerNorm, decoder tied to the words)."""

    def __init__(self, V, d, layers=4, heads=4, ff=1024):
        super().__init__()
        nn = torch.nn
        self.words, self.pos = nn.Embedding(V, d), nn.Embedding(512, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.dense, self.mlm_ln = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)

    def forward(self, ids, labels):
        h = self.words(ids) + self.pos(torch.arange(ids.shape[1]))
        h = self.enc(self.ln(h))
        h = self.mlm_ln(F.gelu(self.dense(h)))
        logits = h @ self.words.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)


class ViTLike(torch.nn.Module):
    """4×4 patches of 28×28 grey images, a class token, learned positions, a
    pre-norm GELU encoder with a final norm, and a 10-way head on the class
    token."""

    def __init__(self, d=128, layers=6, heads=4, ff=256):
        super().__init__()
        nn = torch.nn
        self.patch = nn.Conv2d(1, d, 4, 4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 50, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d, eps=1e-12),
                                         enable_nested_tensor=False)
        self.head = nn.Linear(d, 10)

    def forward(self, x, y):
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(x.shape[0], -1, -1), h], dim=1) + self.pos
        return F.cross_entropy(self.head(self.enc(h)[:, 0]), y)


def main():
    ap = argparse.ArgumentParser(description="PyTorch CPU reference timings (fwd+bwd, float32)")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations (>= 10)")
    ap.add_argument("filter", nargs="?", default="", help="substring filter on benchmark names")
    args = ap.parse_args()
    iters = max(10, args.iters)

    torch.set_num_threads(THREADS)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)

    print_environment("fwd+bwd, warm-up 3, median of >=%d" % iters)
    print()
    print("| benchmark | ms/iter | tokens/s | iters |")
    print("|---|---:|---:|---:|")
    cases = build_cases(gen)
    watch = ContentionWatch()
    for name, fn, params, tokens in cases:
        if args.filter and args.filter not in name:
            continue
        sec, n = bench(fn, params, iters)
        print("| %s | %.2f | %.0f | %d |" % (name, sec * 1e3, tokens / sec, n))
        sys.stdout.flush()
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
