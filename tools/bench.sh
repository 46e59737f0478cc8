#!/usr/bin/env bash
# Runs the Go benchmarks and the PyTorch references back to back, on the same
# machine in one run, so that their ratios are what count (the machine is
# shared and noisy). Needs, for the PyTorch half:
#   apt-get install python3-torch libopenblas0-pthread   (see tools/pytorch/README.md)
# Usage: tools/bench.sh [go|torch]   (default: both, then the ratio table)
#        tools/bench.sh main [rounds] the main job: `zoo pretrain gpt` (2,000 steps on
#                                     Opticks) against train_gpt_opticks.py,
#                                     interleaved; training seconds, validation
#                                     loss and peak RSS of each (default 2 rounds)
#        tools/bench.sh steps [rounds] each family's training step (GPT, seq2seq,
#                                     BERT-Mini pretraining, the ViT Fashion-MNIST
#                                     recipe), every row in its own process on
#                                     both sides for its peak RSS, interleaved;
#                                     medians of rounds (default 3)
#        tools/bench.sh bf16 [rounds] issue 40's bf16 rows: the GPT, BERT-Mini
#                                     pretraining and ViT Fashion-MNIST steps
#                                     and the main job, each in float32 and in
#                                     bf16 (zoo: ops.UseBF16 / `pretrain gpt
#                                     --bf16`; PyTorch: torch.autocast("cpu",
#                                     dtype=torch.bfloat16), rows named _bf16),
#                                     zoo and PyTorch interleaved row by row,
#                                     every row in its own process (default 2
#                                     rounds); the ratio table, then each
#                                     side's bf16 speed-up and the main job's
#                                     validation loss in both precisions
#                                     (BF16_MAIN=0 skips the main job, about
#                                     8 minutes a round)
#        tools/bench.sh vit [rounds]  the ViT Fashion-MNIST rows only (training
#                                     step B128 with AdamW, forward B256), zoo
#                                     and PyTorch interleaved for rounds (default
#                                     5) rounds; the table shows the medians
#        tools/bench.sh long [rounds] the long-sequence sweep, T 128 to 2048:
#                                     causal attention B2 (layers) and the GPT
#                                     train step at 2048 tokens per batch
#                                     (models/gpt), each row in its own process
#                                     on both sides so its peak RSS is its own,
#                                     zoo and PyTorch interleaved row by row
#                                     (default 3 rounds); time and peak RSS tables
#        tools/bench.sh decode [rounds] decoding: GPT cached, uncached, seq2seq
#                                     beam search, GPT-2 small (124M) cached
#                                     greedy, and the memory bandwidth that
#                                     bounds the last (default 3 rounds)
#        tools/bench.sh llama [rounds] issue 37's real-size generation: a
#                                     TinyLlama-1.1B-shaped checkpoint with random
#                                     weights (tools/llamabench write, made once in
#                                     LLAMA_BENCH_DIR, default /tmp/zoo-llamabench),
#                                     batch 1, a 128-token prompt, 128 greedy new
#                                     tokens: zoo (f32, bf16 and int8 weights),
#                                     the PyTorch re-implementation
#                                     (float32) and, with LLAMA_CPP=/path/to/llama.cpp
#                                     (a checkout built with cmake: build/bin/llama-bench),
#                                     llama.cpp's llama-bench on the same weights as
#                                     GGUF F32, BF16 and Q8_0 (tools/llamabench/to_gguf.py);
#                                     the read bandwidth; each engine in its own
#                                     process, interleaved (default 2 rounds); the
#                                     table against the bandwidth bound
#                                     (LLAMA_PRESET=smollm-135m: a quick run;
#                                     LLAMA_ENGINES, default "zoo pytorch llama.cpp",
#                                     LLAMA_FORMATS, default "f32 bf16 int8" for zoo,
#                                     LLAMA_CPP_TYPES, default "f32 bf16 q8_0", choose rows)
#        tools/bench.sh all [rounds] all of the above in one run (issue 14's table):
#                                     the main job, each family's step,
#                                     decoding and the long sweep, every row
#                                     in its own process (with the bf16 rows
#                                     of the bf16 mode), pure Go and
#                                     -tags openblas (when libopenblas-dev is
#                                     installed) and PyTorch interleaved row
#                                     by row; time and peak RSS tables
#                                     (default 1 round; ALL_MAIN=0 skips the
#                                     main job, in float32 and in bf16, about
#                                     15 minutes a round)
# LONG_ITERS (default 3) and DECODE_ITERS (default 3) set the timed iterations
# per row of the long and decode modes (each also has one untimed warm-up).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-both}
torchenv() {
  export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
  openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
  if [ -d "$openblas" ]; then
    export LD_LIBRARY_PATH=$openblas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else
    echo "warning: libopenblas0-pthread is not installed; torch will use the slow reference BLAS" >&2
  fi
}
vitbench() { # $1: extra go test flags. The real step of the Fashion-MNIST recipe.
  go test $1 ./finetune/ -run '^$' -bench 'TrainStep/vit-fashion/B128$' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./finetune/ -run '^$' -bench 'Forward/vit-fashion/B256$' -benchtime 5x | grep -E '^Benchmark'
}
if [ "$what" = vit ]; then
  # The machine is shared: interleave the two sides and take medians.
  rounds=${2:-5}
  out=$(mktemp)
  for i in $(seq "$rounds"); do
    echo "== round $i: $(uptime | sed 's/.*load/load/')"
    echo "== Go ($(go version | cut -d' ' -f3), $(nproc) cores), pure Go"
    vitbench ""
    echo "== PyTorch"
    (torchenv; /usr/bin/python3 tools/pytorch/bench_vit.py --iters 5 vit-fashion/B | grep -E '^\| (benchmark|TrainStep/vit-fashion/B128|Forward/vit-fashion/B256) ')
  done | tee "$out"
  echo "== zoo / PyTorch, medians of $rounds interleaved rounds (below 1: zoo is faster)"
  python3 tools/bench_ratios.py < "$out"
  rm -f "$out"
  exit 0
