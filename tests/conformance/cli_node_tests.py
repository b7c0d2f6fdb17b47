#!/usr/bin/env python3
"""tests/conformance/cli_node_tests.py — ONNX's node test cases through modelc's command line alone.

Every case of libonnx-testdata's node suite is taken through `modelc` exactly as a user would take
a model and its data, with no library call into modelc:

  reference  `modelc run-reference model.onnx --input NAME=input_K.pb ... -o DIR`, then every
             DIR/<output>.npy compared with the case's output_K.pb (rtol 1e-3, atol 1e-5 for
             floats; integers and bools exactly; NaN matches NaN; dtype and shape must agree).
  compiled   `modelc model.onnx -o DIR --name NAME --emulate -j 1` (the emitted folder built for the
             host emulation), then `DIR/NAME_emu --input NAME=input_K.pb ... --output-dir OUT
             --compare-dir EXPECTED` (the program's own comparison, the same tolerances, against
             the case's outputs written as .npy). Every case's program is named `model`; CXX defaults to
             "ccache g++" where ccache is installed and EMU_CXXFLAGS to -O1 (the environment's win).

An input whose data modelc needs at compile time (Reshape's shape, Slice's starts, TopK's k, ...)
is found the way a user finds it: modelc refuses the model and its hint says "'NAME' is a graph
input: bind it to its value with --bind NAME=FILE"; the runner then passes --bind NAME=input_K.pb
instead of --input and tries again. Where modelc needs a value computed from the inputs (Range's
limit, an If's condition, a Loop's trip count) and its hint says to bind the inputs it comes from,
the runner binds every input. An output with a static bound (NonMaxSuppression, a NonZero computed
at run time) is compared up to the expected size, its rows past that required to be -1. An input
declared with symbolic dims gets --shape NAME=DIMS from its data. ONNX 1.12 writes BFLOAT16 tensors as UINT16 (the same bits): the runner rewrites
such files as BFLOAT16 .pb files, as later ONNX releases write them.

Cases are out of scope (SKIPPED, with the reason) when they use a type modelc does not have
(STRING, complex), a sequence / optional / map, or an op that `modelc list-ops` does not list, and
when tests/conformance/skips.txt lists them (training mode; data that contradicts the model).
Everything else must PASS; a FAILED case says why (modelc's error, the mismatch, the program's
exit status). The summary counts the cases by outcome and by reason (normalised: names and numbers
elided), for each path; the exit status is 1 when any in-scope case fails.

  cli_node_tests.py --modelc build/modelc                       # reference path, every case
  cli_node_tests.py --modelc build/modelc --compiled all        # and the compiled path, every case
  cli_node_tests.py --modelc build/modelc --compiled sample     # the fixed sample CI runs (1 in 24)
  cli_node_tests.py ... --filter reshape --verbose --keep       # some cases, each result, work kept

The compiled path of every case takes hours on a 2-core machine (one g++ build per case); CI runs
the reference path over all cases and the compiled path over a fixed sample: the cases whose name's
SHA-1 is 0 modulo 24 (independent of which other cases exist, so the sample is stable as ops are
added). CXX and EMU_CXXFLAGS reach the emitted Makefile: CXX="ccache g++" and EMU_CXXFLAGS=-O1
speed up a full run.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

import numpy as np
import onnx
from onnx import numpy_helper

RTOL = 1e-3
ATOL = 1e-5
SAMPLE_MODULUS = 24
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
DEFAULT_SKIPS = os.path.join(HERE, "skips.txt")
BIND_HINT = re.compile(r"'(.+?)' is a graph input: bind it to its value with --bind")
# modelc's refusal of a value it needs at compile time that is computed from the inputs (Range's
# limit, an If's condition, a Loop's trip count, Dropout's training_mode): its hint says to bind the
# inputs it is computed from, or to fix the model input to a value. The runner then binds them all.
NEEDS_CONSTANT = re.compile(r"must be a constant for modelc|is computed at run time")
TENSOR_TYPES_NOT_SUPPORTED = {onnx.TensorProto.STRING: "STRING", onnx.TensorProto.COMPLEX64: "COMPLEX64",
                              onnx.TensorProto.COMPLEX128: "COMPLEX128"}


# ---- the case's model, from its ModelProto -------------------------------------------------------

def graph_scope(g, ops, types, non_tensor):
    def typ(t):
        kind = t.WhichOneof("value")
        if kind == "tensor_type":
            types.add(t.tensor_type.elem_type)
        elif kind in ("sequence_type", "optional_type", "map_type", "sparse_tensor_type"):
            non_tensor.add(kind.replace("_type", "").replace("_", " "))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        typ(v.type)
    for t in g.initializer:
        types.add(t.data_type)
    for n in g.node:
        ops.add(n.op_type if n.domain in ("", "ai.onnx") else n.domain + "::" + n.op_type)
        for a in n.attribute:
            if a.name in ("to", "dtype", "output_dtype") and a.type == onnx.AttributeProto.INT:
                types.add(a.i)
            if a.HasField("t"):
                types.add(a.t.data_type)
            if a.HasField("g"):
                graph_scope(a.g, ops, types, non_tensor)
            for sg in a.graphs:
                graph_scope(sg, ops, types, non_tensor)


MIN_OPSET = 7


def has_form(ranges, opset):
    """Whether an op's opset ranges ([(first, last or None)]) cover `opset`."""
    return any(first <= opset and (last is None or opset <= last) for first, last in ranges)


