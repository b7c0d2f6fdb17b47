#!/bin/sh
# tests/templates/ptx/check_mma_ptxas.sh NVCC PTXAS ARCH SOURCE OUT MMA INCLUDES... — compiles SOURCE
# to PTX for ARCH and fails unless every .entry (kernel) in it loads fragments with ldmatrix and
# issues the MMA instruction MMA (a literal prefix, e.g. mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32),
# never WMMA, naming the kernels that do not (the split-K reductions, SplitKReduce: no product, are
# exempt but counted); then assembles the PTX with ptxas -v and fails on any stack frame or spill.
# (template_ptx_tensor_core_bf16_*; check_mma.sh is the FP16 file's, by shape only.)
set -e
nvcc=$1; ptxas=$2; arch=$3; src=$4; out=$5; mma=$6; shift 6
"$nvcc" -std=c++17 -arch="$arch" "$@" -ptx "$src" -o "$out"
awk -v mma="$mma" '
  function close_entry() {
    if (name == "") return
    if (name ~ /SplitKReduce/) { reductions++; return }
    if (!ld || !found || wmma) bad = bad "\n  " name (ld ? "" : " (no ldmatrix)") (found ? "" : " (no " mma ")") (wmma ? " (wmma)" : "")
  }
  /\.entry / { close_entry(); name = $0; ld = 0; found = 0; wmma = 0; n++ }
  /ldmatrix\.sync\.aligned/ { ld = 1 }
  index($0, mma) { found = 1 }
  /wmma\./ { wmma = 1 }
  END {
    close_entry()
    if (n == 0) { print "no kernels in the PTX"; exit 1 }
    if (bad != "") { print "kernels without ldmatrix + " mma ":" bad; exit 1 }
    print n " kernels: " n - reductions " with ldmatrix and " mma ", " reductions + 0 " split-K reductions"
  }' "$out"
"$ptxas" -arch="$arch" -v "$out" -o "$out.cubin" 2>"$out.log"
if grep -E "[1-9][0-9]* bytes (stack frame|spill)" "$out.log"; then
  echo "ptxas reports a stack frame or spills (above)"; exit 1
fi
echo "$(grep -c 'bytes stack frame' "$out.log") functions: 0 bytes stack, 0 spills"