fi
haveblas() { [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ]; }
# The Go builds a row runs in: pure Go, and in `all` mode also -tags openblas
# when its C headers are installed.
gobuilds=("")
gobin() { # $1: package, $2: build tags ("" or "-tags openblas"); builds its test binary once into $bindir
  local out=$bindir/$(basename "$1")${2:+.openblas}.test
  [ -x "$out" ] || go test -c $2 -o "$out" "./$1"
  echo "$out"
}
buildname() { [ -n "$1" ] && echo "$1" || echo "pure Go"; }
withrss() { # $1: file with /usr/bin/time's %M (KB); appends peakRSS_MB to Benchmark lines that lack it.
  # In a pipeline the file is written when the timed process exits: read it at the end.
  awk -v f="$1" '{ lines[n++] = $0 } END {
    mb = ""; while ((getline l < f) > 0) mb = int(l / 1000)
    for (i = 0; i < n; i++) { s = lines[i]; if (s ~ /^Benchmark/ && s !~ /peakRSS_MB/ && mb != "") s = s "\t" mb " peakRSS_MB"; print s } }'
}
gorow() { # $1: package, $2: -test.bench pattern, $3: iterations; the row runs in a process of its own, once per build
  local bin tags
  for tags in "${gobuilds[@]}"; do
    bin=$(gobin "$1" "$tags")
    echo "== Go ($(go version | cut -d' ' -f3), $(nproc) cores), $(buildname "$tags")"
    (cd "$1" && OPENBLAS_NUM_THREADS=2 /usr/bin/time -f %M -o "$bindir/rss" "$bin" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x") |
      grep -E '^Benchmark' | withrss "$bindir/rss" || echo "FAILED: $1 $2 $tags" >&2
  done
}
torchrow() { # $1: script, then its arguments; keeps the table's lines and the load notes.
  # A table without a peakRSS_MB column gets the process's peak RSS (all its rows ran in it).
  (torchenv; /usr/bin/time -f %M -o "$bindir/pyrss" /usr/bin/python3 "tools/pytorch/$1" "${@:2}") > "$bindir/pyout" || echo "FAILED: $*" >&2
  python3 - "$bindir/pyout" "$bindir/pyrss" <<'PY'
import sys
mb = int(open(sys.argv[2]).read().split()[-1]) // 1000
add = False
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("| benchmark"):
        add = "peakRSS_MB" not in line
        print(line + (" peakRSS_MB |" if add else ""))
    elif line.startswith("|---"):
        continue
    elif line.startswith("| "):
        print(line + (" %d |" % mb if add else ""))
    elif line.startswith(("CPU", "BLAS")):
        print(line)
PY
}
interleaved() { # $1: rounds, $2: function printing one round; then the ratio table
  local out
  out=$(mktemp)
  bindir=$(mktemp -d)
  trap "rm -rf '$bindir' '$out'" EXIT
  for i in $(seq "$1"); do
    echo "== round $i: $(uptime | sed 's/.*load/load/')"
    "$2"
  done | tee "$out"
  echo "== zoo / PyTorch, medians of $1 interleaved rounds (below 1: zoo is faster or smaller)"
  python3 tools/bench_ratios.py < "$out"
}
mainrow() { # the main job once per build, then PyTorch's; training seconds as a Benchmark line.
  # $1 "bf16": both sides in bf16 (zoo --bf16, PyTorch autocast), rows named _bf16.
  local tags zoo run flag=() sfx=""
  [ "${1:-}" = bf16 ] && flag=(--bf16) sfx=_bf16
  for tags in "${gobuilds[@]}"; do
    zoo=$bindir/zoo${tags:+.openblas}
    [ -x "$zoo" ] || go build $tags -o "$zoo" ./cmd/zoo
    run=$(mktemp -d -p "$bindir")
    echo "== Go ($(go version | cut -d' ' -f3), $(nproc) cores), $(buildname "$tags")"
    OPENBLAS_NUM_THREADS=2 /usr/bin/time -f %M -o "$bindir/rss" "$zoo" pretrain gpt --run "$run/run" "${flag[@]}" > "$run/log" 2>&1 || { tail "$run/log" >&2; echo "FAILED: main job $tags $sfx" >&2; }
    python3 - "$run/run/metrics.jsonl" "$sfx" <<'PY' | withrss "$bindir/rss"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
secs = sum(r.get("seconds", 0) for r in rows)
val = [r["val_loss"] for r in rows if "val_loss" in r]
print(f"BenchmarkMainJob/gpt_opticks_{len(rows)}steps{sys.argv[2]}\t1\t{secs * 1e9:.0f} ns/op\t{secs * 1e3:.0f} ms/run\t{val[-1]:.4f} val_loss")
PY
    rm -rf "$run"
  done
  (torchenv; /usr/bin/time -f %M -o "$bindir/pyrss" /usr/bin/python3 tools/pytorch/train_gpt_opticks.py --out "$bindir/ref.json" "${flag[@]}" > "$bindir/reflog" 2>&1) || { tail "$bindir/reflog" >&2; echo "FAILED: train_gpt_opticks.py $sfx" >&2; }
  python3 - "$bindir/ref.json" "$bindir/pyrss" "$sfx" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["timing"]
print("| benchmark | ms/run | val_loss | peakRSS_MB |")
print(f"| MainJob/gpt_opticks_{t['iters']}steps{sys.argv[3]} | {t['train_seconds'] * 1e3:.0f} | {d['final_val_loss']:.4f} | {int(open(sys.argv[2]).read().split()[-1]) // 1000} |")
PY
}
stepsround() { # each family's real training step, every row in its own process on both sides
  gorow models/gpt 'TrainStep$/^V512_T128_d256_h4_L4_ff1024_B16$' 5
  torchrow bench_gpt.py GPTTrainStep/
  gorow models/seq2seq 'TrainStep/small' 5
  torchrow bench_seq2seq.py Seq2seqTrainStep/
  gorow models/bert 'BERTMiniPretrainStep_T128_B32$' 3
  torchrow bench_bert.py BERTMiniPretrainStep_T128_B32
  gorow finetune 'TrainStep/vit-fashion/B128$' 5
  torchrow bench_vit.py TrainStep/vit-fashion/B128
}
bf16steps() { # issue 40's bf16 rows of the steps: zoo's ops.UseBF16 against PyTorch's autocast
  gorow models/gpt 'TrainStep$/^V512_T128_d256_h4_L4_ff1024_B16_bf16$' 5
  torchrow bench_gpt.py --bf16 GPTTrainStep/
  gorow models/bert 'BERTMiniPretrainStep_T128_B32_bf16$' 3
  torchrow bench_bert.py --bf16 BERTMiniPretrainStep_T128_B32_bf16
  gorow finetune 'TrainStep/vit-fashion/B128_bf16$' 5
  torchrow bench_vit.py --bf16 TrainStep/vit-fashion/B128_bf16
}
bf16round() { # each step and the main job in float32 then bf16, zoo and PyTorch, row by row
  gorow models/gpt 'TrainStep$/^V512_T128_d256_h4_L4_ff1024_B16$' 5
  torchrow bench_gpt.py GPTTrainStep/
  gorow models/gpt 'TrainStep$/^V512_T128_d256_h4_L4_ff1024_B16_bf16$' 5
  torchrow bench_gpt.py --bf16 GPTTrainStep/
  gorow models/bert 'BERTMiniPretrainStep_T128_B32$' 3
  torchrow bench_bert.py BERTMiniPretrainStep_T128_B32
  gorow models/bert 'BERTMiniPretrainStep_T128_B32_bf16$' 3
  torchrow bench_bert.py --bf16 BERTMiniPretrainStep_T128_B32_bf16
  gorow finetune 'TrainStep/vit-fashion/B128$' 5
  torchrow bench_vit.py TrainStep/vit-fashion/B128
  gorow finetune 'TrainStep/vit-fashion/B128_bf16$' 5
  torchrow bench_vit.py --bf16 TrainStep/vit-fashion/B128_bf16
  if [ "${BF16_MAIN:-1}" != 0 ]; then
    mainrow
    mainrow bf16
  fi
}
allround() { # everything issue 14's table asks for, both builds, row by row
  if [ "${ALL_MAIN:-1}" != 0 ]; then
    mainrow
    mainrow bf16
  fi
  stepsround
  bf16steps
  decoderound
  longround
}
longround() {
  local it=${LONG_ITERS:-3} t
  for t in 128 256 512 1024 2048; do
    gorow layers "AttentionLong/^B2_T${t}_d256_h4\$" "$it"
    torchrow bench_long.py --iters "$it" "AttentionLong/B2_T${t}_d256_h4"
  done
  for t in 128 256 512 1024 2048; do
    local row="V512_T${t}_d256_h4_L4_ff1024_B$((2048 / t))"
    gorow models/gpt "TrainStepLong/^${row}\$" "$it"
    torchrow bench_long.py --iters "$it" "TrainStepLong/$row"
  done
}
decoderound() {
  local it=${DECODE_ITERS:-3}
  gorow models/gpt 'Generate$/^cache/' 5
  gorow models/gpt 'Generate$/^nocache/' 2
  torchrow bench_gpt.py --iters 10 GPTGenerate/
  gorow models/seq2seq 'BeamSearch$' 5
  torchrow bench_seq2seq.py --steps 5 Seq2seqBeamSearch
  gorow internal/ops 'MemBandwidth' 5
  gorow models/gpt 'GenerateGPT2Small' "$it"
  torchrow bench_gpt2_generate.py --iters "$it"
}
llamaround() { # one round of the llama mode: JSON lines for llamabench table
  echo "== round: $(uptime | sed 's/.*load/load/')" >&2
  "$bindir/llamabench" membw
  local f engines=" ${LLAMA_ENGINES:-zoo pytorch llama.cpp} "
  if [[ $engines == *" zoo "* ]]; then
    for f in ${LLAMA_FORMATS:-f32 bf16 int8}; do # one warm-up call compiles the graphs
      "$bindir/llamabench" run -dir "$ckpt" -weights "$f" -runs 1 -warmup 1 || echo "FAILED: zoo $f" >&2
    done
  fi
  if [[ $engines == *" pytorch "* ]]; then # nothing to compile: no warm-up
    (torchenv; /usr/bin/python3 tools/pytorch/llama_generate_bench.py --dir "$ckpt" --runs 1 --warmup 0) || echo "FAILED: pytorch" >&2
  fi
  [ -n "${LLAMA_CPP:-}" ] && [[ $engines == *" llama.cpp "* ]] || return 0
  for f in ${LLAMA_CPP_TYPES:-f32 bf16 q8_0}; do
    # llama-bench: pp128 (prefill) and tg128 (128 tokens, one at a time), 2 threads, once after its
    # warm-up; its OpenMP threads wait passively, as PyTorch's (spinning ones collapse on a shared machine)
    OMP_WAIT_POLICY=PASSIVE /usr/bin/time -f %M -o "$bindir/rss" "$LLAMA_CPP/build/bin/llama-bench" -m "$ckpt/$f.gguf" -p 128 -n 128 -t 2 -r 1 -o jsonl > "$bindir/lb.jsonl" 2> "$bindir/lb.err" ||
      { tail -3 "$bindir/lb.err" >&2; echo "FAILED: llama-bench $f" >&2; continue; }
    python3 - "$bindir/lb.jsonl" "$bindir/rss" "$f" "$(basename "$ckpt")" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
pp = [r for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0][0]
tg = [r for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0][0]
print(json.dumps({"engine": "llama.cpp", "format": sys.argv[3], "model": sys.argv[4], "prompt": pp["n_prompt"],
                  "new": tg["n_gen"], "load_s": 0, "prefill_tok_s": pp["avg_ts"], "ms_per_token": 1e3 / tg["avg_ts"],
                  "peak_rss_mb": int(open(sys.argv[2]).read().split()[-1]) * 1024 / 1e6, "threads": tg["n_threads"]}))
PY
  done
}
llamamode() { # $1: rounds
  bindir=$(mktemp -d)
  trap "rm -rf '$bindir'" EXIT
  go build -o "$bindir/llamabench" ./tools/llamabench
  ckpt=${LLAMA_BENCH_DIR:-/tmp/zoo-llamabench}/${LLAMA_PRESET:-tinyllama}
  [ -e "$ckpt/model.safetensors" ] || "$bindir/llamabench" write -preset "${LLAMA_PRESET:-tinyllama}" -out "$ckpt"
  if [ -n "${LLAMA_CPP:-}" ]; then
    local f
    for f in ${LLAMA_CPP_TYPES:-f32 bf16 q8_0}; do
      [ -e "$ckpt/$f.gguf" ] || /usr/bin/python3 tools/llamabench/to_gguf.py --gguf-py "$LLAMA_CPP/gguf-py" --dir "$ckpt" --out "$ckpt/$f.gguf" --type "$f"
    done
  else
    echo "note: LLAMA_CPP is not set: no llama.cpp rows (set it to a llama.cpp checkout built with cmake)" >&2
  fi
  local out i
  out=$bindir/results.jsonl
  for i in $(seq "$1"); do llamaround; done | tee "$out"
  echo "== $(basename "$ckpt"), batch 1, 128-token prompt, 128 greedy tokens, $1 interleaved rounds ($(nproc) cores)"
  "$bindir/llamabench" table < "$out"
}
case "$what" in # the interleaved modes, with their default rounds
go | torch | both | vit) ;;

