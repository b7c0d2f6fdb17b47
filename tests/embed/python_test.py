#!/usr/bin/python3
"""The emitted NAME.py on the host emulation (check_embed.py python; MODELC_EMULATION=1).

    python_test.py --module NAME --folder DIR --data DATA

DIR is the emitted folder (NAME.py, libNAME_emu.so built), DATA what `check_embed.py prepare` wrote
(input_<i>.npy, ref/<output>.npy, meta.json). Checks, each printed as it passes:
  - numpy in, numpy out against the reference: m(x), m.run({name: x}), m.run([x]), out=, lists,
    Fortran-ordered arrays, torch CPU tensors, a host DLPack tensor; several threads on one Model
  - errors: wrong dtype, wrong shape, missing / unknown / extra inputs, bad out=, a closed Model, a
    missing library, a bad MODELC_EMULATION, create on a device that does not exist (the C API's message)
  - the device path (NAME_run by pointer; on the emulation device memory is host memory, so numpy
    memory serves): fake tensors exposing __cuda_array_interface__ (v2, v3 with a stream) and DLPack
    capsules (legacy and versioned, each released exactly once), against the reference; what it refuses
    (not contiguous, another device, read-only out, host and device mixed, no out= to allocate with,
    a stream mismatch)
  - the extraction itself on real producers: numpy and torch CPU tensors through DLPack (pointer,
    shape, strides, dtype, the capsule renamed used_dltensor), stream handles, contiguity
  - `python3 NAME.py FILES -o DIR` writes the reference outputs
  - with a second model file (--weights-file): the weights found beside the library, weights=
"""

import argparse
import ctypes
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

RTOL, ATOL = 1e-3, 1e-5
passed = 0


def ok(what):
    global passed
    passed += 1
    print("ok: " + what, flush=True)


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(cond, message):
    if not cond:
        fail(message)


def raises(exc, fn, *contains):
    """fn() must raise exc with every string of `contains` in its message; returns the exception."""
    try:
        fn()
    except exc as e:
        for c in contains:
            if c not in str(e):
                fail("%s raised %s(%r), which lacks %r" % (fn, type(e).__name__, str(e), c))
        return e
    except Exception as e:  # noqa: BLE001: any other exception fails the check
        fail("%s raised %s(%r), expected %s" % (fn, type(e).__name__, str(e), exc.__name__))
    fail("%s raised nothing, expected %s" % (fn, exc.__name__))


def sanitize(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def same(got, want, what):
    got = np.asarray(got)
    check(got.dtype == want.dtype and got.shape == want.shape,
          "%s: %s%s, the reference %s%s" % (what, got.dtype, got.shape, want.dtype, want.shape))
    if want.dtype.kind == "f":
        good = np.allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        good = np.array_equal(got, want)
    check(good, "%s differs from the reference (largest difference %g)"
          % (what, float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0))


# ---- fake device tensors: numpy memory, which the emulation's NAME_run reads as device memory --------

class FakeCAI(object):
    """A device array through __cuda_array_interface__ (its memory a numpy array's)."""

    def __init__(self, arr, version=3, stream=None, strides=None, readonly=False, mask=None, typestr=None):
        self.arr = arr
        d = {"shape": arr.shape, "typestr": typestr or arr.dtype.str, "data": (arr.ctypes.data, readonly),
             "version": version, "strides": strides}
        if version >= 3:
            d["stream"] = stream
        if mask is not None:
            d["mask"] = mask
        self.__cuda_array_interface__ = d


_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_DL_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}


