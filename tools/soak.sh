#!/usr/bin/env bash
# Soak test (not in CI): does a long training run hold its memory flat?
# Builds the CLI, runs `zoo pretrain gpt` (the default config: a character-
# level GPT on Newton's Opticks from the Go toolchain) for 10,000 steps with
# an evaluation and a checkpoint every 500, samples the process's resident
# memory (VmRSS, and VmHWM, its peak so far, from /proc/PID/status) every
# minute into a CSV, and at the end prints the curve after warm-up (min,
# median, max, ±% around the median, slope) and draws it (tools/rssplot).
# Linux only (/proc). About an hour on the 2-core dev box.
#
# Usage: tools/soak.sh [extra zoo pretrain gpt flags]
# Environment (defaults in brackets):
#   SOAK_STEPS [10000]        optimizer steps (--max-steps)
#   SOAK_EVERY [500]          --eval-interval and --save-interval
#   SOAK_INTERVAL [60]        seconds between samples
#   SOAK_WARMUP_STEPS [2×SOAK_EVERY]  samples before this step are left out
#                             of the summary (the first evaluations and
#                             checkpoints allocate what they keep)
#   SOAK_DIR [a new mktemp -d] where the binary, the run directory (run/),
#                             the log (train.log), rss.csv and rss.png go;
#                             it is kept
# A short try: SOAK_STEPS=600 SOAK_EVERY=100 SOAK_INTERVAL=10 tools/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${SOAK_STEPS:-10000}
every=${SOAK_EVERY:-500}
interval=${SOAK_INTERVAL:-60}
warm=${SOAK_WARMUP_STEPS:-$((2 * every))}
dir=${SOAK_DIR:-$(mktemp -d -t zoo-soak.XXXXXX)}
mkdir -p "$dir"
[ -e "$dir/run" ] && { echo "soak: $dir/run exists; use another SOAK_DIR" >&2; exit 2; }

echo "== building the CLI into $dir/zoo"
go build -o "$dir/zoo" ./cmd/zoo
csv=$dir/rss.csv
echo "seconds,step,rss_mb,hwm_mb" > "$csv"
echo "== zoo pretrain gpt: $steps steps, evaluation and checkpoint every $every, RSS every ${interval}s; log $dir/train.log"
cmd=("$dir/zoo" pretrain gpt --run "$dir/run" --max-steps "$steps" --eval-interval "$every" --save-interval "$every" "$@")
# Under GNU time, when there is one, for the peak of the whole run (the
# samples may miss the last minute); its ru_maxrss is zoo's own, as time is
# small (Linux carries ru_maxrss over exec).
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f %M -o "$dir/maxrss_kb" "${cmd[@]}" > "$dir/train.log" 2>&1 &
  wrapper=$!
  pid=
  for _ in $(seq 50); do # zoo is time's only child
    pid=$(cat "/proc/$wrapper/task/$wrapper/children" 2>/dev/null | awk '{ print $1 }') || true
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] || { echo "soak: cannot find zoo under /usr/bin/time (pid $wrapper)" >&2; kill "$wrapper"; exit 1; }
else
  "${cmd[@]}" > "$dir/train.log" 2>&1 &
  pid=$!
  wrapper=$pid
fi
trap 'kill "$pid" 2>/dev/null || true' INT TERM

kb2mb() { awk -v kb="$1" 'BEGIN { printf "%.1f", kb * 1024 / 1e6 }'; }
sample() { # appends one row; fails once the process is gone
  local status rss hwm step
  status=$(cat "/proc/$pid/status" 2>/dev/null) || return 1
  rss=$(awk '/^VmRSS:/ { print $2 }' <<< "$status")
  hwm=$(awk '/^VmHWM:/ { print $2 }' <<< "$status")
  [ -n "$rss" ] || return 1 # a zombie has no memory lines
  # metrics.jsonl has one record per step, "step" first.
  step=$(tail -n 1 "$dir/run/metrics.jsonl" 2>/dev/null | sed -n 's/^{"step":\([0-9]*\).*/\1/p')
  echo "$SECONDS,${step:-0},$(kb2mb "$rss"),$(kb2mb "$hwm")" >> "$csv"
  printf "$line" "t=${SECONDS}s step ${step:-0} RSS $(kb2mb "$rss") MB (peak $(kb2mb "$hwm") MB)   "
}
line='%s\n'
[ -t 1 ] && line='\r%s' # one line that updates, on a terminal
SECONDS=0
while sample; do
  for ((i = 0; i < interval; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
done
[ -t 1 ] && echo
status=0
wait "$wrapper" || status=$?
if [ "$status" -ne 0 ]; then
  echo "soak: zoo exited with status $status; the end of $dir/train.log:" >&2
  tail -n 20 "$dir/train.log" >&2
fi
echo "== $(($(wc -l < "$csv") - 1)) samples in $csv"
grep -E '^done:' "$dir/train.log" || true
go run ./tools/rssplot -csv "$csv" -png "$dir/rss.png" -warmup-step "$warm"
if [ -s "$dir/maxrss_kb" ]; then
  echo "peak RSS of the whole run (GNU time): $(kb2mb "$(tail -n 1 "$dir/maxrss_kb")") MB"
fi
echo "run directory: $dir/run ($(du -sh "$dir/run" | cut -f1))"
exit "$status"
