#!/usr/bin/env bash
# tests/golden/update.sh — regenerates the golden copies of emitted code (tests/golden/<model>/)
# with the modelc in build/ (scripts/build.sh first). Review the diff and say in the commit why
# the emitted code changed. The test that compares against them: ctest -R codegen_golden.
set -euo pipefail
cd "$(dirname "$0")/../.."
for m in tiny_mlp; do
  /usr/bin/python3 tests/e2e/codegen/check_codegen.py golden --modelc build/modelc --model "models/$m.onnx" \
    --golden "tests/golden/$m" --update
done
git status --short tests/golden
