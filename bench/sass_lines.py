#!/usr/bin/env python3
"""bench/sass_lines.py — one kernel's executed instructions and stall samples, summed per source line.

Nsight Compute's source page (bench/profile_source.sh: sass.csv) counts, for every SASS instruction
of the profiled kernel, how often a warp executed it and how many stall samples it drew. This adds
those counts up per line of the CUDA source, using the line table that nvcc's -lineinfo leaves in the
cubin (nvdisasm --print-line-info-inline). A hot loop of a kernel is mostly inlined helpers and
lambdas; each instruction is charged to the outermost frame of its inlining chain that lies in the
kernel's own file that lies inside the kernel's body (the lines its outermost frames span): the
line of a lambda defined in the kernel for the lambda's code, the call site in the kernel body for a
helper defined elsewhere. The innermost frame is shown beside it: nvcc's chains sometimes nest a
helper inside the accessor lambda that computed one of its arguments (stage_tile's copies charged to
the line of `wes`), and that column names the helper.

    bench/sass_lines.py sass.csv kernels.sass [--file mbconv_fused.cuh] [--top 40] [--groups 30] [--source-root .]

kernels.sass: `nvdisasm -c -gi` of the cubins that hold the kernel (several files may be
concatenated). The profiled kernel is found by its instruction sequence: the function whose opcodes,
in address order, are those of sass.csv. Prints the total, then the lines that executed the most
instructions (count, share, cumulative share, stall samples, innermost frame, the source text);
with --groups, the instructions grouped by how often each executed: a loop's body shares one count,
its trip count over the launch, which a model of the kernel's loops can be checked against.
"""
import argparse
import collections
import csv
import os
import re
import sys

INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(?:\{\s*)?(?:@!?U?P[0-7T]\s+)?([A-Z][A-Z0-9_]*)")
LOC = re.compile(r'"([^"]+)", line (\d+)')


def parse_disassembly(paths):
    """[(function, [(offset, opcode, [(file, line), ...] innermost first)])] from nvdisasm -gi output: one
    entry per copy (a template instantiated in several translation units is in several cubins)."""
    functions, current, name, chain, fresh = [], None, None, [], False
    for path in paths:
        with open(path, errors="replace") as f:
            for raw in f:
                line = raw.rstrip("\n")
                if line.lstrip().startswith(".section") and ".text." in line:
                    name = line.split(".text.", 1)[1].split(",", 1)[0]
                    current = []
                    functions.append((name, current))
                    chain, fresh = [], False
                    continue
                if current is None:
                    continue
                if "//##" in line:
                    # nvdisasm prints a chain one level a line ("A inlined at B", "B inlined at C", ..., "C"):
                    # a line that starts where the chain so far ends extends it.
                    frames = [(f, int(n)) for f, n in LOC.findall(line)]
                    if fresh and frames and chain and frames[0] == chain[-1]:
                        chain = chain + frames[1:]
                    else:
                        chain = frames
                    fresh = True
                    continue
                m = INSTR.match(line)
                if m:
                    current.append((int(m.group(1), 16), m.group(2), chain))
                    fresh = False
    return functions


def number(text):
    try:
        return float(str(text).replace(",", "") or 0)
    except ValueError:
        return 0.0


def parse_profile(path):
    """[(address, opcode, executed, stall samples)] in address order, from profile_source.sh's sass.csv."""
    lines = open(path, errors="replace").read().splitlines()
    while lines and not lines[0].startswith('"Address"') and "Address" not in lines[0].split(",")[0]:
        lines = lines[1:]  # Nsight writes a "Kernel Name" line (or more) above the header
    rows = list(csv.DictReader(lines))
    if not rows:
        raise SystemExit(f"sass_lines.py: no SASS rows in {path}")
    keys = [k for k in rows[0] if k]
    exec_key = next((k for k in keys if k.startswith("Instructions Executed")), None)
    stall_key = next((k for k in keys if k.startswith("Warp Stall Sampling (All")), None)
    if exec_key is None:
        raise SystemExit(f"sass_lines.py: {path} has no 'Instructions Executed' column")
    out = []
    for r in rows:
        text = str(r.get("Source", "")).strip()
        text = re.sub(r"^(?:\{\s*)?@!?U?P[0-7T]\s+", "", text)
        op = re.match(r"([A-Z][A-Z0-9_]*)", text)
        out.append((int(str(r.get("Address", "0")), 16), op.group(1) if op else "?", number(r.get(exec_key)),
                    number(r.get(stall_key)) if stall_key else 0.0))
    out.sort()
    return out


def base(opcode):
    return opcode.split(".", 1)[0]


def match_function(functions, profile):
    """The function whose opcode sequence is the profile's, else the closest of the same length."""
    want = [base(op) for _, op, _, _ in profile]
    best, best_score = None, -1.0
    for index, (_, instrs) in enumerate(functions):
        if len(instrs) != len(want):
            continue
        have = [base(op) for _, op, _ in instrs]
        score = sum(a == b for a, b in zip(have, want)) / max(1, len(want))
        if score > best_score:
            best, best_score = index, score
    return best, best_score


def frame_in(chain, wanted):
    """The outermost frame of the chain (innermost first) whose file ends with `wanted`, else the outermost."""
    for f, n in reversed(chain):
        if not wanted or f.endswith(wanted):
            return f, n
    return chain[-1] if chain else ("?", 0)


def body_range(instrs, wanted):
    """(first, last) line of the function's body in `wanted`: the span of its instructions' outermost
    frames (every inlining chain ends in the kernel itself), or None where none of them is in that file."""
    lines = [c[-1][1] for _, _, c in instrs if c and (not wanted or c[-1][0].endswith(wanted))]
    return (min(lines), max(lines)) if lines else None


def frame_for(chain, wanted, body):
    """The line an instruction is charged to: the innermost frame in `wanted` inside the kernel's body
    (a lambda's line, or the call site of a helper defined outside the body), else frame_in's."""
    if body:
        for f, n in chain:
            if (not wanted or f.endswith(wanted)) and body[0] <= n <= body[1]:
                return f, n
    return frame_in(chain, wanted)


def source_text(root, path, line, cache={}):
    if path not in cache:
        parts, found = path.split("/"), None
        for i in range(len(parts)):  # the device's absolute path: find its tail under root
            candidate = os.path.join(root, *parts[i:])
            if parts[i:] and os.path.isfile(candidate):
                found = candidate
                break
        cache[path] = open(found, errors="replace").read().splitlines() if found else []
    text = cache[path]
    return text[line - 1].strip() if 0 < line <= len(text) else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sass_csv")
    ap.add_argument("disassembly", nargs="+")
    ap.add_argument("--file", default=None, help="charge each instruction to a frame in this file (the kernel body's line) "
                                                 "(default: the file of the function's first instruction)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--source-root", default=".")
    ap.add_argument("--groups", type=int, default=0,
                    help="also print the N largest groups of instructions that executed equally often "
                         "(a group is usually one loop body or one branch: its count is the trip count)")
    args = ap.parse_args(argv)

    profile = parse_profile(args.sass_csv)
    functions = parse_disassembly(args.disassembly)
    index, score = match_function(functions, profile)
    if index is None:
        print(f"sass_lines.py: no function of {len(profile)} instructions in the disassembly", file=sys.stderr)
        return 1
    name, instrs = functions[index]
    wanted = args.file
    if wanted is None:
        first = next((c for _, _, c in instrs if c), [])
        wanted = os.path.basename(first[-1][0]) if first else None
    body = body_range(instrs, wanted)
    executed, stalls = collections.Counter(), collections.Counter()
    inner = collections.defaultdict(collections.Counter)  # per line: executed counts by innermost frame
    for (_, _, chain), (_, _, count, samples) in zip(instrs, profile):
        key = frame_for(chain, wanted, body)
        executed[key] += count
        stalls[key] += samples
        if chain:
            inner[key][chain[0]] += count
    total = sum(executed.values())
    print(f"function: {name}")
    print(f"matched: {score * 100:.1f} % of {len(profile)} opcodes; charged to lines of {wanted}")
    print(f"instructions executed (warp level): {total:.0f}; stall samples: {sum(stalls.values()):.0f}")
    print(f"{'executed':>12} {'share':>6} {'cum':>6} {'stalls':>7}  line  (innermost frame)  source")
    cum = 0.0
    for key, count in executed.most_common(args.top):
        cum += count
        f, n = key
        ifile, iline = inner[key].most_common(1)[0][0] if inner[key] else key
        where = "" if (ifile, iline) == key else f"({os.path.basename(ifile)}:{iline}) "
        print(f"{count:12.0f} {100 * count / max(total, 1):5.1f}% {100 * cum / max(total, 1):5.1f}% "
              f"{stalls[key]:7.0f}  {os.path.basename(f)}:{n} {where}{source_text(args.source_root, f, n)[:100]}")
    if args.groups > 0:
        by_count = collections.defaultdict(collections.Counter)  # executions -> {line: instructions}
        for (_, _, chain), (_, _, count, _) in zip(instrs, profile):
            if count > 0:
                by_count[count][frame_for(chain, wanted, body)] += 1
        print(f"\ngroups of instructions executed equally often (the {args.groups} largest by executions):")
        print(f"{'each':>10} {'instrs':>6} {'executed':>12} {'share':>6}  lines (instructions)")
        ranked = sorted(by_count.items(), key=lambda kv: -kv[0] * sum(kv[1].values()))
        for count, lines in ranked[:args.groups]:
            n_instr = sum(lines.values())
            where = ", ".join(f"{os.path.basename(f)}:{n} ({k})" for (f, n), k in lines.most_common(4))
            more = f", +{len(lines) - 4} lines" if len(lines) > 4 else ""
            print(f"{count:10.0f} {n_instr:6d} {count * n_instr:12.0f} {100 * count * n_instr / max(total, 1):5.1f}%  "
                  f"{where}{more}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
