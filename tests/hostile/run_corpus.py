#!/usr/bin/python3
"""Runs modelc on every file of a malformed-model corpus (make_corpus.py) and judges each run.

    run_corpus.py --modelc BIN --corpus DIR [--jobs 2] [--timeout 20] [--max-rss-mb 1024]
                  [--memory-mb 2048] [--sanitized] [--min-files N] [--kind KIND]... [--results FILE]
                  [--tail 4]

For every file in DIR/manifest.tsv, three runs, each in an empty scratch folder of its own (its
working directory), stdin closed, under the timeout:
  inspect        BIN inspect FILE ARGS
  compile        BIN FILE -o SCRATCH/out ARGS
  run-reference  BIN run-reference FILE -o SCRATCH/ref ARGS
(ARGS: the manifest's args column, e.g. --batch 1 for a symbolic batch dim.)

A run passes when it exits 0, or exits 1 with a clear error: a stderr line starting with "error"
that names something (a quoted name or the file), or for inspect, its list of unsupported nodes on
stdout ("unsupported nodes: N", then "node '...'" lines). It fails, with every reason that applies, on:
  timeout      still running after --timeout seconds (killed)
  signal       ended by a signal (SIGSEGV, SIGABRT, ...)
  exit N       an exit status other than 0 and 1
  internal     "internal" anywhere in stderr
  sanitizer    AddressSanitizer / LeakSanitizer / UndefinedBehaviorSanitizer output in stderr
  unclear      exit 1 without an error line naming something
  left behind  a non-zero exit that leaves anything in its scratch folder (a compile's output
               folder, a partial one, a temporary file)
  accepted     exit 0 for a file the manifest marks 'refuse' (it breaks the format itself: a
               raw_data length that does not match, an output listed twice, an external-data attack)
  memory       "out of memory" or "bad_alloc" in stderr, or a peak resident size over --max-rss-mb
               (the corpus models are at most ~150 KB: a big allocation means a size was believed
               before it was checked, where a size limit should have refused it)
and the whole run fails when the corpus folder changed (modelc wrote beside a model).

Prints the counts per kind and command (exit 0 / exit 1 / failed), the failures per reason, then
every failure grouped by reason and kind with its file, description, command, status and the last
lines of its stderr. Exits 1 on any failure, 2 on a usage or corpus problem, 0 otherwise.

Every run's address space is limited to --memory-mb (setrlimit RLIMIT_AS, inherited), so that a
size believed too early ends in a quick bad_alloc rather than gigabytes of zero-filled pages on a
shared machine. --sanitized (modelc built with AddressSanitizer, which reserves terabytes of
address space for its shadow memory) sets no such limit: ASAN_OPTIONS gets
max_allocation_size_mb=--memory-mb in front of what the environment gives, so that an allocation
over it is an AddressSanitizer report (reason sanitizer).
--results FILE writes one TSV line per run (file, kind, command, outcome, reasons, status,
seconds, peak MB) for tools. The same runner serves a sanitizer build: point --modelc at its binary.
"""

import argparse
import concurrent.futures
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

COMMANDS = ("inspect", "compile", "run-reference")
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: \w+Sanitizer")
ERROR_LINE = re.compile(r"^(modelc: )?error\b", re.IGNORECASE)
REASON_ORDER = ["timeout", "signal", "exit", "sanitizer", "internal", "memory", "left behind", "unclear",
                "accepted"]


class Entry:
    def __init__(self, line_no, fields, corpus):
        if len(fields) != 5:
            raise ValueError(f"manifest line {line_no}: {len(fields)} fields, want 5 "
                             "(file, kind, args, expect, description)")
        self.file, self.kind, args, expect, self.description = fields
        self.refuse = expect == "refuse"
        self.args = [] if args == "-" else shlex.split(args)
        self.path = os.path.join(corpus, self.file)


class Run:
    """One command on one file, and what came of it."""

    def __init__(self, entry, command, argv):
        self.entry = entry
        self.command = command
        self.argv = argv
        self.status = ""
        self.seconds = 0.0
        self.peak_mb = 0.0
        self.stderr = ""
        self.reasons = []

    @property
    def outcome(self):
        if self.reasons:
            return "failed"
        return "exit 0" if self.status == "exit 0" else "exit 1"


def die(message):
    """A usage or corpus problem: exit 2, apart from the runs' failures (exit 1)."""
    print(f"run_corpus.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_manifest(corpus):
    path = os.path.join(corpus, "manifest.tsv")
    if not os.path.isfile(path):
        die(f"no manifest.tsv in {corpus} (make it with make_corpus.py)")
    entries = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for k, line in enumerate(lines[1:], start=2):
        try:
            e = Entry(k, line.split("\t"), corpus)
        except ValueError as err:
            die(f"{path}: {err}")
        if not os.path.lexists(e.path):
            die(f"{path} line {k}: {e.file} does not exist")
        entries.append(e)
    return entries


def listing(folder):
    """Names and file types in a folder tree, symlinks not followed (what must not change)."""
    out = []
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            st = os.lstat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), folder), st.st_mode, st.st_size))
    return sorted(out)


