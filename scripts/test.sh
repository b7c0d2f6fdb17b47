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
# Tests at once (CTEST_JOBS=N overrides): one per core, as memory allows (GiB a test: $1), at least
# two, at most eight (past that the longest tests and the fixtures' chains set the time). On the
# 2-core machine the suite was written on that is two at a time; where CI has more cores the suite
# takes them (most tests run one process, a compile or verify two). In a container the cgroup's CPU
# quota and memory limit count, not the host's cores and memory that nproc and /proc/meminfo show.
ctest_jobs() {
  if [[ -n "${CTEST_JOBS:-}" ]]; then echo "$CTEST_JOBS"; return; fi
  local cores mem_kb quota period limit f j
  cores=$(nproc)
  if [[ -r /sys/fs/cgroup/cpu.max ]] && read -r quota period < /sys/fs/cgroup/cpu.max &&
     [[ "$quota" =~ ^[0-9]+$ && "$period" =~ ^[1-9][0-9]*$ ]]; then
    cores=$(( (quota + period - 1) / period < cores ? (quota + period - 1) / period : cores ))
  elif [[ -r /sys/fs/cgroup/cpu/cpu.cfs_quota_us && -r /sys/fs/cgroup/cpu/cpu.cfs_period_us ]]; then
    quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)
    period=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)
    if [[ "$quota" =~ ^[0-9]+$ && "$period" =~ ^[1-9][0-9]*$ ]]; then
      cores=$(( (quota + period - 1) / period < cores ? (quota + period - 1) / period : cores ))
    fi
  fi
  mem_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
    [[ -r "$f" ]] || continue
    limit=$(cat "$f")
    if [[ "$limit" =~ ^[0-9]+$ ]] && ((limit / 1024 < mem_kb)); then mem_kb=$((limit / 1024)); fi
  done
  j=$((mem_kb / 1048576 / $1))
  ((cores < j)) && j=$cores
  ((j > 8)) && j=8
  ((j < 2)) && j=2
  echo "$j"
}
if [[ "${1:-}" == --sanitize ]]; then
  shift
  scripts/setup.sh --sanitize
  scripts/build.sh --sanitize
  cd build-asan
  # The fuzz targets and most tests are single-threaded (the corpus takes two slots); ASan needs
  # more memory a test.
  exec ctest --output-on-failure -j "$(ctest_jobs 4)" -L sanitize "$@"
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
# Tests that share files are ordered by FIXTURES and RESOURCE_LOCK; the corpus takes two slots
# (PROCESSORS 2). A fresh build/ starts from tests/ctest_costs.txt (each test's seconds on the 2-core
# machine, 2026-11-28), so ctest starts the longest first there too and the run does not end on one
# long test started last; ctest keeps its own figures after that.
mkdir -p Testing/Temporary
[[ -f Testing/Temporary/CTestCostData.txt ]] || cp ../tests/ctest_costs.txt Testing/Temporary/CTestCostData.txt
ctest --output-on-failure -j "$(ctest_jobs 3)" "${long[@]}" "$@"