def out_of_scope(model, known_ops):
    """The reason the case is out of modelc's scope, or None: a type or an op modelc does not have,
    or, as tests/conformance does, an opset below 7 for which modelc has no form of an op."""
    ops, types, non_tensor = set(), set(), set()
    graph_scope(model.graph, ops, types, non_tensor)
    bad = sorted(TENSOR_TYPES_NOT_SUPPORTED[t] for t in types if t in TENSOR_TYPES_NOT_SUPPORTED)
    if bad:
        return "type %s (modelc has no such type)" % ", ".join(bad)
    if non_tensor:
        return "%s types (modelc compiles tensor graphs)" % ", ".join(sorted(non_tensor))
    unknown = sorted(ops - set(known_ops))
    if unknown:
        return "op%s %s not in modelc's op table" % ("s" if len(unknown) > 1 else "", ", ".join(unknown))
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [0])
    no_form = sorted(op for op in ops if not has_form(known_ops[op], opset))
    if no_form and opset < MIN_OPSET:
        return "opset %d model: modelc supports opset %d and later, and has no opset-%d form of %s" % (
            opset, MIN_OPSET, opset, ", ".join(no_form))
    return None


def read_op_table(text):
    """`modelc list-ops`: op name -> [(first opset, last opset or None)]."""
    table = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 2 or not re.match(r"^[A-Z][A-Za-z0-9]*$", cells[0]) or cells[0] == "Operator":
            continue
        ranges = []
        for part in cells[1].split(","):
            part = part.strip()
            m = re.match(r"^(\d+)(\+|-(\d+))?$", part)
            if not m:
                break
            first = int(m.group(1))
            last = None if m.group(2) == "+" else int(m.group(3)) if m.group(3) else first
            ranges.append((first, last))
        else:
            table[cells[0]] = ranges
    return table


def read_skips(path):
    """skips.txt: 'pattern  reason' lines (fnmatch patterns of case names)."""
    import fnmatch
    entries = []
    if not path:
        return lambda name: None
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split(None, 1)
            if len(parts) < 2:
                raise SystemExit("%s: '%s' has no reason" % (path, s))
            entries.append((parts[0], parts[1]))

    def find(name):
        for pattern, reason in entries:
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch("node/" + name, pattern):
                return reason
        return None
    return find


# ---- files ---------------------------------------------------------------------------------------

def sanitize(name):
    """mc_npy::sanitize_file_name: the file name modelc gives an output."""
    r = "".join(c if (c.isascii() and (c.isalnum() or c in "_-.")) else "_" for c in name)
    if r in ("", ".", ".."):
        r = "_" * (len(r) + 1)
    return r[:200]


