#!/usr/bin/python3
"""The emitted NAME_dask.py on a local Dask cluster of worker processes, on the host emulation
(MODELC_EMULATION=1; run by ctest, see CMakeLists.txt beside). Every output is compared with
`modelc run-reference`'s (rtol 1e-3, atol 1e-5, as `modelc verify`).

    dask_test.py prepare --modelc BIN --model M.onnx --work DIR [--items 64] [-- FLAGS]
        emits M into DIR/<model> (modelc FLAGS: batch profiles), builds `make emu-so`, writes DIR/in
        (one seeded input per sample, s00.npy ...) and DIR/ref (run-reference's output of each sample:
        one run-reference at the batch of all the samples, re-batched, split item by item).
    dask_test.py local --work DIR
        `python3 -m NAME_dask --local 2 IN OUT`: exit 0, every output written once and equal to the
        reference, both workers in the summary; the module imports without Dask, and says what to
        install when used without it.
    dask_test.py kill --work DIR
        a local cluster of 2 worker processes with a GPU resource each and one without, started here,
        with a worker plugin that kills (SIGKILL) the first worker that starts one of NAME_dask's file
        tasks, once; `python3 -m NAME_dask --scheduler ADDRESS IN OUT`: exit 0, the scheduler's story
        of the killed task shows it given to a worker twice, the summary names it as retried, every
        output written once and equal to the reference, no temporary file left, no task on the worker
        without the resource. Then predict() on a dask and a numpy array over the same cluster (blocks
        of whole items; 59 items: a last call of 3 on the profile of 4, padded).
    dask_test.py bad-input --work DIR
        the inputs plus a file that is no .npy, a truncated one and one of another shape, 5 samples a
        task so that bad files share tasks with good ones: exit 1, an error naming each bad file, every
        good sample's output written and equal to the reference, none for the bad ones.
    dask_test.py multi-io --work EMBED_DIR [--name multi_io]
        check_embed.py's multi_io (two inputs, three outputs of two dtypes, one batch, --weights-file):
        `--local 1` over sample folders (X/INPUT.npy), a folder of outputs per sample, each equal to the
        reference; the weights file travels with the library.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

RTOL, ATOL = 1e-3, 1e-5
WORKERS = 2


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def run(cmd, cwd=None, env=None, check=True, what=None):
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(p.stdout.replace("\r", "\n")[-4000:])
    sys.stdout.write(p.stderr[-4000:])
    print("  (exit %d, %.1f s)" % (p.returncode, time.time() - start), flush=True)
    if check and p.returncode != 0:
        fail("%s exited with %d" % (what or cmd[0], p.returncode))
    return p


def emulation_env():
    e = dict(os.environ)
    e.update(MODELC_EMULATION="1", PYTHONDONTWRITEBYTECODE="1")
    return e


def load_meta(work):
    path = os.path.join(work, "meta.json")
    if not os.path.isfile(path):
        fail("%s is missing: run `dask_test.py prepare` first (ctest's fixture does)" % path)
    return json.load(open(path))


# ---- prepare ---------------------------------------------------------------------------------------

def prepare(a):
    name = os.path.splitext(os.path.basename(a.model))[0]
    folder = os.path.join(a.work, name)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(os.path.join(a.work, "in"))
    run([a.modelc, a.model, "-o", folder] + a.flags, what="modelc")
    run(["make", "-C", folder, "-j2", "--no-print-directory", "MODELC_WERROR=1", "emu-so"], what="make emu-so")
    if not os.path.isfile(os.path.join(folder, "lib%s_emu.so" % name)):
        fail("make did not build lib%s_emu.so" % name)
    # The model's input and output at batch 1: the items.
    sys.path.insert(0, folder)
    os.environ["MODELC_EMULATION"] = "1"
    model_module = __import__(name)
    m = model_module.Model()
    if len(m.inputs) != 1 or len(m.outputs) != 1 or len(m.batches) < 2:
        fail("the test wants a model of one input and one output compiled with batch profiles")
    t, o = m.inputs[0], m.outputs[0]
    item = (t.shape[0] // m.batches[-1],) + t.shape[1:]
    rng = np.random.default_rng(29)
    samples = ["s%02d" % i for i in range(a.items)]
    xs = [rng.uniform(-1, 1, item).astype(t.numpy_dtype) for _ in samples]
    for s, x in zip(samples, xs):
        np.save(os.path.join(a.work, "in", s + ".npy"), x)
    everything = os.path.join(a.work, "all_inputs.npy")
    np.save(everything, np.concatenate(xs))
    ref = os.path.join(a.work, "ref_all")
    run([a.modelc, "run-reference", a.model, "--batch", str(a.items), "--input", "%s=%s" % (t.name, everything),
         "-o", ref], what="modelc run-reference")
    y = np.load(os.path.join(ref, o.name + ".npy"))
    rows = y.shape[0] // a.items
    os.makedirs(os.path.join(a.work, "ref"))
    for k, s in enumerate(samples):
        np.save(os.path.join(a.work, "ref", s + ".npy"), y[k * rows:(k + 1) * rows])
    json.dump({"name": name, "folder": folder, "samples": samples, "input": t.name, "output": o.name,
               "batches": list(m.batches)}, open(os.path.join(a.work, "meta.json"), "w"), indent=1)
    print("OK: %s emitted and built (batch profiles %s), %d samples and their reference outputs"
          % (name, ", ".join(map(str, m.batches)), a.items))


# ---- checks ----------------------------------------------------------------------------------------

def check_outputs(work, meta, out, samples):
    """Every sample's output in `out`, equal to the reference; nothing else there (no temporary file)."""
    want = sorted(s + ".npy" for s in samples)
    got = sorted(os.listdir(out))
    if got != want:
        extra = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        fail("%s holds %d files, %d expected (missing %s, extra %s)" % (out, len(got), len(want), missing[:5],
                                                                       extra[:5]))
    worst = 0.0
    for s in samples:
        ref = np.load(os.path.join(work, "ref", s + ".npy"))
        y = np.load(os.path.join(out, s + ".npy"))
        if y.shape != ref.shape or y.dtype != ref.dtype:
            fail("%s: %s%s, the reference %s%s" % (s, y.dtype, y.shape, ref.dtype, ref.shape))
        if not np.allclose(y, ref, rtol=RTOL, atol=ATOL):
            fail("%s differs from the reference (largest difference %g)" % (s, np.max(np.abs(y - ref))))
        worst = max(worst, float(np.max(np.abs(y.astype(np.float64) - ref))))
    print("  %d outputs in %s, each equal to run-reference's (largest difference %g)" % (len(samples), out, worst))


