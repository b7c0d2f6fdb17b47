"""Model @NAME@ on a Dask cluster, compiled by modelc from @SOURCE@ (README.md beside this file).

One instance of the model per worker (one worker per GPU), batch inference split along the batch,
and what a worker that dies was running runs again on another worker.

    from dask.distributed import Client
    import @NAME@_dask
    client = Client("tcp://scheduler:8786")
    @NAME@_dask.register(client)                 # loads the model once on every worker (ModelPlugin)
    y = @NAME@_dask.predict(client, x)           # x: a dask (or numpy) array of N items along axis 0
    y.compute()                                  #   -> a dask array of the N items' outputs, in order
                                                 #      (its tasks submitted already, as client.persist)
    report = @NAME@_dask.predict(client, ["a.npy", "b.npy"], out_dir="out")   # .npy files -> out/a.npy ...

    python3 -m @NAME@_dask --scheduler tcp://scheduler:8786 IN_DIR OUT_DIR
    python3 -m @NAME@_dask --local 2 IN_DIR OUT_DIR        # a local cluster of 2 worker processes

The plugin carries @NAME@.py and the library (lib@NAME@.so; lib@NAME@_emu.so, the host emulation, when
MODELC_EMULATION=1) to every worker, present and future, and loads them there once (register(client,
upload=False): from this folder's path instead, which every worker must then see). Each worker runs
the model on its GPU: device 0 of those its CUDA_VISIBLE_DEVICES shows, or MODELC_DEVICE; when the
workers advertise a `GPU` resource (dask worker --resources GPU=1), the model's tasks ask for one.

Items: with batch profiles (--batch 1,4,8) an item is one batch entry of every input and output
(their first dims are the batch, @NAME@_input_batched); each task's items run in calls of the largest
profile and a last call of the rest on the smallest profile that holds it (padded). A model compiled
for one batch runs one item per call, the model's own shapes (an item has them).

Files are written atomically (a temporary file, then a rename), so an item that runs twice (its
worker died after writing) leaves one complete file. This module imports Dask only when it is used:
@NAME@.py, and importing this file, need only numpy.
"""

import os
import sys
import time

import numpy as np

NAME = "@NAME@"
WEIGHTS_FILE = @WEIGHTS_FILE@  # compiled with --weights-file: @NAME@_weights.bin is read at create
HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN_NAME = "modelc-" + NAME
RESOURCE = "GPU"

__all__ = ["register", "predict", "predict_array", "predict_files", "describe", "list_samples", "ModelPlugin",
           "Report", "InputFileError", "main"]


class InputFileError(ValueError):
    """An input file the model cannot take (unreadable, not a .npy, another dtype or shape); names the file."""


def _dask():
    """Imports Dask's distributed scheduler, which this module needs only once it is used."""
    try:
        import cloudpickle
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as e:
        raise ImportError("%s_dask needs Dask's distributed scheduler (Debian: apt-get install python3-distributed "
                          "python3-dask; pip: pip install distributed): %s" % (NAME, e)) from None
    # The workers need not import this module: its plugin and task functions travel by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _emulation_requested():
    value = os.environ.get("MODELC_EMULATION", "").strip().lower()
    if value in ("1", "on", "true", "yes"):
        return True
    if value in ("", "0", "off", "false", "no"):
        return False
    raise ValueError("MODELC_EMULATION=%r: use 1 (the host emulation, lib%s_emu.so) or 0 (CUDA, lib%s.so)"
                     % (os.environ["MODELC_EMULATION"], NAME, NAME))


def _sanitize(name):
    """A tensor name as a file name, as `modelc run-reference` and the generated program write them."""
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


# ---- the worker plugin: the model, once per worker ----------------------------------------------------

