#!/usr/bin/python3
"""A generated model linked into other programs, each way the folder's README.md shows (run by
ctest; see CMakeLists.txt beside). Every check runs the model on the host emulation and compares its
outputs with `modelc run-reference` (rtol 1e-3, atol 1e-5, as `modelc verify`).

    check_embed.py prepare --modelc BIN --model M.onnx --work DIR [--multi-io] [-- FLAGS]
        emits M into DIR/<name> (modelc FLAGS), writes seeded inputs (raw and .npy) and the reference
        outputs into DIR/<name>_data, and builds `make emu-so emu-lib`. --multi-io: M is written first,
        a small model of two inputs and three outputs (float32 and int64) with one weight.
    check_embed.py pkgconfig --work DIR --name NAME
        consumer.c built by make through pkg-config (NAME_emu.pc): against lib<name>_emu.so (the folder
        as built) and against lib<name>_emu.a alone (a copy holding only the header, the .pc and the
        archive); consumer.cpp the same way; the C example of the folder's README.md.
    check_embed.py cmake-subdir --work DIR --name NAME
        a C project with add_subdirectory(the folder), -DMODELC_EMULATION=ON: static library.
    check_embed.py cmake-package --work DIR --name NAME
        the folder configured on its own (-DMODELC_EMULATION=ON -DBUILD_SHARED_LIBS=ON), built and
        installed; a C and a C++ program through find_package(NAME), one through the installed .pc,
        the Python module from the prefix (and NAME_dask.py finding the installed library);
        find_package asking for the CUDA variant fails, saying so.
    check_embed.py python --work DIR --name NAME
        python_test.py on the folder's NAME.py and lib<name>_emu.so (MODELC_EMULATION=1).
    check_embed.py cuda --work DIR --name NAME [--nvcc NVCC] [--arch 75]
        with nvcc: `make so lib` and the CMake CUDA variant (static; installed, and by add_subdirectory),
        consumer.c linked through NAME.pc (shared and static), consumer.c and consumer.cpp through
        find_package; without a GPU each must fail at create with code 3 and "no CUDA device" (NAME.py
        too); with one, match the reference. Exit 77 (skipped) without nvcc.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
RTOL, ATOL = 1e-3, 1e-5
JOBS = "2"


def run(cmd, cwd=None, env=None, check=True, what=None):
    """Runs cmd, echoing it and its output; fails the test on a non-zero status when `check`."""
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env)
    out = p.stdout
    lines = out.splitlines()
    if len(lines) > 60:
        out = "\n".join(lines[:20] + ["... (%d lines)" % (len(lines) - 40)] + lines[-20:]) + "\n"
    sys.stdout.write(out)
    print("  (exit %d, %.1f s)" % (p.returncode, time.time() - start), flush=True)
    if check and p.returncode != 0:
        fail("%s exited with %d" % (what or cmd[0], p.returncode))
    return p


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def env_with(**kv):
    e = dict(os.environ)
    e.update(kv)
    return e


def sanitize(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


# ---- prepare ---------------------------------------------------------------------------------------

def write_multi_io(path):
    """Two inputs ('a', 'b.scale'), one weight, three outputs of two dtypes ('sum', 'proj:0', 'class')."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Add", ["a", "b.scale"], ["sum"]),
        helper.make_node("Relu", ["sum"], ["r"]),
        helper.make_node("MatMul", ["r", "W"], ["proj:0"]),
        helper.make_node("ArgMax", ["proj:0"], ["class"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "multi_io",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b.scale", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("proj:0", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("class", TensorProto.INT64, [2])],
        [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def graph_io(model_path):
    import onnx
    from onnx import helper
    g = onnx.load(model_path).graph
    init = {t.name for t in g.initializer}
    ins = []
    for v in g.input:
        if v.name in init:
            continue
        t = v.type.tensor_type
        to_np = getattr(helper, "tensor_dtype_to_np_dtype", None)  # onnx >= 1.13; 1.12: onnx.mapping
        np_type = to_np(t.elem_type) if to_np else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]
        ins.append((v.name, np.dtype(np_type).name,
                    [d.dim_value for d in t.shape.dim]))
    return ins, [v.name for v in g.output]


def prepare(a):
    os.makedirs(a.work, exist_ok=True)
    model = a.model
    if a.multi_io:
        write_multi_io(model)
    name = a.name
    folder = os.path.join(a.work, name)
    data = os.path.join(a.work, name + "_data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    run([a.modelc, model, "-o", folder, "--name", name] + a.flags, what="modelc")
    ins, outs = graph_io(model)
    stem = os.path.splitext(model)[0]
    rng = np.random.default_rng(1)
    ref_args, zero_args = [], []
    for i, (n, dt, shape) in enumerate(ins):
        if len(ins) == 1 and os.path.isfile(stem + ".input.npy"):
            x = np.load(stem + ".input.npy")  # torch's saved input of a shipped model
        elif np.dtype(dt).kind == "f":
            x = rng.uniform(-1, 1, shape).astype(dt)
        else:
            x = rng.integers(0, 10, shape).astype(dt)
        np.save(os.path.join(data, "input_%d.npy" % i), x)
        np.ascontiguousarray(x).tofile(os.path.join(data, "input_%d.bin" % i))
        np.save(os.path.join(data, "zero_%d.npy" % i), np.zeros_like(x))
        ref_args += ["--input", "%s=%s" % (n, os.path.join(data, "input_%d.npy" % i))]
        zero_args += ["--input", "%s=%s" % (n, os.path.join(data, "zero_%d.npy" % i))]
    run([a.modelc, "run-reference", model, "-o", os.path.join(data, "ref")] + ref_args, what="run-reference")
    run([a.modelc, "run-reference", model, "-o", os.path.join(data, "ref_zero")] + zero_args, what="run-reference")
    json.dump({"name": name, "inputs": [n for n, _, _ in ins], "outputs": outs},
              open(os.path.join(data, "meta.json"), "w"), indent=1)
    run(["make", "-C", folder, "-j" + JOBS, "--no-print-directory", "MODELC_WERROR=1", "emu-so", "emu-lib"],
        what="make emu-so emu-lib")
    for f in ("lib%s_emu.so" % name, "lib%s_emu.a" % name):
        if not os.path.isfile(os.path.join(folder, f)):
            fail("make did not build " + f)
    print("OK: %s emitted and built (%d inputs, %d outputs)" % (name, len(ins), len(outs)))


# ---- comparing a consumer's outputs ----------------------------------------------------------------

def load_meta(a):
    data = os.path.join(a.work, a.name + "_data")
    path = os.path.join(data, "meta.json")
    if not os.path.isfile(path):
        fail("%s is missing: run `check_embed.py prepare` first (ctest's fixture does)" % path)
    return data, json.load(open(path))


def compare_outputs(out_dir, data, meta, what):
    """The raw output_<i>.bin a consumer wrote, against the reference .npy files."""
    for i, name in enumerate(meta["outputs"]):
        want = np.load(os.path.join(data, "ref", sanitize(name) + ".npy"))
        path = os.path.join(out_dir, "output_%d.bin" % i)
        if not os.path.isfile(path):
            fail("%s: %s was not written" % (what, path))
        got = np.fromfile(path, dtype=want.dtype)
        if got.size != want.size:
            fail("%s: output '%s' has %d values, the reference %d" % (what, name, got.size, want.size))
        got = got.reshape(want.shape)
        if want.dtype.kind == "f":
            ok = np.allclose(got, want, rtol=RTOL, atol=ATOL)
            diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        else:
            ok = np.array_equal(got, want)
            diff = int(np.sum(got != want))
        if not ok:
            fail("%s: output '%s' differs from the reference (largest difference %g)" % (what, name, diff))
        print("  %s: output '%s' %s%s matches the reference (largest difference %g)"
              % (what, name, want.dtype, list(want.shape), diff))


def run_consumer(binary, data, meta, what, expect_status=0):
    """Runs a consumer on the prepared inputs in a fresh folder and compares what it wrote."""
    out = os.path.join(os.path.dirname(binary), os.path.basename(binary) + "_run")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for i in range(len(meta["inputs"])):
        shutil.copyfile(os.path.join(data, "input_%d.bin" % i), os.path.join(out, "input_%d.bin" % i))
    p = run([binary, out], check=False)
    if p.returncode != expect_status:
        fail("%s: %s exited with %d, expected %d" % (what, binary, p.returncode, expect_status))
    if expect_status == 0:
        if "ok" not in p.stdout.split():
            fail("%s: %s did not print ok" % (what, binary))
        compare_outputs(out, data, meta, what)
    return p


def needed(binary):
    """The shared libraries a binary names (readelf -d)."""
    p = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", p.stdout)


def exported(library):
    """The dynamic symbols a shared library defines (nm -D --defined-only)."""
    p = subprocess.run(["nm", "-D", "--defined-only", library], stdout=subprocess.PIPE, text=True, check=True)
    return sorted(line.split()[-1] for line in p.stdout.splitlines() if line.strip())


def check_exports(library, name):
    syms = exported(library)
    stray = [s for s in syms if not s.startswith(name + "_")]
    if stray:
        fail("%s exports symbols beside the C API (%s.map): %s" % (library, name, ", ".join(stray[:10])))
    for f in ("create", "run", "run_host", "error", "destroy", "num_inputs", "input_shape", "output_dtype",
              "workspace_bytes"):
        if name + "_" + f not in syms:
            fail("%s does not export %s_%s" % (library, name, f))
    print("  %s exports %d symbols, all %s_*" % (os.path.basename(library), len(syms), name))


# ---- pkg-config ------------------------------------------------------------------------------------

def readme_example(folder):
    """The C program the folder's README.md gives (the block after <!-- example.c -->)."""
    text = open(os.path.join(folder, "README.md")).read()
    m = re.search(r"<!-- example\.c -->\s*```c\n(.*?)```", text, re.S)
    if not m:
        fail("README.md has no example.c block")
    return m.group(1)


def pkgconfig(a):
    data, meta = load_meta(a)
    name = a.name
    folder = os.path.abspath(os.path.join(a.work, name))
    out = os.path.join(a.work, name + "_pkgconfig")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    mk = os.path.join(HERE, "pkgconfig.mk")
    pkg = name + "_emu"
    check_exports(os.path.join(folder, "lib%s.so" % pkg), name)

    # 1. The folder as `make emu-so emu-lib` left it: -l finds the shared library first.
    env = env_with(PKG_CONFIG_PATH=folder)
    p = run(["pkg-config", "--cflags", "--libs", pkg], env=env, what="pkg-config")
    if "-DMODELC" in p.stdout:
        fail("%s.pc asks the user to define a macro: %s" % (pkg, p.stdout.strip()))
    shared = os.path.join(out, "shared")
    os.makedirs(shared)
    for target in ("consumer_c", "consumer_cxx"):
        run(["make", "-f", mk, "--no-print-directory", "MODEL=" + name, "PKG=" + pkg, "OUT=" + shared,
             os.path.join(shared, target)], env=env, what="make (pkg-config, shared)")
        lib = "lib%s.so" % pkg
        if lib not in needed(os.path.join(shared, target)):
            fail("%s does not load %s (NEEDED: %s)" % (target, lib, needed(os.path.join(shared, target))))
        run_consumer(os.path.join(shared, target), data, meta, "pkg-config, %s, %s" % (target, lib))

    # 2. The static library alone: a folder with the header, the .pc and the archive only.
    static = os.path.join(out, "static")
    os.makedirs(static)
    for f in (name + ".h", pkg + ".pc", "lib%s.a" % pkg):
        shutil.copyfile(os.path.join(folder, f), os.path.join(static, f))
    env = env_with(PKG_CONFIG_PATH=static)
    for target in ("consumer_c", "consumer_cxx"):
        run(["make", "-f", mk, "--no-print-directory", "MODEL=" + name, "PKG=" + pkg, "OUT=" + static,
             os.path.join(static, target)], env=env, what="make (pkg-config, static)")
        if any(n.startswith("lib" + name) for n in needed(os.path.join(static, target))):
            fail("%s loads a shared library of the model: %s" % (target, needed(os.path.join(static, target))))
        run_consumer(os.path.join(static, target), data, meta, "pkg-config, %s, lib%s.a" % (target, pkg))

    # 3. README.md's example.c, built as README.md says, prints each output's first values.
    example = os.path.join(out, "example.c")
    open(example, "w").write(readme_example(folder))
    env = env_with(PKG_CONFIG_PATH=folder)
    flags = run(["pkg-config", "--cflags", "--libs", pkg], env=env).stdout.split()
    run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", example] + flags + ["-o", os.path.join(out, "example")],
        what="cc example.c")
    p = run([os.path.join(out, "example")], cwd=out, what="README.md's example")
    lines = p.stdout.splitlines()
    if len(lines) != len(meta["outputs"]):
        fail("the example printed %d lines for %d outputs" % (len(lines), len(meta["outputs"])))
    for i, (line, oname) in enumerate(zip(lines, meta["outputs"])):
        want = np.load(os.path.join(data, "ref_zero", sanitize(oname) + ".npy")).reshape(-1)
        head, _, values = line.rpartition(":")
        if head != oname:
            fail("the example's line %d names '%s', output %d is '%s'" % (i, head, i, oname))
        if want.dtype == np.float32:
            got = np.array([float(x) for x in values.split()], dtype=np.float64)
            if got.size != min(4, want.size) or not np.allclose(got, want[:got.size], rtol=1e-4, atol=ATOL):
                fail("the example printed %s for '%s'; the reference on zeros starts %s" % (values, oname, want[:4]))
        elif values.split() != [str(want.nbytes), "bytes"]:
            fail("the example printed '%s' for '%s', expected '%d bytes'" % (values, oname, want.nbytes))
    print("  README.md's example.c: %d outputs match the reference on zero inputs" % len(lines))
    print("OK: pkg-config (shared and static, C and C++) and README.md's example")


# ---- CMake -----------------------------------------------------------------------------------------

def cmake_subdir(a):
    data, meta = load_meta(a)
    name = a.name
    folder = os.path.abspath(os.path.join(a.work, name))
    build = os.path.join(a.work, name + "_cmake_subdir")
    shutil.rmtree(build, ignore_errors=True)
    run(["cmake", "-S", os.path.join(HERE, "cmake_subdir"), "-B", build, "-DMODEL=" + name, "-DMODEL_DIR=" + folder,
         "-DMODELC_EMULATION=ON"], what="cmake (configure)")
    run(["cmake", "--build", build, "-j", JOBS], what="cmake --build")
    lib = os.path.join(build, "model", "lib%s_emu.a" % name)
    if not os.path.isfile(lib):
        fail("add_subdirectory did not build %s" % lib)
    binary = os.path.join(build, "consumer_c")
    if any(n.startswith("lib" + name) for n in needed(binary)):
        fail("consumer_c loads a shared library of the model: %s" % needed(binary))
    run_consumer(binary, data, meta, "CMake add_subdirectory, C, lib%s_emu.a" % name)
    print("OK: CMake add_subdirectory (static, emulated) from a C project")


def cmake_package(a):
    data, meta = load_meta(a)
    name = a.name
    folder = os.path.abspath(os.path.join(a.work, name))
    build = os.path.join(a.work, name + "_cmake_package_build")
    prefix = os.path.join(a.work, name + "_prefix")
    consumer = os.path.join(a.work, name + "_cmake_package_consumer")
    for d in (build, prefix, consumer):
        shutil.rmtree(d, ignore_errors=True)
    run(["cmake", "-S", folder, "-B", build, "-DMODELC_EMULATION=ON", "-DBUILD_SHARED_LIBS=ON"],
        what="cmake (configure the model)")
    run(["cmake", "--build", build, "-j", JOBS], what="cmake --build (the model)")
    run(["cmake", "--install", build, "--prefix", prefix], what="cmake --install")
    libdir = None
    for cand in ("lib", "lib64"):
        if os.path.isdir(os.path.join(prefix, cand, "cmake", name)):
            libdir = os.path.join(prefix, cand)
    if not libdir:
        fail("no lib/cmake/%s under %s" % (name, prefix))
    for f in ("include/%s.h" % name, os.path.relpath(libdir, prefix) + "/lib%s_emu.so" % name,
              os.path.relpath(libdir, prefix) + "/pkgconfig/%s_emu.pc" % name,
              os.path.relpath(libdir, prefix) + "/%s.py" % name):
        if not os.path.isfile(os.path.join(prefix, f)):
            fail("the install lacks %s" % f)
    check_exports(os.path.join(libdir, "lib%s_emu.so" % name), name)

    # find_package: whichever variant is installed (the emulated one), then C and C++ programs.
    p = run(["cmake", "-S", os.path.join(HERE, "cmake_package"), "-B", consumer, "-DMODEL=" + name,
             "-DCMAKE_PREFIX_PATH=" + prefix], what="cmake (configure the consumer)")
    if "%s_EMULATION=ON" % name not in p.stdout:
        fail("find_package(%s) did not report the emulated variant" % name)
    run(["cmake", "--build", consumer, "-j", JOBS], what="cmake --build (the consumer)")
    for target in ("consumer_c", "consumer_cxx"):
        binary = os.path.join(consumer, target)
        if "lib%s_emu.so" % name not in needed(binary):
            fail("%s does not load lib%s_emu.so: %s" % (target, name, needed(binary)))
        run_consumer(binary, data, meta, "CMake find_package, %s, lib%s_emu.so" % (target, name))

    # Asking for the variant that is not installed is an error that says so.
    bad = consumer + "_cuda"
    shutil.rmtree(bad, ignore_errors=True)
    p = run(["cmake", "-S", os.path.join(HERE, "cmake_package"), "-B", bad, "-DMODEL=" + name,
             "-DCMAKE_PREFIX_PATH=" + prefix, "-DMODELC_EMULATION=OFF"], check=False)
    if p.returncode == 0 or "the CUDA variant (MODELC_EMULATION is OFF) is not installed" not in " ".join(p.stdout.split()):
        fail("find_package(%s) with MODELC_EMULATION=OFF and only the emulation installed: expected an error "
             "naming the missing CUDA variant" % name)

    # The installed .pc file, from a folder of its own.
    pcdir = os.path.join(consumer, "pkgconfig")
    os.makedirs(pcdir)
    run(["make", "-f", os.path.join(HERE, "pkgconfig.mk"), "--no-print-directory", "MODEL=" + name,
         "PKG=%s_emu" % name, "OUT=" + pcdir, os.path.join(pcdir, "consumer_c")],
        env=env_with(PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig")), what="make (installed .pc)")
    run_consumer(os.path.join(pcdir, "consumer_c"), data, meta, "installed %s_emu.pc, C" % name)

    # The Python module installed beside the shared library.
    pyout = os.path.join(pcdir, "python")
    os.makedirs(pyout)
    code = ("import numpy as np, %s as m\n"
            "x = [np.load(%r %% i) for i in range(%d)]\n"
            "r = m.Model().run(x)\n"
            "for i, k in enumerate(r): r[k].tofile(%r %% i)\n"
            "print(m.__file__)\n" % (name, os.path.join(data, "input_%d.npy"), len(meta["inputs"]),
                                     os.path.join(pyout, "output_%d.bin")))
    p = run([sys.executable, "-c", code], cwd=pcdir, env=env_with(PYTHONPATH=libdir, MODELC_EMULATION="1",
                                                                  PYTHONDONTWRITEBYTECODE="1"),
            what="python3 (installed module)")
    if os.path.dirname(p.stdout.split()[-1]) != libdir:
        fail("python imported %s, not the installed module in %s" % (p.stdout.split()[-1], libdir))
    compare_outputs(pyout, data, meta, "installed %s.py" % name)
    # Its Dask module beside it, which finds the installed library (ModelPlugin reads it to send it).
    code = "import %s_dask as d; p = d.ModelPlugin(); print(sorted(p.files))" % name
    p = run([sys.executable, "-c", code], cwd=pcdir, env=env_with(PYTHONPATH=libdir, MODELC_EMULATION="1",
                                                                  PYTHONDONTWRITEBYTECODE="1"),
            what="python3 (installed %s_dask.py)" % name)
    if "'lib%s_emu.so'" % name not in p.stdout:
        fail("the installed %s_dask.py does not find lib%s_emu.so beside it" % (name, name))
    print("OK: CMake install + find_package (shared, emulated), C and C++; installed .pc; installed Python modules")


# ---- Python ----------------------------------------------------------------------------------------

def python(a):
    data, meta = load_meta(a)
    folder = os.path.abspath(os.path.join(a.work, a.name))
    run([sys.executable, os.path.join(HERE, "python_test.py"), "--module", a.name, "--folder", folder, "--data", data],
        env=env_with(MODELC_EMULATION="1", PYTHONDONTWRITEBYTECODE="1"), what="python_test.py")


# ---- CUDA (nvcc, no GPU needed) --------------------------------------------------------------------

def gpu_present():
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode == 0


def cuda(a):
    nvcc = a.nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.isfile(nvcc):
        print("SKIPPED: no nvcc")
        sys.exit(SKIP)
    data, meta = load_meta(a)
    name = a.name
    folder = os.path.abspath(os.path.join(a.work, name))
    gpu = gpu_present()
    status = 0 if gpu else 3  # consumer.c exits with create's code: 3, no device
    arch = a.arch

    def expect(p, what):
        if not gpu and "no CUDA device" not in p.stdout:
            fail("%s: create failed without saying 'no CUDA device'" % what)

    run(["make", "-C", folder, "-j" + JOBS, "--no-print-directory", "MODELC_WERROR=1", "NVCC=" + nvcc,
         "ARCHS=" + arch, "so", "lib"], what="make so lib")
    check_exports(os.path.join(folder, "lib%s.so" % name), name)
    if any("cudart" in n for n in needed(os.path.join(folder, "lib%s.so" % name))):
        fail("lib%s.so loads the CUDA runtime: it should be linked in statically" % name)
    out = os.path.join(a.work, name + "_cuda")
    shutil.rmtree(out, ignore_errors=True)
    mk = os.path.join(HERE, "pkgconfig.mk")
    cudaroot = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    define = "--define-variable=cudaroot=" + cudaroot
    for kind, pcdir in (("shared", folder), ("static", os.path.join(out, "static_pc"))):
        d = os.path.join(out, kind)
        os.makedirs(d)
        if kind == "static":
            os.makedirs(pcdir)
            for f in (name + ".h", name + ".pc", "lib%s.a" % name):
                shutil.copyfile(os.path.join(folder, f), os.path.join(pcdir, f))
        env = env_with(PKG_CONFIG_PATH=pcdir, PKG_CONFIG="pkg-config " + define)
        flags = run(["pkg-config", define, "--cflags", "--libs", name], env=env).stdout.split()
        run(["cc", "-std=c99", "-pedantic-errors", "-Wall", "-Wextra", "-Werror", "-DMODEL=" + name,
             os.path.join(HERE, "consumer.c")] + flags + ["-o", os.path.join(d, "consumer_c")],
            what="cc consumer.c (%s.pc, %s)" % (name, kind))
        p = run_consumer(os.path.join(d, "consumer_c"), data, meta, "CUDA %s library" % kind, status)
        expect(p, "CUDA %s library" % kind)

    # NAME.py on lib<name>.so.
    p = run([sys.executable, "-c", "import %s as m\ntry:\n  m.Model()\n  print('created')\n"
             "except m.Error as e:\n  print('code', e.code, e)\n" % name], cwd=folder,
            env=env_with(MODELC_EMULATION="0", PYTHONDONTWRITEBYTECODE="1"))
    if not gpu and ("code 3" not in p.stdout or "no CUDA device" not in p.stdout):
        fail("%s.Model() on lib%s.so without a GPU: expected Error code 3 'no CUDA device'" % (name, name))

    # CMake, the CUDA variant: build, install, find_package from C and C++.
    build = os.path.join(out, "cmake_build")
    prefix = os.path.join(out, "prefix")
    consumer = os.path.join(out, "cmake_consumer")
    run(["cmake", "-S", folder, "-B", build, "-DCMAKE_CUDA_COMPILER=" + nvcc, "-D%s_CUDA_ARCHS=%s" % (name, arch)],
        what="cmake (CUDA variant)")
    run(["cmake", "--build", build, "-j", JOBS], what="cmake --build (CUDA variant)")
    run(["cmake", "--install", build, "--prefix", prefix], what="cmake --install (CUDA variant)")
    p = run(["cmake", "-S", os.path.join(HERE, "cmake_package"), "-B", consumer, "-DMODEL=" + name,
             "-DCMAKE_PREFIX_PATH=" + prefix], what="cmake (consumer of the CUDA variant)")
    if "%s_EMULATION=OFF" % name not in p.stdout:
        fail("find_package(%s) did not report the CUDA variant" % name)
    run(["cmake", "--build", consumer, "-j", JOBS], what="cmake --build (consumer of the CUDA variant)")
    for target in ("consumer_c", "consumer_cxx"):
        p = run_consumer(os.path.join(consumer, target), data, meta, "CMake CUDA variant, " + target, status)
        expect(p, "CMake CUDA variant, " + target)
    # add_subdirectory from a C project (CUDA enabled in the model's folder only).
    subdir = os.path.join(out, "cmake_subdir")
    run(["cmake", "-S", os.path.join(HERE, "cmake_subdir"), "-B", subdir, "-DMODEL=" + name, "-DMODEL_DIR=" + folder,
         "-DCMAKE_CUDA_COMPILER=" + nvcc, "-D%s_CUDA_ARCHS=%s" % (name, arch)], what="cmake (CUDA, add_subdirectory)")
    run(["cmake", "--build", subdir, "-j", JOBS], what="cmake --build (CUDA, add_subdirectory)")
    p = run_consumer(os.path.join(subdir, "consumer_c"), data, meta, "CMake CUDA add_subdirectory", status)
    expect(p, "CMake CUDA add_subdirectory")
    print("OK: CUDA libraries (make so/lib, CMake) link from C and C++%s" %
          ("" if gpu else "; without a GPU each says 'no CUDA device' (code 3)"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for cmd in ("prepare", "pkgconfig", "cmake-subdir", "cmake-package", "python", "cuda"):
        s = sub.add_parser(cmd)
        s.add_argument("--work", required=True)
        s.add_argument("--name", required=True)
        if cmd == "prepare":
            s.add_argument("--modelc", required=True)
            s.add_argument("--model", required=True)
            s.add_argument("--multi-io", action="store_true")
            s.add_argument("flags", nargs="*")
        if cmd == "cuda":
            s.add_argument("--nvcc")
            s.add_argument("--arch", default="75")
    a = p.parse_args()
    a.work = os.path.abspath(a.work)
    {"prepare": prepare, "pkgconfig": pkgconfig, "cmake-subdir": cmake_subdir, "cmake-package": cmake_package,
     "python": python, "cuda": cuda}[a.command](a)


if __name__ == "__main__":
    main()