def summary_workers(text):
    return [line for line in text.splitlines() if line.startswith("  worker ")]


def local(a):
    meta = load_meta(a.work)
    folder, name = meta["folder"], meta["name"]
    out = os.path.join(a.work, "out_local")
    shutil.rmtree(out, ignore_errors=True)
    p = run([sys.executable, "-m", name + "_dask", "--local", str(WORKERS), os.path.join(a.work, "in"), out],
            cwd=folder, env=emulation_env(), what=name + "_dask --local")
    check_outputs(a.work, meta, out, meta["samples"])
    n = len(meta["samples"])
    head = "%s_dask: %d items (%d samples) in %d tasks on %d workers" % (
        name, n, n, -(-n // meta["batches"][-1]), WORKERS)
    if head not in p.stdout:
        fail("the summary does not say '%s'" % head)
    workers = summary_workers(p.stdout)
    if len(workers) != WORKERS:
        fail("the summary names %d workers, not %d" % (len(workers), WORKERS))
    print("  summary: %s" % head)
    if "% Completed" not in p.stdout:
        fail("no progress bar")
    # Without Dask: the model's module and this one import; using it says what to install.
    code = ("import sys; sys.modules['dask'] = sys.modules['distributed'] = None\n"
            "import {n}, {n}_dask\n"
            "try:\n    {n}_dask.predict(None, [])\nexcept ImportError as e:\n    print('ImportError:', e)\n"
            "print({n}.Model().run_batch(3, [__import__('numpy').zeros(({r},) + {n}.Model().inputs[0].shape[1:], "
            "'float32')])['{o}'].shape)\n").format(
                n=name, o=meta["output"], r=3 * (np.load(os.path.join(a.work, "in", meta["samples"][0] + ".npy"))
                                                  .shape[0]))
    p = run([sys.executable, "-c", code], cwd=folder, env=emulation_env(), what="import without Dask")
    if "ImportError: %s_dask needs Dask's distributed scheduler (Debian: apt-get install python3-distributed" \
            % name not in p.stdout:
        fail("predict() without Dask does not say what to install")
    print("  without Dask: %s.py and %s_dask.py import; predict() says to install python3-distributed" % (name, name))
    print("OK: local cluster")


class KillFirstTask(object):
    """A worker plugin: the first worker (of all, once: an O_EXCL marker file) that starts executing one of
    NAME_dask's file tasks kills itself (SIGKILL), the task half-started; the marker holds its key."""

    name = "dask-test-kill-first-task"

    def __init__(self, marker, prefix):
        self.marker, self.prefix = marker, prefix

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or not str(key).startswith(self.prefix):
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, ("%s %d\n" % (key, os.getpid())).encode())
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


def kill(a):
    meta = load_meta(a.work)
    folder, name = meta["folder"], meta["name"]
    out = os.path.join(a.work, "out_kill")
    marker = os.path.join(a.work, "killed")
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(marker):
        os.unlink(marker)
    os.environ.update(emulation_env())  # the worker processes inherit it
    sys.path.insert(0, folder)
    import logging
    import dask.array as da
    from distributed import Client, Nanny, Scheduler, SpecCluster
    # Two GPU workers and one without the resource, which the model's tasks must never reach.
    quiet = {"nthreads": 1, "silence_logs": logging.WARNING}
    workers = {"gpu%d" % i: {"cls": Nanny, "options": dict(quiet, resources={"GPU": 1})} for i in range(WORKERS)}
    workers["cpu"] = {"cls": Nanny, "options": quiet}
    with SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                     silence_logs=logging.WARNING) as cluster, Client(cluster) as client:
        client.wait_for_workers(len(workers))
        info = client.scheduler_info()["workers"]
        cpu = [w for w in info if not info[w]["resources"]]
        pids = set(client.run(os.getpid, workers=[w for w in info if w not in cpu]).values())
        client.register_worker_plugin(KillFirstTask(marker, "modelc-%s-files-" % name))
        p = run([sys.executable, "-m", name + "_dask", "--scheduler", cluster.scheduler_address,
                 os.path.join(a.work, "in"), out], cwd=folder, env=emulation_env(), what=name + "_dask --scheduler")
        if not os.path.isfile(marker):
            fail("no worker was killed: the plugin did not see a task start")
        key, pid = open(marker).read().split()
        if int(pid) not in pids:
            fail("the killed process %s is not one of the workers %s" % (pid, sorted(pids)))
        print("  killed worker pid %s while it started %s" % (pid, key))
        # Dask's own record: the scheduler gave the killed task to a worker twice.
        story = [e for e in client.story(key) if e[0] == "scheduler"]
        processing = sum(1 for e in story if e[3] == "processing")
        if processing < 2:
            fail("the scheduler's story of %s shows %d assignments, not a retry: %s" % (key, processing, story))
        print("  the scheduler's story of %s: given to a worker %d times" % (key, processing))
        # The summary names it among the retried (with any the scheduler had queued on that worker).
        retried = [line.split(": ", 1)[1].split(", ") for line in p.stdout.splitlines()
                   if line.startswith("  retried ") and "whose worker was lost: " in line]
        if len(retried) != 1 or key not in retried[0]:
            fail("the summary does not name %s as retried" % key)
        print("  the summary: retried %s" % ", ".join(retried[0]))
        check_outputs(a.work, meta, out, meta["samples"])
        print("  every output written once and correct after the kill")
        ran = [line.split()[1] for line in summary_workers(p.stdout)]
        if not ran or set(ran) & set(cpu):
            fail("the tasks ran on %s; the worker without a GPU resource is %s" % (ran, cpu))
        print("  the tasks ran on GPU workers only (%s), none on %s" % (", ".join(ran), cpu[0]))

        # predict() on arrays, over the same cluster (its plugin registered by the command).
        module = __import__(name + "_dask")
        xs = np.concatenate([np.load(os.path.join(a.work, "in", s + ".npy")) for s in meta["samples"]])
        ref = np.concatenate([np.load(os.path.join(a.work, "ref", s + ".npy")) for s in meta["samples"]])
        rows = xs.shape[0] // len(meta["samples"])
        largest = meta["batches"][-1]
        for what, x, n in (("a dask array in blocks of %d items" % (2 * largest),
                            da.from_array(xs, chunks=(2 * largest * rows,) + xs.shape[1:]), len(meta["samples"])),
                           ("a numpy array of %d items" % (len(meta["samples"]) - 5), xs[:-5 * rows],
                            len(meta["samples"]) - 5)):
            y = module.predict(client, x)
            if not isinstance(y, da.Array):
                fail("predict(%s) returned %s, not a dask array" % (what, type(y).__name__))
            got = y.compute()
            want = ref[:n * rows]
            if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                fail("predict(%s): %s, differs from the reference %s" % (what, got.shape, want.shape))
            print("  predict(%s): %d blocks, %s equal to the reference" % (what, y.numblocks[0], got.shape))
    print("OK: a worker killed during the run")


