#!/usr/bin/env bash
# Runs the Go layer and op benchmarks and the PyTorch reference back to back,
# on the same machine in one run, so their ratio is what counts (the machine
# is shared and noisy). Needs: apt-get install python3-torch libopenblas0-pthread
# (see tools/pytorch/README.md). Usage: tools/bench_layers.sh [-benchtime 10x]
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-10x}
echo "== Go ($(go version | cut -d' ' -f3), GOMAXPROCS=$(nproc))"
go test ./layers/ ./internal/ops/ -run '^$' -bench . -benchtime "$benchtime" | grep -E '^(Benchmark|cpu:)'
echo "== PyTorch"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [ -d "$openblas" ]; then
  export LD_LIBRARY_PATH=$openblas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  echo "warning: libopenblas0-pthread is not installed; torch will use the slow reference BLAS" >&2
fi
/usr/bin/python3 tools/pytorch/bench_layers.py
