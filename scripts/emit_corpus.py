#!/usr/bin/env python3
"""scripts/emit_corpus.py — compile many models with many flag sets into one folder, so that two
builds of modelc can be compared file by file (a refactor that should not change the emitted code).

  scripts/emit_corpus.py --modelc build/modelc --out /tmp/before            # models/ and build/models
  scripts/emit_corpus.py --modelc build/modelc --out /tmp/before --node     # and every ONNX node case
  diff -r /tmp/before /tmp/after                                            # what the change changed

Each compile writes OUT/<group>/<model>/<flags>/ (the emitted folder, nothing built) and
OUT/<group>/<model>/<flags>.log (modelc's exit status and its stderr, so a refused compile is
compared too). Models: models/*.onnx (every flag set), build/models/*.onnx (the e2e exports: FP32
and FP16; INT8 on the ones at 64x64 and 80x80). Node cases (--node): each case of libonnx-testdata's
node suite compiled FP32 and --fp16 (an input whose value modelc needs at compile time is bound
from the case's data, as tests/conformance/cli_node_tests.py does). Runs --jobs compiles at a time.
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> compile flags. Every flag set runs on models/; the e2e exports take the ones in BIG_FLAGS.
FLAGS = {
    "fp32": ["--arch", "sm_75"],
    "fp16": ["--fp16", "--arch", "sm_75,sm_90"],
    "bf16": ["--bf16", "--arch", "sm_80"],
    "int8": ["--int8", "--calibrate", "random:2", "--arch", "sm_75,sm_90"],
    "fp16_nchw": ["--fp16", "--layout", "nchw", "--arch", "sm_80"],
    "fp16_streams1": ["--fp16", "--streams", "1", "--arch", "sm_90"],
    "fp16_batch": ["--fp16", "--batch", "1,4", "--arch", "sm_90"],
}
BIG_FLAGS = ["fp32", "fp16"]
SMALL_EXPORT_FLAGS = ["fp32", "fp16", "int8"]


def compile_one(modelc, model, flags, out, extra=()):
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [modelc, str(model), "-o", str(out), "--name", "model", *flags, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    # Paths in messages name the work folder: keep them relative so two runs compare.
    err = p.stderr.replace(str(out), "OUT").replace(str(model.parent), "MODELS")
    out.with_suffix(".log").write_text(f"exit {p.returncode}\n{err}")
    return p.returncode


def node_cases():
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    import cli_node_tests  # noqa: E402  (its data folder and readers)
    data = Path(cli_node_tests.DEFAULT_DATA)
    return sorted(d for d in data.iterdir() if (d / "model.onnx").exists()), cli_node_tests


def compile_node(modelc, case, mode, out, cnt):
    flags = ["--fp16"] if mode == "fp16" else []
    rc = compile_one(modelc, case / "model.onnx", flags, out)
    if rc != 0 and "--bind" in out.with_suffix(".log").read_text():
        sets = sorted(case.glob("test_data_set_*"))
        import onnx
        m = onnx.load(str(case / "model.onnx"), load_external_data=False)
        init = {i.name for i in m.graph.initializer}
        names = [i.name for i in m.graph.input if i.name not in init]
        binds = []
        for k, n in enumerate(names):
            f = sets[0] / f"input_{k}.pb" if sets else None
            if f and f.exists():
                binds += ["--bind", f"{n}={f}"]
        rc = compile_one(modelc, case / "model.onnx", flags, out, binds)
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=str(ROOT / "build" / "models"), help="the e2e exports (default build/models)")
    ap.add_argument("--node", action="store_true", help="also every ONNX node case (FP32 and --fp16)")
    ap.add_argument("--only", default="", help="only models / cases whose name contains this")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    modelc = str(Path(a.modelc).resolve())
    out = Path(a.out).resolve()
    jobs = []
    for m in sorted((ROOT / "models").glob("*.onnx")):
        for name, flags in FLAGS.items():
            jobs.append((compile_one, (modelc, m, flags, out / "models" / m.stem / name)))
    exports = Path(a.models)
    if exports.is_dir():
        for m in sorted(exports.glob("*.onnx")):
            small = m.stem.endswith(("_64", "_80"))
            for name in (SMALL_EXPORT_FLAGS if small else BIG_FLAGS):
                jobs.append((compile_one, (modelc, m, FLAGS[name], out / "exports" / m.stem / name)))
    else:
        print(f"emit_corpus: no {exports}: the e2e exports are left out (run the e2e_export* ctests)", file=sys.stderr)
    if a.node:
        cases, _ = node_cases()
        for c in cases:
            for mode in ("fp32", "fp16"):
                jobs.append((compile_node, (modelc, c, mode, out / "node" / c.name / mode, None)))
    jobs = [j for j in jobs if a.only in str(j[1][-2] if j[0] is compile_node else j[1][1])]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for i, rc in enumerate(ex.map(lambda j: j[0](*j[1]), jobs)):
            failed += rc != 0
            if (i + 1) % 100 == 0:
                print(f"emit_corpus: {i + 1} of {len(jobs)}", file=sys.stderr)
    print(f"emit_corpus: {len(jobs)} compiles into {out}, {failed} refused (see the .log files)")


if __name__ == "__main__":
    main()
