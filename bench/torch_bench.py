#!/usr/bin/env python3
"""Times each op of bench/make_models.py's shapes.tsv in torch on the GPU (the baseline of bench/run.sh).

    python3 bench/torch_bench.py SHAPES.tsv [--runs 100] [--warmup 10]

MatMul: torch.matmul of two FP16 4096x4096 tensors (cuBLAS). Conv: torch.nn.functional.conv2d in FP16
with bias, input and weight in channels_last memory format (cuDNN), cudnn.benchmark on. Random data
(never zeros), CUDA events around each call after the warm-up, the median in ms. Prints one line per
model: NAME<TAB>median_ms<TAB>p10<TAB>p90.
"""

import argparse
import csv

import torch
import torch.nn.functional as F


def timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    ms.sort()
    q = lambda p: ms[min(len(ms) - 1, int(round(p * (len(ms) - 1))))]
    return q(0.5), q(0.1), q(0.9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.device("cuda")
    with open(args.shapes) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            with torch.no_grad():
                if r["kind"] == "matmul":
                    m, k, n = int(r["cin"]), int(r["cout"]), int(r["k"])
                    a = torch.rand(m, k, device=dev, dtype=torch.float16) * 2 - 1
                    b = torch.rand(k, n, device=dev, dtype=torch.float16) * 2 - 1
                    fn = lambda: torch.matmul(a, b)
                else:
                    n, c, mo, k, s, p = (int(r[x]) for x in ("batch", "cin", "cout", "k", "stride", "pad"))
                    h, w = int(r["h"]), int(r["w"])
                    x = (torch.rand(n, c, h, w, device=dev, dtype=torch.float16) * 2 - 1).to(
                        memory_format=torch.channels_last)
                    wt = (torch.rand(mo, c, k, k, device=dev, dtype=torch.float16) - 0.5).to(
                        memory_format=torch.channels_last)
                    bias = torch.rand(mo, device=dev, dtype=torch.float16) - 0.5
                    fn = lambda: F.conv2d(x, wt, bias, stride=s, padding=p)
                med, p10, p90 = timed(fn, args.runs, args.warmup)
            print(f"{r['name']}\t{med:.5f}\t{p10:.5f}\t{p90:.5f}", flush=True)


if __name__ == "__main__":
    main()
