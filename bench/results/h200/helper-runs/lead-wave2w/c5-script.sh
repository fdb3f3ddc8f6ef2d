#!/usr/bin/env bash
# wave-2w call 5: 11h with the epilogue's loads issued together (and call 4's wgmma group in flight, gates
# loaded early); tests, bench 11c/11h, sanitizers on 11h, a source-level stall profile of 11h's pass 2 at C=112@14^2
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/s /tmp/p
OUT=/tmp/a timeout 260 bench/run_gpu.sh --no-bench --only 'mbconv/gpu/11h' > $OUT/run.log 2>&1
cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
OUT=/tmp/b timeout 100 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11h)' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cat /tmp/b/summary.txt >> $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=60 OUT=/tmp/s timeout 90 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11h' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -6 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -10
OUT=/tmp/p timeout 120 bash bench/profile_source.sh mbconv/gpu/11h_fused_store_wgmma N=128,H=14,C=112,dtype=f16 project_wgmma >> $OUT/run.log 2>&1
echo "profile rc $?"; ls /tmp/p; for f in /tmp/p/*; do cp $f $OUT/prof-$(basename $f); done
for f in /tmp/p/*.tar.gz; do tar xzf $f -C /tmp/p; done; cat /tmp/p/*/stalls.txt 2>/dev/null | head -20; head -40 /tmp/p/*/hot.txt 2>/dev/null
