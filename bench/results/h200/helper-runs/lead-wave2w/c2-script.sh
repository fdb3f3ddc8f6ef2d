#!/usr/bin/env bash
# wave-2w call 2: 11h (11c with pass 2 on wgmma) against 11c: tests over the mbconv table, the
# mbconv benchmarks of both, sanitizers on 11h, Nsight on both pass-2 kernels at C=112@14^2 and C=24@56^2
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
OUT=/tmp/a timeout 330 bench/run_gpu.sh --only 'mbconv/gpu/(11c|11h)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=80 OUT=/tmp/s timeout 110 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11h' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -8 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in 11c_fused_store 11h_fused_store_wgmma; do
  for shape in N=128,H=14,C=112,dtype=f16 N=128,H=56,C=24,dtype=f16; do
    tag=$(echo $shape | cut -d, -f2,3 | tr -d '=,')
    timeout 40 $ncu --section SpeedOfLight --section LaunchStats --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes.sum \
      --clock-control none -k regex:mbconv_project -c 1 \
      build-gpu/convlab run mbconv/gpu/$v --shape $shape --reps 0 > $OUT/ncu-${v:0:3}-$tag.txt 2>&1
    echo "ncu $v $tag rc $?"
  done
done
tar czf $OUT/ncu.tgz $OUT/ncu-*.txt && grep -E "gpu__time_duration|inst_executed|dram__bytes|Issue Slots|Memory Throughput" $OUT/ncu-*.txt | head -40; rm -f $OUT/ncu-*.txt
