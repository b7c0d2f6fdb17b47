#!/usr/bin/env bash
# tests/gpu/run.sh [BUNDLE] — runs the bundle of tests/gpu/prepare.sh ON a GPU machine.
#
# BUNDLE (default build/gpu_bundle) holds gpu_tests.tar.xz (unpacked into $WORK) or is an unpacked
# gpu_tests/ folder. For every line of its manifest (model x precision) it builds the emitted folder
# (make, nvcc; the folders build in parallel), runs the program on the model's input and compares
# with the reference interpreter's FP32 outputs (expected/):
#   fp32: the program's own --compare-dir at rtol 1e-3, atol 1e-5 (exit 0 = PASS)
#   fp16: relative L2 <= 1e-2 and no NaN/Inf (tests/gpu/rel_l2.py, python3 + numpy); the program's
#         --compare-dir at rtol 1e-2, atol 1e-3 is printed for information
#   int8: the same with the limit of int8/limit.txt (1.25 x the INT8 simulation's error + 1e-3)
# It prints one PASS/FAIL line per model and precision, then (BENCH runs, default 100; 0 skips)
# the --bench latency of each program as a table, and exits 1 when any build, run or check failed.
#
# Environment: WORK (/tmp/modelc_gpu_tests), BENCH (100), WARMUP (10), JOBS (nproc), PYTHON (python3),
# EMU=1 builds and runs the CPU emulation (make emu, NAME_emu) instead: for checking this script on
# a machine without a GPU (slow: keep BENCH=0 and the small models, ONLY="tiny_cnn tiny_mlp").
# ONLY="model ..." restricts the run to those models.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${1:-$HERE/../../build/gpu_bundle}
WORK=${WORK:-/tmp/modelc_gpu_tests}
BENCH=${BENCH:-100}
WARMUP=${WARMUP:-10}
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}
EMU=${EMU:-0}
ONLY=${ONLY:-}

if [ -f "$BUNDLE/gpu_tests.tar.xz" ]; then
  rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
  tar -C "$WORK" -xJf "$BUNDLE/gpu_tests.tar.xz" || { echo "error: cannot unpack $BUNDLE/gpu_tests.tar.xz" >&2; exit 1; }
  T=$WORK/gpu_tests
elif [ -f "$BUNDLE/manifest.tsv" ]; then
  T=$(cd "$BUNDLE" && pwd)
elif [ -f "$BUNDLE/gpu_tests/manifest.tsv" ]; then
  T=$(cd "$BUNDLE/gpu_tests" && pwd)
else
  echo "error: $BUNDLE holds neither gpu_tests.tar.xz nor a manifest.tsv (run tests/gpu/prepare.sh)" >&2
  exit 1
fi

echo "== device"
if [ "$EMU" = 1 ]; then
  echo "CPU emulation (EMU=1): make emu, NAME_emu"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version) | tail -1
fi
date -u '+%Y-%m-%d %H:%M UTC'

# The manifest's rows (minus the header), filtered by ONLY.
rows=()
while IFS=$'\t' read -r model prec dir name input; do
  [ "$model" = model ] && continue
  if [ -n "$ONLY" ] && [[ " $ONLY " != *" $model "* ]]; then continue; fi
  rows+=("$model"$'\t'"$prec"$'\t'"$dir"$'\t'"$name"$'\t'"$input")
