#!/usr/bin/env bash
# bench/prepare.sh [OUT] — builds the benchmark bundle that bench/run.sh times on a GPU machine.
#
# Runs HERE (build/modelc, /usr/bin/python3 with torch and onnx): bench/make_models.py writes the
# MatMul 4096^3 and resnet50's distinct Conv shapes (batch $BATCHES), each is compiled with
# `--fp16 --io-fp16 --arch $ARCH --weights-file`, weights files that are byte-identical (a shape at
# batch 1 and 32) are kept once (the manifest names the file run.sh passes with --weights), and
# everything is packed as OUT/bench.tar.xz (default OUT: build/bench_bundle, ignored by git).
# Prints the bundle's size together with the working tree and build/gpu_bundle (what one device call
# carries) and fails when that is over 64 MiB.
#
# Environment: MODELC (build/modelc), ARCH (sm_90), BATCHES (1,32), XZ_LEVEL (6).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/bench_bundle}
MODELC=${MODELC:-$ROOT/build/modelc}
ARCH=${ARCH:-sm_90}
BATCHES=${BATCHES:-1,32}
XZ_LEVEL=${XZ_LEVEL:-6}
PY=/usr/bin/python3
LIMIT=$((64 * 1024 * 1024))

[ -x "$MODELC" ] || { echo "error: $MODELC not found: build it first (make -C build modelc)" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/bench
mkdir -p "$B"
"$PY" "$ROOT/bench/make_models.py" "$STAGE/onnx" --batches "$BATCHES"
cp "$STAGE/onnx/shapes.tsv" "$B/shapes.tsv"
printf 'name\tdir\tweights\n' > "$B/manifest.tsv"
declare -A seen
for name in $(tail -n +2 "$B/shapes.tsv" | cut -f1); do
  "$MODELC" "$STAGE/onnx/$name.onnx" --name "$name" -o "$B/$name" --arch "$ARCH" --fp16 --io-fp16 --weights-file \
    > "$B/$name.compile.log"
  engines=$(grep -o '"engine": *"[a-z_]*"' "$B/$name/report.json" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  w=$B/$name/${name}_weights.bin
  rel=$name/${name}_weights.bin
  if [ -f "$w" ]; then
    h=$(sha256sum "$w" | cut -d' ' -f1)
    if [ -n "${seen[$h]:-}" ]; then
      rm "$w"
      rel=${seen[$h]}
    else
      seen[$h]=$rel
    fi
  fi
  printf '%s\t%s\t%s\n' "$name" "$name" "$rel" >> "$B/manifest.tsv"
  echo "$name: $(head -1 "$B/$name.compile.log" | sed 's/.*: //; s/;.*//') [engines:$engines] weights $rel"
done

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== packing $OUT/bench.tar.xz (xz -$XZ_LEVEL)"
tar -C "$STAGE" -cf - bench | xz -T2 "-$XZ_LEVEL" > "$OUT/bench.tar.xz"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
bundle=$(du -cb "$OUT" | tail -1 | cut -f1)
tests=0
[ -d "$ROOT/build/gpu_bundle" ] && tests=$(du -cb "$ROOT/build/gpu_bundle" | tail -1 | cut -f1)
tree=$(cd "$ROOT" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
total=$((bundle + tests + tree))
echo "bundle $OUT: $(mib "$bundle"); build/gpu_bundle: $(mib "$tests"); working tree: $(mib "$tree"); together $(mib $total) of 64 MiB"
if [ "$total" -gt "$LIMIT" ]; then
  echo "error: over the 64 MiB one device call carries (carry the two bundles in separate calls)" >&2
  exit 1
fi
