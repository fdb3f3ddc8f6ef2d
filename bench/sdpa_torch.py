#!/usr/bin/env python3
"""PyTorch's fused attention on the lesson 09 shapes, in the suite's JSON format.

Times torch.nn.functional.scaled_dot_product_attention with one back end at a
time (torch.nn.attention.sdpa_kernel), so that lesson 09 can put PyTorch's
FlashAttention-2 and cuDNN kernels beside convlab's own rungs and its unfused
cuBLAS baseline:

  back ends  flash  -> variant torch_sdpa_flash   (FlashAttention-2, Dao's kernels)
             cudnn  -> variant torch_sdpa_cudnn   (cuDNN's fused attention)
             efficient, math on request (--backends)
  shapes     the fp16 rows of the attention op's GPU bench table (ops/attention.cpp):
             B=4, H=16, N=4096, d=128 non-causal and causal, d=64 non-causal; that
             table also has bf16 d=128 and an fp32 N=1024 row, which lesson 09 does
             not compare (override with --shapes "B,H,N,d,causal,dtype;...")
  checked    against float64 attention on the first and last head, with convlab's
             own bound (core/compare.cpp, tolerance_for at depth d + N): relative L2
             <= 8·(2^-24·sqrt(d+N) + u) and max |error| <= 32·(same)·max |reference|,
             u the dtype's unit roundoff; a row outside it is written as an error
  inputs     q, k, v [B, H, N, d] uniform(-1, 1), as convlab's harness draws them;
             scale = 1/sqrt(d). PyTorch's is_causal is top-left aligned (its mask is
             ones(L, S).tril()), like convlab's reference; at Nq == Nk all agree.
  timing     bench/torch_timing.py, as convlab_bench times: CUDA events around one call,
             the L2 flushed before each repetition, then a head start (the GPU spins while the
             host issues the call), warm-up calls first, rounds from --reps repetitions until
             the median settles (real_time); min_ms, max_ms, cv, noisy, host_ms, head_start_ms,
             late.
  FLOPs      convlab's convention (ops/attention.hpp): 4*d per visible
             (query, key) pair: 4*B*H*N^2*d non-causal, about half of it causal.
  check      each result is compared, on its first and last (b, h) head, with
             a float64 computation of the same formula; the relative L2 error is
             the row's rel_l2 counter, and a row over 1e-2 is marked as an error.

Output: Google Benchmark JSON as bench/README.md describes: context (date, host,
GPU, torch/CUDA/cuDNN versions) and one row per (back end, shape), named
`attention/gpu/<variant>/<label>/manual_time` with real_time in ms, FLOP/s,
bytes/s, intensity, pct_peak (against --peak-tflops when given) and
workspace_bytes 0. A back end that cannot run a shape gets a row with
error_occurred and error_message; the run goes on.

On the lent H200, from the repository root:

    python3 bench/sdpa_torch.py --out $OUT/sdpa-torch.json

then file the JSON as bench/results/<date>-h200/sdpa-torch.json and run
`python3 scripts/lesson_tables.py`. Without PyTorch or without a CUDA device
the script stops at once with a message saying which is missing (exit 2).
"""
import argparse
import datetime
import json
import math
import socket
import sys

from torch_timing import row_fields, time_gpu_call  # bench/torch_timing.py

DEFAULT_SHAPES = "4,16,4096,128,0,f16;4,16,4096,128,1,f16;4,16,4096,64,0,f16"
BACKENDS = {  # our --backends name -> (SDPBackend attribute, convlab variant name)
    "flash": ("FLASH_ATTENTION", "torch_sdpa_flash"),
    "cudnn": ("CUDNN_ATTENTION", "torch_sdpa_cudnn"),
    "efficient": ("EFFICIENT_ATTENTION", "torch_sdpa_efficient"),
    "math": ("MATH", "torch_sdpa_math"),
}
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}  # core/dtype.hpp
TOLERANCE_L2, TOLERANCE_ABS = 8.0, 32.0                                     # core/compare.hpp


