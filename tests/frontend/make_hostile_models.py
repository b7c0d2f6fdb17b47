#!/usr/bin/python3
"""tests/frontend/make_hostile_models.py OUT_DIR — the reproducers of issue 12 as .onnx files.

Writes OUT_DIR/NAME.onnx for each case below and OUT_DIR/manifest.json, which says what modelc
must do with each file (check_hostile_models.py reads it): "exit": 1 and "error", a text the
message must contain (it names the tensor, node or value at fault), or "exit": 0 for a model
that must compile (hostile names) and give a report.json that parses as JSON.

Deterministic: the same files every run (no randomness, no timestamps).
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 13


def raw_tensor(name, data_type, dims, raw):
    """A TensorProto with these dims and raw_data, whether or not they agree (helper.make_tensor checks)."""
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def int64_tensor(name, values, raw=None):
    """int64[len(values)]; `raw` replaces its raw_data (a length that does not match its dims)."""
    return raw_tensor(name, TensorProto.INT64, [len(values)],
                      np.asarray(values, dtype=np.int64).tobytes() if raw is None else raw)


def float_input(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def model(nodes, inputs, outputs, initializers=(), name="hostile"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_hostile_models")
    m.ir_version = 8
    return m


def reshape_model(shape_tensor):
    """X[2,3] -> Reshape(X, shape) -> Y, the shape an initializer."""
    return model([helper.make_node("Reshape", ["X", shape_tensor.name], ["Y"], name="reshape")],
                 [float_input("X", [2, 3])], [float_input("Y", [3, 2])], [shape_tensor])


def unsqueeze_axes():
    axes = int64_tensor("axes", [0], raw=b"\x00" * 5)
    return model([helper.make_node("Unsqueeze", ["X", "axes"], ["Y"], name="unsqueeze")],
                 [float_input("X", [2, 3])], [float_input("Y", [1, 2, 3])], [axes])


def reducesum_axes():
    axes = int64_tensor("axes", [1], raw=b"\x01" + b"\x00" * 10)
    return model([helper.make_node("ReduceSum", ["X", "axes"], ["Y"], name="reduce")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 1])], [axes])


def tile_repeats():
    repeats = int64_tensor("repeats", [2, 2], raw=b"\x02" + b"\x00" * 12)
    return model([helper.make_node("Tile", ["X", "repeats"], ["Y"], name="tile")],
                 [float_input("X", [2, 3])], [float_input("Y", [4, 6])], [repeats])


def constant_value():
    value = int64_tensor("shape_value", [3, 2], raw=b"\x03" + b"\x00" * 8)
    return model([helper.make_node("Constant", [], ["shape"], name="shape_const", value=value),
                  helper.make_node("Reshape", ["X", "shape"], ["Y"], name="reshape")],
                 [float_input("X", [2, 3])], [float_input("Y", [3, 2])])


def constant_of_shape_value():
    value = raw_tensor("fill", TensorProto.FLOAT, [1], b"\x00\x00\x80")
    shape = int64_tensor("shape", [2, 3])
    return model([helper.make_node("ConstantOfShape", ["shape"], ["C"], name="fill", value=value),
                  helper.make_node("Add", ["X", "C"], ["Y"], name="add")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3])], [shape])


def if_branch(tag, raw):
    value = int64_tensor(tag + "_value", [3, 2], raw=raw)
    return helper.make_graph(
        [helper.make_node("Constant", [], [tag + "_shape"], name=tag + "_const", value=value),
         helper.make_node("Reshape", ["X", tag + "_shape"], [tag + "_y"], name=tag + "_reshape")],
        tag, [], [float_input(tag + "_y", [3, 2])])


def if_subgraph():
    good = np.asarray([3, 2], dtype=np.int64).tobytes()
    return model([helper.make_node("If", ["cond"], ["Y"], name="branch",
                                   then_branch=if_branch("then", good),
                                   else_branch=if_branch("else", good[:13]))],
                 [float_input("X", [2, 3]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                 [float_input("Y", [3, 2])])


def sparse_constant():
    values = int64_tensor("sparse_values", [3, 2], raw=np.asarray([3, 2], np.int64).tobytes()[:11])
    indices = int64_tensor("sparse_indices", [0, 1])
    sparse = helper.make_sparse_tensor(values, indices, [2])
    return model([helper.make_node("Constant", [], ["shape"], name="sparse_const", sparse_value=sparse),
                  helper.make_node("Reshape", ["X", "shape"], ["Y"], name="reshape")],
                 [float_input("X", [2, 3])], [float_input("Y", [3, 2])])


def unused_huge_initializer():
    """float32[2^29] holding 4 bytes: must be refused without allocating 2 GB."""
    big = raw_tensor("unused_big", TensorProto.FLOAT, [1 << 29], b"\x00" * 4)
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3])], [big])


def huge_dims_initializer():
    big = raw_tensor("w_2e40", TensorProto.FLOAT, [1 << 40], b"\x00" * 4)
    return model([helper.make_node("Add", ["X", "w_2e40"], ["Y"], name="add")],
                 [float_input("X", [1])], [float_input("Y", [1 << 40])], [big])


def overflowing_dims_initializer():
    big = raw_tensor("w_overflow", TensorProto.FLOAT, [1 << 32, 1 << 32, 1 << 32], b"\x00" * 4)
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3])], [big])


def negative_dim_initializer():
    t = raw_tensor("w_negative", TensorProto.FLOAT, [2, -3], b"\x00" * 24)
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3])], [t])


def unknown_dtype_initializer():
    t = int64_tensor("shape", [3, 2])
    t.data_type = 99
    return reshape_model(t)


def two_data_fields():
    t = int64_tensor("shape", [3, 2])
    t.int64_data.extend([3, 2])
    return reshape_model(t)


def typed_field_count():
    t = raw_tensor("shape", TensorProto.INT64, [2], b"")
    t.ClearField("raw_data")
    t.int64_data.extend([3, 2, 1])  # 3 values for 2 elements
    return reshape_model(t)


def double_wrong_raw():
    t = raw_tensor("unused_double", TensorProto.DOUBLE, [3], b"\x00" * 12)
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3])], [t])


def input_dim_2e40():
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [1 << 40])], [float_input("Y", [1 << 40])])


def inferred_2e40():
    """A tensor of 2^40 elements made by a node (Expand of a scalar), not declared anywhere."""
    shape = int64_tensor("shape", [1 << 20, 1 << 20])
    return model([helper.make_node("Expand", ["X", "shape"], ["Y"], name="expand")],
                 [float_input("X", [1])], [float_input("Y", [1 << 20, 1 << 20])], [shape])


def duplicate_outputs():
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                 [float_input("X", [2, 3])], [float_input("Y", [2, 3]), float_input("Y", [2, 3])])


# Bytes that a Python str cannot hold in a protobuf string field: each marker (same length) is
# replaced in the serialized model, which keeps every length prefix right.
MARKERS = {b"QQFFQQ": b"\xffq\xfe\x80\xc3(", b"ZZ": b"\xed\xa0"}


def hostile_names():
    odd = 'a*/ b\n"c"\\d\x01QQFFQQ'  # comment end, newline, quotes, backslash, a control char, invalid UTF-8
    x = "in" + odd
    y = "out" + odd + "ZZ"
    w = "w" + odd
    nodes = [helper.make_node("Add", [x, w], ["sum" + odd], name="add" + odd),
             helper.make_node("Relu", ["sum" + odd], [y], name="relu */ QQFFQQ \\\n")]
    weight = helper.make_tensor(w, TensorProto.FLOAT, [2, 3], np.arange(6, dtype=np.float32).tobytes(), raw=True)
    return model(nodes, [float_input(x, [2, 3])], [float_input(y, [2, 3])], [weight], name="graph" + odd)


LIMIT = "has more than 2147483647 elements (2^31 - 1), modelc's limit for one tensor"

# name -> (builder, expected exit code, text the error must contain)
CASES = {
    "reshape_shape_raw7": (lambda: reshape_model(int64_tensor("shape", [3, 2], raw=b"\x03" + b"\x00" * 6)), 1,
                           "initializer 'shape' (int64[2]) needs 16 bytes of raw_data, it has 7"),
    "reshape_shape_raw24": (lambda: reshape_model(int64_tensor("shape", [3, 2], raw=b"\x03" + b"\x00" * 23)), 1,
                            "initializer 'shape' (int64[2]) needs 16 bytes of raw_data, it has 24"),
    "unsqueeze_axes_raw5": (unsqueeze_axes, 1, "initializer 'axes' (int64[1]) needs 8 bytes of raw_data, it has 5"),
    "reducesum_axes_raw11": (reducesum_axes, 1, "initializer 'axes' (int64[1]) needs 8 bytes of raw_data, it has 11"),
    "tile_repeats_raw13": (tile_repeats, 1, "initializer 'repeats' (int64[2]) needs 16 bytes of raw_data, it has 13"),
    "constant_value_raw9": (constant_value, 1,
                            "node 'shape_const' (Constant) attribute 'value' (int64[2]) needs 16 bytes of raw_data, it has 9"),
    "constant_of_shape_raw3": (constant_of_shape_value, 1,
                               "node 'fill' (ConstantOfShape) attribute 'value' (float32[1]) needs 4 bytes of raw_data, it has 3"),
    "if_branch_constant_raw13": (if_subgraph, 1,
                                 "node 'branch' (If) attribute 'else_branch': node 'else_const' (Constant) attribute "
                                 "'value' (int64[2]) needs 16 bytes of raw_data, it has 13"),
    "sparse_constant_raw11": (sparse_constant, 1,
                              "node 'sparse_const' (Constant) attribute 'sparse_value' values (int64[2]) needs 16 bytes "
                              "of raw_data, it has 11"),
    "unused_float32_2e29": (unused_huge_initializer, 1,
                            "initializer 'unused_big' (float32[536870912]) needs 2147483648 bytes of raw_data, it has 4"),
    "initializer_dim_2e40": (huge_dims_initializer, 1,
                             "initializer 'w_2e40' (float32[1099511627776]) " + LIMIT),
    "initializer_dims_overflow": (overflowing_dims_initializer, 1,
                                  "initializer 'w_overflow' (float32[4294967296x4294967296x4294967296]) " + LIMIT),
    "initializer_negative_dim": (negative_dim_initializer, 1,
                                 "initializer 'w_negative' has a negative dimension in its shape 2x-3"),
    "initializer_unknown_dtype": (unknown_dtype_initializer, 1, "initializer 'shape' has data_type 99, which is not an ONNX tensor type"),
    "initializer_two_data_fields": (two_data_fields, 1,
                                    "initializer 'shape' stores its data in both raw_data and int64_data"),
    "initializer_typed_count": (typed_field_count, 1,
                                "initializer 'shape' (int64[2]) needs 2 values in int64_data, it has 3"),
    "initializer_double_raw12": (double_wrong_raw, 1,
                                 "initializer 'unused_double' (float64[3]) needs 24 bytes of raw_data, it has 12"),
    "input_dim_2e40": (input_dim_2e40, 1, "graph input 'X' (float32[1099511627776]) " + LIMIT),
    "inferred_2e40": (inferred_2e40, 1, "node 'expand' (Expand, opset 13): output 'Y' (float32[1048576x1048576]) " + LIMIT),
    "duplicate_outputs": (duplicate_outputs, 1, "graph output 'Y' is listed twice"),
    "hostile_names": (hostile_names, 0, None),
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_hostile_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {}
    for name, (build, code, error) in CASES.items():
        data = build().SerializeToString(deterministic=True)
        for marker, raw in MARKERS.items():
            data = data.replace(marker, raw)
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
        manifest[name] = {"exit": code, "error": error}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"make_hostile_models: {len(CASES)} models in {out}")


if __name__ == "__main__":
    main()
