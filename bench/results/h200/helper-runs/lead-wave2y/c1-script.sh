#!/usr/bin/env bash
# wave-2y call 1: 11j (11g over a cluster of two) — tests of 11g and 11j over the mbconv table,
# bench 11g, 11j at every shape they take and 11i at 14², 11j's chunk trace and phase stamps at
# C = 80 @ 14², then the four sanitizers on 11j.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
OUT=/tmp/a timeout 400 bench/run_gpu.sh --only 'mbconv/gpu/(11g|11j|11i_[a-z_]*/n128_14x14)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
grep -E "11g|11j" /tmp/a/gpu-tests.log | tail -5
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time','').replace('mbconv/gpu/',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
B=$(ls -d build-gpu* | head -1)
{ for s in N=128,H=14,C=80,dtype=f16 N=128,H=14,C=80,k=5,C_out=112,dtype=f16; do
  CONVLAB_PHASE_STAMPS=1 timeout 30 $B/convlab run mbconv/gpu/11j_fused_image_cluster --shape $s --reps 0
  CONVLAB_CHUNK_TRACE=1 timeout 30 $B/convlab run mbconv/gpu/11j_fused_image_cluster --shape $s --reps 0; done
  CONVLAB_CHUNK_TRACE=1 timeout 30 $B/convlab run mbconv/gpu/11g_fused_image_wgmma --shape N=128,H=7,C=192,dtype=f16 --reps 0
} > $OUT/trace.txt 2>&1
cat $OUT/trace.txt | cut -c1-160 | head -80
CONVLAB_SANITIZE_TIMEOUT=40 OUT=/tmp/s timeout 175 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11j' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -12 $OUT/sanitize.log
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -8
