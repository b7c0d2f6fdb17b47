#!/usr/bin/python3
"""Writes the small models of issue 14's recurrent, normalization, vision and control-flow ops into
models/ (each under 1 MB), with torch's output on a saved input:

    tiny_rnn.onnx           (2x10x16)  a 2-layer bidirectional LSTM, a GRU and a ReLU RNN, exported by
                                       torch.onnx.export (opset 17), then a Linear on the last step
    tiny_groupnorm.onnx     (1x3x16x16) a conv net with GroupNormalization (per channel, opset 21) and
                                       LRN, built from torch modules' weights
    tiny_detect.onnx        (1x3x32x32) a detection head: RoiAlign on fixed regions, GridSample on a
                                       learned offset grid, NonMaxSuppression (a static bound of 10 rows)
    tiny_control_flow.onnx  (1x4x8x8)  a weight-tied residual block run by a Loop (3 iterations, a
                                       scan of per-iteration means) and an If on a shape condition

NAME.input.npy holds the input; NAME.outputs.npz every output by name (torch's values; the
NonMaxSuppression rows padded with -1 to the static bound, as modelc gives them). The ONNX graphs
that torch 1.13 cannot export (GroupNormalization is opset 18, Loop / If need scripting) are built
with onnx.helper from the same torch modules' weights; torch computes their outputs. Seeded: the
same files every run.

    /usr/bin/python3 models/make_ops_models.py [--out DIR] [--only NAME]
"""
import argparse
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import TensorProto, helper, numpy_helper

MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


def t2n(t):
    return t.detach().numpy().astype(np.float32)


def save(out, name, m, x, outputs):
    onnx.checker.check_model(m) if m.opset_import[0].version <= 17 else None
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + ".input.npy"), x)
    np.savez(os.path.join(out, name + ".outputs.npz"), **outputs)
    size = os.path.getsize(os.path.join(out, name + ".onnx"))
    print(f"{name}.onnx: {size} bytes, outputs {[(k, v.shape) for k, v in outputs.items()]}")


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


# ---- tiny_rnn: torch export ------------------------------------------------------------------------

class TinyRnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(48, 20, batch_first=True)
        self.rnn = nn.RNN(20, 12, nonlinearity="relu", batch_first=True)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        y, _ = self.rnn(y)
        return self.fc(y[:, -1])


