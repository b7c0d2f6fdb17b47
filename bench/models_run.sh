#!/usr/bin/env bash
# bench/models_run.sh [BUNDLE] — runs ON the GPU machine: whole models, modelc against PyTorch.
#
# BUNDLE (default build/model_bundle, from bench/models_prepare.sh) holds models.tar.xz. For each case
# (resnet50 and the BERT-like encoder at batch 1 and 32, FP16, sm_90) it builds the emitted folder
# (nvcc), runs the program once on its seeded input and prints the relative L2 error against the
# FP32 reference interpreter's output (the timing copy's; FP16 over 100+ layers of a copy with
# repeated weights: a figure to read, not a pass mark; non-finite outputs fail), times it (--bench $RUNS: CUDA-graph replays,
# CUDA events, median), then times torch (bench/torch_models.py: eager, eager in a CUDA graph,
# torch.compile) and prints one markdown table with ratios. With NCU=1 (default) it then profiles
# one run of each batch-1 program with Nsight Compute (kernel durations only, clocks as found) and
# sets each kernel's measured time beside the cost model's estimate (bench/kernel_times.py).
# Cases compiled with a tuning cache (models_prepare.sh TUNING_CACHES) are timed too: the table then
# has their time and the ratio tuned / untuned (bench/tune_prepare.sh: the flow).
#
# Environment: WORK (/tmp/modelc_models), RUNS (200), WARMUP (20), PYTHON (python3), NCU (1),
# TORCH_COMPILE_MODE / COMPILE_BATCHES (bench/torch_models.py), ONLY (a regular expression on cases),
# LOGS (a folder that receives the ncu tables; default $WORK).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${1:-$HERE/../build/model_bundle}
WORK=${WORK:-/tmp/modelc_models}
RUNS=${RUNS:-200}
WARMUP=${WARMUP:-20}
PY=${PYTHON:-python3}
NCU=${NCU:-1}
ONLY=${ONLY:-.}
LOGS=${LOGS:-$WORK}

rm -rf "$WORK" && mkdir -p "$WORK" "$LOGS" || exit 1
tar -C "$WORK" -xJf "$BUNDLE/models.tar.xz" || { echo "error: cannot unpack $BUNDLE/models.tar.xz" >&2; exit 1; }
B=$WORK/models
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "== device: ${device:-unknown}; $(date -u '+%Y-%m-%d %H:%M UTC')"
cases=$(tail -n +2 "$B/manifest.tsv" | cut -f1 | grep -E "$ONLY")
echo "== building: $(echo $cases)"
start=$(date +%s)
for c in $cases; do echo "$B/$c"; done |
  xargs -P 4 -I{} sh -c "make -C {} -j4 > {}/build.log 2>&1; echo \$? > {}/build.rc"
echo "built in $(( $(date +%s) - start )) s"

fails=0
: > "$B/modelc.tsv"
for c in $cases; do
  d=$B/$c
  m=$(awk -F'\t' -v c="$c" '$1 == c { print $2 }' "$B/manifest.tsv")
  batch=$(awk -F'\t' -v c="$c" '$1 == c { print $3 }' "$B/manifest.tsv")
  # "modelc", or "modelc_tuned" for a case compiled with a tuning cache (models_prepare.sh TUNING_CACHES).
  variant=modelc
  [ "$(awk -F'\t' -v c="$c" '$1 == c { print $4 }' "$B/manifest.tsv")" = tuned ] && variant=modelc_tuned
  if [ "$(cat "$d/build.rc")" != 0 ]; then
    echo "$c: build failed"; tail -10 "$d/build.log"; fails=$((fails + 1)); continue
  fi
  (cd "$d" && "./$m" --seed 0 --output-dir got) > "$d/run.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { echo "$c: program exit $rc"; tail -8 "$d/run.log"; fails=$((fails + 1)); continue; }
  "$PY" - "$d/got" "$d/expected" <<'PYEOF' || fails=$((fails + 1))
import os, sys, numpy as np
bad = 0
for f in sorted(os.listdir(sys.argv[2])):
    e = np.load(os.path.join(sys.argv[2], f)).astype(np.float64)
    g = np.load(os.path.join(sys.argv[1], f)).astype(np.float64)[: e.shape[0]]
    if g.shape != e.shape or not np.isfinite(g).all():
        print(f"  {f}: shape {g.shape} vs {e.shape}, finite {np.isfinite(g).all()}: FAIL"); bad = 1; continue
    rel = np.linalg.norm(g - e) / np.linalg.norm(e)
    print(f"  {f}: relative L2 {rel:.3e} against the FP32 reference (first {e.shape[0]} of the batch)")
