#!/usr/bin/env bash
# scripts/test.sh — sets up, builds, and runs every test (unit, conformance, e2e).
# Extra arguments go to ctest, e.g. scripts/test.sh -R conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure "$@"
