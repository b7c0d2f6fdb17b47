#!/usr/bin/python3
"""Writes the malformed-model corpus of issue 12 (hostile input) into a folder.

    make_corpus.py OUTDIR [--seed S] [--count N] [--kind KIND=N]... [--models-dir DIR]

OUTDIR must not exist, or be a corpus this script wrote before (it is then replaced). It gets:
  manifest.tsv   one line per model file after a header: file, kind, args, expect, description
                 (args: extra modelc options the file needs, e.g. --batch 1; '-' for none;
                 expect: 'refuse' where the file breaks the format itself, so that exit 0 is wrong
                 whatever modelc supports, '-' where exit 0 and exit 1 may both be right)
  *.onnx         the models (and special files named .onnx: a FIFO, symlinks)
  aux_*          what the external-data models point at: data files, symlinks (to /etc/passwd,
                 /dev/zero, a folder), a FIFO, a folder (made here: git cannot store a FIFO)

Everything is seeded: the same seed, counts and models/*.onnx give byte-identical files. Each file's
random choices are drawn from its own generator (seeded by the seed, its kind and its index), so the
count of one kind does not change the files of another.

The bases: every models/*.onnx (the shipped tiny_* models) and small models
built here with onnx.helper: a conv net; a shape-op net (Reshape, Unsqueeze, ReduceSum and Tile
whose int64 shape, axes and repeats are initializers and Constant nodes); a Constant net (value,
value_ints, value_float attributes); an If with two subgraphs; a net with a symbolic batch dim
(args --batch 1); a conv net whose weights are external data (aux_weights.bin).

The kinds (default counts in KINDS; --count N scales them to about N files in all):
  truncate             a base cut at a seeded length (and at 0, 1, half and all but one byte)
  bitflip              1 to 8 bit flips or byte changes at seeded positions, half of the positions
                       outside the tensors' raw data (where the structure is)
  proto.raw_data       a tensor's raw_data one byte or one element short or long, empty, doubled
                       (int64 shape, axes and repeats tensors and Constant values first)
  proto.data_type      a tensor's data_type changed (another type, 0, 17, 100, -1)
  proto.dims           a tensor's dims negative, 0, 2^31, 2^40, 2^63-1, products that overflow
                       int64, an unused float32[2^29] (or [2^40]) initializer holding 4 bytes
  proto.typed_count    data in a typed field (float_data, int64_data, ...) with one value too few
                       or too many, or in the wrong typed field for the type
  proto.two_fields     raw_data and a typed field both set, or data and an external location
  proto.attr_type      an attribute's type changed, its value in another field, empty, duplicated
  proto.io             graph inputs or outputs missing, duplicated or renamed; initializers
                       duplicated; node inputs or outputs removed
  proto.dangling       a node input that nothing produces
  proto.cycle          a node input taken from its own or a later node's output
  proto.unknown_op     an unknown op_type or domain, an op of a domain with no opset import
  proto.opset          opset 0, 999, -1, 2^62, none, two for one domain; ir_version 0, 999, -1
  proto.input_dims     graph input dims huge (2^31, 2^40, 2^62), negative, rank 64; elem_type
                       unknown or string; no type
  proto.names          non-UTF-8 and hostile names (\\xff, '*/', newlines, quotes, NUL, 5000
                       bytes, ...) on nodes, values, initializers, the graph, the producer
  proto.dup_output     the same output listed twice (or an output that is an input)
  external             external-data attacks: absolute paths, '..', symlinks (to /etc/passwd,
                       /dev/zero, a file beside it, a folder), a FIFO, a folder, offsets and
                       lengths past the end, overflowing, not numbers, a missing file or key
  special              the model file itself a FIFO, a symlink to /dev/zero, to /etc/passwd, to
                       the FIFO, dangling, a loop, a folder, empty

Needs /usr/bin/python3 with Debian's onnx (1.12) and numpy.
"""

import argparse
import collections
import os
import random
import shutil
import sys

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8
MANIFEST = "manifest.tsv"
# What a kind makes: the bytes, a description, the modelc options the file needs, and whether modelc
# must refuse it (exit 1) whatever it supports: the file breaks the format itself.
Made = collections.namedtuple("Made", "data description args refuse", defaults=(False,))
EXTERNAL_WEIGHTS = "aux_weights.bin"

# Defaults: 1,170 files in all.
KINDS = {
    "truncate": 140,
    "bitflip": 140,
    "proto.raw_data": 180,
    "proto.data_type": 60,
    "proto.dims": 90,
    "proto.typed_count": 50,
    "proto.two_fields": 30,
    "proto.attr_type": 60,
    "proto.io": 60,
    "proto.dangling": 30,
    "proto.cycle": 30,
    "proto.unknown_op": 30,
    "proto.opset": 30,
    "proto.input_dims": 40,
    "proto.names": 80,
    "proto.dup_output": 20,
    "external": 90,
    "special": 10,
}


# ---- the bases ----------------------------------------------------------------------------------

class Base:
    """A valid model: its bytes and the modelc options it needs."""

    def __init__(self, name, data, args="-"):
        self.name = name
        self.data = data
        self.args = args
        self._structure = None

    def model(self):
        m = onnx.ModelProto()
        m.ParseFromString(self.data)
        return m

    def structure(self):
        """Byte positions outside the tensors' raw data (where a change alters the model's
        structure rather than a weight)."""
        if self._structure is None:
            mask = np.ones(len(self.data), bool)
            for _, t in tensors(self.model()):
                at = self.data.find(t.raw_data) if len(t.raw_data) >= 16 else -1
                if at >= 0:
                    mask[at:at + len(t.raw_data)] = False
            self._structure = np.flatnonzero(mask)
        return self._structure


