#!/bin/sh
# tests/codegen/resources_wmma.sh NVCC MODELC SRC_DIR WORK_DIR — `modelc resources` (what an emitted
# folder's `make resources` / `make check-tensor-cores` run) on real nvcc output of hand-written
# kernels (resources/tiny_wmma.cu, ldmatrix + mma.sync: sm_75 and sm_90 in one fat object), in folders laid out as an
# emitted one (report.json, report.md, build/sm_75_90/tiny_wmma.ptxas, the PTX in
# build/sm_75_90/keep/tiny_wmma/): registers and shared memory per kernel, mma.sync found in the
# tensor-core kernel, and the check failing where it must.
set -eu
nvcc=$1 modelc=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"

# compile NAME [DEFINES]: the object, its ptxas -v lines in NAME.ptxas, its PTX in NAME.keep/.
compile() {
  mkdir -p "$work/$1.keep"
  if ! "$nvcc" -O3 -std=c++17 -gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90 \
      -Xptxas -v -keep -keep-dir "$work/$1.keep" ${2:-} -c "$src/tiny_wmma.cu" -o "$work/$1.o" \
      2> "$work/$1.log"; then
    cat "$work/$1.log"
    exit 1
  fi
  grep -E '^(ptxas info|    [0-9]+ bytes stack frame)' "$work/$1.log" > "$work/$1.ptxas"
  find "$work/$1.keep" -type f ! -name '*.ptx' -delete
}

# run NAME REPORT PTXAS [PTX_DIR]: modelc resources --check on a folder of a copy of REPORT, the
# log and the PTX; its output in NAME.out.
run() {
  dir="$work/$1"
  mkdir -p "$dir/build/sm_75_90/keep/tiny_wmma"
  cp "$2" "$dir/report.json"
  echo "# tiny_wmma" > "$dir/report.md"
  cp "$3" "$dir/build/sm_75_90/tiny_wmma.ptxas"
  if [ -n "${4:-}" ]; then cp "$4"/*.ptx "$dir/build/sm_75_90/keep/tiny_wmma/"; fi
  set +e
  "$modelc" resources "$dir" --check > "$work/$1.out" 2>&1
  status=$?
  set -e
  cat "$work/$1.out"
  return $status
}

fail() {
  echo "FAILED: $*"
  exit 1
}

expect() {  # expect FILE TEXT: FILE holds TEXT
  grep -qF -- "$2" "$1" || fail "$1 lacks: $2"
}

compile good
echo "== the hand-written kernels: the check passes"
run good "$src/report.json" "$work/good.ptxas" "$work/good.keep" || fail "the check failed"
expect "$work/good.out" "check passed: 2 tensor-core kernels, ldmatrix + mma.sync in each for sm_75, sm_90, no stack, no spills; 3 of 3 kernels"
# Per arch: registers / shared / stack / spills, and mma for the tensor-core kernel (k2 launches
# k0's entry point: the same row).
md="$work/good/report.md"
grep -Eq '^\| k0 \| gemm \| tensor_core \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 mma \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 mma \|$' \
  "$md" || fail "report.md: k0's row"
grep -Eq '^\| k1 \| elementwise \|  \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 \|$' \
  "$md" || fail "report.md: k1's row"
[ "$(grep '^| k0 ' "$md" | cut -d'|' -f5-)" = "$(grep '^| k2 ' "$md" | cut -d'|' -f5-)" ] ||
  fail "report.md: k2 (k0's entry point) differs from k0"
expect "$work/good/report.json" '"registers": '
expect "$work/good/report.json" '"shared_bytes": '
expect "$work/good/report.json" '"function": "tiny_wmma_k1_sm90"'  # k1's arch variants, each one's numbers
expect "$work/good/report.json" '"unmatched_functions": []'

echo "== a SIMT kernel marked tensor_core: the check fails"
sed -e 's/"op": "Relu",/"op": "Relu", "engine": "tensor_core",/' "$src/report.json" > "$work/bad_report.json"
if run bad "$work/bad_report.json" "$work/good.ptxas" "$work/good.keep"; then fail "the check passed"; fi
expect "$work/bad.out" "k1 sm_75: no ldmatrix + mma.sync.aligned.m16n8k* in the PTX"
expect "$work/bad.out" "k1 sm_90: no ldmatrix + mma.sync.aligned.m16n8k* in the PTX"

echo "== no PTX kept: the check fails for the tensor-core kernels"
if run noptx "$src/report.json" "$work/good.ptxas"; then fail "the check passed"; fi
expect "$work/noptx.out" "k0 sm_75: no PTX for sm_75"

echo "== an entry point without MMAs that no kernel launches: the check fails"
compile fake -DFAKE_TC_WITHOUT_MMA
if run fake "$src/report.json" "$work/fake.ptxas" "$work/fake.keep"; then fail "the check passed"; fi
expect "$work/fake.out" "unmatched: tiny_wmma_k3"
expect "$work/fake.out" "tiny_wmma_k3: compiled, but no kernel of the report launches it"
echo "resources_wmma: all passed"
