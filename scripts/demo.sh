#!/usr/bin/env bash
# scripts/demo.sh — sets up, builds, and runs modelc's main job on a shipped model
# (MODEL=models/tiny_mlp.onnx scripts/demo.sh for another one).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/tiny_cnn.onnx}
NAME=$(basename "$MODEL" .onnx)
scripts/setup.sh
scripts/build.sh
set -x
./build/modelc inspect "$MODEL"
./build/modelc run-reference "$MODEL" -o "out/${NAME}_ref"
