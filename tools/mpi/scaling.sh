#!/bin/bash
# Data-parallel scaling on one machine, across a real network interface:
# the main job (zoo pretrain gpt) for STEPS steps as
#   1 process × 2 threads, accumulating 2 micro-batches a step (one global batch of 24),
#   1 process × 1 thread, 1 micro-batch (what each rank computes),
#   2 ranks × 1 thread in two network namespaces over a veth pair (tools/mpi/netns.sh),
#   the same over the veth pair shaped to RATE (default 1gbit) with tc,
#   each of those two with the gradient reduced in buckets during the backward
#   pass (the default) and once after it (ZOO_MPI_BUCKET_MB=0),
# and prints step time, time in Allreduce and bytes sent per step. Needs root,
# iproute2, Open MPI and a -tags mpi zoo:
#
#   go build -tags mpi -o zoo-mpi ./cmd/zoo
#   ZOO=./zoo-mpi STEPS=200 tools/mpi/scaling.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ZOO=$(readlink -f "${ZOO:-./zoo-mpi}")
STEPS=${STEPS:-200}
RATE=${RATE:-1gbit}
ARGS=${ARGS:-pretrain gpt}
tmp=$(mktemp -d)
trap '"$here/netns.sh" down; rm -rf "$tmp"' EXIT
echo '{"gradient_accumulation_steps": 2}' >"$tmp/acc2.json"
common="--max-steps $STEPS --warmup-steps 5 --eval-interval $STEPS --save-interval 0"

GOMAXPROCS=2 $ZOO $ARGS $common --config "$tmp/acc2.json" --run "$tmp/one-2t" >/dev/null
GOMAXPROCS=1 $ZOO $ARGS $common --run "$tmp/one-1t" >/dev/null

tx() { ip -n zooA -s -j link show zoo-a | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }
for link in veth shaped; do
  "$here/netns.sh" down
  if [ $link = veth ]; then "$here/netns.sh" up >/dev/null; else "$here/netns.sh" up "$RATE" >/dev/null; fi
  # Bytes a step: the difference between a run of STEPS and one of 10, over STEPS-10 steps
  # (the start-up broadcast of weights and optimizer state cancels out).
  t0=$(tx)
  "$here/netns.sh" run "$ZOO" $ARGS --max-steps 10 --warmup-steps 5 --eval-interval 10 --save-interval 0 --run "$tmp/short-$link" >/dev/null 2>&1
  t1=$(tx)
  "$here/netns.sh" run "$ZOO" $ARGS $common --run "$tmp/two-$link" >/dev/null 2>&1
  t2=$(tx)
  echo "$(( (t2 - t1) - (t1 - t0) ))" >"$tmp/bytes-$link"
  # The same with the gradient reduced once after the backward pass
  # instead of in buckets during it.
  MPIFLAGS="-x ZOO_MPI_BUCKET_MB=0" "$here/netns.sh" run "$ZOO" $ARGS $common --run "$tmp/after-$link" >/dev/null 2>&1
done

python3 - "$tmp" "$STEPS" "$RATE" <<'PY'
import json, statistics, sys, os
tmp, steps, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def recs(run):
    return [json.loads(l) for l in open(os.path.join(tmp, run, "metrics.jsonl"))]
def med(run, key="seconds"):
    r = recs(run)[5:-1]  # skip the first steps (compilation, warm caches) and the last (evaluation)
    return statistics.median(x.get(key, 0.0) for x in r)
rows = [("1 process × 2 threads, 2 micro-batches of 12", "one-2t", None),
        ("1 process × 1 thread, 1 micro-batch of 12 (a rank's compute)", "one-1t", None),
        ("2 ranks × 1 thread, veth", "two-veth", "veth"),
        ("2 ranks × 1 thread, veth, one reduction after the backward pass", "after-veth", None),
        ("2 ranks × 1 thread, veth shaped to %s" % rate, "two-shaped", "shaped"),
        ("2 ranks × 1 thread, veth shaped to %s, one reduction after the backward pass" % rate, "after-shaped", None)]
base = med("one-2t")
print("| run (global batch 24 sequences but the 1-thread row) | step (median) | vs 1×2 | Allreduce | bytes sent a step |")
print("|---|---:|---:|---:|---:|")
for name, run, link in rows:
    s = med(run)
    comm = "%.1f ms" % (1e3 * med(run, "comm_seconds")) if run.startswith(("two-", "after-")) else ""
    b = ""
    if link:
        n = int(open(os.path.join(tmp, "bytes-" + link)).read())
        b = "%.2f MB" % (n / (steps - 10) / 1e6)
    print("| %s | %.1f ms | %.2f× | %s | %s |" % (name, 1e3 * s, s / base, comm, b))
PY
