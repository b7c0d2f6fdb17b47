#!/usr/bin/python3
"""Writes the small seed inputs of the fuzz targets (docs/TESTING.md, "Fuzzing and sanitizers").

    /usr/bin/python3 tests/fuzz/make_seeds.py [--out DIR]

DIR (default: tests/fuzz, beside this script) gets
  seeds/model/*.onnx  one small model per op group (opset 17, a few hundred bytes each), with
                      shape tensors (Reshape, Unsqueeze, Tile, Slice, ...) as initializers and as
                      Constant nodes, data in raw_data and in the typed fields, one model with
                      external data
  external/weights.bin the external data that model reads (fuzz_model resolves external data
                      in this folder)
  seeds/pb/*.pb       serialized TensorProtos of every dtype .pb inputs may have, raw and typed
  seeds/npy/*.npy     .npy files of every supported dtype, a scalar, an empty array, a Fortran-order
                      array and a version 2.0 header
The shipped models (models/*.onnx, *.npy) are seeds too; the fuzz ctests pass that folder
directly. Everything is fixed data, so a rerun writes the same files.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def value(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def f32(name, shape, start=0.0):
    n = int(np.prod(shape))
    return numpy_helper.from_array((np.arange(n, dtype=np.float32) * 0.25 + start).reshape(shape), name)


def i64(name, vals, typed=False):
    if typed:  # int64_data instead of raw_data
        return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_seeds")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def models():
    F, I = TensorProto.FLOAT, TensorProto.INT64
    n = helper.make_node
    yield model("reshape", [n("Reshape", ["X", "shape"], ["Y"])], [value("X", F, [2, 3, 4])],
                [value("Y", F, [4, 6])], [i64("shape", [4, 6])])
    yield model("unsqueeze_reducesum",
                [n("Unsqueeze", ["X", "axes"], ["U"]), n("ReduceSum", ["U", "raxes"], ["Y"], keepdims=0)],
                [value("X", F, [3, 4])], [value("Y", F, [4])],
                [i64("axes", [0], typed=True), i64("raxes", [0, 1])])
    yield model("tile_constant",
                [n("Constant", [], ["reps"], value=helper.make_tensor("c", I, [2], [2, 1])),
                 n("Tile", ["X", "reps"], ["Y"])],
                [value("X", F, [2, 3])], [value("Y", F, [4, 3])])
    yield model("conv_relu", [n("Conv", ["X", "W", "B"], ["C"], pads=[1, 1, 1, 1], strides=[2, 2]),
                              n("Relu", ["C"], ["Y"])],
                [value("X", F, [1, 2, 5, 5])], [value("Y", F, [1, 3, 3, 3])],
                [f32("W", [3, 2, 3, 3], -1.0), f32("B", [3])])
    yield model("conv_depthwise_bn",
                [n("Conv", ["X", "W"], ["C"], group=4, pads=[1, 1, 1, 1]),
                 n("BatchNormalization", ["C", "s", "b", "m", "v"], ["N"], epsilon=1e-3),
                 n("LeakyRelu", ["N"], ["Y"], alpha=0.1)],
                [value("X", F, [1, 4, 4, 4])], [value("Y", F, [1, 4, 4, 4])],
                [f32("W", [4, 1, 3, 3]), f32("s", [4], 1.0), f32("b", [4]), f32("m", [4]), f32("v", [4], 1.0)])
    yield model("gemm", [n("Gemm", ["A", "B", "C"], ["Y"], transB=1, alpha=0.5)],
                [value("A", F, [2, 4])], [value("Y", F, [2, 3])], [f32("B", [3, 4]), f32("C", [3])])
    yield model("matmul_softmax", [n("MatMul", ["A", "B"], ["M"]), n("Softmax", ["M"], ["Y"], axis=-1)],
                [value("A", F, [2, 3, 4])], [value("Y", F, [2, 3, 5])], [f32("B", [4, 5])])
    yield model("concat_slice",
                [n("Concat", ["X", "X"], ["C"], axis=1),
                 n("Slice", ["C", "starts", "ends", "axes", "steps"], ["Y"])],
                [value("X", F, [2, 3])], [value("Y", F, [2, 2])],
                [i64("starts", [1]), i64("ends", [5]), i64("axes", [1]), i64("steps", [2])])
    yield model("gather_transpose",
                [n("Gather", ["X", "idx"], ["G"], axis=1), n("Transpose", ["G"], ["Y"], perm=[1, 0])],
                [value("X", F, [3, 4])], [value("Y", F, [2, 3])], [i64("idx", [3, -1])])
    yield model("pad_maxpool_gap",
                [n("Pad", ["X", "pads"], ["P"], mode="reflect"),
                 n("MaxPool", ["P"], ["M"], kernel_shape=[2, 2], strides=[2, 2]),
                 n("AveragePool", ["M"], ["A"], kernel_shape=[2, 2], pads=[0, 0, 1, 1], count_include_pad=1),
                 n("GlobalAveragePool", ["A"], ["Y"])],
                [value("X", F, [1, 2, 6, 6])], [value("Y", F, [1, 2, 1, 1])], [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1])])
    yield model("layernorm_gelu",
                [n("LayerNormalization", ["X", "s", "b"], ["N"], axis=-1, epsilon=1e-5),
                 n("Div", ["N", "sqrt2"], ["D"]), n("Erf", ["D"], ["E"]), n("Mul", ["N", "E"], ["Y"])],
                [value("X", F, [2, 8])], [value("Y", F, [2, 8])],
                [f32("s", [8], 1.0), f32("b", [8]), numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2")])
    yield model("resize_depth_to_space",
                [n("Resize", ["X", "", "scales"], ["R"], mode="nearest"),
                 n("DepthToSpace", ["R"], ["Y"], blocksize=2, mode="CRD")],
                [value("X", F, [1, 4, 2, 2])], [value("Y", F, [1, 1, 8, 8])],
                [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    yield model("expand_constant_of_shape",
                [n("ConstantOfShape", ["shape"], ["C"], value=helper.make_tensor("v", F, [1], [1.5])),
                 n("Expand", ["X", "shape"], ["E"]), n("Add", ["C", "E"], ["Y"])],
                [value("X", F, [1, 3])], [value("Y", F, [2, 3])], [i64("shape", [2, 3], typed=True)])
    yield model("conv_transpose", [n("ConvTranspose", ["X", "W"], ["Y"], strides=[2, 2], output_padding=[1, 1])],
                [value("X", F, [1, 2, 3, 3])], [value("Y", F, [1, 2, 8, 8])], [f32("W", [2, 2, 3, 3])])
    yield model("split_topk_argmax",
                [n("Split", ["X", "parts"], ["A", "B"], axis=1),
                 n("TopK", ["A", "k"], ["V", "Idx"], axis=1), n("ArgMax", ["B"], ["Y"], axis=1, keepdims=1)],
                [value("X", F, [2, 6])], [value("V", F, [2, 2]), value("Idx", I, [2, 2]), value("Y", I, [2, 1])],
                [i64("parts", [4, 2]), i64("k", [2])])
    yield model("where_clip_cast",
                [n("Greater", ["X", "zero"], ["G"]), n("Clip", ["X", "lo", "hi"], ["C"]),
                 n("Where", ["G", "C", "X"], ["W"]), n("Cast", ["W"], ["Y"], to=TensorProto.FLOAT16)],
                [value("X", F, [2, 3])], [value("Y", TensorProto.FLOAT16, [2, 3])],
                [numpy_helper.from_array(np.array(0, np.float32), "zero"),
                 numpy_helper.from_array(np.array(-1, np.float32), "lo"),
                 numpy_helper.from_array(np.array(2, np.float32), "hi")])
    yield model("einsum_range",
                [n("Range", ["start", "limit", "delta"], ["R"]), n("Cast", ["R"], ["Rf"], to=F),
                 n("Einsum", ["X", "Rf"], ["Y"], equation="ij,j->i")],
                [value("X", F, [2, 4])], [value("Y", F, [2])],
                [numpy_helper.from_array(np.array(0, np.int64), "start"),
                 numpy_helper.from_array(np.array(4, np.int64), "limit"),
                 numpy_helper.from_array(np.array(1, np.int64), "delta")])
    yield model("shape_squeeze_int32",
                [n("Shape", ["X"], ["S"]), n("Cast", ["S"], ["S32"], to=TensorProto.INT32),
                 n("Squeeze", ["X", "axes"], ["Q"]), n("Mul", ["Q", "two"], ["Y"])],
                [value("X", TensorProto.INT32, [1, 3])], [value("Y", TensorProto.INT32, [3]), value("S32", TensorProto.INT32, [2])],
                [i64("axes", [0]), helper.make_tensor("two", TensorProto.INT32, [], [2])])


def external_model(out_dir):
    """A Gemm whose weight lives in external/weights.bin (offset 16, 48 bytes)."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "W")
    blob = bytes(16) + w.raw_data + bytes(16)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "16"), ("length", "48")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], "external",
                          [value("X", TensorProto.FLOAT, [2, 4])], [value("Y", TensorProto.FLOAT, [2, 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_seeds")
    m.ir_version = 8
    os.makedirs(os.path.join(out_dir, "external"), exist_ok=True)
    with open(os.path.join(out_dir, "external", "weights.bin"), "wb") as f:
        f.write(blob)
    return m


def pb_tensors():
    yield numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "f32_raw")
    yield helper.make_tensor("f32_typed", TensorProto.FLOAT, [3], [1.0, -2.5, 3.25])
    yield numpy_helper.from_array(np.arange(4, dtype=np.float16), "f16_raw")
    yield helper.make_tensor("f16_typed", TensorProto.FLOAT16, [2],
                             np.array([1.0, -0.5], np.float16).view(np.uint16).tolist())
    yield helper.make_tensor("bf16_typed", TensorProto.BFLOAT16, [2], [0x3F80, 0xC000])
    yield numpy_helper.from_array(np.array([-3, 7], np.int64), "i64_raw")
    yield helper.make_tensor("i64_typed", TensorProto.INT64, [2, 1], [-1, 1 << 40])
    yield helper.make_tensor("i32_typed", TensorProto.INT32, [3], [-7, 0, 7])
    yield helper.make_tensor("i8_typed", TensorProto.INT8, [2], [-128, 127])
    yield numpy_helper.from_array(np.array([0, 255], np.uint8), "u8_raw")
    yield helper.make_tensor("bool_typed", TensorProto.BOOL, [3], [1, 0, 1])
    yield numpy_helper.from_array(np.array(2.5, np.float32), "scalar")
    yield numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty")


def npy_arrays():
    yield "f32", np.arange(6, dtype=np.float32).reshape(2, 3)
    yield "f16", np.arange(4, dtype=np.float16)
    yield "i64", np.array([[-3], [7]], np.int64)
    yield "i32", np.array([1, -2, 3], np.int32)
    yield "i8", np.array([-128, 127], np.int8)
    yield "u8", np.array([0, 255], np.uint8)
    yield "bool", np.array([True, False, True])
    yield "scalar", np.array(2.5, np.float32)
    yield "empty", np.zeros((0, 3), np.float32)
    yield "fortran", np.asfortranarray(np.arange(4, dtype=np.float32).reshape(4, 1))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=here)
    out = ap.parse_args().out
    dirs = {k: os.path.join(out, "seeds", k) for k in ("model", "pb", "npy")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    for m in models():
        onnx.save(m, os.path.join(dirs["model"], m.graph.name + ".onnx"))
    onnx.save(external_model(out), os.path.join(dirs["model"], "external.onnx"))
    for t in pb_tensors():
        with open(os.path.join(dirs["pb"], t.name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())
    for name, a in npy_arrays():
        np.save(os.path.join(dirs["npy"], name + ".npy"), a)
    # A version 2.0 header (numpy writes 2.0 only for headers over 64 KiB: forced here).
    with open(os.path.join(dirs["npy"], "v2.npy"), "wb") as f:
        np.lib.format.write_array(f, np.arange(3, dtype=np.float32), version=(2, 0))


if __name__ == "__main__":
    main()
