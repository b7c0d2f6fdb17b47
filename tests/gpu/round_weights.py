#!/usr/bin/python3
"""Writes a copy of an ONNX model whose float32 initializers are rounded to bfloat16 precision.

    /usr/bin/python3 tests/gpu/round_weights.py IN.onnx OUT.onnx

Why: the GPU bundle (tests/gpu/prepare.sh) must travel in 64 MiB, and resnet18's weights alone are
47 MB in FP32 plus 23 MB in FP16, which random mantissas make incompressible. Rounding every weight
to 8 significant bits (round to nearest even; the value stays a float32) leaves the model's structure,
shapes and value ranges as they were and makes the weights files compress to about half. The test
compares the generated program with `modelc run-reference` on this same rounded model, so the check is
as strict as on the original weights.
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def round_bf16(a):
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    finite = np.isfinite(a)
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = np.where(finite, r.view(np.float32), a).astype(np.float32)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    n = 0
    for init in model.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(round_bf16(a).reshape(a.shape), init.name))
        n += a.size
    onnx.save(model, sys.argv[2])
    print(f"{sys.argv[2]}: {n} float32 weights rounded to bfloat16 precision")


if __name__ == "__main__":
    main()
