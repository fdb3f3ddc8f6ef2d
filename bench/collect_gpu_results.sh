#!/usr/bin/env bash
# bench/collect_gpu_results.sh — file a GPU run as the machine's one current snapshot.
#
#   bench/collect_gpu_results.sh OUT_DIR
#
# OUT_DIR is the folder bench/run_gpu.sh wrote (the run tool's fetched $OUT).
# The results REPLACE bench/results/<gpu>/ (e.g. h200/): one run at one
# revision is what every lesson table, notebook and the tour draw from; git
# keeps the earlier snapshots. The GPU name, date and revision come from the
# benchmark JSON's context when present, otherwise from environment.txt /
# today, and are written into the folder's README.md.
# Copied: bench-gpu.json, gpu-tests.xml, summary.txt, environment.txt,
# probe.json, sanitize.log, sdpa-torch.json, efficiency-gap.json and lesson 12's tdc_oracle.json, tdc_layers.json;
# gpu-tests.log and logs.tar.gz stay behind.
set -euo pipefail

if (($# != 1)) || [[ ! -d $1 ]]; then
  echo "usage: bench/collect_gpu_results.sh OUT_DIR   (the folder run_gpu.sh wrote)" >&2
  exit 2
fi
src=$1
repo=$(cd "$(dirname "$0")/.." && pwd)

# Date and GPU name: from the JSON context if there is one.
read -r run_date run_rev gpu_name < <(python3 - "$src" <<'EOF'
import datetime, json, pathlib, re, sys
src = pathlib.Path(sys.argv[1])
date, gpu, rev = "", "", ""
try:
    context = json.loads((src / "bench-gpu.json").read_text()).get("context", {})
    date, gpu, rev = context.get("date", ""), context.get("gpu_name", ""), context.get("git_rev", "")
except (OSError, ValueError):
    pass
if not gpu:  # "GPU 0: NVIDIA H200 (UUID: ...)" in environment.txt
    try:
        match = re.search(r"GPU 0: (.*?) \(UUID", (src / "environment.txt").read_text())
        gpu = match.group(1) if match else ""
    except OSError:
        pass
date = date or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
print(date, rev or "unknown", gpu or "unknown-gpu")
EOF
)

# "NVIDIA H200 NVL" -> "h200-nvl"
slug=$(tr '[:upper:]' '[:lower:]' <<<"$gpu_name" | sed -e 's/nvidia//g' -e 's/[^a-z0-9]\+/-/g' -e 's/^-*//' -e 's/-*$//')
# "h200-nvl" -> "h200": the snapshot folder is named after the GPU model.
slug=${slug%%-*}
dest="$repo/bench/results/${slug:-gpu}"
# run_gpu.sh packs its extra result files (sdpa-torch.json, tdc_*.json) into results.tar.gz.
if [[ -f $src/results.tar.gz ]]; then
  unpacked=$(mktemp -d)
  tar -xzf "$src/results.tar.gz" -C "$unpacked"
  cp -n "$src"/* "$unpacked/" 2>/dev/null || true
  src=$unpacked
fi
# PyTorch's own rows (lesson 09's attention, lesson 13's networks) do not depend on
# convlab's revision; a run that did not re-measure them keeps the previous ones.
kept=()
keep_dir=$(mktemp -d)
for file in sdpa-torch.json efficiency-gap.json; do
  if [[ ! -f $src/$file && -f $dest/$file ]]; then
    cp "$dest/$file" "$keep_dir/"
    kept+=("$file")
  fi
done
rm -rf "$dest"   # the previous snapshot leaves the tree; git keeps it
mkdir -p "$dest"
for file in "${kept[@]}"; do cp "$keep_dir/$file" "$dest/"; done
rm -rf "$keep_dir"

copied=0
for file in bench-gpu.json gpu-tests.xml summary.txt environment.txt probe.json sanitize.log sdpa-torch.json efficiency-gap.json tdc_oracle.json tdc_layers.json; do
  if [[ -f $src/$file ]]; then
    cp "$src/$file" "$dest/"
    copied=$((copied + 1))
  fi
done
cat > "$dest/README.md" <<EOF_README
# The current GPU snapshot: $gpu_name

One \`bench/run_gpu.sh\` run: revision $run_rev, $run_date. Every GPU table in the
lessons, the notebooks and the tour's "last H200 figure" column come from these files.
Filed by \`bench/collect_gpu_results.sh\`; the previous snapshot is in git history.

| file | what |
|---|---|
| bench-gpu.json | Google Benchmark JSON of every GPU benchmark |
| gpu-tests.xml, summary.txt | the GPU tests (JUnit) and the run's summary |
| probe.json, environment.txt | the measured peaks; GPU, driver, compiler |
| sanitize.log | compute-sanitizer memcheck, racecheck, synccheck and initcheck over every GPU test (with --sanitize) |
| sdpa-torch.json, efficiency-gap.json | PyTorch's rows (lessons 09 and 13), when run |
| tdc_oracle.json, tdc_layers.json | lesson 12's oracle sweep and end-to-end layers (bench/tdc_oracle.cu), when run |
EOF_README
if ((${#kept[@]})); then
  echo >> "$dest/README.md"
  echo "Kept from the previous snapshot, not re-measured by this run (PyTorch alone, independent of convlab's revision; each file's own context gives its date): ${kept[*]}." >> "$dest/README.md"
fi
echo "copied $copied file(s) to ${dest#"$repo"/} (GPU: $gpu_name, revision $run_rev, date: $run_date)"
[[ -f $dest/bench-gpu.json ]] || echo "note: no bench-gpu.json in $src; the notebooks will have nothing to plot from this run" >&2