@model
def tiny_rnn(out):
    torch.manual_seed(1)
    m = TinyRnn().eval()
    x = torch.randn(2, 10, 16)
    path = os.path.join(out, "tiny_rnn.onnx")
    torch.onnx.export(m, x, path, opset_version=17, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        y = m(x)
    save(out, "tiny_rnn", onnx.load(path), t2n(x), {"y": t2n(y)})


# ---- tiny_groupnorm: Conv, GroupNormalization, LRN ---------------------------------------------------

@model
def tiny_groupnorm(out):
    torch.manual_seed(2)
    c1, g1 = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16)
    c2, g2 = nn.Conv2d(16, 24, 3, stride=2, padding=1), nn.GroupNorm(6, 24, eps=1e-3)
    c3 = nn.Conv2d(24, 8, 1)
    lrn = nn.LocalResponseNorm(5, alpha=1e-3, beta=0.75, k=2.0)
    for g in (g1, g2):  # affine parameters away from (1, 0)
        nn.init.uniform_(g.weight, 0.5, 1.5)
        nn.init.uniform_(g.bias, -0.5, 0.5)
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        y = c3(F.relu(g2(c2(lrn(F.relu(g1(c1(x))))))))
    inits = []

    def conv(name, c, src, dst, **attrs):
        inits.extend([init(name + ".w", t2n(c.weight)), init(name + ".b", t2n(c.bias))])
        return helper.make_node("Conv", [src, name + ".w", name + ".b"], [dst], name=name, **attrs)

    def gn(name, g, src, dst):
        inits.extend([init(name + ".scale", t2n(g.weight)), init(name + ".bias", t2n(g.bias))])
        return helper.make_node("GroupNormalization", [src, name + ".scale", name + ".bias"], [dst], name=name,
                                num_groups=g.num_groups, epsilon=g.eps)

    nodes = [conv("conv1", c1, "x", "a1", pads=[1, 1, 1, 1]), gn("gn1", g1, "a1", "b1"),
             helper.make_node("Relu", ["b1"], ["r1"]),
             helper.make_node("LRN", ["r1"], ["l1"], size=5, alpha=1e-3, beta=0.75, bias=2.0),
             conv("conv2", c2, "l1", "a2", pads=[1, 1, 1, 1], strides=[2, 2]), gn("gn2", g2, "a2", "b2"),
             helper.make_node("Relu", ["b2"], ["r2"]), conv("conv3", c3, "r2", "y")]
    g = helper.make_graph(nodes, "tiny_groupnorm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], producer_name="modelc make_ops_models")
    m.ir_version = 10
    save(out, "tiny_groupnorm", m, t2n(x), {"y": t2n(y)})


# ---- tiny_detect: RoiAlign, GridSample, NonMaxSuppression --------------------------------------------

@model
def tiny_detect(out):
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    feat_conv = nn.Conv2d(3, 8, 3, padding=1)
    off_conv, score_conv, box_conv = nn.Conv2d(8, 2, 1, stride=2), nn.Conv2d(8, 2, 1, stride=4), nn.Conv2d(8, 4, 1, stride=4)
    x = torch.randn(1, 3, 32, 32)
    rois = np.array([[1.5, 2.0, 20.0, 14.5], [8.0, 8.0, 30.0, 31.0], [0.0, 0.0, 31.0, 31.0], [12.2, 3.3, 17.9, 9.1]],
                    dtype=np.float32)
    # A rotation of 10 degrees as the base grid (align_corners 0), the learned offsets added to it.
    th = np.deg2rad(10.0)
    theta = torch.tensor([[[np.cos(th), -np.sin(th), 0.05], [np.sin(th), np.cos(th), -0.1]]], dtype=torch.float32)
    base = F.affine_grid(theta, [1, 8, 16, 16], align_corners=False)
    # 64 anchors on an 8x8 lattice (4-pixel cells, 6-pixel boxes: neighbours overlap with IoU 0.2) and
    # scores far apart (each class a permutation of 64 levels): FP16 cannot change a decision.
    cy, cx = np.meshgrid(np.arange(8) * 4 + 2.0, np.arange(8) * 4 + 2.0, indexing="ij")
    anchors = np.stack([cy - 3, cx - 3, cy + 3, cx + 3], axis=-1).reshape(1, 64, 4).astype(np.float32)
    levels = np.stack([rng.permutation(64) for _ in range(2)]).reshape(1, 2, 64).astype(np.float32) / 64.0
    with torch.no_grad():
        feat = F.relu(feat_conv(x))
        roi_feat = torchvision.ops.roi_align(feat, [torch.from_numpy(rois)], output_size=(4, 4), spatial_scale=1.0,
                                             sampling_ratio=2, aligned=True)
        grid = base + 0.1 * torch.tanh(off_conv(feat).permute(0, 2, 3, 1))
        warped = F.grid_sample(feat, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        scores = torch.from_numpy(levels) + 0.002 * torch.tanh(score_conv(feat).reshape(1, 2, 64))
        boxes = torch.from_numpy(anchors) + 0.05 * torch.tanh(box_conv(feat).reshape(1, 4, 64).permute(0, 2, 1))
    # NonMaxSuppression per class with torchvision (boxes as [x1, y1, x2, y2]): score above 0.3,
    # IoU above 0.15 suppressed, 5 per class.
    sel = []
    xyxy = boxes[0][:, [1, 0, 3, 2]]
    for c in range(2):
        keep = torch.nonzero(scores[0, c] > 0.3).flatten()
        kept = keep[torchvision.ops.nms(xyxy[keep], scores[0, c, keep], 0.15)][:5]
        sel += [[0, c, int(i)] for i in kept]
    sel = np.array(sel + [[-1, -1, -1]] * (10 - len(sel)), dtype=np.int64)

    inits = [init("rois", rois), init("batch_indices", np.zeros(4, dtype=np.int64)), init("base_grid", t2n(base)),
             init("anchors", anchors), init("levels", levels), init("max_out", np.array([5], dtype=np.int64)),
             init("iou", np.array([0.15], dtype=np.float32)), init("score_min", np.array([0.3], dtype=np.float32)),
             init("k_grid", np.array(0.1, dtype=np.float32)), init("k_score", np.array(0.002, dtype=np.float32)),
             init("k_box", np.array(0.05, dtype=np.float32)), init("score_shape", np.array([1, 2, 64], dtype=np.int64)),
             init("box_shape", np.array([1, 4, 64], dtype=np.int64))]

    def conv(name, c, src, dst, **attrs):
        inits.extend([init(name + ".w", t2n(c.weight)), init(name + ".b", t2n(c.bias))])
        return helper.make_node("Conv", [src, name + ".w", name + ".b"], [dst], name=name, **attrs)

    nodes = [conv("feat", feat_conv, "x", "f0", pads=[1, 1, 1, 1]), helper.make_node("Relu", ["f0"], ["feat"]),
             helper.make_node("RoiAlign", ["feat", "rois", "batch_indices"], ["roi_features"], output_height=4,
                              output_width=4, sampling_ratio=2, spatial_scale=1.0, coordinate_transformation_mode="half_pixel"),
             conv("offsets", off_conv, "feat", "o0", strides=[2, 2]),
             helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 3, 1]), helper.make_node("Tanh", ["o1"], ["o2"]),
             helper.make_node("Mul", ["o2", "k_grid"], ["o3"]), helper.make_node("Add", ["base_grid", "o3"], ["grid"]),
             helper.make_node("GridSample", ["feat", "grid"], ["warped"], mode="bilinear", padding_mode="zeros",
                              align_corners=0),
             conv("scores", score_conv, "feat", "s0", strides=[4, 4]),
             helper.make_node("Reshape", ["s0", "score_shape"], ["s1"]), helper.make_node("Tanh", ["s1"], ["s2"]),
             helper.make_node("Mul", ["s2", "k_score"], ["s3"]), helper.make_node("Add", ["levels", "s3"], ["scores"]),
             conv("boxes", box_conv, "feat", "b0", strides=[4, 4]),
             helper.make_node("Reshape", ["b0", "box_shape"], ["b1"]),
             helper.make_node("Transpose", ["b1"], ["b2"], perm=[0, 2, 1]), helper.make_node("Tanh", ["b2"], ["b3"]),
             helper.make_node("Mul", ["b3", "k_box"], ["b4"]), helper.make_node("Add", ["anchors", "b4"], ["boxes"]),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_min"],
                              ["selected_indices"])]
    outs = [helper.make_tensor_value_info("roi_features", TensorProto.FLOAT, [4, 8, 4, 4]),
            helper.make_tensor_value_info("warped", TensorProto.FLOAT, [1, 8, 16, 16]),
            helper.make_tensor_value_info("selected_indices", TensorProto.INT64, [None, 3])]
    g = helper.make_graph(nodes, "tiny_detect", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], producer_name="modelc make_ops_models")
    m.ir_version = 8
    save(out, "tiny_detect", m, t2n(x),
         {"roi_features": t2n(roi_feat), "warped": t2n(warped), "selected_indices": sel})


