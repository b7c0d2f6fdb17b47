#!/bin/sh
# tests/install/check_install.sh BUILD SOURCE WORK CMAKE CPACK — see CMakeLists.txt beside it.
set -eu
build=$1 src=$2 work=$3 cmake=$4 cpack=$5
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# cmake --install: modelc in PREFIX/bin, its data in PREFIX/share/modelc.
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log" || fail "cmake --install (see $work/install.log)"
for f in bin/modelc share/modelc/Makefile.gen share/modelc/templates/tensor_core.cuh share/modelc/runtime_stub/runtime.h \
         share/modelc/runtime_stub/host/engine.cpp share/modelc/embed/model.py share/modelc/scripts/ort_run.js \
         share/doc/modelc/README.md share/doc/modelc/CLI.md; do
  [ -f "$work/prefix/$f" ] || fail "cmake --install did not install $f"
done
version=$(env -u MODELC_DATA_DIR "$work/prefix/bin/modelc" --version)
echo "$version" | grep -qx "data: $work/prefix/share/modelc" || fail "the installed modelc does not use its data folder: $version"

# cpack -G DEB, unpacked into a scratch root.
(cd "$build" && "$cpack" -G DEB -B "$work/package" > "$work/cpack.log" 2>&1) || fail "cpack (see $work/cpack.log)"
deb=$(ls "$work"/package/modelc_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "cpack wrote no modelc_*.deb (see $work/cpack.log)"
dpkg-deb --field "$deb" Package Version Depends > "$work/control.txt"
grep -q "^Package: modelc" "$work/control.txt" || fail "the package is not named modelc: $(cat "$work/control.txt")"
for dep in libonnx libprotobuf libgvc make g++ libboost-context-dev; do
  grep -q "$dep" "$work/control.txt" || fail "Depends lacks $dep: $(cat "$work/control.txt")"
done
dpkg -x "$deb" "$work/root" || fail "dpkg -x $deb"
modelc=$work/root/usr/bin/modelc
[ -x "$modelc" ] || fail "the package has no usr/bin/modelc"
version=$(env -u MODELC_DATA_DIR "$modelc" --version)
echo "$version" | grep -qx "data: $work/root/usr/share/modelc" || fail "the unpacked modelc does not use its data folder: $version"

# The unpacked modelc compiles a model.
env -u MODELC_DATA_DIR "$modelc" "$src/models/tiny_cnn.onnx" -o "$work/out" > "$work/compile.log" 2>&1 ||
  fail "the installed modelc failed to compile tiny_cnn: $(tail -n 5 "$work/compile.log")"
for f in tiny_cnn.cu tiny_cnn.h tiny_cnn_main.cu Makefile report.md report.svg runtime/runtime.h; do
  [ -f "$work/out/$f" ] || fail "the compiled folder lacks $f"
done
cmp -s "$work/out/runtime/runtime.h" "$src/runtime_stub/runtime.h" || fail "runtime/runtime.h differs from runtime_stub/runtime.h"
grep -q "report.svg" "$work/out/report.md" || fail "report.md does not link report.svg"
echo "PASS: cmake --install and $(basename "$deb") (dpkg -x) give a modelc that finds its data and compiles tiny_cnn"
