#!/usr/bin/python3
"""Exports bigger models to ONNX (opset 17) with a torch reference pair for each.

    /usr/bin/python3 models/export_torchvision.py [--out DIR] [--models resnet18,...] [--image-size 64]

Models: resnet18, resnet50, mobilenet_v2, googlenet, inception_v3, densenet121,
vit_b_16, swin_t (torchvision, weights=None, seeded random init, eval mode; the CNNs
conditioned as trained models are, see calibrate_batchnorm; googlenet and
inception_v3 without their auxiliary heads; input 1x3xSxS, S = --image-size,
224 by default, at least 75 for inception_v3; ViT is always 224) and bert (a BERT-base-like encoder: torch.nn.TransformerEncoder,
d_model 768, 12 heads, 12 layers, ffn 3072, GELU, input 1x128x768). swin_t takes
--image-size like the CNNs: at 64x64 its 7x7 windows pad the 16x16 patch grid to 21x21 and the
shifted windows' attention mask is computed from shapes (Mod, ScatterND, Equal, Not, Where:
modelc folds it into constants).

For each model it writes DIR/NAME.onnx, DIR/NAME.input.npy (a seeded input)
and DIR/NAME.output.npy (torch's output for it). When a CNN is exported at a
size other than 224, NAME is e.g. resnet18_64 so both sizes can share a folder.
DIR defaults to models/exported/ (git-ignored).

A model whose three files exist and whose DIR/NAME.stamp matches this script
and its settings is not exported again (--force does); tests use that as a cache.
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

OPSET = 17
SEED = 20240607
ALL = ["resnet18", "resnet50", "mobilenet_v2", "googlenet", "inception_v3", "densenet121", "vit_b_16", "swin_t",
       "bert"]
CNNS = {"resnet18", "resnet50", "mobilenet_v2", "googlenet", "inception_v3", "densenet121"}
SIZED = CNNS | {"swin_t"}  # the models that take --image-size
MIN_IMAGE_SIZE = {"inception_v3": 75}  # its stem and reductions leave no pixel below that; others 32
# Constructor arguments: no auxiliary classifiers (they only run in training, and would only add
# weights), and torchvision's own init (it warns when init_weights is left unset).
CNN_ARGS = {"googlenet": {"aux_logits": False, "init_weights": True},
            "inception_v3": {"aux_logits": False, "init_weights": True}}


class BertLikeEncoder(nn.Module):
    """A BERT-base-sized encoder (post-norm, GELU) over already-embedded tokens."""

    def __init__(self, d_model=768, heads=12, layers=12, ffn=3072):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.1, activation="gelu", batch_first=True)
        # enable_nested_tensor=False: no nested-tensor conversion (it does not export).
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        # TransformerEncoder deep-copies `layer`, so every layer would start with the
        # same weights (and the exporter would store them once). Give each its own.
        for m in self.encoder.modules():
            if isinstance(m, nn.LayerNorm):
                nn.init.uniform_(m.weight, 0.75, 1.25)
                nn.init.normal_(m.bias, std=0.1)
        for n, p in self.encoder.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif "norm" not in n:
                nn.init.normal_(p, std=0.02)

    def forward(self, x):
        return self.encoder(x)


CALIBRATION_BATCHES = 4      # calibrate_batchnorm: training-mode passes ...
CALIBRATION_BATCH_SIZE = 8   # ... over seeded N(0, 1) batches of this many images
RESIDUAL_BRANCH_SCALE = 0.5  # gamma and beta of each residual branch's last BatchNorm


def calibrate_batchnorm(model, shape):
    """Makes a randomly initialised CNN behave numerically like a trained one.

    1. BatchNorm statistics. torchvision's init leaves every BatchNorm at mean 0 / var 1
       (mobilenet_v2's depthwise init shrinks activations to ~1e-9 at the output). A trained
       model's running statistics match its activations: set them from training-mode passes
       over CALIBRATION_BATCHES seeded N(0, 1) batches (momentum=None: the cumulative average
       over the batches), then eval. Activations stay near unit scale and no BatchNorm is an
       identity.
    2. Residual branches. Even so, a random net with calibrated BatchNorms is chaotic: each
       BN-ReLU layer re-centres its input, which amplifies a perturbation by about
       sqrt(pi / (pi - 1)) = 1.21 per layer, so the output moves ~35x as much (relative L2)
       as a perturbation of the input (resnet50, mobilenet_v2) and FP16 rounding (5e-4 per
       op) ends at 2-3e-2. Trained residual nets are not like that: their residual branches
       add a small correction to the skip path (training starts them at 0 with
       zero_init_residual, Goyal et al. 2017; Fixup and SkipInit likewise), not a term as large
       as the skip path itself. Scale the last BatchNorm of every residual branch (resnet's
       bn2/bn3, mobilenet_v2's projection BN in blocks with a skip connection) by
       RESIDUAL_BRANCH_SCALE: the perturbation gain drops to a few, as in trained models.
    Both are part of the export's stamp (this script's hash): changing them re-exports."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over all the calibration batches
    gen = torch.Generator().manual_seed(SEED + 1)
    model.train()
    with torch.no_grad():
        for _ in range(CALIBRATION_BATCHES):
            model(torch.randn(CALIBRATION_BATCH_SIZE, *shape[1:], generator=gen))
    for m in bns:
        m.momentum = 0.1
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torchvision.models.resnet.Bottleneck):
                last = m.bn3
            elif isinstance(m, torchvision.models.resnet.BasicBlock):
                last = m.bn2
            elif isinstance(m, torchvision.models.mobilenetv2.InvertedResidual) and m.use_res_connect:
                last = m.conv[-1]
            else:
                continue
            last.weight.mul_(RESIDUAL_BRANCH_SCALE)
            last.bias.mul_(RESIDUAL_BRANCH_SCALE)


