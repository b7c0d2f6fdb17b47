#!/usr/bin/python3
"""Exports a GPT-2-style decoder block (torch, opset 17) with a torch reference pair.

    /usr/bin/python3 models/export_gpt2_block.py [--out DIR] [--force]

The block is GPT-2's (pre-norm): x + attn(ln_1(x)), then h + mlp(ln_2(h)), where attn is causal
multi-head self-attention (one c_attn Linear for Q, K and V, scores scaled by 1/sqrt(head dim), the
causal mask torch.tril of ones over the sequence, masked_fill with -inf, softmax, c_proj) and mlp
is c_fc, GELU in its tanh form (GPT-2's gelu_new: torch's approximate='tanh'), c_proj. The mask is
built from the input's sequence length in forward, as GPT-2 implementations that do not keep a
buffer do; the exporter writes it as Trilu over a constant of ones, then Equal, Cast and Where
(the masked_fill): modelc folds Trilu, Equal and Cast into a constant at compile time, and Where
selects -inf or the score.

Sizes are kept small for the CI's emulated runs: d_model 128, 4 heads, sequence 32, batch 1
(input 1x32x128). Seeded random init (GPT-2's: normal std 0.02, LayerNorm weights around 1).

It writes DIR/gpt2_block.onnx, .input.npy (a seeded input) and .output.npy (torch's output);
DIR defaults to models/exported/. A model whose files exist with a matching DIR/gpt2_block.stamp
(this script and its settings) is not exported again (--force does).
"""

import argparse
import hashlib
import json
import math
import os
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17
SEED = 20240614
D_MODEL, HEADS, SEQ = 128, 4, 32
NAME = "gpt2_block"


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(t, t, device=x.device))  # Trilu over a ConstantOfShape
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, d=D_MODEL, heads=HEADS):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        for name, p in self.named_parameters():
            if name.startswith("ln_"):
                if name.endswith("weight"):
                    nn.init.uniform_(p, 0.75, 1.25)
                else:
                    nn.init.normal_(p, std=0.1)
            elif p.dim() > 1:
                nn.init.normal_(p, std=0.02 if "proj" not in name else 0.02 / math.sqrt(2))
            else:
                nn.init.normal_(p, std=0.02)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def stamp():
    script = open(os.path.abspath(__file__), "rb").read()
    return json.dumps({"script_sha256": hashlib.sha256(script).hexdigest(), "opset": OPSET, "seed": SEED,
                       "torch": torch.__version__, "onnx": onnx.__version__}, sort_keys=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "exported"), help="output folder (default models/exported)")
    ap.add_argument("--force", action="store_true", help="export even when the files are up to date")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, NAME)
    files = [base + ".onnx", base + ".input.npy", base + ".output.npy"]
    stamp_path = base + ".stamp"
    if not args.force and all(os.path.exists(f) for f in files) and os.path.exists(stamp_path):
        if open(stamp_path).read() == stamp():
            print(f"{files[0]}: up to date")
            return
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    start = time.time()
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    model = Block().eval()
    x = torch.randn(1, SEQ, D_MODEL, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, (x,), files[0], opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
    onnx.checker.check_model(files[0])
    m = onnx.load(files[0])
    np.save(files[1], x.numpy().astype(np.float32))
    np.save(files[2], y.numpy().astype(np.float32))
    with open(stamp_path, "w") as f:
        f.write(stamp())
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{files[0]}: input {list(x.shape)}, output {list(y.shape)}, {len(m.graph.node)} nodes, ops {' '.join(ops)} "
          f"({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