def bad_input(a):
    meta = load_meta(a.work)
    folder, name = meta["folder"], meta["name"]
    inputs = os.path.join(a.work, "in_bad")
    out = os.path.join(a.work, "out_bad")
    for d in (inputs, out):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(a.work, "in"), inputs)
    good = np.load(os.path.join(inputs, meta["samples"][0] + ".npy"))
    bad = {}
    bad["s10_garbage"] = os.path.join(inputs, "s10_garbage.npy")
    open(bad["s10_garbage"], "wb").write(b"this is not a .npy file\n" * 40)
    bad["s20_truncated"] = os.path.join(inputs, "s20_truncated.npy")
    np.save(bad["s20_truncated"], good)
    with open(bad["s20_truncated"], "r+b") as f:
        f.truncate(os.path.getsize(bad["s20_truncated"]) - 100)
    bad["s30_shape"] = os.path.join(inputs, "s30_shape.npy")
    np.save(bad["s30_shape"], good[..., :-1])
    p = run([sys.executable, "-m", name + "_dask", "--local", str(WORKERS), "--chunk", "5", "--no-progress", inputs,
             out], cwd=folder, env=emulation_env(), check=False)
    if p.returncode != 1:
        fail("exit %d with bad input files, not 1" % p.returncode)
    for s, path in sorted(bad.items()):
        lines = [line for line in p.stderr.splitlines() if line.startswith("error: %s: " % path)]
        if len(lines) != 1:
            fail("no error naming %s" % path)
        print("  %s" % lines[0])
    errors = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    if len(errors) != len(bad):
        fail("%d errors for %d bad files" % (len(errors), len(bad)))
    n = len(meta["samples"])
    if "failed: %d samples (bad input files)" % len(bad) not in p.stdout or \
            "%d items (%d samples)" % (n, n) not in p.stdout:
        fail("the summary does not count %d written and %d failed" % (n, len(bad)))
    check_outputs(a.work, meta, out, meta["samples"])
    print("OK: each bad input file failed alone, with its name; the others were written")


