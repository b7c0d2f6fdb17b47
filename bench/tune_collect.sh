#!/usr/bin/env bash
# bench/tune_collect.sh TIMES_DIR [CACHES_DIR] — runs HERE: each CASE.times.json bench/tune_run.sh
# wrote becomes CACHES_DIR/CASE_ARCH.tuning.json (default bench/caches; ARCH from the times file), the
# cache `modelc --tuning-cache` reads and bench/models_prepare.sh takes with TUNING_CACHES.
# Commit the caches of the GPUs measured (docs/TUNING.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIMES_DIR=${1:?usage: bench/tune_collect.sh TIMES_DIR [CACHES_DIR]}
CACHES=${2:-$ROOT/bench/caches}
MODELC=${MODELC:-$ROOT/build/modelc}
mkdir -p "$CACHES"
n=0
for f in "$TIMES_DIR"/*.times.json; do
  [ -f "$f" ] || continue
  c=$(basename "$f" .times.json)
  arch=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["arch"])' "$f")
  "$MODELC" tune --collect "$f" -o "$CACHES/${c}_${arch}.tuning.json"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "error: no CASE.times.json in $TIMES_DIR" >&2; exit 1; }