def build(name, image_size):
    """The model (eval mode) and its input, both seeded."""
    torch.manual_seed(SEED)
    if name == "bert":
        model = BertLikeEncoder()
        shape = (1, 128, 768)
    elif name == "vit_b_16":
        model = torchvision.models.vit_b_16(weights=None)
        # torchvision zero-initialises the classifier head: the output would be all zeros.
        nn.init.normal_(model.heads.head.weight, std=0.02)
        nn.init.normal_(model.heads.head.bias, std=0.02)
        shape = (1, 3, 224, 224)
    elif name == "swin_t":
        model = torchvision.models.swin_t(weights=None)  # LayerNorms, no BatchNorm to calibrate
        shape = (1, 3, image_size, image_size)
    else:
        model = getattr(torchvision.models, name)(weights=None, **CNN_ARGS.get(name, {}))
        shape = (1, 3, image_size, image_size)
        calibrate_batchnorm(model, shape)
    model.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(SEED))
    return model, x


def plain_ops(model):
    """torch 1.13 in eval mode takes a 'fast path' in nn.MultiheadAttention and
    nn.TransformerEncoderLayer (torch._transformer_encoder_layer_fwd,
    torch._native_multi_head_attention) that the ONNX exporter cannot handle. The
    fast path is only taken when autograd is not recording, so export with grad
    enabled and the parameters requiring grad: the modules then run their plain
    ops (MatMul, Softmax, LayerNormalization, ...), which is what gets exported.
    The reference output is computed the same way, so it is what the ONNX graph
    computes. Use: `with plain_ops(model): ...`."""
    for p in model.parameters():
        p.requires_grad_(True)
    return torch.enable_grad()


def stamp_of(name, image_size):
    script = open(os.path.abspath(__file__), "rb").read()
    return json.dumps({"script_sha256": hashlib.sha256(script).hexdigest(), "name": name,
                       "image_size": image_size, "opset": OPSET, "seed": SEED,
                       "torch": torch.__version__, "torchvision": torchvision.__version__,
                       "onnx": onnx.__version__}, sort_keys=True)


def file_name(name, image_size):
    return f"{name}_{image_size}" if name in SIZED and image_size != 224 else name


def export(name, out_dir, image_size, force):
    base = os.path.join(out_dir, file_name(name, image_size))
    files = [base + ".onnx", base + ".input.npy", base + ".output.npy"]
    stamp = stamp_of(name, image_size if name in SIZED else 224)
    stamp_path = base + ".stamp"
    if not force and all(os.path.exists(f) for f in files) and os.path.exists(stamp_path):
        if open(stamp_path).read() == stamp:
            print(f"{base}.onnx: up to date")
            return
    if os.path.exists(stamp_path):
        os.remove(stamp_path)

    start = time.time()
    model, x = build(name, image_size)
    with plain_ops(model):
        y = model(x).detach()
        torch.onnx.export(model, (x,), files[0], opset_version=OPSET, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
    # The checker on the path: models over 2 GB would need external data (none is here).
    onnx.checker.check_model(files[0])
    m = onnx.load(files[0], load_external_data=False)
    np.save(files[1], x.numpy().astype(np.float32))
    np.save(files[2], y.numpy().astype(np.float32))
    with open(stamp_path, "w") as f:
        f.write(stamp)
    ops = sorted({n.op_type for n in m.graph.node})
    size = os.path.getsize(files[0]) / 1e6
    print(f"{files[0]}: {size:.1f} MB, input {list(x.shape)}, output {list(y.shape)}, "
          f"{len(m.graph.node)} nodes, ops {' '.join(ops)} ({time.time() - start:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "exported"), help="output folder (default models/exported)")
    ap.add_argument("--models", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL))
    ap.add_argument("--image-size", type=int, default=224,
                    help="input height/width for the CNNs and swin_t (" + ", ".join(sorted(SIZED)) + "); ViT stays 224")
    ap.add_argument("--force", action="store_true", help="export even when the files are up to date")
    args = ap.parse_args()
    if args.image_size < 32:
        sys.exit("--image-size must be at least 32 (the CNNs downsample by 32)")
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in ALL:
            sys.exit(f"unknown model '{n}' (known: {', '.join(ALL)})")
        if n in SIZED and args.image_size < MIN_IMAGE_SIZE.get(n, 32):
            sys.exit(f"--image-size must be at least {MIN_IMAGE_SIZE[n]} for {n}")
    os.makedirs(args.out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    for n in names:
        export(n, args.out, args.image_size, args.force)


if __name__ == "__main__":
    main()
