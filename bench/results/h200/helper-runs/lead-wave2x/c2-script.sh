#!/usr/bin/env bash
# wave-2x call 2: 11i (11e's pass 1 + 11h's pass 2) landed; every store-plan rung (11c, 11e, 11h, 11i: all
# changed by the dependent launches) tested over the mbconv table and benched at every mbconv shape;
# sanitizers on 11e and 11i; Nsight per-kernel figures of 11h at C=80@14², C=112@14² and C=24@56².
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
OUT=/tmp/a timeout 420 bench/run_gpu.sh --only 'mbconv/gpu/(11c|11e|11h|11i)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=45 OUT=/tmp/s timeout 80 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11e|11i)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -6 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time','').replace('mbconv/gpu/',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for shape in N=128,H=14,C=80,dtype=f16 N=128,H=14,C=112,dtype=f16 N=128,H=56,C=24,dtype=f16; do
  tag=$(echo $shape | cut -d, -f2,3 | tr -d '=,')
  timeout 45 $ncu --section SpeedOfLight --metrics gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    --clock-control none -k regex:mbconv -c 3 build-gpu/convlab run mbconv/gpu/11h_fused_store_wgmma --shape $shape --reps 0 > $OUT/ncu-11h-$tag.txt 2>&1
  echo "ncu $tag rc $?"
done
grep -E "mbconv_|Duration|DRAM Throughput|issue_active|warps_active|inst_executed.sum|Compute \(SM\)" $OUT/ncu-11h-*.txt | cut -c1-150 | head -60
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -8
