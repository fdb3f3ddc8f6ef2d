#!/usr/bin/env python3
"""bench/merge_bench_json.py — join several Google Benchmark JSON files into one.

run_gpu.sh runs the GPU benchmarks in several processes (one per operation, and
a fresh process to retry any benchmark that hit a device fault, since a CUDA
fault poisons the rest of its process). This script merges their outputs:

    merge_bench_json.py OUT.json PART.json [PART.json ...]   # later parts win on equal names
    merge_bench_json.py --faulted PART.json [...]            # print names to retry, one a line
    merge_bench_json.py --into SNAPSHOT.json --source LABEL RUN.json
        # file a later run's rows into the machine's snapshot: each row of RUN.json
        # replaces the snapshot's row of the same name (or is appended) and carries
        # "source_run": LABEL; the run's date and revision join context["source_runs"]

The merged file keeps the first readable part's "context" and lists every
benchmark once, in first-seen order. Unreadable parts (a process killed by a
timeout leaves unterminated JSON) are reported and skipped. A summary line
("benchmarks: N ok, M failed") goes to stderr; the exit status is 0 either way.
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"merge_bench_json: skipping {path}: {e}", file=sys.stderr)
        return None


def failed(entry):
    """True for a benchmark that reported an error (1.7: error_occurred; 1.8 also skipped)."""
    return bool(entry.get("error_occurred")) or bool(entry.get("skipped"))


def message(entry):
    return entry.get("error_message") or entry.get("skip_message") or ""


def base_name(entry):
    """op/device/variant/label, without Google Benchmark's /real_time or /manual_time suffix."""
    return "/".join(entry.get("name", "").split("/")[:4])


def faulted_names(parts):
    """Benchmarks that threw (measure.cpp prefixes those messages with 'error:'), not wrong answers."""
    names = []
    for data in parts:
        for entry in data.get("benchmarks", []):
            if failed(entry) and message(entry).startswith("error:") and base_name(entry) not in names:
                names.append(base_name(entry))
    return names


def merge(parts):
    merged = {"context": parts[0].get("context", {}), "benchmarks": []}
    position = {}
    for data in parts:
        for entry in data.get("benchmarks", []):
            key = entry.get("name")
            if key in position:
                merged["benchmarks"][position[key]] = entry
            else:
                position[key] = len(merged["benchmarks"])
                merged["benchmarks"].append(entry)
    return merged


def into_snapshot(snapshot_path, label, run_path):
    snapshot, run = load(snapshot_path), load(run_path)
    if snapshot is None or run is None:
        print("merge_bench_json: --into needs a readable snapshot and run", file=sys.stderr)
        return 2
    rows = [dict(entry, source_run=label) for entry in run.get("benchmarks", []) if not failed(entry)]
    position = {entry.get("name"): i for i, entry in enumerate(snapshot["benchmarks"])}
    for entry in rows:
        if entry["name"] in position:
            snapshot["benchmarks"][position[entry["name"]]] = entry
        else:
            snapshot["benchmarks"].append(entry)
    context = run.get("context", {})
    runs = dict(snapshot["context"].get("source_runs", {}))
    runs[label] = {"date": context.get("date", ""), "git_rev": context.get("git_rev", "")}
    snapshot["context"]["source_runs"] = runs
    with open(snapshot_path, "w") as f:
        json.dump(snapshot, f, indent=2)
        f.write("\n")
    print(f"merge_bench_json: {len(rows)} rows of {run_path} filed into {snapshot_path} as '{label}'", file=sys.stderr)
    return 0


def main(argv):
    if len(argv) == 5 and argv[0] == "--into" and argv[2] == "--source":
        return into_snapshot(argv[1], argv[3], argv[4])
    if len(argv) >= 2 and argv[0] == "--faulted":
        parts = [d for d in map(load, argv[1:]) if d is not None]
        for name in faulted_names(parts):
            print(name)
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_path, part_paths = argv[0], argv[1:]
    parts = [d for d in map(load, part_paths) if d is not None]
    if not parts:
        print("merge_bench_json: no readable benchmark JSON; nothing written", file=sys.stderr)
        return 0
    merged = merge(parts)
    with open(out_path, "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    runs = merged["benchmarks"]
    bad = [e for e in runs if failed(e)]
    print(f"benchmarks: {len(runs) - len(bad)} ok, {len(bad)} failed -> {out_path}", file=sys.stderr)
    for e in bad:
        print(f"  FAILED {base_name(e)}: {message(e)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
