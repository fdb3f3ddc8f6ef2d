"""What the block scripts (bench/convfirst_torch.py, bench/mbconv_torch.py) share.

Each script describes its block in a BlockSpec (the op's name, how to build PyTorch's block and
convlab's input files, the label, the counts); this module does the rest the same way for both:

  load_torch            PyTorch and a CUDA device, or one line saying which is missing (exit 2)
  make_input            x in [-1, 1), channels-last, from a fixed seed
  check_against_convlab on the spec's small shapes, PyTorch's fp32 block and `convlab run <op>
                        --in ...` on the same x and weights (float32 .npy in convlab's layouts);
                        relative L2 over 1e-4 stops the script (exit 1)
  check_shape_size      a shape whose largest tensor is absurdly large stops the script (exit 2)
  arguments             the command line both scripts take (--out, --shapes, --act, --convlab,
                        --reps, --warmup, --no-head-start, --budget-s); a script adds its own
  run                   the device found, the agreement checked (with --convlab), then bench_rows
  bench_rows            every (baseline, shape) row in turn, eager first: built, timed by
                        bench/torch_timing.py, checked against a float64 evaluation of the same
                        weights on the first image (relative L2 over 1e-2 marks the row an
                        error), written to --out after each row in the suite's JSON; a row whose
                        turn comes when less of the budget is left than spec.min_left asks for is
                        left out, and a compile failure is a row with its error, not the end

    python3 bench/torch_blocks.py --self-test    bench_rows on a stand-in for torch, the command line
                                                 and the size check (no torch)
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, List

from torch_timing import row_fields, time_gpu_call  # bench/torch_timing.py


@dataclass
class BlockSpec:
    script: str                    # the script's file name, for its messages
    op: str                        # convlab's op: rows are <op>/gpu/<baseline>/<label>/manual_time
    check_shapes: List[tuple]      # small shapes for the agreement with convlab; s[6] is the stride
    make_block: Callable           # (torch, F, s, act, dtype, device) -> (parameters, forward)
    layouts: Callable              # (parameters, s) -> float32 arrays in convlab's input order
    label: Callable                # (s, act, dtype="f16") -> OpTraits<Problem>::label
    macs: Callable                 # (s) -> multiply-adds of the block
    min_bytes: Callable            # (s) -> compulsory bytes: x, the weights and y once
    min_left: Callable             # (baseline) -> seconds of budget a row of it needs to start

    def fail(self, message, code=2):
        print(f"{self.script}: {message}", file=sys.stderr)
        sys.exit(code)


def load_torch(spec):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as error:
        spec.fail(f"needs PyTorch, which this Python lacks ({error})")
    if not torch.cuda.is_available():
        spec.fail(f"PyTorch {torch.__version__} sees no CUDA device; this script measures GPU kernels only")
    return torch, F


def make_input(torch, s, dtype, device, seed=7):
    N, H, W, C = s[:4]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.rand((N, C, H, W), generator=g, dtype=torch.float64) * 2 - 1
    return x.to(device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)


def check_against_convlab(torch, F, spec, convlab, act):
    import numpy as np
    for s in spec.check_shapes:
        p, forward = spec.make_block(torch, F, s, act, torch.float32, "cuda")
        x = make_input(torch, s, torch.float32, "cuda")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.inference_mode():
            y_torch = forward(x).permute(0, 2, 3, 1).contiguous().cpu().double().numpy()  # NHWC
        with tempfile.TemporaryDirectory() as d:
            files = [os.path.join(d, "x.npy")]
            np.save(files[0], np.ascontiguousarray(x.permute(0, 2, 3, 1).cpu().numpy(), dtype=np.float32))
            for i, a in enumerate(spec.layouts(p, s)):
                files.append(os.path.join(d, f"in{i}.npy"))
                np.save(files[-1], a)
            out = os.path.join(d, "y.npy")
            cmd = [convlab, "run", spec.op, "--in", ",".join(files), "--shape", f"stride={s[6]},act={act}",
                   "--out", out]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                spec.fail(f"`{' '.join(cmd)}` failed ({r.returncode}): {r.stderr.strip()}", 1)
            y_convlab = np.load(out).astype(np.float64)
        rel = float(np.linalg.norm(y_torch - y_convlab) / np.linalg.norm(y_convlab))
        print(f"agreement with convlab on {spec.label(s, act, 'f32')}: rel L2 {rel:.2e}")
        if not rel <= 1e-4:
            spec.fail(f"PyTorch's block and convlab's disagree on {spec.label(s, act, 'f32')}: rel L2 {rel:.3g}", 1)


# The largest tensor a shape may ask for, in elements (8 GiB in f16): a mistyped shape stops with a
# line, not with an allocation the device cannot hold.
kMaxElements = 2 ** 32


def check_shape_size(spec, item, elements):
    if elements > kMaxElements:
        spec.fail(f"bad shape '{item}': a tensor of {elements} elements (at most {kMaxElements})")


def arguments(doc, shapes_default, shapes_help, act_default, reps, budget_s, budget_help):
    """The command line both block scripts take; a script adds its own options to the parser."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default=shapes_default, help=shapes_help)
    parser.add_argument("--act", default=act_default, choices=["relu", "silu"])
    parser.add_argument("--convlab", default="", help="the convlab program, for the agreement check")
    parser.add_argument("--reps", type=int, default=reps)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-head-start", action="store_true",
                        help="time with the flush alone ahead of each call (rows filed before the head start)")
    parser.add_argument("--budget-s", type=float, default=budget_s, help=budget_help)
    return parser


