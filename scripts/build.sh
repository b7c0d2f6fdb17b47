#!/usr/bin/env bash
# scripts/build.sh — configures and builds modelc into build/ (JOBS=N to override -j$(nproc);
# TARGETS="modelc ..." to build only those, as scripts/demo.sh does). Extra arguments go to the CMake
# configure step, e.g. -DCMAKE_BUILD_TYPE=Debug.
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
# ccache, where installed, makes rebuilds of other checkouts (worktrees, fresh clones) cheap.
if command -v ccache >/dev/null 2>&1; then set -- -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache "$@"; fi
cmake -S . -B "$dir" "$@" >/dev/null || { echo "build.sh: cmake configure failed (rerun: cmake -S . -B $dir $*)" >&2; exit 1; }
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
