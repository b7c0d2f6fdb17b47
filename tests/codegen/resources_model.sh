#!/bin/sh
# tests/codegen/resources_model.sh MODELC MODEL DIR — a shipped model compiled with --fp16 (once
# the compile command has it) for sm_75 and sm_90 into one fat binary with nvcc (modelc --build,
# keeping the PTX), then `make check-tensor-cores`: every kernel report.json marks tensor_core
# issues wmma.mma.sync / mma.sync in its PTX for both archs and ptxas reports no spills for it,
# and report.json has registers and shared memory for every kernel and arch.
set -eu
modelc=$1 model=$2 dir=$3
fp16=
if "$modelc" --help 2>&1 | grep -q -- '--fp16'; then
  fp16=--fp16
else
  echo "note: this modelc has no --fp16 yet: the model compiles in FP32 (SIMT kernels only)"
fi
rm -rf "$dir"
KEEP_PTX=1 MODELC_WERROR=1 "$modelc" "$model" $fp16 --arch sm_75,sm_90 -o "$dir" --build -j2
grep -q '"kernels_with_resources"' "$dir/report.json" || { echo "FAILED: modelc --build left no resources in report.json"; exit 1; }
grep -q '^## Registers and shared memory' "$dir/report.md" || { echo "FAILED: report.md has no resources section"; exit 1; }
make -C "$dir" --no-print-directory check-tensor-cores