def tolerance(dtype, depth):
    """convlab's bound (core/compare.cpp, tolerance_for): (relative L2, max-abs relative to max|ref|)."""
    scale = UNIT_ROUNDOFF["f32"] * math.sqrt(max(depth, 1)) + UNIT_ROUNDOFF[dtype]
    return TOLERANCE_L2 * scale, TOLERANCE_ABS * scale


def fail(message):
    print(f"sdpa_torch.py: {message}", file=sys.stderr)
    sys.exit(2)


def load_torch():
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as error:
        fail(f"needs PyTorch >= 2.3 (torch.nn.attention.sdpa_kernel), which this Python lacks ({error}); "
             "run it on the GPU machine, e.g. `pip install torch` into the Python you use")
    if not torch.cuda.is_available():
        fail(f"PyTorch {torch.__version__} sees no CUDA device (torch.version.cuda = {torch.version.cuda}); "
             "this script measures GPU kernels only")
    return torch, SDPBackend, sdpa_kernel


# The largest tensor a shape may ask for, in elements: a mistyped shape stops with a line, not with
# an allocation the device cannot hold.
kMaxElements = 2 ** 32


def parse_shapes(text):
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.split(",")
        if len(parts) != 6 or parts[5] not in DTYPE_BYTES:
            fail(f"bad shape '{item}': expected B,H,N,d,causal,dtype with dtype f16, bf16 or f32")
        try:
            B, H, N, d, causal = (int(p) for p in parts[:5])
        except ValueError:
            fail(f"bad shape '{item}': B,H,N,d,causal are integers")
        if min(B, H, N, d) <= 0 or causal not in (0, 1):
            fail(f"bad shape '{item}': B, H, N and d above 0, causal 0 or 1")
        if B * H * N * max(N, d) > kMaxElements:  # the score matrix of the math backend, or q
            fail(f"bad shape '{item}': a tensor of {B * H * N * max(N, d)} elements (at most {kMaxElements})")
        shapes.append({"B": B, "H": H, "N": N, "d": d, "causal": bool(causal), "dtype": parts[5]})
    return shapes


def label(s):  # convlab's OpTraits<AttentionProblem>::label
    return f"b{s['B']}h{s['H']}_q{s['N']}k{s['N']}_d{s['d']}{'_causal_' if s['causal'] else '_'}{s['dtype']}"


def spec(s):
    return f"B={s['B']},H={s['H']},Nq={s['N']},Nk={s['N']},d={s['d']},causal={int(s['causal'])},dtype={s['dtype']}"


def flops(s):  # 4·d per visible pair, top-left causal (ops/attention.hpp)
    n = s["N"]
    pairs = n * (n + 1) / 2 if s["causal"] else n * n
    return 4.0 * s["d"] * s["B"] * s["H"] * pairs


def min_bytes(s):  # q, k, v read once, o written once
    return DTYPE_BYTES[s["dtype"]] * s["B"] * s["H"] * s["N"] * s["d"] * 4.0


def reference_error(torch, q, k, v, o, causal, scale):
    """(relative L2 error, max |error| / max |reference|) of o against float64
    attention, on the first and last head."""
    err2 = ref2 = max_err = max_ref = 0.0
    for b, h in {(0, 0), (q.shape[0] - 1, q.shape[1] - 1)}:
        qd, kd, vd = (t[b, h].double() for t in (q, k, v))
        s = (qd @ kd.T) * scale
        if causal:
            n_q, n_k = s.shape
            s = s.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        ref = torch.softmax(s, dim=-1) @ vd
        diff = o[b, h].double() - ref
        err2 += float((diff ** 2).sum())
        ref2 += float((ref ** 2).sum())
        max_err = max(max_err, float(diff.abs().max()))
        max_ref = max(max_ref, float(ref.abs().max()))
    rel_l2 = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    return rel_l2, max_err / (max_ref if max_ref > 0 else 1.0)


