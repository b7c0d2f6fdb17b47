# bench/cases.sh — sourced by bench/models_prepare.sh and bench/tune_prepare.sh: the timing copy of
# one benchmark case, so the program timed and the kernels tuned are the same graph. Needs PY, ROOT
# and MODELS_DIR set (the model files exported there; bert_b32.onnx by models_prepare.sh).

# timing_copy CASE OUT.onnx: bench/timing_copy.py of the case's model at the case's batch.
timing_copy() {
  local c=$1 out=$2 batch=${1##*_b}
  case $c in
    resnet50_b1) "$PY" "$ROOT/bench/timing_copy.py" "$MODELS_DIR/resnet50.onnx" "$out" ;;
    resnet50_b*) "$PY" "$ROOT/bench/timing_copy.py" "$MODELS_DIR/resnet50.onnx" "$out" --batch "$batch" ;;
    bert_b1) "$PY" "$ROOT/bench/timing_copy.py" "$MODELS_DIR/bert.onnx" "$out" ;;
    bert_b32) "$PY" "$ROOT/bench/timing_copy.py" "$MODELS_DIR/bert_b32.onnx" "$out" ;;
    *) echo "error: unknown case $c" >&2; return 1 ;;
  esac
}
