#!/usr/bin/env python3
"""Regenerate the result tables inside lesson READMEs from benchmark JSON.

A lesson marks where a table goes:

    <!-- convlab:results op=conv2d device=cpu shape=n1h56w56c64_k64r3s3_str1pad1g1_f32 -->
    ...generated, never edited by hand...
    <!-- /convlab:results -->

and this script fills it from the committed Google Benchmark JSON of the
machines' current snapshots, bench/results/h200/ and bench/results/cpu-epyc-2core/
(one run each), taking the file with the most rows for that op, device and
shape (the newest among equals). Each row: variant, median time, GFLOP/s, % of the measured
peak, speed-up over the first rung in the table (the non-baseline variant
whose name sorts first: the op's lowest LLx_ rung when the run has it) and ratio to the
baseline libraries in the same run. Options in the marker:

    file=NAME               only runs saved under that file name (e.g. bench-winograd.json)
    bytes=1                 four more columns: each variant's modelled traffic
                            (counter model_bytes), its rate, and the prediction
                            beside the measurement: the floor of that model on the
                            run's probe, max(FLOPs / peak, model bytes / bandwidth)
                            (one kernel's roofline time; a lower bound for a plan of
                            several kernels, whose times add), and time / floor
    baseline=NAME[,NAME]    ratio columns for rungs that are library baselines
                            without being named after the library
                            (lesson 08's cublas)
    columns=roofline        see below

With `columns=roofline` the table also shows GB/s (compulsory bytes / time)
and % of the roofline-attainable rate (the pct_roofline counter), the numbers
a memory-bound kernel is judged by.

A second marker compares a depthwise-separable pair with the dense conv it
replaces (lesson 06), all from one run, the fastest variant of each shape:

    <!-- convlab:separable device=cpu dense=SHAPE depthwise=SHAPE pointwise=SHAPE [file=NAME] -->
    <!-- /convlab:separable -->

A third marker puts one number of such a table into a sentence, so that prose
quotes only what a table shows and follows it when the snapshot is re-run:

    <!-- convlab:value op=gemm device=gpu variant=03r_wgmma_persistent shape=4096x4096x4096_f16 field=tflops -->628.1<!-- /convlab:value --> TFLOP/s

The row is taken from the run the results table with the same op, device, shape
(and file=) would use, and rounded as that table rounds it. field is one of

    time_ms       median time, ms                        (3 decimals, the table's time)
    gflops        GFLOP/s                                (1 decimal)
    tflops        the same rate in TFLOP/s               (1 decimal)
    pct_peak      % of the measured peak                 (1 decimal)
    gbs           GB/s of compulsory bytes               (1 decimal, columns=roofline)
    pct_roofline  % of the roofline-attainable rate      (1 decimal, columns=roofline)
    model_mb      MB moved by the variant's own model    (1 decimal, bytes=1)
    model_gbs     GB/s of that model                     (1 decimal, bytes=1)
    peak_gflops   the peak "% of peak" divides by: the run's probe, GFLOP/s (1 decimal)
    peak_tflops   the same in TFLOP/s                    (1 decimal)
    peak_gbs      the probe's bandwidth for that row, GB/s (1 decimal)
    intensity     FLOP per compulsory byte of the shape  (2 decimals)
    attainable_gflops, attainable_tflops
                  the roofline's attainable rate for the shape (counter
                  attainable_gflops: min(peak, intensity x bandwidth); 1 decimal)
    floor_us      the roofline's time floor, FLOPs / attainable rate, µs (1 decimal)
    vs_first      speed-up over the table's first rung   (2 decimals, "vs first rung")
    ratio         with ratio_vs=NAME: NAME's time / this variant's time, NAME
                  from the same run (2 decimals, the "vs NAME" column when NAME
                  is a baseline); ratio_vs=NAME alone implies field=ratio

Only the number is generated; units and the "×" stay outside the marker. A
value marker whose row is missing is an error (exit 1), also without --check.

    python3 scripts/lesson_tables.py            # rewrite every lesson (and README.md) in place
    python3 scripts/lesson_tables.py --check    # exit 1 if any table or value is stale
    python3 scripts/lesson_tables.py --results DIR --lessons FILE...   # other inputs (tests)
"""
import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEPARABLE = re.compile(r"(<!-- convlab:separable (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- /convlab:separable -->)",
                       re.S)
