#!/usr/bin/python3
"""Seeded mutations of JSON files modelc reads from elsewhere (plugin manifests, INT8 calibration
caches, tuning caches and tuning drivers' times), run through a fuzz target's replay binary and, for
a few, the modelc command.

    hostile_json.py --kind plugin|calibration|tuning --replay BUILD/fuzz_KIND_replay --out DIR
                    [--count 300] [--seed 1] [--modelc BUILD/modelc --cli 12 [--cli-files FILE...]]
                    SEED_FILE...

Writes DIR/mutants/NNNN.json (COUNT mutants of the seed files, each from one seed file with one to
three mutations: hostile expressions and numbers in string and number fields, deep nesting, bytes
flipped, inserted, deleted, spans duplicated, the file cut short; the same --seed writes the same
files), then runs the replay binary over them: it aborts on a finding (a crash, a hang past the
timeout, an internal error, an error that does not name the file, a sanitizer report). With
--modelc, the first --cli mutants, the seed files and --cli-files also go through the command a user runs
(`modelc list-ops --plugin DIR`; for calibration caches `modelc run-reference MODEL --int8
--calibration-cache FILE` on models/tiny_cnn.onnx; for tuning files both `modelc MODEL --fp16 --arch
sm_80 --tuning-cache FILE` and `modelc tune --collect FILE`): the exit status must be 0 or 1, never a signal,
and an error must name the file and not be internal. Exit 0 when all pass, 1 naming the first
mutant that does not.
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys

HOSTILE_STRINGS = [
    lambda r: "*".join(["1"] * r.randint(2, 60000)),           # a long left-associative chain
    lambda r: "(" * r.randint(1, 3000) + "1" + ")" * r.randint(0, 3000),
    lambda r: "-" * r.randint(1, 5000) + "1",
    lambda r: "min(" * r.randint(1, 2000) + "1" + ")" * r.randint(1, 2000),
    lambda r: "x[" * r.randint(1, 500) + "0" + "]" * r.randint(1, 500),
    lambda r: "99999999999999999999999",
    lambda r: "9223372036854775807 + 1",
    lambda r: "-9223372036854775807 - 1 / -1",
    lambda r: "(-9223372036854775807 - 1) % -1",
    lambda r: "numel(x) * numel(x) * numel(x) * numel(x) * numel(x) * numel(x) * numel(x) * numel(x)",
    lambda r: "1e308 * 1e308",
    lambda r: "0.0 / 0.0",
    lambda r: "x[9223372036854775807]",
    lambda r: "x[-9223372036854775808]",
    lambda r: "x[1:-1:2]",
    lambda r: "x[:]",
    lambda r: "ceil_div(-1, 0)",
    lambda r: "ceil_div(9223372036854775807, 1) * 2",
    lambda r: "len(x)",
    lambda r: "rank(rank(x))",
    lambda r: "",
    lambda r: " ",
    lambda r: "\u00e9\u4e2d\U0001f600",
    lambda r: "a" * r.randint(1, 100000),
    lambda r: "..",
    lambda r: "../../etc/passwd",
    lambda r: "/abs/path.cuh",
    lambda r: "float64",
    lambda r: "bfloat16",
    lambda r: "x",
    lambda r: "y",
    lambda r: "workspace",
    lambda r: "int",
    lambda r: "ints",
    lambda r: "NaN",
]
HOSTILE_NUMBERS = ["0", "-1", "1", "2", "255", "65536", "2147483648", "9223372036854775807", "-9223372036854775808",
                   "18446744073709551615", "99999999999999999999999", "1e308", "-1e308", "1e-320", "3.5", "-0.0",
                   "1e39", "1e-40", "true", "null", "\"1\"", "[]", "{}"]


def mutate(text, r):
    kind = r.randrange(8)
    if kind == 0:  # a string value (a field's text) replaced by a hostile one
        spans = [m.span(1) for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', text)]
        if spans:
            a, b = r.choice(spans)
            value = r.choice(HOSTILE_STRINGS)(r)
            return text[:a] + value.replace("\\", "\\\\").replace('"', '\\"') + text[b:]
    if kind == 1:  # a number replaced
        spans = [m.span() for m in re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])", text)]
        if spans:
            a, b = r.choice(spans)
            return text[:a] + r.choice(HOSTILE_NUMBERS) + text[b:]
    if kind == 2:  # a value nested deep in arrays or objects
        spans = [m.span() for m in re.finditer(r":\s*", text)]
        if spans:
            _, b = r.choice(spans)
            n = r.choice([2, 8, 65, 70, 1000, 100000])
            open_, close = ("[", "]") if r.random() < 0.5 else ('{"a":', "}")
            return text[:b] + open_ * n + "1" + close * n + "," + text[b:]
    if kind == 3 and text:  # bytes flipped
        b = bytearray(text.encode("utf-8", "surrogatepass"))
        for _ in range(r.randint(1, 4)):
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8)
        return b.decode("utf-8", "replace")
    if kind == 4 and text:  # a span deleted
        a = r.randrange(len(text))
        return text[:a] + text[a + r.randint(1, 40):]
    if kind == 5 and text:  # a span duplicated (fields and list entries twice)
        a = r.randrange(len(text))
        b = min(len(text), a + r.randint(1, 400))
        return text[:b] + text[a:b] + text[b:]
    if kind == 6 and text:  # cut short
        return text[:r.randrange(len(text))]
    # a character inserted
    a = r.randrange(len(text) + 1)
    return text[:a] + r.choice('{}[]:,"\\/*0-.e\x00\n') + text[a:]


def run(argv, timeout):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def cli_check(args, path, plugin_headers):
    """One file through the modelc command; a problem's text, or None."""
    if args.kind == "plugin":
        folder = os.path.join(args.out, "cli_plugin")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for h in plugin_headers:
            shutil.copy(h, folder)
        shutil.copy(path, os.path.join(folder, "plugin.json"))
        named = os.path.join(folder, "plugin.json")
        argv = [args.modelc, "list-ops", "--plugin", folder]
    elif args.kind == "calibration":
        named = path
        argv = [args.modelc, "run-reference", args.model, "--int8", "--calibration-cache", path, "-o",
                os.path.join(args.out, "cli_run")]
    else:
        named = path
        for argv in ([args.modelc, args.model, "--fp16", "--arch", "sm_80", "--tuning-cache", path, "-o",
                      os.path.join(args.out, "cli_compile")],
                     [args.modelc, "tune", "--collect", path, "-o", os.path.join(args.out, "cli_collected.json")]):
            problem = cli_result(argv, path, named)
            if problem:
                return problem
        return None
    return cli_result(argv, path, named)