def serialize(m):
    return m.SerializeToString(deterministic=True)


def make_model(graph):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_corpus")
    m.ir_version = IR_VERSION
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def constant(name, array):
    return helper.make_node("Constant", [], [name], name=name + "_node", value=init(name + "_value", array))


def conv_net(rng):
    """X[1,3,8,8] -> Conv 3x3 (pads 1) -> Relu -> MaxPool 2 -> Flatten -> Gemm -> Y[1,5]."""
    f32 = np.float32
    inits = [init("W", rng.standard_normal((4, 3, 3, 3)).astype(f32)), init("B", rng.standard_normal(4).astype(f32)),
             init("Wfc", rng.standard_normal((5, 64)).astype(f32)), init("Bfc", rng.standard_normal(5).astype(f32))]
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
             helper.make_node("Gemm", ["f", "Wfc", "Bfc"], ["Y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "conv_net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 5])], inits)
    return make_model(g)


def shape_net(rng):
    """Reshape, Unsqueeze, ReduceSum and Tile whose shape, axes and repeats are int64 initializers
    or Constant nodes: X[2,3,4] -> [4,6] -> [1,4,6] -> [1,4,1] -> [2,4,3] -> Y[24] (+ bias)."""
    i64 = np.int64
    inits = [init("shape", np.array([4, 6], i64)), init("unsqueeze_axes", np.array([0], i64)),
             init("repeats", np.array([2, 1, 3], i64)), init("bias", rng.standard_normal(24).astype(np.float32))]
    nodes = [helper.make_node("Reshape", ["X", "shape"], ["r"], name="reshape"),
             helper.make_node("Unsqueeze", ["r", "unsqueeze_axes"], ["u"], name="unsqueeze"),
             constant("reduce_axes", np.array([2], i64)),
             helper.make_node("ReduceSum", ["u", "reduce_axes"], ["s"], name="reduce_sum", keepdims=1),
             helper.make_node("Tile", ["s", "repeats"], ["t"], name="tile"),
             constant("flat_shape", np.array([-1], i64)),
             helper.make_node("Reshape", ["t", "flat_shape"], ["f"], name="flatten"),
             helper.make_node("Add", ["f", "bias"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "shape_net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [24])], inits)
    return make_model(g)


def constant_net(rng):
    """Constant nodes of every attribute form: value (float, int64), value_ints, value_float."""
    nodes = [constant("offset", rng.standard_normal((2, 3)).astype(np.float32)),
             helper.make_node("Add", ["X", "offset"], ["a"], name="add"),
             helper.make_node("Constant", [], ["scale"], name="scale_node", value_float=0.5),
             helper.make_node("Mul", ["a", "scale"], ["m"], name="mul"),
             helper.make_node("Constant", [], ["to_shape"], name="shape_node", value_ints=[3, 2]),
             helper.make_node("Reshape", ["m", "to_shape"], ["Y"], name="reshape")]
    g = helper.make_graph(nodes, "constant_net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])])
    return make_model(g)


def if_net(rng):
    """If on a bool initializer; each branch adds a Constant of its own to the outer X."""
    def branch(name, op):
        nodes = [constant(name + "_c", rng.standard_normal((2, 2)).astype(np.float32)),
                 helper.make_node(op, ["X", name + "_c"], [name + "_y"], name=name + "_op")]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [2, 2])])
    nodes = [helper.make_node("If", ["cond"], ["i"], name="if", then_branch=branch("then", "Add"),
                              else_branch=branch("else", "Sub")),
             helper.make_node("Relu", ["i"], ["Y"], name="relu")]
    g = helper.make_graph(nodes, "if_net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 2])],
                          [init("cond", np.array(True))])
    return make_model(g)


def symbolic_net(rng):
    """X[N,3] -> MatMul -> Add -> Softmax -> Y[N,4]: compiled with --batch 1."""
    f32 = np.float32
    nodes = [helper.make_node("MatMul", ["X", "W"], ["mm"], name="matmul"),
             helper.make_node("Add", ["mm", "B"], ["a"], name="add"),
             helper.make_node("Softmax", ["a"], ["Y"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "symbolic_net", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])],
                          [init("W", rng.standard_normal((3, 4)).astype(f32)), init("B", rng.standard_normal(4).astype(f32))])
    return make_model(g)


def set_external(t, location, offset, length):
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key = key
        entry.value = value


def external_net(rng, outdir):
    """conv_net with every initializer in aux_weights.bin (each at a 64-byte aligned offset)."""
    m = conv_net(rng)
    blob = bytearray()
    for t in m.graph.initializer:
        blob += bytes(-len(blob) % 64)
        set_external(t, EXTERNAL_WEIGHTS, len(blob), len(t.raw_data))
        blob += t.raw_data
        t.ClearField("raw_data")
    with open(os.path.join(outdir, EXTERNAL_WEIGHTS), "wb") as f:
        f.write(blob)
    return m


def make_bases(models_dir, outdir, seed):
    bases = []
    for name in sorted(os.listdir(models_dir)):
        if name.endswith(".onnx"):
            with open(os.path.join(models_dir, name), "rb") as f:
                bases.append(Base(name, f.read()))
    if not bases:
        sys.exit(f"make_corpus.py: no .onnx file in {models_dir}")
    for name, build in (("conv_net", conv_net), ("shape_net", shape_net), ("constant_net", constant_net),
                        ("if_net", if_net), ("symbolic_net", symbolic_net)):
        m = build(np.random.default_rng([seed, len(bases)]))
        bases.append(Base(name, serialize(m), "--batch 1" if name == "symbolic_net" else "-"))
    bases.append(Base("external_net", serialize(external_net(np.random.default_rng([seed, len(bases)]), outdir))))
    return bases