done < "$T/manifest.tsv"
[ ${#rows[@]} -gt 0 ] || { echo "error: no model to run (ONLY='$ONLY')" >&2; exit 1; }

# 1. Build every folder, several at a time.
target=all
[ "$EMU" = 1 ] && target=emu
per=$(( JOBS / 4 > 0 ? JOBS / 4 : 1 ))
echo "== building ${#rows[@]} folders (make $target, 4 at a time, -j$per each)"
start=$(date +%s)
for r in "${rows[@]}"; do
  IFS=$'\t' read -r model prec dir name input <<< "$r"
  echo "$T/$dir"
done | xargs -P 4 -I{} sh -c "make -C {} -j$per $target > {}/build.log 2>&1; echo \$? > {}/build.rc"
echo "built in $(( $(date +%s) - start )) s"

# 2. Run and check.
echo "== checks"
fails=0
results=()
for r in "${rows[@]}"; do
  IFS=$'\t' read -r model prec dir name input <<< "$r"
  d=$T/$dir
  prog=$d/$name
  [ "$EMU" = 1 ] && prog=$d/${name}_emu
  if [ "$(cat "$d/build.rc" 2>/dev/null)" != 0 ] || [ ! -x "$prog" ]; then
    echo "FAIL  $model  $prec  (build failed: $d/build.log)"
    tail -20 "$d/build.log" | sed 's/^/    /'
    fails=$((fails + 1))
    continue
  fi
  rm -rf "$d/got"
  if [ "$prec" = fp32 ]; then
    "$prog" --input "$input=$T/$model/input.npy" --output-dir "$d/got" --compare-dir "$T/$model/expected" \
      --rtol 1e-3 --atol 1e-5 > "$d/run.log" 2>&1
    rc=$?
    ok=$([ $rc = 0 ] && echo 1 || echo 0)
    detail=$(grep -E '^  .*(PASS|FAIL)' "$d/run.log" | sed 's/^ *//' | head -3 | tr '\n' ' ')
  else
    "$prog" --input "$input=$T/$model/input.npy" --output-dir "$d/got" --compare-dir "$T/$model/expected" \
      --rtol 1e-2 --atol 1e-3 > "$d/run.log" 2>&1
    rc=$?
    ok=0
    if [ $rc = 0 ] || [ $rc = 3 ]; then
      limit=1e-2
      [ -f "$d/limit.txt" ] && limit=$(cat "$d/limit.txt")
      "$PY" "$HERE/rel_l2.py" "$d/got" "$T/$model/expected" "$limit" > "$d/rel_l2.log" 2>&1 && ok=1
    else
      echo "  (program exit $rc)" > "$d/rel_l2.log"
    fi
    detail=$(sed 's/^ *//' "$d/rel_l2.log" | head -3 | tr '\n' ' ')
  fi
  if [ "$ok" = 1 ]; then
    echo "PASS  $model  $prec  $detail"
  else
    echo "FAIL  $model  $prec  (exit $rc) $detail"
    tail -15 "$d/run.log" | sed 's/^/    /'
    fails=$((fails + 1))
  fi
  results+=("$model $prec $ok")
done

# 3. Latency.
if [ "$BENCH" -gt 0 ]; then
  echo "== latency (--bench $BENCH --warmup $WARMUP; CUDA events around each run; ms)"
  printf '| %-18s | %-9s | %10s | %10s | %10s |\n' model precision median p10 p90
  printf '|%s|%s|%s|%s|%s|\n' -------------------- ----------- ------------ ------------ ------------
  for r in "${rows[@]}"; do
    IFS=$'\t' read -r model prec dir name input <<< "$r"
    d=$T/$dir
    prog=$d/$name
    [ "$EMU" = 1 ] && prog=$d/${name}_emu
    [ -x "$prog" ] || { printf '| %-18s | %-9s | %10s | %10s | %10s |\n' "$model" "$prec" "no build" - -; continue; }
    "$prog" --input "$input=$T/$model/input.npy" --output-dir "$d/bench_out" --bench "$BENCH" --warmup "$WARMUP" \
      > "$d/bench.log" 2>&1
    line=$(grep -E '^ *median ' "$d/bench.log")
    if [ -n "$line" ]; then
      read -r _ med _ _ p10 _ _ p90 _ <<< "$line"
      printf '| %-18s | %-9s | %10s | %10s | %10s |\n' "$model" "$prec" "$med" "$p10" "$p90"
    else
      printf '| %-18s | %-9s | %10s | %10s | %10s |\n' "$model" "$prec" "error" - -
      tail -5 "$d/bench.log" | sed 's/^/    /'
      fails=$((fails + 1))
    fi
  done
fi

passed=0
for r in "${results[@]}"; do [ "${r##* }" = 1 ] && passed=$((passed + 1)); done
echo "== summary: $passed of ${#rows[@]} checks passed; $fails failure(s) in all (builds, checks, bench runs)"
[ "$fails" = 0 ]
