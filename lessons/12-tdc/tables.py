#!/usr/bin/env python3
"""Lesson 12's generated tables and figure, from committed JSON and the convlab program.

    python3 lessons/12-tdc/tables.py            # rewrite the tables in README.md
    python3 lessons/12-tdc/tables.py --check    # exit 1 if a table is stale
    CONVLAB_PYTHON=.venv/bin/python python3 lessons/12-tdc/tables.py --plot   # + the figure (matplotlib)

Sources: tdc_oracle.json and tdc_layers.json (bench/tdc_oracle.cu's run) from
bench/results/h200/ when the snapshot has them, else bench/results/h200/helper-runs/tdc/, `convlab tucker hosvd` (the error table) and `convlab tucker fit` (the model's choices
scored on the measured sweep). CONVLAB_BIN names the program (default build/convlab);
TDC_RESULTS the results folder. Each table sits between <!-- lesson12:NAME --> and
<!-- /lesson12:NAME --> in README.md.
"""
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The machine's snapshot when it holds lesson 12's files, else this lesson's own run.
_SNAPSHOT = os.path.join(ROOT, "bench", "results", "h200")
RESULTS = os.environ.get("TDC_RESULTS", _SNAPSHOT if os.path.exists(os.path.join(_SNAPSHOT, "tdc_oracle.json"))
                         else os.path.join(ROOT, "bench", "results", "h200", "helper-runs", "tdc"))
BIN = os.environ.get("CONVLAB_BIN", os.path.join(ROOT, "build", "convlab"))
PLOT_SHAPE = "n1_56x56_c64_k32_f32"


def convlab(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def tile(t):
    return "x".join(str(v) for v in t)


def fitted_choices(oracle_path):
    """shape label -> (tile, measured us) of the model with its committed constants."""
    out = {}
    for line in convlab("tucker", "fit", "--oracle", oracle_path).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0].startswith("n1_"):
            out[cells[0]] = (cells[3], float(cells[4]))
    return out


