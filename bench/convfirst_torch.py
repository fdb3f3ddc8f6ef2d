#!/usr/bin/env python3
"""The ConvFirst block in PyTorch, eager and torch.compile, in the suite's JSON format.

The same block as convlab's `convfirst` op (ops/convfirst.hpp, the oracle
ref::convfirst_block in reference/blocks.hpp), built from PyTorch modules the
way a model would hold it, BN folded, channels-last:

  stride 1   t = Conv2d(C, C, 3, pad 1, groups C/8, bias)(x)
             y = Conv1x1(hidden -> C)(φ(Conv1x1(C -> hidden)(t))) + x
  stride 2   t = the same conv; t' = blur(t); s = blur(x)           blur: depthwise binomial 3x3, stride 2, pad 1
             y = Conv1x1(φ(Conv1x1(t'))) + (Conv1x1(C -> Cout)(s) if Cout != C else s)

  baselines  torch_eager (the module as is), torch_inductor (torch.compile, default mode),
             torch_inductor_graphs (mode="reduce-overhead": Inductor's kernels as one CUDA graph),
             torch_inductor_max_autotune (mode="max-autotune", only while the time budget lasts)
  shapes     the GPU bench table of the convfirst op: N=128, f16, α=4, ReLU at C=64@56²,
             128@28², 256@14², 512@7², and the stride-2 block 64@56² -> 128@28²
  same function
             before timing, on a small shape per form (stride 1; stride 2 with a projection)
             the script writes x and the weights in convlab's layouts as float32 .npy
             (x NHWC, conv_w KRSC [C,3,3,8], u [C,hidden], a, v [hidden,Cout], b, shortcut_w
             [C,Cout], shortcut_b), runs `convlab run convfirst --in ... --out y.npy` (the
             first CPU variant that takes them) and compares PyTorch's fp32 output with
             convlab's: relative L2 <= 1e-4, or the script stops (exit 1). Without the
             convlab program (--convlab) it says so and the rows are marked unchecked.
  checked    every timed result against a float64 evaluation of the same modules on
             the first image of the batch; relative L2 over 1e-2 marks the row an error
  timing     bench/torch_timing.py, as convlab_bench times: CUDA events around one call, L2
             flushed before each repetition, then a head start (the GPU spins while the host
             issues the call, so Python's launch gaps are not timed), warm-up calls first,
             rounds from --reps repetitions until the median settles; the row carries min_ms,
             max_ms, cv, noisy, host_ms, head_start_ms and late
  FLOPs      convlab's count (ConvFirstProblem::flops): 2 per MAC of the grouped conv
             (N·H·W·C·72), the two 1x1 layers and the projection; compulsory bytes: x,
             the weights and y once (the fused plan's DRAM floor)

Output: Google Benchmark JSON, one row per (baseline, shape), named
`convfirst/gpu/<baseline>/<label>/manual_time`, real_time in ms, counters FLOP/s,
bytes/s, intensity, rel_l2, baseline=1. On the lent H200, from the repository root:

    PYTHONUNBUFFERED=1 python3 bench/convfirst_torch.py --convlab /tmp/b/convlab --out $OUT/convfirst-torch.json

Without PyTorch or a CUDA device it stops at once saying which is missing (exit 2).
"""
import math
import sys
import time

import torch_blocks  # bench/torch_blocks.py: what this script shares with mbconv_torch.py

DEFAULT_SHAPES = "128,56,56,64,256,64,1;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1;" \
                 "128,56,56,64,256,128,2"
CHECK_SHAPES = [(2, 7, 9, 16, 64, 16, 1), (1, 9, 7, 16, 48, 32, 2)]  # small: N,H,W,C,hidden,Cout,stride


def fail(message, code=2):
    SPEC.fail(message, code)


def parse_shapes(text):
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.split(",")
        if len(parts) != 7:
            fail(f"bad shape '{item}': expected N,H,W,C,hidden,Cout,stride")
        try:
            N, H, W, C, hid, Co, st = (int(v) for v in parts)
        except ValueError:
            fail(f"bad shape '{item}': N,H,W,C,hidden,Cout,stride are integers")
        if st not in (1, 2) or min(N, H, W, C, hid, Co) <= 0:
            fail(f"bad shape '{item}': sizes above 0, stride 1 or 2")
        torch_blocks.check_shape_size(SPEC, item, N * H * W * max(C, hid, Co))
        shapes.append((N, H, W, C, hid, Co, st))
    return shapes


def out_size(n, stride):
    return n if stride == 1 else (n - 1) // 2 + 1


def label(s, act="relu", dtype="f16"):  # OpTraits<ConvFirstProblem>::label
    N, H, W, C, hid, Co, st = s
    return f"n{N}_{H}x{W}_c{C}_h{hid}_co{Co}_s{st}_{act}_{dtype}"


