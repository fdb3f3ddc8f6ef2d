#!/usr/bin/env bash
# bench/collect_gpu_results.sh — file a GPU run's output under bench/results/.
#
#   bench/collect_gpu_results.sh OUT_DIR
#
# OUT_DIR is the folder bench/run_gpu.sh wrote (the run tool's fetched $OUT).
# The results land in bench/results/<YYYY-MM-DD>-<gpu>/ (e.g. 2025-06-01-h200/),
# the date and GPU name taken from the benchmark JSON's context when present,
# otherwise from environment.txt / today. Existing files are not overwritten:
# a second run on the same day goes to <YYYY-MM-DD>-<gpu>-2/, and so on.
# Copied: bench-gpu.json, gpu-tests.xml, summary.txt, environment.txt,
# probe.json and sanitize.log; gpu-tests.log and logs.tar.gz stay behind.
set -euo pipefail

if (($# != 1)) || [[ ! -d $1 ]]; then
  echo "usage: bench/collect_gpu_results.sh OUT_DIR   (the folder run_gpu.sh wrote)" >&2
  exit 2
fi
src=$1
repo=$(cd "$(dirname "$0")/.." && pwd)

# Date and GPU name: from the JSON context if there is one.
read -r run_date gpu_name < <(python3 - "$src" <<'EOF'
import datetime, json, pathlib, re, sys
src = pathlib.Path(sys.argv[1])
date, gpu = "", ""
try:
    context = json.loads((src / "bench-gpu.json").read_text()).get("context", {})
    date, gpu = context.get("date", "")[:10], context.get("gpu_name", "")
except (OSError, ValueError):
    pass
if not gpu:  # "GPU 0: NVIDIA H200 (UUID: ...)" in environment.txt
    try:
        match = re.search(r"GPU 0: (.*?) \(UUID", (src / "environment.txt").read_text())
        gpu = match.group(1) if match else ""
    except OSError:
        pass
date = date or datetime.date.today().isoformat()
print(date, gpu or "unknown-gpu")
EOF
)

# "NVIDIA H200 NVL" -> "h200-nvl"
slug=$(tr '[:upper:]' '[:lower:]' <<<"$gpu_name" | sed -e 's/nvidia//g' -e 's/[^a-z0-9]\+/-/g' -e 's/^-*//' -e 's/-*$//')
dest="$repo/bench/results/$run_date-${slug:-gpu}"
suffix=2
base=$dest
while [[ -e $dest ]]; do
  dest="$base-$suffix"
  suffix=$((suffix + 1))
done
mkdir -p "$dest"

copied=0
for file in bench-gpu.json gpu-tests.xml summary.txt environment.txt probe.json sanitize.log; do
  if [[ -f $src/$file ]]; then
    cp "$src/$file" "$dest/"
    copied=$((copied + 1))
  fi
done
echo "copied $copied file(s) to ${dest#"$repo"/} (GPU: $gpu_name, date: $run_date)"
[[ -f $dest/bench-gpu.json ]] || echo "note: no bench-gpu.json in $src; the notebooks will have nothing to plot from this run" >&2
