#!/usr/bin/env python3
"""bench/bench_rows.py — one line per row of a Google Benchmark JSON (bench/run_gpu.sh's bench-gpu.json):
variant, shape, median ms and cv. For a device call's last lines, where the rows must be read at a glance.

  python3 bench/bench_rows.py FILE.json [FILE.json ...]
"""
import json
import sys


def main(paths):
    if not paths:
        print("usage: " + __doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            with open(path) as f:
                rows = json.load(f)["benchmarks"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"bench_rows.py: no rows in {path}: {e}", file=sys.stderr)
            status = 1
            continue
        for r in rows:
            parts = r.get("name", "").split("/")
            variant, shape = (parts[2], parts[3]) if len(parts) > 3 else (r.get("name", "?"), "")
            ms = r.get("median_ms", r.get("real_time", float("nan")))
            print(f"{variant[:28]:28} {shape[:44]:44} {ms:.4f} cv {r.get('cv') or 0:.3f}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
