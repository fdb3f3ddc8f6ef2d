"""How the PyTorch side scripts time one call: the way core/timing.hpp times convlab's variants.

bench/torch_blocks.py (what bench/convfirst_torch.py and bench/mbconv_torch.py share) and
bench/sdpa_torch.py import it, so that a PyTorch row and a convlab row in one table were measured
alike:

  one repetition  the L2 flushed (256 MB written), a head start (below), then CUDA events around
                  the call alone
  warm-up         untimed calls first (compilation, autotuning, caches)
  head start      after the flush the GPU spins (torch.cuda._sleep) for head_start_ms: twice the
                  longest time the host took to issue one call in five probes after the warm-up,
                  plus 0.05 ms, at least 0.2 ms. The host issues the start event, the call's
                  kernels and the stop event while the GPU spins, so the events time the kernels
                  back to back, as convlab's C++ launches are timed, and not the gaps of Python's
                  launches. A repetition whose issue took longer than the head start is counted
                  in `late` (its time may hold host gaps); the row carries host_ms,
                  head_start_ms and late
  rounds          a first round of `reps`; then the sample doubles until the median of all the
                  samples agrees with the previous round's median within 2 %, or a cap
                  (max_reps samples, max_total_ms of measured time)
  summary         median, min, max, cv (standard deviation / mean), rounds, settled, and
                  noisy = cv above 5 % (the suite's kNoisyCv), so a table can say how far to
                  trust a PyTorch time as it does a convlab one

Why the head start and the rounds: the calls of eager PyTorch and of Inductor's default mode are
launched from Python one kernel at a time, so without a head start a busy host stretches some
repetitions. A fixed 20 repetitions once gave an Inductor median of 0.182 ms whose samples
spread from 0.155 to 0.296 ms (lesson 11's NOTES, run 66dbe5a), and rows timed with the flush
alone ahead of the call were filed with cv up to 26 % (Inductor as a CUDA graph at C = 80 @ 14²).
The head start takes the host's gaps out of the timed span; the rounds stay for what is left.

    python3 bench/torch_timing.py --self-test    the rounds' logic on made-up samples (no torch)
"""
import math
import statistics
import sys
import time

NOISY_CV = 0.05          # core/timing.hpp: kNoisyCv
SETTLE_TOLERANCE = 0.02  # core/timing.hpp: TimingOptions::settle_tolerance
HEAD_START_MIN_MS = 0.2
HEAD_START_MAX_MS = 50.0  # a call that takes longer to issue is timed with its gaps, and says so
CALIBRATION_CYCLES = 2_000_000
host_clock = time.perf_counter  # seconds; the self-test puts a made-up clock here


def head_start_ms(host_ms):
    """The GPU's head start for a call whose issue took at most host_ms on the host."""
    return min(HEAD_START_MAX_MS, max(HEAD_START_MIN_MS, 2.0 * host_ms + 0.05))


def summarize(samples):
    mean = statistics.fmean(samples)
    cv = statistics.pstdev(samples) / mean if mean > 0 else 0.0
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "cv": cv}


def in_rounds(repeat, reps, max_reps=320, max_total_ms=3000.0):
    """repeat(k) returns k new samples in ms. Measures in rounds as the module says; returns the
    summary (with iterations, rounds, settled, noisy)."""
    samples = list(repeat(reps))
    rounds, settled = 1, False
    while len(samples) < max_reps and sum(samples) < max_total_ms:
        previous = statistics.median(samples)
        samples += list(repeat(min(len(samples), max_reps - len(samples))))
        rounds += 1
        if abs(statistics.median(samples) - previous) <= SETTLE_TOLERANCE * previous:
            settled = True
            break
    stats = summarize(samples)
    stats.update({"iterations": len(samples), "rounds": rounds, "settled": settled, "noisy": stats["cv"] > NOISY_CV})
    return stats


def time_gpu_call(torch, call, reps, warmup, head_start=True):
    """Times call() (no arguments; it returns the output) on the current CUDA device. Returns
    (summary, the last output). head_start=False: the flush alone ahead of the call, as rows
    filed before the head start were timed (the scripts' --no-head-start)."""
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    out = [call()]
    for _ in range(warmup):
        call()

    def host_ms(run):  # how long the host takes to issue run(), the GPU idle before it
        torch.cuda.synchronize()
        t0 = host_clock()
        run()
        return (host_clock() - t0) * 1e3

    host = max(host_ms(call) for _ in range(5))
    head = head_start_ms(host) if head_start else 0.0
    # The spin's cycles per ms, measured (the second of two, the first warms the spin kernel up).
    for _ in range(2):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(CALIBRATION_CYCLES)
        stop.record()
        stop.synchronize()
        spin_ms = start.elapsed_time(stop)
    cycles = int(math.ceil(head * CALIBRATION_CYCLES / max(spin_ms, 1e-6)))
    late = [0]

    def repeat(k):
        times = []
        for _ in range(k):
            flush.zero_()
            if head_start:
                torch.cuda._sleep(cycles)
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = host_clock()
            start.record()
            out[0] = call()
            stop.record()
            if (host_clock() - t0) * 1e3 > head:
                late[0] += 1
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return times

    stats = in_rounds(repeat, reps)
    stats.update({"host_ms": host, "head_start_ms": head, "late": late[0]})
    return stats, out[0]


