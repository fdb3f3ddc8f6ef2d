"""The data side of lesson 13's notebook (13-efficiency.ipynb), kept out of the
notebook so that the README's table can be regenerated without Jupyter:

    python3 notebooks/13-efficiency/lesson13.py           # rewrite the README's table
    python3 notebooks/13-efficiency/lesson13.py --check   # exit 1 if it is stale

Every model number comes from the `convlab` program (`convlab waterline ... --json`,
analysis/ in C++): the layer tables, T_min, C_max, the sweeps of Figures 4 and 2(e),
and the computational efficiency of a measured latency (`--latency-ms`). This file
only finds files, runs the program and formats what it prints. Where things are:

  convlab    $CONVLAB_BIN (CMake sets it for the notebook tests), else
             build/convlab of this repository; missing: FileNotFoundError saying so
  peaks      the newest bench/results/*h200*/probe.json (`convlab probe` on the H200):
             R = its gpu_hgemm_gflops, B = its gpu_copy_gbs (--machine measured)
  latencies  $CONVLAB_EFFICIENCY_GAP_JSON if set, else the newest
             bench/results/*/efficiency-gap*.json (bench/efficiency_gap.py); may be absent
  accuracy   data/accuracy.json (published top-1, each with its source)
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LESSON = ROOT / "lessons" / "13-roofline-waterline"
# Where the PNGs go: the committed lesson folder (`make figures`), or, when
# CONVLAB_FIG_DIR is set (CMake sets it for the notebook tests), that folder
# under the build directory. A test run then rewrites nothing in the source
# tree, the README's table included (WRITE_SOURCES).
FIGURES = Path(os.environ.get("CONVLAB_FIG_DIR") or (LESSON / "figures"))
WRITE_SOURCES = not os.environ.get("CONVLAB_FIG_DIR")
README = LESSON / "README.md"
BEGIN, END = "<!-- efficiency-gap-table -->", "<!-- /efficiency-gap-table -->"
BATCH = 128

# The networks of the efficiency-gap plot, by family, in model-size order.
FAMILIES = {
    "EfficientNet": [f"efficientnet_b{i}" for i in range(8)],
    "ConvNeXt": ["convnext_t", "convnext_s", "convnext_b"],
    "ResNet": ["resnet50", "resnet101"],
}
LABELS = {**{f"efficientnet_b{i}": f"EfficientNet-B{i}" for i in range(8)},
          "convnext_t": "ConvNeXt-T", "convnext_s": "ConvNeXt-S", "convnext_b": "ConvNeXt-B",
          "resnet50": "ResNet-50", "resnet101": "ResNet-101", "mobilenet_v2": "MobileNetV2",
          "convfirstnet": "ConvFirstNet"}
MODES = {"eager": "PyTorch eager", "compile": "TorchInductor"}
UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ---- the convlab program -----------------------------------------------------------------------

def convlab_program():
    """Path of the built convlab program; FileNotFoundError with what to do when it is missing."""
    from_env = os.environ.get("CONVLAB_BIN")
    candidate = Path(from_env) if from_env else HERE / ".." / ".." / "build" / "convlab"
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        where = "$CONVLAB_BIN" if from_env else "the default place"
        raise FileNotFoundError(f"lesson 13's notebook needs the convlab program, but {candidate} ({where}) is not an "
                                "executable file: build it (cmake -S . -B build -G Ninja && ninja -C build convlab) "
                                "or set CONVLAB_BIN to a built one")
    return candidate.resolve()


def waterline(*args):
    """`convlab waterline ARGS --json`, parsed."""
    command = [str(convlab_program()), "waterline", *map(str, args), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"`convlab waterline {' '.join(map(str, args))} --json` failed "
                           f"(exit {done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


# ---- the files ----------------------------------------------------------------------------------

def run_order(path):
    """Sort key of a file under bench/results/<date>-<machine>[-<n>]/: the date, then the
    run number (a plain string sort would put run -10 before run -2)."""
    folder = path.parent.name
    number = re.search(r"-(\d+)$", folder)
    return folder[:10], int(number.group(1)) if number else 1


def h200_probe():
    """The newest bench/results/*h200*/probe.json (by date, then run number)."""
    probes = sorted(ROOT.glob("bench/results/*h200*/probe.json"), key=run_order)
    if not probes:
        raise FileNotFoundError("no bench/results/*h200*/probe.json: the H200's measured peaks come from "
                                "`convlab probe` there (bench/run_gpu.sh files it)")
    return probes[-1]


def measured_h200():
    """The --machine arguments for the H200's measured roof."""
    return ["--machine", "measured", "--probe", h200_probe()]


