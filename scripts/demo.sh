#!/usr/bin/env bash
# scripts/demo.sh — the first ten minutes: installs what building modelc needs (scripts/setup.sh;
# the tests' packages are scripts/test.sh's), builds the modelc command alone, and runs its two
# commands on a shipped model (MODEL=models/tiny_mlp.onnx scripts/demo.sh for another one):
#   modelc MODEL                      compile to out/NAME/ (CUDA C++ for sm_75, a Makefile, report.md
#                                     with its picture report.svg); with nvcc and a GPU, built too
#   modelc verify MODEL --emulate     build the folder's CPU emulation, run it, compare with modelc's
#                                     reference interpreter (on a GPU: the real program)
#   ... --fp16                        the same with FP16 tensor cores, judged beside modelc's FP16
#                                     simulation
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/tiny_cnn.onnx}
NAME=$(basename "$MODEL" .onnx)
scripts/setup.sh
TARGETS=modelc scripts/build.sh
if nvidia-smi >/dev/null 2>&1 && { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  WHERE=()         # verify builds with nvcc for the local GPU
  BUILD=(--build)
else
  WHERE=(--emulate)  # no GPU: the CPU emulation of the same code
  BUILD=()
fi
set -x
./build/modelc inspect "$MODEL"
./build/modelc "$MODEL" -o "out/$NAME" "${BUILD[@]}"
./build/modelc verify "$MODEL" "${WHERE[@]}"
./build/modelc verify "$MODEL" "${WHERE[@]}" --fp16