# ---- tiny_control_flow: Loop and If ------------------------------------------------------------------

@model
def tiny_control_flow(out):
    torch.manual_seed(4)
    stem, block = nn.Conv2d(4, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
    nn.init.normal_(block.weight, 0, 0.05)
    head = nn.Linear(8, 3)
    x = torch.randn(1, 4, 8, 8)
    with torch.no_grad():
        h = stem(x)
        means = []
        for _ in range(3):
            h = F.relu(block(h)) + h
            means.append(h.mean(dim=(2, 3), keepdim=True))
        y = head(h.mean(dim=(2, 3)))  # the If's then branch: 8 rows, so global average pooling
    F_, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    inits = [init("stem.w", t2n(stem.weight)), init("stem.b", t2n(stem.bias)), init("block.w", t2n(block.weight)),
             init("block.b", t2n(block.bias)), init("head.w", t2n(head.weight)), init("head.b", t2n(head.bias)),
             init("trips", np.array(3, dtype=np.int64)), init("zero", np.array(0, dtype=np.int64)),
             init("two", np.array(2, dtype=np.int64)), init("eight", np.array(8, dtype=np.int64))]
    body = helper.make_graph(
        [helper.make_node("Conv", ["h_in", "block.w", "block.b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["r", "h_in"], ["h_out"]),
         helper.make_node("ReduceMean", ["h_out"], ["mean"], axes=[2, 3], keepdims=1),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "block", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", BOOL, []),
                  helper.make_tensor_value_info("h_in", F_, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("cond_out", BOOL, []), helper.make_tensor_value_info("h_out", F_, [1, 8, 8, 8]),
         helper.make_tensor_value_info("mean", F_, [1, 8, 1, 1])])
    then_g = helper.make_graph([helper.make_node("GlobalAveragePool", ["h"], ["p"]),
                                helper.make_node("Flatten", ["p"], ["v"])], "avg", [],
                               [helper.make_tensor_value_info("v", F_, [1, 8])])
    else_g = helper.make_graph([helper.make_node("GlobalMaxPool", ["h"], ["q"]),
                                helper.make_node("Flatten", ["q"], ["w"])], "max", [],
                               [helper.make_tensor_value_info("w", F_, [1, 8])])
    nodes = [helper.make_node("Conv", ["x", "stem.w", "stem.b"], ["h0"], pads=[1, 1, 1, 1]),
             helper.make_node("Loop", ["trips", "", "h0"], ["h", "means"], body=body),
             helper.make_node("Shape", ["h"], ["shape"]), helper.make_node("Gather", ["shape", "two"], ["rows"], axis=0),
             helper.make_node("Equal", ["rows", "eight"], ["square"]),
             helper.make_node("If", ["square"], ["pooled"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Gemm", ["pooled", "head.w", "head.b"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "tiny_control_flow", [helper.make_tensor_value_info("x", F_, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", F_, [1, 3]),
                           helper.make_tensor_value_info("means", F_, [3, 1, 8, 1, 1])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="modelc make_ops_models")
    m.ir_version = 8
    save(out, "tiny_control_flow", m, t2n(x), {"y": t2n(y), "means": t2n(torch.stack(means))})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    for name, fn in MODELS.items():
        if a.only in name:
            fn(a.out)


if __name__ == "__main__":
    main()
