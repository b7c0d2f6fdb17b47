#!/usr/bin/python3
"""The pictures modelc draws, checked as a person would look at them: rendered to PNG.

    check_pictures.py --modelc BIN --models DIR --work DIR

1. report.svg (codegen/report_graph.h): models/tiny_inception.onnx compiled with --fp16 twice into
   two folders; the two report.svg files must be the same bytes (deterministic), report.md must
   link it, and the SVG (graphviz's) must hold a box per kernel of report.json, labelled with the
   ONNX nodes it covers, the elided Concat as a note, the streams as lanes when there are several,
   the legend. With --int8 tiny_cnn's graph must show INT8 kernels. Both are rendered to PNG with
   rsvg-convert (librsvg2-bin) into WORK/*.png.
2. The error plot (codegen/error_plot.h): `run-reference --fp16 --layers --plot` on tiny_cnn; the
   SVG must be valid XML with one point per layer line printed, the limit line, and render to PNG.
Exit 1 naming the first check that fails.
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        fail(" ".join(cmd) + f" exited {p.returncode}:\n{p.stdout[-3000:]}")
    return p.stdout


def png(svg, out):
    """Renders `svg` to `out` and returns its (width, height), read from the PNG header."""
    rsvg = shutil.which("rsvg-convert")
    if not rsvg:
        fail("rsvg-convert is not installed (Debian librsvg2-bin; scripts/setup.sh --tests installs it)")
    run([rsvg, "--background-color=white", svg, "-o", out])
    with open(out, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{out} is not a PNG")
    w, h = struct.unpack(">II", head[16:24])
    if w < 100 or h < 100:
        fail(f"{out} is {w}x{h}: too small to show anything")
    return w, h


def texts(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


def report_graph(a, model, flags, name):
    folders = [os.path.join(a.work, f"{name}_{i}") for i in (1, 2)]
    for f in folders:
        shutil.rmtree(f, ignore_errors=True)
        run([a.modelc, os.path.join(a.models, model), "-o", f] + flags)
    svgs = [os.path.join(f, "report.svg") for f in folders]
    for s in svgs:
        if not os.path.isfile(s):
            fail(f"{s} was not written")
    if not filecmp.cmp(svgs[0], svgs[1], shallow=False):
        fail(f"two compiles of {model} {' '.join(flags)} wrote different report.svg files")
    with open(os.path.join(folders[0], "report.md")) as f:
        md = f.read()
    if "[report.svg](report.svg)" not in md:
        fail("report.md does not link report.svg")
    with open(os.path.join(folders[0], "report.json")) as f:
        report = json.load(f)
    root = ET.parse(svgs[0]).getroot()
    titles = {t.text for t in root.iter(SVG + "title")}
    words = "\n".join(texts(root))
    for i, k in enumerate(report["kernels"]):
        if f"k_{i}" not in titles:
            fail(f"report.svg has no box for kernel {k['id']} (k_{i})")
        if not any(k["id"] + " (" + k["family"] + ")" in t for t in texts(root)):
            fail(f"report.svg does not label kernel {k['id']} with its family {k['family']}")
        for node in k.get("nodes", [])[:6]:
            if node[:40] not in words:
                fail(f"report.svg does not name node {node} of kernel {k['id']}")
    for legend in ("FP32", "FP16", "tensor core", "SIMT"):
        if legend not in texts(root):
            fail(f"the legend lacks '{legend}'")
    edges = sum(1 for g in root.iter(SVG + "g") if g.get("class") == "edge")
    if edges < len(report["kernels"]):
        fail(f"report.svg has {edges} edges for {len(report['kernels'])} kernels: the data flow is missing")
    streams = report["streams"]["count"]
    lanes = [t for t in texts(root) if t.startswith("stream ")]
    if streams > 1 and len(lanes) != streams:
        fail(f"{streams} streams but {len(lanes)} lanes in report.svg")
    elided = [c for c in report.get("concats", []) if c.get("elided")]
    notes = [t for t in texts(root) if t.startswith("elided:")]
    print(f"{model} {' '.join(flags)}: {len(report['kernels'])} kernels, {edges} edges, {streams} streams "
          f"({len(lanes)} lanes), {len(elided)} elided Concats ({len(notes)} notes); the same bytes twice")
    return svgs[0], report, notes, elided


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--models", required=True, help="the shipped models/ folder")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)

    svg, report, notes, elided = report_graph(a, "tiny_inception.onnx", ["--fp16"], "inception_fp16")
    if elided and not notes:
        fail("tiny_inception's elided Concat is not drawn")
    root = ET.parse(svg).getroot()
    if not any("tensor core" in t for t in texts(root)[8:]):  # past the legend
        fail("no kernel of tiny_inception --fp16 is labelled tensor core")
    print("report_graph png: %dx%d" % png(svg, os.path.join(a.work, "tiny_inception_fp16.png")))
    svg, report, _, _ = report_graph(a, "tiny_cnn.onnx", ["--int8", "--calibrate", "random:2"], "cnn_int8")
    if not any(", INT8" in t for t in texts(ET.parse(svg).getroot())):
        fail("no kernel of tiny_cnn --int8 is labelled INT8")
    print("report_graph png: %dx%d" % png(svg, os.path.join(a.work, "tiny_cnn_int8.png")))

    plot = os.path.join(a.work, "tiny_cnn_fp16_layers.svg")
    out = run([a.modelc, "run-reference", os.path.join(a.models, "tiny_cnn.onnx"), "--fp16", "--layers", "--plot", plot,
               "-o", os.path.join(a.work, "ref")])
    layers = [l for l in out.splitlines() if re.match(r"  \S+ .* -> .*rel_l2 ", l)]
    root = ET.parse(plot).getroot()
    points = len(list(root.iter(SVG + "circle"))) + sum(1 for g in root.iter(SVG + "g") if g.get("stroke") == "#d62728")
    if points != len(layers) or not layers:
        fail(f"the plot has {points} points for the {len(layers)} layers run-reference --layers printed")
    if not any(t.startswith("limit ") for t in texts(root)):
        fail("the plot has no limit line")
    if not any(t.startswith("worst: layer ") for t in texts(root)):
        fail("the plot does not name the worst layer")
    print(f"error plot: {len(layers)} layers; png %dx%d" % png(plot, os.path.join(a.work, "tiny_cnn_fp16_layers.png")))
    print(f"PASS: pictures rendered to PNG in {a.work}")


if __name__ == "__main__":
    main()