def row_fields(stats):
    """The summary as a bench row's fields (the convlab rows' names: min_ms, max_ms, cv, noisy)."""
    return {"iterations": stats["iterations"], "real_time": stats["median"], "cpu_time": stats["median"],
            "time_unit": "ms", "min_ms": stats["min"], "max_ms": stats["max"], "cv": stats["cv"],
            "noisy": 1.0 if stats["noisy"] else 0.0, "rounds": float(stats["rounds"]),
            "settled": 1.0 if stats["settled"] else 0.0,
            **{k: float(stats[k]) for k in ("host_ms", "head_start_ms", "late") if k in stats}}


def self_test():
    def source(values):
        it = iter(values)
        return lambda k: [next(it) for _ in range(k)]

    # steady samples settle after the second round
    s = in_rounds(source([1.0] * 40), 20)
    assert (s["iterations"], s["rounds"], s["settled"], s["noisy"]) == (40, 2, True, False), s
    # a burst in the first round moves the median by more than 2 %: the sample grows until it settles
    burst = [2.0] * 12 + [1.0] * 8 + [1.0] * 20 + [1.0] * 40
    s = in_rounds(source(burst), 20)
    assert s["rounds"] == 3 and s["settled"] and s["median"] == 1.0 and s["iterations"] == 80, s
    assert s["noisy"] and s["max"] == 2.0 and abs(s["cv"] - statistics.pstdev(burst) / statistics.fmean(burst)) < 1e-12, s
    # a drift (each round slower) never settles: the cap on repetitions ends it, and the row says so
    s = in_rounds(source([1.0] * 20 + [1.5] * 20 + [2.0] * 40 + [2.5] * 80), 20, max_reps=80)
    assert s["iterations"] == 80 and not s["settled"], s
    # the cap on measured time ends it too
    s = in_rounds(source([100.0 + i for i in range(400)]), 20, max_total_ms=3000.0)
    assert s["iterations"] == 40 and s["rounds"] == 2, s
    f = row_fields(s)
    assert f["real_time"] == s["median"] and f["noisy"] in (0.0, 1.0) and f["time_unit"] == "ms", f
    assert "late" not in f, f  # in_rounds alone has no head start
    assert head_start_ms(0.0) == HEAD_START_MIN_MS and head_start_ms(1.0) == 2.05 and head_start_ms(1e3) == HEAD_START_MAX_MS
    # time_gpu_call's plumbing, on a stand-in for torch whose events read a made-up clock: a call
    # takes 0.5 ms of GPU time, the spin 1 ms per million cycles
    class FakeTorch:
        clock = [0.0]
        calls = [0]
        slept = []

        class cuda:
            class Event:
                def __init__(self, enable_timing):
                    self.t = None

                def record(self):
                    self.t = FakeTorch.clock[0]

                def synchronize(self):
                    pass

                def elapsed_time(self, other):
                    return other.t - self.t

            @staticmethod
            def synchronize():
                pass

            @staticmethod
            def _sleep(cycles):
                FakeTorch.slept.append(cycles)
                FakeTorch.clock[0] += cycles / 1e6

        @staticmethod
        def empty(n, dtype, device):
            return type("Flush", (), {"zero_": lambda self: None})()

        uint8 = None

    slow_from = [None]  # from this call on, issuing a call takes the host 3 ms, before it 0.01 ms
    host_now = [0.0]
    global host_clock
    real_clock, host_clock = host_clock, lambda: host_now[0]

    def call():
        FakeTorch.calls[0] += 1
        FakeTorch.clock[0] += 0.5
        slow = slow_from[0] is not None and FakeTorch.calls[0] >= slow_from[0]
        host_now[0] += 3e-3 if slow else 1e-5
        return FakeTorch.calls[0]

    s, last = time_gpu_call(FakeTorch, call, 10, 3)
    # the spins are not timed; each repetition's spin is the head start in cycles
    assert s["median"] == 0.5 and s["iterations"] == 20 and s["settled"], s
    assert FakeTorch.calls[0] == 1 + 3 + 5 + 20 and last == FakeTorch.calls[0], (FakeTorch.calls, last)
    assert abs(s["host_ms"] - 0.01) < 1e-9 and s["head_start_ms"] == HEAD_START_MIN_MS and s["late"] == 0, s
    assert FakeTorch.slept[:2] == [CALIBRATION_CYCLES] * 2 and len(FakeTorch.slept) == 22, FakeTorch.slept
    assert all(c == math.ceil(s["head_start_ms"] * 1e6) for c in FakeTorch.slept[2:]), FakeTorch.slept
    f = row_fields(s)
    assert f["late"] == 0.0 and f["head_start_ms"] == s["head_start_ms"], f
    # repetitions whose issue outlasts the head start are counted late (10 of the 20 here)
    FakeTorch.calls[0] = 0
    slow_from[0] = 1 + 3 + 5 + 11
    s, _ = time_gpu_call(FakeTorch, call, 10, 3)
    assert s["late"] == 10 and s["head_start_ms"] < 3.0, s
    # without the head start no repetition spins, and every one is late
    FakeTorch.calls[0], slow_from[0], FakeTorch.slept[:] = 0, None, []
    s, _ = time_gpu_call(FakeTorch, call, 10, 3, head_start=False)
    assert s["median"] == 0.5 and s["head_start_ms"] == 0.0 and s["late"] == 20, s
    assert FakeTorch.slept == [CALIBRATION_CYCLES] * 2, FakeTorch.slept
    host_clock = real_clock
    print("torch_timing self-test: ok")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    print(__doc__)
    sys.exit(2)