class ModelPlugin(object):
    """A Dask worker plugin that loads model @NAME@ once on each worker (client.register_worker_plugin;
    register() does it). folder: the emitted folder (default: this file's). upload: True carries
    @NAME@.py, the library and a --weights-file model's weights to the workers (written into each one's
    local directory); False loads them from `folder`, which must be at that path on every worker.
    emulation: the host emulation's library (default: MODELC_EMULATION of this process). device: the CUDA
    device (default: MODELC_DEVICE of the worker, else 0, the first of its CUDA_VISIBLE_DEVICES);
    "index": the worker's name as the device, for a local cluster of one worker per GPU (the emulation's
    one device is 0). gpu_only: load the model only on workers that advertise the GPU resource."""

    name = PLUGIN_NAME

    def __init__(self, folder=None, upload=True, emulation=None, device=None, gpu_only=False):
        self.folder = os.path.abspath(folder or HERE)
        self.upload = bool(upload)
        self.emulation = _emulation_requested() if emulation is None else bool(emulation)
        self.device = device
        self.gpu_only = bool(gpu_only)
        self.library = "lib%s%s.so" % (NAME, "_emu" if self.emulation else "")
        names = ["%s.py" % NAME, self.library]
        if WEIGHTS_FILE:
            names.append("%s_weights.bin" % NAME)  # found beside the library by @NAME@.py
        self.files = None
        self.digest = None
        if self.upload:
            import hashlib
            lib = os.path.join(self.folder, self.library)
            if not os.path.isfile(lib):
                raise FileNotFoundError("%s does not exist: build it with `make %s` in %s" % (
                    lib, "emu-so" if self.emulation else "so", self.folder))
            self.files = {}
            h = hashlib.sha256()
            for n in names:
                with open(os.path.join(self.folder, n), "rb") as f:
                    self.files[n] = f.read()
                h.update(n.encode() + b"\0" + self.files[n])
            self.digest = h.hexdigest()[:16]
        self._model = None
        self._error = None
        self.where = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_model"] = None
        return state

    def setup(self, worker):
        import logging
        log = logging.getLogger("distributed.worker")
        state = getattr(worker, "state", worker)  # Worker.state from Dask 2022.08
        if self.gpu_only and RESOURCE not in (getattr(state, "total_resources", None) or {}):
            self._error = "worker %s has no %s resource: the model runs on the workers that have one" % (
                worker.address, RESOURCE)
            self.files = None
            log.info("%s: not loaded (%s)", PLUGIN_NAME, self._error)
            return
        try:
            folder = self.folder
            if self.upload:
                folder = os.path.join(worker.local_directory, "modelc-%s-%s" % (NAME, self.digest))
                os.makedirs(folder, exist_ok=True)
                for n, data in self.files.items():
                    _write_atomically(os.path.join(folder, n), lambda f, data=data: f.write(data))
                self.files = None  # written: the worker need not hold them twice
            module = _import_model_module(folder)
            if self.device == "index":
                device = 0 if self.emulation else int(worker.name)
            elif self.device is not None:
                device = int(self.device)
            else:
                device = int(os.environ.get("MODELC_DEVICE", "0"))
            self._model = module.Model(device=device, library=os.path.join(folder, self.library))
            self.where = folder
        except Exception as e:
            # A builtin exception: the client cannot unpickle @NAME@.py's own classes.
            self._error = "worker %s cannot load model %s: %s: %s" % (worker.address, NAME, type(e).__name__, e)
            raise RuntimeError(self._error) from None
        log.info("%s: %r from %s (CUDA_VISIBLE_DEVICES=%s)", PLUGIN_NAME, self._model, folder,
                 os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))

    def teardown(self, worker):
        if self._model is not None:
            self._model.close()
            self._model = None