def cli_result(argv, path, named):
    """The problem with one modelc command's run on `path` (named `named` in errors), or None."""
    rc, _, err = run(argv, 60)
    if rc is None:
        return "modelc hung: " + err
    if rc not in (0, 1):
        return "modelc exited %d (a signal or an unexpected status); stderr:\n%s" % (rc, err[-2000:])
    # An error may quote the file (the JSON parser shows what it last read): "internal" is a
    # finding only when the file does not hold it.
    with open(path, "rb") as f:
        quoted = b"internal" in f.read()
    if "error: internal" in err or ("internal" in err and not quoted):
        return "an internal error:\n" + err[-2000:]
    if rc == 1 and named not in err and os.path.basename(path) not in err:
        return "the error does not name the file %s:\n%s" % (named, err[-2000:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["plugin", "calibration", "tuning"], required=True)
    ap.add_argument("--replay", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modelc")
    ap.add_argument("--cli", type=int, default=12)
    ap.add_argument("--model", help="the model of the calibration and tuning caches' CLI runs")
    ap.add_argument("--plugin-headers", nargs="*", default=[])
    ap.add_argument("--cli-files", nargs="*", default=[], help="more files for the modelc command (not mutated)")
    ap.add_argument("seeds", nargs="+")
    args = ap.parse_args()

    texts = []
    for s in args.seeds:
        with open(s, encoding="utf-8", errors="surrogateescape") as f:
            texts.append(f.read())
    mutants = os.path.join(args.out, "mutants")
    shutil.rmtree(mutants, ignore_errors=True)
    os.makedirs(mutants)
    r = random.Random(args.seed)
    paths = []
    for i in range(args.count):
        text = r.choice(texts)
        for _ in range(r.randint(1, 3)):
            text = mutate(text, r)
        path = os.path.join(mutants, "%04d.json" % i)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        paths.append(path)

    rc, _, err = run([args.replay, mutants], 600)
    if rc != 0:
        last = re.findall(r"Running: (\S+)", err)
        print("FAIL: %s on the %s mutants%s:\n%s" % (
            "a hang" if rc is None else "exit %d" % rc, args.kind,
            " (the last file run: %s)" % last[-1] if last else "", err[-3000:]))
        return 1
    print("%s: %d mutants (seed %d) through %s: no finding" % (args.kind, args.count, args.seed,
                                                               os.path.basename(args.replay)))
    if args.modelc:
        files = list(args.seeds) + list(args.cli_files) + paths[:args.cli]
        for path in files:
            problem = cli_check(args, path, args.plugin_headers)
            if problem:
                print("FAIL: %s: %s" % (path, problem))
                return 1
        print("%s: %d files through the modelc command: exit 0 or 1, errors name the file" % (args.kind, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
