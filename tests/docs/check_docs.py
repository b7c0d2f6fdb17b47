#!/usr/bin/python3
"""Checks that the README and docs/ stay true to the command line (tests/docs/CMakeLists.txt).

    /usr/bin/python3 tests/docs/check_docs.py --modelc build/modelc --source .

- every flag `modelc --help` and `modelc COMMAND --help` print is named in docs/CLI.md, and every
  flag of the generated program (runtime_stub/cli.h) in docs/OUTPUT.md;
- every `modelc` flag README.md names is one of those (a flag of the generated program is one
  runtime_stub/cli.h parses);
- every relative link of README.md and docs/*.md names a file that exists;
- README.md is under 200 lines (the page a newcomer reads top to bottom; reference goes to docs/).
Exit 1 naming each problem.
"""
import argparse
import os
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def help_flags(modelc):
    commands = [[]]
    top = subprocess.run([modelc, "--help"], capture_output=True, text=True, check=True).stdout
    sub = top.split("Subcommands:", 1)[1] if "Subcommands:" in top else ""
    commands += [[line.split()[0]] for line in sub.splitlines() if line.startswith("  ") and line.split()]
    if len(commands) < 2:
        sys.exit("check_docs: `modelc --help` lists no subcommands")
    flags = {}
    for cmd in commands:
        text = subprocess.run([modelc, *cmd, "--help"], capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            # The options' own column: "  -o,--out DIR   description" (descriptions name other flags too).
            m = re.match(r"\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", line)
            if m and m.group(1) != "--help":
                flags.setdefault(m.group(1), []).append(" ".join(["modelc", *cmd]))
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    src = args.source
    problems = []

    flags = help_flags(args.modelc)
    if len(flags) < 20:
        problems.append(f"only {len(flags)} flags read from modelc --help: the parser no longer matches its layout")
    with open(os.path.join(src, "docs", "CLI.md")) as f:
        cli_doc = set(FLAG.findall(f.read()))
    for flag, where in sorted(flags.items()):
        if flag not in cli_doc:
            problems.append(f"docs/CLI.md does not document {flag} ({', '.join(sorted(set(where)))})")

    with open(os.path.join(src, "runtime_stub", "cli.h")) as f:
        program_flags = set(re.findall(r'"(--[a-z][a-z0-9-]*)', f.read()))
    with open(os.path.join(src, "docs", "OUTPUT.md")) as f:
        output_doc = set(FLAG.findall(f.read()))
    for flag in sorted(program_flags - {"--help"}):
        if flag not in output_doc:
            problems.append(f"docs/OUTPUT.md does not document the generated program's {flag} (runtime_stub/cli.h)")
    with open(os.path.join(src, "README.md")) as f:
        readme = f.read()
    # `cmake --install`, `ctest --output-on-failure`: other tools' flags.
    own = re.sub(r"\b(cmake|ctest|cpack|npm|apt-get|make)( -?-?[\w-]+)+", "", readme)
    for flag in sorted(set(FLAG.findall(own))):
        if flag not in flags and flag not in program_flags:
            problems.append(f"README.md names {flag}, which neither modelc nor the generated program takes")
    lines = readme.count("\n")
    if lines >= 200:
        problems.append(f"README.md has {lines} lines (at most 199: reference material goes to docs/)")

    pages = ["README.md"] + [os.path.join("docs", p) for p in sorted(os.listdir(os.path.join(src, "docs")))
                             if p.endswith(".md")]
    for page in pages:
        with open(os.path.join(src, page)) as f:
            text = f.read()
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path = os.path.normpath(os.path.join(src, os.path.dirname(page), target))
            if not os.path.exists(path):
                problems.append(f"{page}: link to {target}, which does not exist")

    for p in problems:
        print("check_docs:", p)
    print(f"check_docs: {len(flags)} modelc flags, {len(pages)} pages, README {lines} lines: "
          + ("FAIL" if problems else "OK"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
