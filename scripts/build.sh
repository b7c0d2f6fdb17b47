#!/usr/bin/env bash
# scripts/build.sh — configures and builds modelc into build/ (JOBS=N to override -j$(nproc)).
# Extra arguments go to the CMake configure step, e.g. -DCMAKE_BUILD_TYPE=Debug.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build "$@" >/dev/null || { echo "build.sh: cmake configure failed (rerun: cmake -S . -B build)" >&2; exit 1; }
cmake --build build -j "${JOBS:-$(nproc)}"
