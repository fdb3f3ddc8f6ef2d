#!/usr/bin/env bash
# wave-2v call 1: 10e with the late peer project vs 10y (main's 10e) in one process; tests of every
# convfirst GPU rung and quad_transpose; sanitizers on 10e; a profile of 10e at C = 256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster.cu
mkdir -p /tmp/a /tmp/s /tmp/p
mkdir -p /tmp/t
OUT=/tmp/t timeout 270 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/|quad_transpose' > $OUT/run.log 2>&1
cp /tmp/t/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/t/summary.txt > $OUT/summaries.txt
OUT=/tmp/a timeout 100 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y)' >> $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cat /tmp/a/summary.txt >> $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=70 OUT=/tmp/s timeout 90 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10e' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -7 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
OUT=/tmp/p timeout 110 bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster >> $OUT/run.log 2>&1
ls /tmp/p; for f in /tmp/p/*; do cp $f $OUT/prof-$(basename $f); done