# ---- walking a model ----------------------------------------------------------------------------

def graphs(g, path="graph"):
    """The graph and every subgraph in it (If/Loop/Scan bodies), with a readable path."""
    yield path, g
    for n in g.node:
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                yield from graphs(a.g, f"{path}/{n.name}.{a.name}")
            for k, sub in enumerate(a.graphs):
                yield from graphs(sub, f"{path}/{n.name}.{a.name}[{k}]")


def tensors(m):
    """(description, TensorProto) of every initializer and tensor attribute (Constant values first
    among the nodes), in the graph and its subgraphs."""
    out = []
    for path, g in graphs(m.graph):
        out += [(f"initializer '{t.name}' ({path})", t) for t in g.initializer]
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.TENSOR:
                    out.append((f"node '{n.name}' attribute '{a.name}' ({path})", a.t))
    return out


def shape_like(t):
    """An int64 tensor of shapes, axes or repeats (what libonnx's shape inference parses)."""
    return t.data_type == TensorProto.INT64


def all_nodes(m):
    return [(path, n) for path, g in graphs(m.graph) for n in g.node]


def pick(rng, items):
    return items[rng.randrange(len(items))]


# ---- the kinds ----------------------------------------------------------------------------------
# Each takes (ctx, rng, index) and returns a Made (data None: special made the file itself).

class Context:
    def __init__(self, outdir, bases):
        self.outdir = outdir
        self.bases = bases

    def base(self, index):
        return self.bases[index % len(self.bases)]

    def proto_bases(self, want):
        """Bases that have what a mutation needs (want(model) true)."""
        return [b for b in self.bases if want(b.model())]


def truncate(ctx, rng, index):
    b = ctx.base(index)
    n = len(b.data)
    fixed = [0, 1, n // 2, n - 1]
    turn = index // len(ctx.bases)
    cut = fixed[turn] if turn < len(fixed) else rng.randrange(1, n)
    return Made(b.data[:cut], f"{b.name} truncated to {cut} of {n} bytes", b.args)


def bitflip(ctx, rng, index):
    b = ctx.base(index)
    data = bytearray(b.data)
    structure = b.structure()
    changes = []
    for _ in range(rng.randint(1, 8)):
        if len(structure) and rng.random() < 0.5:
            pos = int(structure[rng.randrange(len(structure))])
        else:
            pos = rng.randrange(len(data))
        how = rng.randrange(4)
        if how == 0:
            bit = rng.randrange(8)
            data[pos] ^= 1 << bit
            changes.append(f"bit {bit} of byte {pos}")
        else:
            value = (rng.randrange(256), 0x00, 0xFF)[how - 1]
            data[pos] = value
            changes.append(f"byte {pos} = 0x{value:02x}")
    return Made(bytes(data), f"{b.name}: " + ", ".join(changes), b.args)


def mutate_tensor(ctx, rng, index, want_tensor, mutation):
    """Picks a base with a tensor that want_tensor accepts (int64 shape tensors first, for the kinds
    that parse data), applies mutation(rng, t) -> (text, refuse), and serializes."""
    bases = ctx.proto_bases(lambda m: any(want_tensor(t) for _, t in tensors(m)))
    b = bases[index % len(bases)]
    m = b.model()
    candidates = [(d, t) for d, t in tensors(m) if want_tensor(t)]
    shaped = [(d, t) for d, t in candidates if shape_like(t)]
    where, t = pick(rng, shaped if shaped and rng.random() < 0.7 else candidates)
    what, refuse = mutation(rng, t)
    return Made(serialize(m), f"{b.name}: {where}: {what}", b.args, refuse)


def to_raw(t):
    """Moves a tensor's typed-field data into raw_data (the mutations work on bytes)."""
    if t.raw_data or t.data_location == TensorProto.EXTERNAL:
        return
    a = numpy_helper.to_array(t)
    t.raw_data = a.tobytes()
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        t.ClearField(field)


def element_size(t):
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]).itemsize


def is_plain(t):
    """A numeric tensor held in the model (not external, not strings)."""
    return t.data_location != TensorProto.EXTERNAL and t.data_type not in (TensorProto.STRING, TensorProto.UNDEFINED)