def run(spec, args, shapes, variants_of, begin):
    """A script's main after its arguments: PyTorch and the device, the agreement with convlab
    (args.convlab) or a line saying it is not checked, then the rows of variants_of(torch)."""
    torch, F = load_torch(spec)
    if args.convlab:
        check_against_convlab(torch, F, spec, args.convlab, args.act)
    else:
        print("no --convlab: the agreement with convlab's block is NOT checked", file=sys.stderr)
    bench_rows(torch, F, spec, shapes, variants_of(torch), args, begin, checked=bool(args.convlab))
    return 0


def first_image_rel_l2(y, ref):
    return float((y[:1].double() - ref).norm() / ref.norm())


def bench_rows(torch, F, spec, shapes, variants, args, begin, checked, time_call=time_gpu_call,
               rel_l2=first_image_rel_l2, make_x=make_input):
    """Times every (baseline, shape) of `variants` ([(name, build(forward) -> callable)]) and
    `shapes`, eager on every shape first, and writes the rows to args.out (args: out, act, reps,
    warmup, no_head_start, budget_s). Returns the rows."""
    props = torch.cuda.get_device_properties(0)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "executable": f"bench/{spec.script}", "gpu_name": props.name,
        "torch_version": torch.__version__, "cuda_version": str(torch.version.cuda),
        "cudnn_version": str(torch.backends.cudnn.version()), "library_build_type": "release",
        "timing": f"CUDA events, L2 flushed, {args.warmup} warm-up calls, then rounds from {args.reps} "
                  "repetitions until the median settles (bench/torch_timing.py); the median",
        "agreement_with_convlab": "checked" if checked else "not checked",
    }
    rows = []

    def write():
        with open(args.out, "w") as f:
            json.dump({"context": context, "benchmarks": rows}, f, indent=1)

    blocks = {}
    for s in shapes:
        _, forward = spec.make_block(torch, F, s, args.act, torch.float16, "cuda")
        x = make_x(torch, s, torch.float16, "cuda")
        _, forward64 = spec.make_block(torch, F, s, args.act, torch.float64, "cuda")  # same weights, float64
        with torch.inference_mode():
            ref = forward64(x[:1].double())  # the first image
        blocks[s] = (forward, x, ref)
    for name, build in variants:
        for s in shapes:
            forward, x, ref = blocks[s]
            label = spec.label(s, args.act)
            row_name = f"{spec.op}/gpu/{name}/{label}/manual_time"
            row = {"name": row_name, "run_name": row_name, "run_type": "iteration", "repetitions": 1,
                   "repetition_index": 0, "threads": 1, "label": label}
            left = args.budget_s - (time.time() - begin)
            if left < spec.min_left(name):
                print(f"{row_name}: skipped, {left:.0f} s of the budget left", file=sys.stderr)
                continue
            try:
                torch._dynamo.reset()
                fn = build(forward)
                t0 = time.time()
                with torch.inference_mode():
                    stats, y = time_call(torch, lambda: fn(x), args.reps, args.warmup, not args.no_head_start)
                setup = time.time() - t0
            except Exception as error:  # a compile failure is a row, not the end of the run
                first = (str(error).strip().splitlines() or ["unknown error"])[0]
                row.update({"error_occurred": True, "error_message": f"{name}: {first}"})
                rows.append(row)
                write()
                continue
            rel = rel_l2(y, ref)
            ms = stats["median"]
            rate = 2.0 * spec.macs(s) / (ms / 1e3)
            row.update(row_fields(stats))
            row.update({"FLOP/s": rate, "bytes/s": spec.min_bytes(s) / (ms / 1e3),
                        "intensity": 2.0 * spec.macs(s) / spec.min_bytes(s), "rel_l2": rel, "baseline": 1.0,
                        "setup_s": setup, "workspace_bytes": 0.0})
            if not rel <= 1e-2:
                row.update({"error_occurred": True, "error_message": f"rel L2 {rel:.3g} against float64"})
            print(f"{row_name}: {ms:.3f} ms (cv {stats['cv']:.1%}{' noisy' if stats['noisy'] else ''}), "
                  f"{rate / 1e12:.1f} TFLOP/s, rel L2 {rel:.2g} (setup {setup:.0f} s)")
            rows.append(row)
            write()
    write()
    return rows


