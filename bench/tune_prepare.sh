#!/usr/bin/env bash
# bench/tune_prepare.sh [OUT] — builds the tuning bundle that bench/tune_run.sh runs on a GPU
# (issue 26: tuned against untuned, docs/TUNING.md).
#
# Runs HERE (build/modelc, /usr/bin/python3 with torch and onnx). For each case of bench/models_prepare.sh
# (resnet50 and the BERT-like encoder at batch 1 and 32) it makes the same timing copy (so the kernel
# signatures are the compiled programs'), and writes its tuning folder with `modelc tune --fp16 --arch
# $ARCH --candidates $CANDIDATES` (source only: the folder builds with nvcc on the GPU). Packs them as
# OUT/tune.tar.xz (default OUT: build/tune_bundle) and prints its size.
# The flow, two GPU calls:
#   1. here: bench/tune_prepare.sh;  GPU: bench/tune_run.sh build/tune_bundle  (times into $OUT/times)
#   2. here: bench/tune_collect.sh TIMES_DIR (the caches, bench/caches/CASE_ARCH.tuning.json), then
#      TUNING_CACHES=bench/caches bench/models_prepare.sh;  GPU: bench/models_run.sh (tuned beside
#      untuned beside torch, one table)
#
# Environment: MODELC (build/modelc), MODELS_DIR (build/models), ARCH (sm_90), CANDIDATES (8),
# CASES (resnet50_b1 resnet50_b32 bert_b1 bert_b32), XZ_LEVEL (6).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/tune_bundle}
MODELC=${MODELC:-$ROOT/build/modelc}
MODELS_DIR=${MODELS_DIR:-$ROOT/build/models}
ARCH=${ARCH:-sm_90}
CANDIDATES=${CANDIDATES:-8}
CASES=${CASES:-resnet50_b1 resnet50_b32 bert_b1 bert_b32}
XZ_LEVEL=${XZ_LEVEL:-6}
PY=/usr/bin/python3
. "$ROOT/bench/cases.sh"

[ -x "$MODELC" ] || { echo "error: $MODELC not found: build it first (make -C build modelc)" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/tune
mkdir -p "$B"
printf 'case\tmodel\tbatch\n' > "$B/manifest.tsv"
for c in $CASES; do
  m=${c%_b*}; batch=${c##*_b}
  # The model bench/models_prepare.sh times (exported when missing; bert_b32 by models_prepare.sh).
  if [ "$c" = bert_b32 ]; then
    [ -f "$MODELS_DIR/bert_b32.onnx" ] ||
      { echo "error: $MODELS_DIR/bert_b32.onnx is missing: CASES=bert_b32 bench/models_prepare.sh exports it" >&2; exit 1; }
  elif [ ! -f "$MODELS_DIR/$m.onnx" ]; then
    "$PY" "$ROOT/models/export_torchvision.py" --out "$MODELS_DIR" --models "$m"
  fi
  timing_copy "$c" "$STAGE/$c.onnx"
  "$MODELC" tune "$STAGE/$c.onnx" --name "$m" --fp16 --arch "$ARCH" --candidates "$CANDIDATES" -o "$B/$c" | head -1
  printf '%s\t%s\t%s\n' "$c" "$m" "$batch" >> "$B/manifest.tsv"
  rm -f "$STAGE/$c.onnx"
done
rm -rf "$OUT"
mkdir -p "$OUT"
tar -C "$STAGE" -cf - tune | xz -T2 "-$XZ_LEVEL" > "$OUT/tune.tar.xz"
echo "bundle $OUT: $(du -b "$OUT/tune.tar.xz" | awk '{ printf "%.1f MiB", $1 / 1048576 }')"
