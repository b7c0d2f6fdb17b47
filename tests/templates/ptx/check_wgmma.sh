#!/bin/sh
# tests/templates/ptx/check_wgmma.sh NVCC PTXAS SOURCE OUT INCLUDES... — compiles SOURCE to PTX for
# sm_90a (--gpu-architecture=compute_90a: wgmma and setmaxnreg exist only there) and fails unless
# every .entry (kernel) in it issues wgmma.mma_async, loads with cp.async.bulk.tensor, waits on
# mbarriers (mbarrier.try_wait) and sets its registers with setmaxnreg, naming the kernels that do
# not; then assembles the PTX with ptxas -v for sm_90a and fails on any stack frame or spill, and on
# ptxas ignoring setmaxnreg (warning C7508). Prints each kernel's registers and shared memory.
# (template_ptx_hopper)
set -e
nvcc=$1; ptxas=$2; src=$3; out=$4; shift 4
"$nvcc" -std=c++17 --gpu-architecture=compute_90a "$@" -ptx "$src" -o "$out"
awk '
  function close_entry() {
    if (name == "") return
    if (!wg || !tma || !bar || !reg) bad = bad "\n  " name (wg ? "" : " (no wgmma.mma_async)") (tma ? "" : " (no cp.async.bulk.tensor)") (bar ? "" : " (no mbarrier.try_wait)") (reg ? "" : " (no setmaxnreg)")
  }
  /\.entry / { close_entry(); name = $0; wg = 0; tma = 0; bar = 0; reg = 0; n++ }
  /wgmma\.mma_async\.sync\.aligned/ { wg = 1 }
  /cp\.async\.bulk\.tensor/ { tma = 1 }
  /mbarrier\.try_wait/ { bar = 1 }
  /setmaxnreg/ { reg = 1 }
  END {
    close_entry()
    if (n == 0) { print "no kernels in the PTX"; exit 1 }
    if (bad != "") { print "kernels without the Hopper engine'"'"'s instructions:" bad; exit 1 }
    print n " kernels: each with wgmma.mma_async, cp.async.bulk.tensor, mbarrier.try_wait, setmaxnreg"
  }' "$out"
"$ptxas" -arch=sm_90a -v "$out" -o "$out.cubin" 2>"$out.log"
if grep -E "[1-9][0-9]* bytes (stack frame|spill)" "$out.log"; then
  echo "ptxas reports a stack frame or spills (above)"; exit 1
fi
if grep -E "C7508|setmaxnreg.*ignored" "$out.log"; then
  echo "ptxas ignored setmaxnreg (above)"; exit 1
fi
awk '/Compiling entry function/ { name = substr($(NF - 2), 2, 90) } /Used [0-9]+ registers/ { sub(/ptxas info *: /, ""); print "  " name "...: " $0 }' "$out.log"
echo "$(grep -c 'bytes stack frame' "$out.log") functions: 0 bytes stack, 0 spills"