sys.exit(bad)
PYEOF
  (cd "$d" && "./$m" --seed 0 --output-dir bench_out --bench "$RUNS" --warmup "$WARMUP") > "$d/bench.log" 2>&1
  line=$(grep -E '^ *median ' "$d/bench.log")
  if [ -z "$line" ]; then echo "$c: bench failed"; tail -5 "$d/bench.log"; fails=$((fails + 1)); continue; fi
  read -r _ med _ _ p10 _ _ p90 _ <<< "$line"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$batch" "$variant" "$med" "$p10" "$p90" >> "$B/modelc.tsv"
  echo "$c: $variant median $med ms (p10 $p10, p90 $p90)"
done

echo "== torch"
models=$(for c in $cases; do awk -F'\t' -v c="$c" '$1 == c { print $2 }' "$B/manifest.tsv"; done | sort -u | paste -sd,)
batches=$(for c in $cases; do awk -F'\t' -v c="$c" '$1 == c { print $3 }' "$B/manifest.tsv"; done | sort -un | paste -sd,)
"$PY" "$HERE/torch_models.py" "$B/export_torchvision.py" --models "$models" --batches "$batches" \
  --runs "$RUNS" --warmup "$WARMUP" > "$B/torch.tsv" || echo "torch_models.py failed"

echo
echo "Device: ${device:-unknown}. Date: $(date -u '+%Y-%m-%d'). Command: bench/models_run.sh (RUNS=$RUNS WARMUP=$WARMUP)."
"$PY" - "$B/modelc.tsv" "$B/torch.tsv" <<'PYEOF'
import csv, sys
rows = []
for p in sys.argv[1:]:
    try:
        rows += [r for r in csv.reader(open(p), delimiter="\t") if len(r) >= 4]
    except OSError:
        pass
by = {}
for m, b, v, med, *_ in rows:
    by.setdefault((m, int(b)), {})[v] = float(med)
variants = sorted({v for d in by.values() for v in d if not v.startswith("modelc")})
tuned = any("modelc_tuned" in d for d in by.values())
print("| model | batch | modelc ms | " + ("modelc tuned ms | tuned / untuned | " if tuned else "") +
      " | ".join(f"torch {v} ms" for v in variants) + " | " + " | ".join(f"modelc / {v}" for v in variants) +
      (" | " + " | ".join(f"tuned / {v}" for v in variants) if tuned else "") + " |")
print("|---|---:|---:|" + ("---:|---:|" if tuned else "") + "---:|" * ((3 if tuned else 2) * len(variants)))
for (m, b), d in sorted(by.items()):
    mc, mt = d.get("modelc"), d.get("modelc_tuned")
    fmt = lambda v: f"{v:.4f}" if v else "-"
    cells = [fmt(d.get(v)) for v in variants]
    ratios = [f"{mc / d[v]:.2f}" if mc and v in d else "-" for v in variants]
    row = f"| {m} | {b} | {fmt(mc)} | "
    if tuned:
        row += f"{fmt(mt)} | " + (f"{mt / mc:.2f}" if mc and mt else "-") + " | "
    row += " | ".join(cells) + " | " + " | ".join(ratios)
    if tuned:
        row += " | " + " | ".join(f"{mt / d[v]:.2f}" if mt and v in d else "-" for v in variants)
    print(row + " |")
PYEOF

if [ "$NCU" = 1 ] && command -v ncu > /dev/null; then
  for c in $cases; do
    case $c in *_b1) ;; *) continue ;; esac
    d=$B/$c
    m=${c%_b*}
    [ -x "$d/$m" ] || continue
    echo "== ncu: $c (kernel durations; clocks as found)"
    (cd "$d" && timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
       --print-kernel-base function --log-file "$LOGS/$c.ncu.csv" "./$m" --seed 0 --output-dir ncu_out > ncu.log 2>&1) ||
      { echo "ncu failed"; tail -5 "$d/ncu.log"; continue; }
    "$PY" "$HERE/kernel_times.py" "$d/report.json" "$LOGS/$c.ncu.csv" > "$LOGS/$c.kernels.md" 2>&1
    tail -3 "$LOGS/$c.kernels.md"
  done
fi
[ "$fails" = 0 ]
