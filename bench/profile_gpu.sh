#!/usr/bin/env bash
# bench/profile_gpu.sh — Nsight Compute reports of chosen variants, for the lent GPU machine.
#
# From the repository root, after bench/run_gpu.sh (or any build of build-gpu/):
#   bench/profile_gpu.sh [LIST]
#
# LIST is a file of lines "TARGET | SHAPE | KERNEL-REGEX | COUNT" ('#' starts a
# comment; default bench/profile_targets.txt). Each line runs
#   ncu --set full --clock-control none -k regex:KERNEL-REGEX -c COUNT \
#       build-gpu/convlab run TARGET --shape SHAPE --reps 0
# (one checked launch: the output is compared with the double reference, so a
# profile of a wrong kernel says FAIL in its log). An empty KERNEL-REGEX
# profiles every kernel the run launches, up to COUNT (vendor libraries, whose
# kernel names are not known in advance). The clocks are left alone
# (--clock-control none), as the device notes ask. CONVLAB_NCU_SET (default full) names ncu's
# section set: `basic` takes a few replays per kernel instead of dozens, enough for each kernel's
# duration and throughputs, e.g. where the time of a block's several launches goes (COUNT 3, no regex).
#
# Output: $OUT/profile.tar.gz holding one NAME.txt per line (ncu's details page:
# speed of light, memory workload, occupancy, warp stall reasons, source
# hot spots) and profile-summary.txt (duration, DRAM throughput, achieved
# occupancy, registers per kernel). One file only: the lent machine's tool
# brings back at most eight, and bench/run_gpu.sh writes six or more.
set -euo pipefail

list=${1:-bench/profile_targets.txt}
build=${CONVLAB_BUILD:-build-gpu}
[[ -f $list ]] || { echo "profile_gpu.sh: no target list '$list'" >&2; exit 2; }
[[ -x $build/convlab ]] || { echo "profile_gpu.sh: $build/convlab not built (run bench/run_gpu.sh --no-tests --no-bench first)" >&2; exit 2; }
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
[[ -n $ncu ]] || { echo "profile_gpu.sh: ncu (Nsight Compute) not found" >&2; exit 2; }

OUT=${OUT:-/tmp/convlab-profile-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/convlab-profile.XXXXXX)
summary="$work/profile-summary.txt"
echo "convlab profile — $(date -u +%Y-%m-%dT%H:%M:%SZ), $("$ncu" --version | tail -1)" > "$summary"

while IFS='|' read -r target shape kernels count; do
  target=$(echo "$target" | xargs)
  [[ -z $target || $target == \#* ]] && continue
  shape=$(echo "$shape" | xargs)
  kernels=$(echo "$kernels" | xargs)
  count=$(echo "${count:-1}" | xargs)
  name=$(echo "$target-$shape" | tr -c 'A-Za-z0-9_.=-' '_' | cut -c1-120)
  filter=()
  [[ -n $kernels ]] && filter=(-k "regex:$kernels")
  echo "==== $target $shape"
  status=0
  timeout 240 "$ncu" --set "${CONVLAB_NCU_SET:-full}" --clock-control none --import-source no "${filter[@]}" -c "$count" \
    "$build/convlab" run "$target" --shape "$shape" --reps 0 > "$work/$name.txt" 2>&1 || status=$?
  {
    echo
    echo "## $target  $shape  (exit $status)"
    grep -E '^\s+[A-Za-z_].*\(\d*|^  [A-Za-z_0-9:<>, ]+\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per Thread|Compute \(SM\) Throughput|  ok |FAIL' \
      "$work/$name.txt" | grep -vE 'Warning|WRN' | head -60 || true
  } >> "$summary"
done < "$list"

tar -czf "$OUT/profile.tar.gz" -C "$work" .
echo "profile_gpu.sh: $(ls "$work" | wc -l) files in $OUT/profile.tar.gz"
