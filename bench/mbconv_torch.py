#!/usr/bin/env python3
"""The MBConv block in PyTorch, eager and torch.compile, in the suite's JSON format.

The same block as convlab's `mbconv` op (ops/mbconv.hpp, the oracle
ref::mbconv_block in reference/blocks.hpp), built from PyTorch ops the way a
model holds it, BN folded, channels-last:

  e = φ(Conv1x1(C -> hidden)(x))                (absent when e = 1)
  d = φ(Conv2d(hidden, hidden, k, stride, pad k/2, groups hidden)(e))
  g = sigmoid(Conv1x1(Cr -> hidden)(φ(Conv1x1(hidden -> Cr)(mean_HW(d)))))   (se > 0; Cr = max(1, C*se))
  y = Conv1x1(hidden -> Cout)(d * g) (+ x when stride 1 and Cout == C)

  baselines  torch_eager (the ops as is), torch_inductor (torch.compile, default mode),
             torch_inductor_graphs (mode="reduce-overhead": Inductor's kernels as one CUDA graph)
  shapes     the GPU bench table of the mbconv op, in its order: N=128, f16, SiLU; the issue's
             goal shapes (e=6, k=3, SE 0.25: C=24@56², 40@28², 80@14², 112@14², 192@7²; 24@56²
             without SE), then EfficientNet-B0's other distinct MBConv blocks (torchvision's
             table: e=1, k=5, stride 2). Rows whose turn comes after --budget-s are left out
             (eager on every shape first, then Inductor).
  same function
             before timing, on small shapes (one per form: expand + SE, k=5 stride 2, e=1, no SE)
             the script writes x and the weights in convlab's layouts as float32 .npy and runs
             `convlab run mbconv --in ... --out y.npy`, then compares PyTorch's fp32 output with
             convlab's: relative L2 <= 1e-4, or the script stops (exit 1). Without the convlab
             program (--convlab) it says so and the rows are marked unchecked.
  checked    every timed result against a float64 evaluation of the same weights on the first
             image of the batch; relative L2 over 1e-2 marks the row an error
  timing     bench/torch_timing.py, as convlab_bench times: CUDA events around one call, L2
             flushed before each repetition, then a head start (the GPU spins while the host
             issues the call, so Python's launch gaps are not timed), warm-up calls first,
             rounds from --reps repetitions until the median settles; the row carries min_ms,
             max_ms, cv, noisy, host_ms, head_start_ms and late
  FLOPs      convlab's count (MBConvProblem::flops): 2 per MAC of expand, depthwise, the SE's two
             FC layers and project; compulsory bytes: x, the weights and y once

Output: Google Benchmark JSON, one row per (baseline, shape), named
`mbconv/gpu/<baseline>/<label>/manual_time` (label as OpTraits<MBConvProblem>::label),
real_time in ms, counters FLOP/s, bytes/s, intensity, rel_l2, baseline=1. On the lent H200,
from the repository root:

    PYTHONUNBUFFERED=1 python3 bench/mbconv_torch.py --convlab /tmp/b/convlab --out $OUT/mbconv-torch.json

Without PyTorch or a CUDA device it stops at once saying which is missing (exit 2).
"""
import math
import sys
import time

import torch_blocks  # bench/torch_blocks.py: what this script shares with convfirst_torch.py

# N,H,W,C,e,k,stride,se,Cout — the order of OpTraits<MBConvProblem>::shapes(bench, gpu)
DEFAULT_SHAPES = ";".join([
    "128,56,56,24,6,3,1,0.25,24", "128,28,28,40,6,3,1,0.25,40", "128,14,14,80,6,3,1,0.25,80",
    "128,14,14,112,6,3,1,0.25,112", "128,7,7,192,6,3,1,0.25,192", "128,56,56,24,6,3,1,0,24",
    "128,112,112,32,1,3,1,0.25,16", "128,112,112,16,6,3,2,0.25,24", "128,56,56,24,6,5,2,0.25,40",
    "128,28,28,40,6,5,1,0.25,40", "128,28,28,40,6,3,2,0.25,80", "128,14,14,80,6,5,1,0.25,112",
    "128,14,14,112,6,5,1,0.25,112", "128,14,14,112,6,5,2,0.25,192", "128,7,7,192,6,5,1,0.25,192",
    "128,7,7,192,6,3,1,0.25,320"])
CHECK_SHAPES = [(2, 7, 9, 16, 6, 3, 1, 0.25, 16), (1, 9, 7, 12, 4, 5, 2, 0.25, 20), (2, 7, 5, 16, 1, 3, 1, 0.25, 8),
                (1, 7, 7, 8, 3, 5, 1, 0.0, 8)]


def fail(message, code=2):
    SPEC.fail(message, code)


def parse_shapes(text):
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.split(",")
        if len(parts) != 9:
            fail(f"bad shape '{item}': expected N,H,W,C,e,k,stride,se,Cout")
        try:
            N, H, W, C, e, k, st = (int(v) for v in parts[:7])
            se, Co = float(parts[7]), int(parts[8])
        except ValueError:
            fail(f"bad shape '{item}': N,H,W,C,e,k,stride,Cout are integers, se a number")
        if k not in (3, 5) or st not in (1, 2) or min(N, H, W, C, e, Co) <= 0 or not 0 <= se <= 4:
            fail(f"bad shape '{item}'")
        torch_blocks.check_shape_size(SPEC, item, N * H * W * max(C * e, Co))
        shapes.append((N, H, W, C, e, k, st, se, Co))
    return shapes


def out_size(n, stride):
    return (n - 1) // stride + 1