def measure(torch, sdpa_kernel, backend, s, reps, warmup):
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[s["dtype"]]
    shape = (s["B"], s["H"], s["N"], s["d"])
    gen = torch.Generator(device="cuda").manual_seed(20240601)
    q, k, v = (torch.rand(shape, device="cuda", dtype=torch.float32, generator=gen).mul_(2).sub_(1).to(dtype)
               for _ in range(3))
    scale = 1.0 / math.sqrt(s["d"])
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with torch.inference_mode(), sdpa_kernel([backend]):  # the first call raises if the back end cannot run this
        stats, o = time_gpu_call(torch, lambda: sdpa(q, k, v, is_causal=s["causal"], scale=scale), reps, warmup)
    return stats, reference_error(torch, q, k, v, o, s["causal"], scale)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="B,H,N,d,causal,dtype;... (default: %(default)s)")
    parser.add_argument("--backends", default="flash,cudnn", help="comma list of " + ", ".join(BACKENDS))
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--peak-tflops", type=float, default=0.0,
                        help="the machine's measured fp16 GEMM peak (convlab probe) for pct_peak; 0 leaves it 0")
    args = parser.parse_args()
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in wanted:
        if b not in BACKENDS:
            fail(f"unknown back end '{b}' (known: {', '.join(BACKENDS)})")
    shapes = parse_shapes(args.shapes)
    torch, SDPBackend, sdpa_kernel = load_torch()

    props = torch.cuda.get_device_properties(0)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": "bench/sdpa_torch.py",
        "gpu_name": props.name,
        "gpu_sm_count": str(props.multi_processor_count),
        "torch_version": torch.__version__,
        "cuda_version": str(torch.version.cuda),
        "cudnn_version": str(torch.backends.cudnn.version()),
        "library_build_type": "release",
        "timing": f"CUDA events, L2 flushed, {args.warmup} warm-up calls, then rounds from {args.reps} "
                  "repetitions until the median settles (bench/torch_timing.py); the median",
    }
    rows = []
    for s in shapes:
        for name in wanted:
            attr, variant = BACKENDS[name]
            row_name = f"attention/gpu/{variant}/{label(s)}/manual_time"
            row = {"name": row_name, "run_name": row_name, "run_type": "iteration", "repetitions": 1,
                   "repetition_index": 0, "threads": 1, "label": spec(s)}
            try:
                stats, (rel_l2, max_abs) = measure(torch, sdpa_kernel, getattr(SDPBackend, attr), s, args.reps, args.warmup)
            except (RuntimeError, AttributeError) as error:  # back end not built in, or shape not supported
                first_line = (str(error).strip().splitlines() or ["unknown error"])[0]
                row.update({"error_occurred": True, "error_message": f"{name}: {first_line}"})
                print(f"{row_name}: {first_line}", file=sys.stderr)
                rows.append(row)
                continue
            ms = stats["median"]
            seconds = ms / 1e3
            rate = flops(s) / seconds
            row.update(row_fields(stats))
            row.update({
                "FLOP/s": rate, "bytes/s": min_bytes(s) / seconds, "intensity": flops(s) / min_bytes(s),
                "pct_peak": 100.0 * rate / (args.peak_tflops * 1e12) if args.peak_tflops > 0 else 0.0,
                "rel_l2": rel_l2, "workspace_bytes": 0.0,
                "baseline": 1.0,  # a library, as convlab_bench flags its cuBLAS/cuDNN variants
            })
            bound_l2, bound_abs = tolerance(s["dtype"], s["d"] + s["N"])
            if not (rel_l2 <= bound_l2 and max_abs <= bound_abs):
                row.update({"error_occurred": True,
                            "error_message": f"rel L2 {rel_l2:.3g} (bound {bound_l2:.3g}), max abs/max ref "
                                             f"{max_abs:.3g} (bound {bound_abs:.3g}) against float64"})
            print(f"{row_name}: {ms:.3f} ms, {rate / 1e12:.1f} TFLOP/s, rel L2 {rel_l2:.2g}")
            rows.append(row)
            with open(args.out, "w") as f:  # rewritten after every row: a killed run keeps what it measured
                json.dump({"context": context, "benchmarks": rows}, f, indent=1)
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
