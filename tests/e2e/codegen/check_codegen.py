#!/usr/bin/python3
"""Whole models through modelc's code generation (run by ctest; see CMakeLists.txt beside).

    check_codegen.py verify --modelc BIN --model M.onnx --work DIR [--expect-engine E [--expect-reason R]] [-- FLAGS]
        `modelc verify M.onnx --emulate --keep DIR/<name> FLAGS` must exit 0 with every output PASS
        (and, with --expect-engine, report.json must put a kernel on engine E; with --expect-reason
        too, one whose fallback reason is R).
    check_codegen.py nvcc --modelc BIN --model M.onnx --work DIR [--archs sm_75,sm_90]
        emits M for the archs and compiles every source with nvcc (make objs, MODELC_WERROR=1:
        host-code warnings are errors); no GPU needed. Exit 77 (skipped) without nvcc.
    check_codegen.py golden --modelc BIN --model M.onnx --golden DIR [--update]
        emits M and compares every file with DIR (runtime/ and kernels/ must be byte copies of
        runtime_stub/ and templates/ instead; a .bin is kept as its .sha256). --update rewrites DIR
        (tests/golden/update.sh).
    check_codegen.py bad-inputs --modelc BIN --model M.onnx --work DIR [--binary M_emu]
        builds M's emulation binary (or takes --binary) and feeds it wrong-shape, wrong-dtype and truncated .npy files,
        a FIFO, /dev/zero, a folder, a header promising more than the file holds, a file larger than the input's,
        a .pb of huge dims: each must exit 1 within 20 s with a clear message naming the input and file, and write
        no output.
Each prints what it ran and how long it took.
"""

import argparse
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77  # ctest SKIP_RETURN_CODE
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def run(cmd, cwd=None, env=None, timeout=None):
    """(exit status, stdout, stderr, seconds); with `timeout`, a run past it is killed and its
    status is None."""
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", time.time() - start
    return p.returncode, p.stdout, p.stderr, time.time() - start


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def model_name(model):
    stem = os.path.splitext(os.path.basename(model))[0]
    name = "".join(c if c.isalnum() else "_" for c in stem)
    return name if name and not name[0].isdigit() else "m_" + name


def find_nvcc():
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/cuda/bin"]:
        p = os.path.join(d, "nvcc")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# ---- verify ---------------------------------------------------------------------------------------

def verify(a):
    folder = os.path.join(a.work, model_name(a.model))
    rc, out, err, secs = run([a.modelc, "verify", a.model, "--emulate", "--keep", folder, "-j", str(a.jobs)] + a.extra)
    sys.stdout.write(out)
    sys.stdout.write(err)
    print(f"verify took {secs:.1f} s")
    if rc != 0:
        fail(f"modelc verify exited with {rc}")
    if "\nPASS: " not in "\n" + out:
        fail("no PASS line in modelc verify's output")
    if a.expect_engine:
        with open(os.path.join(folder, "report.json")) as f:
            kernels = json.load(f)["kernels"]
        engines = [k.get("engine", "") for k in kernels]
        n = engines.count(a.expect_engine)
        if n == 0:
            fail(f"no kernel runs on engine '{a.expect_engine}' (report.json)")
        print(f"{n} kernels on engine '{a.expect_engine}'")
        if a.expect_reason:
            r = sum(1 for k in kernels if k.get("engine", "") == a.expect_engine and
                    k.get("fallback_reason", "") == a.expect_reason)
            if r == 0:
                fail(f"no kernel on engine '{a.expect_engine}' for the reason '{a.expect_reason}' (report.json)")
            print(f"{r} of them for the reason '{a.expect_reason}'")
    print("OK")


# ---- nvcc -----------------------------------------------------------------------------------------

