#!/usr/bin/env bash
# The scaling table (issue 40, docs/speed.md "Cores beyond two"): each
# family's training step in zoo at GOMAXPROCS 1 to 16 and in PyTorch at
# torch.set_num_threads 1 to 16, on one machine in one run, zoo and PyTorch
# interleaved thread count by thread count, and the float32 FMA peak at
# each count (BenchmarkPeakFMA), so that each side's speed-up over 2
# threads can be read against the other's and against the cores' own.
#
# Usage: tools/scaling.sh [OUTDIR]          (default /tmp/zoo-scaling)
#   THREADS="1 2 4 8 16"   the thread counts (default: 1 2 4 8 16, those up to nproc)
#   ZOO_TESTBIN=DIR        prebuilt test binaries gpt.test, bert.test,
#                          finetune.test, gemm.test (or their .xz), for a
#                          machine without Go; else they are built here
#   ZOO_TESTBIN_BASE=DIR   test binaries of another zoo (the baseline, e.g. the
#                          last commit's), timed beside ZOO_TESTBIN's: the
#                          table gains a "zoo before" column (rows whose
#                          binary is missing there are skipped)
#   PYTHON=python3         the Python with torch (PyTorch 2.x: its own BLAS)
#   ROWS="gpt bert vit gemm" which rows
#   GPT_N=10x BERT_N=5x VIT_N=5x VIT_ITERS=5  zoo's -test.benchtime per row,
#                          PyTorch's ViT iterations (GPT's and BERT's: 10)
#   ROUNDS=1               rounds of the whole sweep (the tables show medians;
#                          a shared or virtual machine needs several)
#   PROFILES=1             CPU profiles of zoo's GPT and ViT steps at the
#                          highest count, taken first (0: none)
#   BF16_THREADS="2 16"    the thread counts of the GPT step's bf16 rows
#                          (default 2 and the highest count; "" for none)
# Prints the table last; every raw log and the CPU profiles are left in
# OUTDIR. On a machine with a time limit, run it under timeout(1) and copy
# OUTDIR's logs out afterwards: each log is written as its rows finish.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/zoo-scaling}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
rows=${ROWS:-gpt bert vit gemm}
ncpu=$(nproc)
threads=${THREADS:-}
if [ -z "$threads" ]; then
  for t in 1 2 4 8 16; do [ "$t" -le "$ncpu" ] && threads="$threads $t"; done
fi
bin=${ZOO_TESTBIN:-}
if [ -z "$bin" ]; then
  bin=$out/bin
  mkdir -p "$bin"
  for p in models/gpt models/bert finetune internal/gemm; do
    go test -c -o "$bin/$(basename $p).test" ./$p
  done
fi
unpack() { # dir-with-binaries-or-.xz dest-dir: prints where the binaries are
  local from=$1 to=$2
  for n in gpt bert finetune gemm; do
    if [ ! -x "$from/$n.test" ] && [ -f "$from/$n.test.xz" ]; then
      mkdir -p "$to"
      "$py" -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' \
        "$from/$n.test.xz" "$to/$n.test"
      chmod +x "$to/$n.test"
    fi
  done
  if ls "$to"/*.test >/dev/null 2>&1; then echo "$to"; else echo "$from"; fi
}
bin=$(unpack "$bin" "$out/bin")
base=${ZOO_TESTBIN_BASE:-}
[ -n "$base" ] && base=$(unpack "$base" "$out/base")

{
  echo "date: $(date -u +%FT%TZ)"
  echo "nproc: $ncpu"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|L2 cache|L3 cache|Flags' |
    sed -E 's/^(Flags:).*/\1 (avx512f, avx512_bf16, amx_bf16 shown below)/'
  grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  "$py" -c 'import torch; print("torch", torch.__version__); print(torch.__config__.parallel_info())' 2>&1 | head -12
} | tee "$out/machine.txt"

