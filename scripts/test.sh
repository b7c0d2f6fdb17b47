#!/usr/bin/env bash
# scripts/test.sh — sets up (the tests' packages too: scripts/setup.sh --tests), builds, and runs
# every test (unit, conformance, e2e).
# Extra arguments go to ctest, e.g. scripts/test.sh -R conformance.
# Tests labelled `long` (big models, long randomized sweeps: documented commands, not CI) are left
# out; `scripts/test.sh --long [CTEST_ARGS...]` runs them too.
#
#   scripts/test.sh --sanitize [CTEST_ARGS...]   the ASan + UBSan build instead (clang-14, in
#       build-asan/; docs/TESTING.md, "Fuzzing and sanitizers") and its tests, `ctest -L sanitize`: the
#       unit tests, the fuzz regression replays and each fuzz target for MODELC_FUZZ_SECONDS (40).
#       Any sanitizer report fails the test it happens in.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --sanitize ]]; then
  shift
  scripts/setup.sh --sanitize
  scripts/build.sh --sanitize
  cd build-asan
  # Two at a time: the fuzz targets and most tests are single-threaded (the corpus takes both slots).
  exec ctest --output-on-failure -j2 -L sanitize "$@"
fi
long=(-LE long)
if [[ "${1:-}" == --long ]]; then
  shift
  long=()
fi
scripts/setup.sh --tests
scripts/build.sh
cd build
# The emulated programs the tests build link the host emulation's runtime modelc's build made
# instead of compiling runtime/host/*.cpp in every folder (Makefile.gen, MODELC_EMU_HOST_LIB); the
# tests that build a folder's libraries or its CMake project still compile them.
export MODELC_EMU_HOST_LIB="$PWD/libmodelc_host_emulation.a"
# Two at a time: tests that share files are ordered by FIXTURES and RESOURCE_LOCK; the corpus takes
# both slots (PROCESSORS 2).
ctest --output-on-failure -j2 "${long[@]}" "$@"