def output_file_names(names):
    """mc_npy::output_file_names: each output's .npy file name, '_K' added on collisions."""
    used, files = set(), []
    for n in names:
        base = sanitize(n)
        f, k = base + ".npy", 1
        while f in used:
            f = "%s_%d.npy" % (base, k)
            k += 1
        used.add(f)
        files.append(f)
    return files


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def data_sets(case_dir):
    sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))

    def numbered(d, prefix):
        r, k = [], 0
        while os.path.exists(os.path.join(d, "%s%d.pb" % (prefix, k))):
            r.append(os.path.join(d, "%s%d.pb" % (prefix, k)))
            k += 1
        return r
    return [(s, numbered(os.path.join(case_dir, s), "input_"), numbered(os.path.join(case_dir, s), "output_"))
            for s in sets]


def bf16_fixed(path, declared, work, tag):
    """ONNX 1.12 writes BFLOAT16 tensors as UINT16: a copy with data_type BFLOAT16 where the model
    declares BFLOAT16, else `path` itself."""
    if declared != onnx.TensorProto.BFLOAT16:
        return path
    t = read_pb(path)
    if t.data_type != onnx.TensorProto.UINT16:
        return path
    t.data_type = onnx.TensorProto.BFLOAT16
    out = os.path.join(work, tag + "_" + os.path.basename(path))
    with open(out, "wb") as f:
        f.write(t.SerializeToString())
    return out


def expected_array(path, declared):
    """The expected output as (numpy array, modelc dtype name); bfloat16 as its float32 values."""
    t = read_pb(path)
    if declared == onnx.TensorProto.BFLOAT16 and t.data_type == onnx.TensorProto.UINT16:
        bits = numpy_helper.to_array(t).astype(np.uint32) << 16
        return bits.view(np.float32), "bfloat16"
    a = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        return a, "bfloat16"
    return a, dtype_name(a.dtype)


def dtype_name(dt):
    return {"float32": "float32", "float16": "float16", "float64": "float64", "int8": "int8", "uint8": "uint8",
            "int16": "int16", "uint16": "uint16", "int32": "int32", "uint32": "uint32", "int64": "int64",
            "uint64": "uint64", "bool": "bool"}.get(np.dtype(dt).name, np.dtype(dt).name)


def within_bound(got, want):
    """An output with a static bound (NonMaxSuppression's selected_indices, a NonZero computed at run
    time): larger than the expected one along one axis, everything past it -1. Its leading part, or
    None when it is not such an output."""
    if got.ndim != want.ndim or not np.issubdtype(got.dtype, np.integer):
        return None
    axes = [d for d in range(got.ndim) if got.shape[d] != want.shape[d]]
    if len(axes) != 1 or got.shape[axes[0]] < want.shape[axes[0]]:
        return None
    d, n = axes[0], want.shape[axes[0]]
    if not (np.take(got, range(n, got.shape[d]), axis=d) == -1).all():
        return None
    return np.take(got, range(n), axis=d)


def compare(name, got, want, want_dtype):
    """'' when `got` (a numpy array read from modelc's .npy) matches, else what differs."""
    what = "output '%s': " % name
    if dtype_name(got.dtype) != want_dtype:
        return what + "dtype %s, expected %s" % (dtype_name(got.dtype), want_dtype)
    if got.shape != want.shape:
        got = within_bound(got, want)
    if got is None or got.shape != want.shape:
        return what + "shape %s, expected %s" % (list(got.shape if got is not None else []), list(want.shape))
    if got.size == 0:
        return ""
    if np.issubdtype(want.dtype, np.floating):
        g, w = got.astype(np.float64), want.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= ATOL + RTOL * np.abs(w)
        bad = ~(same | close)
        if not bad.any():
            return ""
        i = int(np.argmax(bad.ravel()))
        return what + "%d of %d elements differ (rtol %g, atol %g); first at %d: got %r, expected %r" % (
            int(bad.sum()), g.size, RTOL, ATOL, i, g.ravel()[i], w.ravel()[i])
    bad = got.ravel() != want.ravel()
    if not bad.any():
        return ""
    i = int(np.argmax(bad))
    return what + "%d of %d elements differ (exact); first at %d: got %r, expected %r" % (
        int(bad.sum()), got.size, i, got.ravel()[i], want.ravel()[i])


# ---- running modelc ------------------------------------------------------------------------------

