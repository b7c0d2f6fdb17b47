#!/bin/sh
# tests/templates/ptx/check_mma_s8.sh NVCC ARCH SOURCE OUT INCLUDES... — compiles SOURCE to PTX for
# ARCH and fails unless every .entry (kernel) in it loads fragments with ldmatrix and multiplies 8-bit
# operands with mma.sync: .m16n8k32 (sm_80 and newer; .m8n8k16 on sm_75) with .s8 or .u8 A and .s8 B
# into .s32, never WMMA, naming the kernels that do not; the split-K reductions (SplitKReduce8: no
# product) are exempt but counted. (template_ptx_tensor_core_int8_*)
set -e
nvcc=$1; arch=$2; src=$3; out=$4; shift 4
"$nvcc" -std=c++17 -arch="$arch" "$@" -ptx "$src" -o "$out"
case "$arch" in sm_75) shape=m8n8k16 ;; *) shape=m16n8k32 ;; esac
awk -v shape="mma.sync.aligned.$shape.row.col.s32." '
  function close_entry() {
    if (name == "") return
    if (name ~ /SplitKReduce/) { reductions++; return }
    if (!ld || !mma || wmma) bad = bad "\n  " name (ld ? "" : " (no ldmatrix)") (mma ? "" : " (no " shape "{s8,u8}.s8.s32)") (wmma ? " (wmma)" : "")
  }
  /\.entry / { close_entry(); name = $0; ld = 0; mma = 0; wmma = 0; n++ }
  /ldmatrix\.sync\.aligned/ { ld = 1 }
  index($0, shape "s8.s8.s32") || index($0, shape "u8.s8.s32") { mma = 1 }
  /wmma\./ { wmma = 1 }
  END {
    close_entry()
    if (n == 0) { print "no kernels in the PTX"; exit 1 }
    if (bad != "") { print "kernels without ldmatrix + 8-bit " shape ":" bad; exit 1 }
    print n " kernels: " n - reductions " with ldmatrix and " shape "{s8,u8}.s8.s32, " reductions + 0 " split-K reductions"
  }' "$out"
