#!/usr/bin/env python3
"""PyTorch CPU reference timings for the Go ViT benchmarks
(finetune/images_bench_test.go).

Run on the same 2-core machine as the Go benchmarks, with OpenBLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_vit.py [--iters N] [name-filter]

The model is models/vit's Fashion preset (28x28x1 images, 4x4 patches so 50
tokens with the class token, 6 layers, 4 heads, 128 wide, 512 inner, a
10-class head: 1,199,882 parameters) built from
tools/pytorch/vit_reference.py's modules (Hugging Face's
ViTForImageClassification with its module names, eager attention written
out with matmuls + softmax, exact erf GELU, pre-norm), float32, HF's
initialisation (trunc_normal_(std 0.02) matrices, class token and
positions, biases 0, LayerNorms 1 and 0), dropouts off as in the Go
benchmarks. torch.set_num_threads(2) (Go's GOMAXPROCS on the 2-core box).

The batch: N(0, 1) pixels (B, 1, 28, 28) and labels i*7 % 10, as the Go
benchmark's.

  TrainStep/vit-fashion/B64, /B128
      one optimiser step: forward, F.cross_entropy, backward,
      torch.optim.AdamW(lr 1e-4, weight_decay 0.01).step();
      zero_grad(set_to_none=True) included. Augmentation excluded.
  Forward/vit-fashion/B64, /B256
      inference: eval + no_grad, the class scores of the batch.

--bf16 runs every row with its forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's own mixed precision:
weights, gradients and AdamW stay float32; autocast's linear, conv, matmul
and bmm run in bf16, through oneDNN's avx512_core_bf16 kernels on torch
1.13 where the CPU has AVX-512 BF16) and names it with a _bf16 suffix
(TrainStep/vit-fashion/B128_bf16, as zoo's bf16 row).

Every benchmark: 3 warm-up iterations, then the median of --iters
(default 10, at least 3) timed ones. images/s = B / seconds; cpu-ms/step is the
process's CPU time per timed iteration (helpers shared with
bench_layers.py).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layers import ContentionWatch, print_environment  # noqa: E402
import vit_reference as ref  # noqa: E402

THREADS = 2

FASHION = dict(ref.CONFIG)
FASHION.update(hidden_size=128, num_hidden_layers=6, num_attention_heads=4, intermediate_size=512,
               image_size=28, patch_size=4, num_channels=1, encoder_stride=4,
               id2label={str(i): str(i) for i in range(10)})


def hf_init(model):
    """ViTPreTrainedModel._init_weights with initializer_range 0.02."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layernorm" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                nn.init.trunc_normal_(p, std=0.02)


def bench(fn, iters, warmup=3):
    """Median, min and max wall seconds per call, and the process's mean CPU
    seconds (all threads) per call."""
    for _ in range(warmup):
        fn()
    times = []
    c0 = time.process_time()
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / iters
    return statistics.median(times), min(times), max(times), cpu


class Classifier(ref.ViTForImageClassification):
    """The reference without its loss and its second (mean-pooled) head call."""

    def forward(self, x):
        return self.classifier(self.vit(x, ref.Flags())[:, 0, :])


def build_cases(gen, bf16=False):
    cases = []
    sfx = "_bf16" if bf16 else ""

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)

    for b in (64, 128):
        m = Classifier(FASHION)
        hf_init(m)
        m.train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
        x = torch.randn(b, 1, 28, 28, generator=gen)
        y = torch.arange(b) * 7 % 10

        def step(m=m, opt=opt, x=x, y=y):
            with autocast():
                loss = F.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        cases.append(("TrainStep/vit-fashion/B%d%s" % (b, sfx), b, step))
    for b in (64, 256):
        m = Classifier(FASHION)
        hf_init(m)
        m.eval()
        x = torch.randn(b, 1, 28, 28, generator=gen)

        def forward(m=m, x=x):
            with torch.no_grad(), autocast():
                m(x)
        cases.append(("Forward/vit-fashion/B%d%s" % (b, sfx), b, forward))
    return cases


def main():
    ap = argparse.ArgumentParser(description="PyTorch ViT (Fashion preset) CPU reference timings (float32)")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations (>= 3)")
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="torch.set_num_threads (default %(default)s, the 2-core box; the scaling table of docs/speed.md runs 1 to 16)")
    ap.add_argument("--bf16", action="store_true",
                    help="forward and loss under torch.autocast(\"cpu\", dtype=torch.bfloat16); "
                         "names get a _bf16 suffix")
    ap.add_argument("filter", nargs="?", default="", help="substring filter on benchmark names")
    args = ap.parse_args()
    iters = max(3, args.iters)

    torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)

    print_environment("ViT Fashion preset, dropout off%s, warm-up 3, median of %d" % (
        ", autocast bf16" if args.bf16 else "", iters))
    cases = build_cases(gen, args.bf16)
    print()
    print("| benchmark | ms/step | images/s | min–max ms/iter | iters | cpu-ms/step |")
    print("|---|---:|---:|---:|---:|---:|")
    watch = ContentionWatch()
    for name, b, fn in cases:
        if args.filter and args.filter not in name:
            continue
        med, lo, hi, cpu = bench(fn, iters)
        print("| %s | %.1f | %.1f | %.0f–%.0f | %d | %.0f |" % (name, med * 1e3, b / med, lo * 1e3, hi * 1e3, iters, cpu * 1e3))
        sys.stdout.flush()
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