def raw_data(ctx, rng, index):
    def mutation(rng, t):
        to_raw(t)
        n, size = len(t.raw_data), element_size(t)
        new = pick(rng, [n - 1, n + 1, n - size, n + size, 0, 2 * n, 1, 3, size // 2 if size > 1 else 2])
        new = max(new, 0)
        t.raw_data = (t.raw_data * 3)[:new] if new > n else t.raw_data[:new]
        return f"raw_data {new} bytes where {t.data_type} x {list(t.dims)} needs {n}", new != n
    return mutate_tensor(ctx, rng, index, is_plain, mutation)


def data_type(ctx, rng, index):
    def mutation(rng, t):
        old = t.data_type
        t.data_type = pick(rng, [v for v in list(range(0, 17)) + [17, 100, -1, 2**31 - 1] if v != old])
        return f"data_type {old} -> {t.data_type}", False
    return mutate_tensor(ctx, rng, index, is_plain, mutation)


DIM_VALUES = [-1, -(2**63), 0, 2**31, 2**31 - 1, 2**32, 2**40, 2**62, 2**63 - 1]
OVERFLOWING_DIMS = [[2**32, 2**32], [2**21, 2**21, 2**21], [2**31, 2**31, 2**31], [2**62, 4], [-1, -1],
                    [2**63 - 1, 2**63 - 1], [3, 2**62]]


def dims(ctx, rng, index):
    if index % 10 == 0:
        # The reproducer: an unused float32[2^29] initializer holding 4 bytes.
        b = ctx.base(index // 10)
        m = b.model()
        big = m.graph.initializer.add()
        big.name = "unused_big"
        big.data_type = TensorProto.FLOAT
        size = pick(rng, [2**29, 2**40, 2**31 // 4 + 1])
        big.dims.append(size)
        big.raw_data = bytes(4)
        return Made(serialize(m), f"{b.name} + an unused float32[{size}] initializer holding 4 bytes", b.args, True)

    def mutation(rng, t):
        old, count = list(t.dims), count_of(t)
        how = rng.randrange(4)
        if how == 0 and t.dims:
            k = rng.randrange(len(t.dims))
            t.dims[k] = pick(rng, DIM_VALUES)
        elif how == 1:
            del t.dims[:]
            t.dims.extend(pick(rng, OVERFLOWING_DIMS))
        elif how == 2:
            t.dims.append(pick(rng, [0, 2**31, 2**40, -1]))
        else:
            del t.dims[:]  # a scalar holding every element
        return f"dims {old} -> {list(t.dims)}", count_of(t) != count
    return mutate_tensor(ctx, rng, index, is_plain, mutation)


TYPED_FIELDS = ["float_data", "int32_data", "int64_data", "double_data", "uint64_data"]


def typed_field_of(t):
    if t.data_type in (TensorProto.FLOAT, TensorProto.COMPLEX64):
        return "float_data"
    if t.data_type in (TensorProto.INT64,):
        return "int64_data"
    if t.data_type in (TensorProto.DOUBLE, TensorProto.COMPLEX128):
        return "double_data"
    if t.data_type in (TensorProto.UINT32, TensorProto.UINT64):
        return "uint64_data"
    return "int32_data"


def fill_typed(t, field, count, rng):
    values = getattr(t, field)
    del values[:]
    if field in ("float_data", "double_data"):
        values.extend(float(rng.uniform(-4, 4)) for _ in range(count))
    else:
        values.extend(rng.randrange(0, 100) for _ in range(count))


def count_of(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def typed_count(ctx, rng, index):
    def mutation(rng, t):
        n = count_of(t)
        t.ClearField("raw_data")
        if rng.random() < 0.7:
            field = typed_field_of(t)
            count = pick(rng, [n - 1, n + 1, 0, 2 * n + 1]) if n else 1
            what = f"{field} with {max(count, 0)} values where {n} are needed"
        else:
            field = pick(rng, [f for f in TYPED_FIELDS if f != typed_field_of(t)] + ["string_data"])
            count = n
            what = f"{n} values in {field}, the wrong field for data_type {t.data_type}"
        if field == "string_data":
            t.string_data.extend(b"s" for _ in range(max(count, 0)))
        else:
            fill_typed(t, field, max(count, 0), rng)
        return what, True
    return mutate_tensor(ctx, rng, index, lambda t: is_plain(t) and count_of(t) < 4096, mutation)


def two_fields(ctx, rng, index):
    def mutation(rng, t):
        to_raw(t)
        if rng.random() < 0.7:
            field = pick(rng, [typed_field_of(t), "string_data"])
            if field == "string_data":
                t.string_data.append(b"x")
            else:
                fill_typed(t, field, count_of(t), rng)
            return f"raw_data and {field} both set", True
        set_external(t, EXTERNAL_WEIGHTS, 0, len(t.raw_data))
        return "raw_data and an external location both set", True
    return mutate_tensor(ctx, rng, index, lambda t: is_plain(t) and count_of(t) < 4096, mutation)


ATTR_FIELDS = {AttributeProto.FLOAT: "f", AttributeProto.INT: "i", AttributeProto.STRING: "s",
               AttributeProto.TENSOR: "t", AttributeProto.GRAPH: "g", AttributeProto.FLOATS: "floats",
               AttributeProto.INTS: "ints", AttributeProto.STRINGS: "strings"}
# Attributes given to nodes that have none of their own (wrong type for what the op reads).
FOREIGN_ATTRS = [("axis", AttributeProto.STRING), ("perm", AttributeProto.FLOATS), ("strides", AttributeProto.STRING),
                 ("kernel_shape", AttributeProto.FLOAT), ("pads", AttributeProto.INTS), ("keepdims", AttributeProto.TENSOR),
                 ("allowzero", AttributeProto.FLOAT), ("value", AttributeProto.INT)]


def set_attr_value(a, rng):
    """Fills the field that a.type names with something."""
    t = a.type
    if t == AttributeProto.FLOAT:
        a.f = rng.uniform(-2, 2)
    elif t == AttributeProto.INT:
        a.i = pick(rng, [-1, 0, 3, 2**62, -(2**63)])
    elif t == AttributeProto.STRING:
        a.s = pick(rng, [b"", b"NOTSET", b"\xff\xfe", b"x" * 300])
    elif t == AttributeProto.TENSOR:
        a.t.CopyFrom(numpy_helper.from_array(np.array([1, 2], np.int64), "attr_tensor"))
    elif t == AttributeProto.FLOATS:
        a.floats.extend([1.5, -2.0])
    elif t == AttributeProto.INTS:
        a.ints.extend(pick(rng, [[], [1], [1, 2, 3, 4, 5, 6, 7, 8, 9], [-5, 2**40], [0, 0]]))
    elif t == AttributeProto.STRINGS:
        a.strings.extend([b"a", b"\xff"])


def attr_type(ctx, rng, index):
    bases = ctx.proto_bases(lambda m: any(n.attribute for _, n in all_nodes(m)))
    b = bases[index % len(bases)]
    m = b.model()
    how = rng.randrange(5)
    if how == 4:
        path, n = pick(rng, all_nodes(m))
        name, type_ = pick(rng, FOREIGN_ATTRS)
        a = n.attribute.add()
        a.name, a.type = name, type_
        set_attr_value(a, rng)
        return Made(serialize(m), f"{b.name}: node '{n.name}' ({n.op_type}, {path}) given '{name}' of type {type_}", b.args)
    path, n = pick(rng, [(p, n) for p, n in all_nodes(m) if n.attribute])
    a = pick(rng, list(n.attribute))
    old = a.type
    where = f"{b.name}: node '{n.name}' ({n.op_type}, {path}) attribute '{a.name}'"
    if how == 0:
        a.type = pick(rng, [v for v in list(range(0, 15)) + [99, -1] if v != old])
        return Made(serialize(m), f"{where}: type {old} -> {a.type}, value left in its field", b.args)
    if how == 1:
        field = ATTR_FIELDS.get(old)
        if field:
            a.ClearField(field)
        a.type = pick(rng, [v for v in ATTR_FIELDS if v != old])
        set_attr_value(a, rng)
        return Made(serialize(m), f"{where}: type {old} -> {a.type} with a value of that type", b.args)
    if how == 2:
        field = ATTR_FIELDS.get(old)
        if field:
            a.ClearField(field)
        return Made(serialize(m), f"{where}: value removed (type {old} kept)", b.args)
    dup = n.attribute.add()
    dup.CopyFrom(a)
    dup.type = pick(rng, list(ATTR_FIELDS))
    set_attr_value(dup, rng)
    return Made(serialize(m), f"{where}: given twice (second of type {dup.type})", b.args)


def rename_everywhere(m, old, new):
    """Renames a value in every graph: inputs, outputs, initializers, node inputs and outputs."""
    for _, g in graphs(m.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.name == old:
                vi.name = new
        for t in g.initializer:
            if t.name == old:
                t.name = new
        for n in g.node:
            for k, v in enumerate(n.input):
                if v == old:
                    n.input[k] = new
            for k, v in enumerate(n.output):
                if v == old:
                    n.output[k] = new


def io(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    g = m.graph
    ops = ["drop input", "duplicate input", "rename input", "drop outputs", "rename output",
           "duplicate initializer", "initializer as input with another shape", "node without inputs",
           "node without outputs", "two producers", "output of no node"]
    how = ops[(index // len(ctx.bases)) % len(ops)] if index < len(ops) * len(ctx.bases) else pick(rng, ops)
    if how == "drop input" and g.input:
        k = rng.randrange(len(g.input))
        what = f"graph input '{g.input[k].name}' removed"
        del g.input[k]
    elif how == "duplicate input" and g.input:
        g.input.add().CopyFrom(pick(rng, list(g.input)))
        what = f"graph input '{g.input[-1].name}' listed twice"
    elif how == "rename input" and g.input:
        vi = pick(rng, list(g.input))
        what = f"graph input '{vi.name}' renamed (its users now dangle)"
        vi.name += "_renamed"
    elif how == "drop outputs":
        del g.output[:]
        what = "every graph output removed"
    elif how == "rename output" and g.output:
        vi = pick(rng, list(g.output))
        what = f"graph output '{vi.name}' renamed to a value nothing produces"
        vi.name += "_nowhere"
    elif how == "duplicate initializer" and g.initializer:
        t = g.initializer.add()
        t.CopyFrom(pick(rng, list(g.initializer)))
        what = f"initializer '{t.name}' given twice"
    elif how == "initializer as input with another shape" and g.initializer:
        t = pick(rng, list(g.initializer))
        g.input.append(helper.make_tensor_value_info(t.name, t.data_type, [d + 1 for d in t.dims] or [2]))
        what = f"initializer '{t.name}' also a graph input of another shape"
    elif how == "node without inputs":
        n = pick(rng, [n for n in g.node if n.input] or list(g.node))
        del n.input[:]
        what = f"node '{n.name}' ({n.op_type}) has its inputs removed"
    elif how == "node without outputs":
        n = pick(rng, list(g.node))
        del n.output[:]
        what = f"node '{n.name}' ({n.op_type}) has its outputs removed"
    elif how == "two producers" and len(g.node) >= 2:
        a, c = rng.sample(list(g.node), 2)
        what = f"nodes '{a.name}' and '{c.name}' both produce '{a.output[0]}'"
        c.output[0] = a.output[0]
    else:
        n = pick(rng, list(g.node))
        g.output.append(helper.make_tensor_value_info(n.output[0] + "_x", TensorProto.FLOAT, [1]))
        what = f"graph output '{n.output[0]}_x' that no node produces added"
    return Made(serialize(m), f"{b.name}: {what}", b.args)


def dangling(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    path, n = pick(rng, [(p, n) for p, n in all_nodes(m) if n.input])
    k = rng.randrange(len(n.input))
    old = n.input[k]
    n.input[k] = pick(rng, ["nowhere", old + "_dangling", "", " "])
    return Made(serialize(m), f"{b.name}: node '{n.name}' ({path}) input {k} '{old}' -> '{n.input[k]}'", b.args,
                n.input[k] != "")


def cycle(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    g = m.graph
    candidates = [k for k, n in enumerate(g.node) if n.input and n.output]
    i = pick(rng, candidates)
    j = pick(rng, [k for k in candidates if k >= i])
    n = g.node[i]
    k = rng.randrange(len(n.input))
    old = n.input[k]
    n.input[k] = g.node[j].output[0]
    what = "its own output" if i == j else f"the output of node '{g.node[j].name}' after it"
    return Made(serialize(m), f"{b.name}: node '{n.name}' input {k} '{old}' -> {what} ('{n.input[k]}')", b.args,
                i == j)


def unknown_op(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    path, n = pick(rng, all_nodes(m))
    how = rng.randrange(4)
    old = f"'{n.name}' ({n.op_type}, domain '{n.domain}', {path})"
    if how == 0:
        n.op_type = pick(rng, ["NoSuchOp", "conv", "Conv2", "relu ", "*/", "Relu\n"])
        what = f"op_type -> {n.op_type!r}"
    elif how == 1:
        n.domain = pick(rng, ["com.evil", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training"])
        m.opset_import.append(helper.make_opsetid(n.domain, 1))
        what = f"domain -> '{n.domain}' (imported at version 1)"
    elif how == 2:
        n.domain = pick(rng, ["com.evil", "org.pytorch.aten", "x" * 200])
        what = f"domain -> {n.domain[:20]!r} (no opset import)"
    else:
        n.op_type = ""
        what = "op_type empty"
    return Made(serialize(m), f"{b.name}: node {old}: {what}", b.args, True)


def opset(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    how = index // len(ctx.bases) % 9 if index < 9 * len(ctx.bases) else rng.randrange(9)
    versions = [0, 999, -1, 2**62]
    if how < 4:
        for op in m.opset_import:
            if op.domain in ("", "ai.onnx"):
                op.version = versions[how]
        what = f"default opset -> {versions[how]}"
    elif how == 4:
        del m.opset_import[:]
        what = "no opset_import"
    elif how == 5:
        m.opset_import.append(helper.make_opsetid("", 7))
        what = "a second opset_import for the default domain (7)"
    elif how == 6:
        m.opset_import.append(helper.make_opsetid("ai.onnx", 1))
        what = "opset_import 'ai.onnx' 1 beside ''"
    else:
        m.ir_version = pick(rng, [0, 999, -1, 2])
        what = f"ir_version -> {m.ir_version}"
    return Made(serialize(m), f"{b.name}: {what}", b.args)


def input_dims(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    vi = pick(rng, list(m.graph.input) or list(m.graph.output))
    tt = vi.type.tensor_type
    how = rng.randrange(6)
    if how <= 2:
        dims = tt.shape.dim
        k = rng.randrange(len(dims)) if dims else None
        value = pick(rng, [2**31, 2**40, 2**62, 2**63 - 1, -5, 0])
        if k is None:
            dims.add().dim_value = value
        else:
            dims[k].dim_value = value
        what = f"dim {k} -> {value}"
    elif how == 3:
        del tt.shape.dim[:]
        for _ in range(pick(rng, [64, 9, 33])):
            tt.shape.dim.add().dim_value = 2
        what = f"rank {len(tt.shape.dim)}"
    elif how == 4:
        tt.elem_type = pick(rng, [0, TensorProto.STRING, 100, -3])
        what = f"elem_type -> {tt.elem_type}"
    else:
        vi.ClearField("type")
        what = "no type"
    return Made(serialize(m), f"{b.name}: value '{vi.name}': {what}", b.args)


HOSTILE_NAMES = [b"\xff", b"a\xffb", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"*/",
                 b"/*", b"*/ int x; /*", b"\n", b"a\nb", b"\r\n", b'"', b'a"b', b"'", b"\\", b"a\\", b"`",
                 b"$(id)", b"%s%n", b"\x00", b"a\x00b", b"</script>", b"..", b"../../etc/passwd",
                 b"x" * 5000, b"\xe5\x90\x8d\xe5\x89\x8d", b"#include <x>", b"}\n", b"\t", b" ", b"0",
                 b"-1", b"\\u0000", b"??/", b"#define", b"\x1b[31m"]


class HostileNames:
    """Names made of one hostile string plus a letter per use (so that an input, an output and an
    initializer renamed in one model stay distinct). A name that is not valid UTF-8 gets a random
    tag too and is set as a same-length ASCII placeholder, swapped in the serialized bytes."""

    def __init__(self, hostile, rng):
        self.hostile = hostile
        self.rng = rng
        self.swaps = []

    def __call__(self, letter):
        name = self.hostile + letter.encode()
        try:
            return name.decode("utf-8")
        except UnicodeDecodeError:
            name += b"_" + self.letters(12).encode()
            placeholder = self.letters(len(name))
            self.swaps.append((placeholder.encode(), name))
            return placeholder

    def letters(self, n):
        return "".join(pick(self.rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(n))

    def apply(self, data):
        for placeholder, name in self.swaps:
            assert data.count(placeholder) >= 1, placeholder
            data = data.replace(placeholder, name)
        return data


def names(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    g = m.graph
    hostile = HOSTILE_NAMES[index % len(HOSTILE_NAMES)]
    targets = ["node", "value", "input", "output", "initializer", "graph", "producer", "every"]
    target = targets[index % len(targets)]
    name = HostileNames(hostile, rng)
    renamed = []
    if target in ("node", "every"):
        n = pick(rng, list(g.node))
        renamed.append(f"node '{n.name}'")
        n.name = name("n")
    if target in ("value", "every"):
        produced = [o for n in g.node for o in n.output if o not in {v.name for v in g.output}]
        if produced:
            v = pick(rng, produced)
            renamed.append(f"value '{v}'")
            rename_everywhere(m, v, name("v"))
    if target in ("input", "every") and g.input:
        renamed.append(f"input '{g.input[0].name}'")
        rename_everywhere(m, g.input[0].name, name("i"))
    if target in ("output", "every"):
        renamed.append(f"output '{g.output[0].name}'")
        rename_everywhere(m, g.output[0].name, name("o"))
    if target in ("initializer", "every") and g.initializer:
        v = pick(rng, list(g.initializer)).name
        renamed.append(f"initializer '{v}'")
        rename_everywhere(m, v, name("w"))
    if target in ("graph", "every") or not renamed:
        renamed.append("the graph")
        g.name = name("g")
    if target in ("producer", "every"):
        renamed.append("producer_name and doc_string")
        m.producer_name = name("p")
        m.doc_string = name("d")
    shown = repr(hostile if len(hostile) <= 40 else hostile[:20] + f"...({len(hostile)} bytes)".encode())
    return Made(name.apply(serialize(m)), f"{b.name}: {', '.join(renamed)} named {shown} + a letter", b.args)


def dup_output(ctx, rng, index):
    b = ctx.base(index)
    m = b.model()
    g = m.graph
    how = rng.randrange(3)
    if how == 2 and g.input:
        # Not ambiguous (the output is the input's value), so not to be refused either.
        g.output.add().CopyFrom(g.input[0])
        return Made(serialize(m), f"{b.name}: input '{g.input[0].name}' also listed as an output", b.args)
    vi = pick(rng, list(g.output))
    for _ in range(1 if how == 0 else 2):
        g.output.add().CopyFrom(vi)
    return Made(serialize(m), f"{b.name}: output '{vi.name}' listed {'twice' if how == 0 else 'three times'}",
                b.args, True)


# Files the external-data attacks point at (made once, in OUTDIR).
def make_aux(outdir):
    def at(name):
        return os.path.join(outdir, name)
    with open(at("aux_short.bin"), "wb") as f:
        f.write(b"\x01\x02\x03")
    os.symlink("/etc/passwd", at("aux_link_passwd"))
    os.symlink("/dev/zero", at("aux_link_zero"))
    os.symlink(EXTERNAL_WEIGHTS, at("aux_link_weights"))
    os.mkfifo(at("aux_fifo"))
    os.mkdir(at("aux_dir"))
    with open(at("aux_dir/weights.bin"), "wb") as f:
        f.write(bytes(4096))
    os.symlink("aux_dir", at("aux_link_dir"))
    os.symlink("aux_nowhere", at("aux_link_dangling"))


EXTERNAL_LOCATIONS = ["/etc/passwd", "/dev/zero", "../" + EXTERNAL_WEIGHTS, "aux_dir/../../x.bin",
                      "..\\" + EXTERNAL_WEIGHTS, "C:\\weights.bin", "aux_link_passwd", "aux_link_zero",
                      "aux_link_weights", "aux_link_dir/weights.bin", "aux_link_dangling", "aux_fifo", "aux_dir",
                      "aux_missing.bin", "", "aux\x00weights.bin", "./", "aux_short.bin", "/proc/self/mem",
                      "aux_dir/", "aux_dir/weights.bin/x"]
EXTERNAL_OFFSETS = ["-1", "0x10", " 4", "4 ", "1e3", "99999999999999999999", "18446744073709551615", "",
                    "9223372036854775807"]


def external(ctx, rng, index):
    b = next(x for x in ctx.bases if x.name == "external_net")
    m = b.model()
    t = pick(rng, [t for t in m.graph.initializer])
    entries = {e.key: e for e in t.external_data}
    size = os.path.getsize(os.path.join(ctx.outdir, EXTERNAL_WEIGHTS))
    attacks = ["location", "offset past end", "length past end", "overflow", "not a number", "length short",
               "no location", "duplicate key", "unknown key", "no entries", "default with entries", "shape tensor"]
    n_loc = len(EXTERNAL_LOCATIONS)
    how = "location" if index < n_loc else pick(rng, attacks)
    where = f"initializer '{t.name}'"
    refuse = True
    if how == "location":
        loc = EXTERNAL_LOCATIONS[index] if index < n_loc else pick(rng, EXTERNAL_LOCATIONS)
        entries["location"].value = loc
        what = f"location {loc!r}"
    elif how == "offset past end":
        entries["offset"].value = str(pick(rng, [size, size + 1, size - 1, 2**40]))
        what = f"offset {entries['offset'].value} (file of {size} bytes)"
    elif how == "length past end":
        entries["length"].value = str(size - int(entries["offset"].value) + pick(rng, [1, 64, 2**32]))
        what = f"length {entries['length'].value} from offset {entries['offset'].value} (file of {size} bytes)"
    elif how == "overflow":
        entries["offset"].value = str(pick(rng, [2**64 - 1, 2**63, 2**63 - 1]))
        entries["length"].value = str(pick(rng, [2**64 - 1, 2**63 + 1, 16]))
        what = f"offset {entries['offset'].value} + length {entries['length'].value} overflows"
    elif how == "not a number":
        key = pick(rng, ["offset", "length"])
        entries[key].value = pick(rng, EXTERNAL_OFFSETS)
        what = f"{key} {entries[key].value!r}"
    elif how == "length short":
        old = int(entries["length"].value)
        entries["length"].value = str(pick(rng, [0, old - 1, old - 4, old + 4]))
        what = f"length {entries['length'].value} where the tensor needs {old}"
    elif how == "no location":
        t.external_data.remove(entries["location"])
        what = "no 'location' key"
    elif how == "duplicate key":
        e = t.external_data.add()
        e.key, e.value = "location", pick(rng, ["aux_short.bin", "/etc/passwd", EXTERNAL_WEIGHTS])
        what = f"'location' given twice (second {e.value!r})"
        refuse = e.value != EXTERNAL_WEIGHTS
    elif how == "unknown key":
        e = t.external_data.add()
        e.key, e.value = pick(rng, [("checksum", "zz"), ("basepath", "/etc"), ("", "x"), ("\xff", "y")])
        what = f"extra key {e.key!r} = {e.value!r}"
        refuse = False
    elif how == "no entries":
        del t.external_data[:]
        what = "data_location EXTERNAL without entries"
    elif how == "default with entries":
        t.data_location = TensorProto.DEFAULT
        what = "external_data entries on a DEFAULT tensor without data"
    else:
        # An int64 shape tensor (what ONNX's shape inference parses) stored externally: its 16 bytes
        # read from the weights are a shape of two huge values; any other length is wrong.
        shape = m.graph.initializer.add()
        shape.name, shape.data_type = "ext_shape", TensorProto.INT64
        shape.dims.append(2)
        location, length = pick(rng, [EXTERNAL_WEIGHTS, "aux_short.bin"]), pick(rng, [16, 15, 17, 3, 0])
        set_external(shape, location, 0, length)
        flatten = next(n for n in m.graph.node if n.op_type == "Flatten")
        flatten.op_type = "Reshape"
        del flatten.attribute[:]
        flatten.input.append("ext_shape")
        return Made(serialize(m), f"{b.name}: Reshape shape 'ext_shape' int64[2] external in {location!r}, "
                    f"length {length}", b.args, length != 16 or location != EXTERNAL_WEIGHTS)
    return Made(serialize(m), f"{b.name}: {where}: {what}", b.args, refuse)


def special(ctx, rng, index):
    """The model file itself something other than a regular file (made here, no bytes returned)."""
    name = file_name("special", index)
    path = os.path.join(ctx.outdir, name)
    made = [("a FIFO", lambda: os.mkfifo(path)),
            ("a symlink to /dev/zero", lambda: os.symlink("/dev/zero", path)),
            ("a symlink to /etc/passwd", lambda: os.symlink("/etc/passwd", path)),
            ("a symlink to the FIFO aux_fifo", lambda: os.symlink("aux_fifo", path)),
            ("a dangling symlink", lambda: os.symlink("aux_nowhere.onnx", path)),
            ("a symlink loop", lambda: os.symlink(name, path)),
            ("a folder", lambda: os.mkdir(path)),
            ("an empty file", lambda: open(path, "wb").close()),
            ("a symlink to /dev/null", lambda: os.symlink("/dev/null", path)),
            ("a symlink to /proc/self/mem", lambda: os.symlink("/proc/self/mem", path))]
    what, make = made[index % len(made)]
    make()
    return Made(None, f"the model is {what}", "-", True)


GENERATORS = {
    "truncate": truncate, "bitflip": bitflip, "proto.raw_data": raw_data, "proto.data_type": data_type,
    "proto.dims": dims, "proto.typed_count": typed_count, "proto.two_fields": two_fields,
    "proto.attr_type": attr_type, "proto.io": io, "proto.dangling": dangling, "proto.cycle": cycle,
    "proto.unknown_op": unknown_op, "proto.opset": opset, "proto.input_dims": input_dims,
    "proto.names": names, "proto.dup_output": dup_output, "external": external, "special": special,
}
assert set(GENERATORS) == set(KINDS)


def file_name(kind, index):
    return f"{kind.replace('.', '-')}_{index:04d}.onnx"


# ---- main ---------------------------------------------------------------------------------------

def prepare_outdir(outdir):
    if os.path.lexists(outdir):
        if not os.path.isfile(os.path.join(outdir, MANIFEST)):
            sys.exit(f"make_corpus.py: {outdir} exists and is not a corpus (no {MANIFEST}); not replacing it")
        shutil.rmtree(outdir)
    os.makedirs(outdir)


def counts_from(args):
    counts = dict(KINDS)
    if args.count is not None:
        total = sum(KINDS.values())
        counts = {k: max(1, round(v * args.count / total)) for k, v in KINDS.items()}
    for spec in args.kind:
        kind, _, n = spec.partition("=")
        if kind not in KINDS or not n.isdigit():
            sys.exit(f"make_corpus.py: --kind {spec!r}: want KIND=N with KIND one of {', '.join(KINDS)}")
        counts[kind] = int(n)
    return counts


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--count", type=int, help="about this many files in all (the kinds in their default proportions)")
    p.add_argument("--kind", action="append", default=[], metavar="KIND=N", help="files of one kind (repeatable)")
    p.add_argument("--models-dir", default=os.path.join(here, "..", "..", "models"),
                   help="the shipped models used as bases (default: the repository's models/)")
    args = p.parse_args()
    counts = counts_from(args)

    outdir = os.path.abspath(args.outdir)
    prepare_outdir(outdir)
    bases = make_bases(args.models_dir, outdir, args.seed)
    make_aux(outdir)
    ctx = Context(outdir, bases)
    lines = ["file\tkind\targs\texpect\tdescription"]
    for kind, count in counts.items():
        for index in range(count):
            name = file_name(kind, index)
            made = GENERATORS[kind](ctx, random.Random(f"{args.seed}:{kind}:{index}"), index)
            if made.data is not None:
                with open(os.path.join(outdir, name), "wb") as f:
                    f.write(made.data)
            text = made.description.replace("\t", "\\t").replace("\n", "\\n")
            lines.append(f"{name}\t{kind}\t{made.args}\t{'refuse' if made.refuse else '-'}\t{text}")
    with open(os.path.join(outdir, MANIFEST), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"make_corpus.py: {len(lines) - 1} files in {outdir} (seed {args.seed}, {len(bases)} bases)")


if __name__ == "__main__":
    main()
