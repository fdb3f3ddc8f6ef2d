#!/usr/bin/env bash
# bench/profile_source.sh — where one kernel's instructions and stalls go, SASS line by SASS line.
#
# From the repository root, after a build of build-gpu/ (bench/run_gpu.sh --no-tests --no-bench):
#   bench/profile_source.sh TARGET SHAPE KERNEL-REGEX [LAUNCH]
#
# Profiles the LAUNCH-th (default 1st) launch matching KERNEL-REGEX of
#   build-gpu/convlab run TARGET --shape SHAPE --reps 0
# with Nsight Compute (source counters and warp-state sampling, clocks left alone).
# CONVLAB_NCU_CACHE=none profiles it with the L2 as the launches before it left it (ncu's
# --cache-control none; the default, all, flushes the L2 first). 11c's stream, for one, reads D
# from the L2 in the block (lesson 11's NOTES, wave-3y). Only ncu's first replay pass sees that
# state exactly; later passes see the L2 after the kernel's own earlier pass.
# Writes to $OUT/source-NAME.tar.gz (NAME ends in -cache-none with CONVLAB_NCU_CACHE=none):
#   sass.csv      every SASS instruction: address, text, executed count, stall samples by reason
#   stalls.txt    the kernel's average stall reasons per issued instruction (largest first)
#   hot.txt       the 60 instructions with the most stall samples, and the 60 executed most often
#   kernel.sass   the kernel's SASS (cuobjdump), to read the loops around the hot lines
#   lines.txt     the executed instructions and stall samples summed per line of the kernel's source
#                 (bench/sass_lines.py over the cubins' line table: the build's -lineinfo), then the
#                 instructions grouped by how often each executed (a loop body's trip count)
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: bench/profile_source.sh TARGET SHAPE KERNEL-REGEX [LAUNCH]" >&2; exit 2; }
target=$1 shape=$2 kernel=$3 launch=${4:-1}
build=${CONVLAB_BUILD:-build-gpu}
cache=${CONVLAB_NCU_CACHE:-all}
[[ $cache == all || $cache == none ]] || { echo "profile_source.sh: CONVLAB_NCU_CACHE must be all or none, not '$cache'" >&2; exit 2; }
[[ -x $build/convlab ]] || { echo "profile_source.sh: $build/convlab not built" >&2; exit 2; }
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
[[ -n $ncu ]] || { echo "profile_source.sh: ncu (Nsight Compute) not found" >&2; exit 2; }
OUT=${OUT:-/tmp/convlab-profile-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
# The kernel is part of the name: two kernels of one launch (11c's passes) must not overwrite each
# other; so is a cache setting other than the default, so that one call can profile both ways.
suffix=; [[ $cache == all ]] || suffix=-cache-$cache
name=$(echo "$target-$shape-$kernel-$launch" | tr -c 'A-Za-z0-9_.-' '_' | cut -c1-140)$suffix
work=$(mktemp -d /tmp/convlab-source.XXXXXX)

step() { echo "profile_source.sh: $(date +%T) $*" >&2; }  # where a call's time went, if it is cut short
step "ncu starts ($target $shape, kernel $kernel)"
timeout 300 "$ncu" --set full --section SourceCounters --section WarpStateStats --clock-control none --cache-control "$cache" \
  --import-source no -k "regex:$kernel" --launch-skip $((launch - 1)) -c 1 -o "$work/report" \
  "$build/convlab" run "$target" --shape "$shape" --reps 0 > "$work/ncu.log" 2>&1
"$ncu" -i "$work/report.ncu-rep" --page source --print-source sass --csv > "$work/sass.csv" 2>> "$work/ncu.log" || true
"$ncu" -i "$work/report.ncu-rep" --page raw --csv \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio > "$work/stall-raw.csv" 2>> "$work/ncu.log" || true
step "ncu done (rc of the export: see ncu.log); summarising"
python3 - "$work" <<'PY' || true
import csv, sys, pathlib
work = pathlib.Path(sys.argv[1])
# stall reasons, largest first
rows = list(csv.reader(open(work / "stall-raw.csv")))
out = []
if len(rows) >= 3:
    head, vals = rows[0], rows[-1]
    for h, v in zip(head, vals):
        if "issue_stalled" in h:
            try: out.append((float(v.replace(",", "")), h))
            except ValueError: pass
out.sort(reverse=True)
(work / "stalls.txt").write_text("".join(f"{v:8.3f}  {h}\n" for v, h in out))
# hot instructions
lines = open(work / "sass.csv").read().splitlines()
if lines and lines[0].startswith('"Kernel Name"'): lines = lines[1:]
rows = list(csv.DictReader(lines))
def num(r, key):
    try: return float(str(r.get(key, "0")).replace(",", "") or 0)
    except ValueError: return 0.0
if rows:
    keys = [k for k in rows[0].keys() if k]
    stall_key = next((k for k in keys if k.startswith("Warp Stall Sampling (All")), None)
    exec_key = next((k for k in keys if k.startswith("Instructions Executed")), None)
    text = []
    for key in (stall_key, exec_key):
        if not key: continue
        text.append(f"==== top 60 by {key}\n")
        for r in sorted(rows, key=lambda r: -num(r, key))[:60]:
            text.append(f"{r.get('Address','')}  {num(r, key):12.0f}  {r.get('Source','')}\n")
    total = sum(num(r, exec_key) for r in rows) if exec_key else 0
    text.insert(0, f"instructions executed (warp level): {total:.0f} over {len(rows)} SASS lines\n")
    (work / "hot.txt").write_text("".join(text))
PY
[[ -s $work/hot.txt ]] || echo "profile_source.sh: could not summarise $work/sass.csv (kept in the archive)" >&2
# The summaries reach $OUT now, so a call cut short later (the whole binary's SASS takes minutes to
# print: wave-3i lost two profiles to that) still returns them.
tar -czf "$OUT/source-$name.tar.gz" -C "$work" --exclude report.ncu-rep .
step "summaries written; the kernel's SASS and per-line counts"
cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1 || echo cuobjdump)
# Per source line: the binary's cubins disassembled with their line table, matched to sass.csv.
nvdisasm=$(command -v nvdisasm || ls /usr/local/cuda/bin/nvdisasm 2>/dev/null | head -1 || true)
if [[ -n $nvdisasm && -s $work/sass.csv ]]; then
  mkdir -p "$work/cubins"
  bin=$(realpath "$build/convlab")
  (cd "$work/cubins" && "$cuobjdump" -xelf all "$bin" > /dev/null 2>&1) || true
  # The rung's own cubin is named after its file (11c_fused_store.*.cubin); every cubin if it is not there.
  cubins=("$work"/cubins/"${target##*/}".*cubin)
  [[ -e ${cubins[0]} ]] || cubins=("$work"/cubins/*.cubin)
  for c in "${cubins[@]}"; do [[ -e $c ]] && "$nvdisasm" -c -gi "$c" 2> /dev/null; done > "$work/lines.sass" || true
  python3 "$(dirname "$0")/sass_lines.py" "$work/sass.csv" "$work/lines.sass" --top 60 --groups 40 > "$work/lines.txt" 2>&1 || true
  # The profiled kernel's SASS from the rung's cubins only (not the whole binary): the function
  # sass_lines.py matched, else every function the regex names.
  fn=$(sed -n 's/^function: //p' "$work/lines.txt" | head -1)
  for c in "${cubins[@]}"; do [[ -e $c ]] && "$cuobjdump" -sass "$c" 2> /dev/null; done |
    awk -v k="${fn:-$kernel}" -v exact="${fn:+1}" '/Function :/{p = exact ? ($3 == k) : ($0 ~ k)} p' > "$work/kernel.sass" || true
  rm -rf "$work/cubins" "$work/lines.sass"
else
  echo "profile_source.sh: no nvdisasm (or no sass.csv): no per-line counts" > "$work/lines.txt"
fi
rm -f "$work/report.ncu-rep"
tar -czf "$OUT/source-$name.tar.gz" -C "$work" .
echo "profile_source.sh: $OUT/source-$name.tar.gz ($(wc -l < "$work/sass.csv") SASS lines)"
