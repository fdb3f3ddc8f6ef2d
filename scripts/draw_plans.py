#!/usr/bin/env python3
"""Draw lesson 10's and 11's tensor machines (Lavin Fig. 7) from the plan data, never by hand.

Runs `convlab plans OP --json --shape SPEC` (OP convfirst: the plans of
ops/convfirst.cpp, layer by layer, fused, large-C; OP mbconv: ops/mbconv.cpp,
layer by layer, two-pass recompute, two-pass store, or single pass without SE)
and writes one SVG with one panel per plan. In each panel the three memories of the tensor
machine (§5.1) are three bands — DRAM, global (L2/DSMEM), local (shared
memory/registers) — and every tensor of the plan is a box in the band where it
lives, its area proportional to its bytes (square-root scaled, so small tensors
stay visible), labelled with its name and size. Under each panel: the plan's
DRAM bytes, on-chip global bytes and waterline time on the machine.

    python3 scripts/draw_plans.py --convlab build/convlab --out lessons/10-convfirst/fig7-plans.svg
    python3 scripts/draw_plans.py --convlab build/convlab --shape N=128,H=28,C=128,dtype=f16 --out f.svg
    python3 scripts/draw_plans.py --convlab build/convlab --op mbconv --shape N=128,H=56,C=24,dtype=f16 --out m.svg
"""
import argparse
import html
import json
import math
import subprocess
import sys

BANDS = ["DRAM", "global (L2/DSMEM)", "local (smem/regs)"]
COLOURS = {"DRAM": "#f4d6cc", "global (L2/DSMEM)": "#f6ecc8", "local (smem/regs)": "#d8ead3"}
PANEL_W, BAND_H, TOP = 330, 150, 46


def mb(b):
    return f"{b / 1e6:.1f} MB" if b >= 1e5 else f"{b / 1e3:.1f} KB"


def draw(data):
    plans = data["plans"]
    biggest = max(t["bytes"] for p in plans for t in p["tensors"]) or 1.0
    width, height = PANEL_W * len(plans) + 20, TOP + 3 * BAND_H + 80
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="11">',
           f'<text x="10" y="18" font-size="13" font-weight="bold">{"MBConv" if data.get("op") == "mbconv" else "ConvFirst"} tensor machines: '
           f'{html.escape(data["spec"])} on {html.escape(data["machine"])}</text>']
    for i, plan in enumerate(plans):
        x0 = 10 + i * PANEL_W
        out.append(f'<text x="{x0}" y="{TOP - 8}" font-weight="bold">{html.escape(plan["figure"])} '
                   f'{html.escape(plan["name"])}</text>')
        for j, band in enumerate(BANDS):
            y = TOP + j * BAND_H
            out.append(f'<rect x="{x0}" y="{y}" width="{PANEL_W - 12}" height="{BAND_H - 4}" fill="{COLOURS[band]}" '
                       f'stroke="#999"/>')
            out.append(f'<text x="{x0 + 4}" y="{y + 13}" fill="#555">{band}</text>')
            cx = x0 + 6
            for t in (t for t in plan["tensors"] if t["place"] == band):
                side = max(14.0, 96.0 * math.sqrt(t["bytes"] / biggest))
                if cx + side > x0 + PANEL_W - 14:  # the band is full: stack it smaller at the end
                    side = max(14.0, x0 + PANEL_W - 14 - cx)
                y_box = y + 20
                out.append(f'<rect x="{cx:.1f}" y="{y_box}" width="{side:.1f}" height="{side:.1f}" fill="white" '
                           f'stroke="#333"><title>{html.escape(t["note"])}</title></rect>')
                out.append(f'<text x="{cx + 2:.1f}" y="{y_box + side + 12:.1f}">{html.escape(t["name"])}</text>')
                out.append(f'<text x="{cx + 2:.1f}" y="{y_box + side + 24:.1f}" fill="#555">{mb(t["bytes"])}</text>')
                cx += max(side, 6.5 * max(len(t["name"]), 7)) + 10  # room for the labels
        y = TOP + 3 * BAND_H + 14
        out.append(f'<text x="{x0}" y="{y}">DRAM {mb(plan["dram_bytes"])}, global ~{mb(plan["global_bytes"])}</text>')
        out.append(f'<text x="{x0}" y="{y + 16}">{len(plan["kernels"])} kernel(s), waterline '
                   f'{plan["waterline_seconds"] * 1e3:.3f} ms</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--convlab", default="build/convlab")
    parser.add_argument("--op", default="convfirst", choices=["convfirst", "mbconv"])
    parser.add_argument("--shape", default="", help="the op's spec (default: N=128,H=56,C=64,dtype=f16 for convfirst, "
                        "N=128,H=56,C=24,e=6,se=0.25,dtype=f16 for mbconv)")
    parser.add_argument("--machine", default="", help="passed to convlab plans (default: its own)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    shape = args.shape or ("N=128,H=56,W=56,C=64,dtype=f16" if args.op == "convfirst" else
                           "N=128,H=56,W=56,C=24,e=6,k=3,se=0.25,dtype=f16")
    cmd = [args.convlab, "plans", args.op, "--json", "--shape", shape]
    if args.machine:
        cmd += ["--machine", args.machine]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"draw_plans.py: `{' '.join(cmd)}` failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    with open(args.out, "w") as f:
        f.write(draw(json.loads(r.stdout)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