def run(cmd, cwd=None, timeout=600, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def first_error(stderr, stdout=""):
    """modelc's error (and hint) lines, or the last lines of the output."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    err = [l for l in lines if l.startswith("error") or l.startswith("hint")]
    if err:
        return " / ".join(err[:2])
    tail = lines[-3:] or [l for l in stdout.splitlines() if l.strip()][-3:]
    return " / ".join(tail)


def normalise(reason):
    """A reason with names and numbers elided, so that alike failures count together."""
    r = re.sub(r"^error: ", "", reason.split(" / hint")[0])
    r = re.sub(r"^[^:]*\.onnx: ", "", r)
    r = re.sub(r"node '[^']*' \(([A-Za-z]+)[^)]*\)", r"\1", r)
    r = re.sub(r"'[^']*'", "'…'", r)
    r = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", r)
    r = re.sub(r"(\[[^\]]*\])", "[…]", r)
    return r[:160]


class Case:
    def __init__(self, name, case_dir, work):
        self.name = name
        self.dir = case_dir
        self.work = work
        self.model_path = os.path.join(case_dir, "model.onnx")
        self.model = onnx.load(self.model_path)
        inits = {t.name for t in self.model.graph.initializer}
        self.inputs = [v for v in self.model.graph.input if v.name not in inits]
        self.outputs = list(self.model.graph.output)

    def declared_static(self, v):
        tt = v.type.tensor_type
        if not tt.HasField("shape"):
            return None
        dims = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                return None
            dims.append(d.dim_value)
        return dims

    def feeds(self, set_name, inputs):
        """(name, file, --shape value or None) for each input file of a data set."""
        r = []
        for k, path in enumerate(inputs):
            v = self.inputs[k]
            fixed = bf16_fixed(path, v.type.tensor_type.elem_type, self.work, set_name)
            shape = None
            if self.declared_static(v) is None:
                dims = list(read_pb(path).dims)
                shape = "x".join(str(d) for d in dims) if dims and all(d > 0 for d in dims) else None
            r.append((v.name, fixed, shape))
        return r

    def args(self, feeds, binds, inputs=True):
        """--bind for the bound inputs, --input for the others (run-reference; not for the compile
        command, which takes no data), --shape for an input declared with symbolic dims."""
        a = []
        for name, path, shape in feeds:
            if name in binds:
                a += ["--bind", "%s=%s" % (name, path)]
                continue
            if inputs:
                a += ["--input", "%s=%s" % (name, path)]
            if shape:
                a += ["--shape", "%s=%s" % (name, shape)]
        return a

    def with_binds(self, attempt, feeds):
        """Runs attempt(binds) -> (rc, out, err), binding each input modelc asks for; the last result."""
        binds = set()
        names = {n for n, _, _ in feeds}
        while True:
            rc, out, err = attempt(binds)
            m = BIND_HINT.search(err)
            if rc == 1 and m and m.group(1) in names and m.group(1) not in binds:
                binds.add(m.group(1))
                continue
            if rc == 1 and NEEDS_CONSTANT.search(err) and binds != names:
                binds = set(names)
                continue
            return rc, out, err, binds

    def expected(self, outputs):
        return [expected_array(p, self.outputs[k].type.tensor_type.elem_type) for k, p in enumerate(outputs)]

    # -- the two paths --

    def reference(self, modelc):
        """(outcome, detail, binds): outcome 'pass' or 'fail'."""
        all_binds = set()
        for set_name, inputs, outputs in data_sets(self.dir):
            if len(inputs) > len(self.inputs):
                return "fail", "%d input files for %d graph inputs" % (len(inputs), len(self.inputs)), all_binds
            feeds = self.feeds(set_name, inputs)
            out_dir = os.path.join(self.work, "ref_" + set_name)
            rc, out, err, binds = self.with_binds(
                lambda b: run([modelc, "run-reference", self.model_path, "-o", out_dir] + self.args(feeds, b)), feeds)
            all_binds |= binds
            if rc != 0:
                return "fail", "modelc run-reference exit %d: %s" % (rc, first_error(err, out)), all_binds
            names = [o.name for o in self.outputs]
            files = output_file_names(list(dict.fromkeys(names)))
            file_of = dict(zip(dict.fromkeys(names), files))
            for k, (want, want_dtype) in enumerate(self.expected(outputs)):
                path = os.path.join(out_dir, file_of[names[k]])
                if not os.path.exists(path):
                    return "fail", "output '%s': run-reference wrote no %s" % (names[k], path), all_binds
                diff = compare(names[k], np.load(path), want, want_dtype)
                if diff:
                    return "fail", set_name + ": " + diff, all_binds
        return "pass", "", all_binds

    def compiled(self, modelc, env, timeout):
        """(outcome, detail, binds), the program compiled for the host emulation."""
        prog_name = "model"  # one name for every case: equal sources (NAME_main.cu) hit ccache
        all_binds = set()
        built_for = None
        for set_name, inputs, outputs in data_sets(self.dir):
            feeds = self.feeds(set_name, inputs)
            prog_dir = os.path.join(self.work, "prog_" + set_name)

            def compile_with(b):
                shutil.rmtree(prog_dir, ignore_errors=True)
                return run([modelc, self.model_path, "-o", prog_dir, "--name", prog_name, "--emulate", "-j", "1"] +
                           self.args(feeds, b, inputs=False), timeout=timeout, env=env)
            rc, out, err, binds = self.with_binds(compile_with, feeds)
            all_binds |= binds
            if rc != 0:
                return "fail", "modelc --emulate exit %d: %s" % (rc, first_error(err, out)), all_binds
            built_for = prog_dir
            # The expected outputs as .npy, named as the program names its outputs.
            names = [o.name for o in self.outputs]
            uniq = list(dict.fromkeys(names))
            file_of = dict(zip(uniq, output_file_names(uniq)))
            expected_dir = os.path.join(self.work, "expected_" + set_name)
            os.makedirs(expected_dir, exist_ok=True)
            for k, (want, want_dtype) in enumerate(self.expected(outputs)):
                if want_dtype == "bfloat16":
                    return "fail", "output '%s' is bfloat16: no .npy can hold the expected values" % names[k], all_binds
                np.save(os.path.join(expected_dir, file_of[names[k]]), want)
            run_args = []
            for name, path, _ in feeds:
                if name not in binds:
                    run_args += ["--input", "%s=%s" % (name, path)]
            exe = os.path.join(built_for, prog_name + "_emu")
            rc, out, err = run([exe] + run_args + ["--output-dir", os.path.join(self.work, "out_" + set_name),
                                                   "--compare-dir", expected_dir], timeout=timeout)
            if rc != 0:
                lines = [l.strip() for l in (out + "\n" + err).splitlines() if "FAIL" in l or "error" in l]
                return "fail", "program exit %d: %s" % (rc, " / ".join(lines[:2]) or first_error(err, out)), all_binds
        return "pass", "", all_binds


def in_sample(name, modulus=SAMPLE_MODULUS):
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % modulus == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modelc", required=True, help="the modelc executable")
    ap.add_argument("--data", default=DEFAULT_DATA, help="the node suite's folder (default %(default)s)")
    ap.add_argument("--skips", default=DEFAULT_SKIPS, help="skip list (default tests/conformance/skips.txt)")
    ap.add_argument("--work", help="work folder (default: a temporary folder, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--reference", choices=["all", "none"], default="all", help="the run-reference path")
    ap.add_argument("--compiled", choices=["none", "sample", "all"], default="none",
                    help="the compiled path: none, the fixed sample (1 in %d cases by name), all" % SAMPLE_MODULUS)
    ap.add_argument("--sample-modulus", type=int, default=SAMPLE_MODULUS,
                    help="the sample: the cases whose name's SHA-1 is 0 modulo this (default %d; a multiple of it "
                         "picks a subset of its sample)" % SAMPLE_MODULUS)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    ap.add_argument("--timeout", type=int, default=900, help="per command (default %(default)s s)")
    ap.add_argument("--verbose", action="store_true", help="print every case's outcome")
    ap.add_argument("--json", help="write every case's outcome to this file")
    a = ap.parse_args()

    if not os.path.isdir(a.data):
        print("cli_node_tests: no test data at %s (install libonnx-testdata: scripts/setup.sh)" % a.data)
        return 1
    rc, out, err = run([a.modelc, "list-ops"])
    if rc != 0:
        print("cli_node_tests: `%s list-ops` failed: %s" % (a.modelc, err.strip()))
        return 1
    known_ops = read_op_table(out)
    if len(known_ops) < 20:
        print("cli_node_tests: could not read the op table from `modelc list-ops`")
        return 1
    skip_reason = read_skips(a.skips)
    work = a.work or tempfile.mkdtemp(prefix="cli_node_tests_")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    # The emitted Makefile takes CXX and EMU_CXXFLAGS from the environment: ccache where there is
    # one (the runtime's host objects are the same in every case), -O1 (the node cases are small;
    # compile time dominates). Set them to override.
    if "CXX" not in env and shutil.which("ccache"):
        env["CXX"] = "ccache g++"
    env.setdefault("EMU_CXXFLAGS", "-O1")

    names = sorted(d for d in os.listdir(a.data) if os.path.exists(os.path.join(a.data, d, "model.onnx")))
    names = [n for n in names if a.filter in n]
    results = {}
    jobs = []
    for n in names:
        r = {"case": n}
        results[n] = r
        case_dir = os.path.join(a.data, n)
        model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
        reason = out_of_scope(model, known_ops) or skip_reason(n)
        if reason:
            r["skip"] = reason
            continue
        jobs.append(n)

    def work_on(n):
        r = results[n]
        case_work = os.path.join(work, n)
        shutil.rmtree(case_work, ignore_errors=True)
        os.makedirs(case_work)
        case = Case(n, os.path.join(a.data, n), case_work)
        t0 = time.time()
        if a.reference == "all":
            r["reference"], r["reference_detail"], binds = case.reference(a.modelc)
            r["binds"] = sorted(binds)
        if a.compiled == "all" or (a.compiled == "sample" and in_sample(n, a.sample_modulus)):
            r["compiled"], r["compiled_detail"], binds = case.compiled(a.modelc, env, a.timeout)
            r.setdefault("binds", sorted(binds))
        r["seconds"] = round(time.time() - t0, 1)
        if not a.keep:
            shutil.rmtree(case_work, ignore_errors=True)
        return n

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for n in ex.map(work_on, jobs):
            r = results[n]
            for path in ("reference", "compiled"):
                if path in r and (a.verbose or r[path] != "pass"):
                    detail = r.get(path + "_detail", "")
                    print("%s %s %s%s" % ("PASS" if r[path] == "pass" else "FAIL", path, n,
                                          (": " + detail) if detail else ""), flush=True)
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)

    # ---- summary ----
    skips = [r["skip"] for r in results.values() if "skip" in r]
    print("\n%d cases: %d in scope, %d skipped" % (len(results), len(jobs), len(skips)))
    missing_ops = [re.match(r"^ops? (.*) not in modelc's op table$", x) for x in skips]
    by_op = Counter(op for m in missing_ops if m for op in m.group(1).split(", "))
    print("  skipped, an op not in modelc's op table: %d cases; by op (a case may miss several): %s" % (
        sum(1 for m in missing_ops if m), ", ".join("%s %d" % kv for kv in sorted(by_op.items(), key=lambda x: (-x[1], x[0])))))
    other = Counter(x for x, m in zip(skips, missing_ops) if not m)
    for reason, k in sorted(other.items(), key=lambda x: (-x[1], x[0])):
        print("  skipped, %s: %d" % (reason, k))
    failed_any = False
    for path in ("reference", "compiled"):
        ran = [r for r in results.values() if path in r]
        if not ran:
            continue
        passed = sum(r[path] == "pass" for r in ran)
        print("%s path: %d passed, %d failed (of %d run)" % (path, passed, len(ran) - passed, len(ran)))
        by_reason = Counter(normalise(r[path + "_detail"]) for r in ran if r[path] != "pass")
        for reason, k in sorted(by_reason.items(), key=lambda x: (-x[1], x[0])):
            print("  %4d  %s" % (k, reason))
        bound = sum(1 for r in ran if r.get("binds"))
        print("  (%d of them with --bind)" % bound)
        failed_any = failed_any or passed != len(ran)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
