#!/usr/bin/env bash
# bench/models_prepare.sh [OUT] — builds the whole-model bundle that bench/models_run.sh times on a GPU.
#
# Runs HERE (build/modelc, /usr/bin/python3 with torch and onnx). For resnet50 (build/models, exported
# when missing) and the BERT-like encoder (bert, seq 128) at batch 1 and 32 it writes a timing copy
# (bench/timing_copy.py: each large weight tensor is its own first 4099 values repeated, so the bundle
# compresses to a few MB; the shapes and so the kernels are those of the real model), compiles it with
# `--fp16 --arch $ARCH --weights-file`, and computes the copy's FP32 reference output with
# `modelc run-reference --seed 0` (the program draws the same seeded input when run without --input;
# an output over 2 MB keeps its first two rows of the batch).
# BERT at batch 32 is exported here from models/export_torchvision.py's BertLikeEncoder (its ONNX
# Reshapes hold the batch, so the batch-1 file cannot be re-batched; cached as
# $MODELS_DIR/bert_b32.onnx, ~5 min the first time). Packs everything, with bench/torch_models.py's
# needs, as OUT/models.tar.xz (default OUT: build/model_bundle) and prints its size.
#
# Environment: MODELC (build/modelc), MODELS_DIR (build/models), ARCH (sm_90), XZ_LEVEL (6),
# CASES (the space-separated list: resnet50_b1 resnet50_b32 bert_b1 bert_b32), TUNING_CACHES (a folder
# of tuning caches, bench/tune_collect.sh's: a case with CASE_ARCH.tuning.json there is also compiled
# with it, as CASE_tuned, which models_run.sh times beside the untuned one).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/model_bundle}
MODELC=${MODELC:-$ROOT/build/modelc}
MODELS_DIR=${MODELS_DIR:-$ROOT/build/models}
ARCH=${ARCH:-sm_90}
XZ_LEVEL=${XZ_LEVEL:-6}
CASES=${CASES:-resnet50_b1 resnet50_b32 bert_b1 bert_b32}
PY=/usr/bin/python3
. "$ROOT/bench/cases.sh"

[ -x "$MODELC" ] || { echo "error: $MODELC not found: build it first (make -C build modelc)" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/models
mkdir -p "$B"

for m in resnet50 bert; do
  [ -f "$MODELS_DIR/$m.onnx" ] || "$PY" "$ROOT/models/export_torchvision.py" --out "$MODELS_DIR" --models $m
done
if [[ " $CASES " == *" bert_b32 "* ]] && [ ! -f "$MODELS_DIR/bert_b32.onnx" ]; then
  echo "== exporting the BERT-like encoder at batch 32 into $MODELS_DIR/bert_b32.onnx"
  "$PY" - "$ROOT/models" "$MODELS_DIR/bert_b32.onnx" <<'PYEOF'
import sys, torch
sys.path.insert(0, sys.argv[1])
import export_torchvision as ev
model, _ = ev.build("bert", 224)
x = torch.randn(32, 128, 768, generator=torch.Generator().manual_seed(ev.SEED))
with ev.plain_ops(model):
    torch.onnx.export(model, (x,), sys.argv[2] + ".tmp", opset_version=ev.OPSET, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
PYEOF
  mv "$MODELS_DIR/bert_b32.onnx.tmp" "$MODELS_DIR/bert_b32.onnx"
fi

printf 'case\tmodel\tbatch\tvariant\n' > "$B/manifest.tsv"
for c in $CASES; do
  m=${c%_b*}; batch=${c##*_b}
  timing_copy "$c" "$STAGE/$c.onnx"
  "$MODELC" "$STAGE/$c.onnx" --name "$m" -o "$B/$c" --arch "$ARCH" --fp16 --weights-file | head -1
  "$MODELC" run-reference "$STAGE/$c.onnx" --seed 0 -o "$B/$c/expected" > "$B/$c/expected.log"
  # BERT's output at batch 32 is 12 MB of incompressible floats: keep the first two sequences
  # (models_run.sh compares the program's first rows with them).
  "$PY" - "$B/$c/expected" <<'PYEOF'
import os, sys, numpy as np
for f in os.listdir(sys.argv[1]):
    p = os.path.join(sys.argv[1], f)
    a = np.load(p)
    if a.nbytes > 2 << 20 and a.shape[0] > 2:
        np.save(p, a[:2])
PYEOF
  printf '%s\t%s\t%s\tmodelc\n' "$c" "$m" "$batch" >> "$B/manifest.tsv"
  cache=${TUNING_CACHES:-}/${c}_${ARCH}.tuning.json
  if [ -n "${TUNING_CACHES:-}" ] && [ -f "$cache" ]; then
    "$MODELC" "$STAGE/$c.onnx" --name "$m" -o "$B/${c}_tuned" --arch "$ARCH" --fp16 --weights-file \
      --tuning-cache "$cache" | grep -v '^tuning cache' | head -1
    cp -r "$B/$c/expected" "$B/${c}_tuned/expected"
    printf '%s\t%s\t%s\ttuned\n' "${c}_tuned" "$m" "$batch" >> "$B/manifest.tsv"
  fi
  rm -f "$STAGE/$c.onnx"
done
cp "$ROOT/models/export_torchvision.py" "$B/"

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== packing $OUT/models.tar.xz (xz -$XZ_LEVEL)"
tar -C "$STAGE" -cf - models | xz -T2 "-$XZ_LEVEL" > "$OUT/models.tar.xz"
echo "bundle $OUT: $(du -b "$OUT/models.tar.xz" | awk '{ printf "%.1f MiB", $1 / 1048576 }')"
