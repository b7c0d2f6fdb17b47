#!/usr/bin/env bash
# scripts/demo.sh — sets up, builds, and runs modelc's main job on a shipped model
# (MODEL=models/tiny_mlp.onnx scripts/demo.sh for another one): inspect it, compile it to
# CUDA C++ for sm_75 and sm_90 and build the binary with nvcc (when nvcc is installed),
# build the CPU-emulation binary and run it against the reference interpreter's outputs; then
# the same with --fp16 (tensor cores), verified on the emulation.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/tiny_cnn.onnx}
NAME=$(basename "$MODEL" .onnx)
scripts/setup.sh
scripts/build.sh
set -x
./build/modelc inspect "$MODEL"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  ./build/modelc "$MODEL" --arch sm_75,sm_90 -o "out/$NAME" --build
else
  ./build/modelc "$MODEL" --arch sm_75,sm_90 -o "out/$NAME"
fi
make -C "out/$NAME" emu -j"$(nproc)"
./build/modelc run-reference "$MODEL" --input "input=models/$NAME.input.npy" -o "out/${NAME}_ref" 2>/dev/null ||
  ./build/modelc run-reference "$MODEL" -o "out/${NAME}_ref"
if nvidia-smi >/dev/null 2>&1; then BIN="out/$NAME/$NAME"; else BIN="out/$NAME/${NAME}_emu"; fi
"$BIN" --input "input=models/$NAME.input.npy" --output-dir "out/${NAME}_out" --compare-dir "out/${NAME}_ref"
# The same model in FP16: convolutions and matrix products on tensor cores (the report says which
# and why not), checked on the emulation against the FP32 reference (relative L2 <= 1e-2).
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then BUILD=--build; else BUILD=; fi
./build/modelc "$MODEL" --fp16 --arch sm_75,sm_90 -o "out/${NAME}_fp16" $BUILD
sed -n '/^## Tensor cores/,/^|---/p' "out/${NAME}_fp16/report.md"
./build/modelc verify "$MODEL" --emulate --fp16
