#!/usr/bin/env bash
# tests/gpu/prepare.sh [OUT] — builds the bundle that tests/gpu/run.sh runs on a GPU machine.
#
# Runs HERE (the development machine: build/modelc, /usr/bin/python3 with torch and onnx). For each
# model (tiny_cnn, tiny_mlp, tiny_transformer from models/; resnet18_64 and mobilenet_v2_64 from
# build/models, exported when missing) it writes
#   gpu_tests/MODEL/input.npy      the model's input (torch's saved input)
#   gpu_tests/MODEL/expected/      `modelc run-reference` on that input (FP32, the reference interpreter)
#   gpu_tests/MODEL/fp32/          the emitted folder (--arch $ARCH --weights-file)
#   gpu_tests/MODEL/fp16/          the same with --fp16
#   gpu_tests/MODEL/int8/          the same with --int8 --calibrate random:8 (the cache beside it), and
#                                  int8/limit.txt: 1.25 x the INT8 simulation's relative L2 error
#                                  (run-reference --int8 with that cache, on the input) + 1e-3
#   gpu_tests/manifest.tsv         model, precision, folder, program name, input name
# and packs them as OUT/gpu_tests.tar.xz (default OUT: build/gpu_bundle, ignored by git; run.sh
# unpacks it). resnet18_64 and mobilenet_v2_64 are compiled from a copy whose weights are rounded to
# bfloat16 precision (tests/gpu/round_weights.py): their FP32 + FP16 weights are otherwise ~92 MB of
# incompressible data, over the 64 MiB that travels to the GPU machine. The reference is computed on
# the same rounded copy, so the check is unchanged.
#
# The tree that travels (git's tracked and untracked files) plus OUT must stay under 64 MiB: the
# script prints both sizes and fails when they are over.
#
# Environment: MODELC (default build/modelc), MODELS_DIR (build/models), ARCH (sm_80,sm_90),
# MODELS (the space-separated list above), XZ_LEVEL (6).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/gpu_bundle}
MODELC=${MODELC:-$ROOT/build/modelc}
MODELS_DIR=${MODELS_DIR:-$ROOT/build/models}
ARCH=${ARCH:-sm_80,sm_90}
MODELS=${MODELS:-tiny_cnn tiny_mlp tiny_transformer resnet18_64 mobilenet_v2_64}
XZ_LEVEL=${XZ_LEVEL:-6}
PY=/usr/bin/python3
LIMIT=$((64 * 1024 * 1024))

[ -x "$MODELC" ] || { echo "error: $MODELC not found: build it first (make -C build modelc)" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
S=$STAGE/gpu_tests
mkdir -p "$S"

need_export=
for m in $MODELS; do
  case $m in tiny_*) ;; *) [ -f "$MODELS_DIR/$m.onnx" ] || need_export=1 ;; esac
done
if [ -n "$need_export" ]; then
  echo "== exporting resnet18_64 and mobilenet_v2_64 into $MODELS_DIR"
  "$PY" "$ROOT/models/export_torchvision.py" --out "$MODELS_DIR" --models resnet18,mobilenet_v2 --image-size 64
fi

input_name() {  # the model's one graph input that is not an initializer
  "$PY" - "$1" <<'PYEOF'
import sys, onnx
g = onnx.load(sys.argv[1], load_external_data=False).graph
inits = {i.name for i in g.initializer}
names = [i.name for i in g.input if i.name not in inits]
if len(names) != 1:
    sys.exit(f"error: {sys.argv[1]} has {len(names)} inputs; tests/gpu handles models with one")
print(names[0])
PYEOF
}

printf 'model\tprecision\tdir\tname\tinput\n' > "$S/manifest.tsv"
for m in $MODELS; do
  echo "== $m"
  case $m in
    tiny_*) src=$ROOT/models/$m.onnx; inp=$ROOT/models/$m.input.npy ;;
    *) src=$STAGE/$m.rounded.onnx; inp=$MODELS_DIR/$m.input.npy
       "$PY" "$ROOT/tests/gpu/round_weights.py" "$MODELS_DIR/$m.onnx" "$src" ;;
  esac
  mkdir -p "$S/$m"
  cp "$inp" "$S/$m/input.npy"
  name=$(input_name "$src")
  "$MODELC" run-reference "$src" --input "$name=$S/$m/input.npy" -o "$S/$m/expected" > "$S/$m/expected.log"
  for prec in fp32 fp16 int8; do
    flags=()
    [ $prec = fp16 ] && flags=(--fp16)
    [ $prec = int8 ] && flags=(--int8 --calibrate random:8)
    "$MODELC" "$src" --name "$m" -o "$S/$m/$prec" --arch "$ARCH" --weights-file "${flags[@]}" | grep '^wrote'
    if [ $prec = int8 ]; then
      # The issue's criterion: the program within 1.25x the INT8 simulation's error (same scales) + 1e-3.
      "$MODELC" run-reference "$src" --input "$name=$S/$m/input.npy" --int8 \
        --calibration-cache "$S/$m/int8/${m}_calibration.json" -o "$STAGE/sim" > "$S/$m/int8/simulation.log"
      awk '/^  [^ ].*  rel_l2 / { e = $3 } END { if (e == "") exit 1; printf "%.6g\n", 1.25 * e + 1e-3 }' \
        "$S/$m/int8/simulation.log" > "$S/$m/int8/limit.txt"
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$prec" "$m/$prec" "$m" "$name" >> "$S/manifest.tsv"
  done
  case $m in tiny_*) ;; *) rm -f "$src" ;; esac
done

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== packing $OUT/gpu_tests.tar.xz (xz -$XZ_LEVEL)"
tar -C "$STAGE" -cf - gpu_tests | xz -T2 "-$XZ_LEVEL" > "$OUT/gpu_tests.tar.xz"

bundle=$(du -cb "$OUT" | tail -1 | cut -f1)
tree=$(cd "$ROOT" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
total=$((bundle + tree))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "bundle $OUT: $(mib "$bundle"); working tree: $(mib "$tree"); together $(mib $total) of 64 MiB"
if [ "$total" -gt "$LIMIT" ]; then
  echo "error: over the 64 MiB that travels to the GPU machine" >&2
  exit 1
fi
