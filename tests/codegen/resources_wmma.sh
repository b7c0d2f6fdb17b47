#!/bin/sh
# tests/codegen/resources_wmma.sh NVCC TOOL SRC_DIR WORK_DIR — the resources tool
# (runtime_stub/tools/resources.cpp, `make resources` / `make check-tensor-cores` of an emitted
# folder) on real nvcc output of a hand-written tensor-core kernel (resources/tiny_wmma.cu, sm_75
# and sm_90 in one fat object): registers and shared memory per kernel, mma.sync found in the
# tensor-core kernel, and the check failing where it must.
set -eu
nvcc=$1 tool=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work/hdr"
cp "$src/tiny_wmma.cuh" "$work/hdr/"

# compile NAME [DEFINES]: the object, its ptxas -v lines in NAME.ptxas, its PTX in NAME.keep/.
compile() {
  mkdir -p "$work/$1.keep"
  if ! "$nvcc" -O3 -std=c++17 -gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90 \
      -Xptxas -v -keep -keep-dir "$work/$1.keep" -I"$src" ${2:-} -c "$src/tiny_wmma.cu" -o "$work/$1.o" \
      2> "$work/$1.log"; then
    cat "$work/$1.log"
    exit 1
  fi
  grep -E '^(ptxas info|    [0-9]+ bytes stack frame)' "$work/$1.log" > "$work/$1.ptxas"
}

# run NAME REPORT PTXAS PTX_DIR: the tool with --check on a copy of REPORT; output in NAME.out.
run() {
  cp "$2" "$work/$1.json"
  echo "# tiny_wmma" > "$work/$1.md"
  set +e
  "$tool" --report "$work/$1.json" --markdown "$work/$1.md" --headers "$work/hdr" --ptxas "$3" --ptx-dir "$4" \
    --check > "$work/$1.out" 2>&1
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
expect "$work/good.out" "check passed: 2 tensor-core kernels, mma.sync in each for sm_75, sm_90, no spills; 3 of 3 kernels"
# Per arch: registers / shared / stack / spills, and mma for the tensor-core kernel (k2 shares k0's
# instantiation: the same row).
grep -Eq '^\| k0 \| gemm \| tensor_core \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 mma \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 mma \|$' \
  "$work/good.md" || fail "report.md: k0's row"
grep -Eq '^\| k1 \| elementwise \|  \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 \| [0-9]+ / [0-9,]+ / [0-9,]+ / 0 \|$' \
  "$work/good.md" || fail "report.md: k1's row"
[ "$(grep '^| k0 ' "$work/good.md" | cut -d'|' -f5-)" = "$(grep '^| k2 ' "$work/good.md" | cut -d'|' -f5-)" ] ||
  fail "report.md: k2 (k0's instantiation) differs from k0"
expect "$work/good.json" '"registers": '
expect "$work/good.json" '"shared_bytes": '
expect "$work/good.json" '"unmatched_functions": []'

echo "== a SIMT kernel marked tensor_core: the check fails"
sed -e 's/"op": "Relu",/"op": "Relu", "engine": "tensor_core",/' "$src/report.json" > "$work/bad_report.json"
if run bad "$work/bad_report.json" "$work/good.ptxas" "$work/good.keep"; then fail "the check passed"; fi
expect "$work/bad.out" "k1 sm_75: no wmma.mma.sync / mma.sync in the PTX"
expect "$work/bad.out" "k1 sm_90: no wmma.mma.sync / mma.sync in the PTX"

echo "== no PTX kept: the check fails for the tensor-core kernels"
mkdir -p "$work/empty"
if run noptx "$src/report.json" "$work/good.ptxas" "$work/empty"; then fail "the check passed"; fi
expect "$work/noptx.out" "k0 sm_75: no PTX for sm_75"

echo "== an mc::tc::kernel without MMAs (and no kernel of the report): the check fails"
compile fake -DFAKE_TC_WITHOUT_MMA
if run fake "$src/report.json" "$work/fake.ptxas" "$work/fake.keep"; then fail "the check passed"; fi
expect "$work/fake.out" "unmatched: void mc::tc::kernel<mc::tc::Gemm<__half, mc::Strides<1l, 2l, 3l>, (mc::Act)0, false, 4> >"
expect "$work/fake.out" "(mc::Act)0, false, 4>::Params) sm_75: no mma.sync in its PTX"
echo "resources_wmma: all passed"
