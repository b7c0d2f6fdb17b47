#!/usr/bin/env bash
# bench/run.sh [BUNDLE] — runs ON the GPU machine: times modelc's programs against torch, side by side.
#
# BUNDLE (default build/bench_bundle, from bench/prepare.sh) holds bench.tar.xz (unpacked into $WORK).
# Builds every folder (nvcc), times each program with --bench $RUNS --warmup $WARMUP (seeded random
# FP16 inputs; CUDA events around each run; the median), times the same op in torch
# (bench/torch_bench.py: cuBLAS matmul, cuDNN conv2d in FP16, channels_last, CUDA events, median),
# and prints a markdown table (ms, TFLOP/s, ratio modelc / torch) ready for bench/RESULTS.md.
#
# What a modelc time includes: the whole generated program's run (m.run on device buffers): for a
# Conv model, the model's NCHW input converted to the padded NHWC layout, the convolution (with its
# bias) and the output converted back to NCHW; for the MatMul, the GEMM alone. torch's conv time is the
# conv alone on channels_last tensors.
#
# Environment: WORK (/tmp/modelc_bench), RUNS (100), WARMUP (10), JOBS (nproc), PYTHON (python3),
# ONLY (a regular expression on the model names).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${1:-$HERE/../build/bench_bundle}
WORK=${WORK:-/tmp/modelc_bench}
RUNS=${RUNS:-100}
WARMUP=${WARMUP:-10}
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}
ONLY=${ONLY:-.}

if [ -f "$BUNDLE/bench.tar.xz" ]; then
  rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
  tar -C "$WORK" -xJf "$BUNDLE/bench.tar.xz" || { echo "error: cannot unpack $BUNDLE/bench.tar.xz" >&2; exit 1; }
  B=$WORK/bench
elif [ -f "$BUNDLE/manifest.tsv" ]; then
  B=$(cd "$BUNDLE" && pwd)
else
  echo "error: $BUNDLE holds neither bench.tar.xz nor a manifest.tsv (run bench/prepare.sh)" >&2
  exit 1
fi
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "== device: ${device:-unknown}; $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version) | tail -1); $(date -u '+%Y-%m-%d %H:%M UTC')"

names=$(tail -n +2 "$B/manifest.tsv" | cut -f1 | grep -E "$ONLY")
n=$(echo "$names" | wc -w)
per=$(( JOBS / 8 > 0 ? JOBS / 8 : 1 ))
echo "== building $n folders (make, 8 at a time, -j$per each)"
start=$(date +%s)
for name in $names; do echo "$B/$name"; done |
  xargs -P 8 -I{} sh -c "make -C {} -j$per > {}/build.log 2>&1; echo \$? > {}/build.rc"
echo "built in $(( $(date +%s) - start )) s"

echo "== torch (cuBLAS / cuDNN)"
"$PY" "$HERE/torch_bench.py" "$B/shapes.tsv" --runs "$RUNS" --warmup "$WARMUP" > "$B/torch.tsv" || echo "torch_bench.py failed"

echo "== modelc"
fails=0
: > "$B/modelc.tsv"
for name in $names; do
  d=$B/$name
  w=$(awk -F'\t' -v n="$name" '$1 == n { print $3 }' "$B/manifest.tsv")
  if [ "$(cat "$d/build.rc" 2>/dev/null)" != 0 ]; then
    echo "$name: build failed"; tail -10 "$d/build.log" | sed 's/^/    /'; fails=$((fails + 1)); continue
  fi
  (cd "$d" && "./$name" --weights "$B/$w" --output-dir out --bench "$RUNS" --warmup "$WARMUP") > "$d/bench.log" 2>&1
  line=$(grep -E '^ *median ' "$d/bench.log")
  if [ -z "$line" ]; then
    echo "$name: run failed"; tail -5 "$d/bench.log" | sed 's/^/    /'; fails=$((fails + 1)); continue
  fi
  read -r _ med _ _ p10 _ _ p90 _ <<< "$line"
  printf '%s\t%s\t%s\t%s\n' "$name" "$med" "$p10" "$p90" >> "$B/modelc.tsv"
done

echo
echo "Device: ${device:-unknown}. Date: $(date -u '+%Y-%m-%d'). Command: bench/run.sh (RUNS=$RUNS WARMUP=$WARMUP)."
echo "modelc: the generated program (--fp16 --io-fp16 --arch sm_90), its whole run; for a conv that is the"
echo "NCHW->NHWC input conversion + conv + bias + the NHWC->NCHW output conversion. torch: the op alone"
echo "(FP16, channels_last for conv, cudnn.benchmark). Medians of $RUNS runs after $WARMUP warm-up, CUDA events."
echo
"$PY" - "$B/shapes.tsv" "$B/modelc.tsv" "$B/torch.tsv" <<'PYEOF'
import csv, sys
shapes = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def load(p):
    try:
        return {r[0]: float(r[1]) for r in csv.reader(open(p), delimiter="\t") if len(r) >= 2}
    except OSError:
        return {}
mc, th = load(sys.argv[2]), load(sys.argv[3])
print("| op | batch | shape | modelc ms | torch ms | modelc TFLOP/s | torch TFLOP/s | modelc / torch |")
print("|---|---:|---|---:|---:|---:|---:|---:|")
for s in shapes:
    n = s["name"]
    if n not in mc and n not in th:
        continue
    f = float(s["flops"])
    if s["kind"] == "matmul":
        op, shape = "MatMul", f"{s['cin']}x{s['cout']}x{s['k']}"
    else:
        op = "Conv"
        shape = f"{s['cin']}->{s['cout']} k{s['k']} s{s['stride']} {s['h']}x{s['w']}"
    a, b = mc.get(n), th.get(n)
    fmt = lambda t: f"{t:.4f}" if t else "-"
    tf = lambda t: f"{f / t / 1e9:.1f}" if t else "-"
    ratio = f"{a / b:.2f}" if a and b else "-"
    print(f"| {op} | {s['batch']} | {shape} | {fmt(a)} | {fmt(b)} | {tf(a)} | {tf(b)} | {ratio} |")
PYEOF
[ "$fails" = 0 ]
