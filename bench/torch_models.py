#!/usr/bin/env python3
"""bench/torch_models.py MODELS_SCRIPT — times whole models in PyTorch on the GPU machine (bench/models_run.sh).

For resnet50 (torchvision, random init) and the BERT-like encoder (models/export_torchvision.py's
BertLikeEncoder: BERT-base, seq 128) at the batches given, in FP16 on CUDA, eval mode, no grad:
  eager        channels_last (resnet50), cudnn.benchmark on, each forward launched from Python
  eager+graph  the same forward captured once in a CUDA graph and replayed
  compile      torch.compile(mode=$TORCH_COMPILE_MODE, default "max-autotune"; "reduce-overhead" compiles
               faster), timed as replays of what it returns (both modes use CUDA graphs); at the
               batches in $COMPILE_BATCHES only (default 1): compiling costs minutes of device time
Each time is the median of --runs CUDA-event timings after --warmup runs; one line per measurement on
stdout: model <TAB> batch <TAB> variant <TAB> median_ms <TAB> p10_ms <TAB> p90_ms.
"""
import argparse
import importlib.util
import os
import sys
import time

import torch


def timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], times[len(times) // 10], times[(len(times) * 9) // 10]


def build(name, batch, script):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None)
        x = torch.randn(batch, 3, 224, 224)
        model = model.eval().half().cuda().to(memory_format=torch.channels_last)
        x = x.half().cuda().to(memory_format=torch.channels_last)
    else:
        spec = importlib.util.spec_from_file_location("export_torchvision", script)
        ev = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ev)
        model = ev.BertLikeEncoder().eval().half().cuda()
        x = torch.randn(batch, 128, 768).half().cuda()
    return model, x


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script", help="models/export_torchvision.py (for BertLikeEncoder)")
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    mode = os.environ.get("TORCH_COMPILE_MODE", "max-autotune")
    compile_batches = {int(b) for b in os.environ.get("COMPILE_BATCHES", "1").split(",") if b}
    for name in a.models.split(","):
        for batch in [int(b) for b in a.batches.split(",")]:
            model, x = build(name, batch, a.script)
            with torch.inference_mode():
                fn = lambda: model(x)
                rows = [("eager", timed(fn, a.runs, a.warmup)), ("eager+graph", timed(graphed(fn), a.runs, a.warmup))]
                if batch in compile_batches:
                    start = time.time()
                    try:
                        cm = torch.compile(model, mode=mode)
                        for _ in range(3):
                            cm(x)
                        rows.append((f"compile[{mode}]", timed(lambda: cm(x), a.runs, a.warmup)))
                    except Exception as e:  # the comparison goes on without it, and says so
                        print(f"# torch.compile {name} batch {batch} failed: {type(e).__name__}: {e}", file=sys.stderr)
                    print(f"# torch.compile {name} batch {batch}: {time.time() - start:.0f} s", file=sys.stderr)
            for variant, (med, p10, p90) in rows:
                print(f"{name}\t{batch}\t{variant}\t{med:.4f}\t{p10:.4f}\t{p90:.4f}", flush=True)
            del model, x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
