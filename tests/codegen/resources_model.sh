#!/bin/sh
# tests/codegen/resources_model.sh MODELC MODEL DIR — a shipped model compiled with --fp16 (PRECISION) for
# sm_75 and sm_90 into one fat binary with nvcc (modelc --build, which runs modelc resources,
# keeping the PTX), then `make check-tensor-cores` (modelc resources --check): every kernel
# report.json marks tensor_core issues ldmatrix and mma.sync m16n8k* in its PTX for both archs and
# ptxas reports no stack frame and no spills for it, report.json has registers and shared memory for
# every kernel and arch, and every compiled entry point is a kernel's. ARCHS (4th argument, default
# sm_75,sm_90): the --arch list. FLAGS (5th, optional): more modelc flags, e.g. "--winograd always"
# (then report.json must put a kernel on the Winograd engine, which the check counts as tensor-core),
# "--int8 --calibrate random:2" (then report.json must have INT8 convolutions whose PTX multiplies
# .s8 operands: "mma_s8").
# PRECISION (environment, default --fp16): the precision flag, e.g. --bf16; empty for a model that
# stores 16-bit floats itself (a BF16 export).
set -eu
modelc=$1 model=$2 dir=$3 archs=${4:-sm_75,sm_90} flags=${5:-} precision=${PRECISION---fp16}
rm -rf "$dir"
# shellcheck disable=SC2086  # FLAGS and PRECISION are lists of words
KEEP_PTX=1 MODELC_WERROR=1 "$modelc" "$model" $precision --arch "$archs" $flags -o "$dir" --build -j2
grep -q '"kernels_with_resources"' "$dir/report.json" || { echo "FAILED: modelc --build left no resources in report.json"; exit 1; }
grep -q '^## Registers and shared memory' "$dir/report.md" || { echo "FAILED: report.md has no resources section"; exit 1; }
# Each of these models has convolutions or matrix products big enough for tensor cores.
grep -q '"engine": "tensor_core"' "$dir/report.json" || { echo "FAILED: no kernel on tensor cores"; exit 1; }
grep -q '"unmatched_functions": \[\]' "$dir/report.json" || { echo "FAILED: compiled entry points no kernel launches"; exit 1; }
case "$flags" in
  *"--winograd always"*) grep -q '"engine": "winograd"' "$dir/report.json" || { echo "FAILED: no kernel on Winograd"; exit 1; } ;;
  *"--int8"*) grep -q '"family": "conv_int8"' "$dir/report.json" || { echo "FAILED: no INT8 convolution"; exit 1; }
              grep -q '"mma_s8": true' "$dir/report.json" || { echo "FAILED: no mma.sync on .s8 operands in report.json"; exit 1; } ;;
esac
make -C "$dir" --no-print-directory MODELC="$modelc" check-tensor-cores
