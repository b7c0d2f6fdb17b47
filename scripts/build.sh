#!/usr/bin/env bash
# scripts/build.sh — configures and builds modelc into build/ (JOBS=N to override -j$(nproc)).
# Extra arguments go to the CMake configure step, e.g. -DCMAKE_BUILD_TYPE=Debug.
#
#   scripts/build.sh --sanitize [ARGS...]   the ASan + UBSan tree with clang-14 (the libFuzzer
#                                            targets too) into build-asan/ (scripts/setup.sh --sanitize)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
if [[ "${1:-}" == --sanitize ]]; then
  shift
  dir=build-asan
  set -- -DMODELC_SANITIZE=ON "$@"
  export CC=clang-14 CXX=clang++-14  # read by the first configure of build-asan/
fi
cmake -S . -B "$dir" "$@" >/dev/null || { echo "build.sh: cmake configure failed (rerun: cmake -S . -B $dir $*)" >&2; exit 1; }
cmake --build "$dir" -j "${JOBS:-$(nproc)}"
