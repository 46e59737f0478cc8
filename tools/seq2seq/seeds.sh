#!/bin/bash
# The zoo against the PyTorch reference (tools/pytorch/train_seq2seq.py),
# seed by seed and like for like: for each seed S, the zoo trains with
# --seed S on one core, exporting the pairs it encoded (its held-out split
# depends on the seed), and PyTorch trains on exactly those ids with
# --seed S on the other core, side by side; both decode the same test set.
# Every run uses one tokenizer, so all of them see the same ids. At the end
# it prints one row per seed and side, and the means.
#
#   go build -o zoo ./cmd/zoo
#   ZOO=./zoo TRAIN=kjv-rv1909.train.tsv TEST=kjv-rv1909.test.tsv \
#     TOKENIZER=runs/bible/checkpoints/final/tokenizer.json SEEDS="2 3" OUT=runs/seeds \
#     tools/seq2seq/seeds.sh
#
# CONFIG is the recipe (default tools/seq2seq/bible-en-es.json: about 75
# minutes a seed on this 2-core machine). Without TOKENIZER, a one-step zoo
# run trains one first (OUT/tok). Needs PyTorch and OpenBLAS (see
# tools/pytorch/README.md). A seed whose results exist is not run again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ZOO=$(readlink -f "${ZOO:-./zoo}")
CONFIG=$(readlink -f "${CONFIG:-$here/bible-en-es.json}")
TRAIN=$(readlink -f "${TRAIN:?TRAIN: the training TSV}")
TEST=$(readlink -f "${TEST:?TEST: the test TSV}")
SEEDS=${SEEDS:-2}
OUT=${OUT:-runs/seeds}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
blas=/usr/lib/x86_64-linux-gnu/openblas-pthread
[ -d "$blas" ] || { echo "seeds.sh: $blas is missing: apt-get install libopenblas0-pthread (reference BLAS is ~30x slower)" >&2; exit 1; }

if [ -z "${TOKENIZER:-}" ]; then
  TOKENIZER=$OUT/tok/checkpoints/final/tokenizer.json
  [ -e "$TOKENIZER" ] || GOMAXPROCS=2 "$ZOO" finetune seq2seq --config "$CONFIG" --data "$TRAIN" \
    --max-steps 2 --warmup-steps 1 --run "$OUT/tok" >"$OUT/tok.log" 2>&1
fi
TOKENIZER=$(readlink -f "$TOKENIZER")

for s in $SEEDS; do
  zrun=$OUT/zoo-s$s
  if [ ! -e "$zrun/results.json" ]; then
    GOMAXPROCS=1 "$ZOO" finetune seq2seq --config "$CONFIG" --data "$TRAIN" --test-data "$TEST" \
      --tokenizer "$TOKENIZER" --seed "$s" --export-ids --run "$zrun" >"$zrun.log" 2>&1 &
    zpid=$!
    # The zoo writes the ids before its first step; PyTorch starts then.
    until [ -e "$zrun/ids/test.jsonl" ]; do
      kill -0 $zpid 2>/dev/null || { echo "seeds.sh: the zoo run of seed $s failed: see $zrun.log" >&2; exit 1; }
      sleep 2
    done
  else
    zpid=
  fi
  if [ ! -e "$OUT/torch-s$s.json" ]; then
    LD_LIBRARY_PATH=$blas OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 -u \
      "$here/../pytorch/train_seq2seq.py" --ids "$zrun/ids" --config "$CONFIG" --tokenizer "$TOKENIZER" \
      --test-tsv "$TEST" --seed "$s" --threads 1 --out "$OUT/torch-s$s.json" \
      --hyps-prefix "$OUT/torch-s$s/hyps" >"$OUT/torch-s$s.log" 2>&1 ||
      { echo "seeds.sh: the PyTorch run of seed $s failed: see $OUT/torch-s$s.log" >&2; exit 1; }
  fi
  [ -z "$zpid" ] || wait $zpid || { echo "seeds.sh: the zoo run of seed $s failed: see $zrun.log" >&2; exit 1; }
done

python3 - "$OUT" $SEEDS <<'EOF'
import json, os, sys
out, seeds = sys.argv[1], sys.argv[2:]
rows = {"zoo": [], "PyTorch": []}
print("| seed | side | val loss | BLEU beam | chrF beam | BLEU greedy | training (min) |")
print("|---:|---|---:|---:|---:|---:|---:|")
for s in seeds:
    for side, path in (("zoo", os.path.join(out, "zoo-s%s" % s, "results.json")),
                       ("PyTorch", os.path.join(out, "torch-s%s.json" % s))):
        r = json.load(open(path))
        sc = {x["strategy"].split()[0]: x for x in r["scores"]}
        beam = next(v for k, v in sc.items() if k != "greedy")
        row = (r["val_loss"], beam["bleu"], beam["chrf"], sc["greedy"]["bleu"], r["train_seconds"] / 60)
        rows[side].append(row)
        print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.1f |" % ((s, side) + row))
mean = {k: [sum(c) / len(c) for c in zip(*v)] for k, v in rows.items()}
for side, m in mean.items():
    print("| mean | %s | %.2f | %.2f | %.2f | %.2f | %.1f |" % ((side,) + tuple(m)))
if mean["PyTorch"][1] > 0:
    print("\nzoo's mean beam BLEU is %.1f%% of PyTorch's" % (100 * mean["zoo"][1] / mean["PyTorch"][1]))
EOF
