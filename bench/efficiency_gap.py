#!/usr/bin/env python3
"""Measured latencies for lesson 13's efficiency-gap plot (Lavin 2024, Figure 1(d)).

Times whole networks in PyTorch, the way a practitioner would run them, so that
`convlab waterline` can put each measured latency t_a beside the network's ideal
latency t_i = N / R (Eq. 1) and its waterline bound T_min (Eq. 12):

  networks   EfficientNet-B0..B7 at their native resolutions (224, 240, 260, 300,
             380, 456, 528, 600), ConvNeXt-T/S/B and ResNet-50/101 at 224;
             torchvision builders with weights=None (random weights: latency does
             not depend on the values), in eval mode
  setting    batch 128, fp16, channels-last (NHWC) weights and input, under
             torch.inference_mode(), cuDNN autotuning on
  modes      eager   PyTorch's layer-by-layer execution       -> variant torch_eager
             compile torch.compile, default mode (Inductor)   -> variant torch_inductor
  timing     CUDA events around one batch, the GPU idle before each repetition;
             warm-up calls first (a compiled model compiles in its first call),
             then the median of --reps repetitions. The L2 is not flushed: one
             batch's activations are far larger than the 60 MB L2 anyway.

Output: Google Benchmark JSON, the suite's format (bench/README.md). One row per
(network, mode), named `network/<device>/<variant>/<net>_b<batch>_<dtype>`, e.g.
`network/gpu/torch_inductor/efficientnet_b0_b128_f16`; `real_time` is the median
latency of one batch in ms, `cpu_time` the median host wall time of the same
calls. Each row also carries the network's name as `convlab waterline` knows it,
its resolution, PyTorch's parameter count (to cross-check analysis/models.cpp),
images/s, the fastest and slowest repetition and the warm-up time (compile time
included). A network that fails (out of memory, a compiler error) gets a row
with `error_occurred` and a one-line `error_message`; the run goes on.

The work is ordered for a hard time limit: every eager run first (seconds each),
then the compile runs, smallest network (fewest MACs per image) first.
`--time-budget S` is when the script must be done: no run starts whose estimated
duration would end past it, compile runs still going at that moment are
abandoned, and every pair not measured is listed in the context's `not_run` and
as an error row. The JSON is rewritten after every finished run, so even a run
killed from outside leaves what it measured. Compiling is mostly single-threaded
Python, so `--jobs J` compiles in J worker processes at once; the timed
repetitions of different workers never overlap (they take turns through a lock).
But other workers' compiles (CPU) and first calls (GPU) still run meanwhile:
on the H200 on 2026-11-30, --jobs 4 timed ResNet-50 under Inductor at 10.3 ms
where --jobs 1 gave 5.0 ms, and EfficientNet-B5 at 111 ms against 58 ms. So
--jobs > 1 is for a quick look only; committed numbers come from --jobs 1.

On the lent H200 (from the repository root), in two calls of the 10-minute limit:

    python3 bench/efficiency_gap.py --jobs 1 --time-budget 480 --out $OUT/efficiency-gap.json
    python3 bench/efficiency_gap.py --jobs 1 --time-budget 480 --modes compile \
        --resume bench/results/<date>-h200/efficiency-gap.json --out $OUT/efficiency-gap.json

then file the JSON as bench/results/<date>-h200/efficiency-gap.json. To measure
what a run left out, give its file to --resume (measured rows are kept, the rest
is run again) with a new --out. A quick check of the script's plumbing on any
machine with PyTorch:

    python3 bench/efficiency_gap.py --device cpu --batch 2 --reps 2 --networks resnet50 --out /tmp/eg.json
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import socket
import statistics
import sys
import time

SCRIPT = "bench/efficiency_gap.py"

# (name in `convlab waterline`, torchvision builder, native resolution, GMACs per
# image from analysis/models.cpp at that resolution: only the order of the compile
# runs uses them).
NETWORKS = [
    ("efficientnet_b0", "efficientnet_b0", 224, 0.39),
    ("efficientnet_b1", "efficientnet_b1", 240, 0.70),
    ("efficientnet_b2", "efficientnet_b2", 260, 1.02),
    ("efficientnet_b3", "efficientnet_b3", 300, 1.86),
    ("efficientnet_b4", "efficientnet_b4", 380, 4.39),
    ("efficientnet_b5", "efficientnet_b5", 456, 10.27),
    ("efficientnet_b6", "efficientnet_b6", 528, 19.07),
    ("efficientnet_b7", "efficientnet_b7", 600, 37.75),
    ("convnext_t", "convnext_tiny", 224, 4.46),
    ("convnext_s", "convnext_small", 224, 8.68),
    ("convnext_b", "convnext_base", 224, 15.36),
    ("resnet50", "resnet50", 224, 4.09),
    ("resnet101", "resnet101", 224, 7.80),
]
BY_NAME = {n[0]: n for n in NETWORKS}
BY_NAME.update({n[1]: n for n in NETWORKS})  # torchvision's names are accepted too
VARIANT = {"eager": "torch_eager", "compile": "torch_inductor"}
DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}

# A compile run's duration is guessed from the model's number of leaf modules
# (convs, norms, activations, ...): before any compile run has finished, at this
# many seconds each (Inductor with a cold cache spends very roughly 0.1 to 0.3 s
# per leaf module of these networks; the guess errs long), afterwards at the
# slowest rate measured so far in this run.
PRIOR_COMPILE_S_PER_MODULE = 0.35


def load_torch():
    """(torch, torchvision), or exit with one line saying what is missing."""
    try:
        import torch
        import torchvision
    except ImportError as error:
        sys.exit(f"efficiency_gap.py: needs PyTorch and torchvision, which this Python lacks ({error}); "
                 "run it with the python3 that has them (on the lent H200: plain python3)")
    return torch, torchvision


def one_line(error):
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= 400 else text[:397] + "..."


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds")


def bench_name(device, mode, network, batch, dtype):
    # convlab calls the device "gpu" in every name; torch calls it "cuda".
    return f"network/{'gpu' if device == 'cuda' else device}/{VARIANT[mode]}/{network}_b{batch}_{dtype}"


# ---- one measurement ----------------------------------------------------------------------------

def build(torch, torchvision, builder, device, dtype):
    """The torchvision model, random weights, eval, on `device` in `dtype`, channels-last."""
    model = getattr(torchvision.models, builder)(weights=None)
    model = model.eval().to(device=device, dtype=getattr(torch, DTYPES[dtype]))
    return model.to(memory_format=torch.channels_last)


def leaf_modules(model):
    return sum(1 for m in model.modules() if next(m.children(), None) is None)


def time_calls(torch, call, x, reps, device):
    """Median-ready lists (gpu_ms, host_ms) of `reps` calls, each from an idle device."""
    gpu_ms, host_ms = [], []
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            call(x)
            end.record()
            end.synchronize()
            host_ms.append((time.perf_counter() - t0) * 1e3)
            gpu_ms.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            call(x)
            host_ms.append((time.perf_counter() - t0) * 1e3)
            gpu_ms.append(host_ms[-1])
    return gpu_ms, host_ms


def measure(network, mode, opts, gpu_lock=None):
    """One (network, mode) pair -> a benchmark row (an error row if anything fails)."""
    torch, torchvision = load_torch()
    name, builder, resolution, _ = BY_NAME[network]
    row = {"name": bench_name(opts["device"], mode, name, opts["batch"], opts["dtype"]),
           "run_name": bench_name(opts["device"], mode, name, opts["batch"], opts["dtype"]),
           "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
           "iterations": 0, "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ms",
           "network": name, "torchvision_model": builder, "mode": mode, "resolution": resolution,
           "batch": opts["batch"], "dtype": opts["dtype"]}
    model = x = call = None
    started = time.perf_counter()
    torch.backends.cudnn.benchmark = True  # autotune each conv shape once, in the warm-up
    try:
        with torch.inference_mode():
            model = build(torch, torchvision, builder, opts["device"], opts["dtype"])
            row["params"] = sum(p.numel() for p in model.parameters())
            row["leaf_modules"] = leaf_modules(model)
            x = torch.randn(opts["batch"], 3, resolution, resolution, device=opts["device"],
                            dtype=getattr(torch, DTYPES[opts["dtype"]]))
            x = x.contiguous(memory_format=torch.channels_last)
            call = torch.compile(model) if mode == "compile" else model

            # Warm-up, untimed: the first call of a compiled model compiles it,
            # the first calls of both autotune cuDNN for each conv shape.
            t0 = time.perf_counter()
            call(x)
            if opts["device"] == "cuda":
                torch.cuda.synchronize()
            row["first_call_s"] = round(time.perf_counter() - t0, 3)
            if gpu_lock is not None:
                # From here on no other worker times anything. (Another one may still
                # make its single untimed first call meanwhile; the median absorbs it.)
                gpu_lock.acquire()
            try:
                for _ in range(opts["warmup"]):
                    call(x)
                if opts["device"] == "cuda":
                    torch.cuda.synchronize()
                row["warmup_s"] = round(time.perf_counter() - t0, 3)
                gpu_ms, host_ms = time_calls(torch, call, x, opts["reps"], opts["device"])
            finally:
                if gpu_lock is not None:
                    gpu_lock.release()
        median = statistics.median(gpu_ms)
        row.update(iterations=opts["reps"], real_time=median, cpu_time=statistics.median(host_ms),
                   min_ms=min(gpu_ms), max_ms=max(gpu_ms), images_per_s=opts["batch"] / (median * 1e-3))
    except Exception as error:  # out of memory, a compiler failure, ...: record it, go on
        row["error_occurred"] = True
        row["error_message"] = one_line(error)
    finally:
        row["wall_s"] = round(time.perf_counter() - started, 3)
        del model, x, call
        gc.collect()
        if mode == "compile":
            try:
                torch._dynamo.reset()  # drop the compiled graphs and what they hold
            except Exception:
                pass
        if opts["device"] == "cuda":
            torch.cuda.empty_cache()
    return row


# ---- compile runs in worker processes ----------------------------------------------------------

_worker = {}


def worker_init(gpu_lock, rate, deadline):
    _worker.update(gpu_lock=gpu_lock, rate=rate, deadline=deadline)


def compile_task(network, opts):
    """In a worker: measure one compile pair unless its estimated duration would pass the deadline."""
    torch, torchvision = load_torch()
    rate, deadline = _worker["rate"], _worker["deadline"]
    if deadline is not None:
        modules = leaf_modules(getattr(torchvision.models, BY_NAME[network][1])(weights=None))
        estimate = (rate.value if rate.value > 0 else PRIOR_COMPILE_S_PER_MODULE) * modules
        if time.time() + estimate > deadline:
            return None, f"not run: about {estimate:.0f} s of compiling would pass the time budget"
    row = measure(network, "compile", opts, _worker["gpu_lock"])
    if not row.get("error_occurred") and row.get("leaf_modules"):
        with rate.get_lock():  # starts at -1: the first measured rate replaces the prior
            rate.value = max(rate.value, row["wall_s"] / row["leaf_modules"])
    return row, None


# ---- the run ------------------------------------------------------------------------------------

class Results:
    """The JSON document, rewritten (atomically) after every change."""

    def __init__(self, path, context, kept_rows):
        self.path, self.context, self.rows = path, context, list(kept_rows)

    def add(self, row):
        self.rows.append(row)
        self.write()

    def write(self, complete=False):
        self.context["complete"] = complete
        self.context["elapsed_s"] = round(time.perf_counter() - self.context["_t0"], 1)
        context = {k: v for k, v in self.context.items() if not k.startswith("_")}
        order = {n[0]: i for i, n in enumerate(NETWORKS)}
        rows = sorted(self.rows, key=lambda r: (r.get("mode") != "eager", order.get(r.get("network"), 99)))
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        temporary = self.path + ".partial"
        with open(temporary, "w") as f:
            json.dump({"context": context, "benchmarks": rows}, f, indent=2)
            f.write("\n")
        os.replace(temporary, self.path)


def not_run_row(network, mode, opts, why):
    name = bench_name(opts["device"], mode, network, opts["batch"], opts["dtype"])
    return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 0, "real_time": 0.0,
            "cpu_time": 0.0, "time_unit": "ms", "network": network, "mode": mode,
            "resolution": BY_NAME[network][2], "batch": opts["batch"], "dtype": opts["dtype"],
            "error_occurred": True, "error_message": why}


def log(text):
    print(text, file=sys.stderr, flush=True)


def describe(row):
    if row.get("error_occurred"):
        return f"{row['name']}: {row['error_message']}"
    return (f"{row['name']}: {row['real_time']:.3f} ms ({row['images_per_s']:.0f} images/s), "
            f"warm-up {row['warmup_s']:.1f} s")


def context_for(torch, torchvision, opts, args):
    context = {"_t0": time.perf_counter(), "date": now_iso(), "host_name": socket.gethostname(),
               "executable": SCRIPT, "script": SCRIPT, "num_cpus": os.cpu_count(),
               "python_version": platform.python_version(), "torch_version": torch.__version__,
               "torchvision_version": torchvision.__version__, "cuda_version": torch.version.cuda or "none",
               "cudnn_version": str(torch.backends.cudnn.version()) if opts["device"] == "cuda" else "none",
               "device": opts["device"], "batch": opts["batch"], "dtype": opts["dtype"],
               "memory_format": "channels_last", "inference_mode": True, "cudnn_benchmark": True,
               "weights": "random (torchvision builders, weights=None)", "reps": opts["reps"],
               "warmup": opts["warmup"], "modes": args.modes, "jobs": args.jobs,
               "time_budget_s": args.time_budget, "timing": "CUDA events around one batch, device idle "
               "before each; real_time = median over the reps"}
    if opts["device"] == "cuda":
        props = torch.cuda.get_device_properties(0)
        context.update(gpu_name=props.name, gpu_sm_count=props.multi_processor_count,
                       gpu_memory_gib=round(props.total_memory / 2**30, 1))
    else:
        context.update(gpu_name="none", cpu_model=platform.processor() or platform.machine())
    return context


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="See the header of bench/efficiency_gap.py for the details.")
    parser.add_argument("--networks", default=",".join(n[0] for n in NETWORKS),
                        help="comma-separated names (convlab's, e.g. convnext_t, or torchvision's); default: all 13")
    parser.add_argument("--modes", default="eager,compile", help="eager, compile or both (default)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions; the median is reported")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls after the first one")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--dtype", default="auto", choices=["auto", *DTYPES],
                        help="auto: f16 on cuda, f32 on cpu (where half-precision convs are slow or missing)")
    parser.add_argument("--jobs", type=int, default=1, help="compile runs at once, in worker processes")
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="be done this many seconds after starting (see the header)")
    parser.add_argument("--resume", metavar="FILE", help="keep this earlier run's measured rows; run the rest")
    parser.add_argument("--out", default="efficiency-gap.json", help="output JSON (default %(default)s)")
    args = parser.parse_args(argv)
    args.networks = [n.strip() for n in args.networks.split(",") if n.strip()]
    unknown = [n for n in args.networks if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown network(s) {', '.join(unknown)}; valid: {', '.join(n[0] for n in NETWORKS)}")
    args.networks = list(dict.fromkeys(BY_NAME[n][0] for n in args.networks))
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.modes or any(m not in VARIANT for m in args.modes):
        parser.error("--modes takes eager, compile or eager,compile")
    if args.batch < 1 or args.reps < 1 or args.warmup < 0 or args.jobs < 1:
        parser.error("--batch, --reps and --jobs must be at least 1, --warmup at least 0")
    if args.batch > 4096:  # at 4096 B7's 600² inputs alone take 8.8 GB in fp16, its activations many times that
        parser.error(f"--batch {args.batch} is too large (at most 4096)")
    if args.dtype == "auto":
        args.dtype = "f16" if args.device == "cuda" else "f32"
    return args


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    deadline = t_start + args.time_budget if args.time_budget else None
    torch, torchvision = load_torch()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("efficiency_gap.py: no CUDA device visible to PyTorch (use --device cpu for a plumbing check)")
    torch.backends.cudnn.benchmark = True
    opts = {"device": args.device, "batch": args.batch, "dtype": args.dtype, "reps": args.reps,
            "warmup": args.warmup}

    kept = []
    if args.resume:
        with open(args.resume) as f:
            earlier = json.load(f)
        kept = [r for r in earlier.get("benchmarks", []) if not r.get("error_occurred")
                and r.get("batch") == args.batch and r.get("dtype") == args.dtype]
    done = {(r["network"], r["mode"]) for r in kept}
    context = context_for(torch, torchvision, opts, args)
    context["_t0"] -= time.time() - t_start  # elapsed_s counts from the start of main()
    if args.resume:
        context["resumed_from"] = args.resume
        context["resumed_rows"] = len(kept)
    context["not_run"] = []
    results = Results(args.out, context, kept)
    results.write()

    def give_up(network, mode, why):
        context["not_run"].append(bench_name(args.device, mode, network, args.batch, args.dtype))
        results.add(not_run_row(network, mode, opts, why))
        log(f"{network} {mode}: {why}")

    # 1. Every eager run, in this process, in the order given.
    if "eager" in args.modes:
        for network in args.networks:
            if (network, "eager") in done:
                continue
            if deadline and time.time() > deadline - 30:  # an eager run takes seconds; keep 30 s for one
                give_up(network, "eager", "not run: time budget used up")
                continue
            row = measure(network, "eager", opts)
            results.add(row)
            log(describe(row))
        if args.device == "cuda":
            torch.cuda.empty_cache()

    # 2. The compile runs, fewest MACs first, in --jobs worker processes.
    abandoned = False
    if "compile" in args.modes:
        todo = sorted((n for n in args.networks if (n, "compile") not in done), key=lambda n: BY_NAME[n][3])
        if todo:
            abandoned = run_compiles(todo, opts, args, deadline, results, give_up)

    results.write(complete=True)
    measured = sum(1 for r in results.rows if not r.get("error_occurred"))
    log(f"wrote {args.out}: {measured} measured, {len(results.rows) - measured} failed or not run, "
        f"{time.time() - t_start:.0f} s")
    status = 0 if measured else 1
    if abandoned:  # worker processes still compiling: end them with the process
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def run_compiles(todo, opts, args, deadline, results, give_up):
    """Runs the compile pairs; True if some were abandoned at the deadline."""
    import concurrent.futures as futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    gpu_lock = context.Lock()
    rate = context.Value("d", -1.0)  # seconds per leaf module, the slowest measured; -1: none yet
    if args.jobs > 1:  # share the cores between the workers' own compile pools
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 2) // args.jobs)))
    pool = futures.ProcessPoolExecutor(max_workers=min(args.jobs, len(todo)), mp_context=context,
                                       initializer=worker_init, initargs=(gpu_lock, rate, deadline))
    pending = {pool.submit(compile_task, network, opts): network for network in todo}
    abandoned = False
    while pending:
        timeout = None if deadline is None else max(0.0, deadline - time.time())
        finished, _ = futures.wait(pending, timeout=timeout, return_when=futures.FIRST_COMPLETED)
        if not finished:  # the deadline: give up on everything still queued or compiling
            for future, network in pending.items():
                started = not future.cancel()
                give_up(network, "compile", "not finished: still compiling when the time budget ran out"
                        if started else "not run: time budget used up")
                abandoned |= started
            pending = {}
            break
        for future in finished:
            network = pending.pop(future)
            try:
                row, why = future.result()
            except Exception as error:  # the worker process died (BrokenProcessPool) or could not pickle
                row, why = not_run_row(network, "compile", opts, f"worker failed: {one_line(error)}"), None
            if why:
                give_up(network, "compile", why)
            else:
                results.add(row)
                log(describe(row))
    if abandoned:
        for process in list(getattr(pool, "_processes", {}).values()):  # no public way to stop a running task
            process.terminate()
    pool.shutdown(wait=not abandoned, cancel_futures=True)
    return abandoned


if __name__ == "__main__":
    sys.exit(main())
