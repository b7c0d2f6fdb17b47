#!/usr/bin/env bash
# scripts/setup.sh — installs the Debian packages modelc needs.
#
#   scripts/setup.sh              what building modelc needs (scripts/demo.sh runs this)
#   scripts/setup.sh --tests      and what its tests need: the ONNX test data, Python with onnx, Dask,
#                                 torch, torchvision and numpy, rsvg-convert (pictures rendered to
#                                 PNG), node and npm, and onnxruntime-node from npm into build/ort
#                                 (the e2e tests and `verify --ort` run models in it)
#   scripts/setup.sh --sanitize   and what the sanitizer build and the fuzz targets need (clang-14,
#                                 its ASan/UBSan/libFuzzer runtimes, llvm-symbolizer for reports);
#                                 with the tests' packages
#
# Idempotent: checks with dpkg-query first and is quiet when everything is
# there; runs apt-get update + install only for what is missing (as root, or
# through sudo). Reports whether nvcc is present; never fails for lack of it
# (the tests run the generated code on the CPU when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."

# Building modelc (the compiler) and the CPU emulation of an emitted folder (Boost.Context).
BUILD_PACKAGES=(
  cmake g++ make pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev doctest-dev nlohmann-json3-dev libboost-context-dev
  libclang-14-dev libgraphviz-dev libopenblas-dev
)
# The tests: data, the models' exporters, the PNG renderer, the Dask cluster tests (embed_dask_*),
# onnxruntime's runner.
TEST_PACKAGES=(
  libonnx-testdata
  python3-onnx python3-torch python3-torchvision python3-numpy
  python3-distributed python3-dask
  librsvg2-bin
)
SANITIZE_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14)
# onnxruntime-node ships its CPU library inside the package (--ignore-scripts: no download step).
ORT_PACKAGE=onnxruntime-node@1.30.0

die() { echo "setup.sh: error: $*" >&2; exit 1; }

PACKAGES=("${BUILD_PACKAGES[@]}")
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  --sanitize) tests=1; PACKAGES+=("${SANITIZE_PACKAGES[@]}") ;;
  *) die "unknown argument '$1' (usage: scripts/setup.sh [--tests | --sanitize])" ;;
esac
if ((tests)); then
  PACKAGES+=("${TEST_PACKAGES[@]}")
  # node and npm: Debian's, unless a node is installed already (NodeSource's bundles npm).
  command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
  command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
fi

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

if ((tests)) && [[ ! -f build/ort/node_modules/onnxruntime-node/package.json ]]; then
  echo "setup.sh: installing $ORT_PACKAGE into build/ort (npm)"
  npm install --ignore-scripts --no-audit --no-fund --silent --prefix build/ort "$ORT_PACKAGE" ||
    die "npm install $ORT_PACKAGE failed (the e2e tests and verify --ort need it; MODELC_ORT_DIR can name another copy)"
fi

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup.sh: nvcc found: /usr/local/cuda/bin/nvcc (GPU builds available)"
elif command -v nvcc >/dev/null 2>&1; then
  echo "setup.sh: nvcc found: $(command -v nvcc) (GPU builds available)"
else
  echo "setup.sh: nvcc not found: generated code can be checked with the CPU emulation only"
fi
