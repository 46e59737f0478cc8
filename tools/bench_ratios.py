#!/usr/bin/env python3
"""Reads the output of tools/bench.sh on stdin and prints one table of
zoo / PyTorch time ratios (below 1 means zoo is faster). Plain Python 3: no
torch needed. A benchmark seen several times (tools/bench.sh vit runs the
two sides interleaved, round after round) counts with its median.
Rows named with a _bf16 suffix (tools/bench.sh bf16, all) are issue 40's
bf16 rows: zoo's ops.UseBF16 products against PyTorch's
torch.autocast("cpu", dtype=torch.bfloat16); a second table gives each
side's float32/bf16 speed-up."""

import re
import statistics
import sys

# Go benchmark name (without "Benchmark" and the -N suffix) -> PyTorch name,
# and which Go metric is the time.
PAIRS = [
    # The main job (tools/bench.sh main, all): `zoo pretrain gpt` against
    # tools/pytorch/train_gpt_opticks.py, training seconds of the whole run.
    ("MainJob/gpt_opticks_2000steps", "MainJob/gpt_opticks_2000steps", "ms/run"),
    ("TrainStep/V512_T128_d256_h4_L4_ff1024_B16", "GPTTrainStep/V512_T128_d256_h4_L4_ff1024_B16", "ms/step"),
    ("Generate/cache/V512_d256_h4_L4_prompt16_new112_B1", "GPTGenerate/cache/V512_d256_h4_L4_ff1024_P16_N112_B1", "ms/token"),
    ("Generate/nocache/V512_d256_h4_L4_prompt16_new112_B1", "GPTGenerate/nocache/V512_d256_h4_L4_ff1024_P16_N112_B1", "ms/token"),
    ("EncoderStep/bert_like_V1024_T128_d256_h4_L4_ff1024_B16", "EncoderStep/bert_like_V1024_T128_d256_h4_L4_ff1024_B16", "ms/step"),
    ("MHA/B16_T128_d256_h4", "MHA/B16_T128_d256_h4", "ns/op"),
    ("EncoderBlock/B16_T128_d256_h4_ff1024", "EncoderBlock/B16_T128_d256_h4_ff1024", "ns/op"),
    ("LayerNorm/N2048_D256/fused", "LayerNorm/N2048_D256", "ns/op"),
    ("GELU/N2048_D1024/fused", "GELU/N2048_D1024", "ns/op"),
    ("MaskedSoftmax/BH64_T128/fused", "MaskedSoftmax/BH64_T128", "ns/op"),
    ("CrossEntropy/N2048_V512/fused", "CrossEntropy/N2048_V512", "ns/op"),
    ("TrainStep/small_V8000_d256_h4_L3+3_ff1024_B64_Ts16_Tt16", "Seq2seqTrainStep/small_V8000_d256_h4_L3+3_ff1024_B64_Ts16_Tt16", "ns/op"),
    ("BeamSearch/small_B16_Ts12_beam4_steps16", "Seq2seqBeamSearch/small_B16_Ts12_beam4_steps16", "ns/op"),
    ("BERTMiniPretrainStep_T128_B32", "BERTMiniPretrainStep_T128_B32", "ms/step"),
    ("BERTMiniPretrainStepMaskedOnly_T128_B32", "BERTMiniPretrainStepMaskedOnly_T128_B32", "ms/step"),
    ("BERTMiniFinetuneStep_T128_B32", "BERTMiniFinetuneStep_T128_B32", "ms/step"),
    ("BERTMiniClassifyForward_T128_B32", "BERTMiniClassifyForward_T128_B32", "ms/step"),
    # The ViT Fashion-MNIST recipe (finetune/images_bench_test.go, tools/pytorch/bench_vit.py):
    # the real training step with AdamW, augmentation excluded, and inference.
    # They replace the ViT-like encoder step (layers' EncoderStep/vit_like_*,
    # ff256, B64, no optimiser), whose benchmark stays in layers/.
    ("TrainStep/vit-fashion/B128", "TrainStep/vit-fashion/B128", "ms/step"),
    ("Forward/vit-fashion/B256", "Forward/vit-fashion/B256", "ms/step"),
    # GPT-2 small (124M, random weights) greedy decoding with the KV cache
    # (models/gpt, tools/pytorch/bench_gpt2_generate.py): tools/bench.sh decode.
    ("GenerateGPT2Small/P16_N64_B1", "GenerateGPT2Small/P16_N64_B1", "ms/token"),
]
# Issue 40's bf16 rows (tools/bench.sh bf16, all): the float32 row's names
# with a _bf16 suffix on both sides, zoo's graph products in bf16
# (ops.UseBF16, `zoo pretrain gpt --bf16`) against PyTorch's autocast.
BF16_ROWS = ["MainJob/gpt_opticks_2000steps", "TrainStep/V512_T128_d256_h4_L4_ff1024_B16",
             "BERTMiniPretrainStep_T128_B32", "TrainStep/vit-fashion/B128"]
