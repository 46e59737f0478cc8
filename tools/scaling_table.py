#!/usr/bin/env python3
"""Prints tools/scaling.sh's table from the logs in its output folder: each
training step's time in zoo (GOMAXPROCS) and PyTorch (set_num_threads) at
each thread count, their ratio, each side's speed-up over 2 threads, and
the float32 FMA peak at that count. Plain Python 3.

    tools/scaling_table.py OUT [--svg FILE]

--svg also draws each step's speed-up over 2 threads against the thread
count, zoo (and zoo before, where timed) against PyTorch, with the FMA
peak's own speed-up as the ceiling (docs/scaling.svg)."""

import math
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


def svg(path, panels, peak):
    """Writes one panel a step: speed-up over 2 threads against threads
    (log-2 axes), a line per side, and the peak's speed-up dashed."""
    w, h, pad = 300, 260, 40
    colors = {"zoo": "#1f77b4", "zoo before": "#9ecae1", "PyTorch": "#d62728", "FMA peak": "#555555"}
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
             % (w * len(panels), h + 30)]
    tmax = max(t for _, lines in panels for pts in lines.values() for t, _ in pts)
    smax = max([v for _, lines in panels for pts in lines.values() for _, v in pts] + [v for _, v in peak] + [2])

    def x(t, i):
        return i * w + pad + (w - 2 * pad) * (math.log2(t) - 1) / max(math.log2(tmax) - 1, 1)

    def y(v):
        return h - pad + 10 - (h - 2 * pad) * math.log2(max(v, 0.5)) / math.log2(smax)

    for i, (title, lines) in enumerate(panels):
        parts.append('<text x="%d" y="14" font-weight="bold">%s</text>' % (i * w + pad, title))
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>' % (x(2, i), y(1), x(tmax, i), y(1)))
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/>' % (x(2, i), y(1), x(2, i), y(smax)))
        for t in sorted({t for pts in lines.values() for t, _ in pts}):
            parts.append('<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>' % (x(t, i), y(1) + 14, t))
        for v in (1, 2, 4, 8):
            if v <= smax:
                parts.append('<text x="%.1f" y="%.1f" text-anchor="end">%d×</text>' % (x(2, i) - 4, y(v) + 4, v))
        parts.append('<text x="%.1f" y="%.1f" text-anchor="middle">threads</text>' % ((x(2, i) + x(tmax, i)) / 2, y(1) + 28))
        for k, (name, pts) in enumerate(list(lines.items()) + [("FMA peak", peak)]):
            pts = sorted(p for p in pts if p[0] >= 2)
            if len(pts) < 2:
                continue
            dash = ' stroke-dasharray="4 3"' if name == "FMA peak" else ""
            parts.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
                colors[name], dash, " ".join("%.1f,%.1f" % (x(t, i), y(v)) for t, v in pts)))
            parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
                i * w + pad + 8, 26 + 13 * k, i * w + pad + 26, 26 + 13 * k, colors[name], dash))
            parts.append('<text x="%.1f" y="%.1f" fill="%s">%s %.2f×</text>' % (
                i * w + pad + 30, 30 + 13 * k, colors[name], name, pts[-1][1]))
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    out = sys.argv[1]
    svg_path = sys.argv[sys.argv.index("--svg") + 1] if "--svg" in sys.argv else None
    panels = []
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
        lines = {}
        for name, d, nm, metric, v2 in (("zoo", z, zn, "ms/step", z2), ("zoo before", zb, zn, "ms/step", b2),
                                         ("PyTorch", p, tn, "ms", p2)):
            pts = [(t, v2 / get(d, t, nm, metric)) for t in ts if v2 and get(d, t, nm, metric)]
            if len(pts) >= 2:
                lines[name] = pts
        if lines and "bf16" not in title:
            panels.append((title.split(" (")[0], lines))
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
    peak = []
    p2 = get(gemm, 2, "PeakFMA/goroutines2", "GFLOP/s")
    for t in sorted(gemm):
        v = get(gemm, t, "PeakFMA/goroutines%d" % t, "GFLOP/s")
        if p2 and v:
            peak.append((t, v / p2))
    if svg_path and panels:
        svg(svg_path, panels, peak)


if __name__ == "__main__":
    main()
