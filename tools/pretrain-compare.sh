#!/usr/bin/env bash
# The BERT section's four fine-tuning tasks from one start, for the
# pretrained-against-scratch tables of docs/bert.md and docs/electra.md.
#
#   tools/pretrain-compare.sh NAME INIT "SEEDS" "TASKS" [--scratch]
#
# NAME names the runs (OUT/NAME-TASK-SEED.log), INIT is the checkpoint to
# start from (with --scratch: its architecture and tokenizer, fresh
# weights), SEEDS e.g. "1 2 3", TASKS any of spam genre pos qa. The data
# come from the tools' READMEs (DATA holds clsdata/, brown-pos/ and
# wn-squad/: tools/classify-data, tools/brown2conll, tools/wordnet2squad).
# Each run is on one core (GOMAXPROCS=1), as the documented runs were; a
# finished run (OUT/NAME-TASK-SEED.done) is not run again.
set -euo pipefail
name=$1 init=$2 seeds=$3 tasks=$4 extra=${5:-}
DATA=${DATA:-/tmp/zoo-data} OUT=${OUT:-runs/compare} ZOO=${ZOO:-go run ./cmd/zoo}
mkdir -p "$OUT"
for task in $tasks; do for seed in $seeds; do
  run=$OUT/$name-$task-$seed
  [ -e "$run.done" ] && continue
  case $task in
    spam|genre) f=spam; [ "$task" = genre ] && f=brown
      args=(--task classify --train-file "$DATA/clsdata/$f-train.tsv" --validation-file "$DATA/clsdata/$f-test.tsv"
            --max-length 128 --batch-size 16 --max-steps 250 --warmup-steps 25 --learning-rate 3e-4 --eval-steps 0);;
    pos) args=(--task tokens --train-file "$DATA/brown-pos/train.conll" --validation-file "$DATA/brown-pos/test.conll"
            --max-length 64 --batch-size 32 --max-steps 300 --warmup-steps 30 --learning-rate 1e-3 --eval-steps 300);;
    qa) args=(--task qa --train-file "$DATA/wn-squad/train.json" --validation-file "$DATA/wn-squad/dev.json"
            --max-seq-length 128 --batch-size 32 --max-steps 150 --warmup-steps 15 --learning-rate 1e-3 --eval-steps 150);;
    *) echo "unknown task $task: use spam, genre, pos or qa" >&2; exit 2;;
  esac
  rm -rf "$run"
  # shellcheck disable=SC2086
  GOMAXPROCS=1 $ZOO finetune bert "${args[@]}" --init-from "$init" $extra --seed "$seed" --run "$run" > "$run.log" 2>&1
  touch "$run.done"
done; done