def multi_io(a):
    """A model of two inputs and three outputs of two dtypes, one batch, --weights-file (check_embed.py's
    multi_io): sample folders in, a folder of outputs per sample out, the weights file sent along."""
    name = a.name
    folder = os.path.join(a.work, name)
    data = os.path.join(a.work, name + "_data")
    if not os.path.isfile(os.path.join(data, "meta.json")):
        fail("%s is missing: run `check_embed.py prepare` first (ctest's fixture does)" % data)
    meta = json.load(open(os.path.join(data, "meta.json")))
    if os.path.isfile(os.path.join(folder, name + "_weights.S")):
        fail("%s was not compiled with --weights-file" % name)
    sanitize = lambda n: "".join(c if c.isalnum() or c in "_.-" else "_" for c in n)
    inputs, out = os.path.join(a.work, name + "_dask_in"), os.path.join(a.work, name + "_dask_out")
    for d in (inputs, out):
        shutil.rmtree(d, ignore_errors=True)
    refs = {"s0": ("input", "ref"), "zero": ("zero", "ref_zero")}
    for sample, (stem, _) in refs.items():
        os.makedirs(os.path.join(inputs, sample))
        for i, n in enumerate(meta["inputs"]):
            shutil.copyfile(os.path.join(data, "%s_%d.npy" % (stem, i)),
                            os.path.join(inputs, sample, sanitize(n) + ".npy"))
    run([sys.executable, "-m", name + "_dask", "--local", "1", "--no-progress", inputs, out], cwd=folder,
        env=emulation_env(), what=name + "_dask --local 1")
    if sorted(os.listdir(out)) != sorted(refs):
        fail("%s holds %s, not a folder per sample %s" % (out, sorted(os.listdir(out)), sorted(refs)))
    for sample, (_, ref) in refs.items():
        want = sorted(sanitize(n) + ".npy" for n in meta["outputs"])
        if sorted(os.listdir(os.path.join(out, sample))) != want:
            fail("%s/%s holds %s, not %s" % (out, sample, sorted(os.listdir(os.path.join(out, sample))), want))
        for n in meta["outputs"]:
            r = np.load(os.path.join(data, ref, sanitize(n) + ".npy"))
            y = np.load(os.path.join(out, sample, sanitize(n) + ".npy"))
            same = y.dtype == r.dtype and y.shape == r.shape and (
                np.allclose(y, r, rtol=RTOL, atol=ATOL) if r.dtype.kind == "f" else np.array_equal(y, r))
            if not same:
                fail("%s/%s: output '%s' %s%s differs from the reference %s%s" % (out, sample, n, y.dtype, y.shape,
                                                                                 r.dtype, r.shape))
        print("  %s: %s equal to the reference" % (sample, ", ".join("'%s'" % n for n in meta["outputs"])))
    print("OK: two inputs, three outputs, --weights-file on a local cluster")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=("prepare", "local", "kill", "bad-input", "multi-io"))
    p.add_argument("--name", default="multi_io", help="multi-io: the model check_embed.py prepared in --work")
    p.add_argument("--work", required=True)
    p.add_argument("--modelc")
    p.add_argument("--model")
    p.add_argument("--items", type=int, default=64)
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:len(argv) - len(flags) - (1 if "--" in argv else 0)])
    a.flags = flags
    a.work = os.path.abspath(a.work)
    {"prepare": prepare, "local": local, "kill": kill, "bad-input": bad_input, "multi-io": multi_io}[a.command](a)


if __name__ == "__main__":
    main()
