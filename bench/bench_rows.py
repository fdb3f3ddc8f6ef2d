#!/usr/bin/env python3
"""bench/bench_rows.py — one line per row of a Google Benchmark JSON (bench/run_gpu.sh's bench-gpu.json):
variant, shape, median ms and cv, and for a PyTorch row timed with a head start
(bench/torch_timing.py) its late repetitions and head start in ms. For a device call's last
lines, where the rows must be read at a glance.

  python3 bench/bench_rows.py FILE.json [FILE.json ...]
"""
import json
import sys


MS_PER = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}  # Google Benchmark's time_unit values


def line(r):
    """One row's line; a row that is not a benchmark object raises (the file is malformed)."""
    parts = r["name"].split("/")
    variant, shape = (parts[2], parts[3]) if len(parts) > 3 else (r["name"], "")
    ms = float(r["median_ms"]) if "median_ms" in r else float(r["real_time"]) * MS_PER[r.get("time_unit", "ns")]
    head = f" late {int(r['late'])} head {float(r['head_start_ms']):.2f}" if "head_start_ms" in r and "late" in r else ""
    return f"{variant[:28]:28} {shape[:44]:44} {ms:.4f} cv {float(r.get('cv') or 0):.3f}{head}\n"


def main(paths):
    if not paths:
        print("usage: " + __doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            with open(path) as f:
                lines = [line(r) for r in json.load(f)["benchmarks"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"bench_rows.py: no rows in {path}: {e}", file=sys.stderr)
            status = 1
            continue
        print("".join(lines), end="")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