export OMP_WAIT_POLICY=PASSIVE
torch_run() { # threads script filter [args]
  local t=$1 s=$2 f=$3; shift 3
  echo "## threads $t"
  OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t \
    "$py" "tools/pytorch/$s" --threads "$t" "$@" "$f" 2>&1
}
zoo_run() { # threads binary filter benchtime package-dir [extra]
  local t=$1 b=$2 f=$3 n=$4 d=$5; shift 5
  echo "## threads $t"
  (cd "$d" && GOMAXPROCS=$t "$bin/$b.test" -test.run '^$' -test.bench "$f" -test.benchtime "$n" -test.cpu "$t" "$@") 2>&1
  if [ -n "$base" ] && [ -x "$base/$b.test" ]; then
    { echo "## threads $t"
      (cd "$d" && GOMAXPROCS=$t "$base/$b.test" -test.run '^$' -test.bench "$f" -test.benchtime "$n" -test.cpu "$t") 2>&1
    } >>"$out/base-$LOG"
  fi
}
last=${threads##* }
# CPU profiles of zoo's GPT and ViT steps at the highest count first, so
# that a run cut short by a time limit still has them (go tool pprof
# BINARY OUT/gpt-16.prof; the binaries are in OUT/bin).
if [ "${PROFILES:-1}" = 1 ]; then
  echo "== profiles at $last threads" >&2
  case " $rows " in *" gpt "*)
    base= LOG=zoo-prof.log zoo_run "$last" gpt '^BenchmarkTrainStep$/^V512_T128_d256_h4_L4_ff1024_B16$' 20x models/gpt \
      -test.cpuprofile "$out/gpt-$last.prof" >>"$out/zoo-prof.log" ;;
  esac
  case " $rows " in *" vit "*)
    base= LOG=zoo-prof.log zoo_run "$last" finetune '^BenchmarkTrainStep$/vit-fashion/^B128$' 10x finetune \
      -test.cpuprofile "$out/vit-$last.prof" >>"$out/zoo-prof.log" ;;
  esac
fi
for round in $(seq "${ROUNDS:-1}"); do
for t in $threads; do
  echo "== round $round, threads $t" >&2
  case " $rows " in *" gpt "*)
    LOG=zoo-gpt.log zoo_run "$t" gpt '^BenchmarkTrainStep$/^V512_T128_d256_h4_L4_ff1024_B16$' "${GPT_N:-10x}" models/gpt >>"$out/zoo-gpt.log"
    torch_run "$t" bench_gpt.py GPTTrainStep --iters 10 >>"$out/torch-gpt.log" ;;
  esac
  case " $rows " in *" bert "*)
    [ "$t" -ge 2 ] && LOG=zoo-bert.log zoo_run "$t" bert '^BenchmarkBERTMiniPretrainStep_T128_B32$' "${BERT_N:-5x}" models/bert >>"$out/zoo-bert.log"
    [ "$t" -ge 2 ] && torch_run "$t" bench_bert.py BERTMiniPretrainStep_T128_B32 --iters 10 >>"$out/torch-bert.log" ;;
  esac
  case " $rows " in *" vit "*)
    [ "$t" -ge 2 ] && LOG=zoo-vit.log zoo_run "$t" finetune '^BenchmarkTrainStep$/vit-fashion/^B128$' "${VIT_N:-5x}" finetune >>"$out/zoo-vit.log"
    [ "$t" -ge 2 ] && torch_run "$t" bench_vit.py TrainStep/vit-fashion/B128 --iters "${VIT_ITERS:-5}" >>"$out/torch-vit.log" ;;
  esac
  case " $rows " in *" gemm "*)
    LOG=zoo-gemm.log zoo_run "$t" gemm 'PeakFMA/goroutines[0-9]+$|SgemmMainJob/fc_' 20x internal/gemm >>"$out/zoo-gemm.log" ;;
  esac
  true
done
done
case " $rows " in *" gpt "*)
  for t in ${BF16_THREADS-2 $last}; do # the GPT step in bf16 (ops.UseBF16 / torch.autocast)
    echo "== bf16, threads $t" >&2
    LOG=zoo-gpt.log zoo_run "$t" gpt '^BenchmarkTrainStep$/^V512_T128_d256_h4_L4_ff1024_B16_bf16$' 5x models/gpt >>"$out/zoo-gpt.log"
    torch_run "$t" bench_gpt.py GPTTrainStep --iters 10 --bf16 >>"$out/torch-gpt.log"
  done
  ;;
esac
"$py" tools/scaling_table.py "$out" | tee "$out/table.md"
