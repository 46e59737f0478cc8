#!/usr/bin/env python3
"""Prints tools/scaling.sh's table from the logs in its output folder: each
training step's time in zoo (GOMAXPROCS) and PyTorch (set_num_threads) at
each thread count, their ratio, each side's speed-up over 2 threads, and
the float32 FMA peak at that count. Plain Python 3."""

import os
import re
import statistics
import sys

ROWS = [  # (title, zoo log, zoo name, torch log, torch name)
    ("GPT step (B16 T128 d256 L4)", "zoo-gpt.log", "TrainStep/V512_T128_d256_h4_L4_ff1024_B16",
     "torch-gpt.log", "GPTTrainStep/V512_T128_d256_h4_L4_ff1024_B16"),
    ("GPT step in bf16 (ops.UseBF16 against torch.autocast)", "zoo-gpt.log",
     "TrainStep/V512_T128_d256_h4_L4_ff1024_B16_bf16", "torch-gpt.log",
     "GPTTrainStep/V512_T128_d256_h4_L4_ff1024_B16_bf16"),
    ("BERT-Mini pretraining step (B32 T128)", "zoo-bert.log", "BERTMiniPretrainStep_T128_B32",
     "torch-bert.log", "BERTMiniPretrainStep_T128_B32"),
    ("ViT Fashion-MNIST step (B128)", "zoo-vit.log", "TrainStep/vit-fashion/B128",
     "torch-vit.log", "TrainStep/vit-fashion/B128"),
]


def read(path):
    """{threads: {name: {metric: [values]}}} from a log whose runs are headed
    by '## threads T' lines: Go benchmark lines and PyTorch's '| name | ms |' rows."""
    out, t = {}, None
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        m = re.match(r"## threads (\d+)", line)
        if m:
            t = int(m.group(1))
            continue
        if t is None:
            continue
        if line.startswith("Benchmark"):
            f = line.split()
            name = re.sub(r"-\d+$", "", f[0][len("Benchmark"):])
            for i in range(2, len(f) - 1):
                if re.match(r"^[\d.e+-]+$", f[i]):
                    out.setdefault(t, {}).setdefault(name, {}).setdefault(f[i + 1], []).append(float(f[i]))
        elif line.startswith("| ") and not line.startswith("| benchmark"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            try:
                out.setdefault(t, {}).setdefault(cells[0], {}).setdefault("ms", []).append(float(cells[1]))
            except (ValueError, IndexError):
                pass
    return out


def get(d, t, name, metric):
    v = d.get(t, {}).get(name, {}).get(metric)
    return statistics.median(v) if v else None


def main():
    out = sys.argv[1]
    gemm = read(os.path.join(out, "zoo-gemm.log"))
    def cell(v, f="%.1f"):
        return f % v if v is not None else ""

    def ratio(a, b):
        return cell(a / b if a and b else None, "%.2f×")

    for title, zl, zn, tl, tn in ROWS:
        z, p = read(os.path.join(out, zl)), read(os.path.join(out, tl))
        zb = read(os.path.join(out, "base-" + zl))
        ts = sorted(t for t in set(z) | set(p) if get(z, t, zn, "ms/step") or get(p, t, tn, "ms"))
        if not ts:
            continue
        before = any(get(zb, t, zn, "ms/step") for t in ts)
        print("\n%s\n" % title)
        print("| threads | zoo ms | " + ("zoo before ms | " if before else "") +
              "PyTorch ms | zoo/PyTorch | zoo speed-up over 2 | " +
              ("before: speed-up over 2 | " if before else "") + "PyTorch speed-up over 2 |")
        print("|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if before else ""))
        z2, p2, b2 = get(z, 2, zn, "ms/step"), get(p, 2, tn, "ms"), get(zb, 2, zn, "ms/step")
        for t in ts:
            zm, pm, bm = get(z, t, zn, "ms/step"), get(p, t, tn, "ms"), get(zb, t, zn, "ms/step")
            row = [str(t), cell(zm)] + ([cell(bm)] if before else []) + [cell(pm), ratio(zm, pm), ratio(z2, zm)]
            row += [ratio(b2, bm)] if before else []
            row += [ratio(p2, pm)]
            print("| " + " | ".join(row) + " |")
    if gemm:
        print("\nfloat32 FMA peak (BenchmarkPeakFMA, all goroutines) and the main job's fc products (GFLOP/s)\n")
        names = sorted({n for t in gemm for n in gemm[t] if n.startswith("SgemmMainJob")})
        print("| threads | peak | " + " | ".join(n.split("/", 1)[1] for n in names) + " |")
        print("|---:|---:|" + "---:|" * len(names))
        for t in sorted(gemm):
            peak = get(gemm, t, "PeakFMA/goroutines%d" % t, "GFLOP/s")
            row = ["%.0f" % peak if peak else ""]
            row += ["%.0f" % v if v else "" for v in (get(gemm, t, n, "GFLOP/s") for n in names)]
            print("| %d | %s |" % (t, " | ".join(row)))


if __name__ == "__main__":
    main()
