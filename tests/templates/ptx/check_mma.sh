#!/bin/sh
# tests/templates/ptx/check_mma.sh NVCC ARCH SOURCE OUT INCLUDES... — compiles SOURCE to PTX for
# ARCH (e.g. sm_75) and fails unless every .entry (kernel) in it loads fragments with ldmatrix and
# multiplies with mma.sync.aligned.m16n8k16 (sm_80 and newer; m16n8k8 on sm_75), never WMMA, naming
# the kernels that do not; the split-K reductions (SplitKReduce: no product) are exempt but counted.
# (template_ptx_tensor_core_*)
set -e
nvcc=$1; arch=$2; src=$3; out=$4; shift 4
"$nvcc" -std=c++17 -arch="$arch" "$@" -ptx "$src" -o "$out"
case "$arch" in sm_75) shape=m16n8k8 ;; *) shape=m16n8k16 ;; esac
awk -v shape="mma.sync.aligned.$shape." '
  function close_entry() {
    if (name == "") return
    if (name ~ /SplitKReduce/) { reductions++; return }
    if (!ld || !mma || wmma) bad = bad "\n  " name (ld ? "" : " (no ldmatrix)") (mma ? "" : " (no " shape ")") (wmma ? " (wmma)" : "")
  }
  /\.entry / { close_entry(); name = $0; ld = 0; mma = 0; wmma = 0; n++ }
  /ldmatrix\.sync\.aligned/ { ld = 1 }
  index($0, shape) { mma = 1 }
  /wmma\./ { wmma = 1 }
  END {
    close_entry()
    if (n == 0) { print "no kernels in the PTX"; exit 1 }
    if (bad != "") { print "kernels without ldmatrix + " shape ":" bad; exit 1 }
    print n " kernels: " n - reductions " with ldmatrix and " shape ", " reductions + 0 " split-K reductions"
  }' "$out"