def se_width(s):
    C, se = s[3], s[7]
    return max(1, int(math.floor(C * se))) if se > 0 else 0


def label(s, act="silu", dtype="f16"):  # OpTraits<MBConvProblem>::label
    N, H, W, C, e, k, st, se, Co = s
    return f"n{N}_{H}x{W}_c{C}_e{e}_k{k}_s{st}_se{int(round(se * 100))}_co{Co}_{act}_{dtype}"


def macs(s):
    N, H, W, C, e, k, st, se, Co = s
    hid, P, Q, cr = C * e, out_size(H, st), out_size(W, st), se_width(s)
    return N * H * W * C * (hid if e != 1 else 0) + N * P * Q * hid * k * k + N * 2 * hid * cr + N * P * Q * hid * Co


def weight_elems(s):
    N, H, W, C, e, k, st, se, Co = s
    hid, cr = C * e, se_width(s)
    w = (C * hid + hid if e != 1 else 0) + hid * k * k + hid + hid * Co + Co
    return w + (2 * hid * cr + cr + hid if cr else 0)


def min_bytes(s, elem=2):
    N, H, W, C, e, k, st, se, Co = s
    return elem * (N * H * W * C + weight_elems(s) + N * out_size(H, st) * out_size(W, st) * Co)


def make_block(torch, F, s, act, dtype, device, seed=20241201):
    """The block's parameters (convlab's scales: uniform(±sqrt(3/fan-in)), biases ±0.5) and a forward function."""
    N, H, W, C, e, k, st, se, Co = s
    hid, cr = C * e, se_width(s)
    g = torch.Generator(device="cpu").manual_seed(seed)

    def uni(shape, scale):
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale

    p = {}
    if e != 1:
        p["ew"], p["eb"] = uni((hid, C, 1, 1), math.sqrt(3 / C)), uni((hid,), 0.5)
    p["dw"], p["db"] = uni((hid, 1, k, k), math.sqrt(3 / (k * k / 2))), uni((hid,), 0.5)
    if cr:
        p["s1w"], p["s1b"] = uni((cr, hid, 1, 1), math.sqrt(3 / (hid / 4))), uni((cr,), 0.5)
        p["s2w"], p["s2b"] = uni((hid, cr, 1, 1), math.sqrt(3 / cr)), uni((hid,), 0.5)
    p["pw"], p["pb"] = uni((Co, hid, 1, 1), math.sqrt(3 / (hid / 2))), uni((Co,), 0.5)
    params = {key: v.to(device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
              if v.dim() == 4 else v.to(device=device, dtype=dtype) for key, v in p.items()}
    phi = F.relu if act == "relu" else F.silu
    residual = st == 1 and Co == C

    def forward(x):
        t = phi(F.conv2d(x, params["ew"], params["eb"])) if e != 1 else x
        d = phi(F.conv2d(t, params["dw"], params["db"], stride=st, padding=k // 2, groups=hid))
        if cr:
            m = d.mean(dim=(2, 3), keepdim=True)
            gate = torch.sigmoid(F.conv2d(phi(F.conv2d(m, params["s1w"], params["s1b"])), params["s2w"], params["s2b"]))
            d = d * gate
        y = F.conv2d(d, params["pw"], params["pb"])
        return y + x if residual else y

    return p, forward


def convlab_layouts(p):
    """The parameters in convlab's layouts (ops/mbconv.hpp), as float32 numpy arrays, in input order."""
    import numpy as np
    arrays = []
    if "ew" in p:
        arrays += [p["ew"][:, :, 0, 0].T.numpy(), p["eb"].numpy()]            # [C, hidden]
    arrays += [p["dw"].permute(0, 2, 3, 1).numpy(), p["db"].numpy()]         # [hidden, k, k, 1]
    if "s1w" in p:
        arrays += [p["s1w"][:, :, 0, 0].T.numpy(), p["s1b"].numpy(),          # [hidden, Cr]
                   p["s2w"][:, :, 0, 0].T.numpy(), p["s2b"].numpy()]          # [Cr, hidden]
    arrays += [p["pw"][:, :, 0, 0].T.numpy(), p["pb"].numpy()]               # [hidden, Cout]
    return [np.ascontiguousarray(a, dtype=np.float32) for a in arrays]


def main():
    parser = torch_blocks.arguments(__doc__, DEFAULT_SHAPES, "N,H,W,C,e,k,stride,se,Cout;... (default: the bench table)",
                                    "silu", reps=20, budget_s=110.0,
                                    budget_help="wall-clock budget: rows whose turn comes later are left out "
                                                "(default %(default)s)")
    args = parser.parse_args()
    begin = time.time()
    shapes = parse_shapes(args.shapes)
    # Inductor's default mode launches its kernels from Python one by one; at the small images the
    # host's launches, not the kernels, can set its time (and its spread). mode="reduce-overhead"
    # replays them as one CUDA graph: the time of Inductor's kernels themselves. Eager on every
    # shape first, then Inductor: when the budget runs out, the slower-to-prepare baseline's last
    # shapes are the ones left out.
    return torch_blocks.run(SPEC, args, shapes, lambda torch: [
        ("torch_eager", lambda f: f), ("torch_inductor", lambda f: torch.compile(f)),
        ("torch_inductor_graphs", lambda f: torch.compile(f, mode="reduce-overhead"))], begin)


SPEC = torch_blocks.BlockSpec(
    script="mbconv_torch.py", op="mbconv", check_shapes=CHECK_SHAPES, make_block=make_block,
    layouts=lambda p, s: convlab_layouts(p), label=label, macs=macs, min_bytes=min_bytes,
    min_left=lambda name: 8.0)


if __name__ == "__main__":
    sys.exit(main())
