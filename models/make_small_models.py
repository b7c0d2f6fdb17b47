#!/usr/bin/python3
"""Writes the small models that ship with modelc, and a torch reference pair for each.

    /usr/bin/python3 models/make_small_models.py [--out DIR]

For NAME in tiny_cnn, tiny_mlp, tiny_transformer, tiny_inception, tiny_encoder,
tiny_encoder_bf16 it writes DIR/NAME.onnx (opset 17, under 1 MB), DIR/NAME.input.npy
(a seeded input) and DIR/NAME.output.npy (torch's output for it). DIR defaults to
this folder. Everything is seeded, so a rerun with the same torch/onnx (1.13 / 1.12)
writes the same files.

tiny_encoder_bf16 is tiny_encoder's module (the same seeded weights) exported in
torch.bfloat16: its weights, input and output are BFLOAT16 in the ONNX model. numpy
has no bfloat16, so its .npy files hold float32: the input's values are bfloat16
values exactly, the output is torch's bfloat16 result widened (exact), as modelc
reads and writes bfloat16 tensors through .npy files.
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torchvision import BertLikeEncoder, plain_ops  # noqa: E402  (this folder's script)

OPSET = 17
SEED = 20240607
MAX_BYTES = 1 << 20


class TinyCNN(nn.Module):
    """conv/bn/relu, maxpool, a residual add, a concat followed by a BatchNormalization
    that no conv precedes (so it survives export), global average pool, flatten, gemm."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.branch = nn.Conv2d(16, 8, 1)
        self.post_concat_bn = nn.BatchNorm2d(24)
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))         # 16x16x16
        x = F.relu(x + self.block(x))       # residual add
        x = torch.cat([x, self.branch(x)], dim=1)  # 24 channels
        x = F.relu(self.post_concat_bn(x))
        x = F.adaptive_avg_pool2d(x, 1)     # GlobalAveragePool
        x = torch.flatten(x, 1)             # Flatten
        return self.fc(x)                   # Gemm


class TinyInception(nn.Module):
    """A stem conv, then an Inception-style module whose four branches end in a conv (with its
    ReLU), a conv after a conv, a MaxPool and an elementwise Tanh (of an AveragePool), concatenated
    (64 channels: each branch a multiple of 8, so every slice starts 16-byte aligned in FP16), a 1x1
    conv over the concat, global average pool, flatten, gemm: concat elision's four producer kinds."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.b1 = nn.Sequential(nn.Conv2d(16, 16, 1), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(16, 8, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.mix = nn.Sequential(nn.Conv2d(64, 24, 1), nn.ReLU())
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = self.stem(x)
        b3 = F.max_pool2d(x, 3, stride=1, padding=1)
        b4 = torch.tanh(F.avg_pool2d(x, 3, stride=1, padding=1))
        x = torch.cat([self.b1(x), self.b2(x), b3, b4], dim=1)
        x = F.adaptive_avg_pool2d(self.mix(x), 1)
        return self.fc(torch.flatten(x, 1))


class TinyMLP(nn.Module):
    """Gemm, Relu, Sigmoid, Tanh, Add and Softmax on a batch of 4 vectors."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = h + torch.tanh(self.fc2(h)) * torch.sigmoid(h)
        return F.softmax(self.fc3(h), dim=-1)


class TinyEncoderBlock(nn.Module):
    """One post-norm transformer encoder block written with plain ops: MatMul-based
    multi-head attention with Softmax, LayerNormalization, GELU (exported via Erf),
    two residual adds. Shapes are Python constants so every Reshape gets a constant shape."""

    def __init__(self, seq=16, hidden=64, heads=4, ffn=128):
        super().__init__()
        self.seq, self.hidden, self.heads, self.head_dim = seq, hidden, heads, hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, ffn)
        self.act = nn.GELU()  # approximate='none': exported as x * 0.5 * (1 + erf(x / sqrt(2)))
        self.ff2 = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def split_heads(self, t):  # [1, S, H] -> [1, heads, S, head_dim]
        return t.reshape(1, self.seq, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):  # x: [1, seq, hidden]
        q, k, v = self.split_heads(self.q(x)), self.split_heads(self.k(x)), self.split_heads(self.v(x))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn = torch.matmul(torch.softmax(scores, dim=-1), v)
        attn = attn.transpose(1, 2).reshape(1, self.seq, self.hidden)
        x = self.norm1(x + self.o(attn))
        return self.norm2(x + self.ff2(self.act(self.ff1(x))))


MODELS = {
    # name: (module factory, input shape)
    "tiny_cnn": (TinyCNN, (1, 3, 32, 32)),
    "tiny_mlp": (TinyMLP, (4, 32)),
    "tiny_transformer": (TinyEncoderBlock, (1, 16, 64)),
    "tiny_inception": (TinyInception, (1, 3, 16, 16)),
    # The BERT-like encoder of export_torchvision.py at a small size: nn.MultiheadAttention's packed
    # QKV projection, its Slices and Transposes, the scaled product (exported with plain_ops).
    "tiny_encoder": (lambda: BertLikeEncoder(d_model=64, heads=4, layers=2, ffn=128), (1, 16, 64)),
}
PLAIN_OPS = {"tiny_encoder"}  # torch modules with an export-hostile fast path (plain_ops)
# BF16 exports: name -> the model of MODELS exported in torch.bfloat16 (weights, input, output).
BF16 = {"tiny_encoder_bf16": "tiny_encoder"}


def randomize_batchnorm(model, gen):
    """Fresh BatchNorms have mean 0 / var 1 / gamma 1 / beta 0, which would make them
    identities; give them seeded, non-trivial statistics so the models test them."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)
        elif isinstance(m, nn.LayerNorm):
            m.weight.data.copy_(torch.rand(m.normalized_shape, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.normalized_shape, generator=gen) * 0.1)


def export(name, out_dir):
    base = BF16.get(name, name)
    factory, shape = MODELS[base]
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = factory()
    with torch.no_grad():
        randomize_batchnorm(model, gen)
    model.eval()
    x = torch.randn(*shape, generator=gen)
    if name in BF16:
        model = model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    path = os.path.join(out_dir, name + ".onnx")
    with plain_ops(model) if base in PLAIN_OPS else torch.no_grad():
        y = model(x).detach()
        torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        sys.exit(f"{path}: {size} bytes, over the 1 MB limit for shipped models")
    # (.float() first: numpy has no bfloat16; bfloat16 -> float32 is exact)
    np.save(os.path.join(out_dir, name + ".input.npy"), x.float().numpy().astype(np.float32))
    np.save(os.path.join(out_dir, name + ".output.npy"), y.float().numpy().astype(np.float32))
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{path}: {size} bytes, input {list(shape)}, output {list(y.shape)}, ops {' '.join(ops)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)), help="output folder")
    names = list(MODELS) + list(BF16)
    ap.add_argument("--models", default=",".join(names), help="comma-separated subset of " + ",".join(names))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    for name in args.models.split(","):
        if name not in MODELS and name not in BF16:
            sys.exit(f"unknown model '{name}' (known: {', '.join(names)})")
        export(name, args.out)


if __name__ == "__main__":
    main()