def self_test():
    """bench_rows on a stand-in for torch (its rows' names, order, counters, error rows and budget);
    the shared command line and the size check (the scripts' bad shapes: tests/scripts/
    test_torch_scripts_input.py)."""
    import contextlib
    import types

    class FakeTorch:
        __version__ = "0.fake"
        float16, float64 = "f16", "f64"
        version = types.SimpleNamespace(cuda="0.0")
        backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 0))
        cuda = types.SimpleNamespace(get_device_properties=lambda i: types.SimpleNamespace(name="Fake GPU"))
        _dynamo = types.SimpleNamespace(reset=lambda: None)

        @staticmethod
        def inference_mode():
            return contextlib.nullcontext()

    class Image:  # x[:1].double() of the stand-in
        def __getitem__(self, key):
            return self

        def double(self):
            return self

    built = []

    def make_block(torch, F, s, act, dtype, device):
        built.append((s, dtype))
        return {}, lambda x: ("ok", s)

    spec = BlockSpec(script="torch_blocks.py", op="demo", check_shapes=[], make_block=make_block,
                     layouts=lambda p, s: [], label=lambda s, act, dtype="f16": f"n{s[0]}_{act}_{dtype}",
                     macs=lambda s: 1e9 * s[0], min_bytes=lambda s: 1e6 * s[0],
                     min_left=lambda name: 90.0 if name == "slow" else 5.0)

    def broken(forward):
        def fn(x):
            raise RuntimeError("compile failed\nsecond line")
        return fn

    def time_call(torch, call, reps, warmup, head_start):  # shape (n,) takes n/2 ms
        out = call()
        ms = 0.5 * out[1][0]
        return {"median": ms, "min": ms, "max": ms, "cv": 0.0, "noisy": False, "iterations": reps, "rounds": 1,
                "settled": True, "head_start_ms": 0.2, "host_ms": 0.01, "late": 0}, out

    variants = [("eager", lambda f: f), ("broken", broken), ("slow", lambda f: f),
                ("wrong", lambda f: (lambda x: ("bad", f(x)[1])))]
    with tempfile.TemporaryDirectory() as d:
        args = types.SimpleNamespace(out=os.path.join(d, "rows.json"), act="relu", reps=7, warmup=1,
                                     no_head_start=False, budget_s=60.0)
        rows = bench_rows(FakeTorch, None, spec, [(1,), (2,)], variants, args, time.time(), True,
                          time_call=time_call, rel_l2=lambda y, ref: 0.5 if y[0] == "bad" else 1e-3,
                          make_x=lambda torch, s, dtype, device: Image())
        with open(args.out) as f:
            filed = json.load(f)
    names = [r["name"] for r in rows]
    # eager on every shape first; the baseline whose rows need 90 s of a 60 s budget is left out
    assert names == ["demo/gpu/eager/n1_relu_f16/manual_time", "demo/gpu/eager/n2_relu_f16/manual_time",
                     "demo/gpu/broken/n1_relu_f16/manual_time", "demo/gpu/broken/n2_relu_f16/manual_time",
                     "demo/gpu/wrong/n1_relu_f16/manual_time", "demo/gpu/wrong/n2_relu_f16/manual_time"], names
    assert filed["benchmarks"] == rows and filed["context"]["agreement_with_convlab"] == "checked", filed["context"]
    assert filed["context"]["executable"] == "bench/torch_blocks.py" and filed["context"]["gpu_name"] == "Fake GPU"
    e1, e2 = rows[0], rows[1]
    assert e1["real_time"] == 0.5 and e2["real_time"] == 1.0 and e1["time_unit"] == "ms", (e1, e2)
    assert abs(e1["FLOP/s"] - 2e9 / 0.5e-3) < 1 and abs(e2["bytes/s"] - 2e6 / 1e-3) < 1e-3, (e1, e2)
    assert e1["intensity"] == 2000.0 and e1["rel_l2"] == 1e-3 and "error_occurred" not in e1, e1
    # a failure while building or timing is a row with the error's first line
    assert rows[2]["error_occurred"] and rows[2]["error_message"] == "broken: compile failed", rows[2]
    # a result far from float64 is marked
    assert rows[4]["error_occurred"] and rows[4]["error_message"] == "rel L2 0.5 against float64", rows[4]
    # the fp16 block and its float64 twin, once per shape
    assert built == [((1,), "f16"), ((1,), "f64"), ((2,), "f16"), ((2,), "f64")], built
    # the shared command line: a script's defaults, and its own options beside them
    parser = arguments("doc", "1,2", "help", "relu", reps=9, budget_s=12.0, budget_help="b")
    parser.add_argument("--extra", action="store_true")
    a = parser.parse_args(["--out", "o.json", "--extra"])
    assert (a.shapes, a.act, a.reps, a.warmup, a.budget_s, a.convlab, a.no_head_start, a.extra) == \
        ("1,2", "relu", 9, 5, 12.0, "", False, True), a
    # a shape too large to allocate stops with one line and exit 2; the largest allowed passes
    check_shape_size(spec, "ok", kMaxElements)
    try:
        check_shape_size(spec, "big", kMaxElements + 1)
        raise AssertionError("check_shape_size let an absurd shape through")
    except SystemExit as stop:
        assert stop.code == 2, stop.code
    print("torch_blocks self-test: ok")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    print(__doc__)
    sys.exit(2)
