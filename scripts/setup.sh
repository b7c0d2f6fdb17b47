#!/usr/bin/env bash
# scripts/setup.sh — installs the Debian packages modelc needs to build and test.
#
#   scripts/setup.sh              what the build and its tests need
#   scripts/setup.sh --sanitize   and what the sanitizer build and the fuzz targets need (clang-14,
#                                 its ASan/UBSan/libFuzzer runtimes, llvm-symbolizer for reports)
#
# Idempotent: checks with dpkg-query first and is quiet when everything is
# there; runs apt-get update + install only for what is missing (as root, or
# through sudo). Reports whether nvcc is present; never fails for lack of it
# (the tests run the generated code on the CPU when there is no GPU).
set -euo pipefail

PACKAGES=(
  cmake g++ make
  libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev doctest-dev nlohmann-json3-dev libboost-context-dev
  libclang-14-dev
  libopenblas-dev
  libonnx-testdata
  python3-onnx python3-torch python3-torchvision python3-numpy
  python3-distributed python3-dask
)

SANITIZE_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14)

die() { echo "setup.sh: error: $*" >&2; exit 1; }

case "${1:-}" in
  "") ;;
  --sanitize) PACKAGES+=("${SANITIZE_PACKAGES[@]}") ;;
  *) die "unknown argument '$1' (usage: scripts/setup.sh [--sanitize])" ;;
esac

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian (bookworm) and derivatives only"

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  # "ii " is installed; anything else (absent, removed, half-configured) needs an install.
  [[ "$status" == ii* ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup.sh: installing missing packages: ${missing[*]}"
  command -v apt-get >/dev/null 2>&1 || die "apt-get is not available; install these packages by hand: ${missing[*]}"
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is not available; as root run: apt-get install ${missing[*]}"
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq || die "apt-get update failed"
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    die "apt-get install failed for: ${missing[*]}"
  still=()
  for p in "${missing[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)" == ii* ]] || still+=("$p")
  done
  ((${#still[@]} == 0)) || die "still missing after apt-get install: ${still[*]}"
  echo "setup.sh: all packages installed"
fi

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup.sh: nvcc found: /usr/local/cuda/bin/nvcc (GPU builds available)"
elif command -v nvcc >/dev/null 2>&1; then
  echo "setup.sh: nvcc found: $(command -v nvcc) (GPU builds available)"
else
  echo "setup.sh: nvcc not found: generated code can be checked with the CPU emulation only"
fi