def efficiency_gap_run():
    """(path, document) of the newest efficiency-gap JSON, or (None, None) when there is none."""
    from_env = os.environ.get("CONVLAB_EFFICIENCY_GAP_JSON")
    paths = [Path(from_env)] if from_env else sorted(ROOT.glob("bench/results/*/efficiency-gap*.json"))
    for path in reversed(paths):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            print(f"skipping {path}: {error}", file=sys.stderr)
            continue
        if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
            return path, doc
    return None, None


def latencies(doc):
    """{(network, mode): row} of the measured rows (ms in row['ms']); failures and gaps left out."""
    out = {}
    for row in (doc or {}).get("benchmarks", []):
        if row.get("error_occurred") or row.get("run_type", "iteration") != "iteration":
            continue
        if row.get("batch", BATCH) != BATCH or not row.get("real_time"):
            continue
        out[(row["network"], row["mode"])] = dict(row, ms=row["real_time"] * UNIT_TO_MS[row.get("time_unit", "ms")])
    return out


def failures(doc):
    """{(network, mode): error message} of the rows that were not measured."""
    return {(r.get("network"), r.get("mode")): r.get("error_message", "")
            for r in (doc or {}).get("benchmarks", []) if r.get("error_occurred")}


def published_accuracy():
    doc = json.loads((ROOT / "data" / "accuracy.json").read_text())
    return {entry["network"]: entry for entry in doc["networks"]}


# ---- the efficiency gap of every network ----------------------------------------------------------

def efficiency_gaps(machine_args=None):
    """One record per network of FAMILIES: analysis totals on the measured H200, the measured
    latencies of each mode with their computational efficiency (from convlab), top-1."""
    machine_args = machine_args or measured_h200()
    path, doc = efficiency_gap_run()
    measured = latencies(doc)
    accuracy = published_accuracy()
    records = []
    for family, networks in FAMILIES.items():
        for net in networks:
            table = waterline(net, *machine_args, "--batch", BATCH)
            totals = table["totals"]
            record = dict(network=net, label=LABELS[net], family=family, resolution=table["resolution"],
                          gmacs_per_image=totals["macs_per_image"] / 1e9, params=totals["params"],
                          ideal_ms=totals["ideal_time_s"] * 1e3, min_ms=totals["min_time_s"] * 1e3,
                          max_efficiency=totals["max_efficiency"], top1=accuracy[net]["top1"],
                          machine=table["machine"], modes={})
            for mode in MODES:
                row = measured.get((net, mode))
                if row is None:
                    continue
                gap = waterline(net, *machine_args, "--batch", BATCH, "--latency-ms", repr(row["ms"]))["measured"]
                record["modes"][mode] = dict(ms=row["ms"], efficiency=gap["efficiency"],
                                             share_of_attainable=gap["share_of_attainable"],
                                             torch_params=row.get("params"))
            records.append(record)
    return records, path, doc


def parameter_mismatches(records):
    """[(network, analysis params, PyTorch params)] where the two counts differ."""
    out = []
    for r in records:
        for mode in r["modes"].values():
            if mode["torch_params"] is not None and int(mode["torch_params"]) != int(round(r["params"])):
                out.append((r["network"], int(round(r["params"])), int(mode["torch_params"])))
                break
    return out