def argv_for(modelc, entry, command, scratch):
    if command == "inspect":
        return [modelc, "inspect", entry.path] + entry.args
    if command == "compile":
        return [modelc, entry.path, "-o", os.path.join(scratch, "out")] + entry.args
    return [modelc, "run-reference", entry.path, "-o", os.path.join(scratch, "ref")] + entry.args


def wait_with_usage(pid, timeout):
    """(status, rusage, timed_out): waits for pid, killing its process group at the timeout."""
    fired = threading.Event()

    def kill():
        fired.set()
        os.killpg(pid, signal.SIGKILL)
    timer = threading.Timer(timeout, kill)
    timer.start()
    # Waits without reaping: until the reap, the group's id cannot be reused, so the timer's kill
    # never reaches another process.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    timer.cancel()
    timer.join()
    _, status, usage = os.wait4(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return status, usage, fired.is_set() and killed


def names_something(line, entry):
    return "'" in line or '"' in line or entry.path in line or entry.file in line


def read_and_remove(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    os.remove(path)
    return text


def clear_error(run, stdout):
    """An error line naming something (or inspect's list of unsupported nodes)."""
    if any(ERROR_LINE.match(l) and names_something(l, run.entry) for l in run.stderr.splitlines()):
        return True
    lines = stdout.splitlines()
    listed = [k for k, l in enumerate(lines) if l.startswith("unsupported nodes:")]
    return run.command == "inspect" and bool(listed) and any("node '" in l for l in lines[listed[0]:])


def execute(run, scratch, logs, args):
    os.makedirs(scratch)
    log = os.path.join(logs, os.path.basename(scratch))
    start = time.monotonic()
    with open(log + ".stdout", "wb") as out, open(log + ".stderr", "wb") as err:
        # A session of its own, so that a timeout kills everything the run started.
        proc = subprocess.Popen(run.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                cwd=scratch, start_new_session=True)
        status, usage, timed_out = wait_with_usage(proc.pid, args.timeout)
        proc.returncode = status  # reaped here; Popen must not wait for it again
    run.seconds = time.monotonic() - start
    run.peak_mb = usage.ru_maxrss / 1024.0
    stdout = read_and_remove(log + ".stdout")
    run.stderr = read_and_remove(log + ".stderr")

    code = os.waitstatus_to_exitcode(status)
    if timed_out:
        run.status = f"timeout after {args.timeout:g} s"
        run.reasons.append("timeout")
    elif code < 0:
        run.status = f"signal {signal.Signals(-code).name}"
        run.reasons.append("signal")
    else:
        run.status = f"exit {code}"
        if code not in (0, 1):
            run.reasons.append("exit")
    if SANITIZER.search(run.stderr):
        run.reasons.append("sanitizer")
    if "internal" in run.stderr:
        run.reasons.append("internal")
    if run.peak_mb > args.max_rss_mb or "out of memory" in run.stderr or "bad_alloc" in run.stderr:
        run.reasons.append("memory")
    left = sorted(os.listdir(scratch))
    if code != 0 and left:
        run.reasons.append("left behind")
        run.stderr += f"\n[left behind in the scratch folder: {', '.join(left)}]"
    if code == 1 and not clear_error(run, stdout):
        run.reasons.append("unclear")
    if code == 0 and run.entry.refuse:
        run.reasons.append("accepted")
    shutil.rmtree(scratch)


def report_counts(entries, runs):
    kinds = list(dict.fromkeys(e.kind for e in entries))
    width = max(len(k) for k in kinds + ["total"])
    head = f"{'kind':<{width}}  {'files':>5}" + "".join(f"  {c + ' 0/1/failed':>26}" for c in COMMANDS)
    print(head)
    print("-" * len(head))
    for kind in kinds + ["total"]:
        mine = [r for r in runs if kind in ("total", r.entry.kind)]
        files = len({r.entry.file for r in mine})
        cells = []
        for c in COMMANDS:
            of = [r for r in mine if r.command == c]
            cells.append("/".join(str(sum(r.outcome == o for r in of)) for o in ("exit 0", "exit 1", "failed")))
        print(f"{kind:<{width}}  {files:>5}" + "".join(f"  {cell:>26}" for cell in cells))


def report_failures(failed, tail):
    by_reason = {}
    for r in failed:
        for reason in r.reasons:
            by_reason.setdefault(reason, []).append(r)
    print("\nfailures by reason (a run may have several): " +
          ", ".join(f"{reason} {len(by_reason[reason])}" for reason in REASON_ORDER if reason in by_reason))
    files_of = {}
    for r in failed:
        files_of.setdefault(r.entry.kind, set()).add(r.entry.file)
    print("failed files by kind: " + ", ".join(f"{kind} {len(files)}" for kind, files in files_of.items()))
    # Each failure once, under its first reason, grouped by kind.
    first = lambda r: min(REASON_ORDER.index(x) for x in r.reasons)
    for r in sorted(failed, key=lambda r: (first(r), r.entry.kind, r.entry.file, COMMANDS.index(r.command))):
        print(f"\nFAIL [{', '.join(r.reasons)}] {r.entry.kind} {r.entry.file}: {r.entry.description}")
        print(f"  $ {shlex.join(r.argv)}")
        print(f"  {r.status}, {r.seconds:.1f} s, peak {r.peak_mb:.0f} MB")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        for line in lines[-tail:]:
            print(f"  | {line[:300]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modelc", required=True, help="the modelc binary (a sanitizer build's too)")
    p.add_argument("--corpus", required=True, help="a folder make_corpus.py wrote")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per run (default 20)")
    p.add_argument("--max-rss-mb", type=float, default=1024.0, help="peak resident size allowed per run")
    p.add_argument("--memory-mb", type=int, default=2048,
                   help="address space of every run (RLIMIT_AS), or with --sanitized ASan's largest allocation")
    p.add_argument("--sanitized", action="store_true", help="modelc is an AddressSanitizer build")
    p.add_argument("--min-files", type=int, default=1, help="fail unless the corpus has at least this many files")
    p.add_argument("--kind", action="append", default=[], help="only files of this kind (repeatable)")
    p.add_argument("--results", help="write one TSV line per run here")
    p.add_argument("--tail", type=int, default=4, help="stderr lines shown per failure")
    args = p.parse_args()

    modelc = os.path.abspath(args.modelc)
    if not os.access(modelc, os.X_OK):
        die(f"{args.modelc} is not an executable")
    corpus = os.path.abspath(args.corpus)
    entries = [e for e in read_manifest(corpus) if not args.kind or e.kind in args.kind]
    if len(entries) < args.min_files:
        die(f"{len(entries)} files in {corpus}, fewer than --min-files {args.min_files}")

    if args.sanitized:
        os.environ["ASAN_OPTIONS"] = f"max_allocation_size_mb={args.memory_mb}:" + os.environ.get("ASAN_OPTIONS", "")
        limit = f"ASan allocations up to {args.memory_mb} MB"
    else:
        resource.setrlimit(resource.RLIMIT_AS, (args.memory_mb << 20,) * 2)  # the runs inherit it
        limit = f"{args.memory_mb} MB address space"
    before = listing(corpus)
    work = tempfile.mkdtemp(prefix="hostile_corpus.")
    logs = os.path.join(work, "stderr")
    os.makedirs(logs)
    runs = []
    for k, e in enumerate(entries):
        for c in COMMANDS:
            scratch = os.path.join(work, f"{k:05d}.{c}")
            runs.append((Run(e, c, argv_for(modelc, e, c, scratch)), scratch))
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda rs: execute(rs[0], rs[1], logs, args), runs))
    elapsed = time.monotonic() - start
    shutil.rmtree(work)
    runs = [r for r, _ in runs]
    after = listing(corpus)

    print(f"hostile corpus: {len(entries)} files in {corpus}, {len(runs)} runs of {modelc} "
          f"({args.jobs} jobs, {args.timeout:g} s timeout, {limit}, {elapsed:.0f} s)\n")
    report_counts(entries, runs)
    failed = [r for r in runs if r.reasons]
    if failed:
        report_failures(failed, args.tail)
    changed = sorted(set(before) ^ set(after))
    if changed:
        print(f"\nFAIL: the corpus folder changed during the runs: {', '.join(sorted({c[0] for c in changed}))}")
    if args.results:
        with open(args.results, "w", encoding="utf-8") as f:
            f.write("file\tkind\tcommand\toutcome\treasons\tstatus\tseconds\tpeak_mb\n")
            for r in runs:
                f.write(f"{r.entry.file}\t{r.entry.kind}\t{r.command}\t{r.outcome}\t{','.join(r.reasons) or '-'}\t"
                        f"{r.status}\t{r.seconds:.2f}\t{r.peak_mb:.0f}\n")
    counts = {o: sum(r.outcome == o for r in runs) for o in ("exit 0", "exit 1", "failed")}
    print(f"\nhostile corpus: {len(entries)} files, {len(runs)} runs: {counts['exit 0']} exit 0, "
          f"{counts['exit 1']} exit 1 with a clear error, {counts['failed']} failed "
          f"({len({r.entry.file for r in failed})} files){'; the corpus folder changed' if changed else ''}")
    return 1 if failed or changed else 0


if __name__ == "__main__":
    sys.exit(main())
