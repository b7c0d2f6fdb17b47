#!/usr/bin/python3
"""bench/timing_copy.py IN.onnx OUT.onnx [--batch N] — a copy of a model for timing on the GPU machine.

What travels to the GPU machine is capped at 64 MiB a call, and resnet50's FP16 weights alone are 51 MB
of incompressible data (BERT-base's 170 MB). A timing does not depend on the weights' values, only on
their shapes (and on their not being zeros: tensor cores run faster on zeros). So every float
initializer of more than PERIOD elements is replaced by its own first PERIOD values repeated (PERIOD is
prime, so the repetition aligns with no tensor dimension): the same value distribution per tensor, and
a weights file that xz shrinks to almost nothing. Smaller initializers (biases, LayerNorm) are kept.

--batch N sets the first dimension of every graph input to N and of every graph output (the models here
take the batch as their first dimension) and drops the stored shapes of values, which ONNX's shape
inference recomputes: the same model at another batch size.

The copy is a different function from the original: GPU checks compare it with `modelc run-reference`
on the copy itself, never with the original model's outputs.
"""
import argparse
import numpy as np
import onnx
from onnx import numpy_helper

PERIOD = 4099


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--batch", type=int, default=0)
    a = ap.parse_args()
    m = onnx.load(a.src)
    g = m.graph
    for i, t in enumerate(g.initializer):
        arr = numpy_helper.to_array(t)
        if arr.dtype not in (np.float32, np.float16) or arr.size <= PERIOD:
            continue
        flat = np.resize(arr.reshape(-1)[:PERIOD], arr.size).reshape(arr.shape).astype(arr.dtype)
        g.initializer[i].CopyFrom(numpy_helper.from_array(flat, t.name))
    if a.batch:
        inits = {t.name for t in g.initializer}
        for inp in g.input:
            if inp.name not in inits:
                inp.type.tensor_type.shape.dim[0].ClearField("dim_param")
                inp.type.tensor_type.shape.dim[0].dim_value = a.batch
        del g.value_info[:]
        for o in g.output:
            o.type.tensor_type.shape.dim[0].ClearField("dim_param")
            o.type.tensor_type.shape.dim[0].dim_value = a.batch
    onnx.save(m, a.dst)


if __name__ == "__main__":
    main()
