#!/usr/bin/env bash
# wave-2w call 3: 11h (Wp resident, A gated in registers, RS wgmma) against 11c, and 11z (call 2's
# 11h without its per-stage proxy fence; diagnostic); tests of 11c and 11h, bench of all three,
# sanitizers on 11h, Nsight on the pass-2 kernels at C=112@14^2 and C=24@56^2
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/mbconv_project_wgmma_nofence.cuh gpu/lib/; cp .scratch/11z.cu gpu/mbconv/11z_store_wgmma_nofence.cu
mkdir -p /tmp/a /tmp/b /tmp/s
OUT=/tmp/a timeout 260 bench/run_gpu.sh --no-bench --only 'mbconv/gpu/(11c|11h)' > $OUT/run.log 2>&1
cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
OUT=/tmp/b timeout 120 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11h|11z)' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cat /tmp/b/summary.txt >> $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=60 OUT=/tmp/s timeout 90 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11h' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -8 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3), b.get('error_message',''))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in 11h_fused_store_wgmma 11z_store_wgmma_nofence; do
  for shape in N=128,H=14,C=112,dtype=f16 N=128,H=56,C=24,dtype=f16; do
    tag=$(echo $shape | cut -d, -f2,3 | tr -d '=,')
    timeout 40 $ncu --section SpeedOfLight --section LaunchStats --section WarpStateStats --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes.sum \
      --clock-control none -k regex:project_wgmma -c 1 \
      build-gpu/convlab run mbconv/gpu/$v --shape $shape --reps 0 > $OUT/ncu-${v:0:3}-$tag.txt 2>&1
    echo "ncu $v $tag rc $?"
  done
done
grep -E "gpu__time_duration|inst_executed|dram__bytes|Memory Throughput" $OUT/ncu-*.txt | head -40
tar czf $OUT/ncu.tgz $OUT/ncu-*.txt; rm -f $OUT/ncu-*.txt
