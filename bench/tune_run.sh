#!/usr/bin/env bash
# bench/tune_run.sh [BUNDLE] — runs ON the GPU machine: every tuning folder of the bundle
# (bench/tune_prepare.sh) built with nvcc and run; each case's times.json copied to TIMES
# ($OUT/times when $OUT is set, else $WORK/times) as CASE.times.json, the drivers' tables to
# CASE.log beside them. bench/tune_collect.sh turns them into caches, here.
#
# Environment: WORK (/tmp/modelc_tune), TIMES, RUNS (50), WARMUP (10), JOBS (16: make -j per folder),
# ONLY (a regular expression on cases), EMU=1 (make run-emu: the CPU emulation, for trying the flow
# without a GPU; host times).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${1:-$HERE/../build/tune_bundle}
WORK=${WORK:-/tmp/modelc_tune}
TIMES=${TIMES:-${OUT:-$WORK}/times}
RUNS=${RUNS:-50}
WARMUP=${WARMUP:-10}
JOBS=${JOBS:-16}
ONLY=${ONLY:-.}
EMU=${EMU:-0}

rm -rf "$WORK/tune" && mkdir -p "$WORK" "$TIMES" || exit 1
tar -C "$WORK" -xJf "$BUNDLE/tune.tar.xz" || { echo "error: cannot unpack $BUNDLE/tune.tar.xz" >&2; exit 1; }
B=$WORK/tune
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "== device: ${device:-unknown}; $(date -u '+%Y-%m-%d %H:%M UTC')"
target=run
[ "$EMU" = 1 ] && target=run-emu
fails=0
for c in $(tail -n +2 "$B/manifest.tsv" | cut -f1 | grep -E "$ONLY"); do
  start=$(date +%s)
  if make -C "$B/$c" -j"$JOBS" --no-print-directory "$target" RUN_FLAGS="--runs $RUNS --warmup $WARMUP" \
       > "$TIMES/$c.log" 2>&1; then
    cp "$B/$c/times.json" "$TIMES/$c.times.json"
    echo "$c: $(grep -c '"status": "ok"' "$B/$c/times.json") candidates timed, $(grep -c '"status": "rejected"' \
      "$B/$c/times.json") rejected, in $(( $(date +%s) - start )) s"
  else
    echo "$c: FAILED (make $target; $TIMES/$c.log)"; tail -8 "$TIMES/$c.log"; fails=$((fails + 1))
  fi
done
[ "$fails" = 0 ]