main) interleaved "${2:-2}" mainrow; exit 0 ;;
steps) interleaved "${2:-3}" stepsround; exit 0 ;;
bf16) interleaved "${2:-2}" bf16round; exit 0 ;;
long) interleaved "${2:-3}" longround; exit 0 ;;
decode) interleaved "${2:-3}" decoderound; exit 0 ;;
llama) llamamode "${2:-2}"; exit 0 ;;
all)
  haveblas && gobuilds+=("-tags openblas") || echo "note: libopenblas-dev is not installed; pure Go only" >&2
  interleaved "${2:-1}" allround
  exit 0
  ;;
*) echo "tools/bench.sh: unknown mode \"$what\": want go, torch, both, main, steps, bf16, vit, long, decode, llama or all" >&2; exit 2 ;;
esac
if [ "$what" = both ]; then
  out=$(mktemp)
  "$0" go | tee "$out"
  "$0" torch | tee -a "$out"
  echo "== zoo / PyTorch (below 1: zoo is faster)"
  python3 tools/bench_ratios.py < "$out"
  rm -f "$out"
  exit 0
fi

gobench() { # $1: extra go test flags
  # The long-sequence rows and the memory bandwidth (tools/bench.sh long, decode) are skipped here.
  go test $1 ./layers/ ./internal/ops/ -run '^$' -bench . -skip 'Long|MemBandwidth' -benchtime 10x | grep -E '^(Benchmark|cpu:)'
  # -bench patterns are split at '/': each level is its own regexp, matched
  # against the name with its Benchmark prefix.
  go test $1 ./models/gpt/ -run '^$' -bench 'TrainStep$' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/gpt/ -run '^$' -bench 'Generate$/^cache' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/gpt/ -run '^$' -bench 'Generate$/nocache' -benchtime 2x | grep -E '^Benchmark'
  go test $1 ./models/seq2seq/ -run '^$' -bench . -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/bert/ -run '^$' -bench 'BERTMini' -benchtime 3x | grep -E '^Benchmark'
  vitbench "$1"
}

if [ "$what" != torch ]; then
  echo "== Go ($(go version | cut -d' ' -f3), $(nproc) cores), pure Go"
  gobench ""
  if haveblas; then
    echo "== Go (-tags openblas)"
    OPENBLAS_NUM_THREADS=2 gobench "-tags openblas"
  else
    echo "note: libopenblas-dev is not installed; skipping the -tags openblas build" >&2
  fi
fi

if [ "$what" != go ]; then
  echo "== PyTorch"
  torchenv
  /usr/bin/python3 tools/pytorch/bench_layers.py
  /usr/bin/python3 tools/pytorch/bench_gpt.py
  /usr/bin/python3 tools/pytorch/bench_seq2seq.py
  /usr/bin/python3 tools/pytorch/bench_bert.py
  /usr/bin/python3 tools/pytorch/bench_vit.py
fi
