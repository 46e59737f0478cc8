#!/usr/bin/env python3
"""Reads the output of tools/bench.sh on stdin and prints one table of
zoo / PyTorch time ratios (below 1 means zoo is faster). Plain Python 3: no
torch needed."""

import re
import sys

# Go benchmark name (without "Benchmark" and the -N suffix) -> PyTorch name,
# and which Go metric is the time.
PAIRS = [
    ("TrainStep/V512_T128_d256_h4_L4_ff1024_B16", "GPTTrainStep/V512_T128_d256_h4_L4_ff1024_B16", "ms/step"),
    ("Generate/cache/V512_d256_h4_L4_prompt16_new112_B1", "GPTGenerate/cache/V512_d256_h4_L4_ff1024_P16_N112_B1", "ms/token"),
    ("Generate/nocache/V512_d256_h4_L4_prompt16_new112_B1", "GPTGenerate/nocache/V512_d256_h4_L4_ff1024_P16_N112_B1", "ms/token"),
    ("EncoderStep/bert_like_V1024_T128_d256_h4_L4_ff1024_B16", "EncoderStep/bert_like_V1024_T128_d256_h4_L4_ff1024_B16", "ms/step"),
    ("EncoderStep/vit_like_28x28x1_p4_d128_h4_L6_ff256_B64", "EncoderStep/vit_like_28x28x1_p4_d128_h4_L6_ff256_B64", "ms/step"),
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
]


def main():
    text = sys.stdin.read()
    builds, build = {}, "pure Go"
    torch = {}
    for line in text.splitlines():
        m = re.match(r"== Go .*?(\(-tags openblas\))?", line)
        if line.startswith("== Go"):
            build = "-tags openblas" if "openblas" in line else "pure Go"
            continue
        if line.startswith("Benchmark"):
            f = line.split()
            name = re.sub(r"-\d+$", "", f[0][len("Benchmark"):])
            vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1) if re.match(r"^[\d.e+-]+$", f[i])}
            builds.setdefault(build, {})[name] = vals
        elif line.startswith("| ") and not line.startswith("| benchmark"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) >= 3 and cells[1]:
                try:
                    torch[cells[0]] = float(cells[1])  # ms/iter or ms/step
                except ValueError:
                    pass
            if len(cells) >= 3 and not cells[1] and cells[2]:
                torch[cells[0]] = float(cells[2])  # ms/token
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


if __name__ == "__main__":
    main()
