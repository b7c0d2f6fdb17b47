#!/bin/sh
# tests/templates/ptx/check_vector_loads.sh NVCC PTXAS ARCH SOURCE OUT PATTERN INCLUDES... — compiles
# SOURCE to PTX for ARCH and fails unless every .entry (kernel) whose name matches the awk regex
# PATTERN (at least one must) loads from global memory with 16-byte vector loads (ld.global.v4,
# ld.global.nc.v4 or ld.global.cg.v4, or cp.async copies of 16 bytes into shared memory), naming the kernels that do
# not; then assembles the PTX with ptxas -v and fails on any stack frame or spill.
# (template_ptx_gemv, template_ptx_conv_depthwise_*)
set -e
nvcc=$1; ptxas=$2; arch=$3; src=$4; out=$5; pattern=$6; shift 6
"$nvcc" -std=c++17 -arch="$arch" "$@" -ptx "$src" -o "$out"
awk -v pattern="$pattern" '
  function close_entry() {
    if (name == "" || name !~ pattern) return
    matched++
    if (!v4) bad = bad "\n  " name
  }
  /\.entry / { close_entry(); name = $0; v4 = 0; n++ }
  /ld\.global(\.nc|\.cg)?\.v4\./ { v4 = 1 }
  /cp\.async\.c[ag]\.shared\.global.*, 16[,;]/ { v4 = 1 }
  END {
    close_entry()
    if (matched == 0) { print "no kernel of the " n " in the PTX matches " pattern; exit 1 }
    if (bad != "") { print "kernels without 16-byte global loads:" bad; exit 1 }
    print matched " of " n " kernels match " pattern ", each with 16-byte global loads"
  }' "$out"
"$ptxas" -arch="$arch" -v "$out" -o "$out.cubin" 2>"$out.log"
if grep -E "[1-9][0-9]* bytes (stack frame|spill)" "$out.log"; then
  echo "ptxas reports a stack frame or spills (above)"; exit 1
fi
echo "$(grep -c 'bytes stack frame' "$out.log") kernels: 0 bytes stack, 0 spills"