def _import_model_module(folder):
    """@NAME@.py of `folder`, imported under a name of its own (a second model of the same name, or this
    folder on sys.path, is not disturbed)."""
    import importlib.util
    path = os.path.join(folder, "%s.py" % NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError("%s does not exist: the folder must be at this path on every worker (or "
                                "register(client, upload=True) to send it)" % path)
    spec = importlib.util.spec_from_file_location("_modelc_%s_%d" % (NAME, abs(hash(folder))), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _worker_model():
    """(worker, model) of the worker this task runs on."""
    from distributed import get_worker
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN_NAME)
    if plugin is None:
        raise RuntimeError("worker %s has no %s plugin: call %s_dask.register(client) first"
                           % (worker.address, PLUGIN_NAME, NAME))
    if plugin._model is None:
        raise RuntimeError(plugin._error or "worker %s: model %s is not loaded" % (worker.address, NAME))
    return worker, plugin._model


def _write_atomically(path, write):
    """write(file) into a temporary file beside `path`, then renamed to it: a reader, or a run killed
    half-way, never sees a partial file; writing it again replaces it whole."""
    import socket
    d, base = os.path.split(path)
    tmp = os.path.join(d, ".%s.modelc-%s-%d.tmp" % (base, socket.gethostname(), os.getpid()))
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _is_temporary(file_name):
    return file_name.startswith(".") and ".modelc-" in file_name and file_name.endswith(".tmp")


# ---- the model's tensors, item by item ------------------------------------------------------------------

def _describe():
    """The model as the worker loaded it (a task)."""
    worker, m = _worker_model()
    return {"inputs": [(t.name, t.dtype, t.numpy_dtype.name, t.shape, b) for t, b in zip(m.inputs, m.input_batched)],
            "outputs": [(t.name, t.dtype, t.numpy_dtype.name, t.shape, b)
                        for t, b in zip(m.outputs, m.output_batched)],
            "batches": list(m.batches), "worker": worker.address, "library": m.library, "device": m.device}


class _Tensor(object):
    """An input or output split into items: `rows` of its first dim per item (item_shape)."""

    def __init__(self, kind, name, dtype, numpy_dtype, shape, batched, batches):
        self.kind, self.name, self.dtype = kind, name, dtype
        self.numpy_dtype = np.dtype(numpy_dtype)
        self.shape = tuple(shape)
        if not self.shape:
            raise ValueError("%s '%s' is a scalar (%s[]): %s_dask stacks items along the first dim"
                             % (kind, name, dtype, NAME))
        if len(batches) > 1:
            if not batched:
                raise ValueError("%s '%s' (%s) does not carry the batch: %s_dask runs models whose every input "
                                 "and output has the batch in its first dim" % (kind, name, self.text(), NAME))
            self.rows = self.shape[0] // batches[-1]
        else:
            self.rows = self.shape[0]  # one profile: an item is the tensor at the model's own shape
        self.item_shape = (self.rows,) + self.shape[1:]

    def text(self, shape=None):
        return "%s[%s]" % (self.dtype, "x".join(str(d) for d in (self.shape if shape is None else shape)))


class _Layout(object):
    """The model's inputs and outputs as items; per_call: the items of one call (the largest profile's)."""

    def __init__(self, desc):
        self.batches = list(desc["batches"])
        self.profiles = len(self.batches) > 1
        self.per_call = self.batches[-1] if self.profiles else 1
        self.inputs = [_Tensor("input", *t, batches=self.batches) for t in desc["inputs"]]
        self.outputs = [_Tensor("output", *t, batches=self.batches) for t in desc["outputs"]]

    def run(self, model, arrays, n):
        """Runs n items (arrays: one per input, n items each): calls of per_call items, the last of the
        rest (the model pads it to the smallest profile that holds it). One array per output."""
        outs = [[] for _ in self.outputs]
        for start in range(0, n, self.per_call):
            take = min(self.per_call, n - start)
            feeds = [a[start * t.rows:(start + take) * t.rows] for a, t in zip(arrays, self.inputs)]
            try:
                results = model.run_batch(take, feeds) if self.profiles else model.run(feeds)
            except Exception as e:  # as a builtin exception: the client cannot unpickle @NAME@.py's classes
                raise RuntimeError("%s: %s" % (type(e).__name__, e)) from None
            for k, t in enumerate(self.outputs):
                outs[k].append(results[t.name][:take * t.rows])
        return [np.concatenate(o) if len(o) != 1 else o[0] for o in outs] if n else \
            [np.empty((0,) + t.item_shape[1:], t.numpy_dtype) for t in self.outputs]


def _read_npy(path, t):
    """Input t's items from a .npy file: (array, items). InputFileError naming the file when it is not a
    regular file, not a .npy, truncated, or of another dtype or item shape."""
    fmt = np.lib.format
    want = "items of %s stacked along the first dim" % t.text(t.item_shape)
    if not os.path.isfile(path):
        raise InputFileError("%s: not a regular file (input '%s')" % (path, t.name))
    try:
        with open(path, "rb") as f:
            try:
                version = fmt.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = fmt.read_array_header_1_0(f)
                elif version in ((2, 0), (3, 0)):
                    shape, fortran, dtype = fmt.read_array_header_2_0(f)
                else:
                    raise ValueError("version %d.%d of the .npy format" % version)
            except (ValueError, EOFError, SyntaxError) as e:
                raise InputFileError("%s: not a .npy file (%s); input '%s' takes %s" % (path, e, t.name, want)) \
                    from None
            if dtype != t.numpy_dtype:
                raise InputFileError("%s: input '%s' takes %s, the file holds %s[%s]" % (
                    path, t.name, want, dtype.str if dtype.byteorder == ">" else dtype.name,
                    "x".join(str(d) for d in shape)))
            if (len(shape) != len(t.item_shape) or tuple(shape[1:]) != t.item_shape[1:] or shape[0] == 0 or
                    shape[0] % t.rows):
                raise InputFileError("%s: input '%s' takes %s, the file holds %s" % (path, t.name, want, t.text(shape)))
            count = int(np.prod(shape, dtype=np.int64))
            data_bytes = os.fstat(f.fileno()).st_size - f.tell()
            if data_bytes != count * dtype.itemsize:
                raise InputFileError("%s: %d bytes of data where its header's %s needs %d: the file is %s" % (
                    path, data_bytes, t.text(shape), count * dtype.itemsize,
                    "truncated" if data_bytes < count * dtype.itemsize else "longer than its array"))
            a = np.fromfile(f, dtype=dtype, count=count)
    except OSError as e:
        raise InputFileError("%s: cannot read it: %s" % (path, e.strerror or e)) from None
    a = a.reshape(shape, order="F" if fortran else "C")
    return np.ascontiguousarray(a), shape[0] // t.rows


# ---- tasks --------------------------------------------------------------------------------------------

def _run_block(desc, *arrays):
    """A task of predict_array: the outputs (a tuple) of one block of items."""
    _, m = _worker_model()
    lay = _Layout(desc)
    return tuple(lay.run(m, [np.ascontiguousarray(a) for a in arrays], arrays[0].shape[0] // lay.inputs[0].rows))


def _run_files(desc, samples):
    """A task of predict_files: samples [(name, [input path...], [output path...])] read, run together and
    written. A bad input file fails its sample only. Returns what it did, for the summary."""
    start = time.time()
    worker, m = _worker_model()
    lay = _Layout(desc)
    good, failed = [], []
    for name, in_paths, out_paths in samples:
        try:
            read = [_read_npy(p, t) for p, t in zip(in_paths, lay.inputs)]
            counts = sorted(set(k for _, k in read))
            if len(counts) > 1:
                raise InputFileError("%s: its input files hold different numbers of items (%s)" % (
                    name, ", ".join("%s: %d" % (p, k) for p, (_, k) in zip(in_paths, read))))
            good.append((name, [a for a, _ in read], counts[0], out_paths))
        except InputFileError as e:
            failed.append((name, str(e)))
    n = sum(k for _, _, k, _ in good)
    if good:
        stacked = [np.concatenate([g[1][i] for g in good]) if len(good) > 1 else good[0][1][i]
                   for i in range(len(lay.inputs))]
        outs = lay.run(m, stacked, n)
        at = 0
        for name, _, k, out_paths in good:
            for o, t, path in zip(outs, lay.outputs, out_paths):
                d = os.path.dirname(path)
                if d:
                    os.makedirs(d, exist_ok=True)
                item = np.ascontiguousarray(o[at * t.rows:(at + k) * t.rows])
                _write_atomically(path, lambda f, item=item: np.save(f, item))
            at += k
    return {"worker": worker.address, "pid": os.getpid(), "items": n, "samples": len(good), "failed": failed,
            "seconds": time.time() - start}


# ---- the client side ----------------------------------------------------------------------------------

def _has_plugin(dask_scheduler=None):
    return PLUGIN_NAME in dask_scheduler.worker_plugins


def _resources(client):
    """{"GPU": 1} when the cluster's workers advertise the GPU resource (each task then takes one), else None."""
    workers = client.scheduler_info().get("workers", {})
    if any(RESOURCE in (w.get("resources") or {}) for w in workers.values()):
        return {RESOURCE: 1}
    return None


def register(client, folder=None, upload=True, emulation=None, device=None):
    """Loads the model once on every worker, present and future (ModelPlugin; see it for the arguments),
    replacing the one the cluster has (a rebuilt library is loaded anew). predict() calls it, with the
    defaults, when the cluster has none. A worker that cannot load the model raises here."""
    _dask()
    client.wait_for_workers(1)
    plugin = ModelPlugin(folder, upload, emulation, device, gpu_only=_resources(client) is not None)
    client.register_worker_plugin(plugin, name=PLUGIN_NAME)


def _registered(client):
    if not client.run_on_scheduler(_has_plugin):
        register(client)


def describe(client):
    """The model as a worker loaded it: {"inputs", "outputs": [(name, dtype, numpy dtype, shape, batched)],
    "batches", "worker", "library", "device"} (register first)."""
    _dask()
    return client.submit(_describe, pure=False, resources=_resources(client)).result()


def predict(client, inputs, out_dir=None, **kwargs):
    """predict_files(client, inputs, out_dir) for file names (a list of .npy paths, of {input name: path}
    dicts, or list_samples(folder)), else predict_array(client, inputs): arrays of N items along axis 0 (one, or a list or
    dict of them for a model of several inputs) to a dask array of the outputs (a dict for several)."""
    files = isinstance(inputs, (list, tuple)) and inputs and all(
        isinstance(v, (str, os.PathLike, dict, tuple)) for v in inputs)
    if files or out_dir is not None:
        if out_dir is None:
            raise ValueError("predict() of files writes them: give out_dir")
        return predict_files(client, inputs, out_dir, **kwargs)
    return predict_array(client, inputs, **kwargs)


def predict_array(client, inputs, chunk=None):
    """The model over N items: `inputs` is a dask or numpy array of N items stacked along axis 0 (shape
    (N * rows, ...), an item being the input at batch 1 with batch profiles, or at the model's shape
    with one), or a list (input order) or dict (by name) of them. Each block of items is a task (blocks of
    `chunk` items; default: the first input's own blocks when they hold whole items, else the largest
    profile's batch). Returns a dask array of the outputs in input order (a dict by output name for a
    model of several outputs), computing already: the model's tasks are submitted at once (on the GPU
    workers), like client.persist."""
    _dask()
    import dask.array as da
    _registered(client)
    desc = describe(client)
    lay = _Layout(desc)
    if isinstance(inputs, dict):
        unknown = [k for k in inputs if k not in [t.name for t in lay.inputs]]
        missing = [t.name for t in lay.inputs if t.name not in inputs]
        if unknown or missing:
            raise ValueError("inputs of %s: %s" % (NAME, "'%s' is not one" % unknown[0] if unknown
                                                  else "'%s' is missing" % missing[0]))
        arrays = [inputs[t.name] for t in lay.inputs]
    elif isinstance(inputs, (list, tuple)):
        arrays = list(inputs)
    else:
        arrays = [inputs]
    if len(arrays) != len(lay.inputs):
        raise ValueError("%s takes %d inputs (%s), %d given" % (NAME, len(lay.inputs), ", ".join(
            "'%s' %s" % (t.name, t.text()) for t in lay.inputs), len(arrays)))
    own_blocks = isinstance(arrays[0], da.Array)
    arrays = [a if isinstance(a, da.Array) else da.from_array(np.asarray(a), chunks=-1) for a in arrays]
    n = None
    for a, t in zip(arrays, lay.inputs):
        if a.dtype != t.numpy_dtype or a.ndim != len(t.item_shape) or tuple(a.shape[1:]) != t.item_shape[1:] or \
                a.shape[0] % t.rows:
            raise ValueError("input '%s' takes items of %s stacked along axis 0, not %s%s" % (
                t.name, t.text(t.item_shape), a.dtype.name, list(a.shape)))
        k = a.shape[0] // t.rows
        if n is not None and k != n:
            raise ValueError("the inputs hold different numbers of items (%d and %d)" % (n, k))
        n = k
    if n == 0:
        outs = {t.name: da.zeros((0,) + t.item_shape[1:], dtype=t.numpy_dtype) for t in lay.outputs}
        return outs[lay.outputs[0].name] if len(outs) == 1 else outs
    blocks = []
    if chunk is None and own_blocks:  # the array's own blocks, when they hold whole items
        rows = lay.inputs[0].rows
        if all(c % rows == 0 and c > 0 for c in arrays[0].chunks[0]):
            blocks = [c // rows for c in arrays[0].chunks[0]]
    if not blocks:
        blocks = _split(n, int(chunk) if chunk else lay.per_call)
    arrays = [a.rechunk((tuple(b * t.rows for b in blocks),) + tuple((d,) for d in a.shape[1:]))
              for a, t in zip(arrays, lay.inputs)]
    # The model's tasks are submitted now, each asking for a GPU where the workers have one: a resource
    # annotation on a lazy graph would not survive Dask's low-level fusion at compute time.
    import operator
    import uuid
    flat = client.compute([d for a in arrays for d in a.to_delayed().reshape(-1)])  # input i, block j: i * B + j
    pieces = [flat[i * len(blocks):(i + 1) * len(blocks)] for i in range(len(arrays))]
    resources = _resources(client)
    run_id = uuid.uuid4().hex[:8]
    results = [client.submit(_run_block, desc, *[p[j] for p in pieces], pure=False, resources=resources,
                             key="%s-block-%s-%d" % (PLUGIN_NAME, run_id, j)) for j in range(len(blocks))]
    outs = {}
    for k, t in enumerate(lay.outputs):
        parts = [da.from_delayed(client.submit(operator.getitem, r, k, pure=False),
                                 shape=(b * t.rows,) + t.item_shape[1:], dtype=t.numpy_dtype)
                 for r, b in zip(results, blocks)]
        outs[t.name] = da.concatenate(parts) if len(parts) > 1 else parts[0]
    return outs[lay.outputs[0].name] if len(outs) == 1 else outs


def _split(n, size):
    size = max(1, size)
    return [min(size, n - s) for s in range(0, n, size)]


class Report(object):
    """What predict_files did: items (written), samples (written), failed [(sample, message)] (bad input
    files), errors [(sample, message)] (tasks that failed: the model or the cluster), workers {address:
    {"items", "tasks", "seconds", "pid"}}, retried [task keys whose worker was lost and that ran again],
    seconds (wall), tasks; exit_code: 0 all written, 1 a bad input file, 2 a failed task."""

    def __init__(self):
        self.items = self.samples = self.tasks = 0
        self.seconds = 0.0
        self.failed, self.errors, self.retried, self.removed = [], [], [], []
        self.workers = {}

    @property
    def exit_code(self):
        return 2 if self.errors else 1 if self.failed else 0

    def summary(self):
        rate = self.items / self.seconds if self.seconds > 0 else 0.0
        lines = ["%s_dask: %d items (%d samples) in %d tasks on %d worker%s: %.2f s, %.1f items/s" % (
            NAME, self.items, self.samples, self.tasks, len(self.workers), "" if len(self.workers) == 1 else "s",
            self.seconds, rate)]
        for address in sorted(self.workers):
            w = self.workers[address]
            lines.append("  worker %s (pid %d): %d items in %d tasks, %.2f s running them, %.1f items/s" % (
                address, w["pid"], w["items"], w["tasks"], w["seconds"],
                w["items"] / w["seconds"] if w["seconds"] > 0 else 0.0))
        if self.retried:
            lines.append("  retried %d task%s whose worker was lost: %s" % (
                len(self.retried), "" if len(self.retried) == 1 else "s", ", ".join(self.retried)))
        if self.removed:
            lines.append("  removed %d temporary file%s of lost attempts" % (
                len(self.removed), "" if len(self.removed) == 1 else "s"))
        if self.failed:
            lines.append("  failed: %d sample%s (bad input files)" % (len(self.failed), "" if len(self.failed) == 1
                                                                       else "s"))
        if self.errors:
            lines.append("  errors: %d sample%s not run (failed tasks)" % (len(self.errors), "" if len(self.errors) == 1
                                                                           else "s"))
        return "\n".join(lines)


def _retried(client, keys):
    """The keys that went to a worker more than once (the scheduler's story of each: its worker was lost
    while it ran, and the scheduler gave it to another)."""
    if not keys:
        return []
    processing = {}
    for entry in client.story(*keys, on_error="ignore"):
        if entry[0] == "scheduler" and entry[3] == "processing":
            processing[entry[1]] = processing.get(entry[1], 0) + 1
    return [k for k in keys if processing.get(k, 0) > 1]


def _output_paths(lay, name, out_dir):
    if len(lay.outputs) == 1:
        return [os.path.join(out_dir, name + ".npy")]
    return [os.path.join(out_dir, name, _sanitize(t.name) + ".npy") for t in lay.outputs]


def _sample_name(path):
    base = os.path.basename(os.fspath(path))
    return base[:-4] if base.endswith(".npy") else base


def predict_files(client, samples, out_dir, chunk=None, progress=False):
    """Runs the model over .npy files and writes its outputs into out_dir: `samples` is a list of .npy
    paths (a model of one input; each file one or more items of it) or of {input name: path} dicts (the
    name of the first file's folder names the sample), or what list_samples(folder) returns. A sample's
    output is out_dir/NAME.npy (one output) or out_dir/NAME/OUTPUT.npy, written atomically by the workers
    (out_dir and the inputs must be at these paths on every worker). `chunk` samples per task (default:
    the largest profile's batch); progress: Dask's progress bar on stdout. Returns a Report."""
    _dask()
    import uuid
    from distributed import progress as progress_bar
    _registered(client)
    desc = describe(client)
    lay = _Layout(desc)
    out_dir = os.path.abspath(os.fspath(out_dir))
    jobs = []
    for s in samples:
        if isinstance(s, tuple):  # list_samples: (name, paths)
            name, paths = s
        elif isinstance(s, dict):
            missing = [t.name for t in lay.inputs if t.name not in s]
            if missing:
                raise ValueError("sample %r lacks input '%s'" % (s, missing[0]))
            paths = [os.fspath(s[t.name]) for t in lay.inputs]
            name = os.path.basename(os.path.dirname(os.path.abspath(paths[0])))
        else:
            if len(lay.inputs) != 1:
                raise ValueError("%s has %d inputs: give each sample as {input name: path}" % (NAME, len(lay.inputs)))
            paths = [os.fspath(s)]
            name = _sample_name(s)
        jobs.append((name, [os.path.abspath(p) for p in paths], _output_paths(lay, name, out_dir)))
    names = [j[0] for j in jobs]
    if len(set(names)) != len(names):
        twice = sorted(set(n for n in names if names.count(n) > 1))
        raise ValueError("samples named alike would write the same outputs: %s" % ", ".join(twice[:5]))
    os.makedirs(out_dir, exist_ok=True)
    size = int(chunk) if chunk else lay.per_call
    groups = [jobs[i:i + size] for i in range(0, len(jobs), size)]
    run_id = uuid.uuid4().hex[:8]
    resources = _resources(client)
    report = Report()
    start = time.time()
    futures = [client.submit(_run_files, desc, g, key="%s-files-%s-%d" % (PLUGIN_NAME, run_id, i), pure=False,
                             resources=resources) for i, g in enumerate(groups)]
    if progress and futures:
        progress_bar(futures, notebook=False)
        print(flush=True)
    from distributed import wait
    wait(futures)
    report.seconds = time.time() - start
    report.tasks = len(futures)
    for f, g in zip(futures, groups):
        if f.status == "finished":
            r = f.result()
            report.items += r["items"]
            report.samples += r["samples"]
            report.failed += [tuple(x) for x in r["failed"]]
            w = report.workers.setdefault(r["worker"], {"items": 0, "tasks": 0, "seconds": 0.0, "pid": r["pid"]})
            w["items"] += r["items"]
            w["tasks"] += 1
            w["seconds"] += r["seconds"]
        else:
            e = f.exception()
            report.errors += [(name, "task %s: %s: %s" % (f.key, type(e).__name__, e)) for name, _, _ in g]
    report.retried = _retried(client, [f.key for f in futures])
    # A lost attempt may have left a temporary file; every task has finished, so none is being written.
    dirs = set(os.path.dirname(p) for _, _, outs in jobs for p in outs)
    for d in sorted(dirs):
        for entry in (os.listdir(d) if os.path.isdir(d) else []):
            if _is_temporary(entry):
                try:
                    os.unlink(os.path.join(d, entry))
                    report.removed.append(os.path.join(d, entry))
                except OSError:
                    pass
    return report


def list_samples(folder, input_names):
    """The samples of a folder, sorted by name: FOLDER/NAME.npy (a model of one input) or FOLDER/NAME/
    holding INPUT.npy per input (its name as run-reference writes it: other characters than letters, digits,
    '_', '.' and '-' as '_'). Returns [(name, [path per input])]; ValueError for a sample folder that lacks
    an input."""
    samples = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.startswith("."):
            continue
        if os.path.isdir(path):
            paths = [os.path.join(path, _sanitize(n) + ".npy") for n in input_names]
            missing = [p for p in paths if not os.path.exists(p)]
            if missing:
                raise ValueError("%s: the sample folder lacks %s (%s takes %s)" % (
                    path, os.path.basename(missing[0]), NAME, ", ".join(_sanitize(n) + ".npy" for n in input_names)))
            samples.append((entry, paths))
        elif entry.endswith(".npy") and len(input_names) == 1:
            samples.append((entry[:-4], [path]))
    return samples


# ---- python3 -m @NAME@_dask ---------------------------------------------------------------------------

def main(argv=None):
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # a usage error is status 1 here (argparse's own is 2: a failed task)
            self.print_usage(sys.stderr)
            self.exit(1, "%s: error: %s\n" % (self.prog, message))

    p = Parser(
        prog="python3 -m %s_dask" % NAME,
        description="Runs model %s over a folder of inputs on a Dask cluster and writes the outputs: IN_DIR/X.npy "
                    "(or IN_DIR/X/INPUT.npy for each input) gives OUT_DIR/X.npy (or OUT_DIR/X/OUTPUT.npy). Exit "
                    "status 0: every output written; 1: a bad input file (the others are written) or a usage "
                    "error; 2: a task failed (the model, the cluster)." % NAME)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDRESS", help="the scheduler of a running cluster (tcp://host:8786)")
    where.add_argument("--local", metavar="N", type=int,
                       help="a local cluster of N worker processes, worker i on device i (the emulation: 0)")
    p.add_argument("in_dir", metavar="IN_DIR")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--chunk", type=int, metavar="N", help="samples per task (default: the largest batch profile)")
    p.add_argument("--shared", action="store_true",
                   help="the workers load this folder from its path (a shared file system) instead of receiving it")
    p.add_argument("--device", type=int, help="the CUDA device of every worker (default: MODELC_DEVICE, else 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    if a.local is not None and a.local < 1:
        p.error("--local N: N must be at least 1")
    if a.chunk is not None and a.chunk < 1:
        p.error("--chunk N: N must be at least 1")
    if not os.path.isdir(a.in_dir):
        p.error("IN_DIR %s is not a folder" % a.in_dir)
    _dask()
    from distributed import Client, LocalCluster
    cluster = None
    try:
        if a.local is not None:
            cluster = LocalCluster(n_workers=a.local, threads_per_worker=1, processes=True,
                                   resources={RESOURCE: 1}, dashboard_address=None)
            client = Client(cluster)
            client.wait_for_workers(a.local)
        else:
            try:
                client = Client(a.scheduler)
            except OSError as e:
                print("error: cannot reach the scheduler %s: %s" % (a.scheduler, e), file=sys.stderr)
                return 2
        with client:
            device = a.device if a.device is not None else ("index" if a.local is not None else None)
            try:
                register(client, upload=not a.shared, device=device)
                desc = describe(client)
            except (ValueError, FileNotFoundError):
                raise  # this side's: a library not built, a bad MODELC_EMULATION (exit 1)
            except Exception as e:  # a worker's: it cannot load the model
                print("error: %s" % e, file=sys.stderr)
                return 2
            samples = list_samples(a.in_dir, [t[0] for t in desc["inputs"]])
            if not samples:
                print("error: %s holds no samples (%s)" % (a.in_dir, "X.npy files" if len(desc["inputs"]) == 1 else
                                                          "folders X/ of %s" % ", ".join(
                                                              _sanitize(t[0]) + ".npy" for t in desc["inputs"])),
                      file=sys.stderr)
                return 1
            report = predict_files(client, samples, a.out_dir, chunk=a.chunk, progress=not a.no_progress)
    finally:
        if cluster is not None:
            cluster.close()
    print(report.summary(), flush=True)
    for name, message in report.failed:
        print("error: %s" % message, file=sys.stderr)
    for name, message in report.errors:
        print("error: sample %s: %s" % (name, message), file=sys.stderr)
    return report.exit_code


if __name__ == "__main__":
    # Run as the module of its name, so the plugin and the tasks are this module's, not __main__'s.
    sys.path.insert(0, HERE)
    import importlib
    try:
        sys.exit(importlib.import_module("%s_dask" % NAME).main())
    except (ValueError, FileNotFoundError, ImportError) as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(1)