class FakeDLPack(object):
    """A tensor through DLPack (legacy, or versioned when asked with max_version), on `device`
    ((2, 0): CUDA device 0). Counts the capsules made and the deleter calls, and records the streams."""

    def __init__(self, mod, arr, device=(2, 0), versioned=False, readonly=False, strides=None):
        self.mod, self.arr, self.device = mod, arr, device
        self.versioned, self.readonly, self.strides = versioned, readonly, strides
        self.made = 0
        self.deleted = 0
        self.streams = []
        self._keep = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        self.streams.append(stream)
        mod = self.mod
        versioned = self.versioned and max_version is not None and max_version[0] >= 1
        mt = mod._DLManagedTensorVersioned() if versioned else mod._DLManagedTensor()
        t = mt.dl_tensor
        t.data = self.arr.ctypes.data
        t.device = mod._DLDevice(*self.device)
        t.ndim = self.arr.ndim
        t.dtype = mod._DLDataType(_DL_CODES[self.arr.dtype.kind], self.arr.dtype.itemsize * 8, 1)
        shape = (ctypes.c_int64 * max(1, self.arr.ndim))(*self.arr.shape)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * max(1, self.arr.ndim))(*self.strides)
            t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0
        fn_type = dict(type(mt)._fields_)["deleter"]

        def deleter(_):
            self.deleted += 1

        cb = fn_type(deleter)
        mt.deleter = cb
        if versioned:
            mt.version = mod._DLPackVersion(1, 0)
            mt.flags = 1 if self.readonly else 0
        self._keep.append((mt, shape, strides, cb))
        self.made += 1
        return _new_capsule(ctypes.addressof(mt), _NAME_V if versioned else _NAME, None)


class LegacyOnly(FakeDLPack):
    """A producer before DLPack 1.0: __dlpack__ takes no max_version."""

    def __dlpack__(self, stream=None):
        return FakeDLPack.__dlpack__(self, stream)


# ---- the checks ------------------------------------------------------------------------------------

def host_checks(mod, m, xs, refs, meta):
    outs = meta["outputs"]
    single = len(outs) == 1

    def results_of(r):
        return [r] if single else list(r)

    for got, want, name in zip(results_of(m(*xs)), refs, outs):
        same(got, want, "m(x) output '%s'" % name)
        check(isinstance(got, np.ndarray), "m(x) returned %s, not a numpy array" % type(got).__name__)
    ok("m(*inputs) returns %s matching the reference" % ("an array" if single else "a tuple of %d arrays" % len(outs)))
    r = m.run({n: x for n, x in zip(meta["inputs"], xs)})
    check(list(r) == outs, "run() keys %s, outputs %s" % (list(r), outs))
    for name, want in zip(outs, refs):
        same(r[name], want, "m.run(dict)['%s']" % name)
    ok("m.run({name: x}) returns {output name: array}")
    for got, want in zip(m.run(list(xs)).values(), refs):
        same(got, want, "m.run(list)")
    ok("m.run([x, ...]) takes the inputs in order")
    if single:
        r = m(**{meta["inputs"][0]: xs[0]}) if meta["inputs"][0].isidentifier() else m(xs[0])
        same(r, refs[0], "m(name=x)")
    # out=: written in place, the same objects returned.
    bufs = [np.full(w.shape, -7, dtype=w.dtype) for w in refs]
    r = m.run(xs, out=bufs)
    for b, got, want in zip(bufs, r.values(), refs):
        check(got is b, "out= arrays are not the ones returned")
        same(b, want, "out=")
    ok("out= numpy arrays are written and returned")
    # Lists (converted to the input's dtype), Fortran order (copied), torch CPU tensors, host DLPack.
    same(results_of(m(*[x.tolist() for x in xs]))[0], refs[0], "lists")
    same(results_of(m(*[np.asfortranarray(x) for x in xs]))[0], refs[0], "Fortran-ordered arrays")
    ok("lists and non-contiguous arrays are taken (converted, copied)")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        same(results_of(m(*[torch.from_numpy(x.copy()) for x in xs]))[0], refs[0], "torch CPU tensors")
        if all(x.dtype.kind == "f" for x in xs):
            raises(mod.InputError, lambda: m(*[torch.ones(x.shape, requires_grad=True) for x in xs]), "cannot read")
        ok("torch CPU tensors are taken (host path)")
    fakes = [LegacyOnly(mod, np.ascontiguousarray(x), device=(1, 0)) for x in xs]
    same(results_of(m(*fakes))[0], refs[0], "a host DLPack tensor")
    ok("a DLPack tensor in host memory (kDLCPU) takes the host path")

    # Several threads on one Model: runs wait for each other, every result right.
    errors = []

    def worker():
        try:
            for _ in range(3):
                for got, want in zip(m.run(xs).values(), refs):
                    same(got, want, "a thread's run")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors and not any(t.is_alive() for t in threads), "threads: %s" % errors)
    ok("4 threads x 3 runs on one Model")
    m2 = mod.Model()
    same(results_of(m2(*xs))[0], refs[0], "a second Model")
    same(results_of(m(*xs))[0], refs[0], "the first Model after the second was created")
    m2.close()
    ok("two Models in one process")
    # One batch profile: m.batches is the compiled batch, no tensor carries a batch of its own, and
    # run_batch runs that batch only (the batch profiles' own run: tests/embed/dask_test.py).
    check(len(m.batches) == 1 and not any(m.input_batched) and not any(m.output_batched),
          "one profile: batches %s, batched %s %s" % (m.batches, m.input_batched, m.output_batched))
    got = m.run_batch(m.batches[0], xs)
    for name, r in zip(meta["outputs"], refs):
        same(got[name], r, "run_batch(%d) output '%s'" % (m.batches[0], name))
    raises(mod.InputError, lambda: m.run_batch(m.batches[0] + 1, xs), "runs batch %d" % m.batches[0])
    raises(mod.InputError, lambda: m.run_batch(0, xs), "batch 0")
    ok("batches %s; run_batch at the compiled batch, InputError for another" % (m.batches,))