PAIRS = [p for go, pt, metric in PAIRS for p in [(go, pt, metric)] + (
    [(go + "_bf16", pt + "_bf16", metric)] if go in BF16_ROWS else [])]
# The long-sequence sweep (layers, models/gpt, tools/pytorch/bench_long.py):
# tools/bench.sh long. Same names on both sides.
LONG_LENGTHS = (128, 256, 512, 1024, 2048)
PAIRS += [("AttentionLong/B2_T%d_d256_h4" % t,) * 2 + ("ms/op",) for t in LONG_LENGTHS]
PAIRS += [("TrainStepLong/V512_T%d_d256_h4_L4_ff1024_B%d" % (t, 2048 // t),) * 2 + ("ms/op",) for t in LONG_LENGTHS]
# The decoding rows' bound: GPT-2 small's float32 parameters (Go metric
# param_MB of this benchmark) read once per token at the memory bandwidth
# (GB/s of this one, internal/ops).
DECODE_ROW, BANDWIDTH_ROW = "GenerateGPT2Small/P16_N64_B1", "MemBandwidth/sum_f32_512MiB_2goroutines"


def main():
    text = sys.stdin.read()
    builds, build = {}, "pure Go"
    torch, torch_cpu, cpu_col = {}, {}, None
    torch_rss, torch_base, rss_col, base_col = {}, {}, None, None
    torch_val, val_col = {}, None
    for line in text.splitlines():
        m = re.match(r"== Go .*?(\(-tags openblas\))?", line)
        if line.startswith("== Go"):
            build = "-tags openblas" if "openblas" in line else "pure Go"
            continue
        if line.startswith("Benchmark"):
            f = line.split()
            name = re.sub(r"-\d+$", "", f[0][len("Benchmark"):])
            vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1) if re.match(r"^[\d.e+-]+$", f[i])}
            seen = builds.setdefault(build, {}).setdefault(name, {})
            for k, v in vals.items():
                seen.setdefault(k, []).append(v)
        elif line.startswith("| benchmark"):
            head = [c.strip() for c in line.strip("|").split("|")]
            cpu_col = head.index("cpu-ms/step") if "cpu-ms/step" in head else None
            rss_col = head.index("peakRSS_MB") if "peakRSS_MB" in head else None
            base_col = head.index("base_MB") if "base_MB" in head else None
            val_col = head.index("val_loss") if "val_loss" in head else None
        elif line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cpu_col is not None and len(cells) > cpu_col:
                try:
                    torch_cpu.setdefault(cells[0], []).append(float(cells[cpu_col]))
                except ValueError:
                    pass
            for col, into in ((rss_col, torch_rss), (base_col, torch_base), (val_col, torch_val)):
                if col is not None and len(cells) > col:
                    try:
                        into.setdefault(cells[0], []).append(float(cells[col]))
                    except ValueError:
                        pass
            if len(cells) >= 3 and cells[1]:
                try:
                    torch.setdefault(cells[0], []).append(float(cells[1]))  # ms/iter or ms/step
                except ValueError:
                    pass
            if len(cells) >= 3 and not cells[1] and cells[2]:
                torch.setdefault(cells[0], []).append(float(cells[2]))  # ms/token
    torch = {k: statistics.median(v) for k, v in torch.items()}
    torch_cpu = {k: statistics.median(v) for k, v in torch_cpu.items()}
    torch_rss = {k: statistics.median(v) for k, v in torch_rss.items()}
    torch_base = {k: statistics.median(v) for k, v in torch_base.items()}
    builds = {b: {n: {k: statistics.median(v) for k, v in vals.items()} for n, vals in bench.items()}
              for b, bench in builds.items()}
    names = list(builds)
    print("| benchmark | PyTorch (ms) | " + " | ".join("zoo %s (ms) | ratio" % b for b in names) + " |")
    print("|---|---:|" + "---:|---:|" * len(names))
    for go, pt, metric in PAIRS:
        if pt not in torch:
            continue
        row = ["%s" % pt, "%.2f" % torch[pt]]
        for b in names:
            v = builds[b].get(go, {}).get(metric)
            if v is None:
                row += ["", ""]
                continue
            ms = v / 1e6 if metric == "ns/op" else v
            row += ["%.2f" % ms, "%.2f×" % (ms / torch[pt])]
        print("| " + " | ".join(row) + " |")
    # CPU time (all threads): on a shared machine a side that loses a core
    # for a while shows it in wall time, not here.
    rows = []
    for go, pt, metric in PAIRS:
        if pt not in torch_cpu:
            continue
        row = ["%s" % pt, "%.0f" % torch_cpu[pt]]
        for b in names:
            v = builds[b].get(go, {}).get("cpu-ms/step")
            row += ["", ""] if v is None else ["%.0f" % v, "%.2f×" % (v / torch_cpu[pt])]
        rows.append(row)
    if rows:
        print()
        print("| CPU time per step | PyTorch (cpu-ms) | " + " | ".join("zoo %s (cpu-ms) | ratio" % b for b in names) + " |")
        print("|---|---:|" + "---:|---:|" * len(names))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    # Peak RSS of rows that ran in their own process (tools/bench.sh long,
    # decode): the whole process, runtime included; PyTorch's base is its
    # resident memory right after `import torch`.
    rows = []
    for go, pt, metric in PAIRS:
        if pt not in torch_rss:
            continue
        base = torch_base.get(pt)
        row = [pt, "%.0f" % torch_rss[pt], "" if base is None else "%.0f" % base]
        for b in names:
            v = builds[b].get(go, {}).get("peakRSS_MB")
            row += ["", ""] if v is None else ["%.0f" % v, "%.2f×" % (v / torch_rss[pt])]
        rows.append(row)
    if rows:
        print()
        print("| peak RSS | PyTorch (MB) | PyTorch after import (MB) | " + " | ".join("zoo %s (MB) | ratio" % b for b in names) + " |")
        print("|---|---:|---:|" + "---:|---:|" * len(names))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    decode_limit(builds, torch)
    bf16_speedups(builds, torch, torch_cpu, names)
    # The main job's validation loss on each side (the 1% bound);
    # a bf16 row also gives its change against the same side's float32 row.
    for go, pt, metric in PAIRS:
        if pt in torch_val:
            def vs32(v, f32):
                return "" if f32 is None else " (%+.2f%% against float32)" % (100 * (v / f32 - 1))
            bf16 = pt.endswith("_bf16")
            pt32, go32 = (pt[:-len("_bf16")], go[:-len("_bf16")]) if bf16 else (None, None)
            v = statistics.median(torch_val[pt])
            f = statistics.median(torch_val[pt32]) if bf16 and pt32 in torch_val else None
            line = "validation loss of %s: PyTorch %.4f%s" % (pt, v, vs32(v, f))
            for b in names:
                if "val_loss" in builds[b].get(go, {}):
                    v = builds[b][go]["val_loss"]
                    f = builds[b].get(go32, {}).get("val_loss") if bf16 else None
                    line += ", zoo %s %.4f%s" % (b, v, vs32(v, f))
            print()
            print(line)


def bf16_speedups(builds, torch, torch_cpu, names):
    """Prints each side's float32 time over its bf16 time (above 1: bf16 is
    faster) for the rows measured in both precisions, in wall time and, where
    both sides report it, in CPU time (steadier on a shared machine)."""
    def ratio(f, h):
        return "" if f is None or h is None else "%.2f×" % (f / h)
    rows = []
    for go, pt, metric in PAIRS:
        if not go.endswith("_bf16"):
            continue
        go32, pt32 = go[:-len("_bf16")], pt[:-len("_bf16")]
        row = [pt32]
        row += ["%.2f×" % (torch[pt32] / torch[pt])] if pt in torch and pt32 in torch else [""]
        for b in names:
            row += [ratio(builds[b].get(go32, {}).get(metric), builds[b].get(go, {}).get(metric))]
        row += [ratio(torch_cpu.get(pt32), torch_cpu.get(pt))]
        for b in names:
            row += [ratio(builds[b].get(go32, {}).get("cpu-ms/step"), builds[b].get(go, {}).get("cpu-ms/step"))]
        if any(row[1:]):
            rows.append(row)
    if rows:
        print()
        print("| bf16 speed-up (f32 time / bf16 time) | PyTorch autocast | " + " | ".join("zoo %s" % b for b in names) +
              " | PyTorch autocast, CPU time | " + " | ".join("zoo %s, CPU time" % b for b in names) + " |")
        print("|---|---:|" + "---:|" * (2 * len(names) + 1))
        for row in rows:
            print("| " + " | ".join(row) + " |")


def decode_limit(builds, torch):
    """Prints the float32 bound of GPT-2 small decoding, parameter bytes over
    the memory bandwidth, beside what each side reached."""
    for b, bench in builds.items():
        mb = bench.get(DECODE_ROW, {}).get("param_MB")
        bw = bench.get(BANDWIDTH_ROW, {}).get("GB/s")
        if mb is None or bw is None:
            continue
        limit = mb / bw  # MB / (GB/s) = ms
        print()
        print("float32 bound of %s (%s): %.1f MB of parameters per token / %.1f GB/s (%s) = %.1f ms/token" % (
            DECODE_ROW, b, mb, bw, BANDWIDTH_ROW, limit))
        got = bench.get(DECODE_ROW, {}).get("ms/token")
        if got is not None:
            print("  zoo %s: %.1f ms/token, %.2f× the bound" % (b, got, got / limit))
        if DECODE_ROW in torch:
            print("  PyTorch: %.1f ms/token, %.2f× the bound" % (torch[DECODE_ROW], torch[DECODE_ROW] / limit))
        return


if __name__ == "__main__":
    main()
