#!/bin/sh
# tests/templates/ptx/check_mma.sh NVCC ARCH SOURCE OUT INCLUDES... — compiles SOURCE to PTX for
# ARCH (e.g. sm_75) and fails unless every .entry (kernel) in it contains wmma.mma.sync or
# mma.sync, naming the kernels that do not. (template_ptx_tensor_core_*)
set -e
nvcc=$1; arch=$2; src=$3; out=$4; shift 4
"$nvcc" -std=c++17 -arch="$arch" "$@" -ptx "$src" -o "$out"
awk '
  /^\.(visible )?\.?entry|\.entry / { if (name != "" && !mma) { bad = bad "\n  " name }; name = $0; mma = 0; n++ }
  /mma\.sync/ { mma = 1 }
  END {
    if (name != "" && !mma) bad = bad "\n  " name
    if (n == 0) { print "no kernels in the PTX"; exit 1 }
    if (bad != "") { print "kernels without mma.sync:" bad; exit 1 }
    print n " kernels, each with mma.sync"
  }' "$out"