def error_checks(mod, m, xs, meta, folder):
    t0 = m.inputs[0]
    x0 = xs[0]
    wrong = x0.astype(np.float64 if x0.dtype != np.float64 else np.float32)
    e = raises(mod.DtypeError, lambda: m(wrong, *xs[1:]), "input '%s'" % t0.name, str(t0),
               mod.type_text(wrong.dtype.name, wrong.shape))
    check(isinstance(e, TypeError) and isinstance(e, ValueError) and isinstance(e, mod.Error),
          "DtypeError is not a TypeError, ValueError and Error")
    ok("wrong dtype: DtypeError naming the input and both types (%s)" % e)
    bad_shape = np.zeros(tuple(d + 1 for d in x0.shape) or (2,), dtype=x0.dtype)
    e = raises(mod.InputError, lambda: m(bad_shape, *xs[1:]), "input '%s'" % t0.name, "exact shape")
    check(not isinstance(e, TypeError), "a wrong shape raised a DtypeError")
    ok("wrong shape: InputError (%s)" % e)
    if len(xs) > 1:
        raises(mod.InputError, lambda: m(xs[0]), "input '%s'" % m.inputs[1].name, "is missing")
    raises(mod.InputError, lambda: m.run({}), "input '%s'" % t0.name, "is missing")
    raises(mod.InputError, lambda: m.run(dict({"no such input": x0}, **{n: x for n, x in zip(meta["inputs"], xs)})),
           "'no such input' is not an input")
    raises(mod.InputError, lambda: m(*(list(xs) + [x0])), "takes %d input" % len(xs))
    raises(mod.InputError, lambda: m.run(5), "run() takes a dict")
    ok("missing, unknown and extra inputs: InputError naming them")
    w0 = np.empty(m.outputs[0].shape, dtype=m.outputs[0].numpy_dtype)
    bad_out = [np.empty(w.shape, dtype=np.float64 if w.dtype == np.float32 else np.float32) for w in
               [np.empty(t.shape, t.numpy_dtype) for t in m.outputs]]
    raises(mod.DtypeError, lambda: m.run(xs, out=bad_out), "output '%s'" % m.outputs[0].name)
    if w0.ndim >= 2 and w0.shape[0] > 1 and w0.shape[1] > 1:
        nc = np.empty(w0.shape[::-1], dtype=w0.dtype).T
        raises(mod.InputError, lambda: m.run(xs, out={m.outputs[0].name: nc}), "C-contiguous")
    raises(mod.InputError, lambda: m.run(xs, out={"nope": w0}), "'nope', which is not an output")
    ok("bad out=: wrong dtype, not contiguous, unknown name")

    # The C API's own messages: create on a device that does not exist, a failing run.
    e = raises(mod.Error, lambda: mod.Model(device=3), "device 3 does not exist")
    check(e.code == 2, "create on device 3: code %s, expected 2" % e.code)
    ok("create on a missing device: Error code 2 with the C API's message (%s)" % e)
    rc = m._api["run_host"](m._ctx, None, None)
    check(rc == 2, "run_host with null arrays returned %d" % rc)
    e = raises(mod.Error, lambda: m._fail("run_host", rc), "the inputs array is null")
    check(e.code == 2, "the run failure's code is %s" % e.code)
    ok("a failing C call raises Error with its code and NAME_error's message")

    with mod.Model() as m3:
        pass
    raises(mod.Error, lambda: m3(*xs), "closed")
    ok("a closed Model raises Error")

    # The library: beside the module; MODELC_EMULATION; a copy of NAME.py with no library beside it.
    check(mod.library_path().endswith("lib%s_emu.so" % meta["name"]), "library_path(): %s" % mod.library_path())
    check(mod.library_path(emulation=False).endswith("lib%s.so" % meta["name"]), "library_path(False)")
    saved = os.environ.get("MODELC_EMULATION")
    try:
        os.environ["MODELC_EMULATION"] = "maybe"
        raises(mod.Error, mod.Model, "MODELC_EMULATION='maybe'")
    finally:
        os.environ["MODELC_EMULATION"] = saved
    tmp = tempfile.mkdtemp()
    try:
        shutil.copyfile(os.path.join(folder, meta["name"] + ".py"), os.path.join(tmp, meta["name"] + ".py"))
        p = subprocess.run([sys.executable, "-c", "import %s as m\ntry:\n  m.Model()\nexcept m.Error as e:\n  print(e)\n"
                            % meta["name"]], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        check("does not exist" in p.stdout and "make emu-so" in p.stdout,
              "NAME.py without a library beside it: %r" % p.stdout)
    finally:
        shutil.rmtree(tmp)
    raises(mod.Error, lambda: mod.Model(library=os.path.join(folder, "nope.so")), "does not exist")
    ok("a missing library or a bad MODELC_EMULATION: Error saying what to build or set")


def device_checks(mod, m, xs, refs, meta):
    """NAME_run by pointer. The emulation's device memory is host memory: numpy arrays play it."""
    outs_np = lambda: [np.full(t.shape, -7, dtype=t.numpy_dtype) for t in m.outputs]

    # __cuda_array_interface__ (v3 without a stream, v2), out= given (these fakes have no framework).
    for version in (3, 2):
        bufs = outs_np()
        r = m.run([FakeCAI(np.ascontiguousarray(x), version) for x in xs], out=[FakeCAI(b, version) for b in bufs])
        for b, want in zip(bufs, refs):
            same(b, want, "a __cuda_array_interface__ v%d output" % version)
        check(all(isinstance(v, FakeCAI) for v in r.values()), "the device path did not return the out= objects")
    ok("__cuda_array_interface__ (v3, v2) inputs and outputs by pointer match the reference")

    # DLPack: legacy and versioned capsules, each consumed once and released once.
    for cls, versioned in ((LegacyOnly, False), (FakeDLPack, True)):
        ins = [cls(mod, np.ascontiguousarray(x), versioned=versioned) for x in xs]
        bufs = outs_np()
        outs = [cls(mod, b, versioned=versioned) for b in bufs]
        m.run(ins, out=outs)
        for b, want in zip(bufs, refs):
            same(b, want, "a DLPack output (%s)" % ("versioned" if versioned else "legacy"))
        for f in ins + outs:
            check(f.made == 1 and f.deleted == 1, "a DLPack tensor was exported %d times and released %d times"
                  % (f.made, f.deleted))
            check(f.streams == [1], "__dlpack__ was asked for streams %s; the run is on the legacy default "
                  "stream (DLPack's 1)" % f.streams)
    ok("DLPack inputs and outputs (legacy and 1.0 capsules) match the reference; each capsule released once, "
       "exported for stream 1")
    mixed_out = [FakeCAI(b) for b in outs_np()]
    m.run([FakeDLPack(mod, np.ascontiguousarray(x)) for x in xs], out=mixed_out)
    for f, want in zip(mixed_out, refs):
        same(f.arr, want, "DLPack inputs with __cuda_array_interface__ outputs")
    ok("DLPack and __cuda_array_interface__ tensors in one run")

    # What the device path refuses, before anything runs.
    dev_in = [FakeCAI(np.ascontiguousarray(x)) for x in xs]
    x0 = xs[0]
    raises(mod.InputError, lambda: m.run(dev_in), "pass out=")
    if x0.ndim >= 2 and x0.shape[0] > 1 and x0.shape[1] > 1:
        t = np.ascontiguousarray(x0.T)  # the same values, transposed in memory
        strides = [t.strides[1], t.strides[0]] + list(t.strides[2:])
        fake = FakeCAI(t, strides=strides)
        fake.__cuda_array_interface__["shape"] = x0.shape
        raises(mod.InputError, lambda: m.run([fake] + dev_in[1:], out=[FakeCAI(b) for b in outs_np()]),
               "not contiguous")
        fake = FakeDLPack(mod, t.T, strides=[s // t.itemsize for s in strides])  # t.T: shape as x0
        raises(mod.InputError, lambda: m.run([fake] + dev_in[1:], out=[FakeCAI(b) for b in outs_np()]),
               "not contiguous")
        check(fake.deleted == fake.made == 1, "a refused DLPack tensor was not released")
    raises(mod.InputError, lambda: m.run([FakeDLPack(mod, np.ascontiguousarray(x), device=(2, 1)) for x in xs],
                                         out=[FakeCAI(b) for b in outs_np()]), "on device 1")
    raises(mod.InputError, lambda: m.run(dev_in, out=[FakeDLPack(mod, b, versioned=True, readonly=True)
                                                      for b in outs_np()]), "read-only")
    raises(mod.DtypeError, lambda: m.run([FakeCAI(np.ascontiguousarray(x).astype(np.float64)) for x in xs[:1]] +
                                         dev_in[1:], out=[FakeCAI(b) for b in outs_np()]), "input '%s'" % m.inputs[0].name)
    raises(mod.InputError, lambda: m.run([FakeCAI(np.ascontiguousarray(x), mask=np.ones(1)) for x in xs],
                                         out=[FakeCAI(b) for b in outs_np()]), "mask")
    raises(mod.InputError, lambda: m.run([FakeCAI(np.ascontiguousarray(x), stream=0) for x in xs],
                                         out=[FakeCAI(b) for b in outs_np()]), "stream 0")
    raises(mod.InputError, lambda: m.run([FakeCAI(np.ascontiguousarray(x), stream=0x5000) for x in xs],
                                         out=[FakeCAI(b) for b in outs_np()], stream=0), "ready on stream 20480")
    class Refusing(FakeDLPack):  # as torch refuses a tensor that requires grad
        def __dlpack__(self, stream=None, max_version=None):
            raise RuntimeError("Can't export tensors that require gradient")
    raises(mod.InputError, lambda: m.run([Refusing(mod, np.ascontiguousarray(x)) for x in xs],
                                         out=[FakeCAI(b) for b in outs_np()]),
           "input '%s'" % m.inputs[0].name, "require gradient")
    if len(xs) > 1:
        raises(mod.InputError, lambda: m.run([xs[0]] + dev_in[1:], out=[FakeCAI(b) for b in outs_np()]),
               "host memory", "device memory")
    ok("the device path refuses non-contiguous, other-device, read-only, wrong-dtype, masked, stream-mismatched "
       "and unexportable tensors and asks for out= where it cannot allocate")


def extraction_checks(mod):
    """The DLPack and stream readers on real producers (numpy, torch on the CPU) and on fakes."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    c = a.__dlpack__()
    v = mod.capsule_view(c, owner=a)
    check(_is_valid(c, b"used_dltensor") == 1, "the capsule was not renamed used_dltensor")
    check(v.ptr == a.ctypes.data and v.shape == (2, 3, 4) and v.dtype == "float32" and v.device == "host",
          "numpy through DLPack: %r" % v)
    check(v.is_c_contiguous(), "a C-contiguous numpy array reads as not contiguous: %r" % v)
    v.release()
    v.release()  # idempotent
    b = a[:, 1:, ::2]
    v = mod.dlpack_view(b)
    check(v.ptr == b.ctypes.data and v.shape == b.shape and v.strides == tuple(s // 4 for s in b.strides),
          "a numpy slice through DLPack: %r (strides %s)" % (v, b.strides))
    check(not v.is_c_contiguous(), "a strided slice reads as contiguous")
    v.release()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = torch.arange(12, dtype=torch.float16).reshape(3, 4).t()
        v = mod.dlpack_view(t)
        check(v.ptr == t.data_ptr() and v.shape == (4, 3) and v.strides == tuple(t.stride()) and v.dtype == "float16",
              "a transposed torch tensor: %r" % v)
        check(not v.is_c_contiguous(), "a transposed torch tensor reads as contiguous")
        v.release()
        t = torch.ones(2, 5, dtype=torch.bfloat16)[:, 1:]
        v = mod.dlpack_view(t)
        check(v.dtype == "bfloat16" and v.ptr == t.data_ptr() and v.shape == (2, 4) and v.strides == (5, 1),
              "a bfloat16 torch slice: %r" % v)
        v.release()
        t = torch.arange(6, dtype=torch.int64)
        check(mod.dlpack_view(t).dtype == "int64", "int64 torch tensor")
        ok("DLPack views of numpy and torch CPU tensors: pointer, shape, strides, dtype; capsule renamed")
    # Contiguity: size-1 dimensions may have any stride; empty tensors are contiguous.
    check(mod._c_contiguous((2, 1, 3), (3, 99, 1)) and mod._c_contiguous((0, 5), (1, 1)) and
          not mod._c_contiguous((2, 3), (1, 2)) and mod._c_contiguous((4,), None), "_c_contiguous")
    # Streams: ints, torch's .cuda_stream, CuPy's .ptr, __cuda_stream__.
    S = type("S", (), {})
    s1, s2, s3 = S(), S(), S()
    s1.cuda_stream = 11
    s2.ptr = 12
    s3.__cuda_stream__ = lambda: (0, 13)
    check([mod.stream_handle(x) for x in (None, 7, s1, s2, s3)] == [None, 7, 11, 12, 13], "stream_handle")
    raises(TypeError, lambda: mod.stream_handle("fast"), "stream=")
    check(mod.choose_stream(None, []) == 0 and mod.choose_stream(None, [("x", 9), ("y", None)]) == 9 and
          mod.choose_stream(5, [("x", None)]) == 5 and mod.choose_stream(0, [("x", 1)]) == 0,
          "choose_stream")
    raises(mod.InputError, lambda: mod.choose_stream(None, [("x", 9), ("y", 10)]), "input 'y' is ready on stream 10")
    ok("contiguity, stream handles and the run's stream")
    # Capsules the reader refuses: a non-capsule; an unknown device; a vector dtype.
    raises(mod.InputError, lambda: mod.capsule_view(object()), "not a DLPack capsule")
    f = FakeDLPack(mod, np.zeros(3, np.float32), device=(4, 0))
    raises(mod.InputError, lambda: mod.dlpack_view(f), "OpenCL device")
    check(f.deleted == 1, "a refused capsule was not released")
    raises(mod.DtypeError, lambda: mod._dlpack_dtype(2, 32, 4), "4 lanes")
    raises(mod.DtypeError, lambda: mod._dlpack_dtype(5, 64, 1), "not a model dtype")
    ok("refused capsules: not a capsule, an OpenCL device, vector and complex dtypes")


def cli_checks(meta, folder, data):
    out = tempfile.mkdtemp()
    try:
        files = [os.path.join(data, "input_%d.npy" % i) for i in range(len(meta["inputs"]))]
        p = subprocess.run([sys.executable, os.path.join(folder, meta["name"] + ".py")] + files + ["-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(p.returncode == 0, "python3 NAME.py exited with %d: %s" % (p.returncode, p.stdout))
        for name in meta["outputs"]:
            same(np.load(os.path.join(out, sanitize(name) + ".npy")),
                 np.load(os.path.join(data, "ref", sanitize(name) + ".npy")), "python3 NAME.py -o: '%s'" % name)
        p = subprocess.run([sys.executable, os.path.join(folder, meta["name"] + ".py")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        check(p.returncode == 0 and all(n in p.stdout for n in meta["outputs"]),
              "python3 NAME.py (random inputs): %s" % p.stdout)
    finally:
        shutil.rmtree(out)
    ok("python3 NAME.py FILES -o DIR writes the reference outputs; without files it runs on random inputs")


def weights_checks(mod, xs, refs, folder, name):
    """A model compiled with --weights-file: the .bin beside the library by default, weights= else."""
    bin_path = os.path.join(folder, name + "_weights.bin")
    check(os.path.isfile(bin_path), "%s is missing" % bin_path)
    tmp = tempfile.mkdtemp()
    try:
        moved = os.path.join(tmp, "w.bin")
        shutil.copyfile(bin_path, moved)
        with mod.Model(weights=moved) as m2:
            same(list(m2.run(xs).values())[0], refs[0], "weights= a copy")
        short = os.path.join(tmp, "short.bin")
        open(short, "wb").write(open(bin_path, "rb").read()[:-4])
        e = raises(mod.Error, lambda: mod.Model(weights=short), short, "bytes")
        check(e.code == 5, "a short weights file: code %s" % e.code)
    finally:
        shutil.rmtree(tmp)
    ok("--weights-file: the weights beside the library by default; weights= another path; a wrong file is "
       "Error code 5")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", required=True)
    p.add_argument("--folder", required=True)
    p.add_argument("--data", required=True)
    a = p.parse_args()
    if os.environ.get("MODELC_EMULATION") != "1":
        fail("run with MODELC_EMULATION=1 (the emulated library)")
    meta = json.load(open(os.path.join(a.data, "meta.json")))
    sys.path.insert(0, a.folder)
    mod = importlib.import_module(a.module)
    check(os.path.dirname(os.path.abspath(mod.__file__)) == os.path.abspath(a.folder),
          "imported %s, not the folder's module" % mod.__file__)
    xs = [np.load(os.path.join(a.data, "input_%d.npy" % i)) for i in range(len(meta["inputs"]))]
    refs = [np.load(os.path.join(a.data, "ref", sanitize(n) + ".npy")) for n in meta["outputs"]]

    m = mod.Model()
    check(m.input_names == meta["inputs"] and m.output_names == meta["outputs"],
          "the C API's tensors %s -> %s, the model's %s -> %s" % (m.input_names, m.output_names, meta["inputs"],
                                                                   meta["outputs"]))
    for t, x in zip(m.inputs, xs):
        check(t.shape == x.shape and t.numpy_dtype == x.dtype and str(t) == mod.type_text(x.dtype.name, x.shape),
              "input '%s': %s, the data %s%s" % (t.name, t, x.dtype, x.shape))
    for t, r in zip(m.outputs, refs):
        check(t.shape == r.shape and t.numpy_dtype == r.dtype, "output '%s': %s, the reference %s%s"
              % (t.name, t, r.dtype, r.shape))
    check(m.workspace_bytes >= 0 and meta["name"] in repr(m), "repr / workspace_bytes")
    ok("metadata from the C API: %r" % m)

    host_checks(mod, m, xs, refs, meta)
    error_checks(mod, m, xs, meta, a.folder)
    device_checks(mod, m, xs, refs, meta)
    extraction_checks(mod)
    cli_checks(meta, a.folder, a.data)
    if not os.path.isfile(os.path.join(a.folder, meta["name"] + "_weights.S")):  # --weights-file
        weights_checks(mod, xs, refs, a.folder, meta["name"])
    else:
        raises(mod.InputError, lambda: mod.Model(weights="x.bin"), "compiled without --weights-file")
        ok("weights= on a model whose weights are in the library: InputError")
    m.close()
    print("OK: %d checks of %s.py on the host emulation" % (passed, a.module))


if __name__ == "__main__":
    main()
