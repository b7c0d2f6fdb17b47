#!/usr/bin/env bash
# scripts/fuzz.sh — a longer libFuzzer run of one fuzz target (docs/TESTING.md, "Fuzzing and sanitizers").
#
#   scripts/fuzz.sh TARGET [MINUTES] [LIBFUZZER_ARGS...]    TARGET: model, npy, pb, plugin, calibration or tuning;
#                                                           MINUTES: 60
#
# Builds the sanitized tree if needed (scripts/build.sh --sanitize: build-asan/), then fuzzes on one
# core. The corpus grows across runs in build-fuzz/TARGET/corpus (the seeds, regressions and, for
# model, the shipped models are read beside it). The run goes on after a finding (libFuzzer's fork
# mode): each one is saved in build-fuzz/TARGET/ (crash-*, leak-*, timeout-*, oom-*), and the script
# lists the new ones and exits 1. Keep each, once understood and fixed, as a regression file:
# tests/fuzz/regressions/TARGET/NAME (the fuzz_TARGET_regressions ctest replays them).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/fuzz.sh model|npy|pb|plugin|calibration|tuning [MINUTES] [LIBFUZZER_ARGS...]" >&2; exit 2; }
target=${1:-}
case "$target" in model) max_len=200000 ;; npy|pb) max_len=4096 ;; plugin|tuning) max_len=16384 ;; calibration) max_len=8192 ;; *) usage ;; esac
shift
minutes=60
if [[ $# -gt 0 && "$1" != -* ]]; then
  minutes=$1
  shift
fi
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || usage

scripts/setup.sh --sanitize
scripts/build.sh --sanitize >/dev/null
work=build-fuzz/$target
mkdir -p "$work/corpus"
inputs=(tests/fuzz/seeds/"$target")
[[ -d tests/fuzz/regressions/$target ]] && inputs+=(tests/fuzz/regressions/"$target")
[[ $target == model ]] && inputs+=(build-asan/fuzz/model/shipped)
before=$(find "$work" -maxdepth 1 -type f | sort)
echo "fuzz.sh: fuzz_$target for $minutes minutes; corpus $work/corpus ($(find "$work/corpus" -type f | wc -l) files)"
# Fork mode exits non-zero when it saw a finding; the findings are listed below either way.
build-asan/fuzz_"$target" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time=$((minutes * 60)) -max_len=$max_len -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$@" "$work/corpus" "${inputs[@]}" || true
new=$(comm -13 <(echo "$before") <(find "$work" -maxdepth 1 -type f | sort))
if [[ -n "$new" ]]; then
  echo "fuzz.sh: findings (replay one: build-asan/fuzz_${target}_replay FILE):"
  echo "$new"
  exit 1
fi
echo "fuzz.sh: no findings; corpus $work/corpus ($(find "$work/corpus" -type f | wc -l) files)"
