#!/usr/bin/python3
"""bench/winograd_accuracy.py — why modelc's tensor-core Winograd is F(2x2, 3x3) and not F(4x4, 3x3).

Runs one 3x3 stride-1 convolution (He-initialised weights, inputs uniform in [-1, 1), zero padding)
four ways, each against the exact convolution in float64, and prints the relative L2 error:
  direct-fp16  the direct convolution of FP16-rounded X and W, accumulated exactly (what the
               tensor-core implicit GEMM computes, less its FP32 accumulation error);
  F(2x2)       Winograd F(2x2, 3x3) with the transformed input V and weights U rounded to FP16
               (the tensor cores' operands), the 16 products and the output transform exact
               (templates/winograd.cuh: V and U FP16, FP32 accumulation);
  F(4x4)       Winograd F(4x4, 3x3) (Lavin and Gray's points 0, +-1, +-2) the same way;
  output       rounding the exact result to FP16 once (the floor every FP16 program pays).

    /usr/bin/python3 bench/winograd_accuracy.py

Needs numpy only; no GPU.
"""
import numpy as np


def f16(a):
    return a.astype(np.float16).astype(np.float64)


BT2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float)
G2 = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
AT2 = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float)
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float)
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)


def direct(x, w):
    """x [C, H+2, W+2] (padded), w [M, C, 3, 3] -> [M, H, W]."""
    _, hp, wp = x.shape
    y = np.zeros((w.shape[0], hp - 2, wp - 2))
    for i in range(3):
        for j in range(3):
            y += np.einsum('mc,chw->mhw', w[:, :, i, j], x[:, i:i + hp - 2, j:j + wp - 2])
    return y


def winograd(x, w, BT, G, AT):
    m = AT.shape[0]
    a = m + 2
    U = f16(np.einsum('ai,mcij,bj->mcab', G, w, G))
    _, hp, wp = x.shape
    y = np.zeros((w.shape[0], hp - 2, wp - 2))
    for ti in range((hp - 2) // m):
        for tj in range((wp - 2) // m):
            d = x[:, ti * m:ti * m + a, tj * m:tj * m + a]
            V = f16(np.einsum('ai,cij,bj->cab', BT, d, BT))
            M = np.einsum('mcab,cab->mab', U, V)
            y[:, ti * m:ti * m + m, tj * m:tj * m + m] = np.einsum('ia,mab,jb->mij', AT, M, AT)
    return y


def main():
    rng = np.random.default_rng(0)
    print("| C | M | HxW | direct-fp16 | F(2x2) | F(4x4) | output rounding |")
    print("|---|---|---|---|---|---|---|")
    for C, M, hw in [(64, 64, 16), (256, 256, 12), (512, 512, 8)]:
        x = np.zeros((C, hw + 2, hw + 2))
        x[:, 1:-1, 1:-1] = rng.uniform(-1, 1, (C, hw, hw))
        w = rng.normal(0, np.sqrt(2 / (9 * C)), (M, C, 3, 3))
        ref = direct(x, w)

        def rl2(y):
            return np.linalg.norm(y - ref) / np.linalg.norm(ref)

        xh, wh = f16(x), f16(w)
        print(f"| {C} | {M} | {hw}x{hw} | {rl2(direct(xh, wh)):.2e} | {rl2(winograd(xh, wh, BT2, G2, AT2)):.2e} | "
              f"{rl2(winograd(xh, wh, BT4, G4, AT4)):.2e} | {rl2(f16(ref)):.2e} |")


if __name__ == "__main__":
    main()
