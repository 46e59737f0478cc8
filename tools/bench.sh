#!/usr/bin/env bash
# Runs the Go benchmarks and the PyTorch references back to back, on the same
# machine in one run, so that their ratios are what count (the machine is
# shared and noisy). Needs, for the PyTorch half:
#   apt-get install python3-torch libopenblas0-pthread   (see tools/pytorch/README.md)
# Usage: tools/bench.sh [go|torch]   (default: both, then the ratio table)
#        tools/bench.sh vit [rounds]  the ViT Fashion-MNIST rows only (training
#                                     step B128 with AdamW, forward B256), zoo
#                                     and PyTorch interleaved for rounds (default
#                                     5) rounds; the table shows the medians
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
  go test $1 ./layers/ ./internal/ops/ -run '^$' -bench . -benchtime 10x | grep -E '^(Benchmark|cpu:)'
  # -bench patterns are split at '/': each level is its own regexp.
  go test $1 ./models/gpt/ -run '^$' -bench 'TrainStep' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/gpt/ -run '^$' -bench 'Generate/^cache' -benchtime 5x | grep -E '^Benchmark'
  go test $1 ./models/gpt/ -run '^$' -bench 'Generate/nocache' -benchtime 2x | grep -E '^Benchmark'
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