# ---- the README's table --------------------------------------------------------------------------

def markdown_table(records, path, doc):
    dash = "–"

    def measured(r, mode):
        m = r["modes"].get(mode)
        return (f"{m['ms']:.1f}", f"{100 * m['efficiency']:.1f}%") if m else (dash, dash)

    machine = records[0]["machine"]
    lines = ["| network | input | GMACs/image | t_i = N/R (ms) | T_min (ms) | C_max | eager (ms) | C eager "
             "| Inductor (ms) | C Inductor | top-1 (%) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        eager, inductor = measured(r, "eager"), measured(r, "compile")
        lines.append(f"| {r['label']} | {r['resolution']} | {r['gmacs_per_image']:.2f} | {r['ideal_ms']:.2f} "
                     f"| {r['min_ms']:.2f} | {100 * r['max_efficiency']:.1f}% | {eager[0]} | {eager[1]} "
                     f"| {inductor[0]} | {inductor[1]} | {r['top1']:.1f} |")
    lines.append("")
    roof = (f"R = {machine['peak_ops_per_s'] / 1e12:.0f} TFLOP/s fp16 and B = "
            f"{machine['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s measured by `convlab probe` "
            f"(`{relative(h200_probe())}`), op:byte {machine['op_byte']:.0f}")
    if doc is None:
        lines.append(f"_No measured latencies committed yet: the measured columns fill in once "
                     f"`bench/efficiency_gap.py` has run on the H200 and its JSON is filed as "
                     f"`bench/results/h200/efficiency-gap.json`. Batch {BATCH}, fp16; {roof}._")
    else:
        ctx = doc.get("context", {})
        missing = [f"{LABELS.get(n, n)} {MODES.get(m, m)}" for (n, m) in failures(doc)]
        lines.append(f"_Latencies: `{relative(path)}` ({ctx.get('date', '?')[:10]}, {ctx.get('gpu_name', '?')}, "
                     f"PyTorch {ctx.get('torch_version', '?')}), median of {ctx.get('reps', '?')} batches of "
                     f"{ctx.get('batch', BATCH)} images, {ctx.get('dtype', 'f16')}, channels-last, random weights. "
                     f"C = t_i / t_a (Eq. 8) with {roof}._")
        if missing:
            lines.append("")
            lines.append(f"_Not measured (out of time or failed, see the JSON): {', '.join(missing)}._")
        mismatched = parameter_mismatches(records)
        checked = sum(1 for r in records if any(m["torch_params"] is not None for m in r["modes"].values()))
        lines.append("")
        if mismatched:
            lines.append("_Parameter counts that differ between PyTorch and `analysis/models.cpp`: " +
                         ", ".join(f"{LABELS[n]} {a:,} vs {t:,}" for n, a, t in mismatched) + "._")
        elif checked:
            lines.append(f"_PyTorch's parameter counts equal `analysis/models.cpp`'s for all {checked} measured "
                         "networks._")
    lines.append("")
    lines.append("_Generated by `notebooks/13-efficiency/lesson13.py` (run by the notebook); do not edit._")
    return "\n".join(lines) + "\n"


def fill_readme(table, readme=README, write=True):
    """Puts `table` between the README's markers; True when that changed the file."""
    text = readme.read_text()
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        raise ValueError(f"{readme}: markers {BEGIN} ... {END} not found")
    new = text[:begin + len(BEGIN)] + "\n" + table + text[end:]
    if new == text:
        return False
    if write:
        readme.write_text(new)
    return True


def main(argv):
    check = "--check" in argv
    records, path, doc = efficiency_gaps()
    changed = fill_readme(markdown_table(records, path, doc), write=not check)
    if check and changed:
        print(f"stale: {relative(README)} (run python3 notebooks/13-efficiency/lesson13.py)")
        return 1
    print(("updated: " if changed else "up to date: ") + relative(README))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
