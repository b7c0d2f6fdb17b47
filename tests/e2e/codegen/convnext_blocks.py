#!/usr/bin/python3
"""ConvNeXt blocks as torchvision exports them, with no Transpose and no elementwise kernel (issue 30;
run by ctest, see CMakeLists.txt beside).

    convnext_blocks.py --modelc BIN --work DIR [--jobs N]

The model (torch, seeded, exported at opset 17): torchvision's own modules, input x [1, 3, 64, 64]:

    stem   Conv 4x4 s4 (3 -> 32), LayerNorm2d            (Transpose, LayerNormalization, Transpose)
    stage  CNBlock(32) x 2: depthwise 7x7 Conv, Transpose (0, 2, 3, 1), LayerNormalization over C,
           MatMul [.., 32] x [32, 128] + bias, GELU (Erf), MatMul [.., 128] x [128, 32] + bias,
           Transpose (0, 3, 1, 2), Mul (layer scale [C, 1, 1]), Add (the block's input)
    down   LayerNorm2d, Conv 2x2 s2 (32 -> 64)
    stage  CNBlock(64)
    head   features [1, 64, 8, 8] (an output), GlobalAveragePool, LayerNorm2d, Linear (10): logits

Realistic parameters: PyTorch's default Conv / Linear initialisation, biases and LayerNorm affines
drawn around their defaults, layer scales per channel in [0.01, 0.1] (torchvision initialises them
at 1e-6; trained ConvNeXts hold 1e-3 .. 1e-1), so the scale and the residual matter to the outputs.

Checks, --fp16 with --arch sm_80 and with sm_90 (report.json): no Transpose kernel (each one is the
same memory as its channels-last buffer: fold_operand_views; the result Transpose of a block before
the downsampling LayerNorm2d's cancels: sink_reshapes), no elementwise kernel but the model's
boundary Casts and the input's layout conversion (the layer scale folded into the second MatMul:
fold_batchnorm; the residual Add its epilogue: sink_reshapes, fuse_epilogue), each block's second
MatMul kernel covering its Mul and Add; then `modelc verify --emulate --fp16 --arch sm_80` passes
(within 1.25x + 1e-3 of the FP16 simulation's error), and FP32 and --bf16 --arch sm_80 compile to no
Transpose or in-block elementwise kernel either and pass verify --emulate.
"""

import json
import os
import sys

from fp16_islands import arguments, fail, run, verify  # (beside this script)

SEED = 20261128


def build(path):
    import torch
    from torch import nn
    from torchvision.models.convnext import CNBlock, LayerNorm2d

    torch.manual_seed(SEED)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 4, stride=4), LayerNorm2d(32, eps=1e-6))
            self.stage1 = nn.Sequential(CNBlock(32, 1e-6, 0.0), CNBlock(32, 1e-6, 0.0))
            self.down = nn.Sequential(LayerNorm2d(32, eps=1e-6), nn.Conv2d(32, 64, 2, stride=2))
            self.stage2 = nn.Sequential(CNBlock(64, 1e-6, 0.0))
            self.norm = LayerNorm2d(64, eps=1e-6)
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            f = self.stage2(self.down(self.stage1(self.stem(x))))
            logits = self.fc(torch.flatten(self.norm(nn.functional.adaptive_avg_pool2d(f, 1)), 1))
            return f, logits

    net = Net().eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                m.bias.uniform_(-0.1, 0.1)
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
            if isinstance(m, CNBlock):
                m.layer_scale.uniform_(0.01, 0.1)
    x = torch.randn(1, 3, 64, 64)
    torch.onnx.export(net, x, path, opset_version=17, input_names=["x"], output_names=["features", "logits"])


def compile_report(modelc, model, out, flags):
    rc, _ = run([modelc, model, "-o", out] + flags)
    if rc != 0:
        fail(f"modelc {' '.join(flags)} exited with {rc}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def check(report, what):
    """No Transpose kernel (but FP32's into the NCHW model output, its layout conversion: the product
    before it adds the residual, so it cannot write through it), no elementwise kernel but boundary
    Casts and the conversions of the model's inputs and outputs (FP32: the head's pool reads the
    NCHW features output back as NHWC),
    and each block's layer scale (Mul) and residual (Add) in its second MatMul's kernel."""
    kernels = report["kernels"]
    families = {}
    for k in kernels:
        families[k["family"]] = families.get(k["family"], 0) + 1
    print(f"{what}: {len(kernels)} kernels {dict(sorted(families.items()))}")
    for k in kernels:
        to_output = all(o.get("space") == "output" for o in k["outputs"])
        if (k["family"] == "transpose" or k.get("op") == "Transpose") and not to_output:
            fail(f"{what}: a Transpose kernel {k['id']} ({k['nodes']}): {k.get('note', '')}")
        note = k.get("note", "")
        boundary = any(f"'{v}'" in note for v in ("x", "features", "logits"))  # the model's inputs and outputs
        if "layout conversion" in note and not boundary:
            fail(f"{what}: a layout conversion inside the blocks, {k['id']}: {note}")
        if k["family"] == "elementwise" and k.get("op") != "Cast" and "layout conversion" not in note:
            fail(f"{what}: a standalone elementwise kernel {k['id']} ({k.get('op')} {k['nodes']}): {note}")
    for block in ("stage1.0", "stage1.1", "stage2.0"):
        stage = block.split(".")[0]
        mul, add = f"/{stage}/{block}/Mul", f"/{stage}/{block}/Add"
        covering = [k for k in kernels if mul in k["nodes"] and add in k["nodes"]]
        if len(covering) != 1 or covering[0]["family"] != "gemm":
            fail(f"{what}: {block}'s layer scale {mul} and residual {add} are not in one product's kernel: "
                 f"{[(k['id'], k['family']) for k in kernels if mul in k['nodes'] or add in k['nodes']]}")


def main():
    a = arguments(__doc__)
    model = os.path.join(a.work, "convnext_blocks.onnx")
    build(model)
    cases = [("fp16", ["--fp16", "--arch", "sm_80"], True), ("fp16_sm90", ["--fp16", "--arch", "sm_90"], False),
             ("bf16", ["--bf16", "--arch", "sm_80"], True), ("fp32", [], True)]
    for name, flags, verified in cases:
        check(compile_report(a.modelc, model, os.path.join(a.work, "out_" + name), flags), name)
    for name, flags, verified in cases:
        if verified:
            verify(a.modelc, model, os.path.join(a.work, "verify_" + name), a.jobs, flags, name)
    print("OK")


if __name__ == "__main__":
    sys.exit(main())