def nvcc(a):
    compiler = find_nvcc()
    if not compiler:
        print("SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin)")
        sys.exit(SKIP)
    folder = os.path.join(a.work, model_name(a.model) + "_nvcc")
    rc, out, err, secs = run([a.modelc, a.model, "-o", folder, "--arch", a.archs])
    sys.stdout.write(out + err)
    if rc != 0:
        fail(f"modelc exited with {rc}")
    archs = " ".join(x.strip()[3:] for x in a.archs.split(","))
    env = dict(os.environ, NVCC=compiler)
    rc, out, err, secs = run(["make", "-C", folder, f"-j{a.jobs}", "MODELC_WERROR=1", f"ARCHS={archs}", "objs"], env=env)
    sys.stdout.write(out + err)
    print(f"nvcc build ({a.archs}) took {secs:.1f} s")
    if rc != 0:
        fail(f"make objs exited with {rc}")
    print("OK")


# ---- golden ---------------------------------------------------------------------------------------

def files_under(root):
    r = []
    for d, _, names in os.walk(root):
        for n in names:
            r.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(r)


def golden(a):
    name = model_name(a.model)
    with tempfile.TemporaryDirectory(prefix="modelc_golden_") as tmp:
        out = os.path.join(tmp, name)
        rc, o, e, _ = run([a.modelc, a.model, "-o", out])
        if rc != 0:
            sys.stdout.write(o + e)
            fail(f"modelc exited with {rc}")
        if not a.formatted:
            print("SKIPPED: this modelc was built without clang's libFormat: the emitted code is not formatted "
                  "as the golden copy is")
            sys.exit(SKIP)
        # Binary files (the weights) are kept as their SHA-256.
        for f in files_under(out):
            if f.endswith(".bin"):
                digest = hashlib.sha256(open(os.path.join(out, f), "rb").read()).hexdigest()
                open(os.path.join(out, f + ".sha256"), "w").write(f"{digest}  {os.path.basename(f)}\n")
                os.remove(os.path.join(out, f))
        emitted = [f for f in files_under(out) if not f.startswith(("runtime/", "kernels/"))]
        # The copies: byte-identical to their sources in the repository.
        problems = []
        for f in files_under(out):
            for prefix, src in (("runtime/", "runtime_stub"), ("kernels/", "templates")):
                if f.startswith(prefix):
                    original = os.path.join(SOURCE_DIR, src, f[len(prefix):])
                    if not os.path.isfile(original) or not filecmp.cmp(original, os.path.join(out, f), shallow=False):
                        problems.append(f"{f} is not a copy of {src}/{f[len(prefix):]}")
        if a.update:
            if os.path.isdir(a.golden):
                shutil.rmtree(a.golden)
            os.makedirs(a.golden)
            for f in emitted:
                os.makedirs(os.path.dirname(os.path.join(a.golden, f)) or ".", exist_ok=True)
                shutil.copyfile(os.path.join(out, f), os.path.join(a.golden, f))
            print(f"updated {a.golden}: {len(emitted)} files")
            for p in problems:
                print("warning: " + p)
            return
        want = files_under(a.golden)
        for f in sorted(set(want) - set(emitted)):
            problems.append(f"{f}: in the golden copy, no longer emitted")
        for f in sorted(set(emitted) - set(want)):
            problems.append(f"{f}: emitted, not in the golden copy")
        for f in sorted(set(want) & set(emitted)):
            g, n = os.path.join(a.golden, f), os.path.join(out, f)
            if filecmp.cmp(g, n, shallow=False):
                continue
            rc, diff, _, _ = run(["diff", "-u", g, n])
            lines = diff.splitlines()
            problems.append(f"{f} differs:\n" + "\n".join(lines[:80]) + ("\n..." if len(lines) > 80 else ""))
        if problems:
            print("\n".join(problems))
            fail(f"{len(problems)} difference(s) from {a.golden}; if the change is intended, run "
                 "tests/golden/update.sh and say why in the commit")
        print(f"OK: {len(emitted)} files equal the golden copy")


# ---- bad inputs -----------------------------------------------------------------------------------