MARKER = re.compile(r"(<!-- convlab:results (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- /convlab:results -->)", re.S)
VALUE = re.compile(r"<!-- convlab:value (?P<args>[^>]*?) -->(?P<body>[^<\n]*)<!-- /convlab:value -->")
# One current snapshot per machine; nothing else under bench/results/ is read.
SNAPSHOTS = ("h200", "cpu-epyc-2core")
UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load_runs(folders=None):
    runs = []
    folders = folders or [os.path.join(ROOT, "bench", "results", folder) for folder in SNAPSHOTS]
    paths = [p for folder in folders for p in sorted(glob.glob(os.path.join(folder, "*.json")))]
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as err:
            print(f"lesson_tables: skipping {path}: {err}", file=sys.stderr)
            continue
        if isinstance(data, dict) and "benchmarks" in data:
            runs.append((path, data))
    # Oldest first, by the run's own timestamp (the path breaks ties), so that
    # "the newest among equals" below is the last one seen. Sorting by path
    # alone would put results/DATE-gpu-2/ before results/DATE-gpu/ ('-' < '/').
    runs.sort(key=lambda run: (run[1].get("context", {}).get("date", ""), run[0]))
    return runs


def rows_for(data, op, device, shape):
    # With --benchmark_repetitions a run holds one iteration row per repetition
    # and aggregates: use each benchmark's median then, its single row otherwise.
    medians = {b.get("run_name", b["name"]): b for b in data["benchmarks"]
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    rows, seen = [], set()
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        run_name = b.get("run_name", b["name"])
        parts = run_name.split("/")
        if len(parts) < 4 or parts[0] != op or parts[1] != device or parts[3] != shape or run_name in seen:
            continue
        seen.add(run_name)
        b = medians.get(run_name, b)
        rows.append({
            "variant": parts[2],
            "ms": b["real_time"] * UNIT_TO_MS[b.get("time_unit", "ns")],
            "gflops": b.get("FLOP/s", 0) / 1e9,
            "pct_peak": b.get("pct_peak", 0),
            "model_bytes": b.get("model_bytes"),      # the variant's own traffic model (absent in old runs)
            "model_bps": b.get("model_bytes/s"),
            "gbs": b.get("bytes/s", 0) / 1e9,
            "pct_roofline": b.get("pct_roofline"),
            "peak_gflops": b.get("peak_gflops"),   # the probe's peaks that pct_peak / pct_bandwidth divide by
            "peak_gbs": b.get("peak_gbs"),
            "intensity": b.get("intensity"),           # FLOP per compulsory byte
            "attainable": b.get("attainable_gflops"),  # min(peak, intensity x bandwidth), GFLOP/s
            "flops": b.get("FLOP/s", 0) * b["real_time"] * UNIT_TO_MS[b.get("time_unit", "ns")] / 1e3,
            # The registry's baseline flag (counter `baseline`, 1 for a library variant).
            "baseline": bool(b.get("baseline", 0)),
            "source_run": b.get("source_run"),  # set in a snapshot merged from several earlier runs
        })
    return rows


def fmt_pct(value):
    return "-" if value is None else f"{value:.1f}"


def footer(source, context, rows=()):
    machine = context.get("gpu_name") or context.get("cpu_model") or context.get("host_name", "?")
    origins = sorted({r["source_run"] for r in rows if r.get("source_run")})
    if origins:  # a transitional snapshot: say which earlier run the rows were measured in
        runs = context.get("source_runs", {})
        where = "; ".join(f"{o} ({runs.get(o, {}).get('date', '?')}, rev {runs.get(o, {}).get('git_rev') or '?'})"
                          for o in origins)
        return (f"_Generated by `scripts/lesson_tables.py` from `{os.path.relpath(source, ROOT)}` ({machine}); "
                f"rows measured in {where}._")
    return (f"_Generated by `scripts/lesson_tables.py` from `{os.path.relpath(source, ROOT)}` "
            f"({context.get('date', '?')}, {machine}, rev {context.get('git_rev') or '?'})._")


def model_floor_ms(r):
    """The variant's own roofline time on the run's probe: max(FLOPs / peak, model bytes / bandwidth), ms."""
    if r["model_bytes"] is None or not r["peak_gflops"] or not r["peak_gbs"] or not r["flops"]:
        return None
    return max(r["flops"] / (r["peak_gflops"] * 1e9), r["model_bytes"] / (r["peak_gbs"] * 1e9)) * 1e3


def render(rows, source, context, show_bytes=False, roofline=False, extra_baselines=()):
    extra = set(extra_baselines)
    for r in rows:
        r["baseline"] = r["baseline"] or r["variant"] in extra
    first = first_rung(rows)
    bases = [r for r in rows if r["baseline"]]
    head = "| variant | time (ms) | GFLOP/s | % of peak | vs first rung |"
    sep = "|---|---:|---:|---:|---:|"
    if roofline:  # a marker's columns=roofline: GB/s and % of the roofline after GFLOP/s
        head = "| variant | time (ms) | GFLOP/s | GB/s | % of peak | % of roofline | vs first rung |"
        sep = "|---|---:|---:|---:|---:|---:|---:|"
    if show_bytes:  # a marker's bytes=1: each variant's modelled traffic (counter model_bytes), its rate, its floor
        head += " MB moved (model) | GB/s (model) | floor (ms, model) | x floor |"
        sep += "---:|---:|---:|---:|"
    for b in bases:
        head += f" vs {b['variant']} |"
        sep += "---:|"
    lines = [head, sep]
    for r in sorted(rows, key=lambda r: (r["baseline"], r["variant"])):
        speedup = f"{first['ms'] / r['ms']:.2f}x" if first else "-"
        if roofline:
            line = (f"| {r['variant']} | {r['ms']:.3f} | {r['gflops']:.1f} | {r['gbs']:.1f} | {r['pct_peak']:.1f} | "
                    f"{fmt_pct(r['pct_roofline'])} | {speedup} |")
        else:
            line = f"| {r['variant']} | {r['ms']:.3f} | {r['gflops']:.1f} | {r['pct_peak']:.1f} | {speedup} |"
        if show_bytes:
            mb = f"{r['model_bytes'] / 1e6:.1f}" if r["model_bytes"] is not None else "-"
            gbs = f"{r['model_bps'] / 1e9:.1f}" if r["model_bps"] is not None else "-"
            floor = model_floor_ms(r)
            floor_ms = "-" if floor is None else f"{floor:.3f}"
            times = "-" if floor is None else f"{r['ms'] / floor:.1f}x"
            line += f" {mb} | {gbs} | {floor_ms} | {times} |"
        for b in bases:
            line += f" {b['ms'] / r['ms']:.2f}x |"
        lines.append(line)
    lines.append("")
    lines.append(footer(source, context, rows))
    return "\n".join(lines) + "\n"


def render_separable(args, found, source, context):
    """Depthwise + pointwise against the dense conv, fastest variant of each (convlab's and a library's)."""
    def fastest(rows, library):
        pick = [r for r in rows if r["baseline"] == library]
        return min(pick, key=lambda r: r["ms"]) if pick else None

    lines = ["| conv | GFLOP | fastest convlab variant | time (ms) | fastest library | time (ms) |",
             "|---|---:|---|---:|---|---:|"]
    totals = {}
    for kind in ("depthwise", "pointwise", "dense"):
        rows = found[kind]
        own, lib = fastest(rows, False), fastest(rows, True)
        gflop = max(r["flops"] for r in rows) / 1e9
        totals[kind] = (gflop, own["ms"] if own else None, lib["ms"] if lib else None)
        lines.append(f"| {kind} `{args[kind]}` | {gflop:.3f} | {own['variant'] if own else '-'} | "
                     f"{own['ms'] if own else float('nan'):.3f} | {lib['variant'] if lib else '-'} | "
                     f"{lib['ms'] if lib else float('nan'):.3f} |")

    def ratio(i):
        sep = [totals["depthwise"][i], totals["pointwise"][i]]
        if None in sep or totals["dense"][i] is None:
            return "-"
        return f"{sum(sep) / totals['dense'][i]:.3f}"

    sep_flop = totals["depthwise"][0] + totals["pointwise"][0]
    lines.append(f"| depthwise + pointwise ÷ dense | {sep_flop / totals['dense'][0]:.3f} | | {ratio(1)} | | {ratio(2)} |")
    lines.append("")
    lines.append(footer(source, context, [r for kind in found.values() for r in kind]))
    return "\n".join(lines) + "\n"


def parse_args(text):
    return dict(kv.split("=", 1) for kv in text.split())


def best_run(runs, args):
    """The run a results table with these args draws from: (path, rows, context) or None.

    Rows of one table always come from one run (ratios within a run only). The
    run with the most of the table's variants wins; among equals the newest
    (load_runs sorts them by date). file=NAME limits the choice to runs saved
    as NAME (a lesson whose rungs were measured in their own run, beside the
    earlier rungs)."""
    best = None
    for path, data in runs:
        if "file" in args and os.path.basename(path) != args["file"]:
            continue
        rows = rows_for(data, args["op"], args["device"], args["shape"])
        if rows and (best is None or len(rows) >= len(best[1])):
            best = (path, rows, data.get("context", {}))
    return best


def first_rung(rows):
    """The table's "first rung": the non-baseline variant whose name sorts first."""
    return next((r for r in sorted(rows, key=lambda r: r["variant"]) if not r["baseline"]), None)


# field -> the row's number as text, rounded as render() rounds that column.
FIELDS = {
    "time_ms": lambda r: f"{r['ms']:.3f}",
    "gflops": lambda r: f"{r['gflops']:.1f}",
    "tflops": lambda r: f"{r['gflops'] / 1e3:.1f}",
    "pct_peak": lambda r: f"{r['pct_peak']:.1f}",
    "gbs": lambda r: f"{r['gbs']:.1f}",
    "pct_roofline": lambda r: None if r["pct_roofline"] is None else f"{r['pct_roofline']:.1f}",
    "model_mb": lambda r: None if r["model_bytes"] is None else f"{r['model_bytes'] / 1e6:.1f}",
    "model_gbs": lambda r: None if r["model_bps"] is None else f"{r['model_bps'] / 1e9:.1f}",
    # The peak that "% of peak" divides by (the run's own probe, counters peak_gflops and peak_gbs).
    "peak_gflops": lambda r: None if r["peak_gflops"] is None else f"{r['peak_gflops']:.1f}",
    "peak_tflops": lambda r: None if r["peak_gflops"] is None else f"{r['peak_gflops'] / 1e3:.1f}",
    "peak_gbs": lambda r: None if r["peak_gbs"] is None else f"{r['peak_gbs']:.1f}",
    # The roofline of the row's shape: intensity (FLOP per compulsory byte), attainable rate, time floor.
    "intensity": lambda r: None if r["intensity"] is None else f"{r['intensity']:.2f}",
    "attainable_gflops": lambda r: None if not r["attainable"] else f"{r['attainable']:.1f}",
    "attainable_tflops": lambda r: None if not r["attainable"] else f"{r['attainable'] / 1e3:.1f}",
    "floor_us": lambda r: None if not r["attainable"] else f"{r['flops'] / (r['attainable'] * 1e9) * 1e6:.1f}",
}


def value_of(args, runs):
    """The text of one value marker, or raise ValueError saying what is missing."""
    for key in ("op", "device", "shape", "variant"):
        if key not in args:
            raise ValueError(f"missing {key}=")
    field = args.get("field", "ratio" if "ratio_vs" in args else None)
    if field is None:
        raise ValueError("missing field=")
    if field not in FIELDS and field not in ("vs_first", "ratio"):
        raise ValueError(f"unknown field={field} (one of {', '.join(list(FIELDS) + ['vs_first', 'ratio'])})")
    best = best_run(runs, args)
    if best is None:
        raise ValueError("no committed run has this op/device/shape")
    rows = {r["variant"]: r for r in best[1]}
    row = rows.get(args["variant"])
    if row is None:
        raise ValueError(f"{os.path.relpath(best[0], ROOT)} has no row {args['variant']} for this shape")
    extra = set(b for b in args.get("baseline", "").split(",") if b)
    for r in best[1]:
        r["baseline"] = r["baseline"] or r["variant"] in extra
    if field == "vs_first":
        first = first_rung(best[1])
        if first is None:
            raise ValueError("the table has no first rung (only baselines)")
        return f"{first['ms'] / row['ms']:.2f}"
    if field == "ratio":
        other = rows.get(args.get("ratio_vs", ""))
        if other is None:
            raise ValueError(f"field=ratio needs ratio_vs=NAME of a row in the same run "
                             f"(have {', '.join(sorted(rows))})")
        return f"{other['ms'] / row['ms']:.2f}"
    text = FIELDS[field](row)
    if text is None:
        raise ValueError(f"the row has no counter for field={field}")
    return text


def fill(text, runs, errors=None):
    """Fill every marker of one README's text; problems with value markers go to errors."""
    errors = [] if errors is None else errors

    def replace(m):
        args = parse_args(m.group("args"))
        best = best_run(runs, args)
        if best:
            extra = [b for b in args.get("baseline", "").split(",") if b]
            return m.group(1) + render(best[1], best[0], best[2], args.get("bytes") == "1",
                                       args.get("columns") == "roofline", extra) + m.group(4)
        return m.group(1) + "_No committed benchmark results for this table yet._\n" + m.group(4)

    def replace_separable(m):
        args = parse_args(m.group("args"))
        best = None  # the newest run that has all three shapes
        for path, data in runs:
            if "file" in args and os.path.basename(path) != args["file"]:
                continue
            found = {k: rows_for(data, "conv2d", args["device"], args[k]) for k in ("depthwise", "pointwise", "dense")}
            if all(found.values()):
                best = (path, found, data.get("context", {}))
        if best:
            return m.group(1) + render_separable(args, best[1], best[0], best[2]) + m.group(4)
        return m.group(1) + "_No committed benchmark results for this table yet._\n" + m.group(4)

    def replace_value(m):
        try:
            body = value_of(parse_args(m.group("args")), runs)
        except ValueError as err:
            errors.append(f"<!-- convlab:value {m.group('args')} -->: {err}")
            return m.group(0)  # left as it was; the run fails
        return m.group(0)[:m.start("body") - m.start()] + body + m.group(0)[m.end("body") - m.start():]

    return VALUE.sub(replace_value, SEPARABLE.sub(replace_separable, MARKER.sub(replace, text)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report stale tables and values instead of rewriting")
    parser.add_argument("--results", action="append", metavar="DIR",
                        help="read benchmark JSON from DIR instead of the snapshots (repeatable)")
    parser.add_argument("--lessons", nargs="+", metavar="FILE", help="these Markdown files instead of lessons/*/README.md")
    args = parser.parse_args(argv)
    runs = load_runs(args.results)
    stale, failed = [], False
    # Every lesson, and the repository README (its lesson table quotes lesson numbers through value markers).
    readmes = args.lessons or (sorted(glob.glob(os.path.join(ROOT, "lessons", "*", "README.md")))
                               + [os.path.join(ROOT, "README.md")])
    for readme in readmes:
        with open(readme) as f:
            old = f.read()
        errors = []
        new = fill(old, runs, errors)
        for e in errors:
            print(f"lesson_tables: {os.path.relpath(readme, ROOT)}: {e}", file=sys.stderr)
            failed = True
        if new != old:
            stale.append(readme)
            if not args.check:
                with open(readme, "w") as f:
                    f.write(new)
    for s in stale:
        print(("stale: " if args.check else "updated: ") + os.path.relpath(s, ROOT))
    return 1 if failed or (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
