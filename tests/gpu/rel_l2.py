#!/usr/bin/env python3
"""Relative L2 check of a program's outputs against expected ones (the FP16 limit of issue 4).

    python3 tests/gpu/rel_l2.py GOT_DIR EXPECTED_DIR [LIMIT]

For every EXPECTED_DIR/*.npy: GOT_DIR/<same name> must exist, have the same shape, hold no NaN/Inf,
and ||got - expected|| / ||expected|| (float64) must be <= LIMIT (default 1e-2). Prints one line per
output and exits 0 when all pass, 1 otherwise. Needs numpy only.
"""

import math
import os
import sys

import numpy as np


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    got_dir, exp_dir = sys.argv[1], sys.argv[2]
    limit = float(sys.argv[3]) if len(sys.argv) == 4 else 1e-2
    names = sorted(f for f in os.listdir(exp_dir) if f.endswith(".npy"))
    if not names:
        print(f"  no .npy in {exp_dir}")
        return 1
    failed = 0
    for f in names:
        e = np.load(os.path.join(exp_dir, f)).astype(np.float64)
        path = os.path.join(got_dir, f)
        if not os.path.exists(path):
            print(f"  {f}: missing in {got_dir}  FAIL")
            failed += 1
            continue
        g = np.load(path).astype(np.float64)
        if g.shape != e.shape:
            print(f"  {f}: shape {g.shape}, expected {e.shape}  FAIL")
            failed += 1
            continue
        bad = int(np.count_nonzero(~np.isfinite(g)))
        den = float(np.linalg.norm(e.ravel()))
        num = float(np.linalg.norm((g - e).ravel())) if bad == 0 else math.inf
        rel = num / den if den > 0 else (0.0 if num == 0 else math.inf)
        ok = bad == 0 and rel <= limit
        failed += not ok
        print(f"  {f}: rel_l2 {rel:.3e} (limit {limit:g}), max_abs {float(np.max(np.abs(g - e))) if g.size else 0:.3e}, "
              f"nan/inf {bad}  {'PASS' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