def bad_inputs(a):
    name = model_name(a.model)
    folder = os.path.join(a.work, name + "_bad_inputs")
    if a.binary:  # built already (by the verify test)
        binary = a.binary
        if not os.path.isfile(binary):
            fail(f"{binary} does not exist")
        os.makedirs(folder, exist_ok=True)
    else:
        rc, o, e, secs = run([a.modelc, a.model, "-o", folder, "--build", "--emulate", "-j", str(a.jobs)])
        sys.stdout.write(o + e)
        if rc != 0:
            fail(f"modelc --build --emulate exited with {rc}")
        print(f"emulation build took {secs:.1f} s")
        binary = os.path.join(folder, name + "_emu")
    data = os.path.join(folder, "data")
    if os.path.isdir(data):  # a FIFO or a symlink of the last run would be in the way
        shutil.rmtree(data)
    os.makedirs(data)

    # The input's name, dtype and shape, from the program's own --help-free run: use the model.
    import onnx
    m = onnx.load(a.model)
    inits = {t.name for t in m.graph.initializer}
    inp = [i for i in m.graph.input if i.name not in inits][0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    good = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(np.float32)
    np.save(os.path.join(data, "good.npy"), good)
    wrong_shape = shape[:-1] + [shape[-1] + 1]
    np.save(os.path.join(data, "shape.npy"), np.zeros(wrong_shape, np.float32))
    np.save(os.path.join(data, "dtype.npy"), good.astype(np.float64))
    np.save(os.path.join(data, "int.npy"), good.astype(np.int32))
    raw = open(os.path.join(data, "good.npy"), "rb").read()
    open(os.path.join(data, "truncated.npy"), "wb").write(raw[:-5])
    open(os.path.join(data, "header.npy"), "wb").write(raw[:30])
    open(os.path.join(data, "garbage.npy"), "wb").write(b"not a numpy file at all")

    def attempt(file, expect_code, expect_text):
        out_dir = os.path.join(folder, "out_" + os.path.basename(file).replace(".", "_"))
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        rc, o, e, _ = run([binary, "--input", f"{inp.name}={file}", "--output-dir", out_dir], timeout=20)
        problems = []
        if rc is None:
            problems.append("still running after 20 s (killed)")
        elif rc != expect_code:
            problems.append(f"exit status {rc}, expected {expect_code}")
        for t in expect_text:
            if t not in e:
                problems.append(f"stderr lacks {t!r}")
        if expect_code != 0 and os.path.exists(out_dir):
            problems.append(f"{out_dir} was created")
        if expect_code == 0 and not os.listdir(out_dir):
            problems.append("no output written")
        print(("ok   " if not problems else "BAD  ") + os.path.basename(file) + ": " + (e.strip() or "exit 0"))
        return [f"{os.path.basename(file)}: {p}" for p in problems]

    from onnx import numpy_helper
    open(os.path.join(data, "good.pb"), "wb").write(numpy_helper.from_array(good, inp.name).SerializeToString())
    open(os.path.join(data, "shape.pb"), "wb").write(
        numpy_helper.from_array(np.zeros(wrong_shape, np.float32)).SerializeToString())
    pb = open(os.path.join(data, "good.pb"), "rb").read()
    open(os.path.join(data, "truncated.pb"), "wb").write(pb[:len(pb) // 2])

    # Files that are not what they claim: not regular files (a FIFO would block the program, /dev/zero
    # never end), a header promising 2^40 elements in 16 bytes, far more data than the input takes, dims
    # that multiply past any file.
    os.mkfifo(os.path.join(data, "fifo.npy"))
    os.symlink("/dev/zero", os.path.join(data, "zero.npy"))
    os.makedirs(os.path.join(data, "folder.npy"))
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }\n"
    open(os.path.join(data, "huge_header.npy"), "wb").write(
        b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(16))
    np.save(os.path.join(data, "large.npy"), np.zeros(int(np.prod(shape)) + 100000, np.float32))
    huge = numpy_helper.from_array(np.zeros(6, np.float32))
    del huge.dims[:]
    huge.dims.extend([1 << 20] * 4)
    open(os.path.join(data, "huge_dims.pb"), "wb").write(huge.SerializeToString())

    f = lambda n: os.path.join(data, n)
    shape_txt = "x".join(map(str, shape))
    problems = attempt(f("good.npy"), 0, [])
    problems += attempt(f("good.pb"), 0, [])
    a_npy = open(os.path.join(folder, "out_good_npy", os.listdir(os.path.join(folder, "out_good_npy"))[0]), "rb").read()
    a_pb = open(os.path.join(folder, "out_good_pb", os.listdir(os.path.join(folder, "out_good_pb"))[0]), "rb").read()
    if a_npy != a_pb:
        problems.append("the same data as .npy and as .pb gives different outputs")
    problems += attempt(f("shape.pb"), 1, [f"input '{inp.name}' expects float32[{shape_txt}]", f("shape.pb")])
    problems += attempt(f("truncated.pb"), 1, [f"input '{inp.name}'", f("truncated.pb")])
    problems += attempt(f("shape.npy"), 1, [f"input '{inp.name}' expects float32[{shape_txt}]",
                                            f"holds float32[{'x'.join(map(str, wrong_shape))}]", f("shape.npy")])
    problems += attempt(f("dtype.npy"), 1, [f"input '{inp.name}' expects float32[{shape_txt}]", "holds float64",
                                            "convert the data to float32", f("dtype.npy")])
    problems += attempt(f("int.npy"), 1, [f"input '{inp.name}' expects float32[{shape_txt}]", "holds int32",
                                          "convert the data to float32"])
    problems += attempt(f("truncated.npy"), 1, [f"input '{inp.name}'", "truncated .npy file", f("truncated.npy")])
    problems += attempt(f("header.npy"), 1, [f"input '{inp.name}'", "truncated .npy file"])
    problems += attempt(f("garbage.npy"), 1, [f"input '{inp.name}'", "not a .npy file"])
    problems += attempt(f("missing.npy"), 1, [f"input '{inp.name}'", "cannot open"])
    problems += attempt(f("fifo.npy"), 1, [f"input '{inp.name}'", f("fifo.npy") + ": is a FIFO (named pipe)"])
    problems += attempt(f("zero.npy"), 1, [f"input '{inp.name}'", f("zero.npy") + ": is a character device"])
    problems += attempt(f("folder.npy"), 1, [f"input '{inp.name}'", f("folder.npy") + ": is a directory"])
    problems += attempt(f("huge_header.npy"), 1, [f"input '{inp.name}'", f("huge_header.npy") +
                                                  ": truncated .npy file: float32[1099511627776] needs"])
    problems += attempt(f("large.npy"), 1, [f"input '{inp.name}'", f("large.npy") + ": is ",
                                            f"more than a .npy file of a float32[{shape_txt}] tensor can be"])
    problems += attempt(f("huge_dims.pb"), 1, [f"input '{inp.name}'", f("huge_dims.pb") +
                                               ": shape 1048576x1048576x1048576x1048576 is too large"])
    if problems:
        fail("; ".join(problems))
    print("OK")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("verify", "nvcc", "golden", "bad-inputs"):
        s = sub.add_parser(name)
        s.add_argument("--modelc", required=True)
        s.add_argument("--model", required=True)
        s.add_argument("--work", default="codegen_work")
        s.add_argument("--jobs", type=int, default=2)
        if name == "verify":
            s.add_argument("--expect-engine", help="fail unless report.json puts a kernel on this engine")
            s.add_argument("--expect-reason", help="with --expect-engine: ... for this fallback reason")
            s.add_argument("extra", nargs="*", help="more modelc verify arguments (after --)")
        if name == "bad-inputs":
            s.add_argument("--binary", help="the model's emulation binary, built already (default: build it)")
        if name == "nvcc":
            s.add_argument("--archs", default="sm_75,sm_90")
        if name == "golden":
            s.add_argument("--golden", required=True)
            s.add_argument("--update", action="store_true")
            s.add_argument("--formatted", type=int, default=1,
                           help="0: modelc was built without libFormat (the test is skipped)")
    a = p.parse_args()
    a.modelc = os.path.abspath(a.modelc)
    a.work = os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    {"verify": verify, "nvcc": nvcc, "golden": golden, "bad-inputs": bad_inputs}[a.command](a)


if __name__ == "__main__":
    main()