def macs(s):
    N, H, W, C, hid, Co, st = s
    P, Q = out_size(H, st), out_size(W, st)
    m = N * H * W * C * 72 + N * P * Q * (C * hid + hid * Co)
    if st == 2 and Co != C:
        m += N * P * Q * C * Co
    return m


def min_bytes(s, elem=2):
    N, H, W, C, hid, Co, st = s
    P, Q = out_size(H, st), out_size(W, st)
    weights = C * 72 + C + C * hid + hid + hid * Co + Co + ((C * Co + Co) if st == 2 and Co != C else 0)
    return elem * (N * H * W * C + weights + N * P * Q * Co)


def make_block(torch, F, s, act, dtype, device, seed=20241201):
    """The block's parameters (convlab's scales: uniform(±sqrt(3/fan-in)), biases ±0.5) and a forward function."""
    N, H, W, C, hid, Co, st = s
    g = torch.Generator(device="cpu").manual_seed(seed)

    def uni(shape, scale):
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale

    p = {
        "conv_w": uni((C, 8, 3, 3), math.sqrt(3 / 72)),  # OIHW, groups C/8
        "conv_b": uni((C,), 0.5),
        "u": uni((hid, C, 1, 1), math.sqrt(3 / C)),     # expand as a 1x1 conv
        "a": uni((hid,), 0.5),
        "v": uni((Co, hid, 1, 1), math.sqrt(3 / (hid / 2))),
        "b": uni((Co,), 0.5),
    }
    if st == 2 and Co != C:
        p["sw"] = uni((Co, C, 1, 1), math.sqrt(3 / C))
        p["sb"] = uni((Co,), 0.5)
    binom = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
    p["blur"] = (binom[:, None] * binom[None, :] / 16).expand(C, 1, 3, 3).contiguous()
    params = {k: v.to(device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
              if v.dim() == 4 else v.to(device=device, dtype=dtype) for k, v in p.items()}
    phi = F.relu if act == "relu" else F.silu

    def forward(x):
        t = F.conv2d(x, params["conv_w"], params["conv_b"], padding=1, groups=C // 8)
        shortcut = x
        if st == 2:
            t = F.conv2d(t, params["blur"], None, stride=2, padding=1, groups=C)
            shortcut = F.conv2d(x, params["blur"], None, stride=2, padding=1, groups=C)
            if Co != C:
                shortcut = F.conv2d(shortcut, params["sw"], params["sb"])
        h = phi(F.conv2d(t, params["u"], params["a"]))
        return F.conv2d(h, params["v"], params["b"]) + shortcut

    return p, forward


def convlab_layouts(p, s):
    """The parameters in convlab's layouts (ops/convfirst.hpp), as float32 numpy arrays, in input order."""
    import numpy as np
    N, H, W, C, hid, Co, st = s
    arrays = [
        p["conv_w"].permute(0, 2, 3, 1).numpy(),  # OIHW -> KRSC [C, 3, 3, 8]
        p["conv_b"].numpy(),
        p["u"][:, :, 0, 0].T.numpy(),            # [C, hidden]
        p["a"].numpy(),
        p["v"][:, :, 0, 0].T.numpy(),            # [hidden, Cout]
        p["b"].numpy(),
    ]
    if "sw" in p:
        arrays += [p["sw"][:, :, 0, 0].T.numpy(), p["sb"].numpy()]
    return [np.ascontiguousarray(a, dtype=np.float32) for a in arrays]


def main():
    parser = torch_blocks.arguments(__doc__, DEFAULT_SHAPES, "N,H,W,C,hidden,Cout,stride;... (default: %(default)s)",
                                    "relu", reps=30, budget_s=240.0,
                                    budget_help="wall-clock budget: max-autotune runs only while enough of it is left")
    parser.add_argument("--no-max-autotune", action="store_true")
    args = parser.parse_args()
    begin = time.time()
    shapes = parse_shapes(args.shapes)

    # As in mbconv_torch.py: Inductor replayed as one CUDA graph, its kernels without the host's launches.
    # Eager on every shape first, then Inductor, then max-autotune: when the budget runs out, the
    # slower-to-prepare baselines are the ones left out.
    def variants(torch):
        rows = [("torch_eager", lambda f: f), ("torch_inductor", lambda f: torch.compile(f)),
                ("torch_inductor_graphs", lambda f: torch.compile(f, mode="reduce-overhead"))]
        if not args.no_max_autotune:
            rows.append(("torch_inductor_max_autotune", lambda f: torch.compile(f, mode="max-autotune")))
        return rows

    return torch_blocks.run(SPEC, args, shapes, variants, begin)


SPEC = torch_blocks.BlockSpec(
    script="convfirst_torch.py", op="convfirst", check_shapes=CHECK_SHAPES, make_block=make_block,
    layouts=convlab_layouts, label=label, macs=macs, min_bytes=min_bytes,
    min_left=lambda name: 90.0 if name.endswith("max_autotune") else 15.0)


if __name__ == "__main__":
    sys.exit(main())
