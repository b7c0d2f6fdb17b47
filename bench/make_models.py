#!/usr/bin/python3
"""Writes the ONNX models of the GPU benchmark (bench/prepare.sh compiles them; bench/run.sh times them).

    /usr/bin/python3 bench/make_models.py OUT_DIR [--batches 1,32]

- matmul_4096.onnx: Y = MatMul(A, B), A and B both graph inputs of shape 4096x4096.
- conv_<name>_b<N>.onnx: one Conv (with bias) for each distinct convolution shape of torchvision's
  resnet50 at 224x224 (read off the model itself: in/out channels, kernel, stride, padding, input size),
  at each batch size. The weight is an initializer (as in a real model: modelc lays it out at compile
  time); its values come from a seeded generator and are multiples of 1/16 in [-0.5, 0.5), which are
  exact in FP16, non-zero and compress well (the bundle must travel in 64 MiB).
OUT_DIR/shapes.tsv lists every model: name, kind, batch, cin, cout, k, stride, pad, h, w, the output
size and the FLOPs (2 * multiply-adds), which bench/run.sh reads to time the same op in torch.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def resnet50_convs():
    """Distinct (cin, cout, k, stride, pad, h, w) of resnet50's convolutions at 224x224, in model order."""
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None).eval()
    seen, shapes = set(), []

    def hook(mod, inp, _out):
        x = inp[0]
        key = (mod.in_channels, mod.out_channels, mod.kernel_size[0], mod.stride[0], mod.padding[0],
               x.shape[2], x.shape[3])
        if key not in seen:
            seen.add(key)
            shapes.append(key)

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.zeros(1, 3, 224, 224))
    return shapes


def conv_model(name, n, cin, cout, k, s, p, h, w, seed):
    rng = np.random.default_rng(seed)
    wt = (rng.integers(-8, 8, size=(cout, cin, k, k)) / 16.0).astype(np.float32)
    wt[wt == 0] = 1.0 / 16
    bias = (rng.integers(-8, 8, size=(cout,)) / 16.0).astype(np.float32)
    ho = (h + 2 * p - k) // s + 1
    wo = (w + 2 * p - k) // s + 1
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p])
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, cin, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, cout, ho, wo])],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), ho, wo


def matmul_model(m, k, n):
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    g = helper.make_graph([node], "matmul", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k]),
                                             helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--batches", default="1,32")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    mm = matmul_model(4096, 4096, 4096)
    onnx.checker.check_model(mm)
    onnx.save(mm, os.path.join(args.out, "matmul_4096.onnx"))
    rows.append(["matmul_4096", "matmul", 1, 4096, 4096, 4096, 0, 0, 0, 0, 0, 0, 2 * 4096 ** 3])
    for i, (cin, cout, k, s, p, h, w) in enumerate(resnet50_convs()):
        for n in [int(b) for b in args.batches.split(",")]:
            name = f"conv{i:02d}_c{cin}_m{cout}_k{k}s{s}_h{h}_b{n}"
            model, ho, wo = conv_model(name, n, cin, cout, k, s, p, h, w, seed=1000 + i)
            onnx.checker.check_model(model)
            onnx.save(model, os.path.join(args.out, name + ".onnx"))
            rows.append([name, "conv", n, cin, cout, k, s, p, h, w, ho, wo, 2 * n * cout * ho * wo * cin * k * k])
    with open(os.path.join(args.out, "shapes.tsv"), "w") as f:
        f.write("name\tkind\tbatch\tcin\tcout\tk\tstride\tpad\th\tw\tho\two\tflops\n")
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")
    print(f"{args.out}: {len(rows)} models (matmul_4096 and {len(rows) - 1} convolutions)")


if __name__ == "__main__":
    main()
