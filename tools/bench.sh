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
  go test $1 ./models/vit/ -run '^$' -bench 'TrainStep/vit-fashion/B128$' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/vit/ -run '^$' -bench 'Forward/vit-fashion/B256$' -benchtime 5x | grep -E '^Benchmark'
}
if [ "$what" = main ]; then
  tmp=$(mktemp -d)
  go build -o "$tmp/zoo" ./cmd/zoo
  for r in $(seq "${2:-2}"); do
    echo "== round $r: $(uptime | sed 's/.*load/load/')"
    /usr/bin/time -f "zoo: wall %e s, peak RSS %M KB" "$tmp/zoo" pretrain gpt --run "$tmp/run$r" > "$tmp/log$r" 2> "$tmp/time$r"
    python3 - "$tmp/run$r/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
secs = sum(r.get("seconds", 0) for r in rows)
val = [r["val_loss"] for r in rows if "val_loss" in r]
print(f"zoo: {len(rows)} steps, training {secs:.1f} s ({sum(r['targets'] for r in rows) / secs:.0f} tokens/s), validation loss {val[-1]:.4f}")
PY
    cat "$tmp/time$r"
    (torchenv; /usr/bin/time -f "PyTorch: wall %e s, peak RSS %M KB" /usr/bin/python3 tools/pytorch/train_gpt_opticks.py --out "$tmp/ref$r.json" > "$tmp/reflog$r" 2> "$tmp/reftime$r")
    python3 -c "import json; d = json.load(open('$tmp/ref$r.json')); t = d['timing']; print(f\"PyTorch: {t['iters']} steps, training {t['train_seconds']:.1f} s ({t['tokens_per_second']:.0f} tokens/s), validation loss {d['final_val_loss']:.4f}\")"
    tail -1 "$tmp/reftime$r"
  done
  rm -rf "$tmp"
  exit 0
fi
if [ "$what" = steps ]; then
  tmp=$(mktemp -d)
  for pkg in gpt seq2seq bert vit; do go test -c -o "$tmp/$pkg.test" "./models/$pkg"; done
  # label | Go package | Go -test.bench pattern | -test.benchtime | PyTorch script | its name filter
  rows=(
    "GPT train step V512_T128_d256_h4_L4_ff1024_B16|gpt|TrainStep$/V512_T128_d256_h4_L4_ff1024_B16$|5x|bench_gpt.py|GPTTrainStep/"
    "seq2seq train step Small B64_Ts16_Tt16|seq2seq|TrainStep/small|5x|bench_seq2seq.py|Seq2seqTrainStep/"
    "BERT-Mini pretraining step T128_B32 (MLM all positions + NSP)|bert|BERTMiniPretrainStep_T128_B32$|3x|bench_bert.py|BERTMiniPretrainStep_T128_B32"
    "ViT Fashion-MNIST recipe train step B128|vit|TrainStep/vit-fashion/B128$|5x|bench_vit.py|TrainStep/vit-fashion/B128"
  )
  out=$tmp/rows
  for r in $(seq "${2:-3}"); do
    echo "== round $r: $(uptime | sed 's/.*load/load/')"
    for row in "${rows[@]}"; do
      IFS='|' read -r label pkg pat bt py filt <<< "$row"
      (cd "models/$pkg" && /usr/bin/time -f %M -o "$tmp/gorss" "$tmp/$pkg.test" -test.run '^$' -test.bench "$pat" -test.benchtime "$bt" > "$tmp/goout" 2>&1) || { cat "$tmp/goout"; exit 1; }
      goms=$(awk '/^Benchmark/ { print $3 / 1e6; exit }' "$tmp/goout")
      (torchenv; /usr/bin/time -f %M -o "$tmp/pyrss" /usr/bin/python3 "tools/pytorch/$py" "$filt" > "$tmp/pyout" 2>&1) || { cat "$tmp/pyout"; exit 1; }
      pyms=$(awk -F'|' -v f="$filt" 'index($2, f) && $3 ~ /[0-9]/ { gsub(/ /, "", $3); print $3; exit }' "$tmp/pyout")
      echo "$label|$pyms|$goms|$(( $(cat "$tmp/pyrss") / 1000 ))|$(( $(cat "$tmp/gorss") / 1000 ))" | tee -a "$out"
    done
  done
  echo "== zoo / PyTorch, medians of ${2:-3} interleaved rounds (below 1: zoo is faster or smaller)"
  python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, py, go, pyrss, gorss = line.rstrip("\n").split("|")
    rows.setdefault(label, []).append((float(py), float(go), int(pyrss), int(gorss)))
print("| training step | PyTorch (ms) | zoo (ms) | ratio | peak RSS PyTorch / zoo (MB) | ratio |")
print("|---|---:|---:|---:|---:|---:|")
for label, rs in rows.items():
    py, go = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
    pr, gr = max(r[2] for r in rs), max(r[3] for r in rs)
    print(f"| {label} | {py:.1f} | {go:.1f} | {go / py:.2f}× | {pr} / {gr} | {gr / pr:.2f}× |")
PY
  rm -rf "$tmp"
  exit 0
fi
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
gobin() { # $1: package; builds its test binary once into $bindir
  local out=$bindir/$(basename "$1").test
  [ -x "$out" ] || go test -c -o "$out" "./$1"
  echo "$out"
}
gorow() { # $1: package, $2: -test.bench pattern, $3: iterations; the row runs in a process of its own
  local bin
  bin=$(gobin "$1")
  (cd "$1" && "$bin" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x") | grep -E '^Benchmark' || echo "FAILED: $1 $2" >&2
}
torchrow() { # $1: script, then its arguments; keeps the table's lines and the load notes
  (torchenv; /usr/bin/python3 "tools/pytorch/$1" "${@:2}") | grep -E '^(\| |CPU|BLAS)' || echo "FAILED: $*" >&2
}
interleaved() { # $1: rounds, $2: function printing one round; then the ratio table
  local out
  out=$(mktemp)
  bindir=$(mktemp -d)
  trap "rm -rf '$bindir' '$out'" EXIT
  for i in $(seq "$1"); do
    echo "== round $i: $(uptime | sed 's/.*load/load/')"
    echo "== Go ($(go version | cut -d' ' -f3), $(nproc) cores), pure Go"
    "$2"
  done | tee "$out"
  echo "== zoo / PyTorch, medians of $1 interleaved rounds (below 1: zoo is faster or smaller)"
  python3 tools/bench_ratios.py < "$out"
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
if [ "$what" = long ]; then
  interleaved "${2:-3}" longround
  exit 0
fi
if [ "$what" = decode ]; then
  interleaved "${2:-3}" decoderound
  exit 0
fi
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
  if [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ]; then
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