def core_table(oracle):
    data = json.load(open(oracle))
    fitted = fitted_choices(oracle)
    rows = ["| shape (C→K @ H²) | MFLOP | oracle tile | oracle µs | model tile | model µs | model / oracle "
            "| cuDNN µs | 04a µs | cuDNN / model | in-run tile | in-run µs | in-run 1 call µs | cuDNN 1 call µs |",
            "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    ratio_oracle, ratio_cudnn, ratio_blind = [], [], []
    wins = 0
    for s in data["shapes"]:
        ftile, fus = fitted[s["label"]]
        o, m, c, g = s["oracle"], s["model"], s["cudnn"], s["igemm_04a"]
        o = dict(o, kernel_us=min(cand[3] for cand in s["candidates"]))  # the sweep's fastest, as the fit reads it
        ratio_oracle.append(fus / o["kernel_us"])
        ratio_cudnn.append(c["kernel_us"] / fus)
        ratio_blind.append(m["sweep_us"] / o["kernel_us"])
        wins += c["kernel_us"] > fus
        rows.append(f"| ({s['C']},{s['K']}) @ {s['H']} | {s['flops'] / 1e6:.0f} | {tile(o['tile'])} | {o['kernel_us']:.2f} "
                    f"| {ftile} | {fus:.2f} | {fus / o['kernel_us']:.2f} | {c['kernel_us']:.2f} | {g['kernel_us']:.2f} "
                    f"| {c['kernel_us'] / fus:.2f} | {tile(m['tile'])} | {m['sweep_us']:.2f} "
                    f"| {m['isolated_us']:.1f} | {c['isolated_us']:.1f} |")
    rows.append(f"| geomean | | | | | | {geomean(ratio_oracle):.3f} | | | {geomean(ratio_cudnn):.2f} | "
                f"| {geomean(ratio_blind):.2f}× oracle | | |")
    summary = (f"The model's tile beats cuDNN's kernel time on {wins} of {len(data['shapes'])} shapes, "
               f"{geomean(ratio_cudnn):.2f}× in geometric mean; it is {geomean(ratio_oracle):.3f}× the oracle in "
               f"geometric mean and at most {max(ratio_oracle):.2f}× on any shape. The tiles the sweep's own program chose "
               f"(the model compiled into it) were {geomean(ratio_blind):.2f}× the oracle.")
    return "\n".join(rows) + "\n\n" + summary


def fit_table(oracle):
    text = convlab("tucker", "fit", "--oracle", oracle, "--grid")
    return "\n".join(l for l in text.splitlines() if l.strip())


def layer_table(layers):
    data = json.load(open(layers))
    rows = ["| layer (C = K @ H²) | D1 = D2 | MFLOP Tucker / dense | rel. error (random kernel) | core tile (in-run model) "
            "| Tucker µs (3 kernels) | core µs | cuDNN dense µs | 04a dense µs | cuDNN / Tucker |",
            "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for l in data["layers"]:
        rows.append(f"| {l['C']} @ {l['H']} | {l['D1']} | {l['flops'] / 1e6:.1f} / {l['dense_flops'] / 1e6:.1f} "
                    f"| {l['rel_error_random_kernel']:.3f} | {tile(l['core_tile'])} | {l['tucker_kernel_us']:.2f} "
                    f"| {l['core_kernel_us']:.2f} | {l['cudnn_kernel_us']:.2f} | {l['igemm_04a_kernel_us']:.2f} "
                    f"| {l['cudnn_kernel_us'] / l['tucker_kernel_us']:.2f} |")
    return "\n".join(rows)


def hosvd_table():
    return convlab("tucker", "hosvd").strip()


def tables():
    oracle = os.path.join(RESULTS, "tdc_oracle.json")
    layers = os.path.join(RESULTS, "tdc_layers.json")
    return {"hosvd": hosvd_table(), "core": core_table(oracle), "fit": fit_table(oracle), "layers": layer_table(layers)}


def plot(path_svg):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    text = convlab("tucker", "fit", "--oracle", os.path.join(RESULTS, "tdc_oracle.json"), "--csv", PLOT_SHAPE)
    rows = [l.split(",") for l in text.splitlines()[1:]]
    measured = [float(r[3]) for r in rows]
    predicted = [float(r[4]) for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.scatter(measured, predicted, s=6, alpha=0.5)
    lo, hi = min(measured + predicted), max(measured + predicted)
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    best = min(range(len(rows)), key=lambda i: measured[i])
    pick = min(range(len(rows)), key=lambda i: predicted[i])
    ax.scatter([measured[best]], [predicted[best]], c="green", s=40, label="oracle " + "x".join(rows[best][:3]))
    ax.scatter([measured[pick]], [predicted[pick]], c="red", marker="x", s=50, label="model " + "x".join(rows[pick][:3]))
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("measured kernel time, µs (H200)"), ax.set_ylabel("predicted, µs")
    ax.set_title(f"TDC core conv {PLOT_SHAPE}: {len(rows)} tiles")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path_svg, metadata={"Date": None})
    print("wrote", path_svg)


def main():
    check = "--check" in sys.argv
    if "--plot" in sys.argv:
        plot(os.path.join(HERE, "predicted-vs-measured.svg"))
    readme = os.path.join(HERE, "README.md")
    text = open(readme).read()
    new = text
    for name, body in tables().items():
        pattern = re.compile(rf"(<!-- lesson12:{name} -->\n)(?:.*?\n)?(<!-- /lesson12:{name} -->)", re.S)
        if not pattern.search(new):
            sys.exit(f"README.md has no lesson12:{name} marker")
        new = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), new)
    if check:
        if new != text:
            sys.exit("lessons/12-tdc/README.md: generated tables are stale (run lessons/12-tdc/tables.py)")
        print("lesson 12 tables match")
        return
    open(readme, "w").write(new)
    print("rewrote", readme)


if __name__ == "__main__":
    main()
